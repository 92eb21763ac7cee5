/*
 * fuzz_amdgpu_fdinfo.c - /proc/PID/fdinfo/FD text, as the amdgpu sysfs
 * reader reads it for every descriptor on /dev/dri of every process; the
 * same bytes also go through the sysfs value, uevent and PCI address
 * parsers, which read files of the same kind.
 *
 * Invariants: a parse that succeeds names a driver (a non-empty string with
 * no whitespace); a drm-pdev it keeps is in the canonical "dddd:bb:dd.f"
 * form and normalises to itself; the same bytes parse to the same record;
 * a canonical PCI address is lower-case hex with its separators in place.
 */
#include <stdint.h>
#include <string.h>

#include "amdgpu/amdgpu_parse.h"
#include "core/err.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_canonical_bdf(const char *s) {
    size_t n = strlen(s);
    FUZZ_CHECK(n >= 12 && n < AMDGPU_BDF_MAX);
    FUZZ_CHECK(s[n - 2] == '.' && s[n - 5] == ':' && s[n - 8] == ':');
    for (size_t i = 0; i < n; i++)
        if (i != n - 2 && i != n - 5 && i != n - 8)
            FUZZ_CHECK((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'));
    char again[AMDGPU_BDF_MAX];
    FUZZ_CHECK(amdgpu_bdf_normalise(s, n, again) == 0);
    FUZZ_CHECK(strcmp(s, again) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *text = (const char *)data;
    amdgpu_fdinfo_t a, b;
    int rc = amdgpu_fdinfo_parse(text, size, &a);
    FUZZ_CHECK(rc == 0 || rc == KGS_ENOTFOUND);
    FUZZ_CHECK(amdgpu_fdinfo_parse(text, size, &b) == rc);
    FUZZ_CHECK(memcmp(&a, &b, sizeof a) == 0);
    if (rc == 0) {
        size_t n = strlen(a.driver);
        FUZZ_CHECK(n > 0 && n < sizeof a.driver);
        for (size_t i = 0; i < n; i++)
            FUZZ_CHECK(a.driver[i] != ' ' && a.driver[i] != '\t' && a.driver[i] != '\n');
        if (a.has_pdev)
            check_canonical_bdf(a.pdev);
    }

    char bdf[AMDGPU_BDF_MAX];
    if (amdgpu_bdf_normalise(text, size, bdf) == 0)
        check_canonical_bdf(bdf);
    char slot[AMDGPU_BDF_MAX];
    bool amd = amdgpu_uevent_parse(text, size, slot);
    if (slot[0]) {
        FUZZ_CHECK(amd);
        check_canonical_bdf(slot);
    }
    uint64_t u;
    int64_t i;
    rc = amdgpu_parse_u64(text, size, &u);
    FUZZ_CHECK(rc == 0 || rc == KGS_EINVAL || rc == KGS_ERANGE);
    rc = amdgpu_parse_i64(text, size, &i);
    FUZZ_CHECK(rc == 0 || rc == KGS_EINVAL || rc == KGS_ERANGE);
    return 0;
}
