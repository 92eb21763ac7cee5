/*
 * fetch.c - one exchange with a source: connect, TLS, send, read, done.
 *
 * States run forward only: CONNECTING (waiting for the socket to become
 * writable), HANDSHAKE (TLS), SENDING, READING. Any failure, the deadline or
 * the byte cap ends the exchange through finish(), which calls done once and
 * frees the fetch.
 */
#include "sources/fetch.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "core/duration.h"
#include "core/err.h"
#include "net/sock.h"
#include "net/tls.h"
#include "net/transport.h"

typedef enum { ST_CONNECTING, ST_HANDSHAKE, ST_SENDING, ST_READING } fetch_state_t;

struct fetch {
    loop_t *loop;
    fetch_request_t req;
    char *request; /* owned copy */
    size_t sent;
    transport_t tr;
    bool tr_open;
    loop_io_t *io;
    uint32_t io_events;
    loop_timer_t deadline;
    fetch_state_t state;
    char *buf; /* the response so far */
    size_t len, cap;
    char peer[64];
};

static const char *state_name(fetch_state_t s) {
    switch (s) {
    case ST_CONNECTING:
        return "connecting";
    case ST_HANDSHAKE:
        return "in the TLS handshake";
    case ST_SENDING:
        return "sending the request";
    case ST_READING:
        return "reading the response";
    }
    return "?";
}

/* Stops the timer and closes the socket; the fetch itself stays. */
static void shut(fetch_t *f) {
    loop_timer_stop(f->loop, &f->deadline);
    if (f->io)
        loop_io_remove(f->loop, f->io);
    f->io = NULL;
    if (f->tr_open)
        transport_close(&f->tr);
    f->tr_open = false;
}

static void release(fetch_t *f) {
    shut(f);
    free(f->request);
    free(f->buf);
    free(f);
}

static void finish(fetch_t *f, int status, bool eof, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void finish(fetch_t *f, int status, bool eof, const char *fmt, ...) {
    char msg[512] = "";
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
    }
    /* Close first: the callback may start the next exchange at once. */
    loop_timer_stop(f->loop, &f->deadline);
    if (f->io)
        loop_io_remove(f->loop, f->io);
    f->io = NULL;
    if (f->tr_open)
        transport_close(&f->tr);
    f->tr_open = false;
    f->req.done(f->req.user_data, status, f->buf ? f->buf : "", f->len, eof, status ? msg : NULL);
    free(f->request);
    free(f->buf);
    free(f);
}

static void on_deadline(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)loop;
    (void)t;
    fetch_t *f = ud;
    char d[32];
    finish(f, KGS_EIO, false, "%s: timed out after %s (%s)", f->peer,
           duration_format(f->req.timeout_ns, d, sizeof d), state_name(f->state));
}

static void want(fetch_t *f, bool rd, bool wr) {
    uint32_t ev = f->tr.ssl ? transport_poll_events(&f->tr, rd, wr)
                            : (rd ? EPOLLIN : 0) | (wr ? EPOLLOUT : 0);
    if (ev != f->io_events) {
        loop_io_modify(f->loop, f->io, ev);
        f->io_events = ev;
    }
}

static bool append(fetch_t *f, const char *p, size_t n) {
    if (f->len + n > f->cap) {
        size_t cap = f->cap ? f->cap : 4096;
        while (cap < f->len + n)
            cap *= 2;
        if (cap > f->req.max_bytes + 1)
            cap = f->req.max_bytes + 1;
        char *nb = realloc(f->buf, cap);
        if (!nb)
            return false;
        f->buf = nb;
        f->cap = cap;
    }
    memcpy(f->buf + f->len, p, n);
    f->len += n;
    return true;
}

/* Runs the state machine as far as it goes without blocking. Returns after
 * finish() (f is then gone) or when waiting for the socket. */
static void drive(fetch_t *f) {
    char why[300];
    if (f->state == ST_CONNECTING) {
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        if (getsockopt(f->tr.fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0)
            soerr = errno;
        if (soerr) {
            finish(f, KGS_EIO, false, "connect %s: %s", f->peer, strerror(soerr));
            return;
        }
        f->state = f->tr.ssl ? ST_HANDSHAKE : ST_SENDING;
    }
    if (f->state == ST_HANDSHAKE) {
        int rc = transport_client_handshake(&f->tr, f->req.alpn, why, sizeof why);
        if (rc == TRANSPORT_AGAIN) {
            want(f, false, false);
            return;
        }
        if (rc != 0) {
            finish(f, KGS_EIO, false, "%s: %s", f->peer, why);
            return;
        }
        f->state = ST_SENDING;
    }
    if (f->state == ST_SENDING) {
        while (f->sent < f->req.request_len) {
            ssize_t n = transport_write(&f->tr, f->request + f->sent, f->req.request_len - f->sent);
            if (n == TRANSPORT_AGAIN) {
                want(f, false, true);
                return;
            }
            if (n < 0) {
                finish(f, KGS_EIO, false, "%s: send: %s", f->peer, f->tr.error);
                return;
            }
            f->sent += (size_t)n;
        }
        f->state = ST_READING;
    }
    char chunk[16384];
    for (;;) {
        ssize_t n = transport_read(&f->tr, chunk, sizeof chunk);
        if (n == TRANSPORT_AGAIN) {
            want(f, true, false);
            return;
        }
        if (n < 0) {
            finish(f, KGS_EIO, false, "%s: read: %s", f->peer, f->tr.error);
            return;
        }
        if (n == 0) {
            finish(f, 0, true, NULL);
            return;
        }
        if (f->len + (size_t)n > f->req.max_bytes) {
            finish(f, KGS_ERANGE, false, "%s: response larger than %zu bytes: refused", f->peer,
                   f->req.max_bytes);
            return;
        }
        if (!append(f, chunk, (size_t)n)) {
            finish(f, KGS_ENOMEM, false, "%s: out of memory", f->peer);
            return;
        }
        if (f->req.complete) {
            int c = f->req.complete(f->req.user_data, f->buf, f->len, why, sizeof why);
            if (c < 0) {
                finish(f, KGS_EINVAL, false, "%s: %s", f->peer, why);
                return;
            }
            if (c > 0) {
                finish(f, 0, false, NULL);
                return;
            }
        }
    }
}

static void on_io(loop_t *loop, int fd, uint32_t events, void *ud) {
    (void)loop;
    (void)fd;
    (void)events;
    drive(ud);
}

int fetch_start(loop_t *loop, const fetch_request_t *req, fetch_t **out, char *err, size_t errlen) {
    *out = NULL;
    fetch_t *f = calloc(1, sizeof *f);
    if (!f)
        return kgs_seterr(err, errlen, KGS_ENOMEM, "out of memory");
    f->loop = loop;
    f->req = *req;
    f->req.request = NULL;
    sock_format_peer(&req->addr, f->peer, sizeof f->peer);
    f->request = malloc(req->request_len ? req->request_len : 1);
    if (!f->request) {
        free(f);
        return kgs_seterr(err, errlen, KGS_ENOMEM, "out of memory");
    }
    memcpy(f->request, req->request, req->request_len);
    loop_timer_init(&f->deadline, on_deadline, f);

    int fd = socket(req->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        int e = errno;
        release(f);
        return kgs_seterr(err, errlen, KGS_EIO, "socket: %s", strerror(e));
    }
    if (connect(fd, (const struct sockaddr *)&req->addr, req->addrlen) != 0 &&
        errno != EINPROGRESS) {
        int e = errno;
        close(fd);
        char peer[64];
        snprintf(peer, sizeof peer, "%s", f->peer);
        release(f);
        return kgs_seterr(err, errlen, KGS_EIO, "connect %s: %s", peer, strerror(e));
    }
    if (transport_init(&f->tr, fd, req->tls, false, NULL) != 0) {
        close(fd);
        release(f);
        return kgs_seterr(err, errlen, KGS_ENOMEM, "out of memory");
    }
    f->tr_open = true;
    if (f->tr.ssl) {
        if (req->alpn) {
            unsigned char alpn[64];
            size_t n = strlen(req->alpn);
            if (n < sizeof alpn) {
                alpn[0] = (unsigned char)n;
                memcpy(alpn + 1, req->alpn, n);
                SSL_set_alpn_protos(f->tr.ssl, alpn, (unsigned)n + 1);
            }
        }
        X509_VERIFY_PARAM *param = SSL_get0_param(f->tr.ssl);
        const char *host = req->tls_host ? req->tls_host : "";
        unsigned char ipbuf[16];
        bool is_ip = inet_pton(AF_INET, host, ipbuf) == 1 || inet_pton(AF_INET6, host, ipbuf) == 1;
        int ok = 1;
        if (is_ip) {
            /* No SNI for an IP literal (RFC 6066 section 3); verify the IP SAN. */
            ok = X509_VERIFY_PARAM_set1_ip_asc(param, host);
        } else if (host[0]) {
            SSL_set_tlsext_host_name(f->tr.ssl, host);
            X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
            ok = X509_VERIFY_PARAM_set1_host(param, host, 0);
        }
        if (ok != 1) {
            release(f);
            return kgs_seterr(err, errlen, KGS_EIO, "TLS: cannot set the name to verify");
        }
    }
    f->io_events = EPOLLOUT;
    f->io = loop_io_add(loop, f->tr.fd, EPOLLOUT, on_io, f);
    if (!f->io) {
        int e = errno;
        release(f);
        return kgs_seterr(err, errlen, KGS_EIO, "epoll: %s", strerror(e));
    }
    f->state = ST_CONNECTING;
    if (loop_timer_start(loop, &f->deadline, clock_add_sat(loop_now(loop), req->timeout_ns)) != 0) {
        release(f);
        return kgs_seterr(err, errlen, KGS_ENOMEM, "out of memory");
    }
    *out = f;
    return 0;
}

void fetch_cancel(fetch_t *f) {
    if (f)
        release(f);
}
