/*
 * trigger_config.h - one ScaledObject trigger's metadata, validated and
 * resolved (defaults -> profile -> explicit keys) into a plain struct.
 *
 * Pure: no I/O, no globals except constant tables. docs/configuration.md is
 * the user-facing reference for every key, default and error.
 */
#ifndef KGS_TRIGGER_CONFIG_H
#define KGS_TRIGGER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "core/label_selector.h"
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

/* podAggregation: how one pod's GPUs combine into the pod's value. */
typedef enum { POD_AGG_AVG, POD_AGG_SUM, POD_AGG_MAX, POD_AGG_MIN } pod_aggregation_t;

/* "avg", "sum", "max", "min"; "?" when out of range. */
const char *pod_aggregation_name(pod_aggregation_t a);

/* partialData: what a node with a stale snapshot does to the answer. */
typedef enum {
    PARTIAL_DATA_ERROR, /* UNAVAILABLE, naming the node */
    PARTIAL_DATA_IGNORE /* computed from the nodes with fresh data */
} partial_data_t;

/* "error", "ignore"; "?" when out of range. */
const char *partial_data_name(partial_data_t p);

/* nodeSelector: which nodes count when no podSelector is given. */
typedef enum {
    NODE_SCOPE_ALL,     /* no nodeSelector */
    NODE_SCOPE_NAMES,   /* node_names[0 .. node_name_count) */
    NODE_SCOPE_SELECTOR /* node_selector, on the nodes' labels */
} node_scope_t;

#define TRIGGER_MAX_UUIDS 16
#define TRIGGER_MAX_NODES 16

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

    /* Workload scope, used by the aggregator role (docs/configuration.md,
     * "Workload scope"). The parser only validates; the standalone server
     * rejects podSelector and nodeSelector itself. */
    bool has_pod_selector;         /* podSelector given (an empty one selects every pod) */
    label_selector_t pod_selector; /* empty unless has_pod_selector */
    bool has_namespace;            /* false: the ScaledObject's namespace (the server's call) */
    char pod_namespace[64];        /* a DNS label; "" unless has_namespace */
    node_scope_t node_scope;       /* NODE_SCOPE_ALL unless nodeSelector; never with podSelector */
    unsigned node_name_count;      /* NODE_SCOPE_NAMES: 1..TRIGGER_MAX_NODES */
    char node_names[TRIGGER_MAX_NODES][254]; /* DNS subdomains, in the order given */
    label_selector_t node_selector;          /* NODE_SCOPE_SELECTOR; otherwise empty */
    pod_aggregation_t pod_aggregation;       /* default POD_AGG_AVG; set only with podSelector */
    partial_data_t partial_data;             /* default PARTIAL_DATA_ERROR */
} trigger_config_t;

/*
 * Parses n metadata pairs into *out (fully overwritten, also on error).
 * Returns 0, or KGS_EINVAL with a message in err naming the key, the bad
 * value and what would be valid. err may be NULL.
 */
int trigger_config_parse(const metadata_pair_t *pairs, size_t n, trigger_config_t *out, char *err,
                         size_t errlen);

#endif
