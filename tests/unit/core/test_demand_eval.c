/* test_demand_eval.c - signals -> value and activity, with the worked
 * examples of docs/configuration.md ("Combining signals") computed by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worked_example_kv_dominates),
        cmocka_unit_test(test_worked_example_wake_from_zero),
        cmocka_unit_test(test_queue_adds_engine_waiting),
        cmocka_unit_test(test_running_keeps_active),
        cmocka_unit_test(test_gpu_activation_and_errors_pass_through),
        cmocka_unit_test(test_single_signal_types),
        cmocka_unit_test(test_forecast_reports_the_demand_a_cold_start_ahead),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
