/*
 * nvml_probe - times every NVML call the sampler makes, per device, and
 * says which bound and which the device supports.
 *
 *   nvml_probe [LIBRARY] [REPEATS]
 *
 * LIBRARY defaults to libnvidia-ml.so.1, REPEATS to 20. Prints one line per
 * (device, call): median and max microseconds and the NVML return name.
 * Used by scripts/gpu-check on a machine with a real driver; against the
 * stand-in it checks itself.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/snapshot.h"
#include "nvml/loader.h"

#define MAX_REPEATS 1000

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

typedef nvmlReturn_t (*probe_fn)(const nvml_api_t *a, nvmlDevice_t d, void *scratch);

/* The body is variadic because it contains commas. */
#define PROBE(fname, ...)                                                                          \
    static nvmlReturn_t probe_##fname(const nvml_api_t *a, nvmlDevice_t d, void *scratch) {        \
        (void)scratch;                                                                             \
        if (!a->fname)                                                                             \
            return (nvmlReturn_t)-1;                                                               \
        __VA_ARGS__                                                                                \
    }

PROBE(nvmlDeviceGetUUID, {
    char b[96];
    return a->nvmlDeviceGetUUID(d, b, sizeof b);
})
PROBE(nvmlDeviceGetName, {
    char b[96];
    return a->nvmlDeviceGetName(d, b, sizeof b);
})
PROBE(nvmlDeviceGetPciInfo_v3, {
    nvmlPciInfo_t p;
    return a->nvmlDeviceGetPciInfo_v3(d, &p);
})
PROBE(nvmlDeviceGetMigMode, {
    unsigned c, p;
    return a->nvmlDeviceGetMigMode(d, &c, &p);
})
PROBE(nvmlDeviceGetUtilizationRates, {
    nvmlUtilization_t u;
    return a->nvmlDeviceGetUtilizationRates(d, &u);
})
PROBE(nvmlDeviceGetMemoryInfo_v2, {
    nvmlMemory_v2_t m = {.version = nvmlMemory_v2};
    return a->nvmlDeviceGetMemoryInfo_v2(d, &m);
})
PROBE(nvmlDeviceGetMemoryInfo, {
    nvmlMemory_t m;
    return a->nvmlDeviceGetMemoryInfo(d, &m);
})
PROBE(nvmlDeviceGetTemperatureV, {
    nvmlTemperature_t t = {.version = nvmlTemperature_v1, .sensorType = NVML_TEMPERATURE_GPU};
    return a->nvmlDeviceGetTemperatureV(d, &t);
})
PROBE(nvmlDeviceGetTemperature, {
    unsigned t;
    return a->nvmlDeviceGetTemperature(d, NVML_TEMPERATURE_GPU, &t);
})
PROBE(nvmlDeviceGetPowerUsage, {
    unsigned v;
    return a->nvmlDeviceGetPowerUsage(d, &v);
})
PROBE(nvmlDeviceGetEnforcedPowerLimit, {
    unsigned v;
    return a->nvmlDeviceGetEnforcedPowerLimit(d, &v);
})
PROBE(nvmlDeviceGetTotalEnergyConsumption, {
    unsigned long long v;
    return a->nvmlDeviceGetTotalEnergyConsumption(d, &v);
})
PROBE(nvmlDeviceGetPcieThroughput, {
    unsigned v;
    return a->nvmlDeviceGetPcieThroughput(d, NVML_PCIE_UTIL_TX_BYTES, &v);
})
PROBE(nvmlDeviceGetClockInfo, {
    unsigned v;
    return a->nvmlDeviceGetClockInfo(d, NVML_CLOCK_SM, &v);
})
PROBE(nvmlDeviceGetCurrentClocksEventReasons, {
    unsigned long long v;
    return a->nvmlDeviceGetCurrentClocksEventReasons(d, &v);
})
PROBE(nvmlDeviceGetCurrentClocksThrottleReasons, {
    unsigned long long v;
    return a->nvmlDeviceGetCurrentClocksThrottleReasons(d, &v);
})
PROBE(nvmlDeviceGetFieldValues, {
    nvmlFieldValue_t fv[2] = {
        {.fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, .scopeId = NVML_FI_SCOPE_ALL_LINKS},
        {.fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, .scopeId = NVML_FI_SCOPE_ALL_LINKS}};
    nvmlReturn_t r = a->nvmlDeviceGetFieldValues(d, 2, fv);
    return r != NVML_SUCCESS ? r : fv[0].nvmlReturn;
})
PROBE(nvmlGpmQueryDeviceSupport, {
    nvmlGpmSupport_t s = {.version = NVML_GPM_SUPPORT_VERSION};
    nvmlReturn_t r = a->nvmlGpmQueryDeviceSupport(d, &s);
    return r != NVML_SUCCESS ? r : (s.isSupportedDevice ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED);
})
PROBE(nvmlGpmSampleGet, { return a->nvmlGpmSampleGet(d, *(nvmlGpmSample_t *)scratch); })

static const struct {
    const char *name;
    probe_fn fn;
} probes[] = {
#define P(n)                                                                                       \
    { #n, probe_##n }
    P(nvmlDeviceGetUUID),
    P(nvmlDeviceGetName),
    P(nvmlDeviceGetPciInfo_v3),
    P(nvmlDeviceGetMigMode),
    P(nvmlDeviceGetUtilizationRates),
    P(nvmlDeviceGetMemoryInfo_v2),
    P(nvmlDeviceGetMemoryInfo),
    P(nvmlDeviceGetTemperatureV),
    P(nvmlDeviceGetTemperature),
    P(nvmlDeviceGetPowerUsage),
    P(nvmlDeviceGetEnforcedPowerLimit),
    P(nvmlDeviceGetTotalEnergyConsumption),
    P(nvmlDeviceGetPcieThroughput),
    P(nvmlDeviceGetClockInfo),
    P(nvmlDeviceGetCurrentClocksEventReasons),
    P(nvmlDeviceGetCurrentClocksThrottleReasons),
    P(nvmlDeviceGetFieldValues),
    P(nvmlGpmQueryDeviceSupport),
    P(nvmlGpmSampleGet),
#undef P
};

int main(int argc, char **argv) {
    const char *lib = argc > 1 ? argv[1] : NULL;
    int repeats = argc > 2 ? atoi(argv[2]) : 20;
    if (repeats < 1 || repeats > MAX_REPEATS) {
        fprintf(stderr, "nvml_probe: REPEATS must be 1..%d\n", MAX_REPEATS);
        return 2;
    }
    char err[512];
    nvml_loader_t *l;
    if (nvml_loader_open(lib, &l, err, sizeof err) != 0) {
        fprintf(stderr, "nvml_probe: %s\n", err);
        return 1;
    }
    const nvml_api_t *a = nvml_loader_api(l);
    char missing[4096];
    int nmissing = nvml_loader_missing(l, missing, sizeof missing);
    printf("library %s: %d symbols missing%s%s\n", nvml_loader_path(l), nmissing,
           nmissing ? ": " : "", missing);
    nvmlReturn_t r = a->nvmlInit_v2 ? a->nvmlInit_v2() : a->nvmlInit();
    if (r != NVML_SUCCESS) {
        fprintf(stderr, "nvml_probe: init: %s\n", nvml_code_name((int)r));
        return 1;
    }
    unsigned count = 0;
    r = a->nvmlDeviceGetCount_v2 ? a->nvmlDeviceGetCount_v2(&count) : a->nvmlDeviceGetCount(&count);
    printf("devices: %u\n", count);
    printf("%-3s %-44s %10s %10s  %s\n", "gpu", "call", "median_us", "max_us", "result");
    nvmlGpmSample_t gs = NULL;
    if (a->nvmlGpmSampleAlloc)
        a->nvmlGpmSampleAlloc(&gs);
    uint64_t *t = calloc((size_t)repeats, sizeof *t);
    for (unsigned i = 0; i < count; i++) {
        nvmlDevice_t d;
        r = a->nvmlDeviceGetHandleByIndex_v2 ? a->nvmlDeviceGetHandleByIndex_v2(i, &d)
                                             : a->nvmlDeviceGetHandleByIndex(i, &d);
        if (r != NVML_SUCCESS) {
            printf("%-3u handle: %s\n", i, nvml_code_name((int)r));
            continue;
        }
        for (size_t p = 0; p < sizeof probes / sizeof probes[0]; p++) {
            if (strcmp(probes[p].name, "nvmlGpmSampleGet") == 0 && !gs)
                continue;
            nvmlReturn_t last = 0;
            for (int k = 0; k < repeats; k++) {
                mono_ns_t t0 = clock_mono_now();
                last = probes[p].fn(a, d, &gs);
                t[k] = clock_mono_now() - t0;
            }
            if ((int)last == -1) {
                printf("%-3u %-44s %10s %10s  symbol missing\n", i, probes[p].name, "-", "-");
                continue;
            }
            qsort(t, (size_t)repeats, sizeof *t, cmp_u64);
            printf("%-3u %-44s %10.1f %10.1f  %s\n", i, probes[p].name,
                   (double)t[repeats / 2] / 1e3, (double)t[repeats - 1] / 1e3,
                   nvml_code_name((int)last));
        }
    }
    free(t);
    if (gs && a->nvmlGpmSampleFree)
        a->nvmlGpmSampleFree(gs);
    a->nvmlShutdown();
    nvml_loader_free(l);
    return 0;
}
