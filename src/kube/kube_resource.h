/*
 * kube_resource.h - what the Kubernetes client needs to know of one watched
 * resource, as one constant table of functions (nvtop's struct gpu_vendor):
 * where it is listed and watched, how a list page and a watch event are
 * decoded and applied, what state it is kept in (a pod cache, a slice
 * index) and how a relist replaces that state. kube/kube_client.c holds the
 * connection, the list + watch flow, the caps and the backoff; it looks its
 * resource up once by name (kube_client_config_t.resource) and never asks
 * which one it serves again.
 *
 * The rows are defined beside each resource's code: pods and nodes in
 * kube/kube_pods.c (a Node is read with the pod parser, for its labels),
 * resourceslices in kube/resource_slices.c.
 *
 * Adding a watched resource = one file (its decoding, its state and its
 * kube_resource_t row) + one row in kube_client.c's resources[] table.
 *
 * Pure: no I/O. Every function runs on the client's thread (the loop).
 */
#ifndef KGS_KUBE_KUBE_RESOURCE_H
#define KGS_KUBE_KUBE_RESOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "kube/kube_pods.h"
#include "kube/resource_slices.h"

/* What the client reads of a decoded list page. */
typedef struct {
    size_t count;          /* items the page holds (list_max_items counts these) */
    size_t skipped;        /* items refused for a field over its bound */
    char skip_reason[256]; /* the first such item's message; "" if none */
    char resource_version[KUBE_RV_MAX + 1];
    char continue_token[KUBE_CONTINUE_MAX + 1]; /* "" on the last page */
} kube_page_info_t;

/* Fills *info from a decoded list page's fields (strings borrowed, copied). */
static inline void kube_page_info_set(kube_page_info_t *info, size_t count, size_t skipped,
                                      const char *skip_reason, const char *rv,
                                      const char *continue_token) {
    info->count = count;
    info->skipped = skipped;
    snprintf(info->skip_reason, sizeof info->skip_reason, "%s", skip_reason);
    snprintf(info->resource_version, sizeof info->resource_version, "%s", rv);
    snprintf(info->continue_token, sizeof info->continue_token, "%s", continue_token);
}

/* What one watch line did (kube_resource_t.watch_event). */
typedef struct {
    kube_event_type_t type;
    int error_code; /* an ERROR event's Status code (410: relist); 0 otherwise */
    bool changed;   /* the state changed */
    bool skipped;   /* an object over a bound: refused, its old copy dropped */
    bool applying;  /* the failure returned came applying a decoded event */
} kube_event_result_t;

typedef struct kube_resource {
    const char *name; /* as kube_client_config_t.resource spells it: "pods" */
    const char *path; /* the collection's API path, listed and watched: "/api/v1/pods" */

    /* The state the client keeps current. state_new: 0 or KGS_ENOMEM. */
    int (*state_new)(void **out);
    void (*state_free)(void *state); /* NULL does nothing */
    /* The resourceVersion the state reflects; "" before any. Borrowed. */
    const char *(*resource_version)(const void *state);
    /* How many objects the state holds, and what the list log line adds
     * after "listed N <name>": "" or " (24 devices)". */
    size_t (*size)(const void *state);
    void (*describe)(const void *state, char *out, size_t cap);

    /* A list page from buf[0..len) (borrowed) into *page (owned: page_free)
     * and *info. Returns 0, or an error with a message naming the defect;
     * *page is then NULL. */
    int (*page_parse)(const char *buf, size_t len, void **page, kube_page_info_t *info, char *err,
                      size_t errlen);
    void (*page_free)(void *page); /* NULL does nothing */
    /* Moves the page's objects into the list being assembled (*next, a
     * fresh one when NULL). The page is freed either way. 0 or KGS_ENOMEM. */
    int (*list_add)(void **next, void *page);
    void (*list_free)(void *next); /* a list dropped half-way; NULL does nothing */
    /* The relist: state takes next's content as of rv; what it held and
     * next holds no more is gone. next is freed either way. Returns 0,
     * KGS_EINVAL or KGS_ENOMEM (state unchanged). */
    int (*list_replace)(void *state, void *next, const char *rv);

    /* One watch line (without its newline) decoded and applied to state.
     * Returns 0 with *out filled: applied, skipped (its message in err), or
     * an ERROR event (not applied; its message in err). Else an error: a
     * line that does not decode (message in err), or, with out->applying,
     * applying it failed (KGS_ENOMEM, KGS_EINVAL). */
    int (*watch_event)(void *state, const char *line, size_t len, kube_event_result_t *out,
                       char *err, size_t errlen);

    /* The typed views of the state for kube_client_cache() and
     * kube_client_slices(); NULL where the resource is not kept that way. */
    const pod_cache_t *(*pod_cache)(const void *state);
    dra_index_t *(*dra_index)(void *state);
} kube_resource_t;

/* The rows, each defined beside its resource's code. */
extern const kube_resource_t kube_resource_pods;           /* kube_pods.c */
extern const kube_resource_t kube_resource_nodes;          /* kube_pods.c */
extern const kube_resource_t kube_resource_resourceslices; /* resource_slices.c */

#endif
