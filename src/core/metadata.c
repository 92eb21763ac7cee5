/*
 * metadata.c - helpers on borrowed metadata slices.
 */
#include "core/metadata.h"

#include <string.h>

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
