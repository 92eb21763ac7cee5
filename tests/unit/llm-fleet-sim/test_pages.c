/* test_pages.c - the pages llm-fleet-sim serves read as the scaler reads a
 * real vLLM replica and a real llm-d gateway (sources/engine_metrics.c and
 * the Prometheus parser), and are written in their exporters' formats. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pages.h"
#include "sources/engine_metrics.h"
#include "sources/prom_parse.h"

static void test_pages_python_float_matches_prometheus_client(void **state) {
    (void)state;
    char b[64];
    /* prometheus_client's floatToGoString: repr(), Go's exponent above 1e6 */
    assert_string_equal(pages_python_float(b, sizeof b, 0), "0.0");
    assert_string_equal(pages_python_float(b, sizeof b, 2), "2.0");
    assert_string_equal(pages_python_float(b, sizeof b, 0.25), "0.25");
    assert_string_equal(pages_python_float(b, sizeof b, 1e-05), "1e-05");
    assert_string_equal(pages_python_float(b, sizeof b, 0.0001), "0.0001");
    assert_string_equal(pages_python_float(b, sizeof b, 120000), "120000.0");
    assert_string_equal(pages_python_float(b, sizeof b, 999999), "999999.0");
    assert_string_equal(pages_python_float(b, sizeof b, 1234567), "1.234567e+06");
    assert_string_equal(pages_python_float(b, sizeof b, 1000000), "1e+06");
    assert_string_equal(pages_python_float(b, sizeof b, 1764662400), "1.7646624e+09");
    assert_string_equal(pages_python_float(b, sizeof b, 1e16), "1e+16");
    assert_string_equal(pages_python_float(b, sizeof b, -3), "-3.0");
    assert_string_equal(pages_python_float(b, sizeof b, NAN), "NaN");
    assert_string_equal(pages_python_float(b, sizeof b, INFINITY), "+Inf");
}

static void test_pages_vllm_reads_as_the_replica_is(void **state) {
    (void)state;
    fleet_slot_t *s = calloc(1, sizeof *s);
    assert_non_null(s);
    s->state = FLEET_READY;
    s->nrunning = 16;
    s->nwaiting = 3;
    s->prompt_tokens_total = 1234567;
    s->generation_tokens_total = 45678;
    s->success_stop = 300;
    s->success_length = 57;
    static char page[16384];
    size_t n = pages_vllm(page, sizeof page, s, 0.375);
    assert_true(n > 0);
    assert_int_equal(strlen(page), n);
    /* the exporter's shape (tests/fixtures/engines/vllm.txt) */
    assert_non_null(strstr(page, "# TYPE vllm:num_requests_waiting gauge\n"
                                 "vllm:num_requests_waiting{engine=\"0\",model_name=\"" PAGES_MODEL
                                 "\"} 3.0\n"));
    assert_non_null(strstr(page, "vllm:request_success_total{engine=\"0\",finished_reason="
                                 "\"length\",model_name=\"" PAGES_MODEL "\"} 57.0\n"));
    assert_non_null(strstr(page, "finished_reason=\"abort\""));
    assert_non_null(strstr(page, "vllm:prompt_tokens_total{engine=\"0\",model_name=\"" PAGES_MODEL
                                 "\"} 1.234567e+06\n"));
    assert_null(strstr(page, "gpu_cache_usage_perc")); /* hidden in v0.11.0 */
    engine_reading_t r;
    char err[256];
    assert_int_equal(
        engine_reading_parse(ENGINE_VLLM, "", page, n, PROM_FORMAT_TEXT, &r, err, sizeof err), 0);
    assert_true(r.has_waiting && r.waiting == 3);
    assert_true(r.has_running && r.running == 16);
    assert_true(r.has_kv && fabs(r.kv_percent - 37.5) < 1e-9);
    assert_true(r.has_completed && r.completed_total == 357);
    assert_true(r.has_tokens && r.prompt_tokens_total == 1234567 &&
                r.generation_tokens_total == 45678);
    /* the model filter finds the model */
    assert_int_equal(engine_reading_parse(ENGINE_VLLM, PAGES_MODEL, page, n, PROM_FORMAT_TEXT, &r,
                                          err, sizeof err),
                     0);
    assert_true(r.running == 16);
    assert_int_equal(pages_vllm(page, 100, s, 0), 0); /* does not fit: 0, never a cut page */
    free(s);
}

typedef struct {
    double queue, old_queue;
    unsigned queue_series;
} gateway_sum_t;

static int sum_gateway(void *ud, const prom_sample_t *s) {
    gateway_sum_t *g = ud;
    if (strcmp(s->name, "llm_d_epp_flow_control_queue_size") == 0) {
        g->queue += s->value;
        g->queue_series++;
    } else if (strcmp(s->name, "inference_extension_flow_control_queue_size") == 0) {
        g->old_queue += s->value;
    }
    return 0;
}

static void test_pages_gateway_queue_is_counted_once(void **state) {
    (void)state;
    static char page[8192];
    pages_pool_t pool = {412, 3, 2, 16, 0.45};
    size_t n = pages_gateway(page, sizeof page, &pool);
    assert_true(n > 0);
    gateway_sum_t g = {0};
    char err[256];
    assert_int_equal(prom_parse(page, n, PROM_FORMAT_TEXT, sum_gateway, &g, err, sizeof err), 0);
    /* demandMetric: llm_d_epp_flow_control_queue_size sums one series: 412 */
    assert_true(g.queue == 412);
    assert_int_equal(g.queue_series, 1);
    assert_true(g.old_queue == 412); /* the deprecated mirror, a different name */
    /* and as engine epp reads it (docs: the new name only, never both) */
    engine_reading_t r;
    assert_int_equal(
        engine_reading_parse(ENGINE_EPP, "", page, n, PROM_FORMAT_TEXT, &r, err, sizeof err), 0);
    assert_true(r.has_waiting && r.waiting == 412);
    assert_true(r.has_pool && r.pool_ready == 3);
    assert_true(r.pool_waiting == 6 && r.pool_running == 48);
    assert_true(fabs(r.pool_kv_percent - 135) < 1e-9); /* 0.45 x 100 x 3 */
    /* client_golang's shape (tests/fixtures/engines/epp.txt) */
    assert_non_null(strstr(page, "# HELP llm_d_epp_average_kv_cache_utilization [ALPHA] The "
                                 "average kv cache utilization for an inference server pool.\n"
                                 "# TYPE llm_d_epp_average_kv_cache_utilization gauge\n"
                                 "llm_d_epp_average_kv_cache_utilization{name=\"" PAGES_POOL
                                 "\"} 0.45\n"));
    /* numbers as Go's strconv 'g' -1 writes them: 100 is "100" (C's
     * shortest %g wrote "1e+02"), a million "1e+06" */
    pool = (pages_pool_t){100, 3, 2, 16, 0.45};
    assert_true(pages_gateway(page, sizeof page, &pool) > 0);
    assert_non_null(strstr(page, "llm_d_epp_flow_control_queue_size{"));
    assert_non_null(strstr(page, "} 100\n"));
    assert_null(strstr(page, "e+02"));
    pool.queue = 1000000;
    assert_true(pages_gateway(page, sizeof page, &pool) > 0);
    assert_non_null(strstr(page, "} 1e+06\n"));
    /* at zero replicas the queue still exists, at 0 */
    pool = (pages_pool_t){0, 0, 0, 0, 0};
    n = pages_gateway(page, sizeof page, &pool);
    memset(&g, 0, sizeof g);
    assert_int_equal(prom_parse(page, n, PROM_FORMAT_TEXT, sum_gateway, &g, err, sizeof err), 0);
    assert_int_equal(g.queue_series, 1);
    assert_true(g.queue == 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pages_python_float_matches_prometheus_client),
        cmocka_unit_test(test_pages_vllm_reads_as_the_replica_is),
        cmocka_unit_test(test_pages_gateway_queue_is_counted_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
