/*
 * fuzz_h2_lite.c - the client side of HTTP/2 (net/h2_lite.c) reading what a
 * server sends: the input after its first byte is the server's bytes, fed
 * in pieces of (first byte % 64) + 1 bytes, to a connection with two
 * streams open (one with a body waiting for windows). Checked: a stream
 * never hears of bytes after its close, no callback names a stream that is
 * not ours, a failed connection stays failed and its last frame is a GOAWAY,
 * and nothing is held once the connection is freed (the sanitizers).
 */
#include <stdint.h>
#include <string.h>

#include "net/h2_lite.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct {
    h2_lite_stream_t s[2];
    bool closed[2];
    size_t bytes;
} state_t;

static int which(state_t *st, h2_lite_stream_t *s) {
    FUZZ_CHECK(s == &st->s[0] || s == &st->s[1]);
    return s == &st->s[0] ? 0 : 1;
}

static void on_header(void *ud, h2_lite_stream_t *s, bool trailers, const uint8_t *name,
                      size_t namelen, const uint8_t *value, size_t valuelen) {
    state_t *st = ud;
    (void)trailers;
    FUZZ_CHECK(!st->closed[which(st, s)]);
    FUZZ_CHECK(name && (value || valuelen == 0));
    st->bytes += namelen + valuelen;
}

static void on_data(void *ud, h2_lite_stream_t *s, const uint8_t *d, size_t len) {
    state_t *st = ud;
    FUZZ_CHECK(!st->closed[which(st, s)]);
    FUZZ_CHECK(len > 0 && d);
    st->bytes += len;
}

static void on_close(void *ud, h2_lite_stream_t *s, bool reset, uint32_t code) {
    state_t *st = ud;
    int i = which(st, s);
    FUZZ_CHECK(!st->closed[i]);
    FUZZ_CHECK(reset || code == 0);
    st->closed[i] = true;
}

static void on_goaway(void *ud, uint32_t last, uint32_t code, const uint8_t *d, size_t len) {
    (void)ud;
    (void)last;
    (void)code;
    (void)d;
    FUZZ_CHECK(len <= H2_LITE_GOAWAY_DEBUG);
}

static const h2_lite_callbacks_t CBS = {on_header, on_data, on_close, on_goaway};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    size_t piece = (size_t)(data[0] % 64) + 1;
    state_t st;
    memset(&st, 0, sizeof st);
    h2_lite_t h;
    h2_lite_init(&h, &CBS, &st);
    static const uint8_t body[100000];
    const h2_lite_field_t f[] = {{":method", "POST"}, {":path", "/a.B/C"}};
    const char *why;
    FUZZ_CHECK(h2_lite_request(&h, &st.s[0], f, 2, body, 5, &why) == 0);
    FUZZ_CHECK(h2_lite_request(&h, &st.s[1], f, 2, body, sizeof body, &why) == 0);
    FUZZ_CHECK(st.s[1].body_len > 0); /* more than the default window: waits */
    bool failed = false;
    for (size_t at = 1; at < size; at += piece) {
        size_t n = size - at < piece ? size - at : piece;
        int rc = h2_lite_feed(&h, data + at, n);
        FUZZ_CHECK(rc == 0 || rc == -1);
        FUZZ_CHECK(!failed || rc == -1);
        if (rc == -1 && !failed) {
            failed = true;
            FUZZ_CHECK(h.failed && h.why[0]);
            FUZZ_CHECK(h2_lite_pending(&h) >= 17);
        }
        /* drain what it wrote, as the owner does */
        h2_lite_written(&h, h2_lite_pending(&h));
    }
    h2_lite_free(&h);
    return 0;
}
