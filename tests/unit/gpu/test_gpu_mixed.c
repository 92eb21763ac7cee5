/*
 * test_gpu_mixed.c - one node, two vendors: the merged snapshot keeps the
 * first backend's indexes, numbers the second's after them, keeps every
 * MIG and process record with its GPU, and is down when either side is.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/err.h"
#include "gpu/mixed.h"

/* a: 2 NVIDIA GPUs (index 0 and 1), GPU 1 with one MIG instance; 3
 * processes (GPU 0 has 2, the MIG instance 1). */
static snapshot_t *nvidia(void) {
    snapshot_t *s = snapshot_new_with_procs(2, 1, 3);
    snprintf(s->node_name, sizeof s->node_name, "node-a");
    snprintf(s->driver_version, sizeof s->driver_version, "550.54.15");
    for (unsigned i = 0; i < 2; i++) {
        s->gpus[i].index = i;
        s->gpus[i].vendor = GPU_VENDOR_NVIDIA;
        snprintf(s->gpus[i].uuid, sizeof s->gpus[i].uuid, "GPU-%u", i);
    }
    s->gpus[0].procs = (proc_list_t){.first = 0, .count = 2, .list_ok = true};
    s->gpus[1].mig_enabled = true;
    s->gpus[1].mig_first = 0;
    s->gpus[1].mig_count = 1;
    s->mig[0].parent_index = 1;
    s->mig[0].procs = (proc_list_t){.first = 2, .count = 1, .list_ok = true};
    for (unsigned i = 0; i < 3; i++)
        s->procs[i].pid = 100 + i;
    s->sample_duration_ns = 1000;
    s->taken_mono = 5;
    return s;
}

/* b: 2 AMD GPUs (index 0 and 1), one process on GPU 1. */
static snapshot_t *amd(void) {
    snapshot_t *s = snapshot_new_with_procs(2, 0, 1);
    snprintf(s->driver_version, sizeof s->driver_version, "amdgpu 6.8.5");
    for (unsigned i = 0; i < 2; i++) {
        s->gpus[i].index = i;
        s->gpus[i].vendor = GPU_VENDOR_AMD;
        snprintf(s->gpus[i].uuid, sizeof s->gpus[i].uuid, "0000:%02x:00.0", 0x19 + i);
    }
    s->gpus[1].procs = (proc_list_t){.first = 0, .count = 1, .list_ok = true};
    s->procs[0].pid = 200;
    s->sample_duration_ns = 500;
    s->taken_mono = 7;
    return s;
}

static void test_a_merge_keeps_every_record_with_its_gpu(void **state) {
    (void)state;
    snapshot_t *a = nvidia(), *b = amd();
    snapshot_t *m = gpu_snapshot_merge(a, b);
    assert_non_null(m);
    assert_int_equal(m->status, SNAPSHOT_OK);
    assert_int_equal(m->gpu_count, 4);
    assert_int_equal(m->mig_total, 1);
    assert_int_equal(m->proc_total, 4);
    assert_string_equal(m->node_name, "node-a");
    assert_string_equal(m->driver_version, "550.54.15; amdgpu 6.8.5");
    assert_int_equal(m->sample_duration_ns, 1500);
    assert_int_equal(m->taken_mono, 7);
    const unsigned want_index[4] = {0, 1, 2, 3};
    const gpu_vendor_t want_vendor[4] = {GPU_VENDOR_NVIDIA, GPU_VENDOR_NVIDIA, GPU_VENDOR_AMD,
                                         GPU_VENDOR_AMD};
    for (unsigned i = 0; i < 4; i++) {
        assert_int_equal(m->gpus[i].index, want_index[i]);
        assert_int_equal(m->gpus[i].vendor, want_vendor[i]);
        assert_ptr_equal(snapshot_gpu_by_index(m, want_index[i]), &m->gpus[i]);
    }
    assert_string_equal(m->gpus[3].uuid, "0000:1a:00.0");
    /* the MIG instance and its process stay with NVIDIA GPU 1 */
    assert_int_equal(m->mig[0].parent_index, 1);
    assert_int_equal(m->procs[m->mig[0].procs.first].pid, 102);
    /* GPU 0's two processes, and the AMD GPU's one, renumbered */
    assert_int_equal(m->procs[m->gpus[0].procs.first].pid, 100);
    assert_int_equal(m->procs[m->gpus[0].procs.first + 1].pid, 101);
    assert_int_equal(m->gpus[3].procs.first, 3);
    assert_int_equal(m->procs[m->gpus[3].procs.first].pid, 200);
    /* the inputs are untouched */
    assert_int_equal(b->gpus[1].index, 1);
    assert_int_equal(b->gpus[1].procs.first, 0);
    snapshot_unref(m);
    snapshot_unref(a);
    snapshot_unref(b);
}

static void test_either_side_down_is_the_node_down(void **state) {
    (void)state;
    snapshot_t *a = nvidia(), *b = amd();
    b->status = SNAPSHOT_NVML_DOWN;
    snprintf(b->error, sizeof b->error, "amd-smi: AMDSMI_STATUS_INIT_ERROR");
    snapshot_t *m = gpu_snapshot_merge(a, b);
    assert_int_equal(m->status, SNAPSHOT_NVML_DOWN);
    assert_string_equal(m->error, "amd-smi: AMDSMI_STATUS_INIT_ERROR; the other backend answered");
    assert_string_equal(snapshot_down_subject(m), "GPU backend");
    snapshot_unref(m);
    a->status = SNAPSHOT_NVML_DOWN;
    a->nvml_code = 9;
    snprintf(a->error, sizeof a->error, "NVML: driver not loaded");
    m = gpu_snapshot_merge(a, b);
    assert_int_equal(m->nvml_code, 9);
    assert_string_equal(m->error, "NVML: driver not loaded; amd-smi: AMDSMI_STATUS_INIT_ERROR");
    assert_string_equal(snapshot_down_subject(m), "GPU backend"); /* not "nvml..." */
    snapshot_unref(m);
    snapshot_unref(a);
    snapshot_unref(b);
}

/* Two canned backends behind the mixed one. */
typedef struct {
    snapshot_t *(*make)(void);
    bool second;
    int *freed;
} canned_t;

static int canned_sample(void *self, mono_ns_t now, snapshot_t **out) {
    (void)now;
    canned_t *c = self;
    *out = c->make();
    return 0;
}
static bool canned_second(const void *self) {
    return ((const canned_t *)self)->second;
}
static void canned_free(void *self) {
    (*((canned_t *)self)->freed)++;
}
static const gpu_backend_ops_t CANNED = {"canned", canned_sample, canned_second, canned_free};

static void test_the_mixed_backend_sweeps_both_and_frees_both(void **state) {
    (void)state;
    int freed = 0;
    canned_t ca = {nvidia, false, &freed}, cb = {amd, true, &freed};
    gpu_backend_t a = {&CANNED, &ca}, b = {&CANNED, &cb}, m;
    assert_int_equal(gpu_mixed_backend(&a, &b, &m), 0);
    assert_null(a.ops);
    assert_null(b.ops);
    assert_string_equal(gpu_backend_name(&m), "mixed");
    assert_true(gpu_backend_wants_second_sample(&m));
    snapshot_t *s = NULL;
    assert_int_equal(gpu_backend_sample(&m, 1, &s), 0);
    assert_int_equal(s->gpu_count, 4);
    snapshot_unref(s);
    gpu_backend_deinit(&m);
    assert_int_equal(freed, 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_merge_keeps_every_record_with_its_gpu),
        cmocka_unit_test(test_either_side_down_is_the_node_down),
        cmocka_unit_test(test_the_mixed_backend_sweeps_both_and_frees_both),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
