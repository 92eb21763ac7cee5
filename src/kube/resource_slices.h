/*
 * resource_slices.h - DRA ResourceSlices (resource.k8s.io/v1), the part the
 * aggregator needs to turn the kubelet's (driver, pool, device) names into
 * GPU UUIDs: JSON decoding of slices (list pages and watch events) and an
 * index kept current by list + watch. Pure: no I/O; jansson does the JSON.
 * One owner thread (the loop) per index.
 *
 * What is read of a slice: metadata.name and .resourceVersion, spec.driver,
 * spec.pool.name and .generation, spec.nodeName, and spec.devices[].name
 * with the device's "uuid" attribute (attributes.uuid.string, or the fully
 * qualified "<driver>/uuid"). NVIDIA's DRA driver (gpu.nvidia.com) puts
 * the NVML UUID there for GPUs ("GPU-...") and MIG devices ("MIG-..."); any
 * driver doing the same works alike. A device whose uuid is missing or not
 * GPU-/MIG- is known and not a GPU (a NIC, a VFIO function: "" on lookup),
 * except a device of AMD's DRA driver (gpu.amd.com), told by its "type"
 * attribute: a whole GPU ("amdgpu") is looked up as its normalised PCI
 * address ("resource.kubernetes.io/pciBusID", or the older "pciAddr":
 * "0000:19:00.0"), a partition ("amdgpu-partition") as
 * "amdgpu-partition:<parent's address>/<partitionProfile>" (see
 * pod_map_id_is_amd_partition: its holder is a gap, never the whole GPU).
 * Bounds are Kubernetes' own: a driver name is at most 63 bytes, a pool
 * name 253, a device name a DNS label (63), a string attribute 64. Input
 * over a bound is refused with KGS_ERANGE, never truncated.
 */
#ifndef KGS_KUBE_RESOURCE_SLICES_H
#define KGS_KUBE_RESOURCE_SLICES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "kube/kube_pods.h"

#define DRA_DRIVER_MAX 63
#define DRA_POOL_MAX 253
#define DRA_DEVICE_MAX 63
#define DRA_UUID_MAX 64
#define DRA_SLICE_MAX_DEVICES 1024 /* Kubernetes allows 128 per slice today */

typedef struct {
    char name[DRA_DEVICE_MAX + 1];
    char uuid[DRA_UUID_MAX + 1]; /* "GPU-..."/"MIG-...", an AMD GPU's id; "" when not a GPU */
} dra_slice_device_t;

/* One slice. Public fields read-only; devices owned (dra_slice_deinit). */
typedef struct {
    char name[KUBE_NAME_MAX + 1];
    char resource_version[KUBE_RV_MAX + 1];
    char driver[DRA_DRIVER_MAX + 1];
    char pool[DRA_POOL_MAX + 1];
    int64_t generation;
    char node[KUBE_NODE_MAX + 1]; /* spec.nodeName; "" for slices of several nodes */
    dra_slice_device_t *devices;
    size_t device_count;
} dra_slice_t;

/*
 * Decodes one ResourceSlice object (borrowed) into *out (release with
 * dra_slice_deinit, also after a failure). Required, non-empty:
 * metadata.name, metadata.resourceVersion, spec.driver, spec.pool.name and
 * every device's name. Returns 0, or
 * with "resourceslice NAME: <field>: <reason>" in err: KGS_EINVAL (missing,
 * wrong type), KGS_ERANGE (over a bound; the name is still filled when it
 * was valid), KGS_ENOMEM.
 */
int dra_slice_from_json(const json_t *obj, dra_slice_t *out, char *err, size_t errlen);
void dra_slice_deinit(dra_slice_t *s);

typedef struct {
    dra_slice_t *items; /* owned: count slices */
    size_t count;
    char resource_version[KUBE_RV_MAX + 1];
    char continue_token[KUBE_CONTINUE_MAX + 1];
    size_t skipped; /* items refused with KGS_ERANGE */
    char skip_reason[256];
} dra_slice_list_t;

/* Parses a ResourceSliceList page (buf borrowed). An item over a bound is
 * skipped and counted; any other defect fails the page. Returns 0,
 * KGS_EINVAL, KGS_ERANGE or KGS_ENOMEM with a message; on failure *out is
 * empty. Release with dra_slice_list_deinit. */
int dra_slice_list_parse(const char *buf, size_t len, dra_slice_list_t *out, char *err,
                         size_t errlen);
void dra_slice_list_deinit(dra_slice_list_t *l);

/* Parses one watch event line, as kube_watch_event_parse does for pods:
 * ADDED/MODIFIED/DELETED fill *slice (release with dra_slice_deinit) and
 * rv; BOOKMARK only rv; ERROR *error_code and the message in err (returns
 * 0). slice may be NULL for ERROR/BOOKMARK only callers. */
int dra_slice_event_parse(const char *line, size_t len, kube_event_type_t *type, dra_slice_t *slice,
                          char *rv, size_t rvlen, int *error_code, char *err, size_t errlen);

/* ---- index --------------------------------------------------------------------- */

/* Slices by name, and their devices by (driver, pool, device). Opaque. */
typedef struct dra_index dra_index_t;

/* Returns 0 or KGS_ENOMEM. Returned: dra_index_free(). */
int dra_index_new(dra_index_t **out);
void dra_index_free(dra_index_t *x);

/* A relist: the index becomes slices[0..n) (taken: copied into the index's
 * own compact form and each slices[i] left without devices) as of rv. Returns 0 or
 * KGS_ENOMEM (index unchanged; the slices are still the caller's). */
int dra_index_replace_all(dra_index_t *x, dra_slice_t *slices, size_t n, const char *rv);

/* One watch event: ADDED/MODIFIED put *slice (taken as above) by name;
 * DELETED removes the slice of that name; BOOKMARK moves rv only. *changed
 * (may be NULL) says whether any slice changed. Returns 0, KGS_EINVAL
 * (ERROR, no slice) or KGS_ENOMEM. */
int dra_index_apply(dra_index_t *x, kube_event_type_t type, dra_slice_t *slice, const char *rv,
                    bool *changed);

/*
 * The device's UUID: "GPU-..."/"MIG-..." when a slice lists it with one;
 * "" when a slice lists it without (not a GPU); NULL when no slice lists
 * (driver, pool, device). When two slices of one pool list the device (a
 * driver replacing its slices), the newest pool generation wins. Borrowed:
 * valid until the index next changes.
 */
const char *dra_index_lookup(dra_index_t *x, const char *driver, const char *pool,
                             const char *device);

size_t dra_index_slice_count(const dra_index_t *x);
size_t dra_index_device_count(const dra_index_t *x);
const char *dra_index_resource_version(const dra_index_t *x);

#endif
