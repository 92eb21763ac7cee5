/*
 * metadata.h - KEDA's ScaledObject trigger metadata (scalerMetadata), as a
 * list of borrowed key/value slices.
 *
 * protobuf-c strings are NUL-terminated, but nothing here relies on it: every
 * consumer uses the explicit lengths, so a slice may point into any buffer.
 */
#ifndef KGS_CORE_METADATA_H
#define KGS_CORE_METADATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *key;
    size_t key_len;
    const char *value;
    size_t value_len;
} metadata_pair_t;

/* true when the slice (p, n) equals the NUL-terminated string s exactly. */
bool metadata_slice_eq(const char *p, size_t n, const char *s);

/* Compares two slices bytewise like memcmp, shorter-prefix first. */
int metadata_slice_cmp(const char *a, size_t an, const char *b, size_t bn);

/* What a request carries as scalerMetadata, counted on the wire. */
typedef struct {
    size_t entries; /* map entries (duplicates and empty ones included) */
    size_t bytes;   /* key and value bytes, summed over the entries */
} metadata_wire_count_t;

/*
 * Counts the scalerMetadata entries of a serialized request before
 * protobuf-c decodes it: decoding allocates per entry, so a 4 MiB request of
 * 2 M empty entries would cost hundreds of MiB before any limit could look at
 * the map. `msg` is a ScaledObjectRef, or with get_metrics_request a
 * GetMetricsRequest (every occurrence of its field 1, which protobuf merges,
 * is counted). A linear walk, no allocation. Returns 0, or KGS_EINVAL when
 * the bytes are not a well-formed message of that shape (the caller lets the
 * decoder produce its own error).
 */
int metadata_wire_count(const uint8_t *msg, size_t len, bool get_metrics_request,
                        metadata_wire_count_t *out);

#endif
