/*
 * scaler.h - KEDA's externalscaler.ExternalScaler and grpc.health.v1.Health
 * on top of grpc_server, answering from the latest node snapshot.
 *
 * Loop thread only. Unary calls evaluate the current snapshot (microseconds,
 * no NVML). Streams are grouped by trigger configuration: one evaluation per
 * group per snapshot, pushed to every stream of the group whose state
 * changed, plus a `true` every pollIntervalSeconds while active.
 */
#ifndef KGS_SCALER_SCALER_H
#define KGS_SCALER_SCALER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/log.h"
#include "core/evaluator.h"
#include "core/snapshot.h"
#include "core/tenant.h"
#include "core/trigger_config.h"
#include "net/grpc_server.h"
#include "net/loop.h"
#include "scaler/scaler_limits.h"
#include "sources/source_hub.h"

typedef struct scaler scaler_t;

/* Which RPC a call was; the order is server/metrics.h's rpc_method_t. */
typedef enum {
    SCALER_RPC_IS_ACTIVE,
    SCALER_RPC_STREAM_IS_ACTIVE,
    SCALER_RPC_GET_METRIC_SPEC,
    SCALER_RPC_GET_METRICS,
    SCALER_RPC_STREAM_METRIC_SPEC,
    SCALER_RPC_HEALTH_CHECK,
    SCALER_RPC_HEALTH_WATCH,
    SCALER_RPC_OTHER
} scaler_rpc_t;

typedef struct {
    loop_t *loop;
    const logger_t *log;          /* borrowed, may be NULL */
    uint64_t stale_after_ns;      /* a snapshot older than this is unusable */
    uint64_t recheck_interval_ns; /* re-evaluate streams and health this often without snapshots */
    /* The latest snapshot (returned reference) or NULL; from the sampler. */
    snapshot_t *(*current_snapshot)(void *user_data);
    void *snapshot_user_data;
    /* Called when an RPC completes (for streams: when they end). May be NULL. */
    void (*on_rpc_done)(void *user_data, scaler_rpc_t rpc, int grpc_status, double seconds);
    void *rpc_user_data;
    /* The aggregator's evaluation of a trigger over the cluster, for a
     * ScaledObject in `so_namespace` (the default pod namespace), and its
     * readiness. NULL: this node's latest snapshot (standalone, agent). */
    void (*evaluate)(void *user_data, const trigger_config_t *c, const char *so_namespace,
                     mono_ns_t now, eval_result_t *out);
    bool (*ready)(void *user_data, mono_ns_t now, char *why, size_t whylen);
    /* Called with every valid configuration an RPC brings (for
     * so_namespace), before the call is served: where the server starts
     * what the configuration needs, since evaluations start nothing.
     * Repeated for each call: it must be cheap when already done. May be NULL. */
    void (*on_config)(void *user_data, const trigger_config_t *c, const char *so_namespace);
    /* More of Explain's answer for a trigger: each put(put_ud, value, name)
     * adds a name (copied) with its value, after the decision's (the
     * aggregator's cold starts, issue 33). With names to say, a trigger
     * without a decision (a GPU trigger) answers them instead of
     * FAILED_PRECONDITION. May be NULL. */
    void (*explain_more)(void *user_data, const trigger_config_t *c, const char *so_namespace,
                         void (*put)(void *put_ud, double value, const char *name), void *put_ud);
    void *eval_user_data;
    /* With `evaluate`: unary calls reuse an evaluation of the same trigger and
     * namespace this recent (0 = never). Streams always re-evaluate. */
    uint64_t eval_reuse_ns;
    /* Engine and queue sources for demand triggers (standalone, aggregator);
     * borrowed. NULL: demand triggers get FAILED_PRECONDITION. */
    source_hub_t *sources;
    /* Budgets against hostile callers, each refused with RESOURCE_EXHAUSTED
     * naming the flag; 0 = the SCALER_DEFAULT_* below. */
    size_t max_metadata_entries; /* per request, counted on the wire before decoding */
    size_t max_metadata_bytes;   /* key + value bytes per request, likewise */
    size_t config_cache_bytes;   /* the cache's bound, and all open streams' together */
    size_t max_stream_bytes;     /* per connection: what its open StreamIsActive pin (and
                                  * its calls waiting for a source's first poll); this and
                                  * the total are shared fairly by namespace
                                  * (core/fair_share.h) */
    /* Who may claim what (core/tenant.h), checked on every RPC before the
     * trigger's sources start: a refusal is PERMISSION_DENIED naming the
     * flag. Borrowed for the scaler's life; NULL: no checks (unit tests). */
    const tenant_policy_t *tenant;
    /* A configuration no call or stream used for this long leaves the
     * config cache (and its demand state with it); 0: only the cache's
     * bounds evict. The server passes --source-idle. */
    uint64_t config_idle_ns;
} scaler_opts_t;

/* What the budgets refused, and what the cache and the streams hold. */
typedef struct {
    uint64_t refused_metadata_entries; /* requests over max_metadata_entries */
    uint64_t refused_metadata_bytes;   /* requests over max_metadata_bytes */
    uint64_t refused_stream_bytes;     /* streams over a connection's max_stream_bytes */
    uint64_t refused_streams_total;    /* streams over config_cache_bytes, all streams */
    size_t cache_bytes;                /* the config cache now */
    size_t cache_entries;
    uint64_t cache_evictions;
    size_t stream_bytes; /* what open streams and calls waiting for a first poll pin, all
                          * connections */
} scaler_budget_stats_t;

void scaler_budget_stats(const scaler_t *s, scaler_budget_stats_t *out);

/* What one open StreamIsActive costs beside its configuration's entry
 * (config_cache_entry_bytes): the scaler's and the gRPC layer's bookkeeping.
 * Counted against max_stream_bytes with the entry. */
size_t scaler_stream_overhead_bytes(void);

/* Returns 0 or KGS_ENOMEM. */
int scaler_new(const scaler_opts_t *opts, scaler_t **out);

/* grpc_server handlers: pass these with the scaler as server user data. */
void scaler_on_request(grpc_call_t *call, const char *path, const uint8_t *msg, size_t len,
                       void *scaler);
void scaler_on_call_gone(grpc_call_t *call, void *call_user_data, void *scaler);

/* A new snapshot was published (or time passed): re-evaluate streams and
 * readiness, push what changed. */
void scaler_refresh(scaler_t *s);

/* Ready: a snapshot exists, NVML answered, and it is not stale. The gRPC
 * health service says SERVING exactly when this is true. */
bool scaler_ready(scaler_t *s, char *why, size_t whylen);

unsigned scaler_stream_count(const scaler_t *s);

/* Ends every stream with status OK (KEDA reconnects in 2 s) and stops
 * accepting new streams (they get UNAVAILABLE). */
void scaler_shutdown(scaler_t *s);

/* Frees; streams must have ended (grpc_server_free first). NULL ok. */
void scaler_free(scaler_t *s);

#endif
