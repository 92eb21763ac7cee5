/*
 * kube_pods.h - the Kubernetes pod model the aggregator needs, its JSON
 * decoding (PodList pages and watch events), and a local cache kept current
 * by list + watch. Pure: no I/O; jansson does the JSON. Nothing here is
 * thread-safe: one owner thread (the loop) per cache.
 *
 * Only the fields the aggregator uses are kept: identity, labels, node,
 * phase, deletion, readiness, creation and start time, pod IP,
 * resourceVersion, and what the pod asks of GPUs (a few bits and counts, no
 * strings: the aggregator holds every pod of the cluster). A pod's strings
 * and labels are packed into one allocation of the size they need (the
 * bounds below are limits, not reservations). Every field has a
 * bound taken from Kubernetes' own validation; input over a bound is
 * rejected with KGS_ERANGE, never truncated (a cut label value would match
 * the wrong selector).
 */
#ifndef KGS_KUBE_KUBE_PODS_H
#define KGS_KUBE_KUBE_PODS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "kube/pod_start.h"

/* Bounds, without the NUL. Kubernetes: namespace is a DNS label (63), a pod
 * name and a node name DNS subdomains (253), a uid a 36-char UUID, an IP
 * at most an IPv6 text form (45). resourceVersion is opaque; etcd's are
 * decimal uint64 (20 digits). A label key is [prefix (253) "/"] name (63),
 * a value at most 63. */
#define KUBE_NAMESPACE_MAX 63
#define KUBE_NAME_MAX 253
#define KUBE_UID_MAX 63
#define KUBE_NODE_MAX 253
#define KUBE_POD_IP_MAX 45
#define KUBE_RV_MAX 63
#define KUBE_LABEL_KEY_MAX 317
#define KUBE_LABEL_VALUE_MAX 63
#define KUBE_LABELS_MAX 64
/* All keys and values of one pod, each with its NUL. Real pods carry a few
 * hundred bytes of labels; this bounds what one pod may hold. */
#define KUBE_LABEL_BYTES 2048
/* A list page's continue token (opaque base64; a few hundred bytes). */
#define KUBE_CONTINUE_MAX 4095

typedef enum {
    POD_PHASE_UNKNOWN = 0, /* "Unknown", or no phase reported yet */
    POD_PHASE_PENDING,
    POD_PHASE_RUNNING,
    POD_PHASE_SUCCEEDED,
    POD_PHASE_FAILED
} pod_phase_t;

/* "Pending", "Running", ...; "Unknown" for anything else. Static. */
const char *pod_phase_name(pod_phase_t phase);

/* What a pod asks of GPUs (pod_t.gpu_asks), read from the containers that
 * run for the pod's life: spec.containers and the restartable init
 * containers (sidecars, restartPolicy "Always"). A plain init container has
 * exited once the pod is Running, and the kubelet's device manager lets the
 * app containers reuse its devices, so its ask is not one of its own. */
#define POD_ASK_NVIDIA_GPU 0x01u   /* a positive "nvidia.com/gpu" limit or request */
#define POD_ASK_NVIDIA_MIG 0x02u   /* "nvidia.com/mig-<profile>" (the mixed MIG strategy) */
#define POD_ASK_NVIDIA_OTHER 0x04u /* another "nvidia.com/<name>" (a renamed shared GPU, ...) */
#define POD_ASK_CLAIM 0x08u        /* spec.resourceClaims (Dynamic Resource Allocation) */
#define POD_ASK_AMD 0x10u          /* "amd.com/<name>" (AMD's device plugin: gpu, cpx_nps4, ...) */

/*
 * One pod. Public fields are read-only for everyone but the parser; labels
 * go through pod_label()/pod_label_at(). The strings (and start.message)
 * are never NULL in a decoded or cached pod ("" when absent); a value built
 * by hand may leave them NULL, which the cache stores as "".
 * Who owns the strings: a pod decoded by kube_pod_from_json() (or
 * kube_watch_event_parse()) owns them in _storage, released with
 * pod_deinit() (on that value only: a copy of it borrows them, valid until
 * then, and is never pod_deinit'ed itself). A pod from the cache
 * borrows the cache's (see pod_cache_get). A hand-built value points at
 * whatever its builder chose and needs no pod_deinit().
 */
typedef struct {
    const char *namespace;
    const char *name;
    const char *uid;
    const char *node;   /* spec.nodeName; "" when unscheduled */
    const char *pod_ip; /* status.podIP; "" when none yet */
    const char *resource_version;
    pod_phase_t phase;
    bool deleting;          /* metadata.deletionTimestamp is set */
    bool ready;             /* status.conditions has type Ready with status "True" */
    int64_t created_unix;   /* metadata.creationTimestamp, seconds since 1970; 0 when absent or
                               not RFC 3339 (the pod is kept: only its age is unknown) */
    int64_t started_unix;   /* status.startTime (the kubelet acknowledged the pod, on the node's
                               clock), seconds since 1970; 0 when absent or not RFC 3339 */
    pod_start_t start;      /* how far its start got (pod_start.h): the cold-start stages */
    uint8_t gpu_asks;       /* POD_ASK_* bits; 0: the pod asks for no GPU */
    uint8_t gpu_claims;     /* entries of spec.resourceClaims, at most 255 */
    uint16_t gpu_ask_count; /* sum of the nvidia.com/<name> quantities, at most 65535 */
    uint16_t label_count;
    /* private: label_count pairs "key\0value\0" in _labels[0.._labels_len) */
    uint16_t _labels_len;
    const char *_labels;
    char *_storage; /* owned by a decoded pod: every string above, packed */
} pod_t;

/* Frees what a decoded pod owns (its _storage) and leaves every string "".
 * Safe on a zeroed, hand-built or already released pod. */
void pod_deinit(pod_t *p);

/* Whether p asks for a GPU (any POD_ASK_* bit). */
bool pod_asks_gpu(const pod_t *p);

/* What p asks for, for messages: "1 nvidia.com/gpu", "3 of nvidia.com/gpu,
 * nvidia.com/mig-*", "2 resource claims (DRA)", or both joined by " and ";
 * "nothing" when p asks for no GPU. Writes at most len bytes (NUL
 * included) and returns buf. */
const char *pod_gpu_ask_describe(const pod_t *p, char *buf, size_t len);

/*
 * Whether a resource quantity (the JSON value of a limit or request,
 * borrowed) is positive, and in *count (may be NULL) the quantity as a
 * whole number of devices, at most 65535. Kubernetes writes quantities as
 * strings ("1", "2", "0"); a number is read too. A string in another
 * Kubernetes quantity form ("1k", "5e2", "0.5") is positive when its
 * mantissa is, and counts as 1 unless it is a plain integer. Anything else
 * that is not clearly zero or negative is positive: an ask we cannot read
 * must not read as "no GPU".
 */
bool kube_quantity_positive(const json_t *q, uint16_t *count);

/* An RFC 3339 time as Kubernetes writes it ("2026-11-29T10:00:00Z",
 * optionally with fractional seconds or a "+hh:mm" offset) -> seconds since
 * 1970 in *out. false when s is not one. */
bool kube_time_parse(const char *s, int64_t *out);

/* The value of label `key`, or NULL when the pod has no such label.
 * Borrowed: valid as long as *p. */
const char *pod_label(const pod_t *p, const char *key);

/* Label i (< label_count) in the order they were parsed. Borrowed like
 * pod_label(). Returns 0, or KGS_ERANGE when i is out of range. */
int pod_label_at(const pod_t *p, size_t i, const char **key, const char **value);

/*
 * Decodes one Pod object (a parsed JSON object, borrowed) into *out, whose
 * strings are then in one allocation of their size: release *out with
 * pod_deinit() after every call, whatever it returned (on failure it holds
 * at most the identity).
 * Required: metadata.namespace, .name, .uid, .resourceVersion. Optional:
 * metadata.labels, metadata.deletionTimestamp (set and not null means
 * deleting), spec.nodeName, status.phase, status.podIP, status.startTime,
 * status.conditions (only the Ready condition is read; entries of another
 * shape are skipped), the start (pod_start_parse: conditions and container
 * statuses, read leniently), and for gpu_asks spec.containers[].resources,
 * spec.initContainers[] (restartPolicy "Always" only) and
 * spec.resourceClaims: a container's ask for a resource is the larger of
 * its limit and request; entries of another shape are skipped. Unknown
 * fields are ignored. Returns 0, or with "pod NS/NAME: <field>: <reason>" in err:
 *   KGS_ENOMEM  out of memory (*out then holds nothing);
 *   KGS_EINVAL  a required field missing, a field of the wrong JSON type,
 *               or a string holding a NUL;
 *   KGS_ERANGE  a field or the labels over their bound. The pod's identity
 *               (namespace, name, uid) is still filled when those were
 *               valid, so a caller can drop a cached copy it can no
 *               longer keep current.
 */
int kube_pod_from_json(const json_t *obj, pod_t *out, char *err, size_t errlen);

/* A decoded PodList page. Storage is the caller's; kube_pod_list_deinit()
 * frees the items. */
typedef struct {
    pod_t *items; /* owned: count pods, each owning its strings (pod_deinit) */
    size_t count;
    char resource_version[KUBE_RV_MAX + 1];     /* metadata.resourceVersion */
    char continue_token[KUBE_CONTINUE_MAX + 1]; /* metadata.continue; "" on the last page */
    size_t skipped;                             /* items refused with KGS_ERANGE (see below) */
    char skip_reason[256];                      /* the first such item's message; "" if none */
} kube_pod_list_t;

/*
 * Parses a PodList page from buf[0..len) (borrowed; need not be NUL
 * terminated). On success *out holds the pods (release with
 * kube_pod_list_deinit). An item over a bound (KGS_ERANGE from
 * kube_pod_from_json) is skipped and counted, so one odd pod cannot stop
 * the whole cluster's list; any other defect fails the page. Returns 0,
 * KGS_EINVAL (not JSON, not a PodList, a bad item, metadata.resourceVersion
 * missing), KGS_ERANGE (resourceVersion or continue token too long) or
 * KGS_ENOMEM, with a message; on failure *out is empty (nothing to free).
 */
int kube_pod_list_parse(const char *buf, size_t len, kube_pod_list_t *out, char *err,
                        size_t errlen);

/* Frees the items (pod_deinit on each) and empties *l. Safe on an empty or
 * failed list. */
void kube_pod_list_deinit(kube_pod_list_t *l);

typedef enum {
    KUBE_EVENT_ADDED = 0,
    KUBE_EVENT_MODIFIED,
    KUBE_EVENT_DELETED,
    KUBE_EVENT_BOOKMARK,
    KUBE_EVENT_ERROR
} kube_event_type_t;

/* "ADDED", "MODIFIED", ...; "?" out of range. Static. */
const char *kube_event_type_name(kube_event_type_t t);

/*
 * Parses one watch event, a JSON object {"type":..., "object":...} in
 * line[0..len) (borrowed; a trailing newline or CR is fine). Sets *type and:
 *   ADDED/MODIFIED/DELETED: *pod and rv (the pod's resourceVersion);
 *   BOOKMARK: rv only (the object is a Pod with nothing but
 *     metadata.resourceVersion); *pod is zeroed;
 *   ERROR: *error_code = the Status object's code (410: the requested
 *     resourceVersion is gone, relist), rv = "", and err holds the Status
 *     message. Returns 0: the event parsed fine, it reports an error.
 * A non-NULL pod is to be released with pod_deinit() after every call.
 * rv (rvlen > KUBE_RV_MAX recommended) and pod may be NULL when unwanted;
 * error_code may be NULL. *error_code is 0 for other types.
 * Returns 0, KGS_EINVAL (malformed, unknown type) or KGS_ERANGE (see
 * kube_pod_from_json: *type and the pod identity are then filled), with a
 * message in err.
 */
int kube_watch_event_parse(const char *line, size_t len, kube_event_type_t *type, pod_t *pod,
                           char *rv, size_t rvlen, int *error_code, char *err, size_t errlen);

/*
 * The part every watch stream shares (pods here, ResourceSlices in
 * resource_slices.c): line[0..len) parsed into *root (json_decref it, even
 * on error; NULL when it is not JSON), *type, and *obj: the object to
 * decode for ADDED/MODIFIED/DELETED, NULL for BOOKMARK and ERROR. BOOKMARK:
 * rvbuf (KUBE_RV_MAX + 1 bytes) gets object.metadata.resourceVersion, else
 * "". ERROR: as kube_watch_event_parse says. Returns 0, KGS_EINVAL or
 * KGS_ENOMEM with a message in err.
 */
int kube_watch_envelope(const char *line, size_t len, json_t **root, kube_event_type_t *type,
                        const json_t **obj, char *rvbuf, int *error_code, char *err, size_t errlen);

/* Copies rvbuf into rv[0..rvlen) (nothing when rv is NULL), or KGS_ERANGE. */
int kube_watch_rv_out(const char *rvbuf, char *rv, size_t rvlen, char *err, size_t errlen);

/* ---- cache ------------------------------------------------------------------------- */

/*
 * Pods by uid (and by namespace/name), plus the resourceVersion the cache
 * reflects. Opaque; one owner thread. The cache owns copies of its pods,
 * each in one allocation sized to its strings and labels.
 */
typedef struct pod_cache pod_cache_t;

/* Returns 0 or KGS_ENOMEM. Returned: free with pod_cache_free(). */
int pod_cache_new(pod_cache_t **out);
void pod_cache_free(pod_cache_t *c);

/*
 * Replaces the whole content with pods[0..n) (borrowed, copied) as of
 * resourceVersion rv (borrowed; NULL or "" leaves it empty): a relist.
 * Pods no longer listed are gone. A uid listed twice keeps the last copy.
 * Returns 0, KGS_EINVAL (rv too long, a pod without uid) or KGS_ENOMEM;
 * on failure the cache is unchanged.
 */
int pod_cache_replace_all(pod_cache_t *c, const pod_t *pods, size_t n, const char *rv);

/*
 * Applies one watch event: ADDED/MODIFIED insert or replace the pod by uid
 * (a MODIFIED for an unknown uid inserts, as after a missed ADDED); DELETED
 * removes it (unknown uid: nothing to do); BOOKMARK only moves the
 * resourceVersion. rv (borrowed, may be NULL or "") becomes the cache's
 * resourceVersion when non-empty. *changed (may be NULL) tells whether the
 * pod set changed (a MODIFIED with identical fields is no change).
 * Returns 0, KGS_EINVAL (ERROR event, pod NULL or without uid for a pod
 * event, rv too long) or KGS_ENOMEM (cache unchanged).
 */
int pod_cache_apply(pod_cache_t *c, kube_event_type_t type, const pod_t *pod, const char *rv,
                    bool *changed);

/*
 * A relist assembled page by page: the pods of each page are added to
 * `next` (a second cache, with pod_cache_apply ADDED) as they arrive, and
 * once the last page is in, c takes next's content as of resourceVersion
 * rv (borrowed; NULL or "" leaves it empty): pods no longer listed are
 * gone, and next is left empty. So a relist holds the old content and the
 * new, never a third copy in a list being assembled. Returns 0,
 * KGS_EINVAL (rv too long) or KGS_ENOMEM; on failure both are unchanged.
 */
int pod_cache_replace_with(pod_cache_t *c, pod_cache_t *next, const char *rv);

/* Removes the pod with this uid if present. Returns true if it was. */
bool pod_cache_remove(pod_cache_t *c, const char *uid);

/* The pod with this uid / this namespace and name, or NULL. Borrowed:
 * valid until the next call that modifies the cache. */
const pod_t *pod_cache_get(const pod_cache_t *c, const char *uid);
const pod_t *pod_cache_find(const pod_cache_t *c, const char *ns, const char *name);

/* Calls cb for every pod, in no particular order; cb returning false
 * stops early. cb must not modify the cache. */
typedef bool (*pod_cache_cb)(const pod_t *pod, void *user_data);
void pod_cache_foreach(const pod_cache_t *c, pod_cache_cb cb, void *user_data);
/* The same over the pods of namespace ns only, at a cost that follows
 * their count, not the cache's. */
void pod_cache_foreach_in(const pod_cache_t *c, const char *ns, pod_cache_cb cb, void *user_data);

size_t pod_cache_size(const pod_cache_t *c);

/* The resourceVersion of the last relist or event; "" before any.
 * Borrowed: valid until the cache is modified. */
const char *pod_cache_resource_version(const pod_cache_t *c);

#endif
