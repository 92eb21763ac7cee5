/*
 * sim.c - see sim.h. The model, in one place:
 *
 * Requests wait in one FIFO queue in front of the fleet (a gateway or Redis
 * queue: it exists at zero replicas, which is what activation needs). The
 * head is admitted to the serving replica with the fewest running requests
 * that has a batch slot and room in its KV cache for the request's whole
 * footprint (context + output: no preemption is modelled). Queue wait is
 * admission time - arrival.
 *
 * A replica's step of dt seconds is a processor-sharing fluid model: the
 * decoding requests each want min(left, decode_seq_tok_s x dt) tokens, the
 * prefilling ones their remaining context (first come first served); the
 * GPU time needed is prefill / prefill_tok_s + decode / decode_tok_s, and
 * when it exceeds dt every share is scaled down by the same factor. NVML's
 * "GPU utilisation" is the share of time with at least one request running
 * (one kernel makes the whole period busy), sampled each signal period.
 *
 * A new replica passes provisioning (skipped on a warm pool node), image
 * pull and weight load, then serves. It is billed from the end of
 * provisioning (a pool node from the start) until it terminates. Removing
 * replicas removes starting ones first (the ReplicaSet's order: not ready
 * before ready), then the serving ones with the fewest requests, which
 * drain (no new admissions) and terminate when empty.
 *
 * Policies: KEDA's scale loop every pollingInterval (IsActive: 0 <-> 1 and
 * cooldown), external-push (a `true` at every signal refresh while active),
 * the HPA every 15 s while replicas >= 1. Signals are sampled every
 * signal_period_s and read signal_delay_s late. The oracle instead sets
 * replicas from the future demand: enough replicas for the work arriving
 * over the next cold start, started exactly one cold start early.
 */
#include "sim.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/demand_eval.h"
#include "core/err.h"
#include "core/evaluator.h"
#include "core/forecast.h"
#include "core/metadata.h"
#include "core/snapshot.h"
#include "core/trigger_config.h"

#define MAX_REPLICAS 512
#define MAX_BATCH 1024
#define SIGNAL_RING 1024

void sim_model_default(sim_model_t *m) {
    m->prefill_tok_s = 10000;
    m->decode_tok_s = 2500;
    m->decode_seq_tok_s = 100;
    m->batch = 64;
    m->kv_tokens = 100000;
    m->node_s = 60;
    m->image_s = 45;
    m->weights_s = 30;
    m->warm_pool = 0;
}

void sim_options_default(sim_options_t *o) {
    o->dt_s = 0.1;
    o->tail_s = 900;
    o->slo_wait_s = 2;
    o->timeline_step_s = 10;
}

double sim_end_s(const trace_t *t, const sim_options_t *o) {
    return (t->count ? t->end_s : 0) + o->tail_s;
}

typedef enum { R_FREE = 0, R_PROVISION, R_PULL, R_LOAD, R_SERVE, R_DRAIN } rstate_t;

typedef struct {
    rstate_t state;
    double phase_end_s; /* when the current start-up phase ends */
    double created_s;
    unsigned running;
    unsigned *run; /* request indices, admission order */
    double kv_reserved;
    double busy_s; /* time with >= 1 request running, this signal period */
} replica_t;

typedef struct {
    double t;
    unsigned gpus;
    double util[MAX_REPLICAS];
    demand_signals_t d;
} sample_t;

typedef struct {
    const trace_t *t;
    const sim_model_t *m;
    const sim_policy_t *p;
    const sim_options_t *o;
    trigger_config_t cfg;
    snapshot_t *snap;
    replica_t rep[MAX_REPLICAS];
    unsigned *run_store;
    double *admit_s;
    float *prefill_left;
    float *gen_left;
    unsigned char *cold; /* request arrived with no replica serving */
    size_t next_arrival, qhead;
    unsigned pool_free; /* warm nodes idle in the pool */
    sample_t *ring;
    unsigned ring_n, ring_head; /* ring_head: next write */
    unsigned rr;                /* node-local round robin */
    forecast_t fc;
    double gpu_s;
    unsigned cold_starts, eval_errors;
    bool waking;
    double wake_start_s;
    unsigned wakes;
    double wake_sum_s, wake_max_s;
} sim_t;

static double footprint(const sim_t *s, size_t r) {
    double f = (double)s->t->reqs[r].ctx_tokens + s->t->reqs[r].gen_tokens;
    return f > s->m->kv_tokens ? s->m->kv_tokens : f;
}

static unsigned count_state(const sim_t *s, bool (*pred)(rstate_t)) {
    unsigned n = 0;
    for (unsigned i = 0; i < MAX_REPLICAS; i++)
        if (pred(s->rep[i].state))
            n++;
    return n;
}
static bool is_live(rstate_t st) { /* counts toward spec.replicas */
    return st >= R_PROVISION && st <= R_SERVE;
}
static bool is_serving(rstate_t st) {
    return st == R_SERVE;
}
static bool is_billed(rstate_t st) {
    return st >= R_PULL;
}
static bool has_node(rstate_t st) {
    return st >= R_PULL && st <= R_SERVE;
}

static void replica_create(sim_t *s, double now) {
    for (unsigned i = 0; i < MAX_REPLICAS; i++) {
        replica_t *r = &s->rep[i];
        if (r->state != R_FREE)
            continue;
        r->created_s = now;
        r->running = 0;
        r->kv_reserved = 0;
        r->busy_s = 0;
        if (s->pool_free > 0) {
            /* a pool node has the node and the cached image: weights only */
            s->pool_free--;
            r->state = R_LOAD;
            r->phase_end_s = now + s->m->weights_s;
        } else {
            r->state = R_PROVISION;
            r->phase_end_s = now + s->m->node_s;
        }
        s->cold_starts++;
        return;
    }
}

/* Starts replicas at t = 0 already serving (the Deployment existed). */
static void replica_create_ready(sim_t *s, double now) {
    replica_create(s, now);
    for (unsigned i = 0; i < MAX_REPLICAS; i++)
        if (s->rep[i].state == R_PROVISION || s->rep[i].state == R_LOAD) {
            s->rep[i].state = R_SERVE;
            break;
        }
    s->cold_starts--; /* not a cold start: it was there before */
}

static void replica_release(sim_t *s, replica_t *r) {
    bool node = r->state != R_PROVISION;
    r->state = R_FREE;
    if (node && s->pool_free < s->m->warm_pool)
        s->pool_free++; /* the node goes back to the pool */
}

/* Brings the live count to desired: creates, or removes starting replicas
 * newest first, then drains serving ones with the fewest requests. */
static void reconcile(sim_t *s, int desired, double now) {
    int live = (int)count_state(s, is_live);
    while (live < desired && live < MAX_REPLICAS) {
        replica_create(s, now);
        live++;
    }
    while (live > desired) {
        int pick = -1;
        for (unsigned i = 0; i < MAX_REPLICAS; i++) {
            replica_t *r = &s->rep[i];
            if (r->state >= R_PROVISION && r->state <= R_LOAD &&
                (pick < 0 || r->created_s >= s->rep[pick].created_s))
                pick = (int)i;
        }
        if (pick >= 0) {
            replica_release(s, &s->rep[pick]);
        } else {
            for (unsigned i = 0; i < MAX_REPLICAS; i++)
                if (s->rep[i].state == R_SERVE &&
                    (pick < 0 || s->rep[i].running < s->rep[pick].running))
                    pick = (int)i;
            if (pick < 0)
                break;
            s->rep[pick].state = R_DRAIN;
        }
        live--;
    }
}

static void dispatch(sim_t *s, double now) {
    while (s->qhead < s->next_arrival) {
        size_t q = s->qhead;
        double need = footprint(s, q);
        int pick = -1;
        for (unsigned i = 0; i < MAX_REPLICAS; i++) {
            replica_t *r = &s->rep[i];
            if (r->state != R_SERVE || r->running >= s->m->batch ||
                r->kv_reserved + need > s->m->kv_tokens)
                continue;
            if (pick < 0 || r->running < s->rep[pick].running)
                pick = (int)i;
        }
        if (pick < 0)
            return;
        replica_t *r = &s->rep[pick];
        r->run[r->running++] = (unsigned)q;
        r->kv_reserved += need;
        s->admit_s[q] = now;
        s->qhead++;
    }
}

static void serve_step(sim_t *s, replica_t *r, double dt) {
    if (r->running == 0)
        return;
    r->busy_s += dt;
    const sim_model_t *m = s->m;
    double pre_want = 0, dec_want = 0;
    for (unsigned k = 0; k < r->running; k++) {
        unsigned q = r->run[k];
        if (s->prefill_left[q] > 0)
            pre_want += s->prefill_left[q];
        else
            dec_want += fmin(s->gen_left[q], m->decode_seq_tok_s * dt);
    }
    if (pre_want > m->prefill_tok_s * dt)
        pre_want = m->prefill_tok_s * dt;
    double need_s = pre_want / m->prefill_tok_s + dec_want / m->decode_tok_s;
    double scale = need_s > dt ? dt / need_s : 1;
    double pre_budget = pre_want * scale;
    unsigned keep = 0;
    for (unsigned k = 0; k < r->running; k++) {
        unsigned q = r->run[k];
        bool done = false;
        if (s->prefill_left[q] > 0) {
            double take = fmin(s->prefill_left[q], pre_budget);
            pre_budget -= take;
            s->prefill_left[q] -= (float)take;
            if (s->prefill_left[q] <= 0.5f) {
                s->prefill_left[q] = 0;
                done = s->gen_left[q] <= 0;
            }
        } else {
            double take = fmin(s->gen_left[q], m->decode_seq_tok_s * dt) * scale;
            s->gen_left[q] -= (float)take;
            done = s->gen_left[q] <= 1e-3f;
        }
        if (done)
            r->kv_reserved -= footprint(s, q);
        else
            r->run[keep++] = q;
    }
    r->running = keep;
    if (r->running == 0)
        r->kv_reserved = 0; /* no float drift */
}

static void take_sample(sim_t *s, double now) {
    sample_t *x = &s->ring[s->ring_head];
    s->ring_head = (s->ring_head + 1) % SIGNAL_RING;
    if (s->ring_n < SIGNAL_RING)
        s->ring_n++;
    memset(&x->d, 0, sizeof x->d);
    x->t = now;
    x->gpus = 0;
    double running = 0, kv = 0;
    double period = s->p->signal_period_s;
    for (unsigned i = 0; i < MAX_REPLICAS; i++) {
        replica_t *r = &s->rep[i];
        if (has_node(r->state) || r->state == R_DRAIN) {
            double u = r->busy_s / period * 100;
            x->util[x->gpus++] = u > 100 ? 100 : u;
        }
        r->busy_s = 0;
        if (r->state == R_SERVE || r->state == R_DRAIN) {
            running += r->running;
            double used = 0;
            for (unsigned k = 0; k < r->running; k++) {
                unsigned q = r->run[k];
                const trace_request_t *rq = &s->t->reqs[q];
                used += rq->ctx_tokens - s->prefill_left[q] + rq->gen_tokens - s->gen_left[q];
            }
            kv += used / s->m->kv_tokens * 100;
        }
    }
    /* The router holds the queue, so the engines' own waiting count is 0. */
    x->d.has_engine = trigger_uses_engine(&s->cfg);
    x->d.waiting = 0;
    x->d.running = running;
    x->d.kv_percent = kv;
    x->d.has_queue = s->cfg.demand.queue != QUEUE_NONE;
    x->d.queue = (double)(s->next_arrival - s->qhead);
}

/* The sample KEDA sees at now: the newest taken at or before now - delay. */
static const sample_t *seen_sample(const sim_t *s, double now) {
    double cut = now - s->p->signal_delay_s + 1e-9;
    for (unsigned k = 1; k <= s->ring_n; k++) {
        const sample_t *x = &s->ring[(s->ring_head + SIGNAL_RING - k) % SIGNAL_RING];
        if (x->t <= cut)
            return x;
    }
    return NULL;
}

/* The product's evaluation of the policy's trigger on one sample. */
static void evaluate(sim_t *s, const sample_t *x, double now, eval_result_t *out) {
    eval_result_t gpu;
    bool need_gpu = s->cfg.demand.type == DEMAND_NONE || trigger_uses_gpu(&s->cfg);
    if (need_gpu) {
        snapshot_t *sn = s->snap;
        sn->taken_mono = (mono_ns_t)(now * 1e9) + NS_PER_SEC;
        unsigned n = 0;
        if (s->p->node_local) {
            /* One DaemonSet pod answers with its node; KEDA reaches them in turn. */
            if (x->gpus) {
                sn->gpus[0].gpu_util_pct = (unsigned)lround(x->util[s->rr++ % x->gpus]);
                n = 1;
            }
        } else {
            for (unsigned i = 0; i < x->gpus; i++)
                sn->gpus[i].gpu_util_pct = (unsigned)lround(x->util[i]);
            n = x->gpus;
        }
        sn->gpu_count = n;
        evaluator_run(&s->cfg, sn, sn->taken_mono, 10 * NS_PER_SEC, &gpu);
        if (s->cfg.demand.type == DEMAND_NONE) {
            *out = gpu;
            return;
        }
    }
    demand_evaluate(&s->cfg, &x->d, need_gpu ? &gpu : NULL, out);
}

static int parse_policy(sim_t *s, char *err, size_t errlen) {
    metadata_pair_t pairs[SIM_MAX_META];
    const sim_policy_t *p = s->p;
    if (p->meta_count > SIM_MAX_META)
        return kgs_seterr(err, errlen, KGS_EINVAL, "policy %c: too many metadata keys", p->id);
    for (unsigned i = 0; i < p->meta_count; i++) {
        pairs[i].key = p->meta[i][0];
        pairs[i].key_len = strlen(p->meta[i][0]);
        pairs[i].value = p->meta[i][1];
        pairs[i].value_len = strlen(p->meta[i][1]);
    }
    char msg[512];
    if (trigger_config_parse(pairs, p->meta_count, &s->cfg, msg, sizeof msg))
        return kgs_seterr(err, errlen, KGS_EINVAL, "policy %c (%s): %s", p->id, p->name, msg);
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(const double *v, size_t n, double q) {
    if (n == 0)
        return 0;
    size_t k = (size_t)ceil(q * (double)n);
    if (k < 1)
        k = 1;
    return v[k - 1];
}

int sim_demand_timeline(const trace_t *t, const sim_model_t *m, double step_s, double end_s,
                        double window_s, float **out, size_t *n) {
    size_t secs = (size_t)ceil(end_s) + 1;
    double *work = calloc(secs, sizeof *work);
    size_t pts = (size_t)(end_s / step_s) + 1;
    float *v = malloc(pts * sizeof *v);
    if (!work || !v) {
        free(work);
        free(v);
        return KGS_ENOMEM;
    }
    for (size_t i = 0; i < t->count; i++) {
        size_t k = (size_t)t->reqs[i].arrival_s;
        if (k < secs)
            work[k] +=
                t->reqs[i].ctx_tokens / m->prefill_tok_s + t->reqs[i].gen_tokens / m->decode_tok_s;
    }
    /* prefix sums for window means */
    double *cum = calloc(secs + 1, sizeof *cum);
    if (!cum) {
        free(work);
        free(v);
        return KGS_ENOMEM;
    }
    for (size_t i = 0; i < secs; i++)
        cum[i + 1] = cum[i] + work[i];
    long half = (long)(window_s / 2);
    for (size_t k = 0; k < pts; k++) {
        long c = (long)(k * step_s);
        long a = c - half < 0 ? 0 : c - half,
             b = c + half + 1 > (long)secs ? (long)secs : c + half + 1;
        v[k] = b > a ? (float)((cum[b] - cum[a]) / (double)(b - a)) : 0;
    }
    free(work);
    free(cum);
    *out = v;
    *n = pts;
    return 0;
}

/* The oracle's replica count per second: at t, enough replicas for the
 * largest need over [t - 30 s, t + cold start + 30 s], so replicas are
 * started exactly one cold start before the work arrives and kept while it
 * is served. */
static int *oracle_schedule(const sim_t *s, double end_s) {
    const sim_policy_t *p = s->p;
    float *need;
    size_t n;
    if (sim_demand_timeline(s->t, s->m, 1, end_s, p->oracle_window_s, &need, &n))
        return NULL;
    int *sched = malloc(n * sizeof *sched);
    if (!sched) {
        free(need);
        return NULL;
    }
    double cs = s->m->node_s + s->m->image_s + s->m->weights_s;
    for (size_t k = 0; k < n; k++) {
        long a = (long)k - 30, b = (long)k + (long)cs + 30;
        double mx = 0;
        for (long j = a < 0 ? 0 : a; j <= b && j < (long)n; j++)
            if (need[j] > mx)
                mx = need[j];
        int r = mx > 0 ? (int)ceil(mx / p->oracle_util) : 0;
        sched[k] = r > p->max_replicas ? p->max_replicas : r;
    }
    free(need);
    return sched;
}

void sim_result_deinit(sim_result_t *r) {
    if (!r)
        return;
    free(r->replicas);
    free(r->serving);
    r->replicas = r->serving = NULL;
}

int sim_run(const trace_t *t, const sim_model_t *m, const sim_policy_t *p, const sim_options_t *o,
            sim_result_t *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (m->batch < 1 || m->batch > MAX_BATCH || !(m->prefill_tok_s > 0) || !(m->decode_tok_s > 0) ||
        !(m->decode_seq_tok_s > 0) || !(m->kv_tokens > 0) || !(o->dt_s > 0) ||
        p->max_replicas < 1 || p->max_replicas > MAX_REPLICAS / 2 ||
        !(p->signal_period_s >= o->dt_s))
        return kgs_seterr(err, errlen, KGS_EINVAL, "policy %c: parameter out of range", p->id);
    int rc = KGS_ENOMEM;
    sim_t *s = calloc(1, sizeof *s);
    if (!s)
        return KGS_ENOMEM;
    s->t = t;
    s->m = m;
    s->p = p;
    s->o = o;
    int *sched = NULL;
    double *waits = NULL, *warm = NULL;
    double end = sim_end_s(t, o);
    size_t steps = (size_t)ceil(end / o->dt_s);
    out->points = (size_t)(end / o->timeline_step_s) + 1;
    out->replicas = calloc(out->points, sizeof *out->replicas);
    out->serving = calloc(out->points, sizeof *out->serving);
    s->run_store = malloc((size_t)MAX_REPLICAS * m->batch * sizeof *s->run_store);
    s->admit_s = malloc((t->count + 1) * sizeof *s->admit_s);
    s->prefill_left = malloc((t->count + 1) * sizeof *s->prefill_left);
    s->gen_left = malloc((t->count + 1) * sizeof *s->gen_left);
    s->cold = calloc(t->count + 1, 1);
    s->ring = malloc(SIGNAL_RING * sizeof *s->ring);
    s->snap = snapshot_new(MAX_REPLICAS, 0);
    if (!out->replicas || !out->serving || !s->run_store || !s->admit_s || !s->prefill_left ||
        !s->gen_left || !s->cold || !s->ring || !s->snap)
        goto fail;
    for (unsigned i = 0; i < MAX_REPLICAS; i++) {
        s->rep[i].run = s->run_store + (size_t)i * m->batch;
        gpu_record_t *g = &s->snap->gpus[i];
        g->index = i;
        snprintf(g->uuid, sizeof g->uuid, "GPU-sim-%04u", i);
        snprintf(g->name, sizeof g->name, "NVIDIA H100 80GB HBM3");
        g->valid = 1u << GPU_F_GPU_UTIL;
        g->health = GPU_HEALTH_OK;
    }
    s->snap->status = SNAPSHOT_OK;
    snprintf(s->snap->node_name, sizeof s->snap->node_name, "sim-node");
    for (size_t i = 0; i < t->count; i++) {
        s->admit_s[i] = -1;
        s->prefill_left[i] = (float)t->reqs[i].ctx_tokens;
        s->gen_left[i] = (float)t->reqs[i].gen_tokens;
    }
    s->pool_free = m->warm_pool;

    hpa_t hpa;
    hpa_keda_t keda;
    hpa_init(&hpa, p->min_replicas, p->max_replicas);
    hpa_keda_init(&keda, p->polling_s, p->cooldown_s, p->min_replicas, p->max_replicas);
    if (p->kind == SIM_POLICY_KEDA) {
        rc = parse_policy(s, err, errlen);
        if (rc)
            goto fail;
        rc = KGS_ENOMEM;
        hpa.type = p->metric_type;
        if (s->cfg.demand.forecast_trend &&
            forecast_init(&s->fc, p->forecast_alpha, p->forecast_beta)) {
            rc = kgs_seterr(err, errlen, KGS_EINVAL, "policy %c: forecast weights", p->id);
            goto fail;
        }
        for (int i = 0; i < p->min_replicas; i++)
            replica_create_ready(s, 0);
    } else {
        sched = oracle_schedule(s, end);
        if (!sched)
            goto fail;
        for (int i = 0; i < sched[0]; i++)
            replica_create_ready(s, 0);
    }

    double next_sample = 0, next_poll = 0, next_sync = hpa.sync_s;
    size_t next_point = 0;
    for (size_t step = 0; step <= steps; step++) {
        double now = (double)step * o->dt_s;
        /* arrivals */
        while (s->next_arrival < t->count && t->reqs[s->next_arrival].arrival_s <= now) {
            if (count_state(s, is_serving) == 0) {
                s->cold[s->next_arrival] = 1;
                if (!s->waking) {
                    s->waking = true;
                    s->wake_start_s = t->reqs[s->next_arrival].arrival_s;
                }
            }
            s->next_arrival++;
        }
        /* start-up phases */
        for (unsigned i = 0; i < MAX_REPLICAS; i++) {
            replica_t *r = &s->rep[i];
            while (r->state >= R_PROVISION && r->state <= R_LOAD && now >= r->phase_end_s) {
                if (r->state == R_PROVISION) {
                    r->state = R_PULL;
                    r->phase_end_s += m->image_s;
                } else if (r->state == R_PULL) {
                    r->state = R_LOAD;
                    r->phase_end_s += m->weights_s;
                } else {
                    r->state = R_SERVE;
                }
            }
        }
        if (s->waking && count_state(s, is_serving) > 0) {
            double d = now - s->wake_start_s;
            s->wakes++;
            s->wake_sum_s += d;
            if (d > s->wake_max_s)
                s->wake_max_s = d;
            s->waking = false;
        }
        dispatch(s, now);
        for (unsigned i = 0; i < MAX_REPLICAS; i++) {
            replica_t *r = &s->rep[i];
            if (r->state == R_SERVE || r->state == R_DRAIN)
                serve_step(s, r, o->dt_s);
            if (r->state == R_DRAIN && r->running == 0)
                replica_release(s, r);
        }

        int live = (int)count_state(s, is_live);
        int desired = live;
        if (p->kind == SIM_POLICY_ORACLE) {
            size_t k = (size_t)now;
            desired = sched[k];
        } else {
            if (now + 1e-9 >= next_sample) {
                take_sample(s, now);
                next_sample += p->signal_period_s;
                const sample_t *x = seen_sample(s, now);
                if (x && (p->push || s->cfg.demand.forecast_trend)) {
                    eval_result_t ev;
                    evaluate(s, x, now, &ev);
                    if (ev.status == EVAL_OK && s->cfg.demand.forecast_trend)
                        forecast_update(&s->fc, now, ev.value);
                    if (ev.status == EVAL_OK && p->push && ev.active)
                        desired = hpa_keda_poll(&keda, now, desired, true);
                }
            }
            if (now + 1e-9 >= next_poll) {
                next_poll += p->polling_s;
                const sample_t *x = seen_sample(s, now);
                if (x) {
                    eval_result_t ev;
                    evaluate(s, x, now, &ev);
                    if (ev.status == EVAL_OK)
                        desired = hpa_keda_poll(&keda, now, desired, ev.active);
                    else
                        s->eval_errors++;
                }
            }
            if (now + 1e-9 >= next_sync) {
                next_sync += hpa.sync_s;
                const sample_t *x = seen_sample(s, now);
                if (x && desired >= 1) {
                    eval_result_t ev;
                    evaluate(s, x, now, &ev);
                    if (ev.status == EVAL_OK) {
                        double v = ev.value;
                        if (s->cfg.demand.forecast_trend)
                            v = forecast_ahead(&s->fc, now, (double)s->cfg.demand.cold_start_s, v);
                        desired = hpa_sync(&hpa, now, desired, (int)count_state(s, is_serving), v,
                                           s->cfg.target_value);
                    } else {
                        s->eval_errors++;
                    }
                }
            }
        }
        if (desired > p->max_replicas)
            desired = p->max_replicas;
        if (desired != live)
            reconcile(s, desired, now);

        unsigned billed = count_state(s, is_billed) + s->pool_free;
        s->gpu_s += billed * o->dt_s;
        unsigned all = count_state(s, is_billed);
        if (all > out->peak_replicas)
            out->peak_replicas = all;
        if (next_point < out->points && now + 1e-9 >= next_point * o->timeline_step_s) {
            out->replicas[next_point] = (float)count_state(s, is_billed);
            out->serving[next_point] = (float)count_state(s, is_serving);
            next_point++;
        }
    }
    if (s->waking) {
        double d = end - s->wake_start_s;
        s->wakes++;
        s->wake_sum_s += d;
        if (d > s->wake_max_s)
            s->wake_max_s = d;
    }

    waits = malloc((t->count + 1) * sizeof *waits);
    warm = malloc((t->count + 1) * sizeof *warm);
    if (!waits || !warm)
        goto fail;
    size_t miss = 0, nwarm = 0, warm_miss = 0;
    for (size_t i = 0; i < t->count; i++) {
        double w =
            s->admit_s[i] >= 0 ? s->admit_s[i] - t->reqs[i].arrival_s : end - t->reqs[i].arrival_s;
        if (s->admit_s[i] < 0)
            out->unfinished++;
        if (w < 0)
            w = 0;
        waits[i] = w;
        if (w > o->slo_wait_s)
            miss++;
        if (!s->cold[i]) {
            warm[nwarm++] = w;
            if (w > o->slo_wait_s)
                warm_miss++;
        }
    }
    qsort(warm, nwarm, sizeof *warm, cmp_double);
    out->warm_p99_s = pct(warm, nwarm, 0.99);
    out->warm_miss_share = nwarm ? (double)warm_miss / (double)nwarm : 0;
    qsort(waits, t->count, sizeof *waits, cmp_double);
    out->wait_p50_s = pct(waits, t->count, 0.50);
    out->wait_p95_s = pct(waits, t->count, 0.95);
    out->wait_p99_s = pct(waits, t->count, 0.99);
    out->wait_max_s = t->count ? waits[t->count - 1] : 0;
    out->slo_miss_share = t->count ? (double)miss / (double)t->count : 0;
    out->gpu_hours = s->gpu_s / 3600;
    out->cold_starts = s->cold_starts;
    out->wakes = s->wakes;
    out->wake_mean_s = s->wakes ? s->wake_sum_s / s->wakes : 0;
    out->wake_max_s = s->wake_max_s;
    out->eval_errors = s->eval_errors;
    rc = 0;
fail:
    free(waits);
    free(warm);
    free(sched);
    snapshot_unref(s->snap);
    free(s->ring);
    free(s->gen_left);
    free(s->cold);
    free(s->prefill_left);
    free(s->admit_s);
    free(s->run_store);
    free(s);
    if (rc)
        sim_result_deinit(out);
    return rc;
}
