/*
 * serve.c - what every role serves to KEDA: the source hub (standalone,
 * aggregator), the scaler, the agent's Watch service beside it, the gRPC
 * listener with its dispatch between the two services, and the metrics and
 * probe listeners; and the loop's wakeup, which re-evaluates them.
 *
 * DESIGN
 * Each wakeup (a new snapshot, a source update) re-evaluates the
 * StreamIsActive groups and health, so pushes follow a change within one
 * sample; an RPC is answered from memory and never waits on NVML, a source
 * or the Kubernetes API. The role's own hooks (aggregator.c: evaluation
 * over the cluster view, pod lists; agent.c: the Watch service) are set
 * here, where the pieces are made.
 */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "net/conn_limits.h"
#include "server/server.h"

static void on_rpc_done(void *ud, scaler_rpc_t rpc, int status, double seconds) {
    server_t *sv = ud;
    /* scaler_rpc_t and rpc_method_t list the methods in the same order. */
    server_stats_record_rpc(&sv->stats, (rpc_method_t)rpc, status, seconds);
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

void server_on_wakeup(loop_t *loop, void *ud) {
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

/* The agent's Watch service shares the gRPC listener with the scaler. */
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

/* The engine and queue sources (not on an agent: it serves its node only). */
static int start_sources(server_t *sv) {
    if (sv->o.role == SERVER_ROLE_AGENT)
        return 0;
    source_hub_opts_t ho = {.loop = sv->loop,
                            .log = &sv->log,
                            .ca_file = sv->o.source_ca_file,
                            .auth = &sv->o.source_auth,
                            .max_body_bytes = sv->o.source_max_bytes,
                            .max_sources = (unsigned)sv->o.max_sources,
                            .max_sources_per_ns = (unsigned)sv->o.max_sources_per_ns,
                            .create_rate = sv->o.source_create_rate,
                            .create_burst = (unsigned)sv->o.source_create_burst,
                            .max_read_bytes = sv->o.source_read_bytes,
                            .read_rate = (double)sv->o.source_read_rate,
                            .max_sub_bytes = sv->o.subscription_bytes,
                            .idle_ns = sv->o.source_idle_ns,
                            .egress = &sv->o.egress,
                            .on_update = on_sources_update,
                            .user_data = sv};
    if (sv->o.role == SERVER_ROLE_AGGREGATOR)
        server_aggregator_hub_opts(sv, &ho);
    char err[1024];
    if (source_hub_new(&ho, &sv->sources, err, sizeof err) != 0) {
        LOG_ERROR(&sv->log, "%s", err);
        return 1;
    }
    return 0;
}

static int start_scaler(server_t *sv) {
    scaler_opts_t sco = {.loop = sv->loop,
                         .sources = sv->sources,
                         .log = &sv->log,
                         .stale_after_ns = sv->o.stale_after_ns,
                         /* Health and streams are re-evaluated on every sample and, should
                          * samples stop, at the shorter of the sample and health-check
                          * intervals, so staleness is noticed without a new snapshot. */
                         .recheck_interval_ns =
                             sv->o.health_check_interval_ns &&
                                     sv->o.health_check_interval_ns < sv->o.sample_interval_ns
                                 ? sv->o.health_check_interval_ns
                                 : sv->o.sample_interval_ns,
                         .current_snapshot = server_current_snapshot,
                         .snapshot_user_data = sv,
                         .on_rpc_done = on_rpc_done,
                         .rpc_user_data = sv,
                         .max_metadata_entries = sv->o.max_metadata_entries,
                         .max_metadata_bytes = sv->o.max_metadata_bytes,
                         .config_cache_bytes = sv->o.config_cache_bytes,
                         .max_stream_bytes = sv->o.max_stream_bytes,
                         .config_idle_ns = sv->o.source_idle_ns,
                         .tenant = &sv->tenant};
    sv->tenant = (tenant_policy_t){.auth = &sv->o.source_auth, .cross = &sv->o.cross_ns};
    if (sv->o.role == SERVER_ROLE_AGGREGATOR)
        server_aggregator_scaler_opts(sv, &sco);
    if (scaler_new(&sco, &sv->scaler) != 0) {
        LOG_ERROR(&sv->log, "out of memory");
        return 1;
    }
    char err[1024];
    if (sv->o.role == SERVER_ROLE_AGENT && server_agent_start(sv, err, sizeof err) != 0) {
        LOG_ERROR(&sv->log, "%s", err);
        return 1;
    }
    return 0;
}

static int start_grpc(server_t *sv) {
    /* The connection caps, below the descriptor limit (read after the raise
     * at start: that is the limit the process has), less one descriptor
     * for each agent an aggregator holds. */
    struct rlimit rl = {0};
    conn_limits_t cl;
    uint64_t nofile = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                          ? (uint64_t)rl.rlim_cur
                          : 0;
    /* The aggregator's pool holds --agents' by now (--agents-dns's come
     * later: the pool says when they outgrow the limit). */
    unsigned agents = agent_pool_size(sv->pool);
    conn_limits_clamp(sv->o.max_connections, nofile && nofile > agents ? nofile - agents : !!nofile,
                      &cl);
    if (cl.clamped) {
        char agents_part[96] = "";
        if (agents)
            snprintf(agents_part, sizeof agents_part,
                     ", and %u for the agents --agents names (one connection each)", agents);
        LOG_WARN(&sv->log,
                 "--max-connections %u is more than the descriptor limit allows "
                 "(RLIMIT_NOFILE %llu, less %u kept for the probe and metrics ports, sources and "
                 "files%s): serving at most %u gRPC connections; raise the limit (ulimit -n, or "
                 "the container runtime's) or lower --max-connections",
                 sv->o.max_connections, (unsigned long long)nofile, cl.headroom, agents_part,
                 cl.max_connections);
    }
    unsigned per_peer = sv->o.max_connections_per_peer
                            ? sv->o.max_connections_per_peer
                            : conn_limits_per_peer_default(cl.max_connections);
    grpc_server_opts_t go = {
        .listen_address = sv->o.listen_address,
        .port = sv->o.port,
        .tls = sv->tls,
        .max_connections = cl.max_connections,
        .max_connections_per_peer = per_peer,
        .idle_timeout_ns = sv->o.idle_timeout_ns,
        .handshake_timeout_ns = sv->o.handshake_timeout_ns,
        .max_concurrent_streams = 10000,
        .max_request_bytes = sv->o.max_request_bytes,
        .max_request_bytes_flag = "--max-request-bytes",
        .max_buffered_bytes_per_connection = sv->o.max_buffered_bytes_per_connection,
        .max_buffered_bytes = sv->o.max_buffered_bytes,
        .max_buffered_bytes_per_connection_flag = "--max-buffered-bytes-per-connection",
        .max_buffered_bytes_flag = "--max-buffered-bytes",
        .log = &sv->log};
    grpc_server_handlers_t gh = {.on_request = on_grpc_request, .on_call_gone = on_grpc_call_gone};
    char err[1024];
    if (grpc_server_start(sv->loop, &go, &gh, sv, &sv->grpc, err, sizeof err) != 0) {
        LOG_ERROR(&sv->log, "gRPC: %s", err);
        return 1;
    }
    char line[512];
    server_options_start_line(&sv->o, KGS_VERSION, sv->node, grpc_server_port(sv->grpc),
                              sv->tls != NULL, line, sizeof line);
    LOG_INFO(&sv->log, "%s", line);
    return 0;
}

int server_serve(server_t *sv) {
    if (start_sources(sv) || start_scaler(sv) || start_grpc(sv))
        return 1;
    /* The options refuse equal ports, so the two listeners never clash. */
    if (server_http_start(sv, sv->o.metrics_port, "metrics", &sv->metrics_http) ||
        server_http_start(sv, sv->o.probe_port, "probes", &sv->probe_http))
        return 1;
    return 0;
}
