/*
 * resolver.c - DNS discovery of agents on a helper thread.
 *
 * DESIGN
 * getaddrinfo blocks (for seconds when a nameserver is slow), and the loop
 * thread must never block, so one helper thread owns the lookups (STYLE
 * rule 17). It shares three things with the loop, all under `mu`:
 * `stopping`, and `pending`, the newest outcome not yet taken by the loop.
 * The thread replaces `pending` (an older untaken outcome is simply
 * superseded: only the newest list matters) and writes the resolver's own
 * eventfd; the loop reads the eventfd, takes `pending` under the mutex and
 * calls on_result without holding it. The loop's single loop_wakeup slot is
 * not used: the server already owns it for sampler snapshots.
 *
 * The thread compares each outcome with the last one it handed over and
 * hands over only changes, so a steady Service costs one callback, not one
 * every interval. A failed lookup is handed over as "the last good list
 * plus an error": consumers that simply apply the list keep their agents
 * through a DNS outage (see resolver.h). When memory runs out on the
 * thread the round is skipped and tried again at the next interval.
 *
 * Stopping: resolver_free sets `stopping`, signals the condition variable
 * the thread sleeps on between rounds, and joins. A lookup already in
 * progress cannot be interrupted, so free waits for it; glibc bounds it
 * with resolv.conf's timeout and attempts.
 *
 * The lookup itself sits behind resolver_lookup_t so tests can script
 * answers and failures (STYLE rule 4); production uses getaddrinfo.
 */
#include "net/resolver.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/err.h"

#define DEFAULT_INTERVAL_NS (10 * NS_PER_SEC)
#define ADDR_MAX 64 /* "[" INET6_ADDRSTRLEN "]:" port */

/* The seam: lookup returns 0 or an EAI_* code (EAI_SYSTEM: errno says). */
typedef struct {
    int (*lookup)(void *ud, const char *host, const char *port, struct addrinfo **res);
    void (*release)(void *ud, struct addrinfo *res);
    void *ud;
} resolver_lookup_t;

/* One outcome: a list and maybe an error. */
typedef struct {
    char **addrs;
    size_t n;
    bool failed;
    char error[512];
} outcome_t;

struct resolver {
    loop_t *loop;
    char host[256];
    char port[8];
    uint64_t interval_ns;
    resolver_result_cb on_result;
    void *user_data;
    resolver_lookup_t lk;

    int efd;
    loop_io_t *io;

    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stopping;     /* under mu */
    bool has_pending;  /* under mu */
    outcome_t pending; /* under mu */

    /* The thread's own. */
    outcome_t good; /* the last list that resolved */
    outcome_t sent; /* the last outcome handed over */
    bool sent_any;
};

/* ---- outcomes --------------------------------------------------------------------- */

static void outcome_clear(outcome_t *o) {
    for (size_t i = 0; i < o->n; i++)
        free(o->addrs[i]);
    free(o->addrs);
    memset(o, 0, sizeof *o);
}

static int outcome_copy(outcome_t *dst, const outcome_t *src) {
    memset(dst, 0, sizeof *dst);
    if (src->n) {
        dst->addrs = calloc(src->n, sizeof *dst->addrs);
        if (!dst->addrs)
            return KGS_ENOMEM;
        for (; dst->n < src->n; dst->n++) {
            dst->addrs[dst->n] = strdup(src->addrs[dst->n]);
            if (!dst->addrs[dst->n]) {
                outcome_clear(dst);
                return KGS_ENOMEM;
            }
        }
    }
    dst->failed = src->failed;
    memcpy(dst->error, src->error, sizeof dst->error);
    return 0;
}

static bool outcome_equal(const outcome_t *a, const outcome_t *b) {
    if (a->n != b->n || a->failed != b->failed)
        return false;
    if (a->failed && strcmp(a->error, b->error) != 0)
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->addrs[i], b->addrs[i]) != 0)
            return false;
    return true;
}

static int cmp_str(const void *x, const void *y) {
    return strcmp(*(char *const *)x, *(char *const *)y);
}

/* Formats, sorts and deduplicates the IPv4/IPv6 entries of `ai`. */
static int outcome_from_addrinfo(outcome_t *o, const struct addrinfo *ai, const char *port) {
    memset(o, 0, sizeof *o);
    size_t cap = 0;
    for (const struct addrinfo *p = ai; p; p = p->ai_next)
        cap++;
    if (!cap)
        return 0;
    o->addrs = calloc(cap, sizeof *o->addrs);
    if (!o->addrs)
        return KGS_ENOMEM;
    for (const struct addrinfo *p = ai; p; p = p->ai_next) {
        char ip[INET6_ADDRSTRLEN], buf[ADDR_MAX];
        if (p->ai_family == AF_INET && p->ai_addr) {
            const struct sockaddr_in *sin = (const struct sockaddr_in *)(const void *)p->ai_addr;
            if (!inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof ip))
                continue;
            snprintf(buf, sizeof buf, "%s:%s", ip, port);
        } else if (p->ai_family == AF_INET6 && p->ai_addr) {
            const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)(const void *)p->ai_addr;
            if (!inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof ip))
                continue;
            snprintf(buf, sizeof buf, "[%s]:%s", ip, port);
        } else {
            continue;
        }
        o->addrs[o->n] = strdup(buf);
        if (!o->addrs[o->n]) {
            outcome_clear(o);
            return KGS_ENOMEM;
        }
        o->n++;
    }
    qsort(o->addrs, o->n, sizeof *o->addrs, cmp_str);
    size_t w = 0;
    for (size_t i = 0; i < o->n; i++) {
        if (w > 0 && strcmp(o->addrs[w - 1], o->addrs[i]) == 0)
            free(o->addrs[i]);
        else
            o->addrs[w++] = o->addrs[i];
    }
    o->n = w;
    return 0;
}

/* ---- the thread ------------------------------------------------------------------- */

/* One lookup. Returns 0 with *o set (a list, or the last good list plus an
 * error), or KGS_ENOMEM (skip this round). */
static int resolve_once(resolver_t *r, outcome_t *o) {
    struct addrinfo *ai = NULL;
    int gai = r->lk.lookup(r->lk.ud, r->host, r->port, &ai);
    int saved = errno;
    if (gai == 0) {
        int rc = outcome_from_addrinfo(o, ai, r->port);
        r->lk.release(r->lk.ud, ai);
        if (rc != 0)
            return rc;
        if (o->n > 0) {
            outcome_t copy;
            if (outcome_copy(&copy, o) != 0) {
                outcome_clear(o);
                return KGS_ENOMEM;
            }
            outcome_clear(&r->good);
            r->good = copy;
            return 0;
        }
        outcome_clear(o);
    }
    int rc = outcome_copy(o, &r->good);
    if (rc != 0)
        return rc;
    o->failed = true;
    if (gai == 0)
        snprintf(o->error, sizeof o->error, "resolve %s: no IPv4 or IPv6 address", r->host);
    else if (gai == EAI_SYSTEM)
        snprintf(o->error, sizeof o->error, "resolve %s: %s", r->host, strerror(saved));
    else
        snprintf(o->error, sizeof o->error, "resolve %s: %s", r->host, gai_strerror(gai));
    return 0;
}

/* Hands `o` (taken) to the loop when it differs from the last one sent. */
static void publish(resolver_t *r, outcome_t *o) {
    if (r->sent_any && outcome_equal(o, &r->sent)) {
        outcome_clear(o);
        return;
    }
    outcome_t copy;
    if (outcome_copy(&copy, o) != 0) {
        outcome_clear(o); /* try again next round: `sent` still differs */
        return;
    }
    outcome_clear(&r->sent);
    r->sent = copy;
    r->sent_any = true;
    pthread_mutex_lock(&r->mu);
    outcome_clear(&r->pending);
    r->pending = *o;
    r->has_pending = true;
    pthread_mutex_unlock(&r->mu);
    memset(o, 0, sizeof *o);
    uint64_t one = 1;
    /* EAGAIN: the counter is saturated, so the loop will wake anyway. */
    while (write(r->efd, &one, sizeof one) < 0 && errno == EINTR) {
    }
}

static void *resolver_main(void *arg) {
    resolver_t *r = arg;
    pthread_mutex_lock(&r->mu);
    while (!r->stopping) {
        pthread_mutex_unlock(&r->mu);
        outcome_t o;
        if (resolve_once(r, &o) == 0)
            publish(r, &o);
        struct timespec now, due;
        clock_gettime(CLOCK_MONOTONIC, &now);
        uint64_t at = clock_add_sat((uint64_t)now.tv_sec * NS_PER_SEC + (uint64_t)now.tv_nsec,
                                    r->interval_ns);
        due.tv_sec = (time_t)(at / NS_PER_SEC);
        due.tv_nsec = (long)(at % NS_PER_SEC);
        pthread_mutex_lock(&r->mu);
        while (!r->stopping) {
            if (pthread_cond_timedwait(&r->cv, &r->mu, &due) == ETIMEDOUT)
                break;
        }
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

/* ---- the loop side ---------------------------------------------------------------- */

static void on_event(loop_t *loop, int fd, uint32_t events, void *ud) {
    (void)loop;
    (void)events;
    resolver_t *r = ud;
    uint64_t v;
    while (read(fd, &v, sizeof v) < 0 && errno == EINTR) {
    }
    outcome_t o = {0};
    pthread_mutex_lock(&r->mu);
    bool have = r->has_pending;
    if (have) {
        o = r->pending;
        memset(&r->pending, 0, sizeof r->pending);
        r->has_pending = false;
    }
    pthread_mutex_unlock(&r->mu);
    if (!have)
        return;
    /* The callback may free r: nothing touches r after it. */
    r->on_result(r->user_data, (const char *const *)o.addrs, o.n, o.failed ? o.error : NULL);
    outcome_clear(&o);
}

static int gai_lookup(void *ud, const char *host, const char *port, struct addrinfo **res) {
    (void)ud;
    /* No AI_ADDRCONFIG: with only loopback configured glibc would hide
     * every address, and a family without a route fails at connect. */
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    return getaddrinfo(host, port, &hints, res);
}

static void gai_release(void *ud, struct addrinfo *res) {
    (void)ud;
    if (res)
        freeaddrinfo(res);
}

/* Splits "host:port" / "[v6]:port" and checks the port. */
static int split_name_port(const char *s, char *host, size_t hostlen, char *port, size_t portlen,
                           char *err, size_t errlen) {
    const char *colon;
    const char *h = s;
    size_t hl;
    if (s[0] == '[') {
        const char *end = strchr(s, ']');
        if (!end || end[1] != ':')
            return kgs_seterr(err, errlen, KGS_EINVAL, "agents DNS \"%s\": expected [IPv6]:PORT",
                              s);
        h = s + 1;
        hl = (size_t)(end - h);
        colon = end + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "agents DNS \"%s\": expected NAME:PORT (e.g. agents.ns.svc:6000)", s);
        hl = (size_t)(colon - s);
        if (memchr(s, ':', hl))
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "agents DNS \"%s\": an IPv6 literal needs brackets ([::1]:6000)", s);
    }
    if (hl == 0 || hl >= hostlen)
        return kgs_seterr(err, errlen, KGS_EINVAL, "agents DNS \"%s\": host empty or too long", s);
    const char *p = colon + 1;
    unsigned long v = 0;
    size_t digits = 0;
    for (; *p; p++, digits++) {
        if (*p < '0' || *p > '9' || digits >= 5)
            break;
        v = v * 10 + (unsigned long)(*p - '0');
    }
    if (*p || digits == 0 || v == 0 || v > 65535)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "agents DNS \"%s\": port \"%s\": expected 1-65535", s, colon + 1);
    memcpy(host, h, hl);
    host[hl] = '\0';
    snprintf(port, portlen, "%lu", v);
    return 0;
}

static int resolver_start_with(loop_t *loop, const char *name_port, uint64_t interval_ns,
                               const resolver_lookup_t *lk, resolver_result_cb on_result,
                               void *user_data, resolver_t **out, char *err, size_t errlen) {
    if (!loop || !name_port || !on_result || !out)
        return kgs_seterr(err, errlen, KGS_EINVAL, "agents DNS: missing argument");
    resolver_t *r = calloc(1, sizeof *r);
    if (!r)
        return kgs_seterr(err, errlen, KGS_ENOMEM, "agents DNS: out of memory");
    int rc =
        split_name_port(name_port, r->host, sizeof r->host, r->port, sizeof r->port, err, errlen);
    if (rc != 0)
        goto fail_free;
    r->loop = loop;
    r->interval_ns = interval_ns ? interval_ns : DEFAULT_INTERVAL_NS;
    r->on_result = on_result;
    r->user_data = user_data;
    r->lk = *lk;
    r->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (r->efd < 0) {
        rc = kgs_seterr(err, errlen, KGS_EIO, "agents DNS %s: eventfd: %s", name_port,
                        strerror(errno));
        goto fail_free;
    }
    r->io = loop_io_add(loop, r->efd, EPOLLIN, on_event, r);
    if (!r->io) {
        rc = kgs_seterr(err, errlen, KGS_EIO, "agents DNS %s: epoll: %s", name_port,
                        strerror(errno));
        goto fail_close;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&r->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&r->mu, NULL);
    /* Signals stay with the main thread: the helper blocks them all. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int prc = pthread_create(&r->thread, NULL, resolver_main, r);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (prc != 0) {
        rc = kgs_seterr(err, errlen, KGS_EIO, "agents DNS %s: pthread_create: %s", name_port,
                        strerror(prc));
        goto fail_sync;
    }
    *out = r;
    return 0;

fail_sync:
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    loop_io_remove(loop, r->io);
fail_close:
    close(r->efd);
fail_free:
    free(r);
    return rc;
}

int resolver_start(loop_t *loop, const char *name_port, uint64_t interval_ns,
                   resolver_result_cb on_result, void *user_data, resolver_t **out, char *err,
                   size_t errlen) {
    static const resolver_lookup_t gai = {.lookup = gai_lookup, .release = gai_release};
    return resolver_start_with(loop, name_port, interval_ns, &gai, on_result, user_data, out, err,
                               errlen);
}

void resolver_free(resolver_t *r) {
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    r->stopping = true;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->thread, NULL);
    loop_io_remove(r->loop, r->io);
    close(r->efd);
    outcome_clear(&r->pending);
    outcome_clear(&r->good);
    outcome_clear(&r->sent);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
}
