/*
 * fetch.c - one exchange with a source: connect (net/connector.c, TLS
 * included), send, read, done.
 *
 * States run forward only: CONNECTING (the connector: the socket, then the
 * TLS handshake), SENDING, READING. Any failure, the deadline or the byte
 * cap ends the exchange through finish(), which calls done once and frees
 * the fetch.
 */
#include "sources/fetch.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/duration.h"
#include "core/err.h"
#include "net/connector.h"
#include "net/sock.h"
#include "net/transport.h"

typedef enum { ST_CONNECTING, ST_SENDING, ST_READING } fetch_state_t;

struct fetch {
    loop_t *loop;
    /* What the exchange still needs of the fetch_request_t (not the
     * address and TLS settings: the connector keeps its own). */
    size_t request_len, max_bytes;
    uint64_t timeout_ns;
    fetch_data_cb data;
    fetch_done_cb done;
    void *user_data;
    size_t sent;
    connector_t *conn; /* while CONNECTING: in conn_mem */
    /* The connector lives inside the fetch and hands over its transport
     * only once it is done with its storage (net/connector.h), so the two
     * share the room: a poll allocates one fetch and nothing else to
     * connect (500 sources poll in the same instant). */
    union {
        connector_storage_t conn_mem; /* while CONNECTING */
        transport_t tr;               /* once connected (tr_open) */
    };
    bool tr_open;
    loop_io_t *io;
    uint32_t io_events;
    loop_timer_t deadline;
    loop_timer_t resume; /* TLS: records already decrypted after a slice */
    fetch_state_t state;
    size_t len; /* response bytes read */
    char peer[64];
    char request[]; /* the copy of the request bytes, in the same allocation */
};

static const char *state_name(const fetch_t *f) {
    switch (f->state) {
    case ST_CONNECTING:
        return f->conn ? connector_phase_name(connector_phase(f->conn)) : "connecting";
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
    loop_timer_stop(f->loop, &f->resume);
    connector_cancel(f->conn);
    f->conn = NULL;
    if (f->io)
        loop_io_remove(f->loop, f->io);
    f->io = NULL;
    if (f->tr_open)
        transport_close(&f->tr);
    f->tr_open = false;
}

static void release(fetch_t *f) {
    shut(f);
    explicit_bzero(f->request, f->request_len); /* it may hold a bearer token */
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
    shut(f);
    f->done(f->user_data, status, eof, status ? msg : NULL);
    explicit_bzero(f->request, f->request_len); /* it may hold a bearer token */
    free(f);
}

static void on_deadline(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)loop;
    (void)t;
    fetch_t *f = ud;
    char d[32];
    /* No answer to the SYN within the deadline: nobody is there (a Service
     * without endpoints that drops, a pod address gone). A server that took
     * the connection and did not answer in time is there, only slow. */
    bool no_peer =
        f->state == ST_CONNECTING && (!f->conn || connector_phase(f->conn) == CONNECTOR_CONNECTING);
    finish(f, no_peer ? KGS_ENOPEER : KGS_ETIMEDOUT, false, "%s: timed out after %s (%s)", f->peer,
           duration_format(f->timeout_ns, d, sizeof d), state_name(f));
}

static void want(fetch_t *f, bool rd, bool wr) {
    uint32_t ev = transport_poll_events(&f->tr, rd, wr);
    if (ev != f->io_events) {
        loop_io_modify(f->loop, f->io, ev);
        f->io_events = ev;
    }
}

/* Runs the state machine as far as it goes without blocking. Returns after
 * finish() (f is then gone) or when waiting for the socket. */
static void drive(fetch_t *f) {
    char why[300];
    if (f->state == ST_SENDING) {
        while (f->sent < f->request_len) {
            ssize_t n = transport_write(&f->tr, f->request + f->sent, f->request_len - f->sent);
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
    for (size_t slice = 0; slice < FETCH_SLICE_BYTES;) {
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
        if (f->len + (size_t)n > f->max_bytes) {
            finish(f, KGS_ERANGE, false, "%s: response larger than %zu bytes: refused", f->peer,
                   f->max_bytes);
            return;
        }
        f->len += (size_t)n;
        slice += (size_t)n;
        why[0] = '\0';
        int c = f->data(f->user_data, chunk, (size_t)n, why, sizeof why);
        if (c < 0) {
            finish(f, KGS_EINVAL, false, "%s: %s", f->peer, why);
            return;
        }
        if (c > 0) {
            finish(f, 0, false, NULL);
            return;
        }
        /* A plain socket that gave less than asked for is empty now: wait
         * for readiness rather than spend a read on EAGAIN (a reply
         * dripped in small pieces costs one read per piece, not two). */
        if (!f->tr.ssl && (size_t)n < sizeof chunk) {
            want(f, true, false);
            return;
        }
    }
    /* The slice is spent: the rest waits for the next turn of the loop. A
     * plain socket with more to read is ready again then; TLS may hold
     * records it already read from the socket, which no readiness event
     * would announce, so those resume from a timer. */
    want(f, true, false);
    if (f->tr.ssl)
        loop_timer_start(f->loop, &f->resume, loop_now(f->loop));
}

static void on_resume(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)loop;
    (void)t;
    drive(ud);
}

static void on_io(loop_t *loop, int fd, uint32_t events, void *ud) {
    (void)loop;
    (void)fd;
    (void)events;
    drive(ud);
}

static void on_connected(void *ud, int status, transport_t *tr, const char *error) {
    fetch_t *f = ud;
    f->conn = NULL; /* gone */
    if (status != 0) {
        finish(f, status, false, "%s", error);
        return;
    }
    f->tr = *tr;
    f->tr_open = true;
    f->io_events = EPOLLOUT;
    f->io = loop_io_add(f->loop, f->tr.fd, EPOLLOUT, on_io, f);
    if (!f->io) {
        finish(f, KGS_EIO, false, "%s: epoll: %s", f->peer, strerror(errno));
        return;
    }
    f->state = ST_SENDING;
    drive(f);
}

int fetch_start(loop_t *loop, const fetch_request_t *req, fetch_t **out, char *err, size_t errlen) {
    *out = NULL;
    fetch_t *f = calloc(1, sizeof *f + req->request_len);
    if (!f)
        return kgs_seterr(err, errlen, KGS_ENOMEM, "out of memory");
    f->loop = loop;
    f->request_len = req->request_len;
    f->max_bytes = req->max_bytes;
    f->timeout_ns = req->timeout_ns;
    f->data = req->data;
    f->done = req->done;
    f->user_data = req->user_data;
    sock_format_peer(&req->addr, f->peer, sizeof f->peer);
    memcpy(f->request, req->request, req->request_len);
    loop_timer_init(&f->deadline, on_deadline, f);
    loop_timer_init(&f->resume, on_resume, f);
    f->state = ST_CONNECTING;
    socklen_t addrlen = req->addrlen;
    connector_opts_t co = {
        .addrs = &req->addr,
        .addrlens = &addrlen,
        .naddrs = 1,
        .check_addr = req->addr_check,
        .tls = req->tls,
        .tls_host = req->tls ? req->tls_host : NULL,
        .alpn = req->tls ? req->alpn : NULL,
        .done = on_connected,
        .user_data = f,
    };
    int rc = connector_start_in(&f->conn_mem, loop, &co, &f->conn, err, errlen);
    if (rc != 0) {
        release(f);
        return rc;
    }
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
