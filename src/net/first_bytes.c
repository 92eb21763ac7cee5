/*
 * first_bytes.c - see the header. The TLS test follows the record layer
 * (RFC 8446 section 5.1): a content type of change_cipher_spec (20), alert
 * (21), handshake (22) or application_data (23), then legacy_record_version
 * 3.x. The HTTP/2 preface is RFC 9113 section 3.4.
 */
#include "net/first_bytes.h"

#include <stdbool.h>
#include <string.h>

static bool starts_with(const uint8_t *p, size_t n, const char *s) {
    size_t m = strlen(s);
    return n >= m && memcmp(p, s, m) == 0;
}

first_bytes_kind_t first_bytes_classify(const uint8_t *p, size_t n) {
    if (n == 0 || !p)
        return FIRST_BYTES_INCOMPLETE;
    if (p[0] >= 20 && p[0] <= 23)
        return n < 2 ? FIRST_BYTES_INCOMPLETE : p[1] == 3 ? FIRST_BYTES_TLS : FIRST_BYTES_OTHER;
    /* "PRI " decides, whatever follows: a kind once returned must not change
     * with more bytes, since the server decides on what one peek returned.
     * The preface is listed with the methods only to be told INCOMPLETE. */
    static const char *const starts[] = {"PRI ",    "GET ",   "POST ",    "HEAD ",   "PUT ",
                                         "DELETE ", "PATCH ", "OPTIONS ", "CONNECT "};
    if (starts_with(p, n, starts[0]))
        return FIRST_BYTES_H2C;
    for (size_t i = 1; i < sizeof starts / sizeof starts[0]; i++) {
        if (starts_with(p, n, starts[i]))
            return FIRST_BYTES_HTTP1;
    }
    bool prefix_of_one = false;
    for (size_t i = 0; i < sizeof starts / sizeof starts[0]; i++) {
        size_t m = strlen(starts[i]);
        if (n < m && memcmp(p, starts[i], n) == 0)
            prefix_of_one = true;
    }
    return prefix_of_one ? FIRST_BYTES_INCOMPLETE : FIRST_BYTES_OTHER;
}

static uint8_t *put_frame_header(uint8_t *o, size_t len, uint8_t type) {
    o[0] = (uint8_t)(len >> 16);
    o[1] = (uint8_t)(len >> 8);
    o[2] = (uint8_t)len;
    o[3] = type;
    o[4] = 0;                      /* flags */
    o[5] = o[6] = o[7] = o[8] = 0; /* stream 0 */
    return o + 9;
}

size_t first_bytes_h2_refusal(uint8_t *out, size_t cap, uint32_t error_code, const char *debug) {
    size_t dlen = debug ? strlen(debug) : 0;
    if (dlen > 200)
        dlen = 200;
    size_t total = 9 + 9 + 8 + dlen;
    if (!out || cap < total)
        return 0;
    uint8_t *o = put_frame_header(out, 0, 0x4); /* SETTINGS, empty */
    o = put_frame_header(o, 8 + dlen, 0x7);     /* GOAWAY */
    memset(o, 0, 4);                            /* last stream id 0 */
    o[4] = (uint8_t)(error_code >> 24);
    o[5] = (uint8_t)(error_code >> 16);
    o[6] = (uint8_t)(error_code >> 8);
    o[7] = (uint8_t)error_code;
    if (dlen)
        memcpy(o + 8, debug, dlen);
    return total;
}
