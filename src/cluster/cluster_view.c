#include "cluster/cluster_view.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/err.h"

/* Node name -> freshest entry, an open-addressing table rebuilt whenever the
 * set of (address, node) pairs changes -- rare next to the once-a-second
 * updates that keep both -- so a workload of hundreds of pods looks its
 * nodes up in O(1) instead of scanning every agent per pod. */
struct cluster_view {
    cluster_node_t *nodes;
    size_t n, cap;
    uint64_t generation;
    int32_t *index; /* entry index or -1; `slots` long (a power of two) */
    size_t slots;
    bool index_dirty;
    bool shared_names; /* two entries name one node (an agent moved): ties can flip */
    node_pods_resolve_fn resolve;
    void *resolve_ud;
    bool has_dra;
    uint64_t resolve_epoch; /* bumped by reresolve and set_resolver */
    /* Address -> entry index, the same kind of table, rebuilt when an agent
     * is added or removed: every snapshot finds its entry by address, and a
     * scan of a thousand addresses per snapshot was a tenth of ingest. */
    int32_t *by_address; /* `address_slots` long; NULL: scan */
    size_t address_slots;
};

#define name_hash kgs_fnv1a

static void index_rebuild(cluster_view_t *v) {
    size_t want = 16;
    while (want < v->n * 2)
        want *= 2;
    if (want != v->slots) {
        int32_t *ni = malloc(want * sizeof *ni);
        if (!ni)
            return; /* stays dirty: lookups fall back to a scan */
        free(v->index);
        v->index = ni;
        v->slots = want;
    }
    for (size_t i = 0; i < v->slots; i++)
        v->index[i] = -1;
    v->shared_names = false;
    for (size_t i = 0; i < v->n; i++) {
        const cluster_node_t *e = &v->nodes[i];
        if (!e->snap || !e->node[0])
            continue;
        size_t mask = v->slots - 1, at = (size_t)name_hash(e->node) & mask;
        for (;; at = (at + 1) & mask) {
            int32_t j = v->index[at];
            if (j < 0) {
                v->index[at] = (int32_t)i;
                break;
            }
            const cluster_node_t *o = &v->nodes[j];
            if (strcmp(o->node, e->node) == 0) {
                v->shared_names = true;
                /* An agent that moved (restart with a new pod IP) can leave an
                 * older entry naming the same node: the freshest wins. */
                if (e->snap->taken_mono > o->snap->taken_mono)
                    v->index[at] = (int32_t)i;
                break;
            }
        }
    }
    v->index_dirty = false;
}

int cluster_view_new(cluster_view_t **out) {
    cluster_view_t *v = calloc(1, sizeof *v);
    if (!v)
        return KGS_ENOMEM;
    *out = v;
    return 0;
}

static void address_index_rebuild(cluster_view_t *v) {
    size_t want = 16;
    while (want < v->n * 2)
        want *= 2;
    if (want != v->address_slots || !v->by_address) {
        free(v->by_address);
        v->by_address = malloc(want * sizeof *v->by_address);
        v->address_slots = v->by_address ? want : 0;
        if (!v->by_address)
            return; /* lookups scan */
    }
    for (size_t i = 0; i < v->address_slots; i++)
        v->by_address[i] = -1;
    size_t mask = v->address_slots - 1;
    for (size_t i = 0; i < v->n; i++) {
        size_t at = (size_t)name_hash(v->nodes[i].address) & mask;
        while (v->by_address[at] >= 0)
            at = (at + 1) & mask;
        v->by_address[at] = (int32_t)i; /* addresses are unique: no compare */
    }
}

static cluster_node_t *find_address(cluster_view_t *v, const char *address) {
    if (v->by_address) {
        size_t mask = v->address_slots - 1;
        for (size_t at = (size_t)name_hash(address) & mask;; at = (at + 1) & mask) {
            int32_t j = v->by_address[at];
            if (j < 0)
                return NULL;
            if (strcmp(v->nodes[j].address, address) == 0)
                return &v->nodes[j];
        }
    }
    for (size_t i = 0; i < v->n; i++)
        if (strcmp(v->nodes[i].address, address) == 0)
            return &v->nodes[i];
    return NULL;
}

static cluster_node_t *add_address(cluster_view_t *v, const char *address) {
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 16;
        cluster_node_t *nn = realloc(v->nodes, cap * sizeof *nn);
        if (!nn)
            return NULL;
        v->nodes = nn;
        v->cap = cap;
    }
    cluster_node_t *e = &v->nodes[v->n++];
    memset(e, 0, sizeof *e);
    snprintf(e->address, sizeof e->address, "%s", address);
    address_index_rebuild(v);
    return e;
}

/* e->pods, as sent or resolved before, resolved again (node_pods_resolve
 * starts from the device-plugin ids again): no copy of what the agent sent
 * is kept. When resolving fails the list becomes unknown until the agent's
 * next snapshot, which then differs and is resolved afresh. */
static void entry_resolve(cluster_view_t *v, cluster_node_t *e) {
    node_pods_t *out = NULL;
    char why[256];
    e->_resolved_epoch = v->resolve_epoch;
    if (node_pods_resolve(e->pods, v->resolve, v->resolve_ud, &out, why, sizeof why) != 0) {
        char msg[300];
        snprintf(msg, sizeof msg, "resolving DRA devices: %s", why);
        node_pods_new_unknown(msg, &out); /* NULL on no memory: "no attribution" */
    }
    node_pods_free(e->pods);
    e->pods = out;
}

int cluster_view_update(cluster_view_t *v, const char *address, snapshot_t *snap, node_pods_t *pods,
                        mono_ns_t now) {
    cluster_node_t *e = find_address(v, address);
    if (!e)
        e = add_address(v, address);
    if (!e) {
        snapshot_unref(snap);
        node_pods_free(pods);
        return KGS_ENOMEM;
    }
    bool had = e->snap != NULL;
    snapshot_unref(e->snap);
    e->snap = snap;
    bool dra = pods && pods->known && pods->dra_total > 0;
    if (dra && e->_dra && e->_resolved_epoch == v->resolve_epoch &&
        node_pods_resolved_from(e->pods, pods)) {
        /* The agent sends its attribution with every snapshot; unchanged,
         * with the same slices, it resolves the same: keep the resolution. */
        node_pods_free(pods);
    } else {
        node_pods_free(e->pods);
        e->pods = pods;
        e->_dra = dra;
        if (dra) {
            v->has_dra = true;
            entry_resolve(v, e);
        }
    }
    e->received = now;
    e->connected = true;
    e->error[0] = '\0';
    if (snap && (!had || strcmp(e->node, snap->node_name) != 0)) {
        snprintf(e->node, sizeof e->node, "%s", snap->node_name);
        v->index_dirty = true;
    } else if (v->shared_names) {
        /* Same node, fresher snapshot: only a shared-name tie can change. */
        v->index_dirty = true;
    }
    v->generation++;
    return 0;
}

void cluster_view_disconnected(cluster_view_t *v, const char *address, const char *error) {
    cluster_node_t *e = find_address(v, address);
    if (!e)
        e = add_address(v, address);
    if (!e)
        return;
    e->connected = false;
    snprintf(e->error, sizeof e->error, "%s", error ? error : "disconnected");
    v->generation++;
}

void cluster_view_remove(cluster_view_t *v, const char *address) {
    cluster_node_t *e = find_address(v, address);
    if (!e)
        return;
    snapshot_unref(e->snap);
    node_pods_free(e->pods);
    size_t i = (size_t)(e - v->nodes);
    memmove(&v->nodes[i], &v->nodes[i + 1], (v->n - i - 1) * sizeof *e);
    v->n--;
    address_index_rebuild(v);
    v->index_dirty = true;
    v->generation++;
}

size_t cluster_view_count(const cluster_view_t *v) {
    return v->n;
}

const cluster_node_t *cluster_view_at(const cluster_view_t *v, size_t i) {
    return i < v->n ? &v->nodes[i] : NULL;
}

const cluster_node_t *cluster_view_find_node(const cluster_view_t *cv, const char *node) {
    /* Lookups are logically const; the index is a cache rebuilt on demand. */
    cluster_view_t *v = (cluster_view_t *)cv;
    if (v->index_dirty || !v->index)
        index_rebuild(v);
    if (!v->index_dirty && v->index) {
        size_t mask = v->slots - 1;
        for (size_t at = (size_t)name_hash(node) & mask;; at = (at + 1) & mask) {
            int32_t j = v->index[at];
            if (j < 0)
                return NULL;
            if (strcmp(v->nodes[j].node, node) == 0)
                return &v->nodes[j];
        }
    }
    const cluster_node_t *best = NULL; /* out of memory for the index: scan */
    for (size_t i = 0; i < v->n; i++) {
        const cluster_node_t *e = &v->nodes[i];
        if (e->snap && strcmp(e->node, node) == 0 &&
            (!best || e->snap->taken_mono > best->snap->taken_mono))
            best = e;
    }
    return best;
}

void cluster_view_set_resolver(cluster_view_t *v, node_pods_resolve_fn resolve, void *user_data) {
    v->resolve = resolve;
    v->resolve_ud = user_data;
    v->resolve_epoch++;
}

void cluster_view_reresolve(cluster_view_t *v) {
    bool any = false;
    v->resolve_epoch++;
    for (size_t i = 0; i < v->n; i++)
        if (v->nodes[i]._dra) {
            entry_resolve(v, &v->nodes[i]);
            any = true;
        }
    if (any)
        v->generation++;
}

bool cluster_view_has_dra(const cluster_view_t *v) {
    return v->has_dra;
}

uint64_t cluster_view_generation(const cluster_view_t *v) {
    return v->generation;
}

void cluster_view_free(cluster_view_t *v) {
    if (!v)
        return;
    for (size_t i = 0; i < v->n; i++) {
        snapshot_unref(v->nodes[i].snap);
        node_pods_free(v->nodes[i].pods);
    }
    free(v->nodes);
    free(v->index);
    free(v->by_address);
    free(v);
}
