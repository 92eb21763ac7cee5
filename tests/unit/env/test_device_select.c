/* test_device_select.c - resolving GPU lists against a snapshot. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/err.h"
#include "core/snapshot.h"
#include "env/env.h"

/*
 * The node: four GPUs, NVML indexes 0-3. GPU 2 has MIG enabled with two
 * instances (slots 0 and 1). GPUs 0 and 1 share the UUID prefix "GPU-aa".
 */
static const char *const gpu_uuids[4] = {
    "GPU-aa110000-0000-0000-0000-000000000000",
    "GPU-aa220000-0000-0000-0000-000000000000",
    "GPU-bb330000-0000-0000-0000-000000000000",
    "GPU-cc440000-0000-0000-0000-000000000000",
};
static const char *const mig_uuids[2] = {
    "MIG-1f000000-0000-0000-0000-000000000000",
    "MIG-1e000000-0000-0000-0000-000000000000",
};

static int setup_snapshot(void **state) {
    snapshot_t *s = snapshot_new(4, 2);
    if (!s)
        return -1;
    for (unsigned i = 0; i < 4; i++) {
        s->gpus[i].index = i;
        snprintf(s->gpus[i].uuid, sizeof s->gpus[i].uuid, "%s", gpu_uuids[i]);
    }
    s->gpus[2].mig_enabled = true;
    s->gpus[2].mig_first = 0;
    s->gpus[2].mig_count = 2;
    for (unsigned m = 0; m < 2; m++) {
        s->mig[m].parent_index = 2;
        snprintf(s->mig[m].uuid, sizeof s->mig[m].uuid, "%s", mig_uuids[m]);
        s->mig[m].gpu_instance_id = 1 + m;
        s->mig[m].compute_instance_id = 0;
        s->mig[m].ids_valid = true;
    }
    *state = s;
    return 0;
}

static int teardown_snapshot(void **state) {
    snapshot_unref(*state);
    return 0;
}

static device_selection_t resolve_ok(const snapshot_t *s, const char *list) {
    device_selection_t sel;
    memset(&sel, 0x5a, sizeof sel);
    char err[512] = "";
    int rc = device_selection_resolve("CUDA_VISIBLE_DEVICES", list, s, &sel, err, sizeof err);
    if (rc != 0)
        fail_msg("resolve \"%s\": rc %d: %s", list, rc, err);
    return sel;
}

static void expect_resolve_error(const snapshot_t *s, const char *list, int code,
                                 const char *needle) {
    device_selection_t sel;
    memset(&sel, 0x5a, sizeof sel);
    char err[512] = "";
    assert_int_equal(
        device_selection_resolve("CUDA_VISIBLE_DEVICES", list, s, &sel, err, sizeof err), code);
    /* A failed resolve selects nothing: never a fallback to all GPUs. */
    assert_false(sel.all_gpus);
    assert_int_equal(sel.gpu_count, 0);
    assert_int_equal(sel.mig_count, 0);
    if (!strstr(err, needle))
        fail_msg("error for \"%s\" lacks \"%s\": %s", list, needle, err);
}

static bool selects_gpu(const device_selection_t *sel, const snapshot_t *s, unsigned i) {
    return device_selection_has_gpu(sel, &s->gpus[i]);
}

/* ---- entry forms ---- */

static void test_device_select_resolves_nvml_indexes(void **state) {
    const snapshot_t *s = *state;
    device_selection_t sel = resolve_ok(s, "1,3");
    assert_false(sel.all_gpus);
    assert_int_equal(sel.gpu_count, 2);
    assert_int_equal(sel.gpu_index[0], 1);
    assert_int_equal(sel.gpu_index[1], 3);
    assert_int_equal(sel.mig_count, 0);
    assert_false(selects_gpu(&sel, s, 0));
    assert_true(selects_gpu(&sel, s, 1));
    assert_false(selects_gpu(&sel, s, 2));
    assert_true(selects_gpu(&sel, s, 3));
}

static void test_device_select_trims_blanks_around_entries(void **state) {
    const snapshot_t *s = *state;
    device_selection_t sel = resolve_ok(s, " 0 ,\t2\n");
    assert_int_equal(sel.gpu_count, 2);
    assert_int_equal(sel.gpu_index[0], 0);
    assert_int_equal(sel.gpu_index[1], 2);
}

static void test_device_select_collapses_duplicates(void **state) {
    const snapshot_t *s = *state;
    device_selection_t sel = resolve_ok(s, "1,1,GPU-aa220000-0000-0000-0000-000000000000,01");
    assert_int_equal(sel.gpu_count, 1);
    assert_int_equal(sel.gpu_index[0], 1);
    sel = resolve_ok(s, "MIG-1f000000-0000-0000-0000-000000000000,MIG-1f");
    assert_int_equal(sel.mig_count, 1);
}

static void test_device_select_resolves_full_gpu_uuid(void **state) {
    const snapshot_t *s = *state;
    device_selection_t sel = resolve_ok(s, gpu_uuids[3]);
    assert_int_equal(sel.gpu_count, 1);
    assert_int_equal(sel.gpu_index[0], 3);
}

static void test_device_select_resolves_unique_gpu_uuid_prefix(void **state) {
    const snapshot_t *s = *state;
    device_selection_t sel = resolve_ok(s, "GPU-bb");
    assert_int_equal(sel.gpu_count, 1);
    assert_int_equal(sel.gpu_index[0], 2);
    sel = resolve_ok(s, "GPU-aa2");
    assert_int_equal(sel.gpu_index[0], 1);
}

static void test_device_select_matches_uuid_hex_case_insensitively(void **state) {
    const snapshot_t *s = *state;
    device_selection_t sel = resolve_ok(s, "GPU-CC440000");
    assert_int_equal(sel.gpu_count, 1);
    assert_int_equal(sel.gpu_index[0], 3);
}

static void test_device_select_rejects_ambiguous_gpu_prefix_listing_candidates(void **state) {
    const snapshot_t *s = *state;
    expect_resolve_error(s, "GPU-aa", KGS_EINVAL, "ambiguous UUID prefix, matches 2 GPUs");
    expect_resolve_error(s, "GPU-aa", KGS_EINVAL, gpu_uuids[0]);
    expect_resolve_error(s, "GPU-aa", KGS_EINVAL, gpu_uuids[1]);
}

static void test_device_select_rejects_unknown_uuid_naming_it(void **state) {
    const snapshot_t *s = *state;
    expect_resolve_error(s, "0,GPU-dead", KGS_ENOTFOUND,
                         "CUDA_VISIBLE_DEVICES entry \"GPU-dead\": no GPU with this UUID");
    expect_resolve_error(s, "MIG-ffff", KGS_ENOTFOUND,
                         "entry \"MIG-ffff\": no MIG instance with this UUID");
}

static void test_device_select_resolves_mig_uuid_and_unique_prefix(void **state) {
    const snapshot_t *s = *state;
    device_selection_t sel = resolve_ok(s, mig_uuids[1]);
    assert_int_equal(sel.gpu_count, 0);
    assert_int_equal(sel.mig_count, 1);
    assert_int_equal(sel.mig_slot[0], 1);
    assert_true(device_selection_has_mig(&sel, s, 1));
    assert_false(device_selection_has_mig(&sel, s, 0));
    /* The parent is not itself selected; the writer shows it as context. */
    assert_false(selects_gpu(&sel, s, 2));
    sel = resolve_ok(s, "MIG-1f");
    assert_int_equal(sel.mig_slot[0], 0);
}

static void test_device_select_rejects_ambiguous_mig_prefix(void **state) {
    const snapshot_t *s = *state;
    expect_resolve_error(s, "MIG-1", KGS_EINVAL, "matches 2 MIG instances");
}

static void test_device_select_resolves_legacy_mig_form(void **state) {
    const snapshot_t *s = *state;
    char entry[128];
    snprintf(entry, sizeof entry, "MIG-%s/2/0", gpu_uuids[2]);
    device_selection_t sel = resolve_ok(s, entry);
    assert_int_equal(sel.mig_count, 1);
    assert_int_equal(sel.mig_slot[0], 1);
}

static void test_device_select_rejects_legacy_mig_form_without_that_instance(void **state) {
    const snapshot_t *s = *state;
    char entry[128];
    snprintf(entry, sizeof entry, "MIG-%s/7/0", gpu_uuids[2]);
    expect_resolve_error(s, entry, KGS_ENOTFOUND, "GPU 2 has no MIG instance");
    snprintf(entry, sizeof entry, "MIG-%s/1/0", gpu_uuids[0]);
    expect_resolve_error(s, entry, KGS_ENOTFOUND, "GPU 0 has no MIG instance");
    expect_resolve_error(s, "MIG-GPU-ffff/1/0", KGS_ENOTFOUND, "no GPU with this UUID");
    snprintf(entry, sizeof entry, "MIG-%s/1", gpu_uuids[2]);
    expect_resolve_error(s, entry, KGS_EINVAL, "malformed MIG device");
    snprintf(entry, sizeof entry, "MIG-%s/1/x", gpu_uuids[2]);
    expect_resolve_error(s, entry, KGS_EINVAL, "malformed MIG device");
}

static void test_device_select_all_selects_every_gpu_and_instance(void **state) {
    const snapshot_t *s = *state;
    device_selection_t sel = resolve_ok(s, " all ");
    assert_true(sel.all_gpus);
    for (unsigned i = 0; i < 4; i++)
        assert_true(selects_gpu(&sel, s, i));
    assert_true(device_selection_has_mig(&sel, s, 0));
    assert_true(device_selection_has_mig(&sel, s, 1));
}

static void test_device_select_none_void_and_empty_select_nothing(void **state) {
    const snapshot_t *s = *state;
    const char *lists[] = {"none", "void", "", "  ", " none\t"};
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
        device_selection_t sel = resolve_ok(s, lists[i]);
        assert_false(sel.all_gpus);
        assert_int_equal(sel.gpu_count, 0);
        assert_int_equal(sel.mig_count, 0);
        for (unsigned g = 0; g < 4; g++)
            assert_false(selects_gpu(&sel, s, g));
        assert_false(device_selection_has_mig(&sel, s, 0));
    }
}

static void test_device_select_parent_gpu_selects_its_mig_instances(void **state) {
    const snapshot_t *s = *state;
    device_selection_t sel = resolve_ok(s, "2");
    assert_true(device_selection_has_mig(&sel, s, 0));
    assert_true(device_selection_has_mig(&sel, s, 1));
    sel = resolve_ok(s, "1");
    assert_false(device_selection_has_mig(&sel, s, 0));
}

static void test_device_select_has_mig_is_false_for_slot_out_of_range(void **state) {
    const snapshot_t *s = *state;
    device_selection_t sel = resolve_ok(s, "all");
    assert_false(device_selection_has_mig(&sel, s, 2));
    assert_false(device_selection_has_mig(NULL, s, 0));
    assert_false(device_selection_has_mig(&sel, NULL, 0));
    assert_false(device_selection_has_gpu(NULL, &s->gpus[0]));
    assert_false(device_selection_has_gpu(&sel, NULL));
}

/* ---- errors ---- */

static void test_device_select_rejects_missing_index_naming_range(void **state) {
    const snapshot_t *s = *state;
    expect_resolve_error(s, "5", KGS_ENOTFOUND,
                         "CUDA_VISIBLE_DEVICES entry \"5\": no GPU with index 5 on this node "
                         "(indexes 0-3)");
    expect_resolve_error(s, "99999999999999999999", KGS_ENOTFOUND, "no GPU with that index");
}

static void test_device_select_lists_sparse_indexes_in_message(void **state) {
    (void)state;
    snapshot_t *s = snapshot_new(3, 0);
    assert_non_null(s);
    s->gpus[0].index = 0;
    s->gpus[1].index = 2;
    s->gpus[2].index = 3;
    expect_resolve_error(s, "1", KGS_ENOTFOUND, "(indexes 0, 2, 3)");
    snapshot_unref(s);
    snapshot_t *empty = snapshot_new(0, 0);
    assert_non_null(empty);
    expect_resolve_error(empty, "0", KGS_ENOTFOUND, "(indexes none)");
    snapshot_unref(empty);
}

static void test_device_select_rejects_malformed_entries_quoting_them(void **state) {
    const snapshot_t *s = *state;
    expect_resolve_error(s, "-1", KGS_EINVAL, "entry \"-1\": not a GPU index");
    expect_resolve_error(s, "0,1x", KGS_EINVAL, "entry \"1x\"");
    expect_resolve_error(s, "+1", KGS_EINVAL, "entry \"+1\"");
    expect_resolve_error(s, "GPU-", KGS_EINVAL, "entry \"GPU-\"");
    expect_resolve_error(s, "MIG-", KGS_EINVAL, "entry \"MIG-\"");
    expect_resolve_error(s, "0 1", KGS_EINVAL, "entry \"0 1\"");
    expect_resolve_error(s, "ALL", KGS_EINVAL, "entry \"ALL\"");
}

static void test_device_select_rejects_empty_entry_between_commas(void **state) {
    const snapshot_t *s = *state;
    expect_resolve_error(s, "0,,1", KGS_EINVAL, "CUDA_VISIBLE_DEVICES \"0,,1\": entry 2 is empty");
    expect_resolve_error(s, "0,", KGS_EINVAL, "entry 2 is empty");
    expect_resolve_error(s, ",0", KGS_EINVAL, "entry 1 is empty");
    expect_resolve_error(s, ",", KGS_EINVAL, "entry 1 is empty");
}

static void test_device_select_rejects_all_mixed_with_other_entries(void **state) {
    const snapshot_t *s = *state;
    expect_resolve_error(s, "all,0", KGS_EINVAL, "\"all\" must be the only entry");
    expect_resolve_error(s, "0, all", KGS_EINVAL, "\"all\" must be the only entry");
    expect_resolve_error(s, "none,0", KGS_EINVAL, "\"none\" must be the only entry");
    expect_resolve_error(s, "void,void", KGS_EINVAL, "\"void\" must be the only entry");
}

static void test_device_select_rejects_overlong_entry(void **state) {
    const snapshot_t *s = *state;
    char list[400];
    memset(list, 'a', sizeof list - 1);
    list[sizeof list - 1] = '\0';
    memcpy(list, "GPU-", 4);
    expect_resolve_error(s, list, KGS_EINVAL, "longer than");
}

static void test_device_select_names_the_source_variable(void **state) {
    const snapshot_t *s = *state;
    char err[256] = "";
    device_selection_t sel;
    assert_int_equal(device_selection_resolve("--device", "9", s, &sel, err, sizeof err),
                     KGS_ENOTFOUND);
    assert_non_null(strstr(err, "--device entry \"9\""));
    assert_int_equal(device_selection_resolve(NULL, "9", s, &sel, err, sizeof err), KGS_ENOTFOUND);
    assert_non_null(strstr(err, "device list entry \"9\""));
}

static void test_device_select_rejects_null_arguments(void **state) {
    const snapshot_t *s = *state;
    device_selection_t sel;
    assert_int_equal(device_selection_resolve("X", NULL, s, &sel, NULL, 0), KGS_EINVAL);
    assert_int_equal(device_selection_resolve("X", "0", NULL, &sel, NULL, 0), KGS_EINVAL);
    assert_int_equal(device_selection_resolve("X", "0", s, NULL, NULL, 0), KGS_EINVAL);
}

static void test_device_select_reports_erange_past_64_gpus(void **state) {
    (void)state;
    snapshot_t *s = snapshot_new(70, 0);
    assert_non_null(s);
    char list[512] = "";
    for (unsigned i = 0; i < 70; i++) {
        s->gpus[i].index = i;
        size_t n = strlen(list);
        snprintf(list + n, sizeof list - n, "%s%u", i ? "," : "", i);
    }
    expect_resolve_error(s, list, KGS_ERANGE, "more than 64 GPUs");
    device_selection_t sel = resolve_ok(s, "all");
    assert_true(selects_gpu(&sel, s, 69));
    snapshot_unref(s);
}

/* ---- CUDA_VISIBLE_DEVICES as CUDA reads it ---- */

static char cuda_note[768];

static device_selection_t resolve_cuda(const snapshot_t *s, const char *list) {
    device_selection_t sel;
    memset(&sel, 0x5a, sizeof sel);
    memset(cuda_note, 'x', sizeof cuda_note - 1);
    cuda_note[sizeof cuda_note - 1] = '\0';
    char err[512] = "";
    int rc =
        device_selection_resolve_cuda(list, s, &sel, cuda_note, sizeof cuda_note, err, sizeof err);
    if (rc != 0)
        fail_msg("resolve_cuda \"%s\": rc %d: %s", list, rc, err);
    return sel;
}

static void test_device_select_cuda_minus_one_selects_no_gpu(void **state) {
    const snapshot_t *s = *state;
    device_selection_t sel = resolve_cuda(s, "-1");
    assert_false(sel.all_gpus);
    assert_int_equal(sel.gpu_count, 0);
    assert_int_equal(sel.mig_count, 0);
    assert_string_equal(cuda_note,
                        "CUDA_VISIBLE_DEVICES entry \"-1\": not a GPU index, GPU-<uuid>, "
                        "MIG-<uuid>, \"all\" or \"none\"; CUDA stops reading the list at its "
                        "first invalid entry, so no GPU is visible");
    /* the strict reading still rejects it */
    expect_resolve_error(s, "-1", KGS_EINVAL, "entry \"-1\"");
}

static void test_device_select_cuda_stops_at_the_first_invalid_entry(void **state) {
    const snapshot_t *s = *state;
    device_selection_t sel = resolve_cuda(s, "0,-1,1");
    assert_int_equal(sel.gpu_count, 1);
    assert_int_equal(sel.gpu_index[0], 0);
    assert_false(selects_gpu(&sel, s, 1));
    assert_non_null(strstr(cuda_note, "entry \"-1\""));
    assert_non_null(strstr(cuda_note, "so only the 1 entry before it counts"));

    /* an index, a UUID or a MIG UUID this node lacks ends it the same way */
    sel = resolve_cuda(s, "3,GPU-bb33,7,0");
    assert_int_equal(sel.gpu_count, 2);
    assert_int_equal(sel.gpu_index[0], 3);
    assert_int_equal(sel.gpu_index[1], 2);
    assert_non_null(strstr(cuda_note, "entry \"7\": no GPU with index 7"));
    assert_non_null(strstr(cuda_note, "so only the 2 entries before it count"));
    sel = resolve_cuda(s, "MIG-1e,GPU-dead,1");
    assert_int_equal(sel.gpu_count, 0);
    assert_int_equal(sel.mig_count, 1);
    assert_int_equal(sel.mig_slot[0], 1);
    assert_non_null(strstr(cuda_note, "\"GPU-dead\""));
    sel = resolve_cuda(s, "GPU-aa,0"); /* ambiguous: matches GPUs 0 and 1 */
    assert_int_equal(sel.gpu_count, 0);
    assert_non_null(strstr(cuda_note, "ambiguous"));
    sel = resolve_cuda(s, "1,,0");
    assert_int_equal(sel.gpu_count, 1);
    assert_int_equal(sel.gpu_index[0], 1);
    assert_non_null(strstr(cuda_note, "entry 2 is empty"));
}

static void test_device_select_cuda_valid_lists_read_as_before_with_no_note(void **state) {
    const snapshot_t *s = *state;
    device_selection_t sel = resolve_cuda(s, "2, GPU-cc44");
    assert_int_equal(sel.gpu_count, 2);
    assert_string_equal(cuda_note, "");
    sel = resolve_cuda(s, "");
    assert_false(sel.all_gpus);
    assert_int_equal(sel.gpu_count, 0);
    assert_string_equal(cuda_note, "");
    sel = resolve_cuda(s, "all");
    assert_true(sel.all_gpus);
    assert_string_equal(cuda_note, "");
    device_selection_t out;
    assert_int_equal(device_selection_resolve_cuda("0", NULL, &out, NULL, 0, NULL, 0), KGS_EINVAL);
    assert_int_equal(device_selection_resolve_cuda("-1", s, &out, NULL, 0, NULL, 0), 0);
}

static void test_device_select_cuda_still_reports_erange(void **state) {
    (void)state;
    snapshot_t *s = snapshot_new(70, 0);
    assert_non_null(s);
    char list[512] = "";
    for (unsigned i = 0; i < 70; i++) {
        s->gpus[i].index = i;
        size_t n = strlen(list);
        snprintf(list + n, sizeof list - n, "%s%u", i ? "," : "", i);
    }
    device_selection_t sel;
    char err[512] = "";
    assert_int_equal(device_selection_resolve_cuda(list, s, &sel, NULL, 0, err, sizeof err),
                     KGS_ERANGE);
    assert_non_null(strstr(err, "more than 64 GPUs"));
    assert_int_equal(sel.gpu_count, 0);
    snapshot_unref(s);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup_snapshot, teardown_snapshot)

int main(void) {
    const struct CMUnitTest tests[] = {
        T(test_device_select_resolves_nvml_indexes),
        T(test_device_select_trims_blanks_around_entries),
        T(test_device_select_collapses_duplicates),
        T(test_device_select_resolves_full_gpu_uuid),
        T(test_device_select_resolves_unique_gpu_uuid_prefix),
        T(test_device_select_matches_uuid_hex_case_insensitively),
        T(test_device_select_rejects_ambiguous_gpu_prefix_listing_candidates),
        T(test_device_select_rejects_unknown_uuid_naming_it),
        T(test_device_select_resolves_mig_uuid_and_unique_prefix),
        T(test_device_select_rejects_ambiguous_mig_prefix),
        T(test_device_select_resolves_legacy_mig_form),
        T(test_device_select_rejects_legacy_mig_form_without_that_instance),
        T(test_device_select_all_selects_every_gpu_and_instance),
        T(test_device_select_none_void_and_empty_select_nothing),
        T(test_device_select_parent_gpu_selects_its_mig_instances),
        T(test_device_select_has_mig_is_false_for_slot_out_of_range),
        T(test_device_select_rejects_missing_index_naming_range),
        T(test_device_select_lists_sparse_indexes_in_message),
        T(test_device_select_rejects_malformed_entries_quoting_them),
        T(test_device_select_rejects_empty_entry_between_commas),
        T(test_device_select_rejects_all_mixed_with_other_entries),
        T(test_device_select_rejects_overlong_entry),
        T(test_device_select_names_the_source_variable),
        T(test_device_select_rejects_null_arguments),
        T(test_device_select_reports_erange_past_64_gpus),
        T(test_device_select_cuda_minus_one_selects_no_gpu),
        T(test_device_select_cuda_stops_at_the_first_invalid_entry),
        T(test_device_select_cuda_valid_lists_read_as_before_with_no_note),
        T(test_device_select_cuda_still_reports_erange),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
