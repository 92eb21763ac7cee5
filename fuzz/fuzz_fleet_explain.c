/*
 * fuzz_fleet_explain.c - llm-fleet-sim's explain_decode() on arbitrary
 * bytes: the scaler's Explain answer (a serialized GetMetricsResponse)
 * turned into one line of the demo's screen.
 *
 * Whatever the bytes, the line fits its buffer, its length is what the call
 * returns, and it holds no control byte (one answer is always one screen
 * line); a call that finds no response leaves "".
 */
#include <stdint.h>
#include <string.h>

#include "explain.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const size_t sizes[] = {1, 40, 1024};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        char out[1024];
        memset(out, 'Z', sizeof out);
        size_t n = explain_decode(data, size, out, sizes[k]);
        FUZZ_CHECK(n < sizes[k]);
        FUZZ_CHECK(strlen(out) == n);
        for (size_t i = 0; i < n; i++)
            FUZZ_CHECK((unsigned char)out[i] >= 0x20 && out[i] != 0x7f);
    }
    return 0;
}
