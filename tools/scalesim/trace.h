/*
 * trace.h - a request trace for the simulator, from
 * - the Azure LLM inference trace's CSV (TIMESTAMP,ContextTokens,
 *   GeneratedTokens) or any CSV whose first column is seconds;
 * - the Mooncake trace's JSON Lines ({"timestamp": MS, "input_length": N,
 *   "output_length": N, ...} a line; other keys are ignored);
 * - a synthetic generator (Poisson, bursty on-off, diurnal ramp; seeded and
 *   deterministic), for unit tests and the CLI;
 * replayed with a time scale, repetitions and idle gaps between them (so
 * scale-to-zero and wake-up are exercised).
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

typedef enum { TRACE_AUTO = 0, TRACE_CSV, TRACE_JSONL } trace_format_t;

/* The format of text: JSON Lines when its first non-blank byte is '{', else
 * CSV. */
trace_format_t trace_detect(const char *text, size_t len);

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

/*
 * Parses JSON Lines text (Mooncake: timestamp in milliseconds, input_length,
 * output_length; blank lines skipped) into *out, applying o. The same
 * returns as trace_parse(), the message naming the line and the key.
 */
int trace_parse_jsonl(const char *text, size_t len, const trace_options_t *o, trace_t *out,
                      char *err, size_t errlen);

/* Reads the file at path and parses it in format f (TRACE_AUTO: by content,
 * trace_detect). KGS_EIO when unreadable. */
int trace_load(const char *path, trace_format_t f, const trace_options_t *o, trace_t *out,
               char *err, size_t errlen);

typedef enum { TRACE_SYN_POISSON, TRACE_SYN_ONOFF, TRACE_SYN_DIURNAL } trace_synth_kind_t;

typedef struct {
    trace_synth_kind_t kind;
    double duration_s; /* > 0 */
    double rate;       /* requests/s: Poisson; on-off while on; diurnal at the trough */
    double peak_rate;  /* diurnal: at the crest (>= rate) */
    double on_s;       /* on-off: burst length */
    double off_s;      /* on-off: silence between bursts (no arrivals) */
    double period_s;   /* diurnal: one trough-crest-trough cycle */
    unsigned ctx_tokens, gen_tokens; /* means; each request draws uniformly in [0.5, 1.5] x */
    unsigned long long seed;
} trace_synth_t;

/* Poisson at 5 req/s for 600 s, 1000 prompt and 200 output tokens, seed 1;
 * on-off 60 s on / 120 s off; diurnal from 1 to 10 req/s over 600 s. */
void trace_synth_default(trace_synth_t *g, trace_synth_kind_t kind);

/* "poisson", "onoff", "diurnal" -> kind; -1 when unknown. */
int trace_synth_kind_parse(const char *name);

/*
 * Generates g's arrivals (a non-homogeneous Poisson process by thinning,
 * from a splitmix64 stream seeded by g->seed: the same g gives the same
 * trace) and applies o. Returns 0, KGS_EINVAL naming the bad parameter,
 * KGS_ENOMEM.
 */
int trace_synthesize(const trace_synth_t *g, const trace_options_t *o, trace_t *out, char *err,
                     size_t errlen);

/* Frees what *t owns; t may be NULL or zeroed. */
void trace_deinit(trace_t *t);

#endif
