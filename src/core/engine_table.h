/*
 * engine_table.h - what each serving engine (and the endpoint picker)
 * exports on /metrics, release by release: one row per metric family the
 * scaler reads or recognises an engine by, with its type, unit, labels,
 * the release that added it (and renamed, hid or removed it), what one
 * observation of a histogram counts, and whether the engine creates it at
 * start, on first use, or only behind a flag.
 *
 * One table, three users: the readers (sources/engine_metrics.c) find a
 * sample's role in it; the errors of validate and of the RPCs quote it
 * when a page lacks what a trigger needs; docs/configuration.md renders
 * it (engine_table_markdown(); a unit test compares the two).
 *
 * Pure constant data: no I/O, no allocation, any thread.
 */
#ifndef KGS_CORE_ENGINE_TABLE_H
#define KGS_CORE_ENGINE_TABLE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/strbuf.h"
#include "core/trigger_config.h"

typedef enum { EM_GAUGE, EM_COUNTER, EM_HISTOGRAM } engine_metric_kind_t;

/* What the scaler reads a family for. */
typedef enum {
    EMR_IDENTITY,      /* read for nothing: its presence says the page is this engine */
    EMR_WAITING,       /* requests waiting (the engine's queue) */
    EMR_RUNNING,       /* requests in flight */
    EMR_KV,            /* KV-cache usage, a 0-1 fraction */
    EMR_QUEUE_US,      /* Triton: cumulative queue time, microseconds */
    EMR_SUCCESS,       /* Triton: cumulative successful requests (rates and completions) */
    EMR_COMPLETED,     /* cumulative completed requests */
    EMR_PROMPT_TOKENS, /* cumulative prompt tokens (a counter, or a histogram's _sum) */
    EMR_GEN_TOKENS,    /* cumulative generated tokens */
    EMR_LORA,          /* vLLM's LoRA state gauge */
    EMR_LATENCY,       /* a latency histogram; signal says which */
    EMR_EPP_FLOW,      /* EPP: the flow-control queue */
    EMR_EPP_READY,     /* EPP: ready model-server endpoints per pool */
    EMR_EPP_AVG_QUEUE, /* EPP: pool average of the servers' queues */
    EMR_EPP_AVG_RUNNING,
    EMR_EPP_AVG_KV,
    EMR_EPP_SATURATION, /* EPP: pool saturation (1.0 = the gating set point) */
    EMR_COUNT
} engine_metric_role_t;

/* What one observation of a histogram is. */
typedef enum {
    EMO_NONE,    /* not a histogram of latency */
    EMO_REQUEST, /* one per request */
    EMO_TOKEN,   /* one per generated token (or per decode step of a request) */
    EMO_CHUNK,   /* one per streamed output chunk (the request's mean so far) */
} engine_metric_obs_t;

/* When the engine creates the family. */
typedef enum {
    EMP_START,     /* from the start (a series, maybe of zeros) */
    EMP_FIRST_USE, /* on its first observation or set; absent before: the engine's zero */
    EMP_FLAG,      /* only with the option in `needs` */
} engine_metric_presence_t;

/* The latency signals of a trigger (slo_signal_t order, core/demand_eval.h):
 * TTFT, TPOT (per request), E2E, queue time, ITL (per token). */
#define ENGINE_TABLE_SIGNALS 5

typedef struct {
    engine_t engine;
    const char *name; /* the family as scraped: counters with _total, a histogram's base name */
    engine_metric_kind_t kind;
    engine_metric_role_t role;
    int signal; /* EMR_LATENCY: the slo_signal_t; -1 otherwise */
    int rank;   /* 0 the current name; 1 an older (or mirrored) name read only when no
                   family of rank 0 with the same role (and signal) is in the scrape */
    const char *unit;
    const char *labels; /* as the engine writes them ("" none) */
    const char *since;  /* the release that added it, product named ("vLLM 0.11.0"); "≤ X":
                           present at X, the oldest release covered */
    const char *until;  /* renamed, hidden or removed, and when ("" still exported) */
    engine_metric_obs_t per;
    engine_metric_presence_t presence;
    const char *needs; /* EMP_FLAG: the option that turns it on; else "" */
    size_t name_len;   /* strlen(name), counted when the table is compiled */
} engine_metric_t;

/* Every row, in the order the docs show them; *count set. */
const engine_metric_t *engine_table_rows(size_t *count);

/* The row of engine e whose family is name[0..n) (a histogram's base name,
 * a TGI token histogram's _sum sample, or a full sample name), or NULL. */
const engine_metric_t *engine_table_find(engine_t e, const char *name, size_t n);

/* The current (rank 0) row of e for role (and, for EMR_LATENCY, signal),
 * or NULL when e exports none. */
const engine_metric_t *engine_table_primary(engine_t e, engine_metric_role_t role, int signal);

/* "vLLM", "Triton", "TGI", "SGLang", "the endpoint picker"; "" none. */
const char *engine_table_product(engine_t e);

/* What one observation counts, in words ("one per request", ...; "" for
 * EMO_NONE). */
const char *engine_table_obs_words(engine_metric_obs_t per);

/*
 * Why a page that is recognisably e lacks row m, for an error: "<name>
 * (<kind>, <what one observation counts>) is not in the scrape: <product>
 * exports it only with <needs>" or "... added it in <since>: this server
 * is older". Written into buf (always NUL-terminated); returns buf.
 */
const char *engine_table_missing(const engine_metric_t *m, char *buf, size_t len);

/*
 * engine_table_missing() for whichever row of e serves role (and signal,
 * for EMR_LATENCY): with one row, that row; with an older name beside the
 * current one, both: "none of <a> (<since a>), <b> (<since b>) is in the
 * scrape: ...". "" (and buf) when e has no such row.
 */
const char *engine_table_missing_role(engine_t e, engine_metric_role_t role, int signal, char *buf,
                                      size_t len);

/* The Markdown table docs/configuration.md shows (header, separator, one
 * line per row, each ending in '\n'), appended to out. */
void engine_table_markdown(strbuf_t *out);

#endif
