/* test_trigger_keys.c - the metadata key table (core/trigger_keys.c): every
 * row is complete, every enum row round-trips through its parser and the
 * enum's name function, every bounded row rejects the values just outside
 * its bounds with a message naming the value and the range, and the
 * unknown-key message summarises the keys by design. */
#include <math.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/duration.h"
#include "core/err.h"
#include "core/trigger_config.h"
#include "core/trigger_config_internal.h"

static slice_t S(const char *s) {
    slice_t v = {s, strlen(s)};
    return v;
}

/* The row parsers report through a trigger_problems_t: these run one and
 * copy its one message into err (NULL allowed), as the tests read it. */
static trigger_problems_t tp;

static int first_problem(int rc, char *err, size_t errlen) {
    if (err && errlen)
        snprintf(err, errlen, "%s", tp.stored ? tp.msg[0] : "");
    assert_int_equal(tp.count, rc ? 1 : 0); /* one value, one problem at most */
    return rc;
}

#define WRAP(name, T)                                                                              \
    static int name(key_id_t k, slice_t v, T *out, char *err, size_t errlen) {                     \
        tc_problems_reset(&tp);                                                                    \
        return first_problem(tc_##name(k, v, out, &tp), err, errlen);                              \
    }
WRAP(key_enum, int)
WRAP(key_int, long long)
WRAP(key_nonneg, double)
WRAP(key_duration, uint64_t)
WRAP(key_bool, bool)

static int parse_target(const char *key, slice_t v, double *out, char *err, size_t errlen) {
    tc_problems_reset(&tp);
    return first_problem(tc_parse_target(key, v, out, &tp), err, errlen);
}

static int unknown_key(const char *p, size_t n, char *err, size_t errlen) {
    tc_problems_reset(&tp);
    return first_problem(tc_unknown_key(p, n, &tp), err, errlen);
}

static void test_trigger_keys_every_row_is_complete_and_in_key_order(void **state) {
    (void)state;
    for (int k = 0; k < K_COUNT; k++) {
        const key_row_t *r = &tc_keys[k];
        assert_non_null(r->name);
        if (!r->def || !r->def[0])
            fail_msg("key %s has no default text for the reference", r->name);
        if (strcmp(tc_type_doc_name(r->type), "?") == 0)
            fail_msg("key %s has a type without a name", r->name);
        assert_int_equal(tc_key_lookup(r->name, strlen(r->name)), k);
        assert_string_equal(trigger_config_key_name((size_t)k), r->name);
        if (r->type == KT_INTEGER || r->type == KT_NUMBER)
            assert_non_null(r->must);
        if (r->type == KT_ENUM)
            assert_true(r->values && r->nvalues > 0);
        if (r->type == KT_INTEGER || r->type == KT_DURATION)
            assert_true(r->min <= r->max);
        trigger_key_doc_t d;
        assert_true(trigger_config_key_doc((size_t)k, &d));
        assert_string_equal(d.name, r->name);
        assert_true(d.kedas == (r->group == KG_KEDA));
        for (int j = 0; j < k; j++)
            assert_string_not_equal(tc_keys[j].name, r->name);
    }
    trigger_key_doc_t d;
    assert_false(trigger_config_key_doc(K_COUNT, &d));
    assert_true(trigger_config_key_known("targetValue", 11));
    assert_false(trigger_config_key_known("targetvalue", 11));
}

/* Every spelling of every enum row parses to its index, and a spelling in
 * capitals is refused with a suggestion of the right spelling. */
static void test_trigger_keys_every_enum_row_round_trips(void **state) {
    (void)state;
    int enums = 0;
    for (int k = 0; k < K_COUNT; k++) {
        const key_row_t *r = &tc_keys[k];
        if (r->type != KT_ENUM)
            continue;
        enums++;
        for (size_t i = 0; i < r->nvalues; i++) {
            int out = -1;
            char err[1024] = "";
            if (key_enum((key_id_t)k, S(r->values[i]), &out, err, sizeof err) != 0)
                fail_msg("%s %s: %s", r->name, r->values[i], err);
            assert_int_equal(out, (int)i);
            char upper[64], want[160];
            size_t n = strlen(r->values[i]);
            for (size_t j = 0; j <= n; j++)
                upper[j] = (char)(r->values[i][j] >= 'a' && r->values[i][j] <= 'z'
                                      ? r->values[i][j] - 'a' + 'A'
                                      : r->values[i][j]);
            assert_int_equal(key_enum((key_id_t)k, S(upper), &out, err, sizeof err), KGS_EINVAL);
            /* a row without `must` lists every value: the suggestion comes
             * first there, where it is seen */
            if (r->must)
                snprintf(want, sizeof want, "invalid %s \"%s\": must be ", r->name, upper);
            else
                snprintf(want, sizeof want,
                         "invalid %s \"%s\": did you mean \"%s\"? It must be one of ", r->name,
                         upper, r->values[i]);
            if (strncmp(err, want, strlen(want)) != 0)
                fail_msg("%s: %s", r->name, err);
            if (!r->must)
                continue;
            snprintf(want, sizeof want, "; did you mean \"%s\"?", r->values[i]);
            if (!strstr(err, want))
                fail_msg("%s %s: no suggestion: %s", r->name, upper, err);
        }
    }
    assert_true(enums >= 9);
}

/* The enum rows and the name functions of trigger_config.h agree. */
static void test_trigger_keys_enum_rows_match_the_name_functions(void **state) {
    (void)state;
    const key_row_t *mt = &tc_keys[K_METRIC_TYPE];
    assert_int_equal(mt->nvalues, METRIC_TYPE_COUNT + DEMAND_TYPE_COUNT - 1);
    for (int t = 0; t < METRIC_TYPE_COUNT; t++) {
        assert_string_equal(mt->values[t], metric_type_name((metric_type_t)t));
        assert_string_equal(tc_keys[K_GPU_METRIC_TYPE].values[t],
                            metric_type_name((metric_type_t)t));
    }
    for (int d = 1; d < DEMAND_TYPE_COUNT; d++)
        assert_string_equal(mt->values[METRIC_TYPE_COUNT + d - 1],
                            demand_type_name((demand_type_t)d));
    for (size_t i = 0; i < tc_keys[K_AGGREGATION].nvalues; i++)
        assert_string_equal(tc_keys[K_AGGREGATION].values[i], aggregation_name((aggregation_t)i));
    for (size_t i = 0; i < tc_keys[K_POD_AGGREGATION].nvalues; i++)
        assert_string_equal(tc_keys[K_POD_AGGREGATION].values[i],
                            pod_aggregation_name((pod_aggregation_t)i));
    for (size_t i = 0; i < tc_keys[K_PARTIAL_DATA].nvalues; i++)
        assert_string_equal(tc_keys[K_PARTIAL_DATA].values[i],
                            partial_data_name((partial_data_t)i));
    for (size_t i = 0; i < tc_keys[K_ENGINE].nvalues; i++)
        assert_string_equal(tc_keys[K_ENGINE].values[i], engine_name((engine_t)(i + 1)));
}

static void expect_bound_error(key_id_t k, const char *value, const char *const *needles) {
    long long i = 12345;
    char err[512] = "", want[160];
    assert_int_equal(key_int(k, S(value), &i, err, sizeof err), KGS_EINVAL);
    assert_int_equal(i, 12345); /* untouched on error */
    snprintf(want, sizeof want, "invalid %s \"%s\": must be ", tc_keys[k].name, value);
    if (strncmp(err, want, strlen(want)) != 0)
        fail_msg("%s: %s", tc_keys[k].name, err);
    for (; *needles; needles++)
        if (!strstr(err + strlen(want), *needles))
            fail_msg("%s %s: the message lacks the bound %s: %s", tc_keys[k].name, value, *needles,
                     err);
}

/* Each integer row accepts its bounds, refuses one past each, and the
 * message names the value and both bounds. */
static void test_trigger_keys_integer_bounds_name_the_value_and_the_range(void **state) {
    (void)state;
    int rows = 0;
    for (int k = 0; k < K_COUNT; k++) {
        const key_row_t *r = &tc_keys[k];
        if (r->type != KT_INTEGER)
            continue;
        rows++;
        char lo[32], hi[32], below[32], above[32];
        snprintf(lo, sizeof lo, "%lld", r->min);
        snprintf(hi, sizeof hi, "%lld", r->max);
        snprintf(below, sizeof below, "%lld", r->min - 1);
        snprintf(above, sizeof above, "%lld", r->max + 1);
        long long v = 0;
        assert_int_equal(key_int((key_id_t)k, S(lo), &v, NULL, 0), 0);
        assert_int_equal(v, r->min);
        assert_int_equal(key_int((key_id_t)k, S(hi), &v, NULL, 0), 0);
        assert_int_equal(v, r->max);
        const char *const bounds[] = {lo, hi, NULL};
        expect_bound_error((key_id_t)k, below, bounds);
        expect_bound_error((key_id_t)k, above, bounds);
        expect_bound_error((key_id_t)k, "1.5", bounds);
    }
    assert_true(rows >= 6);
}

static void test_trigger_keys_duration_bounds_name_the_value_and_the_range(void **state) {
    (void)state;
    int rows = 0;
    for (int k = 0; k < K_COUNT; k++) {
        const key_row_t *r = &tc_keys[k];
        if (r->type != KT_DURATION)
            continue;
        rows++;
        char lo[32], hi[32], below[48], above[48], want[256], err[512];
        duration_format((uint64_t)r->min, lo, sizeof lo);
        duration_format((uint64_t)r->max, hi, sizeof hi);
        snprintf(below, sizeof below, "%lldns", r->min - 1);
        snprintf(above, sizeof above, "%lldns", r->max + 1);
        uint64_t ns = 0;
        assert_int_equal(key_duration((key_id_t)k, S(lo), &ns, NULL, 0), 0);
        assert_true(ns == (uint64_t)r->min);
        assert_int_equal(key_duration((key_id_t)k, S(hi), &ns, NULL, 0), 0);
        assert_true(ns == (uint64_t)r->max);
        const char *out[] = {below, above};
        for (int i = 0; i < 2; i++) {
            assert_int_equal(key_duration((key_id_t)k, S(out[i]), &ns, err, sizeof err),
                             KGS_EINVAL);
            snprintf(want, sizeof want, "invalid %s \"%s\": must be from %s to %s", r->name, out[i],
                     lo, hi);
            assert_string_equal(err, want);
        }
    }
    assert_int_equal(rows, 17); /* sourceInterval, sourceTimeout, the 15 latency targets */
}

static void test_trigger_keys_number_rows_refuse_negatives_and_keep_no_minus_zero(void **state) {
    (void)state;
    for (int k = 0; k < K_COUNT; k++) {
        if (tc_keys[k].type != KT_NUMBER)
            continue;
        double d = 7;
        char err[512];
        assert_int_equal(key_nonneg((key_id_t)k, S("-0"), &d, NULL, 0), 0);
        assert_true(d == 0 && !signbit(d));
        assert_int_equal(key_nonneg((key_id_t)k, S("-1"), &d, err, sizeof err), KGS_EINVAL);
        assert_non_null(strstr(err, "\"-1\": must be "));
        assert_non_null(strstr(err, ">= 0"));
    }
}

/* With nothing close, the message names the general keys, counts the rest
 * and says where the reference lists them: whole, never a paragraph cut by
 * a buffer (it used to end "...coldStartSeconds, the"). */
static void test_trigger_keys_unknown_key_message_summarises_the_keys(void **state) {
    (void)state;
    char err[4096], want[2048];
    assert_int_equal(unknown_key("colour", 6, err, sizeof err), KGS_EINVAL);
    size_t o = 0;
    int k = 0;
    for (; tc_keys[k].group == KG_GENERAL; k++)
        o += (size_t)snprintf(want + o, sizeof want - o, "%s%s", k ? ", " : "", tc_keys[k].name);
    snprintf(want + o, sizeof want - o, ", and %d more (", K_COUNT - k);
    const char *list = strstr(err, "the general keys are ");
    assert_non_null(list);
    assert_memory_equal(list + strlen("the general keys are "), want, strlen(want));
    assert_true(K_COUNT - k > 20);
    size_t n = strlen(err);
    const char *tail = ": see docs/configuration.md#keys";
    assert_true(n > strlen(tail) && strcmp(err + n - strlen(tail), tail) == 0);
    assert_true(n < 700); /* a summary, not every key */
    assert_int_equal(unknown_key("targtValue", 10, err, sizeof err), KGS_EINVAL);
    assert_string_equal(err, "unknown metadata key \"targtValue\": did you mean \"targetValue\"?");
}

/* The serves column against the resolution: on a trigger of each family,
 * every key whose row does not serve that family, given its row's example
 * value, is refused with a message naming the key; and each example is a
 * value its row-driven parser accepts. */
static void test_trigger_keys_a_key_outside_its_families_is_refused_by_name(void **state) {
    (void)state;
    static const struct {
        unsigned family;
        const char *base[10]; /* key, value pairs, NULL-terminated */
    } families[] = {
        {TS_GPU, {NULL}},
        {TS_ENGINE,
         {"metricType", "engine_queue", "engine", "vllm", "vllmEndpoint",
          "http://vllm:8000/metrics", "targetValue", "5", NULL}},
        {TS_QUEUE,
         {"metricType", "queue_length", "targetValue", "5", "redisAddress", "redis:6379",
          "redisListName", "jobs", NULL}},
        {TS_DEMAND,
         {"metricType", "demand", "targetQueuePerReplica", "5", "redisAddress", "redis:6379",
          "redisListName", "jobs", NULL}},
        {TS_SLO,
         {"metricType", "slo", "engine", "vllm", "vllmEndpoint", "http://vllm:8000/metrics",
          "ttftP90Target", "500ms", NULL}},
    };
    static trigger_config_t c; /* large: off the stack */
    int refused = 0;
    for (size_t f = 0; f < sizeof families / sizeof *families; f++) {
        metadata_pair_t p[8];
        size_t n = 0;
        for (; families[f].base[2 * n]; n++)
            p[n] =
                (metadata_pair_t){families[f].base[2 * n], strlen(families[f].base[2 * n]),
                                  families[f].base[2 * n + 1], strlen(families[f].base[2 * n + 1])};
        char err[1024] = "";
        if (trigger_config_parse(p, n, &c, err, sizeof err) != 0)
            fail_msg("family %zu base: %s", f, err);
        for (int k = 0; k < K_COUNT; k++) {
            const key_row_t *r = &tc_keys[k];
            assert_non_null(r->example);
            if (r->serves & families[f].family)
                continue;
            p[n] = (metadata_pair_t){r->name, strlen(r->name), r->example, strlen(r->example)};
            int rc = trigger_config_parse(p, n + 1, &c, err, sizeof err);
            if (rc != KGS_EINVAL || !strstr(err, r->name))
                fail_msg("%s: %s on a family-%u trigger: want a refusal naming it, got %d: %s",
                         r->name, r->example, families[f].family, rc, err);
            refused++;
        }
    }
    assert_true(refused > 60);
    for (int k = 0; k < K_COUNT; k++) {
        const key_row_t *r = &tc_keys[k];
        slice_t v = S(r->example);
        char err[512] = "";
        int rc = 0, e;
        long long i;
        double d;
        uint64_t ns;
        bool b;
        switch (r->type) {
        case KT_ENUM:
            rc = key_enum((key_id_t)k, v, &e, err, sizeof err);
            break;
        case KT_INTEGER:
            rc = key_int((key_id_t)k, v, &i, err, sizeof err);
            break;
        case KT_NUMBER:
            rc = key_nonneg((key_id_t)k, v, &d, err, sizeof err);
            break;
        case KT_TARGET:
            rc = parse_target(r->name, v, &d, err, sizeof err);
            break;
        case KT_DURATION:
            rc = key_duration((key_id_t)k, v, &ns, err, sizeof err);
            break;
        case KT_BOOL:
            rc = key_bool((key_id_t)k, v, &b, err, sizeof err);
            break;
        default:
            break;
        }
        if (rc)
            fail_msg("%s: example %s is refused: %s", r->name, r->example, err);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trigger_keys_every_row_is_complete_and_in_key_order),
        cmocka_unit_test(test_trigger_keys_every_enum_row_round_trips),
        cmocka_unit_test(test_trigger_keys_enum_rows_match_the_name_functions),
        cmocka_unit_test(test_trigger_keys_integer_bounds_name_the_value_and_the_range),
        cmocka_unit_test(test_trigger_keys_duration_bounds_name_the_value_and_the_range),
        cmocka_unit_test(test_trigger_keys_number_rows_refuse_negatives_and_keep_no_minus_zero),
        cmocka_unit_test(test_trigger_keys_unknown_key_message_summarises_the_keys),
        cmocka_unit_test(test_trigger_keys_a_key_outside_its_families_is_refused_by_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
