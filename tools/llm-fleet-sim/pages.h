/*
 * pages.h - the /metrics pages llm-fleet-sim serves, written as the real
 * programs write them.
 *
 * A vLLM replica (one page per Ready replica): vLLM v0.11.0's V1 engine,
 * vllm/v1/metrics/loggers.py (PrometheusStatLogger), exported by
 * prometheus_client in the text format 0.0.4 - the shape of
 * tests/fixtures/engines/vllm.txt (see its README): labels engine and
 * model_name, sorted (engine first; request_success adds finished_reason
 * between them), floats as Python's repr (2.0, 0.25), counters with
 * _total, one series per finished_reason (stop, length, abort) from the
 * start, the deprecated vllm:gpu_cache_usage_perc hidden (v0.11.0 hides
 * it, vLLM PR #24245), no *_created series (as with
 * PROMETHEUS_DISABLE_CREATED_SERIES), and none of the latency histograms
 * (the demo's trigger does not read them). One engine (data parallel 1):
 * engine="0".
 *
 * The gateway (one page): llm-d's endpoint picker (EPP, llm-d/llm-d-router
 * v0.10.0, docs/metrics.md) - the flow-control queue gauge
 * llm_d_epp_flow_control_queue_size{fairness_id, inference_pool,
 * model_name, priority, target_model_name} and the pool's
 * llm_d_epp_ready_endpoints and llm_d_epp_average_{queue_size,
 * running_requests, kv_cache_utilization}{name}, each also under its
 * deprecated name (inference_extension_flow_control_queue_size,
 * inference_pool_*) as llm-d still emits both - the shape of tests/fixtures/engines/epp.txt:
 * client_golang, families sorted by name, labels sorted, numbers in Go's
 * shortest form, HELP prefixed [ALPHA]. The queue series exists from the
 * start at 0 (the gateway has served this model before).
 *
 * Pure: text into the caller's buffer, no allocation.
 */
#ifndef LFS_PAGES_H
#define LFS_PAGES_H

#include <stddef.h>

#include "fleet.h"

#define PAGES_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define PAGES_MODEL "meta-llama/Llama-3.1-8B-Instruct"
#define PAGES_POOL "llama"

/*
 * The page of replica slot s (counters, gauges), with the KV-cache usage
 * kv (0..1), into buf (n bytes). Returns the length written (NUL
 * excluded), or 0 when it does not fit.
 */
size_t pages_vllm(char *buf, size_t n, const fleet_slot_t *s, double kv);

/* What the gateway knows: its own queue, and the pool behind it as the
 * endpoint picker scrapes it (averages over the Ready endpoints; 0 when
 * none is Ready). */
typedef struct {
    size_t queue;       /* requests held in the flow-control queue */
    unsigned ready;     /* Ready endpoints */
    double avg_waiting; /* vLLM's waiting requests, mean over the Ready endpoints */
    double avg_running;
    double avg_kv; /* KV-cache usage 0..1, mean */
} pages_pool_t;

/* The gateway's page. Returns the length, or 0 when it does not fit. */
size_t pages_gateway(char *buf, size_t n, const pages_pool_t *pool);

/* v as Python's repr() writes a float (prometheus_client's floatToGoString
 * for finite values): "2.0", "0.25", "1e-05", "1e+16". Returns buf. */
const char *pages_python_float(char *buf, size_t n, double v);

#endif
