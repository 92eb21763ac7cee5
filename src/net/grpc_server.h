/*
 * grpc_server.h - gRPC over HTTP/2 (nghttp2) on the event loop: h2c or TLS,
 * unary and server-streaming calls. Loop thread only.
 *
 * A call arrives complete (its one request message) through on_request.
 * The handler answers at once (unary: grpc_call_send + grpc_call_finish) or
 * keeps the call and sends messages later (server streaming). A call the
 * handler has not finished can disappear (client cancel, connection loss,
 * deadline, server shutdown): on_call_gone tells the handler, after which
 * the pointer is invalid. A call the handler finished is never reported.
 */
#ifndef KGS_NET_GRPC_SERVER_H
#define KGS_NET_GRPC_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "core/log.h"
#include "net/loop.h"
#include "net/tls.h"

typedef struct grpc_server grpc_server_t;
typedef struct grpc_call grpc_call_t;

typedef struct {
    void (*on_request)(grpc_call_t *call, const char *path, const uint8_t *msg, size_t len,
                       void *server_user_data);
    void (*on_call_gone)(grpc_call_t *call, void *call_user_data, void *server_user_data);
} grpc_server_handlers_t;

typedef struct {
    const char *listen_address; /* "0.0.0.0", "::", "127.0.0.1" */
    uint16_t port;              /* 0 = ephemeral (see grpc_server_port) */
    tls_server_t *tls;          /* borrowed; NULL = h2c */
    unsigned max_connections;   /* beyond it, new connections are closed at once */
    /* At most this many connections from one peer address (its port aside);
     * beyond it new ones from that address are closed at once. 0 = no
     * per-peer cap. Socketpairs (grpc_server_adopt) are not counted. */
    unsigned max_connections_per_peer;
    uint64_t idle_timeout_ns; /* a connection without streams for this long is closed */
    /* A connection must finish TLS and the HTTP/2 preface + SETTINGS, and
     * each request its headers and message, within this; otherwise it is
     * closed (slow-loris). 0 = 10 s. */
    uint64_t handshake_timeout_ns;
    unsigned max_concurrent_streams; /* advertised per connection */
    /* The largest request message accepted, checked on the wire: its
     * length prefix is read as soon as it arrives, and nothing beyond this
     * is buffered. Larger: RESOURCE_EXHAUSTED "request message: N bytes,
     * at most M (FLAG)". 0 = GRPC_MAX_MESSAGE_BYTES; at most that. */
    size_t max_request_bytes;
    const char *max_request_bytes_flag; /* named in that message; NULL: none */
    /* Request bytes held while their messages are incomplete, per
     * connection and in all. HTTP/2 flow control matches them: a stream's
     * window is one request (max_request_bytes + 5), a connection's is its
     * budget, and bytes are acknowledged only once the message is handed
     * on or dropped. A request that would go beyond either budget gets
     * RESOURCE_EXHAUSTED naming the flag; the server-wide budget spares
     * connections holding under GRPC_BUFFER_EXEMPT_BYTES (KEDA's requests are
     * a few hundred bytes). 0 = GRPC_DEFAULT_BUFFERED_PER_CONNECTION (at
     * least one request) and GRPC_DEFAULT_BUFFERED (at least one
     * connection's); per connection at least 65536 and one request. */
    size_t max_buffered_bytes_per_connection;
    size_t max_buffered_bytes;
    const char *max_buffered_bytes_per_connection_flag; /* NULL: none */
    const char *max_buffered_bytes_flag;                /* NULL: none */
    const logger_t *log;                                /* borrowed; may be NULL */
} grpc_server_opts_t;

#define GRPC_DEFAULT_BUFFERED_PER_CONNECTION (1024u * 1024)
#define GRPC_DEFAULT_BUFFERED (16u * 1024 * 1024)
#define GRPC_BUFFER_EXEMPT_BYTES (16u * 1024)
/* Header limits, advertised in SETTINGS and enforced (docs/server.md):
 * no HPACK dynamic table (SETTINGS_HEADER_TABLE_SIZE 0), a header list of
 * at most GRPC_MAX_HEADER_LIST_BYTES per stream (name + value + 32 per
 * field, SETTINGS_MAX_HEADER_LIST_SIZE; beyond: RST_STREAM), and on each
 * connection at most GRPC_HPACK_MAX_RATIO decoded bytes per header-block
 * byte received, past a GRPC_HPACK_ALLOWANCE_BYTES start (beyond: GOAWAY
 * ENHANCE_YOUR_CALM). With no dynamic table a compliant client decodes to
 * under 60 bytes a byte; only a table the client was told not to use (or
 * uses before acknowledging our SETTINGS) goes beyond. */
#define GRPC_MAX_HEADER_LIST_BYTES 16384u
#define GRPC_HPACK_MAX_RATIO 64u
#define GRPC_HPACK_ALLOWANCE_BYTES (64u * 1024)

/* Listens and starts accepting. Returns 0, or KGS_EIO with a message like
 * "listen 0.0.0.0:6000: bind: Address already in use", or KGS_ENOMEM. */
int grpc_server_start(loop_t *loop, const grpc_server_opts_t *opts,
                      const grpc_server_handlers_t *handlers, void *user_data, grpc_server_t **out,
                      char *err, size_t errlen);

uint16_t grpc_server_port(const grpc_server_t *s);
/* Serves an already connected, non-blocking socket as if it had been
 * accepted (the server owns fd afterwards, and closes it on every path).
 * For tests and fuzzing, which drive the server over a socketpair. */
void grpc_server_adopt(grpc_server_t *s, int fd);

unsigned grpc_server_connection_count(const grpc_server_t *s);
unsigned grpc_server_call_count(const grpc_server_t *s);
/* Requests refused for exceeding max_request_bytes, since start. */
uint64_t grpc_server_requests_too_large(const grpc_server_t *s);

/* Connections refused since start, by the limit that refused them. */
typedef struct {
    uint64_t max_connections;          /* the total cap was reached */
    uint64_t max_connections_per_peer; /* their address held its share */
    /* Out of descriptors (EMFILE/ENFILE): accepted on the reserve
     * descriptor and closed at once (see sock_accept_reserved). */
    uint64_t out_of_descriptors;
} grpc_server_refusals_t;
void grpc_server_refusals(const grpc_server_t *s, grpc_server_refusals_t *out);
/* What the HTTP/2 budgets refused since start, and what is buffered now. */
typedef struct {
    uint64_t refused_buffered_per_connection; /* requests over a connection's budget */
    uint64_t refused_buffered;                /* requests over the server's budget */
    uint64_t refused_header_list;             /* streams reset: header list too large */
    uint64_t refused_hpack;                   /* connections closed: HPACK amplification */
    size_t buffered_bytes;                    /* request bytes held now, all connections */
} grpc_server_limit_stats_t;
void grpc_server_limit_stats(const grpc_server_t *s, grpc_server_limit_stats_t *out);

/*
 * Graceful shutdown: stops accepting, sends GOAWAY on every connection
 * (calls already started may finish), and runs done(user_data) once every
 * connection has closed. The handler should finish its streaming calls.
 */
void grpc_server_shutdown(grpc_server_t *s, void (*done)(void *), void *user_data);

/* Closes everything at once (no callbacks) and frees. NULL does nothing. */
void grpc_server_free(grpc_server_t *s);

/* ---- calls ----------------------------------------------------------------- */

void grpc_call_set_user_data(grpc_call_t *c, void *user_data);
void *grpc_call_user_data(const grpc_call_t *c);
/* The client's deadline from grpc-timeout (monotonic), or 0 when none.
 * The server enforces it: at the deadline an unfinished call ends with
 * DEADLINE_EXCEEDED and on_call_gone is called. */
mono_ns_t grpc_call_deadline(const grpc_call_t *c);
/* "ip:port" of the peer. Borrowed. */
const char *grpc_call_peer(const grpc_call_t *c);
/* A byte count the handler keeps per connection (what the connection's
 * calls hold: the handler adds and subtracts, the server only stores it).
 * 0 on a new connection; valid while the call is (in on_call_gone too). */
size_t *grpc_call_connection_bytes(grpc_call_t *c);

/*
 * Queues one response message (copied). With latest_only, a previous
 * message that has not started going out is replaced instead of queued:
 * a slow reader of a state stream only ever gets the newest state.
 * Returns 0 or KGS_ENOMEM / KGS_ESTATE (already finished).
 */
int grpc_call_send(grpc_call_t *c, const uint8_t *msg, size_t len, bool latest_only);

/* Ends the call with a status (and message, percent-encoded on the wire;
 * may be NULL). After this the handler must not touch the call. */
void grpc_call_finish(grpc_call_t *c, int status, const char *message);

#endif
