/* amd-smi's answers decoded without the library: status codes to NVML code
 * names, PCI addresses, partition modes, the metrics table's "not filled"
 * sentinels, and whose activity a partition reports. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "amdsmi/amdsmi_abi.h"
#include "amdsmi/amdsmi_decode.h"
#include "core/err.h"

#define S(lit) lit, sizeof(lit) - 1

static void test_status_maps_to_the_nvml_code_consumers_already_show(void **state) {
    (void)state;
    assert_int_equal(amdsmi_status_to_nvml_code(AMDSMI_STATUS_SUCCESS), 0);
    assert_int_equal(amdsmi_status_to_nvml_code(AMDSMI_STATUS_NOT_SUPPORTED), 3);
    assert_int_equal(amdsmi_status_to_nvml_code(AMDSMI_STATUS_NOT_YET_IMPLEMENTED), 3);
    assert_int_equal(amdsmi_status_to_nvml_code(AMDSMI_STATUS_NO_DATA), 3);
    assert_int_equal(amdsmi_status_to_nvml_code(AMDSMI_STATUS_NO_PERM), 4);
    assert_int_equal(amdsmi_status_to_nvml_code(AMDSMI_STATUS_NOT_FOUND), 15);
    assert_int_equal(amdsmi_status_to_nvml_code(AMDSMI_STATUS_AMDGPU_RESTART_ERR), 15);
    assert_int_equal(amdsmi_status_to_nvml_code(AMDSMI_STATUS_TIMEOUT), 10);
    assert_int_equal(amdsmi_status_to_nvml_code(AMDSMI_STATUS_DRIVER_NOT_LOADED), 9);
    assert_int_equal(amdsmi_status_to_nvml_code(AMDSMI_STATUS_NOT_INIT), 1);
    assert_int_equal(amdsmi_status_to_nvml_code(AMDSMI_STATUS_OUT_OF_RESOURCES), 7);
    assert_int_equal(amdsmi_status_to_nvml_code(AMDSMI_STATUS_DRM_ERROR), 999);
    assert_int_equal(amdsmi_status_to_nvml_code(AMDSMI_STATUS_UNKNOWN_ERROR), 999);
    assert_int_equal(amdsmi_status_to_nvml_code(12345), 999);
}

static void test_status_names_are_amds_without_the_prefix(void **state) {
    (void)state;
    assert_string_equal(amdsmi_status_name(AMDSMI_STATUS_NOT_FOUND), "NOT_FOUND");
    assert_string_equal(amdsmi_status_name(AMDSMI_STATUS_DRIVER_NOT_LOADED), "DRIVER_NOT_LOADED");
    assert_string_equal(amdsmi_status_name(AMDSMI_STATUS_UNKNOWN_ERROR), "UNKNOWN_ERROR");
    assert_string_equal(amdsmi_status_name(77), "UNKNOWN_CODE");
}

static void test_bdf_is_spelt_as_the_device_plugin_spells_it(void **state) {
    (void)state;
    char out[AMDSMI_BDF_MAX];
    amdsmi_bdf_t b = {.as_uint = 0};
    b.fields.domain_number = 0;
    b.fields.bus_number = 0x19;
    b.fields.device_number = 0;
    b.fields.function_number = 0;
    amdsmi_bdf_format(b.as_uint, out);
    assert_string_equal(out, "0000:19:00.0");
    b.fields.domain_number = 0x2;
    b.fields.bus_number = 0xcb;
    b.fields.device_number = 0x1f;
    b.fields.function_number = 7;
    amdsmi_bdf_format(b.as_uint, out);
    assert_string_equal(out, "0002:cb:1f.7");
    /* The bit layout AMD's union gives (function in bits 0-2). */
    amdsmi_bdf_format((0x1ull << 16) | (0xabull << 8) | (0x3ull << 3) | 0x1, out);
    assert_string_equal(out, "0001:ab:03.1");
    amdsmi_bdf_format(0x123456ull << 16, out);
    assert_string_equal(out, "123456:00:00.0");
}

static void test_partition_modes_parse_from_the_librarys_text(void **state) {
    (void)state;
    amdsmi_compute_partition_t cp = AMDSMI_CP_SPX;
    assert_int_equal(amdsmi_compute_partition_parse(S("CPX"), &cp), 0);
    assert_int_equal(cp, AMDSMI_CP_CPX);
    assert_int_equal(amdsmi_compute_partition_parse(S("spx\n"), &cp), 0);
    assert_int_equal(cp, AMDSMI_CP_SPX);
    assert_int_equal(amdsmi_compute_partition_parse(S("QPX"), &cp), 0);
    assert_int_equal(cp, AMDSMI_CP_QPX);
    assert_int_equal(amdsmi_compute_partition_parse(S("CPXX"), &cp), KGS_EINVAL);
    assert_int_equal(cp, AMDSMI_CP_UNKNOWN);
    assert_int_equal(amdsmi_compute_partition_parse(S(""), &cp), KGS_EINVAL);
    /* Length bounds the read: "CP" of "CPX" is not a mode. */
    assert_int_equal(amdsmi_compute_partition_parse("CPX", 2, &cp), KGS_EINVAL);
    amdsmi_memory_partition_t mp = AMDSMI_NPS1;
    assert_int_equal(amdsmi_memory_partition_parse(S("NPS4"), &mp), 0);
    assert_int_equal(mp, AMDSMI_NPS4);
    assert_int_equal(amdsmi_memory_partition_parse(S("NPS3"), &mp), KGS_EINVAL);
    assert_int_equal(mp, AMDSMI_NPS_UNKNOWN);
}

static void test_profile_names_match_the_device_plugins_resources(void **state) {
    (void)state;
    char out[24];
    amdsmi_partition_profile(AMDSMI_CP_CPX, AMDSMI_NPS4, out, sizeof out);
    assert_string_equal(out, "cpx_nps4");
    amdsmi_partition_profile(AMDSMI_CP_SPX, AMDSMI_NPS1, out, sizeof out);
    assert_string_equal(out, "spx_nps1");
    amdsmi_partition_profile(AMDSMI_CP_DPX, AMDSMI_NPS_UNKNOWN, out, sizeof out);
    assert_string_equal(out, "dpx");
    amdsmi_partition_profile(AMDSMI_CP_UNKNOWN, AMDSMI_NPS4, out, sizeof out);
    assert_string_equal(out, "");
}

static void test_not_filled_metrics_are_unknown_never_a_number(void **state) {
    (void)state;
    unsigned pct = 7;
    assert_true(amdsmi_percent(0, &pct));
    assert_int_equal(pct, 0);
    assert_true(amdsmi_percent(100, &pct));
    assert_int_equal(pct, 100);
    pct = 7;
    assert_false(amdsmi_percent(0xFFFF, &pct));
    assert_false(amdsmi_percent(101, &pct));
    assert_int_equal(pct, 7);
    double w = -1;
    assert_true(amdsmi_power_w(312, &w));
    assert_true(w == 312.0);
    w = -1;
    assert_false(amdsmi_power_w(0xFFFF, &w));
    assert_false(amdsmi_power_w(0xFFFFFFFFu, &w));
    assert_true(w == -1);
    /* rocm-6.2.2 passes hwmon's microwatts; a later library may convert. */
    assert_true(amdsmi_power_limit_w(750000000u, &w));
    assert_true(w == 750.0);
    assert_true(amdsmi_power_limit_w(750, &w));
    assert_true(w == 750.0);
    w = -1;
    assert_false(amdsmi_power_limit_w(0, &w));
    assert_false(amdsmi_power_limit_w(0xFFFF, &w));
    assert_true(w == -1);
}

static void test_only_partition_0_owns_the_activity_amd_smi_reports(void **state) {
    (void)state;
    assert_true(amdsmi_activity_is_own(AMDSMI_CP_SPX, false, 0));
    assert_true(amdsmi_activity_is_own(AMDSMI_CP_SPX, true, 0));
    assert_true(amdsmi_activity_is_own(AMDSMI_CP_UNKNOWN, false, 0));
    assert_true(amdsmi_activity_is_own(AMDSMI_CP_CPX, true, 0));
    assert_false(amdsmi_activity_is_own(AMDSMI_CP_CPX, true, 3));
    /* Partitioned, and the library cannot say which partition this is. */
    assert_false(amdsmi_activity_is_own(AMDSMI_CP_CPX, false, 0));
    assert_false(amdsmi_activity_is_own(AMDSMI_CP_DPX, false, 0));
    assert_false(amdsmi_activity_is_own(AMDSMI_CP_UNKNOWN, true, 1));
}

/* A 24.7 metrics table with partition q's XCC busy figures. */
static void put_xcp(unsigned char *t, uint16_t nparts, unsigned q, const uint32_t *busy,
                    unsigned n) {
    memcpy(t + AMDSMI_GPU_METRICS_24_7_NUM_PARTITION_OFFSET, &nparts, sizeof nparts);
    unsigned char *x =
        t + AMDSMI_GPU_METRICS_24_7_XCP_STATS_OFFSET + q * sizeof(amdsmi_gpu_xcp_metrics_t);
    memcpy(x, busy, n * sizeof *busy);
}

static void test_xcp_busy_is_the_mean_of_the_partitions_xccs_on_24_7_only(void **state) {
    (void)state;
    static unsigned char t[AMDSMI_GPU_METRICS_24_7_SIZE];
    memset(t, 0xff, sizeof t);
    const uint32_t cpx3[] = {42};
    put_xcp(t, 8, 3, cpx3, 1);
    const uint32_t dpx1[] = {10, 20, 30, 41};
    put_xcp(t, 8, 1, dpx1, 4);
    unsigned pct = 7;
    assert_true(amdsmi_xcp_busy(24, 7, t, sizeof t, 3, &pct));
    assert_int_equal(pct, 42);
    assert_true(amdsmi_xcp_busy(24, 7, t, sizeof t, 1, &pct));
    assert_int_equal(pct, 25); /* (10+20+30+41)/4 = 25.25 */
    pct = 7;
    assert_false(amdsmi_xcp_busy(24, 7, t, sizeof t, 0, &pct)); /* nothing filled */
    assert_false(amdsmi_xcp_busy(24, 6, t, sizeof t, 3, &pct)); /* another layout */
    assert_false(amdsmi_xcp_busy(25, 7, t, sizeof t, 3, &pct));
    assert_false(amdsmi_xcp_busy(24, 7, t, sizeof t - 1, 3, &pct)); /* short */
    assert_false(amdsmi_xcp_busy(24, 7, t, sizeof t, 8, &pct));     /* out of range */
    put_xcp(t, 2, 3, cpx3, 1);
    assert_false(amdsmi_xcp_busy(24, 7, t, sizeof t, 3, &pct)); /* beyond num_partition */
    const uint32_t junk[] = {150};
    put_xcp(t, 8, 5, junk, 1);
    assert_false(amdsmi_xcp_busy(24, 7, t, sizeof t, 5, &pct));
    assert_int_equal(pct, 7);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_maps_to_the_nvml_code_consumers_already_show),
        cmocka_unit_test(test_status_names_are_amds_without_the_prefix),
        cmocka_unit_test(test_bdf_is_spelt_as_the_device_plugin_spells_it),
        cmocka_unit_test(test_partition_modes_parse_from_the_librarys_text),
        cmocka_unit_test(test_profile_names_match_the_device_plugins_resources),
        cmocka_unit_test(test_not_filled_metrics_are_unknown_never_a_number),
        cmocka_unit_test(test_only_partition_0_owns_the_activity_amd_smi_reports),
        cmocka_unit_test(test_xcp_busy_is_the_mean_of_the_partitions_xccs_on_24_7_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
