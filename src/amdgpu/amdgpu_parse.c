/*
 * amdgpu_parse.c - sysfs values, PCI addresses and DRM fdinfo, from bytes.
 *
 * Every parser takes (text, len) and never reads past len, so the fuzz
 * target can hand it raw input and the file reader need not NUL-terminate.
 */
#include "amdgpu/amdgpu_parse.h"

#include <stdio.h>
#include <string.h>

#include "core/err.h"

static bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Trims whitespace on both sides of [*p, *p + *n). */
static void trim(const char **p, size_t *n) {
    while (*n && is_space(**p)) {
        (*p)++;
        (*n)--;
    }
    while (*n && is_space((*p)[*n - 1]))
        (*n)--;
}

/* Digits only, at least one, no overflow. */
static int digits_u64(const char *p, size_t n, uint64_t *out) {
    if (n == 0)
        return KGS_EINVAL;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return KGS_EINVAL;
        unsigned d = (unsigned)(p[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return KGS_ERANGE;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

int amdgpu_parse_u64(const char *text, size_t len, uint64_t *out) {
    trim(&text, &len);
    return digits_u64(text, len, out);
}

int amdgpu_parse_i64(const char *text, size_t len, int64_t *out) {
    trim(&text, &len);
    bool neg = len && text[0] == '-';
    if (neg) {
        text++;
        len--;
    }
    uint64_t mag;
    int rc = digits_u64(text, len, &mag);
    if (rc != 0)
        return rc;
    if (mag > (uint64_t)INT64_MAX + (neg ? 1u : 0u))
        return KGS_ERANGE;
    *out = neg ? (mag == (uint64_t)INT64_MAX + 1u ? INT64_MIN : -(int64_t)mag) : (int64_t)mag;
    return 0;
}

/* [p, p + n) is 1..max hex digits and nothing else. */
static bool hex_exact(const char *p, size_t n, size_t max, uint32_t *out) {
    if (n == 0 || n > max)
        return false;
    uint32_t v = 0;
    for (size_t i = 0; i < n; i++) {
        int d = hex_digit(p[i]);
        if (d < 0)
            return false;
        v = (v << 4) | (uint32_t)d;
    }
    *out = v;
    return true;
}

int amdgpu_bdf_normalise(const char *text, size_t len, char out[AMDGPU_BDF_MAX]) {
    trim(&text, &len);
    /* "[domain:]bus:device.function": the function after the one '.', the
     * rest split at ':' into two or three fields. */
    const char *dot = memchr(text, '.', len);
    if (!dot || memchr(dot + 1, '.', len - (size_t)(dot - text) - 1))
        return KGS_EINVAL;
    size_t head = (size_t)(dot - text);
    const char *c2 = NULL, *c1 = NULL; /* the last and the one before it */
    for (size_t i = 0; i < head; i++)
        if (text[i] == ':') {
            if (c1)
                return KGS_EINVAL; /* a third colon */
            c1 = c2;
            c2 = text + i;
        }
    if (!c2)
        return KGS_EINVAL;
    uint32_t domain = 0, bus, dev, fn;
    const char *bus_at = c1 ? c1 + 1 : text;
    if (c1 && !hex_exact(text, (size_t)(c1 - text), 8, &domain))
        return KGS_EINVAL;
    if (!hex_exact(bus_at, (size_t)(c2 - bus_at), 2, &bus) ||
        !hex_exact(c2 + 1, (size_t)(dot - c2 - 1), 2, &dev) ||
        !hex_exact(dot + 1, len - head - 1, 1, &fn))
        return KGS_EINVAL;
    if (dev > 0x1f || fn > 7)
        return KGS_EINVAL;
    snprintf(out, AMDGPU_BDF_MAX, "%04x:%02x:%02x.%x", (unsigned)domain, (unsigned)bus,
             (unsigned)dev, (unsigned)fn);
    return 0;
}

/* A number with an optional unit word after whitespace: "4096 KiB". The
 * unit, if any, is returned in (*unit, *unit_len). */
static int value_with_unit(const char *p, size_t n, uint64_t *out, const char **unit,
                           size_t *unit_len) {
    size_t d = 0;
    while (d < n && p[d] >= '0' && p[d] <= '9')
        d++;
    int rc = digits_u64(p, d, out);
    if (rc != 0)
        return rc;
    const char *u = p + d;
    size_t un = n - d;
    trim(&u, &un);
    if (d < n && !is_space(p[d]) && un)
        return KGS_EINVAL; /* "12KiB": the spec puts whitespace before the unit */
    for (size_t j = 0; j < un; j++)
        if (is_space(u[j]))
            return KGS_EINVAL;
    *unit = u;
    *unit_len = un;
    return 0;
}

/* A <str> of drm-usage-stats.rst: no whitespace; we also refuse control
 * bytes and NUL, which no driver name has and which would cut the copy. */
static bool is_word(const char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)p[i] <= ' ' || p[i] == 0x7f)
            return false;
    return true;
}

static bool word_is(const char *p, size_t n, const char *w) {
    return n == strlen(w) && memcmp(p, w, n) == 0;
}

/* drm-memory-<region>: bytes by default, or KiB/MiB (drm-usage-stats.rst). */
static bool memory_value(const char *p, size_t n, uint64_t *bytes) {
    uint64_t v;
    const char *u;
    size_t un;
    if (value_with_unit(p, n, &v, &u, &un) != 0)
        return false;
    uint64_t mul = 1;
    if (un == 0)
        mul = 1;
    else if (word_is(u, un, "KiB"))
        mul = 1024;
    else if (word_is(u, un, "MiB"))
        mul = 1024 * 1024;
    else
        return false;
    if (v > UINT64_MAX / mul)
        return false;
    *bytes = v * mul;
    return true;
}

/* drm-engine-<name>: "<uint> ns". */
static bool engine_value(const char *p, size_t n, uint64_t *ns) {
    const char *u;
    size_t un;
    return value_with_unit(p, n, ns, &u, &un) == 0 && word_is(u, un, "ns");
}

int amdgpu_fdinfo_parse(const char *text, size_t len, amdgpu_fdinfo_t *out) {
    memset(out, 0, sizeof *out);
    bool is_drm = false, has_resident = false;
    uint64_t resident = 0;
    size_t pos = 0;
    while (pos < len) {
        const char *line = text + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - line) : len - pos;
        pos += n + (nl ? 1 : 0);

        const char *colon = memchr(line, ':', n);
        if (!colon)
            continue;
        const char *key = line;
        size_t kn = (size_t)(colon - line);
        const char *val = colon + 1;
        size_t vn = n - kn - 1;
        trim(&val, &vn);

        if (word_is(key, kn, "drm-driver")) {
            /* "Neither keys or values are allowed to contain whitespace". */
            if (vn == 0 || vn >= sizeof out->driver || !is_word(val, vn))
                continue;
            memcpy(out->driver, val, vn);
            out->driver[vn] = '\0';
            is_drm = true;
        } else if (word_is(key, kn, "drm-pdev")) {
            out->has_pdev = amdgpu_bdf_normalise(val, vn, out->pdev) == 0;
        } else if (word_is(key, kn, "drm-client-id")) {
            out->has_client_id = digits_u64(val, vn, &out->client_id) == 0;
        } else if (word_is(key, kn, "drm-engine-gfx")) {
            out->has_engine_gfx = engine_value(val, vn, &out->engine_gfx_ns);
        } else if (word_is(key, kn, "drm-engine-compute")) {
            out->has_engine_compute = engine_value(val, vn, &out->engine_compute_ns);
        } else if (word_is(key, kn, "drm-memory-vram")) {
            out->has_vram = memory_value(val, vn, &out->vram_bytes);
        } else if (word_is(key, kn, "drm-resident-vram")) {
            has_resident = memory_value(val, vn, &resident);
        }
    }
    /* Kernels that print drm_print_memory_stats() name resident VRAM
     * drm-resident-vram; amdgpu keeps drm-memory-vram as its legacy alias. */
    if (!out->has_vram && has_resident) {
        out->has_vram = true;
        out->vram_bytes = resident;
    }
    if (!is_drm) {
        memset(out, 0, sizeof *out);
        return KGS_ENOTFOUND;
    }
    return 0;
}

bool amdgpu_uevent_parse(const char *text, size_t len, char slot[AMDGPU_BDF_MAX]) {
    bool amdgpu = false;
    slot[0] = '\0';
    size_t pos = 0;
    while (pos < len) {
        const char *line = text + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - line) : len - pos;
        pos += n + (nl ? 1 : 0);
        const char *eq = memchr(line, '=', n);
        if (!eq)
            continue;
        size_t kn = (size_t)(eq - line);
        const char *val = eq + 1;
        size_t vn = n - kn - 1;
        if (word_is(line, kn, "DRIVER"))
            amdgpu = word_is(val, vn, "amdgpu");
        else if (word_is(line, kn, "PCI_SLOT_NAME") && amdgpu_bdf_normalise(val, vn, slot) != 0)
            slot[0] = '\0';
    }
    if (!amdgpu)
        slot[0] = '\0';
    return amdgpu;
}
