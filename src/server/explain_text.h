/*
 * explain_text.h - a scaler's Explain answer (the decision behind a
 * trigger's value: named numbers, scaler/scaler.c handle_explain) as the
 * lines `keda-gpu-scaler query` prints. Pure: no I/O.
 */
#ifndef KGS_SERVER_EXPLAIN_TEXT_H
#define KGS_SERVER_EXPLAIN_TEXT_H

#include <stddef.h>

#include "core/strbuf.h"

typedef enum {
    EXPLAIN_SIGNALS, /* "signals: queue 12 (needs 2.4), ...; decided by queue: 2.4 replicas" */
    EXPLAIN_LATENCY, /* "latency: ttft p90 0.82 s against 0.5 s (40 requests), ..." */
    EXPLAIN_ENGINES, /* "engines: 0 of 1 answering, 1 not serving (...)" */
    EXPLAIN_MODEL,   /* "queueing model: replicas 3.2, lambda_rps 4 (learned), ..." */
    /* "cold start 128 s: node 61 s, image 38 s, weights 29 s, last 8 pods; 2 failed starts:
     * ImagePullBackOff" */
    EXPLAIN_COLD_START,
    EXPLAIN_LINES
} explain_line_t;

/* Renders names[i] = values[i] (i < n) into out[kind] (appended; a kind
 * with nothing to say stays empty). queueing: the trigger uses the
 * queueing model (a missing pod list is then worth saying). */
void explain_text(const char *const *names, const double *values, size_t n, int queueing,
                  strbuf_t out[EXPLAIN_LINES]);

#endif
