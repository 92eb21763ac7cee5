/*
 * http_resp.h - the response side of HTTP/1.1, just enough for the
 * Kubernetes API client and the engine scrapes (src/sources): a status line +
 * header parser (Content-Length, Transfer-Encoding, Content-Type) and an incremental
 * body decoder (Content-Length, chunked, or read-until-close). Pure: no
 * sockets, no allocation; any thread, one decoder per thread at a time.
 */
#ifndef KGS_NET_HTTP_RESP_H
#define KGS_NET_HTTP_RESP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HTTP_RESP_MAX_HEAD_BYTES 16384
/* A chunk-size line or trailer line longer than this is refused. */
#define HTTP_RESP_MAX_LINE 1024

#define HTTP_RESP_COMPLETE 0
#define HTTP_RESP_INCOMPLETE 1
#define HTTP_RESP_ERROR (-1)

typedef struct {
    int status;             /* 100..999 */
    bool chunked;           /* Transfer-Encoding: chunked */
    int64_t content_length; /* -1 when absent */
    char content_type[128]; /* the Content-Type value (cut to fit); "" when absent */
} http_resp_t;

/*
 * Parses a response head (status line and headers up to the blank line) at
 * buf[0..len). Returns HTTP_RESP_COMPLETE with *out filled and *consumed =
 * head length; HTTP_RESP_INCOMPLETE (call again with more bytes; stateless);
 * or HTTP_RESP_ERROR with a static reason in *why (why may be NULL): not
 * HTTP/1.x, a bad status, a malformed header, conflicting Content-Length
 * values, a Transfer-Encoding other than chunked, or a head over
 * HTTP_RESP_MAX_HEAD_BYTES. Bare LF line endings are accepted.
 */
int http_resp_parse_head(const char *buf, size_t len, http_resp_t *out, size_t *consumed,
                         const char **why);

/* Receives decoded body bytes (borrowed for the call). Non-zero stops the
 * decoder, which returns that value. */
typedef int (*http_resp_sink_cb)(const char *data, size_t len, void *user_data);

/* Decoder state; caller-owned storage, fields private except `done`. */
typedef struct {
    bool done; /* public: the body is complete (never for read-until-close) */
    int _mode, _state;
    uint64_t _remaining;
    size_t _line_len;
    char _line[HTTP_RESP_MAX_LINE];
} http_resp_body_t;

/* Sets the decoder up for the body of response r (borrowed for the call).
 * A 1xx/204/304 response, or Content-Length 0, is done at once. */
void http_resp_body_init(http_resp_body_t *b, const http_resp_t *r);

/*
 * Decodes in[0..len): payload bytes go to sink in order. Stops at the end
 * of the body: bytes after it are not consumed. Returns 0 with *consumed;
 * HTTP_RESP_ERROR with *why (bad chunk framing, a line over
 * HTTP_RESP_MAX_LINE); or the sink's non-zero value (then *consumed counts
 * what was fed before the stop, the stopped piece included).
 */
int http_resp_body_feed(http_resp_body_t *b, const char *in, size_t len, size_t *consumed,
                        http_resp_sink_cb sink, void *user_data, const char **why);

/* The connection ended: 0 when the body was complete (or delimited by the
 * close), HTTP_RESP_ERROR with *why when it was cut short. */
int http_resp_body_eof(const http_resp_body_t *b, const char **why);

#endif
