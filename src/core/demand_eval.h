/*
 * demand_eval.h - the demand part of a trigger: signals in, KEDA's value
 * and activity out. Pure: no I/O, no clock (the sources layer gathers the
 * signals and reports failures itself; only known numbers reach here).
 *
 * Single-signal types report their signal; `demand` reports
 *   100 x max(queue / targetQueuePerReplica, running / targetRunningPerReplica,
 *             kv / targetKvCache, gpu / targetGpu)
 * over the signals it has targets for, against a target of 100, so KEDA's
 * AverageValue arithmetic gives desired replicas = ceil(max of the
 * per-signal replica needs). Worked examples: docs/configuration.md.
 */
#ifndef KGS_CORE_DEMAND_EVAL_H
#define KGS_CORE_DEMAND_EVAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/clock.h"
#include "core/engine_table.h"
#include "core/evaluator.h"
#include "core/forecast.h"
#include "core/queue_model.h"
#include "core/trigger_config.h"

/* The latency objectives a trigger can name (metricType slo): time to
 * first token, time per output token (one observation per request: the
 * request's mean), end-to-end latency, time in the engine's queue, and
 * inter-token latency (one observation per generated token). */
typedef enum { SLO_TTFT, SLO_TPOT, SLO_E2E, SLO_QUEUE, SLO_ITL, SLO_SIGNAL_COUNT } slo_signal_t;

_Static_assert(SLO_SIGNAL_COUNT == TRIGGER_SLO_SIGNALS, "trigger_config.h sizes the targets");
_Static_assert(SLO_SIGNAL_COUNT == ENGINE_TABLE_SIGNALS, "engine_table.h names the signals");

/* One latency histogram over the trigger's window, merged over every
 * Ready pod (buckets add), then its quantiles. */
typedef struct {
    bool known;   /* count > 0: requests observed in the window (else unknown, never 0) */
    double count; /* observations in the window */
    double p50_s, p90_s, p99_s;
} demand_latency_t;

/* "ttft", "tpot", "e2e", "queue_time", "itl"; "?" out of range. */
const char *slo_signal_name(slo_signal_t s);

/*
 * The replicas latency asks for (metricType slo, and the *Target keys on
 * demand). Pure. For each target set in d (slo_target_s) whose signal is
 * known: ratio = observed quantile / target; a quantile is judged only
 * with count >= max(sloMinRequests, 2 / (1 - q)) (p50: 4, p90: 20, p99:
 * 200 requests: at least two requests above the quantile, so one slow
 * request cannot set it). Then, with R = max(ready, 1):
 *   nothing observed (no signal known): observed = false, replicas 0;
 *   a quantile with too few requests is not judged: it cannot scale up,
 *     but it cannot read as "fast" either: the ratio used is
 *     max(worst judged (0: none), min(worst not judged, 1)), so thin
 *     evidence of slowness holds R and thin evidence of speed lets it shrink;
 *   |worst - 1| <= sloTolerance: replicas = R (the dead band: hold);
 *   else replicas = R x worst,
 * clamped to [R / sloMaxStep, R x sloMaxStep] and never below 1 while
 * requests are observed. The step is against the ready replicas, so
 * evaluations before new pods are Ready do not compound.
 */
typedef struct {
    bool observed;      /* some named signal had requests in the window */
    bool judged;        /* some target had enough requests to be judged */
    double worst;       /* the largest observed / target ratio judged (0: none) */
    double thin;        /* the largest ratio of a target with too few requests (0: none) */
    int worst_signal;   /* slo_signal_t of worst, -1 none */
    int worst_quantile; /* 0 p50, 1 p90, 2 p99; -1 none */
    double replicas;    /* wanted, after the clamp (0 when !observed) */
    bool clamped;       /* the step limited replicas */
} slo_decision_t;

/* false (with a message naming the signal) when a known latency is not a
 * finite, non-negative number of seconds or its count is not a count. */
bool slo_decide(const demand_config_t *d, const demand_latency_t lat[SLO_SIGNAL_COUNT],
                double ready, slo_decision_t *out, char *err, size_t errlen);

/* One scrape of a serving engine's /metrics (sources/engine_metrics.c
 * produces it; it lives here because the evaluation reads it). */
typedef struct {
    bool has_waiting, has_running, has_kv, has_triton;
    double waiting;    /* requests queued */
    double running;    /* requests in flight */
    double kv_percent; /* KV-cache usage in %, summed over engines */
    double queue_us;   /* Triton: cumulative queue time, microseconds */
    double success;    /* Triton: cumulative successful requests */
    unsigned series;   /* samples that matched a wanted metric (after the model filter) */
    /* Cumulative counters the queueing model learns from (summed over the
     * engine's series, after the model filter): requests completed, and
     * prompt and generated tokens. has_* false: the engine exports none. */
    bool has_completed, has_tokens;
    double completed_total;
    double prompt_tokens_total;
    double generation_tokens_total;
    /* Latency histograms (read only when the trigger names a latency
     * target): bit s set when the scrape holds signal s's histogram (after
     * the model filter). The buckets themselves go to the source hub's
     * windows, not into this struct. */
    unsigned hist_mask;
    /* vLLM's vllm:lora_requests_info, read only for a trigger's loraAdapter:
     * has_lora, a series with a finite value (a Unix timestamp) was seen;
     * lora_waiting / lora_running, the adapter is listed in the
     * waiting_lora_adapters / running_lora_adapters label of the newest
     * series (the largest value; ties OR'ed). Names only: vLLM exports no
     * per-adapter request counts. */
    bool has_lora, lora_waiting, lora_running;
    /* engine epp (the Gateway API Inference Extension's endpoint picker):
     * waiting above is its flow-control queue (requests held at the
     * gateway, this EPP replica's own: summed over EPP pods). The pool
     * gauges below describe the model servers behind it, computed by every
     * EPP replica from the same servers: duplicates across EPP pods, so the
     * evaluation takes their max over pods, never the sum. Each is a pool
     * average x its ready endpoints (a count), summed over the pools in
     * the scrape. has_pool: a ready-endpoints gauge was read. For epp,
     * has_waiting covers waiting + pool_waiting, has_running pool_running,
     * has_kv pool_kv_percent (running and kv_percent stay 0); a count not
     * known is 0. Other engines leave these false and 0. */
    bool has_pool;
    double pool_ready;      /* ready model-server endpoints */
    double pool_waiting;    /* requests waiting in the model servers */
    double pool_running;    /* requests running in the model servers */
    double pool_kv_percent; /* KV-cache usage %, summed over the model servers */
    /* epp: the pool saturation (1.0 = the EPP's gating set point) x the
     * pool's ready endpoints, summed over pools: the endpoints' worth of
     * load the pool carries at the set point. has_saturation: every pool
     * with a saturation series has a ready-endpoints series. */
    bool has_saturation;
    double saturation_load;
    /* What the page says of the engine itself (core/engine_table.h):
     * recognised, a family of engine e's table is in the scrape (whatever
     * the model filter kept); served, it has finished requests (a latency
     * histogram's count, a completed or token counter above 0). */
    bool recognised, served;
    /* Latency targets: bit s set when signal s is wanted, the page is the
     * engine's and its histogram is absent although the engine would show
     * it by now (it has served requests, or the table says a flag turns
     * it on): this server's release or configuration lacks it. */
    unsigned hist_lacking;
    /* Families the engine creates on first use, absent from a recognised
     * page and read as the engine's documented zero: ENGINE_ZERO_* bits. */
    unsigned first_use_zero;
    /* With a model filter: the other model names the page's series carry
     * (the filter matched none of those: the most common mistake), comma
     * separated, distinct, as many as fit; other_models_more when some did
     * not fit. */
    char other_models[96];
    bool other_models_more;
    /* process_start_time_seconds (the newest, when several): which process
     * answered. A Service URL answered by another replica, or a replica
     * restarted, shows another start: its counters do not continue the
     * last ones (the queueing model then learns no rate from the interval). */
    bool has_start;
    double start_time_s;
} engine_reading_t;

#define ENGINE_ZERO_WAITING 1u
#define ENGINE_ZERO_RUNNING 2u
#define ENGINE_ZERO_COMPLETED 4u
#define ENGINE_ZERO_TOKENS 8u

/* The signals a demand trigger's answer comes from, as the decision view
 * (`query`, Explain, /metrics) names them (demand_signal_name). */
typedef enum {
    DSIG_QUEUE,             /* requests waiting anywhere: the queue source plus the engines'
                               waiting (what targetQueuePerReplica and activationQueue read) */
    DSIG_QUEUE_SOURCE,      /* the Redis / Prometheus queue alone */
    DSIG_ENGINE_WAITING,    /* requests waiting in the engines (epp: at the gateway too) */
    DSIG_ENGINE_RUNNING,    /* requests in flight in the engines */
    DSIG_KV_CACHE,          /* KV-cache usage, % summed over engines */
    DSIG_GPU,               /* the GPU metric of targetGpu */
    DSIG_PROMPT_TOKENS,     /* prompt tokens/s */
    DSIG_GENERATION_TOKENS, /* generated tokens/s */
    DSIG_SATURATION,        /* epp: pool saturation x ready endpoints (targetSaturation) */
    DSIG_QUEUEING_MODEL,    /* demandModel queueing: its replicas */
    DSIG_LATENCY,           /* the latency targets: the replicas they ask for */
    DSIG_COUNT
} demand_signal_t;

/* "queue", "queue_source", "engine_waiting", "engine_running", "kv_cache", "gpu",
 * "prompt_tokens_rate", "generation_tokens_rate", "pool_saturation",
 * "queueing_model", "latency"; "?" out of range. */
const char *demand_signal_name(demand_signal_t s);

typedef struct {
    bool has_engine;     /* engine signals below are known (all pods read, or no pods) */
    double waiting;      /* requests waiting in the engines (epp: at the gateway too) */
    double running;      /* requests in flight in the engines */
    double kv_percent;   /* KV-cache usage %, summed over engines and pods */
    bool has_rates;      /* Triton: counter increases over the window are known */
    double queue_us;     /* queue time added in the window, all pods, microseconds */
    double completed;    /* requests completed in the window, all pods */
    double request_rate; /* requests/s, summed over pods */
    bool has_queue;      /* the Redis / Prometheus queue below is known */
    double queue;
    /* Token rates over windowSeconds, tokens/s summed over the engines
     * (counter increases). Filled only for a trigger that reads them
     * (demand_uses_token_rates), and then known: until every engine's window
     * holds two polls the evaluation answers UNAVAILABLE before this. */
    double prompt_tokens_rate, generation_tokens_rate;
    /* loraAdapter: engines whose requests for the adapter wait (listed in
     * the newest vllm:lora_requests_info and the engine's waiting gauge > 0),
     * and whether any engine runs it (listed, and running > 0). */
    double lora_waiting_engines;
    bool lora_running;
    /* epp: the pool saturation x ready endpoints (max over EPP pods), for
     * targetSaturation */
    double saturation_load;
} demand_signals_t;

/*
 * Computes the value and activity for c (c->demand.type != DEMAND_NONE)
 * from s, and from gpu (the GPU evaluation, required when
 * trigger_uses_gpu(c); a non-OK gpu is passed through). *out is fully
 * written.
 *
 * Activity: work waiting or in flight. Single-signal types: value >
 * activationThreshold, or requests running in the engines, or (Triton)
 * requests completed within the window. demand: queue (engine waiting +
 * queue) > activationQueue, or running > 0, or the GPU metric >
 * activationGpu.
 *
 * triton_queue_wait_ms is queue time / requests completed in the window; with
 * none completed it is 0 only when nothing is pending either: requests
 * pending that none finished is a wait nobody measured, so UNAVAILABLE.
 */
void demand_evaluate(const trigger_config_t *c, const demand_signals_t *s, const eval_result_t *gpu,
                     eval_result_t *out);

/* demand (composite): the replicas each signal with a target asks for
 * (need[i] = signal / its target; NaN for a signal without one), as
 * demand_evaluate() takes their max. Returns the signal with the largest
 * need above 0, or -1 when none asks for anything. gpu may be NULL when the
 * trigger has no targetGpu. */
int demand_composite_needs(const demand_config_t *d, const demand_signals_t *s,
                           const eval_result_t *gpu, double need[DSIG_COUNT]);

/* What the hub knows about one source of a trigger: a read of its latest
 * poll. */
typedef enum {
    DEMAND_SOURCE_NOT_STARTED, /* the trigger reads it but nothing polls it (yet) */
    DEMAND_SOURCE_NOT_CREATED, /* it could not be set up; error says why */
    DEMAND_SOURCE_WAITING,     /* the first poll is under way */
    DEMAND_SOURCE_FAILED,      /* the last poll (or the name's resolution) failed; error says why */
    DEMAND_SOURCE_READING,     /* a reading, of age now - last_ok */
} demand_source_state_t;

/* What a failed poll says of the server behind a source. */
typedef enum {
    DEMAND_FAIL_OTHER,     /* the server answered wrong, or the setup is wrong: a failure */
    DEMAND_FAIL_NO_SERVER, /* nobody there: the connect was refused, unreachable or unanswered,
                              or a proxy answered 502/503/504 (no server behind it) */
    DEMAND_FAIL_SLOW,      /* a server took the connection and did not answer in time */
} demand_fail_t;

typedef struct {
    demand_source_state_t state;
    const char *name;   /* for messages: the display name, or the URL ("queue" for a queue)
                           when there is no source; borrowed */
    const char *error;  /* NOT_CREATED, FAILED: the reason; borrowed */
    demand_fail_t fail; /* FAILED: what the failure says of the server */
    /* Whether the source ever answered since polling began, and whether its
     * last answer (kept through later failures) had requests waiting or
     * running: an engine that stopped answering while busy held work. */
    bool answered, last_busy;
    mono_ns_t created; /* WAITING: when polling began */
    /* A pod being deleted that still finishes its requests (demandModel:
     * queueing reads it): its reading counts when there is one; that it
     * stopped answering is not a failure. */
    bool draining;
    mono_ns_t last_ok; /* READING: the last successful poll */
    /* READING: stale after max(3 x interval, interval + timeout) */
    uint64_t interval_ns, timeout_ns;
    engine_reading_t reading; /* engines, READING */
    /* Engines, READING: the URL answered lately from processes taking turns
     * (process_start_time_seconds went back to one it had shown before
     * another): a load-balanced URL, a Service's replicas one per poll. Its
     * gauges are one replica's; its counters teach the queueing model no
     * rate (one replica's rate is not the fleet's). */
    bool taking_turns;
    /* Triton, READING: counter increases over the trigger's window, known
     * once the window holds two polls. */
    bool rates_known;
    double queue_us_delta, success_delta, span_s;
    double queue; /* queues, READING: the length */
    /* Engines with token counters, READING, for the token-rate signals: the
     * prompt and generation counters' increases over windowSeconds (from
     * tokens_span_s seconds of polls), known once it holds two polls. */
    bool tokens_known;
    double prompt_delta, generation_delta, tokens_span_s;
} demand_source_t;

/* How far a pod's start got, as its status tells it (aggregator: the
 * PodScheduled and Ready conditions and the containers' startedAt; all
 * zero / false: not known). Not Ready: where its start is (a
 * queue_model_stage_t; 0 not known), for how long (seconds), and whether
 * the scheduler found no node for it (Unschedulable). Ready: its completed
 * start by stage (node, image, weights) when the times tell them
 * (has_stages). */
typedef struct {
    unsigned char stage;
    double stage_age_s;
    bool waiting_for_node;
    bool has_stages;
    double stage_s[QUEUE_MODEL_STAGES];
} demand_pod_start_t;

/* One pod of the workload as the aggregator's pod list shows it: what
 * demandModel: queueing learns the cold start from and counts as capacity
 * on its way. */
typedef struct {
    uint64_t id;  /* stable for the pod's life (a hash of namespace/name/uid) */
    bool ready;   /* the Ready condition is True */
    double age_s; /* seconds since metadata.creationTimestamp; < 0 unknown */
    demand_pod_start_t start;
} demand_pod_t;

/* demandModel: queueing's state for one trigger and namespace: the
 * estimators, the pods seen starting (to observe create -> Ready once per
 * pod), and the last decision (for `query`). Caller-owned; demand_model_init. */
typedef struct {
    queue_model_t m;
    unsigned ntracked;
    uint64_t tracked_id[QUEUE_MODEL_MAX_STARTING];
    bool have_decision;
    queue_model_decision_t last; /* the inputs and the replicas of the last evaluation */
    unsigned last_ready, last_starting;
    bool last_has_counters; /* completions were read (else the queue-only fallback) */
    bool last_has_tokens;   /* the token counters were read */
    bool last_taking_turns; /* an engine URL's processes took turns: its counters unread */
} demand_model_state_t;

void demand_model_init(demand_model_state_t *s);

/*
 * What one evaluation of a demand trigger saw and why it answered as it
 * did: each signal's value, the replicas each signal with a target asks
 * for, which one decided, each latency target's observed quantile, and the
 * engines behind it. Written by demand_evaluate_inputs() into learned->view
 * (the subscription's, kept between evaluations) so that `query`, the
 * Explain RPC and /metrics show the decision KEDA was given, not a new one.
 */
typedef struct {
    bool evaluated;       /* an evaluation wrote this view */
    mono_ns_t at;         /* when */
    eval_status_t status; /* its answer */
    double value;         /* EVAL_OK: the value KEDA got */
    bool active, wake;
    char *message;          /* not EVAL_OK: the error (owned; NULL otherwise) */
    bool known[DSIG_COUNT]; /* the signal was read this time */
    double signal[DSIG_COUNT];
    /* replicas the signal asks for; NaN: it has no target (read, not used) */
    double need[DSIG_COUNT];
    int decided_by; /* demand_signal_t whose need is the value; -1: none decides
                       (nothing asks, a single-signal type, or not EVAL_OK) */
    /* latency targets: [signal][p50, p90, p99]; target_s 0 = not set */
    struct {
        double target_s;
        bool known;        /* requests were observed in the window */
        double observed_s; /* the quantile over the window */
        double count;      /* requests in the window */
        bool judged;       /* enough requests to act on (slo_decide) */
    } latency[SLO_SIGNAL_COUNT][3];
    /* the engines: answering, not there (no replica serving), failing, waiting */
    unsigned engines, answering, not_serving, failing, pending;
    bool has_pods; /* the pod list was read (aggregator, podSelector) */
    unsigned ready_pods, starting_pods;
    char *not_serving_why; /* the first engine not serving: name and reason (owned; NULL
                              when none): strings only where there is something to say, so
                              a healthy trigger's view holds numbers alone */
    /* engines whose page lacked a family the engine creates on first use
     * (TGI's tgi_queue_size before its first request), read as the
     * engine's zero; the first one's description (owned; NULL when none) */
    unsigned first_use;
    char *first_use_why;
    /* engines answered from processes taking turns (demand_source_t); the
     * first one's name (owned; NULL when none) */
    unsigned taking_turns;
    char *taking_turns_at;
} demand_view_t;

/* An empty view (evaluated false); demand_view_free releases its strings. */
void demand_view_init(demand_view_t *v);
void demand_view_free(demand_view_t *v);

/* A trigger's view and who it belongs to (for /metrics; all borrowed). */
typedef struct {
    const char *ns;
    const char *scaled_object; /* the ScaledObject that asked last; "" not known */
    const char *metric_name;
    const demand_view_t *view;
} demand_view_ref_t;

/* Everything the sources layer read for one trigger: the "signals read so
 * far" of demand_evaluate_inputs(), which only reads it (what it learns is
 * demand_learned_t). Pointers borrowed for the call. */
typedef struct {
    /* EVAL_OK, or the engine pods could not be listed: EVAL_UNAVAILABLE
     * ("engine pods: <pods_error>") or EVAL_FAILED_PRECONDITION (the role
     * cannot list pods; pods_error is the whole message). */
    eval_status_t pods_status;
    char pods_error[512];
    /* Non-empty: a source the trigger needs was refused by a budget
     * (--max-sources ...); the whole answer is RESOURCE_EXHAUSTED with it. */
    char limit_error[300];
    const demand_source_t *engines; /* one per engine URL or selected pod */
    unsigned nengines;
    bool has_queue_source; /* the trigger reads a Redis / Prometheus queue: `queue` */
    demand_source_t queue;
    /* The selected pods, Ready or not (aggregator with podSelector); has_pods
     * false: no pod list (explicit URLs, or a queue alone), and the Ready
     * replicas are the engines that answer. */
    bool has_pods;
    const demand_pod_t *pods;
    unsigned npods;
    /* Latency over the trigger's window (c->demand.slo_mask signals), merged
     * over every pod that answered; known false: no request in the window. */
    demand_latency_t latency[SLO_SIGNAL_COUNT];
} demand_inputs_t;

/* What the evaluation of one trigger in one namespace learns and keeps from
 * one call to the next. demand_evaluate_inputs() reads and rewrites it (every
 * evaluation teaches the model), so it is an argument of its own, apart from
 * the inputs it only reads. The caller owns each part (the aggregator's hub
 * keeps one of each per subscription and hands them out with
 * source_hub_signals()). */
typedef struct {
    /* forecast: trend state (NULL: none, the value is left as it is). */
    forecast_t *forecast;
    /* demandModel: queueing state (NULL: the model starts from its priors
     * on every call). */
    demand_model_state_t *model;
    /* The decision view (NULL: none is kept): rewritten by every
     * evaluation. */
    demand_view_t *view;
} demand_learned_t;

/*
 * The one home of the demand rules: (config, what the sources read, clock,
 * GPU evaluation) -> value / active / typed error. In order:
 *   - a source was refused by a budget: RESOURCE_EXHAUSTED with limit_error;
 *   - the pod list could not be read: its status;
 *   - the queue could not be set up: UNAVAILABLE "queue: <why>";
 *   - an engine answered without a gauge the type needs: FAILED_PRECONDITION
 *     "<name> exports no <gauge> ..." (with partialData: ignore, that engine
 *     counts as failing instead);
 *   - engines failed (poll error, resolution, stale reading): UNAVAILABLE
 *     with the first failure and "(N of M engine endpoints failing)" when
 *     there are several; with partialData: ignore only when none answers;
 *   - engines still waiting for their first poll (same partialData rule)
 *     or, for Triton rates, for a second poll: UNAVAILABLE with pending set;
 *   - the queue failed, is stale or waits (pending) for its first poll;
 *   - else demand_evaluate() over the summed signals (engine epp: the
 *     flow-control queues summed over EPP pods, plus the max over pods of
 *     each pool count, pool_waiting to waiting, pool_running to running,
 *     pool_kv_percent to kv_percent), then the forecast;
 *     for demandModel: queueing, the summed counters, gauges, queue and
 *     pods are fed to learned->model (at the newest reading's time: a read
 *     with no new poll feeds nothing) and the value is 100 x its replicas.
 * out->inputs adds the engines that answered. *out is fully written, and
 * so is *learned->view when there is one (demand_view_init'ed; its strings
 * are replaced, kept when unchanged). learned may be NULL: nothing is kept
 * (as when each of its parts is NULL).
 */
void demand_evaluate_inputs(const trigger_config_t *c, const demand_inputs_t *in,
                            demand_learned_t *learned, mono_ns_t now, const eval_result_t *gpu,
                            eval_result_t *out);

/*
 * forecast: trend. Feeds an OK result's value into f (the trigger's own
 * state, caller-owned and initialised with forecast_init) at now_s, then
 * replaces the value with the demand expected coldStartSeconds ahead (never
 * less than the value now). Activity is left as it is: waking from zero
 * follows the work that exists, not the forecast. Does nothing unless
 * c->demand.forecast_trend and out->status == EVAL_OK.
 */
void demand_forecast_apply(const trigger_config_t *c, forecast_t *f, double now_s,
                           eval_result_t *out);

#endif
