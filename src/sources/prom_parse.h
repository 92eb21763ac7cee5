/*
 * prom_parse.h - a parser for what inference servers (vLLM, Triton, TGI,
 * SGLang) serve on /metrics: the Prometheus text format 0.0.4 and
 * OpenMetrics 1.0 text. Demand sources read queue depths and latencies from
 * it; the scaler never stores the text, so the parser hands each sample to a
 * callback and keeps nothing.
 *
 * Strict like a Prometheus scrape: one malformed line fails the whole
 * input. Metric names are [a-zA-Z_:][a-zA-Z0-9_:]* (so vllm:num_requests_waiting
 * works) and label names [a-zA-Z_][a-zA-Z0-9_]*; quoted UTF-8 names
 * (Prometheus 3) are rejected. Label values must be UTF-8.
 *
 * Pure: no I/O, no globals. At most one allocation per call, and only when a
 * line is longer than an internal stack buffer (4 KiB). Any thread may call
 * any function. Numbers are read with strtod, so LC_NUMERIC must stay "C"
 * (the default).
 */
#ifndef KGS_SOURCES_PROM_PARSE_H
#define KGS_SOURCES_PROM_PARSE_H

#include <stdbool.h>
#include <stddef.h>

/* prom_label_t ({const char *name; const char *value;}) is shared with the
 * text writer, so that a file may include both headers. */
#include "net/prom_text.h"

#define PROM_MAX_LABELS 32 /* a sample with more labels is an error */

/* One sample. Everything is borrowed for the duration of the callback only. */
typedef struct {
    /* Full sample name, suffixes included (_bucket, _sum, _count, _total, _created). */
    const char *name;
    /* label_count labels in input order; names and values NUL-terminated, values
     * unescaped. */
    const prom_label_t *labels;
    unsigned label_count; /* <= PROM_MAX_LABELS */
    double value;         /* may be NaN, +Inf, -Inf */
    bool has_timestamp;
    /* Seconds since the epoch: text 0.0.4 gives integer ms (converted), OpenMetrics
     * float seconds. */
    double timestamp_s;
} prom_sample_t;

/* Called once per sample, in input order. Non-zero stops parsing, and
 * prom_parse() returns that value. */
typedef int (*prom_sample_cb)(void *user_data, const prom_sample_t *s);

typedef enum { PROM_FORMAT_TEXT, PROM_FORMAT_OPENMETRICS } prom_format_t;

/* The format a Content-Type value announces: OPENMETRICS for
 * "application/openmetrics-text" (any case, any parameters, e.g.
 * "; version=1.0.0; charset=utf-8"); TEXT for anything else, including
 * "text/plain; version=0.0.4", NULL and "". content_type is borrowed. */
prom_format_t prom_format_from_content_type(const char *content_type);

/*
 * Parses text[0..len) and calls cb (NULL: only check the syntax) once per
 * sample. text is borrowed, need not be NUL-terminated and may hold any
 * bytes; it may be NULL when len is 0.
 *
 * TEXT: blank lines and '#' comments are skipped; "# HELP name ..." and
 * "# TYPE name counter|gauge|histogram|summary|untyped" are checked. Spaces
 * and tabs may separate tokens; "{}" and a trailing comma in braces are
 * allowed. The optional timestamp is int64 milliseconds. Label value escapes
 * are \\, \" and \n; any other backslash is kept as it is (as the
 * Prometheus scraper does). The last line may lack its newline.
 * OPENMETRICS: single spaces, only "# HELP/TYPE/UNIT/EOF" comments, no blank
 * lines, float-second timestamps, exemplars (" # {labels} value [ts]")
 * checked and ignored, an unknown escape is an error, and the input must end
 * with "# EOF" (and an optional newline).
 * Both: CRLF line ends are accepted; values are Go ParseFloat syntax
 * without hex (NaN, [+-]Inf and [+-]Infinity in any case); labels need a comma
 * between them; a value or timestamp token longer than 64 bytes is an error.
 *
 * Returns 0; KGS_EINVAL with "line N: <reason>" in err (NULL allowed; the
 * reason gives columns and lengths but never a byte of the text, which is
 * a remote server's: "line 1: no metric name at column 1 (15 bytes ...)");
 * KGS_ENOMEM; or cb's non-zero value (err
 * left empty). Samples before a bad line have already been passed to cb
 * when the call fails: keep what cb gathered only when 0 comes back.
 */
int prom_parse(const char *text, size_t len, prom_format_t fmt, prom_sample_cb cb, void *user_data,
               char *err, size_t errlen);

/*
 * The same grammar read as the bytes arrive: prom_stream_feed() parses
 * every line a piece completes and keeps only the line not ended yet, so a
 * page of any size costs at most one line of memory (plus the scratch that
 * line needs). A line of more than max_line bytes before its '\n' fails
 * ("line N: longer than M bytes"); 0 means PROM_STREAM_MAX_LINE. For input
 * whose lines all fit, feeding it in any pieces and then calling
 * prom_stream_end() gives what prom_parse() gives for it whole: the same
 * samples to cb in the same order, the same return value and message.
 *
 * prom_stream_new: NULL when out of memory or fmt is unknown. cb may be
 * NULL (syntax only); user_data is passed to it. Returned:
 * prom_stream_free() (NULL does nothing).
 * prom_stream_feed / prom_stream_end: 0, or what prom_parse() returns; a
 * failure is final: every later call returns it again (with its message).
 * in is borrowed for the call and may be NULL when len is 0.
 * prom_stream_held: the heap bytes the stream holds now.
 */
#define PROM_STREAM_MAX_LINE (64u * 1024)
typedef struct prom_stream prom_stream_t;
prom_stream_t *prom_stream_new(prom_format_t fmt, size_t max_line, prom_sample_cb cb,
                               void *user_data);
int prom_stream_feed(prom_stream_t *s, const char *in, size_t len, char *err, size_t errlen);
int prom_stream_end(prom_stream_t *s, char *err, size_t errlen);
size_t prom_stream_held(const prom_stream_t *s);
void prom_stream_free(prom_stream_t *s);

/* The value of label `name` (NUL-terminated) in s, or NULL when s has no such
 * label. The result is borrowed from s. */
const char *prom_sample_label(const prom_sample_t *s, const char *name);

/*
 * s[0..n) as a plain decimal -- digits, optionally '.' and digits, no sign,
 * exponent or spaces -- of at most 15 digits in all: *out is then exactly
 * what strtod gives (the digits as an integer and 10^fraction digits are
 * both exact doubles, and one IEEE division rounds correctly), and true.
 * Anything else: false, and the caller parses it the long way. Most
 * samples and every bucket bound of the engines' histograms ("0.005",
 * "2.5", "3.0") take this path.
 */
bool prom_plain_decimal(const char *s, size_t n, double *out);

#endif
