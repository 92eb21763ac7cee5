/* test_engine_versions.c - every engine at every release the engine table
 * covers (tests/fixtures/engines/versions/, each written from the engine's
 * source at that release, cited in its header): what the reader makes of
 * the page, and the outcome a trigger gets from it (a value, or an error
 * naming what is missing and what provides it), through the evaluation
 * itself (demand_evaluate_inputs) without sockets. The values are in
 * tests/fixtures/engines/README.md ("Releases"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/demand_eval.h"
#include "core/engine_table.h"
#include "core/err.h"
#include "sources/engine_metrics.h"
#include "support/test_support.h"

#define NEAR(a, b) assert_true((a) > (b)-1e-6 && (a) < (b) + 1e-6)
#define ALL ((1u << SLO_SIGNAL_COUNT) - 1)
#define BIT(s) (1u << (s))
#define SEC 1000000000ull

static engine_hists_t h; /* large: off the stack */

static engine_reading_t read_version(engine_t e, const char *model, const char *name,
                                     prom_format_t fmt) {
    char path[128];
    snprintf(path, sizeof path, "versions/%s", name);
    size_t n;
    char *text = ts_engine_fixture(path, &n);
    engine_reading_t r;
    char err[300];
    int rc = engine_reading_parse_full(e, model, NULL, ALL, text, n, fmt, &r, &h, err, sizeof err);
    free(text);
    if (rc)
        fail_msg("%s: %s", name, err);
    return r;
}
#define READ(e, name) read_version(e, "", name, PROM_FORMAT_TEXT)

static double quantile(int s, double q) {
    double v = -1;
    assert_true(hist_quantile(&h.layout[s], &h.counts[s], q, &v));
    return v;
}

/* ---- what each page reads as ------------------------------------------------ */

static void test_vllm_releases(void **state) {
    (void)state;
    /* 0.4 (V0): the old KV gauge, no queue time, no per-request TPOT; the
     * per-token histogram under its old name */
    engine_reading_t r = READ(ENGINE_VLLM, "vllm-0.4.txt");
    assert_true(r.recognised && r.served);
    NEAR(r.waiting, 5);
    NEAR(r.running, 12);
    NEAR(r.kv_percent, 62.5);
    NEAR(r.completed_total, 50);
    NEAR(r.prompt_tokens_total, 24000);
    assert_int_equal(r.hist_mask, BIT(SLO_TTFT) | BIT(SLO_E2E) | BIT(SLO_ITL));
    assert_int_equal(r.hist_lacking, BIT(SLO_TPOT) | BIT(SLO_QUEUE));
    NEAR(h.counts[SLO_ITL].count, 5950);
    assert_int_equal(h.layout[SLO_TTFT].n, 16);
    /* 0.7 (V0): the queue time is there */
    r = READ(ENGINE_VLLM, "vllm-0.7.txt");
    NEAR(r.waiting, 8);
    NEAR(r.kv_percent, 87.5);
    NEAR(r.completed_total, 200);
    assert_int_equal(r.hist_lacking, BIT(SLO_TPOT));
    NEAR(quantile(SLO_QUEUE, 0.5), 0.3 + 0.2 * 100 / 150);
    /* 0.10 (V1, two engines): both KV names (the new one read, not twice),
     * the per-token histogram still under the old name */
    r = READ(ENGINE_VLLM, "vllm-0.10.txt");
    NEAR(r.waiting, 4);
    NEAR(r.running, 30);
    NEAR(r.kv_percent, 75);
    NEAR(r.completed_total, 415);
    assert_int_equal(r.hist_mask, ALL & ~BIT(SLO_TPOT));
    assert_int_equal(r.hist_lacking, BIT(SLO_TPOT));
    NEAR(h.counts[SLO_ITL].count, 100000);
    /* latest (V1, two engines): every signal; per request the p90 of time
     * per output token is 48.9 ms, per token 122 ms */
    r = READ(ENGINE_VLLM, "vllm-latest.txt");
    assert_int_equal(r.hist_mask, ALL);
    assert_int_equal(r.hist_lacking, 0);
    NEAR(h.counts[SLO_TPOT].count, 415);
    NEAR(quantile(SLO_TPOT, 0.9), 0.025 + 0.025 * 373.5 / 390);
    NEAR(quantile(SLO_ITL, 0.9), 0.1 + 0.05 * 8000 / 18000);
    NEAR(r.completed_total, 415);
    NEAR(r.generation_tokens_total, 100000);
    /* the same page in OpenMetrics: _total samples, *_created ignored */
    r = read_version(ENGINE_VLLM, "", "vllm-latest-openmetrics.txt", PROM_FORMAT_OPENMETRICS);
    NEAR(r.waiting, 4);
    NEAR(r.kv_percent, 75);
    NEAR(r.completed_total, 415);
    NEAR(r.prompt_tokens_total, 500000);
}

static void test_sglang_releases(void **state) {
    (void)state;
    /* ~0.3: no completion counter although it served requests: unknown,
     * not 0; no queue time; the chunk-wise TPOT is the itl signal */
    engine_reading_t r = READ(ENGINE_SGLANG, "sglang-0.3.txt");
    assert_true(r.recognised && r.served);
    NEAR(r.waiting, 2826);
    NEAR(r.running, 162);
    NEAR(r.kv_percent, 92);
    assert_false(r.has_completed);
    assert_true(r.has_tokens);
    assert_int_equal(r.first_use_zero, 0);
    assert_int_equal(r.hist_mask, BIT(SLO_TTFT) | BIT(SLO_E2E) | BIT(SLO_ITL));
    assert_int_equal(r.hist_lacking, BIT(SLO_TPOT) | BIT(SLO_QUEUE));
    /* latest with DP attention: the ranks' gauges add */
    r = READ(ENGINE_SGLANG, "sglang-latest.txt");
    NEAR(r.waiting, 12);
    NEAR(r.running, 76);
    NEAR(r.kv_percent, 100);
    NEAR(r.completed_total, 1000);
    assert_int_equal(r.hist_mask, ALL & ~BIT(SLO_TPOT));
    assert_int_equal(r.hist_lacking, BIT(SLO_TPOT));
    NEAR(h.counts[SLO_QUEUE].count, 1000); /* both dp ranks */
    NEAR(h.counts[SLO_ITL].count, 200000);
}

static void test_tgi_busy_and_fresh(void **state) {
    (void)state;
    engine_reading_t r = READ(ENGINE_TGI, "tgi-3.3-busy.txt");
    NEAR(r.waiting, 9);
    NEAR(r.running, 24);
    NEAR(r.completed_total, 600);
    NEAR(r.prompt_tokens_total, 620 * 500);
    NEAR(r.generation_tokens_total, 600 * 200);
    assert_int_equal(r.hist_mask, BIT(SLO_TPOT) | BIT(SLO_E2E) | BIT(SLO_QUEUE));
    assert_int_equal(r.first_use_zero, 0);
    /* fresh: only tgi_batch_max_total_tokens; the gauges and counters TGI
     * creates on first use are its zero, and said so */
    r = READ(ENGINE_TGI, "tgi-3.3-fresh.txt");
    assert_true(r.recognised);
    assert_false(r.served);
    assert_true(r.has_waiting && r.has_running && r.has_completed && r.has_tokens);
    NEAR(r.waiting, 0);
    NEAR(r.running, 0);
    assert_int_equal(r.first_use_zero, ENGINE_ZERO_WAITING | ENGINE_ZERO_RUNNING |
                                           ENGINE_ZERO_COMPLETED | ENGINE_ZERO_TOKENS);
    assert_int_equal(r.hist_mask, 0);
    /* nothing served: an absent histogram is no request yet, not a lack */
    assert_int_equal(r.hist_lacking & (BIT(SLO_TPOT) | BIT(SLO_E2E) | BIT(SLO_QUEUE)), 0);
    /* a page that is not TGI's stays unread (the evaluation's error) */
    const char *other = "vllm:num_requests_waiting 3\n";
    char err[200];
    assert_int_equal(engine_reading_parse(ENGINE_TGI, "", other, strlen(other), PROM_FORMAT_TEXT,
                                          &r, err, sizeof err),
                     0);
    assert_false(r.recognised || r.has_waiting || r.first_use_zero);
}

static void test_triton_releases(void **state) {
    (void)state;
    /* r21: no pending gauge; the counters every release has */
    engine_reading_t r = READ(ENGINE_TRITON, "triton-21.txt");
    assert_true(r.recognised && r.served);
    assert_false(r.has_waiting);
    assert_true(r.has_triton);
    NEAR(r.success, 2860);
    NEAR(r.queue_us, 72930000);
    assert_int_equal(r.hist_lacking & BIT(SLO_TTFT), BIT(SLO_TTFT));
    /* 25.x default config: the pending gauge, no first-response histogram */
    r = READ(ENGINE_TRITON, "triton-25-default.txt");
    NEAR(r.waiting, 3);
    assert_int_equal(r.hist_mask, 0);
    assert_true(r.hist_lacking & BIT(SLO_TTFT));
    /* with histogram_latencies=true: two models merged, ms to s */
    r = READ(ENGINE_TRITON, "triton-25-histograms.txt");
    assert_int_equal(r.hist_mask, BIT(SLO_TTFT));
    assert_false(r.hist_lacking & BIT(SLO_TTFT));
    NEAR(h.counts[SLO_TTFT].count, 2860);
    NEAR(h.layout[SLO_TTFT].le[1], 0.5);
    NEAR(quantile(SLO_TTFT, 0.5), 0.1 + 0.4 * 1430 / 2000);
}

static void test_epp_releases(void **state) {
    (void)state;
    /* GAIE 1.3: no running average, no saturation; its average queue is an
     * integer division (9 waiting on 4 pods prints 2), so 2 x 4 = 8 */
    engine_reading_t r = READ(ENGINE_EPP, "epp-gaie-1.3.txt");
    assert_true(r.recognised);
    NEAR(r.waiting, 5);
    NEAR(r.pool_waiting, 8);
    NEAR(r.pool_kv_percent, 220);
    assert_false(r.has_running || r.has_saturation);
    /* GAIE 1.5: both */
    r = READ(ENGINE_EPP, "epp-gaie-1.5.txt");
    NEAR(r.waiting, 5);
    NEAR(r.pool_waiting, 6); /* 1.5 x 4: v1.5.0 divides as floats */
    NEAR(r.pool_kv_percent, 220);
    NEAR(r.pool_running, 24);
    assert_true(r.has_saturation);
    NEAR(r.saturation_load, 3.6);
    /* llm-d-router 0.10: the new names, the mirrors never added */
    r = READ(ENGINE_EPP, "epp-llm-d-0.10.txt");
    NEAR(r.waiting, 6);
    NEAR(r.pool_waiting, 10);
    NEAR(r.pool_running, 28);
    NEAR(r.pool_kv_percent, 320);
    NEAR(r.saturation_load, 1.4 * 4);
    r = read_version(ENGINE_EPP, "llama", "epp-llm-d-0.10.txt", PROM_FORMAT_TEXT);
    NEAR(r.waiting, 5);
    /* after 0.10: the effective stage, not the sum of the stages */
    r = READ(ENGINE_EPP, "epp-llm-d-stage.txt");
    NEAR(r.saturation_load, 1.2 * 5);
    NEAR(r.waiting, 0);
}

/* ---- outcomes through the evaluation ------------------------------------------ */

static demand_source_t source_of(engine_t e, const char *url, const char *fixture) {
    demand_source_t s;
    memset(&s, 0, sizeof s);
    s.state = DEMAND_SOURCE_READING;
    s.name = url;
    s.last_ok = 100 * SEC;
    s.interval_ns = 1 * SEC;
    s.timeout_ns = 2 * SEC;
    s.reading = READ(e, fixture);
    return s;
}

static eval_result_t evaluate(const trigger_config_t *c, demand_source_t *src, unsigned n,
                              demand_view_t *view, demand_model_state_t *model) {
    demand_inputs_t in;
    demand_learned_t learned = {NULL, NULL, NULL};
    memset(&in, 0, sizeof in);
    in.pods_status = EVAL_OK;
    in.engines = src;
    in.nengines = n;
    learned.view = view;
    learned.model = model;
    eval_result_t r;
    demand_evaluate_inputs(c, &in, &learned, 100 * SEC, NULL, &r);
    return r;
}

static void assert_has(const char *text, const char *part) {
    if (!text || !strstr(text, part))
        fail_msg("want \"%s\" in \"%s\"", part, text ? text : "(null)");
}

static void test_triton_default_config_and_ttft_names_the_flag(void **state) {
    (void)state;
    trigger_config_t c = CFG("metricType", "slo", "engine", "triton", "tritonEndpoint",
                             "http://triton:8002/metrics", "ttftP90Target", "500ms");
    demand_source_t s =
        source_of(ENGINE_TRITON, "http://triton:8002/metrics", "triton-25-default.txt");
    eval_result_t r = evaluate(&c, &s, 1, NULL, NULL);
    assert_int_equal(r.status, EVAL_FAILED_PRECONDITION);
    assert_has(r.message, "nv_inference_first_response_histogram_ms (histogram, one observation "
                          "per request) is not in the scrape: Triton exports it only with "
                          "--metrics-config histogram_latencies=true (Triton 24.11 and later)");
    /* idle or not, never a value of 0 */
    s.reading.waiting = 0;
    r = evaluate(&c, &s, 1, NULL, NULL);
    assert_int_equal(r.status, EVAL_FAILED_PRECONDITION);
    /* with the flag: a value */
    s = source_of(ENGINE_TRITON, "http://triton:8002/metrics", "triton-25-histograms.txt");
    r = evaluate(&c, &s, 1, NULL, NULL);
    assert_int_equal(r.status, EVAL_OK);
}

static void test_old_releases_name_the_missing_histogram_and_release(void **state) {
    (void)state;
    trigger_config_t c = CFG("metricType", "slo", "engine", "vllm", "vllmEndpoint",
                             "http://v:8000/metrics", "queueTimeP90Target", "500ms");
    demand_source_t s = source_of(ENGINE_VLLM, "http://v:8000/metrics", "vllm-0.4.txt");
    eval_result_t r = evaluate(&c, &s, 1, NULL, NULL);
    assert_int_equal(r.status, EVAL_FAILED_PRECONDITION);
    assert_has(r.message, "http://v:8000/metrics: the queue_time target cannot be read: "
                          "vllm:request_queue_time_seconds (histogram, one observation per "
                          "request) is not in the scrape: it was added in vLLM 0.6.4, so this "
                          "server is older");
    /* a per-request TPOT on 0.10: the release, and the per-token key */
    trigger_config_t t = CFG("metricType", "slo", "engine", "vllm", "vllmEndpoint",
                             "http://v:8000/metrics", "tpotP90Target", "50ms");
    s = source_of(ENGINE_VLLM, "http://v:8000/metrics", "vllm-0.10.txt");
    r = evaluate(&t, &s, 1, NULL, NULL);
    assert_int_equal(r.status, EVAL_FAILED_PRECONDITION);
    assert_has(r.message, "added in vLLM 0.11.0");
    assert_has(r.message, "itl*Target reads vllm:inter_token_latency_seconds");
    /* Triton before 23.09: the pending gauge's release, not "wrong URL?" */
    trigger_config_t q = CFG("metricType", "engine_queue", "engine", "triton", "tritonEndpoint",
                             "http://t:8002/metrics", "targetValue", "5");
    s = source_of(ENGINE_TRITON, "http://t:8002/metrics", "triton-21.txt");
    r = evaluate(&q, &s, 1, NULL, NULL);
    assert_int_equal(r.status, EVAL_FAILED_PRECONDITION);
    assert_has(r.message, "it was added in Triton 23.09, so this server is older");
    assert_null(strstr(r.message, "is the URL its metrics endpoint"));
    /* GAIE before 1.5: the pool's running average, with both names' releases */
    trigger_config_t e = CFG("metricType", "engine_running", "engine", "epp", "engineEndpoint",
                             "http://epp:9090/metrics", "targetValue", "8");
    s = source_of(ENGINE_EPP, "http://epp:9090/metrics", "epp-gaie-1.3.txt");
    r = evaluate(&e, &s, 1, NULL, NULL);
    assert_int_equal(r.status, EVAL_FAILED_PRECONDITION);
    assert_has(r.message, "inference_pool_average_running_requests (GAIE v1.5.0)");
    /* an unrecognisable page still asks about the URL */
    s.reading = (engine_reading_t){0};
    r = evaluate(&q, &s, 1, NULL, NULL);
    assert_has(r.message, "is the URL its metrics endpoint?");
}

static void test_tgi_fresh_pod_beside_a_busy_one_reads_the_busy_queue(void **state) {
    (void)state;
    trigger_config_t c = CFG("metricType", "engine_queue", "engine", "tgi", "engineEndpoint",
                             "http://a/metrics,http://b/metrics", "targetValue", "4");
    demand_source_t s[2] = {source_of(ENGINE_TGI, "http://a/metrics", "tgi-3.3-busy.txt"),
                            source_of(ENGINE_TGI, "http://b/metrics", "tgi-3.3-fresh.txt")};
    demand_view_t view;
    demand_view_init(&view);
    eval_result_t r = evaluate(&c, s, 2, &view, NULL);
    assert_int_equal(r.status, EVAL_OK);
    NEAR(r.value, 9);
    assert_int_equal(view.answering, 2);
    assert_int_equal(view.first_use, 1);
    assert_has(view.first_use_why, "http://b/metrics: tgi_queue_size, tgi_batch_current_size, "
                                   "tgi_request_success, tgi_request_input_length, "
                                   "tgi_request_generated_tokens not exported yet (TGI creates "
                                   "them on first use): read as 0");
    demand_view_free(&view);
}

static void test_sglang_without_completions_is_bounded_and_names_the_prior(void **state) {
    (void)state;
    trigger_config_t c =
        CFG("metricType", "demand", "engine", "sglang", "engineEndpoint", "http://s:30000/metrics");
    demand_source_t s = source_of(ENGINE_SGLANG, "http://s:30000/metrics", "sglang-0.3.txt");
    demand_model_state_t model;
    demand_model_init(&model);
    eval_result_t r = evaluate(&c, &s, 1, NULL, &model);
    assert_int_equal(r.status, EVAL_OK);
    /* one pod, capacity a prior: at most QUEUE_MODEL_PRIOR_MAX_REPLICAS
     * (or twice the Ready), never hundreds */
    assert_true(r.value > 100 && r.value <= 100 * QUEUE_MODEL_PRIOR_MAX_REPLICAS);
    assert_true(model.have_decision);
    assert_false(model.last_has_counters);
    assert_true(model.last_has_tokens); /* Explain: tokens read, no completion counter */
    assert_int_equal(model.last.capacity_from, QM_FROM_PRIOR);
}

/* ---- the table itself ------------------------------------------------------- */

static void test_table_is_consistent(void **state) {
    (void)state;
    size_t n;
    const engine_metric_t *rows = engine_table_rows(&n);
    assert_true(n > 40);
    for (size_t i = 0; i < n; i++) {
        const engine_metric_t *m = &rows[i];
        /* found by its own name, and the first row of that name */
        assert_ptr_equal(engine_table_find(m->engine, m->name, strlen(m->name)), m);
        assert_true((m->role == EMR_LATENCY) == (m->signal >= 0));
        assert_true(m->role != EMR_LATENCY || m->kind == EM_HISTOGRAM);
        assert_true((m->presence == EMP_FLAG) == (m->needs[0] != '\0'));
        assert_true(m->since[0] != '\0');
        /* an older name has a current one of the same role */
        if (m->rank)
            assert_non_null(engine_table_primary(m->engine, m->role, m->signal));
        assert_true((m->per != EMO_NONE) == (m->kind == EM_HISTOGRAM));
    }
    /* the signal numbers agree with slo_signal_t */
    assert_int_equal(engine_table_primary(ENGINE_VLLM, EMR_LATENCY, SLO_QUEUE)->name[5], 'r');
    assert_string_equal(engine_table_primary(ENGINE_VLLM, EMR_LATENCY, SLO_ITL)->name,
                        "vllm:inter_token_latency_seconds");
    assert_string_equal(engine_table_primary(ENGINE_VLLM, EMR_LATENCY, SLO_TPOT)->name,
                        "vllm:request_time_per_output_token_seconds");
    assert_null(engine_table_primary(ENGINE_SGLANG, EMR_LATENCY, SLO_TPOT));
}

/* docs/configuration.md shows the table between its markers, as
 * engine_table_markdown() renders it. */
static void test_docs_show_the_table(void **state) {
    (void)state;
    const char *src = getenv("KGS_SOURCE_DIR");
    assert_non_null(src);
    char path[4096];
    snprintf(path, sizeof path, "%s/docs/configuration.md", src);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char doc[1 << 20];
    size_t len = fread(doc, 1, sizeof doc - 1, f);
    fclose(f);
    doc[len] = '\0';
    const char *begin =
        "<!-- engine-table:begin (engine_table_markdown(); a unit test checks) -->\n";
    const char *b = strstr(doc, begin);
    const char *e = strstr(doc, "<!-- engine-table:end -->");
    if (!b || !e || e < b)
        fail_msg("docs/configuration.md has no engine table between its markers");
    b += strlen(begin);
    strbuf_t want;
    strbuf_init(&want);
    engine_table_markdown(&want);
    if ((size_t)(e - b) != want.len || memcmp(b, want.s, want.len) != 0)
        fail_msg("docs/configuration.md's engine table differs from engine_table_markdown(); "
                 "it should read:\n%s",
                 want.s);
    strbuf_free(&want);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vllm_releases),
        cmocka_unit_test(test_sglang_releases),
        cmocka_unit_test(test_tgi_busy_and_fresh),
        cmocka_unit_test(test_triton_releases),
        cmocka_unit_test(test_epp_releases),
        cmocka_unit_test(test_triton_default_config_and_ttft_names_the_flag),
        cmocka_unit_test(test_old_releases_name_the_missing_histogram_and_release),
        cmocka_unit_test(test_tgi_fresh_pod_beside_a_busy_one_reads_the_busy_queue),
        cmocka_unit_test(test_sglang_without_completions_is_bounded_and_names_the_prior),
        cmocka_unit_test(test_table_is_consistent),
        cmocka_unit_test(test_docs_show_the_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
