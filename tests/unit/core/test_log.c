/* test_log.c - line formats (text, JSON), level and format parsing, and the
 * repeated-error rate limiter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/err.h"
#include "core/log.h"

/* 2026-01-02T03:04:05.006Z */
#define WALL_MS INT64_C(1767323045006)

static const char *line(log_format_t f, log_level_t lvl, const char *msg) {
    static char buf[4096];
    memset(buf, 'X', sizeof buf);
    log_format_line(buf, sizeof buf, f, WALL_MS, lvl, msg);
    return buf;
}

static void test_log_text_line_keeps_the_existing_shape(void **state) {
    (void)state;
    assert_string_equal(line(LOG_FORMAT_TEXT, LOG_INFO, "listening on :6000"),
                        "2026-01-02T03:04:05.006Z info  listening on :6000\n");
    assert_string_equal(line(LOG_FORMAT_TEXT, LOG_ERROR, "x"),
                        "2026-01-02T03:04:05.006Z error x\n");
}

static void test_log_text_line_cannot_be_split_by_a_newline_in_the_message(void **state) {
    (void)state;
    assert_string_equal(line(LOG_FORMAT_TEXT, LOG_WARN, "a\nfake line\x01"),
                        "2026-01-02T03:04:05.006Z warn  a\\nfake line\\x01\n");
}

static void test_log_json_line_has_ts_level_msg(void **state) {
    (void)state;
    assert_string_equal(
        line(LOG_FORMAT_JSON, LOG_INFO, "ready"),
        "{\"ts\":\"2026-01-02T03:04:05.006Z\",\"level\":\"info\",\"msg\":\"ready\"}\n");
    assert_string_equal(line(LOG_FORMAT_JSON, LOG_DEBUG, ""),
                        "{\"ts\":\"2026-01-02T03:04:05.006Z\",\"level\":\"debug\",\"msg\":\"\"}\n");
}

static void test_log_json_escapes_quotes_backslashes_and_controls(void **state) {
    (void)state;
    const char *l = line(LOG_FORMAT_JSON, LOG_WARN, "say \"hi\" C:\\x\n\t\r\x01\x1f\x7f end");
    assert_non_null(
        strstr(l, "\"msg\":\"say \\\"hi\\\" C:\\\\x\\n\\t\\r\\u0001\\u001f\\u007f end\"}\n"));
}

static void test_log_json_keeps_valid_utf8_and_replaces_invalid_bytes(void **state) {
    (void)state;
    /* 250 µs, a 3-byte char, a 4-byte emoji: kept as they are. */
    const char *l = line(LOG_FORMAT_JSON, LOG_INFO, "250\xc2\xb5s \xe2\x82\xac \xf0\x9f\x9a\x80");
    assert_non_null(strstr(l, "\"msg\":\"250\xc2\xb5s \xe2\x82\xac \xf0\x9f\x9a\x80\"}"));
    /* A lone continuation byte, a truncated sequence, an overlong "/",
     * a UTF-16 surrogate, and a code point beyond U+10FFFF. */
    l = line(LOG_FORMAT_JSON, LOG_INFO,
             "a\x80"
             "b\xe2\x82"
             "c\xc0\xaf"
             "d\xed\xa0\x80"
             "e\xf4\x90\x80\x80");
    assert_non_null(strstr(l,
                           "\"msg\":\"a\\ufffdb\\ufffd\\ufffdc\\ufffd\\ufffdd\\ufffd\\ufffd\\ufffd"
                           "e\\ufffd\\ufffd\\ufffd\\ufffd\"}"));
}

static void test_log_json_line_cut_short_stays_valid_json(void **state) {
    (void)state;
    char buf[80];
    char msg[400];
    memset(msg, '"', sizeof msg - 1);
    msg[sizeof msg - 1] = '\0';
    size_t n = log_format_line(buf, sizeof buf, LOG_FORMAT_JSON, WALL_MS, LOG_INFO, msg);
    assert_int_equal(n, strlen(buf));
    assert_true(n < sizeof buf);
    /* Ends with the closing of the object, and no escape was cut in half:
     * the message is a whole number of \" pairs. */
    assert_string_equal(buf + n - 3, "\"}\n");
    const char *m = strstr(buf, "\"msg\":\"") + 7;
    size_t mlen = (size_t)(buf + n - 3 - m);
    assert_int_equal(mlen % 2, 0);
    for (size_t i = 0; i < mlen; i += 2)
        assert_memory_equal(m + i, "\\\"", 2);
}

static void test_log_format_line_refuses_tiny_buffers(void **state) {
    (void)state;
    char buf[8] = "zzzzzzz";
    assert_int_equal(log_format_line(buf, 1, LOG_FORMAT_TEXT, WALL_MS, LOG_INFO, "x"), 0);
    assert_int_equal(log_format_line(buf, sizeof buf, LOG_FORMAT_JSON, WALL_MS, LOG_INFO, "x"), 0);
    assert_string_equal(buf, "");
}

static void test_log_level_and_format_parse(void **state) {
    (void)state;
    log_level_t lvl = LOG_OFF;
    char err[128] = "";
    assert_int_equal(log_level_parse("warn", &lvl, err, sizeof err), 0);
    assert_int_equal(lvl, LOG_WARN);
    assert_int_equal(log_level_parse("verbose", &lvl, err, sizeof err), KGS_EINVAL);
    assert_string_equal(err,
                        "invalid log level \"verbose\": must be debug, info, warn, error or off");
    assert_string_equal(log_level_name(LOG_ERROR), "error");
    assert_string_equal(log_level_name((log_level_t)9), "?");

    log_format_t f = LOG_FORMAT_TEXT;
    assert_int_equal(log_format_parse("json", &f, err, sizeof err), 0);
    assert_int_equal(f, LOG_FORMAT_JSON);
    assert_int_equal(log_format_parse("text", &f, err, sizeof err), 0);
    assert_int_equal(f, LOG_FORMAT_TEXT);
    assert_int_equal(log_format_parse("JSON", &f, err, sizeof err), KGS_EINVAL);
    assert_string_equal(err, "invalid log format \"JSON\": must be text or json");
    assert_string_equal(log_format_name(LOG_FORMAT_JSON), "json");
}

/* Writes through a real logger into a memory stream. (Not inlined: GCC 12
 * then takes the returned buffer for a pointer to the local `data`.) */
__attribute__((noinline)) static char *capture(log_format_t f, log_level_t min,
                                               void (*fn)(const logger_t *, void *), void *ud) {
    char *data = NULL;
    size_t size = 0;
    FILE *m = open_memstream(&data, &size);
    assert_non_null(m);
    logger_t lg = {.level = min, .out = m, .format = f};
    fn(&lg, ud);
    fclose(m);
    return data;
}

static void write_two_levels(const logger_t *lg, void *ud) {
    (void)ud;
    LOG_DEBUG(lg, "hidden %d", 1);
    LOG_WARN(lg, "gpu %s lost", "GPU-1");
}

static void test_log_write_filters_by_level_and_uses_the_format(void **state) {
    (void)state;
    char *out = capture(LOG_FORMAT_JSON, LOG_INFO, write_two_levels, NULL);
    assert_null(strstr(out, "hidden"));
    assert_non_null(strstr(out, "\"level\":\"warn\",\"msg\":\"gpu GPU-1 lost\"}\n"));
    assert_int_equal(out[0], '{');
    free(out);
    out = capture(LOG_FORMAT_TEXT, LOG_DEBUG, write_two_levels, NULL);
    assert_non_null(strstr(out, " debug hidden 1\n"));
    assert_non_null(strstr(out, " warn  gpu GPU-1 lost\n"));
    free(out);
}

/* A long line (a source's error naming its redis address, key and a
 * 3000-byte reason) arrives whole, its end included; one past the bound is
 * summarised, saying how much was left out. */
static void write_long(const logger_t *lg, void *ud) {
    size_t n = *(size_t *)ud;
    char *reason = malloc(n + 1);
    assert_non_null(reason);
    for (size_t i = 0; i < n; i++)
        reason[i] = (char)('a' + i % 26);
    reason[n] = '\0';
    LOG_WARN(lg, "source redis 10.0.0.7:6379 redisListName requests: %s END", reason);
    free(reason);
}

static void test_log_long_lines_are_never_cut(void **state) {
    (void)state;
    size_t n = 3000;
    char *out = capture(LOG_FORMAT_TEXT, LOG_INFO, write_long, &n);
    assert_non_null(strstr(out, " END\n"));
    assert_true(strlen(out) > 3000);
    free(out);
    out = capture(LOG_FORMAT_JSON, LOG_INFO, write_long, &n);
    assert_non_null(strstr(out, " END\"}\n"));
    free(out);
    n = 40000;
    out = capture(LOG_FORMAT_TEXT, LOG_INFO, write_long, &n);
    assert_null(strstr(out, " END\n"));
    assert_non_null(strstr(out, "... (23671 more bytes)\n"));
    free(out);
}

static void test_log_zero_initialised_logger_is_text(void **state) {
    (void)state;
    logger_t lg = {.level = LOG_INFO, .out = stderr};
    assert_int_equal(lg.format, LOG_FORMAT_TEXT);
}

#define SEC UINT64_C(1000000000)

static void test_log_ratelimit_passes_first_then_one_per_interval(void **state) {
    (void)state;
    log_ratelimit_t rl;
    log_ratelimit_init(&rl, 10 * SEC);
    uint64_t n = 77;
    const char *k = "ns/app/0:UNAVAILABLE";
    assert_true(log_ratelimit_allow(&rl, k, 100 * SEC, &n));
    assert_int_equal(n, 0);
    for (int i = 1; i <= 5; i++)
        assert_false(log_ratelimit_allow(&rl, k, 100 * SEC + (uint64_t)i * SEC, &n));
    assert_false(log_ratelimit_allow(&rl, k, 110 * SEC - 1, &n));
    n = 77;
    assert_true(log_ratelimit_allow(&rl, k, 110 * SEC, &n));
    assert_int_equal(n, 6);
    assert_false(log_ratelimit_allow(&rl, k, 111 * SEC, NULL));
    /* After a quiet spell the next line passes at once, reporting the one refused. */
    assert_true(log_ratelimit_allow(&rl, k, 500 * SEC, &n));
    assert_int_equal(n, 1);
    assert_true(log_ratelimit_allow(&rl, k, 600 * SEC, &n));
    assert_int_equal(n, 0);
}

static void test_log_ratelimit_keys_are_independent(void **state) {
    (void)state;
    log_ratelimit_t rl;
    log_ratelimit_init(&rl, 10 * SEC);
    assert_true(log_ratelimit_allow(&rl, "a:UNAVAILABLE", SEC, NULL));
    assert_true(log_ratelimit_allow(&rl, "a:INVALID_ARGUMENT", SEC, NULL));
    assert_true(log_ratelimit_allow(&rl, "b:UNAVAILABLE", SEC, NULL));
    assert_false(log_ratelimit_allow(&rl, "a:UNAVAILABLE", 2 * SEC, NULL));
}

static void test_log_ratelimit_compares_long_keys_in_full(void **state) {
    (void)state;
    log_ratelimit_t rl;
    log_ratelimit_init(&rl, 10 * SEC);
    char a[300], b[300];
    memset(a, 'n', sizeof a - 1);
    a[sizeof a - 1] = '\0';
    memcpy(b, a, sizeof b);
    b[sizeof b - 2] = 'X'; /* differs only after the stored prefix */
    assert_true(log_ratelimit_allow(&rl, a, SEC, NULL));
    assert_true(log_ratelimit_allow(&rl, b, SEC, NULL));
    assert_false(log_ratelimit_allow(&rl, a, SEC, NULL));
    assert_false(log_ratelimit_allow(&rl, b, SEC, NULL));
}

static void test_log_ratelimit_forgets_the_least_recent_key_when_full(void **state) {
    (void)state;
    log_ratelimit_t rl;
    log_ratelimit_init(&rl, 10 * SEC);
    char k[32];
    for (int i = 0; i < LOG_RATELIMIT_SLOTS; i++) {
        snprintf(k, sizeof k, "key%d", i);
        assert_true(log_ratelimit_allow(&rl, k, SEC + (uint64_t)i, NULL));
    }
    /* key0 is the least recently seen; a new key takes its slot. */
    assert_false(log_ratelimit_allow(&rl, "key1", 2 * SEC, NULL));
    assert_true(log_ratelimit_allow(&rl, "new", 2 * SEC, NULL));
    assert_true(log_ratelimit_allow(&rl, "key0", 2 * SEC, NULL)); /* forgotten: passes again */
    assert_false(log_ratelimit_allow(&rl, "new", 2 * SEC, NULL));
    assert_false(log_ratelimit_allow(&rl, "key1", 2 * SEC, NULL));
}

typedef struct {
    log_ratelimit_t rl;
} rl_ctx_t;

static void write_repeated(const logger_t *lg, void *ud) {
    rl_ctx_t *c = ud;
    for (uint64_t t = 0; t < 25; t++)
        LOG_RATELIMITED(lg, &c->rl, "ns/so/0:UNAVAILABLE", t * SEC, LOG_WARN, "GetMetrics %s: %s",
                        "ns/so", "snapshot stale");
    LOG_RATELIMITED(lg, &c->rl, "ns/so/0:UNAVAILABLE", 30 * SEC, LOG_DEBUG, "not counted");
    LOG_RATELIMITED(lg, &c->rl, "ns/so/0:UNAVAILABLE", 31 * SEC, LOG_WARN, "again");
}

static void test_log_ratelimited_lines_carry_the_suppressed_count(void **state) {
    (void)state;
    rl_ctx_t c;
    log_ratelimit_init(&c.rl, 10 * SEC);
    char *out = capture(LOG_FORMAT_TEXT, LOG_INFO, write_repeated, &c);
    /* t=0 passes; 1..9 suppressed; t=10 passes with 9; 11..19; t=20 with 9;
     * 21..24 suppressed; the debug line is dropped before counting; t=31
     * passes with 4. */
    const char *p = out;
    int lines = 0;
    for (const char *q = out; *q; q++)
        lines += *q == '\n';
    assert_int_equal(lines, 4);
    p = strstr(p, "GetMetrics ns/so: snapshot stale\n");
    assert_non_null(p);
    p = strstr(p, "GetMetrics ns/so: snapshot stale (9 similar messages suppressed)\n");
    assert_non_null(p);
    p = strstr(p + 1, "GetMetrics ns/so: snapshot stale (9 similar messages suppressed)\n");
    assert_non_null(p);
    assert_non_null(strstr(p, "again (4 similar messages suppressed)\n"));
    assert_null(strstr(out, "not counted"));
    free(out);
}

static void write_one_suppressed(const logger_t *lg, void *ud) {
    rl_ctx_t *c = ud;
    LOG_RATELIMITED(lg, &c->rl, "k", 0, LOG_ERROR, "boom");
    LOG_RATELIMITED(lg, &c->rl, "k", 1, LOG_ERROR, "boom");
    LOG_RATELIMITED(lg, &c->rl, "k", 10 * SEC, LOG_ERROR, "boom");
}

static void test_log_ratelimited_singular_message(void **state) {
    (void)state;
    rl_ctx_t c;
    log_ratelimit_init(&c.rl, 10 * SEC);
    char *out = capture(LOG_FORMAT_JSON, LOG_INFO, write_one_suppressed, &c);
    assert_non_null(strstr(out, "\"msg\":\"boom (1 similar message suppressed)\"}\n"));
    free(out);
}

/* One line per distinct problem: messages differing in their numbers share
 * a shape, messages naming different things do not. */
static void test_log_message_shape(void **state) {
    (void)state;
    assert_true(log_message_shape("vllm a: last successful poll 3.2s ago (stale)") ==
                log_message_shape("vllm a: last successful poll 14s ago (stale)"));
    assert_true(log_message_shape("GPU 0 lost") == log_message_shape("GPU 12 lost"));
    assert_true(log_message_shape("unknown metadata key \"targtValue\"") !=
                log_message_shape("unknown metadata key \"metrcType\""));
    assert_true(log_message_shape("a") != log_message_shape("b"));
    assert_true(log_message_shape("") == log_message_shape(NULL));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_log_text_line_keeps_the_existing_shape),
        cmocka_unit_test(test_log_text_line_cannot_be_split_by_a_newline_in_the_message),
        cmocka_unit_test(test_log_json_line_has_ts_level_msg),
        cmocka_unit_test(test_log_json_escapes_quotes_backslashes_and_controls),
        cmocka_unit_test(test_log_json_keeps_valid_utf8_and_replaces_invalid_bytes),
        cmocka_unit_test(test_log_json_line_cut_short_stays_valid_json),
        cmocka_unit_test(test_log_format_line_refuses_tiny_buffers),
        cmocka_unit_test(test_log_level_and_format_parse),
        cmocka_unit_test(test_log_write_filters_by_level_and_uses_the_format),
        cmocka_unit_test(test_log_long_lines_are_never_cut),
        cmocka_unit_test(test_log_zero_initialised_logger_is_text),
        cmocka_unit_test(test_log_ratelimit_passes_first_then_one_per_interval),
        cmocka_unit_test(test_log_ratelimit_keys_are_independent),
        cmocka_unit_test(test_log_ratelimit_compares_long_keys_in_full),
        cmocka_unit_test(test_log_ratelimit_forgets_the_least_recent_key_when_full),
        cmocka_unit_test(test_log_ratelimited_lines_carry_the_suppressed_count),
        cmocka_unit_test(test_log_ratelimited_singular_message),
        cmocka_unit_test(test_log_message_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
