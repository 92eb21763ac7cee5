/* test_explain_text.c - an Explain answer as `query` prints it: every
 * signal with its need, the deciding one, latency against its targets, the
 * engines (not serving, and why), and the queueing model's inputs; a long
 * reason arrives whole. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/explain_text.h"

static void render(const char *const *names, const double *values, size_t n, int queueing,
                   strbuf_t out[EXPLAIN_LINES]) {
    for (int k = 0; k < EXPLAIN_LINES; k++)
        strbuf_init(&out[k]);
    explain_text(names, values, n, queueing, out);
}

static void done(strbuf_t out[EXPLAIN_LINES]) {
    for (int k = 0; k < EXPLAIN_LINES; k++)
        strbuf_free(&out[k]);
}

static void test_two_signals_name_the_one_that_decided(void **state) {
    (void)state;
    const char *names[] = {"value",
                           "active",
                           "signal:queue",
                           "signal:kv_cache",
                           "need:queue",
                           "need:kv_cache",
                           "decided_by:kv_cache",
                           "engines:total",
                           "engines:answering",
                           "engines:not_serving",
                           "engines:failing",
                           "engines:pending",
                           "pods:ready",
                           "pods:starting"};
    const double values[] = {385.714, 1, 12, 270, 2.4, 3.857142, 3.857142, 3, 3, 0, 0, 0, 3, 1};
    strbuf_t out[EXPLAIN_LINES];
    render(names, values, sizeof names / sizeof *names, 0, out);
    assert_string_equal(out[EXPLAIN_SIGNALS].s,
                        "signals: queue 12 (needs 2.4), kv_cache 270% (needs 3.857); decided by "
                        "kv_cache: 3.857 replicas");
    assert_string_equal(out[EXPLAIN_ENGINES].s,
                        "engines: 3 of 3 answering; pods: 3 Ready, 1 starting");
    assert_string_equal(out[EXPLAIN_LATENCY].s, "");
    assert_string_equal(out[EXPLAIN_MODEL].s, "");
    done(out);
}

static void test_latency_against_targets_and_unknowns(void **state) {
    (void)state;
    const char *names[] = {"latency:ttft_p90",
                           "latency_target:ttft_p90",
                           "latency_requests:ttft_p90",
                           "latency:queue_time_p99 (too few requests)",
                           "latency_target:queue_time_p99",
                           "latency_requests:queue_time_p99",
                           "latency:tpot_p50",
                           "latency_target:tpot_p50",
                           "latency_requests:tpot_p50",
                           "need:latency",
                           "decided_by:latency"};
    const double values[] = {0.82, 0.5, 40, 3.5, 2, 12, NAN, 0.05, 0, 1.64, 1.64};
    strbuf_t out[EXPLAIN_LINES];
    render(names, values, sizeof names / sizeof *names, 0, out);
    assert_string_equal(out[EXPLAIN_LATENCY].s,
                        "latency: ttft p90 0.82 s against 0.5 s (40 requests), queue_time p99 3.5 "
                        "s against 2 s (12 requests, too few to act on), tpot p50 unknown (no "
                        "request in the window) against 0.05 s");
    assert_string_equal(out[EXPLAIN_SIGNALS].s,
                        "signals: latency needs 1.64; decided by latency: 1.64 replicas");
    done(out);
}

/* At zero: the engine URL has nobody behind it, the queue wakes; a long
 * reason arrives whole, and the missing pod list is said once. */
static void test_engines_not_serving_and_the_model(void **state) {
    (void)state;
    char why[1200];
    memset(why, 'x', sizeof why - 1);
    why[sizeof why - 1] = '\0';
    memcpy(why, "not_serving:vllm http://", 24);
    memcpy(why + sizeof why - 6, " END.", 5);
    const char *names[] = {"engines:total",
                           "engines:answering",
                           "engines:not_serving",
                           "engines:failing",
                           "engines:pending",
                           why,
                           "replicas",
                           "lambda_rps:prior",
                           "tokens_per_request:unknown, no token counters",
                           "ready"};
    const double values[] = {1, 0, 1, 0, 0, 1, 1, 0, NAN, 0};
    strbuf_t out[EXPLAIN_LINES];
    render(names, values, sizeof names / sizeof *names, 1, out);
    const char *e = out[EXPLAIN_ENGINES].s;
    assert_memory_equal(e, "engines: 0 of 1 answering, 1 not serving (first: vllm http://", 61);
    assert_non_null(strstr(e, " END.)"));
    assert_non_null(strstr(e, "; no pod list (engine URLs, or the standalone role)"));
    assert_true(strlen(e) > 1200);
    assert_string_equal(out[EXPLAIN_MODEL].s,
                        "queueing model: replicas 1, lambda_rps 0 (prior), tokens_per_request "
                        "unknown (unknown, no token counters), ready 0");
    done(out);
}

/* Issue 33's line: the mean stages of the last starts, and failed starts by
 * reason (one reason: its name alone). */
static void test_cold_start_line_as_issue_33_writes_it(void **state) {
    (void)state;
    const char *names[] = {"cold_start:pods", "cold_start:node", "cold_start:image",
                           "cold_start:weights", "cold_start_failed:ImagePullBackOff"};
    const double values[] = {8, 61, 38, 29, 2};
    strbuf_t out[EXPLAIN_LINES];
    render(names, values, 5, 0, out);
    assert_string_equal(out[EXPLAIN_COLD_START].s,
                        "cold start 128 s: node 61 s, image 38 s, weights 29 s, last 8 pods; 2 "
                        "failed starts: ImagePullBackOff");
    /* nothing of it in the queueing model's line */
    assert_string_equal(out[EXPLAIN_MODEL].s, "");
    done(out);
    /* beside the queueing model's own cold_start_s, which stays its own
     * (integration_demand failed when every "cold_start" name was left out) */
    const char *both[] = {"cold_start:pods", "cold_start:node", "cold_start:image",
                          "cold_start:weights", "cold_start_s:prior"};
    const double bv[] = {1, 1, 2, 3, 120};
    render(both, bv, 5, 0, out);
    assert_string_equal(out[EXPLAIN_MODEL].s, "queueing model: cold_start_s 120 (prior)");
    assert_string_equal(out[EXPLAIN_COLD_START].s,
                        "cold start 6 s: node 1 s, image 2 s, weights 3 s, last 1 pod");
    done(out);
}

/* Several reasons with their counts; Unschedulable with the scheduler's
 * message; pods waiting for a node; no start completed yet. */
static void test_cold_start_line_reasons_and_waiting_pods(void **state) {
    (void)state;
    const char *names[] = {"cold_start:pods", "cold_start_failed:CrashLoopBackOff",
                           "cold_start_failed:Unschedulable", "cold_start_waiting:pods",
                           "cold_start_scheduler:0/3 nodes are available: 3 Insufficient "
                           "nvidia.com/gpu."};
    const double values[] = {0, 2, 1, 1, 0};
    strbuf_t out[EXPLAIN_LINES];
    render(names, values, 5, 0, out);
    assert_string_equal(out[EXPLAIN_COLD_START].s,
                        "cold start: no completed start seen yet; 3 failed starts: 2 "
                        "CrashLoopBackOff, 1 Unschedulable (0/3 nodes are available: 3 "
                        "Insufficient nvidia.com/gpu.); 1 pod waiting for a node (0/3 nodes are "
                        "available: 3 Insufficient nvidia.com/gpu.)");
    done(out);
    /* no cold-start names: no line */
    const char *none[] = {"value"};
    const double v0[] = {1};
    render(none, v0, 1, 0, out);
    assert_string_equal(out[EXPLAIN_COLD_START].s, "");
    done(out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_signals_name_the_one_that_decided),
        cmocka_unit_test(test_cold_start_line_as_issue_33_writes_it),
        cmocka_unit_test(test_cold_start_line_reasons_and_waiting_pods),
        cmocka_unit_test(test_latency_against_targets_and_unknowns),
        cmocka_unit_test(test_engines_not_serving_and_the_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
