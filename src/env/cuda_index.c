/*
 * cuda_index.c - which ordinal CUDA gives each device in this process.
 *
 * DESIGN
 *
 * CUDA numbers the devices it can see from 0. What it can see and in which
 * order depends on two variables and on the driver; NVML numbers GPUs its
 * own way (PCI bus order). The facts used here, and where they come from:
 *
 *  1. CUDA_VISIBLE_DEVICES unset: every device is visible; set but empty:
 *     none. Set: only the listed devices, in list order, up to the first
 *     invalid entry (an example in NVIDIA's list is "0,2,-1,1": 0 and 2).
 *     Entries are integers, GPU UUIDs or unique prefixes of them, and
 *     MIG-<uuid> (R470+) or MIG-GPU-<uuid>/<gi>/<ci> (before R470).
 *     [CUDA Programming Guide, "CUDA Environment Variables"]
 *  2. CUDA_DEVICE_ORDER is FASTEST_FIRST (the default) or PCI_BUS_ID.
 *     FASTEST_FIRST orders "fastest to slowest using a simple heuristic"
 *     (older guides: it makes the fastest device 0 and leaves the order of
 *     the rest unspecified); PCI_BUS_ID orders by PCI bus id, ascending.
 *     An integer in CUDA_VISIBLE_DEVICES is an ordinal in that order.
 *     [same page]
 *  3. MIG: drivers R450-R525 enumerate one MIG device per process and then
 *     no whole GPU beside it; from R570, one compute instance per GPU
 *     instance, whole GPUs too; without CUDA_VISIBLE_DEVICES CUDA picks
 *     which instances itself. [NVIDIA MIG User Guide, "CUDA Device
 *     Enumeration"]
 *  4. Forms NVIDIA does not document - an entry with text after its number
 *     ("1gpu"), a device named twice, indexes mixed with UUIDs - are read
 *     differently by different models of CUDA's parser (PyTorch's
 *     torch/cuda/__init__.py _parse_visible_devices reads "1gpu" as 1,
 *     a repeated device as no device at all, and stops at the first entry
 *     of another kind).
 *
 * Hence what this file claims, and nothing else:
 *  - a list of UUIDs: each listed device's ordinal is its list position,
 *    whatever CUDA_DEVICE_ORDER says;
 *  - integers, or no list: the ordinal needs CUDA's order of the node,
 *    which is known only with CUDA_DEVICE_ORDER=PCI_BUS_ID (sort by the
 *    PCI bus id NVML reports) or when the node has a single GPU;
 *  - a MIG instance: known when it is the only entry, or, from R570, when
 *    the list names at most one compute instance per GPU instance;
 *  - anything undocumented, a GPU in MIG mode named as a whole, or a GPU
 *    that is not healthy (CUDA may not count it): unknown from that entry
 *    on, with a note naming the cause.
 * It assumes that CUDA sees the GPUs NVML sees (both are limited by the
 * same device files, cgroups and container runtime), and it knows nothing
 * of MPS, whose server remaps the devices its clients see.
 */
#include "env/cuda_index.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/err.h"

/* A device in CUDA's enumeration: a whole GPU (position in snap->gpus) or
 * a MIG instance (slot in snap->mig). */
typedef struct {
    bool mig;
    unsigned pos;
} cix_dev_t;

typedef struct {
    const env_info_t *env;
    const snapshot_t *snap;
    cuda_index_map_t *out;
    unsigned driver_major;
    /* CUDA's order of every GPU of the node, computed once on demand. */
    bool order_done;
    unsigned *order;        /* positions in snap->gpus */
    unsigned order_certain; /* leading entries of order that are certain */
    char order_note[CUDA_INDEX_NOTE_MAX];
    char why[CUDA_INDEX_NOTE_MAX + 64]; /* room to compose an entry's reason */
} cix_t;

/* Records `fmt` as the map's note unless a cause is already recorded. */
__attribute__((format(printf, 2, 3))) static void cix_note(char *note, const char *fmt, ...) {
    if (note[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(note, CUDA_INDEX_NOTE_MAX, fmt, ap);
    va_end(ap);
}

unsigned cuda_index_driver_major(const char *v) {
    unsigned major = 0;
    int digits = 0;
    if (!v)
        return 0;
    for (; *v >= '0' && *v <= '9' && digits < 6; v++, digits++)
        major = major * 10 + (unsigned)(*v - '0');
    return digits && (*v == '.' || *v == '\0') ? major : 0;
}

/* Parses NVML's "DDDDDDDD:BB:DD.F" (domain of up to 8 hex digits) into a
 * key that sorts as the bus ids do. False when it is not that form. */
static bool cix_bus_key(const char *s, uint64_t *key) {
    static const struct {
        int max_digits;
        char end;
    } parts[4] = {{8, ':'}, {2, ':'}, {2, '.'}, {1, '\0'}};
    uint64_t k = 0;
    for (int p = 0; p < 4; p++) {
        uint64_t v = 0;
        int n = 0;
        for (; n < parts[p].max_digits; n++, s++) {
            char c = *s;
            int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
            if (d < 0)
                break;
            v = v * 16 + (uint64_t)d;
        }
        if (n == 0 || *s != parts[p].end)
            return false;
        k = p == 0 ? v : (k << (p == 3 ? 4 : 8)) | v;
        if (*s)
            s++;
    }
    *key = k;
    return true;
}

static bool cix_any_mig_mode(const snapshot_t *snap, unsigned *which) {
    for (unsigned i = 0; i < snap->gpu_count; i++)
        if (snap->gpus[i].mig_enabled) {
            *which = snap->gpus[i].index;
            return true;
        }
    return false;
}

/* Sorts positions by PCI bus key: insertion sort, a node has few GPUs. */
static void cix_sort_by_key(unsigned *order, const uint64_t *key, unsigned n) {
    for (unsigned i = 1; i < n; i++) {
        unsigned v = order[i];
        unsigned j = i;
        for (; j > 0 && key[order[j - 1]] > key[v]; j--)
            order[j] = order[j - 1];
        order[j] = v;
    }
}

/*
 * CUDA's order of the whole node (rule 2): order[] and how many of its
 * leading entries are certain; order_note says why the rest is not.
 * KGS_ENOMEM only.
 */
static int cix_node_order(cix_t *c) {
    const snapshot_t *snap = c->snap;
    const env_info_t *env = c->env;
    unsigned n = snap->gpu_count, mig_gpu = 0;
    c->order_done = true;
    c->order_certain = 0;
    c->order = calloc(n ? n : 1, sizeof *c->order);
    uint64_t *key = calloc(n ? n : 1, sizeof *key);
    if (!c->order || !key) {
        free(key);
        return KGS_ENOMEM;
    }
    for (unsigned i = 0; i < n; i++)
        c->order[i] = i;
    bool pci = env->cuda_order_set && strcmp(env->cuda_order, "PCI_BUS_ID") == 0;
    if (env->cuda_order_set && !pci && strcmp(env->cuda_order, "FASTEST_FIRST") != 0) {
        cix_note(c->order_note,
                 "CUDA_DEVICE_ORDER=\"%.40s\" is neither FASTEST_FIRST nor PCI_BUS_ID, the only "
                 "values NVIDIA documents, so CUDA's device order is unknown",
                 env->cuda_order);
    } else if (cix_any_mig_mode(snap, &mig_gpu)) {
        cix_note(c->order_note,
                 "GPU %u is in MIG mode: which MIG instances CUDA enumerates, and in what order, "
                 "is up to the driver unless CUDA_VISIBLE_DEVICES names them (MIG-<uuid>)",
                 mig_gpu);
    } else if (n > 1 && !pci) {
        cix_note(c->order_note,
                 "CUDA_DEVICE_ORDER is %s: CUDA puts the device its speed heuristic rates "
                 "fastest first and NVIDIA does not specify the rest of the order; with "
                 "CUDA_DEVICE_ORDER=PCI_BUS_ID it is the PCI bus order, which gpu-metrics can "
                 "follow",
                 env->cuda_order_set ? "FASTEST_FIRST" : "unset (FASTEST_FIRST)");
    } else {
        unsigned bad = n;
        for (unsigned i = 0; i < n && bad == n; i++)
            if (n > 1 && !cix_bus_key(snap->gpus[i].pci_bus_id, &key[i]))
                bad = i;
        if (bad < n) {
            cix_note(c->order_note,
                     "GPU %u has no PCI bus id from NVML, so its place in CUDA's PCI_BUS_ID "
                     "order is unknown",
                     snap->gpus[bad].index);
        } else {
            cix_sort_by_key(c->order, key, n);
            for (; c->order_certain < n; c->order_certain++) {
                const gpu_record_t *g = &snap->gpus[c->order[c->order_certain]];
                if (g->health != GPU_HEALTH_OK) {
                    cix_note(c->order_note,
                             "GPU %u is %s: whether CUDA still enumerates it is unknown, and "
                             "with it the CUDA index of every GPU after it in CUDA's order",
                             g->index, gpu_health_name(g->health));
                    break;
                }
            }
        }
    }
    free(key);
    return 0;
}

/* No CUDA_VISIBLE_DEVICES: every device is visible, in CUDA's order. */
static int cix_map_unset(cix_t *c) {
    const snapshot_t *snap = c->snap;
    int rc = cix_node_order(c);
    if (rc != 0)
        return rc;
    unsigned mig_gpu = 0;
    bool mig = cix_any_mig_mode(snap, &mig_gpu);
    for (unsigned k = 0; k < snap->gpu_count; k++) {
        unsigned i = c->order[k];
        if (k < c->order_certain)
            c->out->gpu[i] = (cuda_index_t){CUDA_INDEX_KNOWN, k};
        else if (!mig && snap->gpus[i].health == GPU_HEALTH_OK)
            c->out->gpu[i].state = CUDA_INDEX_VISIBLE;
    }
    cix_note(c->out->note, "%s", c->order_note);
    return 0;
}

/* ---- CUDA_VISIBLE_DEVICES ------------------------------------------------ */

typedef enum {
    ENT_INDEX,
    ENT_GPU,
    ENT_MIG,
    ENT_MIG_LEGACY,
    ENT_INVALID,     /* CUDA stops here: certain (rule 1) */
    ENT_UNDOCUMENTED /* what CUDA does is not known (rule 4) */
} cix_kind_t;

static bool cix_blank(char ch) {
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f';
}

/* What an entry (blanks trimmed; `padded` when it had some) is. */
static cix_kind_t cix_classify(const char *e, bool padded, unsigned long *n, const char **why) {
    *why = "";
    if (!*e) {
        *why = "it is empty";
        return ENT_INVALID;
    }
    if (*e >= '0' && *e <= '9') {
        unsigned long v = 0;
        const char *p = e;
        for (; *p >= '0' && *p <= '9'; p++)
            v = v > 100000000ul ? v : v * 10 + (unsigned long)(*p - '0');
        *n = v;
        if (*p == '\0')
            return ENT_INDEX;
        *why = "it has text after its number, which NVIDIA does not document (PyTorch's model of "
               "CUDA reads just the number)";
        return ENT_UNDOCUMENTED;
    }
    if (*e == '-') {
        *why = "it is negative";
        return ENT_INVALID;
    }
    if (*e == '+' && e[1] >= '0' && e[1] <= '9') {
        *why = "it has a plus sign, which NVIDIA does not document (PyTorch's model of CUDA "
               "reads the number)";
        return ENT_UNDOCUMENTED;
    }
    bool gpu = strncmp(e, "GPU-", 4) == 0 && e[4];
    bool legacy = strncmp(e, "MIG-GPU-", 8) == 0 && strchr(e, '/');
    bool mig = strncmp(e, "MIG-", 4) == 0 && e[4];
    if ((gpu || mig) && padded) {
        *why = "it has blanks around a UUID, which NVIDIA does not document";
        return ENT_UNDOCUMENTED;
    }
    if (gpu)
        return ENT_GPU;
    if (legacy)
        return ENT_MIG_LEGACY;
    if (mig)
        return ENT_MIG;
    *why = "it is not an index, GPU-<uuid> or MIG-<uuid>";
    return ENT_INVALID;
}

/*
 * Finds the one record whose UUID the entry is (or is a prefix of), among
 * `count` UUIDs `stride` bytes apart starting at `first`. Returns the
 * position, or -1 with *kind and *why set: INVALID for no match or an
 * ambiguous prefix (rule 1), UNDOCUMENTED when it matches only when case
 * is ignored, or when a record's UUID is unknown (it might have matched).
 */
static long cix_find_uuid(const char *entry, const char *first, size_t stride, unsigned count,
                          cix_kind_t *kind, const char **why) {
    size_t n = strlen(entry);
    long found = -1;
    unsigned exact = 0, nocase = 0, unknown = 0;
    for (unsigned i = 0; i < count; i++) {
        const char *u = first + (size_t)i * stride;
        if (!u[0])
            unknown++;
        if (strncmp(u, entry, n) == 0) {
            exact++;
            found = (long)i;
        } else if (strncasecmp(u, entry, n) == 0) {
            nocase++;
        }
    }
    if (exact == 1)
        return found;
    if (exact > 1) {
        *kind = ENT_INVALID;
        *why = "it is a prefix of more than one UUID";
    } else if (nocase) {
        *kind = ENT_UNDOCUMENTED;
        *why = "it matches a UUID only when case is ignored, which NVIDIA does not document";
    } else if (unknown) {
        *kind = ENT_UNDOCUMENTED;
        *why = "NVML gave no UUID for some device, which it might name";
    } else {
        *kind = ENT_INVALID;
        *why = "no device on this node has that UUID";
    }
    return -1;
}

/* "MIG-GPU-<uuid>/<gi>/<ci>" (rule 1, before R470). */
static long cix_find_legacy(const cix_t *c, const char *entry, cix_kind_t *kind, const char **why) {
    const snapshot_t *snap = c->snap;
    if (c->driver_major == 0 || c->driver_major >= 470) {
        *kind = ENT_UNDOCUMENTED;
        *why = "the MIG-GPU-<uuid>/<gi>/<ci> form is documented for drivers before R470 only";
        return -1;
    }
    const char *uuid = entry + 4, *slash = strchr(uuid, '/');
    unsigned ids[2] = {0, 0};
    const char *p = slash;
    *kind = ENT_INVALID;
    *why = "no MIG instance on this node has that GPU UUID and those ids";
    for (int k = 0; k < 2; k++) { /* "/<digits>" twice, then the end */
        int digits = 0;
        if (*p++ != '/')
            return -1;
        for (; *p >= '0' && *p <= '9' && digits < 6; p++, digits++)
            ids[k] = ids[k] * 10 + (unsigned)(*p - '0');
        if (!digits)
            return -1;
    }
    if (*p)
        return -1;
    unsigned gi = ids[0], ci = ids[1];
    size_t n = (size_t)(slash - uuid);
    for (unsigned m = 0; m < snap->mig_total; m++) {
        const mig_record_t *r = &snap->mig[m];
        const gpu_record_t *g = snapshot_gpu_by_index(snap, r->parent_index);
        if (g && strlen(g->uuid) == n && strncmp(g->uuid, uuid, n) == 0 && r->ids_valid &&
            r->gpu_instance_id == gi && r->compute_instance_id == ci)
            return (long)m;
    }
    return -1;
}

/* The GPU record a MIG slot belongs to, or NULL. */
static const gpu_record_t *cix_parent(const snapshot_t *snap, unsigned slot) {
    return snapshot_gpu_by_index(snap, snap->mig[slot].parent_index);
}

/*
 * Resolves one classified entry to a device. 0 and *dev; otherwise the
 * kind that ends the list (INVALID or UNDOCUMENTED) with *why.
 */
static cix_kind_t cix_resolve(cix_t *c, cix_kind_t kind, const char *e, unsigned long n,
                              cix_dev_t *dev, const char **why) {
    const snapshot_t *snap = c->snap;
    long pos = -1;
    cix_kind_t stop = kind;
    if (kind == ENT_INDEX) {
        if (!c->order_done && cix_node_order(c) != 0) {
            *why = "out of memory"; /* claim nothing */
            return ENT_UNDOCUMENTED;
        }
        if (n < c->order_certain) {
            *dev = (cix_dev_t){false, c->order[n]};
            return ENT_INDEX;
        }
        if (c->order_certain == snap->gpu_count) {
            *why = "this node has no GPU with that CUDA index";
            return ENT_INVALID;
        }
        snprintf(c->why, sizeof c->why, "an index counts in CUDA's device order, unknown here: %s",
                 c->order_note);
        *why = c->why;
        return ENT_UNDOCUMENTED;
    }
    if (kind == ENT_GPU) {
        pos =
            cix_find_uuid(e, snap->gpus[0].uuid, sizeof snap->gpus[0], snap->gpu_count, &stop, why);
        if (pos < 0)
            return stop;
        const gpu_record_t *g = &snap->gpus[pos];
        if (g->mig_enabled) {
            *why = "it names a GPU in MIG mode as a whole, and NVIDIA does not document what "
                   "CUDA enumerates for that";
            return ENT_UNDOCUMENTED;
        }
        if (g->health != GPU_HEALTH_OK) {
            *why = "it names a GPU that is not healthy, which CUDA may not enumerate";
            return ENT_UNDOCUMENTED;
        }
        *dev = (cix_dev_t){false, (unsigned)pos};
        return ENT_GPU;
    }
    pos = kind == ENT_MIG
              ? (snap->mig_total ? cix_find_uuid(e, snap->mig[0].uuid, sizeof snap->mig[0],
                                                 snap->mig_total, &stop, why)
                                 : cix_find_uuid(e, "", 1, 0, &stop, why))
              : cix_find_legacy(c, e, &stop, why);
    if (pos < 0)
        return stop;
    const gpu_record_t *parent = cix_parent(snap, (unsigned)pos);
    if (!parent || parent->health != GPU_HEALTH_OK) {
        *why = "it names a MIG instance of a GPU that is not healthy, which CUDA may not "
               "enumerate";
        return ENT_UNDOCUMENTED;
    }
    *dev = (cix_dev_t){true, (unsigned)pos};
    return kind;
}

static bool cix_same_dev(cix_dev_t a, cix_dev_t b) {
    return a.mig == b.mig && a.pos == b.pos;
}

/*
 * Rule 3 on a resolved list: how many leading entries have a certain
 * ordinal when MIG instances are among them. Notes the cause otherwise.
 */
static unsigned cix_mig_certain(cix_t *c, const cix_dev_t *seq, unsigned len) {
    const snapshot_t *snap = c->snap;
    unsigned migs = 0;
    for (unsigned i = 0; i < len; i++)
        migs += seq[i].mig;
    if (migs == 0 || len == 1)
        return len;
    if (c->driver_major < 570) {
        cix_note(c->out->note,
                 "CUDA_VISIBLE_DEVICES names %u devices, MIG instances among them: drivers "
                 "before R570 enumerate one MIG device per process and no whole GPU beside it, "
                 "and which one is not documented (this node runs driver %.40s)",
                 len, snap->driver_version[0] ? snap->driver_version : "of unknown version");
        return 0;
    }
    unsigned seen = 0;
    for (unsigned i = 0; i < len; i++) {
        if (!seq[i].mig)
            continue;
        const mig_record_t *m = &snap->mig[seq[i].pos];
        if (!m->ids_valid) {
            cix_note(c->out->note,
                     "NVML gave no GPU instance id for MIG instance %.96s, and CUDA enumerates "
                     "only one compute instance per GPU instance",
                     m->uuid);
            return i;
        }
        if (++seen > 64) {
            cix_note(c->out->note, "CUDA enumerates at most 64 MIG instances");
            return i;
        }
        for (unsigned j = 0; j < i; j++) {
            const mig_record_t *o = &snap->mig[seq[j].pos];
            if (seq[j].mig && o->parent_index == m->parent_index &&
                o->gpu_instance_id == m->gpu_instance_id) {
                cix_note(c->out->note,
                         "CUDA_VISIBLE_DEVICES names two compute instances of GPU instance %u "
                         "of GPU %u, and CUDA picks one of them without saying which",
                         m->gpu_instance_id, m->parent_index);
                return j;
            }
        }
    }
    return len;
}

/* Copies entry `no` of the list, blanks trimmed, and classifies it. */
static cix_kind_t cix_entry(const char *s, const char *end, char *entry, size_t cap,
                            unsigned long *n, const char **why) {
    const char *t = end;
    const char *b = s;
    while (b < t && cix_blank(*b))
        b++;
    while (t > b && cix_blank(t[-1]))
        t--;
    size_t len = (size_t)(t - b);
    if (len >= cap) {
        snprintf(entry, cap, "%.40s...", b);
        *why = "it is longer than any device name";
        return ENT_UNDOCUMENTED;
    }
    memcpy(entry, b, len);
    entry[len] = '\0';
    return cix_classify(entry, b != s || t != end, n, why);
}

/* Sets the ordinals of seq[0, certain) and what every other device is. */
static void cix_assign(cix_t *c, const cix_dev_t *seq, unsigned len, unsigned certain,
                       bool walk_certain) {
    cuda_index_map_t *out = c->out;
    for (unsigned i = 0; i < out->gpu_count; i++)
        out->gpu[i].state = walk_certain ? CUDA_INDEX_HIDDEN : CUDA_INDEX_UNKNOWN;
    for (unsigned i = 0; i < out->mig_count; i++)
        out->mig[i].state = walk_certain ? CUDA_INDEX_HIDDEN : CUDA_INDEX_UNKNOWN;
    for (unsigned i = 0; i < len; i++) {
        cuda_index_t *x = seq[i].mig ? &out->mig[seq[i].pos] : &out->gpu[seq[i].pos];
        *x = i < certain ? (cuda_index_t){CUDA_INDEX_KNOWN, i}
                         : (cuda_index_t){CUDA_INDEX_UNKNOWN, 0};
    }
}

/* CUDA_VISIBLE_DEVICES set: walk its entries as CUDA does (rule 1). */
static int cix_map_list(cix_t *c) {
    const snapshot_t *snap = c->snap;
    unsigned room = snap->gpu_count + snap->mig_total;
    cix_dev_t *seq = calloc(room ? room : 1, sizeof *seq);
    if (!seq)
        return KGS_ENOMEM;
    unsigned len = 0, no = 0;
    bool walk_certain = true, first_index = false;
    const char *p = c->env->cuda_visible;
    for (;;) {
        const char *comma = strchr(p, ',');
        const char *end = comma ? comma : p + strlen(p);
        char entry[128];
        unsigned long n = 0;
        const char *why = "";
        cix_kind_t kind = cix_entry(p, end, entry, sizeof entry, &n, &why);
        bool is_index = kind == ENT_INDEX;
        if (++no == 1)
            first_index = is_index;
        cix_dev_t dev = {false, 0};
        if (kind != ENT_INVALID && kind != ENT_UNDOCUMENTED)
            kind = cix_resolve(c, kind, entry, n, &dev, &why);
        /* A device of the other kind: where the models of CUDA differ. An
         * entry that names no device ends the list in every model. */
        if (kind != ENT_INVALID && kind != ENT_UNDOCUMENTED && is_index != first_index) {
            kind = ENT_UNDOCUMENTED;
            why = "it mixes indexes and UUIDs in one list, which NVIDIA does not document "
                  "(PyTorch's model of CUDA stops there)";
        }
        if (kind == ENT_UNDOCUMENTED) {
            walk_certain = false;
            cix_note(c->out->note,
                     "CUDA_VISIBLE_DEVICES entry %u (\"%s\"): %s; so the CUDA index of the "
                     "devices from there on is unknown",
                     no, entry, why);
        }
        if (kind == ENT_INVALID || kind == ENT_UNDOCUMENTED)
            break;
        for (unsigned i = 0; i < len; i++) {
            if (!cix_same_dev(seq[i], dev))
                continue;
            cix_note(c->out->note,
                     "CUDA_VISIBLE_DEVICES names one device twice (entry %u, \"%s\"), which "
                     "NVIDIA does not document (PyTorch's model of CUDA then sees no device)",
                     no, entry);
            free(seq);
            return 0; /* every device stays UNKNOWN */
        }
        if (len >= room) { /* cannot happen: a new device beyond all of them */
            free(seq);
            return 0;
        }
        seq[len++] = dev;
        if (!comma)
            break;
        p = comma + 1;
    }
    cix_assign(c, seq, len, cix_mig_certain(c, seq, len), walk_certain);
    free(seq);
    return 0;
}

int cuda_index_map_build(const env_info_t *env, const snapshot_t *snap, cuda_index_map_t *out) {
    if (!out)
        return KGS_EINVAL;
    memset(out, 0, sizeof *out);
    if (!env || !snap)
        return KGS_EINVAL;
    out->gpu = calloc(snap->gpu_count ? snap->gpu_count : 1, sizeof *out->gpu);
    out->mig = calloc(snap->mig_total ? snap->mig_total : 1, sizeof *out->mig);
    if (!out->gpu || !out->mig) {
        cuda_index_map_deinit(out);
        return KGS_ENOMEM;
    }
    out->gpu_count = snap->gpu_count;
    out->mig_count = snap->mig_total;
    if (snap->status != SNAPSHOT_OK || snap->gpu_count == 0)
        return 0;
    cix_t c = {.env = env,
               .snap = snap,
               .out = out,
               .driver_major = cuda_index_driver_major(snap->driver_version)};
    int rc;
    const char *b = env->cuda_visible;
    while (cix_blank(*b))
        b++;
    if (!env->cuda_visible_set) {
        rc = cix_map_unset(&c);
    } else if (!*b) { /* set but empty: no device (rule 1) */
        cix_assign(&c, NULL, 0, 0, true);
        rc = 0;
    } else {
        rc = cix_map_list(&c);
    }
    free(c.order);
    if (rc != 0)
        cuda_index_map_deinit(out);
    return rc;
}

void cuda_index_map_deinit(cuda_index_map_t *m) {
    if (!m)
        return;
    free(m->gpu);
    free(m->mig);
    memset(m, 0, sizeof *m);
}
