/*
 * amdsmi_backend.c - the amd-smi sweep (a GPU backend).
 *
 * DESIGN
 * A sweep lists every processor handle under every socket (amd-smi's order:
 * by socket, then by partition), samples each into a gpu_record_t, then
 * gathers the process lists, and only then allocates the snapshot, whose
 * size the sweep has just learnt. What each answer means is decided in
 * amdsmi_decode.c; this file calls the library and assembles.
 *
 * A symbol the library lacks leaves its fields unknown with field_error 0
 * (as NVML's missing symbols do); a call that fails records its status as
 * the matching NVML code, and the device's health follows the NVML
 * collector's rule: NOT_FOUND from any call on a device means the device is
 * gone, health "lost" (NVML's GPU_IS_LOST path); another hard error
 * (TIMEOUT, DRM_ERROR, IO, ...) makes it "error" with that code; "not
 * supported", "no permission" and "insufficient size" only leave the field
 * unknown. KEDA's fallback engages on the rules that read a sick device.
 *
 * Partitions: amd-smi returns partition 0's activity and socket power for
 * every partition of a DPX/QPX/CPX GPU. The id of a partition comes from
 * amdsmi_get_gpu_kfd_info (library 24.7 and later); without it no partition
 * is known to be partition 0, so in a partitioned mode every partition's
 * activity and power are unknown. Where the library is 24.7 (the one
 * layout amdsmi_abi.h pins) a partition whose id is known gets its own gfx
 * busy figure from the metrics table's per-XCP block
 * (xcp_stats[id].gfx_busy_inst, the mean of its XCCs); its memory activity
 * and power stay unknown (the table has no per-XCP figure for them).
 *
 * Per-process utilisation: amd-smi reports each process's gfx engine time
 * (engine_usage.gfx, drm-engine-gfx of its fdinfo: nanoseconds since it
 * opened the device), so a process's share is the growth of that count
 * between two sweeps over the wall time between them, as the sysfs reader
 * computes it. The first sweep has none and asks for a second.
 */
#include "amdsmi/amdsmi_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amdsmi/amdsmi_decode.h"
#include "core/err.h"

enum {
    CODE_NOT_SUPPORTED = 3,
    CODE_NO_PERMISSION = 4,
    CODE_INSUFFICIENT_SIZE = 7,
    CODE_GPU_IS_LOST = 15
};

#define MAX_SOCKETS 64

/* One process on one device, kept until the snapshot is allocated. */
typedef struct {
    unsigned dev;
    uint32_t pid;
    uint64_t vram_bytes;
    uint64_t gfx_ns;
} use_t;

struct amdsmi_backend {
    const amdsmi_api_t *api;
    const logger_t *log;
    char node_name[256];
    uint64_t seq;
    bool inited;

    amdsmi_processor_handle handles[AMDSMI_MAX_DEVICES];
    unsigned ndev;

    amdsmi_proc_info_t procbuf[AMDSMI_MAX_PROCS_PER_GPU];
    use_t *use;
    unsigned nuse, use_cap;
    /* The previous sweep's, for engine-time rates; a device index counts
     * as the same device only while its UUID is the same. */
    use_t *prev;
    unsigned nprev, prev_cap;
    mono_ns_t prev_at; /* 0: no previous sweep */
    char prev_uuid[AMDSMI_MAX_DEVICES][SNAPSHOT_UUID_MAX];
    unsigned prev_ndev;
    bool wants_second;

    amdsmi_version_t lib; /* year 0: not known */
    /* The metrics table, far larger than any layout: the library writes its
     * own struct's size, whatever its version. Read only for 24.7. */
    unsigned char metrics[65536];
};

int amdsmi_backend_new(const amdsmi_api_t *api, const logger_t *log, const char *node_name,
                       amdsmi_backend_t **out) {
    amdsmi_backend_t *b = calloc(1, sizeof *b);
    if (!b)
        return KGS_ENOMEM;
    b->api = api;
    b->log = log;
    snprintf(b->node_name, sizeof b->node_name, "%s", node_name ? node_name : "");
    *out = b;
    return 0;
}

void amdsmi_backend_free(amdsmi_backend_t *b) {
    if (!b)
        return;
    if (b->inited)
        b->api->amdsmi_shut_down();
    free(b->use);
    free(b->prev);
    free(b);
}

/* ---- init and enumeration ------------------------------------------------------ */

/* Initialises (if needed) and lists the devices into b->handles. Returns
 * the amd-smi status, with the failing call's name in *what. */
static uint32_t enumerate(amdsmi_backend_t *b, const char **what) {
    const amdsmi_api_t *a = b->api;
    uint32_t st;
    if (!b->inited) {
        *what = "amdsmi_init";
        if ((st = a->amdsmi_init(AMDSMI_INIT_AMD_GPUS)) != AMDSMI_STATUS_SUCCESS)
            return st;
        b->inited = true;
        memset(&b->lib, 0, sizeof b->lib);
        if (a->amdsmi_get_lib_version &&
            a->amdsmi_get_lib_version(&b->lib) != AMDSMI_STATUS_SUCCESS)
            memset(&b->lib, 0, sizeof b->lib);
    }
    amdsmi_socket_handle sockets[MAX_SOCKETS];
    uint32_t nsock = 0;
    *what = "amdsmi_get_socket_handles";
    if ((st = a->amdsmi_get_socket_handles(&nsock, NULL)) != AMDSMI_STATUS_SUCCESS)
        return st;
    if (nsock > MAX_SOCKETS)
        nsock = MAX_SOCKETS;
    if (nsock && (st = a->amdsmi_get_socket_handles(&nsock, sockets)) != AMDSMI_STATUS_SUCCESS)
        return st;
    b->ndev = 0;
    *what = "amdsmi_get_processor_handles";
    for (uint32_t s = 0; s < nsock && s < MAX_SOCKETS && b->ndev < AMDSMI_MAX_DEVICES; s++) {
        uint32_t n = 0;
        if ((st = a->amdsmi_get_processor_handles(sockets[s], &n, NULL)) != AMDSMI_STATUS_SUCCESS)
            return st;
        if (n > AMDSMI_MAX_DEVICES - b->ndev)
            n = AMDSMI_MAX_DEVICES - b->ndev;
        if (n && (st = a->amdsmi_get_processor_handles(sockets[s], &n, &b->handles[b->ndev])) !=
                     AMDSMI_STATUS_SUCCESS)
            return st;
        b->ndev += n;
    }
    return AMDSMI_STATUS_SUCCESS;
}

/* After a failed enumeration amd-smi is shut down, so the next sweep
 * starts over (a driver reload invalidates every handle). */
static void reset(amdsmi_backend_t *b) {
    if (b->inited)
        b->api->amdsmi_shut_down();
    b->inited = false;
    b->ndev = 0;
}

int amdsmi_backend_probe(amdsmi_backend_t *b, char *err, size_t errlen) {
    const char *what = "";
    uint32_t st = enumerate(b, &what);
    if (st != AMDSMI_STATUS_SUCCESS) {
        reset(b);
        kgs_seterr(err, errlen, KGS_ENOTFOUND, "%s: %s (%u)", what, amdsmi_status_name(st), st);
        return -1;
    }
    return (int)b->ndev;
}

/* ---- one device ---------------------------------------------------------------- */

/* The device's health after a call answered `status` (any call, a field's
 * or not): the NVML collector's note_health, on the mapped code. */
static void note_health(gpu_record_t *g, uint32_t status) {
    int code = amdsmi_status_to_nvml_code(status);
    if (code == 0 || code == CODE_NOT_SUPPORTED || code == CODE_NO_PERMISSION ||
        code == CODE_INSUFFICIENT_SIZE)
        return;
    if (code == CODE_GPU_IS_LOST) {
        g->health = GPU_HEALTH_LOST;
        g->health_nvml_code = code;
    } else if (g->health == GPU_HEALTH_OK) {
        g->health = GPU_HEALTH_ERROR;
        g->health_nvml_code = code;
    }
}

static void field_result(gpu_record_t *g, gpu_field_t f, uint32_t status) {
    if (status == AMDSMI_STATUS_SUCCESS) {
        g->valid |= 1u << f;
        g->field_error[f] = 0;
        return;
    }
    g->field_error[f] = (int16_t)amdsmi_status_to_nvml_code(status);
    note_health(g, status);
}

static void set_pct(gpu_record_t *g, gpu_field_t f, unsigned *dst, uint32_t raw) {
    unsigned pct;
    if (amdsmi_percent(raw, &pct)) {
        *dst = pct;
        field_result(g, f, AMDSMI_STATUS_SUCCESS);
    } else {
        g->field_error[f] = CODE_NOT_SUPPORTED; /* the metrics table did not fill it */
    }
}

static void sample_identity(const amdsmi_api_t *a, amdsmi_processor_handle h, gpu_record_t *g,
                            amdsmi_compute_partition_t *cp, bool *pid_known, uint32_t *part_id) {
    uint32_t st;
    if (a->amdsmi_get_gpu_device_bdf) {
        amdsmi_bdf_t bdf = {.as_uint = 0};
        if ((st = a->amdsmi_get_gpu_device_bdf(h, &bdf)) == AMDSMI_STATUS_SUCCESS) {
            char text[AMDSMI_BDF_MAX];
            amdsmi_bdf_format(bdf.as_uint, text);
            snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "%s", text);
        } else {
            note_health(g, st);
        }
    }
    if (a->amdsmi_get_gpu_device_uuid) {
        char uuid[AMDSMI_GPU_UUID_SIZE + 2] = "";
        unsigned len = AMDSMI_GPU_UUID_SIZE;
        if ((st = a->amdsmi_get_gpu_device_uuid(h, &len, uuid)) == AMDSMI_STATUS_SUCCESS) {
            uuid[sizeof uuid - 1] = '\0';
            snprintf(g->uuid, sizeof g->uuid, "%s", uuid);
        } else {
            note_health(g, st);
        }
    }
    if (a->amdsmi_get_gpu_asic_info) {
        amdsmi_asic_info_t info;
        memset(&info, 0, sizeof info);
        if ((st = a->amdsmi_get_gpu_asic_info(h, &info)) == AMDSMI_STATUS_SUCCESS) {
            info.market_name[sizeof info.market_name - 1] = '\0';
            snprintf(g->name, sizeof g->name, "%.*s", (int)sizeof g->name - 1, info.market_name);
        } else {
            note_health(g, st);
        }
    }
    char cpt[32] = "", mpt[32] = "";
    amdsmi_memory_partition_t mp = AMDSMI_NPS_UNKNOWN;
    *cp = AMDSMI_CP_UNKNOWN;
    if (a->amdsmi_get_gpu_compute_partition &&
        a->amdsmi_get_gpu_compute_partition(h, cpt, sizeof cpt - 1) == AMDSMI_STATUS_SUCCESS)
        (void)amdsmi_compute_partition_parse(cpt, strnlen(cpt, sizeof cpt), cp);
    if (a->amdsmi_get_gpu_memory_partition &&
        a->amdsmi_get_gpu_memory_partition(h, mpt, sizeof mpt - 1) == AMDSMI_STATUS_SUCCESS)
        (void)amdsmi_memory_partition_parse(mpt, strnlen(mpt, sizeof mpt), &mp);
    *pid_known = false;
    *part_id = 0;
    if (a->amdsmi_get_gpu_kfd_info) {
        amdsmi_kfd_info_t kfd;
        memset(&kfd, 0, sizeof kfd);
        if (a->amdsmi_get_gpu_kfd_info(h, &kfd) == AMDSMI_STATUS_SUCCESS &&
            kfd.current_partition_id != 0xFFFFFFFFu) {
            *pid_known = true;
            *part_id = kfd.current_partition_id;
        }
    }
    /* A partition is a device: say which in its name (the snapshot has no
     * partition field; the attribution side names partitions by profile). */
    if (*cp != AMDSMI_CP_UNKNOWN && *cp != AMDSMI_CP_SPX) {
        char profile[24];
        amdsmi_partition_profile(*cp, mp, profile, sizeof profile);
        char base[SNAPSHOT_NAME_MAX];
        snprintf(base, sizeof base, "%s", g->name[0] ? g->name : "AMD GPU");
        if (*pid_known)
            snprintf(g->name, sizeof g->name, "%.56s [%.12s partition %u]", base, profile,
                     *part_id);
        else
            snprintf(g->name, sizeof g->name, "%.56s [%.12s partition]", base, profile);
    }
}

/* A partition's own gfx busy figure from the metrics table's XCP block. */
static bool xcp_busy(amdsmi_backend_t *b, amdsmi_processor_handle h, uint32_t part_id,
                     unsigned *pct) {
    if (!b->api->amdsmi_get_gpu_metrics_info || b->lib.year != 24 || b->lib.major != 7)
        return false;
    memset(b->metrics, 0, AMDSMI_GPU_METRICS_24_7_SIZE);
    if (b->api->amdsmi_get_gpu_metrics_info(h, b->metrics) != AMDSMI_STATUS_SUCCESS)
        return false;
    return amdsmi_xcp_busy(b->lib.year, b->lib.major, b->metrics, sizeof b->metrics, part_id, pct);
}

static void sample_device(amdsmi_backend_t *b, amdsmi_processor_handle h, unsigned index,
                          gpu_record_t *g) {
    const amdsmi_api_t *a = b->api;
    memset(g, 0, sizeof *g);
    g->index = index;
    g->vendor = GPU_VENDOR_AMD;
    amdsmi_compute_partition_t cp;
    bool pid_known;
    uint32_t part_id;
    sample_identity(a, h, g, &cp, &pid_known, &part_id);
    bool own = amdsmi_activity_is_own(cp, pid_known, part_id);
    uint32_t st;

    if (!own) {
        /* Partition 0's figures would come back: unknown, not copied. */
        g->field_error[GPU_F_GPU_UTIL] = CODE_NOT_SUPPORTED;
        g->field_error[GPU_F_MEM_UTIL] = CODE_NOT_SUPPORTED;
        g->field_error[GPU_F_POWER] = CODE_NOT_SUPPORTED;
        g->field_error[GPU_F_POWER_LIMIT] = CODE_NOT_SUPPORTED;
        unsigned pct;
        if (pid_known && xcp_busy(b, h, part_id, &pct)) {
            g->gpu_util_pct = pct;
            field_result(g, GPU_F_GPU_UTIL, AMDSMI_STATUS_SUCCESS);
        }
    } else {
        if (a->amdsmi_get_gpu_activity) {
            amdsmi_engine_usage_t u;
            memset(&u, 0, sizeof u);
            if ((st = a->amdsmi_get_gpu_activity(h, &u)) == AMDSMI_STATUS_SUCCESS) {
                set_pct(g, GPU_F_GPU_UTIL, &g->gpu_util_pct, u.gfx_activity);
                set_pct(g, GPU_F_MEM_UTIL, &g->mem_util_pct, u.umc_activity);
            } else {
                field_result(g, GPU_F_GPU_UTIL, st);
                field_result(g, GPU_F_MEM_UTIL, st);
            }
        }
        if (a->amdsmi_get_power_info) {
            amdsmi_power_info_t p;
            memset(&p, 0, sizeof p);
            if ((st = a->amdsmi_get_power_info(h, &p)) == AMDSMI_STATUS_SUCCESS) {
                /* MI300 fills current_socket_power; older ASICs the average. */
                if (amdsmi_power_w(p.current_socket_power, &g->power_w) ||
                    amdsmi_power_w(p.average_socket_power, &g->power_w))
                    field_result(g, GPU_F_POWER, AMDSMI_STATUS_SUCCESS);
                else
                    g->field_error[GPU_F_POWER] = CODE_NOT_SUPPORTED;
                if (amdsmi_power_limit_w(p.power_limit, &g->power_limit_w))
                    field_result(g, GPU_F_POWER_LIMIT, AMDSMI_STATUS_SUCCESS);
                else
                    g->field_error[GPU_F_POWER_LIMIT] = CODE_NOT_SUPPORTED;
            } else {
                field_result(g, GPU_F_POWER, st);
                field_result(g, GPU_F_POWER_LIMIT, st);
            }
        }
    }
    if (a->amdsmi_get_gpu_vram_usage) {
        amdsmi_vram_usage_t v;
        memset(&v, 0, sizeof v);
        if ((st = a->amdsmi_get_gpu_vram_usage(h, &v)) == AMDSMI_STATUS_SUCCESS) {
            g->memory_used_bytes = (uint64_t)v.vram_used << 20;
            g->memory_total_bytes = (uint64_t)v.vram_total << 20;
        }
        field_result(g, GPU_F_MEM_USED, st);
        field_result(g, GPU_F_MEM_TOTAL, st);
    }
    if (a->amdsmi_get_temp_metric) {
        int64_t t = 0;
        /* MI200/MI300 have no edge sensor: the hotspot (junction) then. */
        st = a->amdsmi_get_temp_metric(h, AMDSMI_TEMPERATURE_TYPE_EDGE, AMDSMI_TEMP_CURRENT, &t);
        if (amdsmi_status_to_nvml_code(st) == CODE_NOT_SUPPORTED)
            st = a->amdsmi_get_temp_metric(h, AMDSMI_TEMPERATURE_TYPE_HOTSPOT, AMDSMI_TEMP_CURRENT,
                                           &t);
        g->temperature_c = (int)t;
        field_result(g, GPU_F_TEMPERATURE, st);
    }
    if (a->amdsmi_get_clock_info) {
        amdsmi_clk_info_t c;
        memset(&c, 0, sizeof c);
        if ((st = a->amdsmi_get_clock_info(h, AMDSMI_CLK_TYPE_GFX, &c)) == AMDSMI_STATUS_SUCCESS)
            g->sm_clock_mhz = c.clk;
        field_result(g, GPU_F_SM_CLOCK, st);
    }
    /* What amd-smi has no counterpart for: null, not an error. */
    static const gpu_field_t nvidia_only[] = {
        GPU_F_MEM_RESERVED,        GPU_F_PCIE_TX,   GPU_F_PCIE_RX,      GPU_F_NVLINK_TX,
        GPU_F_NVLINK_RX,           GPU_F_SM_ACTIVE, GPU_F_SM_OCCUPANCY, GPU_F_DRAM_BW_UTIL,
        GPU_F_CLOCK_EVENT_REASONS, GPU_F_ENERGY,
    };
    for (size_t i = 0; i < sizeof nvidia_only / sizeof nvidia_only[0]; i++)
        g->field_error[nvidia_only[i]] = CODE_NOT_SUPPORTED;
}

/* ---- processes ------------------------------------------------------------------ */

static use_t *use_push(amdsmi_backend_t *b) {
    if (b->nuse == b->use_cap) {
        unsigned cap = b->use_cap ? b->use_cap * 2 : 64;
        use_t *p = realloc(b->use, cap * sizeof *p);
        if (!p)
            return NULL;
        b->use = p;
        b->use_cap = cap;
    }
    return &b->use[b->nuse++];
}

/* The device's processes into b->use; fills the list's state in g. Returns
 * KGS_ENOMEM or 0. */
static int gather_procs(amdsmi_backend_t *b, amdsmi_processor_handle h, unsigned dev,
                        gpu_record_t *g) {
    proc_list_t *pl = &g->procs;
    /* util_ok is settled in the sweep, once it knows a previous one. */
    if (!b->api->amdsmi_get_gpu_process_list) {
        pl->list_ok = false;
        pl->list_code = 0; /* no symbol */
        return 0;
    }
    uint32_t n = AMDSMI_MAX_PROCS_PER_GPU;
    memset(b->procbuf, 0, sizeof b->procbuf);
    uint32_t st = b->api->amdsmi_get_gpu_process_list(h, &n, b->procbuf);
    if (st != AMDSMI_STATUS_SUCCESS && st != AMDSMI_STATUS_OUT_OF_RESOURCES) {
        pl->list_ok = false;
        pl->list_code = (int16_t)amdsmi_status_to_nvml_code(st);
        note_health(g, st);
        return 0;
    }
    pl->list_ok = true;
    /* OUT_OF_RESOURCES: the buffer is full and n says how many there are. */
    unsigned kept = n < AMDSMI_MAX_PROCS_PER_GPU ? n : AMDSMI_MAX_PROCS_PER_GPU;
    pl->dropped = n - kept;
    for (unsigned i = 0; i < kept; i++) {
        use_t *u = use_push(b);
        if (!u)
            return KGS_ENOMEM;
        u->dev = dev;
        u->pid = b->procbuf[i].pid;
        u->vram_bytes = b->procbuf[i].memory_usage.vram_mem;
        u->gfx_ns = b->procbuf[i].engine_usage.gfx;
    }
    return 0;
}

/* ---- the sweep ------------------------------------------------------------------ */

static void stamp(amdsmi_backend_t *b, snapshot_t *s, mono_ns_t t0) {
    snprintf(s->node_name, sizeof s->node_name, "%s", b->node_name);
    s->seq = ++b->seq;
    s->taken_mono = clock_mono_now();
    s->taken_wall_ms = clock_wall_ms();
    s->sample_duration_ns = s->taken_mono - t0;
}

static int down_snapshot(amdsmi_backend_t *b, mono_ns_t t0, int code, const char *msg,
                         snapshot_t **out) {
    snapshot_t *s = snapshot_new(0, 0);
    if (!s)
        return KGS_ENOMEM;
    s->status = SNAPSHOT_NVML_DOWN;
    s->nvml_code = code;
    snprintf(s->error, sizeof s->error, "%s", msg);
    stamp(b, s, t0);
    *out = s;
    return 0;
}

/* The process's gfx time at the previous sweep on the same device, or
 * NULL. */
static const use_t *prev_use(const amdsmi_backend_t *b, unsigned dev, const char *uuid,
                             uint32_t pid) {
    if (dev >= b->prev_ndev || strcmp(b->prev_uuid[dev], uuid) != 0)
        return NULL;
    for (unsigned i = 0; i < b->nprev; i++)
        if (b->prev[i].dev == dev && b->prev[i].pid == pid)
            return &b->prev[i];
    return NULL;
}

/* Keeps this sweep's processes for the next sweep's rates. */
static void remember(amdsmi_backend_t *b, const snapshot_t *s, mono_ns_t now) {
    use_t *t = b->prev;
    unsigned tc = b->prev_cap;
    b->prev = b->use;
    b->prev_cap = b->use_cap;
    b->nprev = b->nuse;
    b->use = t;
    b->use_cap = tc;
    b->nuse = 0;
    b->prev_at = now;
    b->prev_ndev = s->gpu_count;
    for (unsigned i = 0; i < s->gpu_count; i++)
        memcpy(b->prev_uuid[i], s->gpus[i].uuid, SNAPSHOT_UUID_MAX);
}

int amdsmi_backend_sample(amdsmi_backend_t *b, mono_ns_t now, snapshot_t **out) {
    mono_ns_t t0 = clock_mono_now();
    *out = NULL;
    const char *what = "";
    uint32_t st = enumerate(b, &what);
    char msg[256];
    if (st != AMDSMI_STATUS_SUCCESS) {
        reset(b);
        snprintf(msg, sizeof msg, "amd-smi: %s: %s (%u)", what, amdsmi_status_name(st), st);
        return down_snapshot(b, t0, amdsmi_status_to_nvml_code(st), msg, out);
    }
    if (b->ndev == 0)
        return down_snapshot(b, t0, 9, "amd-smi: no AMD GPU (amdsmi_get_processor_handles)", out);

    gpu_record_t *recs = calloc(b->ndev, sizeof *recs);
    if (!recs)
        return KGS_ENOMEM;
    b->nuse = 0;
    for (unsigned i = 0; i < b->ndev; i++) {
        sample_device(b, b->handles[i], i, &recs[i]);
        if (gather_procs(b, b->handles[i], i, &recs[i]) != 0) {
            free(recs);
            return KGS_ENOMEM;
        }
    }
    snapshot_t *s = snapshot_new_with_procs(b->ndev, 0, b->nuse);
    if (!s) {
        free(recs);
        return KGS_ENOMEM;
    }
    double window_ns = b->prev_at && now > b->prev_at ? (double)(now - b->prev_at) : 0.0;
    b->wants_second = false;
    unsigned next = 0;
    for (unsigned i = 0, ui = 0; i < b->ndev; i++) {
        s->gpus[i] = recs[i];
        proc_list_t *pl = &s->gpus[i].procs;
        pl->first = next;
        pl->count = 0;
        pl->util_ok = pl->list_ok && window_ns > 0;
        pl->util_code = pl->util_ok ? 0 : pl->list_ok ? CODE_NOT_SUPPORTED : pl->list_code;
        for (; ui < b->nuse && b->use[ui].dev == i; ui++) {
            const use_t *u = &b->use[ui];
            proc_record_t *p = &s->procs[next++];
            pl->count++;
            p->pid = u->pid;
            p->used_memory_bytes = u->vram_bytes;
            p->valid = 1u << PROC_F_USED_MEMORY;
            const use_t *before = prev_use(b, i, s->gpus[i].uuid, u->pid);
            if (window_ns > 0 && before) {
                uint64_t d = u->gfx_ns > before->gfx_ns ? u->gfx_ns - before->gfx_ns : 0;
                double pct = (double)d / window_ns * 100.0;
                p->sm_util_pct = pct > 100.0 ? 100.0 : pct;
                p->valid |= 1u << PROC_F_SM_UTIL;
            } else if (!b->prev_at) {
                b->wants_second = true;
            }
        }
    }
    free(recs);
    remember(b, s, now);
    if (b->api->amdsmi_get_gpu_driver_info) {
        amdsmi_driver_info_t d;
        memset(&d, 0, sizeof d);
        if (b->api->amdsmi_get_gpu_driver_info(b->handles[0], &d) == AMDSMI_STATUS_SUCCESS) {
            d.driver_version[sizeof d.driver_version - 1] = '\0';
            snprintf(s->driver_version, sizeof s->driver_version, "%s", d.driver_version);
        }
    }
    stamp(b, s, t0);
    *out = s;
    return 0;
}

/* ---- the GPU backend table ------------------------------------------------------ */

static int backend_sample(void *self, mono_ns_t now, snapshot_t **out) {
    return amdsmi_backend_sample(self, now, out);
}

static void backend_free(void *self) {
    amdsmi_backend_free(self);
}

static bool backend_wants_second_sample(const void *self) {
    return ((const amdsmi_backend_t *)self)->wants_second;
}

static const gpu_backend_ops_t amdsmi_ops = {
    .name = "amdsmi",
    .sample = backend_sample,
    .wants_second_sample = backend_wants_second_sample,
    .free = backend_free,
};

gpu_backend_t amdsmi_backend_as_gpu_backend(amdsmi_backend_t *b) {
    return (gpu_backend_t){.ops = &amdsmi_ops, .self = b};
}
