/*
 * metrics.h - the Prometheus exposition of keda-gpu-scaler: GPU gauges from
 * the latest snapshot, and the server's own counters and histograms.
 *
 * Pure: metrics_render() is a function of (snapshot, stats, context) and
 * makes no calls; the loop thread owns a server_stats_t and renders on
 * each scrape. Metric names keep the Go system's (keda_gpu_scaler_*).
 * A field the snapshot does not have produces no sample (never a 0), and
 * series come only from the latest snapshot, so a GPU that disappears
 * loses its series at once.
 */
#ifndef KGS_SERVER_METRICS_H
#define KGS_SERVER_METRICS_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster/cold_start.h"
#include "core/clock.h"
#include "core/demand_eval.h"
#include "core/snapshot.h"
#include "net/grpc_server.h"
#include "net/prom_text.h"
#include "scaler/scaler.h"

typedef enum {
    RPC_IS_ACTIVE,
    RPC_STREAM_IS_ACTIVE,
    RPC_GET_METRIC_SPEC,
    RPC_GET_METRICS,
    RPC_STREAM_METRIC_SPEC,
    RPC_HEALTH_CHECK,
    RPC_HEALTH_WATCH,
    RPC_OTHER,
    RPC_METHOD_COUNT
} rpc_method_t;

/* The `method` label value: "IsActive", "StreamIsActive", "GetMetricSpec",
 * "GetMetrics", "StreamMetricSpec", "HealthCheck", "HealthWatch", "Other"
 * ("Other" too for an out-of-range value). Static. */
const char *rpc_method_name(rpc_method_t m);

/* Request latency buckets: 50 us .. 5 s. */
#define METRICS_RPC_BUCKETS 16
/* Sampling (NVML sweep) duration buckets: 100 us .. 10 s. */
#define METRICS_SAMPLE_BUCKETS 16

/* Private: a histogram's counts (not cumulative; the last is +Inf). */
typedef struct {
    uint64_t _counts[METRICS_RPC_BUCKETS + 1];
    double _sum;
    uint64_t _count;
} metrics_rpc_hist_t;

/*
 * The server's own statistics. Caller-owned storage, initialised with
 * server_stats_init(); plain data (copyable). Written and read by one
 * thread (the loop). Fields are read-only for callers.
 */
typedef struct server_stats {
    uint64_t requests[RPC_METHOD_COUNT]; /* RPCs finished, any status */
    uint64_t errors[RPC_METHOD_COUNT];   /* of those, with a status other than OK (0) */
    metrics_rpc_hist_t latency[RPC_METHOD_COUNT];

    uint64_t last_seq;          /* the seq of the last snapshot recorded; 0 = none */
    uint64_t collections;       /* snapshots seen */
    uint64_t collection_errors; /* of those, with NVML down */
    uint64_t _sample_counts[METRICS_SAMPLE_BUCKETS + 1];
    double _sample_sum;
    uint64_t _sample_count;
} server_stats_t;

void server_stats_init(server_stats_t *st);

/* Counts one finished RPC with its gRPC status (0 = OK) and its duration
 * in seconds (negative or NaN durations are counted as 0). An out-of-range
 * method counts as RPC_OTHER. */
void server_stats_record_rpc(server_stats_t *st, rpc_method_t m, int grpc_status, double seconds);

/* Counts a snapshot once: calling it again with the same snapshot (same
 * seq) does nothing, so it may be called on every wakeup. Counts a
 * collection, a collection error when NVML is down, and the sweep's
 * duration. s may be NULL (nothing happens). */
void server_stats_record_snapshot(server_stats_t *st, const snapshot_t *s);

typedef struct {
    const char *node;    /* node label on GPU series; NULL = the snapshot's node_name */
    const char *version; /* build_info labels; NULL = "unknown" */
    const char *commit;  /* NULL = "unknown" */
    /* The GPU backend that samples this node ("nvml", "amdgpu-sysfs");
     * NULL: none (not chosen yet, or the aggregator). */
    const char *gpu_backend;
    mono_ns_t now;             /* for snapshot_age_seconds */
    uint64_t stale_after_ns;   /* informational: exported as snapshot_stale_after_seconds */
    uint64_t sampler_overruns; /* sampler_overruns() */
    unsigned streams_open;     /* gRPC streams open now */
    unsigned connections_open; /* gRPC connections open now */
    bool ready;                /* what /readyz answers */
    /* The aggregator reads no NVML: true leaves out every NVML and sampler
     * family (nvml_up would read 0, as if NVML were down). */
    bool no_nvml;
    /* Demand sources (standalone, aggregator); has_sources false: none exported. */
    bool has_sources;
    unsigned sources;         /* engine endpoints and queues polled now */
    uint64_t source_polls;    /* polls completed */
    uint64_t source_failures; /* polls that failed */
    uint64_t source_bytes;    /* response bytes read */
    /* Source creations refused by --max-sources, --max-sources-per-namespace,
     * --source-create-rate; polls refused by the egress allow-list. */
    uint64_t source_refused_max, source_refused_per_ns, source_refused_rate;
    uint64_t source_refused_egress;
    source_hub_stats_t source_stats; /* the rest of source_hub_stats() (issue 28's budgets) */
    /* The budgets against hostile callers; has_budgets false: none exported. */
    bool has_budgets;
    uint64_t requests_too_large;   /* grpc_server_requests_too_large() */
    scaler_budget_stats_t budgets; /* scaler_budget_stats() */
    /* Connections refused by a cap (grpc_server_refusals()), and the probe
     * and metrics ports' evictions (http_server_evictions()). */
    uint64_t refused_max_connections;
    uint64_t refused_max_connections_per_peer;
    uint64_t refused_out_of_descriptors;
    uint64_t http_evictions;
    grpc_server_limit_stats_t grpc_limits; /* grpc_server_limit_stats() */
    /* The decision of each demand trigger (source_hub_views(): the most
     * recently evaluated, at most METRICS_MAX_TRIGGERS), and how many more
     * there are that are left out to bound the series. */
    const demand_view_ref_t *triggers;
    size_t ntriggers, triggers_omitted;
    /* The aggregator's cold-start records of its podSelector workloads
     * (issue 33); NULL: none exported. */
    const cold_start_book_t *cold_starts;
} metrics_context_t;

/* Triggers whose decision /metrics shows (the most recently evaluated):
 * at most ~20 series each, so at most ~2,000 series in all. */
#define METRICS_MAX_TRIGGERS 100

/*
 * Appends the whole exposition (text format 0.0.4) to `out`. snap is the
 * latest snapshot (borrowed; NULL before the first one); st and ctx are
 * borrowed for the call. Allocation failure shows in out->failed.
 */
void metrics_render(prom_buf_t *out, const snapshot_t *snap, const server_stats_t *st,
                    const metrics_context_t *ctx);

/* The Content-Type to serve it with. */
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

#endif
