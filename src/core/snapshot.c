/*
 * snapshot.c - allocation and refcounting of node snapshots.
 *
 * One allocation holds the header and both record arrays, so a snapshot is
 * freed with one free() and readers touch one contiguous block.
 */
#include "core/snapshot.h"

#include <stdlib.h>
#include <string.h>

#include "core/nvml_codes.h"

static const char *const gpu_field_names[GPU_F_COUNT] = {
#define GPU_FIELD_NAME(id, name) name,
    GPU_FIELDS(GPU_FIELD_NAME)
#undef GPU_FIELD_NAME
};

const char *gpu_field_name(gpu_field_t f) {
    return (unsigned)f < GPU_F_COUNT ? gpu_field_names[f] : "?";
}

const char *gpu_health_name(gpu_health_t h) {
    switch (h) {
    case GPU_HEALTH_OK:
        return "ok";
    case GPU_HEALTH_LOST:
        return "lost";
    case GPU_HEALTH_RESET_REQUIRED:
        return "reset_required";
    case GPU_HEALTH_ERROR:
        return "error";
    }
    return "error";
}

const char *gpu_vendor_name(gpu_vendor_t v) {
    switch (v) {
    case GPU_VENDOR_NVIDIA:
        return "nvidia";
    case GPU_VENDOR_AMD:
        return "amd";
    case GPU_VENDOR_UNKNOWN:
        break;
    }
    return NULL;
}

snapshot_t *snapshot_new(unsigned gpus, unsigned migs) {
    return snapshot_new_with_procs(gpus, migs, 0);
}

snapshot_t *snapshot_new_with_procs(unsigned gpus, unsigned migs, unsigned procs) {
    size_t head = sizeof(snapshot_t);
    /* Round the header up so the record arrays stay aligned. */
    head = (head + 15u) & ~(size_t)15u;
    size_t gpu_bytes = (size_t)gpus * sizeof(gpu_record_t);
    size_t mig_bytes = (size_t)migs * sizeof(mig_record_t);
    size_t proc_bytes = (size_t)procs * sizeof(proc_record_t);
    if (gpus > 4096 || migs > 4096 * 8 || procs > SNAPSHOT_MAX_PROCS)
        return NULL; /* far beyond any node; also keeps the sums below from overflowing */
    snapshot_t *s = calloc(1, head + gpu_bytes + mig_bytes + proc_bytes);
    if (!s)
        return NULL;
    s->gpus = gpus ? (gpu_record_t *)((char *)s + head) : NULL;
    s->mig = migs ? (mig_record_t *)((char *)s + head + gpu_bytes) : NULL;
    s->procs = procs ? (proc_record_t *)((char *)s + head + gpu_bytes + mig_bytes) : NULL;
    s->proc_total = procs;
    s->gpu_count = gpus;
    s->mig_total = migs;
    atomic_init(&s->_refs, 1);
    return s;
}

snapshot_t *snapshot_ref(snapshot_t *s) {
    if (s)
        atomic_fetch_add_explicit(&s->_refs, 1, memory_order_relaxed);
    return s;
}

void snapshot_unref(snapshot_t *s) {
    if (!s)
        return;
    if (atomic_fetch_sub_explicit(&s->_refs, 1, memory_order_acq_rel) == 1)
        free(s);
}

const gpu_record_t *snapshot_gpu_by_index(const snapshot_t *s, unsigned index) {
    for (unsigned i = 0; i < s->gpu_count; i++)
        if (s->gpus[i].index == index)
            return &s->gpus[i];
    return NULL;
}

bool gpu_memory_used_pct(const gpu_record_t *g, double *out_pct) {
    if (!gpu_has(g, GPU_F_MEM_USED) || !gpu_has(g, GPU_F_MEM_TOTAL) || g->memory_total_bytes == 0)
        return false;
    *out_pct = (double)g->memory_used_bytes * 100.0 / (double)g->memory_total_bytes;
    return true;
}

const char *nvml_code_name(int code) {
    switch (code) {
#define NVML_CODE_NAME(value, name)                                                                \
    case value:                                                                                    \
        return #name;
        NVML_RETURN_CODES(NVML_CODE_NAME)
#undef NVML_CODE_NAME
    }
    return "UNKNOWN_CODE";
}

const char *snapshot_down_subject(const snapshot_t *s) {
    return s->error[0] == '\0' || strncmp(s->error, "nvml", 4) == 0 ? "NVML" : "GPU backend";
}
