/* --gpu-backend: which backend each choice opens, what "auto" falls back
 * to, and that the reason comes back for the log. NVML is the stand-in
 * (NVML_SIM_LIBRARY); the AMD node is tests/fixtures/amdgpu. */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/err.h"
#include "gpu/select.h"

static char fixture_sys[1024];

static int setup(void **state) {
    (void)state;
    const char *src = getenv("KGS_SOURCE_DIR");
    assert_non_null(src);
    snprintf(fixture_sys, sizeof fixture_sys, "%s/tests/fixtures/amdgpu/sys", src);
    return 0;
}

static void test_gpu_backend_kind_parse_names_and_refusal(void **state) {
    (void)state;
    gpu_backend_kind_t k = GPU_BACKEND_NVML;
    char err[256];
    assert_int_equal(gpu_backend_kind_parse("auto", &k, err, sizeof err), 0);
    assert_int_equal(k, GPU_BACKEND_AUTO);
    assert_int_equal(gpu_backend_kind_parse("amdgpu-sysfs", &k, err, sizeof err), 0);
    assert_int_equal(k, GPU_BACKEND_AMDGPU_SYSFS);
    assert_int_equal(gpu_backend_kind_parse("AMD", &k, err, sizeof err), KGS_EINVAL);
    assert_non_null(
        strstr(err, "expected auto, nvml, amdsmi, amdgpu-sysfs, nvml+amdsmi or nvml+amdgpu-sysfs"));
    assert_int_equal(k, GPU_BACKEND_AMDGPU_SYSFS);
    assert_string_equal(gpu_backend_kind_name(GPU_BACKEND_NVML), "nvml");
    assert_int_equal(gpu_backend_kind_parse("amdsmi", &k, err, sizeof err), 0);
    assert_int_equal(k, GPU_BACKEND_AMDSMI);
    assert_string_equal(gpu_backend_kind_name(GPU_BACKEND_AMDSMI), "amdsmi");
}

static void test_gpu_select_amdsmi_names_the_library_that_did_not_load(void **state) {
    (void)state;
    gpu_select_opts_t o = {.kind = GPU_BACKEND_AMDSMI,
                           .amdsmi_library = "/nonexistent/libamd_smi.so",
                           .sys_root = fixture_sys};
    gpu_selection_t s;
    char err[512] = "";
    /* No fallback to the sysfs reader: amd-smi was asked for. */
    assert_int_equal(gpu_backend_select(&o, &s, err, sizeof err), KGS_ENOTFOUND);
    assert_non_null(strstr(err, "load amd-smi: /nonexistent/libamd_smi.so"));
    assert_null(s.amdsmi_loader);
    assert_null(s.backend.ops);
}

static void test_gpu_select_nvml_opens_the_named_library(void **state) {
    (void)state;
    gpu_select_opts_t o = {.kind = GPU_BACKEND_NVML, .nvml_library = getenv("NVML_SIM_LIBRARY")};
    gpu_selection_t s;
    char err[512];
    assert_int_equal(gpu_backend_select(&o, &s, err, sizeof err), 0);
    assert_string_equal(gpu_backend_name(&s.backend), "nvml");
    assert_non_null(s.loader);
    assert_non_null(strstr(s.why, "--gpu-backend nvml"));
    gpu_selection_deinit(&s);
}

static void test_gpu_select_auto_with_a_named_library_means_nvml(void **state) {
    (void)state;
    /* Even with an AMD card there: the operator asked for that library. */
    gpu_select_opts_t o = {.kind = GPU_BACKEND_AUTO,
                           .nvml_library = "/nonexistent/libnvidia-ml.so.1",
                           .sys_root = fixture_sys};
    gpu_selection_t s;
    char err[512] = "";
    assert_int_equal(gpu_backend_select(&o, &s, err, sizeof err), KGS_ENOTFOUND);
    assert_non_null(strstr(err, "/nonexistent/libnvidia-ml.so.1"));
    assert_null(s.loader);
    assert_null(s.backend.ops);
}

static void test_gpu_select_amdgpu_sysfs_needs_no_library(void **state) {
    (void)state;
    gpu_select_opts_t o = {.kind = GPU_BACKEND_AMDGPU_SYSFS,
                           .nvml_library = "/nonexistent/libnvidia-ml.so.1",
                           .sys_root = fixture_sys};
    gpu_selection_t s;
    char err[512];
    assert_int_equal(gpu_backend_select(&o, &s, err, sizeof err), 0);
    assert_string_equal(gpu_backend_name(&s.backend), "amdgpu-sysfs");
    assert_null(s.loader);
    snapshot_t *snap = NULL;
    assert_int_equal(gpu_backend_sample(&s.backend, 1, &snap), 0);
    assert_int_equal(snap->gpu_count, 2);
    snapshot_unref(snap);
    gpu_selection_deinit(&s);
}

/* Auto on a machine without NVML: the AMD card is found, or, with none,
 * the error says what each backend said. */
static void test_gpu_select_auto_falls_back_to_amdgpu_then_explains(void **state) {
    (void)state;
    void *h = dlopen(NVML_DEFAULT_LIBRARY, RTLD_LAZY);
    if (h) {
        dlclose(h);
        skip(); /* this machine has NVML: auto rightly takes it */
    }
    gpu_select_opts_t o = {.kind = GPU_BACKEND_AUTO, .sys_root = fixture_sys};
    gpu_selection_t s;
    char err[512];
    assert_int_equal(gpu_backend_select(&o, &s, err, sizeof err), 0);
    assert_string_equal(gpu_backend_name(&s.backend), "amdgpu-sysfs");
    assert_non_null(strstr(s.why, "2 amdgpu cards under"));
    assert_non_null(strstr(s.why, "NVML did not load"));
    assert_non_null(strstr(s.why, "nor amd-smi (load amd-smi: "));
    gpu_selection_deinit(&s);

    o.sys_root = "/nonexistent-kgs";
    err[0] = '\0';
    assert_int_equal(gpu_backend_select(&o, &s, err, sizeof err), KGS_ENOTFOUND);
    assert_non_null(strstr(err, "no GPU backend: NVML: "));
    assert_non_null(strstr(err, "; amd-smi: load amd-smi: "));
    assert_non_null(strstr(err, "no amdgpu card under /nonexistent-kgs/class/drm"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpu_backend_kind_parse_names_and_refusal),
        cmocka_unit_test(test_gpu_select_nvml_opens_the_named_library),
        cmocka_unit_test(test_gpu_select_auto_with_a_named_library_means_nvml),
        cmocka_unit_test(test_gpu_select_amdgpu_sysfs_needs_no_library),
        cmocka_unit_test(test_gpu_select_amdsmi_names_the_library_that_did_not_load),
        cmocka_unit_test(test_gpu_select_auto_falls_back_to_amdgpu_then_explains),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
