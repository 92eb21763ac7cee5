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
                      size_t width, unsigned *count, char *err, size_t errlen) {
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
            return kgs_seterr(err, errlen, KGS_EINVAL, "invalid %s %s: empty item; must be %s", key,
                              kgs_quote(q, sizeof q, p, n), what[kind]);
        if (*count == TRIGGER_MAX_UUIDS)
            return kgs_seterr(err, errlen, KGS_EINVAL, "invalid %s: more than %d items; must be %s",
                              key, TRIGGER_MAX_UUIDS, what[kind]);
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
            return kgs_seterr(err, errlen, KGS_EINVAL, "invalid %s item %s: must be %s", key,
                              kgs_quote(q, sizeof q, item, len), what[kind]);
        for (unsigned k = 0; k < *count; k++)
            if (metadata_slice_eq(item, len, dst + k * width))
                return kgs_seterr(err, errlen, KGS_EINVAL, "invalid %s: %s is listed twice", key,
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

static void list_profiles(char *buf, size_t len) {
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < profile_count() && o < len; i++) {
        const profile_t *pr = profile_at(i);
        int w = snprintf(buf + o, len - o, "%s%s", o ? ", " : "", pr->name);
        if (w < 0)
            break;
        o += (size_t)w;
    }
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
 * podAggregation, partialData, each validated, then their combinations. */
static int resolve_scope(const metadata_pair_t *slot[K_COUNT], trigger_config_t *c, char *err,
                         size_t errlen) {
    char q[QBUF], why[512];
    slice_t v;
    int rc, e = 0;

    if (slot[K_POD_SELECTOR]) {
        v = tc_value_of(slot[K_POD_SELECTOR]);
        if (label_selector_parse(v.p, v.n, &c->pod_selector, why, sizeof why) != 0)
            return kgs_seterr(err, errlen, KGS_EINVAL, "invalid podSelector: %s", why);
        c->has_pod_selector = true;
    }
    if (slot[K_NAMESPACE]) {
        v = tc_value_of(slot[K_NAMESPACE]);
        if (!dns_label_valid(v.p, v.n))
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "invalid namespace %s: must be a Kubernetes namespace name, 1-63 "
                              "characters from a-z, 0-9 and '-', starting and ending with a letter "
                              "or digit",
                              kgs_quote(q, sizeof q, v.p, v.n));
        memcpy(c->pod_namespace, v.p, v.n);
        c->pod_namespace[v.n] = '\0';
        c->has_namespace = true;
    }
    if (slot[K_NODE_SELECTOR]) {
        v = tc_value_of(slot[K_NODE_SELECTOR]);
        if (node_selector_is_label_selector(v.p, v.n)) {
            if (label_selector_parse(v.p, v.n, &c->node_selector, why, sizeof why) != 0)
                return kgs_seterr(err, errlen, KGS_EINVAL,
                                  "invalid nodeSelector (a label selector, since it contains one "
                                  "of = ! ( ) / < >): %s",
                                  why);
            c->node_scope = NODE_SCOPE_SELECTOR;
        } else {
            rc = parse_list(LIST_NODE_NAME, "nodeSelector", v.p, v.n, &c->node_names[0][0],
                            sizeof c->node_names[0], &c->node_name_count, err, errlen);
            if (rc)
                return rc;
            c->node_scope = NODE_SCOPE_NAMES;
        }
    }
    if (slot[K_POD_AGGREGATION]) {
        v = tc_value_of(slot[K_POD_AGGREGATION]);
        rc = tc_key_enum(K_POD_AGGREGATION, v, &e, err, errlen);
        if (rc)
            return rc;
        c->pod_aggregation = (pod_aggregation_t)e;
    }
    if (slot[K_PARTIAL_DATA]) {
        v = tc_value_of(slot[K_PARTIAL_DATA]);
        rc = tc_key_enum(K_PARTIAL_DATA, v, &e, err, errlen);
        if (rc)
            return rc;
        c->partial_data = (partial_data_t)e;
    }
    if (slot[K_GPU_SHARING]) {
        v = tc_value_of(slot[K_GPU_SHARING]);
        rc = tc_key_enum(K_GPU_SHARING, v, &e, err, errlen);
        if (rc)
            return rc;
        c->gpu_sharing = (gpu_sharing_t)e;
        if (!c->has_pod_selector)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "gpuSharing is set without podSelector: it decides what each "
                              "selected pod's value on a shared GPU is, so it would be ignored; "
                              "add podSelector or drop gpuSharing");
        if (c->gpu_sharing == GPU_SHARING_SHARE && !gpu_sharing_metric_per_process(c->metric_type))
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "gpuSharing share with metricType %s: NVML reports %s for the whole "
                              "GPU only, not per process; per-process metrics are "
                              "gpu_utilization, memory_utilization, memory_used_mib and "
                              "memory_used_percent (or use gpuSharing whole)",
                              metric_type_name(c->metric_type), metric_type_name(c->metric_type));
    }

    if (c->has_pod_selector) {
        const char *device = c->gpu_index >= 0          ? "gpuIndex"
                             : c->gpu_uuid_count > 0    ? "gpuUUID"
                             : c->mig_uuid_count > 0    ? "migUUID"
                             : c->mig_profile_count > 0 ? "migProfile"
                                                        : NULL;
        if (device)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "podSelector and %s are both set: pod scope and device selection "
                              "don't mix; with podSelector the inputs are the GPUs the kubelet "
                              "assigned to the selected pods, so drop %s",
                              device, device);
        if (c->node_scope != NODE_SCOPE_ALL)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "podSelector and nodeSelector are both set: the pods say where they "
                              "run, so drop nodeSelector");
    } else {
        if (slot[K_POD_AGGREGATION])
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "podAggregation is set without podSelector: it combines each "
                              "selected pod's GPUs, so it would be ignored; add podSelector or "
                              "drop podAggregation");
        if (slot[K_NAMESPACE])
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "namespace is set without podSelector: it is the namespace of the "
                              "pods podSelector selects, so it would be ignored; add podSelector "
                              "or drop namespace");
    }
    return 0;
}

/* 1-5. What is measured and against what: profile, metricName, metricType,
 * targetValue and its shorthands, activationThreshold. */
static int resolve_metric(const metadata_pair_t *slot[K_COUNT], trigger_config_t *c, char *err,
                          size_t errlen) {
    char q[QBUF];
    char list[512];
    slice_t v;
    int rc;

    /* 1. profile */
    const profile_t *prof = NULL;
    if (slot[K_PROFILE]) {
        v = tc_value_of(slot[K_PROFILE]);
        prof = profile_find(v.p, v.n);
        list_profiles(list, sizeof list);
        if (!prof)
            return kgs_seterr(err, errlen, KGS_EINVAL, "unknown profile %s: must be one of %s",
                              kgs_quote(q, sizeof q, v.p, v.n), list);
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

    /* 2. metricName */
    if (slot[K_METRIC_NAME]) {
        v = tc_value_of(slot[K_METRIC_NAME]);
        if (!metric_name_valid(v.p, v.n))
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "invalid metricName %s: must be 1-127 characters from a-z, 0-9, '_' "
                              "and '-' (it becomes part of a Kubernetes metric name)",
                              kgs_quote(q, sizeof q, v.p, v.n));
        memcpy(c->metric_name, v.p, v.n);
        c->metric_name[v.n] = '\0';
    }

    /* 3. metricType */
    if (slot[K_METRIC_TYPE]) {
        v = tc_value_of(slot[K_METRIC_TYPE]);
        int found = 0;
        rc = tc_key_enum(K_METRIC_TYPE, v, &found, err, errlen);
        if (rc)
            return rc;
        if (found >= METRIC_TYPE_COUNT) { /* the demand types follow the GPU metrics */
            c->demand.type = (demand_type_t)(found - METRIC_TYPE_COUNT + 1);
            c->metric_type = METRIC_GPU_UTILIZATION;
        } else {
            c->demand.type = DEMAND_NONE;
            c->metric_type = (metric_type_t)found;
        }
    }

    /* 4. targetValue and the shorthands */
    const metadata_pair_t *gs = slot[K_TARGET_GPU_UTIL], *ms = slot[K_TARGET_MEM_UTIL];
    if (gs && ms)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "targetGpuUtilization and targetMemoryUtilization are both set: use one "
                          "(each sets metricType and targetValue)");
    const metadata_pair_t *sh = gs ? gs : ms;
    const char *sh_key = gs ? tc_keys[K_TARGET_GPU_UTIL].name : tc_keys[K_TARGET_MEM_UTIL].name;
    if (sh && slot[K_TARGET_VALUE])
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s and targetValue are both set: use one (%s is shorthand for a "
                          "metricType plus targetValue)",
                          sh_key, sh_key);
    if (slot[K_TARGET_VALUE]) {
        rc = tc_parse_target("targetValue", tc_value_of(slot[K_TARGET_VALUE]), &c->target_value,
                             err, errlen);
        if (rc)
            return rc;
    }
    if (sh) {
        metric_type_t want = gs ? METRIC_GPU_UTILIZATION : METRIC_MEMORY_USED_PERCENT;
        if (slot[K_METRIC_TYPE] && c->metric_type != want)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "%s implies metricType %s, but metricType is \"%s\": drop one, or "
                              "use targetValue with metricType",
                              sh_key, tc_metric_names[want], tc_metric_names[c->metric_type]);
        if (!slot[K_METRIC_TYPE] && prof && prof->metric_type != want)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "%s implies metricType %s, but profile \"%s\" uses %s: use "
                              "targetValue to change the profile's target",
                              sh_key, tc_metric_names[want], prof->name,
                              tc_metric_names[prof->metric_type]);
        rc = tc_parse_target(sh_key, tc_value_of(sh), &c->target_value, err, errlen);
        if (rc)
            return rc;
        c->metric_type = want;
    }

    /* 5. activationThreshold */
    if (slot[K_ACTIVATION]) {
        rc = tc_key_nonneg(K_ACTIVATION, tc_value_of(slot[K_ACTIVATION]), &c->activation_threshold,
                           err, errlen);
        if (rc)
            return rc;
    }
    return 0;
}

/* 6-9. Which GPUs: gpuIndex, aggregation, pollIntervalSeconds, and the
 * selection lists with their exclusions. */
static int resolve_selection(const metadata_pair_t *slot[K_COUNT], trigger_config_t *c, char *err,
                             size_t errlen) {
    slice_t v;
    int rc;

    /* 6. gpuIndex */
    if (slot[K_GPU_INDEX]) {
        long long i;
        rc = tc_key_int(K_GPU_INDEX, tc_value_of(slot[K_GPU_INDEX]), &i, err, errlen);
        if (rc)
            return rc;
        c->gpu_index = (int)i;
    }

    /* 7. aggregation */
    if (slot[K_AGGREGATION]) {
        int a = 0;
        rc = tc_key_enum(K_AGGREGATION, tc_value_of(slot[K_AGGREGATION]), &a, err, errlen);
        if (rc)
            return rc;
        c->aggregation = (aggregation_t)a;
    }

    /* 8. pollIntervalSeconds */
    if (slot[K_POLL]) {
        long long i;
        rc = tc_key_int(K_POLL, tc_value_of(slot[K_POLL]), &i, err, errlen);
        if (rc)
            return rc;
        c->poll_interval_s = (unsigned)i;
    }

    /* 9. selection lists */
    if (slot[K_GPU_UUID]) {
        v = tc_value_of(slot[K_GPU_UUID]);
        rc = parse_list(LIST_GPU_UUID, "gpuUUID", v.p, v.n, &c->gpu_uuids[0][0],
                        sizeof c->gpu_uuids[0], &c->gpu_uuid_count, err, errlen);
        if (rc)
            return rc;
    }
    if (slot[K_MIG_UUID]) {
        v = tc_value_of(slot[K_MIG_UUID]);
        rc = parse_list(LIST_MIG_UUID, "migUUID", v.p, v.n, &c->mig_uuids[0][0],
                        sizeof c->mig_uuids[0], &c->mig_uuid_count, err, errlen);
        if (rc)
            return rc;
    }
    if (slot[K_MIG_PROFILE]) {
        v = tc_value_of(slot[K_MIG_PROFILE]);
        rc = parse_list(LIST_MIG_PROFILE, "migProfile", v.p, v.n, &c->mig_profiles[0][0],
                        sizeof c->mig_profiles[0], &c->mig_profile_count, err, errlen);
        if (rc)
            return rc;
    }
    if (c->gpu_index >= 0 && c->gpu_uuid_count > 0)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "gpuIndex %d and gpuUUID are both set: select GPUs by one of them",
                          c->gpu_index);
    if (c->mig_uuid_count > 0 && c->mig_profile_count > 0)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "migUUID and migProfile are both set: migUUID already names the "
                          "instances; use one of them");
    return 0;
}

/* The resolution, in its fixed order: each step reports the first problem
 * it finds. */
static int resolve(const metadata_pair_t *slot[K_COUNT], trigger_config_t *c, char *err,
                   size_t errlen) {
    int rc = resolve_metric(slot, c, err, errlen);
    if (rc == 0)
        rc = resolve_selection(slot, c, err, errlen);
    if (rc == 0)
        rc = resolve_scope(slot, c, err, errlen);
    if (rc == 0)
        rc = tc_resolve_demand(slot, c, err, errlen);
    return rc;
}

int trigger_config_parse(const metadata_pair_t *pairs, size_t n, trigger_config_t *out, char *err,
                         size_t errlen) {
    char q[QBUF];
    const metadata_pair_t *slot[K_COUNT] = {0};
    const metadata_pair_t *unknown = NULL, *dup = NULL;

    set_defaults(out);
    if (err && errlen)
        err[0] = '\0';
    if (n > 0 && !pairs)
        return kgs_seterr(err, errlen, KGS_EINVAL, "metadata: NULL pairs");

    for (size_t i = 0; i < n; i++) {
        slice_t k = key_of(&pairs[i]);
        int id = tc_key_lookup(k.p, k.n);
        if (id < 0) {
            if (!unknown || metadata_slice_cmp(k.p, k.n, key_of(unknown).p, key_of(unknown).n) < 0)
                unknown = &pairs[i];
        } else if (slot[id]) {
            if (!dup || metadata_slice_cmp(k.p, k.n, key_of(dup).p, key_of(dup).n) < 0)
                dup = &pairs[i];
        } else {
            slot[id] = &pairs[i];
        }
    }

    int rc = 0;
    if (unknown) {
        slice_t k = key_of(unknown);
        rc = tc_unknown_key(k.p, k.n, err, errlen);
    } else if (dup) {
        slice_t k = key_of(dup);
        rc = kgs_seterr(err, errlen, KGS_EINVAL, "duplicate metadata key %s: give it once",
                        kgs_quote(q, sizeof q, k.p, k.n));
    } else {
        /* A value is text: the configuration keeps C strings, so a NUL byte
         * would cut a key name or a URL short without a word. */
        for (int id = 0; id < K_COUNT && rc == 0; id++) {
            const metadata_pair_t *pr = slot[id];
            const char *nul = pr && pr->value ? memchr(pr->value, '\0', pr->value_len) : NULL;
            if (nul) {
                slice_t k = key_of(pr);
                rc = kgs_seterr(err, errlen, KGS_EINVAL,
                                "%s: the value holds a NUL byte (byte %zu of %zu); metadata values "
                                "are text",
                                kgs_quote(q, sizeof q, k.p, k.n), (size_t)(nul - pr->value) + 1,
                                pr->value_len);
            }
        }
        if (rc == 0)
            rc = resolve(slot, out, err, errlen);
    }
    if (rc != 0)
        set_defaults(out);
    return rc;
}
