/*
 * server.h - the server process's state, shared by the rooms of
 * src/server: main.c (the flags, the dispatch by role), lifecycle.c (start,
 * signals, shutdown grace, teardown), sampling.c (this node's GPUs:
 * standalone, agent), agent.c (the agent role: its Watch service and the
 * kubelet's pods), aggregator.c (the aggregator role: the cluster view, the
 * agents, the pod list, ResourceSlices, and the scaler's and the source
 * hub's hooks), tls_reload.c (the TLS files and their reloads), serve.c
 * (the sources, the scaler, the gRPC listener and its dispatch) and
 * endpoints.c (/metrics, /healthz, /readyz). Internal to the server
 * executable; every function here runs on the loop thread.
 */
#ifndef KGS_SERVER_SERVER_H
#define KGS_SERVER_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cluster/agent_pool.h"
#include "cluster/agent_service.h"
#include "cluster/cluster_view.h"
#include "cluster/cold_start.h"
#include "cluster/node_pods.h"
#include "core/log.h"
#include "kube/kube_client.h"
#include "kube/podres_client.h"
#include "net/grpc_server.h"
#include "net/http_server.h"
#include "net/loop.h"
#include "net/resolver.h"
#include "net/tls.h"
#include "nvml/loader.h"
#include "gpu/sampler.h"
#include "scaler/scaler.h"
#include "server/metrics.h"
#include "server/options.h"
#include "sources/source_hub.h"

/* Three stat() calls: cheap enough to notice a rotated Secret within 2 s. */
#define TLS_RELOAD_CHECK_NS (2 * NS_PER_SEC)
/* A reload that keeps failing the same way is logged again after this long
 * (with how often it failed meanwhile), not at every check. */
#define TLS_RELOAD_WARN_NS (60 * NS_PER_SEC)
/* With a thousand agents the view changes a thousand times a second; each
 * refresh evaluates every stream group over the whole workload. Refreshing
 * at most every CLUSTER_REFRESH_NS keeps that cost flat while a change still
 * reaches the streams within one sample interval plus 50 ms. */
#define CLUSTER_REFRESH_NS (50 * NS_PER_MS)
/* A workload's pods are passed to its cold-start record at most this often
 * (at its evaluations): a round walks the whole pod cache. */
#define COLD_START_ROUND_NS (1 * NS_PER_SEC)

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
    const char *gpu_backend; /* the chosen backend's name (static); NULL on the aggregator */
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
    cold_start_book_t cold_starts; /* podSelector workloads' cold starts (issue 33) */
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

/* lifecycle.c: the process's start (the log, the node name, the signal
 * mask, the descriptor limit, the loop, its timers and signalfd), the run
 * until shutdown, and the teardown of whatever was started. start: 0, or
 * 1 after logging why; run: the exit status. */
int server_process_start(server_t *sv);
int server_run(server_t *sv);
void server_teardown(server_t *sv);

/* sampling.c: this node's GPU backend and the sampler thread (standalone,
 * agent; 0, or 1 after logging why), and the snapshot it published last
 * (NULL in the aggregator role; a reference the caller drops). */
int server_sampling_start(server_t *sv);
snapshot_t *server_current_snapshot(void *ud);

/* tls_reload.c: the serving TLS context (--tls-cert) and the reload check's
 * first run (0, or 1 after logging why); the check itself, the tls_timer's
 * callback. */
int server_tls_start(server_t *sv);
void server_tls_check(loop_t *loop, loop_timer_t *t, void *ud);

/* serve.c: the source hub, the scaler (and the agent's Watch service), the
 * gRPC listener and the HTTP listeners (0, or 1 after logging why); the
 * loop's wakeup (every sample, every eventfd write), and a log line when
 * readiness changes. */
int server_serve(server_t *sv);
void server_on_wakeup(loop_t *loop, void *ud);
void server_log_readiness(server_t *sv);

/* agent.c: the Watch service beside the scaler and the pods of this node
 * (the kubelet's pod-resources, or "unknown" with --kubelet-socket none).
 * 0, or non-zero with the message in err. */
int server_agent_start(server_t *sv, char *err, size_t errlen);

/* aggregator.c: its timers (before the loop runs), its start (the agents,
 * the Kubernetes API, the cluster view), and the hooks it gives the source
 * hub (pod lists, the sourceAuth pod check) and the scaler (evaluation,
 * readiness, configurations seen). */
void server_aggregator_init(server_t *sv);
int server_aggregator_start(server_t *sv, char *err, size_t errlen);
void server_aggregator_hub_opts(server_t *sv, source_hub_opts_t *ho);
void server_aggregator_scaler_opts(server_t *sv, scaler_opts_t *so);

/* endpoints.c: an HTTP listener for /metrics, /healthz and /readyz on port
 * (0: none); 0, or 1 after logging why. */
int server_http_start(server_t *sv, uint16_t port, const char *what, http_server_t **out);

#endif
