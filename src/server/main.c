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
 *
 * This file reads the flags, builds the loop and the role's pieces and
 * dispatches gRPC calls; the agent role's glue is agent.c, the aggregator's
 * aggregator.c, the HTTP endpoints endpoints.c, their shared state
 * server.h.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "core/err.h"
#include "env/env.h"
#include "kube/proc_cgroup.h"
#include "net/conn_limits.h"
#include "gpu/select.h"
#include "server/query.h"
#include "server/server.h"
#include "server/validate.h"

#ifndef KGS_VERSION
#define KGS_VERSION "0.0.0"
#endif
#ifndef KGS_GIT_DESCRIBE
#define KGS_GIT_DESCRIBE "unknown"
#endif

/* ---- glue --------------------------------------------------------------------- */

snapshot_t *server_current_snapshot(void *ud) {
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

void server_log_readiness(server_t *sv) {
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
    snapshot_t *snap = server_current_snapshot(sv);
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
    server_log_readiness(sv);
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

static void on_sources_update(void *ud) {
    server_t *sv = ud;
    if (!sv->shutting_down && sv->scaler)
        scaler_refresh(sv->scaler);
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
    server_aggregator_init(&sv);
    loop_set_wakeup(sv.loop, on_wakeup, &sv);
    sv.sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sv.sigfd < 0 || !(sv.sig_io = loop_io_add(sv.loop, sv.sigfd, EPOLLIN, on_signal, &sv))) {
        LOG_ERROR(&sv.log, "signalfd: %s", strerror(errno));
        goto out;
    }

    if (sv.o.role == SERVER_ROLE_AGGREGATOR) {
        /* The aggregator reads no GPU itself: its data comes from the agents. */
        if (server_aggregator_start(&sv, err, sizeof err) != 0) {
            LOG_ERROR(&sv.log, "%s", err);
            goto out;
        }
    } else {
        gpu_select_opts_t go = {.kind = sv.o.gpu_backend,
                                .nvml_library = sv.o.nvml_library,
                                .sys_root = sv.o.sys_root,
                                .proc_root = sv.o.proc_root,
                                .node_name = sv.node,
                                .log = &sv.log};
        gpu_selection_t gpu;
        if (gpu_backend_select(&go, &gpu, err, sizeof err) != 0) {
            LOG_ERROR(&sv.log, "%s", err);
            if (sv.o.gpu_backend != GPU_BACKEND_AMDGPU_SYSFS)
                LOG_ERROR(&sv.log,
                          "hint: run on a GPU node with the NVIDIA driver (in Kubernetes: the "
                          "NVIDIA container runtime, NVIDIA_DRIVER_CAPABILITIES=utility), or "
                          "name the library with --nvml-library PATH; on AMD GPUs: "
                          "--gpu-backend amdgpu-sysfs (docs/amd.md)");
            goto out;
        }
        sv.loader = gpu.loader;
        sv.gpu_backend = gpu_backend_name(&gpu.backend);
        LOG_INFO(&sv.log, "GPU backend %s", gpu.why);
        char missing[2048];
        if (sv.loader && nvml_loader_missing(sv.loader, missing, sizeof missing) > 0)
            LOG_INFO(&sv.log, "NVML %s lacks %s; those fields are reported absent",
                     nvml_loader_path(sv.loader), missing);

        sampler_opts_t so = {.interval_ns = sv.o.sample_interval_ns,
                             .on_publish = on_sample_published,
                             .before_publish = on_sample_taken,
                             .user_data = &sv,
                             .log = &sv.log};
        if (sampler_start(gpu.backend, &so, &sv.sampler, err, sizeof err) != 0) {
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
                                .user_data = &sv};
        if (sv.o.role == SERVER_ROLE_AGGREGATOR)
            server_aggregator_hub_opts(&sv, &ho);
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
                         .current_snapshot = server_current_snapshot,
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
    if (sv.o.role == SERVER_ROLE_AGGREGATOR)
        server_aggregator_scaler_opts(&sv, &sco);
    if (scaler_new(&sco, &sv.scaler) != 0) {
        LOG_ERROR(&sv.log, "out of memory");
        goto out;
    }
    if (sv.o.role == SERVER_ROLE_AGENT && server_agent_start(&sv, err, sizeof err) != 0) {
        LOG_ERROR(&sv.log, "%s", err);
        goto out;
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
    if (server_http_start(&sv, sv.o.metrics_port, "metrics", &sv.metrics_http) ||
        server_http_start(&sv, sv.o.probe_port, "probes", &sv.probe_http))
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
    cold_start_book_deinit(&sv.cold_starts);
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
