/*
 * lifecycle.c - the server process from start to exit, whatever its role:
 * the node name, the signal mask and the descriptor limit, the loop with
 * its timers and signalfd, the run, the shutdown on SIGTERM/SIGINT and
 * the teardown.
 *
 * DESIGN
 * SIGINT and SIGTERM are blocked before any thread starts (the sampler and
 * DNS threads inherit the mask and never take them) and read on the loop
 * through a signalfd. Shutdown: streams end with status OK, GOAWAY goes to
 * every connection, unary calls in flight finish, and the loop stops when
 * the last connection closes or after --shutdown-grace, whichever comes
 * first. The teardown frees every piece, started or not (each free takes
 * NULL), so a start that failed half-way exits through the same path.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "server/server.h"

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

int server_process_start(server_t *sv) {
    sv->log.level = sv->o.log_level;
    sv->log.format = sv->o.log_format;
    sv->log.out = stderr;
    resolve_node_name(sv);
    server_stats_init(&sv->stats);

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

    char err[1024];
    if (loop_new(&sv->loop, err, sizeof err) != 0) {
        LOG_ERROR(&sv->log, "%s", err);
        return 1;
    }
    loop_timer_init(&sv->tls_timer, server_tls_check, sv);
    loop_timer_init(&sv->grace_timer, on_grace, sv);
    server_aggregator_init(sv);
    loop_set_wakeup(sv->loop, server_on_wakeup, sv);
    sv->sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sv->sigfd < 0 || !(sv->sig_io = loop_io_add(sv->loop, sv->sigfd, EPOLLIN, on_signal, sv))) {
        LOG_ERROR(&sv->log, "signalfd: %s", strerror(errno));
        return 1;
    }
    return 0;
}

int server_run(server_t *sv) {
    scaler_refresh(sv->scaler);
    if (loop_run(sv->loop) != 0)
        LOG_ERROR(&sv->log, "event loop failed: %s", strerror(errno));
    return 0;
}

void server_teardown(server_t *sv) {
    if (sv->sampler)
        LOG_INFO(&sv->log, "stopping");
    grpc_server_free(sv->grpc);
    scaler_free(sv->scaler);
    source_hub_free(sv->sources);
    agent_service_free(sv->agent);
    podres_client_free(sv->podres);
    node_pods_free(sv->pods);
    resolver_free(sv->resolver);
    agent_pool_free(sv->pool);
    kube_client_free(sv->kube);
    kube_client_free(sv->kube_nodes);
    kube_client_free(sv->kube_slices);
    cluster_view_free(sv->view);
    cold_start_book_deinit(&sv->cold_starts);
    http_server_free(sv->metrics_http);
    http_server_free(sv->probe_http);
    if (sv->loop) {
        loop_timer_stop(sv->loop, &sv->tls_timer);
        loop_timer_stop(sv->loop, &sv->grace_timer);
        loop_timer_stop(sv->loop, &sv->cluster_refresh);
        loop_io_remove(sv->loop, sv->sig_io);
    }
    if (sv->sigfd >= 0)
        close(sv->sigfd);
    tls_server_free(sv->tls);
    tls_client_free(sv->agents_tls);
    /* A hung NVML call must not hold the exit past the grace period. */
    if (sampler_stop_within(sv->sampler, NS_PER_SEC))
        nvml_loader_free(sv->loader);
    else
        LOG_WARN(&sv->log, "NVML call still running at exit: leaving it to the kernel");
    loop_free(sv->loop);
}
