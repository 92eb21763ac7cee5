/*
 * source_hub.c - polling and reading the demand sources (see the header).
 *
 * A source is identified by everything that decides what it reads: kind,
 * URL or Redis address, engine and model filter, queue key and credentials
 * (a sourceAuth profile with the namespace that may use it).
 * The identity string is the hash key; it may hold a Redis password, so it
 * is never logged: messages use the source's display name.
 *
 * Each source has one timer. A poll is one fetch (fetch.c): a fresh
 * connection, one HTTP GET or one Redis pipeline. The next poll starts one
 * interval after the previous one started (or at once when a poll took
 * longer than that), so a slow source never has two polls in flight. What
 * the bytes of a poll say is the source's backend's business
 * (source_backend.h: HTTP scrape, Redis); what a reading means for a
 * trigger is core/demand_eval.c's.
 *
 * Two ways in, kept apart: source_hub_subscribe() creates and starts
 * (once per trigger configuration and namespace: a subscription), and
 * source_hub_signals() only reads: it finds sources by identity, marks
 * them used and copies out their state. New pods of a podSelector trigger
 * get sources from the subscription's rescan timer, never from a read.
 */
#include "sources/source_hub.h"

#include <arpa/inet.h>
#include <malloc.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/resolver.h"
#include "core/hash.h"
#include "core/demand_eval.h"
#include "core/err.h"
#include "core/roles.h"
#include "net/sock.h"
#include "net/tls.h"
#include "net/token_file.h"
#include "sources/counter_window.h"
#include "sources/fetch.h"
#include "sources/hist_window.h"
#include "sources/source_backend.h"
#include "core/source_url.h"
#include "core/egress.h"
#include "core/fair_share.h"
#include "core/source_auth.h"
#include "core/tenant.h"

#define HASH_BUCKETS 4096
#define SWEEP_NS 10000000000ull
#define DEFAULT_MAX_BODY (8u * 1024 * 1024)
#define DEFAULT_IDLE_NS 600000000000ull
#define DEFAULT_NOTIFY_NS 50000000ull
#define RESOLVE_INTERVAL_NS 30000000000ull
#define SOURCE_MAX_ADDRS 8
#define SOURCE_STARTS 4                 /* processes remembered per engine URL */
#define SOURCE_TURNS_NS 600000000000ull /* taking turns: for 10 min after the last sign */
#define DEFAULT_MAX_SOURCES 256
#define DEFAULT_MAX_PER_NS 64
#define DEFAULT_CREATE_RATE 20.0
#define DEFAULT_CREATE_BURST 50
#define DEFAULT_MAX_READ_BYTES (32u * 1024 * 1024)
#define DEFAULT_READ_RATE (64.0 * 1024 * 1024)
#define DEFAULT_MAX_SUB_BYTES (16u * 1024 * 1024)
#define CROWDED_IDLE_NS 60000000000ull /* idle expiry over 3/4 of max_sources */
#define NS_BUCKETS 256
/* A profile's files are looked at (stat) at most this often, from the polls
 * that use it: a rotated token or certificate is in use about a second later. */
#define AUTH_CHECK_NS 1000000000ull

/* A subscription a pod's latency increases go to: (trigger_id, ns), looked
 * up at each poll (one freed meanwhile is dropped from the list). */
typedef struct {
    uint64_t id;
    char ns[128];
} hist_sub_ref_t;

/* One engine source's latency state (triggers with latency targets only):
 * per signal the previous scrape's buckets and their layout, and the
 * subscriptions whose windows get the increases. */
typedef struct {
    hist_layout_t layout[SLO_SIGNAL_COUNT];
    hist_pod_t pod[SLO_SIGNAL_COUNT];
    hist_sub_ref_t *subs;
    unsigned nsubs, capsubs;
} source_hist_t;

typedef struct source source_t;
struct source {
    source_t *hnext;
    source_t *prev, *next; /* all sources, for the sweep */
    source_hub_t *hub;
    char *key; /* owned; identity (may hold a password: never logged) */
    uint64_t hash;
    char name[640]; /* for messages */
    /* What it reads, as its backend (source_backend.h) needs it; holds the
     * Redis password: wiped on free. */
    source_params_t p;
    const source_backend_t *backend;
    bool tls;
    /* addressing */
    resolver_t *resolver;
    /* Every address the name resolved to (a literal: one). A poll that fails
     * moves on to the next, so a dual-stack name whose first address does
     * not answer still works. */
    struct sockaddr_storage addrs[SOURCE_MAX_ADDRS];
    socklen_t addrlens[SOURCE_MAX_ADDRS];
    unsigned naddrs, next_addr;
    char resolve_error[600];
    /* schedule */
    uint64_t interval_ns, timeout_ns;
    unsigned window_max_s;
    loop_timer_t timer;
    fetch_t *inflight;
    /* The poll in flight's reply as its backend reads it, what it holds
     * (counted in hub->read_held), and how the backend refused it. */
    source_reply_t *reply;
    size_t held;
    int reply_rc;
    char reply_msg[512];
    mono_ns_t created, last_used, last_ok, poll_started;
    /* outcome */
    bool polled_once, have_reading;
    engine_reading_t reading;
    double queue_value;
    char error[512];         /* "" while the last poll succeeded */
    demand_fail_t fail_kind; /* what the failure in error says of the server */
    /* Triton: queue time (a) and successes (b); the other engines (a source
     * reads one engine, and only Triton has no token counters): prompt (a)
     * and generation (b) tokens. */
    counter_window_t counters;
    /* Engines: the processes that answered (process_start_time_seconds),
     * the last SOURCE_STARTS distinct ones, newest at starts[0]; and until
     * when the URL counts as taking turns (one that answered before another
     * answered again: a load-balanced URL; a restart never goes back). */
    double starts[SOURCE_STARTS];
    unsigned nstarts;
    mono_ns_t turns_until;
    struct ns_count *charged; /* the namespace it counts against */
    int auth;                 /* index in hub->auth (sourceAuth), -1 none */
    char *auth_pod;      /* owned; a pod's source with auth: "namespace/name" (auth_pod_check) */
    source_hist_t *hist; /* latency; NULL until a trigger with latency targets reads it */
};

/* Live sources charged to one namespace (--max-sources-per-namespace). */
typedef struct ns_count {
    struct ns_count *next;
    unsigned n;
    /* --source-read-rate: response bytes its sources may read a second (a
     * bucket of one second's worth, in debt after a large page: the next
     * polls of its sources wait until it is paid). */
    double rtokens;
    mono_ns_t rtokens_at;
    size_t sub_bytes; /* its subscriptions (--subscription-bytes) */
    size_t read_held; /* its polls in flight's replies (--source-read-bytes) */
    char ns[128];
} ns_count_t;

/* A subscription: one trigger configuration (the config cache's id) in one
 * namespace. It owns no source (sources are shared and found by identity);
 * it holds what outlives a single read: the forecast: trend state, the
 * creation errors, and for podSelector engine triggers a copy of the config
 * so the hub can re-list the pods on its own timer and start sources for
 * new ones (a read never creates). Freed, like a source, when no read has
 * used it for idle_ns; the scaler subscribes again on its next acquire. */
typedef struct sub {
    struct sub *hnext;
    source_hub_t *hub;
    uint64_t trigger_id;
    char ns[128];
    trigger_config_t *pods_cfg; /* owned; podSelector engine triggers only */
    loop_timer_t rescan;
    forecast_t f;
    demand_model_state_t model; /* demandModel: queueing */
    demand_view_t view;         /* the last evaluation's decision (query, Explain, /metrics) */
    char metric_name[128];      /* the trigger's, for /metrics */
    char asker[254];            /* the ScaledObject that asked last ("" none yet) */
    mono_ns_t last_used;
    char engine_error[300]; /* the last engine source that could not be set up */
    char queue_error[300];  /* the queue source could not be set up */
    bool engine_limited;    /* an engine source was refused by a limit (engine_error says) */
    bool queue_limited;     /* the queue source was refused by a limit */
    bool retry;             /* out of memory setting something up: the next subscribe retries */
    /* Latency targets: one window per signal in slo_mask, fed by every pod's
     * polls (buckets of all pods add), read by source_hub_signals(). */
    unsigned slo_mask;
    uint64_t window_ns;
    hist_window_t *win[SLO_SIGNAL_COUNT];
    /* A pod's latency could not be subscribed (out of memory): the windows
     * lack it, so latency reads as unknown until a retry adds it. */
    bool hist_incomplete;
    /* sourceAuth: the profile (index in hub->auth, -1 none), admitted for
     * this namespace at the first subscribe; auth_denied: it was not, and
     * nothing is started (engine_error and queue_error say why). */
    int auth;
    bool auth_denied;
    /* What it counts against --subscription-bytes, and where. */
    size_t bytes;
    struct ns_count *acct;
} sub_t;

#define SUB_BUCKETS 1024

/* Scratch for one signals read: one view (and one URL, for sources not
 * started) per engine. */
typedef struct {
    demand_source_t *v;
    /* The URLs of the sources not started yet (their names), one after the
     * other; name_at[i] is 1 + v[i]'s offset in it, 0 for a source that
     * exists. Grown only by what is missing: 500 polled pods cost none. */
    char *names;
    size_t names_len, names_cap;
    uint32_t *name_at;
    unsigned n, cap;
    demand_pod_t *pods; /* every selected pod, Ready or not */
    unsigned npods, pods_cap;
    bool oom;
    const char *limited; /* a source missing because a limit refused it: why */
} views_t;

/* One --source-auth profile at run time: the bearer token as last read,
 * the identity of the file it came from, and the TLS context that follows
 * its files. */
typedef struct {
    const source_auth_profile_t *p; /* borrowed from opts.auth */
    tls_client_t *tls;              /* ca-file or a client certificate: its own context */
    char *token;                    /* SOURCE_AUTH_TOKEN_MAX + 1 bytes; wiped when replaced */
    size_t token_len;               /* 0: none usable (error says why) */
    token_file_id_t id;             /* the file it was read from */
    mono_ns_t checked;              /* last look at the files */
    char error[800];                /* why the profile cannot be used now ("" = it can) */
} auth_rt_t;

struct source_hub {
    source_hub_opts_t o;
    auth_rt_t *auth; /* one per opts.auth profile */
    unsigned nauth;
    sub_t *subs[SUB_BUCKETS];
    views_t views;
    SSL_CTX *tls;   /* built on first use unless a CA file was given (see hub_tls) */
    bool tls_tried; /* the lazy build ran (and failed when tls is still NULL) */
    char tls_error[300];
    source_t *buckets[HASH_BUCKETS];
    source_t *all;
    unsigned count;
    loop_timer_t sweep, notify;
    mono_ns_t last_notify;
    bool dirty;
    source_scratch_t scratch; /* for the backends' reply parsing */
    source_hub_stats_t stats;
    ns_count_t *ns_counts[NS_BUCKETS];
    double tokens; /* --source-create-rate's bucket */
    mono_ns_t tokens_at;
    size_t read_held; /* what the replies of the polls in flight hold (--source-read-bytes) */
    size_t sub_bytes; /* what the subscriptions count (--subscription-bytes) */
    unsigned nsubs;
    size_t freed_since_trim; /* bytes freed since memory was last handed back (malloc_trim) */
};

/* ---- credentials (--source-auth) ------------------------------------------------ */

/* Reads a's token file into a->token unless it is the file read last
 * (net/token_file.h). 0, or -1 with a->error set and a->token wiped: a
 * token file that vanished or went bad is not quietly replaced by its old
 * content. The message names the file, never its bytes. */
static int auth_read_token(auth_rt_t *a) {
    if (a->token_len && token_file_unchanged(a->p->token_file, &a->id))
        return 0;
    char why[700];
    if (token_file_read(a->p->token_file, a->token, SOURCE_AUTH_TOKEN_MAX + 1, &a->token_len,
                        &a->id, why, sizeof why) != 0) {
        a->token_len = 0;
        snprintf(a->error, sizeof a->error, "sourceAuth %s: %s", a->p->name, why);
        return -1;
    }
    a->error[0] = '\0';
    return 0;
}

/* Before a poll with profile a: at most once per AUTH_CHECK_NS, the token
 * re-read if its file changed and the certificates reloaded if theirs did
 * (a failed reload keeps the previous context, as the server's do). */
static void auth_refresh(source_hub_t *h, auth_rt_t *a, mono_ns_t now) {
    if (a->checked && now - a->checked < AUTH_CHECK_NS)
        return;
    a->checked = now;
    bool was_bad = a->error[0] != '\0';
    if (a->p->token_file[0] && auth_read_token(a) != 0) {
        if (!was_bad)
            LOG_WARN(h->o.log, "%s", a->error);
        return;
    }
    a->error[0] = '\0';
    if (a->tls) {
        bool reloaded = false;
        char why[400];
        if (tls_client_reload_if_changed(a->tls, &reloaded, why, sizeof why) != 0)
            LOG_WARN(h->o.log,
                     "sourceAuth %s: TLS reload failed, still using the previous files: %s",
                     a->p->name, why);
        else if (reloaded)
            LOG_INFO(h->o.log, "sourceAuth %s: TLS files reloaded; new scrapes use them",
                     a->p->name);
    }
    if (was_bad)
        LOG_INFO(h->o.log, "sourceAuth %s: usable again", a->p->name);
}

/* The run-time state of every profile, at start: a token or certificate
 * that cannot be read fails the start, naming the profile and the file. */
static int auth_init(source_hub_t *h, char *err, size_t errlen) {
    const source_auth_set_t *set = h->o.auth;
    if (!set || !set->n)
        return 0;
    h->auth = calloc(set->n, sizeof *h->auth);
    if (!h->auth)
        return kgs_seterr(err, errlen, KGS_ENOMEM, "out of memory");
    h->nauth = set->n;
    for (unsigned i = 0; i < set->n; i++) {
        auth_rt_t *a = &h->auth[i];
        a->p = &set->p[i];
        if (a->p->token_file[0]) {
            if (!(a->token = calloc(1, SOURCE_AUTH_TOKEN_MAX + 1)))
                return kgs_seterr(err, errlen, KGS_ENOMEM, "out of memory");
            if (auth_read_token(a) != 0)
                return kgs_seterr(err, errlen, KGS_EIO, "--source-auth: %s", a->error);
        }
        if (a->p->ca_file[0] || a->p->cert_file[0]) {
            const char *ca = a->p->ca_file[0]                  ? a->p->ca_file
                             : h->o.ca_file && h->o.ca_file[0] ? h->o.ca_file
                                                               : NULL;
            char why[400];
            int rc =
                tls_client_new(ca, a->p->cert_file[0] ? a->p->cert_file : NULL,
                               a->p->key_file[0] ? a->p->key_file : NULL, &a->tls, why, sizeof why);
            if (rc != 0)
                return kgs_seterr(err, errlen, rc, "--source-auth %s: %s", a->p->name, why);
        }
    }
    return 0;
}

static void auth_free(source_hub_t *h) {
    for (unsigned i = 0; i < h->nauth; i++) {
        if (h->auth[i].token)
            explicit_bzero(h->auth[i].token, SOURCE_AUTH_TOKEN_MAX + 1);
        free(h->auth[i].token);
        tls_client_free(h->auth[i].tls);
    }
    free(h->auth);
    h->auth = NULL;
    h->nauth = 0;
}

/* Whether trigger c may scrape with its sourceAuth from namespace ns: 0
 * with *index (-1: it names none), or KGS_EINVAL with the message. */
static int auth_admit(const source_hub_t *h, const trigger_config_t *c, const char *ns, int *index,
                      char *err, size_t errlen) {
    static const source_auth_set_t none;
    *index = -1;
    if (!c->demand.source_auth[0])
        return 0;
    const source_auth_set_t *set = h->o.auth ? h->o.auth : &none;
    const source_auth_profile_t *p;
    int rc = tenant_profile_admit(set, c->demand.source_auth, ns, &p, err, errlen);
    if (rc == 0)
        *index = (int)(p - set->p); /* h->auth[i] is set->p[i]'s (auth_init) */
    return rc;
}

/* ---- budgets ------------------------------------------------------------------- */

static ns_count_t **ns_slot(source_hub_t *h, const char *ns) {
    ns_count_t **pp = &h->ns_counts[kgs_fnv1a(ns) % NS_BUCKETS];
    while (*pp && strcmp((*pp)->ns, ns) != 0)
        pp = &(*pp)->next;
    return pp;
}

/* The namespace's accounts, made when first needed (NULL: out of memory). */
static ns_count_t *ns_get(source_hub_t *h, const char *ns) {
    ns_count_t **pp = ns_slot(h, ns);
    if (!*pp) {
        ns_count_t *c = calloc(1, sizeof *c);
        if (!c)
            return NULL;
        snprintf(c->ns, sizeof c->ns, "%s", ns);
        c->rtokens = h->o.read_rate;
        c->rtokens_at = loop_now(h->o.loop);
        *pp = c;
    }
    return *pp;
}

/* Frees a namespace's accounts once nothing is charged to them. */
static void ns_release(source_hub_t *h, ns_count_t *c) {
    if (!c || c->n || c->sub_bytes || c->read_held)
        return;
    ns_count_t **pp = ns_slot(h, c->ns);
    if (*pp == c)
        *pp = c->next;
    free(c);
}

static void ns_uncharge(source_hub_t *h, ns_count_t *c) {
    if (!c)
        return;
    c->n--;
    ns_release(h, c);
}

/* Refills --source-create-rate's bucket up to now. */
static void tokens_refill(source_hub_t *h, mono_ns_t now) {
    double burst = (double)h->o.create_burst;
    if (now > h->tokens_at)
        h->tokens += (double)(now - h->tokens_at) / 1e9 * h->o.create_rate;
    if (h->tokens > burst)
        h->tokens = burst;
    if (now > h->tokens_at)
        h->tokens_at = now;
}

/* Whether a new source for namespace ns fits every budget now. Takes
 * nothing: budget_take() takes the creation token once the source is
 * made, so a source that could not be configured costs no token. A
 * namespace's first source is never refused by the rate (another
 * namespace's burst cannot keep it from being served at all); it is still
 * bounded by --max-sources. Returns 0, or KGS_ERANGE with the limit and
 * its flag in err (counted). */
static int budget_admit(source_hub_t *h, const char *ns, mono_ns_t now, char *err, size_t errlen) {
    /* The namespace's own cap first: it is the one its owner can act on. */
    ns_count_t *c = *ns_slot(h, ns);
    if (c && c->n >= h->o.max_sources_per_ns) {
        h->stats.refused_per_ns++;
        return kgs_seterr(err, errlen, KGS_ERANGE,
                          "demand sources of namespace \"%.100s\": %u polled now, at most %u "
                          "(--max-sources-per-namespace)",
                          ns, c->n, h->o.max_sources_per_ns);
    }
    if (h->count >= h->o.max_sources) {
        h->stats.refused_max_sources++;
        return kgs_seterr(err, errlen, KGS_ERANGE,
                          "demand sources: %u polled now, at most %u (--max-sources)", h->count,
                          h->o.max_sources);
    }
    tokens_refill(h, now);
    if (h->tokens < 1.0 && c && c->n > 0) {
        h->stats.refused_rate++;
        return kgs_seterr(err, errlen, KGS_ERANGE,
                          "demand sources: created faster than %g a second (bursts of %u) "
                          "(--source-create-rate); tried again on the next request",
                          h->o.create_rate, h->o.create_burst);
    }
    return 0;
}

/* A source was created: its token (none left: a namespace's first source,
 * which budget_admit lets through). */
static void budget_take(source_hub_t *h) {
    if (h->tokens >= 1.0)
        h->tokens -= 1.0;
}

/* Charges s to namespace ns (out of memory: uncharged, still bounded by max_sources). */
static void ns_charge(source_hub_t *h, source_t *s, const char *ns) {
    ns_count_t *c = ns_get(h, ns);
    if (!c)
        return;
    c->n++;
    s->charged = c;
}

/* What a subscription for trigger c costs at most: itself, the copy of a
 * podSelector trigger it keeps, and a latency window per signal (made when
 * the first histogram arrives, counted from the start). */
static size_t sub_cost(const trigger_config_t *c, bool pods) {
    size_t n = sizeof(sub_t) + (pods ? sizeof(trigger_config_t) : 0);
    for (int i = 0; i < SLO_SIGNAL_COUNT; i++)
        if (c->demand.slo_mask & (1u << i))
            n += sizeof(hist_window_t);
    return n;
}

/* Whether a subscription of `cost` bytes for namespace ns fits
 * --subscription-bytes, shared fairly between namespaces (core/fair_share.h).
 * 0, or KGS_ERANGE with the figures and the flag in err. */
static int sub_budget_admit(const source_hub_t *h, const char *ns, size_t cost, char *err,
                            size_t errlen) {
    const ns_count_t *c = *ns_slot((source_hub_t *)h, ns);
    size_t mine = c ? c->sub_bytes : 0;
    if (fair_share_admits(mine, h->sub_bytes, cost, h->o.max_sub_bytes))
        return 0;
    return kgs_seterr(err, errlen, KGS_ERANGE,
                      "demand subscriptions of namespace \"%.100s\": %zu bytes, %zu more would "
                      "pass its share of %zu (half of what other namespaces leave of "
                      "--subscription-bytes %zu); triggers unused for the idle time are freed",
                      ns, mine, cost, fair_share_cap(mine, h->sub_bytes, h->o.max_sub_bytes),
                      h->o.max_sub_bytes);
}

/* ---- helpers ------------------------------------------------------------------- */

static void notify(source_hub_t *h) {
    if (!h->o.on_update)
        return;
    h->dirty = true;
    if (loop_timer_armed(&h->notify))
        return;
    mono_ns_t now = loop_now(h->o.loop);
    mono_ns_t due = h->last_notify + h->o.notify_min_ns;
    loop_timer_start(h->o.loop, &h->notify, due > now ? due : now);
}

static void on_notify(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)loop;
    (void)t;
    source_hub_t *h = ud;
    h->last_notify = loop_now(h->o.loop);
    if (h->dirty) {
        h->dirty = false;
        h->o.on_update(h->o.user_data);
    }
}

/* A failed poll: kind says whether anybody was there (demand_fail_t). */
static void set_failure(source_t *s, demand_fail_t kind, const char *msg) {
    s->fail_kind = kind;
    if (strncmp(s->error, msg, sizeof s->error - 1) != 0) {
        if (!s->error[0] || !s->polled_once)
            LOG_WARN(s->hub->o.log, "source %s: %s", s->name, msg);
        snprintf(s->error, sizeof s->error, "%.*s", (int)sizeof s->error - 1, msg);
        notify(s->hub);
    }
    s->polled_once = true;
    s->hub->stats.failures++;
}

static void set_error(source_t *s, const char *msg) {
    set_failure(s, DEMAND_FAIL_OTHER, msg);
}

/* What a fetch's status says of the server (fetch.h). */
static demand_fail_t fetch_fail_kind(int status) {
    return status == KGS_ENOPEER     ? DEMAND_FAIL_NO_SERVER
           : status == KGS_ETIMEDOUT ? DEMAND_FAIL_SLOW
                                     : DEMAND_FAIL_OTHER;
}

static void success(source_t *s, mono_ns_t now) {
    if (s->error[0]) {
        LOG_INFO(s->hub->o.log, "source %s: recovered", s->name);
        s->error[0] = '\0';
    }
    s->polled_once = true;
    s->have_reading = true;
    s->last_ok = now;
    notify(s->hub);
}

/* ---- latency windows ------------------------------------------------------------- */

static sub_t *sub_find(const source_hub_t *h, uint64_t id, const char *ns);

/* One poll's histograms of source s: per signal, the increase since the
 * pod's previous scrape (hist_pod_delta: the first scrape is a baseline
 * unless process_start_time_seconds lies inside the window; a drop is a
 * restart) into the window of every subscription that reads s. A layout
 * that changed (an upgraded engine) starts the pod's baseline again, and a
 * window that gets another layout than it holds starts again in that one
 * (pods of two layouts at once: latency stays unknown until one remains). */
static void hist_feed(source_t *s, const engine_hists_t *eh, mono_ns_t now) {
    source_hub_t *h = s->hub;
    source_hist_t *sh = s->hist;
    double wall_s = (double)clock_wall_ms() / 1000.0;
    bool since_start = eh->has_start && eh->start_time_s >= wall_s - (double)s->window_max_s &&
                       eh->start_time_s <= wall_s + 60;
    for (int sig = 0; sig < SLO_SIGNAL_COUNT; sig++) {
        if (!(eh->mask & (1u << sig)))
            continue;
        if (!hist_layout_equal(&sh->layout[sig], &eh->layout[sig])) {
            sh->layout[sig] = eh->layout[sig];
            memset(&sh->pod[sig], 0, sizeof sh->pod[sig]);
        }
        hist_counts_t delta;
        if (!hist_pod_delta(&sh->pod[sig], &eh->counts[sig], since_start, sh->layout[sig].n,
                            &delta))
            continue;
        for (unsigned i = 0; i < sh->nsubs; i++) {
            sub_t *u = sub_find(h, sh->subs[i].id, sh->subs[i].ns);
            if (!u || !(u->slo_mask & (1u << sig)))
                continue;
            /* counted in the subscription's bytes from the start */
            if (!u->win[sig] && !(u->win[sig] = calloc(1, sizeof *u->win[sig]))) {
                u->hist_incomplete = u->retry = true;
                continue;
            }
            hist_window_t *w = u->win[sig];
            if (!hist_layout_equal(hist_window_layout(w), &sh->layout[sig]))
                hist_window_reset(w, &sh->layout[sig]);
            uint64_t spacing = u->window_ns / 32 ? u->window_ns / 32 : 1;
            hist_window_add(w, now, &delta, spacing);
        }
    }
    /* drop the subscriptions that are gone */
    unsigned k = 0;
    for (unsigned i = 0; i < sh->nsubs; i++)
        if (sub_find(h, sh->subs[i].id, sh->subs[i].ns))
            sh->subs[k++] = sh->subs[i];
    sh->nsubs = k;
}

/* Subscription u reads source s's latency from now on (once). false: out
 * of memory (the window would lack this pod). */
static bool hist_subscribe(source_t *s, sub_t *u) {
    if (!u->slo_mask)
        return true;
    s->p.slo_mask |= u->slo_mask;
    if (!s->hist && !(s->hist = calloc(1, sizeof *s->hist)))
        return false;
    source_hist_t *sh = s->hist;
    for (unsigned i = 0; i < sh->nsubs; i++)
        if (sh->subs[i].id == u->trigger_id && strcmp(sh->subs[i].ns, u->ns) == 0)
            return true;
    if (sh->nsubs == sh->capsubs) {
        unsigned cap = sh->capsubs ? sh->capsubs * 2 : 2;
        hist_sub_ref_t *n = realloc(sh->subs, cap * sizeof *n);
        if (!n)
            return false;
        sh->subs = n;
        sh->capsubs = cap;
    }
    sh->subs[sh->nsubs].id = u->trigger_id;
    snprintf(sh->subs[sh->nsubs].ns, sizeof sh->subs[sh->nsubs].ns, "%s", u->ns);
    sh->nsubs++;
    return true;
}

/* The latency of u's window now, for the evaluation (a read). */
static void hist_read(const sub_t *u, mono_ns_t now, demand_latency_t out[SLO_SIGNAL_COUNT]) {
    static const double qs[3] = {0.5, 0.9, 0.99};
    for (int sig = 0; sig < SLO_SIGNAL_COUNT; sig++) {
        memset(&out[sig], 0, sizeof out[sig]);
        if (!u->win[sig] || u->hist_incomplete)
            continue;
        hist_counts_t sum;
        double n = hist_window_sum(u->win[sig], now, u->window_ns, &sum);
        if (!(n > 0))
            continue; /* no request in the window: unknown */
        const hist_layout_t *l = hist_window_layout(u->win[sig]);
        double v[3] = {0, 0, 0};
        for (int q = 0; q < 3; q++)
            (void)hist_quantile(l, &sum, qs[q], &v[q]);
        out[sig] = (demand_latency_t){
            .known = true, .count = n, .p50_s = v[0], .p90_s = v[1], .p99_s = v[2]};
    }
}

/* ---- one poll's reply -------------------------------------------------------------- */

/* s's reply holds `held` bytes now: counted against --source-read-bytes,
 * shared fairly between the namespaces the sources are charged to
 * (core/fair_share.h). A growth past the share is refused: -1 with the
 * message, the old figure kept. */
static int read_hold(source_t *s, size_t held, char *msg, size_t msglen) {
    source_hub_t *h = s->hub;
    ns_count_t *c = s->charged;
    if (held > s->held) {
        size_t add = held - s->held, mine = c ? c->read_held : s->held;
        if (!fair_share_admits(mine, h->read_held, add, h->o.max_read_bytes)) {
            h->stats.refused_read_bytes++;
            snprintf(msg, msglen,
                     "response bytes held by the polls in flight: %zu of namespace \"%.100s\", "
                     "%zu in all; %zu more would pass its share of --source-read-bytes %zu",
                     mine, c ? c->ns : "?", h->read_held, add, h->o.max_read_bytes);
            return -1;
        }
    }
    h->read_held = h->read_held - s->held + held;
    if (c)
        c->read_held = c->read_held - s->held + held;
    s->held = held;
    return 0;
}

/* Gives back what s's reply holds to --source-read-bytes and frees it. */
static void reply_end(source_t *s) {
    if (s->reply)
        s->backend->end(s->reply);
    s->reply = NULL;
    (void)read_hold(s, 0, NULL, 0);
}

/* The bytes of a poll's reply as they arrive: counted against the
 * namespace's read rate, parsed by the backend, and what the reply holds
 * after them counted against the process-wide --source-read-bytes. */
static int poll_data(void *ud, const char *buf, size_t len, char *why, size_t whylen) {
    source_t *s = ud;
    source_hub_t *h = s->hub;
    h->stats.bytes += len;
    if (s->charged)
        s->charged->rtokens -= (double)len;
    int rc = s->backend->feed(s->reply, buf, len, s->reply_msg, sizeof s->reply_msg);
    if (rc >= 0 && read_hold(s, s->backend->held(s->reply), s->reply_msg, sizeof s->reply_msg) != 0)
        rc = -1;
    if (rc < 0) {
        s->reply_rc = rc;
        snprintf(why, whylen, "%s", s->reply_msg);
        return -1;
    }
    return rc;
}

/* Which process answered source s now (engine_reading_t.start_time_s): a
 * process other than the last one starts the counter window again (one
 * process's counters never differenced against another's), and one seen
 * before another marks the URL as taking turns for SOURCE_TURNS_NS. */
static void note_process(source_t *s, const engine_reading_t *r, mono_ns_t now) {
    if (!r->has_start || (s->nstarts && s->starts[0] == r->start_time_s))
        return;
    unsigned seen = 0;
    while (seen < s->nstarts && s->starts[seen] != r->start_time_s)
        seen++;
    if (s->nstarts)
        memset(&s->counters, 0, sizeof s->counters);
    if (seen < s->nstarts)
        s->turns_until = clock_add_sat(now, SOURCE_TURNS_NS);
    else if (s->nstarts < SOURCE_STARTS)
        seen = s->nstarts++;
    else
        seen = SOURCE_STARTS - 1;
    memmove(&s->starts[1], &s->starts[0], seen * sizeof *s->starts);
    s->starts[0] = r->start_time_s;
}

/* The end of one fetch: the backend's reading of the reply; what the
 * reading means over time (failures, recovery, rates) is kept here. */
static void poll_done(void *ud, int status, bool eof, const char *error) {
    source_t *s = ud;
    source_hub_t *h = s->hub;
    mono_ns_t now = loop_now(h->o.loop);
    char msg[512];
    s->inflight = NULL;
    source_reading_t r;
    int prc = status == 0 ? s->backend->finish(s->reply, eof, &r, msg, sizeof msg) : 0;
    reply_end(s);
    if (status == KGS_EINVAL && s->reply_rc) {
        /* the reply said it (the message is the source's, not the peer's) */
        set_failure(
            s, s->reply_rc == SOURCE_PARSE_NO_SERVER ? DEMAND_FAIL_NO_SERVER : DEMAND_FAIL_OTHER,
            s->reply_msg);
        return;
    }
    if (status != 0) {
        if (s->naddrs > 1)
            s->next_addr = (s->next_addr + 1) % s->naddrs;
        set_failure(s, fetch_fail_kind(status), error);
        return;
    }
    if (prc != 0) {
        set_failure(s, prc == SOURCE_PARSE_NO_SERVER ? DEMAND_FAIL_NO_SERVER : DEMAND_FAIL_OTHER,
                    msg);
        return;
    }
    if (s->p.kind == SOURCE_KIND_ENGINE) {
        if (memcmp(&r.engine, &s->reading, sizeof r.engine) != 0)
            notify(h);
        s->reading = r.engine;
        note_process(s, &r.engine, now);
        if (s->p.slo_mask && s->hist)
            hist_feed(s, h->scratch.hists, now);
        if (r.engine.has_triton)
            counter_window_push(&s->counters, now, r.engine.queue_us, r.engine.success,
                                (uint64_t)s->window_max_s * 10000000ull);
        else if (r.engine.has_tokens)
            counter_window_push(&s->counters, now, r.engine.prompt_tokens_total,
                                r.engine.generation_tokens_total,
                                (uint64_t)s->window_max_s * 10000000ull);
    } else {
        if (r.queue != s->queue_value)
            notify(h);
        s->queue_value = r.queue;
    }
    success(s, now);
}

/* ---- polling --------------------------------------------------------------------- */

static void schedule(source_t *s, mono_ns_t now) {
    mono_ns_t due = s->poll_started + s->interval_ns;
    loop_timer_start(s->hub->o.loop, &s->timer, due > now ? due : now);
}

static SSL_CTX *hub_tls(source_hub_t *h);

/* A pod's source with a sourceAuth profile: the pod must still hold the
 * address (core/tenant.h); true when refused (the source's error says why). */
static bool auth_pod_refused(source_hub_t *h, source_t *s, const struct sockaddr_storage *addr,
                             socklen_t addrlen) {
    char why[400] = "no pod check in this process";
    if (h->o.auth_pod_check &&
        h->o.auth_pod_check(h->o.user_data, s->auth_pod, (const struct sockaddr *)addr, addrlen,
                            why, sizeof why) == 0)
        return false;
    char msg[512];
    snprintf(msg, sizeof msg, "sourceAuth %s: credential not sent: %s", h->auth[s->auth].p->name,
             why);
    set_error(s, msg);
    return true;
}

/* --source-read-rate: whether s's namespace has read more than its share
 * lately; then its next poll waits until the debt is paid (the timer is
 * re-armed for then) and this returns true. A wait that outlasts the
 * source's timeout is reported on the source, naming the flag: its
 * readings go stale for a reason the operator can act on. */
static bool read_rate_wait(source_t *s, mono_ns_t now) {
    source_hub_t *h = s->hub;
    ns_count_t *c = s->charged;
    if (!c)
        return false;
    double rate = h->o.read_rate;
    if (now > c->rtokens_at) {
        c->rtokens += (double)(now - c->rtokens_at) / 1e9 * rate;
        c->rtokens_at = now;
    }
    if (c->rtokens > rate)
        c->rtokens = rate;
    if (c->rtokens >= 0)
        return false;
    h->stats.read_rate_waits++;
    uint64_t wait_ns = (uint64_t)(-c->rtokens / rate * 1e9) + 1;
    loop_timer_start(h->o.loop, &s->timer, clock_add_sat(now, wait_ns));
    if (wait_ns > s->timeout_ns) {
        char m[400];
        snprintf(m, sizeof m,
                 "polls wait %.1f s: the sources of namespace \"%.100s\" read more than %.0f "
                 "bytes a second (--source-read-rate)",
                 (double)wait_ns / 1e9, c->ns, rate);
        set_error(s, m);
    }
    return true;
}

static void poll_source(source_t *s) {
    source_hub_t *h = s->hub;
    mono_ns_t now = loop_now(h->o.loop);
    char msg[512], err[300];
    if (!s->inflight && read_rate_wait(s, now))
        return;
    s->poll_started = now;
    schedule(s, now);
    if (s->inflight)
        return;
    h->stats.polls++;
    if (s->naddrs == 0) {
        if (s->resolve_error[0])
            set_error(s, s->resolve_error);
        return;
    }
    const struct sockaddr_storage *addr = &s->addrs[s->next_addr % s->naddrs];
    socklen_t addrlen = s->addrlens[s->next_addr % s->naddrs];
    const char *refused = source_guard_addr((const struct sockaddr *)addr, addrlen);
    if (refused) {
        char peer[64];
        sock_format_peer(addr, peer, sizeof peer);
        snprintf(msg, sizeof msg, "refused to connect to %s: %s (SSRF guard)", peer, refused);
        set_error(s, msg);
        return;
    }
    if (h->o.egress) {
        char why[300];
        if (egress_check(h->o.egress, (const struct sockaddr *)addr, addrlen, why, sizeof why)) {
            h->stats.refused_egress++;
            snprintf(msg, sizeof msg, "refused to connect to %s (egress allow-list)", why);
            set_error(s, msg);
            return;
        }
    }
    SSL_CTX *tls = s->tls ? hub_tls(h) : NULL;
    s->p.bearer = NULL;
    s->p.bearer_len = 0;
    if (s->auth >= 0) {
        auth_rt_t *a = &h->auth[s->auth];
        auth_refresh(h, a, now);
        if (a->error[0]) {
            set_error(s, a->error);
            return;
        }
        if (s->auth_pod && auth_pod_refused(h, s, addr, addrlen))
            return;
        s->p.bearer = a->token_len ? a->token : NULL;
        s->p.bearer_len = a->token_len;
        if (s->tls && a->tls)
            tls = tls_client_ctx(a->tls);
    }
    /* room for a bearer token of SOURCE_AUTH_TOKEN_MAX bytes */
    char req[SOURCE_AUTH_TOKEN_MAX + 4096];
    size_t n = s->backend->request(&s->p, req, sizeof req);
    s->p.bearer = NULL; /* borrowed for request() only */
    if (n == 0) {
        set_error(s, "request too large");
        return;
    }
    fetch_request_t fr = {
        .addr = *addr,
        .addrlen = addrlen,
        .tls = tls,
        .tls_host = s->p.url.host,
        .alpn = s->backend->alpn,
        .request = req,
        .request_len = n,
        .max_bytes = h->o.max_body_bytes + 65536,
        .timeout_ns = s->timeout_ns,
        .data = poll_data,
        .done = poll_done,
        .user_data = s,
    };
    if (s->tls && !tls) {
        char m[400];
        explicit_bzero(req, n);
        snprintf(m, sizeof m, "TLS is not available (no CA bundle could be loaded: %s)",
                 h->tls_error);
        set_error(s, m);
        return;
    }
    s->reply_rc = 0;
    s->reply = s->backend->begin(&s->p, &h->scratch);
    if (!s->reply) {
        explicit_bzero(req, n);
        set_error(s, "out of memory");
        return;
    }
    if (read_hold(s, s->backend->held(s->reply), msg, sizeof msg) != 0) {
        explicit_bzero(req, n);
        reply_end(s);
        set_error(s, msg); /* this poll only: the next one tries again */
        return;
    }
    int frc = fetch_start(h->o.loop, &fr, &s->inflight, err, sizeof err);
    explicit_bzero(req, n); /* it may hold a token; the fetch has its own copy */
    if (frc != 0) {
        s->inflight = NULL;
        reply_end(s);
        set_failure(s, fetch_fail_kind(frc), err);
    }
}

static void on_timer(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)loop;
    (void)t;
    poll_source(ud);
}

/* The client TLS context for https and rediss sources, built when the first
 * one polls: a server without TLS sources never touches libcrypto's pages
 * (3.9 MiB of idle RSS). With --source-ca-file it was built at start, so a
 * bad file fails the start. */
static SSL_CTX *hub_tls(source_hub_t *h) {
    if (!h->tls && !h->tls_tried) {
        h->tls_tried = true;
        h->tls = tls_client_ctx_new(NULL, NULL, NULL, false, h->tls_error, sizeof h->tls_error);
        if (h->tls)
            SSL_CTX_set_alpn_protos(h->tls, NULL, 0); /* ALPN is set per connection */
    }
    return h->tls;
}

static void on_resolved(void *ud, const char *const *addrs, size_t n, const char *error) {
    source_t *s = ud;
    if (error)
        snprintf(s->resolve_error, sizeof s->resolve_error, "%s", error);
    else
        s->resolve_error[0] = '\0';
    if (n == 0)
        return;
    /* "ip:port" or "[ip6]:port"; every address must pass the guard, so a
     * name that also resolves to a metadata address is refused as a whole
     * (only that address is kept, and poll_source reports it). */
    struct sockaddr_storage got[SOURCE_MAX_ADDRS];
    socklen_t gotlen[SOURCE_MAX_ADDRS];
    unsigned ngot = 0;
    for (size_t i = 0; i < n && ngot < SOURCE_MAX_ADDRS; i++) {
        char host[64];
        const char *a = addrs[i];
        const char *colon = strrchr(a, ':');
        if (!colon)
            continue;
        size_t hl = (size_t)(colon - a);
        if (a[0] == '[' && hl >= 2) {
            a++;
            hl -= 2;
        }
        if (hl >= sizeof host)
            continue;
        memcpy(host, a, hl);
        host[hl] = '\0';
        struct sockaddr_storage ss;
        memset(&ss, 0, sizeof ss);
        socklen_t sl;
        struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
        struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
        if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
            v4->sin_family = AF_INET;
            v4->sin_port = htons(s->p.url.port);
            sl = sizeof *v4;
        } else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
            v6->sin6_family = AF_INET6;
            v6->sin6_port = htons(s->p.url.port);
            sl = sizeof *v6;
        } else {
            continue;
        }
        if (source_guard_addr((struct sockaddr *)&ss, sl)) {
            got[0] = ss;
            gotlen[0] = sl;
            ngot = 1;
            break;
        }
        got[ngot] = ss;
        gotlen[ngot++] = sl;
    }
    if (ngot == 0)
        return;
    memcpy(s->addrs, got, ngot * sizeof got[0]);
    memcpy(s->addrlens, gotlen, ngot * sizeof gotlen[0]);
    s->naddrs = ngot;
    s->next_addr = 0;
}

/* ---- registry -------------------------------------------------------------------- */

static void source_free(source_hub_t *h, source_t *s) {
    source_t **pp = &h->buckets[s->hash % HASH_BUCKETS];
    while (*pp && *pp != s)
        pp = &(*pp)->hnext;
    if (*pp)
        *pp = s->hnext;
    if (s->prev)
        s->prev->next = s->next;
    else
        h->all = s->next;
    if (s->next)
        s->next->prev = s->prev;
    h->count--;
    h->freed_since_trim += sizeof *s;
    loop_timer_stop(h->o.loop, &s->timer);
    fetch_cancel(s->inflight);
    reply_end(s); /* before the namespace's account may go */
    ns_uncharge(h, s->charged);
    s->charged = NULL;
    resolver_free(s->resolver);
    if (s->backend->release)
        s->backend->release(&s->p);
    explicit_bzero(s->p.pass, sizeof s->p.pass);
    free(s->auth_pod);
    if (s->key)
        explicit_bzero(s->key, strlen(s->key));
    free(s->key);
    if (s->hist)
        free(s->hist->subs);
    free(s->hist);
    free(s);
}

static void set_literal_addr(source_t *s) {
    memset(&s->addrs[0], 0, sizeof s->addrs[0]);
    if (s->p.url.family == AF_INET) {
        struct sockaddr_in *v4 = (struct sockaddr_in *)&s->addrs[0];
        v4->sin_family = AF_INET;
        v4->sin_port = htons(s->p.url.port);
        inet_pton(AF_INET, s->p.url.host, &v4->sin_addr);
        s->addrlens[0] = sizeof *v4;
    } else {
        struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&s->addrs[0];
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(s->p.url.port);
        inet_pton(AF_INET6, s->p.url.host, &v6->sin6_addr);
        s->addrlens[0] = sizeof *v6;
    }
    s->naddrs = 1;
}

/* Finds or creates the source with identity key for target t; its backend
 * fills a new one's kind-specific fields. NULL with err filled when it
 * cannot be made, and *rc (may be NULL) the KGS_E* code: KGS_ENOMEM is worth
 * another try, a bad URL is not. */
static source_t *source_get(source_hub_t *h, const char *key, const source_target_t *t,
                            const char *ns, int auth, mono_ns_t now, int *rc, char *err,
                            size_t errlen) {
    const trigger_config_t *c = t->c;
    int ignored;
    if (!rc)
        rc = &ignored;
    *rc = 0;
    uint64_t hash = kgs_fnv1a(key);
    for (source_t *s = h->buckets[hash % HASH_BUCKETS]; s; s = s->hnext)
        if (s->hash == hash && strcmp(s->key, key) == 0) {
            s->last_used = now;
            if (c->demand.interval_ns < s->interval_ns) {
                s->interval_ns = c->demand.interval_ns;
                schedule(s, now);
            }
            if (c->demand.timeout_ns > s->timeout_ns)
                s->timeout_ns = c->demand.timeout_ns;
            if (c->demand.window_s > s->window_max_s)
                s->window_max_s = c->demand.window_s;
            if (s->auth_pod && t->pod && strcmp(s->auth_pod, t->pod) != 0) {
                char *np = strdup(t->pod); /* the address went to another pod of ns */
                if (np) {
                    free(s->auth_pod);
                    s->auth_pod = np;
                }
            }
            return s;
        }
    if ((*rc = budget_admit(h, ns, now, err, errlen)) != 0)
        return NULL;
    source_t *s = calloc(1, sizeof *s);
    if (!s || !(s->key = strdup(key))) {
        free(s);
        *rc = kgs_seterr(err, errlen, KGS_ENOMEM, "out of memory");
        return NULL;
    }
    s->hub = h;
    s->hash = hash;
    s->created = s->last_used = now;
    s->interval_ns = c->demand.interval_ns;
    s->timeout_ns = c->demand.timeout_ns;
    s->window_max_s = c->demand.window_s ? c->demand.window_s : 30;
    loop_timer_init(&s->timer, on_timer, s);
    s->p.max_body_bytes = h->o.max_body_bytes;
    s->backend = source_backend_for(t->kind);
    s->auth = auth;
    if ((*rc = s->backend->configure(t, &s->p, &s->tls, s->name, sizeof s->name, err, errlen)) ==
            0 &&
        auth >= 0) {
        const source_auth_profile_t *ap = h->auth[auth].p;
        s->p.auth_name = ap->name;
        /* a CA or a client certificate is TLS's: over http it would not be
         * used, and the operator asked for it */
        if (!s->tls && (ap->ca_file[0] || ap->cert_file[0]))
            *rc = kgs_seterr(err, errlen, KGS_EINVAL,
                             "sourceAuth %s has %s, which needs https (an https:// URL, or "
                             "engineScheme: https for podSelector pods); %s is http",
                             ap->name, ap->cert_file[0] ? "a client certificate" : "a ca-file",
                             s->name);
    }
    if (*rc == 0 && auth >= 0 && t->pod && !(s->auth_pod = strdup(t->pod)))
        *rc = kgs_seterr(err, errlen, KGS_ENOMEM, "out of memory");
    if (*rc != 0) {
        if (s->backend->release)
            s->backend->release(&s->p);
        free(s->key);
        free(s);
        return NULL;
    }
    if (s->p.url.host_is_ip) {
        set_literal_addr(s);
    } else {
        const char *why_name = source_guard_name(s->p.url.host);
        char np[SOURCE_HOST_MAX + 16], rerr[256];
        if (why_name) {
            snprintf(s->resolve_error, sizeof s->resolve_error,
                     "refused to resolve %s: %s (SSRF guard)", s->p.url.host, why_name);
        } else {
            snprintf(np, sizeof np, "%s:%u", s->p.url.host, (unsigned)s->p.url.port);
            if (resolver_start_untrusted(h->o.loop, np, RESOLVE_INTERVAL_NS, on_resolved, s,
                                         &s->resolver, rerr, sizeof rerr) != 0)
                snprintf(s->resolve_error, sizeof s->resolve_error, "resolve %s: %s", s->p.url.host,
                         rerr);
        }
    }
    s->hnext = h->buckets[hash % HASH_BUCKETS];
    h->buckets[hash % HASH_BUCKETS] = s;
    s->next = h->all;
    if (h->all)
        h->all->prev = s;
    h->all = s;
    h->count++;
    budget_take(h);
    ns_charge(h, s, ns);
    LOG_DEBUG(h->o.log, "source %s: polling every %.3f s", s->name, (double)s->interval_ns / 1e9);
    loop_timer_start(h->o.loop, &s->timer, now);
    return s;
}

static void sub_free(sub_t *u);

/* glibc keeps what free() gave back in its arenas (the heap's top only is
 * returned by itself): after subscriptions and sources of a churn are
 * freed, RSS would stay at its peak. Past TRIM_AFTER_BYTES freed,
 * malloc_trim hands the free pages back (a walk of the heap: milliseconds,
 * at most once a sweep). */
#define TRIM_AFTER_BYTES (1024u * 1024)
static void hub_trim(source_hub_t *h) {
    if (h->freed_since_trim < TRIM_AFTER_BYTES)
        return;
    h->freed_since_trim = 0;
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

/* The sweep runs every SWEEP_NS, or a tenth of the idle time when that is
 * shorter (--source-idle set low), so nothing outlives it by much. */
static uint64_t hub_sweep_ns(const source_hub_t *h) {
    uint64_t t = h->o.idle_ns / 10;
    return t && t < SWEEP_NS ? t : SWEEP_NS;
}

static void on_sweep(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)t;
    source_hub_t *h = ud;
    mono_ns_t now = loop_now(loop);
    /* Crowded: idle sources go sooner, making room for new ones. */
    uint64_t idle = h->o.idle_ns;
    if (h->count > h->o.max_sources / 4 * 3 && idle > CROWDED_IDLE_NS)
        idle = CROWDED_IDLE_NS;
    for (source_t *s = h->all, *next; s; s = next) {
        next = s->next;
        if (now - s->last_used > idle) {
            LOG_DEBUG(h->o.log, "source %s: unused for %.0f s, stopped", s->name,
                      (double)(now - s->last_used) / 1e9);
            source_free(h, s);
        }
    }
    for (unsigned i = 0; i < SUB_BUCKETS; i++)
        for (sub_t **pp = &h->subs[i]; *pp;) {
            sub_t *u = *pp;
            if (now - u->last_used > h->o.idle_ns) {
                *pp = u->hnext;
                sub_free(u);
            } else {
                pp = &u->hnext;
            }
        }
    hub_trim(h);
    loop_timer_start(loop, &h->sweep, clock_add_sat(now, hub_sweep_ns(h)));
}

/* ---- identities ---------------------------------------------------------------- */

/* Room for "E|engine|model|<pod URL>|L|adapter|A|profile|namespace" whole:
 * a cut key could make two triggers share a source they should not. */
#define ENGINE_KEY_MAX (TRIGGER_URL_MAX + 1024)

/* An authenticated source is its namespace's own: a trigger in another
 * namespace never finds it (the profile may not be allowed there), so the
 * profile and the namespace are part of the identity. */
static int auth_key_part(const trigger_config_t *c, const char *ns, char *key, size_t keylen) {
    if (!c->demand.source_auth[0] || keylen == 0)
        return 0;
    return snprintf(key, keylen, "|A|%s|%s", c->demand.source_auth, ns);
}

/* The identity of the engine source that reads url for trigger c in ns. */
static void engine_key(const trigger_config_t *c, const char *ns, const char *url, char *key,
                       size_t keylen) {
    /* loraAdapter changes what is read: part of the identity (only when set,
     * so other triggers' keys are unchanged) */
    const char *lora = c->demand.lora_adapter;
    int o = snprintf(key, keylen, "E|%s|%s|%s%s%s", engine_name(c->demand.engine), c->demand.model,
                     url, lora[0] ? "|L|" : "", lora);
    if (o > 0 && (size_t)o < keylen)
        auth_key_part(c, ns, key + o, keylen - (size_t)o);
}

/* The identity of c's queue source in ns (may hold a password: wipe it
 * after use). */
static void queue_key(const trigger_config_t *c, const char *ns, char *key, size_t keylen) {
    const demand_config_t *d = &c->demand;
    if (d->queue == QUEUE_PROMETHEUS) {
        int o = snprintf(key, keylen, "P|%s|%s", d->demand_endpoint, d->demand_metric);
        for (unsigned i = 0; i < d->matcher_count && o > 0 && (size_t)o < keylen; i++)
            o += snprintf(key + o, keylen - (size_t)o, "|%s%s%s", d->matchers[i].name,
                          d->matchers[i].negate ? "!=" : "=", d->matchers[i].value);
        if (o > 0 && (size_t)o < keylen)
            auth_key_part(c, ns, key + o, keylen - (size_t)o);
    } else {
        snprintf(key, keylen, "R|%s|%d|%d|%s|%s|%d|%d|%s|%s", d->redis_address, d->redis_db,
                 d->redis_tls, d->redis_username, d->redis_password, d->queue, d->stream_measure,
                 d->redis_group, d->redis_key);
    }
}

/* The URL of a selected pod's engine endpoint. */
static void pod_url(const demand_config_t *d, const char *ip, char *url, size_t urllen) {
    bool v6 = strchr(ip, ':') != NULL;
    snprintf(url, urllen, "%s://%s%s%s:%u%s", d->engine_https ? "https" : "http", v6 ? "[" : "", ip,
             v6 ? "]" : "", (unsigned)d->engine_port, d->engine_path);
}

/* The source with identity key, or NULL; a read: marks it used, nothing else. */
static source_t *source_find(source_hub_t *h, const char *key, mono_ns_t now) {
    uint64_t hash = kgs_fnv1a(key);
    for (source_t *s = h->buckets[hash % HASH_BUCKETS]; s; s = s->hnext)
        if (s->hash == hash && strcmp(s->key, key) == 0) {
            s->last_used = now;
            return s;
        }
    return NULL;
}

/* ---- subscriptions --------------------------------------------------------------- */

static sub_t *sub_find(const source_hub_t *h, uint64_t id, const char *ns) {
    for (sub_t *u = h->subs[id % SUB_BUCKETS]; u; u = u->hnext)
        if (u->trigger_id == id && strcmp(u->ns, ns) == 0)
            return u;
    return NULL;
}

static void sub_free(sub_t *u) {
    source_hub_t *h = u->hub;
    loop_timer_stop(h->o.loop, &u->rescan);
    free(u->pods_cfg);
    for (int i = 0; i < SLO_SIGNAL_COUNT; i++)
        free(u->win[i]);
    demand_view_free(&u->view);
    h->sub_bytes -= u->bytes;
    h->nsubs--;
    h->freed_since_trim += u->bytes;
    if (u->acct) {
        u->acct->sub_bytes -= u->bytes;
        ns_release(h, u->acct);
    }
    free(u);
}

typedef struct {
    source_hub_t *h;
    sub_t *u;
    const trigger_config_t *c;
    mono_ns_t now;
} start_ctx_t;

static void start_engine(start_ctx_t *x, const char *url, const char *pod) {
    char key[ENGINE_KEY_MAX], err[300];
    engine_key(x->c, x->u->ns, url, key, sizeof key);
    source_target_t t = {SOURCE_KIND_ENGINE, x->c, url, pod};
    int rc;
    source_t *s = source_get(x->h, key, &t, x->u->ns, x->u->auth, x->now, &rc, err, sizeof err);
    if (!s) {
        snprintf(x->u->engine_error, sizeof x->u->engine_error, "%s", err);
        x->u->retry |= rc == KGS_ENOMEM || rc == KGS_ERANGE;
        x->u->engine_limited |= rc == KGS_ERANGE;
        return;
    }
    if (!hist_subscribe(s, x->u))
        x->u->retry = x->u->hist_incomplete = true;
}

/* Whether trigger c reads pod p's engine: a Ready pod always; one being
 * deleted only for demandModel: queueing, which counts the requests it
 * still finishes (a pod still loading its model has no /metrics yet). */
static bool pod_scraped(const trigger_config_t *c, const source_pod_t *p) {
    if (!p->ip[0])
        return false;
    if (p->draining)
        return c->demand.type == DEMAND_COMPOSITE && c->demand.sizing == DEMAND_MODEL_QUEUEING;
    return p->ready;
}

static void start_pod(void *ud, const source_pod_t *p) {
    start_ctx_t *x = ud;
    if (!pod_scraped(x->c, p))
        return;
    char url[TRIGGER_URL_MAX + 128];
    pod_url(&x->c->demand, p->ip, url, sizeof url);
    start_engine(x, url, p->pod);
}

/* Starts the engine sources of the pods c selects now (a pod list that is
 * not synced yet starts none: the next rescan tries again, and a read
 * reports the list's error). */
static void start_pods(source_hub_t *h, sub_t *u, const trigger_config_t *c, mono_ns_t now) {
    char err[300];
    start_ctx_t x = {h, u, c, now};
    if (h->o.list_pods)
        (void)h->o.list_pods(h->o.user_data, c, u->ns, start_pod, &x, err, sizeof err);
}

static void on_rescan(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)t;
    sub_t *u = ud;
    mono_ns_t now = loop_now(loop);
    u->engine_error[0] = '\0'; /* this listing's failures only */
    u->engine_limited = false;
    if (!u->auth_denied)
        start_pods(u->hub, u, u->pods_cfg, now);
    loop_timer_start(loop, &u->rescan, clock_add_sat(now, u->pods_cfg->demand.interval_ns));
}

/* Creates and starts what u (trigger c) reads: the engine URLs, or the
 * selected pods and their rescan timer, and the queue. */
static void sub_start(source_hub_t *h, sub_t *u, const trigger_config_t *c, mono_ns_t now) {
    const demand_config_t *d = &c->demand;
    start_ctx_t x = {h, u, c, now};
    u->retry = u->hist_incomplete = false;
    u->engine_limited = u->queue_limited = false;
    u->engine_error[0] = u->queue_error[0] = '\0';
    char why[300];
    if (auth_admit(h, c, u->ns, &u->auth, why, sizeof why) != 0) {
        /* refused for good: the profile and its namespaces are the server's.
         * Not logged here: every read answers with it, and the RPC's error
         * log is rate-limited. */
        u->auth_denied = true;
        snprintf(u->engine_error, sizeof u->engine_error, "%s", why);
        snprintf(u->queue_error, sizeof u->queue_error, "%s", why);
        return;
    }
    u->auth_denied = false;
    if (d->engine != ENGINE_NONE) {
        if (d->endpoint_count) {
            for (unsigned i = 0; i < d->endpoint_count; i++)
                start_engine(&x, d->endpoints[i], NULL);
        } else if (h->o.list_pods && u->pods_cfg) {
            start_pods(h, u, c, now); /* a retry: the rescan timer runs */
        } else if (h->o.list_pods) {
            /* The selected pods change: re-list them on the trigger's cadence. */
            u->pods_cfg = malloc(sizeof *u->pods_cfg);
            if (!u->pods_cfg) {
                snprintf(u->engine_error, sizeof u->engine_error, "out of memory");
                u->retry = true;
            } else {
                *u->pods_cfg = *c;
                explicit_bzero(u->pods_cfg->demand.redis_password,
                               sizeof u->pods_cfg->demand.redis_password);
                start_pods(h, u, c, now);
                loop_timer_start(h->o.loop, &u->rescan, clock_add_sat(now, d->interval_ns));
            }
        }
    }
    if (d->queue != QUEUE_NONE) {
        char key[4096], err[300];
        int rc;
        queue_key(c, u->ns, key, sizeof key);
        source_target_t t = {d->queue == QUEUE_PROMETHEUS ? SOURCE_KIND_PROM : SOURCE_KIND_REDIS, c,
                             NULL, NULL};
        if (!source_get(h, key, &t, u->ns, u->auth, now, &rc, err, sizeof err)) {
            snprintf(u->queue_error, sizeof u->queue_error, "%s", err);
            u->retry |= rc == KGS_ENOMEM || rc == KGS_ERANGE;
            u->queue_limited = rc == KGS_ERANGE;
        }
        explicit_bzero(key, sizeof key);
    }
}

void source_hub_subscribe(source_hub_t *h, const trigger_config_t *c, uint64_t trigger_id,
                          const char *ns, mono_ns_t now) {
    if (c->demand.type == DEMAND_NONE)
        return;
    sub_t *u = sub_find(h, trigger_id, ns);
    if (u) {
        /* Set up already; only what failed for lack of memory is tried again
         * (a URL that did not parse would not parse now either). */
        if (u->retry)
            sub_start(h, u, c, now);
        return;
    }
    bool pods = c->demand.engine != ENGINE_NONE && !c->demand.endpoint_count && h->o.list_pods;
    size_t cost = sub_cost(c, pods);
    if (sub_budget_admit(h, ns, cost, NULL, 0) != 0) {
        h->stats.refused_subscriptions++;
        return; /* a read says why (source_hub_signals) */
    }
    ns_count_t *acct = ns_get(h, ns);
    u = acct ? calloc(1, sizeof *u) : NULL;
    if (!u) {
        ns_release(h, acct);
        return; /* a read reports the sources as not started; the next subscribe retries */
    }
    u->bytes = cost;
    u->acct = acct;
    acct->sub_bytes += cost;
    h->sub_bytes += cost;
    h->nsubs++;
    u->hub = h;
    u->trigger_id = trigger_id;
    snprintf(u->ns, sizeof u->ns, "%s", ns);
    u->last_used = now;
    snprintf(u->metric_name, sizeof u->metric_name, "%s", c->metric_name);
    forecast_init(&u->f, FORECAST_DEFAULT_ALPHA, FORECAST_DEFAULT_BETA);
    demand_model_init(&u->model);
    demand_view_init(&u->view);
    /* latency targets: a window per signal */
    u->window_ns = (uint64_t)(c->demand.window_s ? c->demand.window_s : 30) * 1000000000ull;
    u->slo_mask = c->demand.slo_mask & ((1u << SLO_SIGNAL_COUNT) - 1);
    loop_timer_init(&u->rescan, on_rescan, u);
    sub_start(h, u, c, now);
    sub_t **head = &h->subs[trigger_id % SUB_BUCKETS];
    u->hnext = *head;
    *head = u;
}

/* ---- reading ------------------------------------------------------------------- */

/* What source s's latest poll left, as the evaluation reads it (pointers
 * into s: valid until the hub next runs a callback). */
static void source_view(const source_t *s, demand_source_t *v) {
    v->name = s->name;
    v->answered = s->have_reading;
    v->last_busy = s->have_reading && (s->reading.waiting > 0 || s->reading.running > 0 ||
                                       s->reading.pool_waiting > 0 || s->reading.pool_running > 0);
    if (s->error[0]) {
        v->state = DEMAND_SOURCE_FAILED;
        v->error = s->error;
        v->fail = s->fail_kind;
    } else if (!s->have_reading) {
        if (s->resolve_error[0]) {
            v->state = DEMAND_SOURCE_FAILED;
            v->error = s->resolve_error;
        } else {
            v->state = DEMAND_SOURCE_WAITING;
            v->created = s->created;
        }
    } else {
        v->state = DEMAND_SOURCE_READING;
        v->last_ok = s->last_ok;
        v->interval_ns = s->interval_ns;
        v->timeout_ns = s->timeout_ns;
        v->reading = s->reading;
        v->taking_turns = s->last_ok < s->turns_until;
        v->queue = s->queue_value;
    }
}

/* A shared source polls at the fastest interval and waits as long as the
 * longest sourceTimeout of the triggers that read it; whether its reading
 * is stale is judged with the reading trigger's own interval and timeout,
 * so a trigger in another namespace that asked for 30 s does not keep a
 * frozen engine's value alive past this trigger's own bound. */
static void own_staleness(demand_source_t *v, const source_t *s, const trigger_config_t *c) {
    if (v->state != DEMAND_SOURCE_READING)
        return;
    uint64_t iv = c->demand.interval_ns, to = c->demand.timeout_ns;
    v->interval_ns = iv > s->interval_ns ? iv : s->interval_ns; /* never tighter than polled */
    v->timeout_ns = to ? to : s->timeout_ns;
}

typedef struct {
    source_hub_t *h;
    const sub_t *u;
    const trigger_config_t *c;
    const char *ns;
    mono_ns_t now;
} read_ctx_t;

static void read_engine(read_ctx_t *x, const char *url, const char *pod) {
    (void)pod;
    views_t *w = &x->h->views;
    if (w->oom)
        return;
    if (w->n == w->cap) {
        unsigned cap = w->cap ? w->cap * 2 : 16;
        demand_source_t *nv = realloc(w->v, cap * sizeof *nv);
        if (nv)
            w->v = nv;
        uint32_t *na = nv ? realloc(w->name_at, cap * sizeof *na) : NULL;
        if (!na) {
            w->oom = true;
            return;
        }
        w->name_at = na;
        w->cap = cap;
    }
    w->name_at[w->n] = 0;
    demand_source_t *v = &w->v[w->n];
    memset(v, 0, sizeof *v);
    char key[ENGINE_KEY_MAX];
    engine_key(x->c, x->ns, url, key, sizeof key);
    const source_t *s = source_find(x->h, key, x->now);
    if (!s) {
        /* Only a source that does not exist needs its URL kept (as its
         * name, with its secrets masked; the pointer is set once the arena
         * stops moving). */
        size_t ulen = strlen(url), len = source_url_redact(url, ulen, NULL, 0) + 1;
        if (w->names_len + len > w->names_cap) {
            size_t cap = w->names_cap ? w->names_cap * 2 : 4096;
            while (cap < w->names_len + len)
                cap *= 2;
            char *nn = cap <= UINT32_MAX ? realloc(w->names, cap) : NULL;
            if (!nn) {
                w->oom = true;
                return;
            }
            w->names = nn;
            w->names_cap = cap;
        }
        source_url_redact(url, ulen, w->names + w->names_len, len);
        w->name_at[w->n] = (uint32_t)w->names_len + 1;
        w->names_len += len;
        w->n++;
        v->state =
            x->u && x->u->engine_error[0] ? DEMAND_SOURCE_NOT_CREATED : DEMAND_SOURCE_NOT_STARTED;
        v->error = x->u ? x->u->engine_error : NULL;
        if (x->u && x->u->engine_limited && !w->limited)
            w->limited = x->u->engine_error;
        return;
    }
    w->n++;
    source_view(s, v);
    own_staleness(v, s, x->c);
    const demand_config_t *d = &x->c->demand;
    if (v->state == DEMAND_SOURCE_READING &&
        (d->type == DEMAND_TRITON_QUEUE_WAIT_MS || d->type == DEMAND_TRITON_REQUEST_RATE))
        v->rates_known =
            counter_window_delta(&s->counters, x->now, (uint64_t)d->window_s * 1000000000ull,
                                 &v->queue_us_delta, &v->success_delta, &v->span_s);
    if (v->state == DEMAND_SOURCE_READING && demand_uses_token_rates(d) && s->reading.has_tokens)
        v->tokens_known =
            counter_window_delta(&s->counters, x->now, (uint64_t)d->window_s * 1000000000ull,
                                 &v->prompt_delta, &v->generation_delta, &v->tokens_span_s);
}

static void read_pod(void *ud, const source_pod_t *p) {
    read_ctx_t *x = ud;
    views_t *w = &x->h->views;
    if (w->oom)
        return;
    if (w->npods == w->pods_cap) {
        unsigned cap = w->pods_cap ? w->pods_cap * 2 : 16;
        demand_pod_t *np = realloc(w->pods, cap * sizeof *np);
        if (!np) {
            w->oom = true;
            return;
        }
        w->pods = np;
        w->pods_cap = cap;
    }
    if (!p->draining) /* a draining pod is neither capacity nor on its way */
        w->pods[w->npods++] =
            (demand_pod_t){.id = p->id, .ready = p->ready, .age_s = p->age_s, .start = p->start};
    if (!pod_scraped(x->c, p))
        return;
    char url[TRIGGER_URL_MAX + 128];
    pod_url(&x->c->demand, p->ip, url, sizeof url);
    unsigned before = w->n;
    read_engine(x, url, p->pod);
    if (w->n > before)
        w->v[before].draining = p->draining;
}

void source_hub_signals(source_hub_t *h, const trigger_config_t *c, uint64_t trigger_id,
                        const char *ns, mono_ns_t now, demand_inputs_t *out) {
    const demand_config_t *d = &c->demand;
    memset(out, 0, sizeof *out);
    out->pods_status = EVAL_OK;
    sub_t *u = sub_find(h, trigger_id, ns);
    if (u) {
        u->last_used = now;
        out->forecast = &u->f;
        out->model = &u->model;
        out->view = &u->view;
        if (u->slo_mask)
            hist_read(u, now, out->latency);
    } else {
        /* not subscribed: refused by --subscription-bytes (or out of
         * memory, which the next subscribe retries) */
        bool pods = d->engine != ENGINE_NONE && !d->endpoint_count && h->o.list_pods;
        sub_budget_admit(h, ns, sub_cost(c, pods), out->limit_error, sizeof out->limit_error);
    }
    read_ctx_t x = {h, u, c, ns, now};
    views_t *w = &h->views;
    w->n = w->npods = 0;
    w->names_len = 0;
    w->oom = false;
    w->limited = NULL;
    if (d->engine != ENGINE_NONE) {
        if (d->endpoint_count) {
            for (unsigned i = 0; i < d->endpoint_count; i++)
                read_engine(&x, d->endpoints[i], NULL);
        } else if (!h->o.list_pods) {
            /* This hub cannot list pods: the role table says what that means. */
            role_check_trigger(role_caps(KGS_ROLE_STANDALONE), c, false, out->pods_error,
                               sizeof out->pods_error);
            out->pods_status = EVAL_FAILED_PRECONDITION;
        } else if (h->o.list_pods(h->o.user_data, c, ns, read_pod, &x, out->pods_error,
                                  sizeof out->pods_error) != 0) {
            out->pods_status = EVAL_UNAVAILABLE;
        } else {
            out->has_pods = true;
            out->pods = w->pods;
            out->npods = w->npods;
        }
        if (w->oom && out->pods_status == EVAL_OK) {
            out->pods_status = EVAL_UNAVAILABLE;
            snprintf(out->pods_error, sizeof out->pods_error, "out of memory");
        }
    }
    for (unsigned i = 0; i < w->n; i++)
        if (w->name_at[i])
            w->v[i].name = w->names + w->name_at[i] - 1;
    out->engines = w->v;
    out->nengines = w->n;
    if (d->queue != QUEUE_NONE) {
        char key[4096];
        queue_key(c, ns, key, sizeof key);
        const source_t *q = source_find(h, key, now);
        explicit_bzero(key, sizeof key);
        out->has_queue_source = true;
        if (q) {
            source_view(q, &out->queue);
            own_staleness(&out->queue, q, c);
        } else {
            out->queue.name = "queue";
            out->queue.state =
                u && u->queue_error[0] ? DEMAND_SOURCE_NOT_CREATED : DEMAND_SOURCE_NOT_STARTED;
            out->queue.error = u ? u->queue_error : NULL;
            if (u && u->queue_limited && !w->limited)
                w->limited = u->queue_error;
        }
    }
    if (w->limited)
        snprintf(out->limit_error, sizeof out->limit_error, "%s", w->limited);
}

/* ---- lifecycle ------------------------------------------------------------------- */

int source_hub_new(const source_hub_opts_t *opts, source_hub_t **out, char *err, size_t errlen) {
    *out = NULL;
    int rc;
    source_hub_t *h = calloc(1, sizeof *h);
    if (!h)
        return kgs_seterr(err, errlen, KGS_ENOMEM, "out of memory");
    h->o = *opts;
    if (!h->o.max_body_bytes)
        h->o.max_body_bytes = DEFAULT_MAX_BODY;
    if (!h->o.idle_ns)
        h->o.idle_ns = DEFAULT_IDLE_NS;
    if (!h->o.notify_min_ns)
        h->o.notify_min_ns = DEFAULT_NOTIFY_NS;
    if (!h->o.max_sources)
        h->o.max_sources = DEFAULT_MAX_SOURCES;
    if (!h->o.max_sources_per_ns)
        h->o.max_sources_per_ns = DEFAULT_MAX_PER_NS;
    if (!(h->o.create_rate > 0))
        h->o.create_rate = DEFAULT_CREATE_RATE;
    if (!h->o.create_burst)
        h->o.create_burst = DEFAULT_CREATE_BURST;
    if (!h->o.max_read_bytes)
        h->o.max_read_bytes = DEFAULT_MAX_READ_BYTES;
    if (!(h->o.read_rate > 0))
        h->o.read_rate = DEFAULT_READ_RATE;
    if (!h->o.max_sub_bytes)
        h->o.max_sub_bytes = DEFAULT_MAX_SUB_BYTES;
    h->tokens = h->o.create_burst;
    h->tokens_at = loop_now(h->o.loop);
    /* the histograms of one scrape (latency targets): without it none are read */
    h->scratch.hists = malloc(sizeof *h->scratch.hists);
    h->scratch.resp = malloc(sizeof *h->scratch.resp);
    if (!h->scratch.resp || !h->scratch.hists) {
        free(h->scratch.resp);
        free(h->scratch.hists);
        free(h);
        return kgs_seterr(err, errlen, KGS_ENOMEM, "out of memory");
    }
    if (opts->ca_file && opts->ca_file[0]) {
        char why[300];
        h->tls = tls_client_ctx_new(opts->ca_file, NULL, NULL, false, why, sizeof why);
        if (!h->tls) {
            free(h->scratch.resp);
            free(h->scratch.hists);
            free(h);
            return kgs_seterr(err, errlen, KGS_EIO, "source CA file %s: %s", opts->ca_file, why);
        }
        SSL_CTX_set_alpn_protos(h->tls, NULL, 0); /* ALPN is set per connection */
        h->tls_tried = true;
    }
    if ((rc = auth_init(h, err, errlen)) != 0) {
        auth_free(h);
        SSL_CTX_free(h->tls);
        free(h->scratch.resp);
        free(h->scratch.hists);
        free(h);
        return rc;
    }
    loop_timer_init(&h->sweep, on_sweep, h);
    loop_timer_init(&h->notify, on_notify, h);
    loop_timer_start(h->o.loop, &h->sweep, clock_add_sat(loop_now(h->o.loop), hub_sweep_ns(h)));
    *out = h;
    return 0;
}

void source_hub_free(source_hub_t *h) {
    if (!h)
        return;
    while (h->all)
        source_free(h, h->all);
    for (unsigned i = 0; i < SUB_BUCKETS; i++)
        while (h->subs[i]) {
            sub_t *u = h->subs[i];
            h->subs[i] = u->hnext;
            sub_free(u);
        }
    free(h->views.v);
    free(h->views.names);
    free(h->views.name_at);
    free(h->views.pods);
    loop_timer_stop(h->o.loop, &h->sweep);
    loop_timer_stop(h->o.loop, &h->notify);
    SSL_CTX_free(h->tls);
    auth_free(h);
    free(h->scratch.resp);
    free(h->scratch.hists);
    free(h);
}

void source_hub_forget(source_hub_t *h, uint64_t trigger_id) {
    for (sub_t **pp = &h->subs[trigger_id % SUB_BUCKETS]; *pp;) {
        sub_t *u = *pp;
        if (u->trigger_id == trigger_id) {
            *pp = u->hnext;
            sub_free(u);
        } else {
            pp = &u->hnext;
        }
    }
}

const demand_model_state_t *source_hub_model(const source_hub_t *h, uint64_t trigger_id,
                                             const char *ns) {
    const sub_t *u = sub_find(h, trigger_id, ns);
    return u && u->model.have_decision ? &u->model : NULL;
}

const demand_view_t *source_hub_view(const source_hub_t *h, uint64_t trigger_id, const char *ns) {
    const sub_t *u = sub_find(h, trigger_id, ns);
    return u && u->view.evaluated ? &u->view : NULL;
}

void source_hub_note_asker(source_hub_t *h, uint64_t trigger_id, const char *ns, const char *name) {
    sub_t *u = sub_find(h, trigger_id, ns);
    if (u && name && strncmp(u->asker, name, sizeof u->asker) != 0)
        snprintf(u->asker, sizeof u->asker, "%s", name);
}

static int newest_first(const void *a, const void *b) {
    mono_ns_t x = ((const demand_view_ref_t *)a)->view->at;
    mono_ns_t y = ((const demand_view_ref_t *)b)->view->at;
    return x > y ? -1 : x < y ? 1 : 0;
}

size_t source_hub_views(const source_hub_t *h, demand_view_ref_t *out, size_t max, size_t *total) {
    size_t n = 0, all = 0;
    for (size_t b = 0; b < SUB_BUCKETS; b++)
        for (const sub_t *u = h->subs[b]; u; u = u->hnext) {
            if (!u->view.evaluated)
                continue;
            demand_view_ref_t e = {u->ns, u->asker, u->metric_name, &u->view};
            all++;
            if (n < max) {
                out[n++] = e;
                continue;
            }
            /* full: keep the newest max (replace the oldest kept) */
            size_t oldest = 0;
            for (size_t i = 1; i < n; i++)
                if (out[i].view->at < out[oldest].view->at)
                    oldest = i;
            if (n && out[oldest].view->at < u->view.at)
                out[oldest] = e;
        }
    qsort(out, n, sizeof *out, newest_first);
    if (total)
        *total = all;
    return n;
}

void source_hub_stats(const source_hub_t *h, source_hub_stats_t *out) {
    *out = h->stats;
    out->sources = h->count;
    out->read_held = h->read_held;
    out->sub_bytes = h->sub_bytes;
    out->subscriptions = h->nsubs;
}
