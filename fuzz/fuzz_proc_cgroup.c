/*
 * fuzz_proc_cgroup.c - /proc/<pid>/cgroup text, as the agent reads it for
 * every GPU process.
 *
 * Invariants: a parse either fails with a message or gives a canonical pod
 * UID (36 chars with '-' at 8/13/18/23 and lower-case hex elsewhere, or 32
 * lower-case hex) and a container id that is empty or lower-case hex; the
 * same bytes parse to the same record.
 */
#include <stdint.h>
#include <string.h>

#include "core/err.h"
#include "kube/proc_cgroup.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int lower_hex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    cgroup_pod_t a, b;
    char err[256] = "";
    int rc = cgroup_pod_parse((const char *)data, size, &a, err, sizeof err);
    if (rc != 0) {
        FUZZ_CHECK(rc == KGS_EINVAL || rc == KGS_ENOTFOUND);
        FUZZ_CHECK(err[0] != '\0');
        return 0;
    }
    size_t n = strlen(a.pod_uid);
    FUZZ_CHECK(n == 36 || n == 32);
    for (size_t i = 0; i < n; i++) {
        if (n == 36 && (i == 8 || i == 13 || i == 18 || i == 23))
            FUZZ_CHECK(a.pod_uid[i] == '-');
        else
            FUZZ_CHECK(lower_hex(a.pod_uid[i]));
    }
    for (const char *c = a.container_id; *c; c++)
        FUZZ_CHECK(lower_hex(*c));
    FUZZ_CHECK(cgroup_pod_parse((const char *)data, size, &b, NULL, 0) == 0);
    FUZZ_CHECK(memcmp(&a, &b, sizeof a) == 0);
    return 0;
}
