/*
 * fetch.h - one request/response exchange with a remote source on the
 * event loop: connect (non-blocking, through net/connector.h) to an address
 * already checked by the SSRF guard, optional TLS, send the request bytes, read until the caller's
 * completeness test says the response is whole (or the peer closes), with
 * one deadline for the whole exchange and a cap on the bytes read.
 *
 * A new connection per exchange: sources are polled every second or so,
 * and a fresh connection never carries state (AUTH, SELECT, a half-read
 * response) from an exchange that timed out.
 *
 * Loop thread only.
 */
#ifndef KGS_SOURCES_FETCH_H
#define KGS_SOURCES_FETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <openssl/ssl.h>

#include "net/connector.h"
#include "net/loop.h"

typedef struct fetch fetch_t;

/* Says whether buf[0..len) (everything read so far) is a whole response:
 * 1 complete, 0 read more, -1 malformed (reason in why). */
typedef int (*fetch_complete_cb)(void *user_data, const char *buf, size_t len, char *why,
                                 size_t whylen);

/* The outcome, once: status 0 with the bytes read (borrowed for the call;
 * eof says the peer closed), or a KGS_E* code with a message such as
 * "connect 10.0.0.7:8000: Connection refused" or "timed out after 2s
 * (connecting)". KGS_ENOPEER: nobody is at the address (refused,
 * unreachable, or the deadline passed while connecting); KGS_ETIMEDOUT: the
 * deadline passed after the connection was made (a server is there, slow).
 * The fetch is freed after the callback returns. */
typedef void (*fetch_done_cb)(void *user_data, int status, const char *buf, size_t len, bool eof,
                              const char *error);

typedef struct {
    struct sockaddr_storage addr; /* where to connect; must already pass source_guard_addr */
    socklen_t addrlen;
    connector_addr_check_cb addr_check; /* NULL, or checked again right before the connect
                                           (source_guard_addr): a refusal fails fetch_start */
    SSL_CTX *tls;         /* NULL: plain TCP; else borrowed (each SSL takes a reference) */
    const char *tls_host; /* name to verify and send as SNI; an IP literal verifies the IP */
    const char *alpn;     /* "http/1.1" to offer; NULL offers none */
    const char *request;  /* copied */
    size_t request_len;
    size_t max_bytes;           /* a response over this fails with KGS_ERANGE */
    uint64_t timeout_ns;        /* the whole exchange */
    fetch_complete_cb complete; /* NULL: read until the peer closes */
    fetch_done_cb done;
    void *user_data;
} fetch_request_t;

/*
 * Starts the exchange. Returns 0 with *out (a handle for fetch_cancel; the
 * fetch frees itself after done runs), or KGS_EIO / KGS_ENOMEM with a
 * message, in which case done is never called.
 */
int fetch_start(loop_t *loop, const fetch_request_t *req, fetch_t **out, char *err, size_t errlen);

/* Abandons the exchange: done is not called. NULL does nothing. Not from
 * inside its own done callback. */
void fetch_cancel(fetch_t *f);

#endif
