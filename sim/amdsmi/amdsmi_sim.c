/*
 * amdsmi_sim.c - libamdsmi-sim.so, a stand-in for ROCm's libamd_smi.so: the
 * functions of AMDSMI_SYMBOLS (src/amdsmi/amdsmi_abi.h) with amd-smi's ABI,
 * answering from the JSON scenario named by AMDSMI_SIM_SCENARIO (format:
 * amd_scenario.h, docs/amd.md). The real loader and backend run against
 * it unchanged: name it libamd_smi.so on the library path, or pass it as
 * the library path.
 *
 * DESIGN
 * The scenario is read at amdsmi_init (each init re-reads it) and freed at
 * amdsmi_shut_down. A socket is a physical GPU; each of its partitions
 * (1 in SPX, 8 in CPX) is a processor handle, as amd-smi shows them.
 * Handles point into static arrays, so they stay valid across re-inits.
 *
 * Faithful where the real library is awkward: amdsmi_get_gpu_activity and
 * amdsmi_get_power_info answer partition 0's figures for every partition
 * (what amd-smi does in CPX/DPX/QPX); a metric the table does not fill is
 * 0xFFFF with SUCCESS, not an error; amdsmi_get_gpu_process_list answers
 * OUT_OF_RESOURCES with the list full and *max_processes the real count.
 * A step of a GPU's error_timeline makes every call on it (all partitions)
 * answer that status: NOT_FOUND is how a GPU that left the bus answers.
 * It says it is library 24.7, and its metrics table has that version's
 * layout with only num_partition and the per-XCP gfx_busy_inst filled: a
 * partition's own busy figure is its partition_values gfx_activity (one XCC
 * a partition, as in CPX), unfilled (UINT32_MAX) where the scenario has none.
 *
 * Variants for the loader's tests: built with AMDSMI_SIM_NO_PROCESS_LIST
 * the library lacks amdsmi_get_gpu_process_list (an optional symbol); with
 * AMDSMI_SIM_NO_PROCESSOR_HANDLES it lacks a required one.
 *
 * Not thread-safe beyond what one sampler thread needs (as amd-smi
 * serialises per device, a caller here is the backend's one thread).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "amd_scenario.h"
#include "amdsmi/amdsmi_abi.h"

#define SIM_EXPORT __attribute__((visibility("default")))

#define SIM_DECL(name, required, params) SIM_EXPORT amdsmi_status_t name params;
AMDSMI_SYMBOLS(SIM_DECL)
#undef SIM_DECL

typedef struct {
    unsigned gpu, part;
} sim_handle_t;

static sim_handle_t sim_sockets[AMD_SCENARIO_MAX_GPUS];
static sim_handle_t sim_procs[AMD_SCENARIO_MAX_GPUS][AMD_SCENARIO_MAX_PARTITIONS];
static amd_scenario_t *sim_sc;
static struct timespec sim_t0;

static double since_init_s(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - sim_t0.tv_sec) + (double)(now.tv_nsec - sim_t0.tv_nsec) / 1e9;
}

amdsmi_status_t amdsmi_init(uint64_t init_flags) {
    if (!(init_flags & AMDSMI_INIT_AMD_GPUS))
        return AMDSMI_STATUS_INVAL;
    const char *path = getenv("AMDSMI_SIM_SCENARIO");
    if (!path || !*path) {
        fprintf(stderr, "libamdsmi-sim: AMDSMI_SIM_SCENARIO is not set\n");
        return AMDSMI_STATUS_INIT_ERROR;
    }
    amd_scenario_t *sc;
    char err[512];
    if (amd_scenario_load_file(path, &sc, err, sizeof err) != 0) {
        fprintf(stderr, "libamdsmi-sim: %s\n", err);
        return AMDSMI_STATUS_INIT_ERROR;
    }
    if (sc->init_status != AMDSMI_STATUS_SUCCESS) {
        amdsmi_status_t st = sc->init_status;
        amd_scenario_free(sc);
        return st;
    }
    amd_scenario_free(sim_sc);
    sim_sc = sc;
    for (unsigned g = 0; g < AMD_SCENARIO_MAX_GPUS; g++) {
        sim_sockets[g].gpu = g;
        for (unsigned p = 0; p < AMD_SCENARIO_MAX_PARTITIONS; p++)
            sim_procs[g][p] = (sim_handle_t){.gpu = g, .part = p};
    }
    clock_gettime(CLOCK_MONOTONIC, &sim_t0);
    return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_shut_down(void) {
    amd_scenario_free(sim_sc);
    sim_sc = NULL;
    return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_get_socket_handles(uint32_t *socket_count, amdsmi_socket_handle *handles) {
    if (!sim_sc)
        return AMDSMI_STATUS_NOT_INIT;
    if (!socket_count)
        return AMDSMI_STATUS_INVAL;
    uint32_t n = (uint32_t)sim_sc->gpu_count;
    if (handles)
        for (uint32_t i = 0; i < n && i < *socket_count; i++)
            handles[i] = &sim_sockets[i];
    if (!handles || *socket_count > n)
        *socket_count = n;
    return AMDSMI_STATUS_SUCCESS;
}

#ifndef AMDSMI_SIM_NO_PROCESSOR_HANDLES
amdsmi_status_t amdsmi_get_processor_handles(amdsmi_socket_handle socket, uint32_t *count,
                                             amdsmi_processor_handle *handles) {
    if (!sim_sc)
        return AMDSMI_STATUS_NOT_INIT;
    const sim_handle_t *s = socket;
    if (!count || s < sim_sockets || s >= sim_sockets + sim_sc->gpu_count)
        return AMDSMI_STATUS_INVAL;
    uint32_t n = sim_sc->gpus[s->gpu].partitions;
    if (handles)
        for (uint32_t i = 0; i < n && i < *count; i++)
            handles[i] = &sim_procs[s->gpu][i];
    if (!handles || *count > n)
        *count = n;
    return AMDSMI_STATUS_SUCCESS;
}
#endif

/* The GPU and partition of a handle, or the status the call answers. */
static amdsmi_status_t lookup(amdsmi_processor_handle h, const amd_scenario_gpu_t **gpu,
                              unsigned *part) {
    if (!sim_sc)
        return AMDSMI_STATUS_NOT_INIT;
    const sim_handle_t *s = h;
    const sim_handle_t *first = &sim_procs[0][0];
    if (!s || s < first || s >= first + AMD_SCENARIO_MAX_GPUS * AMD_SCENARIO_MAX_PARTITIONS ||
        s->gpu >= sim_sc->gpu_count || s->part >= sim_sc->gpus[s->gpu].partitions)
        return AMDSMI_STATUS_INVAL;
    *gpu = &sim_sc->gpus[s->gpu];
    *part = s->part;
    return amd_scenario_gpu_status_at(*gpu, since_init_s());
}

#define HAS(vals, key) (((vals).present >> AMD_V_##key) & 1u)
#define FILLED(vals, key) (HAS(vals, key) ? (vals).v[AMD_V_##key] : 0xFFFFu)

amdsmi_status_t amdsmi_get_gpu_device_bdf(amdsmi_processor_handle h, amdsmi_bdf_t *bdf) {
    const amd_scenario_gpu_t *g;
    unsigned p;
    amdsmi_status_t st = lookup(h, &g, &p);
    if (st)
        return st;
    bdf->as_uint = g->bdf_as_uint; /* every partition shares the GPU's address */
    return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_get_gpu_device_uuid(amdsmi_processor_handle h, unsigned int *uuid_length,
                                           char *uuid) {
    const amd_scenario_gpu_t *g;
    unsigned p;
    amdsmi_status_t st = lookup(h, &g, &p);
    if (st)
        return st;
    if (!g->uuid[0])
        return AMDSMI_STATUS_NOT_SUPPORTED;
    size_t n = strlen(g->uuid);
    if (!uuid_length || !uuid || *uuid_length < n + 1)
        return AMDSMI_STATUS_INSUFFICIENT_SIZE;
    memcpy(uuid, g->uuid, n + 1);
    /* A partition's UUID: the GPU's with its last two digits the index. */
    if (p > 0 && n >= 2)
        snprintf(uuid + n - 2, 3, "%02x", p & 0xffu);
    *uuid_length = (unsigned)n;
    return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_get_gpu_asic_info(amdsmi_processor_handle h, amdsmi_asic_info_t *info) {
    const amd_scenario_gpu_t *g;
    unsigned p;
    amdsmi_status_t st = lookup(h, &g, &p);
    if (st)
        return st;
    memset(info, 0, sizeof *info);
    snprintf(info->market_name, sizeof info->market_name, "%s", g->market_name);
    info->vendor_id = 0x1002;
    snprintf(info->vendor_name, sizeof info->vendor_name, "Advanced Micro Devices Inc.");
    info->device_id = 0x74a1;
    return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_get_gpu_driver_info(amdsmi_processor_handle h, amdsmi_driver_info_t *info) {
    const amd_scenario_gpu_t *g;
    unsigned p;
    amdsmi_status_t st = lookup(h, &g, &p);
    if (st)
        return st;
    memset(info, 0, sizeof *info);
    snprintf(info->driver_version, sizeof info->driver_version, "%s", sim_sc->driver_version);
    snprintf(info->driver_name, sizeof info->driver_name, "amdgpu");
    return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_get_gpu_activity(amdsmi_processor_handle h, amdsmi_engine_usage_t *info) {
    const amd_scenario_gpu_t *g;
    unsigned p;
    amdsmi_status_t st = lookup(h, &g, &p);
    if (st)
        return st;
    /* amd-smi's trap: every partition gets partition 0's figures. */
    amd_scenario_values_t v;
    amd_scenario_partition_values(g, 0, &v);
    if (!HAS(v, GFX_ACTIVITY) && !HAS(v, UMC_ACTIVITY) && !HAS(v, MM_ACTIVITY))
        return AMDSMI_STATUS_NOT_SUPPORTED;
    memset(info, 0, sizeof *info);
    info->gfx_activity = FILLED(v, GFX_ACTIVITY);
    info->umc_activity = FILLED(v, UMC_ACTIVITY);
    info->mm_activity = FILLED(v, MM_ACTIVITY);
    return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_get_gpu_vram_usage(amdsmi_processor_handle h, amdsmi_vram_usage_t *info) {
    const amd_scenario_gpu_t *g;
    unsigned p;
    amdsmi_status_t st = lookup(h, &g, &p);
    if (st)
        return st;
    amd_scenario_values_t v;
    amd_scenario_partition_values(g, p, &v);
    if (!HAS(v, VRAM_TOTAL_MIB) || !HAS(v, VRAM_USED_MIB))
        return AMDSMI_STATUS_NOT_SUPPORTED;
    memset(info, 0, sizeof *info);
    info->vram_total = v.v[AMD_V_VRAM_TOTAL_MIB];
    info->vram_used = v.v[AMD_V_VRAM_USED_MIB];
    return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_get_power_info(amdsmi_processor_handle h, amdsmi_power_info_t *info) {
    const amd_scenario_gpu_t *g;
    unsigned p;
    amdsmi_status_t st = lookup(h, &g, &p);
    if (st)
        return st;
    amd_scenario_values_t v;
    amd_scenario_partition_values(g, 0, &v); /* partition 0's, as amd-smi */
    if (!HAS(v, SOCKET_POWER_W) && !HAS(v, POWER_CAP_UW))
        return AMDSMI_STATUS_NOT_SUPPORTED;
    memset(info, 0, sizeof *info);
    info->current_socket_power = FILLED(v, SOCKET_POWER_W);
    info->average_socket_power = 0xFFFF; /* MI300 fills only the current one */
    info->gfx_voltage = info->soc_voltage = info->mem_voltage = 0xFFFF;
    info->power_limit = FILLED(v, POWER_CAP_UW);
    return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_get_temp_metric(amdsmi_processor_handle h, int sensor_type, int metric,
                                       int64_t *temperature) {
    const amd_scenario_gpu_t *g;
    unsigned p;
    amdsmi_status_t st = lookup(h, &g, &p);
    if (st)
        return st;
    if (!temperature)
        return AMDSMI_STATUS_INVAL;
    amd_scenario_values_t v;
    amd_scenario_partition_values(g, p, &v);
    if (metric != AMDSMI_TEMP_CURRENT)
        return AMDSMI_STATUS_NOT_SUPPORTED;
    if (sensor_type == AMDSMI_TEMPERATURE_TYPE_EDGE && HAS(v, TEMP_EDGE_C))
        *temperature = v.v[AMD_V_TEMP_EDGE_C];
    else if (sensor_type == AMDSMI_TEMPERATURE_TYPE_HOTSPOT && HAS(v, TEMP_HOTSPOT_C))
        *temperature = v.v[AMD_V_TEMP_HOTSPOT_C];
    else
        return AMDSMI_STATUS_NOT_SUPPORTED;
    return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_get_clock_info(amdsmi_processor_handle h, int clk_type,
                                      amdsmi_clk_info_t *info) {
    const amd_scenario_gpu_t *g;
    unsigned p;
    amdsmi_status_t st = lookup(h, &g, &p);
    if (st)
        return st;
    amd_scenario_values_t v;
    amd_scenario_partition_values(g, p, &v);
    if (clk_type != AMDSMI_CLK_TYPE_GFX || !HAS(v, GFX_CLOCK_MHZ))
        return AMDSMI_STATUS_NOT_SUPPORTED;
    memset(info, 0, sizeof *info);
    info->clk = v.v[AMD_V_GFX_CLOCK_MHZ];
    info->min_clk = 500;
    info->max_clk = 2100;
    return AMDSMI_STATUS_SUCCESS;
}

#ifndef AMDSMI_SIM_NO_PROCESS_LIST
amdsmi_status_t amdsmi_get_gpu_process_list(amdsmi_processor_handle h, uint32_t *max_processes,
                                            amdsmi_proc_info_t *list) {
    const amd_scenario_gpu_t *g;
    unsigned p;
    amdsmi_status_t st = lookup(h, &g, &p);
    if (st)
        return st;
    if (!max_processes)
        return AMDSMI_STATUS_INVAL;
    uint32_t cap = *max_processes, n = 0;
    for (size_t i = 0; i < g->process_count; i++) {
        const amd_scenario_process_t *sp = &g->processes[i];
        if (sp->partition != p)
            continue;
        if (list && n < cap) {
            amdsmi_proc_info_t *o = &list[n];
            memset(o, 0, sizeof *o);
            snprintf(o->name, sizeof o->name, "%s", sp->name[0] ? sp->name : "python3");
            o->pid = sp->pid;
            o->mem = sp->vram_bytes;
            o->memory_usage.vram_mem = sp->vram_bytes;
            o->engine_usage.gfx = (uint64_t)(since_init_s() * 1e9 * sp->gfx_percent / 100.0);
        }
        n++;
    }
    *max_processes = n;
    return cap == 0 || cap >= n ? AMDSMI_STATUS_SUCCESS : AMDSMI_STATUS_OUT_OF_RESOURCES;
}
#endif

amdsmi_status_t amdsmi_get_lib_version(amdsmi_version_t *version) {
    if (!version)
        return AMDSMI_STATUS_INVAL;
    *version = (amdsmi_version_t){
        .year = 24, .major = 7, .minor = 0, .release = 0, .build = "24.7.0 (libamdsmi-sim)"};
    return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_get_gpu_metrics_info(amdsmi_processor_handle h, void *metrics) {
    const amd_scenario_gpu_t *g;
    unsigned p;
    amdsmi_status_t st = lookup(h, &g, &p);
    if (st)
        return st;
    if (!metrics)
        return AMDSMI_STATUS_INVAL;
    unsigned char *t = metrics;
    memset(t, 0xff, AMDSMI_GPU_METRICS_24_7_SIZE); /* every field "not filled" */
    uint16_t nparts = (uint16_t)g->partitions;
    memcpy(t + AMDSMI_GPU_METRICS_24_7_NUM_PARTITION_OFFSET, &nparts, sizeof nparts);
    for (unsigned q = 0; q < g->partitions && q < AMDSMI_MAX_NUM_XCP; q++) {
        const amd_scenario_values_t *pv = &g->partition_values[q];
        if (!HAS(*pv, GFX_ACTIVITY))
            continue;
        uint32_t busy = pv->v[AMD_V_GFX_ACTIVITY];
        memcpy(t + AMDSMI_GPU_METRICS_24_7_XCP_STATS_OFFSET + q * sizeof(amdsmi_gpu_xcp_metrics_t),
               &busy, sizeof busy); /* gfx_busy_inst[0], the first member */
    }
    return AMDSMI_STATUS_SUCCESS;
}

static amdsmi_status_t copy_mode(const char *mode, char *out, uint32_t len) {
    if (!mode[0])
        return AMDSMI_STATUS_NOT_SUPPORTED;
    if (!out || len < strlen(mode) + 1)
        return AMDSMI_STATUS_INSUFFICIENT_SIZE;
    memcpy(out, mode, strlen(mode) + 1);
    return AMDSMI_STATUS_SUCCESS;
}

amdsmi_status_t amdsmi_get_gpu_compute_partition(amdsmi_processor_handle h, char *compute_partition,
                                                 uint32_t len) {
    const amd_scenario_gpu_t *g;
    unsigned p;
    amdsmi_status_t st = lookup(h, &g, &p);
    return st ? st : copy_mode(g->compute_partition, compute_partition, len);
}

amdsmi_status_t amdsmi_get_gpu_memory_partition(amdsmi_processor_handle h, char *memory_partition,
                                                uint32_t len) {
    const amd_scenario_gpu_t *g;
    unsigned p;
    amdsmi_status_t st = lookup(h, &g, &p);
    return st ? st : copy_mode(g->memory_partition, memory_partition, len);
}

amdsmi_status_t amdsmi_get_gpu_kfd_info(amdsmi_processor_handle h, amdsmi_kfd_info_t *info) {
    const amd_scenario_gpu_t *g;
    unsigned p;
    amdsmi_status_t st = lookup(h, &g, &p);
    if (st)
        return st;
    if (!g->kfd_info)
        return AMDSMI_STATUS_NOT_SUPPORTED;
    memset(info, 0, sizeof *info);
    const sim_handle_t *s = h;
    info->kfd_id = 0x1000u + s->gpu * 16u + p;
    info->node_id = s->gpu * AMD_SCENARIO_MAX_PARTITIONS + p + 1u;
    info->current_partition_id = p;
    return AMDSMI_STATUS_SUCCESS;
}
