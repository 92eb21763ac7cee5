/* test_duration.c - Go-style duration parsing and formatting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/duration.h"
#include "core/err.h"

#define SENTINEL UINT64_C(0xdeadbeef)

static uint64_t parse_ok(const char *s) {
    uint64_t ns = SENTINEL;
    char err[256] = "";
    int rc = duration_parse_ns(s, &ns, err, sizeof err);
    if (rc != 0)
        fail_msg("parse \"%s\": rc %d: %s", s, rc, err);
    return ns;
}

static void expect_error(const char *s, int code, const char *needle) {
    uint64_t ns = SENTINEL;
    char err[256] = "";
    assert_int_equal(duration_parse_ns(s, &ns, err, sizeof err), code);
    assert_true(ns == 0);
    if (!strstr(err, needle))
        fail_msg("error for \"%s\" lacks \"%s\": %s", s, needle, err);
}

static void test_duration_parses_bare_zero(void **state) {
    (void)state;
    assert_true(parse_ok("0") == 0);
    assert_true(parse_ok("0s") == 0);
    assert_true(parse_ok("+0") == 0);
}

static void test_duration_parses_each_unit(void **state) {
    (void)state;
    assert_true(parse_ok("7ns") == 7);
    assert_true(parse_ok("250us") == 250000);
    assert_true(parse_ok("250\xc2\xb5s") == 250000); /* micro sign */
    assert_true(parse_ok("250\xce\xbcs") == 250000); /* greek mu */
    assert_true(parse_ok("500ms") == 500000000);
    assert_true(parse_ok("5s") == UINT64_C(5000000000));
    assert_true(parse_ok("2m") == UINT64_C(120000000000));
    assert_true(parse_ok("1h") == UINT64_C(3600000000000));
}

static void test_duration_parses_fractions_exactly(void **state) {
    (void)state;
    assert_true(parse_ok("1.5s") == UINT64_C(1500000000));
    assert_true(parse_ok(".5s") == UINT64_C(500000000));
    assert_true(parse_ok("5.s") == UINT64_C(5000000000));
    assert_true(parse_ok("0.000000001s") == 1);
    assert_true(parse_ok("1.5h") == UINT64_C(5400000000000));
    /* Digits below a nanosecond are dropped, as Go does. */
    assert_true(parse_ok("1.9ns") == 1);
    assert_true(parse_ok("0.1234567890123456789012s") == UINT64_C(123456789));
}

static void test_duration_parses_compound_terms(void **state) {
    (void)state;
    assert_true(parse_ok("1h30m") == UINT64_C(5400000000000));
    assert_true(parse_ok("1m30.5s") == UINT64_C(90500000000));
    assert_true(parse_ok("1s500ms") == UINT64_C(1500000000));
    assert_true(parse_ok("+5s") == UINT64_C(5000000000));
}

static void test_duration_rejects_empty_input_with_example(void **state) {
    (void)state;
    expect_error("", KGS_EINVAL, "e.g. \"500ms\"");
    expect_error(NULL, KGS_EINVAL, "empty");
}

static void test_duration_rejects_number_without_unit_quoting_input(void **state) {
    (void)state;
    expect_error("5", KGS_EINVAL, "duration \"5\": missing unit");
    expect_error("1.5", KGS_EINVAL, "missing unit");
    expect_error("1h30", KGS_EINVAL, "duration \"1h30\": missing unit");
}

static void test_duration_rejects_unknown_unit_quoting_it(void **state) {
    (void)state;
    expect_error("5x", KGS_EINVAL, "unknown unit at \"x\"");
    expect_error("5 s", KGS_EINVAL, "unknown unit");
    expect_error("5sec", KGS_EINVAL, "duration \"5sec\"");
    expect_error("5S", KGS_EINVAL, "unknown unit");
}

static void test_duration_rejects_negative_values(void **state) {
    (void)state;
    expect_error("-5s", KGS_EINVAL, "duration \"-5s\": negative");
    expect_error("-0", KGS_EINVAL, "negative");
}

static void test_duration_rejects_garbage_and_missing_numbers(void **state) {
    (void)state;
    expect_error("s", KGS_EINVAL, "expected a number");
    expect_error(".s", KGS_EINVAL, "expected a number");
    expect_error("+", KGS_EINVAL, "no number");
    expect_error("5s ", KGS_EINVAL, "expected a number");
    expect_error("1..5s", KGS_EINVAL, "duration \"1..5s\"");
    expect_error("00", KGS_EINVAL, "missing unit");
}

static void test_duration_reports_overflow_as_erange(void **state) {
    (void)state;
    /* 18446744073709551615 ns is the largest value. */
    assert_true(parse_ok("18446744073709551615ns") == UINT64_MAX);
    assert_true(parse_ok("18446744073.709551615s") == UINT64_MAX);
    expect_error("18446744073709551616ns", KGS_ERANGE, "too large");
    expect_error("5124096h", KGS_ERANGE, "duration \"5124096h\": too large");
    expect_error("5124095h5124095h", KGS_ERANGE, "too large");
    expect_error("99999999999999999999999h", KGS_ERANGE, "too large");
}

static void test_duration_parse_accepts_null_err_buffer(void **state) {
    (void)state;
    uint64_t ns = SENTINEL;
    assert_int_equal(duration_parse_ns("bad", &ns, NULL, 0), KGS_EINVAL);
    assert_int_equal(duration_parse_ns("1s", &ns, NULL, 0), 0);
    assert_true(ns == UINT64_C(1000000000));
    assert_int_equal(duration_parse_ns("1s", NULL, NULL, 0), KGS_EINVAL);
}

static void expect_format(uint64_t ns, const char *want) {
    char buf[64];
    memset(buf, 'x', sizeof buf);
    assert_ptr_equal(duration_format(ns, buf, sizeof buf), buf);
    assert_string_equal(buf, want);
}

static void test_duration_format_is_compact(void **state) {
    (void)state;
    expect_format(0, "0s");
    expect_format(1, "1ns");
    expect_format(999, "999ns");
    expect_format(250000, "250us");
    expect_format(1500, "1.5us");
    expect_format(500000000, "500ms");
    expect_format(1500001, "1.500001ms");
    expect_format(UINT64_C(1500000000), "1.5s");
    expect_format(UINT64_C(5000000000), "5s");
    expect_format(UINT64_C(120000000000), "2m");
    expect_format(UINT64_C(3600000000000), "1h");
    expect_format(UINT64_C(5400000000000), "1h30m");
    expect_format(UINT64_C(90500000000), "1m30.5s");
    expect_format(UINT64_C(3600000000001), "1h0.000000001s");
    expect_format(UINT64_MAX, "5124095h34m33.709551615s");
}

static void test_duration_format_round_trips_through_parse(void **state) {
    (void)state;
    const uint64_t values[] = {0,
                               1,
                               999,
                               1000,
                               1001,
                               999999,
                               1000000,
                               123456789,
                               UINT64_C(1000000000),
                               UINT64_C(59999999999),
                               UINT64_C(3600000000001),
                               UINT64_MAX - 1,
                               UINT64_MAX};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        char buf[64];
        duration_format(values[i], buf, sizeof buf);
        assert_true(parse_ok(buf) == values[i]);
    }
}

static void test_duration_format_truncates_to_small_buffers(void **state) {
    (void)state;
    char buf[4];
    duration_format(UINT64_C(5400000000000), buf, sizeof buf);
    assert_string_equal(buf, "1h3");
    assert_null(duration_format(1, NULL, 0));
    char one[1] = {'x'};
    duration_format(1, one, 0);
    assert_int_equal(one[0], 'x');
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_duration_parses_bare_zero),
        cmocka_unit_test(test_duration_parses_each_unit),
        cmocka_unit_test(test_duration_parses_fractions_exactly),
        cmocka_unit_test(test_duration_parses_compound_terms),
        cmocka_unit_test(test_duration_rejects_empty_input_with_example),
        cmocka_unit_test(test_duration_rejects_number_without_unit_quoting_input),
        cmocka_unit_test(test_duration_rejects_unknown_unit_quoting_it),
        cmocka_unit_test(test_duration_rejects_negative_values),
        cmocka_unit_test(test_duration_rejects_garbage_and_missing_numbers),
        cmocka_unit_test(test_duration_reports_overflow_as_erange),
        cmocka_unit_test(test_duration_parse_accepts_null_err_buffer),
        cmocka_unit_test(test_duration_format_is_compact),
        cmocka_unit_test(test_duration_format_round_trips_through_parse),
        cmocka_unit_test(test_duration_format_truncates_to_small_buffers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
