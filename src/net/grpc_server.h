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
    const logger_t *log;                /* borrowed; may be NULL */
} grpc_server_opts_t;

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
