/* test_engine_lora_tokens.c - vLLM's vllm:lora_requests_info read for one
 * adapter (tests/fixtures/engines/vllm-lora.txt, values in its README), and
 * the token counters' increases over a window as the hub takes them
 * (sources/counter_window.c), with hand-computed rates. */
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
#include "core/trigger_config.h"
#include "sources/counter_window.h"
#include "sources/engine_metrics.h"

#define NEAR(a, b) assert_true((a) > (b)-1e-9 && (a) < (b) + 1e-9)
#define SEC 1000000000ull

static engine_reading_t lora_fixture(const char *model, const char *adapter) {
    size_t n;
    char *text = ts_engine_fixture("vllm-lora.txt", &n);
    engine_reading_t r;
    char err[256] = "";
    int rc = engine_reading_parse_full(ENGINE_VLLM, model, adapter, 0, text, n, PROM_FORMAT_TEXT,
                                       &r, NULL, err, sizeof err);
    free(text);
    if (rc != 0)
        fail_msg("vllm-lora.txt: %s", err);
    return r;
}

static engine_reading_t lora_text(const char *text, const char *adapter) {
    engine_reading_t r;
    char err[256] = "";
    if (engine_reading_parse_full(ENGINE_VLLM, "", adapter, 0, text, strlen(text), PROM_FORMAT_TEXT,
                                  &r, NULL, err, sizeof err) != 0)
        fail_msg("%s", err);
    return r;
}

/* The newest series (1764662461.25) decides: sql-lora waits and runs,
 * summ-lora waits, chat-lora runs; sql-lora-v2 is in an older series only,
 * and a name is matched whole, never as a prefix. */
static void test_lora_newest_series_lists_the_adapter(void **state) {
    (void)state;
    engine_reading_t r = lora_fixture("", "sql-lora");
    assert_true(r.has_lora);
    assert_true(r.lora_waiting);
    assert_true(r.lora_running);
    NEAR(r.waiting, 6);
    NEAR(r.running, 4);
    r = lora_fixture("", "summ-lora");
    assert_true(r.has_lora && r.lora_waiting && !r.lora_running);
    r = lora_fixture("", "chat-lora");
    assert_true(r.has_lora && !r.lora_waiting && r.lora_running);
    r = lora_fixture("", "sql-lora-v2");
    assert_true(r.has_lora && !r.lora_waiting && !r.lora_running);
    r = lora_fixture("", "sql");
    assert_true(r.has_lora && !r.lora_waiting && !r.lora_running);
}

/* Without an adapter the series is not read (the other readings are as
 * before); the model filter does not hide it (it has no model_name label). */
static void test_lora_read_only_for_an_adapter_and_not_model_filtered(void **state) {
    (void)state;
    engine_reading_t none = lora_fixture("", NULL), empty = lora_fixture("", "");
    assert_false(none.has_lora || none.lora_waiting || none.lora_running);
    assert_memory_equal(&none, &empty, sizeof none);
    engine_reading_t with = lora_fixture("", "sql-lora");
    with.has_lora = with.lora_waiting = with.lora_running = false;
    assert_memory_equal(&none, &with, sizeof none);
    engine_reading_t m = lora_fixture("llama-3.1-8b", "sql-lora");
    assert_true(m.has_lora && m.lora_waiting);
    NEAR(m.waiting, 6);
    m = lora_fixture("other-model", "sql-lora");
    assert_false(m.has_waiting);
    assert_true(m.has_lora && m.lora_waiting);
}

/* Equal newest values: either series counts (OR). A value that is not a
 * number cannot be ordered and is skipped, never an error; a later, larger
 * series replaces an earlier one whatever the order of the lines. */
static void test_lora_ties_nan_and_order(void **state) {
    (void)state;
    engine_reading_t r =
        lora_text("vllm:lora_requests_info{max_lora=\"2\",running_lora_adapters=\"a\","
                  "waiting_lora_adapters=\"\"} 5\n"
                  "vllm:lora_requests_info{max_lora=\"2\",running_lora_adapters=\"\","
                  "waiting_lora_adapters=\"a\"} 5\n",
                  "a");
    assert_true(r.has_lora && r.lora_waiting && r.lora_running);
    r = lora_text("vllm:lora_requests_info{max_lora=\"2\",running_lora_adapters=\"\","
                  "waiting_lora_adapters=\"a\"} NaN\n",
                  "a");
    assert_false(r.has_lora || r.lora_waiting);
    r = lora_text("vllm:lora_requests_info{max_lora=\"2\",running_lora_adapters=\"\","
                  "waiting_lora_adapters=\"x,a\"} 9\n"
                  "vllm:lora_requests_info{max_lora=\"2\",running_lora_adapters=\"\","
                  "waiting_lora_adapters=\"\"} 7\n"
                  "vllm:lora_requests_info{max_lora=\"2\",running_lora_adapters=\"\","
                  "waiting_lora_adapters=\"a\"} +Inf\n",
                  "a");
    assert_true(r.has_lora && r.lora_waiting && !r.lora_running);
    /* other engines have no such metric */
    const char *t = "vllm:lora_requests_info{waiting_lora_adapters=\"a\"} 9\n";
    char err[128];
    assert_int_equal(engine_reading_parse_full(ENGINE_SGLANG, "", "a", 0, t, strlen(t),
                                               PROM_FORMAT_TEXT, &r, NULL, err, sizeof err),
                     0);
    assert_false(r.has_lora);
}

/* The token counters' window, as source_hub keeps it for engines with token
 * counters (a = prompt, b = generation), with spacing 0.3 s (30 s / 100):
 * polls at 0, 1, 2, 3 s of 1000/200, 3000/700, 5000/1200, 8000/1500.
 * Over 2 s before t = 3: base t = 1 -> (8000-3000)/2 = 2500 prompt/s,
 * (1500-700)/2 = 400 generated/s. One poll is not a rate. A restart (the
 * counters drop) starts again after the drop: t = 4 at 100/50, t = 5 at
 * 1100/250 -> 1000 and 200 over 1 s. */
static void test_token_window_rates_and_reset(void **state) {
    (void)state;
    static counter_window_t w;
    memset(&w, 0, sizeof w);
    uint64_t sp = 30 * SEC / 100;
    double dp, dg, s;
    counter_window_push(&w, 0, 1000, 200, sp);
    assert_false(counter_window_delta(&w, 0, 2 * SEC, &dp, &dg, &s));
    counter_window_push(&w, 1 * SEC, 3000, 700, sp);
    counter_window_push(&w, 2 * SEC, 5000, 1200, sp);
    counter_window_push(&w, 3 * SEC, 8000, 1500, sp);
    assert_true(counter_window_delta(&w, 3 * SEC, 2 * SEC, &dp, &dg, &s));
    NEAR(s, 2);
    NEAR(dp / s, 2500);
    NEAR(dg / s, 400);
    counter_window_push(&w, 4 * SEC, 100, 50, sp);
    assert_false(counter_window_delta(&w, 4 * SEC, 2 * SEC, &dp, &dg, &s));
    counter_window_push(&w, 5 * SEC, 1100, 250, sp);
    assert_true(counter_window_delta(&w, 5 * SEC, 2 * SEC, &dp, &dg, &s));
    NEAR(s, 1);
    NEAR(dp, 1000);
    NEAR(dg, 200);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lora_newest_series_lists_the_adapter),
        cmocka_unit_test(test_lora_read_only_for_an_adapter_and_not_model_filtered),
        cmocka_unit_test(test_lora_ties_nan_and_order),
        cmocka_unit_test(test_token_window_rates_and_reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
