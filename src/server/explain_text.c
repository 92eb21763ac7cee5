/*
 * explain_text.c - see the header. Names are "<group>:<name>" (or a plain
 * name for the queueing model's inputs, "<name>:<where from>"); a number
 * the server does not know arrives as NaN and prints as "unknown".
 */
#include "server/explain_text.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* A number as a person writes it: 39, 0.5, 428.571, 1.2e+06. */
static void num(strbuf_t *b, double v) {
    if (!isfinite(v)) {
        strbuf_printf(b, "unknown");
        return;
    }
    char t[64];
    if (fabs(v) >= 1e6 || (v != 0 && fabs(v) < 1e-3))
        snprintf(t, sizeof t, "%.3g", v);
    else {
        snprintf(t, sizeof t, "%.3f", v);
        char *e = t + strlen(t);
        while (e[-1] == '0')
            *--e = '\0';
        if (e[-1] == '.')
            e[-1] = '\0';
        if (strcmp(t, "-0") == 0)
            strcpy(t, "0");
    }
    strbuf_printf(b, "%s", t);
}

/* The value of "<group>:<name>", or NaN; found says whether it is there. */
static double get(const char *const *names, const double *values, size_t n, const char *name,
                  bool *found) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0) {
            if (found)
                *found = true;
            return values[i];
        }
    if (found)
        *found = false;
    return NAN;
}

static bool has_prefix(const char *s, const char *p) {
    return strncmp(s, p, strlen(p)) == 0;
}

static void sep(strbuf_t *b, const char *head) {
    strbuf_printf(b, "%s", b->len ? ", " : head);
}

static const char *unit_of(const char *signal) {
    return strcmp(signal, "kv_cache") == 0 ? "%" : "";
}

static void signals(const char *const *names, const double *values, size_t n, strbuf_t *b) {
    for (size_t i = 0; i < n; i++) {
        if (!has_prefix(names[i], "signal:"))
            continue;
        const char *sg = names[i] + 7;
        sep(b, "signals: ");
        strbuf_printf(b, "%s ", sg);
        num(b, values[i]);
        strbuf_printf(b, "%s", unit_of(sg));
        char need[160];
        snprintf(need, sizeof need, "need:%s", sg);
        bool found;
        double v = get(names, values, n, need, &found);
        if (found) {
            strbuf_printf(b, " (needs ");
            num(b, v);
            strbuf_printf(b, ")");
        }
    }
    /* needs of what is not a plain signal: the model, latency */
    for (size_t i = 0; i < n; i++) {
        if (!has_prefix(names[i], "need:"))
            continue;
        char sig[160];
        snprintf(sig, sizeof sig, "signal:%s", names[i] + 5);
        bool found;
        get(names, values, n, sig, &found);
        if (found)
            continue;
        sep(b, "signals: ");
        strbuf_printf(b, "%s needs ", names[i] + 5);
        num(b, values[i]);
    }
    for (size_t i = 0; i < n; i++)
        if (has_prefix(names[i], "decided_by:")) {
            strbuf_printf(b, "%sdecided by %s: ", b->len ? "; " : "signals: ", names[i] + 11);
            num(b, values[i]);
            strbuf_printf(b, " replicas");
        }
    if (b->len) {
        bool found;
        get(names, values, n, "active", &found);
        bool decided = false;
        for (size_t i = 0; i < n; i++)
            decided |= has_prefix(names[i], "decided_by:");
        if (found && !decided)
            strbuf_printf(b, "; no signal asks for replicas");
    }
}

static void latency(const char *const *names, const double *values, size_t n, strbuf_t *b) {
    for (size_t i = 0; i < n; i++) {
        if (!has_prefix(names[i], "latency:"))
            continue;
        const char *key = names[i] + 8; /* "ttft_p90" or "ttft_p90 (too few requests)" */
        size_t klen = strcspn(key, " ");
        const char *us = memchr(key, '_', klen);
        /* the quantile is after the last '_' ("queue_time_p99") */
        for (const char *p = key; p < key + klen; p++)
            if (*p == '_')
                us = p;
        sep(b, "latency: ");
        if (us)
            strbuf_printf(b, "%.*s %.*s ", (int)(us - key), key, (int)(key + klen - us - 1),
                          us + 1);
        else
            strbuf_printf(b, "%.*s ", (int)klen, key);
        if (isfinite(values[i])) {
            num(b, values[i]);
            strbuf_printf(b, " s");
        } else {
            strbuf_printf(b, "unknown (no request in the window)");
        }
        char t[200];
        snprintf(t, sizeof t, "latency_target:%.*s", (int)klen, key);
        strbuf_printf(b, " against ");
        num(b, get(names, values, n, t, NULL));
        strbuf_printf(b, " s");
        snprintf(t, sizeof t, "latency_requests:%.*s", (int)klen, key);
        bool found;
        double c = get(names, values, n, t, &found);
        if (found && isfinite(values[i])) {
            strbuf_printf(b, " (");
            num(b, c);
            strbuf_printf(b, " requests%s)", key[klen] ? ", too few to act on" : "");
        }
    }
}

static void engines(const char *const *names, const double *values, size_t n, int queueing,
                    strbuf_t *b) {
    bool has;
    double total = get(names, values, n, "engines:total", &has);
    if (has) {
        strbuf_printf(b, "engines: ");
        num(b, get(names, values, n, "engines:answering", NULL));
        strbuf_printf(b, " of ");
        num(b, total);
        strbuf_printf(b, " answering");
        static const char *const more[][2] = {{"engines:not_serving", "not serving"},
                                              {"engines:failing", "failing"},
                                              {"engines:pending", "waiting for a first poll"}};
        for (size_t k = 0; k < sizeof more / sizeof *more; k++) {
            double v = get(names, values, n, more[k][0], NULL);
            if (v > 0) {
                strbuf_printf(b, ", ");
                num(b, v);
                strbuf_printf(b, " %s", more[k][1]);
            }
        }
        for (size_t i = 0; i < n; i++)
            if (has_prefix(names[i], "not_serving:"))
                strbuf_printf(b, " (first: %s)", names[i] + 12);
        for (size_t i = 0; i < n; i++)
            if (has_prefix(names[i], "first_use_zero:")) {
                strbuf_printf(b, ", ");
                num(b, values[i]);
                strbuf_printf(b, " read as the engine's zero (first: %s)", names[i] + 15);
            }
        for (size_t i = 0; i < n; i++)
            if (has_prefix(names[i], "taking_turns:")) {
                strbuf_printf(b, ", ");
                num(b, values[i]);
                strbuf_printf(b,
                              " answered by processes taking turns (first: %s): a load-balanced "
                              "URL shows one replica a poll, whose counters teach the model no "
                              "rate; list each replica's URL, or use podSelector in the "
                              "aggregator role",
                              names[i] + 13);
            }
    }
    double ready = get(names, values, n, "pods:ready", &has);
    if (has) {
        strbuf_printf(b, "%spods: ", b->len ? "; " : "");
        num(b, ready);
        strbuf_printf(b, " Ready, ");
        num(b, get(names, values, n, "pods:starting", NULL));
        strbuf_printf(b, " starting");
    } else if (queueing && b->len) {
        strbuf_printf(b, "; no pod list (engine URLs, or the standalone role): the replicas the "
                         "model asked for count as starting until their engines answer "
                         "(podSelector in the aggregator role sees the pods themselves)");
    }
    for (size_t i = 0; i < n; i++)
        if (has_prefix(names[i], "wake:"))
            strbuf_printf(b, "%s%s", b->len ? "; " : "", names[i] + 5);
}

static bool model_name(const char *nm) {
    static const char *const groups[] = {
        "signal:",      "need:", "decided_by:",  "latency:", "latency_target:", "latency_requests:",
        "engines:",     "pods:", "not_serving:", "wake:",    "error:",          "first_use_zero:",
        "taking_turns:"};
    for (size_t k = 0; k < sizeof groups / sizeof *groups; k++)
        if (has_prefix(nm, groups[k]))
            return false;
    /* the cold-start line's; the model's own "cold_start_s:<from>" stays */
    static const char *const cold[] = {
        "cold_start:", "cold_start_failed:", "cold_start_waiting:", "cold_start_scheduler:"};
    for (size_t k = 0; k < sizeof cold / sizeof *cold; k++)
        if (has_prefix(nm, cold[k]))
            return false;
    return strcmp(nm, "value") != 0 && strcmp(nm, "active") != 0;
}

static void model(const char *const *names, const double *values, size_t n, strbuf_t *b) {
    for (size_t i = 0; i < n; i++) {
        if (!model_name(names[i]))
            continue;
        const char *from = strchr(names[i], ':');
        strbuf_printf(b, "%s%.*s ", b->len ? ", " : "queueing model: ",
                      (int)(from ? (size_t)(from - names[i]) : strlen(names[i])), names[i]);
        if (!isfinite(values[i]))
            strbuf_printf(b, "unknown");
        else
            strbuf_printf(b, "%.3g", values[i]);
        if (from)
            strbuf_printf(b, " (%s)", from + 1);
    }
}

/* The aggregator's cold starts of a podSelector workload: the mean stages
 * of the last completed starts, the failed starts by reason, and the pods
 * waiting for a node with the scheduler's word on why. */
static void cold_start(const char *const *names, const double *values, size_t n, strbuf_t *b) {
    bool has;
    double pods = get(names, values, n, "cold_start:pods", &has);
    if (!has)
        return;
    static const char *const stages[] = {"node", "image", "weights"};
    if (pods > 0) {
        double total = 0;
        for (size_t k = 0; k < 3; k++) {
            char nm[32];
            snprintf(nm, sizeof nm, "cold_start:%s", stages[k]);
            total += get(names, values, n, nm, NULL);
        }
        strbuf_printf(b, "cold start ");
        num(b, total);
        strbuf_printf(b, " s:");
        for (size_t k = 0; k < 3; k++) {
            char nm[32];
            snprintf(nm, sizeof nm, "cold_start:%s", stages[k]);
            strbuf_printf(b, "%s %s ", k ? "," : "", stages[k]);
            num(b, get(names, values, n, nm, NULL));
            strbuf_printf(b, " s");
        }
        strbuf_printf(b, ", last ");
        num(b, pods);
        strbuf_printf(b, " pod%s", pods == 1 ? "" : "s");
    } else {
        strbuf_printf(b, "cold start: no completed start seen yet");
    }
    double failed = 0;
    unsigned reasons = 0;
    for (size_t i = 0; i < n; i++)
        if (has_prefix(names[i], "cold_start_failed:")) {
            failed += values[i];
            reasons++;
        }
    const char *why = NULL;
    for (size_t i = 0; i < n; i++)
        if (has_prefix(names[i], "cold_start_scheduler:"))
            why = names[i] + 21;
    if (failed > 0) {
        strbuf_printf(b, "; ");
        num(b, failed);
        strbuf_printf(b, " failed start%s: ", failed == 1 ? "" : "s");
        bool first = true;
        for (size_t i = 0; i < n; i++) {
            if (!has_prefix(names[i], "cold_start_failed:"))
                continue;
            const char *reason = names[i] + 18;
            strbuf_printf(b, "%s", first ? "" : ", ");
            first = false;
            if (reasons > 1) {
                num(b, values[i]);
                strbuf_printf(b, " ");
            }
            strbuf_printf(b, "%s", reason);
            if (why && strcmp(reason, "Unschedulable") == 0)
                strbuf_printf(b, " (%s)", why);
        }
    }
    double waiting = get(names, values, n, "cold_start_waiting:pods", &has);
    if (has && waiting > 0) {
        strbuf_printf(b, "; ");
        num(b, waiting);
        strbuf_printf(b, " pod%s waiting for a node", waiting == 1 ? "" : "s");
        if (why)
            strbuf_printf(b, " (%s)", why);
    }
}

void explain_text(const char *const *names, const double *values, size_t n, int queueing,
                  strbuf_t out[EXPLAIN_LINES]) {
    signals(names, values, n, &out[EXPLAIN_SIGNALS]);
    latency(names, values, n, &out[EXPLAIN_LATENCY]);
    engines(names, values, n, queueing, &out[EXPLAIN_ENGINES]);
    model(names, values, n, &out[EXPLAIN_MODEL]);
    cold_start(names, values, n, &out[EXPLAIN_COLD_START]);
}
