/*
 * fetch.h - one request/response exchange with a remote source on the
 * event loop: connect (non-blocking, through net/connector.h) to an address
 * already checked by the SSRF guard, optional TLS, send the request bytes, hand the response's
 * bytes to the caller as they arrive until it says the response is whole
 * (or the peer closes), with one deadline for the whole exchange and a cap
 * on the bytes read. The fetch holds no response bytes: the caller parses
 * them as they come (a held 8 MiB body pins what the caller keeps of it).
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

/* Takes the response's bytes as they arrive, buf[0..len) (borrowed for the
 * call; the fetch keeps none of them): 0 read more, 1 the response is whole
 * (the exchange ends), -1 malformed or refused (reason in why: the exchange
 * fails with KGS_EINVAL). */
typedef int (*fetch_data_cb)(void *user_data, const char *buf, size_t len, char *why,
                             size_t whylen);

/* The outcome, once: status 0 (eof says the peer closed; otherwise the data
 * callback said the response is whole), or a KGS_E* code with a message
 * such as "connect 10.0.0.7:8000: Connection refused" or "timed out after
 * 2s (connecting)". KGS_ENOPEER: nobody is at the address (refused,
 * unreachable, or the deadline passed while connecting); KGS_ETIMEDOUT: the
 * deadline passed after the connection was made (a server is there, slow);
 * KGS_EINVAL: the data callback refused the response. The fetch is freed
 * after the callback returns. */
typedef void (*fetch_done_cb)(void *user_data, int status, bool eof, const char *error);

/* Bytes read and handed on per readiness event (or per turn of the loop,
 * for TLS's buffered records): a fast server sending a large response
 * gets the loop for a bounded slice at a time, and every other descriptor
 * is served in between. */
#define FETCH_SLICE_BYTES (64u * 1024)

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
    size_t max_bytes;    /* a response over this fails with KGS_ERANGE */
    uint64_t timeout_ns; /* the whole exchange */
    fetch_data_cb data;  /* required */
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
