/* test_validate.c - `keda-gpu-scaler validate`'s logic without the
 * command: what a trigger reads at zero (validate_trigger_wake), and
 * validate_text's lines and counts for several problems and for warnings,
 * written to memory (fmemopen). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/trigger_config.h"
#include "server/validate.h"
#include "support/test_support.h"

static trigger_config_t cfg; /* large: off the stack */

static validate_wake_t wake_of(const char *const *kv) {
    metadata_pair_t p[TS_MAX_PAIRS];
    size_t n = ts_pairs(kv, p, TS_MAX_PAIRS);
    char err[4096];
    if (trigger_config_parse(p, n, &cfg, err, sizeof err) != 0)
        fail_msg("%s", err);
    return validate_trigger_wake(&cfg);
}

#define WAKE(...) wake_of((const char *const[]){__VA_ARGS__, NULL})

static void test_validate_a_queue_or_the_gateway_wakes_and_nothing_else(void **state) {
    (void)state;
    assert_int_equal(WAKE("metricType", "queue_length", "targetValue", "5", "redisAddress",
                          "r:6379", "redisListName", "q"),
                     VALIDATE_WAKES);
    assert_int_equal(WAKE("metricType", "demand", "engine", "vllm", "podSelector", "app=x",
                          "demandEndpoint", "http://gw:9000/metrics", "demandMetric", "q"),
                     VALIDATE_WAKES);
    assert_int_equal(WAKE("metricType", "engine_queue", "engine", "epp", "podSelector", "app=epp",
                          "targetValue", "4"),
                     VALIDATE_WAKES);
    assert_int_equal(WAKE("metricType", "demand", "demandModel", "composite", "engine", "epp",
                          "podSelector", "app=epp", "targetQueuePerReplica", "4"),
                     VALIDATE_WAKES);
    /* the EPP's pool gauges are the model servers': 0 at zero */
    assert_int_equal(WAKE("metricType", "engine_kv_cache", "engine", "epp", "podSelector",
                          "app=epp", "targetValue", "80"),
                     VALIDATE_SLEEPS_ENGINE);
    assert_int_equal(WAKE("metricType", "demand", "engine", "vllm", "podSelector", "app=x"),
                     VALIDATE_SLEEPS_ENGINE);
    assert_int_equal(WAKE("metricType", "engine_queue", "vllmEndpoint", "http://v:8000/metrics",
                          "targetValue", "5"),
                     VALIDATE_SLEEPS_ENGINE);
    assert_int_equal(WAKE("metricType", "slo", "engine", "vllm", "podSelector", "app=x",
                          "ttftP90Target", "500ms"),
                     VALIDATE_SLEEPS_SLO);
    assert_int_equal(WAKE("metricType", "gpu_utilization", "targetValue", "60"),
                     VALIDATE_SLEEPS_GPU);
    assert_int_equal(WAKE("metricType", "demand", "targetGpu", "60", "podSelector", "app=x"),
                     VALIDATE_SLEEPS_GPU);
}

/* validate_text into memory: the output and the counts. */
static void run(const char *yaml, bool standalone, char *out, size_t outlen, validate_counts_t *c) {
    FILE *f = fmemopen(out, outlen, "w");
    assert_non_null(f);
    validate_opts_t o = {.role = standalone ? VALIDATE_ROLE_STANDALONE : VALIDATE_ROLE_AGGREGATOR};
    char err[256] = "";
    memset(c, 0, sizeof *c);
    assert_int_equal(validate_text("t.yaml", yaml, strlen(yaml), &o, f, c, err, sizeof err), 0);
    fclose(f);
}

static const char head[] = "apiVersion: keda.sh/v1alpha1\n"
                           "kind: ScaledObject\n"
                           "metadata: {name: o, namespace: ml}\n"
                           "spec:\n"
                           "  scaleTargetRef: {name: o}\n";

static void test_validate_every_problem_is_a_line_and_unquoted_values_hide_nothing(void **state) {
    (void)state;
    char yaml[2048], out[8192];
    snprintf(yaml, sizeof yaml,
             "%s  minReplicaCount: 1\n"
             "  triggers:\n"
             "  - type: external\n"
             "    metadata:\n"
             "      scalerAddress: keda-gpu-scaler:6000\n"
             "      metricType: gpu_utilisation\n"
             "      targetValue: 70\n"
             "      aggregation: mean\n",
             head);
    validate_counts_t c;
    run(yaml, false, out, sizeof out, &c);
    assert_int_equal(c.problems, 3);
    assert_int_equal(c.warnings, 0);
    assert_non_null(strstr(out, "t.yaml:12: ScaledObject ml/o trigger #0 (external): metadata "
                                "targetValue: 70 is a number in YAML"));
    assert_non_null(strstr(out, "t.yaml:11: ScaledObject ml/o trigger #0 (external): invalid "
                                "metricType \"gpu_utilisation\""));
    assert_non_null(strstr(out, "t.yaml:13: ScaledObject ml/o trigger #0 (external): invalid "
                                "aggregation \"mean\""));
}

static void test_validate_warns_only_when_nothing_can_wake(void **state) {
    (void)state;
    static const char gpu[] = "  - type: external\n"
                              "    metadata:\n"
                              "      scalerAddress: keda-gpu-scaler:6000\n"
                              "      targetValue: \"60\"\n";
    static const struct {
        const char *spec, *more;
        unsigned warnings;
    } cases[] = {
        {"", "", 1}, /* minReplicaCount: KEDA's default 0 */
        {"  minReplicaCount: 0\n", "", 1},
        {"  minReplicaCount: 2\n", "", 0},
        {"  minReplicaCount: 1\n  idleReplicaCount: 0\n", "", 1},
        {"", "  - type: cpu\n    metadata: {value: \"50\"}\n", 1}, /* never from zero */
        {"", "  - type: kafka\n    metadata: {topic: t}\n", 0},    /* may wake: not ours to say */
        {"", "  - type: external\n    metadata: {scalerAddress: other:9000}\n", 0},
        /* ours, but invalid: reported as a problem, not judged */
        {"", "  - type: external\n    metadata: {scalerAddress: keda-gpu-scaler:6000, x: y}\n", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char yaml[2048], out[8192];
        snprintf(yaml, sizeof yaml, "%s%s  triggers:\n%s%s", head, cases[i].spec, gpu,
                 cases[i].more);
        validate_counts_t c;
        run(yaml, false, out, sizeof out, &c);
        if (c.warnings != cases[i].warnings)
            fail_msg("case %zu: %u warnings, want %u: %s", i, c.warnings, cases[i].warnings, out);
        if (c.warnings)
            assert_non_null(strstr(out, ": ScaledObject ml/o trigger #0 (external): "
                                        "warning: "));
    }
}

static void test_validate_standalone_queueing_model_is_a_warning(void **state) {
    (void)state;
    char yaml[2048], out[8192];
    static const char trig[] = "  triggers:\n"
                               "  - type: external-push\n"
                               "    metadata:\n"
                               "      scalerAddress: keda-gpu-scaler:6000\n"
                               "      metricType: demand\n"
                               "      redisAddress: redis:6379\n"
                               "      redisListName: q\n";
    snprintf(yaml, sizeof yaml, "%s%s", head, trig);
    validate_counts_t c;
    run(yaml, true, out, sizeof out, &c);
    assert_int_equal(c.warnings, 1);
    assert_non_null(strstr(out, "warning: in the standalone role the scaler sees no pods"));
    run(yaml, false, out, sizeof out, &c);
    assert_int_equal(c.warnings + c.problems, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_validate_a_queue_or_the_gateway_wakes_and_nothing_else),
        cmocka_unit_test(test_validate_every_problem_is_a_line_and_unquoted_values_hide_nothing),
        cmocka_unit_test(test_validate_warns_only_when_nothing_can_wake),
        cmocka_unit_test(test_validate_standalone_queueing_model_is_a_warning),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
