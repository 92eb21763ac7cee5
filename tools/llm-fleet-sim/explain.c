/*
 * explain.c - see explain.h.
 */
#include "explain.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "proto/externalscaler.pb-c.h"

static const char *const known_order[] = {
    "replicas", "lambda_rps", "capacity_rps", "cold_start_s", "tokens_per_request",
    "backlog",  "work_due",   "can_do",       "deficit",      "steady",
    "ready",    "starting",
};
#define NKNOWN (sizeof known_order / sizeof known_order[0])

/* Families whose suffix is a name, not where the number came from. */
static const char *const named_families[] = {"signal", "need", "decided_by"};
#define NFAMILIES (sizeof named_families / sizeof named_families[0])

/* The rank of an item: 0..NKNOWN-1 for a known bare name, then one per
 * named family, then everything else. */
static size_t rank_of(const char *name) {
    const char *colon = strchr(name, ':');
    size_t base = colon ? (size_t)(colon - name) : strlen(name);
    for (size_t f = 0; f < NFAMILIES; f++)
        if (colon && base == strlen(named_families[f]) && !strncmp(name, named_families[f], base))
            return NKNOWN + f;
    for (size_t k = 0; k < NKNOWN; k++)
        if (base == strlen(known_order[k]) && !strncmp(name, known_order[k], base))
            return k;
    return NKNOWN + NFAMILIES;
}

/* 3 significant figures at most, no trailing zeros: 36.2, 412, 0.05. */
static void fmt_value(char *buf, size_t n, double v) {
    if (isnan(v)) {
        snprintf(buf, n, "unknown");
        return;
    }
    double a = fabs(v);
    snprintf(buf, n, "%.*f", a >= 100 ? 0 : a >= 10 ? 1 : 2, v);
    char *dot = strchr(buf, '.');
    if (dot) {
        char *e = buf + strlen(buf);
        while (e > dot + 1 && e[-1] == '0')
            *--e = '\0';
        if (e == dot + 1)
            *dot = '\0';
    }
    if (strcmp(buf, "-0") == 0)
        snprintf(buf, n, "0");
}

/* One item as text: "name=value", "name=value[from]", "decided_by=name".
 * A name part longer than EXPLAIN_NAME_MAX bytes is shown up to there and
 * "..." (a line on a screen, by design), and control bytes as '?', so one
 * answer is always one line. */
#define EXPLAIN_NAME_MAX 120
static void fmt_item(char *buf, size_t n, const explain_item_t *it, size_t rank) {
    char v[64];
    fmt_value(v, sizeof v, it->value);
    const char *colon = strchr(it->name, ':');
    const char *tail = colon ? colon + 1 : "";
    int head_len = colon ? (int)(colon - it->name) : (int)strlen(it->name);
    const char *more_head = head_len > EXPLAIN_NAME_MAX ? "..." : "";
    const char *more_tail = strlen(tail) > EXPLAIN_NAME_MAX ? "..." : "";
    head_len = head_len > EXPLAIN_NAME_MAX ? EXPLAIN_NAME_MAX : head_len;
    if (rank == NKNOWN + 2) /* decided_by:<name>: the name is the answer */
        snprintf(buf, n, "decided_by=%.*s%s", EXPLAIN_NAME_MAX, tail, more_tail);
    else if (rank < NKNOWN && colon)
        snprintf(buf, n, "%.*s=%s[%.*s%s]", head_len, it->name, v, EXPLAIN_NAME_MAX, tail,
                 more_tail);
    else if (colon)
        snprintf(buf, n, "%.*s%s:%.*s%s=%s", head_len, it->name, more_head, EXPLAIN_NAME_MAX, tail,
                 more_tail, v);
    else
        snprintf(buf, n, "%.*s%s=%s", head_len, it->name, more_head, v);
    for (char *c = buf; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
}

size_t explain_format(const explain_item_t *items, size_t n, char *out, size_t outlen) {
    if (outlen == 0)
        return 0;
    out[0] = '\0';
    size_t len = 0, shown = 0;
    bool stopped = false;
    /* stable by rank: one pass per rank, items in the order they came */
    for (size_t r = 0; r <= NKNOWN + NFAMILIES && !stopped; r++) {
        for (size_t i = 0; i < n && !stopped; i++) {
            if (rank_of(items[i].name) != r)
                continue;
            char one[2 * EXPLAIN_NAME_MAX + 128];
            fmt_item(one, sizeof one, &items[i], r);
            size_t need = strlen(one) + (len ? 1 : 0);
            /* keep room for " (+K more)" in case a later item does not fit */
            if (len + need + 16 >= outlen) {
                stopped = true;
                break;
            }
            len += (size_t)snprintf(out + len, outlen - len, "%s%s", len ? " " : "", one);
            shown++;
        }
    }
    if (shown < n && len + 16 < outlen)
        len +=
            (size_t)snprintf(out + len, outlen - len, "%s(+%zu more)", len ? " " : "", n - shown);
    return len;
}

size_t explain_decode(const uint8_t *msg, size_t len, char *out, size_t outlen) {
    if (outlen)
        out[0] = '\0';
    Externalscaler__GetMetricsResponse *r =
        externalscaler__get_metrics_response__unpack(NULL, len, msg);
    if (!r)
        return 0;
    size_t w = 0;
    if (r->n_metricvalues <= EXPLAIN_MAX_ITEMS) {
        explain_item_t items[EXPLAIN_MAX_ITEMS];
        size_t n = 0;
        for (size_t i = 0; i < r->n_metricvalues; i++) {
            const Externalscaler__MetricValue *v = r->metricvalues[i];
            /* protobuf-c gives "" for an absent string, never NULL */
            items[n].name = v->metricname ? v->metricname : "";
            items[n].value = v->metricvaluefloat;
            n++;
        }
        w = explain_format(items, n, out, outlen);
    }
    externalscaler__get_metrics_response__free_unpacked(r, NULL);
    return w;
}
