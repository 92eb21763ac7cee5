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
 * This file reads the flags and dispatches by role; the rooms, sharing
 * server.h: lifecycle.c (start, signals, shutdown grace, teardown),
 * sampling.c (this node's GPUs: standalone, agent), aggregator.c (the
 * cluster view: aggregator), agent.c (the Watch service and the kubelet's
 * pods: agent), tls_reload.c (the TLS files), serve.c (sources, scaler,
 * gRPC dispatch) and endpoints.c (/metrics, /healthz, /readyz).
 */
#include <stdio.h>
#include <string.h>

#include "env/env.h"
#include "server/query.h"
#include "server/server.h"
#include "server/validate.h"

#ifndef KGS_VERSION
#define KGS_VERSION "0.0.0"
#endif
#ifndef KGS_GIT_DESCRIBE
#define KGS_GIT_DESCRIBE "unknown"
#endif

/* What feeds the scaler: the agents' streams, or this node's GPUs.
 * 0, or 1 after logging why. */
static int start_role(server_t *sv) {
    switch (sv->o.role) {
    case SERVER_ROLE_AGGREGATOR: {
        /* The aggregator reads no GPU itself: its data comes from the agents. */
        char err[1024];
        if (server_aggregator_start(sv, err, sizeof err) != 0) {
            LOG_ERROR(&sv->log, "%s", err);
            return 1;
        }
        return 0;
    }
    case SERVER_ROLE_AGENT: /* its Watch service starts beside the scaler (serve.c) */
    case SERVER_ROLE_STANDALONE:
        return server_sampling_start(sv);
    }
    return 1;
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

    int rc = 1;
    if (server_process_start(&sv) == 0 && start_role(&sv) == 0 && server_tls_start(&sv) == 0 &&
        server_serve(&sv) == 0)
        rc = server_run(&sv);
    server_teardown(&sv);
    return rc;
}
