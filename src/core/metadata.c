/*
 * metadata.c - helpers on borrowed metadata slices, and the count of a
 * request's metadata on the wire.
 */
#include "core/metadata.h"

#include <string.h>

#include "core/err.h"

bool metadata_slice_eq(const char *p, size_t n, const char *s) {
    size_t sl = strlen(s);
    return n == sl && (n == 0 || memcmp(p, s, n) == 0);
}

int metadata_slice_cmp(const char *a, size_t an, const char *b, size_t bn) {
    size_t m = an < bn ? an : bn;
    int c = m ? memcmp(a, b, m) : 0;
    if (c != 0)
        return c;
    return an < bn ? -1 : an > bn ? 1 : 0;
}

/* ---- counting on the wire ---------------------------------------------------- */

/* Protobuf wire types. Groups (3, 4) are long deprecated and proto3 has
 * none; they count as malformed. */
enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

typedef struct {
    const uint8_t *p, *end;
} wire_t;

static bool read_varint(wire_t *w, uint64_t *out) {
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64 && w->p < w->end; shift += 7) {
        uint8_t b = *w->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

/* Reads one field's tag and, for WT_LEN, its payload (*sub); skips the
 * value of the others. false when truncated or malformed. */
static bool read_field(wire_t *w, uint64_t *field, wire_t *sub) {
    uint64_t tag, n;
    if (!read_varint(w, &tag))
        return false;
    *field = tag >> 3;
    sub->p = sub->end = NULL;
    switch (tag & 7) {
    case WT_VARINT:
        return read_varint(w, &n);
    case WT_I64:
        n = 8;
        break;
    case WT_I32:
        n = 4;
        break;
    case WT_LEN:
        if (!read_varint(w, &n))
            return false;
        if (n > (uint64_t)(w->end - w->p))
            return false;
        sub->p = w->p;
        sub->end = w->p + n;
        break;
    default:
        return false;
    }
    if (n > (uint64_t)(w->end - w->p))
        return false;
    w->p += n;
    return true;
}

/* ScalerMetadataEntry: key = 1, value = 2. */
static bool count_entry(wire_t w, metadata_wire_count_t *out) {
    while (w.p < w.end) {
        uint64_t f;
        wire_t sub;
        if (!read_field(&w, &f, &sub))
            return false;
        if ((f == 1 || f == 2) && sub.p)
            out->bytes += (size_t)(sub.end - sub.p);
    }
    out->entries++;
    return true;
}

/* ScaledObjectRef: name = 1, namespace = 2, scalerMetadata = 3. */
static bool count_ref(wire_t w, metadata_wire_count_t *out) {
    while (w.p < w.end) {
        uint64_t f;
        wire_t sub;
        if (!read_field(&w, &f, &sub))
            return false;
        if (f == 3 && sub.p && !count_entry(sub, out))
            return false;
    }
    return true;
}

int metadata_wire_count(const uint8_t *msg, size_t len, bool get_metrics_request,
                        metadata_wire_count_t *out) {
    out->entries = out->bytes = 0;
    if (len == 0)
        return 0;
    if (!msg)
        return KGS_EINVAL;
    wire_t w = {msg, msg + len};
    if (!get_metrics_request)
        return count_ref(w, out) ? 0 : KGS_EINVAL;
    /* GetMetricsRequest: scaledObjectRef = 1, metricName = 2. */
    while (w.p < w.end) {
        uint64_t f;
        wire_t sub;
        if (!read_field(&w, &f, &sub))
            return KGS_EINVAL;
        if (f == 1 && sub.p && !count_ref(sub, out))
            return KGS_EINVAL;
    }
    return 0;
}
