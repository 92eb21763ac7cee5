/* test_engine_epp.c - engine epp: one scrape of the Gateway API Inference
 * Extension's endpoint picker read into a reading (the flow-control queue
 * summed, the pool gauges paired by pool name and turned into counts),
 * over tests/fixtures/engines/epp*.txt (values in its README) and small
 * texts for the edge cases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/err.h"
#include "core/trigger_config.h"
#include "sources/engine_metrics.h"
#include "support/test_support.h"

#define NEAR(a, b) assert_true((a) > (b)-1e-9 && (a) < (b) + 1e-9)

static engine_reading_t epp_fixture(const char *model, const char *name) {
    size_t n;
    char *text = ts_engine_fixture(name, &n);
    engine_reading_t r;
    char err[256] = "";
    int rc =
        engine_reading_parse(ENGINE_EPP, model, text, n, PROM_FORMAT_TEXT, &r, err, sizeof err);
    free(text);
    if (rc != 0)
        fail_msg("%s: %s", name, err);
    return r;
}

static engine_reading_t epp_text(const char *model, const char *text) {
    engine_reading_t r;
    char err[256] = "";
    if (engine_reading_parse(ENGINE_EPP, model, text, strlen(text), PROM_FORMAT_TEXT, &r, err,
                             sizeof err) != 0)
        fail_msg("%s", err);
    return r;
}

/* Returns the error message (static storage); fails the test if it parses. */
static const char *epp_error(const char *text) {
    static char err[512];
    engine_reading_t r;
    memset(&r, 0x5a, sizeof r);
    err[0] = '\0';
    int rc = engine_reading_parse(ENGINE_EPP, "", text, strlen(text), PROM_FORMAT_TEXT, &r, err,
                                  sizeof err);
    assert_int_equal(rc, KGS_EINVAL);
    static const engine_reading_t zero;
    assert_memory_equal(&r, &zero, sizeof r); /* zeroed on failure */
    return err;
}

/* epp.txt carries every family twice (llm_d_epp_* and the deprecated
 * mirrors, equal values): each is read once. Flow queue 2 + 3 + 1 = 6;
 * pool-a: 4 ready endpoints x 2.5 queued = 10 waiting, x 6 running = 24,
 * x 0.45 KV = 180 %. */
static void test_epp_new_names_win_and_nothing_counts_twice(void **state) {
    (void)state;
    engine_reading_t r = epp_fixture("", "epp.txt");
    assert_true(r.has_waiting && r.has_running && r.has_kv && r.has_pool);
    NEAR(r.waiting, 6);
    NEAR(r.pool_ready, 4);
    NEAR(r.pool_waiting, 10);
    NEAR(r.pool_running, 24);
    NEAR(r.pool_kv_percent, 180);
    /* the summed engine gauges are not the pool's: those stay apart */
    NEAR(r.running, 0);
    NEAR(r.kv_percent, 0);
    assert_false(r.has_triton || r.has_completed || r.has_tokens || r.has_lora);
    /* the new family alone gives the same reading */
    engine_reading_t n =
        epp_text("", "llm_d_epp_flow_control_queue_size{model_name=\"llama\"} 6\n"
                     "llm_d_epp_ready_endpoints{name=\"pool-a\"} 4\n"
                     "llm_d_epp_average_queue_size{name=\"pool-a\"} 2.5\n"
                     "llm_d_epp_average_running_requests{name=\"pool-a\"} 6\n"
                     "llm_d_epp_average_kv_cache_utilization{name=\"pool-a\"} 0.45\n");
    NEAR(n.waiting, r.waiting);
    NEAR(n.pool_waiting, r.pool_waiting);
    NEAR(n.pool_running, r.pool_running);
    NEAR(n.pool_kv_percent, r.pool_kv_percent);
    /* when both are present and differ, the new name is the one read */
    r = epp_text("", "inference_extension_flow_control_queue_size 100\n"
                     "llm_d_epp_flow_control_queue_size 3\n"
                     "inference_pool_ready_pods{name=\"p\"} 50\n"
                     "llm_d_epp_ready_endpoints{name=\"p\"} 2\n"
                     "inference_pool_average_queue_size{name=\"p\"} 9\n"
                     "llm_d_epp_average_queue_size{name=\"p\"} 1\n");
    NEAR(r.waiting, 3);
    NEAR(r.pool_ready, 2);
    NEAR(r.pool_waiting, 2);
}

/* epp-legacy.txt: GAIE names only, two pools, no flow control and no
 * running-requests average: a = 2 x 1.5, b = 1 x 4 -> 7 waiting; KV
 * 2 x 30 + 1 x 60 = 120 %; running unknown (not 0). */
static void test_epp_falls_back_to_the_old_names_and_pairs_pools(void **state) {
    (void)state;
    engine_reading_t r = epp_fixture("", "epp-legacy.txt");
    assert_true(r.has_pool && r.has_waiting && r.has_kv);
    assert_false(r.has_running);
    NEAR(r.waiting, 0);
    NEAR(r.pool_ready, 3);
    NEAR(r.pool_waiting, 7);
    NEAR(r.pool_kv_percent, 120);
    NEAR(r.pool_running, 0);
    /* pairing is by name, not by order */
    r = epp_text("", "inference_pool_average_queue_size{name=\"b\"} 4\n"
                     "inference_pool_ready_pods{name=\"a\"} 2\n"
                     "inference_pool_average_queue_size{name=\"a\"} 1.5\n"
                     "inference_pool_ready_pods{name=\"b\"} 1\n");
    NEAR(r.pool_waiting, 7);
    /* the flow-control queue falls back on its own: old queue, new pools */
    r = epp_text("", "inference_extension_flow_control_queue_size{model_name=\"m\"} 5\n"
                     "llm_d_epp_ready_endpoints{name=\"a\"} 1\n"
                     "llm_d_epp_average_queue_size{name=\"a\"} 2\n");
    NEAR(r.waiting, 5);
    NEAR(r.pool_waiting, 2);
}

/* epp-zero.txt: no model server is ready, 4 requests wait in the
 * flow-control queue. The stale averages count for nothing. */
static void test_epp_scale_from_zero_reads_the_gateway_queue(void **state) {
    (void)state;
    engine_reading_t r = epp_fixture("", "epp-zero.txt");
    assert_true(r.has_pool && r.has_waiting && r.has_running && r.has_kv);
    NEAR(r.waiting, 4);
    NEAR(r.pool_ready, 0);
    NEAR(r.pool_waiting, 0);
    NEAR(r.pool_running, 0);
    NEAR(r.pool_kv_percent, 0);
    /* with no endpoint ready an average the EPP never set is not needed */
    r = epp_text("", "llm_d_epp_ready_endpoints{name=\"a\"} 0\n");
    assert_true(r.has_waiting && r.has_running && r.has_kv);
    NEAR(r.waiting + r.pool_waiting + r.pool_running + r.pool_kv_percent, 0);
    /* flow-control series appear with the first request queued: absent
     * with the pool gauges present is 0 waiting, a known 0 */
    r = epp_text("", "llm_d_epp_ready_endpoints{name=\"a\"} 2\n"
                     "llm_d_epp_average_queue_size{name=\"a\"} 0\n"
                     "llm_d_epp_average_running_requests{name=\"a\"} 1\n"
                     "llm_d_epp_average_kv_cache_utilization{name=\"a\"} 0.1\n");
    assert_true(r.has_waiting);
    NEAR(r.waiting, 0);
    NEAR(r.pool_running, 2);
    NEAR(r.pool_kv_percent, 20);
    /* a flow-control queue without pool gauges: waiting known, the
     * pool's running and KV not */
    r = epp_text("", "llm_d_epp_flow_control_queue_size{model_name=\"m\"} 3\n");
    assert_true(r.has_waiting);
    assert_false(r.has_pool || r.has_running || r.has_kv);
    NEAR(r.waiting, 3);
}

/* model filters the flow-control queue on model_name; the pool gauges have
 * no model label and are read whole. */
static void test_epp_model_filters_the_flow_queue_only(void **state) {
    (void)state;
    engine_reading_t r = epp_fixture("llama", "epp.txt");
    NEAR(r.waiting, 5);
    NEAR(r.pool_waiting, 10);
    r = epp_fixture("mistral", "epp.txt");
    NEAR(r.waiting, 1);
    NEAR(r.pool_running, 24);
    r = epp_fixture("other", "epp.txt");
    assert_true(r.has_waiting); /* the pool gauges are there: 0 at the gateway */
    NEAR(r.waiting, 0);
    NEAR(r.pool_waiting, 10);
}

/* Missing pieces: an average with ready endpoints but no series is
 * unknown; an average for a pool without a ready count cannot become a
 * count; a scrape of neither family reads as nothing (the evaluation
 * then names the EPP metrics). */
static void test_epp_missing_metrics(void **state) {
    (void)state;
    engine_reading_t r = epp_text("", "llm_d_epp_ready_endpoints{name=\"a\"} 2\n"
                                      "llm_d_epp_average_running_requests{name=\"a\"} 3\n");
    assert_true(r.has_pool && r.has_running);
    assert_false(r.has_waiting || r.has_kv);
    NEAR(r.pool_running, 6);
    NEAR(r.pool_waiting, 0);
    r = epp_fixture("", "vllm.txt");
    assert_false(r.has_waiting || r.has_running || r.has_kv || r.has_pool);
    assert_int_equal(r.series, 0);
    /* and the EPP's names mean nothing to the other engines */
    size_t n;
    char *text = ts_engine_fixture("epp.txt", &n);
    assert_int_equal(engine_reading_parse(ENGINE_VLLM, "", text, n, PROM_FORMAT_TEXT, &r, NULL, 0),
                     0);
    free(text);
    assert_false(r.has_waiting || r.has_pool);
    assert_non_null(strstr(epp_error("llm_d_epp_average_queue_size{name=\"a\"} 1\n"
                                     "llm_d_epp_ready_endpoints{name=\"b\"} 1\n"),
                           "llm_d_epp_average_queue_size{name=\"a\"} has no "
                           "llm_d_epp_ready_endpoints series for its pool"));
}

static void test_epp_bad_samples_name_the_metric(void **state) {
    (void)state;
    assert_string_equal(epp_error("llm_d_epp_flow_control_queue_size{model_name=\"m\"} NaN\n"),
                        "llm_d_epp_flow_control_queue_size is nan: no usable value");
    assert_string_equal(epp_error("llm_d_epp_ready_endpoints{name=\"a\"} +Inf\n"),
                        "llm_d_epp_ready_endpoints is inf: no usable value");
    assert_string_equal(epp_error("inference_pool_average_queue_size{name=\"a\"} -1\n"),
                        "inference_pool_average_queue_size is -1: a count cannot be negative");
    /* a filtered-out series is not read, so it cannot fail the scrape */
    engine_reading_t r = epp_text("m", "llm_d_epp_flow_control_queue_size{model_name=\"x\"} NaN\n"
                                       "llm_d_epp_flow_control_queue_size{model_name=\"m\"} 2\n");
    NEAR(r.waiting, 2);
    /* one series per pool: a second one (an average) cannot be summed */
    assert_non_null(strstr(epp_error("llm_d_epp_ready_endpoints{name=\"a\",x=\"1\"} 1\n"
                                     "llm_d_epp_ready_endpoints{name=\"a\",x=\"2\"} 1\n"),
                           "two series for inference pool \"a\""));
    /* counts that overflow a double when paired are unknown, not huge */
    assert_non_null(strstr(epp_error("llm_d_epp_ready_endpoints{name=\"a\"} 1e200\n"
                                     "llm_d_epp_average_queue_size{name=\"a\"} 1e200\n"),
                           "summed over its series is not finite"));
}

/* At most 16 pools in one scrape; the 17th is an error naming the limit. */
static void test_epp_pool_limit(void **state) {
    (void)state;
    char text[4096];
    size_t o = 0;
    for (int i = 0; i < 16; i++)
        o += (size_t)snprintf(text + o, sizeof text - o,
                              "llm_d_epp_ready_endpoints{name=\"p%d\"} 1\n"
                              "llm_d_epp_average_queue_size{name=\"p%d\"} 1\n",
                              i, i);
    engine_reading_t r = epp_text("", text);
    NEAR(r.pool_ready, 16);
    NEAR(r.pool_waiting, 16);
    snprintf(text + o, sizeof text - o, "llm_d_epp_ready_endpoints{name=\"p16\"} 1\n");
    assert_non_null(strstr(epp_error(text), "more than 16 inference pools in one scrape"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_epp_new_names_win_and_nothing_counts_twice),
        cmocka_unit_test(test_epp_falls_back_to_the_old_names_and_pairs_pools),
        cmocka_unit_test(test_epp_scale_from_zero_reads_the_gateway_queue),
        cmocka_unit_test(test_epp_model_filters_the_flow_queue_only),
        cmocka_unit_test(test_epp_missing_metrics),
        cmocka_unit_test(test_epp_bad_samples_name_the_metric),
        cmocka_unit_test(test_epp_pool_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
