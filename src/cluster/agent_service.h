/*
 * agent_service.h - the agent's kgs.cluster.v1.Agent/Watch service on top of
 * grpc_server: every aggregator that calls Watch gets the node's current
 * snapshot at once (or the first one, when none exists yet), then each new
 * one. Loop thread only.
 *
 * A publish encodes the snapshot once and queues it on every stream with
 * latest_only, so an aggregator that reads slowly skips to the newest
 * snapshot instead of queueing old ones.
 */
#ifndef KGS_CLUSTER_AGENT_SERVICE_H
#define KGS_CLUSTER_AGENT_SERVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cluster/node_pods.h"
#include "core/log.h"
#include "core/snapshot.h"
#include "net/grpc_server.h"
#include "net/loop.h"

#define AGENT_SERVICE_WATCH_PATH "/kgs.cluster.v1.Agent/Watch"

typedef struct agent_service agent_service_t;

typedef struct {
    loop_t *loop;        /* borrowed; outlives the service */
    const logger_t *log; /* borrowed; may be NULL */
    /* The latest snapshot (returned reference: the service unrefs it) or
     * NULL when there is none yet. Called on the loop thread. Required. */
    snapshot_t *(*current_snapshot)(void *user_data);
    /* The node's pod attribution (borrowed for the duration of the call)
     * or NULL when not known. May be NULL itself: pods never known. */
    const node_pods_t *(*current_pods)(void *user_data);
    void *user_data;             /* passed to both callbacks */
    uint32_t sample_interval_ms; /* sent with each snapshot (the sampler cadence) */
} agent_service_opts_t;

/* Creates the service (opts copied). Returns 0 with *out (returned: free
 * with agent_service_free), KGS_EINVAL (no loop or current_snapshot), or
 * KGS_ENOMEM. */
int agent_service_new(const agent_service_opts_t *opts, agent_service_t **out);

/* True when `path` is a method of this service (AGENT_SERVICE_WATCH_PATH),
 * for a dispatcher that serves several services on one grpc_server. */
bool agent_service_handles(const char *path);

/*
 * grpc_server on_request handler; `svc` is the agent_service_t. A Watch
 * whose WatchRequest is malformed ends INVALID_ARGUMENT; protocol_version
 * 0 or above 1 ends FAILED_PRECONDITION ("... this agent speaks version
 * 1"); after agent_service_shutdown() UNAVAILABLE; another path
 * UNIMPLEMENTED. Otherwise the stream stays open and gets the current
 * snapshot at once, if there is one.
 */
void agent_service_on_request(grpc_call_t *call, const char *path, const uint8_t *msg, size_t len,
                              void *svc);

/* grpc_server on_call_gone handler: forgets the stream (the aggregator
 * went away). `call_user_data` must be one this service set; a dispatcher
 * sharing the server asks agent_service_owns_call() first. */
void agent_service_on_call_gone(grpc_call_t *call, void *call_user_data, void *svc);

/* True when `call` is an open Watch stream of this service. O(streams). */
bool agent_service_owns_call(const agent_service_t *svc, const grpc_call_t *call);

/*
 * A new snapshot was published: takes current_snapshot() (and
 * current_pods()), encodes it once and queues it on every open stream
 * (latest_only). Returns 0 (also when there is no snapshot or no stream),
 * or the encode failure, KGS_ENOMEM or KGS_ERANGE (message over 4 MiB),
 * which is also logged (rate limited); streams then keep what they had.
 */
int agent_service_publish(agent_service_t *svc);

/* Ends every stream with status OK (aggregators re-dial) and refuses new
 * ones with UNAVAILABLE. */
void agent_service_shutdown(agent_service_t *svc);

unsigned agent_service_stream_count(const agent_service_t *svc);

/* Frees the service. Streams still open are forgotten without finishing
 * them: free the grpc_server first (as with scaler_free). NULL does nothing. */
void agent_service_free(agent_service_t *svc);

#endif
