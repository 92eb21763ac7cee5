/*
 * tls.c - OpenSSL 3 contexts.
 *
 * Why ALPN is mandatory: gRPC clients speak HTTP/2 with prior knowledge and
 * grpc-go >= 1.67 refuses a TLS peer that did not negotiate "h2", so a
 * handshake without it is failed here rather than producing a connection
 * that will break later.
 */
#include "net/tls.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/err.h"

struct tls_server {
    char *cert, *key, *client_ca;
    struct stat st_cert, st_key, st_ca;
    SSL_CTX *ctx;
};

char *tls_error_string(char *buf, size_t buflen) {
    size_t used = 0;
    unsigned long e;
    buf[0] = '\0';
    while ((e = ERR_get_error()) != 0) {
        char one[256];
        ERR_error_string_n(e, one, sizeof one);
        if (used < buflen) {
            int w = snprintf(buf + used, buflen - used, "%s%s", used ? "; " : "", one);
            used += w > 0 ? (size_t)w : 0;
        }
    }
    if (!buf[0])
        snprintf(buf, buflen, "unknown TLS error");
    return buf;
}

/* A file that is not there or not readable: said in words before OpenSSL
 * reports it as a "system library" error. `what` names the role. */
static int file_problem(const char *what, const char *path, char *err, size_t errlen) {
    if (access(path, R_OK) == 0)
        return 0;
    int e = errno;
    return kgs_seterr(err, errlen, KGS_EIO, "%s %s: %s", what, path,
                      e == ENOENT ? "no such file (is the Secret mounted?)" : strerror(e));
}

static void asn1_time_text(const ASN1_TIME *t, char *buf, size_t len) {
    struct tm tm;
    if (ASN1_TIME_to_tm(t, &tm) == 1 && strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm) > 0)
        return;
    snprintf(buf, len, "(an unreadable date)");
}

/* A certificate outside its validity window fails every handshake at the
 * peer, which says only "certificate has expired": refuse it here instead,
 * naming the file and the date, so the operator sees it where it is. */
static int cert_validity(SSL_CTX *ctx, const char *what, const char *path, char *err,
                         size_t errlen) {
    X509 *x = SSL_CTX_get0_certificate(ctx);
    if (!x)
        return 0;
    char when[64];
    if (X509_cmp_current_time(X509_get0_notAfter(x)) < 0) {
        asn1_time_text(X509_get0_notAfter(x), when, sizeof when);
        return kgs_seterr(err, errlen, KGS_EINVAL, "%s %s expired on %s (notAfter): renew it", what,
                          path, when);
    }
    if (X509_cmp_current_time(X509_get0_notBefore(x)) > 0) {
        asn1_time_text(X509_get0_notBefore(x), when, sizeof when);
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s %s is not valid before %s (notBefore): check this node's clock", what,
                          path, when);
    }
    return 0;
}

static int alpn_select_h2(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                          const unsigned char *in, unsigned int inlen, void *arg) {
    (void)ssl;
    (void)arg;
    for (unsigned i = 0; i + 1 <= inlen;) {
        unsigned n = in[i];
        if (i + 1 + n > inlen)
            break;
        if (n == 2 && memcmp(in + i + 1, "h2", 2) == 0) {
            *out = in + i + 1;
            *outlen = 2;
            return SSL_TLSEXT_ERR_OK;
        }
        i += 1 + n;
    }
    return SSL_TLSEXT_ERR_ALERT_FATAL; /* no h2: fail the handshake */
}

static SSL_CTX *server_ctx_build(const char *cert, const char *key, const char *client_ca,
                                 char *err, size_t errlen, int *code) {
    char why[512];
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        *code = kgs_seterr(err, errlen, KGS_ENOMEM, "TLS: %s", tls_error_string(why, sizeof why));
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    /* TLS 1.2: forward-secret AEAD suites only; TLS 1.3 suites are all modern. */
    SSL_CTX_set_cipher_list(ctx, "ECDHE+AESGCM:ECDHE+CHACHA20");
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                                 SSL_OP_CIPHER_SERVER_PREFERENCE);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if ((*code = file_problem("TLS certificate", cert, err, errlen)) != 0 ||
        (*code = file_problem("TLS key", key, err, errlen)) != 0 ||
        (client_ca && (*code = file_problem("TLS client CA", client_ca, err, errlen)) != 0))
        goto fail;
    if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
        *code = kgs_seterr(err, errlen, KGS_EIO, "TLS certificate %s: %s", cert,
                           tls_error_string(why, sizeof why));
        goto fail;
    }
    if ((*code = cert_validity(ctx, "TLS certificate", cert, err, errlen)) != 0)
        goto fail;
    /* A private key every local user can read is no longer private: refuse
     * it rather than serve with it (group-readable is fine: fsGroup setups). */
    struct stat kst;
    if (stat(key, &kst) == 0 && (kst.st_mode & S_IROTH)) {
        *code = kgs_seterr(err, errlen, KGS_EINVAL,
                           "TLS key %s is readable by every user (mode %04o): make it 0600 or "
                           "0640 (in Kubernetes: defaultMode: 0440 on the Secret volume)",
                           key, (unsigned)(kst.st_mode & 07777));
        goto fail;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
        *code = kgs_seterr(err, errlen, KGS_EIO, "TLS key %s: %s", key,
                           tls_error_string(why, sizeof why));
        goto fail;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        *code = kgs_seterr(err, errlen, KGS_EINVAL, "TLS key %s does not match certificate %s", key,
                           cert);
        ERR_clear_error();
        goto fail;
    }
    if (client_ca) {
        if (SSL_CTX_load_verify_locations(ctx, client_ca, NULL) != 1) {
            *code = kgs_seterr(err, errlen, KGS_EIO, "TLS client CA %s: %s", client_ca,
                               tls_error_string(why, sizeof why));
            goto fail;
        }
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    }
    SSL_CTX_set_alpn_select_cb(ctx, alpn_select_h2, NULL);
    *code = 0;
    return ctx;
fail:
    SSL_CTX_free(ctx);
    return NULL;
}

static char *dup_or_null(const char *s) {
    return s ? strdup(s) : NULL;
}

static void stat_or_zero(const char *path, struct stat *st) {
    memset(st, 0, sizeof *st);
    if (path)
        stat(path, st);
}

static bool stat_changed(const char *path, const struct stat *old) {
    struct stat now;
    stat_or_zero(path, &now);
    return now.st_mtim.tv_sec != old->st_mtim.tv_sec ||
           now.st_mtim.tv_nsec != old->st_mtim.tv_nsec || now.st_size != old->st_size ||
           now.st_ino != old->st_ino;
}

int tls_server_new(const char *cert, const char *key, const char *client_ca, tls_server_t **out,
                   char *err, size_t errlen) {
    tls_server_t *t = calloc(1, sizeof *t);
    if (!t)
        return kgs_seterr(err, errlen, KGS_ENOMEM, "TLS: out of memory");
    t->cert = dup_or_null(cert);
    t->key = dup_or_null(key);
    t->client_ca = dup_or_null(client_ca);
    if (!t->cert || !t->key || (client_ca && !t->client_ca)) {
        tls_server_free(t);
        return kgs_seterr(err, errlen, KGS_ENOMEM, "TLS: out of memory");
    }
    stat_or_zero(cert, &t->st_cert);
    stat_or_zero(key, &t->st_key);
    stat_or_zero(client_ca, &t->st_ca);
    int code = 0;
    t->ctx = server_ctx_build(cert, key, client_ca, err, errlen, &code);
    if (!t->ctx) {
        tls_server_free(t);
        return code;
    }
    *out = t;
    return 0;
}

SSL_CTX *tls_server_ctx(tls_server_t *t) {
    return t->ctx;
}

int tls_server_reload_if_changed(tls_server_t *t, bool *reloaded, char *err, size_t errlen) {
    *reloaded = false;
    if (!stat_changed(t->cert, &t->st_cert) && !stat_changed(t->key, &t->st_key) &&
        !(t->client_ca && stat_changed(t->client_ca, &t->st_ca)))
        return 0;
    int code = 0;
    SSL_CTX *ctx = server_ctx_build(t->cert, t->key, t->client_ca, err, errlen, &code);
    if (!ctx)
        return code; /* keep serving with the previous certificate */
    /* Remember the new state only once it loaded, so a half-written file is
     * retried on the next check. */
    stat_or_zero(t->cert, &t->st_cert);
    stat_or_zero(t->key, &t->st_key);
    stat_or_zero(t->client_ca, &t->st_ca);
    SSL_CTX_free(t->ctx); /* live connections keep their own reference */
    t->ctx = ctx;
    *reloaded = true;
    return 0;
}

void tls_server_free(tls_server_t *t) {
    if (!t)
        return;
    SSL_CTX_free(t->ctx);
    free(t->cert);
    free(t->key);
    free(t->client_ca);
    free(t);
}

SSL_CTX *tls_client_ctx_new(const char *ca, const char *cert, const char *key, bool insecure,
                            char *err, size_t errlen) {
    char why[512];
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) {
        kgs_seterr(err, errlen, KGS_ENOMEM, "TLS: %s", tls_error_string(why, sizeof why));
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    static const unsigned char alpn[] = {2, 'h', '2'};
    SSL_CTX_set_alpn_protos(ctx, alpn, sizeof alpn);
    if (insecure) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    } else {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        if (ca && file_problem("TLS CA", ca, err, errlen) != 0)
            goto fail;
        int ok = ca ? SSL_CTX_load_verify_locations(ctx, ca, NULL)
                    : SSL_CTX_set_default_verify_paths(ctx);
        if (ok != 1) {
            kgs_seterr(err, errlen, KGS_EIO, "TLS CA %s: %s", ca ? ca : "(system)",
                       tls_error_string(why, sizeof why));
            goto fail;
        }
    }
    if (cert && key) {
        if (file_problem("TLS client certificate", cert, err, errlen) != 0 ||
            file_problem("TLS client key", key, err, errlen) != 0)
            goto fail;
        if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
            kgs_seterr(err, errlen, KGS_EIO, "TLS client certificate %s: %s", cert,
                       tls_error_string(why, sizeof why));
            goto fail;
        }
        if (cert_validity(ctx, "TLS client certificate", cert, err, errlen) != 0)
            goto fail;
        if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
            kgs_seterr(err, errlen, KGS_EIO, "TLS client key %s: %s", key,
                       tls_error_string(why, sizeof why));
            goto fail;
        }
        if (SSL_CTX_check_private_key(ctx) != 1) {
            kgs_seterr(err, errlen, KGS_EINVAL, "TLS client key %s does not match certificate %s",
                       key, cert);
            ERR_clear_error();
            goto fail;
        }
    }
    return ctx;
fail:
    SSL_CTX_free(ctx);
    return NULL;
}

/* ---- a client context that follows its files ------------------------------------ */

struct tls_client {
    char *ca, *cert, *key;
    struct stat st_ca, st_cert, st_key;
    SSL_CTX *ctx;
};

void tls_client_free(tls_client_t *t) {
    if (!t)
        return;
    SSL_CTX_free(t->ctx);
    free(t->ca);
    free(t->cert);
    free(t->key);
    free(t);
}

int tls_client_new(const char *ca, const char *cert, const char *key, tls_client_t **out, char *err,
                   size_t errlen) {
    tls_client_t *t = calloc(1, sizeof *t);
    if (!t)
        return kgs_seterr(err, errlen, KGS_ENOMEM, "TLS: out of memory");
    t->ca = dup_or_null(ca);
    t->cert = dup_or_null(cert);
    t->key = dup_or_null(key);
    if ((ca && !t->ca) || (cert && !t->cert) || (key && !t->key)) {
        tls_client_free(t);
        return kgs_seterr(err, errlen, KGS_ENOMEM, "TLS: out of memory");
    }
    stat_or_zero(ca, &t->st_ca);
    stat_or_zero(cert, &t->st_cert);
    stat_or_zero(key, &t->st_key);
    t->ctx = tls_client_ctx_new(ca, cert, key, false, err, errlen);
    if (!t->ctx) {
        tls_client_free(t);
        return KGS_EIO;
    }
    *out = t;
    return 0;
}

SSL_CTX *tls_client_ctx(tls_client_t *t) {
    return t->ctx;
}

int tls_client_reload_if_changed(tls_client_t *t, bool *reloaded, char *err, size_t errlen) {
    *reloaded = false;
    if (!(t->ca && stat_changed(t->ca, &t->st_ca)) &&
        !(t->cert && stat_changed(t->cert, &t->st_cert)) &&
        !(t->key && stat_changed(t->key, &t->st_key)))
        return 0;
    SSL_CTX *ctx = tls_client_ctx_new(t->ca, t->cert, t->key, false, err, errlen);
    if (!ctx)
        return KGS_EIO; /* keep dialling with the previous files */
    stat_or_zero(t->ca, &t->st_ca);
    stat_or_zero(t->cert, &t->st_cert);
    stat_or_zero(t->key, &t->st_key);
    SSL_CTX_free(t->ctx); /* holders took their own reference */
    t->ctx = ctx;
    *reloaded = true;
    return 0;
}
