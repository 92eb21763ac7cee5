/*
 * fuzz_node_snapshot.c - the agent -> aggregator NodeSnapshot decoder
 * (src/cluster/snapshot_codec.c) on arbitrary bytes.
 *
 * Invariants when decoding succeeds: the snapshot respects snapshot_t's
 * own rules (strings terminated, MIG instances inside the array and under a
 * MIG-enabled parent, valid bits within gpu_field_t, valid values finite),
 * and re-encoding it then decoding again gives the same snapshot and pods
 * (the decoder's output is a fixed point of the codec). DRA devices
 * survive the trip field by field, always decode unresolved (the wire
 * carries no uuid: only the aggregator resolves), with non-empty driver and
 * device names, and count into dra_total. The encoder may
 * refuse with KGS_ERANGE only: a small message with many records can grow
 * past 4 MiB once every record carries all its values.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/snapshot_codec.h"
#include "core/err.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A whole number of ms, so an age clamped to "older than the clock" is a
 * fixed point too. */
#define RECV_NOW (UINT64_C(1000) * NS_PER_SEC)

static bool terminated(const char *s, size_t cap) {
    return memchr(s, '\0', cap) != NULL;
}

static void check_snapshot(const snapshot_t *s) {
    FUZZ_CHECK(terminated(s->node_name, sizeof s->node_name));
    FUZZ_CHECK(terminated(s->error, sizeof s->error));
    FUZZ_CHECK(terminated(s->driver_version, sizeof s->driver_version));
    FUZZ_CHECK(s->taken_mono <= RECV_NOW);
    unsigned mig_seen = 0;
    for (unsigned i = 0; i < s->gpu_count; i++) {
        const gpu_record_t *g = &s->gpus[i];
        FUZZ_CHECK(terminated(g->uuid, sizeof g->uuid));
        FUZZ_CHECK(terminated(g->name, sizeof g->name));
        FUZZ_CHECK(terminated(g->pci_bus_id, sizeof g->pci_bus_id));
        FUZZ_CHECK(g->valid >> GPU_F_COUNT == 0);
        FUZZ_CHECK(g->health <= GPU_HEALTH_ERROR);
        FUZZ_CHECK(snapshot_gpu_by_index(s, g->index) == g); /* indexes unique */
        if (gpu_has(g, GPU_F_POWER))
            FUZZ_CHECK(isfinite(g->power_w));
        if (gpu_has(g, GPU_F_SM_ACTIVE))
            FUZZ_CHECK(isfinite(g->sm_active_pct));
        FUZZ_CHECK(g->mig_count == 0 || g->mig_enabled);
        FUZZ_CHECK(g->mig_first <= s->mig_total && g->mig_count <= s->mig_total - g->mig_first);
        for (unsigned m = 0; m < g->mig_count; m++)
            FUZZ_CHECK(s->mig[g->mig_first + m].parent_index == g->index);
        mig_seen += g->mig_count;
    }
    FUZZ_CHECK(mig_seen == s->mig_total); /* every instance has its parent */
    unsigned procs_seen = 0;
    for (unsigned i = 0; i < s->gpu_count + s->mig_total; i++) {
        const proc_list_t *pl =
            i < s->gpu_count ? &s->gpus[i].procs : &s->mig[i - s->gpu_count].procs;
        FUZZ_CHECK(pl->count == 0 || pl->list_ok);
        FUZZ_CHECK(pl->first <= s->proc_total && pl->count <= s->proc_total - pl->first);
        procs_seen += pl->count;
    }
    FUZZ_CHECK(procs_seen == s->proc_total); /* every process has its device */
    for (unsigned i = 0; i < s->proc_total; i++) {
        const proc_record_t *p = &s->procs[i];
        FUZZ_CHECK(terminated(p->pod_uid, sizeof p->pod_uid));
        FUZZ_CHECK(terminated(p->container_id, sizeof p->container_id));
        if (proc_has(p, PROC_F_SM_UTIL))
            FUZZ_CHECK(isfinite(p->sm_util_pct) && p->sm_util_pct >= 0 && p->sm_util_pct <= 100);
    }
    for (unsigned i = 0; i < s->mig_total; i++) {
        const mig_record_t *m = &s->mig[i];
        FUZZ_CHECK(terminated(m->uuid, sizeof m->uuid));
        FUZZ_CHECK(terminated(m->profile, sizeof m->profile));
        FUZZ_CHECK((m->valid & ~SNAPSHOT_CODEC_MIG_FIELDS) == 0);
        if (mig_has(m, GPU_F_DRAM_BW_UTIL))
            FUZZ_CHECK(isfinite(m->dram_bw_util_pct));
    }
}

static void check_same(const snapshot_t *a, const snapshot_t *b) {
    FUZZ_CHECK(a->seq == b->seq && a->taken_mono == b->taken_mono);
    FUZZ_CHECK(a->taken_wall_ms == b->taken_wall_ms && a->status == b->status);
    FUZZ_CHECK(a->nvml_code == b->nvml_code);
    FUZZ_CHECK(strcmp(a->error, b->error) == 0);
    FUZZ_CHECK(strcmp(a->driver_version, b->driver_version) == 0);
    FUZZ_CHECK(strcmp(a->node_name, b->node_name) == 0);
    FUZZ_CHECK(a->gpu_count == b->gpu_count && a->mig_total == b->mig_total);
    /* Both were built by the decoder in zeroed memory, field by field. */
    if (a->gpu_count)
        FUZZ_CHECK(memcmp(a->gpus, b->gpus, a->gpu_count * sizeof *a->gpus) == 0);
    if (a->mig_total)
        FUZZ_CHECK(memcmp(a->mig, b->mig, a->mig_total * sizeof *a->mig) == 0);
    FUZZ_CHECK(a->proc_total == b->proc_total && a->procs_attributed == b->procs_attributed);
    if (a->proc_total)
        FUZZ_CHECK(memcmp(a->procs, b->procs, a->proc_total * sizeof *a->procs) == 0);
}

static void check_same_pods(const node_pods_t *a, const node_pods_t *b) {
    FUZZ_CHECK(a && b);
    FUZZ_CHECK(a->known == b->known && strcmp(a->error, b->error) == 0);
    FUZZ_CHECK(a->count == b->count && a->dra_total == b->dra_total);
    size_t dra_sum = 0;
    for (size_t i = 0; i < a->count; i++) {
        const node_pod_entry_t *x = &a->entries[i], *y = &b->entries[i];
        FUZZ_CHECK(strcmp(x->namespace_, y->namespace_) == 0);
        FUZZ_CHECK(strcmp(x->pod, y->pod) == 0);
        FUZZ_CHECK(strcmp(x->container, y->container) == 0);
        FUZZ_CHECK(x->device_count == y->device_count);
        for (size_t d = 0; d < x->device_count; d++)
            FUZZ_CHECK(strcmp(x->device_ids[d], y->device_ids[d]) == 0);
        FUZZ_CHECK(x->dra_count == y->dra_count && x->dra_count <= NODE_PODS_MAX_DRA);
        FUZZ_CHECK(x->dra_unresolved == x->dra_count && y->dra_unresolved == y->dra_count);
        for (size_t d = 0; d < x->dra_count; d++) {
            const node_pod_dra_t *p = &x->dra[d], *q = &y->dra[d];
            FUZZ_CHECK(p->driver[0] && p->device[0] && !p->uuid[0] && !p->not_gpu);
            FUZZ_CHECK(strcmp(p->driver, q->driver) == 0 && strcmp(p->pool, q->pool) == 0);
            FUZZ_CHECK(strcmp(p->device, q->device) == 0);
            FUZZ_CHECK(strcmp(p->share_id, q->share_id) == 0);
        }
        dra_sum += x->dra_count;
        /* Every device an entry lists finds at least that entry. */
        if (x->device_count)
            FUZZ_CHECK(node_pods_lookup(a, x->device_ids[0], NULL, 0) >= 1);
    }
    FUZZ_CHECK(dra_sum == a->dra_total);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    snapshot_t *s = NULL;
    node_pods_t *pods = NULL;
    char err[512];
    int rc = snapshot_codec_decode(data, size, RECV_NOW, &s, &pods, err, sizeof err);
    if (rc != 0) {
        FUZZ_CHECK(rc == KGS_EINVAL || rc == KGS_ENOMEM);
        FUZZ_CHECK(!s && !pods);
        FUZZ_CHECK(strncmp(err, "decode NodeSnapshot: ", 21) == 0);
        return 0;
    }
    FUZZ_CHECK(s && pods);
    check_snapshot(s);

    uint8_t *buf = NULL;
    size_t len = 0;
    rc = snapshot_codec_encode(s, pods, RECV_NOW, 1000, &buf, &len, err, sizeof err);
    if (rc == 0) {
        snapshot_t *s2 = NULL;
        node_pods_t *pods2 = NULL;
        rc = snapshot_codec_decode(buf, len, RECV_NOW, &s2, &pods2, err, sizeof err);
        if (rc != 0)
            fprintf(stderr, "re-decode failed: %s\n", err);
        FUZZ_CHECK(rc == 0);
        check_same(s, s2);
        check_same_pods(pods, pods2);
        snapshot_unref(s2);
        node_pods_free(pods2);
        free(buf);
    } else {
        FUZZ_CHECK(rc == KGS_ERANGE || rc == KGS_ENOMEM);
    }
    snapshot_unref(s);
    node_pods_free(pods);
    return 0;
}
