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
 *
 * The outcome does not depend on the order of the pairs: keys are collected
 * into one slot per known key first, and errors are reported in a fixed
 * order (unknown keys, smallest first; duplicates; then per key in table
 * order). The config cache relies on this to cache errors by content.
 */
#include "core/trigger_config.h"

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/duration.h"
#include "core/err.h"
#include "core/profiles.h"
#include "sources/source_url.h"

/* ---- names ----------------------------------------------------------------- */

static const char *const metric_names[METRIC_TYPE_COUNT] = {
    "gpu_utilization", "memory_utilization", "memory_used_mib", "memory_used_percent",
    "temperature",     "power_draw",         "pcie_tx_kbps",    "pcie_rx_kbps",
    "nvlink_tx_mbps",  "nvlink_rx_mbps",     "sm_active",       "sm_occupancy",
    "dram_bandwidth",
};

/* Demand metric types, in demand_type_t order (index 0 is DEMAND_NONE). The
 * first four are the Go system's names. */
static const char *const demand_names[DEMAND_TYPE_COUNT] = {
    "",
    "vllm_queue_depth",
    "vllm_kv_cache_usage",
    "triton_queue_wait_ms",
    "triton_request_rate",
    "engine_queue",
    "engine_running",
    "engine_kv_cache",
    "queue_length",
    "demand",
};

const char *demand_type_name(demand_type_t t) {
    return (unsigned)t < DEMAND_TYPE_COUNT ? demand_names[t] : "?";
}

static const char *const engine_names[] = {"", "vllm", "triton", "tgi", "sglang"};

const char *engine_name(engine_t e) {
    return (unsigned)e < sizeof engine_names / sizeof *engine_names ? engine_names[e] : "?";
}

bool trigger_uses_engine(const trigger_config_t *c) {
    return c->demand.engine != ENGINE_NONE;
}

bool trigger_uses_gpu(const trigger_config_t *c) {
    return c->demand.type == DEMAND_NONE ||
           (c->demand.type == DEMAND_COMPOSITE && c->demand.target_gpu > 0);
}

const char *metric_type_name(metric_type_t t) {
    return (unsigned)t < METRIC_TYPE_COUNT ? metric_names[t] : "?";
}

static const char *const aggregation_names[] = {"sum", "max", "min", "avg", "p95", "p99"};
#define AGG_COUNT (sizeof aggregation_names / sizeof aggregation_names[0])

const char *aggregation_name(aggregation_t a) {
    return (unsigned)a < AGG_COUNT ? aggregation_names[a] : "?";
}

static const char *const pod_aggregation_names[] = {"avg", "sum", "max", "min"};
#define POD_AGG_COUNT (sizeof pod_aggregation_names / sizeof pod_aggregation_names[0])

const char *pod_aggregation_name(pod_aggregation_t a) {
    return (unsigned)a < POD_AGG_COUNT ? pod_aggregation_names[a] : "?";
}

static const char *const partial_data_names[] = {"error", "ignore"};
#define PARTIAL_DATA_COUNT (sizeof partial_data_names / sizeof partial_data_names[0])

const char *partial_data_name(partial_data_t p) {
    return (unsigned)p < PARTIAL_DATA_COUNT ? partial_data_names[p] : "?";
}

/* ---- keys ------------------------------------------------------------------ */

typedef enum {
    K_PROFILE,
    K_METRIC_NAME,
    K_METRIC_TYPE,
    K_TARGET_VALUE,
    K_TARGET_GPU_UTIL,
    K_TARGET_MEM_UTIL,
    K_ACTIVATION,
    K_GPU_INDEX,
    K_AGGREGATION,
    K_POLL,
    K_GPU_UUID,
    K_MIG_UUID,
    K_MIG_PROFILE,
    K_POD_SELECTOR,
    K_NAMESPACE,
    K_NODE_SELECTOR,
    K_POD_AGGREGATION,
    K_PARTIAL_DATA,
    K_VLLM_ENDPOINT,
    K_TRITON_ENDPOINT,
    K_ENGINE_ENDPOINT,
    K_ENGINE,
    K_ENGINE_PORT,
    K_ENGINE_PATH,
    K_ENGINE_SCHEME,
    K_MODEL,
    K_WINDOW,
    K_REDIS_ADDRESS,
    K_REDIS_LIST,
    K_REDIS_STREAM,
    K_REDIS_GROUP,
    K_REDIS_MEASURE,
    K_REDIS_DB,
    K_REDIS_TLS,
    K_REDIS_USER,
    K_REDIS_PASS,
    K_DEMAND_ENDPOINT,
    K_DEMAND_METRIC,
    K_DEMAND_LABELS,
    K_TARGET_QUEUE,
    K_TARGET_RUNNING,
    K_TARGET_KV,
    K_TARGET_GPU,
    K_GPU_METRIC_TYPE,
    K_ACTIVATION_QUEUE,
    K_ACTIVATION_GPU,
    K_SOURCE_INTERVAL,
    K_SOURCE_TIMEOUT,
    K_FORECAST,
    K_COLD_START,
    K_SCALER_ADDRESS, /* KEDA's own: accepted and ignored */
    K_ENABLE_TLS,
    K_UNSAFE_SSL,
    K_COUNT
} key_id_t;

static const char *const key_names[K_COUNT] = {
    "profile",
    "metricName",
    "metricType",
    "targetValue",
    "targetGpuUtilization",
    "targetMemoryUtilization",
    "activationThreshold",
    "gpuIndex",
    "aggregation",
    "pollIntervalSeconds",
    "gpuUUID",
    "migUUID",
    "migProfile",
    "podSelector",
    "namespace",
    "nodeSelector",
    "podAggregation",
    "partialData",
    "vllmEndpoint",
    "tritonEndpoint",
    "engineEndpoint",
    "engine",
    "enginePort",
    "enginePath",
    "engineScheme",
    "model",
    "windowSeconds",
    "redisAddress",
    "redisListName",
    "redisStream",
    "redisConsumerGroup",
    "redisStreamMeasure",
    "redisDatabaseIndex",
    "redisTLS",
    "redisUsernameFromEnv",
    "redisPasswordFromEnv",
    "demandEndpoint",
    "demandMetric",
    "demandLabels",
    "targetQueuePerReplica",
    "targetRunningPerReplica",
    "targetKvCache",
    "targetGpu",
    "gpuMetricType",
    "activationQueue",
    "activationGpu",
    "sourceInterval",
    "sourceTimeout",
    "forecast",
    "coldStartSeconds",
    "scalerAddress",
    "enableTLS",
    "unsafeSsl",
};

size_t trigger_config_key_count(void) {
    return K_COUNT;
}

const char *trigger_config_key_name(size_t i) {
    return i < K_COUNT ? key_names[i] : NULL;
}

static int key_lookup(const char *p, size_t n) {
    for (int k = 0; k < K_COUNT; k++)
        if (metadata_slice_eq(p, n, key_names[k]))
            return k;
    return -1;
}

/* ---- message helpers ----------------------------------------------------- */

#define QBUF KGS_QUOTE_BUF

static int lower(int c) {
    return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

/* Case-insensitive Levenshtein distance, for keys up to 64 bytes. */
static size_t edit_distance(const char *a, size_t an, const char *b, size_t bn) {
    size_t row[65];
    for (size_t j = 0; j <= bn; j++)
        row[j] = j;
    for (size_t i = 1; i <= an; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= bn; j++) {
            size_t up = row[j];
            size_t cost = lower((unsigned char)a[i - 1]) == lower((unsigned char)b[j - 1]) ? 0 : 1;
            size_t best = diag + cost;
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[bn];
}

static bool is_ci_prefix(const char *p, size_t n, const char *s) {
    size_t sl = strlen(s);
    if (n > sl)
        return false;
    for (size_t i = 0; i < n; i++)
        if (lower((unsigned char)p[i]) != lower((unsigned char)s[i]))
            return false;
    return true;
}

/* The known key closest to p, or NULL when none is close: a case-insensitive
 * match, an edit distance of at most 2 (3 for longer keys), or a
 * case-insensitive prefix of at least 5 characters ("pollInterval"). */
static const char *suggest_key(const char *p, size_t n) {
    if (n == 0 || n > 64)
        return NULL;
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    for (int k = 0; k < K_COUNT; k++) {
        size_t d = edit_distance(p, n, key_names[k], strlen(key_names[k]));
        size_t limit = n <= 8 ? 2 : 3;
        if (d > limit && !(n >= 5 && is_ci_prefix(p, n, key_names[k])))
            continue;
        if (d < best_d) {
            best_d = d;
            best = key_names[k];
        }
    }
    return best;
}

/* Words people write for an enum value, mapped to the value they mean. */
static const char *const value_synonyms[][2] = {
    {"average", "avg"},  {"mean", "avg"},       {"total", "sum"},    {"maximum", "max"},
    {"minimum", "min"},  {"fail", "error"},     {"strict", "error"}, {"skip", "ignore"},
    {"allow", "ignore"}, {"partial", "ignore"},
};

/* The valid enum value closest to p, or NULL: a synonym above, the same
 * letters in another case, at most 1 edit (2 for values of 5+ bytes), or
 * either being a case-insensitive prefix of the other (3+ bytes). */
static const char *suggest_value(const char *p, size_t n, const char *const *names, size_t count) {
    if (n == 0 || n > 64)
        return NULL;
    for (size_t i = 0; i < sizeof value_synonyms / sizeof value_synonyms[0]; i++) {
        size_t sl = strlen(value_synonyms[i][0]);
        if (sl == n && edit_distance(p, n, value_synonyms[i][0], sl) == 0)
            for (size_t k = 0; k < count; k++)
                if (strcmp(names[k], value_synonyms[i][1]) == 0)
                    return names[k];
    }
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    for (size_t k = 0; k < count; k++) {
        size_t nl = strlen(names[k]);
        size_t d = edit_distance(p, n, names[k], nl);
        size_t limit = nl >= 5 ? 2 : 1;
        /* "ign" is a prefix of "ignore"; "maximum" starts with "max" */
        bool prefix =
            n >= 3 && (is_ci_prefix(p, n, names[k]) || (nl <= n && is_ci_prefix(p, nl, names[k])));
        if (d > limit && !prefix)
            continue;
        if (d < best_d) {
            best_d = d;
            best = names[k];
        }
    }
    return best;
}

/* Looks (p, n) up in names; on a miss writes "invalid <key> "<v>": must be
 * <valid>[; did you mean "<x>"?]" and returns KGS_EINVAL. */
static int parse_enum(const char *key, const char *p, size_t n, const char *const *names,
                      size_t count, const char *valid, int *out, char *err, size_t errlen) {
    char q[QBUF];
    for (size_t k = 0; k < count; k++)
        if (metadata_slice_eq(p, n, names[k])) {
            *out = (int)k;
            return 0;
        }
    const char *s = suggest_value(p, n, names, count);
    if (s)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "invalid %s %s: must be %s; did you mean \"%s\"?", key,
                          kgs_quote(q, sizeof q, p, n), valid, s);
    return kgs_seterr(err, errlen, KGS_EINVAL, "invalid %s %s: must be %s", key,
                      kgs_quote(q, sizeof q, p, n), valid);
}

/* ---- scalar parsers -------------------------------------------------------- */

/* Strict decimal floating point: [+-]? (D+ (. D*)? | . D+) ([eE] [+-]? D+)?
 * No whitespace, hex, inf, nan or trailing bytes. */
static bool parse_number(const char *p, size_t n, double *out) {
    char buf[64];
    if (n == 0 || n >= sizeof buf)
        return false;
    size_t i = 0, digits = 0;
    if (p[i] == '+' || p[i] == '-')
        i++;
    while (i < n && isdigit((unsigned char)p[i]))
        i++, digits++;
    if (i < n && p[i] == '.') {
        i++;
        while (i < n && isdigit((unsigned char)p[i]))
            i++, digits++;
    }
    if (digits == 0)
        return false;
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        i++;
        if (i < n && (p[i] == '+' || p[i] == '-'))
            i++;
        size_t ed = 0;
        while (i < n && isdigit((unsigned char)p[i]))
            i++, ed++;
        if (ed == 0)
            return false;
    }
    if (i != n)
        return false;
    memcpy(buf, p, n);
    buf[n] = '\0';
    char *end = NULL;
    double v = strtod(buf, &end); /* the grammar above leaves no locale-dependent input */
    if (end != buf + n || !isfinite(v))
        return false;
    *out = v;
    return true;
}

/* Strict decimal integer: [+-]? D{1,18}. */
static bool parse_integer(const char *p, size_t n, long long *out) {
    size_t i = 0;
    bool neg = false;
    if (n > 0 && (p[0] == '+' || p[0] == '-')) {
        neg = p[0] == '-';
        i = 1;
    }
    if (i == n || n - i > 18)
        return false;
    long long v = 0;
    for (; i < n; i++) {
        if (!isdigit((unsigned char)p[i]))
            return false;
        v = v * 10 + (p[i] - '0');
    }
    *out = neg ? -v : v;
    return true;
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

typedef struct {
    const char *p;
    size_t n;
} slice_t;

static slice_t key_of(const metadata_pair_t *m) {
    slice_t s = {m->key ? m->key : "", m->key ? m->key_len : 0};
    return s;
}

static slice_t value_of(const metadata_pair_t *m) {
    slice_t s = {m->value ? m->value : "", m->value ? m->value_len : 0};
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

static void list_metric_types(char *buf, size_t len) {
    size_t o = 0;
    buf[0] = '\0';
    for (int t = 0; t < METRIC_TYPE_COUNT + DEMAND_TYPE_COUNT - 1 && o < len; t++) {
        const char *name =
            t < METRIC_TYPE_COUNT ? metric_names[t] : demand_names[t - METRIC_TYPE_COUNT + 1];
        int w = snprintf(buf + o, len - o, "%s%s", o ? ", " : "", name);
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

#define TARGET_MIN 0.001 /* KEDA sends targets as milli-quantities: less rounds to 0 */
#define TARGET_MAX 1e12  /* keeps target * 1000 far inside int64 */
#define POLL_MAX 86400

static int parse_target(const char *key, slice_t v, double *out, char *err, size_t errlen) {
    char q[QBUF];
    double d;
    if (!parse_number(v.p, v.n, &d))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "invalid %s %s: must be a decimal number such as \"80\" or \"0.5\"", key,
                          kgs_quote(q, sizeof q, v.p, v.n));
    if (!(d >= TARGET_MIN && d <= TARGET_MAX))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "invalid %s %s: must be > 0 (at least 0.001, KEDA's resolution, and at "
                          "most 1e12); the HPA rejects a target of 0",
                          key, kgs_quote(q, sizeof q, v.p, v.n));
    *out = d;
    return 0;
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

/* 10. The workload scope: podSelector, namespace, nodeSelector,
 * podAggregation, partialData, each validated, then their combinations. */
static int resolve_scope(const metadata_pair_t *slot[K_COUNT], trigger_config_t *c, char *err,
                         size_t errlen) {
    char q[QBUF], why[512];
    slice_t v;
    int rc, e = 0;

    if (slot[K_POD_SELECTOR]) {
        v = value_of(slot[K_POD_SELECTOR]);
        if (label_selector_parse(v.p, v.n, &c->pod_selector, why, sizeof why) != 0)
            return kgs_seterr(err, errlen, KGS_EINVAL, "invalid podSelector: %s", why);
        c->has_pod_selector = true;
    }
    if (slot[K_NAMESPACE]) {
        v = value_of(slot[K_NAMESPACE]);
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
        v = value_of(slot[K_NODE_SELECTOR]);
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
        v = value_of(slot[K_POD_AGGREGATION]);
        rc = parse_enum("podAggregation", v.p, v.n, pod_aggregation_names, POD_AGG_COUNT,
                        "avg, sum, max or min", &e, err, errlen);
        if (rc)
            return rc;
        c->pod_aggregation = (pod_aggregation_t)e;
    }
    if (slot[K_PARTIAL_DATA]) {
        v = value_of(slot[K_PARTIAL_DATA]);
        rc = parse_enum("partialData", v.p, v.n, partial_data_names, PARTIAL_DATA_COUNT,
                        "error or ignore", &e, err, errlen);
        if (rc)
            return rc;
        c->partial_data = (partial_data_t)e;
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

/* ---- demand signals (engines, queues, composite) ------------------------------ */

/* 11. Engine, queue and composite keys. Each key is checked against the
 * metric type it serves, so a key that would be ignored is an error. */

static bool any_slot(const metadata_pair_t *slot[K_COUNT], const int *keys, size_t n, int *which) {
    for (size_t i = 0; i < n; i++)
        if (slot[keys[i]]) {
            *which = keys[i];
            return true;
        }
    return false;
}

/* Copies a value into dst (cap bytes with the NUL); false when too long or
 * holding a NUL, CR or LF (they would end a request line or header). */
static bool copy_plain(slice_t v, char *dst, size_t cap) {
    if (v.n == 0 || v.n >= cap)
        return false;
    for (size_t i = 0; i < v.n; i++)
        if (v.p[i] == '\0' || v.p[i] == '\r' || v.p[i] == '\n')
            return false;
    memcpy(dst, v.p, v.n);
    dst[v.n] = '\0';
    return true;
}

static int parse_duration_key(const char *key, slice_t v, uint64_t lo, uint64_t hi, uint64_t *out,
                              char *err, size_t errlen) {
    char q[QBUF], buf[64], why[256];
    uint64_t ns;
    if (v.n == 0 || v.n >= sizeof buf || memchr(v.p, '\0', v.n))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "invalid %s %s: must be a duration like "
                          "\"1s\" or \"500ms\"",
                          key, kgs_quote(q, sizeof q, v.p, v.n));
    memcpy(buf, v.p, v.n);
    buf[v.n] = '\0';
    if (duration_parse_ns(buf, &ns, why, sizeof why) != 0)
        return kgs_seterr(err, errlen, KGS_EINVAL, "invalid %s: %s", key, why);
    if (ns < lo || ns > hi) {
        char a[32], b[32];
        return kgs_seterr(err, errlen, KGS_EINVAL, "invalid %s %s: must be from %s to %s", key,
                          kgs_quote(q, sizeof q, v.p, v.n), duration_format(lo, a, sizeof a),
                          duration_format(hi, b, sizeof b));
    }
    *out = ns;
    return 0;
}

/* A comma list of engine URLs into c->demand.endpoints. */
static int parse_endpoints(const char *key, slice_t v, demand_config_t *d, char *err,
                           size_t errlen) {
    char q[QBUF], why[256], url[TRIGGER_URL_MAX];
    size_t i = 0;
    d->endpoint_count = 0;
    while (i <= v.n) {
        size_t j = i;
        while (j < v.n && v.p[j] != ',')
            j++;
        size_t a = i, b = j;
        while (a < b && (v.p[a] == ' ' || v.p[a] == '\t'))
            a++;
        while (b > a && (v.p[b - 1] == ' ' || v.p[b - 1] == '\t'))
            b--;
        if (a == b)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "invalid %s %s: an empty entry; give one or more URLs separated by "
                              "commas, e.g. \"http://vllm-0.vllm:8000/metrics\"",
                              key, kgs_quote(q, sizeof q, v.p, v.n));
        if (d->endpoint_count == TRIGGER_MAX_ENDPOINTS)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "invalid %s: more than %d URLs; for more pods use podSelector "
                              "with the aggregator role",
                              key, TRIGGER_MAX_ENDPOINTS);
        if (b - a >= sizeof url || memchr(v.p + a, '\0', b - a))
            return kgs_seterr(err, errlen, KGS_EINVAL, "invalid %s %s: a URL longer than %d bytes",
                              key, kgs_quote(q, sizeof q, v.p + a, b - a), TRIGGER_URL_MAX - 1);
        memcpy(url, v.p + a, b - a);
        url[b - a] = '\0';
        source_url_t u;
        unsigned allowed = (1u << SOURCE_SCHEME_HTTP) | (1u << SOURCE_SCHEME_HTTPS);
        if (source_url_parse(url, allowed, &u, why, sizeof why) != 0)
            return kgs_seterr(err, errlen, KGS_EINVAL, "invalid %s %s: %s", key,
                              kgs_quote(q, sizeof q, url, b - a), why);
        for (unsigned k = 0; k < d->endpoint_count; k++)
            if (strcmp(d->endpoints[k], url) == 0)
                return kgs_seterr(err, errlen, KGS_EINVAL,
                                  "invalid %s: %s is listed twice (it would be counted twice)", key,
                                  kgs_quote(q, sizeof q, url, b - a));
        memcpy(d->endpoints[d->endpoint_count++], url, b - a + 1);
        i = j + 1;
    }
    return 0;
}

/* demandLabels: name="value" or name!="value", comma separated; the value
 * in double quotes with \" and \\ escapes (PromQL matcher syntax, no regex). */
static int parse_matchers(slice_t v, demand_config_t *d, char *err, size_t errlen) {
    char q[QBUF];
    size_t i = 0;
    const char *what = "expected name=\"value\" or name!=\"value\", separated by commas";
    while (i < v.n) {
        while (i < v.n && (v.p[i] == ' ' || v.p[i] == ','))
            i++;
        if (i == v.n)
            break;
        if (d->matcher_count == TRIGGER_MAX_MATCHERS)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "invalid demandLabels: more than %d matchers", TRIGGER_MAX_MATCHERS);
        size_t s0 = i;
        while (i < v.n && (isalnum((unsigned char)v.p[i]) || v.p[i] == '_'))
            i++;
        size_t nlen = i - s0;
        if (nlen == 0 || nlen >= sizeof d->matchers[0].name || isdigit((unsigned char)v.p[s0]))
            return kgs_seterr(err, errlen, KGS_EINVAL, "invalid demandLabels %s: %s",
                              kgs_quote(q, sizeof q, v.p, v.n), what);
        bool negate = false;
        if (i < v.n && v.p[i] == '!') {
            negate = true;
            i++;
        }
        if (i + 1 >= v.n || v.p[i] != '=' || v.p[i + 1] != '"')
            return kgs_seterr(err, errlen, KGS_EINVAL, "invalid demandLabels %s: %s",
                              kgs_quote(q, sizeof q, v.p, v.n), what);
        i += 2;
        char *dst = d->matchers[d->matcher_count].value;
        size_t o = 0;
        bool closed = false;
        while (i < v.n) {
            char ch = v.p[i++];
            if (ch == '"') {
                closed = true;
                break;
            }
            if (ch == '\\' && i < v.n)
                ch = v.p[i++] == 'n' ? '\n' : v.p[i - 1];
            if (ch == '\0' || o + 1 >= sizeof d->matchers[0].value)
                return kgs_seterr(err, errlen, KGS_EINVAL,
                                  "invalid demandLabels %s: a value too long or holding a NUL",
                                  kgs_quote(q, sizeof q, v.p, v.n));
            dst[o++] = ch;
        }
        if (!closed)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "invalid demandLabels %s: unterminated quoted value",
                              kgs_quote(q, sizeof q, v.p, v.n));
        dst[o] = '\0';
        memcpy(d->matchers[d->matcher_count].name, v.p + s0, nlen);
        d->matchers[d->matcher_count].name[nlen] = '\0';
        d->matchers[d->matcher_count].negate = negate;
        d->matcher_count++;
        while (i < v.n && v.p[i] == ' ')
            i++;
        if (i < v.n && v.p[i] != ',')
            return kgs_seterr(err, errlen, KGS_EINVAL, "invalid demandLabels %s: %s",
                              kgs_quote(q, sizeof q, v.p, v.n), what);
    }
    return 0;
}

static int parse_bool(const char *key, slice_t v, bool *out, char *err, size_t errlen) {
    char q[QBUF];
    if (metadata_slice_eq(v.p, v.n, "true")) {
        *out = true;
        return 0;
    }
    if (metadata_slice_eq(v.p, v.n, "false")) {
        *out = false;
        return 0;
    }
    return kgs_seterr(err, errlen, KGS_EINVAL, "invalid %s %s: must be true or false", key,
                      kgs_quote(q, sizeof q, v.p, v.n));
}

static int parse_nonneg(const char *key, slice_t v, double *out, char *err, size_t errlen) {
    char q[QBUF];
    double d;
    if (!parse_number(v.p, v.n, &d) || d < 0)
        return kgs_seterr(err, errlen, KGS_EINVAL, "invalid %s %s: must be a decimal number >= 0",
                          key, kgs_quote(q, sizeof q, v.p, v.n));
    *out = d == 0 ? 0 : d;
    return 0;
}

static bool type_is_engine_only(demand_type_t t) {
    return t >= DEMAND_VLLM_QUEUE_DEPTH && t <= DEMAND_ENGINE_KV_CACHE;
}

static bool engine_has_running(engine_t e) {
    return e != ENGINE_TRITON;
}

static bool engine_has_kv(engine_t e) {
    return e == ENGINE_VLLM || e == ENGINE_SGLANG;
}

static int resolve_engine(const metadata_pair_t *slot[K_COUNT], trigger_config_t *c, bool needed,
                          char *err, size_t errlen) {
    char q[QBUF];
    demand_config_t *d = &c->demand;
    const char *tname = demand_names[d->type];
    slice_t v;
    int rc;
    int implied = ENGINE_NONE; /* from the metric type */
    if (d->type == DEMAND_VLLM_QUEUE_DEPTH || d->type == DEMAND_VLLM_KV_CACHE_USAGE)
        implied = ENGINE_VLLM;
    if (d->type == DEMAND_TRITON_QUEUE_WAIT_MS || d->type == DEMAND_TRITON_REQUEST_RATE)
        implied = ENGINE_TRITON;

    int ep_key = -1, nkeys = 0;
    for (int k = K_VLLM_ENDPOINT; k <= K_ENGINE_ENDPOINT; k++)
        if (slot[k]) {
            ep_key = k;
            nkeys++;
        }
    if (nkeys > 1)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "more than one of vllmEndpoint, tritonEndpoint and engineEndpoint is "
                          "set: one trigger reads one kind of engine; give one of them");
    int by_key = ep_key == K_VLLM_ENDPOINT     ? ENGINE_VLLM
                 : ep_key == K_TRITON_ENDPOINT ? ENGINE_TRITON
                                               : ENGINE_NONE;
    int named = ENGINE_NONE;
    if (slot[K_ENGINE]) {
        v = value_of(slot[K_ENGINE]);
        rc = parse_enum("engine", v.p, v.n, engine_names + 1, 4, "vllm, triton, tgi or sglang",
                        &named, err, errlen);
        if (rc)
            return rc;
        named++;
    }
    int e = named ? named : by_key ? by_key : implied;
    if (named && by_key && named != by_key)
        return kgs_seterr(err, errlen, KGS_EINVAL, "engine is \"%s\" but %s is set (a %s URL)",
                          engine_names[named], key_names[ep_key], engine_names[by_key]);
    if (implied && e != implied)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "metricType %s reads %s, but engine is \"%s\"; for any engine use "
                          "engine_queue, engine_running or engine_kv_cache",
                          tname, engine_names[implied], engine_names[e]);

    static const int engine_keys[] = {K_VLLM_ENDPOINT, K_TRITON_ENDPOINT, K_ENGINE_ENDPOINT,
                                      K_ENGINE,        K_ENGINE_PORT,     K_ENGINE_PATH,
                                      K_ENGINE_SCHEME, K_MODEL,           K_WINDOW};
    int which;
    if (!needed) {
        if (any_slot(slot, engine_keys, sizeof engine_keys / sizeof *engine_keys, &which))
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "%s is set, but metricType %s reads no serving engine; engine keys "
                              "apply to vllm_*, triton_*, engine_* and demand",
                              key_names[which], tname[0] ? tname : metric_names[c->metric_type]);
        return 0;
    }
    if (e == ENGINE_NONE)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "metricType %s needs the serving engine: set engine (vllm, triton, "
                          "tgi or sglang), or vllmEndpoint / tritonEndpoint",
                          tname);
    d->engine = (engine_t)e;

    if (ep_key >= 0) {
        rc = parse_endpoints(key_names[ep_key], value_of(slot[ep_key]), d, err, errlen);
        if (rc)
            return rc;
        static const int pod_keys[] = {K_ENGINE_PORT, K_ENGINE_PATH, K_ENGINE_SCHEME};
        if (any_slot(slot, pod_keys, 3, &which))
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "%s is set together with %s: it applies to the pods of podSelector; "
                              "put the port, path and scheme in the URLs instead",
                              key_names[which], key_names[ep_key]);
    } else if (!slot[K_POD_SELECTOR]) {
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "metricType %s needs where to scrape %s: %s (a comma list of metrics "
                          "URLs), or podSelector with the aggregator role (every selected pod "
                          "is scraped)",
                          tname, engine_names[e],
                          e == ENGINE_VLLM     ? "vllmEndpoint"
                          : e == ENGINE_TRITON ? "tritonEndpoint"
                                               : "engineEndpoint");
    }
    static const uint16_t default_ports[] = {0, 8000, 8002, 80, 30000};
    d->engine_port = default_ports[e];
    strcpy(d->engine_path, "/metrics");
    if (slot[K_ENGINE_PORT]) {
        v = value_of(slot[K_ENGINE_PORT]);
        long long port;
        if (!parse_integer(v.p, v.n, &port) || port < 1 || port > 65535)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "invalid enginePort %s: must be a port number from 1 to 65535",
                              kgs_quote(q, sizeof q, v.p, v.n));
        d->engine_port = (uint16_t)port;
    }
    if (slot[K_ENGINE_PATH]) {
        v = value_of(slot[K_ENGINE_PATH]);
        bool ok = v.n > 0 && v.p[0] == '/' && v.n < sizeof d->engine_path;
        for (size_t i = 0; ok && i < v.n; i++)
            ok = (unsigned char)v.p[i] > ' ' && (unsigned char)v.p[i] < 0x7f && v.p[i] != '#';
        if (!ok)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "invalid enginePath %s: must start with '/' and hold no spaces, "
                              "control bytes or '#', e.g. \"/metrics\"",
                              kgs_quote(q, sizeof q, v.p, v.n));
        memcpy(d->engine_path, v.p, v.n);
        d->engine_path[v.n] = '\0';
    }
    if (slot[K_ENGINE_SCHEME]) {
        v = value_of(slot[K_ENGINE_SCHEME]);
        static const char *const schemes[] = {"http", "https"};
        int sch = 0;
        rc = parse_enum("engineScheme", v.p, v.n, schemes, 2, "http or https", &sch, err, errlen);
        if (rc)
            return rc;
        d->engine_https = sch == 1;
    }
    if (slot[K_MODEL]) {
        if (e == ENGINE_TGI)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "model is set, but TGI serves one model per server and its metrics "
                              "carry no model label; drop model");
        v = value_of(slot[K_MODEL]);
        if (!copy_plain(v, d->model, sizeof d->model))
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "invalid model %s: must be 1-255 bytes without control characters",
                              kgs_quote(q, sizeof q, v.p, v.n));
    }
    bool rate = d->type == DEMAND_TRITON_QUEUE_WAIT_MS || d->type == DEMAND_TRITON_REQUEST_RATE;
    d->window_s = 30;
    if (slot[K_WINDOW]) {
        if (!rate)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "windowSeconds is set, but metricType %s is not a rate; it applies "
                              "to triton_queue_wait_ms and triton_request_rate",
                              tname);
        v = value_of(slot[K_WINDOW]);
        long long w;
        if (!parse_integer(v.p, v.n, &w) || w < 1 || w > 3600)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "invalid windowSeconds %s: must be whole seconds from 1 to 3600",
                              kgs_quote(q, sizeof q, v.p, v.n));
        d->window_s = (unsigned)w;
    }
    if (d->type == DEMAND_ENGINE_RUNNING && !engine_has_running(d->engine))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "metricType engine_running: Triton exports no requests-in-flight gauge; "
                          "use triton_request_rate or engine_queue");
    if (d->type == DEMAND_ENGINE_KV_CACHE && !engine_has_kv(d->engine))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "metricType engine_kv_cache: %s exports no KV-cache usage; it exists "
                          "for vllm and sglang",
                          engine_names[d->engine]);
    return 0;
}

static int resolve_queue(const metadata_pair_t *slot[K_COUNT], trigger_config_t *c, bool allowed,
                         char *err, size_t errlen) {
    char q[QBUF];
    demand_config_t *d = &c->demand;
    slice_t v;
    int rc, which;
    static const int redis_keys[] = {K_REDIS_ADDRESS, K_REDIS_LIST,    K_REDIS_STREAM,
                                     K_REDIS_GROUP,   K_REDIS_MEASURE, K_REDIS_DB,
                                     K_REDIS_TLS,     K_REDIS_USER,    K_REDIS_PASS};
    static const int prom_keys[] = {K_DEMAND_ENDPOINT, K_DEMAND_METRIC, K_DEMAND_LABELS};
    bool any_redis = any_slot(slot, redis_keys, 9, &which);
    int which2;
    bool any_prom = any_slot(slot, prom_keys, 3, &which2);
    if (!allowed && (any_redis || any_prom))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s is set, but metricType %s reads no queue; queue keys apply to "
                          "queue_length and demand",
                          key_names[any_redis ? which : which2],
                          d->type ? demand_names[d->type] : metric_names[c->metric_type]);
    if (any_redis && any_prom)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "both a Redis queue (%s) and a Prometheus queue (%s) are set: one "
                          "trigger reads one queue; use two triggers",
                          key_names[which], key_names[which2]);
    if (any_redis) {
        if (!slot[K_REDIS_ADDRESS])
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "%s is set without redisAddress (host:port, e.g. "
                              "\"redis.queues:6379\")",
                              key_names[which]);
        v = value_of(slot[K_REDIS_ADDRESS]);
        char addr[TRIGGER_URL_MAX], why[256];
        if (!copy_plain(v, addr, sizeof addr))
            return kgs_seterr(err, errlen, KGS_EINVAL, "invalid redisAddress %s",
                              kgs_quote(q, sizeof q, v.p, v.n));
        source_url_t u;
        bool tls = false;
        int db = 0;
        if (source_addr_parse(addr, &u, &tls, &db, why, sizeof why) != 0)
            return kgs_seterr(err, errlen, KGS_EINVAL, "invalid redisAddress %s: %s",
                              kgs_quote(q, sizeof q, v.p, v.n), why);
        strcpy(d->redis_address, addr);
        d->redis_tls = tls;
        d->redis_db = db;
        if (slot[K_REDIS_LIST] && slot[K_REDIS_STREAM])
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "redisListName and redisStream are both set: give the list or the "
                              "stream");
        if (!slot[K_REDIS_LIST] && !slot[K_REDIS_STREAM])
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "redisAddress is set without redisListName or redisStream: which "
                              "key holds the queue?");
        int kk = slot[K_REDIS_LIST] ? K_REDIS_LIST : K_REDIS_STREAM;
        v = value_of(slot[kk]);
        if (v.n == 0 || v.n >= sizeof d->redis_key)
            return kgs_seterr(err, errlen, KGS_EINVAL, "invalid %s %s: must be 1-511 bytes",
                              key_names[kk], kgs_quote(q, sizeof q, v.p, v.n));
        memcpy(d->redis_key, v.p, v.n);
        d->redis_key[v.n] = '\0';
        d->queue = kk == K_REDIS_LIST ? QUEUE_REDIS_LIST : QUEUE_REDIS_STREAM;
        if (slot[K_REDIS_GROUP]) {
            if (d->queue != QUEUE_REDIS_STREAM)
                return kgs_seterr(err, errlen, KGS_EINVAL,
                                  "redisConsumerGroup is set with redisListName: consumer groups "
                                  "exist on streams (redisStream)");
            v = value_of(slot[K_REDIS_GROUP]);
            if (!copy_plain(v, d->redis_group, sizeof d->redis_group))
                return kgs_seterr(err, errlen, KGS_EINVAL,
                                  "invalid redisConsumerGroup %s: must be 1-255 bytes",
                                  kgs_quote(q, sizeof q, v.p, v.n));
        }
        d->stream_measure = d->redis_group[0] ? STREAM_MEASURE_LAG : STREAM_MEASURE_LENGTH;
        if (slot[K_REDIS_MEASURE]) {
            if (d->queue != QUEUE_REDIS_STREAM)
                return kgs_seterr(err, errlen, KGS_EINVAL,
                                  "redisStreamMeasure is set with redisListName: it applies to "
                                  "streams");
            static const char *const measures[] = {"lag", "pending", "length"};
            int m = 0;
            v = value_of(slot[K_REDIS_MEASURE]);
            rc = parse_enum("redisStreamMeasure", v.p, v.n, measures, 3, "lag, pending or length",
                            &m, err, errlen);
            if (rc)
                return rc;
            d->stream_measure = (stream_measure_t)m;
            if (d->stream_measure != STREAM_MEASURE_LENGTH && !d->redis_group[0])
                return kgs_seterr(err, errlen, KGS_EINVAL,
                                  "redisStreamMeasure %s needs redisConsumerGroup (lag and "
                                  "pending are per consumer group)",
                                  measures[m]);
        }
        if (slot[K_REDIS_DB]) {
            v = value_of(slot[K_REDIS_DB]);
            long long db2;
            if (!parse_integer(v.p, v.n, &db2) || db2 < 0 || db2 > 15)
                return kgs_seterr(err, errlen, KGS_EINVAL,
                                  "invalid redisDatabaseIndex %s: must be 0 to 15",
                                  kgs_quote(q, sizeof q, v.p, v.n));
            d->redis_db = (int)db2;
        }
        if (slot[K_REDIS_TLS]) {
            bool t = false;
            rc = parse_bool("redisTLS", value_of(slot[K_REDIS_TLS]), &t, err, errlen);
            if (rc)
                return rc;
            if (tls && !t)
                return kgs_seterr(err, errlen, KGS_EINVAL,
                                  "redisTLS is false but redisAddress is a rediss:// URL");
            d->redis_tls = t;
        }
        if (slot[K_REDIS_USER]) {
            v = value_of(slot[K_REDIS_USER]);
            if (!copy_plain(v, d->redis_username, sizeof d->redis_username))
                return kgs_seterr(err, errlen, KGS_EINVAL,
                                  "invalid redisUsernameFromEnv: the resolved value must be "
                                  "1-255 bytes without control characters");
        }
        if (slot[K_REDIS_PASS]) {
            v = value_of(slot[K_REDIS_PASS]);
            /* The value is a secret (KEDA resolved it): never quote it. */
            if (v.n == 0 || v.n >= sizeof d->redis_password || memchr(v.p, '\0', v.n))
                return kgs_seterr(err, errlen, KGS_EINVAL,
                                  "invalid redisPasswordFromEnv: the resolved value must be "
                                  "1-511 bytes (value not shown)");
            memcpy(d->redis_password, v.p, v.n);
            d->redis_password[v.n] = '\0';
        }
        if (slot[K_REDIS_USER] && !slot[K_REDIS_PASS])
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "redisUsernameFromEnv is set without redisPasswordFromEnv: Redis "
                              "ACL users log in with both");
    }
    if (any_prom) {
        if (!slot[K_DEMAND_ENDPOINT] || !slot[K_DEMAND_METRIC])
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "a Prometheus queue needs demandEndpoint (a metrics URL) and "
                              "demandMetric (the sample name)%s",
                              slot[K_DEMAND_ENDPOINT] ? ": demandMetric is missing"
                                                      : ": demandEndpoint is missing");
        v = value_of(slot[K_DEMAND_ENDPOINT]);
        char why[256];
        source_url_t u;
        if (!copy_plain(v, d->demand_endpoint, sizeof d->demand_endpoint))
            return kgs_seterr(err, errlen, KGS_EINVAL, "invalid demandEndpoint %s",
                              kgs_quote(q, sizeof q, v.p, v.n));
        if (source_url_parse(d->demand_endpoint,
                             (1u << SOURCE_SCHEME_HTTP) | (1u << SOURCE_SCHEME_HTTPS), &u, why,
                             sizeof why) != 0)
            return kgs_seterr(err, errlen, KGS_EINVAL, "invalid demandEndpoint %s: %s",
                              kgs_quote(q, sizeof q, v.p, v.n), why);
        v = value_of(slot[K_DEMAND_METRIC]);
        bool ok = v.n > 0 && v.n < sizeof d->demand_metric &&
                  (isalpha((unsigned char)v.p[0]) || v.p[0] == '_' || v.p[0] == ':');
        for (size_t i = 0; ok && i < v.n; i++)
            ok = isalnum((unsigned char)v.p[i]) || v.p[i] == '_' || v.p[i] == ':';
        if (!ok)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "invalid demandMetric %s: must be a Prometheus metric name "
                              "[a-zA-Z_:][a-zA-Z0-9_:]*",
                              kgs_quote(q, sizeof q, v.p, v.n));
        memcpy(d->demand_metric, v.p, v.n);
        d->demand_metric[v.n] = '\0';
        if (slot[K_DEMAND_LABELS]) {
            rc = parse_matchers(value_of(slot[K_DEMAND_LABELS]), d, err, errlen);
            if (rc)
                return rc;
        }
        d->queue = QUEUE_PROMETHEUS;
    }
    return 0;
}

static int resolve_demand(const metadata_pair_t *slot[K_COUNT], trigger_config_t *c, char *err,
                          size_t errlen) {
    char q[QBUF];
    demand_config_t *d = &c->demand;
    demand_type_t t = d->type;
    slice_t v;
    int rc, which;
    bool composite = t == DEMAND_COMPOSITE;

    /* Composite targets are checked first: they decide which sources are needed. */
    static const int comp_keys[] = {K_TARGET_QUEUE,  K_TARGET_RUNNING,  K_TARGET_KV,
                                    K_TARGET_GPU,    K_GPU_METRIC_TYPE, K_ACTIVATION_QUEUE,
                                    K_ACTIVATION_GPU};
    if (!composite && any_slot(slot, comp_keys, 7, &which))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s is set, but it applies to metricType demand (one trigger combining "
                          "queue, running, KV-cache and GPU signals); metricType is %s",
                          key_names[which], t ? demand_names[t] : metric_names[c->metric_type]);
    bool need_engine = type_is_engine_only(t);
    if (composite) {
        if (slot[K_TARGET_VALUE] || slot[K_TARGET_GPU_UTIL] || slot[K_TARGET_MEM_UTIL])
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "metricType demand reports replicas needed x 100 against a fixed "
                              "target of 100; set per-signal targets (targetQueuePerReplica, "
                              "targetRunningPerReplica, targetKvCache, targetGpu) instead of %s",
                              slot[K_TARGET_VALUE] ? "targetValue" : "a target shorthand");
        if (slot[K_ACTIVATION])
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "metricType demand is active while work waits or runs; tune it "
                              "with activationQueue and activationGpu, not activationThreshold");
        static const int tkeys[] = {K_TARGET_QUEUE, K_TARGET_RUNNING, K_TARGET_KV, K_TARGET_GPU};
        double *dst[] = {&d->target_queue, &d->target_running, &d->target_kv, &d->target_gpu};
        bool any = false;
        for (int i = 0; i < 4; i++)
            if (slot[tkeys[i]]) {
                rc = parse_target(key_names[tkeys[i]], value_of(slot[tkeys[i]]), dst[i], err,
                                  errlen);
                if (rc)
                    return rc;
                any = true;
            }
        if (!any)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "metricType demand needs at least one per-signal target: "
                              "targetQueuePerReplica, targetRunningPerReplica, targetKvCache or "
                              "targetGpu");
        c->target_value = 100;
        c->activation_threshold = 0;
        need_engine = d->target_running > 0 || d->target_kv > 0 ||
                      (d->target_queue > 0 && !slot[K_REDIS_ADDRESS] && !slot[K_DEMAND_ENDPOINT]);
        if (!need_engine && d->target_queue > 0) {
            /* the queue comes from Redis or Prometheus; an engine may add its waiting count */
            static const int ek[] = {K_ENGINE, K_VLLM_ENDPOINT, K_TRITON_ENDPOINT,
                                     K_ENGINE_ENDPOINT};
            need_engine = any_slot(slot, ek, 4, &which);
        }
        if (slot[K_GPU_METRIC_TYPE]) {
            if (!slot[K_TARGET_GPU])
                return kgs_seterr(err, errlen, KGS_EINVAL,
                                  "gpuMetricType is set without targetGpu: it names the GPU "
                                  "metric targetGpu applies to");
            v = value_of(slot[K_GPU_METRIC_TYPE]);
            int m = 0;
            char list[400];
            list[0] = '\0';
            for (int k = 0, o = 0; k < METRIC_TYPE_COUNT; k++)
                o += snprintf(list + o, sizeof list - (size_t)o, "%s%s", k ? ", " : "",
                              metric_names[k]);
            rc = parse_enum("gpuMetricType", v.p, v.n, metric_names, METRIC_TYPE_COUNT, list, &m,
                            err, errlen);
            if (rc)
                return rc;
            c->metric_type = (metric_type_t)m;
        }
        if (slot[K_ACTIVATION_QUEUE]) {
            if (!d->target_queue)
                return kgs_seterr(err, errlen, KGS_EINVAL,
                                  "activationQueue is set without targetQueuePerReplica");
            rc = parse_nonneg("activationQueue", value_of(slot[K_ACTIVATION_QUEUE]),
                              &d->activation_queue, err, errlen);
            if (rc)
                return rc;
        }
        if (slot[K_ACTIVATION_GPU]) {
            if (!d->target_gpu)
                return kgs_seterr(err, errlen, KGS_EINVAL,
                                  "activationGpu is set without targetGpu");
            rc = parse_nonneg("activationGpu", value_of(slot[K_ACTIVATION_GPU]), &d->activation_gpu,
                              err, errlen);
            if (rc)
                return rc;
        }
    } else if (t != DEMAND_NONE && !c->profile[0] && !slot[K_TARGET_VALUE]) {
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "metricType %s needs targetValue (%s per replica); there is no sensible "
                          "default",
                          demand_names[t],
                          t == DEMAND_VLLM_KV_CACHE_USAGE || t == DEMAND_ENGINE_KV_CACHE
                              ? "KV-cache percent"
                          : t == DEMAND_TRITON_QUEUE_WAIT_MS ? "milliseconds of queue wait"
                          : t == DEMAND_TRITON_REQUEST_RATE  ? "requests per second"
                          : t == DEMAND_ENGINE_RUNNING       ? "requests in flight"
                                                             : "requests waiting");
    }
    if (t != DEMAND_NONE && (slot[K_TARGET_GPU_UTIL] || slot[K_TARGET_MEM_UTIL]))
        return kgs_seterr(
            err, errlen, KGS_EINVAL, "%s sets a GPU metric, but metricType is %s; use targetValue",
            slot[K_TARGET_GPU_UTIL] ? "targetGpuUtilization" : "targetMemoryUtilization",
            demand_names[t]);

    /* GPU selection makes sense only where GPUs are read. */
    if (t != DEMAND_NONE && !(composite && d->target_gpu > 0)) {
        static const int gpu_keys[] = {K_GPU_INDEX,      K_GPU_UUID,    K_MIG_UUID,
                                       K_MIG_PROFILE,    K_AGGREGATION, K_NODE_SELECTOR,
                                       K_POD_AGGREGATION};
        if (any_slot(slot, gpu_keys, 7, &which))
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "%s selects or combines GPUs, but metricType %s reads no GPU "
                              "metric%s",
                              key_names[which], demand_names[t],
                              composite ? " (add targetGpu to combine a GPU signal)" : "");
    }

    rc = resolve_engine(slot, c, need_engine, err, errlen);
    if (rc)
        return rc;
    rc = resolve_queue(slot, c, t == DEMAND_QUEUE_LENGTH || composite, err, errlen);
    if (rc)
        return rc;
    if (t == DEMAND_QUEUE_LENGTH && d->queue == QUEUE_NONE)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "metricType queue_length needs a queue: redisAddress with "
                          "redisListName or redisStream, or demandEndpoint with demandMetric");
    if (composite && d->target_queue > 0 && d->queue == QUEUE_NONE && d->engine == ENGINE_NONE)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "targetQueuePerReplica needs a queue: a Redis or Prometheus queue, or "
                          "an engine's waiting requests");
    if (composite && d->target_running > 0 && !engine_has_running(d->engine))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "targetRunningPerReplica: Triton exports no requests-in-flight gauge");
    if (composite && d->target_kv > 0 && !engine_has_kv(d->engine))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "targetKvCache: %s exports no KV-cache usage; it exists for vllm and "
                          "sglang",
                          engine_names[d->engine]);

    if (slot[K_FORECAST] || slot[K_COLD_START]) {
        if (t == DEMAND_NONE)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "%s is set, but metricType %s is a GPU metric; forecast applies to "
                              "engine, queue and demand metric types",
                              slot[K_FORECAST] ? "forecast" : "coldStartSeconds",
                              metric_names[c->metric_type]);
        if (slot[K_FORECAST]) {
            static const char *const kinds[] = {"none", "trend"};
            int k = 0;
            v = value_of(slot[K_FORECAST]);
            rc = parse_enum("forecast", v.p, v.n, kinds, 2, "none or trend", &k, err, errlen);
            if (rc)
                return rc;
            d->forecast_trend = k == 1;
        }
        if (slot[K_COLD_START]) {
            v = value_of(slot[K_COLD_START]);
            long long cs;
            if (!parse_integer(v.p, v.n, &cs) || cs < 1 || cs > 3600)
                return kgs_seterr(err, errlen, KGS_EINVAL,
                                  "invalid coldStartSeconds %s: must be whole seconds from 1 to "
                                  "3600 (how long a new replica takes to serve: node, image, "
                                  "weights)",
                                  kgs_quote(q, sizeof q, v.p, v.n));
            d->cold_start_s = (unsigned)cs;
        }
        if (d->forecast_trend && !d->cold_start_s)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "forecast: trend needs coldStartSeconds (how far ahead to look: "
                              "the time a new replica needs to serve)");
        if (!d->forecast_trend && d->cold_start_s)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "coldStartSeconds is set, but forecast is none: it is how far "
                              "ahead forecast: trend looks; add forecast: trend or drop it");
    }

    d->interval_ns = 1000000000ull;
    d->timeout_ns = 2000000000ull;
    static const int src_keys[] = {K_SOURCE_INTERVAL, K_SOURCE_TIMEOUT};
    if (t == DEMAND_NONE || (composite && d->engine == ENGINE_NONE && d->queue == QUEUE_NONE)) {
        if (any_slot(slot, src_keys, 2, &which))
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "%s is set, but the trigger reads no engine or queue source",
                              key_names[which]);
        if (t == DEMAND_NONE)
            d->interval_ns = d->timeout_ns = 0;
        return 0;
    }
    if (slot[K_SOURCE_INTERVAL]) {
        rc = parse_duration_key("sourceInterval", value_of(slot[K_SOURCE_INTERVAL]), 100000000ull,
                                60000000000ull, &d->interval_ns, err, errlen);
        if (rc)
            return rc;
    }
    if (slot[K_SOURCE_TIMEOUT]) {
        rc = parse_duration_key("sourceTimeout", value_of(slot[K_SOURCE_TIMEOUT]), 100000000ull,
                                30000000000ull, &d->timeout_ns, err, errlen);
        if (rc)
            return rc;
    }
    (void)q;
    return 0;
}

static int resolve(const metadata_pair_t *slot[K_COUNT], trigger_config_t *c, char *err,
                   size_t errlen) {
    char q[QBUF];
    char list[512];
    slice_t v;
    int rc;

    /* 1. profile */
    const profile_t *prof = NULL;
    if (slot[K_PROFILE]) {
        v = value_of(slot[K_PROFILE]);
        prof = profile_find(v.p, v.n);
        list_profiles(list, sizeof list);
        if (!prof)
            return kgs_seterr(err, errlen, KGS_EINVAL, "unknown profile %s: must be one of %s",
                              kgs_quote(q, sizeof q, v.p, v.n), list);
        if (prof->engine_metric)
            for (int d = 1; d < DEMAND_TYPE_COUNT; d++)
                if (strcmp(prof->engine_metric, demand_names[d]) == 0)
                    c->demand.type = (demand_type_t)d;
        snprintf(c->profile, sizeof c->profile, "%s", prof->name);
        snprintf(c->metric_name, sizeof c->metric_name, "%s", prof->metric_name);
        c->metric_type = prof->metric_type;
        c->target_value = prof->target;
        c->activation_threshold = prof->activation;
    }

    /* 2. metricName */
    if (slot[K_METRIC_NAME]) {
        v = value_of(slot[K_METRIC_NAME]);
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
        v = value_of(slot[K_METRIC_TYPE]);
        int found = -1;
        for (int t = 0; t < METRIC_TYPE_COUNT; t++)
            if (metadata_slice_eq(v.p, v.n, metric_names[t]))
                found = t;
        int dfound = -1;
        for (int d = 1; d < DEMAND_TYPE_COUNT; d++)
            if (metadata_slice_eq(v.p, v.n, demand_names[d]))
                dfound = d;
        if (found < 0 && dfound < 0) {
            list_metric_types(list, sizeof list);
            return kgs_seterr(err, errlen, KGS_EINVAL, "invalid metricType %s: must be one of %s",
                              kgs_quote(q, sizeof q, v.p, v.n), list);
        }
        if (dfound >= 0) {
            c->demand.type = (demand_type_t)dfound;
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
    const char *sh_key = gs ? key_names[K_TARGET_GPU_UTIL] : key_names[K_TARGET_MEM_UTIL];
    if (sh && slot[K_TARGET_VALUE])
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s and targetValue are both set: use one (%s is shorthand for a "
                          "metricType plus targetValue)",
                          sh_key, sh_key);
    if (slot[K_TARGET_VALUE]) {
        rc = parse_target("targetValue", value_of(slot[K_TARGET_VALUE]), &c->target_value, err,
                          errlen);
        if (rc)
            return rc;
    }
    if (sh) {
        metric_type_t want = gs ? METRIC_GPU_UTILIZATION : METRIC_MEMORY_USED_PERCENT;
        if (slot[K_METRIC_TYPE] && c->metric_type != want)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "%s implies metricType %s, but metricType is \"%s\": drop one, or "
                              "use targetValue with metricType",
                              sh_key, metric_names[want], metric_names[c->metric_type]);
        if (!slot[K_METRIC_TYPE] && prof && prof->metric_type != want)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "%s implies metricType %s, but profile \"%s\" uses %s: use "
                              "targetValue to change the profile's target",
                              sh_key, metric_names[want], prof->name,
                              metric_names[prof->metric_type]);
        rc = parse_target(sh_key, value_of(sh), &c->target_value, err, errlen);
        if (rc)
            return rc;
        c->metric_type = want;
    }

    /* 5. activationThreshold */
    if (slot[K_ACTIVATION]) {
        v = value_of(slot[K_ACTIVATION]);
        double d;
        if (!parse_number(v.p, v.n, &d) || d < 0)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "invalid activationThreshold %s: must be a finite decimal number >= "
                              "0 (the trigger is active while the value is above it)",
                              kgs_quote(q, sizeof q, v.p, v.n));
        c->activation_threshold = d == 0 ? 0 : d; /* no -0 */
    }

    /* 6. gpuIndex */
    if (slot[K_GPU_INDEX]) {
        v = value_of(slot[K_GPU_INDEX]);
        long long i;
        if (!parse_integer(v.p, v.n, &i) || i < -1 || i > 65535)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "invalid gpuIndex %s: must be -1 (all GPUs) or an NVML index from 0 "
                              "to 65535",
                              kgs_quote(q, sizeof q, v.p, v.n));
        c->gpu_index = (int)i;
    }

    /* 7. aggregation */
    if (slot[K_AGGREGATION]) {
        v = value_of(slot[K_AGGREGATION]);
        int found = -1;
        for (size_t a = 0; a < AGG_COUNT; a++)
            if (metadata_slice_eq(v.p, v.n, aggregation_names[a]))
                found = (int)a;
        if (found < 0)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "invalid aggregation %s: must be sum, max, min, avg, p95 or p99",
                              kgs_quote(q, sizeof q, v.p, v.n));
        c->aggregation = (aggregation_t)found;
    }

    /* 8. pollIntervalSeconds */
    if (slot[K_POLL]) {
        v = value_of(slot[K_POLL]);
        long long i;
        if (!parse_integer(v.p, v.n, &i) || i < 1 || i > POLL_MAX)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "invalid pollIntervalSeconds %s: must be a whole number of seconds "
                              "from 1 to %d",
                              kgs_quote(q, sizeof q, v.p, v.n), POLL_MAX);
        c->poll_interval_s = (unsigned)i;
    }

    /* 9. selection lists */
    if (slot[K_GPU_UUID]) {
        v = value_of(slot[K_GPU_UUID]);
        rc = parse_list(LIST_GPU_UUID, "gpuUUID", v.p, v.n, &c->gpu_uuids[0][0],
                        sizeof c->gpu_uuids[0], &c->gpu_uuid_count, err, errlen);
        if (rc)
            return rc;
    }
    if (slot[K_MIG_UUID]) {
        v = value_of(slot[K_MIG_UUID]);
        rc = parse_list(LIST_MIG_UUID, "migUUID", v.p, v.n, &c->mig_uuids[0][0],
                        sizeof c->mig_uuids[0], &c->mig_uuid_count, err, errlen);
        if (rc)
            return rc;
    }
    if (slot[K_MIG_PROFILE]) {
        v = value_of(slot[K_MIG_PROFILE]);
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
    rc = resolve_scope(slot, c, err, errlen);
    if (rc)
        return rc;
    return resolve_demand(slot, c, err, errlen);
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
        int id = key_lookup(k.p, k.n);
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
        const char *s = suggest_key(k.p, k.n);
        if (s)
            rc =
                kgs_seterr(err, errlen, KGS_EINVAL, "unknown metadata key %s: did you mean \"%s\"?",
                           kgs_quote(q, sizeof q, k.p, k.n), s);
        else
            rc = kgs_seterr(err, errlen, KGS_EINVAL,
                            "unknown metadata key %s: valid keys are profile, metricName, "
                            "metricType, targetValue, targetGpuUtilization, "
                            "targetMemoryUtilization, activationThreshold, gpuIndex, aggregation, "
                            "pollIntervalSeconds, gpuUUID, migUUID, migProfile, podSelector, "
                            "namespace, nodeSelector, podAggregation, partialData, the engine "
                            "keys (engine, vllmEndpoint, tritonEndpoint, engineEndpoint, "
                            "enginePort, enginePath, engineScheme, model, windowSeconds), the "
                            "queue keys (redisAddress, redisListName, redisStream, "
                            "redisConsumerGroup, redisStreamMeasure, redisDatabaseIndex, "
                            "redisTLS, redisUsernameFromEnv, redisPasswordFromEnv, "
                            "demandEndpoint, demandMetric, demandLabels), the demand keys "
                            "(targetQueuePerReplica, targetRunningPerReplica, targetKvCache, "
                            "targetGpu, gpuMetricType, activationQueue, activationGpu, "
                            "sourceInterval, sourceTimeout), forecast, coldStartSeconds and "
                            "KEDA's scalerAddress, "
                            "enableTLS, unsafeSsl",
                            kgs_quote(q, sizeof q, k.p, k.n));
    } else if (dup) {
        slice_t k = key_of(dup);
        rc = kgs_seterr(err, errlen, KGS_EINVAL, "duplicate metadata key %s: give it once",
                        kgs_quote(q, sizeof q, k.p, k.n));
    } else {
        rc = resolve(slot, out, err, errlen);
    }
    if (rc != 0)
        set_defaults(out);
    return rc;
}
