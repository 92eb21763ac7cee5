/*
 * kube_backoff.h - when the Kubernetes API client tries again: the delay
 * before every relist and re-watch that follows a failure or a short watch,
 * and the rule that resets it. Pure: no I/O, no clock; the caller passes
 * the times.
 *
 * The delay is exponential with "equal jitter": the n-th delay since the
 * last reset is uniform in [base/2, base], base = min_ns * 2^n capped at
 * max_ns. Half of it is fixed, so a test can bound the number of retries
 * in a window whatever the seed; the other half spreads replicas apart.
 * client-go's reflector does the same (800 ms doubling to 30 s, jittered),
 * and puts every relist behind it.
 *
 * The reset rule (kube_watch_lived): only a watch that lived resets the
 * backoff, never a LIST alone. A watch lived when its last complete line
 * (an event or a bookmark) or its clean end came at least min_life_ns after
 * it was requested. So a server that answers every watch with "410 Gone",
 * with one BOOKMARK and a close, or with a head and then silence, keeps
 * the delay growing; a watch that ran its course (the API server ends it
 * at timeoutSeconds, with bookmarks about every minute before that)
 * resets it. Events are not counted: a server that sends an event and
 * closes at once, over and over, is not healthy either.
 */
#ifndef KGS_KUBE_KUBE_BACKOFF_H
#define KGS_KUBE_KUBE_BACKOFF_H

#include <stdbool.h>
#include <stdint.h>

#include "core/clock.h"

typedef struct {
    uint64_t min_ns, max_ns; /* read-only after init */
    uint64_t base_ns;        /* private: the next delay's upper bound */
    uint64_t rng;            /* private: xorshift64* state, never 0 */
    uint32_t attempts;       /* read-only: delays handed out since the last reset */
} kube_backoff_t;

/*
 * Sets the bounds (min_ns > 0, max_ns >= min_ns: the caller checks) and
 * the jitter seed; seed 0 picks a fixed non-zero seed, so the same seed
 * always gives the same delays.
 */
void kube_backoff_init(kube_backoff_t *b, uint64_t min_ns, uint64_t max_ns, uint64_t seed);

/* The next delay, in [base/2, base]; then base doubles, up to max_ns. */
uint64_t kube_backoff_next(kube_backoff_t *b);

/* Back to min_ns (the next delay is in [min_ns/2, min_ns]). */
void kube_backoff_reset(kube_backoff_t *b);

/*
 * The reset rule above: true when last_data_at - started_at >= min_life_ns.
 * last_data_at 0 (nothing arrived) or before started_at: false.
 */
bool kube_watch_lived(mono_ns_t started_at, mono_ns_t last_data_at, uint64_t min_life_ns);

#endif
