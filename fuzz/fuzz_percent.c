/*
 * fuzz_percent.c - grpc-message percent-encoding, and the content-type
 * check on the same bytes.
 *
 * encode: the output is printable ASCII without a bare '%', at most three
 * times the input, and decode(encode(x)) == x. decode of arbitrary bytes is
 * never longer than its input, and a truncated decode is a prefix of the
 * full one (likewise for encode).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "net/grpc_frame.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool is_upper_hex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *in = (const char *)data;
    size_t cap = 3 * size + 1;
    char *enc = malloc(cap), *dec = malloc(size + 1), *small = malloc(size / 2 + 1);
    if (!enc || !dec || !small)
        goto out;

    size_t n = grpc_percent_encode(in, size, enc, cap);
    FUZZ_CHECK(n <= 3 * size && n >= size);
    FUZZ_CHECK(enc[n] == '\0');
    for (size_t i = 0; i < n; i++) {
        FUZZ_CHECK(enc[i] >= 0x20 && enc[i] <= 0x7e);
        if (enc[i] == '%')
            FUZZ_CHECK(i + 2 < n && is_upper_hex(enc[i + 1]) && is_upper_hex(enc[i + 2]));
    }
    size_t d = grpc_percent_decode(enc, n, dec, size + 1);
    FUZZ_CHECK(d == size);
    FUZZ_CHECK(memcmp(dec, in, size) == 0);
    FUZZ_CHECK(dec[size] == '\0');

    /* Truncated encode is a prefix of the full one. */
    size_t slen = size / 2 + 1;
    FUZZ_CHECK(grpc_percent_encode(in, size, small, slen) == n);
    FUZZ_CHECK(strlen(small) == (n < slen - 1 ? n : slen - 1));
    FUZZ_CHECK(memcmp(small, enc, strlen(small)) == 0);

    /* Lenient decode of arbitrary bytes. */
    d = grpc_percent_decode(in, size, dec, size + 1);
    FUZZ_CHECK(d <= size);
    FUZZ_CHECK(dec[d] == '\0');
    FUZZ_CHECK(grpc_percent_decode(in, size, small, slen) == d);
    size_t w = d < slen - 1 ? d : slen - 1;
    FUZZ_CHECK(small[w] == '\0' && memcmp(small, dec, w) == 0);
    FUZZ_CHECK(grpc_percent_decode(in, size, NULL, 0) == d);

    if (grpc_content_type_ok(in, size)) {
        FUZZ_CHECK(size >= 16 && strncasecmp(in, "application/grpc", 16) == 0);
    }
out:
    free(enc);
    free(dec);
    free(small);
    return 0;
}
