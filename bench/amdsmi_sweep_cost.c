/*
 * amdsmi_sweep_cost - what one amd-smi sweep costs, per sweep and per GPU:
 * the real loader and backend over a library (the stand-in
 * libamdsmi-sim.so, or a real libamd_smi.so on an AMD node), N sweeps back
 * to back. Usage:
 *   AMDSMI_SIM_SCENARIO=sim/amdsmi/scenarios/amd-mi300x-8.json \
 *     amdsmi_sweep_cost LIBRARY SWEEPS
 * On the stand-in the calls cost almost nothing, so the figure is the
 * backend's own work (17 bound calls a device, the process lists, the
 * snapshot), not what a real SMU answers in.
 */
#include <stdio.h>
#include <stdlib.h>

#include "amdsmi/amdsmi_backend.h"
#include "core/clock.h"

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: amdsmi_sweep_cost LIBRARY SWEEPS\n");
        return 2;
    }
    long sweeps = strtol(argv[2], NULL, 10);
    if (sweeps < 1) {
        fprintf(stderr, "amdsmi_sweep_cost: SWEEPS must be >= 1, not \"%s\"\n", argv[2]);
        return 2;
    }
    char err[512];
    amdsmi_loader_t *l;
    if (amdsmi_loader_open(argv[1], &l, err, sizeof err) != 0) {
        fprintf(stderr, "amdsmi_sweep_cost: %s\n", err);
        return 1;
    }
    amdsmi_backend_t *b;
    if (amdsmi_backend_new(amdsmi_loader_api(l), NULL, "bench", &b) != 0)
        return 1;
    snapshot_t *s = NULL;
    if (amdsmi_backend_sample(b, clock_mono_now(), &s) != 0 || s->status != SNAPSHOT_OK) {
        fprintf(stderr, "amdsmi_sweep_cost: %s\n", s ? s->error : "out of memory");
        return 1;
    }
    unsigned gpus = s->gpu_count;
    snapshot_unref(s);
    mono_ns_t t0 = clock_mono_now();
    for (long i = 0; i < sweeps; i++) {
        if (amdsmi_backend_sample(b, clock_mono_now(), &s) != 0)
            return 1;
        snapshot_unref(s);
    }
    mono_ns_t dt = clock_mono_now() - t0;
    printf("gpus=%u sweeps=%ld ns_per_sweep=%.0f ns_per_gpu=%.0f\n", gpus, sweeps,
           (double)dt / (double)sweeps, (double)dt / (double)sweeps / (gpus ? gpus : 1));
    amdsmi_backend_free(b);
    amdsmi_loader_free(l);
    return 0;
}
