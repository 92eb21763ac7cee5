/* test_hpa.c - the simulator's KEDA and HPA arithmetic against hand-computed
 * cases (kubernetes replica_calculator.go, horizontal.go; KEDA
 * scale_scaledobjects.go), including the node-max cap the Go system hits. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/evaluator.h"
#include "core/metadata.h"
#include "core/snapshot.h"
#include "core/trigger_config.h"
#include "hpa.h"
#include "support/test_support.h"

static void test_hpa_average_value_is_ceil_total_over_target(void **state) {
    (void)state;
    /* 4 pods at 90 % SM-active summed = 360, target 60 -> 6 */
    assert_int_equal(hpa_replicas_average_value(360, 60, 4, 0.1), 6);
    /* ratio 250 / 400 = 0.625 -> ceil(2.5) = 3 */
    assert_int_equal(hpa_replicas_average_value(250, 100, 4, 0.1), 3);
    /* 40 waiting, target 5, 3 replicas -> 8 */
    assert_int_equal(hpa_replicas_average_value(40, 5, 3, 0.1), 8);
    /* 0 -> 0 (the HPA's min clamp and KEDA handle the rest) */
    assert_int_equal(hpa_replicas_average_value(0, 5, 3, 0.1), 0);
}

static void test_hpa_average_value_keeps_replicas_within_tolerance(void **state) {
    (void)state;
    /* ratio 380 / 400 = 0.95 and 430 / 400 = 1.075: within +-10 %: keep 4 */
    assert_int_equal(hpa_replicas_average_value(380, 100, 4, 0.1), 4);
    assert_int_equal(hpa_replicas_average_value(430, 100, 4, 0.1), 4);
    /* 1.1125: outside -> ceil(4.45) = 5; 0.85 -> ceil(3.4) = 4 (ceil, not round) */
    assert_int_equal(hpa_replicas_average_value(445, 100, 4, 0.1), 5);
    assert_int_equal(hpa_replicas_average_value(340, 100, 4, 0.1), 4);
    /* 0.875 at 8 replicas: ceil(7) = 7 */
    assert_int_equal(hpa_replicas_average_value(700, 100, 8, 0.1), 7);
}

static void test_hpa_value_scales_ready_pods_by_ratio(void **state) {
    (void)state;
    /* average 90 against 60 with 4 ready -> ceil(1.5 x 4) = 6 */
    assert_int_equal(hpa_replicas_value(90, 60, 4, 4, 0.1), 6);
    /* only 3 of the 4 ready: ceil(1.5 x 3) = 5 */
    assert_int_equal(hpa_replicas_value(90, 60, 4, 3, 0.1), 5);
    /* within tolerance: keep current */
    assert_int_equal(hpa_replicas_value(63, 60, 4, 4, 0.1), 4);
    /* at 0 replicas: ceil(ratio) */
    assert_int_equal(hpa_replicas_value(90, 60, 0, 0, 0.1), 2);
}

static void test_hpa_scale_up_limit_is_max_of_four_pods_and_double(void **state) {
    (void)state;
    assert_int_equal(hpa_scale_up_limit(3, 4, 100), 7);   /* +4 beats x2 */
    assert_int_equal(hpa_scale_up_limit(10, 4, 100), 20); /* x2 beats +4 */
    assert_int_equal(hpa_scale_up_limit(4, 4, 100), 8);
    assert_int_equal(hpa_scale_up_limit(0, 4, 100), 4);
}

static void test_hpa_sync_scales_up_at_most_the_limit_per_period(void **state) {
    (void)state;
    hpa_t h;
    hpa_init(&h, 0, 32);
    /* 3 replicas, 40 waiting, target 5 -> 8, limited to 7, then 8 */
    assert_int_equal(hpa_sync(&h, 0, 3, 3, 40, 5), 7);
    assert_int_equal(hpa_sync(&h, 15, 7, 3, 40, 5), 8);
    /* from 1 with a huge demand: 1 -> 5 -> 10 -> 20 -> 32 (max) */
    hpa_init(&h, 0, 32);
    int r = 1;
    static const int want[] = {5, 10, 20, 32, 32};
    for (int i = 0; i < 5; i++) {
        r = hpa_sync(&h, 15.0 * i, r, r, 1e6, 1);
        assert_int_equal(r, want[i]);
    }
    /* two syncs within one 15 s period share one limit: 3 -> 7, then 7 stays */
    hpa_init(&h, 0, 32);
    assert_int_equal(hpa_sync(&h, 0, 3, 3, 1000, 1), 7);
    assert_int_equal(hpa_sync(&h, 5, 7, 3, 1000, 1), 7);
    assert_int_equal(hpa_sync(&h, 15, 7, 3, 1000, 1), 14);
}

/* No behavior (what KEDA creates unless the ScaledObject sets one):
 * horizontal.go's legacy path, max(2 x current, 4) per sync. */
static void test_hpa_legacy_scale_up_is_max_of_double_and_four_per_sync(void **state) {
    (void)state;
    assert_int_equal(hpa_legacy_scale_up_limit(0), 4);
    assert_int_equal(hpa_legacy_scale_up_limit(1), 4);
    assert_int_equal(hpa_legacy_scale_up_limit(2), 4);
    assert_int_equal(hpa_legacy_scale_up_limit(3), 6);
    assert_int_equal(hpa_legacy_scale_up_limit(10), 20);
    hpa_t h;
    hpa_init_legacy(&h, 0, 32);
    assert_true(h.legacy);
    /* from 1 with a huge demand: 1 -> 4 -> 8 -> 16 -> 32 (max), where the
     * default behavior climbs 1 -> 5 -> 10 -> 20 -> 32 */
    int r = 1;
    static const int want[] = {4, 8, 16, 32, 32};
    for (int i = 0; i < 5; i++) {
        r = hpa_sync(&h, 15.0 * i, r, r, 1e6, 1);
        assert_int_equal(r, want[i]);
    }
    /* 3 replicas, 40 waiting, target 5 -> 8, limited to max(6, 4) = 6 */
    hpa_init_legacy(&h, 0, 32);
    assert_int_equal(hpa_sync(&h, 0, 3, 3, 40, 5), 6);
    /* no per-period accounting: a second sync 5 s later doubles again */
    assert_int_equal(hpa_sync(&h, 5, 6, 3, 1000, 1), 12);
    /* the max clamp below the limit: 20 -> 32 is within 40, clamped to 25 */
    hpa_init_legacy(&h, 0, 25);
    assert_int_equal(hpa_sync_desired(&h, 0, 20, 100), 25);
}

static void test_hpa_legacy_stabilises_with_the_window_max(void **state) {
    (void)state;
    hpa_t h;
    hpa_init_legacy(&h, 0, 32);
    assert_int_equal(hpa_sync_desired(&h, 0, 10, 10), 10);
    for (int t = 15; t < 300; t += 15)
        assert_int_equal(hpa_sync_desired(&h, t, 10, 2), 10);
    assert_int_equal(hpa_sync_desired(&h, 300, 10, 2), 2);
    /* the window's maximum is the recommendation even above current: a
     * recommendation of 9 limited to 4 at 1 replica is still 9 at the next
     * sync, now reachable (limit 8): 8 */
    hpa_init_legacy(&h, 0, 32);
    assert_int_equal(hpa_sync_desired(&h, 0, 1, 9), 4);
    assert_int_equal(hpa_sync_desired(&h, 15, 4, 1), 8);
    assert_int_equal(hpa_sync_desired(&h, 30, 8, 1), 9);
    /* min clamp: KEDA minReplicaCount 0 -> HPA min 1 */
    hpa_init_legacy(&h, 0, 5);
    assert_int_equal(hpa_sync_desired(&h, 0, 3, 0), 1); /* the window holds only 0: min 1 */
}

static void test_hpa_sync_stabilises_scale_down_over_300_s(void **state) {
    (void)state;
    hpa_t h;
    hpa_init(&h, 0, 32);
    assert_int_equal(hpa_sync_desired(&h, 0, 10, 10), 10);
    /* the demand drops to 2: the max recommendation of the last 300 s is 10 */
    for (int t = 15; t < 300; t += 15)
        assert_int_equal(hpa_sync_desired(&h, t, 10, 2), 10);
    /* at 300 s the t = 0 recommendation leaves the window: straight to 2
     * (the default scale-down policy, 100 % per 15 s, does not limit) */
    assert_int_equal(hpa_sync_desired(&h, 300, 10, 2), 2);
    /* a peak inside the window holds the highest recommendation */
    hpa_init(&h, 0, 32);
    assert_int_equal(hpa_sync_desired(&h, 0, 8, 8), 8);
    assert_int_equal(hpa_sync_desired(&h, 100, 8, 3), 8);
    assert_int_equal(hpa_sync_desired(&h, 200, 8, 5), 8);
    assert_int_equal(hpa_sync_desired(&h, 300, 8, 3), 5); /* max(3, 5, 3) */
    /* scale-up is not stabilised */
    assert_int_equal(hpa_sync_desired(&h, 315, 5, 9), 9);
}

static void test_hpa_sync_clamps_to_min_and_max(void **state) {
    (void)state;
    hpa_t h;
    hpa_init(&h, 0, 5); /* KEDA minReplicaCount 0 -> HPA min 1 */
    assert_int_equal(h.min_replicas, 1);
    assert_int_equal(hpa_sync(&h, 0, 4, 4, 1000, 1), 5);
    hpa_init(&h, 3, 10);
    assert_int_equal(hpa_sync_desired(&h, 0, 3, 0), 3);
    hpa_init(&h, 3, 10);
    assert_int_equal(hpa_sync_desired(&h, 0, 2, 1), 3);
}

static void test_hpa_keda_activates_from_zero_and_waits_for_cooldown(void **state) {
    (void)state;
    hpa_keda_t k;
    hpa_keda_init(&k, 30, 300, 0, 10);
    /* never active, replicas 0: nothing */
    assert_int_equal(hpa_keda_poll(&k, 0, 0, false), 0);
    /* active at 0 -> max(min, 1) = 1 */
    assert_int_equal(hpa_keda_poll(&k, 30, 0, true), 1);
    /* active with replicas: the HPA's business */
    assert_int_equal(hpa_keda_poll(&k, 60, 6, true), 6);
    /* inactive from 90 s: lastActiveTime 60 + 300 must pass (strictly) */
    assert_int_equal(hpa_keda_poll(&k, 90, 6, false), 6);
    assert_int_equal(hpa_keda_poll(&k, 360, 6, false), 6);
    assert_int_equal(hpa_keda_poll(&k, 361, 6, false), 0); /* N -> 0 in one step */
    /* minReplicaCount 3: activation writes 3, and no scale to zero */
    hpa_keda_init(&k, 30, 300, 3, 10);
    assert_int_equal(hpa_keda_poll(&k, 0, 0, true), 3);
    assert_int_equal(hpa_keda_poll(&k, 1000, 3, false), 3);
    assert_int_equal(hpa_keda_poll(&k, 1000, 2, false), 3); /* below min: min */
    /* never active with replicas > 0 and min 0: initialCooldownPeriod 0 -> 0 */
    hpa_keda_init(&k, 30, 300, 0, 10);
    assert_int_equal(hpa_keda_poll(&k, 0, 2, false), 0);
}

/* The Go system: each DaemonSet pod answers with its own node's GPU
 * utilisation (aggregation max over the node's GPUs) and KEDA's AverageValue
 * divides that one node's value by the target. 4 nodes at 100 %, target 50:
 * desired = ceil(100 / 50) = 2 whatever the load. Evaluated with the real
 * evaluator on one node's snapshot. */
static void test_hpa_node_max_caps_the_go_system_at_ceil_100_over_target(void **state) {
    (void)state;
    trigger_config_t c =
        CFG("metricType", "gpu_utilization", "targetValue", "50", "aggregation", "max");
    snapshot_t *s = snapshot_new(1, 0);
    assert_non_null(s);
    s->taken_mono = 1000 * NS_PER_SEC;
    s->status = SNAPSHOT_OK;
    snprintf(s->node_name, sizeof s->node_name, "node-1");
    s->gpus[0].valid = 1u << GPU_F_GPU_UTIL;
    s->gpus[0].gpu_util_pct = 100;
    s->gpus[0].health = GPU_HEALTH_OK;
    eval_result_t r;
    evaluator_run(&c, s, s->taken_mono, NS_PER_SEC, &r);
    assert_int_equal(r.status, EVAL_OK);
    assert_float_equal(r.value, 100, 0);
    assert_int_equal(hpa_replicas_average_value(r.value, c.target_value, 4, 0.1), 2);
    /* and the HPA takes the fleet from 4 down to 2 once the window passes */
    hpa_t h;
    hpa_init(&h, 1, 32);
    int reps = 4;
    for (int t = 0; t <= 300; t += 15)
        reps = hpa_sync(&h, t, reps, reps, r.value, c.target_value);
    assert_int_equal(reps, 2);
    /* the workload-wide sum (4 x 100 = 400) would have asked for 8 */
    assert_int_equal(hpa_replicas_average_value(400, c.target_value, 4, 0.1), 8);
    snapshot_unref(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hpa_average_value_is_ceil_total_over_target),
        cmocka_unit_test(test_hpa_average_value_keeps_replicas_within_tolerance),
        cmocka_unit_test(test_hpa_value_scales_ready_pods_by_ratio),
        cmocka_unit_test(test_hpa_scale_up_limit_is_max_of_four_pods_and_double),
        cmocka_unit_test(test_hpa_sync_scales_up_at_most_the_limit_per_period),
        cmocka_unit_test(test_hpa_legacy_scale_up_is_max_of_double_and_four_per_sync),
        cmocka_unit_test(test_hpa_legacy_stabilises_with_the_window_max),
        cmocka_unit_test(test_hpa_sync_stabilises_scale_down_over_300_s),
        cmocka_unit_test(test_hpa_sync_clamps_to_min_and_max),
        cmocka_unit_test(test_hpa_keda_activates_from_zero_and_waits_for_cooldown),
        cmocka_unit_test(test_hpa_node_max_caps_the_go_system_at_ceil_100_over_target),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
