/*
 * fuzz_podres.c - the kubelet's pod-resources List answer, decoded with
 * protobuf-c from arbitrary bytes and turned into a pod map, as
 * podres_client does with what it reads from the kubelet socket.
 *
 * Invariants when the map builds: every device it lists can be looked up,
 * has at least one holder, is a "GPU-"/"MIG-" id without a "::" suffix (or
 * under amd.com/ a normalised PCI address or an AMD partition id), and
 * every holder's strings are non-NULL; every DRA device has a driver and a
 * device name, all its strings non-NULL, and the DRA list is sorted without
 * duplicates; the map equals itself rebuilt.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "amdgpu/amdgpu_parse.h"
#include "kube/pod_map.h"
#include "core/err.h"
#include "proto/podresources.pb-c.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int check_device(void *ud, const char *uuid, const pod_holder_t *holders, size_t n) {
    const pod_map_t *m = ud;
    FUZZ_CHECK(uuid && n >= 1 && holders);
    /* A UUID, or an index id the agent translates (plugins other than
     * NVIDIA's register NVML indexes). */
    unsigned gpu;
    int mig;
    bool index = pod_map_id_is_index(uuid, &gpu, &mig);
    /* An AMD id: a PCI address already in the normalised spelling, or a
     * partition id. */
    char bdf[AMDGPU_BDF_MAX];
    bool amd = (amdgpu_bdf_normalise(uuid, strlen(uuid), bdf) == 0 && strcmp(bdf, uuid) == 0) ||
               pod_map_id_is_amd_partition(uuid);
    FUZZ_CHECK(strncmp(uuid, "GPU-", 4) == 0 || strncmp(uuid, "MIG-", 4) == 0 ||
               (index && gpu <= 9999 && mig >= -1 && mig <= 9999) || amd);
    FUZZ_CHECK(strstr(uuid, "::") == NULL);
    for (size_t i = 0; i < n; i++) {
        FUZZ_CHECK(holders[i].namespace_ && holders[i].pod && holders[i].container);
        const char *res = holders[i].resource_name;
        FUZZ_CHECK(res && strncmp(res, amd ? "amd.com/" : "nvidia.com/", amd ? 8 : 11) == 0);
    }
    const pod_holder_t *h = NULL;
    size_t hn = 0;
    FUZZ_CHECK(pod_map_lookup(m, uuid, &h, &hn) == 0 && h == holders && hn == n);
    return 0;
}

static int check_dra(void *ud, const pod_dra_holder_t *h) {
    const pod_dra_holder_t **prev = ud;
    FUZZ_CHECK(h->namespace_ && h->pod && h->container && h->pool && h->share_id);
    FUZZ_CHECK(h->driver && h->driver[0] && h->device && h->device[0]);
    if (*prev) {
        const pod_dra_holder_t *p = *prev;
        int c = strcmp(p->namespace_, h->namespace_);
        if (!c)
            c = strcmp(p->pod, h->pod);
        if (!c)
            c = strcmp(p->container, h->container);
        if (!c)
            c = strcmp(p->driver, h->driver);
        if (!c)
            c = strcmp(p->pool, h->pool);
        if (!c)
            c = strcmp(p->device, h->device);
        if (!c)
            c = strcmp(p->share_id, h->share_id);
        FUZZ_CHECK(c < 0); /* sorted, no duplicate */
    }
    *prev = h;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    V1__ListPodResourcesResponse *r = v1__list_pod_resources_response__unpack(NULL, size, data);
    if (!r)
        return 0;
    pod_map_t *m = NULL, *again = NULL;
    char err[256];
    int rc = pod_map_from_response(r, &m, err, sizeof err);
    if (rc == 0) {
        FUZZ_CHECK(m != NULL);
        pod_map_foreach(m, check_device, m);
        const pod_dra_holder_t *prev = NULL;
        pod_map_foreach_dra(m, check_dra, &prev);
        FUZZ_CHECK(pod_map_from_response(r, &again, err, sizeof err) == 0);
        FUZZ_CHECK(pod_map_equal(m, again));
    } else {
        FUZZ_CHECK(m == NULL && (rc == KGS_ENOMEM || rc == KGS_ERANGE));
    }
    pod_map_free(again);
    pod_map_free(m);
    v1__list_pod_resources_response__free_unpacked(r, NULL);
    return 0;
}
