/* test_http_server.c - the probe/metrics HTTP server over real sockets on
 * 127.0.0.1. The loop runs on the test thread; a client thread does
 * blocking I/O and wakes the loop when it is done (a timer stops it after
 * a few seconds if not). Results are asserted on the test thread. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/err.h"
#include "net/http_server.h"

#define MS UINT64_C(1000000)
#define BIG_LEN (3u * 1024u * 1024u)

typedef struct fixture fixture_t;
typedef void (*client_fn)(fixture_t *f);

struct fixture {
    loop_t *loop;
    http_server_t *srv;
    uint16_t port;
    loop_timer_t guard;
    bool guard_fired;
    int requests;
    char paths[16][64];
    char *big;
    /* client results */
    client_fn client;
    char *rx; /* what the client read */
    size_t rx_len;
    bool rx_eof;
    double elapsed_s;
    char note[256];
    int held_fd; /* a socket left open for the test thread */
};

static void handler(const http1_request_t *req, http_response_t *resp, prom_buf_t *scratch,
                    void *ud) {
    fixture_t *f = ud;
    if (f->requests < 16)
        snprintf(f->paths[f->requests], sizeof f->paths[0], "%.*s", (int)req->path_len, req->path);
    f->requests++;
    if (req->path_len == 8 && memcmp(req->path, "/healthz", 8) == 0) {
        resp->status = 200;
        resp->body = "ok\n";
        resp->body_len = 3;
    } else if (req->path_len == 4 && memcmp(req->path, "/big", 4) == 0) {
        resp->status = 200;
        resp->content_type = "application/octet-stream";
        resp->body = f->big;
        resp->body_len = BIG_LEN;
    } else if (req->path_len == 8 && memcmp(req->path, "/metrics", 8) == 0) {
        prom_family(scratch, "metric_x", "gauge", "A test gauge.");
        prom_sample(scratch, "metric_x", NULL, NULL, 0, NULL, 42);
        resp->status = 200;
        resp->content_type = "text/plain; version=0.0.4";
        resp->body = scratch->data;
        resp->body_len = scratch->len;
    } else if (req->path_len == 5 && memcmp(req->path, "/free", 5) == 0) {
        http_server_free(f->srv);
        f->srv = NULL;
        resp->status = 200;
    } else if (req->path_len == 4 && memcmp(req->path, "/bad", 4) == 0) {
        resp->status = 42; /* not a status: answered 500 */
    }
    /* else the preset 404 */
}

static void on_wakeup(loop_t *loop, void *ud) {
    (void)ud;
    loop_stop(loop);
}

static void on_guard(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)t;
    fixture_t *f = ud;
    f->guard_fired = true;
    loop_stop(loop);
}

static int setup(void **state) {
    fixture_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    char err[256];
    assert_int_equal(loop_new(&f->loop, err, sizeof err), 0);
    loop_set_wakeup(f->loop, on_wakeup, f);
    loop_timer_init(&f->guard, on_guard, f);
    f->big = malloc(BIG_LEN);
    assert_non_null(f->big);
    for (size_t i = 0; i < BIG_LEN; i++)
        f->big[i] = (char)('a' + i % 23);
    f->held_fd = -1;
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture_t *f = *state;
    http_server_free(f->srv);
    if (f->held_fd >= 0)
        close(f->held_fd);
    loop_free(f->loop);
    free(f->rx);
    free(f->big);
    free(f);
    return 0;
}

static void start(fixture_t *f, const http_server_opts_t *opts) {
    char err[256] = "";
    int rc =
        http_server_listen(f->loop, "127.0.0.1", 0, opts, handler, f, &f->srv, err, sizeof err);
    if (rc)
        fail_msg("listen: %s", err);
    f->port = http_server_port(f->srv);
    assert_true(f->port != 0);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *client_main(void *arg) {
    fixture_t *f = arg;
    double t0 = now_s();
    f->client(f);
    f->elapsed_s = now_s() - t0;
    loop_wakeup(f->loop);
    return NULL;
}

/* Runs the loop until the client is done (or 8 s pass). */
static void run(fixture_t *f, client_fn fn) {
    f->client = fn;
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, client_main, f), 0);
    loop_timer_start(f->loop, &f->guard, clock_add_sat(clock_mono_now(), 8000 * MS));
    assert_int_equal(loop_run(f->loop), 0);
    loop_timer_stop(f->loop, &f->guard);
    pthread_join(th, NULL);
    assert_false(f->guard_fired);
}

/* ---- client side (blocking, on the client thread) ------------------------- */

static int dial(uint16_t port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    struct timeval tv = {.tv_sec = 4};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void send_str(int fd, const char *s) {
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

/* Appends everything until EOF, error or timeout to f->rx. */
static void read_to_end(fixture_t *f, int fd) {
    size_t cap = f->rx_len + 65536;
    f->rx = realloc(f->rx, cap + 1);
    for (;;) {
        if (cap - f->rx_len < 65536) {
            cap *= 2;
            f->rx = realloc(f->rx, cap + 1);
        }
        ssize_t n = recv(fd, f->rx + f->rx_len, cap - f->rx_len, 0);
        if (n > 0) {
            f->rx_len += (size_t)n;
            continue;
        }
        f->rx_eof = n == 0 || errno == ECONNRESET;
        break;
    }
    f->rx[f->rx_len] = '\0';
}

/* Reads exactly one response (head + Content-Length body) into f->rx. */
static void read_one(fixture_t *f, int fd) {
    size_t start = f->rx_len;
    f->rx = realloc(f->rx, f->rx_len + 65536 + 1);
    size_t want = SIZE_MAX;
    while (f->rx_len - start < want) {
        ssize_t n = recv(fd, f->rx + f->rx_len, 1, 0); /* byte by byte: never over-read */
        if (n <= 0)
            break;
        f->rx_len++;
        f->rx[f->rx_len] = '\0';
        if (want == SIZE_MAX) {
            char *end = strstr(f->rx + start, "\r\n\r\n");
            if (end) {
                const char *cl = strstr(f->rx + start, "Content-Length: ");
                size_t body = cl ? strtoul(cl + 16, NULL, 10) : 0;
                want = (size_t)(end + 4 - (f->rx + start)) + body;
            }
        }
    }
}

static size_t count(const char *hay, const char *needle) {
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

/* ---- cases ---------------------------------------------------------------- */

static void c_keepalive(fixture_t *f) {
    int fd = dial(f->port);
    send_str(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    read_one(f, fd);
    send_str(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    read_one(f, fd);
    close(fd);
}

static void test_http_server_keeps_the_connection_alive(void **state) {
    fixture_t *f = *state;
    start(f, NULL);
    run(f, c_keepalive);
    const char *one = "HTTP/1.1 200 OK\r\nContent-Type: text/plain; "
                      "charset=utf-8\r\nContent-Length: 3\r\nConnection: keep-alive\r\n\r\nok\n";
    char two[256];
    snprintf(two, sizeof two, "%s%s", one, one);
    assert_string_equal(f->rx, two);
    assert_int_equal(f->requests, 2);
}

static void c_pipeline(fixture_t *f) {
    int fd = dial(f->port);
    send_str(fd, "GET /a HTTP/1.1\r\n\r\nGET /healthz HTTP/1.1\r\n\r\nGET /metrics HTTP/1.1\r\n\r\n"
                 "GET /b HTTP/1.1\r\nConnection: close\r\n\r\nGET /never HTTP/1.1\r\n\r\n");
    read_to_end(f, fd);
    close(fd);
}

static void test_http_server_answers_pipelined_requests_in_order(void **state) {
    fixture_t *f = *state;
    start(f, NULL);
    run(f, c_pipeline);
    const char *a = strstr(f->rx, "HTTP/1.1 404 Not Found");
    const char *b = strstr(
        f->rx,
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 3\r\n");
    const char *c = strstr(f->rx, "metric_x 42\n");
    const char *d = strstr(f->rx, "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain; "
                                  "charset=utf-8\r\nContent-Length: 10\r\nConnection: close");
    assert_true(a && b && c && d && a < b && b < c && c < d);
    assert_true(f->rx_eof);
    assert_int_equal(f->requests, 4); /* /never comes after Connection: close */
    assert_string_equal(f->paths[0], "/a");
    assert_string_equal(f->paths[3], "/b");
    assert_non_null(strstr(f->rx, "Content-Type: text/plain; version=0.0.4\r\n"));
}

static void c_head(fixture_t *f) {
    int fd = dial(f->port);
    send_str(fd, "HEAD /healthz HTTP/1.1\r\nConnection: close\r\n\r\n");
    read_to_end(f, fd);
    close(fd);
}

static void test_http_server_head_has_no_body(void **state) {
    fixture_t *f = *state;
    start(f, NULL);
    run(f, c_head);
    assert_string_equal(f->rx, "HTTP/1.1 200 OK\r\nContent-Type: text/plain; "
                               "charset=utf-8\r\nContent-Length: 3\r\nConnection: close\r\n\r\n");
    assert_true(f->rx_eof);
}

typedef struct {
    const char *request;
    const char *status_line;
} bad_case_t;

static const bad_case_t *bad_current;

static void c_bad(fixture_t *f) {
    int fd = dial(f->port);
    send_str(fd, bad_current->request);
    read_to_end(f, fd);
    close(fd);
}

static void test_http_server_rejects_bad_input_and_closes(void **state) {
    fixture_t *f = *state;
    start(f, NULL);
    static char huge[10000];
    memset(huge, 0, sizeof huge);
    strcpy(huge, "GET / HTTP/1.1\r\nX-Fill: ");
    memset(huge + strlen(huge), 'a', 9000);
    strcat(huge, "\r\n\r\n");
    const bad_case_t cases[] = {
        {"POST /x HTTP/1.1\r\n\r\n", "HTTP/1.1 405 Method Not Allowed\r\n"},
        {"POST /x HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello",
         "HTTP/1.1 413 Content Too Large\r\n"},
        {"garbage\r\n\r\n", "HTTP/1.1 400 Bad Request\r\n"},
        {huge, "HTTP/1.1 431 Request Header Fields Too Large\r\n"},
        {"GET / HTTP/2.0\r\n\r\n", "HTTP/1.1 505 HTTP Version Not Supported\r\n"},
        {"GET /bad HTTP/1.1\r\n\r\n", "HTTP/1.1 500 Internal Server Error\r\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bad_current = &cases[i];
        f->rx_len = 0;
        f->rx_eof = false;
        run(f, c_bad);
        if (!f->rx || strncmp(f->rx, cases[i].status_line, strlen(cases[i].status_line)) != 0)
            fail_msg("case %zu: got \"%s\"", i, f->rx ? f->rx : "");
        assert_non_null(strstr(f->rx, "Connection: close\r\n"));
        assert_true(f->rx_eof);
    }
    assert_non_null(strstr(f->rx, "Connection: close\r\n\r\ninternal error\n"));
    bad_current = &cases[0];
    f->rx_len = 0;
    run(f, c_bad);
    assert_non_null(strstr(f->rx, "\r\nAllow: GET, HEAD\r\n"));
    assert_non_null(strstr(f->rx, "only GET and HEAD are served"));
    assert_int_equal(f->requests, 1); /* only /bad reached the handler */
}

static void c_http10(fixture_t *f) {
    int fd = dial(f->port);
    send_str(fd, "GET /healthz HTTP/1.0\r\n\r\n");
    read_to_end(f, fd);
    close(fd);
}

static void test_http_server_closes_http10_without_keepalive(void **state) {
    fixture_t *f = *state;
    start(f, NULL);
    run(f, c_http10);
    assert_non_null(strstr(f->rx, "Connection: close\r\n\r\nok\n"));
    assert_true(f->rx_eof);
}

static void c_slowloris(fixture_t *f) {
    int fd = dial(f->port);
    send_str(fd, "GET / HTTP/1.1\r\n");
    usleep(100000);
    send_str(fd, "Host: x\r\n"); /* more bytes do not restart the clock */
    read_to_end(f, fd);
    close(fd);
}

static void test_http_server_times_out_a_slow_head(void **state) {
    fixture_t *f = *state;
    http_server_opts_t o = {.head_timeout_ns = 300 * MS, .idle_timeout_ns = 5000 * MS};
    start(f, &o);
    run(f, c_slowloris);
    assert_true(strncmp(f->rx, "HTTP/1.1 408 Request Timeout\r\n", 30) == 0);
    assert_true(f->rx_eof);
    assert_true(f->elapsed_s >= 0.25 && f->elapsed_s < 2.0);
    assert_int_equal(f->requests, 0);
}

static void c_idle(fixture_t *f) {
    int fd = dial(f->port);
    send_str(fd, "GET /healthz HTTP/1.1\r\n\r\n");
    read_to_end(f, fd); /* the answer, then the idle close */
    close(fd);
}

static void test_http_server_closes_idle_connections(void **state) {
    fixture_t *f = *state;
    http_server_opts_t o = {.idle_timeout_ns = 300 * MS};
    start(f, &o);
    run(f, c_idle);
    assert_true(strncmp(f->rx, "HTTP/1.1 200 OK", 15) == 0);
    assert_true(f->rx_eof);
    assert_true(f->elapsed_s >= 0.25 && f->elapsed_s < 2.0);
    assert_int_equal(http_server_connections(f->srv), 0);
}

static void c_cap(fixture_t *f) {
    int a = dial(f->port);
    send_str(a, "GET /healthz HTTP/1.1\r\n\r\n");
    read_one(f, a); /* a is surely accepted, and idle (keep-alive) now */
    int b = dial(f->port);
    send_str(b, "GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n");
    read_to_end(f, b); /* admitted and answered */
    close(b);
    size_t before = f->rx_len;
    f->rx_eof = false;
    read_to_end(f, a); /* evicted to make room for b: closed, nothing more */
    snprintf(f->note, sizeof f->note, "a read %zu, eof %d", f->rx_len - before, f->rx_eof);
    close(a);
}

/* Full, a server evicts its idle connection to admit a new one (a probe
 * must never be locked out by connections that send nothing). */
static void test_http_server_evicts_an_idle_connection_when_full(void **state) {
    fixture_t *f = *state;
    http_server_opts_t o = {.max_connections = 1};
    start(f, &o);
    run(f, c_cap);
    assert_string_equal(f->note, "a read 0, eof 1");
    assert_int_equal(count(f->rx, "HTTP/1.1 200 OK"), 2);
    assert_int_equal(f->requests, 2);
    assert_int_equal(http_server_evictions(f->srv), 1);
}

static void c_silent(fixture_t *f) {
    int fd = dial(f->port);
    read_to_end(f, fd); /* sends nothing; the server closes */
    close(fd);
}

/* A connection that sends nothing gets the head timeout, not the (longer)
 * idle one. */
static void test_http_server_closes_a_zero_byte_connection_at_the_head_timeout(void **state) {
    fixture_t *f = *state;
    http_server_opts_t o = {.head_timeout_ns = 300 * MS, .idle_timeout_ns = 5000 * MS};
    start(f, &o);
    run(f, c_silent);
    assert_true(f->rx_eof);
    assert_int_equal(f->rx_len, 0);
    assert_true(f->elapsed_s >= 0.25 && f->elapsed_s < 2.0);
}

static void c_big(fixture_t *f) {
    int fd = dial(f->port);
    send_str(fd, "GET /big HTTP/1.1\r\n\r\nGET /big HTTP/1.1\r\n\r\nGET /healthz HTTP/1.1\r\n\r\n"
                 "GET /big HTTP/1.1\r\nConnection: close\r\n\r\n");
    usleep(300000); /* let the server hit EAGAIN and back up */
    read_to_end(f, fd);
    close(fd);
}

static void test_http_server_buffers_partial_writes_of_large_bodies(void **state) {
    fixture_t *f = *state;
    start(f, NULL);
    run(f, c_big);
    assert_true(f->rx_eof);
    assert_int_equal(count(f->rx, "HTTP/1.1 200 OK"), 4);
    /* Each big body arrives whole and intact. */
    const char *p = f->rx;
    for (int i = 0; i < 3; i++) {
        p = strstr(p, "Content-Length: 3145728\r\n");
        assert_non_null(p);
        p = strstr(p, "\r\n\r\n") + 4;
        assert_memory_equal(p, f->big, BIG_LEN);
        p += BIG_LEN;
        if (i == 1) {
            assert_non_null(strstr(p, "HTTP/1.1 200 OK\r\nContent-Type: text/plain; "
                                      "charset=utf-8\r\nContent-Length: 3\r\n") == p
                                ? p
                                : NULL);
            p = strstr(p, "ok\n") + 3;
        }
    }
    assert_true(p == f->rx + f->rx_len);
}

static void c_free(fixture_t *f) {
    int fd = dial(f->port);
    int other = dial(f->port); /* a second connection, closed with the server */
    send_str(fd, "GET /free HTTP/1.1\r\n\r\n");
    read_to_end(f, fd);
    size_t first = f->rx_len;
    read_to_end(f, other);
    snprintf(f->note, sizeof f->note, "%zu %zu", first, f->rx_len);
    close(fd);
    close(other);
}

static void test_http_server_can_be_freed_by_its_handler(void **state) {
    fixture_t *f = *state;
    start(f, NULL);
    run(f, c_free);
    assert_null(f->srv);
    assert_string_equal(f->note, "0 0"); /* no answer; both connections closed */
    assert_true(f->rx_eof);
}

static void c_hold(fixture_t *f) {
    f->held_fd = dial(f->port);
    send_str(f->held_fd, "GET /healthz HTTP/1.1\r\n\r\nGET /half");
    read_one(f, f->held_fd);
}

static void test_http_server_free_closes_open_connections(void **state) {
    fixture_t *f = *state;
    start(f, NULL);
    run(f, c_hold);
    assert_int_equal(http_server_connections(f->srv), 1);
    http_server_free(f->srv); /* ASan proves nothing leaks */
    f->srv = NULL;
    char b;
    assert_int_equal(recv(f->held_fd, &b, 1, 0), 0);
}

static void test_http_server_reports_listen_errors(void **state) {
    fixture_t *f = *state;
    start(f, NULL);
    http_server_t *second = (http_server_t *)&second;
    char err[256] = "", want[256];
    assert_int_equal(http_server_listen(f->loop, "127.0.0.1", f->port, NULL, handler, f, &second,
                                        err, sizeof err),
                     KGS_EIO);
    snprintf(want, sizeof want, "listen 127.0.0.1:%u: bind: Address already in use",
             (unsigned)f->port);
    assert_string_equal(err, want);
    assert_true(second == (http_server_t *)&second); /* untouched on failure */
    assert_int_equal(
        http_server_listen(f->loop, "localhost", 8081, NULL, handler, f, &second, err, sizeof err),
        KGS_EINVAL);
    assert_string_equal(err, "listen localhost:8081: invalid address: must be a numeric IPv4 or "
                             "IPv6 address (e.g. 0.0.0.0, ::, 127.0.0.1)");
}

static void test_http_server_listens_on_ipv6(void **state) {
    fixture_t *f = *state;
    http_server_t *s = NULL;
    char err[256] = "";
    int rc = http_server_listen(f->loop, "[::1]", 0, NULL, handler, f, &s, err, sizeof err);
    if (rc == KGS_EIO && (strstr(err, "Address family") || strstr(err, "Cannot assign"))) {
        print_message("SKIP: no IPv6 loopback here: %s\n", err);
        skip();
    }
    assert_int_equal(rc, 0);
    assert_true(http_server_port(s) != 0);
    http_server_free(s);
    http_server_free(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_http_server_keeps_the_connection_alive, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_http_server_answers_pipelined_requests_in_order, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_http_server_head_has_no_body, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_server_rejects_bad_input_and_closes, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_http_server_closes_http10_without_keepalive, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_http_server_times_out_a_slow_head, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_server_closes_idle_connections, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_server_evicts_an_idle_connection_when_full, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_http_server_closes_a_zero_byte_connection_at_the_head_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_server_buffers_partial_writes_of_large_bodies,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_server_can_be_freed_by_its_handler, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_http_server_free_closes_open_connections, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_http_server_reports_listen_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_server_listens_on_ipv6, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
