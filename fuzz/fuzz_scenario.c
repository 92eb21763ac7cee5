/*
 * fuzz_scenario.c - the nvml-sim scenario parser on arbitrary bytes.
 *
 * On success the parsed scenario must respect every limit the stand-in
 * relies on for its fixed handle storage and string buffers, and resolving
 * it at a few times must stay in range; everything is freed either way.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "scenario.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Unlike CHECK(), also active in Release builds. */
#define CHECK(x)                                                                                   \
    do {                                                                                           \
        if (!(x))                                                                                  \
            abort();                                                                               \
    } while (0)

static void check_values(const scenario_values_t *v) {
    for (int k = 0; k < SCENARIO_VALUE_COUNT; k++) {
        if (v->present & (1u << k))
            CHECK(v->v[k] >= 0 && isfinite(v->v[k]));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    scenario_t *sc = NULL;
    char err[512];
    int rc = scenario_parse((const char *)data, size, &sc, err, sizeof err);
    if (rc != 0) {
        CHECK(sc == NULL);
        CHECK(memchr(err, '\0', sizeof err) != NULL && err[0] != '\0');
        return 0;
    }
    CHECK(sc->device_count <= SCENARIO_MAX_DEVICES);
    CHECK(sc->repeat_after_s >= 0);
    CHECK(memchr(sc->driver_version, '\0', sizeof sc->driver_version));
    static const double times[] = {0, 0.5, 7, 3600};
    for (size_t i = 0; i < sc->device_count; i++) {
        const scenario_device_t *d = &sc->devices[i];
        CHECK(strncmp(d->uuid, "GPU-", 4) == 0);
        CHECK(memchr(d->name, '\0', sizeof d->name));
        CHECK(d->mig_count <= SCENARIO_MAX_MIG_INSTANCES);
        CHECK(d->mig_enabled || d->mig_count == 0);
        CHECK(d->nvlink_links <= 36);
        for (size_t s = 1; s < d->timeline_len; s++)
            CHECK(d->timeline[s].at_s >= d->timeline[s - 1].at_s);
        for (size_t t = 0; t < sizeof times / sizeof times[0]; t++) {
            scenario_values_t v;
            scenario_device_values_at(sc, d, times[t], &v);
            check_values(&v);
            for (int c = 0; c < SCENARIO_CALL_COUNT; c++) {
                int e = scenario_device_error_at(sc, d, c, times[t]);
                CHECK(strcmp(scenario_error_name(e), "?") != 0);
            }
            double integral = scenario_device_integral(sc, d, SCENARIO_V_POWER_MW, times[t]);
            CHECK(integral >= 0 && !isnan(integral));
        }
        for (size_t m = 0; m < d->mig_count; m++) {
            const scenario_mig_t *mig = &d->mig[m];
            CHECK(strncmp(mig->uuid, "MIG-", 4) == 0);
            CHECK(mig->compute_instance_slices >= 1 &&
                  mig->compute_instance_slices <= mig->gpu_instance_slices);
            scenario_values_t v;
            scenario_mig_values_at(sc, mig, 1.0, &v);
            check_values(&v);
        }
    }
    scenario_free(sc);
    return 0;
}
