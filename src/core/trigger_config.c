/*
 * trigger_config.c - metadata map -> validated trigger_config_t.
 *
 * Resolution is the Go system's (defaults -> profile -> explicit keys), with
 * these deliberate differences, all documented in docs/configuration.md:
 *   - unknown keys and duplicate keys are errors ("did you mean" included);
 *   - numbers are parsed strictly and range-checked (target >= 0.001, which
 *     is KEDA's milli-quantity resolution; activation >= 0; poll >= 1);
 *   - a shorthand key (targetGpuUtilization, targetMemoryUtilization) that
 *     contradicts metricType or the profile is an error, not a silent
 *     override;
 *   - the default aggregation is sum (KEDA's AverageValue divides the total
 *     by the target; a per-node max would cap replicas at ceil(100/target)).
 *
 * The workload-scope keys (podSelector, namespace, nodeSelector,
 * podAggregation, partialData) are new. They are validated here, whichever
 * role runs; combinations that would be ignored or contradict each other
 * (podSelector with device selection or nodeSelector, podAggregation or
 * namespace without podSelector) are errors rather than silent no-ops.
 * The engine, queue, demand and forecast keys are resolved in
 * trigger_demand.c (step 11). The key table, the name tables and the value
 * parsers both files use are in trigger_keys.c (trigger_config_internal.h
 * says who depends on whom: one way, no circle).
 *
 * The outcome does not depend on the order of the pairs: keys are collected
 * into one slot per known key first, and errors are reported in a fixed
 * order (unknown keys, smallest first; duplicates; then the resolution
 * steps in their order). The config cache relies on this to cache errors by
 * content.
 */
#include "core/trigger_config.h"

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/profiles.h"
#include "core/trigger_config_internal.h"

bool trigger_uses_engine(const trigger_config_t *c) {
    return c->demand.engine != ENGINE_NONE;
}

bool trigger_uses_gpu(const trigger_config_t *c) {
    return c->demand.type == DEMAND_NONE ||
           (c->demand.type == DEMAND_COMPOSITE && c->demand.target_gpu > 0);
}

/* ---- list parsers ---------------------------------------------------------- */

typedef enum { LIST_GPU_UUID, LIST_MIG_UUID, LIST_MIG_PROFILE, LIST_NODE_NAME } list_kind_t;

static bool uuid_char_ok(unsigned char c, bool mig) {
    /* Old-style MIG UUIDs are "MIG-GPU-<uuid>/<gi>/<ci>". */
    return isalnum(c) || c == '-' || (mig && c == '/');
}

/* A Kubernetes node name: an RFC 1123 subdomain as Kubernetes checks it
 * (IsDNS1123Subdomain), at most 253 bytes of [a-z0-9]([-a-z0-9]*[a-z0-9])?
 * parts joined by '.'. */
static bool node_name_valid(const char *p, size_t n) {
    if (n == 0 || n > 253)
        return false;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && p[i] != '.') {
            if (!islower((unsigned char)p[i]) && !isdigit((unsigned char)p[i]) && p[i] != '-')
                return false;
            continue;
        }
        if (i == start || p[start] == '-' || p[i - 1] == '-')
            return false;
        start = i + 1;
    }
    return true;
}

static bool digits_then(const char *p, size_t n, size_t *i, char tail) {
    size_t d = 0;
    while (*i < n && isdigit((unsigned char)p[*i]))
        (*i)++, d++;
    if (d == 0 || *i >= n || p[*i] != tail)
        return false;
    (*i)++;
    return true;
}

/* [Nc.]Ng.Mgb, optionally followed by a "+me" / "-me" / "+gfx" style suffix. */
static bool mig_profile_valid(const char *p, size_t n) {
    size_t i = 0;
    size_t j = 0;
    /* Optional compute-slice prefix "Nc." */
    while (j < n && isdigit((unsigned char)p[j]))
        j++;
    if (j > 0 && j < n && p[j] == 'c') {
        i = j + 1;
        if (i >= n || p[i] != '.')
            return false;
        i++;
    }
    if (!digits_then(p, n, &i, 'g') || i >= n || p[i] != '.')
        return false;
    i++;
    if (!digits_then(p, n, &i, 'g') || i >= n || p[i] != 'b')
        return false;
    i++;
    if (i == n)
        return true;
    if (p[i] != '+' && p[i] != '-')
        return false;
    for (i++; i < n; i++)
        if (!islower((unsigned char)p[i]) && !isdigit((unsigned char)p[i]) && p[i] != '.' &&
            p[i] != '+' && p[i] != '-')
            return false;
    return p[n - 1] != '+' && p[n - 1] != '-' && p[n - 1] != '.';
}

static int parse_list(list_kind_t kind, const char *key, const char *p, size_t n, char *dst,
                      size_t width, unsigned *count, trigger_problems_t *P) {
    char q[QBUF];
    static const char *const what[] = {
        "a comma-separated list of GPU UUIDs like \"GPU-5c1d0a4e-...\" (nvidia-smi -L)",
        "a comma-separated list of MIG UUIDs like \"MIG-8f3a...\" (nvidia-smi -L)",
        "a comma-separated list of MIG profiles like \"3g.40gb\" or \"1c.3g.40gb\"",
        ("a comma-separated list of node names (lowercase DNS names like \"gpu-node-1\"), or a "
         "label selector such as \"pool=gpu\""),
    };
    *count = 0;
    size_t i = 0;
    for (;;) {
        size_t start = i;
        while (i < n && p[i] != ',')
            i++;
        size_t a = start, b = i;
        while (a < b && (p[a] == ' ' || p[a] == '\t'))
            a++;
        while (b > a && (p[b - 1] == ' ' || p[b - 1] == '\t'))
            b--;
        const char *item = p + a;
        size_t len = b - a;
        if (len == 0)
            return tc_fail(P, "invalid %s %s: empty item; must be %s", key,
                           kgs_quote(q, sizeof q, p, n), what[kind]);
        if (*count == TRIGGER_MAX_UUIDS)
            return tc_fail(P, "invalid %s: more than %d items; must be %s", key, TRIGGER_MAX_UUIDS,
                           what[kind]);
        bool ok = len < width;
        if (ok && kind == LIST_NODE_NAME) {
            ok = node_name_valid(item, len);
        } else if (ok && kind == LIST_MIG_PROFILE) {
            ok = mig_profile_valid(item, len);
        } else if (ok) {
            const char *prefix = kind == LIST_GPU_UUID ? "GPU-" : "MIG-";
            ok = len > 4 && memcmp(item, prefix, 4) == 0;
            for (size_t k = 4; ok && k < len; k++)
                ok = uuid_char_ok((unsigned char)item[k], kind == LIST_MIG_UUID);
        }
        if (!ok)
            return tc_fail(P, "invalid %s item %s: must be %s", key,
                           kgs_quote(q, sizeof q, item, len), what[kind]);
        for (unsigned k = 0; k < *count; k++)
            if (metadata_slice_eq(item, len, dst + k * width))
                return tc_fail(P, "invalid %s: %s is listed twice", key,
                               kgs_quote(q, sizeof q, item, len));
        memcpy(dst + *count * width, item, len);
        dst[*count * width + len] = '\0';
        (*count)++;
        if (i == n)
            return 0;
        i++; /* skip the comma */
    }
}

/* ---- the parser ------------------------------------------------------------ */

static slice_t key_of(const metadata_pair_t *m) {
    slice_t s = {m->key ? m->key : "", m->key ? m->key_len : 0};
    return s;
}

static bool metric_name_valid(const char *p, size_t n) {
    if (n == 0 || n > 127)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (!(c >= 'a' && c <= 'z') && !isdigit(c) && c != '_' && c != '-')
            return false;
    }
    return true;
}

static void set_defaults(trigger_config_t *c) {
    memset(c, 0, sizeof *c);
    strcpy(c->metric_name, "keda_gpu_metric");
    c->metric_type = METRIC_GPU_UTILIZATION;
    c->target_value = 80;
    c->activation_threshold = 0;
    c->aggregation = AGG_SUM;
    c->gpu_index = -1;
    c->poll_interval_s = 10;
}

/* A namespace name: an RFC 1123 label, [a-z0-9]([-a-z0-9]*[a-z0-9])?, at
 * most 63 bytes. */
static bool dns_label_valid(const char *p, size_t n) {
    if (n == 0 || n > 63 || p[0] == '-' || p[n - 1] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!islower((unsigned char)p[i]) && !isdigit((unsigned char)p[i]) && p[i] != '-')
            return false;
    return true;
}

/* Bytes no node name contains and every selector needs (an operator, a
 * parenthesis, or the '/' of a prefixed key). */
#define NODE_SELECTOR_MARKS "=!()/<>"

/* nodeSelector is read as a label selector when it contains one of
 * NODE_SELECTOR_MARKS, and as a list of node names otherwise. Node names are
 * DNS subdomains, so no valid list is taken for a selector; the only
 * selector that cannot be written is a lone unprefixed existence test
 * ("gpu"), which reads as a node name (docs/configuration.md says so). */
static bool node_selector_is_label_selector(const char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != '\0' && strchr(NODE_SELECTOR_MARKS, p[i]))
            return true;
    return false;
}

bool gpu_sharing_metric_per_process(metric_type_t t) {
    return t == METRIC_GPU_UTILIZATION || t == METRIC_MEMORY_UTILIZATION ||
           t == METRIC_MEMORY_USED_MIB || t == METRIC_MEMORY_USED_PERCENT;
}

/* 10. The workload scope: podSelector, namespace, nodeSelector,
 * podAggregation, partialData, gpuSharing, each validated on its own, then
 * their combinations (on the keys given, so a bad value is not also
 * reported as missing). type_known: metricType resolved (gpuSharing share
 * depends on it). */
static void resolve_scope(const metadata_pair_t *slot[K_COUNT], trigger_config_t *c,
                          bool type_known, trigger_problems_t *P) {
    char q[QBUF], why[2048]; /* any label_selector_parse message: its quoted input and reason */
    slice_t v;
    int e = 0;

    if (slot[K_POD_SELECTOR]) {
        v = tc_value_of(slot[K_POD_SELECTOR]);
        if (label_selector_parse(v.p, v.n, &c->pod_selector, why, sizeof why) != 0)
            tc_fail(P, "invalid podSelector: %s", why);
        else
            c->has_pod_selector = true;
    }
    if (slot[K_NAMESPACE]) {
        v = tc_value_of(slot[K_NAMESPACE]);
        if (!dns_label_valid(v.p, v.n)) {
            tc_fail(P,
                    "invalid namespace %s: must be a Kubernetes namespace name, 1-63 characters "
                    "from a-z, 0-9 and '-', starting and ending with a letter or digit",
                    kgs_quote(q, sizeof q, v.p, v.n));
        } else {
            memcpy(c->pod_namespace, v.p, v.n);
            c->pod_namespace[v.n] = '\0';
            c->has_namespace = true;
        }
    }
    if (slot[K_NODE_SELECTOR]) {
        v = tc_value_of(slot[K_NODE_SELECTOR]);
        if (node_selector_is_label_selector(v.p, v.n)) {
            if (label_selector_parse(v.p, v.n, &c->node_selector, why, sizeof why) != 0)
                tc_fail(P,
                        "invalid nodeSelector (a label selector, since it contains one of = ! "
                        "( ) / < >): %s",
                        why);
            else
                c->node_scope = NODE_SCOPE_SELECTOR;
        } else if (parse_list(LIST_NODE_NAME, "nodeSelector", v.p, v.n, &c->node_names[0][0],
                              sizeof c->node_names[0], &c->node_name_count, P) == 0) {
            c->node_scope = NODE_SCOPE_NAMES;
        }
    }
    if (slot[K_POD_AGGREGATION] &&
        tc_key_enum(K_POD_AGGREGATION, tc_value_of(slot[K_POD_AGGREGATION]), &e, P) == 0)
        c->pod_aggregation = (pod_aggregation_t)e;
    if (slot[K_PARTIAL_DATA] &&
        tc_key_enum(K_PARTIAL_DATA, tc_value_of(slot[K_PARTIAL_DATA]), &e, P) == 0)
        c->partial_data = (partial_data_t)e;
    if (slot[K_GPU_SHARING]) {
        if (tc_key_enum(K_GPU_SHARING, tc_value_of(slot[K_GPU_SHARING]), &e, P) == 0)
            c->gpu_sharing = (gpu_sharing_t)e;
        if (!slot[K_POD_SELECTOR])
            tc_fail(P, "gpuSharing is set without podSelector: it decides what each selected "
                       "pod's value on a shared GPU is, so it would be ignored; add podSelector "
                       "or drop gpuSharing");
        if (type_known && c->gpu_sharing == GPU_SHARING_SHARE &&
            !gpu_sharing_metric_per_process(c->metric_type))
            tc_fail(P,
                    "gpuSharing share with metricType %s: NVML reports %s for the whole GPU only, "
                    "not per process; per-process metrics are gpu_utilization, "
                    "memory_utilization, memory_used_mib and memory_used_percent (or use "
                    "gpuSharing whole)",
                    metric_type_name(c->metric_type), metric_type_name(c->metric_type));
    }

    if (slot[K_POD_SELECTOR]) {
        const char *device = c->gpu_index >= 0     ? "gpuIndex" /* -1: no restriction */
                             : slot[K_GPU_UUID]    ? "gpuUUID"
                             : slot[K_MIG_UUID]    ? "migUUID"
                             : slot[K_MIG_PROFILE] ? "migProfile"
                                                   : NULL;
        if (device)
            tc_fail(P,
                    "podSelector and %s are both set: pod scope and device selection don't mix; "
                    "with podSelector the inputs are the GPUs the kubelet assigned to the "
                    "selected pods, so drop %s",
                    device, device);
        if (slot[K_NODE_SELECTOR])
            tc_fail(P, "podSelector and nodeSelector are both set: the pods say where they run, "
                       "so drop nodeSelector");
    } else {
        if (slot[K_POD_AGGREGATION])
            tc_fail(P, "podAggregation is set without podSelector: it combines each selected "
                       "pod's GPUs, so it would be ignored; add podSelector or drop "
                       "podAggregation");
        if (slot[K_NAMESPACE])
            tc_fail(P, "namespace is set without podSelector: it is the namespace of the pods "
                       "podSelector selects, so it would be ignored; add podSelector or drop "
                       "namespace");
    }
}

/* "unknown profile "<v>": must be one of <every profile>". */
static void unknown_profile(slice_t v, trigger_problems_t *P) {
    char q[QBUF];
    tc_msg_begin(P);
    tc_msg_add(P, "unknown profile %s: must be one of ", kgs_quote(q, sizeof q, v.p, v.n));
    for (size_t i = 0; i < profile_count(); i++)
        tc_msg_add(P, "%s%s", i ? ", " : "", profile_at(i)->name);
    tc_msg_end(P);
}

/* 1-3. What is measured: profile, metricName, metricType. false when the
 * metric type could not be told (an unknown profile or metricType): the
 * checks that depend on it are skipped then. */
static bool resolve_what(const metadata_pair_t *slot[K_COUNT], trigger_config_t *c,
                         const profile_t **prof_out, int *cause, trigger_problems_t *P) {
    char q[QBUF];
    slice_t v;
    bool known = true;
    *cause = -1;

    /* 1. profile */
    const profile_t *prof = NULL;
    if (slot[K_PROFILE]) {
        v = tc_value_of(slot[K_PROFILE]);
        prof = profile_find(v.p, v.n);
        if (!prof) {
            *cause = (int)P->count;
            unknown_profile(v, P);
            known = false;
        } else {
            if (prof->engine_metric)
                for (int d = 1; d < DEMAND_TYPE_COUNT; d++)
                    if (strcmp(prof->engine_metric, tc_demand_names[d]) == 0)
                        c->demand.type = (demand_type_t)d;
            snprintf(c->profile, sizeof c->profile, "%s", prof->name);
            snprintf(c->metric_name, sizeof c->metric_name, "%s", prof->metric_name);
            c->metric_type = prof->metric_type;
            c->target_value = prof->target;
            c->activation_threshold = prof->activation;
        }
    }
    *prof_out = prof;

    /* 2. metricName */
    if (slot[K_METRIC_NAME]) {
        v = tc_value_of(slot[K_METRIC_NAME]);
        if (!metric_name_valid(v.p, v.n)) {
            tc_fail(P,
                    "invalid metricName %s: must be 1-127 characters from a-z, 0-9, '_' and '-' "
                    "(it becomes part of a Kubernetes metric name)",
                    kgs_quote(q, sizeof q, v.p, v.n));
        } else {
            memcpy(c->metric_name, v.p, v.n);
            c->metric_name[v.n] = '\0';
        }
    }

    /* 3. metricType */
    if (slot[K_METRIC_TYPE]) {
        int found = 0;
        unsigned at = P->count;
        if (tc_key_enum(K_METRIC_TYPE, tc_value_of(slot[K_METRIC_TYPE]), &found, P) != 0) {
            if (*cause < 0)
                *cause = (int)at;
            known = false;
        } else if (found >= METRIC_TYPE_COUNT) { /* the demand types follow the GPU metrics */
            c->demand.type = (demand_type_t)(found - METRIC_TYPE_COUNT + 1);
            c->metric_type = METRIC_GPU_UTILIZATION;
        } else {
            c->demand.type = DEMAND_NONE;
            c->metric_type = (metric_type_t)found;
        }
    }
    return known;
}

/* 4-5. Against what: targetValue and its shorthands, activationThreshold. */
static void resolve_target(const metadata_pair_t *slot[K_COUNT], trigger_config_t *c,
                           const profile_t *prof, bool type_known, trigger_problems_t *P) {
    /* 4. targetValue and the shorthands */
    const metadata_pair_t *gs = slot[K_TARGET_GPU_UTIL], *ms = slot[K_TARGET_MEM_UTIL];
    if (gs && ms)
        tc_fail(P, "targetGpuUtilization and targetMemoryUtilization are both set: use one (each "
                   "sets metricType and targetValue)");
    const metadata_pair_t *sh = gs ? gs : ms;
    const char *sh_key = gs ? tc_keys[K_TARGET_GPU_UTIL].name : tc_keys[K_TARGET_MEM_UTIL].name;
    if (sh && slot[K_TARGET_VALUE])
        tc_fail(P,
                "%s and targetValue are both set: use one (%s is shorthand for a metricType plus "
                "targetValue)",
                sh_key, sh_key);
    if (slot[K_TARGET_VALUE])
        tc_parse_target("targetValue", tc_value_of(slot[K_TARGET_VALUE]), &c->target_value, P);
    if (sh) {
        metric_type_t want = gs ? METRIC_GPU_UTILIZATION : METRIC_MEMORY_USED_PERCENT;
        if (type_known && slot[K_METRIC_TYPE] && c->metric_type != want)
            tc_fail(P,
                    "%s implies metricType %s, but metricType is \"%s\": drop one, or use "
                    "targetValue with metricType",
                    sh_key, tc_metric_names[want], tc_metric_names[c->metric_type]);
        else if (!slot[K_METRIC_TYPE] && prof && prof->metric_type != want)
            tc_fail(P,
                    "%s implies metricType %s, but profile \"%s\" uses %s: use targetValue to "
                    "change the profile's target",
                    sh_key, tc_metric_names[want], prof->name, tc_metric_names[prof->metric_type]);
        tc_parse_target(sh_key, tc_value_of(sh), &c->target_value, P);
        if (type_known)
            c->metric_type = want;
    }

    /* 5. activationThreshold */
    if (slot[K_ACTIVATION])
        tc_key_nonneg(K_ACTIVATION, tc_value_of(slot[K_ACTIVATION]), &c->activation_threshold, P);
}

/* 6-9. Which GPUs: gpuIndex, aggregation, pollIntervalSeconds, and the
 * selection lists with their exclusions. */
static void resolve_selection(const metadata_pair_t *slot[K_COUNT], trigger_config_t *c,
                              trigger_problems_t *P) {
    slice_t v;
    long long i;
    int a = 0;

    /* 6-8. gpuIndex, aggregation, pollIntervalSeconds */
    if (slot[K_GPU_INDEX] && tc_key_int(K_GPU_INDEX, tc_value_of(slot[K_GPU_INDEX]), &i, P) == 0)
        c->gpu_index = (int)i;
    if (slot[K_AGGREGATION] &&
        tc_key_enum(K_AGGREGATION, tc_value_of(slot[K_AGGREGATION]), &a, P) == 0)
        c->aggregation = (aggregation_t)a;
    if (slot[K_POLL] && tc_key_int(K_POLL, tc_value_of(slot[K_POLL]), &i, P) == 0)
        c->poll_interval_s = (unsigned)i;

    /* 9. selection lists */
    if (slot[K_GPU_UUID]) {
        v = tc_value_of(slot[K_GPU_UUID]);
        parse_list(LIST_GPU_UUID, "gpuUUID", v.p, v.n, &c->gpu_uuids[0][0], sizeof c->gpu_uuids[0],
                   &c->gpu_uuid_count, P);
    }
    if (slot[K_MIG_UUID]) {
        v = tc_value_of(slot[K_MIG_UUID]);
        parse_list(LIST_MIG_UUID, "migUUID", v.p, v.n, &c->mig_uuids[0][0], sizeof c->mig_uuids[0],
                   &c->mig_uuid_count, P);
    }
    if (slot[K_MIG_PROFILE]) {
        v = tc_value_of(slot[K_MIG_PROFILE]);
        parse_list(LIST_MIG_PROFILE, "migProfile", v.p, v.n, &c->mig_profiles[0][0],
                   sizeof c->mig_profiles[0], &c->mig_profile_count, P);
    }
    if (c->gpu_index >= 0 && slot[K_GPU_UUID])
        tc_fail(P, "gpuIndex %d and gpuUUID are both set: select GPUs by one of them",
                c->gpu_index);
    if (slot[K_MIG_UUID] && slot[K_MIG_PROFILE])
        tc_fail(P, "migUUID and migProfile are both set: migUUID already names the instances; "
                   "use one of them");
}

/* The resolution, in its fixed order. Each step reports every problem it
 * finds that does not follow from an earlier one; the engine, queue,
 * demand and latency keys need the metric type, so an unknown profile or
 * metricType skips them, and the note says so. */
static void resolve(const metadata_pair_t *slot[K_COUNT], trigger_config_t *c,
                    trigger_problems_t *P) {
    const profile_t *prof = NULL;
    int cause; /* the profile's or metricType's problem */
    bool known = resolve_what(slot, c, &prof, &cause, P);
    resolve_target(slot, c, prof, known, P);
    resolve_selection(slot, c, P);
    resolve_scope(slot, c, known, P);
    if (known) {
        tc_resolve_demand(slot, c, P);
    } else if (!P->note) {
        P->note_on = cause;
        P->note = slot[K_METRIC_TYPE] && !(slot[K_PROFILE] && !prof)
                      ? "the keys that depend on metricType are checked once it is valid"
                      : "the keys that depend on the profile's metric type are checked once it "
                        "is valid";
    }
}

/* The unknown keys, each once, smallest first: TRIGGER_MAX_PROBLEMS - 1 of
 * them named (a pass over the pairs each; the server takes 256 pairs at
 * most), the rest counted in one problem, so the count stays readable. */
static void report_unknown(const metadata_pair_t *pairs, size_t n, trigger_problems_t *P) {
    size_t total = 0, named = 0;
    for (size_t i = 0; i < n; i++) {
        slice_t k = key_of(&pairs[i]);
        total += tc_key_lookup(k.p, k.n) < 0;
    }
    const metadata_pair_t *last = NULL;
    for (unsigned round = 0; round + 1 < TRIGGER_MAX_PROBLEMS && named < total; round++) {
        const metadata_pair_t *next = NULL;
        for (size_t i = 0; i < n; i++) {
            slice_t k = key_of(&pairs[i]);
            if (last && metadata_slice_cmp(k.p, k.n, key_of(last).p, key_of(last).n) <= 0)
                continue;
            if (next && metadata_slice_cmp(k.p, k.n, key_of(next).p, key_of(next).n) >= 0)
                continue;
            if (tc_key_lookup(k.p, k.n) < 0)
                next = &pairs[i];
        }
        if (!next)
            break;
        for (size_t i = 0; i < n; i++) /* the key's every pair */
            named += metadata_slice_cmp(key_of(&pairs[i]).p, key_of(&pairs[i]).n, key_of(next).p,
                                        key_of(next).n) == 0;
        tc_unknown_key(key_of(next).p, key_of(next).n, P);
        last = next;
    }
    if (named < total)
        tc_fail(P, "%zu more unknown metadata key%s (not listed)", total - named,
                total - named == 1 ? "" : "s");
}

int trigger_config_parse_problems(const metadata_pair_t *pairs, size_t n, trigger_config_t *out,
                                  trigger_problems_t *P) {
    char q[QBUF];
    const metadata_pair_t *slot[K_COUNT] = {0};
    bool dup[K_COUNT] = {false};

    set_defaults(out);
    tc_problems_reset(P);
    if (n > 0 && !pairs)
        return tc_fail(P, "metadata: NULL pairs");

    bool any_unknown = false;
    for (size_t i = 0; i < n; i++) {
        slice_t k = key_of(&pairs[i]);
        int id = tc_key_lookup(k.p, k.n);
        if (id < 0)
            any_unknown = true;
        else if (slot[id])
            dup[id] = true;
        else
            slot[id] = &pairs[i];
    }
    if (any_unknown)
        report_unknown(pairs, n, P);

    /* A key given twice has no one value (KEDA's map cannot do that; a
     * wire message or a YAML map can), and a value is text: the
     * configuration keeps C strings, so a NUL byte would cut a key name or a
     * URL short without a word. Either stops the resolution. */
    int stop = -1;
    for (int id = 0; id < K_COUNT; id++) {
        if (dup[id]) {
            if (stop < 0)
                stop = (int)P->count;
            tc_fail(P, "duplicate metadata key \"%s\": give it once", tc_keys[id].name);
        }
    }
    for (int id = 0; id < K_COUNT; id++) {
        const metadata_pair_t *pr = dup[id] ? NULL : slot[id]; /* which value is moot */
        const char *nul = pr && pr->value ? memchr(pr->value, '\0', pr->value_len) : NULL;
        if (nul) {
            slice_t k = key_of(pr);
            if (stop < 0)
                stop = (int)P->count;
            tc_fail(P, "%s: the value holds a NUL byte (byte %zu of %zu); metadata values are text",
                    kgs_quote(q, sizeof q, k.p, k.n), (size_t)(nul - pr->value) + 1, pr->value_len);
        }
    }
    if (stop >= 0) {
        P->note_on = stop;
        P->note = "the other keys are checked once every key is given once, as text";
    } else {
        resolve(slot, out, P);
    }
    if (P->count == 0)
        return 0;
    set_defaults(out);
    return KGS_EINVAL;
}

int trigger_config_parse(const metadata_pair_t *pairs, size_t n, trigger_config_t *out, char *err,
                         size_t errlen) {
    trigger_problems_t P;
    int rc = trigger_config_parse_problems(pairs, n, out, &P);
    if (err && errlen)
        trigger_problems_format(&P, err, errlen);
    return rc;
}
