/*
 * test_cuda_index.c - the job-local CUDA ordinal: what CUDA_VISIBLE_DEVICES
 * and CUDA_DEVICE_ORDER make of the node, and "unknown" wherever NVIDIA
 * documents no answer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/err.h"
#include "core/snapshot.h"
#include "env/cuda_index.h"

/*
 * The node: four H100s whose NVML order is not their PCI order (a site
 * can renumber, and the test then tells the two apart): NVML index 0 sits
 * at bus 0x65, 1 at 0x17, 2 at 0x31, 3 at 0xB3. PCI order: 1, 2, 0, 3.
 */
static const char *const uuids[4] = {
    "GPU-aa110000-0000-0000-0000-000000000000",
    "GPU-aa220000-0000-0000-0000-000000000000",
    "GPU-bb330000-0000-0000-0000-000000000000",
    "GPU-cc440000-0000-0000-0000-000000000000",
};
static const char *const buses[4] = {"00000000:65:00.0", "00000000:17:00.0", "00000000:31:00.0",
                                     "00000000:B3:00.0"};

static snapshot_t *node(unsigned gpus, unsigned migs) {
    snapshot_t *s = snapshot_new(gpus, migs);
    assert_non_null(s);
    strcpy(s->driver_version, "560.35.03");
    for (unsigned i = 0; i < gpus; i++) {
        s->gpus[i].index = i;
        strcpy(s->gpus[i].uuid, uuids[i]);
        strcpy(s->gpus[i].pci_bus_id, buses[i]);
        strcpy(s->gpus[i].name, "NVIDIA H100 80GB HBM3");
    }
    return s;
}

/* GPU 3 in MIG mode with instances in slots 0..n-1, GPU instance ids
 * `gi` (compute instance 0 each). */
static void make_mig(snapshot_t *s, unsigned n, const unsigned *gi) {
    s->gpus[3].mig_enabled = true;
    s->gpus[3].mig_first = 0;
    s->gpus[3].mig_count = n;
    for (unsigned m = 0; m < n; m++) {
        s->mig[m].parent_index = 3;
        snprintf(s->mig[m].uuid, sizeof s->mig[m].uuid, "MIG-%08x-0000-0000-0000-000000000000",
                 0x1f000000u + m);
        s->mig[m].gpu_instance_id = gi[m];
        s->mig[m].compute_instance_id = 0;
        s->mig[m].ids_valid = true;
    }
}

static env_info_t env_of(const char *visible, const char *order) {
    env_info_t e;
    memset(&e, 0, sizeof e);
    if (visible) {
        e.cuda_visible_set = true;
        snprintf(e.cuda_visible, sizeof e.cuda_visible, "%s", visible);
    }
    if (order) {
        e.cuda_order_set = true;
        snprintf(e.cuda_order, sizeof e.cuda_order, "%s", order);
    }
    return e;
}

static cuda_index_map_t build(const snapshot_t *s, const char *visible, const char *order) {
    env_info_t e = env_of(visible, order);
    cuda_index_map_t m;
    memset(&m, 0x5a, sizeof m);
    assert_int_equal(cuda_index_map_build(&e, s, &m), 0);
    assert_int_equal(m.gpu_count, s->gpu_count);
    assert_int_equal(m.mig_count, s->mig_total);
    return m;
}

static void expect_gpu(const cuda_index_map_t *m, unsigned pos, cuda_index_state_t st,
                       unsigned index) {
    if (m->gpu[pos].state != st)
        fail_msg("GPU %u: state %d, want %d (note: %s)", pos, m->gpu[pos].state, st, m->note);
    if (st == CUDA_INDEX_KNOWN)
        assert_int_equal(m->gpu[pos].index, index);
}

static void expect_mig(const cuda_index_map_t *m, unsigned slot, cuda_index_state_t st,
                       unsigned index) {
    if (m->mig[slot].state != st)
        fail_msg("MIG %u: state %d, want %d (note: %s)", slot, m->mig[slot].state, st, m->note);
    if (st == CUDA_INDEX_KNOWN)
        assert_int_equal(m->mig[slot].index, index);
}

static void expect_note(const cuda_index_map_t *m, const char *needle) {
    if (!strstr(m->note, needle))
        fail_msg("note lacks \"%s\": \"%s\"", needle, m->note);
}

/* ---- no CUDA_VISIBLE_DEVICES ---- */

static void test_cuda_index_unset_pci_bus_id_follows_bus_order_not_nvml_order(void **st) {
    (void)st;
    snapshot_t *s = node(4, 0);
    cuda_index_map_t m = build(s, NULL, "PCI_BUS_ID");
    expect_gpu(&m, 1, CUDA_INDEX_KNOWN, 0);
    expect_gpu(&m, 2, CUDA_INDEX_KNOWN, 1);
    expect_gpu(&m, 0, CUDA_INDEX_KNOWN, 2);
    expect_gpu(&m, 3, CUDA_INDEX_KNOWN, 3);
    assert_string_equal(m.note, "");
    cuda_index_map_deinit(&m);
    snapshot_unref(s);
}

static void test_cuda_index_unset_fastest_first_is_visible_but_unnumbered(void **st) {
    (void)st;
    snapshot_t *s = node(2, 0);
    for (int pass = 0; pass < 2; pass++) {
        cuda_index_map_t m = build(s, NULL, pass ? "FASTEST_FIRST" : NULL);
        expect_gpu(&m, 0, CUDA_INDEX_VISIBLE, 0);
        expect_gpu(&m, 1, CUDA_INDEX_VISIBLE, 0);
        expect_note(&m, pass ? "CUDA_DEVICE_ORDER is FASTEST_FIRST" : "unset (FASTEST_FIRST)");
        expect_note(&m, "CUDA_DEVICE_ORDER=PCI_BUS_ID");
        cuda_index_map_deinit(&m);
    }
    snapshot_unref(s);
}

static void test_cuda_index_single_gpu_is_zero_in_any_order(void **st) {
    (void)st;
    snapshot_t *s = node(1, 0);
    s->gpus[0].pci_bus_id[0] = '\0'; /* not needed for one GPU */
    cuda_index_map_t m = build(s, NULL, NULL);
    expect_gpu(&m, 0, CUDA_INDEX_KNOWN, 0);
    assert_string_equal(m.note, "");
    cuda_index_map_deinit(&m);
    m = build(s, "0", NULL);
    expect_gpu(&m, 0, CUDA_INDEX_KNOWN, 0);
    cuda_index_map_deinit(&m);
    m = build(s, "1", NULL); /* no CUDA device 1: CUDA sees none */
    expect_gpu(&m, 0, CUDA_INDEX_HIDDEN, 0);
    cuda_index_map_deinit(&m);
    snapshot_unref(s);
}

static void test_cuda_index_undocumented_device_order_is_unknown_naming_it(void **st) {
    (void)st;
    snapshot_t *s = node(2, 0);
    cuda_index_map_t m = build(s, NULL, "pci_bus_id");
    expect_gpu(&m, 0, CUDA_INDEX_VISIBLE, 0);
    expect_note(&m, "CUDA_DEVICE_ORDER=\"pci_bus_id\" is neither FASTEST_FIRST nor PCI_BUS_ID");
    cuda_index_map_deinit(&m);
    snapshot_unref(s);
}

static void test_cuda_index_unhealthy_gpu_makes_the_rest_of_the_order_unknown(void **st) {
    (void)st;
    snapshot_t *s = node(4, 0);
    s->gpus[2].health = GPU_HEALTH_LOST; /* second in PCI order */
    cuda_index_map_t m = build(s, NULL, "PCI_BUS_ID");
    expect_gpu(&m, 1, CUDA_INDEX_KNOWN, 0);
    expect_gpu(&m, 2, CUDA_INDEX_UNKNOWN, 0);
    expect_gpu(&m, 0, CUDA_INDEX_VISIBLE, 0);
    expect_gpu(&m, 3, CUDA_INDEX_VISIBLE, 0);
    expect_note(&m, "GPU 2 is lost");
    cuda_index_map_deinit(&m);
    snapshot_unref(s);
}

static void test_cuda_index_missing_bus_id_makes_pci_order_unknown(void **st) {
    (void)st;
    snapshot_t *s = node(3, 0);
    strcpy(s->gpus[1].pci_bus_id, "17:00"); /* not NVML's form */
    cuda_index_map_t m = build(s, NULL, "PCI_BUS_ID");
    for (unsigned i = 0; i < 3; i++)
        expect_gpu(&m, i, CUDA_INDEX_VISIBLE, 0);
    expect_note(&m, "GPU 1 has no PCI bus id");
    cuda_index_map_deinit(&m);
    snapshot_unref(s);
}

static void test_cuda_index_unset_with_mig_mode_gpu_is_unknown(void **st) {
    (void)st;
    snapshot_t *s = node(4, 2);
    make_mig(s, 2, (const unsigned[]){1, 2});
    cuda_index_map_t m = build(s, NULL, "PCI_BUS_ID");
    for (unsigned i = 0; i < 4; i++)
        expect_gpu(&m, i, CUDA_INDEX_UNKNOWN, 0);
    expect_mig(&m, 0, CUDA_INDEX_UNKNOWN, 0);
    expect_note(&m, "GPU 3 is in MIG mode");
    cuda_index_map_deinit(&m);
    snapshot_unref(s);
}

/* ---- CUDA_VISIBLE_DEVICES ---- */

static void test_cuda_index_uuid_list_is_list_order_in_any_device_order(void **st) {
    (void)st;
    snapshot_t *s = node(4, 0);
    cuda_index_map_t m = build(s, "GPU-cc44, GPU-aa110000-0000-0000-0000-000000000000", NULL);
    /* a blank before the second UUID: undocumented from there on */
    expect_gpu(&m, 3, CUDA_INDEX_KNOWN, 0);
    expect_gpu(&m, 0, CUDA_INDEX_UNKNOWN, 0);
    expect_note(&m, "blanks around a UUID");
    cuda_index_map_deinit(&m);

    m = build(s, "GPU-cc44,GPU-aa11,GPU-bb", NULL);
    expect_gpu(&m, 3, CUDA_INDEX_KNOWN, 0);
    expect_gpu(&m, 0, CUDA_INDEX_KNOWN, 1);
    expect_gpu(&m, 2, CUDA_INDEX_KNOWN, 2);
    expect_gpu(&m, 1, CUDA_INDEX_HIDDEN, 0);
    assert_string_equal(m.note, "");
    cuda_index_map_deinit(&m);
    snapshot_unref(s);
}

static void test_cuda_index_integers_need_a_known_device_order(void **st) {
    (void)st;
    snapshot_t *s = node(4, 0);
    cuda_index_map_t m = build(s, "2,0", NULL); /* FASTEST_FIRST: which GPU is "2"? */
    for (unsigned i = 0; i < 4; i++)
        expect_gpu(&m, i, CUDA_INDEX_UNKNOWN, 0);
    expect_note(&m, "CUDA_VISIBLE_DEVICES entry 1 (\"2\")");
    expect_note(&m, "FASTEST_FIRST");
    cuda_index_map_deinit(&m);

    m = build(s, " 2 ,0", "PCI_BUS_ID"); /* CUDA ordinal 2 = bus 0x65 = NVML 0 */
    expect_gpu(&m, 0, CUDA_INDEX_KNOWN, 0);
    expect_gpu(&m, 1, CUDA_INDEX_KNOWN, 1);
    expect_gpu(&m, 2, CUDA_INDEX_HIDDEN, 0);
    expect_gpu(&m, 3, CUDA_INDEX_HIDDEN, 0);
    assert_string_equal(m.note, "");
    cuda_index_map_deinit(&m);
    snapshot_unref(s);
}

static void test_cuda_index_list_stops_at_first_invalid_entry(void **st) {
    (void)st;
    snapshot_t *s = node(4, 0);
    const char *lists[] = {"1,-1,0", "1,7,0", "1,,0", "1,all,0", "1,GPU-dead,0", "1,GPU-aa,0"};
    for (size_t k = 0; k < sizeof lists / sizeof lists[0]; k++) {
        cuda_index_map_t m = build(s, lists[k], "PCI_BUS_ID");
        expect_gpu(&m, 2, CUDA_INDEX_KNOWN, 0); /* CUDA 1 = bus 0x31 = NVML 2 */
        expect_gpu(&m, 0, CUDA_INDEX_HIDDEN, 0);
        expect_gpu(&m, 1, CUDA_INDEX_HIDDEN, 0);
        expect_gpu(&m, 3, CUDA_INDEX_HIDDEN, 0);
        if (m.note[0])
            fail_msg("%s: note %s", lists[k], m.note);
        cuda_index_map_deinit(&m);
    }
    snapshot_unref(s);
}

static void test_cuda_index_empty_or_invalid_first_entry_hides_everything(void **st) {
    (void)st;
    snapshot_t *s = node(2, 0);
    const char *lists[] = {"", "  ", "-1", "none", "all", "void"};
    for (size_t k = 0; k < sizeof lists / sizeof lists[0]; k++) {
        cuda_index_map_t m = build(s, lists[k], NULL);
        expect_gpu(&m, 0, CUDA_INDEX_HIDDEN, 0);
        expect_gpu(&m, 1, CUDA_INDEX_HIDDEN, 0);
        assert_string_equal(m.note, "");
        cuda_index_map_deinit(&m);
    }
    snapshot_unref(s);
}

static void test_cuda_index_undocumented_forms_are_unknown_never_guessed(void **st) {
    (void)st;
    snapshot_t *s = node(4, 0);
    const struct {
        const char *list;
        const char *why;
        int known_first; /* 1: entry 1 keeps ordinal 0 (NVML 3) */
    } cases[] = {
        {"3gpu,0", "text after its number", 0},
        {"+3", "plus sign", 0},
        {"all,3", "", -1}, /* invalid: hides everything */
        {"GPU-cc44,1", "mixes indexes and UUIDs", 1},
        {"GPU-CC44", "only when case is ignored", 0},
        {"GPU-cc44,GPU-aa22,GPU-cc44", "names one device twice", 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        cuda_index_map_t m = build(s, cases[k].list, "PCI_BUS_ID");
        if (cases[k].known_first < 0) {
            for (unsigned i = 0; i < 4; i++)
                expect_gpu(&m, i, CUDA_INDEX_HIDDEN, 0);
            cuda_index_map_deinit(&m);
            continue;
        }
        expect_note(&m, cases[k].why);
        expect_gpu(&m, 3, cases[k].known_first ? CUDA_INDEX_KNOWN : CUDA_INDEX_UNKNOWN, 0);
        for (unsigned i = 0; i < 3; i++)
            expect_gpu(&m, i, CUDA_INDEX_UNKNOWN, 0);
        cuda_index_map_deinit(&m);
    }
    snapshot_unref(s);
}

static void test_cuda_index_lone_mig_instance_is_zero_on_any_driver(void **st) {
    (void)st;
    snapshot_t *s = node(4, 2);
    make_mig(s, 2, (const unsigned[]){1, 2});
    cuda_index_map_t m = build(s, "MIG-1f000001", NULL);
    expect_mig(&m, 1, CUDA_INDEX_KNOWN, 0);
    expect_mig(&m, 0, CUDA_INDEX_HIDDEN, 0);
    for (unsigned i = 0; i < 4; i++)
        expect_gpu(&m, i, CUDA_INDEX_HIDDEN, 0); /* its parent too */
    assert_string_equal(m.note, "");
    cuda_index_map_deinit(&m);
    snapshot_unref(s);
}

static void test_cuda_index_several_mig_instances_need_r570(void **st) {
    (void)st;
    snapshot_t *s = node(4, 2);
    make_mig(s, 2, (const unsigned[]){1, 2});
    cuda_index_map_t m = build(s, "MIG-1f000000,MIG-1f000001", NULL);
    expect_mig(&m, 0, CUDA_INDEX_UNKNOWN, 0);
    expect_mig(&m, 1, CUDA_INDEX_UNKNOWN, 0);
    expect_gpu(&m, 0, CUDA_INDEX_HIDDEN, 0); /* unlisted: hidden on every driver */
    expect_note(&m, "before R570");
    expect_note(&m, "560.35.03");
    cuda_index_map_deinit(&m);

    strcpy(s->driver_version, "570.86.15");
    m = build(s, "MIG-1f000000,MIG-1f000001,GPU-aa11", NULL);
    expect_mig(&m, 0, CUDA_INDEX_KNOWN, 0);
    expect_mig(&m, 1, CUDA_INDEX_KNOWN, 1);
    expect_gpu(&m, 0, CUDA_INDEX_KNOWN, 2);
    expect_gpu(&m, 1, CUDA_INDEX_HIDDEN, 0);
    assert_string_equal(m.note, "");
    cuda_index_map_deinit(&m);

    s->mig[1].gpu_instance_id = 1; /* two compute instances of GPU instance 1 */
    s->mig[1].compute_instance_id = 1;
    m = build(s, "GPU-aa11,MIG-1f000000,MIG-1f000001", NULL);
    expect_gpu(&m, 0, CUDA_INDEX_KNOWN, 0);
    expect_mig(&m, 0, CUDA_INDEX_UNKNOWN, 0);
    expect_mig(&m, 1, CUDA_INDEX_UNKNOWN, 0);
    expect_note(&m, "two compute instances of GPU instance 1 of GPU 3");
    cuda_index_map_deinit(&m);
    snapshot_unref(s);
}

static void test_cuda_index_mig_mode_gpu_named_whole_is_unknown(void **st) {
    (void)st;
    snapshot_t *s = node(4, 1);
    make_mig(s, 1, (const unsigned[]){1});
    cuda_index_map_t m = build(s, "GPU-aa22,GPU-cc44", NULL);
    expect_gpu(&m, 1, CUDA_INDEX_KNOWN, 0);
    expect_gpu(&m, 3, CUDA_INDEX_UNKNOWN, 0);
    expect_mig(&m, 0, CUDA_INDEX_UNKNOWN, 0);
    expect_note(&m, "GPU in MIG mode as a whole");
    cuda_index_map_deinit(&m);
    snapshot_unref(s);
}

static void test_cuda_index_legacy_mig_form_only_before_r470(void **st) {
    (void)st;
    snapshot_t *s = node(4, 2);
    make_mig(s, 2, (const unsigned[]){1, 2});
    const char *entry = "MIG-GPU-cc440000-0000-0000-0000-000000000000/2/0";
    strcpy(s->driver_version, "460.106.00");
    cuda_index_map_t m = build(s, entry, NULL);
    expect_mig(&m, 1, CUDA_INDEX_KNOWN, 0);
    expect_mig(&m, 0, CUDA_INDEX_HIDDEN, 0);
    cuda_index_map_deinit(&m);
    m = build(s, "MIG-GPU-cc440000-0000-0000-0000-000000000000/2/+0", NULL);
    expect_mig(&m, 1, CUDA_INDEX_HIDDEN, 0); /* malformed: the list ends */
    cuda_index_map_deinit(&m);
    strcpy(s->driver_version, "560.35.03");
    m = build(s, entry, NULL);
    expect_mig(&m, 1, CUDA_INDEX_UNKNOWN, 0);
    expect_note(&m, "before R470");
    cuda_index_map_deinit(&m);
    snapshot_unref(s);
}

static void test_cuda_index_unhealthy_listed_gpu_is_unknown_from_there(void **st) {
    (void)st;
    snapshot_t *s = node(4, 0);
    s->gpus[0].health = GPU_HEALTH_ERROR;
    cuda_index_map_t m = build(s, "GPU-bb,GPU-aa11,GPU-cc", NULL);
    expect_gpu(&m, 2, CUDA_INDEX_KNOWN, 0);
    expect_gpu(&m, 0, CUDA_INDEX_UNKNOWN, 0);
    expect_gpu(&m, 3, CUDA_INDEX_UNKNOWN, 0);
    expect_note(&m, "not healthy");
    cuda_index_map_deinit(&m);
    snapshot_unref(s);
}

static void test_cuda_index_nvml_down_and_bad_arguments(void **st) {
    (void)st;
    snapshot_t *s = node(2, 0);
    s->status = SNAPSHOT_NVML_DOWN;
    cuda_index_map_t m = build(s, NULL, "PCI_BUS_ID");
    expect_gpu(&m, 0, CUDA_INDEX_UNKNOWN, 0);
    cuda_index_map_deinit(&m);
    cuda_index_map_deinit(&m); /* twice is fine */
    cuda_index_map_deinit(NULL);
    env_info_t e = env_of(NULL, NULL);
    assert_int_equal(cuda_index_map_build(&e, NULL, &m), KGS_EINVAL);
    assert_int_equal(cuda_index_map_build(NULL, s, &m), KGS_EINVAL);
    assert_int_equal(cuda_index_map_build(&e, s, NULL), KGS_EINVAL);
    snapshot_unref(s);
}

static void test_cuda_index_driver_major_reads_the_leading_number(void **st) {
    (void)st;
    assert_int_equal(cuda_index_driver_major("570.86.15"), 570);
    assert_int_equal(cuda_index_driver_major("460"), 460);
    assert_int_equal(cuda_index_driver_major(""), 0);
    assert_int_equal(cuda_index_driver_major("r570"), 0);
    assert_int_equal(cuda_index_driver_major("570x"), 0);
    assert_int_equal(cuda_index_driver_major(NULL), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cuda_index_unset_pci_bus_id_follows_bus_order_not_nvml_order),
        cmocka_unit_test(test_cuda_index_unset_fastest_first_is_visible_but_unnumbered),
        cmocka_unit_test(test_cuda_index_single_gpu_is_zero_in_any_order),
        cmocka_unit_test(test_cuda_index_undocumented_device_order_is_unknown_naming_it),
        cmocka_unit_test(test_cuda_index_unhealthy_gpu_makes_the_rest_of_the_order_unknown),
        cmocka_unit_test(test_cuda_index_missing_bus_id_makes_pci_order_unknown),
        cmocka_unit_test(test_cuda_index_unset_with_mig_mode_gpu_is_unknown),
        cmocka_unit_test(test_cuda_index_uuid_list_is_list_order_in_any_device_order),
        cmocka_unit_test(test_cuda_index_integers_need_a_known_device_order),
        cmocka_unit_test(test_cuda_index_list_stops_at_first_invalid_entry),
        cmocka_unit_test(test_cuda_index_empty_or_invalid_first_entry_hides_everything),
        cmocka_unit_test(test_cuda_index_undocumented_forms_are_unknown_never_guessed),
        cmocka_unit_test(test_cuda_index_lone_mig_instance_is_zero_on_any_driver),
        cmocka_unit_test(test_cuda_index_several_mig_instances_need_r570),
        cmocka_unit_test(test_cuda_index_mig_mode_gpu_named_whole_is_unknown),
        cmocka_unit_test(test_cuda_index_legacy_mig_form_only_before_r470),
        cmocka_unit_test(test_cuda_index_unhealthy_listed_gpu_is_unknown_from_there),
        cmocka_unit_test(test_cuda_index_nvml_down_and_bad_arguments),
        cmocka_unit_test(test_cuda_index_driver_major_reads_the_leading_number),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
