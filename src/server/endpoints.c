/*
 * endpoints.c - the server's HTTP endpoints: /metrics (Prometheus text:
 * the process, the GPUs, the RPCs, the budgets, the sources and the
 * triggers' decisions), /healthz (the loop runs) and /readyz (the role can
 * answer), on the metrics and probe ports.
 */
#include <stdio.h>
#include <string.h>

#include "server/server.h"

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
        snapshot_t *snap = server_current_snapshot(sv);
        char why[8];
        metrics_context_t ctx = {
            .node = sv->node,
            .version = KGS_VERSION,
            .commit = KGS_GIT_DESCRIBE,
            .gpu_backend = sv->gpu_backend,
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
        ctx.cold_starts = &sv->cold_starts;
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

int server_http_start(server_t *sv, uint16_t port, const char *what, http_server_t **out) {
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
