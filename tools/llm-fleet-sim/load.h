/*
 * load.h - the request load llm-fleet-sim plays: a burst of chat requests
 * whose arrival rate follows a piecewise-linear profile (requests/s at
 * given times, linear in between, 0 after the last point), arriving as a
 * non-homogeneous Poisson process, each with prompt and output lengths
 * drawn from ranges. Seeded and deterministic: the same seed and the same
 * calls give the same requests.
 *
 * Pure: no I/O, no clock (times are arguments, in the simulation's seconds),
 * no allocation. A load_t is caller-owned; one writer.
 */
#ifndef LFS_LOAD_H
#define LFS_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LOAD_MAX_POINTS 16
#define LOAD_STEP_S 0.01
#define LOAD_MAX_CALL_S 600.0

typedef struct {
    double t_s; /* from the start of the burst */
    double rps; /* arrival rate at t_s, >= 0 */
} load_point_t;

typedef struct {
    double arrive_s;        /* simulation time it arrived */
    unsigned prompt_tokens; /* >= 1 */
    unsigned output_tokens; /* >= 1: tokens it will generate (max_tokens applied) */
    bool hit_max_tokens;    /* it stops at max_tokens (vLLM finished_reason "length"),
                               else at a stop token ("stop") */
} load_request_t;

typedef struct {
    /* public: the profile and the request mix (load_init sets the demo's) */
    load_point_t profile[LOAD_MAX_POINTS];
    size_t npoints;      /* 1..LOAD_MAX_POINTS, t_s strictly ascending, first t_s 0 */
    unsigned prompt_min; /* prompt tokens, uniform in [min, max] */
    unsigned prompt_max;
    unsigned output_min; /* output the model wants, uniform in [min, max] ... */
    unsigned output_max;
    unsigned max_tokens; /* ... cut at max_tokens (the request's limit) */
    /* private */
    uint64_t _rng;
    double _start_s; /* simulation time of the burst's t_s 0 */
    double _done_s;  /* arrivals generated up to here */
    double _hazard;  /* integral of the rate since the last arrival */
    double _next;    /* the Exp(1) threshold of the next arrival */
} load_t;

/*
 * The demo's burst, in a real fleet's seconds: idle for 30 s, the rate
 * rises to 6 requests/s over 60 s, holds for 120 s, falls to 0 over 60 s
 * (about 1 300 requests); prompts 200-1 000 tokens, outputs 50-600 cut at
 * max_tokens 512. The burst starts at start_s.
 */
void load_init(load_t *l, uint64_t seed, double start_s);

/* Checks the public fields; 0, or KGS_EINVAL naming the bad field and what
 * is valid. */
int load_validate(const load_t *l, char *err, size_t errlen);

/* Starts the burst again at start_s (the profile's t_s 0), same mix; the
 * random stream continues, so a second burst is not a copy of the first. */
void load_restart(load_t *l, double start_s);

/* The arrival rate at simulation time t_s (0 before the start and after the
 * last point). */
double load_rate(const load_t *l, double t_s);

/* Simulation time after which no request arrives (the last point's). */
double load_end_s(const load_t *l);

/*
 * The requests arriving in (last call's t, t_s], in order, at most max of
 * them into out (the rest arrive in the next call: none is lost). The rate
 * is integrated in steps of LOAD_STEP_S, so an arrival time is exact to
 * that; a call covers at most LOAD_MAX_CALL_S (a later call continues).
 * Returns how many were written.
 */
size_t load_arrivals(load_t *l, double t_s, load_request_t *out, size_t max);

#endif
