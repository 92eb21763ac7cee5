/*
 * h2_lite.h - the client side of HTTP/2 that a gRPC client needs, and no
 * more: requests on client streams, their responses, flow control, SETTINGS,
 * PING, GOAWAY and RST_STREAM (RFC 9113). Pure: bytes in, events and bytes
 * out; the owner (net/grpc_client.c) moves the bytes to and from a socket.
 *
 * DESIGN
 * Why not nghttp2 here, as the gRPC server uses? An aggregator holds one
 * connection to every agent of the cluster, each carrying one long Watch
 * stream, and an nghttp2 session costs ~25 KiB whatever it carries (a 16 KiB
 * outbound frame buffer allocated whole, HPACK tables, the session): 250 MiB
 * at 10,000 nodes, more than the rest of the aggregator together. This
 * connection costs the struct below (a few hundred bytes) at rest: what is
 * to be sent is buffered only until it is written, a header block only
 * until it is decoded.
 *
 * What keeps it small:
 *   - no dynamic HPACK state in either direction. Our header blocks are
 *     literals without indexing, and the first one after the connection
 *     starts or the peer's SETTINGS_HEADER_TABLE_SIZE is received says our
 *     table's size is 0 (the update RFC 7541 4.2 requires when the peer
 *     shrinks it: nghttp2 refuses a block without it); our SETTINGS say HEADER_TABLE_SIZE 0, so
 *     the peer's encoder may not keep entries either (RFC 7541 4.2), and
 *     each received block is decoded with a fresh nghttp2 HPACK inflater
 *     (nghttp2's own decoder, Huffman included), freed at once. A block
 *     that names a dynamic entry is a COMPRESSION_ERROR, as it must be
 *     with a table of size 0;
 *   - a stream's state lives in the caller's call (h2_lite_stream_t);
 *   - server push is refused (ENABLE_PUSH 0: a PUSH_PROMISE is a
 *     PROTOCOL_ERROR).
 * Every connection error ends with a GOAWAY carrying the error code and a
 * short reason, queued for the owner to write; the connection is then dead
 * (h2_lite_feed returns -1 and h2_lite_t.why says why).
 *
 * Frames larger than 16,384 bytes (SETTINGS_MAX_FRAME_SIZE's default, which
 * we do not raise) are a FRAME_SIZE_ERROR; a header block over
 * H2_LITE_MAX_HEADER_BLOCK is refused (ENHANCE_YOUR_CALM).
 */
#ifndef KGS_NET_H2_LITE_H
#define KGS_NET_H2_LITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/strbuf.h"

/* The window we give the peer, per stream and for the connection; a
 * WINDOW_UPDATE goes back once half of it was received. */
#define H2_LITE_WINDOW (1u << 20)
#define H2_LITE_MAX_FRAME 16384u
#define H2_LITE_MAX_HEADER_BLOCK (64u * 1024u)

/* HTTP/2 error codes (RFC 9113 7). */
enum {
    H2_NO_ERROR = 0x0,
    H2_PROTOCOL_ERROR = 0x1,
    H2_INTERNAL_ERROR = 0x2,
    H2_FLOW_CONTROL_ERROR = 0x3,
    H2_SETTINGS_TIMEOUT = 0x4,
    H2_STREAM_CLOSED = 0x5,
    H2_FRAME_SIZE_ERROR = 0x6,
    H2_REFUSED_STREAM = 0x7,
    H2_CANCEL = 0x8,
    H2_COMPRESSION_ERROR = 0x9,
    H2_CONNECT_ERROR = 0xa,
    H2_ENHANCE_YOUR_CALM = 0xb,
    H2_INADEQUATE_SECURITY = 0xc,
    H2_HTTP_1_1_REQUIRED = 0xd,
};

/* "PROTOCOL_ERROR", ...; "unknown error" for a code RFC 9113 does not name. */
const char *h2_lite_error_name(uint32_t code);

/* One client stream; owned by the caller (embedded in its call), linked
 * into the connection while open. */
typedef struct h2_lite_stream {
    int32_t id;            /* 0 until h2_lite_request */
    int64_t recv_window;   /* what the peer may still send */
    uint32_t recv_unacked; /* received since our last WINDOW_UPDATE */
    int64_t send_window;   /* what we may still send */
    const uint8_t *body;   /* request bytes not yet sent (borrowed) */
    size_t body_len;
    bool got_headers; /* the response's headers came: the next block is trailers */
    bool sent_end;    /* our END_STREAM went out */
    void *user;
    struct h2_lite_stream *next;
} h2_lite_stream_t;

typedef struct {
    /* A header field of a response's headers (trailers false) or trailers. */
    void (*on_header)(void *ud, h2_lite_stream_t *s, bool trailers, const uint8_t *name,
                      size_t namelen, const uint8_t *value, size_t valuelen);
    /* Response body bytes (padding removed), in order. */
    void (*on_data)(void *ud, h2_lite_stream_t *s, const uint8_t *data, size_t len);
    /* The stream is over and unlinked: the peer's END_STREAM (reset false,
     * code 0), its RST_STREAM (reset true, its code), or a GOAWAY that did
     * not cover it (reset true, H2_REFUSED_STREAM). */
    void (*on_close)(void *ud, h2_lite_stream_t *s, bool reset, uint32_t code);
    /* The peer sent GOAWAY (debug data cut to what h2_lite keeps). May be NULL. */
    void (*on_goaway)(void *ud, uint32_t last_stream_id, uint32_t code, const uint8_t *debug,
                      size_t debuglen);
} h2_lite_callbacks_t;

#define H2_LITE_GOAWAY_DEBUG 120 /* GOAWAY debug bytes kept */

typedef struct {
    const h2_lite_callbacks_t *cb;
    void *ud;
    strbuf_t out; /* bytes to write: out.s[out_off..out.len); freed once written */
    size_t out_off;
    h2_lite_stream_t *streams;
    int32_t next_id;
    int64_t conn_recv_window, conn_send_window;
    uint32_t conn_recv_unacked;
    uint32_t peer_initial_window, peer_max_frame;
    /* the frame being read */
    uint8_t hdr[9];
    uint8_t hdr_len;
    uint8_t type, flags;
    int32_t stream_id;
    uint32_t len, got; /* payload length, bytes of it read */
    int16_t pad;       /* DATA: padding length; -1 until read */
    uint32_t hb_start; /* HEADERS: where this frame's payload begins in hb */
    uint8_t ctl[8 + H2_LITE_GOAWAY_DEBUG];
    uint32_t ctl_len;
    /* the header block being assembled (HEADERS + CONTINUATION) */
    uint8_t *hb;
    uint32_t hb_len, hb_cap;
    int32_t hb_stream;
    bool hb_end_stream, continuing;
    bool table_update; /* our next block starts with "dynamic table size 0" */
    bool goaway_received;
    bool failed;
    uint32_t error_code; /* the connection error we sent in GOAWAY */
    char why[160];       /* failed: why, for the owner's message */
} h2_lite_t;

/* A header field to send. */
typedef struct {
    const char *name, *value;
} h2_lite_field_t;

/* Sets up a connection and queues the client preface, our SETTINGS
 * (ENABLE_PUSH 0, HEADER_TABLE_SIZE 0, INITIAL_WINDOW_SIZE H2_LITE_WINDOW)
 * and the connection's WINDOW_UPDATE. The out buffer may have failed
 * (h->out.failed): the owner treats that as out of memory. */
void h2_lite_init(h2_lite_t *h, const h2_lite_callbacks_t *cb, void *ud);
/* Frees buffers; streams still linked are dropped without callbacks. */
void h2_lite_free(h2_lite_t *h);

/*
 * Opens stream s (zeroed by the caller, s->user set) with a request: a
 * HEADERS block of the fields (pseudo-headers first, names lowercase), then
 * body (borrowed until the stream closes or is reset) as DATA with
 * END_STREAM, as much as the peer's windows allow now, the rest when they
 * open. Returns 0, or -1 with a reason in *why: the connection failed or
 * the peer sent GOAWAY ("the server is going away"), stream ids are used
 * up, out of memory.
 */
int h2_lite_request(h2_lite_t *h, h2_lite_stream_t *s, const h2_lite_field_t *fields, size_t n,
                    const uint8_t *body, size_t body_len, const char **why);

/* Resets stream s (RST_STREAM code) and unlinks it; no on_close follows. */
void h2_lite_reset(h2_lite_t *h, h2_lite_stream_t *s, uint32_t code);

/* Reads bytes from the peer: callbacks run from here. Returns 0, or -1 when
 * the connection has failed (now or before): h->why says why, and a GOAWAY
 * naming the error waits in the out buffer. */
int h2_lite_feed(h2_lite_t *h, const uint8_t *buf, size_t len);

/* Bytes waiting to be written, and telling that n of them were. */
static inline size_t h2_lite_pending(const h2_lite_t *h) {
    return h->out.len - h->out_off;
}
static inline const uint8_t *h2_lite_out(const h2_lite_t *h) {
    return (const uint8_t *)h->out.s + h->out_off;
}
void h2_lite_written(h2_lite_t *h, size_t n);

#endif
