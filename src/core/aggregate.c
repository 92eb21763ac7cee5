/*
 * aggregate.c - sum, max, min, avg and nearest-rank percentiles.
 *
 * Percentiles follow the Go system exactly (sort ascending, take index
 * ceil(p * n) - 1, clamped), so p95 is the max on fewer than 20 values and
 * p99 on fewer than 100. On real nodes (<= 8 GPUs, <= 56 MIG instances) they are the max;
 * docs/configuration.md says so. Sorting uses a small stack buffer and
 * insertion sort: n is the number of GPUs or MIG instances of one node or
 * workload, and larger inputs fall back to a selection without sorting.
 */
#include "core/aggregate.h"

#include <math.h>
#include <stdlib.h>

#define SORT_MAX 256

/* The k-th smallest (0-based) of v[0..n) without modifying v: O(n^2) worst
 * case, used only beyond SORT_MAX values. */
static double kth_smallest(const double *v, size_t n, size_t k) {
    for (size_t i = 0; i < n; i++) {
        size_t less = 0, equal = 0;
        for (size_t j = 0; j < n; j++) {
            if (v[j] < v[i])
                less++;
            else if (v[j] == v[i])
                equal++;
        }
        if (k >= less && k < less + equal)
            return v[i];
    }
    return v[n - 1]; /* unreachable for non-NaN input */
}

static double percentile(const double *v, size_t n, double p) {
    if (n == 0)
        return NAN;
    double r = ceil(p * (double)n) - 1.0;
    size_t k = r < 0 ? 0 : (size_t)r;
    if (k >= n)
        k = n - 1;
    if (n > SORT_MAX)
        return kth_smallest(v, n, k);
    double s[SORT_MAX];
    for (size_t i = 0; i < n; i++) {
        double x = v[i];
        size_t j = i;
        while (j > 0 && s[j - 1] > x) {
            s[j] = s[j - 1];
            j--;
        }
        s[j] = x;
    }
    return s[k];
}

double aggregate(aggregation_t a, const double *v, size_t n) {
    if (!v || n == 0)
        return NAN;
    double acc = v[0];
    switch (a) {
    case AGG_SUM:
    case AGG_AVG:
        for (size_t i = 1; i < n; i++)
            acc += v[i];
        return a == AGG_SUM ? acc : acc / (double)n;
    case AGG_MAX:
        for (size_t i = 1; i < n; i++)
            if (v[i] > acc)
                acc = v[i];
        return acc;
    case AGG_MIN:
        for (size_t i = 1; i < n; i++)
            if (v[i] < acc)
                acc = v[i];
        return acc;
    case AGG_P95:
        return percentile(v, n, 0.95);
    case AGG_P99:
        return percentile(v, n, 0.99);
    }
    return NAN;
}
