/*
 * hash.h - FNV-1a (64-bit), the one string hash of the program: hash
 * tables, rate-limit keys, stable ids. Not for anything an attacker must
 * not be able to collide on purpose (the tables it serves are bounded).
 */
#ifndef KGS_CORE_HASH_H
#define KGS_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define KGS_FNV_OFFSET UINT64_C(14695981039346656037)
#define KGS_FNV_PRIME UINT64_C(1099511628211)

/* h continued over p[0..n) (start with KGS_FNV_OFFSET). */
static inline uint64_t kgs_fnv1a_bytes(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * KGS_FNV_PRIME;
    return h;
}

/* h continued over the NUL-terminated s. */
static inline uint64_t kgs_fnv1a_cont(uint64_t h, const char *s) {
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * KGS_FNV_PRIME;
    return h;
}

/* The hash of the NUL-terminated s. */
static inline uint64_t kgs_fnv1a(const char *s) {
    return kgs_fnv1a_cont(KGS_FNV_OFFSET, s);
}

#endif
