/*
 * resolver.c - DNS resolution off the loop: one shared pool of lookup
 * threads per loop.
 *
 * DESIGN
 * getaddrinfo blocks (for seconds when a nameserver is slow), and the loop
 * thread must never block, so lookups run on helper threads (STYLE rule 17).
 * They are a fixed pool, POOL_THREADS of them for the whole loop, started
 * when the first resolver starts and joined by loop_free (loop_set_dns):
 * a resolver is a name, a cadence and a timer on the loop, not a thread. A
 * thread per name let anyone who can write a trigger with 500 distinct
 * unresolvable names make 500 threads and 500 eventfds (issue 16); now that
 * costs POOL_THREADS threads and one eventfd, whatever the count.
 *
 * Each round is a job: the loop queues it when the resolver's timer fires,
 * a thread takes it, runs the lookup and parks the result on a done list,
 * and the pool's one eventfd wakes the loop, which turns results into
 * outcomes and calls on_result. The threads share only the two queues, the
 * done list and the counters below, all under `mu`; everything else
 * (outcomes, timers, the negative cache) is the loop's.
 *
 * Two classes of names. The scaler's own (agents DNS, the Kubernetes API,
 * agent connections: resolver_start) are queued without a bound and taken
 * first. Names a caller supplied (demand sources: resolver_start_untrusted)
 * wait in a queue of at most POOL_MAX_UNTRUSTED_PENDING jobs, and at most
 * POOL_UNTRUSTED_THREADS threads run them at once, so one thread is always
 * there for the scaler's own names however slow a hostile nameserver is. A
 * round that finds the queue full is put off (POOL_FULL_RETRY_NS) and, for
 * a resolver that has delivered nothing yet, reported as an error.
 *
 * A failed lookup is remembered for NEG_CACHE_NS (never longer than the
 * resolver's own interval) in a small table on the loop: another resolver
 * of the same name (500 triggers naming one dead host) gets the cached
 * error instead of a lookup.
 *
 * A failed resolution is handed over as "the last good list plus an error":
 * consumers that simply apply the list keep their agents through a DNS
 * outage (see resolver.h). An outcome equal to the last one delivered is
 * not delivered again, so a steady Service costs one callback, not one
 * every interval. When memory runs out the round is skipped and tried again
 * at the next interval.
 *
 * Freeing a resolver never waits: a job in a thread is abandoned (its owner
 * cleared) and freed by whoever sees it next. Only loop_free joins the
 * threads, waiting for lookups in progress, which glibc bounds with
 * resolv.conf's timeout and attempts.
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

#define POOL_THREADS 4
#define POOL_UNTRUSTED_THREADS 3 /* one thread always free for the scaler's own names */
#define POOL_MAX_UNTRUSTED_PENDING 256
#define POOL_FULL_RETRY_NS (1 * NS_PER_SEC)
#define NEG_CACHE_NS (5 * NS_PER_SEC)
#define NEG_CACHE_SLOTS 256

typedef struct pool pool_t;
typedef struct job job_t;

struct resolver {
    loop_t *loop;
    pool_t *pool;
    char host[256];
    char port[8];
    uint64_t interval_ns;
    bool untrusted;
    resolver_result_cb on_result;
    void *user_data;
    resolver_lookup_t lk;
    loop_timer_t timer; /* the next round */
    job_t *job;         /* the round in a queue or a thread, or NULL */

    outcome_t good; /* the last list that resolved */
    outcome_t sent; /* the last outcome handed over */
    bool sent_any;
};

/* One round. The thread fills gai / saved_errno / res; `owner` is NULL
 * once the resolver was freed (the job is then the pool's to free). */
struct job {
    job_t *next;
    resolver_t *owner; /* under pool->mu */
    bool untrusted;
    resolver_lookup_t lk;
    char host[256];
    char port[8];
    int gai, saved_errno;
    bool oom;
    outcome_t res;
};

/* A name whose lookup failed, for NEG_CACHE_NS. */
typedef struct {
    char host[256];
    int (*lookup)(void *, const char *, const char *, struct addrinfo **);
    void *ud;
    mono_ns_t at; /* 0: free slot */
    char error[512];
} neg_entry_t;

struct pool {
    loop_t *loop;
    int efd;
    loop_io_t *io;
    pthread_t threads[POOL_THREADS];
    unsigned nthreads;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* under mu */
    bool stopping;
    job_t *own_head, **own_tail;             /* the scaler's own names, first */
    job_t *untrusted_head, **untrusted_tail; /* names callers supplied */
    unsigned untrusted_queued, untrusted_running;
    job_t *done;
    /* the loop's */
    neg_entry_t neg[NEG_CACHE_SLOTS];
    unsigned neg_next;
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

/* ---- the threads ------------------------------------------------------------------ */

static void job_free(job_t *j) {
    if (!j)
        return;
    outcome_clear(&j->res);
    free(j);
}

/* Whether a thread may take a job now (under mu). */
static bool pool_has_work(const pool_t *p) {
    return p->own_head || (p->untrusted_head && p->untrusted_running < POOL_UNTRUSTED_THREADS);
}

static job_t *pool_pop(pool_t *p) {
    job_t *j;
    if (p->own_head) {
        j = p->own_head;
        p->own_head = j->next;
        if (!p->own_head)
            p->own_tail = &p->own_head;
    } else {
        j = p->untrusted_head;
        p->untrusted_head = j->next;
        if (!p->untrusted_head)
            p->untrusted_tail = &p->untrusted_head;
        p->untrusted_queued--;
        p->untrusted_running++;
    }
    j->next = NULL;
    return j;
}

static void *pool_main(void *arg) {
    pool_t *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stopping && !pool_has_work(p))
            pthread_cond_wait(&p->cv, &p->mu);
        if (p->stopping)
            break;
        job_t *j = pool_pop(p);
        bool abandoned = j->owner == NULL;
        pthread_mutex_unlock(&p->mu);
        if (!abandoned) {
            struct addrinfo *ai = NULL;
            j->gai = j->lk.lookup(j->lk.ud, j->host, j->port, &ai);
            j->saved_errno = errno;
            if (j->gai == 0) {
                j->oom = outcome_from_addrinfo(&j->res, ai, j->port) != 0;
                j->lk.release(j->lk.ud, ai);
            }
        }
        pthread_mutex_lock(&p->mu);
        if (j->untrusted) {
            p->untrusted_running--;
            pthread_cond_signal(&p->cv); /* an untrusted slot is free */
        }
        if (abandoned || j->owner == NULL) {
            job_free(j);
            continue;
        }
        j->next = p->done;
        p->done = j;
        uint64_t one = 1;
        /* EAGAIN: the counter is saturated, so the loop will wake anyway. */
        while (write(p->efd, &one, sizeof one) < 0 && errno == EINTR) {
        }
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* ---- the loop side ---------------------------------------------------------------- */

static void round_due(loop_t *loop, loop_timer_t *t, void *ud);

static void schedule_round(resolver_t *r, uint64_t after_ns) {
    loop_timer_start(r->loop, &r->timer, clock_add_sat(loop_now(r->loop), after_ns));
}

/* Hands `o` (taken) to on_result when it differs from the last outcome
 * delivered. The callback may free r: nothing touches r after it. */
static void deliver(resolver_t *r, outcome_t *o) {
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
    outcome_t local = *o;
    memset(o, 0, sizeof *o);
    r->on_result(r->user_data, (const char *const *)local.addrs, local.n,
                 local.failed ? local.error : NULL);
    outcome_clear(&local);
}

/* The last good list plus `error`, delivered. */
static void deliver_failure(resolver_t *r, const char *error) {
    outcome_t o;
    if (outcome_copy(&o, &r->good) != 0)
        return;
    o.failed = true;
    snprintf(o.error, sizeof o.error, "%s", error);
    deliver(r, &o);
}

static neg_entry_t *neg_find(pool_t *p, const resolver_t *r, mono_ns_t now) {
    uint64_t ttl = r->interval_ns < NEG_CACHE_NS ? r->interval_ns : NEG_CACHE_NS;
    for (unsigned i = 0; i < NEG_CACHE_SLOTS; i++) {
        neg_entry_t *e = &p->neg[i];
        if (e->at && now - e->at < ttl && e->lookup == r->lk.lookup && e->ud == r->lk.ud &&
            strcmp(e->host, r->host) == 0)
            return e;
    }
    return NULL;
}

static void neg_put(pool_t *p, const resolver_t *r, mono_ns_t now, const char *error) {
    neg_entry_t *e = NULL;
    for (unsigned i = 0; i < NEG_CACHE_SLOTS && !e; i++)
        if (p->neg[i].at && p->neg[i].lookup == r->lk.lookup && p->neg[i].ud == r->lk.ud &&
            strcmp(p->neg[i].host, r->host) == 0)
            e = &p->neg[i];
    if (!e) {
        e = &p->neg[p->neg_next]; /* round robin: the oldest entries go first */
        p->neg_next = (p->neg_next + 1) % NEG_CACHE_SLOTS;
    }
    snprintf(e->host, sizeof e->host, "%s", r->host);
    e->lookup = r->lk.lookup;
    e->ud = r->lk.ud;
    e->at = now ? now : 1;
    snprintf(e->error, sizeof e->error, "%s", error);
}

/* The end of job j for its owner r: the outcome (a list, or the last
 * good list plus an error) and the next round. Takes j. */
static void round_done(resolver_t *r, job_t *j) {
    pool_t *p = r->pool;
    r->job = NULL;
    schedule_round(r, r->interval_ns);
    if (j->oom) {
        job_free(j);
        return;
    }
    if (j->gai == 0 && j->res.n > 0) {
        outcome_t copy;
        if (outcome_copy(&copy, &j->res) != 0) {
            job_free(j);
            return;
        }
        outcome_clear(&r->good);
        r->good = copy;
        outcome_t o = j->res;
        memset(&j->res, 0, sizeof j->res);
        job_free(j);
        deliver(r, &o);
        return;
    }
    char error[512];
    if (j->gai == 0)
        snprintf(error, sizeof error, "resolve %s: no IPv4 or IPv6 address", r->host);
    else if (j->gai == EAI_SYSTEM)
        snprintf(error, sizeof error, "resolve %s: %s", r->host, strerror(j->saved_errno));
    else
        snprintf(error, sizeof error, "resolve %s: %s", r->host, gai_strerror(j->gai));
    job_free(j);
    neg_put(p, r, loop_now(r->loop), error);
    deliver_failure(r, error);
}

static void on_pool_event(loop_t *loop, int fd, uint32_t events, void *ud) {
    (void)loop;
    (void)events;
    pool_t *p = ud;
    uint64_t v;
    while (read(fd, &v, sizeof v) < 0 && errno == EINTR) {
    }
    pthread_mutex_lock(&p->mu);
    job_t *done = p->done;
    p->done = NULL;
    pthread_mutex_unlock(&p->mu);
    /* Oldest first. A callback may free other resolvers whose jobs are in
     * this list: resolver_free clears their owner, and they are freed here. */
    job_t *rev = NULL;
    while (done) {
        job_t *n = done->next;
        done->next = rev;
        rev = done;
        done = n;
    }
    while (rev) {
        job_t *j = rev;
        rev = j->next;
        j->next = NULL;
        if (!j->owner)
            job_free(j);
        else
            round_done(j->owner, j);
    }
}

/* A round: a cached failure, the queue full, or a job queued. */
static void round_due(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)t;
    resolver_t *r = ud;
    pool_t *p = r->pool;
    mono_ns_t now = loop_now(loop);
    if (r->job)
        return; /* still in a queue or a thread; the next round follows it */
    const neg_entry_t *e = neg_find(p, r, now);
    if (e) {
        char error[512];
        snprintf(error, sizeof error, "%s", e->error);
        schedule_round(r, r->interval_ns);
        deliver_failure(r, error); /* may free r */
        return;
    }
    pthread_mutex_lock(&p->mu);
    bool full = r->untrusted && p->untrusted_queued >= POOL_MAX_UNTRUSTED_PENDING;
    pthread_mutex_unlock(&p->mu);
    if (full) {
        schedule_round(r,
                       r->interval_ns < POOL_FULL_RETRY_NS ? r->interval_ns : POOL_FULL_RETRY_NS);
        if (!r->sent_any) {
            char error[512];
            snprintf(error, sizeof error,
                     "resolve %s: %u lookups are already waiting for the DNS threads; "
                     "retrying",
                     r->host, (unsigned)POOL_MAX_UNTRUSTED_PENDING);
            deliver_failure(r, error); /* may free r */
        }
        return;
    }
    job_t *j = calloc(1, sizeof *j);
    if (!j) {
        schedule_round(r, r->interval_ns);
        return;
    }
    j->owner = r;
    j->untrusted = r->untrusted;
    j->lk = r->lk;
    memcpy(j->host, r->host, sizeof j->host);
    memcpy(j->port, r->port, sizeof j->port);
    r->job = j;
    pthread_mutex_lock(&p->mu);
    if (j->untrusted) {
        *p->untrusted_tail = j;
        p->untrusted_tail = &j->next;
        p->untrusted_queued++;
    } else {
        *p->own_tail = j;
        p->own_tail = &j->next;
    }
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

static void pool_free(void *arg) {
    pool_t *p = arg;
    pthread_mutex_lock(&p->mu);
    p->stopping = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    job_t *lists[3] = {p->own_head, p->untrusted_head, p->done};
    for (unsigned i = 0; i < 3; i++)
        while (lists[i]) {
            job_t *n = lists[i]->next;
            if (lists[i]->owner)
                lists[i]->owner->job = NULL;
            job_free(lists[i]);
            lists[i] = n;
        }
    loop_io_remove(p->loop, p->io);
    close(p->efd);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p);
}

/* The loop's pool, started on first use. */
static pool_t *pool_get(loop_t *loop, char *err, size_t errlen) {
    pool_t *p = loop_dns(loop);
    if (p)
        return p;
    p = calloc(1, sizeof *p);
    if (!p) {
        kgs_seterr(err, errlen, KGS_ENOMEM, "DNS pool: out of memory");
        return NULL;
    }
    p->loop = loop;
    p->own_tail = &p->own_head;
    p->untrusted_tail = &p->untrusted_head;
    p->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (p->efd < 0) {
        kgs_seterr(err, errlen, KGS_EIO, "DNS pool: eventfd: %s", strerror(errno));
        free(p);
        return NULL;
    }
    p->io = loop_io_add(loop, p->efd, EPOLLIN, on_pool_event, p);
    if (!p->io) {
        kgs_seterr(err, errlen, KGS_EIO, "DNS pool: epoll: %s", strerror(errno));
        close(p->efd);
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    /* Signals stay with the main thread: the helpers block them all. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int prc = 0;
    for (; p->nthreads < POOL_THREADS; p->nthreads++) {
        prc = pthread_create(&p->threads[p->nthreads], NULL, pool_main, p);
        if (prc != 0)
            break;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (p->nthreads == 0) {
        kgs_seterr(err, errlen, KGS_EIO, "DNS pool: pthread_create: %s", strerror(prc));
        pool_free(p);
        return NULL;
    }
    loop_set_dns(loop, p, pool_free);
    return p;
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
                               const resolver_lookup_t *lk, bool untrusted,
                               resolver_result_cb on_result, void *user_data, resolver_t **out,
                               char *err, size_t errlen) {
    if (!loop || !name_port || !on_result || !out)
        return kgs_seterr(err, errlen, KGS_EINVAL, "agents DNS: missing argument");
    resolver_t *r = calloc(1, sizeof *r);
    if (!r)
        return kgs_seterr(err, errlen, KGS_ENOMEM, "agents DNS: out of memory");
    int rc =
        split_name_port(name_port, r->host, sizeof r->host, r->port, sizeof r->port, err, errlen);
    if (rc != 0) {
        free(r);
        return rc;
    }
    r->pool = pool_get(loop, err, errlen);
    if (!r->pool) {
        free(r);
        return KGS_EIO;
    }
    r->loop = loop;
    r->interval_ns = interval_ns ? interval_ns : DEFAULT_INTERVAL_NS;
    r->untrusted = untrusted;
    r->on_result = on_result;
    r->user_data = user_data;
    r->lk = *lk;
    loop_timer_init(&r->timer, round_due, r);
    /* The first round on the next loop turn: on_result never runs in here. */
    loop_timer_start(loop, &r->timer, loop_now(loop));
    *out = r;
    return 0;
}

static const resolver_lookup_t gai = {.lookup = gai_lookup, .release = gai_release};

int resolver_start(loop_t *loop, const char *name_port, uint64_t interval_ns,
                   resolver_result_cb on_result, void *user_data, resolver_t **out, char *err,
                   size_t errlen) {
    return resolver_start_with(loop, name_port, interval_ns, &gai, false, on_result, user_data, out,
                               err, errlen);
}

int resolver_start_untrusted(loop_t *loop, const char *name_port, uint64_t interval_ns,
                             resolver_result_cb on_result, void *user_data, resolver_t **out,
                             char *err, size_t errlen) {
    return resolver_start_with(loop, name_port, interval_ns, &gai, true, on_result, user_data, out,
                               err, errlen);
}

void resolver_free(resolver_t *r) {
    if (!r)
        return;
    loop_timer_stop(r->loop, &r->timer);
    if (r->job) {
        /* Queued or in a thread: the pool frees it (see pool_main,
         * on_pool_event). */
        pthread_mutex_lock(&r->pool->mu);
        r->job->owner = NULL;
        pthread_mutex_unlock(&r->pool->mu);
    }
    outcome_clear(&r->good);
    outcome_clear(&r->sent);
    free(r);
}
