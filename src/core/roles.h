/*
 * roles.h - which triggers each server role can serve, in one table used by
 * the server (scaler.c), `keda-gpu-scaler validate` and the source hub, so
 * the three never disagree about a rule or its message.
 *
 * A role is described by what it can see: the cluster (every node's GPUs and
 * the pod list: podSelector, nodeSelector) and the demand sources (engine
 * /metrics, queues). Pure: no I/O, no globals; any thread.
 */
#ifndef KGS_CORE_ROLES_H
#define KGS_CORE_ROLES_H

#include <stdbool.h>
#include <stddef.h>

#include "core/evaluator.h"
#include "core/trigger_config.h"

typedef enum {
    KGS_ROLE_STANDALONE, /* one process: this node's GPUs, demand sources */
    KGS_ROLE_AGENT,      /* this node's GPUs, streamed to aggregators; no sources */
    KGS_ROLE_AGGREGATOR, /* the cluster view, the pod list, demand sources */
    KGS_ROLE_COUNT
} kgs_role_t;

/* What a role can see. Public, read-only. */
typedef struct {
    const char *name;   /* "standalone", "agent", "aggregator" */
    bool sees_cluster;  /* every node's GPUs and the pod list: podSelector, nodeSelector */
    bool polls_sources; /* engine and queue sources: the demand metric types */
    bool reads_nvml;    /* samples this node's GPUs itself (else: the agents' snapshots) */
} role_caps_t;

/* The row of role r (a static table entry); NULL when r is out of range. */
const role_caps_t *role_caps(kgs_role_t r);

/* Which of the checks below failed. */
typedef enum {
    ROLE_CHECK_OK = 0,
    ROLE_CHECK_BAD_CONFIG,   /* the config cannot work here at all: gRPC INVALID_ARGUMENT */
    ROLE_CHECK_PRECONDITION, /* the metric type is served elsewhere: FAILED_PRECONDITION */
} role_check_t;

/*
 * Whether a role with capabilities caps (borrowed) can serve trigger c
 * (borrowed). The rules, in the order they are checked:
 *   1. podSelector / nodeSelector need sees_cluster (ROLE_CHECK_BAD_CONFIG);
 *   2. a demand metric type needs polls_sources (ROLE_CHECK_PRECONDITION);
 *   3. an engine trigger without engine URLs scrapes the podSelector's
 *      pods, which needs sees_cluster (ROLE_CHECK_PRECONDITION; rule 1
 *      catches it first for a parsed config, but a caller that checks only
 *      the demand rules gets the message of this rule).
 * check_selectors false skips rule 1 (the hub, which only reads sources).
 * On failure msg (NULL allowed) holds the message KEDA shows.
 */
role_check_t role_check_trigger(const role_caps_t *caps, const trigger_config_t *c,
                                bool check_selectors, char *msg, size_t msglen);

/* The evaluation status of a failed check: EVAL_FAILED_PRECONDITION for both
 * kinds (callers that answer INVALID_ARGUMENT for BAD_CONFIG do so themselves). */
eval_status_t role_check_eval_status(role_check_t rc);

#endif
