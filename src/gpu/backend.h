/*
 * backend.h - the vendor-neutral GPU layer: one small table of function
 * pointers that each GPU reader (NVML, amdgpu sysfs, ...) implements, so the
 * sampler thread, snapshot publication, aggregation and the KEDA semantics
 * never learn which vendor answered.
 *
 * A backend turns "what the node's GPUs say now" into a snapshot of the
 * existing types (core/snapshot.h): one gpu_record_t per device, with its
 * vendor, validity bits for what it could tell and proc_list_t/proc_record_t
 * for per-process use. The table is nvtop's `struct gpu_vendor`, minus its
 * statics: every backend is an object, so two can live in one process.
 *
 * The table's unit of work is a sweep of the whole node, not one device:
 * a snapshot is one allocation sized by the device, MIG-instance and process
 * counts that only the sweep learns, and NVML's sweep carries state across
 * devices (initialisation backoff, rate counters). How a backend walks its
 * devices inside a sweep (list, sample one, its processes) is its own
 * business; src/amdgpu/ shows the per-device split.
 */
#ifndef KGS_GPU_BACKEND_H
#define KGS_GPU_BACKEND_H

#include <stdbool.h>

#include "core/clock.h"
#include "core/snapshot.h"

typedef struct {
    /* Stable name, as --gpu-backend spells it: "nvml", "amdgpu-sysfs". */
    const char *name;
    /*
     * One sweep. On success *out is a new snapshot (returned: the caller
     * owns one reference). A backend that cannot reach its GPUs still
     * returns a snapshot, with status SNAPSHOT_NVML_DOWN and the reason in
     * ->error. Returns 0 or KGS_ENOMEM (then *out is NULL).
     */
    int (*sample)(void *self, mono_ns_t now, snapshot_t **out);
    /* True when a field needs a second sweep to become present (a rate
     * from two counter readings). May be NULL: never. */
    bool (*wants_second_sample)(const void *self);
    /* Releases the backend's state. NULL does nothing. */
    void (*free)(void *self);
} gpu_backend_ops_t;

/* A backend: its table and its state. Owned by whoever created it (the
 * sampler takes it over in sampler_start). */
typedef struct {
    const gpu_backend_ops_t *ops;
    void *self;
} gpu_backend_t;

static inline const char *gpu_backend_name(const gpu_backend_t *b) {
    return b->ops->name;
}

/* See gpu_backend_ops_t.sample. */
static inline int gpu_backend_sample(gpu_backend_t *b, mono_ns_t now, snapshot_t **out) {
    return b->ops->sample(b->self, now, out);
}

static inline bool gpu_backend_wants_second_sample(const gpu_backend_t *b) {
    return b->ops->wants_second_sample && b->ops->wants_second_sample(b->self);
}

/* Frees the backend's state and clears *b. A zeroed backend does nothing. */
static inline void gpu_backend_deinit(gpu_backend_t *b) {
    if (b && b->ops && b->ops->free)
        b->ops->free(b->self);
    if (b) {
        b->ops = 0;
        b->self = 0;
    }
}

#endif
