/*
 * sampler.c - the one thread that calls the GPU backend (NVML, sysfs).
 *
 * DESIGN
 * Driver calls can block (a GPU falling off the bus, a driver stuck in a
 * reset; an amdgpu sysfs read waits on the GPU too), so no other thread ever
 * makes one: this thread sweeps at ticks
 * t0 + k * interval and publishes an immutable snapshot. Readers copy a
 * pointer under a mutex that is never held across a backend call. A sweep that
 * overruns its interval is counted and logged, and the ticks it overran are
 * skipped rather than queued, so a slow driver cannot cause a burst of
 * back-to-back sweeps.
 */
#include "gpu/sampler.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "core/err.h"

struct sampler {
    gpu_backend_t backend;
    sampler_opts_t opts;
    pthread_t thread;
    bool thread_started;

    pthread_mutex_t lock; /* guards everything below */
    pthread_cond_t cond;  /* signalled on publish and on stop */
    bool stopping;
    snapshot_t *current;
    uint64_t overruns;
};

static void timespec_from_mono(mono_ns_t t, struct timespec *ts) {
    ts->tv_sec = (time_t)(t / NS_PER_SEC);
    ts->tv_nsec = (long)(t % NS_PER_SEC);
}

static void publish(sampler_t *s, snapshot_t *snap) {
    pthread_mutex_lock(&s->lock);
    snapshot_t *old = s->current;
    s->current = snap;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    snapshot_unref(old);
    if (s->opts.on_publish)
        s->opts.on_publish(s->opts.user_data);
}

static void *sampler_main(void *arg) {
    sampler_t *s = arg;
    const uint64_t interval = s->opts.interval_ns;
    mono_ns_t tick = clock_mono_now();
    for (;;) {
        mono_ns_t start = clock_mono_now();
        snapshot_t *snap = NULL;
        if (gpu_backend_sample(&s->backend, start, &snap) == 0) {
            if (s->opts.before_publish)
                s->opts.before_publish(snap, s->opts.user_data);
            publish(s, snap);
        } else
            LOG_ERROR(s->opts.log, "sampler: out of memory building a snapshot");

        mono_ns_t end = clock_mono_now();
        tick = clock_add_sat(tick, interval);
        if (end >= tick) {
            /* Overran: skip every tick already passed, not queue them. */
            uint64_t skipped = (end - tick) / interval + 1;
            tick = clock_add_sat(tick, skipped * interval);
            pthread_mutex_lock(&s->lock);
            s->overruns++;
            pthread_mutex_unlock(&s->lock);
            LOG_WARN(s->opts.log,
                     "sampler: sweep took %.1f ms, longer than the %.1f ms interval; skipped %llu "
                     "tick(s)",
                     (double)(end - start) / 1e6, (double)interval / 1e6,
                     (unsigned long long)skipped);
        }

        struct timespec deadline;
        timespec_from_mono(tick, &deadline);
        pthread_mutex_lock(&s->lock);
        while (!s->stopping) {
            int rc = pthread_cond_timedwait(&s->cond, &s->lock, &deadline);
            if (rc == ETIMEDOUT)
                break;
        }
        bool stop = s->stopping;
        pthread_mutex_unlock(&s->lock);
        if (stop)
            break;
    }
    return NULL;
}

int sampler_start(gpu_backend_t backend, const sampler_opts_t *opts, sampler_t **out, char *err,
                  size_t errlen) {
    if (opts->interval_ns < SAMPLER_MIN_INTERVAL_NS) {
        gpu_backend_deinit(&backend);
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "sampling interval %.0f ms is below the minimum of 100 ms",
                          (double)opts->interval_ns / 1e6);
    }
    sampler_t *s = calloc(1, sizeof *s);
    if (!s) {
        gpu_backend_deinit(&backend);
        return kgs_seterr(err, errlen, KGS_ENOMEM, "start sampler: out of memory");
    }
    s->backend = backend;
    s->opts = *opts;
    pthread_mutex_init(&s->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cond, &ca);
    pthread_condattr_destroy(&ca);

    int rc = pthread_create(&s->thread, NULL, sampler_main, s);
    if (rc != 0) {
        sampler_stop(s);
        return kgs_seterr(err, errlen, KGS_EIO, "start sampler: pthread_create: error %d", rc);
    }
    s->thread_started = true;
    *out = s;
    return 0;
}

snapshot_t *sampler_current(sampler_t *s) {
    pthread_mutex_lock(&s->lock);
    snapshot_t *snap = snapshot_ref(s->current);
    pthread_mutex_unlock(&s->lock);
    return snap;
}

snapshot_t *sampler_wait_newer(sampler_t *s, uint64_t after_seq, uint64_t timeout_ns) {
    struct timespec deadline;
    timespec_from_mono(clock_add_sat(clock_mono_now(), timeout_ns), &deadline);
    snapshot_t *snap = NULL;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        if (s->current && s->current->seq > after_seq) {
            snap = snapshot_ref(s->current);
            break;
        }
        if (s->stopping || pthread_cond_timedwait(&s->cond, &s->lock, &deadline) == ETIMEDOUT)
            break;
    }
    pthread_mutex_unlock(&s->lock);
    return snap;
}

uint64_t sampler_overruns(sampler_t *s) {
    pthread_mutex_lock(&s->lock);
    uint64_t n = s->overruns;
    pthread_mutex_unlock(&s->lock);
    return n;
}

bool sampler_stop_within(sampler_t *s, uint64_t timeout_ns) {
    if (!s)
        return true;
    if (s->thread_started) {
        pthread_mutex_lock(&s->lock);
        s->stopping = true;
        pthread_cond_broadcast(&s->cond);
        pthread_mutex_unlock(&s->lock);
        if (timeout_ns) {
            struct timespec deadline;
            clock_gettime(CLOCK_REALTIME, &deadline); /* pthread_timedjoin_np's clock */
            uint64_t ns = (uint64_t)deadline.tv_nsec + timeout_ns % NS_PER_SEC;
            deadline.tv_sec += (time_t)(timeout_ns / NS_PER_SEC + ns / NS_PER_SEC);
            deadline.tv_nsec = (long)(ns % NS_PER_SEC);
            /* A thread stuck in a hung driver call cannot be stopped: leave it
             * (and everything it may touch) to process exit. */
            if (pthread_timedjoin_np(s->thread, NULL, &deadline) != 0)
                return false;
        } else {
            pthread_join(s->thread, NULL);
        }
    }
    gpu_backend_deinit(&s->backend);
    snapshot_unref(s->current);
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->lock);
    free(s);
    return true;
}

void sampler_stop(sampler_t *s) {
    sampler_stop_within(s, 0);
}
