/* test_explain.c - the scaler's Explain answer as one line: known names in
 * a fixed order whatever order they came in, where each came from, unknown
 * as "unknown", names the demo does not know appended, never cut. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "explain.h"
#include "proto/externalscaler.pb-c.h"

static void test_explain_orders_known_names_and_keeps_unknown_ones(void **state) {
    (void)state;
    const explain_item_t items[] = {
        {"future_thing", 7},
        {"deficit", 90.26},
        {"decided_by:queue", 1},
        {"need:queue", 3.2},
        {"lambda_rps:learned", 36.2},
        {"replicas", 5.714},
        {"signal:queue", 40},
        {"tokens_per_request:unknown, no token counters", NAN},
        {"capacity_rps:prior", 1},
        {"value", 571.4}, /* a column of its own */
        {"not_serving:vllm http://x: refused", 8},
        {"active", 1}, /* a column of its own */
        {"engines:answering", 0},
        {"error:UNAVAILABLE: queue x: refused", 14},
    };
    char out[1024];
    size_t n = explain_format(items, sizeof items / sizeof items[0], out, sizeof out);
    assert_int_equal(n, strlen(out));
    assert_string_equal(
        out, "error=UNAVAILABLE: queue x: refused decided_by=queue need:queue=3.2 signal:queue=40 "
             "replicas=5.71 lambda_rps=36.2[learned] capacity_rps=1[prior] "
             "tokens_per_request=unknown[unknown, no token counters] "
             "deficit=90.3 engines:answering=0 not_serving:vllm http://x: "
             "refused=8 future_thing=7");
}

static void test_explain_never_cuts_an_item(void **state) {
    (void)state;
    explain_item_t items[40];
    char names[40][32];
    for (int i = 0; i < 40; i++) {
        snprintf(names[i], sizeof names[i], "name_%02d", i);
        items[i] = (explain_item_t){names[i], i};
    }
    char out[120];
    explain_format(items, 40, out, sizeof out);
    assert_true(strlen(out) < sizeof out);
    const char *more = strstr(out, " (+");
    assert_non_null(more);
    /* every item shown is whole: the text before " (+K more)" ends a value */
    assert_true(more[-1] >= '0' && more[-1] <= '9');
    int shown = 0;
    for (const char *p = out; (p = strstr(p, "name_")) != NULL; p++)
        shown++;
    int rest = atoi(more + 3);
    assert_int_equal(shown + rest, 40);
}

static void test_explain_keeps_one_line_for_odd_names(void **state) {
    (void)state;
    char longname[400];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    const explain_item_t items[] = {{"bad\nname", 1}, {longname, 2}};
    char out[1024];
    explain_format(items, 2, out, sizeof out);
    assert_null(strchr(out, '\n'));
    assert_non_null(strstr(out, "bad?name=1"));
    assert_non_null(strstr(out, "...=2")); /* a name over 120 bytes is shortened by design */
}

static void test_explain_decodes_a_response(void **state) {
    (void)state;
    Externalscaler__MetricValue a = EXTERNALSCALER__METRIC_VALUE__INIT,
                                b = EXTERNALSCALER__METRIC_VALUE__INIT;
    a.metricname = "backlog";
    a.metricvaluefloat = 12;
    b.metricname = "replicas";
    b.metricvaluefloat = 2.5;
    Externalscaler__MetricValue *v[] = {&a, &b};
    Externalscaler__GetMetricsResponse r = EXTERNALSCALER__GET_METRICS_RESPONSE__INIT;
    r.n_metricvalues = 2;
    r.metricvalues = v;
    uint8_t buf[256];
    size_t len = externalscaler__get_metrics_response__pack(&r, buf);
    char out[256];
    assert_true(explain_decode(buf, len, out, sizeof out) > 0);
    assert_string_equal(out, "replicas=2.5 backlog=12");
    const uint8_t junk[] = {0xff, 0xff, 0xff};
    assert_int_equal(explain_decode(junk, sizeof junk, out, sizeof out), 0);
    assert_string_equal(out, "");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_explain_orders_known_names_and_keeps_unknown_ones),
        cmocka_unit_test(test_explain_never_cuts_an_item),
        cmocka_unit_test(test_explain_keeps_one_line_for_odd_names),
        cmocka_unit_test(test_explain_decodes_a_response),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
