/*
 * trigger_config.h - one ScaledObject trigger's metadata, validated and
 * resolved (defaults -> profile -> explicit keys) into a plain struct.
 *
 * Pure: no I/O, no globals except constant tables. docs/configuration.md is
 * the user-facing reference for every key, default and error.
 */
#ifndef KGS_TRIGGER_CONFIG_H
#define KGS_TRIGGER_CONFIG_H

#include <stddef.h>

#include "core/metadata.h"

/* What is measured. Units are in docs/configuration.md. */
typedef enum {
    METRIC_GPU_UTILIZATION,     /* %  */
    METRIC_MEMORY_UTILIZATION,  /* %  (memory controller busy time) */
    METRIC_MEMORY_USED_MIB,     /* MiB */
    METRIC_MEMORY_USED_PERCENT, /* %  of total */
    METRIC_TEMPERATURE,         /* degrees C */
    METRIC_POWER_DRAW,          /* W */
    METRIC_PCIE_TX_KBPS,        /* KiB/s */
    METRIC_PCIE_RX_KBPS,        /* KiB/s */
    METRIC_NVLINK_TX_MBPS,      /* MiB/s */
    METRIC_NVLINK_RX_MBPS,      /* MiB/s */
    METRIC_SM_ACTIVE,           /* %  (GPM, Hopper+) */
    METRIC_SM_OCCUPANCY,        /* %  (GPM) */
    METRIC_DRAM_BANDWIDTH,      /* %  (GPM) */
    METRIC_TYPE_COUNT
} metric_type_t;

/* "gpu_utilization", ..., "dram_bandwidth"; "?" when out of range. */
const char *metric_type_name(metric_type_t t);

typedef enum { AGG_SUM, AGG_MAX, AGG_MIN, AGG_AVG, AGG_P95, AGG_P99 } aggregation_t;

/* "sum", "max", "min", "avg", "p95", "p99"; "?" when out of range. */
const char *aggregation_name(aggregation_t a);

#define TRIGGER_MAX_UUIDS 16

typedef struct {
    char metric_name[128]; /* validated [a-z0-9_-]+, <= 127 bytes; default "keda_gpu_metric"
                              (or the profile's) */
    char profile[64];      /* "" when none */
    metric_type_t metric_type;
    double target_value;         /* finite, 0.001 <= t <= 1e12 (KEDA milli resolution) */
    double activation_threshold; /* finite, >= 0 */
    aggregation_t aggregation;   /* default AGG_SUM */
    int gpu_index;               /* -1 = no index restriction */
    unsigned gpu_uuid_count;
    char gpu_uuids[TRIGGER_MAX_UUIDS][96]; /* gpuUUID, comma list */
    unsigned mig_uuid_count;
    char mig_uuids[TRIGGER_MAX_UUIDS][96]; /* migUUID, comma list */
    unsigned mig_profile_count;
    char mig_profiles[TRIGGER_MAX_UUIDS][32]; /* migProfile, comma list e.g. "3g.40gb" */
    unsigned poll_interval_s;                 /* >= 1, default 10 */
} trigger_config_t;

/*
 * Parses n metadata pairs into *out (fully overwritten, also on error).
 * Returns 0, or KGS_EINVAL with a message in err naming the key, the bad
 * value and what would be valid. err may be NULL.
 */
int trigger_config_parse(const metadata_pair_t *pairs, size_t n, trigger_config_t *out, char *err,
                         size_t errlen);

#endif
