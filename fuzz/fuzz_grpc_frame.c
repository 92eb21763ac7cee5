/*
 * fuzz_grpc_frame.c - grpc_frame_decode() over a stream of messages.
 *
 * The first byte picks the size limit (byte * 16, or GRPC_MAX_MESSAGE_BYTES
 * for 0xff); the rest is decoded message by message until it stops being
 * COMPLETE. Checked on every call: out-parameters follow the documented
 * contract, a payload is a slice inside the input, a COMPLETE message
 * re-encodes to the same prefix, and one byte less of it is INCOMPLETE
 * (the answer for a prefix is INCOMPLETE or the final answer).
 */
#include <stdint.h>
#include <string.h>

#include "net/grpc_frame.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    size_t max_len = data[0] == 0xff ? GRPC_MAX_MESSAGE_BYTES : (size_t)data[0] * 16;
    const uint8_t *buf = data + 1;
    size_t len = size - 1;
    for (;;) {
        const uint8_t *msg = buf;
        size_t msg_len = 12345, consumed = 12345;
        int rc = grpc_frame_decode(buf, len, max_len, &msg, &msg_len, &consumed);
        if (rc != GRPC_FRAME_COMPLETE) {
            FUZZ_CHECK(msg == NULL);
            FUZZ_CHECK(consumed == 0);
            if (rc == GRPC_FRAME_INCOMPLETE) {
                FUZZ_CHECK(msg_len == 0);
                if (len >= 5) {
                    uint32_t n = (uint32_t)buf[1] << 24 | (uint32_t)buf[2] << 16 |
                                 (uint32_t)buf[3] << 8 | buf[4];
                    FUZZ_CHECK(buf[0] == 0 && n <= max_len && len - 5 < n);
                }
            } else if (rc == GRPC_FRAME_TOO_LARGE) {
                FUZZ_CHECK(len >= 5 && buf[0] == 0 && msg_len > max_len);
            } else if (rc == GRPC_FRAME_COMPRESSED) {
                FUZZ_CHECK(len >= 1 && buf[0] == 1 && msg_len == 0);
            } else {
                FUZZ_CHECK(rc == GRPC_FRAME_MALFORMED);
                FUZZ_CHECK(len >= 1 && buf[0] > 1 && msg_len == 0);
            }
            return 0;
        }
        FUZZ_CHECK(consumed == 5 + msg_len);
        FUZZ_CHECK(consumed <= len);
        FUZZ_CHECK(msg == buf + 5);
        FUZZ_CHECK(msg_len <= max_len);
        uint8_t prefix[5];
        grpc_frame_prefix(prefix, (uint32_t)msg_len);
        FUZZ_CHECK(memcmp(prefix, buf, 5) == 0);
        const uint8_t *m2;
        size_t l2, c2;
        FUZZ_CHECK(grpc_frame_decode(buf, consumed - 1, max_len, &m2, &l2, &c2) ==
                   GRPC_FRAME_INCOMPLETE);
        buf += consumed;
        len -= consumed;
    }
}
