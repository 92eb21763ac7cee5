/*
 * demand_eval.c - see the header. The one subtle rule: a fleet that is busy
 * with an empty queue is active (running > 0), so KEDA does not count down
 * cooldownPeriod and kill pods that are serving requests.
 */
#include "core/demand_eval.h"

#include <stdio.h>
#include <string.h>

void demand_evaluate(const trigger_config_t *c, const demand_signals_t *s, const eval_result_t *gpu,
                     eval_result_t *out) {
    const demand_config_t *d = &c->demand;
    memset(out, 0, sizeof *out);
    if (trigger_uses_gpu(c) && (!gpu || gpu->status != EVAL_OK)) {
        if (gpu)
            *out = *gpu;
        else {
            out->status = EVAL_UNAVAILABLE;
            snprintf(out->message, sizeof out->message, "no GPU evaluation");
        }
        out->active = false;
        return;
    }
    double queue = (s->has_queue ? s->queue : 0) + (s->has_engine ? s->waiting : 0);
    bool running = s->has_engine && s->running > 0;
    double v = 0;
    bool active = false;
    switch (d->type) {
    case DEMAND_VLLM_QUEUE_DEPTH:
    case DEMAND_ENGINE_QUEUE:
        v = s->waiting;
        break;
    case DEMAND_VLLM_KV_CACHE_USAGE:
    case DEMAND_ENGINE_KV_CACHE:
        v = s->kv_percent;
        break;
    case DEMAND_ENGINE_RUNNING:
        v = s->running;
        break;
    case DEMAND_TRITON_QUEUE_WAIT_MS:
        if (s->completed > 0) {
            v = s->queue_us / s->completed / 1000.0;
        } else if (s->waiting > 0) {
            out->status = EVAL_UNAVAILABLE;
            snprintf(out->message, sizeof out->message,
                     "triton: %.0f request(s) pending and none completed in the window: the "
                     "queue wait is not known (it is not 0)",
                     s->waiting);
            return;
        } else {
            v = 0; /* idle: nothing waited */
        }
        active = s->request_rate > 0 || s->waiting > 0;
        break;
    case DEMAND_TRITON_REQUEST_RATE:
        v = s->request_rate;
        active = s->waiting > 0;
        break;
    case DEMAND_QUEUE_LENGTH:
        v = s->queue;
        break;
    case DEMAND_COMPOSITE: {
        double need = 0;
        if (d->target_queue > 0 && queue / d->target_queue > need)
            need = queue / d->target_queue;
        if (d->target_running > 0 && s->running / d->target_running > need)
            need = s->running / d->target_running;
        if (d->target_kv > 0 && s->kv_percent / d->target_kv > need)
            need = s->kv_percent / d->target_kv;
        if (d->target_gpu > 0 && gpu->value / d->target_gpu > need)
            need = gpu->value / d->target_gpu;
        v = need * 100;
        active = (d->target_queue > 0 && queue > d->activation_queue) || running ||
                 (d->target_gpu > 0 && gpu->value > d->activation_gpu);
        out->status = EVAL_OK;
        out->value = v;
        out->active = active;
        out->inputs = gpu ? gpu->inputs : 0;
        return;
    }
    case DEMAND_NONE:
    case DEMAND_TYPE_COUNT:
        out->status = EVAL_FAILED_PRECONDITION;
        snprintf(out->message, sizeof out->message, "not a demand trigger");
        return;
    }
    out->status = EVAL_OK;
    out->value = v;
    out->active = v > c->activation_threshold || running || active;
}

void demand_forecast_apply(const trigger_config_t *c, forecast_t *f, double now_s,
                           eval_result_t *out) {
    if (!c->demand.forecast_trend || out->status != EVAL_OK || !f)
        return;
    forecast_update(f, now_s, out->value); /* a bad sample (NaN) is refused and ignored */
    out->value = forecast_ahead(f, now_s, (double)c->demand.cold_start_s, out->value);
}
