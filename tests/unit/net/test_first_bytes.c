/* test_first_bytes.c - telling TLS, h2c and HTTP/1 apart by their first bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "net/first_bytes.h"

#define B(s) (const uint8_t *)(s), sizeof(s) - 1

static void test_first_bytes_tls_client_hello_is_tls(void **state) {
    (void)state;
    static const uint8_t hello[] = {0x16, 0x03, 0x01, 0x02, 0x00, 0x01};
    assert_int_equal(first_bytes_classify(hello, sizeof hello), FIRST_BYTES_TLS);
    assert_int_equal(first_bytes_classify(hello, 2), FIRST_BYTES_TLS);
    assert_int_equal(first_bytes_classify(hello, 1), FIRST_BYTES_INCOMPLETE);
    static const uint8_t alert[] = {0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x46};
    assert_int_equal(first_bytes_classify(alert, sizeof alert), FIRST_BYTES_TLS);
    static const uint8_t not_v3[] = {0x16, 0x02};
    assert_int_equal(first_bytes_classify(not_v3, 2), FIRST_BYTES_OTHER);
}

static void test_first_bytes_h2c_preface_and_http1_requests(void **state) {
    (void)state;
    assert_int_equal(first_bytes_classify(B("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0")),
                     FIRST_BYTES_H2C);
    assert_int_equal(first_bytes_classify(B("PRI ")), FIRST_BYTES_H2C);
    assert_int_equal(first_bytes_classify(B("PR")), FIRST_BYTES_INCOMPLETE);
    assert_int_equal(first_bytes_classify(B("P")), FIRST_BYTES_INCOMPLETE);
    assert_int_equal(first_bytes_classify(B("PRX ")), FIRST_BYTES_OTHER);
    assert_int_equal(first_bytes_classify(B("PRI X")), FIRST_BYTES_H2C); /* decided at 4 */
    assert_int_equal(first_bytes_classify(B("GET / HTTP/1.1\r\n")), FIRST_BYTES_HTTP1);
    assert_int_equal(first_bytes_classify(B("POST /x")), FIRST_BYTES_HTTP1);
    assert_int_equal(first_bytes_classify(B("PO")), FIRST_BYTES_INCOMPLETE);
    assert_int_equal(first_bytes_classify(B("SSH-2.0")), FIRST_BYTES_OTHER);
    assert_int_equal(first_bytes_classify(NULL, 0), FIRST_BYTES_INCOMPLETE);
    /* the HTTP/2 frames a server sends first are not TLS */
    static const uint8_t settings[] = {0, 0, 0, 4, 0, 0, 0, 0, 0};
    assert_int_equal(first_bytes_classify(settings, sizeof settings), FIRST_BYTES_OTHER);
}

static void test_first_bytes_h2_refusal_is_settings_then_goaway(void **state) {
    (void)state;
    uint8_t out[256];
    size_t n = first_bytes_h2_refusal(out, sizeof out, 0xc, "use TLS");
    assert_int_equal(n, 9 + 9 + 8 + 7);
    static const uint8_t want[] = {
        0,   0,   0,   4,   0,   0,   0,  0,   0, /* SETTINGS, empty, stream 0 */
        0,   0,   15,  7,   0,   0,   0,  0,   0, /* GOAWAY, 15 bytes, stream 0 */
        0,   0,   0,   0,   0,   0,   0,  0xc,    /* last stream 0, INADEQUATE_SECURITY */
        'u', 's', 'e', ' ', 'T', 'L', 'S'};
    assert_memory_equal(out, want, sizeof want);
    assert_int_equal(first_bytes_h2_refusal(out, n - 1, 0xc, "use TLS"), 0);
    char big[300];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(first_bytes_h2_refusal(out, sizeof out, 1, big), 9 + 9 + 8 + 200);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_bytes_tls_client_hello_is_tls),
        cmocka_unit_test(test_first_bytes_h2c_preface_and_http1_requests),
        cmocka_unit_test(test_first_bytes_h2_refusal_is_settings_then_goaway),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
