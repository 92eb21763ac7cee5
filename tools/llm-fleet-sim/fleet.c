/*
 * fleet.c - see fleet.h.
 *
 * Time advances in the caller's steps (tens of milliseconds of wall time):
 * a request that finishes inside a step is counted at the step's end, and
 * the gateway hands out work once per step. Both are far finer than the
 * scaler's one-second polls, so nothing the scaler reads depends on them.
 */
#include "fleet.h"

#include <math.h>
#include <string.h>

#include "core/err.h"

void fleet_params_default(fleet_params_t *p, unsigned slots) {
    p->slots = slots;
    p->cold_start_s = 90;
    p->max_num_seqs = 16;
    p->queue_threshold = 5;
    p->prefill_tps = 8000;
    p->decode_tps = 30;
    p->kv_capacity_tokens = 65536;
}

int fleet_params_validate(const fleet_params_t *p, char *err, size_t errlen) {
    if (p->slots < 1 || p->slots > FLEET_MAX_SLOTS)
        return kgs_seterr(err, errlen, KGS_EINVAL, "replica slots %u (valid: 1 to %d)", p->slots,
                          FLEET_MAX_SLOTS);
    if (!(p->cold_start_s > 0) || !isfinite(p->cold_start_s))
        return kgs_seterr(err, errlen, KGS_EINVAL, "cold start %g s (valid: finite, > 0)",
                          p->cold_start_s);
    if (p->max_num_seqs < 1 || p->max_num_seqs > FLEET_MAX_SEQS)
        return kgs_seterr(err, errlen, KGS_EINVAL, "max_num_seqs %u (valid: 1 to %d)",
                          p->max_num_seqs, FLEET_MAX_SEQS);
    if (p->queue_threshold < 1 || p->queue_threshold > FLEET_MAX_WAITING)
        return kgs_seterr(err, errlen, KGS_EINVAL, "gateway queue threshold %u (valid: 1 to %d)",
                          p->queue_threshold, FLEET_MAX_WAITING);
    if (!(p->prefill_tps > 0) || !isfinite(p->prefill_tps) || !(p->decode_tps > 0) ||
        !isfinite(p->decode_tps))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "prefill %g, decode %g tokens/s (valid: finite, > 0)", p->prefill_tps,
                          p->decode_tps);
    if (!(p->kv_capacity_tokens > 0) || !isfinite(p->kv_capacity_tokens))
        return kgs_seterr(err, errlen, KGS_EINVAL, "KV capacity %g tokens (valid: finite, > 0)",
                          p->kv_capacity_tokens);
    return 0;
}

void fleet_init(fleet_t *f, const fleet_params_t *p) {
    memset(f, 0, sizeof *f);
    f->p = *p;
}

/* ---- the gateway queue (a ring) ---------------------------------------- */

static bool gw_push_back(fleet_t *f, const load_request_t *r) {
    if (f->gw_len == FLEET_GATEWAY_MAX)
        return false;
    f->gateway[(f->gw_head + f->gw_len) % FLEET_GATEWAY_MAX] = *r;
    f->gw_len++;
    return true;
}

static bool gw_push_front(fleet_t *f, const load_request_t *r) {
    if (f->gw_len == FLEET_GATEWAY_MAX)
        return false;
    f->gw_head = (f->gw_head + FLEET_GATEWAY_MAX - 1) % FLEET_GATEWAY_MAX;
    f->gateway[f->gw_head] = *r;
    f->gw_len++;
    return true;
}

static load_request_t gw_pop(fleet_t *f) {
    load_request_t r = f->gateway[f->gw_head];
    f->gw_head = (f->gw_head + 1) % FLEET_GATEWAY_MAX;
    f->gw_len--;
    return r;
}

bool fleet_arrive(fleet_t *f, const load_request_t *r) {
    if (gw_push_back(f, r)) {
        if (f->gw_len > f->max_queue)
            f->max_queue = f->gw_len;
        return true;
    }
    f->rejected++;
    return false;
}

/* ---- scaling ----------------------------------------------------------- */

static void slot_create(fleet_t *f, unsigned i, double now_s) {
    fleet_slot_t *s = &f->slot[i];
    memset(s, 0, sizeof *s); /* a new pod: empty queues, counters from 0 */
    s->state = FLEET_STARTING;
    s->created_s = now_s;
    s->ready_s = now_s + f->p.cold_start_s;
}

/* The pod the ReplicaSet deletes first: not Ready before Ready; among those
 * not Ready the newest; among Ready ones the most recently Ready. */
static int slot_to_remove(const fleet_t *f) {
    int best = -1;
    for (unsigned i = 0; i < f->p.slots; i++) {
        const fleet_slot_t *s = &f->slot[i];
        if (s->state == FLEET_ABSENT)
            continue;
        if (best < 0) {
            best = (int)i;
            continue;
        }
        const fleet_slot_t *b = &f->slot[best];
        bool s_ready = s->state == FLEET_READY, b_ready = b->state == FLEET_READY;
        if (s_ready != b_ready) {
            if (!s_ready)
                best = (int)i;
            continue;
        }
        double ks = s_ready ? s->ready_s : s->created_s, kb = b_ready ? b->ready_s : b->created_s;
        if (ks >= kb) /* later, or the higher slot on a tie */
            best = (int)i;
    }
    return best;
}

/* The removed pod's requests go back to the head of the gateway queue, in
 * the order they had (running ones first: they were taken earlier). */
static void slot_remove(fleet_t *f, unsigned i) {
    fleet_slot_t *s = &f->slot[i];
    for (unsigned k = s->nwaiting; k-- > 0;) {
        if (gw_push_front(f, &s->waiting[k]))
            f->requeued++;
        else
            f->rejected++;
    }
    for (unsigned k = s->nrunning; k-- > 0;) {
        if (gw_push_front(f, &s->running[k].req))
            f->requeued++;
        else
            f->rejected++;
    }
    memset(s, 0, sizeof *s);
}

unsigned fleet_scale(fleet_t *f, double now_s, unsigned replicas) {
    if (replicas > f->p.slots)
        replicas = f->p.slots;
    for (unsigned i = 0; i < f->p.slots && f->replicas < replicas; i++) {
        if (f->slot[i].state == FLEET_ABSENT) {
            slot_create(f, i, now_s);
            f->replicas++;
        }
    }
    while (f->replicas > replicas) { /* bounded: one pod less per turn */
        int i = slot_to_remove(f);
        if (i < 0)
            break;
        slot_remove(f, (unsigned)i);
        f->replicas--;
    }
    return f->replicas;
}

/* ---- serving ----------------------------------------------------------- */

static void start_request(const fleet_params_t *p, fleet_slot_t *s, const load_request_t *r,
                          double now_s) {
    fleet_running_t *x = &s->running[s->nrunning++];
    memset(x, 0, sizeof *x);
    x->req = *r;
    x->start_s = now_s;
    x->prefill_end_s = now_s + r->prompt_tokens / p->prefill_tps;
    x->end_s = x->prefill_end_s + r->output_tokens / p->decode_tps;
}

/* Counts what the running requests did up to now_s and retires the
 * finished ones. */
static void serve(fleet_t *f, fleet_slot_t *s, double now_s) {
    for (unsigned k = 0; k < s->nrunning;) {
        fleet_running_t *x = &s->running[k];
        if (!x->prompt_counted && now_s >= x->prefill_end_s) {
            s->prompt_tokens_total += x->req.prompt_tokens;
            x->prompt_counted = true;
        }
        unsigned out = x->req.output_tokens;
        if (now_s < x->end_s) {
            double frac = (now_s - x->prefill_end_s) / (x->end_s - x->prefill_end_s);
            out = frac > 0 ? (unsigned)floor(frac * x->req.output_tokens) : 0;
        }
        if (out > x->output_done) {
            s->generation_tokens_total += out - x->output_done;
            x->output_done = out;
        }
        if (now_s < x->end_s) {
            k++;
            continue;
        }
        if (x->req.hit_max_tokens)
            s->success_length++;
        else
            s->success_stop++;
        f->completed++;
        s->running[k] = s->running[--s->nrunning]; /* order of running ones does not matter */
    }
    unsigned taken = 0;
    while (taken < s->nwaiting && s->nrunning < f->p.max_num_seqs)
        start_request(&f->p, s, &s->waiting[taken++], now_s);
    if (taken) {
        memmove(s->waiting, s->waiting + taken, (s->nwaiting - taken) * sizeof s->waiting[0]);
        s->nwaiting -= taken;
    }
}

/* The Ready replica with the least work that may take one more, or -1. */
static int pick_replica(const fleet_t *f) {
    int best = -1;
    unsigned best_load = 0;
    for (unsigned i = 0; i < f->p.slots; i++) {
        const fleet_slot_t *s = &f->slot[i];
        if (s->state != FLEET_READY || s->nwaiting >= f->p.queue_threshold)
            continue;
        unsigned load = s->nrunning + s->nwaiting;
        if (best < 0 || load < best_load) {
            best = (int)i;
            best_load = load;
        }
    }
    return best;
}

static void dispatch(fleet_t *f, double now_s) {
    while (f->gw_len > 0) { /* bounded: each turn takes one request or stops */
        int i = pick_replica(f);
        if (i < 0)
            return;
        fleet_slot_t *s = &f->slot[i];
        load_request_t r = gw_pop(f);
        if (now_s - r.arrive_s > f->max_wait_s)
            f->max_wait_s = now_s - r.arrive_s;
        if (s->nrunning < f->p.max_num_seqs)
            start_request(&f->p, s, &r, now_s);
        else
            s->waiting[s->nwaiting++] = r;
    }
}

uint32_t fleet_advance(fleet_t *f, double now_s) {
    uint32_t became_ready = 0;
    for (unsigned i = 0; i < f->p.slots; i++) {
        fleet_slot_t *s = &f->slot[i];
        if (s->state == FLEET_STARTING && now_s >= s->ready_s) {
            s->state = FLEET_READY;
            became_ready |= UINT32_C(1) << i;
        }
        if (s->state == FLEET_READY)
            serve(f, s, now_s);
    }
    dispatch(f, now_s);
    return became_ready;
}

void fleet_summary(const fleet_t *f, fleet_summary_t *out) {
    memset(out, 0, sizeof *out);
    out->queue = f->gw_len;
    out->replicas = f->replicas;
    for (unsigned i = 0; i < f->p.slots; i++) {
        const fleet_slot_t *s = &f->slot[i];
        if (s->state == FLEET_STARTING)
            out->starting++;
        if (s->state != FLEET_READY)
            continue;
        out->ready++;
        out->waiting += s->nwaiting;
        out->running += s->nrunning;
    }
}

double fleet_kv_usage(const fleet_t *f, unsigned slot) {
    if (slot >= f->p.slots)
        return 0;
    const fleet_slot_t *s = &f->slot[slot];
    double tokens = 0;
    for (unsigned k = 0; k < s->nrunning; k++) {
        const fleet_running_t *x = &s->running[k];
        tokens += (x->prompt_counted ? x->req.prompt_tokens : 0) + x->output_done;
    }
    double u = tokens / f->p.kv_capacity_tokens;
    return u > 1 ? 1 : u;
}

void fleet_reset_stats(fleet_t *f) {
    f->completed = f->rejected = f->requeued = 0;
    f->max_queue = f->gw_len;
    f->max_wait_s = 0;
}

double fleet_capacity_rps(const fleet_params_t *p, const load_t *l) {
    double prompt = (l->prompt_min + (double)l->prompt_max) / 2;
    /* outputs uniform in [min, max], each cut at max_tokens: the mean */
    double sum = 0;
    unsigned count = 0;
    for (unsigned o = l->output_min; o <= l->output_max && count < 1000000; o++, count++)
        sum += o < l->max_tokens ? o : l->max_tokens;
    double output = count ? sum / count : 0;
    return p->max_num_seqs / (prompt / p->prefill_tps + output / p->decode_tps);
}
