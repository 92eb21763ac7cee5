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

#define NODE_PODS_MAX_DRA 256u      /* DRA devices of one container */
#define NODE_PODS_DRA_NAME_MAX 253u /* driver, pool, device, share id: bytes, no NUL */

/*
 * One device a DRA claim gave the container, as the kubelet names it:
 * (driver, pool, device) is unique in the cluster; the device name is the
 * driver's ("gpu-0"), not a UUID. `uuid` is what the aggregator resolved it
 * to through the ResourceSlices ("GPU-..."/"MIG-..."), "" while unresolved
 * (an agent always sends ""). not_gpu: the device's slice is known and it
 * carries no GPU-/MIG- uuid attribute (a NIC, say): not a GPU, not a gap.
 * All string fields read-only, never NULL.
 */
typedef struct {
    const char *driver;
    const char *pool;
    const char *device;
    const char *share_id; /* "" unless the claim shares a device's capacity */
    const char *uuid;
    bool not_gpu;
} node_pod_dra_t;

/* One container and the devices it was given. All fields read-only.
 * device_ids includes the resolved DRA devices' UUIDs (after the device
 * plugin's ids); dra lists every DRA device, resolved or not. */
typedef struct {
    const char *namespace_;
    const char *pod;
    const char *container;
    const char *const *device_ids;
    size_t device_count;
    const node_pod_dra_t *dra;
    size_t dra_count;
    size_t dra_unresolved; /* dra entries with uuid "" and not not_gpu */
} node_pod_entry_t;

/* All fields public, read-only. */
typedef struct node_pods {
    bool known;                      /* false: the kubelet could not be asked */
    const char *error;               /* why not known; "" when known */
    const node_pod_entry_t *entries; /* `count` entries; NULL when count is 0 */
    size_t count;
    size_t dra_total; /* DRA devices over all entries */
} node_pods_t;

/*
 * Builds a known list by deep-copying entries[0..n) (borrowed for the call;
 * NULL allowed when n is 0). dra_unresolved is recomputed from the uuids
 * (a NULL uuid counts as ""). Returns 0 with *out returned (release with
 * node_pods_free), KGS_EINVAL with a message such as
 * "node pods: entries[3]: container: longer than 253 bytes" when a bound
 * above is exceeded or a string is NULL, or KGS_ENOMEM.
 */
int node_pods_new(const node_pod_entry_t *entries, size_t n, node_pods_t **out, char *err,
                  size_t errlen);

/* Builds an unknown list carrying `error` (borrowed; NULL = ""; cut to
 * NODE_PODS_ERROR_MAX bytes). Returns 0 with *out returned, or KGS_ENOMEM. */
int node_pods_new_unknown(const char *error, node_pods_t **out);

/*
 * Resolves DRA devices: returns in *out (returned: node_pods_free) a copy of
 * `in` (borrowed) in which every DRA device's uuid is resolve(user_data,
 * driver, pool, device): a UUID, "" (known, not a GPU: not_gpu set) or
 * NULL (unknown: unresolved). Each entry's
 * device_ids are its own device-plugin ids followed by the resolved UUIDs.
 * An entry's device-plugin ids are its first device_count - (the number of
 * its DRA devices with a uuid) ids (resolved UUIDs always come last), so resolving an
 * already resolved list again starts from the same ids.
 * An unknown list, or one without DRA devices, is copied as it is.
 * Returns 0, KGS_EINVAL (a resolved UUID over NODE_PODS_DEVICE_ID_MAX) or
 * KGS_ENOMEM, with a message; *out is NULL on failure.
 */
typedef const char *(*node_pods_resolve_fn)(void *user_data, const char *driver, const char *pool,
                                            const char *device);
int node_pods_resolve(const node_pods_t *in, node_pods_resolve_fn resolve, void *user_data,
                      node_pods_t **out, char *err, size_t errlen);

/* True when both lists say the same (known or not, the same reason, the
 * same entries in the same order, every device id and DRA field alike;
 * two NULLs are equal), so a caller can skip work on an unchanged list. */
bool node_pods_equal(const node_pods_t *a, const node_pods_t *b);

/* True when `resolved` (a node_pods_resolve() result) was resolved from a
 * list equal to `sent` (an agent's list: no uuid resolved): the same
 * entries, the same device-plugin ids and DRA devices, whatever uuids the
 * resolution gave. Lets a caller keep one resolved list instead of it and
 * a copy of what was sent. NULLs: true only when both are NULL. */
bool node_pods_resolved_from(const node_pods_t *resolved, const node_pods_t *sent);

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
