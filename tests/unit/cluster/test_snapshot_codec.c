/* test_snapshot_codec.c - a node snapshot survives the trip to the aggregator
 * field for field (absent stays absent, lost GPUs keep their code, MIG
 * instances find their parent), ages turn into the receiver's clock, and
 * every malformed or inconsistent message is refused with a message that
 * says where. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cluster/snapshot_codec.h"
#include "core/err.h"
#include "proto/cluster.pb-c.h"
#include "support/test_support.h"

#define SEC UINT64_C(1000000000)
#define MS UINT64_C(1000000)

/*
 * Four GPUs: 0 with every field, 1 with most fields absent (and their NVML
 * codes), 2 lost, 3 a MIG parent with two instances (one without GPM).
 * Absent fields hold 0 so whole records compare with memcmp.
 */
static snapshot_t *rich_snapshot(void) {
    snapshot_t *s = snapshot_new(4, 2);
    assert_non_null(s);
    s->seq = 42;
    s->taken_mono = 100 * SEC;
    s->taken_wall_ms = INT64_C(1767225600123);
    s->status = SNAPSHOT_OK;
    snprintf(s->driver_version, sizeof s->driver_version, "560.35.03");
    snprintf(s->node_name, sizeof s->node_name, "gpu-node-7");

    gpu_record_t *g = &s->gpus[0];
    g->index = 0;
    snprintf(g->uuid, sizeof g->uuid, "GPU-aaaaaaaa-0000-1111-2222-333333333333");
    snprintf(g->name, sizeof g->name, "NVIDIA H100 80GB HBM3");
    snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "00000000:1B:00.0");
    g->vendor = GPU_VENDOR_NVIDIA;
    g->gpu_util_pct = 97;
    g->mem_util_pct = 4294967295u; /* UINT_MAX survives */
    g->memory_used_bytes = UINT64_C(21474836480);
    g->memory_total_bytes = UINT64_C(85520809984);
    g->memory_reserved_bytes = UINT64_C(1) << 53; /* the exact bound */
    g->temperature_c = -12;
    g->power_w = 312.125;
    g->power_limit_w = 700;
    g->energy_mj = UINT64_C(123456789012345);
    g->pcie_tx_bytes_per_s = 1200 * 1024;
    g->pcie_rx_bytes_per_s = 0;
    g->nvlink_tx_bytes_per_s = 3.5e9;
    g->nvlink_rx_bytes_per_s = 1e-3;
    g->sm_clock_mhz = 1980;
    g->clock_event_reasons = 0x1 | 0x4 | 0x100;
    g->sm_active_pct = 55.5;
    g->sm_occupancy_pct = 0.25;
    g->dram_bw_util_pct = 100;
    for (unsigned f = 0; f < GPU_F_COUNT; f++)
        ts_set_field(g, (gpu_field_t)f);

    g = &s->gpus[1];
    g->index = 5; /* NVML indexes need not be dense */
    snprintf(g->uuid, sizeof g->uuid, "GPU-bbbb");
    snprintf(g->name, sizeof g->name, "Tesla T4");
    g->gpu_util_pct = 3;
    ts_set_field(g, GPU_F_GPU_UTIL);
    g->memory_total_bytes = UINT64_C(16106127360);
    ts_set_field(g, GPU_F_MEM_TOTAL);
    g->field_error[GPU_F_SM_ACTIVE] = 3; /* NOT_SUPPORTED */
    g->field_error[GPU_F_SM_OCCUPANCY] = 3;
    g->field_error[GPU_F_POWER] = 999; /* UNKNOWN */
    g->field_error[GPU_F_ENERGY] = -1;

    g = &s->gpus[2];
    g->index = 2;
    snprintf(g->uuid, sizeof g->uuid, "GPU-cccc");
    g->health = GPU_HEALTH_LOST;
    g->health_nvml_code = 15; /* GPU_IS_LOST */
    for (unsigned f = 0; f < GPU_F_COUNT; f++)
        g->field_error[f] = 15;

    g = &s->gpus[3];
    g->index = 3;
    snprintf(g->uuid, sizeof g->uuid, "GPU-dddd");
    snprintf(g->name, sizeof g->name, "NVIDIA A100-SXM4-80GB");
    g->health = GPU_HEALTH_RESET_REQUIRED;
    g->health_nvml_code = 16;
    g->mig_enabled = true;
    g->mig_first = 0;
    g->mig_count = 2;
    g->memory_total_bytes = UINT64_C(85899345920);
    ts_set_field(g, GPU_F_MEM_TOTAL);

    mig_record_t *m = &s->mig[0];
    m->parent_index = 3;
    snprintf(m->uuid, sizeof m->uuid, "MIG-1111");
    snprintf(m->name, sizeof m->name, "NVIDIA A100-SXM4-80GB MIG 3g.40gb");
    snprintf(m->profile, sizeof m->profile, "3g.40gb");
    m->gpu_instance_id = 1;
    m->compute_instance_id = 0;
    m->ids_valid = true;
    m->memory_used_bytes = 1000;
    m->memory_total_bytes = UINT64_C(42949672960);
    m->sm_active_pct = 12.5;
    m->sm_occupancy_pct = 7;
    m->dram_bw_util_pct = 1.25;
    m->valid = SNAPSHOT_CODEC_MIG_FIELDS;

    m = &s->mig[1];
    m->parent_index = 3;
    snprintf(m->uuid, sizeof m->uuid, "MIG-2222");
    m->memory_used_bytes = 0;
    m->memory_total_bytes = UINT64_C(10737418240);
    m->valid = (1u << GPU_F_MEM_USED) | (1u << GPU_F_MEM_TOTAL);
    m->field_error[GPU_F_SM_ACTIVE] = 3;
    return s;
}

static node_pods_t *some_pods(void) {
    const char *d1[] = {"GPU-aaaaaaaa-0000-1111-2222-333333333333"};
    const char *d2[] = {"GPU-bbbb::0", "GPU-bbbb::3"};
    const char *d3[] = {"MIG-1111"};
    node_pod_entry_t e[] = {
        {"ml", "trainer-0", "main", d1, 1},
        {"ml", "notebook-x", "jupyter", d2, 2},
        {"serving", "vllm-7f9c", "vllm", d3, 1},
        {"kube-system", "empty", "sidecar", NULL, 0},
    };
    node_pods_t *p = NULL;
    assert_int_equal(node_pods_new(e, 4, &p, NULL, 0), 0);
    return p;
}

static void assert_same_snapshot(const snapshot_t *a, const snapshot_t *b) {
    assert_int_equal(a->seq, b->seq);
    assert_int_equal(a->taken_wall_ms, b->taken_wall_ms);
    assert_int_equal(a->status, b->status);
    assert_int_equal(a->nvml_code, b->nvml_code);
    assert_string_equal(a->error, b->error);
    assert_string_equal(a->driver_version, b->driver_version);
    assert_string_equal(a->node_name, b->node_name);
    assert_int_equal(a->gpu_count, b->gpu_count);
    assert_int_equal(a->mig_total, b->mig_total);
    for (unsigned i = 0; i < a->gpu_count; i++)
        assert_memory_equal(&a->gpus[i], &b->gpus[i], sizeof a->gpus[i]);
    for (unsigned i = 0; i < a->mig_total; i++)
        assert_memory_equal(&a->mig[i], &b->mig[i], sizeof a->mig[i]);
}

/* Encodes at `now`, decodes at `recv_now`; asserts both succeed. */
static snapshot_t *trip(const snapshot_t *s, const node_pods_t *pods, mono_ns_t now,
                        mono_ns_t recv_now, node_pods_t **pods_out) {
    uint8_t *buf = (uint8_t *)"sentinel";
    size_t len = 12345;
    char err[256] = "";
    assert_int_equal(snapshot_codec_encode(s, pods, now, 1000, &buf, &len, err, sizeof err), 0);
    assert_non_null(buf);
    assert_true(len > 0);
    snapshot_t *out = (snapshot_t *)&err; /* sentinel */
    int rc = snapshot_codec_decode(buf, len, recv_now, &out, pods_out, err, sizeof err);
    if (rc != 0)
        fail_msg("decode: %s", err);
    free(buf);
    assert_non_null(out);
    return out;
}

/* ---- round trips --------------------------------------------------------------- */

static void test_snapshot_codec_round_trips_every_field_absence_and_code(void **state) {
    (void)state;
    snapshot_t *s = rich_snapshot();
    node_pods_t *pods = some_pods();
    node_pods_t *got_pods = NULL;
    snapshot_t *d = trip(s, pods, 100 * SEC, 100 * SEC, &got_pods);
    assert_same_snapshot(s, d);
    assert_int_equal(d->taken_mono, 100 * SEC);
    assert_int_equal(d->sample_duration_ns, 0);
    /* Spot checks that memcmp would not explain on failure. */
    assert_false(gpu_has(&d->gpus[1], GPU_F_POWER));
    assert_int_equal(d->gpus[1].field_error[GPU_F_POWER], 999);
    assert_int_equal(d->gpus[2].health, GPU_HEALTH_LOST);
    assert_int_equal(d->gpus[2].health_nvml_code, 15);
    assert_int_equal(d->gpus[3].mig_count, 2);
    assert_int_equal(d->gpus[0].memory_reserved_bytes, UINT64_C(1) << 53);

    assert_non_null(got_pods);
    assert_true(got_pods->known);
    assert_string_equal(got_pods->error, "");
    assert_int_equal(got_pods->count, 4);
    assert_string_equal(got_pods->entries[1].pod, "notebook-x");
    assert_int_equal(got_pods->entries[1].device_count, 2);
    assert_string_equal(got_pods->entries[1].device_ids[1], "GPU-bbbb::3");
    assert_int_equal(got_pods->entries[3].device_count, 0);
    const node_pod_entry_t *hit[2];
    assert_int_equal(node_pods_lookup(got_pods, "GPU-bbbb", hit, 2), 1);
    assert_string_equal(hit[0]->container, "jupyter");

    node_pods_free(got_pods);
    node_pods_free(pods);
    snapshot_unref(d);
    snapshot_unref(s);
}

static void test_snapshot_codec_round_trips_nvml_down_without_gpus(void **state) {
    (void)state;
    snapshot_t *s = snapshot_new(0, 0);
    s->seq = 7;
    s->status = SNAPSHOT_NVML_DOWN;
    s->nvml_code = 9;
    snprintf(s->error, sizeof s->error, "nvmlInit_v2: DRIVER_NOT_LOADED (Driver Not Loaded)");
    snprintf(s->node_name, sizeof s->node_name, "n1");
    s->taken_mono = 5 * SEC;
    snapshot_t *d = trip(s, NULL, 5 * SEC, 9 * SEC, NULL);
    assert_same_snapshot(s, d);
    assert_int_equal(d->status, SNAPSHOT_NVML_DOWN);
    assert_null(d->gpus);
    assert_null(d->mig);
    snapshot_unref(d);
    snapshot_unref(s);
}

static void test_snapshot_codec_sends_absent_fields_as_zero_and_only_mig_fields(void **state) {
    (void)state;
    snapshot_t *s = rich_snapshot();
    s->gpus[1].power_w = 123.0;                 /* stale value behind a clear bit */
    s->gpus[1].temperature_c = 80;              /* likewise */
    s->mig[1].sm_active_pct = 99;               /* absent in the instance */
    s->mig[0].valid |= 1u << GPU_F_TEMPERATURE; /* a bit MIG records cannot carry */
    snapshot_t *d = trip(s, NULL, 100 * SEC, 100 * SEC, NULL);
    assert_true(d->gpus[1].power_w == 0);
    assert_int_equal(d->gpus[1].temperature_c, 0);
    assert_true(d->mig[1].sm_active_pct == 0);
    assert_int_equal(d->mig[0].valid, SNAPSHOT_CODEC_MIG_FIELDS);
    snapshot_unref(d);
    snapshot_unref(s);
}

static void test_snapshot_codec_rounds_uint64_above_2_pow_53(void **state) {
    (void)state;
    snapshot_t *s = rich_snapshot();
    s->gpus[0].energy_mj = (UINT64_C(1) << 53) + 1; /* not a double: rounds to even */
    s->gpus[0].memory_used_bytes = UINT64_MAX;      /* 2^64 on the wire */
    s->gpus[0].clock_event_reasons = UINT64_C(1) << 63;
    snapshot_t *d = trip(s, NULL, 100 * SEC, 100 * SEC, NULL);
    assert_int_equal(d->gpus[0].energy_mj, UINT64_C(1) << 53);
    assert_int_equal(d->gpus[0].memory_used_bytes, UINT64_MAX);
    assert_int_equal(d->gpus[0].clock_event_reasons, UINT64_C(1) << 63);
    snapshot_unref(d);
    snapshot_unref(s);
}

static void test_snapshot_codec_carries_pods_unknown_with_reason(void **state) {
    (void)state;
    snapshot_t *s = rich_snapshot();
    node_pods_t *unknown = NULL;
    assert_int_equal(node_pods_new_unknown("kubelet socket missing", &unknown), 0);
    node_pods_t *got = NULL;
    snapshot_t *d = trip(s, unknown, 100 * SEC, 100 * SEC, &got);
    assert_non_null(got);
    assert_false(got->known);
    assert_string_equal(got->error, "kubelet socket missing");
    assert_int_equal(got->count, 0);
    assert_int_equal(node_pods_lookup(got, "GPU-bbbb", NULL, 0), 0);
    node_pods_free(got);
    snapshot_unref(d);

    /* NULL pods: unknown without a reason. */
    got = NULL;
    d = trip(s, NULL, 100 * SEC, 100 * SEC, &got);
    assert_non_null(got);
    assert_false(got->known);
    assert_string_equal(got->error, "");
    node_pods_free(got);
    snapshot_unref(d);
    node_pods_free(unknown);
    snapshot_unref(s);
}

static void test_snapshot_codec_carries_dra_devices_raw_and_unresolved(void **state) {
    (void)state;
    snapshot_t *s = rich_snapshot();
    /* A resolved list (as the aggregator holds it): only the kubelet's
     * names travel, never the uuid, so the far side starts unresolved. */
    node_pod_dra_t d[2] = {{"gpu.nvidia.com", "node-a", "gpu-0", "", "GPU-bbbb", false},
                           {"gpu.nvidia.com", "node-a", "gpu-1-mig-9-4-4", "sh-1", "", false}};
    const char *ids[] = {"GPU-aaaa", "GPU-bbbb"};
    node_pod_entry_t e[] = {{"ml", "p1", "main", ids, 2, d, 2, 1}};
    node_pods_t *pods = NULL;
    assert_int_equal(node_pods_new(e, 1, &pods, NULL, 0), 0);
    assert_int_equal(pods->dra_total, 2);
    node_pods_t *got = NULL;
    snapshot_t *dec = trip(s, pods, 100 * SEC, 100 * SEC, &got);
    assert_non_null(got);
    assert_true(got->known);
    assert_int_equal(got->count, 1);
    assert_int_equal(got->dra_total, 2);
    const node_pod_entry_t *g = &got->entries[0];
    assert_int_equal(g->dra_count, 2);
    assert_int_equal(g->dra_unresolved, 2);
    assert_string_equal(g->dra[0].driver, "gpu.nvidia.com");
    assert_string_equal(g->dra[0].pool, "node-a");
    assert_string_equal(g->dra[0].device, "gpu-0");
    assert_string_equal(g->dra[0].uuid, "");
    assert_string_equal(g->dra[1].device, "gpu-1-mig-9-4-4");
    assert_string_equal(g->dra[1].share_id, "sh-1");
    assert_int_equal(g->device_count, 2);
    node_pods_free(got);
    snapshot_unref(dec);
    node_pods_free(pods);
    snapshot_unref(s);
}

/* ---- time ---------------------------------------------------------------------- */

static void test_snapshot_codec_age_moves_taken_mono_onto_the_receiver_clock(void **state) {
    (void)state;
    snapshot_t *s = rich_snapshot(); /* taken at 100 s on the agent */
    /* Sent 250.9 ms later: age 250 ms (whole ms, rounded down). */
    snapshot_t *d = trip(s, NULL, 100 * SEC + 250 * MS + 900000, 7000 * SEC, NULL);
    assert_int_equal(d->taken_mono, 7000 * SEC - 250 * MS);
    snapshot_unref(d);

    /* A taken time "in the future" of the encoder's now: age 0. */
    d = trip(s, NULL, 99 * SEC, 7000 * SEC, NULL);
    assert_int_equal(d->taken_mono, 7000 * SEC);
    snapshot_unref(d);

    /* An age larger than the receiver's uptime clamps to 0 (very old). */
    d = trip(s, NULL, 100 * SEC + 5000 * SEC, 10 * SEC, NULL);
    assert_int_equal(d->taken_mono, 0);
    snapshot_unref(d);
    snapshot_unref(s);
}

/* ---- rejections: mutate a valid message ----------------------------------------- */

typedef void (*mutate_fn)(Kgs__Cluster__V1__NodeSnapshot *m);

/* Encodes the rich snapshot, applies `mutate` to the unpacked message,
 * repacks it and asserts that decoding fails with `code` and a message
 * containing `want`. */
static void expect_reject(mutate_fn mutate, int code, const char *want) {
    snapshot_t *s = rich_snapshot();
    node_pods_t *pods = some_pods();
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(snapshot_codec_encode(s, pods, 100 * SEC, 1000, &buf, &len, NULL, 0), 0);
    Kgs__Cluster__V1__NodeSnapshot *m = kgs__cluster__v1__node_snapshot__unpack(NULL, len, buf);
    assert_non_null(m);
    free(buf);
    /* Mutations may swap in pointers to static data; restore them before
     * free_unpacked by keeping a shallow copy of the original. */
    Kgs__Cluster__V1__NodeSnapshot orig = *m;
    Kgs__Cluster__V1__Gpu gpu0 = *m->gpus[0];
    Kgs__Cluster__V1__MigInstance mig0 = *m->migs[0];
    Kgs__Cluster__V1__PodDevices pod0 = *m->pods[0];
    mutate(m);
    len = kgs__cluster__v1__node_snapshot__get_packed_size(m);
    buf = malloc(len);
    kgs__cluster__v1__node_snapshot__pack(m, buf);
    *m = orig; /* first: a mutation may have replaced the arrays */
    *m->gpus[0] = gpu0;
    *m->migs[0] = mig0;
    *m->pods[0] = pod0;
    kgs__cluster__v1__node_snapshot__free_unpacked(m, NULL);

    snapshot_t *out = (snapshot_t *)&len;
    node_pods_t *got = (node_pods_t *)&len;
    char err[256] = "";
    assert_int_equal(snapshot_codec_decode(buf, len, 100 * SEC, &out, &got, err, sizeof err), code);
    assert_null(out);
    assert_null(got);
    if (!strstr(err, want))
        fail_msg("message \"%s\" lacks \"%s\"", err, want);
    assert_true(strncmp(err, "decode NodeSnapshot: ", 21) == 0);
    free(buf);
    node_pods_free(pods);
    snapshot_unref(s);
}

static char long_string[400];
static double bad_values[GPU_F_COUNT + 20];
static int32_t bad_codes[40];
static Kgs__Cluster__V1__Gpu *many_gpus[4097];
static Kgs__Cluster__V1__MigInstance *many_migs[32769];

static void mut_version_0(Kgs__Cluster__V1__NodeSnapshot *m) {
    m->protocol_version = 0;
}
static void mut_version_2(Kgs__Cluster__V1__NodeSnapshot *m) {
    m->protocol_version = 2;
}
static void mut_too_many_gpus(Kgs__Cluster__V1__NodeSnapshot *m) {
    for (size_t i = 0; i < 4097; i++)
        many_gpus[i] = m->gpus[1];
    m->gpus = many_gpus;
    m->n_gpus = 4097;
}
static void mut_too_many_migs(Kgs__Cluster__V1__NodeSnapshot *m) {
    for (size_t i = 0; i < 32769; i++)
        many_migs[i] = m->migs[1];
    m->migs = many_migs;
    m->n_migs = 32769;
}
static void mut_duplicate_index(Kgs__Cluster__V1__NodeSnapshot *m) {
    m->gpus[0]->index = 3;
}
static void mut_mig_parent_missing(Kgs__Cluster__V1__NodeSnapshot *m) {
    m->migs[0]->parent_index = 77;
}
static void mut_mig_parent_disabled(Kgs__Cluster__V1__NodeSnapshot *m) {
    m->migs[0]->parent_index = 0;
    m->migs[1]->parent_index = 0;
}
static void mut_mig_not_adjacent(Kgs__Cluster__V1__NodeSnapshot *m) {
    m->gpus[0]->mig_enabled = true;
    m->migs[0]->parent_index = 0; /* 0, 3: fine */
    m->migs[1]->parent_index = 3;
    /* Make a third instance by listing migs[0] again: 0, 3, 0. */
    static Kgs__Cluster__V1__MigInstance *three[3];
    three[0] = m->migs[0];
    three[1] = m->migs[1];
    three[2] = m->migs[0];
    m->migs = three;
    m->n_migs = 3;
}
static void mut_node_too_long(Kgs__Cluster__V1__NodeSnapshot *m) {
    memset(long_string, 'n', 256);
    long_string[256] = '\0';
    m->node = long_string;
}
static void mut_driver_too_long(Kgs__Cluster__V1__NodeSnapshot *m) {
    memset(long_string, 'd', 80);
    long_string[80] = '\0';
    m->driver_version = long_string;
}
static void mut_nvml_error_too_long(Kgs__Cluster__V1__NodeSnapshot *m) {
    memset(long_string, 'e', 300);
    long_string[300] = '\0';
    m->nvml_error = long_string;
}
static void mut_uuid_too_long(Kgs__Cluster__V1__NodeSnapshot *m) {
    memset(long_string, 'u', SNAPSHOT_UUID_MAX);
    long_string[SNAPSHOT_UUID_MAX] = '\0';
    m->gpus[0]->uuid = long_string;
}
static void mut_busid_too_long(Kgs__Cluster__V1__NodeSnapshot *m) {
    memset(long_string, 'b', SNAPSHOT_BUSID_MAX);
    long_string[SNAPSHOT_BUSID_MAX] = '\0';
    m->gpus[0]->pci_bus_id = long_string;
}
static void mut_profile_too_long(Kgs__Cluster__V1__NodeSnapshot *m) {
    memset(long_string, 'p', SNAPSHOT_PROFILE_MAX);
    long_string[SNAPSHOT_PROFILE_MAX] = '\0';
    m->migs[0]->profile = long_string;
}
static void mut_namespace_too_long(Kgs__Cluster__V1__NodeSnapshot *m) {
    memset(long_string, 's', 254);
    long_string[254] = '\0';
    m->pods[0]->namespace_ = long_string;
}
static void mut_value_missing(Kgs__Cluster__V1__NodeSnapshot *m) {
    m->gpus[0]->n_values = 5; /* valid bits go up to 17 */
}
static void set_value(Kgs__Cluster__V1__Gpu *g, gpu_field_t f, double v) {
    memcpy(bad_values, g->values, GPU_F_COUNT * sizeof(double));
    bad_values[f] = v;
    g->values = bad_values;
}
static void mut_value_nan(Kgs__Cluster__V1__NodeSnapshot *m) {
    set_value(m->gpus[0], GPU_F_POWER, NAN);
}
static void mut_value_inf(Kgs__Cluster__V1__NodeSnapshot *m) {
    set_value(m->gpus[0], GPU_F_SM_ACTIVE, INFINITY);
}
static void mut_value_fraction(Kgs__Cluster__V1__NodeSnapshot *m) {
    set_value(m->gpus[0], GPU_F_GPU_UTIL, 1.5);
}
static void mut_value_negative(Kgs__Cluster__V1__NodeSnapshot *m) {
    set_value(m->gpus[0], GPU_F_MEM_USED, -1);
}
static void mut_value_huge_int(Kgs__Cluster__V1__NodeSnapshot *m) {
    set_value(m->gpus[0], GPU_F_TEMPERATURE, 1e10);
}
static void mut_value_beyond_u64(Kgs__Cluster__V1__NodeSnapshot *m) {
    set_value(m->gpus[0], GPU_F_ENERGY, 0x1p65);
}
static void mut_too_many_values(Kgs__Cluster__V1__NodeSnapshot *m) {
    m->gpus[0]->values = bad_values;
    m->gpus[0]->n_values = 33;
}
static void mut_too_many_codes(Kgs__Cluster__V1__NodeSnapshot *m) {
    m->migs[0]->field_errors = bad_codes;
    m->migs[0]->n_field_errors = 33;
}
static void mut_code_out_of_range(Kgs__Cluster__V1__NodeSnapshot *m) {
    bad_codes[GPU_F_POWER] = 70000;
    m->gpus[0]->field_errors = bad_codes;
    m->gpus[0]->n_field_errors = GPU_F_COUNT;
}
static void mut_health_unknown(Kgs__Cluster__V1__NodeSnapshot *m) {
    m->gpus[0]->health = (Kgs__Cluster__V1__Health)7;
}
static void mut_mig_foreign_field(Kgs__Cluster__V1__NodeSnapshot *m) {
    m->migs[0]->valid |= 1u << GPU_F_GPU_UTIL;
}
static void mut_pods_without_known(Kgs__Cluster__V1__NodeSnapshot *m) {
    m->pods_known = 0;
}
static void mut_pods_error_with_known(Kgs__Cluster__V1__NodeSnapshot *m) {
    m->pods_error = "kubelet said no";
}
static void mut_too_many_device_ids(Kgs__Cluster__V1__NodeSnapshot *m) {
    static char *ids[1025];
    for (size_t i = 0; i < 1025; i++)
        ids[i] = "GPU-x";
    m->pods[0]->device_ids = ids;
    m->pods[0]->n_device_ids = 1025;
}

static void test_snapshot_codec_rejects_malformed_bytes(void **state) {
    (void)state;
    const uint8_t junk[] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f}; /* field 1, length too long */
    snapshot_t *out = NULL;
    char err[256];
    assert_int_equal(snapshot_codec_decode(junk, sizeof junk, 0, &out, NULL, err, sizeof err),
                     KGS_EINVAL);
    assert_null(out);
    assert_string_equal(err, "decode NodeSnapshot: malformed message (protobuf decoding failed)");
    /* An empty message is valid protobuf but protocol_version 0. */
    assert_int_equal(snapshot_codec_decode(junk, 0, 0, &out, NULL, err, sizeof err), KGS_EINVAL);
    assert_string_equal(err, "decode NodeSnapshot: protocol_version 0, supported: 1");
}

static void test_snapshot_codec_rejects_each_inconsistency_with_its_message(void **state) {
    (void)state;
    expect_reject(mut_version_0, KGS_EINVAL, "protocol_version 0, supported: 1");
    expect_reject(mut_version_2, KGS_EINVAL, "protocol_version 2, supported: 1");
    expect_reject(mut_too_many_gpus, KGS_EINVAL, "4097 GPUs, at most 4096");
    expect_reject(mut_too_many_migs, KGS_EINVAL, "32769 MIG instances, at most 32768");
    expect_reject(mut_duplicate_index, KGS_EINVAL, "gpus[0] and gpus[3]: both index 3");
    expect_reject(mut_mig_parent_missing, KGS_EINVAL,
                  "migs[0] (MIG-1111): parent GPU 77 not listed");
    expect_reject(mut_mig_parent_disabled, KGS_EINVAL,
                  "migs[0] (MIG-1111): parent GPU 0 has MIG disabled");
    expect_reject(mut_mig_not_adjacent, KGS_EINVAL,
                  "migs[2] (MIG-1111): instances of GPU 0 are not adjacent");
    expect_reject(mut_node_too_long, KGS_EINVAL, "node: longer than 255 bytes");
    expect_reject(mut_driver_too_long, KGS_EINVAL, "driver_version: longer than 79 bytes");
    expect_reject(mut_nvml_error_too_long, KGS_EINVAL, "nvml_error: longer than 255 bytes");
    expect_reject(mut_uuid_too_long, KGS_EINVAL, "gpus[0]: uuid: longer than 95 bytes");
    expect_reject(mut_busid_too_long, KGS_EINVAL, "gpus[0]: pci_bus_id: longer than 31 bytes");
    expect_reject(mut_profile_too_long, KGS_EINVAL, "migs[0]: profile: longer than 31 bytes");
    expect_reject(mut_namespace_too_long, KGS_EINVAL,
                  "node pods: entries[0]: namespace: longer than 253 bytes");
    expect_reject(mut_too_many_device_ids, KGS_EINVAL,
                  "node pods: entries[0]: 1025 device ids, at most 1024");
    expect_reject(mut_value_missing, KGS_EINVAL,
                  "gpus[0] (GPU-aaaaaaaa-0000-1111-2222-333333333333): temperature: valid but no "
                  "value");
    expect_reject(mut_value_nan, KGS_EINVAL, "power_draw: not finite");
    expect_reject(mut_value_inf, KGS_EINVAL, "sm_active: not finite");
    expect_reject(mut_value_fraction, KGS_EINVAL, "gpu_utilization: not an integer (1.5)");
    expect_reject(mut_value_negative, KGS_EINVAL, "memory_used: out of range (-1)");
    expect_reject(mut_value_huge_int, KGS_EINVAL, "temperature: out of range (1e+10)");
    expect_reject(mut_value_beyond_u64, KGS_EINVAL, "energy: out of range");
    expect_reject(mut_too_many_values, KGS_EINVAL, "33 values, at most 32");
    expect_reject(mut_too_many_codes, KGS_EINVAL,
                  "migs[0] (MIG-1111): 33 field_errors, at most 32");
    expect_reject(mut_code_out_of_range, KGS_EINVAL, "power_draw: NVML code 70000 out of range");
    expect_reject(mut_health_unknown, KGS_EINVAL, "health: unknown value 7");
    expect_reject(mut_mig_foreign_field, KGS_EINVAL,
                  "migs[0] (MIG-1111): gpu_utilization: not carried by this record");
    expect_reject(mut_pods_without_known, KGS_EINVAL, "4 pods listed but pods_known is false");
    expect_reject(mut_pods_error_with_known, KGS_EINVAL, "pods_error set but pods_known is true");
}

/* A newer agent may append fields: their bits and values are dropped, and
 * values behind clear bits are not looked at. */
static void mut_future_field(Kgs__Cluster__V1__NodeSnapshot *m) {
    memcpy(bad_values, m->gpus[1]->values, GPU_F_COUNT * sizeof(double));
    bad_values[GPU_F_COUNT + 2] = 5;
    bad_values[GPU_F_POWER] = NAN; /* absent on GPU 1 */
    m->gpus[1]->values = bad_values;
    m->gpus[1]->n_values = GPU_F_COUNT + 3;
    m->gpus[1]->valid |= 1u << (GPU_F_COUNT + 2);
}

static void test_snapshot_codec_drops_fields_it_does_not_know(void **state) {
    (void)state;
    snapshot_t *s = rich_snapshot();
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(snapshot_codec_encode(s, NULL, 100 * SEC, 1000, &buf, &len, NULL, 0), 0);
    Kgs__Cluster__V1__NodeSnapshot *m = kgs__cluster__v1__node_snapshot__unpack(NULL, len, buf);
    free(buf);
    double *orig_values = m->gpus[1]->values;
    size_t orig_n = m->gpus[1]->n_values;
    mut_future_field(m);
    len = kgs__cluster__v1__node_snapshot__get_packed_size(m);
    buf = malloc(len);
    kgs__cluster__v1__node_snapshot__pack(m, buf);
    m->gpus[1]->values = orig_values;
    m->gpus[1]->n_values = orig_n;
    kgs__cluster__v1__node_snapshot__free_unpacked(m, NULL);

    snapshot_t *d = NULL;
    char err[256] = "";
    assert_int_equal(snapshot_codec_decode(buf, len, 100 * SEC, &d, NULL, err, sizeof err), 0);
    assert_same_snapshot(s, d);
    free(buf);
    snapshot_unref(d);
    snapshot_unref(s);
}

static void test_snapshot_codec_refuses_to_encode_over_4_mib(void **state) {
    (void)state;
    snapshot_t *s = snapshot_new(4096, 32768);
    assert_non_null(s);
    for (unsigned i = 0; i < s->mig_total; i++) {
        memset(s->mig[i].name, 'x', SNAPSHOT_NAME_MAX - 1);
        memset(s->mig[i].uuid, 'u', SNAPSHOT_UUID_MAX - 1);
    }
    uint8_t *buf = (uint8_t *)"sentinel";
    size_t len = 1;
    char err[256];
    assert_int_equal(snapshot_codec_encode(s, NULL, 0, 1000, &buf, &len, err, sizeof err),
                     KGS_ERANGE);
    assert_null(buf);
    assert_int_equal(len, 0);
    assert_non_null(strstr(err, "encode NodeSnapshot: "));
    assert_non_null(strstr(err, "bytes, at most 4194304"));
    snapshot_unref(s);
}

/* ---- processes ---------------------------------------------------------------- */

/* GPU 0 (time-sliced) with two processes listed out of order in s->procs,
 * GPU 1 a MIG parent whose instance has one process (no utilisation). */
static snapshot_t *procs_snapshot(void) {
    snapshot_t *s = snapshot_new_with_procs(2, 1, 3);
    assert_non_null(s);
    s->status = SNAPSHOT_OK;
    s->taken_mono = 100 * SEC;
    snprintf(s->node_name, sizeof s->node_name, "n1");
    s->procs_attributed = true;
    gpu_record_t *g = &s->gpus[0];
    snprintf(g->uuid, sizeof g->uuid, "GPU-0000");
    g->procs =
        (proc_list_t){.first = 1, .count = 2, .dropped = 3, .list_ok = true, .util_ok = true};
    g = &s->gpus[1];
    g->index = 1;
    snprintf(g->uuid, sizeof g->uuid, "GPU-1111");
    g->mig_enabled = true;
    g->mig_count = 1;
    g->procs.util_code = 3;
    mig_record_t *m = &s->mig[0];
    m->parent_index = 1;
    snprintf(m->uuid, sizeof m->uuid, "MIG-2222");
    m->procs = (proc_list_t){.first = 0, .count = 1, .list_ok = true, .util_code = 3};
    s->procs[0] = (proc_record_t){
        .pid = 30, .valid = 1u << PROC_F_USED_MEMORY, .used_memory_bytes = UINT64_C(1) << 40};
    snprintf(s->procs[0].pod_uid, sizeof s->procs[0].pod_uid,
             "33333333-3333-3333-3333-333333333333");
    s->procs[1] = (proc_record_t){.pid = 10,
                                  .valid = (1u << PROC_F_SM_UTIL) | (1u << PROC_F_MEM_UTIL) |
                                           (1u << PROC_F_USED_MEMORY),
                                  .sm_util_pct = 25.5,
                                  .mem_util_pct = 3,
                                  .used_memory_bytes = 1000};
    snprintf(s->procs[1].pod_uid, sizeof s->procs[1].pod_uid,
             "11111111-1111-1111-1111-111111111111");
    snprintf(s->procs[1].container_id, sizeof s->procs[1].container_id, "abcdef012345");
    s->procs[2] = (proc_record_t){.pid = 20, .valid = (1u << PROC_F_SM_UTIL), .sm_util_pct = 0};
    return s;
}

static void test_snapshot_codec_round_trips_processes_by_device(void **state) {
    (void)state;
    snapshot_t *s = procs_snapshot();
    snapshot_t *d = trip(s, NULL, 100 * SEC, 100 * SEC, NULL);
    assert_int_equal(d->proc_total, 3);
    assert_true(d->procs_attributed);
    const proc_list_t *a = &d->gpus[0].procs;
    assert_true(a->list_ok && a->util_ok);
    assert_int_equal(a->count, 2);
    assert_int_equal(a->dropped, 3);
    const proc_record_t *p = &d->procs[a->first];
    assert_memory_equal(&p[0], &s->procs[1], sizeof p[0]);
    assert_memory_equal(&p[1], &s->procs[2], sizeof p[1]);
    assert_false(d->gpus[1].procs.list_ok);
    assert_int_equal(d->gpus[1].procs.util_code, 3);
    const proc_list_t *mp = &d->mig[0].procs;
    assert_true(mp->list_ok);
    assert_false(mp->util_ok);
    assert_int_equal(mp->count, 1);
    assert_memory_equal(&d->procs[mp->first], &s->procs[0], sizeof s->procs[0]);
    snapshot_unref(d);
    snapshot_unref(s);
}

/* AMD GPUs as the amdgpu reader records them where the ASIC has no
 * unique_id: no uuid, so their processes are sent by PCI address, and each
 * lands on its own GPU. */
static void test_snapshot_codec_carries_processes_of_gpus_without_uuid(void **state) {
    (void)state;
    snapshot_t *s = snapshot_new_with_procs(2, 0, 2);
    assert_non_null(s);
    s->status = SNAPSHOT_OK;
    s->taken_mono = 100 * SEC;
    s->procs_attributed = true;
    const char *bus[2] = {"0000:19:00.0", "0000:c1:00.0"};
    for (unsigned i = 0; i < 2; i++) {
        gpu_record_t *g = &s->gpus[i];
        g->index = i;
        g->health = GPU_HEALTH_OK;
        g->vendor = GPU_VENDOR_AMD;
        snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "%s", bus[i]);
        g->procs = (proc_list_t){.first = i, .count = 1, .list_ok = true, .util_ok = true};
        s->procs[i] = (proc_record_t){.pid = 100 + i,
                                      .valid = 1u << PROC_F_USED_MEMORY,
                                      .used_memory_bytes = (i + 1) * UINT64_C(1) << 30};
    }
    snapshot_t *d = trip(s, NULL, 100 * SEC, 100 * SEC, NULL);
    assert_int_equal(d->proc_total, 2);
    for (unsigned i = 0; i < 2; i++) {
        assert_string_equal(d->gpus[i].uuid, "");
        assert_int_equal(d->gpus[i].vendor, GPU_VENDOR_AMD);
        assert_int_equal(d->gpus[i].procs.count, 1);
        assert_int_equal(d->procs[d->gpus[i].procs.first].pid, 100 + i);
    }
    snapshot_unref(d);
    snapshot_unref(s);
}

typedef void (*proc_mutate_fn)(Kgs__Cluster__V1__NodeSnapshot *m);

static void expect_proc_reject(proc_mutate_fn mutate, const char *want) {
    snapshot_t *s = procs_snapshot();
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(snapshot_codec_encode(s, NULL, 100 * SEC, 1000, &buf, &len, NULL, 0), 0);
    snapshot_unref(s);
    Kgs__Cluster__V1__NodeSnapshot *m = kgs__cluster__v1__node_snapshot__unpack(NULL, len, buf);
    assert_non_null(m);
    free(buf);
    assert_int_equal(m->n_processes, 3);
    Kgs__Cluster__V1__NodeSnapshot orig = *m;
    Kgs__Cluster__V1__GpuProcess p0 = *m->processes[0], p1 = *m->processes[1],
                                 p2 = *m->processes[2];
    Kgs__Cluster__V1__Gpu g1 = *m->gpus[1];
    mutate(m);
    len = kgs__cluster__v1__node_snapshot__get_packed_size(m);
    buf = malloc(len);
    kgs__cluster__v1__node_snapshot__pack(m, buf);
    *m = orig;
    *m->processes[0] = p0;
    *m->processes[1] = p1;
    *m->processes[2] = p2;
    *m->gpus[1] = g1;
    kgs__cluster__v1__node_snapshot__free_unpacked(m, NULL);
    snapshot_t *out = NULL;
    char err[256] = "";
    assert_int_equal(snapshot_codec_decode(buf, len, 100 * SEC, &out, NULL, err, sizeof err),
                     KGS_EINVAL);
    free(buf);
    assert_null(out);
    if (!strstr(err, want))
        fail_msg("error \"%s\" lacks \"%s\"", err, want);
}

static void mut_proc_unknown_device(Kgs__Cluster__V1__NodeSnapshot *m) {
    m->processes[0]->gpu_uuid = "GPU-9999";
}
static void mut_proc_list_not_known(Kgs__Cluster__V1__NodeSnapshot *m) {
    m->processes[0]->gpu_uuid = "GPU-1111"; /* MIG parent: processes_known false */
}
static void mut_proc_not_adjacent(Kgs__Cluster__V1__NodeSnapshot *m) {
    m->processes[2]->gpu_uuid = "MIG-2222"; /* MIG-2222, GPU-0000, MIG-2222 */
}
static void mut_proc_util_nan(Kgs__Cluster__V1__NodeSnapshot *m) {
    m->processes[1]->sm_util = NAN; /* pid 10; processes[0] is the MIG's pid 30 */
}
static void mut_proc_util_over_100(Kgs__Cluster__V1__NodeSnapshot *m) {
    m->processes[1]->mem_util = 100.5;
}
static void mut_proc_pod_uid_too_long(Kgs__Cluster__V1__NodeSnapshot *m) {
    m->processes[0]->pod_uid = "11111111-1111-1111-1111-111111111111-and-more";
}
static void mut_proc_dropped_without_list(Kgs__Cluster__V1__NodeSnapshot *m) {
    m->gpus[1]->processes_dropped = 2;
}

static void test_snapshot_codec_rejects_inconsistent_processes(void **state) {
    (void)state;
    expect_proc_reject(mut_proc_unknown_device,
                       "processes[0]: gpu_uuid \"GPU-9999\" names no GPU or MIG instance");
    expect_proc_reject(mut_proc_list_not_known,
                       "processes[0]: GPU-1111: processes listed but processes_known is false");
    expect_proc_reject(mut_proc_not_adjacent,
                       "processes[2]: MIG-2222: processes of one device are not adjacent");
    expect_proc_reject(mut_proc_util_nan, "processes[1]: pid 10: utilisation not a percent");
    expect_proc_reject(mut_proc_util_over_100, "utilisation not a percent (sm 25.5, mem 100.5)");
    expect_proc_reject(mut_proc_pod_uid_too_long, "processes[0]: pod_uid: longer than 39 bytes");
    expect_proc_reject(mut_proc_dropped_without_list,
                       "gpus[1] (GPU-1111): processes_dropped or process_util_known without "
                       "processes_known");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_snapshot_codec_round_trips_every_field_absence_and_code),
        cmocka_unit_test(test_snapshot_codec_round_trips_nvml_down_without_gpus),
        cmocka_unit_test(test_snapshot_codec_sends_absent_fields_as_zero_and_only_mig_fields),
        cmocka_unit_test(test_snapshot_codec_rounds_uint64_above_2_pow_53),
        cmocka_unit_test(test_snapshot_codec_carries_pods_unknown_with_reason),
        cmocka_unit_test(test_snapshot_codec_carries_dra_devices_raw_and_unresolved),
        cmocka_unit_test(test_snapshot_codec_age_moves_taken_mono_onto_the_receiver_clock),
        cmocka_unit_test(test_snapshot_codec_rejects_malformed_bytes),
        cmocka_unit_test(test_snapshot_codec_rejects_each_inconsistency_with_its_message),
        cmocka_unit_test(test_snapshot_codec_drops_fields_it_does_not_know),
        cmocka_unit_test(test_snapshot_codec_refuses_to_encode_over_4_mib),
        cmocka_unit_test(test_snapshot_codec_round_trips_processes_by_device),
        cmocka_unit_test(test_snapshot_codec_carries_processes_of_gpus_without_uuid),
        cmocka_unit_test(test_snapshot_codec_rejects_inconsistent_processes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
