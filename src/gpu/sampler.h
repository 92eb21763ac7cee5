/*
 * sampler.h - the sampler thread: sweeps the GPU backend (NVML, amdgpu
 * sysfs, ...) on a fixed cadence and publishes each snapshot for lock-short,
 * backend-free reading.
 *
 * Readers (any thread) call sampler_current() and get a reference to the
 * latest snapshot; that takes a mutex held only for a pointer copy and a
 * refcount increment, never across a backend call, so a hung driver call can
 * delay the *next* snapshot but never a reader.
 */
#ifndef KGS_GPU_SAMPLER_H
#define KGS_GPU_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/log.h"
#include "core/snapshot.h"
#include "gpu/backend.h"
#include "gpu/sampler_limits.h"

typedef struct sampler sampler_t;

typedef struct {
    uint64_t interval_ns; /* >= SAMPLER_MIN_INTERVAL_NS */
    /* Called on the sampler thread after each publish (e.g. to write an
     * eventfd that wakes the event loop). May be NULL. Must not block. */
    void (*on_publish)(void *user_data);
    /* Called on the sampler thread with each new snapshot before it is
     * published, while it is still private and writable: the agent fills
     * in which pod each GPU process belongs to (from /proc). May be NULL.
     * Should be quick (it delays the publish). */
    void (*before_publish)(snapshot_t *snap, void *user_data);
    void *user_data;
    const logger_t *log; /* borrowed; may be NULL */
} sampler_opts_t;

/*
 * Starts the thread. `backend` is taken: the sampler owns it from now on
 * (even on failure) and frees it in sampler_stop(). The first sweep starts
 * at once. Returns 0, KGS_EINVAL (interval below the minimum; message says
 * so), or KGS_ENOMEM / KGS_EIO (thread creation failed).
 */
int sampler_start(gpu_backend_t backend, const sampler_opts_t *opts, sampler_t **out, char *err,
                  size_t errlen);

/* The latest snapshot (returned: one reference, release with
 * snapshot_unref), or NULL before the first sweep finished. Any thread. */
snapshot_t *sampler_current(sampler_t *s);

/* Waits until a snapshot with seq > `after_seq` is published or `timeout_ns`
 * passes. Returns that snapshot (a reference) or NULL on timeout. */
snapshot_t *sampler_wait_newer(sampler_t *s, uint64_t after_seq, uint64_t timeout_ns);

/* Sweeps that took longer than the interval (each skipped its next tick). */
uint64_t sampler_overruns(sampler_t *s);

/* Stops and joins the thread (waits for a sweep in progress), frees the
 * backend and the last snapshot. NULL does nothing. */
void sampler_stop(sampler_t *s);

/* As sampler_stop, but waits at most timeout_ns for a sweep in progress.
 * Returns false when the thread is still inside the backend (a hung driver
 * call): then nothing is freed -- the thread may still use it -- and the
 * caller should let process exit reclaim it, and not unload the driver's
 * library. 0 = wait forever. */
bool sampler_stop_within(sampler_t *s, uint64_t timeout_ns);

#endif
