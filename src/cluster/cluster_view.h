/*
 * cluster_view.h - what the aggregator knows about every node: the latest
 * snapshot each agent streamed, its pod attribution, and whether the stream
 * is up. Loop thread only.
 *
 * Entries are keyed by agent address (one Watch stream each). Snapshots
 * arrive with taken_mono already in this process's clock (the codec turns
 * the agent's reported age into local time), so staleness is `now -
 * snap->taken_mono` with no clock synchronisation between machines.
 */
#ifndef KGS_CLUSTER_CLUSTER_VIEW_H
#define KGS_CLUSTER_CLUSTER_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cluster/node_pods.h"
#include "core/clock.h"
#include "core/snapshot.h"

typedef struct {
    char address[128];        /* the agent's host:port */
    char node[256];           /* from its snapshots; "" before the first */
    snapshot_t *snap;         /* latest; NULL before the first; borrowed from the view */
    node_pods_t *pods;        /* latest attribution, DRA devices resolved; NULL before the first */
    bool _dra;                /* private: the agent's list names DRA devices */
    uint64_t _resolved_epoch; /* private: the resolver epoch `pods` was resolved in */
    mono_ns_t received;       /* when the latest snapshot arrived */
    bool connected;           /* the Watch stream is up */
    char error[256];          /* why it is not, when it is not */
} cluster_node_t;

typedef struct cluster_view cluster_view_t;

/* Returns 0 or KGS_ENOMEM. */
int cluster_view_new(cluster_view_t **out);

/* Records a snapshot from the agent at `address` (created on first use).
 * `snap` and `pods` are taken (pods may be NULL). DRA devices in `pods` are
 * resolved with the view's resolver (below) into the entry's `pods`.
 * Returns 0 or KGS_ENOMEM (then both were released). */
int cluster_view_update(cluster_view_t *v, const char *address, snapshot_t *snap, node_pods_t *pods,
                        mono_ns_t now);

/* The stream to `address` is down: keeps the last snapshot (it ages into
 * staleness on its own) and records why. Unknown addresses are added. */
void cluster_view_disconnected(cluster_view_t *v, const char *address, const char *error);

/* Forgets an agent that is no longer discovered. */
void cluster_view_remove(cluster_view_t *v, const char *address);

size_t cluster_view_count(const cluster_view_t *v);
/* Borrowed until the next call that changes the view. */
const cluster_node_t *cluster_view_at(const cluster_view_t *v, size_t i);
/* The freshest entry whose snapshots name `node`, or NULL. */
const cluster_node_t *cluster_view_find_node(const cluster_view_t *v, const char *node);

/* Increments on every change: cheap "did anything happen" for evaluators. */
uint64_t cluster_view_generation(const cluster_view_t *v);

/*
 * DRA: the aggregator resolves the kubelet's (driver, pool, device) names to
 * GPU UUIDs through the ResourceSlices. `resolve` (see node_pods_resolve;
 * NULL: nothing resolves) and user_data are borrowed until replaced.
 * Setting it does not re-resolve: call cluster_view_reresolve().
 */
void cluster_view_set_resolver(cluster_view_t *v, node_pods_resolve_fn resolve, void *user_data);

/* Resolves every entry's DRA devices again (the ResourceSlices changed, or
 * the resolver's answers did: its slices went stale or synced). Until then
 * an agent's unchanged DRA list keeps its resolution (no copy per
 * snapshot).
 * An entry that cannot be resolved for lack of memory gets an unknown
 * attribution saying so. */
void cluster_view_reresolve(cluster_view_t *v);

/* Whether any agent has reported DRA devices (the aggregator starts its
 * ResourceSlice watch only then: clusters without DRA need no RBAC on it). */
bool cluster_view_has_dra(const cluster_view_t *v);

void cluster_view_free(cluster_view_t *v);

#endif
