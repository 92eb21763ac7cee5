/*
 * aggregate.h - folding per-GPU (or per-MIG-instance) values into the one
 * number KEDA receives.
 */
#ifndef KGS_CORE_AGGREGATE_H
#define KGS_CORE_AGGREGATE_H

#include <stddef.h>

#include "core/trigger_config.h"

/*
 * Aggregates n >= 1 values (v is not modified). sum/max/min/avg as named.
 * p95/p99 are nearest-rank over the sorted values, as in the Go system:
 * sorted[ceil(p/100 * n) - 1]. So on fewer than 20 values p95 is the max
 * (on exactly 20 it is the second largest), and on fewer than 100 values p99
 * is the max. Returns NAN when n == 0 or v == NULL.
 */
double aggregate(aggregation_t a, const double *v, size_t n);

#endif
