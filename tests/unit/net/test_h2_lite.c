/*
 * test_h2_lite.c - the client side of HTTP/2 byte by byte: what it sends
 * (preface, SETTINGS, HEADERS with the table-size update, DATA within the
 * peer's windows, ACKs, WINDOW_UPDATEs) and what it makes of a server's
 * frames, whole or cut anywhere; every connection error ends in a GOAWAY
 * with the RFC 9113 code. Response header blocks are encoded here with
 * nghttp2's own HPACK deflater, as the gRPC server's nghttp2 session does.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <nghttp2/nghttp2.h>

#include "net/h2_lite.h"

typedef struct {
    char headers[1024]; /* "name=value;" of the response headers */
    char trailers[512];
    uint8_t data[1 << 20];
    size_t data_len;
    int closes;
    bool reset;
    uint32_t code;
    int goaways;
    uint32_t goaway_last, goaway_code;
    char goaway_debug[200];
} events_t;

static void ev_header(void *ud, h2_lite_stream_t *s, bool trailers, const uint8_t *name,
                      size_t namelen, const uint8_t *value, size_t valuelen) {
    (void)s;
    events_t *e = ud;
    char *dst = trailers ? e->trailers : e->headers;
    size_t cap = trailers ? sizeof e->trailers : sizeof e->headers;
    size_t at = strlen(dst);
    snprintf(dst + at, cap - at, "%.*s=%.*s;", (int)namelen, (const char *)name, (int)valuelen,
             (const char *)value);
}

static void ev_data(void *ud, h2_lite_stream_t *s, const uint8_t *data, size_t len) {
    (void)s;
    events_t *e = ud;
    assert_true(e->data_len + len <= sizeof e->data);
    memcpy(e->data + e->data_len, data, len);
    e->data_len += len;
}

static void ev_close(void *ud, h2_lite_stream_t *s, bool reset, uint32_t code) {
    (void)s;
    events_t *e = ud;
    e->closes++;
    e->reset = reset;
    e->code = code;
}

static void ev_goaway(void *ud, uint32_t last, uint32_t code, const uint8_t *debug, size_t len) {
    events_t *e = ud;
    e->goaways++;
    e->goaway_last = last;
    e->goaway_code = code;
    snprintf(e->goaway_debug, sizeof e->goaway_debug, "%.*s", (int)len, (const char *)debug);
}

static const h2_lite_callbacks_t CBS = {ev_header, ev_data, ev_close, ev_goaway};

typedef struct {
    h2_lite_t h;
    events_t e;
    h2_lite_stream_t s;
    uint8_t body[5];
} fixture_t;

static int setup(void **state) {
    fixture_t *f = calloc(1, sizeof *f);
    h2_lite_init(&f->h, &CBS, &f->e);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture_t *f = *state;
    h2_lite_free(&f->h);
    free(f);
    return 0;
}

/* ---- building the server's frames ---- */

typedef struct {
    uint8_t b[1 << 21];
    size_t len;
} wire_t;

static void frame(wire_t *w, uint32_t len, uint8_t type, uint8_t flags, uint32_t stream,
                  const void *payload) {
    uint8_t h[9] = {(uint8_t)(len >> 16),
                    (uint8_t)(len >> 8),
                    (uint8_t)len,
                    type,
                    flags,
                    (uint8_t)(stream >> 24),
                    (uint8_t)(stream >> 16),
                    (uint8_t)(stream >> 8),
                    (uint8_t)stream};
    memcpy(w->b + w->len, h, 9);
    w->len += 9;
    if (len && payload)
        memcpy(w->b + w->len, payload, len);
    else if (len)
        memset(w->b + w->len, 0, len);
    w->len += len;
}

/* An HPACK block of name/value pairs, as nghttp2 encodes them with no
 * dynamic table (what the peer may do after our HEADER_TABLE_SIZE 0). */
static size_t hpack(uint8_t *out, size_t cap, const char *const *nv, size_t n) {
    nghttp2_hd_deflater *d;
    assert_int_equal(nghttp2_hd_deflate_new(&d, 0), 0);
    nghttp2_nv v[8];
    for (size_t i = 0; i < n; i++)
        v[i] = (nghttp2_nv){(uint8_t *)nv[2 * i], (uint8_t *)nv[2 * i + 1], strlen(nv[2 * i]),
                            strlen(nv[2 * i + 1]), NGHTTP2_NV_FLAG_NONE};
    ssize_t len = nghttp2_hd_deflate_hd(d, out, cap, v, n);
    nghttp2_hd_deflate_del(d);
    assert_true(len > 0);
    return (size_t)len;
}

static void headers(wire_t *w, uint32_t stream, uint8_t flags, const char *const *nv, size_t n) {
    uint8_t block[1024];
    size_t len = hpack(block, sizeof block, nv, n);
    frame(w, (uint32_t)len, 0x1, flags | 0x4, stream, block);
}

static const char *const RESP[] = {":status", "200", "content-type", "application/grpc"};
static const char *const TRAIL[] = {"grpc-status", "0"};

static void open_stream(fixture_t *f) {
    const h2_lite_field_t fields[] = {{":method", "POST"}, {":path", "/a.B/C"}};
    memcpy(f->body, "\0\0\0\0\0", 5);
    const char *why = NULL;
    assert_int_equal(h2_lite_request(&f->h, &f->s, fields, 2, f->body, 5, &why), 0);
    assert_int_equal(f->s.id, 1);
}

static void feed_all(fixture_t *f, const wire_t *w) {
    assert_int_equal(h2_lite_feed(&f->h, w->b, w->len), 0);
}

/* The frames in the out buffer from `from` on, as "type:flags:stream:len ". */
static void out_frames(const h2_lite_t *h, size_t from, char *dst, size_t cap) {
    const uint8_t *p = (const uint8_t *)h->out.s;
    size_t at = 0;
    dst[0] = '\0';
    while (from + 9 <= h->out.len) {
        uint32_t len = (uint32_t)p[from] << 16 | (uint32_t)p[from + 1] << 8 | p[from + 2];
        uint32_t sid = (uint32_t)p[from + 5] << 24 | (uint32_t)p[from + 6] << 16 |
                       (uint32_t)p[from + 7] << 8 | p[from + 8];
        at += (size_t)snprintf(dst + at, cap - at, "%u:%u:%u:%u ", p[from + 3], p[from + 4], sid,
                               len);
        from += 9 + len;
    }
}

static size_t preface_len(void) {
    return 24 + 9 + 18 + 9 + 4;
}

/* ---- tests ---- */

static void test_the_connection_starts_with_preface_settings_and_window(void **state) {
    fixture_t *f = *state;
    assert_memory_equal(f->h.out.s, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24);
    char fr[256];
    out_frames(&f->h, 24, fr, sizeof fr);
    assert_string_equal(fr, "4:0:0:18 8:0:0:4 ");
    const uint8_t *s = (const uint8_t *)f->h.out.s + 24 + 9;
    /* ENABLE_PUSH 0, HEADER_TABLE_SIZE 0, INITIAL_WINDOW_SIZE 1 MiB */
    const uint8_t want[18] = {0, 2, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 4, 0, 0x10, 0, 0};
    assert_memory_equal(s, want, 18);
    h2_lite_written(&f->h, h2_lite_pending(&f->h));
    assert_int_equal(h2_lite_pending(&f->h), 0);
    assert_int_equal(f->h.out.cap, 0); /* nothing kept once written */
}

static void test_a_request_is_headers_with_a_table_update_then_data(void **state) {
    fixture_t *f = *state;
    size_t at = preface_len();
    open_stream(f);
    char fr[256];
    out_frames(&f->h, at, fr, sizeof fr);
    assert_string_equal(fr, "1:4:1:29 0:1:1:5 ");
    const uint8_t *b = (const uint8_t *)f->h.out.s + at + 9;
    assert_int_equal(b[0], 0x20); /* dynamic table size update: 0 */
    /* the block decodes, with nghttp2's inflater, to the fields sent */
    nghttp2_hd_inflater *inf;
    assert_int_equal(nghttp2_hd_inflate_new(&inf), 0);
    char got[128] = "";
    const uint8_t *in = b;
    size_t left = 29;
    for (;;) {
        nghttp2_nv nv;
        int fl = 0;
        ssize_t used = nghttp2_hd_inflate_hd2(inf, &nv, &fl, in, left, 1);
        assert_true(used >= 0);
        in += used;
        left -= (size_t)used;
        if (fl & NGHTTP2_HD_INFLATE_EMIT)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%.*s=%.*s;", (int)nv.namelen,
                     nv.name, (int)nv.valuelen, nv.value);
        if (fl & NGHTTP2_HD_INFLATE_FINAL)
            break;
    }
    nghttp2_hd_inflate_del(inf);
    assert_string_equal(got, ":method=POST;:path=/a.B/C;");
    /* a second request carries no update; the next stream id is 3 */
    h2_lite_stream_t s2 = {0};
    const h2_lite_field_t one[] = {{":path", "/x"}};
    const char *why;
    size_t at2 = f->h.out.len;
    assert_int_equal(h2_lite_request(&f->h, &s2, one, 1, NULL, 0, &why), 0);
    assert_int_equal(s2.id, 3);
    out_frames(&f->h, at2, fr, sizeof fr);
    assert_string_equal(fr, "1:5:3:10 "); /* END_HEADERS|END_STREAM, no body */
}

static void test_the_peers_table_size_setting_brings_a_new_update(void **state) {
    fixture_t *f = *state;
    open_stream(f);
    wire_t *w = calloc(1, sizeof *w);
    const uint8_t set[6] = {0, 1, 0, 0, 0x10, 0}; /* HEADER_TABLE_SIZE 4096 */
    frame(w, 6, 0x4, 0, 0, set);
    feed_all(f, w);
    h2_lite_stream_t s2 = {0};
    const h2_lite_field_t one[] = {{":path", "/x"}};
    const char *why;
    size_t at = f->h.out.len;
    assert_int_equal(h2_lite_request(&f->h, &s2, one, 1, NULL, 0, &why), 0);
    assert_int_equal((uint8_t)f->h.out.s[at + 9], 0x20);
    free(w);
}

static void test_a_response_reaches_the_stream_whole_or_cut_anywhere(void **state) {
    fixture_t *f = *state;
    wire_t *w = calloc(1, sizeof *w);
    headers(w, 1, 0, RESP, 2);
    const uint8_t msg[7] = {0, 0, 0, 0, 2, 'h', 'i'};
    frame(w, 7, 0x0, 0, 1, msg);
    const uint8_t padded[1 + 3 + 4] = {4, 'a', 'b', 'c', 0, 0, 0, 0};
    frame(w, 8, 0x0, 0x8, 1, padded);
    headers(w, 1, 0x1, TRAIL, 1);
    for (size_t cut = 1; cut <= w->len; cut++) {
        h2_lite_free(&f->h);
        memset(&f->e, 0, sizeof f->e);
        memset(&f->s, 0, sizeof f->s);
        h2_lite_init(&f->h, &CBS, &f->e);
        open_stream(f);
        for (size_t at = 0; at < w->len; at += cut) {
            size_t n = w->len - at < cut ? w->len - at : cut;
            assert_int_equal(h2_lite_feed(&f->h, w->b + at, n), 0);
        }
        assert_string_equal(f->e.headers, ":status=200;content-type=application/grpc;");
        assert_string_equal(f->e.trailers, "grpc-status=0;");
        assert_int_equal(f->e.data_len, 10);
        assert_memory_equal(f->e.data, "\0\0\0\0\2hiabc", 10);
        assert_int_equal(f->e.closes, 1);
        assert_false(f->e.reset);
        assert_null(f->h.streams);
        assert_null(f->h.hb); /* no header block kept */
    }
    free(w);
}

static void test_padded_headers_with_priority_decode(void **state) {
    fixture_t *f = *state;
    open_stream(f);
    uint8_t block[256];
    size_t len = hpack(block, sizeof block, RESP, 2);
    uint8_t p[300];
    p[0] = 3;                  /* pad length */
    memset(p + 1, 0, 5);       /* priority: dependency and weight */
    memcpy(p + 6, block, len); /* the block */
    memset(p + 6 + len, 0, 3);
    wire_t *w = calloc(1, sizeof *w);
    frame(w, (uint32_t)(len + 9), 0x1, 0x4 | 0x8 | 0x20, 1, p);
    feed_all(f, w);
    assert_string_equal(f->e.headers, ":status=200;content-type=application/grpc;");
    free(w);
}

static void test_a_split_header_block_continues(void **state) {
    fixture_t *f = *state;
    open_stream(f);
    uint8_t block[256];
    size_t len = hpack(block, sizeof block, RESP, 2);
    wire_t *w = calloc(1, sizeof *w);
    frame(w, 3, 0x1, 0x0, 1, block);
    frame(w, (uint32_t)(len - 3), 0x9, 0x4, 1, block + 3);
    feed_all(f, w);
    assert_string_equal(f->e.headers, ":status=200;content-type=application/grpc;");
    free(w);
}

static void test_settings_and_ping_are_acknowledged(void **state) {
    fixture_t *f = *state;
    h2_lite_written(&f->h, h2_lite_pending(&f->h));
    wire_t *w = calloc(1, sizeof *w);
    const uint8_t set[12] = {0, 3, 0, 0, 0, 100, 0, 5, 0, 1, 0, 0}; /* streams, frame size */
    frame(w, 12, 0x4, 0, 0, set);
    frame(w, 8, 0x6, 0, 0, "12345678");
    frame(w, 8, 0x6, 0x1, 0, "ackedack"); /* an ACK is not answered */
    feed_all(f, w);
    char fr[256];
    out_frames(&f->h, 0, fr, sizeof fr);
    assert_string_equal(fr, "4:1:0:0 6:1:0:8 ");
    assert_memory_equal(f->h.out.s + 9 + 9, "12345678", 8);
    assert_int_equal(f->h.peer_max_frame, 16384 * 4);
    free(w);
}

static void test_rst_stream_and_goaway_end_streams(void **state) {
    fixture_t *f = *state;
    open_stream(f);
    wire_t *w = calloc(1, sizeof *w);
    const uint8_t rst[4] = {0, 0, 0, 8};
    frame(w, 4, 0x3, 0, 1, rst);
    feed_all(f, w);
    assert_int_equal(f->e.closes, 1);
    assert_true(f->e.reset);
    assert_int_equal(f->e.code, H2_CANCEL);

    /* GOAWAY covering none of our streams: refused, safe to retry */
    h2_lite_stream_t s2 = {0};
    const h2_lite_field_t one[] = {{":path", "/x"}};
    const char *why;
    assert_int_equal(h2_lite_request(&f->h, &s2, one, 1, NULL, 0, &why), 0);
    w->len = 0;
    uint8_t ga[8 + 5] = {0, 0, 0, 1, 0, 0, 0, 0xb, 'c', 'a', 'l', 'm', '!'};
    frame(w, sizeof ga, 0x7, 0, 0, ga);
    feed_all(f, w);
    assert_int_equal(f->e.goaways, 1);
    assert_int_equal(f->e.goaway_last, 1);
    assert_int_equal(f->e.goaway_code, H2_ENHANCE_YOUR_CALM);
    assert_string_equal(f->e.goaway_debug, "calm!");
    assert_int_equal(f->e.closes, 2);
    assert_int_equal(f->e.code, H2_REFUSED_STREAM);
    assert_int_equal(h2_lite_request(&f->h, &s2, one, 1, NULL, 0, &why), -1);
    assert_string_equal(why, "the server is going away (GOAWAY)");
    free(w);
}

static void test_the_windows_are_given_back_at_half(void **state) {
    fixture_t *f = *state;
    open_stream(f);
    wire_t *w = calloc(1, sizeof *w);
    headers(w, 1, 0, RESP, 2);
    for (int i = 0; i < 32; i++) /* 32 x 16 KiB = 512 KiB: half the window */
        frame(w, 16384, 0x0, 0, 1, NULL);
    h2_lite_written(&f->h, h2_lite_pending(&f->h));
    feed_all(f, w);
    char fr[256];
    out_frames(&f->h, 0, fr, sizeof fr);
    assert_string_equal(fr, "8:0:0:4 8:0:1:4 ");
    assert_int_equal(f->h.conn_recv_window, H2_LITE_WINDOW);
    assert_int_equal(f->s.recv_window, H2_LITE_WINDOW);
    free(w);
}

static void test_a_body_waits_for_the_peers_window(void **state) {
    fixture_t *f = *state;
    wire_t *w = calloc(1, sizeof *w);
    const uint8_t set[6] = {0, 4, 0, 0, 0, 2}; /* INITIAL_WINDOW_SIZE 2 */
    frame(w, 6, 0x4, 0, 0, set);
    feed_all(f, w);
    h2_lite_written(&f->h, h2_lite_pending(&f->h));
    open_stream(f);
    char fr[256];
    out_frames(&f->h, 0, fr, sizeof fr);
    assert_string_equal(fr, "1:4:1:29 0:0:1:2 "); /* 2 bytes, no END_STREAM yet */
    h2_lite_written(&f->h, h2_lite_pending(&f->h));
    w->len = 0;
    const uint8_t inc[4] = {0, 0, 0, 10};
    frame(w, 4, 0x8, 0, 1, inc);
    feed_all(f, w);
    out_frames(&f->h, 0, fr, sizeof fr);
    assert_string_equal(fr, "0:1:1:3 ");
    free(w);
}

/* Feeds w, expects a connection error with that code, and a GOAWAY
 * carrying it at the end of the out buffer. */
static void expect_error(fixture_t *f, const wire_t *w, uint32_t code) {
    h2_lite_written(&f->h, h2_lite_pending(&f->h));
    assert_int_equal(h2_lite_feed(&f->h, w->b, w->len), -1);
    assert_true(f->h.failed);
    assert_int_equal(f->h.error_code, code);
    const uint8_t *p = h2_lite_out(&f->h);
    size_t n = h2_lite_pending(&f->h);
    assert_true(n >= 17);
    assert_int_equal(p[3], 0x7);
    uint32_t got = (uint32_t)p[13] << 24 | (uint32_t)p[14] << 16 | (uint32_t)p[15] << 8 | p[16];
    assert_int_equal(got, code);
    /* dead from then on */
    const h2_lite_field_t one[] = {{":path", "/x"}};
    h2_lite_stream_t s2 = {0};
    const char *why;
    assert_int_equal(h2_lite_request(&f->h, &s2, one, 1, NULL, 0, &why), -1);
    assert_int_equal(h2_lite_feed(&f->h, (const uint8_t *)"x", 1), -1);
}

static void test_protocol_violations_are_connection_errors(void **state) {
    (void)state;
    static const struct {
        const char *what;
        uint32_t code;
    } cases[] = {
        {"oversized frame", H2_FRAME_SIZE_ERROR},        {"push promise", H2_PROTOCOL_ERROR},
        {"data on an idle stream", H2_PROTOCOL_ERROR},   {"continuation alone", H2_PROTOCOL_ERROR},
        {"block interrupted", H2_PROTOCOL_ERROR},        {"window update of 0", H2_PROTOCOL_ERROR},
        {"settings of 7 bytes", H2_FRAME_SIZE_ERROR},    {"a dynamic index", H2_COMPRESSION_ERROR},
        {"padding past the end", H2_PROTOCOL_ERROR},     {"ping on a stream", H2_PROTOCOL_ERROR},
        {"max frame size too small", H2_PROTOCOL_ERROR},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fixture_t *f;
        setup((void **)&f);
        open_stream(f);
        wire_t *w = calloc(1, sizeof *w);
        switch (i) {
        case 0:
            frame(w, 16385, 0x0, 0, 1, NULL);
            break;
        case 1:
            frame(w, 4, 0x5, 0x4, 1, NULL);
            break;
        case 2:
            frame(w, 1, 0x0, 0, 3, "x");
            break;
        case 3:
            frame(w, 1, 0x9, 0x4, 1, "x");
            break;
        case 4:
            frame(w, 1, 0x1, 0, 1, "\x88");
            frame(w, 8, 0x6, 0, 0, "12345678");
            break;
        case 5:
            frame(w, 4, 0x8, 0, 0, "\0\0\0\0");
            break;
        case 6:
            frame(w, 7, 0x4, 0, 0, NULL);
            break;
        case 7:
            frame(w, 1, 0x1, 0x4, 1, "\xbe"); /* indexed field 62: the dynamic table */
            break;
        case 8:
            frame(w, 2, 0x0, 0x8, 1, "\x05x");
            break;
        case 9:
            frame(w, 8, 0x6, 0, 1, "12345678");
            break;
        case 10:
            frame(w, 6, 0x4, 0, 0, "\0\x05\0\0\0\x10");
            break;
        }
        print_message("case: %s\n", cases[i].what);
        expect_error(f, w, cases[i].code);
        free(w);
        teardown((void **)&f);
    }
}

static void test_frames_on_a_reset_stream_are_dropped(void **state) {
    fixture_t *f = *state;
    open_stream(f);
    h2_lite_reset(&f->h, &f->s, H2_CANCEL);
    char fr[64];
    size_t at = f->h.out.len - 13;
    out_frames(&f->h, at, fr, sizeof fr);
    assert_string_equal(fr, "3:0:1:4 ");
    wire_t *w = calloc(1, sizeof *w);
    headers(w, 1, 0, RESP, 2);
    frame(w, 3, 0x0, 0x1, 1, "abc");
    feed_all(f, w);
    assert_int_equal(f->e.closes, 0);
    assert_int_equal(f->e.data_len, 0);
    assert_string_equal(f->e.headers, "");
    free(w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_the_connection_starts_with_preface_settings_and_window,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_request_is_headers_with_a_table_update_then_data,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_the_peers_table_size_setting_brings_a_new_update,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_response_reaches_the_stream_whole_or_cut_anywhere,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_padded_headers_with_priority_decode, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_split_header_block_continues, setup, teardown),
        cmocka_unit_test_setup_teardown(test_settings_and_ping_are_acknowledged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rst_stream_and_goaway_end_streams, setup, teardown),
        cmocka_unit_test_setup_teardown(test_the_windows_are_given_back_at_half, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_body_waits_for_the_peers_window, setup, teardown),
        cmocka_unit_test(test_protocol_violations_are_connection_errors),
        cmocka_unit_test_setup_teardown(test_frames_on_a_reset_stream_are_dropped, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
