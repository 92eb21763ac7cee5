/* backend_kind.c - --gpu-backend's names. */
#include "gpu/backend_kind.h"

#include <string.h>

#include "core/err.h"

static const char *const kind_names[] = {
    [GPU_BACKEND_AUTO] = "auto",
    [GPU_BACKEND_NVML] = "nvml",
    [GPU_BACKEND_AMDGPU_SYSFS] = "amdgpu-sysfs",
    [GPU_BACKEND_AMDSMI] = "amdsmi",
    [GPU_BACKEND_NVML_AMDSMI] = "nvml+amdsmi",
    [GPU_BACKEND_NVML_AMDGPU_SYSFS] = "nvml+amdgpu-sysfs",
};
#define KIND_COUNT (sizeof kind_names / sizeof kind_names[0])

const char *gpu_backend_kind_name(gpu_backend_kind_t k) {
    return (unsigned)k < KIND_COUNT ? kind_names[k] : "?";
}

int gpu_backend_kind_parse(const char *text, gpu_backend_kind_t *out, char *err, size_t errlen) {
    for (size_t i = 0; text && i < KIND_COUNT; i++)
        if (strcmp(text, kind_names[i]) == 0) {
            *out = (gpu_backend_kind_t)i;
            return 0;
        }
    return kgs_seterr(err, errlen, KGS_EINVAL,
                      "invalid GPU backend \"%s\": expected auto, nvml, amdsmi, amdgpu-sysfs, "
                      "nvml+amdsmi or nvml+amdgpu-sysfs",
                      text ? text : "");
}
