/*
 * snapshot.h - the node snapshot: one immutable, refcounted record of what
 * NVML said about every GPU (and MIG instance) on this node at one instant.
 *
 * A field NVML did not provide is *absent* (its validity bit is clear), never
 * 0. Callers test with gpu_has(g, GPU_F_x) before reading the value.
 *
 * Lifetime: snapshot_new() returns a snapshot with one reference, owned by
 * the builder (the collector) until it is published. After publication the
 * snapshot is never written again; readers take references with
 * snapshot_ref() and drop them with snapshot_unref(), from any thread.
 */
#ifndef KGS_CORE_SNAPSHOT_H
#define KGS_CORE_SNAPSHOT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/clock.h"

/* Every per-GPU measured field. The bit index is the enum value. */
#define GPU_FIELDS(X)                                                                              \
    X(GPU_UTIL, "gpu_utilization")                                                                 \
    X(MEM_UTIL, "memory_utilization")                                                              \
    X(MEM_USED, "memory_used")                                                                     \
    X(MEM_TOTAL, "memory_total")                                                                   \
    X(MEM_RESERVED, "memory_reserved")                                                             \
    X(TEMPERATURE, "temperature")                                                                  \
    X(POWER, "power_draw")                                                                         \
    X(POWER_LIMIT, "power_limit")                                                                  \
    X(ENERGY, "energy")                                                                            \
    X(PCIE_TX, "pcie_tx")                                                                          \
    X(PCIE_RX, "pcie_rx")                                                                          \
    X(NVLINK_TX, "nvlink_tx")                                                                      \
    X(NVLINK_RX, "nvlink_rx")                                                                      \
    X(SM_CLOCK, "sm_clock")                                                                        \
    X(CLOCK_EVENT_REASONS, "clock_event_reasons")                                                  \
    X(SM_ACTIVE, "sm_active")                                                                      \
    X(SM_OCCUPANCY, "sm_occupancy")                                                                \
    X(DRAM_BW_UTIL, "dram_bandwidth_utilization")

typedef enum {
#define GPU_FIELD_ENUM(id, name) GPU_F_##id,
    GPU_FIELDS(GPU_FIELD_ENUM)
#undef GPU_FIELD_ENUM
        GPU_F_COUNT
} gpu_field_t;

/* Stable name of a field, e.g. "memory_used"; "?" for an out-of-range id. */
const char *gpu_field_name(gpu_field_t f);

typedef enum {
    GPU_HEALTH_OK = 0,
    GPU_HEALTH_LOST,           /* NVML_ERROR_GPU_IS_LOST: fell off the bus */
    GPU_HEALTH_RESET_REQUIRED, /* NVML_ERROR_RESET_REQUIRED */
    GPU_HEALTH_ERROR           /* another NVML error; see health_nvml_code */
} gpu_health_t;

/* "ok", "lost", "reset_required", "error". */
const char *gpu_health_name(gpu_health_t h);

/* Who made the GPU, as the backend that read it knows. UNKNOWN (0) where
 * nobody said: a record decoded from an agent that does not send it. */
typedef enum { GPU_VENDOR_UNKNOWN = 0, GPU_VENDOR_NVIDIA, GPU_VENDOR_AMD } gpu_vendor_t;

/* "nvidia", "amd"; NULL for UNKNOWN or an out-of-range value. */
const char *gpu_vendor_name(gpu_vendor_t v);

#define SNAPSHOT_UUID_MAX 96
#define SNAPSHOT_NAME_MAX 96
#define SNAPSHOT_BUSID_MAX 32
#define SNAPSHOT_PROFILE_MAX 32

/* Per-process fields; bit index = enum value in proc_record_t.valid. */
typedef enum {
    PROC_F_SM_UTIL = 0,     /* nvmlDeviceGetProcessUtilization smUtil, percent of the GPU */
    PROC_F_MEM_UTIL = 1,    /* its memUtil */
    PROC_F_USED_MEMORY = 2, /* usedGpuMemory of the running-process list, bytes */
} proc_field_t;

/*
 * One process with a context on a GPU (or MIG instance), from the
 * running-process lists (compute, graphics, MPS clients), with its share of
 * utilisation from the process-utilisation samples. A running process that
 * has no sample was idle in the period (NVML lists only active processes):
 * its utilisation is a known 0 when the sample call itself succeeded.
 */
#define SNAPSHOT_POD_UID_MAX 40      /* a pod UID (36) or a static pod's 32-hex hash, + NUL */
#define SNAPSHOT_CONTAINER_ID_MAX 72 /* a 64-hex container id + NUL (longer ones are dropped) */
typedef struct {
    uint32_t pid;   /* in the host PID namespace */
    uint32_t valid; /* bit PROC_F_x */
    double sm_util_pct;
    double mem_util_pct;
    uint64_t used_memory_bytes;
    /* Which pod the process belongs to, from its cgroup: filled on the agent
     * (before the snapshot is published) or by the decoder; "" = not a pod's
     * process, or not known. */
    char pod_uid[SNAPSHOT_POD_UID_MAX];
    char container_id[SNAPSHOT_CONTAINER_ID_MAX];
} proc_record_t;

/*
 * A GPU's (or MIG instance's) process list: records [first, first+count)
 * of snapshot->procs. `list_ok` false: the list is absent (list_code is the
 * NVML code; 0 = no symbol), and then nothing about sharing is known.
 * `dropped` counts processes beyond the per-GPU bound that were not kept.
 * `util_ok` false: per-process utilisation is absent (util_code: NVML's
 * code, NOT_SUPPORTED on MIG, where NVML has no per-process utilisation).
 */
typedef struct {
    unsigned first, count, dropped;
    bool list_ok, util_ok;
    int16_t list_code, util_code;
} proc_list_t;

/*
 * One physical GPU. Units are in the names. Values are meaningful only when
 * the matching bit in `valid` is set; field_error[f] holds the NVML return
 * code that made field f absent (0 when the symbol is missing or the field is
 * valid; NVML_ERROR_NOT_SUPPORTED = 3 when the device does not support it).
 */
typedef struct {
    unsigned index; /* the backend's enumeration index (not the CUDA index) */
    gpu_vendor_t vendor;
    char uuid[SNAPSHOT_UUID_MAX];
    char name[SNAPSHOT_NAME_MAX];
    char pci_bus_id[SNAPSHOT_BUSID_MAX];

    uint32_t valid; /* bit f set <=> field f present */
    int16_t field_error[GPU_F_COUNT];

    unsigned gpu_util_pct;
    unsigned mem_util_pct;
    uint64_t memory_used_bytes;
    uint64_t memory_total_bytes;
    uint64_t memory_reserved_bytes;
    int temperature_c;
    double power_w;
    double power_limit_w;
    uint64_t energy_mj; /* since the driver was loaded */
    uint64_t pcie_tx_bytes_per_s;
    uint64_t pcie_rx_bytes_per_s;
    double nvlink_tx_bytes_per_s; /* rate from the cumulative counters */
    double nvlink_rx_bytes_per_s;
    unsigned sm_clock_mhz;
    uint64_t clock_event_reasons; /* NVML bit mask: 0x1 idle, 0x4 sw power cap, ... */
    double sm_active_pct;         /* GPM, Hopper+ */
    double sm_occupancy_pct;
    double dram_bw_util_pct;

    gpu_health_t health;
    int health_nvml_code; /* the NVML code behind a non-OK health, else 0 */

    bool mig_enabled;
    unsigned mig_first; /* index into snapshot->mig[] of this GPU's first instance */
    unsigned mig_count;

    /* Per-process data (shared GPUs): see proc_record_t. */
    proc_list_t procs;
} gpu_record_t;

/* Fields a MIG instance may carry (subset of gpu_field_t). */
typedef struct {
    unsigned parent_index; /* gpu_record_t.index of the parent */
    char uuid[SNAPSHOT_UUID_MAX];
    char name[SNAPSHOT_NAME_MAX];
    char profile[SNAPSHOT_PROFILE_MAX]; /* e.g. "3g.40gb"; "" when unknown */
    unsigned gpu_instance_id;
    unsigned compute_instance_id;
    bool ids_valid;

    uint32_t valid; /* bits of gpu_field_t: MEM_USED, MEM_TOTAL, SM_ACTIVE, ... */
    int16_t field_error[GPU_F_COUNT];
    uint64_t memory_used_bytes;
    uint64_t memory_total_bytes;
    double sm_active_pct;
    double sm_occupancy_pct;
    double dram_bw_util_pct;
    proc_list_t procs; /* per MIG handle: NVML lists processes per instance */
} mig_record_t;

typedef enum {
    SNAPSHOT_OK = 0,       /* NVML answered; per-GPU health says the rest */
    SNAPSHOT_NVML_DOWN = 1 /* NVML could not be initialised or enumerated */
} snapshot_status_t;

typedef struct snapshot {
    /* read-only after publication */
    uint64_t seq;          /* 1, 2, ... per sampler */
    mono_ns_t taken_mono;  /* when the sample finished, monotonic */
    int64_t taken_wall_ms; /* the same instant, Unix milliseconds (UTC) */
    uint64_t sample_duration_ns;

    snapshot_status_t status;
    int nvml_code;   /* the NVML code when status is NVML_DOWN */
    char error[256]; /* human message when status is NVML_DOWN */
    char driver_version[80];
    char node_name[256];

    unsigned gpu_count;
    gpu_record_t *gpus;
    unsigned mig_total;
    mig_record_t *mig;
    unsigned proc_total;
    proc_record_t *procs;
    /* The agent looked up each process's pod (--proc-root): an empty
     * pod_uid then means "no pod's", not "not looked up". */
    bool procs_attributed;

    /* private */
    atomic_uint _refs;
} snapshot_t;

/* Allocates a zeroed snapshot with room for `gpus` GPUs and `migs` MIG
 * instances, refcount 1. Returned: release with snapshot_unref(). NULL on OOM. */
snapshot_t *snapshot_new(unsigned gpus, unsigned migs);
/* As snapshot_new, with room for `procs` process records (at most
 * SNAPSHOT_MAX_PROCS). */
snapshot_t *snapshot_new_with_procs(unsigned gpus, unsigned migs, unsigned procs);
#define SNAPSHOT_MAX_PROCS (4096u * 64u)

/* Adds a reference; returns s. Thread-safe. s may be NULL. */
snapshot_t *snapshot_ref(snapshot_t *s);

/* Drops a reference and frees on the last. Thread-safe. NULL does nothing. */
void snapshot_unref(snapshot_t *s);

static inline bool gpu_has(const gpu_record_t *g, gpu_field_t f) {
    return (g->valid >> f) & 1u;
}
static inline bool proc_has(const proc_record_t *p, proc_field_t f) {
    return (p->valid >> f) & 1u;
}
static inline bool mig_has(const mig_record_t *m, gpu_field_t f) {
    return (m->valid >> f) & 1u;
}

/* NVML's name for a return code without the NVML_ERROR_ prefix
 * ("GPU_IS_LOST", "NOT_SUPPORTED", "SUCCESS"); "UNKNOWN_CODE" otherwise. */
const char *nvml_code_name(int code);

/* Whose failure a down snapshot reports, for "%s unavailable": "NVML" when
 * NVML's own call failed (its message names the call, "nvmlInit_v2: ..."),
 * else "GPU backend" (the AMD readers name themselves: "amd-smi: ...",
 * "amdgpu sysfs: ..."), so an AMD node is never said to lack NVML. */
const char *snapshot_down_subject(const snapshot_t *s);

/* Finds a GPU by NVML index; NULL when absent. Borrowed from s. */
const gpu_record_t *snapshot_gpu_by_index(const snapshot_t *s, unsigned index);

/* Memory used as a percent of total, from bytes (no MiB truncation).
 * Returns false (value absent) when either field is absent or total is 0. */
bool gpu_memory_used_pct(const gpu_record_t *g, double *out_pct);

#endif
