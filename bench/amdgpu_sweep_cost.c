/*
 * amdgpu_sweep_cost - what one amdgpu sysfs sweep costs, per sweep and per
 * GPU: the real reader over a sysfs tree and a proc tree, N sweeps back to
 * back. Usage:
 *   amdgpu_sweep_cost SYS_ROOT PROC_ROOT SWEEPS
 * bench/amdgpu-tree makes an 8-GPU sysfs tree from the fixture's MI300X;
 * PROC_ROOT /proc walks this machine's real processes (one readlink per
 * open descriptor), which is the part that grows with the node.
 */
#include <stdio.h>
#include <stdlib.h>

#include "amdgpu/amdgpu_sysfs.h"
#include "core/clock.h"

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: amdgpu_sweep_cost SYS_ROOT PROC_ROOT SWEEPS\n");
        return 2;
    }
    long sweeps = strtol(argv[3], NULL, 10);
    if (sweeps < 1) {
        fprintf(stderr, "amdgpu_sweep_cost: SWEEPS must be >= 1\n");
        return 2;
    }
    amdgpu_sysfs_opts_t o = {.sys_root = argv[1], .proc_root = argv[2]};
    amdgpu_sysfs_t *r;
    if (amdgpu_sysfs_new(&o, NULL, "bench", &r) != 0)
        return 1;
    snapshot_t *s = NULL;
    if (amdgpu_sysfs_sample(r, clock_mono_now(), &s) != 0 || s->status != SNAPSHOT_OK) {
        fprintf(stderr, "amdgpu_sweep_cost: %s\n", s ? s->error : "out of memory");
        return 1;
    }
    unsigned gpus = s->gpu_count;
    snapshot_unref(s);
    mono_ns_t t0 = clock_mono_now();
    for (long i = 0; i < sweeps; i++) {
        if (amdgpu_sysfs_sample(r, clock_mono_now(), &s) != 0)
            return 1;
        snapshot_unref(s);
    }
    mono_ns_t dt = clock_mono_now() - t0;
    printf("gpus=%u sweeps=%ld ns_per_sweep=%.0f ns_per_gpu=%.0f\n", gpus, sweeps,
           (double)dt / (double)sweeps, (double)dt / (double)sweeps / (gpus ? gpus : 1));
    amdgpu_sysfs_free(r);
    return 0;
}
