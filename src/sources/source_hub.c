/*
 * source_hub.c - the hub's lifecycle, the registry of sources, the budgets
 * and the identities (see source_hub.h; the files of the hub are listed in
 * source_hub_internal.h).
 *
 * A source is identified by everything that decides what it reads: kind,
 * URL or Redis address, engine and model filter, queue key and credentials
 * (a sourceAuth profile with the namespace that may use it).
 * The identity string is the hash key; it may hold a Redis password, so it
 * is never logged: messages use the source's display name.
 *
 * Sources are created here, only for the subscribing door
 * (source_subscribe.c: hub_source_get()), each within the budgets, and
 * freed by the sweep when no read has used them for the idle time. Their
 * polls are source_poll.c's; the reading door (source_read.c) only finds
 * them.
 */
#include "sources/source_hub.h"

#include <arpa/inet.h>
#include <malloc.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/fair_share.h"
#include "core/hash.h"
#include "core/source_url.h"
#include "net/tls.h"
#include "sources/source_hub_internal.h"
#define SWEEP_NS 10000000000ull
#define DEFAULT_MAX_BODY (8u * 1024 * 1024)
#define DEFAULT_IDLE_NS 600000000000ull
#define DEFAULT_NOTIFY_NS 50000000ull
#define RESOLVE_INTERVAL_NS 30000000000ull
#define DEFAULT_MAX_SOURCES 256
#define DEFAULT_MAX_PER_NS 64
#define DEFAULT_CREATE_RATE 20.0
#define DEFAULT_CREATE_BURST 50
#define DEFAULT_MAX_READ_BYTES (32u * 1024 * 1024)
#define DEFAULT_READ_RATE (64.0 * 1024 * 1024)
#define DEFAULT_MAX_SUB_BYTES (16u * 1024 * 1024)
#define CROWDED_IDLE_NS 60000000000ull /* idle expiry over 3/4 of max_sources */

/* ---- budgets ------------------------------------------------------------------- */

static ns_count_t **ns_slot(source_hub_t *h, const char *ns) {
    ns_count_t **pp = &h->ns_counts[kgs_fnv1a(ns) % NS_BUCKETS];
    while (*pp && strcmp((*pp)->ns, ns) != 0)
        pp = &(*pp)->next;
    return pp;
}

/* The namespace's accounts, made when first needed (NULL: out of memory). */
ns_count_t *hub_ns_get(source_hub_t *h, const char *ns) {
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
void hub_ns_release(source_hub_t *h, ns_count_t *c) {
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
    hub_ns_release(h, c);
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
    ns_count_t *c = hub_ns_get(h, ns);
    if (!c)
        return;
    c->n++;
    s->charged = c;
}

/* What a subscription for trigger c costs at most: itself, the copy of a
 * podSelector trigger it keeps, and a latency window per signal (made when
 * the first histogram arrives, counted from the start). */
size_t hub_sub_cost(const trigger_config_t *c, bool pods) {
    size_t n = sizeof(sub_t) + (pods ? sizeof(trigger_config_t) : 0);
    for (int i = 0; i < SLO_SIGNAL_COUNT; i++)
        if (c->demand.slo_mask & (1u << i))
            n += sizeof(hist_window_t);
    return n;
}

/* Whether a subscription of `cost` bytes for namespace ns fits
 * --subscription-bytes, shared fairly between namespaces (core/fair_share.h).
 * 0, or KGS_ERANGE with the figures and the flag in err. */
int hub_sub_budget_admit(const source_hub_t *h, const char *ns, size_t cost, char *err,
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
/* ---- on_update ----------------------------------------------------------------- */

void hub_notify(source_hub_t *h) {
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
    hub_reply_end(s); /* before the namespace's account may go */
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
source_t *hub_source_get(source_hub_t *h, const char *key, const source_target_t *t, const char *ns,
                         int auth, mono_ns_t now, int *rc, char *err, size_t errlen) {
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
                hub_schedule(s, now);
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
    loop_timer_init(&s->timer, hub_on_timer, s);
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
            if (resolver_start_untrusted(h->o.loop, np, RESOLVE_INTERVAL_NS, hub_on_resolved, s,
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
                hub_sub_free(u);
            } else {
                pp = &u->hnext;
            }
        }
    hub_trim(h);
    loop_timer_start(loop, &h->sweep, clock_add_sat(now, hub_sweep_ns(h)));
}
/* ---- identities ---------------------------------------------------------------- */

/* An authenticated source is its namespace's own: a trigger in another
 * namespace never finds it (the profile may not be allowed there), so the
 * profile and the namespace are part of the identity. */
static int auth_key_part(const trigger_config_t *c, const char *ns, char *key, size_t keylen) {
    if (!c->demand.source_auth[0] || keylen == 0)
        return 0;
    return snprintf(key, keylen, "|A|%s|%s", c->demand.source_auth, ns);
}

/* The identity of the engine source that reads url for trigger c in ns. */
void hub_engine_key(const trigger_config_t *c, const char *ns, const char *url, char *key,
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
void hub_queue_key(const trigger_config_t *c, const char *ns, char *key, size_t keylen) {
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
void hub_pod_url(const demand_config_t *d, const char *ip, char *url, size_t urllen) {
    bool v6 = strchr(ip, ':') != NULL;
    snprintf(url, urllen, "%s://%s%s%s:%u%s", d->engine_https ? "https" : "http", v6 ? "[" : "", ip,
             v6 ? "]" : "", (unsigned)d->engine_port, d->engine_path);
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
    if ((rc = hub_auth_init(h, err, errlen)) != 0) {
        hub_auth_free(h);
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
            hub_sub_free(u);
        }
    free(h->views.v);
    free(h->views.names);
    free(h->views.name_at);
    free(h->views.pods);
    loop_timer_stop(h->o.loop, &h->sweep);
    loop_timer_stop(h->o.loop, &h->notify);
    SSL_CTX_free(h->tls);
    hub_auth_free(h);
    free(h->scratch.resp);
    free(h->scratch.hists);
    free(h);
}
void source_hub_stats(const source_hub_t *h, source_hub_stats_t *out) {
    *out = h->stats;
    out->sources = h->count;
    out->read_held = h->read_held;
    out->sub_bytes = h->sub_bytes;
    out->subscriptions = h->nsubs;
}
