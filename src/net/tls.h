/*
 * tls.h - OpenSSL contexts for the gRPC server and client: TLS 1.2+, ALPN
 * "h2" required, optional client-certificate verification (mTLS), and
 * certificate files re-read when they change on disk.
 */
#ifndef KGS_NET_TLS_H
#define KGS_NET_TLS_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/ssl.h>

typedef struct tls_server tls_server_t;

/*
 * Loads cert (PEM chain) and key; with client_ca (may be NULL) every client
 * must present a certificate signed by it, else the handshake fails. Returns
 * 0, or KGS_EIO / KGS_EINVAL with a message naming the file and what is
 * wrong: OpenSSL's reason, an expired or not yet valid certificate, a key
 * that does not match or that every user can read. Returned: free with
 * tls_server_free().
 */
int tls_server_new(const char *cert, const char *key, const char *client_ca, tls_server_t **out,
                   char *err, size_t errlen);

/* The context for new connections; borrowed until the next reload (each
 * SSL made from it holds its own reference). */
SSL_CTX *tls_server_ctx(tls_server_t *t);

/*
 * Re-reads the files when any of their mtimes or sizes changed. On success
 * new handshakes use the new certificate at once and *reloaded is true; on
 * failure (a half-written file, a key that does not match) the old context
 * stays in use and the error is returned for logging: KGS_EIO / KGS_EINVAL.
 */
int tls_server_reload_if_changed(tls_server_t *t, bool *reloaded, char *err, size_t errlen);

void tls_server_free(tls_server_t *t);

/*
 * A client context: verifies the server against ca (NULL: the system's
 * roots) unless insecure; presents cert/key when both are given (refused
 * when the certificate has expired or is not yet valid, or the key does not
 * match); offers ALPN "h2". Returned: SSL_CTX_free(). NULL on failure with
 * a message naming the file.
 */
SSL_CTX *tls_client_ctx_new(const char *ca, const char *cert, const char *key, bool insecure,
                            char *err, size_t errlen);

/*
 * A client context that follows its files, as tls_server_t does for the
 * server: the aggregator's link to the agents (verify the agent against
 * ca, present cert/key when both are given). Returns 0, or KGS_EIO /
 * KGS_EINVAL with a message naming the file and what is wrong (missing,
 * not PEM, expired, key not matching). Returned: free with
 * tls_client_free().
 */
typedef struct tls_client tls_client_t;
int tls_client_new(const char *ca, const char *cert, const char *key, tls_client_t **out, char *err,
                   size_t errlen);

/* The context for new connections; borrowed until the next reload: a
 * caller that keeps it past that takes its own reference (SSL_CTX_up_ref). */
SSL_CTX *tls_client_ctx(tls_client_t *t);

/* As tls_server_reload_if_changed: on failure the old context stays. */
int tls_client_reload_if_changed(tls_client_t *t, bool *reloaded, char *err, size_t errlen);

void tls_client_free(tls_client_t *t);

/* Formats OpenSSL's error queue (and clears it) into buf. Returns buf. */
char *tls_error_string(char *buf, size_t buflen);

#endif
