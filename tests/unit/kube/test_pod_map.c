/* The pod map: which container holds which GPU / MIG device, from a
 * pod-resources List answer. pod_map.c is included so that its allocations
 * go through a failing allocator (every ENOMEM path is taken, nothing leaks). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* ---- failing allocator ---------------------------------------------------- */

static long alloc_live;    /* blocks allocated and not yet freed */
static long alloc_fail_at; /* 1-based allocation number that fails; 0 = none */
static long alloc_count;

static void *fx_malloc(size_t n) {
    if (alloc_fail_at && ++alloc_count == alloc_fail_at)
        return NULL;
    void *p = malloc(n);
    if (p)
        alloc_live++;
    return p;
}

static void *fx_calloc(size_t n, size_t size) {
    if (alloc_fail_at && ++alloc_count == alloc_fail_at)
        return NULL;
    void *p = calloc(n, size);
    if (p)
        alloc_live++;
    return p;
}

static void fx_free(void *p) {
    if (p)
        alloc_live--;
    free(p);
}

#define malloc(n) fx_malloc(n)
#define calloc(n, s) fx_calloc(n, s)
#define free(p) fx_free(p)
#include "kube/pod_map.c"
#undef malloc
#undef calloc
#undef free

#include "core/err.h"

/* ---- building answers ------------------------------------------------------- */

#define MAX_ROWS 12

/* One row = one pod with one container holding one resource's ids. */
typedef struct {
    const char *ns, *pod, *ctr, *res;
    const char *ids[4];
} row_t;

typedef struct {
    V1__ListPodResourcesResponse resp;
    V1__PodResources pods[MAX_ROWS];
    V1__PodResources *pod_ptrs[MAX_ROWS];
    V1__ContainerResources ctrs[MAX_ROWS];
    V1__ContainerResources *ctr_ptrs[MAX_ROWS];
    V1__ContainerDevices devs[MAX_ROWS];
    V1__ContainerDevices *dev_ptrs[MAX_ROWS];
    char *ids[MAX_ROWS][4];
    int64_t cpus[2];
} answer_t;

static void answer_build(answer_t *a, const row_t *rows, size_t n) {
    assert_true(n <= MAX_ROWS);
    memset(a, 0, sizeof *a);
    a->resp = (V1__ListPodResourcesResponse)V1__LIST_POD_RESOURCES_RESPONSE__INIT;
    a->cpus[0] = 2;
    a->cpus[1] = 3;
    for (size_t i = 0; i < n; i++) {
        a->devs[i] = (V1__ContainerDevices)V1__CONTAINER_DEVICES__INIT;
        a->devs[i].resource_name = (char *)rows[i].res;
        size_t k = 0;
        while (k < 4 && rows[i].ids[k]) {
            a->ids[i][k] = (char *)rows[i].ids[k];
            k++;
        }
        a->devs[i].device_ids = a->ids[i];
        a->devs[i].n_device_ids = k;
        a->dev_ptrs[i] = &a->devs[i];
        a->ctrs[i] = (V1__ContainerResources)V1__CONTAINER_RESOURCES__INIT;
        a->ctrs[i].name = (char *)rows[i].ctr;
        a->ctrs[i].devices = &a->dev_ptrs[i];
        a->ctrs[i].n_devices = 1;
        a->ctrs[i].cpu_ids = a->cpus;
        a->ctrs[i].n_cpu_ids = 2;
        a->ctr_ptrs[i] = &a->ctrs[i];
        a->pods[i] = (V1__PodResources)V1__POD_RESOURCES__INIT;
        a->pods[i].namespace_ = (char *)rows[i].ns;
        a->pods[i].name = (char *)rows[i].pod;
        a->pods[i].containers = &a->ctr_ptrs[i];
        a->pods[i].n_containers = 1;
        a->pod_ptrs[i] = &a->pods[i];
    }
    a->resp.pod_resources = a->pod_ptrs;
    a->resp.n_pod_resources = n;
}

static pod_map_t *map_of(const row_t *rows, size_t n) {
    answer_t a;
    answer_build(&a, rows, n);
    pod_map_t *m = (pod_map_t *)(uintptr_t)0x1; /* sentinel: must be overwritten */
    char err[128] = "";
    assert_int_equal(pod_map_from_response(&a.resp, &m, err, sizeof err), 0);
    assert_non_null(m);
    return m;
}

static void assert_holder(const pod_holder_t *h, const char *ns, const char *pod, const char *ctr,
                          const char *res) {
    assert_string_equal(h->namespace_, ns);
    assert_string_equal(h->pod, pod);
    assert_string_equal(h->container, ctr);
    assert_string_equal(h->resource_name, res);
}

static int setup(void **state) {
    (void)state;
    alloc_live = alloc_count = alloc_fail_at = 0;
    return 0;
}

static int teardown(void **state) {
    (void)state;
    assert_int_equal(alloc_live, 0); /* every map was released */
    return 0;
}

/* ---- cases -------------------------------------------------------------------- */

static const row_t cluster_rows[] = {
    {"ml", "vllm-0", "main", "nvidia.com/gpu", {"GPU-aaaa-1111"}},
    {"ml", "tgi-1", "server", "nvidia.com/gpu", {"GPU-bbbb-2222::1"}},
    {"dev", "notebook", "jupyter", "nvidia.com/gpu", {"GPU-bbbb-2222::0"}},
    {"ml", "small", "main", "nvidia.com/mig-3g.40gb", {"MIG-cccc-3333"}},
    {"ml", "fpga", "main", "example.com/fpga", {"GPU-dddd-4444"}},
};

static void test_pod_map_attributes_gpu_mig_and_time_sliced_holders(void **state) {
    (void)state;
    pod_map_t *m = map_of(cluster_rows, 5);
    assert_int_equal(pod_map_device_count(m), 3);

    const pod_holder_t *h = (const pod_holder_t *)(uintptr_t)0x1;
    size_t n = 99;
    assert_int_equal(pod_map_lookup(m, "GPU-aaaa-1111", &h, &n), 0);
    assert_int_equal(n, 1);
    assert_holder(&h[0], "ml", "vllm-0", "main", "nvidia.com/gpu");

    /* Time-slicing: the ::N suffix is stripped; both holders, sorted. */
    assert_int_equal(pod_map_lookup(m, "GPU-bbbb-2222", &h, &n), 0);
    assert_int_equal(n, 2);
    assert_holder(&h[0], "dev", "notebook", "jupyter", "nvidia.com/gpu");
    assert_holder(&h[1], "ml", "tgi-1", "server", "nvidia.com/gpu");

    assert_int_equal(pod_map_lookup(m, "MIG-cccc-3333", &h, &n), 0);
    assert_int_equal(n, 1);
    assert_holder(&h[0], "ml", "small", "main", "nvidia.com/mig-3g.40gb");
    pod_map_free(m);
}

static void test_pod_map_ignores_other_vendors_resources_even_with_gpu_like_ids(void **state) {
    (void)state;
    pod_map_t *m = map_of(cluster_rows, 5);
    const pod_holder_t *h = (const pod_holder_t *)(uintptr_t)0x1;
    size_t n = 99;
    assert_int_equal(pod_map_lookup(m, "GPU-dddd-4444", &h, &n), KGS_ENOTFOUND);
    assert_null(h);
    assert_int_equal(n, 0);
    /* A suffixed id is not a UUID to look up. */
    assert_int_equal(pod_map_lookup(m, "GPU-bbbb-2222::1", &h, &n), KGS_ENOTFOUND);
    pod_map_free(m);
}

static void test_pod_map_ignores_ids_that_are_not_device_uuids(void **state) {
    (void)state;
    char long_id[128];
    memset(long_id, 'a', sizeof long_id);
    memcpy(long_id, "GPU-", 4);
    long_id[4 + POD_MAP_UUID_BODY_MAX + 1] = '\0'; /* one byte too long */
    const row_t rows[] = {
        {"ml", "a", "c", "nvidia.com/gpu", {"nvidia0", "12345", "", "GPU-"}},
        {"ml", "h", "c", "nvidia.com/gpu", {"1:", ":1", "1:2:3", "1:a"}},
        {"ml", "b", "c", "nvidia.com/gpu", {"GPU-x::", "GPU-x::a", "GPU-x:1", "gpu-x"}},
        {"ml", "c", "c", "nvidia.com/gpu", {"GPU-x y", "GPU-x::1::2", "GPU-\xc3\xa9", long_id}},
        {"ml", "d", "c", "nvidia.com/", {"GPU-x"}},
        {"ml", "e", "c", "nvidia.com", {"GPU-x"}},
        {"ml", "f", "c", "", {"GPU-x"}},
        {"ml", "g", "c", "cpu", {"GPU-x"}},
    };
    pod_map_t *m = map_of(rows, 8);
    assert_int_equal(pod_map_device_count(m), 0);
    pod_map_free(m);
}

/* Plugins other than NVIDIA's register NVML indexes: "<gpu>" and
 * "<gpu>:<mig>", kept as they are for the agent to translate. */
static void test_pod_map_keeps_index_ids_for_the_agent(void **state) {
    (void)state;
    const row_t rows[] = {
        {"ml", "a", "c", "nvidia.com/gpu", {"0", "2::3"}},
        {"ml", "b", "c", "nvidia.com/mig-3g.40gb", {"1:0", "1:1::2"}},
    };
    pod_map_t *m = map_of(rows, 2);
    const pod_holder_t *h;
    size_t n;
    assert_int_equal(pod_map_device_count(m), 4);
    assert_int_equal(pod_map_lookup(m, "0", &h, &n), 0);
    assert_string_equal(h[0].pod, "a");
    assert_int_equal(pod_map_lookup(m, "2", &h, &n), 0);
    assert_int_equal(pod_map_lookup(m, "1:1", &h, &n), 0);
    assert_string_equal(h[0].pod, "b");
    unsigned gpu = 99;
    int mig = 99;
    assert_true(pod_map_id_is_index("1:1", &gpu, &mig));
    assert_int_equal(gpu, 1);
    assert_int_equal(mig, 1);
    assert_true(pod_map_id_is_index("7", &gpu, &mig));
    assert_int_equal(gpu, 7);
    assert_int_equal(mig, -1);
    assert_false(pod_map_id_is_index("GPU-7", &gpu, &mig));
    assert_false(pod_map_id_is_index("7x", &gpu, &mig));
    pod_map_free(m);
}

static void test_pod_map_accepts_legacy_mig_ids_and_the_longest_uuid(void **state) {
    (void)state;
    char longest[128];
    memset(longest, 'f', sizeof longest);
    memcpy(longest, "GPU-", 4);
    longest[4 + POD_MAP_UUID_BODY_MAX] = '\0';
    const row_t rows[] = {
        {"ml", "old", "c", "nvidia.com/mig-1g.5gb", {"MIG-GPU-eeee-5555/1/0"}},
        {"ml", "big", "c", "nvidia.com/gpu", {longest}},
    };
    pod_map_t *m = map_of(rows, 2);
    const pod_holder_t *h;
    size_t n;
    assert_int_equal(pod_map_lookup(m, "MIG-GPU-eeee-5555/1/0", &h, &n), 0);
    assert_int_equal(pod_map_lookup(m, longest, &h, &n), 0);
    pod_map_free(m);
}

static void test_pod_map_counts_a_container_holding_several_replicas_once(void **state) {
    (void)state;
    const row_t rows[] = {
        {"ml", "p", "c", "nvidia.com/gpu", {"GPU-x::0", "GPU-x::1", "GPU-x::3", "GPU-y"}},
        {"ml", "p", "init", "nvidia.com/gpu", {"GPU-x::2"}},
    };
    pod_map_t *m = map_of(rows, 2);
    assert_int_equal(pod_map_device_count(m), 2);
    const pod_holder_t *h;
    size_t n;
    assert_int_equal(pod_map_lookup(m, "GPU-x", &h, &n), 0);
    assert_int_equal(n, 2);
    assert_holder(&h[0], "ml", "p", "c", "nvidia.com/gpu");
    assert_holder(&h[1], "ml", "p", "init", "nvidia.com/gpu");
    pod_map_free(m);
}

typedef struct {
    const char *seen[8];
    size_t n_holders[8];
    int calls;
    int stop_after;
} visit_fx_t;

static int visit(void *ud, const char *uuid, const pod_holder_t *holders, size_t n) {
    visit_fx_t *v = ud;
    assert_non_null(holders);
    v->seen[v->calls] = uuid;
    v->n_holders[v->calls] = n;
    v->calls++;
    return v->calls == v->stop_after ? 42 : 0;
}

static void test_pod_map_foreach_visits_devices_in_uuid_order_and_stops_on_request(void **state) {
    (void)state;
    pod_map_t *m = map_of(cluster_rows, 5);
    visit_fx_t v = {.stop_after = 0};
    assert_int_equal(pod_map_foreach(m, visit, &v), 0);
    assert_int_equal(v.calls, 3);
    assert_string_equal(v.seen[0], "GPU-aaaa-1111");
    assert_string_equal(v.seen[1], "GPU-bbbb-2222");
    assert_string_equal(v.seen[2], "MIG-cccc-3333");
    assert_int_equal(v.n_holders[1], 2);

    visit_fx_t w = {.stop_after = 2};
    assert_int_equal(pod_map_foreach(m, visit, &w), 42);
    assert_int_equal(w.calls, 2);
    pod_map_free(m);
}

static void test_pod_map_equal_ignores_listing_order_and_sees_changes(void **state) {
    (void)state;
    row_t reversed[5];
    for (size_t i = 0; i < 5; i++)
        reversed[i] = cluster_rows[4 - i];
    pod_map_t *a = map_of(cluster_rows, 5), *b = map_of(reversed, 5);
    assert_true(pod_map_equal(a, b));

    row_t moved[5];
    memcpy(moved, cluster_rows, sizeof moved);
    moved[0].pod = "vllm-1"; /* the GPU went to another pod */
    pod_map_t *c = map_of(moved, 5);
    assert_false(pod_map_equal(a, c));

    pod_map_t *empty = pod_map_new_empty();
    assert_non_null(empty);
    assert_false(pod_map_equal(a, empty));
    assert_false(pod_map_equal(a, NULL));
    assert_true(pod_map_equal(NULL, NULL));
    pod_map_free(a);
    pod_map_free(b);
    pod_map_free(c);
    pod_map_free(empty);
}

static void test_pod_map_tolerates_null_entries_and_strings(void **state) {
    (void)state;
    const row_t rows[] = {
        {NULL, NULL, NULL, "nvidia.com/gpu", {"GPU-x"}},
        {"ml", "p", "c", NULL, {"GPU-y"}},
        {"ml", "q", "c", "nvidia.com/gpu", {"GPU-z"}},
    };
    answer_t a;
    answer_build(&a, rows, 3);
    a.ids[2][1] = NULL; /* a NULL id after the real ones */
    a.devs[2].n_device_ids = 2;
    a.pod_ptrs[1] = NULL;
    pod_map_t *m = NULL;
    assert_int_equal(pod_map_from_response(&a.resp, &m, NULL, 0), 0);
    const pod_holder_t *h;
    size_t n;
    assert_int_equal(pod_map_lookup(m, "GPU-x", &h, &n), 0);
    assert_holder(&h[0], "", "", "", "nvidia.com/gpu");
    assert_int_equal(pod_map_lookup(m, "GPU-y", &h, &n), KGS_ENOTFOUND);
    assert_int_equal(pod_map_lookup(m, "GPU-z", &h, &n), 0);
    pod_map_free(m);

    /* An array pointer that is NULL while its count is not. */
    a.resp.pod_resources = NULL;
    assert_int_equal(pod_map_from_response(&a.resp, &m, NULL, 0), 0);
    assert_int_equal(pod_map_device_count(m), 0);
    pod_map_free(m);
}

static void test_pod_map_rejects_null_arguments_with_einval(void **state) {
    (void)state;
    answer_t a;
    answer_build(&a, cluster_rows, 1);
    pod_map_t *m = (pod_map_t *)(uintptr_t)0x1;
    char err[128] = "";
    assert_int_equal(pod_map_from_response(NULL, &m, err, sizeof err), KGS_EINVAL);
    assert_null(m);
    assert_string_equal(err, "pod map: response is NULL");
    assert_int_equal(pod_map_from_response(&a.resp, NULL, err, sizeof err), KGS_EINVAL);

    const pod_holder_t *h;
    size_t n;
    assert_int_equal(pod_map_lookup(NULL, "GPU-x", &h, &n), KGS_EINVAL);
    pod_map_t *e = pod_map_new_empty();
    assert_int_equal(pod_map_lookup(e, NULL, &h, &n), KGS_EINVAL);
    assert_int_equal(pod_map_lookup(e, "GPU-x", &h, &n), KGS_ENOTFOUND);
    assert_int_equal(pod_map_device_count(NULL), 0);
    assert_int_equal(pod_map_foreach(NULL, visit, NULL), 0);
    pod_map_free(e);
    pod_map_free(NULL);
}

static void test_pod_map_reads_the_wire_format(void **state) {
    (void)state;
    answer_t a;
    answer_build(&a, cluster_rows, 5);
    size_t len = v1__list_pod_resources_response__get_packed_size(&a.resp);
    uint8_t *buf = malloc(len);
    assert_non_null(buf);
    v1__list_pod_resources_response__pack(&a.resp, buf);
    V1__ListPodResourcesResponse *r = v1__list_pod_resources_response__unpack(NULL, len, buf);
    assert_non_null(r);
    pod_map_t *m = NULL;
    assert_int_equal(pod_map_from_response(r, &m, NULL, 0), 0);
    pod_map_t *direct = map_of(cluster_rows, 5);
    assert_true(pod_map_equal(m, direct));
    pod_map_free(m);
    pod_map_free(direct);
    v1__list_pod_resources_response__free_unpacked(r, NULL);
    free(buf);
}

/* ---- AMD: ROCm/k8s-device-plugin's ids ------------------------------------------ */

/*
 * One node with both vendors, as its kubelet lists it. AMD's plugin
 * registers "amd.com/gpu" (and with --resource_naming_strategy=mixed one
 * resource per partition profile, "amd.com/cpx_nps4") and names each device
 * by its PCI address, the basename of
 * /sys/module/amdgpu/drivers/pci:amdgpu/0000:19:00.0, and each further
 * MI300 partition by /sys/devices/platform/amdgpu_xcp_<n>
 * (ROCm/k8s-device-plugin internal/pkg/amdgpu/amdgpu.go GetAMDGPUs,
 * cmd/k8s-device-plugin/main.go getResourceList, v1.31.0.10-16-ged76468).
 */
static const row_t mixed_node_rows[] = {
    {"ml", "vllm-nv", "main", "nvidia.com/gpu", {"GPU-aaaa-1111"}},
    {"ml", "vllm-amd", "main", "amd.com/gpu", {"0000:19:00.0", "0000:3b:00.0"}},
    {"ml", "sglang-amd", "server", "amd.com/gpu", {"0000:1A:00.0"}},
    {"ml", "short", "main", "amd.com/gpu", {"9c:00.0"}},
    {"ml", "cpx", "main", "amd.com/cpx_nps4", {"0000:bb:00.0", "amdgpu_xcp_30"}},
};

static void test_pod_map_attributes_amd_devices_by_normalised_pci_address(void **state) {
    (void)state;
    pod_map_t *m = map_of(mixed_node_rows, 5);
    assert_int_equal(pod_map_device_count(m), 7);
    const pod_holder_t *h = (const pod_holder_t *)(uintptr_t)0x1;
    size_t n = 99;
    assert_int_equal(pod_map_lookup(m, "GPU-aaaa-1111", &h, &n), 0);
    assert_holder(&h[0], "ml", "vllm-nv", "main", "nvidia.com/gpu");
    assert_int_equal(pod_map_lookup(m, "0000:19:00.0", &h, &n), 0);
    assert_int_equal(n, 1);
    assert_holder(&h[0], "ml", "vllm-amd", "main", "amd.com/gpu");
    assert_int_equal(pod_map_lookup(m, "0000:3b:00.0", &h, &n), 0);
    assert_holder(&h[0], "ml", "vllm-amd", "main", "amd.com/gpu");
    /* Upper case and a missing domain are spelled as the amdgpu reader
     * spells its pci_bus_id. */
    assert_int_equal(pod_map_lookup(m, "0000:1a:00.0", &h, &n), 0);
    assert_holder(&h[0], "ml", "sglang-amd", "server", "amd.com/gpu");
    assert_int_equal(pod_map_lookup(m, "0000:1A:00.0", &h, &n), KGS_ENOTFOUND);
    assert_int_equal(pod_map_lookup(m, "0000:9c:00.0", &h, &n), 0);
    assert_holder(&h[0], "ml", "short", "main", "amd.com/gpu");
    /* A partition resource: the first partition is named by the GPU's
     * address, yet is not the GPU; the others are platform devices, kept
     * by name. */
    assert_int_equal(pod_map_lookup(m, "0000:bb:00.0", &h, &n), KGS_ENOTFOUND);
    assert_int_equal(pod_map_lookup(m, "amdgpu-partition:0000:bb:00.0/cpx_nps4", &h, &n), 0);
    assert_holder(&h[0], "ml", "cpx", "main", "amd.com/cpx_nps4");
    assert_true(pod_map_id_is_amd_partition("amdgpu-partition:0000:bb:00.0/cpx_nps4"));
    assert_int_equal(pod_map_lookup(m, "amdgpu_xcp_30", &h, &n), 0);
    assert_holder(&h[0], "ml", "cpx", "main", "amd.com/cpx_nps4");
    assert_true(pod_map_id_is_amd_partition("amdgpu_xcp_30"));
    assert_false(pod_map_id_is_amd_partition("0000:19:00.0"));
    unsigned gpu;
    int mig;
    assert_false(pod_map_id_is_index("0000:19:00.0", &gpu, &mig));
    pod_map_free(m);
}

/* SPX is the whole GPU: its resource's address is the GPU. */
static void test_pod_map_takes_an_spx_resources_address_as_the_gpu(void **state) {
    (void)state;
    const row_t rows[] = {
        {"ml", "a", "c", "amd.com/spx_nps1", {"0000:19:00.0"}},
        {"ml", "b", "c", "amd.com/dpx_nps2", {"0000:3b:00.0"}},
    };
    pod_map_t *m = map_of(rows, 2);
    const pod_holder_t *h;
    size_t n;
    assert_int_equal(pod_map_lookup(m, "0000:19:00.0", &h, &n), 0);
    assert_int_equal(pod_map_lookup(m, "amdgpu-partition:0000:3b:00.0/dpx_nps2", &h, &n), 0);
    pod_map_free(m);
}

static void test_pod_map_holds_one_amd_gpu_once_however_it_is_spelled(void **state) {
    (void)state;
    const row_t rows[] = {
        {"ml", "a", "c", "amd.com/gpu", {"19:00.0", "0000:19:00.0", "00000000:19:00.0"}},
    };
    pod_map_t *m = map_of(rows, 1);
    const pod_holder_t *h;
    size_t n;
    assert_int_equal(pod_map_device_count(m), 1);
    assert_int_equal(pod_map_lookup(m, "0000:19:00.0", &h, &n), 0);
    assert_int_equal(n, 1);
    pod_map_free(m);
}

static void test_pod_map_ignores_amd_ids_that_are_not_pci_addresses(void **state) {
    (void)state;
    const row_t rows[] = {
        {"ml", "a", "c", "amd.com/gpu", {"GPU-aaaa", "0", "1:0", "0000:19:00.0::1"}},
        {"ml",
         "b",
         "c",
         "amd.com/gpu",
         {" 0000:19:00.0", "0000:19:00.0\n", "0000:19:20.0", "0000:19:00.8"}},
        {"ml", "c", "c", "amd.com/gpu", {"amdgpu_xcp_", "amdgpu_xcp_1a", "amdgpu_xcp_1234567", ""}},
        {"ml", "d", "c", "amd.com/gpu", {"0000:119:00.0", "19.00.0", "card0", "renderD128"}},
        {"ml", "e", "c", "amd.com/", {"0000:19:00.0"}},
        {"ml", "f", "c", "nvidia.com/gpu", {"0000:19:00.0", "00000000:19:00.0", "amdgpu_xcp_3"}},
        {"ml", "g", "c", "example.com/gpu", {"0000:19:00.0"}},
    };
    pod_map_t *m = map_of(rows, 7);
    assert_int_equal(pod_map_device_count(m), 0);
    pod_map_free(m);
}

/* The same node through the wire format: packed, unpacked, mapped. */
static void test_pod_map_reads_a_mixed_vendor_node_from_the_wire(void **state) {
    (void)state;
    answer_t a;
    answer_build(&a, mixed_node_rows, 5);
    size_t len = v1__list_pod_resources_response__get_packed_size(&a.resp);
    uint8_t *buf = malloc(len);
    assert_non_null(buf);
    v1__list_pod_resources_response__pack(&a.resp, buf);
    V1__ListPodResourcesResponse *r = v1__list_pod_resources_response__unpack(NULL, len, buf);
    assert_non_null(r);
    pod_map_t *m = NULL;
    assert_int_equal(pod_map_from_response(r, &m, NULL, 0), 0);
    pod_map_t *direct = map_of(mixed_node_rows, 5);
    assert_true(pod_map_equal(m, direct));
    assert_int_equal(pod_map_device_count(m), 7);
    pod_map_free(m);
    pod_map_free(direct);
    v1__list_pod_resources_response__free_unpacked(r, NULL);
    free(buf);
}

/* ---- DRA: bytes laid out by the kubelet's own field numbers ------------------ */

/* A tiny protobuf writer, so the bytes follow k8s.io/kubelet's api.proto
 * (ContainerResources.dynamic_resources = 5; DynamicResource claim_name = 2,
 * claim_namespace = 3, claim_resources = 4, 1 being class_name's tombstone;
 * ClaimResource cdi_devices = 1, driver_name = 2, pool_name = 3,
 * device_name = 4, share_id = 5; CDIDevice name = 1) and not our .proto:
 * a wrong number there makes this test fail. */
typedef struct {
    uint8_t b[2048];
    size_t n;
} pbuf_t;

static void pb_varint(pbuf_t *p, uint64_t v) {
    do {
        assert_true(p->n < sizeof p->b);
        p->b[p->n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
}

static void pb_bytes(pbuf_t *p, unsigned field, const void *data, size_t len) {
    pb_varint(p, (uint64_t)field << 3 | 2);
    pb_varint(p, len);
    assert_true(p->n + len <= sizeof p->b);
    memcpy(p->b + p->n, data, len);
    p->n += len;
}

static void pb_str(pbuf_t *p, unsigned field, const char *s) {
    pb_bytes(p, field, s, strlen(s));
}

static void pb_sub(pbuf_t *p, unsigned field, const pbuf_t *sub) {
    pb_bytes(p, field, sub->b, sub->n);
}

static void claim_resource(pbuf_t *out, const char *driver, const char *pool, const char *device,
                           const char *share) {
    pbuf_t cdi = {.n = 0}, cr = {.n = 0};
    char cdi_name[128];
    snprintf(cdi_name, sizeof cdi_name, "k8s.%s/claim=%s", driver, device);
    pb_str(&cdi, 1, cdi_name);
    pb_sub(&cr, 1, &cdi);
    pb_str(&cr, 2, driver);
    pb_str(&cr, 3, pool);
    pb_str(&cr, 4, device);
    if (share)
        pb_str(&cr, 5, share);
    *out = cr;
}

static void test_pod_map_keeps_dra_devices_from_the_kubelets_field_numbers(void **state) {
    (void)state;
    pbuf_t cr0, cr1, cr_nic, claim = {.n = 0}, nic_claim = {.n = 0};
    claim_resource(&cr0, "gpu.nvidia.com", "node-a", "gpu-0", NULL);
    claim_resource(&cr1, "gpu.nvidia.com", "node-a", "gpu-1-mig-9-4-4", "a1b2");
    claim_resource(&cr_nic, "dra.net", "node-a", "eth1", NULL);
    pb_str(&claim, 2, "shared-gpus");
    pb_str(&claim, 3, "ml");
    pb_sub(&claim, 4, &cr0);
    pb_sub(&claim, 4, &cr1);
    pb_sub(&claim, 4, &cr0); /* listed twice in one container: held once */
    pb_str(&nic_claim, 2, "nic");
    pb_str(&nic_claim, 3, "ml");
    pb_sub(&nic_claim, 4, &cr_nic);
    /* Two containers share the GPU claim; the second also has the NIC. */
    pbuf_t c1 = {.n = 0}, c2 = {.n = 0}, pod = {.n = 0}, resp = {.n = 0};
    pb_str(&c1, 1, "main");
    pb_sub(&c1, 5, &claim);
    pb_str(&c2, 1, "sidecar");
    pb_sub(&c2, 5, &claim);
    pb_sub(&c2, 5, &nic_claim);
    pb_str(&pod, 1, "vllm-0");
    pb_str(&pod, 2, "ml");
    pb_sub(&pod, 3, &c1);
    pb_sub(&pod, 3, &c2);
    pb_sub(&resp, 1, &pod);

    V1__ListPodResourcesResponse *r = v1__list_pod_resources_response__unpack(NULL, resp.n, resp.b);
    assert_non_null(r);
    pod_map_t *m = NULL;
    assert_int_equal(pod_map_from_response(r, &m, NULL, 0), 0);
    assert_int_equal(pod_map_device_count(m), 0); /* no UUIDs: nothing in the device map */
    assert_int_equal(pod_map_dra_count(m), 5);
    const pod_dra_holder_t *h = m->dra;
    /* Sorted by container, then driver, pool, device. */
    assert_string_equal(h[0].container, "main");
    assert_string_equal(h[0].driver, "gpu.nvidia.com");
    assert_string_equal(h[0].pool, "node-a");
    assert_string_equal(h[0].device, "gpu-0");
    assert_string_equal(h[0].share_id, "");
    assert_string_equal(h[1].device, "gpu-1-mig-9-4-4");
    assert_string_equal(h[1].share_id, "a1b2");
    assert_string_equal(h[2].container, "sidecar");
    assert_string_equal(h[2].driver, "dra.net");
    assert_string_equal(h[2].device, "eth1");
    assert_string_equal(h[3].device, "gpu-0");
    assert_string_equal(h[4].device, "gpu-1-mig-9-4-4");
    for (size_t i = 0; i < 5; i++) {
        assert_string_equal(h[i].namespace_, "ml");
        assert_string_equal(h[i].pod, "vllm-0");
    }
    pod_map_t *m2 = NULL;
    assert_int_equal(pod_map_from_response(r, &m2, NULL, 0), 0);
    assert_true(pod_map_equal(m, m2));
    pod_map_t *empty = pod_map_new_empty();
    assert_false(pod_map_equal(m, empty)); /* DRA devices count as a difference */
    pod_map_free(empty);
    pod_map_free(m2);
    pod_map_free(m);
    v1__list_pod_resources_response__free_unpacked(r, NULL);
}

static void test_pod_map_fails_cleanly_at_every_allocation(void **state) {
    (void)state;
    answer_t a;
    answer_build(&a, cluster_rows, 5);
    int failures = 0;
    for (long at = 1;; at++) {
        alloc_count = 0;
        alloc_fail_at = at;
        pod_map_t *m = (pod_map_t *)(uintptr_t)0x1;
        char err[128] = "";
        int rc = pod_map_from_response(&a.resp, &m, err, sizeof err);
        if (rc == 0) {
            pod_map_free(m);
            break;
        }
        failures++;
        assert_int_equal(rc, KGS_ENOMEM);
        assert_null(m);
        assert_string_equal(err, "pod map: out of memory");
        assert_int_equal(alloc_live, 0);
        assert_true(at < 20);
    }
    alloc_fail_at = 0;
    assert_int_equal(failures, 5); /* map, pairs, devices, holders, strings */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_pod_map_attributes_gpu_mig_and_time_sliced_holders,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_pod_map_ignores_other_vendors_resources_even_with_gpu_like_ids, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pod_map_ignores_ids_that_are_not_device_uuids, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_pod_map_keeps_index_ids_for_the_agent, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_pod_map_accepts_legacy_mig_ids_and_the_longest_uuid,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_pod_map_counts_a_container_holding_several_replicas_once, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_pod_map_foreach_visits_devices_in_uuid_order_and_stops_on_request, setup,
            teardown),
        cmocka_unit_test_setup_teardown(test_pod_map_equal_ignores_listing_order_and_sees_changes,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_pod_map_tolerates_null_entries_and_strings, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_pod_map_rejects_null_arguments_with_einval, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_pod_map_reads_the_wire_format, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_pod_map_attributes_amd_devices_by_normalised_pci_address, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pod_map_takes_an_spx_resources_address_as_the_gpu,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_pod_map_holds_one_amd_gpu_once_however_it_is_spelled,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_pod_map_ignores_amd_ids_that_are_not_pci_addresses,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_pod_map_reads_a_mixed_vendor_node_from_the_wire, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_pod_map_keeps_dra_devices_from_the_kubelets_field_numbers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pod_map_fails_cleanly_at_every_allocation, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
