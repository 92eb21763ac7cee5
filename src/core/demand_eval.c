/*
 * demand_eval.c - see the header. The one subtle rule: a fleet that is busy
 * with an empty queue is active (running > 0), so KEDA does not count down
 * cooldownPeriod and kill pods that are serving requests.
 */
#include "core/demand_eval.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/duration.h"
#include "core/hash.h"

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
    case DEMAND_SLO:
        /* the latency part is demand_evaluate_inputs()'s (slo_decide) */
        v = 0;
        active = queue > 0;
        break;
    case DEMAND_ENGINE_PROMPT_TOKENS_RATE:
        v = s->prompt_tokens_rate;
        break;
    case DEMAND_ENGINE_GENERATION_TOKENS_RATE:
        v = s->generation_tokens_rate;
        break;
    case DEMAND_VLLM_LORA_WAITING_ENGINES:
        /* one adapter's trigger: active for that adapter's work, not for
         * whatever else the engines run */
        v = s->lora_waiting_engines;
        running = s->lora_running;
        break;
    case DEMAND_COMPOSITE: {
        double needs[DSIG_COUNT];
        int top = demand_composite_needs(d, s, gpu, needs);
        double need = top >= 0 ? needs[top] : 0;
        /* 0 unless a target reads them (then known: pending answered already) */
        double prompt = s->prompt_tokens_rate, gen = s->generation_tokens_rate;
        v = need * 100;
        if (!isfinite(v)) {
            out->status = EVAL_UNAVAILABLE;
            snprintf(out->message, sizeof out->message,
                     "metricType demand: the replicas needed for the signals are not finite");
            return;
        }
        /* the queueing model's value is set by demand_evaluate_inputs() */
        active = ((d->target_queue > 0 || d->sizing == DEMAND_MODEL_QUEUEING) &&
                  queue > d->activation_queue) ||
                 running || (d->target_gpu > 0 && gpu->value > d->activation_gpu) ||
                 (d->target_prompt_tokens > 0 && prompt > 0) ||
                 (d->target_generation_tokens > 0 && gen > 0);
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
    if (!isfinite(v)) {
        /* signals that are each finite can still divide or multiply past a
         * double: unknown, never the largest value KEDA can be sent */
        out->status = EVAL_UNAVAILABLE;
        snprintf(out->message, sizeof out->message,
                 "metricType %s: the value computed from the signals is not finite",
                 demand_type_name(d->type));
        return;
    }
    out->status = EVAL_OK;
    out->value = v;
    out->active = v > c->activation_threshold || running || active;
}

int demand_composite_needs(const demand_config_t *d, const demand_signals_t *s,
                           const eval_result_t *gpu, double need[DSIG_COUNT]) {
    for (int i = 0; i < DSIG_COUNT; i++)
        need[i] = NAN;
    double queue = (s->has_queue ? s->queue : 0) + (s->has_engine ? s->waiting : 0);
    const struct {
        demand_signal_t sig;
        double target, value;
    } t[] = {
        {DSIG_QUEUE, d->target_queue, queue},
        {DSIG_ENGINE_RUNNING, d->target_running, s->running},
        {DSIG_KV_CACHE, d->target_kv, s->kv_percent},
        {DSIG_GPU, d->target_gpu, gpu ? gpu->value : 0},
        {DSIG_PROMPT_TOKENS, d->target_prompt_tokens, s->prompt_tokens_rate},
        {DSIG_GENERATION_TOKENS, d->target_generation_tokens, s->generation_tokens_rate},
        {DSIG_SATURATION, d->target_saturation, s->saturation_load},
    };
    int top = -1;
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        if (!(t[i].target > 0))
            continue;
        need[t[i].sig] = t[i].value / t[i].target;
        if (need[t[i].sig] > 0 && (top < 0 || need[t[i].sig] > need[top]))
            top = (int)t[i].sig;
    }
    return top;
}

const char *demand_signal_name(demand_signal_t s) {
    static const char *const names[DSIG_COUNT] = {"queue",
                                                  "queue_source",
                                                  "engine_waiting",
                                                  "engine_running",
                                                  "kv_cache",
                                                  "gpu",
                                                  "prompt_tokens_rate",
                                                  "generation_tokens_rate",
                                                  "pool_saturation",
                                                  "queueing_model",
                                                  "latency"};
    return (unsigned)s < DSIG_COUNT ? names[s] : "?";
}

const char *slo_signal_name(slo_signal_t s) {
    static const char *const names[SLO_SIGNAL_COUNT] = {"ttft", "tpot", "e2e", "queue_time", "itl"};
    return (unsigned)s < SLO_SIGNAL_COUNT ? names[s] : "?";
}

static const double slo_quantiles[TRIGGER_SLO_QUANTILES] = {0.5, 0.9, 0.99};

/* The requests a window needs before quantile q is judged: at least two
 * above it, so one slow request cannot set it (1 - q in floating point is
 * not exact: round), and at least sloMinRequests. */
static double slo_min_count(const demand_config_t *d, int q) {
    double need = floor(2 / (1 - slo_quantiles[q]) + 0.5);
    return need < (double)d->slo_min_requests ? (double)d->slo_min_requests : need;
}

/* The requests behind signal s's quantiles: its own count, except for
 * inter-token latency, whose observations are tokens: there the requests
 * that finished in the window (the end-to-end histogram's count, read
 * beside it), so a long request's many tokens never count as many
 * requests; 0 (never judged) when that is not known. */
static double slo_requests(const demand_latency_t lat[SLO_SIGNAL_COUNT], int s) {
    if (s != SLO_ITL)
        return lat[s].count;
    return lat[SLO_E2E].known && isfinite(lat[SLO_E2E].count) ? lat[SLO_E2E].count : 0;
}

bool slo_decide(const demand_config_t *d, const demand_latency_t lat[SLO_SIGNAL_COUNT],
                double ready, slo_decision_t *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    out->worst_signal = out->worst_quantile = -1;
    for (int s = 0; s < SLO_SIGNAL_COUNT; s++) {
        if (!(d->slo_mask & (1u << s)) || !lat[s].known)
            continue;
        const demand_latency_t *l = &lat[s];
        const double pv[TRIGGER_SLO_QUANTILES] = {l->p50_s, l->p90_s, l->p99_s};
        if (!(isfinite(l->count) && l->count > 0)) {
            if (err)
                snprintf(err, errlen, "%s: %g requests in the window is not a count",
                         slo_signal_name((slo_signal_t)s), l->count);
            return false;
        }
        out->observed = true;
        for (int q = 0; q < TRIGGER_SLO_QUANTILES; q++) {
            double target = d->slo_target_s[s][q];
            if (!(target > 0))
                continue;
            if (!(isfinite(pv[q]) && pv[q] >= 0)) {
                if (err)
                    snprintf(err, errlen, "%s p%g: %g s is not a latency",
                             slo_signal_name((slo_signal_t)s), slo_quantiles[q] * 100, pv[q]);
                return false;
            }
            double r = pv[q] / target;
            if (slo_requests(lat, s) < slo_min_count(d, q)) {
                /* too few requests to act on: never a reason to scale up,
                 * but not "latency is fine" either when it reads slow */
                if (r > out->thin)
                    out->thin = r;
                continue;
            }
            if (!out->judged || r > out->worst) {
                out->worst = r;
                out->worst_signal = s;
                out->worst_quantile = q;
            }
            out->judged = true;
        }
    }
    if (!out->observed)
        return true;
    double R = ready > 1 ? ready : 1;
    double r = out->judged ? out->worst : 0;
    double thin = out->thin < 1 ? out->thin : 1;
    if (r < thin)
        r = thin;
    double want = fabs(r - 1) <= d->slo_tolerance ? R : R * r;
    double step = d->slo_max_step > 1 ? d->slo_max_step : 2;
    if (want > R * step) {
        want = R * step;
        out->clamped = true;
    } else if (want < R / step) {
        want = R / step;
        out->clamped = true;
    }
    if (want < 1)
        want = 1;
    out->replicas = want;
    return true;
}

/* The Ready replicas: the pods listed Ready, else the engines that answered. */
static double ready_replicas(const demand_inputs_t *in, unsigned answered) {
    if (!in->has_pods)
        return answered;
    unsigned n = 0;
    for (unsigned i = 0; i < in->npods; i++)
        n += in->pods[i].ready;
    return n;
}

static void fail(eval_result_t *out, eval_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail(eval_result_t *out, eval_status_t st, const char *fmt, ...) {
    memset(out, 0, sizeof *out);
    out->status = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->message, sizeof out->message, fmt, ap);
    va_end(ap);
}

typedef enum { SS_OK, SS_PENDING, SS_FAILED, SS_NOT_SERVING } source_verdict_t;

/* Whether a source's reading is usable now; the message says why not. A
 * reading older than max(3 x interval, interval + timeout) is stale: the
 * source stopped answering, and unknown is never 0. */
static source_verdict_t source_verdict(const demand_source_t *s, mono_ns_t now, char *msg,
                                       size_t len) {
    char d[32];
    switch (s->state) {
    case DEMAND_SOURCE_NOT_CREATED:
    case DEMAND_SOURCE_FAILED:
        snprintf(msg, len, "%s: %s", s->name, s->error ? s->error : "?");
        return SS_FAILED;
    case DEMAND_SOURCE_NOT_STARTED:
        snprintf(msg, len, "%s: waiting for the first poll (not started yet)", s->name);
        return SS_PENDING;
    case DEMAND_SOURCE_WAITING:
        snprintf(msg, len, "%s: waiting for the first poll (started %s ago)", s->name,
                 duration_format(now - s->created, d, sizeof d));
        return SS_PENDING;
    case DEMAND_SOURCE_READING:
        break;
    }
    uint64_t stale = 3 * s->interval_ns;
    if (s->interval_ns + s->timeout_ns > stale)
        stale = s->interval_ns + s->timeout_ns;
    if (now - s->last_ok > stale) {
        snprintf(msg, len, "%s: last successful poll %s ago (stale)", s->name,
                 duration_format(now - s->last_ok, d, sizeof d));
        return SS_FAILED;
    }
    return SS_OK;
}

typedef struct {
    unsigned total, ok, failed, pending;
    /* Engines with nobody there, counted as no replica serving (their
     * signals 0) because the trigger reads a queue: engine_not_serving(). */
    bool queue_speaks;
    unsigned not_serving;
    char first_not_serving[2048];
    unsigned taking_turns; /* engines answered by processes taking turns */
    char first_taking_turns[512];
    bool rates_pending;
    char first_failure[2048];
    char first_pending[2048];
    char missing[2048];
    demand_signals_t sig;
    double dq_us, dsuccess;
    /* the queueing model's counters, summed over the engines that answered;
     * known only when every one of them exports them */
    bool no_completed, no_tokens;
    double completed, prompt_tokens, generation_tokens;
    bool tokens_pending;        /* a token-rate window does not hold two polls yet */
    unsigned long long members; /* sum of the answering engines' name hashes */
    mono_ns_t newest;           /* the newest reading */
    /* engine epp: the pool gauges, the max over EPP pods (each replica
     * reports the same model servers: summing would count them once per
     * replica); added to the summed signals when the answer is built */
    double pool_waiting, pool_running, pool_kv_percent, saturation_load;
    /* engines that read a first-use family as the engine's zero (TGI
     * before its first request), and the first one's description */
    unsigned first_use;
    char first_use_why[512];
} engine_acc_t;

/* The gauge an engine's reading lacks for this metric type, or NULL;
 * *role: the engine table's role of it (EMR_COUNT: no single role). */
static const char *missing_gauge(const demand_config_t *d, const engine_reading_t *r,
                                 engine_metric_role_t *role) {
    *role = EMR_COUNT;
    bool rates = d->type == DEMAND_TRITON_QUEUE_WAIT_MS || d->type == DEMAND_TRITON_REQUEST_RATE;
    bool need_waiting = d->type == DEMAND_VLLM_QUEUE_DEPTH || d->type == DEMAND_ENGINE_QUEUE ||
                        (d->type == DEMAND_COMPOSITE &&
                         (d->target_queue > 0 || d->sizing == DEMAND_MODEL_QUEUEING));
    bool need_running =
        d->type == DEMAND_ENGINE_RUNNING || (d->type == DEMAND_COMPOSITE && d->target_running > 0);
    bool need_kv = d->type == DEMAND_VLLM_KV_CACHE_USAGE || d->type == DEMAND_ENGINE_KV_CACHE ||
                   (d->type == DEMAND_COMPOSITE && d->target_kv > 0);
    if (d->engine == ENGINE_EPP) {
        if (d->type == DEMAND_COMPOSITE && d->target_saturation > 0 && !r->has_saturation) {
            *role = EMR_EPP_SATURATION;
            return "the pool saturation paired with its pool's ready endpoints "
                   "(llm_d_epp_flow_control_pool_saturation{inference_pool} with "
                   "llm_d_epp_ready_endpoints{name}, or their inference_extension_ / "
                   "inference_pool_ names)";
        }
        if (need_waiting && !r->has_waiting)
            return "the flow-control queue (llm_d_epp_flow_control_queue_size, or "
                   "inference_extension_flow_control_queue_size) or the InferencePool gauges "
                   "(llm_d_epp_ready_endpoints with llm_d_epp_average_queue_size, or "
                   "inference_pool_ready_pods with inference_pool_average_queue_size)";
        if (need_running && !r->has_running) {
            *role = r->has_pool ? EMR_EPP_AVG_RUNNING : EMR_COUNT;
            return "the InferencePool gauges llm_d_epp_ready_endpoints and "
                   "llm_d_epp_average_running_requests (or inference_pool_ready_pods and "
                   "inference_pool_average_running_requests)";
        }
        if (need_kv && !r->has_kv)
            return "the InferencePool gauges llm_d_epp_ready_endpoints and "
                   "llm_d_epp_average_kv_cache_utilization (or inference_pool_ready_pods and "
                   "inference_pool_average_kv_cache_utilization)";
    }
    if (need_waiting && !r->has_waiting) {
        *role = EMR_WAITING;
        return "the waiting-requests gauge";
    }
    if (need_running && !r->has_running) {
        *role = EMR_RUNNING;
        return "the running-requests gauge";
    }
    if (need_kv && !r->has_kv) {
        *role = EMR_KV;
        return "the KV-cache usage gauge";
    }
    if (rates && !r->has_triton) {
        *role = EMR_QUEUE_US;
        return "nv_inference_queue_duration_us / nv_inference_request_success";
    }
    if (demand_uses_token_rates(d) && !r->has_tokens)
        return "the prompt- and generation-token counters";
    if (d->type == DEMAND_VLLM_LORA_WAITING_ENGINES) {
        if (!r->has_waiting || !r->has_running)
            return "the waiting- and running-requests gauges";
        /* no series: LoRA is off (vLLM then refuses adapter requests) or no
         * step ran yet; either way none of its requests waits or runs while
         * the engine is idle, but with work present it is not known */
        if (!r->has_lora && (r->waiting > 0 || r->running > 0))
            return "vllm:lora_requests_info while it has requests waiting or running (is LoRA "
                   "enabled: --enable-lora?)";
    }
    return NULL;
}

/* The first value of a reading that is not a count (each is one: requests,
 * a share of the cache, microseconds, requests done), or NULL. The
 * sources refuse such readings already; this is the evaluation's own check
 * on what it is given. */
static const char *bad_reading(const engine_reading_t *r) {
    const struct {
        bool has;
        double v;
        const char *name;
    } f[] = {
        {r->has_waiting, r->waiting, "the waiting-requests gauge"},
        {r->has_running, r->running, "the running-requests gauge"},
        {r->has_kv, r->kv_percent, "the KV-cache usage gauge"},
        {r->has_triton, r->queue_us, "the queue-time counter"},
        {r->has_triton, r->success, "the completed-requests counter"},
        {r->has_completed, r->completed_total, "the completed-requests counter"},
        {r->has_tokens, r->prompt_tokens_total, "the prompt-tokens counter"},
        {r->has_tokens, r->generation_tokens_total, "the generated-tokens counter"},
        {r->has_pool, r->pool_ready, "the ready-endpoints gauge"},
        {r->has_waiting, r->pool_waiting, "the pool's waiting requests"},
        {r->has_running, r->pool_running, "the pool's running requests"},
        {r->has_kv, r->pool_kv_percent, "the pool's KV-cache usage"},
        {r->has_saturation, r->saturation_load, "the pool saturation"},
    };
    for (size_t i = 0; i < sizeof f / sizeof *f; i++)
        if (f[i].has && !(isfinite(f[i].v) && f[i].v >= 0))
            return f[i].name;
    return NULL;
}

/* The first sum over the engines that overflowed a double, or NULL. */
static const char *bad_sum(const engine_acc_t *x) {
    const struct {
        double v;
        const char *name;
    } f[] = {
        {x->sig.waiting, "the waiting requests"},
        {x->sig.running, "the running requests"},
        {x->sig.kv_percent, "the KV-cache usage"},
        {x->sig.request_rate, "the request rate"},
        {x->sig.prompt_tokens_rate, "the prompt-token rate"},
        {x->sig.generation_tokens_rate, "the generation-token rate"},
        {x->dq_us, "the queue time"},
        {x->dsuccess, "the completed requests"},
        {x->no_completed ? 0 : x->completed, "the completed-requests counters"},
        {x->no_tokens ? 0 : x->prompt_tokens, "the prompt-tokens counters"},
        {x->no_tokens ? 0 : x->generation_tokens, "the generated-tokens counters"},
        {x->sig.waiting + x->pool_waiting, "the waiting requests"},
        {x->sig.running + x->pool_running, "the running requests"},
        {x->sig.kv_percent + x->pool_kv_percent, "the KV-cache usage"},
    };
    for (size_t i = 0; i < sizeof f / sizeof *f; i++)
        if (!isfinite(f[i].v))
            return f[i].name;
    return NULL;
}

/*
 * Whether a failing engine is simply not there: no replica serving behind
 * its URL, as at zero replicas or while the first ones start (a Service
 * without ready endpoints refuses or drops the connect, a proxy answers
 * 503). Nobody answered the connect, or a proxy said no server is behind
 * it; or the response timed out and the engine never answered or last
 * answered idle (a server that was busy and now times out holds work that
 * is not known: that stays a failure).
 */
static bool engine_not_serving(const demand_source_t *s) {
    if (s->state != DEMAND_SOURCE_FAILED)
        return false;
    return s->fail == DEMAND_FAIL_NO_SERVER || (s->fail == DEMAND_FAIL_SLOW && !s->last_busy);
}

/* What a reading of s lacks for trigger d, into x->missing (the first
 * one; the engine then counts as failing): a gauge or counter the type
 * needs, or a latency histogram the engine's release or configuration
 * does not export (reading.hist_lacking). On a page that is recognisably
 * the engine the message quotes the engine table (core/engine_table.h):
 * the release that added the metric, or the flag that turns it on; on
 * any other page it asks whether the URL is the engine's metrics
 * endpoint. true when something is lacking. */
static bool engine_lacks(engine_acc_t *x, const demand_config_t *d, const demand_source_t *s) {
    const engine_reading_t *r = &s->reading;
    engine_metric_role_t role;
    const char *lack = missing_gauge(d, r, &role);
    char why[700];
    why[0] = '\0';
    if (lack && r->recognised && role < EMR_COUNT)
        engine_table_missing_role(d->engine, role, -1, why, sizeof why);
    if (lack && d->model[0] && r->other_models[0]) {
        /* the most common mistake: a model name the page does not have */
        if (!x->missing[0])
            snprintf(x->missing, sizeof x->missing,
                     "%s does not export %s for model \"%s\": no series carries that model "
                     "name; the page's model names: %s%s (the trigger's `model` must match one "
                     "exactly)",
                     s->name, lack, d->model, r->other_models,
                     r->other_models_more ? ", and more" : "");
        x->failed++;
        return true;
    }
    if (lack) {
        if (!x->missing[0] && why[0])
            snprintf(x->missing, sizeof x->missing, "%s does not export %s%s%s%s: %s%s", s->name,
                     lack, d->model[0] ? " for model \"" : "", d->model, d->model[0] ? "\"" : "",
                     why,
                     role == EMR_WAITING && d->engine == ENGINE_TRITON
                         ? " (metricType triton_queue_wait_ms and triton_request_rate read "
                           "counters every Triton release has)"
                         : "");
        else if (!x->missing[0])
            snprintf(x->missing, sizeof x->missing,
                     "%s does not export %s%s%s%s (is it %s, and is the URL its metrics "
                     "endpoint?)",
                     s->name, lack, d->model[0] ? " for model \"" : "", d->model,
                     d->model[0] ? "\"" : "", engine_name(d->engine));
        x->failed++;
        return true;
    }
    unsigned lacking = r->hist_lacking & d->slo_mask;
    if (!lacking)
        return false;
    int sg = 0;
    while (!(lacking & (1u << sg)))
        sg++;
    if (!x->missing[0]) {
        engine_table_missing_role(d->engine, EMR_LATENCY, sg, why, sizeof why);
        const engine_metric_t *itl = engine_table_primary(d->engine, EMR_LATENCY, SLO_ITL);
        snprintf(x->missing, sizeof x->missing, "%s: the %s target%s cannot be read: %s%s%s%s",
                 s->name, slo_signal_name((slo_signal_t)sg),
                 sg == SLO_E2E && (d->slo_mask & (1u << SLO_ITL))
                     ? " (its request count judges the itl targets)"
                     : "",
                 why[0] ? why : "the engine exports no such histogram",
                 sg == SLO_TPOT && itl ? "; itl*Target reads " : "",
                 sg == SLO_TPOT && itl ? itl->name : "",
                 sg == SLO_TPOT && itl ? " (one observation per generated token)" : "");
    }
    x->failed++;
    return true;
}

/* A reading that read a first-use family as the engine's zero: counted,
 * and the first one described, for `query` and Explain. */
static void note_first_use(engine_acc_t *x, const demand_config_t *d, const demand_source_t *s) {
    unsigned z = s->reading.first_use_zero;
    if (!z)
        return;
    x->first_use++;
    if (x->first_use_why[0])
        return;
    static const struct {
        unsigned bit;
        engine_metric_role_t role;
    } f[] = {{ENGINE_ZERO_WAITING, EMR_WAITING},
             {ENGINE_ZERO_RUNNING, EMR_RUNNING},
             {ENGINE_ZERO_COMPLETED, EMR_COMPLETED},
             {ENGINE_ZERO_TOKENS, EMR_PROMPT_TOKENS},
             {ENGINE_ZERO_TOKENS, EMR_GEN_TOKENS}};
    size_t at = (size_t)snprintf(x->first_use_why, sizeof x->first_use_why, "%s: ", s->name);
    bool first = true;
    for (size_t i = 0; i < sizeof f / sizeof *f && at < sizeof x->first_use_why; i++) {
        const engine_metric_t *m = engine_table_primary(d->engine, f[i].role, -1);
        if (!(z & f[i].bit) || !m)
            continue;
        int w = snprintf(x->first_use_why + at, sizeof x->first_use_why - at, "%s%s",
                         first ? "" : ", ", m->name);
        if (w > 0)
            at += (size_t)w;
        first = false;
    }
    if (at < sizeof x->first_use_why)
        snprintf(x->first_use_why + at, sizeof x->first_use_why - at,
                 " not exported yet (%s creates them on first use): read as 0",
                 engine_table_product(d->engine));
}

static void add_engine(engine_acc_t *x, const demand_config_t *d, const demand_source_t *s,
                       mono_ns_t now) {
    char msg[2048];
    source_verdict_t v = source_verdict(s, now, msg, sizeof msg);
    if (s->draining && v != SS_OK)
        return; /* it is going away: nothing to wait for, nothing failing */
    x->total++;
    if (v == SS_FAILED && x->queue_speaks && engine_not_serving(s)) {
        x->not_serving++;
        if (!x->first_not_serving[0])
            snprintf(x->first_not_serving, sizeof x->first_not_serving, "%s", msg);
        return;
    }
    if (v == SS_FAILED) {
        x->failed++;
        if (!x->first_failure[0])
            snprintf(x->first_failure, sizeof x->first_failure, "%s", msg);
        return;
    }
    if (v == SS_PENDING) {
        x->pending++;
        if (!x->first_pending[0])
            snprintf(x->first_pending, sizeof x->first_pending, "%s", msg);
        return;
    }
    const engine_reading_t *r = &s->reading;
    const char *bad = bad_reading(r);
    if (bad) {
        x->failed++;
        if (!x->first_failure[0])
            snprintf(x->first_failure, sizeof x->first_failure,
                     "%s: %s is not a count (negative or not finite)", s->name, bad);
        return;
    }
    if (engine_lacks(x, d, s))
        return;
    x->ok++;
    note_first_use(x, d, s);
    /* which engines answered, and which processes behind them: a Service
     * URL answered by another replica is another member set */
    uint64_t id = kgs_fnv1a(s->name ? s->name : "");
    if (r->has_start)
        id = kgs_fnv1a_bytes(id, &r->start_time_s, sizeof r->start_time_s);
    x->members += id;
    if (s->last_ok > x->newest)
        x->newest = s->last_ok;
    if (s->taking_turns) {
        /* one replica's counters at a time: no rate of the fleet in them */
        if (!x->taking_turns++)
            snprintf(x->first_taking_turns, sizeof x->first_taking_turns, "%s", s->name);
        x->no_completed = true;
    } else if (r->has_completed) {
        x->completed += r->completed_total;
    } else {
        x->no_completed = true;
    }
    if (r->has_tokens && !s->taking_turns) {
        x->prompt_tokens += r->prompt_tokens_total;
        x->generation_tokens += r->generation_tokens_total;
    } else {
        x->no_tokens = true;
    }
    x->sig.waiting += r->waiting;
    x->sig.running += r->running;
    x->sig.kv_percent += r->kv_percent;
    if (r->pool_waiting > x->pool_waiting)
        x->pool_waiting = r->pool_waiting;
    if (r->pool_running > x->pool_running)
        x->pool_running = r->pool_running;
    if (r->pool_kv_percent > x->pool_kv_percent)
        x->pool_kv_percent = r->pool_kv_percent;
    if (r->saturation_load > x->saturation_load)
        x->saturation_load = r->saturation_load;
    if (d->type == DEMAND_TRITON_QUEUE_WAIT_MS || d->type == DEMAND_TRITON_REQUEST_RATE) {
        if (!s->rates_known) {
            x->rates_pending = true;
            if (!x->first_pending[0])
                snprintf(x->first_pending, sizeof x->first_pending,
                         "%s: collecting a second poll to compute rates", s->name);
            return;
        }
        x->dq_us += s->queue_us_delta;
        x->dsuccess += s->success_delta;
        x->sig.request_rate += s->success_delta / s->span_s;
    }
    if (d->type == DEMAND_VLLM_LORA_WAITING_ENGINES) {
        /* a stale series (vLLM sets it only while it steps) is overruled by
         * the gauges: nothing of the adapter waits where nothing waits */
        if (r->lora_waiting && r->waiting > 0)
            x->sig.lora_waiting_engines += 1;
        if (r->lora_running && r->running > 0)
            x->sig.lora_running = true;
    }
    if (demand_uses_token_rates(d)) {
        /* a pod is summed only from its own window: rates add, counters
         * of pods that came and went do not */
        if (!s->tokens_known || !(s->tokens_span_s > 0) || s->prompt_delta < 0 ||
            s->generation_delta < 0) {
            x->tokens_pending = true;
            if (!x->first_pending[0])
                snprintf(x->first_pending, sizeof x->first_pending,
                         "%s: collecting a second poll within windowSeconds to compute token "
                         "rates",
                         s->name);
            return;
        }
        x->sig.prompt_tokens_rate += s->prompt_delta / s->tokens_span_s;
        x->sig.generation_tokens_rate += s->generation_delta / s->tokens_span_s;
    }
}

void demand_model_init(demand_model_state_t *s) {
    memset(s, 0, sizeof *s);
    queue_model_init(&s->m);
}

static bool tracked(const demand_model_state_t *st, uint64_t id) {
    for (unsigned i = 0; i < st->ntracked; i++)
        if (st->tracked_id[i] == id)
            return true;
    return false;
}

/* demandModel: queueing. The sample is what production reads: counters and
 * gauges summed over the engines that answered, the queue, and the pod
 * list; its time is the newest reading's, so a read between two polls
 * feeds nothing twice. A pod seen starting and now Ready gives one
 * create -> Ready observation (its age now: late by at most one poll). */
static void model_apply(const trigger_config_t *c, const demand_inputs_t *in,
                        demand_model_state_t *model, const engine_acc_t *x,
                        const demand_signals_t *sig, mono_ns_t now, eval_result_t *out) {
    const demand_config_t *d = &c->demand;
    demand_model_state_t local, *st = model;
    if (!st) {
        demand_model_init(&local);
        st = &local;
    }
    queue_model_sample_t q;
    memset(&q, 0, sizeof q);
    q.t_s = (double)(x->newest ? x->newest : now) / 1e9;
    /* counters are known when engines answered and each exports them (no
     * engine answering: none to sum, which is not "0 completed") */
    bool engine = d->engine != ENGINE_NONE && x->ok > 0;
    q.has_completed = engine && !x->no_completed;
    q.has_tokens = engine && !x->no_tokens;
    q.members = x->members;
    q.completed = x->completed;
    q.prompt_tokens = x->prompt_tokens;
    q.generation_tokens = x->generation_tokens;
    q.has_engine = sig->has_engine;
    q.waiting = sig->waiting;
    q.running = sig->running;
    q.has_queue = sig->has_queue;
    q.queue = sig->queue;
    q.has_pods = in->has_pods;
    if (in->has_pods) {
        uint64_t still[QUEUE_MODEL_MAX_STARTING];
        unsigned nstill = 0;
        for (unsigned i = 0; i < in->npods; i++) {
            const demand_pod_t *p = &in->pods[i];
            if (p->ready) {
                q.ready++;
                if (tracked(st, p->id) && p->age_s > 0)
                    queue_model_observe_cold_start(&st->m, p->age_s);
                if (tracked(st, p->id) && p->start.has_stages)
                    queue_model_observe_stages(&st->m, p->start.stage_s);
                continue;
            }
            q.starting++;
            if (p->start.waiting_for_node)
                q.waiting_for_node++;
            if (q.starting_ages < QUEUE_MODEL_MAX_STARTING) {
                /* a stage said for every pod before it, or for none after */
                if (q.starting_stages == q.starting_ages && p->start.stage != QM_STAGE_UNKNOWN) {
                    q.starting_stage[q.starting_stages] = p->start.stage;
                    q.starting_stage_age_s[q.starting_stages++] = p->start.stage_age_s;
                }
                q.starting_age_s[q.starting_ages++] = p->age_s > 0 ? p->age_s : 0;
            }
            /* tracked until seen Ready: its age then is its create -> Ready
             * time, whenever we first saw it (a pod Ready at first sight is
             * not observed: when it turned Ready is not known) */
            if (nstill < QUEUE_MODEL_MAX_STARTING)
                still[nstill++] = p->id;
        }
        memcpy(st->tracked_id, still, nstill * sizeof *still);
        st->ntracked = nstill;
    } else {
        q.ready = x->ok;
    }
    queue_model_observe(&st->m, &q);
    queue_model_params_t prm;
    queue_model_params_default(&prm);
    prm.target_utilisation = d->target_utilization; /* 0: adaptive headroom */
    prm.drain_s = d->drain_s ? (double)d->drain_s : QUEUE_MODEL_DEFAULT_DRAIN_S;
    prm.cold_start_s = (double)d->cold_start_s;
    prm.capacity_rps = d->capacity_rps;
    queue_model_decide(&st->m, &prm, &q, &st->last);
    if (!isfinite(100 * st->last.replicas)) {
        fail(out, EVAL_UNAVAILABLE,
             "demandModel queueing: the replicas it computed are not finite (arrival rate %g/s, "
             "capacity %g/s)",
             st->last.lambda_rps, st->last.capacity_rps);
        st->have_decision = false;
        return;
    }
    st->have_decision = true;
    st->last_ready = q.ready;
    st->last_starting = q.starting;
    st->last_has_counters = q.has_completed;
    st->last_has_tokens = q.has_tokens;
    st->last_taking_turns = x->taking_turns > 0;
    out->value = 100 * st->last.replicas;
    /* a load that flows, or replicas the keep-alive holds: not idle */
    if (st->last.replicas > 0)
        out->active = true;
}

/* ---- the decision view (demand_view_t) ------------------------------------ */

/* Clears the numbers; the strings stay until view_text() replaces them. */
static void view_reset(demand_view_t *v) {
    char *message = v->message, *why = v->not_serving_why, *fu = v->first_use_why,
         *turns = v->taking_turns_at;
    memset(v, 0, sizeof *v);
    v->message = message;
    v->not_serving_why = why;
    v->first_use_why = fu;
    v->taking_turns_at = turns;
    v->decided_by = -1;
    for (int i = 0; i < DSIG_COUNT; i++)
        v->signal[i] = v->need[i] = NAN;
}

void demand_view_init(demand_view_t *v) {
    memset(v, 0, sizeof *v);
    view_reset(v);
}

/* *slot becomes a copy of text ("" or NULL: none); unchanged text keeps
 * its allocation. Out of memory leaves none (the numbers still say it). */
static void view_text(char **slot, const char *text) {
    if (text && !text[0])
        text = NULL;
    if ((!text && !*slot) || (text && *slot && strcmp(text, *slot) == 0))
        return;
    free(*slot);
    *slot = text ? strdup(text) : NULL;
}

void demand_view_free(demand_view_t *v) {
    view_text(&v->message, NULL);
    view_text(&v->not_serving_why, NULL);
    view_text(&v->first_use_why, NULL);
    view_text(&v->taking_turns_at, NULL);
}

static void view_engines(demand_view_t *v, const demand_inputs_t *in, const engine_acc_t *x) {
    v->engines = x->total;
    v->answering = x->ok;
    v->not_serving = x->not_serving;
    v->failing = x->failed;
    v->pending = x->pending;
    view_text(&v->not_serving_why, x->first_not_serving);
    v->first_use = x->first_use;
    view_text(&v->first_use_why, x->first_use_why);
    v->taking_turns = x->taking_turns;
    view_text(&v->taking_turns_at, x->first_taking_turns);
    v->has_pods = in->has_pods;
    for (unsigned i = 0; in->has_pods && i < in->npods; i++) {
        v->ready_pods += in->pods[i].ready;
        v->starting_pods += !in->pods[i].ready;
    }
}

static void view_set(demand_view_t *v, demand_signal_t i, bool known, double value) {
    if (!known)
        return;
    v->known[i] = true;
    v->signal[i] = value;
}

/* The signals as demand_evaluate() read them, and for demand (composite)
 * each target's need and the one that decided. */
static void view_signals(demand_view_t *v, const trigger_config_t *c, const demand_signals_t *s,
                         const eval_result_t *gpu) {
    const demand_config_t *d = &c->demand;
    bool engine = s->has_engine;
    view_set(v, DSIG_QUEUE, s->has_queue || engine,
             (s->has_queue ? s->queue : 0) + (engine ? s->waiting : 0));
    view_set(v, DSIG_QUEUE_SOURCE, s->has_queue, s->queue);
    view_set(v, DSIG_ENGINE_WAITING, engine, s->waiting);
    view_set(v, DSIG_ENGINE_RUNNING, engine, s->running);
    view_set(v, DSIG_KV_CACHE, engine && d->engine != ENGINE_TRITON, s->kv_percent);
    view_set(v, DSIG_GPU, trigger_uses_gpu(c) && gpu && gpu->status == EVAL_OK,
             gpu ? gpu->value : 0);
    bool tokens = demand_uses_token_rates(d);
    view_set(v, DSIG_PROMPT_TOKENS, tokens, s->prompt_tokens_rate);
    view_set(v, DSIG_GENERATION_TOKENS, tokens, s->generation_tokens_rate);
    view_set(v, DSIG_SATURATION, d->engine == ENGINE_EPP && d->target_saturation > 0,
             s->saturation_load);
    if (d->type == DEMAND_COMPOSITE && d->sizing == DEMAND_MODEL_COMPOSITE)
        v->decided_by = demand_composite_needs(d, s, gpu, v->need);
}

static void view_latency(demand_view_t *v, const demand_config_t *d,
                         const demand_latency_t lat[SLO_SIGNAL_COUNT], const slo_decision_t *slo) {
    for (int sg = 0; sg < SLO_SIGNAL_COUNT; sg++) {
        const double pv[TRIGGER_SLO_QUANTILES] = {lat[sg].p50_s, lat[sg].p90_s, lat[sg].p99_s};
        for (int q = 0; q < TRIGGER_SLO_QUANTILES; q++) {
            double target = d->slo_target_s[sg][q];
            if (!(target > 0))
                continue;
            v->latency[sg][q].target_s = target;
            v->latency[sg][q].known = lat[sg].known;
            v->latency[sg][q].observed_s = lat[sg].known ? pv[q] : NAN;
            v->latency[sg][q].count = lat[sg].known ? slo_requests(lat, sg) : 0;
            v->latency[sg][q].judged =
                lat[sg].known && slo_requests(lat, sg) >= slo_min_count(d, q);
        }
    }
    v->known[DSIG_LATENCY] = slo->observed;
    if (slo->observed) {
        v->signal[DSIG_LATENCY] = slo->worst;
        v->need[DSIG_LATENCY] = slo->replicas;
    }
}

/* The queue's reading, read before the engines: a queue exists while no
 * replica runs, so it speaks whatever the engines say. */
typedef struct {
    source_verdict_t v; /* SS_OK: value is its length */
    double value;
    char msg[2048]; /* why not SS_OK */
} queue_read_t;

static void read_queue(const demand_inputs_t *in, mono_ns_t now, queue_read_t *q) {
    q->value = 0;
    q->msg[0] = '\0';
    q->v = source_verdict(&in->queue, now, q->msg, sizeof q->msg);
    if (q->v == SS_OK && (!isfinite(in->queue.queue) || in->queue.queue < 0)) {
        snprintf(q->msg, sizeof q->msg, "%s: a queue length of %g is not a count",
                 in->queue.name ? in->queue.name : "queue", in->queue.queue);
        q->v = SS_FAILED;
    }
    if (q->v == SS_OK)
        q->value = in->queue.queue;
}

static void evaluate_inputs(const trigger_config_t *c, const demand_inputs_t *in,
                            const demand_learned_t *learned, mono_ns_t now,
                            const eval_result_t *gpu, eval_result_t *out, demand_view_t *v) {
    const demand_config_t *d = &c->demand;
    char msg[1024];
    if (in->limit_error[0]) {
        fail(out, EVAL_RESOURCE_EXHAUSTED, "%s", in->limit_error);
        return;
    }
    if (in->pods_status == EVAL_FAILED_PRECONDITION) {
        fail(out, EVAL_FAILED_PRECONDITION, "%s", in->pods_error);
        return;
    }
    queue_read_t qr = {.v = SS_FAILED};
    if (in->has_queue_source)
        read_queue(in, now, &qr);
    /* the queue counts towards activity (demand_evaluate) and reads work */
    bool wake = qr.v == SS_OK && d->type == DEMAND_COMPOSITE &&
                (d->target_queue > 0 || d->sizing == DEMAND_MODEL_QUEUEING) &&
                qr.value > d->activation_queue;
    if (in->pods_status != EVAL_OK) {
        fail(out, in->pods_status, "engine pods: %s", in->pods_error);
        out->wake = wake; /* the engines' error, yet the queue reads work */
        return;
    }
    if (in->has_queue_source && in->queue.state == DEMAND_SOURCE_NOT_CREATED) {
        fail(out, EVAL_UNAVAILABLE, "queue: %s", in->queue.error ? in->queue.error : "?");
        return;
    }
    engine_acc_t x;
    memset(&x, 0, sizeof x);
    /* with a readable queue, an engine nobody answers for is no replica
     * serving, not a failure that silences the queue */
    x.queue_speaks = qr.v == SS_OK;
    for (unsigned i = 0; i < in->nengines; i++)
        add_engine(&x, d, &in->engines[i], now);
    view_engines(v, in, &x);

    bool ignore = c->partial_data == PARTIAL_DATA_IGNORE;
    if (x.missing[0] && !ignore) {
        fail(out, EVAL_FAILED_PRECONDITION, "%s", x.missing);
        out->wake = wake;
        return;
    }
    if (x.failed && (!ignore || x.ok == 0)) {
        fail(out, EVAL_UNAVAILABLE, "%s", x.first_failure[0] ? x.first_failure : x.missing);
        if (x.total > 1) {
            size_t l = strlen(out->message);
            snprintf(out->message + l, sizeof out->message - l,
                     " (%u of %u engine endpoints failing)", x.failed, x.total);
        }
        out->wake = wake;
        return;
    }
    if ((x.pending && (!ignore || x.ok == 0)) || x.rates_pending || x.tokens_pending) {
        fail(out, EVAL_UNAVAILABLE, "%s", x.first_pending);
        out->pending = true;
        out->wake = wake;
        return;
    }
    const char *overflow = bad_sum(&x);
    if (overflow) {
        fail(out, EVAL_UNAVAILABLE,
             "%s summed over %u engine endpoint%s are not finite (the engines' values overflow)",
             overflow, x.ok, x.ok == 1 ? "" : "s");
        return;
    }
    demand_signals_t sig = x.sig;
    sig.has_engine = d->engine != ENGINE_NONE;
    /* epp: every request of the pool, at the gateway (summed over EPP
     * pods) and in the model servers (the pods' duplicate pool gauges,
     * maxed); 0 for the other engines */
    sig.waiting += x.pool_waiting;
    sig.running += x.pool_running;
    sig.kv_percent += x.pool_kv_percent;
    sig.saturation_load = x.saturation_load;
    if (d->type == DEMAND_TRITON_QUEUE_WAIT_MS || d->type == DEMAND_TRITON_REQUEST_RATE) {
        sig.has_rates = true;
        sig.queue_us = x.dq_us;
        sig.completed = x.dsuccess;
    }
    if (in->has_queue_source) {
        if (qr.v != SS_OK) {
            fail(out, EVAL_UNAVAILABLE, "%s", qr.msg);
            out->pending = qr.v == SS_PENDING;
            return;
        }
        sig.has_queue = true;
        sig.queue = qr.value;
    }
    demand_evaluate(c, &sig, gpu, out);
    out->inputs += x.ok;
    view_signals(v, c, &sig, gpu);
    slo_decision_t slo;
    memset(&slo, 0, sizeof slo);
    if (d->slo_mask && out->status == EVAL_OK &&
        !slo_decide(d, in->latency, ready_replicas(in, x.ok), &slo, msg, sizeof msg)) {
        fail(out, EVAL_UNAVAILABLE, "latency: %s", msg);
        return;
    }
    if (d->slo_mask)
        view_latency(v, d, in->latency, &slo);
    if (d->type == DEMAND_SLO && out->status == EVAL_OK && slo.observed)
        v->decided_by = DSIG_LATENCY;
    if (d->type == DEMAND_SLO && out->status == EVAL_OK) {
        /* Nothing observed in the window: with requests waiting or in
         * flight, their latency is not known yet, so hold the ready
         * replicas (never scale down mid-flight on no data); idle, 0. */
        bool busy = (sig.has_engine && sig.running > 0) || out->active;
        double hold = ready_replicas(in, x.ok);
        out->value = slo.observed ? 100 * slo.replicas : busy ? 100 * (hold > 1 ? hold : 1) : 0;
        out->active = slo.observed || busy;
        return;
    }
    if (d->type == DEMAND_COMPOSITE && d->sizing == DEMAND_MODEL_QUEUEING &&
        out->status == EVAL_OK) {
        if (in->has_queue_source && in->queue.last_ok > x.newest)
            x.newest = in->queue.last_ok;
        model_apply(c, in, learned->model, &x, &sig, now, out);
        if (out->status == EVAL_OK) {
            v->known[DSIG_QUEUEING_MODEL] = true;
            v->signal[DSIG_QUEUEING_MODEL] = v->need[DSIG_QUEUEING_MODEL] = out->value / 100;
            v->decided_by = DSIG_QUEUEING_MODEL;
        }
    }
    if (d->type == DEMAND_COMPOSITE && out->status == EVAL_OK && slo.observed) {
        /* the larger need wins, before the forecast (refused with the
         * queueing model) */
        if (100 * slo.replicas > out->value) {
            out->value = 100 * slo.replicas;
            v->decided_by = DSIG_LATENCY;
        }
        out->active = true;
    }
    if (d->forecast_trend && out->status == EVAL_OK)
        demand_forecast_apply(c, learned->forecast, (double)now / 1e9, out);
}

void demand_evaluate_inputs(const trigger_config_t *c, const demand_inputs_t *in,
                            demand_learned_t *learned, mono_ns_t now, const eval_result_t *gpu,
                            eval_result_t *out) {
    demand_learned_t nothing = {NULL, NULL, NULL};
    if (!learned)
        learned = &nothing;
    demand_view_t local, *v = learned->view;
    if (!v) {
        demand_view_init(&local);
        v = &local;
    }
    view_reset(v);
    evaluate_inputs(c, in, learned, now, gpu, out, v);
    if (!v->not_serving) /* evaluation stopped before the engines, or none is */
        view_text(&v->not_serving_why, NULL);
    if (!v->first_use)
        view_text(&v->first_use_why, NULL);
    if (!v->taking_turns)
        view_text(&v->taking_turns_at, NULL);
    v->evaluated = true;
    v->at = now;
    v->status = out->status;
    v->value = out->status == EVAL_OK ? out->value : NAN;
    v->active = out->status == EVAL_OK && out->active;
    v->wake = out->wake;
    if (out->status != EVAL_OK)
        v->decided_by = -1;
    view_text(&v->message, out->status != EVAL_OK ? out->message : NULL);
    if (v == &local)
        demand_view_free(&local);
}

void demand_forecast_apply(const trigger_config_t *c, forecast_t *f, double now_s,
                           eval_result_t *out) {
    if (!c->demand.forecast_trend || out->status != EVAL_OK || !f)
        return;
    forecast_update(f, now_s, out->value); /* a bad sample (NaN) is refused and ignored */
    out->value = forecast_ahead(f, now_s, (double)c->demand.cold_start_s, out->value);
}
