/* The amdgpu sysfs reader against the fake node in tests/fixtures/amdgpu
 * (values hand-picked there, see its README), and against small trees made
 * here for what a fixed tree cannot show: engine-time rates between two
 * sweeps, a count that goes backwards, and a node with no amdgpu card. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "amdgpu/amdgpu_sysfs.h"
#include "core/snapshot.h"

static void fixture_roots(char *sys, char *proc, size_t n) {
    const char *src = getenv("KGS_SOURCE_DIR");
    assert_non_null(src);
    snprintf(sys, n, "%s/tests/fixtures/amdgpu/sys", src);
    snprintf(proc, n, "%s/tests/fixtures/amdgpu/proc", src);
}

static snapshot_t *sweep(amdgpu_sysfs_t *r, mono_ns_t now) {
    snapshot_t *s = NULL;
    assert_int_equal(amdgpu_sysfs_sample(r, now, &s), 0);
    assert_non_null(s);
    return s;
}

static void test_amdgpu_sysfs_reads_the_fixture_cards_in_pci_order(void **state) {
    (void)state;
    char sys[1024], proc[1024];
    fixture_roots(sys, proc, sizeof sys);
    amdgpu_sysfs_opts_t o = {.sys_root = sys, .proc_root = proc};
    amdgpu_sysfs_t *r;
    assert_int_equal(amdgpu_sysfs_new(&o, NULL, "amd-node", &r), 0);
    snapshot_t *s = sweep(r, 1000);
    assert_int_equal(s->status, SNAPSHOT_OK);
    assert_string_equal(s->node_name, "amd-node");
    assert_int_equal(s->gpu_count, 2);

    const gpu_record_t *g = &s->gpus[0]; /* card1, 0000:19:00.0 */
    assert_int_equal(g->index, 0);
    assert_int_equal(g->vendor, GPU_VENDOR_AMD);
    assert_string_equal(g->pci_bus_id, "0000:19:00.0");
    assert_string_equal(g->name, "AMD Instinct MI300X");
    assert_string_equal(g->uuid, "5a1f0c2e7b3d9e41");
    assert_int_equal(g->health, GPU_HEALTH_OK);
    assert_true(gpu_has(g, GPU_F_GPU_UTIL));
    assert_int_equal(g->gpu_util_pct, 37);
    assert_true(gpu_has(g, GPU_F_MEM_UTIL));
    assert_int_equal(g->mem_util_pct, 12);
    assert_true(gpu_has(g, GPU_F_MEM_USED));
    assert_int_equal(g->memory_used_bytes, 21474836480ull);
    assert_int_equal(g->memory_total_bytes, 206158430208ull);
    assert_true(gpu_has(g, GPU_F_POWER));
    assert_true(g->power_w == 312.0);
    assert_true(gpu_has(g, GPU_F_POWER_LIMIT));
    assert_true(g->power_limit_w == 750.0);
    assert_true(gpu_has(g, GPU_F_TEMPERATURE)); /* junction: no edge sensor */
    assert_int_equal(g->temperature_c, 51);
    assert_true(gpu_has(g, GPU_F_SM_CLOCK));
    assert_int_equal(g->sm_clock_mhz, 2100);
    /* NVIDIA-only fields: absent, as "not supported" (no error to show). */
    assert_false(gpu_has(g, GPU_F_SM_ACTIVE));
    assert_int_equal(g->field_error[GPU_F_SM_ACTIVE], 3);
    /* gpu_metrics v1_5: the energy counter; hwmon's power and junction
     * temperature win over the table's. */
    assert_true(gpu_has(g, GPU_F_ENERGY));
    assert_int_equal(g->energy_mj, 123456000ull);
    assert_false(gpu_has(g, GPU_F_PCIE_TX));

    g = &s->gpus[1]; /* card0, 0000:C1:00.0 in its uevent */
    assert_int_equal(g->index, 1);
    assert_string_equal(g->pci_bus_id, "0000:c1:00.0");
    assert_string_equal(g->name, "");
    assert_string_equal(g->uuid, "");
    assert_true(gpu_has(g, GPU_F_GPU_UTIL));
    assert_int_equal(g->gpu_util_pct, 0);     /* a real 0 */
    assert_false(gpu_has(g, GPU_F_MEM_UTIL)); /* no file: unknown, never 0 */
    assert_int_equal(g->field_error[GPU_F_MEM_UTIL], 3);
    assert_true(g->power_w == 45.0);
    assert_false(gpu_has(g, GPU_F_POWER_LIMIT));
    assert_int_equal(g->temperature_c, 38);
    assert_false(gpu_has(g, GPU_F_SM_CLOCK));
    assert_false(gpu_has(g, GPU_F_ENERGY)); /* no gpu_metrics */
    assert_int_equal(g->field_error[GPU_F_ENERGY], 3);
    snapshot_unref(s);
    amdgpu_sysfs_free(r);
}

static void test_amdgpu_sysfs_reads_fixture_processes_once_per_client(void **state) {
    (void)state;
    char sys[1024], proc[1024];
    fixture_roots(sys, proc, sizeof sys);
    amdgpu_sysfs_opts_t o = {.sys_root = sys, .proc_root = proc};
    amdgpu_sysfs_t *r;
    assert_int_equal(amdgpu_sysfs_new(&o, NULL, "n", &r), 0);
    gpu_backend_t b = amdgpu_sysfs_backend(r);
    assert_string_equal(gpu_backend_name(&b), "amdgpu-sysfs");
    snapshot_t *s = NULL;
    assert_int_equal(gpu_backend_sample(&b, 1000, &s), 0);
    /* Utilisation needs a second sweep. */
    assert_true(gpu_backend_wants_second_sample(&b));
    const proc_list_t *pl = &s->gpus[0].procs;
    assert_true(pl->list_ok);
    assert_false(pl->util_ok);
    assert_int_equal(pl->count, 1);
    const proc_record_t *p = &s->procs[pl->first];
    assert_int_equal(p->pid, 4242);
    assert_true(proc_has(p, PROC_F_USED_MEMORY));
    assert_int_equal(p->used_memory_bytes, 21474836480ull); /* fd 5 and its dup fd 6: once */
    assert_false(proc_has(p, PROC_F_SM_UTIL));
    assert_false(proc_has(p, PROC_F_MEM_UTIL));
    pl = &s->gpus[1].procs;
    assert_int_equal(pl->count, 1);
    p = &s->procs[pl->first];
    assert_int_equal(p->pid, 4343);
    assert_int_equal(p->used_memory_bytes, 536870912ull); /* drm-resident-vram */
    assert_int_equal(s->proc_total, 2);                   /* the i915 client is not ours */
    snapshot_unref(s);

    /* 150 ms later, nothing ran: a known 0 %. */
    assert_int_equal(gpu_backend_sample(&b, 1000 + 150 * NS_PER_MS, &s), 0);
    assert_false(gpu_backend_wants_second_sample(&b));
    assert_true(s->gpus[0].procs.util_ok);
    p = &s->procs[s->gpus[0].procs.first];
    assert_true(proc_has(p, PROC_F_SM_UTIL));
    assert_true(p->sm_util_pct == 0.0);
    snapshot_unref(s);
    gpu_backend_deinit(&b);
}

/* ---- a tree made by the test ---------------------------------------------- */

static char tmp_root[256];

static void put(const char *rel, const char *text) {
    char path[512], tmp[520];
    snprintf(path, sizeof path, "%s/%s", tmp_root, rel);
    /* mkdir -p of the parent */
    for (char *p = path + strlen(tmp_root) + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0755);
            *p = '/';
        }
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(rename(tmp, path), 0);
}

static void fdinfo(unsigned gfx_ms, unsigned compute_ms) {
    char text[512];
    snprintf(text, sizeof text,
             "drm-driver:\tamdgpu\ndrm-pdev:\t0000:03:00.0\ndrm-client-id:\t1\n"
             "drm-memory-vram:\t1024 KiB\ndrm-engine-gfx:\t%llu ns\ndrm-engine-compute:\t%llu ns\n",
             (unsigned long long)gfx_ms * 1000000ull, (unsigned long long)compute_ms * 1000000ull);
    put("proc/77/fdinfo/4", text);
}

static int setup_tree(void **state) {
    (void)state;
    snprintf(tmp_root, sizeof tmp_root, "/tmp/kgs-test-amdgpu-%d", (int)getpid());
    assert_int_equal(mkdir(tmp_root, 0755), 0);
    put("sys/class/drm/card0/device/uevent", "DRIVER=amdgpu\nPCI_SLOT_NAME=0000:03:00.0\n");
    put("sys/class/drm/card0/device/gpu_busy_percent", "80\n");
    fdinfo(1000, 0);
    char path[512];
    snprintf(path, sizeof path, "%s/proc/77/fd", tmp_root);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/proc/77/fd/4", tmp_root);
    assert_int_equal(symlink("/dev/dri/renderD128", path), 0);
    return 0;
}

static int teardown_tree(void **state) {
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_root);
    return system(cmd) == 0 ? 0 : -1;
}

static amdgpu_sysfs_t *tree_reader(void) {
    char sys[300], proc[300];
    snprintf(sys, sizeof sys, "%s/sys", tmp_root);
    snprintf(proc, sizeof proc, "%s/proc", tmp_root);
    amdgpu_sysfs_opts_t o = {.sys_root = sys, .proc_root = proc};
    amdgpu_sysfs_t *r;
    assert_int_equal(amdgpu_sysfs_new(&o, NULL, "n", &r), 0);
    return r;
}

static double util_of_first(const snapshot_t *s, bool *has) {
    const proc_record_t *p = &s->procs[s->gpus[0].procs.first];
    *has = proc_has(p, PROC_F_SM_UTIL);
    return p->sm_util_pct;
}

static void test_amdgpu_sysfs_process_util_is_engine_time_over_wall_time(void **state) {
    (void)state;
    amdgpu_sysfs_t *r = tree_reader();
    mono_ns_t t = 10 * NS_PER_SEC;
    snapshot_t *s = sweep(r, t);
    bool has;
    util_of_first(s, &has);
    assert_false(has);
    /* The hardware-free fields that are absent: no hwmon at all. */
    assert_false(gpu_has(&s->gpus[0], GPU_F_POWER));
    assert_false(gpu_has(&s->gpus[0], GPU_F_MEM_USED));
    snapshot_unref(s);

    /* 2 s later: +500 ms gfx + 300 ms compute = 800 ms busy in 2000 ms = 40 %. */
    fdinfo(1500, 300);
    s = sweep(r, t + 2 * NS_PER_SEC);
    double u = util_of_first(s, &has);
    assert_true(has);
    assert_true(u > 39.999 && u < 40.001);
    snapshot_unref(s);

    /* A count that goes backwards keeps the larger previous value: 0 %,
     * and the next rise counts from 1800 ms, not from 100 ms. */
    fdinfo(100, 0);
    s = sweep(r, t + 3 * NS_PER_SEC);
    u = util_of_first(s, &has);
    assert_true(has);
    assert_true(u == 0.0);
    snapshot_unref(s);
    fdinfo(2000, 100); /* 2100 ms: +300 ms over the kept 1800 in 1 s = 30 % */
    s = sweep(r, t + 4 * NS_PER_SEC);
    u = util_of_first(s, &has);
    assert_true(u > 29.999 && u < 30.001);
    snapshot_unref(s);

    /* More engine time than wall time (several engines): capped at 100. */
    fdinfo(9000, 9000);
    s = sweep(r, t + 5 * NS_PER_SEC);
    u = util_of_first(s, &has);
    assert_true(u == 100.0);
    snapshot_unref(s);
    amdgpu_sysfs_free(r);
}

static void test_amdgpu_sysfs_without_amdgpu_card_reports_down(void **state) {
    (void)state;
    amdgpu_sysfs_opts_t o = {.sys_root = "/nonexistent-kgs", .proc_root = "/nonexistent-kgs"};
    amdgpu_sysfs_t *r;
    assert_int_equal(amdgpu_sysfs_new(&o, NULL, "n", &r), 0);
    snapshot_t *s = sweep(r, 1);
    assert_int_equal(s->status, SNAPSHOT_NVML_DOWN);
    assert_int_equal(s->gpu_count, 0);
    assert_non_null(strstr(s->error, "/nonexistent-kgs/class/drm"));
    snapshot_unref(s);
    amdgpu_sysfs_free(r);
    assert_int_equal(amdgpu_sysfs_count_cards("/nonexistent-kgs"), 0);

    char sys[1024], proc[1024];
    fixture_roots(sys, proc, sizeof sys);
    assert_int_equal(amdgpu_sysfs_count_cards(sys), 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_amdgpu_sysfs_reads_the_fixture_cards_in_pci_order),
        cmocka_unit_test(test_amdgpu_sysfs_reads_fixture_processes_once_per_client),
        cmocka_unit_test_setup_teardown(
            test_amdgpu_sysfs_process_util_is_engine_time_over_wall_time, setup_tree,
            teardown_tree),
        cmocka_unit_test(test_amdgpu_sysfs_without_amdgpu_card_reports_down),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
