/*
 * source_hub.h - the demand sources of every trigger in use: serving-engine
 * /metrics endpoints (explicit URLs, or every ready pod a podSelector
 * selects), Redis queues, generic Prometheus endpoints. Each source is
 * polled on its own cadence on the event loop; RPCs only read the latest
 * readings (never wait for a scrape).
 *
 * Sources are shared: two triggers that read the same URL with the same
 * engine and model filter share one source, polled at the faster of their
 * cadences. A source no RPC or stream has asked for in `idle_ns` is freed.
 *
 * Never 0 for unknown: a source that has not answered yet, failed its last
 * poll, or whose last success is older than max(3 x interval, interval +
 * timeout) makes the trigger UNAVAILABLE with a message naming it (with
 * partialData: ignore, failing pods are left out, as long as one answers).
 *
 * Loop thread only.
 */
#ifndef KGS_SOURCES_SOURCE_HUB_H
#define KGS_SOURCES_SOURCE_HUB_H

#include <stddef.h>
#include <stdint.h>

#include "core/clock.h"
#include "core/evaluator.h"
#include "core/log.h"
#include "core/trigger_config.h"
#include "net/loop.h"

typedef struct source_hub source_hub_t;

/* One selected pod: its "namespace/name" and IP (both borrowed for the call). */
typedef void (*source_pod_emit_cb)(void *emit_data, const char *pod, const char *ip);

typedef struct {
    loop_t *loop;
    const logger_t *log;    /* borrowed, may be NULL */
    const char *ca_file;    /* CA bundle for https/rediss sources; NULL = system roots */
    size_t max_body_bytes;  /* per response; 0 = 8 MiB */
    uint64_t idle_ns;       /* free sources unused this long; 0 = 10 min */
    uint64_t notify_min_ns; /* on_update at most this often; 0 = 50 ms */
    /* Called (coalesced) after readings changed, so streams can push. May be NULL. */
    void (*on_update)(void *user_data);
    void *user_data;
    /* Aggregator role: calls emit for every Running, Ready pod with an IP that
     * c's podSelector selects in namespace ns. Returns 0, or a KGS_E* code
     * with a message (the pod list is not synced yet). NULL: podSelector
     * cannot be used (standalone), and such triggers get FAILED_PRECONDITION. */
    int (*list_pods)(void *user_data, const trigger_config_t *c, const char *ns,
                     source_pod_emit_cb emit, void *emit_data, char *err, size_t errlen);
} source_hub_opts_t;

/* Returns 0, or KGS_EIO (the CA file cannot be loaded) / KGS_ENOMEM with a
 * message. Returned: source_hub_free(). */
int source_hub_new(const source_hub_opts_t *opts, source_hub_t **out, char *err, size_t errlen);

/* Cancels every poll and frees every source. NULL does nothing. */
void source_hub_free(source_hub_t *h);

/*
 * The value and activity of demand trigger c (c->demand.type !=
 * DEMAND_NONE) for a ScaledObject in namespace ns. trigger_id identifies
 * the trigger's configuration (the config cache's id): with forecast: trend
 * the hub keeps one forecast per (trigger_id, ns), fed by every
 * evaluation. gpu is the GPU evaluation when trigger_uses_gpu(c), else
 * NULL. Starts polling the sources it needs on first use. *out is fully
 * written.
 */
void source_hub_evaluate(source_hub_t *h, const trigger_config_t *c, uint64_t trigger_id,
                         const char *ns, mono_ns_t now, const eval_result_t *gpu,
                         eval_result_t *out);

/* Starts the trigger's sources without evaluating (GetMetricSpec comes
 * before the first GetMetrics: the first scrape is then under way). */
void source_hub_prepare(source_hub_t *h, const trigger_config_t *c, const char *ns, mono_ns_t now);

typedef struct {
    unsigned sources;  /* polled now */
    uint64_t polls;    /* polls started */
    uint64_t failures; /* polls that failed (resolution, SSRF guard, connect, TLS, status, parse) */
    uint64_t bytes;    /* response bytes read */
} source_hub_stats_t;

void source_hub_stats(const source_hub_t *h, source_hub_stats_t *out);

#endif
