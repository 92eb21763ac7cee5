/*
 * hpa.h - KEDA's and the Kubernetes HPA's replica arithmetic, as the
 * simulator applies it (reference: ../shared/reference/keda-contract.md from the repository root,
 * sections 2.6 and 3). Pure: no I/O, no clock (time is an argument in
 * seconds), no allocation; each object is caller-owned storage.
 *
 * The HPA (hpa_t) runs every sync period (15 s) while replicas >= 1:
 *   AverageValue: desired = ceil(total / target), unless
 *                 |1 - total / (target x current)| <= tolerance (keep current);
 *   Value:        desired = ceil(value / target x ready), same tolerance test on
 *                 value / target;
 * then scale-down stabilisation (the highest recommendation of the last
 * 300 s wins), the scale-up limit, and the [min, max] clamps.
 *
 * The scale-up limit depends on whether the HPA has a `behavior`. KEDA
 * leaves it unset unless the ScaledObject sets
 * advanced.horizontalPodAutoscalerConfig.behavior, and an HPA without one
 * takes the controller's legacy path (horizontal.go
 * normalizeDesiredReplicas): at most max(2 x current, 4) per sync, the
 * stabilised recommendation being the highest of the window including the
 * newest. With a behavior (hpa_init: Kubernetes' default rules) the
 * scale-up policies max(+4 pods, +100 %) per 15 s apply, counted over the
 * policy period. KEDA (hpa_keda_t) alone moves 0 <-> 1: an active poll or
 * push at 0 writes max(min, 1); an inactive poll with minReplicaCount 0
 * writes 0 once lastActiveTime + cooldownPeriod has passed.
 */
#ifndef SCALESIM_HPA_H
#define SCALESIM_HPA_H

#include <stdbool.h>

typedef enum { HPA_AVERAGE_VALUE, HPA_VALUE } hpa_metric_type_t;

/* AverageValue: the replicas for a workload-wide total against a per-replica
 * target (> 0). current is the spec replica count (>= 1; 0 reads as "no
 * tolerance band"). Values are rounded to KEDA's milli resolution first. */
int hpa_replicas_average_value(double total, double target, int current, double tolerance);

/* Value: the replicas for a value against a target (> 0), scaled by the
 * ready pods; current == 0 gives ceil(value / target). */
int hpa_replicas_value(double value, double target, int current, int ready, double tolerance);

/* The most replicas a scale-up may reach from period_start (the replicas at
 * the start of the policy period): max(start + pods, ceil(start x (1 +
 * percent / 100))). */
int hpa_scale_up_limit(int period_start, int pods, int percent);

#define HPA_HISTORY 256

typedef struct {
    /* public: configuration (hpa_init sets Kubernetes' defaults) */
    int min_replicas; /* max(KEDA minReplicaCount, 1) */
    int max_replicas;
    double tolerance;       /* 0.1 */
    double sync_s;          /* 15 */
    double down_window_s;   /* 300: scale-down stabilisation */
    double up_period_s;     /* 15: scale-up policy period */
    int up_pods;            /* 4 */
    int up_percent;         /* 100 */
    hpa_metric_type_t type; /* AverageValue */
    bool legacy;            /* no behavior: the max(2 x current, 4) limit per sync */
    /* private */
    unsigned _nrec;
    double _rec_t[HPA_HISTORY];
    int _rec[HPA_HISTORY];
    unsigned _nup;
    double _up_t[HPA_HISTORY];
    int _up_n[HPA_HISTORY];
} hpa_t;

/* An HPA with a behavior holding Kubernetes' default rules (scale-up
 * max(+4 pods, +100 %) per 15 s, scale-down window 300 s), clamps as given
 * (min is raised to 1). Change up_pods, up_percent, up_period_s and
 * down_window_s for a configured behavior. */
void hpa_init(hpa_t *h, int min_replicas, int max_replicas);

/* An HPA without a behavior (what KEDA creates by default): the legacy
 * max(2 x current, 4) scale-up limit per sync, the controller's 300 s
 * downscale stabilisation window. */
void hpa_init_legacy(hpa_t *h, int min_replicas, int max_replicas);

/* The legacy limit: max(2 x current, 4). */
int hpa_legacy_scale_up_limit(int current);

/*
 * One HPA sync at now_s: computes the raw recommendation from the metric
 * (value: the total for AverageValue, the value for Value) and target,
 * stabilises, limits and clamps it, and returns the replica count to write.
 * current >= 1 (the HPA is off at 0), ready <= current.
 */
int hpa_sync(hpa_t *h, double now_s, int current, int ready, double value, double target);

/* The same, from a raw recommendation already computed. */
int hpa_sync_desired(hpa_t *h, double now_s, int current, int desired);

typedef struct {
    /* public: configuration */
    double polling_s;  /* pollingInterval, 30 */
    double cooldown_s; /* cooldownPeriod, 300 */
    int min_replicas;  /* minReplicaCount, 0 */
    int max_replicas;  /* maxReplicaCount, 100 */
    /* private */
    bool _has_active;
    double _last_active_s;
} hpa_keda_t;

void hpa_keda_init(hpa_keda_t *k, double polling_s, double cooldown_s, int min_replicas,
                   int max_replicas);

/*
 * KEDA's scale loop at now_s with the trigger's IsActive answer; also what
 * an external-push `true` does (active = true). Returns the replica count
 * KEDA writes: max(min, 1) from 0 when active; 0 when inactive, min == 0,
 * replicas > 0 and lastActiveTime + cooldown has passed (or nothing was
 * ever active: initialCooldownPeriod 0); min when below min; otherwise
 * current (the HPA's business).
 */
int hpa_keda_poll(hpa_keda_t *k, double now_s, int current, bool active);

#endif
