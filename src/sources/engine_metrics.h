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
 *           Completed vllm:request_success_total (every finished_reason),
 *           tokens vllm:prompt_tokens_total, vllm:generation_tokens_total.
 *   Triton  waiting nv_inference_pending_request_count; the counters
 *           nv_inference_queue_duration_us and nv_inference_request_success
 *           summed over models (rates are taken later, over a window);
 *           `model` filters on the model label. Completed is
 *           nv_inference_request_success; no token counters.
 *   TGI     waiting tgi_queue_size, running tgi_batch_current_size.
 *           Completed tgi_request_success, tokens the _sum of the
 *           histograms tgi_request_input_length, tgi_request_generated_tokens.
 *   SGLang  waiting sglang:num_queue_reqs, running sglang:num_running_reqs,
 *           KV sglang:token_usage (0-1); `model` filters on model_name.
 *           Completed sglang:num_requests_total, tokens
 *           sglang:prompt_tokens_total, sglang:generation_tokens_total.
 *   EPP     (engine epp: the Gateway API Inference Extension's endpoint
 *           picker, not an engine) waiting = the flow-control queue
 *           llm_d_epp_flow_control_queue_size (else the deprecated
 *           inference_extension_flow_control_queue_size), summed over its
 *           series; `model` filters it on model_name. Per InferencePool
 *           (label `name`, at most 16 in a scrape): llm_d_epp_ready_endpoints
 *           (inference_pool_ready_pods) x llm_d_epp_average_queue_size,
 *           _average_running_requests, _average_kv_cache_utilization x 100
 *           (inference_pool_average_*) into pool_waiting, pool_running,
 *           pool_kv_percent, summed over pools; the new name of each family
 *           is read, the old only when the new is absent, never both. The
 *           pool counts are duplicates across EPP replicas: the evaluation
 *           maxes them over pods, and sums the flow-control queues.
 * LoRA (vLLM, only with an adapter: engine_reading_parse_full()):
 *           vllm:lora_requests_info, the newest series' running_lora_adapters
 *           and waiting_lora_adapters labels (names, no counts).
 * The Go system took the last matching line and ignored labels; summing is
 * what a pod with several engines (data parallel) needs.
 *
 * Every name above, and what each release of each engine exports, is the
 * engine table's (core/engine_table.h): a sample is read for the role its
 * row gives it. The reading also says what the page says of the engine:
 * recognised (some family of the engine's table is there), served (it has
 * finished requests), first_use_zero (a family the engine creates on first
 * use, absent from a recognised page, read as the engine's zero: TGI's
 * gauges and counters before its first request; counters only while
 * nothing was served), hist_lacking (a wanted latency histogram the
 * engine's release or flags lack) and, for the EPP, the pool saturation x
 * ready endpoints (llm_d_epp_flow_control_pool_saturation, paired by its
 * inference_pool label with the pool's name; the stage "effective" when
 * the series carry a stage).
 *
 * Completed and token counters (has_completed, has_tokens) are what the
 * queueing model learns arrival rate and per-request cost from. They are
 * cumulative, summed like the gauges, and optional: an engine too old to
 * export them leaves has_* false, which is not an error. A NaN, Inf or
 * negative sample in one, or a sum that overflows, makes that counter
 * unknown (has_* false, never 0) and leaves the gauges intact (they scaled
 * the engine before the counters were read); has_tokens needs both token
 * counters. They do not count in `series`. Triton's
 * nv_inference_request_success, which the Triton rates read, keeps failing
 * the scrape on NaN or Inf, as before. The names are the same in the text
 * format and OpenMetrics (prom_parse gives full sample names, _total
 * included).
 */
#ifndef KGS_SOURCES_ENGINE_METRICS_H
#define KGS_SOURCES_ENGINE_METRICS_H

#include <stdbool.h>
#include <stddef.h>

#include "core/demand_eval.h"
#include "core/trigger_config.h"
#include "sources/hist_window.h"
#include "sources/prom_parse.h"

/* engine_reading_t: core/demand_eval.h (the evaluation reads it). */

/*
 * Reads engine e's metrics from one scrape. model ("" = all) filters on the
 * engine's model label. Returns 0 (fields the scrape lacks stay has_* =
 * false: the caller decides whether that is an error), or KGS_EINVAL with
 * the parse error or "<metric> is nan: no usable value" (a NaN or Inf in a
 * wanted gauge or Triton counter makes the sum unknown, not 0; the other
 * engines' completed and token counters never fail the call, see above),
 * "<metric> is -1: a count cannot be negative" (every gauge read counts
 * something), or "<gauge> summed over its series is not finite" (finite
 * samples that overflow a double); for epp also more than 16 pools, two
 * series of one gauge for one pool, or a pool average without the pool's
 * ready-endpoints series (each naming the metric); or KGS_ENOMEM. *out is fully written
 * (zeroed on failure).
 */
int engine_reading_parse(engine_t e, const char *model, const char *text, size_t len,
                         prom_format_t fmt, engine_reading_t *out, char *err, size_t errlen);

/*
 * Latency histograms (metricType slo, or latency targets on demand), read
 * only for the signals a trigger names (want: bit s for slo_signal_t s), so
 * a gauge trigger's scrape costs what it did:
 *   vLLM    TTFT vllm:time_to_first_token_seconds, TPOT (per request)
 *           vllm:request_time_per_output_token_seconds, ITL (per token)
 *           vllm:inter_token_latency_seconds (the older
 *           vllm:time_per_output_token_seconds when the new one is absent),
 *           E2E vllm:e2e_request_latency_seconds, queue
 *           vllm:request_queue_time_seconds;
 *   SGLang  sglang:time_to_first_token_seconds, ITL
 *           sglang:inter_token_latency_seconds (else
 *           sglang:time_per_output_token_seconds), no per-request TPOT,
 *           sglang:e2e_request_latency_seconds, sglang:queue_time_seconds;
 *   TGI     no TTFT; TPOT tgi_request_mean_time_per_token_duration, E2E
 *           tgi_request_duration, queue tgi_request_queue_duration;
 *   Triton  TTFT nv_inference_first_response_histogram_ms (bounds and sum
 *           converted to seconds); its queue and compute durations are
 *           counters (means, not quantiles) and are not read here.
 * Every series of a metric that passes the model filter is merged (buckets
 * with the same bound add, over vLLM's engine label, models, ...); series
 * of one metric with different bounds in one scrape are KGS_EINVAL naming
 * the metric, as is a malformed histogram (an le that is not a number, a
 * bucket below the one under it, no +Inf bucket). mask: the signals found
 * (a histogram the engine has not exported yet is absent, not an error:
 * TGI's exporter shows one only after its first observation).
 * process_start_time_seconds (the largest, when several) is given when the
 * scrape has it: the source hub reads a pod that started inside the window
 * as new, not as a baseline.
 */
typedef struct {
    unsigned mask;
    hist_layout_t layout[SLO_SIGNAL_COUNT];
    hist_counts_t counts[SLO_SIGNAL_COUNT];
    bool has_start;
    double start_time_s; /* process_start_time_seconds, seconds since the epoch */
} engine_hists_t;

/*
 * engine_reading_parse() that also reads, in the same pass:
 *   - the latency histograms of the signals in want into *hists (fully
 *     written; want 0 or hists NULL: none read). On success
 *     out->hist_mask = hists->mask;
 *   - vLLM's vllm:lora_requests_info for LoRA adapter `adapter` (NULL or "":
 *     not read): out->has_lora when a series with a finite value exists, and
 *     lora_waiting / lora_running when the newest one lists the adapter
 *     (docs/configuration.md, vllm_lora_waiting_engines). The model filter
 *     does not apply to it (it has no model_name label); a series whose
 *     value is not finite is skipped, never an error.
 */
int engine_reading_parse_full(engine_t e, const char *model, const char *adapter, unsigned want,
                              const char *text, size_t len, prom_format_t fmt,
                              engine_reading_t *out, engine_hists_t *hists, char *err,
                              size_t errlen);

/*
 * The sum of every sample named metric whose labels satisfy the trigger's
 * demandLabels matchers (d->matchers). *matched counts them; 0 matched is
 * not an error here (the caller reports it). Returns like
 * engine_reading_parse(): a NaN, Inf or negative sample (a queue length is
 * a count) or a sum that is not finite is KGS_EINVAL naming the metric.
 */
int demand_value_parse(const demand_config_t *d, const char *text, size_t len, prom_format_t fmt,
                       double *sum, unsigned *matched, char *err, size_t errlen);

/*
 * The same readings from a page read as it arrives (the source hub parses
 * each poll's body while it is received, keeping a partial line rather than
 * the body): every sample of the page goes through engine_scan_sample() (a
 * prom_sample_cb, e.g. from prom_stream_feed()), then engine_scan_finish()
 * gives what engine_reading_parse_full() gives for the whole page.
 * engine_scan_new copies model and adapter (NULL adapter: LoRA not read;
 * hists false: no histogram read); NULL when out of memory. Returned:
 * engine_scan_free(). When engine_scan_sample returns non-zero the scan
 * has failed: engine_scan_error() says why (borrowed from the scan).
 * engine_scan_bytes(): what one scan holds, for the hub's read budget.
 */
typedef struct engine_scan engine_scan_t;
engine_scan_t *engine_scan_new(engine_t e, const char *model, const char *adapter, unsigned want,
                               bool hists);
int engine_scan_sample(void *scan, const prom_sample_t *s);
const char *engine_scan_error(const engine_scan_t *sc);
int engine_scan_finish(engine_scan_t *sc, engine_reading_t *out, engine_hists_t *hists, char *err,
                       size_t errlen);
size_t engine_scan_bytes(void);
void engine_scan_free(engine_scan_t *sc);

/* demand_value_parse() for a page read as it arrives, as above; d is
 * borrowed for the scan's life. */
typedef struct demand_scan demand_scan_t;
demand_scan_t *demand_scan_new(const demand_config_t *d);
int demand_scan_sample(void *scan, const prom_sample_t *s);
const char *demand_scan_error(const demand_scan_t *sc);
int demand_scan_finish(const demand_scan_t *sc, double *sum, unsigned *matched, char *err,
                       size_t errlen);
/* What one demand scan holds, for the hub's read budget. */
size_t demand_scan_bytes(void);
void demand_scan_free(demand_scan_t *sc);

#endif
