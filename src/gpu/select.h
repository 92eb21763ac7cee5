/*
 * select.h - which GPU backend a node gets (--gpu-backend): NVML, amd-smi,
 * the amdgpu sysfs reader, or the first of them that works ("auto").
 *
 * "auto" tries NVML first (it loads only where the NVIDIA driver is), then
 * amd-smi if its library loads and lists at least one GPU (ROCm is
 * installed), then the amdgpu sysfs reader if any amdgpu card is under
 * <sys>/class/drm; a library named in nvml_library makes "auto" mean NVML.
 * The choice and the reason come back as one sentence for the caller to
 * log once.
 */
#ifndef KGS_GPU_SELECT_H
#define KGS_GPU_SELECT_H

#include <stddef.h>

#include "core/log.h"
#include "gpu/backend.h"
#include "gpu/backend_kind.h"
#include "amdsmi/amdsmi_loader.h"
#include "nvml/loader.h"

typedef struct {
    gpu_backend_kind_t kind;
    const char *nvml_library;   /* NULL = libnvidia-ml.so.1 */
    const char *amdsmi_library; /* NULL = AMDSMI_LIBRARY_NAMES in order */
    const char *sys_root;       /* NULL = /sys */
    const char *proc_root;      /* NULL = /proc (per-process use from fdinfo) */
    const char *node_name;      /* copied into every snapshot */
    const logger_t *log;        /* borrowed; may be NULL */
} gpu_select_opts_t;

typedef struct {
    gpu_backend_t backend; /* owned: hand it to sampler_start, or gpu_selection_deinit frees it */
    nvml_loader_t *loader; /* NVML's library when that was chosen, else NULL; owned */
    amdsmi_loader_t *amdsmi_loader; /* amd-smi's when that was chosen, else NULL; owned */
    char why[512]; /* "nvml: ..." / "amdsmi: ..." / "amdgpu-sysfs: ...", for the log */
} gpu_selection_t;

/*
 * Opens the backend `o->kind` asks for. Returns 0 and *out, or:
 *   KGS_ENOTFOUND  no backend could be opened (message says what each said);
 *   KGS_ENVML      NVML or amd-smi was asked for and its library lacks a
 *                  required symbol;
 *   KGS_ENOMEM.
 * On failure *out holds nothing to free.
 */
int gpu_backend_select(const gpu_select_opts_t *o, gpu_selection_t *out, char *err, size_t errlen);

/* Frees the backend (if still held) and then NVML's or amd-smi's library. */
void gpu_selection_deinit(gpu_selection_t *s);

#endif
