/*
 * duration.c - Go-style durations ("500ms", "1h30m", "1.5s").
 *
 * The grammar is Go's time.ParseDuration without the sign: one or more
 * <number><unit> terms, where a number is digits with an optional fraction
 * (".5", "5.", "1.25") and a unit is ns, us, µs (U+00B5) or μs (U+03BC), ms,
 * s, m or h. A bare "0" is the only number allowed without a unit. A leading
 * '+' is accepted because Go accepts it; a '-' is refused, since every
 * duration we take (intervals, timeouts) must be positive or zero.
 *
 * Unlike Go, which scales fractions through float64, the fraction is kept as
 * an integer of up to 19 digits and multiplied exactly, so "0.000000001s" is
 * 1 ns and duration_format() output always parses back to the same value.
 * The range is [0, UINT64_MAX] ns (about 584 years) instead of Go's int64.
 */
#include "core/duration.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/err.h"

#define NS_PER_US UINT64_C(1000)
#define NS_PER_MS UINT64_C(1000000)
#define NS_PER_S UINT64_C(1000000000)
#define NS_PER_M (60 * NS_PER_S)
#define NS_PER_H (60 * NS_PER_M)

/* GCC and clang both provide it; __extension__ keeps -Wpedantic quiet. */
__extension__ typedef unsigned __int128 duration_u128_t;

#define DURATION_HINT "use a number and a unit (ns, us, ms, s, m, h), e.g. \"500ms\" or \"1h30m\""

typedef struct {
    const char *name;
    size_t len;
    uint64_t ns;
} duration_unit_t;

/* Longer names first so "ms" is not read as "m" followed by "s". */
static const duration_unit_t duration_units[] = {
    {"ns", 2, 1},
    {"us", 2, NS_PER_US},
    {"\xc2\xb5s", 3, NS_PER_US}, /* U+00B5 MICRO SIGN, as Go accepts */
    {"\xce\xbcs", 3, NS_PER_US}, /* U+03BC GREEK SMALL LETTER MU, as Go accepts */
    {"ms", 2, NS_PER_MS},
    {"s", 1, NS_PER_S},
    {"m", 1, NS_PER_M},
    {"h", 1, NS_PER_H},
};

static const duration_unit_t *duration_unit_match(const char *p) {
    for (size_t i = 0; i < sizeof duration_units / sizeof duration_units[0]; i++) {
        if (strncmp(p, duration_units[i].name, duration_units[i].len) == 0)
            return &duration_units[i];
    }
    return NULL;
}

static bool duration_is_digit(char c) {
    return c >= '0' && c <= '9';
}

int duration_parse_ns(const char *s, uint64_t *out_ns, char *err, size_t errlen) {
    if (!out_ns)
        return kgs_seterr(err, errlen, KGS_EINVAL, "duration: no output pointer");
    *out_ns = 0;
    if (!s || !*s)
        return kgs_seterr(err, errlen, KGS_EINVAL, "duration \"\": empty; %s", DURATION_HINT);
    const char *p = s;
    if (*p == '-')
        return kgs_seterr(err, errlen, KGS_EINVAL, "duration \"%s\": negative; %s", s,
                          DURATION_HINT);
    if (*p == '+')
        p++;
    if (strcmp(p, "0") == 0)
        return 0;
    if (!*p)
        return kgs_seterr(err, errlen, KGS_EINVAL, "duration \"%s\": no number; %s", s,
                          DURATION_HINT);

    uint64_t total = 0;
    while (*p) {
        uint64_t whole = 0;
        bool whole_overflow = false;
        const char *start = p;
        while (duration_is_digit(*p)) {
            unsigned d = (unsigned)(*p - '0');
            if (whole > (UINT64_MAX - d) / 10)
                whole_overflow = true;
            else
                whole = whole * 10 + d;
            p++;
        }
        bool had_whole = p != start;
        uint64_t frac = 0, scale = 1;
        bool had_frac = false;
        if (*p == '.') {
            p++;
            while (duration_is_digit(*p)) {
                had_frac = true;
                /* Digits past the 19th are below 1 ns for every unit
                 * (h is < 1e13 ns); they are dropped, as Go drops them. */
                if (scale <= UINT64_MAX / 10 / 10) {
                    frac = frac * 10 + (uint64_t)(*p - '0');
                    scale *= 10;
                }
                p++;
            }
        }
        if (!had_whole && !had_frac)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "duration \"%s\": expected a number at \"%s\"; %s", s, start,
                              DURATION_HINT);
        const duration_unit_t *u = duration_unit_match(p);
        if (!u) {
            if (!*p)
                return kgs_seterr(err, errlen, KGS_EINVAL, "duration \"%s\": missing unit; %s", s,
                                  DURATION_HINT);
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "duration \"%s\": unknown unit at \"%s\"; %s", s, p, DURATION_HINT);
        }
        p += u->len;
        if (whole_overflow || whole > UINT64_MAX / u->ns)
            goto overflow;
        uint64_t term = whole * u->ns;
        /* frac < scale, so frac * unit / scale < unit: it fits. */
        uint64_t frac_ns = (uint64_t)((duration_u128_t)frac * u->ns / scale);
        if (term > UINT64_MAX - frac_ns)
            goto overflow;
        term += frac_ns;
        if (total > UINT64_MAX - term)
            goto overflow;
        total += term;
    }
    *out_ns = total;
    return 0;

overflow:
    return kgs_seterr(err, errlen, KGS_ERANGE,
                      "duration \"%s\": too large (at most about 584 years, e.g. \"5124095h\")", s);
}

/* Appends ".ddd" for frac (< 10^digits) with trailing zeros removed;
 * nothing when frac is 0. */
static void duration_format_frac(char *tmp, size_t tmplen, uint64_t frac, int digits) {
    tmp[0] = '\0';
    if (frac == 0)
        return;
    char d[24];
    snprintf(d, sizeof d, "%0*" PRIu64, digits, frac);
    size_t n = strlen(d);
    while (n > 0 && d[n - 1] == '0')
        d[--n] = '\0';
    snprintf(tmp, tmplen, ".%s", d);
}

char *duration_format(uint64_t ns, char *buf, size_t buflen) {
    if (!buf || buflen == 0)
        return buf;
    char frac[24];
    if (ns == 0) {
        snprintf(buf, buflen, "0s");
    } else if (ns < NS_PER_US) {
        snprintf(buf, buflen, "%" PRIu64 "ns", ns);
    } else if (ns < NS_PER_MS) {
        duration_format_frac(frac, sizeof frac, ns % NS_PER_US, 3);
        snprintf(buf, buflen, "%" PRIu64 "%sus", ns / NS_PER_US, frac);
    } else if (ns < NS_PER_S) {
        duration_format_frac(frac, sizeof frac, ns % NS_PER_MS, 6);
        snprintf(buf, buflen, "%" PRIu64 "%sms", ns / NS_PER_MS, frac);
    } else {
        /* "1h", "1h30m", "1m30.5s": zero components are left out. */
        uint64_t h = ns / NS_PER_H;
        uint64_t m = ns % NS_PER_H / NS_PER_M;
        uint64_t sec = ns % NS_PER_M / NS_PER_S;
        uint64_t sub = ns % NS_PER_S;
        char hs[32] = "", ms[8] = "", ss[48] = "";
        if (h)
            snprintf(hs, sizeof hs, "%" PRIu64 "h", h);
        if (m)
            snprintf(ms, sizeof ms, "%" PRIu64 "m", m);
        if (sec || sub) {
            duration_format_frac(frac, sizeof frac, sub, 9);
            snprintf(ss, sizeof ss, "%" PRIu64 "%ss", sec, frac);
        }
        snprintf(buf, buflen, "%s%s%s", hs, ms, ss);
    }
    return buf;
}

int64_t civil_days(int64_t y, unsigned m, unsigned d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}
