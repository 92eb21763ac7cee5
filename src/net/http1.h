/*
 * http1.h - incremental HTTP/1.1 request-head parser and response-head
 * formatter for the probe/metrics port. Only GET and HEAD are served, but
 * any method token parses. Pure: no sockets, no allocation, no state; every
 * function may be called from any thread.
 *
 * Line endings: CRLF, and also a bare LF (RFC 9112 section 2.2 allows a
 * recipient to accept one; curl, kubelet and Prometheus all send CRLF, and
 * as no request may carry a body there is no smuggling risk). A CR not
 * followed by LF is a bad request. Empty lines before the request line are
 * skipped (RFC 9112 section 2.2) and counted in *consumed.
 */
#ifndef KGS_NET_HTTP1_H
#define KGS_NET_HTTP1_H

#include <stdbool.h>
#include <stddef.h>

#define HTTP1_MAX_HEADERS 32
#define HTTP1_MAX_HEAD_BYTES 8192

typedef struct {
    const char *name; /* borrowed slice of the input, not NUL-terminated */
    size_t name_len;
    const char *value; /* borrowed slice, surrounding whitespace trimmed */
    size_t value_len;
} http1_header_t;

/* Filled by http1_parse_request(); every pointer is a slice of its input
 * buffer (borrowed, valid as long as that buffer), not NUL-terminated. */
typedef struct {
    const char *method;
    size_t method_len;
    const char *path; /* the request-target as sent, query included */
    size_t path_len;
    int minor_version; /* 0 or 1 (HTTP/1.x with x > 1 is reported as sent) */
    size_t header_count;
    http1_header_t headers[HTTP1_MAX_HEADERS];
    bool keep_alive;
} http1_request_t;

typedef enum {
    HTTP1_COMPLETE = 0,
    HTTP1_INCOMPLETE = 1,
    HTTP1_ERR_BAD_REQUEST = -1, /* answer 400 */
    HTTP1_ERR_TOO_LARGE = -2,   /* answer 431 */
    HTTP1_ERR_VERSION = -3      /* answer 505 */
} http1_result_t;

/*
 * Parses the request head at buf[0..len). Returns an http1_result_t:
 *   COMPLETE: *req is filled and *consumed is the head length including
 *     the blank line. Bytes after it (a pipelined request) are not looked at.
 *   INCOMPLETE: call again with more bytes (the parser keeps no state and
 *     starts over; the head is bounded, so that is cheap).
 *   ERR_BAD_REQUEST: malformed request line or header, obs-fold, or a
 *     request with a body (Content-Length other than 0, or any
 *     Transfer-Encoding): we serve GET/HEAD only. A method that is not a
 *     token is refused before its line ends (a TLS ClientHello on this
 *     port fails on its first byte).
 *   ERR_TOO_LARGE: more than HTTP1_MAX_HEADERS header fields, or a head
 *     longer than HTTP1_MAX_HEAD_BYTES; the latter is reported as soon as
 *     len exceeds the limit without a complete head, so a caller never has
 *     to buffer more than HTTP1_MAX_HEAD_BYTES + 1 bytes.
 *   ERR_VERSION: a well-formed version other than HTTP/1.x.
 * keep_alive: for HTTP/1.1 (and later 1.x) unless a Connection header lists
 * "close"; for HTTP/1.0 only when a Connection header lists "keep-alive"
 * (and not "close"). A missing Host header is accepted.
 * The result for any prefix of a buffer is INCOMPLETE or the result for
 * the whole buffer. Unless COMPLETE, *consumed = 0 and *req is unspecified.
 * *why (why may be NULL) gets a static description on error, NULL otherwise.
 */
int http1_parse_request(const char *buf, size_t len, http1_request_t *req, size_t *consumed,
                        const char **why);

/*
 * Writes "HTTP/1.1 <status> <reason>\r\nContent-Type: <content_type>\r\n
 * Content-Length: <body_len>\r\nConnection: keep-alive|close\r\n\r\n" into
 * out. content_type NULL omits that line. Returns the full length, like
 * snprintf: writes at most outlen-1 bytes plus a NUL (nothing if
 * outlen == 0). 256 bytes hold any head with a content type under 100.
 */
size_t http1_format_head(char *out, size_t outlen, int status, const char *content_type,
                         size_t body_len, bool keep_alive);

/* The reason phrase for a status code ("OK", "Not Found", ...); "Unknown"
 * for codes not in our table. Static storage. */
const char *http1_reason(int status);

#endif
