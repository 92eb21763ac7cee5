/*
 * sampling.c - this node's GPUs, for the standalone and agent roles: the
 * GPU backend chosen by --gpu-backend, the sampler thread that sweeps it on
 * --sample-interval, and the snapshot it published last.
 *
 * DESIGN
 * The sampler thread owns the backend (NVML or the amdgpu sysfs reader);
 * it meets the loop only at the snapshot publish and the loop's eventfd
 * (on_sample_published), so no RPC ever waits on a GPU call. The
 * aggregator role reads no GPU: its data comes from the agents.
 */
#include <stdio.h>

#include "gpu/select.h"
#include "kube/proc_cgroup.h"
#include "server/server.h"

snapshot_t *server_current_snapshot(void *ud) {
    server_t *sv = ud;
    return sv->sampler ? sampler_current(sv->sampler) : NULL;
}

static void on_sample_published(void *ud) {
    server_t *sv = ud;
    loop_wakeup(sv->loop); /* the sampler thread: only this is allowed */
}

/* The sampler thread, before a snapshot is published: which pod each GPU
 * process belongs to (agent with --proc-root). sv->o is read-only by now. */
static void on_sample_taken(snapshot_t *snap, void *ud) {
    server_t *sv = ud;
    if (sv->o.proc_root && snap->proc_total)
        proc_cgroup_annotate(snap, sv->o.proc_root);
}

int server_sampling_start(server_t *sv) {
    char err[1024];
    gpu_select_opts_t go = {.kind = sv->o.gpu_backend,
                            .nvml_library = sv->o.nvml_library,
                            .sys_root = sv->o.sys_root,
                            .proc_root = sv->o.proc_root,
                            .node_name = sv->node,
                            .log = &sv->log};
    gpu_selection_t gpu;
    if (gpu_backend_select(&go, &gpu, err, sizeof err) != 0) {
        LOG_ERROR(&sv->log, "%s", err);
        if (sv->o.gpu_backend != GPU_BACKEND_AMDGPU_SYSFS)
            LOG_ERROR(&sv->log,
                      "hint: run on a GPU node with the NVIDIA driver (in Kubernetes: the "
                      "NVIDIA container runtime, NVIDIA_DRIVER_CAPABILITIES=utility), or "
                      "name the library with --nvml-library PATH; on AMD GPUs: "
                      "--gpu-backend amdgpu-sysfs (docs/amd.md)");
        return 1;
    }
    sv->loader = gpu.loader;
    sv->gpu_backend = gpu_backend_name(&gpu.backend);
    LOG_INFO(&sv->log, "GPU backend %s", gpu.why);
    char missing[2048];
    if (sv->loader && nvml_loader_missing(sv->loader, missing, sizeof missing) > 0)
        LOG_INFO(&sv->log, "NVML %s lacks %s; those fields are reported absent",
                 nvml_loader_path(sv->loader), missing);

    sampler_opts_t so = {.interval_ns = sv->o.sample_interval_ns,
                         .on_publish = on_sample_published,
                         .before_publish = on_sample_taken,
                         .user_data = sv,
                         .log = &sv->log};
    if (sampler_start(gpu.backend, &so, &sv->sampler, err, sizeof err) != 0) {
        LOG_ERROR(&sv->log, "%s", err);
        return 1;
    }
    return 0;
}
