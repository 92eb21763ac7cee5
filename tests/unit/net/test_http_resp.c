/* test_http_resp.c - HTTP/1.1 response head parser and body decoder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "net/http_resp.h"

typedef struct {
    char data[4096];
    size_t len;
    int calls;
    int stop_after; /* 0 = never */
} sink_t;

static int sink(const char *d, size_t n, void *ud) {
    sink_t *s = ud;
    assert_true(s->len + n <= sizeof s->data);
    memcpy(s->data + s->len, d, n);
    s->len += n;
    s->calls++;
    return s->stop_after && s->calls >= s->stop_after ? 7 : 0;
}

static void test_http_resp_parses_a_chunked_watch_head(void **state) {
    (void)state;
    const char h[] = "HTTP/1.1 200 OK\r\nAudit-Id: 1b2c\r\nCache-Control: no-cache, private\r\n"
                     "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n";
    http_resp_t r;
    size_t used = 99;
    const char *why = "sentinel";
    assert_int_equal(http_resp_parse_head(h, sizeof h - 1, &r, &used, &why), HTTP_RESP_COMPLETE);
    assert_null(why);
    assert_int_equal(r.status, 200);
    assert_true(r.chunked);
    assert_int_equal(r.content_length, -1);
    assert_int_equal(used, sizeof h - 1 - 3);
    /* Every prefix of the head is incomplete. */
    for (size_t k = 0; k < used; k++) {
        int rc = http_resp_parse_head(h, k, &r, &used, &why);
        if (rc != HTTP_RESP_INCOMPLETE)
            fail_msg("prefix %zu: rc %d (%s)", k, rc, why ? why : "-");
        assert_int_equal(used, 0);
        used = sizeof h - 1 - 3;
    }
}

static void test_http_resp_parses_status_and_content_length(void **state) {
    (void)state;
    const char h[] = "HTTP/1.1 410 Gone\nContent-Length: 42\nContent-length: 42\n\n";
    http_resp_t r;
    size_t used;
    assert_int_equal(http_resp_parse_head(h, sizeof h - 1, &r, &used, NULL), HTTP_RESP_COMPLETE);
    assert_int_equal(r.status, 410);
    assert_false(r.chunked);
    assert_int_equal(r.content_length, 42);
    assert_string_equal(r.content_type, "");
    const char noreason[] = "HTTP/1.0 401\r\n\r\n";
    assert_int_equal(http_resp_parse_head(noreason, sizeof noreason - 1, &r, &used, NULL),
                     HTTP_RESP_COMPLETE);
    assert_int_equal(r.status, 401);
    /* Content-Type, trimmed; the engine scrapes pick the exposition format by it. */
    const char om[] = "HTTP/1.1 200 OK\r\ncontent-TYPE:  application/openmetrics-text; "
                      "version=1.0.0 \r\n\r\n";
    assert_int_equal(http_resp_parse_head(om, sizeof om - 1, &r, &used, NULL), HTTP_RESP_COMPLETE);
    assert_string_equal(r.content_type, "application/openmetrics-text; version=1.0.0");
}

static void test_http_resp_rejects_bad_heads(void **state) {
    (void)state;
    const char *bad[] = {
        "\x15\x03\x03\x00\x02\x02\x46",
        "HTTP/2 200\r\n\r\n",
        "HTTP/1.1 20 OK\r\n\r\n",
        "HTTP/1.1 2000 OK\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        "HTTP/1.1 200 OK\r\n folded\r\n\r\n",
        "HTTP/1.1 200 OK\r\nNo colon\r\n\r\n",
        "HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        http_resp_t r;
        size_t used = 5;
        const char *why = NULL;
        int rc = http_resp_parse_head(bad[i], strlen(bad[i]), &r, &used, &why);
        if (rc != HTTP_RESP_ERROR)
            fail_msg("case %zu: rc %d", i, rc);
        assert_non_null(why);
        assert_int_equal(used, 0);
    }
    char big[HTTP_RESP_MAX_HEAD_BYTES + 100];
    memcpy(big, "HTTP/1.1 200 OK\r\nX: ", 20);
    memset(big + 20, 'a', sizeof big - 20);
    http_resp_t r;
    size_t used;
    assert_int_equal(http_resp_parse_head(big, HTTP_RESP_MAX_HEAD_BYTES, &r, &used, NULL),
                     HTTP_RESP_INCOMPLETE);
    assert_int_equal(http_resp_parse_head(big, sizeof big, &r, &used, NULL), HTTP_RESP_ERROR);
}

/* Feeds `body` in pieces of `step` bytes. */
static int feed_all(http_resp_body_t *b, const char *body, size_t len, size_t step, sink_t *s,
                    size_t *total_used) {
    *total_used = 0;
    while (*total_used < len && !b->done) {
        size_t n = len - *total_used < step ? len - *total_used : step;
        size_t used;
        const char *why;
        int rc = http_resp_body_feed(b, body + *total_used, n, &used, sink, s, &why);
        if (rc)
            return rc;
        assert_true(used <= n);
        *total_used += used;
        if (used < n)
            break;
    }
    return 0;
}

static void test_http_resp_decodes_chunked_bodies_split_anywhere(void **state) {
    (void)state;
    const char body[] = "18;ext=1\r\n{\"type\":\"ADDED\",\"object\"\r\n"
                        "3\r\n:{}\r\n"
                        "2\r\n}\n\r\n"
                        "0\r\nTrailer: x\r\n\r\nNEXT";
    const char want[] = "{\"type\":\"ADDED\",\"object\":{}}\n";
    http_resp_t r = {.status = 200, .chunked = true, .content_length = -1};
    for (size_t step = 1; step <= sizeof body; step++) {
        http_resp_body_t b;
        sink_t s = {0};
        http_resp_body_init(&b, &r);
        size_t used;
        assert_int_equal(feed_all(&b, body, sizeof body - 1, step, &s, &used), 0);
        assert_true(b.done);
        assert_int_equal(used, sizeof body - 1 - 4); /* "NEXT" is not consumed */
        assert_int_equal(s.len, strlen(want));
        assert_memory_equal(s.data, want, s.len);
        assert_int_equal(http_resp_body_eof(&b, NULL), 0);
    }
}

static void test_http_resp_reports_bad_chunks_and_short_bodies(void **state) {
    (void)state;
    http_resp_t r = {.status = 200, .chunked = true, .content_length = -1};
    const char *bad[] = {"zz\r\n", "3\r\nabcX\r\n", "fffffffffffffffffff\r\n"};
    for (size_t i = 0; i < 3; i++) {
        http_resp_body_t b;
        sink_t s = {0};
        size_t used;
        const char *why = NULL;
        http_resp_body_init(&b, &r);
        assert_int_equal(http_resp_body_feed(&b, bad[i], strlen(bad[i]), &used, sink, &s, &why),
                         HTTP_RESP_ERROR);
        assert_non_null(why);
    }
    http_resp_body_t b;
    sink_t s = {0};
    size_t used;
    http_resp_body_init(&b, &r);
    assert_int_equal(http_resp_body_feed(&b, "5\r\nab", 5, &used, sink, &s, NULL), 0);
    const char *why = NULL;
    assert_int_equal(http_resp_body_eof(&b, &why), HTTP_RESP_ERROR);
    assert_non_null(why);
    /* Content-Length: stops at the length; short is an error at EOF. */
    http_resp_t cl = {.status = 200, .chunked = false, .content_length = 4};
    http_resp_body_init(&b, &cl);
    memset(&s, 0, sizeof s);
    assert_int_equal(http_resp_body_feed(&b, "abcdef", 6, &used, sink, &s, NULL), 0);
    assert_int_equal(used, 4);
    assert_true(b.done);
    http_resp_body_init(&b, &cl);
    assert_int_equal(http_resp_body_feed(&b, "ab", 2, &used, sink, &s, NULL), 0);
    assert_int_equal(http_resp_body_eof(&b, NULL), HTTP_RESP_ERROR);
    /* No length: until the connection closes. */
    http_resp_t close_delim = {.status = 403, .chunked = false, .content_length = -1};
    http_resp_body_init(&b, &close_delim);
    assert_int_equal(http_resp_body_feed(&b, "ab", 2, &used, sink, &s, NULL), 0);
    assert_false(b.done);
    assert_int_equal(http_resp_body_eof(&b, NULL), 0);
    /* 204 has no body. */
    http_resp_t nc = {.status = 204, .chunked = false, .content_length = -1};
    http_resp_body_init(&b, &nc);
    assert_true(b.done);
}

static void test_http_resp_stops_when_the_sink_says_so(void **state) {
    (void)state;
    http_resp_t r = {.status = 200, .chunked = true, .content_length = -1};
    http_resp_body_t b;
    sink_t s = {.stop_after = 1};
    size_t used;
    http_resp_body_init(&b, &r);
    const char body[] = "2\r\nab\r\n2\r\ncd\r\n";
    assert_int_equal(http_resp_body_feed(&b, body, sizeof body - 1, &used, sink, &s, NULL), 7);
    assert_int_equal(s.calls, 1);
    assert_int_equal(used, 5);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_http_resp_parses_a_chunked_watch_head),
        cmocka_unit_test(test_http_resp_parses_status_and_content_length),
        cmocka_unit_test(test_http_resp_rejects_bad_heads),
        cmocka_unit_test(test_http_resp_decodes_chunked_bodies_split_anywhere),
        cmocka_unit_test(test_http_resp_reports_bad_chunks_and_short_bodies),
        cmocka_unit_test(test_http_resp_stops_when_the_sink_says_so),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
