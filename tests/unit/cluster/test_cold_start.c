/* test_cold_start.c - one workload's cold-start record: completed starts
 * and their stages, failed starts by reason, each pod counted once, over
 * rounds of pods as the pod cache holds them while they go through their
 * start (the statuses themselves are read in tests/unit/kube/
 * test_pod_start.c). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cluster/cold_start.h"

#define T0 1795946400 /* 2026-11-29T10:00:00Z */

static pod_t pod(const char *uid) {
    pod_t p;
    memset(&p, 0, sizeof p);
    p.namespace = "inference";
    p.name = uid; /* borrowed, like uid: the caller's string outlives the pod */
    p.uid = uid;
    p.phase = POD_PHASE_PENDING;
    p.created_unix = T0;
    return p;
}

static void unschedulable(pod_t *p, const char *msg) {
    p->start.trouble = POD_TROUBLE_UNSCHEDULABLE;
    p->start.message = msg;
}

/* Scheduled after node_s, running image_s later, Ready weights_s later. */
static void ready(pod_t *p, int node_s, int image_s, int weights_s) {
    p->start.trouble = POD_TROUBLE_NONE;
    p->start.message = "";
    p->start.scheduled_unix = p->created_unix + node_s;
    p->start.running_unix = p->start.scheduled_unix + image_s;
    p->start.ready_unix = p->start.running_unix + weights_s;
    p->phase = POD_PHASE_RUNNING;
    p->ready = true;
}

static void round_of(cold_start_t *r, pod_t *pods, size_t n) {
    cold_start_round_begin(r);
    for (size_t i = 0; i < n; i++)
        cold_start_round_pod(r, &pods[i]);
    assert_int_equal(cold_start_round_end(r), 0);
}

static int setup(void **state) {
    static cold_start_t r;
    cold_start_init(&r);
    *state = &r;
    return 0;
}

static int teardown(void **state) {
    cold_start_deinit(*state);
    return 0;
}

/* Issue 33's example, and a pod counted once however often it is seen. */
static void test_cold_start_records_a_completed_start_once(void **state) {
    cold_start_t *r = *state;
    pod_t p = pod("a");
    ready(&p, 61, 38, 29);
    for (int i = 0; i < 3; i++)
        round_of(r, &p, 1);
    assert_true(r->completed == 1);
    double m[POD_STAGE_COUNT];
    assert_int_equal(cold_start_mean(r, m), 1);
    assert_true(m[POD_STAGE_NODE] == 61 && m[POD_STAGE_IMAGE] == 38 && m[POD_STAGE_WEIGHTS] == 29);
    /* 61 s is in the (60, 90] bucket, 38 s in (30, 45], 29 s in (20, 30] */
    const double *b = cold_start_bucket_bounds();
    assert_true(b[8] == 90 && r->hist[POD_STAGE_NODE][8] == 1);
    assert_true(b[6] == 45 && r->hist[POD_STAGE_IMAGE][6] == 1);
    assert_true(b[5] == 30 && r->hist[POD_STAGE_WEIGHTS][5] == 1);
    assert_true(r->hist_sum[POD_STAGE_NODE] == 61);
    assert_true(cold_start_failed_total(r) == 0);
}

/* The summary is the last COLD_START_KEEP starts; the histograms keep all. */
static void test_cold_start_keeps_the_last_eight(void **state) {
    cold_start_t *r = *state;
    pod_t pods[10];
    char uids[10][8];
    for (int i = 0; i < 10; i++) {
        snprintf(uids[i], sizeof uids[i], "p%d", i);
        pods[i] = pod(uids[i]);
    }
    /* two slow ones first, then eight of 10 + 20 + 30 s */
    for (int i = 0; i < 10; i++) {
        if (i < 2)
            ready(&pods[i], 600, 600, 600);
        else
            ready(&pods[i], 10, 20, 30);
        round_of(r, pods, (size_t)i + 1);
    }
    assert_true(r->completed == 10);
    double m[POD_STAGE_COUNT];
    assert_int_equal(cold_start_mean(r, m), COLD_START_KEEP);
    assert_true(m[0] == 10 && m[1] == 20 && m[2] == 30);
    uint64_t n = 0;
    for (int b = 0; b <= COLD_START_BUCKETS; b++)
        n += r->hist[POD_STAGE_NODE][b];
    assert_true(n == 10);
}

/* Unschedulable, then a node appears: the wait is the node stage, no
 * failure. */
static void test_cold_start_a_wait_for_a_node_is_the_node_stage(void **state) {
    cold_start_t *r = *state;
    pod_t p = pod("a");
    unschedulable(&p, "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.");
    round_of(r, &p, 1);
    assert_int_equal(r->waiting_for_node, 1);
    assert_string_equal(r->unschedulable_message,
                        "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.");
    ready(&p, 240, 30, 20);
    round_of(r, &p, 1);
    assert_int_equal(r->waiting_for_node, 0);
    assert_true(r->completed == 1 && cold_start_failed_total(r) == 0);
    double m[POD_STAGE_COUNT];
    cold_start_mean(r, m);
    assert_true(m[POD_STAGE_NODE] == 240);
}

/* Deleted while it waited for a node: a failed start, Unschedulable. */
static void test_cold_start_deleted_while_unschedulable_is_a_failed_start(void **state) {
    cold_start_t *r = *state;
    pod_t p = pod("a");
    unschedulable(&p, "0/3 nodes are available");
    round_of(r, &p, 1);
    round_of(r, NULL, 0); /* gone from the cache */
    assert_true(r->failed[POD_TROUBLE_UNSCHEDULABLE] == 1);
    assert_int_equal(r->last_failed, POD_TROUBLE_UNSCHEDULABLE);
    round_of(r, NULL, 0);
    assert_true(cold_start_failed_total(r) == 1);
    /* seen with its deletionTimestamp first: the same, once */
    pod_t q = pod("b");
    unschedulable(&q, "0/3 nodes are available");
    round_of(r, &q, 1);
    q.deleting = true;
    round_of(r, &q, 1);
    round_of(r, NULL, 0);
    assert_true(r->failed[POD_TROUBLE_UNSCHEDULABLE] == 2);
}

/* Deleted while it pulled, with no trouble (KEDA scaled in): nothing. */
static void test_cold_start_deleted_while_starting_counts_nothing(void **state) {
    cold_start_t *r = *state;
    pod_t p = pod("a");
    p.start.scheduled_unix = T0 + 1;
    round_of(r, &p, 1);
    round_of(r, NULL, 0);
    assert_true(r->completed == 0 && cold_start_failed_total(r) == 0);
}

/* An image pull back-off counts once as a failed start, and a pod that
 * then starts after all is no completed start (its stage held back-off). */
static void test_cold_start_image_pull_backoff_is_a_failed_start_not_a_long_stage(void **state) {
    cold_start_t *r = *state;
    pod_t p = pod("a");
    p.start.scheduled_unix = T0 + 1;
    p.start.trouble = POD_TROUBLE_ERR_IMAGE_PULL;
    round_of(r, &p, 1);
    p.start.trouble = POD_TROUBLE_IMAGE_PULL_BACKOFF;
    round_of(r, &p, 1);
    assert_true(r->failed[POD_TROUBLE_ERR_IMAGE_PULL] == 1);
    assert_true(cold_start_failed_total(r) == 1);
    ready(&p, 1, 900, 30);
    round_of(r, &p, 1);
    assert_true(r->completed == 0 && cold_start_failed_total(r) == 1);
}

/* Crash loops and OOM kills, and a pod that failed outright. */
static void test_cold_start_counts_failed_starts_by_reason(void **state) {
    cold_start_t *r = *state;
    pod_t pods[3] = {pod("a"), pod("b"), pod("c")};
    pods[0].start.trouble = POD_TROUBLE_CRASH_LOOP_BACKOFF;
    pods[1].start.trouble = POD_TROUBLE_OOM_KILLED;
    pods[2].phase = POD_PHASE_FAILED;
    pods[2].start.trouble = POD_TROUBLE_OTHER;
    round_of(r, pods, 3);
    round_of(r, pods, 3);
    assert_true(r->failed[POD_TROUBLE_CRASH_LOOP_BACKOFF] == 1);
    assert_true(r->failed[POD_TROUBLE_OOM_KILLED] == 1);
    assert_true(r->failed[POD_TROUBLE_OTHER] == 1);
    assert_true(r->failed[POD_TROUBLE_NONE] == 0);
    assert_true(cold_start_failed_total(r) == 3);
}

/* A Ready pod whose times are not a first start (a restart) is done but
 * no figure; a round left unfinished counts nothing. */
static void test_cold_start_a_restarted_pod_is_no_figure(void **state) {
    cold_start_t *r = *state;
    pod_t p = pod("a");
    ready(&p, 1, 2, 3);
    p.start.restarted = true;
    round_of(r, &p, 1);
    assert_true(r->completed == 0);
    double m[POD_STAGE_COUNT];
    assert_int_equal(cold_start_mean(r, m), 0);
    assert_true(isnan(m[0]));
}

/* Records by workload; the least recently used makes room. */
static void test_cold_start_book_keeps_a_record_per_workload(void **state) {
    (void)state;
    cold_start_book_t b;
    cold_start_book_init(&b);
    cold_start_workload_t *w = cold_start_book_get(&b, "inference", "app=vllm", 1);
    assert_non_null(w);
    w->rec.completed = 7;
    assert_ptr_equal(cold_start_book_get(&b, "inference", "app=vllm", 2), w);
    assert_null(cold_start_book_find(&b, "other", "app=vllm"));
    for (int i = 0; i < COLD_START_WORKLOADS - 1; i++) {
        char sel[32];
        snprintf(sel, sizeof sel, "app=w%d", i);
        assert_non_null(cold_start_book_get(&b, "inference", sel, 10 + (mono_ns_t)i));
    }
    assert_int_equal(b.n, COLD_START_WORKLOADS);
    /* full: the one used last at 2 ("app=vllm") goes */
    assert_non_null(cold_start_book_get(&b, "inference", "app=new", 1000));
    assert_int_equal(b.n, COLD_START_WORKLOADS);
    assert_null(cold_start_book_find(&b, "inference", "app=vllm"));
    assert_non_null(cold_start_book_find(&b, "inference", "app=w0"));
    cold_start_book_deinit(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_cold_start_records_a_completed_start_once, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_cold_start_keeps_the_last_eight, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cold_start_a_wait_for_a_node_is_the_node_stage, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_cold_start_deleted_while_unschedulable_is_a_failed_start, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cold_start_deleted_while_starting_counts_nothing,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_cold_start_image_pull_backoff_is_a_failed_start_not_a_long_stage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cold_start_counts_failed_starts_by_reason, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_cold_start_a_restarted_pod_is_no_figure, setup,
                                        teardown),
        cmocka_unit_test(test_cold_start_book_keeps_a_record_per_workload),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
