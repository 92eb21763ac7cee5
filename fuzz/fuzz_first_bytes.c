/*
 * fuzz_first_bytes.c - first_bytes_classify() on arbitrary bytes, and the
 * GOAWAY refusal built from them.
 *
 * A kind once decided never changes with more bytes (the server decides on
 * whatever one peek returned), INCOMPLETE appears only for inputs shorter
 * than the 4 bytes every kind is decided by, and the refusal's length is
 * the frame headers plus the debug data, cut at 200 bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/first_bytes.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    first_bytes_kind_t whole = first_bytes_classify(data, size);
    if (size >= 8)
        FUZZ_CHECK(whole != FIRST_BYTES_INCOMPLETE);
    for (size_t k = 0; k <= size && k <= 32; k++) {
        first_bytes_kind_t part = first_bytes_classify(data, k);
        if (part != FIRST_BYTES_INCOMPLETE)
            FUZZ_CHECK(part == whole);
    }

    char *debug = malloc(size + 1);
    if (!debug)
        return 0;
    memcpy(debug, data, size);
    debug[size] = '\0';
    uint8_t out[256];
    size_t dlen = strlen(debug) > 200 ? 200 : strlen(debug);
    size_t n = first_bytes_h2_refusal(out, sizeof out, 0xc, debug);
    FUZZ_CHECK(n == 26 + dlen);
    FUZZ_CHECK(out[3] == 0x4 && out[12] == 0x7);
    FUZZ_CHECK(((size_t)out[9] << 16 | (size_t)out[10] << 8 | out[11]) == 8 + dlen);
    FUZZ_CHECK(memcmp(out + 26, debug, dlen) == 0);
    free(debug);
    return 0;
}
