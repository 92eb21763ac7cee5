/*
 * grpc_frame.h - the pure pieces of gRPC over HTTP/2 that are not HTTP/2:
 * status codes, the 5-byte length-prefixed message framing, the
 * grpc-timeout header, grpc-message percent-encoding and the content-type
 * check. No sockets, no system calls, no allocation, no state: every
 * function may be called from any thread.
 */
#ifndef KGS_NET_GRPC_FRAME_H
#define KGS_NET_GRPC_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The largest message we accept (the gRPC default receive limit). */
#define GRPC_MAX_MESSAGE_BYTES (4u * 1024u * 1024u)

typedef enum {
    GRPC_OK = 0,
    GRPC_CANCELLED = 1,
    GRPC_UNKNOWN = 2,
    GRPC_INVALID_ARGUMENT = 3,
    GRPC_DEADLINE_EXCEEDED = 4,
    GRPC_NOT_FOUND = 5,
    GRPC_ALREADY_EXISTS = 6,
    GRPC_PERMISSION_DENIED = 7,
    GRPC_RESOURCE_EXHAUSTED = 8,
    GRPC_FAILED_PRECONDITION = 9,
    GRPC_ABORTED = 10,
    GRPC_OUT_OF_RANGE = 11,
    GRPC_UNIMPLEMENTED = 12,
    GRPC_INTERNAL = 13,
    GRPC_UNAVAILABLE = 14,
    GRPC_DATA_LOSS = 15,
    GRPC_UNAUTHENTICATED = 16
} grpc_status_t;

/* "OK", "CANCELLED", ..., "UNAUTHENTICATED"; "UNKNOWN_STATUS" for any other
 * code. Static storage. */
const char *grpc_status_name(int code);

/* Length-prefixed message framing: 1 flag byte, 4-byte big-endian length,
 * then the message. */
typedef enum {
    GRPC_FRAME_COMPLETE = 0,
    GRPC_FRAME_INCOMPLETE = 1,
    GRPC_FRAME_COMPRESSED = -1, /* flag byte 1: we never negotiate compression */
    GRPC_FRAME_TOO_LARGE = -2,  /* declared length > max_len */
    GRPC_FRAME_MALFORMED = -3   /* flag byte > 1 */
} grpc_frame_result_t;

/*
 * Decodes one message at the start of buf[0..len). Returns a
 * grpc_frame_result_t:
 *   COMPLETE: *msg and *msg_len give the payload, a slice of buf (borrowed, valid
 *     as long as buf), and *consumed = 5 + *msg_len.
 *   INCOMPLETE: more bytes are needed; nothing is consumed.
 *   MALFORMED / COMPRESSED: reported as soon as the flag byte is in
 *     (flag > 1 / flag == 1), checked in that order, before the length.
 *   TOO_LARGE: reported as soon as the 5-byte prefix is in, before the body
 *     arrives; *msg_len is then the declared length (for the error message).
 * Unless COMPLETE, *msg = NULL and *consumed = 0; *msg_len = 0 except for
 * TOO_LARGE. The result for any prefix of a buffer is either INCOMPLETE or
 * the result for the whole buffer. len == 0 is INCOMPLETE; buf may then be
 * NULL. All out-parameters are required.
 */
int grpc_frame_decode(const uint8_t *buf, size_t len, size_t max_len, const uint8_t **msg,
                      size_t *msg_len, size_t *consumed);

/* The message length a 5-byte prefix declares, whatever its flag byte says
 * (grpc_frame_decode reads it so; a server weighs it against its cap as
 * soon as the prefix is in). */
uint32_t grpc_frame_declared_length(const uint8_t prefix[5]);

/* Writes the 5-byte prefix of an uncompressed message of msg_len bytes. */
void grpc_frame_prefix(uint8_t out[5], uint32_t msg_len);

/*
 * Parses a grpc-timeout value v[0..len) (not NUL-terminated): 1-8 ASCII
 * digits, then exactly one unit of H (hours), M (minutes), S (seconds),
 * m (milliseconds), u (microseconds), n (nanoseconds). No sign, no spaces.
 * Returns 0 with *out_ns set (saturating at UINT64_MAX: only hours can
 * overflow), or KGS_EINVAL with *out_ns = 0.
 */
int grpc_timeout_parse(const char *v, size_t len, uint64_t *out_ns);

/*
 * Formats ns as a grpc-timeout value for a client. Picks the shortest exact
 * form that fits in 8 digits ("1S", not "1000m"); when no unit represents
 * ns exactly in 8 digits, rounds up in the finest unit that fits, so the
 * peer never sees a shorter deadline than ours (relative error < 1e-5).
 * 0 is "0n". The result is at most 9 characters; out should hold 16 bytes.
 * Writes at most outlen-1 characters plus a NUL (nothing if outlen == 0)
 * and returns the full length, like snprintf.
 */
size_t grpc_timeout_format(uint64_t ns, char *out, size_t outlen);

/*
 * grpc-message percent-encoding per the gRPC HTTP/2 spec: every byte
 * outside 0x20-0x7E, and '%' itself, becomes %XX (uppercase hex); other
 * bytes are copied. in[0..len) may hold any bytes, NUL included (UTF-8 text
 * is encoded byte by byte). Returns the full encoded length, like snprintf;
 * writes at most outlen-1 bytes plus a NUL (nothing if outlen == 0; out may
 * then be NULL). The encoded length is at most 3 * len.
 */
size_t grpc_percent_encode(const char *in, size_t len, char *out, size_t outlen);

/*
 * Decodes percent-encoding leniently, as the spec asks: %XX with two hex
 * digits (either case) becomes that byte; a '%' not followed by two hex
 * digits ("%", "%G1", "%4") is kept verbatim. Returns the full decoded
 * length, like snprintf (it is at most len; the output may contain NUL bytes
 * from "%00"); writes at most outlen-1 bytes plus a NUL (nothing if
 * outlen == 0; out may then be NULL). A caller detects truncation with
 * result >= outlen.
 */
size_t grpc_percent_decode(const char *in, size_t len, char *out, size_t outlen);

/*
 * True for the content types a gRPC server must accept: "application/grpc"
 * or "application/grpc+proto", ASCII case-insensitive, optionally followed
 * by optional whitespace and then either the end or ";parameters".
 * Anything else (including "application/grpc+json", "application/grpcx")
 * is false; the server answers HTTP 415. v[0..len) need not be
 * NUL-terminated.
 */
bool grpc_content_type_ok(const char *v, size_t len);

#endif
