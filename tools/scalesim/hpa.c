/*
 * hpa.c - see hpa.h. Follows kubernetes/kubernetes
 * pkg/controller/podautoscaler/{replica_calculator,horizontal}.go:
 *
 * - the raw recommendation is stored every sync; the stabilised one is
 *   current, raised to the minimum recommendation of the scale-up window
 *   (0 s: the newest) and lowered to the maximum of the scale-down window
 *   (300 s), which is how a 5-minute dip never removes replicas early;
 * - the scale-up limit counts the replicas added within the current policy
 *   period (events strictly after now - period), so two syncs 15 s apart each
 *   get a fresh max(+4, +100 %);
 * - the default scale-down policy (100 % per 15 s) does not limit anything,
 *   so it is not modelled.
 */
#include "hpa.h"

#include <math.h>

static double milli(double v) {
    if (!isfinite(v) || v < 0)
        return 0;
    return round(v * 1000) / 1000;
}

static int ceil_int(double v) {
    if (!(v > 0))
        return 0;
    if (v > 1e9)
        return 1000000000;
    return (int)ceil(v - 1e-9);
}

int hpa_replicas_average_value(double total, double target, int current, double tolerance) {
    total = milli(total);
    if (!(target > 0))
        return current;
    if (current > 0) {
        double ratio = total / (target * current);
        if (fabs(1 - ratio) <= tolerance)
            return current;
    }
    return ceil_int(total / target);
}

int hpa_replicas_value(double value, double target, int current, int ready, double tolerance) {
    value = milli(value);
    if (!(target > 0))
        return current;
    double ratio = value / target;
    if (current == 0)
        return ceil_int(ratio);
    if (fabs(1 - ratio) <= tolerance)
        return current;
    return ceil_int(ratio * ready);
}

int hpa_scale_up_limit(int period_start, int pods, int percent) {
    int by_pods = period_start + pods;
    int by_pct = ceil_int(period_start * (1 + percent / 100.0));
    return by_pods > by_pct ? by_pods : by_pct;
}

void hpa_init(hpa_t *h, int min_replicas, int max_replicas) {
    h->min_replicas = min_replicas < 1 ? 1 : min_replicas;
    h->max_replicas = max_replicas < h->min_replicas ? h->min_replicas : max_replicas;
    h->tolerance = 0.1;
    h->sync_s = 15;
    h->down_window_s = 300;
    h->up_period_s = 15;
    h->up_pods = 4;
    h->up_percent = 100;
    h->type = HPA_AVERAGE_VALUE;
    h->legacy = false;
    h->_nrec = 0;
    h->_nup = 0;
}

void hpa_init_legacy(hpa_t *h, int min_replicas, int max_replicas) {
    hpa_init(h, min_replicas, max_replicas);
    h->legacy = true;
}

int hpa_legacy_scale_up_limit(int current) {
    /* scaleUpLimitFactor 2.0, scaleUpLimitMinimum 4.0 */
    return 2 * current > 4 ? 2 * current : 4;
}

/* Drops entries at or before cutoff (they are time-ordered). */
static void prune(double *t, int *v, unsigned *n, double cutoff) {
    unsigned k = 0;
    while (k < *n && t[k] <= cutoff)
        k++;
    if (k == 0)
        return;
    for (unsigned i = k; i < *n; i++) {
        t[i - k] = t[i];
        v[i - k] = v[i];
    }
    *n -= k;
}

static void push(double *t, int *v, unsigned *n, double now, int value) {
    if (*n == HPA_HISTORY) {
        for (unsigned i = 1; i < *n; i++) {
            t[i - 1] = t[i];
            v[i - 1] = v[i];
        }
        (*n)--;
    }
    t[*n] = now;
    v[*n] = value;
    (*n)++;
}

/* horizontal.go without a behavior: stabilizeRecommendation keeps the
 * highest recommendation of the downscale window (the newest included, so it
 * may lie above current), then convertDesiredReplicasWithRules clamps it to
 * [min, min(max, max(2 x current, 4))]. */
static int sync_legacy(hpa_t *h, double now_s, int current, int desired) {
    prune(h->_rec_t, h->_rec, &h->_nrec, now_s - h->down_window_s);
    push(h->_rec_t, h->_rec, &h->_nrec, now_s, desired);
    int rec = desired;
    for (unsigned i = 0; i < h->_nrec; i++)
        if (h->_rec[i] > rec)
            rec = h->_rec[i];
    int limit = hpa_legacy_scale_up_limit(current);
    int hi = h->max_replicas < limit ? h->max_replicas : limit;
    if (rec > hi)
        rec = hi;
    if (rec < h->min_replicas)
        rec = h->min_replicas;
    return rec;
}

int hpa_sync_desired(hpa_t *h, double now_s, int current, int desired) {
    if (h->legacy)
        return sync_legacy(h, now_s, current, desired);
    prune(h->_rec_t, h->_rec, &h->_nrec, now_s - h->down_window_s);
    push(h->_rec_t, h->_rec, &h->_nrec, now_s, desired);
    int down = desired;
    for (unsigned i = 0; i < h->_nrec; i++)
        if (h->_rec[i] > down)
            down = h->_rec[i];
    int rec = current;
    if (rec < desired) /* scale-up window 0 s: the newest recommendation */
        rec = desired;
    if (rec > down)
        rec = down;

    if (rec > current) {
        prune(h->_up_t, h->_up_n, &h->_nup, now_s - h->up_period_s);
        int added = 0;
        for (unsigned i = 0; i < h->_nup; i++)
            added += h->_up_n[i];
        int limit = hpa_scale_up_limit(current - added, h->up_pods, h->up_percent);
        if (rec > limit)
            rec = limit;
    }
    if (rec > h->max_replicas)
        rec = h->max_replicas;
    if (rec < h->min_replicas)
        rec = h->min_replicas;
    if (rec > current)
        push(h->_up_t, h->_up_n, &h->_nup, now_s, rec - current);
    return rec;
}

int hpa_sync(hpa_t *h, double now_s, int current, int ready, double value, double target) {
    int desired = h->type == HPA_VALUE
                      ? hpa_replicas_value(value, target, current, ready, h->tolerance)
                      : hpa_replicas_average_value(value, target, current, h->tolerance);
    return hpa_sync_desired(h, now_s, current, desired);
}

void hpa_keda_init(hpa_keda_t *k, double polling_s, double cooldown_s, int min_replicas,
                   int max_replicas) {
    k->polling_s = polling_s;
    k->cooldown_s = cooldown_s;
    k->min_replicas = min_replicas < 0 ? 0 : min_replicas;
    k->max_replicas = max_replicas;
    k->_has_active = false;
    k->_last_active_s = 0;
}

int hpa_keda_poll(hpa_keda_t *k, double now_s, int current, bool active) {
    if (active) {
        k->_has_active = true;
        k->_last_active_s = now_s;
        if (current == 0)
            return k->min_replicas > 1 ? k->min_replicas : 1;
        return current;
    }
    if (k->min_replicas == 0 && current > 0) {
        /* scaleToZeroOrIdle: lastActiveTime + cooldown strictly before now;
         * never active: creationTimestamp + initialCooldownPeriod (0). */
        if (!k->_has_active || k->_last_active_s + k->cooldown_s < now_s)
            return 0;
        return current;
    }
    if (current < k->min_replicas)
        return k->min_replicas;
    return current;
}
