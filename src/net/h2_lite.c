/* h2_lite.c - see the header. */
#include "net/h2_lite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

enum {
    FT_DATA = 0x0,
    FT_HEADERS = 0x1,
    FT_PRIORITY = 0x2,
    FT_RST_STREAM = 0x3,
    FT_SETTINGS = 0x4,
    FT_PUSH_PROMISE = 0x5,
    FT_PING = 0x6,
    FT_GOAWAY = 0x7,
    FT_WINDOW_UPDATE = 0x8,
    FT_CONTINUATION = 0x9,
};
enum {
    FL_END_STREAM = 0x1,
    FL_ACK = 0x1,
    FL_END_HEADERS = 0x4,
    FL_PADDED = 0x8,
    FL_PRIORITY = 0x20,
};
enum {
    SET_HEADER_TABLE_SIZE = 0x1,
    SET_ENABLE_PUSH = 0x2,
    SET_INITIAL_WINDOW_SIZE = 0x4,
    SET_MAX_FRAME_SIZE = 0x5,
};

#define H2_DEFAULT_WINDOW 65535
#define H2_MAX_WINDOW 0x7fffffff

static const char PREFACE[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

const char *h2_lite_error_name(uint32_t code) {
    static const char *const names[] = {"NO_ERROR",
                                        "PROTOCOL_ERROR",
                                        "INTERNAL_ERROR",
                                        "FLOW_CONTROL_ERROR",
                                        "SETTINGS_TIMEOUT",
                                        "STREAM_CLOSED",
                                        "FRAME_SIZE_ERROR",
                                        "REFUSED_STREAM",
                                        "CANCEL",
                                        "COMPRESSION_ERROR",
                                        "CONNECT_ERROR",
                                        "ENHANCE_YOUR_CALM",
                                        "INADEQUATE_SECURITY",
                                        "HTTP_1_1_REQUIRED"};
    return code < sizeof names / sizeof names[0] ? names[code] : "unknown error";
}

/* ---- writing frames ------------------------------------------------------------ */

static void put_frame_header(h2_lite_t *h, uint32_t len, uint8_t type, uint8_t flags,
                             int32_t stream) {
    uint8_t b[9] = {(uint8_t)(len >> 16),
                    (uint8_t)(len >> 8),
                    (uint8_t)len,
                    type,
                    flags,
                    (uint8_t)((uint32_t)stream >> 24 & 0x7f),
                    (uint8_t)((uint32_t)stream >> 16),
                    (uint8_t)((uint32_t)stream >> 8),
                    (uint8_t)stream};
    strbuf_append(&h->out, (const char *)b, sizeof b);
}

static void put_u32(h2_lite_t *h, uint32_t v) {
    uint8_t b[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    strbuf_append(&h->out, (const char *)b, sizeof b);
}

static void put_window_update(h2_lite_t *h, int32_t stream, uint32_t inc) {
    put_frame_header(h, 4, FT_WINDOW_UPDATE, 0, stream);
    put_u32(h, inc & H2_MAX_WINDOW);
}

void h2_lite_written(h2_lite_t *h, size_t n) {
    h->out_off += n;
    if (h->out_off >= h->out.len) {
        strbuf_free(&h->out); /* nothing kept between writes */
        h->out_off = 0;
    }
}

/* A connection error: GOAWAY with the code and reason, and the connection is
 * dead. Returns -1. */
static int conn_error(h2_lite_t *h, uint32_t code, const char *why) {
    if (h->failed)
        return -1;
    h->failed = true;
    h->error_code = code;
    snprintf(h->why, sizeof h->why, "HTTP/2 %s: %s", h2_lite_error_name(code), why);
    size_t dlen = strlen(why);
    put_frame_header(h, (uint32_t)(8 + dlen), FT_GOAWAY, 0, 0);
    put_u32(h, 0); /* last stream: the server opens none we accept */
    put_u32(h, code);
    strbuf_append(&h->out, why, dlen);
    return -1;
}

void h2_lite_init(h2_lite_t *h, const h2_lite_callbacks_t *cb, void *ud) {
    memset(h, 0, sizeof *h);
    h->cb = cb;
    h->ud = ud;
    strbuf_init(&h->out);
    h->next_id = 1;
    h->conn_recv_window = H2_LITE_WINDOW;
    h->conn_send_window = H2_DEFAULT_WINDOW;
    h->peer_initial_window = H2_DEFAULT_WINDOW;
    h->peer_max_frame = H2_LITE_MAX_FRAME;
    h->pad = -1;
    h->table_update = true;
    strbuf_append(&h->out, PREFACE, sizeof PREFACE - 1);
    static const struct {
        uint16_t id;
        uint32_t value;
    } settings[] = {{SET_ENABLE_PUSH, 0},
                    {SET_HEADER_TABLE_SIZE, 0},
                    {SET_INITIAL_WINDOW_SIZE, H2_LITE_WINDOW}};
    put_frame_header(h, 6 * 3, FT_SETTINGS, 0, 0);
    for (size_t i = 0; i < 3; i++) {
        uint8_t b[2] = {(uint8_t)(settings[i].id >> 8), (uint8_t)settings[i].id};
        strbuf_append(&h->out, (const char *)b, 2);
        put_u32(h, settings[i].value);
    }
    put_window_update(h, 0, H2_LITE_WINDOW - H2_DEFAULT_WINDOW);
}

void h2_lite_free(h2_lite_t *h) {
    strbuf_free(&h->out);
    h->out_off = 0;
    free(h->hb);
    h->hb = NULL;
    h->hb_len = h->hb_cap = 0;
    h->streams = NULL;
}

/* ---- streams ---------------------------------------------------------------------- */

static h2_lite_stream_t *find_stream(h2_lite_t *h, int32_t id) {
    for (h2_lite_stream_t *s = h->streams; s; s = s->next)
        if (s->id == id)
            return s;
    return NULL;
}

static void unlink_stream(h2_lite_t *h, h2_lite_stream_t *s) {
    for (h2_lite_stream_t **p = &h->streams; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            s->next = NULL;
            return;
        }
}

static void close_stream(h2_lite_t *h, h2_lite_stream_t *s, bool reset, uint32_t code) {
    unlink_stream(h, s);
    h->cb->on_close(h->ud, s, reset, code);
}

/* Sends what the windows allow of s's body, END_STREAM with its last byte. */
static void send_body(h2_lite_t *h, h2_lite_stream_t *s) {
    while (!s->sent_end) {
        int64_t room = s->send_window < h->conn_send_window ? s->send_window : h->conn_send_window;
        if (room > h->peer_max_frame)
            room = h->peer_max_frame;
        size_t n = s->body_len;
        if ((int64_t)n > room) {
            if (room <= 0)
                return; /* wait for a WINDOW_UPDATE */
            n = (size_t)room;
        }
        bool last = n == s->body_len;
        put_frame_header(h, (uint32_t)n, FT_DATA, last ? FL_END_STREAM : 0, s->id);
        strbuf_append(&h->out, (const char *)s->body, n);
        s->body += n;
        s->body_len -= n;
        s->send_window -= (int64_t)n;
        h->conn_send_window -= (int64_t)n;
        s->sent_end = last;
    }
}

static size_t hpack_int_len(unsigned nbits, size_t v) {
    size_t max = (1u << nbits) - 1, k = 1;
    if (v >= max)
        for (v -= max, k++; v >= 128; v /= 128)
            k++;
    return k;
}

/* An HPACK integer with an n-bit prefix whose other bits are `first`. */
static void put_hpack_int(h2_lite_t *h, uint8_t first, unsigned nbits, size_t v) {
    size_t max = (1u << nbits) - 1;
    uint8_t b[12];
    size_t k = 0;
    if (v < max) {
        b[k++] = (uint8_t)(first | v);
    } else {
        b[k++] = (uint8_t)(first | max);
        v -= max;
        while (v >= 128) {
            b[k++] = (uint8_t)(v % 128 + 128);
            v /= 128;
        }
        b[k++] = (uint8_t)v;
    }
    strbuf_append(&h->out, (const char *)b, k);
}

int h2_lite_request(h2_lite_t *h, h2_lite_stream_t *s, const h2_lite_field_t *fields, size_t n,
                    const uint8_t *body, size_t body_len, const char **why) {
    if (h->failed) {
        *why = h->why;
        return -1;
    }
    if (h->goaway_received) {
        *why = "the server is going away (GOAWAY)";
        return -1;
    }
    if (h->next_id < 0 || h->next_id > H2_MAX_WINDOW - 2) {
        *why = "HTTP/2 stream ids used up on this connection";
        return -1;
    }
    /* The block: each field a literal without indexing, new name (RFC 7541
     * 6.2.2), no Huffman. Our requests' headers are a few hundred bytes:
     * one frame, no CONTINUATION. */
    size_t blen = h->table_update ? 1 : 0;
    for (size_t i = 0; i < n; i++) {
        size_t nl = strlen(fields[i].name), vl = strlen(fields[i].value);
        blen += 1 + hpack_int_len(7, nl) + nl + hpack_int_len(7, vl) + vl;
    }
    if (blen > h->peer_max_frame) {
        *why = "request headers larger than one HTTP/2 frame";
        return -1;
    }
    s->id = h->next_id;
    h->next_id += 2;
    put_frame_header(h, (uint32_t)blen, FT_HEADERS, FL_END_HEADERS | (body_len ? 0 : FL_END_STREAM),
                     s->id);
    if (h->table_update) {
        put_hpack_int(h, 0x20, 5, 0); /* dynamic table size update: 0 */
        h->table_update = false;
    }
    for (size_t i = 0; i < n; i++) {
        size_t nl = strlen(fields[i].name), vl = strlen(fields[i].value);
        put_hpack_int(h, 0x00, 4, 0);
        put_hpack_int(h, 0x00, 7, nl);
        strbuf_append(&h->out, fields[i].name, nl);
        put_hpack_int(h, 0x00, 7, vl);
        strbuf_append(&h->out, fields[i].value, vl);
    }
    s->recv_window = H2_LITE_WINDOW;
    s->recv_unacked = 0;
    s->send_window = h->peer_initial_window;
    s->body = body;
    s->body_len = body_len;
    s->got_headers = false;
    s->sent_end = body_len == 0;
    s->next = h->streams;
    h->streams = s;
    send_body(h, s);
    if (h->out.failed) {
        unlink_stream(h, s);
        *why = "out of memory";
        return -1;
    }
    return 0;
}

void h2_lite_reset(h2_lite_t *h, h2_lite_stream_t *s, uint32_t code) {
    unlink_stream(h, s);
    if (h->failed || s->id <= 0)
        return;
    put_frame_header(h, 4, FT_RST_STREAM, 0, s->id);
    put_u32(h, code);
}

/* ---- reading frames ---------------------------------------------------------------------- */

static uint32_t get_u32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Decodes the assembled header block of stream s (NULL: a stream already
 * closed, whose block is dropped: with no dynamic table nothing of it
 * matters). */
static int decode_block(h2_lite_t *h, h2_lite_stream_t *s) {
    if (!s)
        return 0;
    nghttp2_hd_inflater *inf;
    if (nghttp2_hd_inflate_new(&inf) != 0)
        return conn_error(h, H2_INTERNAL_ERROR, "out of memory decoding headers");
    bool trailers = s->got_headers;
    s->got_headers = true;
    static const uint8_t empty[1];
    const uint8_t *in = h->hb ? h->hb : empty;
    size_t left = h->hb_len;
    int rc = 0;
    for (;;) {
        nghttp2_nv nv;
        int flags = 0;
        ssize_t used = nghttp2_hd_inflate_hd2(inf, &nv, &flags, in, left, 1);
        if (used < 0) {
            rc = conn_error(h, H2_COMPRESSION_ERROR, "header block does not decode");
            break;
        }
        in += used;
        left -= (size_t)used;
        if (flags & NGHTTP2_HD_INFLATE_EMIT)
            h->cb->on_header(h->ud, s, trailers, nv.name, nv.namelen, nv.value, nv.valuelen);
        if (flags & NGHTTP2_HD_INFLATE_FINAL) {
            nghttp2_hd_inflate_end_headers(inf);
            break;
        }
        if (used == 0 && !(flags & NGHTTP2_HD_INFLATE_EMIT)) {
            rc = conn_error(h, H2_COMPRESSION_ERROR, "header block ends inside a field");
            break;
        }
    }
    nghttp2_hd_inflate_del(inf);
    /* A block that named an entry the peer may not keep (table size 0) fails
     * above: nghttp2 finds no such index in a fresh table. */
    return rc;
}

/* The frame header is complete: check it before any payload. */
static int frame_begin(h2_lite_t *h) {
    h->len = (uint32_t)h->hdr[0] << 16 | (uint32_t)h->hdr[1] << 8 | h->hdr[2];
    h->type = h->hdr[3];
    h->flags = h->hdr[4];
    h->stream_id = (int32_t)(get_u32(h->hdr + 5) & 0x7fffffff);
    h->got = 0;
    h->ctl_len = 0;
    h->pad = -1;
    if (h->len > H2_LITE_MAX_FRAME)
        return conn_error(h, H2_FRAME_SIZE_ERROR, "frame larger than SETTINGS_MAX_FRAME_SIZE");
    if (h->continuing && (h->type != FT_CONTINUATION || h->stream_id != h->hb_stream))
        return conn_error(h, H2_PROTOCOL_ERROR, "header block interrupted by another frame");
    bool on_stream = h->type == FT_DATA || h->type == FT_HEADERS || h->type == FT_PRIORITY ||
                     h->type == FT_RST_STREAM || h->type == FT_CONTINUATION;
    bool on_conn = h->type == FT_SETTINGS || h->type == FT_PING || h->type == FT_GOAWAY;
    if (on_stream && h->stream_id == 0)
        return conn_error(h, H2_PROTOCOL_ERROR, "stream frame on stream 0");
    if (on_conn && h->stream_id != 0)
        return conn_error(h, H2_PROTOCOL_ERROR, "connection frame on a stream");
    if ((h->type == FT_DATA || h->type == FT_HEADERS || h->type == FT_RST_STREAM) &&
        (h->stream_id % 2 == 0 || h->stream_id >= h->next_id))
        return conn_error(h, H2_PROTOCOL_ERROR, "frame on a stream we never opened");
    switch (h->type) {
    case FT_DATA: {
        h2_lite_stream_t *s = find_stream(h, h->stream_id);
        h->conn_recv_window -= h->len;
        if (h->conn_recv_window < 0)
            return conn_error(h, H2_FLOW_CONTROL_ERROR, "DATA beyond the connection's window");
        if (s) {
            s->recv_window -= h->len;
            if (s->recv_window < 0)
                return conn_error(h, H2_FLOW_CONTROL_ERROR, "DATA beyond the stream's window");
        }
        if (!(h->flags & FL_PADDED))
            h->pad = 0;
        else if (h->len == 0)
            return conn_error(h, H2_FRAME_SIZE_ERROR, "padded DATA without a pad length");
        return 0;
    }
    case FT_HEADERS:
        if (h->flags & FL_PADDED && h->len == 0)
            return conn_error(h, H2_FRAME_SIZE_ERROR, "padded HEADERS without a pad length");
        h->continuing = !(h->flags & FL_END_HEADERS);
        h->hb_stream = h->stream_id;
        h->hb_end_stream = h->flags & FL_END_STREAM;
        h->hb_len = 0;
        h->hb_start = 0;
        break;
    case FT_CONTINUATION:
        if (!h->continuing)
            return conn_error(h, H2_PROTOCOL_ERROR, "CONTINUATION without HEADERS");
        h->continuing = !(h->flags & FL_END_HEADERS);
        h->hb_start = h->hb_len;
        break;
    case FT_PRIORITY:
        if (h->len != 5)
            return conn_error(h, H2_FRAME_SIZE_ERROR, "PRIORITY is not 5 bytes");
        break;
    case FT_RST_STREAM:
    case FT_WINDOW_UPDATE:
        if (h->len != 4)
            return conn_error(h, H2_FRAME_SIZE_ERROR, "RST_STREAM or WINDOW_UPDATE not 4 bytes");
        break;
    case FT_SETTINGS:
        if (h->flags & FL_ACK ? h->len != 0 : h->len % 6 != 0)
            return conn_error(h, H2_FRAME_SIZE_ERROR, "SETTINGS of a wrong length");
        break;
    case FT_PING:
        if (h->len != 8)
            return conn_error(h, H2_FRAME_SIZE_ERROR, "PING is not 8 bytes");
        break;
    case FT_GOAWAY:
        if (h->len < 8)
            return conn_error(h, H2_FRAME_SIZE_ERROR, "GOAWAY shorter than 8 bytes");
        break;
    case FT_PUSH_PROMISE:
        return conn_error(h, H2_PROTOCOL_ERROR, "PUSH_PROMISE after SETTINGS_ENABLE_PUSH 0");
    default:
        break; /* an unknown type is ignored (RFC 9113 4.1) */
    }
    if ((h->type == FT_HEADERS || h->type == FT_CONTINUATION) &&
        h->hb_len + h->len > H2_LITE_MAX_HEADER_BLOCK)
        return conn_error(h, H2_ENHANCE_YOUR_CALM, "header block larger than 64 KiB");
    return 0;
}

static int apply_setting(h2_lite_t *h, uint16_t id, uint32_t v) {
    switch (id) {
    case SET_HEADER_TABLE_SIZE:
        h->table_update = true;
        break;
    case SET_INITIAL_WINDOW_SIZE: {
        if (v > H2_MAX_WINDOW)
            return conn_error(h, H2_FLOW_CONTROL_ERROR, "SETTINGS_INITIAL_WINDOW_SIZE too large");
        int64_t delta = (int64_t)v - h->peer_initial_window;
        h->peer_initial_window = v;
        for (h2_lite_stream_t *s = h->streams; s; s = s->next) {
            s->send_window += delta;
            if (s->send_window > H2_MAX_WINDOW)
                return conn_error(h, H2_FLOW_CONTROL_ERROR, "stream window above 2^31-1");
        }
        break;
    }
    case SET_MAX_FRAME_SIZE:
        if (v < 16384 || v > 16777215)
            return conn_error(h, H2_PROTOCOL_ERROR, "SETTINGS_MAX_FRAME_SIZE out of range");
        h->peer_max_frame = v;
        break;
    case SET_ENABLE_PUSH:
        if (v > 1)
            return conn_error(h, H2_PROTOCOL_ERROR, "SETTINGS_ENABLE_PUSH not 0 or 1");
        break;
    default:
        break;
    }
    return 0;
}

/* Payload bytes of the current frame. */
static int frame_bytes(h2_lite_t *h, const uint8_t *p, size_t n) {
    switch (h->type) {
    case FT_DATA: {
        size_t i = 0;
        if (h->pad < 0 && n > 0) {
            h->pad = p[0];
            if ((uint32_t)h->pad + 1 > h->len)
                return conn_error(h, H2_PROTOCOL_ERROR, "DATA padding longer than the frame");
            i = 1;
        }
        /* content is payload[pad-length byte .. len - pad) */
        uint32_t end = h->len - (uint32_t)(h->pad < 0 ? 0 : h->pad);
        uint32_t pos = h->got + (uint32_t)i;
        size_t take = 0;
        if (pos < end) {
            take = end - pos;
            if (take > n - i)
                take = n - i;
        }
        if (take) {
            h2_lite_stream_t *s = find_stream(h, h->stream_id);
            if (s)
                h->cb->on_data(h->ud, s, p + i, take);
        }
        return 0;
    }
    case FT_HEADERS:
    case FT_CONTINUATION:
        if (h->hb_len + n > h->hb_cap) {
            uint32_t cap = h->hb_cap ? h->hb_cap : 1024;
            while (cap < h->hb_len + n)
                cap *= 2;
            uint8_t *nb = realloc(h->hb, cap);
            if (!nb)
                return conn_error(h, H2_INTERNAL_ERROR, "out of memory for a header block");
            h->hb = nb;
            h->hb_cap = cap;
        }
        memcpy(h->hb + h->hb_len, p, n);
        h->hb_len += (uint32_t)n;
        return 0;
    case FT_SETTINGS:
        for (size_t i = 0; i < n; i++) {
            h->ctl[h->ctl_len++] = p[i];
            if (h->ctl_len == 6) {
                h->ctl_len = 0;
                if (apply_setting(h, (uint16_t)(h->ctl[0] << 8 | h->ctl[1]), get_u32(h->ctl + 2)) <
                    0)
                    return -1;
            }
        }
        return 0;
    case FT_RST_STREAM:
    case FT_WINDOW_UPDATE:
    case FT_PING:
    case FT_GOAWAY:
        for (size_t i = 0; i < n && h->ctl_len < sizeof h->ctl; i++)
            h->ctl[h->ctl_len++] = p[i];
        return 0;
    default:
        return 0;
    }
}

static int headers_end(h2_lite_t *h) {
    /* This HEADERS frame's payload is hb[hb_start..hb_len): strip its pad
     * length, priority fields and padding. */
    if (h->type == FT_HEADERS && h->flags & (FL_PADDED | FL_PRIORITY)) {
        uint32_t flen = h->hb_len - h->hb_start, skip = 0, pad = 0;
        if (h->flags & FL_PADDED) {
            pad = h->hb[h->hb_start]; /* there: a padded frame is not empty */
            skip = 1;
        }
        if (h->flags & FL_PRIORITY)
            skip += 5;
        if (skip + pad > flen)
            return conn_error(h, H2_PROTOCOL_ERROR, "HEADERS padding longer than the frame");
        uint8_t *f = h->hb + h->hb_start;
        memmove(f, f + skip, flen - skip - pad);
        h->hb_len = h->hb_start + flen - skip - pad;
    }
    if (h->continuing)
        return 0;
    h2_lite_stream_t *s = find_stream(h, h->hb_stream);
    int rc = decode_block(h, s);
    /* Keep no block between responses. */
    free(h->hb);
    h->hb = NULL;
    h->hb_len = h->hb_cap = 0;
    if (rc < 0)
        return -1;
    if (s && h->hb_end_stream)
        close_stream(h, s, false, 0);
    return 0;
}

static int data_end(h2_lite_t *h) {
    h2_lite_stream_t *s = find_stream(h, h->stream_id);
    h->conn_recv_unacked += h->len;
    if (h->conn_recv_unacked >= H2_LITE_WINDOW / 2) {
        put_window_update(h, 0, h->conn_recv_unacked);
        h->conn_recv_window += h->conn_recv_unacked;
        h->conn_recv_unacked = 0;
    }
    if (!s)
        return 0;
    if (h->flags & FL_END_STREAM) {
        close_stream(h, s, false, 0);
        return 0;
    }
    s->recv_unacked += h->len;
    if (s->recv_unacked >= H2_LITE_WINDOW / 2) {
        put_window_update(h, s->id, s->recv_unacked);
        s->recv_window += s->recv_unacked;
        s->recv_unacked = 0;
    }
    return 0;
}

static int goaway_end(h2_lite_t *h) {
    uint32_t last = get_u32(h->ctl) & 0x7fffffff, code = get_u32(h->ctl + 4);
    h->goaway_received = true;
    if (h->cb->on_goaway)
        h->cb->on_goaway(h->ud, last, code, h->ctl + 8, h->ctl_len - 8);
    /* Streams above `last` were never processed: refused, safe to retry. */
    for (h2_lite_stream_t *s = h->streams, *next; s; s = next) {
        next = s->next;
        if ((uint32_t)s->id > last)
            close_stream(h, s, true, H2_REFUSED_STREAM);
    }
    return 0;
}

static int window_update_end(h2_lite_t *h) {
    uint32_t inc = get_u32(h->ctl) & 0x7fffffff;
    if (h->stream_id == 0) {
        if (inc == 0)
            return conn_error(h, H2_PROTOCOL_ERROR, "WINDOW_UPDATE of 0 on the connection");
        h->conn_send_window += inc;
        if (h->conn_send_window > H2_MAX_WINDOW)
            return conn_error(h, H2_FLOW_CONTROL_ERROR, "connection window above 2^31-1");
    } else {
        h2_lite_stream_t *s = find_stream(h, h->stream_id);
        if (!s)
            return 0;
        if (inc == 0) { /* a stream error: that stream only */
            h2_lite_reset(h, s, H2_PROTOCOL_ERROR);
            h->cb->on_close(h->ud, s, true, H2_PROTOCOL_ERROR);
            return 0;
        }
        s->send_window += inc;
        if (s->send_window > H2_MAX_WINDOW)
            return conn_error(h, H2_FLOW_CONTROL_ERROR, "stream window above 2^31-1");
    }
    for (h2_lite_stream_t *s = h->streams; s; s = s->next)
        send_body(h, s);
    return 0;
}

static int frame_end(h2_lite_t *h) {
    switch (h->type) {
    case FT_DATA:
        return data_end(h);
    case FT_HEADERS:
    case FT_CONTINUATION:
        return headers_end(h);
    case FT_RST_STREAM: {
        h2_lite_stream_t *s = find_stream(h, h->stream_id);
        if (s)
            close_stream(h, s, true, get_u32(h->ctl));
        return 0;
    }
    case FT_SETTINGS:
        if (!(h->flags & FL_ACK)) {
            put_frame_header(h, 0, FT_SETTINGS, FL_ACK, 0);
            /* A larger window may let a waiting body go. */
            for (h2_lite_stream_t *s = h->streams; s; s = s->next)
                send_body(h, s);
        }
        return 0;
    case FT_PING:
        if (!(h->flags & FL_ACK)) {
            put_frame_header(h, 8, FT_PING, FL_ACK, 0);
            strbuf_append(&h->out, (const char *)h->ctl, 8);
        }
        return 0;
    case FT_GOAWAY:
        return goaway_end(h);
    case FT_WINDOW_UPDATE:
        return window_update_end(h);
    default:
        return 0;
    }
}

int h2_lite_feed(h2_lite_t *h, const uint8_t *buf, size_t len) {
    size_t off = 0;
    while (!h->failed) {
        if (h->hdr_len < sizeof h->hdr) {
            if (off == len)
                break;
            size_t n = sizeof h->hdr - h->hdr_len;
            if (n > len - off)
                n = len - off;
            memcpy(h->hdr + h->hdr_len, buf + off, n);
            h->hdr_len = (uint8_t)(h->hdr_len + n);
            off += n;
            if (h->hdr_len < sizeof h->hdr || frame_begin(h) < 0)
                continue;
        }
        size_t n = h->len - h->got;
        if (n > len - off)
            n = len - off;
        if (n && frame_bytes(h, buf + off, n) < 0)
            continue;
        h->got += (uint32_t)n;
        off += n;
        if (h->got < h->len)
            break; /* the rest of the payload comes later */
        h->hdr_len = 0;
        if (frame_end(h) < 0)
            continue;
        if (h->out.failed)
            return conn_error(h, H2_INTERNAL_ERROR, "out of memory");
    }
    return h->failed ? -1 : 0;
}
