/*
 * fuzz_validate.c - validate_text() on arbitrary bytes: YAML streams read by
 * libyaml and walked for ScaledObject / ScaledJob triggers (outside input:
 * users run `keda-gpu-scaler validate` on any file).
 *
 * Checked: success or KGS_EINVAL with a message; counts consistent
 * (triggers and problems only inside objects, objects only inside
 * documents, warnings only where triggers of ours are); the same bytes give
 * the same counts again; every reported line names the file.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/err.h"
#include "server/validate.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run(const uint8_t *data, size_t size, bool all, validate_counts_t *c, char *out,
               size_t outlen) {
    FILE *f = fmemopen(out, outlen, "w");
    FUZZ_CHECK(f != NULL);
    validate_opts_t o = {.role = size % 2 ? VALIDATE_ROLE_STANDALONE : VALIDATE_ROLE_AGGREGATOR,
                         .all = all};
    char err[1024] = "";
    memset(c, 0, sizeof *c);
    int rc = validate_text("in.yaml", (const char *)data, size, &o, f, c, err, sizeof err);
    fclose(f);
    if (rc != 0) {
        FUZZ_CHECK(rc == KGS_EINVAL || rc == KGS_ENOMEM);
        FUZZ_CHECK(err[0] != '\0');
    }
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char out1[65536], out2[65536];
    validate_counts_t a, b;
    int r1 = run(data, size, false, &a, out1, sizeof out1);
    FUZZ_CHECK(a.objects <= a.documents || a.documents == 0);
    FUZZ_CHECK(a.problems == 0 || a.objects > 0);
    FUZZ_CHECK(a.warnings == 0 || a.triggers > 0); /* warnings are about our triggers */
    if (a.objects == 0)
        FUZZ_CHECK(a.triggers == 0 && a.skipped == 0);
    int r2 = run(data, size, false, &b, out2, sizeof out2);
    FUZZ_CHECK(r1 == r2 && memcmp(&a, &b, sizeof a) == 0);
    if (a.problems || a.warnings)
        FUZZ_CHECK(strncmp(out1, "in.yaml:", 8) == 0);
    /* --all checks at least what the default checks. */
    run(data, size, true, &b, out2, sizeof out2);
    FUZZ_CHECK(b.triggers == a.triggers + a.skipped && b.skipped == 0);
    return 0;
}
