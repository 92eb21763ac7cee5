/*
 * source_subscribe.c - the subscribing door: source_hub_subscribe() creates
 * and starts what a trigger reads (files of the hub:
 * source_hub_internal.h).
 *
 * A subscription is one trigger configuration in one namespace, made once
 * (within --subscription-bytes) and looked up on every later subscribe. It
 * starts the trigger's sources (engine URLs; for podSelector, the selected
 * pods, re-listed on the trigger's own timer so new pods get sources; the
 * queue) and holds what outlives a single read: the forecast and
 * queueing-model state, the decision view, the latency windows and why a
 * source could not be made. This is the only door through which sources
 * are created: a read (source_read.c) never starts one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "sources/source_hub_internal.h"

/* ---- subscriptions --------------------------------------------------------------- */

sub_t *hub_sub_find(const source_hub_t *h, uint64_t id, const char *ns) {
    for (sub_t *u = h->subs[id % SUB_BUCKETS]; u; u = u->hnext)
        if (u->trigger_id == id && strcmp(u->ns, ns) == 0)
            return u;
    return NULL;
}

void hub_sub_free(sub_t *u) {
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
        hub_ns_release(h, u->acct);
    }
    free(u);
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

typedef struct {
    source_hub_t *h;
    sub_t *u;
    const trigger_config_t *c;
    mono_ns_t now;
} start_ctx_t;

static void start_engine(start_ctx_t *x, const char *url, const char *pod) {
    char key[ENGINE_KEY_MAX], err[300];
    hub_engine_key(x->c, x->u->ns, url, key, sizeof key);
    source_target_t t = {SOURCE_KIND_ENGINE, x->c, url, pod};
    int rc;
    source_t *s = hub_source_get(x->h, key, &t, x->u->ns, x->u->auth, x->now, &rc, err, sizeof err);
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
bool hub_pod_scraped(const trigger_config_t *c, const source_pod_t *p) {
    if (!p->ip[0])
        return false;
    if (p->draining)
        return c->demand.type == DEMAND_COMPOSITE && c->demand.sizing == DEMAND_MODEL_QUEUEING;
    return p->ready;
}

static void start_pod(void *ud, const source_pod_t *p) {
    start_ctx_t *x = ud;
    if (!hub_pod_scraped(x->c, p))
        return;
    char url[TRIGGER_URL_MAX + 128];
    hub_pod_url(&x->c->demand, p->ip, url, sizeof url);
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
    if (hub_auth_admit(h, c, u->ns, &u->auth, why, sizeof why) != 0) {
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
        hub_queue_key(c, u->ns, key, sizeof key);
        source_target_t t = {d->queue == QUEUE_PROMETHEUS ? SOURCE_KIND_PROM : SOURCE_KIND_REDIS, c,
                             NULL, NULL};
        if (!hub_source_get(h, key, &t, u->ns, u->auth, now, &rc, err, sizeof err)) {
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
    sub_t *u = hub_sub_find(h, trigger_id, ns);
    if (u) {
        /* Set up already; only what failed for lack of memory is tried again
         * (a URL that did not parse would not parse now either). */
        if (u->retry)
            sub_start(h, u, c, now);
        return;
    }
    bool pods = c->demand.engine != ENGINE_NONE && !c->demand.endpoint_count && h->o.list_pods;
    size_t cost = hub_sub_cost(c, pods);
    if (hub_sub_budget_admit(h, ns, cost, NULL, 0) != 0) {
        h->stats.refused_subscriptions++;
        return; /* a read says why (source_hub_signals) */
    }
    ns_count_t *acct = hub_ns_get(h, ns);
    u = acct ? calloc(1, sizeof *u) : NULL;
    if (!u) {
        hub_ns_release(h, acct);
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
void source_hub_forget(source_hub_t *h, uint64_t trigger_id) {
    for (sub_t **pp = &h->subs[trigger_id % SUB_BUCKETS]; *pp;) {
        sub_t *u = *pp;
        if (u->trigger_id == trigger_id) {
            *pp = u->hnext;
            hub_sub_free(u);
        } else {
            pp = &u->hnext;
        }
    }
}
void source_hub_note_asker(source_hub_t *h, uint64_t trigger_id, const char *ns, const char *name) {
    sub_t *u = hub_sub_find(h, trigger_id, ns);
    if (u && name && strncmp(u->asker, name, sizeof u->asker) != 0)
        snprintf(u->asker, sizeof u->asker, "%s", name);
}
