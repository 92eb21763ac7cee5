/*
 * resource_slices.c - ResourceSlice decoding and the (driver, pool,
 * device) -> uuid index.
 *
 * DESIGN
 * Slices change rarely (a driver starting, MIG being repartitioned) and are
 * looked up on every snapshot an agent sends with DRA devices in it, so the
 * index keeps the slices in a plain array (found by name, linearly, on the
 * rare change; each slice one packed block of the strings lookups read)
 * and a device hash table (open addressing, FNV-1a over the
 * three names) rebuilt lazily by the first lookup after a change. A
 * cluster of 1,000 nodes with 8 GPUs and their MIG placements is some
 * 100,000 devices: one rebuild is a few milliseconds, a lookup a probe or
 * two.
 */
#include "kube/resource_slices.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amdgpu/amdgpu_parse.h"
#include "core/err.h"
#include "kube/kube_json.h"
#include "kube/kube_resource.h"
#include "kube/pod_map.h"

/* ---- decoding ------------------------------------------------------------------ */

/* A string field of a slice into out[cap] (kube_json_copy), the slice
 * named "resourceslice WHO" in messages. */
static int copy_field(const json_t *parent, const char *key, bool required, char *out, size_t cap,
                      const char *who, const char *what, char *err, size_t errlen) {
    char slice[KUBE_NAME_MAX + 16];
    snprintf(slice, sizeof slice, "resourceslice %s", who);
    return kube_json_copy(parent, key, required, out, cap, slice, what, err, errlen);
}

static bool uuid_is_gpu(const char *s) {
    return strncmp(s, "GPU-", 4) == 0 || strncmp(s, "MIG-", 4) == 0;
}

/* Attribute `name` of a device as a string: the key as it is (the driver's
 * own domain, or a fully qualified standard one), else "<driver>/<name>".
 * NULL when absent or not a string, or holding a NUL. */
static const char *string_attr(const json_t *attrs, const char *driver, const char *name,
                               size_t *len) {
    const json_t *a = json_object_get(attrs, name);
    if (!a) {
        char qualified[DRA_DRIVER_MAX + 1 + 32];
        if (snprintf(qualified, sizeof qualified, "%s/%s", driver, name) >= (int)sizeof qualified)
            return NULL;
        a = json_object_get(attrs, qualified);
    }
    const json_t *str = json_is_object(a) ? json_object_get(a, "string") : NULL;
    if (!json_is_string(str) || strlen(json_string_value(str)) != json_string_length(str))
        return NULL;
    *len = json_string_length(str);
    return json_string_value(str);
}

/*
 * AMD's DRA driver (gpu.amd.com, ROCm/k8s-gpu-dra-driver) names no NVML
 * UUID; it tells a device's kind by its "type" attribute and the GPU by its
 * PCI address (cmd/gpu-kubeletplugin/deviceinfo.go GetDevice, commits
 * 2622427 and c2b31bd; docs/driver-attributes.md, 06dbe58):
 * - type "amdgpu", a whole GPU (also an auto-partition SPX device): the
 *   standard "resource.kubernetes.io/pciBusID" in newer releases, "pciAddr"
 *   in older ones and on auto-partition devices. Written out as the
 *   normalised PCI address, which the aggregator matches to the GPU's
 *   pci_bus_id as it does the device plugin's ids.
 * - type "amdgpu-partition": a CPX/DPX partition. Its address is its
 *   parent's ("parentPciAddr" in older releases), shared by every partition
 *   of the GPU, so it cannot name the partition's own figures: written out
 *   as "amdgpu-partition:<address>/<partitionProfile>", a GPU the
 *   aggregator reports as a gap, never as the whole GPU.
 * Anything else ("vfio" passthrough functions) is not a GPU we read.
 * Returns true when the device is AMD's, with out filled: never "" (not a
 * GPU) for one, so a whole GPU without a readable address gets an id no
 * GPU has, and its holder is an error rather than left out.
 */
static bool amd_device_id(const json_t *attrs, const char *driver, char *out) {
    size_t n = 0;
    const char *type = string_attr(attrs, driver, "type", &n);
    bool whole = type && strcmp(type, "amdgpu") == 0;
    bool part = type && strcmp(type, "amdgpu-partition") == 0;
    if (!whole && !part)
        return false;
    static const char *const addr_keys[] = {"resource.kubernetes.io/pciBusID", "pciAddr",
                                            "parentPciAddr"};
    char bdf[AMDGPU_BDF_MAX] = "";
    for (size_t k = 0; k < sizeof addr_keys / sizeof addr_keys[0] && !bdf[0]; k++) {
        const char *a = string_attr(attrs, driver, addr_keys[k], &n);
        if (a && amdgpu_bdf_normalise(a, n, bdf) != 0)
            bdf[0] = '\0';
    }
    if (whole) {
        snprintf(out, DRA_UUID_MAX + 1, "%s", bdf[0] ? bdf : "amdgpu:no-pci-address");
        return true;
    }
    const char *profile = string_attr(attrs, driver, "partitionProfile", &n);
    if (!profile || n > 24 || strcspn(profile, "/ ") != n)
        profile = "";
    snprintf(out, DRA_UUID_MAX + 1, "%s%s/%s", POD_MAP_AMD_PARTITION_PREFIX, bdf[0] ? bdf : "?",
             profile);
    return true;
}

/* The device's GPU id: its "uuid" attribute (the driver's own domain, or
 * "<driver>/uuid") when it is an NVML UUID, else what amd_device_id makes
 * of an AMD device, else "" (not a GPU). */
static int device_uuid(const json_t *dev, const char *driver, char *out, const char *who, char *err,
                       size_t errlen) {
    out[0] = '\0';
    bool bad = false;
    const json_t *attrs = kube_json_object(dev, "attributes", &bad);
    if (bad)
        return kgs_seterr(err, errlen, KGS_EINVAL, "resourceslice %s: attributes: not an object",
                          who);
    if (!attrs)
        return 0;
    size_t n = 0;
    const char *uuid = string_attr(attrs, driver, "uuid", &n);
    if (uuid && n > DRA_UUID_MAX)
        return kgs_seterr(err, errlen, KGS_ERANGE,
                          "resourceslice %s: attributes.uuid: longer than %d bytes", who,
                          DRA_UUID_MAX);
    if (uuid && uuid_is_gpu(uuid)) {
        memcpy(out, uuid, n + 1);
        return 0;
    }
    /* AMD's driver has a "uuid" of its own in some releases (a name-based
     * UUID, not one a GPU reader reports): its type decides. */
    amd_device_id(attrs, driver, out);
    return 0;
}

void dra_slice_deinit(dra_slice_t *s) {
    if (!s)
        return;
    free(s->devices);
    s->devices = NULL;
    s->device_count = 0;
}

int dra_slice_from_json(const json_t *obj, dra_slice_t *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (!json_is_object(obj))
        return kgs_seterr(err, errlen, KGS_EINVAL, "resourceslice: not an object");
    bool bad = false;
    const json_t *meta = kube_json_object(obj, "metadata", &bad);
    const json_t *spec = kube_json_object(obj, "spec", &bad);
    if (bad || !meta)
        return kgs_seterr(err, errlen, KGS_EINVAL, "resourceslice: metadata: missing");
    int rc;
    if ((rc = copy_field(meta, "name", true, out->name, sizeof out->name, "?", "metadata.name", err,
                         errlen)))
        return rc;
    const char *who = out->name;
    if (!spec)
        return kgs_seterr(err, errlen, KGS_EINVAL, "resourceslice %s: spec: missing", who);
    const json_t *pool = kube_json_object(spec, "pool", &bad);
    if (bad || !pool)
        return kgs_seterr(err, errlen, KGS_EINVAL, "resourceslice %s: spec.pool: missing", who);
    if ((rc = copy_field(meta, "resourceVersion", true, out->resource_version,
                         sizeof out->resource_version, who, "metadata.resourceVersion", err,
                         errlen)) ||
        (rc = copy_field(spec, "driver", true, out->driver, sizeof out->driver, who, "spec.driver",
                         err, errlen)) ||
        (rc = copy_field(pool, "name", true, out->pool, sizeof out->pool, who, "spec.pool.name",
                         err, errlen)) ||
        (rc = copy_field(spec, "nodeName", false, out->node, sizeof out->node, who, "spec.nodeName",
                         err, errlen)))
        return rc;
    const json_t *gen = json_object_get(pool, "generation");
    if (gen && !json_is_null(gen) && !json_is_integer(gen))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "resourceslice %s: spec.pool.generation: not an integer", who);
    out->generation = gen && json_is_integer(gen) ? json_integer_value(gen) : 0;
    const json_t *devs = json_object_get(spec, "devices");
    if (!devs || json_is_null(devs))
        return 0;
    if (!json_is_array(devs))
        return kgs_seterr(err, errlen, KGS_EINVAL, "resourceslice %s: spec.devices: not an array",
                          who);
    size_t n = json_array_size(devs);
    if (n > DRA_SLICE_MAX_DEVICES)
        return kgs_seterr(err, errlen, KGS_ERANGE, "resourceslice %s: %zu devices, at most %d", who,
                          n, DRA_SLICE_MAX_DEVICES);
    if (n == 0)
        return 0;
    out->devices = calloc(n, sizeof *out->devices);
    if (!out->devices)
        return kgs_seterr(err, errlen, KGS_ENOMEM, "resourceslice %s: out of memory", who);
    for (size_t i = 0; i < n; i++) {
        const json_t *d = json_array_get(devs, i);
        dra_slice_device_t *o = &out->devices[i];
        if (!json_is_object(d)) {
            rc = kgs_seterr(err, errlen, KGS_EINVAL,
                            "resourceslice %s: spec.devices[%zu]: not an object", who, i);
            goto fail;
        }
        if ((rc = copy_field(d, "name", true, o->name, sizeof o->name, who, "spec.devices[].name",
                             err, errlen)) ||
            (rc = device_uuid(d, out->driver, o->uuid, who, err, errlen)))
            goto fail;
        out->device_count++;
    }
    return 0;
fail:
    dra_slice_deinit(out);
    return rc;
}

void dra_slice_list_deinit(dra_slice_list_t *l) {
    for (size_t i = 0; i < l->count; i++)
        dra_slice_deinit(&l->items[i]);
    free(l->items);
    l->items = NULL;
    l->count = 0;
}

int dra_slice_list_parse(const char *buf, size_t len, dra_slice_list_t *out, char *err,
                         size_t errlen) {
    memset(out, 0, sizeof *out);
    int rc;
    json_t *root =
        kube_json_load(buf, len, JSON_REJECT_DUPLICATES, "ResourceSliceList", err, errlen, &rc);
    if (!root)
        return rc;
    static const char *const kinds[] = {"ResourceSliceList", NULL};
    const json_t *items;
    if ((rc = kube_json_list_head(root, kinds, "ResourceSliceList", out->resource_version,
                                  sizeof out->resource_version, out->continue_token,
                                  sizeof out->continue_token, &items, err, errlen)))
        goto fail;
    size_t n = items ? json_array_size(items) : 0;
    out->items = calloc(n ? n : 1, sizeof *out->items);
    if (!out->items) {
        rc = kgs_seterr(err, errlen, KGS_ENOMEM, "ResourceSliceList: out of memory");
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        char why[256];
        dra_slice_t *s = &out->items[out->count];
        rc = dra_slice_from_json(json_array_get(items, i), s, why, sizeof why);
        if (rc == KGS_ERANGE) {
            dra_slice_deinit(s);
            if (out->skipped++ == 0)
                snprintf(out->skip_reason, sizeof out->skip_reason, "%s", why);
            continue;
        }
        if (rc) {
            dra_slice_deinit(s);
            kgs_seterr(err, errlen, rc, "ResourceSliceList: items[%zu]: %s", i, why);
            goto fail;
        }
        out->count++;
    }
    json_decref(root);
    return 0;
fail:
    dra_slice_list_deinit(out);
    json_decref(root);
    return rc;
}

int dra_slice_event_parse(const char *line, size_t len, kube_event_type_t *type, dra_slice_t *slice,
                          char *rv, size_t rvlen, int *error_code, char *err, size_t errlen) {
    if (slice)
        memset(slice, 0, sizeof *slice);
    if (rv && rvlen)
        rv[0] = '\0';
    json_t *root;
    const json_t *obj;
    char rvbuf[KUBE_RV_MAX + 1];
    int rc = kube_watch_envelope(line, len, &root, type, &obj, rvbuf, error_code, err, errlen);
    if (rc == 0 && obj) {
        dra_slice_t scratch;
        dra_slice_t *s = slice ? slice : &scratch;
        rc = dra_slice_from_json(obj, s, err, errlen);
        if (rc == 0)
            memcpy(rvbuf, s->resource_version, sizeof rvbuf);
        if (!slice || (rc && rc != KGS_ERANGE))
            dra_slice_deinit(s);
    }
    if (rc == 0 && *type != KUBE_EVENT_ERROR)
        rc = kube_watch_rv_out(rvbuf, rv, rvlen, err, errlen);
    json_decref(root);
    return rc;
}

/* ---- index --------------------------------------------------------------------- */

typedef struct {
    uint32_t slice; /* index into slices, +1; 0 = empty slot */
    uint32_t device;
} dra_slot_t;

/* A slice as the index keeps it: what lookups and change detection read,
 * with its devices and strings in one block. A dra_slice_t is some 900
 * bytes of fixed-size fields and each of its devices 129: for 500 nodes'
 * slices that was a megabyte, most of it unused bytes. */
typedef struct {
    const char *name, *uuid;
} idx_device_t;

typedef struct {
    void *block; /* owned: devices, then the strings */
    const char *name, *driver, *pool;
    int64_t generation;
    const idx_device_t *devices;
    size_t device_count;
} idx_slice_t;

struct dra_index {
    idx_slice_t *slices;
    size_t n, cap;
    char rv[KUBE_RV_MAX + 1];
    dra_slot_t *table; /* power-of-two size; rebuilt when dirty */
    size_t table_cap;
    size_t devices;
    bool dirty;
};

static char *pack(char **cursor, const char *str) {
    size_t n = strlen(str) + 1;
    char *at = *cursor;
    memcpy(at, str, n);
    *cursor += n;
    return at;
}

/* *out from s (borrowed). Returns 0 or KGS_ENOMEM. */
static int compact(const dra_slice_t *s, idx_slice_t *out) {
    size_t bytes = s->device_count * sizeof(idx_device_t) + strlen(s->name) + strlen(s->driver) +
                   strlen(s->pool) + 3;
    for (size_t i = 0; i < s->device_count; i++)
        bytes += strlen(s->devices[i].name) + strlen(s->devices[i].uuid) + 2;
    idx_device_t *devs = malloc(bytes);
    if (!devs)
        return KGS_ENOMEM;
    char *cursor = (char *)(devs + s->device_count);
    out->block = devs;
    out->name = pack(&cursor, s->name);
    out->driver = pack(&cursor, s->driver);
    out->pool = pack(&cursor, s->pool);
    out->generation = s->generation;
    for (size_t i = 0; i < s->device_count; i++) {
        devs[i].name = pack(&cursor, s->devices[i].name);
        devs[i].uuid = pack(&cursor, s->devices[i].uuid);
    }
    out->devices = devs;
    out->device_count = s->device_count;
    return 0;
}

int dra_index_new(dra_index_t **out) {
    *out = calloc(1, sizeof **out);
    return *out ? 0 : KGS_ENOMEM;
}

void dra_index_free(dra_index_t *x) {
    if (!x)
        return;
    for (size_t i = 0; i < x->n; i++)
        free(x->slices[i].block);
    free(x->slices);
    free(x->table);
    free(x);
}

static void set_rv(dra_index_t *x, const char *rv) {
    if (rv && rv[0])
        snprintf(x->rv, sizeof x->rv, "%s", rv);
}

int dra_index_replace_all(dra_index_t *x, dra_slice_t *slices, size_t n, const char *rv) {
    idx_slice_t *ns = calloc(n ? n : 1, sizeof *ns);
    if (!ns)
        return KGS_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if (compact(&slices[i], &ns[i]) != 0) {
            while (i > 0)
                free(ns[--i].block);
            free(ns);
            return KGS_ENOMEM;
        }
    }
    for (size_t i = 0; i < n; i++)
        dra_slice_deinit(&slices[i]); /* taken: copied into the index */
    for (size_t i = 0; i < x->n; i++)
        free(x->slices[i].block);
    free(x->slices);
    x->slices = ns;
    x->n = n;
    x->cap = n ? n : 1;
    x->rv[0] = '\0';
    set_rv(x, rv);
    x->dirty = true;
    return 0;
}

static size_t find_slice(const dra_index_t *x, const char *name) {
    for (size_t i = 0; i < x->n; i++)
        if (strcmp(x->slices[i].name, name) == 0)
            return i;
    return SIZE_MAX;
}

static bool same_slice(const idx_slice_t *a, const dra_slice_t *b) {
    if (strcmp(a->driver, b->driver) || strcmp(a->pool, b->pool) ||
        a->generation != b->generation || a->device_count != b->device_count)
        return false;
    for (size_t i = 0; i < a->device_count; i++)
        if (strcmp(a->devices[i].name, b->devices[i].name) ||
            strcmp(a->devices[i].uuid, b->devices[i].uuid))
            return false;
    return true;
}

int dra_index_apply(dra_index_t *x, kube_event_type_t type, dra_slice_t *slice, const char *rv,
                    bool *changed) {
    if (changed)
        *changed = false;
    if (type == KUBE_EVENT_BOOKMARK) {
        set_rv(x, rv);
        return 0;
    }
    if (type == KUBE_EVENT_ERROR || !slice || !slice->name[0])
        return KGS_EINVAL;
    size_t at = find_slice(x, slice->name);
    if (type == KUBE_EVENT_DELETED) {
        if (at != SIZE_MAX) {
            free(x->slices[at].block);
            x->slices[at] = x->slices[--x->n];
            x->dirty = true;
            if (changed)
                *changed = true;
        }
        dra_slice_deinit(slice);
        set_rv(x, rv);
        return 0;
    }
    if (at != SIZE_MAX && same_slice(&x->slices[at], slice)) {
        dra_slice_deinit(slice);
        set_rv(x, rv);
        return 0;
    }
    idx_slice_t put;
    if (compact(slice, &put) != 0)
        return KGS_ENOMEM;
    if (at == SIZE_MAX) {
        if (x->n == x->cap || !x->slices) {
            size_t cap = x->cap ? x->cap * 2 : 16;
            idx_slice_t *ns = realloc(x->slices, cap * sizeof *ns);
            if (!ns) {
                free(put.block);
                return KGS_ENOMEM;
            }
            x->slices = ns;
            x->cap = cap;
        }
        at = x->n++;
    } else {
        free(x->slices[at].block);
    }
    x->slices[at] = put;
    dra_slice_deinit(slice);
    x->dirty = true;
    if (changed)
        *changed = true;
    set_rv(x, rv);
    return 0;
}

static uint64_t key_hash(const char *driver, const char *pool, const char *device) {
    uint64_t h = UINT64_C(14695981039346656037);
    const char *parts[3] = {driver, pool, device};
    for (int p = 0; p < 3; p++) {
        for (const unsigned char *s = (const unsigned char *)parts[p]; *s; s++)
            h = (h ^ *s) * UINT64_C(1099511628211);
        h = (h ^ 0xff) * UINT64_C(1099511628211); /* separator: ("ab","c") != ("a","bc") */
    }
    return h;
}

static bool slot_is(const dra_index_t *x, dra_slot_t s, const char *driver, const char *pool,
                    const char *device) {
    const idx_slice_t *sl = &x->slices[s.slice - 1];
    return strcmp(sl->driver, driver) == 0 && strcmp(sl->pool, pool) == 0 &&
           strcmp(sl->devices[s.device].name, device) == 0;
}

static int rebuild(dra_index_t *x) {
    size_t total = 0;
    for (size_t i = 0; i < x->n; i++)
        total += x->slices[i].device_count;
    size_t cap = 16;
    while (cap < total * 2)
        cap *= 2;
    dra_slot_t *t = calloc(cap, sizeof *t);
    if (!t)
        return KGS_ENOMEM;
    free(x->table);
    x->table = t;
    x->table_cap = cap;
    x->devices = 0;
    for (size_t i = 0; i < x->n; i++) {
        const idx_slice_t *sl = &x->slices[i];
        for (size_t d = 0; d < sl->device_count; d++) {
            size_t h = (size_t)key_hash(sl->driver, sl->pool, sl->devices[d].name) & (cap - 1);
            while (t[h].slice && !slot_is(x, t[h], sl->driver, sl->pool, sl->devices[d].name))
                h = (h + 1) & (cap - 1);
            if (t[h].slice && x->slices[t[h].slice - 1].generation >= sl->generation)
                continue; /* the same device in an older or equal generation */
            if (!t[h].slice)
                x->devices++;
            t[h].slice = (uint32_t)i + 1;
            t[h].device = (uint32_t)d;
        }
    }
    x->dirty = false;
    return 0;
}

const char *dra_index_lookup(dra_index_t *x, const char *driver, const char *pool,
                             const char *device) {
    if (!x || !driver || !pool || !device)
        return NULL;
    if ((x->dirty || !x->table) && rebuild(x) != 0)
        return NULL;
    size_t h = (size_t)key_hash(driver, pool, device) & (x->table_cap - 1);
    while (x->table[h].slice) {
        if (slot_is(x, x->table[h], driver, pool, device))
            return x->slices[x->table[h].slice - 1].devices[x->table[h].device].uuid;
        h = (h + 1) & (x->table_cap - 1);
    }
    return NULL;
}

size_t dra_index_slice_count(const dra_index_t *x) {
    return x ? x->n : 0;
}

size_t dra_index_device_count(const dra_index_t *x) {
    if (!x)
        return 0;
    size_t total = 0;
    for (size_t i = 0; i < x->n; i++)
        total += x->slices[i].device_count;
    return total;
}

const char *dra_index_resource_version(const dra_index_t *x) {
    return x->rv;
}

/* ---- the watched resource "resourceslices" (kube_resource.h) ------------------- */

static int slices_state_new(void **out) {
    dra_index_t *x;
    int rc = dra_index_new(&x);
    *out = rc ? NULL : x;
    return rc;
}

static void slices_state_free(void *state) {
    dra_index_free(state);
}

static const char *slices_resource_version(const void *state) {
    return dra_index_resource_version(state);
}

static size_t slices_size(const void *state) {
    return dra_index_slice_count(state);
}

static void slices_describe(const void *state, char *out, size_t cap) {
    snprintf(out, cap, " (%zu devices)", dra_index_device_count(state));
}

static int slices_page_parse(const char *buf, size_t len, void **page, kube_page_info_t *info,
                             char *err, size_t errlen) {
    dra_slice_list_t *l = *page = malloc(sizeof *l);
    int rc = l ? dra_slice_list_parse(buf, len, l, err, errlen)
               : kgs_seterr(err, errlen, KGS_ENOMEM, "ResourceSliceList: out of memory");
    if (rc == 0)
        kube_page_info_set(info, l->count, l->skipped, l->skip_reason, l->resource_version,
                           l->continue_token);
    else {
        free(l);
        *page = NULL;
    }
    return rc;
}

static void slices_page_free(void *page) {
    if (!page)
        return;
    dra_slice_list_deinit(page);
    free(page);
}

/* A list being assembled: the slices of its pages so far, their devices
 * moved out of the pages. */
typedef struct {
    dra_slice_t *items;
    size_t n, cap;
} slice_acc_t;

static void slices_list_free(void *next) {
    slice_acc_t *a = next;
    if (!a)
        return;
    for (size_t i = 0; i < a->n; i++)
        dra_slice_deinit(&a->items[i]);
    free(a->items);
    free(a);
}

static int slices_list_add(void **next, void *page) {
    dra_slice_list_t *l = page;
    slice_acc_t *a = *next;
    if (!a && !(a = *next = calloc(1, sizeof *a))) {
        slices_page_free(l);
        return KGS_ENOMEM;
    }
    if (l->count > a->cap - a->n) {
        size_t cap = a->cap ? a->cap : 64;
        while (cap < a->n + l->count)
            cap *= 2;
        dra_slice_t *na = realloc(a->items, cap * sizeof *na);
        if (!na) {
            slices_page_free(l);
            return KGS_ENOMEM;
        }
        a->items = na;
        a->cap = cap;
    }
    for (size_t i = 0; i < l->count; i++) {
        a->items[a->n++] = l->items[i];
        l->items[i].devices = NULL; /* moved */
        l->items[i].device_count = 0;
    }
    slices_page_free(l);
    return 0;
}

static int slices_list_replace(void *state, void *next, const char *rv) {
    slice_acc_t *a = next;
    int rc = dra_index_replace_all(state, a->items, a->n, rv);
    slices_list_free(a); /* the devices moved into the index; keep no list-sized array */
    return rc;
}

static int slices_watch_event(void *state, const char *line, size_t len, kube_event_result_t *out,
                              char *err, size_t errlen) {
    dra_index_t *x = state;
    memset(out, 0, sizeof *out);
    dra_slice_t sl;
    char rv[KUBE_RV_MAX + 1];
    int rc = dra_slice_event_parse(line, len, &out->type, &sl, rv, sizeof rv, &out->error_code, err,
                                   errlen);
    if (rc == KGS_ERANGE && sl.name[0]) {
        /* Unrepresentable now: drop the old copy rather than keep stale devices. */
        out->skipped = true;
        dra_slice_t gone = sl;
        gone.devices = NULL;
        gone.device_count = 0;
        dra_slice_deinit(&sl);
        dra_index_apply(x, KUBE_EVENT_DELETED, &gone, NULL, &out->changed);
        return 0;
    }
    if (rc || out->type == KUBE_EVENT_ERROR)
        return rc;
    rc = dra_index_apply(x, out->type, &sl, rv, &out->changed);
    dra_slice_deinit(&sl);
    out->applying = rc != 0;
    return rc;
}

static dra_index_t *slices_dra_index(void *state) {
    return state;
}

const kube_resource_t kube_resource_resourceslices = {
    .name = "resourceslices",
    .path = "/apis/resource.k8s.io/v1/resourceslices",
    .state_new = slices_state_new,
    .state_free = slices_state_free,
    .resource_version = slices_resource_version,
    .size = slices_size,
    .describe = slices_describe,
    .page_parse = slices_page_parse,
    .page_free = slices_page_free,
    .list_add = slices_list_add,
    .list_free = slices_list_free,
    .list_replace = slices_list_replace,
    .watch_event = slices_watch_event,
    .pod_cache = NULL,
    .dra_index = slices_dra_index,
};
