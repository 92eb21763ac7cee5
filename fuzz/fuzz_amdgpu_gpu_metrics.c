/*
 * fuzz_amdgpu_gpu_metrics.c - the binary gpu_metrics table of an amdgpu
 * card (device/gpu_metrics), whose layout the header's revision chooses.
 *
 * Invariants: the parser reads only the bytes given (ASan checks it, the
 * input is copied to a buffer of exactly its size); it accepts only format
 * 1, content 1 to 6; activities it keeps are at most 100 %; the energy
 * counter is only read from v1_4 on; the same bytes give the same record.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "amdgpu/amdgpu_parse.h"
#include "core/err.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    unsigned char *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    amdgpu_gpu_metrics_t a, b;
    int rc = amdgpu_gpu_metrics_parse(copy, size, &a);
    FUZZ_CHECK(rc == 0 || rc == KGS_EINVAL || rc == KGS_ENOTFOUND);
    FUZZ_CHECK(amdgpu_gpu_metrics_parse(copy, size, &b) == rc);
    FUZZ_CHECK(memcmp(&a, &b, sizeof a) == 0);
    if (rc == 0) {
        FUZZ_CHECK(a.format_revision == 1);
        FUZZ_CHECK(a.content_revision >= 1 && a.content_revision <= 6);
        FUZZ_CHECK(!a.has_gfx_activity || a.gfx_activity_pct <= 100);
        FUZZ_CHECK(!a.has_umc_activity || a.umc_activity_pct <= 100);
        FUZZ_CHECK(!a.has_energy || a.content_revision >= 4);
        FUZZ_CHECK(!a.has_socket_power || a.socket_power_w < 0xffff);
    } else {
        FUZZ_CHECK(!a.has_gfx_activity && !a.has_energy && !a.has_socket_power);
    }
    free(copy);
    return 0;
}
