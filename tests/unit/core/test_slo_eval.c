/* test_slo_eval.c - latency objectives: the trigger keys (metricType slo,
 * and the *Target keys on demand), slo_decide()'s ratio and clamp, and
 * demand_evaluate_inputs() with latency, all computed by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <math.h>
#include <string.h>

#include <cmocka.h>

#include "core/demand_eval.h"
#include "core/err.h"
#include "core/trigger_config.h"
#include "support/test_support.h"

#define NEAR(a, b) assert_true((a) > (b)-1e-9 && (a) < (b) + 1e-9)
#define SEC 1000000000ull

/* A parse expected to fail: the message must hold want. */
static void refused(const char *want, const char *const *kv) {
    metadata_pair_t p[TS_MAX_PAIRS];
    size_t n = ts_pairs(kv, p, TS_MAX_PAIRS);
    static trigger_config_t c;
    char err[1024] = "";
    int rc = trigger_config_parse(p, n, &c, err, sizeof err);
    if (rc != KGS_EINVAL || !strstr(err, want))
        fail_msg("want a refusal holding \"%s\", got %d: %s", want, rc, err);
}
#define REFUSED(want, ...) refused(want, (const char *const[]){__VA_ARGS__, NULL})

#define VLLM_SLO(...)                                                                              \
    CFG("metricType", "slo", "engine", "vllm", "podSelector", "app=vllm", __VA_ARGS__)

/* ---- keys --------------------------------------------------------------------- */

static void test_slo_keys_parse_durations_into_seconds(void **state) {
    (void)state;
    trigger_config_t c = VLLM_SLO("ttftP90Target", "500ms", "tpotP99Target", "50ms",
                                  "queueTimeP50Target", "1.5s", "e2eP90Target", "250us");
    const demand_config_t *d = &c.demand;
    assert_int_equal(d->type, DEMAND_SLO);
    NEAR(d->slo_target_s[SLO_TTFT][1], 0.5);
    NEAR(d->slo_target_s[SLO_TPOT][2], 0.05);
    NEAR(d->slo_target_s[SLO_QUEUE][0], 1.5);
    NEAR(d->slo_target_s[SLO_E2E][1], 0.00025);
    NEAR(d->slo_target_s[SLO_TTFT][0], 0);
    assert_int_equal(d->slo_mask, 0xf);
    assert_int_equal(d->slo_min_requests, 10);
    NEAR(d->slo_max_step, 2);
    NEAR(d->slo_tolerance, 0.1);
    NEAR(c.target_value, 100);
    assert_int_equal(d->window_s, 30);
    assert_int_equal(d->engine, ENGINE_VLLM);
}

static void test_slo_clamp_keys_and_window(void **state) {
    (void)state;
    trigger_config_t c = VLLM_SLO("ttftP90Target", "1s", "sloMinRequests", "50", "sloMaxStep",
                                  "1.5", "sloTolerance", "0", "windowSeconds", "120");
    assert_int_equal(c.demand.slo_min_requests, 50);
    NEAR(c.demand.slo_max_step, 1.5);
    NEAR(c.demand.slo_tolerance, 0);
    assert_int_equal(c.demand.window_s, 120);
    assert_int_equal(c.demand.slo_mask, 1u << SLO_TTFT);
}

static void test_slo_key_errors_name_key_value_and_what_is_valid(void **state) {
    (void)state;
    REFUSED("metricType slo needs at least one latency target", "metricType", "slo", "engine",
            "vllm", "podSelector", "app=v");
    REFUSED("invalid ttftP90Target: ", "metricType", "slo", "engine", "vllm", "podSelector",
            "app=v", "ttftP90Target", "500");
    REFUSED("invalid tpotP50Target \"50us\": must be from 100us to 1h", "metricType", "slo",
            "engine", "vllm", "podSelector", "app=v", "tpotP50Target", "50us");
    REFUSED("invalid sloMaxStep \"1\": must be a decimal number above 1 and at most 100",
            "metricType", "slo", "engine", "vllm", "podSelector", "app=v", "ttftP90Target", "1s",
            "sloMaxStep", "1");
    REFUSED("invalid sloTolerance \"0.7\": must be a decimal number >= 0 and at most 0.5",
            "metricType", "slo", "engine", "vllm", "podSelector", "app=v", "ttftP90Target", "1s",
            "sloTolerance", "0.7");
    REFUSED("invalid sloMinRequests \"0\": must be a whole number of requests from 1 to 1000000",
            "metricType", "slo", "engine", "vllm", "podSelector", "app=v", "ttftP90Target", "1s",
            "sloMinRequests", "0");
    REFUSED("sloMinRequests is set without a latency target", "metricType", "demand", "engine",
            "vllm", "podSelector", "app=v", "sloMinRequests", "5");
    REFUSED("ttftP90Target is set, but it applies to metricType slo", "metricType", "engine_queue",
            "engine", "vllm", "podSelector", "app=v", "targetValue", "5", "ttftP90Target", "1s");
    REFUSED("targetValue", "metricType", "slo", "engine", "vllm", "podSelector", "app=v",
            "ttftP90Target", "1s", "targetValue", "5");
    REFUSED("metricType slo needs the serving engine", "metricType", "slo", "podSelector", "app=v",
            "ttftP90Target", "1s");
    REFUSED("ttftP90Target is set, but TGI exports no time to first token histogram", "metricType",
            "slo", "engine", "tgi", "podSelector", "app=v", "ttftP90Target", "1s");
    REFUSED("queueTimeP90Target is set, but Triton exports no queue time histogram", "metricType",
            "slo", "engine", "triton", "podSelector", "app=v", "queueTimeP90Target", "1s");
    /* SGLang has no per-request TPOT in any release: the per-token one is
     * named for the itl targets; TGI has no per-token histogram */
    REFUSED("tpotP90Target is set, but SGLang exports no per-request time per output token "
            "histogram (its per-token histogram is read by the itl targets: itlP90Target, ...); "
            "it exports sglang:time_to_first_token_seconds for ttft targets",
            "metricType", "slo", "engine", "sglang", "podSelector", "app=v", "tpotP90Target",
            "50ms");
    REFUSED("itlP99Target is set, but TGI exports no inter-token latency histogram; it exports "
            "tgi_request_mean_time_per_token_duration for tpot targets (one observation per "
            "request)",
            "metricType", "slo", "engine", "tgi", "podSelector", "app=v", "itlP99Target", "1s");
    REFUSED("forecast", "metricType", "slo", "engine", "vllm", "podSelector", "app=v",
            "ttftP90Target", "1s", "forecast", "trend", "coldStartSeconds", "60");
    REFUSED("redisAddress", "metricType", "slo", "engine", "vllm", "podSelector", "app=v",
            "ttftP90Target", "1s", "redisAddress", "r:6379", "redisListName", "q");
    REFUSED("windowSeconds is set, but metricType engine_queue is not a rate and has no latency "
            "target",
            "metricType", "engine_queue", "engine", "vllm", "podSelector", "app=v", "targetValue",
            "5", "windowSeconds", "60");
}

static void test_slo_targets_on_demand(void **state) {
    (void)state;
    /* with a per-signal target: composite plus latency */
    trigger_config_t c =
        CFG("metricType", "demand", "engine", "vllm", "podSelector", "app=v",
            "targetQueuePerReplica", "5", "ttftP90Target", "500ms", "windowSeconds", "60");
    assert_int_equal(c.demand.type, DEMAND_COMPOSITE);
    assert_int_equal(c.demand.sizing, DEMAND_MODEL_COMPOSITE);
    assert_int_equal(c.demand.slo_mask, 1u << SLO_TTFT);
    assert_int_equal(c.demand.window_s, 60);
    /* latency alone on demandModel composite counts as its target */
    c = CFG("metricType", "demand", "demandModel", "composite", "engine", "sglang", "podSelector",
            "app=s", "e2eP99Target", "20s");
    assert_int_equal(c.demand.sizing, DEMAND_MODEL_COMPOSITE);
    /* on the queueing model */
    c = CFG("metricType", "demand", "engine", "vllm", "podSelector", "app=v", "tpotP90Target",
            "40ms");
    assert_int_equal(c.demand.sizing, DEMAND_MODEL_QUEUEING);
    NEAR(c.demand.slo_target_s[SLO_TPOT][1], 0.04);
    /* Triton and TGI: what each exports */
    c = VLLM_SLO("ttftP90Target", "1s");
    c = CFG("metricType", "slo", "engine", "triton", "podSelector", "app=t", "ttftP50Target",
            "200ms");
    assert_int_equal(c.demand.slo_mask, 1u << SLO_TTFT);
    c = CFG("metricType", "slo", "engine", "tgi", "podSelector", "app=t", "tpotP90Target", "80ms",
            "e2eP90Target", "8s", "queueTimeP90Target", "1s");
    assert_int_equal(c.demand.slo_mask, 0xe);
}

/* ---- slo_decide: ratio and clamp ---------------------------------------------- */

static demand_latency_t lat(double count, double p50, double p90, double p99) {
    demand_latency_t l = {
        .known = count > 0, .count = count, .p50_s = p50, .p90_s = p90, .p99_s = p99};
    return l;
}

static void test_decide_worst_ratio_times_ready(void **state) {
    (void)state;
    trigger_config_t c = VLLM_SLO("ttftP90Target", "500ms", "tpotP90Target", "50ms");
    demand_latency_t l[SLO_SIGNAL_COUNT] = {0};
    /* TTFT p90 0.75 s / 0.5 = 1.5; TPOT p90 0.06 / 0.05 = 1.2: worst 1.5 x 4 = 6 */
    l[SLO_TTFT] = lat(100, 0.2, 0.75, 1.0);
    l[SLO_TPOT] = lat(100, 0.03, 0.06, 0.08);
    slo_decision_t dd;
    assert_true(slo_decide(&c.demand, l, 4, &dd, NULL, 0));
    assert_true(dd.observed && dd.judged);
    NEAR(dd.worst, 1.5);
    assert_int_equal(dd.worst_signal, SLO_TTFT);
    assert_int_equal(dd.worst_quantile, 1);
    NEAR(dd.replicas, 6);
    assert_false(dd.clamped);
    /* TPOT 0.15 / 0.05 = 3 x 4 = 12: clamped to 4 x 2 = 8 */
    l[SLO_TPOT].p90_s = 0.15;
    assert_true(slo_decide(&c.demand, l, 4, &dd, NULL, 0));
    NEAR(dd.worst, 3);
    assert_int_equal(dd.worst_signal, SLO_TPOT);
    NEAR(dd.replicas, 8);
    assert_true(dd.clamped);
}

/* Issue 31: one request of 300 tokens at 0.2 s a token. Per request that
 * is one TPOT observation (vLLM >= 0.11's request_time_per_output_token),
 * per token 300 (inter_token_latency): neither is judged on one request,
 * for any quantile, so the ready replicas hold. */
static void test_one_slow_request_scales_nothing_for_any_tpot_or_itl_target(void **state) {
    (void)state;
    trigger_config_t c = VLLM_SLO("tpotP50Target", "50ms", "tpotP90Target", "50ms", "tpotP99Target",
                                  "50ms", "itlP90Target", "50ms", "itlP99Target", "50ms");
    assert_true(c.demand.slo_mask & (1u << SLO_E2E)); /* read beside itl for its request count */
    /* windowSeconds goes with an itl target as with the others */
    trigger_config_t w = VLLM_SLO("itlP90Target", "50ms", "windowSeconds", "30");
    assert_int_equal(w.demand.window_s, 30);
    demand_latency_t l[SLO_SIGNAL_COUNT] = {0};
    l[SLO_TPOT] = lat(1, 0.2, 0.2, 0.2);
    l[SLO_ITL] = lat(300, 0.2, 0.2, 0.2); /* 300 tokens of one request */
    l[SLO_E2E] = lat(1, 61, 61, 61);
    slo_decision_t dd;
    assert_true(slo_decide(&c.demand, l, 2, &dd, NULL, 0));
    assert_true(dd.observed);
    assert_false(dd.judged);
    NEAR(dd.replicas, 2);
    /* the same tokens with 25 requests finished: the per-token p90 is judged */
    l[SLO_E2E] = lat(25, 2, 3, 61);
    assert_true(slo_decide(&c.demand, l, 2, &dd, NULL, 0));
    assert_true(dd.judged);
    assert_int_equal(dd.worst_signal, SLO_ITL);
    NEAR(dd.replicas, 4); /* 0.2 / 0.05 = 4, x 2 clamped to 2 x sloMaxStep 2 */
    /* a typical page (issue 31): per-request p90 47.5 ms against 50 ms holds,
     * where the per-token p90 (87.5 ms) would have asked 1.75x */
    trigger_config_t t = VLLM_SLO("tpotP90Target", "50ms");
    memset(l, 0, sizeof l);
    l[SLO_TPOT] = lat(400, 0.03, 0.0475, 0.06);
    l[SLO_ITL] = lat(40000, 0.03, 0.0875, 0.2); /* not a target here: not read */
    assert_true(slo_decide(&t.demand, l, 4, &dd, NULL, 0));
    NEAR(dd.worst, 0.95);
    NEAR(dd.replicas, 4);
}

static void test_decide_dead_band_and_step_down(void **state) {
    (void)state;
    trigger_config_t c = VLLM_SLO("ttftP90Target", "1s");
    demand_latency_t l[SLO_SIGNAL_COUNT] = {0};
    slo_decision_t dd;
    /* 1.08 is inside 1 +- 0.1: hold at 5 */
    l[SLO_TTFT] = lat(50, 0.5, 1.08, 2);
    assert_true(slo_decide(&c.demand, l, 5, &dd, NULL, 0));
    NEAR(dd.replicas, 5);
    /* 0.95: hold; 0.6: 5 x 0.6 = 3 */
    l[SLO_TTFT].p90_s = 0.95;
    assert_true(slo_decide(&c.demand, l, 5, &dd, NULL, 0));
    NEAR(dd.replicas, 5);
    l[SLO_TTFT].p90_s = 0.6;
    assert_true(slo_decide(&c.demand, l, 5, &dd, NULL, 0));
    NEAR(dd.replicas, 3);
    /* 0.1: 0.5 replicas, clamped to 5 / 2 = 2.5 */
    l[SLO_TTFT].p90_s = 0.1;
    assert_true(slo_decide(&c.demand, l, 5, &dd, NULL, 0));
    NEAR(dd.replicas, 2.5);
    assert_true(dd.clamped);
    /* one ready replica: 0.5 -> never below 1 while requests are seen */
    assert_true(slo_decide(&c.demand, l, 1, &dd, NULL, 0));
    NEAR(dd.replicas, 1);
    /* 0 ready but requests observed (pods just lost Ready): R = 1, 1.5 x 1 */
    l[SLO_TTFT].p90_s = 1.5;
    assert_true(slo_decide(&c.demand, l, 0, &dd, NULL, 0));
    NEAR(dd.replicas, 1.5);
}

/* p90 needs 20 requests (2 above it), p99 200, p50 max(4, sloMinRequests 10). */
static void test_decide_too_few_requests_is_not_judged(void **state) {
    (void)state;
    trigger_config_t c = VLLM_SLO("ttftP90Target", "500ms", "ttftP99Target", "1s");
    demand_latency_t l[SLO_SIGNAL_COUNT] = {0};
    slo_decision_t dd;
    /* 19 requests, one of them slow: neither quantile judged; p90 reads
     * 0.2 / 0.5 (fast), p99 30 / 1 (slow, thin): min(30, 1) = 1 -> hold 4 */
    l[SLO_TTFT] = lat(19, 0.1, 0.2, 30);
    assert_true(slo_decide(&c.demand, l, 4, &dd, NULL, 0));
    assert_true(dd.observed);
    assert_false(dd.judged);
    NEAR(dd.replicas, 4);
    /* 20: p90 judged (0.2 / 0.5 = 0.4), p99 still not, and still slow: hold 4 */
    l[SLO_TTFT].count = 20;
    assert_true(slo_decide(&c.demand, l, 4, &dd, NULL, 0));
    assert_true(dd.judged);
    NEAR(dd.worst, 0.4);
    NEAR(dd.replicas, 4);
    /* 20 with a fast p99 too: 4 x 0.4 = 1.6, clamped to 4 / 2 */
    l[SLO_TTFT] = lat(20, 0.1, 0.2, 0.3);
    assert_true(slo_decide(&c.demand, l, 4, &dd, NULL, 0));
    NEAR(dd.replicas, 2);
    l[SLO_TTFT] = lat(200, 0.1, 0.2, 30);
    /* 200: p99 30 / 1 = 30 judged: 4 x 2 = 8 */
    assert_true(slo_decide(&c.demand, l, 4, &dd, NULL, 0));
    NEAR(dd.worst, 30);
    NEAR(dd.replicas, 8);
    /* thin evidence of slowness holds, never reads as fast: 100 requests,
     * p90 0.2 / 0.5 judged (0.4), p99 5 s / 1 s not judged (needs 200):
     * the ratio is max(0.4, min(5, 1)) = 1 -> hold 4 (not 4 x 0.4) */
    l[SLO_TTFT] = lat(100, 0.1, 0.2, 5);
    assert_true(slo_decide(&c.demand, l, 4, &dd, NULL, 0));
    NEAR(dd.worst, 0.4);
    NEAR(dd.thin, 5);
    NEAR(dd.replicas, 4);
    /* p99-only target, busy pods, 150 requests reading 3 x the target: hold */
    trigger_config_t c99 = VLLM_SLO("ttftP99Target", "1s");
    l[SLO_TTFT] = lat(150, 0.5, 2, 3);
    assert_true(slo_decide(&c99.demand, l, 4, &dd, NULL, 0));
    assert_false(dd.judged);
    NEAR(dd.replicas, 4);
    /* sloMinRequests raises the p90 bar */
    trigger_config_t c2 = VLLM_SLO("ttftP90Target", "500ms", "sloMinRequests", "50");
    l[SLO_TTFT] = lat(49, 0.1, 2, 3);
    assert_true(slo_decide(&c2.demand, l, 4, &dd, NULL, 0));
    assert_false(dd.judged);
    NEAR(dd.replicas, 4); /* slow but thin: hold */
    l[SLO_TTFT].count = 50;
    assert_true(slo_decide(&c2.demand, l, 4, &dd, NULL, 0));
    NEAR(dd.replicas, 8);
}

static void test_decide_unknown_and_bad_latency(void **state) {
    (void)state;
    trigger_config_t c = VLLM_SLO("ttftP90Target", "500ms");
    demand_latency_t l[SLO_SIGNAL_COUNT] = {0};
    slo_decision_t dd;
    assert_true(slo_decide(&c.demand, l, 3, &dd, NULL, 0));
    assert_false(dd.observed);
    NEAR(dd.replicas, 0);
    /* a signal without a target is not read, even when known */
    l[SLO_E2E] = lat(100, 9, 9, 9);
    assert_true(slo_decide(&c.demand, l, 3, &dd, NULL, 0));
    assert_false(dd.observed);
    char err[256];
    l[SLO_TTFT] = lat(100, 0.1, NAN, 0.3);
    assert_false(slo_decide(&c.demand, l, 3, &dd, err, sizeof err));
    assert_non_null(strstr(err, "ttft p90"));
}

/* ---- demand_evaluate_inputs with latency ------------------------------------------ */

static demand_source_t reading(double waiting, double running) {
    demand_source_t v;
    memset(&v, 0, sizeof v);
    v.state = DEMAND_SOURCE_READING;
    v.name = "pod";
    v.last_ok = 100 * SEC;
    v.interval_ns = 1 * SEC;
    v.timeout_ns = 2 * SEC;
    v.reading.has_waiting = v.reading.has_running = v.reading.has_kv = true;
    v.reading.waiting = waiting;
    v.reading.running = running;
    return v;
}

static void test_inputs_slo_value_is_100_x_replicas(void **state) {
    (void)state;
    trigger_config_t c = VLLM_SLO("ttftP90Target", "500ms");
    demand_source_t v[3] = {reading(0, 1), reading(0, 1), reading(0, 1)};
    demand_pod_t pods[3] = {{1, true, 100}, {2, true, 100}, {3, true, 100}};
    demand_inputs_t in;
    demand_learned_t learned = {NULL, NULL, NULL};
    memset(&in, 0, sizeof in);
    in.pods_status = EVAL_OK;
    in.engines = v;
    in.nengines = 3;
    in.has_pods = true;
    in.pods = pods;
    in.npods = 3;
    /* 3 ready x 0.9 / 0.5 = 5.4 -> 540 */
    in.latency[SLO_TTFT] = lat(60, 0.3, 0.9, 1.2);
    demand_view_t view;
    demand_view_init(&view);
    learned.view = &view;
    eval_result_t r;
    demand_evaluate_inputs(&c, &in, &learned, 101 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_OK);
    NEAR(r.value, 540);
    assert_true(r.active);
    assert_int_equal(view.decided_by, DSIG_LATENCY);
    assert_true(view.has_pods);
    assert_int_equal(view.ready_pods, 3);
    assert_int_equal(view.answering, 3);
    /* nothing in the window, requests in flight: hold 3 ready -> 300 */
    in.latency[SLO_TTFT] = lat(0, 0, 0, 0);
    demand_evaluate_inputs(&c, &in, &learned, 101 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_OK);
    NEAR(r.value, 300);
    assert_true(r.active);
    /* idle: nothing running, waiting or observed -> 0, not active */
    for (int i = 0; i < 3; i++)
        v[i].reading.running = 0;
    demand_evaluate_inputs(&c, &in, &learned, 101 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_OK);
    NEAR(r.value, 0);
    assert_false(r.active);
    /* a latency that is not a number: UNAVAILABLE naming it */
    in.latency[SLO_TTFT] = lat(60, 0.3, INFINITY, 1.2);
    demand_evaluate_inputs(&c, &in, &learned, 101 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_UNAVAILABLE);
    assert_non_null(strstr(r.message, "latency: ttft p90"));
    demand_view_free(&view);
}

static void test_inputs_demand_larger_need_wins(void **state) {
    (void)state;
    trigger_config_t c = CFG("metricType", "demand", "engine", "vllm", "vllmEndpoint",
                             "http://a/metrics,http://b/metrics", "targetQueuePerReplica", "5",
                             "tpotP90Target", "50ms");
    /* queue 4 + 6 = 10 / 5 = 2 replicas -> 200 */
    demand_source_t v[2] = {reading(4, 2), reading(6, 2)};
    demand_inputs_t in;
    demand_learned_t learned = {NULL, NULL, NULL};
    memset(&in, 0, sizeof in);
    in.pods_status = EVAL_OK;
    in.engines = v;
    in.nengines = 2;
    demand_view_t view;
    demand_view_init(&view);
    learned.view = &view;
    eval_result_t r;
    demand_evaluate_inputs(&c, &in, &learned, 101 * SEC, NULL, &r);
    NEAR(r.value, 200); /* no latency observed: the queue alone */
    assert_int_equal(view.decided_by, DSIG_QUEUE);
    NEAR(view.need[DSIG_QUEUE], 2);
    assert_false(view.known[DSIG_LATENCY]);
    assert_true(view.latency[SLO_TPOT][1].target_s > 0);
    assert_false(view.latency[SLO_TPOT][1].known);
    /* 2 engines answered x 0.08 / 0.05 = 3.2 -> 320 wins */
    in.latency[SLO_TPOT] = lat(500, 0.04, 0.08, 0.1);
    demand_evaluate_inputs(&c, &in, &learned, 101 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_OK);
    NEAR(r.value, 320);
    assert_int_equal(view.decided_by, DSIG_LATENCY);
    NEAR(view.need[DSIG_LATENCY], 3.2);
    NEAR(view.latency[SLO_TPOT][1].observed_s, 0.08);
    assert_true(view.latency[SLO_TPOT][1].judged);
    NEAR(view.value, 320);
    /* latency good (0.02 / 0.05 = 0.4 -> 0.8, clamped to 1): the queue's 200 wins */
    in.latency[SLO_TPOT].p90_s = 0.02;
    demand_evaluate_inputs(&c, &in, &learned, 101 * SEC, NULL, &r);
    NEAR(r.value, 200);
    assert_int_equal(view.decided_by, DSIG_QUEUE);
    /* an error: nothing decided, the message kept */
    in.latency[SLO_TPOT].p90_s = INFINITY;
    demand_evaluate_inputs(&c, &in, &learned, 101 * SEC, NULL, &r);
    assert_int_equal(view.status, EVAL_UNAVAILABLE);
    assert_int_equal(view.decided_by, -1);
    assert_string_equal(view.message, r.message);
    demand_view_free(&view);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slo_keys_parse_durations_into_seconds),
        cmocka_unit_test(test_slo_clamp_keys_and_window),
        cmocka_unit_test(test_slo_key_errors_name_key_value_and_what_is_valid),
        cmocka_unit_test(test_slo_targets_on_demand),
        cmocka_unit_test(test_decide_worst_ratio_times_ready),
        cmocka_unit_test(test_decide_dead_band_and_step_down),
        cmocka_unit_test(test_decide_too_few_requests_is_not_judged),
        cmocka_unit_test(test_decide_unknown_and_bad_latency),
        cmocka_unit_test(test_one_slow_request_scales_nothing_for_any_tpot_or_itl_target),
        cmocka_unit_test(test_inputs_slo_value_is_100_x_replicas),
        cmocka_unit_test(test_inputs_demand_larger_need_wins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
