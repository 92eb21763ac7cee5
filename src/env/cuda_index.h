/*
 * cuda_index.h - the job-local CUDA ordinal of each GPU and MIG instance:
 * the number the process's own CUDA code would use ("cuda:0"), next to the
 * NVML index gpu-metrics prints.
 *
 * Pure: it reads CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER as env_detect()
 * recorded them, and the snapshot. Where the ordinal cannot be known from
 * what NVML gives, it says so (state and note) instead of guessing; the
 * rules, with their sources, are at the top of cuda_index.c and in
 * docs/hpc.md ("The CUDA index").
 */
#ifndef KGS_ENV_CUDA_INDEX_H
#define KGS_ENV_CUDA_INDEX_H

#include <stdbool.h>
#include <stddef.h>

#include "core/snapshot.h"
#include "env/env.h"

typedef enum {
    CUDA_INDEX_UNKNOWN = 0, /* neither visibility nor ordinal is known */
    CUDA_INDEX_KNOWN,       /* visible to CUDA as ordinal `index` */
    CUDA_INDEX_VISIBLE,     /* visible to CUDA, ordinal unknown */
    CUDA_INDEX_HIDDEN       /* CUDA in this process does not enumerate it */
} cuda_index_state_t;

typedef struct {
    cuda_index_state_t state;
    unsigned index; /* meaningful only when state == CUDA_INDEX_KNOWN */
} cuda_index_t;

#define CUDA_INDEX_NOTE_MAX 1024

typedef struct {
    unsigned gpu_count; /* = snapshot->gpu_count */
    unsigned mig_count; /* = snapshot->mig_total */
    cuda_index_t *gpu;  /* by position in snapshot->gpus; owned */
    cuda_index_t *mig;  /* by slot in snapshot->mig; owned */
    /* Why some device is UNKNOWN or VISIBLE without an ordinal: the first
     * cause met, naming the variable, the device or the driver; "" when
     * every device is KNOWN or HIDDEN. */
    char note[CUDA_INDEX_NOTE_MAX];
} cuda_index_map_t;

/*
 * Fills *out for `snap` under the CUDA variables recorded in `env`.
 * Every entry starts UNKNOWN and is set only by a rule that holds; `out`
 * owns two arrays: release with cuda_index_map_deinit(), also after an
 * error. Borrowed: env, snap. Returns 0, KGS_EINVAL (NULL argument) or
 * KGS_ENOMEM. Any thread.
 */
int cuda_index_map_build(const env_info_t *env, const snapshot_t *snap, cuda_index_map_t *out);

/* Frees the arrays and zeroes *m. NULL, or a zeroed map, is fine. */
void cuda_index_map_deinit(cuda_index_map_t *m);

/* The driver's major version from "560.35.03"; 0 when it does not start
 * with a number. */
unsigned cuda_index_driver_major(const char *driver_version);

#endif
