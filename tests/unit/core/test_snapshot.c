#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/snapshot.h"

static void test_snapshot_new_has_no_valid_fields(void **state) {
    (void)state;
    snapshot_t *s = snapshot_new(2, 3);
    assert_non_null(s);
    assert_int_equal(s->gpu_count, 2);
    assert_int_equal(s->mig_total, 3);
    for (unsigned i = 0; i < 2; i++)
        for (int f = 0; f < GPU_F_COUNT; f++)
            assert_false(gpu_has(&s->gpus[i], (gpu_field_t)f));
    snapshot_unref(s);
}

static void test_snapshot_refcount_frees_on_last_unref(void **state) {
    (void)state;
    snapshot_t *s = snapshot_new(1, 0);
    assert_ptr_equal(snapshot_ref(s), s);
    snapshot_unref(s);
    s->gpus[0].index = 7; /* still alive: one reference left (ASan would flag a free) */
    snapshot_unref(s);
    snapshot_unref(NULL);
}

static void test_snapshot_memory_pct_absent_when_total_missing_or_zero(void **state) {
    (void)state;
    gpu_record_t g = {0};
    double pct = -1;
    g.valid = 1u << GPU_F_MEM_USED;
    g.memory_used_bytes = 10;
    assert_false(gpu_memory_used_pct(&g, &pct));
    g.valid |= 1u << GPU_F_MEM_TOTAL;
    g.memory_total_bytes = 0;
    assert_false(gpu_memory_used_pct(&g, &pct));
    g.memory_total_bytes = 40;
    assert_true(gpu_memory_used_pct(&g, &pct));
    assert_float_equal(pct, 25.0, 1e-9);
}

static void test_snapshot_field_names_are_stable(void **state) {
    (void)state;
    assert_string_equal(gpu_field_name(GPU_F_GPU_UTIL), "gpu_utilization");
    assert_string_equal(gpu_field_name(GPU_F_DRAM_BW_UTIL), "dram_bandwidth_utilization");
    assert_string_equal(gpu_field_name(GPU_F_COUNT), "?");
    assert_string_equal(gpu_health_name(GPU_HEALTH_LOST), "lost");
}

static void test_snapshot_rejects_absurd_sizes(void **state) {
    (void)state;
    assert_null(snapshot_new(100000, 0));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_snapshot_new_has_no_valid_fields),
        cmocka_unit_test(test_snapshot_refcount_frees_on_last_unref),
        cmocka_unit_test(test_snapshot_memory_pct_absent_when_total_missing_or_zero),
        cmocka_unit_test(test_snapshot_field_names_are_stable),
        cmocka_unit_test(test_snapshot_rejects_absurd_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
