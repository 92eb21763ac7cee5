/*
 * trigger_keys.c - the metadata key table and the strict value parsers that
 * trigger_config.c and trigger_demand.c share (model: Redis config.c's
 * static_configs[]).
 *
 * Each key is one row: its name, its type, its bounds or enum values, the
 * text of the "must be ..." part of its error, its default as the reference
 * (docs/configuration.md) writes it, and its group. The row-driven parsers
 * below (tc_key_enum/int/nonneg/duration/bool) build every per-key message
 * from the row, the unknown-key message lists the rows, and the docs test
 * compares each row with its line in the reference, so the parser, its
 * messages and the reference cannot drift apart.
 *
 * Rules that tie keys together (which metric types a key serves, keys that
 * exclude each other) are not expressible as a row; they live with the
 * resolution steps in trigger_config.c and trigger_demand.c.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/duration.h"
#include "core/err.h"
#include "core/suggest.h"
#include "core/trigger_config.h"
#include "core/trigger_config_internal.h"

/* ---- names ----------------------------------------------------------------- */

/* The metricType names, once: GPU metric types in metric_type_t order, then
 * the demand types in demand_type_t order (without DEMAND_NONE). The first
 * four demand types are the Go system's names. */
#define GPU_METRIC_NAMES(X)                                                                        \
    X("gpu_utilization")                                                                           \
    X("memory_utilization")                                                                        \
    X("memory_used_mib")                                                                           \
    X("memory_used_percent")                                                                       \
    X("temperature")                                                                               \
    X("power_draw")                                                                                \
    X("pcie_tx_kbps")                                                                              \
    X("pcie_rx_kbps")                                                                              \
    X("nvlink_tx_mbps")                                                                            \
    X("nvlink_rx_mbps")                                                                            \
    X("sm_active")                                                                                 \
    X("sm_occupancy")                                                                              \
    X("dram_bandwidth")
#define DEMAND_TYPE_NAMES(X)                                                                       \
    X("vllm_queue_depth")                                                                          \
    X("vllm_kv_cache_usage")                                                                       \
    X("triton_queue_wait_ms")                                                                      \
    X("triton_request_rate")                                                                       \
    X("engine_queue")                                                                              \
    X("engine_running")                                                                            \
    X("engine_kv_cache")                                                                           \
    X("queue_length")                                                                              \
    X("demand")                                                                                    \
    X("slo")                                                                                       \
    X("engine_prompt_tokens_rate")                                                                 \
    X("engine_generation_tokens_rate")                                                             \
    X("vllm_lora_waiting_engines")
#define NAME_ITEM(n) n,

const char *const tc_metric_names[METRIC_TYPE_COUNT] = {GPU_METRIC_NAMES(NAME_ITEM)};

/* Index 0 is DEMAND_NONE. */
const char *const tc_demand_names[DEMAND_TYPE_COUNT] = {"", DEMAND_TYPE_NAMES(NAME_ITEM)};

/* In engine_t order; index 0 is ENGINE_NONE. */
#define ENGINE_NAMES(X) X("vllm") X("triton") X("tgi") X("sglang") X("epp")
const char *const tc_engine_names[ENGINE_EPP + 1] = {"", ENGINE_NAMES(NAME_ITEM)};

/* metricType: the GPU metric types, then the demand types (without
 * DEMAND_NONE); trigger_config.c maps an index past METRIC_TYPE_COUNT back
 * to demand_type_t. */
static const char *const metric_type_values[METRIC_TYPE_COUNT + DEMAND_TYPE_COUNT - 1] = {
    GPU_METRIC_NAMES(NAME_ITEM) DEMAND_TYPE_NAMES(NAME_ITEM)};

/* Each list has exactly one name per enum value (a missing one would
 * leave a NULL the tables read as a name). */
_Static_assert(sizeof((const char *[]){GPU_METRIC_NAMES(NAME_ITEM)}) / sizeof(const char *) ==
                   METRIC_TYPE_COUNT,
               "GPU_METRIC_NAMES and metric_type_t disagree");
_Static_assert(sizeof((const char *[]){DEMAND_TYPE_NAMES(NAME_ITEM)}) / sizeof(const char *) ==
                   DEMAND_TYPE_COUNT - 1,
               "DEMAND_TYPE_NAMES and demand_type_t disagree");
_Static_assert(sizeof((const char *[]){ENGINE_NAMES(NAME_ITEM)}) / sizeof(const char *) ==
                   ENGINE_EPP,
               "ENGINE_NAMES and engine_t disagree");

static const char *const aggregation_names[] = {"sum", "max", "min", "avg", "p95", "p99"};
static const char *const pod_aggregation_names[] = {"avg", "sum", "max", "min"};
static const char *const partial_data_names[] = {"error", "ignore"};
static const char *const gpu_sharing_names[] = {"auto", "whole", "share"};
static const char *const scheme_names[] = {"http", "https"};
static const char *const measure_names[] = {"lag", "pending", "length"};
static const char *const forecast_names[] = {"none", "trend"};
const char *const tc_demand_model_names[2] = {"queueing", "composite"};

#define NV(a) (sizeof(a) / sizeof((a)[0]))

const char *metric_type_name(metric_type_t t) {
    return (unsigned)t < METRIC_TYPE_COUNT ? tc_metric_names[t] : "?";
}

const char *demand_type_name(demand_type_t t) {
    return (unsigned)t < DEMAND_TYPE_COUNT ? tc_demand_names[t] : "?";
}

const char *demand_model_name(demand_model_t m) {
    return (unsigned)m < NV(tc_demand_model_names) ? tc_demand_model_names[m] : "?";
}

const char *engine_name(engine_t e) {
    return (unsigned)e < NV(tc_engine_names) ? tc_engine_names[e] : "?";
}

const char *aggregation_name(aggregation_t a) {
    return (unsigned)a < NV(aggregation_names) ? aggregation_names[a] : "?";
}

const char *pod_aggregation_name(pod_aggregation_t a) {
    return (unsigned)a < NV(pod_aggregation_names) ? pod_aggregation_names[a] : "?";
}

const char *gpu_sharing_name(gpu_sharing_t g) {
    return (unsigned)g < NV(gpu_sharing_names) ? gpu_sharing_names[g] : "?";
}

const char *partial_data_name(partial_data_t p) {
    return (unsigned)p < NV(partial_data_names) ? partial_data_names[p] : "?";
}

/* ---- the key table ----------------------------------------------------------- */

#define NS_PER_US 1000ll
#define NS_PER_MS 1000000ll
#define NS_PER_S 1000000000ll

#define ROW(n, t, g, d, ...)                                                                       \
    { .name = n, .type = t, .group = g, .def = d, __VA_ARGS__ }
#define ROW_INT(n, g, lo, hi, m, d, ...)                                                           \
    {                                                                                              \
        .name = n, .type = KT_INTEGER, .group = g, .min = lo, .max = hi, .must = m, .def = d,      \
        __VA_ARGS__                                                                                \
    }
#define ROW_ENUM(n, g, vals, m, d, ...)                                                            \
    {                                                                                              \
        .name = n, .type = KT_ENUM, .group = g, .values = vals, .nvalues = NV(vals), .must = m,    \
        .def = d, __VA_ARGS__                                                                      \
    }
#define ROW_NUM(n, g, m, d, ...)                                                                   \
    { .name = n, .type = KT_NUMBER, .group = g, .must = m, .def = d, __VA_ARGS__ }
#define ROW_DUR(n, g, lo, hi, d, ...)                                                              \
    { .name = n, .type = KT_DURATION, .group = g, .min = lo, .max = hi, .def = d, __VA_ARGS__ }

const key_row_t tc_keys[K_COUNT] = {
    [K_PROFILE] =
        ROW("profile", KT_NAME, KG_GENERAL, "none", .serves = TS_ALL, .example = "vllm-inference"),
    [K_METRIC_NAME] =
        ROW("metricName", KT_STRING, KG_GENERAL, "`keda_gpu_metric`, or the profile's",
            .serves = TS_ALL, .example = "my_metric"),
    [K_METRIC_TYPE] = ROW_ENUM("metricType", KG_GENERAL, metric_type_values, NULL,
                               "`gpu_utilization`, or the profile's", .serves = TS_ALL,
                               .example = "gpu_utilization"),
    [K_TARGET_VALUE] = ROW("targetValue", KT_TARGET, KG_GENERAL, "`80`, or the profile's",
                           .serves = TS_GPU | TS_ENGINE | TS_QUEUE, .example = "80"),
    [K_TARGET_GPU_UTIL] =
        ROW("targetGpuUtilization", KT_TARGET, KG_GENERAL, "—", .serves = TS_GPU, .example = "80"),
    [K_TARGET_MEM_UTIL] = ROW("targetMemoryUtilization", KT_TARGET, KG_GENERAL, "—",
                              .serves = TS_GPU, .example = "80"),
    [K_ACTIVATION] =
        ROW_NUM("activationThreshold", KG_GENERAL,
                "a finite decimal number >= 0 (the trigger is active while the value "
                "is above it)",
                "`0`, or the profile's", .serves = TS_GPU | TS_ENGINE | TS_QUEUE, .example = "5"),
    [K_GPU_INDEX] =
        ROW_INT("gpuIndex", KG_GENERAL, -1, 65535, "-1 (all GPUs) or an NVML index from 0 to 65535",
                "`-1` (no restriction)", .serves = TS_GPU | TS_DEMAND, .example = "0"),
    [K_AGGREGATION] =
        ROW_ENUM("aggregation", KG_GENERAL, aggregation_names, "sum, max, min, avg, p95 or p99",
                 "**`sum`**", .serves = TS_GPU | TS_DEMAND, .example = "max"),
    [K_POLL] = ROW_INT("pollIntervalSeconds", KG_GENERAL, 1, 86400,
                       "a whole number of seconds from 1 to 86400", "`10`", .serves = TS_ALL,
                       .example = "10"),
    [K_GPU_UUID] = ROW("gpuUUID", KT_LIST, KG_GENERAL, "—", .serves = TS_GPU | TS_DEMAND,
                       .example = "GPU-5c1d0a4e"),
    [K_MIG_UUID] = ROW("migUUID", KT_LIST, KG_GENERAL, "—", .serves = TS_GPU | TS_DEMAND,
                       .example = "MIG-8f3a"),
    [K_MIG_PROFILE] = ROW("migProfile", KT_LIST, KG_GENERAL, "—", .serves = TS_GPU | TS_DEMAND,
                          .example = "3g.40gb"),
    [K_POD_SELECTOR] = ROW("podSelector", KT_SELECTOR, KG_GENERAL, "none (no pod scope)",
                           .serves = TS_ALL, .example = "app=vllm"),
    [K_NAMESPACE] = ROW("namespace", KT_NAME, KG_GENERAL, "the ScaledObject's namespace",
                        .serves = TS_ALL, .example = "ml"),
    [K_NODE_SELECTOR] = ROW("nodeSelector", KT_NODES, KG_GENERAL, "none (every node)",
                            .serves = TS_GPU | TS_DEMAND, .example = "gpu-node-1"),
    [K_POD_AGGREGATION] =
        ROW_ENUM("podAggregation", KG_GENERAL, pod_aggregation_names, "avg, sum, max or min",
                 "`avg`", .serves = TS_GPU | TS_DEMAND, .example = "max"),
    [K_PARTIAL_DATA] = ROW_ENUM("partialData", KG_GENERAL, partial_data_names, "error or ignore",
                                "`error`", .serves = TS_ALL, .example = "ignore"),
    [K_GPU_SHARING] = ROW_ENUM("gpuSharing", KG_GENERAL, gpu_sharing_names, "auto, whole or share",
                               "`auto`", .serves = TS_GPU | TS_DEMAND, .example = "share"),
    [K_ENGINE] = {.name = "engine",
                  .type = KT_ENUM,
                  .group = KG_ENGINE,
                  .values = tc_engine_names + 1, /* ENGINE_NONE is not a spelling */
                  .nvalues = NV(tc_engine_names) - 1,
                  .must = "vllm, triton, tgi, sglang or epp",
                  .def = "implied by the metric type or endpoint key",
                  .serves = TS_ENGINE | TS_DEMAND | TS_SLO,
                  .example = "vllm"},
    [K_VLLM_ENDPOINT] =
        ROW("vllmEndpoint", KT_URL_LIST, KG_ENGINE, "—", .serves = TS_ENGINE | TS_DEMAND | TS_SLO,
            .example = "http://vllm:8000/metrics"),
    [K_TRITON_ENDPOINT] =
        ROW("tritonEndpoint", KT_URL_LIST, KG_ENGINE, "—", .serves = TS_ENGINE | TS_DEMAND | TS_SLO,
            .example = "http://triton:8002/metrics"),
    [K_ENGINE_ENDPOINT] =
        ROW("engineEndpoint", KT_URL_LIST, KG_ENGINE, "—", .serves = TS_ENGINE | TS_DEMAND | TS_SLO,
            .example = "http://tgi:80/metrics"),
    [K_ENGINE_PORT] = ROW_INT("enginePort", KG_ENGINE, 1, 65535, "a port number from 1 to 65535",
                              "vLLM 8000, Triton 8002, TGI 80, SGLang 30000, EPP 9090",
                              .serves = TS_ENGINE | TS_DEMAND | TS_SLO, .example = "8000"),
    [K_ENGINE_PATH] = ROW("enginePath", KT_PATH, KG_ENGINE, "`/metrics`",
                          .serves = TS_ENGINE | TS_DEMAND | TS_SLO, .example = "/metrics"),
    [K_ENGINE_SCHEME] = ROW_ENUM("engineScheme", KG_ENGINE, scheme_names, "http or https", "`http`",
                                 .serves = TS_ENGINE | TS_DEMAND | TS_SLO, .example = "https"),
    [K_MODEL] = ROW("model", KT_STRING, KG_ENGINE, "all models",
                    .serves = TS_ENGINE | TS_DEMAND | TS_SLO, .example = "llama"),
    [K_WINDOW] = ROW_INT("windowSeconds", KG_ENGINE, 1, 3600, "whole seconds from 1 to 3600",
                         "`30`", .serves = TS_ENGINE | TS_DEMAND | TS_SLO, .example = "30"),
    [K_LORA_ADAPTER] =
        ROW("loraAdapter", KT_STRING, KG_ENGINE, "—", .serves = TS_ENGINE, .example = "sql-lora"),
    [K_SOURCE_AUTH] = ROW("sourceAuth", KT_STRING, KG_ENGINE, "none (no credentials)",
                          .serves = TS_ENGINE | TS_QUEUE | TS_DEMAND | TS_SLO, .example = "epp"),
    [K_REDIS_ADDRESS] = ROW("redisAddress", KT_ADDRESS, KG_QUEUE, "—",
                            .serves = TS_QUEUE | TS_DEMAND, .example = "redis:6379"),
    [K_REDIS_LIST] = ROW("redisListName", KT_STRING, KG_QUEUE, "—", .serves = TS_QUEUE | TS_DEMAND,
                         .example = "jobs"),
    [K_REDIS_STREAM] = ROW("redisStream", KT_STRING, KG_QUEUE, "—", .serves = TS_QUEUE | TS_DEMAND,
                           .example = "events"),
    [K_REDIS_GROUP] = ROW("redisConsumerGroup", KT_STRING, KG_QUEUE, "—",
                          .serves = TS_QUEUE | TS_DEMAND, .example = "workers"),
    [K_REDIS_MEASURE] = ROW_ENUM("redisStreamMeasure", KG_QUEUE, measure_names,
                                 "lag, pending or length", "`lag` with a group, else `length`",
                                 .serves = TS_QUEUE | TS_DEMAND, .example = "pending"),
    [K_REDIS_DB] =
        ROW_INT("redisDatabaseIndex", KG_QUEUE, 0, 15, "0 to 15", "`0`, or the URL's `/db`",
                .serves = TS_QUEUE | TS_DEMAND, .example = "1"),
    [K_REDIS_TLS] = ROW("redisTLS", KT_BOOL, KG_QUEUE, "`false` (`true` for `rediss://`)",
                        .serves = TS_QUEUE | TS_DEMAND, .example = "true"),
    [K_REDIS_USER] = ROW("redisUsernameFromEnv", KT_STRING, KG_QUEUE, "—",
                         .serves = TS_QUEUE | TS_DEMAND, .example = "scaler"),
    [K_REDIS_PASS] = ROW("redisPasswordFromEnv", KT_STRING, KG_QUEUE, "—",
                         .serves = TS_QUEUE | TS_DEMAND, .example = "secret"),
    [K_DEMAND_ENDPOINT] =
        ROW("demandEndpoint", KT_URL, KG_QUEUE, "—", .serves = TS_QUEUE | TS_DEMAND,
            .example = "http://gateway:9000/metrics"),
    [K_DEMAND_METRIC] = ROW("demandMetric", KT_NAME, KG_QUEUE, "—", .serves = TS_QUEUE | TS_DEMAND,
                            .example = "queue_depth"),
    [K_DEMAND_LABELS] = ROW("demandLabels", KT_MATCHERS, KG_QUEUE, "all samples",
                            .serves = TS_QUEUE | TS_DEMAND, .example = "model=\"llama\""),
    [K_TARGET_QUEUE] = ROW("targetQueuePerReplica", KT_TARGET, KG_DEMAND, "—", .serves = TS_DEMAND,
                           .example = "5"),
    [K_TARGET_RUNNING] = ROW("targetRunningPerReplica", KT_TARGET, KG_DEMAND, "—",
                             .serves = TS_DEMAND, .example = "5"),
    [K_TARGET_KV] =
        ROW("targetKvCache", KT_TARGET, KG_DEMAND, "—", .serves = TS_DEMAND, .example = "70"),
    [K_TARGET_GPU] =
        ROW("targetGpu", KT_TARGET, KG_DEMAND, "—", .serves = TS_DEMAND, .example = "80"),
    [K_TARGET_PROMPT_TOKENS] = ROW("targetPromptTokensPerReplica", KT_TARGET, KG_DEMAND, "—",
                                   .serves = TS_DEMAND, .example = "4000"),
    [K_TARGET_GEN_TOKENS] = ROW("targetGenerationTokensPerReplica", KT_TARGET, KG_DEMAND, "—",
                                .serves = TS_DEMAND, .example = "1500"),
    [K_GPU_METRIC_TYPE] =
        ROW_ENUM("gpuMetricType", KG_DEMAND, tc_metric_names, NULL, "`gpu_utilization`",
                 .serves = TS_DEMAND, .example = "sm_active"),
    [K_ACTIVATION_QUEUE] = ROW_NUM("activationQueue", KG_DEMAND, "a decimal number >= 0", "`0`",
                                   .serves = TS_DEMAND, .example = "1"),
    [K_ACTIVATION_GPU] = ROW_NUM("activationGpu", KG_DEMAND, "a decimal number >= 0", "`0`",
                                 .serves = TS_DEMAND, .example = "10"),
    [K_DEMAND_MODEL] =
        ROW_ENUM("demandModel", KG_DEMAND, tc_demand_model_names, "queueing or composite",
                 "`queueing`; `composite` when a per-signal target is set", .serves = TS_DEMAND,
                 .example = "composite"),
    [K_TARGET_UTILIZATION] = ROW("targetUtilization", KT_RATIO, KG_DEMAND, "—",
                                 .must = "a decimal number above 0 and at most 1 (the share of "
                                         "a replica's capacity to plan for)",
                                 .serves = TS_DEMAND, .example = "0.8"),
    [K_DRAIN_SECONDS] = ROW_INT("drainSeconds", KG_DEMAND, 1, 600, "whole seconds from 1 to 600",
                                "`10`", .serves = TS_DEMAND, .example = "20"),
    [K_CAPACITY] = ROW("capacityPerReplica", KT_TARGET, KG_DEMAND, "learned", .serves = TS_DEMAND,
                       .example = "2.5"),
    [K_SOURCE_INTERVAL] =
        ROW_DUR("sourceInterval", KG_DEMAND, 100 * NS_PER_MS, 60 * NS_PER_S, "`1s`",
                .serves = TS_ENGINE | TS_QUEUE | TS_DEMAND | TS_SLO, .example = "500ms"),
    [K_SOURCE_TIMEOUT] =
        ROW_DUR("sourceTimeout", KG_DEMAND, 100 * NS_PER_MS, 30 * NS_PER_S, "`2s`",
                .serves = TS_ENGINE | TS_QUEUE | TS_DEMAND | TS_SLO, .example = "1s"),
    [K_FORECAST] = ROW_ENUM("forecast", KG_FORECAST, forecast_names, "none or trend", "`none`",
                            .serves = TS_ENGINE | TS_QUEUE | TS_DEMAND, .example = "trend"),
    [K_COLD_START] = ROW_INT("coldStartSeconds", KG_FORECAST, 1, 3600,
                             "whole seconds from 1 to 3600 (how long a new replica takes to "
                             "serve: node, image, weights)",
                             "learned (`demandModel: queueing`)",
                             .serves = TS_ENGINE | TS_QUEUE | TS_DEMAND, .example = "120"),
/* Latency objectives (trigger_slo.c): 100 us .. 1 h. */
#define SLO_ROW(k, n, ex)                                                                          \
    [k] = ROW_DUR(n, KG_SLO, 100 * NS_PER_US, 3600 * NS_PER_S, "—", .serves = TS_SLO | TS_DEMAND,  \
                  .example = ex)
    SLO_ROW(K_TTFT_P50, "ttftP50Target", "300ms"),
    SLO_ROW(K_TTFT_P90, "ttftP90Target", "500ms"),
    SLO_ROW(K_TTFT_P99, "ttftP99Target", "2s"),
    SLO_ROW(K_TPOT_P50, "tpotP50Target", "30ms"),
    SLO_ROW(K_TPOT_P90, "tpotP90Target", "50ms"),
    SLO_ROW(K_TPOT_P99, "tpotP99Target", "100ms"),
    SLO_ROW(K_E2E_P50, "e2eP50Target", "5s"),
    SLO_ROW(K_E2E_P90, "e2eP90Target", "10s"),
    SLO_ROW(K_E2E_P99, "e2eP99Target", "30s"),
    SLO_ROW(K_QUEUE_P50, "queueTimeP50Target", "100ms"),
    SLO_ROW(K_QUEUE_P90, "queueTimeP90Target", "500ms"),
    SLO_ROW(K_QUEUE_P99, "queueTimeP99Target", "2s"),
#undef SLO_ROW
    [K_SLO_MIN_REQUESTS] = ROW_INT("sloMinRequests", KG_SLO, 1, 1000000,
                                   "a whole number of requests from 1 to 1000000", "`10`",
                                   .serves = TS_SLO | TS_DEMAND, .example = "20"),
    [K_SLO_MAX_STEP] = ROW("sloMaxStep", KT_TARGET, KG_SLO, "`2`",
                           .must = "a decimal number above 1 and at most 100 (the most the "
                                   "replicas wanted may grow or shrink against the ready "
                                   "replicas, as a factor)",
                           .serves = TS_SLO | TS_DEMAND, .example = "1.5"),
    [K_SLO_TOLERANCE] =
        ROW_NUM("sloTolerance", KG_SLO,
                "a decimal number >= 0 and at most 0.5 (the dead band around a ratio "
                "of 1)",
                "`0.1`", .serves = TS_SLO | TS_DEMAND, .example = "0.05"),
    [K_SCALER_ADDRESS] = ROW("scalerAddress", KT_IGNORED, KG_KEDA, "—", .serves = TS_ALL,
                             .example = "keda-gpu-scaler:6000"),
    [K_ENABLE_TLS] =
        ROW("enableTLS", KT_IGNORED, KG_KEDA, "—", .serves = TS_ALL, .example = "false"),
    [K_UNSAFE_SSL] =
        ROW("unsafeSsl", KT_IGNORED, KG_KEDA, "—", .serves = TS_ALL, .example = "false"),
};

const char *tc_type_doc_name(key_type_t t) {
    static const char *const names[] = {
        [KT_NAME] = "name",
        [KT_ENUM] = "name",
        [KT_STRING] = "string",
        [KT_TARGET] = "number",
        [KT_NUMBER] = "number",
        [KT_RATIO] = "number",
        [KT_INTEGER] = "integer",
        [KT_DURATION] = "duration",
        [KT_BOOL] = "bool",
        [KT_LIST] = "list",
        [KT_SELECTOR] = "label selector",
        [KT_NODES] = "list or label selector",
        [KT_URL_LIST] = "URL list",
        [KT_URL] = "URL",
        [KT_PATH] = "path",
        [KT_ADDRESS] = "address",
        [KT_MATCHERS] = "matchers",
        [KT_IGNORED] = "—",
    };
    return (unsigned)t < NV(names) && names[t] ? names[t] : "?";
}

size_t trigger_config_key_count(void) {
    return K_COUNT;
}

const char *trigger_config_key_name(size_t i) {
    return i < K_COUNT ? tc_keys[i].name : NULL;
}

bool trigger_config_key_doc(size_t i, trigger_key_doc_t *out) {
    if (i >= K_COUNT)
        return false;
    out->name = tc_keys[i].name;
    out->type = tc_type_doc_name(tc_keys[i].type);
    out->def = tc_keys[i].def;
    out->kedas = tc_keys[i].group == KG_KEDA;
    return true;
}

int tc_key_lookup(const char *p, size_t n) {
    for (int k = 0; k < K_COUNT; k++)
        if (metadata_slice_eq(p, n, tc_keys[k].name))
            return k;
    return -1;
}

bool trigger_config_key_known(const char *p, size_t n) {
    return tc_key_lookup(p, n) >= 0;
}

/* ---- messages ---------------------------------------------------------------- */

/* Every key, by group: "profile, ..., the engine keys (engine, ...), ...,
 * forecast, coldStartSeconds and KEDA's scalerAddress, enableTLS, unsafeSsl". */
static void list_keys(char *buf, size_t len) {
    static const char *const labels[] = {
        [KG_GENERAL] = NULL,  [KG_ENGINE] = "engine", [KG_QUEUE] = "queue", [KG_DEMAND] = "demand",
        [KG_FORECAST] = NULL, [KG_SLO] = "slo",       [KG_KEDA] = NULL,
    };
    size_t o = 0;
    buf[0] = '\0';
#define PUT(...)                                                                                   \
    do {                                                                                           \
        int w_ = snprintf(buf + o, len - o, __VA_ARGS__);                                          \
        if (w_ < 0 || (size_t)w_ >= len - o)                                                       \
            return;                                                                                \
        o += (size_t)w_;                                                                           \
    } while (0)
    for (int k = 0; k < K_COUNT; k++) {
        key_group_t g = tc_keys[k].group;
        bool first_of_group = k == 0 || tc_keys[k - 1].group != g;
        bool last_of_group = k == K_COUNT - 1 || tc_keys[k + 1].group != g;
        if (first_of_group && g == KG_KEDA)
            PUT(" and KEDA's ");
        else if (k > 0)
            PUT(", ");
        if (first_of_group && labels[g])
            PUT("the %s keys (", labels[g]);
        PUT("%s", tc_keys[k].name);
        if (last_of_group && labels[g])
            PUT(")");
    }
#undef PUT
}

int tc_unknown_key(const char *p, size_t n, char *err, size_t errlen) {
    char q[QBUF];
    const char *names[K_COUNT];
    for (int k = 0; k < K_COUNT; k++)
        names[k] = tc_keys[k].name;
    const char *s = suggest_name(p, n, names, K_COUNT);
    if (s)
        return kgs_seterr(err, errlen, KGS_EINVAL, "unknown metadata key %s: did you mean \"%s\"?",
                          kgs_quote(q, sizeof q, p, n), s);
    char list[2048];
    list_keys(list, sizeof list);
    return kgs_seterr(err, errlen, KGS_EINVAL, "unknown metadata key %s: valid keys are %s",
                      kgs_quote(q, sizeof q, p, n), list);
}

/* Words people write for an enum value, mapped to the value they mean. */
static const suggest_synonym_t value_synonyms[] = {
    {"average", "avg"},  {"mean", "avg"},       {"total", "sum"},    {"maximum", "max"},
    {"minimum", "min"},  {"fail", "error"},     {"strict", "error"}, {"skip", "ignore"},
    {"allow", "ignore"}, {"partial", "ignore"},
};

int tc_parse_enum(const char *key, const char *p, size_t n, const char *const *names, size_t count,
                  const char *valid, int *out, char *err, size_t errlen) {
    char q[QBUF];
    for (size_t k = 0; k < count; k++)
        if (metadata_slice_eq(p, n, names[k])) {
            *out = (int)k;
            return 0;
        }
    const char *s = suggest_value(p, n, names, count, value_synonyms, NV(value_synonyms));
    if (s) {
        int len = snprintf(NULL, 0, "invalid %s %s: must be %s; did you mean \"%s\"?", key,
                           kgs_quote(q, sizeof q, p, n), valid, s);
        /* A long list (metricType's) would push the suggestion past a small
         * buffer (the config cache keeps 512 bytes): then it comes first. */
        if (len > 0 && (size_t)len >= errlen && err)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "invalid %s %s: did you mean \"%s\"? It must be %s", key,
                              kgs_quote(q, sizeof q, p, n), s, valid);
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "invalid %s %s: must be %s; did you mean \"%s\"?", key,
                          kgs_quote(q, sizeof q, p, n), valid, s);
    }
    return kgs_seterr(err, errlen, KGS_EINVAL, "invalid %s %s: must be %s", key,
                      kgs_quote(q, sizeof q, p, n), valid);
}

/* ---- scalar parsers -------------------------------------------------------- */

slice_t tc_value_of(const metadata_pair_t *m) {
    slice_t s = {m->value ? m->value : "", m->value ? m->value_len : 0};
    return s;
}

/* Strict decimal floating point: [+-]? (D+ (. D*)? | . D+) ([eE] [+-]? D+)?
 * No whitespace, hex, inf, nan or trailing bytes. */
bool tc_parse_number(const char *p, size_t n, double *out) {
    char buf[64];
    if (n == 0 || n >= sizeof buf)
        return false;
    size_t i = 0, digits = 0;
    if (p[i] == '+' || p[i] == '-')
        i++;
    while (i < n && isdigit((unsigned char)p[i]))
        i++, digits++;
    if (i < n && p[i] == '.') {
        i++;
        while (i < n && isdigit((unsigned char)p[i]))
            i++, digits++;
    }
    if (digits == 0)
        return false;
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        i++;
        if (i < n && (p[i] == '+' || p[i] == '-'))
            i++;
        size_t ed = 0;
        while (i < n && isdigit((unsigned char)p[i]))
            i++, ed++;
        if (ed == 0)
            return false;
    }
    if (i != n)
        return false;
    memcpy(buf, p, n);
    buf[n] = '\0';
    char *end = NULL;
    double v = strtod(buf, &end); /* the grammar above leaves no locale-dependent input */
    if (end != buf + n || !isfinite(v))
        return false;
    *out = v;
    return true;
}

/* Strict decimal integer: [+-]? D{1,18}. */
bool tc_parse_integer(const char *p, size_t n, long long *out) {
    size_t i = 0;
    bool neg = false;
    if (n > 0 && (p[0] == '+' || p[0] == '-')) {
        neg = p[0] == '-';
        i = 1;
    }
    if (i == n || n - i > 18)
        return false;
    long long v = 0;
    for (; i < n; i++) {
        if (!isdigit((unsigned char)p[i]))
            return false;
        v = v * 10 + (p[i] - '0');
    }
    *out = neg ? -v : v;
    return true;
}

#define TARGET_MIN 0.001 /* KEDA sends targets as milli-quantities: less rounds to 0 */
#define TARGET_MAX 1e12  /* keeps target * 1000 far inside int64 */

int tc_parse_target(const char *key, slice_t v, double *out, char *err, size_t errlen) {
    char q[QBUF];
    double d;
    if (!tc_parse_number(v.p, v.n, &d))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "invalid %s %s: must be a decimal number such as \"80\" or \"0.5\"", key,
                          kgs_quote(q, sizeof q, v.p, v.n));
    if (!(d >= TARGET_MIN && d <= TARGET_MAX))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "invalid %s %s: must be > 0 (at least 0.001, KEDA's resolution, and at "
                          "most 1e12); the HPA rejects a target of 0",
                          key, kgs_quote(q, sizeof q, v.p, v.n));
    *out = d;
    return 0;
}

/* ---- row-driven parsers ------------------------------------------------------ */

int tc_key_enum(key_id_t k, slice_t v, int *out, char *err, size_t errlen) {
    const key_row_t *r = &tc_keys[k];
    char list[512];
    const char *valid = r->must;
    if (!valid) {
        size_t o = (size_t)snprintf(list, sizeof list, "one of ");
        for (size_t i = 0; i < r->nvalues && o < sizeof list; i++)
            o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", i ? ", " : "", r->values[i]);
        valid = list;
    }
    return tc_parse_enum(r->name, v.p, v.n, r->values, r->nvalues, valid, out, err, errlen);
}

int tc_key_int(key_id_t k, slice_t v, long long *out, char *err, size_t errlen) {
    const key_row_t *r = &tc_keys[k];
    char q[QBUF];
    long long i;
    if (!tc_parse_integer(v.p, v.n, &i) || i < r->min || i > r->max)
        return kgs_seterr(err, errlen, KGS_EINVAL, "invalid %s %s: must be %s", r->name,
                          kgs_quote(q, sizeof q, v.p, v.n), r->must);
    *out = i;
    return 0;
}

int tc_key_nonneg(key_id_t k, slice_t v, double *out, char *err, size_t errlen) {
    const key_row_t *r = &tc_keys[k];
    char q[QBUF];
    double d;
    if (!tc_parse_number(v.p, v.n, &d) || d < 0)
        return kgs_seterr(err, errlen, KGS_EINVAL, "invalid %s %s: must be %s", r->name,
                          kgs_quote(q, sizeof q, v.p, v.n), r->must);
    *out = d == 0 ? 0 : d; /* no -0 */
    return 0;
}

int tc_key_ratio(key_id_t k, slice_t v, double *out, char *err, size_t errlen) {
    const key_row_t *r = &tc_keys[k];
    char q[QBUF];
    double d;
    if (!tc_parse_number(v.p, v.n, &d) || !(d > 0 && d <= 1))
        return kgs_seterr(err, errlen, KGS_EINVAL, "invalid %s %s: must be %s", r->name,
                          kgs_quote(q, sizeof q, v.p, v.n), r->must);
    *out = d;
    return 0;
}

int tc_key_duration(key_id_t k, slice_t v, uint64_t *out, char *err, size_t errlen) {
    const key_row_t *r = &tc_keys[k];
    char q[QBUF], buf[64], why[256];
    uint64_t ns;
    if (v.n == 0 || v.n >= sizeof buf || memchr(v.p, '\0', v.n))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "invalid %s %s: must be a duration like "
                          "\"1s\" or \"500ms\"",
                          r->name, kgs_quote(q, sizeof q, v.p, v.n));
    memcpy(buf, v.p, v.n);
    buf[v.n] = '\0';
    if (duration_parse_ns(buf, &ns, why, sizeof why) != 0)
        return kgs_seterr(err, errlen, KGS_EINVAL, "invalid %s: %s", r->name, why);
    if (ns < (uint64_t)r->min || ns > (uint64_t)r->max) {
        char a[32], b[32];
        return kgs_seterr(err, errlen, KGS_EINVAL, "invalid %s %s: must be from %s to %s", r->name,
                          kgs_quote(q, sizeof q, v.p, v.n),
                          duration_format((uint64_t)r->min, a, sizeof a),
                          duration_format((uint64_t)r->max, b, sizeof b));
    }
    *out = ns;
    return 0;
}

int tc_key_bool(key_id_t k, slice_t v, bool *out, char *err, size_t errlen) {
    char q[QBUF];
    if (metadata_slice_eq(v.p, v.n, "true")) {
        *out = true;
        return 0;
    }
    if (metadata_slice_eq(v.p, v.n, "false")) {
        *out = false;
        return 0;
    }
    return kgs_seterr(err, errlen, KGS_EINVAL, "invalid %s %s: must be true or false",
                      tc_keys[k].name, kgs_quote(q, sizeof q, v.p, v.n));
}
