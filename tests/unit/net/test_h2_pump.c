/* test_h2_pump.c - the bytes between an nghttp2 session and a plain
 * transport over a socketpair: what a flush writes, the backpressure at
 * H2_PUMP_HIGH_WATER when the peer does not read, a peer that hung up, and
 * a feed (in_recv set only inside nghttp2's callbacks, its errors passed
 * on). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>

#include "net/h2_pump.h"

typedef struct {
    int peer; /* the other end of the socketpair */
    transport_t tr;
    nghttp2_session *h2;
    h2_pump_t pump;
    int frames;        /* frames nghttp2 reported received */
    bool in_recv_seen; /* pump.in_recv inside a callback */
} fixture_t;

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *frame, void *ud) {
    (void)s;
    (void)frame;
    fixture_t *f = ud;
    f->frames++;
    f->in_recv_seen = f->pump.in_recv;
    return 0;
}

static fixture_t *fixture_new(bool server) {
    fixture_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    f->peer = sv[1];
    assert_int_equal(transport_init(&f->tr, sv[0], NULL, server, NULL), 0);
    nghttp2_session_callbacks *cbs;
    assert_int_equal(nghttp2_session_callbacks_new(&cbs), 0);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
    if (server)
        assert_int_equal(nghttp2_session_server_new(&f->h2, cbs, f), 0);
    else
        assert_int_equal(nghttp2_session_client_new(&f->h2, cbs, f), 0);
    nghttp2_session_callbacks_del(cbs);
    h2_pump_init(&f->pump, f->h2, &f->tr);
    return f;
}

static void fixture_free(fixture_t *f) {
    h2_pump_free(&f->pump);
    nghttp2_session_del(f->h2);
    transport_close(&f->tr);
    if (f->peer >= 0)
        close(f->peer);
    free(f);
}

/* Reads what the peer end holds; returns the byte count. */
static size_t drain(fixture_t *f, uint8_t *keep, size_t keep_len) {
    uint8_t buf[65536];
    size_t total = 0;
    ssize_t n;
    while ((n = read(f->peer, buf, sizeof buf)) > 0) {
        if (keep && total < keep_len)
            memcpy(keep + total, buf, (size_t)n < keep_len - total ? (size_t)n : keep_len - total);
        total += (size_t)n;
    }
    return total;
}

static void test_a_flush_writes_what_nghttp2_queued_then_is_done(void **state) {
    (void)state;
    fixture_t *f = fixture_new(false);
    assert_int_equal(nghttp2_submit_settings(f->h2, NGHTTP2_FLAG_NONE, NULL, 0), 0);
    assert_int_equal(h2_pump_flush(&f->pump), H2_PUMP_DONE);
    assert_int_equal(h2_pump_pending(&f->pump), 0);
    uint8_t got[64];
    size_t n = drain(f, got, sizeof got);
    /* The client preface, then an empty SETTINGS frame. */
    assert_int_equal(n, NGHTTP2_CLIENT_MAGIC_LEN + 9);
    assert_memory_equal(got, NGHTTP2_CLIENT_MAGIC, NGHTTP2_CLIENT_MAGIC_LEN);
    assert_int_equal(got[NGHTTP2_CLIENT_MAGIC_LEN + 3], NGHTTP2_SETTINGS);
    /* Nothing more queued: done at once, nothing written. */
    assert_int_equal(h2_pump_flush(&f->pump), H2_PUMP_DONE);
    assert_int_equal(drain(f, NULL, 0), 0);
    fixture_free(f);
}

static void test_a_peer_that_does_not_read_blocks_the_flush_at_the_high_water(void **state) {
    (void)state;
    fixture_t *f = fixture_new(false);
    int small = 4096;
    setsockopt(f->tr.fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    /* 40,000 PINGs of 17 bytes: 680 KB, more than the socket and the
     * high-water mark hold together. */
    assert_int_equal(nghttp2_submit_settings(f->h2, NGHTTP2_FLAG_NONE, NULL, 0), 0);
    const size_t pings = 40000;
    for (size_t i = 0; i < pings; i++)
        assert_int_equal(nghttp2_submit_ping(f->h2, NGHTTP2_FLAG_NONE, NULL), 0);
    assert_int_equal(h2_pump_flush(&f->pump), H2_PUMP_BLOCKED);
    size_t pending = h2_pump_pending(&f->pump);
    assert_true(pending > 0);
    assert_true(pending <= H2_PUMP_HIGH_WATER + 17 * 1024);
    assert_true(nghttp2_session_want_write(f->h2)); /* the rest waits inside nghttp2 */
    /* The peer reads: every byte arrives, in order, once. */
    size_t total = 0;
    int r = H2_PUMP_BLOCKED;
    for (int i = 0; i < 100000 && r == H2_PUMP_BLOCKED; i++) {
        total += drain(f, NULL, 0);
        r = h2_pump_flush(&f->pump);
    }
    assert_int_equal(r, H2_PUMP_DONE);
    total += drain(f, NULL, 0);
    assert_int_equal(total, NGHTTP2_CLIENT_MAGIC_LEN + 9 /* SETTINGS */ + pings * 17);
    fixture_free(f);
}

static void test_a_peer_that_hung_up_fails_the_write(void **state) {
    (void)state;
    fixture_t *f = fixture_new(false);
    close(f->peer);
    f->peer = -1;
    assert_int_equal(nghttp2_submit_ping(f->h2, NGHTTP2_FLAG_NONE, NULL), 0);
    assert_int_equal(h2_pump_flush(&f->pump), H2_PUMP_WRITE_FAILED);
    assert_true(f->tr.error[0] != '\0');
    fixture_free(f);
}

static void test_a_feed_hands_bytes_to_nghttp2_inside_in_recv(void **state) {
    (void)state;
    fixture_t *f = fixture_new(true);
    uint8_t preface[NGHTTP2_CLIENT_MAGIC_LEN + 9];
    memcpy(preface, NGHTTP2_CLIENT_MAGIC, NGHTTP2_CLIENT_MAGIC_LEN);
    const uint8_t settings[9] = {0, 0, 0, NGHTTP2_SETTINGS, 0, 0, 0, 0, 0};
    memcpy(preface + NGHTTP2_CLIENT_MAGIC_LEN, settings, 9);
    assert_int_equal(h2_pump_feed(&f->pump, preface, sizeof preface), (ssize_t)sizeof preface);
    assert_int_equal(f->frames, 1);
    assert_true(f->in_recv_seen);
    assert_false(f->pump.in_recv);
    /* The answer nghttp2 queued meanwhile: the SETTINGS ACK. */
    assert_int_equal(h2_pump_flush(&f->pump), H2_PUMP_DONE);
    uint8_t got[16];
    assert_int_equal(drain(f, got, sizeof got), 9);
    assert_int_equal(got[3], NGHTTP2_SETTINGS);
    assert_int_equal(got[4], NGHTTP2_FLAG_ACK);
    fixture_free(f);
}

static void test_a_feed_passes_nghttp2_s_error_on(void **state) {
    (void)state;
    fixture_t *f = fixture_new(true);
    const char http1[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    assert_int_equal(h2_pump_feed(&f->pump, (const uint8_t *)http1, sizeof http1 - 1),
                     NGHTTP2_ERR_BAD_CLIENT_MAGIC);
    assert_false(f->pump.in_recv);
    assert_int_equal(f->frames, 0);
    fixture_free(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_flush_writes_what_nghttp2_queued_then_is_done),
        cmocka_unit_test(test_a_peer_that_does_not_read_blocks_the_flush_at_the_high_water),
        cmocka_unit_test(test_a_peer_that_hung_up_fails_the_write),
        cmocka_unit_test(test_a_feed_hands_bytes_to_nghttp2_inside_in_recv),
        cmocka_unit_test(test_a_feed_passes_nghttp2_s_error_on),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
