/*
 * cold_start.h - one workload's cold starts (issue 33): the stages of its
 * last completed starts, a histogram of every stage since this process
 * began, and its failed starts by reason. Pure: no I/O, no clock reads;
 * one owner thread (the loop).
 *
 * It learns by rounds: the caller passes every pod of the workload (any
 * phase) between cold_start_round_begin() and _end(), as often as it
 * likes. A pod counts once, at the first round that sees it:
 *   - Ready with all its stage times (pod_start_stages()): a completed
 *     start, into the last COLD_START_KEEP and the histograms;
 *   - in trouble other than Unschedulable (ErrImagePull, ImagePullBackOff,
 *     CrashLoopBackOff, OOMKilled, other): a failed start with that
 *     reason. It stays failed even if it later becomes Ready: its stages
 *     then hold back-off waits, not what a stage costs;
 *   - gone (deleted, Failed, Succeeded) before Ready: a failed start if it
 *     was Unschedulable (its node never came), else nothing (a start KEDA
 *     scaled in before it finished failed at nothing).
 * Unschedulable alone is no failure while the pod waits: that wait is the
 * node stage (a cluster autoscaler or Karpenter adding a node).
 * Counts are made at the end of a round, so a round that runs out of
 * memory counts nothing and the next one counts it all.
 * Memory: the record (~1.5 KiB) plus 24 bytes per pod of the workload
 * seen in the last round (twice that during a round).
 */
#ifndef KGS_CLUSTER_COLD_START_H
#define KGS_CLUSTER_COLD_START_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/clock.h"
#include "core/label_selector.h"
#include "kube/kube_pods.h"
#include "kube/pod_start.h"

/* The completed starts the summary (Explain, query) averages. */
#define COLD_START_KEEP 8
/* Stage histogram buckets (upper bounds, seconds): 1 s .. 20 min; +Inf
 * beyond. A node takes minutes, an image tens of seconds to minutes,
 * weights seconds to minutes. */
#define COLD_START_BUCKETS 14

/* The upper bounds of the histogram buckets, COLD_START_BUCKETS of them.
 * Static. */
const double *cold_start_bucket_bounds(void);

/* Storage is the caller's (cold_start_init/_deinit). Fields not starting
 * with '_' are read-only for callers. */
typedef struct {
    /* the last completed starts, newest at last[(next + KEEP - 1) % KEEP] */
    double last[COLD_START_KEEP][POD_STAGE_COUNT];
    unsigned nlast, next;
    uint64_t completed; /* completed starts since init */
    /* per stage: counts per bucket (not cumulative; the last is +Inf), sum */
    uint64_t hist[POD_STAGE_COUNT][COLD_START_BUCKETS + 1];
    double hist_sum[POD_STAGE_COUNT];
    uint64_t failed[POD_TROUBLE_COUNT]; /* failed starts by reason ([NONE] stays 0) */
    pod_trouble_t last_failed;          /* the reason of the latest failed start; NONE: none */
    /* the scheduler's message of the latest Unschedulable pod seen */
    char unschedulable_message[POD_START_MESSAGE_MAX + 1];
    unsigned waiting_for_node; /* pods Unschedulable in the last round */
    /* private: the last round's pods, sorted by id; those of the round
     * being built; whether it ran out of memory */
    struct cold_start_pod *_prev, *_cur;
    size_t _nprev, _ncur, _capcur;
    bool _in_round, _round_failed;
} cold_start_t;

void cold_start_init(cold_start_t *r);
/* Frees what r holds; r may be initialised again. */
void cold_start_deinit(cold_start_t *r);

/* A round: begin, every pod of the workload (borrowed for the call), end.
 * _end returns 0, or KGS_ENOMEM when a pod could not be kept: the round is
 * then dropped whole and r stays as it was before it began (what it would
 * have counted, the next round that succeeds counts). */
void cold_start_round_begin(cold_start_t *r);
void cold_start_round_pod(cold_start_t *r, const pod_t *p);
int cold_start_round_end(cold_start_t *r);

/* The mean of each stage over the last nlast completed starts (NaN when
 * none) into mean_s; returns nlast. */
unsigned cold_start_mean(const cold_start_t *r, double mean_s[POD_STAGE_COUNT]);

/* Failed starts since init, all reasons. */
uint64_t cold_start_failed_total(const cold_start_t *r);

/* ---- the workloads' records --------------------------------------------------------- */

/* Workloads (namespace + podSelector) with a record; the least recently
 * used one makes room for a new one beyond this (its series leave
 * /metrics). Each holds ~2.7 KiB. */
#define COLD_START_WORKLOADS 64

typedef struct {
    char ns[KUBE_NAMESPACE_MAX + 1];
    char selector[LABEL_SELECTOR_MAX_LEN + 1]; /* label_selector_format()'s canonical text */
    cold_start_t rec;
    mono_ns_t last_round; /* read-write for the caller: when it last ran a round */
    mono_ns_t last_used;  /* private */
} cold_start_workload_t;

/* Storage is the caller's: zero it (or cold_start_book_init), free with
 * cold_start_book_deinit. */
typedef struct {
    cold_start_workload_t *w[COLD_START_WORKLOADS]; /* read-only: n of them */
    size_t n;
} cold_start_book_t;

void cold_start_book_init(cold_start_book_t *b);
void cold_start_book_deinit(cold_start_book_t *b);

/* The record of workload (ns, selector) (borrowed strings, copied), made
 * when new, marked used at now. Borrowed: valid until the next _get that
 * makes a record, or _deinit. NULL: out of memory, or a string over its
 * bound. */
cold_start_workload_t *cold_start_book_get(cold_start_book_t *b, const char *ns,
                                           const char *selector, mono_ns_t now);

/* The record of (ns, selector), or NULL; makes and marks nothing. */
const cold_start_workload_t *cold_start_book_find(const cold_start_book_t *b, const char *ns,
                                                  const char *selector);

#endif
