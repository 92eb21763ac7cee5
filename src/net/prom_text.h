/*
 * prom_text.h - a writer for the Prometheus text exposition format 0.0.4
 * (Content-Type: text/plain; version=0.0.4; charset=utf-8).
 *
 * Output goes into a growable buffer. An allocation failure does not return
 * an error from every call: it sets b->failed, later writes do nothing, and
 * the caller checks once at the end and drops the output (answers 500).
 * Names, types and label names are the caller's constants and are written
 * as given; help texts and label values are escaped. Numbers are formatted
 * with snprintf, so the process must keep LC_NUMERIC as "C" (the default).
 * No state outside the buffer: a buffer belongs to one thread at a time.
 */
#ifndef KGS_NET_PROM_TEXT_H
#define KGS_NET_PROM_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    char *data;  /* read-only: NUL-terminated output once anything was written, else NULL */
    size_t len;  /* read-only: bytes of output, NUL excluded */
    size_t cap;  /* private */
    bool failed; /* read-only: an allocation failed; drop the output */
} prom_buf_t;

/* Sets up an empty buffer (no allocation). */
void prom_buf_init(prom_buf_t *b);
/* Empties the buffer for the next exposition: len = 0, failed = false,
 * capacity kept. */
void prom_buf_reset(prom_buf_t *b);
/* Releases the memory; the buffer is then as after prom_buf_init().
 * NULL does nothing. */
void prom_buf_free(prom_buf_t *b);

typedef struct {
    const char *name;  /* borrowed for the call */
    const char *value; /* borrowed for the call; escaped on output */
} prom_label_t;

/* "# HELP name help\n# TYPE name type\n". help is escaped (backslash and
 * newline); help NULL omits the HELP line. type: "counter", "gauge",
 * "histogram", "summary" or "untyped". */
void prom_family(prom_buf_t *b, const char *name, const char *type, const char *help);

/*
 * name<suffix>{l1="v1",...,extra} value\n. suffix (may be NULL) is appended
 * to the name (for _bucket/_sum/_count). extra (may be NULL) is one more
 * label written after labels (le="..."). Without any label the braces are
 * left out. Label values are escaped (\\, \", \n). value: the shortest
 * decimal that reads back as the same double, so integers come out without
 * exponent or ".0" below 1e15 (42, 0.5; 1e+21 for huge ones), -0 as 0,
 * NaN as "NaN", infinities as "+Inf"/"-Inf".
 */
void prom_sample(prom_buf_t *b, const char *name, const char *suffix, const prom_label_t *labels,
                 size_t nlabels, const prom_label_t *extra, double value);

/* A fixed-bucket histogram in caller-owned storage. bounds: ascending,
 * finite, borrowed; counts: nbounds + 1 per-bucket (not cumulative) counts,
 * the last one for +Inf, borrowed and written by observe. Zero the counts,
 * sum and count before the first observation. */
typedef struct {
    const double *bounds;
    size_t nbounds;
    uint64_t *counts; /* nbounds + 1 (last = +Inf) */
    double sum;
    uint64_t count;
} prom_histogram_t;

/* Counts v in the first bucket whose bound is >= v (the +Inf bucket if
 * none, and for NaN), and adds it to sum and count. */
void prom_histogram_observe(prom_histogram_t *h, double v);

/* Writes the cumulative name_bucket lines (le="<bound>" ... le="+Inf"),
 * then name_sum and name_count, all with labels; not the family header.
 * The +Inf bucket is the total of counts; name_count is h->count (equal
 * when only prom_histogram_observe() wrote them). */
void prom_histogram_write(prom_buf_t *b, const char *name, const prom_label_t *labels,
                          size_t nlabels, const prom_histogram_t *h);

#endif
