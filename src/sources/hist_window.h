/*
 * hist_window.h - latency quantiles over a sliding window, from the
 * cumulative Prometheus histograms (vLLM's time to first token, SGLang's,
 * TGI's, Triton's) of every pod of a workload. Pure: no I/O, no clock, no
 * allocation; the caller owns every struct.
 *
 * Why windowed deltas: an engine's buckets count since the process
 * started, so a quantile over them reflects all of history and never comes
 * down after a slow hour. What matters for scaling is the last
 * windowSeconds, so each pod's buckets are diffed against its previous
 * scrape and the increases are kept in time slots.
 *
 * Why merge buckets, not quantiles: the p90 of a workload is not the mean
 * (or max) of its pods' p90s. Buckets with the same bounds add, so the
 * window holds one merged histogram per slot, and the quantile is taken
 * once, from the merged counts, as Prometheus' histogram_quantile does.
 *
 * A pod's first scrape is a baseline (it says nothing about the window)
 * unless the caller knows the process started inside it (e.g. from
 * process_start_time_seconds), when everything it counted is new. A count
 * that goes down is a restart: what the pod reports then is all new since
 * the restart, as Prometheus' increase() reads it.
 */
#ifndef KGS_SOURCES_HIST_WINDOW_H
#define KGS_SOURCES_HIST_WINDOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Finite upper bounds a histogram may have (vLLM's largest has 22; the
 * "+Inf" bucket is kept apart, in `count`). */
#define HIST_MAX_BUCKETS 40
/* Time slots kept: at a spacing of window / 32 they cover the window twice. */
#define HIST_WINDOW_SLOTS 64

/* Bucket upper bounds, strictly increasing and finite. */
typedef struct {
    unsigned n;
    double le[HIST_MAX_BUCKETS];
} hist_layout_t;

/* Counts per bucket, cumulative as in the exposition (bucket[i] counts
 * observations <= le[i]); count is the +Inf bucket (= the _count sample). */
typedef struct {
    double bucket[HIST_MAX_BUCKETS];
    double count;
    double sum;
} hist_counts_t;

/*
 * Collecting one pod's histogram from its samples, in any order:
 * hist_collect_bucket for each `_bucket` sample (le is the label's text:
 * "0.005", "1e-3", "+Inf"), hist_collect_sum for `_sum`, then
 * hist_collect_finish, which sorts the bounds and checks them. Caller-owned;
 * zero it to start. Fields private.
 */
typedef struct {
    unsigned _n;
    double _le[HIST_MAX_BUCKETS];
    double _v[HIST_MAX_BUCKETS];
    double _inf, _sum;
    bool _has_inf, _has_sum;
} hist_collect_t;

/* 0, or KGS_EINVAL with a reason in err (NULL allowed): an le that is not
 * a number, a bound given twice, more than HIST_MAX_BUCKETS bounds, a
 * negative or non-finite count. Never quotes the label's bytes beyond 16. */
int hist_collect_bucket(hist_collect_t *c, const char *le, double value, char *err, size_t errlen);
/* hist_collect_bucket with the bound already a number (inf: the +Inf
 * bucket, bound ignored), for callers that parsed the le label themselves. */
int hist_collect_bound(hist_collect_t *c, double bound, bool inf, double value, char *err,
                       size_t errlen);

/* An le label's text as a number: Go ParseFloat syntax as the exposition
 * uses it ("0.005", "1e-3", "+Inf"); inf is set for +Inf. false: not a
 * number (or longer than 64 bytes, or hexadecimal). */
bool hist_parse_le(const char *le, double *v, bool *inf);

void hist_collect_sum(hist_collect_t *c, double value);

/* Fills layout and counts. KGS_EINVAL when there is no +Inf bucket, or a
 * bucket counts fewer than the one below it (a broken exposition, not
 * float noise: Prometheus' own clients never emit it). */
int hist_collect_finish(const hist_collect_t *c, hist_layout_t *layout, hist_counts_t *counts,
                        char *err, size_t errlen);

/* Whether two layouts have the same bounds (buckets then add). */
bool hist_layout_equal(const hist_layout_t *a, const hist_layout_t *b);

/* One pod's previous scrape. Caller-owned; zero it to start. */
typedef struct {
    hist_counts_t _last;
    bool _seen;
} hist_pod_t;

/*
 * Records a pod's new cumulative counts and writes what it counted since
 * its previous scrape to delta. Returns false (delta untouched) on the first
 * scrape of a pod unless since_start (its process started inside the
 * window: all it counted is new). A drop in count or any bucket is a restart:
 * delta = now.
 */
bool hist_pod_delta(hist_pod_t *pod, const hist_counts_t *now, bool since_start, unsigned nbuckets,
                    hist_counts_t *delta);

typedef struct {
    uint64_t at_ns;
    hist_counts_t c;
} hist_slot_t;

/* The merged increases of every pod, in time slots. Caller-owned; zero it
 * to start (then hist_window_reset to give it a layout). Fields private. */
typedef struct {
    hist_layout_t _layout;
    hist_slot_t _s[HIST_WINDOW_SLOTS];
    unsigned _n, _first;
} hist_window_t;

/* Empties the window and gives it a layout (when the engine's buckets
 * change, e.g. after an upgrade, the old slots cannot be merged). */
void hist_window_reset(hist_window_t *w, const hist_layout_t *layout);
const hist_layout_t *hist_window_layout(const hist_window_t *w);

/* Adds one pod's delta (in the window's layout) at at_ns (monotonic, not
 * decreasing): into the newest slot while it is less than spacing_ns old,
 * else into a new slot (the oldest is dropped when all are used). */
void hist_window_add(hist_window_t *w, uint64_t at_ns, const hist_counts_t *delta,
                     uint64_t spacing_ns);

/* The merged increases of the slots newer than now_ns - window_ns. Returns
 * the number of observations in them (0: nothing happened in the window,
 * which is "unknown", not a latency of 0). */
double hist_window_sum(const hist_window_t *w, uint64_t now_ns, uint64_t window_ns,
                       hist_counts_t *out);

/*
 * The q-quantile (0 < q < 1) of counts, as Prometheus' histogram_quantile
 * computes it: linear interpolation inside the bucket holding rank q*count
 * (from 0 in the first bucket when its bound is positive); in the +Inf
 * bucket, the largest finite bound (the true value is above it: a latency
 * target should be below that bound to be judged). Returns false when
 * count is 0 (no observations: unknown).
 */
bool hist_quantile(const hist_layout_t *layout, const hist_counts_t *counts, double q, double *out);

#endif
