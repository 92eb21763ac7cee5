/*
 * keda-gpu-scaler - the KEDA external scaler in each --role (standalone:
 * this node's GPUs and the demand sources; agent: this node's GPUs and
 * their pods, streamed to aggregators; aggregator: every agent's view, the
 * Kubernetes API and the demand sources), `keda-gpu-scaler validate` and,
 * as `keda-gpu-scaler query`, a client that calls a scaler as KEDA does.
 *
 * DESIGN
 * One loop thread, plus the sampler thread where NVML is read (standalone,
 * agent) and the DNS thread of --agents-dns or a named source or agent
 * (net/resolver.h). The sampler sweeps NVML on --sample-interval and
 * publishes a snapshot, then writes the loop's eventfd. The loop thread owns
 * every socket (gRPC, /metrics, probes, outbound connections) and the
 * signalfd; on each wakeup it re-evaluates the StreamIsActive groups and
 * health, so pushes follow a change within one sample. No RPC ever waits
 * on NVML.
 *
 * Shutdown (SIGTERM/SIGINT): streams end with status OK, GOAWAY goes to
 * every connection, unary calls in flight finish, and the process exits
 * when the last connection closes or after --shutdown-grace, whichever
 * comes first.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "cluster/agent_pool.h"
#include "cluster/agent_service.h"
#include "cluster/cluster_view.h"
#include "kube/kube_client.h"
#include "net/resolver.h"
#include "cluster/workload.h"
#include "cluster/node_pods.h"
#include "kube/pod_map.h"
#include "kube/podres_client.h"
#include "kube/proc_cgroup.h"
#include "core/hash.h"
#include "core/err.h"
#include "core/log.h"
#include "env/env.h"
#include "net/conn_limits.h"
#include "net/grpc_server.h"
#include "net/http_server.h"
#include "net/loop.h"
#include "net/tls.h"
#include "nvml/collector.h"
#include "nvml/loader.h"
#include "nvml/sampler.h"
#include "scaler/scaler.h"
#include "server/metrics.h"
#include "server/options.h"
#include "server/query.h"
#include "server/validate.h"
#include "sources/source_hub.h"

#ifndef KGS_VERSION
#define KGS_VERSION "0.0.0"
#endif
#ifndef KGS_GIT_DESCRIBE
#define KGS_GIT_DESCRIBE "unknown"
#endif

/* Three stat() calls: cheap enough to notice a rotated Secret within 2 s. */
#define TLS_RELOAD_CHECK_NS (2 * NS_PER_SEC)
/* A reload that keeps failing the same way is logged again after this long
 * (with how often it failed meanwhile), not at every check. */
#define TLS_RELOAD_WARN_NS (60 * NS_PER_SEC)

/* The last failed reload of one TLS context, for its WARN line. */
typedef struct {
    char last[512]; /* the error logged last; "" after a good check */
    mono_ns_t at;   /* when it was logged */
    unsigned since; /* the same failure at checks since, not logged */
} tls_warn_t;

typedef struct {
    server_options_t o;
    logger_t log;
    char node[256];
    loop_t *loop;
    nvml_loader_t *loader;
    sampler_t *sampler;
    tls_server_t *tls;
    tls_client_t *agents_tls; /* --agents-tls-ca: the aggregator's context for its agents */
    grpc_server_t *grpc;
    scaler_t *scaler;
    agent_service_t *agent;        /* --role agent */
    podres_client_t *podres;       /* --role agent with a kubelet socket */
    node_pods_t *pods;             /* the latest GPU-to-pod attribution (agent) */
    cluster_view_t *view;          /* --role aggregator: every agent's latest snapshot */
    agent_pool_t *pool;            /* the Watch streams to the agents */
    resolver_t *resolver;          /* --agents-dns */
    kube_client_t *kube;           /* pods from the Kubernetes API; NULL without one */
    kube_client_t *kube_nodes;     /* Node labels, started by the first label nodeSelector */
    kube_client_t *kube_slices;    /* DRA ResourceSlices, started by the first DRA device */
    bool slices_synced;            /* kube_slices' synced state at the last view change */
    kube_client_config_t kube_cfg; /* how kube was made, for kube_nodes */
    source_hub_t *sources;         /* engine and queue sources (standalone, aggregator) */
    tenant_policy_t tenant;        /* who may claim what (--source-auth, --allow-cross-namespace) */
    demand_view_ref_t metrics_triggers[METRICS_MAX_TRIGGERS]; /* /metrics scratch */
    loop_timer_t cluster_refresh;   /* coalesces view changes into refreshes */
    mono_ns_t last_cluster_refresh; /* when the streams were last re-evaluated */
    http_server_t *metrics_http, *probe_http;
    server_stats_t stats;
    int sigfd;
    loop_io_t *sig_io;
    loop_timer_t tls_timer, grace_timer;
    tls_warn_t tls_warn, agents_tls_warn;
    bool shutting_down;
    bool was_ready;
    uint64_t last_seq_seen;
    char readyz_body[400]; /* the 503 text; the HTTP server copies it before the next call */
} server_t;

/* ---- glue --------------------------------------------------------------------- */

static snapshot_t *current_snapshot(void *ud) {
    server_t *sv = ud;
    return sv->sampler ? sampler_current(sv->sampler) : NULL;
}

static void on_rpc_done(void *ud, scaler_rpc_t rpc, int status, double seconds) {
    server_t *sv = ud;
    /* scaler_rpc_t and rpc_method_t list the methods in the same order. */
    server_stats_record_rpc(&sv->stats, (rpc_method_t)rpc, status, seconds);
}

static void on_sample_published(void *ud) {
    server_t *sv = ud;
    loop_wakeup(sv->loop); /* the sampler thread: only this is allowed */
}

/* The sampler thread, before a snapshot is published: which pod each GPU
 * process belongs to (agent with --proc-root). sv->o is read-only by now. */
static void on_sample_taken(snapshot_t *snap, void *ud) {
    server_t *sv = ud;
    if (sv->o.proc_root && snap->proc_total)
        proc_cgroup_annotate(snap, sv->o.proc_root);
}

static void log_readiness(server_t *sv) {
    char why[300];
    bool ready = scaler_ready(sv->scaler, why, sizeof why);
    if (ready != sv->was_ready) {
        if (ready)
            LOG_INFO(&sv->log, "ready: serving GPU metrics for node %s", sv->node);
        else
            LOG_WARN(&sv->log, "not ready: %s", why);
        sv->was_ready = ready;
    }
}

static void on_wakeup(loop_t *loop, void *ud) {
    (void)loop;
    server_t *sv = ud;
    snapshot_t *snap = current_snapshot(sv);
    if (snap && snap->seq != sv->last_seq_seen) {
        sv->last_seq_seen = snap->seq;
        server_stats_record_snapshot(&sv->stats, snap);
    }
    snapshot_unref(snap);
    if (!sv->shutting_down) {
        scaler_refresh(sv->scaler);
        if (sv->agent)
            agent_service_publish(sv->agent);
    }
    log_readiness(sv);
}

/* ---- agent: Watch streams next to the scaler, pods from the kubelet --------------- */

static void on_grpc_request(grpc_call_t *call, const char *path, const uint8_t *msg, size_t len,
                            void *ud) {
    server_t *sv = ud;
    if (sv->agent && agent_service_handles(path))
        agent_service_on_request(call, path, msg, len, sv->agent);
    else
        scaler_on_request(call, path, msg, len, sv->scaler);
}

static void on_grpc_call_gone(grpc_call_t *call, void *call_ud, void *ud) {
    server_t *sv = ud;
    if (sv->agent && agent_service_owns_call(sv->agent, call))
        agent_service_on_call_gone(call, call_ud, sv->agent);
    else
        scaler_on_call_gone(call, call_ud, sv->scaler);
}

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
    snapshot_t *snap = current_snapshot(sv);
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

/* ---- aggregator: the cluster view, the agents, the pods ----------------------------- */

static void on_kube_event(void *ud);

/* Nodes are watched only once a trigger selects them by label: clusters
 * that never do need no RBAC on nodes and see no 403s in the log. A failure
 * to start is logged and retried when a call next brings such a trigger. */
static void start_node_watch(server_t *sv) {
    kube_client_config_t kc = sv->kube_cfg;
    snprintf(kc.resource, sizeof kc.resource, "nodes");
    kube_client_callbacks_t kcb = {
        .on_synced = on_kube_event, .on_change = on_kube_event, .user_data = sv};
    char err[256];
    if (kube_client_new(sv->loop, &kc, &kcb, &sv->log, &sv->kube_nodes, err, sizeof err) != 0) {
        LOG_WARN(&sv->log, "node watch for nodeSelector label selectors: %s", err);
        sv->kube_nodes = NULL;
        return;
    }
    LOG_INFO(&sv->log, "watching nodes at %s (a nodeSelector label selector is in use)",
             kc.api_url);
}

/* ---- aggregator: DRA devices -> GPU UUIDs through the ResourceSlices ---------------- */

/* The kubelet names a DRA device (driver, pool, device); the agents send
 * that as it is (they hold no Kubernetes token) and the aggregator, which
 * already lists and watches the API, resolves it here. NULL: unknown (a
 * gap); "": a device that is no GPU; else its GPU-/MIG- UUID. */
static const char *resolve_dra(void *ud, const char *driver, const char *pool, const char *device) {
    server_t *sv = ud;
    if (!sv->kube_slices || !kube_client_synced(sv->kube_slices, loop_now(sv->loop)))
        return NULL;
    return dra_index_lookup(kube_client_slices(sv->kube_slices), driver, pool, device);
}

static void on_cluster_change(void *ud);

static void on_slices_event(void *ud) {
    server_t *sv = ud;
    cluster_view_reresolve(sv->view);
    on_cluster_change(sv);
}

/* One cluster-wide list + watch of every ResourceSlice, indexed by
 * (driver, pool, device): a per-node field selector (spec.nodeName) would
 * take one watch per node, and a DRA device's pool need not be its node's
 * (network-attached pools, slices with allNodes). Started only once an
 * agent reports a DRA device, so clusters without DRA need no RBAC on
 * resourceslices and see no 403s. */
static void start_slice_watch(server_t *sv) {
    kube_client_config_t kc = sv->kube_cfg;
    snprintf(kc.resource, sizeof kc.resource, "resourceslices");
    /* A slice is far larger than a pod (NVIDIA's lists every MIG placement
     * of every GPU, with attributes: tens of KiB a node): small pages keep
     * the list's transient JSON small. */
    kc.page_limit = kc.page_limit < 50 ? kc.page_limit : 50;
    kube_client_callbacks_t kcb = {
        .on_synced = on_slices_event, .on_change = on_slices_event, .user_data = sv};
    char err[256];
    if (kube_client_new(sv->loop, &kc, &kcb, &sv->log, &sv->kube_slices, err, sizeof err) != 0) {
        LOG_WARN(&sv->log, "ResourceSlice watch for DRA devices: %s", err);
        sv->kube_slices = NULL;
        return;
    }
    LOG_INFO(&sv->log,
             "watching resource.k8s.io/v1 ResourceSlices at %s (an agent reported DRA "
             "devices)",
             kc.api_url);
}

/* What an unresolved DRA device's gap says about the slices. */
static void update_dra_status(server_t *sv, mono_ns_t now) {
    char st[256];
    if (!sv->kube)
        snprintf(st, sizeof st,
                 "this aggregator has no Kubernetes API (--kube-api none) to read ResourceSlices");
    else if (!sv->kube_slices)
        snprintf(st, sizeof st, "the ResourceSlice watch has not started");
    else if (!kube_client_synced(sv->kube_slices, now))
        snprintf(st, sizeof st, "ResourceSlices not listed%s%.200s",
                 kube_client_last_error(sv->kube_slices)[0] ? ": " : " yet",
                 kube_client_last_error(sv->kube_slices));
    else
        st[0] = '\0';
    cluster_view_set_dra_status(sv->view, st);
}

/* A configuration reached the scaler: a nodeSelector label selector needs
 * the Node watch (evaluations only read it). */
static void aggregator_on_config(void *ud, const trigger_config_t *c, const char *so_namespace) {
    (void)so_namespace;
    server_t *sv = ud;
    if (c->node_scope == NODE_SCOPE_SELECTOR && sv->kube && !sv->kube_nodes)
        start_node_watch(sv);
}

static void aggregator_evaluate(void *ud, const trigger_config_t *c, const char *so_namespace,
                                mono_ns_t now, eval_result_t *out) {
    server_t *sv = ud;
    update_dra_status(sv, now);
    workload_inputs_t in = {
        .view = sv->view,
        .pods = sv->kube ? kube_client_cache(sv->kube) : NULL,
        .pods_synced = sv->kube && kube_client_synced(sv->kube, now),
        .nodes = sv->kube_nodes ? kube_client_cache(sv->kube_nodes) : NULL,
        .nodes_synced = sv->kube_nodes && kube_client_synced(sv->kube_nodes, now),
        .now = now,
        .stale_after_ns = sv->o.stale_after_ns,
    };
    workload_evaluate(c, so_namespace, &in, out, NULL);
}

/* ---- demand sources --------------------------------------------------------------- */

typedef struct {
    const trigger_config_t *c;
    const char *ns;
    source_pod_emit_cb emit;
    void *emit_data;
    int64_t wall_now; /* creationTimestamp is wall-clock time */
} pod_scan_t;

static bool scan_pod(const pod_t *p, void *ud) {
    pod_scan_t *x = ud;
    /* A finished pod brings nothing; one still loading its model (Pending,
     * or Running but not Ready) will bring capacity: the queueing model
     * counts it as starting. One being deleted but still Running finishes
     * its requests (draining): that model still reads its counters. The hub
     * decides what to scrape. */
    if (p->phase == POD_PHASE_SUCCEEDED || p->phase == POD_PHASE_FAILED ||
        (p->deleting && p->phase != POD_PHASE_RUNNING) || !workload_pod_selected(x->c, x->ns, p))
        return true;
    char who[KUBE_NAMESPACE_MAX + KUBE_NAME_MAX + 2];
    snprintf(who, sizeof who, "%s/%s", p->namespace, p->name);
    uint64_t id = kgs_fnv1a(p->uid[0] ? p->uid : who); /* stable for the pod's life */
    source_pod_t sp = {.pod = who,
                       .ip = p->pod_ip,
                       .ready = p->ready && !p->deleting && p->phase == POD_PHASE_RUNNING,
                       .draining = p->deleting,
                       .age_s = p->created_unix > 0 ? (double)(x->wall_now - p->created_unix) : -1,
                       .id = id};
    x->emit(x->emit_data, &sp);
    return true;
}

/* The engine pods of a podSelector trigger, from the API's pod list. */
static int list_engine_pods(void *ud, const trigger_config_t *c, const char *ns,
                            source_pod_emit_cb emit, void *emit_data, char *err, size_t errlen) {
    server_t *sv = ud;
    mono_ns_t now = loop_now(sv->loop);
    if (!sv->kube)
        return kgs_seterr(err, errlen, KGS_ESTATE,
                          "podSelector needs the pod list, and this aggregator has no Kubernetes "
                          "API (--kube-api none)");
    if (!kube_client_synced(sv->kube, now))
        return kgs_seterr(err, errlen, KGS_ESTATE, "pod list not synced: %s",
                          kube_client_last_error(sv->kube));
    pod_scan_t x = {c, workload_namespace(c, ns), emit, emit_data, (int64_t)time(NULL)};
    pod_cache_foreach(kube_client_cache(sv->kube), scan_pod, &x);
    return 0;
}

/* Before a poll sends a sourceAuth credential to a podSelector pod: the
 * pod must still exist, run and hold the address (pods=own-namespace). The
 * pod is the ScaledObject's own namespace's, so naming it tells no one
 * anything of another namespace. */
static int check_auth_pod(void *ud, const char *pod, const struct sockaddr *addr, socklen_t addrlen,
                          char *why, size_t whylen) {
    server_t *sv = ud;
    if (!sv->kube || !kube_client_synced(sv->kube, loop_now(sv->loop)))
        return kgs_seterr(why, whylen, KGS_ESTATE,
                          "the pod list is not synced, so pod %s cannot be checked to still hold "
                          "the address",
                          pod);
    char ns[KUBE_NAMESPACE_MAX + 1], ip[INET6_ADDRSTRLEN] = "?";
    const char *slash = strchr(pod, '/');
    size_t nl = slash ? (size_t)(slash - pod) : 0;
    uint8_t want[16], have[16];
    int fam = addr->sa_family;
    const void *a =
        fam == AF_INET6
            ? (const void *)&((const struct sockaddr_in6 *)(const void *)addr)->sin6_addr
            : (const void *)&((const struct sockaddr_in *)(const void *)addr)->sin_addr;
    size_t alen = fam == AF_INET6 ? 16 : 4;
    (void)addrlen;
    memcpy(want, a, alen);
    inet_ntop(fam, a, ip, sizeof ip);
    if (!slash || nl >= sizeof ns)
        return kgs_seterr(why, whylen, KGS_EINVAL, "pod %s is not namespace/name", pod);
    memcpy(ns, pod, nl);
    ns[nl] = '\0';
    const pod_t *p = pod_cache_find(kube_client_cache(sv->kube), ns, slash + 1);
    if (!p || p->phase == POD_PHASE_SUCCEEDED || p->phase == POD_PHASE_FAILED ||
        inet_pton(fam, p->pod_ip, have) != 1 || memcmp(have, want, alen) != 0)
        return kgs_seterr(why, whylen, KGS_ESTATE,
                          "pod %s no longer holds %s (pods=own-namespace: only the "
                          "ScaledObject's own pods get it)",
                          pod, ip);
    return 0;
}

static void on_sources_update(void *ud) {
    server_t *sv = ud;
    if (!sv->shutting_down && sv->scaler)
        scaler_refresh(sv->scaler);
}

/* Ready once an agent streams to us and, with an API, the pod list synced. */
static bool aggregator_ready(void *ud, mono_ns_t now, char *why, size_t whylen) {
    server_t *sv = ud;
    if (agent_pool_connected(sv->pool) == 0) {
        snprintf(why, whylen, "no agent is streaming snapshots (%zu known)",
                 cluster_view_count(sv->view));
        return false;
    }
    if (sv->kube && !kube_client_synced(sv->kube, now)) {
        snprintf(why, whylen, "pod list not synced: %s", kube_client_last_error(sv->kube));
        return false;
    }
    if (whylen)
        why[0] = '\0';
    return true;
}

/* With a thousand agents the view changes a thousand times a second; each
 * refresh evaluates every stream group over the whole workload. Refreshing
 * at most every CLUSTER_REFRESH_NS keeps that cost flat while a change still
 * reaches the streams within one sample interval plus 50 ms. */
#define CLUSTER_REFRESH_NS (50 * NS_PER_MS)

static void cluster_refresh_now(server_t *sv) {
    sv->last_cluster_refresh = loop_now(sv->loop);
    if (!sv->shutting_down)
        scaler_refresh(sv->scaler);
    log_readiness(sv);
}

static void on_cluster_refresh_timer(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)loop;
    (void)t;
    cluster_refresh_now(ud);
}

static void on_cluster_change(void *ud) {
    server_t *sv = ud;
    if (!sv->kube_slices && sv->kube && cluster_view_has_dra(sv->view)) {
        start_slice_watch(sv);
    }
    /* resolve_dra answers NULL while the slices are not synced: when that
     * flips (the API failing for stale_after, or back), resolve again. */
    bool synced = sv->kube_slices && kube_client_synced(sv->kube_slices, loop_now(sv->loop));
    if (synced != sv->slices_synced) {
        sv->slices_synced = synced;
        cluster_view_reresolve(sv->view);
    }
    if (loop_timer_armed(&sv->cluster_refresh))
        return; /* a refresh is already due */
    mono_ns_t due = clock_add_sat(sv->last_cluster_refresh, CLUSTER_REFRESH_NS);
    if (loop_now(sv->loop) >= due)
        cluster_refresh_now(sv);
    else
        loop_timer_start(sv->loop, &sv->cluster_refresh, due);
}

static void on_agents_resolved(void *ud, const char *const *addrs, size_t n, const char *error) {
    server_t *sv = ud;
    if (error)
        LOG_WARN(&sv->log, "--agents-dns %s: %s (keeping %zu agent(s))", sv->o.agents_dns, error,
                 n);
    if (agent_pool_set_addresses(sv->pool, addrs, n) == 0 && !error)
        LOG_DEBUG(&sv->log, "--agents-dns %s: %zu agent(s)", sv->o.agents_dns, n);
}

/* Splits --agents (a comma list) and hands it to the pool. */
static int set_static_agents(server_t *sv, char *err, size_t errlen) {
    char *buf = strdup(sv->o.agents);
    size_t cap = 1;
    for (const char *p = sv->o.agents; *p; p++)
        cap += *p == ',';
    const char **addrs = calloc(cap, sizeof *addrs);
    if (!buf || !addrs) {
        free(buf);
        free(addrs);
        return kgs_seterr(err, errlen, KGS_ENOMEM, "--agents: out of memory");
    }
    size_t n = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ')
            tok++;
        if (*tok)
            addrs[n++] = tok;
    }
    int rc = n == 0 ? kgs_seterr(err, errlen, KGS_EINVAL, "--agents: no HOST:PORT given")
                    : agent_pool_set_addresses(sv->pool, addrs, n);
    if (n > 0 && rc != 0)
        kgs_seterr(err, errlen, rc,
                   "--agents: every entry must be IP:PORT (e.g. 10.0.0.5:6000); see the log");
    free(buf);
    free(addrs);
    return rc;
}

static void on_kube_event(void *ud) {
    on_cluster_change(ud);
}

static int start_aggregator(server_t *sv, char *err, size_t errlen) {
    if (cluster_view_new(&sv->view) != 0)
        return kgs_seterr(err, errlen, KGS_ENOMEM, "out of memory");
    cluster_view_set_resolver(sv->view, resolve_dra, sv);
    if (sv->o.agents_tls_ca &&
        tls_client_new(sv->o.agents_tls_ca, sv->o.agents_tls_cert, sv->o.agents_tls_key,
                       &sv->agents_tls, err, errlen) != 0)
        return KGS_EINVAL; /* err names the file: "TLS CA /x: no such file ..." */
    if (sv->o.agents_tls_ca && !sv->o.agents_tls_cert)
        LOG_WARN(&sv->log, "--agents-tls-ca without --agents-tls-cert: agents that require "
                           "client certificates (--tls-client-ca) will refuse this aggregator");
    agent_pool_opts_t po = {.loop = sv->loop,
                            .log = &sv->log,
                            .view = sv->view,
                            .on_change = on_cluster_change,
                            .user_data = sv,
                            .tls = sv->agents_tls ? tls_client_ctx(sv->agents_tls) : NULL,
                            .tls_server_name = sv->o.agents_tls_server_name,
                            .tls_ca_file = sv->o.agents_tls_ca,
                            .tls_cert_file = sv->o.agents_tls_cert};
    if (agent_pool_new(&po, &sv->pool) != 0)
        return kgs_seterr(err, errlen, KGS_ENOMEM, "out of memory");
    if (sv->o.agents && set_static_agents(sv, err, errlen) != 0)
        return KGS_EINVAL;
    if (sv->o.agents_dns && resolver_start(sv->loop, sv->o.agents_dns, 10 * NS_PER_SEC,
                                           on_agents_resolved, sv, &sv->resolver, err, errlen) != 0)
        return KGS_EINVAL;

    kube_client_config_t kc;
    kube_client_config_init(&kc);
    const char *api = sv->o.kube_api;
    if (api && strcmp(api, "none") == 0) {
        LOG_INFO(&sv->log, "no Kubernetes API (--kube-api none): podSelector triggers will answer "
                           "UNAVAILABLE");
        return 0;
    }
    if (api) {
        snprintf(kc.api_url, sizeof kc.api_url, "%s", api);
        if (sv->o.kube_token_file)
            snprintf(kc.token_file, sizeof kc.token_file, "%s", sv->o.kube_token_file);
        if (sv->o.kube_ca_file)
            snprintf(kc.ca_file, sizeof kc.ca_file, "%s", sv->o.kube_ca_file);
    } else if (getenv("KUBERNETES_SERVICE_HOST")) {
        if (kube_client_config_in_cluster(&kc, NULL, err, errlen) != 0)
            return KGS_EINVAL;
    } else {
        LOG_INFO(&sv->log, "not in a pod and no --kube-api: podSelector triggers will answer "
                           "UNAVAILABLE");
        return 0;
    }
    kube_client_callbacks_t kcb = {
        .on_synced = on_kube_event, .on_change = on_kube_event, .user_data = sv};
    if (kube_client_new(sv->loop, &kc, &kcb, &sv->log, &sv->kube, err, errlen) != 0)
        return KGS_EINVAL;
    sv->kube_cfg = kc;
    LOG_INFO(&sv->log, "watching pods at %s", kc.api_url);
    return 0;
}

/* ---- HTTP: /metrics, /healthz, /readyz ------------------------------------------- */

static bool path_is(const http1_request_t *req, const char *p) {
    size_t n = strlen(p);
    /* Ignore a query string: "/metrics?x=y" is /metrics. */
    return req->path_len >= n && memcmp(req->path, p, n) == 0 &&
           (req->path_len == n || req->path[n] == '?');
}

static void text(http_response_t *r, int status, const char *body) {
    r->status = status;
    r->content_type = "text/plain; charset=utf-8";
    r->body = body;
    r->body_len = strlen(body);
}

static void on_http(const http1_request_t *req, http_response_t *resp, prom_buf_t *scratch,
                    void *ud) {
    server_t *sv = ud;
    if (path_is(req, "/metrics")) {
        snapshot_t *snap = current_snapshot(sv);
        char why[8];
        metrics_context_t ctx = {
            .node = sv->node,
            .version = KGS_VERSION,
            .commit = KGS_GIT_DESCRIBE,
            .now = clock_mono_now(),
            .stale_after_ns = sv->o.stale_after_ns,
            .sampler_overruns = sv->sampler ? sampler_overruns(sv->sampler) : 0,
            .streams_open = scaler_stream_count(sv->scaler),
            .connections_open = sv->grpc ? grpc_server_connection_count(sv->grpc) : 0,
            .ready = scaler_ready(sv->scaler, why, sizeof why),
            .no_nvml = sv->o.role == SERVER_ROLE_AGGREGATOR,
            .has_budgets = true,
            .requests_too_large = sv->grpc ? grpc_server_requests_too_large(sv->grpc) : 0,
        };
        if (sv->grpc)
            grpc_server_limit_stats(sv->grpc, &ctx.grpc_limits);
        scaler_budget_stats(sv->scaler, &ctx.budgets);
        if (sv->grpc) {
            grpc_server_refusals_t gr;
            grpc_server_refusals(sv->grpc, &gr);
            ctx.refused_max_connections = gr.max_connections;
            ctx.refused_max_connections_per_peer = gr.max_connections_per_peer;
            ctx.refused_out_of_descriptors = gr.out_of_descriptors;
        }
        ctx.http_evictions = (sv->probe_http ? http_server_evictions(sv->probe_http) : 0) +
                             (sv->metrics_http ? http_server_evictions(sv->metrics_http) : 0);
        if (sv->sources) {
            source_hub_stats_t hs;
            source_hub_stats(sv->sources, &hs);
            ctx.has_sources = true;
            ctx.sources = hs.sources;
            ctx.source_polls = hs.polls;
            ctx.source_failures = hs.failures;
            ctx.source_bytes = hs.bytes;
            ctx.source_refused_max = hs.refused_max_sources;
            ctx.source_refused_per_ns = hs.refused_per_ns;
            ctx.source_refused_rate = hs.refused_rate;
            ctx.source_refused_egress = hs.refused_egress;
            ctx.source_stats = hs;
            size_t total = 0;
            ctx.ntriggers =
                source_hub_views(sv->sources, sv->metrics_triggers, METRICS_MAX_TRIGGERS, &total);
            ctx.triggers = sv->metrics_triggers;
            ctx.triggers_omitted = total - ctx.ntriggers;
        }
        prom_buf_reset(scratch);
        metrics_render(scratch, snap, &sv->stats, &ctx);
        snapshot_unref(snap);
        if (scratch->failed) {
            text(resp, 500, "out of memory rendering metrics\n");
            return;
        }
        resp->status = 200;
        resp->content_type = METRICS_CONTENT_TYPE;
        resp->body = scratch->data;
        resp->body_len = scratch->len;
        return;
    }
    if (path_is(req, "/healthz")) {
        /* The loop answered: it is alive. */
        text(resp, 200, "ok\n");
        return;
    }
    if (path_is(req, "/readyz")) {
        char why[300];
        if (scaler_ready(sv->scaler, why, sizeof why) && !sv->shutting_down) {
            text(resp, 200, "ready\n");
            return;
        }
        snprintf(sv->readyz_body, sizeof sv->readyz_body, "not ready: %s\n",
                 sv->shutting_down ? "shutting down" : why);
        text(resp, 503, sv->readyz_body);
        return;
    }
    text(resp, 404, "not found: try /metrics, /healthz or /readyz\n");
}

/* ---- shutdown ------------------------------------------------------------------------ */

static void on_grpc_closed(void *ud) {
    server_t *sv = ud;
    LOG_INFO(&sv->log, "all gRPC connections closed");
    loop_stop(sv->loop);
}

static void on_grace(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)t;
    server_t *sv = ud;
    LOG_WARN(&sv->log, "shutdown grace period over with %u connection(s) open: closing them",
             sv->grpc ? grpc_server_connection_count(sv->grpc) : 0);
    loop_stop(loop);
}

static void begin_shutdown(server_t *sv, const char *why) {
    if (sv->shutting_down)
        return;
    sv->shutting_down = true;
    LOG_INFO(&sv->log, "%s: ending %u stream(s) and draining %u connection(s)", why,
             scaler_stream_count(sv->scaler) +
                 (sv->agent ? agent_service_stream_count(sv->agent) : 0),
             grpc_server_connection_count(sv->grpc));
    scaler_shutdown(sv->scaler);
    if (sv->agent)
        agent_service_shutdown(sv->agent);
    loop_timer_start(sv->loop, &sv->grace_timer,
                     clock_add_sat(loop_now(sv->loop), sv->o.shutdown_grace_ns));
    grpc_server_shutdown(sv->grpc, on_grpc_closed, sv);
}

static void on_signal(loop_t *loop, int fd, uint32_t events, void *ud) {
    (void)loop;
    (void)events;
    server_t *sv = ud;
    struct signalfd_siginfo si;
    while (read(fd, &si, sizeof si) == (ssize_t)sizeof si)
        begin_shutdown(sv, si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM");
}

/* A failed reload's WARN: at once when the failure is new, then again
 * after TLS_RELOAD_WARN_NS with the count of checks it failed meanwhile
 * (the check runs every 2 s; a broken file would log 30 lines a minute). */
static void reload_failed(server_t *sv, tls_warn_t *w, const char *what, const char *err) {
    mono_ns_t now = loop_now(sv->loop);
    if (strcmp(w->last, err) == 0 && now - w->at < TLS_RELOAD_WARN_NS) {
        w->since++;
        return;
    }
    if (strcmp(w->last, err) == 0)
        LOG_WARN(&sv->log, "%s: %s (still, %u more checks since the last report)", what, err,
                 w->since);
    else
        LOG_WARN(&sv->log, "%s: %s", what, err);
    snprintf(w->last, sizeof w->last, "%s", err);
    w->at = now;
    w->since = 0;
}

static void on_tls_check(loop_t *loop, loop_timer_t *t, void *ud) {
    server_t *sv = ud;
    bool reloaded = false;
    char err[512];
    if (sv->tls && tls_server_reload_if_changed(sv->tls, &reloaded, err, sizeof err) != 0) {
        reload_failed(sv, &sv->tls_warn,
                      "TLS reload failed, still serving the previous certificate", err);
    } else {
        sv->tls_warn.last[0] = '\0';
        if (reloaded)
            LOG_INFO(&sv->log, "TLS certificate reloaded from %s; new handshakes use it",
                     sv->o.tls_cert);
    }
    reloaded = false;
    if (sv->agents_tls &&
        tls_client_reload_if_changed(sv->agents_tls, &reloaded, err, sizeof err) != 0) {
        reload_failed(sv, &sv->agents_tls_warn,
                      "agents TLS reload failed, still dialling with the previous files", err);
    } else {
        sv->agents_tls_warn.last[0] = '\0';
        if (reloaded) {
            agent_pool_set_tls(sv->pool, tls_client_ctx(sv->agents_tls));
            LOG_INFO(&sv->log, "agents TLS reloaded from %s%s%s; new connections to agents use it",
                     sv->o.agents_tls_ca, sv->o.agents_tls_cert ? " and " : "",
                     sv->o.agents_tls_cert ? sv->o.agents_tls_cert : "");
        }
    }
    loop_timer_start(loop, t, clock_add_sat(loop_now(loop), TLS_RELOAD_CHECK_NS));
}

/* ---- main ------------------------------------------------------------------------------ */

static void resolve_node_name(server_t *sv) {
    if (sv->o.node_name && sv->o.node_name[0]) {
        snprintf(sv->node, sizeof sv->node, "%s", sv->o.node_name);
        return;
    }
    const char *env = getenv("NODE_NAME");
    if (env && env[0]) {
        snprintf(sv->node, sizeof sv->node, "%s", env);
        return;
    }
    if (gethostname(sv->node, sizeof sv->node - 1) != 0)
        snprintf(sv->node, sizeof sv->node, "unknown");
}

static int start_http(server_t *sv, uint16_t port, const char *what, http_server_t **out) {
    char err[512];
    if (port == 0)
        return 0;
    if (http_server_listen(sv->loop, sv->o.listen_address, port, NULL, on_http, sv, out, err,
                           sizeof err) != 0) {
        LOG_ERROR(&sv->log, "%s: %s", what, err);
        return 1;
    }
    LOG_INFO(&sv->log, "%s on %s:%u", what, sv->o.listen_address, http_server_port(*out));
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "query") == 0)
        return query_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "validate") == 0)
        return validate_main(argc - 1, argv + 1);

    server_t sv;
    memset(&sv, 0, sizeof sv);
    sv.sigfd = -1;
    char err[1024];
    if (server_options_parse(argc, argv, env_getter_process, NULL, &sv.o, err, sizeof err) != 0) {
        fprintf(stderr, "keda-gpu-scaler: %s\n(see keda-gpu-scaler --help)\n", err);
        return 2;
    }
    if (sv.o.help) {
        fputs(server_usage_text, stdout);
        fputs(server_usage_text_more, stdout);
        fputs(server_usage_text_end, stdout);
        fputs(server_usage_text_budgets, stdout);
        fputs(server_usage_text_tenants, stdout);
        return 0;
    }
    if (sv.o.version) {
        printf("keda-gpu-scaler %s (%s)\n", KGS_VERSION, KGS_GIT_DESCRIBE);
        return 0;
    }
    sv.log.level = sv.o.log_level;
    sv.log.format = sv.o.log_format;
    sv.log.out = stderr;
    resolve_node_name(&sv);
    server_stats_init(&sv.stats);

    /* Signals: handled on the loop through a signalfd. Blocked before the
     * sampler thread starts so it inherits the mask and never takes them. */
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    signal(SIGPIPE, SIG_IGN); /* TLS writes use write(2); a dead peer is an error, not a kill */
    /* An aggregator holds one connection per agent: take the hard limit. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }

    int rc = 1;
    if (loop_new(&sv.loop, err, sizeof err) != 0) {
        LOG_ERROR(&sv.log, "%s", err);
        return 1;
    }
    loop_timer_init(&sv.tls_timer, on_tls_check, &sv);
    loop_timer_init(&sv.grace_timer, on_grace, &sv);
    loop_timer_init(&sv.cluster_refresh, on_cluster_refresh_timer, &sv);
    loop_set_wakeup(sv.loop, on_wakeup, &sv);
    sv.sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sv.sigfd < 0 || !(sv.sig_io = loop_io_add(sv.loop, sv.sigfd, EPOLLIN, on_signal, &sv))) {
        LOG_ERROR(&sv.log, "signalfd: %s", strerror(errno));
        goto out;
    }

    if (sv.o.role == SERVER_ROLE_AGGREGATOR) {
        /* The aggregator reads no GPU itself: its data comes from the agents. */
        if (start_aggregator(&sv, err, sizeof err) != 0) {
            LOG_ERROR(&sv.log, "%s", err);
            goto out;
        }
    } else {
        if (nvml_loader_open(sv.o.nvml_library, &sv.loader, err, sizeof err) != 0) {
            LOG_ERROR(&sv.log, "%s", err);
            LOG_ERROR(&sv.log, "hint: run on a GPU node with the NVIDIA driver (in Kubernetes: the "
                               "NVIDIA container runtime, NVIDIA_DRIVER_CAPABILITIES=utility), or "
                               "name the library with --nvml-library PATH");
            goto out;
        }
        char missing[2048];
        if (nvml_loader_missing(sv.loader, missing, sizeof missing) > 0)
            LOG_INFO(&sv.log, "NVML %s lacks %s; those fields are reported absent",
                     nvml_loader_path(sv.loader), missing);

        nvml_collector_t *collector;
        if (nvml_collector_new(nvml_loader_api(sv.loader), &sv.log, sv.node, &collector) != 0) {
            LOG_ERROR(&sv.log, "out of memory");
            goto out;
        }
        sampler_opts_t so = {.interval_ns = sv.o.sample_interval_ns,
                             .on_publish = on_sample_published,
                             .before_publish = on_sample_taken,
                             .user_data = &sv,
                             .log = &sv.log};
        if (sampler_start(collector, &so, &sv.sampler, err, sizeof err) != 0) {
            LOG_ERROR(&sv.log, "%s", err);
            goto out;
        }
    }

    if (sv.o.tls_cert) {
        if (tls_server_new(sv.o.tls_cert, sv.o.tls_key, sv.o.tls_client_ca, &sv.tls, err,
                           sizeof err) != 0) {
            LOG_ERROR(&sv.log, "%s", err);
            goto out;
        }
    }
    if (sv.tls || sv.agents_tls)
        loop_timer_start(sv.loop, &sv.tls_timer,
                         clock_add_sat(loop_now(sv.loop), TLS_RELOAD_CHECK_NS));

    if (sv.o.role != SERVER_ROLE_AGENT) {
        source_hub_opts_t ho = {.loop = sv.loop,
                                .log = &sv.log,
                                .ca_file = sv.o.source_ca_file,
                                .auth = &sv.o.source_auth,
                                .max_body_bytes = sv.o.source_max_bytes,
                                .max_sources = (unsigned)sv.o.max_sources,
                                .max_sources_per_ns = (unsigned)sv.o.max_sources_per_ns,
                                .create_rate = sv.o.source_create_rate,
                                .create_burst = (unsigned)sv.o.source_create_burst,
                                .max_read_bytes = sv.o.source_read_bytes,
                                .read_rate = (double)sv.o.source_read_rate,
                                .max_sub_bytes = sv.o.subscription_bytes,
                                .idle_ns = sv.o.source_idle_ns,
                                .egress = &sv.o.egress,
                                .on_update = on_sources_update,
                                .user_data = &sv,
                                .list_pods =
                                    sv.o.role == SERVER_ROLE_AGGREGATOR ? list_engine_pods : NULL};
        if (sv.o.role == SERVER_ROLE_AGGREGATOR)
            ho.auth_pod_check = check_auth_pod;
        if (source_hub_new(&ho, &sv.sources, err, sizeof err) != 0) {
            LOG_ERROR(&sv.log, "%s", err);
            goto out;
        }
    }
    scaler_opts_t sco = {.loop = sv.loop,
                         .sources = sv.sources,
                         .log = &sv.log,
                         .stale_after_ns = sv.o.stale_after_ns,
                         /* Health and streams are re-evaluated on every sample and, should
                          * samples stop, at the shorter of the sample and health-check
                          * intervals, so staleness is noticed without a new snapshot. */
                         .recheck_interval_ns =
                             sv.o.health_check_interval_ns &&
                                     sv.o.health_check_interval_ns < sv.o.sample_interval_ns
                                 ? sv.o.health_check_interval_ns
                                 : sv.o.sample_interval_ns,
                         .current_snapshot = current_snapshot,
                         .snapshot_user_data = &sv,
                         .on_rpc_done = on_rpc_done,
                         .rpc_user_data = &sv,
                         .max_metadata_entries = sv.o.max_metadata_entries,
                         .max_metadata_bytes = sv.o.max_metadata_bytes,
                         .config_cache_bytes = sv.o.config_cache_bytes,
                         .max_stream_bytes = sv.o.max_stream_bytes,
                         .config_idle_ns = sv.o.source_idle_ns,
                         .tenant = &sv.tenant};
    sv.tenant = (tenant_policy_t){.auth = &sv.o.source_auth, .cross = &sv.o.cross_ns};
    if (sv.o.role == SERVER_ROLE_AGGREGATOR) {
        sco.evaluate = aggregator_evaluate;
        sco.ready = aggregator_ready;
        sco.on_config = aggregator_on_config;
        sco.eval_user_data = &sv;
        /* GetMetrics then IsActive, then the HPA's GetMetrics: one evaluation
         * over the workload serves them all. The window is the streams'
         * coalescing window, so a unary answer is never older than a pushed
         * one: both lag the view by at most 50 ms, far below any sample. */
        sco.eval_reuse_ns = CLUSTER_REFRESH_NS;
    }
    if (scaler_new(&sco, &sv.scaler) != 0) {
        LOG_ERROR(&sv.log, "out of memory");
        goto out;
    }
    if (sv.o.role == SERVER_ROLE_AGENT) {
        agent_service_opts_t ao = {.loop = sv.loop,
                                   .log = &sv.log,
                                   .current_snapshot = current_snapshot,
                                   .current_pods = current_pods,
                                   .user_data = &sv,
                                   .sample_interval_ms =
                                       (uint32_t)(sv.o.sample_interval_ns / NS_PER_MS)};
        if (agent_service_new(&ao, &sv.agent) != 0) {
            LOG_ERROR(&sv.log, "out of memory");
            goto out;
        }
        if (sv.o.kubelet_socket) {
            podres_client_callbacks_t pc = {
                .on_map = on_pod_map, .on_error = on_pod_map_error, .user_data = &sv};
            if (podres_client_start(sv.loop, sv.o.kubelet_socket, sv.o.sample_interval_ns, &sv.log,
                                    &pc, &sv.podres, err, sizeof err) != 0) {
                LOG_ERROR(&sv.log, "kubelet pod-resources: %s", err);
                goto out;
            }
        } else {
            node_pods_t *unknown = NULL;
            if (node_pods_new_unknown("pod attribution disabled (--kubelet-socket none)",
                                      &unknown) == 0)
                set_pods(&sv, unknown);
        }
    }
    /* The connection caps, below the descriptor limit (read after the raise
     * above: that is the limit the process has). */
    conn_limits_t cl;
    conn_limits_clamp(sv.o.max_connections,
                      getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                          ? (uint64_t)rl.rlim_cur
                          : 0,
                      &cl);
    if (cl.clamped)
        LOG_WARN(&sv.log,
                 "--max-connections %u is more than the descriptor limit allows "
                 "(RLIMIT_NOFILE %llu, less %u kept for the probe and metrics ports, sources, "
                 "agents and files): serving at most %u gRPC connections; raise the limit "
                 "(ulimit -n, or the container runtime's) or lower --max-connections",
                 sv.o.max_connections, (unsigned long long)rl.rlim_cur, cl.headroom,
                 cl.max_connections);
    unsigned per_peer = sv.o.max_connections_per_peer
                            ? sv.o.max_connections_per_peer
                            : conn_limits_per_peer_default(cl.max_connections);
    grpc_server_opts_t go = {
        .listen_address = sv.o.listen_address,
        .port = sv.o.port,
        .tls = sv.tls,
        .max_connections = cl.max_connections,
        .max_connections_per_peer = per_peer,
        .idle_timeout_ns = sv.o.idle_timeout_ns,
        .handshake_timeout_ns = sv.o.handshake_timeout_ns,
        .max_concurrent_streams = 10000,
        .max_request_bytes = sv.o.max_request_bytes,
        .max_request_bytes_flag = "--max-request-bytes",
        .max_buffered_bytes_per_connection = sv.o.max_buffered_bytes_per_connection,
        .max_buffered_bytes = sv.o.max_buffered_bytes,
        .max_buffered_bytes_per_connection_flag = "--max-buffered-bytes-per-connection",
        .max_buffered_bytes_flag = "--max-buffered-bytes",
        .log = &sv.log};
    grpc_server_handlers_t gh = {.on_request = on_grpc_request, .on_call_gone = on_grpc_call_gone};
    if (grpc_server_start(sv.loop, &go, &gh, &sv, &sv.grpc, err, sizeof err) != 0) {
        LOG_ERROR(&sv.log, "gRPC: %s", err);
        goto out;
    }
    char line[512];
    server_options_start_line(&sv.o, KGS_VERSION, sv.node, grpc_server_port(sv.grpc),
                              sv.tls != NULL, line, sizeof line);
    LOG_INFO(&sv.log, "%s", line);

    /* The options refuse equal ports, so the two listeners never clash. */
    if (start_http(&sv, sv.o.metrics_port, "metrics", &sv.metrics_http) ||
        start_http(&sv, sv.o.probe_port, "probes", &sv.probe_http))
        goto out;

    scaler_refresh(sv.scaler);
    if (loop_run(sv.loop) != 0)
        LOG_ERROR(&sv.log, "event loop failed: %s", strerror(errno));
    rc = 0;

out:
    if (sv.sampler)
        LOG_INFO(&sv.log, "stopping");
    grpc_server_free(sv.grpc);
    scaler_free(sv.scaler);
    source_hub_free(sv.sources);
    agent_service_free(sv.agent);
    podres_client_free(sv.podres);
    node_pods_free(sv.pods);
    resolver_free(sv.resolver);
    agent_pool_free(sv.pool);
    kube_client_free(sv.kube);
    kube_client_free(sv.kube_nodes);
    kube_client_free(sv.kube_slices);
    cluster_view_free(sv.view);
    http_server_free(sv.metrics_http);
    http_server_free(sv.probe_http);
    if (sv.loop) {
        loop_timer_stop(sv.loop, &sv.tls_timer);
        loop_timer_stop(sv.loop, &sv.grace_timer);
        loop_timer_stop(sv.loop, &sv.cluster_refresh);
        loop_io_remove(sv.loop, sv.sig_io);
    }
    if (sv.sigfd >= 0)
        close(sv.sigfd);
    tls_server_free(sv.tls);
    tls_client_free(sv.agents_tls);
    /* A hung NVML call must not hold the exit past the grace period. */
    if (sampler_stop_within(sv.sampler, NS_PER_SEC))
        nvml_loader_free(sv.loader);
    else
        LOG_WARN(&sv.log, "NVML call still running at exit: leaving it to the kernel");
    loop_free(sv.loop);
    return rc;
}
