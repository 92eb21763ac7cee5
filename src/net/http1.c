/*
 * http1.c - HTTP/1.1 request heads for the probe/metrics port.
 *
 * The parser is stateless, like picohttpparser: each call starts over at
 * buf[0] and walks complete lines only. A line that has not ended yet is
 * not judged, so the answer for a prefix of the bytes is INCOMPLETE or the
 * answer for all of them, and the caller may feed any split. Only the first
 * HTTP1_MAX_HEAD_BYTES bytes are ever looked at; if they hold no complete
 * head the request is too large, whatever follows. Re-parsing costs at most
 * that much per read, which bounds the quadratic worst case at 8 KiB.
 *
 * What is refused, and why (RFC 9112 section numbers):
 *   - whitespace other than single SPs in the request line (3): we take the
 *     strict reading, which is what every real client sends;
 *   - obs-fold (5.2) and whitespace before the colon (5.1): 400 by the RFC;
 *   - control characters (CR, NUL, ...) anywhere but HTAB in values;
 *   - any body: Content-Length other than 0, or Transfer-Encoding at all.
 *     Refusing bodies also removes request smuggling from the picture.
 */
#include "net/http1.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    const char *p;
    size_t len;
} span_t;

static bool is_tchar(unsigned char c) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return true;
    return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static bool is_ows(char c) {
    return c == ' ' || c == '\t';
}

/* field-vchar, SP, HTAB and obs-text (0x80-0xFF, kept opaque). */
static bool is_value_char(unsigned char c) {
    return c == '\t' || (c >= 0x20 && c != 0x7f);
}

static bool span_ieq(span_t s, const char *lit) {
    size_t n = strlen(lit);
    if (s.len != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s.p[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != lit[i])
            return false;
    }
    return true;
}

/* Takes the line at *pos if it has ended (LF, optionally after CR). The
 * line excludes its terminator; *pos moves past it. False: not ended yet. */
static bool next_line(const char *buf, size_t len, size_t *pos, span_t *line) {
    const char *start = buf + *pos;
    const char *nl = memchr(start, '\n', len - *pos);
    if (!nl)
        return false;
    size_t n = (size_t)(nl - start);
    *pos += n + 1;
    if (n > 0 && start[n - 1] == '\r')
        n--;
    line->p = start;
    line->len = n;
    return true;
}

static int fail(const char **why, int code, const char *msg) {
    *why = msg;
    return code;
}

static int parse_request_line(span_t line, http1_request_t *req, const char **why) {
    size_t i = 0;
    while (i < line.len && is_tchar((unsigned char)line.p[i]))
        i++;
    if (i == 0 || i == line.len || line.p[i] != ' ')
        return fail(why, HTTP1_ERR_BAD_REQUEST, "malformed method in request line");
    req->method = line.p;
    req->method_len = i;
    size_t t = ++i;
    while (i < line.len && (unsigned char)line.p[i] > 0x20 && (unsigned char)line.p[i] < 0x7f)
        i++;
    if (i == t || i == line.len || line.p[i] != ' ')
        return fail(why, HTTP1_ERR_BAD_REQUEST, "malformed request target in request line");
    req->path = line.p + t;
    req->path_len = i - t;
    span_t v = {line.p + i + 1, line.len - i - 1};
    if (v.len != 8 || memcmp(v.p, "HTTP/", 5) != 0 || v.p[5] < '0' || v.p[5] > '9' ||
        v.p[6] != '.' || v.p[7] < '0' || v.p[7] > '9')
        return fail(why, HTTP1_ERR_BAD_REQUEST, "malformed HTTP version in request line");
    if (v.p[5] != '1')
        return fail(why, HTTP1_ERR_VERSION, "unsupported HTTP version (only HTTP/1.x)");
    req->minor_version = v.p[7] - '0';
    return HTTP1_COMPLETE;
}

/* Connection is a comma-separated token list; options are case-insensitive. */
static void scan_connection(span_t value, bool *close, bool *keep_alive) {
    size_t i = 0;
    while (i < value.len) {
        while (i < value.len && (is_ows(value.p[i]) || value.p[i] == ','))
            i++;
        size_t s = i;
        while (i < value.len && value.p[i] != ',')
            i++;
        size_t e = i;
        while (e > s && is_ows(value.p[e - 1]))
            e--;
        span_t tok = {value.p + s, e - s};
        if (span_ieq(tok, "close"))
            *close = true;
        else if (span_ieq(tok, "keep-alive"))
            *keep_alive = true;
    }
}

static bool content_length_is_zero(span_t value) {
    if (value.len == 0)
        return false;
    for (size_t i = 0; i < value.len; i++)
        if (value.p[i] != '0')
            return false;
    return true;
}

static int parse_header(span_t line, http1_request_t *req, const char **why) {
    if (is_ows(line.p[0]))
        return fail(why, HTTP1_ERR_BAD_REQUEST, "obsolete header line folding");
    size_t i = 0;
    while (i < line.len && is_tchar((unsigned char)line.p[i]))
        i++;
    if (i == 0 || i == line.len || line.p[i] != ':')
        return fail(why, HTTP1_ERR_BAD_REQUEST, "malformed header field name");
    span_t name = {line.p, i};
    i++;
    while (i < line.len && is_ows(line.p[i]))
        i++;
    size_t vs = i;
    for (; i < line.len; i++)
        if (!is_value_char((unsigned char)line.p[i]))
            return fail(why, HTTP1_ERR_BAD_REQUEST, "invalid character in header field value");
    size_t ve = line.len;
    while (ve > vs && is_ows(line.p[ve - 1]))
        ve--;
    span_t value = {line.p + vs, ve - vs};

    if (span_ieq(name, "transfer-encoding"))
        return fail(why, HTTP1_ERR_BAD_REQUEST, "request bodies are not accepted");
    if (span_ieq(name, "content-length") && !content_length_is_zero(value))
        return fail(why, HTTP1_ERR_BAD_REQUEST, "request bodies are not accepted");
    if (req->header_count == HTTP1_MAX_HEADERS)
        return fail(why, HTTP1_ERR_TOO_LARGE, "too many header fields");
    http1_header_t *h = &req->headers[req->header_count++];
    h->name = name.p;
    h->name_len = name.len;
    h->value = value.p;
    h->value_len = value.len;
    return HTTP1_COMPLETE;
}

/*
 * A request line still arriving is judged by its method alone, so that a
 * TLS ClientHello or other binary junk on this port is refused at once
 * instead of after HTTP1_MAX_HEAD_BYTES. The full line would fail with the
 * same answer, so the result for a prefix stays INCOMPLETE or final. A
 * trailing CR may still become a CRLF and is left for later.
 */
static int judge_partial_method(const char *p, size_t len, const char **why) {
    size_t i = 0;
    while (i < len && is_tchar((unsigned char)p[i]))
        i++;
    if (i == len || p[i] == ' ' || (p[i] == '\r' && i + 1 == len))
        return HTTP1_INCOMPLETE;
    return fail(why, HTTP1_ERR_BAD_REQUEST, "malformed method in request line");
}

/* Parses buf[0..len), len already capped at HTTP1_MAX_HEAD_BYTES. */
static int parse_head(const char *buf, size_t len, http1_request_t *req, size_t *consumed,
                      const char **why) {
    size_t pos = 0;
    span_t line;
    do {
        if (!next_line(buf, len, &pos, &line))
            return judge_partial_method(buf + pos, len - pos, why);
    } while (line.len == 0);
    int rc = parse_request_line(line, req, why);
    if (rc != HTTP1_COMPLETE)
        return rc;

    req->header_count = 0;
    bool close = false, keep_alive = false;
    for (;;) {
        if (!next_line(buf, len, &pos, &line))
            return HTTP1_INCOMPLETE;
        if (line.len == 0)
            break;
        rc = parse_header(line, req, why);
        if (rc != HTTP1_COMPLETE)
            return rc;
        http1_header_t *h = &req->headers[req->header_count - 1];
        if (span_ieq((span_t){h->name, h->name_len}, "connection"))
            scan_connection((span_t){h->value, h->value_len}, &close, &keep_alive);
    }
    req->keep_alive = !close && (req->minor_version >= 1 || keep_alive);
    *consumed = pos;
    return HTTP1_COMPLETE;
}

int http1_parse_request(const char *buf, size_t len, http1_request_t *req, size_t *consumed,
                        const char **why) {
    const char *w = NULL;
    *consumed = 0;
    size_t limit = len < HTTP1_MAX_HEAD_BYTES ? len : HTTP1_MAX_HEAD_BYTES;
    int rc = limit == 0 ? HTTP1_INCOMPLETE : parse_head(buf, limit, req, consumed, &w);
    if (rc == HTTP1_INCOMPLETE && len > HTTP1_MAX_HEAD_BYTES)
        rc = fail(&w, HTTP1_ERR_TOO_LARGE, "request head too large");
    if (why)
        *why = w;
    return rc;
}

static const struct {
    int status;
    const char *reason;
} reasons[] = {
    {100, "Continue"},
    {200, "OK"},
    {204, "No Content"},
    {301, "Moved Permanently"},
    {302, "Found"},
    {304, "Not Modified"},
    {400, "Bad Request"},
    {401, "Unauthorized"},
    {403, "Forbidden"},
    {404, "Not Found"},
    {405, "Method Not Allowed"},
    {406, "Not Acceptable"},
    {408, "Request Timeout"},
    {411, "Length Required"},
    {413, "Content Too Large"},
    {414, "URI Too Long"},
    {415, "Unsupported Media Type"},
    {429, "Too Many Requests"},
    {431, "Request Header Fields Too Large"},
    {500, "Internal Server Error"},
    {501, "Not Implemented"},
    {502, "Bad Gateway"},
    {503, "Service Unavailable"},
    {504, "Gateway Timeout"},
    {505, "HTTP Version Not Supported"},
};

const char *http1_reason(int status) {
    for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++)
        if (reasons[i].status == status)
            return reasons[i].reason;
    return "Unknown";
}

size_t http1_format_head(char *out, size_t outlen, int status, const char *content_type,
                         size_t body_len, bool keep_alive) {
    const char *conn = keep_alive ? "keep-alive" : "close";
    int n;
    if (content_type)
        n = snprintf(out, outlen,
                     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                     "Connection: %s\r\n\r\n",
                     status, http1_reason(status), content_type, body_len, conn);
    else
        n = snprintf(out, outlen, "HTTP/1.1 %d %s\r\nContent-Length: %zu\r\nConnection: %s\r\n\r\n",
                     status, http1_reason(status), body_len, conn);
    return n > 0 ? (size_t)n : 0;
}
