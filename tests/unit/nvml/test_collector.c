/*
 * The collector against a table of fake NVML functions: exact control of
 * every return code and counter, no library at all. (The same collector runs
 * against the ABI-faithful stand-in in test_sampler.c and the CLI tests.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/snapshot.h"
#include "nvml/collector.h"

#define FAKE_GPUS 3

typedef struct {
    char uuid[64];
    nvmlReturn_t util_rc, mem2_rc, temp_rc, power_rc, all_rc;
    unsigned util;
    unsigned long long used, total, reserved;
    unsigned power_mw;
    nvmlReturn_t nvl_rc;
    unsigned long long nvl_tx_kib, nvl_rx_kib;
    long long nvl_ts_us;
    unsigned calls;
} fake_gpu_t;

static struct {
    nvmlReturn_t init_rc, count_rc, handle_rc;
    unsigned count, init_calls, shutdown_calls;
    fake_gpu_t gpu[FAKE_GPUS];
} F;

static fake_gpu_t *G(nvmlDevice_t d) {
    fake_gpu_t *g = (fake_gpu_t *)(void *)d;
    g->calls++;
    return g;
}

static nvmlReturn_t f_init_flags(unsigned flags) {
    assert_int_equal(flags, NVML_INIT_FLAG_NO_GPUS);
    F.init_calls++;
    return F.init_rc;
}
static nvmlReturn_t f_shutdown(void) {
    F.shutdown_calls++;
    return NVML_SUCCESS;
}
static nvmlReturn_t f_count(unsigned *n) {
    *n = F.count;
    return F.count_rc;
}
static nvmlReturn_t f_handle(unsigned i, nvmlDevice_t *d) {
    if (i >= F.count)
        return NVML_ERROR_INVALID_ARGUMENT;
    *d = (nvmlDevice_t)(void *)&F.gpu[i];
    return F.handle_rc;
}
static nvmlReturn_t f_uuid(nvmlDevice_t d, char *buf, unsigned len) {
    fake_gpu_t *g = G(d);
    if (g->all_rc)
        return g->all_rc;
    snprintf(buf, len, "%s", g->uuid);
    return NVML_SUCCESS;
}
static nvmlReturn_t f_util(nvmlDevice_t d, nvmlUtilization_t *u) {
    fake_gpu_t *g = G(d);
    if (g->all_rc || g->util_rc)
        return g->all_rc ? g->all_rc : g->util_rc;
    u->gpu = g->util;
    u->memory = 3;
    return NVML_SUCCESS;
}
static nvmlReturn_t f_mem2(nvmlDevice_t d, nvmlMemory_v2_t *m) {
    fake_gpu_t *g = G(d);
    if (g->all_rc)
        return g->all_rc;
    if (m->version != nvmlMemory_v2)
        return NVML_ERROR_FUNCTION_NOT_FOUND;
    if (g->mem2_rc)
        return g->mem2_rc;
    m->used = g->used;
    m->total = g->total;
    m->reserved = g->reserved;
    m->free = g->total - g->used;
    return NVML_SUCCESS;
}
static nvmlReturn_t f_mem1(nvmlDevice_t d, nvmlMemory_t *m) {
    fake_gpu_t *g = G(d);
    if (g->all_rc)
        return g->all_rc;
    m->used = g->used;
    m->total = g->total;
    m->free = g->total - g->used;
    return NVML_SUCCESS;
}
static nvmlReturn_t f_temp(nvmlDevice_t d, nvmlTemperatureSensors_t s, unsigned *t) {
    fake_gpu_t *g = G(d);
    (void)s;
    if (g->all_rc || g->temp_rc)
        return g->all_rc ? g->all_rc : g->temp_rc;
    *t = 55;
    return NVML_SUCCESS;
}
static nvmlReturn_t f_power(nvmlDevice_t d, unsigned *mw) {
    fake_gpu_t *g = G(d);
    if (g->all_rc || g->power_rc)
        return g->all_rc ? g->all_rc : g->power_rc;
    *mw = g->power_mw;
    return NVML_SUCCESS;
}
static nvmlReturn_t f_pcie(nvmlDevice_t d, nvmlPcieUtilCounter_t c, unsigned *v) {
    fake_gpu_t *g = G(d);
    if (g->all_rc)
        return g->all_rc;
    *v = c == NVML_PCIE_UTIL_TX_BYTES ? 100 : 200;
    return NVML_SUCCESS;
}
static nvmlReturn_t f_fields(nvmlDevice_t d, int n, nvmlFieldValue_t *fv) {
    fake_gpu_t *g = G(d);
    if (g->all_rc)
        return g->all_rc;
    for (int i = 0; i < n; i++) {
        assert_int_equal(fv[i].scopeId, NVML_FI_SCOPE_ALL_LINKS);
        fv[i].nvmlReturn = g->nvl_rc;
        fv[i].timestamp = g->nvl_ts_us;
        fv[i].valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
        fv[i].value.ullVal =
            fv[i].fieldId == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX ? g->nvl_tx_kib : g->nvl_rx_kib;
    }
    return NVML_SUCCESS;
}

static nvml_api_t api;

static int setup(void **state) {
    (void)state;
    memset(&F, 0, sizeof F);
    F.count = 2;
    for (int i = 0; i < FAKE_GPUS; i++) {
        snprintf(F.gpu[i].uuid, sizeof F.gpu[i].uuid, "GPU-0000000%d-aaaa", i);
        F.gpu[i].util = 40 + (unsigned)i;
        F.gpu[i].used = 1000;
        F.gpu[i].total = 4000;
        F.gpu[i].reserved = 100;
        F.gpu[i].power_mw = 312500;
        F.gpu[i].nvl_ts_us = 1000000;
    }
    memset(&api, 0, sizeof api);
    api.nvmlInitWithFlags = f_init_flags;
    api.nvmlShutdown = f_shutdown;
    api.nvmlDeviceGetCount_v2 = f_count;
    api.nvmlDeviceGetHandleByIndex_v2 = f_handle;
    api.nvmlDeviceGetUUID = f_uuid;
    api.nvmlDeviceGetUtilizationRates = f_util;
    api.nvmlDeviceGetMemoryInfo_v2 = f_mem2;
    api.nvmlDeviceGetMemoryInfo = f_mem1;
    api.nvmlDeviceGetTemperature = f_temp;
    api.nvmlDeviceGetPowerUsage = f_power;
    api.nvmlDeviceGetPcieThroughput = f_pcie;
    api.nvmlDeviceGetFieldValues = f_fields;
    return 0;
}

static snapshot_t *sweep(nvml_collector_t *c, mono_ns_t now) {
    snapshot_t *s = NULL;
    assert_int_equal(nvml_collector_sample(c, now, &s), 0);
    assert_non_null(s);
    return s;
}

static void test_collector_maps_values_with_units_and_validity(void **state) {
    (void)state;
    nvml_collector_t *c;
    assert_int_equal(nvml_collector_new(&api, NULL, "node-a", &c), 0);
    snapshot_t *s = sweep(c, NS_PER_SEC);
    assert_int_equal(s->status, SNAPSHOT_OK);
    assert_int_equal(s->gpu_count, 2);
    assert_string_equal(s->node_name, "node-a");
    const gpu_record_t *g = &s->gpus[1];
    assert_int_equal(g->index, 1);
    assert_string_equal(g->uuid, "GPU-00000001-aaaa");
    assert_true(gpu_has(g, GPU_F_GPU_UTIL));
    assert_int_equal(g->gpu_util_pct, 41);
    assert_true(gpu_has(g, GPU_F_MEM_RESERVED));
    assert_int_equal(g->memory_reserved_bytes, 100);
    assert_float_equal(g->power_w, 312.5, 1e-9);
    assert_int_equal(g->pcie_tx_bytes_per_s, 100 * 1024);
    assert_int_equal(g->temperature_c, 55);
    /* Symbols the fake table lacks: absent with no error code. */
    assert_false(gpu_has(g, GPU_F_SM_CLOCK));
    assert_int_equal(g->field_error[GPU_F_SM_CLOCK], 0);
    assert_false(gpu_has(g, GPU_F_ENERGY));
    assert_int_equal(g->health, GPU_HEALTH_OK);
    snapshot_unref(s);
    nvml_collector_free(c);
    assert_int_equal(F.init_calls, 1);
    assert_int_equal(F.shutdown_calls, 1);
}

static void test_collector_falls_back_to_memory_v1_when_v2_rejects_version(void **state) {
    (void)state;
    F.gpu[0].mem2_rc = NVML_ERROR_FUNCTION_NOT_FOUND;
    nvml_collector_t *c;
    assert_int_equal(nvml_collector_new(&api, NULL, "n", &c), 0);
    snapshot_t *s = sweep(c, NS_PER_SEC);
    const gpu_record_t *g = &s->gpus[0];
    assert_true(gpu_has(g, GPU_F_MEM_USED));
    assert_int_equal(g->memory_used_bytes, 1000);
    assert_false(gpu_has(g, GPU_F_MEM_RESERVED)); /* v1 has no reserved figure */
    assert_int_equal(g->health, GPU_HEALTH_OK);
    snapshot_unref(s);
    nvml_collector_free(c);
}

static void test_collector_not_supported_is_absent_and_healthy(void **state) {
    (void)state;
    F.gpu[0].util_rc = NVML_ERROR_NOT_SUPPORTED;
    nvml_collector_t *c;
    assert_int_equal(nvml_collector_new(&api, NULL, "n", &c), 0);
    snapshot_t *s = sweep(c, NS_PER_SEC);
    const gpu_record_t *g = &s->gpus[0];
    assert_false(gpu_has(g, GPU_F_GPU_UTIL));
    assert_false(gpu_has(g, GPU_F_MEM_UTIL));
    assert_int_equal(g->field_error[GPU_F_GPU_UTIL], NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(g->health, GPU_HEALTH_OK);
    snapshot_unref(s);
    nvml_collector_free(c);
}

static void test_collector_hard_field_error_marks_gpu_error_and_keeps_other_fields(void **state) {
    (void)state;
    F.gpu[0].temp_rc = NVML_ERROR_UNKNOWN;
    nvml_collector_t *c;
    assert_int_equal(nvml_collector_new(&api, NULL, "n", &c), 0);
    snapshot_t *s = sweep(c, NS_PER_SEC);
    const gpu_record_t *g = &s->gpus[0];
    assert_false(gpu_has(g, GPU_F_TEMPERATURE));
    assert_int_equal(g->field_error[GPU_F_TEMPERATURE], NVML_ERROR_UNKNOWN);
    assert_int_equal(g->health, GPU_HEALTH_ERROR);
    assert_int_equal(g->health_nvml_code, NVML_ERROR_UNKNOWN);
    assert_true(gpu_has(g, GPU_F_POWER));
    snapshot_unref(s);
    nvml_collector_free(c);
}

static void test_collector_lost_gpu_has_no_values_and_is_not_queried_further(void **state) {
    (void)state;
    F.gpu[1].util_rc = NVML_ERROR_GPU_IS_LOST;
    nvml_collector_t *c;
    assert_int_equal(nvml_collector_new(&api, NULL, "n", &c), 0);
    snapshot_t *s = sweep(c, NS_PER_SEC);
    const gpu_record_t *g = &s->gpus[1];
    assert_int_equal(g->health, GPU_HEALTH_LOST);
    assert_int_equal(g->health_nvml_code, NVML_ERROR_GPU_IS_LOST);
    assert_int_equal(g->valid, 0);
    assert_int_equal(g->field_error[GPU_F_POWER], NVML_ERROR_GPU_IS_LOST);
    /* UUID and utilisation only: nothing after the loss was asked. */
    assert_int_equal(F.gpu[1].calls, 2);
    assert_int_equal(s->gpus[0].health, GPU_HEALTH_OK);
    snapshot_unref(s);
    nvml_collector_free(c);
}

static void test_collector_nvlink_rate_needs_two_readings_and_survives_reset(void **state) {
    (void)state;
    nvml_collector_t *c;
    assert_int_equal(nvml_collector_new(&api, NULL, "n", &c), 0);
    snapshot_t *s = sweep(c, NS_PER_SEC);
    assert_false(gpu_has(&s->gpus[0], GPU_F_NVLINK_TX));
    assert_true(nvml_collector_wants_second_sample(c));
    snapshot_unref(s);

    F.gpu[0].nvl_tx_kib += 2048; /* 2 MiB in half a second */
    F.gpu[0].nvl_rx_kib += 512;
    F.gpu[0].nvl_ts_us += 500000;
    F.gpu[1].nvl_ts_us += 500000;
    s = sweep(c, 2 * NS_PER_SEC);
    assert_true(gpu_has(&s->gpus[0], GPU_F_NVLINK_TX));
    assert_float_equal(s->gpus[0].nvlink_tx_bytes_per_s, 4.0 * 1024 * 1024, 1e-6);
    assert_float_equal(s->gpus[0].nvlink_rx_bytes_per_s, 1024.0 * 1024, 1e-6);
    assert_false(nvml_collector_wants_second_sample(c));
    snapshot_unref(s);

    F.gpu[0].nvl_tx_kib = 10; /* counter reset (driver reload): no rate, not a huge one */
    F.gpu[0].nvl_ts_us += 500000;
    s = sweep(c, 3 * NS_PER_SEC);
    assert_false(gpu_has(&s->gpus[0], GPU_F_NVLINK_TX));
    assert_true(gpu_has(&s->gpus[0], GPU_F_NVLINK_RX));
    snapshot_unref(s);
    nvml_collector_free(c);
}

static void test_collector_nvlink_not_supported_is_absent(void **state) {
    (void)state;
    F.gpu[0].nvl_rc = NVML_ERROR_NOT_SUPPORTED;
    nvml_collector_t *c;
    assert_int_equal(nvml_collector_new(&api, NULL, "n", &c), 0);
    snapshot_t *s = sweep(c, NS_PER_SEC);
    assert_false(gpu_has(&s->gpus[0], GPU_F_NVLINK_TX));
    assert_int_equal(s->gpus[0].field_error[GPU_F_NVLINK_TX], NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(s->gpus[0].health, GPU_HEALTH_OK);
    snapshot_unref(s);
    nvml_collector_free(c);
}

static void test_collector_init_failure_backs_off_then_recovers(void **state) {
    (void)state;
    F.init_rc = NVML_ERROR_DRIVER_NOT_LOADED;
    nvml_collector_t *c;
    assert_int_equal(nvml_collector_new(&api, NULL, "n", &c), 0);
    snapshot_t *s = sweep(c, 10 * NS_PER_SEC);
    assert_int_equal(s->status, SNAPSHOT_NVML_DOWN);
    assert_int_equal(s->nvml_code, NVML_ERROR_DRIVER_NOT_LOADED);
    assert_non_null(strstr(s->error, "DRIVER_NOT_LOADED"));
    assert_int_equal(s->gpu_count, 0);
    snapshot_unref(s);
    assert_int_equal(F.init_calls, 1);

    s = sweep(c, 10 * NS_PER_SEC + NS_PER_SEC / 2); /* inside the 1 s backoff */
    assert_int_equal(s->status, SNAPSHOT_NVML_DOWN);
    /* still says why, with the code of the failure, not only when it retries */
    assert_int_equal(s->nvml_code, NVML_ERROR_DRIVER_NOT_LOADED);
    assert_non_null(strstr(s->error, "DRIVER_NOT_LOADED"));
    assert_non_null(strstr(s->error, "next initialisation attempt in 0.5 s"));
    assert_int_equal(F.init_calls, 1);
    snapshot_unref(s);

    s = sweep(c, 11 * NS_PER_SEC + 1); /* retried, fails again: backoff doubles */
    assert_int_equal(F.init_calls, 2);
    snapshot_unref(s);
    s = sweep(c, 12 * NS_PER_SEC + 2);
    assert_int_equal(F.init_calls, 2);
    snapshot_unref(s);

    F.init_rc = NVML_SUCCESS;
    s = sweep(c, 13 * NS_PER_SEC + 2);
    assert_int_equal(F.init_calls, 3);
    assert_int_equal(s->status, SNAPSHOT_OK);
    assert_int_equal(s->gpu_count, 2);
    snapshot_unref(s);
    nvml_collector_free(c);
    assert_int_equal(F.shutdown_calls, 1); /* only the successful init is undone */
}

static const char *standin_says;
static const char *f_standin_scenario_error(void) {
    return standin_says;
}
static const char *f_error_string(nvmlReturn_t r) {
    return r == NVML_ERROR_DRIVER_NOT_LOADED ? "Driver Not Loaded" : "Unknown Error";
}

/* NVML's own error appears once; the stand-in's scenario problem, when it
 * reports one, follows it, so nobody goes looking for a driver. */
static void test_collector_init_failure_names_the_stand_in_scenario_problem(void **state) {
    (void)state;
    F.init_rc = NVML_ERROR_DRIVER_NOT_LOADED;
    api.nvmlErrorString = f_error_string;
    api.nvml_sim_scenario_error = f_standin_scenario_error;
    standin_says = "scenario /x.json: open: No such file or directory";
    nvml_collector_t *c;
    assert_int_equal(nvml_collector_new(&api, NULL, "n", &c), 0);
    snapshot_t *s = sweep(c, 10 * NS_PER_SEC);
    assert_int_equal(s->status, SNAPSHOT_NVML_DOWN);
    assert_string_equal(s->error, "nvmlInitWithFlags: DRIVER_NOT_LOADED (Driver Not Loaded) from "
                                  "the NVML stand-in: scenario /x.json: open: No such file or "
                                  "directory");
    snapshot_unref(s);

    /* A failure the scenario asks for (init_error) plays a driver's. */
    standin_says = NULL;
    s = sweep(c, 20 * NS_PER_SEC);
    assert_string_equal(s->error, "nvmlInitWithFlags: DRIVER_NOT_LOADED (Driver Not Loaded)");
    snapshot_unref(s);
    nvml_collector_free(c);
}

static void test_collector_count_failure_reinitialises(void **state) {
    (void)state;
    nvml_collector_t *c;
    assert_int_equal(nvml_collector_new(&api, NULL, "n", &c), 0);
    snapshot_t *s = sweep(c, NS_PER_SEC);
    snapshot_unref(s);
    F.count_rc = NVML_ERROR_UNKNOWN;
    s = sweep(c, 2 * NS_PER_SEC);
    assert_int_equal(s->status, SNAPSHOT_NVML_DOWN);
    assert_non_null(strstr(s->error, "nvmlDeviceGetCount_v2"));
    snapshot_unref(s);
    assert_int_equal(F.shutdown_calls, 1);
    F.count_rc = NVML_SUCCESS;
    s = sweep(c, 4 * NS_PER_SEC);
    assert_int_equal(s->status, SNAPSHOT_OK);
    assert_int_equal(F.init_calls, 2);
    snapshot_unref(s);
    nvml_collector_free(c);
}

static void test_collector_inaccessible_handle_is_an_error_not_skipped(void **state) {
    (void)state;
    F.handle_rc = NVML_ERROR_NO_PERMISSION;
    nvml_collector_t *c;
    assert_int_equal(nvml_collector_new(&api, NULL, "n", &c), 0);
    snapshot_t *s = sweep(c, NS_PER_SEC);
    assert_int_equal(s->gpu_count, 2); /* still listed: the Go tool skipped it silently */
    assert_int_equal(s->gpus[0].health, GPU_HEALTH_ERROR);
    assert_int_equal(s->gpus[0].health_nvml_code, NVML_ERROR_NO_PERMISSION);
    assert_int_equal(s->gpus[0].valid, 0);
    snapshot_unref(s);
    nvml_collector_free(c);
}

static void test_collector_zero_gpus_is_ok(void **state) {
    (void)state;
    F.count = 0;
    nvml_collector_t *c;
    assert_int_equal(nvml_collector_new(&api, NULL, "n", &c), 0);
    snapshot_t *s = sweep(c, NS_PER_SEC);
    assert_int_equal(s->status, SNAPSHOT_OK);
    assert_int_equal(s->gpu_count, 0);
    assert_int_equal(s->seq, 1);
    snapshot_unref(s);
    nvml_collector_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_collector_maps_values_with_units_and_validity, setup),
        cmocka_unit_test_setup(test_collector_falls_back_to_memory_v1_when_v2_rejects_version,
                               setup),
        cmocka_unit_test_setup(test_collector_not_supported_is_absent_and_healthy, setup),
        cmocka_unit_test_setup(
            test_collector_hard_field_error_marks_gpu_error_and_keeps_other_fields, setup),
        cmocka_unit_test_setup(test_collector_lost_gpu_has_no_values_and_is_not_queried_further,
                               setup),
        cmocka_unit_test_setup(test_collector_nvlink_rate_needs_two_readings_and_survives_reset,
                               setup),
        cmocka_unit_test_setup(test_collector_nvlink_not_supported_is_absent, setup),
        cmocka_unit_test_setup(test_collector_init_failure_backs_off_then_recovers, setup),
        cmocka_unit_test_setup(test_collector_init_failure_names_the_stand_in_scenario_problem,
                               setup),
        cmocka_unit_test_setup(test_collector_count_failure_reinitialises, setup),
        cmocka_unit_test_setup(test_collector_inaccessible_handle_is_an_error_not_skipped, setup),
        cmocka_unit_test_setup(test_collector_zero_gpus_is_ok, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
