/*
 * evaluator.h - (trigger config, node snapshot, now) -> the metric value and
 * activity KEDA asks for. Pure: no I/O, no clock reads, no allocation.
 *
 * An unknown value is never reported as 0: a stale snapshot, NVML down, an
 * unhealthy selected GPU or an absent field is a status with a message.
 */
#ifndef KGS_CORE_EVALUATOR_H
#define KGS_CORE_EVALUATOR_H

#include <stdbool.h>
#include <stdint.h>

#include "core/clock.h"
#include "core/snapshot.h"
#include "core/trigger_config.h"

typedef enum {
    EVAL_OK = 0,
    EVAL_UNAVAILABLE,         /* transient: NVML down, stale snapshot, GPU unhealthy, no GPUs */
    EVAL_FAILED_PRECONDITION, /* the config does not fit this node: bad index/UUID, absent field */
    EVAL_RESOURCE_EXHAUSTED   /* a budget refused what the trigger needs (a demand source) */
} eval_status_t;

typedef struct {
    eval_status_t status;
    double value;       /* valid when status == EVAL_OK */
    bool active;        /* value > activation_threshold; false unless EVAL_OK */
    unsigned inputs;    /* number of GPUs / MIG instances aggregated */
    bool pending;       /* UNAVAILABLE only because a source's first poll is under way:
                           an answer is expected within the source timeout */
    bool wake;          /* not EVAL_OK, yet a signal that exists at zero replicas (a queue)
                           reads work: the value is unknown, the activity is not. IsActive
                           and StreamIsActive answer true; GetMetrics fails as usual. */
    char message[2048]; /* "" when EVAL_OK; sized so that no message is cut */
} eval_result_t;

/*
 * Evaluates c against s. `now` and s->taken_mono are on the same monotonic
 * clock; the snapshot is stale when now - taken_mono > stale_after_ns.
 * *out is fully written.
 */
void evaluator_run(const trigger_config_t *c, const snapshot_t *s, mono_ns_t now,
                   uint64_t stale_after_ns, eval_result_t *out);

/* ceil(target), at least 1 (KEDA reads the int field when the float is 0 /
 * old KEDA); clamped to INT64_MAX; 1 for NaN. */
int64_t metric_target_size(double target);

/* llround(value), clamped to the int64 range; 0 for NaN. */
int64_t metric_value_int(double value);

/* The raw value of metric t for one whole GPU. false when the field is
 * absent (or the metric does not exist for GPUs). */
bool evaluator_gpu_value(metric_type_t t, const gpu_record_t *g, double *out);

/* The raw value of metric t for one MIG instance. false when absent or when
 * the metric does not exist per instance. */
bool evaluator_mig_value(metric_type_t t, const mig_record_t *m, double *out);

/* The trigger's selection rules, shared with the cluster evaluation:
 * whether GPU g is selected (gpuIndex, gpuUUID, or all), and whether MIG
 * instance m is (migUUID, or a migProfile, where "3g.40gb" also matches the
 * compute-instance profiles "Nc.3g.40gb"). */
bool evaluator_gpu_selected(const trigger_config_t *c, const gpu_record_t *g);
bool evaluator_mig_selected(const trigger_config_t *c, const mig_record_t *m);

#endif
