/*
 * profiles.c - the built-in trigger profiles.
 *
 * The first ten rows are pmady/keda-gpu-scaler's profiles (pkg/profiles/
 * profiles.go), with identical names and values, in the order that file
 * defines them, so existing ScaledObjects keep their meaning. Three of them
 * read inference-engine metrics (vLLM, Triton): engine_metric names the
 * demand metric type they select, and they need an endpoint (or a
 * podSelector) like any engine trigger.
 *
 * The last rows are new and use GPM (Hopper and later), which, unlike
 * nvmlDeviceGetUtilizationRates, also works per MIG instance. Their values
 * are explained in docs/configuration.md.
 *
 * Cooldown and stabilisation seconds are documentation only: an external
 * scaler cannot set HPA behaviour (the Go system never used them either).
 */
#include "core/profiles.h"

#include "core/metadata.h"

static const profile_t profiles[] = {
    {"distributed-training", "keda_gpu_distributed_training", METRIC_NVLINK_TX_MBPS, 50000, 5000,
     300, 60, 300, NULL},
    {"vllm-inference", "keda_gpu_vllm_inference", METRIC_MEMORY_USED_PERCENT, 80, 5, 60, 15, 120,
     NULL},
    {"vllm-queue-depth", "keda_gpu_vllm_queue_depth", METRIC_GPU_UTILIZATION, 5, 1, 30, 10, 60,
     "vllm_queue_depth"},
    {"triton-inference", "keda_gpu_triton_inference", METRIC_GPU_UTILIZATION, 75, 10, 30, 10, 90,
     NULL},
    {"triton-queue-wait", "keda_gpu_triton_queue_wait", METRIC_GPU_UTILIZATION, 50, 5, 30, 10, 60,
     "triton_queue_wait_ms"},
    {"triton-request-rate", "keda_gpu_triton_request_rate", METRIC_GPU_UTILIZATION, 50, 1, 30, 10,
     90, "triton_request_rate"},
    {"training", "keda_gpu_training", METRIC_GPU_UTILIZATION, 90, 0, 300, 60, 300, NULL},
    {"batch", "keda_gpu_batch", METRIC_MEMORY_USED_PERCENT, 70, 1, 30, 5, 60, NULL},
    {"ollama", "keda_gpu_ollama", METRIC_MEMORY_USED_PERCENT, 70, 3, 60, 10, 120, NULL},
    {"tgi-inference", "keda_gpu_tgi_inference", METRIC_MEMORY_USED_PERCENT, 75, 5, 45, 15, 90,
     NULL},
    /* new in this build (GPM) */
    {"sm-active", "keda_gpu_sm_active", METRIC_SM_ACTIVE, 70, 5, 60, 15, 300, NULL},
    {"mig-sm-active", "keda_gpu_mig_sm_active", METRIC_SM_ACTIVE, 70, 5, 60, 15, 300, NULL},
};

#define PROFILE_COUNT (sizeof profiles / sizeof profiles[0])

const profile_t *profile_find(const char *name, size_t len) {
    if (!name)
        return NULL;
    for (size_t i = 0; i < PROFILE_COUNT; i++)
        if (metadata_slice_eq(name, len, profiles[i].name))
            return &profiles[i];
    return NULL;
}

size_t profile_count(void) {
    return PROFILE_COUNT;
}

const profile_t *profile_at(size_t i) {
    return i < PROFILE_COUNT ? &profiles[i] : NULL;
}
