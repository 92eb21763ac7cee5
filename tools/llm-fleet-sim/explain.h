/*
 * explain.h - the scaler's Explain answer (/kgs.v1.Inspect/Explain: a
 * GetMetricsResponse whose values are named numbers) as one line of text.
 *
 * Names the demo knows come in a fixed order (each with its suffix, the
 * part after ':' when there is one): an error (error=UNAVAILABLE: ...),
 * the decision and the signals
 * (decided_by=queue, need:queue=3.2, signal:queue=40, wake=<why>), the
 * queueing model's inputs (replicas, lambda_rps, capacity_rps,
 * cold_start_s, tokens_per_request, backlog, work_due, can_do, deficit,
 * steady, ready, starting; their suffix says where the number came from
 * and is shown in brackets: lambda_rps=3.2[learned]), then what the scaler
 * sees of the engines and pods (engines:answering=1, not_serving:<why>=7,
 * pods:ready=2) and latency targets. value and active are left out: the
 * screen has columns for them. Any other name is appended as it came, so a
 * scaler that adds names keeps working with this program. A NaN is the
 * scaler's "unknown" and is shown as that, never as 0.
 *
 * Pure: bytes in, text out, no allocation beyond protobuf-c's unpacking.
 */
#ifndef LFS_EXPLAIN_H
#define LFS_EXPLAIN_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *name; /* borrowed */
    double value;
} explain_item_t;

/*
 * Formats n items into out (outlen bytes, NUL-terminated): "name=value"
 * pairs separated by spaces, in the order above. An item that does not fit
 * is not cut: the line ends with " (+K more)" instead. Returns the length.
 */
size_t explain_format(const explain_item_t *items, size_t n, char *out, size_t outlen);

/*
 * Decodes an Explain response (a serialized externalscaler
 * GetMetricsResponse) and formats it as above. Returns the length, or 0
 * (out holds "") when the bytes are not a GetMetricsResponse or hold more
 * than EXPLAIN_MAX_ITEMS values.
 */
#define EXPLAIN_MAX_ITEMS 64
size_t explain_decode(const uint8_t *msg, size_t len, char *out, size_t outlen);

#endif
