/*
 * fuzz_duration.c - duration_parse_ns() and duration_format() on arbitrary
 * bytes.
 *
 * The input, cut at its first NUL, is parsed. On success the value is
 * formatted and parsed again, and the two values must be equal: the
 * formatter prints every significant digit (at most 9 after the point of
 * seconds, 6 of milliseconds, 3 of microseconds), and the parser keeps 19
 * fraction digits exactly, so the round trip is lossless for every uint64.
 * On failure the code must be EINVAL or ERANGE, with a message that quotes
 * the input (checked for inputs short enough to fit the buffer whole).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/duration.h"
#include "core/err.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';

    uint64_t ns = 1;
    char err[512];
    err[0] = '\0';
    int rc = duration_parse_ns(s, &ns, err, sizeof err);
    if (rc == 0) {
        char buf[64];
        duration_format(ns, buf, sizeof buf);
        FUZZ_CHECK(strlen(buf) < 40);
        uint64_t again = 1;
        int rc2 = duration_parse_ns(buf, &again, err, sizeof err);
        FUZZ_CHECK(rc2 == 0);
        FUZZ_CHECK(again == ns);
    } else {
        FUZZ_CHECK(rc == KGS_EINVAL || rc == KGS_ERANGE);
        FUZZ_CHECK(ns == 0);
        FUZZ_CHECK(err[0] != '\0');
        if (*s && strlen(s) < 64)
            FUZZ_CHECK(strstr(err, s) != NULL);
    }
    free(s);
    return 0;
}
