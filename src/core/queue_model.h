/*
 * queue_model.h - sizes an inference fleet like a queueing system, from the
 * signals a scaler already reads: the engines' completed-request and token
 * counters, their waiting/running gauges, a queue in front of them, and the
 * pod list (Ready pods, pods still starting and their age) when the role
 * has one.
 *
 * Why: a backlog divided by a per-replica queue target orders capacity that
 * arrives after the backlog is gone, and a rule that counts pods on their
 * way as capacity but does not ask for them has them cancelled before they
 * serve. This model keeps a plan that stays the same plan as time passes:
 *
 *   1. It projects the backlog forward over one cold start T plus a drain
 *      target d (a fluid queue): arrivals at the arrival rate (rising, if it
 *      rose over the last T, by no more than it rose), served by the Ready
 *      replicas and, from the moment each is Ready, by the starting ones.
 *   2. A starting pod is kept until it is Ready, unless the demand it was
 *      ordered for vanished (no arrivals over the rate window, nothing
 *      waiting, nothing running); Ready replicas are never released while
 *      new ones are ordered.
 *   3. New replicas are ordered only for what the kept pods leave: the
 *      projected backlog at T drained within d, and the load at T carried
 *      at the target utilisation.
 *   4. The answer is held: a replica the need no longer asks for is released
 *      only after the keep-alive K, chosen from the observed gaps between a
 *      fall of the need and its return against the cost of a cold start
 *      (ski rental with a learned distribution: the K that minimises the
 *      expected idle time plus the expected cold starts), so on/off traffic
 *      keeps its replicas through its pauses and steady traffic releases
 *      soon.
 *   5. A small fall is walked: when the answer would fall, from one
 *      decision to the next, by no more than a quarter of the last one (at
 *      least 2 replicas), it goes down one replica per HPA sync instead. A
 *      fall that small is what the estimates' noise, the rounding of the
 *      need and the rest of an order that arrived make; walked, each
 *      release waits for the next readings, and demand that comes back
 *      stops the walk where it is instead of turning the answer back up. A
 *      sudden larger fall (the demand went) is taken at once; a decline
 *      spread over many decisions (a burst draining, the load's side of a
 *      diurnal cycle) is walked all the way, each of its steps being
 *      small. That last part is what the reversals figure needs: measuring
 *      the fall from where the walk began instead gave back most of the
 *      gain (bench/README.md, "Matrix").
 *
 * What it learns (each estimate says whether it is learned, configured or a
 * prior, so `query` can show it; a quantity never learned is a documented
 * prior chosen so that an error costs little, never 0):
 *   arrivals      the requests arrived (completions + the change of those
 *                 present: waiting anywhere or running) counted into a ring
 *                 of 10 s buckets; the rate is what arrived over the last
 *                 window (30 s), with history that is not there counted as
 *                 none: one burst is a backlog, not a rate;
 *   work          per request: generated + 1/4 prompt tokens, from the
 *                 token counters (the prefill of a token costs about a
 *                 quarter of decoding one);
 *   capacity      work per second one Ready replica does while work waits
 *                 the whole interval (saturated); before one was seen, what
 *                 Little's law gives with a concurrency prior; before any
 *                 reading, the prior. Remembered across scale to zero;
 *   cold start    what a pod ordered now pays: by stage when the pod list
 *                 tells the stages (queue_model_observe_stages: image +
 *                 weights, + the node unless the newest start found one
 *                 up and none waits for one), else create -> Ready of the
 *                 pods seen starting (mean of the last 8), else the prior;
 *                 without a pod list, from the model's own orders to the
 *                 engines answering.
 * Counters that went backwards (a restart), or sums over a different set of
 * engines (a pod appeared or went), teach no rate for that interval.
 *
 * Pure: no I/O, no clock reads (times are arguments, seconds on a monotonic
 * clock), no allocation. A queue_model_t is caller-owned (about 4 KiB); one
 * writer.
 */
#ifndef KGS_CORE_QUEUE_MODEL_H
#define KGS_CORE_QUEUE_MODEL_H

#include <stdbool.h>

#define QUEUE_MODEL_MAX_STARTING 64 /* starting pods whose age is tracked */
#define QUEUE_MODEL_COLD_SAMPLES 8
/* A pod's start in three stages: waiting for a node (the cluster autoscaler
 * or Karpenter provisions one), the image (pulled and started), the weights
 * (loaded until the readiness probe passes). */
#define QUEUE_MODEL_STAGES 3
typedef enum {
    QM_STAGE_UNKNOWN = 0, /* not said (no pod list with statuses) */
    QM_STAGE_NODE,        /* created, not scheduled onto a node */
    QM_STAGE_IMAGE,       /* scheduled, its containers not all running */
    QM_STAGE_WEIGHTS,     /* running, not Ready */
} queue_model_stage_t;
/* a start scheduled within this long of its creation found a node up (the
 * scheduler binds in about a second; a node provisioned takes minutes) */
#define QUEUE_MODEL_WARM_NODE_S 10.0
#define QUEUE_MODEL_BUCKET_S 10.0 /* arrivals history: one bucket per 10 s */
#define QUEUE_MODEL_BUCKETS 64    /* ... over 640 s */
#define QUEUE_MODEL_LEVELS 128    /* replica levels whose last need is remembered */
#define QUEUE_MODEL_STEP_PODS 4   /* the HPA's default scale-up: 4 pods or 100 % a sync */
/* kube-controller-manager's --horizontal-pod-autoscaler-tolerance default:
 * a ratio within 10 % of 1 changes nothing */
#define QUEUE_MODEL_HPA_TOLERANCE 0.1
/* its --horizontal-pod-autoscaler-sync-period default: the HPA reads the
 * metric and acts every 15 s */
#define QUEUE_MODEL_HPA_SYNC_S 15.0
#define QUEUE_MODEL_GAP_BINS 16 /* keep-alive: gaps from 5 s to ~2.5 h, log-spaced */

/* Priors and defaults (docs/configuration.md, "The queueing model"). */
#define QUEUE_MODEL_PRIOR_CAPACITY_RPS 1.0   /* requests/s per replica, nothing learned */
#define QUEUE_MODEL_PRIOR_CONCURRENCY 16.0   /* requests one replica serves at once */
#define QUEUE_MODEL_PRIOR_COLD_START_S 120.0 /* create -> Ready, nothing observed */
/* Capacity never measured (a prior, or Little's law with the concurrency
 * prior): no more replicas than this, or twice the Ready ones. */
#define QUEUE_MODEL_PRIOR_MAX_REPLICAS 8
#define QUEUE_MODEL_DEFAULT_UTILISATION 0.0 /* adaptive: see headroom_rps */
#define QUEUE_MODEL_DEFAULT_DRAIN_S 10.0
#define QUEUE_MODEL_PREFILL_WEIGHT 0.25 /* work of a prompt token against a generated one */
#define QUEUE_MODEL_RATE_WINDOW_S 30.0  /* the arrival rate: arrivals over this window */

typedef struct {
    double target_utilisation; /* (0, 1]: offered load / capacity to aim at; 0: the headroom
                                  follows the arrivals' own variation */
    double drain_s;            /* > 0: a new replica's share of a backlog is cleared this fast */
    double cold_start_s;       /* > 0 overrides the learned cold start; 0 = learn (prior above) */
    double capacity_rps;       /* > 0 overrides the learned capacity (requests/s); 0 = learn */
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
    /* The pod list: has_pods false (no list: engine URLs, the standalone
     * role) and ready is the engines that answer; the model then infers
     * the pods on their way from its own orders. */
    bool has_pods;
    unsigned ready;    /* Ready replicas */
    unsigned starting; /* created, not Ready */
    /* ages (seconds since creation) of up to QUEUE_MODEL_MAX_STARTING
     * starting pods; the others count as just created */
    double starting_age_s[QUEUE_MODEL_MAX_STARTING];
    unsigned starting_ages;
    /* The seam for a cold start by stage: for starting pod i <
     * starting_etas, the seconds until it is Ready when that is known
     * better than "the cold start minus its age" (a pod scheduled onto a
     * node that is already up pays the image and the weights, not the
     * node); < 0 not known. */
    double starting_eta_s[QUEUE_MODEL_MAX_STARTING];
    unsigned starting_etas;
    /* Where starting pod i < starting_stages is in its start (a
     * queue_model_stage_t) and for how long it has been there (seconds);
     * with the stages learned (queue_model_observe_stages), a pod's time
     * until Ready is what its stage has left plus the later stages. */
    unsigned char starting_stage[QUEUE_MODEL_MAX_STARTING];
    double starting_stage_age_s[QUEUE_MODEL_MAX_STARTING];
    unsigned starting_stages;
    /* starting pods the scheduler found no node for (Unschedulable): the
     * next pods ordered wait for a node too */
    unsigned waiting_for_node;
    /* Which engines the counters and gauges were summed over (any value
     * that changes when the set does, e.g. a sum of their names' hashes). */
    unsigned long long members;
} queue_model_sample_t;

typedef enum {
    QM_FROM_OVERRIDE, /* the trigger configured it */
    QM_FROM_LEARNED,  /* measured on this workload */
    QM_FROM_DERIVED,  /* Little's law on what was measured, with the concurrency prior */
    QM_FROM_PRIOR     /* nothing measured yet: the documented prior */
} queue_model_source_t;

/* The decision and every input it used. */
typedef struct {
    double replicas; /* desired replicas, fractional (KEDA rounds up) */
    double need;     /* before the keep-alive hold */
    double lambda_rps;
    queue_model_source_t lambda_from; /* LEARNED, or PRIOR when no rate yet (then 0 arrivals) */
    double rise_rps; /* how much the rate rose over the last cold start (extrapolated once) */
    double capacity_rps;
    queue_model_source_t capacity_from;
    double work_per_req; /* weighted tokens per request; 0 when not known */
    double cold_start_s; /* what a pod ordered now pays, create -> Ready */
    queue_model_source_t cold_start_from;
    /* learned by stage (cold_start_from LEARNED): 1 the new pods find a node
     * up and pay the image and the weights, 2 they wait for a node too;
     * 0 not by stage (one create -> Ready figure) */
    unsigned char cold_start_stages;
    double backlog;      /* requests waiting now (engines + queue) */
    double work_due;     /* backlog + arrivals over one cold start and the drain, requests */
    double can_do;       /* what the Ready and kept starting pods complete in that time */
    double deficit;      /* the projected backlog when new replicas would be Ready, >= 0 */
    double headroom_rps; /* the arrival rate to carry beyond its mean (its variation) */
    double steady;       /* (lambda + headroom) / capacity: the replicas the load asks for */
    unsigned ready, starting, kept_starting; /* kept: starting pods the plan needs */
    bool inferred_starting; /* no pod list: starting pods are the model's own orders */
    double ordered;         /* new replicas for what the kept pods leave */
    /* the keep-alive: */
    double keepalive_s; /* the hold K chosen */
    double held;        /* replicas the hold keeps beyond the need (the keep-alive, the walk) */
    bool walking;       /* a small fall walked down one replica per HPA sync (rule 5) */
    bool step_limited;  /* the answer was cut to one HPA scale-up step */
    unsigned ceiling;   /* the fleet's learned ceiling (maxReplicaCount, quota); 0 none */
} queue_model_decision_t;

typedef struct {
    /* read-only for callers */
    bool have_prev;
    queue_model_sample_t prev;
    double t0_s; /* the first sample's time */
    /* arrivals: A, cumulative requests arrived (an estimate: completions +
     * the change of those present), and a ring of its value at the start
     * of each 10 s bucket (bucket_t: that bucket's start) */
    double arrived;
    double bucket_t[QUEUE_MODEL_BUCKETS];
    double bucket_a[QUEUE_MODEL_BUCKETS];
    unsigned nbuckets, bucket_head;
    double completion_rps; /* smoothed completions/s (Little's law) */
    double running_avg;    /* smoothed running requests */
    bool have_service;
    double service_settled_s; /* how long the fleet has run at one size (Little's law) */
    double derived_rps;       /* capacity by Little's law when last settled; 0 none */
    double work_per_req;      /* smoothed weighted tokens per completed request */
    bool have_work;
    /* capacity: work and requests done, and replica-seconds spent, over the
     * saturated intervals (forgotten with a time constant): their ratio is
     * what one Ready replica does while work waits */
    double sat_work, sat_done, sat_replica_s;
    bool have_capacity;
    double sat_seconds; /* saturated, settled seconds observed in all */
    double ready_since; /* when the Ready count last changed (a transient follows) */
    double cold_samples[QUEUE_MODEL_COLD_SAMPLES];
    unsigned cold_count; /* samples observed (ring) */
    /* completed starts by stage (node, image, weights), the last
     * QUEUE_MODEL_COLD_SAMPLES (ring), and the newest one's node stage */
    double stage_samples[QUEUE_MODEL_COLD_SAMPLES][QUEUE_MODEL_STAGES];
    unsigned stage_count;
    double last_node_s;
    /* keep-alive: per replica level j (1-based), the last time the need
     * asked for at least j replicas (seconds since t0; < 0 never), and the
     * gaps between a fall below j and the return to it */
    float level_last_s[QUEUE_MODEL_LEVELS];
    /* the load (requests/s) that last asked for level j: held, it is
     * counted again at today's capacity, so a level asked for while the
     * capacity was a prior holds what that load needs now */
    float level_load[QUEUE_MODEL_LEVELS];
    float gap_weight[QUEUE_MODEL_GAP_BINS];
    double gaps_seen;
    /* standalone: when the answer first rose to each level (seconds since
     * t0; < 0 not asked for), so pods ordered and not yet answering count
     * as starting, with their age */
    float level_ordered_s[QUEUE_MODEL_LEVELS];
    /* the last interval's arrivals could not be measured (a queue alone
     * while replicas serve: completions are not seen) */
    bool rate_unknown;
    bool in_ramp; /* the last decision saw the arrivals ramp up */
    /* the fleet's ceiling: the pods stayed at above_pods since above_since
     * while more were asked; learned, `ceiling` pods (0: none) since
     * ceiling_at */
    double above_since, ceiling_at;
    unsigned above_pods, ceiling;
    unsigned last_answer;     /* replicas the last decision asked for (ceil) */
    unsigned prev_ready_seen; /* Ready replicas at the last decision */
    double last_decide_t;     /* the sample time of the last decision */
    bool decided;
    queue_model_decision_t last; /* that decision */
} queue_model_t;

void queue_model_init(queue_model_t *m);

/* Sets p to the defaults above (learn everything). */
void queue_model_params_default(queue_model_params_t *p);

/* Feeds one reading. Samples must come in time order; one at the same or an
 * earlier time than the previous is ignored. Non-finite or negative numbers
 * in s are ignored field by field (they read as "not provided"). */
void queue_model_observe(queue_model_t *m, const queue_model_sample_t *s);

/* One observed create -> Ready duration, seconds (ignored unless finite, > 0). */
void queue_model_observe_cold_start(queue_model_t *m, double seconds);

/* Takes in one completed start's stages, seconds each (node, image,
 * weights; any negative or not finite: the start is not taken). From then
 * on the cold start a new pod will pay is counted by stage: the image and
 * the weights, and the node unless the newest start found one up
 * (scheduled within QUEUE_MODEL_WARM_NODE_S) and no pod waits for one. */
void queue_model_observe_stages(queue_model_t *m, const double stage_s[QUEUE_MODEL_STAGES]);

/* The desired replicas for the latest reading s (the one just observed),
 * with every input in *out: >= 0, or NaN when finite inputs overflow a
 * double on the way (the need is unknown: report an error, never 0).
 * Records the decision (the keep-alive's levels and gaps, the orders a
 * role without a pod list counts as starting) once per sample time: a
 * second call for the same sample returns the same answer. */
void queue_model_decide(queue_model_t *m, const queue_model_params_t *p,
                        const queue_model_sample_t *s, queue_model_decision_t *out);

const char *queue_model_source_name(queue_model_source_t s);

#endif
