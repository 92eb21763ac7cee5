/*
 * http_resp.c - HTTP/1.1 response head parser and body decoder.
 *
 * The head parser is stateless (it restarts on every call, like
 * net/http1.c): heads are small and bounded. The body decoder keeps state,
 * since a watch body is an endless chunked stream.
 */
#include "net/http_resp.h"

#include <string.h>

enum { MODE_LENGTH, MODE_CHUNKED, MODE_CLOSE };
enum { ST_SIZE, ST_DATA, ST_DATA_END, ST_TRAILER };

static bool ieq(const char *a, size_t alen, const char *b) {
    size_t blen = strlen(b);
    if (alen != blen)
        return false;
    for (size_t i = 0; i < alen; i++) {
        char x = a[i], y = b[i];
        if (x >= 'A' && x <= 'Z')
            x = (char)(x - 'A' + 'a');
        if (x != y)
            return false;
    }
    return true;
}

static bool is_tchar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

static int fail(const char **why, const char *reason) {
    if (why)
        *why = reason;
    return HTTP_RESP_ERROR;
}

/* Finds the end of the line starting at p: returns the length without the
 * CRLF/LF, and the length including it in *total; -1 if no LF yet. */
static long line_end(const char *p, size_t avail, size_t *total) {
    const char *nl = memchr(p, '\n', avail);
    if (!nl)
        return -1;
    size_t n = (size_t)(nl - p);
    *total = n + 1;
    if (n && p[n - 1] == '\r')
        n--;
    return (long)n;
}

int http_resp_parse_head(const char *buf, size_t len, http_resp_t *out, size_t *consumed,
                         const char **why) {
    *consumed = 0;
    if (why)
        *why = NULL;
    http_resp_t r = {.status = 0, .chunked = false, .content_length = -1};
    size_t limit = len < HTTP_RESP_MAX_HEAD_BYTES ? len : HTTP_RESP_MAX_HEAD_BYTES;
    /* Reject a non-HTTP answer (a TLS alert on a plain port) on its first bytes. */
    const char proto[] = "HTTP/1.";
    size_t cmp = limit < sizeof proto - 1 ? limit : sizeof proto - 1;
    if (memcmp(buf, proto, cmp) != 0)
        return fail(why, "not an HTTP/1.x response");
    size_t total;
    long n = line_end(buf, limit, &total);
    if (n < 0)
        return len > HTTP_RESP_MAX_HEAD_BYTES ? fail(why, "response head too large")
                                              : HTTP_RESP_INCOMPLETE;
    /* "HTTP/1.1 200 OK": version digit, space, three digits, then space or end. */
    if (n < 12 || buf[7] < '0' || buf[7] > '9' || buf[8] != ' ')
        return fail(why, "malformed status line");
    for (int i = 9; i < 12; i++)
        if (buf[i] < '0' || buf[i] > '9')
            return fail(why, "malformed status code");
    if (n > 12 && buf[12] != ' ')
        return fail(why, "malformed status line");
    r.status = (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');
    if (r.status < 100)
        return fail(why, "malformed status code");
    size_t pos = total;
    for (;;) {
        n = line_end(buf + pos, limit - pos, &total);
        if (n < 0)
            return len > HTTP_RESP_MAX_HEAD_BYTES ? fail(why, "response head too large")
                                                  : HTTP_RESP_INCOMPLETE;
        const char *line = buf + pos;
        pos += total;
        if (n == 0)
            break;
        if (line[0] == ' ' || line[0] == '\t')
            return fail(why, "obsolete header line folding");
        const char *colon = memchr(line, ':', (size_t)n);
        if (!colon || colon == line)
            return fail(why, "malformed header line");
        size_t nlen = (size_t)(colon - line);
        for (size_t i = 0; i < nlen; i++)
            if (!is_tchar(line[i]))
                return fail(why, "malformed header name");
        const char *v = colon + 1, *end = line + n;
        while (v < end && (*v == ' ' || *v == '\t'))
            v++;
        while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
            end--;
        size_t vlen = (size_t)(end - v);
        if (ieq(line, nlen, "content-length")) {
            if (vlen == 0 || vlen > 15)
                return fail(why, "bad Content-Length");
            int64_t cl = 0;
            for (size_t i = 0; i < vlen; i++) {
                if (v[i] < '0' || v[i] > '9')
                    return fail(why, "bad Content-Length");
                cl = cl * 10 + (v[i] - '0');
            }
            if (r.content_length >= 0 && r.content_length != cl)
                return fail(why, "conflicting Content-Length headers");
            r.content_length = cl;
        } else if (ieq(line, nlen, "transfer-encoding")) {
            if (!ieq(v, vlen, "chunked"))
                return fail(why, "unsupported Transfer-Encoding");
            r.chunked = true;
        } else if (ieq(line, nlen, "content-type")) {
            size_t k = vlen < sizeof r.content_type - 1 ? vlen : sizeof r.content_type - 1;
            memcpy(r.content_type, v, k);
            r.content_type[k] = '\0';
        }
    }
    /* RFC 9112 section 6.3: chunked wins over Content-Length (and such a
     * message is suspect, but we only read our API server's answers). */
    if (r.chunked)
        r.content_length = -1;
    *out = r;
    *consumed = pos;
    return HTTP_RESP_COMPLETE;
}

void http_resp_body_init(http_resp_body_t *b, const http_resp_t *r) {
    memset(b, 0, sizeof *b);
    if (r->status < 200 || r->status == 204 || r->status == 304) {
        b->_mode = MODE_LENGTH;
        b->done = true;
    } else if (r->chunked) {
        b->_mode = MODE_CHUNKED;
        b->_state = ST_SIZE;
    } else if (r->content_length >= 0) {
        b->_mode = MODE_LENGTH;
        b->_remaining = (uint64_t)r->content_length;
        b->done = b->_remaining == 0;
    } else {
        b->_mode = MODE_CLOSE;
    }
}

/* Collects one line (chunk size or trailer) across feeds. Returns 1 when
 * b->_line holds a full line (without CR/LF), 0 when more input is needed,
 * HTTP_RESP_ERROR when too long. */
static int take_line(http_resp_body_t *b, const char *in, size_t len, size_t *pos,
                     const char **why) {
    while (*pos < len) {
        char c = in[(*pos)++];
        if (c == '\n') {
            if (b->_line_len && b->_line[b->_line_len - 1] == '\r')
                b->_line_len--;
            return 1;
        }
        if (b->_line_len >= sizeof b->_line - 1)
            return fail(why, "chunk line too long");
        b->_line[b->_line_len++] = c;
    }
    return 0;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int http_resp_body_feed(http_resp_body_t *b, const char *in, size_t len, size_t *consumed,
                        http_resp_sink_cb sink, void *user_data, const char **why) {
    size_t pos = 0;
    int rc = 0;
    if (why)
        *why = NULL;
    while (pos < len && !b->done) {
        if (b->_mode == MODE_CLOSE || b->_mode == MODE_LENGTH) {
            size_t n = len - pos;
            if (b->_mode == MODE_LENGTH && n > b->_remaining)
                n = (size_t)b->_remaining;
            const char *piece = in + pos;
            pos += n;
            if (b->_mode == MODE_LENGTH) {
                b->_remaining -= n;
                b->done = b->_remaining == 0;
            }
            if ((rc = sink(piece, n, user_data)) != 0)
                break;
            continue;
        }
        switch (b->_state) {
        case ST_SIZE: {
            int got = take_line(b, in, len, &pos, why);
            if (got < 0)
                return got;
            if (!got)
                break;
            uint64_t size = 0;
            size_t i = 0;
            for (; i < b->_line_len && hexval(b->_line[i]) >= 0; i++) {
                if (size > (UINT64_C(1) << 40))
                    return fail(why, "chunk size too large");
                size = size * 16 + (uint64_t)hexval(b->_line[i]);
            }
            /* Chunk extensions (";name=value") and whitespace are ignored. */
            if (i == 0 || (i < b->_line_len && b->_line[i] != ';' && b->_line[i] != ' ' &&
                           b->_line[i] != '\t'))
                return fail(why, "malformed chunk size");
            b->_line_len = 0;
            b->_remaining = size;
            b->_state = size ? ST_DATA : ST_TRAILER;
            break;
        }
        case ST_DATA: {
            size_t n = len - pos;
            if (n > b->_remaining)
                n = (size_t)b->_remaining;
            const char *piece = in + pos;
            pos += n;
            b->_remaining -= n;
            if (!b->_remaining)
                b->_state = ST_DATA_END;
            if ((rc = sink(piece, n, user_data)) != 0)
                goto out;
            break;
        }
        case ST_DATA_END: {
            int got = take_line(b, in, len, &pos, why);
            if (got < 0)
                return got;
            if (!got)
                break;
            if (b->_line_len != 0)
                return fail(why, "chunk data not followed by CRLF");
            b->_state = ST_SIZE;
            break;
        }
        case ST_TRAILER: {
            int got = take_line(b, in, len, &pos, why);
            if (got < 0)
                return got;
            if (!got)
                break;
            if (b->_line_len == 0)
                b->done = true;
            b->_line_len = 0;
            break;
        }
        }
    }
out:
    *consumed = pos;
    return rc;
}

int http_resp_body_eof(const http_resp_body_t *b, const char **why) {
    if (b->done || b->_mode == MODE_CLOSE)
        return 0;
    return fail(why, b->_mode == MODE_CHUNKED ? "connection closed inside a chunked body"
                                              : "connection closed before Content-Length bytes");
}
