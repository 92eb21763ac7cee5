/*
 * h2_pump.h - the bytes between an nghttp2 session and a transport: the
 * gRPC server's (the client speaks HTTP/2 through net/h2_lite.c, whose
 * connections cost a few hundred bytes where an nghttp2 session costs
 * ~25 KiB). nghttp2 never sees a socket: what is read goes in through
 * h2_pump_feed() (nghttp2_session_mem_recv), and h2_pump_flush() pulls
 * frames out of nghttp2_session_mem_send() into a buffer and writes what
 * the transport takes; h2_nv() builds the header fields the server
 * submits. Loop thread only.
 *
 * The owner keeps the session and the transport (both borrowed here) and
 * decides what a failure means; the pump never closes anything.
 */
#ifndef KGS_NET_H2_PUMP_H
#define KGS_NET_H2_PUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include <nghttp2/nghttp2.h>

#include "core/strbuf.h"
#include "net/transport.h"

/* Frames are pulled from nghttp2 until this much waits to be written, then
 * the socket must drain first (backpressure). */
#define H2_PUMP_HIGH_WATER (256 * 1024)

typedef struct {
    nghttp2_session *h2; /* borrowed */
    transport_t *tr;     /* borrowed */
    strbuf_t out;        /* bytes from nghttp2 (strbuf holds bytes too); out.s[off..len) unsent */
    size_t off;
    /* Inside nghttp2_session_mem_recv: nghttp2 forbids mem_send from its
     * callbacks, so an owner's flush waits until h2_pump_feed returns. */
    bool in_recv;
    int h2_error; /* the NGHTTP2_ERR_* of the last H2_PUMP_H2_FAILED */
} h2_pump_t;

typedef enum {
    H2_PUMP_DONE = 0,           /* everything written; nghttp2 had nothing more */
    H2_PUMP_BLOCKED = 1,        /* the transport would block: bytes wait in the buffer */
    H2_PUMP_WRITE_FAILED = -1,  /* the transport broke (tr->error says why) */
    H2_PUMP_H2_FAILED = -2,     /* nghttp2_session_mem_send failed (h2_error) */
    H2_PUMP_OUT_OF_MEMORY = -3, /* the buffer could not grow */
} h2_pump_result_t;

void h2_pump_init(h2_pump_t *p, nghttp2_session *h2, transport_t *tr);
/* Frees the buffer (not the session nor the transport). */
void h2_pump_free(h2_pump_t *p);

/* Hands received bytes to nghttp2 (in_recv set meanwhile). Returns what
 * nghttp2_session_mem_recv returns: len, or a negative NGHTTP2_ERR_*. */
ssize_t h2_pump_feed(h2_pump_t *p, const uint8_t *buf, size_t len);

/* Writes what is buffered, refills from nghttp2 up to H2_PUMP_HIGH_WATER,
 * and again, until the transport would block or nghttp2 has nothing more.
 * Returns an h2_pump_result_t. Not to be called while in_recv. */
int h2_pump_flush(h2_pump_t *p);

/* Bytes buffered and not yet written. */
size_t h2_pump_pending(const h2_pump_t *p);

/* A header field for nghttp2_submit_*: borrows both strings, which must
 * live until the submit call returns (nghttp2 copies them). */
static inline nghttp2_nv h2_nv(const char *name, const char *value) {
    nghttp2_nv nv = {(uint8_t *)(uintptr_t)name, (uint8_t *)(uintptr_t)value, strlen(name),
                     strlen(value), NGHTTP2_NV_FLAG_NONE};
    return nv;
}

#endif
