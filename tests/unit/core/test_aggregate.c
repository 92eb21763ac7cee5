/* test_aggregate.c - sum, max, min, avg and nearest-rank percentiles. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/aggregate.h"

static void test_aggregate_computes_sum_max_min_avg(void **state) {
    (void)state;
    const double v[] = {30, 90, 10, 70};
    assert_true(aggregate(AGG_SUM, v, 4) == 200);
    assert_true(aggregate(AGG_MAX, v, 4) == 90);
    assert_true(aggregate(AGG_MIN, v, 4) == 10);
    assert_true(aggregate(AGG_AVG, v, 4) == 50);
}

static void test_aggregate_of_one_value_is_that_value_for_every_kind(void **state) {
    (void)state;
    const double v[] = {42.5};
    for (int a = AGG_SUM; a <= AGG_P99; a++)
        assert_true(aggregate((aggregation_t)a, v, 1) == 42.5);
}

static void test_aggregate_percentiles_are_nearest_rank_like_the_go_system(void **state) {
    (void)state;
    double v[200];
    /* descending input, so sorting matters */
    for (int i = 0; i < 200; i++)
        v[i] = 200 - i; /* values 1..200 */
    /* n = 8 (a real node): both percentiles are the max */
    double eight[] = {5, 1, 8, 3, 7, 2, 6, 4};
    assert_true(aggregate(AGG_P95, eight, 8) == 8);
    assert_true(aggregate(AGG_P99, eight, 8) == 8);
    /* n = 19: p95 still the max; n = 20: rank ceil(19) = 19th = second largest */
    assert_true(aggregate(AGG_P95, v + 181, 19) == 19);
    assert_true(aggregate(AGG_P95, v + 180, 20) == 19);
    /* n = 100: p95 = 95th value, p99 = 99th; n = 99: p99 = max */
    assert_true(aggregate(AGG_P95, v + 100, 100) == 95);
    assert_true(aggregate(AGG_P99, v + 100, 100) == 99);
    assert_true(aggregate(AGG_P99, v + 101, 99) == 99);
    /* n = 200 */
    assert_true(aggregate(AGG_P95, v, 200) == 190);
    assert_true(aggregate(AGG_P99, v, 200) == 198);
}

static void test_aggregate_percentiles_beyond_the_sort_buffer_use_selection(void **state) {
    (void)state;
    static double v[1000];
    for (int i = 0; i < 1000; i++)
        v[i] = (i * 7919) % 1000; /* a permutation of 0..999 */
    assert_true(aggregate(AGG_P95, v, 1000) == 949);
    assert_true(aggregate(AGG_P99, v, 1000) == 989);
    static double same[300];
    for (int i = 0; i < 300; i++)
        same[i] = 3;
    assert_true(aggregate(AGG_P95, same, 300) == 3);
}

static void test_aggregate_does_not_modify_its_input(void **state) {
    (void)state;
    double v[] = {3, 1, 2};
    (void)aggregate(AGG_P95, v, 3);
    assert_true(v[0] == 3 && v[1] == 1 && v[2] == 2);
}

static void test_aggregate_of_nothing_is_nan(void **state) {
    (void)state;
    const double v[] = {1};
    assert_true(isnan(aggregate(AGG_SUM, v, 0)));
    assert_true(isnan(aggregate(AGG_MAX, NULL, 3)));
    assert_true(isnan(aggregate((aggregation_t)99, v, 1)));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aggregate_computes_sum_max_min_avg),
        cmocka_unit_test(test_aggregate_of_one_value_is_that_value_for_every_kind),
        cmocka_unit_test(test_aggregate_percentiles_are_nearest_rank_like_the_go_system),
        cmocka_unit_test(test_aggregate_percentiles_beyond_the_sort_buffer_use_selection),
        cmocka_unit_test(test_aggregate_does_not_modify_its_input),
        cmocka_unit_test(test_aggregate_of_nothing_is_nan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
