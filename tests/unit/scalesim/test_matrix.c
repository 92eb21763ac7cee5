/* test_matrix.c - the operating-point matrix's arithmetic on hand-computed
 * cases: a policy against the online ideal's frontier (between points, below
 * every point, beyond the cheapest), the median, the summary (judged cases,
 * the worst, losses, sums) and the configuration's checks. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/err.h"
#include "matrix.h"

/* A frontier of (GPU-h, share) points, all Pareto-optimal. */
static void frontier(report_frontier_t *f, const double (*pts)[2], size_t n) {
    memset(f, 0, sizeof *f);
    for (size_t i = 0; i < n; i++) {
        f->points[i].gpu_hours = pts[i][0];
        f->points[i].over_slo = pts[i][1];
        snprintf(f->points[i].knob, sizeof f->points[i].knob, "util=0.%zu", i + 3);
    }
    f->count = n;
    report_pareto(f);
}

static void test_matrix_compares_with_the_frontier_between_its_points(void **state) {
    (void)state;
    report_frontier_t f;
    static const double pts[][2] = {{10, 0.05}, {8, 0.10}, {5, 0.30}};
    frontier(&f, pts, 3);
    double g = -1;
    bool below = true;
    /* at 20 %: between (8, 10 %) and (5, 30 %), halfway: 6.5 GPU-h; 13 is 2x */
    assert_float_equal(matrix_frontier_compare(&f, 13, 0.20, &g, &below), 2.0, 1e-12);
    assert_float_equal(g, 6.5, 1e-12);
    assert_false(below);
    /* on a point: that point */
    assert_float_equal(matrix_frontier_compare(&f, 4, 0.10, &g, &below), 0.5, 1e-12);
    assert_float_equal(g, 8, 1e-12);
    /* beyond the cheapest point's share: the cheapest (a higher share buys
     * nothing cheaper) */
    assert_float_equal(matrix_frontier_compare(&f, 6, 0.50, &g, &below), 1.2, 1e-12);
    assert_float_equal(g, 5, 1e-12);
    assert_false(below);
}

static void test_matrix_flags_a_share_below_every_frontier_point(void **state) {
    (void)state;
    report_frontier_t f;
    static const double pts[][2] = {{10, 0.05}, {8, 0.10}, {5, 0.30}};
    frontier(&f, pts, 3);
    double g = -1;
    bool below = false;
    /* 1 %: no ideal setting is that good; against the lowest-share point */
    assert_float_equal(matrix_frontier_compare(&f, 15, 0.01, &g, &below), 1.5, 1e-12);
    assert_float_equal(g, 10, 1e-12);
    assert_true(below);
    /* no frontier at all: no ratio, no frontier figure */
    report_frontier_t empty;
    memset(&empty, 0, sizeof empty);
    assert_true(matrix_frontier_compare(&empty, 3, 0.1, &g, &below) == 0);
    assert_true(g == 0);
    assert_false(below);
}

static void test_matrix_median_of_odd_even_and_none(void **state) {
    (void)state;
    double odd[] = {3, 1, 2}, even[] = {4, 1, 3, 2};
    assert_float_equal(matrix_median(odd, 3), 2, 1e-12);
    assert_float_equal(matrix_median(even, 4), 2.5, 1e-12);
    assert_true(matrix_median(NULL, 0) == 0);
}

/* A case with ours (GPU-h, share, ratio, cancelled, reversals) and
 * composite. */
static void make_case(matrix_case_t *c, double speed, bool overloaded, double ours_g, double ours_s,
                      double ratio, unsigned cancelled, unsigned reversals, double comp_g,
                      double comp_s) {
    memset(c, 0, sizeof *c);
    c->trace = MATRIX_CONV;
    c->speed = speed;
    c->cold_s = 135;
    c->kv_tokens = 400000;
    c->overloaded = overloaded;
    c->npol = 2;
    matrix_result_t *o = &c->pol[0], *d = &c->pol[1];
    o->id = 'o';
    snprintf(o->key, sizeof o->key, "ours");
    o->gpu_hours = ours_g;
    o->over_slo = ours_s;
    o->frontier_gpu_hours = ours_g / ratio;
    o->ratio = ratio;
    o->cancelled_starts = cancelled;
    o->stability.syncs = 10;
    o->stability.reversals = reversals;
    o->stability.steps = 9;
    o->stability.max_step = 1.5 * speed;
    d->id = 'd';
    snprintf(d->key, sizeof d->key, "composite");
    d->gpu_hours = comp_g;
    d->over_slo = comp_s;
    d->frontier_gpu_hours = comp_g;
    d->ratio = 1;
    c->ours_loses = ours_g > comp_g && ours_s > comp_s;
}

static void test_matrix_summary_judges_only_cases_not_overloaded(void **state) {
    (void)state;
    matrix_case_t c[4];
    /* x1: ours 1.2x, beats composite; x2: ours 2.0x and loses on both axes;
     * x4: overloaded, ours 5x and loses (reported, not judged); x8: 1.4x */
    make_case(&c[0], 1, false, 6, 0.05, 1.2, 3, 4, 8, 0.06);
    make_case(&c[1], 2, false, 10, 0.08, 2.0, 1, 2, 9, 0.07);
    make_case(&c[2], 4, true, 20, 0.40, 5.0, 7, 9, 18, 0.30);
    make_case(&c[3], 8, false, 7, 0.02, 1.4, 0, 0, 7, 0.02);
    matrix_summary_t s;
    assert_int_equal(matrix_summarise(c, 4, &s), 0);
    assert_int_equal(s.cases, 4);
    assert_int_equal(s.overloaded, 1);
    assert_int_equal(s.compared, 4);
    assert_int_equal(s.losses, 2);
    assert_int_equal(s.losses_judged, 1);
    assert_int_equal(s.npol, 2);
    const matrix_policy_summary_t *o = &s.pol[0];
    assert_string_equal(o->key, "ours");
    assert_int_equal(o->judged, 3);
    assert_float_equal(o->ratio_median, 1.4, 1e-12); /* of 1.2, 2.0, 1.4 */
    assert_float_equal(o->ratio_worst, 2.0, 1e-12);
    assert_int_equal(o->worst, 1);
    /* the sums and the largest step count every case, overloaded included */
    assert_int_equal(o->cancelled, 11);
    assert_int_equal(o->reversals, 15);
    assert_float_equal(o->max_step, 12, 1e-12);
    /* a tie (the equal 7 GPU-h, 2 % of x8) is no loss */
    assert_int_equal(c[3].ours_loses, 0);
    char label[64];
    matrix_case_label(&c[1], label, sizeof label);
    assert_string_equal(label, "conv x2 cold 135s kv 400k");
}

static void test_matrix_summary_of_nothing_is_empty(void **state) {
    (void)state;
    matrix_summary_t s;
    assert_int_equal(matrix_summarise(NULL, 0, &s), 0);
    assert_int_equal(s.cases, 0);
    assert_int_equal(s.npol, 0);
}

static void test_matrix_writes_no_ratio_when_nothing_was_judged(void **state) {
    (void)state;
    /* one overloaded case: no median, no worst, no worst case (never 0) */
    matrix_case_t c;
    make_case(&c, 4, true, 20, 0.40, 5.0, 7, 9, 18, 0.30);
    matrix_summary_t s;
    assert_int_equal(matrix_summarise(&c, 1, &s), 0);
    assert_int_equal(s.pol[0].judged, 0);
    char path[] = "/tmp/scalesim-matrix-md-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char err[256];
    assert_int_equal(matrix_markdown(path, &c, 1, &s, err, sizeof err), 0);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char buf[1 << 14];
    size_t got = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    unlink(path);
    buf[got] = '\0';
    if (!strstr(buf, "| `ours` | 0 | - | - | - | 0 | 7 | 9 | 6.0 | 0 |"))
        fail_msg("no dashes for the unjudged ratios:\n%s", buf);
    assert_non_null(strstr(buf, "1 cases, 1 overloaded"));
    assert_non_null(strstr(buf, "conv x4 cold 135s kv 400k (overloaded)"));
}

static void test_matrix_config_check_names_the_bad_value(void **state) {
    (void)state;
    matrix_config_t c;
    char err[512];
    size_t n = 0;
    matrix_config_default(&c);
    assert_int_equal(matrix_config_check(&c, &n, err, sizeof err), 0);
    assert_int_equal(n, 5 * 3 * 3 * 2);
    c.policies[0] = 'i'; /* the online ideal is the yardstick, not a KEDA policy */
    assert_int_equal(matrix_config_check(&c, &n, err, sizeof err), KGS_EINVAL);
    assert_non_null(strstr(err, "--policies id: 'i' is no KEDA policy (abcdeosl)"));
    snprintf(c.policies, sizeof c.policies, "oo");
    assert_int_equal(matrix_config_check(&c, &n, err, sizeof err), KGS_EINVAL);
    assert_non_null(strstr(err, "'o' is given twice"));
    matrix_config_default(&c);
    c.cold_s[1] = 0;
    assert_int_equal(matrix_config_check(&c, &n, err, sizeof err), KGS_EINVAL);
    assert_non_null(strstr(err, "--cold 0: a cold start is 1..3600 seconds"));
    matrix_config_default(&c);
    c.speeds[0] = 0;
    assert_int_equal(matrix_config_check(&c, &n, err, sizeof err), KGS_EINVAL);
    assert_non_null(strstr(err, "--speeds 0"));
    matrix_config_default(&c);
    c.kv_tokens[0] = 10;
    assert_int_equal(matrix_config_check(&c, &n, err, sizeof err), KGS_EINVAL);
    assert_non_null(strstr(err, "--kv 10"));
    matrix_config_default(&c);
    memset(c.traces, 0, sizeof c.traces);
    assert_int_equal(matrix_config_check(&c, &n, err, sizeof err), KGS_EINVAL);
    assert_non_null(strstr(err, "0 traces"));
    assert_int_equal(matrix_trace_parse("mooncake"), MATRIX_MOONCAKE);
    assert_int_equal(matrix_trace_parse("azure"), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matrix_compares_with_the_frontier_between_its_points),
        cmocka_unit_test(test_matrix_flags_a_share_below_every_frontier_point),
        cmocka_unit_test(test_matrix_median_of_odd_even_and_none),
        cmocka_unit_test(test_matrix_summary_judges_only_cases_not_overloaded),
        cmocka_unit_test(test_matrix_summary_of_nothing_is_empty),
        cmocka_unit_test(test_matrix_writes_no_ratio_when_nothing_was_judged),
        cmocka_unit_test(test_matrix_config_check_names_the_bad_value),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
