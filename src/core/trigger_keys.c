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
#include <stdarg.h>
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
    [K_TARGET_SATURATION] =
        ROW("targetSaturation", KT_TARGET, KG_DEMAND, "—", .serves = TS_DEMAND, .example = "0.7"),
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
    SLO_ROW(K_ITL_P50, "itlP50Target", "30ms"),
    SLO_ROW(K_ITL_P90, "itlP90Target", "60ms"),
    SLO_ROW(K_ITL_P99, "itlP99Target", "150ms"),
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

/* ---- problems ---------------------------------------------------------------- */

/*
 * A problem's message is built in place, at the end of P->text: begun,
 * appended to piece by piece, ended. One that does not fit is dropped
 * whole (counted, not stored), never cut; once one is dropped no later one
 * is stored, so the stored ones are always the first, in report order.
 */
void tc_problems_reset(trigger_problems_t *P) {
    P->count = P->stored = 0;
    P->note_on = -1;
    P->note = NULL;
    P->_used = P->_start = 0;
    P->_overflow = false;
    P->text[0] = '\0';
}

void tc_msg_begin(trigger_problems_t *P) {
    P->_start = P->_used;
    P->_overflow = P->stored < P->count || P->stored == TRIGGER_MAX_PROBLEMS;
}

static void msg_vadd(trigger_problems_t *P, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
static void msg_vadd(trigger_problems_t *P, const char *fmt, va_list ap) {
    if (P->_overflow)
        return;
    size_t room = sizeof P->text - P->_used;
    int w = room ? vsnprintf(P->text + P->_used, room, fmt, ap) : -1;
    if (w < 0 || (size_t)w >= room) {
        P->_overflow = true;
        P->_used = P->_start;
        if (P->_used < sizeof P->text)
            P->text[P->_used] = '\0';
        return;
    }
    P->_used += (size_t)w;
}

void tc_msg_add(trigger_problems_t *P, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    msg_vadd(P, fmt, ap);
    va_end(ap);
}

int tc_msg_end(trigger_problems_t *P) {
    P->count++;
    if (!P->_overflow) {
        P->msg[P->stored++] = P->text + P->_start;
        P->_used++; /* past the NUL vsnprintf wrote */
    } else {
        P->_used = P->_start;
    }
    return KGS_EINVAL;
}

int tc_fail(trigger_problems_t *P, const char *fmt, ...) {
    va_list ap;
    tc_msg_begin(P);
    va_start(ap, fmt);
    msg_vadd(P, fmt, ap);
    va_end(ap);
    return tc_msg_end(P);
}

/* Appends s to buf[0 .. len) at *o when it fits whole (one NUL kept), and
 * counts it in *o either way. */
static void put(char *buf, size_t len, size_t *o, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t len, size_t *o, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (w < 0)
        return;
    if (buf && *o + (size_t)w < len) {
        va_start(ap, fmt);
        vsnprintf(buf + *o, len - *o, fmt, ap);
        va_end(ap);
    }
    *o += (size_t)w;
}

/* Problem i with its note. */
static void put_one(const trigger_problems_t *p, unsigned i, char *buf, size_t len, size_t *o) {
    put(buf, len, o, "%s", p->msg[i]);
    if (p->note && p->note_on == (int)i)
        put(buf, len, o, " (%s)", p->note);
}

size_t trigger_problems_format_one(const trigger_problems_t *p, unsigned i, char *buf, size_t len) {
    size_t o = 0;
    if (buf && len)
        buf[0] = '\0';
    if (i >= p->stored)
        return 0;
    put_one(p, i, NULL, 0, &o);
    if (buf && o < len) {
        o = 0;
        put_one(p, i, buf, len, &o);
    }
    return o;
}

/* The message with the first `shown` stored problems; `whole` > 0: the
 * length of the whole message, named when shown < stored. */
static size_t emit(const trigger_problems_t *p, unsigned shown, size_t whole, char *buf,
                   size_t len) {
    size_t o = 0;
    if (p->count == 1 && shown == 1) {
        put_one(p, 0, buf, len, &o);
        return o;
    }
    if (shown == 0) {
        put(buf, len, &o, "%u problem%s (%zu bytes of messages: too long to show here)", p->count,
            p->count == 1 ? "" : "s", whole);
        return o;
    }
    put(buf, len, &o, "%u problems: ", p->count);
    for (unsigned i = 0; i < shown; i++) {
        put(buf, len, &o, "%s%u) ", i ? "; " : "", i + 1);
        put_one(p, i, buf, len, &o);
    }
    if (shown < p->count)
        put(buf, len, &o, "; and %u more", p->count - shown);
    if (shown < p->stored)
        put(buf, len, &o, " (%zu bytes in all)", whole);
    return o;
}

size_t trigger_problems_format(const trigger_problems_t *p, char *buf, size_t len) {
    if (buf && len)
        buf[0] = '\0';
    if (p->count == 0)
        return 0;
    size_t whole = emit(p, p->stored, 0, NULL, 0);
    if (!buf || whole < len) {
        if (buf)
            emit(p, p->stored, 0, buf, len);
        return whole;
    }
    /* Too small: the whole problems that fit, and what is left, summarised. */
    for (unsigned shown = p->stored; shown-- > 0;)
        if (emit(p, shown, whole, NULL, 0) < len) {
            emit(p, shown, whole, buf, len);
            return whole;
        }
    return whole;
}

/* ---- messages ---------------------------------------------------------------- */

int tc_unknown_key(const char *p, size_t n, trigger_problems_t *P) {
    char q[QBUF];
    const char *names[K_COUNT];
    for (int k = 0; k < K_COUNT; k++)
        names[k] = tc_keys[k].name;
    const char *s = suggest_name(p, n, names, K_COUNT);
    if (s)
        return tc_fail(P, "unknown metadata key %s: did you mean \"%s\"?",
                       kgs_quote(q, sizeof q, p, n), s);
    /* Every key would be a paragraph: the general ones, and where the rest are. */
    tc_msg_begin(P);
    tc_msg_add(P, "unknown metadata key %s: no key is close to it; the general keys are ",
               kgs_quote(q, sizeof q, p, n));
    int k = 0;
    for (; k < K_COUNT && tc_keys[k].group == KG_GENERAL; k++)
        tc_msg_add(P, "%s%s", k ? ", " : "", tc_keys[k].name);
    tc_msg_add(P,
               ", and %d more (the engine, queue, demand, forecast and latency keys, and KEDA's "
               "own): see docs/configuration.md#keys",
               K_COUNT - k);
    return tc_msg_end(P);
}

/* Words people write for an enum value, mapped to the value they mean. */
static const suggest_synonym_t value_synonyms[] = {
    {"average", "avg"},  {"mean", "avg"},       {"total", "sum"},    {"maximum", "max"},
    {"minimum", "min"},  {"fail", "error"},     {"strict", "error"}, {"skip", "ignore"},
    {"allow", "ignore"}, {"partial", "ignore"},
};

/* "must be" part of an enum's message: valid, or "one of <names>". */
static void add_valid(trigger_problems_t *P, const char *const *names, size_t count,
                      const char *valid) {
    if (valid) {
        tc_msg_add(P, "%s", valid);
        return;
    }
    tc_msg_add(P, "one of ");
    for (size_t i = 0; i < count; i++)
        tc_msg_add(P, "%s%s", i ? ", " : "", names[i]);
}

int tc_parse_enum(const char *key, const char *p, size_t n, const char *const *names, size_t count,
                  const char *valid, int *out, trigger_problems_t *P) {
    char q[QBUF];
    for (size_t k = 0; k < count; k++)
        if (metadata_slice_eq(p, n, names[k])) {
            *out = (int)k;
            return 0;
        }
    const char *s = suggest_value(p, n, names, count, value_synonyms, NV(value_synonyms));
    tc_msg_begin(P);
    tc_msg_add(P, "invalid %s %s: ", key, kgs_quote(q, sizeof q, p, n));
    if (s && !valid) { /* a long list: the suggestion first, where it is seen */
        tc_msg_add(P, "did you mean \"%s\"? It must be ", s);
        add_valid(P, names, count, valid);
    } else {
        tc_msg_add(P, "must be ");
        add_valid(P, names, count, valid);
        if (s)
            tc_msg_add(P, "; did you mean \"%s\"?", s);
    }
    return tc_msg_end(P);
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

int tc_parse_target(const char *key, slice_t v, double *out, trigger_problems_t *P) {
    char q[QBUF];
    double d;
    if (!tc_parse_number(v.p, v.n, &d))
        return tc_fail(P, "invalid %s %s: must be a decimal number such as \"80\" or \"0.5\"", key,
                       kgs_quote(q, sizeof q, v.p, v.n));
    if (!(d >= TARGET_MIN && d <= TARGET_MAX))
        return tc_fail(P,
                       "invalid %s %s: must be > 0 (at least 0.001, KEDA's resolution, and at "
                       "most 1e12); the HPA rejects a target of 0",
                       key, kgs_quote(q, sizeof q, v.p, v.n));
    *out = d;
    return 0;
}

/* ---- row-driven parsers ------------------------------------------------------ */

/*
 * Metric names of the engines and of dcgm-exporter that people write as a
 * metricType, with the metricType (and engine) that reads the same thing.
 * The engines' names are those src/sources/engine_metrics.c reads (it
 * cites each engine's source); DCGM's are dcgm-exporter's field names at
 * release 4.5.3-4.8.2 (691c927, etc/default-counters.csv and
 * etc/dcp-metrics-included.csv; DCGM_FI_PROF_* are ratios 0-1 there, where
 * NVML gives us percentages).
 */
typedef struct {
    const char *native; /* as the engine or exporter names it */
    const char *metric; /* our metricType */
    const char *engine; /* engine to add; NULL when the metricType implies it or reads GPUs */
    const char *extra;  /* more keys to add ("" none) */
    const char *whose;  /* whose name it is */
} native_name_t;

static const native_name_t native_names[] = {
    {"vllm:num_requests_waiting", "engine_queue", "vllm", "", "vLLM"},
    {"vllm:num_requests_running", "engine_running", "vllm", "", "vLLM"},
    {"vllm:kv_cache_usage_perc", "engine_kv_cache", "vllm", "", "vLLM"},
    {"vllm:gpu_cache_usage_perc", "engine_kv_cache", "vllm", "", "vLLM"},
    {"vllm:prompt_tokens_total", "engine_prompt_tokens_rate", "vllm", "", "vLLM"},
    {"vllm:generation_tokens_total", "engine_generation_tokens_rate", "vllm", "", "vLLM"},
    {"vllm:time_to_first_token_seconds", "slo", "vllm", " and ttftP90Target: \"500ms\"", "vLLM"},
    {"vllm:request_time_per_output_token_seconds", "slo", "vllm", " and tpotP90Target: \"50ms\"",
     "vLLM"},
    {"vllm:inter_token_latency_seconds", "slo", "vllm", " and itlP90Target: \"60ms\"", "vLLM"},
    {"vllm:time_per_output_token_seconds", "slo", "vllm", " and itlP90Target: \"60ms\"", "vLLM"},
    {"vllm:e2e_request_latency_seconds", "slo", "vllm", " and e2eP90Target: \"10s\"", "vLLM"},
    {"vllm:request_queue_time_seconds", "slo", "vllm", " and queueTimeP90Target: \"500ms\"",
     "vLLM"},
    {"vllm:lora_requests_info", "vllm_lora_waiting_engines", NULL,
     " with loraAdapter (the adapter's name)", "vLLM"},
    {"sglang:num_queue_reqs", "engine_queue", "sglang", "", "SGLang"},
    {"sglang:num_running_reqs", "engine_running", "sglang", "", "SGLang"},
    {"sglang:token_usage", "engine_kv_cache", "sglang", "", "SGLang"},
    {"sglang:prompt_tokens_total", "engine_prompt_tokens_rate", "sglang", "", "SGLang"},
    {"sglang:generation_tokens_total", "engine_generation_tokens_rate", "sglang", "", "SGLang"},
    {"sglang:time_to_first_token_seconds", "slo", "sglang", " and ttftP90Target: \"500ms\"",
     "SGLang"},
    {"sglang:queue_time_seconds", "slo", "sglang", " and queueTimeP90Target: \"500ms\"", "SGLang"},
    {"sglang:inter_token_latency_seconds", "slo", "sglang", " and itlP90Target: \"60ms\"",
     "SGLang"},
    {"sglang:time_per_output_token_seconds", "slo", "sglang", " and itlP90Target: \"60ms\"",
     "SGLang"},
    {"sglang:e2e_request_latency_seconds", "slo", "sglang", " and e2eP90Target: \"10s\"", "SGLang"},
    {"tgi_queue_size", "engine_queue", "tgi", "", "TGI"},
    {"tgi_batch_current_size", "engine_running", "tgi", "", "TGI"},
    {"tgi_request_input_length", "engine_prompt_tokens_rate", "tgi", "", "TGI"},
    {"tgi_request_generated_tokens", "engine_generation_tokens_rate", "tgi", "", "TGI"},
    {"tgi_request_duration", "slo", "tgi", " and e2eP90Target: \"10s\"", "TGI"},
    {"tgi_request_queue_duration", "slo", "tgi", " and queueTimeP90Target: \"500ms\"", "TGI"},
    {"tgi_request_mean_time_per_token_duration", "slo", "tgi", " and tpotP90Target: \"50ms\"",
     "TGI"},
    {"nv_inference_pending_request_count", "engine_queue", "triton", "", "Triton"},
    {"nv_inference_queue_duration_us", "triton_queue_wait_ms", NULL, "", "Triton"},
    {"nv_inference_request_success", "triton_request_rate", NULL, "", "Triton"},
    {"nv_inference_count", "triton_request_rate", NULL, "", "Triton"},
    {"llm_d_epp_flow_control_queue_size", "engine_queue", "epp", "", "the EPP"},
    {"inference_extension_flow_control_queue_size", "engine_queue", "epp", "", "the EPP"},
    {"llm_d_epp_average_queue_size", "engine_queue", "epp", "", "the EPP"},
    {"inference_pool_average_queue_size", "engine_queue", "epp", "", "the EPP"},
    {"llm_d_epp_average_running_requests", "engine_running", "epp", "", "the EPP"},
    {"inference_pool_average_running_requests", "engine_running", "epp", "", "the EPP"},
    {"llm_d_epp_average_kv_cache_utilization", "engine_kv_cache", "epp", "", "the EPP"},
    {"inference_pool_average_kv_cache_utilization", "engine_kv_cache", "epp", "", "the EPP"},
    {"llm_d_epp_flow_control_pool_saturation", "demand", "epp", " and targetSaturation: \"0.7\"",
     "the EPP"},
    {"inference_extension_flow_control_pool_saturation", "demand", "epp",
     " and targetSaturation: \"0.7\"", "the EPP"},
    {"nv_inference_first_response_histogram_ms", "slo", "triton", " and ttftP90Target: \"500ms\"",
     "Triton"},
    {"DCGM_FI_DEV_GPU_UTIL", "gpu_utilization", NULL, "", "dcgm-exporter"},
    {"DCGM_FI_DEV_MEM_COPY_UTIL", "memory_utilization", NULL, "", "dcgm-exporter"},
    {"DCGM_FI_DEV_FB_USED", "memory_used_mib", NULL, "", "dcgm-exporter"},
    {"DCGM_FI_DEV_GPU_TEMP", "temperature", NULL, "", "dcgm-exporter"},
    {"DCGM_FI_DEV_POWER_USAGE", "power_draw", NULL, "", "dcgm-exporter"},
    {"DCGM_FI_PROF_SM_ACTIVE", "sm_active", NULL, " (a percentage here, a ratio in DCGM)",
     "dcgm-exporter"},
    {"DCGM_FI_PROF_SM_OCCUPANCY", "sm_occupancy", NULL, " (a percentage here, a ratio in DCGM)",
     "dcgm-exporter"},
    {"DCGM_FI_PROF_DRAM_ACTIVE", "dram_bandwidth", NULL, " (a percentage here, a ratio in DCGM)",
     "dcgm-exporter"},
    {"DCGM_FI_PROF_PCIE_TX_BYTES", "pcie_tx_kbps", NULL, " (KiB/s here, bytes/s in DCGM)",
     "dcgm-exporter"},
    {"DCGM_FI_PROF_PCIE_RX_BYTES", "pcie_rx_kbps", NULL, " (KiB/s here, bytes/s in DCGM)",
     "dcgm-exporter"},
};

/* The native name's own part: after an "engine:" prefix, or after the
 * engine's "<engine>_" / dcgm-exporter's "DCGM_FI_DEV_" / "DCGM_FI_PROF_". */
static const char *native_stem(const char *name) {
    const char *c = strchr(name, ':');
    if (c)
        return c + 1;
    static const char *const prefixes[] = {"DCGM_FI_DEV_", "DCGM_FI_PROF_", "tgi_", "vllm_",
                                           "llm_d_epp_"};
    for (size_t i = 0; i < NV(prefixes); i++)
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
            return name + strlen(prefixes[i]);
    return name;
}

/*
 * The row of native_names[] that (p, n) names: the name as written, with
 * '_' for ':' (vllm_num_requests_waiting), or without its prefix
 * (num_requests_waiting, gpu_cache_usage_perc), within suggest_name()'s
 * distance (kv_cache_usage, a prefix). NULL when none; gpu_only: only rows
 * that read GPUs (gpuMetricType).
 */
static const native_name_t *native_lookup(const char *p, size_t n, bool gpu_only) {
    enum { N = NV(native_names) };
    const char *forms[2 * N];
    char underscored[N][64];
    for (size_t i = 0; i < N; i++) {
        bool skip = gpu_only && native_names[i].engine;
        const char *name = native_names[i].native;
        snprintf(underscored[i], sizeof underscored[i], "%s", name);
        for (char *c = underscored[i]; *c; c++)
            if (*c == ':')
                *c = '_';
        forms[i] = skip ? NULL : underscored[i];
        forms[N + i] = skip ? NULL : native_stem(name);
    }
    char in[SUGGEST_MAX_LEN + 1];
    if (n == 0 || n > SUGGEST_MAX_LEN)
        return NULL;
    for (size_t i = 0; i < n; i++)
        in[i] = p[i] == ':' ? '_' : p[i];
    const char *s = suggest_name(in, n, forms, 2 * N);
    for (size_t i = 0; s && i < 2 * N; i++)
        if (forms[i] == s)
            return &native_names[i % N];
    return NULL;
}

int tc_key_enum(key_id_t k, slice_t v, int *out, trigger_problems_t *P) {
    const key_row_t *r = &tc_keys[k];
    const native_name_t *nat = NULL;
    if (k == K_METRIC_TYPE || k == K_GPU_METRIC_TYPE) {
        int found = 0;
        for (size_t i = 0; i < r->nvalues && !found; i++)
            found = metadata_slice_eq(v.p, v.n, r->values[i]);
        if (!found && !suggest_value(v.p, v.n, r->values, r->nvalues, NULL, 0))
            nat = native_lookup(v.p, v.n, k == K_GPU_METRIC_TYPE);
    }
    if (!nat)
        return tc_parse_enum(r->name, v.p, v.n, r->values, r->nvalues, r->must, out, P);
    char q[QBUF];
    tc_msg_begin(P);
    tc_msg_add(P, "invalid %s %s: that is %s's metric %s; did you mean %s: %s", r->name,
               kgs_quote(q, sizeof q, v.p, v.n), nat->whose, nat->native, r->name, nat->metric);
    if (nat->engine)
        tc_msg_add(P, " with engine: %s", nat->engine);
    tc_msg_add(P, "%s? It must be ", nat->extra);
    add_valid(P, r->values, r->nvalues, r->must);
    return tc_msg_end(P);
}

int tc_key_int(key_id_t k, slice_t v, long long *out, trigger_problems_t *P) {
    const key_row_t *r = &tc_keys[k];
    char q[QBUF];
    long long i;
    if (!tc_parse_integer(v.p, v.n, &i) || i < r->min || i > r->max)
        return tc_fail(P, "invalid %s %s: must be %s", r->name, kgs_quote(q, sizeof q, v.p, v.n),
                       r->must);
    *out = i;
    return 0;
}

int tc_key_nonneg(key_id_t k, slice_t v, double *out, trigger_problems_t *P) {
    const key_row_t *r = &tc_keys[k];
    char q[QBUF];
    double d;
    if (!tc_parse_number(v.p, v.n, &d) || d < 0)
        return tc_fail(P, "invalid %s %s: must be %s", r->name, kgs_quote(q, sizeof q, v.p, v.n),
                       r->must);
    *out = d == 0 ? 0 : d; /* no -0 */
    return 0;
}

int tc_key_ratio(key_id_t k, slice_t v, double *out, trigger_problems_t *P) {
    const key_row_t *r = &tc_keys[k];
    char q[QBUF];
    double d;
    if (!tc_parse_number(v.p, v.n, &d) || !(d > 0 && d <= 1))
        return tc_fail(P, "invalid %s %s: must be %s", r->name, kgs_quote(q, sizeof q, v.p, v.n),
                       r->must);
    *out = d;
    return 0;
}

int tc_key_duration(key_id_t k, slice_t v, uint64_t *out, trigger_problems_t *P) {
    const key_row_t *r = &tc_keys[k];
    char q[QBUF], buf[64], why[1024]; /* why: any duration_parse_ns message */
    uint64_t ns;
    if (v.n == 0 || v.n >= sizeof buf || memchr(v.p, '\0', v.n))
        return tc_fail(P,
                       "invalid %s %s: must be a duration like "
                       "\"1s\" or \"500ms\"",
                       r->name, kgs_quote(q, sizeof q, v.p, v.n));
    memcpy(buf, v.p, v.n);
    buf[v.n] = '\0';
    if (duration_parse_ns(buf, &ns, why, sizeof why) != 0)
        return tc_fail(P, "invalid %s: %s", r->name, why);
    if (ns < (uint64_t)r->min || ns > (uint64_t)r->max) {
        char a[32], b[32];
        return tc_fail(P, "invalid %s %s: must be from %s to %s", r->name,
                       kgs_quote(q, sizeof q, v.p, v.n),
                       duration_format((uint64_t)r->min, a, sizeof a),
                       duration_format((uint64_t)r->max, b, sizeof b));
    }
    *out = ns;
    return 0;
}

int tc_key_bool(key_id_t k, slice_t v, bool *out, trigger_problems_t *P) {
    char q[QBUF];
    if (metadata_slice_eq(v.p, v.n, "true")) {
        *out = true;
        return 0;
    }
    if (metadata_slice_eq(v.p, v.n, "false")) {
        *out = false;
        return 0;
    }
    return tc_fail(P, "invalid %s %s: must be true or false", tc_keys[k].name,
                   kgs_quote(q, sizeof q, v.p, v.n));
}
