/*
 * trigger_config_internal.h - what the three files of the trigger
 * configuration share. Not for other modules.
 *
 * The files depend on each other one way only:
 *   trigger_keys.c    the key table (one row per metadata key: name, type,
 *                     bounds, enum values, default, group), the name tables
 *                     and the strict value parsers; depends on nothing else
 *                     of the three;
 *   trigger_demand.c  the engine, queue, composite and forecast keys; uses
 *                     trigger_keys.c;
 *   trigger_config.c  trigger_config_parse(): collects the pairs into slots,
 *                     resolves the general and scope keys, then calls
 *                     trigger_demand.c.
 */
#ifndef KGS_CORE_TRIGGER_CONFIG_INTERNAL_H
#define KGS_CORE_TRIGGER_CONFIG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/metadata.h"
#include "core/trigger_config.h"

#define QBUF KGS_QUOTE_BUF

/* One per row of tc_keys[], in table order (which is also the order of the
 * "valid keys are ..." message and of trigger_config_key_name()). */
typedef enum {
    K_PROFILE,
    K_METRIC_NAME,
    K_METRIC_TYPE,
    K_TARGET_VALUE,
    K_TARGET_GPU_UTIL,
    K_TARGET_MEM_UTIL,
    K_ACTIVATION,
    K_GPU_INDEX,
    K_AGGREGATION,
    K_POLL,
    K_GPU_UUID,
    K_MIG_UUID,
    K_MIG_PROFILE,
    K_POD_SELECTOR,
    K_NAMESPACE,
    K_NODE_SELECTOR,
    K_POD_AGGREGATION,
    K_PARTIAL_DATA,
    K_GPU_SHARING,
    K_ENGINE,
    K_VLLM_ENDPOINT, /* the three endpoint keys stay adjacent (resolve_engine loops over them) */
    K_TRITON_ENDPOINT,
    K_ENGINE_ENDPOINT,
    K_ENGINE_PORT,
    K_ENGINE_PATH,
    K_ENGINE_SCHEME,
    K_MODEL,
    K_WINDOW,
    K_LORA_ADAPTER,
    K_SOURCE_AUTH,
    K_REDIS_ADDRESS,
    K_REDIS_LIST,
    K_REDIS_STREAM,
    K_REDIS_GROUP,
    K_REDIS_MEASURE,
    K_REDIS_DB,
    K_REDIS_TLS,
    K_REDIS_USER,
    K_REDIS_PASS,
    K_DEMAND_ENDPOINT,
    K_DEMAND_METRIC,
    K_DEMAND_LABELS,
    K_TARGET_QUEUE,
    K_TARGET_RUNNING,
    K_TARGET_KV,
    K_TARGET_GPU,
    K_TARGET_PROMPT_TOKENS, /* the token-rate targets, kept after targetGpu */
    K_TARGET_GEN_TOKENS,
    K_TARGET_SATURATION, /* epp: the pool saturation target */
    K_GPU_METRIC_TYPE,
    K_ACTIVATION_QUEUE,
    K_ACTIVATION_GPU,
    K_DEMAND_MODEL, /* the queueing model's keys: demandModel .. capacityPerReplica */
    K_TARGET_UTILIZATION,
    K_DRAIN_SECONDS,
    K_CAPACITY,
    K_SOURCE_INTERVAL,
    K_SOURCE_TIMEOUT,
    K_FORECAST,
    K_COLD_START,
    K_TTFT_P50, /* the fifteen latency targets stay adjacent, signal-major, p50/p90/p99 */
    K_TTFT_P90,
    K_TTFT_P99,
    K_TPOT_P50,
    K_TPOT_P90,
    K_TPOT_P99,
    K_E2E_P50,
    K_E2E_P90,
    K_E2E_P99,
    K_QUEUE_P50,
    K_QUEUE_P90,
    K_QUEUE_P99,
    K_ITL_P50,
    K_ITL_P90,
    K_ITL_P99,
    K_SLO_MIN_REQUESTS,
    K_SLO_MAX_STEP,
    K_SLO_TOLERANCE,
    K_SCALER_ADDRESS, /* KEDA's own: accepted and ignored */
    K_ENABLE_TLS,
    K_UNSAFE_SSL,
    K_COUNT
} key_id_t;

/* A value's type; tc_type_doc_name() gives the word docs/configuration.md
 * uses for it in the Type column. */
typedef enum {
    KT_NAME,     /* a validated name (profile, namespace, Prometheus metric) */
    KT_ENUM,     /* one of values[0 .. nvalues): tc_key_enum() */
    KT_STRING,   /* bytes with no control characters */
    KT_TARGET,   /* a target: tc_parse_target() (0.001 .. 1e12) */
    KT_NUMBER,   /* a decimal number >= 0: tc_key_nonneg() */
    KT_RATIO,    /* a decimal number in (0, 1]: tc_key_ratio() */
    KT_INTEGER,  /* min .. max: tc_key_int() */
    KT_DURATION, /* min .. max nanoseconds: tc_key_duration() */
    KT_BOOL,     /* true / false: tc_key_bool() */
    KT_LIST,     /* comma-separated items */
    KT_SELECTOR, /* a Kubernetes label selector */
    KT_NODES,    /* node names, or a label selector */
    KT_URL_LIST, /* comma-separated http(s) URLs, parsed with source_url */
    KT_URL,      /* one http(s) URL */
    KT_PATH,     /* an HTTP path */
    KT_ADDRESS,  /* a Redis address */
    KT_MATCHERS, /* PromQL-style label matchers */
    KT_IGNORED,  /* KEDA's own key */
} key_type_t;

/* What a key belongs to: groups the "valid keys are ..." message. */
typedef enum {
    KG_GENERAL,
    KG_ENGINE,
    KG_QUEUE,
    KG_DEMAND,
    KG_FORECAST,
    KG_SLO,
    KG_KEDA
} key_group_t;

/* Which triggers a key serves, by metric type: a key set on a trigger its
 * row does not serve is refused, naming the key (test_trigger_keys checks the
 * resolution against these). Finer rules within a family (windowSeconds only
 * for the Triton rates, podAggregation only with podSelector) are the
 * resolution's. */
#define TS_GPU 1u    /* a GPU metric type */
#define TS_ENGINE 2u /* vllm_*, triton_*, engine_* */
#define TS_QUEUE 4u  /* queue_length */
#define TS_DEMAND 8u /* demand (composite) */
#define TS_SLO 16u   /* slo */
#define TS_ALL (TS_GPU | TS_ENGINE | TS_QUEUE | TS_DEMAND | TS_SLO)

/* One metadata key. */
typedef struct {
    const char *name;
    key_type_t type;
    key_group_t group;
    long long min, max;        /* KT_INTEGER: the valid range; KT_DURATION: in ns */
    const char *const *values; /* KT_ENUM: the valid spellings, in the enum's order */
    size_t nvalues;            /* KT_ENUM */
    const char *must;          /* "invalid <key> "<v>": must be <must>"; for KT_ENUM NULL
                                  means "one of <values>" */
    const char *def;           /* the Default cell of docs/configuration.md, verbatim */
    unsigned serves;           /* TS_*: the metric types it applies to */
    const char *example;       /* a valid value */
} key_row_t;

/* The table, in key_id_t order. */
extern const key_row_t tc_keys[K_COUNT];

/* The word docs/configuration.md writes in the Type column for t. */
const char *tc_type_doc_name(key_type_t t);

/* Records one problem of the trigger in P (a printf-style message, whole or
 * not at all: trigger_problems_t) and returns KGS_EINVAL, so a check reads
 * `return tc_fail(P, ...)` where what follows depends on it, and
 * `tc_fail(P, ...)` where the next check is independent of it. Every
 * parser below reports its problem through P and writes *out only on
 * success. */
int tc_fail(trigger_problems_t *P, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Empties P (count 0, no note). */
void tc_problems_reset(trigger_problems_t *P);

/* A message built in pieces: tc_msg_begin, tc_msg_add..., tc_msg_end (which
 * records it like tc_fail and returns KGS_EINVAL). For lists, so no
 * intermediate buffer can cut them. */
void tc_msg_begin(trigger_problems_t *P);
void tc_msg_add(trigger_problems_t *P, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int tc_msg_end(trigger_problems_t *P);

/* The key named (p, n) (exact, case-sensitive), or -1. */
int tc_key_lookup(const char *p, size_t n);

/* "unknown metadata key "<k>": did you mean "<x>"?", or, with nothing close,
 * the general keys and how many more there are, with where the reference
 * lists them all (docs/configuration.md#keys). Returns KGS_EINVAL. */
int tc_unknown_key(const char *p, size_t n, trigger_problems_t *P);

/* metric_type_t, demand_type_t (index 0 = DEMAND_NONE: "") and engine_t names. */
extern const char *const tc_metric_names[METRIC_TYPE_COUNT];
extern const char *const tc_demand_names[DEMAND_TYPE_COUNT];
extern const char *const tc_engine_names[ENGINE_EPP + 1];
/* demand_model_t names: "queueing", "composite". */
extern const char *const tc_demand_model_names[2];

/* A metadata value: bytes and length, not NUL-terminated. */
typedef struct {
    const char *p;
    size_t n;
} slice_t;

slice_t tc_value_of(const metadata_pair_t *m);

/* Looks (p, n) up in names; on a miss records "invalid <key> "<v>": must be
 * <valid>[; did you mean "<x>"?]" (valid NULL: "one of <names>", the
 * suggestion first) and returns KGS_EINVAL. */
int tc_parse_enum(const char *key, const char *p, size_t n, const char *const *names, size_t count,
                  const char *valid, int *out, trigger_problems_t *P);

/* Strict decimal number / integer (see trigger_keys.c); false when not one. */
bool tc_parse_number(const char *p, size_t n, double *out);
bool tc_parse_integer(const char *p, size_t n, long long *out);

/* A target value: 0.001 .. 1e12, with a message naming key on error. */
int tc_parse_target(const char *key, slice_t v, double *out, trigger_problems_t *P);

/* Row-driven parsers of the value of key k; each returns 0 or KGS_EINVAL
 * with "invalid <key> "<value>": must be <what the row allows>". *out is
 * written only on success. */
int tc_key_enum(key_id_t k, slice_t v, int *out, trigger_problems_t *P);
int tc_key_int(key_id_t k, slice_t v, long long *out, trigger_problems_t *P);
int tc_key_nonneg(key_id_t k, slice_t v, double *out, trigger_problems_t *P);
int tc_key_ratio(key_id_t k, slice_t v, double *out, trigger_problems_t *P);
int tc_key_duration(key_id_t k, slice_t v, uint64_t *out, trigger_problems_t *P);
int tc_key_bool(key_id_t k, slice_t v, bool *out, trigger_problems_t *P);

/* Step 11 of the resolution: engine, queue, composite and forecast keys
 * (trigger_demand.c). */
int tc_resolve_demand(const metadata_pair_t *slot[K_COUNT], trigger_config_t *c,
                      trigger_problems_t *P);

/* The latency objectives (trigger_slo.c): the *Target keys and the clamp
 * keys into c->demand.slo_*; refused unless metricType is slo or demand,
 * and, per engine, for the signals it does not export. Called by
 * tc_resolve_demand() before the engine keys (it decides need_engine);
 * *any: some target is set. */
int tc_resolve_slo(const metadata_pair_t *slot[K_COUNT], trigger_config_t *c, bool *any,
                   trigger_problems_t *P);
/* After the engine is known: the objectives the engine cannot report. */
int tc_check_slo_engine(const trigger_config_t *c, trigger_problems_t *P);

#endif
