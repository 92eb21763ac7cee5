/*
 * source_hub.h - the demand sources of every trigger in use: serving-engine
 * /metrics endpoints (explicit URLs, or every ready pod a podSelector
 * selects), Redis queues, generic Prometheus endpoints. Each source is
 * polled on its own cadence on the event loop; RPCs only read the latest
 * readings (never wait for a scrape, never start a source).
 *
 * Sources are shared: two triggers that read the same URL with the same
 * engine and model filter share one source, polled at the faster of their
 * cadences; a source read with a sourceAuth profile is shared only within
 * its namespace (a profile admits only the namespaces it lists). A source
 * no RPC or stream has asked for in `idle_ns` is freed
 * (60 s while more than 3/4 of max_sources are live); so is a
 * subscription, or at once when its configuration leaves the config cache
 * (source_hub_forget), and freed memory is handed back to the system.
 *
 * A source is charged to the namespace of the subscription that created
 * it (max_sources_per_ns), and a creation takes a token from one bucket
 * (create_rate, create_burst), so whoever can write ScaledObjects bounds
 * what we poll: at most max_sources sources, each polled at most every
 * 100 ms (sourceInterval's floor), so at most 10 x max_sources connects a
 * second (2,560/s by default).
 *
 * The hub keeps sources alive and polled and hands out a view of their
 * latest readings; what a reading means (partial data, a missing gauge,
 * staleness, pending rates: never 0 for unknown) is decided in one place,
 * core/demand_eval.c's demand_evaluate_inputs().
 *
 * Loop thread only.
 */
#ifndef KGS_SOURCES_SOURCE_HUB_H
#define KGS_SOURCES_SOURCE_HUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/clock.h"
#include "core/demand_eval.h"
#include "core/egress.h"
#include "core/source_auth.h"
#include "core/evaluator.h"
#include "core/log.h"
#include "core/trigger_config.h"
#include "net/loop.h"

typedef struct source_hub source_hub_t;

/* One selected pod, Ready or not (strings borrowed for the call). */
typedef struct {
    const char *pod;          /* "namespace/name" */
    const char *ip;           /* "" while it has none */
    bool ready;               /* Running with the Ready condition True */
    bool draining;            /* being deleted, still Running with an IP: finishing its requests */
    double age_s;             /* seconds since its creationTimestamp; < 0 unknown */
    uint64_t id;              /* stable for the pod's life (e.g. a hash of its uid) */
    demand_pod_start_t start; /* its start by stage (zero: not known) */
} source_pod_t;

typedef void (*source_pod_emit_cb)(void *emit_data, const source_pod_t *pod);

typedef struct {
    loop_t *loop;
    const logger_t *log;    /* borrowed, may be NULL */
    const char *ca_file;    /* CA bundle for https/rediss sources; NULL = system roots */
    size_t max_body_bytes;  /* per response; 0 = 8 MiB */
    uint64_t idle_ns;       /* free sources unused this long; 0 = 10 min */
    uint64_t notify_min_ns; /* on_update at most this often; 0 = 50 ms */
    /* Budgets (docs/operations.md, "Limits"): a source that would exceed one
     * is not created, and the triggers that need it get RESOURCE_EXHAUSTED
     * naming the flag until it can be (each subscribe tries again). */
    unsigned max_sources;        /* live sources; 0 = 256 (--max-sources) */
    unsigned max_sources_per_ns; /* created for one namespace; 0 = 64 */
    double create_rate;          /* new sources per second; 0 = 20 (--source-create-rate) */
    unsigned create_burst;       /* 0 = 50 */
    /* What the replies of every poll in flight may hold together (heads not
     * yet whole, partial lines, parse state, Redis replies; bodies are
     * parsed as they arrive, never held): a poll that would go beyond it
     * fails naming --source-read-bytes. 0 = 32 MiB. */
    size_t max_read_bytes;
    /* Response bytes the sources charged to one namespace may read a
     * second (--source-read-rate): a namespace past it has its sources'
     * next polls wait, so parsing its pages takes a bounded share of the
     * loop. 0 = 64 MiB/s. */
    double read_rate;
    /* What subscriptions (a trigger's state in a namespace: forecast,
     * queueing model, decision view, latency windows) may cost together
     * (--subscription-bytes), shared fairly between namespaces
     * (core/fair_share.h: one namespace alone gets half). A subscription
     * beyond its namespace's share is not made, and its trigger gets
     * RESOURCE_EXHAUSTED naming the flag. 0 = 16 MiB. */
    size_t max_sub_bytes;
    /* Egress allow-list checked right before every connect, after the SSRF
     * guard (borrowed for the hub's life; NULL or empty: any address). */
    const egress_policy_t *egress;
    /* --source-auth profiles (borrowed for the hub's life; NULL: none). A
     * trigger's sourceAuth picks one; its files are read at start (a token
     * or certificate that cannot be read fails source_hub_new, naming the
     * file) and re-read when they change. */
    const source_auth_set_t *auth;
    /* Called (coalesced) after readings changed, so streams can push. May be NULL. */
    void (*on_update)(void *user_data);
    void *user_data;
    /* Aggregator role: calls emit for every pod that c's podSelector selects
     * in namespace ns and that is not finished: Ready ones get engine
     * sources, the others count as starting for demandModel: queueing,
     * except those being deleted (draining), which that model keeps reading
     * while they finish their requests. Returns 0, or a KGS_E* code
     * with a message (the pod list is not synced yet). NULL: podSelector
     * cannot be used (standalone), and such triggers get FAILED_PRECONDITION. */
    int (*list_pods)(void *user_data, const trigger_config_t *c, const char *ns,
                     source_pod_emit_cb emit, void *emit_data, char *err, size_t errlen);
    /* Before each poll of a podSelector pod's source read with a sourceAuth
     * profile (pods=own-namespace): whether pod ("namespace/name", the
     * ScaledObject's namespace) still holds addr (borrowed), so a credential
     * never follows a reused address to another namespace's pod. 0, or
     * nonzero with why: the poll fails with it and nothing is sent. NULL:
     * every such poll fails (fail closed). */
    int (*auth_pod_check)(void *user_data, const char *pod, const struct sockaddr *addr,
                          socklen_t addrlen, char *why, size_t whylen);
} source_hub_opts_t;

/* Returns 0, or KGS_EIO (the CA file, or a --source-auth profile's token or
 * certificate, cannot be loaded) / KGS_ENOMEM with a message. Returned: source_hub_free(). */
int source_hub_new(const source_hub_opts_t *opts, source_hub_t **out, char *err, size_t errlen);

/* Cancels every poll and frees every source. NULL does nothing. */
void source_hub_free(source_hub_t *h);

/*
 * Side effects, once per distinct trigger configuration (trigger_id, the
 * config cache's id) and namespace ns: creates and starts the sources
 * demand trigger c needs (engine URLs; for podSelector, the selected pods,
 * re-listed on the trigger's cadence so new pods get sources; the queue).
 * A repeat call for a live subscription only looks it up, so callers may
 * subscribe on every config acquire. Does nothing for a non-demand trigger.
 *
 * Lifetime: a subscription (and its sources) lives while reads use it; one
 * that no source_hub_signals() call has used for idle_ns is freed with its
 * unused sources, and the next subscribe for the same config starts them
 * again (the scaler subscribes whenever an RPC acquires the config).
 */
void source_hub_subscribe(source_hub_t *h, const trigger_config_t *c, uint64_t trigger_id,
                          const char *ns, mono_ns_t now);

/*
 * A read: what trigger c's sources (subscribed as (trigger_id, ns)) have
 * read so far, for demand_evaluate_inputs(). Creates, starts, polls and
 * parses nothing; marks the subscription and the sources it finds used
 * (idle eviction). A source not started yet is DEMAND_SOURCE_NOT_STARTED.
 * Lists the selected pods through opts.list_pods (a read of the pod cache).
 * *out is fully written; its pointers are borrowed from the hub until the
 * next call into it or the next loop callback.
 *
 * *learned (may be NULL: not wanted) is set to what the subscription keeps
 * between evaluations: its forecast, queueing-model state and decision
 * view, for demand_evaluate_inputs() to update (each NULL when there is no
 * subscription); they live as long as the subscription. The read itself
 * writes nothing in them.
 */
void source_hub_signals(source_hub_t *h, const trigger_config_t *c, uint64_t trigger_id,
                        const char *ns, mono_ns_t now, demand_inputs_t *out,
                        demand_learned_t *learned);

typedef struct {
    unsigned sources;  /* polled now */
    uint64_t polls;    /* polls started */
    uint64_t failures; /* polls that failed (resolution, SSRF guard, connect, TLS, status, parse) */
    uint64_t bytes;    /* response bytes read */
    /* Creations refused, by limit, and polls refused by the allow-list. */
    uint64_t refused_max_sources, refused_per_ns, refused_rate, refused_egress;
    /* Polls failed by --source-read-bytes; polls delayed by --source-read-rate. */
    uint64_t refused_read_bytes, read_rate_waits;
    size_t read_held; /* what the replies of the polls in flight hold now */
    size_t sub_bytes; /* what the subscriptions count now (--subscription-bytes) */
    unsigned subscriptions;
    uint64_t refused_subscriptions; /* subscribes refused by --subscription-bytes */
} source_hub_stats_t;

void source_hub_stats(const source_hub_t *h, source_hub_stats_t *out);

/* The configuration trigger_id is gone (the config cache evicted it):
 * its subscriptions in every namespace are freed now, rather than after
 * the idle time. Their sources stay while other subscriptions read them. */
void source_hub_forget(source_hub_t *h, uint64_t trigger_id);

/* The decision view of subscription (trigger_id, ns): what its last
 * evaluation read and why it answered as it did (core/demand_eval.h);
 * NULL when it has not been evaluated. Borrowed until the next loop
 * callback. A read: marks nothing used. */
const demand_view_t *source_hub_view(const source_hub_t *h, uint64_t trigger_id, const char *ns);

/* Records that ScaledObject `name` asked for subscription (trigger_id, ns):
 * the name its /metrics series carry (the last one that asked, when two
 * ScaledObjects share one configuration). Nothing when there is none. */
void source_hub_note_asker(source_hub_t *h, uint64_t trigger_id, const char *ns, const char *name);

/* Fills out[0..max) with the evaluated subscriptions, the most recently
 * evaluated first (at most max: the newest); returns how many, and in
 * *total (may be NULL) how many there are. Strings and views borrowed
 * until the next loop callback. */
size_t source_hub_views(const source_hub_t *h, demand_view_ref_t *out, size_t max, size_t *total);

/* The queueing-model state of subscription (trigger_id, ns), for `query`'s
 * explanation; NULL when there is none (or the model never decided).
 * Borrowed until the next loop callback. A read: marks nothing used. */
const demand_model_state_t *source_hub_model(const source_hub_t *h, uint64_t trigger_id,
                                             const char *ns);

#endif
