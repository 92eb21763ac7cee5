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
#ifndef KGS_DEMAND_EVAL_H
#define KGS_DEMAND_EVAL_H

#include <stdbool.h>

#include "core/evaluator.h"
#include "core/forecast.h"
#include "core/trigger_config.h"

typedef struct {
    bool has_engine;     /* engine signals below are known (all pods read, or no pods) */
    double waiting;      /* requests waiting in the engines */
    double running;      /* requests in flight in the engines */
    double kv_percent;   /* KV-cache usage %, summed over engines and pods */
    bool has_rates;      /* Triton: counter increases over the window are known */
    double queue_us;     /* queue time added in the window, all pods, microseconds */
    double completed;    /* requests completed in the window, all pods */
    double request_rate; /* requests/s, summed over pods */
    bool has_queue;      /* the Redis / Prometheus queue below is known */
    double queue;
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
