/*
 * cold_start.c - one workload's cold starts (see the header).
 *
 * DESIGN
 * A round rebuilds the workload's pod list (id = the uid's hash, what
 * state it was left in) and compares it with the last round's: a pod is
 * looked up there by binary search, and the pods of the last round that
 * this one did not see left while starting. Pods carry no bookkeeping of
 * ours: the pod cache belongs to the Kubernetes client, and a workload is
 * the trigger's idea, not the pod's.
 */
#include "cluster/cold_start.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/hash.h"

enum { CS_STARTING = 0, CS_DONE = 1 };
enum { CS_EVENT_NONE = 0, CS_EVENT_COMPLETED, CS_EVENT_FAILED };

struct cold_start_pod {
    uint64_t id;
    uint8_t state;                  /* CS_STARTING, CS_DONE */
    uint8_t trouble;                /* STARTING: the worst trouble seen; FAILED: the reason */
    uint8_t event;                  /* what this round counts for it */
    float stage_s[POD_STAGE_COUNT]; /* COMPLETED: its stages */
};

static const double bounds[COLD_START_BUCKETS] = {1,  2.5, 5,   10,  20,  30,  45,
                                                  60, 90,  120, 180, 300, 600, 1200};

const double *cold_start_bucket_bounds(void) {
    return bounds;
}

void cold_start_init(cold_start_t *r) {
    memset(r, 0, sizeof *r);
}

void cold_start_deinit(cold_start_t *r) {
    free(r->_prev);
    free(r->_cur);
    memset(r, 0, sizeof *r);
}

static int by_id(const void *a, const void *b) {
    uint64_t x = ((const struct cold_start_pod *)a)->id, y = ((const struct cold_start_pod *)b)->id;
    return x < y ? -1 : x > y;
}

static const struct cold_start_pod *find(const struct cold_start_pod *v, size_t n, uint64_t id) {
    struct cold_start_pod key = {.id = id};
    return n ? bsearch(&key, v, n, sizeof *v, by_id) : NULL;
}

void cold_start_round_begin(cold_start_t *r) {
    r->_ncur = 0;
    r->_in_round = true;
    r->_round_failed = false;
}

static struct cold_start_pod *push(cold_start_t *r) {
    if (r->_ncur == r->_capcur) {
        size_t cap = r->_capcur ? r->_capcur * 2 : 16;
        struct cold_start_pod *v =
            cap < SIZE_MAX / sizeof *v ? realloc(r->_cur, cap * sizeof *v) : NULL;
        if (!v) {
            r->_round_failed = true;
            return NULL;
        }
        r->_cur = v;
        r->_capcur = cap;
    }
    struct cold_start_pod *e = &r->_cur[r->_ncur++];
    memset(e, 0, sizeof *e);
    return e;
}

void cold_start_round_pod(cold_start_t *r, const pod_t *p) {
    if (!r->_in_round || r->_round_failed || !p->uid[0])
        return;
    uint64_t id = kgs_fnv1a(p->uid);
    const struct cold_start_pod *was = find(r->_prev, r->_nprev, id);
    struct cold_start_pod *e = push(r);
    if (!e)
        return;
    e->id = id;
    if (was && was->state == CS_DONE) {
        e->state = CS_DONE;
        return;
    }
    pod_trouble_t t = (pod_trouble_t)p->start.trouble;
    if (t == POD_TROUBLE_UNSCHEDULABLE && p->start.message && p->start.message[0])
        snprintf(r->unschedulable_message, sizeof r->unschedulable_message, "%s", p->start.message);
    bool gone = p->deleting || p->phase == POD_PHASE_FAILED || p->phase == POD_PHASE_SUCCEEDED;
    double st[POD_STAGE_COUNT];
    if (t != POD_TROUBLE_NONE && t != POD_TROUBLE_UNSCHEDULABLE) {
        e->state = CS_DONE;
        e->event = CS_EVENT_FAILED;
        e->trouble = (uint8_t)t;
    } else if (p->ready && !gone) {
        e->state = CS_DONE;
        if (pod_start_stages(p->created_unix, &p->start, st)) {
            e->event = CS_EVENT_COMPLETED;
            for (int k = 0; k < POD_STAGE_COUNT; k++)
                e->stage_s[k] = (float)st[k];
        }
    } else if (gone) {
        e->state = CS_DONE;
        /* deleted while it waited for a node: the node never came */
        if (t == POD_TROUBLE_UNSCHEDULABLE) {
            e->event = CS_EVENT_FAILED;
            e->trouble = (uint8_t)t;
        }
    } else {
        e->state = CS_STARTING;
        e->trouble = (uint8_t)t;
    }
}

static void count_failed(cold_start_t *r, pod_trouble_t t) {
    if ((unsigned)t >= POD_TROUBLE_COUNT || t == POD_TROUBLE_NONE)
        return;
    r->failed[t]++;
    r->last_failed = t;
}

static void count_completed(cold_start_t *r, const float stage_s[POD_STAGE_COUNT]) {
    for (int k = 0; k < POD_STAGE_COUNT; k++) {
        double v = stage_s[k];
        r->last[r->next][k] = v;
        size_t b = 0;
        while (b < COLD_START_BUCKETS && v > bounds[b])
            b++;
        r->hist[k][b]++;
        r->hist_sum[k] += v;
    }
    r->next = (r->next + 1) % COLD_START_KEEP;
    if (r->nlast < COLD_START_KEEP)
        r->nlast++;
    r->completed++;
}

int cold_start_round_end(cold_start_t *r) {
    if (!r->_in_round)
        return 0;
    r->_in_round = false;
    if (r->_round_failed) {
        r->_ncur = 0;
        return KGS_ENOMEM;
    }
    if (r->_ncur) /* qsort wants a non-NULL base even for 0 items */
        qsort(r->_cur, r->_ncur, sizeof *r->_cur, by_id);
    unsigned waiting = 0;
    for (size_t i = 0; i < r->_ncur; i++) {
        const struct cold_start_pod *e = &r->_cur[i];
        if (e->event == CS_EVENT_COMPLETED)
            count_completed(r, e->stage_s);
        else if (e->event == CS_EVENT_FAILED)
            count_failed(r, (pod_trouble_t)e->trouble);
        waiting += e->state == CS_STARTING && e->trouble == POD_TROUBLE_UNSCHEDULABLE;
    }
    /* Pods of the last round deleted while they started: their node never
     * came if they were waiting for one. */
    for (size_t i = 0; i < r->_nprev; i++) {
        const struct cold_start_pod *e = &r->_prev[i];
        if (e->state == CS_STARTING && !find(r->_cur, r->_ncur, e->id) &&
            e->trouble == POD_TROUBLE_UNSCHEDULABLE)
            count_failed(r, POD_TROUBLE_UNSCHEDULABLE);
    }
    r->waiting_for_node = waiting;
    /* this round becomes the last one; the old array holds the next */
    struct cold_start_pod *old = r->_prev;
    size_t old_n = r->_nprev; /* its capacity is at least that */
    r->_prev = r->_cur;
    r->_nprev = r->_ncur;
    r->_cur = old;
    r->_capcur = old ? old_n : 0;
    r->_ncur = 0;
    return 0;
}

unsigned cold_start_mean(const cold_start_t *r, double mean_s[POD_STAGE_COUNT]) {
    for (int k = 0; k < POD_STAGE_COUNT; k++) {
        double sum = 0;
        for (unsigned i = 0; i < r->nlast; i++)
            sum += r->last[i][k];
        mean_s[k] = r->nlast ? sum / r->nlast : NAN;
    }
    return r->nlast;
}

uint64_t cold_start_failed_total(const cold_start_t *r) {
    uint64_t n = 0;
    for (int t = 0; t < POD_TROUBLE_COUNT; t++)
        n += r->failed[t];
    return n;
}

/* ---- the workloads' records --------------------------------------------------------- */

void cold_start_book_init(cold_start_book_t *b) {
    memset(b, 0, sizeof *b);
}

void cold_start_book_deinit(cold_start_book_t *b) {
    for (size_t i = 0; i < b->n; i++) {
        cold_start_deinit(&b->w[i]->rec);
        free(b->w[i]);
    }
    memset(b, 0, sizeof *b);
}

const cold_start_workload_t *cold_start_book_find(const cold_start_book_t *b, const char *ns,
                                                  const char *selector) {
    for (size_t i = 0; i < b->n; i++)
        if (strcmp(b->w[i]->ns, ns) == 0 && strcmp(b->w[i]->selector, selector) == 0)
            return b->w[i];
    return NULL;
}

cold_start_workload_t *cold_start_book_get(cold_start_book_t *b, const char *ns,
                                           const char *selector, mono_ns_t now) {
    cold_start_workload_t *w = (cold_start_workload_t *)cold_start_book_find(b, ns, selector);
    if (w) {
        w->last_used = now;
        return w;
    }
    if (strlen(ns) > KUBE_NAMESPACE_MAX || strlen(selector) > LABEL_SELECTOR_MAX_LEN)
        return NULL;
    if (b->n == COLD_START_WORKLOADS) {
        size_t lru = 0;
        for (size_t i = 1; i < b->n; i++)
            if (b->w[i]->last_used < b->w[lru]->last_used)
                lru = i;
        w = b->w[lru];
        cold_start_deinit(&w->rec);
        b->w[lru] = b->w[--b->n];
    } else if (!(w = malloc(sizeof *w))) {
        return NULL;
    }
    memset(w, 0, sizeof *w);
    snprintf(w->ns, sizeof w->ns, "%s", ns);
    snprintf(w->selector, sizeof w->selector, "%s", selector);
    cold_start_init(&w->rec);
    w->last_used = now;
    b->w[b->n++] = w;
    return w;
}
