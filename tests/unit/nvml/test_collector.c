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
#include <time.h>

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
    unsigned calls, pcie_calls, pcie_tx_kbps;
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
    g->pcie_calls++;
    *v = c == NVML_PCIE_UTIL_TX_BYTES ? (g->pcie_tx_kbps ? g->pcie_tx_kbps : 100) : 200;
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

/* PCIe throughput blocks 20 ms a call on a real driver (42 of 48 ms of an
 * H100's sweep): it is read at the first sweep and then at most every
 * 10 s, the last reading kept in the snapshots between. */
static void test_collector_pcie_is_read_every_10_s_and_kept_between(void **state) {
    (void)state;
    nvml_collector_t *c;
    assert_int_equal(nvml_collector_new(&api, NULL, "n", &c), 0);
    snapshot_t *s = sweep(c, NS_PER_SEC);
    assert_int_equal(F.gpu[0].pcie_calls, 2); /* TX and RX */
    assert_true(gpu_has(&s->gpus[0], GPU_F_PCIE_TX));
    assert_float_equal(s->gpus[0].pcie_tx_bytes_per_s, 100.0 * 1024, 1e-9);
    snapshot_unref(s);
    F.gpu[0].pcie_tx_kbps = 300;
    for (int i = 2; i <= 10; i++) { /* sweeps every second: the reading is kept */
        s = sweep(c, (mono_ns_t)i * NS_PER_SEC);
        assert_true(gpu_has(&s->gpus[0], GPU_F_PCIE_TX));
        assert_float_equal(s->gpus[0].pcie_tx_bytes_per_s, 100.0 * 1024, 1e-9);
        snapshot_unref(s);
    }
    assert_int_equal(F.gpu[0].pcie_calls, 2);
    s = sweep(c, 11 * NS_PER_SEC); /* 10 s after the first read */
    assert_int_equal(F.gpu[0].pcie_calls, 4);
    assert_float_equal(s->gpus[0].pcie_tx_bytes_per_s, 300.0 * 1024, 1e-9);
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

static const char *library_says;
static const char *f_error_string(nvmlReturn_t r) {
    if (r == NVML_ERROR_DRIVER_NOT_LOADED && library_says)
        return library_says;
    return r == NVML_ERROR_DRIVER_NOT_LOADED ? "Driver Not Loaded" : "Unknown Error";
}

/* NVML's own error appears once, in the library's words (nvmlErrorString):
 * a driver's wording, or the stand-in's, which says there that its scenario
 * file failed; the collector knows no library but NVML's API. */
static void test_collector_init_failure_carries_the_librarys_words(void **state) {
    (void)state;
    F.init_rc = NVML_ERROR_DRIVER_NOT_LOADED;
    api.nvmlErrorString = f_error_string;
    library_says = "Driver Not Loaded, from the NVML stand-in: scenario /x.json: open: No such "
                   "file or directory";
    nvml_collector_t *c;
    assert_int_equal(nvml_collector_new(&api, NULL, "n", &c), 0);
    snapshot_t *s = sweep(c, 10 * NS_PER_SEC);
    assert_int_equal(s->status, SNAPSHOT_NVML_DOWN);
    assert_string_equal(s->error, "nvmlInitWithFlags: DRIVER_NOT_LOADED (Driver Not Loaded, from "
                                  "the NVML stand-in: scenario /x.json: open: No such file or "
                                  "directory)");
    snapshot_unref(s);

    library_says = NULL;
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

/* ---- processes ---- */

static struct {
    unsigned n;         /* compute processes on GPU 0 */
    nvmlReturn_t v3_rc; /* what _v3 answers instead of the list (0: the list) */
    unsigned v3_calls, v2_calls, util_calls;
    unsigned long long last_seen;
} P;

static nvmlReturn_t running_list(unsigned *count, nvmlProcessInfo_v2_t *infos) {
    if (*count < P.n) {
        *count = P.n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned i = 0; i < P.n; i++)
        infos[i] = (nvmlProcessInfo_v2_t){.pid = 1000 + i,
                                          .usedGpuMemory = i == 1 ? NVML_VALUE_NOT_AVAILABLE_ULL
                                                                  : 1000u * (i + 1),
                                          .gpuInstanceId = NVML_INSTANCE_ID_NONE,
                                          .computeInstanceId = NVML_INSTANCE_ID_NONE};
    *count = P.n;
    return NVML_SUCCESS;
}
static nvmlReturn_t f_compute_v3(nvmlDevice_t d, unsigned *count, nvmlProcessInfo_v2_t *infos) {
    (void)d;
    P.v3_calls++;
    return P.v3_rc ? P.v3_rc : running_list(count, infos);
}
static nvmlReturn_t f_compute_v2(nvmlDevice_t d, unsigned *count, nvmlProcessInfo_v2_t *infos) {
    (void)d;
    P.v2_calls++;
    return running_list(count, infos);
}
static nvmlReturn_t f_graphics_v3(nvmlDevice_t d, unsigned *count, nvmlProcessInfo_v2_t *infos) {
    (void)d;
    /* pid 1000 also holds a graphics context, with more memory there */
    if (*count < 1) {
        *count = 1;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    infos[0] = (nvmlProcessInfo_v2_t){.pid = 1000, .usedGpuMemory = 5000};
    *count = 1;
    return NVML_SUCCESS;
}
static nvmlReturn_t f_proc_util(nvmlDevice_t d, nvmlProcessUtilizationSample_t *u, unsigned *count,
                                unsigned long long last_seen) {
    (void)d;
    P.util_calls++;
    P.last_seen = last_seen;
    if (*count < 3 || !u) {
        *count = 3;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    /* pid 1000: two samples (mean 30); pid 1002: one; pid 1001: idle */
    u[0] = (nvmlProcessUtilizationSample_t){
        .pid = 1000, .timeStamp = last_seen + 1, .smUtil = 20, .memUtil = 4};
    u[1] = (nvmlProcessUtilizationSample_t){
        .pid = 1000, .timeStamp = last_seen + 2, .smUtil = 40, .memUtil = 6};
    u[2] = (nvmlProcessUtilizationSample_t){.pid = 1002, .timeStamp = last_seen + 3, .smUtil = 9};
    *count = 3;
    return NVML_SUCCESS;
}

/* One GPU whose process calls are the fakes above: n processes, their
 * utilisation from util. */
static void use_process_fakes(unsigned n,
                              nvmlReturn_t (*util)(nvmlDevice_t, nvmlProcessUtilizationSample_t *,
                                                   unsigned *, unsigned long long)) {
    memset(&P, 0, sizeof P);
    P.n = n;
    F.count = 1;
    api.nvmlDeviceGetComputeRunningProcesses_v3 = f_compute_v3;
    api.nvmlDeviceGetComputeRunningProcesses_v2 = f_compute_v2;
    api.nvmlDeviceGetGraphicsRunningProcesses_v3 = f_graphics_v3;
    api.nvmlDeviceGetProcessUtilization = util;
}

static const gpu_record_t *only_gpu0(snapshot_t *s) {
    assert_int_equal(s->status, SNAPSHOT_OK);
    return &s->gpus[0];
}

static void test_collector_processes_with_utilisation_and_memory(void **state) {
    (void)state;
    use_process_fakes(3, f_proc_util);
    nvml_collector_t *c;
    assert_int_equal(nvml_collector_new(&api, NULL, "n", &c), 0);
    snapshot_t *s = sweep(c, NS_PER_SEC);
    const gpu_record_t *g = only_gpu0(s);
    assert_true(g->procs.list_ok);
    assert_true(g->procs.util_ok);
    assert_int_equal(g->procs.count, 3);
    assert_int_equal(g->procs.dropped, 0);
    assert_int_equal(s->proc_total, 3);
    const proc_record_t *p = &s->procs[g->procs.first];
    assert_int_equal(p[0].pid, 1000);
    assert_float_equal(p[0].sm_util_pct, 30.0, 1e-9);
    assert_float_equal(p[0].mem_util_pct, 5.0, 1e-9);
    assert_int_equal(p[0].used_memory_bytes, 5000); /* the larger of compute and graphics */
    assert_true(proc_has(&p[1], PROC_F_SM_UTIL));
    assert_float_equal(p[1].sm_util_pct, 0.0, 1e-9);   /* listed, no sample: idle */
    assert_false(proc_has(&p[1], PROC_F_USED_MEMORY)); /* NVML_VALUE_NOT_AVAILABLE */
    assert_float_equal(p[2].sm_util_pct, 9.0, 1e-9);
    assert_int_equal(P.v2_calls, 0); /* newest variant first */
    assert_true(P.last_seen > 0);    /* never the whole ring buffer */
    unsigned long long first_seen = P.last_seen;
    snapshot_unref(s);
    s = sweep(c, 2 * NS_PER_SEC);
    /* from the newest sample seen, or a second back when that is nearer */
    assert_true(P.last_seen >= first_seen && P.last_seen <= first_seen + 3);
    snapshot_unref(s);
    nvml_collector_free(c);
}

/* The driver's samples as a real one keeps them: fixed times, 0.3 s ago
 * (a sample every 1/6 s to 1 s). A second sweep soon after the first (a
 * one-shot run's, 150 ms later) finds no sample newer than the first
 * sweep's, but a process running flat out is not idle: the window is at
 * least the last second. (On an H100 a matmul at 99 % read 0.0.) */
static unsigned long long fixed_sample_us;
static nvmlReturn_t f_proc_util_fixed(nvmlDevice_t d, nvmlProcessUtilizationSample_t *u,
                                      unsigned *count, unsigned long long last_seen) {
    (void)d;
    P.util_calls++;
    P.last_seen = last_seen;
    if (fixed_sample_us <= last_seen)
        return NVML_ERROR_NOT_FOUND;
    if (*count < 1 || !u) {
        *count = 1;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    u[0] = (nvmlProcessUtilizationSample_t){
        .pid = 1000, .timeStamp = fixed_sample_us, .smUtil = 99, .memUtil = 34};
    *count = 1;
    return NVML_SUCCESS;
}

static void test_collector_process_utilisation_spans_at_least_a_second(void **state) {
    (void)state;
    use_process_fakes(1, f_proc_util_fixed);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    fixed_sample_us = (unsigned long long)ts.tv_sec * 1000000ull +
                      (unsigned long long)ts.tv_nsec / 1000u - 300000ull;
    nvml_collector_t *c;
    assert_int_equal(nvml_collector_new(&api, NULL, "n", &c), 0);
    for (int i = 1; i <= 2; i++) {
        snapshot_t *s = sweep(c, (mono_ns_t)i * 150 * NS_PER_MS);
        const gpu_record_t *g = only_gpu0(s);
        assert_true(g->procs.util_ok);
        const proc_record_t *p = &s->procs[g->procs.first];
        assert_int_equal(p[0].pid, 1000);
        assert_float_equal(p[0].sm_util_pct, 99.0, 1e-9);
        snapshot_unref(s);
    }
    nvml_collector_free(c);
}

static void test_collector_processes_bounded_and_fall_back_to_v2(void **state) {
    (void)state;
    memset(&P, 0, sizeof P);
    P.n = 70;
    P.v3_rc = NVML_ERROR_FUNCTION_NOT_FOUND;
    F.count = 1;
    api.nvmlDeviceGetComputeRunningProcesses_v3 = f_compute_v3;
    api.nvmlDeviceGetComputeRunningProcesses_v2 = f_compute_v2;
    nvml_collector_t *c;
    assert_int_equal(nvml_collector_new(&api, NULL, "n", &c), 0);
    snapshot_t *s = sweep(c, NS_PER_SEC);
    const gpu_record_t *g = only_gpu0(s);
    assert_true(g->procs.list_ok);
    assert_int_equal(g->procs.count, COLLECTOR_MAX_PROCS_PER_GPU);
    assert_int_equal(g->procs.dropped, 70 - COLLECTOR_MAX_PROCS_PER_GPU);
    assert_true(P.v2_calls >= 1);
    /* No utilisation symbol: absent, with no code. */
    assert_false(g->procs.util_ok);
    assert_int_equal(g->procs.util_code, 0);
    assert_false(proc_has(&s->procs[g->procs.first], PROC_F_SM_UTIL));
    snapshot_unref(s);

    /* A list that fails is absent with NVML's code, never an empty list. */
    api.nvmlDeviceGetComputeRunningProcesses_v2 = NULL;
    P.v3_rc = NVML_ERROR_NO_PERMISSION;
    s = sweep(c, 2 * NS_PER_SEC);
    g = only_gpu0(s);
    assert_false(g->procs.list_ok);
    assert_int_equal(g->procs.list_code, NVML_ERROR_NO_PERMISSION);
    assert_int_equal(g->procs.count, 0);
    assert_int_equal(g->health, GPU_HEALTH_OK);
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
        cmocka_unit_test_setup(test_collector_pcie_is_read_every_10_s_and_kept_between, setup),
        cmocka_unit_test_setup(test_collector_nvlink_not_supported_is_absent, setup),
        cmocka_unit_test_setup(test_collector_init_failure_backs_off_then_recovers, setup),
        cmocka_unit_test_setup(test_collector_init_failure_carries_the_librarys_words, setup),
        cmocka_unit_test_setup(test_collector_count_failure_reinitialises, setup),
        cmocka_unit_test_setup(test_collector_inaccessible_handle_is_an_error_not_skipped, setup),
        cmocka_unit_test_setup(test_collector_zero_gpus_is_ok, setup),
        cmocka_unit_test_setup(test_collector_process_utilisation_spans_at_least_a_second, setup),
        cmocka_unit_test_setup(test_collector_processes_with_utilisation_and_memory, setup),
        cmocka_unit_test_setup(test_collector_processes_bounded_and_fall_back_to_v2, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
