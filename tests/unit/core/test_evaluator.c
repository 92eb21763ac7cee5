/* test_evaluator.c - (config, snapshot, now) -> value or typed error, on
 * hand-built snapshots. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/err.h"
#include "core/evaluator.h"
#include "core/trigger_config.h"
#include "support/test_support.h"

#define T0 (UINT64_C(1000) * NS_PER_SEC)
#define STALE (3 * NS_PER_SEC)
#define MiB 1048576.0

/* GPU i: every field present; gpu_util = 10 * (i + 1). */
static void fill_gpu(gpu_record_t *g, unsigned i) {
    memset(g, 0, sizeof *g);
    g->index = i;
    snprintf(g->uuid, sizeof g->uuid, "GPU-000%u", i);
    snprintf(g->name, sizeof g->name, "NVIDIA H100 80GB HBM3");
    for (int f = 0; f < GPU_F_COUNT; f++)
        ts_set_field(g, (gpu_field_t)f);
    g->gpu_util_pct = 10 * (i + 1);
    g->mem_util_pct = 5;
    g->memory_used_bytes = (uint64_t)(i + 1) << 30;
    g->memory_total_bytes = UINT64_C(8) << 30;
    g->temperature_c = 50;
    g->power_w = 300;
    g->pcie_tx_bytes_per_s = 1024;
    g->pcie_rx_bytes_per_s = 2048;
    g->nvlink_tx_bytes_per_s = MiB;
    g->nvlink_rx_bytes_per_s = 2 * MiB;
    g->sm_active_pct = 20;
    g->sm_occupancy_pct = 10;
    g->dram_bw_util_pct = 5;
    g->health = GPU_HEALTH_OK;
}

static snapshot_t *node(unsigned gpus, unsigned migs) {
    snapshot_t *s = snapshot_new(gpus, migs);
    assert_non_null(s);
    s->taken_mono = T0;
    s->status = SNAPSHOT_OK;
    snprintf(s->node_name, sizeof s->node_name, "node-a");
    for (unsigned i = 0; i < gpus; i++)
        fill_gpu(&s->gpus[i], i);
    return s;
}

static void fill_mig(snapshot_t *s, unsigned k, unsigned parent, const char *uuid,
                     const char *profile, double sm_active) {
    mig_record_t *m = &s->mig[k];
    memset(m, 0, sizeof *m);
    m->parent_index = parent;
    snprintf(m->uuid, sizeof m->uuid, "%s", uuid);
    snprintf(m->profile, sizeof m->profile, "%s", profile);
    m->valid = (1u << GPU_F_MEM_USED) | (1u << GPU_F_MEM_TOTAL) | (1u << GPU_F_SM_ACTIVE) |
               (1u << GPU_F_SM_OCCUPANCY) | (1u << GPU_F_DRAM_BW_UTIL);
    m->memory_used_bytes = UINT64_C(10) << 30;
    m->memory_total_bytes = UINT64_C(40) << 30;
    m->sm_active_pct = sm_active;
    m->sm_occupancy_pct = sm_active / 2;
    m->dram_bw_util_pct = 1;
    gpu_record_t *g = &s->gpus[parent];
    g->mig_enabled = true;
    if (g->mig_count++ == 0)
        g->mig_first = k;
    /* NVML gives no utilisation on a MIG-enabled GPU */
    g->valid &= ~((1u << GPU_F_GPU_UTIL) | (1u << GPU_F_MEM_UTIL));
    g->field_error[GPU_F_GPU_UTIL] = 3;
    g->field_error[GPU_F_MEM_UTIL] = 3;
}

/* Two GPUs with MIG: GPU 0 has MIG-a (3g.40gb) and MIG-b (1c.3g.40gb),
 * GPU 1 has MIG-c (1g.10gb); GPU 2 without MIG. */
static snapshot_t *mig_node(void) {
    snapshot_t *s = node(3, 3);
    fill_mig(s, 0, 0, "MIG-aaaa", "3g.40gb", 30);
    fill_mig(s, 1, 0, "MIG-bbbb", "1c.3g.40gb", 12);
    fill_mig(s, 2, 1, "MIG-cccc", "1g.10gb", 50);
    return s;
}

static eval_result_t run(const trigger_config_t *c, const snapshot_t *s, mono_ns_t now) {
    eval_result_t r;
    memset(&r, 0x5a, sizeof r);
    evaluator_run(c, s, now, STALE, &r);
    return r;
}

static void expect_ok(eval_result_t r, double value, unsigned inputs) {
    if (r.status != EVAL_OK)
        fail_msg("status %d: %s", r.status, r.message);
    if (fabs(r.value - value) > 1e-9)
        fail_msg("value %.17g, want %.17g", r.value, value);
    assert_int_equal(r.inputs, inputs);
    assert_string_equal(r.message, "");
}

static void expect_err(eval_result_t r, eval_status_t st, const char *n1, const char *n2) {
    if (r.status != st)
        fail_msg("status %d, want %d: %s", r.status, st, r.message);
    assert_false(r.active);
    assert_true(r.value == 0);
    if (n1 && !strstr(r.message, n1))
        fail_msg("message lacks \"%s\": %s", n1, r.message);
    if (n2 && !strstr(r.message, n2))
        fail_msg("message lacks \"%s\": %s", n2, r.message);
}

static void test_evaluator_sums_all_gpus_by_default(void **state) {
    (void)state;
    snapshot_t *s = node(4, 0);
    trigger_config_t c = CFG0();
    eval_result_t r = run(&c, s, T0);
    expect_ok(r, 10 + 20 + 30 + 40, 4);
    assert_true(r.active);
    snapshot_unref(s);
}

static void test_evaluator_applies_the_configured_aggregation(void **state) {
    (void)state;
    snapshot_t *s = node(4, 0);
    trigger_config_t c = CFG("aggregation", "max");
    expect_ok(run(&c, s, T0), 40, 4);
    c = CFG("aggregation", "avg");
    expect_ok(run(&c, s, T0), 25, 4);
    c = CFG("aggregation", "min");
    expect_ok(run(&c, s, T0), 10, 4);
    c = CFG("aggregation", "p95");
    expect_ok(run(&c, s, T0), 40, 4);
    snapshot_unref(s);
}

static void test_evaluator_is_active_only_above_the_threshold(void **state) {
    (void)state;
    snapshot_t *s = node(1, 0);
    trigger_config_t c = CFG("activationThreshold", "10");
    eval_result_t r = run(&c, s, T0);
    expect_ok(r, 10, 1);
    assert_false(r.active); /* strict, as the Go system */
    c = CFG("activationThreshold", "9.5");
    assert_true(run(&c, s, T0).active);
    s->gpus[0].gpu_util_pct = 0;
    c = CFG0();
    r = run(&c, s, T0);
    expect_ok(r, 0, 1); /* a measured 0 is a value */
    assert_false(r.active);
    snapshot_unref(s);
}

static void test_evaluator_selects_one_gpu_by_index(void **state) {
    (void)state;
    snapshot_t *s = node(4, 0);
    trigger_config_t c = CFG("gpuIndex", "2");
    expect_ok(run(&c, s, T0), 30, 1);
    snapshot_unref(s);
}

static void test_evaluator_rejects_gpu_index_out_of_range(void **state) {
    (void)state;
    snapshot_t *s = node(4, 0);
    trigger_config_t c = CFG("gpuIndex", "9");
    expect_err(run(&c, s, T0), EVAL_FAILED_PRECONDITION,
               "gpuIndex 9 out of range: node node-a has 4 GPUs (0-3)", NULL);
    /* a gap in the indexes (a GPU that NVML no longer enumerates) lists them */
    s->gpus[1].index = 7;
    c = CFG("gpuIndex", "1");
    expect_err(run(&c, s, T0), EVAL_FAILED_PRECONDITION, "gpuIndex 1 not found",
               "GPU-0001 (index 7)");
    snapshot_unref(s);
    s = node(1, 0);
    expect_err(run(&c, s, T0), EVAL_FAILED_PRECONDITION, "has 1 GPU (0-0)", NULL);
    snapshot_unref(s);
}

static void test_evaluator_selects_gpus_by_uuid(void **state) {
    (void)state;
    snapshot_t *s = node(4, 0);
    trigger_config_t c = CFG("gpuUUID", "GPU-0001,GPU-0003");
    expect_ok(run(&c, s, T0), 20 + 40, 2);
    c = CFG("gpuUUID", "GPU-0001,GPU-0009");
    expect_err(run(&c, s, T0), EVAL_FAILED_PRECONDITION,
               "gpuUUID GPU-0009 not found on node node-a", "GPU-0000 (index 0), GPU-0001");
    snapshot_unref(s);
}

static void test_evaluator_reports_nvml_down_as_unavailable(void **state) {
    (void)state;
    snapshot_t *s = node(0, 0);
    s->status = SNAPSHOT_NVML_DOWN;
    s->nvml_code = 9;
    snprintf(s->error, sizeof s->error, "nvmlInit: DRIVER_NOT_LOADED");
    trigger_config_t c = CFG0();
    expect_err(run(&c, s, T0), EVAL_UNAVAILABLE, "NVML unavailable on node node-a",
               "nvmlInit: DRIVER_NOT_LOADED");
    s->error[0] = '\0';
    expect_err(run(&c, s, T0), EVAL_UNAVAILABLE, "DRIVER_NOT_LOADED", NULL);
    /* An AMD reader that is down is not said to be NVML. */
    snprintf(s->error, sizeof s->error, "amd-smi: amdsmi_init: AMDSMI_STATUS_INIT_ERROR (4)");
    expect_err(run(&c, s, T0), EVAL_UNAVAILABLE, "GPU backend unavailable on node node-a",
               "amd-smi: amdsmi_init");
    snapshot_unref(s);
}

static void test_evaluator_reports_a_stale_snapshot_as_unavailable(void **state) {
    (void)state;
    snapshot_t *s = node(2, 0);
    trigger_config_t c = CFG0();
    expect_err(run(&c, s, T0 + 4200 * NS_PER_MS), EVAL_UNAVAILABLE,
               "GPU snapshot is 4.2 s old (stale after 3.0 s)", "node-a");
    expect_ok(run(&c, s, T0 + STALE), 30, 2);      /* exactly at the limit: still fresh */
    expect_ok(run(&c, s, T0 - NS_PER_SEC), 30, 2); /* "now" before the sample: age 0 */
    snapshot_unref(s);
}

static void test_evaluator_reports_no_gpus_as_unavailable(void **state) {
    (void)state;
    snapshot_t *s = node(0, 0);
    trigger_config_t c = CFG0();
    expect_err(run(&c, s, T0), EVAL_UNAVAILABLE, "no GPU visible to NVML on node node-a", NULL);
    s->node_name[0] = '\0';
    expect_err(run(&c, s, T0), EVAL_UNAVAILABLE, "(unnamed)", NULL);
    snapshot_unref(s);
}

static void test_evaluator_reports_a_missing_snapshot_or_config(void **state) {
    (void)state;
    trigger_config_t c = CFG0();
    expect_err(run(&c, NULL, T0), EVAL_UNAVAILABLE, "no GPU snapshot yet", NULL);
    snapshot_t *s = node(1, 0);
    expect_err(run(NULL, s, T0), EVAL_FAILED_PRECONDITION, "no trigger configuration", NULL);
    snapshot_unref(s);
}

static void test_evaluator_never_skips_a_lost_gpu(void **state) {
    (void)state;
    snapshot_t *s = node(4, 0);
    s->gpus[2].health = GPU_HEALTH_LOST;
    s->gpus[2].health_nvml_code = 15;
    s->gpus[2].valid = 0;
    trigger_config_t c = CFG0();
    expect_err(run(&c, s, T0), EVAL_UNAVAILABLE, "GPU 2 (GPU-0002) on node node-a is lost",
               "NVML GPU_IS_LOST");
    /* a GPU outside the selection does not matter */
    c = CFG("gpuIndex", "1");
    expect_ok(run(&c, s, T0), 20, 1);
    c = CFG("gpuIndex", "2");
    expect_err(run(&c, s, T0), EVAL_UNAVAILABLE, "is lost", NULL);
    s->gpus[2].health = GPU_HEALTH_RESET_REQUIRED;
    s->gpus[2].health_nvml_code = 16;
    expect_err(run(&c, s, T0), EVAL_UNAVAILABLE, "reset_required", "RESET_REQUIRED");
    /* an AMD GPU's loss names the reader that saw it, not NVML */
    s->gpus[2].health = GPU_HEALTH_LOST;
    s->gpus[2].health_nvml_code = 15;
    s->gpus[2].vendor = GPU_VENDOR_AMD;
    expect_err(run(&c, s, T0), EVAL_UNAVAILABLE, "is lost", "(AMD reader GPU_IS_LOST)");
    snapshot_unref(s);
}

/* An AMD GPU read by the amdgpu sysfs reader: the message names that
 * source, and a GPM metric gets no NVIDIA advice (Hopper, drivers). */
static void test_evaluator_absent_field_of_an_amd_gpu_names_its_source(void **state) {
    (void)state;
    snapshot_t *s = node(1, 0);
    gpu_record_t *g = &s->gpus[0];
    g->vendor = GPU_VENDOR_AMD;
    strcpy(g->name, "AMD Instinct MI300X");
    g->valid &= ~(1u << GPU_F_SM_ACTIVE);
    g->field_error[GPU_F_SM_ACTIVE] = 3; /* NOT_SUPPORTED */
    trigger_config_t c = CFG("metricType", "sm_active");
    eval_result_t r = run(&c, s, T0);
    expect_err(r, EVAL_FAILED_PRECONDITION, "has no sm_active value (AMD reader NOT_SUPPORTED)",
               "NVIDIA GPM metrics, which an AMD GPU (AMD Instinct MI300X) has not: use "
               "metricType gpu_utilization");
    assert_null(strstr(r.message, "Hopper"));
    snapshot_unref(s);
}

static void test_evaluator_reports_an_absent_field_with_the_gpu_and_field(void **state) {
    (void)state;
    snapshot_t *s = node(2, 0);
    s->gpus[1].valid &= ~(1u << GPU_F_TEMPERATURE);
    s->gpus[1].field_error[GPU_F_TEMPERATURE] = 3; /* NOT_SUPPORTED */
    trigger_config_t c = CFG("metricType", "temperature");
    expect_err(run(&c, s, T0), EVAL_FAILED_PRECONDITION,
               "metricType temperature: GPU 1 (GPU-0001) on node node-a has no temperature value",
               "NVML NOT_SUPPORTED");
    /* a transient NVML failure is UNAVAILABLE: retry later */
    s->gpus[1].field_error[GPU_F_TEMPERATURE] = 10; /* TIMEOUT */
    expect_err(run(&c, s, T0), EVAL_UNAVAILABLE, "NVML TIMEOUT", NULL);
    /* no code at all (symbol missing, or a rate without a second sample) */
    s->gpus[1].valid &= ~(1u << GPU_F_NVLINK_TX);
    s->gpus[1].field_error[GPU_F_NVLINK_TX] = 0;
    c = CFG("metricType", "nvlink_tx_mbps");
    expect_err(run(&c, s, T0), EVAL_FAILED_PRECONDITION, "has no nvlink_tx value (NVML gave none)",
               "two samples");
    snapshot_unref(s);
}

static void test_evaluator_hints_at_gpm_when_utilisation_is_absent_with_mig(void **state) {
    (void)state;
    snapshot_t *s = mig_node();
    trigger_config_t c = CFG("gpuIndex", "0");
    /* This GPU has GPM (a Hopper with MIG): sm_active is a way, and so is memory. */
    expect_err(run(&c, s, T0), EVAL_FAILED_PRECONDITION, "has no gpu_utilization value",
               "NVML has no utilisation under MIG: select MIG instances (migProfile 3g.40gb) with "
               "metricType memory_used_percent (any MIG GPU) or sm_active (GPM, which this GPU "
               "has); GPU 2 (MIG off) has gpu_utilization: gpuIndex 2");
    /* a GPM field absent: hint names Hopper */
    s->gpus[2].valid &= ~(1u << GPU_F_SM_ACTIVE);
    s->gpus[2].field_error[GPU_F_SM_ACTIVE] = 3;
    c = CFG("gpuIndex", "2", "metricType", "sm_active");
    expect_err(run(&c, s, T0), EVAL_FAILED_PRECONDITION, "Hopper", NULL);
    snapshot_unref(s);
}

static void test_evaluator_converts_each_metric_type_to_its_unit(void **state) {
    (void)state;
    snapshot_t *s = node(1, 0);
    gpu_record_t *g = &s->gpus[0];
    g->gpu_util_pct = 37;
    g->mem_util_pct = 12;
    g->memory_used_bytes = 1572865; /* 1.5 MiB + 1 byte: no truncation */
    g->memory_total_bytes = 3145730;
    g->temperature_c = 51;
    g->power_w = 312.5;
    g->pcie_tx_bytes_per_s = 1536;
    g->pcie_rx_bytes_per_s = 512;
    g->nvlink_tx_bytes_per_s = 3.5 * MiB;
    g->nvlink_rx_bytes_per_s = 0.25 * MiB;
    g->sm_active_pct = 30.5;
    g->sm_occupancy_pct = 22.25;
    g->dram_bw_util_pct = 8.75;
    static const struct {
        const char *type;
        double want;
    } cases[] = {
        {"gpu_utilization", 37},
        {"memory_utilization", 12},
        {"memory_used_mib", 1572865.0 / MiB},
        {"memory_used_percent", 1572865.0 * 100.0 / 3145730.0},
        {"temperature", 51},
        {"power_draw", 312.5},
        {"pcie_tx_kbps", 1.5},
        {"pcie_rx_kbps", 0.5},
        {"nvlink_tx_mbps", 3.5},
        {"nvlink_rx_mbps", 0.25},
        {"sm_active", 30.5},
        {"sm_occupancy", 22.25},
        {"dram_bandwidth", 8.75},
    };
    assert_int_equal(sizeof cases / sizeof cases[0], METRIC_TYPE_COUNT);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        trigger_config_t c = CFG("metricType", cases[i].type);
        expect_ok(run(&c, s, T0), cases[i].want, 1);
    }
    snapshot_unref(s);
}

static void test_evaluator_memory_percent_needs_a_nonzero_total(void **state) {
    (void)state;
    snapshot_t *s = node(1, 0);
    s->gpus[0].memory_total_bytes = 0;
    trigger_config_t c = CFG("metricType", "memory_used_percent");
    expect_err(run(&c, s, T0), EVAL_FAILED_PRECONDITION, "no memory_total value", NULL);
    s->gpus[0].memory_total_bytes = 1;
    s->gpus[0].valid &= ~(1u << GPU_F_MEM_USED);
    s->gpus[0].field_error[GPU_F_MEM_USED] = 3;
    expect_err(run(&c, s, T0), EVAL_FAILED_PRECONDITION, "no memory_used value", NULL);
    snapshot_unref(s);
}

static void test_evaluator_selects_mig_instances_by_profile(void **state) {
    (void)state;
    snapshot_t *s = mig_node();
    /* "3g.40gb" also matches the compute instance "1c.3g.40gb" */
    trigger_config_t c = CFG("migProfile", "3g.40gb", "metricType", "sm_active");
    expect_ok(run(&c, s, T0), 30 + 12, 2);
    c = CFG("migProfile", "1c.3g.40gb", "metricType", "sm_active");
    expect_ok(run(&c, s, T0), 12, 1);
    c = CFG("migProfile", "3g.40gb,1g.10gb", "metricType", "sm_occupancy", "aggregation", "max");
    expect_ok(run(&c, s, T0), 25, 3);
    /* restricted to the GPUs that gpuIndex selects */
    c = CFG("migProfile", "3g.40gb,1g.10gb", "metricType", "sm_active", "gpuIndex", "1");
    expect_ok(run(&c, s, T0), 50, 1);
    snapshot_unref(s);
}

static void test_evaluator_selects_mig_instances_by_uuid(void **state) {
    (void)state;
    snapshot_t *s = mig_node();
    trigger_config_t c = CFG("migUUID", "MIG-cccc,MIG-aaaa", "metricType", "memory_used_percent");
    expect_ok(run(&c, s, T0), 25 + 25, 2);
    c = CFG("migUUID", "MIG-bbbb", "metricType", "memory_used_mib");
    expect_ok(run(&c, s, T0), 10 * 1024, 1);
    c = CFG("migUUID", "MIG-aaaa", "metricType", "dram_bandwidth", "gpuUUID", "GPU-0000");
    expect_ok(run(&c, s, T0), 1, 1);
    snapshot_unref(s);
}

static void test_evaluator_reports_unmatched_mig_selection_with_what_exists(void **state) {
    (void)state;
    snapshot_t *s = mig_node();
    trigger_config_t c = CFG("migUUID", "MIG-zzzz", "metricType", "sm_active");
    expect_err(
        run(&c, s, T0), EVAL_FAILED_PRECONDITION,
        "migUUID MIG-zzzz not found among the MIG instances of all GPUs on node node-a",
        "MIG-aaaa (3g.40gb, GPU 0), MIG-bbbb (1c.3g.40gb, GPU 0), MIG-cccc (1g.10gb, GPU 1)");
    c = CFG("migUUID", "MIG-cccc", "metricType", "sm_active", "gpuIndex", "0");
    expect_err(run(&c, s, T0), EVAL_FAILED_PRECONDITION,
               "migUUID MIG-cccc is on GPU 1 (GPU-0001), which is outside the selection (GPU 0)",
               NULL);
    c = CFG("migProfile", "7g.80gb", "metricType", "sm_active");
    expect_err(run(&c, s, T0), EVAL_FAILED_PRECONDITION,
               "no MIG instance with migProfile 7g.80gb on all GPUs of node node-a",
               "MIG-cccc (1g.10gb, GPU 1)");
    c = CFG("migProfile", "1g.10gb", "metricType", "sm_active", "gpuIndex", "2");
    expect_err(run(&c, s, T0), EVAL_FAILED_PRECONDITION, "on GPU 2 of node node-a",
               "none (MIG is not enabled, or has no instances, on the selected GPUs)");
    snapshot_unref(s);
}

static void test_evaluator_rejects_gpu_only_metrics_on_mig_instances(void **state) {
    (void)state;
    snapshot_t *s = mig_node();
    static const char *gpu_only[] = {"gpu_utilization", "memory_utilization", "temperature",
                                     "power_draw",      "pcie_tx_kbps",       "pcie_rx_kbps",
                                     "nvlink_tx_mbps",  "nvlink_rx_mbps"};
    for (int i = 0; i < 8; i++) {
        trigger_config_t c = CFG("migProfile", "3g.40gb", "metricType", gpu_only[i]);
        /* Whole GPUs have no utilisation under MIG either: no "select whole GPUs" there. */
        expect_err(run(&c, s, T0), EVAL_FAILED_PRECONDITION, "does not exist per MIG instance",
                   i < 2 ? "nor for a GPU with MIG enabled" : "select whole GPUs");
        if (i < 2 && strstr(run(&c, s, T0).message, "select whole GPUs"))
            fail_msg("%s: a hint back to whole GPUs, which have none under MIG", gpu_only[i]);
    }
    snapshot_unref(s);
}

static void test_evaluator_reports_an_absent_mig_field(void **state) {
    (void)state;
    snapshot_t *s = mig_node();
    s->mig[1].valid &= ~(1u << GPU_F_SM_ACTIVE);
    s->mig[1].field_error[GPU_F_SM_ACTIVE] = 3;
    trigger_config_t c = CFG("migProfile", "3g.40gb", "metricType", "sm_active");
    expect_err(run(&c, s, T0), EVAL_FAILED_PRECONDITION,
               "MIG instance MIG-bbbb (1c.3g.40gb) of GPU 0 on node node-a has no sm_active value",
               "Hopper");
    snapshot_unref(s);
}

static void test_evaluator_reports_the_unhealthy_parent_of_a_mig_instance(void **state) {
    (void)state;
    snapshot_t *s = mig_node();
    s->gpus[0].health = GPU_HEALTH_ERROR;
    s->gpus[0].health_nvml_code = 17; /* OPERATING_SYSTEM */
    trigger_config_t c = CFG("migProfile", "3g.40gb", "metricType", "sm_active");
    expect_err(run(&c, s, T0), EVAL_UNAVAILABLE, "GPU 0 (GPU-0000) on node node-a is error",
               "NVML OPERATING_SYSTEM");
    /* a lost GPU lists no instances: the selection is unknown, not wrong */
    snapshot_unref(s);
    s = node(2, 0);
    s->gpus[1].health = GPU_HEALTH_LOST;
    s->gpus[1].health_nvml_code = 15;
    c = CFG("migProfile", "3g.40gb", "metricType", "sm_active");
    expect_err(run(&c, s, T0), EVAL_UNAVAILABLE, "GPU 1 (GPU-0001)",
               "MIG instances cannot be listed");
    c = CFG("migUUID", "MIG-aaaa", "metricType", "sm_active");
    expect_err(run(&c, s, T0), EVAL_UNAVAILABLE, "is lost", NULL);
    snapshot_unref(s);
}

/* ---- MIG without GPM (A100, A30): hints that lead somewhere ---------------- */

/*
 * sim/scenarios/mig-a100.json as the collector records it: GPU 0, an A100
 * with MIG (3g.40gb, 2g.20gb, 1g.10gb), has no utilisation (MIG) and no GPM
 * (NOT_SUPPORTED on the GPU and on each instance): memory is all NVML gives
 * per instance. GPU 1, an A100 without MIG, has utilisation but no GPM.
 */
static snapshot_t *a100_mig_node(void) {
    snapshot_t *s = node(2, 3);
    static const char *const uuids[] = {"MIG-4e8a", "MIG-9b1f", "MIG-c7a3"};
    static const char *const profiles[] = {"3g.40gb", "2g.20gb", "1g.10gb"};
    static const unsigned gib[] = {15, 5, 0};
    for (unsigned k = 0; k < 3; k++) {
        fill_mig(s, k, 0, uuids[k], profiles[k], 0);
        mig_record_t *m = &s->mig[k];
        m->valid = (1u << GPU_F_MEM_USED) | (1u << GPU_F_MEM_TOTAL);
        m->memory_used_bytes = (uint64_t)gib[k] << 30;
        m->field_error[GPU_F_SM_ACTIVE] = 3;
        m->field_error[GPU_F_SM_OCCUPANCY] = 3;
        m->field_error[GPU_F_DRAM_BW_UTIL] = 3;
    }
    for (unsigned i = 0; i < 2; i++) {
        gpu_record_t *g = &s->gpus[i];
        snprintf(g->name, sizeof g->name, "NVIDIA A100-SXM4-80GB");
        g->valid &=
            ~((1u << GPU_F_SM_ACTIVE) | (1u << GPU_F_SM_OCCUPANCY) | (1u << GPU_F_DRAM_BW_UTIL));
        g->field_error[GPU_F_SM_ACTIVE] = 3;
        g->field_error[GPU_F_SM_OCCUPANCY] = 3;
        g->field_error[GPU_F_DRAM_BW_UTIL] = 3;
    }
    return s;
}

/* One trigger the walk tries: a metric and at most one selection key. */
typedef struct {
    char metric[32];
    char key[16]; /* "", "migProfile", "migUUID" or "gpuIndex" */
    char value[32];
} walk_step_t;

/* The word after each occurrence of `word ` in msg from `from` on. */
static unsigned words_after(const char *msg, size_t from, const char *word, char (*out)[32],
                            unsigned cap) {
    unsigned n = 0;
    size_t wl = strlen(word);
    for (const char *p = strstr(msg + from, word); p && n < cap; p = strstr(p + 1, word)) {
        if (p[wl] != ' ')
            continue;
        const char *v = p + wl + 1;
        size_t len = strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789_.+-");
        while (len > 0 && v[len - 1] == '.')
            len--; /* a full stop is not part of a profile */
        if (len == 0 || len >= 32)
            continue;
        memcpy(out[n], v, len);
        out[n][len] = '\0';
        n++;
    }
    return n;
}

/*
 * Evaluates step on s; on an error follows every metricType the message
 * suggests (with the migProfile it names, else the step's own selection)
 * and every "gpuIndex N" it names, depth-first. Fails the test when an error
 * suggests nothing, when a suggestion leads back to a trigger already tried
 * (a circle), or when a path needs more than 4 steps. `demand` is a
 * suggestion the evaluator cannot run (it needs an engine or a queue): the
 * caller checks that such a trigger parses. Returns how many suggestions
 * named metricType demand.
 */
static unsigned walk_hints(const snapshot_t *s, walk_step_t step, walk_step_t *seen,
                           unsigned depth) {
    char trail[512];
    size_t o = 0;
    trail[0] = '\0';
    for (unsigned i = 0; i <= depth && o < sizeof trail; i++) {
        const walk_step_t *w = i < depth ? &seen[i] : &step;
        o += (size_t)snprintf(trail + o, sizeof trail - o, "%s%s %s %s", i ? " -> " : "", w->metric,
                              w->key, w->value);
    }
    if (depth >= 4)
        fail_msg("no answer after 4 hints: %s", trail);
    for (unsigned i = 0; i < depth; i++)
        if (memcmp(&seen[i], &step, sizeof step) == 0)
            fail_msg("the hints lead in a circle: %s", trail);
    seen[depth] = step;
    trigger_config_t c = step.key[0] ? CFG("metricType", step.metric, step.key, step.value)
                                     : CFG("metricType", step.metric);
    eval_result_t r = run(&c, s, T0);
    if (r.status == EVAL_OK)
        return 0;
    char metrics[8][32], profiles[4][32], indexes[4][32];
    /* the message opens with the trigger's own "metricType X" */
    unsigned nm = words_after(r.message, 1, "metricType", metrics, 8);
    unsigned np = words_after(r.message, 0, "migProfile", profiles, 4);
    unsigned ni = words_after(r.message, 0, "gpuIndex", indexes, 4);
    unsigned demand = 0, followed = 0;
    for (unsigned i = 0; i < nm; i++) {
        if (strcmp(metrics[i], "demand") == 0) {
            demand++;
            continue;
        }
        walk_step_t next = step;
        memcpy(next.metric, metrics[i], sizeof next.metric);
        if (np > 0) {
            snprintf(next.key, sizeof next.key, "migProfile");
            memcpy(next.value, profiles[0], sizeof next.value);
        }
        demand += walk_hints(s, next, seen, depth + 1);
        followed++;
    }
    for (unsigned i = 0; i < ni; i++) {
        walk_step_t next = step;
        snprintf(next.key, sizeof next.key, "gpuIndex");
        memcpy(next.value, indexes[i], sizeof next.value);
        demand += walk_hints(s, next, seen, depth + 1);
        followed++;
    }
    if (followed == 0 && demand == 0)
        fail_msg("an error that suggests no way out: %s: %s", trail, r.message);
    return demand;
}

static unsigned walk_from(const snapshot_t *s, const char *metric, const char *key,
                          const char *value) {
    walk_step_t seen[5], start;
    memset(seen, 0, sizeof seen);
    memset(&start, 0, sizeof start);
    snprintf(start.metric, sizeof start.metric, "%s", metric);
    snprintf(start.key, sizeof start.key, "%s", key);
    snprintf(start.value, sizeof start.value, "%s", value);
    return walk_hints(s, start, seen, 0);
}

static void test_evaluator_a100_mig_hints_name_memory_and_demand_not_each_other(void **state) {
    (void)state;
    snapshot_t *s = a100_mig_node();
    /* make run's old query: every GPU's utilisation */
    trigger_config_t c = CFG0();
    expect_err(run(&c, s, T0), EVAL_FAILED_PRECONDITION,
               "GPU 0 (GPU-0000) on node node-a has no gpu_utilization value (NVML NOT_SUPPORTED)",
               "NVML has no utilisation under MIG, and NVIDIA A100-SXM4-80GB has no GPM (Hopper "
               "or newer): scale on memory per instance (metricType memory_used_percent, "
               "migProfile 3g.40gb) and on demand for activity (metricType demand with an engine "
               "or a queue); GPU 1 (MIG off) has gpu_utilization: gpuIndex 1");
    /* deploy/examples/mig.yaml's old trigger */
    c = CFG("profile", "mig-sm-active", "migProfile", "3g.40gb");
    eval_result_t r = run(&c, s, T0);
    expect_err(r, EVAL_FAILED_PRECONDITION,
               "MIG instance MIG-4e8a (3g.40gb) of GPU 0 on node node-a has no sm_active value",
               "GPM metrics need a Hopper or newer GPU; NVIDIA A100-SXM4-80GB has none, and "
               "without GPM NVML measures no activity per MIG instance: use metricType "
               "memory_used_percent (per instance) and, for activity, metricType demand with an "
               "engine or a queue");
    assert_null(strstr(r.message, "gpu_utilization")); /* the old hint, a dead end under MIG */
    c = CFG("metricType", "gpu_utilization", "migProfile", "3g.40gb");
    r = run(&c, s, T0);
    expect_err(r, EVAL_FAILED_PRECONDITION, "does not exist per MIG instance",
               "GPU 0 (NVIDIA A100-SXM4-80GB) has no GPM: use metricType memory_used_percent and, "
               "for activity, metricType demand with an engine or a queue");
    assert_null(strstr(r.message, "select whole GPUs"));
    /* the GPU without MIG: gpu_utilization is the way, and works */
    c = CFG("metricType", "sm_active", "gpuIndex", "1");
    expect_err(run(&c, s, T0), EVAL_FAILED_PRECONDITION, "GPU 1 (GPU-0001)",
               "GPM metrics need a Hopper or newer GPU; NVIDIA A100-SXM4-80GB has none: use "
               "metricType gpu_utilization");
    snapshot_unref(s);
}

static void test_evaluator_every_hint_leads_to_an_answer_without_a_circle(void **state) {
    (void)state;
    static const char *const starts[][3] = {
        {"gpu_utilization", "", ""},
        {"memory_utilization", "", ""},
        {"sm_active", "", ""},
        {"sm_occupancy", "gpuIndex", "0"},
        {"dram_bandwidth", "gpuIndex", "1"},
        {"sm_active", "migProfile", "3g.40gb"},
        {"sm_occupancy", "migUUID", "MIG-9b1f"},
        {"gpu_utilization", "migProfile", "3g.40gb"},
        {"memory_utilization", "migProfile", "1g.10gb"},
        {"gpu_utilization", "gpuIndex", "0"},
    };
    snapshot_t *s = a100_mig_node();
    unsigned demand = 0;
    for (size_t i = 0; i < sizeof starts / sizeof starts[0]; i++)
        demand += walk_from(s, starts[i][0], starts[i][1], starts[i][2]);
    snapshot_unref(s);
    assert_true(demand > 0);
    /* What "metricType demand with an engine or a queue" asks for is a valid trigger. */
    trigger_config_t c =
        CFG("metricType", "demand", "engine", "vllm", "vllmEndpoint", "http://vllm:8000/metrics");
    assert_int_equal(c.demand.type, DEMAND_COMPOSITE);
    c = CFG("metricType", "demand", "redisAddress", "redis:6379", "redisListName", "jobs");
    assert_int_equal(c.demand.type, DEMAND_COMPOSITE);

    /* The same walks on a GPU with GPM under MIG (Hopper) and on one whose GPM is unknown. */
    s = mig_node();
    for (size_t i = 0; i < sizeof starts / sizeof starts[0]; i++)
        if (strncmp(starts[i][2], "MIG-", 4) != 0)
            walk_from(s, starts[i][0], starts[i][1], starts[i][2]);
    snapshot_unref(s);
    s = a100_mig_node();
    s->gpus[0].field_error[GPU_F_SM_ACTIVE] = 0; /* GPM symbols missing: unknown */
    for (size_t i = 0; i < sizeof starts / sizeof starts[0]; i++)
        walk_from(s, starts[i][0], starts[i][1], starts[i][2]);
    snapshot_unref(s);
}

static void test_evaluator_mig_hint_with_unknown_gpm_offers_memory_first(void **state) {
    (void)state;
    snapshot_t *s = a100_mig_node();
    s->gpus[0].field_error[GPU_F_SM_ACTIVE] = 0; /* no GPM symbols, or one sample so far */
    for (unsigned k = 0; k < 3; k++)
        s->mig[k].field_error[GPU_F_SM_ACTIVE] = 0;
    trigger_config_t c = CFG("gpuIndex", "0");
    expect_err(run(&c, s, T0), EVAL_FAILED_PRECONDITION,
               "NVML has no utilisation under MIG: select MIG instances (migProfile 3g.40gb) with "
               "metricType memory_used_percent (any MIG GPU) or sm_active (GPM: Hopper or newer)",
               NULL);
    c = CFG("metricType", "sm_active", "migProfile", "2g.20gb");
    expect_err(run(&c, s, T0), EVAL_FAILED_PRECONDITION,
               "GPM metrics need a Hopper or newer GPU, a recent driver and two samples; before "
               "Hopper (A100, A30) NVML measures no activity per MIG instance: use metricType "
               "memory_used_percent (per instance)",
               NULL);
    snapshot_unref(s);
}

static void test_evaluator_rejects_a_non_finite_reading(void **state) {
    (void)state;
    snapshot_t *s = node(2, 0);
    s->gpus[1].power_w = NAN;
    trigger_config_t c = CFG("metricType", "power_draw");
    expect_err(run(&c, s, T0), EVAL_UNAVAILABLE, "non-finite", NULL);
    snapshot_unref(s);
}

static void test_evaluator_target_size_is_ceil_and_at_least_one(void **state) {
    (void)state;
    assert_int_equal(metric_target_size(80), 80);
    assert_int_equal(metric_target_size(79.2), 80);
    assert_int_equal(metric_target_size(0.5), 1);
    assert_int_equal(metric_target_size(0.001), 1);
    assert_int_equal(metric_target_size(0), 1);
    assert_int_equal(metric_target_size(-3), 1);
    assert_int_equal(metric_target_size(NAN), 1);
    assert_true(metric_target_size(1e300) == INT64_MAX);
}

static void test_evaluator_value_int_is_llround_clamped(void **state) {
    (void)state;
    assert_int_equal(metric_value_int(0), 0);
    assert_int_equal(metric_value_int(0.4), 0);
    assert_int_equal(metric_value_int(0.5), 1);
    assert_int_equal(metric_value_int(99.6), 100);
    assert_int_equal(metric_value_int(-2.5), -3);
    assert_int_equal(metric_value_int(NAN), 0);
    assert_true(metric_value_int(1e300) == INT64_MAX);
    assert_true(metric_value_int(INFINITY) == INT64_MAX);
    assert_true(metric_value_int(-1e300) == INT64_MIN);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_evaluator_sums_all_gpus_by_default),
        cmocka_unit_test(test_evaluator_applies_the_configured_aggregation),
        cmocka_unit_test(test_evaluator_is_active_only_above_the_threshold),
        cmocka_unit_test(test_evaluator_selects_one_gpu_by_index),
        cmocka_unit_test(test_evaluator_rejects_gpu_index_out_of_range),
        cmocka_unit_test(test_evaluator_selects_gpus_by_uuid),
        cmocka_unit_test(test_evaluator_reports_nvml_down_as_unavailable),
        cmocka_unit_test(test_evaluator_reports_a_stale_snapshot_as_unavailable),
        cmocka_unit_test(test_evaluator_reports_no_gpus_as_unavailable),
        cmocka_unit_test(test_evaluator_reports_a_missing_snapshot_or_config),
        cmocka_unit_test(test_evaluator_never_skips_a_lost_gpu),
        cmocka_unit_test(test_evaluator_reports_an_absent_field_with_the_gpu_and_field),
        cmocka_unit_test(test_evaluator_absent_field_of_an_amd_gpu_names_its_source),
        cmocka_unit_test(test_evaluator_hints_at_gpm_when_utilisation_is_absent_with_mig),
        cmocka_unit_test(test_evaluator_converts_each_metric_type_to_its_unit),
        cmocka_unit_test(test_evaluator_memory_percent_needs_a_nonzero_total),
        cmocka_unit_test(test_evaluator_selects_mig_instances_by_profile),
        cmocka_unit_test(test_evaluator_selects_mig_instances_by_uuid),
        cmocka_unit_test(test_evaluator_reports_unmatched_mig_selection_with_what_exists),
        cmocka_unit_test(test_evaluator_rejects_gpu_only_metrics_on_mig_instances),
        cmocka_unit_test(test_evaluator_reports_an_absent_mig_field),
        cmocka_unit_test(test_evaluator_reports_the_unhealthy_parent_of_a_mig_instance),
        cmocka_unit_test(test_evaluator_a100_mig_hints_name_memory_and_demand_not_each_other),
        cmocka_unit_test(test_evaluator_every_hint_leads_to_an_answer_without_a_circle),
        cmocka_unit_test(test_evaluator_mig_hint_with_unknown_gpm_offers_memory_first),
        cmocka_unit_test(test_evaluator_rejects_a_non_finite_reading),
        cmocka_unit_test(test_evaluator_target_size_is_ceil_and_at_least_one),
        cmocka_unit_test(test_evaluator_value_int_is_llround_clamped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
