/*
 * grpc_client.c - gRPC client, the mirror of grpc_server.c, on our own
 * client side of HTTP/2 (net/h2_lite.c).
 *
 * DESIGN
 * The connection is opened by net/connector.c (a host name resolved on the
 * DNS thread, each address tried in turn, TLS with ALPN "h2" required).
 * Requests are queued at once, even while the connector is still at work:
 * h2_lite buffers the frames and they go out on the first flush after the
 * transport is ready. Every completion (trailers, RST, deadline, connection
 * loss) is delivered from a zero-delay timer, so on_done never runs inside
 * the HTTP/2 reader or inside grpc_client_call(), and a handler may start
 * new calls or free the client.
 *
 * Memory: an aggregator keeps one client per agent of the cluster, each with
 * one Watch call that lives for hours, so what a client and a call hold at
 * rest is what 10,000 nodes multiply: no buffer is kept between writes, nor
 * between messages (whole messages are decoded where they arrive; only a
 * message cut across reads is copied, and freed once delivered), and the
 * strings a failure needs are allocated when it happens.
 */
#include "net/grpc_client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "net/connector.h"
#include "net/first_bytes.h"
#include "net/grpc_frame.h"
#include "net/h2_lite.h"
#include "net/transport.h"

typedef enum { CLIENT_CONNECTING, CLIENT_READY, CLIENT_CLOSED } client_state_t;

struct grpc_client_call {
    grpc_client_t *client;
    h2_lite_stream_t st; /* linked into the connection while open */
    uint8_t *req;        /* the request message, prefixed; sent from here */
    strbuf_t resp;       /* response bytes not yet a whole message */
    int http_status;
    int grpc_status;    /* -1 until seen */
    char *grpc_message; /* owned; NULL until seen */
    bool cancelled, deadline_hit, closed, completed;
    int final_status;
    char *final_message; /* owned, once completed */
    grpc_client_message_cb on_message;
    grpc_client_done_cb on_done;
    void *user_data;
    loop_timer_t deadline_timer, done_timer;
    grpc_client_call_t *next, *prev;
};

struct grpc_client {
    loop_t *loop;
    char *address;     /* owned */
    char *server_name; /* owned: SNI and :authority */
    const logger_t *log;
    SSL_CTX *tls;
    client_state_t state;
    connector_t *conn; /* while CONNECTING */
    transport_t tr;
    loop_io_t *io;
    uint32_t io_events;
    h2_lite_t h2;
    bool got_bytes; /* anything read from the server yet */
    grpc_client_mode_hint_t mode_hint;
    char *goaway_reason; /* owned: a GOAWAY with an error and debug data, said as such */
    char *close_reason;  /* owned, once closed */
    grpc_client_call_t *calls;
};

static void client_flush(grpc_client_t *c);
static void client_fail(grpc_client_t *c, const char *reason);

static const char OUT_OF_MEMORY[] = "out of memory";

/* A copy of text, or NULL when memory is out (callers then say so). */
static char *dup_text(const char *text) {
    return strdup(text ? text : "");
}

/* ---- calls ------------------------------------------------------------------- */

static void call_free(grpc_client_call_t *k) {
    grpc_client_t *c = k->client;
    if (!k->closed) /* still open on the connection: reset it, so nothing points here */
        h2_lite_reset(&c->h2, &k->st, H2_CANCEL);
    loop_timer_stop(c->loop, &k->deadline_timer);
    loop_timer_stop(c->loop, &k->done_timer);
    if (k->prev)
        k->prev->next = k->next;
    else
        c->calls = k->next;
    if (k->next)
        k->next->prev = k->prev;
    free(k->req);
    free(k->grpc_message);
    free(k->final_message);
    strbuf_free(&k->resp);
    free(k);
}

static void on_done_timer(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)loop;
    (void)t;
    grpc_client_call_t *k = ud;
    grpc_client_done_cb cb = k->on_done;
    void *cud = k->user_data;
    int status = k->final_status;
    char msg[512];
    snprintf(msg, sizeof msg, "%s", k->final_message ? k->final_message : OUT_OF_MEMORY);
    call_free(k);
    cb(cud, status, msg);
}

/* Records the outcome once and schedules on_done. */
static void call_complete(grpc_client_call_t *k, int status, const char *message) {
    if (k->completed)
        return;
    k->completed = true;
    k->final_status = status;
    k->final_message = dup_text(message);
    loop_timer_stop(k->client->loop, &k->deadline_timer);
    loop_timer_start(k->client->loop, &k->done_timer, loop_now(k->client->loop));
}

/* Ends the call's stream on the wire (RST_STREAM code) unless it is over. */
static void call_reset(grpc_client_call_t *k, uint32_t code) {
    if (k->closed)
        return;
    k->closed = true;
    h2_lite_reset(&k->client->h2, &k->st, code);
}

/* gRPC's HTTP-status-to-code mapping, for answers that are not gRPC. */
static int status_from_http(int http) {
    switch (http) {
    case 400:
        return GRPC_INTERNAL;
    case 401:
        return GRPC_UNAUTHENTICATED;
    case 403:
        return GRPC_PERMISSION_DENIED;
    case 404:
        return GRPC_UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
        return GRPC_UNAVAILABLE;
    default:
        return GRPC_UNKNOWN;
    }
}

static void on_deadline(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)loop;
    (void)t;
    grpc_client_call_t *k = ud;
    k->deadline_hit = true;
    call_reset(k, H2_CANCEL);
    call_complete(k, GRPC_DEADLINE_EXCEEDED, "deadline exceeded");
    client_flush(k->client);
}

int grpc_client_call(grpc_client_t *c, const char *path, const uint8_t *req, size_t len,
                     uint64_t timeout_ns, grpc_client_message_cb on_message,
                     grpc_client_done_cb on_done, void *user_data, grpc_client_call_t **out) {
    if (c->state == CLIENT_CLOSED)
        return KGS_ESTATE;
    if (len > GRPC_MAX_MESSAGE_BYTES)
        return KGS_ERANGE;
    grpc_client_call_t *k = calloc(1, sizeof *k);
    if (!k)
        return KGS_ENOMEM;
    k->req = malloc(len + 5);
    if (!k->req) {
        free(k);
        return KGS_ENOMEM;
    }
    grpc_frame_prefix(k->req, (uint32_t)len);
    if (len)
        memcpy(k->req + 5, req, len);
    strbuf_init(&k->resp);
    k->client = c;
    k->st.user = k;
    k->grpc_status = -1;
    k->on_message = on_message;
    k->on_done = on_done;
    k->user_data = user_data;
    loop_timer_init(&k->deadline_timer, on_deadline, k);
    loop_timer_init(&k->done_timer, on_done_timer, k);

    char timeout[32] = "";
    if (timeout_ns)
        grpc_timeout_format(timeout_ns, timeout, sizeof timeout);
    h2_lite_field_t hdrs[8] = {{":method", "POST"},
                               {":scheme", c->tls ? "https" : "http"},
                               {":path", path},
                               {":authority", c->server_name},
                               {"content-type", "application/grpc"},
                               {"te", "trailers"},
                               {"user-agent", "keda-gpu-scaler-query"},
                               {"grpc-timeout", timeout}};
    const char *why;
    if (h2_lite_request(&c->h2, &k->st, hdrs, timeout_ns ? 8 : 7, k->req, len + 5, &why) != 0) {
        LOG_DEBUG(c->log, "grpc client %s: call %s: %s", c->address, path, why);
        free(k->req);
        free(k);
        return strcmp(why, OUT_OF_MEMORY) == 0 ? KGS_ENOMEM : KGS_ESTATE;
    }
    k->next = c->calls;
    if (c->calls)
        c->calls->prev = k;
    c->calls = k;
    if (timeout_ns)
        loop_timer_start(c->loop, &k->deadline_timer, clock_add_sat(loop_now(c->loop), timeout_ns));
    if (out)
        *out = k;
    client_flush(c);
    return 0;
}

void grpc_client_cancel(grpc_client_call_t *k) {
    if (k->completed)
        return;
    k->cancelled = true;
    call_reset(k, H2_CANCEL);
    call_complete(k, GRPC_CANCELLED, "cancelled by the client");
    client_flush(k->client);
}

/* ---- HTTP/2 events ---------------------------------------------------------------- */

/* A status header's decimal value, or -2 when it is not one (empty, a sign,
 * letters, past 999): atoi() would read "abc" as 0, and a grpc-status of 0
 * is OK. */
static int status_value(const char *v) {
    int n = 0;
    if (!*v || strlen(v) > 3)
        return -2;
    for (; *v; v++) {
        if (*v < '0' || *v > '9')
            return -2;
        n = n * 10 + (*v - '0');
    }
    return n;
}

static void on_header(void *ud, h2_lite_stream_t *s, bool trailers, const uint8_t *name,
                      size_t namelen, const uint8_t *value, size_t valuelen) {
    (void)ud;
    (void)trailers;
    grpc_client_call_t *k = s->user;
    char v[512];
    size_t n = valuelen < sizeof v - 1 ? valuelen : sizeof v - 1;
    memcpy(v, value, n);
    v[n] = '\0';
    if (namelen == 7 && memcmp(name, ":status", 7) == 0) {
        k->http_status = status_value(v);
    } else if (namelen == 11 && memcmp(name, "grpc-status", 11) == 0) {
        k->grpc_status = status_value(v);
    } else if (namelen == 12 && memcmp(name, "grpc-message", 12) == 0) {
        char m[512];
        grpc_percent_decode(v, n, m, sizeof m);
        free(k->grpc_message);
        k->grpc_message = dup_text(m);
    }
}

/* Hands the whole messages at buf[0..len) to the call, and in *used how
 * many bytes they took. Returns false when the stream was reset (a
 * malformed or compressed message). */
static bool deliver_messages(grpc_client_call_t *k, const uint8_t *buf, size_t len, size_t *used) {
    size_t off = 0;
    for (;;) {
        const uint8_t *msg;
        size_t mlen, n;
        int r = grpc_frame_decode(buf + off, len - off, GRPC_MAX_MESSAGE_BYTES, &msg, &mlen, &n);
        if (r == GRPC_FRAME_INCOMPLETE)
            break;
        if (r != GRPC_FRAME_COMPLETE) {
            call_reset(k, H2_CANCEL);
            call_complete(k, GRPC_INTERNAL, "malformed or compressed response message");
            return false;
        }
        if (k->on_message && !k->completed)
            k->on_message(k->user_data, msg, mlen);
        off += n;
    }
    *used = off;
    return true;
}

static void resp_failed(grpc_client_call_t *k) {
    call_reset(k, H2_CANCEL);
    call_complete(k, GRPC_RESOURCE_EXHAUSTED, OUT_OF_MEMORY);
}

static void on_data(void *ud, h2_lite_stream_t *s, const uint8_t *data, size_t len) {
    (void)ud;
    grpc_client_call_t *k = s->user;
    if (k->completed)
        return;
    size_t off = 0;
    if (k->resp.len == 0) {
        if (!deliver_messages(k, data, len, &off) || off == len)
            return;
        data += off;
        len -= off;
    }
    strbuf_append(&k->resp, (const char *)data, len);
    if (k->resp.failed) {
        resp_failed(k);
        return;
    }
    if (!deliver_messages(k, (const uint8_t *)k->resp.s, k->resp.len, &off))
        return;
    if (off == k->resp.len) {
        strbuf_free(&k->resp);
    } else if (off > 0) { /* keep the start of the next message */
        strbuf_t rest;
        strbuf_init(&rest);
        strbuf_append(&rest, k->resp.s + off, k->resp.len - off);
        strbuf_free(&k->resp);
        k->resp = rest;
        if (rest.failed)
            resp_failed(k);
    }
}

static void on_close(void *ud, h2_lite_stream_t *s, bool reset, uint32_t code) {
    grpc_client_t *c = ud;
    grpc_client_call_t *k = s->user;
    k->closed = true;
    if (k->grpc_status == -2 || k->http_status == -2) {
        call_complete(k, GRPC_INTERNAL,
                      k->grpc_status == -2 ? "malformed grpc-status from the server"
                                           : "malformed :status from the server");
    } else if (k->grpc_status >= 0) {
        call_complete(k, k->grpc_status, k->grpc_message);
    } else if (k->http_status && k->http_status != 200) {
        char m[64];
        snprintf(m, sizeof m, "HTTP status %d (not a gRPC answer)", k->http_status);
        call_complete(k, status_from_http(k->http_status), m);
    } else if (reset && code == H2_REFUSED_STREAM) {
        call_complete(k, GRPC_UNAVAILABLE,
                      c->goaway_reason ? c->goaway_reason : "stream refused by the server");
    } else {
        char m[96];
        snprintf(m, sizeof m, "stream closed without a gRPC status (HTTP/2 error %s)",
                 h2_lite_error_name(code));
        call_complete(k, GRPC_INTERNAL, m);
    }
}

/* A GOAWAY that carries an error: its debug data is the server's reason
 * (ours says "this port speaks TLS: connect with TLS" to a plaintext client). */
static void on_goaway(void *ud, uint32_t last_stream_id, uint32_t code, const uint8_t *debug,
                      size_t debuglen) {
    (void)last_stream_id;
    grpc_client_t *c = ud;
    if (code == H2_NO_ERROR)
        return;
    char m[300];
    snprintf(m, sizeof m, "the server sent GOAWAY %s%s%.*s", h2_lite_error_name(code),
             debuglen ? ": " : "", (int)debuglen, (const char *)debug);
    free(c->goaway_reason);
    c->goaway_reason = dup_text(m);
    if (code == H2_INADEQUATE_SECURITY && !c->tr.ssl)
        c->mode_hint = GRPC_CLIENT_MODE_SERVER_TLS;
}

static const h2_lite_callbacks_t H2_CALLBACKS = {
    .on_header = on_header,
    .on_data = on_data,
    .on_close = on_close,
    .on_goaway = on_goaway,
};

/* ---- connection ---------------------------------------------------------------------- */

static void client_update_events(grpc_client_t *c) {
    if (!c->io || c->state == CLIENT_CLOSED)
        return;
    uint32_t ev = transport_poll_events(&c->tr, true, h2_lite_pending(&c->h2) > 0);
    if (ev != c->io_events && loop_io_modify(c->loop, c->io, ev) == 0)
        c->io_events = ev;
}

static void client_fail(grpc_client_t *c, const char *reason) {
    if (c->state == CLIENT_CLOSED)
        return;
    c->state = CLIENT_CLOSED;
    c->close_reason = dup_text(reason);
    const char *why = c->close_reason ? c->close_reason : OUT_OF_MEMORY;
    LOG_DEBUG(c->log, "grpc client %s: %s", c->address, why);
    for (grpc_client_call_t *k = c->calls; k; k = k->next) {
        k->closed = true; /* the connection is gone, and its streams with it */
        call_complete(k, GRPC_UNAVAILABLE, why);
    }
    h2_lite_free(&c->h2);
    connector_cancel(c->conn);
    c->conn = NULL;
    if (c->io) {
        loop_io_remove(c->loop, c->io);
        c->io = NULL;
    }
    transport_close(&c->tr);
}

/* Reads what the server sent before a failed write: a server that refused
 * us may have said why (a GOAWAY). */
static void read_last_words(grpc_client_t *c) {
    uint8_t buf[4096];
    ssize_t n;
    for (int i = 0; i < 16 && (n = transport_read(&c->tr, buf, sizeof buf)) > 0; i++)
        if (h2_lite_feed(&c->h2, buf, (size_t)n) < 0)
            break;
}

static void client_flush(grpc_client_t *c) {
    if (c->state != CLIENT_READY)
        return;
    if (c->h2.out.failed) {
        client_fail(c, OUT_OF_MEMORY);
        return;
    }
    while (h2_lite_pending(&c->h2) > 0) {
        ssize_t n = transport_write(&c->tr, h2_lite_out(&c->h2), h2_lite_pending(&c->h2));
        if (n == TRANSPORT_AGAIN)
            break;
        if (n < 0) {
            char werr[sizeof c->tr.error];
            snprintf(werr, sizeof werr, "%s", c->tr.error[0] ? c->tr.error : "write failed");
            read_last_words(c);
            client_fail(c, c->goaway_reason ? c->goaway_reason : werr);
            return;
        }
        h2_lite_written(&c->h2, (size_t)n);
    }
    client_update_events(c);
}

static void on_client_io(loop_t *loop, int fd, uint32_t events, void *ud) {
    (void)loop;
    grpc_client_t *c = ud;
    (void)fd;
    (void)events;
    uint8_t buf[16384];
    for (;;) {
        ssize_t n = transport_read(&c->tr, buf, sizeof buf);
        if (n == TRANSPORT_AGAIN)
            break;
        if (n <= 0) {
            client_fail(c, c->goaway_reason ? c->goaway_reason
                           : n == 0         ? "connection closed by the server"
                                            : c->tr.error);
            return;
        }
        if (!c->got_bytes && !c->tr.ssl &&
            first_bytes_classify(buf, (size_t)n) == FIRST_BYTES_TLS) {
            c->mode_hint = GRPC_CLIENT_MODE_SERVER_TLS;
            client_fail(c, "the server answered in TLS: it speaks TLS, not plaintext HTTP/2 (h2c)");
            return;
        }
        c->got_bytes = true;
        if (h2_lite_feed(&c->h2, buf, (size_t)n) < 0) {
            client_flush(c); /* our GOAWAY, best effort */
            client_fail(c, c->h2.why);
            return;
        }
    }
    client_flush(c);
    if (c->state == CLIENT_READY && c->h2.goaway_received && !c->h2.streams &&
        h2_lite_pending(&c->h2) == 0)
        client_fail(c, c->goaway_reason ? c->goaway_reason : "connection closed (GOAWAY)");
}

static void on_connected(void *ud, int status, transport_t *tr, const char *error) {
    grpc_client_t *c = ud;
    c->conn = NULL; /* gone */
    if (status != 0) {
        if (status == KGS_EPROTO)
            c->mode_hint = GRPC_CLIENT_MODE_SERVER_PLAINTEXT;
        client_fail(c, error);
        return;
    }
    c->tr = *tr;
    c->state = CLIENT_READY;
    c->io_events = EPOLLIN | EPOLLOUT;
    c->io = loop_io_add(c->loop, c->tr.fd, c->io_events, on_client_io, c);
    if (!c->io) {
        char m[96];
        snprintf(m, sizeof m, "epoll: %s", strerror(errno));
        client_fail(c, m);
        return;
    }
    /* Read first (TLS may hold bytes already), then flush what is queued. */
    on_client_io(c->loop, c->tr.fd, EPOLLIN | EPOLLOUT, c);
}

/* The host part of "host:port" / "[v6]:port" ("localhost" for unix:),
 * the default name for TLS and :authority. */
static void host_part(const char *addr, char *host, size_t hostlen) {
    if (strncmp(addr, "unix:", 5) == 0) {
        snprintf(host, hostlen, "localhost");
    } else if (addr[0] == '[') {
        const char *end = strchr(addr, ']');
        snprintf(host, hostlen, "%.*s", end ? (int)(end - addr - 1) : 0, addr + 1);
    } else {
        const char *colon = strrchr(addr, ':');
        snprintf(host, hostlen, "%.*s", colon ? (int)(colon - addr) : (int)strlen(addr), addr);
    }
}

static void client_free_strings(grpc_client_t *c) {
    free(c->address);
    free(c->server_name);
    free(c->goaway_reason);
    free(c->close_reason);
}

int grpc_client_connect(loop_t *loop, const grpc_client_opts_t *opts, grpc_client_t **out,
                        char *err, size_t errlen) {
    grpc_client_t *c = calloc(1, sizeof *c);
    if (!c)
        return kgs_seterr(err, errlen, KGS_ENOMEM, "grpc client: out of memory");
    c->loop = loop;
    c->log = opts->log;
    c->tls = opts->tls;
    c->tr.fd = -1;
    char host[256];
    host_part(opts->address, host, sizeof host);
    c->address = dup_text(opts->address);
    c->server_name = dup_text(opts->server_name ? opts->server_name : host);
    h2_lite_init(&c->h2, &H2_CALLBACKS, c);
    if (!c->address || !c->server_name || c->h2.out.failed) {
        h2_lite_free(&c->h2);
        client_free_strings(c);
        free(c);
        return kgs_seterr(err, errlen, KGS_ENOMEM, "grpc client: out of memory");
    }
    c->state = CLIENT_CONNECTING;
    connector_opts_t co = {
        .address = opts->address,
        .name = opts->address,
        .tls = opts->tls,
        .tls_host = opts->tls ? c->server_name : NULL,
        .alpn = opts->tls ? "h2" : NULL,
        .alpn_required = true,
        .done = on_connected,
        .user_data = c,
    };
    int rc = connector_start(loop, &co, &c->conn, err, errlen);
    if (rc != 0) {
        h2_lite_free(&c->h2);
        client_free_strings(c);
        free(c);
        return rc;
    }
    *out = c;
    return 0;
}

void grpc_client_free(grpc_client_t *c) {
    if (!c)
        return;
    client_fail(c, "client closed");
    /* Deliver what is pending now: the loop will not run these timers. */
    while (c->calls) {
        grpc_client_call_t *k = c->calls;
        grpc_client_done_cb cb = k->on_done;
        void *cud = k->user_data;
        int st = k->final_status;
        call_free(k);
        cb(cud, st, "client closed");
    }
    h2_lite_free(&c->h2);
    client_free_strings(c);
    free(c);
}

grpc_client_mode_hint_t grpc_client_mode_hint(const grpc_client_t *c) {
    return c ? c->mode_hint : GRPC_CLIENT_MODE_OK;
}
