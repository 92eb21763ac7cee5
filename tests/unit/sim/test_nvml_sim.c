/*
 * test_nvml_sim.c - libnvml-sim.so through dlopen()/dlsym(), exactly as the
 * real loader binds it, against scenario files written to a temp directory.
 *
 * The library's state lives as long as the process, so every case writes
 * its scenario (tmp file + rename, as the docs tell users), points
 * NVML_SIM_SCENARIO at it and initialises; the teardown shuts NVML down
 * until the refcount is 0, so the next case starts from a fresh init.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "nvml/nvml_abi.h"

static struct {
#define API_FIELD(name, params) nvmlReturn_t(*name) params;
    NVML_SYMBOLS(API_FIELD)
#undef API_FIELD
    const char *(*nvmlErrorString)(nvmlReturn_t result);
} api;

static void *lib;
static char dir[256];
static char scenario_path[300];
static int scenario_serial;

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(unsigned ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Writes `json` to `path` atomically: a temp file renamed over it. */
static void write_file(const char *path, const char *json) {
    char tmp[400];
    snprintf(tmp, sizeof tmp, "%s.tmp%d", path, scenario_serial++);
    FILE *f = fopen(tmp, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(json, 1, strlen(json), f), strlen(json));
    assert_int_equal(fclose(f), 0);
    assert_int_equal(rename(tmp, path), 0);
}

static void use_scenario(const char *json) {
    write_file(scenario_path, json);
    setenv("NVML_SIM_SCENARIO", scenario_path, 1);
}

/* Rewrites the live scenario and waits past the 10 ms reload check. */
static void rewrite_scenario(const char *json) {
    write_file(scenario_path, json);
    sleep_ms(25);
}

static void init_with(const char *json) {
    use_scenario(json);
    assert_int_equal(api.nvmlInit_v2(), NVML_SUCCESS);
}

static nvmlDevice_t handle(unsigned i) {
    nvmlDevice_t h = NULL;
    assert_int_equal(api.nvmlDeviceGetHandleByIndex_v2(i, &h), NVML_SUCCESS);
    assert_non_null(h);
    return h;
}

static void *bind(const char *name) {
    return dlsym(lib, name);
}

#define ONE_GPU(body) "{\"devices\": [{" body "}]}"

static const char *full_gpu =
    ONE_GPU("\"uuid\": \"GPU-11111111-2222-3333-4444-555555555555\", \"name\": \"NVIDIA H100 "
            "80GB HBM3\", \"pci_bus_id\": \"00000001:17:03.0\", \"memory_total_bytes\": 1000000,"
            "\"power_limit_mw\": 700000, \"gpm_supported\": true, \"nvlink_links\": 4,"
            "\"values\": {\"gpu_util\": 37, \"mem_util\": 12, \"memory_used_bytes\": 200000,"
            " \"memory_reserved_bytes\": 50000, \"temperature_c\": 51, \"power_mw\": 312000,"
            " \"energy_mj\": 1000, \"sm_clock_mhz\": 1980, \"clock_event_reasons\": 5,"
            " \"sm_active\": 30.5, \"sm_occupancy\": 20.0, \"dram_bw_util\": 11.0,"
            " \"pcie_tx_kbps\": 1200, \"pcie_rx_kbps\": 800, \"nvlink_tx_kib_total\": 4000,"
            " \"nvlink_rx_kib_total\": 8000, \"nvlink_tx_kib_per_s\": 100000,"
            " \"nvlink_rx_kib_per_s\": 0}");

static int group_setup(void **state) {
    (void)state;
    const char *path = getenv("NVML_SIM_LIBRARY");
    if (!path) {
        fprintf(stderr, "NVML_SIM_LIBRARY is not set\n");
        return -1;
    }
    snprintf(dir, sizeof dir, "/tmp/test_nvml_sim.XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(scenario_path, sizeof scenario_path, "%s/scenario.json", dir);
    use_scenario(full_gpu);
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        return -1;
    }
#define API_BIND(name, params)                                                                     \
    {                                                                                              \
        void *sym = bind(#name);                                                                   \
        if (!sym) {                                                                                \
            fprintf(stderr, "dlsym %s: missing\n", #name);                                         \
            return -1;                                                                             \
        }                                                                                          \
        memcpy(&api.name, &sym, sizeof sym);                                                       \
    }
    NVML_SYMBOLS(API_BIND)
#undef API_BIND
    void *sym = bind("nvmlErrorString");
    if (!sym)
        return -1;
    memcpy(&api.nvmlErrorString, &sym, sizeof sym);
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    if (lib)
        dlclose(lib);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static int shutdown_all(void **state) {
    (void)state;
    for (int i = 0; i < 16; i++)
        api.nvmlShutdown();
    return 0;
}

/* Runs fn with stderr redirected to a file; returns what was written. */
static char captured[2048];
static void capture_stderr_begin(int *saved) {
    char path[400];
    snprintf(path, sizeof path, "%s/stderr.txt", dir);
    fflush(stderr);
    *saved = dup(2);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    dup2(fd, 2);
    close(fd);
}

static const char *capture_stderr_end(int saved) {
    char path[400];
    snprintf(path, sizeof path, "%s/stderr.txt", dir);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(captured, 1, sizeof captured - 1, f);
    captured[n] = '\0';
    fclose(f);
    return captured;
}

/* ---- init and system ---- */

static void test_nvml_sim_calls_before_init_are_uninitialized(void **state) {
    (void)state;
    unsigned count = 99;
    assert_int_equal(api.nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);
    nvmlGpmSample_t s = NULL;
    assert_int_equal(api.nvmlGpmSampleAlloc(&s), NVML_ERROR_UNINITIALIZED);
    char buf[80];
    assert_int_equal(api.nvmlSystemGetDriverVersion(buf, sizeof buf), NVML_ERROR_UNINITIALIZED);
    assert_int_equal(api.nvmlShutdown(), NVML_SUCCESS); /* more shutdowns than inits is fine */
}

static void test_nvml_sim_init_is_refcounted(void **state) {
    (void)state;
    init_with(full_gpu);
    assert_int_equal(api.nvmlInitWithFlags(NVML_INIT_FLAG_NO_GPUS), NVML_SUCCESS);
    assert_int_equal(api.nvmlShutdown(), NVML_SUCCESS);
    unsigned count = 0;
    assert_int_equal(api.nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
    assert_int_equal(count, 1);
    assert_int_equal(api.nvmlShutdown(), NVML_SUCCESS);
    assert_int_equal(api.nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);
}

static void test_nvml_sim_init_error_fails_every_init(void **state) {
    (void)state;
    use_scenario("{\"init_error\": \"DRIVER_NOT_LOADED\", \"devices\": [{}]}");
    assert_int_equal(api.nvmlInit_v2(), NVML_ERROR_DRIVER_NOT_LOADED);
    assert_int_equal(api.nvmlInit(), NVML_ERROR_DRIVER_NOT_LOADED);
    assert_int_equal(api.nvmlInitWithFlags(0), NVML_ERROR_DRIVER_NOT_LOADED);
    unsigned count;
    assert_int_equal(api.nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);
}

static void test_nvml_sim_init_reports_bad_scenarios_on_stderr(void **state) {
    (void)state;
    int saved;
    unsetenv("NVML_SIM_SCENARIO");
    capture_stderr_begin(&saved);
    nvmlReturn_t rc = api.nvmlInit_v2();
    const char *out = capture_stderr_end(saved);
    assert_int_equal(rc, NVML_ERROR_DRIVER_NOT_LOADED);
    assert_non_null(strstr(out, "NVML_SIM_SCENARIO is not set"));

    use_scenario(ONE_GPU("\"values\": {\"gpu_utl\": 3}"));
    capture_stderr_begin(&saved);
    rc = api.nvmlInit_v2();
    out = capture_stderr_end(saved);
    assert_int_equal(rc, NVML_ERROR_UNKNOWN);
    assert_non_null(strstr(out, scenario_path));
    assert_non_null(strstr(out, "devices[0].values.gpu_utl"));
    const char *nl = strchr(out, '\n');
    assert_non_null(nl);
    assert_null(strchr(nl + 1, '\n')); /* one line */

    setenv("NVML_SIM_SCENARIO", "/nonexistent/scenario.json", 1);
    capture_stderr_begin(&saved);
    rc = api.nvmlInit_v2();
    out = capture_stderr_end(saved);
    assert_int_equal(rc, NVML_ERROR_DRIVER_NOT_LOADED);
    assert_non_null(strstr(out, "/nonexistent/scenario.json"));
}

/* The stand-in tells a caller that a failure is its scenario file's, not a
 * (simulated) driver's, through NVML's own error path: nvmlErrorString of
 * the code init returned carries why, after NVML's wording. It exports
 * nothing real NVML lacks. */
static void test_nvml_sim_scenario_error_says_why_only_for_file_problems(void **state) {
    (void)state;
    assert_null(bind("nvml_sim_scenario_error"));
    int saved;

    setenv("NVML_SIM_SCENARIO", "/nonexistent/scenario.json", 1);
    capture_stderr_begin(&saved);
    assert_int_equal(api.nvmlInit_v2(), NVML_ERROR_DRIVER_NOT_LOADED);
    const char *out = capture_stderr_end(saved);
    assert_non_null(strstr(out, "this library is the NVML stand-in, not a driver"));
    const char *why = api.nvmlErrorString(NVML_ERROR_DRIVER_NOT_LOADED);
    assert_non_null(strstr(why, "Driver Not Loaded, from the NVML stand-in: scenario "
                                "/nonexistent/scenario.json"));
    /* another code keeps NVML's wording */
    assert_string_equal(api.nvmlErrorString(NVML_ERROR_GPU_IS_LOST), "GPU is lost");

    use_scenario("{\"init_error\": \"DRIVER_NOT_LOADED\", \"devices\": [{}]}");
    assert_int_equal(api.nvmlInit_v2(), NVML_ERROR_DRIVER_NOT_LOADED);
    /* a simulated driver failure: NVML's wording alone */
    assert_string_equal(api.nvmlErrorString(NVML_ERROR_DRIVER_NOT_LOADED), "Driver Not Loaded");

    init_with(ONE_GPU(""));
    assert_string_equal(api.nvmlErrorString(NVML_ERROR_DRIVER_NOT_LOADED), "Driver Not Loaded");
}

static void test_nvml_sim_system_queries(void **state) {
    (void)state;
    init_with("{\"driver_version\": \"470.256.02\", \"cuda_driver_version\": 11040, "
              "\"devices\": []}");
    char buf[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
    assert_int_equal(api.nvmlSystemGetDriverVersion(buf, sizeof buf), NVML_SUCCESS);
    assert_string_equal(buf, "470.256.02");
    assert_int_equal(api.nvmlSystemGetDriverVersion(buf, 10), NVML_ERROR_INSUFFICIENT_SIZE);
    int cuda = 0;
    assert_int_equal(api.nvmlSystemGetCudaDriverVersion_v2(&cuda), NVML_SUCCESS);
    assert_int_equal(cuda, 11040);
    assert_int_equal(api.nvmlSystemGetCudaDriverVersion(&cuda), NVML_SUCCESS);
    unsigned count = 9;
    assert_int_equal(api.nvmlDeviceGetCount(&count), NVML_SUCCESS);
    assert_int_equal(count, 0);
    nvmlDevice_t h;
    assert_int_equal(api.nvmlDeviceGetHandleByIndex_v2(0, &h), NVML_ERROR_INVALID_ARGUMENT);
    assert_string_equal(api.nvmlErrorString(NVML_ERROR_GPU_IS_LOST), "GPU is lost");
    assert_string_equal(api.nvmlErrorString((nvmlReturn_t)12345), "Unknown Error");
}

static void test_nvml_sim_every_shipped_scenario_loads(void **state) {
    (void)state;
    const char *src = getenv("KGS_SOURCE_DIR");
    if (!src)
        skip();
    static const struct {
        const char *file;
        unsigned devices;
    } files[] = {{"idle-4xh100.json", 4}, {"inference-burst.json", 2},
                 {"mig-a100.json", 2},    {"gpu-lost.json", 2},
                 {"old-driver.json", 1},  {"time-slicing-h100.json", 1}};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/sim/scenarios/%s", src, files[i].file);
        setenv("NVML_SIM_SCENARIO", path, 1);
        assert_int_equal(api.nvmlInit_v2(), NVML_SUCCESS);
        unsigned count = 0;
        assert_int_equal(api.nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
        assert_int_equal(count, files[i].devices);
        for (unsigned d = 0; d < count; d++) {
            char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
            assert_int_equal(api.nvmlDeviceGetName(handle(d), name, sizeof name), NVML_SUCCESS);
            assert_non_null(strstr(name, "NVIDIA") ? name : strstr(name, "Tesla"));
        }
        assert_int_equal(api.nvmlShutdown(), NVML_SUCCESS);
    }
}

/* ---- values ---- */

static void test_nvml_sim_reports_scenario_values(void **state) {
    (void)state;
    init_with(full_gpu);
    nvmlDevice_t h = handle(0);
    char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    assert_int_equal(api.nvmlDeviceGetUUID(h, buf, sizeof buf), NVML_SUCCESS);
    assert_string_equal(buf, "GPU-11111111-2222-3333-4444-555555555555");
    assert_int_equal(api.nvmlDeviceGetUUID(h, buf, 10), NVML_ERROR_INSUFFICIENT_SIZE);
    assert_int_equal(api.nvmlDeviceGetName(h, buf, sizeof buf), NVML_SUCCESS);
    assert_string_equal(buf, "NVIDIA H100 80GB HBM3");
    assert_int_equal(api.nvmlDeviceGetName(h, buf, 21), NVML_ERROR_INSUFFICIENT_SIZE);

    nvmlUtilization_t u = {0, 0};
    assert_int_equal(api.nvmlDeviceGetUtilizationRates(h, &u), NVML_SUCCESS);
    assert_int_equal(u.gpu, 37);
    assert_int_equal(u.memory, 12);

    nvmlMemory_t m1;
    assert_int_equal(api.nvmlDeviceGetMemoryInfo(h, &m1), NVML_SUCCESS);
    assert_true(m1.total == 1000000 && m1.used == 250000 && m1.free == 750000);
    nvmlMemory_v2_t m2 = {.version = nvmlMemory_v2};
    assert_int_equal(api.nvmlDeviceGetMemoryInfo_v2(h, &m2), NVML_SUCCESS);
    assert_true(m2.total == 1000000 && m2.reserved == 50000 && m2.used == 200000 &&
                m2.free == 750000);
    m2.version = 2; /* the classic mistake: NVML answers FUNCTION_NOT_FOUND */
    assert_int_equal(api.nvmlDeviceGetMemoryInfo_v2(h, &m2), NVML_ERROR_FUNCTION_NOT_FOUND);

    nvmlTemperature_t tv = {.version = nvmlTemperature_v1, .sensorType = NVML_TEMPERATURE_GPU};
    assert_int_equal(api.nvmlDeviceGetTemperatureV(h, &tv), NVML_SUCCESS);
    assert_int_equal(tv.temperature, 51);
    tv.version = 1;
    assert_int_equal(api.nvmlDeviceGetTemperatureV(h, &tv), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    unsigned v = 0;
    assert_int_equal(api.nvmlDeviceGetTemperature(h, NVML_TEMPERATURE_GPU, &v), NVML_SUCCESS);
    assert_int_equal(v, 51);
    assert_int_equal(api.nvmlDeviceGetPowerUsage(h, &v), NVML_SUCCESS);
    assert_int_equal(v, 312000);
    assert_int_equal(api.nvmlDeviceGetEnforcedPowerLimit(h, &v), NVML_SUCCESS);
    assert_int_equal(v, 700000);
    assert_int_equal(api.nvmlDeviceGetPowerManagementLimit(h, &v), NVML_SUCCESS);
    assert_int_equal(v, 700000);
    assert_int_equal(api.nvmlDeviceGetPcieThroughput(h, NVML_PCIE_UTIL_TX_BYTES, &v), NVML_SUCCESS);
    assert_int_equal(v, 1200);
    assert_int_equal(api.nvmlDeviceGetPcieThroughput(h, NVML_PCIE_UTIL_RX_BYTES, &v), NVML_SUCCESS);
    assert_int_equal(v, 800);
    assert_int_equal(api.nvmlDeviceGetClockInfo(h, NVML_CLOCK_SM, &v), NVML_SUCCESS);
    assert_int_equal(v, 1980);
    assert_int_equal(api.nvmlDeviceGetClockInfo(h, NVML_CLOCK_MEM, &v), NVML_ERROR_NOT_SUPPORTED);
    unsigned long long reasons = 0;
    assert_int_equal(api.nvmlDeviceGetCurrentClocksEventReasons(h, &reasons), NVML_SUCCESS);
    assert_true(reasons == 5);
    assert_int_equal(api.nvmlDeviceGetCurrentClocksThrottleReasons(h, &reasons), NVML_SUCCESS);
    assert_true(reasons == 5);
    unsigned long long energy = 0;
    assert_int_equal(api.nvmlDeviceGetTotalEnergyConsumption(h, &energy), NVML_SUCCESS);
    assert_true(energy >= 1000);
}

static void test_nvml_sim_pci_info_layouts(void **state) {
    (void)state;
    init_with(full_gpu);
    nvmlDevice_t h = handle(0);
    nvmlPciInfo_t pci;
    memset(&pci, 0xAB, sizeof pci);
    assert_int_equal(api.nvmlDeviceGetPciInfo_v3(h, &pci), NVML_SUCCESS);
    assert_string_equal(pci.busId, "00000001:17:03.0");
    assert_string_equal(pci.busIdLegacy, "0001:17:03.0");
    assert_int_equal(pci.domain, 1);
    assert_int_equal(pci.bus, 0x17);
    assert_int_equal(pci.device, 3);
    assert_int_equal(pci.pciDeviceId, 0x233010DE);

    /* The old symbols write the 36 bytes that line up, nothing past them. */
    unsigned char *raw = (unsigned char *)&pci;
    memset(&pci, 0xAB, sizeof pci);
    assert_int_equal(api.nvmlDeviceGetPciInfo_v2(h, &pci), NVML_SUCCESS);
    assert_string_equal(pci.busIdLegacy, "0001:17:03.0");
    assert_int_equal(pci.bus, 0x17);
    for (size_t i = offsetof(nvmlPciInfo_t, busId); i < sizeof pci; i++)
        assert_int_equal(raw[i], 0xAB);
    memset(&pci, 0xAB, sizeof pci);
    assert_int_equal(api.nvmlDeviceGetPciInfo(h, &pci), NVML_SUCCESS);
    assert_int_equal(pci.device, 3);
    for (size_t i = offsetof(nvmlPciInfo_t, busId); i < sizeof pci; i++)
        assert_int_equal(raw[i], 0xAB);
}

static void test_nvml_sim_absent_values_are_not_supported(void **state) {
    (void)state;
    init_with(ONE_GPU("\"memory_total_bytes\": 1000, \"values\": {\"gpu_util\": 5}"));
    nvmlDevice_t h = handle(0);
    unsigned v;
    nvmlUtilization_t u;
    nvmlMemory_t m;
    unsigned long long ull;
    nvmlGpmSupport_t gs = {.version = NVML_GPM_SUPPORT_VERSION};
    assert_int_equal(api.nvmlDeviceGetUtilizationRates(h, &u), NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(api.nvmlDeviceGetMemoryInfo(h, &m), NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(api.nvmlDeviceGetTemperature(h, NVML_TEMPERATURE_GPU, &v),
                     NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(api.nvmlDeviceGetPowerUsage(h, &v), NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(api.nvmlDeviceGetEnforcedPowerLimit(h, &v), NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(api.nvmlDeviceGetTotalEnergyConsumption(h, &ull), NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(api.nvmlDeviceGetCurrentClocksEventReasons(h, &ull), NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(api.nvmlDeviceGetMigMode(h, &v, &v), NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(api.nvmlGpmQueryDeviceSupport(h, &gs), NVML_SUCCESS);
    assert_int_equal(gs.isSupportedDevice, 0);
    nvmlGpmSample_t s;
    assert_int_equal(api.nvmlGpmSampleAlloc(&s), NVML_SUCCESS);
    assert_int_equal(api.nvmlGpmSampleGet(h, s), NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(api.nvmlGpmSampleFree(s), NVML_SUCCESS);

    nvmlFieldValue_t f[2] = {
        {.fieldId = NVML_FI_DEV_NVLINK_LINK_COUNT},
        {.fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, .scopeId = NVML_FI_SCOPE_ALL_LINKS}};
    assert_int_equal(api.nvmlDeviceGetFieldValues(h, 2, f), NVML_SUCCESS);
    assert_int_equal(f[0].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(f[1].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);
}

/* ---- errors, latency ---- */

static void test_nvml_sim_injects_static_and_timed_errors(void **state) {
    (void)state;
    init_with("{\"devices\": [{\"values\": {\"temperature_c\": 40, \"power_mw\": 1000}, "
              "\"errors\": {\"nvmlDeviceGetTemperature\": \"NOT_SUPPORTED\"}, "
              "\"error_timeline\": [{\"at_s\": 0.2, \"call\": \"*\", \"error\": "
              "\"GPU_IS_LOST\"}]}, "
              "{\"errors\": {\"nvmlDeviceGetHandleByIndex_v2\": \"NO_PERMISSION\"}}]}");
    nvmlDevice_t h = handle(0), h1 = NULL;
    unsigned v = 0;
    assert_int_equal(api.nvmlDeviceGetTemperature(h, NVML_TEMPERATURE_GPU, &v),
                     NVML_ERROR_NOT_SUPPORTED);
    /* naming the base call fails its versioned variant too */
    nvmlTemperature_t tv = {.version = nvmlTemperature_v1};
    assert_int_equal(api.nvmlDeviceGetTemperatureV(h, &tv), NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(api.nvmlDeviceGetPowerUsage(h, &v), NVML_SUCCESS);
    assert_int_equal(api.nvmlDeviceGetHandleByIndex_v2(1, &h1), NVML_ERROR_NO_PERMISSION);
    assert_null(h1);
    sleep_ms(250);
    assert_int_equal(api.nvmlDeviceGetPowerUsage(h, &v), NVML_ERROR_GPU_IS_LOST);
    char name[96];
    assert_int_equal(api.nvmlDeviceGetName(h, name, sizeof name), NVML_ERROR_GPU_IS_LOST);
    /* Real NVML still hands out the handle of a lost GPU. */
    assert_true(handle(0) == h);
}

typedef struct {
    nvmlDevice_t h;
    uint64_t took_ms;
    nvmlReturn_t rc;
} slow_call_t;

static void *slow_power_call(void *arg) {
    slow_call_t *c = arg;
    unsigned v;
    uint64_t t0 = now_ms();
    c->rc = api.nvmlDeviceGetPowerUsage(c->h, &v);
    c->took_ms = now_ms() - t0;
    return NULL;
}

static void test_nvml_sim_latency_blocks_only_the_slow_call(void **state) {
    (void)state;
    init_with(ONE_GPU("\"values\": {\"power_mw\": 1000, \"temperature_c\": 40}, "
                      "\"latency_ms\": {\"nvmlDeviceGetPowerUsage\": 200}"));
    slow_call_t c = {.h = handle(0)};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, slow_power_call, &c), 0);
    sleep_ms(30);
    unsigned v;
    uint64_t t0 = now_ms();
    assert_int_equal(api.nvmlDeviceGetTemperature(c.h, NVML_TEMPERATURE_GPU, &v), NVML_SUCCESS);
    uint64_t fast = now_ms() - t0;
    pthread_join(th, NULL);
    assert_int_equal(c.rc, NVML_SUCCESS);
    assert_true(c.took_ms >= 200);
    if (fast >= 100)
        fail_msg("a concurrent call took %llu ms", (unsigned long long)fast);
}

/* ---- missing symbols through dlsym ---- */

static void test_nvml_sim_missing_symbols_are_null_in_dlsym(void **state) {
    (void)state;
    use_scenario("{\"missing_symbols\": [\"nvmlDeviceGetMemoryInfo_v2\", \"nvmlGpmSampleGet\"], "
                 "\"devices\": []}");
    assert_null(bind("nvmlDeviceGetMemoryInfo_v2"));
    assert_null(bind("nvmlGpmSampleGet"));
    assert_non_null(bind("nvmlDeviceGetMemoryInfo"));
    assert_non_null(bind("nvmlInit_v2"));
    assert_non_null(bind("nvmlErrorString"));
    use_scenario("{\"devices\": []}");
    assert_non_null(bind("nvmlDeviceGetMemoryInfo_v2"));

    const char *src = getenv("KGS_SOURCE_DIR");
    if (src) {
        char path[4096];
        snprintf(path, sizeof path, "%s/sim/scenarios/old-driver.json", src);
        setenv("NVML_SIM_SCENARIO", path, 1);
        assert_null(bind("nvmlDeviceGetTemperatureV"));
        assert_null(bind("nvmlDeviceGetCurrentClocksEventReasons"));
        assert_null(bind("nvmlGpmMetricsGet"));
        assert_non_null(bind("nvmlDeviceGetCurrentClocksThrottleReasons"));
        assert_non_null(bind("nvmlDeviceGetTemperature"));
    }
}

/* ---- NVLink, energy ---- */

static void test_nvml_sim_nvlink_counters_increase(void **state) {
    (void)state;
    init_with(full_gpu);
    nvmlDevice_t h = handle(0);
    nvmlFieldValue_t f[5] = {
        {.fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, .scopeId = NVML_FI_SCOPE_ALL_LINKS},
        {.fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, .scopeId = NVML_FI_SCOPE_ALL_LINKS},
        {.fieldId = NVML_FI_DEV_NVLINK_LINK_COUNT},
        {.fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, .scopeId = 4},
        {.fieldId = 7}};
    assert_int_equal(api.nvmlDeviceGetFieldValues(h, 5, f), NVML_SUCCESS);
    assert_int_equal(f[0].nvmlReturn, NVML_SUCCESS);
    assert_int_equal(f[0].valueType, NVML_VALUE_TYPE_UNSIGNED_LONG_LONG);
    unsigned long long tx1 = f[0].value.ullVal;
    long long ts1 = f[0].timestamp;
    assert_true(tx1 >= 4000);
    assert_true(f[1].value.ullVal == 8000); /* rate 0: only the base total */
    assert_int_equal(f[2].nvmlReturn, NVML_SUCCESS);
    assert_int_equal(f[2].value.uiVal, 4);
    assert_int_equal(f[3].nvmlReturn, NVML_ERROR_INVALID_ARGUMENT); /* link 4 of 0-3 */
    assert_int_equal(f[4].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    long long wall_us = (long long)wall.tv_sec * 1000000LL + wall.tv_nsec / 1000;
    assert_true(ts1 <= wall_us && ts1 > wall_us - 5000000LL);

    unsigned long long e1 = 0, e2 = 0;
    assert_int_equal(api.nvmlDeviceGetTotalEnergyConsumption(h, &e1), NVML_SUCCESS);
    sleep_ms(100);
    assert_int_equal(api.nvmlDeviceGetFieldValues(h, 2, f), NVML_SUCCESS);
    unsigned long long tx2 = f[0].value.ullVal;
    /* 100000 KiB/s for >= 0.1 s */
    if (tx2 - tx1 < 9000)
        fail_msg("tx went %llu -> %llu", tx1, tx2);
    assert_true(f[0].timestamp > ts1);
    assert_int_equal(api.nvmlDeviceGetTotalEnergyConsumption(h, &e2), NVML_SUCCESS);
    /* 312000 mW for >= 0.1 s is >= 31200 mJ */
    if (e2 - e1 < 30000)
        fail_msg("energy went %llu -> %llu", e1, e2);

    nvmlFieldValue_t link = {.fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, .scopeId = 1};
    assert_int_equal(api.nvmlDeviceGetFieldValues(h, 1, &link), NVML_SUCCESS);
    assert_true(link.value.ullVal == 2000); /* an even share of 8000 over 4 links */
}

/* ---- GPM ---- */

static void test_nvml_sim_gpm_versions_and_values(void **state) {
    (void)state;
    init_with(ONE_GPU("\"gpm_supported\": true, \"values\": {\"sm_active\": 30.5, "
                      "\"sm_occupancy\": 20.0}, \"timeline\": [{\"at_s\": 0.1, \"values\": "
                      "{\"sm_active\": 80.0}}]"));
    nvmlDevice_t h = handle(0);
    nvmlGpmSupport_t gs = {.version = 0x01000008};
    assert_int_equal(api.nvmlGpmQueryDeviceSupport(h, &gs), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    gs.version = NVML_GPM_SUPPORT_VERSION;
    assert_int_equal(api.nvmlGpmQueryDeviceSupport(h, &gs), NVML_SUCCESS);
    assert_int_equal(gs.isSupportedDevice, 1);

    nvmlGpmSample_t s1, s2;
    assert_int_equal(api.nvmlGpmSampleAlloc(&s1), NVML_SUCCESS);
    assert_int_equal(api.nvmlGpmSampleAlloc(&s2), NVML_SUCCESS);
    static nvmlGpmMetricsGet_t mg;
    memset(&mg, 0, sizeof mg);
    mg.version = NVML_GPM_METRICS_GET_VERSION;
    mg.numMetrics = 4;
    mg.sample1 = s1;
    mg.sample2 = s2;
    mg.metrics[0].metricId = NVML_GPM_METRIC_SM_UTIL;
    mg.metrics[1].metricId = NVML_GPM_METRIC_SM_OCCUPANCY;
    mg.metrics[2].metricId = NVML_GPM_METRIC_DRAM_BW_UTIL;
    mg.metrics[3].metricId = 5;
    /* samples not taken yet */
    assert_int_equal(api.nvmlGpmMetricsGet(&mg), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(api.nvmlGpmSampleGet(h, s1), NVML_SUCCESS);
    assert_int_equal(api.nvmlGpmSampleGet(h, s2), NVML_SUCCESS);
    assert_int_equal(api.nvmlGpmMetricsGet(&mg), NVML_SUCCESS);
    assert_true(mg.metrics[0].value == 30.5);
    sleep_ms(150);
    assert_int_equal(api.nvmlGpmSampleGet(h, s2), NVML_SUCCESS);
    assert_int_equal(api.nvmlGpmMetricsGet(&mg), NVML_SUCCESS);
    assert_int_equal(mg.metrics[0].nvmlReturn, NVML_SUCCESS);
    assert_true(mg.metrics[0].value == 80.0);
    assert_int_equal(mg.metrics[1].nvmlReturn, NVML_SUCCESS);
    assert_true(mg.metrics[1].value == 20.0);
    assert_int_equal(mg.metrics[2].nvmlReturn, NVML_ERROR_NOT_SUPPORTED); /* absent */
    assert_int_equal(mg.metrics[3].nvmlReturn, NVML_ERROR_NOT_SUPPORTED); /* not modelled */
    mg.version = 0x01000000 | (unsigned)sizeof mg;
    assert_int_equal(api.nvmlGpmMetricsGet(&mg), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    assert_int_equal(api.nvmlGpmSampleFree(s1), NVML_SUCCESS);
    assert_int_equal(api.nvmlGpmSampleFree(s2), NVML_SUCCESS);
}

/* ---- MIG ---- */

static void test_nvml_sim_walks_mig_devices(void **state) {
    (void)state;
    const char *src = getenv("KGS_SOURCE_DIR");
    if (!src)
        skip();
    char path[4096];
    snprintf(path, sizeof path, "%s/sim/scenarios/mig-a100.json", src);
    setenv("NVML_SIM_SCENARIO", path, 1);
    assert_int_equal(api.nvmlInit_v2(), NVML_SUCCESS);
    nvmlDevice_t parent = handle(0);
    unsigned cur = 9, pend = 9, max = 0;
    assert_int_equal(api.nvmlDeviceGetMigMode(parent, &cur, &pend), NVML_SUCCESS);
    assert_int_equal(cur, NVML_DEVICE_MIG_ENABLE);
    assert_int_equal(pend, NVML_DEVICE_MIG_ENABLE);
    assert_int_equal(api.nvmlDeviceGetMaxMigDeviceCount(parent, &max), NVML_SUCCESS);
    assert_int_equal(max, 7);
    nvmlUtilization_t u;
    assert_int_equal(api.nvmlDeviceGetUtilizationRates(parent, &u), NVML_ERROR_NOT_SUPPORTED);
    unsigned id;
    assert_int_equal(api.nvmlDeviceGetGpuInstanceId(parent, &id), NVML_ERROR_INVALID_ARGUMENT);

    static const char *const names[] = {"NVIDIA A100-SXM4-80GB MIG 3g.40gb",
                                        "NVIDIA A100-SXM4-80GB MIG 2g.20gb",
                                        "NVIDIA A100-SXM4-80GB MIG 1g.10gb"};
    static const unsigned slices[] = {3, 2, 1};
    unsigned found = 0;
    for (unsigned i = 0; i < max; i++) {
        nvmlDevice_t mig = NULL;
        nvmlReturn_t rc = api.nvmlDeviceGetMigDeviceHandleByIndex(parent, i, &mig);
        if (rc == NVML_ERROR_NOT_FOUND)
            continue;
        assert_int_equal(rc, NVML_SUCCESS);
        char buf[96];
        assert_int_equal(api.nvmlDeviceGetName(mig, buf, sizeof buf), NVML_SUCCESS);
        assert_string_equal(buf, names[found]);
        assert_int_equal(api.nvmlDeviceGetUUID(mig, buf, sizeof buf), NVML_SUCCESS);
        assert_memory_equal(buf, "MIG-", 4);
        nvmlDeviceAttributes_t a;
        assert_int_equal(api.nvmlDeviceGetAttributes_v2(mig, &a), NVML_SUCCESS);
        assert_int_equal(a.gpuInstanceSliceCount, slices[found]);
        assert_int_equal(a.computeInstanceSliceCount, slices[found]);
        assert_true(a.memorySizeMB > 0);
        nvmlMemory_t m;
        assert_int_equal(api.nvmlDeviceGetMemoryInfo(mig, &m), NVML_SUCCESS);
        assert_true(m.total == a.memorySizeMB << 20);
        assert_int_equal(api.nvmlDeviceGetGpuInstanceId(mig, &id), NVML_SUCCESS);
        assert_int_equal(api.nvmlDeviceGetComputeInstanceId(mig, &id), NVML_SUCCESS);
        assert_int_equal(api.nvmlDeviceGetUtilizationRates(mig, &u), NVML_ERROR_NOT_SUPPORTED);
        found++;
    }
    assert_int_equal(found, 3);
    nvmlDevice_t mig;
    assert_int_equal(api.nvmlDeviceGetMigDeviceHandleByIndex(parent, 3, &mig),
                     NVML_ERROR_NOT_FOUND);
    assert_int_equal(api.nvmlDeviceGetMigDeviceHandleByIndex(parent, 7, &mig),
                     NVML_ERROR_INVALID_ARGUMENT);

    nvmlDevice_t plain = handle(1);
    assert_int_equal(api.nvmlDeviceGetMigMode(plain, &cur, &pend), NVML_SUCCESS);
    assert_int_equal(cur, NVML_DEVICE_MIG_DISABLE);
    assert_int_equal(api.nvmlDeviceGetMaxMigDeviceCount(plain, &max), NVML_SUCCESS);
    assert_int_equal(max, 0);
    assert_int_equal(api.nvmlDeviceGetUtilizationRates(plain, &u), NVML_SUCCESS);
    assert_int_equal(u.gpu, 41);
}

static void test_nvml_sim_gpm_samples_a_mig_instance(void **state) {
    (void)state;
    init_with(ONE_GPU("\"gpm_supported\": true, \"values\": {\"sm_active\": 10}, "
                      "\"mig\": {\"enabled\": true, \"instances\": [{\"profile\": \"3g.40gb\", "
                      "\"gpu_instance_id\": 2, \"values\": {\"sm_active\": 40.0}}]}"));
    nvmlDevice_t parent = handle(0);
    nvmlGpmSample_t s1, s2;
    assert_int_equal(api.nvmlGpmSampleAlloc(&s1), NVML_SUCCESS);
    assert_int_equal(api.nvmlGpmSampleAlloc(&s2), NVML_SUCCESS);
    assert_int_equal(api.nvmlGpmMigSampleGet(parent, 5, s1), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(api.nvmlGpmMigSampleGet(parent, 2, s1), NVML_SUCCESS);
    assert_int_equal(api.nvmlGpmMigSampleGet(parent, 2, s2), NVML_SUCCESS);
    static nvmlGpmMetricsGet_t mg;
    memset(&mg, 0, sizeof mg);
    mg.version = NVML_GPM_METRICS_GET_VERSION;
    mg.numMetrics = 1;
    mg.sample1 = s1;
    mg.sample2 = s2;
    mg.metrics[0].metricId = NVML_GPM_METRIC_SM_UTIL;
    assert_int_equal(api.nvmlGpmMetricsGet(&mg), NVML_SUCCESS);
    assert_true(mg.metrics[0].value == 40.0);
    assert_int_equal(api.nvmlGpmSampleGet(parent, s2), NVML_SUCCESS);
    /* samples of different targets do not pair */
    assert_int_equal(api.nvmlGpmMetricsGet(&mg), NVML_ERROR_INVALID_ARGUMENT);
    assert_int_equal(api.nvmlGpmSampleFree(s1), NVML_SUCCESS);
    assert_int_equal(api.nvmlGpmSampleFree(s2), NVML_SUCCESS);
}

/* ---- live reload ---- */

static void test_nvml_sim_reloads_renamed_scenario(void **state) {
    (void)state;
    init_with("{\"devices\": [{\"values\": {\"gpu_util\": 10, \"mem_util\": 1}}, {}]}");
    nvmlDevice_t h0 = handle(0), h1 = handle(1);
    nvmlUtilization_t u;
    assert_int_equal(api.nvmlDeviceGetUtilizationRates(h0, &u), NVML_SUCCESS);
    assert_int_equal(u.gpu, 10);

    rewrite_scenario("{\"devices\": [{\"values\": {\"gpu_util\": 90, \"mem_util\": 1}}]}");
    assert_int_equal(api.nvmlDeviceGetUtilizationRates(h0, &u), NVML_SUCCESS);
    assert_int_equal(u.gpu, 90);
    unsigned count = 0;
    assert_int_equal(api.nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
    assert_int_equal(count, 1);
    char name[96];
    assert_int_equal(api.nvmlDeviceGetName(h1, name, sizeof name), NVML_ERROR_INVALID_ARGUMENT);

    /* A broken file keeps the previous scenario and warns once. */
    int saved;
    capture_stderr_begin(&saved);
    rewrite_scenario("{\"devices\": [{\"values\": {\"gpu_util\": 90, }}]}");
    nvmlReturn_t rc = api.nvmlDeviceGetUtilizationRates(h0, &u);
    sleep_ms(15);
    nvmlReturn_t rc2 = api.nvmlDeviceGetUtilizationRates(h0, &u);
    const char *out = capture_stderr_end(saved);
    assert_int_equal(rc, NVML_SUCCESS);
    assert_int_equal(rc2, NVML_SUCCESS);
    assert_int_equal(u.gpu, 90);
    assert_non_null(strstr(out, "keeping the previous scenario"));
    assert_null(strstr(strstr(out, "keeping") + 1, "keeping"));

    /* Handles stay valid: the device comes back under the same handle. */
    rewrite_scenario("{\"devices\": [{\"values\": {\"gpu_util\": 0, \"mem_util\": 1}}, "
                     "{\"name\": \"back\"}]}");
    assert_int_equal(api.nvmlDeviceGetName(h1, name, sizeof name), NVML_SUCCESS);
    assert_string_equal(name, "back");
}

static void test_nvml_sim_counters_survive_reload(void **state) {
    (void)state;
    init_with(ONE_GPU("\"nvlink_links\": 1, \"values\": {\"nvlink_tx_kib_per_s\": 1000000}"));
    nvmlDevice_t h = handle(0);
    sleep_ms(50);
    nvmlFieldValue_t f = {.fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX,
                          .scopeId = NVML_FI_SCOPE_ALL_LINKS};
    assert_int_equal(api.nvmlDeviceGetFieldValues(h, 1, &f), NVML_SUCCESS);
    unsigned long long before = f.value.ullVal;
    assert_true(before >= 50000);
    rewrite_scenario(ONE_GPU("\"nvlink_links\": 1, \"values\": {\"nvlink_tx_kib_per_s\": 0}"));
    assert_int_equal(api.nvmlDeviceGetFieldValues(h, 1, &f), NVML_SUCCESS);
    assert_true(f.value.ullVal >= before); /* a lower rate never makes it go back */
}

static void test_nvml_sim_running_processes_follow_nvml_protocol_and_layouts(void **state) {
    (void)state;
    init_with(ONE_GPU("\"processes\": [{\"pid\": 100, \"sm_util\": 30, \"mem_util\": 5,"
                      " \"used_memory_bytes\": 1048576}, {\"pid\": 200},"
                      " {\"pid\": 300, \"type\": \"graphics\", \"used_memory_bytes\": 7}]"));
    nvmlDevice_t h = handle(0);
    /* Sizing: 0 and NULL -> INSUFFICIENT_SIZE with the count. */
    unsigned n = 0;
    assert_int_equal(api.nvmlDeviceGetComputeRunningProcesses_v3(h, &n, NULL),
                     NVML_ERROR_INSUFFICIENT_SIZE);
    assert_int_equal(n, 2);
    nvmlProcessInfo_v2_t p2[4];
    n = 1;
    assert_int_equal(api.nvmlDeviceGetComputeRunningProcesses_v2(h, &n, p2),
                     NVML_ERROR_INSUFFICIENT_SIZE);
    assert_int_equal(n, 2);
    n = 4;
    assert_int_equal(api.nvmlDeviceGetComputeRunningProcesses_v3(h, &n, p2), NVML_SUCCESS);
    assert_int_equal(n, 2);
    assert_int_equal(p2[0].pid, 100);
    assert_int_equal(p2[0].usedGpuMemory, 1048576);
    assert_int_equal(p2[0].gpuInstanceId, 0xFFFFFFFFu);
    assert_int_equal(p2[0].computeInstanceId, 0xFFFFFFFFu);
    assert_int_equal(p2[1].pid, 200);
    assert_true(p2[1].usedGpuMemory == NVML_VALUE_NOT_AVAILABLE_ULL);
    /* The unversioned call writes 16-byte elements. */
    nvmlProcessInfo_v1_t p1[4];
    memset(p1, 0xAB, sizeof p1);
    n = 4;
    assert_int_equal(api.nvmlDeviceGetComputeRunningProcesses(h, &n, p1), NVML_SUCCESS);
    assert_int_equal(n, 2);
    assert_int_equal(p1[1].pid, 200);
    assert_int_equal(p1[2].pid, 0xABABABABu); /* untouched beyond the count */
    n = 4;
    assert_int_equal(api.nvmlDeviceGetGraphicsRunningProcesses_v3(h, &n, p2), NVML_SUCCESS);
    assert_int_equal(n, 1);
    assert_int_equal(p2[0].pid, 300);
    n = 0;
    assert_int_equal(api.nvmlDeviceGetMPSComputeRunningProcesses_v3(h, &n, NULL), NVML_SUCCESS);
    assert_int_equal(n, 0);
}

static void test_nvml_sim_process_utilization_samples(void **state) {
    (void)state;
    init_with(ONE_GPU("\"processes\": [{\"pid\": 100, \"sm_util\": 30, \"mem_util\": 5},"
                      " {\"pid\": 200, \"sm_util\": 0}, {\"pid\": 300, \"sm_util\": 12}]"));
    nvmlDevice_t h = handle(0);
    unsigned n = 0;
    assert_int_equal(api.nvmlDeviceGetProcessUtilization(h, NULL, &n, 0),
                     NVML_ERROR_INSUFFICIENT_SIZE);
    assert_int_equal(n, 2); /* only active processes have samples */
    nvmlProcessUtilizationSample_t u[4];
    n = 4;
    assert_int_equal(api.nvmlDeviceGetProcessUtilization(h, u, &n, 0), NVML_SUCCESS);
    assert_int_equal(n, 2);
    assert_int_equal(u[0].pid, 100);
    assert_int_equal(u[0].smUtil, 30);
    assert_int_equal(u[0].memUtil, 5);
    assert_int_equal(u[1].pid, 300);
    assert_true(u[1].timeStamp > 0);
    n = 4; /* nothing newer than a timestamp in the future */
    assert_int_equal(api.nvmlDeviceGetProcessUtilization(h, u, &n, u[1].timeStamp + 60000000ull),
                     NVML_ERROR_NOT_FOUND);
    rewrite_scenario(ONE_GPU("\"processes\": [{\"pid\": 100}]"));
    n = 4;
    assert_int_equal(api.nvmlDeviceGetProcessUtilization(h, u, &n, 0), NVML_ERROR_NOT_FOUND);
}

static void test_nvml_sim_processes_per_mig_handle(void **state) {
    (void)state;
    init_with(ONE_GPU("\"memory_total_bytes\": 85899345920, \"mig\": {\"enabled\": true,"
                      " \"instances\": [{\"profile\": \"3g.40gb\", \"gpu_instance_id\": 2},"
                      " {\"profile\": \"3g.40gb\", \"gpu_instance_id\": 1}]},"
                      " \"processes\": [{\"pid\": 10, \"mig_index\": 1,"
                      " \"used_memory_bytes\": 5}, {\"pid\": 11, \"mig_index\": 0}]"));
    nvmlDevice_t parent = handle(0), mig = NULL;
    assert_int_equal(api.nvmlDeviceGetMigDeviceHandleByIndex(parent, 1, &mig), NVML_SUCCESS);
    nvmlProcessInfo_v2_t p2[4];
    unsigned n = 4;
    assert_int_equal(api.nvmlDeviceGetComputeRunningProcesses_v3(mig, &n, p2), NVML_SUCCESS);
    assert_int_equal(n, 1);
    assert_int_equal(p2[0].pid, 10);
    assert_int_equal(p2[0].gpuInstanceId, 1);
    assert_int_equal(p2[0].computeInstanceId, 0);
    n = 4; /* the parent (privileged) lists every instance's */
    assert_int_equal(api.nvmlDeviceGetComputeRunningProcesses_v3(parent, &n, p2), NVML_SUCCESS);
    assert_int_equal(n, 2);
    nvmlProcessUtilizationSample_t u[2];
    n = 2;
    assert_int_equal(api.nvmlDeviceGetProcessUtilization(mig, u, &n, 0), NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(api.nvmlDeviceGetProcessUtilization(parent, u, &n, 0),
                     NVML_ERROR_NOT_SUPPORTED);
}

int main(void) {
#define T(name) cmocka_unit_test_teardown(name, shutdown_all)
    const struct CMUnitTest tests[] = {
        T(test_nvml_sim_calls_before_init_are_uninitialized),
        T(test_nvml_sim_init_is_refcounted),
        T(test_nvml_sim_init_error_fails_every_init),
        T(test_nvml_sim_init_reports_bad_scenarios_on_stderr),
        T(test_nvml_sim_scenario_error_says_why_only_for_file_problems),
        T(test_nvml_sim_system_queries),
        T(test_nvml_sim_every_shipped_scenario_loads),
        T(test_nvml_sim_reports_scenario_values),
        T(test_nvml_sim_pci_info_layouts),
        T(test_nvml_sim_absent_values_are_not_supported),
        T(test_nvml_sim_injects_static_and_timed_errors),
        T(test_nvml_sim_latency_blocks_only_the_slow_call),
        T(test_nvml_sim_missing_symbols_are_null_in_dlsym),
        T(test_nvml_sim_nvlink_counters_increase),
        T(test_nvml_sim_gpm_versions_and_values),
        T(test_nvml_sim_walks_mig_devices),
        T(test_nvml_sim_gpm_samples_a_mig_instance),
        T(test_nvml_sim_reloads_renamed_scenario),
        T(test_nvml_sim_counters_survive_reload),
        T(test_nvml_sim_running_processes_follow_nvml_protocol_and_layouts),
        T(test_nvml_sim_process_utilization_samples),
        T(test_nvml_sim_processes_per_mig_handle),
    };
#undef T
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
