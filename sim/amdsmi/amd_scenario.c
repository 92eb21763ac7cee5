/* amd_scenario.c - see amd_scenario.h. */
#include "amd_scenario.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amdsmi/amdsmi_abi.h"
#include "amdsmi/amdsmi_decode.h"
#include "core/err.h"

static const char *const value_keys[] = {
#define AMD_SCENARIO_VALUE_KEY(id, key, max) key,
    AMD_SCENARIO_VALUES(AMD_SCENARIO_VALUE_KEY)
#undef AMD_SCENARIO_VALUE_KEY
};
static const double value_max[] = {
#define AMD_SCENARIO_VALUE_MAX(id, key, max) max,
    AMD_SCENARIO_VALUES(AMD_SCENARIO_VALUE_MAX)
#undef AMD_SCENARIO_VALUE_MAX
};

static int fail(char *err, size_t errlen, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, const char *path, const char *fmt, ...) {
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return kgs_seterr(err, errlen, KGS_EINVAL, "%s: %s", path, msg);
}

/* Every key of obj must be one of `keys` (NULL-terminated). */
static int check_keys(json_t *obj, const char *const *keys, const char *path, char *err,
                      size_t errlen) {
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) {
        bool ok = false;
        for (size_t i = 0; keys[i]; i++)
            ok = ok || strcmp(k, keys[i]) == 0;
        if (!ok) {
            char valid[512] = "";
            size_t used = 0;
            for (size_t i = 0; keys[i] && used < sizeof valid; i++) {
                int w = snprintf(valid + used, sizeof valid - used, "%s%s", i ? ", " : "", keys[i]);
                used += w > 0 ? (size_t)w : 0;
            }
            return fail(err, errlen, path, "unknown key \"%s\"; valid: %s", k, valid);
        }
    }
    return 0;
}

static int get_string(json_t *obj, const char *key, char *out, size_t outlen, const char *path,
                      char *err, size_t errlen) {
    json_t *v = json_object_get(obj, key);
    if (!v)
        return 0;
    if (!json_is_string(v))
        return fail(err, errlen, path, "\"%s\" must be a string", key);
    if (strlen(json_string_value(v)) >= outlen)
        return fail(err, errlen, path, "\"%s\" longer than %zu bytes", key, outlen - 1);
    snprintf(out, outlen, "%s", json_string_value(v));
    return 0;
}

/* A whole number in [0, max]. */
static int get_uint(json_t *v, double max, double *out, const char *path, const char *key,
                    char *err, size_t errlen) {
    if (!json_is_number(v))
        return fail(err, errlen, path, "\"%s\" must be a number", key);
    double d = json_number_value(v);
    if (!(d >= 0 && d <= max) || floor(d) != d)
        return fail(err, errlen, path, "\"%s\" %g out of range: a whole number 0 to %.0f", key, d,
                    max);
    *out = d;
    return 0;
}

static int parse_values(json_t *obj, const char *path, amd_scenario_values_t *out, char *err,
                        size_t errlen) {
    if (!json_is_object(obj))
        return fail(err, errlen, path, "must be an object");
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) {
        size_t i = 0;
        while (i < AMD_V_COUNT && strcmp(k, value_keys[i]) != 0)
            i++;
        if (i == AMD_V_COUNT) {
            static const char *keys[AMD_V_COUNT + 1] = {
#define AMD_SCENARIO_VALUE_KEY(id, key, max) key,
                AMD_SCENARIO_VALUES(AMD_SCENARIO_VALUE_KEY)
#undef AMD_SCENARIO_VALUE_KEY
                    NULL};
            return check_keys(obj, keys, path, err, errlen);
        }
        double d = 0;
        int rc = get_uint(v, value_max[i], &d, path, k, err, errlen);
        if (rc)
            return rc;
        out->present |= 1u << i;
        out->v[i] = (uint32_t)d;
    }
    return 0;
}

/* "dddd:bb:dd.f" (hex) into amdsmi_bdf_t's bits. */
static int parse_bdf(const char *text, uint64_t *out) {
    unsigned long long dom;
    unsigned bus, dev, fn;
    char tail;
    if (sscanf(text, "%llx:%x:%x.%x%c", &dom, &bus, &dev, &fn, &tail) != 4 || bus > 0xff ||
        dev > 0x1f || fn > 7 || dom > 0xffffffffffffull)
        return -1;
    *out = (dom << 16) | ((uint64_t)bus << 8) | ((uint64_t)dev << 3) | fn;
    return 0;
}

long amd_scenario_status_code(const char *name) {
    for (uint32_t s = 0; s <= 64; s++)
        if (strcmp(amdsmi_status_name(s), name) == 0)
            return (long)s;
    if (strcmp(name, "MAP_ERROR") == 0)
        return (long)AMDSMI_STATUS_MAP_ERROR;
    if (strcmp(name, "UNKNOWN_ERROR") == 0)
        return (long)AMDSMI_STATUS_UNKNOWN_ERROR;
    return -1;
}

static int parse_status(json_t *v, const char *path, const char *key, uint32_t *out, char *err,
                        size_t errlen) {
    if (!json_is_string(v))
        return fail(err, errlen, path, "\"%s\" must be a status name such as \"NOT_FOUND\"", key);
    long c = amd_scenario_status_code(json_string_value(v));
    if (c < 0)
        return fail(err, errlen, path,
                    "\"%s\": unknown amd-smi status \"%s\" (amdsmi_status_t without "
                    "AMDSMI_STATUS_, e.g. NOT_FOUND, NOT_SUPPORTED, NO_PERM)",
                    key, json_string_value(v));
    *out = (uint32_t)c;
    return 0;
}

static int parse_gpu(json_t *g, size_t gi, amd_scenario_gpu_t *out, char *err, size_t errlen) {
    static const char *const keys[] = {"bdf",
                                       "uuid",
                                       "market_name",
                                       "compute_partition",
                                       "memory_partition",
                                       "partitions",
                                       "kfd_info",
                                       "values",
                                       "partition_values",
                                       "processes",
                                       "error_timeline",
                                       NULL};
    char path[96];
    snprintf(path, sizeof path, "gpus[%zu]", gi);
    if (!json_is_object(g))
        return fail(err, errlen, path, "must be an object");
    int rc = check_keys(g, keys, path, err, errlen);
    if (rc)
        return rc;
    if ((rc = get_string(g, "bdf", out->bdf, sizeof out->bdf, path, err, errlen)) ||
        (rc = get_string(g, "uuid", out->uuid, sizeof out->uuid, path, err, errlen)) ||
        (rc = get_string(g, "market_name", out->market_name, sizeof out->market_name, path, err,
                         errlen)) ||
        (rc = get_string(g, "compute_partition", out->compute_partition,
                         sizeof out->compute_partition, path, err, errlen)) ||
        (rc = get_string(g, "memory_partition", out->memory_partition, sizeof out->memory_partition,
                         path, err, errlen)))
        return rc;
    if (!out->bdf[0])
        return fail(err, errlen, path, "\"bdf\" is required (\"0000:19:00.0\")");
    if (parse_bdf(out->bdf, &out->bdf_as_uint) != 0)
        return fail(err, errlen, path, "\"bdf\" \"%s\" is not a PCI address dddd:bb:dd.f",
                    out->bdf);
    out->partitions = 1;
    json_t *v = json_object_get(g, "partitions");
    if (v) {
        double d = 0;
        if ((rc = get_uint(v, AMD_SCENARIO_MAX_PARTITIONS, &d, path, "partitions", err, errlen)))
            return rc;
        if (d < 1)
            return fail(err, errlen, path, "\"partitions\" must be 1 to %d",
                        AMD_SCENARIO_MAX_PARTITIONS);
        out->partitions = (unsigned)d;
    }
    v = json_object_get(g, "kfd_info");
    if (v && !json_is_boolean(v))
        return fail(err, errlen, path, "\"kfd_info\" must be true or false");
    out->kfd_info = v && json_is_true(v);
    char sub[224];
    if ((v = json_object_get(g, "values"))) {
        snprintf(sub, sizeof sub, "%s.values", path);
        if ((rc = parse_values(v, sub, &out->values, err, errlen)))
            return rc;
    }
    if ((v = json_object_get(g, "partition_values"))) {
        if (!json_is_array(v) || json_array_size(v) > out->partitions)
            return fail(err, errlen, path,
                        "\"partition_values\" must be an array of at most \"partitions\" (%u) "
                        "objects",
                        out->partitions);
        for (size_t i = 0; i < json_array_size(v); i++) {
            snprintf(sub, sizeof sub, "%s.partition_values[%zu]", path, i);
            if ((rc = parse_values(json_array_get(v, i), sub, &out->partition_values[i], err,
                                   errlen)))
                return rc;
        }
    }
    if ((v = json_object_get(g, "processes"))) {
        if (!json_is_array(v) || json_array_size(v) > AMD_SCENARIO_MAX_PROCESSES)
            return fail(err, errlen, path, "\"processes\" must be an array of at most %d",
                        AMD_SCENARIO_MAX_PROCESSES);
        size_t n = json_array_size(v);
        out->processes = n ? calloc(n, sizeof *out->processes) : NULL;
        if (n && !out->processes)
            return kgs_seterr(err, errlen, KGS_ENOMEM, "out of memory");
        out->process_count = n;
        for (size_t i = 0; i < n; i++) {
            static const char *const pkeys[] = {"pid",         "partition", "vram_bytes",
                                                "gfx_percent", "name",      NULL};
            json_t *p = json_array_get(v, i);
            snprintf(sub, sizeof sub, "%s.processes[%zu]", path, i);
            if (!json_is_object(p))
                return fail(err, errlen, sub, "must be an object");
            if ((rc = check_keys(p, pkeys, sub, err, errlen)))
                return rc;
            double d = 0;
            json_t *pid = json_object_get(p, "pid");
            if (!pid)
                return fail(err, errlen, sub, "\"pid\" is required");
            if ((rc = get_uint(pid, 4294967295.0, &d, sub, "pid", err, errlen)))
                return rc;
            out->processes[i].pid = (uint32_t)d;
            json_t *part = json_object_get(p, "partition");
            if (part) {
                if ((rc = get_uint(part, out->partitions - 1, &d, sub, "partition", err, errlen)))
                    return rc;
                out->processes[i].partition = (unsigned)d;
            }
            json_t *vram = json_object_get(p, "vram_bytes");
            if (vram) {
                if ((rc = get_uint(vram, 9007199254740992.0, &d, sub, "vram_bytes", err, errlen)))
                    return rc;
                out->processes[i].vram_bytes = (uint64_t)d;
            }
            json_t *gfx = json_object_get(p, "gfx_percent");
            if (gfx) {
                if ((rc = get_uint(gfx, 100, &d, sub, "gfx_percent", err, errlen)))
                    return rc;
                out->processes[i].gfx_percent = (unsigned)d;
            }
            if ((rc = get_string(p, "name", out->processes[i].name, sizeof out->processes[i].name,
                                 sub, err, errlen)))
                return rc;
        }
    }
    if ((v = json_object_get(g, "error_timeline"))) {
        if (!json_is_array(v) || json_array_size(v) > AMD_SCENARIO_MAX_STEPS)
            return fail(err, errlen, path, "\"error_timeline\" must be an array of at most %d",
                        AMD_SCENARIO_MAX_STEPS);
        double last = 0;
        for (size_t i = 0; i < json_array_size(v); i++) {
            static const char *const skeys[] = {"at_s", "error", NULL};
            json_t *st = json_array_get(v, i);
            snprintf(sub, sizeof sub, "%s.error_timeline[%zu]", path, i);
            if (!json_is_object(st))
                return fail(err, errlen, sub, "must be an object");
            if ((rc = check_keys(st, skeys, sub, err, errlen)))
                return rc;
            json_t *at = json_object_get(st, "at_s"), *e = json_object_get(st, "error");
            if (!at || !json_is_number(at) || !(json_number_value(at) >= last))
                return fail(err, errlen, sub,
                            "\"at_s\" must be a number of seconds, not before the step before");
            if (!e)
                return fail(err, errlen, sub, "\"error\" is required");
            last = json_number_value(at);
            out->steps[i].at_s = last;
            if ((rc = parse_status(e, sub, "error", &out->steps[i].status, err, errlen)))
                return rc;
        }
        out->step_count = json_array_size(v);
    }
    return 0;
}

int amd_scenario_parse(const char *json, size_t len, amd_scenario_t **out, char *err,
                       size_t errlen) {
    *out = NULL;
    json_error_t je;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return kgs_seterr(err, errlen, KGS_EINVAL, "line %d column %d: %s", je.line, je.column,
                          je.text);
    amd_scenario_t *sc = calloc(1, sizeof *sc);
    if (!sc) {
        json_decref(root);
        return kgs_seterr(err, errlen, KGS_ENOMEM, "out of memory");
    }
    static const char *const keys[] = {"driver_version", "init_error", "gpus", NULL};
    int rc = 0;
    json_t *gpus;
    if (!json_is_object(root)) {
        rc = fail(err, errlen, "(top level)", "must be an object");
        goto done;
    }
    if ((rc = check_keys(root, keys, "(top level)", err, errlen)))
        goto done;
    snprintf(sc->driver_version, sizeof sc->driver_version, "6.8.5");
    if ((rc = get_string(root, "driver_version", sc->driver_version, sizeof sc->driver_version,
                         "(top level)", err, errlen)))
        goto done;
    json_t *ie = json_object_get(root, "init_error");
    if (ie && (rc = parse_status(ie, "(top level)", "init_error", &sc->init_status, err, errlen)))
        goto done;
    gpus = json_object_get(root, "gpus");
    if (!gpus || !json_is_array(gpus) || json_array_size(gpus) > AMD_SCENARIO_MAX_GPUS) {
        rc = fail(err, errlen, "gpus", "required: an array of at most %d GPUs",
                  AMD_SCENARIO_MAX_GPUS);
        goto done;
    }
    sc->gpu_count = json_array_size(gpus);
    for (size_t i = 0; i < sc->gpu_count; i++)
        if ((rc = parse_gpu(json_array_get(gpus, i), i, &sc->gpus[i], err, errlen)))
            goto done;
done:
    json_decref(root);
    if (rc) {
        amd_scenario_free(sc);
        return rc;
    }
    *out = sc;
    return 0;
}

int amd_scenario_load_file(const char *path, amd_scenario_t **out, char *err, size_t errlen) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return kgs_seterr(err, errlen, KGS_EIO, "%s: %s", path, strerror(errno));
    char *buf = malloc(AMD_SCENARIO_MAX_FILE_BYTES);
    if (!buf) {
        fclose(f);
        return kgs_seterr(err, errlen, KGS_ENOMEM, "out of memory");
    }
    size_t n = fread(buf, 1, AMD_SCENARIO_MAX_FILE_BYTES, f);
    bool too_big = n == AMD_SCENARIO_MAX_FILE_BYTES;
    fclose(f);
    int rc = too_big ? kgs_seterr(err, errlen, KGS_EINVAL, "%s: larger than %u bytes", path,
                                  AMD_SCENARIO_MAX_FILE_BYTES)
                     : amd_scenario_parse(buf, n, out, err, errlen);
    free(buf);
    return rc;
}

void amd_scenario_free(amd_scenario_t *sc) {
    if (!sc)
        return;
    for (size_t i = 0; i < AMD_SCENARIO_MAX_GPUS; i++)
        free(sc->gpus[i].processes);
    free(sc);
}

uint32_t amd_scenario_gpu_status_at(const amd_scenario_gpu_t *gpu, double t_s) {
    uint32_t st = 0;
    for (size_t i = 0; i < gpu->step_count && gpu->steps[i].at_s <= t_s; i++)
        st = gpu->steps[i].status;
    return st;
}

void amd_scenario_partition_values(const amd_scenario_gpu_t *gpu, unsigned p,
                                   amd_scenario_values_t *out) {
    *out = gpu->values;
    if (p >= AMD_SCENARIO_MAX_PARTITIONS)
        return;
    const amd_scenario_values_t *o = &gpu->partition_values[p];
    for (unsigned i = 0; i < AMD_V_COUNT; i++)
        if (o->present & (1u << i)) {
            out->present |= 1u << i;
            out->v[i] = o->v[i];
        }
}
