/*
 * amd_scenario.h - the JSON scenario that drives libamdsmi-sim.so, the
 * amd-smi stand-in: parsing and validation, and what a call answers at a
 * time. A sibling of sim/scenario.h (whose keys and call names are NVML's).
 *
 * Strict, as the NVML scenario: an unknown key, a wrong type, a value out
 * of range or an unknown status name fails with the JSON path
 * ("gpus[0].values.gfx_activty: unknown key; valid: ..."). Pure: no clock,
 * no globals. Format: docs/amd.md, section "The amd-smi stand-in".
 */
#ifndef KGS_SIM_AMDSMI_AMD_SCENARIO_H
#define KGS_SIM_AMDSMI_AMD_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AMD_SCENARIO_MAX_GPUS 32
#define AMD_SCENARIO_MAX_PARTITIONS 8
#define AMD_SCENARIO_MAX_PROCESSES 256
#define AMD_SCENARIO_MAX_STEPS 64
#define AMD_SCENARIO_MAX_FILE_BYTES (1u * 1024u * 1024u)

/* Per-GPU (or per-partition) readings. X(enum suffix, JSON key, max). */
#define AMD_SCENARIO_VALUES(X)                                                                     \
    X(GFX_ACTIVITY, "gfx_activity", 65535.0)                                                       \
    X(UMC_ACTIVITY, "umc_activity", 65535.0)                                                       \
    X(MM_ACTIVITY, "mm_activity", 65535.0)                                                         \
    X(VRAM_TOTAL_MIB, "vram_total_mib", 4294967295.0)                                              \
    X(VRAM_USED_MIB, "vram_used_mib", 4294967295.0)                                                \
    X(SOCKET_POWER_W, "socket_power_w", 65535.0)                                                   \
    X(POWER_CAP_UW, "power_cap_uw", 4294967295.0)                                                  \
    X(TEMP_EDGE_C, "temp_edge_c", 255.0)                                                           \
    X(TEMP_HOTSPOT_C, "temp_hotspot_c", 255.0)                                                     \
    X(GFX_CLOCK_MHZ, "gfx_clock_mhz", 100000.0)

typedef enum {
#define AMD_SCENARIO_VALUE_ENUM(id, key, max) AMD_V_##id,
    AMD_SCENARIO_VALUES(AMD_SCENARIO_VALUE_ENUM)
#undef AMD_SCENARIO_VALUE_ENUM
        AMD_V_COUNT
} amd_scenario_value_t;

/* bit (1u << value) of `present` says the value exists (absent: the call
 * answers NOT_SUPPORTED, or the metrics table's 0xFFFF). */
typedef struct {
    uint32_t present;
    uint32_t v[AMD_V_COUNT];
} amd_scenario_values_t;

/* gfx_percent: the share of the gfx engine the process keeps busy; its
 * engine_usage.gfx grows by that share of the time since amdsmi_init. */
typedef struct {
    uint32_t pid;
    unsigned partition;
    uint64_t vram_bytes;
    unsigned gfx_percent;
    char name[32];
} amd_scenario_process_t;

/* From at_s seconds after amdsmi_init on, every call on this GPU (all its
 * partitions) answers `status` (an amdsmi_status_t; 0 ends an error). */
typedef struct {
    double at_s;
    uint32_t status;
} amd_scenario_step_t;

typedef struct {
    char bdf[32];         /* "0000:19:00.0" as given */
    uint64_t bdf_as_uint; /* amdsmi_bdf_t.as_uint */
    char uuid[40];
    char market_name[64];
    char compute_partition[8]; /* "SPX", "CPX", ...; "" = NOT_SUPPORTED */
    char memory_partition[8];  /* "NPS1", ...; "" = NOT_SUPPORTED */
    unsigned partitions;       /* processor handles this GPU shows: 1..8 */
    bool kfd_info;             /* amdsmi_get_gpu_kfd_info answers partition ids */
    amd_scenario_values_t values;
    /* Per-partition overrides of `values`; [0] applies to partition 0 too. */
    amd_scenario_values_t partition_values[AMD_SCENARIO_MAX_PARTITIONS];
    amd_scenario_process_t *processes; /* owned */
    size_t process_count;
    amd_scenario_step_t steps[AMD_SCENARIO_MAX_STEPS];
    size_t step_count;
} amd_scenario_gpu_t;

typedef struct {
    char driver_version[64];
    uint32_t init_status; /* what amdsmi_init answers; 0 = SUCCESS */
    amd_scenario_gpu_t gpus[AMD_SCENARIO_MAX_GPUS];
    size_t gpu_count;
} amd_scenario_t;

/* Parses len bytes of JSON. Returns 0 and *out (free with
 * amd_scenario_free), or KGS_EINVAL with "<path>: <reason>" in err, or
 * KGS_ENOMEM. */
int amd_scenario_parse(const char *json, size_t len, amd_scenario_t **out, char *err,
                       size_t errlen);

/* Reads and parses `path`; KGS_EIO when it cannot be read. */
int amd_scenario_load_file(const char *path, amd_scenario_t **out, char *err, size_t errlen);

void amd_scenario_free(amd_scenario_t *sc);

/* The status an amdsmi status name ("NOT_FOUND", "SUCCESS") stands for;
 * -1 when unknown. */
long amd_scenario_status_code(const char *name);

/* The error every call on `gpu` answers at t_s (0: none). */
uint32_t amd_scenario_gpu_status_at(const amd_scenario_gpu_t *gpu, double t_s);

/* Partition p's readings: the GPU's values with p's overrides applied. */
void amd_scenario_partition_values(const amd_scenario_gpu_t *gpu, unsigned p,
                                   amd_scenario_values_t *out);

#endif
