/*
 * loop.c - epoll + a binary heap of timers + an eventfd for wakeups.
 *
 * DESIGN
 * Registrations are heap objects handed to epoll as data.ptr. Removing one
 * inside a callback marks it dead and parks it on a list freed after the
 * batch, so a later event of the same batch for that object is skipped
 * rather than dispatched to freed memory (redis' "refresh after callback",
 * done here by construction). Timers live in the caller's objects; the heap
 * holds pointers and each timer records its heap slot, so stop is O(log n).
 */
#include "net/loop.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/err.h"

struct loop_io {
    int fd;
    loop_io_cb cb;
    void *user_data;
    bool dead;
    loop_io_t *next_dead;
};

struct loop {
    int epfd;
    int wake_fd;
    loop_io_t *wake_io;
    void (*wake_cb)(loop_t *, void *);
    void *wake_ud;
    bool stopping;
    bool in_timers; /* run_timers is running callbacks */
    mono_ns_t now;
    loop_io_t *dead;

    loop_timer_t **heap;
    size_t heap_len, heap_cap;

    void *dns; /* loop_set_dns */
    void (*dns_free)(void *);
};

/* ---- timers: a min-heap on _due ------------------------------------------ */

static void heap_swap(loop_t *l, size_t a, size_t b) {
    loop_timer_t *t = l->heap[a];
    l->heap[a] = l->heap[b];
    l->heap[b] = t;
    l->heap[a]->_heap_index = a;
    l->heap[b]->_heap_index = b;
}

static void heap_up(loop_t *l, size_t i) {
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (l->heap[p]->_due <= l->heap[i]->_due)
            break;
        heap_swap(l, p, i);
        i = p;
    }
}

static void heap_down(loop_t *l, size_t i) {
    for (;;) {
        size_t a = 2 * i + 1, b = a + 1, m = i;
        if (a < l->heap_len && l->heap[a]->_due < l->heap[m]->_due)
            m = a;
        if (b < l->heap_len && l->heap[b]->_due < l->heap[m]->_due)
            m = b;
        if (m == i)
            return;
        heap_swap(l, i, m);
        i = m;
    }
}

void loop_timer_init(loop_timer_t *t, loop_timer_cb cb, void *user_data) {
    t->_due = 0;
    t->_cb = cb;
    t->_user_data = user_data;
    t->_heap_index = SIZE_MAX;
}

bool loop_timer_armed(const loop_timer_t *t) {
    return t->_heap_index != SIZE_MAX;
}

void loop_timer_stop(loop_t *l, loop_timer_t *t) {
    size_t i = t->_heap_index;
    if (i == SIZE_MAX)
        return;
    t->_heap_index = SIZE_MAX;
    l->heap_len--;
    if (i != l->heap_len) {
        l->heap[i] = l->heap[l->heap_len];
        l->heap[i]->_heap_index = i;
        heap_down(l, i);
        heap_up(l, i);
    }
}

int loop_timer_start(loop_t *l, loop_timer_t *t, mono_ns_t due) {
    loop_timer_stop(l, t);
    if (l->in_timers && due <= l->now)
        due = l->now + 1; /* the next iteration (run_timers) */
    if (l->heap_len == l->heap_cap) {
        size_t cap = l->heap_cap ? l->heap_cap * 2 : 64;
        loop_timer_t **nh = realloc(l->heap, cap * sizeof *nh);
        if (!nh)
            return KGS_ENOMEM;
        l->heap = nh;
        l->heap_cap = cap;
    }
    t->_due = due;
    t->_heap_index = l->heap_len;
    l->heap[l->heap_len++] = t;
    heap_up(l, t->_heap_index);
    return 0;
}

static void run_timers(loop_t *l) {
    /* A timer (re-)armed by a timer callback for "now" or earlier runs on
     * the next iteration, after the descriptors that are ready by then:
     * loop_timer_start moves it just past now while this pass runs (a
     * callback that re-arms itself for now would otherwise run again and
     * again in one pass, and every other descriptor would wait). */
    size_t budget = l->heap_len;
    l->in_timers = true;
    while (l->heap_len > 0 && budget-- > 0 && l->heap[0]->_due <= l->now) {
        loop_timer_t *t = l->heap[0];
        loop_timer_stop(l, t);
        t->_cb(l, t, t->_user_data);
    }
    l->in_timers = false;
}

/* ---- registrations ------------------------------------------------------- */

loop_io_t *loop_io_add(loop_t *l, int fd, uint32_t events, loop_io_cb cb, void *user_data) {
    loop_io_t *io = calloc(1, sizeof *io);
    if (!io) {
        errno = ENOMEM;
        return NULL;
    }
    io->fd = fd;
    io->cb = cb;
    io->user_data = user_data;
    struct epoll_event ev = {.events = events, .data.ptr = io};
    if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        int saved = errno;
        free(io);
        errno = saved;
        return NULL;
    }
    return io;
}

int loop_io_modify(loop_t *l, loop_io_t *io, uint32_t events) {
    struct epoll_event ev = {.events = events, .data.ptr = io};
    return epoll_ctl(l->epfd, EPOLL_CTL_MOD, io->fd, &ev) == 0 ? 0 : KGS_EIO;
}

void loop_io_remove(loop_t *l, loop_io_t *io) {
    if (!io || io->dead)
        return;
    epoll_ctl(l->epfd, EPOLL_CTL_DEL, io->fd, NULL);
    io->dead = true;
    io->next_dead = l->dead;
    l->dead = io;
}

static void free_dead(loop_t *l) {
    while (l->dead) {
        loop_io_t *n = l->dead->next_dead;
        free(l->dead);
        l->dead = n;
    }
}

/* ---- wakeup ------------------------------------------------------------- */

static void on_wake(loop_t *l, int fd, uint32_t events, void *ud) {
    (void)events;
    (void)ud;
    uint64_t v;
    /* Drain: all wakeups so far are one event (libuv's async coalescing). */
    while (read(fd, &v, sizeof v) < 0 && errno == EINTR) {
    }
    if (l->wake_cb)
        l->wake_cb(l, l->wake_ud);
}

void loop_set_wakeup(loop_t *l, void (*cb)(loop_t *, void *), void *user_data) {
    l->wake_cb = cb;
    l->wake_ud = user_data;
}

void loop_wakeup(loop_t *l) {
    uint64_t one = 1;
    ssize_t rc;
    do {
        rc = write(l->wake_fd, &one, sizeof one);
    } while (rc < 0 && errno == EINTR);
    /* EAGAIN: the counter is saturated, so a wakeup is pending anyway. */
}

/* ---- lifecycle ------------------------------------------------------------ */

int loop_new(loop_t **out, char *err, size_t errlen) {
    loop_t *l = calloc(1, sizeof *l);
    if (!l)
        return kgs_seterr(err, errlen, KGS_ENOMEM, "create event loop: out of memory");
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    l->wake_fd = -1;
    if (l->epfd < 0)
        goto fail;
    l->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (l->wake_fd < 0)
        goto fail;
    l->wake_io = loop_io_add(l, l->wake_fd, EPOLLIN, on_wake, NULL);
    if (!l->wake_io)
        goto fail;
    l->now = clock_mono_now();
    *out = l;
    return 0;
fail:;
    int saved = errno;
    if (l->wake_fd >= 0)
        close(l->wake_fd);
    if (l->epfd >= 0)
        close(l->epfd);
    free(l);
    return kgs_seterr(err, errlen, KGS_EIO, "create event loop: %s", strerror(saved));
}

void loop_free(loop_t *l) {
    if (!l)
        return;
    if (l->dns && l->dns_free)
        l->dns_free(l->dns);
    l->dns = NULL;
    loop_io_remove(l, l->wake_io);
    free_dead(l);
    close(l->wake_fd);
    close(l->epfd);
    free(l->heap);
    free(l);
}

void loop_stop(loop_t *l) {
    l->stopping = true;
}

mono_ns_t loop_now(const loop_t *l) {
    return l->now;
}

void *loop_dns(const loop_t *l) {
    return l->dns;
}

void loop_set_dns(loop_t *l, void *dns, void (*free_fn)(void *)) {
    l->dns = dns;
    l->dns_free = free_fn;
}

/* One iteration: wait at most max_wait_ms (-1: until the next timer) for
 * events, run their callbacks and the due timers. Returns the number of
 * events, or KGS_EIO. */
static int loop_iterate(loop_t *l, int max_wait_ms) {
    struct epoll_event evs[64];
    int timeout_ms = max_wait_ms;
    l->now = clock_mono_now();
    if (l->heap_len > 0) {
        mono_ns_t due = l->heap[0]->_due;
        /* Round up so a timer never fires early and spins. */
        int t = due <= l->now ? 0 : (int)((due - l->now + NS_PER_MS - 1) / NS_PER_MS);
        if (t > 60000)
            t = 60000;
        if (timeout_ms < 0 || t < timeout_ms)
            timeout_ms = t;
    }
    int n = epoll_wait(l->epfd, evs, 64, timeout_ms);
    if (n < 0)
        return errno == EINTR ? 0 : KGS_EIO;
    l->now = clock_mono_now();
    for (int i = 0; i < n; i++) {
        loop_io_t *io = evs[i].data.ptr;
        if (io->dead)
            continue;
        io->cb(l, io->fd, evs[i].events, io->user_data);
    }
    run_timers(l);
    free_dead(l);
    return n;
}

int loop_run(loop_t *l) {
    l->stopping = false;
    while (!l->stopping)
        if (loop_iterate(l, -1) < 0)
            return KGS_EIO;
    return 0;
}

int loop_run_once(loop_t *l, int max_wait_ms) {
    return loop_iterate(l, max_wait_ms < 0 ? 0 : max_wait_ms);
}
