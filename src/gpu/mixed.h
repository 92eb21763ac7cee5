/*
 * mixed.h - one node, two vendors: a backend that sweeps an NVIDIA backend
 * and an AMD one and publishes one snapshot holding both GPU lists, so an
 * agent on a node with H100s and MI300Xs (or an NVIDIA node with an AMD
 * card for display) reads and attributes every GPU it has.
 *
 * The merge is pure (gpu_snapshot_merge, unit-tested): the first
 * snapshot's GPUs keep their indexes (NVML's, which CUDA_VISIBLE_DEVICES
 * and the CUDA index follow), the second's are numbered after the first's
 * highest; MIG and process records are renumbered to stay with their GPU.
 * When either vendor cannot be read the merged snapshot is down, naming
 * both answers: a node whose GPUs are half unreadable is a gap, never half
 * its GPUs read as the whole.
 */
#ifndef KGS_GPU_MIXED_H
#define KGS_GPU_MIXED_H

#include "core/snapshot.h"
#include "gpu/backend.h"

/* A new snapshot with a's GPUs, then b's (see above); NULL when out of
 * memory or past the snapshot's bounds. a and b are left as they are. */
snapshot_t *gpu_snapshot_merge(const snapshot_t *a, const snapshot_t *b);

/* A backend over first and second, which it takes over (both cleared; on
 * failure both are freed). The name is "mixed". Returns 0 or KGS_ENOMEM. */
int gpu_mixed_backend(gpu_backend_t *first, gpu_backend_t *second, gpu_backend_t *out);

#endif
