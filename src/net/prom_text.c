/*
 * prom_text.c - Prometheus text exposition format 0.0.4.
 *
 * Format reference: prometheus/docs content/docs/instrumenting/
 * exposition_formats.md. HELP escapes backslash and newline; label values
 * escape backslash, double quote and newline; sample values are Go
 * ParseFloat syntax, so "NaN", "+Inf" and "-Inf" are the spellings.
 *
 * The buffer latches the first allocation failure instead of returning it
 * from every call: a scrape either produces the whole text or nothing, and
 * the writer code stays a straight list of calls. PROM_REALLOC lets a test
 * that includes this file swap in a failing allocator (STYLE rule 13).
 */
#include "net/prom_text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef PROM_REALLOC
#define PROM_REALLOC realloc
#endif

#define PROM_MIN_CAP 1024u

void prom_buf_init(prom_buf_t *b) {
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->failed = false;
}

void prom_buf_reset(prom_buf_t *b) {
    b->len = 0;
    b->failed = false;
    if (b->data)
        b->data[0] = '\0';
}

void prom_buf_free(prom_buf_t *b) {
    if (!b)
        return;
    free(b->data);
    prom_buf_init(b);
}

/* Makes room for n more bytes plus the NUL; false (and failed) otherwise. */
static bool buf_reserve(prom_buf_t *b, size_t n) {
    if (b->failed)
        return false;
    if (n > SIZE_MAX - 1 - b->len) {
        b->failed = true;
        return false;
    }
    size_t need = b->len + n + 1;
    if (need <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : PROM_MIN_CAP;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = PROM_REALLOC(b->data, cap);
    if (!p) {
        b->failed = true;
        return false;
    }
    b->data = p;
    b->cap = cap;
    return true;
}

static void buf_append(prom_buf_t *b, const char *s, size_t n) {
    if (!buf_reserve(b, n))
        return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

static void buf_puts(prom_buf_t *b, const char *s) {
    buf_append(b, s, strlen(s));
}

/* Copies s, writing each byte found in `specials` as a backslash escape
 * ('\n' as "\\n"). Runs of plain bytes go in with one append. */
static void buf_escaped(prom_buf_t *b, const char *s, const char *specials) {
    for (;;) {
        size_t run = strcspn(s, specials);
        buf_append(b, s, run);
        s += run;
        if (*s == '\0')
            return;
        buf_append(b, *s == '\n' ? "\\n" : *s == '"' ? "\\\"" : "\\\\", 2);
        s++;
    }
}

/* The shortest %g form that reads back as v: 15 significant digits cover
 * most values, 17 always do. Integers below 1e15 thus print plainly. */
static void format_value(double v, char out[40]) {
    if (isnan(v)) {
        strcpy(out, "NaN");
        return;
    }
    if (isinf(v)) {
        strcpy(out, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    if (v == 0) { /* also -0, which would print as "-0" */
        strcpy(out, "0");
        return;
    }
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(out, 40, "%.*g", prec, v);
        if (strtod(out, NULL) == v)
            return;
    }
}

void prom_family(prom_buf_t *b, const char *name, const char *type, const char *help) {
    if (help) {
        buf_puts(b, "# HELP ");
        buf_puts(b, name);
        buf_puts(b, " ");
        buf_escaped(b, help, "\\\n");
        buf_puts(b, "\n");
    }
    buf_puts(b, "# TYPE ");
    buf_puts(b, name);
    buf_puts(b, " ");
    buf_puts(b, type);
    buf_puts(b, "\n");
}

static void write_label(prom_buf_t *b, const prom_label_t *l, bool first) {
    if (!first)
        buf_puts(b, ",");
    buf_puts(b, l->name);
    buf_puts(b, "=\"");
    buf_escaped(b, l->value, "\\\"\n");
    buf_puts(b, "\"");
}

void prom_sample(prom_buf_t *b, const char *name, const char *suffix, const prom_label_t *labels,
                 size_t nlabels, const prom_label_t *extra, double value) {
    buf_puts(b, name);
    if (suffix)
        buf_puts(b, suffix);
    if (nlabels > 0 || extra) {
        buf_puts(b, "{");
        for (size_t i = 0; i < nlabels; i++)
            write_label(b, &labels[i], i == 0);
        if (extra)
            write_label(b, extra, nlabels == 0);
        buf_puts(b, "}");
    }
    char num[40];
    format_value(value, num);
    buf_puts(b, " ");
    buf_puts(b, num);
    buf_puts(b, "\n");
}

void prom_histogram_observe(prom_histogram_t *h, double v) {
    size_t i = 0;
    while (i < h->nbounds && !(v <= h->bounds[i]))
        i++;
    h->counts[i]++;
    h->sum += v;
    h->count++;
}

void prom_histogram_write(prom_buf_t *b, const char *name, const prom_label_t *labels,
                          size_t nlabels, const prom_histogram_t *h) {
    uint64_t cumulative = 0;
    char le[40];
    for (size_t i = 0; i <= h->nbounds; i++) {
        cumulative += h->counts[i];
        if (i < h->nbounds)
            format_value(h->bounds[i], le);
        else
            strcpy(le, "+Inf");
        prom_label_t extra = {"le", le};
        prom_sample(b, name, "_bucket", labels, nlabels, &extra, (double)cumulative);
    }
    prom_sample(b, name, "_sum", labels, nlabels, NULL, h->sum);
    prom_sample(b, name, "_count", labels, nlabels, NULL, (double)h->count);
}
