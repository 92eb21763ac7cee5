/*
 * explain.h - the scaler's Explain answer (/kgs.v1.Inspect/Explain: a
 * GetMetricsResponse whose values are named numbers) as one line of text.
 *
 * Names the demo knows come first, in a fixed order: the queueing model's
 * replicas, lambda_rps, capacity_rps, cold_start_s, tokens_per_request,
 * backlog, work_due, can_do, deficit, steady, ready, starting (a suffix
 * ":<from>" says where the number came from and is shown in brackets:
 * lambda_rps=3.2[learned]), then every signal:<name>, need:<name> and
 * decided_by:<name> in the order they came; any other name is appended as
 * it came, so a scaler that adds names keeps working with this program. A
 * NaN is the scaler's "unknown" and is shown as that, never as 0.
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
