/*
 * fuzz_env.c - env_detect() and env_expand_output_path() on arbitrary bytes.
 *
 * Input layout: the first byte picks the forced kind (value % 5: auto,
 * standalone, kubernetes, slurm, flux); the rest is split into lines.
 *   NAME=VALUE   a variable (the first definition of a name wins)
 *   @TEMPLATE    the --output template (the last one wins; default "%n")
 *   #HOST        the host name (default none)
 * Lines without '=' are ignored. On success, every string field is
 * terminated within its array, the numbers are -1 or non-negative, the
 * visible list comes from the variable it names, CUDA_VISIBLE_DEVICES and
 * CUDA_DEVICE_ORDER are recorded exactly when set, and an expanded path fits
 * its buffer and equals the template when that has no '%'. On failure the
 * code is EINVAL/ERANGE with a message.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "env/env.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_VARS_MAX 64

typedef struct {
    const char *name[FUZZ_VARS_MAX];
    const char *value[FUZZ_VARS_MAX];
    size_t count;
} fuzz_table_t;

static const char *fuzz_table_get(const char *name, void *user_data) {
    const fuzz_table_t *t = user_data;
    for (size_t i = 0; i < t->count; i++) {
        if (strcmp(t->name[i], name) == 0)
            return t->value[i];
    }
    return NULL;
}

static void fuzz_check_str(const char *s, size_t cap) {
    FUZZ_CHECK(memchr(s, '\0', cap) != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0)
        return 0;
    env_kind_t forced = (env_kind_t)(data[0] % 5);
    char *text = malloc(size);
    if (!text)
        return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';

    fuzz_table_t t = {.count = 0};
    const char *tmpl = "%n";
    const char *host = NULL;
    for (char *line = text; line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        char *eq = strchr(line, '=');
        if (line[0] == '@')
            tmpl = line + 1;
        else if (line[0] == '#')
            host = line + 1;
        else if (eq && t.count < FUZZ_VARS_MAX) {
            *eq = '\0';
            t.name[t.count] = line;
            t.value[t.count] = eq + 1;
            t.count++;
        }
        line = nl ? nl + 1 : NULL;
    }

    env_info_t e;
    char err[512];
    err[0] = '\0';
    int rc = env_detect(forced, fuzz_table_get, &t, host, &e, err, sizeof err);
    if (rc != 0) {
        FUZZ_CHECK(rc == KGS_EINVAL);
        FUZZ_CHECK(err[0] != '\0');
        free(text);
        return 0;
    }
    FUZZ_CHECK(e.orchestrator != ENV_AUTO);
    FUZZ_CHECK(forced == ENV_AUTO || e.orchestrator == forced);
    fuzz_check_str(e.node, sizeof e.node);
    fuzz_check_str(e.job_id, sizeof e.job_id);
    fuzz_check_str(e.job_name, sizeof e.job_name);
    fuzz_check_str(e.partition, sizeof e.partition);
    fuzz_check_str(e.nodelist, sizeof e.nodelist);
    fuzz_check_str(e.pod_name, sizeof e.pod_name);
    fuzz_check_str(e.namespace_, sizeof e.namespace_);
    fuzz_check_str(e.flux_uri, sizeof e.flux_uri);
    fuzz_check_str(e.visible_var, sizeof e.visible_var);
    fuzz_check_str(e.visible_list, sizeof e.visible_list);
    FUZZ_CHECK(e.task_rank >= -1 && e.local_rank >= -1);
    FUZZ_CHECK(e.num_nodes >= -1 && e.num_tasks >= -1);
    if (e.visible_var[0]) {
        const char *v = fuzz_table_get(e.visible_var, &t);
        FUZZ_CHECK(v != NULL && strcmp(v, e.visible_list) == 0);
        FUZZ_CHECK(e.visible_list[0] || strcmp(e.visible_var, "CUDA_VISIBLE_DEVICES") == 0);
    } else {
        FUZZ_CHECK(e.visible_list[0] == '\0');
    }

    for (int k = 0; k < 2; k++) {
        const char *name = k ? "CUDA_DEVICE_ORDER" : "CUDA_VISIBLE_DEVICES";
        const char *v = fuzz_table_get(name, &t);
        bool set = k ? e.cuda_order_set : e.cuda_visible_set;
        const char *got = k ? e.cuda_order : e.cuda_visible;
        FUZZ_CHECK(set == (v != NULL));
        FUZZ_CHECK(v ? strcmp(v, got) == 0 : got[0] == '\0');
    }

    char out[256];
    err[0] = '\0';
    rc = env_expand_output_path(tmpl, &e, out, sizeof out, err, sizeof err);
    if (rc == 0) {
        FUZZ_CHECK(strlen(out) < sizeof out);
        if (!strchr(tmpl, '%'))
            FUZZ_CHECK(strcmp(out, tmpl) == 0);
    } else {
        FUZZ_CHECK(rc == KGS_EINVAL || rc == KGS_ERANGE);
        FUZZ_CHECK(err[0] != '\0' && out[0] == '\0');
    }
    free(text);
    return 0;
}
