/*
 * agent.c - the agent role's part of the server: the Watch service that
 * streams this node's snapshots to aggregators, beside the scaler, and
 * which pod holds each GPU (the kubelet's pod-resources, with DRA claims
 * and index ids resolved to this node's GPUs).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/node_pods.h"
#include "core/err.h"
#include "kube/pod_map.h"
#include "server/server.h"

static const node_pods_t *current_pods(void *ud) {
    server_t *sv = ud;
    return sv->pods;
}

static void set_pods(server_t *sv, node_pods_t *pods) {
    node_pods_free(sv->pods);
    sv->pods = pods;
}

typedef struct {
    node_pod_entry_t *entries;
    const char **ids;
    size_t n, cap;
    const snapshot_t *snap; /* translates index ids; NULL: none yet */
    logger_t *log;
} pods_builder_t;

/* The UUID of an index id ("1", "1:0": NVML indexes, from plugins other
 * than NVIDIA's) on this node, borrowed from snap; NULL when no GPU or MIG
 * instance has it (then the pod holds nothing here, and the aggregator
 * reports a GPU-asking pod with nothing attributed as a gap). */
static const char *index_id_uuid(const snapshot_t *snap, unsigned gpu, int mig) {
    const gpu_record_t *g = snap ? snapshot_gpu_by_index(snap, gpu) : NULL;
    if (!g)
        return NULL;
    if (mig < 0)
        return g->uuid;
    if (!g->mig_enabled || (unsigned)mig >= g->mig_count)
        return NULL;
    return snap->mig[g->mig_first + (unsigned)mig].uuid;
}

/* One node_pods entry per (device, holder): lookups by device and by pod
 * both work on that shape, and it needs no grouping. */
static int collect_holders(void *ud, const char *device_uuid, const pod_holder_t *holders,
                           size_t n) {
    pods_builder_t *b = ud;
    unsigned gpu;
    int mig;
    if (pod_map_id_is_index(device_uuid, &gpu, &mig)) {
        const char *uuid = index_id_uuid(b->snap, gpu, mig);
        if (!uuid) {
            LOG_DEBUG(b->log,
                      "kubelet pod map: device id \"%s\" (pod %s/%s): no %s with that NVML index "
                      "on this node%s",
                      device_uuid, holders[0].namespace_, holders[0].pod,
                      mig < 0 ? "GPU" : "MIG instance", b->snap ? "" : " (no snapshot yet)");
            return 0;
        }
        device_uuid = uuid;
    }
    for (size_t i = 0; i < n; i++) {
        if (b->n == b->cap)
            return 1; /* sized up front; cannot happen */
        b->ids[b->n] = device_uuid;
        b->entries[b->n] = (node_pod_entry_t){holders[i].namespace_, holders[i].pod,
                                              holders[i].container, &b->ids[b->n], 1};
        b->n++;
    }
    return 0;
}

static int count_holders(void *ud, const char *device_uuid, const pod_holder_t *holders, size_t n) {
    (void)device_uuid;
    (void)holders;
    *(size_t *)ud += n;
    return 0;
}

/* One entry per (container, DRA device), sent raw: the aggregator
 * resolves the device to a UUID (this agent has no Kubernetes token). */
typedef struct {
    pods_builder_t *b;
    node_pod_dra_t *dra;
} dra_builder_t;

static int collect_dra(void *ud, const pod_dra_holder_t *h) {
    dra_builder_t *db = ud;
    pods_builder_t *b = db->b;
    if (b->n == b->cap)
        return 1;
    node_pod_dra_t *d = &db->dra[b->n];
    *d = (node_pod_dra_t){h->driver, h->pool, h->device, h->share_id, "", false};
    b->entries[b->n] = (node_pod_entry_t){h->namespace_, h->pod, h->container, NULL, 0, d, 1, 1};
    b->n++;
    return 0;
}

static void on_pod_map(void *ud, pod_map_t *map) {
    server_t *sv = ud;
    size_t total = 0;
    pod_map_foreach(map, count_holders, &total);
    size_t n_dra = pod_map_dra_count(map);
    size_t cap = total + n_dra;
    /* Held until node_pods_new has copied the UUIDs borrowed from it. */
    snapshot_t *snap = server_current_snapshot(sv);
    pods_builder_t b = {calloc(cap ? cap : 1, sizeof *b.entries),
                        calloc(cap ? cap : 1, sizeof *b.ids),
                        0,
                        cap,
                        snap,
                        &sv->log};
    node_pod_dra_t *dra = calloc(cap ? cap : 1, sizeof *dra);
    dra_builder_t db = {&b, dra};
    char err[256];
    node_pods_t *pods = NULL;
    if (b.entries && b.ids && dra && pod_map_foreach(map, collect_holders, &b) == 0 &&
        pod_map_foreach_dra(map, collect_dra, &db) == 0 &&
        node_pods_new(b.entries, b.n, &pods, err, sizeof err) == 0)
        set_pods(sv, pods);
    else
        LOG_WARN(&sv->log, "kubelet pod map: %s",
                 b.entries && b.ids && dra ? err : "out of memory");
    free(dra);
    free(b.entries);
    free(b.ids);
    snapshot_unref(snap);
    pod_map_free(map);
}

static void on_pod_map_error(void *ud, const char *msg) {
    server_t *sv = ud;
    node_pods_t *pods = NULL;
    /* Unknown, not empty: the aggregator must not read "no pods here". */
    if (node_pods_new_unknown(msg, &pods) == 0)
        set_pods(sv, pods);
}

int server_agent_start(server_t *sv, char *err, size_t errlen) {
    agent_service_opts_t ao = {.loop = sv->loop,
                               .log = &sv->log,
                               .current_snapshot = server_current_snapshot,
                               .current_pods = current_pods,
                               .user_data = sv,
                               .sample_interval_ms =
                                   (uint32_t)(sv->o.sample_interval_ns / NS_PER_MS)};
    if (agent_service_new(&ao, &sv->agent) != 0)
        return kgs_seterr(err, errlen, KGS_ENOMEM, "out of memory");
    if (sv->o.kubelet_socket) {
        podres_client_callbacks_t pc = {
            .on_map = on_pod_map, .on_error = on_pod_map_error, .user_data = sv};
        char why[512];
        if (podres_client_start(sv->loop, sv->o.kubelet_socket, sv->o.sample_interval_ns, &sv->log,
                                &pc, &sv->podres, why, sizeof why) != 0)
            return kgs_seterr(err, errlen, KGS_EIO, "kubelet pod-resources: %s", why);
    } else {
        node_pods_t *unknown = NULL;
        if (node_pods_new_unknown("pod attribution disabled (--kubelet-socket none)", &unknown) ==
            0)
            set_pods(sv, unknown);
    }
    return 0;
}
