/* How the amdgpu reader names a read that failed, from the inside (the
 * .c file is included to reach its static helpers): a fake tree cannot make
 * the kernel's errors (ENODEV from a card that left the bus, EPERM from one
 * in reset), so they are fed to the helpers directly. */
#include "amdgpu/amdgpu_sysfs.c"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

static void test_amdgpu_sysfs_errno_maps_to_nvml_style_codes(void **state) {
    (void)state;
    assert_int_equal(code_of_errno(ENOENT), 3);  /* NOT_SUPPORTED: no such file here */
    assert_int_equal(code_of_errno(EACCES), 4);  /* NO_PERMISSION */
    assert_int_equal(code_of_errno(EPERM), 4);   /* amdgpu while the GPU is in reset */
    assert_int_equal(code_of_errno(ENODEV), 15); /* GPU_IS_LOST */
    assert_int_equal(code_of_errno(EIO), 999);   /* UNKNOWN */
}

static void test_amdgpu_sysfs_a_lost_card_marks_health_and_keeps_the_field_absent(void **state) {
    (void)state;
    gpu_record_t g;
    memset(&g, 0, sizeof g);
    g.gpu_util_pct = 0;
    field_result(&g, GPU_F_GPU_UTIL, code_of_errno(ENODEV));
    assert_false(gpu_has(&g, GPU_F_GPU_UTIL));
    assert_int_equal(g.field_error[GPU_F_GPU_UTIL], 15);
    assert_int_equal(g.health, GPU_HEALTH_LOST);
    assert_int_equal(g.health_nvml_code, 15);
    /* A permission error makes the field absent but the GPU is not lost. */
    memset(&g, 0, sizeof g);
    field_result(&g, GPU_F_MEM_USED, code_of_errno(EACCES));
    assert_false(gpu_has(&g, GPU_F_MEM_USED));
    assert_int_equal(g.health, GPU_HEALTH_OK);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_amdgpu_sysfs_errno_maps_to_nvml_style_codes),
        cmocka_unit_test(test_amdgpu_sysfs_a_lost_card_marks_health_and_keeps_the_field_absent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
