/*
 * The sampler thread with the real loader against the NVML stand-in
 * (NVML_SIM_LIBRARY): a slow NVML call must never delay a snapshot reader,
 * and an overrunning sweep skips ticks instead of queueing them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/snapshot.h"
#include "nvml/collector.h"
#include "nvml/loader.h"
#include "gpu/sampler.h"

static char scenario_path[256];

static void write_scenario(const char *latency_json) {
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s.tmp", scenario_path);
    FILE *f = fopen(tmp, "w");
    assert_non_null(f);
    fprintf(f,
            "{\"driver_version\": \"560.35.03\", \"devices\": [{"
            "\"uuid\": \"GPU-11111111-2222-3333-4444-555555555555\","
            "\"name\": \"NVIDIA H100 80GB HBM3\", \"pci_bus_id\": \"00000000:17:00.0\","
            "\"memory_total_bytes\": 85520809984, \"power_limit_mw\": 700000,"
            "\"values\": {\"gpu_util\": 37, \"mem_util\": 5, \"memory_used_bytes\": 1073741824,"
            " \"power_mw\": 312000, \"temperature_c\": 51},"
            "\"latency_ms\": {%s}}]}",
            latency_json);
    fclose(f);
    assert_int_equal(rename(tmp, scenario_path), 0);
}

static mono_ns_t now_ns(void) {
    return clock_mono_now();
}

static void sleep_ms(unsigned ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

typedef struct {
    nvml_loader_t *loader;
    sampler_t *sampler;
} fixture_t;

static int setup(void **state) {
    const char *lib = getenv("NVML_SIM_LIBRARY");
    assert_non_null(lib);
    snprintf(scenario_path, sizeof scenario_path, "/tmp/kgs-test-sampler-%d.json", (int)getpid());
    write_scenario("");
    setenv("NVML_SIM_SCENARIO", scenario_path, 1);
    fixture_t *fx = calloc(1, sizeof *fx);
    char err[512];
    assert_int_equal(nvml_loader_open(lib, &fx->loader, err, sizeof err), 0);
    *state = fx;
    return 0;
}

static int teardown(void **state) {
    fixture_t *fx = *state;
    sampler_stop(fx->sampler);
    nvml_loader_free(fx->loader);
    free(fx);
    unlink(scenario_path);
    return 0;
}

static void start(fixture_t *fx, uint64_t interval_ns) {
    nvml_collector_t *c;
    assert_int_equal(nvml_collector_new(nvml_loader_api(fx->loader), NULL, "sim-node", &c), 0);
    sampler_opts_t o = {.interval_ns = interval_ns};
    char err[256];
    assert_int_equal(sampler_start(nvml_collector_backend(c), &o, &fx->sampler, err, sizeof err),
                     0);
}

static void test_sampler_publishes_snapshots_from_the_real_loader(void **state) {
    fixture_t *fx = *state;
    start(fx, 100 * NS_PER_MS);
    snapshot_t *s = sampler_wait_newer(fx->sampler, 0, 5 * NS_PER_SEC);
    assert_non_null(s);
    assert_int_equal(s->status, SNAPSHOT_OK);
    assert_int_equal(s->gpu_count, 1);
    assert_int_equal(s->gpus[0].gpu_util_pct, 37);
    assert_float_equal(s->gpus[0].power_w, 312.0, 1e-9);
    assert_string_equal(s->driver_version, "560.35.03");
    uint64_t seq = s->seq;
    snapshot_unref(s);
    s = sampler_wait_newer(fx->sampler, seq, 5 * NS_PER_SEC);
    assert_non_null(s);
    assert_true(s->seq > seq);
    snapshot_unref(s);
}

static void test_sampler_slow_nvml_call_never_delays_readers(void **state) {
    fixture_t *fx = *state;
    start(fx, 100 * NS_PER_MS);
    snapshot_t *s = sampler_wait_newer(fx->sampler, 0, 5 * NS_PER_SEC);
    assert_non_null(s);
    snapshot_unref(s);

    write_scenario("\"nvmlDeviceGetPowerUsage\": 2000");
    /* For 2.5 s, read as a server would, and time every read. */
    uint64_t worst_ns = 0, longest_same_seq_ns = 0, reads = 0;
    uint64_t last_seq = 0;
    mono_ns_t same_since = now_ns(), t_end = now_ns() + 2500 * NS_PER_MS;
    while (now_ns() < t_end) {
        mono_ns_t t0 = now_ns();
        s = sampler_current(fx->sampler);
        mono_ns_t dt = now_ns() - t0;
        assert_non_null(s);
        worst_ns = dt > worst_ns ? dt : worst_ns;
        if (s->seq != last_seq) {
            last_seq = s->seq;
            same_since = t0;
        } else if (t0 - same_since > longest_same_seq_ns) {
            longest_same_seq_ns = t0 - same_since;
        }
        snapshot_unref(s);
        reads++;
        sleep_ms(5);
    }
    print_message("reads=%llu worst read=%.3f ms, longest unchanged snapshot=%.0f ms\n",
                  (unsigned long long)reads, worst_ns / 1e6, longest_same_seq_ns / 1e6);
    /* The 2 s call really blocked the sampler ... */
    assert_true(longest_same_seq_ns > 1500 * NS_PER_MS);
    /* ... and no reader waited for it. */
    assert_true(worst_ns < 50 * NS_PER_MS);
    assert_true(reads > 100);
}

static void test_sampler_overrun_skips_ticks_instead_of_queueing(void **state) {
    fixture_t *fx = *state;
    write_scenario("\"nvmlDeviceGetPowerUsage\": 350");
    start(fx, 100 * NS_PER_MS);
    snapshot_t *prev = sampler_wait_newer(fx->sampler, 0, 5 * NS_PER_SEC);
    assert_non_null(prev);
    for (int i = 0; i < 3; i++) {
        snapshot_t *s = sampler_wait_newer(fx->sampler, prev->seq, 5 * NS_PER_SEC);
        assert_non_null(s);
        /* Queued ticks would show up as back-to-back sweeps. */
        assert_true(s->taken_mono - prev->taken_mono >= 340 * NS_PER_MS);
        snapshot_unref(prev);
        prev = s;
    }
    snapshot_unref(prev);
    assert_true(sampler_overruns(fx->sampler) >= 3);
}

static void test_sampler_rejects_interval_below_minimum(void **state) {
    fixture_t *fx = *state;
    nvml_collector_t *c;
    assert_int_equal(nvml_collector_new(nvml_loader_api(fx->loader), NULL, "n", &c), 0);
    sampler_opts_t o = {.interval_ns = 50 * NS_PER_MS};
    char err[256] = "";
    sampler_t *s = NULL;
    assert_int_equal(sampler_start(nvml_collector_backend(c), &o, &s, err, sizeof err),
                     -2 /* KGS_EINVAL */);
    assert_null(s);
    assert_non_null(strstr(err, "100 ms"));
}

static void mark_pods(snapshot_t *snap, void *ud) {
    (void)ud;
    for (unsigned i = 0; i < snap->proc_total; i++)
        snprintf(snap->procs[i].pod_uid, sizeof snap->procs[i].pod_uid, "pod-of-%u",
                 snap->procs[i].pid);
    snap->procs_attributed = true;
}

/* Processes end to end through dlopen: the stand-in's lists and samples,
 * read by the collector with the real struct layouts; the _v3 list missing
 * (a 470 driver) falls back to _v2; before_publish sees each snapshot
 * before readers do. */
static void test_sampler_reads_processes_through_the_stand_in(void **state) {
    fixture_t *fx = *state;
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s.tmp", scenario_path);
    FILE *f = fopen(tmp, "w");
    assert_non_null(f);
    fputs("{\"missing_symbols\": [\"nvmlDeviceGetComputeRunningProcesses_v3\"],"
          " \"devices\": [{\"values\": {\"gpu_util\": 60, \"mem_util\": 9},"
          " \"processes\": [{\"pid\": 4001, \"sm_util\": 35, \"mem_util\": 7,"
          " \"used_memory_bytes\": 2147483648}, {\"pid\": 4002, \"sm_util\": 25,"
          " \"mem_util\": 2, \"used_memory_bytes\": 1073741824},"
          " {\"pid\": 4003, \"type\": \"graphics\"}]}]}",
          f);
    fclose(f);
    assert_int_equal(rename(tmp, scenario_path), 0);
    nvml_loader_free(fx->loader); /* rebind: the resolver reads missing_symbols */
    char err[512];
    assert_int_equal(nvml_loader_open(getenv("NVML_SIM_LIBRARY"), &fx->loader, err, sizeof err), 0);
    assert_null(nvml_loader_api(fx->loader)->nvmlDeviceGetComputeRunningProcesses_v3);
    nvml_collector_t *c;
    assert_int_equal(nvml_collector_new(nvml_loader_api(fx->loader), NULL, "sim-node", &c), 0);
    sampler_opts_t o = {.interval_ns = 100 * NS_PER_MS, .before_publish = mark_pods};
    assert_int_equal(sampler_start(nvml_collector_backend(c), &o, &fx->sampler, err, sizeof err),
                     0);
    snapshot_t *s = sampler_wait_newer(fx->sampler, 0, 5 * NS_PER_SEC);
    assert_non_null(s);
    const proc_list_t *pl = &s->gpus[0].procs;
    assert_true(pl->list_ok);
    assert_true(pl->util_ok);
    assert_int_equal(pl->count, 3);
    const proc_record_t *p = &s->procs[pl->first];
    assert_int_equal(p[0].pid, 4001);
    assert_float_equal(p[0].sm_util_pct, 35, 1e-9);
    assert_float_equal(p[0].mem_util_pct, 7, 1e-9);
    assert_int_equal(p[0].used_memory_bytes, UINT64_C(2147483648));
    assert_int_equal(p[1].pid, 4002);
    assert_float_equal(p[0].sm_util_pct + p[1].sm_util_pct, s->gpus[0].gpu_util_pct, 1e-9);
    assert_int_equal(p[2].pid, 4003); /* a graphics context, idle, memory not available */
    assert_float_equal(p[2].sm_util_pct, 0, 1e-9);
    assert_false(proc_has(&p[2], PROC_F_USED_MEMORY));
    assert_string_equal(p[1].pod_uid, "pod-of-4002");
    assert_true(s->procs_attributed);
    snapshot_unref(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sampler_publishes_snapshots_from_the_real_loader,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_sampler_slow_nvml_call_never_delays_readers, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_sampler_overrun_skips_ticks_instead_of_queueing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_sampler_rejects_interval_below_minimum, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_sampler_reads_processes_through_the_stand_in, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
