/*
 * trace.c - see trace.h. The Azure timestamps are wall-clock strings with
 * 7 fractional digits; they become seconds since the first request (days
 * from the civil calendar, so a trace that crosses midnight stays ordered).
 * Each repetition k starts at k x (span / scale + gap).
 */
#include "trace.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Days since 1970-01-01 of a proleptic Gregorian date (Hinnant's algorithm). */
static long days_from_civil(long y, unsigned m, unsigned d) {
    y -= m <= 2;
    long era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (long)doe - 719468;
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
        *out = (double)days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400.0 + h * 3600.0 +
               mi * 60.0 + s;
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

int trace_parse(const char *text, size_t len, const trace_options_t *o, trace_t *out, char *err,
                size_t errlen) {
    memset(out, 0, sizeof *out);
    if (!(o->time_scale > 0) || o->repetitions < 1 || !(o->gap_s >= 0))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "trace options: scale must be > 0, repetitions >= 1, gap >= 0");
    size_t cap = 1024, n = 0;
    trace_request_t *v = malloc(cap * sizeof *v);
    if (!v)
        return KGS_ENOMEM;
    size_t pos = 0;
    unsigned line = 0;
    double t0 = 0;
    while (pos < len) {
        const char *ls = text + pos;
        const char *nl = memchr(ls, '\n', len - pos);
        size_t ll = nl ? (size_t)(nl - ls) : len - pos;
        pos += ll + (nl ? 1 : 0);
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
            free(v);
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "trace line %u: expected TIMESTAMP,ContextTokens,GeneratedTokens",
                              line);
        }
        if (n == 0)
            t0 = t;
        r.arrival_s = t - t0;
        if (o->limit_s > 0 && r.arrival_s > o->limit_s)
            continue;
        if (n == cap) {
            trace_request_t *nv = realloc(v, 2 * cap * sizeof *v);
            if (!nv) {
                free(v);
                return KGS_ENOMEM;
            }
            v = nv;
            cap *= 2;
        }
        v[n++] = r;
    }
    if (n == 0) {
        free(v);
        return kgs_seterr(err, errlen, KGS_EINVAL, "trace: no requests");
    }
    qsort(v, n, sizeof *v, cmp_arrival);
    double span = 0;
    for (size_t i = 0; i < n; i++) {
        v[i].arrival_s = (v[i].arrival_s - v[0].arrival_s) / o->time_scale;
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
    total = m;
    out->source_count = n;
    out->end_s = all[total - 1].arrival_s;
    return 0;
}

int trace_load(const char *path, const trace_options_t *o, trace_t *out, char *err, size_t errlen) {
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
    int rc = trace_parse(buf, n, o, out, err, errlen);
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
