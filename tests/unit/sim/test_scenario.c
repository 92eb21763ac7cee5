/* test_scenario.c - the nvml-sim scenario parser and its time resolution. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/err.h"
#include "scenario.h"

static scenario_t *parse_ok(const char *json) {
    scenario_t *sc = NULL;
    char err[512] = "";
    int rc = scenario_parse(json, strlen(json), &sc, err, sizeof err);
    if (rc != 0)
        fail_msg("parse failed: rc %d: %s\n%s", rc, err, json);
    assert_non_null(sc);
    return sc;
}

/* The message must contain every needle (the path, then the reason). */
static void expect_error(const char *json, const char *needle1, const char *needle2) {
    scenario_t *sc = (scenario_t *)(uintptr_t)1;
    char err[512] = "";
    assert_int_equal(scenario_parse(json, strlen(json), &sc, err, sizeof err), KGS_EINVAL);
    assert_null(sc);
    if (!strstr(err, needle1) || (needle2 && !strstr(err, needle2)))
        fail_msg("error lacks \"%s\"/\"%s\": %s\nfor %s", needle1, needle2 ? needle2 : "", err,
                 json);
}

#define ONE_DEVICE(body) "{\"devices\": [{" body "}]}"

static void test_scenario_parses_full_example(void **state) {
    (void)state;
    const char *json =
        "{\"driver_version\": \"560.35.03\", \"cuda_driver_version\": 12060,"
        " \"missing_symbols\": [\"nvmlDeviceGetMemoryInfo_v2\"], \"repeat_after_s\": 60,"
        " \"devices\": [{\"uuid\": \"GPU-5c1d\", \"name\": \"NVIDIA H100 80GB HBM3\","
        "  \"pci_bus_id\": \"00000000:17:00.0\", \"memory_total_bytes\": 85520809984,"
        "  \"power_limit_mw\": 700000, \"gpm_supported\": true, \"nvlink_links\": 18,"
        "  \"values\": {\"gpu_util\": 37, \"mem_util\": 12, \"memory_used_bytes\": 21474836480,"
        "    \"memory_reserved_bytes\": 536870912, \"temperature_c\": 51, \"power_mw\": 312000,"
        "    \"energy_mj\": 1000000, \"sm_clock_mhz\": 1980, \"clock_event_reasons\": 1,"
        "    \"sm_active\": 30.5, \"sm_occupancy\": 20.0, \"dram_bw_util\": 11.0,"
        "    \"pcie_tx_kbps\": 1200, \"pcie_rx_kbps\": 800, \"nvlink_tx_kib_total\": 0,"
        "    \"nvlink_rx_kib_total\": 0, \"nvlink_tx_kib_per_s\": 0, \"nvlink_rx_kib_per_s\": 0},"
        "  \"timeline\": [{\"at_s\": 5, \"values\": {\"gpu_util\": 95}},"
        "               {\"at_s\": 20, \"values\": {\"gpu_util\": 0}}],"
        "  \"errors\": {\"nvmlDeviceGetTemperature\": \"NOT_SUPPORTED\"},"
        "  \"error_timeline\": [{\"at_s\": 30, \"call\": \"*\", \"error\": \"GPU_IS_LOST\"}],"
        "  \"latency_ms\": {\"nvmlDeviceGetPowerUsage\": 0},"
        "  \"mig\": {\"enabled\": true, \"instances\": [{\"uuid\": \"MIG-1\", \"profile\": "
        "\"3g.40gb\","
        "    \"gpu_instance_id\": 1, \"compute_instance_id\": 0, \"memory_total_bytes\": "
        "42949672960,"
        "    \"values\": {\"memory_used_bytes\": 1073741824, \"sm_active\": 40.0},"
        "    \"timeline\": [{\"at_s\": 1, \"values\": {\"sm_active\": 50}}]}]}}]}";
    scenario_t *sc = parse_ok(json);
    assert_string_equal(sc->driver_version, "560.35.03");
    assert_int_equal(sc->cuda_driver_version, 12060);
    assert_true(sc->missing == UINT64_C(1) << SCENARIO_CALL_nvmlDeviceGetMemoryInfo_v2);
    assert_true(sc->repeat_after_s == 60.0);
    assert_int_equal(sc->device_count, 1);
    const scenario_device_t *d = &sc->devices[0];
    assert_string_equal(d->uuid, "GPU-5c1d");
    assert_string_equal(d->pci_bus_id, "00000000:17:00.0");
    assert_int_equal(d->pci_bus, 0x17);
    assert_true(d->memory_total_bytes == 85520809984.0);
    assert_int_equal(d->power_limit_mw, 700000);
    assert_true(d->gpm_supported);
    assert_int_equal(d->nvlink_links, 18);
    assert_true(d->values.present == (1u << SCENARIO_VALUE_COUNT) - 1);
    assert_true(d->values.v[SCENARIO_V_SM_ACTIVE] == 30.5);
    assert_int_equal(d->timeline_len, 2);
    assert_int_equal(d->error[SCENARIO_CALL_nvmlDeviceGetTemperature], NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(d->error_timeline_len, 1);
    assert_int_equal(d->error_timeline[0].call, SCENARIO_CALL_ALL);
    assert_true(d->has_mig && d->mig_enabled);
    assert_int_equal(d->mig_count, 1);
    assert_int_equal(d->mig[0].gpu_instance_slices, 3);
    assert_int_equal(d->mig[0].compute_instance_slices, 3);
    assert_int_equal(d->mig[0].timeline_len, 1);
    scenario_free(sc);
}

static void test_scenario_applies_defaults(void **state) {
    (void)state;
    scenario_t *sc = parse_ok("{\"devices\": [{}, {}]}");
    assert_string_equal(sc->driver_version, "560.35.03");
    assert_int_equal(sc->init_error, NVML_SUCCESS);
    assert_true(sc->missing == 0);
    assert_int_equal(sc->device_count, 2);
    assert_string_equal(sc->devices[1].uuid, "GPU-00000000-0000-0000-0000-000000000002");
    assert_string_equal(sc->devices[1].pci_bus_id, "00000000:02:00.0");
    assert_true(sc->devices[0].values.present == 0);
    assert_false(sc->devices[0].has_memory_total);
    assert_false(sc->devices[0].has_mig);
    scenario_free(sc);
    sc = parse_ok("{\"devices\": []}");
    assert_int_equal(sc->device_count, 0);
    scenario_free(sc);
}

static void test_scenario_parses_every_shipped_scenario(void **state) {
    (void)state;
    const char *src = getenv("KGS_SOURCE_DIR");
    if (!src)
        skip();
    static const struct {
        const char *file;
        size_t devices;
    } files[] = {{"idle-4xh100.json", 4}, {"inference-burst.json", 2},
                 {"mig-a100.json", 2},    {"gpu-lost.json", 2},
                 {"old-driver.json", 1},  {"time-slicing-h100.json", 1}};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[4096], err[512] = "";
        snprintf(path, sizeof path, "%s/sim/scenarios/%s", src, files[i].file);
        scenario_t *sc = NULL;
        int rc = scenario_load_file(path, &sc, err, sizeof err);
        if (rc != 0)
            fail_msg("%s: %s", path, err);
        assert_int_equal(sc->device_count, files[i].devices);
        scenario_free(sc);
    }
}

static void test_scenario_rejects_unknown_keys_with_path(void **state) {
    (void)state;
    expect_error("{\"devices\": [], \"driver_versoin\": \"1\"}", "driver_versoin",
                 "did you mean \"driver_version\"");
    expect_error(ONE_DEVICE("\"values\": {\"gpu_utl\": 1}"), "devices[0].values.gpu_utl",
                 "did you mean \"gpu_util\"");
    expect_error(ONE_DEVICE("\"colour\": 1"), "devices[0].colour", "unknown key");
    expect_error(ONE_DEVICE("\"timeline\": [{\"at_s\": 1, \"value\": {}}]"),
                 "devices[0].timeline[0].value", "did you mean \"values\"");
    expect_error(ONE_DEVICE("\"mig\": {\"enabled\": true, \"instances\": [{\"profile\": "
                            "\"1g.10gb\", \"gi\": 1}]}"),
                 "devices[0].mig.instances[0].gi", "unknown key");
    expect_error(ONE_DEVICE("\"error_timeline\": [{\"at_s\": 1, \"call\": \"*\", \"error\": "
                            "\"GPU_IS_LOST\", \"x\": 1}]"),
                 "devices[0].error_timeline[0].x", "unknown key");
}

static void test_scenario_rejects_wrong_types_and_ranges(void **state) {
    (void)state;
    expect_error("{\"devices\": {}}", "devices", "must be an array");
    expect_error("[]", "(top level)", "must be an object");
    expect_error("{}", "missing \"devices\"", NULL);
    expect_error(ONE_DEVICE("\"values\": {\"gpu_util\": -1}"), "devices[0].values.gpu_util",
                 "out of range");
    expect_error(ONE_DEVICE("\"values\": {\"gpu_util\": 101}"), "devices[0].values.gpu_util",
                 "<= 100");
    expect_error(ONE_DEVICE("\"values\": {\"power_mw\": 1.5}"), "devices[0].values.power_mw",
                 "must be an integer");
    expect_error(ONE_DEVICE("\"values\": {\"sm_active\": \"30\"}"), "devices[0].values.sm_active",
                 "must be a number, not a string");
    expect_error(ONE_DEVICE("\"gpm_supported\": 1"), "devices[0].gpm_supported",
                 "must be a boolean");
    expect_error(ONE_DEVICE("\"name\": \"\""), "devices[0].name", "must not be empty");
    expect_error(ONE_DEVICE("\"uuid\": \"5c1d\""), "devices[0].uuid", "GPU-");
    expect_error(ONE_DEVICE("\"pci_bus_id\": \"17:00.0\""), "devices[0].pci_bus_id",
                 "not a PCI bus id");
    expect_error(ONE_DEVICE("\"nvlink_links\": 37"), "devices[0].nvlink_links", "<= 36");
    expect_error("{\"repeat_after_s\": 0, \"devices\": []}", "repeat_after_s", "> 0");
    expect_error(ONE_DEVICE("\"memory_total_bytes\": 100, \"values\": {\"memory_used_bytes\": "
                            "90, \"memory_reserved_bytes\": 20}"),
                 "devices[0].values", "exceeds memory_total_bytes");
    expect_error(ONE_DEVICE("\"memory_total_bytes\": 100, \"timeline\": [{\"at_s\": 1, "
                            "\"values\": {\"memory_used_bytes\": 101}}]"),
                 "devices[0].timeline[0]", "exceeds");
}

static void test_scenario_rejects_unknown_error_and_call_names(void **state) {
    (void)state;
    expect_error("{\"init_error\": \"GPU_LOST\", \"devices\": []}", "init_error",
                 "did you mean \"GPU_IS_LOST\"");
    expect_error("{\"init_error\": \"NVML_ERROR_UNKNOWN\", \"devices\": []}", "init_error",
                 "without the NVML_ERROR_ prefix");
    expect_error("{\"init_error\": \"SUCCESS\", \"devices\": []}", "init_error", "not an error");
    expect_error(ONE_DEVICE("\"errors\": {\"nvmlDeviceGetTemp\": \"NOT_SUPPORTED\"}"),
                 "devices[0].errors.nvmlDeviceGetTemp", "unknown NVML call");
    expect_error(ONE_DEVICE("\"errors\": {\"nvmlInit_v2\": \"UNKNOWN\"}"),
                 "devices[0].errors.nvmlInit_v2", "not a per-device call");
    expect_error(ONE_DEVICE("\"latency_ms\": {\"nvmlDeviceGetPowerUsag\": 5}"),
                 "devices[0].latency_ms.nvmlDeviceGetPowerUsag",
                 "did you mean \"nvmlDeviceGetPowerUsage\"");
    expect_error(ONE_DEVICE("\"latency_ms\": {\"nvmlDeviceGetPowerUsage\": -5}"),
                 "devices[0].latency_ms.nvmlDeviceGetPowerUsage", "out of range");
    expect_error("{\"missing_symbols\": [\"nvmlFoo\"], \"devices\": []}", "missing_symbols[0]",
                 "unknown NVML call");
    expect_error(ONE_DEVICE("\"error_timeline\": [{\"at_s\": 1, \"call\": \"nvmlX\", \"error\": "
                            "\"UNKNOWN\"}]"),
                 "devices[0].error_timeline[0].call", "unknown NVML call");
    expect_error(ONE_DEVICE("\"error_timeline\": [{\"at_s\": 1, \"call\": \"*\"}]"),
                 "devices[0].error_timeline[0]", "missing \"error\"");
}

static void test_scenario_rejects_bad_timelines_and_mig(void **state) {
    (void)state;
    expect_error(ONE_DEVICE("\"timeline\": [{\"at_s\": 5, \"values\": {}}, {\"at_s\": 2, "
                            "\"values\": {}}]"),
                 "devices[0].timeline[1].at_s", "time order");
    expect_error("{\"repeat_after_s\": 10, \"devices\": [{\"timeline\": [{\"at_s\": 10, "
                 "\"values\": {}}]}]}",
                 "devices[0].timeline[0].at_s", "never apply");
    expect_error(ONE_DEVICE("\"timeline\": [{\"values\": {}}]"), "devices[0].timeline[0]",
                 "missing \"at_s\"");
    expect_error(ONE_DEVICE("\"mig\": {\"instances\": [{\"profile\": \"1g.10gb\"}]}"),
                 "devices[0].mig.instances", "\"enabled\": true");
    expect_error(ONE_DEVICE("\"mig\": {\"enabled\": true, \"instances\": [{\"profile\": "
                            "\"5g.10gb\"}]}"),
                 "devices[0].mig.instances[0].profile", "slice counts");
    expect_error(ONE_DEVICE("\"mig\": {\"enabled\": true, \"instances\": [{\"profile\": "
                            "\"big\"}]}"),
                 "devices[0].mig.instances[0].profile", "not a MIG profile");
    expect_error(ONE_DEVICE("\"mig\": {\"enabled\": true, \"instances\": [{}]}"),
                 "devices[0].mig.instances[0]", "missing \"profile\"");
    expect_error(ONE_DEVICE("\"mig\": {\"enabled\": true, \"instances\": [{\"profile\": "
                            "\"1g.10gb\", \"values\": {\"gpu_util\": 5}}]}"),
                 "devices[0].mig.instances[0].values.gpu_util", "whole-GPU value");
    expect_error(ONE_DEVICE("\"mig\": {\"enabled\": true, \"instances\": [{\"profile\": "
                            "\"1g.10gb\"}, {\"profile\": \"1g.10gb\", \"gpu_instance_id\": 1}]}"),
                 "devices[0].mig.instances[1]", "already used");
    expect_error("{\"devices\": [{\"uuid\": \"GPU-a\"}, {\"uuid\": \"GPU-a\"}]}", "devices[1]",
                 "same as devices[0]");
}

static void test_scenario_reports_json_syntax_errors_with_line(void **state) {
    (void)state;
    expect_error("{\"devices\": [\n  {,}\n]}", "line 2", NULL);
    expect_error("{\"devices\": [], \"devices\": []}", "duplicate", NULL);
    expect_error("", "line", NULL);
}

static void test_scenario_parse_accepts_more_profiles(void **state) {
    (void)state;
    scenario_t *sc = parse_ok(
        ONE_DEVICE("\"mig\": {\"enabled\": true, \"instances\": [{\"profile\": \"1c.3g.40gb\"}, "
                   "{\"profile\": \"1g.10gb+me\"}, {\"profile\": \"7g.80gb\"}]}"));
    assert_int_equal(sc->devices[0].mig[0].gpu_instance_slices, 3);
    assert_int_equal(sc->devices[0].mig[0].compute_instance_slices, 1);
    assert_int_equal(sc->devices[0].mig[1].gpu_instance_slices, 1);
    assert_int_equal(sc->devices[0].mig[2].gpu_instance_id, 3);
    scenario_free(sc);
}

static void test_scenario_resolves_timeline_steps_over_values(void **state) {
    (void)state;
    scenario_t *sc = parse_ok(ONE_DEVICE(
        "\"values\": {\"gpu_util\": 10, \"temperature_c\": 40},"
        "\"timeline\": [{\"at_s\": 0.5, \"values\": {\"gpu_util\": 95, \"power_mw\": 300}},"
        "              {\"at_s\": 2, \"values\": {\"gpu_util\": 0, \"temperature_c\": null}}]"));
    const scenario_device_t *d = &sc->devices[0];
    scenario_values_t v;
    scenario_device_values_at(sc, d, 0.49, &v);
    assert_true(v.v[SCENARIO_V_GPU_UTIL] == 10);
    assert_false(v.present & (1u << SCENARIO_V_POWER_MW));
    scenario_device_values_at(sc, d, 0.5, &v);
    assert_true(v.v[SCENARIO_V_GPU_UTIL] == 95);
    assert_true(v.v[SCENARIO_V_POWER_MW] == 300);
    assert_true(v.v[SCENARIO_V_TEMPERATURE_C] == 40);
    scenario_device_values_at(sc, d, 100, &v);
    assert_true(v.v[SCENARIO_V_GPU_UTIL] == 0);
    assert_true(v.present & (1u << SCENARIO_V_POWER_MW));       /* steps accumulate */
    assert_false(v.present & (1u << SCENARIO_V_TEMPERATURE_C)); /* null clears */
    /* power: 0 for 0.5 s, then 300 mW: 300 * 1.5 s at t = 2 */
    assert_true(scenario_device_integral(sc, d, SCENARIO_V_POWER_MW, 2.0) == 450.0);
    scenario_free(sc);
}

static void test_scenario_repeat_after_s_restarts_timelines(void **state) {
    (void)state;
    scenario_t *sc = parse_ok(
        "{\"repeat_after_s\": 10, \"devices\": [{\"values\": {\"gpu_util\": 0, "
        "\"nvlink_tx_kib_per_s\": 0},"
        " \"timeline\": [{\"at_s\": 4, \"values\": {\"gpu_util\": 50, \"nvlink_tx_kib_per_s\": "
        "100}}],"
        " \"error_timeline\": [{\"at_s\": 6, \"call\": \"*\", \"error\": \"GPU_IS_LOST\"},"
        "                     {\"at_s\": 8, \"call\": \"*\", \"error\": \"SUCCESS\"}],"
        " \"errors\": {\"nvmlDeviceGetTemperature\": \"NOT_SUPPORTED\","
        "              \"nvmlDeviceGetHandleByIndex_v2\": \"NO_PERMISSION\"}}]}");
    const scenario_device_t *d = &sc->devices[0];
    scenario_values_t v;
    scenario_device_values_at(sc, d, 5, &v);
    assert_true(v.v[SCENARIO_V_GPU_UTIL] == 50);
    scenario_device_values_at(sc, d, 12, &v);
    assert_true(v.v[SCENARIO_V_GPU_UTIL] == 0);
    scenario_device_values_at(sc, d, 24.5, &v);
    assert_true(v.v[SCENARIO_V_GPU_UTIL] == 50);
    assert_true(scenario_cycle_time(sc, 24.5) == 4.5);
    /* 600 KiB per cycle (100 KiB/s for 6 s); two cycles plus 1 s */
    assert_true(scenario_device_integral(sc, d, SCENARIO_V_NVLINK_TX_KIB_PER_S, 25) == 1300.0);

    int power = SCENARIO_CALL_nvmlDeviceGetPowerUsage;
    int temp = SCENARIO_CALL_nvmlDeviceGetTemperature;
    int by_index = SCENARIO_CALL_nvmlDeviceGetHandleByIndex_v2;
    assert_int_equal(scenario_device_error_at(sc, d, power, 5.9), NVML_SUCCESS);
    assert_int_equal(scenario_device_error_at(sc, d, power, 6), NVML_ERROR_GPU_IS_LOST);
    assert_int_equal(scenario_device_error_at(sc, d, temp, 7), NVML_ERROR_GPU_IS_LOST);
    assert_int_equal(scenario_device_error_at(sc, d, temp, 9), NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(scenario_device_error_at(sc, d, power, 9), NVML_SUCCESS);
    assert_int_equal(scenario_device_error_at(sc, d, power, 16.5), NVML_ERROR_GPU_IS_LOST);
    /* "*" does not cover the lookup; its own static error still applies */
    assert_int_equal(scenario_device_error_at(sc, d, by_index, 7), NVML_ERROR_NO_PERMISSION);
    scenario_free(sc);
}

static void test_scenario_classifies_calls(void **state) {
    (void)state;
    assert_true(scenario_call_is_per_device(SCENARIO_CALL_nvmlDeviceGetName));
    assert_true(scenario_call_is_per_device(SCENARIO_CALL_nvmlGpmSampleGet));
    assert_true(scenario_call_is_per_device(SCENARIO_CALL_nvmlGpmMetricsGet));
    assert_true(scenario_call_is_per_device(SCENARIO_CALL_nvmlDeviceGetHandleByIndex_v2));
    assert_false(scenario_call_is_per_device(SCENARIO_CALL_nvmlDeviceGetCount_v2));
    assert_false(scenario_call_is_per_device(SCENARIO_CALL_nvmlGpmSampleAlloc));
    assert_false(scenario_call_is_per_device(SCENARIO_CALL_nvmlInit_v2));
    assert_int_equal(scenario_call_index("nvmlDeviceGetFieldValues"),
                     SCENARIO_CALL_nvmlDeviceGetFieldValues);
    assert_int_equal(scenario_call_index("nvmlErrorString"), -1);
    assert_int_equal(scenario_error_code("GPU_IS_LOST"), 15);
    assert_int_equal(scenario_error_code("UNKNOWN"), 999);
    assert_string_equal(scenario_error_name(13), "FUNCTION_NOT_FOUND");
}

static void test_scenario_call_base_strips_version_suffixes(void **state) {
    (void)state;
    assert_int_equal(scenario_call_base_len("nvmlDeviceGetTemperatureV"), 24);
    assert_int_equal(scenario_call_base_len("nvmlDeviceGetMemoryInfo_v2"), 23);
    assert_int_equal(scenario_call_base_len("nvmlDeviceGetPciInfo_v3"), 20);
    assert_int_equal(scenario_call_base_len("nvmlDeviceGetFoo_v12"), 16);
    /* no suffix: the whole name */
    assert_int_equal(scenario_call_base_len("nvmlDeviceGetTemperature"), 24);
    assert_int_equal(scenario_call_base_len("nvmlDeviceGetUUID"), 17);  /* "DV" is no suffix */
    assert_int_equal(scenario_call_base_len("nvmlDeviceGetFoo_v"), 18); /* no digits */
    assert_int_equal(scenario_call_base_len("nvmlDeviceGetFoo2"), 17);  /* no "_v" */
    assert_int_equal(scenario_call_base_len("V"), 1);
    assert_int_equal(scenario_call_base_len("_v2"), 3);
    assert_int_equal(scenario_call_base_len(""), 0);

    assert_int_equal(scenario_call_base(SCENARIO_CALL_nvmlDeviceGetTemperatureV),
                     SCENARIO_CALL_nvmlDeviceGetTemperature);
    assert_int_equal(scenario_call_base(SCENARIO_CALL_nvmlDeviceGetMemoryInfo_v2),
                     SCENARIO_CALL_nvmlDeviceGetMemoryInfo);
    assert_int_equal(scenario_call_base(SCENARIO_CALL_nvmlDeviceGetPciInfo_v3),
                     SCENARIO_CALL_nvmlDeviceGetPciInfo);
    assert_int_equal(scenario_call_base(SCENARIO_CALL_nvmlDeviceGetPciInfo_v2),
                     SCENARIO_CALL_nvmlDeviceGetPciInfo);
    assert_int_equal(scenario_call_base(SCENARIO_CALL_nvmlDeviceGetHandleByIndex_v2),
                     SCENARIO_CALL_nvmlDeviceGetHandleByIndex);
    assert_int_equal(scenario_call_base(SCENARIO_CALL_nvmlDeviceGetTemperature), -1);
    /* a suffix with no unversioned call of that name */
    assert_int_equal(scenario_call_base(SCENARIO_CALL_nvmlDeviceGetAttributes_v2), -1);
    assert_int_equal(scenario_call_base(-1), -1);
    assert_int_equal(scenario_call_base(SCENARIO_CALL_COUNT), -1);
}

static void test_scenario_errors_apply_to_unnamed_variants(void **state) {
    (void)state;
    /* DESIGN's example: naming the base call fails every variant of it. */
    scenario_t *sc = parse_ok(
        ONE_DEVICE("\"errors\": {\"nvmlDeviceGetTemperature\": \"NOT_SUPPORTED\","
                   "             \"nvmlDeviceGetMemoryInfo\": \"UNKNOWN\","
                   "             \"nvmlDeviceGetMemoryInfo_v2\": \"NO_PERMISSION\","
                   "             \"nvmlDeviceGetPciInfo\": \"UNKNOWN\","
                   "             \"nvmlDeviceGetPciInfo_v3\": \"SUCCESS\"},"
                   "\"latency_ms\": {\"nvmlDeviceGetTemperature\": 5, \"nvmlDeviceGetPciInfo\": 7,"
                   "                 \"nvmlDeviceGetPciInfo_v2\": 0}"));
    const scenario_device_t *d = &sc->devices[0];
    assert_int_equal(scenario_device_error_at(sc, d, SCENARIO_CALL_nvmlDeviceGetTemperature, 0),
                     NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(scenario_device_error_at(sc, d, SCENARIO_CALL_nvmlDeviceGetTemperatureV, 0),
                     NVML_ERROR_NOT_SUPPORTED);
    /* an explicit entry wins for that variant */
    assert_int_equal(scenario_device_error_at(sc, d, SCENARIO_CALL_nvmlDeviceGetMemoryInfo, 0),
                     NVML_ERROR_UNKNOWN);
    assert_int_equal(scenario_device_error_at(sc, d, SCENARIO_CALL_nvmlDeviceGetMemoryInfo_v2, 0),
                     NVML_ERROR_NO_PERMISSION);
    /* "SUCCESS" keeps one variant working; the other still inherits */
    assert_int_equal(scenario_device_error_at(sc, d, SCENARIO_CALL_nvmlDeviceGetPciInfo_v3, 0),
                     NVML_SUCCESS);
    assert_int_equal(scenario_device_error_at(sc, d, SCENARIO_CALL_nvmlDeviceGetPciInfo_v2, 0),
                     NVML_ERROR_UNKNOWN);
    /* unrelated calls are untouched */
    assert_int_equal(scenario_device_error_at(sc, d, SCENARIO_CALL_nvmlDeviceGetPowerUsage, 0),
                     NVML_SUCCESS);
    assert_true(d->latency_ms[SCENARIO_CALL_nvmlDeviceGetTemperatureV] == 5.0);
    assert_true(d->latency_ms[SCENARIO_CALL_nvmlDeviceGetPciInfo_v3] == 7.0);
    assert_true(d->latency_ms[SCENARIO_CALL_nvmlDeviceGetPciInfo_v2] == 0.0);
    scenario_free(sc);

    /* naming only a variant does not reach the base */
    sc = parse_ok(ONE_DEVICE("\"errors\": {\"nvmlDeviceGetTemperatureV\": \"UNKNOWN\"}"));
    assert_int_equal(
        scenario_device_error_at(sc, &sc->devices[0], SCENARIO_CALL_nvmlDeviceGetTemperature, 0),
        NVML_SUCCESS);
    scenario_free(sc);

    /* SUCCESS is still no error for a base call, nor for a variant whose base is not named */
    expect_error(ONE_DEVICE("\"errors\": {\"nvmlDeviceGetTemperature\": \"SUCCESS\"}"),
                 "devices[0].errors.nvmlDeviceGetTemperature", "SUCCESS is not an error");
    expect_error(ONE_DEVICE("\"errors\": {\"nvmlDeviceGetTemperatureV\": \"SUCCESS\"}"),
                 "devices[0].errors.nvmlDeviceGetTemperatureV", "nvmlDeviceGetTemperature,");
}

static void test_scenario_error_timeline_applies_to_unnamed_variants(void **state) {
    (void)state;
    scenario_t *sc = parse_ok(ONE_DEVICE(
        "\"error_timeline\": ["
        "  {\"at_s\": 1, \"call\": \"nvmlDeviceGetTemperature\", \"error\": \"GPU_IS_LOST\"},"
        "  {\"at_s\": 1, \"call\": \"nvmlDeviceGetMemoryInfo\", \"error\": \"UNKNOWN\"},"
        "  {\"at_s\": 2, \"call\": \"nvmlDeviceGetTemperature\", \"error\": \"SUCCESS\"},"
        "  {\"at_s\": 3, \"call\": \"nvmlDeviceGetMemoryInfo_v2\", \"error\": \"TIMEOUT\"}]"));
    const scenario_device_t *d = &sc->devices[0];
    int tv = SCENARIO_CALL_nvmlDeviceGetTemperatureV;
    int m1 = SCENARIO_CALL_nvmlDeviceGetMemoryInfo, m2 = SCENARIO_CALL_nvmlDeviceGetMemoryInfo_v2;
    assert_int_equal(scenario_device_error_at(sc, d, tv, 0.5), NVML_SUCCESS);
    assert_int_equal(scenario_device_error_at(sc, d, tv, 1.5), NVML_ERROR_GPU_IS_LOST);
    assert_int_equal(scenario_device_error_at(sc, d, tv, 2.5), NVML_SUCCESS);
    /* _v2 is named in the timeline: only its own steps apply to it */
    assert_int_equal(scenario_device_error_at(sc, d, m1, 1.5), NVML_ERROR_UNKNOWN);
    assert_int_equal(scenario_device_error_at(sc, d, m2, 1.5), NVML_SUCCESS);
    assert_int_equal(scenario_device_error_at(sc, d, m2, 3.5), NVML_ERROR_TIMEOUT);
    scenario_free(sc);
}

static void test_scenario_load_file_reports_missing_file(void **state) {
    (void)state;
    scenario_t *sc = NULL;
    char err[256] = "";
    assert_int_equal(scenario_load_file("/nonexistent/x.json", &sc, err, sizeof err), KGS_EIO);
    assert_null(sc);
    assert_non_null(strstr(err, "No such file"));
}

static void test_scenario_parses_processes_and_rejects_bad_ones(void **state) {
    (void)state;
    scenario_t *sc = parse_ok(
        ONE_DEVICE("\"processes\": [{\"pid\": 100, \"sm_util\": 30, \"mem_util\": 5,"
                   " \"used_memory_bytes\": 1048576}, {\"pid\": 200, \"type\": \"graphics\"}]"));
    const scenario_device_t *d = &sc->devices[0];
    assert_int_equal(d->process_count, 2);
    assert_int_equal(d->processes[0].pid, 100);
    assert_true(d->processes[0].has_sm_util);
    assert_int_equal(d->processes[0].sm_util, 30);
    assert_true(d->processes[0].has_used_memory);
    assert_int_equal(d->processes[0].mig_index, -1);
    assert_int_equal(d->processes[1].kind, SCENARIO_PROC_GRAPHICS);
    assert_false(d->processes[1].has_sm_util);
    scenario_free(sc);
    expect_error(ONE_DEVICE("\"processes\": [{\"sm_util\": 3}]"), "devices[0].processes[0]",
                 "missing \"pid\"");
    expect_error(ONE_DEVICE("\"processes\": [{\"pid\": 1, \"sm_utl\": 3}]"), "processes[0].sm_utl",
                 "did you mean \"sm_util\"");
    expect_error(ONE_DEVICE("\"processes\": [{\"pid\": 1, \"sm_util\": 101}]"),
                 "processes[0].sm_util", "out of range");
    expect_error(ONE_DEVICE("\"processes\": [{\"pid\": 1}, {\"pid\": 1}]"), "processes[1]",
                 "already listed");
    expect_error(ONE_DEVICE("\"processes\": [{\"pid\": 1, \"mig_index\": 0}]"),
                 "processes[0].mig_index", "MIG is not enabled");
    expect_error(ONE_DEVICE("\"mig\": {\"enabled\": true, \"instances\": [{\"profile\": "
                            "\"3g.40gb\"}]}, \"processes\": [{\"pid\": 1}]"),
                 "processes[0]", "missing \"mig_index\"");
    expect_error(ONE_DEVICE("\"processes\": [{\"pid\": 1, \"type\": \"cuda\"}]"),
                 "processes[0].type", "unknown process type");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scenario_parses_full_example),
        cmocka_unit_test(test_scenario_applies_defaults),
        cmocka_unit_test(test_scenario_parses_every_shipped_scenario),
        cmocka_unit_test(test_scenario_rejects_unknown_keys_with_path),
        cmocka_unit_test(test_scenario_rejects_wrong_types_and_ranges),
        cmocka_unit_test(test_scenario_rejects_unknown_error_and_call_names),
        cmocka_unit_test(test_scenario_rejects_bad_timelines_and_mig),
        cmocka_unit_test(test_scenario_reports_json_syntax_errors_with_line),
        cmocka_unit_test(test_scenario_parse_accepts_more_profiles),
        cmocka_unit_test(test_scenario_resolves_timeline_steps_over_values),
        cmocka_unit_test(test_scenario_repeat_after_s_restarts_timelines),
        cmocka_unit_test(test_scenario_classifies_calls),
        cmocka_unit_test(test_scenario_call_base_strips_version_suffixes),
        cmocka_unit_test(test_scenario_errors_apply_to_unnamed_variants),
        cmocka_unit_test(test_scenario_error_timeline_applies_to_unnamed_variants),
        cmocka_unit_test(test_scenario_load_file_reports_missing_file),
        cmocka_unit_test(test_scenario_parses_processes_and_rejects_bad_ones),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
