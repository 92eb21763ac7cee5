/* test_tls.c - the TLS files as net/tls.c reads them: a certificate chain,
 * a key and CA bundles loaded from regular files (made here with OpenSSL,
 * no openssl binary needed), and every one of them refused, without
 * blocking, when it is a FIFO or a directory (issue 28: a FIFO blocked the
 * loop for ever). A reload onto a FIFO fails and keeps the old context. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/err.h"
#include "net/tls.h"

static char dir[64];
static char ca_pem[128], ca_key[128], leaf_pem[128], leaf_key[128], chain_pem[128], fifo[128];

static EVP_PKEY *write_key(const char *path) {
    EVP_PKEY *k = EVP_EC_gen("P-256");
    assert_non_null(k);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL), 1);
    fclose(f);
    chmod(path, 0600);
    return k;
}

/* A certificate for key k signed by (issuer, ik); self-signed when issuer is NULL. */
static X509 *make_cert(EVP_PKEY *k, const char *cn, X509 *issuer, EVP_PKEY *ik, bool ca) {
    X509 *x = X509_new();
    ASN1_INTEGER_set(X509_get_serialNumber(x), ca ? 1 : 2);
    X509_gmtime_adj(X509_getm_notBefore(x), -60);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, k);
    X509_NAME *n = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : n);
    X509V3_CTX v3;
    X509V3_set_ctx(&v3, issuer ? issuer : x, x, NULL, NULL, 0);
    X509_EXTENSION *e =
        X509V3_EXT_conf_nid(NULL, &v3, NID_basic_constraints, ca ? "critical,CA:TRUE" : "CA:FALSE");
    X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
    assert_true(X509_sign(x, issuer ? ik : k, EVP_sha256()) > 0);
    return x;
}

static void write_certs(const char *path, X509 *a, X509 *b) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    PEM_write_X509(f, a);
    if (b)
        PEM_write_X509(f, b);
    fclose(f);
}

static void copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    assert_non_null(in);
    assert_non_null(out);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        assert_int_equal(fwrite(buf, 1, n, out), n);
    fclose(in);
    fclose(out);
}

static int setup(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/kgs-tls-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(ca_pem, sizeof ca_pem, "%s/ca.pem", dir);
    snprintf(ca_key, sizeof ca_key, "%s/ca.key", dir);
    snprintf(leaf_pem, sizeof leaf_pem, "%s/leaf.pem", dir);
    snprintf(leaf_key, sizeof leaf_key, "%s/leaf.key", dir);
    snprintf(chain_pem, sizeof chain_pem, "%s/chain.pem", dir);
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    EVP_PKEY *cak = write_key(ca_key), *lk = write_key(leaf_key);
    X509 *ca = make_cert(cak, "kgs test CA", NULL, NULL, true);
    X509 *leaf = make_cert(lk, "localhost", ca, cak, false);
    write_certs(ca_pem, ca, NULL);
    write_certs(leaf_pem, leaf, NULL);
    write_certs(chain_pem, leaf, ca);
    X509_free(ca);
    X509_free(leaf);
    EVP_PKEY_free(cak);
    EVP_PKEY_free(lk);
    return mkfifo(fifo, 0600);
}

static int teardown(void **state) {
    (void)state;
    const char *files[] = {ca_pem, ca_key, leaf_pem, leaf_key, chain_pem, fifo};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        unlink(files[i]);
    rmdir(dir);
    return 0;
}

static void test_tls_files_load_from_regular_files(void **state) {
    (void)state;
    char err[600] = "";
    tls_server_t *s = NULL;
    assert_int_equal(tls_server_new(chain_pem, leaf_key, ca_pem, &s, err, sizeof err), 0);
    STACK_OF(X509) *chain = NULL;
    assert_int_equal(SSL_CTX_get0_chain_certs(tls_server_ctx(s), &chain), 1);
    assert_int_equal(sk_X509_num(chain), 1); /* the CA after the leaf */
    tls_server_free(s);
    tls_client_t *c = NULL;
    assert_int_equal(tls_client_new(ca_pem, leaf_pem, leaf_key, &c, err, sizeof err), 0);
    tls_client_free(c);
    /* a key that does not match, and a file that is not PEM, still say so */
    assert_int_not_equal(tls_server_new(leaf_pem, ca_key, NULL, &s, err, sizeof err), 0);
    assert_non_null(strstr(err, ca_key));
    assert_int_equal(tls_client_new(leaf_key, NULL, NULL, &c, err, sizeof err), KGS_EIO);
    assert_non_null(strstr(err, "no certificate in it"));
}

/* Each role's file as a FIFO and as a directory: refused at once (the
 * test would hang here if a file were opened blocking). */
static void test_tls_fifo_or_directory_is_refused_without_blocking(void **state) {
    (void)state;
    alarm(20); /* a blocked open() fails the test instead of hanging it */
    const char *bad[] = {fifo, dir};
    for (size_t i = 0; i < 2; i++) {
        char err[600] = "", want[200];
        tls_server_t *s = NULL;
        tls_client_t *c = NULL;
        snprintf(want, sizeof want, "%s is not a regular file", bad[i]);
        assert_int_equal(tls_server_new(bad[i], leaf_key, NULL, &s, err, sizeof err), KGS_EIO);
        assert_non_null(strstr(err, want));
        assert_non_null(strstr(err, "TLS certificate"));
        assert_int_equal(tls_server_new(leaf_pem, bad[i], NULL, &s, err, sizeof err), KGS_EIO);
        assert_non_null(strstr(err, "TLS key"));
        assert_int_equal(tls_server_new(leaf_pem, leaf_key, bad[i], &s, err, sizeof err), KGS_EIO);
        assert_non_null(strstr(err, "TLS client CA"));
        /* a --source-auth profile's ca-file and client certificate */
        assert_int_equal(tls_client_new(bad[i], NULL, NULL, &c, err, sizeof err), KGS_EIO);
        assert_non_null(strstr(err, want));
        assert_int_equal(tls_client_new(ca_pem, bad[i], leaf_key, &c, err, sizeof err), KGS_EIO);
        assert_non_null(strstr(err, want));
        assert_null(s);
        assert_null(c);
    }
    alarm(0);
}

static void test_tls_reload_onto_a_fifo_keeps_the_old_context(void **state) {
    (void)state;
    alarm(20);
    char err[600] = "", cert[160], ca[160];
    snprintf(cert, sizeof cert, "%s/reload.pem", dir);
    snprintf(ca, sizeof ca, "%s/reload-ca.pem", dir);
    copy_file(leaf_pem, cert);
    copy_file(ca_pem, ca);
    tls_server_t *s = NULL;
    assert_int_equal(tls_server_new(cert, leaf_key, NULL, &s, err, sizeof err), 0);
    SSL_CTX *before = tls_server_ctx(s);
    unlink(cert);
    assert_int_equal(mkfifo(cert, 0600), 0);
    bool reloaded = true;
    assert_int_equal(tls_server_reload_if_changed(s, &reloaded, err, sizeof err), KGS_EIO);
    assert_false(reloaded);
    assert_non_null(strstr(err, "is not a regular file"));
    assert_ptr_equal(tls_server_ctx(s), before);
    tls_server_free(s);
    tls_client_t *c = NULL;
    assert_int_equal(tls_client_new(ca, NULL, NULL, &c, err, sizeof err), 0);
    SSL_CTX *cbefore = tls_client_ctx(c);
    unlink(ca);
    assert_int_equal(mkfifo(ca, 0600), 0);
    assert_int_equal(tls_client_reload_if_changed(c, &reloaded, err, sizeof err), KGS_EIO);
    assert_ptr_equal(tls_client_ctx(c), cbefore);
    tls_client_free(c);
    unlink(cert);
    unlink(ca);
    alarm(0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tls_files_load_from_regular_files),
        cmocka_unit_test(test_tls_fifo_or_directory_is_refused_without_blocking),
        cmocka_unit_test(test_tls_reload_onto_a_fifo_keeps_the_old_context),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
