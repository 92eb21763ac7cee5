/*
 * agent_service.c - kgs.cluster.v1.Agent/Watch.
 *
 * DESIGN
 * - A stream is created in on_request and freed in exactly one place each:
 *   on_call_gone (the aggregator went away), stream_end (we finished it:
 *   shutdown), or agent_service_free (the server is already gone).
 * - Publish encodes once and sends the same bytes to every stream;
 *   grpc_call_send copies them, so the buffer is freed at once. latest_only
 *   makes the transport replace a snapshot that has not started going out,
 *   so a slow aggregator costs at most one queued message.
 * - The snapshot a new stream gets at once is encoded for that stream
 *   alone, with the age as of that moment.
 * - A stream that cannot get its first snapshot (none yet) simply waits:
 *   the first publish reaches it like every other stream.
 */
#include "cluster/agent_service.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/snapshot_codec.h"
#include "core/err.h"
#include "net/grpc_frame.h"
#include "proto/cluster.pb-c.h"

typedef struct agent_stream {
    grpc_call_t *call;
    struct agent_stream *next, *prev;
} agent_stream_t;

struct agent_service {
    agent_service_opts_t opts;
    agent_stream_t *streams;
    unsigned nstreams;
    bool shutting_down;
    log_ratelimit_t errors_rl; /* encode failures repeat on every sample */
};

int agent_service_new(const agent_service_opts_t *opts, agent_service_t **out) {
    *out = NULL;
    if (!opts || !opts->loop || !opts->current_snapshot)
        return KGS_EINVAL;
    agent_service_t *svc = calloc(1, sizeof *svc);
    if (!svc)
        return KGS_ENOMEM;
    svc->opts = *opts;
    log_ratelimit_init(&svc->errors_rl, 60 * NS_PER_SEC);
    *out = svc;
    return 0;
}

bool agent_service_handles(const char *path) {
    return path && strcmp(path, AGENT_SERVICE_WATCH_PATH) == 0;
}

unsigned agent_service_stream_count(const agent_service_t *svc) {
    return svc->nstreams;
}

bool agent_service_owns_call(const agent_service_t *svc, const grpc_call_t *call) {
    for (const agent_stream_t *st = svc->streams; st; st = st->next)
        if (st->call == call)
            return true;
    return false;
}

static void stream_unlink(agent_service_t *svc, agent_stream_t *st) {
    if (st->prev)
        st->prev->next = st->next;
    else
        svc->streams = st->next;
    if (st->next)
        st->next->prev = st->prev;
    svc->nstreams--;
}

/* Encodes the current snapshot as of loop time. Returns 0 with *buf
 * (free()) or NULL when there is no snapshot yet; or an encode error,
 * logged. */
static int encode_current(agent_service_t *svc, uint8_t **buf, size_t *len) {
    *buf = NULL;
    *len = 0;
    snapshot_t *snap = svc->opts.current_snapshot(svc->opts.user_data);
    if (!snap)
        return 0;
    const node_pods_t *pods =
        svc->opts.current_pods ? svc->opts.current_pods(svc->opts.user_data) : NULL;
    char err[256];
    mono_ns_t now = loop_now(svc->opts.loop);
    int rc = snapshot_codec_encode(snap, pods, now, svc->opts.sample_interval_ms, buf, len, err,
                                   sizeof err);
    if (rc != 0) {
        char key[64];
        snprintf(key, sizeof key, "agent encode %d", rc);
        LOG_RATELIMITED(svc->opts.log, &svc->errors_rl, key, now, LOG_ERROR,
                        "Watch: snapshot %llu of node %s not sent: %s",
                        (unsigned long long)snap->seq, snap->node_name, err);
    }
    snapshot_unref(snap);
    return rc;
}

void agent_service_on_request(grpc_call_t *call, const char *path, const uint8_t *msg, size_t len,
                              void *ud) {
    agent_service_t *svc = ud;
    if (!agent_service_handles(path)) {
        char m[320];
        snprintf(m, sizeof m, "method %.256s is not implemented", path ? path : "?");
        grpc_call_finish(call, GRPC_UNIMPLEMENTED, m);
        return;
    }
    Kgs__Cluster__V1__WatchRequest *req = kgs__cluster__v1__watch_request__unpack(NULL, len, msg);
    if (!req) {
        LOG_WARN(svc->opts.log, "Watch from %s: malformed WatchRequest", grpc_call_peer(call));
        grpc_call_finish(call, GRPC_INVALID_ARGUMENT, "malformed WatchRequest");
        return;
    }
    uint32_t version = req->protocol_version;
    kgs__cluster__v1__watch_request__free_unpacked(req, NULL);
    if (version != SNAPSHOT_CODEC_PROTOCOL_VERSION) {
        char m[160];
        snprintf(m, sizeof m,
                 "WatchRequest protocol_version %u is not supported: this agent speaks version %u",
                 version, SNAPSHOT_CODEC_PROTOCOL_VERSION);
        LOG_WARN(svc->opts.log, "Watch from %s: %s", grpc_call_peer(call), m);
        grpc_call_finish(call, GRPC_FAILED_PRECONDITION, m);
        return;
    }
    if (svc->shutting_down) {
        grpc_call_finish(call, GRPC_UNAVAILABLE, "agent is shutting down");
        return;
    }
    agent_stream_t *st = calloc(1, sizeof *st);
    if (!st) {
        grpc_call_finish(call, GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    st->call = call;
    st->next = svc->streams;
    if (svc->streams)
        svc->streams->prev = st;
    svc->streams = st;
    svc->nstreams++;
    grpc_call_set_user_data(call, st);
    LOG_INFO(svc->opts.log, "Watch from %s: stream open (%u open)", grpc_call_peer(call),
             svc->nstreams);

    uint8_t *buf;
    size_t n;
    if (encode_current(svc, &buf, &n) == 0 && buf) {
        (void)grpc_call_send(call, buf, n, true);
        free(buf);
    }
}

void agent_service_on_call_gone(grpc_call_t *call, void *call_ud, void *ud) {
    agent_service_t *svc = ud;
    agent_stream_t *st = call_ud;
    if (!st)
        return;
    LOG_INFO(svc->opts.log, "Watch from %s: stream gone (%u open)", grpc_call_peer(call),
             svc->nstreams - 1);
    stream_unlink(svc, st);
    free(st);
}

int agent_service_publish(agent_service_t *svc) {
    if (!svc->streams || svc->shutting_down)
        return 0;
    uint8_t *buf;
    size_t n;
    int rc = encode_current(svc, &buf, &n);
    if (rc != 0 || !buf)
        return rc;
    /* A send that fails (out of memory) costs that stream this snapshot
     * only: the next publish replaces it anyway. */
    for (agent_stream_t *st = svc->streams; st; st = st->next)
        (void)grpc_call_send(st->call, buf, n, true);
    free(buf);
    return 0;
}

void agent_service_shutdown(agent_service_t *svc) {
    svc->shutting_down = true;
    while (svc->streams) {
        agent_stream_t *st = svc->streams;
        stream_unlink(svc, st);
        grpc_call_finish(st->call, GRPC_OK, "agent shutting down");
        free(st);
    }
}

void agent_service_free(agent_service_t *svc) {
    if (!svc)
        return;
    while (svc->streams) {
        agent_stream_t *st = svc->streams;
        stream_unlink(svc, st);
        free(st);
    }
    free(svc);
}
