/*
 * grpc_server.c - gRPC server on nghttp2, one event-loop thread.
 *
 * DESIGN
 * - nghttp2 never sees a socket: net/h2_pump.c
 *   feeds it what the transport read and writes what it sends, through a
 *   bounded per-connection output buffer. Above H2_PUMP_HIGH_WATER we stop
 *   pulling from nghttp2, and stop reading, until the socket drains
 *   (backpressure).
 * - A call is created in on_begin_headers and freed in on_stream_close, and
 *   nowhere else (nghttp2_session_del does not report stream closes, so
 *   connection teardown walks its own call list).
 * - Response messages sit in the call's `out` buffer; a data provider hands
 *   them to nghttp2 and, once the handler has finished the call and the
 *   buffer is empty, submits the trailers (grpc-status, grpc-message). A
 *   call finished before any message uses the Trailers-Only form.
 * - Connection teardown is always deferred to a zero-delay timer, so a
 *   handler that is iterating its streams never sees on_call_gone re-enter
 *   it from a flush.
 * - Accepting under attack: beyond the total or the per-peer cap a
 *   connection is accepted and closed at once. Out of descriptors
 *   (EMFILE/ENFILE) the listener cannot accept at all, and its pending
 *   connections would keep the level-triggered listener firing: then the
 *   reserve descriptor is spent to accept and close them (as libuv does),
 *   and the listener is paused for ACCEPT_PAUSE_NS, so the loop stays idle
 *   while the process is full. Each refusal is counted; the log says so
 *   once per LIMIT_LOG_INTERVAL_NS, with the number suppressed.
 * - Budgets against hostile peers (issue 16). Request bytes are counted
 *   while buffered, per connection and in all, and HTTP/2 flow control is
 *   ours (no automatic WINDOW_UPDATE): a byte is acknowledged only once its
 *   message was handed on or dropped, so a peer can never have more in
 *   flight than the windows we sized to the budgets. Headers: no HPACK
 *   dynamic table is offered, a stream's header list is capped (RST_STREAM
 *   before nghttp2 validates more of it), and a connection whose headers
 *   decode to far more than it sent (a dynamic table it was told not to use)
 *   is ended with GOAWAY.
 */
#include "net/grpc_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>

#include "core/err.h"
#include "net/conn_limits.h"
#include "net/first_bytes.h"
#include "net/grpc_frame.h"
#include "net/h2_pump.h"
#include "net/sock.h"
#include "net/transport.h"

#define READ_CHUNK 16384
#define MAX_PATH 256
#define ACCEPT_BATCH 64
#define ACCEPT_PAUSE_NS (100 * NS_PER_MS)
#define LIMIT_LOG_INTERVAL_NS (10 * NS_PER_SEC)

typedef struct grpc_conn grpc_conn_t;

struct grpc_call {
    grpc_conn_t *conn;
    int32_t stream_id;
    char path[MAX_PATH];
    bool method_post, content_type_ok, path_too_long;
    bool has_timeout;
    uint64_t timeout_ns;
    mono_ns_t started;

    uint8_t *req;
    size_t req_len, req_cap;
    bool req_overflow;   /* refused (a message or buffer cap): answered, rest discarded */
    bool prefix_checked; /* the length prefix was compared with the cap */
    uint32_t declared;   /* the message length from its prefix, once checked */
    size_t unacked;      /* DATA bytes received but not yet given back to flow control */
    size_t header_bytes; /* the header list so far: name + value + 32 per field */

    bool dispatched; /* on_request ran */
    bool finished;   /* the handler (or we) finished it */
    bool response_submitted;
    bool trailers_only;
    int status;
    char *status_message; /* percent-encoded */

    strbuf_t out; /* response messages, framed; out.s[out_off..len) not yet given to nghttp2 */
    size_t out_off;
    bool deferred; /* the data provider is parked: resume on new data */

    loop_timer_t deadline_timer;
    void *user_data;
    grpc_call_t *next, *prev;
};

struct grpc_conn {
    grpc_server_t *srv;
    transport_t tr;
    loop_io_t *io;
    uint32_t io_events;
    nghttp2_session *h2;
    char peer[64];
    h2_pump_t pump; /* h2 to and from tr */

    grpc_call_t *calls;
    unsigned ncalls;
    size_t handler_bytes;    /* grpc_call_connection_bytes */
    size_t buffered;         /* what the calls' request buffers hold (capacity) */
    uint64_t header_wire;    /* HEADERS + CONTINUATION payload bytes received */
    uint64_t header_decoded; /* their decoded header fields (name + value + 32) */
    bool hpack_refused;      /* GOAWAY for HPACK amplification queued */
    loop_timer_t idle_timer;
    loop_timer_t close_timer;
    loop_timer_t slow_timer; /* handshake, preface and request completion */
    mono_ns_t accepted;
    bool settings_seen; /* the client's preface and first SETTINGS arrived */
    bool closing;
    bool first_read_done;
    bool sniffed;      /* TLS port: the first bytes were checked for plaintext */
    bool refused;      /* answered a plaintext client: input is discarded until it closes */
    bool peer_counted; /* peer_key is counted in srv->peers */
    peer_key_t peer_key;
    grpc_conn_t *next, *prev;
};

struct grpc_server {
    loop_t *loop;
    grpc_server_opts_t opts;
    grpc_server_handlers_t handlers;
    void *user_data;
    int listen_fd;
    loop_io_t *listen_io;
    uint16_t port;
    grpc_conn_t *conns;
    unsigned nconns, ncalls;
    uint64_t too_large;         /* requests refused over max_request_bytes */
    size_t conn_budget, budget; /* buffered request bytes: per connection, all */
    size_t buffered;            /* what all connections' request buffers hold */
    grpc_server_limit_stats_t refused;
    bool shutting_down;
    void (*shutdown_done)(void *);
    void *shutdown_ud;
    loop_timer_t shutdown_timer;
    /* A client speaking the other mode (TLS vs h2c) retries for ever: say
     * so once a minute per kind, not once per attempt. */
    log_ratelimit_t mismatch_rl;
    /* Connection limits: counts by peer, the reserve descriptor, the
     * accept pause, what was refused, and their (rate-limited) log. */
    peer_table_t peers;
    int reserve_fd;
    loop_timer_t accept_timer;
    bool accept_paused;
    grpc_server_refusals_t refusals;
    log_ratelimit_t limit_rl;
};

static void conn_flush(grpc_conn_t *c);
static void conn_schedule_close(grpc_conn_t *c);

/* ---- calls ------------------------------------------------------------------ */

/* Gives the peer back the connection window for bytes we are done with. */
static void conn_ack_bytes(grpc_conn_t *c, size_t n) {
    if (n)
        nghttp2_session_consume_connection(c->h2, n);
}

/* Frees the request buffer: its capacity leaves the budgets and its bytes
 * are acknowledged, so the peer may send that much again. */
static void call_buffer_release(grpc_call_t *c) {
    c->conn->buffered -= c->req_cap;
    c->conn->srv->buffered -= c->req_cap;
    free(c->req);
    c->req = NULL;
    c->req_len = c->req_cap = 0;
    conn_ack_bytes(c->conn, c->unacked);
    c->unacked = 0;
}

static void call_free(grpc_call_t *call) {
    call_buffer_release(call);
    strbuf_free(&call->out);
    free(call->status_message);
    free(call);
}

void grpc_call_set_user_data(grpc_call_t *c, void *user_data) {
    c->user_data = user_data;
}

void *grpc_call_user_data(const grpc_call_t *c) {
    return c->user_data;
}

mono_ns_t grpc_call_deadline(const grpc_call_t *c) {
    return c->has_timeout ? clock_add_sat(c->started, c->timeout_ns) : 0;
}

const char *grpc_call_peer(const grpc_call_t *c) {
    return c->conn->peer;
}

size_t *grpc_call_connection_bytes(grpc_call_t *c) {
    return &c->conn->handler_bytes;
}

static size_t max_request(const grpc_server_t *s) {
    size_t m = s->opts.max_request_bytes;
    return m && m < GRPC_MAX_MESSAGE_BYTES ? m : GRPC_MAX_MESSAGE_BYTES;
}

/* Refuses a request over the cap: answered now, the rest of its bytes
 * discarded (and the upload reset once the status is out: on_frame_send).
 * declared: the message's length from its prefix, or 0 when not known. */
static void call_refuse_too_large(grpc_call_t *c, uint64_t declared) {
    grpc_server_t *s = c->conn->srv;
    char m[160];
    const char *flag = s->opts.max_request_bytes_flag;
    int n = declared ? snprintf(m, sizeof m, "request message: %llu bytes, at most %zu",
                                (unsigned long long)declared, max_request(s))
                     : snprintf(m, sizeof m, "request message: more than %zu bytes, at most %zu",
                                max_request(s), max_request(s));
    if (flag && n > 0 && (size_t)n < sizeof m)
        snprintf(m + n, sizeof m - (size_t)n, " (%s)", flag);
    c->req_overflow = true;
    s->too_large++;
    call_buffer_release(c);
    grpc_call_finish(c, GRPC_RESOURCE_EXHAUSTED, m);
}

/*
 * Makes room for `need` request bytes, within the budgets. The buffer
 * grows by doubling but never past the declared message (or the cap), so
 * what it costs stays within twice what arrived. A connection's budget is
 * absolute; the server's spares a connection holding under
 * GRPC_BUFFER_EXEMPT_BYTES, so a flood over other connections does not
 * refuse KEDA's small requests. Returns 0, or -1 when the call was refused
 * (answered RESOURCE_EXHAUSTED, its bytes dropped).
 */
static int call_buffer_reserve(grpc_call_t *c, size_t need) {
    if (need <= c->req_cap)
        return 0;
    grpc_conn_t *conn = c->conn;
    grpc_server_t *s = conn->srv;
    size_t bound = max_request(s) + 5;
    if (c->prefix_checked && (size_t)c->declared + 5 < bound)
        bound = (size_t)c->declared + 5;
    size_t nc = c->req_cap ? c->req_cap * 2 : 256;
    if (nc > bound)
        nc = bound;
    if (nc < need)
        nc = need;
    size_t grow = nc - c->req_cap;
    char m[192];
    const char *flag = NULL;
    if (conn->buffered + grow > s->conn_budget) {
        snprintf(m, sizeof m, "request bytes buffered on this connection: %zu, at most %zu",
                 conn->buffered + grow, s->conn_budget);
        flag = s->opts.max_buffered_bytes_per_connection_flag;
        s->refused.refused_buffered_per_connection++;
    } else if (s->buffered + grow > s->budget &&
               conn->buffered + grow >= GRPC_BUFFER_EXEMPT_BYTES) {
        snprintf(m, sizeof m, "request bytes buffered by the server: %zu, at most %zu",
                 s->buffered + grow, s->budget);
        flag = s->opts.max_buffered_bytes_flag;
        s->refused.refused_buffered++;
    } else {
        uint8_t *nb = realloc(c->req, nc);
        if (nb) {
            c->req = nb;
            c->req_cap = nc;
            conn->buffered += grow;
            s->buffered += grow;
            return 0;
        }
        snprintf(m, sizeof m, "out of memory buffering the request");
    }
    size_t n = strlen(m);
    if (flag && n < sizeof m)
        snprintf(m + n, sizeof m - n, " (%s)", flag);
    LOG_DEBUG(s->opts.log, "grpc %s: stream %d refused: %s", conn->peer, c->stream_id, m);
    c->req_overflow = true;
    call_buffer_release(c);
    grpc_call_finish(c, GRPC_RESOURCE_EXHAUSTED, m);
    return -1;
}

static ssize_t call_read_cb(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len,
                            uint32_t *flags, nghttp2_data_source *src, void *ud) {
    (void)ud;
    grpc_call_t *c = src->ptr;
    size_t avail = c->out.len - c->out_off;
    if (avail == 0 && !c->finished) {
        c->deferred = true;
        return NGHTTP2_ERR_DEFERRED;
    }
    size_t n = avail < len ? avail : len;
    memcpy(buf, c->out.s + c->out_off, n);
    c->out_off += n;
    if (c->out_off == c->out.len) {
        strbuf_clear(&c->out);
        c->out_off = 0;
    }
    if (c->out.len == 0 && c->finished) {
        /* Everything sent: end the stream with trailers, not END_STREAM on DATA. */
        *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
        char code[12];
        snprintf(code, sizeof code, "%d", c->status);
        nghttp2_nv tr[2] = {h2_nv("grpc-status", code), {0}};
        size_t ntr = 1;
        if (c->status_message && c->status_message[0])
            tr[ntr++] = h2_nv("grpc-message", c->status_message);
        nghttp2_submit_trailer(s, id, tr, ntr);
    }
    return (ssize_t)n;
}

static int call_submit_headers(grpc_call_t *c) {
    nghttp2_nv hdrs[2] = {h2_nv(":status", "200"), h2_nv("content-type", "application/grpc")};
    nghttp2_data_provider dp = {.source.ptr = c, .read_callback = call_read_cb};
    int rv = nghttp2_submit_response(c->conn->h2, c->stream_id, hdrs, 2, &dp);
    if (rv != 0)
        return KGS_ESTATE;
    c->response_submitted = true;
    return 0;
}

int grpc_call_send(grpc_call_t *c, const uint8_t *msg, size_t len, bool latest_only) {
    if (c->finished)
        return KGS_ESTATE;
    if (len > GRPC_MAX_MESSAGE_BYTES)
        return KGS_ERANGE;
    if (latest_only && c->out_off == 0)
        strbuf_clear(&c->out); /* the older message never started: the newest replaces it */
    uint8_t prefix[5];
    grpc_frame_prefix(prefix, (uint32_t)len);
    strbuf_append(&c->out, (const char *)prefix, 5);
    if (len)
        strbuf_append(&c->out, (const char *)msg, len);
    if (c->out.failed)
        return KGS_ENOMEM;
    if (!c->response_submitted) {
        if (call_submit_headers(c) != 0)
            return KGS_ESTATE;
    } else if (c->deferred) {
        c->deferred = false;
        nghttp2_session_resume_data(c->conn->h2, c->stream_id);
    }
    conn_flush(c->conn);
    return 0;
}

void grpc_call_finish(grpc_call_t *c, int status, const char *message) {
    if (c->finished)
        return;
    c->finished = true;
    c->status = status;
    loop_timer_stop(c->conn->srv->loop, &c->deadline_timer);
    if (message && message[0]) {
        size_t need = grpc_percent_encode(message, strlen(message), NULL, 0) + 1;
        c->status_message = malloc(need);
        if (c->status_message)
            grpc_percent_encode(message, strlen(message), c->status_message, need);
    }
    if (!c->response_submitted) {
        /* Trailers-Only: one HEADERS frame with END_STREAM. */
        char code[12];
        snprintf(code, sizeof code, "%d", status);
        nghttp2_nv h[4] = {h2_nv(":status", "200"),
                           h2_nv("content-type", "application/grpc"),
                           h2_nv("grpc-status", code),
                           {0}};
        size_t nh = 3;
        if (c->status_message && c->status_message[0])
            h[nh++] = h2_nv("grpc-message", c->status_message);
        c->trailers_only = true;
        c->response_submitted = true;
        nghttp2_submit_response(c->conn->h2, c->stream_id, h, nh, NULL);
    } else if (c->deferred) {
        c->deferred = false;
        nghttp2_session_resume_data(c->conn->h2, c->stream_id);
    }
    conn_flush(c->conn);
}

/* A call that disappears before the handler finished it. */
static void call_gone(grpc_call_t *c) {
    grpc_server_t *s = c->conn->srv;
    loop_timer_stop(s->loop, &c->deadline_timer);
    if (c->dispatched && !c->finished && s->handlers.on_call_gone) {
        c->finished = true;
        s->handlers.on_call_gone(c, c->user_data, s->user_data);
    }
    c->finished = true;
}

static void on_deadline(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)loop;
    (void)t;
    grpc_call_t *c = ud;
    if (c->finished)
        return;
    grpc_server_t *s = c->conn->srv;
    /* The handler hears first, while the call is valid: finishing can close
     * the stream and free the call before this function returns. */
    if (c->dispatched && s->handlers.on_call_gone) {
        void *cud = c->user_data;
        c->user_data = NULL;
        s->handlers.on_call_gone(c, cud, s->user_data);
    }
    grpc_call_finish(c, GRPC_DEADLINE_EXCEEDED, "deadline exceeded (grpc-timeout)");
}

static void call_unlink(grpc_conn_t *conn, grpc_call_t *c) {
    if (c->prev)
        c->prev->next = c->next;
    else
        conn->calls = c->next;
    if (c->next)
        c->next->prev = c->prev;
    conn->ncalls--;
    conn->srv->ncalls--;
}

/* ---- request handling ---------------------------------------------------- */

/* The request is complete: validate and hand it to the handler. */
static void call_dispatch(grpc_call_t *c) {
    grpc_server_t *s = c->conn->srv;
    if (c->req_overflow)
        return; /* already answered RESOURCE_EXHAUSTED */
    if (!c->method_post || !c->content_type_ok) {
        /* Not gRPC: the spec's answer is HTTP 415 (405 for a wrong method). */
        nghttp2_nv h[1] = {h2_nv(":status", c->method_post ? "415" : "405")};
        c->finished = c->response_submitted = true;
        nghttp2_submit_response(c->conn->h2, c->stream_id, h, 1, NULL);
        return;
    }
    const uint8_t *msg = NULL;
    size_t msg_len = 0, used = 0;
    int r = grpc_frame_decode(c->req, c->req_len, max_request(s), &msg, &msg_len, &used);
    if (r == GRPC_FRAME_COMPRESSED) {
        grpc_call_finish(c, GRPC_UNIMPLEMENTED,
                         "compressed messages are not supported: send uncompressed (identity)");
        return;
    }
    if (r == GRPC_FRAME_TOO_LARGE) {
        call_refuse_too_large(c, 0); /* on_data_chunk sees it first: kept for safety */
        return;
    }
    if (r != GRPC_FRAME_COMPLETE || used != c->req_len) {
        grpc_call_finish(c, GRPC_INTERNAL,
                         r == GRPC_FRAME_MALFORMED
                             ? "malformed gRPC message prefix"
                             : "expected exactly one request message (cardinality violation)");
        return;
    }
    if (c->path_too_long) {
        grpc_call_finish(c, GRPC_UNIMPLEMENTED, "unknown method (path too long)");
        return;
    }
    if (c->has_timeout) {
        loop_timer_init(&c->deadline_timer, on_deadline, c);
        loop_timer_start(s->loop, &c->deadline_timer, grpc_call_deadline(c));
    }
    c->dispatched = true;
    s->handlers.on_request(c, c->path, msg, msg_len, s->user_data);
    /* The handler is done with the message (it copies what it keeps): give
     * its bytes back to the budgets and the window. The call lives on until
     * its stream closes, which cannot happen inside this callback. */
    call_buffer_release(c);
}

static uint64_t slow_limit(const grpc_conn_t *c) {
    return c->srv->opts.handshake_timeout_ns ? c->srv->opts.handshake_timeout_ns : 10 * NS_PER_SEC;
}

/* Arms the slow-loris timer for the earliest thing still incomplete: the
 * preface, or a request whose headers or message have not all arrived. */
static void slow_timer_update(grpc_conn_t *c) {
    mono_ns_t first = 0;
    if (!c->settings_seen)
        first = c->accepted;
    for (grpc_call_t *k = c->calls; k; k = k->next)
        if (!k->dispatched && !k->finished && (!first || k->started < first))
            first = k->started;
    if (first && !c->closing)
        loop_timer_start(c->srv->loop, &c->slow_timer, clock_add_sat(first, slow_limit(c)));
    else
        loop_timer_stop(c->srv->loop, &c->slow_timer);
}

static void on_slow_timer(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)t;
    grpc_conn_t *c = ud;
    if (c->refused) { /* it had its answer; it just does not hang up */
        conn_schedule_close(c);
        return;
    }
    mono_ns_t now = loop_now(loop), limit = slow_limit(c);
    bool late = !c->settings_seen && now - c->accepted >= limit;
    for (grpc_call_t *k = c->calls; k && !late; k = k->next)
        late = !k->dispatched && !k->finished && now - k->started >= limit;
    if (!late) {
        slow_timer_update(c);
        return;
    }
    LOG_INFO(c->srv->opts.log, "grpc %s: closed: %s not complete within %.1f s", c->peer,
             c->settings_seen ? "a request" : "the TLS handshake / HTTP/2 preface",
             (double)limit / 1e9);
    if (c->settings_seen) {
        nghttp2_submit_goaway(c->h2, NGHTTP2_FLAG_NONE,
                              nghttp2_session_get_last_proc_stream_id(c->h2),
                              NGHTTP2_ENHANCE_YOUR_CALM, (const uint8_t *)"slow request", 12);
        conn_flush(c);
    }
    conn_schedule_close(c);
}

static int on_begin_headers(nghttp2_session *h2, const nghttp2_frame *frame, void *ud) {
    grpc_conn_t *conn = ud;
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    grpc_call_t *c = calloc(1, sizeof *c);
    if (!c)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    c->conn = conn;
    c->stream_id = frame->hd.stream_id;
    c->started = loop_now(conn->srv->loop);
    strbuf_init(&c->out);
    loop_timer_init(&c->deadline_timer, on_deadline, c);
    c->next = conn->calls;
    if (conn->calls)
        conn->calls->prev = c;
    conn->calls = c;
    conn->ncalls++;
    conn->srv->ncalls++;
    loop_timer_stop(conn->srv->loop, &conn->idle_timer);
    nghttp2_session_set_stream_user_data(h2, c->stream_id, c);
    if (!loop_timer_armed(&conn->slow_timer))
        slow_timer_update(conn);
    return 0;
}

static bool name_is(const uint8_t *name, size_t len, const char *want) {
    return len == strlen(want) && memcmp(name, want, len) == 0;
}

/* Header-block bytes as they arrive (CONTINUATION included): what the
 * decoded headers are weighed against. */
static int on_begin_frame(nghttp2_session *h2, const nghttp2_frame_hd *hd, void *ud) {
    (void)h2;
    grpc_conn_t *conn = ud;
    if (hd->type == NGHTTP2_HEADERS || hd->type == NGHTTP2_CONTINUATION)
        conn->header_wire += hd->length;
    return 0;
}

/*
 * The header budgets, for every decoded field (nghttp2 has validated this
 * one; returning TEMPORAL_CALLBACK_FAILURE resets the stream and makes it
 * skip the rest of the block, which is then only decoded, not validated
 * nor handed to us). Returns 0 or NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.
 */
static int header_budget_check(nghttp2_session *h2, grpc_conn_t *conn, grpc_call_t *c,
                               size_t field) {
    grpc_server_t *s = conn->srv;
    conn->header_decoded += field;
    if (conn->header_decoded >
        GRPC_HPACK_ALLOWANCE_BYTES + (uint64_t)GRPC_HPACK_MAX_RATIO * conn->header_wire) {
        if (!conn->hpack_refused) {
            conn->hpack_refused = true;
            s->refused.refused_hpack++;
            LOG_INFO(s->opts.log,
                     "grpc %s: closed: headers decoded to %llu bytes from %llu received (at "
                     "most %u a byte: HPACK amplification; this server offers no dynamic "
                     "table)",
                     conn->peer, (unsigned long long)conn->header_decoded,
                     (unsigned long long)conn->header_wire, GRPC_HPACK_MAX_RATIO);
            nghttp2_session_terminate_session(h2, NGHTTP2_ENHANCE_YOUR_CALM);
        }
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    if (!c)
        return 0;
    c->header_bytes += field;
    if (c->header_bytes <= GRPC_MAX_HEADER_LIST_BYTES)
        return 0;
    s->refused.refused_header_list++;
    LOG_DEBUG(s->opts.log, "grpc %s: stream %d reset: header list over %u bytes", conn->peer,
              c->stream_id, GRPC_MAX_HEADER_LIST_BYTES);
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
}

static int on_header(nghttp2_session *h2, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *ud) {
    (void)flags;
    grpc_call_t *c = nghttp2_session_get_stream_user_data(h2, frame->hd.stream_id);
    int rv = header_budget_check(h2, ud, c, namelen + valuelen + 32);
    if (rv != 0)
        return rv;
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    if (!c)
        return 0;
    if (name_is(name, namelen, ":method")) {
        c->method_post = valuelen == 4 && memcmp(value, "POST", 4) == 0;
    } else if (name_is(name, namelen, ":path")) {
        if (valuelen >= sizeof c->path) {
            c->path_too_long = true;
        } else {
            memcpy(c->path, value, valuelen);
            c->path[valuelen] = '\0';
        }
    } else if (name_is(name, namelen, "content-type")) {
        c->content_type_ok = grpc_content_type_ok((const char *)value, valuelen);
    } else if (name_is(name, namelen, "grpc-timeout")) {
        uint64_t ns;
        if (grpc_timeout_parse((const char *)value, valuelen, &ns) == 0) {
            c->has_timeout = true;
            c->timeout_ns = ns;
        }
    }
    return 0;
}

static int on_data_chunk(nghttp2_session *h2, uint8_t flags, int32_t stream_id, const uint8_t *data,
                         size_t len, void *ud) {
    (void)flags;
    grpc_call_t *c = nghttp2_session_get_stream_user_data(h2, stream_id);
    if (!c || c->req_overflow || c->finished) {
        conn_ack_bytes(ud, len); /* dropped: its window goes back at once */
        return 0;
    }
    c->unacked += len; /* acknowledged when the buffer is released */
    size_t max = max_request(c->conn->srv);
    if (c->req_len + len > max + 5) {
        /* Answer now and stop buffering; the client may keep sending, so
         * also reset the stream once the answer is queued. The declared
         * length, when this chunk completes the prefix, names the size. */
        uint64_t declared = 0;
        if (!c->prefix_checked && c->req_len < 5 && c->req_len + len >= 5) {
            uint8_t prefix[5];
            if (c->req_len)
                memcpy(prefix, c->req, c->req_len);
            memcpy(prefix + c->req_len, data, 5 - c->req_len);
            declared = grpc_frame_declared_length(prefix);
        }
        call_refuse_too_large(c, declared > max ? declared : 0);
        return 0; /* RST_STREAM(NO_ERROR) follows once the status is out: on_frame_send */
    }
    if (call_buffer_reserve(c, c->req_len + len) != 0)
        return 0; /* refused; RST_STREAM follows as above */
    memcpy(c->req + c->req_len, data, len);
    c->req_len += len;
    if (!c->prefix_checked && c->req_len >= 5) {
        /* The declared length decides at once: a 4 MiB message is refused
         * after its first frame, not after 64 KiB of it. */
        c->prefix_checked = true;
        c->declared = grpc_frame_declared_length(c->req);
        if (c->declared > max)
            call_refuse_too_large(c, c->declared);
    }
    return 0;
}

static int on_frame_recv(nghttp2_session *h2, const nghttp2_frame *frame, void *ud) {
    grpc_conn_t *conn = ud;
    if (frame->hd.type == NGHTTP2_SETTINGS && !conn->settings_seen) {
        conn->settings_seen = true;
        slow_timer_update(conn);
    }
    if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
        (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
        /* Look the call up again: it may have been closed meanwhile. */
        grpc_call_t *c = nghttp2_session_get_stream_user_data(h2, frame->hd.stream_id);
        if (c && !c->dispatched && !c->finished)
            call_dispatch(c);
    }
    return 0;
}

/* After answering an oversized request early, stop the client's upload with
 * RST_STREAM(NO_ERROR), as the gRPC spec allows -- but only once the status
 * has gone out, since nghttp2 would otherwise send the RST first. */
static int on_frame_send(nghttp2_session *h2, const nghttp2_frame *frame, void *ud) {
    (void)ud;
    if (frame->hd.type != NGHTTP2_HEADERS || !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
        return 0;
    grpc_call_t *c = nghttp2_session_get_stream_user_data(h2, frame->hd.stream_id);
    if (c && c->req_overflow)
        nghttp2_submit_rst_stream(h2, NGHTTP2_FLAG_NONE, frame->hd.stream_id, NGHTTP2_NO_ERROR);
    return 0;
}

static int on_stream_close(nghttp2_session *h2, int32_t stream_id, uint32_t error_code, void *ud) {
    (void)error_code;
    grpc_conn_t *conn = ud;
    grpc_call_t *c = nghttp2_session_get_stream_user_data(h2, stream_id);
    if (!c)
        return 0;
    nghttp2_session_set_stream_user_data(h2, stream_id, NULL);
    call_gone(c);
    call_unlink(conn, c);
    call_free(c);
    if (conn->ncalls == 0 && !conn->closing && conn->srv->opts.idle_timeout_ns)
        loop_timer_start(conn->srv->loop, &conn->idle_timer,
                         clock_add_sat(loop_now(conn->srv->loop), conn->srv->opts.idle_timeout_ns));
    return 0;
}

/* ---- connections -------------------------------------------------------------- */

static void conn_update_events(grpc_conn_t *c) {
    if (c->closing || !c->io)
        return;
    /* Nothing goes out before the client's first bytes (see conn_flush). */
    bool want_write =
        c->first_read_done && (h2_pump_pending(&c->pump) || nghttp2_session_want_write(c->h2));
    uint32_t ev = transport_poll_events(&c->tr, true, want_write);
    if (ev != c->io_events && loop_io_modify(c->srv->loop, c->io, ev) == 0)
        c->io_events = ev;
}

/* Pulls frames from nghttp2 into the output buffer and writes what the
 * transport takes. Never closes synchronously. */
static void conn_flush(grpc_conn_t *c) {
    /* nghttp2 forbids mem_send inside its own callbacks; the reader flushes
     * once mem_recv returns. */
    if (c->closing || c->pump.in_recv)
        return;
    /* The server preface waits for the client's: a plain HTTP/1.1 request on
     * this port then gets a readable 400 instead of binary SETTINGS. */
    if (!c->tr.handshake_done || !c->first_read_done) {
        conn_update_events(c);
        return;
    }
    int r = h2_pump_flush(&c->pump);
    if (r == H2_PUMP_WRITE_FAILED)
        LOG_DEBUG(c->srv->opts.log, "grpc %s: %s", c->peer, c->tr.error);
    if (r < 0 || (r == H2_PUMP_DONE && !nghttp2_session_want_read(c->h2) &&
                  !nghttp2_session_want_write(c->h2))) {
        conn_schedule_close(c); /* broken, or GOAWAY done and no streams left */
        return;
    }
    conn_update_events(c);
}

static void conn_destroy(grpc_conn_t *c) {
    grpc_server_t *s = c->srv;
    loop_timer_stop(s->loop, &c->idle_timer);
    loop_timer_stop(s->loop, &c->close_timer);
    loop_timer_stop(s->loop, &c->slow_timer);
    /* nghttp2_session_del does not report stream closes: walk our list. */
    while (c->calls) {
        grpc_call_t *call = c->calls;
        call_gone(call);
        call_unlink(c, call);
        call_free(call);
    }
    loop_io_remove(s->loop, c->io);
    c->io = NULL;
    nghttp2_session_del(c->h2);
    transport_close(&c->tr);
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->nconns--;
    if (c->peer_counted)
        peer_table_remove(&s->peers, &c->peer_key);
    h2_pump_free(&c->pump);
    free(c);
    if (s->shutting_down && s->nconns == 0 && s->shutdown_done)
        loop_timer_start(s->loop, &s->shutdown_timer, loop_now(s->loop));
}

static void on_close_timer(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)loop;
    (void)t;
    conn_destroy(ud);
}

static void conn_schedule_close(grpc_conn_t *c) {
    if (c->closing)
        return;
    c->closing = true;
    loop_timer_start(c->srv->loop, &c->close_timer, loop_now(c->srv->loop));
}

static void on_idle(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)loop;
    (void)t;
    grpc_conn_t *c = ud;
    if (c->ncalls > 0 || c->closing)
        return;
    nghttp2_submit_goaway(c->h2, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(c->h2),
                          NGHTTP2_NO_ERROR, (const uint8_t *)"idle", 4);
    conn_flush(c);
}

static bool looks_like_http1(const uint8_t *b, size_t n) {
    static const char *const methods[] = {"GET ", "POST ", "HEAD ", "PUT ", "OPTIONS ", "DELETE "};
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        size_t m = strlen(methods[i]);
        if (n >= m && memcmp(b, methods[i], m) == 0)
            return true;
    }
    return false;
}

static void conn_refuse_http1(grpc_conn_t *c) {
    static const char reply[] =
        "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nConnection: close\r\n"
        "Content-Length: 101\r\n\r\n"
        "This port speaks gRPC (HTTP/2 with prior knowledge). Probes and /metrics are on "
        "their own HTTP ports.\n";
    transport_write(&c->tr, reply, sizeof reply - 1); /* best effort, then close */
}

/*
 * A plaintext client on the TLS port: OpenSSL would only fail with "wrong
 * version number" and the client see a reset. Answer in the client's own
 * protocol instead (an HTTP/2 GOAWAY INADEQUATE_SECURITY whose debug data
 * grpc-go and our client show, or an HTTP/1 400), and log which flag or
 * setting picks TLS on the client. Then only our side is shut: what the
 * client still sends is read and dropped until it hangs up (or the slow
 * timer fires), since closing with unread input sends a reset, and a reset
 * makes the client's write fail before it reads the answer.
 */
static void conn_refuse_plaintext(grpc_conn_t *c, first_bytes_kind_t kind) {
    static const char http1[] =
        "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nConnection: close\r\n"
        "Content-Length: 65\r\n\r\n"
        "This port speaks gRPC over TLS (HTTP/2 in TLS, ALPN h2): use TLS\n";
    uint8_t h2[256];
    size_t n = kind == FIRST_BYTES_H2C
                   ? first_bytes_h2_refusal(h2, sizeof h2, NGHTTP2_INADEQUATE_SECURITY,
                                            "this port speaks TLS: connect with TLS")
                   : sizeof http1 - 1;
    const void *reply = kind == FIRST_BYTES_H2C ? (const void *)h2 : (const void *)http1;
    if (send(c->tr.fd, reply, n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
        LOG_DEBUG(c->srv->opts.log, "grpc %s: send: %s", c->peer, strerror(errno));
    LOG_RATELIMITED(c->srv->opts.log, &c->srv->mismatch_rl,
                    kind == FIRST_BYTES_H2C ? "h2c on the TLS port" : "HTTP/1 on the TLS port",
                    loop_now(c->srv->loop), LOG_WARN,
                    "grpc %s: a plaintext %s client on this TLS port: the client must use TLS "
                    "(KEDA: caCert in the trigger's TriggerAuthentication, or enableTLS "
                    "\"true\"; keda-gpu-scaler query: --tls --ca FILE)",
                    c->peer, kind == FIRST_BYTES_H2C ? "HTTP/2 (h2c)" : "HTTP/1");
    shutdown(c->tr.fd, SHUT_WR);
    c->refused = true;
}

/* A refused connection: drops input; closes at EOF or on a socket error. */
static void conn_discard_input(grpc_conn_t *c) {
    uint8_t sink[4096];
    for (int i = 0; i < 64; i++) { /* bounded per wakeup; epoll comes back for the rest */
        ssize_t n = recv(c->tr.fd, sink, sizeof sink, MSG_DONTWAIT);
        if (n > 0 || (n < 0 && errno == EINTR))
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        conn_schedule_close(c); /* EOF or a socket error */
        return;
    }
}

/* A TLS ClientHello on the plaintext port: there is nothing the client's
 * TLS stack would show, so only the log says what happened. */
static void conn_refuse_tls(grpc_conn_t *c) {
    LOG_RATELIMITED(c->srv->opts.log, &c->srv->mismatch_rl, "TLS on the h2c port",
                    loop_now(c->srv->loop), LOG_WARN,
                    "grpc %s: a TLS handshake on this plaintext (h2c) port: serve TLS with "
                    "--tls-cert FILE --tls-key FILE, or have the client connect without TLS "
                    "(KEDA: no caCert, tlsClientCert or enableTLS for the trigger; "
                    "keda-gpu-scaler query: without --tls)",
                    c->peer);
}

static void on_conn_io(loop_t *loop, int fd, uint32_t events, void *ud) {
    (void)loop;
    (void)fd;
    grpc_conn_t *c = ud;
    if (c->closing)
        return;
    if (c->refused) {
        conn_discard_input(c);
        return;
    }
    if (c->tr.ssl && !c->sniffed) {
        /* Peek before OpenSSL consumes the bytes. Too few to tell: let the
         * handshake have them (waiting would spin on a level-triggered fd). */
        uint8_t peek[24];
        ssize_t n = recv(c->tr.fd, peek, sizeof peek, MSG_PEEK | MSG_DONTWAIT);
        /* Nothing yet (a call right after accept): wait for the first bytes.
         * Handing the socket to OpenSSL now would let SSL_accept read a
         * plaintext preface that lands a moment later, fail on it, and
         * close with it unread: a reset instead of our GOAWAY. */
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return;
        c->sniffed = true;
        first_bytes_kind_t k = n > 0 ? first_bytes_classify(peek, (size_t)n) : FIRST_BYTES_OTHER;
        if (k == FIRST_BYTES_H2C || k == FIRST_BYTES_HTTP1) {
            conn_refuse_plaintext(c, k);
            return;
        }
    }
    if (!c->tr.handshake_done) {
        int r = transport_handshake(&c->tr);
        if (r == TRANSPORT_AGAIN) {
            conn_update_events(c);
            return;
        }
        if (r != 0) {
            LOG_DEBUG(c->srv->opts.log, "grpc %s: %s", c->peer, c->tr.error);
            conn_schedule_close(c);
            return;
        }
    }
    (void)events;
    /* Always read until the transport would block: after a TLS handshake
     * the first application bytes may already sit decrypted inside OpenSSL,
     * where epoll cannot see them. */
    uint8_t buf[READ_CHUNK];
    for (;;) {
        ssize_t n = transport_read(&c->tr, buf, sizeof buf);
        if (n == TRANSPORT_AGAIN)
            break;
        if (n <= 0) {
            conn_schedule_close(c);
            return;
        }
        ssize_t used = h2_pump_feed(&c->pump, buf, (size_t)n);
        if (used < 0) {
            if (!c->first_read_done && used == NGHTTP2_ERR_BAD_CLIENT_MAGIC &&
                looks_like_http1(buf, (size_t)n))
                conn_refuse_http1(c);
            else if (!c->first_read_done && used == NGHTTP2_ERR_BAD_CLIENT_MAGIC &&
                     first_bytes_classify(buf, (size_t)n) == FIRST_BYTES_TLS)
                conn_refuse_tls(c);
            LOG_DEBUG(c->srv->opts.log, "grpc %s: HTTP/2 error: %s", c->peer,
                      nghttp2_strerror((int)used));
            conn_flush(c); /* a GOAWAY nghttp2 queued, if any */
            conn_schedule_close(c);
            return;
        }
        c->first_read_done = true;
        if (c->closing)
            return;
        /* Answer what this chunk asked before reading the next one, so
         * responses do not pile up inside nghttp2 while a busy client keeps
         * the socket readable (that queue is what peak memory is made of). */
        conn_flush(c);
        if (c->closing || h2_pump_pending(&c->pump) > H2_PUMP_HIGH_WATER)
            return; /* the peer is not reading our answers: stop reading its requests */
        /* A short read on plain TCP drained the socket: skip the recv that
         * would only say EAGAIN (epoll is level-triggered, nothing is lost).
         * TLS may hold decrypted bytes epoll cannot see, so it reads on. */
        if (!c->tr.ssl && (size_t)n < sizeof buf)
            break;
    }
    conn_flush(c);
}

/* Closes a connection over a cap at once. The log line is rate limited:
 * a client that reconnects in a loop must not turn each attempt into one. */
static void conn_refuse(grpc_server_t *s, int fd, const char *peer, const char *key,
                        const char *why, unsigned held, unsigned limit, const char *flag) {
    close(fd);
    LOG_RATELIMITED(s->opts.log, &s->limit_rl, key, loop_now(s->loop), LOG_WARN,
                    "grpc %s: refused: %s (%u open, at most %u: %s)", peer, why, held, limit, flag);
}

/*
 * The connection's nghttp2 session and our SETTINGS. nghttp2 enforces the
 * rapid-reset (CVE-2023-44487), CONTINUATION (CVE-2024-28182) and SETTINGS
 * flood limits; flow control and the header budgets are ours (see the
 * DESIGN block). Returns 0, or -1 when nghttp2 could not allocate.
 */
static int conn_session_new(grpc_conn_t *c) {
    grpc_server_t *s = c->srv;
    nghttp2_session_callbacks *cbs;
    if (nghttp2_session_callbacks_new(&cbs) != 0)
        return -1;
    nghttp2_session_callbacks_set_on_begin_frame_callback(cbs, on_begin_frame);
    nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
    nghttp2_session_callbacks_set_on_frame_send_callback(cbs, on_frame_send);
    nghttp2_option *opt;
    if (nghttp2_option_new(&opt) != 0) {
        nghttp2_session_callbacks_del(cbs);
        return -1;
    }
    nghttp2_option_set_stream_reset_rate_limit(opt, 1000, 100);
    nghttp2_option_set_max_continuations(opt, 8);
    nghttp2_option_set_max_settings(opt, 32);
    nghttp2_option_set_max_outbound_ack(opt, 1000);
    /* nghttp2 otherwise keeps up to MAX_CONCURRENT_STREAMS closed streams for
     * its priority tree: megabytes of memory for a feature gRPC never uses. */
    nghttp2_option_set_no_closed_streams(opt, 1);
    /* Bytes are acknowledged when we are done with them (conn_ack_bytes),
     * so the windows below bound what a peer can make us hold. */
    nghttp2_option_set_no_auto_window_update(opt, 1);
    /* Our responses' headers are three short fields: a small table for them
     * whatever table size the peer offers. */
    nghttp2_option_set_max_deflate_dynamic_table_size(opt, 512);
    int rv = nghttp2_session_server_new2(&c->h2, cbs, c, opt);
    nghttp2_option_del(opt);
    nghttp2_session_callbacks_del(cbs);
    if (rv != 0)
        return -1;
    /* A stream may send one request before we consume it; the connection
     * its buffered-bytes budget. No dynamic table for the peer's headers,
     * whose list is capped (see grpc_server.h). */
    nghttp2_settings_entry iv[4] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS,
         s->opts.max_concurrent_streams ? s->opts.max_concurrent_streams : 1000},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, (uint32_t)(max_request(s) + 5)},
        {NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, 0},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, GRPC_MAX_HEADER_LIST_BYTES},
    };
    if (nghttp2_submit_settings(c->h2, NGHTTP2_FLAG_NONE, iv, 4) != 0 ||
        nghttp2_session_set_local_window_size(c->h2, NGHTTP2_FLAG_NONE, 0,
                                              (int32_t)s->conn_budget) != 0) {
        nghttp2_session_del(c->h2);
        c->h2 = NULL;
        return -1;
    }
    h2_pump_init(&c->pump, c->h2, &c->tr);
    return 0;
}

static void conn_accept(grpc_server_t *s, int fd, const struct sockaddr_storage *ss) {
    char peer[64];
    sock_format_peer(ss, peer, sizeof peer);
    if (s->shutting_down) {
        LOG_DEBUG(s->opts.log, "grpc %s: refused: shutting down", peer);
        close(fd);
        return;
    }
    if (s->opts.max_connections && s->nconns >= s->opts.max_connections) {
        s->refusals.max_connections++;
        conn_refuse(s, fd, peer, "max-connections", "connection limit reached", s->nconns,
                    s->opts.max_connections, "--max-connections");
        return;
    }
    peer_key_t key;
    bool keyed = peer_key_from_sockaddr(ss, &key);
    unsigned from_peer = keyed ? peer_table_count(&s->peers, &key) : 0;
    if (keyed && s->opts.max_connections_per_peer &&
        from_peer >= s->opts.max_connections_per_peer) {
        s->refusals.max_connections_per_peer++;
        conn_refuse(s, fd, peer, "max-connections-per-peer",
                    "this address holds its share of the connections", from_peer,
                    s->opts.max_connections_per_peer, "--max-connections-per-peer");
        return;
    }

    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);

    grpc_conn_t *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        return;
    }
    c->srv = s;
    snprintf(c->peer, sizeof c->peer, "%s", peer);
    loop_timer_init(&c->idle_timer, on_idle, c);
    loop_timer_init(&c->slow_timer, on_slow_timer, c);
    loop_timer_init(&c->close_timer, on_close_timer, c);
    if (transport_init(&c->tr, fd, s->opts.tls ? tls_server_ctx(s->opts.tls) : NULL, true, NULL) !=
        0) {
        close(fd);
        free(c);
        return;
    }

    if (conn_session_new(c) != 0) {
        transport_close(&c->tr);
        free(c);
        return;
    }

    c->io_events = EPOLLIN | EPOLLOUT;
    c->io = loop_io_add(s->loop, fd, c->io_events, on_conn_io, c);
    if (!c->io) {
        nghttp2_session_del(c->h2);
        transport_close(&c->tr);
        free(c);
        return;
    }
    if (keyed && peer_table_add(&s->peers, &key) != 0) {
        /* Out of memory: an uncounted connection would escape the cap. */
        loop_io_remove(s->loop, c->io);
        nghttp2_session_del(c->h2);
        transport_close(&c->tr);
        free(c);
        return;
    }
    c->peer_key = key;
    c->peer_counted = keyed;
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    s->nconns++;
    if (s->opts.idle_timeout_ns)
        loop_timer_start(s->loop, &c->idle_timer,
                         clock_add_sat(loop_now(s->loop), s->opts.idle_timeout_ns));
    c->accepted = loop_now(s->loop);
    slow_timer_update(c);
    LOG_DEBUG(s->opts.log, "grpc %s: connected%s", peer, s->opts.tls ? " (TLS)" : "");
}

static void on_accept_resume(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)t;
    grpc_server_t *s = ud;
    s->accept_paused = false;
    if (s->reserve_fd < 0)
        s->reserve_fd = sock_reserve_open();
    if (s->listen_io)
        loop_io_modify(loop, s->listen_io, EPOLLIN);
}

/* Stops listening for ACCEPT_PAUSE_NS: what is pending waits in the
 * kernel's backlog instead of waking the loop again at once. */
static void accept_pause(grpc_server_t *s) {
    if (s->accept_paused || !s->listen_io)
        return;
    if (loop_io_modify(s->loop, s->listen_io, 0) != 0)
        return;
    s->accept_paused = true;
    if (loop_timer_start(s->loop, &s->accept_timer,
                         clock_add_sat(loop_now(s->loop), ACCEPT_PAUSE_NS)) != 0)
        on_accept_resume(s->loop, &s->accept_timer, s);
}

/*
 * Out of descriptors: each pending connection is taken on the reserve
 * descriptor and closed at once, so its client hears that it was refused
 * (instead of waiting in the backlog for a slot that may never come), and
 * the listener is paused. `why` is the errno accept4 gave.
 */
static void accept_shed(grpc_server_t *s, int lfd, int why) {
    unsigned shed = 0;
    while (shed < ACCEPT_BATCH) {
        struct sockaddr_storage ss;
        int fd = sock_accept_reserved(lfd, &s->reserve_fd, &ss);
        if (fd >= 0) {
            close(fd);
            shed++;
        }
        s->reserve_fd = sock_reserve_open();
        if (fd < 0 || s->reserve_fd < 0)
            break;
    }
    s->refusals.out_of_descriptors += shed;
    LOG_RATELIMITED(s->opts.log, &s->limit_rl, "grpc accept: out of descriptors", loop_now(s->loop),
                    LOG_WARN,
                    "grpc accept: %s with %u gRPC connections open: closing new connections at "
                    "once and pausing accepts for %u ms (raise the descriptor limit, ulimit -n, "
                    "or lower --max-connections)",
                    strerror(why), s->nconns, (unsigned)(ACCEPT_PAUSE_NS / NS_PER_MS));
    accept_pause(s);
}

static void on_listen_io(loop_t *loop, int fd, uint32_t events, void *ud) {
    (void)loop;
    (void)events;
    grpc_server_t *s = ud;
    for (int i = 0; i < ACCEPT_BATCH; i++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        int cfd = accept4(fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return;
            if (errno == EMFILE || errno == ENFILE) {
                accept_shed(s, fd, errno);
                return;
            }
            /* ENOBUFS, ENOMEM: the connection stays queued; retrying at
             * once would spin, so wait a moment. */
            LOG_RATELIMITED(s->opts.log, &s->limit_rl, "grpc accept: error", loop_now(s->loop),
                            LOG_WARN, "grpc accept: %s; pausing accepts for %u ms", strerror(errno),
                            (unsigned)(ACCEPT_PAUSE_NS / NS_PER_MS));
            accept_pause(s);
            return;
        }
        conn_accept(s, cfd, &ss);
    }
}

/* ---- server --------------------------------------------------------------- */

static void on_shutdown_done(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)loop;
    (void)t;
    grpc_server_t *s = ud;
    void (*done)(void *) = s->shutdown_done;
    s->shutdown_done = NULL;
    if (done)
        done(s->shutdown_ud);
}

int grpc_server_start(loop_t *loop, const grpc_server_opts_t *opts,
                      const grpc_server_handlers_t *handlers, void *user_data, grpc_server_t **out,
                      char *err, size_t errlen) {
    grpc_server_t *s = calloc(1, sizeof *s);
    if (!s)
        return kgs_seterr(err, errlen, KGS_ENOMEM, "grpc server: out of memory");
    s->loop = loop;
    s->opts = *opts;
    s->handlers = *handlers;
    s->user_data = user_data;
    loop_timer_init(&s->shutdown_timer, on_shutdown_done, s);
    loop_timer_init(&s->accept_timer, on_accept_resume, s);
    log_ratelimit_init(&s->mismatch_rl, 60 * NS_PER_SEC);
    /* The windows follow the budgets: a connection's must hold one whole
     * request, and cannot start below HTTP/2's initial 65535. */
    size_t one = max_request(s) + 5;
    s->conn_budget = opts->max_buffered_bytes_per_connection;
    if (!s->conn_budget)
        s->conn_budget =
            GRPC_DEFAULT_BUFFERED_PER_CONNECTION > one ? GRPC_DEFAULT_BUFFERED_PER_CONNECTION : one;
    s->budget = opts->max_buffered_bytes;
    if (!s->budget)
        s->budget = GRPC_DEFAULT_BUFFERED > s->conn_budget ? GRPC_DEFAULT_BUFFERED : s->conn_budget;
    if (s->conn_budget < one || s->conn_budget < 65536 || s->conn_budget > INT32_MAX ||
        s->budget < s->conn_budget) {
        int rc = kgs_seterr(err, errlen, KGS_EINVAL,
                            "grpc server: buffered-bytes budgets %zu per connection, %zu in all: "
                            "per connection at least 65536 and one request (%zu), at most "
                            "2147483647, and in all at least that",
                            s->conn_budget, s->budget, one);
        free(s);
        return rc;
    }
    log_ratelimit_init(&s->limit_rl, LIMIT_LOG_INTERVAL_NS);
    peer_table_init(&s->peers);
    s->reserve_fd = sock_reserve_open(); /* -1 is survivable: shedding then only pauses */
    int rc = sock_listen(opts->listen_address, opts->port, &s->listen_fd, &s->port, err, errlen);
    if (rc != 0) {
        if (s->reserve_fd >= 0)
            close(s->reserve_fd);
        free(s);
        return rc;
    }
    s->listen_io = loop_io_add(loop, s->listen_fd, EPOLLIN, on_listen_io, s);
    if (!s->listen_io) {
        close(s->listen_fd);
        if (s->reserve_fd >= 0)
            close(s->reserve_fd);
        free(s);
        return kgs_seterr(err, errlen, KGS_EIO, "grpc server: epoll: %s", strerror(errno));
    }
    *out = s;
    return 0;
}

uint16_t grpc_server_port(const grpc_server_t *s) {
    return s->port;
}

void grpc_server_adopt(grpc_server_t *s, int fd) {
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss); /* AF_UNSPEC: the peer shows as "?" */
    conn_accept(s, fd, &ss);
}

unsigned grpc_server_connection_count(const grpc_server_t *s) {
    return s->nconns;
}

uint64_t grpc_server_requests_too_large(const grpc_server_t *s) {
    return s->too_large;
}

void grpc_server_refusals(const grpc_server_t *s, grpc_server_refusals_t *out) {
    *out = s->refusals;
}

void grpc_server_limit_stats(const grpc_server_t *s, grpc_server_limit_stats_t *out) {
    *out = s->refused;
    out->buffered_bytes = s->buffered;
}

unsigned grpc_server_call_count(const grpc_server_t *s) {
    return s->ncalls;
}

void grpc_server_shutdown(grpc_server_t *s, void (*done)(void *), void *user_data) {
    s->shutting_down = true;
    s->shutdown_done = done;
    s->shutdown_ud = user_data;
    if (s->listen_io) {
        loop_io_remove(s->loop, s->listen_io);
        s->listen_io = NULL;
        close(s->listen_fd);
        s->listen_fd = -1;
    }
    loop_timer_stop(s->loop, &s->accept_timer);
    for (grpc_conn_t *c = s->conns; c; c = c->next) {
        if (c->closing)
            continue;
        if (!c->tr.handshake_done) {
            conn_schedule_close(c);
            continue;
        }
        nghttp2_submit_goaway(c->h2, NGHTTP2_FLAG_NONE,
                              nghttp2_session_get_last_proc_stream_id(c->h2), NGHTTP2_NO_ERROR,
                              (const uint8_t *)"shutdown", 8);
        conn_flush(c);
    }
    if (s->nconns == 0)
        loop_timer_start(s->loop, &s->shutdown_timer, loop_now(s->loop));
}

void grpc_server_free(grpc_server_t *s) {
    if (!s)
        return;
    s->shutdown_done = NULL;
    s->handlers.on_call_gone = NULL; /* no callbacks while tearing down */
    while (s->conns)
        conn_destroy(s->conns);
    loop_timer_stop(s->loop, &s->shutdown_timer);
    loop_timer_stop(s->loop, &s->accept_timer);
    if (s->listen_io) {
        loop_io_remove(s->loop, s->listen_io);
        close(s->listen_fd);
    }
    if (s->reserve_fd >= 0)
        close(s->reserve_fd);
    peer_table_deinit(&s->peers);
    free(s);
}
