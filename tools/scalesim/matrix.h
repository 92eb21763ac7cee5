/*
 * matrix.h - `scalesim matrix`: the operating-point matrix that judges the
 * demand controller (bench/README.md, "Matrix"). Every trace (the Azure conv
 * trace and the Mooncake trace from files, the poisson, onoff and diurnal
 * generators) x replay speed x cold start x KV cache is a case; per case the
 * chosen KEDA policies (default: (o) ours and (d) composite) and the online
 * ideal swept over its target utilisation and hold. A policy's GPU-hours are
 * compared with the ideal's Pareto frontier at the policy's own share of
 * requests over the SLO. Deterministic: the same configuration gives the same
 * figures.
 *
 * The pure parts (the frontier comparison, the summary) take numbers and
 * return numbers; matrix_run does the simulations; the writers print.
 */
#ifndef SCALESIM_MATRIX_H
#define SCALESIM_MATRIX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "policies.h"
#include "report.h"
#include "sim.h"
#include "stability.h"

typedef enum {
    MATRIX_CONV,
    MATRIX_MOONCAKE,
    MATRIX_POISSON,
    MATRIX_ONOFF,
    MATRIX_DIURNAL,
    MATRIX_TRACES /* the count */
} matrix_trace_t;

/* "conv", "mooncake", "poisson", "onoff", "diurnal". */
const char *matrix_trace_name(matrix_trace_t t);

/* The trace named name; -1 when unknown. */
int matrix_trace_parse(const char *name);

#define MATRIX_MAX_VALUES 8
#define MATRIX_SPEED_MIN 0.01 /* replay speeds (the generators: rate multipliers) */
#define MATRIX_SPEED_MAX 100.0
#define MATRIX_KV_MIN 1000.0 /* KV cache sizes in tokens */
#define MATRIX_KV_MAX 1e9
#define MATRIX_POLICY_LETTERS "abcdeosl" /* the KEDA policies of policies.h */
/* A case is overloaded when even the online ideal's best point misses the
 * SLO for more than this share of requests: reported, not judged. */
#define MATRIX_OVERLOAD_SHARE 0.25
/* The online ideal's sweep: utilisation 0.3 .. 0.9 step 0.1 x hold (its
 * scale-down delay) 60 s and 300 s, drain 10 s (its arrival window stays
 * the bench's 60 s). The long hold is what the ideal needs on traffic that
 * pauses for less than a cold start (on/off); the short one what steady
 * traffic needs. */
#define MATRIX_IDEAL_UTILS 7
#define MATRIX_IDEAL_HOLDS 2
#define MATRIX_IDEAL_POINTS (MATRIX_IDEAL_UTILS * MATRIX_IDEAL_HOLDS)
#define MATRIX_IDEAL_DRAIN_S 10
#define MATRIX_IDEAL_HOLD_SHORT_S 60
#define MATRIX_IDEAL_HOLD_LONG_S 300
#define MATRIX_FLOOR_IDLE_S 300 /* a wake for the floor: an arrival after 300 s idle */
/* The real traces' replay (bench/scalesim-run): 3 passes 1200 s apart, each
 * ramped up and down over 300 s, or over 40 % of a pass when that is shorter
 * (a pass under 750 s), so the ramps never thin away most of a fast replay. */
#define MATRIX_REPS 3
#define MATRIX_GAP_S 1200
#define MATRIX_RAMP_S 300
#define MATRIX_RAMP_SHARE 0.4

typedef struct {
    bool traces[MATRIX_TRACES]; /* which traces run */
    double speeds[MATRIX_MAX_VALUES];
    size_t nspeeds;
    double cold_s[MATRIX_MAX_VALUES]; /* cold starts, seconds create to Ready */
    size_t ncold;
    double kv_tokens[MATRIX_MAX_VALUES];
    size_t nkv;
    char policies[POLICY_COUNT + 1]; /* KEDA policies by letter, e.g. "od" (run in this order) */
    const char *conv_path;           /* borrowed */
    const char *mooncake_path;       /* borrowed */
    double syn_duration_s;           /* > 0: every generator's duration; 0: their own */
} matrix_config_t;

/* The whole matrix: every trace, speeds 1/2/4, cold starts 60/135/300 s, KV
 * 100k/400k tokens, policies "od", the shared data's paths relative to the
 * repository root. */
void matrix_config_default(matrix_config_t *c);

/* One policy in one case. */
typedef struct {
    char id;
    char key[16]; /* "ours", "composite", or the letter */
    double gpu_hours, over_slo;
    /* the ideal's frontier at over_slo (linear between its points); when
     * over_slo lies below every frontier point, its lowest-share point and
     * below is set */
    double frontier_gpu_hours, ratio;
    bool below;
    unsigned cold_starts, cancelled_starts;
    stability_t stability;
} matrix_result_t;

typedef struct {
    matrix_trace_t trace;
    double speed, cold_s, kv_tokens;
    double ramp_s; /* the real traces' ramps at this speed; 0 for the generators */
    size_t requests;
    report_frontier_t ideal; /* the sweep's points and Pareto frontier (ideal.policy NULL) */
    double best_over_slo;    /* the lowest share over the SLO of the ideal's points */
    double floor_over_slo;   /* arrivals within a cold start of a wake (sim_floor, 300 s idle) */
    bool overloaded;         /* best_over_slo > MATRIX_OVERLOAD_SHARE */
    size_t npol;
    matrix_result_t pol[POLICY_COUNT];
    /* ours against composite: 1 when ours uses more GPU-hours AND misses the
     * SLO for more requests, 0 when not, -1 when either was not run */
    int ours_loses;
} matrix_case_t;

/* "conv x1 cold 60s kv 100k" into buf. */
void matrix_case_label(const matrix_case_t *c, char *buf, size_t len);

/*
 * Compares gpu_hours at share over_slo with frontier f (its pareto points,
 * ascending in share): *frontier_gpu_hours is report_frontier_at() there;
 * when no frontier point is that good, the lowest-share point's GPU-hours and
 * *below = true. Returns gpu_hours / *frontier_gpu_hours; 0 when f has no
 * frontier point (then *frontier_gpu_hours is 0). Pure.
 */
double matrix_frontier_compare(const report_frontier_t *f, double gpu_hours, double over_slo,
                               double *frontier_gpu_hours, bool *below);

/* The median of v[0..n) (sorted in place; n even: the mean of the middle
 * two); 0 when n is 0. */
double matrix_median(double *v, size_t n);

/* What the summary says of one policy over cases[0..n). */
typedef struct {
    char id;
    char key[16];
    size_t cases;         /* cases it ran in */
    size_t judged;        /* of those, not overloaded */
    size_t below;         /* judged cases below the frontier (ratio to its lowest-share point) */
    double ratio_median;  /* GPU-h / frontier over the judged cases */
    double ratio_worst;   /* the largest of them */
    size_t worst;         /* index into cases of the largest; n when judged is 0 */
    unsigned cancelled;   /* cancelled starts, every case */
    unsigned reversals;   /* reversals, every case */
    double max_step;      /* the largest max_step, every case; 0 when none defined */
    unsigned cold_starts; /* every case */
} matrix_policy_summary_t;

typedef struct {
    size_t cases, overloaded;
    size_t compared;      /* cases with both ours and composite */
    size_t losses;        /* of those, ours loses on both axes */
    size_t losses_judged; /* of those, not overloaded */
    size_t npol;          /* policies summarised */
    matrix_policy_summary_t pol[POLICY_COUNT];
    /* the online ideal's best points' reversals, every case: the turns of
     * the traffic itself, a reference for the policies' */
    unsigned ideal_reversals;
} matrix_summary_t;

/* Summarises cases[0..n) (each with the same policies, in the same order).
 * Scratch for the medians is allocated; returns 0 or KGS_ENOMEM. */
int matrix_summarise(const matrix_case_t *cases, size_t n, matrix_summary_t *out);

/* Checks c's lists (each non-empty and in range, the policy letters known
 * and not repeated) and counts its cases. 0, or KGS_EINVAL naming the flag,
 * the value and what is valid. */
int matrix_config_check(const matrix_config_t *c, size_t *ncases, char *err, size_t errlen);

/* Called after each case: the caller prints it as it comes. */
typedef void (*matrix_case_cb)(const matrix_case_t *c, size_t index, size_t total, void *ud);

/*
 * Runs the matrix of c: *cases (returned, free()) holds *n cases in the
 * order trace, speed, cold start, KV. *sims counts the simulations. Returns
 * 0; KGS_EINVAL naming the bad value (an unknown policy letter, an empty
 * list, a cold start out of range, a trace file that does not load: the
 * message names the path and the flag); KGS_ENOMEM.
 */
int matrix_run(const matrix_config_t *c, matrix_case_cb cb, void *ud, matrix_case_t **cases,
               size_t *n, size_t *sims, char *err, size_t errlen);

/* The text table: the header, one case's rows, the summary. */
void matrix_print_header(FILE *f);
void matrix_print_case(FILE *f, const matrix_case_t *c);
void matrix_print_summary(FILE *f, const matrix_case_t *cases, const matrix_summary_t *s);

/* The configuration, every case and the summary as JSON, or as Markdown
 * (bench/README.md's block: the summary, then every case in a <details>
 * element), to path ("-": stdout). 0 or KGS_EIO naming it. */
int matrix_json(const char *path, const matrix_config_t *c, const matrix_case_t *cases, size_t n,
                const matrix_summary_t *s, char *err, size_t errlen);
int matrix_markdown(const char *path, const matrix_case_t *cases, size_t n,
                    const matrix_summary_t *s, char *err, size_t errlen);

#endif
