/* test_resp.c - RESP2 reply parser, command encoder and XINFO GROUPS reader.
 * The replies marked "Redis 7.0.15" are bytes captured from a real server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/err.h"
#include "sources/resp.h"

/* Redis 7.0.15: XINFO GROUPS jobs, after XREADGROUP took one of three entries for "workers". */
static const char XINFO_LAG[] =
    "*2\r\n"
    "*12\r\n$4\r\nname\r\n$5\r\nfresh\r\n$9\r\nconsumers\r\n:0\r\n$7\r\npending\r\n:0\r\n"
    "$17\r\nlast-delivered-id\r\n$15\r\n1795982493553-0\r\n$12\r\nentries-read\r\n$-1\r\n"
    "$3\r\nlag\r\n:0\r\n"
    "*12\r\n$4\r\nname\r\n$7\r\nworkers\r\n$9\r\nconsumers\r\n:1\r\n$7\r\npending\r\n:1\r\n"
    "$17\r\nlast-delivered-id\r\n$15\r\n1795982493353-0\r\n$12\r\nentries-read\r\n:1\r\n"
    "$3\r\nlag\r\n:2\r\n";

/* Redis 7.0.15: XINFO GROUPS s2 after XDEL of an entry past the group's position: lag is nil. */
static const char XINFO_NIL[] =
    "*1\r\n*12\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:0\r\n$7\r\npending\r\n:0\r\n"
    "$17\r\nlast-delivered-id\r\n$3\r\n0-0\r\n$12\r\nentries-read\r\n$-1\r\n$3\r\nlag\r\n$-1\r\n";

/* Redis 6 shape: no entries-read, no lag. */
static const char XINFO_V6[] =
    "*1\r\n*8\r\n$4\r\nname\r\n$7\r\nworkers\r\n$9\r\nconsumers\r\n:2\r\n$7\r\npending\r\n:5\r\n"
    "$17\r\nlast-delivered-id\r\n$3\r\n7-0\r\n";

/* Redis 7.0.15: XRANGE jobs - + COUNT 2. */
static const char XRANGE[] = "*2\r\n*2\r\n$15\r\n1795982493353-0\r\n*2\r\n$1\r\nf\r\n$1\r\n1\r\n"
                             "*2\r\n$15\r\n1795982493453-0\r\n*2\r\n$1\r\nf\r\n$1\r\n2\r\n";

static int setup(void **state) {
    *state = test_malloc(sizeof(resp_reply_t));
    return *state ? 0 : -1;
}

static int teardown(void **state) {
    test_free(*state);
    return 0;
}

/* resp_scan() fed s[0..n) one byte more each call, from a copy that moves
 * every time (as a growing receive buffer does): the first answer that is
 * not RESP_INCOMPLETE must be what resp_parse() says of that prefix, and
 * is returned (with the prefix length in *at). */
static int scan_drip(const char *s, size_t n, size_t *at, char *err, size_t errlen) {
    resp_scan_t st;
    resp_scan_init(&st);
    resp_reply_t *whole = test_malloc(sizeof *whole);
    int rc = RESP_INCOMPLETE;
    size_t k;
    for (k = 1; k <= n && rc == RESP_INCOMPLETE; k++) {
        char *copy = test_malloc(k);
        memcpy(copy, s, k);
        size_t used = 99, wused = 99;
        char werr[512] = "";
        rc = resp_scan(&st, copy, k, &used, err, errlen);
        int wrc = resp_parse(copy, k, whole, &wused, werr, sizeof werr);
        test_free(copy);
        if (rc != wrc || used != wused || (rc != RESP_INCOMPLETE && strcmp(err, werr) != 0))
            fail_msg("prefix %zu: scan %d (%zu) \"%s\", parse %d (%zu) \"%s\"", k, rc, used, err,
                     wrc, wused, werr);
    }
    test_free(whole);
    *at = k - 1;
    return rc;
}

/* Parses s[0..n), which must be exactly one complete reply. */
static void parse_ok(resp_reply_t *r, const char *s, size_t n) {
    size_t at;
    char serr[256];
    assert_int_equal(scan_drip(s, n, &at, serr, sizeof serr), RESP_COMPLETE);
    assert_int_equal(at, n);
    char err[256] = "sentinel";
    size_t used = 12345;
    int rc = resp_parse(s, n, r, &used, err, sizeof err);
    if (rc != RESP_COMPLETE)
        fail_msg("rc %d: %s", rc, err);
    assert_int_equal(used, n);
    assert_string_equal(err, "");
    assert_true(r->count >= 1);
}

#define PARSE_OK(r, lit) parse_ok((r), (lit), sizeof(lit) - 1)

/* Expects KGS_EINVAL with a message containing `needle`. */
static void parse_bad(resp_reply_t *r, const char *s, size_t n, const char *needle) {
    size_t at;
    char serr[512];
    assert_int_equal(scan_drip(s, n, &at, serr, sizeof serr), KGS_EINVAL);
    char err[512] = "";
    size_t used = 12345;
    int rc = resp_parse(s, n, r, &used, err, sizeof err);
    if (rc != KGS_EINVAL)
        fail_msg("input %.*s: rc %d, wanted KGS_EINVAL", (int)n, s, rc);
    assert_int_equal(used, 0);
    assert_int_equal(r->count, 0);
    if (!strstr(err, needle))
        fail_msg("message \"%s\" lacks \"%s\"", err, needle);
    assert_non_null(strstr(err, "parse RESP reply: offset "));
}

#define PARSE_BAD(r, lit, needle) parse_bad((r), (lit), sizeof(lit) - 1, (needle))

/* Every strict prefix of s[0..n) is incomplete; the whole is one reply. Each prefix sits in its
 * own exact-size heap block, so ASan catches any read past it. */
static void every_prefix_incomplete(resp_reply_t *r, const char *s, size_t n) {
    for (size_t k = 0; k < n; k++) {
        char *copy = malloc(k ? k : 1);
        assert_non_null(copy);
        memcpy(copy, s, k);
        char err[256] = "";
        size_t used = 12345;
        int rc = resp_parse(k ? copy : NULL, k, r, &used, err, sizeof err);
        free(copy);
        if (rc != RESP_INCOMPLETE)
            fail_msg("prefix %zu of %zu: rc %d (%s)", k, n, rc, err);
        assert_int_equal(used, 0);
        assert_int_equal(r->count, 0);
    }
    parse_ok(r, s, n);
}

/* ---- parser ---------------------------------------------------------------------------------- */

static void test_resp_parses_each_scalar_type(void **state) {
    resp_reply_t *r = *state;

    PARSE_OK(r, "+PONG\r\n");
    assert_int_equal(r->count, 1);
    assert_int_equal(r->nodes[0].type, RESP_SIMPLE);
    assert_int_equal(r->nodes[0].len, 4);
    assert_memory_equal(r->nodes[0].str, "PONG", 4);
    assert_int_equal(r->nodes[0].next, 1);

    PARSE_OK(r, "+\r\n");
    assert_int_equal(r->nodes[0].type, RESP_SIMPLE);
    assert_int_equal(r->nodes[0].len, 0);

    PARSE_OK(r, "-ERR no such key\r\n");
    assert_int_equal(r->nodes[0].type, RESP_ERROR);
    assert_int_equal(r->nodes[0].len, 15);
    assert_memory_equal(r->nodes[0].str, "ERR no such key", 15);

    PARSE_OK(r, ":3\r\n");
    assert_int_equal(r->nodes[0].type, RESP_INTEGER);
    assert_int_equal(r->nodes[0].integer, 3);
    assert_null(r->nodes[0].str);

    PARSE_OK(r, ":0\r\n");
    assert_int_equal(r->nodes[0].integer, 0);
    PARSE_OK(r, ":-42\r\n");
    assert_int_equal(r->nodes[0].integer, -42);
    PARSE_OK(r, ":9223372036854775807\r\n");
    assert_true(r->nodes[0].integer == INT64_MAX);
    PARSE_OK(r, ":-9223372036854775808\r\n");
    assert_true(r->nodes[0].integer == INT64_MIN);

    PARSE_OK(r, "$3\r\nabc\r\n");
    assert_int_equal(r->nodes[0].type, RESP_BULK);
    assert_int_equal(r->nodes[0].len, 3);
    assert_memory_equal(r->nodes[0].str, "abc", 3);

    PARSE_OK(r, "$0\r\n\r\n");
    assert_int_equal(r->nodes[0].type, RESP_BULK);
    assert_int_equal(r->nodes[0].len, 0);
    assert_non_null(r->nodes[0].str);

    /* Bulk strings are binary-safe: CR, LF and NUL inside are data. */
    static const char bin[] = "$6\r\na\r\n\0\rb\r\n";
    parse_ok(r, bin, sizeof bin - 1);
    assert_int_equal(r->nodes[0].len, 6);
    assert_memory_equal(r->nodes[0].str, "a\r\n\0\rb", 6);

    PARSE_OK(r, "$-1\r\n");
    assert_int_equal(r->nodes[0].type, RESP_NULL);
    assert_null(r->nodes[0].str);
    PARSE_OK(r, "*-1\r\n");
    assert_int_equal(r->nodes[0].type, RESP_NULL);
    assert_int_equal(r->nodes[0].count, 0);

    PARSE_OK(r, "*0\r\n");
    assert_int_equal(r->count, 1);
    assert_int_equal(r->nodes[0].type, RESP_ARRAY);
    assert_int_equal(r->nodes[0].count, 0);
    assert_int_equal(r->nodes[0].next, 1);
    assert_null(resp_child(r, &r->nodes[0], 0));
}

static void test_resp_node_strings_point_into_the_buffer(void **state) {
    resp_reply_t *r = *state;
    static const char s[] = "*2\r\n+OK\r\n$2\r\nhi\r\n";
    PARSE_OK(r, s);
    assert_ptr_equal(r->nodes[1].str, s + 5);
    assert_ptr_equal(r->nodes[2].str, s + 13);
}

static void test_resp_walks_nested_arrays_with_next_and_child(void **state) {
    resp_reply_t *r = *state;
    PARSE_OK(r, XRANGE);
    /* Pre-order: 0 [ 1 [ 2 id, 3 [ 4 f, 5 1 ] ], 6 [ 7 id, 8 [ 9 f, 10 2 ] ] ] */
    assert_int_equal(r->count, 11);
    static const uint32_t next[] = {11, 6, 3, 6, 5, 6, 11, 8, 11, 10, 11};
    static const resp_type_t type[] = {RESP_ARRAY, RESP_ARRAY, RESP_BULK,  RESP_ARRAY,
                                       RESP_BULK,  RESP_BULK,  RESP_ARRAY, RESP_BULK,
                                       RESP_ARRAY, RESP_BULK,  RESP_BULK};
    for (uint32_t i = 0; i < 11; i++) {
        assert_int_equal(r->nodes[i].next, next[i]);
        assert_int_equal(r->nodes[i].type, type[i]);
    }
    const resp_node_t *root = &r->nodes[0];
    assert_int_equal(root->count, 2);
    const resp_node_t *e1 = resp_child(r, root, 1);
    assert_ptr_equal(e1, &r->nodes[6]);
    const resp_node_t *id = resp_child(r, e1, 0);
    assert_int_equal(id->len, 15);
    assert_memory_equal(id->str, "1795982493453-0", 15);
    const resp_node_t *fields = resp_child(r, e1, 1);
    const resp_node_t *v = resp_child(r, fields, 1);
    assert_memory_equal(v->str, "2", 1);
    /* Out of range, and not an array. */
    assert_null(resp_child(r, root, 2));
    assert_null(resp_child(r, fields, 2));
    assert_null(resp_child(r, id, 0));

    /* Nulls and empty arrays inside arrays are leaves. */
    PARSE_OK(r, "*4\r\n*0\r\n$-1\r\n*-1\r\n*1\r\n*0\r\n");
    assert_int_equal(r->count, 6);
    assert_int_equal(r->nodes[1].next, 2);
    assert_int_equal(r->nodes[2].type, RESP_NULL);
    assert_int_equal(r->nodes[3].type, RESP_NULL);
    assert_int_equal(r->nodes[4].next, 6);
    assert_ptr_equal(resp_child(r, &r->nodes[0], 3), &r->nodes[4]);
}

static void test_resp_reports_every_strict_prefix_as_incomplete(void **state) {
    resp_reply_t *r = *state;
    static const char *const replies[] = {
        XINFO_LAG,    XINFO_NIL,    XINFO_V6,   XRANGE,
        "+PONG\r\n",  "-ERR x\r\n", ":-12\r\n", "$-1\r\n",
        "$0\r\n\r\n", "*-1\r\n",    "*0\r\n",   "*3\r\n:1\r\n*1\r\n$2\r\nab\r\n*0\r\n",
    };
    for (size_t i = 0; i < sizeof replies / sizeof replies[0]; i++)
        every_prefix_incomplete(r, replies[i], strlen(replies[i]));
    static const char bin[] = "$4\r\n\r\n\0\n\r\n";
    every_prefix_incomplete(r, bin, sizeof bin - 1);
}

static void test_resp_leaves_the_next_reply_alone(void **state) {
    resp_reply_t *r = *state;
    static const char two[] = ":1\r\n$2\r\nab\r\n-ERR\r\n";
    size_t used = 0;
    assert_int_equal(resp_parse(two, sizeof two - 1, r, &used, NULL, 0), RESP_COMPLETE);
    assert_int_equal(used, 4);
    assert_int_equal(resp_parse(two + 4, sizeof two - 1 - 4, r, &used, NULL, 0), RESP_COMPLETE);
    assert_int_equal(used, 8);
    assert_memory_equal(r->nodes[0].str, "ab", 2);
    /* Garbage after a complete reply is the next reply's problem. */
    assert_int_equal(resp_parse(":1\r\n%%", 6, r, &used, NULL, 0), RESP_COMPLETE);
    assert_int_equal(used, 4);
}

static void test_resp_rejects_bad_integers_and_lengths(void **state) {
    resp_reply_t *r = *state;
    PARSE_BAD(r, ":+1\r\n", "offset 1: integer is not a number (byte 1 of it)");
    PARSE_BAD(r, ":\r\n", "integer is not a number");
    PARSE_BAD(r, ":-\r\n", "is not a number");
    PARSE_BAD(r, ":1a\r\n", "integer is not a number (byte 2 of it)");
    PARSE_BAD(r, ": 1\r\n", "is not a number");
    PARSE_BAD(r, ":01\r\n", "leading zero");
    PARSE_BAD(r, ":-01\r\n", "leading zero");
    PARSE_BAD(r, ":-0\r\n", "is not a number");
    PARSE_BAD(r, ":9223372036854775808\r\n", "out of range");
    PARSE_BAD(r, ":-9223372036854775809\r\n", "out of range");
    /* Refused as soon as the digits overflow, without waiting for CRLF. */
    PARSE_BAD(r, ":99999999999999999999", "out of range");
    PARSE_BAD(r, ":1\rx", "not ended by CRLF");
    PARSE_BAD(r, ":1\n", "is not a number");
    PARSE_BAD(r, "$+3\r\nabc\r\n", "bulk length");
    PARSE_BAD(r, "$-2\r\n", "bulk length -2 is not -1 or 0..16777216");
    PARSE_BAD(r, "$16777217\r\n", "bulk length 16777217");
    PARSE_BAD(r, "$3\r\nabcd\r\n", "bulk string of 3 bytes not followed by CRLF");
    PARSE_BAD(r, "$3\r\nabc\n\r", "not followed by CRLF");
    PARSE_BAD(r, "*-2\r\n", "array count -2");
    PARSE_BAD(r, "*4096\r\n", "array count 4096");
    PARSE_BAD(r, "*x\r\n", "array count is not a number");
}

static void test_resp_rejects_bad_framing(void **state) {
    resp_reply_t *r = *state;
    PARSE_BAD(r, "%1\r\n", "offset 0: not a RESP2 type byte");
    PARSE_BAD(r, "_\r\n", "not a RESP2 type byte");
    PARSE_BAD(r, "#t\r\n", "not a RESP2 type byte");
    PARSE_BAD(r, ",1.5\r\n", "not a RESP2 type byte");
    PARSE_BAD(r, "\r\n", "not a RESP2 type byte");
    PARSE_BAD(r, "*2\r\n:1\r\n~0\r\n", "offset 8: not a RESP2 type byte");
    PARSE_BAD(r, "+OK\n", "line feed inside a line");
    PARSE_BAD(r, "+O\nK\r\n", "offset 2: line feed inside a line");
    PARSE_BAD(r, "-ERR\rx", "line not ended by CRLF");
    static const char nul_type[] = "\0";
    parse_bad(r, nul_type, 1, "not a RESP2 type byte");
    /* err may be NULL. */
    size_t used = 7;
    assert_int_equal(resp_parse("?", 1, r, &used, NULL, 0), KGS_EINVAL);
    assert_int_equal(used, 0);
}

static void test_resp_waits_for_a_huge_declared_bulk_without_reading_past_the_buffer(void **state) {
    resp_reply_t *r = *state;
    static const char head[] = "$16777216\r\nabc";
    char *exact = malloc(sizeof head - 1); /* no slack: ASan sees any over-read */
    assert_non_null(exact);
    memcpy(exact, head, sizeof head - 1);
    size_t used = 7;
    assert_int_equal(resp_parse(exact, sizeof head - 1, r, &used, NULL, 0), RESP_INCOMPLETE);
    assert_int_equal(used, 0);
    free(exact);

    /* The largest bulk string is accepted once all of it is there. */
    size_t n = 11 + RESP_MAX_BULK + 2;
    char *big = malloc(n);
    assert_non_null(big);
    memcpy(big, "$16777216\r\n", 11);
    memset(big + 11, 'x', RESP_MAX_BULK);
    memcpy(big + 11 + RESP_MAX_BULK, "\r\n", 2);
    assert_int_equal(resp_parse(big, n - 1, r, &used, NULL, 0), RESP_INCOMPLETE);
    assert_int_equal(resp_parse(big, n, r, &used, NULL, 0), RESP_COMPLETE);
    assert_int_equal(used, n);
    assert_int_equal(r->nodes[0].len, RESP_MAX_BULK);
    free(big);
}

static void test_resp_refuses_simple_lines_longer_than_the_bulk_limit(void **state) {
    resp_reply_t *r = *state;
    size_t n = 1 + RESP_MAX_BULK; /* "+" and the longest text */
    char *line = malloc(n + 2);
    assert_non_null(line);
    line[0] = '+';
    memset(line + 1, 'y', n + 1);
    size_t used;
    char err[256];
    /* RESP_MAX_BULK bytes without CR may still end well; one more cannot. */
    assert_int_equal(resp_parse(line, n, r, &used, err, sizeof err), RESP_INCOMPLETE);
    assert_int_equal(resp_parse(line, n + 1, r, &used, err, sizeof err), KGS_EINVAL);
    assert_non_null(strstr(err, "offset 1: line longer than 16777216 bytes"));
    memcpy(line + n, "\r\n", 2);
    assert_int_equal(resp_parse(line, n + 2, r, &used, err, sizeof err), RESP_COMPLETE);
    assert_int_equal(used, n + 2);
    assert_int_equal(r->nodes[0].len, RESP_MAX_BULK);
    free(line);
}

/* n nested one-element arrays around `leaf`, into buf. */
static size_t nest(char *buf, size_t cap, unsigned n, const char *leaf) {
    size_t o = 0;
    for (unsigned i = 0; i < n; i++)
        o += (size_t)snprintf(buf + o, cap - o, "*1\r\n");
    o += (size_t)snprintf(buf + o, cap - o, "%s", leaf);
    return o;
}

static void test_resp_limits_nesting_depth(void **state) {
    resp_reply_t *r = *state;
    char buf[128];
    size_t n = nest(buf, sizeof buf, RESP_MAX_DEPTH, ":1\r\n");
    parse_ok(r, buf, n);
    assert_int_equal(r->count, RESP_MAX_DEPTH + 1);
    for (uint32_t i = 0; i < RESP_MAX_DEPTH + 1; i++)
        assert_int_equal(r->nodes[i].next, RESP_MAX_DEPTH + 1);
    n = nest(buf, sizeof buf, RESP_MAX_DEPTH, "*-1\r\n"); /* a null array is no array */
    parse_ok(r, buf, n);
    n = nest(buf, sizeof buf, RESP_MAX_DEPTH + 1, ":1\r\n");
    parse_bad(r, buf, n, "offset 32: arrays nested deeper than 8");
    n = nest(buf, sizeof buf, RESP_MAX_DEPTH, "*0\r\n");
    parse_bad(r, buf, n, "arrays nested deeper than 8");
    /* Refused on the header, before the rest arrives. */
    n = nest(buf, sizeof buf, RESP_MAX_DEPTH + 1, "");
    parse_bad(r, buf, n, "nested deeper");
    /* Depth is per path: many siblings at the limit are fine. */
    n = nest(buf, sizeof buf, RESP_MAX_DEPTH - 1, "*3\r\n:1\r\n:2\r\n:3\r\n");
    parse_ok(r, buf, n);
}

static void test_resp_limits_the_node_count(void **state) {
    resp_reply_t *r = *state;
    size_t cap = 16 + 8 * RESP_MAX_NODES;
    char *buf = malloc(cap);
    assert_non_null(buf);

    /* A root with 4095 integers: exactly RESP_MAX_NODES nodes. */
    size_t o = (size_t)snprintf(buf, cap, "*%d\r\n", RESP_MAX_NODES - 1);
    for (int i = 0; i < RESP_MAX_NODES - 1; i++)
        o += (size_t)snprintf(buf + o, cap - o, ":%d\r\n", i % 10);
    parse_ok(r, buf, o);
    assert_int_equal(r->count, RESP_MAX_NODES);
    assert_int_equal(resp_child(r, &r->nodes[0], RESP_MAX_NODES - 2)->integer,
                     (RESP_MAX_NODES - 2) % 10);

    /* *2 [ *4093 ints, :1 ] is 4096 nodes; *2 [ *4094 ints, :1 ] would be 4097 and is refused
     * at the inner header, counting the sibling still to come. */
    o = (size_t)snprintf(buf, cap, "*2\r\n*%d\r\n", RESP_MAX_NODES - 3);
    for (int i = 0; i < RESP_MAX_NODES - 3; i++)
        o += (size_t)snprintf(buf + o, cap - o, ":7\r\n");
    o += (size_t)snprintf(buf + o, cap - o, ":1\r\n");
    parse_ok(r, buf, o);
    assert_int_equal(r->count, RESP_MAX_NODES);
    PARSE_BAD(r, "*2\r\n*4094\r\n", "offset 4: array of 4094 elements takes the reply over 4096");
    free(buf);
}

/* ---- encoder --------------------------------------------------------------------------------- */

static void test_resp_encodes_llen_jobs_exactly(void **state) {
    (void)state;
    static const char want[] = "*2\r\n$4\r\nLLEN\r\n$4\r\njobs\r\n";
    const char *argv[] = {"LLEN", "jobs"};
    const size_t lens[] = {4, 4};
    assert_int_equal(resp_encode(NULL, 0, 2, argv, lens), sizeof want - 1);
    char buf[64];
    memset(buf, 'Z', sizeof buf);
    assert_int_equal(resp_encode(buf, sizeof want - 2, 2, argv, lens), sizeof want - 1);
    for (size_t i = 0; i < sizeof buf; i++)
        assert_int_equal(buf[i], 'Z'); /* one byte short: nothing written */
    assert_int_equal(resp_encode(buf, sizeof want - 1, 2, argv, NULL), sizeof want - 1);
    assert_memory_equal(buf, want, sizeof want - 1);
    assert_int_equal(buf[sizeof want - 1], 'Z'); /* no NUL, nothing past the end */

    memset(buf, 'Z', sizeof buf);
    assert_int_equal(resp_encode(buf, 4, 0, NULL, NULL), 4);
    assert_memory_equal(buf, "*0\r\n", 4);
    assert_int_equal(buf[4], 'Z');
}

static void test_resp_encode_round_trips_binary_args(void **state) {
    resp_reply_t *r = *state;
    static char big[1000];
    memset(big, 'q', sizeof big);
    const char *argv[] = {"XINFO", "GROUPS", "a\r\n*1\r\n\0b", "", big};
    const size_t lens[] = {5, 6, 9, 0, sizeof big};
    char buf[2048];
    size_t n = resp_encode(buf, sizeof buf, 5, argv, lens);
    assert_true(n <= sizeof buf);
    assert_memory_equal(buf,
                        "*5\r\n$5\r\nXINFO\r\n$6\r\nGROUPS\r\n$9\r\na\r\n*1\r\n\0b\r\n$0\r\n\r\n"
                        "$1000\r\n",
                        55);
    parse_ok(r, buf, n);
    assert_int_equal(r->nodes[0].type, RESP_ARRAY);
    assert_int_equal(r->nodes[0].count, 5);
    for (uint32_t i = 0; i < 5; i++) {
        const resp_node_t *a = resp_child(r, &r->nodes[0], i);
        assert_int_equal(a->type, RESP_BULK);
        assert_int_equal(a->len, lens[i]);
        assert_memory_equal(a->str, argv[i], lens[i]);
    }
}

/* ---- XINFO GROUPS ---------------------------------------------------------------------------- */

typedef struct {
    int rc;
    int64_t pending, lag;
    bool lag_known;
    char err[512];
} xinfo_t;

static xinfo_t xinfo(resp_reply_t *r, const char *reply, size_t n, const char *group) {
    xinfo_t x = {.pending = -77, .lag = -77, .lag_known = true};
    parse_ok(r, reply, n);
    x.rc = resp_xinfo_group(r, group, &x.pending, &x.lag, &x.lag_known, x.err, sizeof x.err);
    return x;
}

#define XINFO(r, lit, group) xinfo((r), (lit), sizeof(lit) - 1, (group))

/* An error leaves the out parameters alone and says `needle`. */
static void xinfo_bad(xinfo_t x, int rc, const char *needle) {
    assert_int_equal(x.rc, rc);
    assert_int_equal(x.pending, -77);
    assert_int_equal(x.lag, -77);
    assert_true(x.lag_known);
    if (!strstr(x.err, needle))
        fail_msg("message \"%s\" lacks \"%s\"", x.err, needle);
}

static void test_resp_xinfo_reads_pending_and_lag_from_redis_7(void **state) {
    resp_reply_t *r = *state;
    xinfo_t x = XINFO(r, XINFO_LAG, "workers");
    assert_int_equal(x.rc, 0);
    assert_string_equal(x.err, "");
    assert_int_equal(x.pending, 1);
    assert_int_equal(x.lag, 2);
    assert_true(x.lag_known);
    x = XINFO(r, XINFO_LAG, "fresh");
    assert_int_equal(x.rc, 0);
    assert_int_equal(x.pending, 0);
    assert_int_equal(x.lag, 0);
    assert_true(x.lag_known);
}

static void test_resp_xinfo_reports_nil_or_absent_lag_as_unknown(void **state) {
    resp_reply_t *r = *state;
    xinfo_t x = XINFO(r, XINFO_NIL, "g");
    assert_int_equal(x.rc, 0);
    assert_int_equal(x.pending, 0);
    assert_int_equal(x.lag, 0);
    assert_false(x.lag_known);
    x = XINFO(r, XINFO_V6, "workers");
    assert_int_equal(x.rc, 0);
    assert_int_equal(x.pending, 5);
    assert_int_equal(x.lag, 0);
    assert_false(x.lag_known);
}

static void test_resp_xinfo_counts_existing_groups_when_one_is_missing(void **state) {
    resp_reply_t *r = *state;
    xinfo_bad(XINFO(r, XINFO_LAG, "work"), KGS_ENOTFOUND,
              "XINFO GROUPS: no group \"work\": the stream has 2 other consumer groups (names not "
              "shown)");
    xinfo_bad(XINFO(r, XINFO_LAG, ""), KGS_ENOTFOUND, "no group \"\":");
    xinfo_bad(XINFO(r, "*0\r\n", "workers"), KGS_ENOTFOUND,
              "XINFO GROUPS: no group \"workers\": the stream has no consumer groups");
    xinfo_bad(XINFO(r,
                    "*5\r\n*2\r\n$4\r\nname\r\n$1\r\na\r\n*2\r\n$4\r\nname\r\n$1\r\nb\r\n"
                    "*2\r\n$4\r\nname\r\n$2\r\nc\n\r\n*2\r\n$4\r\nname\r\n$1\r\nd\r\n"
                    "*2\r\n$4\r\nname\r\n$1\r\ne\r\n",
                    "x"),
              KGS_ENOTFOUND, "the stream has 5 other consumer groups (names not shown)");
}

static void test_resp_xinfo_passes_on_redis_errors(void **state) {
    resp_reply_t *r = *state;
    xinfo_bad(XINFO(r, "-ERR no such key\r\n", "g"), KGS_EINVAL,
              "XINFO GROUPS: Redis answered ERR no such key");
    xinfo_bad(
        XINFO(r, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", "g"),
        KGS_EINVAL, "Redis answered WRONGTYPE (the key holds another type");
}

static void test_resp_xinfo_rejects_replies_of_the_wrong_shape(void **state) {
    resp_reply_t *r = *state;
    xinfo_bad(XINFO(r, ":3\r\n", "g"), KGS_EINVAL,
              "XINFO GROUPS: expected an array of groups, got an integer");
    xinfo_bad(XINFO(r, "*-1\r\n", "g"), KGS_EINVAL, "expected an array of groups, got nil");
    xinfo_bad(XINFO(r, "*1\r\n$1\r\ng\r\n", "g"), KGS_EINVAL,
              "group 0: expected an array of field/value pairs, got a bulk string");
    xinfo_bad(XINFO(r, "*1\r\n*1\r\n$4\r\nname\r\n", "g"), KGS_EINVAL,
              "got an array of odd length");
    xinfo_bad(XINFO(r, "*1\r\n*2\r\n:1\r\n$1\r\ng\r\n", "g"), KGS_EINVAL,
              "group 0: field 0: expected a string field name, got an integer");
    xinfo_bad(XINFO(r, "*1\r\n*2\r\n$7\r\npending\r\n:1\r\n", "g"), KGS_EINVAL,
              "group 0: expected a string \"name\" field, got none");
    xinfo_bad(XINFO(r, "*1\r\n*2\r\n$4\r\nname\r\n:1\r\n", "g"), KGS_EINVAL,
              "expected a string \"name\" field, got an integer");
    /* A later malformed group is refused even when the wanted one came first. */
    xinfo_bad(XINFO(r, "*2\r\n*2\r\n$4\r\nname\r\n$1\r\ng\r\n:5\r\n", "g"), KGS_EINVAL,
              "group 1: expected an array");
    xinfo_bad(XINFO(r, "*1\r\n*2\r\n$4\r\nname\r\n$1\r\ng\r\n", "g"), KGS_EINVAL,
              "group \"g\": expected a non-negative integer \"pending\", got none");
    xinfo_bad(XINFO(r, "*1\r\n*4\r\n$4\r\nname\r\n$1\r\ng\r\n$7\r\npending\r\n$1\r\n3\r\n", "g"),
              KGS_EINVAL, "\"pending\", got a bulk string");
    xinfo_bad(XINFO(r, "*1\r\n*4\r\n$4\r\nname\r\n$1\r\ng\r\n$7\r\npending\r\n:-1\r\n", "g"),
              KGS_EINVAL, "\"pending\", got a negative integer");
    xinfo_bad(XINFO(r,
                    "*1\r\n*6\r\n$4\r\nname\r\n$1\r\ng\r\n$7\r\npending\r\n:1\r\n"
                    "$3\r\nlag\r\n$1\r\n3\r\n",
                    "g"),
              KGS_EINVAL,
              "group \"g\": expected nil or a non-negative integer \"lag\", got a bulk");
    xinfo_bad(XINFO(r,
                    "*1\r\n*6\r\n$4\r\nname\r\n$1\r\ng\r\n$7\r\npending\r\n:1\r\n"
                    "$3\r\nlag\r\n:-4\r\n",
                    "g"),
              KGS_EINVAL, "\"lag\", got a negative integer");
    /* Simple strings are accepted where bulk strings are expected. */
    xinfo_t x = XINFO(r, "*1\r\n*4\r\n+name\r\n+g\r\n+pending\r\n:9\r\n", "g");
    assert_int_equal(x.rc, 0);
    assert_int_equal(x.pending, 9);
    assert_false(x.lag_known);
}

static void test_resp_xinfo_refuses_an_empty_reply(void **state) {
    resp_reply_t *r = *state;
    r->count = 0;
    int64_t p = -1, l = -1;
    bool k = true;
    char err[128];
    assert_int_equal(resp_xinfo_group(r, "g", &p, &l, &k, err, sizeof err), KGS_EINVAL);
    assert_string_equal(err, "XINFO GROUPS: empty reply");
    assert_int_equal(resp_xinfo_group(r, "g", &p, &l, &k, NULL, 0), KGS_EINVAL);
}

/* A reply's bytes are the server's: no message repeats them, whatever the
 * host at the address sends (an HTTP server, an SMTP banner, a Redis with
 * a token in an error). */
static void test_resp_messages_never_quote_the_reply(void **state) {
    resp_reply_t *r = *state;
    static const char *const bad[] = {
        "HTTP/1.1 400 Bad Request tok_SECRET\r\n",
        ":tok_SECRET\r\n",
        ":12tok_SECRET\r\n",
        "$tok_SECRET\r\n",
        "*tok_SECRET\r\n",
        "-tok_SECRET\ninside\r\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char err[512] = "";
        size_t used = 0;
        int rc = resp_parse(bad[i], strlen(bad[i]), r, &used, err, sizeof err);
        if (rc != KGS_EINVAL || strstr(err, "tok") || strstr(err, "SECRET") || strstr(err, "HTTP"))
            fail_msg("%s: %d \"%s\"", bad[i], rc, err);
    }
    /* errors are named by their code, in our words */
    static const char *const errors[] = {"-ERR tok_SECRET\r\n", "-tok_SECRET\r\n",
                                         "-WRONGPASS tok_SECRET\r\n", "-ERRtok_SECRET\r\n"};
    for (size_t i = 0; i < sizeof errors / sizeof *errors; i++) {
        char err[512] = "";
        size_t used = 0;
        assert_int_equal(resp_parse(errors[i], strlen(errors[i]), r, &used, err, sizeof err),
                         RESP_COMPLETE);
        const char *d = resp_error_describe(&r->nodes[0]);
        if (strstr(d, "tok") || strstr(d, "SECRET"))
            fail_msg("%s: \"%s\"", errors[i], d);
        int64_t pending, lag;
        bool known;
        assert_int_equal(resp_xinfo_group(r, "g", &pending, &lag, &known, err, sizeof err),
                         KGS_EINVAL);
        if (strstr(err, "tok") || strstr(err, "SECRET"))
            fail_msg("%s: \"%s\"", errors[i], err);
    }
    /* a group list: the names are the server's data */
    const char *groups = "*1\r\n*2\r\n$4\r\nname\r\n$10\r\ntok_SECRET\r\n";
    char err[512] = "";
    size_t used = 0;
    assert_int_equal(resp_parse(groups, strlen(groups), r, &used, err, sizeof err), RESP_COMPLETE);
    int64_t pending, lag;
    bool known;
    assert_int_equal(resp_xinfo_group(r, "g", &pending, &lag, &known, err, sizeof err),
                     KGS_ENOTFOUND);
    assert_null(strstr(err, "SECRET"));
}

static void test_resp_error_describe_names_known_codes(void **state) {
    resp_reply_t *r = *state;
    static const struct {
        const char *reply, *says;
    } cases[] = {
        {"-WRONGPASS invalid username-password pair\r\n", "WRONGPASS (the user name or password"},
        {"-NOAUTH Authentication required.\r\n", "NOAUTH (the server needs a password"},
        {"-ERR unknown command 'XINFO', with args beginning with: \r\n", "ERR unknown command"},
        {"-ERR Client sent AUTH, but no password is set\r\n", "ERR on AUTH (the server has no"},
        {"-ERR DB index is out of range\r\n", "ERR DB index is out of range (redisDB)"},
        {"-ERR something else\r\n", "ERR (the server's text is not shown)"},
        {"-ERRX\r\n", "an error reply (the server's text is not shown)"},
        {"-\r\n", "an error reply (the server's text is not shown)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char err[256] = "";
        size_t used = 0;
        assert_int_equal(
            resp_parse(cases[i].reply, strlen(cases[i].reply), r, &used, err, sizeof err),
            RESP_COMPLETE);
        const char *d = resp_error_describe(&r->nodes[0]);
        if (strncmp(d, cases[i].says, strlen(cases[i].says)) != 0)
            fail_msg("%s: \"%s\", want \"%s...\"", cases[i].reply, d, cases[i].says);
    }
    assert_string_equal(resp_type_describe(RESP_BULK), "a bulk string");
}

/* A reply of 4,000 integers dripped a byte at a time is read once: every
 * call starts at the first value not yet whole, so the scan's position
 * only moves forward, and a whole reply answers the same again. */
static void test_resp_scan_never_rereads_a_finished_value(void **state) {
    (void)state;
    size_t cap = 4 * 4000 + 16, n = 0;
    char *s = test_malloc(cap);
    n += (size_t)snprintf(s, cap, "*4000\r\n");
    for (int i = 0; i < 4000; i++)
        n += (size_t)snprintf(s + n, cap - n, ":%d\r\n", i % 10);
    resp_scan_t st;
    resp_scan_init(&st);
    size_t used, last = 0;
    char err[128];
    for (size_t k = 1; k < n; k++) {
        assert_int_equal(resp_scan(&st, s, k, &used, err, sizeof err), RESP_INCOMPLETE);
        assert_true(st._pos >= last && st._pos <= k);
        last = st._pos;
    }
    assert_int_equal(resp_scan(&st, s, n, &used, err, sizeof err), RESP_COMPLETE);
    assert_int_equal(used, n);
    assert_int_equal(resp_scan(&st, s, n, &used, err, sizeof err), RESP_COMPLETE);
    assert_int_equal(used, n);
    test_free(s);
}

/* A simple string dripped a byte at a time: each call searches only the
 * bytes that are new, and the line's end is found where it is. */
static void test_resp_scan_searches_a_dripped_line_once(void **state) {
    (void)state;
    size_t n = 100000;
    char *s = test_malloc(n + 3);
    s[0] = '+';
    memset(s + 1, 'v', n);
    memcpy(s + 1 + n, "\r\n", 2);
    resp_scan_t st;
    resp_scan_init(&st);
    size_t used;
    char err[128];
    for (size_t k = 1; k < n + 3; k += 1000) {
        assert_int_equal(resp_scan(&st, s, k, &used, err, sizeof err), RESP_INCOMPLETE);
        assert_int_equal(st._line_from, k);
    }
    assert_int_equal(resp_scan(&st, s, n + 3, &used, err, sizeof err), RESP_COMPLETE);
    assert_int_equal(used, n + 3);
    test_free(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resp_scan_never_rereads_a_finished_value),
        cmocka_unit_test(test_resp_scan_searches_a_dripped_line_once),
        cmocka_unit_test_setup_teardown(test_resp_parses_each_scalar_type, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resp_node_strings_point_into_the_buffer, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_resp_walks_nested_arrays_with_next_and_child, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_resp_reports_every_strict_prefix_as_incomplete, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_resp_leaves_the_next_reply_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resp_rejects_bad_integers_and_lengths, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_resp_rejects_bad_framing, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_resp_waits_for_a_huge_declared_bulk_without_reading_past_the_buffer, setup,
            teardown),
        cmocka_unit_test_setup_teardown(test_resp_refuses_simple_lines_longer_than_the_bulk_limit,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_resp_limits_nesting_depth, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resp_limits_the_node_count, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resp_encodes_llen_jobs_exactly, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resp_encode_round_trips_binary_args, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resp_xinfo_reads_pending_and_lag_from_redis_7, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_resp_xinfo_reports_nil_or_absent_lag_as_unknown, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_resp_xinfo_counts_existing_groups_when_one_is_missing,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_resp_xinfo_passes_on_redis_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resp_messages_never_quote_the_reply, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resp_error_describe_names_known_codes, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_resp_xinfo_rejects_replies_of_the_wrong_shape, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_resp_xinfo_refuses_an_empty_reply, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
