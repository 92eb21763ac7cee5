/*
 * explain.c - see explain.h.
 */
#include "explain.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "proto/externalscaler.pb-c.h"

/* How a name is shown: "base=v[from]" (the suffix says where the number
 * came from), "base:name=v" (the suffix names what it is about),
 * "base=name" (the suffix is the answer), or not at all (the screen has a
 * column for it). */
typedef enum { SHOW_FROM, SHOW_NAMED, SHOW_ANSWER, SHOW_HIDDEN } show_t;

/* The fixed order (docs/server.md lists the names): an error, the decision
 * and the signals, the queueing model's inputs, what the scaler sees of the
 * engines and pods, latency. */
static const struct {
    const char *base;
    show_t how;
} known[] = {
    {"error", SHOW_ANSWER}, /* error:<status>: <message> */
    {"decided_by", SHOW_ANSWER},
    {"need", SHOW_NAMED},
    {"signal", SHOW_NAMED},
    {"wake", SHOW_ANSWER},
    {"replicas", SHOW_FROM},
    {"lambda_rps", SHOW_FROM},
    {"capacity_rps", SHOW_FROM},
    {"cold_start_s", SHOW_FROM},
    {"tokens_per_request", SHOW_FROM},
    {"backlog", SHOW_FROM},
    {"work_due", SHOW_FROM},
    {"can_do", SHOW_FROM},
    {"deficit", SHOW_FROM},
    {"steady", SHOW_FROM},
    {"ready", SHOW_FROM},
    {"starting", SHOW_FROM},
    {"engines", SHOW_NAMED},
    {"not_serving", SHOW_NAMED},
    {"pods", SHOW_NAMED},
    {"latency", SHOW_NAMED},
    {"latency_target", SHOW_NAMED},
    {"latency_requests", SHOW_NAMED},
    {"value", SHOW_HIDDEN},  /* the value column */
    {"active", SHOW_HIDDEN}, /* the active column */
};
#define NKNOWN (sizeof known / sizeof known[0])

/* The rank of an item: its row in known[], or NKNOWN for a name this
 * program does not know (shown as it came, after the others). */
static size_t rank_of(const char *name) {
    const char *colon = strchr(name, ':');
    size_t base = colon ? (size_t)(colon - name) : strlen(name);
    for (size_t k = 0; k < NKNOWN; k++)
        if (base == strlen(known[k].base) && !strncmp(name, known[k].base, base))
            return k;
    return NKNOWN;
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

/* One item as text (see show_t). A name part longer than
 * EXPLAIN_NAME_MAX bytes is shown up to there and "..." (a line on a
 * screen, by design), and control bytes as '?', so one answer is always one
 * line. */
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
    show_t how = rank < NKNOWN ? known[rank].how : SHOW_NAMED;
    if (colon && how == SHOW_ANSWER)
        snprintf(buf, n, "%.*s=%.*s%s", head_len, it->name, EXPLAIN_NAME_MAX, tail, more_tail);
    else if (colon && how == SHOW_FROM)
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
    size_t len = 0, shown = 0, hidden = 0;
    for (size_t i = 0; i < n; i++) {
        size_t r = rank_of(items[i].name);
        hidden += r < NKNOWN && known[r].how == SHOW_HIDDEN;
    }
    bool stopped = false;
    /* stable by rank: one pass per rank, items in the order they came */
    for (size_t r = 0; r <= NKNOWN && !stopped; r++) {
        if (r < NKNOWN && known[r].how == SHOW_HIDDEN)
            continue;
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
    if (shown + hidden < n && len + 16 < outlen)
        len += (size_t)snprintf(out + len, outlen - len, "%s(+%zu more)", len ? " " : "",
                                n - shown - hidden);
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
