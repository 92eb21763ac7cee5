/*
 * transport.h - a non-blocking byte stream over a socket, plain or TLS.
 *
 * Hides OpenSSL's twist that a read may need the socket writable and a write
 * readable: transport_poll_events() says what to wait for.
 */
#ifndef KGS_NET_TRANSPORT_H
#define KGS_NET_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <openssl/ssl.h>

#define TRANSPORT_AGAIN (-1) /* would block: wait for transport_poll_events() */
#define TRANSPORT_ERROR (-2) /* broken: close */

typedef struct {
    int fd;   /* owned */
    SSL *ssl; /* owned; NULL for plain TCP */
    bool handshake_done;
    bool ssl_wants_read, ssl_wants_write; /* what the last SSL call asked for */
    bool peer_not_tls; /* client: the handshake got no TLS back (a plaintext server?) */
    char error[256];   /* why the last TRANSPORT_ERROR happened */
} transport_t;

/* Wraps an accepted/connected socket; ctx NULL = plain. server chooses the
 * TLS role. Returns 0 or KGS_ENOMEM. `sni` (client, may be NULL). */
int transport_init(transport_t *t, int fd, SSL_CTX *ctx, bool server, const char *sni);

/* Drives the server side of a TLS handshake: 0 done (ALPN checked to be
 * "h2"), TRANSPORT_AGAIN or TRANSPORT_ERROR. Plain transports are done at
 * once. */
int transport_handshake(transport_t *t);

/* The client side of a TLS handshake (net/connector.c drives it): 0 done,
 * TRANSPORT_AGAIN or TRANSPORT_ERROR with a message in why ("TLS handshake:
 * certificate verification: ..."). With alpn (e.g. "http/1.1"; NULL = no
 * check), a server that selected another protocol is refused. When the
 * server closed without a byte of TLS, or answered with bytes that are no
 * TLS record, peer_not_tls is set and why says it may speak plaintext. */
int transport_client_handshake(transport_t *t, const char *alpn, char *why, size_t whylen);

/* > 0 bytes, 0 orderly EOF, TRANSPORT_AGAIN, TRANSPORT_ERROR. */
ssize_t transport_read(transport_t *t, void *buf, size_t len);
ssize_t transport_write(transport_t *t, const void *buf, size_t len);

/* EPOLLIN/EPOLLOUT to wait for, given what the protocol wants. */
uint32_t transport_poll_events(const transport_t *t, bool want_read, bool want_write);

/* Closes the socket and frees TLS state (sends close_notify best-effort). */
void transport_close(transport_t *t);

#endif
