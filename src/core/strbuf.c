/* strbuf.c - see the header. Capacity doubles, so n appends cost O(total). */
#include "core/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char empty[1];

void strbuf_init(strbuf_t *b) {
    b->s = empty;
    b->len = b->cap = 0;
    b->failed = false;
}

void strbuf_free(strbuf_t *b) {
    if (b->cap)
        free(b->s);
    strbuf_init(b);
}

void strbuf_clear(strbuf_t *b) {
    b->len = 0;
    if (b->cap)
        b->s[0] = '\0';
    b->failed = false;
}

/* Room for n more bytes and the NUL. */
static bool reserve(strbuf_t *b, size_t n) {
    if (b->failed || n > (size_t)-1 / 2 - b->len)
        return b->failed = true, false;
    if (b->len + n + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + n + 1)
        cap *= 2;
    char *p = realloc(b->cap ? b->s : NULL, cap);
    if (!p)
        return b->failed = true, false;
    if (!b->cap)
        p[0] = '\0';
    b->s = p;
    b->cap = cap;
    return true;
}

void strbuf_append(strbuf_t *b, const char *p, size_t n) {
    if (!reserve(b, n))
        return;
    memcpy(b->s + b->len, p, n);
    b->len += n;
    b->s[b->len] = '\0';
}

void strbuf_printf(strbuf_t *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}
