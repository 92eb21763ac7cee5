/*
 * aggregator.c - the aggregator role's part of the server: the cluster view
 * fed by the agents' Watch streams, the pods (and Node labels, DRA
 * ResourceSlices) from the Kubernetes API, the scaler's evaluation over a
 * workload, and the source hub's pod lists and sourceAuth pod checks.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster/workload.h"
#include "core/err.h"
#include "core/hash.h"
#include "kube/pod_map.h"
#include "server/server.h"

/* ---- aggregator: the cluster view, the agents, the pods ----------------------------- */

static void on_kube_event(void *ud);

/* A list + watch of one more resource beside the pods, calling `on` at
 * its sync and every change; false (logged as `what`, *out NULL) when it
 * could not start: retried when a call next needs it. */
static bool start_watch(server_t *sv, const kube_client_config_t *kc, void (*on)(void *),
                        kube_client_t **out, const char *what) {
    kube_client_callbacks_t kcb = {.on_synced = on, .on_change = on, .user_data = sv};
    char err[256];
    if (kube_client_new(sv->loop, kc, &kcb, &sv->log, out, err, sizeof err) != 0) {
        LOG_WARN(&sv->log, "%s: %s", what, err);
        *out = NULL;
        return false;
    }
    return true;
}

/* Nodes are watched only once a trigger selects them by label: clusters
 * that never do need no RBAC on nodes and see no 403s in the log. A failure
 * to start is logged and retried when a call next brings such a trigger. */
static void start_node_watch(server_t *sv) {
    kube_client_config_t kc = sv->kube_cfg;
    snprintf(kc.resource, sizeof kc.resource, "nodes");
    if (!start_watch(sv, &kc, on_kube_event, &sv->kube_nodes,
                     "node watch for nodeSelector label selectors"))
        return;
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
    if (!start_watch(sv, &kc, on_slices_event, &sv->kube_slices,
                     "ResourceSlice watch for DRA devices"))
        return;
    LOG_INFO(&sv->log,
             "watching resource.k8s.io/v1 ResourceSlices at %s (an agent reported DRA "
             "devices)",
             kc.api_url);
}

/* What an unresolved DRA device's gap says about the slices now, into st
 * ("" when the watch is listed and up). An input of each evaluation: the
 * evaluation reads it, nothing keeps it. */
static void dra_status(const server_t *sv, mono_ns_t now, char *st, size_t stlen) {
    if (!sv->kube)
        snprintf(st, stlen,
                 "this aggregator has no Kubernetes API (--kube-api none) to read ResourceSlices");
    else if (!sv->kube_slices)
        snprintf(st, stlen, "the ResourceSlice watch has not started");
    else if (!kube_client_synced(sv->kube_slices, now))
        snprintf(st, stlen, "ResourceSlices not listed%s%.200s",
                 kube_client_last_error(sv->kube_slices)[0] ? ": " : " yet",
                 kube_client_last_error(sv->kube_slices));
    else
        st[0] = '\0';
}

/* A configuration reached the scaler: a nodeSelector label selector needs
 * the Node watch (evaluations only read it). */
static void aggregator_on_config(void *ud, const trigger_config_t *c, const char *so_namespace) {
    (void)so_namespace;
    server_t *sv = ud;
    if (c->node_scope == NODE_SCOPE_SELECTOR && sv->kube && !sv->kube_nodes)
        start_node_watch(sv);
}

/* ---- cold starts (issue 33) ------------------------------------------------------- */

typedef struct {
    const trigger_config_t *c;
    const char *ns;
    cold_start_t *rec;
} cold_start_scan_t;

static bool cold_start_scan(const pod_t *p, void *ud) {
    cold_start_scan_t *x = ud;
    if (workload_pod_selected(x->c, x->ns, p))
        cold_start_round_pod(x->rec, p);
    return true;
}

/* The record of c's workload, or NULL (no podSelector, or no memory). */
static cold_start_workload_t *cold_start_workload(server_t *sv, const trigger_config_t *c,
                                                  const char *so_namespace, mono_ns_t now) {
    if (!c->has_pod_selector)
        return NULL;
    char sel[LABEL_SELECTOR_MAX_LEN + 1];
    label_selector_format(&c->pod_selector, sel, sizeof sel);
    return cold_start_book_get(&sv->cold_starts, workload_namespace(c, so_namespace), sel, now);
}

/* A round of c's workload's pods for its cold-start record, at most every
 * COLD_START_ROUND_NS, and only over a synced pod list (a partial one
 * would read as pods deleted while they started). */
static void observe_cold_starts(server_t *sv, const trigger_config_t *c, const char *so_namespace,
                                mono_ns_t now) {
    if (!c->has_pod_selector || !sv->kube || !kube_client_synced(sv->kube, now))
        return;
    cold_start_workload_t *w = cold_start_workload(sv, c, so_namespace, now);
    if (!w || (w->last_round && now - w->last_round < COLD_START_ROUND_NS))
        return;
    w->last_round = now;
    cold_start_scan_t x = {c, w->ns, &w->rec};
    cold_start_round_begin(&w->rec);
    pod_cache_foreach_in(kube_client_cache(sv->kube), x.ns, cold_start_scan, &x);
    if (cold_start_round_end(&w->rec) != 0)
        LOG_WARN(&sv->log, "cold starts of %s/%s: out of memory, the round is dropped", w->ns,
                 w->selector);
}

/* Explain's cold-start names (explain_text.c renders them as one line):
 * cold_start:pods (the completed starts averaged), cold_start:<stage> (the
 * mean seconds), cold_start_failed:<reason> (failed starts since this
 * aggregator began), cold_start_waiting:pods (Unschedulable now) and
 * cold_start_scheduler:<its message>. Nothing when nothing was seen. */
static void aggregator_explain_more(void *ud, const trigger_config_t *c, const char *so_namespace,
                                    void (*put)(void *, double, const char *), void *put_ud) {
    server_t *sv = ud;
    if (!c->has_pod_selector)
        return;
    char sel[LABEL_SELECTOR_MAX_LEN + 1];
    label_selector_format(&c->pod_selector, sel, sizeof sel);
    const cold_start_workload_t *w =
        cold_start_book_find(&sv->cold_starts, workload_namespace(c, so_namespace), sel);
    if (!w)
        return;
    const cold_start_t *r = &w->rec;
    uint64_t failed = cold_start_failed_total(r);
    if (r->nlast == 0 && failed == 0 && r->waiting_for_node == 0)
        return;
    double mean[POD_STAGE_COUNT];
    unsigned n = cold_start_mean(r, mean);
    char name[64 + POD_START_MESSAGE_MAX];
    put(put_ud, n, "cold_start:pods");
    for (int k = 0; n > 0 && k < POD_STAGE_COUNT; k++) {
        snprintf(name, sizeof name, "cold_start:%s", pod_stage_name((pod_stage_t)k));
        put(put_ud, mean[k], name);
    }
    for (int t = 1; t < POD_TROUBLE_COUNT; t++)
        if (r->failed[t]) {
            snprintf(name, sizeof name, "cold_start_failed:%s", pod_trouble_name((pod_trouble_t)t));
            put(put_ud, (double)r->failed[t], name);
        }
    if (r->waiting_for_node)
        put(put_ud, r->waiting_for_node, "cold_start_waiting:pods");
    if ((r->waiting_for_node || r->failed[POD_TROUBLE_UNSCHEDULABLE]) &&
        r->unschedulable_message[0]) {
        snprintf(name, sizeof name, "cold_start_scheduler:%s", r->unschedulable_message);
        put(put_ud, 0, name);
    }
}

static void aggregator_evaluate(void *ud, const trigger_config_t *c, const char *so_namespace,
                                mono_ns_t now, eval_result_t *out) {
    server_t *sv = ud;
    char dra[256];
    dra_status(sv, now, dra, sizeof dra);
    workload_inputs_t in = {
        .view = sv->view,
        .pods = sv->kube ? kube_client_cache(sv->kube) : NULL,
        .pods_synced = sv->kube && kube_client_synced(sv->kube, now),
        .nodes = sv->kube_nodes ? kube_client_cache(sv->kube_nodes) : NULL,
        .nodes_synced = sv->kube_nodes && kube_client_synced(sv->kube_nodes, now),
        .now = now,
        .stale_after_ns = sv->o.stale_after_ns,
        .dra_status = dra,
    };
    workload_evaluate(c, so_namespace, &in, out, NULL);
    observe_cold_starts(sv, c, so_namespace, now);
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
    /* its start by stage, for the queueing model's cold start (issue 33) */
    pod_stage_t stage;
    if (sp.ready) {
        sp.start.has_stages = pod_start_stages(p->created_unix, &p->start, sp.start.stage_s);
    } else if (pod_start_where(p->created_unix, &p->start, x->wall_now, &stage,
                               &sp.start.stage_age_s)) {
        sp.start.stage = (unsigned char)(QM_STAGE_NODE + (stage - POD_STAGE_NODE));
        sp.start.waiting_for_node = p->start.trouble == POD_TROUBLE_UNSCHEDULABLE;
    }
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
    pod_cache_foreach_in(kube_client_cache(sv->kube), x.ns, scan_pod, &x);
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

static void cluster_refresh_now(server_t *sv) {
    sv->last_cluster_refresh = loop_now(sv->loop);
    if (!sv->shutting_down)
        scaler_refresh(sv->scaler);
    server_log_readiness(sv);
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

int server_aggregator_start(server_t *sv, char *err, size_t errlen) {
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

void server_aggregator_init(server_t *sv) {
    loop_timer_init(&sv->cluster_refresh, on_cluster_refresh_timer, sv);
    cold_start_book_init(&sv->cold_starts);
}

void server_aggregator_hub_opts(server_t *sv, source_hub_opts_t *ho) {
    ho->list_pods = list_engine_pods;
    ho->auth_pod_check = check_auth_pod;
    (void)sv;
}

void server_aggregator_scaler_opts(server_t *sv, scaler_opts_t *so) {
    so->evaluate = aggregator_evaluate;
    so->ready = aggregator_ready;
    so->on_config = aggregator_on_config;
    so->explain_more = aggregator_explain_more;
    so->eval_user_data = sv;
    /* GetMetrics then IsActive, then the HPA's GetMetrics: one evaluation
     * over the workload serves them all. The window is the streams'
     * coalescing window, so a unary answer is never older than a pushed
     * one: both lag the view by at most 50 ms, far below any sample. */
    so->eval_reuse_ns = CLUSTER_REFRESH_NS;
}
