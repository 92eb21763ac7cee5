/* test_engine_metrics.c - each engine's fixture scrape (tests/fixtures/engines,
 * values in its README.md) read into the numbers the scaler uses, the model
 * filter, the deprecated vLLM gauge, the completed-request and token
 * counters (text and OpenMetrics; unknown, never 0, when missing or not a
 * count), and the generic Prometheus queue. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/err.h"
#include "core/strbuf.h"
#include "support/test_support.h"
#include "core/trigger_config.h"
#include "sources/engine_metrics.h"

static engine_reading_t read_fixture_fmt(engine_t e, const char *model, const char *name,
                                         prom_format_t fmt) {
    size_t n;
    char *text = ts_engine_fixture(name, &n);
    engine_reading_t r;
    char err[300];
    int rc = engine_reading_parse(e, model, text, n, fmt, &r, err, sizeof err);
    if (rc)
        fail_msg("%s: %s", name, err);
    free(text);
    return r;
}

static engine_reading_t read_fixture(engine_t e, const char *model, const char *name) {
    return read_fixture_fmt(e, model, name, PROM_FORMAT_TEXT);
}

/* An inline scrape that must parse. */
static engine_reading_t read_text(engine_t e, const char *text) {
    engine_reading_t r;
    char err[300];
    int rc = engine_reading_parse(e, "", text, strlen(text), PROM_FORMAT_TEXT, &r, err, sizeof err);
    if (rc)
        fail_msg("%s", err);
    return r;
}

#define NEAR(a, b) assert_true((a) > (b)-1e-9 && (a) < (b) + 1e-9)

static void test_vllm_v1_sums_both_engines(void **state) {
    (void)state;
    engine_reading_t r = read_fixture(ENGINE_VLLM, "", "vllm.txt");
    assert_true(r.has_waiting && r.has_running && r.has_kv);
    assert_false(r.has_triton);
    NEAR(r.waiting, 7);
    NEAR(r.running, 5);
    NEAR(r.kv_percent, 60);
    assert_int_equal(r.series, 6);
}

static void test_vllm_model_filter(void **state) {
    (void)state;
    engine_reading_t r = read_fixture(ENGINE_VLLM, "llama-3.1-8b", "vllm.txt");
    NEAR(r.waiting, 7);
    assert_string_equal(r.other_models, "");
    r = read_fixture(ENGINE_VLLM, "other-model", "vllm.txt");
    assert_false(r.has_waiting || r.has_running || r.has_kv);
    assert_int_equal(r.series, 0);
    /* what the page does have, for the error that says so */
    assert_string_equal(r.other_models, "llama-3.1-8b");
    assert_false(r.other_models_more);
}

/* Many model names: as many as fit, distinct, then "more". */
static void test_other_model_names_are_bounded(void **state) {
    (void)state;
    strbuf_t page;
    strbuf_init(&page);
    for (int i = 0; i < 40; i++)
        for (int k = 0; k < 2; k++)
            strbuf_printf(&page, "vllm:num_requests_waiting{model_name=\"model-%02d\"} 1\n", i);
    engine_reading_t r;
    char err[256];
    assert_int_equal(engine_reading_parse(ENGINE_VLLM, "x", page.s, page.len, PROM_FORMAT_TEXT, &r,
                                          err, sizeof err),
                     0);
    assert_true(strncmp(r.other_models, "model-00, model-01, model-02", 28) == 0);
    assert_true(r.other_models_more);
    assert_true(strlen(r.other_models) < sizeof r.other_models);
    strbuf_free(&page);
}

static void test_vllm_v0_falls_back_to_the_deprecated_cache_gauge(void **state) {
    (void)state;
    engine_reading_t r = read_fixture(ENGINE_VLLM, "", "vllm-legacy.txt");
    assert_true(r.has_kv);
    NEAR(r.kv_percent, 50);
    NEAR(r.waiting, 6);
    NEAR(r.running, 4);
}

static void test_triton_sums_models(void **state) {
    (void)state;
    engine_reading_t r = read_fixture(ENGINE_TRITON, "", "triton.txt");
    assert_true(r.has_waiting && r.has_triton);
    assert_false(r.has_running || r.has_kv);
    NEAR(r.waiting, 6);
    NEAR(r.success, 1000);
    NEAR(r.queue_us, 8000000);
}

static void test_tgi_and_sglang(void **state) {
    (void)state;
    engine_reading_t r = read_fixture(ENGINE_TGI, "", "tgi.txt");
    NEAR(r.waiting, 4);
    NEAR(r.running, 2);
    assert_false(r.has_kv);
    r = read_fixture(ENGINE_SGLANG, "", "sglang.txt");
    NEAR(r.waiting, 9);
    NEAR(r.running, 3);
    NEAR(r.kv_percent, 42);
}

static void test_wrong_engine_reads_nothing(void **state) {
    (void)state;
    engine_reading_t r = read_fixture(ENGINE_SGLANG, "", "vllm.txt");
    assert_false(r.has_waiting || r.has_running || r.has_kv || r.has_triton);
    assert_false(r.has_completed || r.has_tokens);
}

/* ---- completed-request and token counters ---- */

static void assert_vllm_v1_counters(engine_reading_t r) {
    assert_true(r.has_completed && r.has_tokens);
    NEAR(r.completed_total, 166); /* stop + length, both engines */
    NEAR(r.prompt_tokens_total, 200000);
    NEAR(r.generation_tokens_total, 50000);
}

static void test_vllm_counters_in_text_and_openmetrics(void **state) {
    (void)state;
    engine_reading_t r = read_fixture(ENGINE_VLLM, "", "vllm.txt");
    assert_vllm_v1_counters(r);
    /* OpenMetrics names the family without _total and adds *_created
     * samples; the sample names read are the same, the gauges too. */
    r = read_fixture_fmt(ENGINE_VLLM, "", "vllm-openmetrics.txt", PROM_FORMAT_OPENMETRICS);
    assert_vllm_v1_counters(r);
    NEAR(r.waiting, 7);
    NEAR(r.running, 5);
    NEAR(r.kv_percent, 60);
    assert_int_equal(r.series, 6); /* the counters are not counted */
    r = read_fixture(ENGINE_VLLM, "llama-3.1-8b", "vllm.txt");
    assert_vllm_v1_counters(r);
    r = read_fixture(ENGINE_VLLM, "other-model", "vllm.txt");
    assert_false(r.has_completed || r.has_tokens);
    NEAR(r.completed_total, 0);
}

static void test_vllm_v0_tokens_without_completions(void **state) {
    (void)state;
    engine_reading_t r = read_fixture(ENGINE_VLLM, "", "vllm-legacy.txt");
    assert_true(r.has_tokens);
    NEAR(r.prompt_tokens_total, 50000);
    NEAR(r.generation_tokens_total, 25000);
    assert_false(r.has_completed); /* the file has no vllm:request_success_total */
    NEAR(r.completed_total, 0);
}

static void test_triton_completions_and_no_tokens(void **state) {
    (void)state;
    engine_reading_t r = read_fixture(ENGINE_TRITON, "", "triton.txt");
    assert_true(r.has_completed);
    NEAR(r.completed_total, 1000);
    assert_false(r.has_tokens);
    r = read_fixture(ENGINE_TRITON, "bert_onnx", "triton.txt");
    NEAR(r.completed_total, 400);
}

static void test_tgi_counters_from_histogram_sums(void **state) {
    (void)state;
    engine_reading_t r = read_fixture(ENGINE_TGI, "", "tgi.txt");
    assert_true(r.has_completed && r.has_tokens);
    NEAR(r.completed_total, 1190);           /* tgi_request_success, not tgi_request_count */
    NEAR(r.prompt_tokens_total, 597500);     /* tgi_request_input_length_sum */
    NEAR(r.generation_tokens_total, 238000); /* tgi_request_generated_tokens_sum */
    NEAR(r.waiting, 4);
}

static void test_sglang_counters(void **state) {
    (void)state;
    engine_reading_t r = read_fixture(ENGINE_SGLANG, "", "sglang.txt");
    assert_true(r.has_completed && r.has_tokens);
    NEAR(r.completed_total, 320);
    NEAR(r.prompt_tokens_total, 640000);
    NEAR(r.generation_tokens_total, 160000);
    r = read_fixture(ENGINE_SGLANG, "qwen2.5-7b-instruct", "sglang.txt");
    NEAR(r.completed_total, 320);
    /* The same counters as OpenMetrics (prometheus_client): family names
     * without _total, *_created samples beside them. */
    const char *om = "# HELP sglang:num_requests Number of requests processed.\n"
                     "# TYPE sglang:num_requests counter\n"
                     "sglang:num_requests_total{model_name=\"q\"} 12.0\n"
                     "sglang:num_requests_created{model_name=\"q\"} 1.7330688e+09\n"
                     "# HELP sglang:prompt_tokens Number of prefill tokens processed.\n"
                     "# TYPE sglang:prompt_tokens counter\n"
                     "sglang:prompt_tokens_total{model_name=\"q\"} 1200.0\n"
                     "sglang:prompt_tokens_created{model_name=\"q\"} 1.7330688e+09\n"
                     "# HELP sglang:generation_tokens Number of generation tokens processed.\n"
                     "# TYPE sglang:generation_tokens counter\n"
                     "sglang:generation_tokens_total{model_name=\"q\"} 300.0\n"
                     "sglang:generation_tokens_created{model_name=\"q\"} 1.7330688e+09\n"
                     "# EOF\n";
    char err[300];
    assert_int_equal(engine_reading_parse(ENGINE_SGLANG, "q", om, strlen(om),
                                          PROM_FORMAT_OPENMETRICS, &r, err, sizeof err),
                     0);
    assert_true(r.has_completed && r.has_tokens);
    NEAR(r.completed_total, 12);
    NEAR(r.prompt_tokens_total, 1200);
    NEAR(r.generation_tokens_total, 300);
    assert_false(r.has_waiting);
}

static void test_missing_counters_are_unknown_not_an_error(void **state) {
    (void)state;
    /* An engine too old to export them (SGLang 0.3.6: token counters, no
     * sglang:num_requests_total): the gauges and tokens, no error, and
     * completions unknown, not 0 (it has served requests). */
    engine_reading_t r = read_text(ENGINE_SGLANG, "sglang:num_queue_reqs 3\n"
                                                  "sglang:num_running_reqs 1\n"
                                                  "sglang:prompt_tokens_total 900\n"
                                                  "sglang:generation_tokens_total 300\n");
    assert_true(r.has_waiting && r.has_running && r.has_tokens && r.served);
    assert_false(r.has_completed);
    NEAR(r.completed_total, 0);
    /* TGI creates its request counters with the first request: a page with
     * its gauges and no counter has completed none yet, a known 0 */
    r = read_text(ENGINE_TGI, "tgi_queue_size 3\ntgi_batch_current_size 1\n");
    assert_true(r.has_waiting && r.has_running && r.has_completed && r.has_tokens);
    NEAR(r.completed_total, 0);
    assert_int_equal(r.first_use_zero, ENGINE_ZERO_COMPLETED | ENGINE_ZERO_TOKENS);
    /* One token counter without the other: the cost is unknown. */
    r = read_text(ENGINE_VLLM, "vllm:num_requests_waiting 2\n"
                               "vllm:prompt_tokens_total 100\n"
                               "vllm:request_success_total{finished_reason=\"stop\"} 4\n");
    assert_true(r.has_completed);
    NEAR(r.completed_total, 4);
    assert_false(r.has_tokens);
    NEAR(r.prompt_tokens_total, 0);
    /* A scrape of counters only: known counters, no gauges. */
    r = read_text(ENGINE_SGLANG, "sglang:num_requests_total 5\n");
    assert_true(r.has_completed);
    assert_false(r.has_waiting || r.has_running || r.has_kv);
    assert_int_equal(r.series, 0);
}

static void test_counter_that_is_not_a_count_is_unknown_and_gauges_stay(void **state) {
    (void)state;
    /* NaN in one finished_reason series: the sum over reasons is unknown,
     * the gauges and the token counters are not. */
    engine_reading_t r =
        read_text(ENGINE_VLLM, "vllm:num_requests_waiting{engine=\"0\"} 3\n"
                               "vllm:num_requests_running{engine=\"0\"} 2\n"
                               "vllm:request_success_total{finished_reason=\"stop\"} 9\n"
                               "vllm:request_success_total{finished_reason=\"abort\"} NaN\n"
                               "vllm:prompt_tokens_total 100\n"
                               "vllm:generation_tokens_total 40\n");
    assert_true(r.has_waiting && r.has_running);
    NEAR(r.waiting, 3);
    NEAR(r.running, 2);
    assert_false(r.has_completed);
    NEAR(r.completed_total, 0);
    assert_true(r.has_tokens);
    NEAR(r.prompt_tokens_total, 100);
    NEAR(r.generation_tokens_total, 40);
    /* +Inf in a TGI token histogram's _sum: the tokens are unknown. */
    r = read_text(ENGINE_TGI, "tgi_queue_size 4\n"
                              "tgi_request_success 10\n"
                              "tgi_request_input_length_sum +Inf\n"
                              "tgi_request_generated_tokens_sum 50\n");
    NEAR(r.waiting, 4);
    assert_true(r.has_completed);
    assert_false(r.has_tokens);
    NEAR(r.generation_tokens_total, 0);
    /* A negative counter is not a count either. */
    r = read_text(ENGINE_SGLANG, "sglang:num_queue_reqs 1\n"
                                 "sglang:num_requests_total -3\n"
                                 "sglang:prompt_tokens_total 10\n"
                                 "sglang:generation_tokens_total -Inf\n");
    NEAR(r.waiting, 1);
    assert_false(r.has_completed || r.has_tokens);
    /* Triton's success counter feeds the rates as before: NaN fails the
     * scrape, as it did before it also counted completions. */
    const char *t = "nv_inference_pending_request_count 1\nnv_inference_request_success NaN\n";
    char err[300];
    assert_int_equal(engine_reading_parse(ENGINE_TRITON, "", t, strlen(t), PROM_FORMAT_TEXT, &r,
                                          err, sizeof err),
                     KGS_EINVAL);
    assert_non_null(strstr(err, "nv_inference_request_success is nan"));
    assert_false(r.has_completed || r.has_waiting);
}

static void test_nan_gauge_is_unknown_not_zero_and_bad_text_fails(void **state) {
    (void)state;
    const char *t = "tgi_queue_size NaN\ntgi_queue_size 3\ntgi_batch_current_size 1\n";
    engine_reading_t r;
    char err[300];
    assert_int_equal(
        engine_reading_parse(ENGINE_TGI, "", t, strlen(t), PROM_FORMAT_TEXT, &r, err, sizeof err),
        KGS_EINVAL);
    assert_non_null(strstr(err, "tgi_queue_size is nan"));
    assert_false(r.has_waiting);
    /* A NaN in a series that is not read does not matter. */
    const char *other = "tgi_request_duration_sum NaN\ntgi_queue_size 3\n";
    assert_int_equal(engine_reading_parse(ENGINE_TGI, "", other, strlen(other), PROM_FORMAT_TEXT,
                                          &r, err, sizeof err),
                     0);
    NEAR(r.waiting, 3);
    const char *bad = "tgi_queue_size{ 3\n";
    assert_int_equal(engine_reading_parse(ENGINE_TGI, "", bad, strlen(bad), PROM_FORMAT_TEXT, &r,
                                          err, sizeof err),
                     KGS_EINVAL);
    assert_true(err[0] != '\0');
    assert_false(r.has_waiting);
}

static void test_generic_queue_with_matchers(void **state) {
    (void)state;
    demand_config_t d;
    memset(&d, 0, sizeof d);
    strcpy(d.demand_metric, "gw_queue");
    const char *t = "gw_queue{pool=\"gpu\",model=\"a\"} 4\n"
                    "gw_queue{pool=\"gpu\",model=\"b\"} 5\n"
                    "gw_queue{pool=\"cpu\"} 100\n"
                    "gw_queue_total 1000\n";
    double sum;
    unsigned matched;
    char err[300];
    assert_int_equal(
        demand_value_parse(&d, t, strlen(t), PROM_FORMAT_TEXT, &sum, &matched, err, sizeof err), 0);
    NEAR(sum, 109);
    assert_int_equal(matched, 3);
    d.matcher_count = 2;
    strcpy(d.matchers[0].name, "pool");
    strcpy(d.matchers[0].value, "gpu");
    strcpy(d.matchers[1].name, "model");
    strcpy(d.matchers[1].value, "b");
    d.matchers[1].negate = true;
    assert_int_equal(
        demand_value_parse(&d, t, strlen(t), PROM_FORMAT_TEXT, &sum, &matched, err, sizeof err), 0);
    NEAR(sum, 4);
    assert_int_equal(matched, 1);
    /* An absent label equals "" (PromQL). */
    d.matcher_count = 1;
    strcpy(d.matchers[0].name, "model");
    strcpy(d.matchers[0].value, "");
    d.matchers[0].negate = false;
    assert_int_equal(
        demand_value_parse(&d, t, strlen(t), PROM_FORMAT_TEXT, &sum, &matched, err, sizeof err), 0);
    NEAR(sum, 100);
    /* +Inf in a matching sample: the queue is unknown. */
    const char *inf = "gw_queue{pool=\"gpu\"} +Inf\n";
    d.matcher_count = 0;
    assert_int_equal(
        demand_value_parse(&d, inf, strlen(inf), PROM_FORMAT_TEXT, &sum, &matched, err, sizeof err),
        KGS_EINVAL);
    assert_non_null(strstr(err, "gw_queue is inf"));
}

/* Finite samples that sum past the largest double, and negative counts:
 * errors naming the metric, never +Inf sent on as INT64_MAX or a queue of -5. */
static void test_overflowing_sums_and_negative_counts_are_errors(void **state) {
    (void)state;
    engine_reading_t r;
    char err[300];
    static const struct {
        engine_t e;
        const char *text, *says;
    } cases[] = {
        {ENGINE_VLLM,
         "vllm:num_requests_waiting{engine=\"0\"} 1e308\n"
         "vllm:num_requests_waiting{engine=\"1\"} 1e308\n",
         "the waiting-requests gauge summed over its series is not finite"},
        {ENGINE_VLLM,
         "vllm:num_requests_running{engine=\"0\"} 1.7e308\n"
         "vllm:num_requests_running{engine=\"1\"} 1.7e308\n",
         "the running-requests gauge summed"},
        {ENGINE_VLLM, "vllm:kv_cache_usage_perc 1e307\n", "the KV-cache usage gauge summed"},
        {ENGINE_TRITON,
         "nv_inference_queue_duration_us{model=\"a\"} 1e308\n"
         "nv_inference_queue_duration_us{model=\"b\"} 1e308\n",
         "nv_inference_queue_duration_us summed"},
        {ENGINE_VLLM, "vllm:num_requests_waiting -5\n",
         "vllm:num_requests_waiting is -5: a count cannot be negative"},
        {ENGINE_TGI, "tgi_batch_current_size -1\n", "tgi_batch_current_size is -1"},
        {ENGINE_TRITON, "nv_inference_request_success{model=\"a\"} -3\n",
         "nv_inference_request_success is -3"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        err[0] = '\0';
        int rc = engine_reading_parse(cases[i].e, "", cases[i].text, strlen(cases[i].text),
                                      PROM_FORMAT_TEXT, &r, err, sizeof err);
        if (rc != KGS_EINVAL || !strstr(err, cases[i].says))
            fail_msg("%s: %d \"%s\", want \"%s\"", cases[i].text, rc, err, cases[i].says);
        assert_false(r.has_waiting || r.has_running || r.has_kv || r.has_triton);
    }
    /* -0 is 0, not negative */
    const char *z = "vllm:num_requests_waiting -0\n";
    assert_int_equal(
        engine_reading_parse(ENGINE_VLLM, "", z, strlen(z), PROM_FORMAT_TEXT, &r, err, sizeof err),
        0);
    NEAR(r.waiting, 0);

    demand_config_t d;
    memset(&d, 0, sizeof d);
    strcpy(d.demand_metric, "q");
    double sum = -1;
    unsigned matched = 7;
    const char *huge = "q{a=\"1\"} 1e308\nq{a=\"2\"} 1e308\n";
    assert_int_equal(demand_value_parse(&d, huge, strlen(huge), PROM_FORMAT_TEXT, &sum, &matched,
                                        err, sizeof err),
                     KGS_EINVAL);
    assert_string_equal(err, "q summed over 2 samples is not finite (the samples overflow)");
    assert_true(sum == 0 && matched == 0);
    const char *neg = "q{a=\"1\"} 3\nq{a=\"2\"} -5\n";
    assert_int_equal(
        demand_value_parse(&d, neg, strlen(neg), PROM_FORMAT_TEXT, &sum, &matched, err, sizeof err),
        KGS_EINVAL);
    assert_string_equal(err, "q is -5: a queue length cannot be negative");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vllm_v1_sums_both_engines),
        cmocka_unit_test(test_vllm_model_filter),
        cmocka_unit_test(test_other_model_names_are_bounded),
        cmocka_unit_test(test_vllm_v0_falls_back_to_the_deprecated_cache_gauge),
        cmocka_unit_test(test_triton_sums_models),
        cmocka_unit_test(test_tgi_and_sglang),
        cmocka_unit_test(test_wrong_engine_reads_nothing),
        cmocka_unit_test(test_vllm_counters_in_text_and_openmetrics),
        cmocka_unit_test(test_vllm_v0_tokens_without_completions),
        cmocka_unit_test(test_triton_completions_and_no_tokens),
        cmocka_unit_test(test_tgi_counters_from_histogram_sums),
        cmocka_unit_test(test_sglang_counters),
        cmocka_unit_test(test_missing_counters_are_unknown_not_an_error),
        cmocka_unit_test(test_counter_that_is_not_a_count_is_unknown_and_gauges_stay),
        cmocka_unit_test(test_nan_gauge_is_unknown_not_zero_and_bad_text_fails),
        cmocka_unit_test(test_generic_queue_with_matchers),
        cmocka_unit_test(test_overflowing_sums_and_negative_counts_are_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
