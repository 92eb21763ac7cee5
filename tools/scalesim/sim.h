/*
 * sim.h - the trace-driven autoscaling simulation: one policy (a KEDA
 * trigger configuration plus KEDA/HPA settings, the online ideal, or the
 * oracle) against one request trace and one replica model. Deterministic:
 * fixed time step, no wall clock, no randomness.
 *
 * A KEDA policy sees only what production exposes (sim_signals_t): per pod
 * its creation time and readiness, NVML's GPU utilisation, and the engine's
 * /metrics (cumulative counters and gauges), plus the gateway/Redis queue
 * length. The trigger is evaluated on that by the product's own code:
 * trigger_config_parse() on the policy's metadata map, then evaluator_run()
 * on a snapshot built from the pods' GPUs (GPU metrics) or
 * demand_evaluate() on the engine and queue signals summed over the pods
 * (demand metrics). What differs between KEDA policies is configuration
 * only. The yardsticks (online ideal, oracle) read the simulator's truth, and
 * their labels say what they know.
 */
#ifndef SCALESIM_SIM_H
#define SCALESIM_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hpa.h"
#include "sources/hist_window.h"
#include "stability.h"
#include "trace.h"

typedef struct {
    double prefill_tok_s;    /* aggregate prefill throughput of one replica */
    double decode_tok_s;     /* aggregate decode throughput of one replica */
    double decode_seq_tok_s; /* decode speed of one request on its own */
    unsigned batch;          /* maximum concurrent requests (vLLM max_num_seqs) */
    double kv_tokens;        /* KV-cache capacity in tokens */
    unsigned kv_block;       /* tokens per KV block (vLLM block_size), 16 */
    double node_s;           /* cold start: node provisioning */
    double image_s;          /* cold start: image pull */
    double weights_s;        /* cold start: weights into VRAM */
    unsigned warm_pool;      /* provisioned nodes kept idle (billed) for new replicas */
    /* How long a node stays after its pod leaves: the cluster autoscaler's
     * --scale-down-unneeded-time, "How long a node should be unneeded before
     * it is eligible for scale down", 10 min by default (kubernetes/autoscaler
     * cluster-autoscaler/main.go, flag.Duration(..., 10*time.Minute)); 0: it
     * goes at once, as the simulator modelled it before. A lingering node is
     * billed (a provisioned GPU node costs money, used or not), and a new pod
     * in that time lands on it and finds the node and the image the pod
     * before ran (kubelet removes images only under disk pressure): it pays
     * the weights only, as on a warm-pool node. */
    double node_linger_s;
} sim_model_t;

/* Llama-3.1-8B on one H100 (bench/README.md documents each number). */
void sim_model_default(sim_model_t *m);

typedef enum { SIM_POLICY_KEDA, SIM_POLICY_ORACLE, SIM_POLICY_IDEAL } sim_policy_kind_t;

/* What one pod exposes, as a real aggregator sees it. */
typedef struct {
    double created_s; /* creationTimestamp */
    /* the start's times, as the pod's status tells them (PodScheduled,
     * the container's startedAt, Ready); < 0 not yet */
    double scheduled_s, running_s, ready_s;
    uint64_t uid;         /* metadata.uid */
    bool ready;           /* Ready: serving (a terminating, draining pod is not Ready) */
    bool scheduled;       /* on a node: its GPU exists for NVML */
    double gpu_util_pct;  /* NVML GPU utilisation over the last signal period (scheduled) */
    bool engine_up;       /* the engine answers /metrics (Ready or draining) */
    double completed;     /* counter: requests finished (vllm:request_success_total) */
    double prompt_tokens; /* counter: prompt tokens prefilled (vllm:prompt_tokens_total) */
    double gen_tokens;    /* counter: tokens generated (vllm:generation_tokens_total) */
    unsigned running;     /* gauge: requests scheduled (vllm:num_requests_running) */
    unsigned waiting;     /* gauge: requests waiting in the engine (preempted ones) */
    double kv_usage;      /* gauge: KV blocks in use / all, 0..1 (vllm:kv_cache_usage_perc) */
    /* histograms, cumulative since the pod started, in vLLM's bucket layouts
     * (sim_hist_layout): vllm:time_to_first_token_seconds and
     * vllm:inter_token_latency_seconds */
    hist_counts_t ttft, itl;
} sim_pod_t;

#define SIM_MAX_PODS 512

/* Everything a KEDA policy may read: taken every signal period. */
typedef struct {
    double t_s;
    double queue; /* the gateway / Redis queue: requests not yet sent to an engine */
    unsigned pod_count;
    sim_pod_t pods[SIM_MAX_PODS];
} sim_signals_t;

#define SIM_MAX_META 24

typedef struct {
    char id;          /* 'a', 'b', ... */
    const char *name; /* for the table */
    sim_policy_kind_t kind;
    /* KEDA trigger metadata, as KEDA would send it (key, value) */
    const char *meta[SIM_MAX_META][2];
    unsigned meta_count;
    hpa_metric_type_t metric_type; /* the trigger's metricType in the ScaledObject */
    double polling_s;              /* pollingInterval */
    double cooldown_s;             /* cooldownPeriod */
    int min_replicas, max_replicas;
    bool push;              /* external-push: StreamIsActive true at each signal refresh */
    double signal_period_s; /* how often the signal source refreshes */
    double signal_delay_s;  /* how late KEDA sees it (dcgm-exporter -> Prometheus: 30 s) */
    bool node_local;        /* answered by one node's DaemonSet pod, round robin (Go system) */
    double forecast_alpha;  /* per second */
    double forecast_beta;   /* per second */
    double oracle_util;     /* oracle: GPU busy fraction it plans for */
    double oracle_window_s; /* oracle: smoothing window of the need */
    /* The HPA's behavior: unset (KEDA's default) is the legacy
     * max(2 x current, 4) limit; set, its scale-up policy and windows. */
    bool hpa_behavior;
    int hpa_up_pods, hpa_up_percent;
    double hpa_up_period_s, hpa_down_window_s;
    /* online ideal: each second, replicas = ceil(arrival work / util +
     * backlog work / drain), the work in replica-seconds; scale-down after
     * the need has been lower for hold_s */
    double ideal_util;     /* target utilisation, (0, 1] */
    double ideal_drain_s;  /* how fast a backlog should clear */
    double ideal_window_s; /* arrival work averaged over the last window_s */
    double ideal_hold_s;   /* scale-down delay */
    const char *key;       /* the --json key: "composite", "ours", ... */
    /* The queueing model (src/core/queue_model.c) sizes the fleet from the
     * signals; the trigger's own evaluation keeps deciding activity. */
    bool queue_model;
    double qm_util;    /* target utilisation, 0 = the model's default */
    double qm_drain_s; /* drain target, 0 = the model's default */
} sim_policy_t;

typedef enum {
    /* the engine receives a request when the gateway sends it (it can
     * schedule it then): its TTFT is prefill only, the wait in the queue in
     * front of the fleet is not in it (a gateway / EPP / Redis queue) */
    SIM_TTFT_SEEN_DISPATCH,
    /* the engine counts from the arrival (requests sent to the engines at
     * once and waiting in their own queues, as behind a plain Service) */
    SIM_TTFT_SEEN_ARRIVAL
} sim_ttft_seen_t;

typedef struct {
    double dt_s;            /* time step, 0.1 */
    double tail_s;          /* simulated time after the last arrival */
    double slo_wait_s;      /* queue-wait SLO, 2 */
    double timeline_step_s; /* timeline resolution, 10 */
    /* latency objectives the table counts requests against; <= 0: the
     * defaults of sim_ttft_objective_s / sim_tpot_objective_s */
    double ttft_slo_s, tpot_slo_s;
    /* What the engine's TTFT histogram counts from (the table's TTFT always
     * counts from the arrival at the queue, what the user sees). */
    sim_ttft_seen_t ttft_seen;
} sim_options_t;

void sim_options_default(sim_options_t *o);

/*
 * The latency model (bench/README.md, "Latency"), from the capacity the
 * replica model already has, no constant of its own:
 *   TTFT = queue wait + prefill, the prompt at prefill_tok_s shared with the
 *          step's decoding (alone: prompt / prefill_tok_s);
 *   TPOT = the decode step time of the running batch: a request decodes at
 *          decode_seq_tok_s until the batch's decode_tok_s is shared, so one
 *          token takes max(1 / decode_seq_tok_s, b / decode_tok_s) for b
 *          decoding requests and no prefill (longer when a prefill shares
 *          the step, or a preemption stalls it).
 * These are the uncontended values; sim_run measures the real ones.
 */
double sim_prefill_s(const sim_model_t *m, double prompt_tokens);
double sim_decode_step_s(const sim_model_t *m, unsigned decoding);

/* The default objectives: TTFT the queue-wait SLO (o->slo_wait_s: what the
 * queue-wait SLO allows for waiting, now for the first token, prefill
 * included); TPOT twice a request's step time alone (2 x
 * sim_decode_step_s(m, 1) = 2 / decode_seq_tok_s: at least half the speed
 * of an idle replica; a batch of more than 2 x decode_tok_s /
 * decode_seq_tok_s decoding requests misses it). The options' values when
 * they are set (> 0). */
double sim_ttft_objective_s(const sim_model_t *m, const sim_options_t *o);
double sim_tpot_objective_s(const sim_model_t *m, const sim_options_t *o);

/* vLLM's bucket bounds (vllm/v1/metrics/loggers.py): TTFT 22 bounds from
 * 1 ms to 2560 s; inter-token latency 19 bounds from 10 ms to 80 s. */
typedef enum { SIM_HIST_TTFT, SIM_HIST_ITL } sim_hist_kind_t;
const hist_layout_t *sim_hist_layout(sim_hist_kind_t kind);

/* Adds weight observations of value v to cumulative counts c in layout l
 * (every bucket whose bound is >= v, the count, the sum), as a Prometheus
 * client's observe() does weight times. */
void sim_hist_observe(const hist_layout_t *l, hist_counts_t *c, double v, double weight);

/* What the scaler's sources would hand the evaluator for one latency
 * signal: demand_latency_t of the shared interface (src/core/demand_eval.h). */
typedef struct {
    bool known;
    double count;
    double p50_s, p90_s, p99_s;
} sim_latency_t;

/*
 * The scaler side of the histograms, as the source hub keeps it for one
 * trigger: each Ready pod's previous scrape (by uid) and one window per
 * signal. Caller-owned; sim_latency_init.
 */
typedef struct {
    unsigned npods;
    uint64_t uid[SIM_MAX_PODS];
    hist_pod_t ttft[SIM_MAX_PODS], itl[SIM_MAX_PODS];
    hist_window_t wttft, witl;
    double last_t_s; /* the newest sample taken in; < 0 none */
    uint64_t _uid[SIM_MAX_PODS];
    hist_pod_t _ttft[SIM_MAX_PODS], _itl[SIM_MAX_PODS];
} sim_latency_state_t;

void sim_latency_init(sim_latency_state_t *st);

/* Takes in sample x (once: a sample seen again is ignored): every Ready
 * pod's increases since its previous scrape (a pod seen first counts all it
 * has: its process started inside the window), merged into the windows;
 * pods gone are forgotten. Then the quantiles over the last window_s
 * seconds: ttft, tpot (from the inter-token histogram). */
void sim_latency_update(sim_latency_state_t *st, const sim_signals_t *x, double window_s,
                        sim_latency_t *ttft, sim_latency_t *tpot);

typedef struct {
    double gpu_hours;
    double wait_p50_s, wait_p95_s, wait_p99_s, wait_max_s;
    double slo_miss_share; /* requests whose queue wait exceeded slo_wait_s */
    /* the same for requests that arrived while a replica was serving (not
     * waiting for a wake from zero): how well the policy follows demand */
    double warm_p99_s, warm_miss_share;
    unsigned cold_starts; /* replicas created */
    unsigned wakes;       /* episodes where requests arrived to zero serving replicas */
    double wake_mean_s, wake_max_s;
    size_t unfinished;    /* never admitted by the end (counted with their wait so far) */
    size_t cold_requests; /* arrived while no replica was serving */
    unsigned preemptions; /* running requests sent back to their engine's queue */
    size_t completed;     /* requests that finished by the end */
    unsigned peak_replicas;
    unsigned eval_errors; /* evaluations that were not OK (KEDA keeps the replica count) */
    /* latency per request (sim_prefill_s, sim_decode_step_s): TTFT over every
     * request (one never served counts as its wait so far, a miss), TPOT over
     * those that finished with >= 1 output token (decode time / tokens) */
    double ttft_p50_s, ttft_p90_s, ttft_p99_s, tpot_p50_s, tpot_p90_s, tpot_p99_s;
    double ttft_ok_share;          /* TTFT <= the TTFT objective */
    double tpot_ok_share;          /* TPOT <= the TPOT objective, of those with a TPOT */
    double both_ok_share;          /* both, of every request (no TPOT: TTFT alone) */
    double ttft_slo_s, tpot_slo_s; /* the objectives used */
    /* stability (bench/README.md, "Stability figures") */
    unsigned cancelled_starts; /* pods deleted before they were Ready, whoever lowered the count */
    stability_t stability;     /* KEDA policies: the desired count at each HPA sync (stability.h);
                                  syncs is 0 for the yardsticks, which have no HPA */
    /* The online ideal: its want every 15 s, as a sync would read it (none at
     * zero), the reference for the policies' reversals (the matrix). */
    unsigned ideal_reversals;
    size_t points;   /* timeline */
    float *replicas; /* owned: billed replicas (starting, serving, draining) */
    float *serving;  /* owned */
} sim_result_t;

/*
 * A pod as the ReplicaSet controller ranks it when a scale-down picks the
 * pods to delete (kubernetes/kubernetes pkg/controller/replicaset
 * getPodsToDelete, pkg/controller/controller_utils.go
 * ActivePodsWithRanks.Less, read at k8s.io/kubernetes v1.22.6 with the
 * LogarithmicScaleDown gate on, its default since 1.22). In the simulator a
 * pod waiting for its node is unscheduled, one pulling its image is
 * scheduled and Pending, one loading weights is Running and not Ready.
 */
typedef struct {
    bool scheduled;   /* spec.nodeName is set */
    bool running;     /* phase Running (its container started); else Pending */
    bool ready;       /* condition Ready */
    double created_s; /* creationTimestamp */
    double ready_s;   /* the Ready condition's lastTransitionTime (ready pods) */
    uint64_t uid;     /* metadata.uid */
} sim_victim_t;

/*
 * Whether the controller deletes a before b at now_s: unscheduled before
 * scheduled; Pending before Running; not Ready before Ready; (no
 * pod-deletion-cost is set, and one pod per node makes the co-location ranks
 * equal;) of two Ready pods the one Ready for less time, of others the newer
 * one, both compared in whole powers of two of nanoseconds ago; within the
 * same power of two the uid decides (Kubernetes compares the random uid
 * strings; the simulator a fixed hash of its sequential uid, so the order is
 * as arbitrary and still deterministic). False when neither goes first.
 */
bool sim_victim_before(const sim_victim_t *a, const sim_victim_t *b, double now_s);

/*
 * Runs policy p over trace t. Returns 0; KGS_EINVAL with a message when the
 * policy's metadata does not parse (the product's message, prefixed with the
 * policy) or a parameter is out of range; KGS_ENOMEM. *out is zeroed first;
 * release with sim_result_deinit().
 */
int sim_run(const trace_t *t, const sim_model_t *m, const sim_policy_t *p, const sim_options_t *o,
            sim_result_t *out, char *err, size_t errlen);

void sim_result_deinit(sim_result_t *r);

/*
 * The demand in replicas on the timeline grid (points of step_s up to end_s):
 * GPU-seconds of work arriving per second (context / prefill rate + output /
 * decode rate), averaged over window_s. Returned in *out (free()), n points.
 */
int sim_demand_timeline(const trace_t *t, const sim_model_t *m, double step_s, double end_s,
                        double window_s, float **out, size_t *n);

/* The simulated end time for t under o. */
double sim_end_s(const trace_t *t, const sim_options_t *o);

/* The work of one request in replica-seconds: context / prefill rate +
 * output / decode rate (what the fleet must spend on it at full batch). */
double sim_request_work(const sim_model_t *m, const trace_request_t *r);

/*
 * The floor of any online policy that scales to zero: requests arriving
 * within (cold start - slo) of a wake, a wake being the first arrival of
 * the trace or one after at least idle_s without arrivals. Nothing serves
 * them in time unless it knows the future. Returns the count.
 */
size_t sim_floor(const trace_t *t, const sim_model_t *m, double slo_s, double idle_s);

#endif
