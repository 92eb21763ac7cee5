/*
 * fuzz_http_resp.c - the HTTP/1.1 response side (net/http_resp.h): the
 * head parser, then the body decoder fed what follows in pieces.
 *
 * Input: byte 0 chooses the piece size (1..64) and byte 1 which sink call
 * stops the decoder (0: none); the rest is the response as read from a
 * socket. Checked: the head answer is one of the three, errors come with a
 * reason, *consumed stays inside the input and under the head limit, the
 * status is 100..999 and Content-Length -1 or more; the parser is
 * stateless, so a prefix answers INCOMPLETE or the same as the whole. The
 * decoder never consumes more than it is given, hands the sink only bytes
 * it was fed (non-empty pieces, never more in total than the input), stops
 * consuming once done, delivers exactly Content-Length bytes for a
 * length-delimited body, returns the sink's stop value, and at EOF
 * answers 0 or an error with a reason.
 */
#include <stdint.h>
#include <string.h>

#include "net/http_resp.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct {
    size_t calls, bytes;
    size_t stop_at; /* 0: never */
} sink_state_t;

static int sink(const char *p, size_t n, void *ud) {
    sink_state_t *s = ud;
    FUZZ_CHECK(p != NULL && n > 0);
    s->calls++;
    s->bytes += n;
    return s->stop_at && s->calls == s->stop_at ? 7 : 0;
}

static void check_prefix(const char *buf, size_t k, int final_rc, size_t final_consumed) {
    http_resp_t r;
    size_t consumed = 99;
    const char *why = NULL;
    int rc = http_resp_parse_head(buf, k, &r, &consumed, &why);
    if (final_rc == HTTP_RESP_COMPLETE) {
        if (k >= final_consumed)
            FUZZ_CHECK(rc == HTTP_RESP_COMPLETE && consumed == final_consumed);
        else
            FUZZ_CHECK(rc == HTTP_RESP_INCOMPLETE);
        return;
    }
    FUZZ_CHECK(rc == HTTP_RESP_INCOMPLETE || rc == final_rc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2)
        return 0;
    size_t step = (size_t)(data[0] % 64) + 1;
    size_t stop_at = data[1] % 8;
    const char *buf = (const char *)data + 2;
    size_t len = size - 2;

    http_resp_t r;
    size_t consumed = 12345;
    const char *why = NULL;
    int rc = http_resp_parse_head(buf, len, &r, &consumed, &why);
    FUZZ_CHECK(rc == HTTP_RESP_COMPLETE || rc == HTTP_RESP_INCOMPLETE || rc == HTTP_RESP_ERROR);
    if (len > 0) {
        check_prefix(buf, len / 2, rc, consumed);
        check_prefix(buf, len - 1, rc, consumed);
    }
    if (rc != HTTP_RESP_COMPLETE) {
        FUZZ_CHECK(consumed == 0);
        if (rc == HTTP_RESP_ERROR)
            FUZZ_CHECK(why != NULL && why[0] != '\0');
        else
            FUZZ_CHECK(len <= HTTP_RESP_MAX_HEAD_BYTES);
        return 0;
    }
    FUZZ_CHECK(consumed > 0 && consumed <= len && consumed <= HTTP_RESP_MAX_HEAD_BYTES);
    FUZZ_CHECK(buf[consumed - 1] == '\n');
    FUZZ_CHECK(r.status >= 100 && r.status <= 999);
    FUZZ_CHECK(r.content_length >= -1);
    FUZZ_CHECK(memchr(r.content_type, '\0', sizeof r.content_type) != NULL);

    http_resp_body_t b;
    http_resp_body_init(&b, &r);
    sink_state_t s = {.stop_at = stop_at};
    const char *p = buf + consumed;
    size_t left = len - consumed, fed = 0;
    while (left > 0 && !b.done) {
        size_t n = left < step ? left : step;
        size_t used = 777777;
        const char *bwhy = NULL;
        size_t before = s.bytes;
        int brc = http_resp_body_feed(&b, p, n, &used, sink, &s, &bwhy);
        if (brc == HTTP_RESP_ERROR) { /* *consumed is not set then */
            FUZZ_CHECK(bwhy != NULL && bwhy[0] != '\0');
            return 0;
        }
        FUZZ_CHECK(used <= n);
        FUZZ_CHECK(s.bytes - before <= used);
        if (brc == 7) {
            FUZZ_CHECK(stop_at && s.calls == stop_at);
            return 0;
        }
        FUZZ_CHECK(brc == 0);
        if (!b.done)
            FUZZ_CHECK(used == n); /* only the end of the body stops consuming */
        p += used;
        left -= used;
        fed += used;
        if (used == 0)
            break;
    }
    FUZZ_CHECK(s.bytes <= fed);
    bool has_body = r.status >= 200 && r.status != 204 && r.status != 304;
    if (b.done && has_body && !r.chunked && r.content_length >= 0)
        FUZZ_CHECK(s.bytes == (size_t)r.content_length);
    if (b.done && left > 0) {
        /* Past the end: nothing more is taken. */
        size_t used = 1;
        FUZZ_CHECK(http_resp_body_feed(&b, p, left, &used, sink, &s, NULL) == 0 && used == 0);
    }
    const char *ewhy = NULL;
    int erc = http_resp_body_eof(&b, &ewhy);
    FUZZ_CHECK(erc == 0 || (erc == HTTP_RESP_ERROR && ewhy != NULL && ewhy[0] != '\0'));
    if (b.done)
        FUZZ_CHECK(erc == 0);
    return 0;
}
