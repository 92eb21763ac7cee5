/*
 * pod_map.h - which pod holds which GPU: an immutable map from a device id
 * (the string NVML reports: "GPU-<uuid>" or "MIG-<uuid>"; for an AMD GPU its
 * PCI address, "0000:19:00.0") to the containers
 * the kubelet assigned it to, built from one pod-resources List answer.
 * Pure: no I/O.
 *
 * What counts (everything else in the answer is ignored, silently):
 * - devices under a resource name starting with "nvidia.com/" (the NVIDIA
 *   device plugin: "nvidia.com/gpu", and with the mixed MIG strategy
 *   "nvidia.com/mig-3g.40gb" etc.); CPU ids and other vendors' resources
 *   ("example.com/fpga") are not GPUs;
 * - device ids that start with "GPU-" or "MIG-", followed by 1 to 90 of
 *   [0-9A-Za-z-/] (the "/" admits the old "MIG-GPU-<uuid>/<gi>/<ci>" form),
 *   optionally followed by a time-slicing replica suffix "::<digits>" that is
 *   stripped: "GPU-x::3" is held as "GPU-x". NVIDIA's device plugin
 *   registers devices with the kubelet by these UUIDs whatever its
 *   deviceIDStrategy (which only picks what the container is told);
 * - index ids, which other plugins (and older setups) register: "<gpu>"
 *   and "<gpu>:<mig>" (NVML indexes, up to 4 digits each, the same
 *   optional replica suffix), kept as they are: the agent translates them
 *   to UUIDs through its snapshot (pod_map_id_is_index). Other forms
 *   ("nvidia0" from GKE's plugin: a device minor number) are ignored here;
 *   the aggregator then reports the pods that asked for GPUs as gaps
 *   (cluster/workload.c).
 * - devices under a resource name starting with "amd.com/" (AMD's device
 *   plugin, ROCm/k8s-device-plugin: "amd.com/gpu", and with its mixed
 *   resource naming strategy one resource per partition profile,
 *   "amd.com/cpx_nps4"). Its ids are PCI addresses, held normalised to
 *   the amdgpu reader's spelling ("19:00.0", "0000:19:00.0" and
 *   "0000:1A:00.0" become "0000:19:00.0" / "0000:1a:00.0"), so the agent can
 *   find the GPU by its pci_bus_id; and "amdgpu_xcp_<n>", a further
 *   partition of a partitioned MI300, kept as it is (no GPU record has it:
 *   the aggregator reports its holder as a gap). Under a resource whose
 *   profile splits the GPU ("amd.com/cpx_nps4", dpx_, qpx_, tpx_) a PCI
 *   address is the GPU's first partition, not the GPU, and is held as
 *   "amdgpu-partition:0000:19:00.0/cpx_nps4" (a gap alike). Other ids
 *   under amd.com/ are ignored, as are PCI addresses under nvidia.com/;
 * - DRA devices (ContainerResources.dynamic_resources): every
 *   (driver, pool, device) a claim gave a container, whatever the driver,
 *   with the share id when the kubelet sends one. The kubelet names the
 *   device as its driver does ("gpu-0"), not by UUID: these are kept as
 *   they are, apart from the device map, for the aggregator to resolve
 *   (pod_map_foreach_dra). A container that lists one device twice holds
 *   it once; two containers sharing a claim hold it each.
 * A device can have several holders (time-slicing replicas in several pods,
 * or an init container whose device the kubelet reused for an app
 * container); the same (namespace, pod, container) appears once per device
 * even when it holds several replicas of it.
 *
 * Thread safety: a map is immutable once built, so any number of threads
 * may read it at once; one owner frees it.
 */
#ifndef KGS_KUBE_POD_MAP_H
#define KGS_KUBE_POD_MAP_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/podresources.pb-c.h"

typedef struct pod_map pod_map_t;

/* One container holding a device. All fields public, read-only, borrowed
 * from the map (valid until pod_map_free); never NULL (may be ""). */
typedef struct {
    const char *namespace_;
    const char *pod;
    const char *container;
    const char *resource_name; /* e.g. "nvidia.com/gpu", "nvidia.com/mig-3g.40gb", "amd.com/gpu" */
} pod_holder_t;

/*
 * Builds the map from a decoded List answer (borrowed for the call; the map
 * copies what it keeps). NULL entries and NULL strings in `r` are tolerated
 * (treated as absent / ""). Returns 0 with the map in *out (returned: free
 * with pod_map_free), KGS_EINVAL (r or out NULL) or KGS_ENOMEM / KGS_ERANGE
 * (the answer is too large to index), with a message; *out is then NULL.
 */
int pod_map_from_response(const V1__ListPodResourcesResponse *r, pod_map_t **out, char *err,
                          size_t errlen);

/* An empty map (no pod holds a GPU). Returns NULL when out of memory. */
pod_map_t *pod_map_new_empty(void);

/*
 * The holders of `device_uuid` (compared exactly; pass the UUID as NVML
 * reports it, without a "::N" suffix). Returns 0 with *holders (borrowed,
 * valid until pod_map_free) and *n >= 1, or KGS_ENOTFOUND with *holders =
 * NULL and *n = 0 (no pod holds it), or KGS_EINVAL (a NULL argument).
 * Holders are sorted by namespace, pod, container.
 */
int pod_map_lookup(const pod_map_t *m, const char *device_uuid, const pod_holder_t **holders,
                   size_t *n);

/* Whether a device id of the map is an index id ("0", "1:0"), not a UUID;
 * then *gpu and *mig (-1: a whole GPU) are its NVML indexes. */
bool pod_map_id_is_index(const char *device_id, unsigned *gpu, int *mig);

/* The prefix of the id the aggregator gives a partition device of AMD's
 * DRA driver (resource_slices.h), beside the device plugin's
 * "amdgpu_xcp_<n>". */
#define POD_MAP_AMD_PARTITION_PREFIX "amdgpu-partition:"

/* Whether a device id names a partition of an AMD GPU ("amdgpu_xcp_<n>",
 * "amdgpu-partition:..."): a device no GPU record of a snapshot stands for,
 * so its holder's value is unknown (a gap), never the whole GPU's. */
bool pod_map_id_is_amd_partition(const char *device_id);

/* Number of devices with at least one holder. */
size_t pod_map_device_count(const pod_map_t *m);

/*
 * Calls visit for every device in UUID order (strcmp), with its holders
 * (all borrowed for the call). Stops at the first non-zero return and
 * returns it; returns 0 after the last device. The map must not be freed
 * from inside visit.
 */
typedef int (*pod_map_visit_cb)(void *user_data, const char *device_uuid,
                                const pod_holder_t *holders, size_t n);
int pod_map_foreach(const pod_map_t *m, pod_map_visit_cb visit, void *user_data);

/* One DRA device held by one container. Borrowed from the map. */
typedef struct {
    const char *namespace_;
    const char *pod;
    const char *container;
    const char *driver;
    const char *pool;
    const char *device;
    const char *share_id; /* "" when none */
} pod_dra_holder_t;

/* Number of (container, DRA device) pairs. */
size_t pod_map_dra_count(const pod_map_t *m);

/* Calls visit for every (container, DRA device) pair, sorted by namespace,
 * pod, container, driver, pool, device, share id. Stops at the first
 * non-zero return and returns it. */
typedef int (*pod_map_dra_cb)(void *user_data, const pod_dra_holder_t *h);
int pod_map_foreach_dra(const pod_map_t *m, pod_map_dra_cb visit, void *user_data);

/* True when both maps hold the same devices with the same holders, and
 * the same DRA devices (two NULLs are equal), so a caller can publish only
 * changes. */
bool pod_map_equal(const pod_map_t *a, const pod_map_t *b);

/* Frees the map and every string it holds. NULL does nothing. */
void pod_map_free(pod_map_t *m);

#endif
