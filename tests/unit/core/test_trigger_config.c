/* test_trigger_config.c - metadata map -> trigger_config_t: every key, every
 * default, every error path and its message. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/err.h"
#include "core/trigger_config.h"
#include "support/test_support.h"

/* kv: NULL-terminated alternating key, value. */
static int parse_kv(const char *const *kv, trigger_config_t *out, char *err, size_t errlen) {
    metadata_pair_t p[TS_MAX_PAIRS];
    size_t n = ts_pairs(kv, p, TS_MAX_PAIRS);
    memset(out, 0x5a, sizeof *out); /* sentinel */
    return trigger_config_parse(p, n, out, err, errlen);
}

static trigger_config_t ok_kv(const char *const *kv) {
    trigger_config_t c;
    char err[4096] = "";
    int rc = parse_kv(kv, &c, err, sizeof err);
    if (rc != 0)
        fail_msg("expected success, got %d: %s", rc, err);
    return c;
}

static void err_kv(const char *const *kv, const char *needle1, const char *needle2) {
    trigger_config_t c;
    char err[4096] = "";
    int rc = parse_kv(kv, &c, err, sizeof err);
    if (rc != KGS_EINVAL)
        fail_msg("expected KGS_EINVAL for %s=%s, got %d", kv[0] ? kv[0] : "", kv[0] ? kv[1] : "",
                 rc);
    if (needle1 && !strstr(err, needle1))
        fail_msg("error lacks \"%s\": %s", needle1, err);
    if (needle2 && !strstr(err, needle2))
        fail_msg("error lacks \"%s\": %s", needle2, err);
    /* on error *out holds the defaults, not half-parsed data */
    assert_string_equal(c.metric_name, "keda_gpu_metric");
    assert_true(c.target_value == 80);
}

#define OK(...) ok_kv((const char *const[]){__VA_ARGS__, NULL})
#define OK0() ok_kv((const char *const[]){NULL})
#define ERR(n1, n2, ...) err_kv((const char *const[]){__VA_ARGS__, NULL}, n1, n2)

static void test_trigger_config_defaults_match_the_go_system_except_aggregation(void **state) {
    (void)state;
    trigger_config_t c = OK0();
    assert_string_equal(c.metric_name, "keda_gpu_metric");
    assert_string_equal(c.profile, "");
    assert_int_equal(c.metric_type, METRIC_GPU_UTILIZATION);
    assert_true(c.target_value == 80);
    assert_true(c.activation_threshold == 0);
    assert_int_equal(c.aggregation, AGG_SUM);
    assert_int_equal(c.gpu_index, -1);
    assert_int_equal(c.poll_interval_s, 10);
    assert_int_equal(c.gpu_uuid_count, 0);
    assert_int_equal(c.mig_uuid_count, 0);
    assert_int_equal(c.mig_profile_count, 0);
}

static void test_trigger_config_null_pairs_with_zero_count_gives_defaults(void **state) {
    (void)state;
    trigger_config_t c;
    assert_int_equal(trigger_config_parse(NULL, 0, &c, NULL, 0), 0);
    assert_int_equal(c.aggregation, AGG_SUM);
    assert_int_equal(trigger_config_parse(NULL, 3, &c, NULL, 0), KGS_EINVAL);
}

/* Found by fuzz_metadata's campaign: a redisListName of NUL bytes was kept
 * as "", a queue with no key. Protobuf strings may hold NUL; our
 * configuration's C strings cannot. */
static void test_trigger_config_refuses_a_value_with_a_nul_byte(void **state) {
    (void)state;
    static const char list[] = "jobs\0more";
    const metadata_pair_t pairs[] = {
        {"metricType", 10, "queue_length", 12},
        {"redisAddress", 12, "redis.q:6379", 12},
        {"redisListName", 13, list, sizeof list - 1},
        {"targetValue", 11, "5", 1},
    };
    trigger_config_t c;
    char err[256];
    assert_int_equal(trigger_config_parse(pairs, 4, &c, err, sizeof err), KGS_EINVAL);
    assert_string_equal(err, "\"redisListName\": the value holds a NUL byte (byte 5 of 9); "
                             "metadata values are text (the other keys are checked once every "
                             "key is given once, as text)");
}

static void test_trigger_config_accepts_every_metric_type(void **state) {
    (void)state;
    for (int t = 0; t < METRIC_TYPE_COUNT; t++) {
        trigger_config_t c = OK("metricType", metric_type_name((metric_type_t)t));
        assert_int_equal(c.metric_type, t);
    }
    assert_string_equal(metric_type_name(METRIC_GPU_UTILIZATION), "gpu_utilization");
    assert_string_equal(metric_type_name(METRIC_MEMORY_USED_PERCENT), "memory_used_percent");
    assert_string_equal(metric_type_name(METRIC_PCIE_TX_KBPS), "pcie_tx_kbps");
    assert_string_equal(metric_type_name(METRIC_NVLINK_RX_MBPS), "nvlink_rx_mbps");
    assert_string_equal(metric_type_name(METRIC_DRAM_BANDWIDTH), "dram_bandwidth");
    assert_string_equal(metric_type_name(METRIC_TYPE_COUNT), "?");
}

static void test_trigger_config_accepts_every_aggregation(void **state) {
    (void)state;
    static const char *names[] = {"sum", "max", "min", "avg", "p95", "p99"};
    for (int a = 0; a < 6; a++) {
        trigger_config_t c = OK("aggregation", names[a]);
        assert_int_equal(c.aggregation, a);
        assert_string_equal(aggregation_name((aggregation_t)a), names[a]);
    }
    assert_string_equal(aggregation_name((aggregation_t)6), "?");
    ERR("invalid aggregation \"mean\"", "sum, max, min, avg, p95 or p99", "aggregation", "mean");
    ERR("invalid aggregation \"MAX\"", NULL, "aggregation", "MAX");
}

static void test_trigger_config_reads_each_scalar_key(void **state) {
    (void)state;
    trigger_config_t c =
        OK("metricName", "my-metric_1", "targetValue", "42.5", "activationThreshold", "2.25",
           "gpuIndex", "3", "pollIntervalSeconds", "30");
    assert_string_equal(c.metric_name, "my-metric_1");
    assert_true(c.target_value == 42.5);
    assert_true(c.activation_threshold == 2.25);
    assert_int_equal(c.gpu_index, 3);
    assert_int_equal(c.poll_interval_s, 30);
}

static void test_trigger_config_ignores_kedas_own_keys(void **state) {
    (void)state;
    trigger_config_t c =
        OK("scalerAddress", "keda-gpu-scaler:6000", "enableTLS", "true", "unsafeSsl", "false");
    assert_int_equal(c.metric_type, METRIC_GPU_UTILIZATION);
}

static void test_trigger_config_rejects_unknown_key_with_suggestion(void **state) {
    (void)state;
    ERR("unknown metadata key \"targetvalue\": did you mean \"targetValue\"?", NULL, "targetvalue",
        "80");
    ERR("did you mean \"gpuIndex\"?", NULL, "gpuindex", "0");
    ERR("did you mean \"targetValue\"?", NULL, "targtValue", "80");
    ERR("did you mean \"pollIntervalSeconds\"?", NULL, "pollInterval", "5");
    ERR("did you mean \"aggregation\"?", NULL, "aggregate", "max");
    ERR("did you mean \"migUUID\"?", NULL, "migUuid", "MIG-a");
    ERR("did you mean \"metricType\"?", NULL, "metric_type", "gpu_utilization");
}

static void
test_trigger_config_rejects_unknown_key_without_suggestion_when_nothing_is_close(void **state) {
    (void)state;
    trigger_config_t c;
    char err[512];
    const char *const kv[] = {"colour", "blue", NULL};
    assert_int_equal(parse_kv(kv, &c, err, sizeof err), KGS_EINVAL);
    assert_non_null(strstr(err, "unknown metadata key \"colour\""));
    assert_null(strstr(err, "did you mean"));
    assert_non_null(strstr(err, "the general keys are profile, metricName"));
    assert_non_null(strstr(err, "see docs/configuration.md#keys"));
}

static void test_trigger_config_reports_the_smallest_unknown_key_whatever_the_order(void **state) {
    (void)state;
    ERR("\"aaa\"", NULL, "zzz", "1", "aaa", "2");
    ERR("\"aaa\"", NULL, "aaa", "2", "zzz", "1");
}

static void test_trigger_config_escapes_and_truncates_quoted_input(void **state) {
    (void)state;
    ERR("unknown metadata key \"a\\x01\\\"b\"", NULL, "a\x01\"b", "1");
    char longkey[200];
    memset(longkey, 'q', sizeof longkey - 1);
    longkey[sizeof longkey - 1] = '\0';
    ERR("qqq\"...", NULL, longkey, "1");
}

static void test_trigger_config_rejects_duplicate_keys(void **state) {
    (void)state;
    ERR("duplicate metadata key \"targetValue\"", NULL, "targetValue", "1", "targetValue", "2");
    ERR("duplicate metadata key \"scalerAddress\"", NULL, "scalerAddress", "a", "scalerAddress",
        "b");
}

static void test_trigger_config_engine_keys_need_an_engine_metric_type(void **state) {
    (void)state;
    ERR("vllmEndpoint is set, but metricType gpu_utilization reads no serving engine", NULL,
        "vllmEndpoint", "http://vllm:8000/metrics");
    ERR("tritonEndpoint is set", "reads no serving engine", "metricType", "power_draw",
        "tritonEndpoint", "http://triton:8002/metrics");
    ERR("redisAddress is set, but metricType gpu_utilization reads no queue", NULL, "redisAddress",
        "redis:6379", "redisListName", "jobs");
    ERR("targetQueuePerReplica is set, but it applies to metricType demand", NULL,
        "targetQueuePerReplica", "5");
}

static void test_trigger_config_go_engine_types_and_profiles(void **state) {
    (void)state;
    trigger_config_t c = OK("profile", "vllm-queue-depth", "vllmEndpoint",
                            "http://vllm-deepseek-deployment:8000/metrics");
    assert_int_equal(c.demand.type, DEMAND_VLLM_QUEUE_DEPTH);
    assert_int_equal(c.demand.engine, ENGINE_VLLM);
    assert_string_equal(c.metric_name, "keda_gpu_vllm_queue_depth");
    assert_true(c.target_value == 5);
    assert_int_equal(c.demand.endpoint_count, 1);
    assert_string_equal(c.demand.endpoints[0], "http://vllm-deepseek-deployment:8000/metrics");
    assert_true(c.demand.interval_ns == 1000000000ull && c.demand.timeout_ns == 2000000000ull);
    c = OK("profile", "triton-queue-wait", "tritonEndpoint", "http://triton:8002/metrics");
    assert_int_equal(c.demand.type, DEMAND_TRITON_QUEUE_WAIT_MS);
    assert_int_equal(c.demand.engine, ENGINE_TRITON);
    assert_int_equal(c.demand.window_s, 30);
    c = OK("metricType", "triton_request_rate", "targetValue", "50", "windowSeconds", "60",
           "tritonEndpoint", "http://10.0.0.7:8002/metrics, http://10.0.0.8:8002/metrics");
    assert_int_equal(c.demand.window_s, 60);
    assert_int_equal(c.demand.endpoint_count, 2);
    assert_string_equal(c.demand.endpoints[1], "http://10.0.0.8:8002/metrics");
    /* Go's default target (80 waiting requests per replica) is no default. */
    ERR("metricType vllm_queue_depth needs targetValue", NULL, "metricType", "vllm_queue_depth",
        "vllmEndpoint", "http://vllm:8000/metrics");
    ERR("needs where to scrape vllm: vllmEndpoint", "podSelector", "profile", "vllm-queue-depth");
    ERR("metricType vllm_queue_depth reads vllm, but engine is \"tgi\"", NULL, "metricType",
        "vllm_queue_depth", "targetValue", "5", "engine", "tgi", "engineEndpoint",
        "http://tgi/metrics");
    ERR("engine is \"sglang\" but vllmEndpoint is set", NULL, "metricType", "engine_queue",
        "targetValue", "5", "engine", "sglang", "vllmEndpoint", "http://vllm/metrics");
}

static void test_trigger_config_rejects_unknown_metric_type_listing_valid_ones(void **state) {
    (void)state;
    ERR("invalid metricType \"gpu_util\"", "gpu_utilization, memory_utilization", "metricType",
        "gpu_util");
    ERR("dram_bandwidth", NULL, "metricType", "GPU_UTILIZATION");
}

static void test_trigger_config_applies_profile_then_explicit_keys(void **state) {
    (void)state;
    trigger_config_t c = OK("profile", "batch");
    assert_string_equal(c.profile, "batch");
    assert_string_equal(c.metric_name, "keda_gpu_batch");
    assert_int_equal(c.metric_type, METRIC_MEMORY_USED_PERCENT);
    assert_true(c.target_value == 70);
    assert_true(c.activation_threshold == 1);
    assert_int_equal(c.aggregation, AGG_SUM); /* profiles do not set it */

    c = OK("profile", "batch", "metricName", "mine", "metricType", "memory_used_mib", "targetValue",
           "4096", "activationThreshold", "0");
    assert_string_equal(c.profile, "batch");
    assert_string_equal(c.metric_name, "mine");
    assert_int_equal(c.metric_type, METRIC_MEMORY_USED_MIB);
    assert_true(c.target_value == 4096);
    assert_true(c.activation_threshold == 0);
}

static void test_trigger_config_rejects_unknown_profile_listing_every_profile(void **state) {
    (void)state;
    ERR("unknown profile \"vllm\"",
        "distributed-training, vllm-inference, vllm-queue-depth, triton-inference, "
        "triton-queue-wait, triton-request-rate, training, batch, ollama, tgi-inference, "
        "sm-active, mig-sm-active",
        "profile", "vllm");
}

/* engine epp: the endpoint picker's queue and pool gauges; what it cannot
 * serve is refused naming what works instead. */
static void test_trigger_config_engine_epp(void **state) {
    (void)state;
    trigger_config_t c = OK("metricType", "engine_queue", "engine", "epp", "targetValue", "4",
                            "podSelector", "app=epp", "model", "llama");
    assert_int_equal(c.demand.engine, ENGINE_EPP);
    assert_int_equal(c.demand.engine_port, 9090);
    assert_string_equal(c.demand.engine_path, "/metrics");
    assert_string_equal(c.demand.model, "llama");
    assert_string_equal(engine_name(ENGINE_EPP), "epp");
    c = OK("metricType", "engine_running", "engine", "epp", "targetValue", "8", "engineEndpoint",
           "http://epp.ml:9090/metrics");
    assert_int_equal(c.demand.endpoint_count, 1);
    c = OK("metricType", "engine_kv_cache", "engine", "epp", "targetValue", "70", "podSelector",
           "app=epp");
    c = OK("metricType", "demand", "engine", "epp", "podSelector", "app=epp",
           "targetQueuePerReplica", "4", "targetRunningPerReplica", "8", "targetKvCache", "80");
    assert_int_equal(c.demand.sizing, DEMAND_MODEL_COMPOSITE);
    ERR("demandModel queueing does not work with engine epp", "set demandModel: composite",
        "metricType", "demand", "engine", "epp", "podSelector", "app=epp");
    ERR("demandModel queueing does not work with engine epp", "which for epp are the EPP pods",
        "metricType", "demand", "engine", "epp", "engineEndpoint", "http://epp:9090/metrics",
        "demandModel", "queueing");
    ERR("ttftP90Target is set, but engine epp is read for its queues and pool gauges",
        "scrape the model servers for latency", "metricType", "slo", "engine", "epp", "podSelector",
        "app=epp", "ttftP90Target", "1s");
    ERR("e2eP99Target is set, but engine epp is read for", "scrape the model servers for latency",
        "metricType", "demand", "engine", "epp", "podSelector", "app=epp", "targetQueuePerReplica",
        "4", "e2eP99Target", "10s");
    ERR("engine_prompt_tokens_rate: engine epp is read for its queues and pool gauges, not for "
        "token counters",
        "scrape the model servers with their engine", "metricType", "engine_prompt_tokens_rate",
        "engine", "epp", "podSelector", "app=epp", "targetValue", "1000");
    ERR("targetGenerationTokensPerReplica: engine epp is read for", NULL, "metricType", "demand",
        "engine", "epp", "podSelector", "app=epp", "targetGenerationTokensPerReplica", "1000");
    ERR("metricType vllm_queue_depth reads vllm, but engine is \"epp\"",
        "use engine_queue, engine_running or engine_kv_cache", "metricType", "vllm_queue_depth",
        "engine", "epp", "podSelector", "app=epp", "targetValue", "4");
    ERR("metricType triton_queue_wait_ms reads triton, but engine is \"epp\"", NULL, "metricType",
        "triton_queue_wait_ms", "engine", "epp", "podSelector", "app=epp", "targetValue", "4");
    ERR("loraAdapter is set, but metricType is engine_queue", "vllm_lora_waiting_engines",
        "metricType", "engine_queue", "engine", "epp", "podSelector", "app=epp", "targetValue", "4",
        "loraAdapter", "sql-lora");
    ERR("metricType engine_queue needs where to scrape epp", "engineEndpoint", "metricType",
        "engine_queue", "engine", "epp", "targetValue", "4");
}

static void test_trigger_config_engine_keys(void **state) {
    (void)state;
    trigger_config_t c = OK("metricType", "engine_kv_cache", "engine", "sglang", "targetValue",
                            "70", "podSelector", "app=sglang", "model", "qwen/Qwen2.5-7B");
    assert_int_equal(c.demand.engine, ENGINE_SGLANG);
    assert_int_equal(c.demand.endpoint_count, 0);
    assert_int_equal(c.demand.engine_port, 30000);
    assert_string_equal(c.demand.engine_path, "/metrics");
    assert_false(c.demand.engine_https);
    assert_string_equal(c.demand.model, "qwen/Qwen2.5-7B");
    c = OK("metricType", "engine_queue", "engine", "tgi", "targetValue", "4", "podSelector",
           "app=tgi", "enginePort", "8080", "enginePath", "/prom?x=1", "engineScheme", "https");
    assert_int_equal(c.demand.engine_port, 8080);
    assert_string_equal(c.demand.engine_path, "/prom?x=1");
    assert_true(c.demand.engine_https);
    ERR("metricType engine_running: Triton exports no requests-in-flight gauge", NULL, "metricType",
        "engine_running", "engine", "triton", "targetValue", "4", "engineEndpoint",
        "http://t/metrics");
    ERR("metricType engine_kv_cache: tgi exports no KV-cache usage", NULL, "metricType",
        "engine_kv_cache", "engine", "tgi", "targetValue", "4", "engineEndpoint",
        "http://t/metrics");
    ERR("model is set, but TGI serves one model", NULL, "metricType", "engine_queue", "engine",
        "tgi", "targetValue", "4", "engineEndpoint", "http://t/metrics", "model", "m");
    ERR("enginePort is set together with engineEndpoint", NULL, "metricType", "engine_queue",
        "engine", "tgi", "targetValue", "4", "engineEndpoint", "http://t/metrics", "enginePort",
        "80");
    ERR("windowSeconds is set, but metricType engine_queue is not a rate", NULL, "metricType",
        "engine_queue", "engine", "vllm", "targetValue", "4", "engineEndpoint", "http://v/metrics",
        "windowSeconds", "10");
    ERR("invalid engine \"vlm\"", "did you mean \"vllm\"", "metricType", "engine_queue", "engine",
        "vlm", "targetValue", "4", "engineEndpoint", "http://v/metrics");
    ERR("is listed twice", NULL, "metricType", "engine_queue", "engine", "vllm", "targetValue", "4",
        "engineEndpoint", "http://v/metrics,http://v/metrics");
    ERR("invalid engineEndpoint", "an empty entry", "metricType", "engine_queue", "engine", "vllm",
        "targetValue", "4", "engineEndpoint", "http://v/metrics,,http://w/metrics");
    ERR("invalid engineEndpoint \"http://169.254.169.254/", "link-local", "metricType",
        "engine_queue", "engine", "vllm", "targetValue", "4", "engineEndpoint",
        "http://169.254.169.254/latest/meta-data");
    ERR("invalid engineEndpoint", "not allowed", "metricType", "engine_queue", "engine", "vllm",
        "targetValue", "4", "engineEndpoint", "http://metadata.google.internal/x");
    ERR("invalid enginePath", NULL, "metricType", "engine_queue", "engine", "vllm", "targetValue",
        "4", "podSelector", "a=b", "enginePath", "metrics");
    ERR("engine_queue needs the serving engine", NULL, "metricType", "engine_queue", "targetValue",
        "4", "engineEndpoint", "http://v/metrics");
}

static void test_trigger_config_redis_queue_keys(void **state) {
    (void)state;
    trigger_config_t c =
        OK("metricType", "queue_length", "targetValue", "10", "redisAddress", "redis.queues:6379",
           "redisListName", "jobs", "redisPasswordFromEnv", "hunter2-secret");
    assert_int_equal(c.demand.queue, QUEUE_REDIS_LIST);
    assert_string_equal(c.demand.redis_key, "jobs");
    assert_string_equal(c.demand.redis_password, "hunter2-secret");
    assert_false(c.demand.redis_tls);
    c = OK("metricType", "queue_length", "targetValue", "10", "redisAddress",
           "rediss://redis.queues:6380/3", "redisStream", "events", "redisConsumerGroup", "w");
    assert_int_equal(c.demand.queue, QUEUE_REDIS_STREAM);
    assert_true(c.demand.redis_tls);
    assert_int_equal(c.demand.redis_db, 3);
    assert_int_equal(c.demand.stream_measure, STREAM_MEASURE_LAG);
    c = OK("metricType", "queue_length", "targetValue", "10", "redisAddress", "10.0.0.5",
           "redisStream", "events", "redisDatabaseIndex", "2", "redisTLS", "true");
    assert_int_equal(c.demand.stream_measure, STREAM_MEASURE_LENGTH);
    assert_int_equal(c.demand.redis_db, 2);
    assert_true(c.demand.redis_tls);
    ERR("redisStreamMeasure pending needs redisConsumerGroup", NULL, "metricType", "queue_length",
        "targetValue", "10", "redisAddress", "r:6379", "redisStream", "s", "redisStreamMeasure",
        "pending");
    ERR("redisListName and redisStream are both set", NULL, "metricType", "queue_length",
        "targetValue", "10", "redisAddress", "r:6379", "redisStream", "s", "redisListName", "l");
    ERR("invalid redisDatabaseIndex \"16\"", NULL, "metricType", "queue_length", "targetValue",
        "10", "redisAddress", "r:6379", "redisListName", "l", "redisDatabaseIndex", "16");
    ERR("redisUsernameFromEnv is set without redisPasswordFromEnv", NULL, "metricType",
        "queue_length", "targetValue", "10", "redisAddress", "r:6379", "redisListName", "l",
        "redisUsernameFromEnv", "svc");
    ERR("redisListName is set without redisAddress", NULL, "metricType", "queue_length",
        "targetValue", "10", "redisListName", "l");
    ERR("metricType queue_length needs a queue", NULL, "metricType", "queue_length", "targetValue",
        "10");
    ERR("invalid redisAddress", "link-local", "metricType", "queue_length", "targetValue", "10",
        "redisAddress", "169.254.169.254:6379", "redisListName", "l");
    ERR("one trigger reads one queue", NULL, "metricType", "queue_length", "targetValue", "10",
        "redisAddress", "r:6379", "redisListName", "l", "demandEndpoint", "http://g/metrics",
        "demandMetric", "q");
    /* A password never appears in a message, even when it is what is wrong. */
    char big[600];
    memset(big, 'p', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    trigger_config_t bad;
    char err[512];
    const char *kv[] = {"metricType",
                        "queue_length",
                        "targetValue",
                        "1",
                        "redisAddress",
                        "r",
                        "redisListName",
                        "l",
                        "redisPasswordFromEnv",
                        big,
                        NULL};
    assert_int_equal(parse_kv(kv, &bad, err, sizeof err), KGS_EINVAL);
    assert_non_null(strstr(err, "value not shown"));
    assert_null(strstr(err, "pppppppp"));
}

static void test_trigger_config_prometheus_queue_keys(void **state) {
    (void)state;
    trigger_config_t c = OK("metricType", "queue_length", "targetValue", "3", "demandEndpoint",
                            "http://gateway.ml:9090/metrics", "demandMetric", "gateway:queue_depth",
                            "demandLabels", "pool=\"gpu\", model!=\"a \\\"quoted\\\" one\"");
    assert_int_equal(c.demand.queue, QUEUE_PROMETHEUS);
    assert_int_equal(c.demand.matcher_count, 2);
    assert_string_equal(c.demand.matchers[0].name, "pool");
    assert_string_equal(c.demand.matchers[0].value, "gpu");
    assert_false(c.demand.matchers[0].negate);
    assert_string_equal(c.demand.matchers[1].value, "a \"quoted\" one");
    assert_true(c.demand.matchers[1].negate);
    ERR("invalid demandLabels", "name=\"value\"", "metricType", "queue_length", "targetValue", "3",
        "demandEndpoint", "http://g/m", "demandMetric", "q", "demandLabels", "pool=gpu");
    ERR("invalid demandMetric \"9q\"", NULL, "metricType", "queue_length", "targetValue", "3",
        "demandEndpoint", "http://g/m", "demandMetric", "9q");
    ERR("demandMetric is missing", NULL, "metricType", "queue_length", "targetValue", "3",
        "demandEndpoint", "http://g/m");
}

static void test_trigger_config_demand_composite(void **state) {
    (void)state;
    trigger_config_t c =
        OK("metricType", "demand", "engine", "vllm", "podSelector", "app=vllm",
           "targetQueuePerReplica", "5", "targetKvCache", "70", "targetGpu", "60", "gpuMetricType",
           "sm_active", "activationQueue", "2", "redisAddress", "r:6379", "redisListName",
           "requests", "sourceInterval", "250ms", "sourceTimeout", "1s");
    assert_int_equal(c.demand.type, DEMAND_COMPOSITE);
    assert_true(c.target_value == 100);
    assert_true(c.demand.target_queue == 5 && c.demand.target_kv == 70 &&
                c.demand.target_gpu == 60);
    assert_int_equal(c.metric_type, METRIC_SM_ACTIVE);
    assert_true(c.demand.activation_queue == 2);
    assert_int_equal(c.demand.queue, QUEUE_REDIS_LIST);
    assert_true(c.demand.interval_ns == 250000000ull && c.demand.timeout_ns == 1000000000ull);
    assert_true(trigger_uses_gpu(&c));
    assert_true(trigger_uses_engine(&c));
    /* The queue alone, from Redis: no engine needed. */
    c = OK("metricType", "demand", "targetQueuePerReplica", "5", "redisAddress", "r:6379",
           "redisListName", "requests");
    assert_false(trigger_uses_engine(&c));
    assert_false(trigger_uses_gpu(&c));
    ERR("metricType demand reports replicas needed x 100", "targetValue", "metricType", "demand",
        "targetValue", "3", "targetQueuePerReplica", "5", "redisAddress", "r", "redisListName",
        "q");
    ERR("needs at least one per-signal target", NULL, "metricType", "demand", "demandModel",
        "composite", "redisAddress", "r", "redisListName", "q");
    ERR("needs a signal to size the fleet from", NULL, "metricType", "demand");
    ERR("activationThreshold", "activationQueue", "metricType", "demand", "activationThreshold",
        "1", "targetQueuePerReplica", "5", "redisAddress", "r", "redisListName", "q");
    ERR("gpuMetricType is set without targetGpu", NULL, "metricType", "demand",
        "targetQueuePerReplica", "5", "redisAddress", "r", "redisListName", "q", "gpuMetricType",
        "sm_active");
    ERR("gpuIndex selects or combines GPUs", "add targetGpu", "metricType", "demand",
        "targetQueuePerReplica", "5", "redisAddress", "r", "redisListName", "q", "gpuIndex", "0");
    ERR("targetRunningPerReplica: Triton exports no", NULL, "metricType", "demand", "engine",
        "triton", "tritonEndpoint", "http://t/metrics", "targetRunningPerReplica", "4");
    ERR("invalid sourceInterval \"50ms\": must be from 100ms to 1m", NULL, "metricType", "demand",
        "targetQueuePerReplica", "5", "redisAddress", "r", "redisListName", "q", "sourceInterval",
        "50ms");
    ERR("sourceInterval is set, but the trigger reads no engine or queue source", NULL,
        "metricType", "demand", "targetGpu", "50", "sourceInterval", "1s");
    c = OK("metricType", "engine_queue", "engine", "vllm", "vllmEndpoint", "http://v/metrics",
           "targetValue", "5", "forecast", "trend", "coldStartSeconds", "135");
    assert_true(c.demand.forecast_trend);
    assert_int_equal(c.demand.cold_start_s, 135);
    c = OK("metricType", "engine_queue", "engine", "vllm", "vllmEndpoint", "http://v/metrics",
           "targetValue", "5", "forecast", "none");
    assert_false(c.demand.forecast_trend);
    ERR("forecast: trend needs coldStartSeconds", NULL, "metricType", "engine_queue", "engine",
        "vllm", "vllmEndpoint", "http://v/metrics", "targetValue", "5", "forecast", "trend");
    ERR("coldStartSeconds is set, but forecast is none", NULL, "metricType", "engine_queue",
        "engine", "vllm", "vllmEndpoint", "http://v/metrics", "targetValue", "5",
        "coldStartSeconds", "60");
    ERR("forecast is set, but metricType gpu_utilization is a GPU metric", NULL, "forecast",
        "trend", "coldStartSeconds", "60");
    ERR("invalid coldStartSeconds \"0\"", NULL, "metricType", "engine_queue", "engine", "vllm",
        "vllmEndpoint", "http://v/metrics", "targetValue", "5", "forecast", "trend",
        "coldStartSeconds", "0");
    ERR("invalid forecast \"holt\"", "none or trend", "metricType", "engine_queue", "engine",
        "vllm", "vllmEndpoint", "http://v/metrics", "targetValue", "5", "forecast", "holt");
    c = OK("metricType", "demand", "targetGpu", "50", "gpuIndex", "1");
    assert_true(trigger_uses_gpu(&c));
    assert_int_equal(c.gpu_index, 1);
}

/* metricType demand without per-signal targets: the queueing model. */
static void test_trigger_config_demand_queueing(void **state) {
    (void)state;
    trigger_config_t c = OK("metricType", "demand", "engine", "vllm", "podSelector", "app=llama");
    assert_int_equal(c.demand.type, DEMAND_COMPOSITE);
    assert_int_equal(c.demand.sizing, DEMAND_MODEL_QUEUEING);
    assert_true(c.target_value == 100);
    assert_true(c.demand.target_utilization == 0 && c.demand.drain_s == 10);
    assert_true(c.demand.capacity_rps == 0 && c.demand.cold_start_s == 0); /* learned */
    assert_true(trigger_uses_engine(&c));
    assert_false(trigger_uses_gpu(&c));
    /* a per-signal target keeps today's composite; so does the key */
    c = OK("metricType", "demand", "engine", "vllm", "podSelector", "app=llama",
           "targetQueuePerReplica", "5");
    assert_int_equal(c.demand.sizing, DEMAND_MODEL_COMPOSITE);
    /* every knob, with the queue as the only other signal */
    c = OK("metricType", "demand", "demandModel", "queueing", "engine", "vllm", "vllmEndpoint",
           "http://v:8000/metrics", "redisAddress", "r:6379", "redisListName", "q",
           "targetUtilization", "0.8", "drainSeconds", "20", "capacityPerReplica", "2.5",
           "coldStartSeconds", "90", "activationQueue", "3");
    assert_true(c.demand.target_utilization == 0.8 && c.demand.drain_s == 20);
    assert_true(c.demand.capacity_rps == 2.5 && c.demand.cold_start_s == 90);
    assert_true(c.demand.activation_queue == 3);
    assert_int_equal(c.demand.queue, QUEUE_REDIS_LIST);
    /* a queue alone: no engine needed (the model falls back to its priors) */
    c = OK("metricType", "demand", "redisAddress", "r:6379", "redisListName", "q");
    assert_false(trigger_uses_engine(&c));
    ERR("targetQueuePerReplica is a per-signal target of demandModel: composite",
        "set demandModel: composite", "metricType", "demand", "demandModel", "queueing", "engine",
        "vllm", "podSelector", "app=x", "targetQueuePerReplica", "5");
    ERR("drainSeconds is a key of demandModel: queueing", "a per-signal target is set",
        "metricType", "demand", "engine", "vllm", "podSelector", "app=x", "targetKvCache", "70",
        "drainSeconds", "5");
    ERR("invalid targetUtilization \"0\"", "above 0 and at most 1", "metricType", "demand",
        "engine", "vllm", "podSelector", "app=x", "targetUtilization", "0");
    ERR("invalid targetUtilization \"1.5\"", NULL, "metricType", "demand", "engine", "vllm",
        "podSelector", "app=x", "targetUtilization", "1.5");
    ERR("invalid drainSeconds \"0\"", "1 to 600", "metricType", "demand", "engine", "vllm",
        "podSelector", "app=x", "drainSeconds", "0");
    ERR("invalid capacityPerReplica", NULL, "metricType", "demand", "engine", "vllm", "podSelector",
        "app=x", "capacityPerReplica", "-1");
    ERR("invalid demandModel \"queue\"", "queueing or composite", "metricType", "demand", "engine",
        "vllm", "podSelector", "app=x", "demandModel", "queue");
    ERR("forecast: trend applies to demandModel composite", NULL, "metricType", "demand", "engine",
        "vllm", "podSelector", "app=x", "forecast", "trend", "coldStartSeconds", "60");
    ERR("the queueing model sizes the fleet itself", "drop targetValue", "metricType", "demand",
        "engine", "vllm", "podSelector", "app=x", "targetValue", "3");
    ERR("targetUtilization is set, but it applies to metricType demand", NULL, "metricType",
        "engine_queue", "engine", "vllm", "vllmEndpoint", "http://v/metrics", "targetValue", "5",
        "targetUtilization", "0.5");
}

static void test_trigger_config_shorthand_sets_type_and_target(void **state) {
    (void)state;
    trigger_config_t c = OK("targetGpuUtilization", "65");
    assert_int_equal(c.metric_type, METRIC_GPU_UTILIZATION);
    assert_true(c.target_value == 65);
    c = OK("targetMemoryUtilization", "75");
    assert_int_equal(c.metric_type, METRIC_MEMORY_USED_PERCENT); /* as the Go system */
    assert_true(c.target_value == 75);
    /* consistent with an explicit metricType or the profile: fine */
    c = OK("metricType", "gpu_utilization", "targetGpuUtilization", "50");
    assert_true(c.target_value == 50);
    c = OK("profile", "training", "targetGpuUtilization", "85");
    assert_true(c.target_value == 85);
    assert_string_equal(c.metric_name, "keda_gpu_training");
    c = OK("profile", "ollama", "targetMemoryUtilization", "60");
    assert_true(c.target_value == 60);
    /* explicit metricType replaces the profile's type before the shorthand */
    c = OK("profile", "batch", "metricType", "gpu_utilization", "targetGpuUtilization", "55");
    assert_int_equal(c.metric_type, METRIC_GPU_UTILIZATION);
}

static void test_trigger_config_rejects_shorthand_contradicting_metric_type(void **state) {
    (void)state;
    ERR("targetGpuUtilization implies metricType gpu_utilization",
        "metricType is \"memory_used_mib\"", "metricType", "memory_used_mib",
        "targetGpuUtilization", "50");
    ERR("targetMemoryUtilization implies metricType memory_used_percent",
        "metricType is \"memory_utilization\"", "targetMemoryUtilization", "50", "metricType",
        "memory_utilization");
}

static void test_trigger_config_rejects_shorthand_contradicting_profile(void **state) {
    (void)state;
    ERR("targetGpuUtilization implies metricType gpu_utilization",
        "profile \"batch\" uses memory_used_percent", "profile", "batch", "targetGpuUtilization",
        "50");
    ERR("targetMemoryUtilization", "profile \"training\" uses gpu_utilization", "profile",
        "training", "targetMemoryUtilization", "50");
}

static void test_trigger_config_rejects_two_shorthands_or_shorthand_with_target(void **state) {
    (void)state;
    ERR("targetGpuUtilization and targetMemoryUtilization are both set", NULL,
        "targetGpuUtilization", "50", "targetMemoryUtilization", "50");
    ERR("targetGpuUtilization and targetValue are both set", NULL, "targetGpuUtilization", "50",
        "targetValue", "50");
    ERR("targetMemoryUtilization and targetValue are both set", NULL, "targetValue", "5",
        "targetMemoryUtilization", "50");
}

static void test_trigger_config_parses_numbers_strictly(void **state) {
    (void)state;
    static const char *good[] = {"80", "+80", "8e1", "8E+1", "800e-1", ".5", "5.", "0.001", "1e12"};
    static const double want[] = {80, 80, 80, 80, 80, 0.5, 5, 0.001, 1e12};
    for (int i = 0; i < 9; i++) {
        trigger_config_t c = OK("targetValue", good[i]);
        assert_true(c.target_value == want[i]);
    }
    static const char *bad[] = {"",   " 80", "80 ", "80abc", "0x10", "inf",   "nan", "Infinity",
                                "1e", "e5",  ".",   "--1",   "1,5",  "1e400", "80%", "1_000"};
    for (int i = 0; i < 16; i++)
        ERR("invalid targetValue", "decimal number", "targetValue", bad[i]);
}

static void test_trigger_config_requires_a_positive_target(void **state) {
    (void)state;
    ERR("invalid targetValue \"0\"", "must be > 0", "targetValue", "0");
    ERR("invalid targetValue \"-5\"", "must be > 0", "targetValue", "-5");
    ERR("invalid targetValue \"0.0001\"", "0.001", "targetValue", "0.0001");
    ERR("invalid targetValue \"2e12\"", "1e12", "targetValue", "2e12");
    ERR("invalid targetGpuUtilization \"0\"", "must be > 0", "targetGpuUtilization", "0");
    ERR("invalid targetMemoryUtilization \"x\"", NULL, "targetMemoryUtilization", "x");
}

static void test_trigger_config_requires_a_non_negative_activation(void **state) {
    (void)state;
    ERR("invalid activationThreshold \"-1\"", ">= 0", "activationThreshold", "-1");
    ERR("invalid activationThreshold \"nan\"", NULL, "activationThreshold", "nan");
    ERR("invalid activationThreshold \"\"", NULL, "activationThreshold", "");
    trigger_config_t c = OK("activationThreshold", "-0");
    assert_true(c.activation_threshold == 0 && !signbit(c.activation_threshold));
}

static void test_trigger_config_validates_gpu_index(void **state) {
    (void)state;
    assert_int_equal(OK("gpuIndex", "-1").gpu_index, -1);
    assert_int_equal(OK("gpuIndex", "0").gpu_index, 0);
    assert_int_equal(OK("gpuIndex", "+7").gpu_index, 7);
    static const char *bad[] = {"-2", "1.5", "abc", "", "99999999999999999999", "65536", " 1"};
    for (int i = 0; i < 7; i++)
        ERR("invalid gpuIndex", "-1 (all GPUs)", "gpuIndex", bad[i]);
}

static void test_trigger_config_validates_poll_interval(void **state) {
    (void)state;
    assert_int_equal(OK("pollIntervalSeconds", "1").poll_interval_s, 1);
    assert_int_equal(OK("pollIntervalSeconds", "86400").poll_interval_s, 86400);
    static const char *bad[] = {"0", "-1", "1.5", "86401", "", "10s"};
    for (int i = 0; i < 6; i++)
        ERR("invalid pollIntervalSeconds", "from 1 to 86400", "pollIntervalSeconds", bad[i]);
}

static void test_trigger_config_validates_metric_name(void **state) {
    (void)state;
    char name[129];
    memset(name, 'a', 127);
    name[127] = '\0';
    assert_int_equal(strlen(OK("metricName", name).metric_name), 127);
    name[127] = 'a';
    name[128] = '\0';
    ERR("invalid metricName", "1-127 characters", "metricName", name);
    ERR("invalid metricName \"GPU\"", "a-z, 0-9", "metricName", "GPU");
    ERR("invalid metricName \"\"", NULL, "metricName", "");
    ERR("invalid metricName \"a.b\"", NULL, "metricName", "a.b");
}

static void test_trigger_config_reads_gpu_uuid_lists(void **state) {
    (void)state;
    trigger_config_t c = OK("gpuUUID", "GPU-aaaa-1111, GPU-bbbb-2222 ,GPU-cccc");
    assert_int_equal(c.gpu_uuid_count, 3);
    assert_string_equal(c.gpu_uuids[0], "GPU-aaaa-1111");
    assert_string_equal(c.gpu_uuids[1], "GPU-bbbb-2222");
    assert_string_equal(c.gpu_uuids[2], "GPU-cccc");
    ERR("invalid gpuUUID item \"gpu-aaaa\"", "GPU UUIDs", "gpuUUID", "gpu-aaaa");
    ERR("invalid gpuUUID item \"GPU-\"", NULL, "gpuUUID", "GPU-");
    ERR("invalid gpuUUID item \"GPU-a/b\"", NULL, "gpuUUID", "GPU-a/b");
    ERR("invalid gpuUUID item \"MIG-a\"", NULL, "gpuUUID", "MIG-a");
    ERR("empty item", NULL, "gpuUUID", "GPU-a,,GPU-b");
    ERR("empty item", NULL, "gpuUUID", "GPU-a,");
    ERR("empty item", NULL, "gpuUUID", "");
    ERR("\"GPU-a\" is listed twice", NULL, "gpuUUID", "GPU-a,GPU-b,GPU-a");
    char many[17 * 8 + 1] = "";
    for (int i = 0; i < 17; i++) {
        char item[9];
        snprintf(item, sizeof item, "%sGPU-%02d", i ? "," : "", i);
        strcat(many, item);
    }
    ERR("more than 16 items", NULL, "gpuUUID", many);
    many[strlen(many) - 7] = '\0'; /* 16 items */
    assert_int_equal(OK("gpuUUID", many).gpu_uuid_count, 16);
    char longid[101] = "GPU-";
    memset(longid + 4, 'a', 96);
    longid[100] = '\0';
    ERR("invalid gpuUUID item", NULL, "gpuUUID", longid);
}

static void test_trigger_config_reads_mig_uuid_lists_in_both_styles(void **state) {
    (void)state;
    trigger_config_t c = OK("migUUID", "MIG-8f3a5b2c-1d4e,MIG-GPU-5c1d0a4e/1/0");
    assert_int_equal(c.mig_uuid_count, 2);
    assert_string_equal(c.mig_uuids[1], "MIG-GPU-5c1d0a4e/1/0");
    ERR("invalid migUUID item \"GPU-a\"", "MIG UUIDs", "migUUID", "GPU-a");
}

static void test_trigger_config_validates_mig_profiles(void **state) {
    (void)state;
    static const char *good[] = {"1g.10gb",    "3g.40gb",        "7g.80gb",    "1c.3g.40gb",
                                 "1g.10gb+me", "1g.18gb+me.all", "1g.12gb-me", "1g.24gb+gfx"};
    for (int i = 0; i < 8; i++) {
        trigger_config_t c = OK("migProfile", good[i]);
        assert_int_equal(c.mig_profile_count, 1);
        assert_string_equal(c.mig_profiles[0], good[i]);
    }
    static const char *bad[] = {"3g",      "3g.40",     "g.40gb",    "3g.40gb+", "MIG 3g.40gb",
                                "3G.40GB", "c.3g.40gb", "1c3g.40gb", "3g.gb",    "3g.40gb+ME"};
    for (int i = 0; i < 10; i++)
        ERR("invalid migProfile item", "3g.40gb", "migProfile", bad[i]);
    trigger_config_t c = OK("migProfile", "1g.10gb, 2g.20gb");
    assert_int_equal(c.mig_profile_count, 2);
}

static void test_trigger_config_rejects_gpu_index_with_gpu_uuid(void **state) {
    (void)state;
    ERR("gpuIndex 0 and gpuUUID are both set", NULL, "gpuIndex", "0", "gpuUUID", "GPU-a");
    trigger_config_t c = OK("gpuIndex", "-1", "gpuUUID", "GPU-a");
    assert_int_equal(c.gpu_uuid_count, 1);
}

static void test_trigger_config_allows_mig_keys_with_gpu_selection(void **state) {
    (void)state;
    trigger_config_t c = OK("gpuIndex", "1", "migProfile", "3g.40gb");
    assert_int_equal(c.gpu_index, 1);
    c = OK("gpuUUID", "GPU-a", "migUUID", "MIG-b");
    assert_int_equal(c.mig_uuid_count, 1);
    ERR("migUUID and migProfile are both set", NULL, "migUUID", "MIG-b", "migProfile", "3g.40gb");
}

static void test_trigger_config_uses_slice_lengths_not_nul_terminators(void **state) {
    (void)state;
    const char buf[] = "targetValue75xyzgpuIndex2junk";
    metadata_pair_t p[2] = {{buf, 11, buf + 11, 2}, {buf + 16, 8, buf + 24, 1}};
    trigger_config_t c;
    char err[256] = "";
    assert_int_equal(trigger_config_parse(p, 2, &c, err, sizeof err), 0);
    assert_true(c.target_value == 75);
    assert_int_equal(c.gpu_index, 2);
}

static void test_trigger_config_result_does_not_depend_on_pair_order(void **state) {
    (void)state;
    trigger_config_t a = OK("profile", "batch", "targetValue", "50", "aggregation", "max");
    trigger_config_t b = OK("aggregation", "max", "targetValue", "50", "profile", "batch");
    assert_memory_equal(&a, &b, sizeof a);
    /* errors too: every problem, in key-table order */
    ERR("2 problems: 1) invalid metricType", "; 2) invalid targetValue \"0\"", "targetValue", "0",
        "metricType", "x");
    ERR("2 problems: 1) invalid metricType", "; 2) invalid targetValue \"0\"", "metricType", "x",
        "targetValue", "0");
}

static void test_trigger_config_accepts_null_error_buffer(void **state) {
    (void)state;
    metadata_pair_t p = {"bogus", 5, "1", 1};
    trigger_config_t c;
    assert_int_equal(trigger_config_parse(&p, 1, &c, NULL, 0), KGS_EINVAL);
    char tiny[8];
    assert_int_equal(trigger_config_parse(&p, 1, &c, tiny, sizeof tiny), KGS_EINVAL);
    assert_true(strlen(tiny) < sizeof tiny);
}

/* ---- workload scope (aggregator role) ---------------------------------------- */

static const char *selector_text(const label_selector_t *sel) {
    static char buf[LABEL_SELECTOR_MAX_LEN + 1];
    label_selector_format(sel, buf, sizeof buf);
    return buf;
}

static void test_trigger_config_scope_defaults_to_nodes_and_strict_partial_data(void **state) {
    (void)state;
    trigger_config_t c = OK0();
    assert_false(c.has_pod_selector);
    assert_true(label_selector_is_empty(&c.pod_selector));
    assert_false(c.has_namespace);
    assert_string_equal(c.pod_namespace, "");
    assert_int_equal(c.node_scope, NODE_SCOPE_ALL);
    assert_int_equal(c.node_name_count, 0);
    assert_true(label_selector_is_empty(&c.node_selector));
    assert_int_equal(c.pod_aggregation, POD_AGG_AVG);
    assert_int_equal(c.partial_data, PARTIAL_DATA_ERROR);
    assert_string_equal(pod_aggregation_name(POD_AGG_AVG), "avg");
    assert_string_equal(pod_aggregation_name((pod_aggregation_t)4), "?");
    assert_string_equal(partial_data_name(PARTIAL_DATA_IGNORE), "ignore");
    assert_string_equal(partial_data_name((partial_data_t)2), "?");
}

static void test_trigger_config_reads_pod_selector_and_namespace(void **state) {
    (void)state;
    trigger_config_t c =
        OK("podSelector", "app.kubernetes.io/name=vllm, tier in (b,a)", "namespace", "ml-serving");
    assert_true(c.has_pod_selector);
    assert_string_equal(selector_text(&c.pod_selector),
                        "app.kubernetes.io/name=vllm,tier in (a,b)");
    assert_true(c.has_namespace);
    assert_string_equal(c.pod_namespace, "ml-serving");
    assert_int_equal(c.node_scope, NODE_SCOPE_ALL);
    assert_int_equal(c.pod_aggregation, POD_AGG_AVG);

    /* namespace is optional: the server fills in the ScaledObject's */
    c = OK("podSelector", "app=vllm");
    assert_false(c.has_namespace);
    assert_string_equal(c.pod_namespace, "");

    /* an empty selector selects every pod in the namespace, as in Kubernetes */
    c = OK("podSelector", "");
    assert_true(c.has_pod_selector);
    assert_true(label_selector_is_empty(&c.pod_selector));
}

static void
test_trigger_config_rejects_invalid_pod_selector_with_the_selector_message(void **state) {
    (void)state;
    ERR("invalid podSelector: requirement \"app=-x\": invalid value \"-x\"", "letter or digit",
        "podSelector", "app=-x");
    ERR("invalid podSelector: requirement \"tier in (a,)\": empty value in the in set", NULL,
        "podSelector", "app=web,tier in (a,)");
    ERR("invalid podSelector: empty requirement", NULL, "podSelector", "app=web,");
    ERR("invalid podSelector: requirement \"replicas>1\"", "not supported", "podSelector",
        "replicas>1");
}

static void test_trigger_config_validates_namespace_as_a_dns_label(void **state) {
    (void)state;
    char ns[65];
    memset(ns, 'n', 63);
    ns[63] = '\0';
    assert_string_equal(OK("podSelector", "a", "namespace", ns).pod_namespace, ns);
    assert_string_equal(OK("podSelector", "a", "namespace", "0-a").pod_namespace, "0-a");
    ns[63] = 'n';
    ns[64] = '\0';
    static const char *bad[] = {"ML", "-a", "a-", "", "a.b", "a_b", " a", "kube system"};
    for (int i = 0; i < 8; i++)
        ERR("invalid namespace", "1-63 characters from a-z, 0-9 and '-'", "podSelector", "a",
            "namespace", bad[i]);
    ERR("invalid namespace \"nnn", NULL, "podSelector", "a", "namespace", ns);
}

static void test_trigger_config_reads_node_selector_as_names_without_operators(void **state) {
    (void)state;
    trigger_config_t c = OK("nodeSelector", "gpu-node-1, gpu-node-2 ,node.example.com");
    assert_int_equal(c.node_scope, NODE_SCOPE_NAMES);
    assert_int_equal(c.node_name_count, 3);
    assert_string_equal(c.node_names[0], "gpu-node-1");
    assert_string_equal(c.node_names[1], "gpu-node-2");
    assert_string_equal(c.node_names[2], "node.example.com");
    assert_true(label_selector_is_empty(&c.node_selector));

    ERR("invalid nodeSelector item \"Gpu_Node\"", "or a label selector such as \"pool=gpu\"",
        "nodeSelector", "Gpu_Node");
    ERR("invalid nodeSelector item \"gpu node\"", NULL, "nodeSelector", "gpu node");
    ERR("invalid nodeSelector item \"-a\"", NULL, "nodeSelector", "a,-a");
    ERR("invalid nodeSelector item \"a..b\"", NULL, "nodeSelector", "a..b");
    ERR("invalid nodeSelector \"\": empty item", NULL, "nodeSelector", "");
    ERR("empty item", NULL, "nodeSelector", "a,,b");
    ERR("\"a\" is listed twice", NULL, "nodeSelector", "a,b,a");
    char many[17 * 4 + 1] = "";
    for (int i = 0; i < 17; i++) {
        char item[5];
        snprintf(item, sizeof item, "%sn%02d", i ? "," : "", i);
        strcat(many, item);
    }
    ERR("invalid nodeSelector: more than 16 items", NULL, "nodeSelector", many);
    many[strlen(many) - 4] = '\0';
    assert_int_equal(OK("nodeSelector", many).node_name_count, 16);
    char name[300];
    for (int i = 0; i < 253; i++)
        name[i] = i % 60 == 59 ? '.' : 'n';
    name[253] = '\0';
    assert_string_equal(OK("nodeSelector", name).node_names[0], name);
    strcpy(name + 253, "n");
    ERR("invalid nodeSelector item", NULL, "nodeSelector", name);
}

static void test_trigger_config_reads_node_selector_with_an_operator_as_a_selector(void **state) {
    (void)state;
    static const struct {
        const char *in, *canon;
    } cases[] = {
        {"pool=gpu", "pool=gpu"},
        {"pool==gpu,zone!=b", "pool=gpu,zone!=b"},
        {"zone in (a,b)", "zone in (a,b)"},
        {"zone notin (c)", "zone notin (c)"},
        {"!spot", "!spot"},
        {"nvidia.com/gpu.present", "nvidia.com/gpu.present"}, /* '/' never occurs in a name */
        {"gpu,pool=a", "gpu,pool=a"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        trigger_config_t c = OK("nodeSelector", cases[i].in);
        assert_int_equal(c.node_scope, NODE_SCOPE_SELECTOR);
        assert_int_equal(c.node_name_count, 0);
        assert_string_equal(selector_text(&c.node_selector), cases[i].canon);
    }
    ERR("invalid nodeSelector (a label selector, since it contains one of = ! ( ) / < >): "
        "requirement \"pool=-x\"",
        NULL, "nodeSelector", "gpu-node-1,pool=-x");
    ERR("invalid nodeSelector (a label selector", "'>' and '<' are not supported", "nodeSelector",
        "gpus>2");
    /* partialData and device selection go with a node scope */
    trigger_config_t c = OK("nodeSelector", "pool=gpu", "partialData", "ignore", "gpuIndex", "0",
                            "migProfile", "3g.40gb");
    assert_int_equal(c.partial_data, PARTIAL_DATA_IGNORE);
    assert_int_equal(c.gpu_index, 0);
}

static void test_trigger_config_reads_pod_aggregation_and_partial_data(void **state) {
    (void)state;
    static const char *aggs[] = {"avg", "sum", "max", "min"};
    for (int a = 0; a < 4; a++) {
        trigger_config_t c = OK("podSelector", "app=x", "podAggregation", aggs[a]);
        assert_int_equal(c.pod_aggregation, a);
        assert_string_equal(pod_aggregation_name((pod_aggregation_t)a), aggs[a]);
    }
    assert_int_equal(OK("partialData", "error").partial_data, PARTIAL_DATA_ERROR);
    assert_int_equal(OK("partialData", "ignore").partial_data, PARTIAL_DATA_IGNORE);
    assert_int_equal(OK("podSelector", "a", "partialData", "ignore").partial_data,
                     PARTIAL_DATA_IGNORE);
}

static void test_trigger_config_rejects_bad_scope_enums_with_suggestion(void **state) {
    (void)state;
    static const struct {
        const char *in, *want;
    } agg[] = {{"average", "avg"}, {"mean", "avg"},    {"AVG", "avg"},
               {"Max", "max"},     {"maximum", "max"}, {"mx", "max"},
               {"total", "sum"},   {"minimum", "min"}, {"summ", "sum"}};
    for (size_t i = 0; i < sizeof agg / sizeof agg[0]; i++) {
        char want[64];
        snprintf(want, sizeof want, "did you mean \"%s\"?", agg[i].want);
        ERR("invalid podAggregation", want, "podSelector", "a", "podAggregation", agg[i].in);
    }
    ERR("invalid podAggregation \"p95\": must be avg, sum, max or min", NULL, "podSelector", "a",
        "podAggregation", "p95");
    trigger_config_t c;
    char err[512] = "";
    const char *const kv[] = {"podSelector", "a", "podAggregation", "bogus", NULL};
    assert_int_equal(parse_kv(kv, &c, err, sizeof err), KGS_EINVAL);
    assert_null(strstr(err, "did you mean"));

    ERR("invalid partialData \"Ignore\": must be error or ignore; did you mean \"ignore\"?", NULL,
        "partialData", "Ignore");
    ERR("did you mean \"ignore\"?", NULL, "partialData", "skip");
    ERR("did you mean \"ignore\"?", NULL, "partialData", "ign");
    ERR("did you mean \"error\"?", NULL, "partialData", "fail");
    ERR("did you mean \"error\"?", NULL, "partialData", "eror");
    ERR("invalid partialData \"\": must be error or ignore", NULL, "partialData", "");
}

static void test_trigger_config_rejects_pod_selector_with_device_selection(void **state) {
    (void)state;
    ERR("podSelector and gpuIndex are both set", "pod scope and device selection don't mix",
        "podSelector", "app=x", "gpuIndex", "0");
    ERR("podSelector and gpuUUID are both set", "drop gpuUUID", "podSelector", "app=x", "gpuUUID",
        "GPU-a");
    ERR("podSelector and migUUID are both set", NULL, "migUUID", "MIG-a", "podSelector", "app=x");
    ERR("podSelector and migProfile are both set", NULL, "podSelector", "app=x", "migProfile",
        "3g.40gb");
    /* gpuIndex -1 is "no restriction", as everywhere else */
    assert_true(OK("podSelector", "app=x", "gpuIndex", "-1").has_pod_selector);
}

static void test_trigger_config_rejects_pod_selector_with_node_selector(void **state) {
    (void)state;
    ERR("podSelector and nodeSelector are both set", "the pods say where they run", "podSelector",
        "app=x", "nodeSelector", "gpu-node-1");
    ERR("podSelector and nodeSelector are both set", NULL, "nodeSelector", "pool=gpu",
        "podSelector", "app=x");
}

static void test_trigger_config_gpu_sharing(void **state) {
    (void)state;
    trigger_config_t c = ok_kv((const char *const[]){"podSelector", "app=x", NULL});
    assert_int_equal(c.gpu_sharing, GPU_SHARING_AUTO);
    c = ok_kv((const char *const[]){"podSelector", "app=x", "gpuSharing", "share", "metricType",
                                    "memory_used_mib", NULL});
    assert_int_equal(c.gpu_sharing, GPU_SHARING_SHARE);
    c = ok_kv((const char *const[]){"podSelector", "app=x", "gpuSharing", "whole", "metricType",
                                    "temperature", NULL});
    assert_int_equal(c.gpu_sharing, GPU_SHARING_WHOLE);
    /* auto with a whole-GPU metric is fine: it is the whole value there. */
    ok_kv((const char *const[]){"podSelector", "app=x", "gpuSharing", "auto", "metricType",
                                "power_draw", NULL});
    ERR("gpuSharing share with metricType temperature", "for the whole GPU only", "podSelector",
        "app=x", "gpuSharing", "share", "metricType", "temperature");
    ERR("gpuSharing share with metricType sm_active", "gpu_utilization, memory_utilization",
        "podSelector", "app=x", "gpuSharing", "share", "metricType", "sm_active");
    ERR("gpuSharing is set without podSelector", "would be ignored", "gpuSharing", "share");
    ERR("gpuSharing", "auto, whole or share", "podSelector", "app=x", "gpuSharing", "split");
}

static void test_trigger_config_rejects_pod_keys_that_would_be_ignored(void **state) {
    (void)state;
    ERR("podAggregation is set without podSelector", "would be ignored", "podAggregation", "max");
    ERR("podAggregation is set without podSelector", NULL, "nodeSelector", "a", "podAggregation",
        "avg");
    ERR("namespace is set without podSelector", "would be ignored", "namespace", "default");
}

static void test_trigger_config_suggests_the_scope_keys(void **state) {
    (void)state;
    ERR("did you mean \"podSelector\"?", NULL, "podselector", "a");
    ERR("did you mean \"nodeSelector\"?", NULL, "nodeSelectors", "a");
    ERR("did you mean \"podAggregation\"?", NULL, "podAgg", "max");
    ERR("did you mean \"partialData\"?", NULL, "partialdata", "ignore");
    ERR("did you mean \"namespace\"?", NULL, "namespce", "default");
    trigger_config_t c;
    char err[512];
    const char *const kv[] = {"colour", "blue", NULL};
    assert_int_equal(parse_kv(kv, &c, err, sizeof err), KGS_EINVAL);
    assert_non_null(
        strstr(err, "podSelector, namespace, nodeSelector, podAggregation, partialData"));
}

static void test_trigger_config_scope_result_does_not_depend_on_pair_order(void **state) {
    (void)state;
    trigger_config_t a = OK("podSelector", "b=1,a in (y,x)", "namespace", "ml", "podAggregation",
                            "max", "partialData", "ignore");
    trigger_config_t b = OK("partialData", "ignore", "podAggregation", "max", "namespace", "ml",
                            "podSelector", "a in (x,y),b==1");
    assert_memory_equal(&a, &b, sizeof a);
    /* per-key errors come before combination errors, whatever the order */
    ERR("invalid namespace", NULL, "nodeSelector", "a", "podSelector", "x", "namespace", "A");
    ERR("invalid namespace", NULL, "namespace", "A", "podSelector", "x", "nodeSelector", "a");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trigger_config_defaults_match_the_go_system_except_aggregation),
        cmocka_unit_test(test_trigger_config_null_pairs_with_zero_count_gives_defaults),
        cmocka_unit_test(test_trigger_config_refuses_a_value_with_a_nul_byte),
        cmocka_unit_test(test_trigger_config_accepts_every_metric_type),
        cmocka_unit_test(test_trigger_config_accepts_every_aggregation),
        cmocka_unit_test(test_trigger_config_reads_each_scalar_key),
        cmocka_unit_test(test_trigger_config_ignores_kedas_own_keys),
        cmocka_unit_test(test_trigger_config_rejects_unknown_key_with_suggestion),
        cmocka_unit_test(
            test_trigger_config_rejects_unknown_key_without_suggestion_when_nothing_is_close),
        cmocka_unit_test(test_trigger_config_reports_the_smallest_unknown_key_whatever_the_order),
        cmocka_unit_test(test_trigger_config_escapes_and_truncates_quoted_input),
        cmocka_unit_test(test_trigger_config_rejects_duplicate_keys),
        cmocka_unit_test(test_trigger_config_engine_keys_need_an_engine_metric_type),
        cmocka_unit_test(test_trigger_config_go_engine_types_and_profiles),
        cmocka_unit_test(test_trigger_config_rejects_unknown_metric_type_listing_valid_ones),
        cmocka_unit_test(test_trigger_config_applies_profile_then_explicit_keys),
        cmocka_unit_test(test_trigger_config_rejects_unknown_profile_listing_every_profile),
        cmocka_unit_test(test_trigger_config_engine_keys),
        cmocka_unit_test(test_trigger_config_engine_epp),
        cmocka_unit_test(test_trigger_config_redis_queue_keys),
        cmocka_unit_test(test_trigger_config_prometheus_queue_keys),
        cmocka_unit_test(test_trigger_config_demand_composite),
        cmocka_unit_test(test_trigger_config_demand_queueing),
        cmocka_unit_test(test_trigger_config_shorthand_sets_type_and_target),
        cmocka_unit_test(test_trigger_config_rejects_shorthand_contradicting_metric_type),
        cmocka_unit_test(test_trigger_config_rejects_shorthand_contradicting_profile),
        cmocka_unit_test(test_trigger_config_rejects_two_shorthands_or_shorthand_with_target),
        cmocka_unit_test(test_trigger_config_parses_numbers_strictly),
        cmocka_unit_test(test_trigger_config_requires_a_positive_target),
        cmocka_unit_test(test_trigger_config_requires_a_non_negative_activation),
        cmocka_unit_test(test_trigger_config_validates_gpu_index),
        cmocka_unit_test(test_trigger_config_validates_poll_interval),
        cmocka_unit_test(test_trigger_config_validates_metric_name),
        cmocka_unit_test(test_trigger_config_reads_gpu_uuid_lists),
        cmocka_unit_test(test_trigger_config_reads_mig_uuid_lists_in_both_styles),
        cmocka_unit_test(test_trigger_config_validates_mig_profiles),
        cmocka_unit_test(test_trigger_config_rejects_gpu_index_with_gpu_uuid),
        cmocka_unit_test(test_trigger_config_allows_mig_keys_with_gpu_selection),
        cmocka_unit_test(test_trigger_config_uses_slice_lengths_not_nul_terminators),
        cmocka_unit_test(test_trigger_config_result_does_not_depend_on_pair_order),
        cmocka_unit_test(test_trigger_config_accepts_null_error_buffer),
        cmocka_unit_test(test_trigger_config_scope_defaults_to_nodes_and_strict_partial_data),
        cmocka_unit_test(test_trigger_config_reads_pod_selector_and_namespace),
        cmocka_unit_test(
            test_trigger_config_rejects_invalid_pod_selector_with_the_selector_message),
        cmocka_unit_test(test_trigger_config_validates_namespace_as_a_dns_label),
        cmocka_unit_test(test_trigger_config_reads_node_selector_as_names_without_operators),
        cmocka_unit_test(test_trigger_config_reads_node_selector_with_an_operator_as_a_selector),
        cmocka_unit_test(test_trigger_config_reads_pod_aggregation_and_partial_data),
        cmocka_unit_test(test_trigger_config_rejects_bad_scope_enums_with_suggestion),
        cmocka_unit_test(test_trigger_config_rejects_pod_selector_with_device_selection),
        cmocka_unit_test(test_trigger_config_rejects_pod_selector_with_node_selector),
        cmocka_unit_test(test_trigger_config_rejects_pod_keys_that_would_be_ignored),
        cmocka_unit_test(test_trigger_config_gpu_sharing),
        cmocka_unit_test(test_trigger_config_suggests_the_scope_keys),
        cmocka_unit_test(test_trigger_config_scope_result_does_not_depend_on_pair_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
