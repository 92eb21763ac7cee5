/*
 * node_pods.h - which pods (containers) hold which GPUs on one node, as an
 * agent sends it to the aggregator: an immutable list of
 * (namespace, pod, container, device ids).
 *
 * Device ids are what the kubelet reports: "GPU-<uuid>", "MIG-<uuid>", and
 * with NVIDIA time-slicing "GPU-<uuid>::<replica>". Lookups compare the
 * part before "::", so every replica of a shared GPU maps to its GPU.
 *
 * A node_pods_t is either *known* (the kubelet answered; the list may be
 * empty) or *unknown* (the kubelet could not be asked; `error` says why).
 * Built once, never written afterwards: any thread may read it. Pure.
 */
#ifndef KGS_CLUSTER_NODE_PODS_H
#define KGS_CLUSTER_NODE_PODS_H

#include <stdbool.h>
#include <stddef.h>

/* Bounds enforced by node_pods_new() (and so by the wire decoder). */
#define NODE_PODS_MAX_ENTRIES 16384u /* containers holding devices on one node */
#define NODE_PODS_MAX_DEVICES 1024u  /* device ids of one container */
#define NODE_PODS_NAME_MAX 253u      /* namespace, pod, container: bytes, no NUL */
#define NODE_PODS_DEVICE_ID_MAX 256u /* one device id: bytes, no NUL */
#define NODE_PODS_ERROR_MAX 255u     /* the unknown reason: longer is cut */

/* One container and the devices it was given. All fields read-only. */
typedef struct {
    const char *namespace_;
    const char *pod;
    const char *container;
    const char *const *device_ids;
    size_t device_count;
} node_pod_entry_t;

/* All fields public, read-only. */
typedef struct node_pods {
    bool known;                      /* false: the kubelet could not be asked */
    const char *error;               /* why not known; "" when known */
    const node_pod_entry_t *entries; /* `count` entries; NULL when count is 0 */
    size_t count;
} node_pods_t;

/*
 * Builds a known list by deep-copying entries[0..n) (borrowed for the call;
 * NULL allowed when n is 0). Returns 0 with *out returned (release with
 * node_pods_free), KGS_EINVAL with a message such as
 * "node pods: entries[3]: container: longer than 253 bytes" when a bound
 * above is exceeded or a string is NULL, or KGS_ENOMEM.
 */
int node_pods_new(const node_pod_entry_t *entries, size_t n, node_pods_t **out, char *err,
                  size_t errlen);

/* Builds an unknown list carrying `error` (borrowed; NULL = ""; cut to
 * NODE_PODS_ERROR_MAX bytes). Returns 0 with *out returned, or KGS_ENOMEM. */
int node_pods_new_unknown(const char *error, node_pods_t **out);

/* Frees everything. NULL does nothing. */
void node_pods_free(node_pods_t *p);

/*
 * The containers holding device `device_id` ("GPU-<uuid>" or "MIG-<uuid>";
 * a "::N" suffix on either side is ignored; comparison is exact
 * otherwise). Writes up to `max` matches to out[] (borrowed from p) in list
 * order, each entry at most once, and returns the total number of matches
 * (may exceed max). 0 for an unknown list, NULL p, or NULL device_id.
 */
size_t node_pods_lookup(const node_pods_t *p, const char *device_id, const node_pod_entry_t **out,
                        size_t max);

#endif
