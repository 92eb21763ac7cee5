/*
 * collector.h - one NVML sweep of the node into a new snapshot.
 *
 * The collector owns the state that spans sweeps: whether NVML is
 * initialised (and when to retry if not), the previous NVLink counters (rates
 * are counter differences), and the GPM sample buffers. It calls NVML only
 * through an nvml_api_t, so the stand-in library and a table of fakes plug in
 * unchanged. Not thread-safe: one thread (the sampler's, or the CLI's main)
 * owns a collector.
 */
#ifndef KGS_NVML_COLLECTOR_H
#define KGS_NVML_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/snapshot.h"
#include "gpu/backend.h"
#include "nvml/loader.h"

#define COLLECTOR_MAX_GPUS 64
#define COLLECTOR_MAX_MIG_PER_GPU 8
/* Processes kept per GPU (or MIG instance), more are counted as dropped;
 * at most COLLECTOR_MAX_PROCS per sweep; NVML is asked for at most
 * COLLECTOR_MAX_PROCS_ASKED entries of one list. */
#define COLLECTOR_MAX_PROCS_PER_GPU 64
#define COLLECTOR_MAX_PROCS (COLLECTOR_MAX_GPUS * COLLECTOR_MAX_PROCS_PER_GPU)
#define COLLECTOR_MAX_PROCS_ASKED 4096

typedef struct nvml_collector nvml_collector_t;

/*
 * Creates a collector over `api` (borrowed; must outlive the collector).
 * `log` is borrowed and may be NULL. `node_name` is copied into every
 * snapshot. NVML is initialised lazily by the first sample.
 * Returns 0 or KGS_ENOMEM.
 */
int nvml_collector_new(const nvml_api_t *api, const logger_t *log, const char *node_name,
                       nvml_collector_t **out);

/*
 * Sweeps every GPU and MIG instance. On success *out is a new snapshot
 * (returned: the caller owns one reference). When NVML cannot be
 * initialised or enumerated the snapshot still comes back, with status
 * SNAPSHOT_NVML_DOWN and the reason in ->error; initialisation is then
 * retried on later sweeps with exponential backoff (1 s doubling to 30 s,
 * measured on `now`), and sweeps inside the backoff answer at once.
 * Returns 0, or KGS_ENOMEM (then *out is NULL).
 */
int nvml_collector_sample(nvml_collector_t *c, mono_ns_t now, snapshot_t **out);

/*
 * True when the last sweep saw a counter that needs a second sweep to give a
 * rate (NVLink throughput, GPM metrics). A one-shot reader sweeps twice,
 * COLLECTOR_RATE_WINDOW_NS apart, so those fields are present.
 */
bool nvml_collector_wants_second_sample(const nvml_collector_t *c);
#define COLLECTOR_RATE_WINDOW_NS (150 * NS_PER_MS) /* GPM needs > 100 ms */

/* The collector as a GPU backend ("nvml"): `c` is taken by whoever
 * deinitialises the backend (gpu_backend_deinit frees it). */
gpu_backend_t nvml_collector_backend(nvml_collector_t *c);

/* Frees GPM buffers and calls nvmlShutdown if NVML was initialised.
 * NULL does nothing. */
void nvml_collector_free(nvml_collector_t *c);

#endif
