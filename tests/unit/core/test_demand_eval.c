/* test_demand_eval.c - signals -> value and activity, with the worked
 * examples of docs/configuration.md ("Combining signals") computed by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <math.h>
#include <string.h>

#include <cmocka.h>

#include "core/demand_eval.h"
#include "core/trigger_config.h"
#include "support/test_support.h"

#define NEAR(a, b) assert_true((a) > (b)-1e-9 && (a) < (b) + 1e-9)

static eval_result_t gpu_ok(double v) {
    eval_result_t g;
    memset(&g, 0, sizeof g);
    g.status = EVAL_OK;
    g.value = v;
    g.active = v > 0;
    g.inputs = 4;
    return g;
}

/* Example 1: queue 12, KV 3 pods x 90 % = 270 %, GPU sum 180 %.
 * needs: 12/5 = 2.4, 270/70 = 3.857, 180/60 = 3 -> 385.7 -> KEDA: 4 replicas. */
static void test_worked_example_kv_dominates(void **state) {
    (void)state;
    trigger_config_t c =
        CFG("metricType", "demand", "engine", "vllm", "podSelector", "app=v",
            "targetQueuePerReplica", "5", "targetKvCache", "70", "targetGpu", "60");
    demand_signals_t s = {.has_engine = true, .waiting = 12, .running = 9, .kv_percent = 270};
    eval_result_t g = gpu_ok(180), r;
    demand_evaluate(&c, &s, &g, &r);
    assert_int_equal(r.status, EVAL_OK);
    NEAR(r.value, 100.0 * 270 / 70);
    assert_true(r.active);
}

/* Example 2: at zero replicas, 3 requests in Redis and no engine pods:
 * 3/5 = 0.6 -> 60 -> KEDA: active, 1 replica. */
static void test_worked_example_wake_from_zero(void **state) {
    (void)state;
    trigger_config_t c = CFG("metricType", "demand", "targetQueuePerReplica", "5", "redisAddress",
                             "r:6379", "redisListName", "q");
    demand_signals_t s = {.has_queue = true, .queue = 3};
    eval_result_t r;
    demand_evaluate(&c, &s, NULL, &r);
    NEAR(r.value, 60);
    assert_true(r.active);
    s.queue = 0;
    demand_evaluate(&c, &s, NULL, &r);
    NEAR(r.value, 0);
    assert_false(r.active);
}

/* The queue seen by targetQueuePerReplica is Redis + the engines' waiting. */
static void test_queue_adds_engine_waiting(void **state) {
    (void)state;
    trigger_config_t c = CFG("metricType", "demand", "targetQueuePerReplica", "4", "redisAddress",
                             "r:6379", "redisListName", "q", "engine", "vllm", "vllmEndpoint",
                             "http://v/metrics", "activationQueue", "2");
    demand_signals_t s = {.has_queue = true, .queue = 1, .has_engine = true, .waiting = 1};
    eval_result_t r;
    demand_evaluate(&c, &s, NULL, &r);
    NEAR(r.value, 50);
    assert_false(r.active); /* 2 waiting is not above activationQueue 2 */
    s.waiting = 2;
    demand_evaluate(&c, &s, NULL, &r);
    assert_true(r.active);
}

/* A busy fleet with an empty queue stays active (no cooldown kill). */
static void test_running_keeps_active(void **state) {
    (void)state;
    trigger_config_t c = CFG("metricType", "demand", "engine", "tgi", "engineEndpoint",
                             "http://t/metrics", "targetQueuePerReplica", "5");
    demand_signals_t s = {.has_engine = true, .waiting = 0, .running = 2};
    eval_result_t r;
    demand_evaluate(&c, &s, NULL, &r);
    NEAR(r.value, 0);
    assert_true(r.active);
    s.running = 0;
    demand_evaluate(&c, &s, NULL, &r);
    assert_false(r.active);
    /* Single-signal engine types follow the same rule. */
    trigger_config_t q = CFG("metricType", "engine_queue", "engine", "tgi", "engineEndpoint",
                             "http://t/metrics", "targetValue", "5");
    s.running = 1;
    demand_evaluate(&q, &s, NULL, &r);
    assert_true(r.active);
    NEAR(r.value, 0);
}

static void test_gpu_activation_and_errors_pass_through(void **state) {
    (void)state;
    trigger_config_t c = CFG("metricType", "demand", "targetGpu", "50", "activationGpu", "5");
    demand_signals_t s = {0};
    eval_result_t g = gpu_ok(4), r;
    demand_evaluate(&c, &s, &g, &r);
    NEAR(r.value, 8);
    assert_false(r.active);
    g = gpu_ok(6);
    demand_evaluate(&c, &s, &g, &r);
    assert_true(r.active);
    g.status = EVAL_UNAVAILABLE;
    strcpy(g.message, "snapshot of node n1 is stale");
    demand_evaluate(&c, &s, &g, &r);
    assert_int_equal(r.status, EVAL_UNAVAILABLE);
    assert_string_equal(r.message, "snapshot of node n1 is stale");
    assert_false(r.active);
}

static void test_single_signal_types(void **state) {
    (void)state;
    demand_signals_t s = {.has_engine = true,
                          .waiting = 7,
                          .running = 5,
                          .kv_percent = 60,
                          .has_rates = true,
                          .queue_us = 250000,
                          .completed = 100,
                          .request_rate = 40,
                          .has_queue = true,
                          .queue = 11};
    eval_result_t r;
    trigger_config_t c = CFG("metricType", "vllm_kv_cache_usage", "targetValue", "70",
                             "vllmEndpoint", "http://v/metrics");
    demand_evaluate(&c, &s, NULL, &r);
    NEAR(r.value, 60);
    c = CFG("metricType", "triton_queue_wait_ms", "targetValue", "50", "tritonEndpoint",
            "http://t/metrics");
    demand_evaluate(&c, &s, NULL, &r);
    NEAR(r.value, 2.5);
    /* Nothing completed in the window: 0 only when nothing is pending. */
    demand_signals_t idle = {.has_engine = true, .has_rates = true};
    demand_evaluate(&c, &idle, NULL, &r);
    assert_int_equal(r.status, EVAL_OK);
    NEAR(r.value, 0);
    idle.waiting = 3;
    demand_evaluate(&c, &idle, NULL, &r);
    assert_int_equal(r.status, EVAL_UNAVAILABLE);
    assert_non_null(strstr(r.message, "3 request(s) pending and none completed"));
    c = CFG("metricType", "triton_request_rate", "targetValue", "50", "tritonEndpoint",
            "http://t/metrics", "activationThreshold", "100");
    s.waiting = 0;
    s.running = 0;
    demand_evaluate(&c, &s, NULL, &r);
    NEAR(r.value, 40);
    assert_false(r.active); /* 40 req/s is not above 100 and nothing waits */
    c = CFG("metricType", "queue_length", "targetValue", "5", "redisAddress", "r", "redisListName",
            "q", "activationThreshold", "10");
    demand_evaluate(&c, &s, NULL, &r);
    NEAR(r.value, 11);
    assert_true(r.active);
}

/* forecast: trend: a rising demand is reported ahead by coldStartSeconds,
 * never below now; a flat or falling one is reported as it is. */
static void test_forecast_reports_the_demand_a_cold_start_ahead(void **state) {
    (void)state;
    trigger_config_t c =
        CFG("metricType", "queue_length", "targetValue", "5", "redisAddress", "r:6379",
            "redisListName", "q", "forecast", "trend", "coldStartSeconds", "120");
    assert_true(c.demand.forecast_trend);
    assert_int_equal(c.demand.cold_start_s, 120);
    forecast_t f;
    forecast_init(&f, FORECAST_DEFAULT_ALPHA, FORECAST_DEFAULT_BETA);
    demand_signals_t s = {.has_queue = true};
    eval_result_t r;
    /* a ramp: +1 queued request per second for 5 minutes */
    for (int t = 0; t <= 300; t++) {
        s.queue = t;
        demand_evaluate(&c, &s, NULL, &r);
        demand_forecast_apply(&c, &f, t, &r);
        assert_true(r.value >= s.queue);
    }
    /* 120 s ahead of 300 on a slope of 1/s: about 420 */
    assert_true(r.value > 380 && r.value < 440);
    assert_true(r.active);
    /* the queue empties: never below now, back towards now as the trend fades */
    for (int t = 301; t <= 900; t++) {
        s.queue = 0;
        demand_evaluate(&c, &s, NULL, &r);
        demand_forecast_apply(&c, &f, t, &r);
        assert_true(r.value >= 0);
    }
    assert_true(r.value < 1);
    assert_false(r.active); /* activity follows the work that exists */
    /* without forecast: trend nothing changes */
    trigger_config_t plain = CFG("metricType", "queue_length", "targetValue", "5", "redisAddress",
                                 "r:6379", "redisListName", "q");
    s.queue = 7;
    demand_evaluate(&plain, &s, NULL, &r);
    demand_forecast_apply(&plain, &f, 1000, &r);
    NEAR(r.value, 7);
}

/* ---- demand_evaluate_inputs: what the sources read -> the answer ---------------- */

#define SEC 1000000000ull

static demand_source_t reading(const char *name, double waiting, double running, double kv) {
    demand_source_t v;
    memset(&v, 0, sizeof v);
    v.state = DEMAND_SOURCE_READING;
    v.name = name;
    v.last_ok = 100 * SEC;
    v.interval_ns = 1 * SEC;
    v.timeout_ns = 2 * SEC;
    v.reading.has_waiting = v.reading.has_running = v.reading.has_kv = true;
    v.reading.waiting = waiting;
    v.reading.running = running;
    v.reading.kv_percent = kv;
    return v;
}

static demand_inputs_t engines(const demand_source_t *v, unsigned n) {
    demand_inputs_t in;
    memset(&in, 0, sizeof in);
    in.pods_status = EVAL_OK;
    in.engines = v;
    in.nengines = n;
    return in;
}

static trigger_config_t vllm_queue(const char *partial) {
    if (partial)
        return CFG("metricType", "vllm_queue_depth", "targetValue", "5", "vllmEndpoint",
                   "http://a/metrics,http://b/metrics", "partialData", partial);
    return CFG("metricType", "vllm_queue_depth", "targetValue", "5", "vllmEndpoint",
               "http://a/metrics,http://b/metrics");
}

static void test_demand_inputs_sums_engines_that_answered(void **state) {
    (void)state;
    trigger_config_t c = vllm_queue(NULL);
    demand_source_t v[2] = {reading("vllm a", 3, 1, 10), reading("vllm b", 4, 0, 20)};
    demand_inputs_t in = engines(v, 2);
    eval_result_t r;
    demand_evaluate_inputs(&c, &in, NULL, 101 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_OK);
    NEAR(r.value, 7);
    assert_true(r.active);
    assert_int_equal(r.inputs, 2);
}

static void test_demand_inputs_failed_engine_is_unavailable_naming_it(void **state) {
    (void)state;
    trigger_config_t c = vllm_queue(NULL);
    demand_source_t v[2] = {reading("vllm a", 3, 1, 10), reading("vllm b", 4, 0, 20)};
    v[1].state = DEMAND_SOURCE_FAILED;
    v[1].error = "HTTP 503 (want 200)";
    demand_inputs_t in = engines(v, 2);
    eval_result_t r;
    demand_evaluate_inputs(&c, &in, NULL, 101 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_UNAVAILABLE);
    assert_string_equal(r.message, "vllm b: HTTP 503 (want 200) (1 of 2 engine endpoints failing)");
    assert_false(r.pending);
    /* partialData: ignore leaves it out while one answers */
    c = vllm_queue("ignore");
    demand_evaluate_inputs(&c, &in, NULL, 101 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_OK);
    NEAR(r.value, 3);
    assert_int_equal(r.inputs, 1);
    v[0].state = DEMAND_SOURCE_NOT_CREATED;
    v[0].name = "http://a/metrics";
    v[0].error = "out of memory";
    demand_evaluate_inputs(&c, &in, NULL, 101 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_UNAVAILABLE);
    assert_string_equal(r.message,
                        "http://a/metrics: out of memory (2 of 2 engine endpoints failing)");
}

static void test_demand_inputs_stale_reading_is_unavailable(void **state) {
    (void)state;
    trigger_config_t c = vllm_queue(NULL);
    demand_source_t v[1] = {reading("vllm a", 3, 1, 10)};
    demand_inputs_t in = engines(v, 1);
    eval_result_t r;
    /* stale after max(3 x 1 s, 1 s + 2 s) = 3 s */
    demand_evaluate_inputs(&c, &in, NULL, 103 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_OK);
    demand_evaluate_inputs(&c, &in, NULL, 103 * SEC + 1, NULL, &r);
    assert_int_equal(r.status, EVAL_UNAVAILABLE);
    assert_non_null(strstr(r.message, "vllm a: last successful poll"));
    assert_non_null(strstr(r.message, "ago (stale)"));
}

static void test_demand_inputs_first_poll_is_pending(void **state) {
    (void)state;
    trigger_config_t c = vllm_queue(NULL);
    demand_source_t v[2] = {reading("vllm a", 3, 1, 10), reading("vllm b", 4, 0, 20)};
    v[1].state = DEMAND_SOURCE_WAITING;
    v[1].created = 100 * SEC;
    demand_inputs_t in = engines(v, 2);
    eval_result_t r;
    demand_evaluate_inputs(&c, &in, NULL, 101 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_UNAVAILABLE);
    assert_true(r.pending);
    assert_non_null(strstr(r.message, "vllm b: waiting for the first poll (started "));
    v[1].state = DEMAND_SOURCE_NOT_STARTED;
    v[1].name = "http://b/metrics";
    demand_evaluate_inputs(&c, &in, NULL, 101 * SEC, NULL, &r);
    assert_true(r.pending);
    assert_string_equal(r.message,
                        "http://b/metrics: waiting for the first poll (not started yet)");
    c = vllm_queue("ignore");
    demand_evaluate_inputs(&c, &in, NULL, 101 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_OK);
    NEAR(r.value, 3);
}

static void test_demand_inputs_missing_gauge_is_failed_precondition(void **state) {
    (void)state;
    trigger_config_t c = vllm_queue(NULL);
    demand_source_t v[2] = {reading("vllm a", 3, 1, 10), reading("vllm b", 4, 0, 20)};
    v[0].reading.has_waiting = false;
    demand_inputs_t in = engines(v, 2);
    eval_result_t r;
    demand_evaluate_inputs(&c, &in, NULL, 101 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_FAILED_PRECONDITION);
    assert_string_equal(r.message,
                        "vllm a does not export the waiting-requests gauge (is it vllm, and "
                        "is the URL its metrics endpoint?)");
    c = vllm_queue("ignore");
    demand_evaluate_inputs(&c, &in, NULL, 101 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_OK);
    NEAR(r.value, 4);
}

/* A model filter the page's series do not carry: the error lists the
 * model names the page has (the most common real mistake). */
static void test_demand_inputs_model_filter_lists_the_pages_models(void **state) {
    (void)state;
    trigger_config_t c = vllm_queue(NULL);
    snprintf(c.demand.model, sizeof c.demand.model, "llama-3-8b");
    demand_source_t v[1] = {reading("vllm a", 0, 0, 10)};
    v[0].reading.has_waiting = false;
    snprintf(v[0].reading.other_models, sizeof v[0].reading.other_models,
             "meta-llama/Llama-3.1-8B-Instruct");
    demand_inputs_t in = engines(v, 1);
    eval_result_t r;
    demand_evaluate_inputs(&c, &in, NULL, 101 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_FAILED_PRECONDITION);
    assert_string_equal(r.message,
                        "vllm a does not export the waiting-requests gauge for model "
                        "\"llama-3-8b\": no series carries that model name; the page's model "
                        "names: meta-llama/Llama-3.1-8B-Instruct (the trigger's `model` must "
                        "match one exactly)");
}

/* An EPP pod's reading: its own flow-control queue, and the pool's counts
 * it computes from the model servers like every other EPP replica. */
static demand_source_t epp_pod(const char *name, double flow, double ready, double pool_waiting,
                               double pool_running, double pool_kv) {
    demand_source_t v = reading(name, flow, 0, 0);
    v.reading.has_pool = true;
    v.reading.pool_ready = ready;
    v.reading.pool_waiting = pool_waiting;
    v.reading.pool_running = pool_running;
    v.reading.pool_kv_percent = pool_kv;
    return v;
}

/* Two EPP replicas: their queues add (each holds its own requests), the
 * pool gauges are the same servers seen twice and are maxed (they can
 * differ by a refresh: the larger is the newer load, never the sum). */
static void test_demand_inputs_epp_pods_sum_queues_and_max_pool_gauges(void **state) {
    (void)state;
    demand_source_t v[2] = {epp_pod("epp pod ml/epp-0", 3, 4, 10, 24, 180),
                            epp_pod("epp pod ml/epp-1", 2, 4, 8, 20, 170)};
    demand_inputs_t in = engines(v, 2);
    eval_result_t r;
    trigger_config_t c =
        CFG("metricType", "engine_queue", "engine", "epp", "targetValue", "5", "engineEndpoint",
            "http://epp-0:9090/metrics,http://epp-1:9090/metrics");
    demand_evaluate_inputs(&c, &in, NULL, 101 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_OK);
    NEAR(r.value, 3 + 2 + 10); /* gateway queues summed + the servers' waiting, once */
    assert_true(r.active);
    assert_int_equal(r.inputs, 2);
    c = CFG("metricType", "engine_running", "engine", "epp", "targetValue", "8", "engineEndpoint",
            "http://epp-0:9090/metrics,http://epp-1:9090/metrics");
    demand_evaluate_inputs(&c, &in, NULL, 101 * SEC, NULL, &r);
    NEAR(r.value, 24);
    c = CFG("metricType", "engine_kv_cache", "engine", "epp", "targetValue", "70", "engineEndpoint",
            "http://epp-0:9090/metrics,http://epp-1:9090/metrics");
    demand_evaluate_inputs(&c, &in, NULL, 101 * SEC, NULL, &r);
    NEAR(r.value, 180);
    /* demand: max(15 / 5, 24 / 8, 180 / 90) = 3 -> 300 */
    c = CFG("metricType", "demand", "engine", "epp", "targetQueuePerReplica", "5",
            "targetRunningPerReplica", "8", "targetKvCache", "90", "engineEndpoint",
            "http://epp-0:9090/metrics,http://epp-1:9090/metrics");
    demand_evaluate_inputs(&c, &in, NULL, 101 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_OK);
    NEAR(r.value, 300);
    /* Scale from zero: no model server ready, the gateway holds 4: active. */
    v[0] = epp_pod("epp pod ml/epp-0", 4, 0, 0, 0, 0);
    v[1] = epp_pod("epp pod ml/epp-1", 0, 0, 0, 0, 0);
    c = CFG("metricType", "engine_queue", "engine", "epp", "targetValue", "5", "engineEndpoint",
            "http://epp-0:9090/metrics,http://epp-1:9090/metrics");
    demand_evaluate_inputs(&c, &in, NULL, 101 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_OK);
    NEAR(r.value, 4);
    assert_true(r.active);
    /* idle: a known 0, inactive */
    v[0] = epp_pod("epp pod ml/epp-0", 0, 0, 0, 0, 0);
    demand_evaluate_inputs(&c, &in, NULL, 101 * SEC, NULL, &r);
    NEAR(r.value, 0);
    assert_false(r.active);
    /* an EPP scrape with neither family names the EPP's metrics */
    v[1].reading.has_waiting = false;
    demand_evaluate_inputs(&c, &in, NULL, 101 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_FAILED_PRECONDITION);
    assert_non_null(strstr(r.message, "epp pod ml/epp-1 does not export the flow-control queue "
                                      "(llm_d_epp_flow_control_queue_size"));
    assert_non_null(strstr(r.message, "llm_d_epp_ready_endpoints with "
                                      "llm_d_epp_average_queue_size"));
    assert_non_null(strstr(r.message, "(is it epp, and is the URL its metrics endpoint?)"));
}

static void test_demand_inputs_triton_rates_wait_for_a_second_poll(void **state) {
    (void)state;
    trigger_config_t c = CFG("metricType", "triton_request_rate", "targetValue", "50",
                             "tritonEndpoint", "http://t/metrics");
    demand_source_t v[1] = {reading("triton t", 0, 0, 0)};
    v[0].reading.has_triton = true;
    demand_inputs_t in = engines(v, 1);
    eval_result_t r;
    demand_evaluate_inputs(&c, &in, NULL, 101 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_UNAVAILABLE);
    assert_true(r.pending);
    assert_string_equal(r.message, "triton t: collecting a second poll to compute rates");
    v[0].rates_known = true;
    v[0].success_delta = 100;
    v[0].queue_us_delta = 5000;
    v[0].span_s = 10;
    demand_evaluate_inputs(&c, &in, NULL, 101 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_OK);
    NEAR(r.value, 10);
}

static void test_demand_inputs_pods_and_queue_errors(void **state) {
    (void)state;
    trigger_config_t c = CFG("metricType", "queue_length", "targetValue", "5", "redisAddress",
                             "r:6379", "redisListName", "q");
    demand_inputs_t in = engines(NULL, 0);
    in.has_queue_source = true;
    in.queue = reading("redis r:6379 list q", 0, 0, 0);
    in.queue.queue = 9;
    eval_result_t r;
    demand_evaluate_inputs(&c, &in, NULL, 101 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_OK);
    NEAR(r.value, 9);
    in.queue.state = DEMAND_SOURCE_WAITING;
    in.queue.created = 101 * SEC;
    demand_evaluate_inputs(&c, &in, NULL, 101 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_UNAVAILABLE);
    assert_true(r.pending);
    in.queue.state = DEMAND_SOURCE_NOT_CREATED;
    in.queue.name = "queue";
    in.queue.error = "out of memory";
    demand_evaluate_inputs(&c, &in, NULL, 101 * SEC, NULL, &r);
    assert_string_equal(r.message, "queue: out of memory");
    assert_false(r.pending);
    in.pods_status = EVAL_UNAVAILABLE;
    snprintf(in.pods_error, sizeof in.pods_error, "pod list not synced: 403");
    demand_evaluate_inputs(&c, &in, NULL, 101 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_UNAVAILABLE);
    assert_string_equal(r.message, "engine pods: pod list not synced: 403");
    in.pods_status = EVAL_FAILED_PRECONDITION;
    snprintf(in.pods_error, sizeof in.pods_error, "needs the aggregator role");
    demand_evaluate_inputs(&c, &in, NULL, 101 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_FAILED_PRECONDITION);
    assert_string_equal(r.message, "needs the aggregator role");
}

/* ---- demandModel: queueing (docs/configuration.md, "The queueing model") ------- */

static demand_source_t counted(const char *name, mono_ns_t at, double completed, double running) {
    demand_source_t v = reading(name, 0, running, 0);
    v.last_ok = at;
    v.reading.has_completed = true;
    v.reading.completed_total = completed;
    return v;
}

static demand_source_t queue_reading(mono_ns_t at, double len) {
    demand_source_t q;
    memset(&q, 0, sizeof q);
    q.state = DEMAND_SOURCE_READING;
    q.name = "queue";
    q.last_ok = at;
    q.interval_ns = 1 * SEC;
    q.timeout_ns = 2 * SEC;
    q.queue = len;
    return q;
}

/* Example 1: 40 requests in Redis, no pods, nothing learned: capacity the
 * 1 request/s prior, so a new replica clears its share over a cold start
 * (the 120 s prior), not the drain target: 40 / (1 x 120) = 0.33, and work
 * waits: 1 replica. 400 queued: 3.33. */
static void test_queueing_example_wake_from_zero(void **state) {
    (void)state;
    trigger_config_t c = CFG("metricType", "demand", "engine", "vllm", "podSelector", "app=llama",
                             "redisAddress", "r:6379", "redisListName", "q");
    assert_int_equal(c.demand.sizing, DEMAND_MODEL_QUEUEING);
    demand_model_state_t st;
    demand_model_init(&st);
    demand_inputs_t in = engines(NULL, 0);
    demand_learned_t learned = {NULL, NULL, NULL};
    in.has_queue_source = true;
    in.queue = queue_reading(100 * SEC, 40);
    in.has_pods = true; /* the pod list: no pods */
    learned.model = &st;
    demand_view_t view;
    demand_view_init(&view);
    learned.view = &view;
    eval_result_t r;
    demand_evaluate_inputs(&c, &in, &learned, 100 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_OK);
    NEAR(r.value, 100);
    assert_true(r.active);
    /* the decision view: the model decided, from a queue of 40 */
    assert_int_equal(view.decided_by, DSIG_QUEUEING_MODEL);
    NEAR(view.need[DSIG_QUEUEING_MODEL], 1);
    NEAR(view.signal[DSIG_QUEUE_SOURCE], 40);
    NEAR(view.signal[DSIG_QUEUE], 40);
    assert_true(view.has_pods);
    assert_int_equal(view.engines, 0);
    assert_int_equal(st.last.lambda_from, QM_FROM_PRIOR);
    assert_int_equal(st.last.capacity_from, QM_FROM_PRIOR);
    assert_int_equal(st.last.cold_start_from, QM_FROM_PRIOR);
    NEAR(st.last.deficit, 40);
    NEAR(st.last.need, 1);
    demand_model_state_t st2;
    demand_model_init(&st2);
    learned.model = &st2;
    in.queue = queue_reading(100 * SEC, 400);
    demand_evaluate_inputs(&c, &in, &learned, 100 * SEC, NULL, &r);
    NEAR(r.value, 100 * 400.0 / 120);
    learned.model = &st;
    /* the queue empties: nothing asks any more, but the keep-alive holds
     * the replica that was asked for (no gap seen yet: K is three prior
     * cold starts), and the trigger stays active while it does */
    in.queue = queue_reading(101 * SEC, 0);
    demand_evaluate_inputs(&c, &in, &learned, 101 * SEC, NULL, &r);
    NEAR(st.last.need, 0);
    NEAR(st.last.held, 1);
    NEAR(st.last.keepalive_s, 3 * QUEUE_MODEL_PRIOR_COLD_START_S);
    assert_true(r.active);
    in.queue = queue_reading(100 * SEC + 362 * SEC, 0);
    demand_evaluate_inputs(&c, &in, &learned, 100 * SEC + 362 * SEC, NULL, &r);
    NEAR(r.value, 0);
    assert_false(r.active);
    demand_view_free(&view);
}

/* The engine URL of a workload at zero (a Service with no ready pod) does
 * not answer: with a queue, that is "no replica serving", never an error
 * that silences the queue (docs/configuration.md, "Activity (0 <-> 1)"). */
static demand_source_t down(const char *name, demand_fail_t fail, const char *error) {
    demand_source_t v;
    memset(&v, 0, sizeof v);
    v.state = DEMAND_SOURCE_FAILED;
    v.name = name;
    v.fail = fail;
    v.error = error;
    return v;
}

static trigger_config_t vllm_url_and_queue(void) {
    return CFG("metricType", "demand", "engine", "vllm", "vllmEndpoint",
               "http://llama.ml:8000/metrics", "redisAddress", "r:6379", "redisListName", "q");
}

static void test_queue_wakes_whatever_the_engine_url_says(void **state) {
    (void)state;
    trigger_config_t c = vllm_url_and_queue();
    const struct {
        demand_fail_t fail;
        const char *error;
    } absent[] = {
        {DEMAND_FAIL_NO_SERVER, "connect 10.96.0.7:8000: Connection refused"},
        {DEMAND_FAIL_NO_SERVER, "10.96.0.7:8000: timed out after 2s (connecting)"},
        {DEMAND_FAIL_NO_SERVER, "HTTP 503 (want 200): no server behind the address"},
        {DEMAND_FAIL_SLOW, "10.96.0.7:8000: timed out after 2s (reading the response)"},
    };
    for (size_t i = 0; i < sizeof absent / sizeof *absent; i++) {
        demand_source_t v[1] = {down("vllm llama", absent[i].fail, absent[i].error)};
        demand_inputs_t in = engines(v, 1);
        in.has_queue_source = true;
        in.queue = queue_reading(100 * SEC, 5);
        eval_result_t r;
        demand_evaluate_inputs(&c, &in, NULL, 100 * SEC, NULL, &r);
        assert_int_equal(r.status, EVAL_OK);
        assert_true(r.active);
        /* the first wake, nothing learned: 5 / (1 request/s x 10 s) = 0.5,
         * and at least one replica while work waits */
        NEAR(r.value, 100);
        assert_int_equal(r.inputs, 0);
        /* nothing queued: 0, inactive, and that is an answer */
        in.queue = queue_reading(101 * SEC, 0);
        demand_evaluate_inputs(&c, &in, NULL, 101 * SEC, NULL, &r);
        assert_int_equal(r.status, EVAL_OK);
        assert_false(r.active);
        NEAR(r.value, 0);
        /* without a queue nothing else speaks: the failure stays one */
        in.has_queue_source = false;
        demand_evaluate_inputs(&c, &in, NULL, 101 * SEC, NULL, &r);
        assert_int_equal(r.status, EVAL_UNAVAILABLE);
        assert_false(r.wake);
    }
}

/* An engine that held work and stopped answering in time, or one that
 * answers wrong: the value is unknown (UNAVAILABLE), yet a queue with work
 * still says active (wake), and an empty queue says nothing. */
static void test_engine_failures_keep_the_value_unknown_but_the_queue_wakes(void **state) {
    (void)state;
    trigger_config_t c = vllm_url_and_queue();
    demand_source_t busy = down("vllm llama", DEMAND_FAIL_SLOW, "timed out (reading the response)");
    busy.answered = busy.last_busy = true;
    demand_source_t wrong = down("vllm llama", DEMAND_FAIL_OTHER, "HTTP 404 (want 200)");
    demand_source_t pending;
    memset(&pending, 0, sizeof pending);
    pending.state = DEMAND_SOURCE_WAITING;
    pending.name = "vllm llama";
    pending.created = 100 * SEC;
    const demand_source_t *cases[] = {&busy, &wrong, &pending};
    for (size_t i = 0; i < 3; i++) {
        demand_inputs_t in = engines(cases[i], 1);
        in.has_queue_source = true;
        in.queue = queue_reading(100 * SEC, 5);
        eval_result_t r;
        demand_evaluate_inputs(&c, &in, NULL, 100 * SEC, NULL, &r);
        assert_int_equal(r.status, EVAL_UNAVAILABLE);
        assert_non_null(strstr(r.message, "vllm llama: "));
        assert_true(r.wake);
        assert_int_equal(r.pending, cases[i] == &pending);
        in.queue = queue_reading(100 * SEC, 0);
        demand_evaluate_inputs(&c, &in, NULL, 100 * SEC, NULL, &r);
        assert_int_equal(r.status, EVAL_UNAVAILABLE);
        assert_false(r.wake);
        /* a queue that cannot be read wakes nothing */
        in.queue = queue_reading(100 * SEC, 5);
        in.queue.state = DEMAND_SOURCE_FAILED;
        in.queue.error = "connect: Connection refused";
        demand_evaluate_inputs(&c, &in, NULL, 100 * SEC, NULL, &r);
        assert_int_equal(r.status, EVAL_UNAVAILABLE);
        assert_false(r.wake);
    }
    /* activationQueue: work at or under it wakes nothing */
    c = CFG("metricType", "demand", "engine", "vllm", "vllmEndpoint",
            "http://llama.ml:8000/metrics", "redisAddress", "r:6379", "redisListName", "q",
            "activationQueue", "5");
    demand_inputs_t in = engines(&wrong, 1);
    in.has_queue_source = true;
    in.queue = queue_reading(100 * SEC, 5);
    eval_result_t r;
    demand_evaluate_inputs(&c, &in, NULL, 100 * SEC, NULL, &r);
    assert_false(r.wake);
    in.queue = queue_reading(100 * SEC, 6);
    demand_evaluate_inputs(&c, &in, NULL, 100 * SEC, NULL, &r);
    assert_true(r.wake);
}

/* Near zero: one replica serves, the slot of another is not there. The
 * one that answers is the fleet; the other is no replica, not a failure. */
static void test_engine_not_there_beside_one_that_serves(void **state) {
    (void)state;
    trigger_config_t c = CFG("metricType", "demand", "engine", "vllm", "vllmEndpoint",
                             "http://a/metrics,http://b/metrics", "redisAddress", "r:6379",
                             "redisListName", "q", "targetQueuePerReplica", "4");
    demand_source_t v[2] = {reading("vllm a", 3, 2, 10),
                            down("vllm b", DEMAND_FAIL_NO_SERVER, "connect: Connection refused")};
    demand_inputs_t in = engines(v, 2);
    in.has_queue_source = true;
    in.queue = queue_reading(101 * SEC, 5);
    eval_result_t r;
    demand_evaluate_inputs(&c, &in, NULL, 101 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_OK);
    NEAR(r.value, 100.0 * (5 + 3) / 4);
    assert_int_equal(r.inputs, 1);
}

/* Example 2: capacityPerReplica 2, coldStartSeconds 90, 4 engines, 180
 * completions in 30 s: lambda 6, plus sqrt(6 / 10) = 0.77 of headroom,
 * (6 + 0.77) / 2 = 3.39, nothing waits: 4 replicas. */
static void test_queueing_example_steady_fleet(void **state) {
    (void)state;
    trigger_config_t c = CFG("metricType", "demand", "engine", "vllm", "vllmEndpoint",
                             "http://a/metrics,http://b/metrics,http://c/metrics,http://d/metrics",
                             "capacityPerReplica", "2", "coldStartSeconds", "90");
    demand_model_state_t st;
    demand_model_init(&st);
    demand_source_t v[4];
    static const char *const names[] = {"http://a/metrics", "http://b/metrics", "http://c/metrics",
                                        "http://d/metrics"};
    for (int i = 0; i < 4; i++)
        v[i] = counted(names[i], 100 * SEC, 100, 2);
    demand_inputs_t in = engines(v, 4);
    demand_learned_t learned = {NULL, NULL, NULL};
    learned.model = &st;
    eval_result_t r;
    demand_evaluate_inputs(&c, &in, &learned, 100 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_OK);
    /* a read between two polls feeds nothing */
    demand_evaluate_inputs(&c, &in, &learned, 100 * SEC + SEC / 2, NULL, &r);
    for (int i = 0; i < 4; i++)
        v[i] = counted(names[i], 130 * SEC, 145, 2);
    demand_evaluate_inputs(&c, &in, &learned, 130 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_OK);
    NEAR(st.last.lambda_rps, 6);
    assert_int_equal(st.last.lambda_from, QM_FROM_LEARNED);
    assert_int_equal(st.last.capacity_from, QM_FROM_OVERRIDE);
    NEAR(st.last.headroom_rps, sqrt(0.6));
    NEAR(st.last.steady, (6 + sqrt(0.6)) / 2);
    NEAR(st.last.deficit, 0);
    /* the rate rose from nothing over the last minute: no Ready replica is
     * released while arrivals rise, so 4 (the load alone would round to 4
     * too) */
    NEAR(st.last.need, 4);
    NEAR(r.value, 400);
    assert_int_equal(st.last_ready, 4);
    assert_true(r.active); /* requests run */
}

/* A Service URL answered by two replicas in turn (kube-proxy picks one
 * per connection): replica A has completed 1000, replica B 400, each 1/s.
 * Their counters do not continue each other's: told apart by
 * process_start_time_seconds, no interval between them teaches a rate (it
 * once read +600 completions in a second); the intervals A -> A do. */
static void test_queueing_a_service_url_answered_by_two_replicas(void **state) {
    (void)state;
    trigger_config_t c =
        CFG("metricType", "demand", "engine", "vllm", "vllmEndpoint",
            "http://llama.ml:8000/metrics", "capacityPerReplica", "2", "coldStartSeconds", "90");
    demand_model_state_t st;
    demand_model_init(&st);
    demand_source_t v[1];
    double a = 1000, b = 400;
    for (int t = 100; t <= 160; t++) {
        bool from_a = (t / 3) % 2 == 0; /* three polls each, in turn */
        v[0] = counted("http://llama.ml:8000/metrics", (mono_ns_t)t * SEC, from_a ? a : b, 1);
        v[0].reading.has_start = true;
        v[0].reading.start_time_s = from_a ? 1.7e9 : 1.7e9 + 42;
        demand_inputs_t in = engines(v, 1);
        demand_learned_t learned = {NULL, NULL, NULL};
        learned.model = &st;
        eval_result_t r;
        demand_evaluate_inputs(&c, &in, &learned, (mono_ns_t)t * SEC, NULL, &r);
        assert_int_equal(r.status, EVAL_OK);
        a += 1;
        b += 1;
    }
    /* each replica completes 1/s: what the URL shows is one of them at a
     * time, never the jump between them */
    assert_true(st.last.lambda_rps <= 1.5);
}

/* The same URL once the hub has seen a process answer again after another
 * (taking_turns): one replica's counters are never the fleet's rate, even
 * between two polls of one process, so the model learns no rate from them;
 * the view names the URL. Without the mark, two polls of one replica in a
 * row teach its rate (1/s) as the fleet's (2/s). */
static void test_queueing_a_url_taking_turns_teaches_no_rate(void **state) {
    (void)state;
    trigger_config_t c =
        CFG("metricType", "demand", "engine", "vllm", "vllmEndpoint",
            "http://llama.ml:8000/metrics", "capacityPerReplica", "2", "coldStartSeconds", "90");
    for (int turns = 0; turns <= 1; turns++) {
        demand_model_state_t st;
        demand_model_init(&st);
        demand_view_t view;
        demand_view_init(&view);
        demand_source_t v[1];
        for (int t = 100; t <= 160; t++) {
            v[0] = counted("http://llama.ml:8000/metrics", (mono_ns_t)t * SEC, 1000 + t, 1);
            v[0].reading.has_start = true;
            v[0].reading.start_time_s = 1.7e9;
            v[0].taking_turns = turns;
            demand_inputs_t in = engines(v, 1);
            demand_learned_t learned = {NULL, NULL, NULL};
            learned.model = &st;
            learned.view = &view;
            eval_result_t r;
            demand_evaluate_inputs(&c, &in, &learned, (mono_ns_t)t * SEC, NULL, &r);
            assert_int_equal(r.status, EVAL_OK);
        }
        if (turns) {
            assert_int_equal(st.last.lambda_from, QM_FROM_PRIOR);
            assert_int_equal(view.taking_turns, 1);
            assert_string_equal(view.taking_turns_at, "http://llama.ml:8000/metrics");
        } else {
            assert_int_equal(st.last.lambda_from, QM_FROM_LEARNED);
            NEAR(st.last.lambda_rps, 1);
            assert_int_equal(view.taking_turns, 0);
            assert_null(view.taking_turns_at);
        }
        demand_view_free(&view);
    }
}

/* Example 3: the same lambda, capacity and cold start, 2 Ready and 2
 * starting (30 s and 60 s old: Ready in 60 s and 30 s), 100 in Redis. The
 * backlog, projected: +2/s for 30 s (160), flat for 30 s, -2/s for 40 s:
 * 80 left at 100 s (a cold start and the drain target). Both starting pods
 * find work when Ready: kept; 80 / (2 x 10) = 4 more: 8 replicas. */
static void test_queueing_example_starting_pods_count(void **state) {
    (void)state;
    trigger_config_t c =
        CFG("metricType", "demand", "engine", "vllm", "podSelector", "app=llama", "redisAddress",
            "r:6379", "redisListName", "q", "capacityPerReplica", "2", "coldStartSeconds", "90");
    demand_model_state_t st;
    demand_model_init(&st);
    demand_source_t v[2] = {counted("a", 100 * SEC, 100, 2), counted("b", 100 * SEC, 100, 2)};
    demand_pod_t pods[4] = {{1, true, 600}, {2, true, 500}, {3, false, 0}, {4, false, 30}};
    demand_inputs_t in = engines(v, 2);
    demand_learned_t learned = {NULL, NULL, NULL};
    in.has_queue_source = true;
    in.queue = queue_reading(100 * SEC, 100);
    in.has_pods = true;
    in.pods = pods;
    in.npods = 4;
    learned.model = &st;
    eval_result_t r;
    demand_evaluate_inputs(&c, &in, &learned, 100 * SEC, NULL, &r);
    v[0] = counted("a", 130 * SEC, 190, 2);
    v[1] = counted("b", 130 * SEC, 190, 2);
    in.queue = queue_reading(130 * SEC, 100);
    pods[2].age_s = 30;
    pods[3].age_s = 60;
    demand_evaluate_inputs(&c, &in, &learned, 130 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_OK);
    NEAR(st.last.lambda_rps, 6);
    NEAR(st.last.backlog, 100);
    assert_int_equal(st.last.kept_starting, 2);
    NEAR(st.last.deficit, 80);
    NEAR(st.last.ordered, 4);
    NEAR(r.value, 800);
    assert_int_equal(st.last_ready, 2);
    assert_int_equal(st.last_starting, 2);
}

/* Example 4: a queue alone, capacityPerReplica 5, 0 -> 30 in 10 s with
 * nothing Ready: those 10 s are all the history there is, so the rate is
 * 30 / 30 s = 1/s (history that is not there counts as none: one burst is
 * a backlog); T the 120 s prior: 30 + 130 x 1 = 160 waiting when a new
 * replica has drained 10 s, / (5 x 10) = 3.2, plus the load (1 + 0.32) / 5
 * = 0.26: 3.46, so 4 replicas. */
static void test_queueing_example_queue_alone(void **state) {
    (void)state;
    trigger_config_t c = CFG("metricType", "demand", "redisAddress", "r:6379", "redisListName", "q",
                             "capacityPerReplica", "5");
    demand_model_state_t st;
    demand_model_init(&st);
    demand_inputs_t in = engines(NULL, 0);
    demand_learned_t learned = {NULL, NULL, NULL};
    in.has_queue_source = true;
    in.queue = queue_reading(100 * SEC, 0);
    learned.model = &st;
    eval_result_t r;
    demand_evaluate_inputs(&c, &in, &learned, 100 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_OK);
    NEAR(r.value, 0);
    assert_false(r.active);
    in.queue = queue_reading(110 * SEC, 30);
    demand_evaluate_inputs(&c, &in, &learned, 110 * SEC, NULL, &r);
    NEAR(st.last.lambda_rps, 1);
    assert_int_equal(st.last.cold_start_from, QM_FROM_PRIOR);
    assert_false(st.last_has_counters);
    NEAR(st.last.deficit, 160);
    NEAR(r.value, 100 * (3.2 + (1 + sqrt(0.1)) / 5));
    assert_true(r.active);
}

/* The cold start is learned from the pod list: a pod seen starting and then
 * Ready at age 95 s gives T = 95; one Ready at first sight gives nothing. */
static void test_queueing_learns_the_cold_start_from_the_pod_list(void **state) {
    (void)state;
    trigger_config_t c = CFG("metricType", "demand", "engine", "vllm", "podSelector", "app=llama");
    demand_model_state_t st;
    demand_model_init(&st);
    demand_source_t v[1] = {counted("a", 100 * SEC, 10, 1)};
    demand_pod_t pods[2] = {{1, true, 4000}, {2, false, 5}};
    demand_inputs_t in = engines(v, 1);
    demand_learned_t learned = {NULL, NULL, NULL};
    in.has_pods = true;
    in.pods = pods;
    in.npods = 2;
    learned.model = &st;
    eval_result_t r;
    demand_evaluate_inputs(&c, &in, &learned, 100 * SEC, NULL, &r);
    assert_int_equal(st.last.cold_start_from, QM_FROM_PRIOR);
    NEAR(st.last.cold_start_s, QUEUE_MODEL_PRIOR_COLD_START_S);
    pods[1].ready = true;
    pods[1].age_s = 95;
    v[0] = counted("a", 190 * SEC, 20, 1);
    demand_evaluate_inputs(&c, &in, &learned, 190 * SEC, NULL, &r);
    assert_int_equal(st.last.cold_start_from, QM_FROM_LEARNED);
    NEAR(st.last.cold_start_s, 95);
    /* seen once: a later read does not observe it again */
    v[0] = counted("a", 191 * SEC, 21, 1);
    pods[1].age_s = 96;
    demand_evaluate_inputs(&c, &in, &learned, 191 * SEC, NULL, &r);
    NEAR(st.last.cold_start_s, 95);
}

/* The cold start by stage through the pod list (issue 33): a pod seen
 * loading its weights, then Ready with its start told by stage (node 2 s,
 * image 40 s, weights 30 s: it found a node up) teaches a cold start of
 * 70 s for the next pod, image and weights; once a pod of the workload
 * waits for a node, the node stage is paid too. */
static void test_queueing_learns_the_cold_start_by_stage(void **state) {
    (void)state;
    trigger_config_t c = CFG("metricType", "demand", "engine", "vllm", "podSelector", "app=llama");
    demand_model_state_t st;
    demand_model_init(&st);
    demand_source_t v[1] = {counted("a", 100 * SEC, 10, 1)};
    demand_pod_t pods[2] = {{1, true, 4000}, {2, false, 50}};
    pods[1].start.stage = QM_STAGE_WEIGHTS;
    pods[1].start.stage_age_s = 8;
    demand_inputs_t in = engines(v, 1);
    demand_learned_t learned = {NULL, NULL, NULL};
    in.has_pods = true;
    in.pods = pods;
    in.npods = 2;
    learned.model = &st;
    eval_result_t r;
    demand_evaluate_inputs(&c, &in, &learned, 100 * SEC, NULL, &r);
    assert_int_equal(st.last.cold_start_stages, 0);
    pods[1] = (demand_pod_t){
        .id = 2, .ready = true, .age_s = 72, .start = {.has_stages = true, .stage_s = {2, 40, 30}}};
    v[0] = counted("a", 122 * SEC, 20, 1);
    demand_evaluate_inputs(&c, &in, &learned, 122 * SEC, NULL, &r);
    assert_int_equal(st.last.cold_start_from, QM_FROM_LEARNED);
    assert_int_equal(st.last.cold_start_stages, 1);
    NEAR(st.last.cold_start_s, 70);
    demand_pod_t more[3] = {
        pods[0],
        pods[1],
        {.id = 3,
         .age_s = 20,
         .start = {.stage = QM_STAGE_NODE, .stage_age_s = 20, .waiting_for_node = true}}};
    in.pods = more;
    in.npods = 3;
    v[0] = counted("a", 123 * SEC, 21, 1);
    demand_evaluate_inputs(&c, &in, &learned, 123 * SEC, NULL, &r);
    assert_int_equal(st.last.cold_start_stages, 2);
    NEAR(st.last.cold_start_s, 72);
}

/* A draining pod (deleted, finishing its requests) is read while it
 * answers; once it stops answering that is not a failure. */
static void test_queueing_reads_draining_pods_and_ignores_their_end(void **state) {
    (void)state;
    trigger_config_t c = CFG("metricType", "demand", "engine", "vllm", "podSelector", "app=llama",
                             "capacityPerReplica", "2", "coldStartSeconds", "90");
    demand_model_state_t st;
    demand_model_init(&st);
    demand_source_t v[2] = {counted("ml/a", 100 * SEC, 1000, 1),
                            counted("ml/b", 100 * SEC, 500, 3)};
    v[1].draining = true;
    demand_pod_t pods[1] = {{1, true, 900}};
    demand_inputs_t in = engines(v, 2);
    demand_learned_t learned = {NULL, NULL, NULL};
    in.has_pods = true;
    in.pods = pods;
    in.npods = 1;
    learned.model = &st;
    eval_result_t r;
    demand_evaluate_inputs(&c, &in, &learned, 100 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_OK);
    assert_int_equal(st.last_ready, 1); /* the draining pod is not capacity */
    v[0] = counted("ml/a", 110 * SEC, 1020, 1);
    v[1] = counted("ml/b", 110 * SEC, 503, 0);
    v[1].draining = true;
    demand_evaluate_inputs(&c, &in, &learned, 110 * SEC, NULL, &r);
    /* 23 done, present 4 -> 1: 20 arrived in the 10 s of history there is,
     * over the 30 s window */
    NEAR(st.last.lambda_rps, 20.0 / 30);
    /* its engine stopped: skipped, the answer stays OK */
    v[1].state = DEMAND_SOURCE_FAILED;
    v[1].error = "connection refused";
    demand_evaluate_inputs(&c, &in, &learned, 111 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_OK);
    assert_int_equal(r.inputs, 1);
}

/* An engine without the counters (an older vLLM): never 0 for unknown, the
 * fleet is still sized (on the backlog) and the answer is OK. */
static void test_queueing_engine_without_counters(void **state) {
    (void)state;
    trigger_config_t c =
        CFG("metricType", "demand", "engine", "vllm", "vllmEndpoint", "http://a/metrics");
    demand_model_state_t st;
    demand_model_init(&st);
    demand_source_t v[1] = {reading("a", 30, 4, 50)};
    demand_inputs_t in = engines(v, 1);
    demand_learned_t learned = {NULL, NULL, NULL};
    learned.model = &st;
    eval_result_t r;
    demand_evaluate_inputs(&c, &in, &learned, 101 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_OK);
    assert_false(st.last_has_counters);
    assert_true(r.value >= 100); /* 30 waiting: at least one replica */
    assert_true(r.active);
}

/* Values that are not counts, and sums that overflow a double: errors that
 * name the source or the signal, never +Inf (sent on as INT64_MAX: scale to
 * the maximum) or a negative queue. */
static void test_demand_inputs_refuse_non_finite_sums_and_negative_counts(void **state) {
    (void)state;
    trigger_config_t c = vllm_queue(NULL);
    eval_result_t r;
    /* each engine's waiting is finite; their sum is not */
    demand_source_t v[2] = {reading("vllm a", 1e308, 0, 0), reading("vllm b", 1e308, 0, 0)};
    demand_inputs_t in = engines(v, 2);
    demand_evaluate_inputs(&c, &in, NULL, 101 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_UNAVAILABLE);
    assert_string_equal(r.message, "the waiting requests summed over 2 engine endpoints are not "
                                   "finite (the engines' values overflow)");
    /* a negative gauge is named with its source */
    v[0] = reading("vllm a", 3, 0, 0);
    v[1] = reading("vllm b", -5, 0, 0);
    demand_evaluate_inputs(&c, &in, NULL, 101 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_UNAVAILABLE);
    assert_non_null(strstr(r.message, "vllm b: the waiting-requests gauge is not a count"));
    v[1] = reading("vllm b", 4, 0, 0);
    v[1].reading.kv_percent = INFINITY;
    demand_evaluate_inputs(&c, &in, NULL, 101 * SEC, NULL, &r);
    assert_non_null(strstr(r.message, "vllm b: the KV-cache usage gauge is not a count"));
    /* a queue: a negative length names the queue source */
    trigger_config_t q = CFG("metricType", "queue_length", "targetValue", "5", "redisAddress",
                             "r:6379", "redisListName", "q");
    demand_inputs_t qi = engines(NULL, 0);
    qi.has_queue_source = true;
    qi.queue = reading("redis r:6379 list q", 0, 0, 0);
    qi.queue.queue = -5;
    demand_evaluate_inputs(&q, &qi, NULL, 101 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_UNAVAILABLE);
    assert_string_equal(r.message, "redis r:6379 list q: a queue length of -5 is not a count");
    qi.queue.queue = NAN;
    demand_evaluate_inputs(&q, &qi, NULL, 101 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_UNAVAILABLE);
}

static void test_demand_evaluate_refuses_a_value_that_is_not_finite(void **state) {
    (void)state;
    eval_result_t r;
    /* composite: finite signals whose ratio overflows */
    trigger_config_t c = CFG("metricType", "demand", "engine", "vllm", "podSelector", "app=v",
                             "targetQueuePerReplica", "0.001");
    demand_signals_t s = {.has_engine = true, .waiting = 1e306};
    demand_evaluate(&c, &s, NULL, &r);
    assert_int_equal(r.status, EVAL_UNAVAILABLE);
    assert_non_null(strstr(r.message, "not finite"));
    /* a single signal that is itself not finite */
    trigger_config_t e = CFG("metricType", "engine_queue", "engine", "vllm", "targetValue", "5",
                             "engineEndpoint", "http://a/metrics");
    demand_signals_t w = {.has_engine = true, .waiting = INFINITY};
    demand_evaluate(&e, &w, NULL, &r);
    assert_int_equal(r.status, EVAL_UNAVAILABLE);
    assert_string_equal(r.message,
                        "metricType engine_queue: the value computed from the signals is not "
                        "finite");
}

/* The queueing model on a finite queue so long that the replicas it needs
 * overflow a double: an error naming the model, never +Inf as a value. */
static void test_queueing_replicas_that_overflow_are_an_error(void **state) {
    (void)state;
    trigger_config_t c = CFG("metricType", "demand", "redisAddress", "r:6379", "redisListName", "q",
                             "capacityPerReplica", "0.001");
    demand_model_state_t st;
    demand_model_init(&st);
    demand_inputs_t in = engines(NULL, 0);
    demand_learned_t learned = {NULL, NULL, NULL};
    in.has_queue_source = true;
    in.queue = queue_reading(100 * SEC, 1e307);
    learned.model = &st;
    eval_result_t r;
    demand_evaluate_inputs(&c, &in, &learned, 100 * SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_UNAVAILABLE);
    assert_non_null(strstr(r.message, "demandModel queueing: the replicas it computed are not "
                                      "finite"));
    assert_false(st.have_decision);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worked_example_kv_dominates),
        cmocka_unit_test(test_worked_example_wake_from_zero),
        cmocka_unit_test(test_queue_adds_engine_waiting),
        cmocka_unit_test(test_running_keeps_active),
        cmocka_unit_test(test_gpu_activation_and_errors_pass_through),
        cmocka_unit_test(test_single_signal_types),
        cmocka_unit_test(test_forecast_reports_the_demand_a_cold_start_ahead),
        cmocka_unit_test(test_demand_inputs_sums_engines_that_answered),
        cmocka_unit_test(test_demand_inputs_failed_engine_is_unavailable_naming_it),
        cmocka_unit_test(test_demand_inputs_stale_reading_is_unavailable),
        cmocka_unit_test(test_demand_inputs_first_poll_is_pending),
        cmocka_unit_test(test_demand_inputs_missing_gauge_is_failed_precondition),
        cmocka_unit_test(test_demand_inputs_model_filter_lists_the_pages_models),
        cmocka_unit_test(test_demand_inputs_triton_rates_wait_for_a_second_poll),
        cmocka_unit_test(test_demand_inputs_epp_pods_sum_queues_and_max_pool_gauges),
        cmocka_unit_test(test_demand_inputs_pods_and_queue_errors),
        cmocka_unit_test(test_demand_inputs_refuse_non_finite_sums_and_negative_counts),
        cmocka_unit_test(test_demand_evaluate_refuses_a_value_that_is_not_finite),
        cmocka_unit_test(test_queueing_example_wake_from_zero),
        cmocka_unit_test(test_queue_wakes_whatever_the_engine_url_says),
        cmocka_unit_test(test_engine_failures_keep_the_value_unknown_but_the_queue_wakes),
        cmocka_unit_test(test_engine_not_there_beside_one_that_serves),
        cmocka_unit_test(test_queueing_example_steady_fleet),
        cmocka_unit_test(test_queueing_a_service_url_answered_by_two_replicas),
        cmocka_unit_test(test_queueing_a_url_taking_turns_teaches_no_rate),
        cmocka_unit_test(test_queueing_example_starting_pods_count),
        cmocka_unit_test(test_queueing_example_queue_alone),
        cmocka_unit_test(test_queueing_replicas_that_overflow_are_an_error),
        cmocka_unit_test(test_queueing_learns_the_cold_start_from_the_pod_list),
        cmocka_unit_test(test_queueing_learns_the_cold_start_by_stage),
        cmocka_unit_test(test_queueing_engine_without_counters),
        cmocka_unit_test(test_queueing_reads_draining_pods_and_ignores_their_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
