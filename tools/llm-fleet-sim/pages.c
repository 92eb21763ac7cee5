/*
 * pages.c - see pages.h. The text is written with snprintf into the
 * caller's buffer; a page that does not fit is 0, never a cut page.
 */
#include "pages.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *buf;
    size_t n, len;
    bool full;
} page_t;

static void put(page_t *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(page_t *p, const char *fmt, ...) {
    if (p->full)
        return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(p->buf + p->len, p->n - p->len, fmt, ap);
    va_end(ap);
    if (w < 0 || (size_t)w >= p->n - p->len) {
        p->full = true;
        return;
    }
    p->len += (size_t)w;
}

/* Python's repr(float): the shortest decimal that reads back as v, with
 * ".0" on integers below 1e16 and an exponent outside [1e-4, 1e16). */
static void python_repr(char *buf, size_t n, double v) {
    if (v == floor(v) && fabs(v) < 1e16) {
        snprintf(buf, n, "%.1f", v);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

const char *pages_python_float(char *buf, size_t n, double v) {
    if (isnan(v)) {
        snprintf(buf, n, "NaN");
        return buf;
    }
    if (isinf(v)) {
        snprintf(buf, n, v > 0 ? "+Inf" : "-Inf");
        return buf;
    }
    char s[64];
    python_repr(s, sizeof s, v);
    const char *dot = strchr(s, '.');
    size_t at = dot ? (size_t)(dot - s) : 0;
    if (!(v > 0 && dot && at > 6)) {
        snprintf(buf, n, "%s", s);
        return buf;
    }
    /* prometheus_client: "Go switches to exponents sooner than Python":
     * d.ddd...e+0N with trailing zeros and dot stripped */
    char m[80];
    snprintf(m, sizeof m, "%c.%.*s%s", s[0], (int)(at - 1), s + 1, dot + 1);
    size_t ml = strlen(m);
    while (ml > 0 && (m[ml - 1] == '0' || m[ml - 1] == '.'))
        m[--ml] = '\0';
    snprintf(buf, n, "%se+0%zu", m, at - 1);
    return buf;
}

/* One vLLM gauge or counter family with its single engine="0" series. */
static void vllm_family(page_t *p, const char *name, const char *type, const char *help, double v) {
    char num[64];
    put(p, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
    put(p, "%s{engine=\"0\",model_name=\"%s\"} %s\n", name, PAGES_MODEL,
        pages_python_float(num, sizeof num, v));
}

size_t pages_vllm(char *buf, size_t n, const fleet_slot_t *s, double kv) {
    page_t p = {buf, n, 0, n == 0};
    char num[64];
    vllm_family(&p, "vllm:num_requests_running", "gauge",
                "Number of requests in model execution batches.", s->nrunning);
    vllm_family(&p, "vllm:num_requests_waiting", "gauge",
                "Number of requests waiting to be processed.", s->nwaiting);
    vllm_family(&p, "vllm:kv_cache_usage_perc", "gauge",
                "KV-cache usage. 1 means 100 percent usage.", kv);
    /* no prefix caching in this workload: every prompt token is a query,
     * none a hit */
    vllm_family(&p, "vllm:prefix_cache_queries_total", "counter",
                "Prefix cache queries, in terms of number of queried tokens.",
                s->prompt_tokens_total);
    vllm_family(&p, "vllm:prefix_cache_hits_total", "counter",
                "Prefix cache hits, in terms of number of cached tokens.", 0);
    vllm_family(&p, "vllm:num_preemptions_total", "counter",
                "Cumulative number of preemption from the engine.", 0);
    vllm_family(&p, "vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.",
                s->prompt_tokens_total);
    vllm_family(&p, "vllm:generation_tokens_total", "counter",
                "Number of generation tokens processed.", s->generation_tokens_total);
    put(&p, "# HELP vllm:request_success_total Count of successfully processed requests.\n"
            "# TYPE vllm:request_success_total counter\n");
    static const char *const reasons[] = {"stop", "length", "abort"};
    const double counts[] = {s->success_stop, s->success_length, s->success_abort};
    for (size_t i = 0; i < 3; i++)
        put(&p,
            "vllm:request_success_total{engine=\"0\",finished_reason=\"%s\",model_name=\"%s\"} "
            "%s\n",
            reasons[i], PAGES_MODEL, pages_python_float(num, sizeof num, counts[i]));
    return p.full ? 0 : p.len;
}

/* Go's strconv.FormatFloat(v, 'g', -1, 64), as client_golang writes a
 * sample: the shortest digits that read back as v, in %e form only when
 * the exponent is below -4 or at least 6 ("shortest" decides with
 * precision 6: 100 is "100", 1e6 is "1e+06"; C's shortest %g would give
 * "1e+02"). Finite v only. */
static void go_float(char *buf, size_t n, double v) {
    if (v == 0) {
        snprintf(buf, n, "0");
        return;
    }
    char e[48];
    int prec = 0;
    for (; prec < 17; prec++) {
        snprintf(e, sizeof e, "%.*e", prec, v);
        if (strtod(e, NULL) == v)
            break;
    }
    int exp = atoi(strchr(e, 'e') + 1);
    if (exp < -4 || exp >= 6) {
        snprintf(buf, n, "%s", e);
        return;
    }
    snprintf(buf, n, "%.*f", prec > exp ? prec - exp : 0, v);
}

/* One EPP gauge family with one series. */
static void epp_family(page_t *p, const char *name, const char *deprecated_for, const char *help,
                       const char *labels, double v) {
    char num[64];
    go_float(num, sizeof num, v);
    if (deprecated_for)
        put(p, "# HELP %s [ALPHA] [Deprecated: Use %s] %s\n", name, deprecated_for, help);
    else
        put(p, "# HELP %s [ALPHA] %s\n", name, help);
    put(p, "# TYPE %s gauge\n%s%s %s\n", name, name, labels, num);
}

size_t pages_gateway(char *buf, size_t n, const pages_pool_t *pool) {
    page_t p = {buf, n, 0, n == 0};
    static const char queue_labels[] =
        "{fairness_id=\"default\",inference_pool=\"" PAGES_POOL "\",model_name=\"" PAGES_MODEL
        "\",priority=\"0\",target_model_name=\"" PAGES_MODEL "\"}";
    static const char pool_labels[] = "{name=\"" PAGES_POOL "\"}";
    static const char queue_help[] =
        "Current number of requests actively held in the Flow Control queue.";
    static const char kv_help[] = "The average kv cache utilization for an inference server pool.";
    static const char avgq_help[] =
        "The average number of requests pending in the model server queue.";
    static const char run_help[] =
        "The average number of running requests across model servers in the pool.";
    double q = (double)pool->queue, ready = pool->ready;
    /* client_golang writes families sorted by name */
    epp_family(&p, "inference_extension_flow_control_queue_size",
               "llm_d_epp_flow_control_queue_size", queue_help, queue_labels, q);
    epp_family(&p, "inference_pool_average_kv_cache_utilization",
               "llm_d_epp_average_kv_cache_utilization", kv_help, pool_labels, pool->avg_kv);
    epp_family(&p, "inference_pool_average_queue_size", "llm_d_epp_average_queue_size", avgq_help,
               pool_labels, pool->avg_waiting);
    epp_family(&p, "inference_pool_average_running_requests", "llm_d_epp_average_running_requests",
               run_help, pool_labels, pool->avg_running);
    epp_family(&p, "inference_pool_ready_pods", "llm_d_epp_ready_endpoints",
               "The number of ready pods in the inference server pool.", pool_labels, ready);
    epp_family(&p, "llm_d_epp_average_kv_cache_utilization", NULL, kv_help, pool_labels,
               pool->avg_kv);
    epp_family(&p, "llm_d_epp_average_queue_size", NULL, avgq_help, pool_labels, pool->avg_waiting);
    epp_family(&p, "llm_d_epp_average_running_requests", NULL, run_help, pool_labels,
               pool->avg_running);
    epp_family(&p, "llm_d_epp_flow_control_queue_size", NULL, queue_help, queue_labels, q);
    epp_family(&p, "llm_d_epp_ready_endpoints", NULL,
               "The number of ready endpoints in the inference server pool.", pool_labels, ready);
    return p.full ? 0 : p.len;
}
