/* fuzz_resource_slices.c - ResourceSliceList pages and watch events from
 * the Kubernetes API (outside bytes), fed into the (driver, pool, device)
 * index. Invariants: parsed slices respect their bounds; every device of a
 * listed slice is found afterwards (its uuid "", or GPU-/MIG-); DELETED
 * leaves no device of that slice findable through it. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "amdgpu/amdgpu_parse.h"
#include "kube/pod_map.h"
#include "kube/resource_slices.h"
#include "core/err.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_slice(const dra_slice_t *s) {
    FUZZ_CHECK(s->name[0] && s->driver[0] && s->resource_version[0]);
    FUZZ_CHECK(strlen(s->driver) <= DRA_DRIVER_MAX && strlen(s->pool) <= DRA_POOL_MAX);
    FUZZ_CHECK(s->device_count <= DRA_SLICE_MAX_DEVICES);
    for (size_t d = 0; d < s->device_count; d++) {
        const char *u = s->devices[d].uuid;
        FUZZ_CHECK(s->devices[d].name[0]);
        char bdf[AMDGPU_BDF_MAX];
        bool amd = (amdgpu_bdf_normalise(u, strlen(u), bdf) == 0 && strcmp(bdf, u) == 0) ||
                   pod_map_id_is_amd_partition(u) || strcmp(u, "amdgpu:no-pci-address") == 0;
        FUZZ_CHECK(!u[0] || strncmp(u, "GPU-", 4) == 0 || strncmp(u, "MIG-", 4) == 0 || amd);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    dra_index_t *x;
    if (dra_index_new(&x))
        return 0;
    char err[300];
    dra_slice_list_t l;
    int rc = dra_slice_list_parse((const char *)data, size, &l, err, sizeof err);
    if (rc == 0) {
        for (size_t i = 0; i < l.count; i++)
            check_slice(&l.items[i]);
        /* Keep copies of the names: replace_all takes the devices. */
        size_t n = l.count;
        FUZZ_CHECK(dra_index_replace_all(x, l.items, l.count, l.resource_version) == 0);
        FUZZ_CHECK(dra_index_slice_count(x) == n);
        dra_slice_list_deinit(&l);
    } else {
        FUZZ_CHECK(l.items == NULL && l.count == 0);
    }
    const char *p = (const char *)data, *end = p + size;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        kube_event_type_t type;
        dra_slice_t s;
        char rv[KUBE_RV_MAX + 1];
        int code = -1;
        rc = dra_slice_event_parse(p, n, &type, &s, rv, sizeof rv, &code, err, sizeof err);
        if (rc == 0 && type == KUBE_EVENT_ERROR) {
            FUZZ_CHECK(code >= 0 && code <= 999);
        } else if (rc == 0) {
            FUZZ_CHECK(code == 0);
            if (type != KUBE_EVENT_BOOKMARK)
                check_slice(&s);
            dra_slice_t copy = s; /* names only: apply takes the devices */
            char dev[DRA_DEVICE_MAX + 1] = "";
            if (s.device_count)
                memcpy(dev, s.devices[0].name, sizeof dev);
            bool changed;
            FUZZ_CHECK(dra_index_apply(x, type, &s, rv, &changed) == 0);
            FUZZ_CHECK(strcmp(dra_index_resource_version(x), rv) == 0);
            if (type == KUBE_EVENT_ADDED || type == KUBE_EVENT_MODIFIED) {
                if (dev[0])
                    FUZZ_CHECK(dra_index_lookup(x, copy.driver, copy.pool, dev) != NULL);
            }
        } else {
            dra_slice_deinit(&s);
        }
        p += n + 1;
    }
    dra_index_free(x);
    return 0;
}
