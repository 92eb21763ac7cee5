/* The amd-smi sweep over a table of fake library calls: what each answer
 * becomes in the snapshot, partitions whose activity is unknown rather than
 * partition 0's, a lost device, missing symbols, and init failures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "amdsmi/amdsmi_backend.h"
#include "core/err.h"

/* The fake node: one socket, n devices. */
static struct {
    uint32_t init_status;
    unsigned ndev;
    const char *compute_partition; /* NULL: NOT_SUPPORTED */
    bool kfd;                      /* partition ids known */
    uint32_t lost_dev;             /* device answering NOT_FOUND; 99 = none */
    uint32_t sick_dev;             /* device whose activity answers DRM_ERROR; 99 = none */
    unsigned nproc;
    uint64_t gfx_ns; /* each process's engine_usage.gfx */
    int inits, shutdowns;
} F;

static uintptr_t dev_of(amdsmi_processor_handle h) {
    return (uintptr_t)h - 1;
}

static amdsmi_status_t f_init(uint64_t flags) {
    assert_true(flags == AMDSMI_INIT_AMD_GPUS);
    F.inits++;
    return F.init_status;
}
static amdsmi_status_t f_shut_down(void) {
    F.shutdowns++;
    return AMDSMI_STATUS_SUCCESS;
}
static amdsmi_status_t f_sockets(uint32_t *n, amdsmi_socket_handle *h) {
    if (h && *n >= 1)
        h[0] = (amdsmi_socket_handle)(uintptr_t)0x50;
    *n = 1;
    return AMDSMI_STATUS_SUCCESS;
}
static amdsmi_status_t f_procs(amdsmi_socket_handle s, uint32_t *n, amdsmi_processor_handle *h) {
    assert_true((uintptr_t)s == 0x50);
    if (h)
        for (unsigned i = 0; i < F.ndev && i < *n; i++)
            h[i] = (amdsmi_processor_handle)(uintptr_t)(i + 1);
    *n = F.ndev;
    return AMDSMI_STATUS_SUCCESS;
}
#define LOST_CHECK(h)                                                                              \
    if (dev_of(h) == F.lost_dev)                                                                   \
        return AMDSMI_STATUS_NOT_FOUND;
static amdsmi_status_t f_bdf(amdsmi_processor_handle h, amdsmi_bdf_t *b) {
    LOST_CHECK(h);
    b->as_uint = 0;
    /* In CPX all partitions of a GPU share its address: 4 per GPU here. */
    b->fields.bus_number = (uint64_t)(0x10 + (F.compute_partition ? dev_of(h) / 4 : dev_of(h)));
    return AMDSMI_STATUS_SUCCESS;
}
static amdsmi_status_t f_activity(amdsmi_processor_handle h, amdsmi_engine_usage_t *u) {
    LOST_CHECK(h);
    if (dev_of(h) == F.sick_dev)
        return AMDSMI_STATUS_DRM_ERROR;
    u->gfx_activity = 40 + (uint32_t)dev_of(h);
    u->umc_activity = 0xFFFF; /* not filled */
    u->mm_activity = 0;
    return AMDSMI_STATUS_SUCCESS;
}
static amdsmi_status_t f_vram(amdsmi_processor_handle h, amdsmi_vram_usage_t *v) {
    LOST_CHECK(h);
    v->vram_total = 196592;
    v->vram_used = 1024;
    return AMDSMI_STATUS_SUCCESS;
}
static amdsmi_status_t f_power(amdsmi_processor_handle h, amdsmi_power_info_t *p) {
    LOST_CHECK(h);
    p->current_socket_power = 350;
    p->average_socket_power = 0xFFFF;
    p->power_limit = 750000000;
    return AMDSMI_STATUS_SUCCESS;
}
static amdsmi_status_t f_temp(amdsmi_processor_handle h, int sensor, int metric, int64_t *t) {
    LOST_CHECK(h);
    assert_int_equal(metric, AMDSMI_TEMP_CURRENT);
    if (sensor == AMDSMI_TEMPERATURE_TYPE_EDGE)
        return AMDSMI_STATUS_NOT_SUPPORTED;
    *t = 55;
    return AMDSMI_STATUS_SUCCESS;
}
static amdsmi_status_t f_cp(amdsmi_processor_handle h, char *out, uint32_t len) {
    (void)h;
    if (!F.compute_partition)
        return AMDSMI_STATUS_NOT_SUPPORTED;
    strncpy(out, F.compute_partition, len);
    return AMDSMI_STATUS_SUCCESS;
}
static amdsmi_status_t f_mp(amdsmi_processor_handle h, char *out, uint32_t len) {
    (void)h;
    strncpy(out, "NPS4", len);
    return AMDSMI_STATUS_SUCCESS;
}
static amdsmi_status_t f_kfd(amdsmi_processor_handle h, amdsmi_kfd_info_t *k) {
    if (!F.kfd)
        return AMDSMI_STATUS_NOT_SUPPORTED;
    k->current_partition_id = (uint32_t)(dev_of(h) % 4);
    return AMDSMI_STATUS_SUCCESS;
}
static amdsmi_status_t f_version(amdsmi_version_t *v) {
    *v = (amdsmi_version_t){.year = 24, .major = 7};
    return AMDSMI_STATUS_SUCCESS;
}
/* Partition p of any GPU is 10 * p % busy on its one XCC. */
static amdsmi_status_t f_metrics(amdsmi_processor_handle h, void *m) {
    (void)h;
    unsigned char *t = m;
    memset(t, 0xff, AMDSMI_GPU_METRICS_24_7_SIZE);
    uint16_t n = 4;
    memcpy(t + AMDSMI_GPU_METRICS_24_7_NUM_PARTITION_OFFSET, &n, sizeof n);
    for (uint32_t p = 0; p < 4; p++) {
        uint32_t busy = 10 * p;
        memcpy(t + AMDSMI_GPU_METRICS_24_7_XCP_STATS_OFFSET + p * sizeof(amdsmi_gpu_xcp_metrics_t),
               &busy, sizeof busy);
    }
    return AMDSMI_STATUS_SUCCESS;
}
static amdsmi_status_t f_plist(amdsmi_processor_handle h, uint32_t *max, amdsmi_proc_info_t *l) {
    LOST_CHECK(h);
    unsigned n = dev_of(h) == 0 ? F.nproc : 0;
    for (unsigned i = 0; i < n && i < *max; i++) {
        memset(&l[i], 0, sizeof l[i]);
        l[i].pid = 1000 + i;
        l[i].memory_usage.vram_mem = (uint64_t)(i + 1) << 30;
        l[i].engine_usage.gfx = F.gfx_ns * (i + 1);
    }
    uint32_t cap = *max;
    *max = n;
    return n > cap ? AMDSMI_STATUS_OUT_OF_RESOURCES : AMDSMI_STATUS_SUCCESS;
}

static amdsmi_api_t full_api(void) {
    amdsmi_api_t a;
    memset(&a, 0, sizeof a);
    a.amdsmi_init = f_init;
    a.amdsmi_shut_down = f_shut_down;
    a.amdsmi_get_socket_handles = f_sockets;
    a.amdsmi_get_processor_handles = f_procs;
    a.amdsmi_get_gpu_device_bdf = f_bdf;
    a.amdsmi_get_gpu_activity = f_activity;
    a.amdsmi_get_gpu_vram_usage = f_vram;
    a.amdsmi_get_power_info = f_power;
    a.amdsmi_get_temp_metric = f_temp;
    a.amdsmi_get_gpu_compute_partition = f_cp;
    a.amdsmi_get_gpu_memory_partition = f_mp;
    a.amdsmi_get_gpu_kfd_info = f_kfd;
    a.amdsmi_get_gpu_process_list = f_plist;
    return a;
}

static int reset_fake(void **state) {
    (void)state;
    memset(&F, 0, sizeof F);
    F.ndev = 2;
    F.lost_dev = 99;
    F.sick_dev = 99;
    return 0;
}

static snapshot_t *sweep(const amdsmi_api_t *a, amdsmi_backend_t **keep) {
    amdsmi_backend_t *b;
    assert_int_equal(amdsmi_backend_new(a, NULL, "node-a", &b), 0);
    snapshot_t *s = NULL;
    assert_int_equal(amdsmi_backend_sample(b, 1, &s), 0);
    assert_non_null(s);
    if (keep)
        *keep = b;
    else
        amdsmi_backend_free(b);
    return s;
}

static void test_a_whole_gpu_reads_every_field_amd_smi_has(void **state) {
    (void)state;
    F.nproc = 2;
    amdsmi_api_t a = full_api();
    snapshot_t *s = sweep(&a, NULL);
    assert_int_equal(s->status, SNAPSHOT_OK);
    assert_int_equal(s->gpu_count, 2);
    const gpu_record_t *g = &s->gpus[1];
    assert_int_equal(g->vendor, GPU_VENDOR_AMD);
    assert_string_equal(g->pci_bus_id, "0000:11:00.0");
    assert_true(gpu_has(g, GPU_F_GPU_UTIL));
    assert_int_equal(g->gpu_util_pct, 41);
    /* umc_activity 0xFFFF: not filled, so unknown, not 65535 or 0. */
    assert_false(gpu_has(g, GPU_F_MEM_UTIL));
    assert_int_equal(g->field_error[GPU_F_MEM_UTIL], 3);
    assert_true(g->memory_total_bytes == 196592ull << 20);
    assert_true(g->memory_used_bytes == 1024ull << 20);
    assert_true(gpu_has(g, GPU_F_POWER) && g->power_w == 350.0);
    assert_true(gpu_has(g, GPU_F_POWER_LIMIT) && g->power_limit_w == 750.0);
    assert_true(gpu_has(g, GPU_F_TEMPERATURE) && g->temperature_c == 55);
    /* No clock symbol in this table: unknown, code 0 (no symbol). */
    assert_false(gpu_has(g, GPU_F_SM_CLOCK));
    assert_int_equal(g->field_error[GPU_F_SM_CLOCK], 0);
    assert_false(gpu_has(g, GPU_F_SM_ACTIVE));
    assert_int_equal(g->field_error[GPU_F_SM_ACTIVE], 3);
    assert_int_equal(g->health, GPU_HEALTH_OK);
    /* Processes: two on device 0, VRAM in bytes. */
    assert_int_equal(s->gpus[0].procs.count, 2);
    assert_true(s->gpus[0].procs.list_ok);
    const proc_record_t *p = &s->procs[s->gpus[0].procs.first + 1];
    assert_int_equal(p->pid, 1001);
    assert_true(proc_has(p, PROC_F_USED_MEMORY) && p->used_memory_bytes == 2ull << 30);
    assert_false(proc_has(p, PROC_F_SM_UTIL));
    assert_int_equal(s->gpus[1].procs.count, 0);
    snapshot_unref(s);
    assert_int_equal(F.shutdowns, 1);
}

static void test_cpx_partitions_are_devices_and_only_partition_0_has_activity(void **state) {
    (void)state;
    F.ndev = 8; /* two GPUs, four partitions each */
    F.compute_partition = "CPX";
    F.kfd = true;
    amdsmi_api_t a = full_api();
    snapshot_t *s = sweep(&a, NULL);
    assert_int_equal(s->gpu_count, 8);
    for (unsigned i = 0; i < 8; i++) {
        const gpu_record_t *g = &s->gpus[i];
        assert_string_equal(g->pci_bus_id, i < 4 ? "0000:10:00.0" : "0000:11:00.0");
        assert_true(gpu_has(g, GPU_F_MEM_USED));
        if (i % 4 == 0) {
            assert_true(gpu_has(g, GPU_F_GPU_UTIL));
            assert_int_equal(g->gpu_util_pct, 40 + i);
            assert_true(gpu_has(g, GPU_F_POWER));
        } else {
            /* amd-smi would answer partition 0's figure: unknown instead. */
            assert_false(gpu_has(g, GPU_F_GPU_UTIL));
            assert_int_equal(g->field_error[GPU_F_GPU_UTIL], 3);
            assert_false(gpu_has(g, GPU_F_POWER));
        }
    }
    assert_non_null(strstr(s->gpus[5].name, "[cpx_nps4 partition 1]"));
    snapshot_unref(s);
}

static void test_cpx_partitions_read_their_own_busy_from_the_24_7_xcp_table(void **state) {
    (void)state;
    F.ndev = 4;
    F.compute_partition = "CPX";
    F.kfd = true;
    amdsmi_api_t a = full_api();
    a.amdsmi_get_lib_version = f_version;
    a.amdsmi_get_gpu_metrics_info = f_metrics;
    snapshot_t *s = sweep(&a, NULL);
    assert_int_equal(s->gpus[0].gpu_util_pct, 40); /* partition 0: amd-smi's activity */
    for (unsigned i = 1; i < 4; i++) {
        assert_true(gpu_has(&s->gpus[i], GPU_F_GPU_UTIL));
        assert_int_equal(s->gpus[i].gpu_util_pct, 10 * i);
        assert_false(gpu_has(&s->gpus[i], GPU_F_MEM_UTIL));
        assert_false(gpu_has(&s->gpus[i], GPU_F_POWER));
    }
    snapshot_unref(s);
    /* Another library version: the table's layout is not known, so unknown. */
    a.amdsmi_get_lib_version = NULL;
    s = sweep(&a, NULL);
    assert_false(gpu_has(&s->gpus[1], GPU_F_GPU_UTIL));
    snapshot_unref(s);
}

static void test_cpx_without_partition_ids_leaves_every_activity_unknown(void **state) {
    (void)state;
    F.ndev = 4;
    F.compute_partition = "CPX";
    amdsmi_api_t a = full_api();
    a.amdsmi_get_gpu_kfd_info = NULL; /* a library before 24.7 */
    snapshot_t *s = sweep(&a, NULL);
    for (unsigned i = 0; i < 4; i++)
        assert_false(gpu_has(&s->gpus[i], GPU_F_GPU_UTIL));
    assert_non_null(strstr(s->gpus[0].name, "[cpx_nps4 partition]"));
    snapshot_unref(s);
}

static void test_a_device_that_is_gone_is_lost_and_the_others_still_read(void **state) {
    (void)state;
    F.lost_dev = 1;
    amdsmi_api_t a = full_api();
    snapshot_t *s = sweep(&a, NULL);
    assert_int_equal(s->status, SNAPSHOT_OK);
    assert_int_equal(s->gpus[1].health, GPU_HEALTH_LOST);
    assert_int_equal(s->gpus[1].health_nvml_code, 15);
    assert_false(gpu_has(&s->gpus[1], GPU_F_GPU_UTIL));
    assert_int_equal(s->gpus[1].field_error[GPU_F_GPU_UTIL], 15);
    assert_false(s->gpus[1].procs.list_ok);
    assert_int_equal(s->gpus[0].health, GPU_HEALTH_OK);
    assert_true(gpu_has(&s->gpus[0], GPU_F_GPU_UTIL));
    snapshot_unref(s);
}

static void test_a_hard_error_makes_the_device_error_as_nvmls_do(void **state) {
    (void)state;
    F.sick_dev = 0;
    amdsmi_api_t a = full_api();
    snapshot_t *s = sweep(&a, NULL);
    assert_int_equal(s->gpus[0].health, GPU_HEALTH_ERROR);
    assert_int_equal(s->gpus[0].health_nvml_code, 999);
    assert_int_equal(s->gpus[0].field_error[GPU_F_GPU_UTIL], 999);
    assert_false(gpu_has(&s->gpus[0], GPU_F_GPU_UTIL));
    assert_true(gpu_has(&s->gpus[0], GPU_F_MEM_USED)); /* the rest still reads */
    /* A field the device does not have (no edge sensor) is no sickness. */
    assert_int_equal(s->gpus[1].health, GPU_HEALTH_OK);
    snapshot_unref(s);
}

static void test_missing_process_list_symbol_leaves_the_list_absent(void **state) {
    (void)state;
    amdsmi_api_t a = full_api();
    a.amdsmi_get_gpu_process_list = NULL;
    snapshot_t *s = sweep(&a, NULL);
    assert_false(s->gpus[0].procs.list_ok);
    assert_int_equal(s->gpus[0].procs.list_code, 0);
    assert_true(gpu_has(&s->gpus[0], GPU_F_GPU_UTIL));
    snapshot_unref(s);
}

static void test_more_processes_than_kept_are_counted_as_dropped(void **state) {
    (void)state;
    F.nproc = AMDSMI_MAX_PROCS_PER_GPU + 5;
    amdsmi_api_t a = full_api();
    snapshot_t *s = sweep(&a, NULL);
    assert_true(s->gpus[0].procs.list_ok);
    assert_int_equal(s->gpus[0].procs.count, AMDSMI_MAX_PROCS_PER_GPU);
    assert_int_equal(s->gpus[0].procs.dropped, 5);
    snapshot_unref(s);
}

static void test_process_share_is_gfx_time_gained_between_two_sweeps(void **state) {
    (void)state;
    F.nproc = 2;
    F.gfx_ns = 5000000000ull; /* since the processes opened the device */
    amdsmi_api_t a = full_api();
    amdsmi_backend_t *b;
    assert_int_equal(amdsmi_backend_new(&a, NULL, "n", &b), 0);
    gpu_backend_t be = amdsmi_backend_as_gpu_backend(b);
    snapshot_t *s;
    assert_int_equal(amdsmi_backend_sample(b, 1000000000, &s), 0);
    /* One reading: no share yet, and a second sweep is wanted. */
    assert_false(s->gpus[0].procs.util_ok);
    assert_false(proc_has(&s->procs[0], PROC_F_SM_UTIL));
    assert_true(gpu_backend_wants_second_sample(&be));
    snapshot_unref(s);
    F.gfx_ns += 250000000; /* pid 1000 +0.25 s, pid 1001 +0.5 s, over 1 s */
    assert_int_equal(amdsmi_backend_sample(b, 2000000000, &s), 0);
    assert_true(s->gpus[0].procs.util_ok);
    assert_true(proc_has(&s->procs[0], PROC_F_SM_UTIL));
    assert_true(s->procs[0].sm_util_pct > 24.99 && s->procs[0].sm_util_pct < 25.01);
    assert_true(s->procs[1].sm_util_pct > 49.99 && s->procs[1].sm_util_pct < 50.01);
    assert_false(gpu_backend_wants_second_sample(&be));
    snapshot_unref(s);
    F.gfx_ns -= 1000000000; /* a count that goes backwards: 0, never negative */
    assert_int_equal(amdsmi_backend_sample(b, 3000000000, &s), 0);
    assert_true(s->procs[0].sm_util_pct == 0.0);
    snapshot_unref(s);
    gpu_backend_deinit(&be);
}

static void test_init_failure_is_a_down_snapshot_naming_the_status_and_retried(void **state) {
    (void)state;
    F.init_status = AMDSMI_STATUS_DRIVER_NOT_LOADED;
    amdsmi_api_t a = full_api();
    amdsmi_backend_t *b;
    snapshot_t *s = sweep(&a, &b);
    assert_int_equal(s->status, SNAPSHOT_NVML_DOWN);
    assert_int_equal(s->nvml_code, 9);
    assert_string_equal(s->error, "amd-smi: amdsmi_init: DRIVER_NOT_LOADED (34)");
    assert_int_equal(s->gpu_count, 0);
    snapshot_unref(s);
    F.init_status = AMDSMI_STATUS_SUCCESS;
    assert_int_equal(amdsmi_backend_sample(b, 2, &s), 0);
    assert_int_equal(s->status, SNAPSHOT_OK);
    assert_int_equal(F.inits, 2);
    snapshot_unref(s);
    amdsmi_backend_free(b);
    assert_int_equal(F.shutdowns, 1); /* only the successful init is shut down */
}

static void test_probe_counts_devices_for_auto(void **state) {
    (void)state;
    amdsmi_api_t a = full_api();
    amdsmi_backend_t *b;
    assert_int_equal(amdsmi_backend_new(&a, NULL, "n", &b), 0);
    char err[128] = "";
    assert_int_equal(amdsmi_backend_probe(b, err, sizeof err), 2);
    amdsmi_backend_free(b);
    F.init_status = AMDSMI_STATUS_NO_PERM;
    assert_int_equal(amdsmi_backend_new(&a, NULL, "n", &b), 0);
    assert_int_equal(amdsmi_backend_probe(b, err, sizeof err), -1);
    assert_string_equal(err, "amdsmi_init: NO_PERM (10)");
    amdsmi_backend_free(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_a_whole_gpu_reads_every_field_amd_smi_has, reset_fake),
        cmocka_unit_test_setup(test_cpx_partitions_are_devices_and_only_partition_0_has_activity,
                               reset_fake),
        cmocka_unit_test_setup(test_cpx_partitions_read_their_own_busy_from_the_24_7_xcp_table,
                               reset_fake),
        cmocka_unit_test_setup(test_cpx_without_partition_ids_leaves_every_activity_unknown,
                               reset_fake),
        cmocka_unit_test_setup(test_a_device_that_is_gone_is_lost_and_the_others_still_read,
                               reset_fake),
        cmocka_unit_test_setup(test_a_hard_error_makes_the_device_error_as_nvmls_do, reset_fake),
        cmocka_unit_test_setup(test_missing_process_list_symbol_leaves_the_list_absent, reset_fake),
        cmocka_unit_test_setup(test_more_processes_than_kept_are_counted_as_dropped, reset_fake),
        cmocka_unit_test_setup(test_process_share_is_gfx_time_gained_between_two_sweeps,
                               reset_fake),
        cmocka_unit_test_setup(test_init_failure_is_a_down_snapshot_naming_the_status_and_retried,
                               reset_fake),
        cmocka_unit_test_setup(test_probe_counts_devices_for_auto, reset_fake),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
