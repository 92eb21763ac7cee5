/*
 * strbuf.h - a growable, NUL-terminated string for text whose length is not
 * known in advance (a CLI's output line, a list of problems): messages are
 * built whole, never cut by a fixed buffer. An allocation failure sets
 * `failed` and later appends do nothing; check once at the end.
 */
#ifndef KGS_CORE_STRBUF_H
#define KGS_CORE_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    char *s;     /* read-only: the text ("" after strbuf_init, never NULL) */
    size_t len;  /* read-only: bytes, NUL excluded */
    size_t cap;  /* private */
    bool failed; /* read-only: an append ran out of memory (s holds what fit before) */
} strbuf_t;

/* An empty string (no allocation). */
void strbuf_init(strbuf_t *b);
/* Frees it; b is then as after strbuf_init. */
void strbuf_free(strbuf_t *b);
/* Empties it, keeping the memory. */
void strbuf_clear(strbuf_t *b);
/* Appends printf-style text. */
void strbuf_printf(strbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends n bytes of p. */
void strbuf_append(strbuf_t *b, const char *p, size_t n);

#endif
