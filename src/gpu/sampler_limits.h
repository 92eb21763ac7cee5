/*
 * sampler_limits.h - the sampler's interval bounds, apart from sampler.h
 * so that code which only checks or defaults the flag (server/options.c)
 * needs neither the sampler's thread nor NVML's types.
 */
#ifndef KGS_GPU_SAMPLER_LIMITS_H
#define KGS_GPU_SAMPLER_LIMITS_H

#include "core/clock.h"

#define SAMPLER_MIN_INTERVAL_NS (100 * NS_PER_MS)
#define SAMPLER_DEFAULT_INTERVAL_NS (1 * NS_PER_SEC)

#endif
