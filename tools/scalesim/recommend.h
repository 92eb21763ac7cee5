/*
 * recommend.h - `scalesim recommend`: for a user's own trace and cold start,
 * the ScaledObject settings of the queueing demand model to use. A small
 * fixed grid over the model's target utilisation and drain target and the
 * HPA's scale-down stabilisation window is simulated, plus the online ideal
 * for reference; one documented rule picks the setting (below), the same on
 * every trace.
 *
 * The rule: among the grid's settings whose share of requests over the SLO
 * is within max(RECOMMEND_TOL_ABS, RECOMMEND_TOL_REL x best) of the best
 * setting's share, the one with the fewest GPU-hours (ties: the lower
 * share, then the earlier grid point).
 */
#ifndef SCALESIM_RECOMMEND_H
#define SCALESIM_RECOMMEND_H

#include <stddef.h>
#include <stdio.h>

#include "policies.h"
#include "sim.h"
#include "stability.h"
#include "trace.h"

#define RECOMMEND_TOL_ABS 0.005 /* 0.5 percentage points */
#define RECOMMEND_TOL_REL 0.10  /* 10 % of the best share */
#define RECOMMEND_COLD_START_MIN_S 1
#define RECOMMEND_COLD_START_MAX_S 3600
#define RECOMMEND_MAX_POINTS 48

/* One setting of the queueing model's ScaledObject. */
typedef struct {
    double util;          /* trigger key targetUtilization, (0, 1]; 0: not set (the
                             headroom the model takes from the arrivals) */
    double drain_s;       /* trigger key drainSeconds, > 0 */
    double down_window_s; /* behavior.scaleDown.stabilizationWindowSeconds */
} recommend_setting_t;

/* The model's defaults: no targetUtilization (the headroom from the
 * arrivals), drain 10 s (core/queue_model.h), the recommended 30 s
 * scale-down window (policies.c). */
void recommend_setting_default(recommend_setting_t *s);

/*
 * The queueing model's policy with setting s, built in this one place (the
 * policy of the default set with key "queueing", its knobs set). The
 * policy's metadata may point into knobs and value: keep the struct where it
 * was built and alive while p is used; it owns nothing on the heap.
 */
typedef struct {
    sim_policy_t p;
    policy_knobs_t knobs; /* the copy the default set was built from */
    char value[2][16];    /* s->util, s->drain_s as metadata values ("%g") */
} recommend_policy_t;

/* Builds *out for model m, knobs k (borrowed, copied) and setting s.
 * Returns 0, or KGS_ENOTFOUND when the default set has no such policy. */
int recommend_policy_build(const sim_model_t *m, const policy_knobs_t *k,
                           const recommend_setting_t *s, recommend_policy_t *out, char *err,
                           size_t errlen);

/*
 * Sets m's cold start to cold_start_s seconds: node provisioning, image pull
 * and weight load scaled by one factor so they keep their proportions and
 * sum to cold_start_s (all of it weight load when the three are 0). Returns
 * 0, or KGS_ERANGE naming the value and the valid range
 * [RECOMMEND_COLD_START_MIN_S, RECOMMEND_COLD_START_MAX_S]; m is then
 * unchanged.
 */
int recommend_cold_start_apply(sim_model_t *m, double cold_start_s, char *err, size_t errlen);

/* What one simulated setting costs and delivers. */
typedef struct {
    recommend_setting_t s;
    double gpu_hours;
    double over_slo;      /* share of requests whose queue wait exceeded the SLO, [0, 1] */
    double warm_over_slo; /* the same, requests that arrived while a replica served */
    double wait_p99_s;
    unsigned cold_starts, peak_replicas;
    unsigned cancelled_starts; /* pods deleted before they were Ready */
    stability_t stability;     /* reversals and max step (stability.h); no syncs: the ideal */
} recommend_point_t;

/*
 * The rule above on pts[0..n), n >= 1: returns the index chosen and sets
 * *best_over_slo (the lowest share) and *limit_over_slo (the highest share
 * admitted). Pure.
 */
size_t recommend_choose(const recommend_point_t *pts, size_t n, double *best_over_slo,
                        double *limit_over_slo);

/*
 * Which stage of the cold start to attack: the recommended setting
 * re-simulated with one change to the model each, beside the model as given
 * (stage 0). The warm pools are a node group's minimum size (N GPU nodes
 * always up and billed; the cluster autoscaler's --nodes min:max): 1 spares
 * a wake from zero its node and image stages, 2 the second pod of a wake
 * too. The linger is the cluster autoscaler's default
 * --scale-down-unneeded-time (sim_model_t.node_linger_s).
 */
#define RECOMMEND_STAGE_COUNT 6
#define RECOMMEND_STAGE_LINGER_S 600

typedef struct {
    const char *key; /* the --json "change": "as_given", "warm_pool_1", ... */
    char what[40];   /* the table's label */
    sim_model_t m;   /* the model simulated */
    double gpu_hours;
    double over_slo, warm_over_slo; /* shares, [0, 1] */
    double wait_p99_s;
    unsigned cold_starts, peak_replicas;
} recommend_stage_t;

/* The models of the stage table from m (its cold start already set), into
 * out[0..RECOMMEND_STAGE_COUNT): m itself; warm pool 1; warm pool 2; the
 * image stage halved; the weights stage halved; nodes lingering
 * RECOMMEND_STAGE_LINGER_S. Sets key, what and m only. Pure. */
void recommend_stage_models(const sim_model_t *m, recommend_stage_t *out);

typedef struct {
    size_t requests;
    double slo_s;
    double node_s, image_s, weights_s; /* the cold start simulated, split */
    size_t count;                      /* grid points simulated */
    recommend_point_t grid[RECOMMEND_MAX_POINTS];
    size_t chosen;   /* index into grid */
    size_t defaults; /* index into grid of recommend_setting_default() */
    double best_over_slo, limit_over_slo;
    /* the floor (sim_floor): the share of requests arriving within one cold
     * start of a wake, over the SLO whatever an online policy does */
    double floor_over_slo;
    /* the online ideal with the bench's knobs (util, drain, hold from k):
     * s.util, s.drain_s and s.down_window_s hold util, drain and hold */
    recommend_point_t ideal;
    /* the ScaledObject around the model, from its policy */
    int min_replicas, max_replicas;
    double cooldown_s;
    int push; /* the trigger is external-push */
    /* which stage to attack (recommend_stage_models), the chosen setting's
     * figures in each; stage 0 is grid[chosen] itself, not run again */
    size_t stage_count;
    recommend_stage_t stage[RECOMMEND_STAGE_COUNT];
} recommend_t;

/*
 * Simulates the grid, the online ideal and the stage table on trace t (at least one request)
 * with model m (its cold start already set) and options o, knobs k; fills
 * *out, the floor counting wakes after floor_idle_s without arrivals (as
 * scalesim's --floor-idle). All arguments borrowed. Returns 0, KGS_EINVAL
 * (an empty trace, or a policy the product rejects: its message),
 * KGS_ENOTFOUND (the default set lacks the queueing model or the online
 * ideal), KGS_ENOMEM. On failure *out is not a result.
 */
int recommend_run(const trace_t *t, const sim_model_t *m, const sim_options_t *o,
                  const policy_knobs_t *k, double floor_idle_s, recommend_t *out, char *err,
                  size_t errlen);

/* Writes the ready-to-paste ScaledObject fragment (YAML) of r's choice. */
void recommend_snippet(FILE *f, const recommend_t *r);

/* Writes the rule, the chosen setting against the defaults and the online
 * ideal (GPU-h, share over SLO, p99 wait), the floor, the grid, the
 * snippet, and then which stage to attack (when r has the stages). */
void recommend_print(FILE *f, const recommend_t *r);

/*
 * Writes the same as JSON to path ("-": stdout): {"trace", "rule",
 * "recommended", "defaults", "online_ideal", "floor", "grid", "stages",
 * "scaled_object"};
 * shares as fractions in [0, 1]. Returns 0 or KGS_EIO naming the path.
 */
int recommend_json(const char *path, const recommend_t *r, char *err, size_t errlen);

#endif
