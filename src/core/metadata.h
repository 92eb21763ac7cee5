/*
 * metadata.h - KEDA's ScaledObject trigger metadata (scalerMetadata), as a
 * list of borrowed key/value slices.
 *
 * protobuf-c strings are NUL-terminated, but nothing here relies on it: every
 * consumer uses the explicit lengths, so a slice may point into any buffer.
 */
#ifndef KGS_METADATA_H
#define KGS_METADATA_H

#include <stdbool.h>
#include <stddef.h>

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

#endif
