/*
 * clock.h - monotonic and wall time, as distinct types so they cannot mix.
 *
 * Pure logic takes `now` as an argument; only I/O edges call clock_mono_now().
 */
#ifndef KGS_CORE_CLOCK_H
#define KGS_CORE_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Nanoseconds on CLOCK_MONOTONIC. Never compare with wall time. */
typedef uint64_t mono_ns_t;

#define NS_PER_MS UINT64_C(1000000)
#define NS_PER_SEC UINT64_C(1000000000)

static inline mono_ns_t clock_mono_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (mono_ns_t)ts.tv_sec * NS_PER_SEC + (mono_ns_t)ts.tv_nsec;
}

/* Unix time in milliseconds (UTC). */
static inline int64_t clock_wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* a + b, clamped to UINT64_MAX instead of wrapping. */
static inline mono_ns_t clock_add_sat(mono_ns_t a, uint64_t b) {
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

#endif
