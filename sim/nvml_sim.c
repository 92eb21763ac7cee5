/*
 * nvml_sim.c - libnvml-sim.so, a stand-in for libnvidia-ml.so.1 driven by a
 * JSON scenario (NVML_SIM_SCENARIO; format in sim/README.md).
 *
 * DESIGN
 * NVML's ABI has no context argument, so unlike the rest of the project this
 * library keeps its state in file-scope statics: one mutex-protected
 * sim_state_t (the refcount, the parsed scenario, the clock epoch) plus the
 * handle storage. NVML is documented as thread-safe, and the sampler calls it
 * from its own thread, so every call takes the mutex; a latency_ms sleep
 * happens with the mutex released so a slow call never blocks another
 * thread's call.
 *
 * Handles point into fixed static arrays (SCENARIO_MAX_DEVICES GPUs times
 * SCENARIO_MAX_MIG_INSTANCES MIG slots) that are never freed, so a handle
 * stays valid across live reloads; a handle whose device disappeared in a
 * reload answers INVALID_ARGUMENT.
 *
 * Live reload: each call (under the mutex, at most every 10 ms of
 * CLOCK_MONOTONIC) stat()s the scenario and re-reads it when its device,
 * inode, size or mtime (ns) changed; tests rename(2) a new file over it. A
 * bad file keeps the previous scenario and warns once on stderr. Counters
 * that integrate a rate over time (energy from power_mw, NVLink from
 * nvlink_*_kib_per_s) carry their accumulated integral across a reload, so
 * they never jump backwards when a test lowers a rate.
 *
 * missing_symbols: every exported NVML function is a GNU indirect function
 * (IFUNC). dlsym() runs its resolver, which reads the scenario named by
 * NVML_SIM_SCENARIO (re-read only when that file changes) and returns NULL
 * for a listed symbol, so dlsym() returns NULL exactly as for a driver that
 * lacks it. The library never calls its exported names itself (only the
 * static sim_* implementations), so no relocation runs a resolver while the
 * library is being loaded.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "nvml/nvml_abi.h"
#include "scenario.h"

#define SIM_EXPORT __attribute__((visibility("default")))
#define SIM_RELOAD_CHECK_NS 10000000ull  /* 10 ms */
#define SIM_GPM_SAMPLE_MAGIC 0x47504d53u /* "GPMS" */
#define SIM_MAX_MIG_DEVICE_COUNT 7u

struct nvmlDevice_st {
    unsigned char unused; /* identity is the address: see sim_handle_resolve() */
};

struct nvmlGpmSample_st {
    unsigned magic;
    int taken;
    unsigned dev;
    int mig; /* MIG slot, or -1 for the whole GPU */
    double t_s;
};

typedef struct {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
} sim_file_id_t;

/* The counters that integrate a rate; see sim_counter_integral(). */
enum { SIM_INT_ENERGY, SIM_INT_NVLINK_TX, SIM_INT_NVLINK_RX, SIM_INT_COUNT };
static const scenario_value_t sim_int_rate[SIM_INT_COUNT] = {
    SCENARIO_V_POWER_MW, SCENARIO_V_NVLINK_TX_KIB_PER_S, SCENARIO_V_NVLINK_RX_KIB_PER_S};

typedef struct {
    pthread_mutex_t lock;
    unsigned refcount;
    scenario_t *sc; /* non-NULL exactly while refcount > 0 */
    char path[PATH_MAX];
    sim_file_id_t file;
    uint64_t epoch_ns;      /* CLOCK_MONOTONIC at the first successful init */
    uint64_t last_check_ns; /* of the scenario file */
    /* integral = carry + I(t) - I(carry_from_s), per device slot */
    double carry[SCENARIO_MAX_DEVICES][SIM_INT_COUNT];
    double carry_from_s[SCENARIO_MAX_DEVICES];
    /* Why the last init from refcount 0 failed because of the scenario file
     * itself (unset, unreadable, invalid), or "" when it did not, and the
     * code that init returned: nvmlErrorString(scenario_rc) says it, the
     * way a driver's error reaches its caller (NVML's own error path). */
    char scenario_error[PATH_MAX + 640];
    nvmlReturn_t scenario_rc;
    char error_text[PATH_MAX + 1024]; /* nvmlErrorString's answer then */
} sim_state_t;

static sim_state_t sim = {.lock = PTHREAD_MUTEX_INITIALIZER};
static struct nvmlDevice_st sim_gpu_handles[SCENARIO_MAX_DEVICES];
static struct nvmlDevice_st sim_mig_handles[SCENARIO_MAX_DEVICES][SCENARIO_MAX_MIG_INSTANCES];

/* ---- clock and file identity ---- */

static uint64_t sim_mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double sim_now_s(void) {
    return (double)(sim_mono_ns() - sim.epoch_ns) / 1e9;
}

static int sim_file_id(const char *path, sim_file_id_t *id) {
    struct stat st;
    if (stat(path, &st) != 0)
        return -1;
    memset(id, 0, sizeof *id);
    id->dev = st.st_dev;
    id->ino = st.st_ino;
    id->size = st.st_size;
    id->mtime = st.st_mtim;
    return 0;
}

static int sim_file_id_equal(const sim_file_id_t *a, const sim_file_id_t *b) {
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

static void sim_sleep_ms(double ms) {
    struct timespec ts = {.tv_sec = (time_t)(ms / 1000.0),
                          .tv_nsec = (long)(fmod(ms, 1000.0) * 1e6)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ---- integrated counters ---- */

static double sim_counter_integral(unsigned i, int which, double t_s) {
    const scenario_device_t *d = &sim.sc->devices[i];
    scenario_value_t key = sim_int_rate[which];
    return sim.carry[i][which] + scenario_device_integral(sim.sc, d, key, t_s) -
           scenario_device_integral(sim.sc, d, key, sim.carry_from_s[i]);
}

/* Swaps in `next` (taken), carrying each device slot's integrals. */
static void sim_swap_locked(scenario_t *next) {
    double t = sim_now_s();
    for (unsigned i = 0; i < SCENARIO_MAX_DEVICES; i++) {
        for (int k = 0; k < SIM_INT_COUNT; k++)
            sim.carry[i][k] = i < sim.sc->device_count ? sim_counter_integral(i, k, t) : 0.0;
        sim.carry_from_s[i] = t;
    }
    scenario_free(sim.sc);
    sim.sc = next;
}

static void sim_maybe_reload_locked(void) {
    uint64_t now = sim_mono_ns();
    if (now - sim.last_check_ns < SIM_RELOAD_CHECK_NS)
        return;
    sim.last_check_ns = now;
    sim_file_id_t id;
    if (sim_file_id(sim.path, &id) != 0) {
        sim_file_id_t gone = {0};
        if (!sim_file_id_equal(&sim.file, &gone)) {
            fprintf(stderr, "nvml-sim: scenario %s: stat: %s; keeping the previous scenario\n",
                    sim.path, strerror(errno));
            sim.file = gone;
        }
        return;
    }
    if (sim_file_id_equal(&id, &sim.file))
        return;
    sim.file = id; /* a bad file is reported once, not every 10 ms */
    scenario_t *next;
    char err[512];
    if (scenario_load_file(sim.path, &next, err, sizeof err) != 0) {
        fprintf(stderr, "nvml-sim: scenario %s: %s; keeping the previous scenario\n", sim.path,
                err);
        return;
    }
    sim_swap_locked(next);
}

/* ---- call prologues: lock, init check, reload, handle, latency, errors ---- */

typedef struct {
    unsigned index; /* GPU slot */
    int mig;        /* MIG slot, -1 for the GPU itself */
    const scenario_device_t *dev;
    const scenario_mig_t *m; /* NULL unless mig >= 0 */
    double t_s;
} sim_target_t;

/* Said on stderr with a failure of the scenario file (the stand-in's own
 * voice; its caller sees the failure through nvmlErrorString). */
#define STANDIN_HINT                                                                               \
    "this library is the NVML stand-in, not a driver: point NVML_SIM_SCENARIO at a valid "         \
    "scenario file (examples in sim/scenarios/)"

static nvmlReturn_t sim_end(nvmlReturn_t rc) {
    pthread_mutex_unlock(&sim.lock);
    return rc;
}

/* An init that failed because of the scenario file (sim.scenario_error
 * says why): rc, remembered for nvmlErrorString. Releases the lock. */
static nvmlReturn_t scenario_failed(nvmlReturn_t rc) {
    sim.scenario_rc = rc;
    return sim_end(rc);
}

/* Locks and checks init. SUCCESS: lock held; otherwise released. */
static nvmlReturn_t sim_begin(void) {
    pthread_mutex_lock(&sim.lock);
    if (sim.refcount == 0)
        return sim_end(NVML_ERROR_UNINITIALIZED);
    sim_maybe_reload_locked();
    return NVML_SUCCESS;
}

static nvmlReturn_t sim_handle_resolve(nvmlDevice_t h, sim_target_t *t) {
    uintptr_t p = (uintptr_t)h;
    uintptr_t g0 = (uintptr_t)&sim_gpu_handles[0],
              g1 = (uintptr_t)&sim_gpu_handles[SCENARIO_MAX_DEVICES];
    uintptr_t m0 = (uintptr_t)&sim_mig_handles[0][0];
    uintptr_t m1 = m0 + sizeof sim_mig_handles;
    size_t slot;
    if (p >= g0 && p < g1) {
        slot = (p - g0) / sizeof sim_gpu_handles[0];
        t->index = (unsigned)slot;
        t->mig = -1;
    } else if (p >= m0 && p < m1) {
        slot = (p - m0) / sizeof sim_mig_handles[0][0];
        t->index = (unsigned)(slot / SCENARIO_MAX_MIG_INSTANCES);
        t->mig = (int)(slot % SCENARIO_MAX_MIG_INSTANCES);
    } else {
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (t->index >= sim.sc->device_count)
        return NVML_ERROR_INVALID_ARGUMENT;
    t->dev = &sim.sc->devices[t->index];
    t->m = NULL;
    if (t->mig >= 0) {
        if (!t->dev->mig_enabled || (size_t)t->mig >= t->dev->mig_count)
            return NVML_ERROR_INVALID_ARGUMENT;
        t->m = &t->dev->mig[t->mig];
    }
    return NVML_SUCCESS;
}

/*
 * The prologue of every per-device call: init, handle, the call's latency
 * (slept with the lock released, then everything re-checked, since a reload
 * or shutdown may have happened meanwhile), then the injected error at the
 * current time. SUCCESS: lock held and *t filled; otherwise released.
 */
static nvmlReturn_t sim_begin_device(int call, nvmlDevice_t h, sim_target_t *t) {
    nvmlReturn_t rc = sim_begin();
    if (rc != NVML_SUCCESS)
        return rc;
    if ((rc = sim_handle_resolve(h, t)) != NVML_SUCCESS)
        return sim_end(rc);
    double latency = t->dev->latency_ms[call];
    if (latency > 0) {
        pthread_mutex_unlock(&sim.lock);
        sim_sleep_ms(latency);
        if ((rc = sim_begin()) != NVML_SUCCESS)
            return rc;
        if ((rc = sim_handle_resolve(h, t)) != NVML_SUCCESS)
            return sim_end(rc);
    }
    t->t_s = sim_now_s();
    int e = scenario_device_error_at(sim.sc, t->dev, call, t->t_s);
    if (e != NVML_SUCCESS)
        return sim_end((nvmlReturn_t)e);
    return NVML_SUCCESS;
}

#define SIM_DEVICE_BEGIN(call, handle, target)                                                     \
    sim_target_t target;                                                                           \
    do {                                                                                           \
        nvmlReturn_t rc_ = sim_begin_device(SCENARIO_CALL_##call, (handle), &target);              \
        if (rc_ != NVML_SUCCESS)                                                                   \
            return rc_;                                                                            \
    } while (0)

static void sim_values(const sim_target_t *t, scenario_values_t *v) {
    if (t->m)
        scenario_mig_values_at(sim.sc, t->m, t->t_s, v);
    else
        scenario_device_values_at(sim.sc, t->dev, t->t_s, v);
}

static int sim_has(const scenario_values_t *v, scenario_value_t k) {
    return (v->present & (1u << k)) != 0;
}

/* Resolves the values and, when `k` is absent, ends with NOT_SUPPORTED. */
#define SIM_REQUIRE_VALUE(t, v, k)                                                                 \
    scenario_values_t v;                                                                           \
    sim_values(&(t), &v);                                                                          \
    if (!sim_has(&v, SCENARIO_V_##k))                                                              \
    return sim_end(NVML_ERROR_NOT_SUPPORTED)

/* ---- init, shutdown, system ---- */

static nvmlReturn_t sim_init(void) {
    pthread_mutex_lock(&sim.lock);
    if (sim.refcount > 0) {
        sim_maybe_reload_locked();
        if (sim.sc->init_error != NVML_SUCCESS)
            return sim_end((nvmlReturn_t)sim.sc->init_error);
        sim.refcount++;
        return sim_end(NVML_SUCCESS);
    }
    sim.scenario_error[0] = '\0';
    const char *path = getenv("NVML_SIM_SCENARIO");
    if (!path || !*path) {
        snprintf(sim.scenario_error, sizeof sim.scenario_error,
                 "NVML_SIM_SCENARIO is not set; point it at a scenario file (see sim/scenarios/)");
        fprintf(stderr, "nvml-sim: %s (%s)\n", sim.scenario_error, STANDIN_HINT);
        return scenario_failed(NVML_ERROR_DRIVER_NOT_LOADED);
    }
    if (strlen(path) >= sizeof sim.path) {
        snprintf(sim.scenario_error, sizeof sim.scenario_error,
                 "scenario path is longer than %zu bytes", sizeof sim.path);
        fprintf(stderr, "nvml-sim: %s (%s)\n", sim.scenario_error, STANDIN_HINT);
        return scenario_failed(NVML_ERROR_DRIVER_NOT_LOADED);
    }
    sim_file_id_t id;
    int have_id = sim_file_id(path, &id) == 0;
    scenario_t *sc;
    char err[512];
    int rc = scenario_load_file(path, &sc, err, sizeof err);
    if (rc != 0) {
        snprintf(sim.scenario_error, sizeof sim.scenario_error, "scenario %s: %s", path, err);
        fprintf(stderr, "nvml-sim: %s (%s)\n", sim.scenario_error, STANDIN_HINT);
        return scenario_failed(have_id ? NVML_ERROR_UNKNOWN : NVML_ERROR_DRIVER_NOT_LOADED);
    }
    /* An init_error the scenario names is a simulated driver failure, not a
     * problem with the file: scenario_error stays empty. */
    if (sc->init_error != NVML_SUCCESS) {
        nvmlReturn_t e = (nvmlReturn_t)sc->init_error;
        scenario_free(sc);
        return sim_end(e);
    }
    snprintf(sim.path, sizeof sim.path, "%s", path);
    memset(&sim.file, 0, sizeof sim.file);
    if (have_id)
        sim.file = id;
    sim.sc = sc;
    sim.refcount = 1;
    sim.epoch_ns = sim_mono_ns();
    sim.last_check_ns = sim.epoch_ns;
    memset(sim.carry, 0, sizeof sim.carry);
    memset(sim.carry_from_s, 0, sizeof sim.carry_from_s);
    return sim_end(NVML_SUCCESS);
}

static nvmlReturn_t sim_nvmlInit_v2(void) {
    return sim_init();
}

static nvmlReturn_t sim_nvmlInit(void) {
    return sim_init();
}

static nvmlReturn_t sim_nvmlInitWithFlags(unsigned int flags) {
    (void)flags; /* NO_GPUS, NO_ATTACH, FORCE_INIT: nothing to attach here */
    return sim_init();
}

static nvmlReturn_t sim_nvmlShutdown(void) {
    pthread_mutex_lock(&sim.lock);
    /* Shutting down more often than init is not an error in NVML. */
    if (sim.refcount > 0 && --sim.refcount == 0) {
        scenario_free(sim.sc);
        sim.sc = NULL;
    }
    return sim_end(NVML_SUCCESS);
}

static nvmlReturn_t sim_nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    nvmlReturn_t rc = sim_begin();
    if (rc != NVML_SUCCESS)
        return rc;
    if (!version)
        return sim_end(NVML_ERROR_INVALID_ARGUMENT);
    if (strlen(sim.sc->driver_version) + 1 > length)
        return sim_end(NVML_ERROR_INSUFFICIENT_SIZE);
    memcpy(version, sim.sc->driver_version, strlen(sim.sc->driver_version) + 1);
    return sim_end(NVML_SUCCESS);
}

static nvmlReturn_t sim_cuda_version(int *out) {
    nvmlReturn_t rc = sim_begin();
    if (rc != NVML_SUCCESS)
        return rc;
    if (!out)
        return sim_end(NVML_ERROR_INVALID_ARGUMENT);
    *out = sim.sc->cuda_driver_version;
    return sim_end(NVML_SUCCESS);
}

static nvmlReturn_t sim_nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion) {
    return sim_cuda_version(cudaDriverVersion);
}

static nvmlReturn_t sim_nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion) {
    return sim_cuda_version(cudaDriverVersion);
}

static nvmlReturn_t sim_count(unsigned int *count) {
    nvmlReturn_t rc = sim_begin();
    if (rc != NVML_SUCCESS)
        return rc;
    if (!count)
        return sim_end(NVML_ERROR_INVALID_ARGUMENT);
    *count = (unsigned)sim.sc->device_count;
    return sim_end(NVML_SUCCESS);
}

static nvmlReturn_t sim_nvmlDeviceGetCount_v2(unsigned int *deviceCount) {
    return sim_count(deviceCount);
}

static nvmlReturn_t sim_nvmlDeviceGetCount(unsigned int *deviceCount) {
    return sim_count(deviceCount);
}

/* By index: the lookup itself may carry a latency or an injected error (for
 * example NO_PERMISSION), but "*" does not cover it: real NVML hands out the
 * handle of a lost GPU and fails its queries. */
static nvmlReturn_t sim_handle_by_index(int call, unsigned index, nvmlDevice_t *out) {
    nvmlReturn_t rc = sim_begin();
    if (rc != NVML_SUCCESS)
        return rc;
    if (!out || index >= sim.sc->device_count)
        return sim_end(NVML_ERROR_INVALID_ARGUMENT);
    pthread_mutex_unlock(&sim.lock);
    sim_target_t t;
    if ((rc = sim_begin_device(call, &sim_gpu_handles[index], &t)) != NVML_SUCCESS)
        return rc;
    *out = &sim_gpu_handles[index];
    return sim_end(NVML_SUCCESS);
}

static nvmlReturn_t sim_nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
    return sim_handle_by_index(SCENARIO_CALL_nvmlDeviceGetHandleByIndex_v2, index, device);
}

static nvmlReturn_t sim_nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device) {
    return sim_handle_by_index(SCENARIO_CALL_nvmlDeviceGetHandleByIndex, index, device);
}

/* ---- identity ---- */

static nvmlReturn_t sim_copy_string(const char *s, char *buf, unsigned int length) {
    if (!buf)
        return NVML_ERROR_INVALID_ARGUMENT;
    size_t n = strlen(s);
    if (n + 1 > length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(buf, s, n + 1);
    return NVML_SUCCESS;
}

static nvmlReturn_t sim_nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
    SIM_DEVICE_BEGIN(nvmlDeviceGetName, device, t);
    if (!t.m)
        return sim_end(sim_copy_string(t.dev->name, name, length));
    char mig_name[NVML_DEVICE_NAME_V2_BUFFER_SIZE + 48];
    snprintf(mig_name, sizeof mig_name, "%s MIG %s", t.dev->name, t.m->profile);
    return sim_end(sim_copy_string(mig_name, name, length));
}

static nvmlReturn_t sim_nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length) {
    SIM_DEVICE_BEGIN(nvmlDeviceGetUUID, device, t);
    return sim_end(sim_copy_string(t.m ? t.m->uuid : t.dev->uuid, uuid, length));
}

/* PCI device ids of the products our shipped scenarios use; anything else
 * reports device id 0 with NVIDIA's vendor id. */
static unsigned sim_pci_device_id(const char *name) {
    static const struct {
        const char *name;
        unsigned id;
    } ids[] = {{"NVIDIA H100 80GB HBM3", 0x2330},
               {"NVIDIA H100 PCIe", 0x2331},
               {"NVIDIA A100-SXM4-80GB", 0x20B2},
               {"NVIDIA A100-SXM4-40GB", 0x20B0},
               {"Tesla V100-SXM2-32GB", 0x1DB5}};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        if (strcmp(name, ids[i].name) == 0)
            return ids[i].id << 16 | 0x10DEu;
    }
    return 0x10DEu;
}

/* v3 writes the 68-byte layout. The older symbols wrote the 52-byte R375
 * layout, of which only busId[16] and the five uints line up with ours, so
 * they write exactly those 36 bytes and nothing past them. */
static nvmlReturn_t sim_pci_info(int call, nvmlDevice_t device, nvmlPciInfo_t *pci, int v3) {
    sim_target_t t;
    nvmlReturn_t rc = sim_begin_device(call, device, &t);
    if (rc != NVML_SUCCESS)
        return rc;
    if (!pci)
        return sim_end(NVML_ERROR_INVALID_ARGUMENT);
    if (t.m)
        return sim_end(NVML_ERROR_NOT_SUPPORTED);
    const scenario_device_t *d = t.dev;
    char legacy[32];
    snprintf(legacy, sizeof legacy, "%04X:%02X:%02X.%X", d->pci_domain, d->pci_bus, d->pci_device,
             d->pci_function);
    memset(pci->busIdLegacy, 0, sizeof pci->busIdLegacy);
    memcpy(pci->busIdLegacy, legacy, strnlen(legacy, sizeof pci->busIdLegacy - 1));
    pci->domain = d->pci_domain;
    pci->bus = d->pci_bus;
    pci->device = d->pci_device;
    pci->pciDeviceId = sim_pci_device_id(d->name);
    pci->pciSubSystemId = 0;
    if (v3)
        snprintf(pci->busId, sizeof pci->busId, "%s", d->pci_bus_id);
    return sim_end(NVML_SUCCESS);
}

static nvmlReturn_t sim_nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci) {
    return sim_pci_info(SCENARIO_CALL_nvmlDeviceGetPciInfo_v3, device, pci, 1);
}

static nvmlReturn_t sim_nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t *pci) {
    return sim_pci_info(SCENARIO_CALL_nvmlDeviceGetPciInfo_v2, device, pci, 0);
}

static nvmlReturn_t sim_nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t *pci) {
    return sim_pci_info(SCENARIO_CALL_nvmlDeviceGetPciInfo, device, pci, 0);
}

/* ---- metrics ---- */

static nvmlReturn_t sim_nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                                      nvmlUtilization_t *utilization) {
    SIM_DEVICE_BEGIN(nvmlDeviceGetUtilizationRates, device, t);
    if (!utilization)
        return sim_end(NVML_ERROR_INVALID_ARGUMENT);
    /* Not available per MIG instance nor on a MIG-enabled parent. */
    if (t.m || t.dev->mig_enabled)
        return sim_end(NVML_ERROR_NOT_SUPPORTED);
    scenario_values_t v;
    sim_values(&t, &v);
    if (!sim_has(&v, SCENARIO_V_GPU_UTIL) || !sim_has(&v, SCENARIO_V_MEM_UTIL))
        return sim_end(NVML_ERROR_NOT_SUPPORTED);
    utilization->gpu = (unsigned)v.v[SCENARIO_V_GPU_UTIL];
    utilization->memory = (unsigned)v.v[SCENARIO_V_MEM_UTIL];
    return sim_end(NVML_SUCCESS);
}

/* total, reserved, used (allocated, without reserved); NOT_SUPPORTED when
 * the total or the used value is absent. Reserved absent counts as 0. */
static nvmlReturn_t sim_memory(const sim_target_t *t, unsigned long long *total,
                               unsigned long long *reserved, unsigned long long *used) {
    int has_total = t->m ? t->m->has_memory_total : t->dev->has_memory_total;
    if (!has_total)
        return NVML_ERROR_NOT_SUPPORTED;
    scenario_values_t v;
    sim_values(t, &v);
    if (!sim_has(&v, SCENARIO_V_MEMORY_USED_BYTES))
        return NVML_ERROR_NOT_SUPPORTED;
    *total = (unsigned long long)(t->m ? t->m->memory_total_bytes : t->dev->memory_total_bytes);
    *used = (unsigned long long)v.v[SCENARIO_V_MEMORY_USED_BYTES];
    *reserved = sim_has(&v, SCENARIO_V_MEMORY_RESERVED_BYTES)
                    ? (unsigned long long)v.v[SCENARIO_V_MEMORY_RESERVED_BYTES]
                    : 0;
    return NVML_SUCCESS;
}

static nvmlReturn_t sim_nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory) {
    SIM_DEVICE_BEGIN(nvmlDeviceGetMemoryInfo_v2, device, t);
    if (!memory)
        return sim_end(NVML_ERROR_INVALID_ARGUMENT);
    /* Real NVML answers a wrong version word (e.g. a bare 2) with 13. */
    if (memory->version != nvmlMemory_v2)
        return sim_end(NVML_ERROR_FUNCTION_NOT_FOUND);
    unsigned long long total, reserved, used;
    nvmlReturn_t rc = sim_memory(&t, &total, &reserved, &used);
    if (rc != NVML_SUCCESS)
        return sim_end(rc);
    memory->total = total;
    memory->reserved = reserved;
    memory->used = used;
    memory->free = total - reserved - used;
    return sim_end(NVML_SUCCESS);
}

static nvmlReturn_t sim_nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
    SIM_DEVICE_BEGIN(nvmlDeviceGetMemoryInfo, device, t);
    if (!memory)
        return sim_end(NVML_ERROR_INVALID_ARGUMENT);
    unsigned long long total, reserved, used;
    nvmlReturn_t rc = sim_memory(&t, &total, &reserved, &used);
    if (rc != NVML_SUCCESS)
        return sim_end(rc);
    memory->total = total;
    memory->used = used + reserved; /* v1: "used" includes the reserved memory */
    memory->free = total - used - reserved;
    return sim_end(NVML_SUCCESS);
}

static nvmlReturn_t sim_nvmlDeviceGetTemperatureV(nvmlDevice_t device,
                                                  nvmlTemperature_t *temperature) {
    SIM_DEVICE_BEGIN(nvmlDeviceGetTemperatureV, device, t);
    if (!temperature)
        return sim_end(NVML_ERROR_INVALID_ARGUMENT);
    if (temperature->version != nvmlTemperature_v1)
        return sim_end(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    if (temperature->sensorType != NVML_TEMPERATURE_GPU)
        return sim_end(NVML_ERROR_INVALID_ARGUMENT);
    if (t.m)
        return sim_end(NVML_ERROR_NOT_SUPPORTED);
    SIM_REQUIRE_VALUE(t, v, TEMPERATURE_C);
    temperature->temperature = (int)v.v[SCENARIO_V_TEMPERATURE_C];
    return sim_end(NVML_SUCCESS);
}

static nvmlReturn_t sim_nvmlDeviceGetTemperature(nvmlDevice_t device,
                                                 nvmlTemperatureSensors_t sensorType,
                                                 unsigned int *temp) {
    SIM_DEVICE_BEGIN(nvmlDeviceGetTemperature, device, t);
    if (!temp || sensorType != NVML_TEMPERATURE_GPU)
        return sim_end(NVML_ERROR_INVALID_ARGUMENT);
    if (t.m)
        return sim_end(NVML_ERROR_NOT_SUPPORTED);
    SIM_REQUIRE_VALUE(t, v, TEMPERATURE_C);
    *temp = (unsigned)v.v[SCENARIO_V_TEMPERATURE_C];
    return sim_end(NVML_SUCCESS);
}

/* The common shape of "one unsigned value of the whole GPU". */
static nvmlReturn_t sim_gpu_uint(int call, nvmlDevice_t device, scenario_value_t k,
                                 unsigned int *out) {
    sim_target_t t;
    nvmlReturn_t rc = sim_begin_device(call, device, &t);
    if (rc != NVML_SUCCESS)
        return rc;
    if (!out)
        return sim_end(NVML_ERROR_INVALID_ARGUMENT);
    if (t.m)
        return sim_end(NVML_ERROR_NOT_SUPPORTED);
    scenario_values_t v;
    sim_values(&t, &v);
    if (!sim_has(&v, k))
        return sim_end(NVML_ERROR_NOT_SUPPORTED);
    *out = (unsigned)v.v[k];
    return sim_end(NVML_SUCCESS);
}

static nvmlReturn_t sim_nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power) {
    return sim_gpu_uint(SCENARIO_CALL_nvmlDeviceGetPowerUsage, device, SCENARIO_V_POWER_MW, power);
}

static nvmlReturn_t sim_power_limit(int call, nvmlDevice_t device, unsigned int *limit) {
    sim_target_t t;
    nvmlReturn_t rc = sim_begin_device(call, device, &t);
    if (rc != NVML_SUCCESS)
        return rc;
    if (!limit)
        return sim_end(NVML_ERROR_INVALID_ARGUMENT);
    if (t.m || !t.dev->has_power_limit)
        return sim_end(NVML_ERROR_NOT_SUPPORTED);
    *limit = t.dev->power_limit_mw;
    return sim_end(NVML_SUCCESS);
}

static nvmlReturn_t sim_nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int *limit) {
    return sim_power_limit(SCENARIO_CALL_nvmlDeviceGetEnforcedPowerLimit, device, limit);
}

static nvmlReturn_t sim_nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device,
                                                          unsigned int *limit) {
    return sim_power_limit(SCENARIO_CALL_nvmlDeviceGetPowerManagementLimit, device, limit);
}

/* mJ: energy_mj (when given) plus the integral of power_mw since init. */
static nvmlReturn_t sim_nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device,
                                                            unsigned long long *energy) {
    SIM_DEVICE_BEGIN(nvmlDeviceGetTotalEnergyConsumption, device, t);
    if (!energy)
        return sim_end(NVML_ERROR_INVALID_ARGUMENT);
    if (t.m)
        return sim_end(NVML_ERROR_NOT_SUPPORTED);
    scenario_values_t v;
    sim_values(&t, &v);
    if (!sim_has(&v, SCENARIO_V_ENERGY_MJ) && !sim_has(&v, SCENARIO_V_POWER_MW))
        return sim_end(NVML_ERROR_NOT_SUPPORTED);
    double base = sim_has(&v, SCENARIO_V_ENERGY_MJ) ? v.v[SCENARIO_V_ENERGY_MJ] : 0.0;
    *energy = (unsigned long long)(base + sim_counter_integral(t.index, SIM_INT_ENERGY, t.t_s));
    return sim_end(NVML_SUCCESS);
}

static nvmlReturn_t sim_nvmlDeviceGetPcieThroughput(nvmlDevice_t device,
                                                    nvmlPcieUtilCounter_t counter,
                                                    unsigned int *value) {
    scenario_value_t k;
    if (counter == NVML_PCIE_UTIL_TX_BYTES) {
        k = SCENARIO_V_PCIE_TX_KBPS;
    } else if (counter == NVML_PCIE_UTIL_RX_BYTES) {
        k = SCENARIO_V_PCIE_RX_KBPS;
    } else {
        /* Still report UNINITIALIZED first, as for every call. */
        SIM_DEVICE_BEGIN(nvmlDeviceGetPcieThroughput, device, t);
        (void)t;
        return sim_end(NVML_ERROR_INVALID_ARGUMENT);
    }
    return sim_gpu_uint(SCENARIO_CALL_nvmlDeviceGetPcieThroughput, device, k, value);
}

static nvmlReturn_t sim_nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                               unsigned int *clock) {
    if (type == NVML_CLOCK_SM)
        return sim_gpu_uint(SCENARIO_CALL_nvmlDeviceGetClockInfo, device, SCENARIO_V_SM_CLOCK_MHZ,
                            clock);
    SIM_DEVICE_BEGIN(nvmlDeviceGetClockInfo, device, t);
    (void)t;
    if (!clock || (unsigned)type > NVML_CLOCK_VIDEO)
        return sim_end(NVML_ERROR_INVALID_ARGUMENT);
    return sim_end(NVML_ERROR_NOT_SUPPORTED); /* only the SM clock is modelled */
}

static nvmlReturn_t sim_clock_reasons(int call, nvmlDevice_t device, unsigned long long *out) {
    sim_target_t t;
    nvmlReturn_t rc = sim_begin_device(call, device, &t);
    if (rc != NVML_SUCCESS)
        return rc;
    if (!out)
        return sim_end(NVML_ERROR_INVALID_ARGUMENT);
    if (t.m)
        return sim_end(NVML_ERROR_NOT_SUPPORTED);
    SIM_REQUIRE_VALUE(t, v, CLOCK_EVENT_REASONS);
    *out = (unsigned long long)v.v[SCENARIO_V_CLOCK_EVENT_REASONS];
    return sim_end(NVML_SUCCESS);
}

static nvmlReturn_t
sim_nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                           unsigned long long *clocksEventReasons) {
    return sim_clock_reasons(SCENARIO_CALL_nvmlDeviceGetCurrentClocksEventReasons, device,
                             clocksEventReasons);
}

static nvmlReturn_t
sim_nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device,
                                              unsigned long long *clocksThrottleReasons) {
    return sim_clock_reasons(SCENARIO_CALL_nvmlDeviceGetCurrentClocksThrottleReasons, device,
                             clocksThrottleReasons);
}

static long long sim_wall_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

/* One NVLink throughput field: KiB since init, all links or one link's
 * even share. Returns the per-field status. */
static nvmlReturn_t sim_nvlink_field(const sim_target_t *t, const scenario_values_t *v, int rx,
                                     unsigned scope, unsigned long long *out) {
    unsigned links = t->dev->nvlink_links;
    scenario_value_t total_k = rx ? SCENARIO_V_NVLINK_RX_KIB_TOTAL : SCENARIO_V_NVLINK_TX_KIB_TOTAL;
    scenario_value_t rate_k = rx ? SCENARIO_V_NVLINK_RX_KIB_PER_S : SCENARIO_V_NVLINK_TX_KIB_PER_S;
    if (links == 0 || (!sim_has(v, total_k) && !sim_has(v, rate_k)))
        return NVML_ERROR_NOT_SUPPORTED;
    if (scope != NVML_FI_SCOPE_ALL_LINKS && scope >= links)
        return NVML_ERROR_INVALID_ARGUMENT;
    double base = sim_has(v, total_k) ? v->v[total_k] : 0.0;
    double kib =
        base + sim_counter_integral(t->index, rx ? SIM_INT_NVLINK_RX : SIM_INT_NVLINK_TX, t->t_s);
    *out = (unsigned long long)kib;
    if (scope != NVML_FI_SCOPE_ALL_LINKS)
        *out /= links;
    return NVML_SUCCESS;
}

static nvmlReturn_t sim_nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount,
                                                 nvmlFieldValue_t *values) {
    SIM_DEVICE_BEGIN(nvmlDeviceGetFieldValues, device, t);
    if (!values || valuesCount <= 0)
        return sim_end(NVML_ERROR_INVALID_ARGUMENT);
    if (t.m)
        return sim_end(NVML_ERROR_NOT_SUPPORTED);
    scenario_values_t v;
    sim_values(&t, &v);
    long long now_us = sim_wall_us();
    for (int i = 0; i < valuesCount; i++) {
        nvmlFieldValue_t *f = &values[i];
        f->timestamp = now_us;
        f->latencyUsec = 0;
        f->valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
        f->value.ullVal = 0;
        switch (f->fieldId) {
        case NVML_FI_DEV_NVLINK_LINK_COUNT:
            f->valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
            f->nvmlReturn = t.dev->nvlink_links ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
            f->value.uiVal = t.dev->nvlink_links;
            break;
        case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX:
        case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX:
            f->nvmlReturn =
                sim_nvlink_field(&t, &v, f->fieldId == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX,
                                 f->scopeId, &f->value.ullVal);
            break;
        default:
            f->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
            break;
        }
    }
    return sim_end(NVML_SUCCESS);
}

/* ---- MIG ---- */

static nvmlReturn_t sim_nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode,
                                             unsigned int *pendingMode) {
    SIM_DEVICE_BEGIN(nvmlDeviceGetMigMode, device, t);
    if (!currentMode || !pendingMode || t.m)
        return sim_end(NVML_ERROR_INVALID_ARGUMENT);
    if (!t.dev->has_mig)
        return sim_end(NVML_ERROR_NOT_SUPPORTED);
    *currentMode = *pendingMode =
        t.dev->mig_enabled ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    return sim_end(NVML_SUCCESS);
}

/* NVML documents 0 when MIG is unsupported or disabled. */
static nvmlReturn_t sim_nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count) {
    SIM_DEVICE_BEGIN(nvmlDeviceGetMaxMigDeviceCount, device, t);
    if (!count || t.m)
        return sim_end(NVML_ERROR_INVALID_ARGUMENT);
    *count = t.dev->mig_enabled ? SIM_MAX_MIG_DEVICE_COUNT : 0;
    return sim_end(NVML_SUCCESS);
}

static nvmlReturn_t sim_nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                            nvmlDevice_t *migDevice) {
    SIM_DEVICE_BEGIN(nvmlDeviceGetMigDeviceHandleByIndex, device, t);
    if (!migDevice || t.m || index >= SIM_MAX_MIG_DEVICE_COUNT)
        return sim_end(NVML_ERROR_INVALID_ARGUMENT);
    if (!t.dev->mig_enabled)
        return sim_end(NVML_ERROR_NOT_SUPPORTED);
    if (index >= t.dev->mig_count)
        return sim_end(NVML_ERROR_NOT_FOUND); /* an empty slot */
    *migDevice = &sim_mig_handles[t.index][index];
    return sim_end(NVML_SUCCESS);
}

static nvmlReturn_t sim_nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id) {
    SIM_DEVICE_BEGIN(nvmlDeviceGetGpuInstanceId, device, t);
    if (!id || !t.m)
        return sim_end(NVML_ERROR_INVALID_ARGUMENT);
    *id = t.m->gpu_instance_id;
    return sim_end(NVML_SUCCESS);
}

static nvmlReturn_t sim_nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id) {
    SIM_DEVICE_BEGIN(nvmlDeviceGetComputeInstanceId, device, t);
    if (!id || !t.m)
        return sim_end(NVML_ERROR_INVALID_ARGUMENT);
    *id = t.m->compute_instance_id;
    return sim_end(NVML_SUCCESS);
}

static nvmlReturn_t sim_nvmlDeviceGetAttributes_v2(nvmlDevice_t device,
                                                   nvmlDeviceAttributes_t *attributes) {
    SIM_DEVICE_BEGIN(nvmlDeviceGetAttributes_v2, device, t);
    if (!attributes || !t.m)
        return sim_end(NVML_ERROR_INVALID_ARGUMENT); /* MIG handles only */
    /* SM and engine counts are not modelled and read 0. */
    memset(attributes, 0, sizeof *attributes);
    attributes->gpuInstanceSliceCount = t.m->gpu_instance_slices;
    attributes->computeInstanceSliceCount = t.m->compute_instance_slices;
    attributes->memorySizeMB =
        t.m->has_memory_total ? (unsigned long long)t.m->memory_total_bytes >> 20 : 0;
    return sim_end(NVML_SUCCESS);
}

/* ---- GPM ---- */

static nvmlReturn_t sim_nvmlGpmQueryDeviceSupport(nvmlDevice_t device,
                                                  nvmlGpmSupport_t *gpmSupport) {
    SIM_DEVICE_BEGIN(nvmlGpmQueryDeviceSupport, device, t);
    if (!gpmSupport)
        return sim_end(NVML_ERROR_INVALID_ARGUMENT);
    /* GPM versions are raw small numbers, not NVML_STRUCT_VERSION words. */
    if (gpmSupport->version != NVML_GPM_SUPPORT_VERSION)
        return sim_end(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    gpmSupport->isSupportedDevice = t.dev->gpm_supported ? 1 : 0;
    return sim_end(NVML_SUCCESS);
}

static nvmlReturn_t sim_nvmlGpmSampleAlloc(nvmlGpmSample_t *gpmSample) {
    nvmlReturn_t rc = sim_begin();
    if (rc != NVML_SUCCESS)
        return rc;
    if (!gpmSample)
        return sim_end(NVML_ERROR_INVALID_ARGUMENT);
    struct nvmlGpmSample_st *s = calloc(1, sizeof *s);
    if (!s)
        return sim_end(NVML_ERROR_MEMORY);
    s->magic = SIM_GPM_SAMPLE_MAGIC;
    s->mig = -1;
    *gpmSample = s;
    return sim_end(NVML_SUCCESS);
}

static nvmlReturn_t sim_nvmlGpmSampleFree(nvmlGpmSample_t gpmSample) {
    nvmlReturn_t rc = sim_begin();
    if (rc != NVML_SUCCESS)
        return rc;
    if (!gpmSample || gpmSample->magic != SIM_GPM_SAMPLE_MAGIC)
        return sim_end(NVML_ERROR_INVALID_ARGUMENT);
    gpmSample->magic = 0;
    free(gpmSample);
    return sim_end(NVML_SUCCESS);
}

static nvmlReturn_t sim_sample_record(const sim_target_t *t, int mig, nvmlGpmSample_t s) {
    if (!s || s->magic != SIM_GPM_SAMPLE_MAGIC)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!t->dev->gpm_supported)
        return NVML_ERROR_NOT_SUPPORTED;
    s->taken = 1;
    s->dev = t->index;
    s->mig = mig;
    s->t_s = t->t_s;
    return NVML_SUCCESS;
}

static nvmlReturn_t sim_nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t gpmSample) {
    SIM_DEVICE_BEGIN(nvmlGpmSampleGet, device, t);
    return sim_end(sim_sample_record(&t, t.mig, gpmSample));
}

static nvmlReturn_t sim_nvmlGpmMigSampleGet(nvmlDevice_t device, unsigned int gpuInstanceId,
                                            nvmlGpmSample_t gpmSample) {
    SIM_DEVICE_BEGIN(nvmlGpmMigSampleGet, device, t);
    if (t.m)
        return sim_end(NVML_ERROR_INVALID_ARGUMENT); /* takes the parent handle */
    if (!t.dev->gpm_supported)
        return sim_end(NVML_ERROR_NOT_SUPPORTED);
    for (size_t i = 0; t.dev->mig_enabled && i < t.dev->mig_count; i++) {
        if (t.dev->mig[i].gpu_instance_id == gpuInstanceId)
            return sim_end(sim_sample_record(&t, (int)i, gpmSample));
    }
    return sim_end(NVML_ERROR_INVALID_ARGUMENT);
}

static char sim_gpm_sm_util[] = "SM_UTIL", sim_gpm_sm_occ[] = "SM_OCCUPANCY",
            sim_gpm_dram[] = "DRAM_BW_UTIL", sim_gpm_pct[] = "%";

static nvmlReturn_t sim_nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *metricsGet) {
    nvmlReturn_t rc = sim_begin();
    if (rc != NVML_SUCCESS)
        return rc;
    if (!metricsGet)
        return sim_end(NVML_ERROR_INVALID_ARGUMENT);
    if (metricsGet->version != NVML_GPM_METRICS_GET_VERSION)
        return sim_end(NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    nvmlGpmSample_t s1 = metricsGet->sample1, s2 = metricsGet->sample2;
    if (metricsGet->numMetrics > NVML_GPM_METRIC_MAX || !s1 || !s2 ||
        s1->magic != SIM_GPM_SAMPLE_MAGIC || s2->magic != SIM_GPM_SAMPLE_MAGIC || !s1->taken ||
        !s2->taken || s1->dev != s2->dev || s1->mig != s2->mig)
        return sim_end(NVML_ERROR_INVALID_ARGUMENT);
    nvmlDevice_t h = s2->mig >= 0 ? &sim_mig_handles[s2->dev][s2->mig] : &sim_gpu_handles[s2->dev];
    double t2 = s2->t_s;
    pthread_mutex_unlock(&sim.lock);

    SIM_DEVICE_BEGIN(nvmlGpmMetricsGet, h, t);
    if (!t.dev->gpm_supported)
        return sim_end(NVML_ERROR_NOT_SUPPORTED);
    t.t_s = t2; /* the values in effect when sample2 was taken */
    scenario_values_t v;
    sim_values(&t, &v);
    for (unsigned i = 0; i < metricsGet->numMetrics; i++) {
        nvmlGpmMetric_t *m = &metricsGet->metrics[i];
        int key = -1;
        memset(&m->metricInfo, 0, sizeof m->metricInfo);
        m->value = 0;
        switch (m->metricId) {
        case NVML_GPM_METRIC_SM_UTIL:
            key = SCENARIO_V_SM_ACTIVE;
            m->metricInfo.shortName = sim_gpm_sm_util;
            break;
        case NVML_GPM_METRIC_SM_OCCUPANCY:
            key = SCENARIO_V_SM_OCCUPANCY;
            m->metricInfo.shortName = sim_gpm_sm_occ;
            break;
        case NVML_GPM_METRIC_DRAM_BW_UTIL:
            key = SCENARIO_V_DRAM_BW_UTIL;
            m->metricInfo.shortName = sim_gpm_dram;
            break;
        default:
            break;
        }
        if (key >= 0) {
            m->metricInfo.longName = m->metricInfo.shortName;
            m->metricInfo.unit = sim_gpm_pct;
        }
        if (key < 0 || !sim_has(&v, (scenario_value_t)key)) {
            m->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
            continue;
        }
        m->nvmlReturn = NVML_SUCCESS;
        m->value = v.v[key];
    }
    return sim_end(NVML_SUCCESS);
}

/* ---- nvmlErrorString: NVML's wording ---- */

/* ---- processes ---- */

/* The processes a handle shows: a MIG handle its instance's; the GPU (or,
 * as real NVML does for a privileged caller, a MIG-enabled parent) all. */
static int sim_process_visible(const sim_target_t *t, const scenario_process_t *pr,
                               scenario_proc_kind_t kind) {
    if (pr->kind != kind)
        return 0;
    return !t->m || pr->mig_index == t->mig;
}

/* NVML's protocol for the running-process lists: *infoCount in is the
 * capacity; too small (0 with NULL included) -> INSUFFICIENT_SIZE with the
 * needed count; otherwise the entries and their count (SUCCESS and 0 when
 * nothing runs). `stride` is the variant's element size (16 for the
 * unversioned call, 24 for _v2/_v3). */
static nvmlReturn_t sim_running(int call, nvmlDevice_t device, scenario_proc_kind_t kind,
                                unsigned int *infoCount, void *infos, size_t stride) {
    sim_target_t t;
    nvmlReturn_t rc = sim_begin_device(call, device, &t);
    if (rc != NVML_SUCCESS)
        return rc;
    if (!infoCount)
        return sim_end(NVML_ERROR_INVALID_ARGUMENT);
    unsigned n = 0;
    for (size_t i = 0; i < t.dev->process_count; i++)
        n += (unsigned)sim_process_visible(&t, &t.dev->processes[i], kind);
    if (*infoCount < n || (n > 0 && !infos)) {
        *infoCount = n;
        return sim_end(NVML_ERROR_INSUFFICIENT_SIZE);
    }
    unsigned k = 0;
    for (size_t i = 0; i < t.dev->process_count; i++) {
        const scenario_process_t *pr = &t.dev->processes[i];
        if (!sim_process_visible(&t, pr, kind))
            continue;
        unsigned long long mem = pr->has_used_memory ? (unsigned long long)pr->used_memory_bytes
                                                     : NVML_VALUE_NOT_AVAILABLE_ULL;
        char *slot = (char *)infos + (size_t)k * stride;
        if (stride == sizeof(nvmlProcessInfo_v1_t)) {
            nvmlProcessInfo_v1_t e = {.pid = pr->pid, .usedGpuMemory = mem};
            memcpy(slot, &e, sizeof e);
        } else {
            nvmlProcessInfo_v2_t e = {.pid = pr->pid,
                                      .usedGpuMemory = mem,
                                      .gpuInstanceId = NVML_INSTANCE_ID_NONE,
                                      .computeInstanceId = NVML_INSTANCE_ID_NONE};
            if (pr->mig_index >= 0) {
                e.gpuInstanceId = t.dev->mig[pr->mig_index].gpu_instance_id;
                e.computeInstanceId = t.dev->mig[pr->mig_index].compute_instance_id;
            }
            memcpy(slot, &e, sizeof e);
        }
        k++;
    }
    *infoCount = k;
    return sim_end(NVML_SUCCESS);
}

#define SIM_RUNNING(name, kind, elem)                                                              \
    static nvmlReturn_t sim_##name(nvmlDevice_t device, unsigned int *infoCount, elem *infos) {    \
        return sim_running(SCENARIO_CALL_##name, device, kind, infoCount, infos, sizeof(elem));    \
    }
SIM_RUNNING(nvmlDeviceGetComputeRunningProcesses_v3, SCENARIO_PROC_COMPUTE, nvmlProcessInfo_v2_t)
SIM_RUNNING(nvmlDeviceGetComputeRunningProcesses_v2, SCENARIO_PROC_COMPUTE, nvmlProcessInfo_v2_t)
SIM_RUNNING(nvmlDeviceGetComputeRunningProcesses, SCENARIO_PROC_COMPUTE, nvmlProcessInfo_v1_t)
SIM_RUNNING(nvmlDeviceGetGraphicsRunningProcesses_v3, SCENARIO_PROC_GRAPHICS, nvmlProcessInfo_v2_t)
SIM_RUNNING(nvmlDeviceGetGraphicsRunningProcesses_v2, SCENARIO_PROC_GRAPHICS, nvmlProcessInfo_v2_t)
SIM_RUNNING(nvmlDeviceGetGraphicsRunningProcesses, SCENARIO_PROC_GRAPHICS, nvmlProcessInfo_v1_t)
SIM_RUNNING(nvmlDeviceGetMPSComputeRunningProcesses_v3, SCENARIO_PROC_MPS, nvmlProcessInfo_v2_t)
SIM_RUNNING(nvmlDeviceGetMPSComputeRunningProcesses_v2, SCENARIO_PROC_MPS, nvmlProcessInfo_v2_t)
#undef SIM_RUNNING

/* One sample per active process (sm_util or mem_util > 0), stamped now:
 * real NVML lists only processes active in the last period. NOT_FOUND when
 * none is newer than lastSeenTimeStamp; NULL (or too small a buffer) ->
 * INSUFFICIENT_SIZE with the count. Not supported on MIG (NVML's note). */
static nvmlReturn_t sim_nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
                                                        nvmlProcessUtilizationSample_t *utilization,
                                                        unsigned int *processSamplesCount,
                                                        unsigned long long lastSeenTimeStamp) {
    SIM_DEVICE_BEGIN(nvmlDeviceGetProcessUtilization, device, t);
    if (!processSamplesCount)
        return sim_end(NVML_ERROR_INVALID_ARGUMENT);
    if (t.m || t.dev->mig_enabled)
        return sim_end(NVML_ERROR_NOT_SUPPORTED);
    unsigned long long now = (unsigned long long)sim_wall_us();
    unsigned n = 0;
    for (size_t i = 0; i < t.dev->process_count; i++) {
        const scenario_process_t *pr = &t.dev->processes[i];
        n += (pr->has_sm_util && pr->sm_util > 0) || (pr->has_mem_util && pr->mem_util > 0);
    }
    if (n == 0 || now <= lastSeenTimeStamp)
        return sim_end(NVML_ERROR_NOT_FOUND);
    if (!utilization || *processSamplesCount < n) {
        *processSamplesCount = n;
        return sim_end(NVML_ERROR_INSUFFICIENT_SIZE);
    }
    unsigned k = 0;
    for (size_t i = 0; i < t.dev->process_count; i++) {
        const scenario_process_t *pr = &t.dev->processes[i];
        if (!((pr->has_sm_util && pr->sm_util > 0) || (pr->has_mem_util && pr->mem_util > 0)))
            continue;
        nvmlProcessUtilizationSample_t *u = &utilization[k++];
        memset(u, 0, sizeof *u);
        u->pid = pr->pid;
        u->timeStamp = now;
        u->smUtil = pr->has_sm_util ? pr->sm_util : 0;
        u->memUtil = pr->has_mem_util ? pr->mem_util : 0;
    }
    *processSamplesCount = k;
    return sim_end(NVML_SUCCESS);
}

static const char *nvml_wording(nvmlReturn_t result) {
    switch (result) {
    case NVML_SUCCESS:
        return "Success";
    case NVML_ERROR_UNINITIALIZED:
        return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
        return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
        return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
        return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED:
        return "Already Initialized";
    case NVML_ERROR_NOT_FOUND:
        return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
        return "Insufficient Size";
    case NVML_ERROR_INSUFFICIENT_POWER:
        return "Insufficient External Power";
    case NVML_ERROR_DRIVER_NOT_LOADED:
        return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT:
        return "Timeout";
    case NVML_ERROR_IRQ_ISSUE:
        return "Interrupt Request Issue";
    case NVML_ERROR_LIBRARY_NOT_FOUND:
        return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
        return "Function Not Found";
    case NVML_ERROR_CORRUPTED_INFOROM:
        return "Corrupted infoROM";
    case NVML_ERROR_GPU_IS_LOST:
        return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED:
        return "GPU requires restart";
    case NVML_ERROR_OPERATING_SYSTEM:
        return "The operating system has blocked the request.";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
        return "RM has detected an NVML/RM version mismatch.";
    case NVML_ERROR_IN_USE:
        return "In use by another client";
    case NVML_ERROR_MEMORY:
        return "Insufficient Memory";
    case NVML_ERROR_NO_DATA:
        return "No data";
    case NVML_ERROR_VGPU_ECC_NOT_SUPPORTED:
        return "The requested vgpu operation is not available on target device, because ECC is "
               "enabled";
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
        return "Ran out of critical resources, other than memory";
    case NVML_ERROR_FREQ_NOT_SUPPORTED:
        return "The requested frequency is not supported";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
        return "Argument version mismatch";
    case NVML_ERROR_DEPRECATED:
        return "The requested functionality has been deprecated";
    case NVML_ERROR_NOT_READY:
        return "The system is not ready for the request";
    case NVML_ERROR_GPU_NOT_FOUND:
        return "No GPUs were found";
    case NVML_ERROR_INVALID_STATE:
        return "Resource is in invalid state";
    case NVML_ERROR_RESET_TYPE_NOT_SUPPORTED:
        return "Reset type is not supported";
    default:
        return "Unknown Error";
    }
}

/* NVML's wording of result; for the code the last init returned because of
 * the scenario file, the wording and why (the stand-in's whole diagnosis,
 * carried by the error path every caller of NVML already reads). */
SIM_EXPORT const char *nvmlErrorString(nvmlReturn_t result) {
    pthread_mutex_lock(&sim.lock);
    const char *text = nvml_wording(result);
    if (sim.scenario_error[0] && result == sim.scenario_rc) {
        snprintf(sim.error_text, sizeof sim.error_text, "%s, from the NVML stand-in: %s", text,
                 sim.scenario_error);
        text = sim.error_text;
    }
    pthread_mutex_unlock(&sim.lock);
    return text;
}

/* ---- the exported IFUNC symbols ---- */

/*
 * The set of missing symbols, for the resolvers. dlsym() serialises its
 * callers on the dynamic loader's lock, but a resolver may also run through
 * a lazy PLT binding in another library, so it takes a lock of its own.
 * The scenario is re-read only when NVML_SIM_SCENARIO or its file changes,
 * so a test may switch scenarios between dlsym() calls.
 */
static pthread_mutex_t sim_resolve_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    int loaded;
    char path[PATH_MAX];
    sim_file_id_t file;
    uint64_t missing;
} sim_resolve_cache;

static int sim_symbol_present(int call) {
    pthread_mutex_lock(&sim_resolve_lock);
    const char *path = getenv("NVML_SIM_SCENARIO");
    sim_file_id_t id;
    memset(&id, 0, sizeof id);
    int have_file = path && *path && strlen(path) < PATH_MAX && sim_file_id(path, &id) == 0;
    if (!sim_resolve_cache.loaded || strcmp(sim_resolve_cache.path, have_file ? path : "") != 0 ||
        !sim_file_id_equal(&sim_resolve_cache.file, &id)) {
        sim_resolve_cache.loaded = 1;
        sim_resolve_cache.missing = 0;
        sim_resolve_cache.file = id;
        snprintf(sim_resolve_cache.path, sizeof sim_resolve_cache.path, "%s",
                 have_file ? path : "");
        scenario_t *sc;
        /* An unreadable or invalid scenario exports everything; nvmlInit
         * then reports the problem. */
        if (have_file && scenario_load_file(path, &sc, NULL, 0) == 0) {
            sim_resolve_cache.missing = sc->missing;
            scenario_free(sc);
        }
    }
    int present = !(sim_resolve_cache.missing & (UINT64_C(1) << call));
    pthread_mutex_unlock(&sim_resolve_lock);
    return present;
}

#define SIM_DEFINE_IFUNC(name, params)                                                             \
    static __typeof__(&name) sim_resolve_##name(void) {                                            \
        return sim_symbol_present(SCENARIO_CALL_##name) ? sim_##name : NULL;                       \
    }                                                                                              \
    SIM_EXPORT nvmlReturn_t name params __attribute__((ifunc("sim_resolve_" #name)));
NVML_SYMBOLS(SIM_DEFINE_IFUNC)
#undef SIM_DEFINE_IFUNC
