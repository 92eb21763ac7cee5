/* test_http1.c - HTTP/1.1 request-head parser and response-head formatter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "net/http1.h"

#define SENTINEL_SIZE ((size_t)0xdeadbeef)
static const char sentinel_why[] = "sentinel";

typedef struct {
    int rc;
    size_t consumed;
    const char *why;
    http1_request_t req;
} parsed_t;

static void parse_into(parsed_t *p, const char *buf, size_t len) {
    memset(&p->req, 0x5a, sizeof p->req);
    p->consumed = SENTINEL_SIZE;
    p->why = sentinel_why;
    p->rc = http1_parse_request(buf, len, &p->req, &p->consumed, &p->why);
    if (p->rc < 0) {
        assert_non_null(p->why);
        assert_ptr_not_equal(p->why, sentinel_why);
        assert_int_equal(p->consumed, 0);
    } else {
        assert_null(p->why);
    }
    if (p->rc == HTTP1_INCOMPLETE)
        assert_int_equal(p->consumed, 0);
    if (p->rc == HTTP1_COMPLETE)
        assert_true(p->consumed > 0 && p->consumed <= len);
}

static int parse_rc(const char *s) {
    parsed_t p;
    parse_into(&p, s, strlen(s));
    return p.rc;
}

static bool span_is(const char *p, size_t n, const char *want) {
    return n == strlen(want) && memcmp(p, want, n) == 0;
}

/* Every proper prefix must be INCOMPLETE or the whole buffer's result. */
static void check_every_split(const char *s, size_t len, int want) {
    parsed_t whole;
    parse_into(&whole, s, len);
    if (whole.rc != want)
        fail_msg("\"%.*s\": rc %d (%s), want %d", (int)len, s, whole.rc,
                 whole.why ? whole.why : "-", want);
    for (size_t k = 0; k < len; k++) {
        parsed_t p;
        parse_into(&p, s, k);
        bool ok;
        if (want == HTTP1_COMPLETE && k >= whole.consumed)
            ok = p.rc == HTTP1_COMPLETE && p.consumed == whole.consumed;
        else
            ok = p.rc == HTTP1_INCOMPLETE || (p.rc == want && want != HTTP1_COMPLETE);
        if (!ok)
            fail_msg("\"%.*s\" cut at %zu: rc %d", (int)len, s, k, p.rc);
    }
}

static void test_http1_parses_a_get_with_headers(void **state) {
    (void)state;
    const char *s = "GET /metrics?x=1 HTTP/1.1\r\nHost: 10.0.0.1:9400\r\n"
                    "User-Agent:  Prometheus/2.42.0 \r\nAccept:text/plain\r\n\r\n";
    parsed_t p;
    parse_into(&p, s, strlen(s));
    assert_int_equal(p.rc, HTTP1_COMPLETE);
    assert_int_equal(p.consumed, strlen(s));
    assert_true(span_is(p.req.method, p.req.method_len, "GET"));
    assert_true(span_is(p.req.path, p.req.path_len, "/metrics?x=1"));
    assert_int_equal(p.req.minor_version, 1);
    assert_int_equal(p.req.header_count, 3);
    assert_true(span_is(p.req.headers[0].name, p.req.headers[0].name_len, "Host"));
    assert_true(span_is(p.req.headers[0].value, p.req.headers[0].value_len, "10.0.0.1:9400"));
    assert_true(span_is(p.req.headers[1].name, p.req.headers[1].name_len, "User-Agent"));
    assert_true(span_is(p.req.headers[1].value, p.req.headers[1].value_len, "Prometheus/2.42.0"));
    assert_true(span_is(p.req.headers[2].value, p.req.headers[2].value_len, "text/plain"));
    assert_true(p.req.keep_alive);
}

static void test_http1_accepts_any_method_token_and_empty_values(void **state) {
    (void)state;
    const char *s = "M-SEARCH * HTTP/1.1\r\nX-Empty:\r\nX-Blank:   \r\n\r\n";
    parsed_t p;
    parse_into(&p, s, strlen(s));
    assert_int_equal(p.rc, HTTP1_COMPLETE);
    assert_true(span_is(p.req.method, p.req.method_len, "M-SEARCH"));
    assert_true(span_is(p.req.path, p.req.path_len, "*"));
    assert_int_equal(p.req.header_count, 2);
    assert_int_equal(p.req.headers[0].value_len, 0);
    assert_int_equal(p.req.headers[1].value_len, 0);
}

static void test_http1_parses_pipelined_requests_one_at_a_time(void **state) {
    (void)state;
    const char *s = "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"
                    "HEAD /metrics HTTP/1.1\r\n\r\n"
                    "GET /readyz HTTP/1.1\r\nConnection: close\r\n\r\n"
                    "GET /partial HTT";
    const char *paths[] = {"/healthz", "/metrics", "/readyz"};
    const bool keep[] = {true, true, false};
    size_t off = 0, len = strlen(s);
    for (size_t i = 0; i < 3; i++) {
        parsed_t p;
        parse_into(&p, s + off, len - off);
        assert_int_equal(p.rc, HTTP1_COMPLETE);
        assert_true(span_is(p.req.path, p.req.path_len, paths[i]));
        assert_int_equal(p.req.keep_alive, keep[i]);
        off += p.consumed;
    }
    assert_int_equal(parse_rc(s + off), HTTP1_INCOMPLETE);
}

static void test_http1_result_is_stable_at_every_split_point(void **state) {
    (void)state;
    static const struct {
        const char *s;
        int rc;
    } cases[] = {
        {"GET / HTTP/1.1\r\nHost: x\r\n\r\n", HTTP1_COMPLETE},
        {"GET / HTTP/1.1\r\nHost: x\r\n\r\nGET /next HTTP/1.1\r\n\r\n", HTTP1_COMPLETE},
        {"GET / HTTP/1.0\nHost: x\n\n", HTTP1_COMPLETE},
        {"\r\n\r\nGET / HTTP/1.1\r\n\r\n", HTTP1_COMPLETE},
        {"GET  / HTTP/1.1\r\n\r\n", HTTP1_ERR_BAD_REQUEST},
        {"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n", HTTP1_ERR_BAD_REQUEST},
        {"GET / HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", HTTP1_ERR_BAD_REQUEST},
        {"GET / HTTP/2.0\r\n\r\n", HTTP1_ERR_VERSION},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_every_split(cases[i].s, strlen(cases[i].s), cases[i].rc);
}

static char *build_request(size_t nheaders) {
    size_t cap = 64 + nheaders * 32;
    char *s = malloc(cap);
    assert_non_null(s);
    size_t n = (size_t)snprintf(s, cap, "GET / HTTP/1.1\r\n");
    for (size_t i = 0; i < nheaders; i++)
        n += (size_t)snprintf(s + n, cap - n, "X-H%zu: %zu\r\n", i, i);
    snprintf(s + n, cap - n, "\r\n");
    return s;
}

static void test_http1_accepts_32_headers_and_refuses_33(void **state) {
    (void)state;
    char *s = build_request(HTTP1_MAX_HEADERS);
    parsed_t p;
    parse_into(&p, s, strlen(s));
    assert_int_equal(p.rc, HTTP1_COMPLETE);
    assert_int_equal(p.req.header_count, HTTP1_MAX_HEADERS);
    assert_true(span_is(p.req.headers[31].name, p.req.headers[31].name_len, "X-H31"));
    free(s);
    s = build_request(HTTP1_MAX_HEADERS + 1);
    check_every_split(s, strlen(s), HTTP1_ERR_TOO_LARGE);
    free(s);
}

/* A request head of exactly `total` bytes: one padding header. */
static char *head_of_size(size_t total) {
    char *s = malloc(total + 1);
    assert_non_null(s);
    const char *start = "GET / HTTP/1.1\r\nX-Pad: ";
    size_t n = strlen(start);
    memcpy(s, start, n);
    memset(s + n, 'a', total - n - 4);
    memcpy(s + total - 4, "\r\n\r\n", 5);
    return s;
}

static void test_http1_refuses_a_head_over_the_limit_even_while_incomplete(void **state) {
    (void)state;
    char *s = head_of_size(HTTP1_MAX_HEAD_BYTES);
    parsed_t p;
    parse_into(&p, s, HTTP1_MAX_HEAD_BYTES);
    assert_int_equal(p.rc, HTTP1_COMPLETE);
    assert_int_equal(p.consumed, HTTP1_MAX_HEAD_BYTES);
    free(s);

    s = head_of_size(HTTP1_MAX_HEAD_BYTES + 1);
    parse_into(&p, s, HTTP1_MAX_HEAD_BYTES);
    assert_int_equal(p.rc, HTTP1_INCOMPLETE);
    parse_into(&p, s, HTTP1_MAX_HEAD_BYTES + 1);
    assert_int_equal(p.rc, HTTP1_ERR_TOO_LARGE);
    free(s);

    /* No line end at all: refused once one byte past the limit is in. */
    char *junk = malloc(HTTP1_MAX_HEAD_BYTES * 2);
    assert_non_null(junk);
    memcpy(junk, "GET /", 5);
    memset(junk + 5, 'a', HTTP1_MAX_HEAD_BYTES * 2 - 5);
    parse_into(&p, junk, HTTP1_MAX_HEAD_BYTES);
    assert_int_equal(p.rc, HTTP1_INCOMPLETE);
    parse_into(&p, junk, HTTP1_MAX_HEAD_BYTES + 1);
    assert_int_equal(p.rc, HTTP1_ERR_TOO_LARGE);
    parse_into(&p, junk, HTTP1_MAX_HEAD_BYTES * 2);
    assert_int_equal(p.rc, HTTP1_ERR_TOO_LARGE);
    free(junk);
}

static void test_http1_applies_the_keep_alive_rules_of_each_version(void **state) {
    (void)state;
    static const struct {
        const char *s;
        bool keep_alive;
    } cases[] = {
        {"GET / HTTP/1.1\r\n\r\n", true},
        {"GET / HTTP/1.1\r\nConnection: close\r\n\r\n", false},
        {"GET / HTTP/1.1\r\nConnection: CLOSE\r\n\r\n", false},
        {"GET / HTTP/1.1\r\nConnection: keep-alive\r\n\r\n", true},
        {"GET / HTTP/1.1\r\nConnection: Upgrade, close\r\n\r\n", false},
        {"GET / HTTP/1.1\r\nConnection: closed\r\n\r\n", true},
        {"GET / HTTP/1.0\r\n\r\n", false},
        {"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", true},
        {"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", true},
        {"GET / HTTP/1.0\r\nConnection: te ,keep-alive , x\r\n\r\n", true},
        {"GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n", false},
        {"GET / HTTP/1.0\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n", false},
        {"GET / HTTP/1.0\r\nKeep-Alive: timeout=5\r\n\r\n", false},
        {"GET / HTTP/1.0\r\nConnection: keep-alived\r\n\r\n", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        parsed_t p;
        parse_into(&p, cases[i].s, strlen(cases[i].s));
        assert_int_equal(p.rc, HTTP1_COMPLETE);
        if (p.req.keep_alive != cases[i].keep_alive)
            fail_msg("case %zu: keep_alive %d", i, p.req.keep_alive);
    }
}

static void test_http1_refuses_bad_request_lines(void **state) {
    (void)state;
    static const struct {
        const char *s;
        int rc;
    } cases[] = {
        {"GET\r\n\r\n", HTTP1_ERR_BAD_REQUEST},
        {"GET /\r\n\r\n", HTTP1_ERR_BAD_REQUEST},
        {" GET / HTTP/1.1\r\n\r\n", HTTP1_ERR_BAD_REQUEST},
        {"GET  / HTTP/1.1\r\n\r\n", HTTP1_ERR_BAD_REQUEST},
        {"GET /  HTTP/1.1\r\n\r\n", HTTP1_ERR_BAD_REQUEST},
        {"GET / HTTP/1.1 \r\n\r\n", HTTP1_ERR_BAD_REQUEST},
        {"GET\t/ HTTP/1.1\r\n\r\n", HTTP1_ERR_BAD_REQUEST},
        {"G(T / HTTP/1.1\r\n\r\n", HTTP1_ERR_BAD_REQUEST},
        {"GET /a\x01 HTTP/1.1\r\n\r\n", HTTP1_ERR_BAD_REQUEST},
        {"GET /\xc3\xa9 HTTP/1.1\r\n\r\n", HTTP1_ERR_BAD_REQUEST},
        {"GET / HTTP/1.1x\r\n\r\n", HTTP1_ERR_BAD_REQUEST},
        {"GET / http/1.1\r\n\r\n", HTTP1_ERR_BAD_REQUEST},
        {"GET / HTTP/1\r\n\r\n", HTTP1_ERR_BAD_REQUEST},
        {"GET / HTTP/11.1\r\n\r\n", HTTP1_ERR_BAD_REQUEST},
        {"GET / HTTP/1,1\r\n\r\n", HTTP1_ERR_BAD_REQUEST},
        {"GET / FTP/1.1\r\n\r\n", HTTP1_ERR_BAD_REQUEST},
        {"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", HTTP1_ERR_VERSION}, /* h2 preface */
        {"GET / HTTP/0.9\r\n\r\n", HTTP1_ERR_VERSION},
        {"GET / HTTP/3.0\r\n\r\n", HTTP1_ERR_VERSION},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = parse_rc(cases[i].s);
        if (rc != cases[i].rc)
            fail_msg("case %zu: rc %d, want %d", i, rc, cases[i].rc);
    }
    parsed_t p;
    const char *s = "GET / HTTP/1.9\r\n\r\n";
    parse_into(&p, s, strlen(s));
    assert_int_equal(p.rc, HTTP1_COMPLETE);
    assert_int_equal(p.req.minor_version, 9);
    assert_true(p.req.keep_alive);
}

static void test_http1_refuses_bad_header_lines(void **state) {
    (void)state;
    static const char *const bad[] = {
        "GET / HTTP/1.1\r\nHost x\r\n\r\n",       "GET / HTTP/1.1\r\nHost : x\r\n\r\n",
        "GET / HTTP/1.1\r\n: x\r\n\r\n",          "GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n",
        "GET / HTTP/1.1\r\n\tHost: x\r\n\r\n",    "GET / HTTP/1.1\r\nHo\"st: x\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\x01z\r\n\r\n", "GET / HTTP/1.1\r\nHost: a\x7f\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (parse_rc(bad[i]) != HTTP1_ERR_BAD_REQUEST)
            fail_msg("case %zu accepted", i);
    /* An embedded NUL in a value. */
    const char nul[] = "GET / HTTP/1.1\r\nHost: a\0b\r\n\r\n";
    parsed_t p;
    parse_into(&p, nul, sizeof nul - 1);
    assert_int_equal(p.rc, HTTP1_ERR_BAD_REQUEST);
    /* obs-text is kept opaque. */
    const char *utf8 = "GET / HTTP/1.1\r\nX-Name: caf\xc3\xa9\r\n\r\n";
    parse_into(&p, utf8, strlen(utf8));
    assert_int_equal(p.rc, HTTP1_COMPLETE);
    assert_int_equal(p.req.headers[0].value_len, 5);
}

static void test_http1_refuses_requests_with_a_body(void **state) {
    (void)state;
    static const struct {
        const char *s;
        int rc;
    } cases[] = {
        {"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", HTTP1_ERR_BAD_REQUEST},
        {"GET / HTTP/1.1\r\ncontent-length: 1\r\n\r\n", HTTP1_ERR_BAD_REQUEST},
        {"GET / HTTP/1.1\r\nContent-Length: -0\r\n\r\n", HTTP1_ERR_BAD_REQUEST},
        {"GET / HTTP/1.1\r\nContent-Length: 0, 0\r\n\r\n", HTTP1_ERR_BAD_REQUEST},
        {"GET / HTTP/1.1\r\nContent-Length:\r\n\r\n", HTTP1_ERR_BAD_REQUEST},
        {"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", HTTP1_ERR_BAD_REQUEST},
        {"GET / HTTP/1.1\r\nTRANSFER-ENCODING: identity\r\n\r\n", HTTP1_ERR_BAD_REQUEST},
        {"GET / HTTP/1.1\r\nContent-Length: 0\r\n\r\n", HTTP1_COMPLETE},
        {"GET / HTTP/1.1\r\nContent-Length: 000 \r\n\r\n", HTTP1_COMPLETE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        parsed_t p;
        parse_into(&p, cases[i].s, strlen(cases[i].s));
        if (p.rc != cases[i].rc)
            fail_msg("case %zu: rc %d", i, p.rc);
        if (p.rc == HTTP1_ERR_BAD_REQUEST && i < 4)
            assert_non_null(strstr(p.why, "bod"));
    }
}

/* Decision: bare LF ends a line as CRLF does (RFC 9112 2.2 allows it); a CR
 * anywhere but before LF is refused. */
static void test_http1_accepts_bare_lf_and_refuses_bare_cr(void **state) {
    (void)state;
    static const struct {
        const char *s;
        int rc;
    } cases[] = {
        {"GET / HTTP/1.1\nHost: x\n\n", HTTP1_COMPLETE},
        {"GET / HTTP/1.1\r\nHost: x\n\r\n", HTTP1_COMPLETE},
        {"GET / HTTP/1.1\nHost: x\r\n\n", HTTP1_COMPLETE},
        {"GET / HTTP/1.1\rHost: x\r\n\r\n", HTTP1_ERR_BAD_REQUEST},
        {"GET / HTTP/1.1\r\nHost: x\ry\r\n\r\n", HTTP1_ERR_BAD_REQUEST},
        {"GET / HTTP/1.1\r\nHost: x\r\r\n\r\n", HTTP1_ERR_BAD_REQUEST},
        {"GET / HTTP/1.1\r\n\r\r\n", HTTP1_ERR_BAD_REQUEST},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_every_split(cases[i].s, strlen(cases[i].s), cases[i].rc);
    parsed_t p;
    const char *s = "GET /x HTTP/1.1\nHost: y\n\nNEXT";
    parse_into(&p, s, strlen(s));
    assert_int_equal(p.rc, HTTP1_COMPLETE);
    assert_int_equal(p.consumed, strlen(s) - 4);
    assert_true(span_is(p.req.headers[0].value, p.req.headers[0].value_len, "y"));
}

static void test_http1_skips_empty_lines_before_the_request_line(void **state) {
    (void)state;
    const char *s = "\r\n\nGET / HTTP/1.1\r\n\r\n";
    parsed_t p;
    parse_into(&p, s, strlen(s));
    assert_int_equal(p.rc, HTTP1_COMPLETE);
    assert_int_equal(p.consumed, strlen(s));
    assert_ptr_equal(p.req.method, s + 3);
    assert_int_equal(parse_rc("\r\n\r\n"), HTTP1_INCOMPLETE);
    assert_int_equal(parse_rc(""), HTTP1_INCOMPLETE);
}

static void test_http1_refuses_binary_junk_before_the_line_ends(void **state) {
    (void)state;
    /* The start of a TLS ClientHello: no line end in sight. */
    const char tls[] = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03";
    parsed_t p;
    parse_into(&p, tls, 1);
    assert_int_equal(p.rc, HTTP1_ERR_BAD_REQUEST);
    check_every_split(tls, sizeof tls - 1, HTTP1_ERR_BAD_REQUEST);
    check_every_split("GET\x01", 4, HTTP1_ERR_BAD_REQUEST);
    assert_int_equal(parse_rc("GET"), HTTP1_INCOMPLETE);
    assert_int_equal(parse_rc("GET /junk\x01"), HTTP1_INCOMPLETE);
    assert_int_equal(parse_rc("\r"), HTTP1_INCOMPLETE);
    assert_int_equal(parse_rc("\r\n\r"), HTTP1_INCOMPLETE);
    assert_int_equal(parse_rc("\rX"), HTTP1_ERR_BAD_REQUEST);
    assert_int_equal(parse_rc("GET\r"), HTTP1_INCOMPLETE);
    assert_int_equal(parse_rc("GET\r\n"), HTTP1_ERR_BAD_REQUEST);
}

static void test_http1_why_may_be_null(void **state) {
    (void)state;
    http1_request_t req;
    size_t consumed = 1;
    assert_int_equal(http1_parse_request("BAD\r\n\r\n", 7, &req, &consumed, NULL),
                     HTTP1_ERR_BAD_REQUEST);
    assert_int_equal(consumed, 0);
}

static void test_http1_format_head_writes_the_exact_head(void **state) {
    (void)state;
    char out[256];
    size_t n = http1_format_head(out, sizeof out, 200, "text/plain; version=0.0.4", 1234, true);
    const char *want = "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
                       "Content-Length: 1234\r\nConnection: keep-alive\r\n\r\n";
    assert_string_equal(out, want);
    assert_int_equal(n, strlen(want));
    n = http1_format_head(out, sizeof out, 404, NULL, 0, false);
    want = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    assert_string_equal(out, want);
    assert_int_equal(n, strlen(want));
    char small[8];
    assert_int_equal(http1_format_head(small, sizeof small, 404, NULL, 0, false), strlen(want));
    assert_string_equal(small, "HTTP/1.");
    assert_int_equal(http1_format_head(NULL, 0, 404, NULL, 0, false), strlen(want));
}

static void test_http1_reason_knows_the_codes_we_send(void **state) {
    (void)state;
    assert_string_equal(http1_reason(200), "OK");
    assert_string_equal(http1_reason(400), "Bad Request");
    assert_string_equal(http1_reason(405), "Method Not Allowed");
    assert_string_equal(http1_reason(431), "Request Header Fields Too Large");
    assert_string_equal(http1_reason(503), "Service Unavailable");
    assert_string_equal(http1_reason(505), "HTTP Version Not Supported");
    assert_string_equal(http1_reason(299), "Unknown");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_http1_parses_a_get_with_headers),
        cmocka_unit_test(test_http1_accepts_any_method_token_and_empty_values),
        cmocka_unit_test(test_http1_parses_pipelined_requests_one_at_a_time),
        cmocka_unit_test(test_http1_result_is_stable_at_every_split_point),
        cmocka_unit_test(test_http1_accepts_32_headers_and_refuses_33),
        cmocka_unit_test(test_http1_refuses_a_head_over_the_limit_even_while_incomplete),
        cmocka_unit_test(test_http1_applies_the_keep_alive_rules_of_each_version),
        cmocka_unit_test(test_http1_refuses_bad_request_lines),
        cmocka_unit_test(test_http1_refuses_bad_header_lines),
        cmocka_unit_test(test_http1_refuses_requests_with_a_body),
        cmocka_unit_test(test_http1_accepts_bare_lf_and_refuses_bare_cr),
        cmocka_unit_test(test_http1_skips_empty_lines_before_the_request_line),
        cmocka_unit_test(test_http1_refuses_binary_junk_before_the_line_ends),
        cmocka_unit_test(test_http1_why_may_be_null),
        cmocka_unit_test(test_http1_format_head_writes_the_exact_head),
        cmocka_unit_test(test_http1_reason_knows_the_codes_we_send),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
