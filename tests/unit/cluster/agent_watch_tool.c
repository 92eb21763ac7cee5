/*
 * agent_watch_tool - calls an agent's Watch and prints each decoded
 * NodeSnapshot as one JSON line (node, seq, age, GPUs, pod attribution).
 *   agent_watch_tool HOST:PORT COUNT [--ca FILE [--cert FILE --key FILE]
 *                                    [--server-name NAME]]
 * With --ca it dials over TLS (mTLS with --cert/--key), as an aggregator
 * with --agents-tls-* does. Exit 0 after COUNT snapshots, 1 when the stream
 * fails first.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/node_pods.h"
#include "cluster/snapshot_codec.h"
#include "net/grpc_client.h"
#include "net/loop.h"
#include "net/tls.h"
#include "proto/cluster.pb-c.h"

typedef struct {
    loop_t *loop;
    long want, got;
    int rc;
} tool_t;

static void on_message(void *ud, const uint8_t *msg, size_t len) {
    tool_t *t = ud;
    snapshot_t *s = NULL;
    node_pods_t *pods = NULL;
    char err[512];
    if (snapshot_codec_decode(msg, len, loop_now(t->loop), &s, &pods, err, sizeof err) != 0) {
        printf("{\"decode_error\": \"%s\"}\n", err);
        fflush(stdout);
        return;
    }
    printf("{\"node\": \"%s\", \"seq\": %llu, \"gpus\": [", s->node_name,
           (unsigned long long)s->seq);
    for (unsigned i = 0; i < s->gpu_count; i++)
        printf("%s{\"index\": %u, \"uuid\": \"%s\", \"gpu_util\": %u, \"valid_util\": %s}",
               i ? ", " : "", s->gpus[i].index, s->gpus[i].uuid, s->gpus[i].gpu_util_pct,
               gpu_has(&s->gpus[i], GPU_F_GPU_UTIL) ? "true" : "false");
    printf("], \"pods_known\": %s, \"pods_error\": \"%s\", \"pods\": [",
           pods && pods->known ? "true" : "false", pods && pods->error ? pods->error : "");
    for (size_t i = 0; pods && i < pods->count; i++) {
        const node_pod_entry_t *e = &pods->entries[i];
        printf("%s{\"namespace\": \"%s\", \"pod\": \"%s\", \"container\": \"%s\", \"devices\": [",
               i ? ", " : "", e->namespace_, e->pod, e->container);
        for (size_t d = 0; d < e->device_count; d++)
            printf("%s\"%s\"", d ? ", " : "", e->device_ids[d]);
        printf("]}");
    }
    printf("]}\n");
    fflush(stdout);
    snapshot_unref(s);
    node_pods_free(pods);
    if (++t->got >= t->want)
        loop_stop(t->loop);
}

static void on_done(void *ud, int status, const char *message) {
    tool_t *t = ud;
    printf("{\"end\": %d, \"message\": \"%s\"}\n", status, message);
    fflush(stdout);
    if (t->got < t->want)
        t->rc = 1;
    loop_stop(t->loop);
}

int main(int argc, char **argv) {
    const char *ca = NULL, *cert = NULL, *key = NULL, *name = NULL;
    for (int i = 3; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--ca") == 0)
            ca = argv[i + 1];
        else if (strcmp(argv[i], "--cert") == 0)
            cert = argv[i + 1];
        else if (strcmp(argv[i], "--key") == 0)
            key = argv[i + 1];
        else if (strcmp(argv[i], "--server-name") == 0)
            name = argv[i + 1];
        else
            argc = 0; /* usage */
    }
    if (argc < 3 || argc % 2 == 0) {
        fprintf(stderr, "usage: agent_watch_tool HOST:PORT COUNT [--ca FILE [--cert FILE --key "
                        "FILE] [--server-name NAME]]\n");
        return 2;
    }
    tool_t t = {.want = atol(argv[2])};
    char err[512];
    SSL_CTX *tls = NULL;
    if (ca && !(tls = tls_client_ctx_new(ca, cert, key, false, err, sizeof err))) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    if (loop_new(&t.loop, err, sizeof err) != 0)
        return 1;
    grpc_client_t *c;
    grpc_client_opts_t o = {.address = argv[1], .tls = tls, .server_name = name};
    if (grpc_client_connect(t.loop, &o, &c, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    Kgs__Cluster__V1__WatchRequest req = KGS__CLUSTER__V1__WATCH_REQUEST__INIT;
    req.protocol_version = 1;
    uint8_t buf[16];
    size_t n = kgs__cluster__v1__watch_request__pack(&req, buf);
    if (grpc_client_call(c, "/kgs.cluster.v1.Agent/Watch", buf, n, 0, on_message, on_done, &t,
                         NULL) != 0)
        return 1;
    loop_run(t.loop);
    grpc_client_free(c);
    loop_free(t.loop);
    SSL_CTX_free(tls);
    return t.rc;
}
