/*
 * grpc_client.c - gRPC client on nghttp2, the mirror of grpc_server.c.
 *
 * DESIGN
 * The connection is opened by net/connector.c (a host name resolved on the
 * DNS thread, each address tried in turn, TLS with ALPN "h2" required).
 * Requests are submitted to the nghttp2 session at once, even while the
 * connector is still at work: nghttp2 queues the frames and they go out on
 * the first flush after the transport is ready. The bytes between nghttp2
 * and the transport go through net/h2_pump.c, as the server's do. Every
 * completion (trailers, RST, deadline, connection loss) is delivered from a
 * zero-delay timer, so on_done never runs inside nghttp2 or inside
 * grpc_client_call(), and a handler may start new calls or free the client.
 */
#include "net/grpc_client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#include "core/err.h"
#include "net/connector.h"
#include "net/first_bytes.h"
#include "net/grpc_frame.h"
#include "net/h2_pump.h"
#include "net/transport.h"

typedef enum { CLIENT_CONNECTING, CLIENT_READY, CLIENT_CLOSED } client_state_t;

struct grpc_client_call {
    grpc_client_t *client;
    int32_t stream_id;
    uint8_t *req;
    size_t req_len, req_off;
    strbuf_t resp; /* response bytes not yet a whole message */
    int http_status;
    int grpc_status; /* -1 until seen */
    char grpc_message[512];
    bool cancelled, deadline_hit, closed, completed;
    int final_status;
    char final_message[512];
    grpc_client_message_cb on_message;
    grpc_client_done_cb on_done;
    void *user_data;
    loop_timer_t deadline_timer, done_timer;
    grpc_client_call_t *next, *prev;
};

struct grpc_client {
    loop_t *loop;
    char address[256];
    char server_name[256];
    const logger_t *log;
    SSL_CTX *tls;
    client_state_t state;
    connector_t *conn; /* while CONNECTING */
    transport_t tr;
    loop_io_t *io;
    uint32_t io_events;
    nghttp2_session *h2;
    h2_pump_t pump; /* h2 to and from tr */
    bool got_bytes; /* anything read from the server yet */
    grpc_client_mode_hint_t mode_hint;
    char goaway_reason[300]; /* a GOAWAY with an error and debug data, said as such */
    char close_reason[300];
    grpc_client_call_t *calls;
};

static void client_flush(grpc_client_t *c);
static void client_fail(grpc_client_t *c, const char *reason);

/* ---- calls ------------------------------------------------------------------- */

static void call_free(grpc_client_call_t *k) {
    grpc_client_t *c = k->client;
    /* nghttp2 may still report this stream (an RST in flight): unhook it. */
    if (!k->closed && k->stream_id > 0 && c->h2)
        nghttp2_session_set_stream_user_data(c->h2, k->stream_id, NULL);
    loop_timer_stop(c->loop, &k->deadline_timer);
    loop_timer_stop(c->loop, &k->done_timer);
    if (k->prev)
        k->prev->next = k->next;
    else
        c->calls = k->next;
    if (k->next)
        k->next->prev = k->prev;
    free(k->req);
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
    snprintf(msg, sizeof msg, "%s", k->final_message);
    call_free(k);
    cb(cud, status, msg);
}

/* Records the outcome once and schedules on_done. */
static void call_complete(grpc_client_call_t *k, int status, const char *message) {
    if (k->completed)
        return;
    k->completed = true;
    k->final_status = status;
    snprintf(k->final_message, sizeof k->final_message, "%s", message ? message : "");
    loop_timer_stop(k->client->loop, &k->deadline_timer);
    loop_timer_start(k->client->loop, &k->done_timer, loop_now(k->client->loop));
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
    if (k->stream_id > 0 && !k->closed)
        nghttp2_submit_rst_stream(k->client->h2, NGHTTP2_FLAG_NONE, k->stream_id, NGHTTP2_CANCEL);
    call_complete(k, GRPC_DEADLINE_EXCEEDED, "deadline exceeded");
    client_flush(k->client);
}

static ssize_t req_read_cb(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len,
                           uint32_t *flags, nghttp2_data_source *src, void *ud) {
    (void)s;
    (void)id;
    (void)ud;
    grpc_client_call_t *k = src->ptr;
    size_t n = k->req_len - k->req_off;
    if (n > len)
        n = len;
    memcpy(buf, k->req + k->req_off, n);
    k->req_off += n;
    if (k->req_off == k->req_len)
        *flags |= NGHTTP2_DATA_FLAG_EOF; /* END_STREAM: one request message */
    return (ssize_t)n;
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
    k->req_len = len + 5;
    strbuf_init(&k->resp);
    k->client = c;
    k->grpc_status = -1;
    k->on_message = on_message;
    k->on_done = on_done;
    k->user_data = user_data;
    loop_timer_init(&k->deadline_timer, on_deadline, k);
    loop_timer_init(&k->done_timer, on_done_timer, k);

    char timeout[32] = "";
    if (timeout_ns)
        grpc_timeout_format(timeout_ns, timeout, sizeof timeout);
    const char *authority = c->server_name[0] ? c->server_name : c->address;
    nghttp2_nv hdrs[8] = {h2_nv(":method", "POST"),
                          h2_nv(":scheme", c->tls ? "https" : "http"),
                          h2_nv(":path", path),
                          h2_nv(":authority", authority),
                          h2_nv("content-type", "application/grpc"),
                          h2_nv("te", "trailers"),
                          h2_nv("user-agent", "keda-gpu-scaler-query"),
                          h2_nv("grpc-timeout", timeout)};
    nghttp2_data_provider dp = {.source.ptr = k, .read_callback = req_read_cb};
    int32_t id = nghttp2_submit_request(c->h2, NULL, hdrs, timeout_ns ? 8 : 7, &dp, k);
    if (id < 0) {
        free(k->req);
        free(k);
        return KGS_ESTATE;
    }
    k->stream_id = id;
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
    if (!k->closed)
        nghttp2_submit_rst_stream(k->client->h2, NGHTTP2_FLAG_NONE, k->stream_id, NGHTTP2_CANCEL);
    call_complete(k, GRPC_CANCELLED, "cancelled by the client");
    client_flush(k->client);
}

/* ---- nghttp2 callbacks ----------------------------------------------------------- */

static int on_header(nghttp2_session *h2, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *ud) {
    (void)flags;
    (void)ud;
    if (frame->hd.type != NGHTTP2_HEADERS)
        return 0;
    grpc_client_call_t *k = nghttp2_session_get_stream_user_data(h2, frame->hd.stream_id);
    if (!k)
        return 0;
    char v[512];
    size_t n = valuelen < sizeof v - 1 ? valuelen : sizeof v - 1;
    memcpy(v, value, n);
    v[n] = '\0';
    if (namelen == 7 && memcmp(name, ":status", 7) == 0)
        k->http_status = atoi(v);
    else if (namelen == 11 && memcmp(name, "grpc-status", 11) == 0)
        k->grpc_status = atoi(v);
    else if (namelen == 12 && memcmp(name, "grpc-message", 12) == 0)
        grpc_percent_decode(v, n, k->grpc_message, sizeof k->grpc_message);
    return 0;
}

/* Hands the whole messages at buf[0..len) to the call, and in *used how
 * many bytes they took. Returns false when the stream was reset (a
 * malformed or compressed message). */
static bool deliver_messages(nghttp2_session *h2, int32_t stream_id, grpc_client_call_t *k,
                             const uint8_t *buf, size_t len, size_t *used) {
    size_t off = 0;
    for (;;) {
        const uint8_t *msg;
        size_t mlen, n;
        int r = grpc_frame_decode(buf + off, len - off, GRPC_MAX_MESSAGE_BYTES, &msg, &mlen, &n);
        if (r == GRPC_FRAME_INCOMPLETE)
            break;
        if (r != GRPC_FRAME_COMPLETE) {
            nghttp2_submit_rst_stream(h2, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_CANCEL);
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

/*
 * Memory: a call that streams (an agent's Watch, one per node of the
 * cluster) keeps no buffer between messages. Whole messages are decoded
 * where nghttp2 hands them over; only a message cut across chunks is
 * copied, and its buffer is freed once it is delivered. (Keeping the
 * grown buffer cost 4 KiB per agent, 40 MiB at 10,000 nodes.)
 */
static int on_data_chunk(nghttp2_session *h2, uint8_t flags, int32_t stream_id, const uint8_t *data,
                         size_t len, void *ud) {
    (void)flags;
    (void)ud;
    grpc_client_call_t *k = nghttp2_session_get_stream_user_data(h2, stream_id);
    if (!k || k->completed)
        return 0;
    size_t off = 0;
    if (k->resp.len == 0) {
        if (!deliver_messages(h2, stream_id, k, data, len, &off))
            return 0;
        if (off == len)
            return 0;
        data += off;
        len -= off;
    }
    strbuf_append(&k->resp, (const char *)data, len);
    if (k->resp.failed) {
        nghttp2_submit_rst_stream(h2, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_CANCEL);
        call_complete(k, GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return 0;
    }
    if (!deliver_messages(h2, stream_id, k, (const uint8_t *)k->resp.s, k->resp.len, &off))
        return 0;
    if (off == k->resp.len) {
        strbuf_free(&k->resp);
    } else if (off > 0) { /* keep the start of the next message */
        strbuf_t rest;
        strbuf_init(&rest);
        strbuf_append(&rest, k->resp.s + off, k->resp.len - off);
        strbuf_free(&k->resp);
        k->resp = rest;
        if (rest.failed) {
            nghttp2_submit_rst_stream(h2, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_CANCEL);
            call_complete(k, GRPC_RESOURCE_EXHAUSTED, "out of memory");
        }
    }
    return 0;
}

static int on_stream_close(nghttp2_session *h2, int32_t stream_id, uint32_t error_code, void *ud) {
    (void)ud;
    grpc_client_call_t *k = nghttp2_session_get_stream_user_data(h2, stream_id);
    if (!k)
        return 0;
    k->closed = true;
    if (k->grpc_status >= 0)
        call_complete(k, k->grpc_status, k->grpc_message);
    else if (k->http_status && k->http_status != 200) {
        char m[64];
        snprintf(m, sizeof m, "HTTP status %d (not a gRPC answer)", k->http_status);
        call_complete(k, status_from_http(k->http_status), m);
    } else if (error_code == NGHTTP2_REFUSED_STREAM) {
        call_complete(k, GRPC_UNAVAILABLE,
                      k->client->goaway_reason[0] ? k->client->goaway_reason
                                                  : "stream refused by the server");
    } else {
        char m[96];
        snprintf(m, sizeof m, "stream closed without a gRPC status (HTTP/2 error %s)",
                 nghttp2_http2_strerror(error_code));
        call_complete(k, GRPC_INTERNAL, m);
    }
    return 0;
}

/* A GOAWAY that carries an error: its debug data is the server's reason
 * (ours says "this port speaks TLS: connect with TLS" to a plaintext client). */
static int on_frame_recv(nghttp2_session *h2, const nghttp2_frame *frame, void *ud) {
    (void)h2;
    grpc_client_t *c = ud;
    if (frame->hd.type != NGHTTP2_GOAWAY || frame->goaway.error_code == NGHTTP2_NO_ERROR)
        return 0;
    int dlen = (int)(frame->goaway.opaque_data_len > 200 ? 200 : frame->goaway.opaque_data_len);
    snprintf(c->goaway_reason, sizeof c->goaway_reason, "the server sent GOAWAY %s%s%.*s",
             nghttp2_http2_strerror(frame->goaway.error_code), dlen ? ": " : "", dlen,
             (const char *)frame->goaway.opaque_data);
    if (frame->goaway.error_code == NGHTTP2_INADEQUATE_SECURITY && !c->tr.ssl)
        c->mode_hint = GRPC_CLIENT_MODE_SERVER_TLS;
    return 0;
}

/* ---- connection ---------------------------------------------------------------------- */

static void client_update_events(grpc_client_t *c) {
    if (!c->io || c->state == CLIENT_CLOSED)
        return;
    uint32_t ev =
        transport_poll_events(&c->tr, true,
                              c->state == CLIENT_READY &&
                                  (h2_pump_pending(&c->pump) || nghttp2_session_want_write(c->h2)));
    if (ev != c->io_events && loop_io_modify(c->loop, c->io, ev) == 0)
        c->io_events = ev;
}

static void client_fail(grpc_client_t *c, const char *reason) {
    if (c->state == CLIENT_CLOSED)
        return;
    c->state = CLIENT_CLOSED;
    snprintf(c->close_reason, sizeof c->close_reason, "%s", reason);
    LOG_DEBUG(c->log, "grpc client %s: %s", c->address, reason);
    for (grpc_client_call_t *k = c->calls; k; k = k->next)
        call_complete(k, GRPC_UNAVAILABLE, c->close_reason);
    connector_cancel(c->conn);
    c->conn = NULL;
    if (c->io) {
        loop_io_remove(c->loop, c->io);
        c->io = NULL;
    }
    transport_close(&c->tr);
}

static void client_flush(grpc_client_t *c) {
    if (c->state != CLIENT_READY || c->pump.in_recv)
        return;
    int r = h2_pump_flush(&c->pump);
    if (r == H2_PUMP_WRITE_FAILED) {
        /* A server that refused us may have said why (a GOAWAY) before our
         * write found the connection gone: read it. */
        char werr[sizeof c->tr.error];
        snprintf(werr, sizeof werr, "%s", c->tr.error[0] ? c->tr.error : "write failed");
        uint8_t buf[4096];
        ssize_t n;
        for (int i = 0; i < 16 && (n = transport_read(&c->tr, buf, sizeof buf)) > 0; i++)
            if (h2_pump_feed(&c->pump, buf, (size_t)n) < 0)
                break;
        client_fail(c, c->goaway_reason[0] ? c->goaway_reason : werr);
        return;
    }
    if (r == H2_PUMP_H2_FAILED) {
        client_fail(c, nghttp2_strerror(c->pump.h2_error));
        return;
    }
    if (r == H2_PUMP_OUT_OF_MEMORY) {
        client_fail(c, "out of memory");
        return;
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
            client_fail(c, c->goaway_reason[0] ? c->goaway_reason
                           : n == 0            ? "connection closed by the server"
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
        ssize_t used = h2_pump_feed(&c->pump, buf, (size_t)n);
        if (used < 0) {
            client_fail(c, nghttp2_strerror((int)used));
            return;
        }
    }
    client_flush(c);
    if (c->state == CLIENT_READY && !nghttp2_session_want_read(c->h2) &&
        !nghttp2_session_want_write(c->h2))
        client_fail(c, c->goaway_reason[0] ? c->goaway_reason : "connection closed (GOAWAY)");
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

int grpc_client_connect(loop_t *loop, const grpc_client_opts_t *opts, grpc_client_t **out,
                        char *err, size_t errlen) {
    grpc_client_t *c = calloc(1, sizeof *c);
    if (!c)
        return kgs_seterr(err, errlen, KGS_ENOMEM, "grpc client: out of memory");
    c->loop = loop;
    c->log = opts->log;
    c->tls = opts->tls;
    c->tr.fd = -1;
    snprintf(c->address, sizeof c->address, "%s", opts->address);
    char host[256];
    host_part(opts->address, host, sizeof host);
    snprintf(c->server_name, sizeof c->server_name, "%s",
             opts->server_name ? opts->server_name : host);
    nghttp2_session_callbacks *cbs;
    nghttp2_session_callbacks_new(&cbs);
    nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
    int rv = nghttp2_session_client_new(&c->h2, cbs, c);
    nghttp2_session_callbacks_del(cbs);
    if (rv != 0) {
        free(c);
        return kgs_seterr(err, errlen, KGS_ENOMEM, "grpc client: nghttp2: %s",
                          nghttp2_strerror(rv));
    }
    h2_pump_init(&c->pump, c->h2, &c->tr);
    nghttp2_settings_entry iv[1] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20}};
    nghttp2_submit_settings(c->h2, NGHTTP2_FLAG_NONE, iv, 1);
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
        nghttp2_session_del(c->h2);
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
    nghttp2_session_del(c->h2);
    h2_pump_free(&c->pump);
    free(c);
}

grpc_client_mode_hint_t grpc_client_mode_hint(const grpc_client_t *c) {
    return c ? c->mode_hint : GRPC_CLIENT_MODE_OK;
}
