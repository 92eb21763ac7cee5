/*
 * first_bytes.h - what a connection's first bytes say about the protocol the
 * peer speaks, so a TLS-vs-plaintext mismatch gets a message that names the
 * other mode instead of "connection reset" or "unexpected eof". Pure.
 */
#ifndef KGS_NET_FIRST_BYTES_H
#define KGS_NET_FIRST_BYTES_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    FIRST_BYTES_INCOMPLETE = 0, /* too few bytes to tell; may still become any kind */
    FIRST_BYTES_TLS,            /* a TLS record: 0x14-0x17, then major version 3 */
    FIRST_BYTES_H2C,            /* the HTTP/2 client preface "PRI * HTTP/2.0..." (a prefix of it) */
    FIRST_BYTES_HTTP1,          /* an HTTP/1.x request line ("GET ", "POST ", ...) */
    FIRST_BYTES_OTHER,          /* none of these */
} first_bytes_kind_t;

/* Classifies the first n bytes a peer sent (p may be NULL when n is 0).
 * A TLS record needs 2 bytes, the preface and a request line 4. */
first_bytes_kind_t first_bytes_classify(const uint8_t *p, size_t n);

/*
 * Writes, in plaintext, what an HTTP/2 server sends to refuse a connection
 * at once: its (empty) SETTINGS frame and a GOAWAY with last stream 0,
 * `error_code` (an HTTP/2 error code) and `debug` (NUL-terminated, cut to
 * 200 bytes) as its debug data, which clients show (grpc-go: "debug data").
 * Returns the bytes written, or 0 when cap is too small (9 + 9 + 8 + debug).
 */
size_t first_bytes_h2_refusal(uint8_t *out, size_t cap, uint32_t error_code, const char *debug);

#endif
