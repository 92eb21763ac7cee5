/*
 * trace.h - a request trace for the simulator: the Azure LLM inference
 * trace's CSV (TIMESTAMP,ContextTokens,GeneratedTokens) or any CSV whose
 * first column is seconds, replayed with a time scale, repetitions and idle
 * gaps between them (so scale-to-zero and wake-up are exercised).
 */
#ifndef SCALESIM_TRACE_H
#define SCALESIM_TRACE_H

#include <stddef.h>

typedef struct {
    double arrival_s; /* from the start of the replay */
    unsigned ctx_tokens;
    unsigned gen_tokens;
} trace_request_t;

typedef struct {
    double time_scale;    /* > 0: 2 replays twice as fast (twice the load) */
    unsigned repetitions; /* >= 1 */
    double gap_s;         /* idle seconds between repetitions, >= 0 */
    double limit_s;       /* > 0: only the first limit_s seconds of the source (before scaling) */
    double ramp_s;        /* > 0: each repetition ramps up over its first ramp_s seconds and down
                             over its last (after scaling), by keeping a request with probability
                             min(1, t / ramp, (span - t) / ramp); a seeded hash decides, so the
                             result is deterministic */
} trace_options_t;

typedef struct {
    trace_request_t *reqs; /* owned; sorted by arrival */
    size_t count;
    double end_s;        /* the last arrival */
    size_t source_count; /* requests read from the file (one repetition) */
} trace_t;

/* Options with no change: scale 1, 1 repetition, no gap, no limit. */
void trace_options_default(trace_options_t *o);

/*
 * Parses CSV text (a header line, then TIMESTAMP,ContextTokens,
 * GeneratedTokens; TIMESTAMP "YYYY-MM-DD HH:MM:SS[.frac]" or seconds) into
 * *out, applying o. Returns 0, KGS_EINVAL with the line number in err, or
 * KGS_ENOMEM. *out is zeroed on failure. Release with trace_deinit().
 */
int trace_parse(const char *text, size_t len, const trace_options_t *o, trace_t *out, char *err,
                size_t errlen);

/* Reads the file at path and parses it (KGS_EIO when unreadable). */
int trace_load(const char *path, const trace_options_t *o, trace_t *out, char *err, size_t errlen);

/* Frees what *t owns; t may be NULL or zeroed. */
void trace_deinit(trace_t *t);

#endif
