/*
 * source_backend.c - the table of backends (see the header).
 */
#include "sources/source_backend.h"

static const source_backend_t *const BACKENDS[SOURCE_KIND_COUNT] = {
    [SOURCE_KIND_ENGINE] = &source_backend_http,
    [SOURCE_KIND_PROM] = &source_backend_http,
    [SOURCE_KIND_REDIS] = &source_backend_redis,
};

const source_backend_t *source_backend_for(source_kind_t kind) {
    return (unsigned)kind < SOURCE_KIND_COUNT ? BACKENDS[kind] : NULL;
}
