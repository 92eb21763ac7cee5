/*
 * device_select.c - turns a scheduler's GPU list into a device selection.
 *
 * The Go tool kept only integer and MIG- entries and, when nothing was left,
 * showed every GPU on the node, so a job given GPU-<uuid> entries (as the
 * Kubernetes device plugin and many Slurm sites do) saw other jobs' GPUs
 * (reference §11.D.29). Here every entry must resolve to a device present in
 * the snapshot, or the whole list is an error naming the entry: showing too
 * much is a leak, showing too little hides a problem, so neither is silent.
 *
 * Entry forms (blanks around entries trimmed):
 *   "3"                NVML index (PCI bus order), not a CUDA ordinal
 *   "GPU-5c1d..."      a GPU UUID, or a unique prefix of one (as CUDA allows)
 *   "MIG-7a3f..."      a MIG instance UUID (R470+ form), or a unique prefix
 *   "MIG-GPU-<uuid>/gi/ci"  the pre-R470 MIG form: parent UUID plus the GPU
 *                      and compute instance ids
 *   "all"              everything (alone only)
 *   "none", "void", "" nothing (alone only)
 * UUID matching ignores the case of the hex digits; NVML prints them lower
 * case but people paste them from tools that do not.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/err.h"
#include "env/env.h"

#define SEL_ENTRY_MAX 128

typedef struct {
    const char *var;  /* source name for messages */
    const char *list; /* the whole list, for messages */
    char *err;
    size_t errlen;
} sel_ctx_t;

static bool sel_is_blank(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static bool sel_has_gpu_index(const device_selection_t *sel, unsigned index) {
    for (unsigned i = 0; i < sel->gpu_count; i++) {
        if (sel->gpu_index[i] == index)
            return true;
    }
    return false;
}

static bool sel_has_mig_slot(const device_selection_t *sel, unsigned slot) {
    for (unsigned i = 0; i < sel->mig_count; i++) {
        if (sel->mig_slot[i] == slot)
            return true;
    }
    return false;
}

static int sel_add_gpu(const sel_ctx_t *c, device_selection_t *out, unsigned index) {
    if (sel_has_gpu_index(out, index))
        return 0;
    if (out->gpu_count >= sizeof out->gpu_index / sizeof out->gpu_index[0])
        return kgs_seterr(c->err, c->errlen, KGS_ERANGE, "%s \"%s\": more than %zu GPUs listed",
                          c->var, c->list, sizeof out->gpu_index / sizeof out->gpu_index[0]);
    out->gpu_index[out->gpu_count++] = index;
    return 0;
}

static int sel_add_mig(const sel_ctx_t *c, device_selection_t *out, unsigned slot) {
    if (sel_has_mig_slot(out, slot))
        return 0;
    if (out->mig_count >= sizeof out->mig_slot / sizeof out->mig_slot[0])
        return kgs_seterr(c->err, c->errlen, KGS_ERANGE,
                          "%s \"%s\": more than %zu MIG instances listed", c->var, c->list,
                          sizeof out->mig_slot / sizeof out->mig_slot[0]);
    out->mig_slot[out->mig_count++] = slot;
    return 0;
}

/* "0-3", "0, 2, 5", or "none": the indexes present, for messages. */
static void sel_describe_indexes(const snapshot_t *snap, char *buf, size_t len) {
    if (snap->gpu_count == 0) {
        snprintf(buf, len, "none");
        return;
    }
    unsigned lo = snap->gpus[0].index, hi = lo;
    for (unsigned i = 1; i < snap->gpu_count; i++) {
        if (snap->gpus[i].index < lo)
            lo = snap->gpus[i].index;
        if (snap->gpus[i].index > hi)
            hi = snap->gpus[i].index;
    }
    if (hi - lo + 1 == snap->gpu_count) {
        if (lo == hi)
            snprintf(buf, len, "%u", lo);
        else
            snprintf(buf, len, "%u-%u", lo, hi);
        return;
    }
    size_t pos = 0;
    buf[0] = '\0';
    for (unsigned i = 0; i < snap->gpu_count && pos < len; i++) {
        int n = snprintf(buf + pos, len - pos, "%s%u", i ? ", " : "", snap->gpus[i].index);
        if (n < 0)
            break;
        pos += (size_t)n;
    }
}

static int sel_resolve_index(const sel_ctx_t *c, const char *entry, const snapshot_t *snap,
                             device_selection_t *out) {
    unsigned long v = 0;
    for (const char *p = entry; *p; p++) {
        if (v > 100000000ul) /* no node has that many GPUs; avoids overflow */
            return kgs_seterr(c->err, c->errlen, KGS_ENOTFOUND,
                              "%s entry \"%s\": no GPU with that index on this node", c->var,
                              entry);
        v = v * 10 + (unsigned long)(*p - '0');
    }
    if (snapshot_gpu_by_index(snap, (unsigned)v) && v <= 100000000ul)
        return sel_add_gpu(c, out, (unsigned)v);
    char have[128];
    sel_describe_indexes(snap, have, sizeof have);
    return kgs_seterr(c->err, c->errlen, KGS_ENOTFOUND,
                      "%s entry \"%s\": no GPU with index %lu on this node (indexes %s)", c->var,
                      entry, v, have);
}

/* Appends ", uuid" to a candidate list in buf. */
static void sel_note_candidate(char *buf, size_t len, const char *uuid) {
    size_t pos = strlen(buf);
    if (pos < len)
        snprintf(buf + pos, len - pos, "%s%s", pos ? ", " : "", uuid);
}

static bool sel_uuid_matches(const char *uuid, const char *entry, size_t n, bool *exact) {
    if (strncasecmp(uuid, entry, n) != 0)
        return false;
    *exact = uuid[n] == '\0';
    return true;
}

/* A GPU- entry: exact UUID, or a prefix of exactly one. */
static int sel_resolve_gpu_uuid(const sel_ctx_t *c, const char *entry, const snapshot_t *snap,
                                device_selection_t *out) {
    size_t n = strlen(entry);
    int found = -1, matches = 0;
    char cands[512] = "";
    for (unsigned i = 0; i < snap->gpu_count; i++) {
        bool exact = false;
        if (!sel_uuid_matches(snap->gpus[i].uuid, entry, n, &exact))
            continue;
        if (exact)
            return sel_add_gpu(c, out, snap->gpus[i].index);
        found = (int)i;
        matches++;
        sel_note_candidate(cands, sizeof cands, snap->gpus[i].uuid);
    }
    if (matches == 1)
        return sel_add_gpu(c, out, snap->gpus[found].index);
    if (matches > 1)
        return kgs_seterr(c->err, c->errlen, KGS_EINVAL,
                          "%s entry \"%s\": ambiguous UUID prefix, matches %d GPUs: %s", c->var,
                          entry, matches, cands);
    return kgs_seterr(c->err, c->errlen, KGS_ENOTFOUND,
                      "%s entry \"%s\": no GPU with this UUID on this node", c->var, entry);
}

/* A MIG- entry in the R470+ form: exact instance UUID or unique prefix. */
static int sel_resolve_mig_uuid(const sel_ctx_t *c, const char *entry, const snapshot_t *snap,
                                device_selection_t *out) {
    size_t n = strlen(entry);
    int found = -1, matches = 0;
    char cands[512] = "";
    for (unsigned i = 0; i < snap->mig_total; i++) {
        bool exact = false;
        if (!sel_uuid_matches(snap->mig[i].uuid, entry, n, &exact))
            continue;
        if (exact)
            return sel_add_mig(c, out, i);
        found = (int)i;
        matches++;
        sel_note_candidate(cands, sizeof cands, snap->mig[i].uuid);
    }
    if (matches == 1)
        return sel_add_mig(c, out, (unsigned)found);
    if (matches > 1)
        return kgs_seterr(c->err, c->errlen, KGS_EINVAL,
                          "%s entry \"%s\": ambiguous UUID prefix, matches %d MIG instances: %s",
                          c->var, entry, matches, cands);
    return kgs_seterr(c->err, c->errlen, KGS_ENOTFOUND,
                      "%s entry \"%s\": no MIG instance with this UUID on this node", c->var,
                      entry);
}

/* Parses a decimal unsigned of at most 6 digits ending at '/' or NUL. */
static const char *sel_parse_small(const char *p, unsigned *out) {
    unsigned v = 0;
    int digits = 0;
    while (*p >= '0' && *p <= '9' && digits < 6) {
        v = v * 10 + (unsigned)(*p - '0');
        p++;
        digits++;
    }
    if (digits == 0 || (*p != '/' && *p != '\0'))
        return NULL;
    *out = v;
    return p;
}

/* "MIG-GPU-<uuid>/<gi>/<ci>", the form drivers before R470 used. */
static int sel_resolve_mig_legacy(const sel_ctx_t *c, const char *entry, const snapshot_t *snap,
                                  device_selection_t *out) {
    const char *gpu_uuid = entry + 4; /* past "MIG-" */
    const char *slash = strchr(gpu_uuid, '/');
    unsigned gi = 0, ci = 0;
    const char *p = slash ? sel_parse_small(slash + 1, &gi) : NULL;
    if (p && *p == '/')
        p = sel_parse_small(p + 1, &ci);
    else
        p = NULL;
    if (!p || *p != '\0')
        return kgs_seterr(c->err, c->errlen, KGS_EINVAL,
                          "%s entry \"%s\": malformed MIG device (expected MIG-<uuid> or "
                          "MIG-GPU-<uuid>/<gpu instance>/<compute instance>)",
                          c->var, entry);
    size_t n = (size_t)(slash - gpu_uuid);
    for (unsigned i = 0; i < snap->gpu_count; i++) {
        const gpu_record_t *g = &snap->gpus[i];
        if (strlen(g->uuid) != n || strncasecmp(g->uuid, gpu_uuid, n) != 0)
            continue;
        for (unsigned m = 0; m < snap->mig_total; m++) {
            const mig_record_t *r = &snap->mig[m];
            if (r->parent_index == g->index && r->ids_valid && r->gpu_instance_id == gi &&
                r->compute_instance_id == ci)
                return sel_add_mig(c, out, m);
        }
        return kgs_seterr(c->err, c->errlen, KGS_ENOTFOUND,
                          "%s entry \"%s\": GPU %u has no MIG instance with gpu instance %u and "
                          "compute instance %u",
                          c->var, entry, g->index, gi, ci);
    }
    return kgs_seterr(c->err, c->errlen, KGS_ENOTFOUND,
                      "%s entry \"%s\": no GPU with this UUID on this node", c->var, entry);
}

static bool sel_all_digits(const char *s) {
    if (!*s)
        return false;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return false;
    }
    return true;
}

static int sel_resolve_entry(const sel_ctx_t *c, const char *entry, const snapshot_t *snap,
                             device_selection_t *out) {
    if (sel_all_digits(entry))
        return sel_resolve_index(c, entry, snap, out);
    if (strncmp(entry, "GPU-", 4) == 0 && entry[4])
        return sel_resolve_gpu_uuid(c, entry, snap, out);
    if (strncmp(entry, "MIG-GPU-", 8) == 0 && strchr(entry, '/'))
        return sel_resolve_mig_legacy(c, entry, snap, out);
    if (strncmp(entry, "MIG-", 4) == 0 && entry[4])
        return sel_resolve_mig_uuid(c, entry, snap, out);
    if (strcmp(entry, "all") == 0 || strcmp(entry, "none") == 0 || strcmp(entry, "void") == 0)
        return kgs_seterr(c->err, c->errlen, KGS_EINVAL, "%s \"%s\": \"%s\" must be the only entry",
                          c->var, c->list, entry);
    return kgs_seterr(c->err, c->errlen, KGS_EINVAL,
                      "%s entry \"%s\": not a GPU index, GPU-<uuid>, MIG-<uuid>, \"all\" or "
                      "\"none\"",
                      c->var, entry);
}

/*
 * The list after its single-word forms. stop_note NULL: every entry must
 * resolve (the strict reading). Otherwise CUDA's reading: the first entry
 * that does not resolve ends the list, the entries before it stand, and
 * stop_note says where and why; only running out of room (KGS_ERANGE) is
 * still an error.
 */
static int sel_resolve_entries(sel_ctx_t *c, const snapshot_t *snap, device_selection_t *out,
                               char *stop_note, size_t notelen) {
    char why[512];
    char *err = c->err;
    size_t errlen = c->errlen;
    if (stop_note) {
        c->err = why;
        c->errlen = sizeof why;
    }
    unsigned n = 0;
    const char *p = c->list;
    int rc = 0;
    for (;;) {
        n++;
        const char *comma = strchr(p, ',');
        const char *end = comma ? comma : p + strlen(p);
        const char *s = p;
        while (s < end && sel_is_blank(*s))
            s++;
        const char *t = end;
        while (t > s && sel_is_blank(t[-1]))
            t--;
        char entry[SEL_ENTRY_MAX];
        size_t len = (size_t)(t - s);
        if (len == 0)
            rc = kgs_seterr(c->err, c->errlen, KGS_EINVAL, "%s \"%s\": entry %u is empty", c->var,
                            c->list, n);
        else if (len >= sizeof entry)
            rc = kgs_seterr(c->err, c->errlen, KGS_EINVAL,
                            "%s entry \"%.40s...\": longer than %zu bytes", c->var, s,
                            sizeof entry - 1);
        else {
            memcpy(entry, s, len);
            entry[len] = '\0';
            rc = sel_resolve_entry(c, entry, snap, out);
        }
        if (rc != 0)
            break;
        if (!comma)
            break;
        p = comma + 1;
    }
    c->err = err;
    c->errlen = errlen;
    if (rc == 0)
        return 0;
    if (!stop_note || rc == KGS_ERANGE) {
        if (stop_note)
            kgs_seterr(err, errlen, rc, "%s", why);
        memset(out, 0, sizeof *out);
        return rc;
    }
    if (n == 1)
        snprintf(stop_note, notelen,
                 "%s; CUDA stops reading the list at its first invalid entry, so no GPU is "
                 "visible",
                 why);
    else
        snprintf(stop_note, notelen,
                 "%s; CUDA stops reading the list at its first invalid entry, so only the %u "
                 "entr%s before it count%s",
                 why, n - 1, n - 1 == 1 ? "y" : "ies", n - 1 == 1 ? "s" : "");
    return 0;
}

static int sel_resolve(const char *var, const char *list, const snapshot_t *snap,
                       device_selection_t *out, char *stop_note, size_t notelen, char *err,
                       size_t errlen) {
    if (stop_note && notelen)
        stop_note[0] = '\0';
    if (out)
        memset(out, 0, sizeof *out);
    if (!list || !snap || !out)
        return kgs_seterr(err, errlen, KGS_EINVAL, "%s: no list, snapshot or output", var);
    sel_ctx_t c = {var, list, err, errlen};

    /* The list trimmed as a whole decides the single-word forms. */
    const char *b = list;
    const char *e = list + strlen(list);
    while (b < e && sel_is_blank(*b))
        b++;
    while (e > b && sel_is_blank(e[-1]))
        e--;
    size_t whole = (size_t)(e - b);
    if (whole == 0 || (whole == 4 && (strncmp(b, "none", 4) == 0 || strncmp(b, "void", 4) == 0)))
        return 0;
    if (whole == 3 && strncmp(b, "all", 3) == 0) {
        out->all_gpus = true;
        return 0;
    }
    return sel_resolve_entries(&c, snap, out, stop_note, notelen);
}

int device_selection_resolve(const char *var, const char *list, const snapshot_t *snap,
                             device_selection_t *out, char *err, size_t errlen) {
    return sel_resolve(var ? var : "device list", list, snap, out, NULL, 0, err, errlen);
}

int device_selection_resolve_cuda(const char *list, const snapshot_t *snap, device_selection_t *out,
                                  char *note, size_t notelen, char *err, size_t errlen) {
    char none[1];
    if (!note || !notelen) {
        note = none;
        notelen = sizeof none;
    }
    return sel_resolve("CUDA_VISIBLE_DEVICES", list, snap, out, note, notelen, err, errlen);
}

bool device_selection_has_gpu(const device_selection_t *sel, const gpu_record_t *g) {
    if (!sel || !g)
        return false;
    return sel->all_gpus || sel_has_gpu_index(sel, g->index);
}

bool device_selection_has_mig(const device_selection_t *sel, const snapshot_t *snap,
                              unsigned mig_slot) {
    if (!sel || !snap || mig_slot >= snap->mig_total)
        return false;
    return sel->all_gpus || sel_has_mig_slot(sel, mig_slot) ||
           sel_has_gpu_index(sel, snap->mig[mig_slot].parent_index);
}
