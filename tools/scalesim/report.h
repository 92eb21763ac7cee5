/*
 * report.h - the policy table (text) and the replicas-over-time plot (SVG).
 */
#ifndef SCALESIM_REPORT_H
#define SCALESIM_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "sim.h"

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

#endif
