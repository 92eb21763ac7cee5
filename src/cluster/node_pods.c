/*
 * node_pods.c - the immutable pod attribution list.
 *
 * One allocation holds the header, the entry array, every device-id pointer
 * array and every string, so the list is freed with one free() and nothing
 * can be half-built. Sizes are summed with overflow checks before the
 * allocation (the bounds in the header keep them far from SIZE_MAX on
 * 64-bit, but not on 32-bit).
 */
#include "cluster/node_pods.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"

static bool add_size(size_t *acc, size_t n) {
    if (*acc > SIZE_MAX - n)
        return false;
    *acc += n;
    return true;
}

/* Checks one string against its bound and adds its storage to *bytes. */
static int check_str(const char *s, size_t max, size_t i, const char *what, size_t *bytes,
                     char *err, size_t errlen) {
    if (!s)
        return kgs_seterr(err, errlen, KGS_EINVAL, "node pods: entries[%zu]: %s: missing", i, what);
    size_t len = strnlen(s, max + 1);
    if (len > max)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "node pods: entries[%zu]: %s: longer than %zu bytes", i, what, max);
    if (!add_size(bytes, len + 1))
        return kgs_seterr(err, errlen, KGS_EINVAL, "node pods: too large");
    return 0;
}

static char *copy_str(char **cursor, const char *s) {
    size_t len = strlen(s) + 1;
    char *d = memcpy(*cursor, s, len);
    *cursor += len;
    return d;
}

static const char *or_empty(const char *s) {
    return s ? s : "";
}

int node_pods_new(const node_pod_entry_t *entries, size_t n, node_pods_t **out, char *err,
                  size_t errlen) {
    *out = NULL;
    if (n > NODE_PODS_MAX_ENTRIES)
        return kgs_seterr(err, errlen, KGS_EINVAL, "node pods: %zu entries, at most %u", n,
                          NODE_PODS_MAX_ENTRIES);
    if (n > 0 && !entries)
        return kgs_seterr(err, errlen, KGS_EINVAL, "node pods: entries missing");

    /* Layout: header | entries | pointer arrays | DRA arrays | strings ("" for error first). */
    size_t head = sizeof(node_pods_t);
    size_t entry_bytes = n * sizeof(node_pod_entry_t);
    size_t ptr_count = 0, dra_count = 0, str_bytes = 1;
    for (size_t i = 0; i < n; i++) {
        const node_pod_entry_t *e = &entries[i];
        int rc;
        if ((rc = check_str(e->namespace_, NODE_PODS_NAME_MAX, i, "namespace", &str_bytes, err,
                            errlen)) ||
            (rc = check_str(e->pod, NODE_PODS_NAME_MAX, i, "pod", &str_bytes, err, errlen)) ||
            (rc = check_str(e->container, NODE_PODS_NAME_MAX, i, "container", &str_bytes, err,
                            errlen)))
            return rc;
        if (e->device_count > NODE_PODS_MAX_DEVICES)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "node pods: entries[%zu]: %zu device ids, at most %u", i,
                              e->device_count, NODE_PODS_MAX_DEVICES);
        if (e->device_count > 0 && !e->device_ids)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "node pods: entries[%zu]: device ids missing", i);
        for (size_t d = 0; d < e->device_count; d++)
            if ((rc = check_str(e->device_ids[d], NODE_PODS_DEVICE_ID_MAX, i, "device id",
                                &str_bytes, err, errlen)))
                return rc;
        if (e->dra_count > NODE_PODS_MAX_DRA)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "node pods: entries[%zu]: %zu DRA devices, at most %u", i,
                              e->dra_count, NODE_PODS_MAX_DRA);
        if (e->dra_count > 0 && !e->dra)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "node pods: entries[%zu]: DRA devices missing", i);
        for (size_t d = 0; d < e->dra_count; d++) {
            const node_pod_dra_t *r = &e->dra[d];
            if ((rc = check_str(r->driver, NODE_PODS_DRA_NAME_MAX, i, "DRA driver", &str_bytes, err,
                                errlen)) ||
                (rc = check_str(r->pool, NODE_PODS_DRA_NAME_MAX, i, "DRA pool", &str_bytes, err,
                                errlen)) ||
                (rc = check_str(r->device, NODE_PODS_DRA_NAME_MAX, i, "DRA device", &str_bytes, err,
                                errlen)) ||
                (rc = check_str(or_empty(r->share_id), NODE_PODS_DRA_NAME_MAX, i, "DRA share id",
                                &str_bytes, err, errlen)) ||
                (rc = check_str(or_empty(r->uuid), NODE_PODS_DEVICE_ID_MAX, i, "DRA uuid",
                                &str_bytes, err, errlen)))
                return rc;
            if (!r->driver[0] || !r->device[0])
                return kgs_seterr(err, errlen, KGS_EINVAL,
                                  "node pods: entries[%zu]: DRA device %zu: empty %s", i, d,
                                  !r->driver[0] ? "driver" : "device name");
        }
        if (!add_size(&ptr_count, e->device_count) || !add_size(&dra_count, e->dra_count))
            return kgs_seterr(err, errlen, KGS_EINVAL, "node pods: too large");
    }
    size_t total = head;
    if (ptr_count > SIZE_MAX / sizeof(char *) || dra_count > SIZE_MAX / sizeof(node_pod_dra_t) ||
        !add_size(&total, entry_bytes) || !add_size(&total, ptr_count * sizeof(char *)) ||
        !add_size(&total, dra_count * sizeof(node_pod_dra_t)) || !add_size(&total, str_bytes))
        return kgs_seterr(err, errlen, KGS_EINVAL, "node pods: too large");

    char *block = calloc(1, total);
    if (!block)
        return kgs_seterr(err, errlen, KGS_ENOMEM, "node pods: out of memory");
    node_pods_t *p = (node_pods_t *)block;
    node_pod_entry_t *ents = n ? (node_pod_entry_t *)(block + head) : NULL;
    const char **ptrs = (const char **)(block + head + entry_bytes);
    node_pod_dra_t *dras =
        (node_pod_dra_t *)(block + head + entry_bytes + ptr_count * sizeof(char *));
    char *cursor = (char *)(dras + dra_count);
    p->known = true;
    p->error = copy_str(&cursor, "");
    for (size_t i = 0; i < n; i++) {
        const node_pod_entry_t *e = &entries[i];
        ents[i].namespace_ = copy_str(&cursor, e->namespace_);
        ents[i].pod = copy_str(&cursor, e->pod);
        ents[i].container = copy_str(&cursor, e->container);
        ents[i].device_count = e->device_count;
        ents[i].device_ids = e->device_count ? ptrs : NULL;
        for (size_t d = 0; d < e->device_count; d++)
            *ptrs++ = copy_str(&cursor, e->device_ids[d]);
        ents[i].dra_count = e->dra_count;
        ents[i].dra = e->dra_count ? dras : NULL;
        for (size_t d = 0; d < e->dra_count; d++) {
            const node_pod_dra_t *r = &e->dra[d];
            node_pod_dra_t *o = dras++;
            o->driver = copy_str(&cursor, r->driver);
            o->pool = copy_str(&cursor, r->pool);
            o->device = copy_str(&cursor, r->device);
            o->share_id = copy_str(&cursor, or_empty(r->share_id));
            o->uuid = copy_str(&cursor, or_empty(r->uuid));
            o->not_gpu = r->not_gpu && !o->uuid[0];
            if (!o->uuid[0] && !o->not_gpu)
                ents[i].dra_unresolved++;
        }
        p->dra_total += e->dra_count;
    }
    p->entries = ents;
    p->count = n;
    *out = p;
    return 0;
}

int node_pods_resolve(const node_pods_t *in, node_pods_resolve_fn resolve, void *user_data,
                      node_pods_t **out, char *err, size_t errlen) {
    *out = NULL;
    size_t n = in && in->known ? in->count : 0;
    if (!in || !in->known || in->dra_total == 0) {
        if (in && !in->known)
            return node_pods_new_unknown(in->error, out)
                       ? kgs_seterr(err, errlen, KGS_ENOMEM, "node pods: out of memory")
                       : 0;
        return node_pods_new(in ? in->entries : NULL, n, out, err, errlen);
    }
    size_t ids_total = 0;
    for (size_t i = 0; i < n; i++)
        ids_total += in->entries[i].device_count + in->entries[i].dra_count;
    node_pod_entry_t *ents = calloc(n ? n : 1, sizeof *ents);
    const char **ids = calloc(ids_total ? ids_total : 1, sizeof *ids);
    node_pod_dra_t *dras = calloc(in->dra_total, sizeof *dras);
    int rc;
    if (!ents || !ids || !dras) {
        rc = kgs_seterr(err, errlen, KGS_ENOMEM, "node pods: out of memory");
        goto out;
    }
    const char **idp = ids;
    node_pod_dra_t *dp = dras;
    for (size_t i = 0; i < n; i++) {
        const node_pod_entry_t *e = &in->entries[i];
        size_t resolved_before = 0;
        for (size_t d = 0; d < e->dra_count; d++)
            resolved_before += e->dra[d].uuid[0] != '\0';
        size_t plugin = e->device_count >= resolved_before ? e->device_count - resolved_before : 0;
        ents[i] = *e;
        ents[i].device_ids = idp;
        ents[i].dra = dp;
        for (size_t d = 0; d < plugin; d++)
            *idp++ = e->device_ids[d];
        for (size_t d = 0; d < e->dra_count; d++) {
            *dp = e->dra[d];
            const char *u = resolve ? resolve(user_data, dp->driver, dp->pool, dp->device) : NULL;
            dp->uuid = u ? u : "";
            dp->not_gpu = u && !u[0];
            if (dp->uuid[0])
                *idp++ = dp->uuid;
            dp++;
        }
        ents[i].device_count = (size_t)(idp - ents[i].device_ids);
    }
    rc = node_pods_new(ents, n, out, err, errlen);
out:
    free(dras);
    free(ids);
    free(ents);
    return rc;
}

int node_pods_new_unknown(const char *error, node_pods_t **out) {
    *out = NULL;
    if (!error)
        error = "";
    size_t len = strnlen(error, NODE_PODS_ERROR_MAX);
    char *block = calloc(1, sizeof(node_pods_t) + len + 1);
    if (!block)
        return KGS_ENOMEM;
    node_pods_t *p = (node_pods_t *)block;
    char *msg = block + sizeof(node_pods_t);
    memcpy(msg, error, len);
    msg[len] = '\0';
    p->known = false;
    p->error = msg;
    *out = p;
    return 0;
}

static bool dra_equal(const node_pod_dra_t *x, const node_pod_dra_t *y) {
    return strcmp(x->driver, y->driver) == 0 && strcmp(x->pool, y->pool) == 0 &&
           strcmp(x->device, y->device) == 0 && strcmp(x->share_id, y->share_id) == 0 &&
           strcmp(x->uuid, y->uuid) == 0 && x->not_gpu == y->not_gpu;
}

bool node_pods_equal(const node_pods_t *a, const node_pods_t *b) {
    if (!a || !b)
        return a == b;
    if (a->known != b->known || strcmp(a->error, b->error) != 0 || a->count != b->count ||
        a->dra_total != b->dra_total)
        return false;
    for (size_t i = 0; i < a->count; i++) {
        const node_pod_entry_t *x = &a->entries[i], *y = &b->entries[i];
        if (x->device_count != y->device_count || x->dra_count != y->dra_count ||
            strcmp(x->namespace_, y->namespace_) != 0 || strcmp(x->pod, y->pod) != 0 ||
            strcmp(x->container, y->container) != 0)
            return false;
        for (size_t d = 0; d < x->device_count; d++)
            if (strcmp(x->device_ids[d], y->device_ids[d]) != 0)
                return false;
        for (size_t d = 0; d < x->dra_count; d++)
            if (!dra_equal(&x->dra[d], &y->dra[d]))
                return false;
    }
    return true;
}

bool node_pods_resolved_from(const node_pods_t *r, const node_pods_t *sent) {
    if (!r || !sent)
        return r == sent;
    if (r->known != sent->known || strcmp(r->error, sent->error) != 0 || r->count != sent->count ||
        r->dra_total != sent->dra_total)
        return false;
    for (size_t i = 0; i < r->count; i++) {
        const node_pod_entry_t *x = &r->entries[i], *y = &sent->entries[i];
        size_t resolved = 0;
        for (size_t d = 0; d < x->dra_count; d++)
            resolved += x->dra[d].uuid[0] != '\0';
        if (x->dra_count != y->dra_count || x->device_count != y->device_count + resolved ||
            strcmp(x->namespace_, y->namespace_) != 0 || strcmp(x->pod, y->pod) != 0 ||
            strcmp(x->container, y->container) != 0)
            return false;
        for (size_t d = 0; d < y->device_count; d++)
            if (strcmp(x->device_ids[d], y->device_ids[d]) != 0)
                return false;
        for (size_t d = 0; d < x->dra_count; d++) {
            const node_pod_dra_t *a = &x->dra[d], *b = &y->dra[d];
            if (strcmp(a->driver, b->driver) != 0 || strcmp(a->pool, b->pool) != 0 ||
                strcmp(a->device, b->device) != 0 || strcmp(a->share_id, b->share_id) != 0 ||
                b->uuid[0] || b->not_gpu)
                return false;
        }
    }
    return true;
}

void node_pods_free(node_pods_t *p) {
    free(p);
}

/* Length of a device id without its time-slicing "::N" suffix. */
static size_t device_base_len(const char *id) {
    const char *sep = strstr(id, "::");
    return sep ? (size_t)(sep - id) : strlen(id);
}

static bool entry_holds(const node_pod_entry_t *e, const char *want, size_t want_len) {
    for (size_t d = 0; d < e->device_count; d++) {
        const char *id = e->device_ids[d];
        if (device_base_len(id) == want_len && memcmp(id, want, want_len) == 0)
            return true;
    }
    return false;
}

size_t node_pods_lookup(const node_pods_t *p, const char *device_id, const node_pod_entry_t **out,
                        size_t max) {
    if (!p || !p->known || !device_id)
        return 0;
    size_t want_len = device_base_len(device_id);
    size_t found = 0;
    for (size_t i = 0; i < p->count; i++) {
        if (!entry_holds(&p->entries[i], device_id, want_len))
            continue;
        if (found < max && out)
            out[found] = &p->entries[i];
        found++;
    }
    return found;
}
