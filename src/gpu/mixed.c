/* mixed.c - see the header. */
#include "gpu/mixed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"

static void copy_part(snapshot_t *out, const snapshot_t *s, unsigned gpu_at, unsigned mig_at,
                      unsigned proc_at, unsigned index_offset) {
    for (unsigned i = 0; i < s->gpu_count; i++) {
        gpu_record_t *g = &out->gpus[gpu_at + i];
        *g = s->gpus[i];
        g->index += index_offset;
        g->mig_first += mig_at;
        g->procs.first += proc_at;
    }
    for (unsigned i = 0; i < s->mig_total; i++) {
        mig_record_t *m = &out->mig[mig_at + i];
        *m = s->mig[i];
        m->parent_index += index_offset;
        m->procs.first += proc_at;
    }
    if (s->proc_total)
        memcpy(out->procs + proc_at, s->procs, s->proc_total * sizeof *s->procs);
}

snapshot_t *gpu_snapshot_merge(const snapshot_t *a, const snapshot_t *b) {
    snapshot_t *out = snapshot_new_with_procs(
        a->gpu_count + b->gpu_count, a->mig_total + b->mig_total, a->proc_total + b->proc_total);
    if (!out)
        return NULL;
    out->seq = a->seq;
    out->taken_mono = a->taken_mono > b->taken_mono ? a->taken_mono : b->taken_mono;
    out->taken_wall_ms = a->taken_wall_ms > b->taken_wall_ms ? a->taken_wall_ms : b->taken_wall_ms;
    out->sample_duration_ns = a->sample_duration_ns + b->sample_duration_ns;
    snprintf(out->node_name, sizeof out->node_name, "%s",
             a->node_name[0] ? a->node_name : b->node_name);
    if (a->driver_version[0] && b->driver_version[0])
        snprintf(out->driver_version, sizeof out->driver_version, "%.39s; %.38s", a->driver_version,
                 b->driver_version);
    else
        snprintf(out->driver_version, sizeof out->driver_version, "%s",
                 a->driver_version[0] ? a->driver_version : b->driver_version);
    out->procs_attributed = a->procs_attributed && b->procs_attributed;
    if (a->status != SNAPSHOT_OK || b->status != SNAPSHOT_OK) {
        out->status = SNAPSHOT_NVML_DOWN;
        out->nvml_code = a->status != SNAPSHOT_OK ? a->nvml_code : b->nvml_code;
        /* The failing side first: its message names it (snapshot_down_subject). */
        if (a->status != SNAPSHOT_OK && b->status != SNAPSHOT_OK)
            snprintf(out->error, sizeof out->error, "%.120s; %.120s", a->error, b->error);
        else
            snprintf(out->error, sizeof out->error, "%.160s; the other backend answered",
                     a->status != SNAPSHOT_OK ? a->error : b->error);
    }
    unsigned offset = 0;
    for (unsigned i = 0; i < a->gpu_count; i++)
        if (a->gpus[i].index + 1 > offset)
            offset = a->gpus[i].index + 1;
    copy_part(out, a, 0, 0, 0, 0);
    copy_part(out, b, a->gpu_count, a->mig_total, a->proc_total, offset);
    return out;
}

typedef struct {
    gpu_backend_t first, second;
} mixed_t;

static int mixed_sample(void *self, mono_ns_t now, snapshot_t **out) {
    mixed_t *m = self;
    snapshot_t *a = NULL, *b = NULL;
    *out = NULL;
    if (gpu_backend_sample(&m->first, now, &a) != 0)
        return KGS_ENOMEM;
    if (gpu_backend_sample(&m->second, now, &b) != 0) {
        snapshot_unref(a);
        return KGS_ENOMEM;
    }
    *out = gpu_snapshot_merge(a, b);
    snapshot_unref(a);
    snapshot_unref(b);
    return *out ? 0 : KGS_ENOMEM;
}

static bool mixed_wants_second_sample(const void *self) {
    const mixed_t *m = self;
    return gpu_backend_wants_second_sample(&m->first) ||
           gpu_backend_wants_second_sample(&m->second);
}

static void mixed_free(void *self) {
    mixed_t *m = self;
    gpu_backend_deinit(&m->first);
    gpu_backend_deinit(&m->second);
    free(m);
}

static const gpu_backend_ops_t MIXED_OPS = {
    .name = "mixed",
    .sample = mixed_sample,
    .wants_second_sample = mixed_wants_second_sample,
    .free = mixed_free,
};

int gpu_mixed_backend(gpu_backend_t *first, gpu_backend_t *second, gpu_backend_t *out) {
    mixed_t *m = calloc(1, sizeof *m);
    if (!m) {
        gpu_backend_deinit(first);
        gpu_backend_deinit(second);
        return KGS_ENOMEM;
    }
    m->first = *first;
    m->second = *second;
    first->ops = second->ops = NULL;
    first->self = second->self = NULL;
    out->ops = &MIXED_OPS;
    out->self = m;
    return 0;
}
