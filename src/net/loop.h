/*
 * loop.h - the event loop: epoll, monotonic timers, a cross-thread wakeup.
 *
 * One thread runs the loop and owns every descriptor registered with it.
 * Only loop_wakeup() may be called from another thread. Callbacks may add or
 * remove any registration or timer, including their own: a removed
 * registration is never called again, even later in the same epoll batch.
 */
#ifndef KGS_NET_LOOP_H
#define KGS_NET_LOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>

#include "core/clock.h"

typedef struct loop loop_t;
typedef struct loop_io loop_io_t;

/* events: EPOLLIN / EPOLLOUT / EPOLLERR / EPOLLHUP as epoll reported them. */
typedef void (*loop_io_cb)(loop_t *loop, int fd, uint32_t events, void *user_data);

typedef struct loop_timer loop_timer_t;
typedef void (*loop_timer_cb)(loop_t *loop, loop_timer_t *timer, void *user_data);

/* Caller-owned timer storage (embed it in your object). Fields private. */
struct loop_timer {
    mono_ns_t _due;
    loop_timer_cb _cb;
    void *_user_data;
    size_t _heap_index; /* SIZE_MAX when not armed */
};

/* Creates a loop. Returns 0, KGS_ENOMEM or KGS_EIO (epoll/eventfd failed;
 * message in err). */
int loop_new(loop_t **out, char *err, size_t errlen);

/* Frees the loop. Registrations must have been removed; armed timers are
 * simply forgotten. NULL does nothing. */
void loop_free(loop_t *loop);

/* Watches fd (non-blocking, owned by the caller) for `events`. Returns a
 * handle for loop_io_modify/loop_io_remove, or NULL (out of memory, or
 * epoll_ctl failed: errno says why). */
loop_io_t *loop_io_add(loop_t *loop, int fd, uint32_t events, loop_io_cb cb, void *user_data);
int loop_io_modify(loop_t *loop, loop_io_t *io, uint32_t events);
/* Stops watching; the handle is invalid afterwards. Does not close fd, but
 * must be called before the caller closes it. NULL does nothing. */
void loop_io_remove(loop_t *loop, loop_io_t *io);

/* Initialises timer storage (not armed). */
void loop_timer_init(loop_timer_t *t, loop_timer_cb cb, void *user_data);
/* Arms (or re-arms) the timer to fire once at `due` (monotonic). A timer
 * due now that is armed from a descriptor's callback runs in the same
 * iteration, after the descriptors; one armed from a timer's callback runs
 * in the next iteration (never twice in one pass), with no wait for it.
 * Returns 0, or KGS_ENOMEM (the timer is then not armed). */
int loop_timer_start(loop_t *loop, loop_timer_t *t, mono_ns_t due);
/* Disarms; harmless when not armed. */
void loop_timer_stop(loop_t *loop, loop_timer_t *t);
bool loop_timer_armed(const loop_timer_t *t);

/* The callback run on the loop thread after loop_wakeup(); wakeups that
 * arrive before it runs are coalesced into one call. */
void loop_set_wakeup(loop_t *loop, void (*cb)(loop_t *loop, void *user_data), void *user_data);
/* Thread-safe and async-signal-safe: wakes the loop. */
void loop_wakeup(loop_t *loop);

/* Runs until loop_stop(). Returns 0, or KGS_EIO if epoll_wait failed. */
int loop_run(loop_t *loop);
/* One iteration for tests and fuzzing: waits at most max_wait_ms for events
 * (or the next timer), runs their callbacks and the due timers. Returns the
 * number of events handled, or KGS_EIO. */
int loop_run_once(loop_t *loop, int max_wait_ms);

/* Makes loop_run return after the current iteration. Loop thread only. */
void loop_stop(loop_t *loop);

/* The loop's cached monotonic time, refreshed once per iteration. */
mono_ns_t loop_now(const loop_t *loop);

/*
 * One slot for the loop's shared DNS pool (net/resolver.c), which every
 * resolver on this loop finds through it: NULL until set. loop_free runs
 * free_fn(dns) first, before the loop closes its own descriptors, so the
 * pool can still remove its registration. Loop thread only.
 */
void *loop_dns(const loop_t *loop);
void loop_set_dns(loop_t *loop, void *dns, void (*free_fn)(void *dns));

#endif
