/* test_tls.c - the TLS files as net/tls.c reads them: a certificate chain,
 * a key and CA bundles loaded from regular files (test_pki.c makes them),
 * and every one of them refused, without blocking, when it is a FIFO or a
 * directory (issue 28: a FIFO blocked the loop for ever). A reload onto a
 * FIFO fails and keeps the old context. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/err.h"
#include "net/tls.h"

#include "test_pki.h"

static test_pki_t pki;
static char fifo[128];

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
    if (test_pki_make(&pki) != 0)
        return -1;
    snprintf(fifo, sizeof fifo, "%s/fifo", pki.dir);
    return mkfifo(fifo, 0600);
}

static int teardown(void **state) {
    (void)state;
    unlink(fifo);
    test_pki_remove(&pki);
    return 0;
}

static void test_tls_files_load_from_regular_files(void **state) {
    (void)state;
    char err[600] = "";
    tls_server_t *s = NULL;
    assert_int_equal(tls_server_new(pki.chain_pem, pki.leaf_key, pki.ca_pem, &s, err, sizeof err),
                     0);
    STACK_OF(X509) *chain = NULL;
    assert_int_equal(SSL_CTX_get0_chain_certs(tls_server_ctx(s), &chain), 1);
    assert_int_equal(sk_X509_num(chain), 1); /* the CA after the leaf */
    tls_server_free(s);
    tls_client_t *c = NULL;
    assert_int_equal(tls_client_new(pki.ca_pem, pki.leaf_pem, pki.leaf_key, &c, err, sizeof err),
                     0);
    tls_client_free(c);
    /* a key that does not match, and a file that is not PEM, still say so */
    assert_int_not_equal(tls_server_new(pki.leaf_pem, pki.ca_key, NULL, &s, err, sizeof err), 0);
    assert_non_null(strstr(err, pki.ca_key));
    assert_int_equal(tls_client_new(pki.leaf_key, NULL, NULL, &c, err, sizeof err), KGS_EIO);
    assert_non_null(strstr(err, "no certificate in it"));
}

/* Each role's file as a FIFO and as a directory: refused at once (the
 * test would hang here if a file were opened blocking). */
static void test_tls_fifo_or_directory_is_refused_without_blocking(void **state) {
    (void)state;
    alarm(20); /* a blocked open() fails the test instead of hanging it */
    const char *bad[] = {fifo, pki.dir};
    for (size_t i = 0; i < 2; i++) {
        char err[600] = "", want[200];
        tls_server_t *s = NULL;
        tls_client_t *c = NULL;
        snprintf(want, sizeof want, "%s is not a regular file", bad[i]);
        assert_int_equal(tls_server_new(bad[i], pki.leaf_key, NULL, &s, err, sizeof err), KGS_EIO);
        assert_non_null(strstr(err, want));
        assert_non_null(strstr(err, "TLS certificate"));
        assert_int_equal(tls_server_new(pki.leaf_pem, bad[i], NULL, &s, err, sizeof err), KGS_EIO);
        assert_non_null(strstr(err, "TLS key"));
        assert_int_equal(tls_server_new(pki.leaf_pem, pki.leaf_key, bad[i], &s, err, sizeof err),
                         KGS_EIO);
        assert_non_null(strstr(err, "TLS client CA"));
        /* a --source-auth profile's ca-file and client certificate */
        assert_int_equal(tls_client_new(bad[i], NULL, NULL, &c, err, sizeof err), KGS_EIO);
        assert_non_null(strstr(err, want));
        assert_int_equal(tls_client_new(pki.ca_pem, bad[i], pki.leaf_key, &c, err, sizeof err),
                         KGS_EIO);
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
    snprintf(cert, sizeof cert, "%s/reload.pem", pki.dir);
    snprintf(ca, sizeof ca, "%s/reload-ca.pem", pki.dir);
    copy_file(pki.leaf_pem, cert);
    copy_file(pki.ca_pem, ca);
    tls_server_t *s = NULL;
    assert_int_equal(tls_server_new(cert, pki.leaf_key, NULL, &s, err, sizeof err), 0);
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
