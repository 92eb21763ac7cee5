/*
 * report.h - the policy table (text) and the replicas-over-time plot (SVG).
 */
#ifndef SCALESIM_REPORT_H
#define SCALESIM_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "sim.h"

/* A result's reversals and max step as the table prints them ("-" where
 * undefined: no HPA sync, no pair of counts both > 0). */
void report_stability(const sim_result_t *r, char *reversals, size_t rlen, char *max_step,
                      size_t mlen);

/* Writes "cancelled_starts": N, "hpa_syncs": N, "reversals": N|null,
 * "max_step": X|null (JSON members, no braces) to f. */
void report_json_stability(FILE *f, const sim_result_t *r);

/* Writes the table of results r[0..n) for policies p[0..n) to f. */
void report_table(FILE *f, const sim_policy_t *p, const sim_result_t *r, size_t n,
                  double slo_wait_s);

/*
 * Writes an SVG to path: one panel per policy, its billed and serving
 * replicas over the demand (in replicas, shaded). demand has the same grid
 * as the results (step_s). Returns 0 or KGS_EIO with a message.
 */
int report_svg(const char *path, const sim_policy_t *p, const sim_result_t *r, size_t n,
               const float *demand, size_t points, double step_s, const char *title, char *err,
               size_t errlen);

/* Writes the timeline as CSV: t_s, demand, then billed and serving replicas
 * per policy. Returns 0 or KGS_EIO. */
int report_csv(const char *path, const sim_policy_t *p, const sim_result_t *r, size_t n,
               const float *demand, size_t points, double step_s, char *err, size_t errlen);

/*
 * Writes {"policies": [{"key", "label", "gpu_hours", "over_slo",
 * "warm_over_slo", "cold_starts", "peak_replicas", "wait_p50_s",
 * "wait_p99_s", ..., "cancelled_starts", "hpa_syncs", "reversals",
 * "max_step"}], "floor": {...}, "frontiers": [...]} to path ("-":
 * stdout); shares are fractions in [0, 1]. frontiers may be NULL (no
 * sweep). Returns 0 or KGS_EIO.
 */
typedef struct {
    double gpu_hours, over_slo, warm_over_slo;
    unsigned reversals; /* the online ideal's: its want at each 15 s, as a sync would read it */
    char knob[64];
} report_point_t;

typedef struct {
    const sim_policy_t *policy;
    size_t count;
    report_point_t points[48]; /* all points of the sweep */
    size_t pareto_count;
    report_point_t pareto[48]; /* the non-dominated ones, by over_slo ascending */
} report_frontier_t;

/* Fills f->pareto from f->points: the points no other point beats on both
 * GPU-hours and share over SLO. */
void report_pareto(report_frontier_t *f);

/* The fewest GPU-hours on f's frontier at a share over SLO <= over_slo
 * (linear between frontier points); a negative number when none is that
 * good. */
double report_frontier_at(const report_frontier_t *f, double over_slo);

/* A JSON output: stdout for "-", else the file created at path. NULL with
 * "write PATH: why" in err. Finish it with report_json_close(). */
FILE *report_json_open(const char *path, char *err, size_t errlen);

/* Flushes (stdout) or closes (a file) f; 0, or KGS_EIO "write PATH: I/O error". */
int report_json_close(FILE *f, const char *path, char *err, size_t errlen);

int report_json(const char *path, const sim_policy_t *p, const sim_result_t *r, size_t n,
                size_t floor_requests, size_t requests, const report_frontier_t *fr, size_t nfr,
                char *err, size_t errlen);

/* Writes the frontiers as a table. */
void report_frontier_table(FILE *f, const report_frontier_t *fr, size_t n);

/* Draws each policy's Pareto frontier (GPU-hours against share over SLO,
 * log scale) as an SVG at path, with the floor share (see sim_floor) as a
 * dashed line. Returns 0 or KGS_EIO. */
int report_frontier_svg(const char *path, const report_frontier_t *fr, size_t n, double floor_share,
                        const char *title, char *err, size_t errlen);

#endif
