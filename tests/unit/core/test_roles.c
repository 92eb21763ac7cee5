/* test_roles.c - the role table: which triggers each role serves, and the
 * messages the server and validate both give. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/roles.h"
#include "core/trigger_config.h"
#include "support/test_support.h"

static void test_roles_table_names_every_role(void **state) {
    (void)state;
    assert_string_equal(role_caps(KGS_ROLE_STANDALONE)->name, "standalone");
    assert_string_equal(role_caps(KGS_ROLE_AGENT)->name, "agent");
    assert_string_equal(role_caps(KGS_ROLE_AGGREGATOR)->name, "aggregator");
    assert_null(role_caps(KGS_ROLE_COUNT));
    /* the aggregator reads the agents' snapshots, never NVML */
    assert_true(role_caps(KGS_ROLE_STANDALONE)->reads_nvml);
    assert_true(role_caps(KGS_ROLE_AGENT)->reads_nvml);
    assert_false(role_caps(KGS_ROLE_AGGREGATOR)->reads_nvml);
}

static void test_roles_selectors_need_the_aggregator(void **state) {
    (void)state;
    static trigger_config_t c;
    c = CFG("metricType", "gpu_utilization", "targetValue", "50", "podSelector", "app=x");
    char msg[512];
    assert_int_equal(role_check_trigger(role_caps(KGS_ROLE_STANDALONE), &c, true, msg, sizeof msg),
                     ROLE_CHECK_BAD_CONFIG);
    assert_string_equal(msg, "podSelector and nodeSelector need the aggregator role: this server "
                             "sees only its own node's GPUs and no pods");
    assert_int_equal(role_check_trigger(role_caps(KGS_ROLE_AGENT), &c, true, msg, sizeof msg),
                     ROLE_CHECK_BAD_CONFIG);
    assert_int_equal(role_check_trigger(role_caps(KGS_ROLE_AGGREGATOR), &c, true, msg, sizeof msg),
                     ROLE_CHECK_OK);
    assert_string_equal(msg, "");
    /* skipped on request (the hub reads sources only) */
    assert_int_equal(role_check_trigger(role_caps(KGS_ROLE_STANDALONE), &c, false, NULL, 0),
                     ROLE_CHECK_OK);
}

static void test_roles_demand_types_need_sources(void **state) {
    (void)state;
    static trigger_config_t c;
    c = CFG("metricType", "queue_length", "targetValue", "5", "redisAddress", "r:6379",
            "redisListName", "q");
    char msg[512];
    assert_int_equal(role_check_trigger(role_caps(KGS_ROLE_AGENT), &c, true, msg, sizeof msg),
                     ROLE_CHECK_PRECONDITION);
    assert_string_equal(msg, "metricType queue_length reads engine or queue sources, which this "
                             "role does not poll; ask the standalone or aggregator role");
    assert_int_equal(role_check_eval_status(ROLE_CHECK_PRECONDITION), EVAL_FAILED_PRECONDITION);
    assert_int_equal(role_check_trigger(role_caps(KGS_ROLE_STANDALONE), &c, true, msg, sizeof msg),
                     ROLE_CHECK_OK);
}

static void test_roles_engine_pods_need_the_pod_list(void **state) {
    (void)state;
    static trigger_config_t c;
    c = CFG("metricType", "vllm_queue_depth", "targetValue", "5", "engine", "vllm", "podSelector",
            "app=v");
    char msg[512];
    assert_int_equal(role_check_trigger(role_caps(KGS_ROLE_STANDALONE), &c, false, msg, sizeof msg),
                     ROLE_CHECK_PRECONDITION);
    assert_string_equal(msg, "metricType vllm_queue_depth with podSelector needs the aggregator "
                             "role (it scrapes the selected pods); in standalone mode give "
                             "vllmEndpoint");
    assert_int_equal(role_check_trigger(role_caps(KGS_ROLE_AGGREGATOR), &c, true, msg, sizeof msg),
                     ROLE_CHECK_OK);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roles_table_names_every_role),
        cmocka_unit_test(test_roles_selectors_need_the_aggregator),
        cmocka_unit_test(test_roles_demand_types_need_sources),
        cmocka_unit_test(test_roles_engine_pods_need_the_pod_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
