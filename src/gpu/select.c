/* select.c - --gpu-backend: open NVML, amd-smi or the amdgpu sysfs reader. */
#include "gpu/select.h"

#include <stdio.h>
#include <string.h>

#include "amdgpu/amdgpu_sysfs.h"
#include "amdsmi/amdsmi_backend.h"
#include "core/err.h"
#include "gpu/mixed.h"
#include "nvml/collector.h"

#define AMDSMI_NAME_OF(o) ((o)->amdsmi_library ? (o)->amdsmi_library : "libamd_smi.so")

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

/*
 * Loads amd-smi and makes its backend. With `probe` (auto) amd-smi must
 * also initialise and list at least one GPU, else the library is released
 * and KGS_ENOTFOUND says why; *ngpus is the count it found.
 */
static int open_amdsmi(const gpu_select_opts_t *o, bool probe, gpu_selection_t *out, int *ngpus,
                       char *err, size_t errlen) {
    int rc = amdsmi_loader_open(o->amdsmi_library, &out->amdsmi_loader, err, errlen);
    if (rc != 0)
        return rc;
    amdsmi_backend_t *b;
    if (amdsmi_backend_new(amdsmi_loader_api(out->amdsmi_loader), o->log, o->node_name, &b) != 0) {
        amdsmi_loader_free(out->amdsmi_loader);
        out->amdsmi_loader = NULL;
        return kgs_seterr(err, errlen, KGS_ENOMEM, "open amd-smi backend: out of memory");
    }
    *ngpus = 0;
    if (probe) {
        char why[256];
        int n = amdsmi_backend_probe(b, why, sizeof why);
        if (n <= 0) {
            amdsmi_backend_free(b);
            amdsmi_loader_free(out->amdsmi_loader);
            out->amdsmi_loader = NULL;
            return kgs_seterr(err, errlen, KGS_ENOTFOUND, "amd-smi %s loaded but %s",
                              AMDSMI_NAME_OF(o), n < 0 ? why : "lists no AMD GPU");
        }
        *ngpus = n;
    }
    out->backend = amdsmi_backend_as_gpu_backend(b);
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

/*
 * NVML, then an AMD backend (amd-smi when `amdsmi`, else the sysfs reader),
 * into one mixed backend: a node with GPUs of both vendors. On failure
 * nothing is left to free.
 */
static int open_mixed(const gpu_select_opts_t *o, bool amdsmi, bool probe, gpu_selection_t *out,
                      char *err, size_t errlen) {
    int rc = open_nvml(o, out, err, errlen), ngpus = 0;
    if (rc != 0)
        return rc;
    gpu_backend_t nvidia = out->backend;
    out->backend = (gpu_backend_t){0};
    rc =
        amdsmi ? open_amdsmi(o, probe, out, &ngpus, err, errlen) : open_amdgpu(o, out, err, errlen);
    if (rc == 0) {
        gpu_backend_t amd = out->backend;
        rc = gpu_mixed_backend(&nvidia, &amd, &out->backend);
    } else
        gpu_backend_deinit(&nvidia);
    if (rc != 0) {
        nvml_loader_free(out->loader);
        out->loader = NULL;
        amdsmi_loader_free(out->amdsmi_loader);
        out->amdsmi_loader = NULL;
        if (rc == KGS_ENOMEM)
            kgs_seterr(err, errlen, rc, "open the mixed NVIDIA + AMD backend: out of memory");
    }
    return rc;
}

#undef AMDSMI_NAME_OF

int gpu_backend_select(const gpu_select_opts_t *o, gpu_selection_t *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    const char *sys = o->sys_root ? o->sys_root : "/sys";
    const char *lib = o->nvml_library ? o->nvml_library : NVML_DEFAULT_LIBRARY;
    char nvml_err[256] = "", amdsmi_err[256] = "";
    int rc, ngpus = 0;

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
    case GPU_BACKEND_AMDSMI:
        if ((rc = open_amdsmi(o, false, out, &ngpus, err, errlen)) != 0)
            return rc;
        snprintf(out->why, sizeof out->why, "amdsmi: %.200s loaded (--gpu-backend amdsmi)",
                 amdsmi_loader_path(out->amdsmi_loader));
        return 0;
    case GPU_BACKEND_AMDGPU_SYSFS:
        if ((rc = open_amdgpu(o, out, err, errlen)) != 0)
            return rc;
        snprintf(out->why, sizeof out->why,
                 "amdgpu-sysfs: reading %.200s/class/drm (--gpu-backend amdgpu-sysfs)", sys);
        return 0;
    case GPU_BACKEND_NVML_AMDSMI:
    case GPU_BACKEND_NVML_AMDGPU_SYSFS:
        if ((rc = open_mixed(o, kind == GPU_BACKEND_NVML_AMDSMI, false, out, err, errlen)) != 0)
            return rc;
        snprintf(out->why, sizeof out->why, "mixed: nvml (%.120s) and %s (--gpu-backend %s)", lib,
                 kind == GPU_BACKEND_NVML_AMDSMI ? "amdsmi" : "amdgpu-sysfs",
                 gpu_backend_kind_name(o->kind));
        return 0;
    case GPU_BACKEND_AUTO:
        break;
    }

    rc = open_nvml(o, out, nvml_err, sizeof nvml_err);
    if (rc == 0) {
        /* NVML loads: is there an AMD GPU beside the NVIDIA ones? */
        gpu_selection_t amd;
        memset(&amd, 0, sizeof amd);
        int namd = 0;
        char amd_err[256];
        const char *amd_name = NULL;
        if (open_amdsmi(o, true, &amd, &namd, amd_err, sizeof amd_err) == 0)
            amd_name = "amdsmi";
        else if (amdgpu_sysfs_count_cards(sys) > 0 &&
                 open_amdgpu(o, &amd, amd_err, sizeof amd_err) == 0)
            amd_name = "amdgpu-sysfs";
        if (amd_name) {
            gpu_backend_t nvidia = out->backend;
            out->backend = (gpu_backend_t){0};
            if (gpu_mixed_backend(&nvidia, &amd.backend, &out->backend) != 0) {
                gpu_selection_deinit(&amd);
                gpu_selection_deinit(out);
                return kgs_seterr(err, errlen, KGS_ENOMEM,
                                  "open the mixed NVIDIA + AMD backend: out of memory");
            }
            out->amdsmi_loader = amd.amdsmi_loader;
            snprintf(out->why, sizeof out->why,
                     "mixed: nvml (%.120s) and %s: this node has AMD GPUs beside NVIDIA's "
                     "(--gpu-backend auto; --gpu-backend nvml reads the NVIDIA ones alone)",
                     lib, amd_name);
            return 0;
        }
        snprintf(out->why, sizeof out->why, "nvml: %s loaded (--gpu-backend auto)", lib);
        return 0;
    }
    if (rc == KGS_ENOMEM)
        return kgs_seterr(err, errlen, rc, "%s", nvml_err);
    /* amd-smi before the sysfs reader: where ROCm is installed it tells
     * more (partitions, per-process VRAM without walking /proc). */
    rc = open_amdsmi(o, true, out, &ngpus, amdsmi_err, sizeof amdsmi_err);
    if (rc == 0) {
        snprintf(out->why, sizeof out->why,
                 "amdsmi: %.200s lists %d AMD GPU%s and NVML did not load (%.200s) "
                 "(--gpu-backend auto)",
                 amdsmi_loader_path(out->amdsmi_loader), ngpus, ngpus == 1 ? "" : "s", nvml_err);
        return 0;
    }
    if (rc == KGS_ENOMEM)
        return kgs_seterr(err, errlen, rc, "%s", amdsmi_err);
    unsigned cards = amdgpu_sysfs_count_cards(sys);
    if (cards == 0)
        return kgs_seterr(err, errlen, KGS_ENOTFOUND,
                          "no GPU backend: NVML: %s; amd-smi: %s; amdgpu sysfs: no amdgpu card "
                          "under %.200s/class/drm",
                          nvml_err, amdsmi_err, sys);
    if ((rc = open_amdgpu(o, out, err, errlen)) != 0)
        return rc;
    snprintf(out->why, sizeof out->why,
             "amdgpu-sysfs: %u amdgpu card%s under %.80s/class/drm and NVML did not load "
             "(%.140s), nor amd-smi (%.140s) (--gpu-backend auto)",
             cards, cards == 1 ? "" : "s", sys, nvml_err, amdsmi_err);
    return 0;
}

void gpu_selection_deinit(gpu_selection_t *s) {
    if (!s)
        return;
    gpu_backend_deinit(&s->backend);
    nvml_loader_free(s->loader);
    s->loader = NULL;
    amdsmi_loader_free(s->amdsmi_loader);
    s->amdsmi_loader = NULL;
}
