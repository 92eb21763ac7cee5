/* test_sim.c - the simulator end to end on a short synthetic trace: every
 * policy runs, the output is the same twice, and the trace options work. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/err.h"
#include "policies.h"
#include "sim.h"
#include "trace.h"

/* 2 req/s for 300 s, then 12 req/s for 300 s; 400 context, 100 output. */
static char *synthetic_csv(size_t *len) {
    size_t cap = 1 << 20, n = 0;
    char *b = malloc(cap);
    assert_non_null(b);
    n += (size_t)snprintf(b, cap, "TIMESTAMP,ContextTokens,GeneratedTokens\n");
    for (int s = 0; s < 600; s++) {
        int per = s < 300 ? 2 : 12;
        for (int k = 0; k < per; k++)
            n += (size_t)snprintf(b + n, cap - n, "%.3f,%d,%d\n", s + (double)k / per,
                                  400 + 10 * (k % 5), 100);
    }
    *len = n;
    return b;
}

static void run_all(const trace_t *t, sim_result_t *res, size_t *n) {
    sim_model_t m;
    sim_model_default(&m);
    sim_options_t o;
    sim_options_default(&o);
    o.tail_s = 400;
    policy_knobs_t k;
    policy_knobs_default(&k);
    sim_policy_t p[POLICY_COUNT];
    *n = policies_default(p, &m, &k);
    char err[512];
    for (size_t i = 0; i < *n; i++) {
        int rc = sim_run(t, &m, &p[i], &o, &res[i], err, sizeof err);
        if (rc)
            fail_msg("policy %c: %s", p[i].id, err);
    }
}

static void test_sim_runs_every_policy_deterministically(void **state) {
    (void)state;
    size_t len;
    char *csv = synthetic_csv(&len);
    trace_options_t to;
    trace_options_default(&to);
    to.repetitions = 2;
    to.gap_s = 900;
    trace_t t;
    char err[256];
    assert_int_equal(trace_parse(csv, len, &to, &t, err, sizeof err), 0);
    free(csv);
    sim_result_t a[POLICY_COUNT], b[POLICY_COUNT];
    size_t n;
    run_all(&t, a, &n);
    run_all(&t, b, &n);
    for (size_t i = 0; i < n; i++) {
        assert_memory_equal(&a[i].gpu_hours, &b[i].gpu_hours, sizeof(double));
        assert_memory_equal(&a[i].wait_p99_s, &b[i].wait_p99_s, sizeof(double));
        assert_int_equal(a[i].cold_starts, b[i].cold_starts);
        assert_int_equal(a[i].points, b[i].points);
        assert_memory_equal(a[i].replicas, b[i].replicas, a[i].points * sizeof(float));
        assert_true(a[i].gpu_hours > 0);
        assert_int_equal(a[i].eval_errors, 0);
    }
    /* (d) scales to zero in the 900 s gap and wakes for the second run */
    assert_int_equal(a[3].wakes, 2);
    /* (c) waits for its 30 s poll on top of the cold start, (d) is pushed */
    assert_true(a[2].wake_mean_s > a[3].wake_mean_s);
    assert_true(a[3].wake_mean_s >= 135 && a[3].wake_mean_s < 137);
    /* the oracle starts replicas ahead: no wake, no request over the SLO */
    assert_int_equal(a[5].wakes, 0);
    assert_true(a[5].slo_miss_share < 0.01);
    /* the Go system's node-max cap: never more than ceil(100 / 70) = 2 */
    assert_true(a[0].peak_replicas <= 2);
    for (size_t i = 0; i < n; i++) {
        sim_result_deinit(&a[i]);
        sim_result_deinit(&b[i]);
    }
    trace_deinit(&t);
}

static void test_trace_parses_azure_timestamps_and_applies_options(void **state) {
    (void)state;
    static const char csv[] = "TIMESTAMP,ContextTokens,GeneratedTokens\r\n"
                              "2023-11-16 23:59:59.5000000,374,44\r\n"
                              "2023-11-17 00:00:01.5000000,396,109\r\n"
                              "2023-11-17 00:00:03.5000000,10,1\r\n";
    trace_options_t o;
    trace_options_default(&o);
    o.time_scale = 2;
    o.repetitions = 3;
    o.gap_s = 10;
    trace_t t;
    char err[256];
    assert_int_equal(trace_parse(csv, sizeof csv - 1, &o, &t, err, sizeof err), 0);
    assert_int_equal(t.count, 9);
    assert_int_equal(t.source_count, 3);
    /* span 4 s / 2 = 2 s; repetition k starts at k x (2 + 10) */
    assert_float_equal(t.reqs[1].arrival_s, 1, 1e-9);
    assert_float_equal(t.reqs[3].arrival_s, 12, 1e-9);
    assert_float_equal(t.reqs[8].arrival_s, 26, 1e-9);
    assert_int_equal(t.reqs[1].ctx_tokens, 396);
    assert_int_equal(t.reqs[1].gen_tokens, 109);
    trace_deinit(&t);
    static const char bad[] = "h\n1,2\n";
    assert_int_equal(trace_parse(bad, sizeof bad - 1, &o, &t, err, sizeof err), KGS_EINVAL);
    assert_non_null(strstr(err, "line 2"));
}

static void test_trace_ramp_thins_the_edges_deterministically(void **state) {
    (void)state;
    size_t len;
    char *csv = synthetic_csv(&len);
    trace_options_t o;
    trace_options_default(&o);
    o.ramp_s = 100;
    trace_t a, b;
    char err[256];
    assert_int_equal(trace_parse(csv, len, &o, &a, err, sizeof err), 0);
    assert_int_equal(trace_parse(csv, len, &o, &b, err, sizeof err), 0);
    free(csv);
    assert_int_equal(a.count, b.count);
    assert_memory_equal(a.reqs, b.reqs, a.count * sizeof *a.reqs);
    size_t early = 0, mid = 0;
    for (size_t i = 0; i < a.count; i++) {
        if (a.reqs[i].arrival_s < 50)
            early++;
        else if (a.reqs[i].arrival_s >= 150 && a.reqs[i].arrival_s < 200)
            mid++;
    }
    /* 100 requests in [0, 50) kept with p = t / 100 (~25); all 100 in [150, 200) */
    assert_true(early > 10 && early < 45);
    assert_int_equal(mid, 100);
    trace_deinit(&a);
    trace_deinit(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_runs_every_policy_deterministically),
        cmocka_unit_test(test_trace_parses_azure_timestamps_and_applies_options),
        cmocka_unit_test(test_trace_ramp_thins_the_edges_deterministically),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
