/* select.c - --gpu-backend: open NVML or the amdgpu sysfs reader. */
#include "gpu/select.h"

#include <stdio.h>
#include <string.h>

#include "amdgpu/amdgpu_sysfs.h"
#include "core/err.h"
#include "nvml/collector.h"

static int open_nvml(const gpu_select_opts_t *o, gpu_selection_t *out, char *err, size_t errlen) {
    int rc = nvml_loader_open(o->nvml_library, &out->loader, err, errlen);
    if (rc != 0)
        return rc;
    nvml_collector_t *c;
    if (nvml_collector_new(nvml_loader_api(out->loader), o->log, o->node_name, &c) != 0) {
        nvml_loader_free(out->loader);
        out->loader = NULL;
        return kgs_seterr(err, errlen, KGS_ENOMEM, "open NVML backend: out of memory");
    }
    out->backend = nvml_collector_backend(c);
    return 0;
}

static int open_amdgpu(const gpu_select_opts_t *o, gpu_selection_t *out, char *err, size_t errlen) {
    amdgpu_sysfs_opts_t ao = {.sys_root = o->sys_root, .proc_root = o->proc_root};
    amdgpu_sysfs_t *r;
    int rc = amdgpu_sysfs_new(&ao, o->log, o->node_name, &r);
    if (rc != 0)
        return kgs_seterr(err, errlen, rc, "open amdgpu sysfs backend: %s",
                          rc == KGS_EINVAL ? "--sys-root or --proc-root too long"
                                           : "out of memory");
    out->backend = amdgpu_sysfs_backend(r);
    return 0;
}

int gpu_backend_select(const gpu_select_opts_t *o, gpu_selection_t *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    const char *sys = o->sys_root ? o->sys_root : "/sys";
    const char *lib = o->nvml_library ? o->nvml_library : NVML_DEFAULT_LIBRARY;
    char nvml_err[256] = "";
    int rc;

    /* A library named with --nvml-library is a request for NVML. */
    gpu_backend_kind_t kind =
        o->kind == GPU_BACKEND_AUTO && o->nvml_library ? GPU_BACKEND_NVML : o->kind;
    switch (kind) {
    case GPU_BACKEND_NVML:
        if ((rc = open_nvml(o, out, err, errlen)) != 0)
            return rc;
        snprintf(out->why, sizeof out->why, "nvml: %s loaded (--gpu-backend %s)", lib,
                 gpu_backend_kind_name(o->kind));
        return 0;
    case GPU_BACKEND_AMDGPU_SYSFS:
        if ((rc = open_amdgpu(o, out, err, errlen)) != 0)
            return rc;
        snprintf(out->why, sizeof out->why,
                 "amdgpu-sysfs: reading %.200s/class/drm (--gpu-backend amdgpu-sysfs)", sys);
        return 0;
    case GPU_BACKEND_AUTO:
        break;
    }

    rc = open_nvml(o, out, nvml_err, sizeof nvml_err);
    if (rc == 0) {
        snprintf(out->why, sizeof out->why, "nvml: %s loaded (--gpu-backend auto)", lib);
        return 0;
    }
    if (rc == KGS_ENOMEM)
        return kgs_seterr(err, errlen, rc, "%s", nvml_err);
    /* Room for amd-smi here, before the sysfs reader. */
    unsigned cards = amdgpu_sysfs_count_cards(sys);
    if (cards == 0)
        return kgs_seterr(err, errlen, KGS_ENOTFOUND,
                          "no GPU backend: NVML: %s; amdgpu sysfs: no amdgpu card under "
                          "%.200s/class/drm",
                          nvml_err, sys);
    if ((rc = open_amdgpu(o, out, err, errlen)) != 0)
        return rc;
    snprintf(out->why, sizeof out->why,
             "amdgpu-sysfs: %u amdgpu card%s under %.200s/class/drm and NVML did not load "
             "(%.200s) (--gpu-backend auto)",
             cards, cards == 1 ? "" : "s", sys, nvml_err);
    return 0;
}

void gpu_selection_deinit(gpu_selection_t *s) {
    if (!s)
        return;
    gpu_backend_deinit(&s->backend);
    nvml_loader_free(s->loader);
    s->loader = NULL;
}
