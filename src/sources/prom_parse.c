/*
 * prom_parse.c - Prometheus text 0.0.4 and OpenMetrics 1.0 text, one pass.
 *
 * References: prometheus/docs exposition_formats.md; the OpenMetrics 1.0
 * ABNF; and, where the two disagree with practice, the Prometheus scraper
 * itself (model/textparse promlex.l, promparse.go, openmetricslex.l,
 * openmetricsparse.go), because a source should accept exactly what a
 * Prometheus scrape of the same endpoint accepts. Choices taken from it:
 *   - text: any backslash escape other than \\ \" \n stays as written
 *     (promparse's lvalReplacer; expfmt's TextParser rejects it instead);
 *   - both: a trailing comma inside braces is allowed (openmetricsparse
 *     allows it although the ABNF does not);
 *   - both: label values must be valid UTF-8; values go through Go's
 *     ParseFloat minus hex and '_' ("Keep to pre-Go 1.13 float formats"), so
 *     "1e999" (out of range) is an error and "1e-999" is 0.
 * Taken from expfmt's TextParser instead: a comma is required between
 * labels (promparse does not insist), and a text timestamp may carry a sign
 * (ParseInt; promparse takes digits only).
 *
 * The input is cut into lines with memchr and every line is parsed left to
 * right by a cursor. Names are not NUL-terminated in the input, and label
 * values need unescaping, so every name and value of a line is copied into
 * a scratch buffer that is reused for the next line. The copies of one line
 * never need more than its length plus one byte: each copied token is
 * followed in the input by a byte that is not copied ('{', '=', a closing
 * quote, a space), unescaping never grows, and only the NUL after the last
 * token may lack such a byte. A stack buffer covers ordinary lines; the first
 * line that does not fit gets one heap buffer as large as the rest of the
 * input, which then covers every later line too. PROM_PARSE_MALLOC lets a
 * test that includes this file fail that allocation (STYLE rule 13).
 */
#include "sources/prom_parse.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"

#ifndef PROM_PARSE_MALLOC
#define PROM_PARSE_MALLOC malloc
#endif
#ifndef PROM_PARSE_FREE
#define PROM_PARSE_FREE free
#endif

#define PROM_TOKEN_MAX 64        /* bytes in a value or timestamp token */
#define PROM_STACK_SCRATCH 4096u /* scratch bytes on the stack */

typedef struct {
    bool om;          /* OpenMetrics rules */
    size_t lineno;    /* 1-based, for messages */
    const char *line; /* the line being read, for columns in messages */
    char *err;
    size_t errlen;
    char *scratch; /* copies of this line's names and values */
    size_t used;   /* bytes of scratch in use */
    prom_label_t labels[PROM_MAX_LABELS];
    unsigned nlabels;
} parser_t;

/* One line without its line end; pos moves left to right. */
typedef struct {
    const char *s;
    size_t len;
    size_t pos;
} cursor_t;

typedef enum { NUM_OK, NUM_BAD, NUM_LONG, NUM_RANGE } num_status_t;

/* ---- characters ------------------------------------------------------------ */

static bool is_digit(unsigned char c) {
    return (unsigned)(c - '0') < 10u;
}

/* [a-zA-Z_]: '|' folds upper case onto lower case without touching '_'. */
static bool is_alpha_(unsigned char c) {
    return (unsigned)((c | 0x20) - 'a') < 26u || c == '_';
}

static bool is_label_char(unsigned char c) {
    return is_alpha_(c) || is_digit(c);
}

static bool is_metric_char(unsigned char c) {
    return is_label_char(c) || c == ':';
}

/* Bytes of the metric name at s, 0 if s does not start one. */
static size_t metric_name_len(const char *s, size_t n) {
    if (n == 0 || !(is_alpha_((unsigned char)s[0]) || s[0] == ':'))
        return 0;
    size_t i = 1;
    while (i < n && is_metric_char((unsigned char)s[i]))
        i++;
    return i;
}

static size_t label_name_len(const char *s, size_t n) {
    if (n == 0 || !is_alpha_((unsigned char)s[0]))
        return 0;
    size_t i = 1;
    while (i < n && is_label_char((unsigned char)s[i]))
        i++;
    return i;
}

/* ASCII case-insensitive comparison of n bytes; lower is lower case. */
static bool ascii_ieq(const char *s, const char *lower, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 'A' && c <= 'Z')
            c = (unsigned char)(c | 0x20);
        if (c != (unsigned char)lower[i])
            return false;
    }
    return true;
}

/* Length of the well-formed UTF-8 sequence at s (RFC 3629: no overlongs, no
 * surrogates, nothing above U+10FFFF), or 0. s[0] >= 0x80. */
static size_t utf8_len(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    size_t need;
    unsigned char lo = 0x80, hi = 0xbf; /* range of the second byte */
    if (c >= 0xc2 && c <= 0xdf) {
        need = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        need = 3;
        if (c == 0xe0)
            lo = 0xa0;
        else if (c == 0xed)
            hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        need = 4;
        if (c == 0xf0)
            lo = 0x90;
        else if (c == 0xf4)
            hi = 0x8f;
    } else {
        return 0;
    }
    if (n < need || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < need; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return need;
}

/* ---- cursor ---------------------------------------------------------------- */

static bool at_end(const cursor_t *c) {
    return c->pos >= c->len;
}

static bool is_blank(unsigned char c) {
    return c == ' ' || c == '\t';
}

static void skip_blanks(cursor_t *c) {
    while (c->pos < c->len && is_blank((unsigned char)c->s[c->pos]))
        c->pos++;
}

/* End of the token at c->pos: the next separator (a space; in text also a
 * tab) or the end of the line. */
static size_t token_end(const cursor_t *c, bool om) {
    size_t i = c->pos;
    while (i < c->len && c->s[i] != ' ' && (om || c->s[i] != '\t'))
        i++;
    return i;
}

/* ---- errors ---------------------------------------------------------------- */

/* Writes "line N: <fmt...>" into p->err and returns KGS_EINVAL. */
static int line_error(const parser_t *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int line_error(const parser_t *p, const char *fmt, ...) {
    if (p->err && p->errlen > 0) {
        int n = snprintf(p->err, p->errlen, "line %zu: ", p->lineno);
        if (n > 0 && (size_t)n < p->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return KGS_EINVAL;
}

/* Messages say where on the line (1-based columns), never what: the text is
 * the scraped server's, and a message goes back to whoever configured the
 * URL. Quoting it made every source an oracle for any URL the scaler can
 * reach (a token on an internal page came back in the gRPC error). */
static size_t column_of(const parser_t *p, const char *at) {
    return (size_t)(at - p->line) + 1;
}

static size_t column_at(const cursor_t *c) {
    return c->pos + 1;
}

/* ---- numbers --------------------------------------------------------------- */

bool prom_plain_decimal(const char *s, size_t n, double *out) {
    static const double pow10[16] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
    uint64_t m = 0;
    size_t digits = 0, frac = 0;
    bool dot = false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '.' && !dot) {
            dot = true;
            continue;
        }
        if (c < '0' || c > '9' || ++digits > 15)
            return false;
        m = m * 10 + (uint64_t)(c - '0');
        frac += dot;
    }
    if (digits == 0)
        return false;
    *out = (double)m / pow10[frac];
    return true;
}

/*
 * A float in Go ParseFloat syntax without hex or '_': [+-]digits[.digits]
 * [e[+-]digits] (either digit run may be empty, not both), and with
 * `special` also [+-]inf, [+-]infinity and nan in any case. Integers of up to
 * 15 digits (most counters and gauges) are exact without strtod; everything
 * else goes through strtod on a NUL-terminated stack copy.
 */
static num_status_t float_parse(const char *s, size_t n, bool special, double *out) {
    if (n == 0)
        return NUM_BAD;
    if (n > PROM_TOKEN_MAX)
        return NUM_LONG;
    size_t i = 0;
    bool neg = false;
    if (s[0] == '+' || s[0] == '-') {
        neg = s[0] == '-';
        i = 1;
    }
    if (special) {
        size_t r = n - i;
        if ((r == 3 && ascii_ieq(s + i, "inf", 3)) || (r == 8 && ascii_ieq(s + i, "infinity", 8))) {
            *out = neg ? -INFINITY : INFINITY;
            return NUM_OK;
        }
        if (n == 3 && ascii_ieq(s, "nan", 3)) { /* Go takes no sign on NaN */
            *out = NAN;
            return NUM_OK;
        }
    }
    size_t start = i;
    uint64_t acc = 0;
    while (i < n && is_digit((unsigned char)s[i])) {
        if (i - start < 15)
            acc = acc * 10 + (uint64_t)(s[i] - '0');
        i++;
    }
    size_t nint = i - start, nfrac = 0;
    bool plain = nint <= 15;
    if (i < n && s[i] == '.') {
        plain = false;
        size_t f = ++i;
        while (i < n && is_digit((unsigned char)s[i]))
            i++;
        nfrac = i - f;
    }
    if (nint + nfrac == 0)
        return NUM_BAD;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        plain = false;
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        size_t e = i;
        while (i < n && is_digit((unsigned char)s[i]))
            i++;
        if (i == e)
            return NUM_BAD;
    }
    if (i != n)
        return NUM_BAD;
    if (plain) {
        *out = neg ? -(double)acc : (double)acc;
        return NUM_OK;
    }
    double fast;
    if (prom_plain_decimal(s + start, n - start, &fast)) { /* "0.25", "3.0": no strtod */
        *out = neg ? -fast : fast;
        return NUM_OK;
    }
    char buf[PROM_TOKEN_MAX + 1];
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *end;
    int saved = errno;
    errno = 0;
    double v = strtod(buf, &end);
    bool overflow = errno == ERANGE && isinf(v); /* underflow gives 0 or a subnormal, as in Go */
    errno = saved;
    if (end != buf + n)
        return NUM_BAD;
    if (overflow)
        return NUM_RANGE;
    *out = v;
    return NUM_OK;
}

/* A text-format timestamp: [+-]digits as an int64 (Go ParseInt base 10). */
static num_status_t int64_parse(const char *s, size_t n, int64_t *out) {
    if (n == 0)
        return NUM_BAD;
    if (n > PROM_TOKEN_MAX)
        return NUM_LONG;
    size_t i = 0;
    bool neg = false;
    if (s[0] == '+' || s[0] == '-') {
        neg = s[0] == '-';
        i = 1;
    }
    if (i == n)
        return NUM_BAD;
    for (size_t k = i; k < n; k++)
        if (!is_digit((unsigned char)s[k]))
            return NUM_BAD;
    uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    uint64_t acc = 0;
    for (; i < n; i++) {
        uint64_t d = (uint64_t)(s[i] - '0');
        if (acc > (limit - d) / 10)
            return NUM_RANGE;
        acc = acc * 10 + d;
    }
    if (!neg)
        *out = (int64_t)acc;
    else if (acc == (uint64_t)INT64_MAX + 1)
        *out = INT64_MIN;
    else
        *out = -(int64_t)acc;
    return NUM_OK;
}

/* Turns a number status into "<what> at column C <reason>" for the token at s. */
static int number_error(const parser_t *p, num_status_t st, const char *what, const char *s) {
    switch (st) {
    case NUM_LONG:
        return line_error(p, "the %s at column %zu is longer than %d bytes", what, column_of(p, s),
                          PROM_TOKEN_MAX);
    case NUM_RANGE:
        return line_error(p, "the %s at column %zu is out of range", what, column_of(p, s));
    default:
        return line_error(p, "invalid %s at column %zu: not a number", what, column_of(p, s));
    }
}

/* Reads the value token at c->pos into *out. */
static int value_read(const parser_t *p, cursor_t *c, const char *what, double *out) {
    size_t end = token_end(c, p->om);
    num_status_t st = float_parse(c->s + c->pos, end - c->pos, true, out);
    if (st != NUM_OK)
        return number_error(p, st, what, c->s + c->pos);
    c->pos = end;
    return 0;
}

/* Reads the timestamp token at c->pos as seconds: text gives int64 ms,
 * OpenMetrics finite float seconds. */
static int timestamp_read(const parser_t *p, cursor_t *c, const char *what, double *out_s) {
    size_t end = token_end(c, p->om);
    const char *s = c->s + c->pos;
    size_t n = end - c->pos;
    num_status_t st;
    if (p->om) {
        st = float_parse(s, n, false, out_s);
    } else {
        int64_t ms = 0;
        st = int64_parse(s, n, &ms);
        *out_s = (double)ms / 1000.0;
    }
    if (st != NUM_OK)
        return number_error(p, st, what, s);
    c->pos = end;
    return 0;
}

/* ---- labels ---------------------------------------------------------------- */

/* Copies n bytes and a NUL into the scratch buffer (the bound in the design
 * note guarantees room). */
static const char *scratch_put(parser_t *p, const char *s, size_t n) {
    char *d = p->scratch + p->used;
    memcpy(d, s, n);
    d[n] = '\0';
    p->used += n + 1;
    return d;
}

/*
 * Reads a label value whose opening quote is just before c->pos, unescaped
 * and NUL-terminated into the scratch buffer. Plain runs are copied with
 * one memcpy; bytes >= 0x80 must form UTF-8 sequences.
 */
static int label_value_read(parser_t *p, cursor_t *c, const char **out) {
    const char *s = c->s;
    size_t i = c->pos, n = c->len;
    char *dst = p->scratch + p->used;
    size_t o = 0;
    while (i < n) {
        size_t run = i;
        while (run < n && s[run] != '"' && s[run] != '\\' && (unsigned char)s[run] < 0x80)
            run++;
        memcpy(dst + o, s + i, run - i);
        o += run - i;
        i = run;
        if (i == n)
            break;
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"') {
            dst[o] = '\0';
            p->used += o + 1;
            c->pos = i + 1;
            *out = dst;
            return 0;
        }
        if (ch == '\\') {
            if (i + 1 == n)
                break;
            char e = s[i + 1];
            if (e == '\\' || e == '"' || e == 'n') {
                dst[o++] = e == 'n' ? '\n' : e;
                i += 2;
            } else if (p->om) {
                return line_error(p, "invalid escape at column %zu in a label value",
                                  column_of(p, s + i));
            } else {
                /* Kept as written, like the Prometheus scraper; the next byte
                 * is then read as an ordinary one (it may start UTF-8). */
                dst[o++] = '\\';
                i++;
            }
            continue;
        }
        size_t u = utf8_len((const unsigned char *)s + i, n - i);
        if (u == 0)
            return line_error(p, "invalid UTF-8 at column %zu in a label value",
                              column_of(p, s + i));
        memcpy(dst + o, s + i, u);
        o += u;
        i += u;
    }
    return line_error(p, "unterminated label value (opened at column %zu)", c->pos);
}

/*
 * Reads "{name="value",...}" from the '{' at c->pos. keep: the labels go to
 * p->labels (at most PROM_MAX_LABELS, names unique); otherwise they are
 * only checked (exemplars). Text allows blanks between all tokens.
 */
static int labels_read(parser_t *p, cursor_t *c, bool keep) {
    c->pos++;
    for (;;) {
        if (!p->om)
            skip_blanks(c);
        if (at_end(c))
            return line_error(p, "unterminated label set");
        if (c->s[c->pos] == '}') { /* "{}", or after a trailing comma */
            c->pos++;
            return 0;
        }
        size_t nlen = label_name_len(c->s + c->pos, c->len - c->pos);
        if (nlen == 0)
            return line_error(p, "invalid label name at column %zu", column_at(c));
        size_t name_col = column_at(c);
        const char *name = scratch_put(p, c->s + c->pos, nlen);
        c->pos += nlen;
        if (!p->om)
            skip_blanks(c);
        if (at_end(c) || c->s[c->pos] != '=')
            return line_error(p, "expected '=' after the label name at column %zu, at column %zu",
                              name_col, column_at(c));
        c->pos++;
        if (!p->om)
            skip_blanks(c);
        if (at_end(c) || c->s[c->pos] != '"')
            return line_error(p,
                              "expected '\"' to open the value of the label at column %zu, at "
                              "column %zu",
                              name_col, column_at(c));
        c->pos++;
        const char *value = NULL;
        int rc = label_value_read(p, c, &value);
        if (rc != 0)
            return rc;
        if (keep) {
            if (p->nlabels == PROM_MAX_LABELS)
                return line_error(p, "more than %d labels", PROM_MAX_LABELS);
            for (unsigned k = 0; k < p->nlabels; k++)
                if (strcmp(p->labels[k].name, name) == 0)
                    return line_error(p, "duplicate label name at column %zu", name_col);
            p->labels[p->nlabels].name = name;
            p->labels[p->nlabels].value = value;
            p->nlabels++;
        }
        if (!p->om)
            skip_blanks(c);
        if (at_end(c))
            return line_error(p, "unterminated label set");
        char ch = c->s[c->pos];
        if (ch != ',' && ch != '}')
            return line_error(p,
                              "expected ',' or '}' after the value of the label at column %zu, at "
                              "column %zu",
                              name_col, column_at(c));
        c->pos++;
        if (ch == '}')
            return 0;
    }
}

/* ---- lines ----------------------------------------------------------------- */

/* An OpenMetrics exemplar from the '#' at c->pos: "# {labels} value [ts]" up
 * to the end of the line. Checked, then dropped. */
static int exemplar_read(parser_t *p, cursor_t *c) {
    if (c->len - c->pos < 3 || memcmp(c->s + c->pos, "# {", 3) != 0)
        return line_error(p, "invalid exemplar at column %zu", column_at(c));
    c->pos += 2;
    int rc = labels_read(p, c, false);
    if (rc != 0)
        return rc;
    if (at_end(c) || c->s[c->pos] != ' ')
        return line_error(p, "expected ' ' and a value after the exemplar labels, at column %zu",
                          column_at(c));
    c->pos++;
    double v;
    if ((rc = value_read(p, c, "exemplar value", &v)) != 0)
        return rc;
    if (at_end(c))
        return 0;
    c->pos++; /* the space that ended the value */
    if ((rc = timestamp_read(p, c, "exemplar timestamp", &v)) != 0)
        return rc;
    if (!at_end(c))
        return line_error(p, "unexpected text after the exemplar, at column %zu", column_at(c));
    return 0;
}

/* A sample line from c->pos (its first non-blank byte). */
static int sample_read(parser_t *p, cursor_t *c, prom_sample_cb cb, void *ud) {
    p->nlabels = 0;
    p->used = 0;
    const char *s = c->s;
    size_t nlen = metric_name_len(s + c->pos, c->len - c->pos);
    size_t after = c->pos + nlen;
    if (nlen == 0 ||
        (after < c->len && s[after] != '{' && s[after] != ' ' && (p->om || s[after] != '\t'))) {
        if (nlen == 0)
            return line_error(p, "no metric name at column %zu (is this Prometheus text?)",
                              column_at(c));
        return line_error(p,
                          "invalid metric name at column %zu: its byte %zu is not one of "
                          "[a-zA-Z0-9_:]",
                          column_at(c), nlen + 1);
    }
    prom_sample_t smp = {0};
    smp.name = scratch_put(p, s + c->pos, nlen);
    c->pos = after;
    if (!p->om)
        skip_blanks(c);
    int rc;
    if (!at_end(c) && s[c->pos] == '{' && (rc = labels_read(p, c, true)) != 0)
        return rc;
    if (!p->om) {
        skip_blanks(c);
    } else if (!at_end(c)) {
        if (s[c->pos] != ' ')
            return line_error(p, "expected ' ' before the value, at column %zu", column_at(c));
        c->pos++;
    }
    if (at_end(c))
        return line_error(p, "missing value after the metric name");
    if ((rc = value_read(p, c, "value", &smp.value)) != 0)
        return rc;

    if (p->om) {
        /* The value token ended at a single space or at the end. */
        if (!at_end(c)) {
            c->pos++;
            if (at_end(c))
                return line_error(p, "unexpected space at the end of the line");
            if (s[c->pos] != '#') {
                smp.has_timestamp = true;
                if ((rc = timestamp_read(p, c, "timestamp", &smp.timestamp_s)) != 0)
                    return rc;
                if (!at_end(c)) {
                    c->pos++;
                    if (at_end(c) || s[c->pos] != '#')
                        return line_error(p, "unexpected text after the timestamp, at column %zu",
                                          column_at(c));
                }
            }
            if (!at_end(c) && (rc = exemplar_read(p, c)) != 0)
                return rc;
        }
    } else {
        skip_blanks(c);
        if (!at_end(c)) {
            smp.has_timestamp = true;
            if ((rc = timestamp_read(p, c, "timestamp", &smp.timestamp_s)) != 0)
                return rc;
            skip_blanks(c);
            if (!at_end(c))
                return line_error(p, "unexpected text after the timestamp, at column %zu",
                                  column_at(c));
        }
    }

    if (!cb)
        return 0;
    smp.labels = p->labels;
    smp.label_count = p->nlabels;
    return cb(ud, &smp);
}

/* true when the n bytes at s are one of the NUL-separated words in list. */
static bool word_in(const char *s, size_t n, const char *list, bool any_case) {
    for (const char *w = list; *w; w += strlen(w) + 1) {
        if (strlen(w) == n && (any_case ? ascii_ieq(s, w, n) : memcmp(s, w, n) == 0))
            return true;
    }
    return false;
}

static const char text_types[] = "counter\0gauge\0histogram\0summary\0untyped\0";
static const char om_types[] =
    "counter\0gauge\0histogram\0gaugehistogram\0stateset\0info\0summary\0unknown\0";

/*
 * The metric name and what follows it in a HELP, TYPE or UNIT line; c->pos
 * is at the name. Only TYPE's argument is checked (a known type); help texts
 * and units are not needed here. Text HELP takes anything after the name,
 * as promparse does; elsewhere a separator must follow the name.
 */
static int metadata_read(parser_t *p, cursor_t *c, const char *keyword) {
    bool type = strcmp(keyword, "TYPE") == 0;
    size_t nlen = metric_name_len(c->s + c->pos, c->len - c->pos);
    size_t after = c->pos + nlen;
    bool separated = after == c->len || c->s[after] == ' ' || (!p->om && c->s[after] == '\t');
    if (nlen == 0 || (!separated && (p->om || type)))
        return line_error(p, "invalid metric name in # %s at column %zu", keyword, column_at(c));
    if (!type)
        return 0;
    c->pos = after;
    size_t end = c->len;
    if (p->om) {
        if (!at_end(c))
            c->pos++; /* exactly one space */
    } else {
        skip_blanks(c);
        while (end > c->pos && is_blank((unsigned char)c->s[end - 1]))
            end--;
    }
    if (c->pos >= end)
        return line_error(p, "missing metric type in # TYPE");
    const char *t = c->s + c->pos;
    size_t tn = end - c->pos;
    if (!word_in(t, tn, p->om ? om_types : text_types, !p->om))
        return line_error(p,
                          "unknown metric type at column %zu (%zu bytes; known: counter, gauge, "
                          "histogram, summary%s)",
                          column_of(p, t), tn,
                          p->om ? ", gaugehistogram, stateset, info, unknown" : ", untyped");
    return 0;
}

/* A text-format comment from the '#' at c->pos. Like promlex, only "#"
 * blanks "HELP"|"TYPE" blanks starts metadata; anything else is free text. */
static int text_comment_read(parser_t *p, cursor_t *c) {
    c->pos++;
    if (at_end(c) || !is_blank((unsigned char)c->s[c->pos]))
        return 0;
    skip_blanks(c);
    const char *kw = c->s + c->pos;
    if (c->len - c->pos < 5 || !is_blank((unsigned char)kw[4]))
        return 0;
    const char *keyword;
    if (memcmp(kw, "HELP", 4) == 0)
        keyword = "HELP";
    else if (memcmp(kw, "TYPE", 4) == 0)
        keyword = "TYPE";
    else
        return 0;
    c->pos += 4;
    skip_blanks(c);
    if (at_end(c))
        return line_error(p, "missing metric name in # %s", keyword);
    return metadata_read(p, c, keyword);
}

/* An OpenMetrics comment line: "# EOF", or "# HELP|TYPE|UNIT name ...". */
static int om_comment_read(parser_t *p, cursor_t *c, bool *eof) {
    const char *s = c->s;
    if (c->len == 5 && memcmp(s, "# EOF", 5) == 0) {
        *eof = true;
        return 0;
    }
    static const char *const keywords[] = {"HELP", "TYPE", "UNIT"};
    for (size_t k = 0; k < 3; k++) {
        if (c->len > 7 && memcmp(s, "# ", 2) == 0 && memcmp(s + 2, keywords[k], 4) == 0 &&
            s[6] == ' ') {
            c->pos = 7;
            return metadata_read(p, c, keywords[k]);
        }
    }
    return line_error(p, "invalid comment (OpenMetrics allows # HELP, # TYPE, # UNIT, # EOF)");
}

static int line_read(parser_t *p, cursor_t *c, prom_sample_cb cb, void *ud, bool *eof) {
    if (p->om) {
        if (c->len == 0)
            return line_error(p, "empty line (not allowed in OpenMetrics)");
        if (c->s[0] == '#')
            return om_comment_read(p, c, eof);
        return sample_read(p, c, cb, ud);
    }
    skip_blanks(c);
    if (at_end(c))
        return 0;
    if (c->s[c->pos] == '#')
        return text_comment_read(p, c);
    return sample_read(p, c, cb, ud);
}

/* ---- public ---------------------------------------------------------------- */

prom_format_t prom_format_from_content_type(const char *content_type) {
    static const char om[] = "application/openmetrics-text";
    if (!content_type)
        return PROM_FORMAT_TEXT;
    const char *s = content_type;
    while (is_blank((unsigned char)*s))
        s++;
    size_t n = 0;
    while (s[n] && s[n] != ';' && !is_blank((unsigned char)s[n]))
        n++;
    if (n == sizeof om - 1 && ascii_ieq(s, om, n))
        return PROM_FORMAT_OPENMETRICS;
    return PROM_FORMAT_TEXT;
}

/* One line (without its '\n'; a '\r' before it is dropped here) whose
 * scratch has room for n + 1 bytes: what both the whole-text parser and
 * the stream do with it. *eof: "# EOF" was read (OpenMetrics). */
static int line_run(parser_t *p, const char *line, size_t n, prom_sample_cb cb, void *ud,
                    bool *eof) {
    const char *nul = memchr(line, '\0', n);
    if (nul)
        return line_error(p, "NUL byte at column %zu", (size_t)(nul - line) + 1);
    if (*eof)
        return line_error(p, "data after # EOF");
    if (n > 0 && line[n - 1] == '\r')
        n--;
    cursor_t c = {line, n, 0};
    p->line = line;
    return line_read(p, &c, cb, ud, eof);
}

static int format_check(const char *text, size_t len, prom_format_t fmt, char *err, size_t errlen) {
    if (err && errlen > 0)
        err[0] = '\0';
    if (!text && len > 0)
        return kgs_seterr(err, errlen, KGS_EINVAL, "parse metrics: no input buffer");
    if (fmt != PROM_FORMAT_TEXT && fmt != PROM_FORMAT_OPENMETRICS)
        return kgs_seterr(err, errlen, KGS_EINVAL, "parse metrics: unknown format %d", (int)fmt);
    return 0;
}

int prom_parse(const char *text, size_t len, prom_format_t fmt, prom_sample_cb cb, void *user_data,
               char *err, size_t errlen) {
    int rc = format_check(text, len, fmt, err, errlen);
    if (rc)
        return rc;
    char stack_scratch[PROM_STACK_SCRATCH];
    parser_t p = {.om = fmt == PROM_FORMAT_OPENMETRICS, .err = err, .errlen = errlen};
    p.scratch = stack_scratch;
    size_t cap = sizeof stack_scratch;
    char *heap = NULL;
    bool eof = false;

    size_t pos = 0;
    while (pos < len) {
        p.lineno++;
        const char *line = text + pos;
        size_t rest = len - pos;
        const char *nl = memchr(line, '\n', rest);
        size_t n = nl ? (size_t)(nl - line) : rest;
        pos += nl ? n + 1 : n;
        if (n >= cap) {
            /* rest >= n for this and every later line; rest < len <= SIZE_MAX
             * bytes of input exist, so rest + 1 does not wrap unless the
             * input ends exactly at the top of the address space. */
            if (heap || rest == SIZE_MAX) {
                rc = line_error(&p, "internal: scratch too small"); /* cannot happen */
                goto out;
            }
            heap = PROM_PARSE_MALLOC(rest + 1);
            if (!heap) {
                rc = kgs_seterr(err, errlen, KGS_ENOMEM, "line %zu: %zu bytes for a long line",
                                p.lineno, rest + 1);
                goto out;
            }
            p.scratch = heap;
            cap = rest + 1;
        }
        rc = line_run(&p, line, n, cb, user_data, &eof);
        if (rc != 0)
            goto out;
    }
    if (p.om && !eof) {
        p.lineno++;
        rc = line_error(&p, "missing # EOF");
    }
out:
    PROM_PARSE_FREE(heap);
    return rc;
}

/* ---- incremental ------------------------------------------------------------ */

struct prom_stream {
    parser_t p;
    bool eof;          /* "# EOF" read */
    int failed;        /* the first failure, returned again by every later call */
    char why[300];     /* its message */
    size_t max_line;   /* bytes before a line's '\n' */
    prom_sample_cb cb; /* NULL: syntax only */
    void *ud;
    char *part; /* the line not ended yet */
    size_t plen, pcap;
    char *scratch; /* for lines over the stack scratch */
    size_t scap;
};

prom_stream_t *prom_stream_new(prom_format_t fmt, size_t max_line, prom_sample_cb cb,
                               void *user_data) {
    if (fmt != PROM_FORMAT_TEXT && fmt != PROM_FORMAT_OPENMETRICS)
        return NULL;
    prom_stream_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->p.om = fmt == PROM_FORMAT_OPENMETRICS;
    s->max_line = max_line ? max_line : PROM_STREAM_MAX_LINE;
    s->cb = cb;
    s->ud = user_data;
    return s;
}

void prom_stream_free(prom_stream_t *s) {
    if (!s)
        return;
    PROM_PARSE_FREE(s->part);
    PROM_PARSE_FREE(s->scratch);
    free(s);
}

size_t prom_stream_held(const prom_stream_t *s) {
    return sizeof *s + s->pcap + s->scap;
}

/* Grows *buf to at least need bytes (doubling, at most max). */
static bool stream_grow(char **buf, size_t *cap, size_t need, size_t max) {
    if (need <= *cap)
        return true;
    size_t nc = *cap ? *cap : 1024;
    while (nc < need)
        nc *= 2;
    if (nc > max)
        nc = max;
    if (nc < need)
        return false;
    char *nb = PROM_PARSE_MALLOC(nc);
    if (!nb)
        return false;
    if (*cap)
        memcpy(nb, *buf, *cap);
    PROM_PARSE_FREE(*buf);
    *buf = nb;
    *cap = nc;
    return true;
}

/* Records the stream's first failure (its message, or the callback's
 * value with no message) and returns it. */
static int stream_fail(prom_stream_t *s, int rc, char *err, size_t errlen) {
    s->failed = rc;
    if (err && errlen)
        snprintf(s->why, sizeof s->why, "%s", err);
    return rc;
}

static int stream_replay(const prom_stream_t *s, char *err, size_t errlen) {
    if (err && errlen) {
        size_t n = strnlen(s->why, sizeof s->why);
        if (n >= errlen)
            n = errlen - 1;
        memcpy(err, s->why, n);
        err[n] = '\0';
    }
    return s->failed;
}

static int stream_too_long(prom_stream_t *s, char *err, size_t errlen) {
    s->p.err = err;
    s->p.errlen = errlen;
    s->p.lineno++;
    return stream_fail(s,
                       kgs_seterr(err, errlen, KGS_EINVAL, "line %zu: longer than %zu bytes",
                                  s->p.lineno, s->max_line),
                       err, errlen);
}

/* Parses one whole line (without its '\n'), scratch sized to it. */
static int stream_line(prom_stream_t *s, const char *line, size_t n, char *err, size_t errlen) {
    char stack_scratch[PROM_STACK_SCRATCH];
    s->p.lineno++;
    s->p.err = err;
    s->p.errlen = errlen;
    if (n < sizeof stack_scratch) {
        s->p.scratch = stack_scratch;
    } else {
        if (!stream_grow(&s->scratch, &s->scap, n + 1, s->max_line + 1))
            return kgs_seterr(err, errlen, KGS_ENOMEM, "line %zu: %zu bytes for a long line",
                              s->p.lineno, n + 1);
        s->p.scratch = s->scratch;
    }
    int rc = line_run(&s->p, line, n, s->cb, s->ud, &s->eof);
    s->p.scratch = NULL;
    return rc;
}

int prom_stream_feed(prom_stream_t *s, const char *in, size_t len, char *err, size_t errlen) {
    if (err && errlen > 0)
        err[0] = '\0';
    if (s->failed)
        return stream_replay(s, err, errlen);
    if (!in && len > 0)
        return stream_fail(s, kgs_seterr(err, errlen, KGS_EINVAL, "parse metrics: no input buffer"),
                           err, errlen);
    while (len > 0) {
        const char *nl = memchr(in, '\n', len);
        size_t n = nl ? (size_t)(nl - in) : len;
        int rc;
        if (s->plen + n > s->max_line)
            return stream_too_long(s, err, errlen);
        if (s->plen == 0 && nl) {
            rc = stream_line(s, in, n, err, errlen); /* straight from the input */
        } else {
            if (!stream_grow(&s->part, &s->pcap, s->plen + n, s->max_line))
                return stream_fail(s,
                                   kgs_seterr(err, errlen, KGS_ENOMEM,
                                              "line %zu: %zu bytes for a partial line",
                                              s->p.lineno + 1, s->plen + n),
                                   err, errlen);
            memcpy(s->part + s->plen, in, n);
            s->plen += n;
            if (!nl)
                return 0;
            rc = stream_line(s, s->part, s->plen, err, errlen);
            s->plen = 0;
        }
        if (rc != 0)
            return stream_fail(s, rc, err, errlen);
        in += n + 1;
        len -= n + 1;
    }
    return 0;
}

int prom_stream_end(prom_stream_t *s, char *err, size_t errlen) {
    if (err && errlen > 0)
        err[0] = '\0';
    if (s->failed)
        return stream_replay(s, err, errlen);
    int rc = 0;
    if (s->plen > 0) {
        rc = stream_line(s, s->part, s->plen, err, errlen);
        s->plen = 0;
    }
    if (rc == 0 && s->p.om && !s->eof) {
        s->p.err = err;
        s->p.errlen = errlen;
        s->p.lineno++;
        rc = line_error(&s->p, "missing # EOF");
    }
    return rc ? stream_fail(s, rc, err, errlen) : 0;
}

const char *prom_sample_label(const prom_sample_t *s, const char *name) {
    if (!s || !name)
        return NULL;
    for (unsigned i = 0; i < s->label_count; i++)
        if (strcmp(s->labels[i].name, name) == 0)
            return s->labels[i].value;
    return NULL;
}
