/*
 * fuzz_http1.c - http1_parse_request() over pipelined request heads.
 *
 * Heads are parsed one after another until the answer is not COMPLETE.
 * Checked: *consumed stays inside the input and under the head limit, every
 * slice lies inside the consumed head, method and path are non-empty
 * tokens, header names are tokens and values hold no CR or LF, and errors
 * come with a description. The answer for a prefix must be INCOMPLETE or
 * the final answer (checked at the midpoint and one byte short).
 */
#include <stdint.h>
#include <string.h>

#include "net/http1.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool inside(const char *p, size_t n, const char *buf, size_t len) {
    return p >= buf && n <= len && (size_t)(p - buf) <= len - n;
}

static void check_prefix(const char *buf, size_t k, int final_rc, size_t final_consumed) {
    http1_request_t req;
    size_t consumed = 7;
    const char *why = NULL;
    int rc = http1_parse_request(buf, k, &req, &consumed, &why);
    if (final_rc == HTTP1_COMPLETE && k >= final_consumed) {
        FUZZ_CHECK(rc == HTTP1_COMPLETE && consumed == final_consumed);
        return;
    }
    FUZZ_CHECK(rc == HTTP1_INCOMPLETE || (rc == final_rc && final_rc != HTTP1_COMPLETE));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *buf = (const char *)data;
    size_t len = size;
    for (int round = 0; round < 64; round++) {
        http1_request_t req;
        size_t consumed = 12345;
        const char *why = (const char *)data;
        int rc = http1_parse_request(buf, len, &req, &consumed, &why);
        FUZZ_CHECK(rc >= HTTP1_ERR_VERSION && rc <= HTTP1_INCOMPLETE);
        if (len > 0) {
            check_prefix(buf, len / 2, rc, consumed);
            check_prefix(buf, len - 1, rc, consumed);
        }
        if (rc != HTTP1_COMPLETE) {
            FUZZ_CHECK(consumed == 0);
            if (rc == HTTP1_INCOMPLETE)
                FUZZ_CHECK(why == NULL && len <= HTTP1_MAX_HEAD_BYTES);
            else
                FUZZ_CHECK(why != NULL && why[0] != '\0');
            return 0;
        }
        FUZZ_CHECK(why == NULL);
        FUZZ_CHECK(consumed >= 2 && consumed <= len && consumed <= HTTP1_MAX_HEAD_BYTES);
        FUZZ_CHECK(buf[consumed - 1] == '\n');
        FUZZ_CHECK(req.method_len > 0 && inside(req.method, req.method_len, buf, consumed));
        FUZZ_CHECK(req.path_len > 0 && inside(req.path, req.path_len, buf, consumed));
        FUZZ_CHECK(!memchr(req.method, ' ', req.method_len));
        FUZZ_CHECK(!memchr(req.path, ' ', req.path_len));
        FUZZ_CHECK(req.minor_version >= 0 && req.minor_version <= 9);
        FUZZ_CHECK(req.header_count <= HTTP1_MAX_HEADERS);
        for (size_t i = 0; i < req.header_count; i++) {
            const http1_header_t *h = &req.headers[i];
            FUZZ_CHECK(h->name_len > 0 && inside(h->name, h->name_len, buf, consumed));
            FUZZ_CHECK(inside(h->value, h->value_len, buf, consumed));
            FUZZ_CHECK(!memchr(h->name, ':', h->name_len) && !memchr(h->name, ' ', h->name_len));
            FUZZ_CHECK(!memchr(h->value, '\r', h->value_len));
            FUZZ_CHECK(!memchr(h->value, '\n', h->value_len));
            if (h->value_len > 0) {
                FUZZ_CHECK(h->value[0] != ' ' && h->value[0] != '\t');
                FUZZ_CHECK(h->value[h->value_len - 1] != ' ' && h->value[h->value_len - 1] != '\t');
            }
        }
        if (req.minor_version == 0 && req.header_count == 0)
            FUZZ_CHECK(!req.keep_alive);
        buf += consumed;
        len -= consumed;
    }
    return 0;
}
