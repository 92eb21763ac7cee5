/*
 * scaler.c - the ExternalScaler and Health services.
 *
 * DESIGN
 * - Configuration: each call's scalerMetadata goes through the config cache,
 *   so a map is parsed once however often KEDA sends it; bad metadata is
 *   cached too and answered INVALID_ARGUMENT every time.
 * - Unknown is never 0: an evaluation that cannot produce a value (NVML
 *   down, stale snapshot, lost GPU, absent field) is a gRPC error, so KEDA's
 *   fallback engages instead of scaling on a made-up number.
 * - Streams (StreamIsActive) are grouped by configuration. scaler_refresh()
 *   evaluates each group once and pushes to the streams whose last sent
 *   state differs. While a group cannot be evaluated its streams stay open
 *   and silent: KEDA keeps its last answer (the safe direction: no scale
 *   to zero on an outage) and the pull path reports the error.
 * - A stream opened while evaluation fails stays open and silent too, and
 *   sends the state once it is known: ending it would put KEDA's push loop
 *   into its backoff (2 s doubling to 60 s, reset only after an OK end), so
 *   a wake from zero by push would wait that long after the outage.
 * - Budgets (anything that reaches the port can call): the metadata is
 *   counted on the wire (entries, key and value bytes) before protobuf-c
 *   builds it; the cache is bounded in bytes; each open stream pins its
 *   configuration, so a connection's streams may hold max_stream_bytes and
 *   all streams together config_cache_bytes; both are shared fairly by
 *   namespace (core/fair_share.h: KEDA sends every namespace's streams over
 *   one connection, and one namespace must not fill it for the others).
 *   Each refusal is RESOURCE_EXHAUSTED with the value, the limit and its
 *   flag.
 */
#include "scaler/scaler.h"

#include <malloc.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "core/config_cache.h"
#include "core/demand_eval.h"
#include "core/err.h"
#include "core/evaluator.h"
#include "core/fair_share.h"
#include "core/hash.h"
#include "core/metadata.h"
#include "core/roles.h"
#include "net/grpc_frame.h"
#include "proto/externalscaler.pb-c.h"
#include "proto/health.pb-c.h"

#define PATH_ES "/externalscaler.ExternalScaler/"
/* Our own, beside KEDA's protocol: `keda-gpu-scaler query` asks it for the
 * queueing model's inputs (counted as method "Other" in the metrics). */
#define PATH_EXPLAIN "/kgs.v1.Inspect/Explain"
#define PATH_HEALTH "/grpc.health.v1.Health/"
#define CONFIG_CACHE_CAPACITY 4096
/* The gRPC layer's share of an open stream (its call, nghttp2's stream),
 * roughly: counted with the scaler's own structs. */
#define GRPC_STREAM_OVERHEAD_BYTES 1024

/* A unary call or a new stream whose trigger waits for a source's first poll
 * is a CALL_DEFERRED until the poll ends (or DEFER_MAX_NS passes). */
typedef enum { STREAM_IS_ACTIVE, STREAM_HEALTH_WATCH, CALL_DEFERRED } stream_kind_t;

#define DEFER_MAX_NS (2500 * NS_PER_MS)

typedef struct stream_group stream_group_t;

typedef struct scaler_stream {
    scaler_t *sc;
    grpc_call_t *call;
    stream_kind_t kind;
    stream_group_t *group; /* IS_ACTIVE */
    int last_sent;         /* -1 nothing yet; else the bool / health status sent */
    bool health_known_service;
    mono_ns_t started;
    loop_timer_t heartbeat;
    char ref[320]; /* "namespace/name" for logs */
    struct scaler_stream *next, *prev;
    /* CALL_DEFERRED */
    scaler_rpc_t rpc;
    const config_entry_t *entry; /* one reference held */
    char ns[128];                /* CALL_DEFERRED and IS_ACTIVE: the namespace charged */
    mono_ns_t give_up;
    /* IS_ACTIVE and CALL_DEFERRED: what it counts against its connection's
     * and the total budget (max_stream_bytes, config_cache_bytes); given
     * back when it ends. */
    size_t charged;
} scaler_stream_t;

struct stream_group {
    const config_entry_t *entry; /* one reference held */
    char ns[128];                /* the ScaledObjects' namespace: a workload scope default */
    eval_result_t result;
    bool evaluated;
    scaler_stream_t *streams;
    unsigned nstreams;
    stream_group_t *next, *prev;
};

#define SCALER_MEMO_SLOTS 64
#define NS_USE_BUCKETS 256

typedef struct ns_use {
    struct ns_use *next;
    const void *conn; /* grpc_call_connection_bytes() of the connection; NULL: all */
    size_t bytes;
    char ns[128];
} ns_use_t;

typedef struct {
    bool used;
    uint64_t id;
    char ns[128];
    mono_ns_t at;
    eval_result_t result;
} eval_memo_t;

struct scaler {
    scaler_opts_t opts;
    const role_caps_t *role; /* what this server sees: the role table's row */
    eval_memo_t memo[SCALER_MEMO_SLOTS];
    config_cache_t *cache;
    stream_group_t *groups;
    scaler_stream_t *health_watchers;
    unsigned nstreams;
    bool shutting_down;
    int health_status; /* last computed SERVING / NOT_SERVING */
    loop_timer_t recheck;
    scaler_stream_t *deferred; /* calls waiting for a first poll */
    loop_timer_t defer_timer;
    log_ratelimit_t errors_rl; /* KEDA repeats a failing call every poll: log it once a minute */
    size_t stream_bytes;       /* charged by open streams and waiting calls, all connections */
    /* The same per namespace, on each connection and in all (conn NULL):
     * both budgets are shared fairly between namespaces (core/fair_share.h),
     * as KEDA sends every namespace's streams over one connection. */
    struct ns_use *uses[NS_USE_BUCKETS];
    size_t freed_since_trim;       /* bytes of expired configurations since malloc_trim */
    scaler_budget_stats_t counted; /* its refused_* counters; the rest is filled on demand */
};

/* ---- helpers ----------------------------------------------------------------- */

static double since_s(scaler_t *s, mono_ns_t t0) {
    return (double)(loop_now(s->opts.loop) - t0) / 1e9;
}

static void rpc_done(scaler_t *s, scaler_rpc_t rpc, int status, mono_ns_t t0) {
    if (s->opts.on_rpc_done)
        s->opts.on_rpc_done(s->opts.rpc_user_data, rpc, status, since_s(s, t0));
}

static int eval_grpc_code(eval_status_t st) {
    return st == EVAL_OK                   ? GRPC_OK
           : st == EVAL_UNAVAILABLE        ? GRPC_UNAVAILABLE
           : st == EVAL_RESOURCE_EXHAUSTED ? GRPC_RESOURCE_EXHAUSTED
                                           : GRPC_FAILED_PRECONDITION;
}

/* The call's name in a log line. SCALER_RPC_OTHER reaches fail_call()
 * only from Explain (an unknown method is answered UNIMPLEMENTED before
 * anything is logged): its line said "unknown method" for Explain's
 * refusals, as a real driver's first run showed. */
static const char *rpc_name(scaler_rpc_t rpc) {
    static const char *const names[] = {"IsActive",     "StreamIsActive",   "GetMetricSpec",
                                        "GetMetrics",   "StreamMetricSpec", "Health/Check",
                                        "Health/Watch", "Explain"};
    return (unsigned)rpc < sizeof names / sizeof names[0] ? names[rpc] : "?";
}

/* Finishes a call with an error and logs it, naming the ScaledObject. */
static void fail_call(scaler_t *s, grpc_call_t *call, scaler_rpc_t rpc, mono_ns_t t0,
                      const char *ref, const char *metric, int code, const char *msg) {
    const char *who = ref && ref[0] ? ref : "(no ScaledObject)";
    const char *trig = metric && metric[0] ? metric : "-";
    char key[340];
    /* keyed on the problem too: a second, different typo is its own line */
    snprintf(key, sizeof key, "%016llx|%.160s|%.100s|%s|%d",
             (unsigned long long)log_message_shape(msg), who, trig, rpc_name(rpc), code);
    LOG_RATELIMITED(s->opts.log, &s->errors_rl, key, loop_now(s->opts.loop), LOG_WARN,
                    "%s ScaledObject %s trigger %s from %s: %s: %s", rpc_name(rpc), who, trig,
                    grpc_call_peer(call), grpc_status_name(code), msg);
    grpc_call_finish(call, code, msg);
    rpc_done(s, rpc, code, t0);
}

/* Packs a protobuf-c message and sends it as the call's next message. */
static int send_message(grpc_call_t *call, const ProtobufCMessage *m, bool latest_only) {
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t stackbuf[512];
    uint8_t *buf = n <= sizeof stackbuf ? stackbuf : malloc(n);
    if (!buf)
        return KGS_ENOMEM;
    protobuf_c_message_pack(m, buf);
    int rc = grpc_call_send(call, buf, n, latest_only);
    if (buf != stackbuf)
        free(buf);
    return rc;
}

static void format_ref(const Externalscaler__ScaledObjectRef *r, char *out, size_t outlen) {
    if (!r) {
        snprintf(out, outlen, "(no ScaledObject)");
        return;
    }
    /* a Kubernetes namespace is at most 63 bytes, a name 253: a real
     * ScaledObject's arrives whole; longer is not one, and is cut */
    snprintf(out, outlen, "%.63s/%.253s", r->namespace_ && r->namespace_[0] ? r->namespace_ : "-",
             r->name && r->name[0] ? r->name : "-");
}

/* The trigger configuration for a ScaledObjectRef's metadata (a reference
 * to release), or NULL when out of memory. */
static const config_entry_t *acquire_config(scaler_t *s, const Externalscaler__ScaledObjectRef *r) {
    size_t n = r ? r->n_scalermetadata : 0;
    metadata_pair_t stack_pairs[64];
    metadata_pair_t *pairs = n <= 64 ? stack_pairs : malloc(n * sizeof *pairs);
    if (!pairs)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const Externalscaler__ScaledObjectRef__ScalerMetadataEntry *e = r->scalermetadata[i];
        pairs[i].key = e->key ? e->key : "";
        pairs[i].key_len = strlen(pairs[i].key);
        pairs[i].value = e->value ? e->value : "";
        pairs[i].value_len = strlen(pairs[i].value);
    }
    const config_entry_t *entry = config_cache_acquire(s->cache, pairs, n);
    if (pairs != stack_pairs)
        free(pairs);
    return entry;
}

/* Reuses a cluster evaluation of the same trigger and namespace done less
 * than eval_reuse_ns ago: KEDA asks GetMetrics and IsActive back to back,
 * and the HPA asks again, for one answer over hundreds of pods. */
static bool memo_get(scaler_t *s, uint64_t id, const char *ns, mono_ns_t now, eval_result_t *out) {
    eval_memo_t *m = &s->memo[id % SCALER_MEMO_SLOTS];
    if (m->used && m->id == id && strcmp(m->ns, ns) == 0 && now - m->at < s->opts.eval_reuse_ns) {
        *out = m->result;
        return true;
    }
    return false;
}

static void memo_put(scaler_t *s, uint64_t id, const char *ns, mono_ns_t now,
                     const eval_result_t *r) {
    eval_memo_t *m = &s->memo[id % SCALER_MEMO_SLOTS];
    m->used = true;
    m->id = id;
    m->at = now;
    snprintf(m->ns, sizeof m->ns, "%s", ns);
    m->result = *r;
}

/* Whether r says if the trigger is active, and what: an answer, or an
 * error while a queue reads work (r->wake: the queue wakes the workload
 * whatever the engines say). */
static bool result_activity(const eval_result_t *r, bool *active) {
    *active = r->status == EVAL_OK ? r->active : r->wake;
    return r->status == EVAL_OK || r->wake;
}

/* The GPU part of a trigger: the aggregator's cluster evaluation, or this
 * node's snapshot (snap may be NULL: none yet). */
static void evaluate_gpu(scaler_t *s, const trigger_config_t *cfg, const char *ns, mono_ns_t now,
                         snapshot_t *snap, eval_result_t *out) {
    if (s->opts.evaluate) {
        s->opts.evaluate(s->opts.eval_user_data, cfg, ns, now, out);
    } else if (!snap) {
        memset(out, 0, sizeof *out);
        out->status = EVAL_UNAVAILABLE;
        snprintf(out->message, sizeof out->message,
                 "no GPU snapshot yet: the first NVML sample has not completed");
    } else {
        evaluator_run(cfg, snap, now, s->opts.stale_after_ns, out);
    }
}

/* A whole trigger: GPU metric, demand signals, or both (metricType demand
 * with targetGpu). The one place where the GPU result and the demand
 * result meet; a read: it starts nothing (scaler_on_request subscribed the
 * trigger's sources when it acquired the config). */
static void evaluate_trigger(scaler_t *s, const config_entry_t *entry, const char *ns,
                             mono_ns_t now, snapshot_t *snap, eval_result_t *out) {
    const trigger_config_t *cfg = entry->config;
    if (cfg->demand.type == DEMAND_NONE) {
        evaluate_gpu(s, cfg, ns, now, snap, out);
        return;
    }
    memset(out, 0, sizeof *out);
    role_check_t rc = role_check_trigger(s->role, cfg, false, out->message, sizeof out->message);
    if (rc != ROLE_CHECK_OK || !s->opts.sources) {
        /* the role comes from the options, so a role that polls sources has
         * them; say so rather than answer without a message if it ever does not */
        if (rc == ROLE_CHECK_OK)
            snprintf(out->message, sizeof out->message, "no demand sources in this process");
        out->status = EVAL_FAILED_PRECONDITION;
        return;
    }
    eval_result_t gpu;
    bool with_gpu = trigger_uses_gpu(cfg);
    if (with_gpu)
        evaluate_gpu(s, cfg, ns, now, snap, &gpu);
    demand_inputs_t in;
    demand_learned_t learned;
    source_hub_signals(s->opts.sources, cfg, entry->id, ns, now, &in, &learned);
    demand_evaluate_inputs(cfg, &in, &learned, now, with_gpu ? &gpu : NULL, out);
}

static void evaluate_now(scaler_t *s, const config_entry_t *entry, const char *ns,
                         eval_result_t *out) {
    mono_ns_t now = loop_now(s->opts.loop);
    if (s->opts.evaluate) {
        if (s->opts.eval_reuse_ns && memo_get(s, entry->id, ns, now, out))
            return;
        evaluate_trigger(s, entry, ns, now, NULL, out);
        if (s->opts.eval_reuse_ns && !out->pending)
            memo_put(s, entry->id, ns, now, out);
        return;
    }
    snapshot_t *snap = s->opts.current_snapshot(s->opts.snapshot_user_data);
    evaluate_trigger(s, entry, ns, now, snap, out);
    snapshot_unref(snap);
}

/* ---- unary ExternalScaler ---------------------------------------------------- */

static void handle_metric_spec(scaler_t *s, grpc_call_t *call, const trigger_config_t *cfg,
                               mono_ns_t t0) {
    Externalscaler__MetricSpec spec = EXTERNALSCALER__METRIC_SPEC__INIT;
    spec.metricname = (char *)cfg->metric_name;
    spec.targetsize = metric_target_size(cfg->target_value);
    spec.targetsizefloat = cfg->target_value;
    Externalscaler__MetricSpec *specs[1] = {&spec};
    Externalscaler__GetMetricSpecResponse resp = EXTERNALSCALER__GET_METRIC_SPEC_RESPONSE__INIT;
    resp.n_metricspecs = 1;
    resp.metricspecs = specs;
    int rc = send_message(call, &resp.base, false);
    grpc_call_finish(call, rc ? GRPC_INTERNAL : GRPC_OK, rc ? "out of memory" : NULL);
    rpc_done(s, SCALER_RPC_GET_METRIC_SPEC, rc ? GRPC_INTERNAL : GRPC_OK, t0);
}

/* ---- calls waiting for a source's first poll ------------------------------------- */

static ns_use_t **use_slot(scaler_t *s, const void *conn, const char *ns) {
    uint64_t h = kgs_fnv1a(ns) ^ (uint64_t)(uintptr_t)conn * 0x9e3779b97f4a7c15ull;
    ns_use_t **pp = &s->uses[h % NS_USE_BUCKETS];
    while (*pp && ((*pp)->conn != conn || strcmp((*pp)->ns, ns) != 0))
        pp = &(*pp)->next;
    return pp;
}

static size_t use_bytes(scaler_t *s, const void *conn, const char *ns) {
    ns_use_t *u = *use_slot(s, conn, ns);
    return u ? u->bytes : 0;
}

/* Adds (add true) or takes back n bytes of namespace ns on conn. false:
 * out of memory for a new account (nothing charged). */
static bool use_change(scaler_t *s, const void *conn, const char *ns, size_t n, bool add) {
    ns_use_t **pp = use_slot(s, conn, ns);
    if (!*pp) {
        if (!add)
            return true;
        ns_use_t *u = calloc(1, sizeof *u);
        if (!u)
            return false;
        u->conn = conn;
        snprintf(u->ns, sizeof u->ns, "%s", ns);
        *pp = u;
    }
    ns_use_t *u = *pp;
    u->bytes = add ? u->bytes + n : u->bytes > n ? u->bytes - n : 0;
    if (!u->bytes) {
        *pp = u->next;
        free(u);
    }
    return true;
}

/* Charges a stream or a waiting call `cost` bytes of namespace ns on its
 * connection and in all. false: out of memory (nothing charged). */
static bool stream_charge(scaler_t *s, scaler_stream_t *st, const char *ns, size_t cost) {
    size_t *held = grpc_call_connection_bytes(st->call);
    if (!use_change(s, held, ns, cost, true))
        return false;
    if (!use_change(s, NULL, ns, cost, true)) {
        use_change(s, held, ns, cost, false);
        return false;
    }
    snprintf(st->ns, sizeof st->ns, "%s", ns);
    st->charged = cost;
    *held += cost;
    s->stream_bytes += cost;
    return true;
}

/* Gives back what a stream or a waiting call was charged; only while its
 * call is valid. */
static void stream_refund(scaler_t *s, scaler_stream_t *st) {
    if (!st->charged)
        return;
    size_t *held = grpc_call_connection_bytes(st->call);
    use_change(s, held, st->ns, st->charged, false);
    use_change(s, NULL, st->ns, st->charged, false);
    *held = *held > st->charged ? *held - st->charged : 0;
    s->stream_bytes = s->stream_bytes > st->charged ? s->stream_bytes - st->charged : 0;
    st->charged = 0;
}

/* Whether namespace ns may pin `cost` more bytes with a stream on call's
 * connection: within its fair share of --max-stream-bytes there and of
 * --config-cache-bytes in all. Returns NULL, or the message (in m). */
static const char *stream_share_refusal(scaler_t *s, grpc_call_t *call, const char *ns, size_t cost,
                                        char *m, size_t mlen) {
    size_t *held = grpc_call_connection_bytes(call);
    size_t mine = use_bytes(s, held, ns);
    if (!fair_share_admits(mine, *held, cost, s->opts.max_stream_bytes)) {
        s->counted.refused_stream_bytes++;
        snprintf(m, mlen,
                 "StreamIsActive: namespace %.63s's open streams on this connection hold %zu "
                 "bytes; %zu more would pass its share of %zu (half of what other namespaces "
                 "leave of --max-stream-bytes %zu, per connection)",
                 ns, mine, cost, fair_share_cap(mine, *held, s->opts.max_stream_bytes),
                 s->opts.max_stream_bytes);
        return m;
    }
    mine = use_bytes(s, NULL, ns);
    if (!fair_share_admits(mine, s->stream_bytes, cost, s->opts.config_cache_bytes)) {
        s->counted.refused_streams_total++;
        snprintf(m, mlen,
                 "StreamIsActive: namespace %.63s's open streams hold %zu bytes; %zu more would "
                 "pass its share of %zu (half of what other namespaces leave of "
                 "--config-cache-bytes %zu)",
                 ns, mine, cost, fair_share_cap(mine, s->stream_bytes, s->opts.config_cache_bytes),
                 s->opts.config_cache_bytes);
        return m;
    }
    return NULL;
}

static void deferred_unlink(scaler_t *s, scaler_stream_t *d) {
    if (d->prev)
        d->prev->next = d->next;
    else
        s->deferred = d->next;
    if (d->next)
        d->next->prev = d->prev;
    d->next = d->prev = NULL;
}

static void arm_defer_timer(scaler_t *s) {
    mono_ns_t first = 0;
    for (scaler_stream_t *d = s->deferred; d; d = d->next)
        if (!first || d->give_up < first)
            first = d->give_up;
    if (first)
        loop_timer_start(s->opts.loop, &s->defer_timer, first);
    else
        loop_timer_stop(s->opts.loop, &s->defer_timer);
}

/* A trigger whose source has not answered its first poll yet: rather than
 * fail the first GetMetrics after a ScaledObject appears (KEDA would log an
 * error and count it towards its fallback), hold the call until the poll
 * ends, at most DEFER_MAX_NS and never past the client's deadline. Takes
 * over the caller's reference to entry when it returns true. */
static bool defer_call(scaler_t *s, grpc_call_t *call, scaler_rpc_t rpc,
                       const config_entry_t *entry, const char *ns, const char *ref, mono_ns_t t0) {
    /* A waiting call pins its entry as a stream does, within the same
     * budgets; beyond them it is answered now instead of waiting. */
    size_t cost = config_cache_entry_bytes(entry) + scaler_stream_overhead_bytes();
    size_t *held = grpc_call_connection_bytes(call);
    if (!fair_share_admits(use_bytes(s, held, ns), *held, cost, s->opts.max_stream_bytes) ||
        !fair_share_admits(use_bytes(s, NULL, ns), s->stream_bytes, cost,
                           s->opts.config_cache_bytes))
        return false;
    scaler_stream_t *d = calloc(1, sizeof *d);
    if (!d)
        return false;
    d->call = call;
    if (!stream_charge(s, d, ns, cost)) {
        free(d);
        return false;
    }
    d->sc = s;
    d->kind = CALL_DEFERRED;
    d->rpc = rpc;
    d->entry = entry;
    d->started = t0;
    d->give_up = clock_add_sat(t0, DEFER_MAX_NS);
    mono_ns_t deadline = grpc_call_deadline(call);
    if (deadline && deadline > t0 + 100 * NS_PER_MS && deadline - 100 * NS_PER_MS < d->give_up)
        d->give_up = deadline - 100 * NS_PER_MS;
    snprintf(d->ref, sizeof d->ref, "%s", ref);
    loop_timer_init(&d->heartbeat, NULL, NULL);
    d->next = s->deferred;
    if (s->deferred)
        s->deferred->prev = d;
    s->deferred = d;
    grpc_call_set_user_data(call, d);
    arm_defer_timer(s);
    return true;
}

static bool handle_get_metrics(scaler_t *s, grpc_call_t *call, const config_entry_t *entry,
                               const char *ns, const char *ref, mono_ns_t t0, bool may_defer);
static bool handle_is_active(scaler_t *s, grpc_call_t *call, const config_entry_t *entry,
                             const char *ns, const char *ref, mono_ns_t t0, bool may_defer);
static bool handle_stream_is_active(scaler_t *s, grpc_call_t *call, const config_entry_t *entry,
                                    const char *ns, const char *ref, mono_ns_t t0, bool may_defer);

/* Answers every deferred call whose sources have answered, or whose time
 * is up (then with the "waiting for the first poll" error). */
static void retry_deferred(scaler_t *s) {
    mono_ns_t now = loop_now(s->opts.loop);
    scaler_stream_t *ready = NULL;
    for (scaler_stream_t *d = s->deferred, *next; d; d = next) {
        next = d->next;
        eval_result_t r;
        evaluate_now(s, d->entry, d->ns, &r);
        if (r.pending && now < d->give_up)
            continue;
        deferred_unlink(s, d);
        stream_refund(s, d); /* a stream it becomes is charged anew */
        d->next = ready;
        ready = d;
    }
    /* Answered outside the walk: a handler may defer nothing, but it may
     * finish calls, whose callbacks must not see a half-walked list. */
    while (ready) {
        scaler_stream_t *d = ready;
        ready = d->next;
        grpc_call_set_user_data(d->call, NULL);
        bool moved = false;
        switch (d->rpc) {
        case SCALER_RPC_GET_METRICS:
            moved = handle_get_metrics(s, d->call, d->entry, d->ns, d->ref, d->started, false);
            break;
        case SCALER_RPC_IS_ACTIVE:
            moved = handle_is_active(s, d->call, d->entry, d->ns, d->ref, d->started, false);
            break;
        default:
            moved = handle_stream_is_active(s, d->call, d->entry, d->ns, d->ref, d->started, false);
            break;
        }
        if (!moved)
            config_cache_release(s->cache, d->entry);
        free(d);
    }
    arm_defer_timer(s);
}

static void on_defer_timer(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)loop;
    (void)t;
    retry_deferred(ud);
}

static bool handle_get_metrics(scaler_t *s, grpc_call_t *call, const config_entry_t *entry,
                               const char *ns, const char *ref, mono_ns_t t0, bool may_defer) {
    const trigger_config_t *cfg = entry->config;
    eval_result_t r;
    evaluate_now(s, entry, ns, &r);
    if (r.status != EVAL_OK && r.pending && may_defer &&
        defer_call(s, call, SCALER_RPC_GET_METRICS, entry, ns, ref, t0))
        return true;
    if (r.status != EVAL_OK) {
        fail_call(s, call, SCALER_RPC_GET_METRICS, t0, ref, cfg->metric_name,
                  eval_grpc_code(r.status), r.message);
        return false;
    }
    Externalscaler__MetricValue v = EXTERNALSCALER__METRIC_VALUE__INIT;
    v.metricname = (char *)cfg->metric_name;
    v.metricvalue = metric_value_int(r.value);
    v.metricvaluefloat = r.value;
    Externalscaler__MetricValue *vals[1] = {&v};
    Externalscaler__GetMetricsResponse resp = EXTERNALSCALER__GET_METRICS_RESPONSE__INIT;
    resp.n_metricvalues = 1;
    resp.metricvalues = vals;
    int rc = send_message(call, &resp.base, false);
    grpc_call_finish(call, rc ? GRPC_INTERNAL : GRPC_OK, rc ? "out of memory" : NULL);
    rpc_done(s, SCALER_RPC_GET_METRICS, rc ? GRPC_INTERNAL : GRPC_OK, t0);
    return false;
}

/* Explain: the decision behind the value GetMetrics gives, as named
 * numbers (the Explain protocol reuses GetMetricsResponse): what each
 * signal read, what each target asks for, which one decided, the latency
 * targets against what was observed, the engines behind it, and for the
 * queueing model its inputs ("lambda_rps:learned": the suffix says where
 * the number came from). Names are "<group>:<name>"; a number not known is
 * NaN. A read like GetMetrics: it evaluates, it starts nothing.
 * docs/server.md lists every name. */
#define EXPLAIN_MAX 96

typedef struct {
    char *names[EXPLAIN_MAX];
    double vals[EXPLAIN_MAX];
    unsigned n;
    bool oom;
} explain_t;

static void explain_put(explain_t *e, double v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void explain_put(explain_t *e, double v, const char *fmt, ...) {
    if (e->n == EXPLAIN_MAX || e->oom)
        return;
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *name = len >= 0 ? malloc((size_t)len + 1) : NULL;
    if (!name) {
        e->oom = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(name, (size_t)len + 1, fmt, ap);
    va_end(ap);
    e->names[e->n] = name;
    e->vals[e->n++] = v;
}

static void explain_view(explain_t *e, const demand_view_t *v) {
    explain_put(e, v->value, "value");
    explain_put(e, v->active, "active");
    if (v->wake)
        explain_put(e, 1, "wake:a queue reads work while the value is unknown");
    for (int i = 0; i < DSIG_COUNT; i++)
        if (v->known[i] && i != DSIG_QUEUEING_MODEL && i != DSIG_LATENCY)
            explain_put(e, v->signal[i], "signal:%s", demand_signal_name((demand_signal_t)i));
    for (int i = 0; i < DSIG_COUNT; i++)
        if (isfinite(v->need[i]))
            explain_put(e, v->need[i], "need:%s", demand_signal_name((demand_signal_t)i));
    if (v->decided_by >= 0)
        explain_put(e, v->need[v->decided_by], "decided_by:%s",
                    demand_signal_name((demand_signal_t)v->decided_by));
    static const char *const q[3] = {"p50", "p90", "p99"};
    for (int sg = 0; sg < SLO_SIGNAL_COUNT; sg++)
        for (int k = 0; k < 3; k++) {
            const char *nm = slo_signal_name((slo_signal_t)sg);
            if (!(v->latency[sg][k].target_s > 0))
                continue;
            explain_put(e, v->latency[sg][k].known ? v->latency[sg][k].observed_s : NAN,
                        "latency:%s_%s%s", nm, q[k],
                        v->latency[sg][k].known && !v->latency[sg][k].judged ? " (too few requests)"
                                                                             : "");
            explain_put(e, v->latency[sg][k].target_s, "latency_target:%s_%s", nm, q[k]);
            explain_put(e, v->latency[sg][k].count, "latency_requests:%s_%s", nm, q[k]);
        }
    if (v->engines) {
        explain_put(e, v->engines, "engines:total");
        explain_put(e, v->answering, "engines:answering");
        explain_put(e, v->not_serving, "engines:not_serving");
        explain_put(e, v->failing, "engines:failing");
        explain_put(e, v->pending, "engines:pending");
    }
    if (v->not_serving_why)
        explain_put(e, v->not_serving, "not_serving:%s", v->not_serving_why);
    if (v->first_use_why)
        explain_put(e, v->first_use, "first_use_zero:%s", v->first_use_why);
    if (v->taking_turns_at)
        explain_put(e, v->taking_turns, "taking_turns:%s", v->taking_turns_at);
    if (v->has_pods) {
        explain_put(e, v->ready_pods, "pods:ready");
        explain_put(e, v->starting_pods, "pods:starting");
    }
}

static void explain_put_name(void *ud, double v, const char *name) {
    explain_put(ud, v, "%s", name);
}

/* What the server adds (explain_more), after the decision. */
static void explain_more(scaler_t *s, explain_t *e, const trigger_config_t *cfg, const char *ns) {
    if (s->opts.explain_more)
        s->opts.explain_more(s->opts.eval_user_data, cfg, ns, explain_put_name, e);
}

static void explain_send(scaler_t *s, grpc_call_t *call, explain_t *e, mono_ns_t t0);

/* demandModel queueing: its inputs (where each came from after the colon). */
static void explain_model(explain_t *e, const demand_model_state_t *st) {
    const queue_model_decision_t *q = &st->last;
    explain_put(e, q->replicas, "replicas");
    /* a queue alone shows no arrival rate while replicas drain it */
    const char *lambda_from =
        st->last_has_counters || q->lambda_from == QM_FROM_LEARNED
            ? queue_model_source_name(q->lambda_from)
        : st->last_taking_turns
            ? "prior, the processes behind an engine URL take turns: their counters teach no rate"
        : st->last_has_tokens
            ? "prior, the engines export no completed-request counter (SGLang before 0.4): "
              "the order is bounded while capacity is a prior"
            : "prior, a queue alone while replicas serve";
    explain_put(e, q->lambda_rps, "lambda_rps:%s", lambda_from);
    explain_put(e, q->capacity_rps, "capacity_rps:%s", queue_model_source_name(q->capacity_from));
    explain_put(e, q->cold_start_s, "cold_start_s:%s",
                q->cold_start_stages == 1
                    ? "learned by stage, image + weights: the newest start found a node up"
                : q->cold_start_stages == 2
                    ? "learned by stage, node + image + weights: the newest start waited for a "
                      "node, or a pod waits for one now"
                    : queue_model_source_name(q->cold_start_from));
    /* the cost of one request: generated + 1/4 prompt tokens (the capacity
     * above follows it when the mix moves); unknown is not 0 */
    explain_put(e, st->m.have_work ? st->m.work_per_req : NAN, "tokens_per_request:%s",
                st->m.have_work         ? "learned"
                : st->last_taking_turns ? "unknown, the processes behind an engine URL take turns"
                : !st->last_has_tokens  ? "unknown, no token counters"
                : !st->last_has_counters
                    ? "unknown, the token counters are read but no completed-request counter "
                      "divides them"
                    : "unknown, no request completed yet");
    explain_put(e, q->headroom_rps, "headroom_rps");
    explain_put(e, q->rise_rps, "rise_rps");
    explain_put(e, q->backlog, "backlog");
    explain_put(e, q->work_due, "work_due");
    explain_put(e, q->can_do, "can_do");
    explain_put(e, q->deficit, "deficit");
    explain_put(e, q->steady, "steady");
    explain_put(e, q->need, "need");
    explain_put(e, st->last_ready, "ready");
    if (q->inferred_starting)
        explain_put(e, q->starting, "starting:inferred from its own orders, no pod list");
    else
        explain_put(e, st->last_starting, "starting");
    explain_put(e, q->kept_starting, "kept_starting");
    explain_put(e, q->ordered, "ordered");
    explain_put(e, q->keepalive_s, "keepalive_s:%s",
                st->m.gaps_seen > 0 ? "learned" : "prior, three cold starts");
    explain_put(e, q->held, "held");
    if (q->walking)
        explain_put(e, q->replicas, "walking:a small fall, one replica per HPA sync");
    if (q->step_limited)
        explain_put(e, q->replicas, "step_limited:one HPA scale-up step, 4 pods or 100 %%");
    if (q->ceiling)
        explain_put(e, q->ceiling,
                    "ceiling:the pods stayed here while more were asked "
                    "(maxReplicaCount or a quota)");
}

static void handle_explain(scaler_t *s, grpc_call_t *call, const config_entry_t *entry,
                           const char *ns, const char *ref, mono_ns_t t0) {
    const trigger_config_t *cfg = entry->config;
    const demand_config_t *d = &cfg->demand;
    if (d->type == DEMAND_NONE) {
        explain_t more = {.n = 0};
        explain_more(s, &more, cfg, ns);
        if (more.n > 0 || more.oom) {
            explain_send(s, call, &more, t0);
            return;
        }
        char m[256];
        snprintf(m, sizeof m,
                 "Explain shows the decision of a trigger that reads engines or queues; this "
                 "trigger is metricType %s, whose value is the GPU metric itself",
                 metric_type_name(cfg->metric_type));
        /* answered, not logged: `query` asks every trigger for its
         * decision, and a GPU trigger has none to show (a WARN a call, on
         * a real driver's first run, for a legitimate question) */
        grpc_call_finish(call, GRPC_FAILED_PRECONDITION, m);
        rpc_done(s, SCALER_RPC_OTHER, GRPC_FAILED_PRECONDITION, t0);
        return;
    }
    /* The decision of the last evaluation (the answer KEDA, or this
     * caller's IsActive just before, was given), not a new one, while it is
     * younger than one sourceInterval: a poll that lands in between would
     * otherwise explain another value than the one given. */
    eval_result_t r;
    const demand_view_t *v =
        s->opts.sources ? source_hub_view(s->opts.sources, entry->id, ns) : NULL;
    mono_ns_t now = loop_now(s->opts.loop);
    if (v && now - v->at <= d->interval_ns) {
        memset(&r, 0, sizeof r);
        r.status = v->status;
        r.wake = v->wake;
        snprintf(r.message, sizeof r.message, "%s", v->message ? v->message : "");
    } else {
        evaluate_now(s, entry, ns, &r);
        v = s->opts.sources ? source_hub_view(s->opts.sources, entry->id, ns) : NULL;
    }
    if (!v) {
        fail_call(s, call, SCALER_RPC_OTHER, t0, ref, cfg->metric_name,
                  r.status != EVAL_OK ? eval_grpc_code(r.status) : GRPC_UNAVAILABLE,
                  r.status != EVAL_OK ? r.message : "the trigger has not been evaluated yet");
        return;
    }
    explain_t e = {.n = 0};
    if (r.status != EVAL_OK)
        explain_put(&e, eval_grpc_code(r.status), "error:%s: %s",
                    grpc_status_name(eval_grpc_code(r.status)), r.message);
    explain_view(&e, v);
    const demand_model_state_t *st =
        d->type == DEMAND_COMPOSITE && d->sizing == DEMAND_MODEL_QUEUEING
            ? source_hub_model(s->opts.sources, entry->id, ns)
            : NULL;
    if (st && r.status == EVAL_OK)
        explain_model(&e, st);
    explain_more(s, &e, cfg, ns);
    explain_send(s, call, &e, t0);
}

/* Sends e's names and frees them. */
static void explain_send(scaler_t *s, grpc_call_t *call, explain_t *e, mono_ns_t t0) {
    Externalscaler__MetricValue v_[EXPLAIN_MAX], *pv[EXPLAIN_MAX];
    for (unsigned i = 0; i < e->n; i++) {
        externalscaler__metric_value__init(&v_[i]);
        v_[i].metricname = e->names[i];
        v_[i].metricvalue = metric_value_int(e->vals[i]);
        v_[i].metricvaluefloat = e->vals[i];
        pv[i] = &v_[i];
    }
    Externalscaler__GetMetricsResponse resp = EXTERNALSCALER__GET_METRICS_RESPONSE__INIT;
    resp.n_metricvalues = e->n;
    resp.metricvalues = pv;
    int rc = e->oom ? -1 : send_message(call, &resp.base, false);
    for (unsigned i = 0; i < e->n; i++)
        free(e->names[i]);
    grpc_call_finish(call, rc ? GRPC_INTERNAL : GRPC_OK, rc ? "out of memory" : NULL);
    rpc_done(s, SCALER_RPC_OTHER, rc ? GRPC_INTERNAL : GRPC_OK, t0);
}

static int send_bool(grpc_call_t *call, bool v, bool latest_only) {
    Externalscaler__IsActiveResponse resp = EXTERNALSCALER__IS_ACTIVE_RESPONSE__INIT;
    resp.result = v;
    return send_message(call, &resp.base, latest_only);
}

static bool handle_is_active(scaler_t *s, grpc_call_t *call, const config_entry_t *entry,
                             const char *ns, const char *ref, mono_ns_t t0, bool may_defer) {
    const trigger_config_t *cfg = entry->config;
    eval_result_t r;
    evaluate_now(s, entry, ns, &r);
    bool active;
    if (!result_activity(&r, &active) && r.pending && may_defer &&
        defer_call(s, call, SCALER_RPC_IS_ACTIVE, entry, ns, ref, t0))
        return true;
    if (!result_activity(&r, &active)) {
        fail_call(s, call, SCALER_RPC_IS_ACTIVE, t0, ref, cfg->metric_name,
                  eval_grpc_code(r.status), r.message);
        return false;
    }
    int rc = send_bool(call, active, false);
    grpc_call_finish(call, rc ? GRPC_INTERNAL : GRPC_OK, rc ? "out of memory" : NULL);
    rpc_done(s, SCALER_RPC_IS_ACTIVE, rc ? GRPC_INTERNAL : GRPC_OK, t0);
    return false;
}

/* ---- streams ----------------------------------------------------------------- */

/* The group of streams sharing this configuration. The caller's reference
 * to `entry` is consumed: kept by a new group, released for an existing one
 * (which holds its own). NULL (entry released) when out of memory. */
static stream_group_t *group_for(scaler_t *s, const config_entry_t *entry, const char *ns) {
    for (stream_group_t *g = s->groups; g; g = g->next) {
        if (g->entry->id == entry->id && strcmp(g->ns, ns) == 0) {
            config_cache_release(s->cache, entry);
            return g;
        }
    }
    stream_group_t *g = calloc(1, sizeof *g);
    if (!g) {
        config_cache_release(s->cache, entry);
        return NULL;
    }
    g->entry = entry;
    snprintf(g->ns, sizeof g->ns, "%s", ns);
    g->next = s->groups;
    if (s->groups)
        s->groups->prev = g;
    s->groups = g;
    return g;
}

static void group_release_if_empty(scaler_t *s, stream_group_t *g) {
    if (g->nstreams > 0)
        return;
    if (g->prev)
        g->prev->next = g->next;
    else
        s->groups = g->next;
    if (g->next)
        g->next->prev = g->prev;
    config_cache_release(s->cache, g->entry);
    free(g);
}

static void stream_unlink(scaler_t *s, scaler_stream_t *st) {
    loop_timer_stop(s->opts.loop, &st->heartbeat);
    if (st->kind == STREAM_IS_ACTIVE) {
        stream_group_t *g = st->group;
        if (st->prev)
            st->prev->next = st->next;
        else
            g->streams = st->next;
        if (st->next)
            st->next->prev = st->prev;
        g->nstreams--;
        group_release_if_empty(s, g);
    } else {
        if (st->prev)
            st->prev->next = st->next;
        else
            s->health_watchers = st->next;
        if (st->next)
            st->next->prev = st->prev;
    }
    s->nstreams--;
}

/* Ends a stream from our side. */
static void stream_end(scaler_t *s, scaler_stream_t *st, int code, const char *msg) {
    stream_refund(s, st); /* before the call is finished: it is not ours after */
    grpc_call_finish(st->call, code, msg);
    rpc_done(s,
             st->kind == STREAM_IS_ACTIVE ? SCALER_RPC_STREAM_IS_ACTIVE : SCALER_RPC_HEALTH_WATCH,
             code, st->started);
    stream_unlink(s, st);
    free(st);
}

static void on_heartbeat(loop_t *loop, loop_timer_t *t, void *ud);

/* Pushes the group's current state to one stream when it changed, and keeps
 * the heartbeat armed while active. */
static void stream_push(scaler_t *s, scaler_stream_t *st) {
    bool active;
    if (!result_activity(&st->group->result, &active)) {
        loop_timer_stop(s->opts.loop, &st->heartbeat);
        return;
    }
    if (st->last_sent != (int)active) {
        if (send_bool(st->call, active, true) == 0)
            st->last_sent = active;
    }
    if (active && !loop_timer_armed(&st->heartbeat)) {
        uint64_t every = (uint64_t)st->group->entry->config->poll_interval_s * NS_PER_SEC;
        loop_timer_start(s->opts.loop, &st->heartbeat,
                         clock_add_sat(loop_now(s->opts.loop), every));
    } else if (!active) {
        loop_timer_stop(s->opts.loop, &st->heartbeat);
    }
}

static void on_heartbeat(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)t;
    scaler_stream_t *st = ud;
    bool active;
    if (!result_activity(&st->group->result, &active) || !active)
        return;
    /* KEDA treats each `true` as "still active": repeat it while it holds. */
    send_bool(st->call, true, true);
    st->last_sent = 1;
    uint64_t every = (uint64_t)st->group->entry->config->poll_interval_s * NS_PER_SEC;
    loop_timer_start(loop, &st->heartbeat, clock_add_sat(loop_now(loop), every));
}

size_t scaler_stream_overhead_bytes(void) {
    return sizeof(scaler_stream_t) + sizeof(stream_group_t) + GRPC_STREAM_OVERHEAD_BYTES;
}

/* A new stream pins its entry for as long as it is open: refused when the
 * connection's streams, or all streams, would hold more than their budget.
 * The cost is the entry's, or before parsing its estimate from the wire
 * (entry NULL: config_cache_entry_bytes_for). Returns the bytes to charge,
 * or 0 after finishing the call. */
static size_t admit_stream(scaler_t *s, grpc_call_t *call, const config_entry_t *entry,
                           size_t estimate, const char *ns, const char *ref, mono_ns_t t0) {
    size_t cost = (entry ? config_cache_entry_bytes(entry) : estimate);
    cost = cost > SIZE_MAX / 2 ? SIZE_MAX / 2 : cost + scaler_stream_overhead_bytes();
    size_t conn = *grpc_call_connection_bytes(call);
    char m[400];
    if (ns && stream_share_refusal(s, call, ns, cost, m, sizeof m)) {
        /* m says which share */
    } else if (conn + cost > s->opts.max_stream_bytes) {
        s->counted.refused_stream_bytes++;
        snprintf(m, sizeof m,
                 "StreamIsActive: this connection's open streams would hold %zu bytes, at most "
                 "%zu (--max-stream-bytes, per connection)",
                 conn + cost, s->opts.max_stream_bytes);
    } else if (s->stream_bytes + cost > s->opts.config_cache_bytes) {
        s->counted.refused_streams_total++;
        snprintf(m, sizeof m,
                 "StreamIsActive: open streams would hold %zu bytes, at most %zu "
                 "(--config-cache-bytes)",
                 s->stream_bytes + cost, s->opts.config_cache_bytes);
    } else {
        return cost;
    }
    fail_call(s, call, SCALER_RPC_STREAM_IS_ACTIVE, t0, ref,
              entry ? entry->config->metric_name : NULL, GRPC_RESOURCE_EXHAUSTED, m);
    return 0;
}

/* Consumes the reference to entry (always returns true). */
static bool handle_stream_is_active(scaler_t *s, grpc_call_t *call, const config_entry_t *entry,
                                    const char *ns, const char *ref, mono_ns_t t0, bool may_defer) {
    size_t cost = admit_stream(s, call, entry, 0, ns, ref, t0);
    if (!cost) {
        config_cache_release(s->cache, entry);
        return true;
    }
    eval_result_t r;
    evaluate_now(s, entry, ns, &r);
    bool active;
    if (!result_activity(&r, &active) && r.pending && may_defer &&
        defer_call(s, call, SCALER_RPC_STREAM_IS_ACTIVE, entry, ns, ref, t0))
        return true;
    if (!result_activity(&r, &active)) {
        /* Open and silent, like a stream that was open when the answer
         * became unknown: the state goes out as soon as it is known. Ending
         * it would cost KEDA a reconnect with its backoff (2, 4 ... 60 s,
         * reset only after a stream ends OK), so a wake from zero by push
         * would wait that long after an outage. The pull path keeps
         * reporting the error; the log says it once here. */
        const char *trig = entry->config->metric_name[0] ? entry->config->metric_name : "-";
        char key[320];
        snprintf(key, sizeof key, "%.160s|%.100s|StreamIsActive-open|%d", ref, trig,
                 eval_grpc_code(r.status));
        LOG_RATELIMITED(s->opts.log, &s->errors_rl, key, loop_now(s->opts.loop), LOG_WARN,
                        "StreamIsActive ScaledObject %s trigger %s from %s: opened while the "
                        "answer is unknown (%s: %s); it stays open and pushes once it is known",
                        ref, trig, grpc_call_peer(call), grpc_status_name(eval_grpc_code(r.status)),
                        r.message);
    }
    scaler_stream_t *st = calloc(1, sizeof *st);
    stream_group_t *g = NULL;
    if (st)
        g = group_for(s, entry, ns);
    else
        config_cache_release(s->cache, entry);
    if (!g) {
        free(st);
        grpc_call_finish(call, GRPC_RESOURCE_EXHAUSTED, "out of memory");
        rpc_done(s, SCALER_RPC_STREAM_IS_ACTIVE, GRPC_RESOURCE_EXHAUSTED, t0);
        return true;
    }
    if (!g->evaluated) {
        g->result = r;
        g->evaluated = true;
    }
    st->sc = s;
    st->call = call;
    st->kind = STREAM_IS_ACTIVE;
    if (!stream_charge(s, st, ns, cost)) {
        free(st);
        group_release_if_empty(s, g);
        grpc_call_finish(call, GRPC_RESOURCE_EXHAUSTED, "out of memory");
        rpc_done(s, SCALER_RPC_STREAM_IS_ACTIVE, GRPC_RESOURCE_EXHAUSTED, t0);
        return true;
    }
    st->group = g;
    st->last_sent = -1;
    st->started = t0;
    snprintf(st->ref, sizeof st->ref, "%s", ref);
    loop_timer_init(&st->heartbeat, on_heartbeat, st);
    st->next = g->streams;
    if (g->streams)
        g->streams->prev = st;
    g->streams = st;
    g->nstreams++;
    s->nstreams++;
    grpc_call_set_user_data(call, st);
    /* The current state at once, from this call's own evaluation. */
    st->group->result = r;
    stream_push(s, st);
    return true;
}

/* ---- health -------------------------------------------------------------------- */

bool scaler_ready(scaler_t *s, char *why, size_t whylen) {
    if (s->opts.ready)
        return s->opts.ready(s->opts.eval_user_data, loop_now(s->opts.loop), why, whylen);
    snapshot_t *snap = s->opts.current_snapshot(s->opts.snapshot_user_data);
    bool ok = false;
    if (!snap) {
        snprintf(why, whylen, "no GPU snapshot yet");
    } else if (snap->status != SNAPSHOT_OK) {
        snprintf(why, whylen, "%s unavailable: %s", snapshot_down_subject(snap), snap->error);
    } else {
        mono_ns_t now = loop_now(s->opts.loop);
        uint64_t age = now > snap->taken_mono ? now - snap->taken_mono : 0;
        if (age > s->opts.stale_after_ns)
            snprintf(why, whylen, "GPU snapshot is %.1f s old (stale after %.1f s)",
                     (double)age / 1e9, (double)s->opts.stale_after_ns / 1e9);
        else
            ok = true;
    }
    if (ok && whylen)
        why[0] = '\0';
    snapshot_unref(snap);
    return ok;
}

static bool health_service_known(const char *svc) {
    return !svc || !svc[0] || strcmp(svc, "externalscaler.ExternalScaler") == 0 ||
           strcmp(svc, "grpc.health.v1.Health") == 0;
}

static int send_health(grpc_call_t *call, int status, bool latest_only) {
    Grpc__Health__V1__HealthCheckResponse resp = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;
    resp.status = (Grpc__Health__V1__HealthCheckResponse__ServingStatus)status;
    return send_message(call, &resp.base, latest_only);
}

static int current_health(scaler_t *s) {
    char why[256];
    return scaler_ready(s, why, sizeof why)
               ? GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING
               : GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING;
}

static void handle_health(scaler_t *s, grpc_call_t *call, bool watch, const uint8_t *msg,
                          size_t len, mono_ns_t t0) {
    scaler_rpc_t rpc = watch ? SCALER_RPC_HEALTH_WATCH : SCALER_RPC_HEALTH_CHECK;
    Grpc__Health__V1__HealthCheckRequest *req =
        grpc__health__v1__health_check_request__unpack(NULL, len, msg);
    if (!req) {
        fail_call(s, call, rpc, t0, NULL, NULL, GRPC_INVALID_ARGUMENT,
                  "malformed HealthCheckRequest");
        return;
    }
    bool known = health_service_known(req->service);
    grpc__health__v1__health_check_request__free_unpacked(req, NULL);
    if (!watch) {
        if (!known) {
            grpc_call_finish(call, GRPC_NOT_FOUND, "unknown service");
            rpc_done(s, rpc, GRPC_NOT_FOUND, t0);
            return;
        }
        int rc = send_health(call, current_health(s), false);
        grpc_call_finish(call, rc ? GRPC_INTERNAL : GRPC_OK, NULL);
        rpc_done(s, rpc, rc ? GRPC_INTERNAL : GRPC_OK, t0);
        return;
    }
    scaler_stream_t *st = calloc(1, sizeof *st);
    if (!st) {
        grpc_call_finish(call, GRPC_RESOURCE_EXHAUSTED, "out of memory");
        rpc_done(s, rpc, GRPC_RESOURCE_EXHAUSTED, t0);
        return;
    }
    st->sc = s;
    st->call = call;
    st->kind = STREAM_HEALTH_WATCH;
    st->health_known_service = known;
    st->started = t0;
    loop_timer_init(&st->heartbeat, on_heartbeat, st);
    st->next = s->health_watchers;
    if (s->health_watchers)
        s->health_watchers->prev = st;
    s->health_watchers = st;
    s->nstreams++;
    grpc_call_set_user_data(call, st);
    /* Per the health protocol, an unknown service is reported, not refused. */
    st->last_sent = known
                        ? current_health(s)
                        : GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVICE_UNKNOWN;
    send_health(call, st->last_sent, true);
}

/* ---- dispatch ------------------------------------------------------------------- */

/*
 * Everything a configuration needs before it can be evaluated is started
 * here, when an RPC brings it, and never by an evaluation: the demand
 * sources (KEDA asks GetMetricSpec before the first GetMetrics, so the
 * first scrape is under way by then) and whatever the server starts for
 * it (the aggregator's Node watch). Called on every acquire: for a
 * configuration already set up both are a lookup, and one whose sources
 * idled out (unused for the hub's idle_ns) gets them back.
 */
static void config_seen(scaler_t *s, const config_entry_t *entry, const char *ns, const char *name,
                        mono_ns_t now) {
    const trigger_config_t *cfg = entry->config;
    if (cfg->demand.type != DEMAND_NONE && s->opts.sources && s->role->polls_sources) {
        source_hub_subscribe(s->opts.sources, cfg, entry->id, ns, now);
        source_hub_note_asker(s->opts.sources, entry->id, ns, name);
    }
    if (s->opts.on_config)
        s->opts.on_config(s->opts.eval_user_data, cfg, ns);
}

void scaler_on_request(grpc_call_t *call, const char *path, const uint8_t *msg, size_t len,
                       void *ud) {
    scaler_t *s = ud;
    mono_ns_t t0 = loop_now(s->opts.loop);

    if (strncmp(path, PATH_HEALTH, strlen(PATH_HEALTH)) == 0) {
        const char *m = path + strlen(PATH_HEALTH);
        if (strcmp(m, "Check") == 0 || (strcmp(m, "Watch") == 0 && !s->shutting_down)) {
            handle_health(s, call, m[0] == 'W', msg, len, t0);
            return;
        }
    }
    scaler_rpc_t rpc = SCALER_RPC_OTHER;
    bool explain = strcmp(path, PATH_EXPLAIN) == 0;
    if (strncmp(path, PATH_ES, strlen(PATH_ES)) == 0) {
        const char *m = path + strlen(PATH_ES);
        if (strcmp(m, "IsActive") == 0)
            rpc = SCALER_RPC_IS_ACTIVE;
        else if (strcmp(m, "StreamIsActive") == 0)
            rpc = SCALER_RPC_STREAM_IS_ACTIVE;
        else if (strcmp(m, "GetMetricSpec") == 0)
            rpc = SCALER_RPC_GET_METRIC_SPEC;
        else if (strcmp(m, "GetMetrics") == 0)
            rpc = SCALER_RPC_GET_METRICS;
        else if (strcmp(m, "StreamMetricSpec") == 0)
            rpc = SCALER_RPC_STREAM_METRIC_SPEC;
    }
    if ((rpc == SCALER_RPC_OTHER && !explain) || rpc == SCALER_RPC_STREAM_METRIC_SPEC) {
        /* KEDA treats UNIMPLEMENTED on StreamMetricSpec as "pull only". */
        char m[320];
        snprintf(m, sizeof m, "method %.256s is not implemented", path);
        grpc_call_finish(call, GRPC_UNIMPLEMENTED, m);
        rpc_done(s, rpc, GRPC_UNIMPLEMENTED, t0);
        return;
    }

    /* Counted on the wire: decoding allocates per entry. Malformed bytes
     * go on to the decoder, which names the problem. */
    metadata_wire_count_t wc;
    size_t estimate = 0; /* what a new stream's entry would cost */
    if (metadata_wire_count(msg, len, rpc == SCALER_RPC_GET_METRICS, &wc) == 0) {
        char m[160];
        if (wc.entries > s->opts.max_metadata_entries) {
            s->counted.refused_metadata_entries++;
            snprintf(m, sizeof m, "metadata: %zu entries, at most %zu (--max-metadata-entries)",
                     wc.entries, s->opts.max_metadata_entries);
            fail_call(s, call, rpc, t0, NULL, NULL, GRPC_RESOURCE_EXHAUSTED, m);
            return;
        }
        if (wc.bytes > s->opts.max_metadata_bytes) {
            s->counted.refused_metadata_bytes++;
            snprintf(m, sizeof m,
                     "metadata: %zu bytes of keys and values, at most %zu (--max-metadata-bytes)",
                     wc.bytes, s->opts.max_metadata_bytes);
            fail_call(s, call, rpc, t0, NULL, NULL, GRPC_RESOURCE_EXHAUSTED, m);
            return;
        }
        /* A stream over its budget is refused before its map is parsed
         * (and cached): the estimate is what the entry would cost. */
        estimate = config_cache_entry_bytes_for(wc.entries, wc.bytes);
        if (rpc == SCALER_RPC_STREAM_IS_ACTIVE && !s->shutting_down &&
            !admit_stream(s, call, NULL, estimate, NULL, NULL, t0))
            return;
    }

    Externalscaler__GetMetricsRequest *gm = NULL;
    Externalscaler__ScaledObjectRef *ref = NULL;
    const Externalscaler__ScaledObjectRef *r;
    if (rpc == SCALER_RPC_GET_METRICS) {
        gm = externalscaler__get_metrics_request__unpack(NULL, len, msg);
        r = gm ? gm->scaledobjectref : NULL;
    } else {
        ref = externalscaler__scaled_object_ref__unpack(NULL, len, msg);
        r = ref;
    }
    char refname[320];
    format_ref(r, refname, sizeof refname);
    if (!gm && !ref) {
        fail_call(s, call, rpc, t0, NULL, NULL, GRPC_INVALID_ARGUMENT,
                  "malformed request message (protobuf decoding failed)");
        return;
    }
    if (s->shutting_down && rpc == SCALER_RPC_STREAM_IS_ACTIVE) {
        fail_call(s, call, rpc, t0, refname, NULL, GRPC_UNAVAILABLE, "server is shutting down");
        goto out;
    }
    /* and beyond its namespace's share, known now, still before it is parsed */
    if (rpc == SCALER_RPC_STREAM_IS_ACTIVE && estimate &&
        !admit_stream(s, call, NULL, estimate, r && r->namespace_ ? r->namespace_ : "", refname,
                      t0))
        goto out;
    const config_entry_t *entry = acquire_config(s, r);
    if (!entry) {
        fail_call(s, call, rpc, t0, refname, NULL, GRPC_RESOURCE_EXHAUSTED, "out of memory");
        goto out;
    }
    if (entry->status != 0) {
        fail_call(s, call, rpc, t0, refname, NULL, GRPC_INVALID_ARGUMENT, entry->error);
        config_cache_release(s->cache, entry);
        goto out;
    }
    char why[512];
    if (role_check_trigger(s->role, entry->config, true, why, sizeof why) ==
        ROLE_CHECK_BAD_CONFIG) {
        fail_call(s, call, rpc, t0, refname, entry->config->metric_name, GRPC_INVALID_ARGUMENT,
                  why);
        config_cache_release(s->cache, entry);
        goto out;
    }
    const char *ns = r && r->namespace_ ? r->namespace_ : "";
    if (s->opts.tenant &&
        tenant_check_trigger(s->opts.tenant, entry->config, ns, why, sizeof why) != 0) {
        fail_call(s, call, rpc, t0, refname, entry->config->metric_name, GRPC_PERMISSION_DENIED,
                  why);
        config_cache_release(s->cache, entry);
        goto out;
    }
    config_seen(s, entry, ns, r && r->name ? r->name : "", t0);
    switch (rpc) {
    case SCALER_RPC_GET_METRIC_SPEC:
        handle_metric_spec(s, call, entry->config, t0);
        break;
    case SCALER_RPC_GET_METRICS:
        if (handle_get_metrics(s, call, entry, ns, refname, t0, true))
            entry = NULL; /* held by the deferred call */
        break;
    case SCALER_RPC_IS_ACTIVE:
        if (handle_is_active(s, call, entry, ns, refname, t0, true))
            entry = NULL;
        break;
    case SCALER_RPC_STREAM_IS_ACTIVE:
        handle_stream_is_active(s, call, entry, ns, refname, t0, true);
        entry = NULL; /* moved (or released) */
        break;
    default:
        if (explain)
            handle_explain(s, call, entry, ns, refname, t0);
        break;
    }
    if (entry)
        config_cache_release(s->cache, entry);
out:
    if (gm)
        externalscaler__get_metrics_request__free_unpacked(gm, NULL);
    if (ref)
        externalscaler__scaled_object_ref__free_unpacked(ref, NULL);
}

void scaler_on_call_gone(grpc_call_t *call, void *call_ud, void *ud) {
    (void)call;
    scaler_t *s = ud;
    scaler_stream_t *st = call_ud;
    if (!st)
        return;
    if (st->kind == CALL_DEFERRED) {
        rpc_done(s, st->rpc, GRPC_CANCELLED, st->started);
        deferred_unlink(s, st);
        stream_refund(s, st);
        config_cache_release(s->cache, st->entry);
        free(st);
        arm_defer_timer(s);
        return;
    }
    rpc_done(s,
             st->kind == STREAM_IS_ACTIVE ? SCALER_RPC_STREAM_IS_ACTIVE : SCALER_RPC_HEALTH_WATCH,
             GRPC_CANCELLED, st->started);
    stream_refund(s, st);
    stream_unlink(s, st);
    free(st);
}

/* ---- refresh ----------------------------------------------------------------------- */

static void on_recheck(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)loop;
    (void)t;
    scaler_refresh(ud);
}

/* Configurations nobody asked for in config_idle_ns leave the cache (and
 * the hub's subscriptions for them go too: on_config_evicted); what that
 * freed is handed back to the system (glibc keeps freed heap pages). */
static void expire_configs(scaler_t *s, mono_ns_t now) {
    if (!s->opts.config_idle_ns)
        return;
    s->freed_since_trim += config_cache_expire(s->cache, now, s->opts.config_idle_ns);
    if (s->freed_since_trim < 1024 * 1024)
        return;
    s->freed_since_trim = 0;
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

void scaler_refresh(scaler_t *s) {
    snapshot_t *snap = s->opts.current_snapshot(s->opts.snapshot_user_data);
    mono_ns_t now = loop_now(s->opts.loop);
    expire_configs(s, now);
    for (stream_group_t *g = s->groups; g; g = g->next) {
        eval_result_t prev = g->result;
        evaluate_trigger(s, g->entry, g->ns, now, snap, &g->result);
        g->evaluated = true;
        if (g->result.status != EVAL_OK &&
            (prev.status != g->result.status || strcmp(prev.message, g->result.message) != 0))
            LOG_WARN(s->opts.log, "stream trigger %s (%u stream(s)): %s: %s; streams stay open, %s",
                     g->entry->config->metric_name, g->nstreams,
                     grpc_status_name(eval_grpc_code(g->result.status)), g->result.message,
                     g->result.wake ? "active: its queue reads work"
                                    : "nothing pushed until it recovers");
        for (scaler_stream_t *st = g->streams; st; st = st->next)
            stream_push(s, st);
    }
    snapshot_unref(snap);
    if (s->deferred)
        retry_deferred(s);

    int health = current_health(s);
    if (health != s->health_status) {
        s->health_status = health;
        for (scaler_stream_t *st = s->health_watchers; st; st = st->next) {
            if (st->health_known_service && st->last_sent != health) {
                send_health(st->call, health, true);
                st->last_sent = health;
            }
        }
    }
    if (s->opts.recheck_interval_ns && !s->shutting_down)
        loop_timer_start(s->opts.loop, &s->recheck,
                         clock_add_sat(now, s->opts.recheck_interval_ns));
}

/* ---- lifecycle ------------------------------------------------------------------- */

/* The key of the cache's error digests: unknown to callers, so none can
 * aim a map at another's digest. getrandom, else the clock and addresses. */
static uint64_t cache_seed(const scaler_t *s) {
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) == (ssize_t)sizeof seed)
        return seed;
    return clock_mono_now() ^ (uint64_t)(uintptr_t)s ^ ((uint64_t)getpid() << 32);
}

void scaler_budget_stats(const scaler_t *s, scaler_budget_stats_t *out) {
    *out = s->counted;
    out->cache_bytes = config_cache_bytes(s->cache);
    out->cache_entries = config_cache_size(s->cache);
    out->cache_evictions = config_cache_evictions(s->cache);
    out->stream_bytes = s->stream_bytes;
}

static void on_config_evicted(void *ud, uint64_t id);

int scaler_new(const scaler_opts_t *opts, scaler_t **out) {
    scaler_t *s = calloc(1, sizeof *s);
    if (!s)
        return KGS_ENOMEM;
    s->opts = *opts;
    if (!s->opts.max_metadata_entries)
        s->opts.max_metadata_entries = SCALER_DEFAULT_MAX_METADATA_ENTRIES;
    if (!s->opts.max_metadata_bytes)
        s->opts.max_metadata_bytes = SCALER_DEFAULT_MAX_METADATA_BYTES;
    if (!s->opts.config_cache_bytes)
        s->opts.config_cache_bytes = SCALER_DEFAULT_CONFIG_CACHE_BYTES;
    if (!s->opts.max_stream_bytes)
        s->opts.max_stream_bytes = SCALER_DEFAULT_MAX_STREAM_BYTES;
    /* The role follows from what the server hands us: a cluster evaluation
     * (aggregator), sources without one (standalone), neither (agent). */
    s->role = role_caps(opts->evaluate  ? KGS_ROLE_AGGREGATOR
                        : opts->sources ? KGS_ROLE_STANDALONE
                                        : KGS_ROLE_AGENT);
    config_cache_opts_t co = {.max_entries = CONFIG_CACHE_CAPACITY,
                              .max_bytes = s->opts.config_cache_bytes,
                              .seed = cache_seed(s),
                              .on_evict = s->opts.sources ? on_config_evicted : NULL,
                              .evict_user_data = s};
    if (config_cache_new_opts(&co, &s->cache) != 0) {
        free(s);
        return KGS_ENOMEM;
    }
    s->health_status = -1;
    loop_timer_init(&s->recheck, on_recheck, s);
    loop_timer_init(&s->defer_timer, on_defer_timer, s);
    log_ratelimit_init(&s->errors_rl, 60 * NS_PER_SEC);
    *out = s;
    return 0;
}

/* A configuration left the cache: the hub's subscriptions for it go too
 * (their forecast, model and latency windows would otherwise wait for the
 * idle time). */
static void on_config_evicted(void *ud, uint64_t id) {
    scaler_t *s = ud;
    source_hub_forget(s->opts.sources, id);
}

unsigned scaler_stream_count(const scaler_t *s) {
    return s->nstreams;
}

void scaler_shutdown(scaler_t *s) {
    s->shutting_down = true;
    loop_timer_stop(s->opts.loop, &s->recheck);
    /* Status OK: KEDA re-dials in 2 s (after an error it would back off). */
    while (s->groups) {
        stream_group_t *g = s->groups;
        /* stream_end may free g together with its last stream. */
        while (s->groups == g && g->streams)
            stream_end(s, g->streams, GRPC_OK, "server shutting down");
    }
    while (s->health_watchers)
        stream_end(s, s->health_watchers, GRPC_OK, "server shutting down");
    while (s->deferred) {
        scaler_stream_t *d = s->deferred;
        deferred_unlink(s, d);
        stream_refund(s, d);
        grpc_call_set_user_data(d->call, NULL);
        grpc_call_finish(d->call, GRPC_UNAVAILABLE, "server shutting down");
        rpc_done(s, d->rpc, GRPC_UNAVAILABLE, d->started);
        config_cache_release(s->cache, d->entry);
        free(d);
    }
    loop_timer_stop(s->opts.loop, &s->defer_timer);
}

void scaler_free(scaler_t *s) {
    if (!s)
        return;
    loop_timer_stop(s->opts.loop, &s->recheck);
    loop_timer_stop(s->opts.loop, &s->defer_timer);
    while (s->deferred) {
        scaler_stream_t *d = s->deferred;
        deferred_unlink(s, d);
        config_cache_release(s->cache, d->entry);
        free(d);
    }
    while (s->groups) {
        stream_group_t *g = s->groups;
        while (s->groups == g && g->streams) {
            scaler_stream_t *st = g->streams;
            stream_unlink(s, st);
            free(st);
        }
    }
    while (s->health_watchers) {
        scaler_stream_t *st = s->health_watchers;
        stream_unlink(s, st);
        free(st);
    }
    config_cache_free(s->cache);
    for (size_t i = 0; i < NS_USE_BUCKETS; i++)
        while (s->uses[i]) {
            ns_use_t *u = s->uses[i];
            s->uses[i] = u->next;
            free(u);
        }
    free(s);
}
