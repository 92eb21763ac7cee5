/* test_engine_metrics.c - each engine's fixture scrape (tests/fixtures/engines,
 * values in its README.md) read into the numbers the scaler uses, the model
 * filter, the deprecated vLLM gauge, and the generic Prometheus queue. */
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

static char *load(const char *name, size_t *len) {
    char path[4096];
    const char *src = getenv("KGS_SOURCE_DIR");
    assert_non_null(src);
    snprintf(path, sizeof path, "%s/tests/fixtures/engines/%s", src, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static engine_reading_t read_fixture(engine_t e, const char *model, const char *name) {
    size_t n;
    char *text = load(name, &n);
    engine_reading_t r;
    char err[300];
    int rc = engine_reading_parse(e, model, text, n, PROM_FORMAT_TEXT, &r, err, sizeof err);
    if (rc)
        fail_msg("%s: %s", name, err);
    free(text);
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
    r = read_fixture(ENGINE_VLLM, "other-model", "vllm.txt");
    assert_false(r.has_waiting || r.has_running || r.has_kv);
    assert_int_equal(r.series, 0);
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vllm_v1_sums_both_engines),
        cmocka_unit_test(test_vllm_model_filter),
        cmocka_unit_test(test_vllm_v0_falls_back_to_the_deprecated_cache_gauge),
        cmocka_unit_test(test_triton_sums_models),
        cmocka_unit_test(test_tgi_and_sglang),
        cmocka_unit_test(test_wrong_engine_reads_nothing),
        cmocka_unit_test(test_nan_gauge_is_unknown_not_zero_and_bad_text_fails),
        cmocka_unit_test(test_generic_queue_with_matchers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
