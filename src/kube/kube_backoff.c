/*
 * kube_backoff.c - retry delays for the Kubernetes API client (see
 * kube_backoff.h). Pure.
 */
#include "kube/kube_backoff.h"

void kube_backoff_init(kube_backoff_t *b, uint64_t min_ns, uint64_t max_ns, uint64_t seed) {
    b->min_ns = min_ns;
    b->max_ns = max_ns < min_ns ? min_ns : max_ns;
    b->base_ns = min_ns;
    b->rng = seed ? seed : UINT64_C(0x9E3779B97F4A7C15);
    b->attempts = 0;
}

/* xorshift64*: enough for jitter, and no global state. */
static uint64_t rng_next(kube_backoff_t *b) {
    b->rng ^= b->rng >> 12;
    b->rng ^= b->rng << 25;
    b->rng ^= b->rng >> 27;
    return b->rng * UINT64_C(2685821657736338717);
}

uint64_t kube_backoff_next(kube_backoff_t *b) {
    uint64_t base = b->base_ns;
    uint64_t half = base / 2;
    /* base - half is the fixed part (ceil(base/2)); the jitter adds
     * 0..half, so the delay never exceeds base. */
    uint64_t delay = base - half + (half ? rng_next(b) % (half + 1) : 0);
    b->base_ns = base >= b->max_ns / 2 ? b->max_ns : base * 2;
    if (b->attempts < UINT32_MAX)
        b->attempts++;
    return delay;
}

void kube_backoff_reset(kube_backoff_t *b) {
    b->base_ns = b->min_ns;
    b->attempts = 0;
}

bool kube_watch_lived(mono_ns_t started_at, mono_ns_t last_data_at, uint64_t min_life_ns) {
    if (last_data_at == 0 || last_data_at < started_at)
        return false;
    return last_data_at - started_at >= min_life_ns;
}
