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
#define PROC_CODEC_FIELDS                                                                          \
    ((1u << PROC_F_SM_UTIL) | (1u << PROC_F_MEM_UTIL) | (1u << PROC_F_USED_MEMORY))

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

/* qsort has no context argument; the encoder is not reentrant on one
 * thread, and _Thread_local keeps threads apart. */
static _Thread_local const snapshot_t *order_snap;

static const proc_list_t *device_procs(const snapshot_t *s, unsigned i) {
    return i < s->gpu_count ? &s->gpus[i].procs : &s->mig[i - s->gpu_count].procs;
}

/* Devices by the position of their process list; ties (empty lists) by
 * device order, so the sort is deterministic. */
static int cmp_by_first(const void *a, const void *b) {
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    unsigned fx = device_procs(order_snap, x)->first, fy = device_procs(order_snap, y)->first;
    if (fx != fy)
        return fx < fy ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* How a process record names its GPU: the GPU's uuid, or for a GPU
 * without one (an AMD GPU whose ASIC has no unique_id) its PCI address,
 * which no uuid can equal (a uuid has no ':'), so the two never collide. */
static const char *gpu_process_key(const gpu_record_t *g) {
    return g->uuid[0] ? g->uuid : g->pci_bus_id;
}

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
    size_t nproc = s->proc_total;
    Kgs__Cluster__V1__GpuProcess *prm = calloc(nproc ? nproc : 1, sizeof *prm);
    Kgs__Cluster__V1__GpuProcess **prp = calloc(nproc ? nproc : 1, sizeof *prp);
    unsigned *order = calloc(ng + nm ? ng + nm : 1, sizeof *order);
    if (!gm || !gp || !mm || !mp || !vals || !codes || !pm || !pp || !dm || !dp || !prm || !prp ||
        !order) {
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
        o->vendor = (uint32_t)g->vendor;
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
        o->processes_known = g->procs.list_ok;
        o->processes_code = g->procs.list_code;
        o->processes_dropped = g->procs.dropped;
        o->process_util_known = g->procs.util_ok;
        o->process_util_code = g->procs.util_code;
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
        o->processes_known = m->procs.list_ok;
        o->processes_code = m->procs.list_code;
        o->processes_dropped = m->procs.dropped;
        o->process_util_known = m->procs.util_ok;
        o->process_util_code = m->procs.util_code;
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

    /* Processes, device by device, devices in the order of their lists in
     * s->procs (so what a decoder built re-encodes to the same order). */
    size_t k = 0;
    for (size_t i = 0; i < ng + nm; i++)
        order[i] = (unsigned)i;
    order_snap = s;
    qsort(order, ng + nm, sizeof *order, cmp_by_first);
    for (size_t oi = 0; oi < ng + nm; oi++) {
        size_t i = order[oi];
        const proc_list_t *pl = i < ng ? &s->gpus[i].procs : &s->mig[i - ng].procs;
        const char *uuid = i < ng ? gpu_process_key(&s->gpus[i]) : s->mig[i - ng].uuid;
        if (!pl->list_ok)
            continue;
        for (unsigned j = 0; j < pl->count && pl->first + j < nproc && k < nproc; j++) {
            const proc_record_t *r = &s->procs[pl->first + j];
            Kgs__Cluster__V1__GpuProcess *o = &prm[k];
            kgs__cluster__v1__gpu_process__init(o);
            o->gpu_uuid = (char *)uuid;
            o->pid = r->pid;
            o->pod_uid = (char *)r->pod_uid;
            o->container_id = (char *)r->container_id;
            o->valid = r->valid & PROC_CODEC_FIELDS;
            o->sm_util = proc_has(r, PROC_F_SM_UTIL) ? r->sm_util_pct : 0;
            o->mem_util = proc_has(r, PROC_F_MEM_UTIL) ? r->mem_util_pct : 0;
            o->used_memory_bytes = proc_has(r, PROC_F_USED_MEMORY) ? r->used_memory_bytes : 0;
            prp[k++] = o;
        }
    }
    msg.n_processes = k;
    msg.processes_attributed = s->procs_attributed;
    msg.processes = prp;

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
    free(order);
    free(prp);
    free(prm);
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

/* The unpacked message lives in an arena: protobuf-c allocates each
 * submessage, repeated field and string on its own (a DRA device is a
 * message of four strings), a thousand agents send a snapshot a second,
 * and every piece is thrown away at the end of the decode -- which reads
 * the message into snapshot_t and node_pods_t blocks of its own. So: a few
 * chunks, the first sized from the input, bump-allocated, released at
 * once; no free of single pieces. It also notices malloc failures
 * (protobuf-c returns NULL for both "malformed" and "out of memory"). */
typedef struct pb_chunk {
    struct pb_chunk *next;
    size_t cap, used;
    max_align_t data[];
} pb_chunk_t;

typedef struct {
    pb_chunk_t *head;
    size_t next_cap;
    bool failed;
} pb_arena_t;

#define PB_ARENA_MIN 4096u
#define PB_ARENA_FIRST_MAX (1u << 20)

/* Under AddressSanitizer (the ASan tests, the fuzzers) every piece gets a
 * chunk of its own, exactly its size, so a read past a string or array
 * protobuf-c handed out still hits a redzone. */
#if defined(__SANITIZE_ADDRESS__)
#define PB_ARENA_EXACT 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PB_ARENA_EXACT 1
#endif
#endif
#ifndef PB_ARENA_EXACT
#define PB_ARENA_EXACT 0
#endif

static void *pb_alloc(void *ud, size_t n) {
    pb_arena_t *a = ud;
    size_t align = sizeof(max_align_t);
    if (n > SIZE_MAX - align) {
        a->failed = true;
        return NULL;
    }
    n = PB_ARENA_EXACT ? (n ? n : 1) : (n ? n + align - 1 : align) / align * align;
    pb_chunk_t *c = a->head;
    if (PB_ARENA_EXACT || !c || c->cap - c->used < n) {
        size_t cap = !PB_ARENA_EXACT && a->next_cap > n ? a->next_cap : n;
        c = cap <= SIZE_MAX - sizeof *c ? malloc(sizeof *c + cap) : NULL;
        if (!c) {
            a->failed = true;
            return NULL;
        }
        c->next = a->head;
        c->cap = cap;
        c->used = 0;
        a->head = c;
        a->next_cap = cap <= SIZE_MAX / 2 ? cap * 2 : cap;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    return p;
}

static void pb_free(void *ud, void *p) {
    (void)ud;
    (void)p; /* the arena goes at once (pb_arena_release) */
}

static void pb_arena_release(pb_arena_t *a) {
    while (a->head) {
        pb_chunk_t *c = a->head;
        a->head = c->next;
        free(c);
    }
}

/* A string check_str() has already bounded, into char[cap]. */
static void copy_checked(char *dst, size_t cap, const char *src) {
    size_t n = strnlen(src, cap - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
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

static int check_gpu_at(const Kgs__Cluster__V1__Gpu *g, const char *at, const char *at_uuid,
                        uint32_t *valid, char *err, size_t errlen) {
    int rc;
    if ((rc = check_str(g->uuid, SNAPSHOT_UUID_MAX, at, "uuid", err, errlen)) ||
        (rc = check_str(g->name, SNAPSHOT_NAME_MAX, at, "name", err, errlen)) ||
        (rc = check_str(g->pci_bus_id, SNAPSHOT_BUSID_MAX, at, "pci_bus_id", err, errlen)))
        return rc;
    if ((int)g->health < (int)GPU_HEALTH_OK || (int)g->health > (int)GPU_HEALTH_ERROR)
        return kgs_seterr(err, errlen, KGS_EINVAL, DEC "%shealth: unknown value %d", at_uuid,
                          (int)g->health);
    return check_values(g->valid, g->n_values, g->values, g->n_field_errors, g->field_errors,
                        (1u << GPU_F_COUNT) - 1u, at_uuid, valid, err, errlen);
}

/* The checks run without a message first: naming the record ("gpus[3]
 * (GPU-...): ") takes two snprintf calls, and a thousand agents' eight
 * GPUs a second are almost always valid. The checks are pure, so a second
 * run with the names gives the same verdict and the message. */
static int check_gpu(const Kgs__Cluster__V1__Gpu *g, size_t i, uint32_t *valid, char *err,
                     size_t errlen) {
    if (check_gpu_at(g, "", "", valid, NULL, 0) == 0)
        return 0;
    char at[160], at_uuid[160];
    snprintf(at, sizeof at, "gpus[%zu]: ", i);
    snprintf(at_uuid, sizeof at_uuid, "gpus[%zu] (%.*s): ", i, SNAPSHOT_UUID_MAX,
             g->uuid[0] ? g->uuid : "no uuid");
    return check_gpu_at(g, at, at_uuid, valid, err, errlen);
}

static int check_mig_at(const Kgs__Cluster__V1__MigInstance *m, const char *at, const char *at_uuid,
                        uint32_t *valid, char *err, size_t errlen) {
    int rc;
    if ((rc = check_str(m->uuid, SNAPSHOT_UUID_MAX, at, "uuid", err, errlen)) ||
        (rc = check_str(m->name, SNAPSHOT_NAME_MAX, at, "name", err, errlen)) ||
        (rc = check_str(m->profile, SNAPSHOT_PROFILE_MAX, at, "profile", err, errlen)))
        return rc;
    return check_values(m->valid, m->n_values, m->values, m->n_field_errors, m->field_errors,
                        SNAPSHOT_CODEC_MIG_FIELDS, at_uuid, valid, err, errlen);
}

/* As check_gpu: names only on failure. */
static int check_mig(const Kgs__Cluster__V1__MigInstance *m, size_t i, uint32_t *valid, char *err,
                     size_t errlen) {
    if (check_mig_at(m, "", "", valid, NULL, 0) == 0)
        return 0;
    char at[160], at_uuid[160];
    snprintf(at, sizeof at, "migs[%zu]: ", i);
    snprintf(at_uuid, sizeof at_uuid, "migs[%zu] (%.*s): ", i, SNAPSHOT_UUID_MAX,
             m->uuid[0] ? m->uuid : "no uuid");
    return check_mig_at(m, at, at_uuid, valid, err, errlen);
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

/* A device's process-list status, checked. */
static int check_proc_status(bool known, int32_t code, uint32_t dropped, bool util_known,
                             int32_t util_code, const char *where, proc_list_t *pl, char *err,
                             size_t errlen) {
    if (code < INT16_MIN || code > INT16_MAX || util_code < INT16_MIN || util_code > INT16_MAX)
        return kgs_seterr(err, errlen, KGS_EINVAL, DEC "%sprocess NVML code out of range", where);
    if (!known && (dropped || util_known))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          DEC "%sprocesses_dropped or process_util_known without processes_known",
                          where);
    if (dropped > SNAPSHOT_MAX_PROCS)
        return kgs_seterr(err, errlen, KGS_EINVAL, DEC "%sprocesses_dropped %u, at most %u", where,
                          dropped, SNAPSHOT_MAX_PROCS);
    memset(pl, 0, sizeof *pl);
    pl->list_ok = known;
    pl->list_code = (int16_t)code;
    pl->dropped = dropped;
    pl->util_ok = util_known;
    pl->util_code = (int16_t)util_code;
    return 0;
}

/* check_proc_status for records[i], named ("gpus[2] (GPU-...): ") only
 * when it fails, as check_gpu does. */
static int proc_status_of(bool known, int32_t code, uint32_t dropped, bool util_known,
                          int32_t util_code, const char *records, size_t i, const char *uuid,
                          proc_list_t *pl, char *err, size_t errlen) {
    if (check_proc_status(known, code, dropped, util_known, util_code, "", pl, NULL, 0) == 0)
        return 0;
    char where[160];
    snprintf(where, sizeof where, "%s[%zu] (%.*s): ", records, i, SNAPSHOT_UUID_MAX,
             uuid[0] ? uuid : "no uuid");
    return check_proc_status(known, code, dropped, util_known, util_code, where, pl, err, errlen);
}

typedef struct {
    const char *uuid;
    unsigned pos; /* < ng: gpus[pos]; else migs[pos - ng] */
} uuid_slot_t;

static int cmp_uuid_slot(const void *a, const void *b) {
    return strcmp(((const uuid_slot_t *)a)->uuid, ((const uuid_slot_t *)b)->uuid);
}

/*
 * The processes into s->procs, attached to their devices' lists. Each
 * record's gpu_uuid must name a GPU or MIG instance (uniquely; a GPU
 * without a uuid by its pci_bus_id, as gpu_process_key says) whose
 * processes_known is set, and one device's records must be adjacent.
 */
static int decode_processes(const Kgs__Cluster__V1__NodeSnapshot *msg, snapshot_t *s, char *err,
                            size_t errlen) {
    size_t ng = s->gpu_count, nm = s->mig_total, n = msg->n_processes;
    if (n == 0)
        return 0;
    uuid_slot_t *slots = calloc(ng + nm, sizeof *slots);
    if (!slots)
        return kgs_seterr(err, errlen, KGS_ENOMEM, DEC "out of memory");
    for (size_t i = 0; i < ng + nm; i++) {
        slots[i].uuid = i < ng ? gpu_process_key(&s->gpus[i]) : s->mig[i - ng].uuid;
        slots[i].pos = (unsigned)i;
    }
    qsort(slots, ng + nm, sizeof *slots, cmp_uuid_slot);
    int rc = 0;
    for (size_t i = 1; i < ng + nm; i++) {
        if (slots[i].uuid[0] && strcmp(slots[i].uuid, slots[i - 1].uuid) == 0) {
            rc = kgs_seterr(err, errlen, KGS_EINVAL,
                            DEC "uuid %s is used by two devices, so processes cannot be attributed",
                            slots[i].uuid);
            goto out;
        }
    }
    for (size_t i = 0; i < n; i++) {
        const Kgs__Cluster__V1__GpuProcess *in = msg->processes[i];
        char where[160];
        snprintf(where, sizeof where, "processes[%zu]: ", i);
        if ((rc = check_str(in->gpu_uuid, SNAPSHOT_UUID_MAX, where, "gpu_uuid", err, errlen)) ||
            (rc = check_str(in->pod_uid, SNAPSHOT_POD_UID_MAX, where, "pod_uid", err, errlen)) ||
            (rc = check_str(in->container_id, SNAPSHOT_CONTAINER_ID_MAX, where, "container_id", err,
                            errlen)))
            goto out;
        uuid_slot_t key = {in->gpu_uuid, 0};
        const uuid_slot_t *hit =
            in->gpu_uuid[0] ? bsearch(&key, slots, ng + nm, sizeof *slots, cmp_uuid_slot) : NULL;
        if (!hit) {
            rc = kgs_seterr(err, errlen, KGS_EINVAL,
                            DEC "%sgpu_uuid \"%s\" names no GPU or MIG "
                                "instance of this snapshot",
                            where, in->gpu_uuid);
            goto out;
        }
        proc_list_t *pl = hit->pos < ng ? &s->gpus[hit->pos].procs : &s->mig[hit->pos - ng].procs;
        if (!pl->list_ok) {
            rc = kgs_seterr(err, errlen, KGS_EINVAL,
                            DEC "%s%s: processes listed but "
                                "processes_known is false",
                            where, in->gpu_uuid);
            goto out;
        }
        if (pl->count == 0) {
            pl->first = (unsigned)i;
        } else if (pl->first + pl->count != i) {
            rc = kgs_seterr(err, errlen, KGS_EINVAL,
                            DEC "%s%s: processes of one device are not "
                                "adjacent",
                            where, in->gpu_uuid);
            goto out;
        }
        pl->count++;
        proc_record_t *r = &s->procs[i];
        r->pid = in->pid;
        r->valid = in->valid & PROC_CODEC_FIELDS; /* bits a newer agent adds are dropped */
        if ((proc_has(r, PROC_F_SM_UTIL) &&
             (!isfinite(in->sm_util) || in->sm_util < 0 || in->sm_util > 100)) ||
            (proc_has(r, PROC_F_MEM_UTIL) &&
             (!isfinite(in->mem_util) || in->mem_util < 0 || in->mem_util > 100))) {
            rc = kgs_seterr(err, errlen, KGS_EINVAL,
                            DEC "%spid %u: utilisation not a percent (sm %g, mem %g)", where,
                            in->pid, in->sm_util, in->mem_util);
            goto out;
        }
        r->sm_util_pct = proc_has(r, PROC_F_SM_UTIL) ? in->sm_util : 0;
        r->mem_util_pct = proc_has(r, PROC_F_MEM_UTIL) ? in->mem_util : 0;
        r->used_memory_bytes = proc_has(r, PROC_F_USED_MEMORY) ? in->used_memory_bytes : 0;
        copy_checked(r->pod_uid, sizeof r->pod_uid, in->pod_uid);
        copy_checked(r->container_id, sizeof r->container_id, in->container_id);
    }
out:
    free(slots);
    return rc;
}

int snapshot_codec_decode(const uint8_t *buf, size_t len, mono_ns_t recv_now, snapshot_t **out,
                          node_pods_t **pods, char *err, size_t errlen) {
    *out = NULL;
    if (pods)
        *pods = NULL;
    /* About what the unpacked message takes: its structs are a few times
     * the bytes they came in. More is chained on; the first is bounded. */
    size_t first = len < PB_ARENA_FIRST_MAX / 4 ? len * 4 : PB_ARENA_FIRST_MAX;
    pb_arena_t arena = {NULL, first > PB_ARENA_MIN ? first : PB_ARENA_MIN, false};
    ProtobufCAllocator alloc = {pb_alloc, pb_free, &arena};
    Kgs__Cluster__V1__NodeSnapshot *msg = kgs__cluster__v1__node_snapshot__unpack(&alloc, len, buf);
    if (!msg) {
        bool failed = arena.failed;
        pb_arena_release(&arena);
        return failed ? kgs_seterr(err, errlen, KGS_ENOMEM, DEC "out of memory")
                      : kgs_seterr(err, errlen, KGS_EINVAL,
                                   DEC "malformed message (protobuf decoding failed)");
    }

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
    if (msg->n_processes > SNAPSHOT_MAX_PROCS) {
        rc = kgs_seterr(err, errlen, KGS_EINVAL, DEC "%zu processes, at most %u", msg->n_processes,
                        SNAPSHOT_MAX_PROCS);
        goto out;
    }
    if ((rc = decode_pods(msg, &np, err, errlen)))
        goto out;

    s = snapshot_new_with_procs((unsigned)ng, (unsigned)nm, (unsigned)msg->n_processes);
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
    copy_checked(s->error, sizeof s->error, msg->nvml_error);
    copy_checked(s->driver_version, sizeof s->driver_version, msg->driver_version);
    copy_checked(s->node_name, sizeof s->node_name, msg->node);
    s->procs_attributed = msg->processes_attributed;

    for (size_t i = 0; i < ng; i++) {
        const Kgs__Cluster__V1__Gpu *in = msg->gpus[i];
        gpu_record_t *g = &s->gpus[i];
        g->index = in->index;
        copy_checked(g->uuid, sizeof g->uuid, in->uuid);
        copy_checked(g->name, sizeof g->name, in->name);
        copy_checked(g->pci_bus_id, sizeof g->pci_bus_id, in->pci_bus_id);
        /* The vendor picks the evaluator's wording and hints (NVML or amdgpu
         * sysfs); one this build does not know is unknown, not an error. */
        g->vendor = in->vendor <= GPU_VENDOR_AMD ? (gpu_vendor_t)in->vendor : GPU_VENDOR_UNKNOWN;
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
        if ((rc = proc_status_of(in->processes_known, in->processes_code, in->processes_dropped,
                                 in->process_util_known, in->process_util_code, "gpus", i, g->uuid,
                                 &g->procs, err, errlen)))
            goto out;
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
        copy_checked(m->uuid, sizeof m->uuid, in->uuid);
        copy_checked(m->name, sizeof m->name, in->name);
        copy_checked(m->profile, sizeof m->profile, in->profile);
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
        if ((rc = proc_status_of(in->processes_known, in->processes_code, in->processes_dropped,
                                 in->process_util_known, in->process_util_code, "migs", i, m->uuid,
                                 &m->procs, err, errlen)))
            goto out;
    }
    if ((rc = decode_processes(msg, s, err, errlen)))
        goto out;

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
    pb_arena_release(&arena); /* msg and all it points to */
    return rc;
}
