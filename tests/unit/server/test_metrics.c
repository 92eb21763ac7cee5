/* test_metrics.c - the keda_gpu_scaler_* exposition: names kept from the Go
 * system, absent fields give no sample, series follow the latest snapshot,
 * counters really count, and promtool accepts the output. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "server/metrics.h"
#include "support/test_support.h"

#define SEC UINT64_C(1000000000)
#define NS "keda_gpu_scaler_"

/* Two GPUs: GPU 0 fully populated with MIG off, GPU 1 a MIG parent with
 * few fields and two instances; one instance without GPM values. */
static snapshot_t *make_snapshot(uint64_t seq) {
    snapshot_t *s = snapshot_new(2, 2);
    assert_non_null(s);
    s->seq = seq;
    s->taken_mono = 100 * SEC;
    s->sample_duration_ns = 1500000; /* 1.5 ms */
    s->status = SNAPSHOT_OK;
    snprintf(s->driver_version, sizeof s->driver_version, "560.35.03");
    snprintf(s->node_name, sizeof s->node_name, "node-from-snapshot");
    s->gpu_count = 2;

    gpu_record_t *g = &s->gpus[0];
    g->index = 0;
    snprintf(g->uuid, sizeof g->uuid, "GPU-aaaa");
    snprintf(g->name, sizeof g->name, "NVIDIA H100 80GB \"HBM3\"");
    g->gpu_util_pct = 37;
    ts_set_field(g, GPU_F_GPU_UTIL);
    g->mem_util_pct = 12;
    ts_set_field(g, GPU_F_MEM_UTIL);
    g->memory_used_bytes = UINT64_C(21474836480);
    ts_set_field(g, GPU_F_MEM_USED);
    g->memory_total_bytes = UINT64_C(85520809984);
    ts_set_field(g, GPU_F_MEM_TOTAL);
    g->temperature_c = 51;
    ts_set_field(g, GPU_F_TEMPERATURE);
    g->power_w = 312.5;
    ts_set_field(g, GPU_F_POWER);
    g->power_limit_w = 700;
    ts_set_field(g, GPU_F_POWER_LIMIT);
    g->pcie_tx_bytes_per_s = 1200 * 1024;
    ts_set_field(g, GPU_F_PCIE_TX);
    g->pcie_rx_bytes_per_s = 800 * 1024;
    ts_set_field(g, GPU_F_PCIE_RX);
    g->nvlink_tx_bytes_per_s = 3 * 1048576.0;
    ts_set_field(g, GPU_F_NVLINK_TX);
    g->nvlink_rx_bytes_per_s = 0.5 * 1048576.0;
    ts_set_field(g, GPU_F_NVLINK_RX);
    g->sm_active_pct = 30.5;
    ts_set_field(g, GPU_F_SM_ACTIVE);
    g->sm_occupancy_pct = 20.25;
    ts_set_field(g, GPU_F_SM_OCCUPANCY);
    g->dram_bw_util_pct = 10;
    ts_set_field(g, GPU_F_DRAM_BW_UTIL);

    g = &s->gpus[1];
    g->index = 1;
    snprintf(g->uuid, sizeof g->uuid, "GPU-bbbb");
    snprintf(g->name, sizeof g->name, "NVIDIA A100-SXM4-80GB");
    g->gpu_util_pct = 0; /* a real 0 is exported */
    ts_set_field(g, GPU_F_GPU_UTIL);
    g->health = GPU_HEALTH_OK;
    g->mig_enabled = true;
    g->mig_first = 0;
    g->mig_count = 2;

    s->mig_total = 2;
    mig_record_t *m = &s->mig[0];
    m->parent_index = 1;
    snprintf(m->uuid, sizeof m->uuid, "MIG-1111");
    snprintf(m->profile, sizeof m->profile, "3g.40gb");
    m->gpu_instance_id = 1;
    m->ids_valid = true;
    m->memory_used_bytes = 1024;
    m->valid |= 1u << GPU_F_MEM_USED;
    m->memory_total_bytes = UINT64_C(42949672960);
    m->valid |= 1u << GPU_F_MEM_TOTAL;
    m->sm_active_pct = 55;
    m->valid |= 1u << GPU_F_SM_ACTIVE;
    m = &s->mig[1];
    m->parent_index = 1;
    snprintf(m->uuid, sizeof m->uuid, "MIG-2222");
    snprintf(m->profile, sizeof m->profile, "4g.40gb");
    m->gpu_instance_id = 2;
    m->ids_valid = true;
    m->memory_total_bytes = UINT64_C(42949672960);
    m->valid |= 1u << GPU_F_MEM_TOTAL;
    return s;
}

static metrics_context_t ctx_default(void) {
    return (metrics_context_t){.node = "gpu-node-1",
                               .version = "0.1.0",
                               .commit = "abc123",
                               .now = 102 * SEC + 500000000,
                               .stale_after_ns = 3 * SEC,
                               .sampler_overruns = 4,
                               .streams_open = 2,
                               .connections_open = 1,
                               .ready = true};
}

static char *render(const snapshot_t *s, const server_stats_t *st, const metrics_context_t *c) {
    prom_buf_t b;
    prom_buf_init(&b);
    metrics_render(&b, s, st, c);
    assert_false(b.failed);
    assert_non_null(b.data);
    char *copy = strdup(b.data);
    prom_buf_free(&b);
    return copy;
}

static void expect_line(const char *text, const char *line) {
    char want[1024];
    snprintf(want, sizeof want, "\n%s\n", line);
    if (!strstr(text, want))
        fail_msg("missing line: %s\n--- exposition ---\n%s", line, text);
}

static void expect_no(const char *text, const char *needle) {
    if (strstr(text, needle))
        fail_msg("unexpected \"%s\" in exposition:\n%s", needle, text);
}

#define GPU0                                                                                       \
    "gpu_index=\"0\",gpu_uuid=\"GPU-aaaa\",gpu_name=\"NVIDIA H100 80GB "                           \
    "\\\"HBM3\\\"\",node=\"gpu-node-1\""
#define GPU1                                                                                       \
    "gpu_index=\"1\",gpu_uuid=\"GPU-bbbb\",gpu_name=\"NVIDIA A100-SXM4-80GB\",node=\"gpu-node-1\""

static void test_metrics_gpu_gauges_keep_the_go_names_with_a_node_label(void **state) {
    (void)state;
    snapshot_t *s = make_snapshot(1);
    server_stats_t st;
    server_stats_init(&st);
    metrics_context_t c = ctx_default();
    char *t = render(s, &st, &c);
    expect_line(t, NS "gpu_utilization_percent{" GPU0 "} 37");
    expect_line(t, NS "gpu_utilization_percent{" GPU1 "} 0");
    expect_line(t, NS "gpu_memory_used_bytes{" GPU0 "} 21474836480");
    expect_line(t, NS "gpu_memory_total_bytes{" GPU0 "} 85520809984");
    expect_line(t, NS "gpu_temperature_celsius{" GPU0 "} 51");
    expect_line(t, NS "gpu_power_draw_watts{" GPU0 "} 312.5");
    expect_line(t, NS "gpu_pcie_throughput_kbps{" GPU0 ",direction=\"tx\"} 1200");
    expect_line(t, NS "gpu_pcie_throughput_kbps{" GPU0 ",direction=\"rx\"} 800");
    expect_line(t, NS "gpu_nvlink_throughput_mbps{" GPU0 ",direction=\"tx\"} 3");
    expect_line(t, NS "gpu_nvlink_throughput_mbps{" GPU0 ",direction=\"rx\"} 0.5");
    expect_line(t, "# TYPE " NS "gpu_utilization_percent gauge");
    free(t);
    snapshot_unref(s);
}

static void test_metrics_new_gpu_gauges(void **state) {
    (void)state;
    snapshot_t *s = make_snapshot(1);
    server_stats_t st;
    server_stats_init(&st);
    metrics_context_t c = ctx_default();
    char *t = render(s, &st, &c);
    expect_line(t, NS "gpu_memory_utilization_percent{" GPU0 "} 12");
    expect_line(t, NS "gpu_power_limit_watts{" GPU0 "} 700");
    expect_line(t, NS "gpu_sm_active_percent{" GPU0 "} 30.5");
    expect_line(t, NS "gpu_sm_occupancy_percent{" GPU0 "} 20.25");
    expect_line(t, NS "gpu_dram_bandwidth_utilization_percent{" GPU0 "} 10");
    expect_line(t, NS "gpu_health{" GPU0 ",state=\"ok\"} 1");
    expect_line(t, NS "gpu_health{" GPU0 ",state=\"lost\"} 0");
    expect_line(t, NS "gpu_health{" GPU0 ",state=\"reset_required\"} 0");
    expect_line(t, NS "gpu_health{" GPU0 ",state=\"error\"} 0");
    expect_line(t, NS "gpu_devices 2");
    expect_line(t, NS "nvml_up 1");
    expect_line(t, NS "nvml_driver_info{driver_version=\"560.35.03\",node=\"gpu-node-1\"} 1");
    free(t);
    snapshot_unref(s);
}

static void test_metrics_absent_fields_give_no_sample(void **state) {
    (void)state;
    snapshot_t *s = make_snapshot(1);
    server_stats_t st;
    server_stats_init(&st);
    metrics_context_t c = ctx_default();
    char *t = render(s, &st, &c);
    /* GPU 1 has only utilisation. */
    expect_no(t, NS "gpu_memory_used_bytes{" GPU1);
    expect_no(t, NS "gpu_temperature_celsius{" GPU1);
    expect_no(t, NS "gpu_pcie_throughput_kbps{" GPU1);
    free(t);
    /* No GPU has a temperature: the family disappears, header included. */
    s->gpus[0].valid &= ~(1u << GPU_F_TEMPERATURE);
    t = render(s, &st, &c);
    expect_no(t, "gpu_temperature_celsius");
    free(t);
    snapshot_unref(s);
}

static void test_metrics_mig_instances_have_their_own_series(void **state) {
    (void)state;
    snapshot_t *s = make_snapshot(1);
    server_stats_t st;
    server_stats_init(&st);
    metrics_context_t c = ctx_default();
    char *t = render(s, &st, &c);
    expect_line(t, NS
                "mig_memory_used_bytes{gpu_index=\"1\",gpu_uuid=\"GPU-bbbb\",mig_uuid=\"MIG-"
                "1111\",mig_profile=\"3g.40gb\",gpu_instance_id=\"1\",node=\"gpu-node-1\"} 1024");
    expect_line(t, NS "mig_memory_total_bytes{gpu_index=\"1\",gpu_uuid=\"GPU-bbbb\",mig_uuid=\"MIG-"
                      "2222\",mig_profile=\"4g.40gb\",gpu_instance_id=\"2\",node=\"gpu-node-1\"} "
                      "42949672960");
    expect_line(t,
                NS "mig_sm_active_percent{gpu_index=\"1\",gpu_uuid=\"GPU-bbbb\",mig_uuid=\"MIG-"
                   "1111\",mig_profile=\"3g.40gb\",gpu_instance_id=\"1\",node=\"gpu-node-1\"} 55");
    expect_no(t, "mig_uuid=\"MIG-2222\",mig_profile=\"4g.40gb\",gpu_instance_id=\"2\",node=\"gpu-"
                 "node-1\"} 0");
    expect_no(t, "mig_dram_bandwidth");
    free(t);
    snapshot_unref(s);
}

static void test_metrics_series_follow_the_latest_snapshot(void **state) {
    (void)state;
    snapshot_t *s = make_snapshot(1);
    server_stats_t st;
    server_stats_init(&st);
    metrics_context_t c = ctx_default();
    char *t = render(s, &st, &c);
    expect_line(t, NS "gpu_utilization_percent{" GPU1 "} 0");
    free(t);
    /* GPU 1 removed: its series vanish; nothing is remembered. */
    s->gpu_count = 1;
    s->mig_total = 0;
    t = render(s, &st, &c);
    expect_no(t, "GPU-bbbb");
    expect_no(t, "mig_");
    expect_line(t, NS "gpu_devices 1");
    free(t);
    snapshot_unref(s);
}

static void test_metrics_lost_gpu_shows_in_health(void **state) {
    (void)state;
    snapshot_t *s = make_snapshot(1);
    s->gpus[1].health = GPU_HEALTH_LOST;
    s->gpus[1].valid = 0;
    server_stats_t st;
    server_stats_init(&st);
    metrics_context_t c = ctx_default();
    char *t = render(s, &st, &c);
    expect_line(t, NS "gpu_health{" GPU1 ",state=\"ok\"} 0");
    expect_line(t, NS "gpu_health{" GPU1 ",state=\"lost\"} 1");
    expect_no(t, NS "gpu_utilization_percent{" GPU1);
    free(t);
    snapshot_unref(s);
}

static void test_metrics_before_first_snapshot(void **state) {
    (void)state;
    server_stats_t st;
    server_stats_init(&st);
    metrics_context_t c = ctx_default();
    c.ready = false;
    c.node = NULL;
    char *t = render(NULL, &st, &c);
    expect_line(t, NS "nvml_up 0");
    expect_line(t, NS "ready 0");
    expect_line(t, NS "collections_total 0");
    expect_no(t, "gpu_devices");
    expect_no(t, "snapshot_age_seconds");
    expect_no(t, "gpu_utilization");
    free(t);
}

/* The aggregator reads no NVML: no family may claim a sweep (nvml_up 0
 * would read as "NVML down" on a Deployment that has no GPU). */
static void test_metrics_aggregator_exports_no_nvml_families(void **state) {
    (void)state;
    server_stats_t st;
    server_stats_init(&st);
    metrics_context_t c = ctx_default();
    c.no_nvml = true;
    char *t = render(NULL, &st, &c);
    expect_line(t, NS "ready 1");
    expect_no(t, "nvml");
    expect_no(t, "collection");
    expect_no(t, "sampler_overruns");
    expect_no(t, "sample_duration");
    expect_line(t, NS "snapshot_stale_after_seconds 3"); /* the agents' snapshots */
    free(t);
}

static void test_metrics_nvml_down(void **state) {
    (void)state;
    snapshot_t *s = snapshot_new(0, 0);
    s->seq = 3;
    s->status = SNAPSHOT_NVML_DOWN;
    s->taken_mono = 100 * SEC;
    server_stats_t st;
    server_stats_init(&st);
    server_stats_record_snapshot(&st, s);
    metrics_context_t c = ctx_default();
    char *t = render(s, &st, &c);
    expect_line(t, NS "nvml_up 0");
    expect_line(t, NS "collections_total 1");
    expect_line(t, NS "collection_errors_total 1");
    expect_line(t, NS "snapshot_age_seconds 2.5");
    expect_no(t, "gpu_devices");
    expect_no(t, "nvml_driver_info");
    free(t);
    snapshot_unref(s);
}

static void test_metrics_server_gauges_and_build_info(void **state) {
    (void)state;
    snapshot_t *s = make_snapshot(1);
    server_stats_t st;
    server_stats_init(&st);
    metrics_context_t c = ctx_default();
    c.node = NULL; /* falls back to the snapshot's node */
    char *t = render(s, &st, &c);
    expect_line(t, NS "build_info{version=\"0.1.0\",commit=\"abc123\"} 1");
    expect_line(t, NS "ready 1");
    expect_line(t, NS "snapshot_age_seconds 2.5");
    expect_line(t, NS "sample_duration_seconds 0.0015");
    expect_line(t, NS "snapshot_stale_after_seconds 3");
    expect_line(t, NS "sampler_overruns_total 4");
    expect_line(t, NS "grpc_streams_open 2");
    expect_line(t, NS "grpc_connections_open 1");
    assert_non_null(strstr(t, "node=\"node-from-snapshot\""));
    expect_no(t, "source_polls_total"); /* no sources (agent role) */
    free(t);
    c.has_sources = true;
    c.sources = 3;
    c.source_polls = 120;
    c.source_failures = 7;
    c.source_bytes = 65536;
    t = render(s, &st, &c);
    expect_line(t, NS "sources 3");
    expect_line(t, NS "source_polls_total 120");
    expect_line(t, NS "source_poll_failures_total 7");
    expect_line(t, NS "source_response_bytes_total 65536");
    free(t);
    c.has_sources = false;
    c.version = NULL;
    c.commit = NULL;
    t = render(s, &st, &c);
    expect_line(t, NS "build_info{version=\"unknown\",commit=\"unknown\"} 1");
    expect_no(t, "gpu_backend_info"); /* no backend named */
    free(t);
    c.gpu_backend = "amdgpu-sysfs";
    t = render(s, &st, &c);
    expect_line(t, NS "gpu_backend_info{backend=\"amdgpu-sysfs\",node=\"node-from-snapshot\"} 1");
    free(t);
    snapshot_unref(s);
}

static void test_metrics_budgets_count_refusals_by_flag(void **state) {
    (void)state;
    snapshot_t *s = make_snapshot(1);
    server_stats_t st;
    server_stats_init(&st);
    metrics_context_t c = ctx_default();
    char *t = render(s, &st, &c);
    expect_no(t, "limit_refusals_total"); /* not given: not exported */
    free(t);
    c.has_budgets = true;
    c.requests_too_large = 3;
    c.budgets.refused_metadata_entries = 4;
    c.budgets.refused_metadata_bytes = 5;
    c.budgets.refused_stream_bytes = 9418;
    c.budgets.refused_streams_total = 7;
    c.budgets.cache_bytes = 16777216;
    c.budgets.cache_entries = 600;
    c.budgets.cache_evictions = 12;
    c.budgets.stream_bytes = 4096;
    t = render(s, &st, &c);
    expect_line(t, NS "limit_refusals_total{limit=\"max-request-bytes\"} 3");
    expect_line(t, NS "limit_refusals_total{limit=\"max-metadata-entries\"} 4");
    expect_line(t, NS "limit_refusals_total{limit=\"max-metadata-bytes\"} 5");
    expect_line(t, NS "limit_refusals_total{limit=\"max-stream-bytes\"} 9418");
    expect_line(t, NS "limit_refusals_total{limit=\"config-cache-bytes\"} 7");
    expect_line(t, NS "config_cache_bytes 16777216");
    expect_line(t, NS "config_cache_entries 600");
    expect_line(t, NS "config_cache_evictions_total 12");
    expect_line(t, NS "stream_pinned_bytes 4096");
    free(t);
    snapshot_unref(s);
}

static void test_metrics_rpc_counters_really_count(void **state) {
    (void)state;
    server_stats_t st;
    server_stats_init(&st);
    server_stats_record_rpc(&st, RPC_GET_METRICS, 0, 0.00004); /* first bucket */
    server_stats_record_rpc(&st, RPC_GET_METRICS, 0, 0.0003);  /* le=0.0005 */
    server_stats_record_rpc(&st, RPC_GET_METRICS, 14, 0.002);  /* UNAVAILABLE */
    server_stats_record_rpc(&st, RPC_IS_ACTIVE, 3, 0.00001);   /* INVALID_ARGUMENT */
    server_stats_record_rpc(&st, (rpc_method_t)99, 12, -1.0);  /* -> Other, 0 s */
    metrics_context_t c = ctx_default();
    char *t = render(NULL, &st, &c);
    expect_line(t, NS "scaler_requests_total{method=\"GetMetrics\"} 3");
    expect_line(t, NS "scaler_request_errors_total{method=\"GetMetrics\"} 1");
    expect_line(t, NS "scaler_requests_total{method=\"IsActive\"} 1");
    expect_line(t, NS "scaler_request_errors_total{method=\"IsActive\"} 1");
    expect_line(t, NS "scaler_requests_total{method=\"StreamIsActive\"} 0");
    expect_line(t, NS "scaler_requests_total{method=\"Other\"} 1");
    expect_line(t,
                NS "scaler_request_duration_seconds_bucket{method=\"GetMetrics\",le=\"5e-05\"} 1");
    expect_line(t,
                NS "scaler_request_duration_seconds_bucket{method=\"GetMetrics\",le=\"0.0005\"} 2");
    expect_line(t,
                NS "scaler_request_duration_seconds_bucket{method=\"GetMetrics\",le=\"0.0025\"} 3");
    expect_line(t,
                NS "scaler_request_duration_seconds_bucket{method=\"GetMetrics\",le=\"+Inf\"} 3");
    expect_line(t, NS "scaler_request_duration_seconds_count{method=\"GetMetrics\"} 3");
    expect_line(t, NS "scaler_request_duration_seconds_bucket{method=\"Other\",le=\"5e-05\"} 1");
    expect_line(t, "# TYPE " NS "scaler_request_duration_seconds histogram");
    free(t);
    assert_string_equal(rpc_method_name(RPC_HEALTH_WATCH), "HealthWatch");
    assert_string_equal(rpc_method_name(RPC_STREAM_METRIC_SPEC), "StreamMetricSpec");
    assert_string_equal(rpc_method_name((rpc_method_t)-1), "Other");
}

static void test_metrics_snapshot_counted_once_per_seq(void **state) {
    (void)state;
    server_stats_t st;
    server_stats_init(&st);
    snapshot_t *a = make_snapshot(7), *b = make_snapshot(8);
    server_stats_record_snapshot(&st, a);
    server_stats_record_snapshot(&st, a);
    server_stats_record_snapshot(&st, NULL);
    server_stats_record_snapshot(&st, b);
    assert_int_equal(st.collections, 2);
    assert_int_equal(st.collection_errors, 0);
    metrics_context_t c = ctx_default();
    char *t = render(b, &st, &c);
    expect_line(t, NS "collection_duration_seconds_bucket{le=\"0.001\"} 0");
    expect_line(t, NS "collection_duration_seconds_bucket{le=\"0.0025\"} 2");
    expect_line(t, NS "collection_duration_seconds_count 2");
    expect_line(t, NS "collection_duration_seconds_sum 0.003");
    free(t);
    snapshot_unref(a);
    snapshot_unref(b);
}

/* Pipes the exposition to `promtool check metrics`; returns its exit status
 * and output in out. */
static int promtool_check(const char *text, char *out, size_t outlen) {
    char path[] = "/tmp/kgs-metrics-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    size_t len = strlen(text);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    close(fd);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "promtool check metrics < %s 2>&1", path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, outlen - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    unlink(path);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_metrics_output_passes_promtool(void **state) {
    (void)state;
    if (access("/usr/bin/promtool", X_OK) != 0 && system("command -v promtool >/dev/null 2>&1")) {
        print_message("SKIP: promtool not installed (Debian: apt-get install prometheus)\n");
        skip();
    }
    snapshot_t *s = make_snapshot(1);
    s->gpus[1].health = GPU_HEALTH_RESET_REQUIRED;
    server_stats_t st;
    server_stats_init(&st);
    server_stats_record_snapshot(&st, s);
    for (int m = 0; m < RPC_METHOD_COUNT; m++)
        server_stats_record_rpc(&st, (rpc_method_t)m, m % 2 ? 14 : 0, 0.0001 * (m + 1));
    metrics_context_t c = ctx_default();
    c.has_budgets = true;
    c.budgets.refused_stream_bytes = 2;
    const snapshot_t *cases[] = {s, NULL};
    for (size_t i = 0; i < 2; i++) {
        char *t = render(cases[i], &st, &c);
        char out[8192];
        int rc = promtool_check(t, out, sizeof out);
        if (rc != 0 || out[0])
            fail_msg("promtool check metrics: exit %d:\n%s\n--- exposition ---\n%s", rc, out, t);
        free(t);
    }
    snapshot_unref(s);
}

/* ---- each demand trigger's decision ------------------------------------------- */

static demand_source_t engine_reading(const char *name, double waiting, double running, double kv) {
    demand_source_t v;
    memset(&v, 0, sizeof v);
    v.state = DEMAND_SOURCE_READING;
    v.name = name;
    v.last_ok = 100 * NS_PER_SEC;
    v.interval_ns = NS_PER_SEC;
    v.timeout_ns = 2 * NS_PER_SEC;
    v.reading.has_waiting = v.reading.has_running = v.reading.has_kv = true;
    v.reading.waiting = waiting;
    v.reading.running = running;
    v.reading.kv_percent = kv;
    return v;
}

/* Two triggers evaluated the way the scaler does: a composite deciding on
 * its KV cache (3 pods at 90 %: 270 / 70 = 3.86 replicas, above the queue's
 * 12 / 5 = 2.4), and one whose engine is down with work queued (an error,
 * yet active). */
static void test_metrics_trigger_decisions(void **state) {
    (void)state;
    trigger_config_t a = CFG("metricType", "demand", "engine", "vllm", "vllmEndpoint",
                             "http://a/m,http://b/m,http://c/m", "targetQueuePerReplica", "5",
                             "targetKvCache", "70", "metricName", "llama");
    demand_source_t va[3] = {engine_reading("a", 4, 3, 90), engine_reading("b", 4, 3, 90),
                             engine_reading("c", 4, 3, 90)};
    demand_view_t view_a, view_b;
    demand_view_init(&view_a);
    demand_view_init(&view_b);
    demand_inputs_t in;
    demand_learned_t learned = {NULL, NULL, NULL};
    memset(&in, 0, sizeof in);
    in.engines = va;
    in.nengines = 3;
    learned.view = &view_a;
    eval_result_t r;
    demand_evaluate_inputs(&a, &in, &learned, 100 * NS_PER_SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_OK);
    trigger_config_t b =
        CFG("metricType", "demand", "engine", "vllm", "vllmEndpoint", "http://d/m",
            "targetQueuePerReplica", "5", "redisAddress", "r:6379", "redisListName", "q");
    demand_source_t vb = engine_reading("d", 0, 5, 0);
    vb.state = DEMAND_SOURCE_FAILED;
    vb.error = "HTTP 404 (want 200)";
    memset(&in, 0, sizeof in);
    in.engines = &vb;
    in.nengines = 1;
    in.has_queue_source = true;
    in.queue.state = DEMAND_SOURCE_READING;
    in.queue.name = "queue";
    in.queue.last_ok = 100 * NS_PER_SEC;
    in.queue.interval_ns = NS_PER_SEC;
    in.queue.queue = 7;
    learned.view = &view_b;
    demand_evaluate_inputs(&b, &in, &learned, 100 * NS_PER_SEC, NULL, &r);
    assert_int_equal(r.status, EVAL_UNAVAILABLE);
    assert_true(r.wake);
    demand_view_ref_t refs[2] = {{"ml", "llama", "llama", &view_a},
                                 {"ml", "qwen", "keda_gpu_metric", &view_b}};
    metrics_context_t c = ctx_default();
    c.has_sources = true;
    c.triggers = refs;
    c.ntriggers = 2;
    c.triggers_omitted = 3;
    server_stats_t st;
    server_stats_init(&st);
    char *t = render(NULL, &st, &c);
#define L_A "{scaledobject_namespace=\"ml\",scaledobject=\"llama\",metric=\"llama\""
#define L_B "{scaledobject_namespace=\"ml\",scaledobject=\"qwen\",metric=\"keda_gpu_metric\""
    expect_line(t, NS "triggers_omitted 3");
    expect_line(t, NS "trigger_up" L_A "} 1");
    expect_line(t, NS "trigger_up" L_B "} 0");
    expect_line(t, NS "trigger_value" L_A "} 385.7142857142857");
    assert_null(strstr(t, NS "trigger_value" L_B));
    expect_line(t, NS "trigger_active" L_A "} 1");
    expect_line(t, NS "trigger_active" L_B "} 1"); /* the queue speaks */
    expect_line(t, NS "trigger_signal" L_A ",signal=\"kv_cache\"} 270");
    expect_line(t, NS "trigger_signal" L_A ",signal=\"queue\"} 12");
    expect_line(t, NS "trigger_signal_replicas" L_A ",signal=\"queue\"} 2.4");
    expect_line(t, NS "trigger_signal_replicas" L_A ",signal=\"kv_cache\"} 3.857142857142857");
    expect_line(t, NS "trigger_decided_by" L_A ",signal=\"kv_cache\"} 1");
    assert_null(strstr(t, NS "trigger_decided_by" L_B));
    expect_line(t, NS "trigger_engines" L_A ",state=\"answering\"} 3");
    expect_line(t, NS "trigger_engines" L_B ",state=\"failing\"} 1");
#undef L_A
#undef L_B
    if (access("/usr/bin/promtool", X_OK) == 0 || !system("command -v promtool >/dev/null 2>&1")) {
        char out[8192];
        int rc = promtool_check(t, out, sizeof out);
        if (rc != 0 || out[0])
            fail_msg("promtool check metrics: exit %d:\n%s\n--- exposition ---\n%s", rc, out, t);
    }
    free(t);
    demand_view_free(&view_a);
    demand_view_free(&view_b);
}

/* ---- cold starts (issue 33) ---------------------------------------------------- */

/* Issue 33's example start (node 61 s, image 38 s, weights 29 s) and two
 * failed starts, as the aggregator's record of one workload shows them. */
static void test_metrics_cold_start_stages_and_failures(void **state) {
    (void)state;
    cold_start_book_t book;
    cold_start_book_init(&book);
    cold_start_workload_t *w = cold_start_book_get(&book, "inference", "app=vllm", 1);
    assert_non_null(w);
    pod_t p;
    memset(&p, 0, sizeof p);
    p.uid = "u-1";
    p.phase = POD_PHASE_RUNNING;
    p.ready = true;
    p.created_unix = 1795946400;
    p.start.scheduled_unix = p.created_unix + 61;
    p.start.running_unix = p.start.scheduled_unix + 38;
    p.start.ready_unix = p.start.running_unix + 29;
    pod_t q = p, r = p;
    q.uid = "u-2";
    q.ready = false;
    q.start.trouble = POD_TROUBLE_IMAGE_PULL_BACKOFF;
    r.uid = "u-3";
    r.ready = false;
    r.start.trouble = POD_TROUBLE_UNSCHEDULABLE;
    cold_start_round_begin(&w->rec);
    cold_start_round_pod(&w->rec, &p);
    cold_start_round_pod(&w->rec, &q);
    cold_start_round_pod(&w->rec, &r);
    assert_int_equal(cold_start_round_end(&w->rec), 0);
    metrics_context_t c = ctx_default();
    c.cold_starts = &book;
    server_stats_t st;
    server_stats_init(&st);
    char *t = render(NULL, &st, &c);
#define L "{pod_namespace=\"inference\",pod_selector=\"app=vllm\""
    expect_line(t, NS "cold_start_stage_seconds_bucket" L ",stage=\"node\",le=\"60\"} 0");
    expect_line(t, NS "cold_start_stage_seconds_bucket" L ",stage=\"node\",le=\"90\"} 1");
    expect_line(t, NS "cold_start_stage_seconds_bucket" L ",stage=\"image\",le=\"45\"} 1");
    expect_line(t, NS "cold_start_stage_seconds_bucket" L ",stage=\"weights\",le=\"30\"} 1");
    expect_line(t, NS "cold_start_stage_seconds_bucket" L ",stage=\"weights\",le=\"+Inf\"} 1");
    expect_line(t, NS "cold_start_stage_seconds_sum" L ",stage=\"node\"} 61");
    expect_line(t, NS "cold_start_stage_seconds_count" L ",stage=\"image\"} 1");
    expect_line(t, NS "cold_start_failures_total" L ",reason=\"ImagePullBackOff\"} 1");
    expect_line(t, NS "cold_start_failures_total" L ",reason=\"CrashLoopBackOff\"} 0");
    expect_line(t, NS "cold_start_failures_total" L ",reason=\"other\"} 0");
    expect_line(t, NS "cold_start_waiting_for_node" L "} 1");
#undef L
    if (access("/usr/bin/promtool", X_OK) == 0 || !system("command -v promtool >/dev/null 2>&1")) {
        char out[8192];
        int rc = promtool_check(t, out, sizeof out);
        if (rc != 0 || out[0])
            fail_msg("promtool check metrics: exit %d:\n%s\n--- exposition ---\n%s", rc, out, t);
    }
    free(t);
    /* no workload, no family */
    cold_start_book_deinit(&book);
    t = render(NULL, &st, &c);
    assert_null(strstr(t, "cold_start"));
    free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metrics_cold_start_stages_and_failures),
        cmocka_unit_test(test_metrics_gpu_gauges_keep_the_go_names_with_a_node_label),
        cmocka_unit_test(test_metrics_new_gpu_gauges),
        cmocka_unit_test(test_metrics_absent_fields_give_no_sample),
        cmocka_unit_test(test_metrics_mig_instances_have_their_own_series),
        cmocka_unit_test(test_metrics_series_follow_the_latest_snapshot),
        cmocka_unit_test(test_metrics_lost_gpu_shows_in_health),
        cmocka_unit_test(test_metrics_before_first_snapshot),
        cmocka_unit_test(test_metrics_nvml_down),
        cmocka_unit_test(test_metrics_server_gauges_and_build_info),
        cmocka_unit_test(test_metrics_budgets_count_refusals_by_flag),
        cmocka_unit_test(test_metrics_rpc_counters_really_count),
        cmocka_unit_test(test_metrics_snapshot_counted_once_per_seq),
        cmocka_unit_test(test_metrics_output_passes_promtool),
        cmocka_unit_test(test_metrics_aggregator_exports_no_nvml_families),
        cmocka_unit_test(test_metrics_trigger_decisions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
