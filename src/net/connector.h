/*
 * connector.h - opens one outbound connection on the event loop, the one
 * place that does: a host name is resolved on the DNS thread (resolver.h),
 * the socket connects without blocking, trying each address in turn, an
 * optional address check refuses addresses before any connect (the SSRF
 * guard of the demand sources), then an optional TLS client handshake (ALPN
 * offered and checked, SNI and the server's name or IP checked against its
 * certificate), and one callback hands over a ready transport or an error.
 *
 * Used by the gRPC client (net/grpc_client.c), the source fetcher
 * (sources/fetch.c) and the Kubernetes API client (kube/kube_client.c).
 * It has no deadline of its own: each caller bounds the whole exchange with
 * its own timer and cancels the connector when it fires.
 *
 * Loop thread only.
 */
#ifndef KGS_NET_CONNECTOR_H
#define KGS_NET_CONNECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include <openssl/ssl.h>

#include "net/loop.h"
#include "net/transport.h"

typedef struct connector connector_t;

typedef enum {
    CONNECTOR_RESOLVING,  /* waiting for the DNS thread */
    CONNECTOR_CONNECTING, /* waiting for the socket to become writable */
    CONNECTOR_HANDSHAKE,  /* in the TLS handshake */
} connector_phase_t;

/* Says whether an address may be connected to: NULL yes, else the reason
 * it is refused (static storage). Same shape as source_guard_addr(). */
typedef const char *(*connector_addr_check_cb)(const struct sockaddr *addr, socklen_t len);

/*
 * The outcome, once: status 0 with a transport that has finished its
 * handshake; the callee takes it over (copy *tr: the fd and the SSL are
 * its own now, to transport_close) and should read and write at once, as
 * TLS may already hold bytes. Or a KGS_E* code (tr NULL) with a message,
 * see connector_opts_t.name; KGS_ENOPEER when nobody is at the address (the
 * connect was refused, or the host or network was unreachable, or the
 * kernel gave up: what a pod that is not there answers); KGS_EPROTO when the TLS handshake got no
 * TLS back (the server may speak plaintext). The connector is freed (or done with its storage,
 * connector_start_in) before the call: do not cancel it from inside.
 */
typedef void (*connector_done_cb)(void *user_data, int status, transport_t *tr, const char *error);

typedef struct {
    /* Where, one of the two: */
    const char *address; /* "host:port", "[v6]:port" or "unix:/path"; a host that is not an IP
                            literal is resolved on the DNS thread (numeric ports only) */
    const struct sockaddr_storage *addrs; /* or addresses, tried in this order */
    const socklen_t *addrlens;
    size_t naddrs;
    /* Run on every address before the first connect; one refusal refuses
     * the connection as a whole ("refused to connect to PEER: REASON"),
     * so a name that also resolves to a forbidden address is never used. */
    connector_addr_check_cb check_addr;
    /* How messages name the peer: "connect NAME: Connection refused",
     * "NAME: TLS handshake: ..."; NULL names the address being tried; ""
     * leaves it out ("connect: ...", "TLS handshake: ...") for a caller
     * that adds its own context. */
    const char *name;
    SSL_CTX *tls;         /* NULL: plain; else borrowed (each SSL takes its own reference) */
    const char *tls_host; /* SNI and the name the certificate must carry; an IP literal sends
                             no SNI (RFC 6066 section 3) and is checked against the IP SANs;
                             NULL or "": no name check */
    const char *alpn;     /* offered on this connection ("h2", "http/1.1"); a server that
                             selects another is refused; NULL: the context's own list */
    bool alpn_required;   /* a server that selects none is refused too (gRPC needs h2) */
    connector_done_cb done;
    void *user_data;
} connector_opts_t;

/*
 * Starts connecting. Everything in opts is copied. Returns 0 with *out (a
 * handle for connector_cancel, valid until done runs); done then runs once,
 * from the loop, never inside this call. Or, with nothing started and done
 * never called: KGS_EINVAL (a malformed address, or no address), KGS_EIO
 * (socket or connect failed at once on every address, a refused address,
 * the DNS thread or epoll failed) or KGS_ENOMEM, with a message in err.
 */
int connector_start(loop_t *loop, const connector_opts_t *opts, connector_t **out, char *err,
                    size_t errlen);

/* Abandons the connection (closing its socket); done is not called. NULL
 * does nothing. */
void connector_cancel(connector_t *c);

/*
 * Room for a connector inside its owner, for an owner that connects often:
 * each source poll is a new connection, and an aggregator's pod sources
 * (500 in the scrape bench) poll in the same instant, so a connector per
 * poll is peak memory. connector.c asserts that the struct fits.
 */
#define CONNECTOR_STORAGE_SIZE 576
typedef union {
    max_align_t align;
    unsigned char bytes[CONNECTOR_STORAGE_SIZE];
} connector_storage_t;

/*
 * As connector_start, but the connector lives in *storage (the caller's,
 * for as long as the connector runs): nothing is allocated for it and
 * nothing frees it. Once done has been called or connector_cancel has
 * returned, the connector no longer touches storage, so the caller may
 * reuse it at once (even from inside done: the transport handed to done is
 * not in storage). The same errors as connector_start.
 */
int connector_start_in(connector_storage_t *storage, loop_t *loop, const connector_opts_t *opts,
                       connector_t **out, char *err, size_t errlen);

connector_phase_t connector_phase(const connector_t *c);

/* "resolving", "connecting", "in the TLS handshake": for timeout messages. */
const char *connector_phase_name(connector_phase_t p);

#endif
