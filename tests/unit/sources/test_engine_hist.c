/* test_engine_hist.c - the latency histograms of each engine's latency
 * fixture (tests/fixtures/engines/<engine>-latency.txt, values in its README.md)
 * merged over series, quantiles computed by hand; the model filter, the
 * older TPOT name, series of different bounds, broken histograms, and that
 * a trigger without latency targets reads none of it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/err.h"
#include "support/test_support.h"
#include "sources/engine_metrics.h"
#include "sources/hist_window.h"

#define NEAR(a, b) assert_true((a) > (b)-1e-9 && (a) < (b) + 1e-9)
#define ALL ((1u << SLO_SIGNAL_COUNT) - 1)

static engine_hists_t h; /* large: off the stack */

static engine_reading_t parse_fixture(engine_t e, const char *model, unsigned want,
                                      const char *name) {
    size_t n;
    char *text = ts_engine_fixture(name, &n);
    engine_reading_t r;
    char err[300];
    int rc = engine_reading_parse_full(e, model, NULL, want, text, n, PROM_FORMAT_TEXT, &r, &h, err,
                                       sizeof err);
    if (rc)
        fail_msg("%s: %s", name, err);
    free(text);
    return r;
}

static double quantile(int s, double q) {
    double v = -1;
    assert_true(hist_quantile(&h.layout[s], &h.counts[s], q, &v));
    return v;
}

static void test_vllm_latency_merges_both_engines(void **state) {
    (void)state;
    engine_reading_t r = parse_fixture(ENGINE_VLLM, "", ALL, "vllm-latency.txt");
    assert_int_equal(h.mask, ALL);
    assert_int_equal(r.hist_mask, ALL);
    NEAR(r.waiting, 7);
    NEAR(r.running, 5);
    /* TTFT: vLLM's 22 bounds; merged le=0.5 80, le=0.75 92, le=1.0 100 */
    assert_int_equal(h.layout[SLO_TTFT].n, 22);
    NEAR(h.layout[SLO_TTFT].le[9], 0.5);
    NEAR(h.counts[SLO_TTFT].bucket[8], 0);
    NEAR(h.counts[SLO_TTFT].bucket[9], 80);
    NEAR(h.counts[SLO_TTFT].bucket[10], 92);
    NEAR(h.counts[SLO_TTFT].bucket[11], 100);
    NEAR(h.counts[SLO_TTFT].count, 100);
    NEAR(h.counts[SLO_TTFT].sum, 16.2 + 22.2);
    NEAR(quantile(SLO_TTFT, 0.5), 0.25 + 0.25 * 50 / 80);          /* 0.40625 */
    NEAR(quantile(SLO_TTFT, 0.9), 0.5 + 0.25 * (90 - 80) / 12.0);  /* 0.7083 */
    NEAR(quantile(SLO_TTFT, 0.99), 0.75 + 0.25 * (99 - 92) / 8.0); /* 0.96875 */
    /* ITL: inter_token_latency (the older name beside it is not added) */
    assert_int_equal(h.layout[SLO_ITL].n, 19);
    NEAR(h.counts[SLO_ITL].count, 200);
    NEAR(quantile(SLO_ITL, 0.9), 0.05 + 0.025 * 80 / 100); /* 0.07 */
    /* TPOT per request: request_time_per_output_token, 40 x 0.04 and
     * 60 x 0.06: le=0.05 40, le=0.075 100 */
    NEAR(h.counts[SLO_TPOT].count, 100);
    NEAR(quantile(SLO_TPOT, 0.9), 0.05 + 0.025 * 50 / 60);
    /* E2E: 40 in (2, 2.5], 60 in (2.5, 5] */
    assert_int_equal(h.layout[SLO_E2E].n, 21);
    NEAR(quantile(SLO_E2E, 0.9), 2.5 + 2.5 * 50 / 60); /* 4.583 */
    /* queue: engine 1 observed none; 90 <= 0.3, 10 in (0.3, 0.5] */
    NEAR(quantile(SLO_QUEUE, 0.9), 0.3);
    NEAR(quantile(SLO_QUEUE, 0.99), 0.3 + 0.2 * 9 / 10); /* 0.48 */
    assert_true(h.has_start);
    assert_true(h.start_time_s == 1733068800.0);
}

static void test_only_wanted_signals_are_read(void **state) {
    (void)state;
    parse_fixture(ENGINE_VLLM, "", 1u << SLO_TTFT, "vllm-latency.txt");
    assert_int_equal(h.mask, 1u << SLO_TTFT);
    assert_int_equal(h.layout[SLO_E2E].n, 0);
    /* no latency target: engine_reading_parse reads no histogram at all */
    size_t n;
    char *text = ts_engine_fixture("vllm-latency.txt", &n);
    engine_reading_t r;
    assert_int_equal(engine_reading_parse(ENGINE_VLLM, "", text, n, PROM_FORMAT_TEXT, &r, NULL, 0),
                     0);
    assert_int_equal(r.hist_mask, 0);
    NEAR(r.waiting, 7);
    free(text);
}

static void test_model_filter(void **state) {
    (void)state;
    parse_fixture(ENGINE_VLLM, "other-model", ALL, "vllm-latency.txt");
    assert_int_equal(h.mask, 0); /* absent: unknown later, not an error */
    parse_fixture(ENGINE_VLLM, "llama-3.1-8b", ALL, "vllm-latency.txt");
    assert_int_equal(h.mask, ALL);
    /* SGLang's queue time carries dp_rank alone: it is the server's */
    parse_fixture(ENGINE_SGLANG, "qwen2.5-7b-instruct", ALL, "sglang-latency.txt");
    assert_int_equal(h.mask, ALL & ~(1u << SLO_TPOT));
}

static void test_sglang_tgi_triton(void **state) {
    (void)state;
    /* SGLang exports no per-request TPOT: it is lacking (the engine has
     * served requests), its per-token latency is the itl signal */
    engine_reading_t r = parse_fixture(ENGINE_SGLANG, "", ALL, "sglang-latency.txt");
    assert_int_equal(h.mask, ALL & ~(1u << SLO_TPOT));
    assert_int_equal(r.hist_lacking, 1u << SLO_TPOT);
    assert_int_equal(h.layout[SLO_QUEUE].n, 40); /* 0.0 ... 3000: the most read */
    NEAR(quantile(SLO_TTFT, 0.9), 0.6);
    NEAR(quantile(SLO_TTFT, 0.99), 1 + 1 * (19.8 - 18) / 2); /* 1.9 */
    NEAR(quantile(SLO_ITL, 0.9), 0.015);
    NEAR(quantile(SLO_ITL, 0.99), 0.04 + 0.02 * 90 / 100); /* 0.058 */
    NEAR(quantile(SLO_QUEUE, 0.5), 0.01 + 0.04 * 10 / 19);
    /* TGI: no TTFT, unlabelled series, Rust number format */
    r = parse_fixture(ENGINE_TGI, "", ALL, "tgi-latency.txt");
    assert_int_equal(h.mask, ALL & ~(1u << SLO_TTFT | 1u << SLO_ITL));
    NEAR(h.counts[SLO_E2E].count, 20);
    assert_int_equal(h.layout[SLO_E2E].n, 35);
    NEAR(r.waiting, 4);
    assert_false(h.has_start);
    /* Triton: milliseconds become seconds */
    parse_fixture(ENGINE_TRITON, "llama3_trtllm", ALL, "triton-latency.txt");
    assert_int_equal(h.mask, 1u << SLO_TTFT);
    NEAR(h.layout[SLO_TTFT].le[0], 0.1);
    NEAR(h.layout[SLO_TTFT].le[3], 5);
    NEAR(h.counts[SLO_TTFT].sum, 78);
    NEAR(quantile(SLO_TTFT, 0.9), 2.0);
    NEAR(quantile(SLO_TTFT, 0.5), 0.1 + 0.4 * 50 / 60);
}

static int parse_text(engine_t e, const char *text, char *err, size_t errlen) {
    engine_reading_t r;
    return engine_reading_parse_full(e, "", NULL, ALL, text, strlen(text), PROM_FORMAT_TEXT, &r, &h,
                                     err, errlen);
}

static void test_older_itl_name_and_errors(void **state) {
    (void)state;
    char err[300] = "";
    assert_int_equal(parse_text(ENGINE_VLLM,
                                "vllm:time_per_output_token_seconds_bucket{le=\"0.05\"} 3\n"
                                "vllm:time_per_output_token_seconds_bucket{le=\"+Inf\"} 4\n"
                                "vllm:time_per_output_token_seconds_sum 0.5\n",
                                err, sizeof err),
                     0);
    assert_int_equal(h.mask, 1u << SLO_ITL); /* the older per-token name */
    NEAR(h.counts[SLO_ITL].count, 4);
    /* two engines with different bounds in one scrape */
    assert_int_equal(
        parse_text(ENGINE_VLLM,
                   "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.5\"} 3\n"
                   "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"+Inf\"} 4\n"
                   "vllm:time_to_first_token_seconds_bucket{engine=\"1\",le=\"1\"} 3\n"
                   "vllm:time_to_first_token_seconds_bucket{engine=\"1\",le=\"+Inf\"} 4\n",
                   err, sizeof err),
        KGS_EINVAL);
    assert_non_null(strstr(err, "vllm:time_to_first_token_seconds: its series have different "
                                "bucket bounds"));
    assert_int_equal(h.mask, 0);
    /* a bucket below the one under it */
    assert_int_equal(parse_text(ENGINE_SGLANG,
                                "sglang:e2e_request_latency_seconds_bucket{le=\"1\"} 5\n"
                                "sglang:e2e_request_latency_seconds_bucket{le=\"2\"} 4\n"
                                "sglang:e2e_request_latency_seconds_bucket{le=\"+Inf\"} 5\n",
                                err, sizeof err),
                     KGS_EINVAL);
    assert_non_null(strstr(err, "sglang:e2e_request_latency_seconds: "));
    assert_non_null(strstr(err, "cumulative"));
    /* no +Inf bucket; an le that is not a number; a negative count */
    assert_int_equal(
        parse_text(ENGINE_TGI, "tgi_request_duration_bucket{le=\"1\"} 5\n", err, sizeof err),
        KGS_EINVAL);
    assert_non_null(strstr(err, "tgi_request_duration: "));
    assert_int_equal(
        parse_text(ENGINE_TGI, "tgi_request_duration_bucket{le=\"x\"} 5\n", err, sizeof err),
        KGS_EINVAL);
    assert_non_null(strstr(err, "le label"));
    assert_int_equal(
        parse_text(ENGINE_TGI, "tgi_request_duration_bucket{le=\"+Inf\"} -1\n", err, sizeof err),
        KGS_EINVAL);
    /* the same broken histogram is not read by a trigger without targets */
    engine_reading_t r;
    const char *t = "tgi_queue_size 2\ntgi_request_duration_bucket{le=\"x\"} 5\n";
    assert_int_equal(
        engine_reading_parse(ENGINE_TGI, "", t, strlen(t), PROM_FORMAT_TEXT, &r, err, sizeof err),
        0);
    NEAR(r.waiting, 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vllm_latency_merges_both_engines),
        cmocka_unit_test(test_only_wanted_signals_are_read),
        cmocka_unit_test(test_model_filter),
        cmocka_unit_test(test_sglang_tgi_triton),
        cmocka_unit_test(test_older_itl_name_and_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
