/*
 * snapshot_codec.c - snapshot_t <-> kgs.cluster.v1.NodeSnapshot.
 *
 * DESIGN
 * - The encoder builds the protobuf-c message on the heap around borrowed
 *   strings (no copies of the snapshot's text), packs it once and frees the
 *   scaffolding. Absent fields are sent as 0, so two encodings of the same
 *   snapshot are byte-identical whatever stale values a record held.
 * - The decoder trusts nothing: the bytes come from another machine. It
 *   unpacks with an allocator that notices malloc failures (protobuf-c
 *   returns NULL for both "malformed" and "out of memory"), checks every
 *   bound and cross-reference before calling snapshot_new(), and then
 *   fills the snapshot field by field. Integer fields must arrive as
 *   integral doubles in range; nothing out of range is clamped silently.
 * - GPU indexes are looked up through a sorted copy, so duplicate
 *   detection and MIG parent lookups stay O(n log n) for hostile inputs
 *   with thousands of records.
 * - Each record's `values` is one double per gpu_field_t. A newer agent may
 *   append fields to the enum without changing the protocol version; this
 *   build drops the valid bits (and values) of fields it does not know.
 */
#include "cluster/snapshot_codec.h"

#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "proto/cluster.pb-c.h"

_Static_assert(GPU_F_COUNT == 18, "new gpu_field_t: extend field_kind/gpu_get/gpu_put");
_Static_assert(GPU_F_COUNT <= 32, "valid bits are a uint32");

#define MAX_GPUS 4096u /* snapshot_new's limits */
#define MAX_MIGS (4096u * 8u)
#define MAX_VALUES 32u /* one per valid bit */
#define DEC "decode NodeSnapshot: "

/* ---- field values ---------------------------------------------------------------- */

typedef enum { KIND_U32, KIND_I32, KIND_U64, KIND_F64 } field_kind_t;

static field_kind_t field_kind(gpu_field_t f) {
    switch (f) {
    case GPU_F_GPU_UTIL:
    case GPU_F_MEM_UTIL:
    case GPU_F_SM_CLOCK:
        return KIND_U32;
    case GPU_F_TEMPERATURE:
        return KIND_I32;
    case GPU_F_MEM_USED:
    case GPU_F_MEM_TOTAL:
    case GPU_F_MEM_RESERVED:
    case GPU_F_ENERGY:
    case GPU_F_PCIE_TX:
    case GPU_F_PCIE_RX:
    case GPU_F_CLOCK_EVENT_REASONS:
        return KIND_U64;
    default:
        return KIND_F64;
    }
}

static double gpu_get(const gpu_record_t *g, gpu_field_t f) {
    switch (f) {
    case GPU_F_GPU_UTIL:
        return g->gpu_util_pct;
    case GPU_F_MEM_UTIL:
        return g->mem_util_pct;
    case GPU_F_MEM_USED:
        return (double)g->memory_used_bytes;
    case GPU_F_MEM_TOTAL:
        return (double)g->memory_total_bytes;
    case GPU_F_MEM_RESERVED:
        return (double)g->memory_reserved_bytes;
    case GPU_F_TEMPERATURE:
        return g->temperature_c;
    case GPU_F_POWER:
        return g->power_w;
    case GPU_F_POWER_LIMIT:
        return g->power_limit_w;
    case GPU_F_ENERGY:
        return (double)g->energy_mj;
    case GPU_F_PCIE_TX:
        return (double)g->pcie_tx_bytes_per_s;
    case GPU_F_PCIE_RX:
        return (double)g->pcie_rx_bytes_per_s;
    case GPU_F_NVLINK_TX:
        return g->nvlink_tx_bytes_per_s;
    case GPU_F_NVLINK_RX:
        return g->nvlink_rx_bytes_per_s;
    case GPU_F_SM_CLOCK:
        return g->sm_clock_mhz;
    case GPU_F_CLOCK_EVENT_REASONS:
        return (double)g->clock_event_reasons;
    case GPU_F_SM_ACTIVE:
        return g->sm_active_pct;
    case GPU_F_SM_OCCUPANCY:
        return g->sm_occupancy_pct;
    case GPU_F_DRAM_BW_UTIL:
        return g->dram_bw_util_pct;
    case GPU_F_COUNT:
        break;
    }
    return 0;
}

/* A value already checked by value_check(). */
static uint64_t to_u64(double v) {
    return v >= 0x1p64 ? UINT64_MAX : (uint64_t)v;
}

static void gpu_put(gpu_record_t *g, gpu_field_t f, double v) {
    switch (f) {
    case GPU_F_GPU_UTIL:
        g->gpu_util_pct = (unsigned)v;
        break;
    case GPU_F_MEM_UTIL:
        g->mem_util_pct = (unsigned)v;
        break;
    case GPU_F_MEM_USED:
        g->memory_used_bytes = to_u64(v);
        break;
    case GPU_F_MEM_TOTAL:
        g->memory_total_bytes = to_u64(v);
        break;
    case GPU_F_MEM_RESERVED:
        g->memory_reserved_bytes = to_u64(v);
        break;
    case GPU_F_TEMPERATURE:
        g->temperature_c = (int)v;
        break;
    case GPU_F_POWER:
        g->power_w = v;
        break;
    case GPU_F_POWER_LIMIT:
        g->power_limit_w = v;
        break;
    case GPU_F_ENERGY:
        g->energy_mj = to_u64(v);
        break;
    case GPU_F_PCIE_TX:
        g->pcie_tx_bytes_per_s = to_u64(v);
        break;
    case GPU_F_PCIE_RX:
        g->pcie_rx_bytes_per_s = to_u64(v);
        break;
    case GPU_F_NVLINK_TX:
        g->nvlink_tx_bytes_per_s = v;
        break;
    case GPU_F_NVLINK_RX:
        g->nvlink_rx_bytes_per_s = v;
        break;
    case GPU_F_SM_CLOCK:
        g->sm_clock_mhz = (unsigned)v;
        break;
    case GPU_F_CLOCK_EVENT_REASONS:
        g->clock_event_reasons = to_u64(v);
        break;
    case GPU_F_SM_ACTIVE:
        g->sm_active_pct = v;
        break;
    case GPU_F_SM_OCCUPANCY:
        g->sm_occupancy_pct = v;
        break;
    case GPU_F_DRAM_BW_UTIL:
        g->dram_bw_util_pct = v;
        break;
    case GPU_F_COUNT:
        break;
    }
}

static double mig_get(const mig_record_t *m, gpu_field_t f) {
    switch (f) {
    case GPU_F_MEM_USED:
        return (double)m->memory_used_bytes;
    case GPU_F_MEM_TOTAL:
        return (double)m->memory_total_bytes;
    case GPU_F_SM_ACTIVE:
        return m->sm_active_pct;
    case GPU_F_SM_OCCUPANCY:
        return m->sm_occupancy_pct;
    case GPU_F_DRAM_BW_UTIL:
        return m->dram_bw_util_pct;
    default:
        return 0;
    }
}

static void mig_put(mig_record_t *m, gpu_field_t f, double v) {
    switch (f) {
    case GPU_F_MEM_USED:
        m->memory_used_bytes = to_u64(v);
        break;
    case GPU_F_MEM_TOTAL:
        m->memory_total_bytes = to_u64(v);
        break;
    case GPU_F_SM_ACTIVE:
        m->sm_active_pct = v;
        break;
    case GPU_F_SM_OCCUPANCY:
        m->sm_occupancy_pct = v;
        break;
    case GPU_F_DRAM_BW_UTIL:
        m->dram_bw_util_pct = v;
        break;
    default:
        break;
    }
}

/* NULL when v can be stored in field f, else the reason. */
static const char *value_check(gpu_field_t f, double v) {
    if (!isfinite(v))
        return "not finite";
    field_kind_t k = field_kind(f);
    if (k == KIND_F64)
        return NULL;
    if (v != floor(v))
        return "not an integer";
    switch (k) {
    case KIND_U32:
        return v < 0 || v > (double)UINT_MAX ? "out of range" : NULL;
    case KIND_I32:
        return v < (double)INT_MIN || v > (double)INT_MAX ? "out of range" : NULL;
    default: /* KIND_U64: 2^64 is what UINT64_MAX encodes as */
        return v < 0 || v > 0x1p64 ? "out of range" : NULL;
    }
}

/* ---- encode ------------------------------------------------------------------------ */

int snapshot_codec_encode(const snapshot_t *s, const node_pods_t *pods, mono_ns_t now,
                          uint32_t sample_interval_ms, uint8_t **out, size_t *len, char *err,
                          size_t errlen) {
    *out = NULL;
    *len = 0;
    int rc = KGS_ENOMEM;
    size_t ng = s->gpu_count, nm = s->mig_total;
    size_t np = pods && pods->known ? pods->count : 0;
    Kgs__Cluster__V1__Gpu *gm = calloc(ng ? ng : 1, sizeof *gm);
    Kgs__Cluster__V1__Gpu **gp = calloc(ng ? ng : 1, sizeof *gp);
    Kgs__Cluster__V1__MigInstance *mm = calloc(nm ? nm : 1, sizeof *mm);
    Kgs__Cluster__V1__MigInstance **mp = calloc(nm ? nm : 1, sizeof *mp);
    double *vals = calloc((ng + nm) ? (ng + nm) * GPU_F_COUNT : 1, sizeof *vals);
    int32_t *codes = calloc((ng + nm) ? (ng + nm) * GPU_F_COUNT : 1, sizeof *codes);
    Kgs__Cluster__V1__PodDevices *pm = calloc(np ? np : 1, sizeof *pm);
    Kgs__Cluster__V1__PodDevices **pp = calloc(np ? np : 1, sizeof *pp);
    size_t nd = pods && pods->known ? pods->dra_total : 0;
    Kgs__Cluster__V1__DraDevice *dm = calloc(nd ? nd : 1, sizeof *dm);
    Kgs__Cluster__V1__DraDevice **dp = calloc(nd ? nd : 1, sizeof *dp);
    if (!gm || !gp || !mm || !mp || !vals || !codes || !pm || !pp || !dm || !dp) {
        kgs_seterr(err, errlen, KGS_ENOMEM, "encode NodeSnapshot: out of memory");
        goto out;
    }

    Kgs__Cluster__V1__NodeSnapshot msg = KGS__CLUSTER__V1__NODE_SNAPSHOT__INIT;
    msg.protocol_version = SNAPSHOT_CODEC_PROTOCOL_VERSION;
    msg.node = (char *)s->node_name;
    msg.seq = s->seq;
    msg.taken_wall_ms = s->taken_wall_ms;
    msg.age_ms = now > s->taken_mono ? (now - s->taken_mono) / NS_PER_MS : 0;
    msg.sample_interval_ms = sample_interval_ms;
    msg.nvml_up = s->status == SNAPSHOT_OK;
    msg.nvml_code = s->nvml_code;
    msg.nvml_error = (char *)s->error;
    msg.driver_version = (char *)s->driver_version;

    for (size_t i = 0; i < ng; i++) {
        const gpu_record_t *g = &s->gpus[i];
        Kgs__Cluster__V1__Gpu *o = &gm[i];
        kgs__cluster__v1__gpu__init(o);
        o->index = g->index;
        o->uuid = (char *)g->uuid;
        o->name = (char *)g->name;
        o->pci_bus_id = (char *)g->pci_bus_id;
        o->valid = g->valid & ((1u << GPU_F_COUNT) - 1u);
        o->n_values = GPU_F_COUNT;
        o->values = &vals[i * GPU_F_COUNT];
        o->n_field_errors = GPU_F_COUNT;
        o->field_errors = &codes[i * GPU_F_COUNT];
        for (unsigned f = 0; f < GPU_F_COUNT; f++) {
            if ((o->valid >> f) & 1u)
                o->values[f] = gpu_get(g, (gpu_field_t)f);
            o->field_errors[f] = g->field_error[f];
        }
        o->health = (Kgs__Cluster__V1__Health)g->health;
        o->health_nvml_code = g->health_nvml_code;
        o->mig_enabled = g->mig_enabled;
        gp[i] = o;
    }
    msg.n_gpus = ng;
    msg.gpus = gp;

    for (size_t i = 0; i < nm; i++) {
        const mig_record_t *m = &s->mig[i];
        Kgs__Cluster__V1__MigInstance *o = &mm[i];
        kgs__cluster__v1__mig_instance__init(o);
        o->parent_index = m->parent_index;
        o->uuid = (char *)m->uuid;
        o->name = (char *)m->name;
        o->profile = (char *)m->profile;
        o->gpu_instance_id = m->gpu_instance_id;
        o->compute_instance_id = m->compute_instance_id;
        o->ids_valid = m->ids_valid;
        o->valid = m->valid & SNAPSHOT_CODEC_MIG_FIELDS;
        o->n_values = GPU_F_COUNT;
        o->values = &vals[(ng + i) * GPU_F_COUNT];
        o->n_field_errors = GPU_F_COUNT;
        o->field_errors = &codes[(ng + i) * GPU_F_COUNT];
        for (unsigned f = 0; f < GPU_F_COUNT; f++) {
            if ((o->valid >> f) & 1u)
                o->values[f] = mig_get(m, (gpu_field_t)f);
            o->field_errors[f] = m->field_error[f];
        }
        mp[i] = o;
    }
    msg.n_migs = nm;
    msg.migs = mp;

    size_t di = 0;
    for (size_t i = 0; i < np; i++) {
        const node_pod_entry_t *e = &pods->entries[i];
        Kgs__Cluster__V1__PodDevices *o = &pm[i];
        kgs__cluster__v1__pod_devices__init(o);
        o->namespace_ = (char *)e->namespace_;
        o->pod = (char *)e->pod;
        o->container = (char *)e->container;
        o->n_device_ids = e->device_count;
        o->device_ids = (char **)e->device_ids; /* read only by pack */
        /* Only the kubelet's names travel: a resolved uuid is the
         * aggregator's own, and an agent never has one. */
        o->n_dra = e->dra_count;
        o->dra = dp + di;
        for (size_t d = 0; d < e->dra_count && di < nd; d++, di++) {
            Kgs__Cluster__V1__DraDevice *r = &dm[di];
            kgs__cluster__v1__dra_device__init(r);
            r->driver = (char *)e->dra[d].driver;
            r->pool = (char *)e->dra[d].pool;
            r->device = (char *)e->dra[d].device;
            r->share_id = (char *)e->dra[d].share_id;
            dp[di] = r;
        }
        pp[i] = o;
    }
    msg.n_pods = np;
    msg.pods = pp;
    msg.pods_known = pods && pods->known;
    msg.pods_error = (char *)(pods && !pods->known && pods->error ? pods->error : "");

    size_t n = kgs__cluster__v1__node_snapshot__get_packed_size(&msg);
    if (n > SNAPSHOT_CODEC_MAX_BYTES) {
        rc = kgs_seterr(err, errlen, KGS_ERANGE, "encode NodeSnapshot: %zu bytes, at most %u", n,
                        SNAPSHOT_CODEC_MAX_BYTES);
        goto out;
    }
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        kgs_seterr(err, errlen, KGS_ENOMEM, "encode NodeSnapshot: out of memory");
        goto out;
    }
    kgs__cluster__v1__node_snapshot__pack(&msg, buf);
    *out = buf;
    *len = n;
    rc = 0;
out:
    free(dp);
    free(dm);
    free(pp);
    free(pm);
    free(codes);
    free(vals);
    free(mp);
    free(mm);
    free(gp);
    free(gm);
    return rc;
}

/* ---- decode ------------------------------------------------------------------------ */

typedef struct {
    bool failed;
} pb_alloc_state_t;

static void *pb_alloc(void *ud, size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p)
        ((pb_alloc_state_t *)ud)->failed = true;
    return p;
}

static void pb_free(void *ud, void *p) {
    (void)ud;
    free(p);
}

typedef struct {
    unsigned index;
    unsigned pos;
} index_slot_t;

static int cmp_slot(const void *a, const void *b) {
    const index_slot_t *x = a, *y = b;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Checks that a string fits a char[cap] field. */
static int check_str(const char *s, size_t cap, const char *where, const char *what, char *err,
                     size_t errlen) {
    size_t n = strnlen(s, cap);
    if (n >= cap)
        return kgs_seterr(err, errlen, KGS_EINVAL, DEC "%s%s: longer than %zu bytes", where, what,
                          cap - 1);
    return 0;
}

/*
 * Validates one record's valid bits, values and codes. On success *valid
 * gets the bits to keep (unknown fields dropped). `allowed` is the set of
 * known fields the record type can carry.
 */
static int check_values(uint32_t valid_in, size_t n_values, const double *values, size_t n_codes,
                        const int32_t *codes, uint32_t allowed, const char *where, uint32_t *valid,
                        char *err, size_t errlen) {
    if (n_values > MAX_VALUES)
        return kgs_seterr(err, errlen, KGS_EINVAL, DEC "%s%zu values, at most %u", where, n_values,
                          MAX_VALUES);
    if (n_codes > MAX_VALUES)
        return kgs_seterr(err, errlen, KGS_EINVAL, DEC "%s%zu field_errors, at most %u", where,
                          n_codes, MAX_VALUES);
    uint32_t v = valid_in & ((1u << GPU_F_COUNT) - 1u);
    for (unsigned f = 0; f < GPU_F_COUNT; f++) {
        if (!((v >> f) & 1u))
            continue;
        const char *name = gpu_field_name((gpu_field_t)f);
        if (!((allowed >> f) & 1u))
            return kgs_seterr(err, errlen, KGS_EINVAL, DEC "%s%s: not carried by this record",
                              where, name);
        if (f >= n_values)
            return kgs_seterr(err, errlen, KGS_EINVAL, DEC "%s%s: valid but no value", where, name);
        const char *why = value_check((gpu_field_t)f, values[f]);
        if (why)
            return kgs_seterr(err, errlen, KGS_EINVAL, DEC "%s%s: %s (%g)", where, name, why,
                              values[f]);
    }
    for (size_t f = 0; f < n_codes && f < GPU_F_COUNT; f++)
        if (codes[f] < INT16_MIN || codes[f] > INT16_MAX)
            return kgs_seterr(err, errlen, KGS_EINVAL, DEC "%s%s: NVML code %d out of range", where,
                              gpu_field_name((gpu_field_t)f), codes[f]);
    *valid = v;
    return 0;
}

static int check_gpu(const Kgs__Cluster__V1__Gpu *g, size_t i, uint32_t *valid, char *err,
                     size_t errlen) {
    char where[160];
    snprintf(where, sizeof where, "gpus[%zu]: ", i);
    int rc;
    if ((rc = check_str(g->uuid, SNAPSHOT_UUID_MAX, where, "uuid", err, errlen)) ||
        (rc = check_str(g->name, SNAPSHOT_NAME_MAX, where, "name", err, errlen)) ||
        (rc = check_str(g->pci_bus_id, SNAPSHOT_BUSID_MAX, where, "pci_bus_id", err, errlen)))
        return rc;
    snprintf(where, sizeof where, "gpus[%zu] (%s): ", i, g->uuid[0] ? g->uuid : "no uuid");
    if ((int)g->health < (int)GPU_HEALTH_OK || (int)g->health > (int)GPU_HEALTH_ERROR)
        return kgs_seterr(err, errlen, KGS_EINVAL, DEC "%shealth: unknown value %d", where,
                          (int)g->health);
    return check_values(g->valid, g->n_values, g->values, g->n_field_errors, g->field_errors,
                        (1u << GPU_F_COUNT) - 1u, where, valid, err, errlen);
}

static int check_mig(const Kgs__Cluster__V1__MigInstance *m, size_t i, uint32_t *valid, char *err,
                     size_t errlen) {
    char where[160];
    snprintf(where, sizeof where, "migs[%zu]: ", i);
    int rc;
    if ((rc = check_str(m->uuid, SNAPSHOT_UUID_MAX, where, "uuid", err, errlen)) ||
        (rc = check_str(m->name, SNAPSHOT_NAME_MAX, where, "name", err, errlen)) ||
        (rc = check_str(m->profile, SNAPSHOT_PROFILE_MAX, where, "profile", err, errlen)))
        return rc;
    snprintf(where, sizeof where, "migs[%zu] (%s): ", i, m->uuid[0] ? m->uuid : "no uuid");
    return check_values(m->valid, m->n_values, m->values, m->n_field_errors, m->field_errors,
                        SNAPSHOT_CODEC_MIG_FIELDS, where, valid, err, errlen);
}

static int decode_pods(const Kgs__Cluster__V1__NodeSnapshot *msg, node_pods_t **out, char *err,
                       size_t errlen) {
    if (!msg->pods_known) {
        if (msg->n_pods > 0)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              DEC "%zu pods listed but pods_known is false", msg->n_pods);
        if (strnlen(msg->pods_error, NODE_PODS_ERROR_MAX + 1) > NODE_PODS_ERROR_MAX)
            return kgs_seterr(err, errlen, KGS_EINVAL, DEC "pods_error: longer than %u bytes",
                              NODE_PODS_ERROR_MAX);
        if (node_pods_new_unknown(msg->pods_error, out) != 0)
            return kgs_seterr(err, errlen, KGS_ENOMEM, DEC "out of memory");
        return 0;
    }
    if (msg->pods_error[0])
        return kgs_seterr(err, errlen, KGS_EINVAL, DEC "pods_error set but pods_known is true");
    if (msg->n_pods > NODE_PODS_MAX_ENTRIES)
        return kgs_seterr(err, errlen, KGS_EINVAL, DEC "%zu pods, at most %u", msg->n_pods,
                          NODE_PODS_MAX_ENTRIES);
    size_t nd = 0;
    for (size_t i = 0; i < msg->n_pods; i++) {
        if (msg->pods[i]->n_dra > NODE_PODS_MAX_DRA)
            return kgs_seterr(err, errlen, KGS_EINVAL, DEC "pods[%zu]: %zu DRA devices, at most %u",
                              i, msg->pods[i]->n_dra, NODE_PODS_MAX_DRA);
        nd += msg->pods[i]->n_dra; /* <= 16384 * 256: no overflow */
    }
    node_pod_entry_t *ents = calloc(msg->n_pods ? msg->n_pods : 1, sizeof *ents);
    node_pod_dra_t *dras = calloc(nd ? nd : 1, sizeof *dras);
    if (!ents || !dras) {
        free(ents);
        free(dras);
        return kgs_seterr(err, errlen, KGS_ENOMEM, DEC "out of memory");
    }
    node_pod_dra_t *dp = dras;
    for (size_t i = 0; i < msg->n_pods; i++) {
        const Kgs__Cluster__V1__PodDevices *p = msg->pods[i];
        ents[i].namespace_ = p->namespace_;
        ents[i].pod = p->pod;
        ents[i].container = p->container;
        ents[i].device_ids = (const char *const *)p->device_ids;
        ents[i].device_count = p->n_device_ids;
        ents[i].dra = dp;
        ents[i].dra_count = p->n_dra;
        for (size_t d = 0; d < p->n_dra; d++, dp++) {
            dp->driver = p->dra[d]->driver;
            dp->pool = p->dra[d]->pool;
            dp->device = p->dra[d]->device;
            dp->share_id = p->dra[d]->share_id;
            dp->uuid = ""; /* resolved by the aggregator, never taken from the wire */
        }
    }
    char why[256];
    int rc = node_pods_new(ents, msg->n_pods, out, why, sizeof why);
    free(dras);
    free(ents);
    if (rc != 0)
        return kgs_seterr(err, errlen, rc, DEC "%s", why);
    return 0;
}

int snapshot_codec_decode(const uint8_t *buf, size_t len, mono_ns_t recv_now, snapshot_t **out,
                          node_pods_t **pods, char *err, size_t errlen) {
    *out = NULL;
    if (pods)
        *pods = NULL;
    pb_alloc_state_t st = {false};
    ProtobufCAllocator alloc = {pb_alloc, pb_free, &st};
    Kgs__Cluster__V1__NodeSnapshot *msg = kgs__cluster__v1__node_snapshot__unpack(&alloc, len, buf);
    if (!msg)
        return st.failed ? kgs_seterr(err, errlen, KGS_ENOMEM, DEC "out of memory")
                         : kgs_seterr(err, errlen, KGS_EINVAL,
                                      DEC "malformed message (protobuf decoding failed)");

    int rc = 0;
    snapshot_t *s = NULL;
    node_pods_t *np = NULL;
    index_slot_t *slots = NULL;
    uint32_t *gvalid = NULL, *mvalid = NULL;

    if (msg->protocol_version != SNAPSHOT_CODEC_PROTOCOL_VERSION) {
        rc = kgs_seterr(err, errlen, KGS_EINVAL, DEC "protocol_version %u, supported: %u",
                        msg->protocol_version, SNAPSHOT_CODEC_PROTOCOL_VERSION);
        goto out;
    }
    if (msg->n_gpus > MAX_GPUS) {
        rc = kgs_seterr(err, errlen, KGS_EINVAL, DEC "%zu GPUs, at most %u", msg->n_gpus, MAX_GPUS);
        goto out;
    }
    if (msg->n_migs > MAX_MIGS) {
        rc = kgs_seterr(err, errlen, KGS_EINVAL, DEC "%zu MIG instances, at most %u", msg->n_migs,
                        MAX_MIGS);
        goto out;
    }
    if ((rc = check_str(msg->node, sizeof s->node_name, "", "node", err, errlen)) ||
        (rc = check_str(msg->nvml_error, sizeof s->error, "", "nvml_error", err, errlen)) ||
        (rc = check_str(msg->driver_version, sizeof s->driver_version, "", "driver_version", err,
                        errlen)))
        goto out;

    size_t ng = msg->n_gpus, nm = msg->n_migs;
    slots = calloc(ng ? ng : 1, sizeof *slots);
    gvalid = calloc(ng ? ng : 1, sizeof *gvalid);
    mvalid = calloc(nm ? nm : 1, sizeof *mvalid);
    if (!slots || !gvalid || !mvalid) {
        rc = kgs_seterr(err, errlen, KGS_ENOMEM, DEC "out of memory");
        goto out;
    }
    for (size_t i = 0; i < ng; i++) {
        if ((rc = check_gpu(msg->gpus[i], i, &gvalid[i], err, errlen)))
            goto out;
        slots[i].index = msg->gpus[i]->index;
        slots[i].pos = (unsigned)i;
    }
    qsort(slots, ng, sizeof *slots, cmp_slot);
    for (size_t i = 1; i < ng; i++) {
        if (slots[i].index == slots[i - 1].index) {
            rc = kgs_seterr(err, errlen, KGS_EINVAL, DEC "gpus[%u] and gpus[%u]: both index %u",
                            slots[i - 1].pos < slots[i].pos ? slots[i - 1].pos : slots[i].pos,
                            slots[i - 1].pos < slots[i].pos ? slots[i].pos : slots[i - 1].pos,
                            slots[i].index);
            goto out;
        }
    }
    for (size_t i = 0; i < nm; i++)
        if ((rc = check_mig(msg->migs[i], i, &mvalid[i], err, errlen)))
            goto out;
    if ((rc = decode_pods(msg, &np, err, errlen)))
        goto out;

    s = snapshot_new((unsigned)ng, (unsigned)nm);
    if (!s) {
        rc = kgs_seterr(err, errlen, KGS_ENOMEM, DEC "out of memory");
        goto out;
    }
    s->seq = msg->seq;
    uint64_t age_ms = msg->age_ms;
    s->taken_mono = age_ms <= recv_now / NS_PER_MS ? recv_now - age_ms * NS_PER_MS : 0;
    s->taken_wall_ms = msg->taken_wall_ms;
    s->status = msg->nvml_up ? SNAPSHOT_OK : SNAPSHOT_NVML_DOWN;
    s->nvml_code = msg->nvml_code;
    snprintf(s->error, sizeof s->error, "%s", msg->nvml_error);
    snprintf(s->driver_version, sizeof s->driver_version, "%s", msg->driver_version);
    snprintf(s->node_name, sizeof s->node_name, "%s", msg->node);

    for (size_t i = 0; i < ng; i++) {
        const Kgs__Cluster__V1__Gpu *in = msg->gpus[i];
        gpu_record_t *g = &s->gpus[i];
        g->index = in->index;
        snprintf(g->uuid, sizeof g->uuid, "%s", in->uuid);
        snprintf(g->name, sizeof g->name, "%s", in->name);
        snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "%s", in->pci_bus_id);
        g->valid = gvalid[i];
        for (unsigned f = 0; f < GPU_F_COUNT; f++) {
            if ((g->valid >> f) & 1u)
                gpu_put(g, (gpu_field_t)f, in->values[f]);
            if (f < in->n_field_errors)
                g->field_error[f] = (int16_t)in->field_errors[f];
        }
        g->health = (gpu_health_t)in->health;
        g->health_nvml_code = in->health_nvml_code;
        g->mig_enabled = in->mig_enabled;
    }

    for (size_t i = 0; i < nm; i++) {
        const Kgs__Cluster__V1__MigInstance *in = msg->migs[i];
        index_slot_t key = {in->parent_index, 0};
        const index_slot_t *hit = ng ? bsearch(&key, slots, ng, sizeof *slots, cmp_slot) : NULL;
        const char *uuid = in->uuid[0] ? in->uuid : "no uuid";
        if (!hit) {
            rc = kgs_seterr(err, errlen, KGS_EINVAL, DEC "migs[%zu] (%s): parent GPU %u not listed",
                            i, uuid, in->parent_index);
            goto out;
        }
        gpu_record_t *parent = &s->gpus[hit->pos];
        if (!parent->mig_enabled) {
            rc = kgs_seterr(err, errlen, KGS_EINVAL,
                            DEC "migs[%zu] (%s): parent GPU %u has MIG disabled", i, uuid,
                            in->parent_index);
            goto out;
        }
        if (parent->mig_count == 0) {
            parent->mig_first = (unsigned)i;
        } else if (parent->mig_first + parent->mig_count != i) {
            rc = kgs_seterr(err, errlen, KGS_EINVAL,
                            DEC "migs[%zu] (%s): instances of GPU %u are not adjacent", i, uuid,
                            in->parent_index);
            goto out;
        }
        parent->mig_count++;

        mig_record_t *m = &s->mig[i];
        m->parent_index = in->parent_index;
        snprintf(m->uuid, sizeof m->uuid, "%s", in->uuid);
        snprintf(m->name, sizeof m->name, "%s", in->name);
        snprintf(m->profile, sizeof m->profile, "%s", in->profile);
        m->gpu_instance_id = in->gpu_instance_id;
        m->compute_instance_id = in->compute_instance_id;
        m->ids_valid = in->ids_valid;
        m->valid = mvalid[i];
        for (unsigned f = 0; f < GPU_F_COUNT; f++) {
            if ((m->valid >> f) & 1u)
                mig_put(m, (gpu_field_t)f, in->values[f]);
            if (f < in->n_field_errors)
                m->field_error[f] = (int16_t)in->field_errors[f];
        }
    }

    *out = s;
    s = NULL;
    if (pods) {
        *pods = np;
        np = NULL;
    }
out:
    snapshot_unref(s);
    node_pods_free(np);
    free(mvalid);
    free(gvalid);
    free(slots);
    kgs__cluster__v1__node_snapshot__free_unpacked(msg, &alloc);
    return rc;
}
