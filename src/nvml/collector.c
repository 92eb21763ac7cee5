/*
 * collector.c - one NVML sweep into a snapshot.
 *
 * DESIGN
 * - Absent is not zero. Every field is set through field_result(), which sets
 *   the validity bit only on NVML_SUCCESS and otherwise records the NVML code.
 *   A NULL symbol (old driver) leaves the field absent with code 0.
 * - Health. GPU_IS_LOST on any call marks the GPU lost and skips its other
 *   calls (on real hardware each would fail slowly). RESET_REQUIRED and
 *   "hard" codes (UNKNOWN, TIMEOUT, ...) mark it reset_required / error.
 *   NOT_SUPPORTED, NO_PERMISSION and the like only make a field absent.
 * - Rates. NVLink throughput comes from the cumulative KiB counters
 *   (field values 138/139, all links) diffed between sweeps; GPM metrics
 *   from two GPM samples > 100 ms apart. The first sweep (or one after a
 *   counter reset or a UUID change at that index) has no rate: absent.
 * - Variants. For every family the newest bound symbol is used
 *   (_v3 -> _v2 -> v1); a versioned call that answers FUNCTION_NOT_FOUND or
 *   ARGUMENT_VERSION_MISMATCH falls back to the older one.
 * - Records are built in collector-owned scratch arrays, then copied into a
 *   snapshot of the exact size, so a snapshot is one allocation.
 */
#include "nvml/collector.h"

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/err.h"

#define INIT_BACKOFF_MIN_NS (1 * NS_PER_SEC)
#define INIT_BACKOFF_MAX_NS (30 * NS_PER_SEC)
#define GPM_MIN_GAP_NS (100 * NS_PER_MS)
/* nvmlDeviceGetPcieThroughput samples a byte counter over a 20 ms window
 * and blocks for it: on an H100 with driver 580.159.04 each call took
 * 20.9 ms (median of 20, scripts/gpu-check), the two of a sweep 42 of its
 * 48 ms. So PCIe throughput is read at most once in this long and the
 * last reading is kept in between: a 20 ms glimpse of a bursty link was
 * never more current than that. */
#define PCIE_EVERY_NS (10 * NS_PER_SEC)

typedef struct {
    unsigned gpu_instance_id;
    bool used;
    nvmlGpmSample_t prev, cur;
    bool prev_valid;
    mono_ns_t prev_time;
} mig_gpm_state_t;

/* What the collector remembers about the GPU at one NVML index. */
typedef struct {
    /* The identity last read at this index: a GPU that falls off the bus
     * stops answering even GetUUID, and "GPU-5c1d... lost" is what an
     * operator needs to see, not "GPU 1 (no UUID) lost". */
    char uuid[SNAPSHOT_UUID_MAX];
    char name[SNAPSHOT_NAME_MAX];
    char pci_bus_id[SNAPSHOT_BUSID_MAX];
    bool nvlink_prev_valid[2];
    unsigned long long nvlink_prev_kib[2];
    long long nvlink_prev_us[2];
    int gpm_support; /* -1 not asked yet, 0 no, 1 yes */
    nvmlGpmSample_t gpm_prev, gpm_cur;
    bool gpm_prev_valid;
    mono_ns_t gpm_prev_time;
    mig_gpm_state_t mig_gpm[COLLECTOR_MAX_MIG_PER_GPU];
    unsigned long long proc_util_seen_us; /* lastSeenTimeStamp for process utilisation */
    bool pcie_read;                       /* PCIe throughput read at pcie_at */
    mono_ns_t pcie_at;
    nvmlReturn_t pcie_r[2]; /* TX, RX: the calls' codes and values then */
    unsigned pcie_kbps[2];
} gpu_state_t;

struct nvml_collector {
    const nvml_api_t *api;
    const logger_t *log;
    char node_name[256];

    bool initialised;
    mono_ns_t next_init_at;
    uint64_t init_backoff_ns;
    /* The last initialisation failure, reported until the next attempt: a
     * snapshot taken inside the backoff must still say why NVML is down
     * (and with which code), not only when it will be tried again. */
    nvmlReturn_t init_rc;
    char init_why[256];
    char driver_version[80];
    bool wants_second;
    uint64_t seq;

    gpu_state_t st[COLLECTOR_MAX_GPUS];
    gpu_record_t gpus[COLLECTOR_MAX_GPUS];
    mig_record_t migs[COLLECTOR_MAX_GPUS * COLLECTOR_MAX_MIG_PER_GPU];
    nvmlGpmMetricsGet_t gpm_get; /* 13 KiB: kept off the stack */

    /* Process records of this sweep, and NVML's buffers (grown on demand). */
    proc_record_t procs[COLLECTOR_MAX_PROCS];
    unsigned nproc;
    nvmlProcessInfo_v2_t *pbuf2;
    nvmlProcessInfo_v1_t *pbuf1;
    nvmlProcessUtilizationSample_t *ubuf;
    unsigned pbuf_cap;
};

/* ---- error classification ------------------------------------------------ */

static const char *nvml_error_text(const nvml_collector_t *c, nvmlReturn_t r) {
    if (c->api->nvmlErrorString) {
        const char *s = c->api->nvmlErrorString(r);
        if (s)
            return s;
    }
    return nvml_code_name((int)r);
}

/* Codes that say "this field is not available here", not "the GPU is sick". */
static bool is_soft_error(nvmlReturn_t r) {
    switch (r) {
    case NVML_ERROR_NOT_SUPPORTED:
    case NVML_ERROR_NO_PERMISSION:
    case NVML_ERROR_NO_DATA:
    case NVML_ERROR_NOT_FOUND:
    case NVML_ERROR_FUNCTION_NOT_FOUND:
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
    case NVML_ERROR_INSUFFICIENT_SIZE:
    case NVML_ERROR_NOT_READY:
    case NVML_ERROR_DEPRECATED:
        return true;
    default:
        return false;
    }
}

static void note_health(gpu_record_t *g, nvmlReturn_t r) {
    if (r == NVML_SUCCESS || is_soft_error(r))
        return;
    if (r == NVML_ERROR_GPU_IS_LOST) {
        g->health = GPU_HEALTH_LOST;
        g->health_nvml_code = (int)r;
    } else if (r == NVML_ERROR_RESET_REQUIRED) {
        if (g->health != GPU_HEALTH_LOST) {
            g->health = GPU_HEALTH_RESET_REQUIRED;
            g->health_nvml_code = (int)r;
        }
    } else if (g->health == GPU_HEALTH_OK) {
        g->health = GPU_HEALTH_ERROR;
        g->health_nvml_code = (int)r;
    }
}

static bool gpu_lost(const gpu_record_t *g) {
    return g->health == GPU_HEALTH_LOST;
}

/* Records the outcome of the call behind field f. True when the value the
 * caller holds may be stored. */
static bool field_result(gpu_record_t *g, gpu_field_t f, nvmlReturn_t r) {
    if (r == NVML_SUCCESS) {
        g->valid |= 1u << f;
        g->field_error[f] = 0;
        return true;
    }
    g->valid &= ~(1u << f);
    g->field_error[f] = (int16_t)r;
    note_health(g, r);
    return false;
}

static bool mig_field_result(mig_record_t *m, gpu_field_t f, nvmlReturn_t r) {
    if (r == NVML_SUCCESS) {
        m->valid |= 1u << f;
        return true;
    }
    m->field_error[f] = (int16_t)r;
    return false;
}

/* ---- lifecycle ------------------------------------------------------------ */

int nvml_collector_new(const nvml_api_t *api, const logger_t *log, const char *node_name,
                       nvml_collector_t **out) {
    nvml_collector_t *c = calloc(1, sizeof *c);
    if (!c)
        return KGS_ENOMEM;
    c->api = api;
    c->log = log;
    snprintf(c->node_name, sizeof c->node_name, "%s", node_name ? node_name : "");
    c->init_backoff_ns = INIT_BACKOFF_MIN_NS;
    for (unsigned i = 0; i < COLLECTOR_MAX_GPUS; i++)
        c->st[i].gpm_support = -1;
    *out = c;
    return 0;
}

static void gpm_sample_free(const nvml_api_t *api, nvmlGpmSample_t *s) {
    if (*s && api->nvmlGpmSampleFree)
        api->nvmlGpmSampleFree(*s);
    *s = NULL;
}

/* Forgets what was remembered about one index (new GPU there, or shutdown). */
static void gpu_state_reset(const nvml_api_t *api, gpu_state_t *st) {
    gpm_sample_free(api, &st->gpm_prev);
    gpm_sample_free(api, &st->gpm_cur);
    for (unsigned i = 0; i < COLLECTOR_MAX_MIG_PER_GPU; i++) {
        gpm_sample_free(api, &st->mig_gpm[i].prev);
        gpm_sample_free(api, &st->mig_gpm[i].cur);
    }
    memset(st, 0, sizeof *st);
    st->gpm_support = -1;
}

static void collector_shutdown(nvml_collector_t *c) {
    for (unsigned i = 0; i < COLLECTOR_MAX_GPUS; i++)
        gpu_state_reset(c->api, &c->st[i]);
    if (c->initialised && c->api->nvmlShutdown)
        c->api->nvmlShutdown();
    c->initialised = false;
}

void nvml_collector_free(nvml_collector_t *c) {
    if (!c)
        return;
    collector_shutdown(c);
    free(c->pbuf2);
    free(c->pbuf1);
    free(c->ubuf);
    free(c);
}

bool nvml_collector_wants_second_sample(const nvml_collector_t *c) {
    return c->wants_second;
}

/* ---- the GPU backend table ------------------------------------------------ */

static int backend_sample(void *self, mono_ns_t now, snapshot_t **out) {
    return nvml_collector_sample(self, now, out);
}

static bool backend_wants_second_sample(const void *self) {
    return nvml_collector_wants_second_sample(self);
}

static void backend_free(void *self) {
    nvml_collector_free(self);
}

static const gpu_backend_ops_t nvml_backend_ops = {
    .name = "nvml",
    .sample = backend_sample,
    .wants_second_sample = backend_wants_second_sample,
    .free = backend_free,
};

gpu_backend_t nvml_collector_backend(nvml_collector_t *c) {
    return (gpu_backend_t){.ops = &nvml_backend_ops, .self = c};
}

/* ---- NVML initialisation ----------------------------------------------- */

static nvmlReturn_t nvml_init(const nvml_api_t *a, const char **which) {
    /* NO_GPUS: a node whose GPUs are all gone must still initialise, so we
     * can report zero GPUs rather than "NVML down". */
    if (a->nvmlInitWithFlags) {
        *which = "nvmlInitWithFlags";
        return a->nvmlInitWithFlags(NVML_INIT_FLAG_NO_GPUS);
    }
    if (a->nvmlInit_v2) {
        *which = "nvmlInit_v2";
        return a->nvmlInit_v2();
    }
    *which = "nvmlInit";
    return a->nvmlInit();
}

static snapshot_t *down_snapshot(nvml_collector_t *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static snapshot_t *down_snapshot(nvml_collector_t *c, int code, const char *fmt, ...) {
    snapshot_t *s = snapshot_new(0, 0);
    if (!s)
        return NULL;
    s->status = SNAPSHOT_NVML_DOWN;
    s->nvml_code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->error, sizeof s->error, fmt, ap);
    va_end(ap);
    snprintf(s->driver_version, sizeof s->driver_version, "%s", c->driver_version);
    return s;
}

/* Returns 0 when NVML is usable, else an NVML code; on failure schedules the
 * next attempt with exponential backoff. */
static nvmlReturn_t ensure_init(nvml_collector_t *c, mono_ns_t now, char *why, size_t whylen) {
    if (c->initialised)
        return NVML_SUCCESS;
    if (c->next_init_at && now < c->next_init_at) {
        snprintf(why, whylen, "%s; next initialisation attempt in %.1f s", c->init_why,
                 (double)(c->next_init_at - now) / 1e9);
        return c->init_rc;
    }
    const char *which = "nvmlInit";
    nvmlReturn_t r = nvml_init(c->api, &which);
    if (r != NVML_SUCCESS) {
        snprintf(c->init_why, sizeof c->init_why, "%s: %s (%s)", which, nvml_code_name((int)r),
                 nvml_error_text(c, r));
        c->init_rc = r;
        snprintf(why, whylen, "%s", c->init_why);
        c->next_init_at = clock_add_sat(now, c->init_backoff_ns);
        LOG_WARN(c->log, "NVML initialisation failed: %s; retrying in %.0f s", why,
                 (double)c->init_backoff_ns / 1e9);
        c->init_backoff_ns = c->init_backoff_ns * 2 > INIT_BACKOFF_MAX_NS ? INIT_BACKOFF_MAX_NS
                                                                          : c->init_backoff_ns * 2;
        return r;
    }
    c->initialised = true;
    c->next_init_at = 0;
    c->init_backoff_ns = INIT_BACKOFF_MIN_NS;
    c->driver_version[0] = '\0';
    if (c->api->nvmlSystemGetDriverVersion &&
        c->api->nvmlSystemGetDriverVersion(c->driver_version, sizeof c->driver_version) !=
            NVML_SUCCESS)
        c->driver_version[0] = '\0';
    LOG_INFO(c->log, "NVML initialised with %s, driver %s", which,
             c->driver_version[0] ? c->driver_version : "(unknown)");
    return NVML_SUCCESS;
}

/* ---- per-field sampling -------------------------------------------------- */

static void sample_memory(const nvml_api_t *a, nvmlDevice_t dev, gpu_record_t *g) {
    nvmlReturn_t r = NVML_ERROR_FUNCTION_NOT_FOUND;
    if (a->nvmlDeviceGetMemoryInfo_v2) {
        nvmlMemory_v2_t m2 = {.version = nvmlMemory_v2};
        r = a->nvmlDeviceGetMemoryInfo_v2(dev, &m2);
        if (r == NVML_SUCCESS) {
            field_result(g, GPU_F_MEM_USED, r);
            field_result(g, GPU_F_MEM_TOTAL, r);
            field_result(g, GPU_F_MEM_RESERVED, r);
            g->memory_used_bytes = m2.used;
            g->memory_total_bytes = m2.total;
            g->memory_reserved_bytes = m2.reserved;
            return;
        }
    }
    /* A driver that exports _v2 but rejects our version word answers
     * FUNCTION_NOT_FOUND; fall back to v1 then, as for a missing symbol. */
    if (a->nvmlDeviceGetMemoryInfo &&
        (r == NVML_ERROR_FUNCTION_NOT_FOUND || r == NVML_ERROR_ARGUMENT_VERSION_MISMATCH)) {
        nvmlMemory_t m1;
        r = a->nvmlDeviceGetMemoryInfo(dev, &m1);
        if (field_result(g, GPU_F_MEM_USED, r) && field_result(g, GPU_F_MEM_TOTAL, r)) {
            g->memory_used_bytes = m1.used;
            g->memory_total_bytes = m1.total;
        }
        /* v1 has no reserved figure: absent, not 0. */
        g->field_error[GPU_F_MEM_RESERVED] = r == NVML_SUCCESS ? 0 : (int16_t)r;
        return;
    }
    if (r != NVML_ERROR_FUNCTION_NOT_FOUND || a->nvmlDeviceGetMemoryInfo_v2) {
        field_result(g, GPU_F_MEM_USED, r);
        field_result(g, GPU_F_MEM_TOTAL, r);
        field_result(g, GPU_F_MEM_RESERVED, r);
    }
}

static void sample_temperature(const nvml_api_t *a, nvmlDevice_t dev, gpu_record_t *g) {
    nvmlReturn_t r = NVML_ERROR_FUNCTION_NOT_FOUND;
    if (a->nvmlDeviceGetTemperatureV) {
        nvmlTemperature_t t = {.version = nvmlTemperature_v1, .sensorType = NVML_TEMPERATURE_GPU};
        r = a->nvmlDeviceGetTemperatureV(dev, &t);
        if (r == NVML_SUCCESS) {
            field_result(g, GPU_F_TEMPERATURE, r);
            g->temperature_c = t.temperature;
            return;
        }
    }
    if (a->nvmlDeviceGetTemperature &&
        (r == NVML_ERROR_FUNCTION_NOT_FOUND || r == NVML_ERROR_ARGUMENT_VERSION_MISMATCH)) {
        unsigned temp;
        r = a->nvmlDeviceGetTemperature(dev, NVML_TEMPERATURE_GPU, &temp);
        if (field_result(g, GPU_F_TEMPERATURE, r))
            g->temperature_c = (int)temp;
        return;
    }
    if (a->nvmlDeviceGetTemperatureV)
        field_result(g, GPU_F_TEMPERATURE, r);
}

static void sample_power(const nvml_api_t *a, nvmlDevice_t dev, gpu_record_t *g) {
    unsigned mw;
    if (a->nvmlDeviceGetPowerUsage && !gpu_lost(g) &&
        field_result(g, GPU_F_POWER, a->nvmlDeviceGetPowerUsage(dev, &mw)))
        g->power_w = mw / 1000.0;
    nvmlReturn_t (*limit)(nvmlDevice_t, unsigned *) = a->nvmlDeviceGetEnforcedPowerLimit
                                                          ? a->nvmlDeviceGetEnforcedPowerLimit
                                                          : a->nvmlDeviceGetPowerManagementLimit;
    if (limit && !gpu_lost(g) && field_result(g, GPU_F_POWER_LIMIT, limit(dev, &mw)))
        g->power_limit_w = mw / 1000.0;
    unsigned long long mj;
    if (a->nvmlDeviceGetTotalEnergyConsumption && !gpu_lost(g) &&
        field_result(g, GPU_F_ENERGY, a->nvmlDeviceGetTotalEnergyConsumption(dev, &mj)))
        g->energy_mj = mj;
}

static bool field_value_ull(const nvmlFieldValue_t *fv, unsigned long long *out) {
    switch (fv->valueType) {
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
        *out = fv->value.ullVal;
        return true;
    case NVML_VALUE_TYPE_UNSIGNED_LONG:
        *out = fv->value.ulVal;
        return true;
    case NVML_VALUE_TYPE_UNSIGNED_INT:
        *out = fv->value.uiVal;
        return true;
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
        if (fv->value.sllVal < 0)
            return false;
        *out = (unsigned long long)fv->value.sllVal;
        return true;
    default:
        return false;
    }
}

/* NVLink data throughput as a rate: KiB counters (all links) diffed. */
static void sample_nvlink(nvml_collector_t *c, nvmlDevice_t dev, gpu_record_t *g, gpu_state_t *st) {
    const nvml_api_t *a = c->api;
    if (!a->nvmlDeviceGetFieldValues || gpu_lost(g))
        return;
    nvmlFieldValue_t fv[2] = {
        {.fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, .scopeId = NVML_FI_SCOPE_ALL_LINKS},
        {.fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, .scopeId = NVML_FI_SCOPE_ALL_LINKS},
    };
    static const gpu_field_t fields[2] = {GPU_F_NVLINK_TX, GPU_F_NVLINK_RX};
    nvmlReturn_t r = a->nvmlDeviceGetFieldValues(dev, 2, fv);
    for (int i = 0; i < 2; i++) {
        nvmlReturn_t fr = r != NVML_SUCCESS ? r : fv[i].nvmlReturn;
        unsigned long long kib;
        if (fr == NVML_SUCCESS && !field_value_ull(&fv[i], &kib))
            fr = NVML_ERROR_UNKNOWN;
        if (fr != NVML_SUCCESS) {
            field_result(g, fields[i], fr);
            st->nvlink_prev_valid[i] = false;
            continue;
        }
        long long ts = fv[i].timestamp;
        if (ts <= 0) {
            struct timespec now;
            clock_gettime(CLOCK_REALTIME, &now);
            ts = (long long)now.tv_sec * 1000000 + now.tv_nsec / 1000;
        }
        if (st->nvlink_prev_valid[i] && ts > st->nvlink_prev_us[i] &&
            kib >= st->nvlink_prev_kib[i]) {
            double secs = (double)(ts - st->nvlink_prev_us[i]) / 1e6;
            double rate = (double)(kib - st->nvlink_prev_kib[i]) * 1024.0 / secs;
            field_result(g, fields[i], NVML_SUCCESS);
            if (i == 0)
                g->nvlink_tx_bytes_per_s = rate;
            else
                g->nvlink_rx_bytes_per_s = rate;
        } else {
            /* First reading, or the counter went backwards (driver reload):
             * no rate yet. Absent with no error code. */
            c->wants_second = true;
        }
        st->nvlink_prev_valid[i] = true;
        st->nvlink_prev_kib[i] = kib;
        st->nvlink_prev_us[i] = ts;
    }
}

/* Fills the three GPM percentages from two samples; returns the call's code. */
static nvmlReturn_t gpm_metrics(nvml_collector_t *c, nvmlGpmSample_t s1, nvmlGpmSample_t s2,
                                double out[3], nvmlReturn_t codes[3]) {
    static const unsigned ids[3] = {NVML_GPM_METRIC_SM_UTIL, NVML_GPM_METRIC_SM_OCCUPANCY,
                                    NVML_GPM_METRIC_DRAM_BW_UTIL};
    nvmlGpmMetricsGet_t *mg = &c->gpm_get;
    memset(mg, 0, offsetof(nvmlGpmMetricsGet_t, metrics) + 3 * sizeof mg->metrics[0]);
    mg->version = NVML_GPM_METRICS_GET_VERSION;
    mg->numMetrics = 3;
    mg->sample1 = s1;
    mg->sample2 = s2;
    for (int i = 0; i < 3; i++)
        mg->metrics[i].metricId = ids[i];
    nvmlReturn_t r = c->api->nvmlGpmMetricsGet(mg);
    for (int i = 0; i < 3; i++) {
        codes[i] = r != NVML_SUCCESS ? r : mg->metrics[i].nvmlReturn;
        out[i] = mg->metrics[i].value;
    }
    return r;
}

static bool gpm_available(const nvml_api_t *a) {
    return a->nvmlGpmSampleAlloc && a->nvmlGpmSampleFree && a->nvmlGpmMetricsGet;
}

/*
 * Takes a GPM sample into *cur and, when a previous one is > 100 ms old,
 * computes the metrics between them. Returns true with values/codes filled
 * when metrics were computed.
 */
static bool gpm_step(nvml_collector_t *c, nvmlReturn_t sample_r, nvmlGpmSample_t *prev,
                     nvmlGpmSample_t *cur, bool *prev_valid, mono_ns_t *prev_time, mono_ns_t now,
                     double vals[3], nvmlReturn_t codes[3]) {
    if (sample_r != NVML_SUCCESS) {
        *prev_valid = false;
        for (int i = 0; i < 3; i++)
            codes[i] = sample_r;
        return true;
    }
    bool computed = false;
    if (*prev_valid && now - *prev_time >= GPM_MIN_GAP_NS) {
        gpm_metrics(c, *prev, *cur, vals, codes);
        computed = true;
    }
    if (!*prev_valid || computed) {
        nvmlGpmSample_t t = *prev;
        *prev = *cur;
        *cur = t;
        *prev_valid = true;
        *prev_time = now;
    }
    if (!computed)
        c->wants_second = true;
    return computed;
}

static bool gpm_alloc_pair(const nvml_api_t *a, nvmlGpmSample_t *p, nvmlGpmSample_t *q) {
    if (!*p && a->nvmlGpmSampleAlloc(p) != NVML_SUCCESS)
        *p = NULL;
    if (!*q && a->nvmlGpmSampleAlloc(q) != NVML_SUCCESS)
        *q = NULL;
    return *p && *q;
}

static void sample_gpm(nvml_collector_t *c, nvmlDevice_t dev, gpu_record_t *g, gpu_state_t *st,
                       mono_ns_t now) {
    const nvml_api_t *a = c->api;
    if (!gpm_available(a) || !a->nvmlGpmSampleGet || gpu_lost(g))
        return;
    if (st->gpm_support < 0) {
        st->gpm_support = 0;
        if (a->nvmlGpmQueryDeviceSupport) {
            nvmlGpmSupport_t sup = {.version = NVML_GPM_SUPPORT_VERSION};
            nvmlReturn_t r = a->nvmlGpmQueryDeviceSupport(dev, &sup);
            st->gpm_support = r == NVML_SUCCESS && sup.isSupportedDevice;
        }
    }
    static const gpu_field_t fields[3] = {GPU_F_SM_ACTIVE, GPU_F_SM_OCCUPANCY, GPU_F_DRAM_BW_UTIL};
    if (!st->gpm_support) {
        for (int i = 0; i < 3; i++)
            field_result(g, fields[i], NVML_ERROR_NOT_SUPPORTED);
        return;
    }
    if (!gpm_alloc_pair(a, &st->gpm_prev, &st->gpm_cur))
        return;
    nvmlReturn_t r = a->nvmlGpmSampleGet(dev, st->gpm_cur);
    double v[3];
    nvmlReturn_t codes[3];
    if (!gpm_step(c, r, &st->gpm_prev, &st->gpm_cur, &st->gpm_prev_valid, &st->gpm_prev_time, now,
                  v, codes))
        return;
    if (field_result(g, GPU_F_SM_ACTIVE, codes[0]))
        g->sm_active_pct = v[0];
    if (field_result(g, GPU_F_SM_OCCUPANCY, codes[1]))
        g->sm_occupancy_pct = v[1];
    if (field_result(g, GPU_F_DRAM_BW_UTIL, codes[2]))
        g->dram_bw_util_pct = v[2];
}

/* ---- MIG ----------------------------------------------------------------- */

/*
 * The profile name as NVIDIA's go-nvlib builds it ("3g.40gb", "1c.3g.40gb"):
 * G and C slices from the instance attributes, memory as eighths of the
 * parent's memory rounded up, times the parent's size in GB rounded up.
 * Derived this way because the exact GI/CI profile queries need privilege.
 */
static void mig_profile_from_attributes(const nvmlDeviceAttributes_t *at,
                                        uint64_t parent_total_bytes, char *out, size_t outlen) {
    double frac = (double)at->memorySizeMB * 1048576.0 / (double)parent_total_bytes;
    double eighths = ceil(frac * 8.0 - 1e-9) / 8.0;
    double total_gb = ceil((double)parent_total_bytes / 1073741824.0);
    long gb = lround(eighths * total_gb);
    if (at->computeInstanceSliceCount == at->gpuInstanceSliceCount)
        snprintf(out, outlen, "%ug.%ldgb", at->gpuInstanceSliceCount, gb);
    else
        snprintf(out, outlen, "%uc.%ug.%ldgb", at->computeInstanceSliceCount,
                 at->gpuInstanceSliceCount, gb);
}

/* "NVIDIA A100-SXM4-80GB MIG 3g.40gb" -> "3g.40gb" (observed format). */
static void mig_profile_from_name(const char *name, char *out, size_t outlen) {
    const char *p = strstr(name, "MIG ");
    if (p)
        snprintf(out, outlen, "%s", p + 4);
}

/* ---- processes (shared GPUs) ------------------------------------------- */

/* Drivers 535.43-535.86 wrote 32-byte elements from the _v3 process calls
 * (reference sheet 4.3, "the R535 break"); read their _v2 instead. */
static bool driver_has_r535_v3_break(const char *version) {
    unsigned major = 0, minor = 0;
    if (sscanf(version, "%u.%u", &major, &minor) != 2)
        return false;
    return major == 535 && minor >= 43 && minor <= 86;
}

typedef nvmlReturn_t (*running_v2_fn)(nvmlDevice_t, unsigned *, nvmlProcessInfo_v2_t *);
typedef nvmlReturn_t (*running_v1_fn)(nvmlDevice_t, unsigned *, nvmlProcessInfo_v1_t *);

static bool grow_proc_buffers(nvml_collector_t *c, unsigned need) {
    if (need <= c->pbuf_cap)
        return true;
    unsigned cap = need + 16; /* the list is live: leave slack */
    if (cap > COLLECTOR_MAX_PROCS_ASKED)
        return false;
    nvmlProcessInfo_v2_t *b2 = realloc(c->pbuf2, cap * sizeof *b2);
    if (!b2)
        return false;
    c->pbuf2 = b2;
    nvmlProcessInfo_v1_t *b1 = realloc(c->pbuf1, cap * sizeof *b1);
    if (!b1)
        return false;
    c->pbuf1 = b1;
    nvmlProcessUtilizationSample_t *bu = realloc(c->ubuf, cap * sizeof *bu);
    if (!bu)
        return false;
    c->ubuf = bu;
    c->pbuf_cap = cap;
    return true;
}

/* One variant of one list with NVML's sizing protocol: ask, grow to the
 * count INSUFFICIENT_SIZE names, ask again (a few times: the list is live).
 * Entries land in c->pbuf2 (v1 entries converted). */
static nvmlReturn_t running_call(nvml_collector_t *c, running_v2_fn f2, running_v1_fn f1,
                                 nvmlDevice_t dev, unsigned *n) {
    nvmlReturn_t r = NVML_ERROR_INSUFFICIENT_SIZE;
    for (int attempt = 0; attempt < 4; attempt++) {
        unsigned count = c->pbuf_cap;
        r = f2 ? f2(dev, &count, c->pbuf2) : f1(dev, &count, c->pbuf1);
        if (r == NVML_SUCCESS) {
            if (count > c->pbuf_cap)
                return NVML_ERROR_UNKNOWN; /* a driver that overran our buffer */
            if (!f2) {
                for (unsigned i = 0; i < count; i++) {
                    c->pbuf2[i].pid = c->pbuf1[i].pid;
                    c->pbuf2[i].usedGpuMemory = c->pbuf1[i].usedGpuMemory;
                    c->pbuf2[i].gpuInstanceId = NVML_INSTANCE_ID_NONE;
                    c->pbuf2[i].computeInstanceId = NVML_INSTANCE_ID_NONE;
                }
            }
            *n = count;
            return r;
        }
        if (r != NVML_ERROR_INSUFFICIENT_SIZE)
            return r;
        if (!grow_proc_buffers(c, count > c->pbuf_cap ? count : c->pbuf_cap + 16))
            return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    return r;
}

/* A family (compute, graphics, MPS clients), newest variant first; a
 * versioned call that answers FUNCTION_NOT_FOUND or ARGUMENT_VERSION_MISMATCH
 * falls back to the older one. NVML_ERROR_FUNCTION_NOT_FOUND when no
 * variant is bound. */
static nvmlReturn_t running_family(nvml_collector_t *c, running_v2_fn v3, running_v2_fn v2,
                                   running_v1_fn v1, nvmlDevice_t dev, unsigned *n) {
    if (driver_has_r535_v3_break(c->driver_version) && v2)
        v3 = NULL;
    nvmlReturn_t r = NVML_ERROR_FUNCTION_NOT_FOUND;
    running_v2_fn order[2] = {v3, v2};
    for (int i = 0; i < 2; i++) {
        if (!order[i])
            continue;
        r = running_call(c, order[i], NULL, dev, n);
        if (r != NVML_ERROR_FUNCTION_NOT_FOUND && r != NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
            return r;
    }
    if (v1)
        r = running_call(c, NULL, v1, dev, n);
    return r;
}

/* Appends the entries in c->pbuf2[0..n) to the list, merged by pid (one
 * process can hold a compute and a graphics context). */
static void procs_merge(nvml_collector_t *c, proc_list_t *pl, unsigned n) {
    for (unsigned i = 0; i < n; i++) {
        const nvmlProcessInfo_v2_t *e = &c->pbuf2[i];
        proc_record_t *rec = NULL;
        for (unsigned k = 0; k < pl->count && !rec; k++)
            if (c->procs[pl->first + k].pid == e->pid)
                rec = &c->procs[pl->first + k];
        if (!rec) {
            if (pl->count >= COLLECTOR_MAX_PROCS_PER_GPU || c->nproc >= COLLECTOR_MAX_PROCS) {
                pl->dropped++;
                continue;
            }
            rec = &c->procs[c->nproc++];
            pl->count++;
            memset(rec, 0, sizeof *rec);
            rec->pid = e->pid;
        }
        if (e->usedGpuMemory != NVML_VALUE_NOT_AVAILABLE_ULL &&
            (!proc_has(rec, PROC_F_USED_MEMORY) || e->usedGpuMemory > rec->used_memory_bytes)) {
            rec->used_memory_bytes = e->usedGpuMemory;
            rec->valid |= 1u << PROC_F_USED_MEMORY;
        }
    }
}

/* Per-process utilisation: the mean of each pid's samples since the last
 * sweep, and never over less than the last second. The driver samples a
 * process every 1/6 s to 1 s, so a window shorter than that (a one-shot
 * run's second sweep comes 150 ms after its first) may hold no sample
 * while a process runs flat out: on an H100 a matmul at 99 % read 0.
 * Over a second, NOT_FOUND (no sample newer) is a known "every process
 * idle", and a listed process without a sample was idle too. */
#define PROC_UTIL_MIN_WINDOW_US 1000000ull
static void sample_process_util(nvml_collector_t *c, nvmlDevice_t dev, proc_list_t *pl,
                                unsigned long long *last_seen_us) {
    const nvml_api_t *a = c->api;
    if (!a->nvmlDeviceGetProcessUtilization) {
        pl->util_code = 0;
        return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    unsigned long long now_us =
        (unsigned long long)ts.tv_sec * 1000000ull + (unsigned long long)ts.tv_nsec / 1000u;
    unsigned long long window_start =
        now_us > PROC_UTIL_MIN_WINDOW_US ? now_us - PROC_UTIL_MIN_WINDOW_US : 0;
    /* the first sweep: the last second, not the whole ring buffer */
    if (*last_seen_us == 0 || *last_seen_us > window_start)
        *last_seen_us = window_start;
    unsigned count = 0;
    nvmlReturn_t r = NVML_ERROR_INSUFFICIENT_SIZE;
    for (int attempt = 0; attempt < 4 && r == NVML_ERROR_INSUFFICIENT_SIZE; attempt++) {
        count = c->pbuf_cap;
        r = a->nvmlDeviceGetProcessUtilization(dev, c->ubuf, &count, *last_seen_us);
        if (r == NVML_ERROR_INSUFFICIENT_SIZE &&
            !grow_proc_buffers(c, count > c->pbuf_cap ? count : c->pbuf_cap + 16))
            break;
    }
    if (r != NVML_SUCCESS && r != NVML_ERROR_NOT_FOUND) {
        pl->util_code = (int16_t)r;
        return;
    }
    if (r == NVML_SUCCESS && count > c->pbuf_cap) {
        pl->util_code = NVML_ERROR_UNKNOWN;
        return;
    }
    if (r == NVML_ERROR_NOT_FOUND)
        count = 0;
    for (unsigned k = 0; k < pl->count; k++) {
        proc_record_t *rec = &c->procs[pl->first + k];
        double sm = 0, mem = 0;
        unsigned samples = 0;
        for (unsigned i = 0; i < count; i++) {
            const nvmlProcessUtilizationSample_t *u = &c->ubuf[i];
            if (u->pid != rec->pid || u->timeStamp <= *last_seen_us)
                continue;
            sm += u->smUtil;
            mem += u->memUtil;
            samples++;
        }
        rec->sm_util_pct = samples ? sm / samples : 0;
        rec->mem_util_pct = samples ? mem / samples : 0;
        rec->valid |= (1u << PROC_F_SM_UTIL) | (1u << PROC_F_MEM_UTIL);
    }
    unsigned long long newest = *last_seen_us;
    for (unsigned i = 0; i < count; i++)
        if (c->ubuf[i].timeStamp > newest)
            newest = c->ubuf[i].timeStamp;
    *last_seen_us = newest;
    pl->util_ok = true;
    pl->util_code = 0;
}

/*
 * The processes of one GPU or MIG handle into the collector's scratch, at
 * most COLLECTOR_MAX_PROCS_PER_GPU (the rest counted in `dropped`).
 * `util_seen` NULL: no per-process utilisation (MIG: NVML has none, on any
 * generation; the list still gives per-process memory).
 */
static void sample_processes(nvml_collector_t *c, nvmlDevice_t dev, proc_list_t *pl,
                             unsigned long long *util_seen) {
    const nvml_api_t *a = c->api;
    memset(pl, 0, sizeof *pl);
    pl->first = c->nproc;
    pl->util_code = NVML_ERROR_NOT_SUPPORTED;
    if (!grow_proc_buffers(c, 64)) {
        pl->list_code = NVML_ERROR_MEMORY;
        return;
    }
    unsigned n = 0;
    nvmlReturn_t r = running_family(c, a->nvmlDeviceGetComputeRunningProcesses_v3,
                                    a->nvmlDeviceGetComputeRunningProcesses_v2,
                                    a->nvmlDeviceGetComputeRunningProcesses, dev, &n);
    if (r != NVML_SUCCESS) {
        /* Without the compute list nothing about sharing is known. */
        pl->list_code = r == NVML_ERROR_FUNCTION_NOT_FOUND &&
                                !a->nvmlDeviceGetComputeRunningProcesses_v3 &&
                                !a->nvmlDeviceGetComputeRunningProcesses_v2 &&
                                !a->nvmlDeviceGetComputeRunningProcesses
                            ? 0
                            : (int16_t)r;
        return;
    }
    procs_merge(c, pl, n);
    /* Graphics contexts and MPS clients are optional: datacenter GPUs
     * answer NOT_SUPPORTED for graphics, and MPS lists exist only with MPS. */
    if (running_family(c, a->nvmlDeviceGetGraphicsRunningProcesses_v3,
                       a->nvmlDeviceGetGraphicsRunningProcesses_v2,
                       a->nvmlDeviceGetGraphicsRunningProcesses, dev, &n) == NVML_SUCCESS)
        procs_merge(c, pl, n);
    if (running_family(c, a->nvmlDeviceGetMPSComputeRunningProcesses_v3,
                       a->nvmlDeviceGetMPSComputeRunningProcesses_v2, NULL, dev,
                       &n) == NVML_SUCCESS)
        procs_merge(c, pl, n);
    pl->list_ok = true;
    if (util_seen)
        sample_process_util(c, dev, pl, util_seen);
}

static unsigned sample_mig(nvml_collector_t *c, nvmlDevice_t parent, gpu_record_t *g,
                           gpu_state_t *st, mono_ns_t now, mig_record_t *out, unsigned room) {
    const nvml_api_t *a = c->api;
    unsigned max = 0;
    if (!a->nvmlDeviceGetMaxMigDeviceCount || !a->nvmlDeviceGetMigDeviceHandleByIndex)
        return 0;
    if (a->nvmlDeviceGetMaxMigDeviceCount(parent, &max) != NVML_SUCCESS)
        return 0;
    if (max > COLLECTOR_MAX_MIG_PER_GPU)
        max = COLLECTOR_MAX_MIG_PER_GPU;
    unsigned n = 0;
    for (unsigned i = 0; i < max && n < room; i++) {
        nvmlDevice_t mdev;
        nvmlReturn_t r = a->nvmlDeviceGetMigDeviceHandleByIndex(parent, i, &mdev);
        if (r == NVML_ERROR_NOT_FOUND || r == NVML_ERROR_INVALID_ARGUMENT)
            continue; /* empty slot */
        if (r != NVML_SUCCESS) {
            note_health(g, r);
            if (gpu_lost(g))
                break;
            continue;
        }
        mig_record_t *m = &out[n++];
        memset(m, 0, sizeof *m);
        m->parent_index = g->index;
        if (a->nvmlDeviceGetUUID)
            a->nvmlDeviceGetUUID(mdev, m->uuid, sizeof m->uuid);
        if (a->nvmlDeviceGetName)
            a->nvmlDeviceGetName(mdev, m->name, sizeof m->name);
        unsigned gi = 0, ci = 0;
        if (a->nvmlDeviceGetGpuInstanceId && a->nvmlDeviceGetComputeInstanceId &&
            a->nvmlDeviceGetGpuInstanceId(mdev, &gi) == NVML_SUCCESS &&
            a->nvmlDeviceGetComputeInstanceId(mdev, &ci) == NVML_SUCCESS) {
            m->gpu_instance_id = gi;
            m->compute_instance_id = ci;
            m->ids_valid = true;
        }
        nvmlDeviceAttributes_t at;
        if (a->nvmlDeviceGetAttributes_v2 && gpu_has(g, GPU_F_MEM_TOTAL) &&
            g->memory_total_bytes > 0 && a->nvmlDeviceGetAttributes_v2(mdev, &at) == NVML_SUCCESS &&
            at.gpuInstanceSliceCount > 0)
            mig_profile_from_attributes(&at, g->memory_total_bytes, m->profile, sizeof m->profile);
        else
            mig_profile_from_name(m->name, m->profile, sizeof m->profile);

        /* Per-instance memory needs the MIG handle. */
        nvmlReturn_t mr = NVML_ERROR_FUNCTION_NOT_FOUND;
        if (a->nvmlDeviceGetMemoryInfo_v2) {
            nvmlMemory_v2_t m2 = {.version = nvmlMemory_v2};
            mr = a->nvmlDeviceGetMemoryInfo_v2(mdev, &m2);
            if (mr == NVML_SUCCESS) {
                m->memory_used_bytes = m2.used;
                m->memory_total_bytes = m2.total;
            }
        }
        if (mr != NVML_SUCCESS && a->nvmlDeviceGetMemoryInfo &&
            (mr == NVML_ERROR_FUNCTION_NOT_FOUND || mr == NVML_ERROR_ARGUMENT_VERSION_MISMATCH)) {
            nvmlMemory_t m1;
            mr = a->nvmlDeviceGetMemoryInfo(mdev, &m1);
            if (mr == NVML_SUCCESS) {
                m->memory_used_bytes = m1.used;
                m->memory_total_bytes = m1.total;
            }
        }
        mig_field_result(m, GPU_F_MEM_USED, mr);
        mig_field_result(m, GPU_F_MEM_TOTAL, mr);
        sample_processes(c, mdev, &m->procs, NULL);

        /* NVML reports no utilisation on MIG; GPM per GPU instance is the
         * only activity source. Without it the fields stay absent. */
        if (st->gpm_support == 1 && m->ids_valid && a->nvmlGpmMigSampleGet &&
            i < COLLECTOR_MAX_MIG_PER_GPU) {
            mig_gpm_state_t *ms = &st->mig_gpm[i];
            if (!ms->used || ms->gpu_instance_id != gi) {
                gpm_sample_free(a, &ms->prev);
                gpm_sample_free(a, &ms->cur);
                memset(ms, 0, sizeof *ms);
                ms->used = true;
                ms->gpu_instance_id = gi;
            }
            if (gpm_alloc_pair(a, &ms->prev, &ms->cur)) {
                nvmlReturn_t sr = a->nvmlGpmMigSampleGet(parent, gi, ms->cur);
                double v[3];
                nvmlReturn_t codes[3];
                if (gpm_step(c, sr, &ms->prev, &ms->cur, &ms->prev_valid, &ms->prev_time, now, v,
                             codes)) {
                    if (mig_field_result(m, GPU_F_SM_ACTIVE, codes[0]))
                        m->sm_active_pct = v[0];
                    if (mig_field_result(m, GPU_F_SM_OCCUPANCY, codes[1]))
                        m->sm_occupancy_pct = v[1];
                    if (mig_field_result(m, GPU_F_DRAM_BW_UTIL, codes[2]))
                        m->dram_bw_util_pct = v[2];
                }
            }
        } else {
            m->field_error[GPU_F_SM_ACTIVE] = NVML_ERROR_NOT_SUPPORTED;
            m->field_error[GPU_F_SM_OCCUPANCY] = NVML_ERROR_NOT_SUPPORTED;
            m->field_error[GPU_F_DRAM_BW_UTIL] = NVML_ERROR_NOT_SUPPORTED;
        }
    }
    return n;
}

/* ---- one GPU ------------------------------------------------------------- */

static nvmlReturn_t handle_by_index(const nvml_api_t *a, unsigned i, nvmlDevice_t *dev) {
    if (a->nvmlDeviceGetHandleByIndex_v2 && a->nvmlDeviceGetCount_v2)
        return a->nvmlDeviceGetHandleByIndex_v2(i, dev);
    /* v1 count and v1 handles number only accessible GPUs: never mix. */
    return a->nvmlDeviceGetHandleByIndex(i, dev);
}

static unsigned sample_gpu(nvml_collector_t *c, unsigned idx, gpu_record_t *g, mono_ns_t now,
                           mig_record_t *mig_out, unsigned mig_room) {
    const nvml_api_t *a = c->api;
    gpu_state_t *st = &c->st[idx];
    memset(g, 0, sizeof *g);
    g->index = idx;
    g->vendor = GPU_VENDOR_NVIDIA;

    nvmlDevice_t dev;
    nvmlReturn_t r = handle_by_index(a, idx, &dev);
    if (r != NVML_SUCCESS) {
        note_health(g, r);
        if (g->health == GPU_HEALTH_OK) { /* even NO_PERMISSION: we cannot see it */
            g->health = GPU_HEALTH_ERROR;
            g->health_nvml_code = (int)r;
        }
        for (int f = 0; f < GPU_F_COUNT; f++)
            g->field_error[f] = (int16_t)r;
        return 0;
    }

    if (a->nvmlDeviceGetUUID) {
        r = a->nvmlDeviceGetUUID(dev, g->uuid, sizeof g->uuid);
        if (r != NVML_SUCCESS) {
            snprintf(g->uuid, sizeof g->uuid, "%s", st->uuid); /* last known, or "" */
            note_health(g, r);
        }
    }
    if (strcmp(st->uuid, g->uuid) != 0) { /* another GPU at this index now */
        gpu_state_reset(a, st);
        snprintf(st->uuid, sizeof st->uuid, "%s", g->uuid);
    }
    snprintf(g->name, sizeof g->name, "%s", st->name);
    snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "%s", st->pci_bus_id);
    if (a->nvmlDeviceGetName && !gpu_lost(g)) {
        char name[SNAPSHOT_NAME_MAX];
        r = a->nvmlDeviceGetName(dev, name, sizeof name);
        if (r == NVML_SUCCESS) {
            snprintf(g->name, sizeof g->name, "%s", name);
            snprintf(st->name, sizeof st->name, "%s", name);
        } else {
            note_health(g, r);
        }
    }
    nvmlReturn_t (*pci)(nvmlDevice_t, nvmlPciInfo_t *) =
        a->nvmlDeviceGetPciInfo_v3
            ? a->nvmlDeviceGetPciInfo_v3
            : (a->nvmlDeviceGetPciInfo_v2 ? a->nvmlDeviceGetPciInfo_v2 : a->nvmlDeviceGetPciInfo);
    if (pci && !gpu_lost(g)) {
        nvmlPciInfo_t p;
        memset(&p, 0, sizeof p);
        r = pci(dev, &p);
        if (r == NVML_SUCCESS) {
            /* Only _v3 fills busId; older layouts line up on the first 16
             * bytes (busIdLegacy) alone. */
            const char *bus = pci == a->nvmlDeviceGetPciInfo_v3 ? p.busId : p.busIdLegacy;
            snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "%.*s",
                     pci == a->nvmlDeviceGetPciInfo_v3 ? (int)sizeof p.busId
                                                       : (int)sizeof p.busIdLegacy,
                     bus);
            snprintf(st->pci_bus_id, sizeof st->pci_bus_id, "%s", g->pci_bus_id);
        } else {
            note_health(g, r);
        }
    }

    unsigned cur_mig = 0, pend_mig = 0;
    if (a->nvmlDeviceGetMigMode && !gpu_lost(g) &&
        a->nvmlDeviceGetMigMode(dev, &cur_mig, &pend_mig) == NVML_SUCCESS)
        g->mig_enabled = cur_mig == NVML_DEVICE_MIG_ENABLE;

    nvmlUtilization_t u;
    if (a->nvmlDeviceGetUtilizationRates && !gpu_lost(g)) {
        r = a->nvmlDeviceGetUtilizationRates(dev, &u);
        if (field_result(g, GPU_F_GPU_UTIL, r) && field_result(g, GPU_F_MEM_UTIL, r)) {
            g->gpu_util_pct = u.gpu;
            g->mem_util_pct = u.memory;
        }
    }
    if (!gpu_lost(g))
        sample_memory(a, dev, g);
    if (!gpu_lost(g))
        sample_temperature(a, dev, g);
    sample_power(a, dev, g);

    unsigned v;
    if (a->nvmlDeviceGetPcieThroughput && !gpu_lost(g) &&
        (!st->pcie_read || now - st->pcie_at >= PCIE_EVERY_NS)) {
        static const nvmlPcieUtilCounter_t dir[2] = {NVML_PCIE_UTIL_TX_BYTES,
                                                     NVML_PCIE_UTIL_RX_BYTES};
        for (int i = 0; i < 2 && !gpu_lost(g); i++) {
            st->pcie_r[i] = a->nvmlDeviceGetPcieThroughput(dev, dir[i], &st->pcie_kbps[i]);
            if (st->pcie_r[i] != NVML_SUCCESS)
                note_health(g, st->pcie_r[i]);
        }
        st->pcie_read = !gpu_lost(g);
        st->pcie_at = now;
    }
    if (st->pcie_read && !gpu_lost(g)) {
        if (field_result(g, GPU_F_PCIE_TX, st->pcie_r[0]))
            g->pcie_tx_bytes_per_s = (uint64_t)st->pcie_kbps[0] * 1024u; /* KB/s as KiB/s */
        if (field_result(g, GPU_F_PCIE_RX, st->pcie_r[1]))
            g->pcie_rx_bytes_per_s = (uint64_t)st->pcie_kbps[1] * 1024u;
    }
    if (a->nvmlDeviceGetClockInfo && !gpu_lost(g) &&
        field_result(g, GPU_F_SM_CLOCK, a->nvmlDeviceGetClockInfo(dev, NVML_CLOCK_SM, &v)))
        g->sm_clock_mhz = v;

    nvmlReturn_t (*reasons)(nvmlDevice_t, unsigned long long *) =
        a->nvmlDeviceGetCurrentClocksEventReasons ? a->nvmlDeviceGetCurrentClocksEventReasons
                                                  : a->nvmlDeviceGetCurrentClocksThrottleReasons;
    unsigned long long bits;
    if (reasons && !gpu_lost(g) && field_result(g, GPU_F_CLOCK_EVENT_REASONS, reasons(dev, &bits)))
        g->clock_event_reasons = bits;

    sample_nvlink(c, dev, g, st);
    sample_gpm(c, dev, g, st, now);
    if (!gpu_lost(g) && !g->mig_enabled)
        sample_processes(c, dev, &g->procs, &st->proc_util_seen_us);
    else if (g->mig_enabled)
        g->procs.util_code = NVML_ERROR_NOT_SUPPORTED; /* per MIG instance instead */

    unsigned nmig = 0;
    if (g->mig_enabled && !gpu_lost(g))
        nmig = sample_mig(c, dev, g, st, now, mig_out, mig_room);

    if (gpu_lost(g)) {
        /* Whatever was read before the loss is not to be trusted. */
        g->valid = 0;
        for (int f = 0; f < GPU_F_COUNT; f++)
            if (g->field_error[f] == 0)
                g->field_error[f] = NVML_ERROR_GPU_IS_LOST;
        gpu_state_reset(a, st); /* counters and GPM samples are void now */
        snprintf(st->uuid, sizeof st->uuid, "%s", g->uuid);
        snprintf(st->name, sizeof st->name, "%s", g->name);
        snprintf(st->pci_bus_id, sizeof st->pci_bus_id, "%s", g->pci_bus_id);
        nmig = 0;
    }
    return nmig;
}

/* ---- the sweep ----------------------------------------------------------- */

int nvml_collector_sample(nvml_collector_t *c, mono_ns_t now, snapshot_t **out) {
    const nvml_api_t *a = c->api;
    mono_ns_t t0 = clock_mono_now();
    char why[320]; /* init_why and when the next attempt is due; cut to the snapshot's 256 */
    c->wants_second = false;
    *out = NULL;

    nvmlReturn_t r = ensure_init(c, now, why, sizeof why);
    snapshot_t *s = NULL;
    if (r != NVML_SUCCESS) {
        s = down_snapshot(c, (int)r, "%s", why);
    } else {
        unsigned count = 0;
        const char *which =
            a->nvmlDeviceGetCount_v2 ? "nvmlDeviceGetCount_v2" : "nvmlDeviceGetCount";
        r = a->nvmlDeviceGetCount_v2 ? a->nvmlDeviceGetCount_v2(&count)
                                     : a->nvmlDeviceGetCount(&count);
        if (r != NVML_SUCCESS) {
            s = down_snapshot(c, (int)r, "%s: %s (%s)", which, nvml_code_name((int)r),
                              nvml_error_text(c, r));
            /* Start over: shut down and re-initialise (with backoff). */
            collector_shutdown(c);
            c->next_init_at = clock_add_sat(now, c->init_backoff_ns);
        } else {
            if (count > COLLECTOR_MAX_GPUS) {
                LOG_WARN(c->log, "node reports %u GPUs; sampling the first %u", count,
                         COLLECTOR_MAX_GPUS);
                count = COLLECTOR_MAX_GPUS;
            }
            unsigned nmig = 0;
            c->nproc = 0;
            const unsigned mig_room_total = COLLECTOR_MAX_GPUS * COLLECTOR_MAX_MIG_PER_GPU;
            for (unsigned i = 0; i < count; i++) {
                unsigned got =
                    sample_gpu(c, i, &c->gpus[i], now, &c->migs[nmig], mig_room_total - nmig);
                c->gpus[i].mig_first = nmig;
                c->gpus[i].mig_count = got;
                nmig += got;
            }
            s = snapshot_new_with_procs(count, nmig, c->nproc);
            if (s) {
                if (c->nproc)
                    memcpy(s->procs, c->procs, c->nproc * sizeof *s->procs);
                if (count)
                    memcpy(s->gpus, c->gpus, count * sizeof *s->gpus);
                if (nmig)
                    memcpy(s->mig, c->migs, nmig * sizeof *s->mig);
                snprintf(s->driver_version, sizeof s->driver_version, "%s", c->driver_version);
            }
        }
    }
    if (!s)
        return KGS_ENOMEM;
    snprintf(s->node_name, sizeof s->node_name, "%s", c->node_name);
    s->seq = ++c->seq;
    s->taken_mono = clock_mono_now();
    s->taken_wall_ms = clock_wall_ms();
    s->sample_duration_ns = s->taken_mono - t0;
    *out = s;
    return 0;
}
