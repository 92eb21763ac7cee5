/* test_profiles.c - the profile table: the Go system's ten profiles with
 * identical names and values, then the GPM profiles; lookup by name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/err.h"
#include "core/profiles.h"

typedef struct {
    const char *name, *metric_name, *type; /* type: metric_type_name or the engine metric */
    double target, activation;
    unsigned cooldown, up, down;
    int engine;
} want_t;

/* anchor-keda-gpu-scaler.md section 1.3, then ours. */
static const want_t want[] = {
    {"distributed-training", "keda_gpu_distributed_training", "nvlink_tx_mbps", 50000, 5000, 300,
     60, 300, 0},
    {"vllm-inference", "keda_gpu_vllm_inference", "memory_used_percent", 80, 5, 60, 15, 120, 0},
    {"vllm-queue-depth", "keda_gpu_vllm_queue_depth", "vllm_queue_depth", 5, 1, 30, 10, 60, 1},
    {"triton-inference", "keda_gpu_triton_inference", "gpu_utilization", 75, 10, 30, 10, 90, 0},
    {"triton-queue-wait", "keda_gpu_triton_queue_wait", "triton_queue_wait_ms", 50, 5, 30, 10, 60,
     1},
    {"triton-request-rate", "keda_gpu_triton_request_rate", "triton_request_rate", 50, 1, 30, 10,
     90, 1},
    {"training", "keda_gpu_training", "gpu_utilization", 90, 0, 300, 60, 300, 0},
    {"batch", "keda_gpu_batch", "memory_used_percent", 70, 1, 30, 5, 60, 0},
    {"ollama", "keda_gpu_ollama", "memory_used_percent", 70, 3, 60, 10, 120, 0},
    {"tgi-inference", "keda_gpu_tgi_inference", "memory_used_percent", 75, 5, 45, 15, 90, 0},
    {"sm-active", "keda_gpu_sm_active", "sm_active", 70, 5, 60, 15, 300, 0},
    {"mig-sm-active", "keda_gpu_mig_sm_active", "sm_active", 70, 5, 60, 15, 300, 0},
};
#define NWANT (sizeof want / sizeof want[0])

static void test_profiles_table_has_every_profile_with_its_values_in_order(void **state) {
    (void)state;
    assert_int_equal(profile_count(), NWANT);
    for (size_t i = 0; i < NWANT; i++) {
        const profile_t *p = profile_at(i);
        assert_non_null(p);
        assert_string_equal(p->name, want[i].name);
        assert_string_equal(p->metric_name, want[i].metric_name);
        if (want[i].engine) {
            assert_non_null(p->engine_metric);
            assert_string_equal(p->engine_metric, want[i].type);
        } else {
            assert_null(p->engine_metric);
            assert_string_equal(metric_type_name(p->metric_type), want[i].type);
        }
        assert_true(p->target == want[i].target);
        assert_true(p->activation == want[i].activation);
        assert_int_equal(p->cooldown_s, want[i].cooldown);
        assert_int_equal(p->scale_up_stabilize_s, want[i].up);
        assert_int_equal(p->scale_down_stabilize_s, want[i].down);
    }
    assert_null(profile_at(NWANT));
}

static void test_profiles_find_returns_each_profile_by_exact_name(void **state) {
    (void)state;
    for (size_t i = 0; i < NWANT; i++) {
        const profile_t *p = profile_find(want[i].name, strlen(want[i].name));
        assert_ptr_equal(p, profile_at(i));
    }
    assert_null(profile_find("batc", 4));
    assert_null(profile_find("batchx", 6));
    assert_null(profile_find("Batch", 5));
    assert_null(profile_find("", 0));
    assert_null(profile_find(NULL, 0));
    /* length, not NUL, delimits the name */
    assert_ptr_equal(profile_find("batch-and-more", 5), profile_find("batch", 5));
}

static void test_profiles_every_gpu_profile_parses_to_its_table_values(void **state) {
    (void)state;
    for (size_t i = 0; i < NWANT; i++) {
        metadata_pair_t p = {"profile", 7, want[i].name, strlen(want[i].name)};
        trigger_config_t c;
        char err[512] = "";
        int rc = trigger_config_parse(&p, 1, &c, err, sizeof err);
        if (want[i].engine) {
            /* Engine profiles read an engine: without a URL they say where one goes. */
            assert_int_equal(rc, KGS_EINVAL);
            assert_non_null(strstr(err, "needs where to scrape"));
            bool vllm = strncmp(want[i].name, "vllm", 4) == 0;
            metadata_pair_t two[2] = {p,
                                      {vllm ? "vllmEndpoint" : "tritonEndpoint", vllm ? 12u : 14u,
                                       "http://engine:8000/metrics", 26}};
            rc = trigger_config_parse(two, 2, &c, err, sizeof err);
            assert_int_equal(rc, 0);
            assert_string_equal(demand_type_name(c.demand.type), want[i].type);
        } else {
            assert_int_equal(rc, 0);
            assert_string_equal(metric_type_name(c.metric_type), want[i].type);
        }
        assert_string_equal(c.profile, want[i].name);
        assert_string_equal(c.metric_name, want[i].metric_name);
        assert_true(c.target_value == want[i].target);
        assert_true(c.activation_threshold == want[i].activation);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_profiles_table_has_every_profile_with_its_values_in_order),
        cmocka_unit_test(test_profiles_find_returns_each_profile_by_exact_name),
        cmocka_unit_test(test_profiles_every_gpu_profile_parses_to_its_table_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
