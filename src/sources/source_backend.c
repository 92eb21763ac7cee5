/*
 * source_backend.c - the table of backends (see the header).
 */
#include "sources/source_backend.h"

#include <stdio.h>

static const source_backend_t *const BACKENDS[SOURCE_KIND_COUNT] = {
    [SOURCE_KIND_ENGINE] = &source_backend_http,
    [SOURCE_KIND_PROM] = &source_backend_http,
    [SOURCE_KIND_REDIS] = &source_backend_redis,
};

const source_backend_t *source_backend_for(source_kind_t kind) {
    return (unsigned)kind < SOURCE_KIND_COUNT ? BACKENDS[kind] : NULL;
}

int source_backend_read(const source_backend_t *b, const source_params_t *p, source_scratch_t *sc,
                        const char *buf, size_t len, size_t piece, bool eof, source_reading_t *out,
                        char *msg, size_t msglen) {
    source_reply_t *r = b->begin(p, sc);
    if (!r) {
        snprintf(msg, msglen, "out of memory");
        return -1;
    }
    int rc = 0;
    size_t step = piece ? piece : len;
    for (size_t o = 0; o < len && rc == 0; o += step)
        rc = b->feed(r, buf + o, len - o < step ? len - o : step, msg, msglen);
    if (rc >= 0)
        rc = b->finish(r, rc == 0 && eof, out, msg, msglen);
    b->end(r);
    return rc;
}
