/*
 * policies.h - the policies the simulator compares, each a configuration:
 * the trigger metadata KEDA would send, the ScaledObject's KEDA settings,
 * where the signal comes from and how late it is seen.
 */
#ifndef SCALESIM_POLICIES_H
#define SCALESIM_POLICIES_H

#include <stddef.h>

#include "sim.h"

#define POLICY_COUNT 10

/*
 * Fills out[0..POLICY_COUNT) with policies (a)..(e), (o), (i), (f), (s),
 * (l) for a replica model m
 * (the cold start of (e) and the oracle come from it) and knobs k. The
 * metadata strings point into k (which it also fills: cold_start) and static
 * storage: keep k alive while the policies are used. Returns the count.
 */
typedef struct {
    int max_replicas;        /* 32 */
    double alpha, beta;      /* forecast weights per second */
    char target_queue[16];   /* (d)/(e) targetQueuePerReplica */
    char cold_start[16];     /* (e) coldStartSeconds (filled by policies_make from the model) */
    char target_running[16]; /* (d)/(e) targetRunningPerReplica */
    char target_kv[16];      /* (d)/(e) targetKvCache */
    double ideal_util;       /* (i) target utilisation, 0.5 */
    double ideal_drain_s;    /* (i) backlog drain time, 10 */
    double ideal_window_s;   /* (i) arrival-work window, 60 */
    double ideal_hold_s;     /* (i) scale-down delay, 60 */
    /* (s)/(l) ttftP90Target and tpotP90Target in seconds: the table's
     * objectives (sim_ttft_objective_s, sim_tpot_objective_s); 0 = those of
     * the default options. policies_default writes them as durations. */
    double ttft_target_s, tpot_target_s;
    char ttft_target[24], tpot_target[24];
} policy_knobs_t;

/* The defaults the bench uses. */
void policy_knobs_default(policy_knobs_t *k);

size_t policies_default(sim_policy_t *out, const sim_model_t *m, policy_knobs_t *k);

/* One point of a policy's knob sweep: the policy with one setting changed.
 * p's metadata may point into value: keep the variant where it is. */
typedef struct {
    sim_policy_t p;
    char value[16];
    char knob[64]; /* what was set, e.g. "targetQueuePerReplica=8" */
} policy_variant_t;

#define POLICY_MAX_VARIANTS 48

/*
 * The sweep of base's main knob (bench/README.md says why each): GPU
 * triggers their targetValue, the queue scaler its target, the demand
 * triggers targetQueuePerReplica, the online ideal utilisation x drain x
 * hold, the queueing model utilisation x drain x scale-down window (with
 * latency targets or not), metricType slo its sloMaxStep, the oracle its
 * utilisation. Fills out[0..cap) and returns the count.
 */
size_t policy_variants(const sim_policy_t *base, policy_variant_t *out, size_t cap);

#endif
