/*
 * test_output.c - the gpu-metrics writers: one schema in JSON, JSON Lines,
 * CSV and the table; absent fields never printed as 0.
 *
 * Table output is compared with golden files in tests/golden/table_*.txt.
 * Run with KGS_UPDATE_GOLDEN=1 to rewrite them (then review the diff).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "cli/output.h"
#include "core/err.h"

#define GIB (1024ull * 1024ull * 1024ull)
#define WALL_MS 1795974001123LL /* 2026-11-29T17:40:01.123Z */
#define BIT(f) (1u << (f))
#define ALL_FIELDS ((1u << GPU_F_COUNT) - 1u)

/* ---- fixtures ----------------------------------------------------------- */

static void env_slurm(env_info_t *e) {
    memset(e, 0, sizeof *e);
    e->orchestrator = ENV_SLURM;
    strcpy(e->node, "gpu-node-01");
    strcpy(e->job_id, "1234");
    strcpy(e->job_name, "train");
    e->task_rank = 0;
    e->local_rank = 0;
    e->num_nodes = 2;
    e->num_tasks = 8;
    strcpy(e->partition, "gpu");
    strcpy(e->nodelist, "gpu-node-[01-02]");
    strcpy(e->visible_var, "CUDA_VISIBLE_DEVICES");
    strcpy(e->visible_list, "0,1");
}

static void gpu_full(gpu_record_t *g) {
    g->index = 0;
    strcpy(g->uuid, "GPU-11111111-2222-3333-4444-555555555555");
    strcpy(g->name, "NVIDIA H100 80GB HBM3");
    strcpy(g->pci_bus_id, "00000000:17:00.0");
    g->vendor = GPU_VENDOR_NVIDIA;
    g->valid = ALL_FIELDS;
    g->gpu_util_pct = 87;
    g->mem_util_pct = 45;
    g->memory_used_bytes = 40 * GIB;
    g->memory_total_bytes = 80 * GIB;
    g->memory_reserved_bytes = 512ull * 1024 * 1024;
    g->temperature_c = 65;
    g->power_w = 312.0; /* NVML said 312000 mW */
    g->power_limit_w = 700.0;
    g->energy_mj = 123456789;
    g->pcie_tx_bytes_per_s = 1200000000;
    g->pcie_rx_bytes_per_s = 350000;
    g->nvlink_tx_bytes_per_s = 25e9;
    g->nvlink_rx_bytes_per_s = 1.5e6;
    g->sm_clock_mhz = 1980;
    g->clock_event_reasons = 0x1 | 0x4 | 0x400;
    g->sm_active_pct = 71.3;
    g->sm_occupancy_pct = 42.5;
    g->dram_bw_util_pct = 55.25;
}

/* Mostly absent: only utilization (a real 0), memory and temperature. */
static void gpu_sparse(gpu_record_t *g) {
    g->index = 1;
    strcpy(g->uuid, "GPU-66666666-7777-8888-9999-000000000000");
    strcpy(g->name, "Tesla, \"Special\" Edition");
    strcpy(g->pci_bus_id, "00000000:65:00.0");
    g->valid =
        BIT(GPU_F_GPU_UTIL) | BIT(GPU_F_MEM_USED) | BIT(GPU_F_MEM_TOTAL) | BIT(GPU_F_TEMPERATURE);
    g->gpu_util_pct = 0;
    g->memory_used_bytes = 300ull * 1024 * 1024;
    g->memory_total_bytes = 16 * GIB;
    g->temperature_c = 31;
    g->field_error[GPU_F_POWER] = 3;      /* NOT_SUPPORTED: not an error */
    g->field_error[GPU_F_SM_ACTIVE] = 13; /* FUNCTION_NOT_FOUND */
    g->field_error[GPU_F_PCIE_TX] = 999;  /* UNKNOWN */
}

static snapshot_t *snap_two_gpus(void) {
    snapshot_t *s = snapshot_new(2, 0);
    assert_non_null(s);
    s->taken_wall_ms = WALL_MS;
    strcpy(s->driver_version, "560.35.03");
    gpu_full(&s->gpus[0]);
    gpu_sparse(&s->gpus[1]);
    return s;
}

/* GPU 0: MIG with two instances; GPU 1: fell off the bus. */
static snapshot_t *snap_mig(void) {
    snapshot_t *s = snapshot_new(2, 2);
    assert_non_null(s);
    s->taken_wall_ms = WALL_MS;
    strcpy(s->driver_version, "560.35.03");
    gpu_record_t *g = &s->gpus[0];
    g->index = 0;
    strcpy(g->uuid, "GPU-aaaaaaaa-0000-0000-0000-000000000000");
    strcpy(g->name, "NVIDIA A100-SXM4-80GB");
    strcpy(g->pci_bus_id, "00000000:07:00.0");
    g->valid = BIT(GPU_F_MEM_USED) | BIT(GPU_F_MEM_TOTAL) | BIT(GPU_F_TEMPERATURE) |
               BIT(GPU_F_POWER) | BIT(GPU_F_POWER_LIMIT);
    g->memory_used_bytes = 12 * GIB;
    g->memory_total_bytes = 80 * GIB;
    g->temperature_c = 40;
    g->power_w = 95.5;
    g->power_limit_w = 400.0;
    g->mig_enabled = true;
    g->mig_first = 0;
    g->mig_count = 2;

    mig_record_t *m = &s->mig[0];
    m->parent_index = 0;
    strcpy(m->uuid, "MIG-bbbbbbbb-0000-0000-0000-000000000001");
    strcpy(m->name, "NVIDIA A100-SXM4-80GB MIG 3g.40gb");
    strcpy(m->profile, "3g.40gb");
    m->gpu_instance_id = 1;
    m->compute_instance_id = 0;
    m->ids_valid = true;
    m->valid = BIT(GPU_F_MEM_USED) | BIT(GPU_F_MEM_TOTAL) | BIT(GPU_F_SM_ACTIVE);
    m->memory_used_bytes = 10 * GIB;
    m->memory_total_bytes = 40 * GIB;
    m->sm_active_pct = 33.5;

    m = &s->mig[1];
    m->parent_index = 0;
    strcpy(m->uuid, "MIG-bbbbbbbb-0000-0000-0000-000000000002");
    strcpy(m->name, "NVIDIA A100-SXM4-80GB MIG 1g.10gb");
    strcpy(m->profile, "1g.10gb");
    m->gpu_instance_id = 13;
    m->compute_instance_id = 0;
    m->ids_valid = true;
    m->valid = BIT(GPU_F_MEM_TOTAL);
    m->memory_total_bytes = 10 * GIB;

    g = &s->gpus[1];
    g->index = 1;
    strcpy(g->uuid, "GPU-cccccccc-0000-0000-0000-000000000000");
    strcpy(g->name, "NVIDIA A100-SXM4-80GB");
    strcpy(g->pci_bus_id, "00000000:0F:00.0");
    g->health = GPU_HEALTH_LOST;
    g->health_nvml_code = 15;
    return s;
}

static snapshot_t *snap_down(void) {
    snapshot_t *s = snapshot_new(0, 0);
    assert_non_null(s);
    s->taken_wall_ms = WALL_MS;
    s->status = SNAPSHOT_NVML_DOWN;
    s->nvml_code = 9;
    strcpy(s->error, "nvmlInit_v2: Driver Not Loaded");
    return s;
}

/* Two GPUs sharing work: GPU 0 lists two processes (one beyond the bound
 * was dropped), GPU 1's list is absent (NOT_SUPPORTED). */
static snapshot_t *snap_procs(void) {
    snapshot_t *s = snapshot_new_with_procs(2, 0, 2);
    assert_non_null(s);
    s->taken_wall_ms = WALL_MS;
    strcpy(s->driver_version, "560.35.03");
    gpu_full(&s->gpus[0]);
    gpu_sparse(&s->gpus[1]);
    s->gpus[0].procs =
        (proc_list_t){.first = 0, .count = 2, .dropped = 1, .list_ok = true, .util_ok = true};
    s->gpus[1].procs = (proc_list_t){.list_code = 3, .util_code = 3};
    proc_record_t *p = &s->procs[0];
    p->pid = 4242;
    p->valid = (1u << PROC_F_SM_UTIL) | (1u << PROC_F_MEM_UTIL) | (1u << PROC_F_USED_MEMORY);
    p->sm_util_pct = 35.5;
    p->mem_util_pct = 7.0;
    p->used_memory_bytes = 2 * GIB;
    p = &s->procs[1];
    p->pid = 4343;
    p->valid = 1u << PROC_F_USED_MEMORY; /* no utilisation sample */
    p->used_memory_bytes = 64ull * 1024 * 1024;
    return s;
}

/* A CUDA map for a snapshot: every entry `st` (index = position). */
static void cuda_map_fill(cuda_index_map_t *m, const snapshot_t *s, cuda_index_state_t st) {
    memset(m, 0, sizeof *m);
    m->gpu_count = s->gpu_count;
    m->mig_count = s->mig_total;
    m->gpu = calloc(s->gpu_count + 1, sizeof *m->gpu);
    m->mig = calloc(s->mig_total + 1, sizeof *m->mig);
    assert_non_null(m->gpu);
    assert_non_null(m->mig);
    for (unsigned i = 0; i < s->gpu_count; i++)
        m->gpu[i] = (cuda_index_t){st, i};
    for (unsigned i = 0; i < s->mig_total; i++)
        m->mig[i] = (cuda_index_t){st, i};
}

/* ---- helpers ------------------------------------------------------------ */

/* Writes `n` samples of snap with one writer (--processes when
 * `processes`) and `x`; returns the text (free()). */
__attribute__((noinline)) /* else GCC 12 takes the returned buffer for the local `buf` */
static char *
render_x(output_format_t f, const snapshot_t *snap, const env_info_t *env,
         const device_selection_t *sel, const output_extra_t *x, bool processes, int n) {
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    assert_non_null(out);
    output_writer_t w;
    output_writer_init(&w, f);
    assert_false(w.processes);
    w.processes = processes;
    for (int i = 0; i < n; i++)
        assert_int_equal(output_write_sample(&w, out, snap, env, sel, x), 0);
    assert_int_equal(fclose(out), 0);
    return buf;
}

static char *render_n(output_format_t f, const snapshot_t *snap, const env_info_t *env,
                      const device_selection_t *sel, int n) {
    return render_x(f, snap, env, sel, NULL, false, n);
}

static char *render(output_format_t f, const snapshot_t *snap, const env_info_t *env,
                    const device_selection_t *sel) {
    return render_n(f, snap, env, sel, 1);
}

static json_t *render_json(const snapshot_t *snap, const env_info_t *env,
                           const device_selection_t *sel) {
    char *text = render(OUTPUT_JSON, snap, env, sel);
    json_error_t jerr;
    json_t *root = json_loads(text, 0, &jerr);
    if (!root)
        fail_msg("JSON does not parse: %s at line %d\n%s", jerr.text, jerr.line, text);
    free(text);
    return root;
}

static json_t *key(json_t *obj, const char *k) {
    assert_true(json_is_object(obj));
    json_t *v = json_object_get(obj, k);
    if (!v)
        fail_msg("missing key \"%s\"", k);
    return v;
}

static void assert_json_null(json_t *obj, const char *k) {
    if (!json_is_null(key(obj, k)))
        fail_msg("\"%s\" should be null", k);
}

static void assert_json_int(json_t *obj, const char *k, long long v) {
    json_t *x = key(obj, k);
    if (!json_is_integer(x))
        fail_msg("\"%s\" should be an integer", k);
    assert_int_equal(json_integer_value(x), v);
}

static void assert_json_real(json_t *obj, const char *k, double v) {
    json_t *x = key(obj, k);
    if (!json_is_real(x))
        fail_msg("\"%s\" should be a real", k);
    assert_float_equal(json_real_value(x), v, 1e-9);
}

static void assert_json_str(json_t *obj, const char *k, const char *v) {
    json_t *x = key(obj, k);
    if (!json_is_string(x))
        fail_msg("\"%s\" should be a string", k);
    assert_string_equal(json_string_value(x), v);
}

/* A tiny RFC 4180 reader: records of cells, quoted cells may hold , " and
 * newlines. Good enough for our own output. */
#define CSV_MAX_ROWS 64
#define CSV_MAX_COLS 64
typedef struct {
    int rows;
    int cols[CSV_MAX_ROWS];
    char *cell[CSV_MAX_ROWS][CSV_MAX_COLS];
} csv_doc_t;

static void csv_parse(const char *s, csv_doc_t *d) {
    memset(d, 0, sizeof *d);
    char cell[4096];
    size_t n = 0;
    bool quoted = false, any = false;
    for (;; s++) {
        if (quoted) {
            assert_true(*s != '\0'); /* unterminated quote */
            if (*s == '"' && s[1] == '"')
                cell[n++] = '"', s++;
            else if (*s == '"')
                quoted = false;
            else
                cell[n++] = *s;
            continue;
        }
        if (*s == '"') {
            assert_int_equal(n, 0); /* quotes only at the start of a cell */
            quoted = true;
            any = true;
        } else if (*s == ',' || *s == '\n' || *s == '\0') {
            if (*s == '\0' && !any && n == 0)
                break;
            assert_true(d->rows < CSV_MAX_ROWS && d->cols[d->rows] < CSV_MAX_COLS);
            cell[n] = '\0';
            d->cell[d->rows][d->cols[d->rows]++] = strdup(cell);
            n = 0;
            any = *s == ',';
            if (*s != ',')
                d->rows++;
            if (*s == '\0')
                break;
        } else {
            assert_true(*s != '\r');
            cell[n++] = *s;
            any = true;
        }
        assert_true(n < sizeof cell - 1);
    }
}

static void csv_free(csv_doc_t *d) {
    for (int r = 0; r < d->rows; r++)
        for (int c = 0; c < d->cols[r]; c++)
            free(d->cell[r][c]);
}

static int csv_col(const csv_doc_t *d, const char *name) {
    for (int c = 0; c < d->cols[0]; c++)
        if (strcmp(d->cell[0][c], name) == 0)
            return c;
    fail_msg("no CSV column %s", name);
    return -1;
}

static const char *csv_get(const csv_doc_t *d, int row, const char *name) {
    return d->cell[row][csv_col(d, name)];
}

/* Compares `text` with tests/golden/<name>, or rewrites the file when
 * KGS_UPDATE_GOLDEN=1. */
static void golden_check(const char *name, const char *text) {
    const char *src = getenv("KGS_SOURCE_DIR");
    if (!src)
        skip(); /* run through ctest, which sets it */
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/golden/%s", src, name);
    const char *upd = getenv("KGS_UPDATE_GOLDEN");
    if (upd && strcmp(upd, "1") == 0) {
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
        assert_int_equal(fclose(f), 0);
        return;
    }
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("golden file %s missing; run with KGS_UPDATE_GOLDEN=1", path);
    static char want[65536];
    size_t n = fread(want, 1, sizeof want - 1, f);
    fclose(f);
    want[n] = '\0';
    assert_string_equal(text, want);
}

/* ---- format names ------------------------------------------------------- */

static void test_output_format_parse_accepts_the_four_names_and_lists_them_on_error(void **st) {
    (void)st;
    output_format_t f = OUTPUT_TABLE;
    const char *names[] = {"table", "json", "jsonl", "csv"};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(output_format_parse(names[i], &f, NULL, 0), 0);
        assert_int_equal(f, (output_format_t)i);
        assert_string_equal(output_format_name(f), names[i]);
    }
    char err[256] = "";
    f = OUTPUT_CSV;
    assert_int_equal(output_format_parse("xml", &f, err, sizeof err), KGS_EINVAL);
    assert_int_equal(f, OUTPUT_CSV); /* untouched */
    assert_non_null(strstr(err, "xml"));
    assert_non_null(strstr(err, "table, json, jsonl, csv"));
    assert_int_equal(output_format_parse("JSON", &f, NULL, 0), KGS_EINVAL);
    assert_int_equal(output_format_parse(NULL, &f, NULL, 0), KGS_EINVAL);
}

static void test_output_format_parse_suggests_the_closest_name(void **st) {
    (void)st;
    output_format_t f = OUTPUT_TABLE;
    char err[256] = "";
    assert_int_equal(output_format_parse("JSON", &f, err, sizeof err), KGS_EINVAL);
    assert_string_equal(err, "parse --format 'JSON': unknown format; valid: table, json, jsonl, "
                             "csv; did you mean 'json'?");
    assert_int_equal(output_format_parse("tabel", &f, err, sizeof err), KGS_EINVAL);
    assert_non_null(strstr(err, "did you mean 'table'?"));
    assert_int_equal(output_format_parse("xml", &f, err, sizeof err), KGS_EINVAL);
    assert_null(strstr(err, "did you mean"));
}

/* ---- JSON --------------------------------------------------------------- */

static void test_output_json_has_every_field_with_units_in_names(void **st) {
    (void)st;
    snapshot_t *s = snap_two_gpus();
    env_info_t env;
    env_slurm(&env);
    json_t *root = render_json(s, &env, NULL);

    assert_json_int(root, "schema_version", 1);
    assert_json_str(root, "collected_at", "2026-11-29T17:40:01.123Z");
    assert_json_str(root, "node", "gpu-node-01");
    assert_json_str(root, "driver_version", "560.35.03");
    assert_json_str(root, "status", "ok");
    assert_json_null(root, "error");
    json_t *devs = key(root, "devices");
    assert_true(json_is_array(devs));
    assert_int_equal(json_array_size(devs), 2);

    json_t *d = json_array_get(devs, 0);
    assert_json_int(d, "index", 0);
    assert_json_str(d, "uuid", "GPU-11111111-2222-3333-4444-555555555555");
    assert_json_str(d, "name", "NVIDIA H100 80GB HBM3");
    assert_json_str(d, "pci_bus_id", "00000000:17:00.0");
    assert_json_str(d, "vendor", "nvidia");
    assert_json_str(d, "health", "ok");
    assert_json_null(d, "health_error");
    assert_json_int(d, "gpu_utilization_percent", 87);
    assert_json_int(d, "memory_utilization_percent", 45);
    assert_json_int(d, "memory_used_bytes", (long long)(40 * GIB));
    assert_json_int(d, "memory_total_bytes", (long long)(80 * GIB));
    assert_json_int(d, "memory_reserved_bytes", 512ll * 1024 * 1024);
    assert_json_real(d, "memory_used_percent", 50.0);
    assert_json_int(d, "temperature_celsius", 65);
    assert_json_real(d, "power_draw_watts", 312.0);
    assert_json_real(d, "power_limit_watts", 700.0);
    assert_json_real(d, "energy_joules", 123456.789);
    assert_json_int(d, "pcie_tx_bytes_per_second", 1200000000);
    assert_json_int(d, "pcie_rx_bytes_per_second", 350000);
    assert_json_real(d, "nvlink_tx_bytes_per_second", 25e9);
    assert_json_real(d, "nvlink_rx_bytes_per_second", 1.5e6);
    assert_json_int(d, "sm_clock_mhz", 1980);
    json_t *r = key(d, "clock_event_reasons");
    assert_true(json_is_array(r));
    assert_int_equal(json_array_size(r), 3);
    assert_string_equal(json_string_value(json_array_get(r, 0)), "gpu_idle");
    assert_string_equal(json_string_value(json_array_get(r, 1)), "sw_power_cap");
    assert_string_equal(json_string_value(json_array_get(r, 2)), "0x400");
    assert_json_real(d, "sm_active_percent", 71.3);
    assert_json_real(d, "sm_occupancy_percent", 42.5);
    assert_json_real(d, "dram_bandwidth_utilization_percent", 55.25);
    assert_int_equal(json_object_size(key(d, "field_errors")), 0);
    assert_true(json_is_false(key(d, "mig_enabled")));
    assert_true(json_is_array(key(d, "mig_instances")));
    assert_int_equal(json_array_size(key(d, "mig_instances")), 0);

    json_decref(root);
    snapshot_unref(s);
}

static void test_output_json_prints_reals_without_noise_or_exponent(void **st) {
    (void)st;
    snapshot_t *s = snap_two_gpus();
    char *text = render(OUTPUT_JSON, s, NULL, NULL);
    assert_non_null(strstr(text, "\"power_draw_watts\": 312.0,"));
    assert_non_null(strstr(text, "\"sm_active_percent\": 71.3,"));
    assert_non_null(strstr(text, "\"nvlink_tx_bytes_per_second\": 25000000000.0,"));
    assert_non_null(strstr(text, "\"energy_joules\": 123456.789,"));
    assert_non_null(strstr(text, "\n  \"schema_version\": 1,\n")); /* 2-space indent */
    free(text);
    snapshot_unref(s);
}

static void test_output_json_absent_fields_are_null_never_zero(void **st) {
    (void)st;
    snapshot_t *s = snap_two_gpus();
    json_t *root = render_json(s, NULL, NULL);
    json_t *d = json_array_get(key(root, "devices"), 1);
    assert_json_int(d, "gpu_utilization_percent", 0); /* present, really 0 */
    assert_json_int(d, "temperature_celsius", 31);
    assert_json_real(d, "memory_used_percent", 300.0 / (16 * 1024) * 100);
    const char *absent[] = {"memory_utilization_percent",
                            "memory_reserved_bytes",
                            "power_draw_watts",
                            "power_limit_watts",
                            "energy_joules",
                            "pcie_tx_bytes_per_second",
                            "pcie_rx_bytes_per_second",
                            "nvlink_tx_bytes_per_second",
                            "nvlink_rx_bytes_per_second",
                            "sm_clock_mhz",
                            "clock_event_reasons",
                            "sm_active_percent",
                            "sm_occupancy_percent",
                            "dram_bandwidth_utilization_percent"};
    for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++)
        assert_json_null(d, absent[i]);
    /* NOT_SUPPORTED is absence, not an error; the others are named. */
    json_t *errs = key(d, "field_errors");
    assert_int_equal(json_object_size(errs), 2);
    assert_json_str(errs, "sm_active_percent", "FUNCTION_NOT_FOUND");
    assert_json_str(errs, "pcie_tx_bytes_per_second", "UNKNOWN");
    assert_null(json_object_get(errs, "power_draw_watts"));
    json_decref(root);
    snapshot_unref(s);
}

static void test_output_json_environment_block_with_unknowns_as_null(void **st) {
    (void)st;
    snapshot_t *s = snap_two_gpus();
    env_info_t env;
    env_slurm(&env);
    json_t *root = render_json(s, &env, NULL);
    json_t *e = key(root, "environment");
    assert_json_str(e, "orchestrator", "slurm");
    assert_json_str(e, "node", "gpu-node-01");
    assert_json_str(e, "job_id", "1234");
    assert_json_str(e, "job_name", "train");
    assert_json_int(e, "task_rank", 0);
    assert_json_int(e, "local_rank", 0);
    assert_json_int(e, "num_nodes", 2);
    assert_json_int(e, "num_tasks", 8);
    assert_json_str(e, "partition", "gpu");
    assert_json_str(e, "nodelist", "gpu-node-[01-02]");
    assert_json_null(e, "pod_name");
    assert_json_null(e, "namespace");
    assert_json_null(e, "flux_uri");
    assert_json_str(e, "visible_devices_var", "CUDA_VISIBLE_DEVICES");
    assert_json_str(e, "visible_devices", "0,1");
    json_decref(root);

    /* Standalone: no job, ranks unknown (-1) -> null; node from the env. */
    memset(&env, 0, sizeof env);
    env.orchestrator = ENV_STANDALONE;
    env.task_rank = env.local_rank = env.num_nodes = env.num_tasks = -1;
    root = render_json(s, &env, NULL);
    e = key(root, "environment");
    assert_json_str(e, "orchestrator", "standalone");
    assert_json_null(e, "job_id");
    assert_json_null(e, "task_rank");
    assert_json_null(e, "num_tasks");
    assert_json_null(root, "node"); /* neither env nor NVML knows it */
    json_decref(root);
    snapshot_unref(s);
}

static void test_output_json_without_env_keeps_every_key_null_and_node_from_nvml(void **st) {
    (void)st;
    snapshot_t *s = snap_two_gpus();
    strcpy(s->node_name, "nvml-host");
    json_t *root = render_json(s, NULL, NULL);
    assert_json_str(root, "node", "nvml-host");
    json_t *e = key(root, "environment");
    const char *keys[] = {"orchestrator",     "node",
                          "job_id",           "job_name",
                          "task_rank",        "local_rank",
                          "num_nodes",        "num_tasks",
                          "partition",        "nodelist",
                          "pod_name",         "namespace",
                          "flux_uri",         "visible_devices_var",
                          "visible_devices",  "cuda_visible_devices",
                          "cuda_device_order"};
    assert_int_equal(json_object_size(e), sizeof keys / sizeof keys[0]);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        assert_json_null(e, keys[i]);
    json_decref(root);
    snapshot_unref(s);
}

static void test_output_json_escapes_and_repairs_untrusted_strings(void **st) {
    (void)st;
    snapshot_t *s = snap_two_gpus();
    strcpy(s->gpus[0].name, "bad\xff utf8 \"q\"\n");
    env_info_t env;
    env_slurm(&env);
    strcpy(env.job_name, "a \"quoted\"\tname\\");
    json_t *root = render_json(s, &env, NULL);
    assert_json_str(key(root, "environment"), "job_name", "a \"quoted\"\tname\\");
    assert_json_str(json_array_get(key(root, "devices"), 0), "name",
                    "bad\xEF\xBF\xBD utf8 \"q\"\n");
    json_decref(root);
    snapshot_unref(s);
}

static void test_output_json_nests_mig_instances_and_reports_lost_gpu(void **st) {
    (void)st;
    snapshot_t *s = snap_mig();
    json_t *root = render_json(s, NULL, NULL);
    json_t *devs = key(root, "devices");
    assert_int_equal(json_array_size(devs), 2);
    json_t *d = json_array_get(devs, 0);
    assert_true(json_is_true(key(d, "mig_enabled")));
    json_t *migs = key(d, "mig_instances");
    assert_int_equal(json_array_size(migs), 2);
    json_t *m = json_array_get(migs, 0);
    assert_json_str(m, "uuid", "MIG-bbbbbbbb-0000-0000-0000-000000000001");
    assert_json_str(m, "name", "NVIDIA A100-SXM4-80GB MIG 3g.40gb");
    assert_json_str(m, "profile", "3g.40gb");
    assert_json_int(m, "gpu_instance_id", 1);
    assert_json_int(m, "compute_instance_id", 0);
    assert_json_int(m, "memory_used_bytes", (long long)(10 * GIB));
    assert_json_int(m, "memory_total_bytes", (long long)(40 * GIB));
    assert_json_real(m, "memory_used_percent", 25.0);
    assert_json_real(m, "sm_active_percent", 33.5);
    assert_json_null(m, "sm_occupancy_percent");
    assert_json_null(m, "dram_bandwidth_utilization_percent");
    m = json_array_get(migs, 1);
    assert_json_null(m, "memory_used_bytes");
    assert_json_null(m, "memory_used_percent");
    assert_json_int(m, "gpu_instance_id", 13);

    d = json_array_get(devs, 1);
    assert_json_null(d, "vendor"); /* nobody said: null, never a guess */
    assert_json_str(d, "health", "lost");
    assert_json_str(d, "health_error", "GPU_IS_LOST");
    assert_json_null(d, "memory_used_bytes");
    assert_json_null(d, "temperature_celsius");
    assert_int_equal(json_array_size(key(d, "mig_instances")), 0);
    json_decref(root);
    snapshot_unref(s);
}

static void test_output_json_nvml_down_has_status_error_and_empty_devices(void **st) {
    (void)st;
    snapshot_t *s = snap_down();
    json_t *root = render_json(s, NULL, NULL);
    assert_json_str(root, "status", "nvml_down");
    assert_json_str(root, "error", "nvmlInit_v2: Driver Not Loaded");
    assert_true(json_is_array(key(root, "devices"))); /* never null */
    assert_int_equal(json_array_size(key(root, "devices")), 0);
    assert_json_null(root, "driver_version");
    json_decref(root);
    snapshot_unref(s);
}

static void test_output_jsonl_writes_one_compact_line_per_sample(void **st) {
    (void)st;
    snapshot_t *s = snap_mig();
    env_info_t env;
    env_slurm(&env);
    char *text = render_n(OUTPUT_JSONL, s, &env, NULL, 3);
    size_t len = strlen(text);
    assert_true(len > 0 && text[len - 1] == '\n');
    int lines = 0;
    for (char *line = text, *nl; (nl = strchr(line, '\n')) != NULL; line = nl + 1) {
        *nl = '\0';
        json_error_t jerr;
        json_t *root = json_loads(line, 0, &jerr);
        if (!root)
            fail_msg("line %d does not parse: %s", lines + 1, jerr.text);
        assert_json_int(root, "schema_version", 1);
        assert_int_equal(json_array_size(key(root, "devices")), 2);
        json_decref(root);
        lines++;
    }
    assert_int_equal(lines, 3);
    free(text);
    snapshot_unref(s);
}

/* ---- CSV ---------------------------------------------------------------- */

static void test_output_csv_writes_header_once_across_samples(void **st) {
    (void)st;
    snapshot_t *s = snap_two_gpus();
    char *text = render_n(OUTPUT_CSV, s, NULL, NULL, 2);
    csv_doc_t d;
    csv_parse(text, &d);
    assert_int_equal(d.rows, 1 + 2 * 2);
    int headers = 0;
    for (int r = 0; r < d.rows; r++)
        headers += strcmp(d.cell[r][0], "collected_at") == 0;
    assert_int_equal(headers, 1);
    assert_string_equal(d.cell[0][0], "collected_at");
    csv_free(&d);
    free(text);
    snapshot_unref(s);
}

static void test_output_csv_rows_match_header_and_quote_commas(void **st) {
    (void)st;
    snapshot_t *s = snap_two_gpus();
    env_info_t env;
    env_slurm(&env);
    char *text = render(OUTPUT_CSV, s, &env, NULL);
    const char *want_header =
        "collected_at,orchestrator,node,job_id,task_rank,driver_version,index,cuda_index,"
        "cuda_visible,uuid,name,"
        "pci_bus_id,health,is_mig_instance,parent_index,mig_profile,gpu_instance_id,"
        "compute_instance_id,gpu_utilization_percent,memory_utilization_percent,"
        "memory_used_bytes,memory_total_bytes,memory_reserved_bytes,memory_used_percent,"
        "temperature_celsius,power_draw_watts,power_limit_watts,energy_joules,"
        "pcie_tx_bytes_per_second,pcie_rx_bytes_per_second,nvlink_tx_bytes_per_second,"
        "nvlink_rx_bytes_per_second,sm_clock_mhz,clock_event_reasons,sm_active_percent,"
        "sm_occupancy_percent,dram_bandwidth_utilization_percent,process_count,"
        "processes_error\n";
    assert_memory_equal(text, want_header, strlen(want_header));
    assert_non_null(strstr(text, ",\"Tesla, \"\"Special\"\" Edition\","));

    csv_doc_t d;
    csv_parse(text, &d);
    assert_int_equal(d.rows, 3);
    for (int r = 1; r < d.rows; r++)
        assert_int_equal(d.cols[r], d.cols[0]);
    assert_string_equal(csv_get(&d, 1, "collected_at"), "2026-11-29T17:40:01.123Z");
    assert_string_equal(csv_get(&d, 1, "orchestrator"), "slurm");
    assert_string_equal(csv_get(&d, 1, "task_rank"), "0");
    assert_string_equal(csv_get(&d, 1, "is_mig_instance"), "false");
    assert_string_equal(csv_get(&d, 1, "parent_index"), "");
    assert_string_equal(csv_get(&d, 1, "power_draw_watts"), "312.0");
    assert_string_equal(csv_get(&d, 1, "memory_used_percent"), "50.0");
    assert_string_equal(csv_get(&d, 1, "clock_event_reasons"), "gpu_idle|sw_power_cap|0x400");
    assert_string_equal(csv_get(&d, 2, "name"), "Tesla, \"Special\" Edition");
    assert_string_equal(csv_get(&d, 2, "gpu_utilization_percent"), "0");
    assert_string_equal(csv_get(&d, 2, "power_draw_watts"), ""); /* absent */
    assert_string_equal(csv_get(&d, 2, "clock_event_reasons"), "");
    assert_string_equal(csv_get(&d, 2, "sm_clock_mhz"), "");
    csv_free(&d);
    free(text);
    snapshot_unref(s);
}

static void test_output_csv_mig_rows_carry_parent_index_and_ids(void **st) {
    (void)st;
    snapshot_t *s = snap_mig();
    char *text = render(OUTPUT_CSV, s, NULL, NULL);
    csv_doc_t d;
    csv_parse(text, &d);
    assert_int_equal(d.rows, 1 + 4); /* GPU 0, its 2 instances, GPU 1 */
    for (int r = 1; r < d.rows; r++)
        assert_int_equal(d.cols[r], d.cols[0]);
    assert_string_equal(csv_get(&d, 1, "is_mig_instance"), "false");
    assert_string_equal(csv_get(&d, 2, "is_mig_instance"), "true");
    assert_string_equal(csv_get(&d, 2, "index"), "0");
    assert_string_equal(csv_get(&d, 2, "parent_index"), "0");
    assert_string_equal(csv_get(&d, 2, "uuid"), "MIG-bbbbbbbb-0000-0000-0000-000000000001");
    assert_string_equal(csv_get(&d, 2, "mig_profile"), "3g.40gb");
    assert_string_equal(csv_get(&d, 2, "gpu_instance_id"), "1");
    assert_string_equal(csv_get(&d, 2, "compute_instance_id"), "0");
    assert_string_equal(csv_get(&d, 2, "memory_used_percent"), "25.0");
    assert_string_equal(csv_get(&d, 2, "sm_active_percent"), "33.5");
    assert_string_equal(csv_get(&d, 2, "temperature_celsius"), ""); /* not per instance */
    assert_string_equal(csv_get(&d, 3, "gpu_instance_id"), "13");
    assert_string_equal(csv_get(&d, 3, "memory_used_bytes"), "");
    assert_string_equal(csv_get(&d, 4, "health"), "lost");
    assert_string_equal(csv_get(&d, 4, "memory_used_bytes"), "");
    csv_free(&d);
    free(text);
    snapshot_unref(s);
}

static void test_output_csv_nvml_down_writes_header_only(void **st) {
    (void)st;
    snapshot_t *s = snap_down();
    char *text = render_n(OUTPUT_CSV, s, NULL, NULL, 2);
    csv_doc_t d;
    csv_parse(text, &d);
    assert_int_equal(d.rows, 1);
    csv_free(&d);
    free(text);
    snapshot_unref(s);
}

/* ---- table -------------------------------------------------------------- */

static void test_output_table_two_gpus_matches_golden(void **st) {
    (void)st;
    snapshot_t *s = snap_two_gpus();
    env_info_t env;
    env_slurm(&env);
    char *text = render(OUTPUT_TABLE, s, &env, NULL);
    golden_check("table_two_gpus.txt", text);
    free(text);
    snapshot_unref(s);
}

static void test_output_table_mig_and_lost_gpu_matches_golden(void **st) {
    (void)st;
    snapshot_t *s = snap_mig();
    env_info_t env;
    memset(&env, 0, sizeof env);
    env.orchestrator = ENV_KUBERNETES;
    strcpy(env.node, "k8s-gpu-7");
    strcpy(env.pod_name, "trainer-0");
    strcpy(env.namespace_, "ml");
    env.task_rank = env.local_rank = env.num_nodes = env.num_tasks = -1;
    char *text = render(OUTPUT_TABLE, s, &env, NULL);
    golden_check("table_mig.txt", text);
    free(text);
    snapshot_unref(s);
}

static void test_output_table_nvml_down_prints_error_not_table(void **st) {
    (void)st;
    snapshot_t *s = snap_down();
    env_info_t env;
    env_slurm(&env);
    char *text = render(OUTPUT_TABLE, s, &env, NULL);
    golden_check("table_nvml_down.txt", text);
    assert_null(strstr(text, "GPU  Name"));
    free(text);
    snapshot_unref(s);
}

/* Splits one line into display columns: cols[i] points at the first byte
 * of display column i. Returns the number of columns. */
static size_t line_columns(const char *line, const char *end, const char **cols, size_t max) {
    size_t n = 0;
    for (const char *p = line; p < end && n < max; p++)
        if (((unsigned char)*p & 0xC0u) != 0x80u)
            cols[n++] = p;
    return n;
}

/* Right-aligned columns end at the same display column as their header on
 * every row, although the header holds a two-byte "°" and MIG rows a
 * three-byte "└": widths are counted in display columns, not bytes. */
static void test_output_table_columns_align_by_display_width(void **st) {
    (void)st;
    snapshot_t *s = snap_mig();
    strcpy(s->gpus[1].name, "Ünïcödé GPU with a very long name");
    char *text = render(OUTPUT_TABLE, s, NULL, NULL);
    const char *hdr = strstr(text, "GPU  CUDA  Name");
    assert_non_null(hdr);
    const char *hdr_end = strchr(hdr, '\n');
    const char *labels[] = {"Util%",
                            "MemUtil%",
                            "MemUsed",
                            "MemTotal",
                            "Mem%",
                            "Temp\xC2\xB0"
                            "C",
                            "Power W",
                            "Limit W",
                            "SMAct%",
                            "PCIe TX",
                            "PCIe RX",
                            "NVLink TX",
                            "NVLink RX"};
    enum { NLAB = sizeof labels / sizeof labels[0] };
    size_t ends[NLAB];
    const char *cols[512];
    size_t ncols = line_columns(hdr, hdr_end, cols, 512);
    const char *from = hdr;
    for (size_t i = 0; i < NLAB; i++) {
        const char *at = strstr(from, labels[i]);
        assert_non_null(at);
        from = at + strlen(labels[i]);
        size_t c = 0;
        while (c < ncols && cols[c] < from)
            c++;
        ends[i] = c; /* display column just past the label */
    }
    int gpu_rows = 0, mig_rows = 0;
    for (const char *line = hdr_end + 1, *nl; (nl = strchr(line, '\n')) != NULL; line = nl + 1) {
        bool gpu = *line >= '0' && *line <= '9';
        bool mig = strstr(line, "\xE2\x94\x94") != NULL && strstr(line, "\xE2\x94\x94") < nl;
        if (!gpu && !mig)
            continue;
        size_t n = line_columns(line, nl, cols, 512);
        for (size_t i = 0; i < NLAB; i++) {
            bool mig_col = i == 2 || i == 3 || i == 4 || i == 8; /* memory, SM active */
            if (mig && !mig_col)
                continue;
            assert_true(ends[i] <= n);
            assert_true(*cols[ends[i] - 1] != ' ');
            assert_true(ends[i] == n || *cols[ends[i]] == ' ');
        }
        gpu_rows += gpu;
        mig_rows += mig;
    }
    assert_int_equal(gpu_rows, 2);
    assert_int_equal(mig_rows, 2);
    assert_non_null(strstr(text, "Ünïcödé GPU with a ve…"));
    free(text);
    snapshot_unref(s);
}

/* ---- selection ---------------------------------------------------------- */

static void test_output_selection_of_one_gpu_prints_only_that_gpu(void **st) {
    (void)st;
    snapshot_t *s = snap_two_gpus();
    device_selection_t sel = {.all_gpus = false, .gpu_count = 1, .gpu_index = {1}};
    json_t *root = render_json(s, NULL, &sel);
    json_t *devs = key(root, "devices");
    assert_int_equal(json_array_size(devs), 1);
    assert_json_int(json_array_get(devs, 0), "index", 1);
    json_decref(root);

    char *text = render(OUTPUT_CSV, s, NULL, &sel);
    csv_doc_t d;
    csv_parse(text, &d);
    assert_int_equal(d.rows, 2);
    assert_string_equal(csv_get(&d, 1, "index"), "1");
    csv_free(&d);
    free(text);

    text = render(OUTPUT_TABLE, s, NULL, &sel);
    assert_null(strstr(text, "H100"));
    assert_non_null(strstr(text, "Tesla"));
    free(text);

    device_selection_t none = {.all_gpus = false};
    root = render_json(s, NULL, &none);
    assert_true(json_is_array(key(root, "devices")));
    assert_int_equal(json_array_size(key(root, "devices")), 0);
    json_decref(root);
    text = render(OUTPUT_TABLE, s, NULL, &none);
    assert_non_null(strstr(text, "No GPU selected."));
    free(text);
    snapshot_unref(s);
}

static void test_output_selection_of_lone_mig_instance_shows_parent_with_only_it(void **st) {
    (void)st;
    snapshot_t *s = snap_mig();
    device_selection_t sel = {.all_gpus = false, .mig_count = 1, .mig_slot = {1}};
    json_t *root = render_json(s, NULL, &sel);
    json_t *devs = key(root, "devices");
    assert_int_equal(json_array_size(devs), 1);
    json_t *d = json_array_get(devs, 0);
    assert_json_int(d, "index", 0);
    assert_json_int(d, "temperature_celsius", 40); /* the parent's context */
    json_t *migs = key(d, "mig_instances");
    assert_int_equal(json_array_size(migs), 1);
    assert_json_str(json_array_get(migs, 0), "profile", "1g.10gb");
    json_decref(root);

    char *text = render(OUTPUT_CSV, s, NULL, &sel);
    csv_doc_t d2;
    csv_parse(text, &d2);
    assert_int_equal(d2.rows, 3); /* header, parent, the instance */
    assert_string_equal(csv_get(&d2, 2, "mig_profile"), "1g.10gb");
    csv_free(&d2);
    free(text);

    text = render(OUTPUT_TABLE, s, NULL, &sel);
    assert_null(strstr(text, "3g.40gb"));
    assert_non_null(strstr(text, "1g.10gb"));
    free(text);
    snapshot_unref(s);
}

/* ---- CUDA index and processes ----------------------------------------- */

static void test_output_json_carries_cuda_index_visibility_and_note_when_needed(void **st) {
    (void)st;
    snapshot_t *s = snap_mig(); /* GPU 0 with two MIG instances, GPU 1 */
    cuda_index_map_t m;
    cuda_map_fill(&m, s, CUDA_INDEX_HIDDEN);
    m.mig[1] = (cuda_index_t){CUDA_INDEX_KNOWN, 0};
    m.gpu[1] = (cuda_index_t){CUDA_INDEX_UNKNOWN, 0};
    strcpy(m.note, "GPU 1 is lost: unknown");
    output_extra_t x = {.cuda = &m};
    char *text = render_x(OUTPUT_JSON, s, NULL, NULL, &x, false, 1);
    json_t *root = json_loads(text, 0, NULL);
    assert_non_null(root);
    json_t *d0 = json_array_get(key(root, "devices"), 0),
           *d1 = json_array_get(key(root, "devices"), 1);
    assert_json_null(d0, "cuda_index");
    assert_true(json_is_false(key(d0, "cuda_visible")));
    json_t *m0 = json_array_get(key(d0, "mig_instances"), 0);
    json_t *m1 = json_array_get(key(d0, "mig_instances"), 1);
    assert_json_null(m0, "cuda_index");
    assert_json_int(m1, "cuda_index", 0);
    assert_true(json_is_true(key(m1, "cuda_visible")));
    assert_json_null(d1, "cuda_index");
    assert_json_null(d1, "cuda_visible"); /* unknown, not false */
    assert_json_str(root, "cuda_index_note", "GPU 1 is lost: unknown");
    json_decref(root);
    free(text);

    /* Only GPU 0 shown: nothing unknown, no note. */
    device_selection_t sel = {.gpu_count = 1, .gpu_index = {0}};
    text = render_x(OUTPUT_JSON, s, NULL, &sel, &x, false, 1);
    root = json_loads(text, 0, NULL);
    assert_json_null(root, "cuda_index_note");
    json_decref(root);
    free(text);
    /* Without a map every index is unknown. */
    root = render_json(s, NULL, NULL);
    d0 = json_array_get(key(root, "devices"), 0);
    assert_json_null(d0, "cuda_index");
    assert_json_null(d0, "cuda_visible");
    assert_json_null(root, "cuda_index_note");
    json_decref(root);
    cuda_index_map_deinit(&m);
    snapshot_unref(s);
}

static void test_output_json_lists_processes_and_tells_absent_from_none(void **st) {
    (void)st;
    snapshot_t *s = snap_procs();
    proc_info_t info[2];
    memset(info, 0, sizeof info);
    info[0].comm_ok = true;
    strcpy(info[0].comm, "python3");
    info[0].pod_ok = true;
    strcpy(info[0].pod_uid, "0f6c7a52-59b6-4d0e-9d1b-3c2f1e0a9b87");
    info[1].pod_ok = true; /* read: in no pod */
    output_extra_t x = {.procs = info};
    char *text = render_x(OUTPUT_JSON, s, NULL, NULL, &x, false, 1);
    json_t *root = json_loads(text, 0, NULL);
    assert_non_null(root);
    json_t *d0 = json_array_get(key(root, "devices"), 0),
           *d1 = json_array_get(key(root, "devices"), 1);
    json_t *procs = key(d0, "processes");
    assert_int_equal(json_array_size(procs), 2);
    assert_json_null(d0, "processes_error");
    assert_json_int(d0, "processes_dropped", 1);
    json_t *p = json_array_get(procs, 0);
    assert_json_int(p, "pid", 4242);
    assert_json_str(p, "command", "python3");
    assert_json_int(p, "used_memory_bytes", (long long)(2 * GIB));
    assert_json_real(p, "sm_utilization_percent", 35.5);
    assert_json_real(p, "memory_utilization_percent", 7.0);
    assert_json_str(p, "pod_uid", "0f6c7a52-59b6-4d0e-9d1b-3c2f1e0a9b87");
    assert_json_null(p, "container_id");
    p = json_array_get(procs, 1);
    assert_json_null(p, "command");
    assert_json_null(p, "sm_utilization_percent"); /* absent, never 0 */
    assert_json_null(p, "pod_uid");
    assert_true(json_is_null(key(d1, "processes")));
    assert_json_str(d1, "processes_error", "NOT_SUPPORTED");
    assert_json_null(d1, "processes_dropped");
    assert_json_null(root, "process_info_note");
    json_decref(root);
    free(text);

    /* The agent's attribution wins; a lookup that is off leaves a note. */
    s->procs_attributed = true;
    strcpy(s->procs[1].pod_uid, "11111111-2222-3333-4444-555555555555");
    x.procs = NULL;
    x.procs_note = "gpu-metrics runs in PID namespace pid:[4026532000], not the host's";
    root = render_json(s, NULL, NULL);
    json_decref(root);
    text = render_x(OUTPUT_JSONL, s, NULL, NULL, &x, false, 1);
    root = json_loads(text, 0, NULL);
    d0 = json_array_get(key(root, "devices"), 0);
    p = json_array_get(key(d0, "processes"), 1);
    assert_json_str(p, "pod_uid", "11111111-2222-3333-4444-555555555555");
    assert_json_null(json_array_get(key(d0, "processes"), 0), "command");
    assert_json_str(root, "process_info_note", x.procs_note);
    json_decref(root);
    free(text);

    /* An empty list is [], not null. */
    s->gpus[0].procs.count = 0;
    s->gpus[0].procs.dropped = 0;
    root = render_json(s, NULL, NULL);
    d0 = json_array_get(key(root, "devices"), 0);
    assert_true(json_is_array(key(d0, "processes")));
    assert_int_equal(json_array_size(key(d0, "processes")), 0);
    assert_json_int(d0, "processes_dropped", 0);
    json_decref(root);
    snapshot_unref(s);
}

static void test_output_json_processes_of_mig_and_lost_gpus(void **st) {
    (void)st;
    snapshot_t *s = snap_mig();
    s->mig[0].procs.list_ok = true; /* running nothing */
    json_t *root = render_json(s, NULL, NULL);
    json_t *d0 = json_array_get(key(root, "devices"), 0),
           *d1 = json_array_get(key(root, "devices"), 1);
    assert_json_str(d0, "processes_error", "MIG_ENABLED");
    json_t *m0 = json_array_get(key(d0, "mig_instances"), 0);
    json_t *m1 = json_array_get(key(d0, "mig_instances"), 1);
    assert_int_equal(json_array_size(key(m0, "processes")), 0);
    assert_json_null(m0, "processes_error");
    assert_true(json_is_null(key(m1, "processes")));
    assert_json_str(m1, "processes_error", "FUNCTION_NOT_FOUND");
    assert_json_str(d1, "processes_error", "GPU_IS_LOST");
    json_decref(root);
    snapshot_unref(s);
}

static void test_output_csv_device_rows_carry_cuda_index_and_process_count(void **st) {
    (void)st;
    snapshot_t *s = snap_procs();
    cuda_index_map_t m;
    cuda_map_fill(&m, s, CUDA_INDEX_KNOWN);
    m.gpu[0].index = 1;
    m.gpu[1] = (cuda_index_t){CUDA_INDEX_VISIBLE, 0};
    output_extra_t x = {.cuda = &m};
    char *text = render_x(OUTPUT_CSV, s, NULL, NULL, &x, false, 1);
    csv_doc_t d;
    csv_parse(text, &d);
    assert_int_equal(d.rows, 3);
    assert_string_equal(csv_get(&d, 1, "cuda_index"), "1");
    assert_string_equal(csv_get(&d, 1, "cuda_visible"), "true");
    assert_string_equal(csv_get(&d, 1, "process_count"), "3"); /* 2 listed + 1 dropped */
    assert_string_equal(csv_get(&d, 1, "processes_error"), "");
    assert_string_equal(csv_get(&d, 2, "cuda_index"), "");
    assert_string_equal(csv_get(&d, 2, "cuda_visible"), "true");
    assert_string_equal(csv_get(&d, 2, "process_count"), ""); /* absent, not 0 */
    assert_string_equal(csv_get(&d, 2, "processes_error"), "NOT_SUPPORTED");
    csv_free(&d);
    free(text);
    cuda_index_map_deinit(&m);
    snapshot_unref(s);
}

static void test_output_csv_processes_writes_one_row_per_process(void **st) {
    (void)st;
    snapshot_t *s = snap_procs();
    proc_info_t info[2];
    memset(info, 0, sizeof info);
    info[1].comm_ok = true;
    strcpy(info[1].comm, "a,b");
    output_extra_t x = {.procs = info};
    char *text = render_x(OUTPUT_CSV, s, NULL, NULL, &x, true, 2);
    const char *want_header =
        "collected_at,orchestrator,node,job_id,task_rank,driver_version,index,cuda_index,uuid,"
        "is_mig_instance,gpu_instance_id,compute_instance_id,pid,command,used_memory_bytes,"
        "sm_utilization_percent,memory_utilization_percent,pod_uid,container_id\n";
    assert_memory_equal(text, want_header, strlen(want_header));
    csv_doc_t d;
    csv_parse(text, &d);
    assert_int_equal(d.rows, 1 + 2 * 2); /* header once, two processes per sample */
    for (int r = 1; r < d.rows; r++)
        assert_int_equal(d.cols[r], d.cols[0]);
    assert_string_equal(csv_get(&d, 1, "pid"), "4242");
    assert_string_equal(csv_get(&d, 1, "uuid"), "GPU-11111111-2222-3333-4444-555555555555");
    assert_string_equal(csv_get(&d, 1, "is_mig_instance"), "false");
    assert_string_equal(csv_get(&d, 1, "sm_utilization_percent"), "35.5");
    assert_string_equal(csv_get(&d, 1, "used_memory_bytes"), "2147483648");
    assert_string_equal(csv_get(&d, 1, "command"), "");
    assert_string_equal(csv_get(&d, 2, "command"), "a,b");
    assert_string_equal(csv_get(&d, 2, "sm_utilization_percent"), "");
    csv_free(&d);
    free(text);
    snapshot_unref(s);
}

static void test_output_table_processes_matches_golden(void **st) {
    (void)st;
    snapshot_t *s = snap_procs();
    env_info_t env;
    env_slurm(&env);
    cuda_index_map_t m;
    cuda_map_fill(&m, s, CUDA_INDEX_KNOWN);
    m.gpu[1] = (cuda_index_t){CUDA_INDEX_VISIBLE, 0};
    strcpy(m.note, "CUDA_DEVICE_ORDER is unset (FASTEST_FIRST): the order is not documented");
    proc_info_t info[2];
    memset(info, 0, sizeof info);
    info[0].comm_ok = true;
    strcpy(info[0].comm, "python3\x1b[2J"); /* a process names itself: sanitised */
    output_extra_t x = {.cuda = &m, .procs = info, .procs_note = NULL};
    char *text = render_x(OUTPUT_TABLE, s, &env, NULL, &x, true, 1);
    golden_check("table_processes.txt", text);
    assert_null(strchr(text, '\x1b'));
    free(text);
    /* Without --processes the table has no process rows, but the note stays. */
    text = render_x(OUTPUT_TABLE, s, &env, NULL, &x, false, 1);
    assert_null(strstr(text, "pid 4242"));
    assert_non_null(strstr(text, "CUDA index unknown (-): CUDA_DEVICE_ORDER is unset"));
    free(text);
    cuda_index_map_deinit(&m);
    snapshot_unref(s);
}

/* ---- write errors ------------------------------------------------------- */

static void test_output_write_to_full_device_returns_eio(void **st) {
    (void)st;
    snapshot_t *s = snap_mig();
    for (int f = OUTPUT_TABLE; f <= OUTPUT_CSV; f++) {
        FILE *out = fopen("/dev/full", "w");
        if (!out)
            skip();
        output_writer_t w;
        output_writer_init(&w, (output_format_t)f);
        assert_int_equal(output_write_sample(&w, out, s, NULL, NULL, NULL), KGS_EIO);
        fclose(out);
    }
    snapshot_unref(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_output_format_parse_accepts_the_four_names_and_lists_them_on_error),
        cmocka_unit_test(test_output_format_parse_suggests_the_closest_name),
        cmocka_unit_test(test_output_json_has_every_field_with_units_in_names),
        cmocka_unit_test(test_output_json_prints_reals_without_noise_or_exponent),
        cmocka_unit_test(test_output_json_absent_fields_are_null_never_zero),
        cmocka_unit_test(test_output_json_environment_block_with_unknowns_as_null),
        cmocka_unit_test(test_output_json_without_env_keeps_every_key_null_and_node_from_nvml),
        cmocka_unit_test(test_output_json_escapes_and_repairs_untrusted_strings),
        cmocka_unit_test(test_output_json_nests_mig_instances_and_reports_lost_gpu),
        cmocka_unit_test(test_output_json_nvml_down_has_status_error_and_empty_devices),
        cmocka_unit_test(test_output_jsonl_writes_one_compact_line_per_sample),
        cmocka_unit_test(test_output_csv_writes_header_once_across_samples),
        cmocka_unit_test(test_output_csv_rows_match_header_and_quote_commas),
        cmocka_unit_test(test_output_csv_mig_rows_carry_parent_index_and_ids),
        cmocka_unit_test(test_output_csv_nvml_down_writes_header_only),
        cmocka_unit_test(test_output_table_two_gpus_matches_golden),
        cmocka_unit_test(test_output_table_mig_and_lost_gpu_matches_golden),
        cmocka_unit_test(test_output_table_nvml_down_prints_error_not_table),
        cmocka_unit_test(test_output_table_columns_align_by_display_width),
        cmocka_unit_test(test_output_selection_of_one_gpu_prints_only_that_gpu),
        cmocka_unit_test(test_output_selection_of_lone_mig_instance_shows_parent_with_only_it),
        cmocka_unit_test(test_output_write_to_full_device_returns_eio),
        cmocka_unit_test(test_output_json_carries_cuda_index_visibility_and_note_when_needed),
        cmocka_unit_test(test_output_json_lists_processes_and_tells_absent_from_none),
        cmocka_unit_test(test_output_json_processes_of_mig_and_lost_gpus),
        cmocka_unit_test(test_output_csv_device_rows_carry_cuda_index_and_process_count),
        cmocka_unit_test(test_output_csv_processes_writes_one_row_per_process),
        cmocka_unit_test(test_output_table_processes_matches_golden),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
