/*
 * engine_metrics.h - one scrape of a serving engine's /metrics (or of a
 * generic Prometheus endpoint) turned into the numbers the scaler uses.
 * Pure: text in, reading out; no sockets, no clock.
 *
 * Per engine (docs/configuration.md, "Serving engines"):
 *   vLLM    waiting vllm:num_requests_waiting, running vllm:num_requests_running,
 *           KV vllm:kv_cache_usage_perc (a 0-1 fraction; the deprecated
 *           vllm:gpu_cache_usage_perc when the new name is absent);
 *           summed over every series (one per engine / data-parallel rank);
 *           `model` filters on the model_name label.
 *   Triton  waiting nv_inference_pending_request_count; the counters
 *           nv_inference_queue_duration_us and nv_inference_request_success
 *           summed over models (rates are taken later, over a window);
 *           `model` filters on the model label.
 *   TGI     waiting tgi_queue_size, running tgi_batch_current_size.
 *   SGLang  waiting sglang:num_queue_reqs, running sglang:num_running_reqs,
 *           KV sglang:token_usage (0-1); `model` filters on model_name.
 * The Go system took the last matching line and ignored labels; summing is
 * what a pod with several engines (data parallel) needs.
 */
#ifndef KGS_SOURCES_ENGINE_METRICS_H
#define KGS_SOURCES_ENGINE_METRICS_H

#include <stdbool.h>
#include <stddef.h>

#include "core/demand_eval.h"
#include "core/trigger_config.h"
#include "sources/prom_parse.h"

/* engine_reading_t: core/demand_eval.h (the evaluation reads it). */

/*
 * Reads engine e's metrics from one scrape. model ("" = all) filters on the
 * engine's model label. Returns 0 (fields the scrape lacks stay has_* =
 * false: the caller decides whether that is an error), or KGS_EINVAL with
 * the parse error or "<metric> is nan: no usable value" (a NaN or Inf in a
 * wanted series makes the sum unknown, not 0), or KGS_ENOMEM.
 */
int engine_reading_parse(engine_t e, const char *model, const char *text, size_t len,
                         prom_format_t fmt, engine_reading_t *out, char *err, size_t errlen);

/*
 * The sum of every sample named metric whose labels satisfy the trigger's
 * demandLabels matchers (d->matchers). *matched counts them; 0 matched is
 * not an error here (the caller reports it). Returns like
 * engine_reading_parse(), NaN and Inf included.
 */
int demand_value_parse(const demand_config_t *d, const char *text, size_t len, prom_format_t fmt,
                       double *sum, unsigned *matched, char *err, size_t errlen);

#endif
