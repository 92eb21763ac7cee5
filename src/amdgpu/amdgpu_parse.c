/*
 * amdgpu_parse.c - sysfs values, PCI addresses and DRM fdinfo, from bytes.
 *
 * Every parser takes (text, len) and never reads past len, so the fuzz
 * target can hand it raw input and the file reader need not NUL-terminate.
 */
#include "amdgpu/amdgpu_parse.h"

#include <stddef.h>
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

/* The next "key<sep>value" line of text from *pos on (lines without sep
 * are skipped); false at the end. Key and value are not trimmed. */
static bool next_pair(const char *text, size_t len, size_t *pos, char sep, const char **key,
                      size_t *kn, const char **val, size_t *vn) {
    while (*pos < len) {
        const char *line = text + *pos;
        const char *nl = memchr(line, '\n', len - *pos);
        size_t n = nl ? (size_t)(nl - line) : len - *pos;
        *pos += n + (nl ? 1 : 0);
        const char *at = memchr(line, sep, n);
        if (!at)
            continue;
        *key = line;
        *kn = (size_t)(at - line);
        *val = at + 1;
        *vn = n - *kn - 1;
        return true;
    }
    return false;
}

int amdgpu_fdinfo_parse(const char *text, size_t len, amdgpu_fdinfo_t *out) {
    memset(out, 0, sizeof *out);
    bool is_drm = false, has_resident = false;
    uint64_t resident = 0;
    size_t pos = 0, kn, vn;
    const char *key, *val;
    while (next_pair(text, len, &pos, ':', &key, &kn, &val, &vn)) {
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
    size_t pos = 0, kn, vn;
    const char *key, *val;
    while (next_pair(text, len, &pos, '=', &key, &kn, &val, &vn)) {
        if (word_is(key, kn, "DRIVER"))
            amdgpu = word_is(val, vn, "amdgpu");
        else if (word_is(key, kn, "PCI_SLOT_NAME") && amdgpu_bdf_normalise(val, vn, slot) != 0)
            slot[0] = '\0';
    }
    if (!amdgpu)
        slot[0] = '\0';
    return amdgpu;
}

/* ---- gpu_metrics ------------------------------------------------------------ */

/* The leading fields of the kernel's tables, with its types in its order,
 * so offsetof() gives the kernel's offsets (natural alignment, no packing,
 * as kgd_pp_interface.h declares them; NUM_VCN 4, NUM_JPEG_ENG 32). Only
 * the prefix we read is mirrored. */
struct gm_header {
    uint16_t structure_size;
    uint8_t format_revision;
    uint8_t content_revision;
};

struct gm_v1_1 { /* v1_1, v1_2, v1_3 share this prefix */
    struct gm_header common_header;
    uint16_t temperature_edge, temperature_hotspot, temperature_mem;
    uint16_t temperature_vrgfx, temperature_vrsoc, temperature_vrmem;
    uint16_t average_gfx_activity, average_umc_activity, average_mm_activity;
    uint16_t average_socket_power;
    uint64_t energy_accumulator; /* unit not documented before v1_4: not read */
};

struct gm_v1_4 {
    struct gm_header common_header;
    uint16_t temperature_hotspot, temperature_mem, temperature_vrsoc;
    uint16_t curr_socket_power;
    uint16_t average_gfx_activity, average_umc_activity;
    uint16_t vcn_activity[4];
    uint64_t energy_accumulator; /* 15.259 uJ (2^-16 J) units */
};

struct gm_v1_5 { /* v1_5, v1_6 */
    struct gm_header common_header;
    uint16_t temperature_hotspot, temperature_mem, temperature_vrsoc;
    uint16_t curr_socket_power;
    uint16_t average_gfx_activity, average_umc_activity;
    uint16_t vcn_activity[4];
    uint16_t jpeg_activity[32];
    uint64_t energy_accumulator;
};

static uint16_t gm_u16(const unsigned char *b, size_t off) {
    uint16_t v;
    memcpy(&v, b + off, sizeof v); /* the table is in the host's byte order */
    return v;
}

static uint64_t gm_u64(const unsigned char *b, size_t off) {
    uint64_t v;
    memcpy(&v, b + off, sizeof v);
    return v;
}

/* A 16-bit field: present unless all ones (not supported). */
static bool gm_field16(const unsigned char *b, size_t off, unsigned *out) {
    uint16_t v = gm_u16(b, off);
    if (v == UINT16_MAX)
        return false;
    *out = v;
    return true;
}

int amdgpu_gpu_metrics_parse(const void *buf, size_t len, amdgpu_gpu_metrics_t *out) {
    const unsigned char *b = buf;
    memset(out, 0, sizeof *out);
    if (len < sizeof(struct gm_header))
        return KGS_EINVAL;
    size_t size = gm_u16(b, offsetof(struct gm_header, structure_size));
    out->format_revision = b[offsetof(struct gm_header, format_revision)];
    out->content_revision = b[offsetof(struct gm_header, content_revision)];
    if (size > len || size < sizeof(struct gm_header))
        return KGS_EINVAL;
    if (out->format_revision != 1 || out->content_revision < 1 || out->content_revision > 6)
        return KGS_ENOTFOUND;

    size_t gfx, umc, power, hot, energy = 0, need;
    if (out->content_revision <= 3) {
        gfx = offsetof(struct gm_v1_1, average_gfx_activity);
        umc = offsetof(struct gm_v1_1, average_umc_activity);
        power = offsetof(struct gm_v1_1, average_socket_power);
        hot = offsetof(struct gm_v1_1, temperature_hotspot);
        need = power + sizeof(uint16_t);
    } else if (out->content_revision == 4) {
        gfx = offsetof(struct gm_v1_4, average_gfx_activity);
        umc = offsetof(struct gm_v1_4, average_umc_activity);
        power = offsetof(struct gm_v1_4, curr_socket_power);
        hot = offsetof(struct gm_v1_4, temperature_hotspot);
        energy = offsetof(struct gm_v1_4, energy_accumulator);
        need = energy + sizeof(uint64_t);
    } else {
        gfx = offsetof(struct gm_v1_5, average_gfx_activity);
        umc = offsetof(struct gm_v1_5, average_umc_activity);
        power = offsetof(struct gm_v1_5, curr_socket_power);
        hot = offsetof(struct gm_v1_5, temperature_hotspot);
        energy = offsetof(struct gm_v1_5, energy_accumulator);
        need = energy + sizeof(uint64_t);
    }
    if (size < need)
        return KGS_EINVAL;
    out->has_gfx_activity =
        gm_field16(b, gfx, &out->gfx_activity_pct) && out->gfx_activity_pct <= 100;
    out->has_umc_activity =
        gm_field16(b, umc, &out->umc_activity_pct) && out->umc_activity_pct <= 100;
    out->has_socket_power = gm_field16(b, power, &out->socket_power_w);
    out->has_hotspot = gm_field16(b, hot, &out->hotspot_c);
    if (energy) {
        uint64_t acc = gm_u64(b, energy);
        if (acc != UINT64_MAX) {
            /* 2^-16 J a count: mJ = acc * 1000 / 65536, without overflow. */
            out->energy_mj = (acc >> 16) * 1000u + ((acc & 0xffffu) * 1000u >> 16);
            out->has_energy = true;
        }
    }
    return 0;
}
