/*
 * workload.c - one answer for a whole workload, from every node's latest
 * snapshot (the cluster view) and the Kubernetes pod cache.
 *
 * DESIGN
 *
 * podSelector: the pods in scope are those of one namespace whose labels
 * match, in phase Running and not being deleted. A pod's GPUs are the device
 * ids its node's kubelet attributed to any of its containers ("GPU-<uuid>",
 * "GPU-<uuid>::<replica>" with time-slicing, "MIG-<uuid>"); a physical
 * device counts once per pod however many replicas of it the pod holds. The
 * pod's devices are evaluated by the standalone evaluator itself (a copy of
 * the config whose gpuUUID / migUUID lists are the pod's devices, in batches
 * of TRIGGER_MAX_UUIDS), so health checks, absent-field statuses and their
 * hints are word for word the standalone server's; we only prefix the node
 * and pod. Pods fold with podAggregation (a batch is summed, or max'd /
 * min'd, and batches combine exactly), and the pods' values with
 * `aggregation`. No pod in scope is a known 0 (scale-to-zero looks like
 * that). A pod with no device attributed contributes nothing when it asks
 * for no GPU or is still starting, and is a gap when it asks for one
 * (pod_without_device says when a pod is starting).
 *
 * Without podSelector every selected GPU (or MIG instance) of every selected
 * node is one input, and the aggregation runs once across all of them:
 * KEDA's AverageValue divides the workload-wide total by the target, so a
 * per-node fold would be wrong. Each node is first validated by
 * evaluator_run (same messages as standalone), then its per-GPU values are
 * collected. gpuIndex and migProfile apply on every node; gpuUUID and
 * migUUID name devices wherever they are (each node contributes the ones it
 * holds, and each must exist on some node), since a UUID list that had to
 * exist on every node could never span two.
 *
 * Partial data: a node with no agent, a stale or NVML-down snapshot, or (for
 * pods) an unknown attribution or a GPU-asking pod with no device is a gap.
 * partialData error turns a gap into UNAVAILABLE; ignore leaves the pod (or
 * node) out and counts it, and if nothing fresh is left the answer is
 * UNAVAILABLE, never 0.
 *
 * Determinism: KEDA round-robins over aggregator replicas (DESIGN.md rule 7)
 * and each replica's pod cache iterates in its own hash order. So every
 * problem is collected and the one whose pod (or node) name sorts first is
 * reported, and values are sorted before they are summed.
 *
 * Memory: the context lives on the stack (about 34 KiB, 25 of them a
 * trigger_config_t scratch whose demand part stays zero: the evaluator
 * reads only the GPU selection); values go to a stack array and, past
 * WL_STACK_VALUES, one heap array bounded by WORKLOAD_MAX_INPUTS.
 */
#include "cluster/workload.h"

#include <math.h>
#include <stdint.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "amdgpu/amdgpu_parse.h"
#include "core/aggregate.h"
#include "kube/pod_map.h"

/* workload_evaluate() copies the fields before `demand` into its scratch
 * config and nothing after them. */
_Static_assert(offsetof(trigger_config_t, demand) + sizeof(demand_config_t) ==
                   sizeof(trigger_config_t),
               "demand must stay the last field of trigger_config_t");

#define WL_STACK_VALUES 256
/* snapshot_new() allows at most 4096 GPUs and 4096 * 8 MIG instances. */
#define WL_SEEN_BYTES ((4096u + 4096u * 8u + 7u) / 8u)
#define WL_KEY_MAX 256

/* The problem to report: the one whose key (pod or node name) sorts first. */
typedef struct {
    bool set;
    eval_status_t status;
    unsigned count; /* problems seen in all */
    char key[WL_KEY_MAX];
    char message[sizeof(((eval_result_t *)0)->message)];
} wl_problem_t;

typedef struct {
    const trigger_config_t *c;
    const char *ns; /* podSelector: the pods' namespace */
    const cluster_view_t *view;
    const pod_cache_t *nodes; /* Node objects (labels), for nodeSelector label selectors */
    mono_ns_t now;
    uint64_t stale_after_ns;
    const char *dra_status; /* workload_inputs_t's: never NULL here */
    workload_stats_t *st;
    bool mig_metric; /* the metric exists per MIG instance */

    trigger_config_t scratch; /* c with per-node or per-pod device lists */

    double stack_vals[WL_STACK_VALUES];
    double *vals;
    size_t n, cap;
    bool overflow, oom;
    unsigned inputs; /* GPUs and MIG instances behind the values */
    /* the largest value and where it came from, for the message when the
     * values' sum overflows a double (agents may send any finite value) */
    double max_v;
    char max_who[WL_KEY_MAX + KUBE_NAMESPACE_MAX + KUBE_NAME_MAX + 16];

    wl_problem_t err;
    wl_problem_t hidden; /* no podSelector: an unhealthy GPU may hide a migUUID */
    char skip_key[WL_KEY_MAX];

    bool found_gpu[TRIGGER_MAX_UUIDS]; /* no podSelector: gpuUUID u is on some fresh node */
    bool found_mig[TRIGGER_MAX_UUIDS];
    unsigned char seen[WL_SEEN_BYTES]; /* podSelector: devices already counted for this pod */
} wl_ctx_t;

/* ---- small helpers --------------------------------------------------------- */

static void set_result(eval_result_t *out, eval_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_result(eval_result_t *out, eval_status_t st, const char *fmt, ...) {
    out->status = st;
    out->value = 0;
    out->active = false;
    out->inputs = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->message, sizeof out->message, fmt, ap);
    va_end(ap);
}

static void problem_voffer(wl_problem_t *p, const char *key, eval_status_t st, const char *fmt,
                           va_list ap) __attribute__((format(printf, 4, 0)));
static void problem_voffer(wl_problem_t *p, const char *key, eval_status_t st, const char *fmt,
                           va_list ap) {
    p->count++;
    if (p->set && strcmp(key, p->key) >= 0)
        return;
    p->set = true;
    p->status = st;
    snprintf(p->key, sizeof p->key, "%s", key);
    vsnprintf(p->message, sizeof p->message, fmt, ap);
}

static void problem_offer(wl_problem_t *p, const char *key, eval_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void problem_offer(wl_problem_t *p, const char *key, eval_status_t st, const char *fmt,
                          ...) {
    va_list ap;
    va_start(ap, fmt);
    problem_voffer(p, key, st, fmt, ap);
    va_end(ap);
}

static void fail(wl_ctx_t *x, const char *key, eval_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void fail(wl_ctx_t *x, const char *key, eval_status_t st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    problem_voffer(&x->err, key, st, fmt, ap);
    va_end(ap);
}

/* A pod or node whose data cannot be used: an error, or with partialData
 * ignore a counted skip (its reason kept for the stats). */
static void gap(wl_ctx_t *x, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void gap(wl_ctx_t *x, const char *key, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (x->c->partial_data == PARTIAL_DATA_ERROR) {
        problem_voffer(&x->err, key, EVAL_UNAVAILABLE, fmt, ap);
    } else {
        if (x->st->skipped++ == 0 || strcmp(key, x->skip_key) < 0) {
            snprintf(x->skip_key, sizeof x->skip_key, "%s", key);
            vsnprintf(x->st->skip_reason, sizeof x->st->skip_reason, fmt, ap);
        }
    }
    va_end(ap);
}

/* Appends a value; false (with overflow or oom set) when it cannot. */
/* Adds value v, which came from `who` (a node, or a node and a pod). */
static bool push(wl_ctx_t *x, double v, const char *who) {
    if (x->n == 0 || v > x->max_v) {
        x->max_v = v;
        snprintf(x->max_who, sizeof x->max_who, "%s", who);
    }
    if (x->n == x->cap) {
        if (x->cap >= WORKLOAD_MAX_INPUTS) {
            x->overflow = true;
            return false;
        }
        size_t cap = x->cap * 4 < WORKLOAD_MAX_INPUTS ? x->cap * 4 : WORKLOAD_MAX_INPUTS;
        double *nv = malloc(cap * sizeof *nv);
        if (!nv) {
            x->oom = true;
            return false;
        }
        memcpy(nv, x->vals, x->n * sizeof *nv);
        if (x->vals != x->stack_vals)
            free(x->vals);
        x->vals = nv;
        x->cap = cap;
    }
    x->vals[x->n++] = v;
    return true;
}

static bool stopped(const wl_ctx_t *x) {
    return x->overflow || x->oom;
}

static double secs(uint64_t ns) {
    return (double)ns / 1e9;
}

/* true when e's snapshot may be used; otherwise why says why not. */
static bool node_fresh(const wl_ctx_t *x, const cluster_node_t *e, char *why, size_t len) {
    const snapshot_t *s = e->snap;
    const char *down = e->connected ? "" : "; agent stream down: ";
    const char *down_why = e->connected ? "" : (e->error[0] ? e->error : "disconnected");
    if (s->status == SNAPSHOT_NVML_DOWN) {
        snprintf(why, len, "%s unavailable: %s%s%s", snapshot_down_subject(s),
                 s->error[0] ? s->error : nvml_code_name(s->nvml_code), down, down_why);
        return false;
    }
    uint64_t age = x->now > s->taken_mono ? x->now - s->taken_mono : 0;
    if (age > x->stale_after_ns) {
        snprintf(why, len, "GPU snapshot is %.1f s old (stale after %.1f s)%s%s", secs(age),
                 secs(x->stale_after_ns), e->connected ? "; the agent sends nothing newer" : down,
                 down_why);
        return false;
    }
    return true;
}

static const gpu_record_t *first_unhealthy_selected(const trigger_config_t *c,
                                                    const snapshot_t *s) {
    for (unsigned i = 0; i < s->gpu_count; i++)
        if (evaluator_gpu_selected(c, &s->gpus[i]) && s->gpus[i].health != GPU_HEALTH_OK)
            return &s->gpus[i];
    return NULL;
}

/* Any GPU of the node that is not healthy (a pod's MIG device may sit on
 * any of them), or NULL. */
static const gpu_record_t *first_unhealthy(const snapshot_t *s) {
    for (unsigned i = 0; i < s->gpu_count; i++)
        if (s->gpus[i].health != GPU_HEALTH_OK)
            return &s->gpus[i];
    return NULL;
}

/* Whether metric t exists per MIG instance: asked of evaluator_mig_value
 * with every field present, so the list lives in one place. */
static bool metric_exists_per_mig(metric_type_t t) {
    mig_record_t m;
    memset(&m, 0, sizeof m);
    m.valid = UINT32_MAX;
    m.memory_total_bytes = 1;
    double v;
    return evaluator_mig_value(t, &m, &v);
}

/* Kubelets list a pod's devices in a stable order that usually follows the
 * GPU order, so the scan starts after the previous hit (*hint): a pod's
 * devices are then found in one comparison each. */
static int find_gpu_from(const snapshot_t *s, const char *id, size_t len, unsigned *hint) {
    unsigned n = s->gpu_count;
    for (unsigned k = 0; k < n; k++) {
        unsigned i = (*hint + k) % n;
        if (strncmp(s->gpus[i].uuid, id, len) == 0 && s->gpus[i].uuid[len] == '\0') {
            *hint = i + 1;
            return (int)i;
        }
    }
    return -1;
}

/* The GPU whose PCI address is bdf (normalised, as pod_map and
 * resource_slices hold an AMD device's id): the address is the identity
 * AMD's device plugin and DRA driver name a GPU by. Records are compared in
 * normalised form, so a backend's spelling (NVML's 8-digit domain, upper
 * case) does not matter. */
static int find_gpu_by_pci(const snapshot_t *s, const char *bdf, unsigned *hint) {
    unsigned n = s->gpu_count;
    for (unsigned k = 0; k < n; k++) {
        unsigned i = (*hint + k) % n;
        const char *p = s->gpus[i].pci_bus_id;
        char norm[AMDGPU_BDF_MAX];
        if (p[0] && (strcmp(p, bdf) == 0 ||
                     (amdgpu_bdf_normalise(p, strlen(p), norm) == 0 && strcmp(norm, bdf) == 0))) {
            *hint = i + 1;
            return (int)i;
        }
    }
    return -1;
}

static int find_mig(const snapshot_t *s, const char *id, size_t len) {
    for (unsigned i = 0; i < s->mig_total; i++)
        if (strncmp(s->mig[i].uuid, id, len) == 0 && s->mig[i].uuid[len] == '\0')
            return (int)i;
    return -1;
}

/* ---- podSelector ----------------------------------------------------------- */

/* One pod's devices folded so far. */
typedef struct {
    unsigned n;
    double v; /* sum (avg, sum) or extreme (max, min) */
    bool failed;
} pod_acc_t;

typedef struct {
    wl_ctx_t *x;
    const pod_t *pod;
    const snapshot_t *s;
    char who[WL_KEY_MAX + KUBE_NAMESPACE_MAX + KUBE_NAME_MAX + 16]; /* node N (pod ns/p) */
    pod_acc_t acc;
    unsigned gpu_hint; /* where the next device lookup starts */
} pod_eval_t;

static aggregation_t batch_aggregation(pod_aggregation_t a) {
    switch (a) {
    case POD_AGG_MAX:
        return AGG_MAX;
    case POD_AGG_MIN:
        return AGG_MIN;
    case POD_AGG_AVG:
    case POD_AGG_SUM:
        break;
    }
    return AGG_SUM; /* avg divides the exact sum at the end */
}

/* Runs the evaluator on scratch's selection and folds its answer into the
 * pod's accumulator. */
static void pod_run_scratch(pod_eval_t *pe) {
    wl_ctx_t *x = pe->x;
    eval_result_t r;
    evaluator_run(&x->scratch, pe->s, x->now, x->stale_after_ns, &r);
    if (r.status != EVAL_OK) {
        fail(x, pe->pod->name, r.status, "%s: %s", pe->who, r.message);
        pe->acc.failed = true;
        return;
    }
    pod_aggregation_t a = x->c->pod_aggregation;
    if (pe->acc.n == 0 || a == POD_AGG_AVG || a == POD_AGG_SUM)
        pe->acc.v = pe->acc.n == 0 ? r.value : pe->acc.v + r.value;
    else if (a == POD_AGG_MAX ? r.value > pe->acc.v : r.value < pe->acc.v)
        pe->acc.v = r.value;
    pe->acc.n += r.inputs;
}

/* Evaluates the devices gathered in scratch's gpuUUID or migUUID list. */
static void pod_flush(pod_eval_t *pe) {
    trigger_config_t *sc = &pe->x->scratch;
    if (sc->gpu_uuid_count == 0 && sc->mig_uuid_count == 0)
        return;
    if (!pe->acc.failed)
        pod_run_scratch(pe);
    sc->gpu_uuid_count = 0;
    sc->mig_uuid_count = 0;
}

/* Evaluates GPU `index` alone, selected by its index: the batch path for a
 * GPU with no UUID (an AMD GPU whose ASIC has no unique_id), which a
 * gpuUUID list cannot name. */
static void pod_flush_index(pod_eval_t *pe, unsigned index) {
    trigger_config_t *sc = &pe->x->scratch;
    pod_flush(pe);
    if (pe->acc.failed)
        return;
    int saved = sc->gpu_index;
    sc->gpu_index = (int)index;
    pod_run_scratch(pe);
    sc->gpu_index = saved;
}

/* Folds one device's value into the pod's accumulator (pod_flush's rule
 * for a batch of one). */
static void pod_acc_add(pod_eval_t *pe, double v) {
    pod_aggregation_t a = pe->x->c->pod_aggregation;
    if (pe->acc.n == 0 || a == POD_AGG_AVG || a == POD_AGG_SUM)
        pe->acc.v = pe->acc.n == 0 ? v : pe->acc.v + v;
    else if (a == POD_AGG_MAX ? v > pe->acc.v : v < pe->acc.v)
        pe->acc.v = v;
    pe->acc.n++;
}

/* ---- shared GPUs (gpuSharing) ---------------------------------------------- */

/*
 * A pod's share of a device is the sum over the processes NVML lists on it
 * whose cgroup is the pod's. Kept apart from the whole-device path above:
 * pod_add_device asks share_try() first and, when it declines, goes on as
 * before. See docs/configuration.md, "Shared GPUs".
 */

/* How messages name device i: its uuid, or a GPU without one (an AMD GPU
 * with no unique_id) by its PCI address. */
static const char *device_label(const snapshot_t *s, bool is_gpu, int i) {
    if (!is_gpu)
        return s->mig[i].uuid;
    return s->gpus[i].uuid[0] ? s->gpus[i].uuid : s->gpus[i].pci_bus_id;
}

static const proc_list_t *device_proc_list(const snapshot_t *s, bool is_gpu, int i) {
    return is_gpu ? &s->gpus[i].procs : &s->mig[i].procs;
}

/* Whether another pod on the node is attributed physical device id[0..len). */
static bool device_held_by_another_pod(const node_pods_t *np, const pod_t *pod, const char *id,
                                       size_t len) {
    for (size_t k = 0; k < np->count; k++) {
        const node_pod_entry_t *e = &np->entries[k];
        if (strcmp(e->namespace_, pod->namespace) == 0 && strcmp(e->pod, pod->name) == 0)
            continue;
        for (size_t d = 0; d < e->device_count; d++) {
            const char *o = e->device_ids[d];
            if (strncmp(o, id, len) == 0 && (o[len] == '\0' || strncmp(o + len, "::", 2) == 0))
                return true;
        }
    }
    return false;
}

static bool metric_is_utilisation(metric_type_t t) {
    return t == METRIC_GPU_UTILIZATION || t == METRIC_MEMORY_UTILIZATION;
}

/* Why the device's per-process data cannot give metric t a share (written
 * into why), or false when it can. */
static bool share_data_missing(const snapshot_t *s, bool is_gpu, int i, metric_type_t t, char *why,
                               size_t n) {
    const proc_list_t *pl = device_proc_list(s, is_gpu, i);
    const char *uuid = device_label(s, is_gpu, i);
    if (!s->procs_attributed) {
        snprintf(why, n,
                 "the agent does not attribute GPU processes to pods (it needs --proc-root /proc "
                 "and the host PID namespace: the chart's agent.gpuSharingAttribution)");
        return true;
    }
    if (!pl->list_ok) {
        snprintf(why, n, "NVML's process list of %s is unavailable (%s)", uuid,
                 pl->list_code ? nvml_code_name(pl->list_code) : "this driver has no such call");
        return true;
    }
    if (pl->dropped) {
        snprintf(why, n,
                 "%s runs more processes than the agent reports (%u left out), so the pod's share "
                 "is not known",
                 uuid, pl->dropped);
        return true;
    }
    if (metric_is_utilisation(t) && !pl->util_ok) {
        if (!is_gpu)
            snprintf(why, n,
                     "NVML has no per-process utilisation on a MIG instance (%s); "
                     "memory_used_mib and memory_used_percent have a share there",
                     uuid);
        else
            snprintf(why, n, "NVML's per-process utilisation of %s is unavailable (%s)", uuid,
                     pl->util_code ? nvml_code_name(pl->util_code)
                                   : "this driver has no such call");
        return true;
    }
    if (t == METRIC_MEMORY_USED_PERCENT &&
        !(is_gpu ? gpu_has(&s->gpus[i], GPU_F_MEM_TOTAL) && s->gpus[i].memory_total_bytes > 0
                 : mig_has(&s->mig[i], GPU_F_MEM_TOTAL) && s->mig[i].memory_total_bytes > 0)) {
        snprintf(why, n, "the memory total of %s is absent", uuid);
        return true;
    }
    return false;
}

/* The pod's share of device i for metric t (data checked present). False
 * with why when one of its processes lacks the value. */
static bool share_value(const snapshot_t *s, bool is_gpu, int i, const char *pod_uid,
                        metric_type_t t, double *out, char *why, size_t n) {
    const proc_list_t *pl = device_proc_list(s, is_gpu, i);
    double sum = 0;
    for (unsigned k = 0; k < pl->count && pl->first + k < s->proc_total; k++) {
        const proc_record_t *r = &s->procs[pl->first + k];
        if (!pod_uid[0] || strcasecmp(r->pod_uid, pod_uid) != 0)
            continue;
        proc_field_t f = t == METRIC_GPU_UTILIZATION      ? PROC_F_SM_UTIL
                         : t == METRIC_MEMORY_UTILIZATION ? PROC_F_MEM_UTIL
                                                          : PROC_F_USED_MEMORY;
        if (!proc_has(r, f)) {
            snprintf(why, n, "NVML does not report the %s of the pod's process %u on %s",
                     f == PROC_F_USED_MEMORY ? "used memory" : "utilisation", r->pid,
                     device_label(s, is_gpu, i));
            return false;
        }
        sum += f == PROC_F_SM_UTIL    ? r->sm_util_pct
               : f == PROC_F_MEM_UTIL ? r->mem_util_pct
                                      : (double)r->used_memory_bytes;
    }
    if (t == METRIC_MEMORY_USED_MIB)
        sum /= 1048576.0;
    else if (t == METRIC_MEMORY_USED_PERCENT)
        sum = sum * 100.0 /
              (double)(is_gpu ? s->gpus[i].memory_total_bytes : s->mig[i].memory_total_bytes);
    *out = sum;
    return true;
}

/*
 * The gpuSharing decision for one device of the pod. Returns false when the
 * whole-device path applies (whole; auto on an unshared device or one
 * without per-process data; an unhealthy GPU, whose error the whole path
 * writes). Returns true when the share was folded in, or, for share with
 * its data missing, the pod was marked failed with a gap.
 */
static bool share_try(pod_eval_t *pe, const node_pods_t *np, const char *id, size_t len,
                      bool replica, bool is_gpu, int i) {
    wl_ctx_t *x = pe->x;
    const trigger_config_t *c = x->c;
    const snapshot_t *s = pe->s;
    if (c->gpu_sharing == GPU_SHARING_WHOLE || !gpu_sharing_metric_per_process(c->metric_type))
        return false;
    if (c->gpu_sharing == GPU_SHARING_AUTO && !replica &&
        !device_held_by_another_pod(np, pe->pod, id, len))
        return false;
    const gpu_record_t *g = is_gpu ? &s->gpus[i] : snapshot_gpu_by_index(s, s->mig[i].parent_index);
    if (!g || g->health != GPU_HEALTH_OK)
        return false;
    char why[400];
    double v = 0;
    if (share_data_missing(s, is_gpu, i, c->metric_type, why, sizeof why) ||
        !share_value(s, is_gpu, i, pe->pod->uid, c->metric_type, &v, why, sizeof why)) {
        if (c->gpu_sharing == GPU_SHARING_AUTO)
            return false;
        gap(x, pe->pod->name, "%s: gpuSharing share: %s", pe->who, why);
        pe->acc.failed = true;
        return true;
    }
    pod_acc_add(pe, v);
    return true;
}

/* Whether resolved id d came from one of ent's DRA devices with a share id:
 * capacity the driver shares between claims, as a time-slicing replica id
 * ("GPU-x::2") is for the device plugin. */
static bool dra_shared_claim(const node_pod_entry_t *ent, const char *d) {
    for (size_t i = 0; i < ent->dra_count; i++)
        if (ent->dra[i].share_id[0] && strcmp(ent->dra[i].uuid, d) == 0)
            return true;
    return false;
}

/* Adds device id d of the pod to the batch; false when the pod failed.
 * shared: d is a replica or a shared DRA claim (gpuSharing auto shares it). */
static bool pod_add_device(pod_eval_t *pe, const node_pods_t *np, const char *d, bool shared) {
    wl_ctx_t *x = pe->x;
    const snapshot_t *s = pe->s;
    trigger_config_t *sc = &x->scratch;
    const char *sep = strstr(d, "::");
    size_t len = sep ? (size_t)(sep - d) : strlen(d);
    bool is_gpu = strncmp(d, "GPU-", 4) == 0, is_mig = strncmp(d, "MIG-", 4) == 0;
    char bdf[AMDGPU_BDF_MAX];
    bool is_pci = !is_gpu && !is_mig && amdgpu_bdf_normalise(d, len, bdf) == 0;
    if (pod_map_id_is_amd_partition(d)) {
        /* A partition is not the whole GPU, and the snapshot has no record
         * per partition: the pod's value is unknown, never the GPU's. */
        gap(x, pe->pod->name,
            "%s: device %s is a partition of an AMD GPU, and the node's GPU reader reports whole "
            "GPUs only, so the pod's share is unknown",
            pe->who, d);
        pe->acc.failed = true;
        return false;
    }
    int i = is_gpu   ? find_gpu_from(s, d, len, &pe->gpu_hint)
            : is_mig ? find_mig(s, d, len)
            : is_pci ? find_gpu_by_pci(s, bdf, &pe->gpu_hint)
                     : -1;
    if (is_pci && i < 0) {
        fail(x, pe->pod->name, EVAL_FAILED_PRECONDITION,
             "%s: the GPU at PCI address %s is not in the node's snapshot (it reports %u GPU%s)",
             pe->who, bdf, s->gpu_count, s->gpu_count == 1 ? "" : "s");
        pe->acc.failed = true;
        return false;
    }
    is_gpu = is_gpu || is_pci;
    if (i < 0) {
        const gpu_record_t *sick = is_mig ? first_unhealthy(s) : NULL;
        if (sick)
            fail(x, pe->pod->name, EVAL_UNAVAILABLE,
                 "%s: MIG device %.*s is not in the snapshot, and GPU %u (%s) is %s (NVML %s): "
                 "its MIG instances cannot be listed",
                 pe->who, (int)len, d, sick->index, sick->uuid[0] ? sick->uuid : "uuid unknown",
                 gpu_health_name(sick->health), nvml_code_name(sick->health_nvml_code));
        else if (!is_gpu && !is_mig)
            fail(x, pe->pod->name, EVAL_FAILED_PRECONDITION,
                 "%s: device id %s is neither GPU-<uuid>, MIG-<uuid> nor a PCI address", pe->who,
                 d);
        else
            fail(x, pe->pod->name, EVAL_FAILED_PRECONDITION,
                 "%s: device %s is unknown to NVML on the node (it reports %u GPU%s and %u MIG "
                 "instance%s)",
                 pe->who, d, s->gpu_count, s->gpu_count == 1 ? "" : "s", s->mig_total,
                 s->mig_total == 1 ? "" : "s");
        pe->acc.failed = true;
        return false;
    }
    unsigned bit = is_gpu ? (unsigned)i : s->gpu_count + (unsigned)i;
    if (x->seen[bit / 8] & (1u << (bit % 8)))
        return true; /* another replica (or container) of a device already counted */
    x->seen[bit / 8] |= (unsigned char)(1u << (bit % 8));
    if (share_try(pe, np, d, len, shared || sep != NULL, is_gpu, i))
        return !pe->acc.failed;
    if (is_gpu) {
        /* The common case, a healthy GPU with the field present, needs no
         * trip through evaluator_run: a workload of hundreds of pods is
         * evaluated on every GetMetrics. Anything else takes the batch path
         * below, whose evaluator_run writes the standalone error message. */
        const gpu_record_t *g = &s->gpus[i];
        double v;
        if (g->health == GPU_HEALTH_OK && evaluator_gpu_value(x->c->metric_type, g, &v) &&
            isfinite(v)) {
            pod_acc_add(pe, v);
            return true;
        }
        if (sc->mig_uuid_count)
            pod_flush(pe);
        if (!g->uuid[0]) {
            /* An AMD GPU without a unique_id has no UUID to list. */
            pod_flush_index(pe, g->index);
            return !pe->acc.failed;
        }
        snprintf(sc->gpu_uuids[sc->gpu_uuid_count++], sizeof sc->gpu_uuids[0], "%s",
                 s->gpus[i].uuid);
        if (sc->gpu_uuid_count == TRIGGER_MAX_UUIDS)
            pod_flush(pe);
    } else {
        if (!x->mig_metric) {
            fail(x, pe->pod->name, EVAL_FAILED_PRECONDITION,
                 "%s: metricType %s does not exist per MIG instance, and the pod holds MIG "
                 "instance %s: MIG instances have memory_used_mib, memory_used_percent, "
                 "sm_active, sm_occupancy and dram_bandwidth",
                 pe->who, metric_type_name(x->c->metric_type), s->mig[i].uuid);
            pe->acc.failed = true;
            return false;
        }
        if (sc->gpu_uuid_count)
            pod_flush(pe);
        snprintf(sc->mig_uuids[sc->mig_uuid_count++], sizeof sc->mig_uuids[0], "%s",
                 s->mig[i].uuid);
        if (sc->mig_uuid_count == TRIGGER_MAX_UUIDS)
            pod_flush(pe);
    }
    return !pe->acc.failed;
}

/*
 * A pod in scope whose node attributes no device to it. One that asks for
 * no GPU contributes nothing (a CPU sidecar Deployment sharing the labels,
 * say). One that asks for a GPU and has none is a gap, never a 0 (a device
 * plugin whose ids the agent cannot read, a DRA claim not resolved), unless
 * it is *starting*: the kubelet allocates devices when it admits the pod,
 * just before status.startTime, but the attribution the node sent comes
 * from a pod-resources poll that may be up to one agent interval older than
 * its snapshot. So while the node's latest snapshot was taken less than
 * stale_after (by default 3 sample intervals) after the pod's start, plus
 * the second that startTime's whole-second resolution may hide, the pod may
 * simply be missing from a poll that predates it. Both times come from the node's own clock
 * (the kubelet writes startTime, the agent stamps its snapshot), so no
 * clock synchronisation between machines is assumed. Without startTime
 * the earlier creationTimestamp stands in, which only shortens the window;
 * without either time, or a snapshot without its time, there is no window.
 */
static void pod_without_device(wl_ctx_t *x, const pod_eval_t *pe) {
    const pod_t *p = pe->pod;
    if (!pod_asks_gpu(p)) {
        x->st->pods_without_gpu++;
        return;
    }
    int64_t since_s = p->started_unix > 0 ? p->started_unix : p->created_unix;
    int64_t grace_ms = (int64_t)(x->stale_after_ns / 1000000u);
    int64_t taken_ms = pe->s->taken_wall_ms;
    if (since_s > 0 && since_s < INT64_MAX / 1000 - 1 && taken_ms > 0 &&
        taken_ms < (since_s + 1) * 1000 + grace_ms) {
        x->st->pods_starting++;
        return;
    }
    char asks[96], when[64] = "";
    pod_gpu_ask_describe(p, asks, sizeof asks);
    if (since_s > 0 && taken_ms > 0)
        snprintf(when, sizeof when, " %.0f s after the pod started",
                 (double)(taken_ms - since_s * 1000) / 1000.0);
    /* The likely causes differ: a device plugin whose ids are not UUIDs,
     * or claims that nothing resolves to a GPU. */
    const char *hint = p->gpu_asks & ~POD_ASK_CLAIM
                           ? "the agent reads device ids GPU-<uuid> and MIG-<uuid> under "
                             "nvidia.com/*, and PCI addresses under amd.com/*"
                           : "no GPU is attributed through its resource claims";
    gap(x, p->name, "%s: asks for %s, but the node's kubelet attributes no device to it%s (%s)",
        pe->who, asks, when, hint);
}

/* A DRA device the aggregator could not map to a GPU UUID (its
 * ResourceSlice is not known yet): the pod's value is unknown, never 0. */
static void dra_gap(wl_ctx_t *x, const pod_eval_t *pe, const node_pod_entry_t *ent) {
    const node_pod_dra_t *d = NULL;
    for (size_t i = 0; i < ent->dra_count && !d; i++)
        if (!ent->dra[i].uuid[0] && !ent->dra[i].not_gpu)
            d = &ent->dra[i];
    if (!d)
        return;
    const char *status = x->dra_status;
    gap(x, pe->pod->name,
        "%s: DRA device %s/%s/%s (container %s) is not resolved to a GPU UUID: %s", pe->who,
        d->driver, d->pool, d->device, ent->container,
        status[0] ? status : "no ResourceSlice lists it yet");
}

static void pod_evaluate(wl_ctx_t *x, const pod_t *p) {
    pod_eval_t pe = {.x = x, .pod = p};
    if (!p->node[0]) {
        gap(x, p->name, "pod %s/%s: Running but assigned to no node", p->namespace, p->name);
        return;
    }
    snprintf(pe.who, sizeof pe.who, "node %s (pod %s/%s)", p->node, p->namespace, p->name);
    const cluster_node_t *e = x->view ? cluster_view_find_node(x->view, p->node) : NULL;
    if (!e) {
        gap(x, p->name, "%s: no agent has reported for this node", pe.who);
        return;
    }
    char why[640];
    if (!node_fresh(x, e, why, sizeof why)) {
        gap(x, p->name, "%s: %s", pe.who, why);
        return;
    }
    if (!e->pods || !e->pods->known) {
        gap(x, p->name, "%s: which pods hold which GPUs on the node is unknown: %s", pe.who,
            !e->pods            ? "the agent sent no pod attribution"
            : e->pods->error[0] ? e->pods->error
                                : "no reason given");
        return;
    }
    pe.s = e->snap;
    memset(x->seen, 0, (pe.s->gpu_count + pe.s->mig_total + 7u) / 8u);
    x->scratch.gpu_uuid_count = 0;
    x->scratch.mig_uuid_count = 0;
    const node_pods_t *np = e->pods;
    for (size_t k = 0; k < np->count && !pe.acc.failed; k++) {
        const node_pod_entry_t *ent = &np->entries[k];
        if (strcmp(ent->namespace_, p->namespace) != 0 || strcmp(ent->pod, p->name) != 0)
            continue;
        if (ent->dra_unresolved > 0) {
            dra_gap(x, &pe, ent);
            return;
        }
        for (size_t d = 0; d < ent->device_count; d++)
            if (!pod_add_device(&pe, np, ent->device_ids[d],
                                ent->dra_count > 0 && dra_shared_claim(ent, ent->device_ids[d])))
                break;
    }
    pod_flush(&pe);
    if (pe.acc.failed)
        return;
    if (pe.acc.n == 0) {
        pod_without_device(x, &pe);
        return;
    }
    double v = x->c->pod_aggregation == POD_AGG_AVG ? pe.acc.v / pe.acc.n : pe.acc.v;
    if (!isfinite(v)) {
        fail(x, p->name, EVAL_UNAVAILABLE,
             "%s: metricType %s over the pod's %u devices is not finite (their values overflow)",
             pe.who, metric_type_name(x->c->metric_type), pe.acc.n);
        return;
    }
    if (push(x, v, pe.who)) {
        x->st->pods_counted++;
        x->inputs += pe.acc.n;
    }
}

typedef struct {
    const pod_t *pod;
} pod_ref_t;

static const char *pod_lookup(void *ud, const char *key) {
    return pod_label(((const pod_ref_t *)ud)->pod, key);
}

const char *workload_namespace(const trigger_config_t *c, const char *scaled_object_namespace) {
    return c->has_namespace ? c->pod_namespace : scaled_object_namespace;
}

bool workload_pod_selected(const trigger_config_t *c, const char *ns, const pod_t *p) {
    if (strcmp(p->namespace, ns) != 0)
        return false;
    pod_ref_t ref = {p};
    return label_selector_matches(&c->pod_selector, pod_lookup, &ref);
}

bool workload_pod_in_scope(const trigger_config_t *c, const char *ns, const pod_t *p) {
    return p->phase == POD_PHASE_RUNNING && !p->deleting && workload_pod_selected(c, ns, p);
}

static bool pod_visit(const pod_t *p, void *ud) {
    wl_ctx_t *x = ud;
    if (!workload_pod_in_scope(x->c, x->ns, p))
        return true;
    x->st->pods_in_scope++;
    pod_evaluate(x, p);
    return !stopped(x);
}

/* ---- nodes ----------------------------------------------------------------- */

static bool node_has_profile_match(const trigger_config_t *c, const snapshot_t *s) {
    for (unsigned i = 0; i < s->mig_total; i++) {
        const gpu_record_t *parent = snapshot_gpu_by_index(s, s->mig[i].parent_index);
        if (parent && evaluator_gpu_selected(c, parent) && evaluator_mig_selected(c, &s->mig[i]))
            return true;
    }
    return false;
}

/* Narrows gpuUUID / migUUID to the devices on s (scratch) and records which
 * were found. false when the node holds none of them. */
static bool node_narrow_uuids(wl_ctx_t *x, const snapshot_t *s, const char *name) {
    const trigger_config_t *c = x->c;
    trigger_config_t *sc = &x->scratch;
    sc->gpu_uuid_count = 0;
    sc->mig_uuid_count = 0;
    for (unsigned u = 0; u < c->gpu_uuid_count; u++) {
        unsigned hint = 0;
        if (find_gpu_from(s, c->gpu_uuids[u], strlen(c->gpu_uuids[u]), &hint) >= 0) {
            x->found_gpu[u] = true;
            memcpy(sc->gpu_uuids[sc->gpu_uuid_count++], c->gpu_uuids[u], sizeof c->gpu_uuids[u]);
        }
    }
    for (unsigned u = 0; u < c->mig_uuid_count; u++)
        if (find_mig(s, c->mig_uuids[u], strlen(c->mig_uuids[u])) >= 0) {
            x->found_mig[u] = true;
            memcpy(sc->mig_uuids[sc->mig_uuid_count++], c->mig_uuids[u], sizeof c->mig_uuids[u]);
        }
    if (c->gpu_uuid_count > 0 && sc->gpu_uuid_count == 0)
        return false;
    if (c->mig_uuid_count > 0 && sc->mig_uuid_count == 0) {
        const gpu_record_t *sick = first_unhealthy_selected(sc, s);
        if (sick)
            problem_offer(&x->hidden, name, EVAL_UNAVAILABLE,
                          "GPU %u (%s) on node %s is %s (NVML %s): its MIG instances cannot be "
                          "listed",
                          sick->index, sick->uuid[0] ? sick->uuid : "uuid unknown", name,
                          gpu_health_name(sick->health), nvml_code_name(sick->health_nvml_code));
        return false;
    }
    return true;
}

static void node_evaluate(wl_ctx_t *x, const cluster_node_t *e) {
    const trigger_config_t *c = x->c;
    const snapshot_t *s = e->snap;
    const char *name = e->node[0] ? e->node : e->address;
    char why[640];
    if (!node_fresh(x, e, why, sizeof why)) {
        gap(x, name, "node %s: %s", name, why);
        return;
    }
    const trigger_config_t *nc = c;
    if (c->gpu_uuid_count > 0 || c->mig_uuid_count > 0) {
        if (!node_narrow_uuids(x, s, name))
            return; /* none of the named devices lives here */
        nc = &x->scratch;
    } else if (c->mig_profile_count > 0 && !node_has_profile_match(c, s) &&
               !first_unhealthy_selected(c, s)) {
        return; /* no such instance here; the workload may still have some elsewhere */
    }
    eval_result_t r;
    evaluator_run(nc, s, x->now, x->stale_after_ns, &r);
    if (r.status != EVAL_OK) {
        fail(x, name, r.status, "%s", r.message);
        return;
    }
    bool mig_mode = nc->mig_uuid_count > 0 || nc->mig_profile_count > 0;
    unsigned got = 0;
    double v;
    if (!mig_mode) {
        for (unsigned i = 0; i < s->gpu_count && !stopped(x); i++)
            if (evaluator_gpu_selected(nc, &s->gpus[i]) &&
                evaluator_gpu_value(nc->metric_type, &s->gpus[i], &v) && push(x, v, name))
                got++;
    } else {
        for (unsigned i = 0; i < s->mig_total && !stopped(x); i++) {
            const mig_record_t *m = &s->mig[i];
            const gpu_record_t *parent = snapshot_gpu_by_index(s, m->parent_index);
            if (parent && evaluator_gpu_selected(nc, parent) && evaluator_mig_selected(nc, m) &&
                evaluator_mig_value(nc->metric_type, m, &v) && push(x, v, name))
                got++;
        }
    }
    if (stopped(x))
        return;
    if (got != r.inputs) { /* a broken invariant, but never worth a crash */
        fail(x, name, EVAL_FAILED_PRECONDITION,
             "node %s: collected %u values where the evaluator selected %u", name, got, r.inputs);
        return;
    }
    x->st->nodes_counted++;
    x->inputs += got;
}

/* After every node: each gpuUUID / migUUID must have been somewhere. */
static void nodes_check_uuids(wl_ctx_t *x, unsigned nodes) {
    const trigger_config_t *c = x->c;
    for (unsigned pass = 0; pass < 2; pass++) {
        bool mig = pass == 1;
        unsigned n = mig ? c->mig_uuid_count : c->gpu_uuid_count;
        for (unsigned u = 0; u < n; u++) {
            if (mig ? x->found_mig[u] : x->found_gpu[u])
                continue;
            const char *key = mig ? "migUUID" : "gpuUUID";
            const char *id = mig ? c->mig_uuids[u] : c->gpu_uuids[u];
            if (mig && x->hidden.set)
                fail(x, "", EVAL_UNAVAILABLE, "migUUID %s not found: %s", id, x->hidden.message);
            else if (x->st->skipped > 0)
                fail(x, "", EVAL_UNAVAILABLE,
                     "%s %s not found on the nodes with fresh data (%u skipped: %s)", key, id,
                     x->st->skipped, x->st->skip_reason);
            else
                fail(x, "", EVAL_FAILED_PRECONDITION,
                     "%s %s not found on any of the %u selected node%s", key, id, nodes,
                     nodes == 1 ? "" : "s");
            return;
        }
    }
}

typedef struct {
    wl_ctx_t *x;
    unsigned nodes;
} node_sel_t;

static const char *node_label_lookup(void *ud, const char *key) {
    return pod_label((const pod_t *)ud, key);
}

/* A Kubernetes Node whose labels match nodeSelector: its agent's GPUs count;
 * a matching node without an agent is a gap (partialData decides). */
static bool node_sel_visit(const pod_t *node, void *ud) {
    node_sel_t *ns = ud;
    wl_ctx_t *x = ns->x;
    if (!label_selector_matches(&x->c->node_selector, node_label_lookup, (void *)node))
        return true;
    const cluster_node_t *e = x->view ? cluster_view_find_node(x->view, node->name) : NULL;
    ns->nodes++;
    if (!e)
        gap(x, node->name, "node %s: matches nodeSelector but no agent has reported for it",
            node->name);
    else
        node_evaluate(x, e);
    return !stopped(x);
}

static unsigned nodes_evaluate(wl_ctx_t *x) {
    const trigger_config_t *c = x->c;
    size_t count = x->view ? cluster_view_count(x->view) : 0;
    unsigned nodes = 0;
    if (c->node_scope == NODE_SCOPE_ALL) {
        for (size_t i = 0; i < count && !stopped(x); i++) {
            const cluster_node_t *e = cluster_view_at(x->view, i);
            /* An address that never answered names no node yet: "every GPU
             * the aggregator sees" does not include it. (A dual-stack
             * headless Service lists an AAAA record per agent that an
             * IPv4-only agent never answers; counting those as gaps would
             * make every all-nodes trigger unavailable forever.) Once an
             * agent has reported, its node stays and ages into a gap. */
            if (!e->snap)
                continue;
            if (cluster_view_find_node(x->view, e->node) != e)
                continue; /* an older entry for a node whose agent moved */
            nodes++;
            node_evaluate(x, e);
        }
    } else if (c->node_scope == NODE_SCOPE_SELECTOR) {
        node_sel_t ns = {x, 0};
        pod_cache_foreach(x->nodes, node_sel_visit, &ns);
        nodes = ns.nodes;
    } else {
        for (unsigned k = 0; k < c->node_name_count && !stopped(x); k++) {
            const char *name = c->node_names[k];
            const cluster_node_t *e = cluster_view_find_node(x->view, name);
            nodes++;
            if (!e)
                gap(x, name, "node %s: no agent has reported for this node", name);
            else
                node_evaluate(x, e);
        }
    }
    if (!x->err.set && !stopped(x))
        nodes_check_uuids(x, nodes);
    return nodes;
}

/* ---- the answer ------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Aggregates the sorted values. Percentiles are read off the sorted array
 * with aggregate()'s nearest-rank rule: aggregate() is quadratic on more
 * than a node's worth of values. */
static double fold(aggregation_t a, const double *v, size_t n) {
    if (a == AGG_P95 || a == AGG_P99) {
        double r = ceil((a == AGG_P95 ? 0.95 : 0.99) * (double)n) - 1.0;
        size_t k = r < 0 ? 0 : (size_t)r;
        return v[k < n ? k : n - 1];
    }
    return aggregate(a, v, n);
}

static void finish(wl_ctx_t *x, eval_result_t *out, unsigned nodes) {
    const trigger_config_t *c = x->c;
    const char *unit = c->has_pod_selector ? "pod" : "node";
    if (x->err.set) {
        set_result(out, x->err.status, "%s", x->err.message);
        if (x->err.count > 1) {
            size_t o = strlen(out->message);
            snprintf(out->message + o, sizeof out->message - o, "; %u more %s%s affected",
                     x->err.count - 1, unit, x->err.count == 2 ? "" : "s");
        }
        return;
    }
    if (x->overflow) {
        set_result(out, EVAL_FAILED_PRECONDITION, "workload spans more than %u %s",
                   WORKLOAD_MAX_INPUTS, c->has_pod_selector ? "pods with GPUs" : "GPUs");
        return;
    }
    if (x->oom) {
        set_result(out, EVAL_UNAVAILABLE, "out of memory collecting %zu values", x->n + 1);
        return;
    }
    if (x->n == 0) {
        if (x->st->skipped > 0) {
            set_result(out, EVAL_UNAVAILABLE,
                       "no selected %s has fresh data (%u skipped with partialData ignore): %s",
                       unit, x->st->skipped, x->st->skip_reason);
            return;
        }
        /* A label selector that matches no node (a GPU pool the cluster
         * autoscaler emptied, say) is a known 0, as a Deployment with no
         * pods is; a named node or a selection that finds nothing on the
         * nodes that exist is a configuration to fix. */
        bool no_node_matched = c->node_scope == NODE_SCOPE_SELECTOR && nodes == 0;
        if (!c->has_pod_selector && !no_node_matched) {
            char want[TRIGGER_MAX_UUIDS * 34] = "";
            size_t o = 0;
            for (unsigned p = 0; p < c->mig_profile_count && o < sizeof want; p++) {
                int w =
                    snprintf(want + o, sizeof want - o, "%s%s", p ? ", " : "", c->mig_profiles[p]);
                o += w > 0 ? (size_t)w : 0;
            }
            if (c->mig_profile_count > 0)
                set_result(out, EVAL_FAILED_PRECONDITION,
                           "no MIG instance with migProfile %s on any of the %u selected node%s",
                           want, nodes, nodes == 1 ? "" : "s");
            else
                set_result(out, EVAL_FAILED_PRECONDITION,
                           "nothing selected on the %u selected node%s", nodes,
                           nodes == 1 ? "" : "s");
            return;
        }
        /* No pod runs (or none has a GPU yet), or no node matches: a known 0. */
        out->status = EVAL_OK;
        out->value = 0;
        out->active = false; /* activationThreshold >= 0 */
        out->inputs = 0;
        out->message[0] = '\0';
        return;
    }
    /* Sorted, so every replica sums in the same order whatever its
     * iteration order was. */
    qsort(x->vals, x->n, sizeof *x->vals, cmp_double);
    double v = fold(c->aggregation, x->vals, x->n);
    if (!isfinite(v)) {
        set_result(out, EVAL_UNAVAILABLE,
                   "metricType %s: the %s of %zu values is not finite (they overflow; the "
                   "largest, %g, is from %s)",
                   metric_type_name(c->metric_type), aggregation_name(c->aggregation), x->n,
                   x->max_v, x->max_who);
        return;
    }
    out->status = EVAL_OK;
    out->value = v;
    out->active = v > c->activation_threshold;
    out->inputs = x->inputs;
    out->message[0] = '\0';
}

void workload_evaluate(const trigger_config_t *c, const char *scaled_object_namespace,
                       const workload_inputs_t *in, eval_result_t *out, workload_stats_t *stats) {
    const cluster_view_t *view = in->view;
    const pod_cache_t *pods = in->pods;
    workload_stats_t local;
    workload_stats_t *st = stats ? stats : &local;
    memset(st, 0, sizeof *st);
    memset(out, 0, sizeof *out);
    if (!c) {
        set_result(out, EVAL_FAILED_PRECONDITION, "no trigger configuration");
        return;
    }
    if (c->has_pod_selector) {
        const char *ns = c->has_namespace ? c->pod_namespace : scaled_object_namespace;
        if (!ns || !ns[0]) {
            set_result(out, EVAL_FAILED_PRECONDITION,
                       "podSelector without namespace, and the ScaledObject's namespace is "
                       "unknown: set namespace");
            return;
        }
        if (!pods || !in->pods_synced) {
            set_result(out, EVAL_UNAVAILABLE,
                       "pod list from the Kubernetes API not synced: the pods podSelector "
                       "selects in namespace %s are not known yet",
                       ns);
            return;
        }
    } else if (c->node_scope == NODE_SCOPE_SELECTOR) {
        if (!in->nodes || !in->nodes_synced) {
            set_result(out, EVAL_UNAVAILABLE,
                       "node list from the Kubernetes API not synced: nodeSelector label "
                       "selectors need get/list/watch on nodes");
            return;
        }
    } else if (!view || cluster_view_count(view) == 0) {
        set_result(out, EVAL_UNAVAILABLE, "no agent has reported yet");
        return;
    }

    wl_ctx_t x;
    memset(&x, 0, sizeof x);
    x.c = c;
    x.ns = workload_namespace(c, scaled_object_namespace);
    x.view = view;
    x.nodes = in->nodes;
    x.now = in->now;
    x.stale_after_ns = in->stale_after_ns;
    x.dra_status = in->dra_status ? in->dra_status : "";
    x.st = st;
    x.mig_metric = metric_exists_per_mig(c->metric_type);
    /* Only the GPU part: evaluator_run() reads no demand field, and the
     * demand part (URLs, queue keys, a password) is the larger half. */
    memcpy(&x.scratch, c, offsetof(trigger_config_t, demand));
    x.vals = x.stack_vals;
    x.cap = WL_STACK_VALUES;

    unsigned node_count = 0;
    if (c->has_pod_selector) {
        x.scratch.gpu_index = -1;
        x.scratch.mig_profile_count = 0;
        x.scratch.aggregation = batch_aggregation(c->pod_aggregation);
        pod_cache_foreach_in(pods, x.ns, pod_visit, &x);
    } else {
        node_count = nodes_evaluate(&x);
    }
    finish(&x, out, node_count);
    if (x.vals != x.stack_vals)
        free(x.vals);
}
