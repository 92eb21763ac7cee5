/* test_stability.c - the simulator's reversals and max_step figures on
 * hand-computed sequences of desired replica counts (stability.h defines
 * them). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "stability.h"

static stability_t feed(const int *d, size_t n) {
    stability_t s;
    stability_init(&s);
    for (size_t i = 0; i < n; i++)
        stability_add(&s, d[i]);
    return s;
}

static void test_stability_counts_the_issues_sequence(void **state) {
    (void)state;
    /* the queueing model on the long-context trace (issue 29): moves -37, +2,
     * +1, +2, 0, +4, +4, +1, +94, -67, +85, -76; of magnitude > 1: -37 +2 +2
     * +4 +4 +94 -67 +85 -76, whose sign changes 4 times; the largest ratio
     * 42 / 5 = 8.4 over 12 pairs */
    const int d[] = {42, 5, 7, 8, 10, 10, 14, 18, 19, 113, 46, 131, 55};
    stability_t s = feed(d, sizeof d / sizeof *d);
    assert_int_equal(s.syncs, 13);
    assert_int_equal(s.reversals, 4);
    assert_int_equal(s.steps, 12);
    assert_true(fabs(s.max_step - 8.4) < 1e-12);
}

static void test_stability_ignores_moves_of_one_replica(void **state) {
    (void)state;
    /* rounding jitter is no reversal; the ratio is 11 / 10 */
    const int d[] = {10, 11, 10, 11, 10};
    stability_t s = feed(d, sizeof d / sizeof *d);
    assert_int_equal(s.reversals, 0);
    assert_int_equal(s.steps, 4);
    assert_true(fabs(s.max_step - 1.1) < 1e-12);
}

static void test_stability_sees_a_fall_after_a_flat_stretch_and_a_small_rise(void **state) {
    (void)state;
    /* up 10, flat, up 1, down 15: one reversal; the largest ratio 16 / 1 */
    const int d[] = {5, 15, 15, 16, 1};
    stability_t s = feed(d, sizeof d / sizeof *d);
    assert_int_equal(s.reversals, 1);
    assert_int_equal(s.steps, 4);
    assert_true(fabs(s.max_step - 16) < 1e-12);
}

static void test_stability_counts_moves_to_zero_but_no_ratio(void **state) {
    (void)state;
    /* +4, -4, +4: two reversals; no pair has both counts > 0 */
    const int d[] = {0, 4, 0, 4};
    stability_t s = feed(d, sizeof d / sizeof *d);
    assert_int_equal(s.reversals, 2);
    assert_int_equal(s.steps, 0);
    assert_true(s.max_step == 0);
}

static void test_stability_compares_nothing_across_a_break(void **state) {
    (void)state;
    /* run 1 rises 2 -> 10, the workload goes to zero, run 2 falls 10 -> 2:
     * no reversal (the runs are apart), two ratios of 5 */
    stability_t s;
    stability_init(&s);
    stability_add(&s, 2);
    stability_add(&s, 10);
    stability_break(&s);
    stability_add(&s, 10);
    stability_add(&s, 2);
    assert_int_equal(s.syncs, 4);
    assert_int_equal(s.reversals, 0);
    assert_int_equal(s.steps, 2);
    assert_true(fabs(s.max_step - 5) < 1e-12);
    /* and the move 10 -> 2 of run 2 is the base for the next one */
    stability_add(&s, 9);
    assert_int_equal(s.reversals, 1);
}

static void test_stability_takes_a_negative_count_as_zero(void **state) {
    (void)state;
    const int d[] = {3, -5, 3};
    stability_t s = feed(d, sizeof d / sizeof *d);
    assert_int_equal(s.reversals, 1); /* -3, +3 */
    assert_int_equal(s.steps, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stability_counts_the_issues_sequence),
        cmocka_unit_test(test_stability_ignores_moves_of_one_replica),
        cmocka_unit_test(test_stability_sees_a_fall_after_a_flat_stretch_and_a_small_rise),
        cmocka_unit_test(test_stability_counts_moves_to_zero_but_no_ratio),
        cmocka_unit_test(test_stability_compares_nothing_across_a_break),
        cmocka_unit_test(test_stability_takes_a_negative_count_as_zero),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
