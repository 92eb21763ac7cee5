/* test_support.c - see test_support.h. */
#include "test_support.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

size_t ts_pairs(const char *const *kv, metadata_pair_t *pairs, size_t cap) {
    size_t n = 0;
    for (; kv[2 * n]; n++) {
        if (n == cap)
            fail_msg("test map has more than %zu pairs", cap);
        pairs[n].key = kv[2 * n];
        pairs[n].key_len = strlen(kv[2 * n]);
        pairs[n].value = kv[2 * n + 1];
        pairs[n].value_len = strlen(kv[2 * n + 1]);
    }
    return n;
}

ts_map_t ts_map(const char *const *kv) {
    ts_map_t m;
    m.n = ts_pairs(kv, m.p, TS_MAX_PAIRS);
    return m;
}

trigger_config_t ts_config(const char *const *kv) {
    ts_map_t m = ts_map(kv);
    trigger_config_t c;
    char err[512];
    if (trigger_config_parse(m.p, m.n, &c, err, sizeof err) != 0)
        fail_msg("config: %s", err);
    return c;
}

snapshot_t *ts_one_gpu_snapshot(const char *node, const char *uuid, uint64_t seq, mono_ns_t taken) {
    snapshot_t *s = snapshot_new(1, 0);
    assert_non_null(s);
    s->seq = seq;
    s->taken_mono = taken;
    snprintf(s->node_name, sizeof s->node_name, "%s", node);
    s->gpus[0].index = 0;
    snprintf(s->gpus[0].uuid, sizeof s->gpus[0].uuid, "%s", uuid);
    s->gpus[0].gpu_util_pct = (unsigned)seq;
    s->gpus[0].valid = 1u << GPU_F_GPU_UTIL;
    return s;
}

char *ts_engine_fixture(const char *name, size_t *len) {
    char path[4096];
    const char *src = getenv("KGS_SOURCE_DIR");
    if (!src)
        fail_msg("KGS_SOURCE_DIR is not set: it names the source tree the fixtures are in");
    snprintf(path, sizeof path, "%s/tests/fixtures/engines/%s", src, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open the fixture %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
        fail_msg("cannot read the fixture %s", path);
    fclose(f);
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}
