/*
 * fuzz_amd_scenario.c - the amd-smi stand-in's scenario parser
 * (sim/amdsmi/amd_scenario.c) on arbitrary bytes.
 *
 * On success the scenario must respect every limit the stand-in's fixed
 * handle arrays and string buffers rely on, and resolving it at a few times
 * must stay in range; a failure names a path and holds nothing.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "amd_scenario.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Unlike assert(), also active in Release builds. */
#define CHECK(x)                                                                                   \
    do {                                                                                           \
        if (!(x))                                                                                  \
            abort();                                                                               \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    amd_scenario_t *sc = NULL;
    char err[512];
    int rc = amd_scenario_parse((const char *)data, size, &sc, err, sizeof err);
    if (rc != 0) {
        CHECK(sc == NULL);
        CHECK(memchr(err, '\0', sizeof err) != NULL && err[0] != '\0');
        return 0;
    }
    CHECK(sc->gpu_count <= AMD_SCENARIO_MAX_GPUS);
    CHECK(memchr(sc->driver_version, '\0', sizeof sc->driver_version));
    static const double times[] = {0, 0.5, 7, 3600};
    for (size_t i = 0; i < sc->gpu_count; i++) {
        const amd_scenario_gpu_t *g = &sc->gpus[i];
        CHECK(g->partitions >= 1 && g->partitions <= AMD_SCENARIO_MAX_PARTITIONS);
        CHECK(memchr(g->uuid, '\0', sizeof g->uuid));
        CHECK(memchr(g->compute_partition, '\0', sizeof g->compute_partition));
        CHECK(g->step_count <= AMD_SCENARIO_MAX_STEPS);
        CHECK(g->process_count <= AMD_SCENARIO_MAX_PROCESSES);
        for (size_t p = 0; p < g->process_count; p++)
            CHECK(g->processes[p].partition < g->partitions);
        for (size_t s = 1; s < g->step_count; s++)
            CHECK(g->steps[s].at_s >= g->steps[s - 1].at_s);
        for (size_t t = 0; t < sizeof times / sizeof times[0]; t++)
            (void)amd_scenario_gpu_status_at(g, times[t]);
        for (unsigned p = 0; p < g->partitions; p++) {
            amd_scenario_values_t v;
            amd_scenario_partition_values(g, p, &v);
            CHECK((v.present >> AMD_V_COUNT) == 0);
        }
    }
    amd_scenario_free(sc);
    return 0;
}
