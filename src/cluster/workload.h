/*
 * workload.h - the aggregator's answer for one trigger: (trigger config,
 * cluster view, pod cache, now) -> one metric value for the whole workload,
 * or a typed error. Pure: no I/O, no clock reads; loop thread only (the view
 * and the pod cache belong to it).
 *
 * Scope (docs/configuration.md, "Workload scope"):
 *   - podSelector: the Running, not-deleting pods of one namespace whose
 *     labels match; each pod's GPUs (from its node's kubelet attribution)
 *     fold into one value with podAggregation, and the pods' values fold
 *     into the answer with aggregation. No pod in scope -> 0, OK. A pod
 *     with no device attributed counts for nothing when it asks for no GPU
 *     (no nvidia.com/<name> resource, no resource claim) or has just started,
 *     and is a gap (partialData) when it asks for one.
 *   - otherwise: every selected GPU (or MIG instance) of every selected node
 *     is one input, aggregated once across all of them.
 * An unknown value is never 0: a stale node, NVML down, an unknown pod
 * attribution, a DRA device the view could not resolve to a UUID, an
 * unhealthy GPU or an absent field is a status with a message naming the
 * node (and the pod). Resolved DRA devices arrive in the view as ordinary
 * device ids (cluster_view.h).
 */
#ifndef KGS_CLUSTER_WORKLOAD_H
#define KGS_CLUSTER_WORKLOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster/cluster_view.h"
#include "kube/kube_pods.h"
#include "core/clock.h"
#include "core/evaluator.h"
#include "core/trigger_config.h"

/* The most values one answer aggregates (pods with GPUs, or GPUs / MIG
 * instances without podSelector); beyond it the answer is
 * FAILED_PRECONDITION. Bounds the one scratch array (512 KiB at most). */
#define WORKLOAD_MAX_INPUTS 65536u

/* What went into an answer, for logs and /metrics. All counts are of this
 * evaluation only. */
typedef struct {
    unsigned pods_in_scope;    /* podSelector: matching, Running, not deleting */
    unsigned pods_counted;     /* podSelector: pods that contributed a value */
    unsigned pods_without_gpu; /* podSelector: in scope, fresh node, no device, asks for none */
    unsigned pods_starting;    /* podSelector: asks for a GPU, none attributed, just started */
    unsigned nodes_counted;    /* no podSelector: nodes whose GPUs contributed */
    unsigned skipped;          /* partialData ignore: pods (podSelector) or nodes left out */
    char skip_reason[256];     /* why one of them was left out; "" when none */
} workload_stats_t;

/* What the aggregator knows, all borrowed. */
typedef struct {
    /* every agent's latest snapshot and pod attribution, with taken_mono on
     * the same monotonic clock as `now`; NULL = empty */
    const cluster_view_t *view;
    const pod_cache_t *pods; /* the Kubernetes pod cache; NULL = no pod data */
    bool pods_synced;        /* its initial list completed */
    /* the Node objects (name and labels, parsed as pod_t by the same
     * list+watch client), for nodeSelector label selectors; NULL = none */
    const pod_cache_t *nodes;
    bool nodes_synced;
    mono_ns_t now;
    uint64_t stale_after_ns; /* a snapshot older than this is stale */
    /* why a DRA device cannot be resolved to a GPU now (the ResourceSlice
     * watch not started, not listed, failing); NULL or "": no reason known,
     * the device's slice is just not there yet. Read at this evaluation,
     * never kept. */
    const char *dra_status;
} workload_inputs_t;

/*
 * Evaluates trigger c for the whole workload and writes *out in full, and
 * *stats (may be NULL) with what went into the answer, whatever the status.
 *
 * scaled_object_namespace (borrowed) is the pods' namespace when c has a
 * podSelector without `namespace`. A podSelector needs in->pods synced; a
 * nodeSelector label selector needs in->nodes synced (matching nodes' GPUs
 * count, a matching node without an agent is a gap, no matching node is 0);
 * otherwise the answer is UNAVAILABLE.
 *
 * out->status:
 *   EVAL_OK                 value, active (value > activationThreshold) and
 *                           inputs (GPUs and MIG instances that contributed);
 *   EVAL_UNAVAILABLE        transient: pods not synced, no agent yet, a stale
 *                           or NVML-down node or an unknown attribution with
 *                           partialData error, an unhealthy GPU, nothing fresh;
 *   EVAL_FAILED_PRECONDITION the config does not fit the cluster: a device id
 *                           the snapshot does not know, an absent metric field,
 *                           a selection no node has, too many inputs.
 * When several pods or nodes fail, the message names the one first in name
 * order (so every aggregator replica gives the same answer) and counts the
 * rest. May allocate one scratch array (freed before returning); out of
 * memory is EVAL_UNAVAILABLE.
 */
void workload_evaluate(const trigger_config_t *c, const char *scaled_object_namespace,
                       const workload_inputs_t *in, eval_result_t *out, workload_stats_t *stats);

/* The namespace c's podSelector applies to: its namespace key, else the
 * ScaledObject's. Borrowed from c or scaled_object_namespace. */
const char *workload_namespace(const trigger_config_t *c, const char *scaled_object_namespace);

/* Whether pod p belongs to c's workload in namespace ns: Running, not being
 * deleted, in ns, and selected by c's podSelector. The one definition both
 * the GPU evaluation and the engine scrapes (source hub) use. */
bool workload_pod_in_scope(const trigger_config_t *c, const char *ns, const pod_t *p);

/* Whether pod p is in ns and selected by c's podSelector, whatever its
 * phase: the pod list the queueing model counts (starting, Ready,
 * draining pods). */
bool workload_pod_selected(const trigger_config_t *c, const char *ns, const pod_t *p);

#endif
