/*
 * engine_table.c - the engines' metrics by release (see the header). Each
 * block names the upstream files and releases it was written from; facts
 * only, read at those releases:
 *
 * vLLM     vllm-project/vllm vllm/engine/metrics.py (V0 `Metrics`, the 0.4
 *          series: labels model_name; histograms and gauges set through
 *          .labels() at the first stats log) and vllm/v1/metrics/loggers.py
 *          (V1 `PrometheusStatLogger`, 0.10: labels model_name, engine, one
 *          series per data-parallel engine made at start). Renames and
 *          additions: vllm:request_queue_time_seconds PR #4464 (0.6.4);
 *          vllm:kv_cache_usage_perc replaces vllm:gpu_cache_usage_perc in
 *          0.9 (hidden 0.11, removed 0.12); vllm:inter_token_latency_seconds
 *          replaces vllm:time_per_output_token_seconds in 0.10.2 (PR #24110;
 *          hidden 0.12, removed 0.13); vllm:request_time_per_output_token_seconds,
 *          one observation per finished request (decode time / (output
 *          tokens - 1)), PR #24015, 0.11.0. The inter-token histograms get
 *          one observation per decode step of each request.
 * SGLang   sgl-project/sglang python/sglang/srt/metrics/collector.py: the
 *          0.3.6 collector (SchedulerMetricsCollector gauges,
 *          TokenizerMetricsCollector: no sglang:num_requests_total, and
 *          sglang:time_per_output_token_seconds observed by the tokenizer
 *          manager on every streamed chunk as the request's mean so far);
 *          the current one (num_requests_total in observe_one_finished_request,
 *          sglang:inter_token_latency_seconds incremented by the tokens of
 *          each chunk, no per-request TPOT; queue time PR #4444, 0.4.4).
 *          Every family is set through .labels() on first use.
 * TGI      huggingface/text-generation-inference v3.3.0 router/src/server.rs,
 *          backends/v3/src/{queue.rs,backend.rs,lib.rs}: metrics-exporter-
 *          prometheus renders a family only once it was set, so a pod that
 *          served nothing shows tgi_batch_max_total_tokens (set when the
 *          backend connects) alone; tgi_queue_size appears with the first
 *          request queued, tgi_batch_current_size with the first batch.
 * Triton   triton-inference-server/core src/metrics.cc and
 *          src/metric_model_reporter.cc (HEAD 73aad7c, 2026-06): per-model
 *          counters made at model load; nv_inference_pending_request_count
 *          core #246 (2023-08-30, release 23.09); the first-response
 *          histogram core #396 (2024-10-23, release 24.11), made at model
 *          load only with --metrics-config histogram_latencies=true, observed
 *          at every request's first response; the _us counters go with
 *          counter_latencies=false.
 * EPP      kubernetes-sigs/gateway-api-inference-extension pkg/epp/metrics/
 *          metrics.go at v1.3.0, v1.4.0, v1.5.0 (pool running average and
 *          pool saturation added in v1.5.0); llm-d/llm-d-router v0.9.0 and
 *          v0.10.0 pkg/epp/metrics/llm_d_router_metrics.go and docs/metrics.md
 *          (llm_d_epp_* canonical, the older names dual-emitted; the
 *          saturation's stage label came after v0.10.0, PR #2221).
 */
#include "core/engine_table.h"

#include <stdio.h>
#include <string.h>

/* n "" : a name is a string literal, so its length is known here */
#define ROW(e, n, k, r, sig, rk, u, lab, s, un, per, pres, nd)                                     \
    { e, n, k, r, sig, rk, u, lab, s, un, per, pres, nd, sizeof(n "") - 1 }

/* slo_signal_t values (core/demand_eval.h; a test checks they agree) */
enum { S_TTFT = 0, S_TPOT = 1, S_E2E = 2, S_QUEUE = 3, S_ITL = 4 };

#define V_LABELS "model_name; engine (V1)"
#define SG_LABELS "model_name, tp_rank, ... (dp_rank with DP attention)"
#define TR_LABELS "model, version"
#define FLOW_LABELS "fairness_id, priority, inference_pool, model_name, target_model_name"

static const engine_metric_t rows[] = {
    /* ---- vLLM ---- */
    ROW(ENGINE_VLLM, "vllm:num_requests_waiting", EM_GAUGE, EMR_WAITING, -1, 0, "requests",
        V_LABELS, "≤ vLLM 0.4", "", EMO_NONE, EMP_START, ""),
    ROW(ENGINE_VLLM, "vllm:num_requests_running", EM_GAUGE, EMR_RUNNING, -1, 0, "requests",
        V_LABELS, "≤ vLLM 0.4", "", EMO_NONE, EMP_START, ""),
    ROW(ENGINE_VLLM, "vllm:kv_cache_usage_perc", EM_GAUGE, EMR_KV, -1, 0, "fraction 0-1", V_LABELS,
        "vLLM 0.9", "", EMO_NONE, EMP_START, ""),
    ROW(ENGINE_VLLM, "vllm:gpu_cache_usage_perc", EM_GAUGE, EMR_KV, -1, 1, "fraction 0-1", V_LABELS,
        "≤ vLLM 0.4", "renamed vllm:kv_cache_usage_perc in 0.9, hidden 0.11, removed 0.12",
        EMO_NONE, EMP_START, ""),
    ROW(ENGINE_VLLM, "vllm:request_success_total", EM_COUNTER, EMR_COMPLETED, -1, 0, "requests",
        V_LABELS ", finished_reason", "≤ vLLM 0.4", "", EMO_NONE, EMP_FIRST_USE, ""),
    ROW(ENGINE_VLLM, "vllm:prompt_tokens_total", EM_COUNTER, EMR_PROMPT_TOKENS, -1, 0, "tokens",
        V_LABELS, "≤ vLLM 0.4", "", EMO_NONE, EMP_START, ""),
    ROW(ENGINE_VLLM, "vllm:generation_tokens_total", EM_COUNTER, EMR_GEN_TOKENS, -1, 0, "tokens",
        V_LABELS, "≤ vLLM 0.4", "", EMO_NONE, EMP_START, ""),
    ROW(ENGINE_VLLM, "vllm:lora_requests_info", EM_GAUGE, EMR_LORA, -1, 0, "Unix time",
        "max_lora, waiting_lora_adapters, running_lora_adapters", "≤ vLLM 0.7", "", EMO_NONE,
        EMP_FLAG, "--enable-lora"),
    ROW(ENGINE_VLLM, "vllm:cache_config_info", EM_GAUGE, EMR_IDENTITY, -1, 0, "1",
        "the cache config", "≤ vLLM 0.4", "", EMO_NONE, EMP_START, ""),
    ROW(ENGINE_VLLM, "vllm:time_to_first_token_seconds", EM_HISTOGRAM, EMR_LATENCY, S_TTFT, 0,
        "seconds", V_LABELS, "≤ vLLM 0.4", "", EMO_REQUEST, EMP_START, ""),
    ROW(ENGINE_VLLM, "vllm:request_time_per_output_token_seconds", EM_HISTOGRAM, EMR_LATENCY,
        S_TPOT, 0, "seconds", V_LABELS, "vLLM 0.11.0", "", EMO_REQUEST, EMP_START, ""),
    ROW(ENGINE_VLLM, "vllm:inter_token_latency_seconds", EM_HISTOGRAM, EMR_LATENCY, S_ITL, 0,
        "seconds", V_LABELS, "vLLM 0.10.2", "", EMO_TOKEN, EMP_START, ""),
    ROW(ENGINE_VLLM, "vllm:time_per_output_token_seconds", EM_HISTOGRAM, EMR_LATENCY, S_ITL, 1,
        "seconds", V_LABELS, "≤ vLLM 0.4",
        "renamed vllm:inter_token_latency_seconds in 0.10.2, hidden 0.12, removed 0.13", EMO_TOKEN,
        EMP_START, ""),
    ROW(ENGINE_VLLM, "vllm:e2e_request_latency_seconds", EM_HISTOGRAM, EMR_LATENCY, S_E2E, 0,
        "seconds", V_LABELS, "≤ vLLM 0.4", "", EMO_REQUEST, EMP_START, ""),
    ROW(ENGINE_VLLM, "vllm:request_queue_time_seconds", EM_HISTOGRAM, EMR_LATENCY, S_QUEUE, 0,
        "seconds", V_LABELS, "vLLM 0.6.4", "", EMO_REQUEST, EMP_START, ""),

    /* ---- SGLang ---- */
    ROW(ENGINE_SGLANG, "sglang:num_queue_reqs", EM_GAUGE, EMR_WAITING, -1, 0, "requests", SG_LABELS,
        "≤ SGLang 0.3.6", "", EMO_NONE, EMP_START, ""),
    ROW(ENGINE_SGLANG, "sglang:num_running_reqs", EM_GAUGE, EMR_RUNNING, -1, 0, "requests",
        SG_LABELS, "≤ SGLang 0.3.6", "", EMO_NONE, EMP_START, ""),
    ROW(ENGINE_SGLANG, "sglang:token_usage", EM_GAUGE, EMR_KV, -1, 0, "fraction 0-1", SG_LABELS,
        "≤ SGLang 0.3.6", "", EMO_NONE, EMP_START, ""),
    ROW(ENGINE_SGLANG, "sglang:num_used_tokens", EM_GAUGE, EMR_IDENTITY, -1, 0, "tokens", SG_LABELS,
        "≤ SGLang 0.3.6", "", EMO_NONE, EMP_START, ""),
    ROW(ENGINE_SGLANG, "sglang:gen_throughput", EM_GAUGE, EMR_IDENTITY, -1, 0, "tokens/s",
        SG_LABELS, "≤ SGLang 0.3.6", "", EMO_NONE, EMP_START, ""),
    ROW(ENGINE_SGLANG, "sglang:num_requests_total", EM_COUNTER, EMR_COMPLETED, -1, 0, "requests",
        SG_LABELS, "SGLang 0.4", "", EMO_NONE, EMP_FIRST_USE, ""),
    ROW(ENGINE_SGLANG, "sglang:prompt_tokens_total", EM_COUNTER, EMR_PROMPT_TOKENS, -1, 0, "tokens",
        SG_LABELS, "≤ SGLang 0.3.6", "", EMO_NONE, EMP_FIRST_USE, ""),
    ROW(ENGINE_SGLANG, "sglang:generation_tokens_total", EM_COUNTER, EMR_GEN_TOKENS, -1, 0,
        "tokens", SG_LABELS, "≤ SGLang 0.3.6", "", EMO_NONE, EMP_FIRST_USE, ""),
    ROW(ENGINE_SGLANG, "sglang:time_to_first_token_seconds", EM_HISTOGRAM, EMR_LATENCY, S_TTFT, 0,
        "seconds", SG_LABELS, "≤ SGLang 0.3.6", "", EMO_REQUEST, EMP_FIRST_USE, ""),
    ROW(ENGINE_SGLANG, "sglang:inter_token_latency_seconds", EM_HISTOGRAM, EMR_LATENCY, S_ITL, 0,
        "seconds", SG_LABELS, "SGLang 0.4", "", EMO_TOKEN, EMP_FIRST_USE, ""),
    ROW(ENGINE_SGLANG, "sglang:time_per_output_token_seconds", EM_HISTOGRAM, EMR_LATENCY, S_ITL, 1,
        "seconds", SG_LABELS, "≤ SGLang 0.3.6", "replaced by sglang:inter_token_latency_seconds",
        EMO_CHUNK, EMP_FIRST_USE, ""),
    ROW(ENGINE_SGLANG, "sglang:e2e_request_latency_seconds", EM_HISTOGRAM, EMR_LATENCY, S_E2E, 0,
        "seconds", SG_LABELS, "≤ SGLang 0.3.6", "", EMO_REQUEST, EMP_FIRST_USE, ""),
    ROW(ENGINE_SGLANG, "sglang:queue_time_seconds", EM_HISTOGRAM, EMR_LATENCY, S_QUEUE, 0,
        "seconds", "dp_rank (newer releases), else as above", "SGLang 0.4.4", "", EMO_REQUEST,
        EMP_FIRST_USE, ""),

    /* ---- TGI ---- */
    ROW(ENGINE_TGI, "tgi_queue_size", EM_GAUGE, EMR_WAITING, -1, 0, "requests", "", "≤ TGI 3.3", "",
        EMO_NONE, EMP_FIRST_USE, ""),
    ROW(ENGINE_TGI, "tgi_batch_current_size", EM_GAUGE, EMR_RUNNING, -1, 0, "requests", "",
        "≤ TGI 3.3", "", EMO_NONE, EMP_FIRST_USE, ""),
    ROW(ENGINE_TGI, "tgi_batch_max_total_tokens", EM_GAUGE, EMR_IDENTITY, -1, 0, "tokens", "",
        "≤ TGI 3.3", "", EMO_NONE, EMP_START, ""),
    ROW(ENGINE_TGI, "tgi_request_count", EM_COUNTER, EMR_IDENTITY, -1, 0, "requests", "",
        "≤ TGI 3.3", "", EMO_NONE, EMP_FIRST_USE, ""),
    ROW(ENGINE_TGI, "tgi_request_success", EM_COUNTER, EMR_COMPLETED, -1, 0, "requests", "",
        "≤ TGI 3.3", "", EMO_NONE, EMP_FIRST_USE, ""),
    ROW(ENGINE_TGI, "tgi_request_input_length", EM_HISTOGRAM, EMR_PROMPT_TOKENS, -1, 0,
        "tokens (its _sum)", "", "≤ TGI 3.3", "", EMO_REQUEST, EMP_FIRST_USE, ""),
    ROW(ENGINE_TGI, "tgi_request_generated_tokens", EM_HISTOGRAM, EMR_GEN_TOKENS, -1, 0,
        "tokens (its _sum)", "", "≤ TGI 3.3", "", EMO_REQUEST, EMP_FIRST_USE, ""),
    ROW(ENGINE_TGI, "tgi_request_mean_time_per_token_duration", EM_HISTOGRAM, EMR_LATENCY, S_TPOT,
        0, "seconds", "", "≤ TGI 3.3", "", EMO_REQUEST, EMP_FIRST_USE, ""),
    ROW(ENGINE_TGI, "tgi_request_duration", EM_HISTOGRAM, EMR_LATENCY, S_E2E, 0, "seconds", "",
        "≤ TGI 3.3", "", EMO_REQUEST, EMP_FIRST_USE, ""),
    ROW(ENGINE_TGI, "tgi_request_queue_duration", EM_HISTOGRAM, EMR_LATENCY, S_QUEUE, 0, "seconds",
        "", "≤ TGI 3.3", "", EMO_REQUEST, EMP_FIRST_USE, ""),

    /* ---- Triton ---- */
    ROW(ENGINE_TRITON, "nv_inference_pending_request_count", EM_GAUGE, EMR_WAITING, -1, 0,
        "requests", TR_LABELS, "Triton 23.09", "", EMO_NONE, EMP_START, ""),
    ROW(ENGINE_TRITON, "nv_inference_queue_duration_us", EM_COUNTER, EMR_QUEUE_US, -1, 0,
        "microseconds", TR_LABELS, "≤ Triton 21.01", "", EMO_NONE, EMP_START, ""),
    ROW(ENGINE_TRITON, "nv_inference_request_success", EM_COUNTER, EMR_SUCCESS, -1, 0, "requests",
        TR_LABELS, "≤ Triton 21.01", "", EMO_NONE, EMP_START, ""),
    ROW(ENGINE_TRITON, "nv_inference_count", EM_COUNTER, EMR_IDENTITY, -1, 0, "inferences",
        TR_LABELS, "≤ Triton 21.01", "", EMO_NONE, EMP_START, ""),
    ROW(ENGINE_TRITON, "nv_inference_exec_count", EM_COUNTER, EMR_IDENTITY, -1, 0, "executions",
        TR_LABELS, "≤ Triton 21.01", "", EMO_NONE, EMP_START, ""),
    ROW(ENGINE_TRITON, "nv_inference_first_response_histogram_ms", EM_HISTOGRAM, EMR_LATENCY,
        S_TTFT, 0, "milliseconds", TR_LABELS, "Triton 24.11", "", EMO_REQUEST, EMP_FLAG,
        "--metrics-config histogram_latencies=true"),

    /* ---- the endpoint picker ---- */
    ROW(ENGINE_EPP, "llm_d_epp_flow_control_queue_size", EM_GAUGE, EMR_EPP_FLOW, -1, 0, "requests",
        FLOW_LABELS, "llm-d-router v0.9.0", "", EMO_NONE, EMP_FIRST_USE, ""),
    ROW(ENGINE_EPP, "inference_extension_flow_control_queue_size", EM_GAUGE, EMR_EPP_FLOW, -1, 1,
        "requests", FLOW_LABELS, "≤ GAIE v1.3.0", "mirrored by llm-d-router (deprecated)", EMO_NONE,
        EMP_FIRST_USE, ""),
    ROW(ENGINE_EPP, "llm_d_epp_ready_endpoints", EM_GAUGE, EMR_EPP_READY, -1, 0, "endpoints",
        "name", "llm-d-router v0.9.0", "", EMO_NONE, EMP_START, ""),
    ROW(ENGINE_EPP, "inference_pool_ready_pods", EM_GAUGE, EMR_EPP_READY, -1, 1, "endpoints",
        "name", "≤ GAIE v1.3.0", "mirrored by llm-d-router (deprecated)", EMO_NONE, EMP_START, ""),
    ROW(ENGINE_EPP, "llm_d_epp_average_queue_size", EM_GAUGE, EMR_EPP_AVG_QUEUE, -1, 0,
        "requests per endpoint", "name", "llm-d-router v0.9.0", "", EMO_NONE, EMP_START, ""),
    ROW(ENGINE_EPP, "inference_pool_average_queue_size", EM_GAUGE, EMR_EPP_AVG_QUEUE, -1, 1,
        "requests per endpoint", "name", "≤ GAIE v1.3.0", "mirrored by llm-d-router (deprecated)",
        EMO_NONE, EMP_START, ""),
    ROW(ENGINE_EPP, "llm_d_epp_average_running_requests", EM_GAUGE, EMR_EPP_AVG_RUNNING, -1, 0,
        "requests per endpoint", "name", "llm-d-router v0.9.0", "", EMO_NONE, EMP_START, ""),
    ROW(ENGINE_EPP, "inference_pool_average_running_requests", EM_GAUGE, EMR_EPP_AVG_RUNNING, -1, 1,
        "requests per endpoint", "name", "GAIE v1.5.0", "mirrored by llm-d-router (deprecated)",
        EMO_NONE, EMP_START, ""),
    ROW(ENGINE_EPP, "llm_d_epp_average_kv_cache_utilization", EM_GAUGE, EMR_EPP_AVG_KV, -1, 0,
        "fraction 0-1", "name", "llm-d-router v0.9.0", "", EMO_NONE, EMP_START, ""),
    ROW(ENGINE_EPP, "inference_pool_average_kv_cache_utilization", EM_GAUGE, EMR_EPP_AVG_KV, -1, 1,
        "fraction 0-1", "name", "≤ GAIE v1.3.0", "mirrored by llm-d-router (deprecated)", EMO_NONE,
        EMP_START, ""),
    ROW(ENGINE_EPP, "llm_d_epp_flow_control_pool_saturation", EM_GAUGE, EMR_EPP_SATURATION, -1, 0,
        "ratio (1.0 = the gating set point)", "inference_pool; stage (after v0.10.0)",
        "llm-d-router v0.9.0", "", EMO_NONE, EMP_START, ""),
    ROW(ENGINE_EPP, "inference_extension_flow_control_pool_saturation", EM_GAUGE,
        EMR_EPP_SATURATION, -1, 1, "ratio (1.0 = saturated)",
        "inference_pool; stage (after v0.10.0)", "GAIE v1.5.0",
        "mirrored by llm-d-router (deprecated)", EMO_NONE, EMP_START, ""),
    ROW(ENGINE_EPP, "llm_d_epp_info", EM_GAUGE, EMR_IDENTITY, -1, 0, "1", "commit, build_ref",
        "llm-d-router v0.9.0", "", EMO_NONE, EMP_START, ""),
    ROW(ENGINE_EPP, "inference_extension_info", EM_GAUGE, EMR_IDENTITY, -1, 0, "1",
        "commit, build_ref", "≤ GAIE v1.3.0", "", EMO_NONE, EMP_START, ""),
};

#define NROWS (sizeof rows / sizeof *rows)

const engine_metric_t *engine_table_rows(size_t *count) {
    *count = NROWS;
    return rows;
}

const engine_metric_t *engine_table_find(engine_t e, const char *name, size_t n) {
    for (size_t i = 0; i < NROWS; i++)
        if (rows[i].engine == e && rows[i].name_len == n && memcmp(rows[i].name, name, n) == 0)
            return &rows[i];
    return NULL;
}

const engine_metric_t *engine_table_primary(engine_t e, engine_metric_role_t role, int signal) {
    for (size_t i = 0; i < NROWS; i++)
        if (rows[i].engine == e && rows[i].role == role && rows[i].rank == 0 &&
            (role != EMR_LATENCY || rows[i].signal == signal))
            return &rows[i];
    return NULL;
}

const char *engine_table_product(engine_t e) {
    switch (e) {
    case ENGINE_VLLM:
        return "vLLM";
    case ENGINE_TRITON:
        return "Triton";
    case ENGINE_TGI:
        return "TGI";
    case ENGINE_SGLANG:
        return "SGLang";
    case ENGINE_EPP:
        return "the endpoint picker";
    case ENGINE_NONE:
        break;
    }
    return "";
}

const char *engine_table_obs_words(engine_metric_obs_t per) {
    switch (per) {
    case EMO_REQUEST:
        return "one observation per request";
    case EMO_TOKEN:
        return "one observation per generated token";
    case EMO_CHUNK:
        return "one observation per streamed chunk";
    case EMO_NONE:
        break;
    }
    return "";
}

static const char *kind_name(engine_metric_kind_t k) {
    return k == EM_GAUGE ? "gauge" : k == EM_COUNTER ? "counter" : "histogram";
}

const char *engine_table_missing(const engine_metric_t *m, char *buf, size_t len) {
    const char *obs = engine_table_obs_words(m->per);
    int n = snprintf(buf, len, "%s (%s%s%s) is not in the scrape: ", m->name, kind_name(m->kind),
                     obs[0] ? ", " : "", obs);
    if (n < 0 || (size_t)n >= len)
        return buf;
    const char *since = m->since;
    bool at_or_before = strncmp(since, "≤ ", strlen("≤ ")) == 0;
    if (m->presence == EMP_FLAG)
        snprintf(buf + n, len - (size_t)n, "%s exports it only with %s (%s and later)",
                 engine_table_product(m->engine), m->needs,
                 at_or_before ? since + strlen("≤ ") : since);
    else if (!at_or_before)
        snprintf(buf + n, len - (size_t)n, "it was added in %s, so this server is older", since);
    else
        snprintf(buf + n, len - (size_t)n,
                 "every %s release since %s exports it (is the URL this engine's metrics "
                 "endpoint, and does the model filter match?)",
                 engine_table_product(m->engine), since + strlen("≤ "));
    return buf;
}

const char *engine_table_missing_role(engine_t e, engine_metric_role_t role, int signal, char *buf,
                                      size_t len) {
    const engine_metric_t *found[4];
    size_t n = 0;
    for (size_t i = 0; i < NROWS && n < 4; i++)
        if (rows[i].engine == e && rows[i].role == role &&
            (role != EMR_LATENCY || rows[i].signal == signal))
            found[n++] = &rows[i];
    if (len)
        buf[0] = '\0';
    if (n == 0)
        return buf;
    if (n == 1)
        return engine_table_missing(found[0], buf, len);
    /* at most a current and an older name per role */
    snprintf(buf, len,
             "neither %s (%s) nor %s (%s) is in the scrape: %s releases before those lack it "
             "(or the URL is not its metrics endpoint)",
             found[0]->name, found[0]->since, found[1]->name, found[1]->since,
             engine_table_product(e));
    return buf;
}

static const char *presence_words(const engine_metric_t *m) {
    switch (m->presence) {
    case EMP_START:
        return "from the start";
    case EMP_FIRST_USE:
        return "on first use";
    case EMP_FLAG:
        return "with the flag";
    }
    return "";
}

void engine_table_markdown(strbuf_t *out) {
    strbuf_printf(out, "| engine | metric | type | unit | labels | added | renamed / removed | "
                       "observations | exported | read as |\n");
    strbuf_printf(out, "|---|---|---|---|---|---|---|---|---|---|\n");
    static const char *const roles[EMR_COUNT] = {
        [EMR_IDENTITY] = "recognises the engine",
        [EMR_WAITING] = "waiting",
        [EMR_RUNNING] = "running",
        [EMR_KV] = "KV cache",
        [EMR_QUEUE_US] = "queue time (rates)",
        [EMR_SUCCESS] = "completed (rates)",
        [EMR_COMPLETED] = "completed",
        [EMR_PROMPT_TOKENS] = "prompt tokens",
        [EMR_GEN_TOKENS] = "generated tokens",
        [EMR_LORA] = "LoRA adapters",
        [EMR_LATENCY] = "latency",
        [EMR_EPP_FLOW] = "flow-control queue",
        [EMR_EPP_READY] = "ready endpoints",
        [EMR_EPP_AVG_QUEUE] = "pool waiting",
        [EMR_EPP_AVG_RUNNING] = "pool running",
        [EMR_EPP_AVG_KV] = "pool KV cache",
        [EMR_EPP_SATURATION] = "pool saturation",
    };
    static const char *const signals[ENGINE_TABLE_SIGNALS] = {"`ttft…`", "`tpot…`", "`e2e…`",
                                                              "`queueTime…`", "`itl…`"};
    for (size_t i = 0; i < NROWS; i++) {
        const engine_metric_t *m = &rows[i];
        const char *obs = engine_table_obs_words(m->per);
        strbuf_printf(out, "| `%s` | `%s` | %s | %s | %s | %s | %s | %s | %s%s%s%s | %s%s |\n",
                      engine_name(m->engine), m->name, kind_name(m->kind), m->unit,
                      m->labels[0] ? m->labels : "—", m->since, m->until[0] ? m->until : "—",
                      obs[0] ? obs + strlen("one observation ") : "—", presence_words(m),
                      m->needs[0] ? " `" : "", m->needs[0] ? m->needs : "", m->needs[0] ? "`" : "",
                      m->role == EMR_LATENCY && m->signal >= 0 && m->signal < ENGINE_TABLE_SIGNALS
                          ? signals[m->signal]
                          : roles[m->role],
                      m->rank ? " (older name)" : "");
    }
}
