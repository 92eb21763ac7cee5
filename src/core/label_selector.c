/*
 * label_selector.c - the string form of a Kubernetes label selector.
 *
 * The lexer and grammar follow k8s.io/apimachinery/pkg/labels/selector.go
 * (Parse): identifiers are runs of bytes that are neither whitespace nor one
 * of = ! ( ) , < >; "in" and "notin" are keywords only where an operator is
 * expected; requirements are ANDed. Deliberate differences, all stricter
 * and documented in docs/configuration.md:
 *   - an empty value inside in/notin sets ("a in (x,)") is an error, where
 *     Kubernetes reads it as the empty string;
 *   - a trailing comma or an empty requirement is an error (as in Kubernetes);
 *   - the numeric operators gt/lt ("a>1") are rejected: pod label selectors
 *     in the API (matchExpressions) do not have them either;
 *   - fixed limits: LABEL_SELECTOR_MAX_LEN bytes, LABEL_SELECTOR_MAX_REQS
 *     requirements, LABEL_SELECTOR_MAX_VALUES values per set.
 *
 * Parsing happens in two passes. The first reads the input into slices
 * (no copies) and validates every key and value; the second sorts and
 * deduplicates, then copies keys and values into the struct in canonical
 * order and zeroes the rest. So the struct depends only on the canonical
 * form, which lets the config cache and the fuzz targets compare selectors
 * with memcmp.
 *
 * Every token copied into _text is a distinct substring of the input that
 * is followed by at least one separator byte or the end, and an empty value
 * is preceded by its operator, so _text never needs more than len + 1 bytes;
 * the writer still checks.
 */
#include "core/label_selector.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/err.h"
#include "core/metadata.h"

/* ---- messages -------------------------------------------------------------- */

#define QBUF KGS_QUOTE_BUF

#define NAME_RULE                                                                                  \
    "1-63 characters from A-Z, a-z, 0-9, '-', '_' and '.', starting and ending with a letter or "  \
    "digit"
#define VALUE_RULE                                                                                 \
    "empty or at most 63 characters from A-Z, a-z, 0-9, '-', '_' and '.', starting and ending "    \
    "with a letter or digit"
#define PREFIX_RULE                                                                                \
    "a DNS subdomain: at most 253 characters, dot-separated parts of a-z, 0-9 and '-', each "      \
    "starting and ending with a letter or digit"
#define OPERATORS "=, ==, !=, in, notin"

/* ---- character classes ----------------------------------------------------- */

static bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool is_special(char c) {
    return c == '=' || c == '!' || c == '(' || c == ')' || c == ',' || c == '<' || c == '>';
}

static bool is_alnum(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool is_lower_alnum(char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* The name part of a key, and a value when non-empty: at most 63 of
 * [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?. */
static bool name_valid(const char *p, size_t n) {
    if (n == 0 || n > 63 || !is_alnum(p[0]) || !is_alnum(p[n - 1]))
        return false;
    for (size_t i = 1; i + 1 < n; i++)
        if (!is_alnum(p[i]) && p[i] != '-' && p[i] != '_' && p[i] != '.')
            return false;
    return true;
}

/* RFC 1123 subdomain as Kubernetes checks it (IsDNS1123Subdomain): at most
 * 253 bytes of [a-z0-9]([-a-z0-9]*[a-z0-9])? parts joined by '.'. */
static bool subdomain_valid(const char *p, size_t n) {
    if (n == 0 || n > 253)
        return false;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && p[i] != '.') {
            if (!is_lower_alnum(p[i]) && p[i] != '-')
                return false;
            continue;
        }
        if (i == start || p[start] == '-' || p[i - 1] == '-')
            return false;
        start = i + 1;
    }
    return true;
}

/* ---- pass 1: lexing and parsing into slices --------------------------------- */

typedef enum {
    T_END,
    T_IDENT,
    T_EQ,   /* = */
    T_DEQ,  /* == */
    T_NEQ,  /* != */
    T_BANG, /* ! */
    T_LPAR,
    T_RPAR,
    T_COMMA,
    T_GT,
    T_LT,
} tok_kind_t;

typedef struct {
    tok_kind_t kind;
    const char *p; /* the token's bytes, for messages and identifiers */
    size_t n;
} token_t;

typedef struct {
    const char *s;
    size_t len;
    size_t pos;
    char *err;
    size_t errlen;
    size_t req_start; /* where the requirement being parsed starts */
} lexer_t;

static token_t lex_next(lexer_t *lx) {
    while (lx->pos < lx->len && is_space(lx->s[lx->pos]))
        lx->pos++;
    token_t t = {T_END, lx->s + lx->pos, 0};
    if (lx->pos == lx->len)
        return t;
    char c = lx->s[lx->pos];
    char d = lx->pos + 1 < lx->len ? lx->s[lx->pos + 1] : '\0';
    t.n = 1;
    switch (c) {
    case '=':
        t.kind = d == '=' ? T_DEQ : T_EQ;
        t.n = d == '=' ? 2 : 1;
        break;
    case '!':
        t.kind = d == '=' ? T_NEQ : T_BANG;
        t.n = d == '=' ? 2 : 1;
        break;
    case '(':
        t.kind = T_LPAR;
        break;
    case ')':
        t.kind = T_RPAR;
        break;
    case ',':
        t.kind = T_COMMA;
        break;
    case '>':
        t.kind = T_GT;
        break;
    case '<':
        t.kind = T_LT;
        break;
    default:
        t.kind = T_IDENT;
        t.n = 0;
        while (lx->pos + t.n < lx->len && !is_space(lx->s[lx->pos + t.n]) &&
               !is_special(lx->s[lx->pos + t.n]))
            t.n++;
        break;
    }
    lx->pos += t.n;
    return t;
}

static token_t lex_peek(lexer_t *lx) {
    size_t save = lx->pos;
    token_t t = lex_next(lx);
    lx->pos = save;
    return t;
}

typedef struct {
    const char *p;
    size_t n;
} slice_t;

typedef struct {
    label_op_t op;
    slice_t key;
    unsigned nvalues;
    slice_t values[LABEL_SELECTOR_MAX_VALUES];
} raw_req_t;

typedef struct {
    unsigned nreqs;
    raw_req_t reqs[LABEL_SELECTOR_MAX_REQS];
} raw_sel_t;

/* The requirement that starts at lx->req_start, up to the next ',' outside
 * parentheses (or the end), without trailing whitespace: for messages. */
static slice_t current_requirement(const lexer_t *lx) {
    size_t i = lx->req_start, depth = 0;
    for (; i < lx->len; i++) {
        char c = lx->s[i];
        if (c == '(')
            depth++;
        else if (c == ')' && depth > 0)
            depth--;
        else if (c == ',' && depth == 0)
            break;
    }
    while (i > lx->req_start && is_space(lx->s[i - 1]))
        i--;
    slice_t r = {lx->s + lx->req_start, i - lx->req_start};
    return r;
}

/* Fails the requirement being parsed: "requirement "<text>": <reason>". */
static int req_fail(lexer_t *lx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int req_fail(lexer_t *lx, const char *fmt, ...) {
    char q[QBUF], reason[768];
    slice_t r = current_requirement(lx);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    return kgs_seterr(lx->err, lx->errlen, KGS_EINVAL, "requirement %s: %s",
                      kgs_quote(q, sizeof q, r.p, r.n), reason);
}

/* A token as it appears, for "found ..." in messages. */
static const char *describe(char *buf, size_t buflen, token_t t) {
    if (t.kind == T_END)
        return "the end of the requirement";
    return kgs_quote(buf, buflen, t.p, t.n);
}

static int check_key(lexer_t *lx, token_t t) {
    char q[QBUF], q2[QBUF];
    if (metadata_slice_eq(t.p, t.n, "in") || metadata_slice_eq(t.p, t.n, "notin"))
        return req_fail(lx, "expected a label key, found the keyword %s",
                        kgs_quote(q, sizeof q, t.p, t.n));
    const char *slash = memchr(t.p, '/', t.n);
    slice_t name = {t.p, t.n};
    if (slash) {
        size_t pn = (size_t)(slash - t.p);
        if (!subdomain_valid(t.p, pn))
            return req_fail(lx, "invalid key %s: its prefix must be " PREFIX_RULE,
                            kgs_quote(q, sizeof q, t.p, t.n));
        name.p = slash + 1;
        name.n = t.n - pn - 1;
    }
    if (!name_valid(name.p, name.n) && slash)
        return req_fail(lx, "invalid key %s: its name part %s must be " NAME_RULE,
                        kgs_quote(q, sizeof q, t.p, t.n), kgs_quote(q2, sizeof q2, name.p, name.n));
    if (!name_valid(name.p, name.n))
        return req_fail(lx, "invalid key %s: must be [prefix/]name, the name " NAME_RULE,
                        kgs_quote(q, sizeof q, t.p, t.n));
    return 0;
}

static int check_value(lexer_t *lx, token_t t) {
    char q[QBUF];
    if (t.n > 0 && !name_valid(t.p, t.n))
        return req_fail(lx, "invalid value %s: must be " VALUE_RULE,
                        kgs_quote(q, sizeof q, t.p, t.n));
    return 0;
}

/* After a complete requirement: ',' or the end. */
static int expect_end_of_requirement(lexer_t *lx, const char *after) {
    char q[QBUF];
    token_t t = lex_peek(lx);
    if (t.kind == T_END || t.kind == T_COMMA)
        return 0;
    return req_fail(lx, "expected ',' or the end after %s, found %s", after,
                    describe(q, sizeof q, t));
}

static int parse_set(lexer_t *lx, raw_req_t *r, const char *opname) {
    char q[QBUF];
    token_t t = lex_next(lx);
    if (t.kind != T_LPAR)
        return req_fail(lx, "expected '(' after %s, found %s", opname, describe(q, sizeof q, t));
    for (;;) {
        t = lex_next(lx);
        if (t.kind == T_COMMA || t.kind == T_RPAR)
            return req_fail(lx, "empty value in the %s set: list 1-%d non-empty values", opname,
                            LABEL_SELECTOR_MAX_VALUES);
        if (t.kind != T_IDENT)
            return req_fail(lx, "expected a value in the %s set, found %s", opname,
                            describe(q, sizeof q, t));
        int rc = check_value(lx, t);
        if (rc)
            return rc;
        if (r->nvalues == LABEL_SELECTOR_MAX_VALUES)
            return req_fail(lx, "more than %d values in the %s set", LABEL_SELECTOR_MAX_VALUES,
                            opname);
        r->values[r->nvalues].p = t.p;
        r->values[r->nvalues].n = t.n;
        r->nvalues++;
        t = lex_next(lx);
        if (t.kind == T_RPAR)
            return expect_end_of_requirement(lx, "')'");
        if (t.kind != T_COMMA)
            return req_fail(lx, "expected ',' or ')' in the %s set, found %s", opname,
                            describe(q, sizeof q, t));
    }
}

static int parse_requirement(lexer_t *lx, raw_req_t *r) {
    char q[QBUF];
    int rc;
    memset(r, 0, sizeof *r);
    token_t t = lex_next(lx);
    if (t.kind == T_BANG) {
        t = lex_next(lx);
        if (t.kind != T_IDENT)
            return req_fail(lx, "expected a label key after '!', found %s",
                            describe(q, sizeof q, t));
        if ((rc = check_key(lx, t)) != 0)
            return rc;
        r->op = LABEL_OP_NOT_EXISTS;
        r->key.p = t.p;
        r->key.n = t.n;
        return expect_end_of_requirement(lx, "the key");
    }
    if (t.kind != T_IDENT)
        return req_fail(lx, "expected a label key or '!key', found %s", describe(q, sizeof q, t));
    if ((rc = check_key(lx, t)) != 0)
        return rc;
    r->key.p = t.p;
    r->key.n = t.n;

    t = lex_next(lx);
    switch (t.kind) {
    case T_END:
    case T_COMMA:
        lx->pos -= t.n; /* give the comma back to the caller */
        r->op = LABEL_OP_EXISTS;
        return 0;
    case T_EQ:
    case T_DEQ:
    case T_NEQ: {
        r->op = t.kind == T_NEQ ? LABEL_OP_NE : LABEL_OP_EQ;
        token_t v = lex_peek(lx);
        r->nvalues = 1;
        if (v.kind == T_END || v.kind == T_COMMA) {
            r->values[0].p = v.p; /* the empty value */
            return 0;
        }
        if (v.kind != T_IDENT)
            return req_fail(lx, "expected a value after '%s', found %s",
                            t.kind == T_NEQ   ? "!="
                            : t.kind == T_DEQ ? "=="
                                              : "=",
                            describe(q, sizeof q, v));
        lex_next(lx);
        if ((rc = check_value(lx, v)) != 0)
            return rc;
        r->values[0].p = v.p;
        r->values[0].n = v.n;
        return expect_end_of_requirement(lx, "the value");
    }
    case T_IDENT:
        if (metadata_slice_eq(t.p, t.n, "in")) {
            r->op = LABEL_OP_IN;
            return parse_set(lx, r, "in");
        }
        if (metadata_slice_eq(t.p, t.n, "notin")) {
            r->op = LABEL_OP_NOTIN;
            return parse_set(lx, r, "notin");
        }
        if (metadata_slice_eq(t.p, t.n, "not"))
            return req_fail(lx, "found \"not\" after the key: the operator is written notin");
        return req_fail(lx,
                        "expected ',' or an operator (" OPERATORS
                        ") after the key, found %s; operators are lowercase",
                        describe(q, sizeof q, t));
    case T_GT:
    case T_LT:
        return req_fail(lx, "the numeric operators '>' and '<' are not supported (Kubernetes "
                            "matchExpressions lack them too); use one of " OPERATORS);
    default:
        return req_fail(lx, "expected ',' or an operator (" OPERATORS ") after the key, found %s",
                        describe(q, sizeof q, t));
    }
}

static int parse_raw(lexer_t *lx, raw_sel_t *raw) {
    raw->nreqs = 0;
    if (lex_peek(lx).kind == T_END)
        return 0; /* "" and whitespace: everything */
    for (;;) {
        while (lx->pos < lx->len && is_space(lx->s[lx->pos]))
            lx->pos++;
        lx->req_start = lx->pos;
        token_t t = lex_peek(lx);
        if (t.kind == T_END || t.kind == T_COMMA) {
            char q[QBUF];
            return kgs_seterr(lx->err, lx->errlen, KGS_EINVAL,
                              "empty requirement at byte %zu of %s: requirements are separated by "
                              "single commas, with none at the end",
                              lx->pos, kgs_quote(q, sizeof q, lx->s, lx->len));
        }
        if (raw->nreqs == LABEL_SELECTOR_MAX_REQS)
            return kgs_seterr(lx->err, lx->errlen, KGS_EINVAL,
                              "more than %d requirements: at most %d are supported",
                              LABEL_SELECTOR_MAX_REQS, LABEL_SELECTOR_MAX_REQS);
        int rc = parse_requirement(lx, &raw->reqs[raw->nreqs]);
        if (rc)
            return rc;
        raw->nreqs++;
        t = lex_next(lx);
        if (t.kind == T_END)
            return 0;
        /* parse_requirement left a ',' or the end, nothing else */
    }
}

/* ---- pass 2: canonical order ------------------------------------------------ */

static int slice_cmp(slice_t a, slice_t b) {
    return metadata_slice_cmp(a.p, a.n, b.p, b.n);
}

static int req_cmp(const raw_req_t *a, const raw_req_t *b) {
    int c = slice_cmp(a->key, b->key);
    if (c)
        return c;
    if (a->op != b->op)
        return a->op < b->op ? -1 : 1;
    for (unsigned i = 0; i < a->nvalues && i < b->nvalues; i++)
        if ((c = slice_cmp(a->values[i], b->values[i])) != 0)
            return c;
    return a->nvalues == b->nvalues ? 0 : a->nvalues < b->nvalues ? -1 : 1;
}

/* Sorts a set's values and drops repeats (at most 16: insertion sort). */
static void sort_values(raw_req_t *r) {
    for (unsigned i = 1; i < r->nvalues; i++) {
        slice_t v = r->values[i];
        unsigned j = i;
        for (; j > 0 && slice_cmp(r->values[j - 1], v) > 0; j--)
            r->values[j] = r->values[j - 1];
        r->values[j] = v;
    }
    unsigned n = 0;
    for (unsigned i = 0; i < r->nvalues; i++)
        if (n == 0 || slice_cmp(r->values[n - 1], r->values[i]) != 0)
            r->values[n++] = r->values[i];
    r->nvalues = n;
}

static void sort_requirements(raw_sel_t *raw) {
    for (unsigned i = 0; i < raw->nreqs; i++)
        sort_values(&raw->reqs[i]);
    for (unsigned i = 1; i < raw->nreqs; i++) {
        raw_req_t r = raw->reqs[i];
        unsigned j = i;
        for (; j > 0 && req_cmp(&raw->reqs[j - 1], &r) > 0; j--)
            raw->reqs[j] = raw->reqs[j - 1];
        raw->reqs[j] = r;
    }
    unsigned n = 0;
    for (unsigned i = 0; i < raw->nreqs; i++)
        if (n == 0 || req_cmp(&raw->reqs[n - 1], &raw->reqs[i]) != 0)
            raw->reqs[n++] = raw->reqs[i];
    raw->nreqs = n;
}

/* Appends a NUL-terminated copy of v to out->_text at *used; false when it
 * does not fit (cannot happen for parsed input, see the top of the file). */
static bool store(label_selector_t *out, size_t *used, slice_t v, uint16_t *off) {
    if (v.n + 1 > sizeof out->_text - *used)
        return false;
    memcpy(out->_text + *used, v.p, v.n);
    out->_text[*used + v.n] = '\0';
    *off = (uint16_t)*used;
    *used += v.n + 1;
    return true;
}

static bool build(const raw_sel_t *raw, label_selector_t *out) {
    size_t used = 0;
    out->_nreqs = raw->nreqs;
    for (unsigned i = 0; i < raw->nreqs; i++) {
        const raw_req_t *r = &raw->reqs[i];
        label_requirement_t *q = &out->_reqs[i];
        q->_op = (uint8_t)r->op;
        q->_nvalues = (uint8_t)r->nvalues;
        if (!store(out, &used, r->key, &q->_key))
            return false;
        for (unsigned v = 0; v < r->nvalues; v++)
            if (!store(out, &used, r->values[v], &q->_values[v]))
                return false;
    }
    return true;
}

int label_selector_parse(const char *s, size_t len, label_selector_t *out, char *err,
                         size_t errlen) {
    memset(out, 0, sizeof *out);
    if (err && errlen)
        err[0] = '\0';
    if (len > 0 && !s)
        return kgs_seterr(err, errlen, KGS_EINVAL, "label selector: NULL input");
    if (len > LABEL_SELECTOR_MAX_LEN)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "label selector is %zu bytes long: at most %d are supported", len,
                          LABEL_SELECTOR_MAX_LEN);

    raw_sel_t raw;
    lexer_t lx = {s, len, 0, err, errlen, 0};
    int rc = parse_raw(&lx, &raw);
    if (rc)
        return rc;
    sort_requirements(&raw);
    if (!build(&raw, out)) {
        memset(out, 0, sizeof *out);
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "label selector: keys and values exceed %d bytes",
                          LABEL_SELECTOR_MAX_LEN);
    }
    /* The canonical form can be longer than the input ("a in(x)" gains a
     * space); it must stay parseable, so it obeys the same limit. */
    size_t canon = label_selector_format(out, NULL, 0);
    if (canon > LABEL_SELECTOR_MAX_LEN) {
        memset(out, 0, sizeof *out);
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "label selector is %zu bytes long once written canonically: at most %d "
                          "are supported",
                          canon, LABEL_SELECTOR_MAX_LEN);
    }
    return 0;
}

/* ---- use ------------------------------------------------------------------- */

bool label_selector_is_empty(const label_selector_t *sel) {
    return sel->_nreqs == 0;
}

static bool in_set(const label_selector_t *sel, const label_requirement_t *r, const char *v) {
    for (unsigned i = 0; i < r->_nvalues; i++)
        if (strcmp(sel->_text + r->_values[i], v) == 0)
            return true;
    return false;
}

bool label_selector_matches(const label_selector_t *sel, label_lookup_fn lookup, void *ud) {
    for (unsigned i = 0; i < sel->_nreqs; i++) {
        const label_requirement_t *r = &sel->_reqs[i];
        const char *v = lookup(ud, sel->_text + r->_key);
        bool ok;
        switch ((label_op_t)r->_op) {
        case LABEL_OP_EXISTS:
            ok = v != NULL;
            break;
        case LABEL_OP_NOT_EXISTS:
            ok = v == NULL;
            break;
        case LABEL_OP_EQ:
        case LABEL_OP_IN:
            ok = v != NULL && in_set(sel, r, v);
            break;
        case LABEL_OP_NE:
        case LABEL_OP_NOTIN:
        default: /* Kubernetes: a missing label satisfies != and notin */
            ok = v == NULL || !in_set(sel, r, v);
            break;
        }
        if (!ok)
            return false;
    }
    return true;
}

typedef struct {
    char *out;
    size_t outlen;
    size_t n; /* the full length so far */
} writer_t;

static void put(writer_t *w, const char *s) {
    size_t l = strlen(s);
    if (w->n < w->outlen) {
        size_t room = w->outlen - 1 - w->n;
        memcpy(w->out + w->n, s, l < room ? l : room);
    }
    w->n += l;
}

size_t label_selector_format(const label_selector_t *sel, char *out, size_t outlen) {
    writer_t w = {out, outlen, 0};
    for (unsigned i = 0; i < sel->_nreqs; i++) {
        const label_requirement_t *r = &sel->_reqs[i];
        if (i > 0)
            put(&w, ",");
        if (r->_op == LABEL_OP_NOT_EXISTS)
            put(&w, "!");
        put(&w, sel->_text + r->_key);
        switch ((label_op_t)r->_op) {
        case LABEL_OP_EQ:
            put(&w, "=");
            put(&w, sel->_text + r->_values[0]);
            break;
        case LABEL_OP_NE:
            put(&w, "!=");
            put(&w, sel->_text + r->_values[0]);
            break;
        case LABEL_OP_IN:
        case LABEL_OP_NOTIN:
            put(&w, r->_op == LABEL_OP_IN ? " in (" : " notin (");
            for (unsigned v = 0; v < r->_nvalues; v++) {
                if (v > 0)
                    put(&w, ",");
                put(&w, sel->_text + r->_values[v]);
            }
            put(&w, ")");
            break;
        default:
            break;
        }
    }
    if (outlen > 0)
        out[w.n < outlen ? w.n : outlen - 1] = '\0';
    return w.n;
}
