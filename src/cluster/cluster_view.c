#include "cluster/cluster_view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"

struct cluster_view {
    cluster_node_t *nodes;
    size_t n, cap;
    uint64_t generation;
};

int cluster_view_new(cluster_view_t **out) {
    cluster_view_t *v = calloc(1, sizeof *v);
    if (!v)
        return KGS_ENOMEM;
    *out = v;
    return 0;
}

static cluster_node_t *find_address(cluster_view_t *v, const char *address) {
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
    return e;
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
    snapshot_unref(e->snap);
    node_pods_free(e->pods);
    e->snap = snap;
    e->pods = pods;
    e->received = now;
    e->connected = true;
    e->error[0] = '\0';
    if (snap)
        snprintf(e->node, sizeof e->node, "%s", snap->node_name);
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
    v->generation++;
}

size_t cluster_view_count(const cluster_view_t *v) {
    return v->n;
}

const cluster_node_t *cluster_view_at(const cluster_view_t *v, size_t i) {
    return i < v->n ? &v->nodes[i] : NULL;
}

const cluster_node_t *cluster_view_find_node(const cluster_view_t *v, const char *node) {
    const cluster_node_t *best = NULL;
    for (size_t i = 0; i < v->n; i++) {
        const cluster_node_t *e = &v->nodes[i];
        /* An agent that moved (a restart with a new pod IP) can leave an older
         * entry naming the same node: the freshest snapshot wins. */
        if (e->snap && strcmp(e->node, node) == 0 &&
            (!best || e->snap->taken_mono > best->snap->taken_mono))
            best = e;
    }
    return best;
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
    free(v);
}
