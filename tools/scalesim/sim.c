/*
 * sim.c - see sim.h. The model, in one place:
 *
 * Requests wait in one FIFO queue in front of the fleet (a gateway or Redis
 * queue: it exists at zero replicas, which is what activation needs). The
 * gateway sends the head to the serving replica with the fewest running
 * requests that can schedule it now: a batch slot, no preempted requests of
 * its own waiting, and free KV blocks for the prompt (plus vLLM's 1 %
 * watermark), or no request running at all (a prompt larger than the whole
 * cache runs alone, over-committed, rather than never). Queue wait is the
 * first scheduling - arrival.
 *
 * KV is paged like vLLM's: blocks of kv_block tokens; a request holds the
 * blocks of its prompt from scheduling and one more each kv_block generated
 * tokens. When a step's decode growth needs more blocks than are free, the
 * newest running request is preempted (its blocks freed) to the head of its
 * engine's waiting queue and recomputed later (prompt + generated so far
 * prefilled again). An engine schedules its own waiting requests before the
 * gateway sends new ones.
 *
 * A replica's step of dt seconds is a processor-sharing fluid model: the
 * decoding requests each want decode_seq_tok_s x dt tokens (a step costs
 * the batch's step time, however few tokens a request has left), the
 * prefilling ones their remaining prompt (first come first served); the
 * GPU time needed is prefill / prefill_tok_s + decode / decode_tok_s, and
 * when it exceeds dt every share is scaled down by the same factor: each
 * decoding request then gets min(left, decode_seq_tok_s x dt x scale).
 *
 * Latency (sim.h, sim_prefill_s and sim_decode_step_s): a request's first
 * token is the end of its first prefill, placed inside the step (prefill
 * runs at prefill_tok_s x scale); TTFT = that - arrival. TPOT = (finish -
 * the start of its first decode step) / output tokens, so a preemption's
 * recompute counts. Each replica keeps vLLM's two histograms, cumulative:
 * time to first token (from when the gateway sent the request, or from its
 * arrival: --ttft-seen) and inter-token latency (each decoded token, of
 * 1 / (decode_seq_tok_s x scale); a preemption stall is not observed). NVML's
 * "GPU utilisation" is the share of time with at least one request running
 * (one kernel makes the whole period busy), sampled each signal period.
 *
 * A new replica passes provisioning (skipped on a warm pool node), image
 * pull and weight load, then serves. It is billed from the end of
 * provisioning (a pool node from the start) until it terminates. Removing
 * replicas deletes the pods the ReplicaSet controller ranks first
 * (sim_victim_before: pods waiting for a node, then pulling, then loading,
 * newest first; then the Ready ones Ready for the least time); a starting
 * pod deleted is a cancelled start, a serving one drains (no new requests
 * from the gateway) and terminates when empty.
 *
 * KEDA policies: KEDA's scale loop every pollingInterval (IsActive: 0 <-> 1
 * and cooldown), external-push (a `true` at every signal refresh while
 * active), the HPA every 15 s while replicas >= 1 (legacy limit unless the
 * policy sets a behavior). They read sim_signals_t only, sampled every
 * signal_period_s and seen signal_delay_s late. The online ideal sets
 * replicas each second from the truth of the present (the work arriving
 * and the work queued); the oracle from the future demand: enough replicas
 * for the work arriving over the next cold start, started exactly one cold
 * start early. Every policy starts with no replica unless it has a
 * minReplicaCount.
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
#include "core/queue_model.h"
#include "core/metadata.h"
#include "core/snapshot.h"
#include "core/trigger_config.h"

#define MAX_REPLICAS SIM_MAX_PODS
#define MAX_BATCH 1024
#define IDEAL_SYNC_S 15.0 /* the HPA's sync period, for the ideal's reversals */

void sim_model_default(sim_model_t *m) {
    m->prefill_tok_s = 10000;
    m->decode_tok_s = 2500;
    m->decode_seq_tok_s = 100;
    m->batch = 64;
    m->kv_tokens = 400000;
    m->kv_block = 16;
    m->node_s = 60;
    m->image_s = 45;
    m->weights_s = 30;
    m->warm_pool = 0;
    m->node_linger_s = 0;
}

void sim_options_default(sim_options_t *o) {
    o->dt_s = 0.1;
    o->tail_s = 900;
    o->slo_wait_s = 2;
    o->timeline_step_s = 10;
    o->ttft_slo_s = 0;
    o->tpot_slo_s = 0;
    o->ttft_seen = SIM_TTFT_SEEN_DISPATCH;
}

double sim_prefill_s(const sim_model_t *m, double prompt_tokens) {
    return prompt_tokens > 0 ? prompt_tokens / m->prefill_tok_s : 0;
}

double sim_decode_step_s(const sim_model_t *m, unsigned decoding) {
    double alone = 1 / m->decode_seq_tok_s, shared = (double)decoding / m->decode_tok_s;
    return shared > alone ? shared : alone;
}

double sim_ttft_objective_s(const sim_model_t *m, const sim_options_t *o) {
    (void)m;
    return o->ttft_slo_s > 0 ? o->ttft_slo_s : o->slo_wait_s;
}

double sim_tpot_objective_s(const sim_model_t *m, const sim_options_t *o) {
    return o->tpot_slo_s > 0 ? o->tpot_slo_s : 2 * sim_decode_step_s(m, 1);
}

/* vllm/v1/metrics/loggers.py (PrometheusStatLogger): the buckets of
 * histogram_time_to_first_token and histogram_inter_token_latency. */
static const hist_layout_t ttft_layout = {22, {0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                               0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                               20.0,  40.0,  80.0, 160.0, 640.0, 2560.0}};
static const hist_layout_t itl_layout = {19,
                                         {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
                                          0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}};

const hist_layout_t *sim_hist_layout(sim_hist_kind_t kind) {
    return kind == SIM_HIST_TTFT ? &ttft_layout : &itl_layout;
}

void sim_hist_observe(const hist_layout_t *l, hist_counts_t *c, double v, double weight) {
    if (!(weight > 0))
        return;
    for (unsigned i = 0; i < l->n; i++)
        if (v <= l->le[i])
            c->bucket[i] += weight;
    c->count += weight;
    c->sum += v * weight;
}

void sim_latency_init(sim_latency_state_t *st) {
    memset(st, 0, sizeof *st);
    hist_window_reset(&st->wttft, &ttft_layout);
    hist_window_reset(&st->witl, &itl_layout);
    st->last_t_s = -1;
}

static void latency_of(const hist_window_t *w, double now_s, double window_s, sim_latency_t *out) {
    memset(out, 0, sizeof *out);
    hist_counts_t c;
    uint64_t now = (uint64_t)(now_s * 1e9) + NS_PER_SEC, win = (uint64_t)(window_s * 1e9);
    out->count = hist_window_sum(w, now, win, &c);
    const hist_layout_t *l = hist_window_layout(w);
    out->known = out->count > 0 && hist_quantile(l, &c, 0.5, &out->p50_s) &&
                 hist_quantile(l, &c, 0.9, &out->p90_s) && hist_quantile(l, &c, 0.99, &out->p99_s);
}

void sim_latency_update(sim_latency_state_t *st, const sim_signals_t *x, double window_s,
                        sim_latency_t *ttft, sim_latency_t *tpot) {
    if (x->t_s > st->last_t_s) {
        st->last_t_s = x->t_s;
        uint64_t at = (uint64_t)(x->t_s * 1e9) + NS_PER_SEC;
        uint64_t spacing = (uint64_t)(window_s * 1e9 / 32);
        unsigned keep = 0;
        uint64_t *uid = st->_uid;
        hist_pod_t *nt = st->_ttft, *ni = st->_itl;
        for (unsigned i = 0; i < x->pod_count; i++) {
            const sim_pod_t *pd = &x->pods[i];
            if (!pd->ready)
                continue;
            unsigned k = 0;
            while (k < st->npods && st->uid[k] != pd->uid)
                k++;
            hist_pod_t pt = {0}, pi = {0};
            if (k < st->npods) {
                pt = st->ttft[k];
                pi = st->itl[k];
            }
            hist_counts_t d;
            if (hist_pod_delta(&pt, &pd->ttft, true, ttft_layout.n, &d))
                hist_window_add(&st->wttft, at, &d, spacing);
            if (hist_pod_delta(&pi, &pd->itl, true, itl_layout.n, &d))
                hist_window_add(&st->witl, at, &d, spacing);
            uid[keep] = pd->uid;
            nt[keep] = pt;
            ni[keep] = pi;
            keep++;
        }
        st->npods = keep;
        memcpy(st->uid, uid, keep * sizeof *uid);
        memcpy(st->ttft, nt, keep * sizeof *nt);
        memcpy(st->itl, ni, keep * sizeof *ni);
    }
    latency_of(&st->wttft, x->t_s, window_s, ttft);
    latency_of(&st->witl, x->t_s, window_s, tpot);
}

double sim_end_s(const trace_t *t, const sim_options_t *o) {
    return (t->count ? t->end_s : 0) + o->tail_s;
}

double sim_request_work(const sim_model_t *m, const trace_request_t *r) {
    return r->ctx_tokens / m->prefill_tok_s + r->gen_tokens / m->decode_tok_s;
}

typedef enum { R_FREE = 0, R_PROVISION, R_PULL, R_LOAD, R_SERVE, R_DRAIN } rstate_t;

typedef struct {
    rstate_t state;
    double phase_end_s; /* when the current start-up phase ends */
    double created_s;
    double ready_s; /* when it turned Ready (R_SERVE and R_DRAIN) */
    /* when it was scheduled onto a node and when its container started
     * (PodScheduled, containerStatuses' startedAt); < 0 not yet */
    double scheduled_s, running_s;
    uint64_t uid; /* metadata.uid: one per pod ever created */
    unsigned running;
    unsigned *run; /* request indices, scheduling order (the newest last) */
    unsigned nwait;
    unsigned *wait;   /* preempted requests, the next to schedule first */
    unsigned kv_used; /* KV blocks held by the running requests */
    double busy_s;    /* time with >= 1 request running, this signal period */
    double completed; /* the engine's counters since the pod started */
    double prompt_tok;
    double gen_tok;
    hist_counts_t ttft, itl; /* the engine's histograms since the pod started */
} replica_t;

typedef struct {
    const trace_t *t;
    const sim_model_t *m;
    const sim_policy_t *p;
    const sim_options_t *o;
    trigger_config_t cfg;
    snapshot_t *snap;
    replica_t rep[MAX_REPLICAS];
    unsigned kv_blocks; /* per replica */
    unsigned *run_store;
    double *admit_s;
    float *prefill_left;
    float *gen_left;
    unsigned *blocks;         /* KV blocks a request holds */
    unsigned char *cold;      /* request arrived with no replica serving */
    unsigned char *prefilled; /* its prompt was counted once */
    double *first_tok_s;      /* its first token (the end of its first prefill); < 0 none yet */
    double *dec_start_s;      /* the start of its first decode step; < 0 none yet */
    double *done_s;           /* when it finished; < 0 not yet */
    sim_latency_state_t *lat; /* the scaler's histogram windows (slo policies) */
    size_t next_arrival, qhead;
    unsigned pool_free; /* warm nodes idle in the pool */
    /* nodes whose pod left, until the cluster autoscaler removes them
     * (m->node_linger_s): when each goes, the newest last */
    double linger_until[MAX_REPLICAS];
    unsigned linger_n;
    sim_signals_t *ring;
    unsigned ring_cap, ring_n, ring_head; /* ring_head: next write */
    unsigned rr;                          /* node-local round robin */
    forecast_t fc;
    demand_model_state_t dm; /* demandModel: queueing, as the hub keeps it per subscription */
    double gpu_s;
    unsigned cold_starts, eval_errors, preemptions, cancelled_starts;
    stability_t stab; /* the desired count at each HPA sync */
    uint64_t next_uid;
    size_t completed;
    bool waking;
    double wake_start_s;
    unsigned wakes;
    double wake_sum_s, wake_max_s;
    /* online ideal */
    size_t win_lo;   /* oldest arrival still in the window */
    double win_work; /* work of the arrivals in the window */
    int *ideal_hist; /* the need per second, for the hold */
} sim_t;

static unsigned blocks_for(const sim_t *s, double tokens) {
    if (!(tokens > 0))
        return 0;
    return (unsigned)ceil(tokens / s->m->kv_block - 1e-9);
}

/* Tokens a request has in KV once prefilled: its prompt and what it generated. */
static double kv_tokens_of(const sim_t *s, unsigned q) {
    return (double)s->t->reqs[q].ctx_tokens + s->t->reqs[q].gen_tokens - s->gen_left[q];
}

static unsigned kv_free(const sim_t *s, const replica_t *r) {
    return r->kv_used >= s->kv_blocks ? 0 : s->kv_blocks - r->kv_used;
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
    return st >= R_PULL;
}

static void replica_create(sim_t *s, double now) {
    for (unsigned i = 0; i < MAX_REPLICAS; i++) {
        replica_t *r = &s->rep[i];
        if (r->state != R_FREE)
            continue;
        r->created_s = now;
        r->uid = ++s->next_uid;
        r->running = 0;
        r->nwait = 0;
        r->kv_used = 0;
        r->busy_s = 0;
        r->completed = r->prompt_tok = r->gen_tok = 0;
        memset(&r->ttft, 0, sizeof r->ttft);
        memset(&r->itl, 0, sizeof r->itl);
        r->scheduled_s = r->running_s = -1;
        if (s->linger_n > 0) {
            /* a lingering node (taken before the pool's, which stays
             * anyway; the one that left last, nothing else in the
             * simulator depends on which) has the node and the image the
             * pod before ran: weights only */
            s->linger_n--;
            r->state = R_LOAD;
            r->scheduled_s = r->running_s = now;
            r->phase_end_s = now + s->m->weights_s;
        } else if (s->pool_free > 0) {
            /* a pool node has the node and the cached image: weights only */
            s->pool_free--;
            r->state = R_LOAD;
            r->scheduled_s = r->running_s = now;
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
            s->rep[i].ready_s = now;
            break;
        }
    s->cold_starts--; /* not a cold start: it was there before */
}

static void replica_release(sim_t *s, replica_t *r, double now) {
    bool node = r->state != R_PROVISION;
    r->state = R_FREE;
    if (node && s->pool_free < s->m->warm_pool)
        s->pool_free++; /* the node goes back to the pool */
    else if (node && s->m->node_linger_s > 0 && s->linger_n < MAX_REPLICAS)
        s->linger_until[s->linger_n++] = now + s->m->node_linger_s; /* unneeded, not yet gone */
}

/* The cluster autoscaler removes the nodes unneeded for node_linger_s. */
static void linger_expire(sim_t *s, double now) {
    unsigned keep = 0;
    for (unsigned i = 0; i < s->linger_n; i++)
        if (now < s->linger_until[i] - 1e-9)
            s->linger_until[keep++] = s->linger_until[i];
    s->linger_n = keep;
}

/* splitmix64: stands in for the order of Kubernetes' random uid strings. */
static uint64_t uid_order(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* controller_utils.go logarithmicRankDiff: int64(math.Log2(nanoseconds
 * since t)), -1 for none. */
static long log_rank(double now_s, double t_s) {
    double ns = (now_s - t_s) * 1e9;
    return ns >= 1 ? (long)floor(log2(ns)) : -1;
}

/* Rules 6 and 8 of ActivePodsWithRanks.Less on two different times. */
static bool newer_first(double ta, double tb, const sim_victim_t *a, const sim_victim_t *b,
                        double now_s) {
    long d = log_rank(now_s, ta) - log_rank(now_s, tb);
    if (d == 0)
        return uid_order(a->uid) < uid_order(b->uid);
    return d < 0;
}

bool sim_victim_before(const sim_victim_t *a, const sim_victim_t *b, double now_s) {
    if (a->scheduled != b->scheduled) /* 1. unassigned < assigned */
        return !a->scheduled;
    if (a->running != b->running) /* 2. Pending < Unknown < Running */
        return !a->running;
    if (a->ready != b->ready) /* 3. not Ready < Ready */
        return !a->ready;
    /* 4. pod-deletion-cost: none set; 5. co-located pods: one per node */
    if (a->ready && a->ready_s != b->ready_s) /* 6. Ready for less time first */
        return newer_first(a->ready_s, b->ready_s, a, b, now_s);
    /* 7. container restarts: none */
    if (a->created_s != b->created_s) /* 8. newer first */
        return newer_first(a->created_s, b->created_s, a, b, now_s);
    return false;
}

static sim_victim_t victim_of(const replica_t *r) {
    return (sim_victim_t){.scheduled = r->state >= R_PULL,
                          .running = r->state >= R_LOAD,
                          .ready = r->state == R_SERVE,
                          .created_s = r->created_s,
                          .ready_s = r->ready_s,
                          .uid = r->uid};
}

/* Brings the live count to desired: creates, or deletes the pods the
 * ReplicaSet controller ranks first (sim_victim_before). A pod deleted
 * before it was Ready is a cancelled start; a Ready one drains (no new
 * requests; it ends when its engine is empty). */
static void reconcile(sim_t *s, int desired, double now) {
    int live = (int)count_state(s, is_live);
    while (live < desired && live < MAX_REPLICAS) {
        replica_create(s, now);
        live++;
    }
    while (live > desired) {
        int pick = -1;
        sim_victim_t pv = {0};
        for (unsigned i = 0; i < MAX_REPLICAS; i++) {
            if (!is_live(s->rep[i].state))
                continue;
            sim_victim_t v = victim_of(&s->rep[i]);
            if (pick < 0 || sim_victim_before(&v, &pv, now)) {
                pick = (int)i;
                pv = v;
            }
        }
        if (pick < 0)
            break;
        replica_t *r = &s->rep[pick];
        if (r->state == R_SERVE) {
            r->state = R_DRAIN;
        } else {
            s->cancelled_starts++;
            replica_release(s, r, now);
        }
        live--;
    }
}

/* Whether r can schedule a request with this many prompt tokens now. */
static bool can_schedule(const sim_t *s, const replica_t *r, double prompt) {
    if (r->running >= s->m->batch)
        return false;
    if (r->running == 0)
        return true;
    unsigned watermark = s->kv_blocks / 100;
    return kv_free(s, r) >= blocks_for(s, prompt) + watermark;
}

/* Request q's first token at at_s on replica r: its TTFT into the engine's
 * histogram, from when the engine received it (the gateway sent it at
 * admit_s) or from its arrival (ttft_seen). */
static void first_token(sim_t *s, replica_t *r, unsigned q, double at_s) {
    if (s->first_tok_s[q] >= 0)
        return;
    s->first_tok_s[q] = at_s;
    double from =
        s->o->ttft_seen == SIM_TTFT_SEEN_ARRIVAL ? s->t->reqs[q].arrival_s : s->admit_s[q];
    double v = at_s - from;
    sim_hist_observe(&ttft_layout, &r->ttft, v > 0 ? v : 0, 1);
}

static void schedule(sim_t *s, replica_t *r, unsigned q, double now) {
    r->run[r->running++] = q;
    s->blocks[q] = blocks_for(s, s->prefill_left[q] > 0 ? s->prefill_left[q] : kv_tokens_of(s, q));
    r->kv_used += s->blocks[q];
    if (s->admit_s[q] < 0)
        s->admit_s[q] = now;
    if (s->prefill_left[q] <= 0)
        first_token(s, r, q, now); /* no prompt: its first step decodes */
}

static void dispatch(sim_t *s, double now) {
    /* engines first: their preempted requests, head first */
    for (unsigned i = 0; i < MAX_REPLICAS; i++) {
        replica_t *r = &s->rep[i];
        if (r->state != R_SERVE && r->state != R_DRAIN)
            continue;
        while (r->nwait > 0 && can_schedule(s, r, s->prefill_left[r->wait[0]])) {
            unsigned q = r->wait[0];
            r->nwait--;
            memmove(r->wait, r->wait + 1, r->nwait * sizeof *r->wait);
            schedule(s, r, q, now);
        }
    }
    while (s->qhead < s->next_arrival) {
        size_t q = s->qhead;
        double prompt = s->prefill_left[q];
        int pick = -1;
        for (unsigned i = 0; i < MAX_REPLICAS; i++) {
            replica_t *r = &s->rep[i];
            if (r->state != R_SERVE || r->nwait > 0 || !can_schedule(s, r, prompt))
                continue;
            if (pick < 0 || r->running < s->rep[pick].running)
                pick = (int)i;
        }
        if (pick < 0)
            return;
        schedule(s, &s->rep[pick], (unsigned)q, now);
        s->qhead++;
    }
}

/* The newest running request of r back to the head of its engine's queue,
 * to be recomputed: its prompt and the tokens it generated are prefilled
 * again when it is scheduled next. */
static void preempt_newest(sim_t *s, replica_t *r) {
    unsigned q = r->run[--r->running];
    r->kv_used -= s->blocks[q];
    s->blocks[q] = 0;
    s->prefill_left[q] = (float)kv_tokens_of(s, q);
    memmove(r->wait + 1, r->wait, r->nwait * sizeof *r->wait);
    r->wait[0] = q;
    r->nwait++;
    s->preemptions++;
}

static void serve_step(sim_t *s, replica_t *r, double now, double dt) {
    if (r->running == 0)
        return;
    const sim_model_t *m = s->m;
    /* the KV blocks this step's decoding needs; preempt while they are not
     * free (a request alone on its replica is never preempted) */
    while (r->running > 1) {
        unsigned grow = 0;
        for (unsigned k = 0; k < r->running; k++) {
            unsigned q = r->run[k];
            if (s->prefill_left[q] > 0)
                continue;
            double take = fmin(s->gen_left[q], m->decode_seq_tok_s * dt);
            unsigned after = blocks_for(s, kv_tokens_of(s, q) + take);
            if (after > s->blocks[q])
                grow += after - s->blocks[q];
        }
        if (grow <= kv_free(s, r))
            break;
        preempt_newest(s, r);
    }
    r->busy_s += dt;
    double pre_want = 0, dec_want = 0;
    for (unsigned k = 0; k < r->running; k++) {
        unsigned q = r->run[k];
        if (s->prefill_left[q] > 0)
            pre_want += s->prefill_left[q];
        else /* a decode step costs the same for a request near its end:
              * the step time is the batch's (sim_decode_step_s) */
            dec_want += m->decode_seq_tok_s * dt;
    }
    if (pre_want > m->prefill_tok_s * dt)
        pre_want = m->prefill_tok_s * dt;
    double need_s = pre_want / m->prefill_tok_s + dec_want / m->decode_tok_s;
    double scale = need_s > dt ? dt / need_s : 1;
    double pre_budget = pre_want * scale;
    /* within the step prefill runs at prefill_tok_s x scale (first come
     * first served) and each decoding request at decode_seq_tok_s x scale:
     * a prompt ends, and a request finishes, part way through the step */
    double pre_rate = m->prefill_tok_s * scale, pre_used = 0;
    double tok_s = 1 / (m->decode_seq_tok_s * scale); /* one token's time: the ITL */
    unsigned keep = 0;
    for (unsigned k = 0; k < r->running; k++) {
        unsigned q = r->run[k];
        bool done = false;
        double end_s = now + dt;
        if (s->prefill_left[q] > 0) {
            double take = fmin(s->prefill_left[q], pre_budget);
            pre_budget -= take;
            pre_used += take;
            s->prefill_left[q] -= (float)take;
            if (s->prefill_left[q] <= 0.5f) {
                s->prefill_left[q] = 0;
                end_s = now + fmin(dt, pre_used / pre_rate);
                if (!s->prefilled[q]) {
                    s->prefilled[q] = 1;
                    r->prompt_tok += s->t->reqs[q].ctx_tokens;
                }
                first_token(s, r, q, end_s);
                done = s->gen_left[q] <= 0;
            }
        } else {
            if (s->dec_start_s[q] < 0)
                s->dec_start_s[q] = now;
            /* every decoding request at the same token rate, decode_seq_tok_s
             * x scale: its last tokens take part of a step (scaling what it
             * wants, min(left, full step), would let them trickle for
             * steps on end) */
            double take = fmin(s->gen_left[q], m->decode_seq_tok_s * dt * scale);
            s->gen_left[q] -= (float)take;
            r->gen_tok += take;
            sim_hist_observe(&itl_layout, &r->itl, tok_s, take);
            done = s->gen_left[q] <= 1e-3f;
            if (done)
                end_s = now + fmin(dt, take * tok_s);
            unsigned after = blocks_for(s, kv_tokens_of(s, q));
            if (!done && after > s->blocks[q]) {
                r->kv_used += after - s->blocks[q];
                s->blocks[q] = after;
            }
        }
        if (done) {
            s->done_s[q] = end_s;
            r->kv_used -= s->blocks[q];
            s->blocks[q] = 0;
            r->completed++;
            s->completed++;
        } else {
            r->run[keep++] = q;
        }
    }
    r->running = keep;
}

/* What production would expose now: the pod list, NVML, the engines'
 * /metrics, the gateway queue. */
static void take_sample(sim_t *s, double now) {
    sim_signals_t *x = &s->ring[s->ring_head];
    s->ring_head = (s->ring_head + 1) % s->ring_cap;
    if (s->ring_n < s->ring_cap)
        s->ring_n++;
    x->t_s = now;
    x->pod_count = 0;
    double period = s->p->signal_period_s;
    for (unsigned i = 0; i < MAX_REPLICAS; i++) {
        replica_t *r = &s->rep[i];
        if (r->state == R_FREE)
            continue;
        sim_pod_t *pd = &x->pods[x->pod_count++];
        memset(pd, 0, sizeof *pd);
        pd->created_s = r->created_s;
        pd->scheduled_s = r->scheduled_s;
        pd->running_s = r->running_s;
        pd->ready_s = r->state == R_SERVE || r->state == R_DRAIN ? r->ready_s : -1;
        pd->uid = r->uid;
        pd->ready = r->state == R_SERVE;
        pd->scheduled = has_node(r->state);
        if (pd->scheduled) {
            double u = r->busy_s / period * 100;
            pd->gpu_util_pct = u > 100 ? 100 : u;
        }
        r->busy_s = 0;
        pd->engine_up = r->state == R_SERVE || r->state == R_DRAIN;
        if (pd->engine_up) {
            pd->completed = r->completed;
            pd->prompt_tokens = r->prompt_tok;
            pd->gen_tokens = r->gen_tok;
            pd->running = r->running;
            pd->waiting = r->nwait;
            double u = (double)r->kv_used / s->kv_blocks;
            pd->kv_usage = u > 1 ? 1 : u;
            pd->ttft = r->ttft;
            pd->itl = r->itl;
        }
    }
    x->queue = (double)(s->next_arrival - s->qhead);
}

/* The sample KEDA sees at now: the newest taken at or before now - delay. */
static const sim_signals_t *seen_sample(const sim_t *s, double now) {
    double cut = now - s->p->signal_delay_s + 1e-9;
    for (unsigned k = 1; k <= s->ring_n; k++) {
        const sim_signals_t *x = &s->ring[(s->ring_head + s->ring_cap - k) % s->ring_cap];
        if (x->t_s <= cut)
            return x;
    }
    return NULL;
}

/* The engine and queue signals the product's sources would gather from x:
 * the gauges summed over the pods whose engine answers, the queue as is. */
static void demand_signals_from(const sim_t *s, const sim_signals_t *x, demand_signals_t *d) {
    memset(d, 0, sizeof *d);
    d->has_engine = trigger_uses_engine(&s->cfg);
    for (unsigned i = 0; i < x->pod_count; i++) {
        const sim_pod_t *pd = &x->pods[i];
        if (!pd->engine_up)
            continue;
        d->running += pd->running;
        d->waiting += pd->waiting;
        d->kv_percent += 100 * pd->kv_usage;
    }
    d->has_queue = s->cfg.demand.queue != QUEUE_NONE;
    d->queue = x->queue;
}

/* demandModel: queueing through the product's own path: what the
 * aggregator's hub hands demand_evaluate_inputs() from x. The pod list
 * shows every pod, Ready, starting (aged from its creationTimestamp) or
 * draining (deleted, still finishing its requests); the hub scrapes the
 * Ready and draining ones (their counters and gauges, polled at x's time);
 * the queue is one more source. */
static void evaluate_queueing(sim_t *s, const sim_signals_t *x, eval_result_t *out) {
    demand_source_t engines[SIM_MAX_PODS];
    demand_pod_t pods[SIM_MAX_PODS];
    char names[SIM_MAX_PODS][32]; /* "ns/name": the engine's identity */
    unsigned ne = 0, np = 0;
    mono_ns_t at = (mono_ns_t)(x->t_s * 1e9) + NS_PER_SEC;
    uint64_t interval = (uint64_t)(s->p->signal_period_s * 1e9);
    for (unsigned i = 0; i < x->pod_count; i++) {
        const sim_pod_t *pd = &x->pods[i];
        bool draining = pd->engine_up && !pd->ready; /* deleted, finishing its requests */
        uint64_t id = pd->uid;
        if (!draining) {
            demand_pod_t *dp = &pods[np++];
            *dp = (demand_pod_t){.id = id, .ready = pd->ready, .age_s = x->t_s - pd->created_s};
            /* its start by stage, as the aggregator reads it from the pod's
             * status (src/server/aggregator.c scan_pod) */
            if (pd->ready && pd->scheduled_s >= 0 && pd->running_s >= 0 && pd->ready_s >= 0) {
                dp->start.has_stages = true;
                dp->start.stage_s[0] = pd->scheduled_s - pd->created_s;
                dp->start.stage_s[1] = pd->running_s - pd->scheduled_s;
                dp->start.stage_s[2] = pd->ready_s - pd->running_s;
            } else if (!pd->ready) {
                double since = pd->scheduled_s < 0 ? pd->created_s
                               : pd->running_s < 0 ? pd->scheduled_s
                                                   : pd->running_s;
                dp->start.stage = pd->scheduled_s < 0 ? QM_STAGE_NODE
                                  : pd->running_s < 0 ? QM_STAGE_IMAGE
                                                      : QM_STAGE_WEIGHTS;
                dp->start.stage_age_s = x->t_s > since ? x->t_s - since : 0;
                /* waiting for a node the cluster autoscaler provisions:
                 * the scheduler says Unschedulable meanwhile */
                dp->start.waiting_for_node = pd->scheduled_s < 0;
            }
        }
        if (!pd->ready && !draining)
            continue;
        demand_source_t *v = &engines[ne++];
        memset(v, 0, sizeof *v);
        v->state = DEMAND_SOURCE_READING;
        snprintf(names[ne - 1], sizeof names[ne - 1], "ml/llama-%016llx", (unsigned long long)id);
        v->name = names[ne - 1];
        v->last_ok = at;
        v->interval_ns = interval;
        v->timeout_ns = 2 * NS_PER_SEC;
        v->draining = draining;
        engine_reading_t *r = &v->reading;
        r->has_waiting = r->has_running = r->has_kv = true;
        r->waiting = pd->waiting;
        r->running = pd->running;
        r->kv_percent = 100 * pd->kv_usage;
        r->has_completed = r->has_tokens = true;
        r->completed_total = pd->completed;
        r->prompt_tokens_total = pd->prompt_tokens;
        r->generation_tokens_total = pd->gen_tokens;
    }
    demand_inputs_t in;
    demand_learned_t learned = {NULL, NULL, NULL};
    memset(&in, 0, sizeof in);
    in.pods_status = EVAL_OK;
    in.engines = engines;
    in.nengines = ne;
    in.has_pods = true;
    in.pods = pods;
    in.npods = np;
    learned.model = &s->dm;
    if (s->cfg.demand.queue != QUEUE_NONE) {
        in.has_queue_source = true;
        in.queue.state = DEMAND_SOURCE_READING;
        in.queue.name = "queue";
        in.queue.last_ok = at;
        in.queue.interval_ns = interval;
        in.queue.timeout_ns = 2 * NS_PER_SEC;
        in.queue.queue = x->queue;
    }
    if (s->cfg.demand.slo_mask) {
        /* the hub's windows over the Ready pods' histograms: TTFT and the
         * inter-token latency (vLLM's TPOT); the engine exports no E2E or
         * queue-time histogram here */
        sim_latency_t ttft, tpot;
        double win = s->cfg.demand.window_s ? s->cfg.demand.window_s : 30;
        sim_latency_update(s->lat, x, win, &ttft, &tpot);
        in.latency[SLO_TTFT] =
            (demand_latency_t){ttft.known, ttft.count, ttft.p50_s, ttft.p90_s, ttft.p99_s};
        in.latency[SLO_TPOT] =
            (demand_latency_t){tpot.known, tpot.count, tpot.p50_s, tpot.p90_s, tpot.p99_s};
    }
    demand_evaluate_inputs(&s->cfg, &in, &learned, at, NULL, out);
}

/* The product's evaluation of the policy's trigger on one sample. */
static void evaluate(sim_t *s, const sim_signals_t *x, double now, eval_result_t *out) {
    eval_result_t gpu;
    bool need_gpu = s->cfg.demand.type == DEMAND_NONE || trigger_uses_gpu(&s->cfg);
    if (need_gpu) {
        double util[SIM_MAX_PODS];
        unsigned gpus = 0;
        for (unsigned i = 0; i < x->pod_count; i++)
            if (x->pods[i].scheduled)
                util[gpus++] = x->pods[i].gpu_util_pct;
        snapshot_t *sn = s->snap;
        sn->taken_mono = (mono_ns_t)(now * 1e9) + NS_PER_SEC;
        unsigned n = 0;
        if (s->p->node_local) {
            /* One DaemonSet pod answers with its node; KEDA reaches them in turn. */
            if (gpus) {
                sn->gpus[0].gpu_util_pct = (unsigned)lround(util[s->rr++ % gpus]);
                n = 1;
            }
        } else {
            for (unsigned i = 0; i < gpus; i++)
                sn->gpus[i].gpu_util_pct = (unsigned)lround(util[i]);
            n = gpus;
        }
        sn->gpu_count = n;
        evaluator_run(&s->cfg, sn, sn->taken_mono, 10 * NS_PER_SEC, &gpu);
        if (s->cfg.demand.type == DEMAND_NONE) {
            *out = gpu;
            return;
        }
    }
    if ((s->cfg.demand.type == DEMAND_COMPOSITE && s->cfg.demand.sizing == DEMAND_MODEL_QUEUEING) ||
        s->cfg.demand.type == DEMAND_SLO) {
        /* evaluated up to three times per sample (push, poll, sync): the
         * model ignores a repeated reading, and a pod is seen turning Ready
         * once, as in the hub */
        evaluate_queueing(s, x, out);
        return;
    }
    demand_signals_t d;
    demand_signals_from(s, x, &d);
    demand_evaluate(&s->cfg, &d, need_gpu ? &gpu : NULL, out);
}

static int cmp_double(const void *a, const void *b);

/*
 * The online ideal's replicas at now, from the truth of the present: lam,
 * the work arrived over the last window per second; B, the work queued
 * (gateway and engine queues); the pods and when each starting one will
 * serve. Over the horizon H = cold start + drain it must do B + lam x H;
 * a serving pod does util x H of it, a starting one util x (H - time to
 * serve), a new one util x drain. Replicas: the fewest pods, serving first
 * and then the soonest starting, that cover it, plus new ones for what
 * they cannot; never fewer than lam / util; the most of that over the
 * last hold seconds (scale-down delay). It knows no future arrival.
 */
static int ideal_desired(sim_t *s, double now) {
    const sim_policy_t *p = s->p;
    const sim_model_t *m = s->m;
    while (s->win_lo < s->next_arrival &&
           s->t->reqs[s->win_lo].arrival_s <= now - p->ideal_window_s) {
        s->win_work -= sim_request_work(m, &s->t->reqs[s->win_lo]);
        s->win_lo++;
    }
    if (s->win_lo == s->next_arrival)
        s->win_work = 0; /* no float drift when the window empties */
    double backlog = 0;
    for (size_t q = s->qhead; q < s->next_arrival; q++)
        backlog += sim_request_work(m, &s->t->reqs[q]);
    for (unsigned i = 0; i < MAX_REPLICAS; i++)
        for (unsigned k = 0; k < s->rep[i].nwait; k++)
            backlog += sim_request_work(m, &s->t->reqs[s->rep[i].wait[k]]);
    double lam = s->win_work / p->ideal_window_s, u = p->ideal_util;
    double cs = m->node_s + m->image_s + m->weights_s;
    double horizon = cs + p->ideal_drain_s;
    double due = backlog + lam * horizon;
    /* the pods in the order they serve: ready ones (0 s), then starting ones */
    double wait_s[MAX_REPLICAS];
    unsigned np = 0;
    for (unsigned i = 0; i < MAX_REPLICAS; i++) {
        const replica_t *r = &s->rep[i];
        if (r->state == R_SERVE)
            wait_s[np++] = 0;
        else if (r->state >= R_PROVISION && r->state <= R_LOAD) {
            /* the phases left: the current one's end, then the later ones */
            double left = r->phase_end_s - now;
            if (r->state == R_PROVISION)
                left += m->image_s + m->weights_s;
            else if (r->state == R_PULL)
                left += m->weights_s;
            wait_s[np++] = left > 0 ? left : 0;
        }
    }
    qsort(wait_s, np, sizeof *wait_s, cmp_double);
    int want = 0;
    double supply = 0;
    while (supply + 1e-9 < due && (unsigned)want < np) {
        double w = horizon - wait_s[want];
        supply += u * (w > 0 ? w : 0);
        want++;
    }
    if (supply + 1e-9 < due)
        want += (int)ceil((due - supply) / (u * p->ideal_drain_s) - 1e-9);
    int base = lam > 1e-12 ? (int)ceil(lam / u - 1e-9) : 0;
    if (want < base)
        want = base;
    size_t k = (size_t)now;
    s->ideal_hist[k] = want;
    size_t hold = (size_t)p->ideal_hold_s;
    for (size_t j = k > hold ? k - hold : 0; j < k; j++)
        if (s->ideal_hist[j] > want)
            want = s->ideal_hist[j];
    return want;
}

static int parse_policy(sim_t *s, char *err, size_t errlen) {
    metadata_pair_t pairs[SIM_MAX_META + 2];
    const sim_policy_t *p = s->p;
    if (p->meta_count > SIM_MAX_META)
        return kgs_seterr(err, errlen, KGS_EINVAL, "policy %c: too many metadata keys", p->id);
    unsigned n = 0;
    for (unsigned i = 0; i < p->meta_count; i++, n++) {
        pairs[n].key = p->meta[i][0];
        pairs[n].key_len = strlen(p->meta[i][0]);
        pairs[n].value = p->meta[i][1];
        pairs[n].value_len = strlen(p->meta[i][1]);
    }
    /* The sweep's queueing-model knobs, as the keys a user would write. */
    char util[32], drain[32];
    if (p->qm_util > 0) {
        snprintf(util, sizeof util, "%g", p->qm_util);
        pairs[n++] = (metadata_pair_t){.key = "targetUtilization",
                                       .key_len = strlen("targetUtilization"),
                                       .value = util,
                                       .value_len = strlen(util)};
    }
    if (p->qm_drain_s > 0) {
        snprintf(drain, sizeof drain, "%.0f", p->qm_drain_s);
        pairs[n++] = (metadata_pair_t){.key = "drainSeconds",
                                       .key_len = strlen("drainSeconds"),
                                       .value = drain,
                                       .value_len = strlen(drain)};
    }
    char msg[512];
    if (trigger_config_parse(pairs, n, &s->cfg, msg, sizeof msg))
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
static int *oracle_schedule(const sim_t *s, double end_s, size_t *len) {
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
    *len = n;
    return sched;
}

size_t sim_floor(const trace_t *t, const sim_model_t *m, double slo_s, double idle_s) {
    /* a policy that scaled to zero just before a wake may find its node
     * lingering: with a linger the wake can pay the weights only */
    double cs = m->warm_pool > 0 || m->node_linger_s > 0 ? m->weights_s
                                                         : m->node_s + m->image_s + m->weights_s;
    double window = cs - slo_s;
    size_t n = 0;
    if (!(window > 0))
        return 0;
    double wake = 0;
    for (size_t i = 0; i < t->count; i++) {
        double a = t->reqs[i].arrival_s;
        if (i == 0 || a - t->reqs[i - 1].arrival_s >= idle_s)
            wake = a;
        if (a < wake + window)
            n++;
    }
    return n;
}

void sim_result_deinit(sim_result_t *r) {
    if (!r)
        return;
    free(r->replicas);
    free(r->serving);
    r->replicas = r->serving = NULL;
}

/* The table's latency columns from the per-request times; scratch has room
 * for every request. */
static void latency_results(const sim_t *s, double end, double *scratch, sim_result_t *out) {
    const trace_t *t = s->t;
    double ttft_obj = sim_ttft_objective_s(s->m, s->o), tpot_obj = sim_tpot_objective_s(s->m, s->o);
    out->ttft_slo_s = ttft_obj;
    out->tpot_slo_s = tpot_obj;
    size_t ttft_ok = 0, both_ok = 0, ntpot = 0, tpot_ok = 0;
    for (size_t i = 0; i < t->count; i++) {
        double f = s->first_tok_s[i] >= 0 ? s->first_tok_s[i] : end;
        double v = f - t->reqs[i].arrival_s;
        scratch[i] = v > 0 ? v : 0;
        bool ok = s->first_tok_s[i] >= 0 && scratch[i] <= ttft_obj + 1e-9;
        ttft_ok += ok;
        if (s->done_s[i] >= 0 && s->dec_start_s[i] >= 0 && t->reqs[i].gen_tokens > 0) {
            double tp = (s->done_s[i] - s->dec_start_s[i]) / t->reqs[i].gen_tokens;
            bool tok = tp <= tpot_obj + 1e-9;
            tpot_ok += tok;
            both_ok += ok && tok;
            ntpot++;
        } else if (t->reqs[i].gen_tokens == 0 && s->done_s[i] >= 0) {
            both_ok += ok;
        }
    }
    qsort(scratch, t->count, sizeof *scratch, cmp_double);
    out->ttft_p50_s = pct(scratch, t->count, 0.50);
    out->ttft_p90_s = pct(scratch, t->count, 0.90);
    out->ttft_p99_s = pct(scratch, t->count, 0.99);
    size_t n = 0;
    for (size_t i = 0; i < t->count; i++)
        if (s->done_s[i] >= 0 && s->dec_start_s[i] >= 0 && t->reqs[i].gen_tokens > 0)
            scratch[n++] = (s->done_s[i] - s->dec_start_s[i]) / t->reqs[i].gen_tokens;
    qsort(scratch, n, sizeof *scratch, cmp_double);
    out->tpot_p50_s = pct(scratch, n, 0.50);
    out->tpot_p90_s = pct(scratch, n, 0.90);
    out->tpot_p99_s = pct(scratch, n, 0.99);
    out->ttft_ok_share = t->count ? (double)ttft_ok / (double)t->count : 0;
    out->tpot_ok_share = ntpot ? (double)tpot_ok / (double)ntpot : 0;
    out->both_ok_share = t->count ? (double)both_ok / (double)t->count : 0;
}

/* Checks the model, options and policy before a run. */
static int check_run(const sim_model_t *m, const sim_policy_t *p, const sim_options_t *o, char *err,
                     size_t errlen) {
    if (m->batch < 1 || m->batch > MAX_BATCH || !(m->prefill_tok_s > 0) || !(m->decode_tok_s > 0) ||
        !(m->decode_seq_tok_s > 0) || m->kv_block < 1 || !(m->kv_tokens >= m->kv_block) ||
        !(m->kv_tokens / m->kv_block < 1e9) || !(o->dt_s > 0) || p->max_replicas < 1 ||
        p->max_replicas > MAX_REPLICAS / 2 || !(p->signal_period_s >= o->dt_s) ||
        !(m->node_linger_s >= 0 && m->node_linger_s <= 86400))
        return kgs_seterr(err, errlen, KGS_EINVAL, "policy %c: parameter out of range", p->id);
    if (p->kind == SIM_POLICY_IDEAL &&
        (!(p->ideal_util > 0 && p->ideal_util <= 1) || !(p->ideal_drain_s > 0) ||
         !(p->ideal_window_s >= 1) || !(p->ideal_hold_s >= 0) || p->ideal_hold_s > 86400))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "policy %c: online ideal util %g (0, 1], drain %g s (> 0), window %g s "
                          "(>= 1), hold %g s (0 .. 86400)",
                          p->id, p->ideal_util, p->ideal_drain_s, p->ideal_window_s,
                          p->ideal_hold_s);
    return 0;
}

/* Frees what sim_alloc allocated (any of it NULL); s may be NULL. */
static void sim_free(sim_t *s) {
    if (!s)
        return;
    free(s->first_tok_s);
    free(s->dec_start_s);
    free(s->done_s);
    free(s->lat);
    snapshot_unref(s->snap);
    free(s->ring);
    free(s->gen_left);
    free(s->cold);
    free(s->prefilled);
    free(s->blocks);
    free(s->ideal_hist);
    free(s->prefill_left);
    free(s->admit_s);
    free(s->run_store);
    free(s);
}

/* The state of one run, allocated and initialised, and out's timeline
 * arrays; NULL when out of memory (out's arrays are then released by the
 * caller through sim_result_deinit). */
static sim_t *sim_alloc(const trace_t *t, const sim_model_t *m, const sim_policy_t *p,
                        const sim_options_t *o, double end, sim_result_t *out) {
    sim_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->t = t;
    s->m = m;
    s->p = p;
    s->o = o;
    s->kv_blocks = (unsigned)(m->kv_tokens / m->kv_block);
    out->points = (size_t)(end / o->timeline_step_s) + 1;
    out->replicas = calloc(out->points, sizeof *out->replicas);
    out->serving = calloc(out->points, sizeof *out->serving);
    /* per replica: batch running + batch waiting (running + waiting <= batch) */
    s->run_store = malloc((size_t)MAX_REPLICAS * 2 * m->batch * sizeof *s->run_store);
    s->admit_s = malloc((t->count + 1) * sizeof *s->admit_s);
    s->prefill_left = malloc((t->count + 1) * sizeof *s->prefill_left);
    s->gen_left = malloc((t->count + 1) * sizeof *s->gen_left);
    s->cold = calloc(t->count + 1, 1);
    s->prefilled = calloc(t->count + 1, 1);
    s->blocks = calloc(t->count + 1, sizeof *s->blocks);
    s->first_tok_s = malloc((t->count + 1) * sizeof *s->first_tok_s);
    s->dec_start_s = malloc((t->count + 1) * sizeof *s->dec_start_s);
    s->done_s = malloc((t->count + 1) * sizeof *s->done_s);
    s->lat = malloc(sizeof *s->lat);
    /* the ring holds what the delay needs: one sample per period over it, and the newest */
    s->ring_cap = (unsigned)ceil(p->signal_delay_s / p->signal_period_s) + 2;
    if (s->ring_cap > 4096)
        s->ring_cap = 4096;
    s->ring = malloc(s->ring_cap * sizeof *s->ring);
    s->snap = snapshot_new(MAX_REPLICAS, 0);
    if (p->kind == SIM_POLICY_IDEAL)
        s->ideal_hist = calloc((size_t)end + 2, sizeof *s->ideal_hist);
    if (!out->replicas || !out->serving || !s->run_store || !s->admit_s || !s->prefill_left ||
        !s->gen_left || !s->cold || !s->prefilled || !s->blocks || !s->ring || !s->snap ||
        !s->first_tok_s || !s->dec_start_s || !s->done_s || !s->lat ||
        (p->kind == SIM_POLICY_IDEAL && !s->ideal_hist)) {
        sim_free(s);
        return NULL;
    }
    for (unsigned i = 0; i < MAX_REPLICAS; i++) {
        s->rep[i].run = s->run_store + (size_t)i * 2 * m->batch;
        s->rep[i].wait = s->rep[i].run + m->batch;
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
        s->first_tok_s[i] = s->dec_start_s[i] = s->done_s[i] = -1;
    }
    sim_latency_init(s->lat);
    stability_init(&s->stab);
    s->pool_free = m->warm_pool;
    return s;
}

/* KEDA and the HPA of a KEDA policy's run, and when each acts next. */
typedef struct {
    hpa_t hpa;
    hpa_keda_t keda;
    double next_sample, next_poll, next_sync;
} keda_ctl_t;

static void keda_ctl_init(keda_ctl_t *c, const sim_policy_t *p) {
    if (p->hpa_behavior) {
        hpa_init(&c->hpa, p->min_replicas, p->max_replicas);
        c->hpa.up_pods = p->hpa_up_pods;
        c->hpa.up_percent = p->hpa_up_percent;
        c->hpa.up_period_s = p->hpa_up_period_s;
        c->hpa.down_window_s = p->hpa_down_window_s;
    } else {
        hpa_init_legacy(&c->hpa, p->min_replicas, p->max_replicas);
    }
    hpa_keda_init(&c->keda, p->polling_s, p->cooldown_s, p->min_replicas, p->max_replicas);
    c->next_sample = 0;
    c->next_poll = 0;
    c->next_sync = c->hpa.sync_s;
}

/* One HPA sync at now: the trigger's value on the sample KEDA sees, through
 * the HPA. Returns the replicas to write (desired on entry: the current). */
static int hpa_step(sim_t *s, keda_ctl_t *c, double now, int desired) {
    const sim_signals_t *x = seen_sample(s, now);
    if (!x || desired < 1) {
        stability_break(&s->stab); /* the HPA is off at zero replicas */
        return desired;
    }
    eval_result_t ev;
    evaluate(s, x, now, &ev);
    if (ev.status != EVAL_OK) {
        s->eval_errors++;
        stability_break(&s->stab);
        return desired;
    }
    double v = ev.value, target = s->cfg.target_value;
    if (s->cfg.demand.forecast_trend)
        v = forecast_ahead(&s->fc, now, (double)s->cfg.demand.cold_start_s, v);
    int ready = (int)count_state(s, is_serving);
    /* what the value KEDA hands the HPA asks for: the HPA's formula without
     * its tolerance band, before stabilisation, limits and clamps */
    stability_add(&s->stab, c->hpa.type == HPA_VALUE
                                ? hpa_replicas_value(v, target, desired, ready, 0)
                                : hpa_replicas_average_value(v, target, desired, 0));
    return hpa_sync(&c->hpa, now, desired, ready, v, target);
}

/* KEDA's part of one step at now: a signal sample (and external-push's
 * `true`), the polling loop (activation, cooldown), the HPA's sync. Returns
 * the replicas to write (desired on entry: the live count). */
static int keda_step(sim_t *s, keda_ctl_t *c, double now, int desired) {
    const sim_policy_t *p = s->p;
    if (now + 1e-9 >= c->next_sample) {
        take_sample(s, now);
        c->next_sample += p->signal_period_s;
        const sim_signals_t *x = seen_sample(s, now);
        if (x && (p->push || s->cfg.demand.forecast_trend)) {
            eval_result_t ev;
            evaluate(s, x, now, &ev);
            if (ev.status == EVAL_OK && s->cfg.demand.forecast_trend)
                forecast_update(&s->fc, now, ev.value);
            if (ev.status == EVAL_OK && p->push && ev.active)
                desired = hpa_keda_poll(&c->keda, now, desired, true);
        }
    }
    if (now + 1e-9 >= c->next_poll) {
        c->next_poll += p->polling_s;
        const sim_signals_t *x = seen_sample(s, now);
        if (x) {
            eval_result_t ev;
            evaluate(s, x, now, &ev);
            if (ev.status == EVAL_OK)
                desired = hpa_keda_poll(&c->keda, now, desired, ev.active);
            else
                s->eval_errors++;
            if (desired == 0)
                stability_break(&s->stab); /* scaled to zero: the HPA stops */
        }
    }
    if (now + 1e-9 >= c->next_sync) {
        c->next_sync += c->hpa.sync_s;
        desired = hpa_step(s, c, now, desired);
    }
    return desired;
}

/* The requests arrived by now join the queue (marked cold when no replica
 * serves, which starts a wake). */
static void arrive(sim_t *s, double now) {
    const trace_t *t = s->t;
    while (s->next_arrival < t->count && t->reqs[s->next_arrival].arrival_s <= now) {
        if (count_state(s, is_serving) == 0) {
            s->cold[s->next_arrival] = 1;
            if (!s->waking) {
                s->waking = true;
                s->wake_start_s = t->reqs[s->next_arrival].arrival_s;
            }
        }
        s->win_work += sim_request_work(s->m, &t->reqs[s->next_arrival]);
        s->next_arrival++;
    }
}

/* Starting replicas move through their phases; a wake ends when one serves. */
static void start_up(sim_t *s, double now) {
    const sim_model_t *m = s->m;
    for (unsigned i = 0; i < MAX_REPLICAS; i++) {
        replica_t *r = &s->rep[i];
        while (r->state >= R_PROVISION && r->state <= R_LOAD && now >= r->phase_end_s) {
            if (r->state == R_PROVISION) {
                r->state = R_PULL;
                r->scheduled_s = r->phase_end_s;
                r->phase_end_s += m->image_s;
            } else if (r->state == R_PULL) {
                r->state = R_LOAD;
                r->running_s = r->phase_end_s;
                r->phase_end_s += m->weights_s;
            } else {
                r->state = R_SERVE;
                r->ready_s = now;
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
}

/* The fleet's work for one step: dispatch, serve, draining pods leave. */
static void serve(sim_t *s, double now) {
    dispatch(s, now);
    for (unsigned i = 0; i < MAX_REPLICAS; i++) {
        replica_t *r = &s->rep[i];
        if (r->state == R_SERVE || r->state == R_DRAIN)
            serve_step(s, r, now, s->o->dt_s);
        /* a draining pod ends when its engine is empty: nothing running and
         * nothing preempted waiting in its own queue */
        if (r->state == R_DRAIN && r->running == 0 && r->nwait == 0)
            replica_release(s, r, now);
    }
}

/* The table's queue-wait columns and counters, once the run has ended. */
static int wait_results(sim_t *s, double end, sim_result_t *out) {
    const trace_t *t = s->t;
    double *waits = malloc((t->count + 1) * sizeof *waits);
    double *warm = malloc((t->count + 1) * sizeof *warm);
    if (!waits || !warm) {
        free(waits);
        free(warm);
        return KGS_ENOMEM;
    }
    size_t miss = 0, nwarm = 0, warm_miss = 0;
    out->cold_requests = 0;
    for (size_t i = 0; i < t->count; i++) {
        double w =
            s->admit_s[i] >= 0 ? s->admit_s[i] - t->reqs[i].arrival_s : end - t->reqs[i].arrival_s;
        if (s->admit_s[i] < 0)
            out->unfinished++;
        if (w < 0)
            w = 0;
        waits[i] = w;
        if (w > s->o->slo_wait_s)
            miss++;
        if (s->cold[i])
            out->cold_requests++;
        if (!s->cold[i]) {
            warm[nwarm++] = w;
            if (w > s->o->slo_wait_s)
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
    out->preemptions = s->preemptions;
    out->completed = s->completed;
    out->cancelled_starts = s->cancelled_starts;
    out->stability = s->stab;
    latency_results(s, end, waits, out);
    free(waits);
    free(warm);
    return 0;
}

/* Bills the step and writes the timeline point it falls on. */
static void account(sim_t *s, double now, size_t *next_point, sim_result_t *out) {
    unsigned billed = count_state(s, is_billed) + s->pool_free + s->linger_n;
    s->gpu_s += billed * s->o->dt_s;
    unsigned all = count_state(s, is_billed);
    if (all > out->peak_replicas)
        out->peak_replicas = all;
    if (*next_point < out->points && now + 1e-9 >= *next_point * s->o->timeline_step_s) {
        out->replicas[*next_point] = (float)count_state(s, is_billed);
        out->serving[*next_point] = (float)count_state(s, is_serving);
        (*next_point)++;
    }
}

int sim_run(const trace_t *t, const sim_model_t *m, const sim_policy_t *p, const sim_options_t *o,
            sim_result_t *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    int rc = check_run(m, p, o, err, errlen);
    if (rc)
        return rc;
    double end = sim_end_s(t, o);
    sim_t *s = sim_alloc(t, m, p, o, end, out);
    if (!s) {
        sim_result_deinit(out);
        return KGS_ENOMEM;
    }
    rc = KGS_ENOMEM;
    int *sched = NULL;
    size_t sched_len = 0;
    keda_ctl_t ctl;
    keda_ctl_init(&ctl, p);
    if (p->kind == SIM_POLICY_KEDA) {
        rc = parse_policy(s, err, errlen);
        if (rc)
            goto fail;
        rc = KGS_ENOMEM;
        ctl.hpa.type = p->metric_type;
        demand_model_init(&s->dm);
        if (s->cfg.demand.forecast_trend &&
            forecast_init(&s->fc, p->forecast_alpha, p->forecast_beta)) {
            rc = kgs_seterr(err, errlen, KGS_EINVAL, "policy %c: forecast weights", p->id);
            goto fail;
        }
        for (int i = 0; i < p->min_replicas; i++)
            replica_create_ready(s, 0);
    } else if (p->kind == SIM_POLICY_ORACLE) {
        /* no replica at t = 0: it starts from zero like every policy */
        sched = oracle_schedule(s, end, &sched_len);
        if (!sched)
            goto fail;
    }

    size_t steps = (size_t)ceil(end / o->dt_s), next_point = 0;
    double next_ideal = 0, next_ideal_sync = 0;
    stability_t ideal_stab;
    stability_init(&ideal_stab);
    for (size_t step = 0; step <= steps; step++) {
        double now = (double)step * o->dt_s;
        arrive(s, now);
        linger_expire(s, now);
        start_up(s, now);
        serve(s, now);
        int live = (int)count_state(s, is_live);
        int desired = live;
        if (p->kind == SIM_POLICY_ORACLE) {
            /* the last step may lie past the last whole second of the grid */
            size_t k = (size_t)now;
            desired = sched[k < sched_len ? k : sched_len - 1];
        } else if (p->kind == SIM_POLICY_IDEAL) {
            if (now + 1e-9 >= next_ideal) {
                next_ideal += 1;
                desired = ideal_desired(s, now);
                /* its stability as an HPA sync every 15 s would read it
                 * (none at zero, as the HPA is off there): a reference
                 * for the policies' reversals, the traffic's own turns */
                if (now + 1e-9 >= next_ideal_sync) {
                    next_ideal_sync += IDEAL_SYNC_S;
                    if (desired > 0)
                        stability_add(&ideal_stab, desired);
                    else
                        stability_break(&ideal_stab);
                }
            }
        } else {
            desired = keda_step(s, &ctl, now, desired);
        }
        if (desired > p->max_replicas)
            desired = p->max_replicas;
        if (desired != live)
            reconcile(s, desired, now);
        account(s, now, &next_point, out);
    }
    out->ideal_reversals = ideal_stab.reversals;
    if (s->waking) {
        double d = end - s->wake_start_s;
        s->wakes++;
        s->wake_sum_s += d;
        if (d > s->wake_max_s)
            s->wake_max_s = d;
    }
    rc = wait_results(s, end, out);
fail:
    free(sched);
    sim_free(s);
    if (rc)
        sim_result_deinit(out);
    return rc;
}
