/*
 * http_server.c - HTTP/1.1 for probes and /metrics, on the event loop.
 *
 * DESIGN
 * Each connection keeps the unparsed input in a fixed buffer one byte
 * larger than the longest head we accept (http1 reports TOO_LARGE as soon as
 * that is exceeded), and the unsent output in a growable buffer. One driver,
 * conn_drive(), runs after every event: parse what is buffered, read more
 * while there is room, write what is queued, then choose the epoll interest
 * and the single timer from the state. Reading stops while more than
 * OUT_HIGH_WATER bytes wait to be sent, so a client that pipelines requests
 * and never reads cannot make us buffer without bound.
 *
 * A connection closed after an error answer is "lingered": we shut down our
 * write side and discard input for a moment before close(), because
 * closing a socket with unread input makes the kernel send RST, which can
 * destroy the answer before the client reads it (the classic lingering
 * close of Apache and nginx).
 *
 * The ports must answer kubelet's probes whatever else connects, so a
 * full server makes room instead of refusing: a new connection beyond
 * max_connections evicts the one least worth keeping (one waiting for a
 * request before one lingering, before one with half a head, before one
 * being answered; the oldest first within each). A connection waiting for
 * a request, its first or a keep-alive one, is closed after the head
 * timeout (or the idle timeout, if shorter). Out of descriptors
 * (EMFILE/ENFILE), the server's reserve descriptor admits one connection,
 * and is taken back when a connection closes; without it an idle
 * connection is evicted to free one; only with neither are accepts paused
 * for ACCEPT_PAUSE_NS. Accepts go ACCEPT_BATCH at a time, so the new
 * connections' requests are read between batches and a flood cannot evict
 * a probe before it is read.
 *
 * The handler may free the server (rule 16): http_server_free() during a
 * dispatch only marks it, and the dispatcher finishes the free on return
 * and unwinds with -1 without touching the connection again. Every
 * function that can close a connection returns -1 when it did.
 */
#include "net/http_server.h"
#include "net/sock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/err.h"

#define DEFAULT_MAX_CONNECTIONS 64u
#define DEFAULT_IDLE_TIMEOUT_NS (30 * NS_PER_SEC)
#define DEFAULT_HEAD_TIMEOUT_NS (10 * NS_PER_SEC)
#define LINGER_NS (2 * NS_PER_SEC)
#define ACCEPT_PAUSE_NS (100 * NS_PER_MS)
#define ACCEPT_BATCH 16
#define LOG_INTERVAL_NS (10 * NS_PER_SEC)
#define OUT_HIGH_WATER (256u * 1024u)
#define LINGER_DISCARD_MAX (64u * 1024u) /* per event, so a flood cannot hold the loop */

typedef enum {
    C_OPEN,    /* reading requests */
    C_CLOSING, /* the last answer is queued; write it, then linger */
    C_LINGER   /* write side shut; discarding input until EOF or timeout */
} conn_state_t;

typedef struct http_conn http_conn_t;
struct http_conn {
    http_server_t *srv;
    int fd;
    loop_io_t *io;
    uint32_t events;
    loop_timer_t timer;
    conn_state_t state;
    bool read_eof;
    mono_ns_t head_started; /* first byte of the current partial head; 0 = none */
    mono_ns_t last_progress;
    mono_ns_t linger_until;
    char *out;
    size_t out_off, out_len, out_cap;
    size_t in_len;
    http_conn_t *prev, *next;
    char in[HTTP1_MAX_HEAD_BYTES + 1];
};

struct http_server {
    loop_t *loop;
    int fd;
    loop_io_t *io;
    uint16_t port;
    http_server_opts_t opts;
    http_handler_fn handler;
    void *user_data;
    prom_buf_t scratch;
    http_conn_t *conns;
    unsigned nconns;
    loop_timer_t accept_timer;
    int reserve_fd; /* see sock_accept_reserved; -1 while spent */
    uint64_t evicted, reserved;
    log_ratelimit_t log_rl;
    int dispatching;
    bool free_pending;
};

static void server_destroy(http_server_t *s);

/* ---- connection lifetime -------------------------------------------------- */

static void conn_close(http_conn_t *c) {
    http_server_t *s = c->srv;
    loop_timer_stop(s->loop, &c->timer);
    loop_io_remove(s->loop, c->io);
    close(c->fd);
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->nconns--;
    free(c->out);
    free(c);
    if (s->reserve_fd < 0)
        s->reserve_fd = sock_reserve_open(); /* take the reserve back first */
}

static size_t out_pending(const http_conn_t *c) {
    return c->out_len - c->out_off;
}

/* Appends to the output buffer. Returns 0 or KGS_ENOMEM. */
static int out_append(http_conn_t *c, const char *p, size_t n) {
    if (n == 0)
        return 0;
    if (c->out_off > 0 && c->out_off == c->out_len)
        c->out_off = c->out_len = 0;
    if (n > c->out_cap - c->out_len) {
        if (c->out_off > 0) { /* compact first */
            memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
            c->out_len -= c->out_off;
            c->out_off = 0;
        }
        if (n > SIZE_MAX / 2 - c->out_len)
            return KGS_ENOMEM;
        size_t need = c->out_len + n;
        if (need > c->out_cap) {
            size_t cap = c->out_cap ? c->out_cap : 4096;
            while (cap < need)
                cap *= 2;
            char *nb = realloc(c->out, cap);
            if (!nb)
                return KGS_ENOMEM;
            c->out = nb;
            c->out_cap = cap;
        }
    }
    memcpy(c->out + c->out_len, p, n);
    c->out_len += n;
    return 0;
}

/* Queues one answer. extra_header (may be NULL) is one "Name: value\r\n"
 * line added to the head. Returns 0 or KGS_ENOMEM. */
static int queue_response(http_conn_t *c, int status, const char *ctype, const char *body,
                          size_t body_len, bool keep_alive, bool head_only,
                          const char *extra_header) {
    char head[1024];
    size_t n = http1_format_head(head, sizeof head, status, ctype, body_len, keep_alive);
    size_t extra = extra_header ? strlen(extra_header) : 0;
    if (n + extra >= sizeof head) {
        /* Only a content type of hundreds of bytes gets here. */
        n = http1_format_head(head, sizeof head, 500, NULL, 0, false);
        body_len = 0;
        extra = 0;
        c->state = C_CLOSING;
    }
    if (extra) {
        /* Insert before the blank line that ends the head. */
        memcpy(head + n - 2, extra_header, extra);
        memcpy(head + n - 2 + extra, "\r\n", 2);
        n += extra;
    }
    int rc = out_append(c, head, n);
    if (rc == 0 && !head_only)
        rc = out_append(c, body, body_len);
    return rc;
}

static const char *const status_text_plain = "text/plain; charset=utf-8";

/* Queues an error answer with a one-line explanation and stops reading. */
static int queue_error(http_conn_t *c, int status, const char *why) {
    char body[256];
    int n = snprintf(body, sizeof body, "%d %s%s%s\n", status, http1_reason(status),
                     why ? ": " : "", why ? why : "");
    size_t len = n < 0 ? 0 : (size_t)n < sizeof body ? (size_t)n : sizeof body - 1;
    c->state = C_CLOSING;
    c->in_len = 0;
    c->head_started = 0;
    return queue_response(c, status, status_text_plain, body, len, false, false,
                          status == 405 ? "Allow: GET, HEAD\r\n" : NULL);
}

static bool span_is(const char *p, size_t n, const char *lit) {
    return n == strlen(lit) && memcmp(p, lit, n) == 0;
}

/* Runs the handler for one request and queues the answer. Returns 0, -1
 * if the server was freed by the handler (c is gone), or KGS_ENOMEM. */
static int dispatch(http_conn_t *c, const http1_request_t *req) {
    http_server_t *s = c->srv;
    bool head = span_is(req->method, req->method_len, "HEAD");
    if (!head && !span_is(req->method, req->method_len, "GET"))
        return queue_error(c, 405, "only GET and HEAD are served");
    http_response_t resp = {404, status_text_plain, "not found\n", 10};
    prom_buf_reset(&s->scratch);
    s->dispatching++;
    s->handler(req, &resp, &s->scratch, s->user_data);
    s->dispatching--;
    if (s->free_pending && s->dispatching == 0) {
        server_destroy(s);
        return -1;
    }
    bool keep = req->keep_alive;
    if (s->scratch.failed || resp.status < 100 || resp.status > 599 ||
        (!resp.body && resp.body_len)) {
        resp = (http_response_t){500, status_text_plain, "internal error\n", 15};
        keep = false;
    }
    if (!keep)
        c->state = C_CLOSING;
    return queue_response(c, resp.status, resp.content_type, resp.body, resp.body_len, keep, head,
                          NULL);
}

/* Parses and answers buffered requests while the output is not backed up.
 * Returns 0, or -1 when c was closed or freed. */
static int conn_process(http_conn_t *c) {
    while (c->state == C_OPEN && c->in_len > 0 && out_pending(c) < OUT_HIGH_WATER) {
        http1_request_t req;
        size_t used = 0;
        const char *why = NULL;
        int r = http1_parse_request(c->in, c->in_len, &req, &used, &why);
        int rc = 0;
        if (r == HTTP1_INCOMPLETE && c->in_len < sizeof c->in)
            break;
        if (r == HTTP1_INCOMPLETE) /* cannot happen (http1 bounds the head); never spin */
            r = HTTP1_ERR_TOO_LARGE;
        if (r == HTTP1_ERR_BAD_REQUEST)
            rc = queue_error(c, why && strstr(why, "bodies") ? 413 : 400, why);
        else if (r == HTTP1_ERR_TOO_LARGE)
            rc = queue_error(c, 431, why);
        else if (r == HTTP1_ERR_VERSION)
            rc = queue_error(c, 505, why);
        else if (r == HTTP1_COMPLETE) {
            rc = dispatch(c, &req);
            if (rc == -1)
                return -1;
            if (c->state == C_OPEN) {
                memmove(c->in, c->in + used, c->in_len - used);
                c->in_len -= used;
                c->head_started = c->in_len ? loop_now(c->srv->loop) : 0;
            } else {
                c->in_len = 0; /* closing: what follows is never answered */
                c->head_started = 0;
            }
        } else
            rc = queue_error(c, 400, "unparseable request");
        if (rc == KGS_ENOMEM) {
            conn_close(c);
            return -1;
        }
    }
    return 0;
}

/* Reads and processes until EAGAIN, EOF, a full buffer or backed-up
 * output. Returns 0, or -1 when c was closed or freed. */
static int conn_pump(http_conn_t *c) {
    for (;;) {
        if (conn_process(c) < 0)
            return -1;
        if (c->state != C_OPEN || c->read_eof || out_pending(c) >= OUT_HIGH_WATER ||
            c->in_len == sizeof c->in)
            return 0;
        ssize_t n = read(c->fd, c->in + c->in_len, sizeof c->in - c->in_len);
        if (n > 0) {
            mono_ns_t now = loop_now(c->srv->loop);
            if (c->in_len == 0)
                c->head_started = now;
            c->in_len += (size_t)n;
            c->last_progress = now;
        } else if (n == 0) {
            c->read_eof = true;
        } else if (errno == EINTR) {
            continue;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            return 0;
        } else {
            conn_close(c); /* ECONNRESET and friends */
            return -1;
        }
    }
}

/* Writes what is queued. Returns 0, or -1 when c was closed. */
static int conn_flush(http_conn_t *c) {
    while (out_pending(c) > 0) {
        /* MSG_NOSIGNAL: a peer that went away must not SIGPIPE us. */
        ssize_t n = send(c->fd, c->out + c->out_off, out_pending(c), MSG_NOSIGNAL);
        if (n > 0) {
            c->out_off += (size_t)n;
            c->last_progress = loop_now(c->srv->loop);
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return 0;
        } else {
            conn_close(c);
            return -1;
        }
    }
    c->out_off = c->out_len = 0;
    return 0;
}

/* Discards input of a lingering connection. Returns 0, or -1 when c was
 * closed (EOF, error). */
static int conn_discard(http_conn_t *c) {
    char buf[4096];
    size_t total = 0;
    while (total < LINGER_DISCARD_MAX) {
        ssize_t n = read(c->fd, buf, sizeof buf);
        if (n > 0) {
            total += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return 0;
        } else {
            conn_close(c);
            return -1;
        }
    }
    return 0;
}

static void conn_on_timer(loop_t *loop, loop_timer_t *t, void *ud);
static void conn_drive(http_conn_t *c);

/* Chooses epoll interest and the timer from the state, or closes a
 * connection that has nothing left to do. */
static void conn_settle(http_conn_t *c) {
    http_server_t *s = c->srv;
    mono_ns_t now = loop_now(s->loop);
    if (c->state == C_CLOSING && out_pending(c) == 0) {
        if (c->read_eof) {
            conn_close(c);
            return;
        }
        shutdown(c->fd, SHUT_WR);
        c->state = C_LINGER;
        c->linger_until = clock_add_sat(now, LINGER_NS);
        if (conn_discard(c) < 0)
            return;
    }
    if (c->state == C_OPEN && c->read_eof && out_pending(c) == 0) {
        conn_close(c); /* the peer is done; a partial head can never complete */
        return;
    }
    uint32_t want = 0;
    if (c->state == C_LINGER ||
        (c->state == C_OPEN && !c->read_eof && out_pending(c) < OUT_HIGH_WATER))
        want |= EPOLLIN;
    if (out_pending(c) > 0)
        want |= EPOLLOUT;
    if (want != c->events) {
        if (loop_io_modify(s->loop, c->io, want) != 0) {
            conn_close(c);
            return;
        }
        c->events = want;
    }
    mono_ns_t due;
    if (c->state == C_LINGER)
        due = c->linger_until;
    else if (out_pending(c) == 0 && c->state == C_OPEN && c->head_started)
        due = clock_add_sat(c->head_started, s->opts.head_timeout_ns);
    else if (out_pending(c) == 0 && c->state == C_OPEN)
        /* Waiting for a request (none yet, or the next keep-alive one):
         * a zero-byte connection gets no longer than a slow head. */
        due = clock_add_sat(c->last_progress, s->opts.head_timeout_ns < s->opts.idle_timeout_ns
                                                  ? s->opts.head_timeout_ns
                                                  : s->opts.idle_timeout_ns);
    else
        due = clock_add_sat(c->last_progress, s->opts.idle_timeout_ns);
    if (loop_timer_start(s->loop, &c->timer, due) != 0)
        conn_close(c); /* no memory for the timer: do not keep an unguarded connection */
}

static void conn_drive(http_conn_t *c) {
    if (c->state == C_LINGER) {
        if (conn_discard(c) < 0)
            return;
        conn_settle(c);
        return;
    }
    /* Bounded: each round either drains output that was backed up or stops. */
    for (int round = 0; round < 16; round++) {
        if (conn_pump(c) < 0)
            return;
        bool backed_up = out_pending(c) >= OUT_HIGH_WATER;
        if (conn_flush(c) < 0)
            return;
        if (!backed_up || out_pending(c) > 0 || c->state != C_OPEN)
            break;
    }
    conn_settle(c);
}

static void conn_on_io(loop_t *loop, int fd, uint32_t events, void *ud) {
    (void)loop;
    (void)fd;
    http_conn_t *c = ud;
    if ((events & EPOLLERR) && !(events & EPOLLIN)) {
        conn_close(c);
        return;
    }
    conn_drive(c);
}

static void conn_on_timer(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)t;
    http_conn_t *c = ud;
    mono_ns_t now = loop_now(loop);
    if (c->state == C_OPEN && out_pending(c) == 0 && c->head_started &&
        now >= clock_add_sat(c->head_started, c->srv->opts.head_timeout_ns)) {
        /* Slowloris: a head that trickles in. Say so, then close. */
        LOG_DEBUG(c->srv->opts.log, "http :%u: request head not complete in time; closing",
                  (unsigned)c->srv->port);
        if (queue_error(c, 408, "request head not received in time") != 0) {
            conn_close(c);
            return;
        }
        c->last_progress = now;
        conn_drive(c);
        return;
    }
    /* Idle keep-alive, a stalled writer, or the end of a linger. */
    conn_close(c);
}

/* ---- listener --------------------------------------------------------------- */

static void server_on_accept(loop_t *loop, int fd, uint32_t events, void *ud);

static void accept_resume(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)t;
    http_server_t *s = ud;
    if (s->reserve_fd < 0)
        s->reserve_fd = sock_reserve_open();
    loop_io_modify(loop, s->io, EPOLLIN);
}

static void conn_open(http_server_t *s, int fd) {
    http_conn_t *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        return;
    }
    int one = 1;
    /* Answers go out in one write; Nagle would only delay pipelined ones. */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->srv = s;
    c->fd = fd;
    c->events = EPOLLIN;
    c->state = C_OPEN;
    c->last_progress = loop_now(s->loop);
    loop_timer_init(&c->timer, conn_on_timer, c);
    c->io = loop_io_add(s->loop, fd, EPOLLIN, conn_on_io, c);
    if (!c->io) {
        close(fd);
        free(c);
        return;
    }
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    s->nconns++;
    conn_settle(c); /* arms the idle timer */
}

/* How little a connection is worth keeping when room must be made: 0
 * waits for a request, 1 lingers after its last answer, 2 has half a head,
 * 3 is being answered. */
static int conn_keep_rank(const http_conn_t *c) {
    if (c->state == C_LINGER)
        return 1;
    if (c->state == C_OPEN && out_pending(c) == 0)
        return c->in_len == 0 ? 0 : 2;
    return 3;
}

/* Closes the connection least worth keeping. Returns false when there is
 * none. */
static bool server_evict(http_server_t *s) {
    http_conn_t *victim = NULL;
    int best = 4;
    for (http_conn_t *c = s->conns; c; c = c->next) {
        int r = conn_keep_rank(c);
        if (r < best || (r == best && c->last_progress <= victim->last_progress)) {
            victim = c;
            best = r;
        }
    }
    if (!victim)
        return false;
    s->evicted++;
    LOG_RATELIMITED(s->opts.log, &s->log_rl, "http evict", loop_now(s->loop), LOG_WARN,
                    "http :%u: %u connections open (the cap): closing the one least in use to "
                    "admit a new one",
                    (unsigned)s->port, s->nconns);
    conn_close(victim);
    return true;
}

static void accept_pause(http_server_t *s, int why) {
    LOG_RATELIMITED(s->opts.log, &s->log_rl, "http accept", loop_now(s->loop), LOG_WARN,
                    "http :%u: accept: %s; pausing accepts for %u ms", (unsigned)s->port,
                    strerror(why), (unsigned)(ACCEPT_PAUSE_NS / NS_PER_MS));
    loop_io_modify(s->loop, s->io, 0);
    if (loop_timer_start(s->loop, &s->accept_timer,
                         clock_add_sat(loop_now(s->loop), ACCEPT_PAUSE_NS)) != 0)
        loop_io_modify(s->loop, s->io, EPOLLIN);
}

static void server_on_accept(loop_t *loop, int lfd, uint32_t events, void *ud) {
    (void)loop;
    (void)events;
    http_server_t *s = ud;
    for (int i = 0; i < ACCEPT_BATCH; i++) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return;
            int why = errno;
            if ((why == EMFILE || why == ENFILE) && s->reserve_fd >= 0) {
                struct sockaddr_storage ss;
                fd = sock_accept_reserved(lfd, &s->reserve_fd, &ss);
                if (fd >= 0) {
                    s->reserved++; /* admitted on the reserve; conn_close takes it back */
                } else {
                    bool drained = errno == EAGAIN || errno == EWOULDBLOCK;
                    s->reserve_fd = sock_reserve_open();
                    if (drained)
                        return;
                }
            } else if ((why == EMFILE || why == ENFILE) && i == 0 && server_evict(s)) {
                /* A descriptor is free now (the reserve may take it first).
                 * Only on a wakeup's first accept: EMFILE comes before the
                 * kernel looks at the queue, and only epoll's readiness says
                 * a connection is waiting. */
                continue;
            }
            if (fd < 0) {
                /* ENOBUFS, ENOMEM, or nothing to free: the pending connection
                 * stays queued and the level-triggered listener would fire
                 * again at once, so stop listening for a moment. */
                accept_pause(s, why);
                return;
            }
        }
        if (s->nconns >= s->opts.max_connections && !server_evict(s)) {
            close(fd);
            continue;
        }
        conn_open(s, fd);
        if (s->reserve_fd < 0)
            return; /* out of descriptors: the next accept would fail; epoll comes back */
    }
}

/* "0.0.0.0:8081" or "[::]:8081" for messages. */
int http_server_listen(loop_t *loop, const char *addr, uint16_t port,
                       const http_server_opts_t *opts, http_handler_fn handler, void *user_data,
                       http_server_t **out, char *err, size_t errlen) {
    int fd;
    uint16_t bound;
    int rc = sock_listen(addr, port, &fd, &bound, err, errlen);
    if (rc != 0)
        return rc;
    http_server_t *s = calloc(1, sizeof *s);
    if (!s) {
        close(fd);
        return kgs_seterr(err, errlen, KGS_ENOMEM, "listen %s:%u: out of memory", addr,
                          (unsigned)port);
    }
    s->loop = loop;
    s->handler = handler;
    s->user_data = user_data;
    s->opts = opts ? *opts : (http_server_opts_t){0};
    if (!s->opts.max_connections)
        s->opts.max_connections = DEFAULT_MAX_CONNECTIONS;
    if (!s->opts.idle_timeout_ns)
        s->opts.idle_timeout_ns = DEFAULT_IDLE_TIMEOUT_NS;
    if (!s->opts.head_timeout_ns)
        s->opts.head_timeout_ns = DEFAULT_HEAD_TIMEOUT_NS;
    prom_buf_init(&s->scratch);
    loop_timer_init(&s->accept_timer, accept_resume, s);
    log_ratelimit_init(&s->log_rl, LOG_INTERVAL_NS);
    s->reserve_fd = sock_reserve_open(); /* -1 is survivable: then only eviction helps */

    s->fd = fd;
    s->port = bound;
    s->io = loop_io_add(loop, s->fd, EPOLLIN, server_on_accept, s);
    if (!s->io) {
        int saved = errno;
        close(s->fd);
        if (s->reserve_fd >= 0)
            close(s->reserve_fd);
        free(s);
        return kgs_seterr(err, errlen, KGS_EIO, "listen %s:%u: epoll: %s", addr, (unsigned)port,
                          strerror(saved));
    }
    *out = s;
    return 0;
}

uint16_t http_server_port(const http_server_t *s) {
    return s->port;
}

unsigned http_server_connections(const http_server_t *s) {
    return s->nconns;
}

uint64_t http_server_evictions(const http_server_t *s) {
    return s->evicted;
}

uint64_t http_server_reserve_admissions(const http_server_t *s) {
    return s->reserved;
}

static void server_destroy(http_server_t *s) {
    while (s->conns)
        conn_close(s->conns);
    loop_timer_stop(s->loop, &s->accept_timer);
    loop_io_remove(s->loop, s->io);
    close(s->fd);
    if (s->reserve_fd >= 0)
        close(s->reserve_fd);
    prom_buf_free(&s->scratch);
    free(s);
}

void http_server_free(http_server_t *s) {
    if (!s)
        return;
    if (s->dispatching > 0) {
        s->free_pending = true;
        return;
    }
    server_destroy(s);
}
