/*
 * fuzz_grpc_timeout.c - grpc_timeout_parse() and grpc_timeout_format().
 *
 * The input is parsed as a grpc-timeout value and checked against a simple
 * oracle (1-8 digits, then one of "HMSmun"). On success the value is
 * formatted and parsed again: the result must be at least the value and
 * within 1e-5 of it. The first 8 bytes, read as a number, get the same
 * round trip, so every magnitude of uint64 is covered.
 */
#include <stdint.h>
#include <string.h>

#include "core/err.h"
#include "net/grpc_frame.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_round_trip(uint64_t ns) {
    char out[16];
    memset(out, 'X', sizeof out);
    size_t n = grpc_timeout_format(ns, out, sizeof out);
    FUZZ_CHECK(n >= 2 && n <= 9);
    FUZZ_CHECK(strlen(out) == n);
    uint64_t back = 1;
    FUZZ_CHECK(grpc_timeout_parse(out, n, &back) == 0);
    FUZZ_CHECK(back >= ns);
    FUZZ_CHECK(back - ns <= ns / 100000);
}

static bool oracle_ok(const uint8_t *d, size_t n) {
    if (n < 2 || n > 9 || !memchr("HMSmun", d[n - 1], 6) || d[n - 1] == '\0')
        return false;
    for (size_t i = 0; i + 1 < n; i++)
        if (d[i] < '0' || d[i] > '9')
            return false;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint64_t ns = 12345;
    int rc = grpc_timeout_parse((const char *)data, size, &ns);
    FUZZ_CHECK((rc == 0) == oracle_ok(data, size));
    if (rc == 0) {
        check_round_trip(ns);
    } else {
        FUZZ_CHECK(rc == KGS_EINVAL);
        FUZZ_CHECK(ns == 0);
    }
    if (size >= 8) {
        uint64_t v = 0;
        for (int i = 0; i < 8; i++)
            v = v << 8 | data[i];
        check_round_trip(v);
        check_round_trip(v >> (data[0] & 63));
    }
    return 0;
}
