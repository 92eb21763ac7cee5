/*
 * source_read.c - the reading door: source_hub_signals() and the views (files
 * of the hub: source_hub_internal.h).
 *
 * A read starts nothing: it finds a trigger's sources by identity, marks
 * them and the subscription used (idle eviction) and copies out what their
 * last polls left, for core/demand_eval.c's demand_evaluate_inputs(). A
 * source that does not exist is reported as not started (or not created,
 * with why); it is the subscribing door's (source_subscribe.c) to make.
 * The views (source_hub_view, source_hub_views, source_hub_model) mark
 * nothing used.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/roles.h"
#include "core/source_url.h"
#include "sources/source_hub_internal.h"

/* ---- reading ------------------------------------------------------------------- */

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
    hub_engine_key(x->c, x->ns, url, key, sizeof key);
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
    if (!hub_pod_scraped(x->c, p))
        return;
    char url[TRIGGER_URL_MAX + 128];
    hub_pod_url(&x->c->demand, p->ip, url, sizeof url);
    unsigned before = w->n;
    read_engine(x, url, p->pod);
    if (w->n > before)
        w->v[before].draining = p->draining;
}

void source_hub_signals(source_hub_t *h, const trigger_config_t *c, uint64_t trigger_id,
                        const char *ns, mono_ns_t now, demand_inputs_t *out,
                        demand_learned_t *learned) {
    const demand_config_t *d = &c->demand;
    memset(out, 0, sizeof *out);
    out->pods_status = EVAL_OK;
    sub_t *u = hub_sub_find(h, trigger_id, ns);
    if (learned)
        *learned = u ? (demand_learned_t){&u->f, &u->model, &u->view}
                     : (demand_learned_t){NULL, NULL, NULL};
    if (u) {
        u->last_used = now;
        if (u->slo_mask)
            hist_read(u, now, out->latency);
    } else {
        /* not subscribed: refused by --subscription-bytes (or out of
         * memory, which the next subscribe retries) */
        bool pods = d->engine != ENGINE_NONE && !d->endpoint_count && h->o.list_pods;
        hub_sub_budget_admit(h, ns, hub_sub_cost(c, pods), out->limit_error,
                             sizeof out->limit_error);
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
        hub_queue_key(c, ns, key, sizeof key);
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

const demand_model_state_t *source_hub_model(const source_hub_t *h, uint64_t trigger_id,
                                             const char *ns) {
    const sub_t *u = hub_sub_find(h, trigger_id, ns);
    return u && u->model.have_decision ? &u->model : NULL;
}

const demand_view_t *source_hub_view(const source_hub_t *h, uint64_t trigger_id, const char *ns) {
    const sub_t *u = hub_sub_find(h, trigger_id, ns);
    return u && u->view.evaluated ? &u->view : NULL;
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
