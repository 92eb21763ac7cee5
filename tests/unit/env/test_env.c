/* test_env.c - orchestrator detection, env kinds and --output templates. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/err.h"
#include "env/env.h"

/* A table of variables; a NULL name ends it. A value of "" is set-but-empty. */
typedef struct {
    const char *name;
    const char *value;
} var_t;

static const char *table_get(const char *name, void *user_data) {
    for (const var_t *v = user_data; v && v->name; v++) {
        if (strcmp(v->name, name) == 0)
            return v->value;
    }
    return NULL;
}

static env_info_t detect_ok(env_kind_t forced, const var_t *vars, const char *hostname) {
    env_info_t info;
    memset(&info, 0x5a, sizeof info); /* sentinel: every field must be written */
    char err[256] = "";
    int rc = env_detect(forced, table_get, (void *)vars, hostname, &info, err, sizeof err);
    if (rc != 0)
        fail_msg("env_detect: rc %d: %s", rc, err);
    return info;
}

static void expect_detect_error(env_kind_t forced, const var_t *vars, const char *needle) {
    env_info_t info;
    char err[256] = "";
    assert_int_equal(env_detect(forced, table_get, (void *)vars, "host", &info, err, sizeof err),
                     KGS_EINVAL);
    if (!strstr(err, needle))
        fail_msg("error lacks \"%s\": %s", needle, err);
}

/* ---- env_kind ---- */

static void test_env_kind_parse_accepts_every_documented_name(void **state) {
    (void)state;
    const struct {
        const char *s;
        env_kind_t k;
    } cases[] = {{"auto", ENV_AUTO},   {"k8s", ENV_KUBERNETES}, {"kubernetes", ENV_KUBERNETES},
                 {"slurm", ENV_SLURM}, {"flux", ENV_FLUX},      {"standalone", ENV_STANDALONE}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        env_kind_t k = (env_kind_t)99;
        assert_int_equal(env_kind_parse(cases[i].s, &k, NULL, 0), 0);
        assert_int_equal(k, cases[i].k);
    }
}

static void test_env_kind_parse_rejects_unknown_value_listing_valid_ones(void **state) {
    (void)state;
    env_kind_t k = ENV_SLURM;
    char err[256] = "";
    assert_int_equal(env_kind_parse("pbs", &k, err, sizeof err), KGS_EINVAL);
    assert_int_equal(k, ENV_SLURM);
    assert_non_null(strstr(err, "\"pbs\""));
    assert_non_null(strstr(err, "auto, k8s, kubernetes, slurm, flux, standalone"));
    assert_int_equal(env_kind_parse("SLURM", &k, NULL, 0), KGS_EINVAL);
    assert_int_equal(env_kind_parse("", &k, NULL, 0), KGS_EINVAL);
    assert_int_equal(env_kind_parse(NULL, &k, NULL, 0), KGS_EINVAL);
}

static void test_env_kind_name_names_each_kind(void **state) {
    (void)state;
    assert_string_equal(env_kind_name(ENV_AUTO), "auto");
    assert_string_equal(env_kind_name(ENV_STANDALONE), "standalone");
    assert_string_equal(env_kind_name(ENV_KUBERNETES), "kubernetes");
    assert_string_equal(env_kind_name(ENV_SLURM), "slurm");
    assert_string_equal(env_kind_name(ENV_FLUX), "flux");
}

static void test_env_getter_process_reads_the_real_environment(void **state) {
    (void)state;
    assert_int_equal(setenv("KGS_TEST_ENV_VAR", "value-1", 1), 0);
    assert_string_equal(env_getter_process("KGS_TEST_ENV_VAR", NULL), "value-1");
    unsetenv("KGS_TEST_ENV_VAR");
    assert_null(env_getter_process("KGS_TEST_ENV_VAR", NULL));
}

/* ---- detection order ---- */

static void test_env_detect_prefers_slurm_over_flux_and_kubernetes(void **state) {
    (void)state;
    const var_t vars[] = {{"KUBERNETES_SERVICE_HOST", "10.0.0.1"},
                          {"FLUX_JOB_ID", "f2Ms"},
                          {"SLURM_JOB_ID", "42"},
                          {NULL, NULL}};
    env_info_t e = detect_ok(ENV_AUTO, vars, "host");
    assert_int_equal(e.orchestrator, ENV_SLURM);
    assert_string_equal(e.job_id, "42");
}

static void test_env_detect_prefers_flux_over_kubernetes(void **state) {
    (void)state;
    const var_t vars[] = {
        {"KUBERNETES_SERVICE_HOST", "10.0.0.1"}, {"FLUX_JOB_ID", "f2Ms"}, {NULL, NULL}};
    assert_int_equal(detect_ok(ENV_AUTO, vars, "host").orchestrator, ENV_FLUX);
}

static void test_env_detect_finds_kubernetes_by_service_host(void **state) {
    (void)state;
    const var_t vars[] = {{"KUBERNETES_SERVICE_HOST", "10.0.0.1"}, {NULL, NULL}};
    assert_int_equal(detect_ok(ENV_AUTO, vars, "host").orchestrator, ENV_KUBERNETES);
}

static void test_env_detect_falls_back_to_standalone_with_hostname(void **state) {
    (void)state;
    const var_t vars[] = {{NULL, NULL}};
    env_info_t e = detect_ok(ENV_AUTO, vars, "workstation");
    assert_int_equal(e.orchestrator, ENV_STANDALONE);
    assert_string_equal(e.node, "workstation");
    assert_string_equal(e.job_id, "");
    assert_int_equal(e.task_rank, -1);
    assert_int_equal(e.local_rank, -1);
    assert_int_equal(e.num_nodes, -1);
    assert_int_equal(e.num_tasks, -1);
    assert_string_equal(e.visible_var, "");
    assert_string_equal(e.visible_list, "");
}

static void test_env_detect_counts_an_empty_slurm_job_id_as_present(void **state) {
    (void)state;
    const var_t vars[] = {{"SLURM_JOB_ID", ""}, {NULL, NULL}};
    env_info_t e = detect_ok(ENV_AUTO, vars, "n1");
    assert_int_equal(e.orchestrator, ENV_SLURM);
    assert_string_equal(e.job_id, "");
}

static void test_env_detect_standalone_leaves_node_unknown_without_hostname(void **state) {
    (void)state;
    const var_t vars[] = {{NULL, NULL}};
    env_info_t e = detect_ok(ENV_AUTO, vars, NULL);
    assert_string_equal(e.node, "");
}

/* ---- SLURM ---- */

static void test_env_detect_reads_every_slurm_field(void **state) {
    (void)state;
    const var_t vars[] = {{"SLURM_JOB_ID", "1234"},       {"SLURM_JOB_NAME", "train"},
                          {"SLURM_JOB_PARTITION", "gpu"}, {"SLURM_JOB_NODELIST", "gpu[01-04]"},
                          {"SLURM_NODELIST", "ignored"},  {"SLURMD_NODENAME", "gpu03"},
                          {"SLURM_PROCID", "5"},          {"SLURM_LOCALID", "1"},
                          {"SLURM_JOB_NUM_NODES", "4"},   {"SLURM_NNODES", "99"},
                          {"SLURM_NTASKS", "16"},         {NULL, NULL}};
    env_info_t e = detect_ok(ENV_AUTO, vars, "hostname-not-used");
    assert_int_equal(e.orchestrator, ENV_SLURM);
    assert_string_equal(e.job_id, "1234");
    assert_string_equal(e.job_name, "train");
    assert_string_equal(e.partition, "gpu");
    assert_string_equal(e.nodelist, "gpu[01-04]");
    assert_string_equal(e.node, "gpu03");
    assert_int_equal(e.task_rank, 5);
    assert_int_equal(e.local_rank, 1);
    assert_int_equal(e.num_nodes, 4);
    assert_int_equal(e.num_tasks, 16);
    assert_string_equal(e.pod_name, "");
    assert_string_equal(e.flux_uri, "");
}

static void test_env_detect_slurm_uses_fallback_nodelist_and_nnodes(void **state) {
    (void)state;
    const var_t vars[] = {{"SLURM_JOB_ID", "1"},
                          {"SLURM_JOB_NODELIST", ""},
                          {"SLURM_NODELIST", "a[1-2]"},
                          {"SLURM_NNODES", "2"},
                          {NULL, NULL}};
    env_info_t e = detect_ok(ENV_AUTO, vars, "h");
    assert_string_equal(e.nodelist, "a[1-2]");
    assert_int_equal(e.num_nodes, 2);
}

static void test_env_detect_slurm_node_is_slurmd_nodename_not_slurm_nodename(void **state) {
    (void)state;
    /* The Go tool read SLURM_NODENAME, which Slurm never sets (§11.D.28). */
    const var_t vars[] = {{"SLURM_JOB_ID", "1"}, {"SLURM_NODENAME", "wrong"}, {NULL, NULL}};
    assert_string_equal(detect_ok(ENV_AUTO, vars, "real-host").node, "real-host");
    const var_t vars2[] = {{"SLURM_JOB_ID", "1"}, {"SLURMD_NODENAME", ""}, {NULL, NULL}};
    assert_string_equal(detect_ok(ENV_AUTO, vars2, "real-host").node, "real-host");
}

static void test_env_detect_rejects_malformed_slurm_procid_naming_it(void **state) {
    (void)state;
    const var_t vars[] = {{"SLURM_JOB_ID", "1"}, {"SLURM_PROCID", "abc"}, {NULL, NULL}};
    expect_detect_error(ENV_AUTO, vars, "SLURM_PROCID=\"abc\"");
}

static void test_env_detect_rejects_each_malformed_integer_naming_variable_and_value(void **state) {
    (void)state;
    const char *slurm_ints[] = {"SLURM_PROCID", "SLURM_LOCALID", "SLURM_JOB_NUM_NODES",
                                "SLURM_NNODES", "SLURM_NTASKS"};
    const char *bad[] = {"-1", "1x", " 1", "1.0", "99999999999", "0x10"};
    for (size_t i = 0; i < sizeof slurm_ints / sizeof slurm_ints[0]; i++) {
        for (size_t j = 0; j < sizeof bad / sizeof bad[0]; j++) {
            const var_t vars[] = {{"SLURM_JOB_ID", "1"}, {slurm_ints[i], bad[j]}, {NULL, NULL}};
            char needle[96];
            snprintf(needle, sizeof needle, "%s=\"%s\"", slurm_ints[i], bad[j]);
            expect_detect_error(ENV_AUTO, vars, needle);
        }
    }
    const char *flux_ints[] = {"FLUX_TASK_RANK", "FLUX_TASK_LOCAL_ID", "FLUX_JOB_SIZE",
                               "FLUX_JOB_NNODES"};
    for (size_t i = 0; i < sizeof flux_ints / sizeof flux_ints[0]; i++) {
        const var_t vars[] = {{"FLUX_JOB_ID", "f1"}, {flux_ints[i], "two"}, {NULL, NULL}};
        char needle[96];
        snprintf(needle, sizeof needle, "%s=\"two\"", flux_ints[i]);
        expect_detect_error(ENV_AUTO, vars, needle);
    }
}

static void test_env_detect_accepts_largest_int_and_treats_empty_as_unknown(void **state) {
    (void)state;
    const var_t vars[] = {{"SLURM_JOB_ID", "1"},
                          {"SLURM_PROCID", "2147483647"},
                          {"SLURM_LOCALID", ""},
                          {"SLURM_NTASKS", "0"},
                          {NULL, NULL}};
    env_info_t e = detect_ok(ENV_AUTO, vars, "h");
    assert_int_equal(e.task_rank, 2147483647);
    assert_int_equal(e.local_rank, -1);
    assert_int_equal(e.num_tasks, 0);
    const var_t over[] = {{"SLURM_JOB_ID", "1"}, {"SLURM_PROCID", "2147483648"}, {NULL, NULL}};
    expect_detect_error(ENV_AUTO, over, "SLURM_PROCID=\"2147483648\"");
}

static void test_env_detect_forced_slurm_without_variables_leaves_fields_unknown(void **state) {
    (void)state;
    const var_t vars[] = {{"KUBERNETES_SERVICE_HOST", "10.0.0.1"}, {NULL, NULL}};
    env_info_t e = detect_ok(ENV_SLURM, vars, "h1");
    assert_int_equal(e.orchestrator, ENV_SLURM);
    assert_string_equal(e.node, "h1");
    assert_string_equal(e.job_id, "");
    assert_int_equal(e.task_rank, -1);
}

/* ---- Flux ---- */

static void test_env_detect_reads_every_flux_field_and_uses_hostname(void **state) {
    (void)state;
    const var_t vars[] = {{"FLUX_JOB_ID", "\xc6\x92"
                                          "2Ms4H3"},
                          {"FLUX_TASK_RANK", "3"},
                          {"FLUX_TASK_LOCAL_ID", "1"},
                          {"FLUX_JOB_SIZE", "8"},
                          {"FLUX_JOB_NNODES", "2"},
                          {"FLUX_URI", "local:///run/flux/local"},
                          {"NODE_NAME", "not-used"},
                          {NULL, NULL}};
    env_info_t e = detect_ok(ENV_AUTO, vars, "tioga12");
    assert_int_equal(e.orchestrator, ENV_FLUX);
    assert_string_equal(e.job_id, "\xc6\x92"
                                  "2Ms4H3");
    assert_string_equal(e.node, "tioga12");
    assert_int_equal(e.task_rank, 3);
    assert_int_equal(e.local_rank, 1);
    assert_int_equal(e.num_tasks, 8);
    assert_int_equal(e.num_nodes, 2);
    assert_string_equal(e.flux_uri, "local:///run/flux/local");
}

static void test_env_detect_forced_flux_ignores_slurm_variables(void **state) {
    (void)state;
    const var_t vars[] = {{"SLURM_JOB_ID", "7"}, {"SLURM_PROCID", "bad"}, {NULL, NULL}};
    env_info_t e = detect_ok(ENV_FLUX, vars, "h");
    assert_int_equal(e.orchestrator, ENV_FLUX);
    assert_string_equal(e.job_id, "");
    assert_int_equal(e.task_rank, -1);
}

/* ---- Kubernetes ---- */

static void test_env_detect_reads_kubernetes_downward_api(void **state) {
    (void)state;
    const var_t vars[] = {{"KUBERNETES_SERVICE_HOST", "10.0.0.1"},
                          {"NODE_NAME", "gpu-node-1"},
                          {"POD_NAME", "vllm-0"},
                          {"POD_NAMESPACE", "inference"},
                          {NULL, NULL}};
    env_info_t e = detect_ok(ENV_AUTO, vars, "container-hostname");
    assert_int_equal(e.orchestrator, ENV_KUBERNETES);
    assert_string_equal(e.node, "gpu-node-1");
    assert_string_equal(e.pod_name, "vllm-0");
    assert_string_equal(e.namespace_, "inference");
    assert_string_equal(e.job_id, "");
    assert_int_equal(e.task_rank, -1);
}

static void test_env_detect_kubernetes_falls_back_to_hostname_for_node(void **state) {
    (void)state;
    const var_t vars[] = {{NULL, NULL}};
    env_info_t e = detect_ok(ENV_KUBERNETES, vars, "pod-host");
    assert_int_equal(e.orchestrator, ENV_KUBERNETES);
    assert_string_equal(e.node, "pod-host");
    assert_string_equal(e.pod_name, "");
}

static void test_env_detect_forced_standalone_ignores_scheduler_fields(void **state) {
    (void)state;
    const var_t vars[] = {{"SLURM_JOB_ID", "5"}, {"SLURMD_NODENAME", "n"}, {NULL, NULL}};
    env_info_t e = detect_ok(ENV_STANDALONE, vars, "box");
    assert_int_equal(e.orchestrator, ENV_STANDALONE);
    assert_string_equal(e.node, "box");
    assert_string_equal(e.job_id, "");
}

/* ---- lengths ---- */

static void test_env_detect_rejects_job_id_too_long_for_its_field(void **state) {
    (void)state;
    char big[ENV_STR_MAX + 10];
    memset(big, '7', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    const var_t vars[] = {{"SLURM_JOB_ID", big}, {NULL, NULL}};
    expect_detect_error(ENV_AUTO, vars, "SLURM_JOB_ID");
}

static void test_env_detect_cuts_overlong_nodelist_with_ellipsis(void **state) {
    (void)state;
    static char big[3000];
    memset(big, 'n', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    const var_t vars[] = {{"SLURM_JOB_ID", "1"}, {"SLURM_JOB_NODELIST", big}, {NULL, NULL}};
    env_info_t e = detect_ok(ENV_AUTO, vars, "h");
    size_t n = strlen(e.nodelist);
    assert_int_equal(n, sizeof e.nodelist - 1);
    assert_string_equal(e.nodelist + n - 3, "...");
}

/* ---- visible devices ---- */

static void test_env_detect_visible_devices_follow_documented_order(void **state) {
    (void)state;
    const char *order[] = {"SLURM_STEP_GPUS", "SLURM_JOB_GPUS", "GPU_DEVICE_ORDINAL",
                           "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"};
    const size_t n = sizeof order / sizeof order[0];
    /* With variables i..n-1 set, variable i wins, in every environment. */
    const env_kind_t kinds[] = {ENV_STANDALONE, ENV_SLURM, ENV_FLUX, ENV_KUBERNETES};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        for (size_t i = 0; i < n; i++) {
            var_t vars[8];
            char values[5][8];
            size_t m = 0;
            for (size_t j = i; j < n; j++) {
                snprintf(values[j], sizeof values[j], "%zu", j);
                vars[m].name = order[j];
                vars[m].value = values[j];
                m++;
            }
            vars[m].name = NULL;
            env_info_t e = detect_ok(kinds[k], vars, "h");
            assert_string_equal(e.visible_var, order[i]);
            assert_string_equal(e.visible_list, values[i]);
        }
    }
}

static void test_env_detect_skips_empty_scheduler_gpu_variables(void **state) {
    (void)state;
    const var_t vars[] = {{"SLURM_STEP_GPUS", ""},
                          {"SLURM_JOB_GPUS", "1,2"},
                          {"CUDA_VISIBLE_DEVICES", "0,1"},
                          {NULL, NULL}};
    env_info_t e = detect_ok(ENV_AUTO, vars, "h");
    assert_string_equal(e.visible_var, "SLURM_JOB_GPUS");
    assert_string_equal(e.visible_list, "1,2");

    const var_t nv[] = {{"NVIDIA_VISIBLE_DEVICES", ""}, {NULL, NULL}};
    e = detect_ok(ENV_AUTO, nv, "h");
    assert_string_equal(e.visible_var, "");
    assert_string_equal(e.visible_list, "");
}

static void test_env_detect_empty_cuda_visible_devices_selects_no_devices(void **state) {
    (void)state;
    /* CUDA reads CUDA_VISIBLE_DEVICES="" as "no devices": keep the variable
     * so device_selection_resolve() selects nothing, instead of every GPU. */
    const var_t vars[] = {
        {"CUDA_VISIBLE_DEVICES", ""}, {"NVIDIA_VISIBLE_DEVICES", "all"}, {NULL, NULL}};
    env_info_t e = detect_ok(ENV_AUTO, vars, "h");
    assert_string_equal(e.visible_var, "CUDA_VISIBLE_DEVICES");
    assert_string_equal(e.visible_list, "");
}

static void test_env_detect_keeps_uuid_lists_verbatim(void **state) {
    (void)state;
    const var_t vars[] = {{"NVIDIA_VISIBLE_DEVICES", "GPU-5c1d0000, MIG-7a3f0000"}, {NULL, NULL}};
    env_info_t e = detect_ok(ENV_AUTO, vars, "h");
    assert_string_equal(e.visible_var, "NVIDIA_VISIBLE_DEVICES");
    assert_string_equal(e.visible_list, "GPU-5c1d0000, MIG-7a3f0000");
}

static void test_env_detect_rejects_null_getter_or_output(void **state) {
    (void)state;
    env_info_t e;
    assert_int_equal(env_detect(ENV_AUTO, NULL, NULL, "h", &e, NULL, 0), KGS_EINVAL);
    assert_int_equal(env_detect(ENV_AUTO, table_get, NULL, "h", NULL, NULL, 0), KGS_EINVAL);
}

/* ---- output path ---- */

static env_info_t slurm_env(void) {
    const var_t vars[] = {{"SLURM_JOB_ID", "1234"},
                          {"SLURMD_NODENAME", "gpu03"},
                          {"SLURM_PROCID", "7"},
                          {NULL, NULL}};
    return detect_ok(ENV_AUTO, vars, "h");
}

static void expect_path(const env_info_t *e, const char *tmpl, const char *want) {
    char out[256];
    char err[256] = "";
    int rc = env_expand_output_path(tmpl, e, out, sizeof out, err, sizeof err);
    if (rc != 0)
        fail_msg("expand \"%s\": rc %d: %s", tmpl, rc, err);
    assert_string_equal(out, want);
}

static void expect_path_error(const env_info_t *e, const char *tmpl, int code, const char *needle) {
    char out[256];
    char err[256] = "";
    memset(out, 'x', sizeof out);
    assert_int_equal(env_expand_output_path(tmpl, e, out, sizeof out, err, sizeof err), code);
    assert_string_equal(out, "");
    if (!strstr(err, needle))
        fail_msg("error for \"%s\" lacks \"%s\": %s", tmpl, needle, err);
}

static void test_env_expand_output_path_substitutes_job_node_and_rank(void **state) {
    (void)state;
    env_info_t e = slurm_env();
    expect_path(&e, "gpu-%j-%n-%t.jsonl", "gpu-1234-gpu03-7.jsonl");
    expect_path(&e, "/scratch/%j/%n/%t/%t", "/scratch/1234/gpu03/7/7");
    expect_path(&e, "plain.csv", "plain.csv");
    expect_path(&e, "", "");
}

static void test_env_expand_output_path_writes_percent_for_double_percent(void **state) {
    (void)state;
    env_info_t e = slurm_env();
    expect_path(&e, "100%%-%j", "100%-1234");
    expect_path(&e, "%%j", "%j");
}

static void test_env_expand_output_path_rejects_unknown_escape_naming_it(void **state) {
    (void)state;
    env_info_t e = slurm_env();
    expect_path_error(&e, "gpu-%x.log", KGS_EINVAL, "unknown escape %x");
    expect_path_error(&e, "gpu-%N.log", KGS_EINVAL, "%N");
}

static void test_env_expand_output_path_rejects_trailing_lone_percent(void **state) {
    (void)state;
    env_info_t e = slurm_env();
    expect_path_error(&e, "gpu-%", KGS_EINVAL, "lone %");
    expect_path_error(&e, "%", KGS_EINVAL, "lone %");
}

static void test_env_expand_output_path_rejects_job_id_and_rank_when_unknown(void **state) {
    (void)state;
    const var_t vars[] = {{NULL, NULL}};
    env_info_t e = detect_ok(ENV_AUTO, vars, "box");
    expect_path(&e, "gpu-%n.jsonl", "gpu-box.jsonl");
    expect_path_error(&e, "gpu-%j.jsonl", KGS_EINVAL, "%j needs a job id");
    expect_path_error(&e, "gpu-%t.jsonl", KGS_EINVAL, "%t needs a task rank");
    env_info_t nonode = detect_ok(ENV_AUTO, vars, NULL);
    expect_path_error(&nonode, "gpu-%n.jsonl", KGS_EINVAL, "%n needs a node name");
}

static void test_env_expand_output_path_reports_erange_when_too_long(void **state) {
    (void)state;
    env_info_t e = slurm_env();
    char out[8];
    char err[256] = "";
    assert_int_equal(env_expand_output_path("gpu-%j.x", &e, out, sizeof out, err, sizeof err),
                     KGS_ERANGE);
    assert_string_equal(out, "");
    assert_non_null(strstr(err, "longer than 7 bytes"));
    /* Exactly fitting, NUL included, is fine. */
    char fits[9];
    assert_int_equal(env_expand_output_path("gpu-%j", &e, fits, sizeof fits, NULL, 0), 0);
    assert_string_equal(fits, "gpu-1234");
}

static void test_env_expand_output_path_rejects_null_arguments(void **state) {
    (void)state;
    env_info_t e = slurm_env();
    char out[8];
    assert_int_equal(env_expand_output_path(NULL, &e, out, sizeof out, NULL, 0), KGS_EINVAL);
    assert_int_equal(env_expand_output_path("x", NULL, out, sizeof out, NULL, 0), KGS_EINVAL);
    assert_int_equal(env_expand_output_path("x", &e, NULL, 0, NULL, 0), KGS_EINVAL);
    assert_int_equal(env_expand_output_path("x", &e, out, 0, NULL, 0), KGS_EINVAL);
}

/* ---- what CUDA itself reads ---- */

static void test_env_detect_records_cuda_variables_whatever_selects_the_devices(void **state) {
    (void)state;
    const var_t vars[] = {{"SLURM_JOB_ID", "7"},
                          {"SLURM_STEP_GPUS", "2,3"},
                          {"CUDA_VISIBLE_DEVICES", "0,1"},
                          {"CUDA_DEVICE_ORDER", "PCI_BUS_ID"},
                          {NULL, NULL}};
    env_info_t e = detect_ok(ENV_AUTO, vars, "h");
    assert_string_equal(e.visible_var, "SLURM_STEP_GPUS");
    assert_true(e.cuda_visible_set);
    assert_string_equal(e.cuda_visible, "0,1");
    assert_true(e.cuda_order_set);
    assert_string_equal(e.cuda_order, "PCI_BUS_ID");

    const var_t empty[] = {{"CUDA_VISIBLE_DEVICES", ""}, {NULL, NULL}};
    e = detect_ok(ENV_STANDALONE, empty, "h");
    assert_true(e.cuda_visible_set); /* set but empty: CUDA sees no device */
    assert_string_equal(e.cuda_visible, "");
    assert_false(e.cuda_order_set);
    assert_string_equal(e.cuda_order, "");

    const var_t none[] = {{NULL, NULL}};
    e = detect_ok(ENV_STANDALONE, none, "h");
    assert_false(e.cuda_visible_set);
    assert_string_equal(e.cuda_visible, "");
}

static void test_env_detect_rejects_overlong_cuda_device_order_naming_it(void **state) {
    (void)state;
    char longv[100];
    memset(longv, 'P', sizeof longv - 1);
    longv[sizeof longv - 1] = '\0';
    const var_t vars[] = {{"CUDA_DEVICE_ORDER", longv}, {NULL, NULL}};
    expect_detect_error(ENV_STANDALONE, vars, "CUDA_DEVICE_ORDER");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_env_kind_parse_accepts_every_documented_name),
        cmocka_unit_test(test_env_kind_parse_rejects_unknown_value_listing_valid_ones),
        cmocka_unit_test(test_env_kind_name_names_each_kind),
        cmocka_unit_test(test_env_getter_process_reads_the_real_environment),
        cmocka_unit_test(test_env_detect_prefers_slurm_over_flux_and_kubernetes),
        cmocka_unit_test(test_env_detect_prefers_flux_over_kubernetes),
        cmocka_unit_test(test_env_detect_finds_kubernetes_by_service_host),
        cmocka_unit_test(test_env_detect_falls_back_to_standalone_with_hostname),
        cmocka_unit_test(test_env_detect_counts_an_empty_slurm_job_id_as_present),
        cmocka_unit_test(test_env_detect_standalone_leaves_node_unknown_without_hostname),
        cmocka_unit_test(test_env_detect_reads_every_slurm_field),
        cmocka_unit_test(test_env_detect_slurm_uses_fallback_nodelist_and_nnodes),
        cmocka_unit_test(test_env_detect_slurm_node_is_slurmd_nodename_not_slurm_nodename),
        cmocka_unit_test(test_env_detect_rejects_malformed_slurm_procid_naming_it),
        cmocka_unit_test(test_env_detect_rejects_each_malformed_integer_naming_variable_and_value),
        cmocka_unit_test(test_env_detect_accepts_largest_int_and_treats_empty_as_unknown),
        cmocka_unit_test(test_env_detect_forced_slurm_without_variables_leaves_fields_unknown),
        cmocka_unit_test(test_env_detect_reads_every_flux_field_and_uses_hostname),
        cmocka_unit_test(test_env_detect_forced_flux_ignores_slurm_variables),
        cmocka_unit_test(test_env_detect_reads_kubernetes_downward_api),
        cmocka_unit_test(test_env_detect_kubernetes_falls_back_to_hostname_for_node),
        cmocka_unit_test(test_env_detect_forced_standalone_ignores_scheduler_fields),
        cmocka_unit_test(test_env_detect_rejects_job_id_too_long_for_its_field),
        cmocka_unit_test(test_env_detect_cuts_overlong_nodelist_with_ellipsis),
        cmocka_unit_test(test_env_detect_visible_devices_follow_documented_order),
        cmocka_unit_test(test_env_detect_skips_empty_scheduler_gpu_variables),
        cmocka_unit_test(test_env_detect_empty_cuda_visible_devices_selects_no_devices),
        cmocka_unit_test(test_env_detect_keeps_uuid_lists_verbatim),
        cmocka_unit_test(test_env_detect_rejects_null_getter_or_output),
        cmocka_unit_test(test_env_expand_output_path_substitutes_job_node_and_rank),
        cmocka_unit_test(test_env_expand_output_path_writes_percent_for_double_percent),
        cmocka_unit_test(test_env_expand_output_path_rejects_unknown_escape_naming_it),
        cmocka_unit_test(test_env_expand_output_path_rejects_trailing_lone_percent),
        cmocka_unit_test(test_env_expand_output_path_rejects_job_id_and_rank_when_unknown),
        cmocka_unit_test(test_env_expand_output_path_reports_erange_when_too_long),
        cmocka_unit_test(test_env_expand_output_path_rejects_null_arguments),
        cmocka_unit_test(test_env_detect_records_cuda_variables_whatever_selects_the_devices),
        cmocka_unit_test(test_env_detect_rejects_overlong_cuda_device_order_naming_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
