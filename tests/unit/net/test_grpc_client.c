/* test_grpc_client.c - the gRPC client against a raw nghttp2 server on a
 * unix socket, on the client's own event loop: answers our server never
 * gives. Messages cut across DATA frames and several in one frame, a
 * compressed message, an HTTP status that is not gRPC, a stream ended
 * without grpc-status, and a GOAWAY with an error and a reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>

#include "net/grpc_client.h"
#include "net/grpc_frame.h"
#include "net/h2_pump.h"
#include "net/loop.h"

/* ---- the raw server ------------------------------------------------------------ */

typedef struct {
    loop_t *loop;
    char path[108];
    int listen_fd;
    loop_io_t *listen_io;
    int fd; /* the one accepted connection */
    loop_io_t *io;
    nghttp2_session *h2;
    char req_path[64];
    /* the response body, handed to nghttp2 in DATA frames cut at cuts[] */
    uint8_t body[64];
    size_t body_len, body_off;
    size_t cuts[4];
    int ncuts, cut;
} raw_server_t;

static ssize_t srv_send(nghttp2_session *s, const uint8_t *data, size_t len, int flags, void *ud) {
    (void)s;
    (void)flags;
    raw_server_t *r = ud;
    ssize_t n = send(r->fd, data, len, MSG_NOSIGNAL);
    if (n < 0)
        return errno == EAGAIN ? NGHTTP2_ERR_WOULDBLOCK : NGHTTP2_ERR_CALLBACK_FAILURE;
    return n;
}

static int srv_header(nghttp2_session *s, const nghttp2_frame *frame, const uint8_t *name,
                      size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                      void *ud) {
    (void)s;
    (void)frame;
    (void)flags;
    raw_server_t *r = ud;
    if (namelen == 5 && memcmp(name, ":path", 5) == 0)
        snprintf(r->req_path, sizeof r->req_path, "%.*s", (int)valuelen, value);
    return 0;
}

/* The body, one DATA frame per cut; then trailers grpc-status 0. */
static ssize_t srv_body(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                        nghttp2_data_source *src, void *ud) {
    (void)src;
    raw_server_t *r = ud;
    size_t end = r->cut < r->ncuts ? r->cuts[r->cut++] : r->body_len;
    size_t n = end - r->body_off;
    assert_true(n <= len);
    memcpy(buf, r->body + r->body_off, n);
    r->body_off += n;
    if (r->body_off == r->body_len) {
        *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
        nghttp2_nv tr[1] = {h2_nv("grpc-status", "0")};
        nghttp2_submit_trailer(s, id, tr, 1);
    }
    return (ssize_t)n;
}

static void body_set(raw_server_t *r, const uint8_t *b, size_t len) {
    memcpy(r->body, b, len);
    r->body_len = len;
}

/* Answers the request by its path (the test's script). */
static int srv_frame_recv(nghttp2_session *s, const nghttp2_frame *frame, void *ud) {
    raw_server_t *r = ud;
    if (frame->hd.type != NGHTTP2_DATA || !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
        return 0;
    int32_t id = frame->hd.stream_id;
    nghttp2_nv ok[2] = {h2_nv(":status", "200"), h2_nv("content-type", "application/grpc")};
    nghttp2_data_provider dp = {.read_callback = srv_body};
    if (strcmp(r->req_path, "/raw/Split") == 0) {
        /* Three messages of 3, 4 and 2 bytes, cut mid-prefix: DATA frames
         * of 10, 3, 9 and 2 bytes. */
        const uint8_t m[] = {0, 0,   0,   0,   3,   'a', 'b', 'c', 0, 0, 0,   0,
                             4, 'd', 'e', 'f', 'g', 0,   0,   0,   0, 2, 'h', 'i'};
        body_set(r, m, sizeof m);
        r->cuts[0] = 10; /* abc, and the start of the next prefix */
        r->cuts[1] = 13; /* the rest of that prefix, and nothing of its body */
        r->cuts[2] = 22; /* defg, and the last prefix */
        r->ncuts = 3;
        nghttp2_submit_response(s, id, ok, 2, &dp);
    } else if (strcmp(r->req_path, "/raw/Whole") == 0) {
        /* Two whole messages in one DATA frame, then one more in a
         * second: read where they arrive, nothing left over. */
        const uint8_t m[] = {0, 0,   0, 0, 2, 'a', 'b', 0,   0,   0,  0,
                             1, 'c', 0, 0, 0, 0,   3,   'd', 'e', 'f'};
        body_set(r, m, sizeof m);
        r->cuts[0] = 13;
        r->ncuts = 1;
        nghttp2_submit_response(s, id, ok, 2, &dp);
    } else if (strcmp(r->req_path, "/raw/Compressed") == 0) {
        const uint8_t m[] = {1, 0, 0, 0, 1, 'x'};
        body_set(r, m, sizeof m);
        nghttp2_submit_response(s, id, ok, 2, &dp);
    } else if (strcmp(r->req_path, "/raw/Http503") == 0) {
        nghttp2_nv h[1] = {h2_nv(":status", "503")};
        nghttp2_submit_response(s, id, h, 1, NULL);
    } else if (strcmp(r->req_path, "/raw/NoStatus") == 0) {
        nghttp2_submit_response(s, id, ok, 2, NULL);
    } else if (strcmp(r->req_path, "/raw/BadStatus") == 0) {
        /* trailers-only, with a grpc-status that is not a number */
        nghttp2_nv h[3] = {ok[0], ok[1], h2_nv("grpc-status", "abc")};
        nghttp2_submit_response(s, id, h, 3, NULL);
    } else if (strcmp(r->req_path, "/raw/GoAway") == 0) {
        nghttp2_submit_goaway(s, NGHTTP2_FLAG_NONE, 0, NGHTTP2_ENHANCE_YOUR_CALM,
                              (const uint8_t *)"too many pings", 14);
    }
    return 0;
}

static void srv_pump(raw_server_t *r) {
    uint8_t buf[16384];
    ssize_t n;
    while ((n = recv(r->fd, buf, sizeof buf, MSG_DONTWAIT)) > 0)
        if (nghttp2_session_mem_recv(r->h2, buf, (size_t)n) < 0)
            break;
    nghttp2_session_send(r->h2);
}

static void on_srv_io(loop_t *loop, int fd, uint32_t events, void *ud) {
    (void)loop;
    (void)fd;
    (void)events;
    srv_pump(ud);
}

static void on_srv_accept(loop_t *loop, int fd, uint32_t events, void *ud) {
    (void)events;
    raw_server_t *r = ud;
    int c = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (c < 0)
        return;
    assert_int_equal(r->fd, -1); /* one connection a test */
    r->fd = c;
    nghttp2_session_callbacks *cbs;
    assert_int_equal(nghttp2_session_callbacks_new(&cbs), 0);
    nghttp2_session_callbacks_set_send_callback(cbs, srv_send);
    nghttp2_session_callbacks_set_on_header_callback(cbs, srv_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, srv_frame_recv);
    assert_int_equal(nghttp2_session_server_new(&r->h2, cbs, r), 0);
    nghttp2_session_callbacks_del(cbs);
    assert_int_equal(nghttp2_submit_settings(r->h2, NGHTTP2_FLAG_NONE, NULL, 0), 0);
    r->io = loop_io_add(loop, c, EPOLLIN, on_srv_io, r);
    assert_non_null(r->io);
    srv_pump(r);
}

static int setup(void **state) {
    raw_server_t *r = calloc(1, sizeof *r);
    assert_non_null(r);
    char err[256];
    assert_int_equal(loop_new(&r->loop, err, sizeof err), 0);
    r->fd = -1;
    snprintf(r->path, sizeof r->path, "/tmp/kgs-grpc-client-%d.sock", (int)getpid());
    unlink(r->path);
    r->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", r->path);
    assert_int_equal(bind(r->listen_fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(r->listen_fd, 4), 0);
    r->listen_io = loop_io_add(r->loop, r->listen_fd, EPOLLIN, on_srv_accept, r);
    assert_non_null(r->listen_io);
    *state = r;
    return 0;
}

static int teardown(void **state) {
    raw_server_t *r = *state;
    if (r->io)
        loop_io_remove(r->loop, r->io);
    if (r->fd >= 0)
        close(r->fd);
    nghttp2_session_del(r->h2);
    loop_io_remove(r->loop, r->listen_io);
    close(r->listen_fd);
    unlink(r->path);
    loop_free(r->loop);
    free(r);
    return 0;
}

/* ---- the client's calls ----------------------------------------------------------- */

typedef struct {
    int messages;
    char text[8][8]; /* each message as a string */
    bool done;
    int status;
    char message[512];
} result_t;

static void on_message(void *ud, const uint8_t *msg, size_t len) {
    result_t *r = ud;
    if (r->messages < 8)
        snprintf(r->text[r->messages], sizeof r->text[0], "%.*s", (int)len, (const char *)msg);
    r->messages++;
}

static void on_done(void *ud, int status, const char *message) {
    result_t *r = ud;
    assert_false(r->done);
    r->done = true;
    r->status = status;
    snprintf(r->message, sizeof r->message, "%s", message);
}

/* One call on path; returns when on_done ran (at most 5 s). */
static void call(raw_server_t *r, const char *path, result_t *res) {
    char addr[128];
    snprintf(addr, sizeof addr, "unix:%s", r->path);
    grpc_client_opts_t o = {.address = addr};
    grpc_client_t *c = NULL;
    char err[256];
    assert_int_equal(grpc_client_connect(r->loop, &o, &c, err, sizeof err), 0);
    memset(res, 0, sizeof *res);
    const uint8_t req[] = {0x08, 0x01};
    assert_int_equal(grpc_client_call(c, path, req, sizeof req, 0, on_message, on_done, res, NULL),
                     0);
    for (int i = 0; i < 5000 && !res->done; i++)
        loop_run_once(r->loop, 1);
    assert_true(res->done);
    assert_string_equal(r->req_path, path);
    grpc_client_free(c);
}

static void test_messages_cut_across_frames_arrive_whole_and_in_order(void **state) {
    result_t res;
    call(*state, "/raw/Split", &res);
    assert_int_equal(res.status, GRPC_OK);
    assert_int_equal(res.messages, 3);
    assert_string_equal(res.text[0], "abc");
    assert_string_equal(res.text[1], "defg");
    assert_string_equal(res.text[2], "hi");
}

static void test_whole_messages_in_one_frame_arrive_whole_and_in_order(void **state) {
    result_t res;
    call(*state, "/raw/Whole", &res);
    assert_int_equal(res.status, GRPC_OK);
    assert_int_equal(res.messages, 3);
    assert_string_equal(res.text[0], "ab");
    assert_string_equal(res.text[1], "c");
    assert_string_equal(res.text[2], "def");
}

static void test_a_compressed_response_is_internal(void **state) {
    result_t res;
    call(*state, "/raw/Compressed", &res);
    assert_int_equal(res.status, GRPC_INTERNAL);
    assert_string_equal(res.message, "malformed or compressed response message");
    assert_int_equal(res.messages, 0);
}

static void test_an_http_status_that_is_not_grpc_maps_to_a_code(void **state) {
    result_t res;
    call(*state, "/raw/Http503", &res);
    assert_int_equal(res.status, GRPC_UNAVAILABLE);
    assert_string_equal(res.message, "HTTP status 503 (not a gRPC answer)");
}

static void test_a_stream_ended_without_grpc_status_is_internal(void **state) {
    result_t res;
    call(*state, "/raw/NoStatus", &res);
    assert_int_equal(res.status, GRPC_INTERNAL);
    assert_non_null(strstr(res.message, "stream closed without a gRPC status"));
}

static void test_a_grpc_status_that_is_not_a_number_is_internal_never_ok(void **state) {
    result_t res;
    call(*state, "/raw/BadStatus", &res);
    assert_int_equal(res.status, GRPC_INTERNAL);
    assert_string_equal(res.message, "malformed grpc-status from the server");
}

static void test_a_goaway_with_an_error_is_the_calls_reason(void **state) {
    result_t res;
    call(*state, "/raw/GoAway", &res);
    assert_int_equal(res.status, GRPC_UNAVAILABLE);
    assert_non_null(strstr(res.message, "GOAWAY"));
    assert_non_null(strstr(res.message, "too many pings"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_messages_cut_across_frames_arrive_whole_and_in_order,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_whole_messages_in_one_frame_arrive_whole_and_in_order,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_compressed_response_is_internal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_an_http_status_that_is_not_grpc_maps_to_a_code, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_a_grpc_status_that_is_not_a_number_is_internal_never_ok, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_stream_ended_without_grpc_status_is_internal, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_goaway_with_an_error_is_the_calls_reason, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
