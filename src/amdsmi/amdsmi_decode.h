/*
 * amdsmi_decode.h - the pure half of the amd-smi backend: what amd-smi's
 * answers mean, with no library loaded. Status codes to the NVML code names
 * every consumer already shows, PCI addresses to the spelling the AMD device
 * plugin uses, partition mode names, the "not filled" sentinels of the
 * metrics table, and the rule that decides whether a partition's activity
 * is its own. Every function is pure and thread-safe.
 */
#ifndef KGS_AMDSMI_AMDSMI_DECODE_H
#define KGS_AMDSMI_AMDSMI_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The NVML code (core/nvml_codes.h) an amdsmi_status_t is reported as, so
 * field_errors and health read the same on both vendors:
 *   SUCCESS 0; NOT_SUPPORTED, NOT_YET_IMPLEMENTED, NO_DATA, FILE_NOT_FOUND,
 *   SETTING_UNAVAILABLE -> NOT_SUPPORTED (3, the field is null);
 *   NO_PERM -> NO_PERMISSION (4); NOT_FOUND, AMDGPU_RESTART_ERR ->
 *   GPU_IS_LOST (15: the device is gone); TIMEOUT -> TIMEOUT (10);
 *   DRIVER_NOT_LOADED -> DRIVER_NOT_LOADED (9); NOT_INIT, INIT_ERROR ->
 *   UNINITIALIZED (1); INSUFFICIENT_SIZE, OUT_OF_RESOURCES ->
 *   INSUFFICIENT_SIZE (7); anything else UNKNOWN (999).
 */
int amdsmi_status_to_nvml_code(uint32_t status);

/* amd-smi's name of a status without the AMDSMI_STATUS_ prefix
 * ("NOT_SUPPORTED"); "UNKNOWN_CODE" for a value we do not name. */
const char *amdsmi_status_name(uint32_t status);

/* "dddd:bb:dd.f" in lower case, as the AMD device plugin and sysfs spell a
 * PCI address, from amdsmi_bdf_t.as_uint (function bits 0-2, device 3-7,
 * bus 8-15, domain 16-63). A domain above 0xffff is printed in full. */
#define AMDSMI_BDF_MAX 24
void amdsmi_bdf_format(uint64_t as_uint, char out[AMDSMI_BDF_MAX]);

/* Compute partition modes (amdsmi_get_gpu_compute_partition's text). */
typedef enum {
    AMDSMI_CP_UNKNOWN = 0,
    AMDSMI_CP_SPX, /* one partition: the whole GPU */
    AMDSMI_CP_DPX,
    AMDSMI_CP_TPX,
    AMDSMI_CP_QPX,
    AMDSMI_CP_CPX, /* one partition per XCD */
} amdsmi_compute_partition_t;

/* Memory partition modes (amdsmi_get_gpu_memory_partition's text). */
typedef enum {
    AMDSMI_NPS_UNKNOWN = 0,
    AMDSMI_NPS1,
    AMDSMI_NPS2,
    AMDSMI_NPS4,
    AMDSMI_NPS8,
} amdsmi_memory_partition_t;

/* Parses the library's text ("CPX", "cpx\n", "NPS4"; case and trailing
 * blanks ignored; at most len bytes, need not be NUL-terminated). Returns 0
 * and *out, or KGS_EINVAL for any other text (then *out is UNKNOWN). */
int amdsmi_compute_partition_parse(const char *text, size_t len, amdsmi_compute_partition_t *out);
int amdsmi_memory_partition_parse(const char *text, size_t len, amdsmi_memory_partition_t *out);

/* "spx", "cpx", ...; "nps1", ...; "" for UNKNOWN. */
const char *amdsmi_compute_partition_name(amdsmi_compute_partition_t p);
const char *amdsmi_memory_partition_name(amdsmi_memory_partition_t p);

/* The profile as the AMD device plugin names its resources: "cpx_nps4";
 * just "cpx" when the memory mode is unknown; "" when the compute mode is. */
void amdsmi_partition_profile(amdsmi_compute_partition_t cp, amdsmi_memory_partition_t mp,
                              char *out, size_t outlen);

/* A percent from the metrics table: true and *pct when 0..100; false for
 * the all-ones "not filled" value (0xFFFF, 0xFFFFFFFF) or anything above
 * 100. */
bool amdsmi_percent(uint32_t raw, unsigned *pct);

/* Socket power in W: false for 0xFFFF / 0xFFFFFFFF (not available). */
bool amdsmi_power_w(uint32_t raw, double *watts);

/* power_limit: rocm-6.2.2 passes hwmon's power1_cap through unconverted
 * (µW, amd_smi_utils.cc smi_amdgpu_get_power_cap); a value below 100000
 * can only be whole watts (no accelerator is capped under 0.1 W), so it is
 * read as W in case a later library converts. False for the sentinels
 * and 0. */
bool amdsmi_power_limit_w(uint32_t raw, double *watts);

/*
 * Whether what amd-smi reports as a device's activity and socket power is
 * that device's own. In SPX (and with the mode unknown but no partition id,
 * a GPU that is not partitioned) it is. In DPX/TPX/QPX/CPX the library
 * reports the primary partition's figures for every partition (AMD's own
 * exporter labels them partition_id 0), so they are the device's own only
 * on the partition whose id is known to be 0; every other partition's
 * activity is unknown, never partition 0's copied.
 */
bool amdsmi_activity_is_own(amdsmi_compute_partition_t cp, bool partition_id_known,
                            uint32_t partition_id);

/*
 * A partition's own gfx busy percent from amd-smi's metrics table
 * (amdsmi_get_gpu_metrics_info) of library version year.major: the mean of
 * its XCCs' gfx_busy_inst in xcp_stats[xcp]. True and *pct only for a 24.7
 * table (the layout amdsmi_abi.h pins) of at least
 * AMDSMI_GPU_METRICS_24_7_SIZE bytes, xcp below num_partition and
 * AMDSMI_MAX_NUM_XCP, at least one XCC filled, and every filled one 0..100.
 */
bool amdsmi_xcp_busy(uint32_t year, uint32_t major, const void *table, size_t len, uint32_t xcp,
                     unsigned *pct);

#endif
