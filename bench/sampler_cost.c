/*
 * sampler_cost - what one NVML sweep costs, per sweep and per GPU.
 *
 * Loads NVML (or the stand-in) through the real loader and runs the real
 * collector N times back to back. Usage:
 *   sampler_cost LIBRARY SWEEPS
 * Prints ns per sweep and per GPU. Under `valgrind --tool=callgrind` the
 * instruction count is the repeatable figure (bench/run-all does both).
 * With the stand-in the count includes the stand-in's own work (scenario
 * look-ups, a mutex per call), so it is an upper bound for our side.
 */
#include <stdio.h>
#include <stdlib.h>

#include "core/clock.h"
#include "nvml/collector.h"
#include "nvml/loader.h"

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: sampler_cost LIBRARY SWEEPS\n");
        return 2;
    }
    long sweeps = strtol(argv[2], NULL, 10);
    if (sweeps < 1) {
        fprintf(stderr, "sampler_cost: SWEEPS must be >= 1\n");
        return 2;
    }
    char err[512];
    nvml_loader_t *l;
    if (nvml_loader_open(argv[1], &l, err, sizeof err) != 0) {
        fprintf(stderr, "sampler_cost: %s\n", err);
        return 1;
    }
    nvml_collector_t *c;
    if (nvml_collector_new(nvml_loader_api(l), NULL, "bench", &c) != 0)
        return 1;
    snapshot_t *s = NULL;
    /* Warm-up sweep: NVML init, GPM support queries, first counters. */
    if (nvml_collector_sample(c, clock_mono_now(), &s) != 0 || s->status != SNAPSHOT_OK) {
        fprintf(stderr, "sampler_cost: NVML unavailable: %s\n", s ? s->error : "out of memory");
        return 1;
    }
    unsigned gpus = s->gpu_count;
    snapshot_unref(s);
    mono_ns_t t0 = clock_mono_now();
    for (long i = 0; i < sweeps; i++) {
        if (nvml_collector_sample(c, clock_mono_now(), &s) != 0)
            return 1;
        snapshot_unref(s);
    }
    mono_ns_t dt = clock_mono_now() - t0;
    printf("gpus=%u sweeps=%ld ns_per_sweep=%.0f ns_per_gpu=%.0f\n", gpus, sweeps,
           (double)dt / (double)sweeps, (double)dt / (double)sweeps / (gpus ? gpus : 1));
    nvml_collector_free(c);
    nvml_loader_free(l);
    return 0;
}
