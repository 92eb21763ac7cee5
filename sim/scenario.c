/*
 * scenario.c - strict parser and pure resolver for nvml-sim scenarios.
 *
 * DESIGN
 * The parser walks the jansson tree once, validating as it goes, and copies
 * everything into fixed C structs (plus malloc'd timelines), so the stand-in
 * never touches JSON on its hot path and a parsed scenario can be shared
 * read-only. Every failure builds its message from the JSON path kept in
 * parse_ctx_t, which is the whole point of strictness: the message must say
 * where the typo is.
 *
 * Resolution is piecewise-constant: a timeline is a list of steps in time
 * order, each overlaying values on what came before; with repeat_after_s
 * the clock is folded into one cycle, so the state at the start of every
 * cycle is the base `values` again. Integrals (energy, NVLink counters)
 * sum whole cycles plus the partial one, so they keep increasing.
 */
#include "scenario.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"

_Static_assert(SCENARIO_CALL_COUNT <= 64, "scenario_t.missing is a 64-bit mask");
_Static_assert(SCENARIO_VALUE_COUNT <= 32, "scenario_values_t.present is a 32-bit mask");

static const char *const call_names[] = {
#define CALL_NAME(name, params) #name,
    NVML_SYMBOLS(CALL_NAME)
#undef CALL_NAME
};

/* The parameter lists as text: a call is per-device when its first
 * parameter is an input device handle. Derived from the X-macro so a symbol
 * added to nvml_abi.h is classified without touching this file. */
static const char *const call_params[] = {
#define CALL_PARAMS(name, params) #params,
    NVML_SYMBOLS(CALL_PARAMS)
#undef CALL_PARAMS
};

static const struct {
    const char *key;
    bool integer;
    double max;
    bool mig;
} value_defs[] = {
#define VALUE_DEF(id, key, integer, max, mig) {key, integer, max, mig},
    SCENARIO_VALUES(VALUE_DEF)
#undef VALUE_DEF
};

int scenario_call_index(const char *name) {
    for (int i = 0; i < SCENARIO_CALL_COUNT; i++) {
        if (strcmp(call_names[i], name) == 0)
            return i;
    }
    return -1;
}

const char *scenario_call_name(int call) {
    return (call >= 0 && call < SCENARIO_CALL_COUNT) ? call_names[call] : "?";
}

size_t scenario_call_base_len(const char *name) {
    size_t n = strlen(name);
    /* "_v" and one or more digits: nvmlDeviceGetMemoryInfo_v2, ..._v3 */
    size_t d = n;
    while (d > 0 && name[d - 1] >= '0' && name[d - 1] <= '9')
        d--;
    if (d < n && d >= 3 && name[d - 1] == 'v' && name[d - 2] == '_')
        return d - 2;
    /* A capital V after a lower-case letter: nvmlDeviceGetTemperatureV */
    if (n >= 2 && name[n - 1] == 'V' && name[n - 2] >= 'a' && name[n - 2] <= 'z')
        return n - 1;
    return n;
}

int scenario_call_base(int call) {
    if (call < 0 || call >= SCENARIO_CALL_COUNT)
        return -1;
    const char *name = call_names[call];
    size_t len = scenario_call_base_len(name);
    if (len == strlen(name))
        return -1;
    for (int i = 0; i < SCENARIO_CALL_COUNT; i++) {
        if (strncmp(call_names[i], name, len) == 0 && call_names[i][len] == '\0')
            return i;
    }
    return -1;
}

static bool call_is_handle_lookup(int call) {
    return call == SCENARIO_CALL_nvmlDeviceGetHandleByIndex_v2 ||
           call == SCENARIO_CALL_nvmlDeviceGetHandleByIndex;
}

bool scenario_call_is_per_device(int call) {
    if (call < 0 || call >= SCENARIO_CALL_COUNT)
        return false;
    /* GpmMetricsGet takes samples, and each sample names its device. */
    return call_is_handle_lookup(call) || call == SCENARIO_CALL_nvmlGpmMetricsGet ||
           strncmp(call_params[call], "(nvmlDevice_t device", 20) == 0;
}

int scenario_error_code(const char *name) {
#define ERROR_MATCH(code, ename)                                                                   \
    if (strcmp(name, #ename) == 0)                                                                 \
        return code;
    NVML_RETURN_CODES(ERROR_MATCH)
#undef ERROR_MATCH
    return -1;
}

const char *scenario_error_name(int code) {
    switch (code) {
#define ERROR_NAME(c, ename)                                                                       \
    case c:                                                                                        \
        return #ename;
        NVML_RETURN_CODES(ERROR_NAME)
#undef ERROR_NAME
    default:
        return "?";
    }
}

/* ---- parse context: the JSON path and the error buffer ---- */

typedef struct {
    char path[256];
    size_t len;
    char *err;
    size_t errlen;
} parse_ctx_t;

static size_t path_push_key(parse_ctx_t *p, const char *key) {
    size_t old = p->len;
    int n = snprintf(p->path + p->len, sizeof p->path - p->len, "%s%s", p->len ? "." : "", key);
    if (n > 0)
        p->len = strnlen(p->path, sizeof p->path - 1);
    return old;
}

static size_t path_push_index(parse_ctx_t *p, size_t i) {
    size_t old = p->len;
    int n = snprintf(p->path + p->len, sizeof p->path - p->len, "[%zu]", i);
    if (n > 0)
        p->len = strnlen(p->path, sizeof p->path - 1);
    return old;
}

static void path_pop(parse_ctx_t *p, size_t old) {
    p->len = old;
    p->path[old] = '\0';
}

__attribute__((format(printf, 2, 3))) static int fail(parse_ctx_t *p, const char *fmt, ...) {
    if (p->err && p->errlen) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        snprintf(p->err, p->errlen, "%s: %s", p->len ? p->path : "(top level)", msg);
    }
    return KGS_EINVAL;
}

static const char *json_kind(const json_t *j) {
    switch (json_typeof(j)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    default:
        return "null";
    }
}

/* Edit distance, for "did you mean" suggestions; strings are short keys. */
static size_t edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return SIZE_MAX;
    size_t row[64];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* Fails with "unknown <what> "<name>"" plus the closest candidate when it is
 * close, else the list of candidates (when short enough to be useful). */
static int fail_unknown(parse_ctx_t *p, const char *what, const char *name,
                        const char *const *cands, size_t n) {
    const char *best = NULL;
    size_t best_d = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        size_t d = edit_distance(name, cands[i]);
        if (d < best_d) {
            best_d = d;
            best = cands[i];
        }
    }
    size_t limit = strlen(name) / 2 > 2 ? strlen(name) / 2 : 2;
    if (best && best_d <= limit)
        return fail(p, "unknown %s \"%s\"; did you mean \"%s\"?", what, name, best);
    if (n <= 12) {
        char list[400] = "";
        for (size_t i = 0; i < n; i++) {
            size_t l = strlen(list);
            snprintf(list + l, sizeof list - l, "%s%s", i ? ", " : "", cands[i]);
        }
        return fail(p, "unknown %s \"%s\" (expected one of: %s)", what, name, list);
    }
    return fail(p, "unknown %s \"%s\"", what, name);
}

/* Rejects any key of `obj` not in `allowed`; the path names the bad key. */
static int check_keys(parse_ctx_t *p, json_t *obj, const char *const *allowed, size_t n) {
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        bool ok = false;
        for (size_t i = 0; i < n && !ok; i++)
            ok = strcmp(key, allowed[i]) == 0;
        if (!ok) {
            path_push_key(p, key);
            return fail_unknown(p, "key", key, allowed, n);
        }
    }
    return 0;
}

static int expect(parse_ctx_t *p, json_t *j, json_type type, const char *kind) {
    if (json_typeof(j) != type)
        return fail(p, "must be %s, not %s", kind, json_kind(j));
    return 0;
}

/* A number in [min, max] (> min when min_exclusive); integer-only rejects
 * reals. The path must already name the value. */
static int number_in(parse_ctx_t *p, json_t *j, bool integer, double min, bool min_exclusive,
                     double max, double *out) {
    double d = 0;
    if (json_is_integer(j)) {
        d = (double)json_integer_value(j);
    } else if (json_is_real(j) && !integer) {
        d = json_real_value(j);
    } else {
        return fail(p, "must be %s, not %s", integer ? "an integer" : "a number", json_kind(j));
    }
    if (!isfinite(d) || d < min || (min_exclusive && d == min))
        return fail(p, "%g is out of range: must be %s %g", d, min_exclusive ? ">" : ">=", min);
    if (d > max)
        return fail(p, "%g is out of range: must be <= %g", d, max);
    *out = d;
    return 0;
}

/* Looks up optional `key`; returns NULL when absent, with the path pushed
 * otherwise (the caller pops to *old). */
static json_t *member(parse_ctx_t *p, json_t *obj, const char *key, size_t *old) {
    json_t *j = json_object_get(obj, key);
    if (j)
        *old = path_push_key(p, key);
    return j;
}

static int string_into(parse_ctx_t *p, json_t *j, char *buf, size_t cap) {
    int rc = expect(p, j, JSON_STRING, "a string");
    if (rc)
        return rc;
    size_t l = json_string_length(j);
    if (l == 0)
        return fail(p, "must not be empty");
    if (l >= cap)
        return fail(p, "is %zu bytes long; the NVML buffer holds at most %zu", l, cap - 1);
    memcpy(buf, json_string_value(j), l + 1);
    return 0;
}

static int error_name_in(parse_ctx_t *p, json_t *j, bool allow_success, int *out) {
    int rc = expect(p, j, JSON_STRING, "an error name such as \"GPU_IS_LOST\"");
    if (rc)
        return rc;
    const char *name = json_string_value(j);
    int code = scenario_error_code(name);
    if (code < 0) {
        static const char *const names[] = {
#define ERR_STR(c, ename) #ename,
            NVML_RETURN_CODES(ERR_STR)
#undef ERR_STR
        };
        if (strncmp(name, "NVML_ERROR_", 11) == 0)
            return fail(p, "write \"%s\" without the NVML_ERROR_ prefix", name + 11);
        return fail_unknown(p, "error name", name, names, sizeof names / sizeof names[0]);
    }
    if (code == NVML_SUCCESS && !allow_success)
        return fail(p, "SUCCESS is not an error");
    *out = code;
    return 0;
}

/* A call name from NVML_SYMBOLS; per_device also requires a per-device call. */
static int call_name_in(parse_ctx_t *p, const char *name, bool per_device, int *out) {
    int call = scenario_call_index(name);
    if (call < 0)
        return fail_unknown(p, "NVML call", name, call_names, SCENARIO_CALL_COUNT);
    if (per_device && !scenario_call_is_per_device(call))
        return fail(p, "%s is not a per-device call", name);
    *out = call;
    return 0;
}

/* ---- values and timelines ---- */

static int values_parse(parse_ctx_t *p, json_t *obj, bool mig, uint32_t *set, uint32_t *clear,
                        double *v) {
    int rc = expect(p, obj, JSON_OBJECT, "an object of values");
    if (rc)
        return rc;
    const char *key;
    json_t *j;
    json_object_foreach(obj, key, j) {
        size_t old = path_push_key(p, key);
        int k = -1;
        for (int i = 0; i < SCENARIO_VALUE_COUNT && k < 0; i++) {
            if (strcmp(key, value_defs[i].key) == 0)
                k = i;
        }
        if (k < 0) {
            const char *keys[SCENARIO_VALUE_COUNT];
            for (int i = 0; i < SCENARIO_VALUE_COUNT; i++)
                keys[i] = value_defs[i].key;
            return fail_unknown(p, "value", key, keys, SCENARIO_VALUE_COUNT);
        }
        if (mig && !value_defs[k].mig)
            return fail(p, "is a whole-GPU value; a MIG instance takes only memory_used_bytes, "
                           "memory_reserved_bytes, sm_active, sm_occupancy and dram_bw_util");
        if (json_is_null(j)) {
            if (clear)
                *clear |= 1u << k;
        } else {
            rc = number_in(p, j, value_defs[k].integer, 0.0, false, value_defs[k].max, &v[k]);
            if (rc)
                return rc;
            *set |= 1u << k;
            if (clear)
                *clear &= ~(1u << k);
        }
        path_pop(p, old);
    }
    return 0;
}

static void step_apply(scenario_values_t *cur, const scenario_step_t *s) {
    cur->present &= ~s->clear;
    for (int k = 0; k < SCENARIO_VALUE_COUNT; k++) {
        if (s->set & (1u << k))
            cur->v[k] = s->v[k];
    }
    cur->present |= s->set;
}

static int at_s_parse(parse_ctx_t *p, json_t *step, double prev, double repeat, double *out) {
    size_t old;
    json_t *j = member(p, step, "at_s", &old);
    if (!j)
        return fail(p, "missing \"at_s\"");
    int rc = number_in(p, j, false, 0.0, false, 1e9, out);
    if (rc)
        return rc;
    if (*out < prev)
        return fail(p, "%g is before the previous step's %g; steps must be in time order", *out,
                    prev);
    if (repeat > 0 && *out >= repeat)
        return fail(p, "%g is not before repeat_after_s (%g), so the step would never apply", *out,
                    repeat);
    path_pop(p, old);
    return 0;
}

static int timeline_parse(parse_ctx_t *p, json_t *arr, bool mig, double repeat,
                          scenario_step_t **out, size_t *out_len) {
    int rc = expect(p, arr, JSON_ARRAY, "an array of steps");
    if (rc)
        return rc;
    size_t n = json_array_size(arr);
    if (n > SCENARIO_MAX_TIMELINE_STEPS)
        return fail(p, "has %zu steps; at most %d are allowed", n, SCENARIO_MAX_TIMELINE_STEPS);
    if (n == 0)
        return 0;
    scenario_step_t *steps = calloc(n, sizeof *steps);
    if (!steps)
        return KGS_ENOMEM;
    *out = steps;
    *out_len = n;
    static const char *const keys[] = {"at_s", "values"};
    double prev = 0.0;
    for (size_t i = 0; i < n; i++) {
        size_t old = path_push_index(p, i);
        json_t *step = json_array_get(arr, i);
        if ((rc = expect(p, step, JSON_OBJECT, "an object {\"at_s\": ..., \"values\": {...}}")) ||
            (rc = check_keys(p, step, keys, 2)) ||
            (rc = at_s_parse(p, step, prev, repeat, &steps[i].at_s)))
            return rc;
        prev = steps[i].at_s;
        size_t vold;
        json_t *vals = member(p, step, "values", &vold);
        if (!vals)
            return fail(p, "missing \"values\"");
        rc = values_parse(p, vals, mig, &steps[i].set, &steps[i].clear, steps[i].v);
        if (rc)
            return rc;
        path_pop(p, vold);
        path_pop(p, old);
    }
    return 0;
}

/* Memory used + reserved must fit in the total in every state the timeline
 * passes through; otherwise "free" would be negative. */
static int memory_check(parse_ctx_t *p, bool has_total, double total, const scenario_values_t *base,
                        const scenario_step_t *steps, size_t n) {
    if (!has_total)
        return 0;
    scenario_values_t cur = *base;
    for (size_t i = 0; i <= n; i++) {
        if (i > 0)
            step_apply(&cur, &steps[i - 1]);
        double used = (cur.present & (1u << SCENARIO_V_MEMORY_USED_BYTES))
                          ? cur.v[SCENARIO_V_MEMORY_USED_BYTES]
                          : 0.0;
        double reserved = (cur.present & (1u << SCENARIO_V_MEMORY_RESERVED_BYTES))
                              ? cur.v[SCENARIO_V_MEMORY_RESERVED_BYTES]
                              : 0.0;
        if (used + reserved > total) {
            size_t old = i == 0 ? path_push_key(p, "values") : path_push_key(p, "timeline");
            if (i > 0)
                path_push_index(p, i - 1);
            int rc = fail(p,
                          "memory_used_bytes + memory_reserved_bytes (%.0f) exceeds "
                          "memory_total_bytes (%.0f)",
                          used + reserved, total);
            path_pop(p, old);
            return rc;
        }
    }
    return 0;
}

/* ---- devices ---- */

static int pci_parse(parse_ctx_t *p, json_t *j, scenario_device_t *d) {
    int rc = expect(p, j, JSON_STRING, "a string such as \"00000000:17:00.0\"");
    if (rc)
        return rc;
    const char *s = json_string_value(j);
    unsigned dom, bus, dev, fn;
    int used = -1;
    if (sscanf(s, "%8x:%2x:%2x.%1x%n", &dom, &bus, &dev, &fn, &used) != 4 || used < 0 ||
        s[used] != '\0' || strchr(s, ' ') || strchr(s, '+') || strchr(s, '-') ||
        strspn(s, "0123456789abcdefABCDEF:.") != strlen(s))
        return fail(p, "\"%s\" is not a PCI bus id like \"00000000:17:00.0\"", s);
    if (dev > 0x1f || fn > 7)
        return fail(p, "\"%s\": device must be <= 1F and function <= 7", s);
    d->pci_domain = dom;
    d->pci_bus = bus;
    d->pci_device = dev;
    d->pci_function = fn;
    snprintf(d->pci_bus_id, sizeof d->pci_bus_id, "%08X:%02X:%02X.%X", dom, bus, dev, fn);
    return 0;
}

/* "Ng.Mgb" or "Cc.Ng.Mgb", with an optional +me, -me, +gfx or +me.all suffix. */
static int profile_parse(parse_ctx_t *p, json_t *j, scenario_mig_t *m) {
    int rc = string_into(p, j, m->profile, sizeof m->profile);
    if (rc)
        return rc;
    const char *s = m->profile;
    unsigned c = 0, g = 0, gb = 0;
    int used = -1;
    if (!(sscanf(s, "%3uc.%3ug.%6ugb%n", &c, &g, &gb, &used) == 3 && used > 0)) {
        used = -1;
        if (!(sscanf(s, "%3ug.%6ugb%n", &g, &gb, &used) == 2 && used > 0))
            used = -1;
        c = g;
    }
    const char *rest = used > 0 ? s + used : NULL;
    if (!rest || !isdigit((unsigned char)s[0]) ||
        (*rest && strcmp(rest, "+me") && strcmp(rest, "-me") && strcmp(rest, "+gfx") &&
         strcmp(rest, "+me.all")))
        return fail(p, "\"%s\" is not a MIG profile like \"3g.40gb\" or \"1c.3g.40gb\"", s);
    if (!(g == 1 || g == 2 || g == 3 || g == 4 || g == 6 || g == 7 || g == 8) || c == 0 || c > g ||
        gb == 0)
        return fail(p,
                    "\"%s\": slice counts must be C <= G with G in 1,2,3,4,6,7,8 and a "
                    "memory size > 0",
                    s);
    m->gpu_instance_slices = g;
    m->compute_instance_slices = c;
    return 0;
}

#define POP_OR_RETURN(expr)                                                                        \
    do {                                                                                           \
        int rc_ = (expr);                                                                          \
        if (rc_)                                                                                   \
            return rc_;                                                                            \
        path_pop(p, old);                                                                          \
    } while (0)

static int mig_instance_parse(parse_ctx_t *p, json_t *obj, double repeat, size_t index,
                              scenario_mig_t *m) {
    static const char *const keys[] = {
        "uuid",   "profile", "gpu_instance_id", "compute_instance_id", "memory_total_bytes",
        "values", "timeline"};
    int rc = expect(p, obj, JSON_OBJECT, "an object");
    if (rc || (rc = check_keys(p, obj, keys, sizeof keys / sizeof keys[0])))
        return rc;
    size_t old;
    json_t *j;
    snprintf(m->uuid, sizeof m->uuid, "MIG-00000000-0000-0000-0000-%012zx", index + 1);
    if ((j = member(p, obj, "uuid", &old))) {
        POP_OR_RETURN(string_into(p, j, m->uuid, sizeof m->uuid));
        if (strncmp(m->uuid, "MIG-", 4) != 0) {
            path_push_key(p, "uuid");
            return fail(p, "\"%s\" must start with \"MIG-\"", m->uuid);
        }
    }
    if (!(j = member(p, obj, "profile", &old)))
        return fail(p, "missing \"profile\" (e.g. \"3g.40gb\")");
    POP_OR_RETURN(profile_parse(p, j, m));
    double d = 0;
    m->gpu_instance_id = (unsigned)index + 1;
    if ((j = member(p, obj, "gpu_instance_id", &old))) {
        POP_OR_RETURN(number_in(p, j, true, 0, false, 4294967294.0, &d));
        m->gpu_instance_id = (unsigned)d;
    }
    if ((j = member(p, obj, "compute_instance_id", &old))) {
        POP_OR_RETURN(number_in(p, j, true, 0, false, 4294967294.0, &d));
        m->compute_instance_id = (unsigned)d;
    }
    if ((j = member(p, obj, "memory_total_bytes", &old))) {
        POP_OR_RETURN(number_in(p, j, true, 1, false, 9007199254740992.0, &m->memory_total_bytes));
        m->has_memory_total = true;
    }
    if ((j = member(p, obj, "values", &old)))
        POP_OR_RETURN(values_parse(p, j, true, &m->values.present, NULL, m->values.v));
    if ((j = member(p, obj, "timeline", &old)))
        POP_OR_RETURN(timeline_parse(p, j, true, repeat, &m->timeline, &m->timeline_len));
    return memory_check(p, m->has_memory_total, m->memory_total_bytes, &m->values, m->timeline,
                        m->timeline_len);
}

static int mig_parse(parse_ctx_t *p, json_t *obj, double repeat, scenario_device_t *d) {
    static const char *const keys[] = {"enabled", "instances"};
    int rc = expect(p, obj, JSON_OBJECT, "an object {\"enabled\": true, \"instances\": [...]}");
    if (rc || (rc = check_keys(p, obj, keys, 2)))
        return rc;
    d->has_mig = true;
    size_t old;
    json_t *j;
    if ((j = member(p, obj, "enabled", &old))) {
        if (!json_is_boolean(j))
            return fail(p, "must be a boolean, not %s", json_kind(j));
        d->mig_enabled = json_is_true(j);
        path_pop(p, old);
    }
    if (!(j = member(p, obj, "instances", &old)))
        return 0;
    if ((rc = expect(p, j, JSON_ARRAY, "an array of MIG instances")))
        return rc;
    size_t n = json_array_size(j);
    if (n > 0 && !d->mig_enabled)
        return fail(p, "MIG instances need \"enabled\": true");
    if (n > SCENARIO_MAX_MIG_INSTANCES)
        return fail(p, "has %zu instances; a GPU has at most %d", n, SCENARIO_MAX_MIG_INSTANCES);
    for (size_t i = 0; i < n; i++) {
        size_t iold = path_push_index(p, i);
        scenario_mig_t *m = &d->mig[i];
        d->mig_count = i + 1; /* so scenario_free releases a half-parsed one */
        if ((rc = mig_instance_parse(p, json_array_get(j, i), repeat, i, m)))
            return rc;
        for (size_t k = 0; k < i; k++) {
            if (d->mig[k].gpu_instance_id == m->gpu_instance_id &&
                d->mig[k].compute_instance_id == m->compute_instance_id)
                return fail(p,
                            "gpu_instance_id %u / compute_instance_id %u is already used by "
                            "instances[%zu]",
                            m->gpu_instance_id, m->compute_instance_id, k);
        }
        path_pop(p, iold);
    }
    path_pop(p, old);
    return 0;
}

/* A call named in `errors` or `latency_ms` also applies to its versioned
 * variants (scenario_call_base) that the same map does not name: a scenario
 * that names nvmlDeviceGetTemperature means the temperature, whichever
 * variant the caller tries first. */
static void inherit_from_base(const uint64_t named, int *ierr, double *lat) {
    for (int c = 0; c < SCENARIO_CALL_COUNT; c++) {
        int b = scenario_call_base(c);
        if (b < 0 || (named & (UINT64_C(1) << c)) || !(named & (UINT64_C(1) << b)))
            continue;
        if (ierr)
            ierr[c] = ierr[b];
        if (lat)
            lat[c] = lat[b];
    }
}

static int call_map_errors_parse(parse_ctx_t *p, json_t *obj, scenario_device_t *d) {
    int rc = expect(p, obj, JSON_OBJECT, "an object {\"nvmlDeviceGetX\": \"ERROR_NAME\"}");
    if (rc)
        return rc;
    const char *key;
    json_t *j;
    uint64_t named = 0;
    json_object_foreach(obj, key, j) {
        size_t old = path_push_key(p, key);
        int call = 0, code = 0;
        /* SUCCESS only where it stops a variant inheriting its base's error. */
        if ((rc = call_name_in(p, key, true, &call)) ||
            (rc = error_name_in(p, j, scenario_call_base(call) >= 0, &code)))
            return rc;
        d->error[call] = code;
        named |= UINT64_C(1) << call;
        path_pop(p, old);
    }
    json_object_foreach(obj, key, j) {
        int call = scenario_call_index(key), base = scenario_call_base(call);
        if (d->error[call] == NVML_SUCCESS && !(named & (UINT64_C(1) << base))) {
            path_push_key(p, key);
            return fail(p,
                        "SUCCESS is not an error; it is allowed only to keep %s from "
                        "inheriting the error of %s, which is not named here",
                        key, scenario_call_name(base));
        }
    }
    inherit_from_base(named, d->error, NULL);
    return 0;
}

static int latency_parse(parse_ctx_t *p, json_t *obj, scenario_device_t *d) {
    int rc = expect(p, obj, JSON_OBJECT, "an object {\"nvmlDeviceGetX\": milliseconds}");
    if (rc)
        return rc;
    const char *key;
    json_t *j;
    uint64_t named = 0;
    json_object_foreach(obj, key, j) {
        size_t old = path_push_key(p, key);
        int call = 0;
        if ((rc = call_name_in(p, key, true, &call)) ||
            (rc = number_in(p, j, false, 0, false, 600000.0, &d->latency_ms[call])))
            return rc;
        named |= UINT64_C(1) << call;
        path_pop(p, old);
    }
    inherit_from_base(named, NULL, d->latency_ms);
    return 0;
}

static int error_timeline_parse(parse_ctx_t *p, json_t *arr, double repeat, scenario_device_t *d) {
    int rc = expect(p, arr, JSON_ARRAY, "an array of steps");
    if (rc)
        return rc;
    size_t n = json_array_size(arr);
    if (n > SCENARIO_MAX_TIMELINE_STEPS)
        return fail(p, "has %zu steps; at most %d are allowed", n, SCENARIO_MAX_TIMELINE_STEPS);
    if (n == 0)
        return 0;
    d->error_timeline = calloc(n, sizeof *d->error_timeline);
    if (!d->error_timeline)
        return KGS_ENOMEM;
    d->error_timeline_len = n;
    static const char *const keys[] = {"at_s", "call", "error"};
    double prev = 0.0;
    uint64_t named = 0;
    for (size_t i = 0; i < n; i++) {
        size_t iold = path_push_index(p, i);
        json_t *step = json_array_get(arr, i);
        scenario_error_step_t *s = &d->error_timeline[i];
        if ((rc = expect(p, step, JSON_OBJECT, "an object {\"at_s\", \"call\", \"error\"}")) ||
            (rc = check_keys(p, step, keys, 3)) ||
            (rc = at_s_parse(p, step, prev, repeat, &s->at_s)))
            return rc;
        prev = s->at_s;
        size_t old;
        json_t *j;
        if (!(j = member(p, step, "call", &old)))
            return fail(p, "missing \"call\" (a function name or \"*\")");
        if ((rc = expect(p, j, JSON_STRING, "a function name or \"*\"")))
            return rc;
        if (strcmp(json_string_value(j), "*") == 0)
            s->call = SCENARIO_CALL_ALL;
        else if ((rc = call_name_in(p, json_string_value(j), true, &s->call)))
            return rc;
        else
            named |= UINT64_C(1) << s->call;
        path_pop(p, old);
        if (!(j = member(p, step, "error", &old)))
            return fail(p, "missing \"error\"");
        POP_OR_RETURN(error_name_in(p, j, true, &s->error));
        path_pop(p, iold);
    }
    /* A variant not named in the timeline follows its base's steps. */
    for (int c = 0; c < SCENARIO_CALL_COUNT; c++) {
        int b = scenario_call_base(c);
        if (b >= 0 && !(named & (UINT64_C(1) << c)) && (named & (UINT64_C(1) << b)))
            d->error_timeline_from_base |= UINT64_C(1) << c;
    }
    return 0;
}

static int process_parse(parse_ctx_t *p, json_t *obj, const scenario_device_t *d,
                         scenario_process_t *pr) {
    static const char *const keys[] = {"pid",       "sm_util", "mem_util", "used_memory_bytes",
                                       "mig_index", "type"};
    int rc = expect(p, obj, JSON_OBJECT, "an object {\"pid\": 1234, \"sm_util\": 40, ...}");
    if (rc || (rc = check_keys(p, obj, keys, sizeof keys / sizeof keys[0])))
        return rc;
    size_t old;
    json_t *j;
    double d_ = 0;
    pr->mig_index = -1;
    if (!(j = member(p, obj, "pid", &old)))
        return fail(p, "missing \"pid\" (the host PID of the process)");
    POP_OR_RETURN(number_in(p, j, true, 1, false, 4194304.0, &d_)); /* Linux pid_max limit */
    pr->pid = (unsigned)d_;
    if ((j = member(p, obj, "sm_util", &old))) {
        POP_OR_RETURN(number_in(p, j, true, 0, false, 100, &d_));
        pr->sm_util = (unsigned)d_;
        pr->has_sm_util = true;
    }
    if ((j = member(p, obj, "mem_util", &old))) {
        POP_OR_RETURN(number_in(p, j, true, 0, false, 100, &d_));
        pr->mem_util = (unsigned)d_;
        pr->has_mem_util = true;
    }
    if ((j = member(p, obj, "used_memory_bytes", &old))) {
        POP_OR_RETURN(number_in(p, j, true, 0, false, 9007199254740992.0, &pr->used_memory_bytes));
        pr->has_used_memory = true;
    }
    if ((j = member(p, obj, "type", &old))) {
        static const char *const kinds[] = {"compute", "graphics", "mps"};
        if ((rc = expect(p, j, JSON_STRING, "a string")))
            return rc;
        const char *k = json_string_value(j);
        size_t i = 0;
        while (i < 3 && strcmp(k, kinds[i]) != 0)
            i++;
        if (i == 3)
            return fail_unknown(p, "process type", k, kinds, 3);
        pr->kind = (scenario_proc_kind_t)i;
        path_pop(p, old);
    }
    if ((j = member(p, obj, "mig_index", &old))) {
        POP_OR_RETURN(number_in(p, j, true, 0, false, SCENARIO_MAX_MIG_INSTANCES - 1, &d_));
        if (!d->mig_enabled || (size_t)d_ >= d->mig_count) {
            path_push_key(p, "mig_index");
            return fail(p, "%u: the device has %zu MIG instances%s", (unsigned)d_, d->mig_count,
                        d->mig_enabled ? "" : " (MIG is not enabled)");
        }
        pr->mig_index = (int)d_;
    } else if (d->mig_enabled) {
        return fail(p,
                    "missing \"mig_index\": on a MIG-enabled GPU a process runs in an "
                    "instance (0-%zu)",
                    d->mig_count ? d->mig_count - 1 : 0);
    }
    return 0;
}

static int processes_parse(parse_ctx_t *p, json_t *arr, scenario_device_t *d) {
    int rc = expect(p, arr, JSON_ARRAY, "an array of processes");
    if (rc)
        return rc;
    size_t n = json_array_size(arr);
    if (n > SCENARIO_MAX_PROCESSES)
        return fail(p, "has %zu processes; the stand-in allows at most %d", n,
                    SCENARIO_MAX_PROCESSES);
    if (n == 0)
        return 0;
    d->processes = calloc(n, sizeof *d->processes);
    if (!d->processes)
        return KGS_ENOMEM;
    d->process_count = n;
    for (size_t i = 0; i < n; i++) {
        size_t old = path_push_index(p, i);
        if ((rc = process_parse(p, json_array_get(arr, i), d, &d->processes[i])))
            return rc;
        for (size_t k = 0; k < i; k++) {
            if (d->processes[k].pid == d->processes[i].pid &&
                d->processes[k].kind == d->processes[i].kind)
                return fail(p, "pid %u is already listed as processes[%zu]", d->processes[i].pid,
                            k);
        }
        path_pop(p, old);
    }
    return 0;
}

static int device_parse(parse_ctx_t *p, json_t *obj, double repeat, size_t index,
                        scenario_device_t *d) {
    static const char *const keys[] = {
        "uuid",           "name",         "pci_bus_id", "memory_total_bytes", "power_limit_mw",
        "gpm_supported",  "nvlink_links", "values",     "timeline",           "errors",
        "error_timeline", "latency_ms",   "mig",        "processes"};
    int rc = expect(p, obj, JSON_OBJECT, "an object");
    if (rc || (rc = check_keys(p, obj, keys, sizeof keys / sizeof keys[0])))
        return rc;
    /* Defaults: an identity is always present on a real GPU. */
    snprintf(d->uuid, sizeof d->uuid, "GPU-00000000-0000-0000-0000-%012zx", index + 1);
    snprintf(d->name, sizeof d->name, "NVIDIA Simulated GPU");
    d->pci_bus = (unsigned)index + 1;
    snprintf(d->pci_bus_id, sizeof d->pci_bus_id, "%08X:%02X:%02X.%X", 0u, d->pci_bus, 0u, 0u);

    size_t old;
    json_t *j;
    double num = 0;
    if ((j = member(p, obj, "uuid", &old))) {
        POP_OR_RETURN(string_into(p, j, d->uuid, sizeof d->uuid));
        if (strncmp(d->uuid, "GPU-", 4) != 0) {
            path_push_key(p, "uuid");
            return fail(p, "\"%s\" must start with \"GPU-\"", d->uuid);
        }
    }
    if ((j = member(p, obj, "name", &old)))
        POP_OR_RETURN(string_into(p, j, d->name, sizeof d->name));
    if ((j = member(p, obj, "pci_bus_id", &old)))
        POP_OR_RETURN(pci_parse(p, j, d));
    if ((j = member(p, obj, "memory_total_bytes", &old))) {
        POP_OR_RETURN(number_in(p, j, true, 1, false, 9007199254740992.0, &d->memory_total_bytes));
        d->has_memory_total = true;
    }
    if ((j = member(p, obj, "power_limit_mw", &old))) {
        POP_OR_RETURN(number_in(p, j, true, 0, false, 4294967295.0, &num));
        d->power_limit_mw = (unsigned)num;
        d->has_power_limit = true;
    }
    if ((j = member(p, obj, "gpm_supported", &old))) {
        if (!json_is_boolean(j))
            return fail(p, "must be a boolean, not %s", json_kind(j));
        d->gpm_supported = json_is_true(j);
        path_pop(p, old);
    }
    if ((j = member(p, obj, "nvlink_links", &old))) {
        POP_OR_RETURN(number_in(p, j, true, 0, false, 36, &num)); /* NVML_NVLINK_MAX_LINKS */
        d->nvlink_links = (unsigned)num;
    }
    if ((j = member(p, obj, "values", &old)))
        POP_OR_RETURN(values_parse(p, j, false, &d->values.present, NULL, d->values.v));
    if ((j = member(p, obj, "timeline", &old)))
        POP_OR_RETURN(timeline_parse(p, j, false, repeat, &d->timeline, &d->timeline_len));
    if ((j = member(p, obj, "errors", &old)))
        POP_OR_RETURN(call_map_errors_parse(p, j, d));
    if ((j = member(p, obj, "error_timeline", &old)))
        POP_OR_RETURN(error_timeline_parse(p, j, repeat, d));
    if ((j = member(p, obj, "latency_ms", &old)))
        POP_OR_RETURN(latency_parse(p, j, d));
    if ((j = member(p, obj, "mig", &old)))
        POP_OR_RETURN(mig_parse(p, j, repeat, d));
    if ((j = member(p, obj, "processes", &old)))
        POP_OR_RETURN(processes_parse(p, j, d));
    return memory_check(p, d->has_memory_total, d->memory_total_bytes, &d->values, d->timeline,
                        d->timeline_len);
}

static int missing_parse(parse_ctx_t *p, json_t *arr, scenario_t *sc) {
    int rc = expect(p, arr, JSON_ARRAY, "an array of NVML function names");
    if (rc)
        return rc;
    size_t i;
    json_t *j;
    json_array_foreach(arr, i, j) {
        size_t old = path_push_index(p, i);
        int call = 0;
        if ((rc = expect(p, j, JSON_STRING, "an NVML function name")) ||
            (rc = call_name_in(p, json_string_value(j), false, &call)))
            return rc;
        sc->missing |= UINT64_C(1) << call;
        path_pop(p, old);
    }
    return 0;
}

/* Two GPUs (or MIG instances) with one UUID would make every UUID-keyed
 * consumer merge them; refuse. Same for PCI bus ids. */
static int identity_check(parse_ctx_t *p, const scenario_t *sc) {
    for (size_t i = 0; i < sc->device_count; i++) {
        const scenario_device_t *a = &sc->devices[i];
        for (size_t k = 0; k < i; k++) {
            const scenario_device_t *b = &sc->devices[k];
            if (strcmp(a->uuid, b->uuid) == 0 || strcmp(a->pci_bus_id, b->pci_bus_id) == 0) {
                size_t old = path_push_key(p, "devices");
                path_push_index(p, i);
                int rc = fail(p, "uuid or pci_bus_id is the same as devices[%zu]'s", k);
                path_pop(p, old);
                return rc;
            }
        }
        for (size_t m = 0; m < a->mig_count; m++) {
            for (size_t k = 0; k <= i; k++) {
                const scenario_device_t *b = &sc->devices[k];
                size_t lim = k == i ? m : b->mig_count;
                for (size_t n = 0; n < lim; n++) {
                    if (strcmp(a->mig[m].uuid, b->mig[n].uuid) == 0) {
                        size_t old = path_push_key(p, "devices");
                        path_push_index(p, i);
                        path_push_key(p, "mig.instances");
                        path_push_index(p, m);
                        int rc = fail(p, "uuid \"%s\" is used twice", a->mig[m].uuid);
                        path_pop(p, old);
                        return rc;
                    }
                }
            }
        }
    }
    return 0;
}

static int scenario_from_json(parse_ctx_t *p, json_t *root, scenario_t *sc) {
    static const char *const keys[] = {"driver_version",  "cuda_driver_version", "init_error",
                                       "missing_symbols", "repeat_after_s",      "devices"};
    int rc = expect(p, root, JSON_OBJECT, "an object");
    if (rc || (rc = check_keys(p, root, keys, sizeof keys / sizeof keys[0])))
        return rc;
    size_t old;
    json_t *j;
    double num = 0;
    snprintf(sc->driver_version, sizeof sc->driver_version, "560.35.03");
    sc->cuda_driver_version = 12060;
    if ((j = member(p, root, "driver_version", &old)))
        POP_OR_RETURN(string_into(p, j, sc->driver_version, sizeof sc->driver_version));
    if ((j = member(p, root, "cuda_driver_version", &old))) {
        POP_OR_RETURN(number_in(p, j, true, 1, false, 999999, &num));
        sc->cuda_driver_version = (int)num;
    }
    if ((j = member(p, root, "init_error", &old)))
        POP_OR_RETURN(error_name_in(p, j, false, &sc->init_error));
    if ((j = member(p, root, "missing_symbols", &old)))
        POP_OR_RETURN(missing_parse(p, j, sc));
    if ((j = member(p, root, "repeat_after_s", &old)))
        POP_OR_RETURN(number_in(p, j, false, 0, true, 1e9, &sc->repeat_after_s));
    if (!(j = member(p, root, "devices", &old)))
        return fail(p, "missing \"devices\" (an array of GPUs; may be empty)");
    if ((rc = expect(p, j, JSON_ARRAY, "an array of GPUs")))
        return rc;
    size_t n = json_array_size(j);
    if (n > SCENARIO_MAX_DEVICES)
        return fail(p, "has %zu GPUs; at most %d are supported", n, SCENARIO_MAX_DEVICES);
    if (n > 0) {
        sc->devices = calloc(n, sizeof *sc->devices);
        if (!sc->devices)
            return KGS_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        size_t iold = path_push_index(p, i);
        sc->device_count = i + 1;
        if ((rc = device_parse(p, json_array_get(j, i), sc->repeat_after_s, i, &sc->devices[i])))
            return rc;
        path_pop(p, iold);
    }
    path_pop(p, old);
    return identity_check(p, sc);
}

int scenario_parse(const char *json, size_t len, scenario_t **out, char *err, size_t errlen) {
    *out = NULL;
    parse_ctx_t p = {.err = err, .errlen = errlen};
    if (err && errlen)
        err[0] = '\0';
    json_error_t jerr;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        if (err && errlen)
            snprintf(err, errlen, "line %d column %d: %s", jerr.line, jerr.column, jerr.text);
        return KGS_EINVAL;
    }
    scenario_t *sc = calloc(1, sizeof *sc);
    if (!sc) {
        json_decref(root);
        return KGS_ENOMEM;
    }
    int rc = scenario_from_json(&p, root, sc);
    json_decref(root);
    if (rc) {
        if (rc == KGS_ENOMEM && err && errlen)
            snprintf(err, errlen, "out of memory");
        scenario_free(sc);
        return rc;
    }
    *out = sc;
    return 0;
}

int scenario_load_file(const char *path, scenario_t **out, char *err, size_t errlen) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        int e = errno;
        if (err && errlen)
            snprintf(err, errlen, "open: %s", strerror(e));
        return KGS_EIO;
    }
    /* Grow as needed: scenarios are a few KiB, the cap is generous. */
    size_t cap = 16384, len = 0;
    char *buf = malloc(cap);
    int rc = buf ? 0 : KGS_ENOMEM;
    while (rc == 0) {
        len += fread(buf + len, 1, cap - len, f);
        if (ferror(f)) {
            if (err && errlen)
                snprintf(err, errlen, "read: %s", strerror(errno));
            rc = KGS_EIO;
        } else if (len < cap) {
            break; /* end of file */
        } else if (cap >= SCENARIO_MAX_FILE_BYTES) {
            if (err && errlen)
                snprintf(err, errlen, "larger than %u bytes", SCENARIO_MAX_FILE_BYTES);
            rc = KGS_EINVAL;
        } else {
            char *nb = realloc(buf, cap * 2);
            if (!nb)
                rc = KGS_ENOMEM;
            else
                buf = nb, cap *= 2;
        }
    }
    fclose(f);
    if (rc == 0)
        rc = scenario_parse(buf, len, out, err, errlen);
    else if (rc == KGS_ENOMEM && err && errlen)
        snprintf(err, errlen, "out of memory");
    free(buf);
    return rc;
}

void scenario_free(scenario_t *sc) {
    if (!sc)
        return;
    for (size_t i = 0; i < sc->device_count; i++) {
        scenario_device_t *d = &sc->devices[i];
        free(d->timeline);
        free(d->error_timeline);
        free(d->processes);
        for (size_t m = 0; m < d->mig_count; m++)
            free(d->mig[m].timeline);
    }
    free(sc->devices);
    free(sc);
}

/* ---- resolution ---- */

double scenario_cycle_time(const scenario_t *sc, double t_s) {
    if (t_s < 0)
        return 0;
    if (sc->repeat_after_s > 0)
        return fmod(t_s, sc->repeat_after_s);
    return t_s;
}

static void values_at(const scenario_values_t *base, const scenario_step_t *steps, size_t n,
                      double r, scenario_values_t *out) {
    *out = *base;
    for (size_t i = 0; i < n && steps[i].at_s <= r; i++)
        step_apply(out, &steps[i]);
}

void scenario_device_values_at(const scenario_t *sc, const scenario_device_t *dev, double t_s,
                               scenario_values_t *out) {
    values_at(&dev->values, dev->timeline, dev->timeline_len, scenario_cycle_time(sc, t_s), out);
}

void scenario_mig_values_at(const scenario_t *sc, const scenario_mig_t *mig, double t_s,
                            scenario_values_t *out) {
    values_at(&mig->values, mig->timeline, mig->timeline_len, scenario_cycle_time(sc, t_s), out);
}

int scenario_device_error_at(const scenario_t *sc, const scenario_device_t *dev, int call,
                             double t_s) {
    if (call < 0 || call >= SCENARIO_CALL_COUNT)
        return NVML_SUCCESS;
    double r = scenario_cycle_time(sc, t_s);
    int timeline = NVML_SUCCESS;
    int key =
        (dev->error_timeline_from_base & (UINT64_C(1) << call)) ? scenario_call_base(call) : call;
    for (size_t i = 0; i < dev->error_timeline_len && dev->error_timeline[i].at_s <= r; i++) {
        const scenario_error_step_t *s = &dev->error_timeline[i];
        if (s->call == key || (s->call == SCENARIO_CALL_ALL && !call_is_handle_lookup(call)))
            timeline = s->error;
    }
    return timeline != NVML_SUCCESS ? timeline : dev->error[call];
}

/* The integral over [0, r] of one cycle, r within the cycle. */
static double cycle_integral(const scenario_device_t *dev, scenario_value_t key, double r) {
    uint32_t bit = 1u << key;
    double acc = 0, pos = 0;
    bool present = dev->values.present & bit;
    double v = dev->values.v[key];
    for (size_t i = 0; i < dev->timeline_len && dev->timeline[i].at_s <= r; i++) {
        const scenario_step_t *s = &dev->timeline[i];
        if (present)
            acc += v * (s->at_s - pos);
        pos = s->at_s;
        if (s->clear & bit)
            present = false;
        if (s->set & bit) {
            present = true;
            v = s->v[key];
        }
    }
    if (present)
        acc += v * (r - pos);
    return acc;
}

double scenario_device_integral(const scenario_t *sc, const scenario_device_t *dev,
                                scenario_value_t key, double t_s) {
    if (t_s <= 0 || key < 0 || key >= SCENARIO_VALUE_COUNT)
        return 0;
    if (sc->repeat_after_s > 0) {
        double cycles = floor(t_s / sc->repeat_after_s);
        double r = t_s - cycles * sc->repeat_after_s;
        return cycles * cycle_integral(dev, key, sc->repeat_after_s) + cycle_integral(dev, key, r);
    }
    return cycle_integral(dev, key, t_s);
}
