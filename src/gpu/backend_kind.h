/*
 * backend_kind.h - the names --gpu-backend accepts, apart from the backends
 * themselves so that flag parsers need no driver code.
 */
#ifndef KGS_GPU_BACKEND_KIND_H
#define KGS_GPU_BACKEND_KIND_H

#include <stddef.h>

typedef enum {
    GPU_BACKEND_AUTO = 0,          /* NVML if it loads, else amd-smi if it finds GPUs, else sysfs */
    GPU_BACKEND_NVML,              /* libnvidia-ml.so.1 (or --nvml-library) */
    GPU_BACKEND_AMDGPU_SYSFS,      /* /sys/class/drm and /proc/PID/fdinfo */
    GPU_BACKEND_AMDSMI,            /* libamd_smi.so (ROCm's amd-smi library) */
    GPU_BACKEND_NVML_AMDSMI,       /* both vendors on one node: NVML and amd-smi */
    GPU_BACKEND_NVML_AMDGPU_SYSFS, /* both vendors: NVML and the amdgpu sysfs reader */
} gpu_backend_kind_t;

/* "auto", "nvml", "amdgpu-sysfs", "amdsmi". */
const char *gpu_backend_kind_name(gpu_backend_kind_t k);

/* Parses one of the names above. Returns 0, or KGS_EINVAL with a message
 * listing the valid names. */
int gpu_backend_kind_parse(const char *text, gpu_backend_kind_t *out, char *err, size_t errlen);

#endif
