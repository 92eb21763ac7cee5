/*
 * pod_start.h - how far a pod's start got, read from its status, and the
 * three cold-start stages derived from it. Pure: no I/O, no clock reads.
 *
 * A pod's start, in the order the control plane and the kubelet write it
 * (k8s.io/api core/v1 types.go, Kubernetes v1.31: PodCondition,
 * ContainerStateRunning.StartedAt, ContainerStateWaiting.Reason,
 * PodReasonUnschedulable; the kubelet's conditions in
 * pkg/kubelet/status/generate.go):
 *   created: metadata.creationTimestamp
 *   waiting for a node: PodScheduled False, reason Unschedulable (the
 *     cluster autoscaler or Karpenter adds one)
 *   scheduled: PodScheduled True, lastTransitionTime       -> stage "node"
 *   every container runs: the latest containerStatuses[].state.running.
 *     startedAt (init containers ran before: their pulls count here)
 *                                                          -> stage "image"
 *   Ready: Ready True, lastTransitionTime                  -> stage "weights"
 * A start that goes wrong shows as a waiting container's reason
 * (ErrImagePull, ImagePullBackOff: pkg/kubelet/images/types.go;
 * CrashLoopBackOff: pkg/kubelet/container/sync_result.go) or a terminated
 * one's (OOMKilled, from the runtime).
 */
#ifndef KGS_KUBE_POD_START_H
#define KGS_KUBE_POD_START_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

/* Why a start is in trouble. A bounded set: the /metrics `reason` label. */
typedef enum {
    POD_TROUBLE_NONE = 0,
    POD_TROUBLE_UNSCHEDULABLE,      /* PodScheduled False, reason Unschedulable */
    POD_TROUBLE_IMAGE_PULL_BACKOFF, /* a container waiting, reason ImagePullBackOff */
    POD_TROUBLE_ERR_IMAGE_PULL,     /* ... ErrImagePull (the pull failed; back-off follows) */
    POD_TROUBLE_CRASH_LOOP_BACKOFF, /* ... CrashLoopBackOff */
    POD_TROUBLE_OOM_KILLED,         /* a container's state or lastState terminated, OOMKilled */
    POD_TROUBLE_OTHER,              /* another waiting error (InvalidImageName,
                                       CreateContainerConfigError, ...), or phase Failed */
    POD_TROUBLE_COUNT
} pod_trouble_t;

/* "Unschedulable", "ImagePullBackOff", ..., "other"; "" for NONE and out
 * of range. Static. */
const char *pod_trouble_name(pod_trouble_t t);

/* The scheduler's message kept for an Unschedulable pod, without the NUL:
 * "0/12 nodes are available: 12 Insufficient nvidia.com/gpu. preemption:
 * ..." is shown cut at this length (it is for people, never matched). */
#define POD_START_MESSAGE_MAX 191

/* What a pod's status says of its start: wall-clock seconds since 1970,
 * 0 for not yet (or not RFC 3339). Plain value of 40 bytes; the message is
 * borrowed (see pod_start_parse), so the aggregator keeps its bytes only
 * for the pods that have one. */
typedef struct {
    int64_t scheduled_unix; /* PodScheduled True: lastTransitionTime */
    int64_t running_unix;   /* every container running: the latest startedAt */
    int64_t ready_unix;     /* Ready True: lastTransitionTime */
    uint8_t trouble;        /* pod_trouble_t, the worst seen now */
    bool restarted;         /* a container restarted: the times above describe a
                               restart, not the first start */
    const char *message;    /* Unschedulable: the scheduler's message; "" when none. NULL only
                               in a zeroed value, read as "" */
} pod_start_t;

/*
 * Reads status (a Pod's status object, borrowed; NULL or not an object:
 * nothing known) into *out, which it fills in full. Entries of another
 * shape are skipped: a status is the kubelet's, read for display and
 * statistics, and one odd entry must not drop the pod. The message is
 * written to message_buf (POD_START_MESSAGE_MAX + 1 bytes, the caller's)
 * and out->message points at it, or at a static "" when there is none.
 */
void pod_start_parse(const json_t *status, pod_start_t *out, char *message_buf);

/* The three stages of a completed start, in seconds. */
typedef enum {
    POD_STAGE_NODE = 0,
    POD_STAGE_IMAGE,
    POD_STAGE_WEIGHTS,
    POD_STAGE_COUNT
} pod_stage_t;

/* "node", "image", "weights" (the /metrics `stage` label); "" out of
 * range. Static. */
const char *pod_stage_name(pod_stage_t s);

/*
 * The stages of a start that completed: created_unix (metadata.
 * creationTimestamp) -> scheduled -> running -> Ready, into stage_s[]. true
 * only when every time is known, in that order, and no container restarted
 * (a restart moves startedAt and Ready past the first start). A stage of 0 s
 * is real: a pod bound at once to a node with the image cached.
 */
bool pod_start_stages(int64_t created_unix, const pod_start_t *s, double stage_s[POD_STAGE_COUNT]);

/*
 * Where a start that has not completed is at now_unix: *stage, and the
 * seconds it has spent there (from creation for the node stage, from
 * scheduling for the image, from the containers running for the weights).
 * false when that is not known: no creation time, Ready already, or a
 * container restarted (its times describe the restart).
 */
bool pod_start_where(int64_t created_unix, const pod_start_t *s, int64_t now_unix,
                     pod_stage_t *stage, double *in_stage_s);

#endif
