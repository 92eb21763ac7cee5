/* test_trigger_problems.c - every problem of a trigger at once
 * (trigger_config_parse_problems), each whole, in a fixed order, with the
 * checks that depend on a failed one skipped and said so; the one-message
 * form the RPCs answer (trigger_problems_format), summarised, never cut,
 * in a small buffer; and "did you mean" for the engines' and DCGM's own
 * metric names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/engine_table.h"
#include "core/err.h"
#include "core/trigger_config.h"
#include "support/test_support.h"

static trigger_config_t cfg;     /* large: off the stack */
static trigger_problems_t probs; /* likewise */

/* kv: NULL-terminated alternating key, value. Returns the problem count. */
static unsigned problems_of(const char *const *kv) {
    metadata_pair_t p[TS_MAX_PAIRS];
    size_t n = ts_pairs(kv, p, TS_MAX_PAIRS);
    int rc = trigger_config_parse_problems(p, n, &cfg, &probs);
    assert_int_equal(rc, probs.count ? KGS_EINVAL : 0);
    assert_int_equal(probs.stored, probs.count);
    return probs.count;
}

#define PROBLEMS(...) problems_of((const char *const[]){__VA_ARGS__, NULL})

static void expect_prefix(unsigned i, const char *prefix) {
    assert_true(i < probs.stored);
    if (strncmp(probs.msg[i], prefix, strlen(prefix)) != 0)
        fail_msg("problem %u: want \"%s...\", got \"%s\"", i + 1, prefix, probs.msg[i]);
}

static void expect_in(unsigned i, const char *needle) {
    assert_true(i < probs.stored);
    if (!strstr(probs.msg[i], needle))
        fail_msg("problem %u lacks \"%s\": %s", i + 1, needle, probs.msg[i]);
}

/* The case: a bad value no longer hides the next problem; unknown
 * keys, bad values and conflicts come together, in the fixed order, and an
 * unknown metricType says the keys that depend on it wait for it. */
static void test_trigger_problems_every_independent_problem_is_reported(void **state) {
    (void)state;
    assert_int_equal(PROBLEMS("colour", "blue", "metricName", "Bad Name", "metricType",
                              "gpu_utilisation_pct", "targetValue", "0", "aggregation", "mean2",
                              "pollIntervalSeconds", "0", "migUUID", "MIG-a", "migProfile",
                              "3g.40gb", "engine", "vllm"),
                     7);
    expect_prefix(0, "unknown metadata key \"colour\"");
    expect_prefix(1, "invalid metricName \"Bad Name\"");
    expect_prefix(2, "invalid metricType \"gpu_utilisation_pct\"");
    expect_prefix(3, "invalid targetValue \"0\"");
    expect_prefix(4, "invalid aggregation \"mean2\"");
    expect_prefix(5, "invalid pollIntervalSeconds \"0\"");
    expect_prefix(6, "migUUID and migProfile are both set");
    /* engine belongs to metricTypes that read an engine: that waits for metricType */
    assert_int_equal(probs.note_on, 2);
    assert_string_equal(probs.note, "the keys that depend on metricType are checked once it is "
                                    "valid");
    /* the message the RPC answers lists them all, the note after its problem */
    char msg[8192];
    size_t len = trigger_problems_format(&probs, msg, sizeof msg);
    assert_int_equal(len, strlen(msg));
    assert_true(strncmp(msg, "7 problems: 1) unknown metadata key \"colour\"", 44) == 0);
    assert_non_null(strstr(msg, " (the keys that depend on metricType are checked once it is "
                                "valid); 4) invalid targetValue \"0\""));
    assert_non_null(strstr(msg, "; 7) migUUID and migProfile are both set"));
    /* and once metricType is right, the engine key is checked too */
    assert_int_equal(
        PROBLEMS("metricType", "gpu_utilization", "targetValue", "0", "engine", "vllm"), 2);
    expect_prefix(1, "engine is set, but metricType gpu_utilization reads no serving engine");
    assert_null(probs.note);
}

/* The engine, queue, demand and latency keys of one trigger: every bad value
 * and every conflict, none a consequence of another. */
static void test_trigger_problems_demand_keys_are_checked_together(void **state) {
    (void)state;
    assert_int_equal(PROBLEMS("metricType", "demand", "engine", "vllm", "podSelector", "app=x",
                              "targetQueuePerReplica", "lots", "targetKvCache", "80",
                              "ttftP90Target", "fast", "redisAddress", "redis:6379",
                              "redisListName", "jobs", "redisStreamMeasure", "lag",
                              "sourceInterval", "1h", "enginePort", "99999"),
                     5);
    expect_in(0, "ttftP90Target");
    expect_prefix(1, "invalid targetQueuePerReplica \"lots\"");
    expect_prefix(2, "invalid enginePort \"99999\"");
    expect_prefix(3, "redisStreamMeasure is set with redisListName");
    expect_prefix(4, "invalid sourceInterval \"1h\"");
    /* a bad target is not also "no per-signal target", nor "needs a queue" */
    for (unsigned i = 0; i < probs.stored; i++) {
        assert_null(strstr(probs.msg[i], "needs at least one per-signal target"));
        assert_null(strstr(probs.msg[i], "needs a queue"));
    }
    /* an engine that cannot be told apart skips what depends on it, nothing else */
    assert_int_equal(PROBLEMS("metricType", "engine_kv_cache", "engine", "vllmm", "vllmEndpoint",
                              "http://a:8000/metrics", "targetValue", "-1"),
                     2);
    expect_prefix(0, "invalid targetValue \"-1\"");
    expect_prefix(1, "invalid engine \"vllmm\"");
}

/* Problems are reported in one order whatever the order of the pairs: the
 * config cache caches a map's message by its content. */
static void test_trigger_problems_do_not_depend_on_pair_order(void **state) {
    (void)state;
    char a[8192], b[8192];
    PROBLEMS("zz", "1", "metricType", "x", "aa", "2", "targetValue", "0", "aggregation", "no");
    trigger_problems_format(&probs, a, sizeof a);
    PROBLEMS("aggregation", "no", "targetValue", "0", "aa", "2", "metricType", "x", "zz", "1");
    trigger_problems_format(&probs, b, sizeof b);
    assert_string_equal(a, b);
    assert_true(strncmp(a, "5 problems: 1) unknown metadata key \"aa\"", 40) == 0);
}

/* A small buffer gets the whole problems that fit and a count of the rest,
 * never a problem cut in the middle; NULL measures. */
static void test_trigger_problems_format_summarises_instead_of_cutting(void **state) {
    (void)state;
    PROBLEMS("metricName", "Bad Name", "targetValue", "0", "pollIntervalSeconds", "0");
    assert_int_equal(probs.count, 3);
    char whole[4096];
    size_t len = trigger_problems_format(&probs, whole, sizeof whole);
    assert_int_equal(trigger_problems_format(&probs, NULL, 0), len);
    char small[300];
    assert_true(len >= sizeof small);
    assert_int_equal(trigger_problems_format(&probs, small, sizeof small), len);
    char want[300];
    int w = snprintf(want, sizeof want, "3 problems: 1) %s; and 2 more (%zu bytes in all)",
                     probs.msg[0], len);
    assert_true(w > 0 && (size_t)w < sizeof small);
    assert_string_equal(small, want);
    char tiny[40];
    trigger_problems_format(&probs, tiny, sizeof tiny);
    assert_string_equal(tiny, "");
    /* one problem alone is its message */
    assert_int_equal(PROBLEMS("targetValue", "0"), 1);
    trigger_problems_format(&probs, whole, sizeof whole);
    assert_string_equal(whole, probs.msg[0]);
}

/* More problems than are kept: the first ones whole, the rest counted. */
static void test_trigger_problems_many_unknown_keys_are_counted(void **state) {
    (void)state;
    static char names[40][8];
    const char *kv[2 * 40 + 1];
    for (int i = 0; i < 40; i++) {
        snprintf(names[i], sizeof names[i], "k%02d", 39 - i);
        kv[2 * i] = names[i];
        kv[2 * i + 1] = "1";
    }
    kv[80] = NULL;
    metadata_pair_t p[TS_MAX_PAIRS];
    size_t n = ts_pairs(kv, p, TS_MAX_PAIRS);
    assert_int_equal(trigger_config_parse_problems(p, n, &cfg, &probs), KGS_EINVAL);
    assert_int_equal(probs.count, TRIGGER_MAX_PROBLEMS);
    assert_int_equal(probs.stored, TRIGGER_MAX_PROBLEMS);
    expect_prefix(0, "unknown metadata key \"k00\"");
    expect_prefix(TRIGGER_MAX_PROBLEMS - 2, "unknown metadata key \"k22\"");
    assert_string_equal(probs.msg[TRIGGER_MAX_PROBLEMS - 1],
                        "17 more unknown metadata keys (not listed)");
}

/* What people write for metricType from the engines' and DCGM's own pages
 * (issue 27's list) gets the metricType, and the engine, that reads it. */
static void test_trigger_problems_engine_native_names_suggest_our_metric_type(void **state) {
    (void)state;
    static const struct {
        const char *typed, *want;
    } cases[] = {
        {"kv_cache_usage", "did you mean metricType: engine_kv_cache with engine: vllm?"},
        {"vllm_num_requests_waiting", "did you mean metricType: engine_queue with engine: vllm?"},
        {"gpu_cache_usage_perc", "did you mean metricType: engine_kv_cache with engine: vllm?"},
        {"num_requests_running", "did you mean metricType: engine_running with engine: vllm?"},
        {"vllm:num_requests_waiting", "did you mean metricType: engine_queue with engine: vllm?"},
        {"sglang:num_queue_reqs", "did you mean metricType: engine_queue with engine: sglang?"},
        {"tgi_queue_size", "did you mean metricType: engine_queue with engine: tgi?"},
        {"nv_inference_pending_request_count",
         "did you mean metricType: engine_queue with engine: triton?"},
        {"DCGM_FI_DEV_GPU_UTIL", "did you mean metricType: gpu_utilization?"},
        {"DCGM_FI_PROF_SM_ACTIVE", "did you mean metricType: sm_active (a percentage here"},
        {"vllm:time_to_first_token_seconds",
         "did you mean metricType: slo with engine: vllm and ttftP90Target: \"500ms\"?"},
        {"nv_inference_queue_duration_us", "did you mean metricType: triton_queue_wait_ms?"},
        {"llm_d_epp_flow_control_queue_size",
         "did you mean metricType: engine_queue with engine: epp?"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        assert_int_equal(PROBLEMS("metricType", cases[i].typed), 1);
        char head[160];
        snprintf(head, sizeof head, "invalid metricType \"%s\": that is ", cases[i].typed);
        expect_prefix(0, head);
        expect_in(0, cases[i].want);
        expect_in(0, "It must be one of gpu_utilization, "); /* and the list, whole */
        expect_in(0, ", vllm_lora_waiting_engines");
    }
    /* our own names' typos keep the usual suggestion */
    assert_int_equal(PROBLEMS("metricType", "engine_queu"), 1);
    expect_in(0, "did you mean \"engine_queue\"?");
    /* gpuMetricType takes GPU metrics only: DCGM's names, not an engine's */
    assert_int_equal(PROBLEMS("metricType", "demand", "targetGpu", "80", "gpuMetricType",
                              "DCGM_FI_DEV_GPU_UTIL", "redisAddress", "r:6379", "redisListName",
                              "q", "targetQueuePerReplica", "5"),
                     1);
    expect_in(0, "did you mean gpuMetricType: gpu_utilization?");
    assert_int_equal(PROBLEMS("metricType", "demand", "targetGpu", "80", "gpuMetricType",
                              "tgi_queue_size", "redisAddress", "r:6379", "redisListName", "q",
                              "targetQueuePerReplica", "5"),
                     1);
    assert_null(strstr(probs.msg[0], "engine: tgi"));
    /* nothing close: the list alone */
    assert_int_equal(PROBLEMS("metricType", "zzzzzz"), 1);
    assert_null(strstr(probs.msg[0], "did you mean"));
}

/* Every family the engine table reads as a signal (queue, running, KV,
 * token counters, latency histograms, the EPP's pool gauges), typed as a
 * metricType, gets the metricType that reads it: the hints and the table
 * are two lists, and a family added to the table without a hint would be
 * met by the bare list of metric types. Identity and completion counters
 * are read for other triggers' sake and are not asked for. */
static void test_trigger_problems_every_engine_signal_gets_a_hint(void **state) {
    (void)state;
    size_t n;
    const engine_metric_t *rows = engine_table_rows(&n);
    unsigned checked = 0;
    for (size_t i = 0; i < n; i++) {
        switch (rows[i].role) {
        case EMR_IDENTITY:
        case EMR_COMPLETED:
        case EMR_SUCCESS:
        case EMR_EPP_READY:
            continue;
        default:
            break;
        }
        if (strlen(rows[i].name) > 63)
            continue; /* longer than any metricType is read for a hint */
        if (PROBLEMS("metricType", rows[i].name) != 1 ||
            !strstr(probs.msg[0], "did you mean metricType: "))
            fail_msg("%s (%s) typed as metricType gets no hint: %s", rows[i].name,
                     engine_table_product(rows[i].engine), probs.stored ? probs.msg[0] : "");
        checked++;
    }
    assert_true(checked >= 40);
}

/* A message over 480 bytes (issue 27 saw them cut at ~480) comes whole. */
static void test_trigger_problems_long_messages_are_whole(void **state) {
    (void)state;
    assert_int_equal(PROBLEMS("metricType", "kv_cache_usage"), 1);
    size_t n = strlen(probs.msg[0]);
    assert_true(n > 480);
    const char *tail = ", vllm_lora_waiting_engines";
    assert_string_equal(probs.msg[0] + n - strlen(tail), tail);
    char one[4096], buf[4096];
    size_t len = trigger_problems_format_one(&probs, 0, one, sizeof one);
    assert_int_equal(len, strlen(one));
    assert_true(strncmp(one, probs.msg[0], n) == 0); /* and its note */
    assert_string_equal(one + n, " (the keys that depend on metricType are checked once it is "
                                 "valid)");
    const metadata_pair_t p = {"metricType", 10, "kv_cache_usage", 14};
    assert_int_equal(trigger_config_parse(&p, 1, &cfg, buf, sizeof buf), KGS_EINVAL);
    assert_string_equal(buf, one);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trigger_problems_every_independent_problem_is_reported),
        cmocka_unit_test(test_trigger_problems_demand_keys_are_checked_together),
        cmocka_unit_test(test_trigger_problems_do_not_depend_on_pair_order),
        cmocka_unit_test(test_trigger_problems_format_summarises_instead_of_cutting),
        cmocka_unit_test(test_trigger_problems_many_unknown_keys_are_counted),
        cmocka_unit_test(test_trigger_problems_engine_native_names_suggest_our_metric_type),
        cmocka_unit_test(test_trigger_problems_every_engine_signal_gets_a_hint),
        cmocka_unit_test(test_trigger_problems_long_messages_are_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
