/*
 * engine_metrics.c - engine scrapes to readings (see the header for the
 * metric names and why they are summed).
 */
#include "sources/engine_metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"

typedef enum {
    W_NONE,
    W_WAITING,
    W_RUNNING,
    W_KV,
    W_KV_OLD,
    W_QUEUE_US,
    W_SUCCESS,
    /* The counters the queueing model learns from (see learning_sum()). */
    W_COMPLETED,
    W_PROMPT_TOKENS,
    W_GEN_TOKENS,
    W_LORA, /* vllm:lora_requests_info (see on_lora_sample()) */
} want_t;

/* One learning counter summed over its series: bad once a sample is not a
 * count (NaN, Inf or negative), which makes the sum unknown. */
typedef struct {
    double sum;
    bool seen, bad;
} counter_sum_t;

/* One latency histogram merged over its series while the scrape is read:
 * per distinct finite bound, the summed count and how many series gave it
 * (each series gives each bound once, so every bound must be given by as
 * many series as gave a +Inf bucket; otherwise the bounds differ). */
typedef struct {
    unsigned n;
    double le[HIST_MAX_BUCKETS];
    double v[HIST_MAX_BUCKETS];
    unsigned nc[HIST_MAX_BUCKETS];
    double inf, sum;
    unsigned ninf;
    bool seen;
} hist_acc_t;

/* The TPOT slots: the current name, then the older one (used when the
 * current is absent). */
#define H_TPOT_OLD SLO_SIGNAL_COUNT
#define H_SLOTS (SLO_SIGNAL_COUNT + 1)

/* engine epp. The gateway's names, checked against
 * kubernetes-sigs/gateway-api-inference-extension pkg/epp/metrics (GaugeVecs
 * of client_golang, HELP prefixed "[ALPHA] ") and llm-d's EPP, which renamed
 * the families to llm_d_epp_* and keeps the old names as deprecated mirrors
 * with equal values: per family the new name is read, the old one only when
 * no series of the new one is in the scrape, never both. */
typedef enum { EPP_READY, EPP_QUEUE, EPP_RUNNING, EPP_KV, EPP_POOL_GAUGES } epp_gauge_t;

#define EPP_FLOW_NEW "llm_d_epp_flow_control_queue_size"
#define EPP_FLOW_OLD "inference_extension_flow_control_queue_size"
/* One EPP serves one InferencePool; a few more in one scrape are read, a
 * scrape with more is refused rather than truncated. */
#define EPP_MAX_POOLS 16
#define EPP_POOL_NAME_MAX 253 /* a Kubernetes object name */

/* [gauge][0 new, 1 old]; labelled `name` = the InferencePool's name. */
static const char *const epp_pool_names[EPP_POOL_GAUGES][2] = {
    [EPP_READY] = {"llm_d_epp_ready_endpoints", "inference_pool_ready_pods"},
    [EPP_QUEUE] = {"llm_d_epp_average_queue_size", "inference_pool_average_queue_size"},
    [EPP_RUNNING] = {"llm_d_epp_average_running_requests",
                     "inference_pool_average_running_requests"},
    [EPP_KV] = {"llm_d_epp_average_kv_cache_utilization",
                "inference_pool_average_kv_cache_utilization"},
};

/* One pool's gauges, both generations of names, as read. */
typedef struct {
    char name[EPP_POOL_NAME_MAX + 1];
    bool has[EPP_POOL_GAUGES][2];
    double v[EPP_POOL_GAUGES][2];
} epp_pool_t;

typedef struct {
    bool flow_seen[2];
    double flow[2]; /* the flow-control queue, summed over its series */
    bool family_seen[EPP_POOL_GAUGES][2];
    unsigned npools;
    epp_pool_t pool[EPP_MAX_POOLS];
} epp_acc_t;

typedef struct {
    engine_t engine;
    const char *model;
    char *err;
    size_t errlen;
    engine_reading_t *r;
    double kv_old; /* the deprecated vLLM gauge, used only when the new one is absent */
    bool has_kv_old;
    counter_sum_t completed, prompt, gen;
    unsigned want; /* latency signals to read (0: none) */
    hist_acc_t *h; /* H_SLOTS accumulators, when want */
    bool has_start;
    double start;
    const char *adapter; /* loraAdapter; NULL or "": vllm:lora_requests_info is not read */
    double lora_newest;  /* the newest lora_requests_info series' value so far */
    epp_acc_t *epp;      /* engine epp: what its samples add up to */
} engine_ctx_t;

/* The latency histogram family `name` (without _bucket/_sum/_count)
 * belongs to, for engine e: its slot, or -1. Names checked against:
 * vllm-project/vllm vllm/v1/metrics/loggers.py (PrometheusStatLogger:
 * "vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds"
 * (newer) beside the older "vllm:time_per_output_token_seconds",
 * "vllm:e2e_request_latency_seconds", "vllm:request_queue_time_seconds");
 * sgl-project/sglang python/sglang/srt/metrics/collector.py
 * (TokenizerMetricsCollector: "sglang:time_to_first_token_seconds",
 * "sglang:inter_token_latency_seconds" (older releases
 * "sglang:time_per_output_token_seconds"), "sglang:e2e_request_latency_seconds";
 * SchedulerMetricsCollector: "sglang:queue_time_seconds");
 * huggingface/text-generation-inference router/src/server.rs
 * (metrics::histogram! "tgi_request_duration", "tgi_request_queue_duration",
 * "tgi_request_mean_time_per_token_duration"; no time to first token);
 * triton-inference-server/server docs/user_guide/metrics.md
 * ("nv_inference_first_response_histogram_ms", decoupled models, with
 * --metrics-config histogram_latencies=true; the queue / compute / request
 * durations are _us counters, and summaries with summary_latencies=true). */
static int hist_slot(engine_t e, const char *name, size_t n) {
    static const struct {
        engine_t e;
        int slot;
        const char *name;
    } fam[] = {
        {ENGINE_VLLM, SLO_TTFT, "vllm:time_to_first_token_seconds"},
        {ENGINE_VLLM, SLO_TPOT, "vllm:inter_token_latency_seconds"},
        {ENGINE_VLLM, H_TPOT_OLD, "vllm:time_per_output_token_seconds"},
        {ENGINE_VLLM, SLO_E2E, "vllm:e2e_request_latency_seconds"},
        {ENGINE_VLLM, SLO_QUEUE, "vllm:request_queue_time_seconds"},
        {ENGINE_SGLANG, SLO_TTFT, "sglang:time_to_first_token_seconds"},
        {ENGINE_SGLANG, SLO_TPOT, "sglang:inter_token_latency_seconds"},
        {ENGINE_SGLANG, H_TPOT_OLD, "sglang:time_per_output_token_seconds"},
        {ENGINE_SGLANG, SLO_E2E, "sglang:e2e_request_latency_seconds"},
        {ENGINE_SGLANG, SLO_QUEUE, "sglang:queue_time_seconds"},
        {ENGINE_TGI, SLO_TPOT, "tgi_request_mean_time_per_token_duration"},
        {ENGINE_TGI, SLO_E2E, "tgi_request_duration"},
        {ENGINE_TGI, SLO_QUEUE, "tgi_request_queue_duration"},
        {ENGINE_TRITON, SLO_TTFT, "nv_inference_first_response_histogram_ms"},
    };
    for (size_t i = 0; i < sizeof fam / sizeof *fam; i++)
        if (fam[i].e == e && strlen(fam[i].name) == n && memcmp(fam[i].name, name, n) == 0)
            return fam[i].slot;
    return -1;
}

static const char *hist_family_name(engine_t e, int slot) {
    static const char *const names[ENGINE_EPP + 1][H_SLOTS] = {
        [ENGINE_VLLM] = {"vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds",
                         "vllm:e2e_request_latency_seconds", "vllm:request_queue_time_seconds",
                         "vllm:time_per_output_token_seconds"},
        [ENGINE_SGLANG] = {"sglang:time_to_first_token_seconds",
                           "sglang:inter_token_latency_seconds",
                           "sglang:e2e_request_latency_seconds", "sglang:queue_time_seconds",
                           "sglang:time_per_output_token_seconds"},
        [ENGINE_TGI] = {"?", "tgi_request_mean_time_per_token_duration", "tgi_request_duration",
                        "tgi_request_queue_duration", "?"},
        [ENGINE_TRITON] = {"nv_inference_first_response_histogram_ms", "?", "?", "?", "?"},
    };
    return (unsigned)e <= ENGINE_EPP && slot >= 0 && slot < H_SLOTS && names[e][slot]
               ? names[e][slot]
               : "?";
}

static const char *model_label(engine_t e);

/* A histogram sample (name ends in _bucket or _sum of a wanted family):
 * 1 when taken, 0 when not one, or KGS_EINVAL. */
static int on_hist_sample(engine_ctx_t *x, const prom_sample_t *s) {
    size_t n = strlen(s->name);
    bool bucket = n > 7 && strcmp(s->name + n - 7, "_bucket") == 0;
    bool sum = !bucket && n > 4 && strcmp(s->name + n - 4, "_sum") == 0;
    if (!bucket && !sum)
        return 0;
    int slot = hist_slot(x->engine, s->name, n - (bucket ? 7 : 4));
    if (slot < 0)
        return 0;
    int sig = slot == H_TPOT_OLD ? SLO_TPOT : slot;
    if (!(x->want & (1u << sig)))
        return 0;
    if (x->model[0]) {
        /* SGLang serves one model per server, and its newer queue-time
         * histogram is labelled by dp_rank alone: a series without the
         * model label is that server's */
        const char *m = prom_sample_label(s, model_label(x->engine));
        if (m ? strcmp(m, x->model) != 0 : x->engine != ENGINE_SGLANG)
            return 1;
    }
    hist_acc_t *a = &x->h[slot];
    a->seen = true;
    if (sum) {
        a->sum += s->value;
        return 1;
    }
    double le = 0;
    bool inf = false;
    if (!hist_parse_le(prom_sample_label(s, "le"), &le, &inf))
        return kgs_seterr(x->err, x->errlen, KGS_EINVAL,
                          "%s: a bucket whose le label is missing or not a number",
                          hist_family_name(x->engine, slot));
    if (!isfinite(s->value) || s->value < 0)
        return kgs_seterr(x->err, x->errlen, KGS_EINVAL,
                          "%s: a bucket counts %g observations (a count is finite and not "
                          "negative)",
                          hist_family_name(x->engine, slot), s->value);
    if (inf) {
        a->inf += s->value;
        a->ninf++;
        return 1;
    }
    unsigned i = 0;
    while (i < a->n && a->le[i] != le)
        i++;
    if (i == a->n) {
        if (a->n == HIST_MAX_BUCKETS)
            return kgs_seterr(x->err, x->errlen, KGS_EINVAL,
                              "%s: more than %d distinct bucket bounds (series with different "
                              "bounds, or too many buckets)",
                              hist_family_name(x->engine, slot), HIST_MAX_BUCKETS);
        a->le[i] = le;
        a->v[i] = 0;
        a->nc[i] = 0;
        a->n++;
    }
    a->v[i] += s->value;
    a->nc[i]++;
    return 1;
}

/* The merged histogram of slot into layout/counts; KGS_EINVAL naming the
 * family when its series' bounds differ or it is malformed. */
static int hist_finish(engine_ctx_t *x, int slot, hist_layout_t *layout, hist_counts_t *counts) {
    const hist_acc_t *a = &x->h[slot];
    const char *fam = hist_family_name(x->engine, slot);
    for (unsigned i = 0; i < a->n; i++)
        if (a->nc[i] != a->ninf)
            return kgs_seterr(x->err, x->errlen, KGS_EINVAL,
                              "%s: its series have different bucket bounds in one scrape (le=%g "
                              "is in %u of %u series); buckets of different bounds cannot be "
                              "added",
                              fam, a->le[i], a->nc[i], a->ninf);
    hist_collect_t c;
    memset(&c, 0, sizeof c);
    char why[200];
    for (unsigned i = 0; i < a->n; i++)
        if (hist_collect_bound(&c, a->le[i], false, a->v[i], why, sizeof why) != 0)
            return kgs_seterr(x->err, x->errlen, KGS_EINVAL, "%s: %s", fam, why);
    if (a->ninf && hist_collect_bound(&c, 0, true, a->inf, why, sizeof why) != 0)
        return kgs_seterr(x->err, x->errlen, KGS_EINVAL, "%s: %s", fam, why);
    hist_collect_sum(&c, a->sum);
    if (hist_collect_finish(&c, layout, counts, why, sizeof why) != 0)
        return kgs_seterr(x->err, x->errlen, KGS_EINVAL, "%s: %s", fam, why);
    if (x->engine == ENGINE_TRITON) { /* milliseconds */
        for (unsigned i = 0; i < layout->n; i++)
            layout->le[i] /= 1000;
        counts->sum /= 1000;
    }
    return 0;
}

static want_t classify(engine_t e, const char *name) {
    switch (e) {
    case ENGINE_VLLM:
        if (strcmp(name, "vllm:num_requests_waiting") == 0)
            return W_WAITING;
        if (strcmp(name, "vllm:num_requests_running") == 0)
            return W_RUNNING;
        if (strcmp(name, "vllm:kv_cache_usage_perc") == 0)
            return W_KV;
        if (strcmp(name, "vllm:gpu_cache_usage_perc") == 0)
            return W_KV_OLD;
        /* vllm-project/vllm vllm/v1/metrics/loggers.py (and V0's
         * vllm/engine/metrics.py):
         * prometheus_client Counters "vllm:request_success" (one series per
         * finished_reason: stop, length, abort, ...), "vllm:prompt_tokens"
         * and "vllm:generation_tokens", whose samples carry _total in both
         * the text format and OpenMetrics (which adds the *_created samples
         * that are not read). */
        if (strcmp(name, "vllm:request_success_total") == 0)
            return W_COMPLETED;
        if (strcmp(name, "vllm:prompt_tokens_total") == 0)
            return W_PROMPT_TOKENS;
        if (strcmp(name, "vllm:generation_tokens_total") == 0)
            return W_GEN_TOKENS;
        /* vllm/v1/metrics/loggers.py (PrometheusStatLogger, with a LoRA
         * config): a Gauge with the labels max_lora, waiting_lora_adapters
         * and running_lora_adapters (adapter names joined by ","), set with
         * set_to_current_time() on every engine step: one series per state
         * ever seen, the newest (largest value) is the current one. */
        if (strcmp(name, "vllm:lora_requests_info") == 0)
            return W_LORA;
        return W_NONE;
    case ENGINE_TRITON:
        if (strcmp(name, "nv_inference_pending_request_count") == 0)
            return W_WAITING;
        if (strcmp(name, "nv_inference_queue_duration_us") == 0)
            return W_QUEUE_US;
        /* Also the completed-request counter. Triton's core exports no
         * token counters (triton-inference-server/server
         * docs/user_guide/metrics.md), so has_tokens stays false; the
         * nv_llm_input_token_len / nv_llm_output_token_len histograms of
         * some TensorRT-LLM backend versions (tensorrtllm_backend
         * inflight_batcher_llm) are not read. */
        if (strcmp(name, "nv_inference_request_success") == 0)
            return W_SUCCESS;
        return W_NONE;
    case ENGINE_TGI:
        if (strcmp(name, "tgi_queue_size") == 0)
            return W_WAITING;
        if (strcmp(name, "tgi_batch_current_size") == 0)
            return W_RUNNING;
        /* huggingface/text-generation-inference router/src/server.rs: the
         * counter tgi_request_success and the histogram
         * tgi_request_generated_tokens, recorded when a request succeeds;
         * router/src/validation.rs: the histogram tgi_request_input_length,
         * recorded when a request passes validation. Written by
         * metrics-exporter-prometheus, which adds no _total; a histogram's
         * _sum is the token total. */
        if (strcmp(name, "tgi_request_success") == 0)
            return W_COMPLETED;
        if (strcmp(name, "tgi_request_input_length_sum") == 0)
            return W_PROMPT_TOKENS;
        if (strcmp(name, "tgi_request_generated_tokens_sum") == 0)
            return W_GEN_TOKENS;
        return W_NONE;
    case ENGINE_SGLANG:
        if (strcmp(name, "sglang:num_queue_reqs") == 0)
            return W_WAITING;
        if (strcmp(name, "sglang:num_running_reqs") == 0)
            return W_RUNNING;
        if (strcmp(name, "sglang:token_usage") == 0)
            return W_KV;
        /* sgl-project/sglang python/sglang/srt/metrics/collector.py
         * (TokenizerMetricsCollector.observe_one_finished_request): the
         * prometheus_client Counters below, each incremented when a request
         * finishes. */
        if (strcmp(name, "sglang:num_requests_total") == 0)
            return W_COMPLETED;
        if (strcmp(name, "sglang:prompt_tokens_total") == 0)
            return W_PROMPT_TOKENS;
        if (strcmp(name, "sglang:generation_tokens_total") == 0)
            return W_GEN_TOKENS;
        return W_NONE;
    case ENGINE_EPP: /* on_epp_sample() */
    case ENGINE_NONE:
        break;
    }
    return W_NONE;
}

/* A gauge sample must be a count: NaN or Inf is not one (the sum is then
 * unknown, so the whole scrape is, never read as 0), and every gauge read
 * here counts something (requests, endpoints, a share of the KV cache,
 * microseconds, requests done): below 0 it is broken, not small. 0, or
 * KGS_EINVAL naming the metric. */
static int gauge_sample_check(engine_ctx_t *x, const prom_sample_t *s) {
    if (!isfinite(s->value))
        return kgs_seterr(x->err, x->errlen, KGS_EINVAL, "%s is %g: no usable value", s->name,
                          s->value);
    if (s->value < 0)
        return kgs_seterr(x->err, x->errlen, KGS_EINVAL, "%s is %g: a count cannot be negative",
                          s->name, s->value);
    return 0;
}

static const char *model_label(engine_t e) {
    return e == ENGINE_TRITON ? "model" : "model_name";
}

/* The learning counter w adds to, or NULL when w is not one. */
static counter_sum_t *learning_sum(engine_ctx_t *x, want_t w) {
    switch (w) {
    case W_COMPLETED:
        return &x->completed;
    case W_PROMPT_TOKENS:
        return &x->prompt;
    case W_GEN_TOKENS:
        return &x->gen;
    default:
        return NULL;
    }
}

static void counter_add(counter_sum_t *c, double v) {
    c->seen = true;
    if (!isfinite(v) || v < 0)
        c->bad = true;
    else
        c->sum += v;
}

/* Seen, every sample a count, and the sum did not overflow. */
static bool counter_known(const counter_sum_t *c) {
    return c->seen && !c->bad && isfinite(c->sum);
}

/* name is one item of the comma list (p, as vLLM joins adapter names). */
static bool in_comma_list(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && memcmp(p, name, n) == 0)
            return true;
        p = e ? e + 1 : NULL;
    }
    return false;
}

/* One vllm:lora_requests_info series: the newest wins. A value that is not
 * a finite number cannot be ordered: that series is skipped (the gauges,
 * not this one, decide whether the scrape is usable). */
static void on_lora_sample(engine_ctx_t *x, const prom_sample_t *s) {
    if (!x->adapter || !x->adapter[0] || !isfinite(s->value))
        return;
    const char *wl = prom_sample_label(s, "waiting_lora_adapters");
    const char *rl = prom_sample_label(s, "running_lora_adapters");
    bool waiting = wl && in_comma_list(wl, x->adapter);
    bool running = rl && in_comma_list(rl, x->adapter);
    engine_reading_t *r = x->r;
    if (!r->has_lora || s->value > x->lora_newest) {
        r->has_lora = true;
        x->lora_newest = s->value;
        r->lora_waiting = waiting;
        r->lora_running = running;
    } else if (s->value == x->lora_newest) {
        r->lora_waiting |= waiting;
        r->lora_running |= running;
    }
}

/* One sample of an EPP scrape: the flow-control queue (summed, after the
 * model filter on model_name) or a pool gauge (kept per pool name, paired
 * in epp_finish()). Returns 0 or KGS_EINVAL. */
static int on_epp_sample(engine_ctx_t *x, const prom_sample_t *s) {
    int gen = -1, g = -1;
    if (strcmp(s->name, EPP_FLOW_NEW) == 0)
        gen = 0;
    else if (strcmp(s->name, EPP_FLOW_OLD) == 0)
        gen = 1;
    for (int i = 0; gen < 0 && i < EPP_POOL_GAUGES; i++)
        for (int k = 0; k < 2; k++)
            if (strcmp(s->name, epp_pool_names[i][k]) == 0) {
                g = i;
                gen = k;
                break;
            }
    if (gen < 0)
        return 0;
    if (g < 0 && x->model[0]) {
        const char *m = prom_sample_label(s, "model_name");
        if (!m || strcmp(m, x->model) != 0)
            return 0;
    }
    /* requests, endpoints, a share of the cache */
    int rc = gauge_sample_check(x, s);
    if (rc)
        return rc;
    epp_acc_t *a = x->epp;
    x->r->series++;
    if (g < 0) {
        a->flow_seen[gen] = true;
        a->flow[gen] += s->value;
        return 0;
    }
    const char *name = prom_sample_label(s, "name");
    if (!name)
        name = ""; /* an absent label is the empty one, as in PromQL */
    if (strlen(name) > EPP_POOL_NAME_MAX)
        return kgs_seterr(x->err, x->errlen, KGS_EINVAL,
                          "%s: an inference pool name of %zu bytes (a Kubernetes name has at "
                          "most %d)",
                          s->name, strlen(name), EPP_POOL_NAME_MAX);
    epp_pool_t *p = NULL;
    for (unsigned i = 0; i < a->npools && !p; i++)
        if (strcmp(a->pool[i].name, name) == 0)
            p = &a->pool[i];
    if (!p) {
        if (a->npools == EPP_MAX_POOLS)
            return kgs_seterr(x->err, x->errlen, KGS_EINVAL,
                              "%s: more than %d inference pools in one scrape (the name label); "
                              "read at most %d pools per endpoint picker",
                              s->name, EPP_MAX_POOLS, EPP_MAX_POOLS);
        p = &a->pool[a->npools++];
        memcpy(p->name, name, strlen(name) + 1);
    }
    if (p->has[g][gen])
        return kgs_seterr(x->err, x->errlen, KGS_EINVAL,
                          "%s: two series for inference pool \"%.200s\" (an endpoint picker "
                          "exports one per pool; an average cannot be summed)",
                          s->name, name);
    p->has[g][gen] = true;
    p->v[g][gen] = s->value;
    a->family_seen[g][gen] = true;
    return 0;
}

/* The EPP scrape into *r: waiting the flow-control queue; per pool, each
 * average x its ready endpoints, summed over pools (see demand_eval.h for
 * how EPP pods combine). Per family the new name wins over the old. A pool
 * with no ready endpoints adds 0 whatever its (stale) averages say; a pool
 * with endpoints but without an average makes that count unknown. */
static int epp_finish(engine_ctx_t *x) {
    const epp_acc_t *a = x->epp;
    engine_reading_t *r = x->r;
    int gen[EPP_POOL_GAUGES];
    for (int g = 0; g < EPP_POOL_GAUGES; g++)
        gen[g] = !a->family_seen[g][0] && a->family_seen[g][1] ? 1 : 0;
    int fgen = !a->flow_seen[0] && a->flow_seen[1] ? 1 : 0;
    bool flow = a->flow_seen[fgen];
    bool unknown[EPP_POOL_GAUGES] = {false};
    double sum[EPP_POOL_GAUGES] = {0};
    for (unsigned i = 0; i < a->npools; i++) {
        const epp_pool_t *p = &a->pool[i];
        if (!p->has[EPP_READY][gen[EPP_READY]]) {
            for (int g = EPP_QUEUE; g < EPP_POOL_GAUGES; g++)
                if (p->has[g][gen[g]])
                    return kgs_seterr(x->err, x->errlen, KGS_EINVAL,
                                      "%s{name=\"%.200s\"} has no %s series for its pool: an "
                                      "average cannot be turned into a count without the ready "
                                      "endpoints",
                                      epp_pool_names[g][gen[g]], p->name,
                                      epp_pool_names[EPP_READY][gen[EPP_READY]]);
            continue; /* only names of the generation not read */
        }
        double ready = p->v[EPP_READY][gen[EPP_READY]];
        r->has_pool = true;
        sum[EPP_READY] += ready;
        for (int g = EPP_QUEUE; g < EPP_POOL_GAUGES; g++) {
            if (p->has[g][gen[g]])
                sum[g] += p->v[g][gen[g]] * ready * (g == EPP_KV ? 100 : 1);
            else if (ready > 0)
                unknown[g] = true;
        }
    }
    /* Flow-control series appear with the first request queued: with the
     * pool gauges present and no series, nothing waits at the gateway. */
    r->has_waiting = (flow || r->has_pool) && !unknown[EPP_QUEUE];
    r->has_running = r->has_pool && !unknown[EPP_RUNNING];
    r->has_kv = r->has_pool && !unknown[EPP_KV];
    r->pool_ready = sum[EPP_READY];
    if (r->has_waiting) {
        r->waiting = flow ? a->flow[fgen] : 0;
        r->pool_waiting = sum[EPP_QUEUE];
    }
    if (r->has_running)
        r->pool_running = sum[EPP_RUNNING];
    if (r->has_kv)
        r->pool_kv_percent = sum[EPP_KV];
    return 0;
}

static int on_engine_sample(void *ud, const prom_sample_t *s) {
    engine_ctx_t *x = ud;
    if (x->engine == ENGINE_EPP)
        return on_epp_sample(x, s);
    if (x->want) {
        if (strcmp(s->name, "process_start_time_seconds") == 0) {
            if (isfinite(s->value) && s->value > 0 && (!x->has_start || s->value > x->start)) {
                x->has_start = true;
                x->start = s->value;
            }
            return 0;
        }
        int h = on_hist_sample(x, s);
        if (h != 0)
            return h < 0 ? h : 0;
    }
    want_t w = classify(x->engine, s->name);
    if (w == W_NONE)
        return 0;
    if (w == W_LORA) { /* no model_name label: the model filter does not apply */
        on_lora_sample(x, s);
        return 0;
    }
    if (x->model[0]) {
        const char *m = prom_sample_label(s, model_label(x->engine));
        if (!m || strcmp(m, x->model) != 0)
            return 0;
    }
    /* A learning counter is read on the side: a sample that is not a count
     * makes that counter unknown, never 0, and leaves the gauges (which
     * scaled this engine before the counters were read) usable. Nor do
     * these samples count in r->series. */
    counter_sum_t *learn = learning_sum(x, w);
    if (learn) {
        counter_add(learn, s->value);
        return 0;
    }
    int rc = gauge_sample_check(x, s);
    if (rc)
        return rc;
    double v = s->value;
    engine_reading_t *r = x->r;
    r->series++;
    switch (w) {
    case W_WAITING:
        r->has_waiting = true;
        r->waiting += v;
        break;
    case W_RUNNING:
        r->has_running = true;
        r->running += v;
        break;
    case W_KV:
        r->has_kv = true;
        r->kv_percent += v * 100;
        break;
    case W_KV_OLD:
        x->has_kv_old = true;
        x->kv_old += v * 100;
        break;
    case W_QUEUE_US:
        r->has_triton = true;
        r->queue_us += v;
        break;
    case W_SUCCESS:
        r->has_triton = true;
        r->success += v;
        counter_add(&x->completed, v); /* v is finite here */
        break;
    case W_COMPLETED:
    case W_PROMPT_TOKENS:
    case W_GEN_TOKENS:
    case W_LORA:
    case W_NONE:
        break;
    }
    return 0;
}

int engine_reading_parse(engine_t e, const char *model, const char *text, size_t len,
                         prom_format_t fmt, engine_reading_t *out, char *err, size_t errlen) {
    return engine_reading_parse_full(e, model, NULL, 0, text, len, fmt, out, NULL, err, errlen);
}

/* Sets x up to read one scrape for engine e into x->r (zeroed): acc
 * (H_SLOTS accumulators) and epp are the caller's storage. want is already
 * masked to the signals that exist and to whether histograms are wanted. */
static void engine_ctx_init(engine_ctx_t *x, hist_acc_t *acc, epp_acc_t *epp, engine_t e,
                            const char *model, const char *adapter, unsigned want,
                            engine_reading_t *r, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    *x = (engine_ctx_t){.engine = e,
                        .model = model ? model : "",
                        .err = err,
                        .errlen = errlen,
                        .r = r,
                        .want = want,
                        .h = want ? acc : NULL,
                        .adapter = adapter};
    if (want)
        memset(acc, 0, H_SLOTS * sizeof *acc);
    if (e == ENGINE_EPP) {
        memset(epp, 0, sizeof *epp);
        x->epp = epp;
        x->want = 0; /* the EPP is not read for latency */
    }
}

/* What the samples read into x add up to, once the page is read (rc: the
 * parse's outcome; a failure zeroes x->r and hists and is returned). */
static int engine_ctx_finish(engine_ctx_t *x, int rc, engine_hists_t *hists, char *err,
                             size_t errlen) {
    engine_reading_t *out = x->r;
    unsigned want = x->want;
    hist_acc_t *acc = x->h;
    if (rc == 0 && x->engine == ENGINE_EPP)
        rc = epp_finish(x);
    if (rc == 0 && want) {
        /* the newer TPOT name wins; the older is read only without it */
        bool tpot_old = !acc[SLO_TPOT].seen && acc[H_TPOT_OLD].seen;
        for (int s = 0; s < SLO_SIGNAL_COUNT && rc == 0; s++) {
            int slot = s == SLO_TPOT && tpot_old ? H_TPOT_OLD : s;
            if (!(want & (1u << s)) || !acc[slot].seen)
                continue;
            rc = hist_finish(x, slot, &hists->layout[s], &hists->counts[s]);
            if (rc == 0)
                hists->mask |= 1u << s;
        }
        hists->has_start = x->has_start;
        hists->start_time_s = x->start;
    }
    if (rc != 0) {
        memset(out, 0, sizeof *out);
        if (hists)
            memset(hists, 0, sizeof *hists);
        return rc;
    }
    out->hist_mask = hists ? hists->mask : 0;
    if (!out->has_kv && x->has_kv_old) {
        out->has_kv = true;
        out->kv_percent = x->kv_old;
    }
    /* Finite samples can still sum past the largest double (two of 1e308):
     * the sum is then unknown, never the largest value KEDA can be sent. */
    const struct {
        double v;
        const char *what;
    } sums[] = {
        {out->waiting, "the waiting-requests gauge"},
        {out->running, "the running-requests gauge"},
        {out->kv_percent, "the KV-cache usage gauge"},
        {out->queue_us, "nv_inference_queue_duration_us"},
        {out->success, "nv_inference_request_success"},
        {out->pool_ready, "the ready-endpoints gauge"},
        {out->pool_waiting, "the pool's waiting requests (average queue size x ready endpoints)"},
        {out->pool_running,
         "the pool's running requests (average running requests x ready endpoints)"},
        {out->pool_kv_percent, "the pool's KV-cache usage (average utilization x ready endpoints)"},
    };
    for (size_t i = 0; i < sizeof sums / sizeof *sums; i++)
        if (!isfinite(sums[i].v)) {
            memset(out, 0, sizeof *out);
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "%s summed over its series is not finite (the samples overflow)",
                              sums[i].what);
        }
    if (counter_known(&x->completed)) {
        out->has_completed = true;
        out->completed_total = x->completed.sum;
    }
    /* Both token counters or neither: the cost of a request needs both. */
    if (counter_known(&x->prompt) && counter_known(&x->gen)) {
        out->has_tokens = true;
        out->prompt_tokens_total = x->prompt.sum;
        out->generation_tokens_total = x->gen.sum;
    }
    return 0;
}

/* The latency signals to read: only those that exist, none without histograms. */
static unsigned want_mask(unsigned want, bool has_hists) {
    return has_hists ? want & ((1u << SLO_SIGNAL_COUNT) - 1) : 0;
}

int engine_reading_parse_full(engine_t e, const char *model, const char *adapter, unsigned want,
                              const char *text, size_t len, prom_format_t fmt,
                              engine_reading_t *out, engine_hists_t *hists, char *err,
                              size_t errlen) {
    want = want_mask(want, hists != NULL);
    if (hists)
        memset(hists, 0, sizeof *hists);
    hist_acc_t acc[H_SLOTS];
    epp_acc_t epp;
    engine_ctx_t x;
    engine_ctx_init(&x, acc, &epp, e, model, adapter, want, out, err, errlen);
    int rc = prom_parse(text, len, fmt, on_engine_sample, &x, err, errlen);
    return engine_ctx_finish(&x, rc, hists, err, errlen);
}

/* ---- a scrape read as it arrives ------------------------------------------------ */

struct engine_scan {
    engine_ctx_t x;
    engine_reading_t r;
    hist_acc_t acc[H_SLOTS];
    epp_acc_t epp;
    char model[256], adapter[256];
    char err[512]; /* why a sample stopped the scan */
};

engine_scan_t *engine_scan_new(engine_t e, const char *model, const char *adapter, unsigned want,
                               bool hists) {
    engine_scan_t *sc = malloc(sizeof *sc);
    if (!sc)
        return NULL;
    snprintf(sc->model, sizeof sc->model, "%s", model ? model : "");
    snprintf(sc->adapter, sizeof sc->adapter, "%s", adapter ? adapter : "");
    sc->err[0] = '\0';
    engine_ctx_init(&sc->x, sc->acc, &sc->epp, e, sc->model, adapter ? sc->adapter : NULL,
                    want_mask(want, hists), &sc->r, sc->err, sizeof sc->err);
    return sc;
}

int engine_scan_sample(void *scan, const prom_sample_t *s) {
    return on_engine_sample(&((engine_scan_t *)scan)->x, s);
}

const char *engine_scan_error(const engine_scan_t *sc) {
    return sc->err;
}

int engine_scan_finish(engine_scan_t *sc, engine_reading_t *out, engine_hists_t *hists, char *err,
                       size_t errlen) {
    if (hists)
        memset(hists, 0, sizeof *hists);
    else
        sc->x.want = 0;
    /* what finishing finds wrong (a histogram's bounds) goes to the caller */
    sc->x.err = err;
    sc->x.errlen = errlen;
    int rc = engine_ctx_finish(&sc->x, 0, hists, err, errlen);
    *out = sc->r;
    return rc;
}

size_t engine_scan_bytes(void) {
    return sizeof(engine_scan_t);
}

void engine_scan_free(engine_scan_t *sc) {
    free(sc);
}

typedef struct {
    const demand_config_t *d;
    char *err;
    size_t errlen;
    double sum;
    unsigned matched;
} demand_ctx_t;

static int on_demand_sample(void *ud, const prom_sample_t *s) {
    demand_ctx_t *x = ud;
    if (strcmp(s->name, x->d->demand_metric) != 0)
        return 0;
    for (unsigned i = 0; i < x->d->matcher_count; i++) {
        const char *v = prom_sample_label(s, x->d->matchers[i].name);
        /* PromQL: an absent label matches the empty string. */
        bool eq = strcmp(v ? v : "", x->d->matchers[i].value) == 0;
        if (eq == x->d->matchers[i].negate)
            return 0;
    }
    if (!isfinite(s->value))
        return kgs_seterr(x->err, x->errlen, KGS_EINVAL, "%s is %g: no usable value", s->name,
                          s->value);
    if (s->value < 0)
        return kgs_seterr(x->err, x->errlen, KGS_EINVAL,
                          "%s is %g: a queue length cannot be negative", s->name, s->value);
    x->sum += s->value;
    x->matched++;
    return 0;
}

int demand_value_parse(const demand_config_t *d, const char *text, size_t len, prom_format_t fmt,
                       double *sum, unsigned *matched, char *err, size_t errlen) {
    demand_ctx_t x = {.d = d, .err = err, .errlen = errlen};
    *sum = 0;
    *matched = 0;
    int rc = prom_parse(text, len, fmt, on_demand_sample, &x, err, errlen);
    if (rc != 0)
        return rc;
    if (!isfinite(x.sum))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s summed over %u samples is not finite (the samples overflow)",
                          d->demand_metric, x.matched);
    *sum = x.sum;
    *matched = x.matched;
    return 0;
}

/* ---- a generic endpoint's page read as it arrives -------------------------------- */

struct demand_scan {
    demand_ctx_t x;
    char err[512];
};

demand_scan_t *demand_scan_new(const demand_config_t *d) {
    demand_scan_t *sc = calloc(1, sizeof *sc);
    if (!sc)
        return NULL;
    sc->x = (demand_ctx_t){.d = d, .err = sc->err, .errlen = sizeof sc->err};
    return sc;
}

int demand_scan_sample(void *scan, const prom_sample_t *s) {
    return on_demand_sample(&((demand_scan_t *)scan)->x, s);
}

const char *demand_scan_error(const demand_scan_t *sc) {
    return sc->err;
}

int demand_scan_finish(const demand_scan_t *sc, double *sum, unsigned *matched, char *err,
                       size_t errlen) {
    *sum = 0;
    *matched = 0;
    if (!isfinite(sc->x.sum))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s summed over %u samples is not finite (the samples overflow)",
                          sc->x.d->demand_metric, sc->x.matched);
    *sum = sc->x.sum;
    *matched = sc->x.matched;
    return 0;
}

void demand_scan_free(demand_scan_t *sc) {
    free(sc);
}
