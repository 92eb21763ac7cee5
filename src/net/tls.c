/*
 * tls.c - OpenSSL 3 contexts.
 *
 * Why ALPN is mandatory: gRPC clients speak HTTP/2 with prior knowledge and
 * grpc-go >= 1.67 refuses a TLS peer that did not negotiate "h2", so a
 * handshake without it is failed here rather than producing a connection
 * that will break later.
 *
 * Why files are read here and not by OpenSSL's *_file functions: those
 * open(2) the path as they find it and read until EOF, on the event loop.
 * A certificate, key or CA replaced by a FIFO (or a device) would block the
 * loop for ever, and with it every RPC and /healthz. So each file is opened
 * non-blocking, must be a regular file (fstat), is read whole into memory
 * (at most TLS_FILE_MAX bytes) and only then handed to OpenSSL as a memory
 * BIO; a key's bytes are wiped afterwards. As net/token_file.c does for
 * bearer tokens.
 */
#include "net/tls.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/err.h"

/* The largest certificate, key or CA bundle read: a system CA bundle is
 * about 220 KiB. */
#define TLS_FILE_MAX (4u * 1024 * 1024)

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

/* A file's bytes, read whole (pem_file_read); pem_file_free wipes them. */
typedef struct {
    char *buf;
    size_t len;
} pem_file_t;

static void pem_file_free(pem_file_t *f) {
    if (f->buf)
        explicit_bzero(f->buf, f->len);
    free(f->buf);
    f->buf = NULL;
    f->len = 0;
}

/* Reads path (`what` names its role in messages) into *f: opened
 * O_NONBLOCK, a regular file only, at most TLS_FILE_MAX bytes. Returns 0,
 * or KGS_EIO / KGS_EINVAL / KGS_ENOMEM with a message naming the file. */
static int pem_file_read(const char *what, const char *path, pem_file_t *f, char *err,
                         size_t errlen) {
    f->buf = NULL;
    f->len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        return kgs_seterr(err, errlen, KGS_EIO, "%s %s: %s", what, path,
                          e == ENOENT ? "no such file (is the Secret mounted?)" : strerror(e));
    }
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        rc = kgs_seterr(err, errlen, KGS_EIO,
                        "%s %s is not a regular file (a FIFO, socket or device would block the "
                        "server; a Secret's files are regular files)",
                        what, path);
    else if ((uint64_t)st.st_size > TLS_FILE_MAX)
        rc = kgs_seterr(err, errlen, KGS_EINVAL, "%s %s is %lld bytes; the limit is %u", what, path,
                        (long long)st.st_size, TLS_FILE_MAX);
    else if (!(f->buf = malloc((size_t)st.st_size + 1)))
        rc = kgs_seterr(err, errlen, KGS_ENOMEM, "%s %s: out of memory", what, path);
    /* a regular file: read() never waits; it may have grown or shrunk since fstat */
    size_t cap = rc == 0 ? (size_t)st.st_size + 1 : 0;
    while (rc == 0 && f->len < cap) {
        ssize_t r = read(fd, f->buf + f->len, cap - f->len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            rc = kgs_seterr(err, errlen, KGS_EIO, "%s %s: %s", what, path, strerror(errno));
        else if (r == 0)
            break;
        else
            f->len += (size_t)r;
    }
    if (rc == 0 && f->len == cap)
        rc = kgs_seterr(err, errlen, KGS_EIO, "%s %s changed while it was read; tried again later",
                        what, path);
    close(fd);
    if (rc != 0)
        pem_file_free(f);
    return rc;
}

/* f's bytes as a read-only memory BIO (borrowing them), or NULL. */
static BIO *pem_bio(const pem_file_t *f) {
    return BIO_new_mem_buf(f->buf, (int)f->len);
}

/* The certificate chain in path (leaf first) into ctx, as
 * SSL_CTX_use_certificate_chain_file would, from memory. */
static int use_cert_chain(SSL_CTX *ctx, const char *what, const char *path, char *err,
                          size_t errlen) {
    pem_file_t f;
    char why[512];
    int rc = pem_file_read(what, path, &f, err, errlen);
    if (rc)
        return rc;
    BIO *b = pem_bio(&f);
    X509 *leaf = b ? PEM_read_bio_X509_AUX(b, NULL, NULL, NULL) : NULL;
    if (!leaf || SSL_CTX_use_certificate(ctx, leaf) != 1) {
        rc = kgs_seterr(err, errlen, KGS_EIO, "%s %s: %s", what, path,
                        tls_error_string(why, sizeof why));
    } else {
        SSL_CTX_clear_chain_certs(ctx);
        X509 *ca;
        while (rc == 0 && (ca = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL)
            if (SSL_CTX_add0_chain_cert(ctx, ca) != 1) {
                X509_free(ca);
                rc = kgs_seterr(err, errlen, KGS_EIO, "%s %s: %s", what, path,
                                tls_error_string(why, sizeof why));
            }
        unsigned long e = ERR_peek_last_error();
        if (rc == 0 && ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE)
            ERR_clear_error(); /* the end of the chain */
        else if (rc == 0 && e)
            rc = kgs_seterr(err, errlen, KGS_EIO, "%s %s: %s", what, path,
                            tls_error_string(why, sizeof why));
    }
    X509_free(leaf);
    BIO_free(b);
    pem_file_free(&f);
    return rc;
}

/* The private key in path into ctx (its bytes wiped after). */
static int use_private_key(SSL_CTX *ctx, const char *what, const char *path, char *err,
                           size_t errlen) {
    pem_file_t f;
    char why[512];
    int rc = pem_file_read(what, path, &f, err, errlen);
    if (rc)
        return rc;
    BIO *b = pem_bio(&f);
    EVP_PKEY *k = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
    if (!k || SSL_CTX_use_PrivateKey(ctx, k) != 1)
        rc = kgs_seterr(err, errlen, KGS_EIO, "%s %s: %s", what, path,
                        tls_error_string(why, sizeof why));
    EVP_PKEY_free(k);
    BIO_free(b);
    pem_file_free(&f);
    return rc;
}

/* Every certificate (and CRL) of the PEM bundle in path into ctx's trust
 * store, as SSL_CTX_load_verify_locations(ctx, path, NULL) would. */
static int load_verify_file(SSL_CTX *ctx, const char *what, const char *path, char *err,
                            size_t errlen) {
    pem_file_t f;
    char why[512];
    int rc = pem_file_read(what, path, &f, err, errlen);
    if (rc)
        return rc;
    BIO *b = pem_bio(&f);
    STACK_OF(X509_INFO) *infos = b ? PEM_X509_INFO_read_bio(b, NULL, NULL, NULL) : NULL;
    X509_STORE *store = SSL_CTX_get_cert_store(ctx);
    int certs = 0;
    for (int i = 0; infos && store && rc == 0 && i < sk_X509_INFO_num(infos); i++) {
        X509_INFO *in = sk_X509_INFO_value(infos, i);
        if ((in->x509 && X509_STORE_add_cert(store, in->x509) != 1) ||
            (in->crl && X509_STORE_add_crl(store, in->crl) != 1))
            rc = kgs_seterr(err, errlen, KGS_EIO, "%s %s: %s", what, path,
                            tls_error_string(why, sizeof why));
        certs += in->x509 != NULL;
    }
    if (rc == 0 && !infos)
        rc = kgs_seterr(err, errlen, KGS_EIO, "%s %s: %s", what, path,
                        tls_error_string(why, sizeof why));
    else if (rc == 0 && certs == 0)
        rc = kgs_seterr(err, errlen, KGS_EIO, "%s %s: no certificate in it (PEM expected)", what,
                        path);
    sk_X509_INFO_pop_free(infos, X509_INFO_free);
    BIO_free(b);
    pem_file_free(&f);
    return rc;
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
    if ((*code = use_cert_chain(ctx, "TLS certificate", cert, err, errlen)) != 0)
        goto fail;
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
    if ((*code = use_private_key(ctx, "TLS key", key, err, errlen)) != 0)
        goto fail;
    if (SSL_CTX_check_private_key(ctx) != 1) {
        *code = kgs_seterr(err, errlen, KGS_EINVAL, "TLS key %s does not match certificate %s", key,
                           cert);
        ERR_clear_error();
        goto fail;
    }
    if (client_ca) {
        if ((*code = load_verify_file(ctx, "TLS client CA", client_ca, err, errlen)) != 0)
            goto fail;
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
        if (ca && load_verify_file(ctx, "TLS CA", ca, err, errlen) != 0)
            goto fail;
        if (!ca && SSL_CTX_set_default_verify_paths(ctx) != 1) {
            kgs_seterr(err, errlen, KGS_EIO, "TLS CA (system): %s",
                       tls_error_string(why, sizeof why));
            goto fail;
        }
    }
    if (cert && key) {
        if (file_problem("TLS client certificate", cert, err, errlen) != 0 ||
            file_problem("TLS client key", key, err, errlen) != 0)
            goto fail;
        if (use_cert_chain(ctx, "TLS client certificate", cert, err, errlen) != 0)
            goto fail;
        if (cert_validity(ctx, "TLS client certificate", cert, err, errlen) != 0)
            goto fail;
        if (use_private_key(ctx, "TLS client key", key, err, errlen) != 0)
            goto fail;
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
