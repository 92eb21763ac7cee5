/* test_grpc.c - the gRPC server and client below the integration tests, on
 * one event loop in this process. Our client calls our server over
 * 127.0.0.1 (unary, server streaming, a status with a message, a cancel, a
 * deadline, a refused connection). For what our client never sends, a raw
 * nghttp2 client speaks over a socketpair the server adopts: a compressed
 * message, one over the size cap, a bad flag byte, two messages in a unary
 * call, and a stream reset before the request is complete. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>

#include "core/err.h"
#include "net/grpc_client.h"
#include "net/grpc_frame.h"
#include "net/grpc_server.h"
#include "net/h2_pump.h"
#include "net/loop.h"

#define MS UINT64_C(1000000)
#define MAX_REQUEST 1024

/* ---- the server's handler ---------------------------------------------------- */

typedef struct {
    loop_t *loop;
    grpc_server_t *srv;
    uint16_t port;
    /* what the handler saw */
    int requests;
    char path[64];
    uint8_t msg[64];
    size_t msg_len;
    int gone;
    /* /t.S/Stream: the open call and what it still has to send */
    grpc_call_t *stream;
    int stream_left;
    loop_timer_t stream_timer;
} fixture_t;

static void on_stream_tick(loop_t *loop, loop_timer_t *t, void *ud) {
    fixture_t *f = ud;
    if (!f->stream)
        return;
    uint8_t m[1] = {(uint8_t)(3 - f->stream_left)};
    assert_int_equal(grpc_call_send(f->stream, m, 1, false), 0);
    if (--f->stream_left > 0) {
        loop_timer_start(loop, t, loop_now(loop) + MS);
        return;
    }
    grpc_call_finish(f->stream, GRPC_OK, NULL);
    f->stream = NULL;
}

/* /t.S/Echo answers the request back; /t.S/Fail answers NOT_FOUND with a
 * message that needs percent-encoding; /t.S/Stream sends three messages, a
 * millisecond apart, then OK; /t.S/Hold never answers. */
static void on_request(grpc_call_t *call, const char *path, const uint8_t *msg, size_t len,
                       void *ud) {
    fixture_t *f = ud;
    f->requests++;
    snprintf(f->path, sizeof f->path, "%s", path);
    f->msg_len = len < sizeof f->msg ? len : sizeof f->msg;
    if (f->msg_len)
        memcpy(f->msg, msg, f->msg_len);
    if (strcmp(path, "/t.S/Echo") == 0) {
        assert_int_equal(grpc_call_send(call, msg, len, false), 0);
        grpc_call_finish(call, GRPC_OK, NULL);
    } else if (strcmp(path, "/t.S/Fail") == 0) {
        grpc_call_finish(call, GRPC_NOT_FOUND, "no such trigger: 100% gone\n");
    } else if (strcmp(path, "/t.S/Stream") == 0) {
        f->stream = call;
        f->stream_left = 3;
        loop_timer_start(f->loop, &f->stream_timer, loop_now(f->loop));
    }
}

static void on_call_gone(grpc_call_t *call, void *call_ud, void *ud) {
    (void)call_ud;
    fixture_t *f = ud;
    f->gone++;
    if (f->stream == call)
        f->stream = NULL;
}

static int setup(void **state) {
    fixture_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    char err[256];
    assert_int_equal(loop_new(&f->loop, err, sizeof err), 0);
    loop_timer_init(&f->stream_timer, on_stream_tick, f);
    grpc_server_opts_t o = {.listen_address = "127.0.0.1",
                            .max_connections = 16,
                            .max_concurrent_streams = 100,
                            .max_request_bytes = MAX_REQUEST,
                            .max_request_bytes_flag = "--max-request-bytes"};
    grpc_server_handlers_t h = {.on_request = on_request, .on_call_gone = on_call_gone};
    assert_int_equal(grpc_server_start(f->loop, &o, &h, f, &f->srv, err, sizeof err), 0);
    f->port = grpc_server_port(f->srv);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture_t *f = *state;
    loop_timer_stop(f->loop, &f->stream_timer);
    grpc_server_free(f->srv);
    loop_free(f->loop);
    free(f);
    return 0;
}

/* Runs the loop until *flag is set (at most 5 s). */
static void run_until(fixture_t *f, const bool *flag) {
    for (int i = 0; i < 5000 && !*flag; i++)
        loop_run_once(f->loop, 1);
    assert_true(*flag);
}

/* ---- our client --------------------------------------------------------------- */

typedef struct {
    int messages;
    uint8_t msg[8][64];
    size_t msg_len[8];
    bool done;
    int status;
    char message[256];
} result_t;

static void on_message(void *ud, const uint8_t *msg, size_t len) {
    result_t *r = ud;
    if (r->messages < 8) {
        r->msg_len[r->messages] = len < 64 ? len : 64;
        memcpy(r->msg[r->messages], msg, r->msg_len[r->messages]);
    }
    r->messages++;
}

static void on_done(void *ud, int status, const char *message) {
    result_t *r = ud;
    assert_false(r->done); /* exactly once */
    r->done = true;
    r->status = status;
    snprintf(r->message, sizeof r->message, "%s", message);
}

static grpc_client_t *client_to(fixture_t *f, uint16_t port) {
    char addr[32];
    snprintf(addr, sizeof addr, "127.0.0.1:%u", port);
    grpc_client_opts_t o = {.address = addr};
    grpc_client_t *c = NULL;
    char err[256];
    assert_int_equal(grpc_client_connect(f->loop, &o, &c, err, sizeof err), 0);
    return c;
}

static void test_unary_call_round_trips_a_message(void **state) {
    fixture_t *f = *state;
    grpc_client_t *c = client_to(f, f->port);
    result_t r = {0};
    const uint8_t req[] = {0x0a, 0x03, 'g', 'p', 'u'};
    assert_int_equal(
        grpc_client_call(c, "/t.S/Echo", req, sizeof req, 0, on_message, on_done, &r, NULL), 0);
    assert_false(r.done); /* never from inside grpc_client_call */
    run_until(f, &r.done);
    assert_int_equal(r.status, GRPC_OK);
    assert_string_equal(r.message, "");
    assert_int_equal(r.messages, 1);
    assert_int_equal(r.msg_len[0], sizeof req);
    assert_memory_equal(r.msg[0], req, sizeof req);
    assert_int_equal(f->requests, 1);
    assert_string_equal(f->path, "/t.S/Echo");
    assert_int_equal(f->msg_len, sizeof req);

    /* A second call on the same connection, with an empty message. */
    result_t r2 = {0};
    assert_int_equal(grpc_client_call(c, "/t.S/Echo", NULL, 0, 0, on_message, on_done, &r2, NULL),
                     0);
    run_until(f, &r2.done);
    assert_int_equal(r2.status, GRPC_OK);
    assert_int_equal(r2.messages, 1);
    assert_int_equal(r2.msg_len[0], 0);
    assert_int_equal(grpc_server_connection_count(f->srv), 1);
    grpc_client_free(c);
}

static void test_a_status_and_its_message_reach_the_client_decoded(void **state) {
    fixture_t *f = *state;
    grpc_client_t *c = client_to(f, f->port);
    result_t r = {0};
    const uint8_t req[] = {1};
    assert_int_equal(grpc_client_call(c, "/t.S/Fail", req, 1, 0, on_message, on_done, &r, NULL), 0);
    run_until(f, &r.done);
    assert_int_equal(r.status, GRPC_NOT_FOUND);
    assert_string_equal(r.message, "no such trigger: 100% gone\n");
    assert_int_equal(r.messages, 0);
    grpc_client_free(c);
}

static void test_a_server_stream_delivers_its_messages_in_order_then_ok(void **state) {
    fixture_t *f = *state;
    grpc_client_t *c = client_to(f, f->port);
    result_t r = {0};
    const uint8_t req[] = {7};
    assert_int_equal(grpc_client_call(c, "/t.S/Stream", req, 1, 0, on_message, on_done, &r, NULL),
                     0);
    run_until(f, &r.done);
    assert_int_equal(r.status, GRPC_OK);
    assert_int_equal(r.messages, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(r.msg_len[i], 1);
        assert_int_equal(r.msg[i][0], i);
    }
    assert_int_equal(f->gone, 0); /* finished by the handler: never reported */
    grpc_client_free(c);
}

static void test_a_cancel_ends_the_call_on_both_sides(void **state) {
    fixture_t *f = *state;
    grpc_client_t *c = client_to(f, f->port);
    result_t r = {0};
    grpc_client_call_t *k = NULL;
    const uint8_t req[] = {1};
    assert_int_equal(grpc_client_call(c, "/t.S/Hold", req, 1, 0, on_message, on_done, &r, &k), 0);
    bool arrived = false;
    for (int i = 0; i < 5000 && !arrived; i++) {
        loop_run_once(f->loop, 1);
        arrived = f->requests == 1;
    }
    assert_true(arrived);
    assert_int_equal(grpc_server_call_count(f->srv), 1);
    grpc_client_cancel(k);
    run_until(f, &r.done);
    assert_int_equal(r.status, GRPC_CANCELLED);
    bool gone = false;
    for (int i = 0; i < 5000 && !gone; i++) {
        loop_run_once(f->loop, 1);
        gone = f->gone == 1;
    }
    assert_true(gone);
    assert_int_equal(grpc_server_call_count(f->srv), 0);
    grpc_client_free(c);
}

static void test_a_deadline_ends_the_call_on_both_sides(void **state) {
    fixture_t *f = *state;
    grpc_client_t *c = client_to(f, f->port);
    result_t r = {0};
    const uint8_t req[] = {1};
    assert_int_equal(
        grpc_client_call(c, "/t.S/Hold", req, 1, 30 * MS, on_message, on_done, &r, NULL), 0);
    run_until(f, &r.done);
    assert_int_equal(r.status, GRPC_DEADLINE_EXCEEDED);
    bool gone = false;
    for (int i = 0; i < 5000 && !gone; i++) {
        loop_run_once(f->loop, 1);
        gone = f->gone == 1 && grpc_server_call_count(f->srv) == 0;
    }
    assert_true(gone);
    grpc_client_free(c);
}

static void test_a_refused_connection_ends_calls_unavailable(void **state) {
    fixture_t *f = *state;
    /* A port nobody listens on: bind one, note it, close it. */
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t al = sizeof a;
    assert_int_equal(getsockname(s, (struct sockaddr *)&a, &al), 0);
    close(s);
    grpc_client_t *c = client_to(f, ntohs(a.sin_port));
    result_t r = {0};
    const uint8_t req[] = {1};
    assert_int_equal(grpc_client_call(c, "/t.S/Echo", req, 1, 0, on_message, on_done, &r, NULL), 0);
    run_until(f, &r.done);
    assert_int_equal(r.status, GRPC_UNAVAILABLE);
    assert_non_null(strstr(r.message, "refused"));
    assert_int_equal(grpc_client_mode_hint(c), GRPC_CLIENT_MODE_OK);
    grpc_client_free(c);
}

static void test_freeing_the_client_ends_pending_calls_unavailable(void **state) {
    fixture_t *f = *state;
    grpc_client_t *c = client_to(f, f->port);
    result_t r = {0};
    const uint8_t req[] = {1};
    assert_int_equal(grpc_client_call(c, "/t.S/Hold", req, 1, 0, on_message, on_done, &r, NULL), 0);
    for (int i = 0; i < 5000 && f->requests == 0; i++)
        loop_run_once(f->loop, 1);
    grpc_client_free(c);
    assert_true(r.done);
    assert_int_equal(r.status, GRPC_UNAVAILABLE);
    for (int i = 0; i < 5000 && grpc_server_connection_count(f->srv) > 0; i++)
        loop_run_once(f->loop, 1);
    assert_int_equal(grpc_server_connection_count(f->srv), 0);
    assert_int_equal(f->gone, 1); /* the server saw the connection go */
}

/* ---- a raw HTTP/2 client over a socketpair -------------------------------------------- */

typedef struct {
    int fd;
    nghttp2_session *h2;
    int32_t stream;
    const uint8_t *body;
    size_t body_len, body_off;
    bool end_body; /* END_STREAM after the body */
    int grpc_status;
    char http_status[8];
    char message[256];
    bool closed;
} raw_t;

static ssize_t raw_send(nghttp2_session *s, const uint8_t *data, size_t len, int flags, void *ud) {
    (void)s;
    (void)flags;
    raw_t *r = ud;
    ssize_t n = write(r->fd, data, len);
    if (n < 0)
        return errno == EAGAIN ? NGHTTP2_ERR_WOULDBLOCK : NGHTTP2_ERR_CALLBACK_FAILURE;
    return n;
}

static int raw_header(nghttp2_session *s, const nghttp2_frame *frame, const uint8_t *name,
                      size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                      void *ud) {
    (void)s;
    (void)frame;
    (void)flags;
    raw_t *r = ud;
    if (namelen == 7 && memcmp(name, ":status", 7) == 0)
        snprintf(r->http_status, sizeof r->http_status, "%.*s", (int)valuelen, value);
    else if (namelen == 11 && memcmp(name, "grpc-status", 11) == 0)
        r->grpc_status = atoi((const char *)value);
    else if (namelen == 12 && memcmp(name, "grpc-message", 12) == 0)
        grpc_percent_decode((const char *)value, valuelen, r->message, sizeof r->message);
    return 0;
}

static int raw_close(nghttp2_session *s, int32_t id, uint32_t error_code, void *ud) {
    (void)s;
    (void)id;
    (void)error_code;
    ((raw_t *)ud)->closed = true;
    return 0;
}

static ssize_t raw_body(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                        nghttp2_data_source *src, void *ud) {
    (void)s;
    (void)id;
    (void)ud;
    raw_t *r = src->ptr;
    size_t n = r->body_len - r->body_off;
    if (n > len)
        n = len;
    memcpy(buf, r->body + r->body_off, n);
    r->body_off += n;
    if (r->body_off == r->body_len) {
        *flags |= NGHTTP2_DATA_FLAG_EOF;
        if (!r->end_body)
            *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
    }
    return (ssize_t)n;
}

/* Connects a raw client to the server over a socketpair and sends one
 * request on /t.S/Echo with body[0..len) (END_STREAM after it if end). */
static void raw_start(fixture_t *f, raw_t *r, const uint8_t *body, size_t len, bool end) {
    memset(r, 0, sizeof *r);
    r->grpc_status = -1;
    r->body = body;
    r->body_len = len;
    r->end_body = end;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    grpc_server_adopt(f->srv, sv[0]);
    r->fd = sv[1];
    nghttp2_session_callbacks *cbs;
    assert_int_equal(nghttp2_session_callbacks_new(&cbs), 0);
    nghttp2_session_callbacks_set_send_callback(cbs, raw_send);
    nghttp2_session_callbacks_set_on_header_callback(cbs, raw_header);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, raw_close);
    assert_int_equal(nghttp2_session_client_new(&r->h2, cbs, r), 0);
    nghttp2_session_callbacks_del(cbs);
    assert_int_equal(nghttp2_submit_settings(r->h2, NGHTTP2_FLAG_NONE, NULL, 0), 0);
    nghttp2_nv h[] = {h2_nv(":method", "POST"),
                      h2_nv(":scheme", "http"),
                      h2_nv(":path", "/t.S/Echo"),
                      h2_nv(":authority", "test"),
                      h2_nv("content-type", "application/grpc"),
                      h2_nv("te", "trailers")};
    nghttp2_data_provider dp = {.source.ptr = r, .read_callback = raw_body};
    r->stream = nghttp2_submit_request(r->h2, NULL, h, sizeof h / sizeof h[0], &dp, r);
    assert_true(r->stream > 0);
}

/* One round: the raw client sends and reads what it can, the loop runs. */
static void raw_round(fixture_t *f, raw_t *r) {
    assert_int_equal(nghttp2_session_send(r->h2), 0);
    uint8_t buf[16384];
    ssize_t n;
    while ((n = read(r->fd, buf, sizeof buf)) > 0)
        assert_true(nghttp2_session_mem_recv(r->h2, buf, (size_t)n) >= 0);
    loop_run_once(f->loop, 1);
}

/* Runs until the request's stream closed on the raw client. */
static void raw_finish(fixture_t *f, raw_t *r) {
    for (int i = 0; i < 5000 && !r->closed; i++)
        raw_round(f, r);
    assert_true(r->closed);
}

static void raw_free(fixture_t *f, raw_t *r) {
    nghttp2_session_del(r->h2);
    close(r->fd);
    for (int i = 0; i < 5000 && grpc_server_connection_count(f->srv) > 0; i++)
        loop_run_once(f->loop, 1);
    assert_int_equal(grpc_server_connection_count(f->srv), 0);
    assert_int_equal(grpc_server_call_count(f->srv), 0);
}

static void test_raw_a_well_formed_request_is_answered(void **state) {
    fixture_t *f = *state;
    const uint8_t body[] = {0, 0, 0, 0, 2, 0x08, 0x01};
    raw_t r;
    raw_start(f, &r, body, sizeof body, true);
    raw_finish(f, &r);
    assert_string_equal(r.http_status, "200");
    assert_int_equal(r.grpc_status, GRPC_OK);
    assert_int_equal(f->requests, 1);
    assert_int_equal(f->msg_len, 2);
    raw_free(f, &r);
}

static void test_raw_a_compressed_message_is_unimplemented(void **state) {
    fixture_t *f = *state;
    const uint8_t body[] = {1, 0, 0, 0, 2, 0x08, 0x01};
    raw_t r;
    raw_start(f, &r, body, sizeof body, true);
    raw_finish(f, &r);
    assert_int_equal(r.grpc_status, GRPC_UNIMPLEMENTED);
    assert_non_null(strstr(r.message, "compressed messages are not supported"));
    assert_int_equal(f->requests, 0);
    raw_free(f, &r);
}

static void test_raw_a_length_over_the_cap_is_resource_exhausted_from_the_prefix(void **state) {
    fixture_t *f = *state;
    /* Only the prefix is sent, without END_STREAM: the declared length
     * alone is refused, naming it, the cap and the flag. */
    const uint8_t body[] = {0, 0, 0, 0x10, 0x00};
    raw_t r;
    raw_start(f, &r, body, sizeof body, false);
    raw_finish(f, &r);
    assert_int_equal(r.grpc_status, GRPC_RESOURCE_EXHAUSTED);
    assert_string_equal(r.message,
                        "request message: 4096 bytes, at most 1024 (--max-request-bytes)");
    assert_int_equal(grpc_server_requests_too_large(f->srv), 1);
    assert_int_equal(f->requests, 0);
    raw_free(f, &r);
}

static void test_raw_a_compressed_flag_with_a_length_over_the_cap_is_too_large(void **state) {
    fixture_t *f = *state;
    /* The length is weighed as soon as the prefix is in, whatever the flag. */
    const uint8_t body[] = {1, 0, 0, 0x10, 0x00};
    raw_t r;
    raw_start(f, &r, body, sizeof body, false);
    raw_finish(f, &r);
    assert_int_equal(r.grpc_status, GRPC_RESOURCE_EXHAUSTED);
    assert_non_null(strstr(r.message, "4096 bytes"));
    raw_free(f, &r);
}

static void test_raw_a_bad_flag_byte_is_internal(void **state) {
    fixture_t *f = *state;
    const uint8_t body[] = {2, 0, 0, 0, 1, 0x08};
    raw_t r;
    raw_start(f, &r, body, sizeof body, true);
    raw_finish(f, &r);
    assert_int_equal(r.grpc_status, GRPC_INTERNAL);
    assert_string_equal(r.message, "malformed gRPC message prefix");
    raw_free(f, &r);
}

static void test_raw_two_messages_in_a_unary_call_are_internal(void **state) {
    fixture_t *f = *state;
    const uint8_t body[] = {0, 0, 0, 0, 1, 0x08, 0, 0, 0, 0, 1, 0x08};
    raw_t r;
    raw_start(f, &r, body, sizeof body, true);
    raw_finish(f, &r);
    assert_int_equal(r.grpc_status, GRPC_INTERNAL);
    assert_non_null(strstr(r.message, "cardinality violation"));
    assert_int_equal(f->requests, 0);
    raw_free(f, &r);
}

static void test_raw_a_stream_reset_before_the_request_is_complete_frees_it(void **state) {
    fixture_t *f = *state;
    const uint8_t body[] = {0, 0, 0, 0, 4, 0x08}; /* 1 byte of 4, no END_STREAM */
    raw_t r;
    raw_start(f, &r, body, sizeof body, false);
    for (int i = 0; i < 5000 && grpc_server_call_count(f->srv) == 0; i++)
        raw_round(f, &r);
    assert_int_equal(grpc_server_call_count(f->srv), 1);
    assert_int_equal(nghttp2_submit_rst_stream(r.h2, NGHTTP2_FLAG_NONE, r.stream, NGHTTP2_CANCEL),
                     0);
    for (int i = 0; i < 5000 && grpc_server_call_count(f->srv) > 0; i++)
        raw_round(f, &r);
    assert_int_equal(grpc_server_call_count(f->srv), 0);
    assert_int_equal(f->requests, 0);
    assert_int_equal(f->gone, 0); /* never handed to the handler: nothing to report */
    assert_int_equal(grpc_server_connection_count(f->srv), 1); /* the connection lives on */
    raw_free(f, &r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_unary_call_round_trips_a_message, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_status_and_its_message_reach_the_client_decoded,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_server_stream_delivers_its_messages_in_order_then_ok,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_cancel_ends_the_call_on_both_sides, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_deadline_ends_the_call_on_both_sides, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_refused_connection_ends_calls_unavailable, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_freeing_the_client_ends_pending_calls_unavailable,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_raw_a_well_formed_request_is_answered, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_raw_a_compressed_message_is_unimplemented, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_raw_a_length_over_the_cap_is_resource_exhausted_from_the_prefix, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_raw_a_compressed_flag_with_a_length_over_the_cap_is_too_large, setup, teardown),
        cmocka_unit_test_setup_teardown(test_raw_a_bad_flag_byte_is_internal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_raw_two_messages_in_a_unary_call_are_internal, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_raw_a_stream_reset_before_the_request_is_complete_frees_it, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
