/*
 * http_server.h - a small HTTP/1.1 server on the event loop, for /metrics,
 * /healthz and /readyz.
 *
 * GET and HEAD only (HEAD answers the GET head without a body); keep-alive
 * and pipelining (answers in order); never blocks the loop. Bad input gets
 * 400 (malformed), 405 (other methods), 413 (a request body), 431 (head
 * too large or too many fields), 505 (not HTTP/1.x) and the connection is
 * closed after the answer. A request head must arrive within
 * head_timeout_ns of its first byte (slowloris guard; answered 408); a
 * connection waiting for a request (zero bytes yet, or keep-alive idle)
 * is closed after head_timeout_ns (idle_timeout_ns if shorter), and a
 * stalled writer after idle_timeout_ns. A connection beyond
 * max_connections evicts the open one least worth keeping (idle first,
 * oldest first), so probes always get in; out of descriptors, a reserve
 * descriptor admits one (see http_server.c).
 *
 * Loop thread only: every function here and the handler run on the thread
 * that runs `loop`.
 */
#ifndef KGS_NET_HTTP_SERVER_H
#define KGS_NET_HTTP_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "core/log.h"
#include "net/http1.h"
#include "net/loop.h"
#include "net/prom_text.h"

typedef struct http_server http_server_t;

typedef struct {
    int status;               /* 100..599; anything else is answered 500 */
    const char *content_type; /* NULL omits the header */
    const char *body;         /* borrowed until the handler returns; may be NULL if body_len 0 */
    size_t body_len;
} http_response_t;

/*
 * Called on the loop thread for each complete GET or HEAD request. *req and
 * its slices are borrowed for the call. *resp arrives preset to 404
 * "not found\n" (text/plain), so a handler only fills what it serves. The
 * body may point into *scratch (a per-server buffer, reset before each
 * call; if scratch->failed is set on return the answer is 500) or into
 * static storage; it is copied before the next call. For HEAD the handler
 * runs as for GET and the body is dropped. The handler may call
 * http_server_free() on its own server: the answer is then not sent.
 */
typedef void (*http_handler_fn)(const http1_request_t *req, http_response_t *resp,
                                prom_buf_t *scratch, void *user_data);

typedef struct {
    unsigned max_connections; /* 0 = 64 */
    uint64_t idle_timeout_ns; /* 0 = 30 s: a write that makes no progress (and keep-alive, if
                                 shorter than the head timeout) */
    uint64_t head_timeout_ns; /* 0 = 10 s: from a request's first byte to its blank line */
    const logger_t *log;      /* borrowed, may be NULL: accept failures, capped connections */
} http_server_opts_t;

/*
 * Listens on addr:port (addr numeric: "0.0.0.0", "::", "127.0.0.1", "[::1]";
 * port 0 picks a free port, see http_server_port) and serves on `loop`.
 * opts may be NULL (all defaults). loop and user_data are borrowed for the
 * server's life. Returns 0 and *out (returned: free with http_server_free),
 * or KGS_EINVAL (address not numeric), KGS_ENOMEM, KGS_EIO with a message
 * such as "listen 0.0.0.0:8081: bind: Address already in use".
 */
int http_server_listen(loop_t *loop, const char *addr, uint16_t port,
                       const http_server_opts_t *opts, http_handler_fn handler, void *user_data,
                       http_server_t **out, char *err, size_t errlen);

/* The bound port (the real one when 0 was asked for). */
uint16_t http_server_port(const http_server_t *s);

/* Connections open now. */
unsigned http_server_connections(const http_server_t *s);

/* Connections closed to make room for a new one (the cap, or out of
 * descriptors), and connections admitted on the reserve descriptor, since
 * start. */
uint64_t http_server_evictions(const http_server_t *s);
uint64_t http_server_reserve_admissions(const http_server_t *s);

/* Closes the listener and every connection (answers not yet written are
 * dropped) and frees the server. NULL does nothing. Safe from inside the
 * handler (the free then completes when the handler returns). */
void http_server_free(http_server_t *s);

#endif
