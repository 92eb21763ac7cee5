/*
 * queue_model.h - sizes an inference fleet like a queueing system, from the
 * signals a scaler already reads: the engines' completed-request and token
 * counters, their waiting/running gauges, a queue in front of them, and the
 * pod list (Ready pods, pods still starting, and how long starting took).
 *
 * Why: a backlog divided by a per-replica queue target orders capacity that
 * arrives after the backlog is gone (after a wake from zero, ~700 requests
 * queued during a 135 s cold start became 32 replicas, 22 of which found
 * nothing left to do and were then held by the HPA's 300 s window). This
 * model orders a replica only for work that will still be waiting when that
 * replica can serve: over one cold start T it compares the work due (the
 * backlog plus the arrivals of the next T) with what Ready and starting pods
 * can do in that time, and adds replicas only for the uncovered remainder,
 * to be drained within a drain target after they arrive. Otherwise it asks
 * for the offered load divided by a target utilisation.
 *
 * What it learns (each estimate says whether it is learned or a prior, so
 * `query` can show it; a quantity never learned is a documented prior, never
 * 0):
 *   arrival rate  lambda = (completions + change of waiting + running) / dt,
 *                 smoothed fast up (tau 10 s) and slow down (tau 60 s),
 *                 and its rise per second (tau 30 s): on a ramp the arrivals
 *                 of the next T are lambda T + trend T^2 / 2 (a falling
 *                 rate is not extrapolated: scale-down stays with the HPA);
 *   capacity      requests/s one Ready replica completes while work waits
 *                 (saturated intervals only), tau 120 s, scaled by the
 *                 request mix (tokens per request now against then);
 *                 before any saturated interval: concurrency prior / the
 *                 service time from Little's law (running / completion rate);
 *                 before that: the fixed prior;
 *   cold start    create -> Ready durations the caller observed (mean of
 *                 the last 8), else the prior.
 * A counter that went backwards (a pod restarted), or a change in the set
 * of engines summed (a pod appeared or went), skips that interval's rates
 * rather than reading a negative or huge rate.
 *
 * Pure: no I/O, no clock reads (times are arguments, seconds on a monotonic
 * clock), no allocation. A queue_model_t is caller-owned; one writer.
 */
#ifndef KGS_QUEUE_MODEL_H
#define KGS_QUEUE_MODEL_H

#include <stdbool.h>

#define QUEUE_MODEL_MAX_STARTING 64 /* starting pods whose age is tracked */
#define QUEUE_MODEL_COLD_SAMPLES 8

/* Priors and defaults. Utilisation and drain target: the point chosen with
 * tools/scalesim (policy q) on both bench traces (bench/README.md). */
#define QUEUE_MODEL_PRIOR_CAPACITY_RPS 1.0   /* requests/s per replica, nothing learned */
#define QUEUE_MODEL_PRIOR_CONCURRENCY 16.0   /* requests one replica serves at once */
#define QUEUE_MODEL_PRIOR_COLD_START_S 120.0 /* create -> Ready, nothing observed */
#define QUEUE_MODEL_DEFAULT_UTILISATION 0.7
#define QUEUE_MODEL_DEFAULT_DRAIN_S 10.0
#define QUEUE_MODEL_PREFILL_WEIGHT 0.25 /* work of a prompt token against a generated one */

typedef struct {
    double target_utilisation; /* (0, 1]: offered load / capacity to aim at */
    double drain_s;            /* > 0: a new replica's share of a deficit is cleared this fast */
    double cold_start_s;       /* > 0 overrides the learned cold start; 0 = learn (prior above) */
    double capacity_rps;       /* > 0 overrides the learned capacity; 0 = learn */
} queue_model_params_t;

/* What the scaler read at one instant. Counters are cumulative sums over the
 * workload's pods; a has_* false means the source does not provide it. */
typedef struct {
    double t_s;
    bool has_completed;
    double completed; /* requests completed */
    bool has_tokens;
    double prompt_tokens;
    double generation_tokens;
    bool has_engine; /* waiting/running gauges of the engines */
    double waiting;
    double running;
    bool has_queue; /* a queue in front of the engines (Redis, gateway) */
    double queue;
    unsigned ready;    /* Ready replicas */
    unsigned starting; /* created, not Ready */
    /* ages (seconds since creation) of up to QUEUE_MODEL_MAX_STARTING
     * starting pods; the others count as just created */
    double starting_age_s[QUEUE_MODEL_MAX_STARTING];
    unsigned starting_ages;
    /* Which engines the counters and gauges were summed over (any value
     * that changes when the set does, e.g. a sum of their names' hashes):
     * across a change the sums are not comparable (a pod that appears
     * brings its whole counter history and its gauges at once), so that
     * interval teaches no rate. */
    unsigned long long members;
} queue_model_sample_t;

typedef enum {
    QM_FROM_OVERRIDE, /* the trigger configured it */
    QM_FROM_LEARNED,  /* measured on this workload */
    QM_FROM_DERIVED,  /* Little's law on what was measured, with the concurrency prior */
    QM_FROM_PRIOR     /* nothing measured yet: the documented prior */
} queue_model_source_t;

typedef struct {
    /* read-only for callers */
    bool have_prev;
    queue_model_sample_t prev;
    double lambda_fast, lambda_slow; /* requests/s */
    bool have_lambda;
    double lambda_trend;          /* requests/s per second, smoothed */
    double capacity_rps;          /* learned, per Ready replica */
    double capacity_work_per_req; /* tokens-weighted work per request when learned */
    bool have_capacity;
    double completion_rps; /* smoothed completions/s (Little's law) */
    double running_avg;    /* smoothed running requests */
    bool have_service;
    double work_per_req; /* smoothed weighted tokens per completed request */
    bool have_work;
    double cold_samples[QUEUE_MODEL_COLD_SAMPLES];
    unsigned cold_count; /* samples observed (ring) */
} queue_model_t;

/* The decision and every input it used. */
typedef struct {
    double replicas; /* desired replicas, fractional (KEDA rounds up) */
    double lambda_rps;
    queue_model_source_t lambda_from; /* LEARNED, or PRIOR when no rate yet (then 0 arrivals) */
    double capacity_rps;
    queue_model_source_t capacity_from;
    double cold_start_s;
    queue_model_source_t cold_start_from;
    double backlog;  /* requests waiting now (engines + queue) */
    double work_due; /* backlog + arrivals over one cold start */
    double can_do;   /* what Ready and starting pods complete in that time */
    double deficit;  /* work_due - can_do, >= 0 */
    double steady;   /* lambda / (capacity x utilisation) */
} queue_model_decision_t;

void queue_model_init(queue_model_t *m);

/* Sets p to the defaults above (learn everything). */
void queue_model_params_default(queue_model_params_t *p);

/* Feeds one reading. Samples must come in time order; one at the same or an
 * earlier time than the previous is ignored. Non-finite or negative numbers
 * in s are ignored field by field (they read as "not provided"). */
void queue_model_observe(queue_model_t *m, const queue_model_sample_t *s);

/* One observed create -> Ready duration, seconds (ignored unless finite, > 0). */
void queue_model_observe_cold_start(queue_model_t *m, double seconds);

/* The desired replicas for the latest reading s (normally the one just
 * observed), with every input in *out. >= 0, or NaN when finite inputs
 * overflow a double on the way (the need is unknown: report an error, never
 * 0); inputs that are not finite are ignored as in observe(), so they never
 * give NaN. */
void queue_model_decide(const queue_model_t *m, const queue_model_params_t *p,
                        const queue_model_sample_t *s, queue_model_decision_t *out);

const char *queue_model_source_name(queue_model_source_t s);

#endif
