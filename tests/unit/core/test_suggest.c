/* test_suggest.c - the one "did you mean" of the program: the distance, and
 * the rules for names (keys, flags) and for values (enums, formats). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/suggest.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define NAME(s, names) suggest_name(s, strlen(s), names, N(names))
#define VALUE(s, vals) suggest_value(s, strlen(s), vals, N(vals), NULL, 0)

static void test_suggest_distance_is_levenshtein_ignoring_ascii_case(void **state) {
    (void)state;
    assert_int_equal(suggest_distance("kitten", 6, "sitting", 7), 3);
    assert_int_equal(suggest_distance("", 0, "abc", 3), 3);
    assert_int_equal(suggest_distance("abc", 3, "", 0), 3);
    assert_int_equal(suggest_distance("TargetValue", 11, "targetvalue", 11), 0);
    assert_int_equal(suggest_distance("port", 4, "prot", 4), 2);
}

static void test_suggest_distance_refuses_strings_over_the_limit(void **state) {
    (void)state;
    char longer[SUGGEST_MAX_LEN + 1];
    memset(longer, 'a', sizeof longer);
    assert_true(suggest_distance(longer, SUGGEST_MAX_LEN, longer, SUGGEST_MAX_LEN) == 0);
    assert_true(suggest_distance(longer, sizeof longer, "a", 1) == (size_t)-1);
    assert_true(suggest_distance("a", 1, longer, sizeof longer) == (size_t)-1);
}

static void test_suggest_name_allows_two_edits_for_short_and_three_for_long_input(void **state) {
    (void)state;
    static const char *const names[] = {"port", "metrics-port", "targetValue", "version"};
    assert_string_equal(NAME("prot", names), "port");
    assert_string_equal(NAME("metric-port", names), "metrics-port");
    assert_string_equal(NAME("verison", names), "version");
    assert_string_equal(NAME("targtVlue", names), "targetValue"); /* 2 edits, 9 bytes */
    assert_null(NAME("trgtVlue", names));                         /* 3 edits in 8 bytes: too far */
    assert_null(NAME("completely-different", names));
    assert_null(NAME("xyzw", names));
}

static void test_suggest_name_matches_case_and_long_prefixes(void **state) {
    (void)state;
    static const char *const names[] = {"gpuIndex", "pollIntervalSeconds", "migUUID"};
    assert_string_equal(NAME("GPUINDEX", names), "gpuIndex");
    assert_string_equal(NAME("pollInterval", names), "pollIntervalSeconds");
    assert_string_equal(NAME("migUuid", names), "migUUID");
    assert_null(NAME("poll", names)); /* a prefix needs 5 bytes */
}

static void test_suggest_name_prefers_the_closest_then_the_first(void **state) {
    (void)state;
    static const char *const names[] = {"abcd", "abce", "abcf", NULL};
    assert_string_equal(NAME("abcf", names), "abcf");
    assert_string_equal(NAME("abcx", names), "abcd");
    assert_null(suggest_name("", 0, names, N(names)));
    assert_null(suggest_name(NULL, 3, names, N(names)));
}

static void test_suggest_value_is_stricter_on_short_values(void **state) {
    (void)state;
    static const char *const vals[] = {"sum", "max", "min", "avg", "p95", "p99"};
    assert_string_equal(VALUE("MAX", vals), "max");
    assert_string_equal(VALUE("mx", vals), "max");
    assert_string_equal(VALUE("maximum", vals), "max"); /* a value prefix of the input */
    assert_null(VALUE("xyz", vals));
    static const char *const formats[] = {"table", "json", "jsonl", "csv"};
    assert_string_equal(VALUE("jsn", formats), "json");
    assert_string_equal(VALUE("tabel", formats), "table");
    assert_null(VALUE("yaml", formats));
}

static void test_suggest_value_takes_synonyms_first(void **state) {
    (void)state;
    static const char *const vals[] = {"error", "ignore"};
    static const suggest_synonym_t syn[] = {
        {"skip", "ignore"}, {"strict", "error"}, {"nothing", "absent"}};
    assert_string_equal(suggest_value("SKIP", 4, vals, 2, syn, 3), "ignore");
    assert_string_equal(suggest_value("strict", 6, vals, 2, syn, 3), "error");
    assert_string_equal(suggest_value("ign", 3, vals, 2, syn, 3), "ignore"); /* prefix */
    /* a synonym whose meaning is not among the values suggests nothing */
    assert_null(suggest_value("nothing", 7, vals, 2, syn, 3));
}

/* The cut-off version agrees with the full table wherever the answer is at
 * most max, and says max + 1 otherwise: every pair of a set of words that
 * differ in length, case, order and letters, for every max up to 6. */
static void test_suggest_distance_within_agrees_with_the_full_table(void **state) {
    (void)state;
    static const char *const w[] = {
        "",
        "a",
        "ab",
        "ba",
        "abc",
        "ABC",
        "metricType",
        "metrictype",
        "metricTpye",
        "metricTypes",
        "mtricType",
        "targetValue",
        "activationTargetValue",
        "pollInterval",
        "kitten",
        "sitting",
        "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "yxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxy"};
    size_t nw = sizeof w / sizeof *w;
    for (size_t i = 0; i < nw; i++)
        for (size_t j = 0; j < nw; j++) {
            size_t full = suggest_distance(w[i], strlen(w[i]), w[j], strlen(w[j]));
            for (size_t max = 0; max <= 6; max++) {
                size_t got = suggest_distance_within(w[i], strlen(w[i]), w[j], strlen(w[j]), max);
                size_t want = full <= max ? full : max + 1;
                if (got != want)
                    fail_msg("\"%s\" / \"%s\" max %zu: %zu, want %zu", w[i], w[j], max, got, want);
            }
        }
    assert_int_equal(suggest_distance_within("kitten", 6, "sitting", 7, 64), 3);
    assert_int_equal(suggest_distance_within(w[16], 65, "a", 1, 2), (size_t)-1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_suggest_distance_is_levenshtein_ignoring_ascii_case),
        cmocka_unit_test(test_suggest_distance_refuses_strings_over_the_limit),
        cmocka_unit_test(test_suggest_distance_within_agrees_with_the_full_table),
        cmocka_unit_test(test_suggest_name_allows_two_edits_for_short_and_three_for_long_input),
        cmocka_unit_test(test_suggest_name_matches_case_and_long_prefixes),
        cmocka_unit_test(test_suggest_name_prefers_the_closest_then_the_first),
        cmocka_unit_test(test_suggest_value_is_stricter_on_short_values),
        cmocka_unit_test(test_suggest_value_takes_synonyms_first),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
