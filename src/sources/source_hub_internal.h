/*
 * source_hub_internal.h - what the files of the source hub share: the
 * source, the subscription, the namespace accounts and the hub itself, and
 * the few functions one file calls in another. Included only by the hub's
 * files (src/sources/source_hub*.c, source_poll.c, source_subscribe.c,
 * source_read.c); the API is source_hub.h.
 *
 * The hub has two doors, each its own file, and the rooms behind them:
 *   source_subscribe.c  the subscribing door: source_hub_subscribe() creates
 *                       and starts a trigger's sources (once per trigger
 *                       configuration and namespace), the podSelector
 *                       rescan, source_hub_forget();
 *   source_read.c       the reading door: source_hub_signals() and the
 *                       views; a read starts nothing: it finds sources by
 *                       identity, marks them used and copies out their
 *                       state;
 *   source_poll.c       a source's polls: its timer, address resolution,
 *                       one fetch and the reply as its backend reads it,
 *                       the latency increases fed to the subscriptions;
 *   source_hub.c        the hub's lifecycle, the registry of sources (find
 *                       or create, the idle sweep), the budgets and the
 *                       identities (the hash keys);
 *   source_hub_auth.c   the --source-auth credentials at run time: token
 *                       files (net/token_file.h) and TLS contexts.
 * Calls go one way: the doors call into the registry, polling and
 * credentials; nothing calls into source_read.c.
 *
 * Loop thread only, as the hub.
 */
#ifndef KGS_SOURCES_SOURCE_HUB_INTERNAL_H
#define KGS_SOURCES_SOURCE_HUB_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "core/demand_eval.h"
#include "core/source_auth.h"
#include "net/resolver.h"
#include "net/tls.h"
#include "net/token_file.h"
#include "sources/counter_window.h"
#include "sources/fetch.h"
#include "sources/hist_window.h"
#include "sources/source_backend.h"
#include "sources/source_hub.h"

#define HASH_BUCKETS 4096
#define SOURCE_MAX_ADDRS 8
#define SOURCE_STARTS 4 /* processes remembered per engine URL */
#define NS_BUCKETS 256

/* Room for "E|engine|model|<pod URL>|L|adapter|A|profile|namespace" whole:
 * a cut key could make two triggers share a source they should not. */
#define ENGINE_KEY_MAX (TRIGGER_URL_MAX + 1024)

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

/* ---- source_hub.c: registry, budgets, identities ---------------------------------- */

/* Finds or creates the source with identity key for target t (charged to
 * ns, read with profile auth, -1 none). NULL with err filled when it cannot
 * be made, and *rc (may be NULL) the KGS_E* code: KGS_ENOMEM or KGS_ERANGE
 * (a budget) is worth another try, a bad URL is not. */
source_t *hub_source_get(source_hub_t *h, const char *key, const source_target_t *t, const char *ns,
                         int auth, mono_ns_t now, int *rc, char *err, size_t errlen);
/* Namespace ns's accounts, made when first needed (NULL: out of memory),
 * and freed by hub_ns_release() once nothing is charged to them. */
ns_count_t *hub_ns_get(source_hub_t *h, const char *ns);
void hub_ns_release(source_hub_t *h, ns_count_t *c);
/* What a subscription for trigger c costs (pods: it keeps a copy of c),
 * and whether it fits ns's share of --subscription-bytes (0, or KGS_ERANGE
 * with the figures in err). */
size_t hub_sub_cost(const trigger_config_t *c, bool pods);
int hub_sub_budget_admit(const source_hub_t *h, const char *ns, size_t cost, char *err,
                         size_t errlen);
/* Readings changed: on_update, coalesced. */
void hub_notify(source_hub_t *h);
/* Identities: the engine source reading url for c in ns, c's queue source
 * in ns (may hold a password: wipe it after use), a selected pod's URL. */
void hub_engine_key(const trigger_config_t *c, const char *ns, const char *url, char *key,
                    size_t keylen);
void hub_queue_key(const trigger_config_t *c, const char *ns, char *key, size_t keylen);
void hub_pod_url(const demand_config_t *d, const char *ip, char *url, size_t urllen);

/* ---- source_poll.c: polling -------------------------------------------------------- */

/* The source's timer (its next poll one interval after the last one
 * started) and its resolver's callback. */
void hub_schedule(source_t *s, mono_ns_t now);
void hub_on_timer(loop_t *loop, loop_timer_t *t, void *ud);
void hub_on_resolved(void *ud, const char *const *addrs, size_t n, const char *error);
/* Frees the reply of s's poll in flight and gives back what it held. */
void hub_reply_end(source_t *s);

/* ---- source_subscribe.c: subscriptions --------------------------------------------- */

sub_t *hub_sub_find(const source_hub_t *h, uint64_t id, const char *ns);
void hub_sub_free(sub_t *u);
/* Whether trigger c reads pod p's engine. */
bool hub_pod_scraped(const trigger_config_t *c, const source_pod_t *p);

/* ---- source_hub_auth.c: credentials ------------------------------------------------ */

int hub_auth_init(source_hub_t *h, char *err, size_t errlen);
void hub_auth_free(source_hub_t *h);
void hub_auth_refresh(source_hub_t *h, auth_rt_t *a, mono_ns_t now);
int hub_auth_admit(const source_hub_t *h, const trigger_config_t *c, const char *ns, int *index,
                   char *err, size_t errlen);

#endif
