/* test_workload.c - the aggregator's workload-wide answer, on hand-built
 * snapshots, pod attributions and pod caches. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cluster/cluster_view.h"
#include "kube/kube_pods.h"
#include "cluster/node_pods.h"
#include "cluster/workload.h"
#include "core/err.h"
#include "core/trigger_config.h"
#include "support/test_support.h"

#define T0 (UINT64_C(1000) * NS_PER_SEC)
#define NOW (T0 + NS_PER_SEC)
#define STALE (3 * NS_PER_SEC)
#define MAX_PODS 32

/* The aggregator's inputs without Node objects. */
#define IN(view_, pods_, synced_, now_)                                                            \
    (&(workload_inputs_t){.view = (view_),                                                         \
                          .pods = (pods_),                                                         \
                          .pods_synced = (synced_),                                                \
                          .now = (now_),                                                           \
                          .stale_after_ns = STALE})

typedef struct {
    cluster_view_t *view;
    pod_cache_t *cache;
    pod_t *pods; /* MAX_PODS */
    size_t npods;
} fx_t;

static int setup(void **state) {
    fx_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->pods = calloc(MAX_PODS, sizeof *f->pods);
    assert_non_null(f->pods);
    assert_int_equal(cluster_view_new(&f->view), 0);
    assert_int_equal(pod_cache_new(&f->cache), 0);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fx_t *f = *state;
    cluster_view_free(f->view);
    pod_cache_free(f->cache);
    for (size_t i = 0; i < f->npods; i++)
        pod_deinit(&f->pods[i]);
    free(f->pods);
    free(f);
    return 0;
}

/* ---- builders ------------------------------------------------------------- */

/* A snapshot of `node` with GPUs "GPU-<node>-<i>" whose utilisation is
 * util[i]; every field present. */
static snapshot_t *snap(const char *node, unsigned gpus, const unsigned *util, unsigned migs,
                        mono_ns_t taken) {
    snapshot_t *s = snapshot_new(gpus, migs);
    assert_non_null(s);
    s->taken_mono = taken;
    s->status = SNAPSHOT_OK;
    snprintf(s->node_name, sizeof s->node_name, "%s", node);
    for (unsigned i = 0; i < gpus; i++) {
        gpu_record_t *g = &s->gpus[i];
        g->index = i;
        snprintf(g->uuid, sizeof g->uuid, "GPU-%s-%u", node, i);
        for (int fl = 0; fl < GPU_F_COUNT; fl++)
            g->valid |= 1u << fl;
        g->gpu_util_pct = util[i];
        g->memory_used_bytes = UINT64_C(1) << 30;
        g->memory_total_bytes = UINT64_C(8) << 30;
        g->sm_active_pct = 20;
        g->health = GPU_HEALTH_OK;
    }
    return s;
}

static void add_mig(snapshot_t *s, unsigned k, unsigned parent, const char *uuid,
                    const char *profile, double sm_active) {
    mig_record_t *m = &s->mig[k];
    m->parent_index = parent;
    snprintf(m->uuid, sizeof m->uuid, "%s", uuid);
    snprintf(m->profile, sizeof m->profile, "%s", profile);
    m->valid = (1u << GPU_F_MEM_USED) | (1u << GPU_F_MEM_TOTAL) | (1u << GPU_F_SM_ACTIVE);
    m->memory_used_bytes = UINT64_C(10) << 30;
    m->memory_total_bytes = UINT64_C(40) << 30;
    m->sm_active_pct = sm_active;
    gpu_record_t *g = &s->gpus[parent];
    g->mig_enabled = true;
    if (g->mig_count++ == 0)
        g->mig_first = k;
    g->valid &= ~((1u << GPU_F_GPU_UTIL) | (1u << GPU_F_MEM_UTIL));
    g->field_error[GPU_F_GPU_UTIL] = 3;
}

/* Publishes s with attribution entries[0..n) from agent `address`. */
static void report(fx_t *f, const char *address, snapshot_t *s, const node_pod_entry_t *entries,
                   size_t n) {
    node_pods_t *np = NULL;
    char err[256];
    if (node_pods_new(entries, n, &np, err, sizeof err) != 0)
        fail_msg("node_pods_new: %s", err);
    assert_int_equal(cluster_view_update(f->view, address, s, np, NOW), 0);
}

/* Adds a pod to the fixture's list (published by sync()). labels is a JSON
 * object text. */
static void pod(fx_t *f, const char *ns, const char *name, const char *node, const char *phase,
                const char *labels, bool deleting) {
    char js[1024];
    snprintf(js, sizeof js,
             "{\"metadata\":{\"namespace\":\"%s\",\"name\":\"%s\",\"uid\":\"%s-%s\","
             "\"resourceVersion\":\"1\",\"labels\":%s%s},\"spec\":{\"nodeName\":\"%s\"},"
             "\"status\":{\"phase\":\"%s\"}}",
             ns, name, ns, name, labels,
             deleting ? ",\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"" : "", node, phase);
    json_error_t je;
    json_t *j = json_loads(js, 0, &je);
    if (!j)
        fail_msg("bad test JSON: %s", je.text);
    char err[256];
    assert_true(f->npods < MAX_PODS);
    if (kube_pod_from_json(j, &f->pods[f->npods], err, sizeof err) != 0)
        fail_msg("pod: %s", err);
    json_decref(j);
    f->npods++;
}

static void sync_pods(fx_t *f) {
    assert_int_equal(pod_cache_replace_all(f->cache, f->pods, f->npods, "10"), 0);
}

static eval_result_t eval_st(fx_t *f, const trigger_config_t *c, workload_stats_t *st) {
    eval_result_t r;
    memset(&r, 0x5a, sizeof r);
    memset(st, 0x5a, sizeof *st);
    workload_evaluate(c, "ml", IN(f->view, f->cache, true, NOW), &r, st);
    return r;
}

static eval_result_t eval(fx_t *f, const trigger_config_t *c) {
    workload_stats_t st;
    return eval_st(f, c, &st);
}

static void expect_ok(eval_result_t r, double value, unsigned inputs) {
    if (r.status != EVAL_OK)
        fail_msg("expected OK, got %d: %s", (int)r.status, r.message);
    assert_true(fabs(r.value - value) < 1e-9);
    assert_int_equal(r.inputs, inputs);
    assert_string_equal(r.message, "");
}

static void expect_error(eval_result_t r, eval_status_t st, const char *needle) {
    if (r.status != st)
        fail_msg("expected status %d, got %d: %s", (int)st, (int)r.status, r.message);
    if (!strstr(r.message, needle))
        fail_msg("message \"%s\" lacks \"%s\"", r.message, needle);
    assert_false(r.active);
}

#define APP_VLLM "{\"app\":\"vllm\"}"

/*
 * The cluster of most tests: nodes n1..n3 with 4 GPUs each. GPU utilisation:
 * n1 [10 20 90 90], n2 [30 40 90 90], n3 [50 60 90 90]. Our Deployment
 * (ml, app=vllm) runs vllm-a..vllm-f, two per node, on GPUs 0 and 1; another
 * tenant's app=vllm pods (namespace other) hold every GPU 2, and an ml
 * trainer holds every GPU 3. `taken[k]` is node k's snapshot time.
 */
static const unsigned UTIL[3][4] = {{10, 20, 90, 90}, {30, 40, 90, 90}, {50, 60, 90, 90}};
static const char *const NODES[3] = {"n1", "n2", "n3"};
static const char *const OURS[3][2] = {
    {"vllm-a", "vllm-b"}, {"vllm-c", "vllm-d"}, {"vllm-e", "vllm-f"}};

static snapshot_t *cluster_node(unsigned k, mono_ns_t taken) {
    return snap(NODES[k], 4, UTIL[k], 0, taken);
}

static void report_cluster_node(fx_t *f, unsigned k, snapshot_t *s) {
    static char ids[3][4][32];
    static const char *idp[3][4][1];
    const char *others[3] = {"other-1", "other-2", "other-3"};
    const char *trainers[3] = {"trainer-1", "trainer-2", "trainer-3"};
    for (unsigned i = 0; i < 4; i++) {
        snprintf(ids[k][i], sizeof ids[k][i], "GPU-%s-%u", NODES[k], i);
        idp[k][i][0] = ids[k][i];
    }
    node_pod_entry_t e[] = {
        {"ml", OURS[k][0], "vllm", idp[k][0], 1},
        {"ml", OURS[k][1], "vllm", idp[k][1], 1},
        {"other", others[k], "vllm", idp[k][2], 1},
        {"ml", trainers[k], "train", idp[k][3], 1},
    };
    char addr[32];
    snprintf(addr, sizeof addr, "10.0.0.%u:6001", k + 1);
    report(f, addr, s, e, 4);
}

static void cluster_pods(fx_t *f) {
    for (unsigned k = 0; k < 3; k++) {
        pod(f, "ml", OURS[k][0], NODES[k], "Running", APP_VLLM, false);
        pod(f, "ml", OURS[k][1], NODES[k], "Running", APP_VLLM, false);
        char name[32];
        snprintf(name, sizeof name, "other-%u", k + 1);
        pod(f, "other", name, NODES[k], "Running", APP_VLLM, false);
        snprintf(name, sizeof name, "trainer-%u", k + 1);
        pod(f, "ml", name, NODES[k], "Running", "{\"app\":\"trainer\"}", false);
    }
    sync_pods(f);
}

static void cluster(fx_t *f) {
    for (unsigned k = 0; k < 3; k++)
        report_cluster_node(f, k, cluster_node(k, T0));
    cluster_pods(f);
}

/* ---- podSelector ----------------------------------------------------------- */

static void test_workload_sums_only_the_selected_deployments_pods_across_nodes(void **state) {
    fx_t *f = *state;
    cluster(f);
    trigger_config_t c = CFG("podSelector", "app=vllm", "activationThreshold", "100");
    workload_stats_t st;
    eval_result_t r = eval_st(f, &c, &st);
    expect_ok(r, 10 + 20 + 30 + 40 + 50 + 60, 6);
    assert_true(r.active);
    assert_int_equal(st.pods_in_scope, 6);
    assert_int_equal(st.pods_counted, 6);
    assert_int_equal(st.pods_without_gpu, 0);
    assert_int_equal(st.skipped, 0);
    assert_string_equal(st.skip_reason, "");
}

static void test_workload_takes_the_namespace_key_over_the_scaled_objects(void **state) {
    fx_t *f = *state;
    cluster(f);
    trigger_config_t c = CFG("podSelector", "app=vllm", "namespace", "other");
    expect_ok(eval(f, &c), 3 * 90, 3);
}

static void test_workload_defaults_to_the_scaled_objects_namespace(void **state) {
    fx_t *f = *state;
    cluster(f);
    trigger_config_t c = CFG("podSelector", "app=trainer");
    eval_result_t r;
    workload_evaluate(&c, "ml", IN(f->view, f->cache, true, NOW), &r, NULL);
    expect_ok(r, 3 * 90, 3);
    workload_evaluate(&c, "other", IN(f->view, f->cache, true, NOW), &r, NULL);
    expect_ok(r, 0, 0);
    workload_evaluate(&c, "", IN(f->view, f->cache, true, NOW), &r, NULL);
    expect_error(r, EVAL_FAILED_PRECONDITION, "set namespace");
}

static void test_workload_averages_each_pods_gpus_then_sums_the_pods(void **state) {
    fx_t *f = *state;
    const unsigned util[4] = {10, 20, 30, 50};
    const char *a[] = {"GPU-n1-0", "GPU-n1-1"};
    const char *b1[] = {"GPU-n1-2"}, *b2[] = {"GPU-n1-3"}; /* two containers */
    node_pod_entry_t e[] = {
        {"ml", "p1", "main", a, 2}, {"ml", "p2", "main", b1, 1}, {"ml", "p2", "side", b2, 1}};
    report(f, "a1", snap("n1", 4, util, 0, T0), e, 3);
    pod(f, "ml", "p1", "n1", "Running", APP_VLLM, false);
    pod(f, "ml", "p2", "n1", "Running", APP_VLLM, false);
    sync_pods(f);

    trigger_config_t c = CFG("podSelector", "app=vllm");
    expect_ok(eval(f, &c), 15 + 40, 4);
    c = CFG("podSelector", "app=vllm", "podAggregation", "max");
    expect_ok(eval(f, &c), 20 + 50, 4);
    c = CFG("podSelector", "app=vllm", "podAggregation", "min");
    expect_ok(eval(f, &c), 10 + 30, 4);
    c = CFG("podSelector", "app=vllm", "podAggregation", "sum");
    expect_ok(eval(f, &c), 110, 4);
    c = CFG("podSelector", "app=vllm", "aggregation", "max");
    expect_ok(eval(f, &c), 40, 4);
    c = CFG("podSelector", "app=vllm", "aggregation", "avg");
    expect_ok(eval(f, &c), 27.5, 4);
}

static void test_workload_excludes_pending_finished_and_deleting_pods(void **state) {
    fx_t *f = *state;
    cluster(f);
    /* Same labels and even GPUs attributed: still not in scope. */
    const unsigned util[2] = {70, 80};
    const char *g0[] = {"GPU-n4-0"}, *g1[] = {"GPU-n4-1"};
    node_pod_entry_t e[] = {{"ml", "vllm-old", "vllm", g0, 1}, {"ml", "vllm-done", "vllm", g1, 1}};
    report(f, "a4", snap("n4", 2, util, 0, T0), e, 2);
    pod(f, "ml", "vllm-new", "", "Pending", APP_VLLM, false);
    pod(f, "ml", "vllm-done", "n4", "Succeeded", APP_VLLM, false);
    pod(f, "ml", "vllm-failed", "n4", "Failed", APP_VLLM, false);
    pod(f, "ml", "vllm-old", "n4", "Running", APP_VLLM, true);
    sync_pods(f);
    trigger_config_t c = CFG("podSelector", "app=vllm");
    workload_stats_t st;
    expect_ok(eval_st(f, &c, &st), 210, 6);
    assert_int_equal(st.pods_in_scope, 6);
}

static void test_workload_answers_zero_when_no_pod_is_in_scope(void **state) {
    fx_t *f = *state;
    cluster(f);
    trigger_config_t c = CFG("podSelector", "app=nothing-runs", "activationThreshold", "0");
    eval_result_t r = eval(f, &c);
    expect_ok(r, 0, 0);
    assert_false(r.active);

    /* Also with no agent at all: no pod runs, so no GPU is needed. */
    cluster_view_t *empty;
    assert_int_equal(cluster_view_new(&empty), 0);
    workload_evaluate(&c, "ml", IN(empty, f->cache, true, NOW), &r, NULL);
    expect_ok(r, 0, 0);
    cluster_view_free(empty);
}

static void test_workload_is_unavailable_until_the_pod_list_has_synced(void **state) {
    fx_t *f = *state;
    cluster(f);
    trigger_config_t c = CFG("podSelector", "app=vllm");
    eval_result_t r;
    workload_evaluate(&c, "ml", IN(f->view, f->cache, false, NOW), &r, NULL);
    expect_error(r, EVAL_UNAVAILABLE, "pod list from the Kubernetes API not synced: ");
    workload_evaluate(&c, "ml", IN(f->view, NULL, true, NOW), &r, NULL);
    expect_error(r, EVAL_UNAVAILABLE, "not synced");
}

static void test_workload_stale_node_fails_the_answer_with_partial_data_error(void **state) {
    fx_t *f = *state;
    report_cluster_node(f, 0, cluster_node(0, T0));
    report_cluster_node(f, 1, cluster_node(1, NOW - 4200 * NS_PER_MS)); /* 4.2 s old */
    report_cluster_node(f, 2, cluster_node(2, T0 - 9 * NS_PER_SEC));
    cluster_pods(f);
    trigger_config_t c = CFG("podSelector", "app=vllm");
    eval_result_t r = eval(f, &c);
    /* The first pod by name wins, whatever order the cache iterates in. */
    expect_error(r, EVAL_UNAVAILABLE,
                 "node n2 (pod ml/vllm-c): GPU snapshot is 4.2 s old (stale after 3.0 s)");
    expect_error(r, EVAL_UNAVAILABLE, "3 more pods affected");
}

static void test_workload_stale_node_is_left_out_with_partial_data_ignore(void **state) {
    fx_t *f = *state;
    report_cluster_node(f, 0, cluster_node(0, T0));
    report_cluster_node(f, 1, cluster_node(1, T0 - 10 * NS_PER_SEC));
    report_cluster_node(f, 2, cluster_node(2, T0));
    cluster_pods(f);
    trigger_config_t c = CFG("podSelector", "app=vllm", "partialData", "ignore");
    workload_stats_t st;
    expect_ok(eval_st(f, &c, &st), 10 + 20 + 50 + 60, 4);
    assert_int_equal(st.skipped, 2);
    assert_int_equal(st.pods_counted, 4);
    assert_non_null(strstr(st.skip_reason, "node n2 (pod ml/vllm-c): GPU snapshot is 11.0 s old"));
}

static void test_workload_with_every_pod_skipped_is_unavailable_not_zero(void **state) {
    fx_t *f = *state;
    for (unsigned k = 0; k < 3; k++)
        report_cluster_node(f, k, cluster_node(k, T0 - 10 * NS_PER_SEC));
    cluster_pods(f);
    trigger_config_t c = CFG("podSelector", "app=vllm", "partialData", "ignore");
    expect_error(eval(f, &c), EVAL_UNAVAILABLE, "no selected pod has fresh data (6 skipped");
}

static void test_workload_disconnected_agent_with_fresh_snapshot_still_counts(void **state) {
    fx_t *f = *state;
    cluster(f);
    cluster_view_disconnected(f->view, "10.0.0.2:6001", "connection reset by peer");
    trigger_config_t c = CFG("podSelector", "app=vllm");
    expect_ok(eval(f, &c), 210, 6);
    /* Once it ages out the message says why nothing newer came. */
    c = CFG("nodeSelector", "n2");
    eval_result_t r;
    workload_evaluate(&c, "ml", IN(f->view, f->cache, true, T0 + 5 * NS_PER_SEC), &r, NULL);
    expect_error(r, EVAL_UNAVAILABLE,
                 "node n2: GPU snapshot is 5.0 s old (stale after 3.0 s); agent stream down: "
                 "connection reset by peer");
}

static void test_workload_pod_on_a_node_without_agent_follows_partial_data(void **state) {
    fx_t *f = *state;
    cluster(f);
    pod(f, "ml", "vllm-z", "n9", "Running", APP_VLLM, false);
    sync_pods(f);
    trigger_config_t c = CFG("podSelector", "app=vllm");
    expect_error(eval(f, &c), EVAL_UNAVAILABLE,
                 "node n9 (pod ml/vllm-z): no agent has reported for this node");
    c = CFG("podSelector", "app=vllm", "partialData", "ignore");
    expect_ok(eval(f, &c), 210, 6);
}

static void test_workload_unknown_attribution_is_treated_like_a_stale_node(void **state) {
    fx_t *f = *state;
    report_cluster_node(f, 0, cluster_node(0, T0));
    report_cluster_node(f, 1, cluster_node(1, T0));
    node_pods_t *unknown = NULL;
    assert_int_equal(
        node_pods_new_unknown("kubelet pod-resources: connect: no such file", &unknown), 0);
    assert_int_equal(cluster_view_update(f->view, "a3", cluster_node(2, T0), unknown, NOW), 0);
    cluster_pods(f);
    trigger_config_t c = CFG("podSelector", "app=vllm");
    expect_error(eval(f, &c), EVAL_UNAVAILABLE,
                 "node n3 (pod ml/vllm-e): which pods hold which GPUs on the node is unknown: "
                 "kubelet pod-resources: connect: no such file");
    c = CFG("podSelector", "app=vllm", "partialData", "ignore");
    expect_ok(eval(f, &c), 100, 4);
}

static void test_workload_lost_gpu_under_a_selected_pod_is_unavailable(void **state) {
    fx_t *f = *state;
    snapshot_t *s = cluster_node(0, T0);
    s->gpus[1].health = GPU_HEALTH_LOST;
    s->gpus[1].health_nvml_code = 15; /* GPU_IS_LOST */
    s->gpus[1].valid = 0;
    report_cluster_node(f, 0, s);
    report_cluster_node(f, 1, cluster_node(1, T0));
    report_cluster_node(f, 2, cluster_node(2, T0));
    cluster_pods(f);
    trigger_config_t c = CFG("podSelector", "app=vllm", "partialData", "ignore");
    eval_result_t r = eval(f, &c);
    expect_error(r, EVAL_UNAVAILABLE, "node n1 (pod ml/vllm-b): ");
    expect_error(r, EVAL_UNAVAILABLE, "GPU 1 (GPU-n1-1) on node n1 is lost");
}

static void test_workload_lost_gpu_outside_the_selection_does_not_matter(void **state) {
    fx_t *f = *state;
    snapshot_t *s = cluster_node(0, T0);
    s->gpus[2].health = GPU_HEALTH_LOST; /* the other tenant's */
    report_cluster_node(f, 0, s);
    report_cluster_node(f, 1, cluster_node(1, T0));
    report_cluster_node(f, 2, cluster_node(2, T0));
    cluster_pods(f);
    trigger_config_t c = CFG("podSelector", "app=vllm");
    expect_ok(eval(f, &c), 210, 6);
}

static void test_workload_device_unknown_to_the_snapshot_is_a_failed_precondition(void **state) {
    fx_t *f = *state;
    const unsigned util[1] = {10};
    const char *ids[] = {"GPU-n1-0", "GPU-ffff"};
    node_pod_entry_t e[] = {{"ml", "p1", "main", ids, 2}};
    report(f, "a1", snap("n1", 1, util, 0, T0), e, 1);
    pod(f, "ml", "p1", "n1", "Running", APP_VLLM, false);
    sync_pods(f);
    trigger_config_t c = CFG("podSelector", "app=vllm");
    expect_error(eval(f, &c), EVAL_FAILED_PRECONDITION,
                 "node n1 (pod ml/p1): device GPU-ffff is unknown to NVML on the node");
}

static void test_workload_counts_a_time_sliced_gpu_once_per_pod(void **state) {
    fx_t *f = *state;
    const unsigned util[1] = {40};
    const char *a[] = {"GPU-n1-0::0", "GPU-n1-0::1"};
    const char *b[] = {"GPU-n1-0::2"};
    node_pod_entry_t e[] = {{"ml", "p1", "main", a, 2}, {"ml", "p2", "main", b, 1}};
    report(f, "a1", snap("n1", 1, util, 0, T0), e, 2);
    pod(f, "ml", "p1", "n1", "Running", APP_VLLM, false);
    pod(f, "ml", "p2", "n1", "Running", APP_VLLM, false);
    sync_pods(f);
    trigger_config_t c = CFG("podSelector", "app=vllm", "podAggregation", "sum");
    expect_ok(eval(f, &c), 80, 2); /* each pod sees the shared GPU's 40 once */
}

/* ---- AMD: GPUs named by PCI address ------------------------------------------ */

/* Node n1 with both vendors: GPU 0 an NVIDIA GPU (NVML's 8-digit domain),
 * GPU 1 an AMD GPU as the amdgpu reader records it (no unique_id, so no
 * UUID; its PCI address in the device plugin's spelling). */
static snapshot_t *mixed_node(const unsigned *util) {
    snapshot_t *s = snap("n1", 2, util, 0, T0);
    s->gpus[0].vendor = GPU_VENDOR_NVIDIA;
    snprintf(s->gpus[0].pci_bus_id, sizeof s->gpus[0].pci_bus_id, "00000000:17:00.0");
    s->gpus[1].vendor = GPU_VENDOR_AMD;
    s->gpus[1].uuid[0] = '\0';
    snprintf(s->gpus[1].pci_bus_id, sizeof s->gpus[1].pci_bus_id, "0000:19:00.0");
    return s;
}

static void test_workload_attributes_an_amd_gpu_by_pci_address_beside_an_nvidia_gpu(void **state) {
    fx_t *f = *state;
    const unsigned util[2] = {30, 70};
    const char *nv[] = {"GPU-n1-0"};
    const char *amd[] = {"0000:19:00.0"};
    node_pod_entry_t e[] = {{"ml", "p-nv", "main", nv, 1}, {"ml", "p-amd", "main", amd, 1}};
    report(f, "a1", mixed_node(util), e, 2);
    pod(f, "ml", "p-nv", "n1", "Running", APP_VLLM, false);
    pod(f, "ml", "p-amd", "n1", "Running", APP_VLLM, false);
    sync_pods(f);
    trigger_config_t c = CFG("podSelector", "app=vllm");
    expect_ok(eval(f, &c), 100, 2);
}

/* The batch path (here: the GPU is lost) selects a GPU without a UUID by
 * its index, so the error names that GPU and no other. */
static void test_workload_lost_amd_gpu_without_uuid_is_unavailable_naming_it(void **state) {
    fx_t *f = *state;
    const unsigned util[2] = {30, 70};
    snapshot_t *s = mixed_node(util);
    s->gpus[1].health = GPU_HEALTH_LOST;
    s->gpus[1].valid = 0;
    const char *amd[] = {"0000:19:00.0"};
    node_pod_entry_t e[] = {{"ml", "p-amd", "main", amd, 1}};
    report(f, "a1", s, e, 1);
    pod(f, "ml", "p-amd", "n1", "Running", APP_VLLM, false);
    sync_pods(f);
    trigger_config_t c = CFG("podSelector", "app=vllm");
    expect_error(eval(f, &c), EVAL_UNAVAILABLE,
                 "node n1 (pod ml/p-amd): GPU 1 (0000:19:00.0) on node n1 is lost");
}

static void test_workload_amd_partition_is_a_gap_never_the_whole_gpu(void **state) {
    fx_t *f = *state;
    const unsigned util[2] = {30, 70};
    const char *part[] = {"amdgpu_xcp_30"};
    const char *nv[] = {"GPU-n1-0"};
    node_pod_entry_t e[] = {{"ml", "p-cpx", "main", part, 1}, {"ml", "p-nv", "main", nv, 1}};
    report(f, "a1", mixed_node(util), e, 2);
    pod(f, "ml", "p-cpx", "n1", "Running", APP_VLLM, false);
    pod(f, "ml", "p-nv", "n1", "Running", APP_VLLM, false);
    sync_pods(f);
    trigger_config_t c = CFG("podSelector", "app=vllm");
    expect_error(eval(f, &c), EVAL_UNAVAILABLE,
                 "node n1 (pod ml/p-cpx): device amdgpu_xcp_30 is a partition of an AMD GPU");
    c = CFG("podSelector", "app=vllm", "partialData", "ignore");
    workload_stats_t st;
    expect_ok(eval_st(f, &c, &st), 30, 1);
    assert_int_equal(st.skipped, 1);
}

static void test_workload_pci_address_not_on_the_node_is_a_failed_precondition(void **state) {
    fx_t *f = *state;
    const unsigned util[2] = {30, 70};
    const char *amd[] = {"0000:aa:00.0"};
    node_pod_entry_t e[] = {{"ml", "p-amd", "main", amd, 1}};
    report(f, "a1", mixed_node(util), e, 1);
    pod(f, "ml", "p-amd", "n1", "Running", APP_VLLM, false);
    sync_pods(f);
    trigger_config_t c = CFG("podSelector", "app=vllm");
    expect_error(eval(f, &c), EVAL_FAILED_PRECONDITION,
                 "node n1 (pod ml/p-amd): the GPU at PCI address 0000:aa:00.0 is not in the "
                 "node's snapshot (it reports 2 GPUs)");
}

/* ---- DRA: devices named (driver, pool, device), resolved by the view ------- */

static const char *fake_slices(void *ud, const char *driver, const char *pool, const char *device) {
    (void)ud;
    if (strcmp(driver, "gpu.nvidia.com") == 0 && strcmp(pool, "n1") == 0) {
        if (strcmp(device, "gpu-0") == 0)
            return "GPU-n1-0";
        if (strcmp(device, "gpu-1-mig-9-4-4") == 0)
            return "MIG-aaaa";
        if (strcmp(device, "gpu-1-mig-9-0-4") == 0)
            return "MIG-bbbb";
    }
    if (strcmp(driver, "dra.net") == 0)
        return ""; /* listed, no GPU uuid: a NIC */
    /* What resource_slices makes of AMD's driver's devices. */
    if (strcmp(driver, "gpu.amd.com") == 0 && strcmp(pool, "n1") == 0) {
        if (strcmp(device, "gpu-1-128") == 0)
            return "0000:19:00.0";
        if (strcmp(device, "gpu-3-144") == 0)
            return "amdgpu-partition:0000:19:00.0/cpx_nps4";
    }
    return NULL;
}

/* n1: GPU 0 (util 40) whole, GPU 1 split into MIG-aaaa (sm 30) and
 * MIG-bbbb (sm 12), GPU 2 (util 25) through the device plugin. */
static snapshot_t *dra_node(void) {
    const unsigned util[3] = {40, 0, 25};
    snapshot_t *s = snap("n1", 3, util, 2, T0);
    add_mig(s, 0, 1, "MIG-aaaa", "3g.40gb", 30);
    add_mig(s, 1, 1, "MIG-bbbb", "3g.40gb", 12);
    return s;
}

static void dra_pods(fx_t *f) {
    pod(f, "ml", "p1", "n1", "Running", APP_VLLM, false);
    pod(f, "ml", "p2", "n1", "Running", APP_VLLM, false);
    pod(f, "ml", "p3", "n1", "Running", APP_VLLM, false);
    sync_pods(f);
}

/* A claim from AMD's DRA driver on a node with both vendors: the whole GPU
 * by its PCI address counts like the device plugin's id; a partition is a
 * gap. */
static void test_workload_amd_dra_claim_resolves_by_pci_address(void **state) {
    fx_t *f = *state;
    cluster_view_set_resolver(f->view, fake_slices, NULL);
    const unsigned util[2] = {30, 70};
    node_pod_dra_t amd = {"gpu.amd.com", "n1", "gpu-1-128", "", "", false};
    node_pod_dra_t nv = {"gpu.nvidia.com", "n1", "gpu-0", "", "", false};
    node_pod_entry_t e[] = {{"ml", "p1", "main", NULL, 0, &amd, 1, 1},
                            {"ml", "p2", "main", NULL, 0, &nv, 1, 1}};
    report(f, "a1", mixed_node(util), e, 2);
    pod(f, "ml", "p1", "n1", "Running", APP_VLLM, false);
    pod(f, "ml", "p2", "n1", "Running", APP_VLLM, false);
    sync_pods(f);
    trigger_config_t c = CFG("podSelector", "app=vllm");
    expect_ok(eval(f, &c), 100, 2);

    node_pod_dra_t part = {"gpu.amd.com", "n1", "gpu-3-144", "", "", false};
    node_pod_entry_t e2[] = {{"ml", "p1", "main", NULL, 0, &part, 1, 1},
                             {"ml", "p2", "main", NULL, 0, &nv, 1, 1}};
    report(f, "a1", mixed_node(util), e2, 2);
    expect_error(eval(f, &c), EVAL_UNAVAILABLE,
                 "node n1 (pod ml/p1): device amdgpu-partition:0000:19:00.0/cpx_nps4 is a "
                 "partition of an AMD GPU");
}

static void test_workload_dra_devices_count_like_device_plugin_ids(void **state) {
    fx_t *f = *state;
    cluster_view_set_resolver(f->view, fake_slices, NULL);
    /* p1's claim (GPU 0 and MIG-aaaa) is shared by two containers; p2 has
     * MIG-bbbb and a NIC; p3 GPU 2 from the device plugin. */
    node_pod_dra_t g0 = {"gpu.nvidia.com", "n1", "gpu-0", "", "", false};
    node_pod_dra_t m1 = {"gpu.nvidia.com", "n1", "gpu-1-mig-9-4-4", "", "", false};
    node_pod_dra_t m2 = {"gpu.nvidia.com", "n1", "gpu-1-mig-9-0-4", "", "", false};
    node_pod_dra_t nic = {"dra.net", "n1", "eth1", "", "", false};
    const char *plugin[] = {"GPU-n1-2"};
    node_pod_entry_t e[] = {
        {"ml", "p1", "main", NULL, 0, &g0, 1, 1},    {"ml", "p1", "main", NULL, 0, &m1, 1, 1},
        {"ml", "p1", "side", NULL, 0, &g0, 1, 1},    {"ml", "p1", "side", NULL, 0, &m1, 1, 1},
        {"ml", "p2", "main", NULL, 0, &m2, 1, 1},    {"ml", "p2", "main", NULL, 0, &nic, 1, 1},
        {"ml", "p3", "main", plugin, 1, NULL, 0, 0},
    };
    report(f, "a1", dra_node(), e, 7);
    dra_pods(f);
    trigger_config_t c = CFG("podSelector", "app=vllm", "metricType", "memory_used_mib");
    eval_result_t dra = eval(f, &c);

    /* The same cluster with device-plugin ids only. */
    const char *p1[] = {"GPU-n1-0", "MIG-aaaa"}, *p2[] = {"MIG-bbbb"};
    node_pod_entry_t dp[] = {{"ml", "p1", "main", p1, 2},
                             {"ml", "p1", "side", p1, 2},
                             {"ml", "p2", "main", p2, 1},
                             {"ml", "p3", "main", plugin, 1}};
    report(f, "a1", dra_node(), dp, 4);
    eval_result_t plain = eval(f, &c);
    /* p1 averages GPU 0 and MIG-aaaa (podAggregation avg), p2, p3. */
    expect_ok(plain, (1024 + 10240) / 2.0 + 10240 + 1024, 4);
    expect_ok(dra, plain.value, plain.inputs);
}

static void test_workload_unresolved_dra_device_is_a_gap_naming_pod_and_device(void **state) {
    fx_t *f = *state;
    cluster_view_set_resolver(f->view, fake_slices, NULL);
    node_pod_dra_t g0 = {"gpu.nvidia.com", "n1", "gpu-0", "", "", false};
    node_pod_dra_t lost = {"gpu.nvidia.com", "n1", "gpu-7", "", "", false};
    const char *plugin[] = {"GPU-n1-2"};
    node_pod_entry_t e[] = {{"ml", "p1", "main", NULL, 0, &g0, 1, 1},
                            {"ml", "p2", "main", NULL, 0, &lost, 1, 1},
                            {"ml", "p3", "main", plugin, 1, NULL, 0, 0}};
    report(f, "a1", dra_node(), e, 3);
    dra_pods(f);
    trigger_config_t c = CFG("podSelector", "app=vllm");
    expect_error(eval(f, &c), EVAL_UNAVAILABLE,
                 "node n1 (pod ml/p2): DRA device gpu.nvidia.com/n1/gpu-7 (container main) is "
                 "not resolved to a GPU UUID: no ResourceSlice lists it yet");
    workload_inputs_t in = *IN(f->view, f->cache, true, NOW);
    in.dra_status = "ResourceSlices not listed: HTTP 403";
    eval_result_t r403;
    workload_evaluate(&c, "ml", &in, &r403, NULL);
    expect_error(r403, EVAL_UNAVAILABLE, "GPU UUID: ResourceSlices not listed: HTTP 403");
    c = CFG("podSelector", "app=vllm", "partialData", "ignore");
    workload_stats_t st;
    eval_result_t r = eval_st(f, &c, &st);
    expect_ok(r, 40 + 25, 2); /* p2 left out, never counted as 0 */
    assert_int_equal(st.skipped, 1);
    assert_non_null(strstr(st.skip_reason, "pod ml/p2"));
}

static void test_workload_dra_devices_resolve_once_the_slices_arrive(void **state) {
    fx_t *f = *state;
    node_pod_dra_t g0 = {"gpu.nvidia.com", "n1", "gpu-0", "", "", false};
    node_pod_entry_t e[] = {{"ml", "p1", "main", NULL, 0, &g0, 1, 1}};
    report(f, "a1", dra_node(), e, 1); /* no resolver yet: nothing resolves */
    assert_true(cluster_view_has_dra(f->view));
    pod(f, "ml", "p1", "n1", "Running", APP_VLLM, false);
    sync_pods(f);
    trigger_config_t c = CFG("podSelector", "app=vllm");
    expect_error(eval(f, &c), EVAL_UNAVAILABLE, "gpu.nvidia.com/n1/gpu-0");
    uint64_t gen = cluster_view_generation(f->view);
    cluster_view_set_resolver(f->view, fake_slices, NULL);
    cluster_view_reresolve(f->view);
    assert_true(cluster_view_generation(f->view) > gen);
    expect_ok(eval(f, &c), 40, 1);
    cluster_view_reresolve(f->view); /* again: from the agent's raw list, same answer */
    expect_ok(eval(f, &c), 40, 1);
    /* The next snapshots carry the same list: the resolution is kept... */
    report(f, "a1", dra_node(), e, 1);
    expect_ok(eval(f, &c), 40, 1);
    /* ...and a changed one is resolved afresh (GPU 0 -> MIG-aaaa: sm_active). */
    node_pod_dra_t m1 = {"gpu.nvidia.com", "n1", "gpu-1-mig-9-4-4", "", "", false};
    e[0].dra = &m1;
    report(f, "a1", dra_node(), e, 1);
    c = CFG("podSelector", "app=vllm", "metricType", "sm_active");
    expect_ok(eval(f, &c), 30, 1);
    /* A resolver that answers differently takes effect at reresolve. */
    cluster_view_set_resolver(f->view, NULL, NULL);
    report(f, "a1", dra_node(), e, 1);
    expect_error(eval(f, &c), EVAL_UNAVAILABLE, "gpu.nvidia.com/n1/gpu-1-mig-9-4-4");
}

static void test_workload_reads_mig_instances_held_by_pods(void **state) {
    fx_t *f = *state;
    const unsigned util[2] = {0, 70};
    snapshot_t *s = snap("n1", 2, util, 2, T0);
    add_mig(s, 0, 0, "MIG-aaaa", "3g.40gb", 30);
    add_mig(s, 1, 0, "MIG-bbbb", "3g.40gb", 12);
    const char *a[] = {"MIG-aaaa"}, *b[] = {"MIG-bbbb"};
    node_pod_entry_t e[] = {{"ml", "p1", "main", a, 1}, {"ml", "p2", "main", b, 1}};
    report(f, "a1", s, e, 2);
    pod(f, "ml", "p1", "n1", "Running", APP_VLLM, false);
    pod(f, "ml", "p2", "n1", "Running", APP_VLLM, false);
    sync_pods(f);
    trigger_config_t c = CFG("podSelector", "app=vllm", "metricType", "sm_active");
    expect_ok(eval(f, &c), 42, 2);
    c = CFG("podSelector", "app=vllm");
    expect_error(eval(f, &c), EVAL_FAILED_PRECONDITION,
                 "node n1 (pod ml/p1): metricType gpu_utilization does not exist per MIG "
                 "instance, and the pod holds MIG instance MIG-aaaa");
}

static void test_workload_mig_device_missing_behind_a_lost_parent_is_unavailable(void **state) {
    fx_t *f = *state;
    const unsigned util[1] = {0};
    snapshot_t *s = snap("n1", 1, util, 0, T0); /* a lost GPU lists no instances */
    s->gpus[0].health = GPU_HEALTH_LOST;
    s->gpus[0].health_nvml_code = 15; /* GPU_IS_LOST */
    const char *a[] = {"MIG-aaaa"};
    node_pod_entry_t e[] = {{"ml", "p1", "main", a, 1}};
    report(f, "a1", s, e, 1);
    pod(f, "ml", "p1", "n1", "Running", APP_VLLM, false);
    sync_pods(f);
    trigger_config_t c = CFG("podSelector", "app=vllm", "metricType", "sm_active");
    expect_error(eval(f, &c), EVAL_UNAVAILABLE,
                 "MIG device MIG-aaaa is not in the snapshot, and GPU 0 (GPU-n1-0) is lost (NVML "
                 "GPU_IS_LOST)");
}

static void test_workload_absent_field_gives_the_standalone_hint(void **state) {
    fx_t *f = *state;
    const unsigned util[1] = {10};
    snapshot_t *s = snap("n1", 1, util, 0, T0);
    s->gpus[0].valid &= ~(1u << GPU_F_SM_ACTIVE);
    s->gpus[0].field_error[GPU_F_SM_ACTIVE] = 3; /* NOT_SUPPORTED */
    const char *a[] = {"GPU-n1-0"};
    node_pod_entry_t e[] = {{"ml", "p1", "main", a, 1}};
    report(f, "a1", s, e, 1);
    pod(f, "ml", "p1", "n1", "Running", APP_VLLM, false);
    sync_pods(f);
    trigger_config_t c = CFG("podSelector", "app=vllm", "metricType", "sm_active");
    eval_result_t r = eval(f, &c);
    expect_error(r, EVAL_FAILED_PRECONDITION, "node n1 (pod ml/p1): metricType sm_active");
    expect_error(r, EVAL_FAILED_PRECONDITION, "GPM metrics need a Hopper");
}

static void test_workload_running_pod_without_gpu_contributes_nothing(void **state) {
    fx_t *f = *state;
    cluster(f);
    pod(f, "ml", "vllm-just-scheduled", "n1", "Running", APP_VLLM, false);
    sync_pods(f);
    trigger_config_t c = CFG("podSelector", "app=vllm", "aggregation", "avg");
    workload_stats_t st;
    expect_ok(eval_st(f, &c, &st), 35, 6);
    assert_int_equal(st.pods_in_scope, 7);
    assert_int_equal(st.pods_counted, 6);
    assert_int_equal(st.pods_without_gpu, 1);
}

/* A Running ml/app=vllm pod on `node` whose spec holds `spec` (JSON
 * members after nodeName, as the API server writes them) and whose
 * status.startTime is `start` ("" for none). */
static void spec_pod(fx_t *f, const char *name, const char *node, const char *spec,
                     const char *start) {
    char js[2048];
    snprintf(js, sizeof js,
             "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"namespace\":\"ml\","
             "\"name\":\"%s\",\"uid\":\"ml-%s\",\"resourceVersion\":\"1\","
             "\"creationTimestamp\":\"2026-11-29T09:59:00Z\",\"labels\":" APP_VLLM "},"
             "\"spec\":{\"nodeName\":\"%s\",%s},\"status\":{\"phase\":\"Running\"%s%s%s}}",
             name, name, node, spec, start[0] ? ",\"startTime\":\"" : "", start,
             start[0] ? "\"" : "");
    json_error_t je;
    json_t *j = json_loads(js, 0, &je);
    if (!j)
        fail_msg("bad test JSON: %s\n%s", je.text, js);
    char err[256];
    assert_true(f->npods < MAX_PODS);
    if (kube_pod_from_json(j, &f->pods[f->npods], err, sizeof err) != 0)
        fail_msg("pod: %s", err);
    json_decref(j);
    f->npods++;
}

#define ONE_GPU                                                                                    \
    "\"containers\":[{\"name\":\"vllm\",\"image\":\"vllm/vllm-openai:v0.6.3\",\"resources\":"      \
    "{\"limits\":{\"nvidia.com/gpu\":\"1\"},\"requests\":{\"nvidia.com/gpu\":\"1\"}}}]"
#define START "2026-11-29T10:00:00Z" /* 1795946400 */
#define START_MS INT64_C(1795946400000)

/* Node n1's latest snapshot was taken at wall time ms (the agent's clock). */
static void n1_taken_at(fx_t *f, int64_t ms) {
    const cluster_node_t *e = cluster_view_find_node(f->view, "n1");
    assert_non_null(e);
    e->snap->taken_wall_ms = ms;
}

static void test_workload_gpu_asking_pod_with_no_device_is_a_gap_naming_it(void **state) {
    fx_t *f = *state;
    cluster(f);
    n1_taken_at(f, START_MS + 60 * 1000);
    spec_pod(f, "vllm-lost", "n1", ONE_GPU, START);
    sync_pods(f);
    trigger_config_t c = CFG("podSelector", "app=vllm");
    workload_stats_t st;
    eval_result_t r = eval_st(f, &c, &st);
    expect_error(r, EVAL_UNAVAILABLE,
                 "node n1 (pod ml/vllm-lost): asks for 1 nvidia.com/gpu, but the node's kubelet "
                 "attributes no device to it 60 s after the pod started");
    expect_error(r, EVAL_UNAVAILABLE, "GPU-<uuid> and MIG-<uuid>");
    assert_int_equal(st.pods_without_gpu, 0);

    /* partialData ignore: the others are summed, the pod is a counted skip. */
    c = CFG("podSelector", "app=vllm", "partialData", "ignore");
    expect_ok(eval_st(f, &c, &st), 210, 6);
    assert_int_equal(st.skipped, 1);
    assert_non_null(strstr(st.skip_reason, "pod ml/vllm-lost): asks for 1 nvidia.com/gpu"));
}

static void test_workload_amd_gpu_asking_pod_with_no_device_is_a_gap(void **state) {
    fx_t *f = *state;
    cluster(f);
    n1_taken_at(f, START_MS + 60 * 1000);
    spec_pod(f, "vllm-rocm", "n1",
             "\"containers\":[{\"name\":\"vllm\",\"resources\":{\"limits\":"
             "{\"amd.com/gpu\":\"1\"}}}]",
             START);
    sync_pods(f);
    trigger_config_t c = CFG("podSelector", "app=vllm");
    eval_result_t r = eval(f, &c);
    expect_error(r, EVAL_UNAVAILABLE,
                 "node n1 (pod ml/vllm-rocm): asks for 1 amd.com/*, but the node's kubelet "
                 "attributes no device to it");
    expect_error(r, EVAL_UNAVAILABLE, "PCI addresses under amd.com/*");
}

static void test_workload_pod_asking_for_no_gpu_makes_no_gap(void **state) {
    fx_t *f = *state;
    cluster(f);
    n1_taken_at(f, START_MS + 60 * 1000);
    spec_pod(f, "vllm-router", "n1",
             "\"containers\":[{\"name\":\"router\",\"resources\":{\"limits\":{\"cpu\":\"2\","
             "\"nvidia.com/gpu\":\"0\"}}}]",
             START);
    sync_pods(f);
    trigger_config_t c = CFG("podSelector", "app=vllm");
    workload_stats_t st;
    expect_ok(eval_st(f, &c, &st), 210, 6);
    assert_int_equal(st.pods_without_gpu, 1);
    assert_int_equal(st.skipped, 0);
}

static void test_workload_resource_claim_pod_with_no_device_is_a_gap(void **state) {
    fx_t *f = *state;
    cluster(f);
    n1_taken_at(f, START_MS + 60 * 1000);
    spec_pod(f, "vllm-dra", "n1",
             "\"containers\":[{\"name\":\"vllm\",\"resources\":{\"claims\":[{\"name\":\"gpu\"}]}}],"
             "\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimTemplateName\":\"one-gpu\"}]",
             START);
    sync_pods(f);
    trigger_config_t c = CFG("podSelector", "app=vllm");
    eval_result_t r = eval(f, &c);
    expect_error(r, EVAL_UNAVAILABLE,
                 "node n1 (pod ml/vllm-dra): asks for 1 resource claim (DRA), but");
    expect_error(r, EVAL_UNAVAILABLE, "(no GPU is attributed through its resource claims)");
}

/* The attribution a snapshot carries may predate a pod that started just
 * before the snapshot: within stale_after (3 s here) of its start (plus the
 * second startTime drops) the pod is starting, not a gap. */
static void test_workload_gpu_asking_pod_that_just_started_is_not_yet_a_gap(void **state) {
    fx_t *f = *state;
    cluster(f);
    spec_pod(f, "vllm-new", "n1", ONE_GPU, START);
    sync_pods(f);
    trigger_config_t c = CFG("podSelector", "app=vllm");
    workload_stats_t st;
    /* The snapshot predates the pod's start, then follows it by 2 s, then
     * by the last millisecond of the window. */
    const int64_t starting[] = {START_MS - 5000, START_MS + 2000, START_MS + 1000 + 3000 - 1};
    for (size_t i = 0; i < sizeof starting / sizeof starting[0]; i++) {
        n1_taken_at(f, starting[i]);
        expect_ok(eval_st(f, &c, &st), 210, 6);
        assert_int_equal(st.pods_starting, 1);
        assert_int_equal(st.skipped, 0);
    }
    n1_taken_at(f, START_MS + 1000 + 3000);
    expect_error(eval_st(f, &c, &st), EVAL_UNAVAILABLE, "pod ml/vllm-new): asks for 1");
    assert_int_equal(st.pods_starting, 0);
}

static void test_workload_start_window_falls_back_to_creation_and_needs_a_time(void **state) {
    fx_t *f = *state;
    cluster(f);
    spec_pod(f, "vllm-new", "n1", ONE_GPU, ""); /* created 09:59:00, no startTime */
    sync_pods(f);
    trigger_config_t c = CFG("podSelector", "app=vllm");
    n1_taken_at(f, START_MS - 60 * 1000 + 2000); /* 2 s after creation: starting */
    expect_ok(eval(f, &c), 210, 6);
    n1_taken_at(f, START_MS); /* 60 s after creation: a gap */
    expect_error(eval(f, &c), EVAL_UNAVAILABLE, "asks for 1 nvidia.com/gpu, but the node's");
    /* A snapshot without its time opens no window. */
    n1_taken_at(f, 0);
    eval_result_t r = eval(f, &c);
    expect_error(r, EVAL_UNAVAILABLE,
                 "pod ml/vllm-new): asks for 1 nvidia.com/gpu, but the node's kubelet attributes "
                 "no device to it (the agent reads");
}

/* ---- nodes ----------------------------------------------------------------- */

static void test_workload_aggregates_every_gpu_of_every_node_at_once(void **state) {
    fx_t *f = *state;
    cluster(f);
    trigger_config_t c = CFG0();
    workload_stats_t st;
    expect_ok(eval_st(f, &c, &st), 210 + 250 + 290, 12);
    assert_int_equal(st.nodes_counted, 3);
    c = CFG("aggregation", "avg");
    expect_ok(eval(f, &c), 750.0 / 12, 12); /* not an average of per-node averages */
    c = CFG("aggregation", "min");
    expect_ok(eval(f, &c), 10, 12);
    c = CFG("aggregation", "p95");
    expect_ok(eval(f, &c), 90, 12);
}

static void test_workload_aggregates_more_values_than_a_node_holds(void **state) {
    fx_t *f = *state;
    unsigned util[300];
    for (unsigned i = 0; i < 300; i++)
        util[i] = i % 100 + 1; /* 1..100, three times */
    for (unsigned k = 0; k < 3; k++) {
        char node[8], addr[8];
        snprintf(node, sizeof node, "big%u", k);
        snprintf(addr, sizeof addr, "b%u", k);
        report(f, addr, snap(node, 300, util, 0, T0), NULL, 0);
    }
    trigger_config_t c = CFG("aggregation", "p99");
    expect_ok(eval(f, &c), 99, 900); /* sorted[ceil(0.99 * 900) - 1] = sorted[890] */
    c = CFG("aggregation", "p95");
    expect_ok(eval(f, &c), 95, 900); /* sorted[854]: each of 1..100 appears 9 times */
    c = CFG0();
    expect_ok(eval(f, &c), 9 * 5050, 900);
}

static void test_workload_node_names_scope_only_those_nodes(void **state) {
    fx_t *f = *state;
    cluster(f);
    trigger_config_t c = CFG("nodeSelector", "n1,n3", "aggregation", "avg");
    expect_ok(eval(f, &c), 500.0 / 8, 8);
    c = CFG("nodeSelector", "n3", "gpuIndex", "1");
    expect_ok(eval(f, &c), 60, 1);
}

static void test_workload_named_node_without_agent_follows_partial_data(void **state) {
    fx_t *f = *state;
    cluster(f);
    trigger_config_t c = CFG("nodeSelector", "n1,n9");
    expect_error(eval(f, &c), EVAL_UNAVAILABLE, "node n9: no agent has reported for this node");
    c = CFG("nodeSelector", "n1,n9", "partialData", "ignore");
    workload_stats_t st;
    expect_ok(eval_st(f, &c, &st), 210, 4);
    assert_int_equal(st.skipped, 1);
}

static void test_workload_stale_or_nvml_down_node_follows_partial_data(void **state) {
    fx_t *f = *state;
    report_cluster_node(f, 0, cluster_node(0, T0));
    report_cluster_node(f, 1, cluster_node(1, T0 - 10 * NS_PER_SEC));
    snapshot_t *down = cluster_node(2, T0);
    down->status = SNAPSHOT_NVML_DOWN;
    snprintf(down->error, sizeof down->error, "nvmlInit: DRIVER_NOT_LOADED");
    report_cluster_node(f, 2, down);
    trigger_config_t c = CFG0();
    eval_result_t r = eval(f, &c);
    expect_error(r, EVAL_UNAVAILABLE, "node n2: GPU snapshot is 11.0 s old (stale after 3.0 s)");
    expect_error(r, EVAL_UNAVAILABLE, "1 more node affected");
    c = CFG("partialData", "ignore");
    workload_stats_t st;
    expect_ok(eval_st(f, &c, &st), 210, 4);
    assert_int_equal(st.skipped, 2);
    c = CFG("nodeSelector", "n3", "partialData", "ignore");
    expect_error(eval(f, &c), EVAL_UNAVAILABLE,
                 "no selected node has fresh data (1 skipped with partialData ignore): node n3: "
                 "NVML unavailable: nvmlInit: DRIVER_NOT_LOADED");
}

static void test_workload_gpu_uuids_name_gpus_on_any_node(void **state) {
    fx_t *f = *state;
    cluster(f);
    trigger_config_t c = CFG("gpuUUID", "GPU-n1-0,GPU-n3-1");
    expect_ok(eval(f, &c), 70, 2);
    c = CFG("gpuUUID", "GPU-n1-0,GPU-n7-1");
    expect_error(eval(f, &c), EVAL_FAILED_PRECONDITION,
                 "gpuUUID GPU-n7-1 not found on any of the 3 selected nodes");
}

static void test_workload_mig_selection_spans_nodes(void **state) {
    fx_t *f = *state;
    const unsigned util[2] = {0, 70};
    snapshot_t *a = snap("n1", 2, util, 1, T0);
    add_mig(a, 0, 0, "MIG-aaaa", "3g.40gb", 30);
    snapshot_t *b = snap("n2", 2, util, 1, T0);
    add_mig(b, 0, 1, "MIG-bbbb", "1c.3g.40gb", 12);
    report(f, "a1", a, NULL, 0);
    report(f, "a2", b, NULL, 0);
    report(f, "a3", cluster_node(2, T0), NULL, 0); /* no MIG at all */
    trigger_config_t c = CFG("metricType", "sm_active", "migProfile", "3g.40gb");
    expect_ok(eval(f, &c), 42, 2);
    c = CFG("metricType", "sm_active", "migUUID", "MIG-bbbb");
    expect_ok(eval(f, &c), 12, 1);
    c = CFG("metricType", "sm_active", "migProfile", "7g.80gb");
    expect_error(eval(f, &c), EVAL_FAILED_PRECONDITION,
                 "no MIG instance with migProfile 7g.80gb on any of the 3 selected nodes");
}

/* Kubernetes Node objects, parsed by the same reader as pods: name and labels. */
static void node_objects(pod_t *out, size_t *n) {
    static const char *const nodes[][2] = {{"n1", "{\"pool\":\"gpu\",\"zone\":\"a\"}"},
                                           {"n2", "{\"pool\":\"cpu\"}"},
                                           {"n3", "{\"pool\":\"gpu\",\"zone\":\"b\"}"},
                                           {"n4", "{\"pool\":\"gpu\"}"}};
    for (size_t i = 0; i < 4; i++) {
        char js[512];
        snprintf(js, sizeof js,
                 "{\"metadata\":{\"name\":\"%s\",\"uid\":\"node-%s\",\"resourceVersion\":"
                 "\"7\",\"labels\":%s},\"spec\":{\"podCIDR\":\"10.0.0.0/24\"},"
                 "\"status\":{\"capacity\":{\"nvidia.com/gpu\":\"4\"}}}",
                 nodes[i][0], nodes[i][0], nodes[i][1]);
        json_error_t je;
        json_t *j = json_loads(js, 0, &je);
        if (!j)
            fail_msg("bad test JSON: %s", je.text);
        char err[256];
        if (kube_pod_from_json(j, &out[i], err, sizeof err) != 0)
            fail_msg("node: %s", err);
        json_decref(j);
    }
    *n = 4;
}

static eval_result_t eval_nodes(fx_t *f, const trigger_config_t *c, const pod_cache_t *nodes,
                                bool synced, workload_stats_t *st) {
    eval_result_t r;
    memset(&r, 0x5a, sizeof r);
    workload_inputs_t in = {.view = f->view,
                            .pods = f->cache,
                            .pods_synced = true,
                            .nodes = nodes,
                            .nodes_synced = synced,
                            .now = NOW,
                            .stale_after_ns = STALE};
    workload_evaluate(c, "ml", &in, &r, st);
    return r;
}

static void test_workload_node_label_selector_counts_the_matching_nodes(void **state) {
    fx_t *f = *state;
    cluster(f);
    pod_t objs[4];
    size_t n = 0;
    node_objects(objs, &n);
    pod_cache_t *nodes = NULL;
    assert_int_equal(pod_cache_new(&nodes), 0);
    assert_int_equal(pod_cache_replace_all(nodes, objs, n, "7"), 0);
    for (size_t i = 0; i < n; i++)
        pod_deinit(&objs[i]); /* the cache holds copies */
    workload_stats_t st;

    /* n4 matches but no agent reports for it: a gap, as for a named node */
    trigger_config_t c = CFG("nodeSelector", "pool=gpu");
    expect_error(eval_nodes(f, &c, nodes, true, &st), EVAL_UNAVAILABLE,
                 "node n4: matches nodeSelector but no agent has reported for it");
    c = CFG("nodeSelector", "pool=gpu", "partialData", "ignore");
    expect_ok(eval_nodes(f, &c, nodes, true, &st), 500, 8);
    assert_int_equal(st.skipped, 1);
    c = CFG("nodeSelector", "pool in (cpu)");
    expect_ok(eval_nodes(f, &c, nodes, true, &st), 250, 4);
    c = CFG("nodeSelector", "pool=gpu,zone", "aggregation", "max");
    expect_ok(eval_nodes(f, &c, nodes, true, &st), 90, 8);
    c = CFG("nodeSelector", "pool=tpu");
    expect_ok(eval_nodes(f, &c, nodes, true, &st), 0, 0);

    /* before the node list syncs (or without RBAC on nodes): not a zero */
    c = CFG("nodeSelector", "pool=gpu");
    expect_error(eval_nodes(f, &c, nodes, false, &st), EVAL_UNAVAILABLE,
                 "node list from the Kubernetes API not synced");
    expect_error(eval_nodes(f, &c, NULL, false, &st), EVAL_UNAVAILABLE, "get/list/watch on nodes");
    expect_error(eval(f, &c), EVAL_UNAVAILABLE, "node list from the Kubernetes API not synced");
    pod_cache_free(nodes);
}

static void test_workload_without_any_agent_is_unavailable(void **state) {
    fx_t *f = *state;
    trigger_config_t c = CFG0();
    expect_error(eval(f, &c), EVAL_UNAVAILABLE, "no agent has reported yet");
    eval_result_t r;
    workload_evaluate(&c, "ml", IN(NULL, NULL, false, NOW), &r, NULL);
    expect_error(r, EVAL_UNAVAILABLE, "no agent has reported yet");
}

static void test_workload_agent_that_never_reported_names_no_node(void **state) {
    fx_t *f = *state;
    cluster(f);
    /* e.g. the AAAA record of an IPv4-only agent: not a node, not a gap */
    cluster_view_disconnected(f->view, "[fd00::9]:6001", "connect: connection refused");
    trigger_config_t c = CFG0();
    expect_ok(eval(f, &c), 750, 12);
    c = CFG("partialData", "ignore");
    expect_ok(eval(f, &c), 750, 12);
}

static void test_workload_without_config_is_a_failed_precondition(void **state) {
    fx_t *f = *state;
    eval_result_t r;
    workload_evaluate(NULL, "ml", IN(f->view, f->cache, true, NOW), &r, NULL);
    expect_error(r, EVAL_FAILED_PRECONDITION, "no trigger configuration");
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

/* Agents may send any finite value: values that each fit but whose sum
 * does not are an error naming where the largest came from, never +Inf
 * sent on as INT64_MAX. */
static void test_workload_values_that_overflow_are_an_error_naming_their_source(void **state) {
    fx_t *f = *state;
    const unsigned util[2] = {10, 20};
    for (unsigned k = 0; k < 2; k++) {
        snapshot_t *s = snap(k ? "n2" : "n1", 2, util, 0, T0);
        s->gpus[1].sm_active_pct = k ? 1.5e308 : 1e308;
        report(f, k ? "a2" : "a1", s, NULL, 0);
    }
    trigger_config_t c = CFG("metricType", "sm_active");
    expect_error(eval(f, &c), EVAL_UNAVAILABLE,
                 "metricType sm_active: the sum of 4 values is not finite (they overflow; the "
                 "largest, 1.5e+308, is from n2)");
}

static void test_workload_a_pod_whose_devices_overflow_is_an_error_naming_it(void **state) {
    fx_t *f = *state;
    const unsigned util[2] = {10, 20};
    snapshot_t *s = snap("n1", 2, util, 0, T0);
    s->gpus[0].sm_active_pct = s->gpus[1].sm_active_pct = 1e308;
    const char *ids[] = {"GPU-n1-0", "GPU-n1-1"};
    node_pod_entry_t e[] = {{"ml", "p1", "main", ids, 2}};
    report(f, "a1", s, e, 1);
    pod(f, "ml", "p1", "n1", "Running", APP_VLLM, false);
    sync_pods(f);
    trigger_config_t c =
        CFG("podSelector", "app=vllm", "metricType", "sm_active", "podAggregation", "sum");
    expect_error(eval(f, &c), EVAL_UNAVAILABLE,
                 "node n1 (pod ml/p1): metricType sm_active over the pod's 2 devices is not "
                 "finite");
}

/* ---- gpuSharing ----------------------------------------------------------- */

/*
 * One GPU (utilisation 40) time-sliced between p1 (::0, ::1) and p2 (::2).
 * NVML lists four processes: two of p1 (smUtil 10 + 15, 1 + 2 GiB), one of
 * p2 (15, 1 GiB) and a host process (0, no pod). `tweak` edits the
 * snapshot before it is reported.
 */
static snapshot_t *shared_snap(void (*tweak)(snapshot_t *s)) {
    const unsigned util[1] = {40};
    snapshot_t *s = snap("n1", 1, util, 0, T0);
    snapshot_t *p = snapshot_new_with_procs(1, 0, 4);
    assert_non_null(p);
    memcpy(p, s, offsetof(snapshot_t, gpu_count));
    memcpy(p->gpus, s->gpus, sizeof *p->gpus);
    snapshot_unref(s);
    p->procs_attributed = true;
    p->gpus[0].procs = (proc_list_t){.first = 0, .count = 4, .list_ok = true, .util_ok = true};
    static const struct {
        unsigned pid;
        const char *uid;
        double sm;
        unsigned gib;
    } rows[4] = {
        {100, "ml-p1", 10, 1}, {101, "ml-p1", 15, 2}, {200, "ml-p2", 15, 1}, {1, "", 0, 0}};
    for (unsigned i = 0; i < 4; i++) {
        proc_record_t *r = &p->procs[i];
        r->pid = rows[i].pid;
        r->valid = (1u << PROC_F_SM_UTIL) | (1u << PROC_F_MEM_UTIL) | (1u << PROC_F_USED_MEMORY);
        r->sm_util_pct = rows[i].sm;
        r->mem_util_pct = rows[i].sm / 5;
        r->used_memory_bytes = (uint64_t)rows[i].gib << 30;
        snprintf(r->pod_uid, sizeof r->pod_uid, "%s", rows[i].uid);
    }
    if (tweak)
        tweak(p);
    return p;
}

static void shared_gpu(fx_t *f, void (*tweak)(snapshot_t *s)) {
    snapshot_t *p = shared_snap(tweak);
    static const char *a[] = {"GPU-n1-0::0", "GPU-n1-0::1"};
    static const char *b[] = {"GPU-n1-0::2"};
    node_pod_entry_t e[] = {{"ml", "p1", "main", a, 2}, {"ml", "p2", "main", b, 1}};
    report(f, "a1", p, e, 2);
    pod(f, "ml", "p1", "n1", "Running", APP_VLLM, false);
    pod(f, "ml", "p2", "n1", "Running", APP_VLLM, false);
    sync_pods(f);
}

static void test_workload_gpu_sharing_auto_gives_each_pod_its_share(void **state) {
    fx_t *f = *state;
    shared_gpu(f, NULL);
    /* The shares (25 + 15) add up to the GPU's 40, not 2 x 40. */
    trigger_config_t c = CFG("podSelector", "app=vllm", "podAggregation", "sum");
    expect_ok(eval(f, &c), 40, 2);
    c = CFG("podSelector", "app=vllm", "podAggregation", "sum", "aggregation", "max");
    expect_ok(eval(f, &c), 25, 2); /* p1's own share */
    c = CFG("podSelector", "app=vllm", "gpuSharing", "whole", "podAggregation", "sum");
    expect_ok(eval(f, &c), 80, 2); /* as before: each pod the whole GPU */
    c = CFG("podSelector", "app=vllm", "gpuSharing", "share", "metricType", "memory_used_mib");
    expect_ok(eval(f, &c), 4096, 2); /* 3 GiB + 1 GiB, in MiB */
    c = CFG("podSelector", "app=vllm", "gpuSharing", "share", "metricType", "memory_used_percent",
            "aggregation", "max");
    expect_ok(eval(f, &c), 3.0 * 100 / 8, 2); /* p1: 3 GiB of 8 */
    c = CFG("podSelector", "app=vllm", "metricType", "memory_utilization");
    expect_ok(eval(f, &c), (10 + 15 + 15) / 5.0, 2);
}

/* A DRA claim with a share id is shared capacity, as a time-slicing
 * replica id is: with gpuSharing auto the pod gets its own share even when
 * no other pod on the node is attributed the device (the others may be out
 * of the agent's view, or not started yet). */
static void test_workload_gpu_sharing_auto_shares_a_dra_shared_claim_like_a_replica(void **state) {
    fx_t *f = *state;
    cluster_view_set_resolver(f->view, fake_slices, NULL);
    static const char *replica[] = {"GPU-n1-0::0"};
    node_pod_entry_t plugin[] = {{"ml", "p1", "main", replica, 1}};
    report(f, "a1", shared_snap(NULL), plugin, 1);
    pod(f, "ml", "p1", "n1", "Running", APP_VLLM, false);
    sync_pods(f);
    trigger_config_t c = CFG("podSelector", "app=vllm");
    expect_ok(eval(f, &c), 25, 1); /* p1's processes: 10 + 15 of the GPU's 40 */

    node_pod_dra_t shared = {"gpu.nvidia.com", "n1", "gpu-0", "share-1", "", false};
    node_pod_entry_t dra[] = {{"ml", "p1", "main", NULL, 0, &shared, 1, 1}};
    report(f, "a1", shared_snap(NULL), dra, 1);
    expect_ok(eval(f, &c), 25, 1);
    /* Without a share id the claim is the pod's alone: the whole GPU. */
    node_pod_dra_t whole = {"gpu.nvidia.com", "n1", "gpu-0", "", "", false};
    dra[0].dra = &whole;
    report(f, "a1", shared_snap(NULL), dra, 1);
    expect_ok(eval(f, &c), 40, 1);
}

static void test_workload_gpu_sharing_auto_on_an_unshared_gpu_is_whole(void **state) {
    fx_t *f = *state;
    const unsigned util[1] = {40};
    snapshot_t *s = snap("n1", 1, util, 0, T0);
    static const char *a[] = {"GPU-n1-0"};
    node_pod_entry_t e[] = {{"ml", "p1", "main", a, 1}};
    report(f, "a1", s, e, 1); /* no process data at all: whole, as before */
    pod(f, "ml", "p1", "n1", "Running", APP_VLLM, false);
    sync_pods(f);
    trigger_config_t c = CFG("podSelector", "app=vllm");
    expect_ok(eval(f, &c), 40, 1);
}

static void not_attributed(snapshot_t *s) {
    s->procs_attributed = false;
}
static void no_util(snapshot_t *s) {
    s->gpus[0].procs.util_ok = false;
    s->gpus[0].procs.util_code = 3;
}
static void dropped(snapshot_t *s) {
    s->gpus[0].procs.dropped = 7;
}
static void no_list(snapshot_t *s) {
    s->gpus[0].procs = (proc_list_t){.list_code = 4};
}
static void memory_unknown(snapshot_t *s) {
    s->procs[1].valid &= ~(1u << PROC_F_USED_MEMORY);
}

static void test_workload_gpu_sharing_share_without_data_is_a_gap(void **state) {
    fx_t *f = *state;
    shared_gpu(f, not_attributed);
    trigger_config_t share = CFG("podSelector", "app=vllm", "gpuSharing", "share");
    expect_error(eval(f, &share), EVAL_UNAVAILABLE,
                 "node n1 (pod ml/p1): gpuSharing share: the agent does not attribute GPU "
                 "processes to pods");
    trigger_config_t automatic = CFG("podSelector", "app=vllm", "podAggregation", "sum");
    expect_ok(eval(f, &automatic), 80, 2); /* auto without data: whole */
    trigger_config_t ignore =
        CFG("podSelector", "app=vllm", "gpuSharing", "share", "partialData", "ignore");
    expect_error(eval(f, &ignore), EVAL_UNAVAILABLE, "no selected pod has fresh data");
}

/* The shared GPU as the amdgpu reader records an AMD GPU without a
 * unique_id, held by both pods under its PCI address. */
static void amd_shared_gpu(fx_t *f, void (*tweak)(snapshot_t *s)) {
    snapshot_t *p = shared_snap(tweak);
    p->gpus[0].vendor = GPU_VENDOR_AMD;
    p->gpus[0].uuid[0] = '\0';
    snprintf(p->gpus[0].pci_bus_id, sizeof p->gpus[0].pci_bus_id, "0000:19:00.0");
    static const char *a[] = {"0000:19:00.0"};
    node_pod_entry_t e[] = {{"ml", "p1", "main", a, 1}, {"ml", "p2", "main", a, 1}};
    report(f, "a1", p, e, 2);
    pod(f, "ml", "p1", "n1", "Running", APP_VLLM, false);
    pod(f, "ml", "p2", "n1", "Running", APP_VLLM, false);
    sync_pods(f);
}

static void test_workload_gpu_sharing_shares_an_amd_gpu_named_by_address(void **state) {
    fx_t *f = *state;
    amd_shared_gpu(f, NULL);
    trigger_config_t c = CFG("podSelector", "app=vllm", "podAggregation", "sum");
    expect_ok(eval(f, &c), 40, 2); /* 25 + 15, each pod its own share */
    teardown(state);
    setup(state);
    f = *state;
    amd_shared_gpu(f, no_list);
    c = CFG("podSelector", "app=vllm", "gpuSharing", "share", "metricType", "memory_used_mib");
    expect_error(eval(f, &c), EVAL_UNAVAILABLE,
                 "process list of 0000:19:00.0 is unavailable (NO_PERMISSION)");
}

static void test_workload_gpu_sharing_share_names_what_is_missing(void **state) {
    fx_t *f = *state;
    static const struct {
        void (*tweak)(snapshot_t *);
        const char *metric, *want;
    } cases[] = {
        {no_util, "gpu_utilization",
         "NVML's per-process utilisation of GPU-n1-0 is unavailable (NOT_SUPPORTED)"},
        {dropped, "gpu_utilization", "GPU-n1-0 runs more processes than the agent reports (7 left"},
        {no_list, "memory_used_mib",
         "NVML's process list of GPU-n1-0 is unavailable (NO_PERMISSION)"},
        {memory_unknown, "memory_used_mib",
         "NVML does not report the used memory of the pod's process 101 on GPU-n1-0"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        teardown(state);
        setup(state);
        f = *state;
        shared_gpu(f, cases[k].tweak);
        trigger_config_t c =
            CFG("podSelector", "app=vllm", "gpuSharing", "share", "metricType", cases[k].metric);
        expect_error(eval(f, &c), EVAL_UNAVAILABLE, cases[k].want);
    }
    /* Utilisation absent, memory present: the memory share still works. */
    teardown(state);
    setup(state);
    f = *state;
    shared_gpu(f, no_util);
    trigger_config_t c =
        CFG("podSelector", "app=vllm", "gpuSharing", "share", "metricType", "memory_used_mib");
    expect_ok(eval(f, &c), 4096, 2);
}

static void test_workload_gpu_sharing_mig_has_memory_shares_only(void **state) {
    fx_t *f = *state;
    const unsigned util[1] = {0};
    snapshot_t *s = snap("n1", 1, util, 1, T0);
    snapshot_t *p = snapshot_new_with_procs(1, 1, 2);
    memcpy(p, s, offsetof(snapshot_t, gpu_count));
    memcpy(p->gpus, s->gpus, sizeof *p->gpus);
    snapshot_unref(s);
    add_mig(p, 0, 0, "MIG-aaaa", "3g.40gb", 10);
    p->procs_attributed = true;
    p->mig[0].procs = (proc_list_t){.first = 0, .count = 2, .list_ok = true, .util_code = 3};
    p->procs[0] = (proc_record_t){
        .pid = 5, .valid = 1u << PROC_F_USED_MEMORY, .used_memory_bytes = UINT64_C(2) << 30};
    snprintf(p->procs[0].pod_uid, sizeof p->procs[0].pod_uid, "ml-p1");
    p->procs[1] = (proc_record_t){
        .pid = 6, .valid = 1u << PROC_F_USED_MEMORY, .used_memory_bytes = UINT64_C(6) << 30};
    snprintf(p->procs[1].pod_uid, sizeof p->procs[1].pod_uid, "ml-p2");
    static const char *a[] = {"MIG-aaaa::0"};
    static const char *b[] = {"MIG-aaaa::1"};
    node_pod_entry_t e[] = {{"ml", "p1", "main", a, 1}, {"ml", "p2", "main", b, 1}};
    report(f, "a1", p, e, 2);
    pod(f, "ml", "p1", "n1", "Running", APP_VLLM, false);
    pod(f, "ml", "p2", "n1", "Running", APP_VLLM, false);
    sync_pods(f);
    trigger_config_t c = CFG("podSelector", "app=vllm", "metricType", "memory_used_mib");
    expect_ok(eval(f, &c), 8192, 2); /* 2 + 6 GiB, not 2 x the instance's 10 GiB */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        T(test_workload_sums_only_the_selected_deployments_pods_across_nodes),
        T(test_workload_takes_the_namespace_key_over_the_scaled_objects),
        T(test_workload_defaults_to_the_scaled_objects_namespace),
        T(test_workload_averages_each_pods_gpus_then_sums_the_pods),
        T(test_workload_excludes_pending_finished_and_deleting_pods),
        T(test_workload_answers_zero_when_no_pod_is_in_scope),
        T(test_workload_is_unavailable_until_the_pod_list_has_synced),
        T(test_workload_stale_node_fails_the_answer_with_partial_data_error),
        T(test_workload_stale_node_is_left_out_with_partial_data_ignore),
        T(test_workload_with_every_pod_skipped_is_unavailable_not_zero),
        T(test_workload_disconnected_agent_with_fresh_snapshot_still_counts),
        T(test_workload_pod_on_a_node_without_agent_follows_partial_data),
        T(test_workload_unknown_attribution_is_treated_like_a_stale_node),
        T(test_workload_lost_gpu_under_a_selected_pod_is_unavailable),
        T(test_workload_lost_gpu_outside_the_selection_does_not_matter),
        T(test_workload_device_unknown_to_the_snapshot_is_a_failed_precondition),
        T(test_workload_values_that_overflow_are_an_error_naming_their_source),
        T(test_workload_a_pod_whose_devices_overflow_is_an_error_naming_it),
        T(test_workload_counts_a_time_sliced_gpu_once_per_pod),
        T(test_workload_attributes_an_amd_gpu_by_pci_address_beside_an_nvidia_gpu),
        T(test_workload_lost_amd_gpu_without_uuid_is_unavailable_naming_it),
        T(test_workload_amd_partition_is_a_gap_never_the_whole_gpu),
        T(test_workload_pci_address_not_on_the_node_is_a_failed_precondition),
        T(test_workload_amd_gpu_asking_pod_with_no_device_is_a_gap),
        T(test_workload_amd_dra_claim_resolves_by_pci_address),
        T(test_workload_gpu_sharing_shares_an_amd_gpu_named_by_address),
        T(test_workload_dra_devices_count_like_device_plugin_ids),
        T(test_workload_unresolved_dra_device_is_a_gap_naming_pod_and_device),
        T(test_workload_dra_devices_resolve_once_the_slices_arrive),
        T(test_workload_gpu_sharing_auto_gives_each_pod_its_share),
        T(test_workload_gpu_sharing_auto_on_an_unshared_gpu_is_whole),
        T(test_workload_gpu_sharing_auto_shares_a_dra_shared_claim_like_a_replica),
        T(test_workload_gpu_sharing_share_without_data_is_a_gap),
        T(test_workload_gpu_sharing_share_names_what_is_missing),
        T(test_workload_gpu_sharing_mig_has_memory_shares_only),
        T(test_workload_reads_mig_instances_held_by_pods),
        T(test_workload_mig_device_missing_behind_a_lost_parent_is_unavailable),
        T(test_workload_absent_field_gives_the_standalone_hint),
        T(test_workload_running_pod_without_gpu_contributes_nothing),
        T(test_workload_gpu_asking_pod_with_no_device_is_a_gap_naming_it),
        T(test_workload_pod_asking_for_no_gpu_makes_no_gap),
        T(test_workload_resource_claim_pod_with_no_device_is_a_gap),
        T(test_workload_gpu_asking_pod_that_just_started_is_not_yet_a_gap),
        T(test_workload_start_window_falls_back_to_creation_and_needs_a_time),
        T(test_workload_aggregates_every_gpu_of_every_node_at_once),
        T(test_workload_aggregates_more_values_than_a_node_holds),
        T(test_workload_node_names_scope_only_those_nodes),
        T(test_workload_named_node_without_agent_follows_partial_data),
        T(test_workload_stale_or_nvml_down_node_follows_partial_data),
        T(test_workload_gpu_uuids_name_gpus_on_any_node),
        T(test_workload_mig_selection_spans_nodes),
        T(test_workload_node_label_selector_counts_the_matching_nodes),
        T(test_workload_without_any_agent_is_unavailable),
        T(test_workload_agent_that_never_reported_names_no_node),
        T(test_workload_without_config_is_a_failed_precondition),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
