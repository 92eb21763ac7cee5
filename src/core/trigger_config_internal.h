/*
 * trigger_config_internal.h - what trigger_config.c (the general keys) and
 * trigger_demand.c (engine, queue and demand keys) share: the key table, the
 * name tables, and the strict value parsers. Not for other modules.
 */
#ifndef KGS_TRIGGER_CONFIG_INTERNAL_H
#define KGS_TRIGGER_CONFIG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"
#include "core/metadata.h"
#include "core/trigger_config.h"

#define QBUF KGS_QUOTE_BUF

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
    K_VLLM_ENDPOINT,
    K_TRITON_ENDPOINT,
    K_ENGINE_ENDPOINT,
    K_ENGINE,
    K_ENGINE_PORT,
    K_ENGINE_PATH,
    K_ENGINE_SCHEME,
    K_MODEL,
    K_WINDOW,
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
    K_GPU_METRIC_TYPE,
    K_ACTIVATION_QUEUE,
    K_ACTIVATION_GPU,
    K_SOURCE_INTERVAL,
    K_SOURCE_TIMEOUT,
    K_FORECAST,
    K_COLD_START,
    K_SCALER_ADDRESS, /* KEDA's own: accepted and ignored */
    K_ENABLE_TLS,
    K_UNSAFE_SSL,
    K_COUNT
} key_id_t;

/* The key names, in key_id_t order. */
extern const char *const tc_key_names[K_COUNT];
/* metric_type_t, demand_type_t (index 0 = DEMAND_NONE: "") and engine_t names. */
extern const char *const tc_metric_names[METRIC_TYPE_COUNT];
extern const char *const tc_demand_names[DEMAND_TYPE_COUNT];
extern const char *const tc_engine_names[5];

/* A metadata value: bytes and length, not NUL-terminated. */
typedef struct {
    const char *p;
    size_t n;
} slice_t;

slice_t tc_value_of(const metadata_pair_t *m);

/* Looks (p, n) up in names; on a miss writes "invalid <key> "<v>": must be
 * <valid>[; did you mean "<x>"?]" and returns KGS_EINVAL. */
int tc_parse_enum(const char *key, const char *p, size_t n, const char *const *names, size_t count,
                  const char *valid, int *out, char *err, size_t errlen);

/* Strict decimal number / integer (see trigger_config.c); false when not one. */
bool tc_parse_number(const char *p, size_t n, double *out);
bool tc_parse_integer(const char *p, size_t n, long long *out);

/* A target value: 0.001 .. 1e12, with a message naming key on error. */
int tc_parse_target(const char *key, slice_t v, double *out, char *err, size_t errlen);

/* Step 11 of the resolution: engine, queue, composite and forecast keys
 * (trigger_demand.c). */
int tc_resolve_demand(const metadata_pair_t *slot[K_COUNT], trigger_config_t *c, char *err,
                      size_t errlen);

#endif
