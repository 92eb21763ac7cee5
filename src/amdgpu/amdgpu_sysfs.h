/*
 * amdgpu_sysfs.h - AMD GPUs read from the amdgpu driver's sysfs files and
 * per-process use from /proc/PID/fdinfo, for nodes without ROCm userspace
 * (how nvtop reads AMD GPUs). A GPU backend ("amdgpu-sysfs", gpu/backend.h).
 *
 * Per device (<sys>/class/drm/cardN/device/): gpu_busy_percent,
 * mem_busy_percent, mem_info_vram_used/_total, product_name, unique_id,
 * uevent (DRIVER=amdgpu, PCI_SLOT_NAME), and in hwmon/hwmonN/: power1_average
 * (else power1_input), power1_cap, temp1_input (edge; else temp2_input,
 * junction), freq1_input (the gfx clock). A file that is absent or cannot be
 * read leaves its field unknown, never 0. Per process: every
 * <proc>/PID/fdinfo/FD with drm-driver amdgpu, matched to its card by
 * drm-pdev, counted once per drm-client-id.
 *
 * The roots are options so tests point the reader at a fake tree. Not
 * thread-safe: one thread owns a reader.
 */
#ifndef KGS_AMDGPU_AMDGPU_SYSFS_H
#define KGS_AMDGPU_AMDGPU_SYSFS_H

#include <stddef.h>

#include "core/log.h"
#include "gpu/backend.h"

typedef struct {
    const char *sys_root;  /* NULL = "/sys"; borrowed, copied */
    const char *proc_root; /* NULL = "/proc"; borrowed, copied */
} amdgpu_sysfs_opts_t;

#define AMDGPU_SYSFS_MAX_GPUS 64
#define AMDGPU_SYSFS_MAX_PROCS_PER_GPU 64

typedef struct amdgpu_sysfs amdgpu_sysfs_t;

/*
 * Creates a reader. `opts` may be NULL (the real roots); `log` is borrowed
 * and may be NULL; `node_name` is copied into every snapshot. Nothing is
 * read until the first sweep. Returns 0 and *out (returned: free with
 * amdgpu_sysfs_free), or KGS_ENOMEM / KGS_EINVAL (a root too long).
 */
int amdgpu_sysfs_new(const amdgpu_sysfs_opts_t *opts, const logger_t *log, const char *node_name,
                     amdgpu_sysfs_t **out);

/*
 * One sweep into a new snapshot (returned: one reference). With no amdgpu
 * card under <sys>/class/drm the snapshot has status SNAPSHOT_NVML_DOWN
 * and says so in ->error. Per-process utilisation is the engine time a
 * process gained since the previous sweep, so the first sweep has none.
 * Returns 0 or KGS_ENOMEM.
 */
int amdgpu_sysfs_sample(amdgpu_sysfs_t *r, mono_ns_t now, snapshot_t **out);

/* The reader as a GPU backend; `r` is taken (gpu_backend_deinit frees it). */
gpu_backend_t amdgpu_sysfs_backend(amdgpu_sysfs_t *r);

/* How many amdgpu cards <sys_root>/class/drm shows (NULL = "/sys"); 0 when
 * none or the folder cannot be read. For --gpu-backend auto. */
unsigned amdgpu_sysfs_count_cards(const char *sys_root);

/* NULL does nothing. */
void amdgpu_sysfs_free(amdgpu_sysfs_t *r);

#endif
