#include "net/transport.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/err.h"
#include "net/tls.h"

int transport_init(transport_t *t, int fd, SSL_CTX *ctx, bool server, const char *sni) {
    memset(t, 0, sizeof *t);
    t->fd = fd;
    if (!ctx) {
        t->handshake_done = true;
        return 0;
    }
    t->ssl = SSL_new(ctx);
    if (!t->ssl)
        return KGS_ENOMEM;
    SSL_set_fd(t->ssl, fd);
    if (server) {
        SSL_set_accept_state(t->ssl);
    } else {
        SSL_set_connect_state(t->ssl);
        if (sni) {
            SSL_set_tlsext_host_name(t->ssl, sni);
            SSL_set1_host(t->ssl, sni); /* hostname verification */
        }
    }
    return 0;
}

/* Maps an SSL return to AGAIN / ERROR, remembering what SSL wants. */
static int ssl_outcome(transport_t *t, int rc, const char *op) {
    int e = SSL_get_error(t->ssl, rc);
    t->ssl_wants_read = e == SSL_ERROR_WANT_READ;
    t->ssl_wants_write = e == SSL_ERROR_WANT_WRITE;
    if (t->ssl_wants_read || t->ssl_wants_write)
        return TRANSPORT_AGAIN;
    if (e == SSL_ERROR_ZERO_RETURN)
        return 0;
    char why[200];
    if (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0)
        snprintf(t->error, sizeof t->error, "%s: %s", op, errno ? strerror(errno) : "EOF");
    else
        snprintf(t->error, sizeof t->error, "%s: %s", op, tls_error_string(why, sizeof why));
    ERR_clear_error();
    return TRANSPORT_ERROR;
}

int transport_handshake(transport_t *t) {
    if (t->handshake_done)
        return 0;
    ERR_clear_error();
    int rc = SSL_do_handshake(t->ssl);
    if (rc != 1) {
        int r = ssl_outcome(t, rc, "TLS handshake");
        return r == 0 ? TRANSPORT_ERROR : r;
    }
    t->ssl_wants_read = t->ssl_wants_write = false;
    const unsigned char *proto = NULL;
    unsigned len = 0;
    SSL_get0_alpn_selected(t->ssl, &proto, &len);
    if (len != 2 || memcmp(proto, "h2", 2) != 0) {
        snprintf(t->error, sizeof t->error, "TLS handshake: peer did not negotiate ALPN h2");
        return TRANSPORT_ERROR;
    }
    t->handshake_done = true;
    return 0;
}

ssize_t transport_read(transport_t *t, void *buf, size_t len) {
    if (!t->ssl) {
        for (;;) {
            ssize_t n = recv(t->fd, buf, len, 0);
            if (n >= 0)
                return n;
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return TRANSPORT_AGAIN;
            snprintf(t->error, sizeof t->error, "recv: %s", strerror(errno));
            return TRANSPORT_ERROR;
        }
    }
    ERR_clear_error();
    int n = SSL_read(t->ssl, buf, len > INT32_MAX ? INT32_MAX : (int)len);
    if (n > 0) {
        t->ssl_wants_read = t->ssl_wants_write = false;
        return n;
    }
    return ssl_outcome(t, n, "TLS read");
}

ssize_t transport_write(transport_t *t, const void *buf, size_t len) {
    if (!t->ssl) {
        for (;;) {
            ssize_t n = send(t->fd, buf, len, MSG_NOSIGNAL);
            if (n >= 0)
                return n;
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return TRANSPORT_AGAIN;
            snprintf(t->error, sizeof t->error, "send: %s", strerror(errno));
            return TRANSPORT_ERROR;
        }
    }
    ERR_clear_error();
    int n = SSL_write(t->ssl, buf, len > INT32_MAX ? INT32_MAX : (int)len);
    if (n > 0) {
        t->ssl_wants_read = t->ssl_wants_write = false;
        return n;
    }
    int r = ssl_outcome(t, n, "TLS write");
    return r == 0 ? TRANSPORT_ERROR : r;
}

uint32_t transport_poll_events(const transport_t *t, bool want_read, bool want_write) {
    uint32_t ev = 0;
    if (t->ssl && (!t->handshake_done || t->ssl_wants_read || t->ssl_wants_write)) {
        if (t->ssl_wants_read)
            ev |= EPOLLIN;
        if (t->ssl_wants_write)
            ev |= EPOLLOUT;
        if (!t->handshake_done && !ev)
            ev = EPOLLIN;
    }
    if (want_read)
        ev |= EPOLLIN;
    if (want_write)
        ev |= EPOLLOUT;
    return ev;
}

void transport_close(transport_t *t) {
    if (t->ssl) {
        if (t->handshake_done)
            SSL_shutdown(t->ssl); /* best effort close_notify; non-blocking */
        SSL_free(t->ssl);
        t->ssl = NULL;
    }
    if (t->fd >= 0)
        close(t->fd);
    t->fd = -1;
}

int transport_client_handshake(transport_t *t, const char *alpn, char *why, size_t whylen) {
    ERR_clear_error();
    int rc = SSL_do_handshake(t->ssl);
    if (rc == 1) {
        t->ssl_wants_read = t->ssl_wants_write = false;
        const unsigned char *proto = NULL;
        unsigned len = 0;
        SSL_get0_alpn_selected(t->ssl, &proto, &len);
        if (alpn && len && (len != strlen(alpn) || memcmp(proto, alpn, len) != 0)) {
            snprintf(why, whylen, "TLS handshake: server chose ALPN %.*s, not %s", (int)len,
                     (const char *)proto, alpn);
            return TRANSPORT_ERROR;
        }
        t->handshake_done = true;
        return 0;
    }
    int e = SSL_get_error(t->ssl, rc);
    t->ssl_wants_read = e == SSL_ERROR_WANT_READ;
    t->ssl_wants_write = e == SSL_ERROR_WANT_WRITE;
    if (t->ssl_wants_read || t->ssl_wants_write)
        return TRANSPORT_AGAIN;
    char ossl[200];
    long vr = SSL_get_verify_result(t->ssl);
    /* Nothing at all came back, or the first bytes were no TLS record: the
     * usual look of a plaintext (h2c) server answering a ClientHello. */
    unsigned long first = ERR_peek_error();
    int reason = first ? ERR_GET_REASON(first) : 0;
    BIO *rbio = SSL_get_rbio(t->ssl);
    t->peer_not_tls = vr == X509_V_OK && ((rbio && BIO_number_read(rbio) == 0 &&
                                           (e == SSL_ERROR_SYSCALL || e == SSL_ERROR_ZERO_RETURN ||
                                            reason == SSL_R_UNEXPECTED_EOF_WHILE_READING)) ||
                                          reason == SSL_R_WRONG_VERSION_NUMBER ||
                                          reason == SSL_R_PACKET_LENGTH_TOO_LONG);
    if (t->peer_not_tls)
        snprintf(why, whylen, "TLS handshake: the server %s: it may speak plaintext HTTP/2 (h2c)",
                 rbio && BIO_number_read(rbio) == 0 ? "closed the connection without answering"
                                                    : "answered with bytes that are not TLS");
    else if (vr != X509_V_OK)
        snprintf(why, whylen, "TLS handshake: certificate verification: %s",
                 X509_verify_cert_error_string(vr));
    else if (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0)
        snprintf(why, whylen, "TLS handshake: %s", errno ? strerror(errno) : "connection closed");
    else
        snprintf(why, whylen, "TLS handshake: %s", tls_error_string(ossl, sizeof ossl));
    ERR_clear_error();
    return TRANSPORT_ERROR;
}
