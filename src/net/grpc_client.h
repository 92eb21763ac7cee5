/*
 * grpc_client.h - a gRPC client connection on the event loop (h2c or TLS):
 * unary and server-streaming calls over one HTTP/2 connection, as KEDA's
 * own client uses it. Loop thread only.
 *
 * Callback contract: if grpc_client_call() fails it returns an error and no
 * callback runs; otherwise on_done runs exactly once (possibly after
 * on_message calls), from the loop, never from inside grpc_client_call().
 */
#ifndef KGS_NET_GRPC_CLIENT_H
#define KGS_NET_GRPC_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "core/log.h"
#include "net/loop.h"

typedef struct grpc_client grpc_client_t;
typedef struct grpc_client_call grpc_client_call_t;

typedef struct {
    const char *address;     /* "host:port", "[v6]:port", "unix:/path" */
    SSL_CTX *tls;            /* borrowed; NULL = h2c */
    const char *server_name; /* TLS SNI and name check (an IP: its SAN, no SNI); NULL = the
                                host part */
    const logger_t *log;     /* borrowed; may be NULL */
} grpc_client_opts_t;

/* Starts connecting (net/connector.h: a host name is resolved on the DNS
 * thread, each address tried in turn); calls may be issued at once and run
 * when connected. Returns 0, or KGS_EINVAL (bad address) / KGS_EIO (connect
 * failed at once, as for a missing unix socket) with a message. A later
 * failure (resolution, connect, TLS) ends the calls with UNAVAILABLE and
 * that message ("resolve agents.ns.svc: Name or service not known"). */
int grpc_client_connect(loop_t *loop, const grpc_client_opts_t *opts, grpc_client_t **out,
                        char *err, size_t errlen);

typedef void (*grpc_client_message_cb)(void *user_data, const uint8_t *msg, size_t len);
/* status: a gRPC code; UNAVAILABLE when the connection failed or closed. */
typedef void (*grpc_client_done_cb)(void *user_data, int status, const char *message);

/* Starts a call with one request message. timeout_ns 0 = none (else sent as
 * grpc-timeout and enforced locally too). Returns 0 (the call handle in *out
 * if out is not NULL; valid until on_done returns) or KGS_ENOMEM / KGS_ESTATE. */
int grpc_client_call(grpc_client_t *c, const char *path, const uint8_t *req, size_t len,
                     uint64_t timeout_ns, grpc_client_message_cb on_message,
                     grpc_client_done_cb on_done, void *user_data, grpc_client_call_t **out);

/* Cancels (RST_STREAM CANCEL); on_done follows with CANCELLED. */
void grpc_client_cancel(grpc_client_call_t *call);

/* What the connection's failure says about the server's mode. */
typedef enum {
    GRPC_CLIENT_MODE_OK = 0,          /* no sign of a mismatch */
    GRPC_CLIENT_MODE_SERVER_TLS,      /* we spoke plaintext; the server answered in TLS or
                                         refused with GOAWAY INADEQUATE_SECURITY */
    GRPC_CLIENT_MODE_SERVER_PLAINTEXT /* we spoke TLS; no TLS came back */
} grpc_client_mode_hint_t;

/* Whether this connection failed in a way that says the server speaks the
 * other mode (TLS vs plaintext h2c); sticky once seen. For callers that
 * know which flag picks the mode, to name it. */
grpc_client_mode_hint_t grpc_client_mode_hint(const grpc_client_t *c);

/* Closes the connection; pending calls get on_done(UNAVAILABLE) first. */
void grpc_client_free(grpc_client_t *c);

#endif
