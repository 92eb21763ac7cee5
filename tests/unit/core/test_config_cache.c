/* test_config_cache.c - one parse per distinct metadata map, shared and
 * refcounted, with LRU eviction of unreferenced entries within an entry
 * and a byte bound; errors kept without their map. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/config_cache.h"
#include "core/err.h"
#include "support/test_support.h"

static const config_entry_t *get(config_cache_t *c, ts_map_t m) {
    const config_entry_t *e = config_cache_acquire(c, m.p, m.n);
    assert_non_null(e);
    return e;
}

static config_cache_t *new_cache(size_t cap) {
    config_cache_t *c = NULL;
    assert_int_equal(config_cache_new(cap, &c), 0);
    assert_non_null(c);
    return c;
}

static void test_config_cache_returns_the_same_entry_for_the_same_map(void **state) {
    (void)state;
    config_cache_t *c = new_cache(8);
    const config_entry_t *a = get(c, MAP("profile", "batch", "targetValue", "50"));
    const config_entry_t *b = get(c, MAP("profile", "batch", "targetValue", "50"));
    assert_ptr_equal(a, b);
    assert_int_equal(a->status, 0);
    assert_string_equal(a->error, "");
    assert_true(a->config->target_value == 50);
    assert_int_equal(config_cache_size(c), 1);
    config_cache_release(c, a);
    config_cache_release(c, b);
    assert_int_equal(config_cache_size(c), 1); /* kept for the next RPC */
    config_cache_free(c);
}

static void test_config_cache_ignores_pair_order(void **state) {
    (void)state;
    config_cache_t *c = new_cache(8);
    const config_entry_t *a =
        get(c, MAP("profile", "batch", "targetValue", "50", "scalerAddress", "x:6000"));
    const config_entry_t *b =
        get(c, MAP("scalerAddress", "x:6000", "targetValue", "50", "profile", "batch"));
    assert_ptr_equal(a, b);
    assert_int_equal(a->id, b->id);
    config_cache_release(c, a);
    config_cache_release(c, b);
    config_cache_free(c);
}

static void test_config_cache_gives_different_maps_different_ids(void **state) {
    (void)state;
    config_cache_t *c = new_cache(8);
    const config_entry_t *e[5];
    e[0] = get(c, MAP("targetValue", "50"));
    e[1] = get(c, MAP("targetValue", "51"));
    e[2] = get(c, MAP("targetValue", "50", "gpuIndex", "0"));
    e[3] = get(c, MAP(NULL));
    /* length-prefixed: "ab"="" is not "a"="b" */
    e[4] = get(c, MAP("a", "b"));
    const config_entry_t *f = get(c, MAP("ab", ""));
    assert_ptr_not_equal(e[4], f);
    for (int i = 0; i < 5; i++)
        for (int j = i + 1; j < 5; j++)
            assert_true(e[i]->id != e[j]->id);
    assert_int_equal(config_cache_size(c), 6);
    for (int i = 0; i < 5; i++)
        config_cache_release(c, e[i]);
    config_cache_release(c, f);
    config_cache_free(c);
}

static void test_config_cache_compares_slices_including_nul_bytes(void **state) {
    (void)state;
    config_cache_t *c = new_cache(8);
    const char v1[] = "GPU-a\0b", v2[] = "GPU-a\0c";
    metadata_pair_t p1 = {"gpuUUID", 7, v1, 7}, p2 = {"gpuUUID", 7, v2, 7};
    const config_entry_t *a = config_cache_acquire(c, &p1, 1);
    const config_entry_t *b = config_cache_acquire(c, &p2, 1);
    assert_non_null(a);
    assert_non_null(b);
    assert_ptr_not_equal(a, b);
    assert_int_equal(a->status, KGS_EINVAL); /* NUL is not a UUID character */
    config_cache_release(c, a);
    config_cache_release(c, b);
    config_cache_free(c);
}

static void test_config_cache_caches_errors_too(void **state) {
    (void)state;
    config_cache_t *c = new_cache(8);
    const config_entry_t *a = get(c, MAP("targetvalue", "80"));
    assert_int_equal(a->status, KGS_EINVAL);
    assert_non_null(strstr(a->error, "did you mean \"targetValue\"?"));
    const config_entry_t *b = get(c, MAP("targetvalue", "80"));
    assert_ptr_equal(a, b);
    assert_int_equal(config_cache_size(c), 1);
    config_cache_release(c, a);
    config_cache_release(c, b);
    config_cache_free(c);
}

static void test_config_cache_evicts_the_least_recently_used_entry(void **state) {
    (void)state;
    config_cache_t *c = new_cache(2);
    const config_entry_t *a = get(c, MAP("targetValue", "1"));
    uint64_t id_a = a->id;
    config_cache_release(c, a);
    const config_entry_t *b = get(c, MAP("targetValue", "2"));
    uint64_t id_b = b->id;
    config_cache_release(c, b);
    /* touch A: B becomes the least recently used */
    a = get(c, MAP("targetValue", "1"));
    assert_int_equal(a->id, id_a);
    config_cache_release(c, a);
    const config_entry_t *d = get(c, MAP("targetValue", "3"));
    config_cache_release(c, d);
    assert_int_equal(config_cache_size(c), 2);
    a = get(c, MAP("targetValue", "1"));
    assert_int_equal(a->id, id_a); /* survived */
    config_cache_release(c, a);
    b = get(c, MAP("targetValue", "2"));
    assert_true(b->id != id_b); /* evicted and parsed again: a fresh id */
    assert_true(b->id > id_b);
    config_cache_release(c, b);
    assert_int_equal(config_cache_size(c), 2);
    config_cache_free(c);
}

typedef struct {
    uint64_t ids[8];
    unsigned n;
} evicted_t;

static void note_evicted(void *ud, uint64_t id) {
    evicted_t *e = ud;
    assert_true(e->n < 8);
    e->ids[e->n++] = id;
}

/* Whoever keeps state per configuration hears of each valid entry evicted
 * (an error entry keeps nothing anywhere: not told), never of one in use
 * and not at the cache's own end. */
static void test_config_cache_tells_which_configuration_went(void **state) {
    (void)state;
    evicted_t ev = {{0}, 0};
    config_cache_opts_t o = {.max_entries = 2, .on_evict = note_evicted, .evict_user_data = &ev};
    config_cache_t *c;
    assert_int_equal(config_cache_new_opts(&o, &c), 0);
    const config_entry_t *a = get(c, MAP("targetValue", "1"));
    uint64_t id_a = a->id;
    config_cache_release(c, a);
    const config_entry_t *bad = get(c, MAP("targetvalue", "2"));
    config_cache_release(c, bad);
    const config_entry_t *held = get(c, MAP("targetValue", "3")); /* evicts a */
    assert_int_equal(ev.n, 1);
    assert_int_equal(ev.ids[0], id_a);
    const config_entry_t *d = get(c, MAP("targetValue", "4")); /* evicts the error */
    assert_int_equal(ev.n, 1);
    config_cache_release(c, d);
    config_cache_release(c, held);
    config_cache_free(c);
    assert_int_equal(ev.n, 1);
}

/* Entries unused for the idle time are freed (and told), the least
 * recently used first; one in use is kept whatever its age. */
static void test_config_cache_expires_entries_unused_for_the_idle_time(void **state) {
    (void)state;
    evicted_t ev = {{0}, 0};
    config_cache_opts_t o = {.max_entries = 8, .on_evict = note_evicted, .evict_user_data = &ev};
    config_cache_t *c;
    assert_int_equal(config_cache_new_opts(&o, &c), 0);
    const config_entry_t *a = get(c, MAP("targetValue", "1"));
    const config_entry_t *b = get(c, MAP("targetValue", "2"));
    uint64_t id_a = a->id;
    config_cache_release(c, a);
    mono_ns_t t = clock_mono_now();
    assert_int_equal(config_cache_expire(c, t, 60 * NS_PER_SEC), 0); /* not idle yet */
    size_t bytes = config_cache_bytes(c);
    size_t freed = config_cache_expire(c, t + 61 * NS_PER_SEC, 60 * NS_PER_SEC);
    assert_true(freed > 0 && freed < bytes);
    assert_int_equal(config_cache_size(c), 1); /* b, in use, stays */
    assert_int_equal(ev.n, 1);
    assert_int_equal(ev.ids[0], id_a);
    config_cache_release(c, b);
    assert_true(config_cache_expire(c, clock_mono_now() + 61 * NS_PER_SEC, 60 * NS_PER_SEC) > 0);
    assert_int_equal(config_cache_size(c), 0);
    assert_int_equal(config_cache_bytes(c), 0);
    config_cache_free(c);
}

static void test_config_cache_never_evicts_referenced_entries(void **state) {
    (void)state;
    config_cache_t *c = new_cache(1);
    const config_entry_t *held[4];
    char v[4][8];
    for (int i = 0; i < 4; i++) {
        snprintf(v[i], sizeof v[i], "%d", i + 1);
        held[i] = get(c, MAP("targetValue", v[i]));
    }
    assert_int_equal(config_cache_size(c), 4); /* all in use: over capacity */
    for (int i = 0; i < 4; i++)
        assert_true(held[i]->config->target_value == i + 1); /* still valid memory */
    const config_entry_t *again = get(c, MAP("targetValue", "1"));
    assert_ptr_equal(again, held[0]);
    config_cache_release(c, again);
    for (int i = 3; i >= 1; i--) {
        config_cache_release(c, held[i]);
        assert_int_equal(config_cache_size(c), (size_t)i);
    }
    assert_int_equal(config_cache_size(c), 1);
    config_cache_release(c, held[0]);
    assert_int_equal(config_cache_size(c), 1);
    config_cache_free(c);
}

static void test_config_cache_respects_capacity_over_many_maps(void **state) {
    (void)state;
    config_cache_t *c = new_cache(16);
    char v[16];
    uint64_t last = 0;
    for (int i = 0; i < 1000; i++) {
        snprintf(v, sizeof v, "%d", i + 1);
        const config_entry_t *e = get(c, MAP("targetValue", v, "aggregation", "max"));
        assert_true(e->id > last);
        last = e->id;
        assert_true(config_cache_size(c) <= 16);
        config_cache_release(c, e);
    }
    assert_int_equal(config_cache_size(c), 16);
    config_cache_free(c);
}

static void test_config_cache_handles_large_maps(void **state) {
    (void)state;
    config_cache_t *c = new_cache(4);
    metadata_pair_t fwd[40], rev[40];
    char keys[40][16];
    for (int i = 0; i < 40; i++) {
        snprintf(keys[i], sizeof keys[i], "k%02d", i);
        fwd[i] = (metadata_pair_t){keys[i], strlen(keys[i]), "v", 1};
        rev[39 - i] = fwd[i];
    }
    const config_entry_t *a = config_cache_acquire(c, fwd, 40);
    const config_entry_t *b = config_cache_acquire(c, rev, 40);
    assert_non_null(a);
    assert_ptr_equal(a, b);
    assert_int_equal(a->status, KGS_EINVAL);
    assert_non_null(strstr(a->error, "\"k00\"")); /* the smallest unknown key */
    config_cache_release(c, a);
    config_cache_release(c, b);
    config_cache_free(c);
}

static void test_config_cache_rejects_bad_arguments_quietly(void **state) {
    (void)state;
    config_cache_t *c = new_cache(0); /* treated as 1 */
    assert_null(config_cache_acquire(c, NULL, 2));
    assert_null(config_cache_acquire(NULL, NULL, 0));
    config_cache_release(c, NULL);
    config_cache_release(NULL, NULL);
    assert_int_equal(config_cache_size(NULL), 0);
    const config_entry_t *e = config_cache_acquire(c, NULL, 0);
    assert_non_null(e);
    assert_int_equal(e->status, 0);
    config_cache_release(c, e);
    config_cache_free(c);
    config_cache_free(NULL);
}

static config_cache_t *new_budget_cache(size_t max_entries, size_t max_bytes, uint64_t seed) {
    config_cache_t *c = NULL;
    config_cache_opts_t o = {.max_entries = max_entries, .max_bytes = max_bytes, .seed = seed};
    assert_int_equal(config_cache_new_opts(&o, &c), 0);
    return c;
}

static void test_config_cache_counts_bytes_and_evicts_within_the_byte_bound(void **state) {
    (void)state;
    /* one valid entry costs its configuration (tens of KiB); room for three */
    config_cache_t *probe = new_budget_cache(100, 0, 0);
    const config_entry_t *p = get(probe, MAP("targetValue", "999"));
    size_t one = config_cache_entry_bytes(p);
    assert_true(one >= sizeof(trigger_config_t));
    assert_int_equal(config_cache_bytes(probe), one);
    config_cache_release(probe, p);
    config_cache_free(probe);

    config_cache_t *c = new_budget_cache(100, 3 * one + one / 2, 0);
    char v[16];
    for (int i = 0; i < 50; i++) {
        snprintf(v, sizeof v, "%d", 100 + i); /* same length: same cost */
        const config_entry_t *e = get(c, MAP("targetValue", v));
        assert_int_equal(config_cache_entry_bytes(e), one);
        config_cache_release(c, e);
        assert_true(config_cache_bytes(c) <= 3 * one + one / 2);
    }
    assert_int_equal(config_cache_size(c), 3);
    assert_int_equal(config_cache_bytes(c), 3 * one);
    assert_int_equal(config_cache_evictions(c), 47);
    config_cache_free(c);
}

static void test_config_cache_knows_an_entry_s_cost_before_parsing(void **state) {
    (void)state;
    config_cache_t *c = new_budget_cache(100, 0, 0);
    const config_entry_t *e = get(c, MAP("metricType", "gpu_utilization", "targetValue", "500"));
    assert_int_equal(config_cache_entry_bytes(e),
                     config_cache_entry_bytes_for(2, 10 + 15 + 11 + 3));
    const config_entry_t *z = get(c, MAP(NULL));
    assert_int_equal(config_cache_entry_bytes(z), config_cache_entry_bytes_for(0, 0));
    /* an error costs less than the estimate */
    const config_entry_t *bad = get(c, MAP("targetvalue", "500"));
    assert_true(config_cache_entry_bytes(bad) < config_cache_entry_bytes_for(1, 14));
    assert_int_equal(config_cache_entry_bytes_for(SIZE_MAX / 8, 0), SIZE_MAX);
    assert_int_equal(config_cache_entry_bytes_for(1, SIZE_MAX - 10), SIZE_MAX);
    config_cache_release(c, e);
    config_cache_release(c, z);
    config_cache_release(c, bad);
    config_cache_free(c);
}

static void test_config_cache_byte_bound_never_frees_referenced_entries(void **state) {
    (void)state;
    config_cache_t *c = new_budget_cache(100, 1, 0); /* smaller than any entry */
    const config_entry_t *a = get(c, MAP("targetValue", "1"));
    const config_entry_t *b = get(c, MAP("targetValue", "2"));
    assert_int_equal(config_cache_size(c), 2); /* both in use: over the bound */
    assert_true(a->config->target_value == 1 && b->config->target_value == 2);
    config_cache_release(c, a);
    assert_int_equal(config_cache_size(c), 1);
    assert_int_equal(config_cache_bytes(c), config_cache_entry_bytes(b));
    config_cache_release(c, b);
    assert_int_equal(config_cache_size(c), 0);
    assert_int_equal(config_cache_bytes(c), 0);
    config_cache_free(c);
}

static void test_config_cache_keeps_no_map_for_an_error(void **state) {
    (void)state;
    /* issue 16: 200 rejected maps of 1 MiB kept 205 MB */
    config_cache_t *c = new_budget_cache(100, 0, 12345);
    size_t big = 1u << 20;
    char *v = malloc(big);
    assert_non_null(v);
    memset(v, 'x', big);
    metadata_pair_t p[2] = {{"targetValue", 11, "50", 2}, {"big", 3, v, big}};
    const config_entry_t *e = config_cache_acquire(c, p, 2);
    assert_non_null(e);
    assert_int_equal(e->status, KGS_EINVAL);
    assert_null(e->config);
    assert_non_null(strstr(e->error, "\"big\""));
    assert_true(config_cache_entry_bytes(e) < 1024);
    assert_int_equal(config_cache_bytes(c), config_cache_entry_bytes(e));
    /* the same map again is the same entry, found by its digest */
    const config_entry_t *again = config_cache_acquire(c, p, 2);
    assert_ptr_equal(again, e);
    /* one byte different is another map */
    v[big / 2] = 'y';
    const config_entry_t *other = config_cache_acquire(c, p, 2);
    assert_non_null(other);
    assert_ptr_not_equal(other, e);
    assert_int_equal(config_cache_size(c), 2);
    config_cache_release(c, other);
    config_cache_release(c, again);
    config_cache_release(c, e);
    free(v);
    config_cache_free(c);
}

static void test_config_cache_tells_errors_apart_with_any_seed(void **state) {
    (void)state;
    /* different seeds, the same answers: the seed only keys the digest */
    for (uint64_t seed = 0; seed < 4; seed++) {
        config_cache_t *c = new_budget_cache(100, 0, seed * 0x9e3779b97f4a7c15ull);
        const config_entry_t *a = get(c, MAP("targetvalue", "80"));
        const config_entry_t *b = get(c, MAP("targetvalue", "81"));
        const config_entry_t *a2 = get(c, MAP("targetvalue", "80"));
        assert_ptr_not_equal(a, b);
        assert_ptr_equal(a, a2);
        assert_int_equal(a->status, KGS_EINVAL);
        config_cache_release(c, a);
        config_cache_release(c, b);
        config_cache_release(c, a2);
        config_cache_free(c);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_cache_returns_the_same_entry_for_the_same_map),
        cmocka_unit_test(test_config_cache_ignores_pair_order),
        cmocka_unit_test(test_config_cache_gives_different_maps_different_ids),
        cmocka_unit_test(test_config_cache_compares_slices_including_nul_bytes),
        cmocka_unit_test(test_config_cache_caches_errors_too),
        cmocka_unit_test(test_config_cache_evicts_the_least_recently_used_entry),
        cmocka_unit_test(test_config_cache_never_evicts_referenced_entries),
        cmocka_unit_test(test_config_cache_tells_which_configuration_went),
        cmocka_unit_test(test_config_cache_expires_entries_unused_for_the_idle_time),
        cmocka_unit_test(test_config_cache_respects_capacity_over_many_maps),
        cmocka_unit_test(test_config_cache_handles_large_maps),
        cmocka_unit_test(test_config_cache_rejects_bad_arguments_quietly),
        cmocka_unit_test(test_config_cache_counts_bytes_and_evicts_within_the_byte_bound),
        cmocka_unit_test(test_config_cache_knows_an_entry_s_cost_before_parsing),
        cmocka_unit_test(test_config_cache_byte_bound_never_frees_referenced_entries),
        cmocka_unit_test(test_config_cache_keeps_no_map_for_an_error),
        cmocka_unit_test(test_config_cache_tells_errors_apart_with_any_seed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
