/*
 * profiles.h - named presets for a trigger (metadata key `profile`): the ten
 * profiles of the Go system, with identical names and values, plus the GPM
 * profiles of this build. Constant table; order is the documented order.
 */
#ifndef KGS_CORE_PROFILES_H
#define KGS_CORE_PROFILES_H

#include <stdbool.h>
#include <stddef.h>

#include "core/trigger_config.h"

typedef struct {
    const char *name, *metric_name;
    metric_type_t metric_type; /* meaningful only when engine_metric is NULL */
    double target, activation;
    /* documentation only: what the Go system recommended for the HPA */
    unsigned cooldown_s, scale_up_stabilize_s, scale_down_stabilize_s;
    /* non-NULL for inference-engine profiles (vLLM/Triton): the Go metric
     * type name, which is also our demand metric type (demand_type_name) */
    const char *engine_metric;
} profile_t;

/* The profile with exactly this name (case-sensitive); NULL if unknown. */
const profile_t *profile_find(const char *name, size_t len);

size_t profile_count(void);

/* i < profile_count(); NULL otherwise. */
const profile_t *profile_at(size_t i);

#endif
