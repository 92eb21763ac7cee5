/*
 * evaluator.c - (trigger config, node snapshot, now) -> value | typed error.
 *
 * Order of checks, each one a reason to answer with an error instead of a
 * number (an answer of 0 would scale the workload in):
 *   1. no snapshot / NVML down / stale snapshot / zero GPUs -> UNAVAILABLE;
 *   2. selection (gpuIndex, gpuUUID, migUUID, migProfile) that names
 *      something the node does not have -> FAILED_PRECONDITION, unless an
 *      unhealthy GPU could be hiding it (a lost GPU lists no MIG instances),
 *      which is UNAVAILABLE;
 *   3. any selected GPU (or parent of a selected MIG instance) not healthy
 *      -> UNAVAILABLE naming it; it is never skipped silently;
 *   4. the metric's field absent on any entry -> FAILED_PRECONDITION with a
 *      hint when NVML does not support it (NOT_SUPPORTED, FUNCTION_NOT_FOUND
 *      or no code), UNAVAILABLE when NVML failed transiently (any other code);
 *   5. aggregate; active = value > activationThreshold.
 *
 * Pure: no allocation, no clock, no I/O. Values are collected into a stack
 * buffer of EVAL_MAX_INPUTS entries (8 KiB); a node never comes close.
 */
#include "core/evaluator.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/aggregate.h"

#define EVAL_MAX_INPUTS 1024
#define NVML_NOT_SUPPORTED 3
#define NVML_FUNCTION_NOT_FOUND 13

static void set(eval_result_t *out, eval_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set(eval_result_t *out, eval_status_t st, const char *fmt, ...) {
    out->status = st;
    out->value = 0;
    out->active = false;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->message, sizeof out->message, fmt, ap);
    va_end(ap);
}

static const char *node_of(const snapshot_t *s) {
    return s->node_name[0] ? s->node_name : "(unnamed)";
}

/* Appends to a bounded buffer; stops quietly when full. */
static void append(char *buf, size_t len, size_t *o, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void append(char *buf, size_t len, size_t *o, const char *fmt, ...) {
    if (*o >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + *o, len - *o, fmt, ap);
    va_end(ap);
    if (w > 0)
        *o += (size_t)w;
}

/* ---- per-entry values ------------------------------------------------------ */

/* The field a metric reads (memory_used_percent also needs MEM_TOTAL). */
static gpu_field_t metric_field(metric_type_t t) {
    switch (t) {
    case METRIC_GPU_UTILIZATION:
        return GPU_F_GPU_UTIL;
    case METRIC_MEMORY_UTILIZATION:
        return GPU_F_MEM_UTIL;
    case METRIC_MEMORY_USED_MIB:
    case METRIC_MEMORY_USED_PERCENT:
        return GPU_F_MEM_USED;
    case METRIC_TEMPERATURE:
        return GPU_F_TEMPERATURE;
    case METRIC_POWER_DRAW:
        return GPU_F_POWER;
    case METRIC_PCIE_TX_KBPS:
        return GPU_F_PCIE_TX;
    case METRIC_PCIE_RX_KBPS:
        return GPU_F_PCIE_RX;
    case METRIC_NVLINK_TX_MBPS:
        return GPU_F_NVLINK_TX;
    case METRIC_NVLINK_RX_MBPS:
        return GPU_F_NVLINK_RX;
    case METRIC_SM_ACTIVE:
        return GPU_F_SM_ACTIVE;
    case METRIC_SM_OCCUPANCY:
        return GPU_F_SM_OCCUPANCY;
    case METRIC_DRAM_BANDWIDTH:
    case METRIC_TYPE_COUNT:
        break;
    }
    return GPU_F_DRAM_BW_UTIL;
}

static bool metric_exists_per_mig(metric_type_t t) {
    return t == METRIC_MEMORY_USED_MIB || t == METRIC_MEMORY_USED_PERCENT ||
           t == METRIC_SM_ACTIVE || t == METRIC_SM_OCCUPANCY || t == METRIC_DRAM_BANDWIDTH;
}

bool evaluator_gpu_value(metric_type_t t, const gpu_record_t *g, double *out) {
    if ((unsigned)t >= METRIC_TYPE_COUNT)
        return false;
    if (t == METRIC_MEMORY_USED_PERCENT)
        return gpu_memory_used_pct(g, out);
    gpu_field_t f = metric_field(t);
    if (!gpu_has(g, f))
        return false;
    switch (t) {
    case METRIC_GPU_UTILIZATION:
        *out = g->gpu_util_pct;
        break;
    case METRIC_MEMORY_UTILIZATION:
        *out = g->mem_util_pct;
        break;
    case METRIC_MEMORY_USED_MIB:
        *out = (double)g->memory_used_bytes / 1048576.0;
        break;
    case METRIC_TEMPERATURE:
        *out = g->temperature_c;
        break;
    case METRIC_POWER_DRAW:
        *out = g->power_w;
        break;
    case METRIC_PCIE_TX_KBPS:
        *out = (double)g->pcie_tx_bytes_per_s / 1024.0;
        break;
    case METRIC_PCIE_RX_KBPS:
        *out = (double)g->pcie_rx_bytes_per_s / 1024.0;
        break;
    case METRIC_NVLINK_TX_MBPS:
        *out = g->nvlink_tx_bytes_per_s / 1048576.0;
        break;
    case METRIC_NVLINK_RX_MBPS:
        *out = g->nvlink_rx_bytes_per_s / 1048576.0;
        break;
    case METRIC_SM_ACTIVE:
        *out = g->sm_active_pct;
        break;
    case METRIC_SM_OCCUPANCY:
        *out = g->sm_occupancy_pct;
        break;
    case METRIC_DRAM_BANDWIDTH:
        *out = g->dram_bw_util_pct;
        break;
    case METRIC_MEMORY_USED_PERCENT:
    case METRIC_TYPE_COUNT:
        return false;
    }
    return true;
}

bool evaluator_mig_value(metric_type_t t, const mig_record_t *m, double *out) {
    switch (t) {
    case METRIC_MEMORY_USED_MIB:
        if (!mig_has(m, GPU_F_MEM_USED))
            return false;
        *out = (double)m->memory_used_bytes / 1048576.0;
        return true;
    case METRIC_MEMORY_USED_PERCENT:
        if (!mig_has(m, GPU_F_MEM_USED) || !mig_has(m, GPU_F_MEM_TOTAL) ||
            m->memory_total_bytes == 0)
            return false;
        *out = (double)m->memory_used_bytes * 100.0 / (double)m->memory_total_bytes;
        return true;
    case METRIC_SM_ACTIVE:
        if (!mig_has(m, GPU_F_SM_ACTIVE))
            return false;
        *out = m->sm_active_pct;
        return true;
    case METRIC_SM_OCCUPANCY:
        if (!mig_has(m, GPU_F_SM_OCCUPANCY))
            return false;
        *out = m->sm_occupancy_pct;
        return true;
    case METRIC_DRAM_BANDWIDTH:
        if (!mig_has(m, GPU_F_DRAM_BW_UTIL))
            return false;
        *out = m->dram_bw_util_pct;
        return true;
    default:
        return false;
    }
}

/* The field that is missing (for memory_used_percent: used, then total). */
static gpu_field_t missing_field(metric_type_t t, uint32_t valid) {
    gpu_field_t f = metric_field(t);
    if (t == METRIC_MEMORY_USED_PERCENT && ((valid >> GPU_F_MEM_USED) & 1u))
        return GPU_F_MEM_TOTAL;
    return f;
}

static bool permanent_absence(int code) {
    return code == 0 || code == NVML_NOT_SUPPORTED || code == NVML_FUNCTION_NOT_FOUND;
}

/*
 * Hints name a way that works on the hardware at hand, never one that leads
 * back here. The trap they avoid: a pre-Hopper MIG GPU (A100, A30) has
 * neither NVML utilisation (none under MIG) nor GPM (Hopper and later), so
 * "use sm_active" and "use gpu_utilization" would send the user in a circle.
 * What NVML does give per MIG instance on every MIG GPU is memory; activity
 * has to come from demand signals (an engine's or a queue's).
 */
typedef enum { GPM_UNKNOWN, GPM_ABSENT, GPM_PRESENT } gpm_state_t;

/* What the snapshot says about GPU g's GPM: present when the GPU or one of
 * its MIG instances has a GPM value; absent when NVML answered NOT_SUPPORTED
 * for it (the collector records that when nvmlGpmQueryDeviceSupport says no);
 * unknown otherwise (no GPM symbols, or no second sample yet). */
static gpm_state_t gpu_gpm_state(const snapshot_t *s, const gpu_record_t *g) {
    if (gpu_has(g, GPU_F_SM_ACTIVE))
        return GPM_PRESENT;
    for (unsigned i = 0; i < g->mig_count && g->mig_first + i < s->mig_total; i++)
        if (mig_has(&s->mig[g->mig_first + i], GPU_F_SM_ACTIVE))
            return GPM_PRESENT;
    return g->field_error[GPU_F_SM_ACTIVE] == NVML_NOT_SUPPORTED ? GPM_ABSENT : GPM_UNKNOWN;
}

/* "migProfile 3g.40gb" for the first instance of g with a known profile,
 * else "migProfile or migUUID". */
static void mig_selection_example(const snapshot_t *s, const gpu_record_t *g, char *buf,
                                  size_t len) {
    for (unsigned i = 0; i < g->mig_count && g->mig_first + i < s->mig_total; i++) {
        const mig_record_t *m = &s->mig[g->mig_first + i];
        if (m->profile[0]) {
            snprintf(buf, len, "migProfile %s", m->profile);
            return;
        }
    }
    snprintf(buf, len, "migProfile or migUUID");
}

/* "; GPU 1 (MIG off) has gpu_utilization: gpuIndex 1" for the first GPU of
 * the node without MIG that has metric t; "" when there is none. */
static void non_mig_gpu_example(const snapshot_t *s, metric_type_t t, char *buf, size_t len) {
    buf[0] = '\0';
    for (unsigned i = 0; i < s->gpu_count; i++) {
        const gpu_record_t *o = &s->gpus[i];
        double v;
        if (!o->mig_enabled && evaluator_gpu_value(t, o, &v)) {
            snprintf(buf, len, "; GPU %u (MIG off) has %s: gpuIndex %u", o->index,
                     metric_type_name(t), o->index);
            return;
        }
    }
}

/* Writes the hint for metric t absent on GPU g (m: the MIG instance read, or
 * NULL for the whole GPU) into buf; "" when there is nothing to add. Kept
 * short: it follows a message naming the GPU, and all fits in 512 bytes. */
static void absent_hint(const snapshot_t *s, metric_type_t t, const gpu_record_t *g,
                        const mig_record_t *m, char *buf, size_t len) {
    char sel[64], other[96];
    const char *name = g->name[0] ? g->name : "this GPU";
    gpm_state_t gpm = gpu_gpm_state(s, g);
    size_t o = 0;
    buf[0] = '\0';
    if (g->vendor == GPU_VENDOR_AMD) {
        /* The NVIDIA hints (Hopper, MIG, drivers) would mislead here. */
        if (t == METRIC_SM_ACTIVE || t == METRIC_SM_OCCUPANCY || t == METRIC_DRAM_BANDWIDTH)
            append(buf, len, &o,
                   "sm_active, sm_occupancy and dram_bandwidth_utilization are NVIDIA GPM "
                   "metrics, which an AMD GPU (%s) has not: use metricType gpu_utilization",
                   name);
        return;
    }
    switch (t) {
    case METRIC_GPU_UTILIZATION:
    case METRIC_MEMORY_UTILIZATION:
        if (!g->mig_enabled)
            return;
        mig_selection_example(s, g, sel, sizeof sel);
        non_mig_gpu_example(s, t, other, sizeof other);
        if (gpm == GPM_ABSENT)
            append(
                buf, len, &o,
                "NVML has no utilisation under MIG, and %s has no GPM (Hopper or newer): "
                "scale on memory per instance (metricType memory_used_percent, %s) and on demand "
                "for activity (metricType demand with an engine or a queue)%s",
                name, sel, other);
        else
            append(buf, len, &o,
                   "NVML has no utilisation under MIG: select MIG instances (%s) with metricType "
                   "memory_used_percent (any MIG GPU) or sm_active (%s)%s",
                   sel, gpm == GPM_PRESENT ? "GPM, which this GPU has" : "GPM: Hopper or newer",
                   other);
        return;
    case METRIC_SM_ACTIVE:
    case METRIC_SM_OCCUPANCY:
    case METRIC_DRAM_BANDWIDTH:
        if (m || g->mig_enabled) {
            /* Under MIG gpu_utilization is no way out: NVML has none. */
            mig_selection_example(s, g, sel, sizeof sel);
            append(buf, len, &o, "GPM metrics need a Hopper or newer GPU");
            if (gpm == GPM_ABSENT)
                append(buf, len, &o, "; %s has none, and without GPM", name);
            else
                append(buf, len, &o,
                       ", a recent driver and two samples; before Hopper (A100, "
                       "A30)");
            append(buf, len, &o,
                   " NVML measures no activity per MIG instance: use metricType "
                   "memory_used_percent (%s) and, for activity, metricType demand with an engine "
                   "or a queue",
                   m ? "per instance" : sel);
        } else if (gpu_has(g, GPU_F_GPU_UTIL)) {
            if (gpm == GPM_ABSENT)
                append(buf, len, &o,
                       "GPM metrics need a Hopper or newer GPU; %s has none: use metricType "
                       "gpu_utilization",
                       name);
            else
                append(buf, len, &o,
                       "GPM metrics need a Hopper or newer GPU, a recent driver and two samples; "
                       "on older GPUs use metricType gpu_utilization");
        } else {
            append(buf, len, &o,
                   "GPM metrics need a Hopper or newer GPU, a recent driver and two samples");
        }
        return;
    case METRIC_NVLINK_TX_MBPS:
    case METRIC_NVLINK_RX_MBPS:
        append(buf, len, &o,
               "NVLink throughput needs NVLink and two samples (it is a rate of NVML's "
               "counters)");
        return;
    case METRIC_MEMORY_USED_PERCENT:
        append(buf, len, &o, "it needs both memory used and memory total");
        return;
    default:
        return;
    }
}

/* How messages name GPU g beside its index: its uuid, else its PCI address
 * (an AMD GPU whose ASIC has no unique_id is known by that). */
static const char *gpu_label(const gpu_record_t *g) {
    return g->uuid[0] ? g->uuid : g->pci_bus_id[0] ? g->pci_bus_id : "uuid unknown";
}

/* ---- selection ------------------------------------------------------------- */

static bool in_list(const char *s, const char (*list)[96], unsigned n) {
    for (unsigned i = 0; i < n; i++)
        if (strcmp(s, list[i]) == 0)
            return true;
    return false;
}

bool evaluator_gpu_selected(const trigger_config_t *c, const gpu_record_t *g) {
    if (c->gpu_index >= 0)
        return g->index == (unsigned)c->gpu_index;
    if (c->gpu_uuid_count > 0)
        return in_list(g->uuid, c->gpu_uuids, c->gpu_uuid_count);
    return true;
}

/* "3g.40gb" matches "3g.40gb" and any compute-instance profile "Nc.3g.40gb";
 * a pattern with its own "Nc." prefix matches only exactly. */
static bool mig_profile_matches(const char *pattern, const char *profile) {
    if (strcmp(pattern, profile) == 0)
        return true;
    if (strchr(pattern, 'c'))
        return false; /* pattern already names a compute slice */
    const char *p = profile;
    while (*p >= '0' && *p <= '9')
        p++;
    if (p == profile || p[0] != 'c' || p[1] != '.')
        return false;
    return strcmp(p + 2, pattern) == 0;
}

bool evaluator_mig_selected(const trigger_config_t *c, const mig_record_t *m) {
    if (c->mig_uuid_count > 0)
        return in_list(m->uuid, c->mig_uuids, c->mig_uuid_count);
    for (unsigned i = 0; i < c->mig_profile_count; i++)
        if (mig_profile_matches(c->mig_profiles[i], m->profile))
            return true;
    return false;
}

static void describe_selection(const trigger_config_t *c, char *buf, size_t len) {
    if (c->gpu_index >= 0)
        snprintf(buf, len, "GPU %d", c->gpu_index);
    else if (c->gpu_uuid_count == 1)
        snprintf(buf, len, "GPU %s", c->gpu_uuids[0]);
    else if (c->gpu_uuid_count > 1)
        snprintf(buf, len, "the %u GPUs of gpuUUID", c->gpu_uuid_count);
    else
        snprintf(buf, len, "all GPUs");
}

static void list_gpus(const snapshot_t *s, char *buf, size_t len) {
    size_t o = 0;
    buf[0] = '\0';
    for (unsigned i = 0; i < s->gpu_count; i++)
        append(buf, len, &o, "%s%s (index %u)", i ? ", " : "",
               s->gpus[i].uuid[0] ? s->gpus[i].uuid : "?", s->gpus[i].index);
}

static void list_migs(const trigger_config_t *c, const snapshot_t *s, char *buf, size_t len) {
    size_t o = 0;
    buf[0] = '\0';
    for (unsigned i = 0; i < s->mig_total; i++) {
        const mig_record_t *m = &s->mig[i];
        const gpu_record_t *parent = snapshot_gpu_by_index(s, m->parent_index);
        if (!parent || !evaluator_gpu_selected(c, parent))
            continue;
        append(buf, len, &o, "%s%s (%s, GPU %u)", o ? ", " : "", m->uuid,
               m->profile[0] ? m->profile : "profile unknown", m->parent_index);
    }
    if (o == 0)
        snprintf(buf, len, "none (MIG is not enabled, or has no instances, on %s)",
                 c->gpu_index >= 0 || c->gpu_uuid_count ? "the selected GPUs" : "any GPU");
}

/* First selected GPU that is not healthy, or NULL. */
static const gpu_record_t *first_unhealthy_selected(const trigger_config_t *c,
                                                    const snapshot_t *s) {
    for (unsigned i = 0; i < s->gpu_count; i++)
        if (evaluator_gpu_selected(c, &s->gpus[i]) && s->gpus[i].health != GPU_HEALTH_OK)
            return &s->gpus[i];
    return NULL;
}

static void set_unhealthy(eval_result_t *out, const snapshot_t *s, const gpu_record_t *g,
                          const char *why) {
    /* the error kind is NVML's enum whichever backend read the GPU (the
     * AMD readers map their errors onto the same kinds): name the vendor
     * (a snapshot does not say which of the two AMD readers read it) */
    set(out, EVAL_UNAVAILABLE, "GPU %u (%s) on node %s is %s (%s %s)%s%s", g->index, gpu_label(g),
        node_of(s), gpu_health_name(g->health), g->vendor == GPU_VENDOR_AMD ? "AMD reader" : "NVML",
        nvml_code_name(g->health_nvml_code), why[0] ? ": " : "", why);
}

/* Validates gpuIndex / gpuUUID against the node. false with *out set. */
static bool check_gpu_selection(const trigger_config_t *c, const snapshot_t *s,
                                eval_result_t *out) {
    char list[384];
    if (c->gpu_index >= 0 && !snapshot_gpu_by_index(s, (unsigned)c->gpu_index)) {
        unsigned lo = s->gpus[0].index;
        unsigned hi = lo;
        for (unsigned i = 1; i < s->gpu_count; i++) {
            if (s->gpus[i].index < lo)
                lo = s->gpus[i].index;
            if (s->gpus[i].index > hi)
                hi = s->gpus[i].index;
        }
        if (hi - lo + 1 == s->gpu_count)
            set(out, EVAL_FAILED_PRECONDITION,
                "gpuIndex %d out of range: node %s has %u GPU%s (%u-%u)", c->gpu_index, node_of(s),
                s->gpu_count, s->gpu_count == 1 ? "" : "s", lo, hi);
        else {
            list_gpus(s, list, sizeof list);
            set(out, EVAL_FAILED_PRECONDITION, "gpuIndex %d not found: node %s has %u GPUs: %s",
                c->gpu_index, node_of(s), s->gpu_count, list);
        }
        return false;
    }
    for (unsigned u = 0; u < c->gpu_uuid_count; u++) {
        bool found = false;
        for (unsigned i = 0; i < s->gpu_count && !found; i++)
            found = strcmp(s->gpus[i].uuid, c->gpu_uuids[u]) == 0;
        if (!found) {
            list_gpus(s, list, sizeof list);
            set(out, EVAL_FAILED_PRECONDITION, "gpuUUID %s not found on node %s: it has %s",
                c->gpu_uuids[u], node_of(s), list);
            return false;
        }
    }
    return true;
}

/* Validates migUUID / migProfile against the node. false with *out set. */
static bool check_mig_selection(const trigger_config_t *c, const snapshot_t *s,
                                eval_result_t *out) {
    char list[384], sel[128];
    const gpu_record_t *sick = first_unhealthy_selected(c, s);
    describe_selection(c, sel, sizeof sel);
    for (unsigned u = 0; u < c->mig_uuid_count; u++) {
        const mig_record_t *hit = NULL;
        for (unsigned i = 0; i < s->mig_total && !hit; i++)
            if (strcmp(s->mig[i].uuid, c->mig_uuids[u]) == 0)
                hit = &s->mig[i];
        const gpu_record_t *parent = hit ? snapshot_gpu_by_index(s, hit->parent_index) : NULL;
        if (hit && parent && evaluator_gpu_selected(c, parent))
            continue;
        if (sick) {
            set_unhealthy(out, s, sick, "its MIG instances cannot be listed");
            return false;
        }
        if (hit && parent)
            set(out, EVAL_FAILED_PRECONDITION,
                "migUUID %s is on GPU %u (%s), which is outside the selection (%s)",
                c->mig_uuids[u], parent->index, parent->uuid, sel);
        else {
            list_migs(c, s, list, sizeof list);
            set(out, EVAL_FAILED_PRECONDITION,
                "migUUID %s not found among the MIG instances of %s on node %s: instances are %s",
                c->mig_uuids[u], sel, node_of(s), list);
        }
        return false;
    }
    if (c->mig_profile_count > 0) {
        for (unsigned i = 0; i < s->mig_total; i++) {
            const gpu_record_t *parent = snapshot_gpu_by_index(s, s->mig[i].parent_index);
            if (parent && evaluator_gpu_selected(c, parent) &&
                evaluator_mig_selected(c, &s->mig[i]))
                return true;
        }
        if (sick) {
            set_unhealthy(out, s, sick, "its MIG instances cannot be listed");
            return false;
        }
        char want[TRIGGER_MAX_UUIDS * 34];
        size_t o = 0;
        want[0] = '\0';
        for (unsigned p = 0; p < c->mig_profile_count; p++)
            append(want, sizeof want, &o, "%s%s", p ? ", " : "", c->mig_profiles[p]);
        list_migs(c, s, list, sizeof list);
        set(out, EVAL_FAILED_PRECONDITION,
            "no MIG instance with migProfile %s on %s of node %s: instances are %s", want, sel,
            node_of(s), list);
        return false;
    }
    return true;
}

/* ---- the evaluator --------------------------------------------------------- */

static void set_absent(eval_result_t *out, const snapshot_t *s, const trigger_config_t *c,
                       const gpu_record_t *g, const mig_record_t *m) {
    metric_type_t t = c->metric_type;
    uint32_t valid = m ? m->valid : g->valid;
    gpu_field_t f = missing_field(t, valid);
    int code = m ? m->field_error[f] : g->field_error[f];
    char hint[384], who[256];
    absent_hint(s, t, g, m, hint, sizeof hint);
    if (m)
        snprintf(who, sizeof who, "MIG instance %s (%s) of GPU %u", m->uuid,
                 m->profile[0] ? m->profile : "profile unknown", g->index);
    else
        snprintf(who, sizeof who, "GPU %u (%s)", g->index, gpu_label(g));
    if (t == METRIC_MEMORY_USED_PERCENT && ((valid >> GPU_F_MEM_USED) & 1u) &&
        ((valid >> GPU_F_MEM_TOTAL) & 1u))
        code = 0; /* both present, total is 0 */
    set(out, permanent_absence(code) ? EVAL_FAILED_PRECONDITION : EVAL_UNAVAILABLE,
        "metricType %s: %s on node %s has no %s value (%s %s)%s%s", metric_type_name(t), who,
        node_of(s), gpu_field_name(f), g->vendor == GPU_VENDOR_AMD ? "AMD reader" : "NVML",
        code ? nvml_code_name(code) : "gave none", hint[0] ? "; " : "", hint);
}

/*
 * A GPU-only metric asked of MIG instances. Temperature, power, PCIe and
 * NVLink exist for the whole GPU under MIG, so selecting whole GPUs is a way
 * out; utilisation does not (NVML has none with MIG enabled), so for it the
 * hint names what the selected instances' GPU can give.
 */
static void set_not_per_mig(eval_result_t *out, const snapshot_t *s, const trigger_config_t *c) {
    metric_type_t t = c->metric_type;
    static const char have[] = "MIG instances have memory_used_mib, memory_used_percent and, "
                               "with GPM (Hopper or newer), sm_active, sm_occupancy and "
                               "dram_bandwidth";
    if (t != METRIC_GPU_UTILIZATION && t != METRIC_MEMORY_UTILIZATION) {
        set(out, EVAL_FAILED_PRECONDITION,
            "metricType %s does not exist per MIG instance: %s; for %s select whole GPUs (drop "
            "migUUID/migProfile)",
            metric_type_name(t), have, metric_type_name(t));
        return;
    }
    const gpu_record_t *parent = NULL;
    for (unsigned i = 0; i < s->mig_total && !parent; i++) {
        const gpu_record_t *p = snapshot_gpu_by_index(s, s->mig[i].parent_index);
        if (p && evaluator_gpu_selected(c, p) && evaluator_mig_selected(c, &s->mig[i]))
            parent = p;
    }
    if (parent && gpu_gpm_state(s, parent) == GPM_ABSENT)
        set(out, EVAL_FAILED_PRECONDITION,
            "metricType %s does not exist per MIG instance, nor for a GPU with MIG enabled: "
            "%s; GPU %u (%s) has no GPM: use metricType memory_used_percent and, for activity, "
            "metricType demand with an engine or a queue",
            metric_type_name(t), have, parent->index,
            parent->name[0] ? parent->name : "name unknown");
    else
        set(out, EVAL_FAILED_PRECONDITION,
            "metricType %s does not exist per MIG instance, nor for a GPU with MIG enabled: %s; "
            "use metricType memory_used_percent (any MIG GPU) or sm_active (GPM)",
            metric_type_name(t), have);
}

static double age_s(uint64_t ns) {
    return (double)ns / 1e9;
}

void evaluator_run(const trigger_config_t *c, const snapshot_t *s, mono_ns_t now,
                   uint64_t stale_after_ns, eval_result_t *out) {
    memset(out, 0, sizeof *out);
    if (!c) {
        set(out, EVAL_FAILED_PRECONDITION, "no trigger configuration");
        return;
    }
    if (!s) {
        set(out, EVAL_UNAVAILABLE,
            "no GPU snapshot yet: the NVML sampler has not finished its "
            "first sample");
        return;
    }
    if (s->status == SNAPSHOT_NVML_DOWN) {
        set(out, EVAL_UNAVAILABLE, "%s unavailable on node %s: %s", snapshot_down_subject(s),
            node_of(s), s->error[0] ? s->error : nvml_code_name(s->nvml_code));
        return;
    }
    uint64_t age = now > s->taken_mono ? now - s->taken_mono : 0;
    if (age > stale_after_ns) {
        set(out, EVAL_UNAVAILABLE,
            "GPU snapshot is %.1f s old (stale after %.1f s): the NVML sampler on node %s has "
            "produced nothing newer; it may be stuck in a slow NVML call",
            age_s(age), age_s(stale_after_ns), node_of(s));
        return;
    }
    if (s->gpu_count == 0 || !s->gpus) {
        set(out, EVAL_UNAVAILABLE, "no GPU visible to NVML on node %s", node_of(s));
        return;
    }
    if (!check_gpu_selection(c, s, out))
        return;

    double vals[EVAL_MAX_INPUTS];
    unsigned n = 0;
    bool mig_mode = c->mig_uuid_count > 0 || c->mig_profile_count > 0;

    if (!mig_mode) {
        const gpu_record_t *sick = first_unhealthy_selected(c, s);
        if (sick) {
            set_unhealthy(out, s, sick, "its value is unknown");
            return;
        }
        for (unsigned i = 0; i < s->gpu_count; i++) {
            const gpu_record_t *g = &s->gpus[i];
            if (!evaluator_gpu_selected(c, g))
                continue;
            if (n == EVAL_MAX_INPUTS) {
                set(out, EVAL_FAILED_PRECONDITION, "more than %d GPUs selected on node %s",
                    EVAL_MAX_INPUTS, node_of(s));
                return;
            }
            if (!evaluator_gpu_value(c->metric_type, g, &vals[n])) {
                set_absent(out, s, c, g, NULL);
                return;
            }
            n++;
        }
    } else {
        if (!check_mig_selection(c, s, out))
            return;
        if (!metric_exists_per_mig(c->metric_type)) {
            set_not_per_mig(out, s, c);
            return;
        }
        for (unsigned i = 0; i < s->mig_total; i++) {
            const mig_record_t *m = &s->mig[i];
            const gpu_record_t *parent = snapshot_gpu_by_index(s, m->parent_index);
            if (!parent || !evaluator_gpu_selected(c, parent) || !evaluator_mig_selected(c, m))
                continue;
            if (parent->health != GPU_HEALTH_OK) {
                set_unhealthy(out, s, parent, "the value of its MIG instances is unknown");
                return;
            }
            if (n == EVAL_MAX_INPUTS) {
                set(out, EVAL_FAILED_PRECONDITION, "more than %d MIG instances selected on node %s",
                    EVAL_MAX_INPUTS, node_of(s));
                return;
            }
            if (!evaluator_mig_value(c->metric_type, m, &vals[n])) {
                set_absent(out, s, c, parent, m);
                return;
            }
            n++;
        }
    }
    if (n == 0) { /* unreachable: the checks above guarantee a selection */
        set(out, EVAL_FAILED_PRECONDITION, "nothing selected on node %s", node_of(s));
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        if (!isfinite(vals[i])) {
            set(out, EVAL_UNAVAILABLE, "metricType %s: node %s reported a non-finite value",
                metric_type_name(c->metric_type), node_of(s));
            return;
        }
    }
    out->status = EVAL_OK;
    out->value = aggregate(c->aggregation, vals, n);
    out->active = out->value > c->activation_threshold;
    out->inputs = n;
    out->message[0] = '\0';
}

int64_t metric_target_size(double target) {
    if (!(target > 1)) /* also NaN */
        return 1;
    double r = ceil(target);
    if (r >= 9223372036854775807.0)
        return INT64_MAX;
    return (int64_t)r;
}

int64_t metric_value_int(double value) {
    if (isnan(value))
        return 0;
    if (value >= 9223372036854775807.0)
        return INT64_MAX;
    if (value <= -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)llround(value);
}
