/* test_hist_window.c - windowed quantiles from cumulative histograms of
 * several pods, against hand-computed bucket deltas: merging, a counter
 * reset, a pod appearing mid-window, an empty window, broken expositions. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/err.h"
#include "sources/hist_window.h"

#define S 1000000000ull
#define NEAR(x, want) assert_true(fabs((x) - (want)) < 1e-9)

static const char *LE[] = {"0.1", "0.5", "1", "2.5"};

/* Collects one pod's scrape: buckets b[0..3] for LE, then +Inf = count. */
static hist_counts_t scrape(hist_layout_t *layout, const double b[4], double count) {
    hist_collect_t c;
    memset(&c, 0, sizeof c);
    char err[160];
    for (int i = 0; i < 4; i++)
        assert_int_equal(hist_collect_bucket(&c, LE[i], b[i], err, sizeof err), 0);
    assert_int_equal(hist_collect_bucket(&c, "+Inf", count, err, sizeof err), 0);
    hist_collect_sum(&c, count * 0.3);
    hist_counts_t h;
    assert_int_equal(hist_collect_finish(&c, layout, &h, err, sizeof err), 0);
    return h;
}

static void feed(hist_window_t *w, hist_pod_t *pod, uint64_t at, const double b[4], double count,
                 bool since_start) {
    hist_layout_t layout;
    hist_counts_t now = scrape(&layout, b, count), d;
    if (w->_layout.n == 0)
        hist_window_reset(w, &layout);
    assert_true(hist_layout_equal(&layout, hist_window_layout(w)));
    if (hist_pod_delta(pod, &now, since_start, layout.n, &d))
        hist_window_add(w, at, &d, 0);
}

static double quantile(const hist_window_t *w, uint64_t now, uint64_t window, double q) {
    hist_counts_t sum;
    hist_window_sum(w, now, window, &sum);
    double v = -1;
    assert_true(hist_quantile(hist_window_layout(w), &sum, q, &v));
    return v;
}

static void test_two_pods_merge_their_deltas_and_history_is_left_out(void **state) {
    (void)state;
    static hist_window_t w;
    memset(&w, 0, sizeof w);
    hist_pod_t a = {0}, b = {0};
    /* Pod a has served for hours: 50 requests before the window. */
    feed(&w, &a, 0, (double[]){10, 20, 30, 40}, 50, false);
    feed(&w, &a, 1 * S, (double[]){12, 25, 40, 52}, 65, false); /* +2 +3 +10 +12 | +15 */
    feed(&w, &b, 1 * S, (double[]){0, 0, 0, 0}, 0, false);
    feed(&w, &a, 2 * S, (double[]){12, 25, 40, 52}, 65, false);
    feed(&w, &b, 2 * S, (double[]){0, 4, 8, 10}, 12, false);
    hist_counts_t sum;
    /* Merged window: buckets 2, 9, 18, 22 and 27 in all. */
    NEAR(hist_window_sum(&w, 2 * S, 10 * S, &sum), 27);
    NEAR(sum.bucket[0], 2);
    NEAR(sum.bucket[1], 9);
    NEAR(sum.bucket[2], 18);
    NEAR(sum.bucket[3], 22);
    /* p50: rank 13.5 in (0.5, 1] holding 9..18: 0.5 + 0.5 * 4.5 / 9. */
    NEAR(quantile(&w, 2 * S, 10 * S, 0.5), 0.75);
    /* p10: rank 2.7 in (0.1, 0.5] holding 2..9: 0.1 + 0.4 * 0.7 / 7. */
    NEAR(quantile(&w, 2 * S, 10 * S, 0.1), 0.14);
    /* p90: rank 24.3 beyond the 22 at 2.5 s: the largest finite bound. */
    NEAR(quantile(&w, 2 * S, 10 * S, 0.9), 2.5);
    /* The lifetime buckets (12, 29, 48, 62 of 77) would say p10 = 0.1 *
     * 7.7 / 12: the window must not. */
    assert_true(fabs(quantile(&w, 2 * S, 10 * S, 0.1) - 0.1 * 7.7 / 12) > 0.05);
}

static void test_a_restart_counts_what_the_pod_reports_after_it(void **state) {
    (void)state;
    static hist_window_t w;
    memset(&w, 0, sizeof w);
    hist_pod_t a = {0};
    feed(&w, &a, 0, (double[]){10, 20, 30, 40}, 50, false);
    feed(&w, &a, 1 * S, (double[]){10, 20, 30, 41}, 51, false); /* +1 in (1, 2.5] */
    /* The engine restarted: 3 requests since, not -48. */
    feed(&w, &a, 2 * S, (double[]){1, 1, 2, 3}, 3, false);
    hist_counts_t sum;
    NEAR(hist_window_sum(&w, 2 * S, 10 * S, &sum), 4);
    NEAR(sum.bucket[0], 1);
    NEAR(sum.bucket[3], 4);
    /* A restart seen by one bucket only (count equal) is still a restart. */
    feed(&w, &a, 3 * S, (double[]){0, 1, 2, 3}, 3, false);
    NEAR(hist_window_sum(&w, 3 * S, 500000000ull, &sum), 3);
    NEAR(sum.bucket[0], 0);
}

static void test_a_pod_appearing_mid_window(void **state) {
    (void)state;
    static hist_window_t w;
    memset(&w, 0, sizeof w);
    hist_pod_t a = {0}, b = {0}, c = {0};
    feed(&w, &a, 0, (double[]){0, 0, 0, 0}, 0, false);
    feed(&w, &a, 5 * S, (double[]){0, 0, 4, 4}, 4, false);
    /* b appears with 6 requests we did not see happen: a baseline. */
    feed(&w, &b, 5 * S, (double[]){6, 6, 6, 6}, 6, false);
    hist_counts_t sum;
    NEAR(hist_window_sum(&w, 5 * S, 30 * S, &sum), 4);
    /* c's process started inside the window (the caller knows it from
     * process_start_time_seconds): all it counted is in. */
    feed(&w, &c, 6 * S, (double[]){2, 2, 2, 2}, 2, true);
    NEAR(hist_window_sum(&w, 6 * S, 30 * S, &sum), 6);
    NEAR(sum.bucket[0], 2);
    /* b's next scrape counts from its baseline. */
    feed(&w, &b, 7 * S, (double[]){6, 7, 7, 7}, 7, false);
    NEAR(hist_window_sum(&w, 7 * S, 30 * S, &sum), 7);
}

static void test_an_empty_window_is_unknown_not_zero(void **state) {
    (void)state;
    static hist_window_t w;
    memset(&w, 0, sizeof w);
    hist_pod_t a = {0};
    feed(&w, &a, 0, (double[]){0, 0, 0, 0}, 0, false);
    feed(&w, &a, 1 * S, (double[]){1, 1, 1, 1}, 1, false);
    hist_counts_t sum;
    /* A minute later nothing came: the 1 s-old request is out of a 30 s window. */
    feed(&w, &a, 61 * S, (double[]){1, 1, 1, 1}, 1, false);
    NEAR(hist_window_sum(&w, 61 * S, 30 * S, &sum), 0);
    double v = 42;
    assert_false(hist_quantile(hist_window_layout(&w), &sum, 0.9, &v));
    NEAR(v, 42);
    /* A fresh window has nothing either. */
    static hist_window_t fresh;
    memset(&fresh, 0, sizeof fresh);
    NEAR(hist_window_sum(&fresh, 0, 30 * S, &sum), 0);
    assert_false(hist_quantile(hist_window_layout(&fresh), &sum, 0.5, &v));
}

static void test_slots_slide_and_the_oldest_are_dropped(void **state) {
    (void)state;
    static hist_window_t w;
    memset(&w, 0, sizeof w);
    hist_layout_t layout = {1, {1.0}};
    hist_window_reset(&w, &layout);
    hist_counts_t one = {{1}, 1, 0.5};
    /* 10 scrapes a second for 100 s, spacing 1 s: one slot a second. */
    for (uint64_t t = 1; t <= 1000; t++)
        hist_window_add(&w, t * (S / 10), &one, S);
    hist_counts_t sum;
    NEAR(hist_window_sum(&w, 100 * S, 10 * S, &sum), 100);
    /* 64 slots of 1 s kept: a 200 s window sees the newest 64 s. */
    NEAR(hist_window_sum(&w, 100 * S, 200 * S, &sum), 640);
}

static void test_quantile_edges(void **state) {
    (void)state;
    hist_layout_t layout = {3, {0.01, 0.1, 1}};
    double v;
    /* Everything in the first bucket: interpolated from 0. */
    hist_counts_t first = {{10, 10, 10}, 10, 0};
    assert_true(hist_quantile(&layout, &first, 0.5, &v));
    NEAR(v, 0.005);
    /* An empty bucket between: the rank lands on a bound. */
    hist_counts_t gap = {{5, 5, 10}, 10, 0};
    assert_true(hist_quantile(&layout, &gap, 0.5, &v));
    NEAR(v, 0.01);
    /* q outside (0, 1): no answer rather than a made-up one. */
    assert_false(hist_quantile(&layout, &gap, 1.0, &v));
    assert_false(hist_quantile(&layout, &gap, 0.0, &v));
}

static void test_collect_sorts_and_rejects_broken_expositions(void **state) {
    (void)state;
    char err[200];
    hist_collect_t c;
    hist_layout_t layout;
    hist_counts_t h;
    /* Out of order, with exponent syntax: sorted. */
    memset(&c, 0, sizeof c);
    assert_int_equal(hist_collect_bucket(&c, "+Inf", 9, err, sizeof err), 0);
    assert_int_equal(hist_collect_bucket(&c, "1", 7, err, sizeof err), 0);
    assert_int_equal(hist_collect_bucket(&c, "1e-3", 2, err, sizeof err), 0);
    assert_int_equal(hist_collect_finish(&c, &layout, &h, err, sizeof err), 0);
    assert_int_equal(layout.n, 2);
    NEAR(layout.le[0], 0.001);
    NEAR(h.bucket[1], 7);
    NEAR(h.count, 9);

    memset(&c, 0, sizeof c);
    assert_int_equal(hist_collect_bucket(&c, "fast", 1, err, sizeof err), KGS_EINVAL);
    assert_non_null(strstr(err, "le label is not a number (4 bytes)"));
    assert_null(strstr(err, "fast"));
    assert_int_equal(hist_collect_bucket(&c, "0x10", 1, err, sizeof err), KGS_EINVAL);
    assert_int_equal(hist_collect_bucket(&c, "0.5", -1, err, sizeof err), KGS_EINVAL);
    assert_int_equal(hist_collect_bucket(&c, "0.5", 1, err, sizeof err), 0);
    assert_int_equal(hist_collect_bucket(&c, "0.50", 1, err, sizeof err), KGS_EINVAL);
    assert_non_null(strstr(err, "given twice"));
    assert_int_equal(hist_collect_finish(&c, &layout, &h, err, sizeof err), KGS_EINVAL);
    assert_non_null(strstr(err, "+Inf"));

    memset(&c, 0, sizeof c);
    assert_int_equal(hist_collect_bucket(&c, "0.1", 5, err, sizeof err), 0);
    assert_int_equal(hist_collect_bucket(&c, "0.2", 3, err, sizeof err), 0);
    assert_int_equal(hist_collect_bucket(&c, "+Inf", 5, err, sizeof err), 0);
    assert_int_equal(hist_collect_finish(&c, &layout, &h, err, sizeof err), KGS_EINVAL);
    assert_non_null(strstr(err, "le=0.2 counts 3, fewer than the 5 below it"));

    memset(&c, 0, sizeof c);
    char le[16];
    for (int i = 0; i < HIST_MAX_BUCKETS; i++) {
        snprintf(le, sizeof le, "%d", i + 1);
        assert_int_equal(hist_collect_bucket(&c, le, i, err, sizeof err), 0);
    }
    assert_int_equal(hist_collect_bucket(&c, "1000", 1, err, sizeof err), KGS_EINVAL);
    assert_non_null(strstr(err, "more than 40 finite buckets"));
}

/* Found by fuzz_hist_window: 0.001 + (0.01 - 0.001) x 1 is
 * 0.010000000000000002, past the bucket's bound. */
static void test_quantile_never_rounds_past_its_bucket(void **state) {
    (void)state;
    hist_collect_t c;
    memset(&c, 0, sizeof c);
    char err[160];
    assert_int_equal(hist_collect_bucket(&c, "0.001", 0, err, sizeof err), 0);
    assert_int_equal(hist_collect_bucket(&c, "0.01", 1, err, sizeof err), 0);
    assert_int_equal(hist_collect_bucket(&c, "+Inf", 2, err, sizeof err), 0);
    hist_layout_t layout;
    hist_counts_t h;
    assert_int_equal(hist_collect_finish(&c, &layout, &h, err, sizeof err), 0);
    double v = -1;
    assert_true(hist_quantile(&layout, &h, 0.5, &v));
    assert_true(v <= 0.01);
    NEAR(v, 0.01);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_pods_merge_their_deltas_and_history_is_left_out),
        cmocka_unit_test(test_a_restart_counts_what_the_pod_reports_after_it),
        cmocka_unit_test(test_a_pod_appearing_mid_window),
        cmocka_unit_test(test_an_empty_window_is_unknown_not_zero),
        cmocka_unit_test(test_slots_slide_and_the_oldest_are_dropped),
        cmocka_unit_test(test_quantile_edges),
        cmocka_unit_test(test_quantile_never_rounds_past_its_bucket),
        cmocka_unit_test(test_collect_sorts_and_rejects_broken_expositions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
