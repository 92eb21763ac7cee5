/*
 * policies.h - the policies the simulator compares, each a configuration:
 * the trigger metadata KEDA would send, the ScaledObject's KEDA settings,
 * where the signal comes from and how late it is seen.
 */
#ifndef SCALESIM_POLICIES_H
#define SCALESIM_POLICIES_H

#include <stddef.h>

#include "sim.h"

#define POLICY_COUNT 6

/*
 * Fills out[0..POLICY_COUNT) with policies (a)..(f) for a replica model m
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
} policy_knobs_t;

/* The defaults the bench uses. */
void policy_knobs_default(policy_knobs_t *k);

size_t policies_default(sim_policy_t *out, const sim_model_t *m, policy_knobs_t *k);

#endif
