/* test_demand_tokens.c - the token-rate signals (engine_prompt_tokens_rate,
 * engine_generation_tokens_rate, demand's targetPromptTokensPerReplica and
 * targetGenerationTokensPerReplica) and vLLM LoRA awareness
 * (vllm_lora_waiting_engines with loraAdapter): their keys, and what the
 * sources read -> value, activity or typed error, computed by hand. */
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

static trigger_config_t cfg_buf; /* large: off the stack */

/* kv must be refused with a message containing want. */
static void refused(const char *want, const char *const *kv) {
    metadata_pair_t p[TS_MAX_PAIRS];
    size_t n = ts_pairs(kv, p, TS_MAX_PAIRS);
    char err[1024] = "";
    int rc = trigger_config_parse(p, n, &cfg_buf, err, sizeof err);
    if (rc != KGS_EINVAL || !strstr(err, want))
        fail_msg("want a refusal with \"%s\", got %d: %s", want, rc, err);
}
#define REFUSED(want, ...) refused(want, (const char *const[]){__VA_ARGS__, NULL})

static void test_token_rate_keys_resolve_and_refuse(void **state) {
    (void)state;
    trigger_config_t c =
        CFG("metricType", "engine_prompt_tokens_rate", "engine", "vllm", "vllmEndpoint",
            "http://v:8000/metrics", "targetValue", "4000", "windowSeconds", "60");
    assert_int_equal(c.demand.type, DEMAND_ENGINE_PROMPT_TOKENS_RATE);
    assert_int_equal(c.demand.engine, ENGINE_VLLM);
    assert_int_equal(c.demand.window_s, 60);
    assert_true(demand_uses_token_rates(&c.demand));
    c = CFG("metricType", "engine_generation_tokens_rate", "engine", "sglang", "podSelector",
            "app=s", "targetValue", "1500");
    assert_int_equal(c.demand.type, DEMAND_ENGINE_GENERATION_TOKENS_RATE);
    assert_int_equal(c.demand.window_s, 30);
    c = CFG("metricType", "demand", "engine", "tgi", "engineEndpoint", "http://t/metrics",
            "targetPromptTokensPerReplica", "4000", "targetGenerationTokensPerReplica", "1000",
            "windowSeconds", "10");
    assert_int_equal(c.demand.sizing, DEMAND_MODEL_COMPOSITE);
    NEAR(c.demand.target_prompt_tokens, 4000);
    NEAR(c.demand.target_generation_tokens, 1000);
    assert_int_equal(c.demand.window_s, 10);
    assert_true(demand_uses_token_rates(&c.demand));

    REFUSED("metricType engine_prompt_tokens_rate needs targetValue (tokens per second per "
            "replica)",
            "metricType", "engine_prompt_tokens_rate", "engine", "vllm", "vllmEndpoint",
            "http://v/metrics");
    REFUSED("engine_generation_tokens_rate: Triton exports no prompt or generation token "
            "counters; token rates exist for vllm, tgi and sglang",
            "metricType", "engine_generation_tokens_rate", "engine", "triton", "tritonEndpoint",
            "http://t/metrics", "targetValue", "10");
    REFUSED("targetPromptTokensPerReplica: Triton exports no prompt", "metricType", "demand",
            "engine", "triton", "tritonEndpoint", "http://t/metrics",
            "targetPromptTokensPerReplica", "10");
    REFUSED("targetGenerationTokensPerReplica is set, but it applies to metricType demand",
            "metricType", "engine_queue", "engine", "vllm", "vllmEndpoint", "http://v/metrics",
            "targetValue", "5", "targetGenerationTokensPerReplica", "10");
    REFUSED("windowSeconds is set, but metricType demand is not a rate", "metricType", "demand",
            "engine", "vllm", "vllmEndpoint", "http://v/metrics", "targetQueuePerReplica", "5",
            "windowSeconds", "10");
    REFUSED("invalid targetPromptTokensPerReplica \"0\"", "metricType", "demand", "engine", "vllm",
            "vllmEndpoint", "http://v/metrics", "targetPromptTokensPerReplica", "0");
    REFUSED("targetPromptTokensPerReplica is a per-signal target of demandModel: composite",
            "metricType", "demand", "demandModel", "queueing", "engine", "vllm", "vllmEndpoint",
            "http://v/metrics", "targetPromptTokensPerReplica", "100");
}

static void test_lora_keys_resolve_and_refuse(void **state) {
    (void)state;
    trigger_config_t c = CFG("metricType", "vllm_lora_waiting_engines", "loraAdapter", "sql-lora",
                             "podSelector", "app=v", "targetValue", "0.5");
    assert_int_equal(c.demand.type, DEMAND_VLLM_LORA_WAITING_ENGINES);
    assert_int_equal(c.demand.engine, ENGINE_VLLM);
    assert_string_equal(c.demand.lora_adapter, "sql-lora");
    assert_false(demand_uses_token_rates(&c.demand));
    REFUSED("metricType vllm_lora_waiting_engines needs loraAdapter", "metricType",
            "vllm_lora_waiting_engines", "vllmEndpoint", "http://v/metrics", "targetValue", "1");
    REFUSED("loraAdapter is set, but metricType is engine_queue; it applies to "
            "vllm_lora_waiting_engines",
            "metricType", "engine_queue", "engine", "vllm", "vllmEndpoint", "http://v/metrics",
            "targetValue", "1", "loraAdapter", "a");
    REFUSED("loraAdapter is set, but metricType demand reads no serving engine", "metricType",
            "demand", "targetQueuePerReplica", "5", "redisAddress", "r:6379", "redisListName", "q",
            "loraAdapter", "a");
    REFUSED("invalid loraAdapter \"a,b\": must be 1-255 bytes without control characters, ',' "
            "or '\"'",
            "metricType", "vllm_lora_waiting_engines", "vllmEndpoint", "http://v/metrics",
            "targetValue", "1", "loraAdapter", "a,b");
    REFUSED("metricType vllm_lora_waiting_engines reads vllm, but engine is \"sglang\"",
            "metricType", "vllm_lora_waiting_engines", "engine", "sglang", "engineEndpoint",
            "http://s/metrics", "targetValue", "1", "loraAdapter", "a");
    REFUSED("needs targetValue (engines with the adapter's requests waiting per replica)",
            "metricType", "vllm_lora_waiting_engines", "vllmEndpoint", "http://v/metrics",
            "loraAdapter", "a");
}

/* ---- evaluation ----------------------------------------------------------------- */

static demand_source_t pod(const char *name, double waiting, double running) {
    demand_source_t v;
    memset(&v, 0, sizeof v);
    v.state = DEMAND_SOURCE_READING;
    v.name = name;
    v.last_ok = 100 * SEC;
    v.interval_ns = 1 * SEC;
    v.timeout_ns = 2 * SEC;
    v.reading.has_waiting = v.reading.has_running = true;
    v.reading.waiting = waiting;
    v.reading.running = running;
    v.reading.has_tokens = true;
    v.reading.prompt_tokens_total = 1e6;
    v.reading.generation_tokens_total = 2e5;
    return v;
}

static void tokens(demand_source_t *v, double dp, double dg, double span) {
    v->tokens_known = true;
    v->prompt_delta = dp;
    v->generation_delta = dg;
    v->tokens_span_s = span;
}

static eval_result_t eval(const trigger_config_t *c, const demand_source_t *v, unsigned n) {
    demand_inputs_t in;
    memset(&in, 0, sizeof in);
    in.pods_status = EVAL_OK;
    in.engines = v;
    in.nengines = n;
    eval_result_t r;
    demand_evaluate_inputs(c, &in, NULL, 101 * SEC, NULL, &r);
    return r;
}

/* Pod a: 20000 prompt / 5000 generated tokens over 2 s = 10000 / 2500 per s;
 * pod b: 9000 / 3000 over 3 s = 3000 / 1000 per s (each pod over its own
 * window). Sums: 13000 prompt/s, 3500 generated/s. */
static void test_token_rates_sum_each_pods_own_rate(void **state) {
    (void)state;
    demand_source_t v[2] = {pod("vllm pod a", 0, 3), pod("vllm pod b", 0, 1)};
    tokens(&v[0], 20000, 5000, 2);
    tokens(&v[1], 9000, 3000, 3);
    trigger_config_t c = CFG("metricType", "engine_prompt_tokens_rate", "engine", "vllm",
                             "podSelector", "app=v", "targetValue", "4000");
    eval_result_t r = eval(&c, v, 2);
    assert_int_equal(r.status, EVAL_OK);
    NEAR(r.value, 13000); /* KEDA: ceil(13000 / 4000) = 4 replicas */
    assert_true(r.active);
    assert_int_equal(r.inputs, 2);
    c = CFG("metricType", "engine_generation_tokens_rate", "engine", "vllm", "podSelector", "app=v",
            "targetValue", "1000");
    r = eval(&c, v, 2);
    NEAR(r.value, 3500);
    /* demand: max(13000 / 4000, 3500 / 1000) = max(3.25, 3.5) -> 350 */
    c = CFG("metricType", "demand", "engine", "vllm", "podSelector", "app=v",
            "targetPromptTokensPerReplica", "4000", "targetGenerationTokensPerReplica", "1000");
    r = eval(&c, v, 2);
    assert_int_equal(r.status, EVAL_OK);
    NEAR(r.value, 350);
    assert_true(r.active);
    /* with a queue target beside them: 12 waiting / 2 = 6 wins -> 600 */
    v[0].reading.waiting = 12;
    c = CFG("metricType", "demand", "engine", "vllm", "podSelector", "app=v",
            "targetPromptTokensPerReplica", "4000", "targetQueuePerReplica", "2");
    r = eval(&c, v, 2);
    NEAR(r.value, 600);
}

/* Unknown is never 0: a pod whose window holds one poll makes the rate
 * pending (UNAVAILABLE, naming it), and an engine without token counters is
 * FAILED_PRECONDITION naming what it lacks. An idle fleet is 0, inactive. */
static void test_token_rates_unknown_missing_and_idle(void **state) {
    (void)state;
    trigger_config_t c = CFG("metricType", "engine_prompt_tokens_rate", "engine", "vllm",
                             "podSelector", "app=v", "targetValue", "4000");
    demand_source_t v[2] = {pod("vllm pod a", 0, 0), pod("vllm pod b", 0, 0)};
    tokens(&v[0], 500, 100, 1);
    eval_result_t r = eval(&c, v, 2);
    assert_int_equal(r.status, EVAL_UNAVAILABLE);
    assert_true(r.pending);
    assert_string_equal(r.message, "vllm pod b: collecting a second poll within windowSeconds "
                                   "to compute token rates");
    tokens(&v[1], 0, 0, 2);
    v[1].reading.has_tokens = false;
    r = eval(&c, v, 2);
    assert_int_equal(r.status, EVAL_FAILED_PRECONDITION);
    assert_non_null(strstr(r.message, "vllm pod b does not export the prompt- and "
                                      "generation-token counters"));
    v[1].reading.has_tokens = true;
    r = eval(&c, v, 2);
    assert_int_equal(r.status, EVAL_OK);
    NEAR(r.value, 500);
    assert_true(r.active); /* 500 > activationThreshold 0 */
    tokens(&v[0], 0, 0, 2);
    r = eval(&c, v, 2);
    NEAR(r.value, 0);
    assert_false(r.active);
    /* a counter reset is handled by the window: a negative increase is
     * never a rate (the evaluation's own check) */
    tokens(&v[0], -10, 0, 2);
    r = eval(&c, v, 2);
    assert_int_equal(r.status, EVAL_UNAVAILABLE);
}

/* Five engines, adapter "sql-lora": a lists it waiting with 3 waiting ->
 * counts; b lists it but nothing waits (a series left from its last step)
 * -> not; c lists it running only; d has no series and is idle -> known 0;
 * e lists it waiting with 1 waiting -> counts. Value 2 (KEDA with target
 * 0.5: 4 replicas). */
static void test_lora_waiting_engines_cross_checked_with_the_gauges(void **state) {
    (void)state;
    trigger_config_t c = CFG("metricType", "vllm_lora_waiting_engines", "loraAdapter", "sql-lora",
                             "podSelector", "app=v", "targetValue", "0.5");
    demand_source_t v[5] = {pod("a", 3, 1), pod("b", 0, 0), pod("c", 0, 2), pod("d", 0, 0),
                            pod("e", 1, 0)};
    v[0].reading.has_lora = v[0].reading.lora_waiting = true;
    v[1].reading.has_lora = v[1].reading.lora_waiting = v[1].reading.lora_running = true;
    v[2].reading.has_lora = v[2].reading.lora_running = true;
    v[4].reading.has_lora = v[4].reading.lora_waiting = true;
    eval_result_t r = eval(&c, v, 5);
    assert_int_equal(r.status, EVAL_OK);
    NEAR(r.value, 2);
    assert_true(r.active);
    /* nothing of the adapter waits; c still runs it: active at 0 */
    v[0].reading.lora_waiting = v[4].reading.lora_waiting = false;
    r = eval(&c, v, 5);
    NEAR(r.value, 0);
    assert_true(r.active);
    /* other requests running (a: running 1, not the adapter's) do not keep
     * an adapter's trigger active */
    v[2].reading.lora_running = false;
    r = eval(&c, v, 5);
    NEAR(r.value, 0);
    assert_false(r.active);
    /* no series while requests wait: not known (is LoRA on?) */
    v[3].reading.waiting = 2;
    r = eval(&c, v, 5);
    assert_int_equal(r.status, EVAL_FAILED_PRECONDITION);
    assert_non_null(strstr(r.message, "d does not export vllm:lora_requests_info while it has "
                                      "requests waiting or running (is LoRA enabled: "
                                      "--enable-lora?)"));
}

/* The metric types added here lengthen metricType's list past 512 bytes:
 * the suggestion comes first, where it is seen, and the message arrives
 * whole; a buffer too small for it gets a summary saying so, never the
 * message cut short. */
static void test_metric_type_suggestion_survives_a_small_buffer(void **state) {
    (void)state;
    metadata_pair_t p[1];
    size_t n = ts_pairs((const char *const[]){"metricType", "GPU_UTILIZATION", NULL}, p, 1);
    char big[2048] = "";
    assert_int_equal(trigger_config_parse(p, n, &cfg_buf, big, sizeof big), KGS_EINVAL);
    assert_non_null(strstr(big, "invalid metricType \"GPU_UTILIZATION\": did you mean "
                                "\"gpu_utilization\"? It must be one of gpu_utilization, "));
    assert_non_null(strstr(big, ", vllm_lora_waiting_engines"));
    assert_true(strlen(big) > 512);
    char err[512] = "";
    assert_int_equal(trigger_config_parse(p, n, &cfg_buf, err, sizeof err), KGS_EINVAL);
    char want[128];
    snprintf(want, sizeof want, "1 problem (%zu bytes of messages: too long to show here)",
             strlen(big));
    assert_string_equal(err, want);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_token_rate_keys_resolve_and_refuse),
        cmocka_unit_test(test_lora_keys_resolve_and_refuse),
        cmocka_unit_test(test_token_rates_sum_each_pods_own_rate),
        cmocka_unit_test(test_token_rates_unknown_missing_and_idle),
        cmocka_unit_test(test_lora_waiting_engines_cross_checked_with_the_gauges),
        cmocka_unit_test(test_metric_type_suggestion_survives_a_small_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
