/* Pins our NVML declarations to the sizes and offsets verified against
 * NVIDIA's header (reference/nvml-abi.md section 10). A change here is an
 * ABI break with every driver. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/snapshot.h"
#include "nvml/nvml_abi.h"

static void test_nvml_abi_struct_sizes_match_nvidia(void **state) {
    (void)state;
    assert_int_equal(sizeof(nvmlDevice_t), 8);
    assert_int_equal(sizeof(nvmlReturn_t), 4);
    assert_int_equal(sizeof(nvmlPciInfo_t), 68);
    assert_int_equal(sizeof(nvmlUtilization_t), 8);
    assert_int_equal(sizeof(nvmlMemory_t), 24);
    assert_int_equal(sizeof(nvmlMemory_v2_t), 40);
    assert_int_equal(sizeof(nvmlTemperature_v1_t), 12);
    assert_int_equal(sizeof(nvmlValue_t), 8);
    assert_int_equal(sizeof(nvmlFieldValue_t), 40);
    assert_int_equal(sizeof(nvmlDeviceAttributes_t), 40);
    assert_int_equal(sizeof(nvmlGpmMetric_t), 40);
    assert_int_equal(sizeof(nvmlGpmMetricsGet_t), 13344);
    assert_int_equal(sizeof(nvmlGpmSupport_t), 8);
    assert_int_equal(sizeof(nvmlProcessUtilizationSample_t), 32);
    assert_int_equal(sizeof(nvmlProcessInfo_v1_t), 16);
    assert_int_equal(sizeof(nvmlProcessInfo_v2_t), 24);
    assert_int_equal(sizeof(nvmlProcessInfo_t), 24);
}

static void test_nvml_abi_offsets_match_nvidia(void **state) {
    (void)state;
    assert_int_equal(offsetof(nvmlPciInfo_t, domain), 16);
    assert_int_equal(offsetof(nvmlPciInfo_t, pciSubSystemId), 32);
    assert_int_equal(offsetof(nvmlPciInfo_t, busId), 36);
    assert_int_equal(offsetof(nvmlMemory_v2_t, total), 8);
    assert_int_equal(offsetof(nvmlMemory_v2_t, reserved), 16);
    assert_int_equal(offsetof(nvmlMemory_v2_t, used), 32);
    assert_int_equal(offsetof(nvmlFieldValue_t, timestamp), 8);
    assert_int_equal(offsetof(nvmlFieldValue_t, valueType), 24);
    assert_int_equal(offsetof(nvmlFieldValue_t, nvmlReturn), 28);
    assert_int_equal(offsetof(nvmlFieldValue_t, value), 32);
    assert_int_equal(offsetof(nvmlDeviceAttributes_t, memorySizeMB), 32);
    assert_int_equal(offsetof(nvmlGpmMetric_t, value), 8);
    assert_int_equal(offsetof(nvmlGpmMetricsGet_t, sample1), 8);
    assert_int_equal(offsetof(nvmlGpmMetricsGet_t, metrics), 24);
    assert_int_equal(offsetof(nvmlProcessUtilizationSample_t, timeStamp), 8);
    assert_int_equal(offsetof(nvmlProcessUtilizationSample_t, smUtil), 16);
    assert_int_equal(offsetof(nvmlProcessUtilizationSample_t, memUtil), 20);
    assert_int_equal(offsetof(nvmlProcessUtilizationSample_t, encUtil), 24);
    assert_int_equal(offsetof(nvmlProcessUtilizationSample_t, decUtil), 28);
    assert_int_equal(offsetof(nvmlProcessInfo_v1_t, usedGpuMemory), 8);
    assert_int_equal(offsetof(nvmlProcessInfo_v2_t, usedGpuMemory), 8);
    assert_int_equal(offsetof(nvmlProcessInfo_v2_t, gpuInstanceId), 16);
    assert_int_equal(offsetof(nvmlProcessInfo_v2_t, computeInstanceId), 20);
}

static void test_nvml_abi_version_words(void **state) {
    (void)state;
    assert_int_equal(nvmlMemory_v2, 0x02000028);
    assert_int_equal(nvmlTemperature_v1, 0x0100000C);
    assert_int_equal(NVML_GPM_METRICS_GET_VERSION, 1);
    assert_int_equal(NVML_GPM_SUPPORT_VERSION, 1);
}

/* The enum (ABI values) and core's list of names (core/nvml_codes.h) are
 * written twice; every name in the list must be the enum's value. */
#define NVML_ERROR_SUCCESS NVML_SUCCESS /* the one code without the prefix */
static void test_nvml_abi_return_code_names_match_the_enum(void **state) {
    (void)state;
    int n = 0;
#define SAME_VALUE(value, name)                                                                    \
    assert_int_equal(NVML_ERROR_##name, value);                                                    \
    n++;
    NVML_RETURN_CODES(SAME_VALUE)
#undef SAME_VALUE
    assert_int_equal(n, 32);
    assert_string_equal(nvml_code_name(NVML_ERROR_GPU_IS_LOST), "GPU_IS_LOST");
    assert_string_equal(nvml_code_name(NVML_SUCCESS), "SUCCESS");
    assert_string_equal(nvml_code_name(12345), "UNKNOWN_CODE");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nvml_abi_struct_sizes_match_nvidia),
        cmocka_unit_test(test_nvml_abi_offsets_match_nvidia),
        cmocka_unit_test(test_nvml_abi_version_words),
        cmocka_unit_test(test_nvml_abi_return_code_names_match_the_enum),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
