/*
 * scenario.h - the JSON scenario that drives libnvml-sim.so: parsing,
 * validation, and resolution of values and injected errors at a time.
 *
 * Parsing is strict: an unknown key, a wrong type, a value out of range, an
 * unknown error or call name fails with a message that names the JSON path
 * ("devices[0].values.gpu_utl: unknown key; did you mean gpu_util?"), so a
 * typo in a test scenario fails loudly instead of silently testing nothing.
 * A parsed scenario is immutable; every function here is pure (no clock, no
 * globals) and may be called from any thread. See sim/README.md for the
 * format.
 */
#ifndef KGS_SIM_SCENARIO_H
#define KGS_SIM_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nvml/nvml_abi.h"

#define SCENARIO_MAX_DEVICES 64
/* NVML's nvmlDeviceGetMaxMigDeviceCount() is 7 on every MIG-capable part. */
#define SCENARIO_MAX_MIG_INSTANCES 7
#define SCENARIO_MAX_TIMELINE_STEPS 4096
/* More than the collector keeps per GPU (64), so its bound can be tested. */
#define SCENARIO_MAX_PROCESSES 256
#define SCENARIO_MAX_FILE_BYTES (4u * 1024u * 1024u)

/* Every NVML symbol the stand-in exports, as an index: SCENARIO_CALL_<name>. */
typedef enum {
#define SCENARIO_CALL_ENUM(name, params) SCENARIO_CALL_##name,
    NVML_SYMBOLS(SCENARIO_CALL_ENUM)
#undef SCENARIO_CALL_ENUM
        SCENARIO_CALL_COUNT
} scenario_call_t;

/* "*" in an error_timeline step: every per-device call of that device. */
#define SCENARIO_CALL_ALL (-1)

/*
 * The per-device values. X(enum suffix, JSON key, integer-only, max, allowed
 * on a MIG instance). All values are non-negative; integer-only keys reject
 * 1.5. Stored as double: 64-bit counters are limited to 2^53 (exact).
 */
#define SCENARIO_VALUES(X)                                                                         \
    X(GPU_UTIL, "gpu_util", 1, 100.0, 0)                                                           \
    X(MEM_UTIL, "mem_util", 1, 100.0, 0)                                                           \
    X(MEMORY_USED_BYTES, "memory_used_bytes", 1, 9007199254740992.0, 1)                            \
    X(MEMORY_RESERVED_BYTES, "memory_reserved_bytes", 1, 9007199254740992.0, 1)                    \
    X(TEMPERATURE_C, "temperature_c", 1, 255.0, 0)                                                 \
    X(POWER_MW, "power_mw", 1, 4294967295.0, 0)                                                    \
    X(ENERGY_MJ, "energy_mj", 1, 9007199254740992.0, 0)                                            \
    X(SM_CLOCK_MHZ, "sm_clock_mhz", 1, 100000.0, 0)                                                \
    X(CLOCK_EVENT_REASONS, "clock_event_reasons", 1, 9007199254740992.0, 0)                        \
    X(SM_ACTIVE, "sm_active", 0, 100.0, 1)                                                         \
    X(SM_OCCUPANCY, "sm_occupancy", 0, 100.0, 1)                                                   \
    X(DRAM_BW_UTIL, "dram_bw_util", 0, 100.0, 1)                                                   \
    X(PCIE_TX_KBPS, "pcie_tx_kbps", 1, 4294967295.0, 0)                                            \
    X(PCIE_RX_KBPS, "pcie_rx_kbps", 1, 4294967295.0, 0)                                            \
    X(NVLINK_TX_KIB_TOTAL, "nvlink_tx_kib_total", 1, 9007199254740992.0, 0)                        \
    X(NVLINK_RX_KIB_TOTAL, "nvlink_rx_kib_total", 1, 9007199254740992.0, 0)                        \
    X(NVLINK_TX_KIB_PER_S, "nvlink_tx_kib_per_s", 0, 9007199254740992.0, 0)                        \
    X(NVLINK_RX_KIB_PER_S, "nvlink_rx_kib_per_s", 0, 9007199254740992.0, 0)

typedef enum {
#define SCENARIO_VALUE_ENUM(id, key, integer, max, mig) SCENARIO_V_##id,
    SCENARIO_VALUES(SCENARIO_VALUE_ENUM)
#undef SCENARIO_VALUE_ENUM
        SCENARIO_VALUE_COUNT
} scenario_value_t;

/* A set of values; bit (1u << key) of `present` says the value exists. */
typedef struct {
    uint32_t present;
    double v[SCENARIO_VALUE_COUNT];
} scenario_values_t;

/* A timeline step: from at_s on, `set` values take v[], `clear` ones
 * (JSON null) become absent. Steps are in non-decreasing at_s order. */
typedef struct {
    double at_s;
    uint32_t set;
    uint32_t clear;
    double v[SCENARIO_VALUE_COUNT];
} scenario_step_t;

/* An error_timeline step: from at_s on, `call` (or SCENARIO_CALL_ALL)
 * returns `error` (an nvmlReturn_t; NVML_SUCCESS ends an earlier error). */
typedef struct {
    double at_s;
    int call;
    int error;
} scenario_error_step_t;

typedef struct {
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    char profile[32];                 /* "3g.40gb", "1c.3g.40gb" */
    unsigned gpu_instance_slices;     /* G */
    unsigned compute_instance_slices; /* C (== G for "Ng.Mgb") */
    unsigned gpu_instance_id;
    unsigned compute_instance_id;
    bool has_memory_total;
    double memory_total_bytes;
    scenario_values_t values;
    scenario_step_t *timeline; /* owned */
    size_t timeline_len;
} scenario_mig_t;

/* A process with a context on the GPU (or on one of its MIG instances).
 * sm_util / mem_util: what nvmlDeviceGetProcessUtilization reports for it
 * (absent, or 0: the process is not in the samples, as real NVML lists
 * only processes active in the last period). used_memory_bytes absent:
 * NVML_VALUE_NOT_AVAILABLE. mig_index: the MIG instance slot, -1 = none. */
typedef enum {
    SCENARIO_PROC_COMPUTE = 0,
    SCENARIO_PROC_GRAPHICS,
    SCENARIO_PROC_MPS
} scenario_proc_kind_t;
typedef struct {
    unsigned pid;
    scenario_proc_kind_t kind;
    bool has_sm_util, has_mem_util, has_used_memory;
    unsigned sm_util, mem_util;
    double used_memory_bytes;
    int mig_index;
} scenario_process_t;

typedef struct {
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    char pci_bus_id[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE]; /* "%08X:%02X:%02X.%X" */
    unsigned pci_domain, pci_bus, pci_device, pci_function;
    bool has_memory_total;
    double memory_total_bytes;
    bool has_power_limit;
    unsigned power_limit_mw;
    bool gpm_supported;
    unsigned nvlink_links;
    scenario_values_t values;
    scenario_step_t *timeline; /* owned */
    size_t timeline_len;
    int error[SCENARIO_CALL_COUNT];        /* nvmlReturn_t, NVML_SUCCESS = none */
    scenario_error_step_t *error_timeline; /* owned */
    size_t error_timeline_len;
    /* bit (1 << call): the call is a versioned variant not named in
     * error_timeline whose base is, so it follows the base's steps */
    uint64_t error_timeline_from_base;
    double latency_ms[SCENARIO_CALL_COUNT];
    bool has_mig;
    bool mig_enabled;
    scenario_mig_t mig[SCENARIO_MAX_MIG_INSTANCES]; /* slot i = MIG device index i */
    size_t mig_count;
    scenario_process_t *processes; /* owned */
    size_t process_count;
} scenario_device_t;

/* Read-only after scenario_parse(). */
typedef struct {
    char driver_version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
    int cuda_driver_version;
    int init_error;             /* nvmlReturn_t; NVML_SUCCESS = none */
    uint64_t missing;           /* bit (1 << scenario_call_t) = symbol missing */
    double repeat_after_s;      /* 0 = timelines do not repeat */
    scenario_device_t *devices; /* owned, device_count entries */
    size_t device_count;
} scenario_t;

/*
 * Parses `len` bytes of JSON (need not be NUL-terminated). Returns 0 and a
 * scenario in *out (returned: free with scenario_free), or KGS_EINVAL with
 * "<json path>: <reason>" (or "line L column C: <reason>" for bad JSON) in
 * err, or KGS_ENOMEM. On failure *out is NULL.
 */
int scenario_parse(const char *json, size_t len, scenario_t **out, char *err, size_t errlen);

/* Reads `path` (less than SCENARIO_MAX_FILE_BYTES) and parses it. As
 * scenario_parse, plus KGS_EIO when the file cannot be read (errno text). */
int scenario_load_file(const char *path, scenario_t **out, char *err, size_t errlen);

/* Frees everything the scenario owns. NULL does nothing. */
void scenario_free(scenario_t *sc);

/* The call's index for an NVML symbol name, or -1. */
int scenario_call_index(const char *name);
/* The symbol name of a call index; static storage ("?" when out of range). */
const char *scenario_call_name(int call);
/*
 * Versioned variants. NVML versions a call by a suffix: "_v" and digits
 * (nvmlDeviceGetMemoryInfo_v2, nvmlDeviceGetPciInfo_v3) or a capital V after
 * a lower-case letter (nvmlDeviceGetTemperatureV). scenario_call_base_len
 * is the length of `name` without that suffix (strlen(name) when it has
 * none). scenario_call_base is the call whose name is that base, or -1 when
 * `call` has no suffix or no call has the base name (nvmlDeviceGetAttributes_v2).
 * An entry a device's errors, error_timeline or latency_ms has for a base
 * call applies to its variants the same map does not name.
 */
size_t scenario_call_base_len(const char *name);
int scenario_call_base(int call);
/* True when `call` concerns one device, so it may appear in a device's
 * errors, error_timeline and latency_ms (and "*" covers it). */
bool scenario_call_is_per_device(int call);
/* The nvmlReturn_t for an error name without the NVML_ERROR_ prefix
 * ("GPU_IS_LOST", "SUCCESS"); -1 when unknown. */
int scenario_error_code(const char *name);
/* The name of an nvmlReturn_t ("GPU_IS_LOST"); "?" when unknown. */
const char *scenario_error_name(int code);

/* The time within the current cycle: t_s, or t_s modulo repeat_after_s. */
double scenario_cycle_time(const scenario_t *sc, double t_s);

/* The values in effect at t_s seconds after init (repeat applied). */
void scenario_device_values_at(const scenario_t *sc, const scenario_device_t *dev, double t_s,
                               scenario_values_t *out);
void scenario_mig_values_at(const scenario_t *sc, const scenario_mig_t *mig, double t_s,
                            scenario_values_t *out);

/* The error `call` returns at t_s: the latest error_timeline step (for the
 * call or "*") if it is an error, else the static `errors` entry, else
 * NVML_SUCCESS. "*" does not cover the handle-by-index lookups. */
int scenario_device_error_at(const scenario_t *sc, const scenario_device_t *dev, int call,
                             double t_s);

/* The integral of value `key` (absent counts as 0) over [0, t_s] seconds
 * after init, with repeat applied: value-seconds (mW·s = mJ, KiB/s·s = KiB). */
double scenario_device_integral(const scenario_t *sc, const scenario_device_t *dev,
                                scenario_value_t key, double t_s);

#endif
