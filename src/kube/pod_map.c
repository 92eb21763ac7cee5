/*
 * pod_map.c - device UUID -> holding containers, from a pod-resources List.
 *
 * DESIGN
 * Built in three passes over the decoded answer, which stays alive for the
 * duration of the call so the first two passes need no copies:
 *   1. count the (device, container) pairs that qualify (pod_map.h says which);
 *   2. collect them as pointers into the answer, sort by device then holder,
 *      and drop duplicates (a container holding replicas ::0 and ::1 of one
 *      GPU is one holder);
 *   3. copy the surviving strings into one arena and group the holders per
 *      device.
 * The result is a sorted array of devices, each pointing at a run of the
 * holder array, so a lookup is a binary search and the whole map is four
 * allocations whatever the cluster size. Sorting also makes the map (and
 * pod_map_foreach's order) independent of the order the kubelet lists pods
 * in, which pod_map_equal relies on.
 */
#include "kube/pod_map.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amdgpu/amdgpu_parse.h"
#include "core/err.h"

#define POD_MAP_UUID_BODY_MAX 90 /* NVML's UUID buffer is 96 bytes ("MIG-" + 90 + NUL fits) */
#define POD_MAP_REPLICA_DIGITS_MAX 9
#define POD_MAP_INDEX_DIGITS_MAX 4 /* an NVML index: 0 to 9999 */
#define POD_MAP_RESOURCE_PREFIX "nvidia.com/"
#define POD_MAP_AMD_RESOURCE_PREFIX "amd.com/"
#define POD_MAP_AMD_XCP_PREFIX "amdgpu_xcp_"
#define POD_MAP_AMD_XCP_DIGITS_MAX 6
#define POD_MAP_AMD_ID_MAX 72 /* "amdgpu-partition:" + an address + "/" + a profile */
#define POD_MAP_AMD_PROFILE_MAX 24

typedef struct {
    const char *uuid;
    size_t first; /* index of its first holder */
    size_t n;     /* >= 1 */
} pod_map_device_t;

struct pod_map {
    pod_map_device_t *devices; /* sorted by uuid */
    size_t n_devices;
    pod_holder_t *holders; /* grouped per device, each run sorted */
    size_t n_holders;
    char *strings;         /* arena every pointer above points into */
    pod_dra_holder_t *dra; /* sorted, duplicates dropped; strings in dra_strings */
    size_t n_dra;
    char *dra_strings;
};

/* A qualifying (device, container) pair, pointing into the decoded answer,
 * except an AMD PCI address, which is held normalised in bdf (uuid NULL:
 * qsort moves pairs, so a pointer into the pair itself would not survive). */
typedef struct {
    const char *uuid;
    size_t uuid_len; /* without the "::N" suffix */
    const char *ns, *pod, *container, *resource;
    char bdf[POD_MAP_AMD_ID_MAX]; /* a PCI address, or "amdgpu-partition:<address>/<profile>" */
} pod_map_pair_t;

static const char *pair_id(const pod_map_pair_t *p) {
    return p->uuid ? p->uuid : p->bdf;
}

static const char *str_or_empty(const char *s) {
    return s ? s : "";
}

typedef enum { VENDOR_NONE, VENDOR_NVIDIA, VENDOR_AMD } resource_vendor_t;

static bool has_prefix(const char *name, const char *prefix) {
    size_t n = strlen(prefix);
    return strncmp(name, prefix, n) == 0 && name[n] != '\0';
}

/* Which GPU device plugin registered resource `name`: NVIDIA's
 * ("nvidia.com/gpu", "nvidia.com/mig-3g.40gb") or AMD's ("amd.com/gpu"; with
 * --resource_naming_strategy=mixed the partition profile, "amd.com/cpx_nps4":
 * ROCm/k8s-device-plugin cmd/k8s-device-plugin/main.go getResourceList, tag
 * v1.31.0.10-16-ged76468). */
static resource_vendor_t resource_vendor(const char *name) {
    if (!name)
        return VENDOR_NONE;
    if (has_prefix(name, POD_MAP_RESOURCE_PREFIX))
        return VENDOR_NVIDIA;
    if (has_prefix(name, POD_MAP_AMD_RESOURCE_PREFIX))
        return VENDOR_AMD;
    return VENDOR_NONE;
}

/*
 * An AMD device plugin id. The plugin names a GPU by the basename of
 * /sys/module/amdgpu/drivers/pci:amdgpu/<dddd:bb:dd.f> (the kernel's
 * spelling: 4-digit domain, lower-case hex), and each further partition
 * of a partitioned MI300 by the basename of
 * /sys/devices/platform/amdgpu_xcp_<n> (internal/pkg/amdgpu/amdgpu.go,
 * GetAMDGPUs, same tag). A PCI address is normalised into p->bdf (a plugin
 * that ever dropped the domain or spelled it upper case still matches the
 * amdgpu reader's address); a partition id is kept as it is, for the
 * aggregator to report as a partition it cannot read. No replica suffix:
 * the plugin has no time-slicing ids.
 */
/* Whether AMD resource `name` ("amd.com/cpx_nps4") is a partition profile
 * that splits the GPU (CPX, DPX, QPX, TPX; SPX is the whole GPU): its
 * devices are partitions even where the id is the GPU's own address. */
static bool amd_resource_is_partition(const char *name, const char **profile) {
    *profile = name + strlen(POD_MAP_AMD_RESOURCE_PREFIX);
    static const char *const split[] = {"cpx_", "dpx_", "qpx_", "tpx_"};
    for (size_t i = 0; i < sizeof split / sizeof split[0]; i++)
        if (strncmp(*profile, split[i], 4) == 0)
            return strlen(*profile) <= POD_MAP_AMD_PROFILE_MAX;
    return false;
}

static bool amd_device_id_parse(const char *id, const char *resource, pod_map_pair_t *p) {
    if (!id)
        return false;
    size_t xn = strlen(POD_MAP_AMD_XCP_PREFIX);
    if (strncmp(id, POD_MAP_AMD_XCP_PREFIX, xn) == 0) {
        size_t i = xn;
        while (id[i] >= '0' && id[i] <= '9' && i - xn < POD_MAP_AMD_XCP_DIGITS_MAX)
            i++;
        if (i == xn || id[i] != '\0')
            return false;
        p->uuid = id;
        p->uuid_len = i;
        return true;
    }
    size_t n = strspn(id, "0123456789abcdefABCDEF:.");
    char bdf[AMDGPU_BDF_MAX];
    if (id[n] != '\0' || amdgpu_bdf_normalise(id, n, bdf) != 0)
        return false; /* the normaliser trims blanks; an id has none */
    /* Under a splitting profile's resource the address is the GPU's first
     * partition, not the GPU: named as the DRA driver's partitions are. */
    const char *profile;
    if (amd_resource_is_partition(resource, &profile))
        snprintf(p->bdf, sizeof p->bdf, "%s%s/%s", POD_MAP_AMD_PARTITION_PREFIX, bdf, profile);
    else
        memcpy(p->bdf, bdf, sizeof bdf);
    p->uuid = NULL;
    p->uuid_len = strlen(p->bdf);
    return true;
}

static bool uuid_char_ok(char ch) {
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
           ch == '-' || ch == '/';
}

/* "::<digits>" at id[i] (a time-slicing replica suffix), to the end. */
static bool replica_suffix_ok(const char *id, size_t i) {
    if (id[i] == '\0')
        return true;
    if (id[i] != ':' || id[i + 1] != ':')
        return false;
    size_t d = i + 2;
    while (id[d] >= '0' && id[d] <= '9' && d - (i + 2) < POD_MAP_REPLICA_DIGITS_MAX)
        d++;
    return d > i + 2 && id[d] == '\0';
}

/* Up to POD_MAP_INDEX_DIGITS_MAX digits at id[*i]; false when none. */
static bool index_digits(const char *id, size_t *i) {
    size_t start = *i;
    while (id[*i] >= '0' && id[*i] <= '9' && *i - start < POD_MAP_INDEX_DIGITS_MAX)
        (*i)++;
    return *i > start && !(id[*i] >= '0' && id[*i] <= '9');
}

/*
 * Accepts "GPU-<body>" / "MIG-<body>", and the index forms "<gpu>" and
 * "<gpu>:<mig>" (NVML indexes), each with an optional "::<digits>"
 * replica suffix; *uuid_len is the length without the suffix. Anything else
 * ("nvidia0", empty strings, stray bytes) is not a device we can attribute.
 */
static bool device_id_parse(const char *id, size_t *uuid_len) {
    if (!id)
        return false;
    if (id[0] >= '0' && id[0] <= '9') {
        size_t i = 0;
        if (!index_digits(id, &i))
            return false;
        if (id[i] == ':' && id[i + 1] != ':') {
            i++;
            if (!index_digits(id, &i))
                return false;
        }
        *uuid_len = i;
        return replica_suffix_ok(id, i);
    }
    if (strncmp(id, "GPU-", 4) != 0 && strncmp(id, "MIG-", 4) != 0)
        return false;
    size_t i = 4;
    while (id[i] && id[i] != ':') {
        if (!uuid_char_ok(id[i]) || i - 4 >= POD_MAP_UUID_BODY_MAX)
            return false;
        i++;
    }
    if (i == 4)
        return false;
    *uuid_len = i;
    return replica_suffix_ok(id, i);
}

bool pod_map_id_is_index(const char *device_id, unsigned *gpu, int *mig) {
    if (!device_id || !(device_id[0] >= '0' && device_id[0] <= '9'))
        return false;
    char *end = NULL;
    unsigned long g = strtoul(device_id, &end, 10);
    long m = -1;
    if (*end == ':') {
        const char *ms = end + 1;
        m = strtol(ms, &end, 10);
        if (end == ms)
            return false;
    }
    if (*end != '\0' || g > 9999 || m > 9999)
        return false;
    *gpu = (unsigned)g;
    *mig = (int)m;
    return true;
}

bool pod_map_id_is_amd_partition(const char *device_id) {
    return device_id &&
           (strncmp(device_id, POD_MAP_AMD_XCP_PREFIX, sizeof POD_MAP_AMD_XCP_PREFIX - 1) == 0 ||
            strncmp(device_id, POD_MAP_AMD_PARTITION_PREFIX,
                    sizeof POD_MAP_AMD_PARTITION_PREFIX - 1) == 0);
}

/* Calls fn for every qualifying pair; the one walk both passes share. */
typedef void (*pair_fn)(void *ud, const pod_map_pair_t *p);

static void walk_pairs(const V1__ListPodResourcesResponse *r, pair_fn fn, void *ud) {
    for (size_t i = 0; i < r->n_pod_resources; i++) {
        const V1__PodResources *pod = r->pod_resources ? r->pod_resources[i] : NULL;
        if (!pod || !pod->containers)
            continue;
        for (size_t j = 0; j < pod->n_containers; j++) {
            const V1__ContainerResources *ctr = pod->containers[j];
            if (!ctr || !ctr->devices)
                continue;
            for (size_t k = 0; k < ctr->n_devices; k++) {
                const V1__ContainerDevices *dev = ctr->devices[k];
                resource_vendor_t vendor = dev ? resource_vendor(dev->resource_name) : VENDOR_NONE;
                if (!dev || !dev->device_ids || vendor == VENDOR_NONE)
                    continue;
                for (size_t d = 0; d < dev->n_device_ids; d++) {
                    pod_map_pair_t p = {.ns = str_or_empty(pod->namespace_),
                                        .pod = str_or_empty(pod->name),
                                        .container = str_or_empty(ctr->name),
                                        .resource = dev->resource_name};
                    if (vendor == VENDOR_AMD) {
                        if (!amd_device_id_parse(dev->device_ids[d], dev->resource_name, &p))
                            continue;
                    } else {
                        if (!device_id_parse(dev->device_ids[d], &p.uuid_len))
                            continue;
                        p.uuid = dev->device_ids[d];
                    }
                    fn(ud, &p);
                }
            }
        }
    }
}

static void count_pair(void *ud, const pod_map_pair_t *p) {
    (void)p;
    (*(size_t *)ud)++;
}

typedef struct {
    pod_map_pair_t *pairs;
    size_t n;
} pair_collector_t;

static void collect_pair(void *ud, const pod_map_pair_t *p) {
    pair_collector_t *pc = ud;
    pc->pairs[pc->n++] = *p;
}

static int uuid_cmp(const pod_map_pair_t *a, const pod_map_pair_t *b) {
    size_t n = a->uuid_len < b->uuid_len ? a->uuid_len : b->uuid_len;
    int c = memcmp(pair_id(a), pair_id(b), n);
    if (c)
        return c;
    return (a->uuid_len > b->uuid_len) - (a->uuid_len < b->uuid_len);
}

/* Same device and same container: the second is a duplicate. */
static int holder_cmp(const pod_map_pair_t *a, const pod_map_pair_t *b) {
    int c = strcmp(a->ns, b->ns);
    if (!c)
        c = strcmp(a->pod, b->pod);
    if (!c)
        c = strcmp(a->container, b->container);
    return c;
}

static int pair_qsort_cmp(const void *va, const void *vb) {
    const pod_map_pair_t *a = va, *b = vb;
    int c = uuid_cmp(a, b);
    if (!c)
        c = holder_cmp(a, b);
    if (!c) /* a total order, so which duplicate survives is deterministic */
        c = strcmp(a->resource, b->resource);
    return c;
}

/* *acc += n, failing instead of wrapping. */
static bool add_ok(size_t *acc, size_t n) {
    if (n > SIZE_MAX - *acc)
        return false;
    *acc += n;
    return true;
}

static char *arena_put(char **cursor, const char *s, size_t len) {
    char *at = *cursor;
    memcpy(at, s, len);
    at[len] = '\0';
    *cursor += len + 1;
    return at;
}

/* ---- DRA devices ------------------------------------------------------------- */

static int dra_cmp(const void *va, const void *vb) {
    const pod_dra_holder_t *a = va, *b = vb;
    int c = strcmp(a->namespace_, b->namespace_);
    if (!c)
        c = strcmp(a->pod, b->pod);
    if (!c)
        c = strcmp(a->container, b->container);
    if (!c)
        c = strcmp(a->driver, b->driver);
    if (!c)
        c = strcmp(a->pool, b->pool);
    if (!c)
        c = strcmp(a->device, b->device);
    if (!c)
        c = strcmp(a->share_id, b->share_id);
    return c;
}

/* Walks every ClaimResource with a driver and a device name; fn NULL only
 * counts. Returns the number of pairs. */
static size_t walk_dra(const V1__ListPodResourcesResponse *r, pod_dra_holder_t *out) {
    size_t n = 0;
    for (size_t i = 0; i < r->n_pod_resources; i++) {
        const V1__PodResources *pod = r->pod_resources ? r->pod_resources[i] : NULL;
        if (!pod || !pod->containers)
            continue;
        for (size_t j = 0; j < pod->n_containers; j++) {
            const V1__ContainerResources *ctr = pod->containers[j];
            if (!ctr || !ctr->dynamic_resources)
                continue;
            for (size_t k = 0; k < ctr->n_dynamic_resources; k++) {
                const V1__DynamicResource *dr = ctr->dynamic_resources[k];
                if (!dr || !dr->claim_resources)
                    continue;
                for (size_t d = 0; d < dr->n_claim_resources; d++) {
                    const V1__ClaimResource *cr = dr->claim_resources[d];
                    /* Without a device name the resource is not a device
                     * (the proto leaves room for other kinds). */
                    if (!cr || !cr->driver_name || !cr->driver_name[0] || !cr->device_name ||
                        !cr->device_name[0])
                        continue;
                    if (out)
                        out[n] = (pod_dra_holder_t){
                            str_or_empty(pod->namespace_), str_or_empty(pod->name),
                            str_or_empty(ctr->name),       cr->driver_name,
                            str_or_empty(cr->pool_name),   cr->device_name,
                            str_or_empty(cr->share_id)};
                    n++;
                }
            }
        }
    }
    return n;
}

static int dra_build(const V1__ListPodResourcesResponse *r, pod_map_t *m, char *err,
                     size_t errlen) {
    size_t n = walk_dra(r, NULL);
    if (n == 0)
        return 0;
    if (n > SIZE_MAX / sizeof *m->dra)
        return kgs_seterr(err, errlen, KGS_ERANGE, "pod map: %zu DRA devices is too many", n);
    pod_dra_holder_t *tmp = malloc(n * sizeof *tmp);
    if (!tmp)
        return kgs_seterr(err, errlen, KGS_ENOMEM, "pod map: out of memory");
    walk_dra(r, tmp);
    qsort(tmp, n, sizeof *tmp, dra_cmp);
    size_t kept = 0, bytes = 0;
    for (size_t i = 0; i < n; i++) {
        if (kept && dra_cmp(&tmp[kept - 1], &tmp[i]) == 0)
            continue;
        tmp[kept++] = tmp[i];
        const pod_dra_holder_t *h = &tmp[i];
        const char *f[] = {h->namespace_, h->pod,    h->container, h->driver,
                           h->pool,       h->device, h->share_id};
        for (size_t k = 0; k < sizeof f / sizeof f[0]; k++)
            if (!add_ok(&bytes, strlen(f[k]) + 1)) {
                free(tmp);
                return kgs_seterr(err, errlen, KGS_ERANGE, "pod map: the answer is too large");
            }
    }
    m->dra = malloc(kept * sizeof *m->dra);
    m->dra_strings = malloc(bytes ? bytes : 1);
    if (!m->dra || !m->dra_strings) {
        free(tmp);
        return kgs_seterr(err, errlen, KGS_ENOMEM, "pod map: out of memory");
    }
    char *cur = m->dra_strings;
    for (size_t i = 0; i < kept; i++) {
        const pod_dra_holder_t *h = &tmp[i];
        m->dra[i] = (pod_dra_holder_t){arena_put(&cur, h->namespace_, strlen(h->namespace_)),
                                       arena_put(&cur, h->pod, strlen(h->pod)),
                                       arena_put(&cur, h->container, strlen(h->container)),
                                       arena_put(&cur, h->driver, strlen(h->driver)),
                                       arena_put(&cur, h->pool, strlen(h->pool)),
                                       arena_put(&cur, h->device, strlen(h->device)),
                                       arena_put(&cur, h->share_id, strlen(h->share_id))};
    }
    m->n_dra = kept;
    free(tmp);
    return 0;
}

size_t pod_map_dra_count(const pod_map_t *m) {
    return m ? m->n_dra : 0;
}

int pod_map_foreach_dra(const pod_map_t *m, pod_map_dra_cb visit, void *user_data) {
    if (!m || !visit)
        return 0;
    for (size_t i = 0; i < m->n_dra; i++) {
        int rc = visit(user_data, &m->dra[i]);
        if (rc)
            return rc;
    }
    return 0;
}

pod_map_t *pod_map_new_empty(void) {
    return calloc(1, sizeof(pod_map_t));
}

int pod_map_from_response(const V1__ListPodResourcesResponse *r, pod_map_t **out, char *err,
                          size_t errlen) {
    if (out)
        *out = NULL;
    if (!r || !out)
        return kgs_seterr(err, errlen, KGS_EINVAL, "pod map: %s is NULL", !r ? "response" : "out");
    int rc;
    pod_map_pair_t *pairs = NULL;
    pod_map_t *m = NULL;

    size_t n_pairs = 0;
    walk_pairs(r, count_pair, &n_pairs);
    m = pod_map_new_empty();
    if (!m)
        goto nomem;
    if ((rc = dra_build(r, m, err, errlen)))
        goto fail;
    if (n_pairs == 0) {
        *out = m;
        return 0;
    }
    if (n_pairs > SIZE_MAX / sizeof *pairs) {
        rc = kgs_seterr(err, errlen, KGS_ERANGE, "pod map: %zu devices is too many", n_pairs);
        goto fail;
    }
    pairs = malloc(n_pairs * sizeof *pairs);
    if (!pairs)
        goto nomem;
    pair_collector_t pc = {pairs, 0};
    walk_pairs(r, collect_pair, &pc);
    qsort(pairs, n_pairs, sizeof *pairs, pair_qsort_cmp);

    /* Drop duplicates in place; count devices and string bytes. */
    size_t kept = 0, n_devices = 0, bytes = 0;
    for (size_t i = 0; i < n_pairs; i++) {
        bool new_device = kept == 0 || uuid_cmp(&pairs[kept - 1], &pairs[i]) != 0;
        if (!new_device && holder_cmp(&pairs[kept - 1], &pairs[i]) == 0)
            continue;
        pairs[kept] = pairs[i];
        const pod_map_pair_t *p = &pairs[kept++];
        bool ok = add_ok(&bytes, strlen(p->ns) + 1) && add_ok(&bytes, strlen(p->pod) + 1) &&
                  add_ok(&bytes, strlen(p->container) + 1) &&
                  add_ok(&bytes, strlen(p->resource) + 1);
        if (new_device) {
            n_devices++;
            ok = ok && add_ok(&bytes, p->uuid_len + 1);
        }
        if (!ok) {
            rc = kgs_seterr(err, errlen, KGS_ERANGE, "pod map: the answer is too large");
            goto fail;
        }
    }

    m->devices = malloc(n_devices * sizeof *m->devices);
    m->holders = malloc(kept * sizeof *m->holders); /* kept <= n_pairs: no overflow */
    m->strings = malloc(bytes);
    if (!m->devices || !m->holders || !m->strings)
        goto nomem;
    char *cursor = m->strings;
    for (size_t i = 0; i < kept; i++) {
        const pod_map_pair_t *p = &pairs[i];
        if (i == 0 || uuid_cmp(&pairs[i - 1], p) != 0) {
            pod_map_device_t *d = &m->devices[m->n_devices++];
            d->uuid = arena_put(&cursor, pair_id(p), p->uuid_len);
            d->first = i;
            d->n = 0;
        }
        m->devices[m->n_devices - 1].n++;
        pod_holder_t *h = &m->holders[m->n_holders++];
        h->namespace_ = arena_put(&cursor, p->ns, strlen(p->ns));
        h->pod = arena_put(&cursor, p->pod, strlen(p->pod));
        h->container = arena_put(&cursor, p->container, strlen(p->container));
        h->resource_name = arena_put(&cursor, p->resource, strlen(p->resource));
    }
    free(pairs);
    *out = m;
    return 0;

nomem:
    rc = kgs_seterr(err, errlen, KGS_ENOMEM, "pod map: out of memory");
fail:
    free(pairs);
    pod_map_free(m);
    return rc;
}

static int device_search_cmp(const void *key, const void *elem) {
    return strcmp(key, ((const pod_map_device_t *)elem)->uuid);
}

int pod_map_lookup(const pod_map_t *m, const char *device_uuid, const pod_holder_t **holders,
                   size_t *n) {
    if (holders)
        *holders = NULL;
    if (n)
        *n = 0;
    if (!m || !device_uuid || !holders || !n)
        return KGS_EINVAL;
    if (m->n_devices == 0)
        return KGS_ENOTFOUND;
    const pod_map_device_t *d =
        bsearch(device_uuid, m->devices, m->n_devices, sizeof *m->devices, device_search_cmp);
    if (!d)
        return KGS_ENOTFOUND;
    *holders = &m->holders[d->first];
    *n = d->n;
    return 0;
}

size_t pod_map_device_count(const pod_map_t *m) {
    return m ? m->n_devices : 0;
}

int pod_map_foreach(const pod_map_t *m, pod_map_visit_cb visit, void *user_data) {
    if (!m || !visit)
        return 0;
    for (size_t i = 0; i < m->n_devices; i++) {
        const pod_map_device_t *d = &m->devices[i];
        int rc = visit(user_data, d->uuid, &m->holders[d->first], d->n);
        if (rc)
            return rc;
    }
    return 0;
}

bool pod_map_equal(const pod_map_t *a, const pod_map_t *b) {
    if (!a || !b)
        return a == b;
    if (a->n_devices != b->n_devices || a->n_holders != b->n_holders || a->n_dra != b->n_dra)
        return false;
    for (size_t i = 0; i < a->n_dra; i++)
        if (dra_cmp(&a->dra[i], &b->dra[i]) != 0)
            return false;
    for (size_t i = 0; i < a->n_devices; i++)
        if (a->devices[i].n != b->devices[i].n || strcmp(a->devices[i].uuid, b->devices[i].uuid))
            return false;
    for (size_t i = 0; i < a->n_holders; i++) {
        const pod_holder_t *x = &a->holders[i], *y = &b->holders[i];
        if (strcmp(x->namespace_, y->namespace_) || strcmp(x->pod, y->pod) ||
            strcmp(x->container, y->container) || strcmp(x->resource_name, y->resource_name))
            return false;
    }
    return true;
}

void pod_map_free(pod_map_t *m) {
    if (!m)
        return;
    free(m->devices);
    free(m->holders);
    free(m->strings);
    free(m->dra);
    free(m->dra_strings);
    free(m);
}
