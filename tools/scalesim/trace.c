/*
 * trace.c - see trace.h. The Azure timestamps are wall-clock strings with
 * 7 fractional digits; they become seconds since the first request (days
 * from the civil calendar, so a trace that crosses midnight stays ordered).
 * Each repetition k starts at k x (span / scale + gap). Every source
 * (CSV, JSON Lines, a generator) collects its requests and hands them to
 * finish(), which applies the options the same way.
 */
#include "trace.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/duration.h"
#include "core/err.h"

void trace_options_default(trace_options_t *o) {
    o->time_scale = 1;
    o->repetitions = 1;
    o->gap_s = 0;
    o->limit_s = 0;
    o->ramp_s = 0;
}

/* splitmix64: a fixed, seeded hash of (repetition, request) in [0, 1). */
static double unit_hash(uint64_t x) {
    x += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    x ^= x >> 31;
    return (double)(x >> 11) / 9007199254740992.0;
}

/* "YYYY-MM-DD HH:MM:SS[.frac]" or a plain number of seconds. */
static int parse_time(const char *p, size_t n, double *out) {
    char buf[64];
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, p, n);
    buf[n] = '\0';
    int y, mo, d, h, mi;
    double s;
    int used = 0;
    if (sscanf(buf, "%4d-%2d-%2d %2d:%2d:%lf%n", &y, &mo, &d, &h, &mi, &s, &used) == 6 &&
        (size_t)used == n) {
        if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s < 0 || s >= 61)
            return -1;
        *out =
            (double)civil_days(y, (unsigned)mo, (unsigned)d) * 86400.0 + h * 3600.0 + mi * 60.0 + s;
        return 0;
    }
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (errno || end != buf + n || !(v >= 0) || v > 1e12)
        return -1;
    *out = v;
    return 0;
}

static int parse_uint(const char *p, size_t n, unsigned *out) {
    if (n == 0 || n > 9)
        return -1;
    unsigned v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        v = v * 10 + (unsigned)(p[i] - '0');
    }
    *out = v;
    return 0;
}

static int cmp_arrival(const void *a, const void *b) {
    double x = ((const trace_request_t *)a)->arrival_s, y = ((const trace_request_t *)b)->arrival_s;
    return x < y ? -1 : x > y;
}

/* A growable request vector. */
typedef struct {
    trace_request_t *v;
    size_t n, cap;
} reqvec_t;

static int reqvec_push(reqvec_t *rv, const trace_request_t *r) {
    if (rv->n == rv->cap) {
        size_t cap = rv->cap ? 2 * rv->cap : 1024;
        trace_request_t *nv = realloc(rv->v, cap * sizeof *nv);
        if (!nv)
            return KGS_ENOMEM;
        rv->v = nv;
        rv->cap = cap;
    }
    rv->v[rv->n++] = *r;
    return 0;
}

/* The next line of text[0..len) from *pos (without its '\n'), advancing
 * *pos past it; false at the end. */
static bool next_line(const char *text, size_t len, size_t *pos, const char **ls, size_t *ll) {
    if (*pos >= len)
        return false;
    *ls = text + *pos;
    const char *nl = memchr(*ls, '\n', len - *pos);
    *ll = nl ? (size_t)(nl - *ls) : len - *pos;
    *pos += *ll + (nl ? 1 : 0);
    return true;
}

static int check_options(const trace_options_t *o, char *err, size_t errlen) {
    if (!(o->time_scale > 0) || o->repetitions < 1 || !(o->gap_s >= 0))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "trace options: scale must be > 0, repetitions >= 1, gap >= 0");
    return 0;
}

/*
 * The part every source shares: sorts the requests read (arrival_s in
 * source seconds, any origin), starts them at 0, keeps the first limit_s,
 * scales time, repeats with gaps and ramps. Takes ownership of rv->v.
 */
static int finish(reqvec_t *rv, const trace_options_t *o, trace_t *out, char *err, size_t errlen) {
    trace_request_t *v = rv->v;
    size_t n = rv->n;
    rv->v = NULL;
    if (n == 0) {
        free(v);
        return kgs_seterr(err, errlen, KGS_EINVAL, "trace: no requests");
    }
    qsort(v, n, sizeof *v, cmp_arrival);
    double t0 = v[0].arrival_s;
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        double a = v[i].arrival_s - t0;
        if (o->limit_s > 0 && a > o->limit_s)
            continue;
        v[kept] = v[i];
        v[kept].arrival_s = a;
        kept++;
    }
    n = kept;
    double span = 0;
    for (size_t i = 0; i < n; i++) {
        v[i].arrival_s = v[i].arrival_s / o->time_scale;
        if (v[i].arrival_s > span)
            span = v[i].arrival_s;
    }
    size_t total = n * o->repetitions;
    trace_request_t *all = malloc(total * sizeof *all);
    if (!all) {
        free(v);
        return KGS_ENOMEM;
    }
    size_t m = 0;
    for (unsigned k = 0; k < o->repetitions; k++)
        for (size_t i = 0; i < n; i++) {
            if (o->ramp_s > 0) {
                double x = v[i].arrival_s, keep = 1;
                if (x / o->ramp_s < keep)
                    keep = x / o->ramp_s;
                if ((span - x) / o->ramp_s < keep)
                    keep = (span - x) / o->ramp_s;
                if (unit_hash(((uint64_t)k << 32) ^ i) >= keep)
                    continue;
            }
            all[m] = v[i];
            all[m].arrival_s += k * (span + o->gap_s);
            m++;
        }
    free(v);
    if (m == 0) {
        free(all);
        return kgs_seterr(err, errlen, KGS_EINVAL, "trace: the ramp left no requests");
    }
    out->reqs = all;
    out->count = m;
    out->source_count = n;
    out->end_s = all[m - 1].arrival_s;
    return 0;
}

trace_format_t trace_detect(const char *text, size_t len) {
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
            continue;
        return c == '{' ? TRACE_JSONL : TRACE_CSV;
    }
    return TRACE_CSV;
}

int trace_parse(const char *text, size_t len, const trace_options_t *o, trace_t *out, char *err,
                size_t errlen) {
    memset(out, 0, sizeof *out);
    int rc = check_options(o, err, errlen);
    if (rc)
        return rc;
    reqvec_t rv = {0};
    size_t pos = 0;
    unsigned line = 0;
    const char *ls;
    size_t ll;
    while (next_line(text, len, &pos, &ls, &ll)) {
        line++;
        if (ll && ls[ll - 1] == '\r')
            ll--;
        if (line == 1 || ll == 0)
            continue; /* header, blank */
        const char *c1 = memchr(ls, ',', ll);
        const char *c2 = c1 ? memchr(c1 + 1, ',', ll - (size_t)(c1 + 1 - ls)) : NULL;
        double t;
        trace_request_t r;
        if (!c2 || parse_time(ls, (size_t)(c1 - ls), &t) ||
            parse_uint(c1 + 1, (size_t)(c2 - c1 - 1), &r.ctx_tokens) ||
            parse_uint(c2 + 1, ll - (size_t)(c2 + 1 - ls), &r.gen_tokens)) {
            free(rv.v);
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "trace line %u: expected TIMESTAMP,ContextTokens,GeneratedTokens",
                              line);
        }
        r.arrival_s = t;
        if (reqvec_push(&rv, &r)) {
            free(rv.v);
            return KGS_ENOMEM;
        }
    }
    return finish(&rv, o, out, err, errlen);
}

/*
 * The number after "key": in one JSON object line [p, p + n). A top-level
 * scan: strings are skipped whole, so a key name inside a string value does
 * not match. Returns 0, -1 when the key is absent, -2 when its value is not
 * a non-negative number.
 */
static int json_number(const char *p, size_t n, const char *key, double *out) {
    size_t kl = strlen(key);
    int depth = 0;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            depth--;
        } else if (c == '"') {
            size_t j = i + 1;
            while (j < n && p[j] != '"')
                j += p[j] == '\\' ? 2 : 1;
            if (j >= n)
                return -1;
            bool match = depth == 1 && j - i - 1 == kl && !memcmp(p + i + 1, key, kl);
            i = j;
            if (!match)
                continue;
            size_t k = j + 1;
            while (k < n && (p[k] == ' ' || p[k] == '\t'))
                k++;
            if (k >= n || p[k] != ':')
                continue; /* a string value equal to the key name */
            k++;
            while (k < n && (p[k] == ' ' || p[k] == '\t'))
                k++;
            char buf[40];
            size_t m = 0;
            while (k + m < n && m < sizeof buf - 1 && (strchr("0123456789.eE+-", p[k + m]) != NULL))
                m++;
            memcpy(buf, p + k, m);
            buf[m] = '\0';
            char *end;
            errno = 0;
            double v = strtod(buf, &end);
            if (m == 0 || errno || *end || !(v >= 0) || v > 1e15)
                return -2;
            *out = v;
            return 0;
        }
    }
    return -1;
}

int trace_parse_jsonl(const char *text, size_t len, const trace_options_t *o, trace_t *out,
                      char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    int rc = check_options(o, err, errlen);
    if (rc)
        return rc;
    static const char *const keys[] = {"timestamp", "input_length", "output_length"};
    reqvec_t rv = {0};
    size_t pos = 0;
    unsigned line = 0;
    const char *ls;
    size_t ll;
    while (next_line(text, len, &pos, &ls, &ll)) {
        line++;
        while (ll && (ls[ll - 1] == '\r' || ls[ll - 1] == ' '))
            ll--;
        if (ll == 0)
            continue;
        double v[3];
        for (int k = 0; k < 3; k++) {
            int jr = ls[0] == '{' ? json_number(ls, ll, keys[k], &v[k]) : -1;
            if (jr || (k > 0 && v[k] > 1e9)) {
                free(rv.v);
                return kgs_seterr(err, errlen, KGS_EINVAL, "trace line %u: %s \"%s\"", line,
                                  jr == -2 || jr == 0 ? "expected a non-negative number for"
                                                      : "expected a JSON object with",
                                  keys[k]);
            }
        }
        trace_request_t r = {
            .arrival_s = v[0] / 1000, .ctx_tokens = (unsigned)v[1], .gen_tokens = (unsigned)v[2]};
        if (reqvec_push(&rv, &r)) {
            free(rv.v);
            return KGS_ENOMEM;
        }
    }
    return finish(&rv, o, out, err, errlen);
}

void trace_synth_default(trace_synth_t *g, trace_synth_kind_t kind) {
    memset(g, 0, sizeof *g);
    g->kind = kind;
    g->duration_s = 600;
    g->rate = kind == TRACE_SYN_DIURNAL ? 1 : 5;
    g->peak_rate = 10;
    g->on_s = 60;
    g->off_s = 120;
    g->period_s = 600;
    g->ctx_tokens = 1000;
    g->gen_tokens = 200;
    g->seed = 1;
}

int trace_synth_kind_parse(const char *name) {
    if (!strcmp(name, "poisson"))
        return TRACE_SYN_POISSON;
    if (!strcmp(name, "onoff"))
        return TRACE_SYN_ONOFF;
    if (!strcmp(name, "diurnal"))
        return TRACE_SYN_DIURNAL;
    return -1;
}

/* The arrival rate of g at t (requests/s). */
static double synth_rate(const trace_synth_t *g, double t) {
    switch (g->kind) {
    case TRACE_SYN_ONOFF:
        return fmod(t, g->on_s + g->off_s) < g->on_s ? g->rate : 0;
    case TRACE_SYN_DIURNAL:
        return g->rate + (g->peak_rate - g->rate) * (1 - cos(2 * M_PI * t / g->period_s)) / 2;
    case TRACE_SYN_POISSON:
    default:
        return g->rate;
    }
}

int trace_synthesize(const trace_synth_t *g, const trace_options_t *o, trace_t *out, char *err,
                     size_t errlen) {
    memset(out, 0, sizeof *out);
    int rc = check_options(o, err, errlen);
    if (rc)
        return rc;
    double peak = g->kind == TRACE_SYN_DIURNAL ? g->peak_rate : g->rate;
    if (!(g->duration_s > 0) || g->duration_s > 1e7)
        return kgs_seterr(err, errlen, KGS_EINVAL, "synthetic duration %g s: must be in (0, 1e7]",
                          g->duration_s);
    if (!(g->rate >= 0) || !(peak > 0) || peak > 1e5 || peak < g->rate)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "synthetic rate %g, peak %g req/s: need 0 <= rate <= peak, 0 < peak <= "
                          "1e5",
                          g->rate, peak);
    if (g->kind == TRACE_SYN_ONOFF && (!(g->on_s > 0) || !(g->off_s >= 0)))
        return kgs_seterr(err, errlen, KGS_EINVAL, "synthetic on %g s / off %g s: need on > 0",
                          g->on_s, g->off_s);
    if (g->kind == TRACE_SYN_DIURNAL && !(g->period_s > 0))
        return kgs_seterr(err, errlen, KGS_EINVAL, "synthetic period %g s: must be > 0",
                          g->period_s);
    if (g->ctx_tokens < 1 || g->gen_tokens < 1 || g->ctx_tokens > 1000000 ||
        g->gen_tokens > 1000000)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "synthetic tokens %u / %u: need 1 .. 1000000 each", g->ctx_tokens,
                          g->gen_tokens);
    reqvec_t rv = {0};
    uint64_t ctr = g->seed * UINT64_C(0x100000001b3);
    double t = 0;
    for (;;) {
        /* exponential gaps at the peak rate, kept with p = rate(t) / peak */
        double u = unit_hash(ctr++);
        t += -log(1 - u) / peak;
        if (t >= g->duration_s)
            break;
        if (unit_hash(ctr++) * peak >= synth_rate(g, t))
            continue;
        trace_request_t r;
        r.arrival_s = t;
        r.ctx_tokens = (unsigned)lround(g->ctx_tokens * (0.5 + unit_hash(ctr++)));
        r.gen_tokens = (unsigned)lround(g->gen_tokens * (0.5 + unit_hash(ctr++)));
        if (r.ctx_tokens < 1)
            r.ctx_tokens = 1;
        if (r.gen_tokens < 1)
            r.gen_tokens = 1;
        if (reqvec_push(&rv, &r)) {
            free(rv.v);
            return KGS_ENOMEM;
        }
    }
    return finish(&rv, o, out, err, errlen);
}

int trace_load(const char *path, trace_format_t fmt, const trace_options_t *o, trace_t *out,
               char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f)
        return kgs_seterr(err, errlen, KGS_EIO, "open trace %s: %s", path, strerror(errno));
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        fclose(f);
        return KGS_ENOMEM;
    }
    for (;;) {
        if (n == cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                fclose(f);
                return KGS_ENOMEM;
            }
            buf = nb;
            cap *= 2;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return kgs_seterr(err, errlen, KGS_EIO, "read trace %s: I/O error", path);
    }
    if (fmt == TRACE_AUTO)
        fmt = trace_detect(buf, n);
    int rc = fmt == TRACE_JSONL ? trace_parse_jsonl(buf, n, o, out, err, errlen)
                                : trace_parse(buf, n, o, out, err, errlen);
    if (rc && err && errlen) {
        /* name the file: the line number alone does not say which trace */
        char msg[512];
        snprintf(msg, sizeof msg, "%s: %s", path, err);
        snprintf(err, errlen, "%s", msg);
    }
    free(buf);
    return rc;
}

void trace_deinit(trace_t *t) {
    if (!t)
        return;
    free(t->reqs);
    t->reqs = NULL;
    t->count = 0;
}
