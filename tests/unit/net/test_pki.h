/*
 * test_pki.h - a throwaway PKI for the TLS tests, made with OpenSSL in the
 * process (no openssl binary): a CA and a leaf it signed, as PEM files in a
 * fresh directory under /tmp. The leaf (CN localhost, SAN DNS:localhost and
 * IP:127.0.0.1, not a CA) serves as the server's certificate and as a
 * client's for mTLS.
 */
#ifndef KGS_TEST_PKI_H
#define KGS_TEST_PKI_H

typedef struct {
    char dir[64];
    char ca_pem[128], ca_key[128];
    char leaf_pem[128], leaf_key[128]; /* keys are mode 0600 */
    char chain_pem[128];               /* the leaf, then the CA */
} test_pki_t;

/* Makes the directory and the files. Returns 0, or -1 (nothing to remove
 * beyond what test_pki_remove removes). */
int test_pki_make(test_pki_t *p);

/* Removes the files and the directory (which must hold nothing else). */
void test_pki_remove(const test_pki_t *p);

#endif
