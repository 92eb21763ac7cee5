/* test_pki.c - see the header. */
#include "test_pki.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static EVP_PKEY *write_key(const char *path) {
    EVP_PKEY *k = EVP_EC_gen("P-256");
    if (!k)
        return NULL;
    FILE *f = fopen(path, "w");
    if (!f || PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL) != 1) {
        if (f)
            fclose(f);
        EVP_PKEY_free(k);
        return NULL;
    }
    fclose(f);
    chmod(path, 0600);
    return k;
}

static bool add_ext(X509 *x, X509V3_CTX *v3, int nid, const char *value) {
    X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, v3, nid, value);
    if (!e)
        return false;
    X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
    return true;
}

/* A certificate for key k signed by (issuer, ik); self-signed when issuer
 * is NULL. A leaf names localhost and 127.0.0.1. NULL on failure. */
static X509 *make_cert(EVP_PKEY *k, const char *cn, X509 *issuer, EVP_PKEY *ik, bool ca) {
    X509 *x = X509_new();
    if (!x)
        return NULL;
    ASN1_INTEGER_set(X509_get_serialNumber(x), ca ? 1 : 2);
    X509_gmtime_adj(X509_getm_notBefore(x), -60);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, k);
    X509_NAME *n = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : n);
    X509V3_CTX v3;
    X509V3_set_ctx(&v3, issuer ? issuer : x, x, NULL, NULL, 0);
    bool ok = add_ext(x, &v3, NID_basic_constraints, ca ? "critical,CA:TRUE" : "CA:FALSE") &&
              (ca || add_ext(x, &v3, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1")) &&
              X509_sign(x, issuer ? ik : k, EVP_sha256()) > 0;
    if (!ok) {
        X509_free(x);
        return NULL;
    }
    return x;
}

static int write_certs(const char *path, X509 *a, X509 *b) {
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int ok = PEM_write_X509(f, a) == 1 && (!b || PEM_write_X509(f, b) == 1);
    return fclose(f) == 0 && ok ? 0 : -1;
}

int test_pki_make(test_pki_t *p) {
    snprintf(p->dir, sizeof p->dir, "/tmp/kgs-pki-XXXXXX");
    if (!mkdtemp(p->dir))
        return -1;
    snprintf(p->ca_pem, sizeof p->ca_pem, "%s/ca.pem", p->dir);
    snprintf(p->ca_key, sizeof p->ca_key, "%s/ca.key", p->dir);
    snprintf(p->leaf_pem, sizeof p->leaf_pem, "%s/leaf.pem", p->dir);
    snprintf(p->leaf_key, sizeof p->leaf_key, "%s/leaf.key", p->dir);
    snprintf(p->chain_pem, sizeof p->chain_pem, "%s/chain.pem", p->dir);
    EVP_PKEY *cak = write_key(p->ca_key), *lk = write_key(p->leaf_key);
    X509 *ca = cak ? make_cert(cak, "kgs test CA", NULL, NULL, true) : NULL;
    X509 *leaf = ca && lk ? make_cert(lk, "localhost", ca, cak, false) : NULL;
    int rc = leaf && write_certs(p->ca_pem, ca, NULL) == 0 &&
                     write_certs(p->leaf_pem, leaf, NULL) == 0 &&
                     write_certs(p->chain_pem, leaf, ca) == 0
                 ? 0
                 : -1;
    X509_free(ca);
    X509_free(leaf);
    EVP_PKEY_free(cak);
    EVP_PKEY_free(lk);
    return rc;
}

void test_pki_remove(const test_pki_t *p) {
    const char *files[] = {p->ca_pem, p->ca_key, p->leaf_pem, p->leaf_key, p->chain_pem};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        unlink(files[i]);
    rmdir(p->dir);
}
