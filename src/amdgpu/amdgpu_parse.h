/*
 * amdgpu_parse.h - the pure parsers of the amdgpu sysfs reader: sysfs value
 * files, PCI addresses and DRM fdinfo text. No file I/O; every function
 * reads only the bytes it is given (which need not be NUL-terminated).
 *
 * Sources (what the kernel writes), cited at the stored snapshots of
 * torvalds/linux:
 *   drivers/gpu/drm/amd/pm/amdgpu_pm.c (gpu_busy_percent, mem_busy_percent:
 *     sysfs_emit "%d\n"); amdgpu_vram_mgr.c (mem_info_vram_*: "%llu\n",
 *     bytes); Documentation/hwmon/sysfs-interface.rst (power1_average,
 *     power1_input, power1_cap in microwatts; temp1_input in millidegrees
 *     Celsius; freq1_input in Hz);
 *   Documentation/gpu/drm-usage-stats.rst (commit 0020582a8afe) and
 *     drivers/gpu/drm/amd/amdgpu/amdgpu_fdinfo.c (commit 0604aa87b098):
 *     "key:<whitespace>value[ unit]" lines, drm-driver, drm-pdev,
 *     drm-client-id, drm-engine-<name> in ns, drm-memory-<region> in bytes
 *     or with a KiB/MiB unit (amdgpu writes KiB).
 */
#ifndef KGS_AMDGPU_AMDGPU_PARSE_H
#define KGS_AMDGPU_AMDGPU_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A sysfs value file holding one unsigned decimal ("42\n"): optional
 * surrounding whitespace, nothing else. Returns 0 and *out, or KGS_EINVAL
 * (empty, a sign, a non-digit, trailing text) or KGS_ERANGE (overflow).
 */
int amdgpu_parse_u64(const char *text, size_t len, uint64_t *out);

/* As amdgpu_parse_u64 for a signed decimal ("-5000\n", a temperature). */
int amdgpu_parse_i64(const char *text, size_t len, int64_t *out);

/* The canonical PCI address: "dddd:bb:dd.f", lower-case hex, the domain at
 * least 4 digits (the kernel's and the AMD device plugin's spelling). */
#define AMDGPU_BDF_MAX 24

/*
 * Normalises a PCI address to the canonical form: accepts "0000:19:00.0",
 * NVML's 8-digit domain "00000000:19:00.0", upper case, and "19:00.0"
 * (domain 0). Bus <= 0xff, device <= 0x1f, function <= 7, domain <=
 * 0xffffffff. Returns 0 and out (NUL-terminated), or KGS_EINVAL.
 * `out` must hold AMDGPU_BDF_MAX bytes.
 */
int amdgpu_bdf_normalise(const char *text, size_t len, char out[AMDGPU_BDF_MAX]);

/* What one DRM file descriptor's fdinfo says. A field is meaningful only
 * when its has_ flag is set. */
typedef struct {
    char driver[32];              /* drm-driver; "" when absent */
    bool has_pdev, has_client_id; /* drm-pdev, drm-client-id */
    char pdev[AMDGPU_BDF_MAX];    /* normalised */
    uint64_t client_id;
    bool has_engine_gfx, has_engine_compute;
    uint64_t engine_gfx_ns, engine_compute_ns;
    bool has_vram;
    uint64_t vram_bytes; /* drm-memory-vram, else drm-resident-vram */
} amdgpu_fdinfo_t;

/*
 * Parses the text of /proc/PID/fdinfo/FD. Lines that are not DRM keys, and
 * DRM keys we do not use, are skipped; a DRM key we use whose value is
 * malformed is skipped too (the field stays unknown) -- one bad line never
 * hides the rest. Returns 0 when the text has a drm-driver line (a DRM file
 * descriptor; out->driver says whose), or KGS_ENOTFOUND (not a DRM fd).
 * *out is reset first.
 */
int amdgpu_fdinfo_parse(const char *text, size_t len, amdgpu_fdinfo_t *out);

/* True when a uevent's text (KEY=value lines) has DRIVER=amdgpu; when so
 * and it has PCI_SLOT_NAME, that address (normalised) is written to
 * `slot` (else slot is ""). */
bool amdgpu_uevent_parse(const char *text, size_t len, char slot[AMDGPU_BDF_MAX]);

/* What the binary gpu_metrics table says (device/gpu_metrics; layouts from
 * drivers/gpu/drm/amd/include/kgd_pp_interface.h, struct gpu_metrics_v1_1
 * to v1_6). A field is meaningful only when its has_ flag is set; the SMU
 * driver fills a field it does not support with all ones
 * (smu_cmn_init_soft_gpu_metrics), and such a field is absent here. */
typedef struct {
    uint8_t format_revision, content_revision;
    bool has_gfx_activity, has_umc_activity, has_socket_power, has_hotspot, has_energy;
    unsigned gfx_activity_pct; /* average_gfx_activity */
    unsigned umc_activity_pct; /* average_umc_activity (memory controller) */
    unsigned socket_power_w;   /* v1_1-v1_3 average_socket_power; v1_4+ curr_socket_power */
    unsigned hotspot_c;        /* temperature_hotspot, degrees Celsius */
    uint64_t energy_mj;        /* v1_4+: energy_accumulator (15.259 uJ units) in mJ */
} amdgpu_gpu_metrics_t;

/*
 * Parses a gpu_metrics table of `len` bytes (any alignment). Returns 0 for
 * format 1, content 1 to 6 (the dGPU tables: MI100, MI200, MI300, Navi),
 * KGS_ENOTFOUND for a revision we do not know (APU tables, newer ones: the
 * caller keeps its other sources), or KGS_EINVAL (shorter than its header
 * says or than the fields of its revision). *out is reset first.
 */
int amdgpu_gpu_metrics_parse(const void *buf, size_t len, amdgpu_gpu_metrics_t *out);

#endif
