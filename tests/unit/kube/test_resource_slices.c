/* ResourceSlices (resource.k8s.io/v1): decoding, and the (driver, pool,
 * device) -> uuid index the aggregator resolves DRA devices with. The JSON
 * follows NVIDIA's DRA driver (gpu.nvidia.com): devices "gpu-N" and
 * "gpu-N-mig-<profile>-<start>-<size>" with a string attribute "uuid". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kube/resource_slices.h"
#include "core/err.h"

#define NODE_A_SLICE                                                                               \
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\","                           \
    "\"metadata\":{\"name\":\"node-a-gpu.nvidia.com-x7k2p\",\"resourceVersion\":\"90\"},"          \
    "\"spec\":{\"driver\":\"gpu.nvidia.com\",\"nodeName\":\"node-a\","                             \
    "\"pool\":{\"name\":\"node-a\",\"generation\":1,\"resourceSliceCount\":1},"                    \
    "\"devices\":[{\"name\":\"gpu-0\",\"attributes\":{\"type\":{\"string\":\"gpu\"},"              \
    "\"uuid\":{\"string\":\"GPU-4a5b\"},\"driverVersion\":{\"version\":\"560.35.3\"}},"            \
    "\"capacity\":{\"memory\":{\"value\":\"80Gi\"}}},"                                             \
    "{\"name\":\"gpu-1-mig-9-4-4\",\"attributes\":{\"type\":{\"string\":\"mig\"},"                 \
    "\"gpu.nvidia.com/uuid\":{\"string\":\"MIG-0f1e\"}}},"                                         \
    "{\"name\":\"gpu-vfio-0\",\"attributes\":{\"uuid\":{\"string\":\"0000:17:00.0\"}}},"           \
    "{\"name\":\"odd\",\"attributes\":{\"uuid\":{\"int\":7}}}]}}"

static void test_dra_slice_reads_nvidia_gpu_and_mig_uuids(void **state) {
    (void)state;
    json_t *j = json_loads(NODE_A_SLICE, 0, NULL);
    assert_non_null(j);
    dra_slice_t s;
    char err[256] = "";
    assert_int_equal(dra_slice_from_json(j, &s, err, sizeof err), 0);
    assert_string_equal(s.name, "node-a-gpu.nvidia.com-x7k2p");
    assert_string_equal(s.driver, "gpu.nvidia.com");
    assert_string_equal(s.pool, "node-a");
    assert_string_equal(s.node, "node-a");
    assert_int_equal(s.generation, 1);
    assert_int_equal(s.device_count, 4);
    assert_string_equal(s.devices[0].name, "gpu-0");
    assert_string_equal(s.devices[0].uuid, "GPU-4a5b");
    assert_string_equal(s.devices[1].uuid, "MIG-0f1e"); /* the qualified name works too */
    assert_string_equal(s.devices[2].uuid, "");         /* not an NVML UUID */
    assert_string_equal(s.devices[3].uuid, "");         /* not a string */
    dra_slice_deinit(&s);
    json_decref(j);
}

/* AMD's DRA driver (gpu.amd.com): tests/fixtures/dra/amd_resourceslice_list.json,
 * whose README cites the driver's source each device follows. */
static char *read_fixture(const char *rel, size_t *len) {
    const char *root = getenv("KGS_SOURCE_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", root ? root : ".", rel);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    static char buf[16384];
    *len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[*len] = '\0';
    return buf;
}

static void test_dra_slice_reads_amd_gpus_by_pci_address_and_marks_partitions(void **state) {
    (void)state;
    size_t len;
    const char *buf = read_fixture("tests/fixtures/dra/amd_resourceslice_list.json", &len);
    dra_slice_list_t l;
    char err[256] = "";
    if (dra_slice_list_parse(buf, len, &l, err, sizeof err) != 0)
        fail_msg("parse: %s", err);
    assert_int_equal(l.count, 1);
    const dra_slice_t *s = &l.items[0];
    assert_string_equal(s->driver, "gpu.amd.com");
    assert_int_equal(s->device_count, 4);
    /* The older "pciAddr" (its name-based "uuid" is no GPU reader's id). */
    assert_string_equal(s->devices[0].name, "gpu-1-128");
    assert_string_equal(s->devices[0].uuid, "0000:19:00.0");
    /* The standard resource.kubernetes.io/pciBusID. */
    assert_string_equal(s->devices[1].uuid, "0000:3b:00.0");
    /* A partition: its parent's address and profile, never the GPU's id. */
    assert_string_equal(s->devices[2].uuid, "amdgpu-partition:0000:bb:00.0/cpx_nps4");
    /* A passthrough function is not a GPU this node reads. */
    assert_string_equal(s->devices[3].uuid, "");

    dra_index_t *x = NULL;
    assert_int_equal(dra_index_new(&x), 0);
    assert_int_equal(dra_index_replace_all(x, l.items, l.count, l.resource_version), 0);
    assert_string_equal(dra_index_lookup(x, "gpu.amd.com", "node-m", "gpu-2-136"), "0000:3b:00.0");
    assert_null(dra_index_lookup(x, "gpu.nvidia.com", "node-m", "gpu-2-136"));
    dra_index_free(x);
    dra_slice_list_deinit(&l);
}

/* Spellings the driver may use: the "<driver>/" qualified keys, upper case
 * and a missing domain; an amdgpu device without an address stays a GPU
 * (an id no GPU has), never "not a GPU". */
static void test_dra_slice_normalises_amd_addresses_and_keeps_addressless_gpus(void **state) {
    (void)state;
    const char *js =
        "{\"metadata\":{\"name\":\"s\",\"resourceVersion\":\"1\"},\"spec\":{\"driver\":"
        "\"gpu.amd.com\",\"pool\":{\"name\":\"p\"},\"devices\":["
        "{\"name\":\"a\",\"attributes\":{\"gpu.amd.com/type\":{\"string\":\"amdgpu\"},"
        "\"gpu.amd.com/pciAddr\":{\"string\":\"0000:1A:00.0\"}}},"
        "{\"name\":\"b\",\"attributes\":{\"type\":{\"string\":\"amdgpu\"},"
        "\"pciAddr\":{\"string\":\"9c:00.0\"}}},"
        "{\"name\":\"c\",\"attributes\":{\"type\":{\"string\":\"amdgpu\"},"
        "\"pciAddr\":{\"string\":\"not-an-address\"}}},"
        "{\"name\":\"d\",\"attributes\":{\"type\":{\"string\":\"amdgpu-partition\"}}},"
        "{\"name\":\"e\",\"attributes\":{\"type\":{\"int\":1},"
        "\"pciAddr\":{\"string\":\"0000:19:00.0\"}}}]}}";
    json_t *j = json_loads(js, 0, NULL);
    assert_non_null(j);
    dra_slice_t s;
    char err[256] = "";
    if (dra_slice_from_json(j, &s, err, sizeof err) != 0)
        fail_msg("%s", err);
    assert_string_equal(s.devices[0].uuid, "0000:1a:00.0");
    assert_string_equal(s.devices[1].uuid, "0000:9c:00.0");
    assert_string_equal(s.devices[2].uuid, "amdgpu:no-pci-address");
    assert_string_equal(s.devices[3].uuid, "amdgpu-partition:?/");
    assert_string_equal(s.devices[4].uuid, ""); /* no string type: not AMD's */
    dra_slice_deinit(&s);
    json_decref(j);
}

static void test_dra_slice_rejects_missing_fields_and_over_long_values(void **state) {
    (void)state;
    struct {
        const char *json;
        int rc;
        const char *msg;
    } cases[] = {
        {"{\"metadata\":{\"name\":\"s\",\"resourceVersion\":\"1\"},\"spec\":{\"pool\":{\"name\":"
         "\"p\"}}}",
         KGS_EINVAL, "resourceslice s: spec.driver: missing"},
        {"{\"metadata\":{\"name\":\"s\",\"resourceVersion\":\"1\"},\"spec\":{\"driver\":\"d\"}}",
         KGS_EINVAL, "resourceslice s: spec.pool: missing"},
        /* Found by fuzz_resource_slices: an empty name cannot key the index. */
        {"{\"metadata\":{\"name\":\"\",\"resourceVersion\":\"1\"},\"spec\":{\"driver\":"
         "\"d\",\"pool\":{\"name\":\"p\"}}}",
         KGS_EINVAL, "resourceslice ?: metadata.name: empty"},
        {"{\"metadata\":{\"name\":\"s\",\"resourceVersion\":\"1\"},\"spec\":{\"driver\":"
         "\"d\",\"pool\":{\"name\":\"p\"},\"devices\":[{\"name\":\"\"}]}}",
         KGS_EINVAL, "resourceslice s: spec.devices[].name: empty"},
        {"{\"metadata\":{\"name\":\"s\",\"resourceVersion\":\"1\"},\"spec\":{\"driver\":\"d\","
         "\"pool\":{\"name\":\"p\"},\"devices\":[{\"name\":\"x\",\"attributes\":{\"uuid\":{"
         "\"string\":\"GPU-"
         "0123456789012345678901234567890123456789012345678901234567890123456789\"}}}]}}",
         KGS_ERANGE, "resourceslice s: attributes.uuid: longer than 64 bytes"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *j = json_loads(cases[i].json, 0, NULL);
        assert_non_null(j);
        dra_slice_t s;
        char err[256] = "";
        assert_int_equal(dra_slice_from_json(j, &s, err, sizeof err), cases[i].rc);
        assert_string_equal(err, cases[i].msg);
        dra_slice_deinit(&s);
        json_decref(j);
    }
}

static void test_dra_index_resolves_and_follows_watch_events(void **state) {
    (void)state;
    char list[4096];
    snprintf(list, sizeof list,
             "{\"kind\":\"ResourceSliceList\",\"metadata\":{\"resourceVersion\":\"100\"},"
             "\"items\":[%s]}",
             NODE_A_SLICE);
    dra_slice_list_t l;
    char err[256] = "";
    assert_int_equal(dra_slice_list_parse(list, strlen(list), &l, err, sizeof err), 0);
    assert_int_equal(l.count, 1);
    dra_index_t *x = NULL;
    assert_int_equal(dra_index_new(&x), 0);
    assert_int_equal(dra_index_replace_all(x, l.items, l.count, l.resource_version), 0);
    dra_slice_list_deinit(&l);
    assert_string_equal(dra_index_resource_version(x), "100");
    assert_string_equal(dra_index_lookup(x, "gpu.nvidia.com", "node-a", "gpu-0"), "GPU-4a5b");
    assert_string_equal(dra_index_lookup(x, "gpu.nvidia.com", "node-a", "gpu-1-mig-9-4-4"),
                        "MIG-0f1e");
    assert_string_equal(dra_index_lookup(x, "gpu.nvidia.com", "node-a", "gpu-vfio-0"), "");
    assert_null(dra_index_lookup(x, "gpu.nvidia.com", "node-a", "gpu-7"));
    assert_null(dra_index_lookup(x, "gpu.nvidia.com", "node-b", "gpu-0"));
    assert_null(dra_index_lookup(x, "other.example.com", "node-a", "gpu-0"));

    /* A newer generation of the pool, in another slice, wins; the old
     * slice's DELETED then leaves the new one's device. */
    const char *ev =
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"node-a-new\","
        "\"resourceVersion\":\"101\"},\"spec\":{\"driver\":\"gpu.nvidia.com\",\"nodeName\":"
        "\"node-a\",\"pool\":{\"name\":\"node-a\",\"generation\":2},\"devices\":[{\"name\":"
        "\"gpu-0\",\"attributes\":{\"uuid\":{\"string\":\"GPU-new0\"}}}]}}}";
    kube_event_type_t type;
    dra_slice_t s;
    char rv[KUBE_RV_MAX + 1];
    int code = -1;
    assert_int_equal(
        dra_slice_event_parse(ev, strlen(ev), &type, &s, rv, sizeof rv, &code, err, sizeof err), 0);
    assert_int_equal(type, KUBE_EVENT_ADDED);
    bool changed = false;
    assert_int_equal(dra_index_apply(x, type, &s, rv, &changed), 0);
    assert_true(changed);
    assert_string_equal(dra_index_lookup(x, "gpu.nvidia.com", "node-a", "gpu-0"), "GPU-new0");
    assert_string_equal(dra_index_lookup(x, "gpu.nvidia.com", "node-a", "gpu-1-mig-9-4-4"),
                        "MIG-0f1e");
    const char *del = "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":"
                      "\"node-a-gpu.nvidia.com-x7k2p\",\"resourceVersion\":\"102\"},\"spec\":{"
                      "\"driver\":\"gpu.nvidia.com\",\"pool\":{\"name\":\"node-a\"}}}}";
    assert_int_equal(
        dra_slice_event_parse(del, strlen(del), &type, &s, rv, sizeof rv, &code, err, sizeof err),
        0);
    assert_int_equal(dra_index_apply(x, type, &s, rv, &changed), 0);
    assert_true(changed);
    assert_null(dra_index_lookup(x, "gpu.nvidia.com", "node-a", "gpu-1-mig-9-4-4"));
    assert_string_equal(dra_index_lookup(x, "gpu.nvidia.com", "node-a", "gpu-0"), "GPU-new0");
    assert_string_equal(dra_index_resource_version(x), "102");
    assert_int_equal(dra_index_slice_count(x), 1);

    const char *gone = "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,"
                       "\"message\":\"too old resource version: 5 (9)\"}}";
    assert_int_equal(dra_slice_event_parse(gone, strlen(gone), &type, NULL, rv, sizeof rv, &code,
                                           err, sizeof err),
                     0);
    assert_int_equal(type, KUBE_EVENT_ERROR);
    assert_int_equal(code, 410);
    dra_index_free(x);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dra_slice_reads_nvidia_gpu_and_mig_uuids),
        cmocka_unit_test(test_dra_slice_reads_amd_gpus_by_pci_address_and_marks_partitions),
        cmocka_unit_test(test_dra_slice_normalises_amd_addresses_and_keeps_addressless_gpus),
        cmocka_unit_test(test_dra_slice_rejects_missing_fields_and_over_long_values),
        cmocka_unit_test(test_dra_index_resolves_and_follows_watch_events),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
