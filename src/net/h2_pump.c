/* h2_pump.c - see the header. */
#include "net/h2_pump.h"

void h2_pump_init(h2_pump_t *p, nghttp2_session *h2, transport_t *tr) {
    p->h2 = h2;
    p->tr = tr;
    strbuf_init(&p->out);
    p->off = 0;
    p->in_recv = false;
    p->h2_error = 0;
}

void h2_pump_free(h2_pump_t *p) {
    strbuf_free(&p->out);
    p->off = 0;
}

ssize_t h2_pump_feed(h2_pump_t *p, const uint8_t *buf, size_t len) {
    p->in_recv = true;
    ssize_t used = nghttp2_session_mem_recv(p->h2, buf, len);
    p->in_recv = false;
    return used;
}

size_t h2_pump_pending(const h2_pump_t *p) {
    return p->out.len - p->off;
}

int h2_pump_flush(h2_pump_t *p) {
    for (;;) {
        while (p->off < p->out.len) {
            ssize_t n = transport_write(p->tr, p->out.s + p->off, p->out.len - p->off);
            if (n == TRANSPORT_AGAIN)
                return H2_PUMP_BLOCKED;
            if (n <= 0)
                return H2_PUMP_WRITE_FAILED;
            p->off += (size_t)n;
        }
        strbuf_clear(&p->out);
        p->off = 0;
        bool got = false;
        while (p->out.len < H2_PUMP_HIGH_WATER) {
            const uint8_t *data;
            ssize_t n = nghttp2_session_mem_send(p->h2, &data);
            if (n < 0) {
                p->h2_error = (int)n;
                return H2_PUMP_H2_FAILED;
            }
            if (n == 0)
                break;
            strbuf_append(&p->out, (const char *)data, (size_t)n);
            if (p->out.failed)
                return H2_PUMP_OUT_OF_MEMORY;
            got = true;
        }
        if (!got)
            return H2_PUMP_DONE;
    }
}
