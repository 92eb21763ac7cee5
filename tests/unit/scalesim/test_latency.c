/* test_latency.c - the simulator's latency model against hand-computed
 * cases: prefill and decode-step times from the replica model's capacity,
 * a request's TTFT and TPOT through sim_run, the objectives' defaults,
 * vLLM's bucket layouts, and the scaler-side windowed quantiles. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policies.h"
#include "sim.h"
#include "trace.h"
#include "scalesim_test.h"

#define NEAR(a, b) assert_true(fabs((a) - (b)) < 1e-6)

static void test_prefill_and_decode_step_from_the_capacity(void **state) {
    (void)state;
    sim_model_t m;
    sim_model_default(&m); /* prefill 10000 tok/s, decode 2500 aggregate, 100 alone, batch 64 */
    NEAR(sim_prefill_s(&m, 5000), 0.5);
    NEAR(sim_prefill_s(&m, 0), 0);
    /* alone a request decodes at 100 tok/s: 10 ms a token, up to 25 at
     * once (25 x 100 = 2500); past that the 2500 tok/s are shared */
    NEAR(sim_decode_step_s(&m, 1), 0.010);
    NEAR(sim_decode_step_s(&m, 25), 0.010);
    NEAR(sim_decode_step_s(&m, 50), 0.020);
    NEAR(sim_decode_step_s(&m, 64), 0.0256);
    sim_options_t o;
    sim_options_default(&o);
    /* defaults: TTFT the queue-wait SLO, TPOT twice the step alone */
    NEAR(sim_ttft_objective_s(&m, &o), 2);
    NEAR(sim_tpot_objective_s(&m, &o), 0.020);
    o.slo_wait_s = 5;
    NEAR(sim_ttft_objective_s(&m, &o), 5);
    o.ttft_slo_s = 0.5;
    o.tpot_slo_s = 0.05;
    NEAR(sim_ttft_objective_s(&m, &o), 0.5);
    NEAR(sim_tpot_objective_s(&m, &o), 0.05);
    m.decode_seq_tok_s = 50;
    o.tpot_slo_s = 0;
    NEAR(sim_tpot_objective_s(&m, &o), 0.040);
}

static void test_vllm_bucket_layouts_and_observe(void **state) {
    (void)state;
    const hist_layout_t *t = sim_hist_layout(SIM_HIST_TTFT), *i = sim_hist_layout(SIM_HIST_ITL);
    assert_int_equal(t->n, 22);
    NEAR(t->le[0], 0.001);
    NEAR(t->le[21], 2560);
    assert_int_equal(i->n, 19);
    NEAR(i->le[0], 0.01);
    NEAR(i->le[1], 0.025);
    NEAR(i->le[18], 80);
    hist_counts_t c;
    memset(&c, 0, sizeof c);
    /* 2 x 0.03 s: every bucket from le 0.04 up; le 0.02 none */
    sim_hist_observe(t, &c, 0.03, 2);
    /* 0.02 lands in le 0.02 (a bound includes its value) */
    sim_hist_observe(t, &c, 0.02, 1);
    sim_hist_observe(t, &c, 1, 0); /* weight 0: nothing */
    NEAR(c.bucket[2], 0);          /* le 0.01 */
    NEAR(c.bucket[3], 1);          /* le 0.02 */
    NEAR(c.bucket[4], 3);          /* le 0.04 */
    NEAR(c.bucket[21], 3);
    NEAR(c.count, 3);
    NEAR(c.sum, 0.08);
}

static void test_one_request_ttft_is_prefill_and_tpot_the_step(void **state) {
    (void)state;
    sim_model_t m;
    sim_model_default(&m);
    sim_options_t o;
    sim_options_default(&o);
    o.tail_s = 30;
    sim_policy_t p = one_replica();
    char err[256];
    /* 5000 prompt tokens at t = 1 on an idle replica: scheduled at once,
     * prefilled in 5000 / 10000 = 0.5 s; then 100 tokens at 100 tok/s */
    trace_request_t r = {.arrival_s = 1, .ctx_tokens = 5000, .gen_tokens = 100};
    trace_t t = make_trace(&r, 1);
    sim_result_t res;
    assert_int_equal(sim_run(&t, &m, &p, &o, &res, err, sizeof err), 0);
    NEAR(res.ttft_p50_s, 0.5);
    NEAR(res.ttft_p90_s, 0.5);
    NEAR(res.tpot_p90_s, 0.010);
    NEAR(res.ttft_ok_share, 1);
    NEAR(res.tpot_ok_share, 1);
    NEAR(res.both_ok_share, 1);
    NEAR(res.ttft_slo_s, 2);
    NEAR(res.tpot_slo_s, 0.020);
    sim_result_deinit(&res);
    /* a TTFT objective under the prefill time: missed; TPOT too at 5 ms */
    o.ttft_slo_s = 0.4;
    o.tpot_slo_s = 0.005;
    assert_int_equal(sim_run(&t, &m, &p, &o, &res, err, sizeof err), 0);
    NEAR(res.ttft_ok_share, 0);
    NEAR(res.tpot_ok_share, 0);
    NEAR(res.both_ok_share, 0);
    sim_result_deinit(&res);
    trace_deinit(&t);
}

static void test_tpot_grows_with_the_decoding_batch(void **state) {
    (void)state;
    sim_model_t m;
    sim_model_default(&m);
    sim_options_t o;
    sim_options_default(&o);
    o.tail_s = 60;
    sim_policy_t p = one_replica();
    char err[256];
    /* n requests with no prompt decode together from t = 1: 100 tokens
     * each at max(1/100, n/2500) s a token */
    static const unsigned ns[] = {10, 50, 64};
    static const double want[] = {0.010, 0.020, 0.0256};
    for (size_t c = 0; c < 3; c++) {
        trace_request_t r[64];
        for (unsigned i = 0; i < ns[c]; i++)
            r[i] = (trace_request_t){.arrival_s = 1, .ctx_tokens = 0, .gen_tokens = 100};
        trace_t t = make_trace(r, ns[c]);
        sim_result_t res;
        assert_int_equal(sim_run(&t, &m, &p, &o, &res, err, sizeof err), 0);
        assert_int_equal(res.completed, ns[c]);
        NEAR(res.ttft_p90_s, 0); /* no wait, no prompt */
        NEAR(res.tpot_p50_s, want[c]);
        NEAR(res.tpot_p90_s, want[c]);
        /* the default objective, 20 ms: a batch of 50 meets it, 64 not */
        NEAR(res.tpot_ok_share, ns[c] <= 50 ? 1 : 0);
        sim_result_deinit(&res);
        trace_deinit(&t);
    }
}

static void test_ttft_counts_the_queue_wait(void **state) {
    (void)state;
    sim_model_t m;
    sim_model_default(&m);
    m.batch = 1;
    sim_options_t o;
    sim_options_default(&o);
    o.tail_s = 30;
    sim_policy_t p = one_replica();
    char err[256];
    /* batch 1, two requests at t = 1 of 1000 prompt + 10 output: the first
     * prefills in 0.1 s (TTFT 0.1) and decodes in 0.1 s (done at 1.2); the
     * second waits 0.2 s in the queue, then prefills: TTFT 0.3 */
    trace_request_t r[2] = {{.arrival_s = 1, .ctx_tokens = 1000, .gen_tokens = 10},
                            {.arrival_s = 1, .ctx_tokens = 1000, .gen_tokens = 10}};
    trace_t t = make_trace(r, 2);
    sim_result_t res;
    assert_int_equal(sim_run(&t, &m, &p, &o, &res, err, sizeof err), 0);
    NEAR(res.ttft_p50_s, 0.1);
    NEAR(res.ttft_p90_s, 0.3);
    NEAR(res.wait_p99_s, 0.2);
    NEAR(res.tpot_p90_s, 0.010);
    o.ttft_slo_s = 0.2;
    sim_result_deinit(&res);
    assert_int_equal(sim_run(&t, &m, &p, &o, &res, err, sizeof err), 0);
    NEAR(res.ttft_ok_share, 0.5);
    NEAR(res.both_ok_share, 0.5);
    sim_result_deinit(&res);
    trace_deinit(&t);
}

static sim_signals_t *signals(void) {
    sim_signals_t *x = calloc(1, sizeof *x);
    assert_non_null(x);
    return x;
}

static void test_scaler_side_windowed_quantiles(void **state) {
    (void)state;
    const hist_layout_t *tl = sim_hist_layout(SIM_HIST_TTFT);
    sim_latency_state_t *st = malloc(sizeof *st);
    assert_non_null(st);
    sim_latency_init(st);
    sim_signals_t *x = signals();
    /* two Ready pods, first seen (all they counted is new): A 10 TTFTs of
     * 30 ms (bucket (0.02, 0.04]), B 10 of 300 ms ((0.25, 0.5]); merged,
     * p50 = rank 10 = the top of A's bucket, 0.04; p90 = rank 18:
     * 0.25 + 0.25 x (18 - 10) / 10 = 0.45; p99 = rank 19.8: 0.495 */
    x->t_s = 10;
    x->pod_count = 3;
    x->pods[0] = (sim_pod_t){.uid = 1, .ready = true, .engine_up = true};
    x->pods[1] = (sim_pod_t){.uid = 2, .ready = true, .engine_up = true};
    x->pods[2] = (sim_pod_t){.uid = 3, .ready = false}; /* starting: not scraped */
    sim_hist_observe(tl, &x->pods[0].ttft, 0.03, 10);
    sim_hist_observe(tl, &x->pods[1].ttft, 0.3, 10);
    sim_hist_observe(tl, &x->pods[2].ttft, 100, 10);
    sim_latency_t ttft, tpot;
    sim_latency_update(st, x, 30, &ttft, &tpot);
    assert_true(ttft.known);
    NEAR(ttft.count, 20);
    NEAR(ttft.p50_s, 0.04);
    NEAR(ttft.p90_s, 0.45);
    NEAR(ttft.p99_s, 0.495);
    assert_false(tpot.known); /* no token yet: unknown, not 0 */
    /* the same sample again: not counted twice */
    sim_latency_update(st, x, 30, &ttft, &tpot);
    NEAR(ttft.count, 20);
    /* 10 s later A has 10 more at 30 ms: the window holds 30 */
    x->t_s = 20;
    sim_hist_observe(tl, &x->pods[0].ttft, 0.03, 10);
    sim_latency_update(st, x, 30, &ttft, &tpot);
    NEAR(ttft.count, 30);
    /* at 45 s the first slot (10 s) is out of the 30 s window: only A's
     * 10 at 30 ms of 20 s: p90 = 0.02 + 0.02 x 9 / 10 = 0.038 */
    x->t_s = 45;
    sim_latency_update(st, x, 30, &ttft, &tpot);
    NEAR(ttft.count, 10);
    NEAR(ttft.p90_s, 0.038);
    /* at 60 s nothing in the window: unknown */
    x->t_s = 60;
    sim_latency_update(st, x, 30, &ttft, &tpot);
    assert_false(ttft.known);
    /* B restarts (same uid, counts back to 5 at 1 s: all new) */
    x->t_s = 70;
    memset(&x->pods[1].ttft, 0, sizeof x->pods[1].ttft);
    sim_hist_observe(tl, &x->pods[1].ttft, 1, 5);
    sim_latency_update(st, x, 30, &ttft, &tpot);
    NEAR(ttft.count, 5);
    NEAR(ttft.p50_s, 0.875); /* rank 2.5 of 5 in (0.75, 1]: 0.75 + 0.25 x 2.5 / 5 */
    free(x);
    free(st);
}

/* (s), metricType slo through the product's evaluator: 60 requests decode
 * on its one replica at 60 / 2500 = 24 ms a token, inside vLLM's bucket
 * (10 ms, 25 ms]: the p90 reads 10 + 15 x 0.9 = 23.5 ms, 1.175 x the
 * 20 ms target (beyond the 0.1 dead band): 1.175 replicas, so the HPA
 * asks for 2. Latency never takes it below its minReplicaCount 1. */
static void test_slo_policy_scales_out_on_tpot(void **state) {
    (void)state;
    sim_model_t m;
    sim_model_default(&m);
    sim_options_t o;
    sim_options_default(&o);
    o.tail_s = 400;
    policy_knobs_t k;
    policy_knobs_default(&k);
    sim_policy_t p[POLICY_COUNT];
    policies_default(p, &m, &k);
    const sim_policy_t *slo = NULL, *both = NULL;
    for (size_t i = 0; i < POLICY_COUNT; i++) {
        if (p[i].key && !strcmp(p[i].key, "slo"))
            slo = &p[i];
        if (p[i].key && !strcmp(p[i].key, "ours+slo"))
            both = &p[i];
    }
    assert_non_null(slo);
    assert_non_null(both);
    assert_int_equal(slo->id, 's');
    assert_int_equal(both->id, 'l');
    assert_string_equal(k.ttft_target, "2000ms");
    assert_string_equal(k.tpot_target, "20ms");
    trace_request_t r[60];
    for (int i = 0; i < 60; i++)
        r[i] = (trace_request_t){.arrival_s = 1, .ctx_tokens = 0, .gen_tokens = 3000};
    trace_t t = make_trace(r, 60);
    char err[256];
    sim_result_t res;
    assert_int_equal(sim_run(&t, &m, slo, &o, &res, err, sizeof err), 0);
    assert_int_equal(res.eval_errors, 0);
    assert_int_equal(res.completed, 60);
    assert_int_equal(res.peak_replicas, 2);
    assert_true(res.replicas[res.points - 1] >= 1);
    sim_result_deinit(&res);
    /* with the demand model too (from zero: a cold start first): every
     * request served */
    assert_int_equal(sim_run(&t, &m, both, &o, &res, err, sizeof err), 0);
    assert_int_equal(res.eval_errors, 0);
    assert_int_equal(res.completed, 60);
    sim_result_deinit(&res);
    trace_deinit(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prefill_and_decode_step_from_the_capacity),
        cmocka_unit_test(test_vllm_bucket_layouts_and_observe),
        cmocka_unit_test(test_one_request_ttft_is_prefill_and_tpot_the_step),
        cmocka_unit_test(test_tpot_grows_with_the_decoding_batch),
        cmocka_unit_test(test_ttft_counts_the_queue_wait),
        cmocka_unit_test(test_scaler_side_windowed_quantiles),
        cmocka_unit_test(test_slo_policy_scales_out_on_tpot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
