/*
 * env.c - orchestrator detection and --output templates.
 *
 * Everything is read through an env_getter_fn so tests and the fuzz target
 * pass tables. Differences from the Go tool (reference §4.2, §11.D), on
 * purpose:
 *  - SLURM's node comes from SLURMD_NODENAME, which is what slurmd sets
 *    (the Go tool read SLURM_NODENAME, which Slurm never sets), falling back
 *    to the host name; Flux and standalone use the host name, so multi-node
 *    output can always be split by node.
 *  - A malformed number (SLURM_PROCID=abc) is an error naming the variable,
 *    not a silent 0 that would make every task look like rank 0.
 *  - NVIDIA_VISIBLE_DEVICES is read, and GPU lists are kept verbatim for
 *    device_selection_resolve(), which understands every entry form.
 *  - A value too long for its field is an error rather than silently cut,
 *    except for the descriptive job name and node list, which are cut with a
 *    trailing "..." (a cut node list is still useful to a reader; a cut job
 *    id or GPU list would name something else).
 */
#include "env/env.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/suggest.h"

int env_kind_parse(const char *s, env_kind_t *out, char *err, size_t errlen) {
    static const struct {
        const char *name;
        env_kind_t kind;
    } kinds[] = {
        {"auto", ENV_AUTO},   {"k8s", ENV_KUBERNETES}, {"kubernetes", ENV_KUBERNETES},
        {"slurm", ENV_SLURM}, {"flux", ENV_FLUX},      {"standalone", ENV_STANDALONE},
    };
    const char *names[sizeof kinds / sizeof kinds[0]];
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        names[i] = kinds[i].name;
        if (s && strcmp(s, kinds[i].name) == 0) {
            if (out)
                *out = kinds[i].kind;
            return 0;
        }
    }
    const char *best =
        s ? suggest_value(s, strlen(s), names, sizeof names / sizeof names[0], NULL, 0) : NULL;
    return kgs_seterr(err, errlen, KGS_EINVAL,
                      "--env \"%s\": unknown environment (valid: auto, k8s, kubernetes, slurm, "
                      "flux, standalone)%s%s%s",
                      s ? s : "", best ? "; did you mean \"" : "", best ? best : "",
                      best ? "\"?" : "");
}

const char *env_kind_name(env_kind_t k) {
    switch (k) {
    case ENV_AUTO:
        return "auto";
    case ENV_STANDALONE:
        return "standalone";
    case ENV_KUBERNETES:
        return "kubernetes";
    case ENV_SLURM:
        return "slurm";
    case ENV_FLUX:
        return "flux";
    }
    return "auto";
}

const char *env_getter_process(const char *name, void *user_data) {
    (void)user_data;
    return getenv(name);
}

typedef struct {
    env_getter_fn get;
    void *user_data;
} env_reader_t;

static const char *env_reader_get(const env_reader_t *r, const char *name) {
    return r->get(name, r->user_data);
}

/* The value of the first of `a`, `b` that is set and non-empty; sets
 * *which to its name. NULL when neither is. `b` may be NULL. */
static const char *env_first_nonempty(const env_reader_t *r, const char *a, const char *b,
                                      const char **which) {
    const char *v = env_reader_get(r, a);
    *which = a;
    if ((!v || !*v) && b) {
        v = env_reader_get(r, b);
        *which = b;
    }
    return (v && *v) ? v : NULL;
}

/* Copies `value` (may be NULL: leaves dst "") into dst[cap]. Too long is
 * KGS_EINVAL naming `var`. */
static int env_copy_exact(char *dst, size_t cap, const char *var, const char *value, char *err,
                          size_t errlen) {
    if (!value)
        return 0;
    size_t n = strlen(value);
    if (n >= cap)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "environment variable %s: value is %zu bytes long; at most %zu are "
                          "supported",
                          var, n, cap - 1);
    memcpy(dst, value, n + 1);
    return 0;
}

/* Copies `value` (may be NULL) into dst[cap], cutting it with "..." when it
 * does not fit. For descriptive fields only. */
static void env_copy_cut(char *dst, size_t cap, const char *value) {
    if (!value)
        return;
    size_t n = strlen(value);
    if (n < cap) {
        memcpy(dst, value, n + 1);
        return;
    }
    memcpy(dst, value, cap - 4);
    memcpy(dst + cap - 4, "...", 4);
}

/* Parses a non-negative decimal int. Unset or empty: *out = -1 (unknown).
 * Anything else that is not all digits, or exceeds INT_MAX, is KGS_EINVAL
 * naming the variable and the value. */
static int env_parse_count(const char *var, const char *value, int *out, char *err, size_t errlen) {
    *out = -1;
    if (!value || !*value)
        return 0;
    long long v = 0;
    for (const char *p = value; *p; p++) {
        if (*p < '0' || *p > '9' || v > (INT_MAX - (*p - '0')) / 10)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "environment variable %s=\"%s\": not a non-negative integer "
                              "(at most %d)",
                              var, value, INT_MAX);
        v = v * 10 + (*p - '0');
    }
    *out = (int)v;
    return 0;
}

/* Node name: `var` when set and non-empty, else the host name. */
static int env_set_node(env_info_t *out, const env_reader_t *r, const char *var,
                        const char *hostname, char *err, size_t errlen) {
    const char *v = var ? env_reader_get(r, var) : NULL;
    if (v && *v)
        return env_copy_exact(out->node, sizeof out->node, var, v, err, errlen);
    return env_copy_exact(out->node, sizeof out->node, "host name", hostname, err, errlen);
}

static int env_read_slurm(env_info_t *out, const env_reader_t *r, const char *hostname, char *err,
                          size_t errlen) {
    const char *which;
    const char *v;
    int rc;
    if ((rc = env_set_node(out, r, "SLURMD_NODENAME", hostname, err, errlen)) != 0)
        return rc;
    if ((rc = env_copy_exact(out->job_id, sizeof out->job_id, "SLURM_JOB_ID",
                             env_reader_get(r, "SLURM_JOB_ID"), err, errlen)) != 0)
        return rc;
    env_copy_cut(out->job_name, sizeof out->job_name, env_reader_get(r, "SLURM_JOB_NAME"));
    if ((rc = env_copy_exact(out->partition, sizeof out->partition, "SLURM_JOB_PARTITION",
                             env_reader_get(r, "SLURM_JOB_PARTITION"), err, errlen)) != 0)
        return rc;
    v = env_first_nonempty(r, "SLURM_JOB_NODELIST", "SLURM_NODELIST", &which);
    env_copy_cut(out->nodelist, sizeof out->nodelist, v);
    if ((rc = env_parse_count("SLURM_PROCID", env_reader_get(r, "SLURM_PROCID"), &out->task_rank,
                              err, errlen)) != 0)
        return rc;
    if ((rc = env_parse_count("SLURM_LOCALID", env_reader_get(r, "SLURM_LOCALID"), &out->local_rank,
                              err, errlen)) != 0)
        return rc;
    v = env_first_nonempty(r, "SLURM_JOB_NUM_NODES", "SLURM_NNODES", &which);
    if ((rc = env_parse_count(which, v, &out->num_nodes, err, errlen)) != 0)
        return rc;
    return env_parse_count("SLURM_NTASKS", env_reader_get(r, "SLURM_NTASKS"), &out->num_tasks, err,
                           errlen);
}

static int env_read_flux(env_info_t *out, const env_reader_t *r, const char *hostname, char *err,
                         size_t errlen) {
    int rc;
    if ((rc = env_set_node(out, r, NULL, hostname, err, errlen)) != 0)
        return rc;
    if ((rc = env_copy_exact(out->job_id, sizeof out->job_id, "FLUX_JOB_ID",
                             env_reader_get(r, "FLUX_JOB_ID"), err, errlen)) != 0)
        return rc;
    if ((rc = env_parse_count("FLUX_TASK_RANK", env_reader_get(r, "FLUX_TASK_RANK"),
                              &out->task_rank, err, errlen)) != 0)
        return rc;
    if ((rc = env_parse_count("FLUX_TASK_LOCAL_ID", env_reader_get(r, "FLUX_TASK_LOCAL_ID"),
                              &out->local_rank, err, errlen)) != 0)
        return rc;
    if ((rc = env_parse_count("FLUX_JOB_SIZE", env_reader_get(r, "FLUX_JOB_SIZE"), &out->num_tasks,
                              err, errlen)) != 0)
        return rc;
    if ((rc = env_parse_count("FLUX_JOB_NNODES", env_reader_get(r, "FLUX_JOB_NNODES"),
                              &out->num_nodes, err, errlen)) != 0)
        return rc;
    return env_copy_exact(out->flux_uri, sizeof out->flux_uri, "FLUX_URI",
                          env_reader_get(r, "FLUX_URI"), err, errlen);
}

static int env_read_kubernetes(env_info_t *out, const env_reader_t *r, const char *hostname,
                               char *err, size_t errlen) {
    int rc;
    if ((rc = env_set_node(out, r, "NODE_NAME", hostname, err, errlen)) != 0)
        return rc;
    if ((rc = env_copy_exact(out->pod_name, sizeof out->pod_name, "POD_NAME",
                             env_reader_get(r, "POD_NAME"), err, errlen)) != 0)
        return rc;
    return env_copy_exact(out->namespace_, sizeof out->namespace_, "POD_NAMESPACE",
                          env_reader_get(r, "POD_NAMESPACE"), err, errlen);
}

/*
 * The scheduler's GPU list. Variables are tried in order and the first
 * non-empty one wins; an empty one is skipped as if unset (Slurm and the
 * container runtime never set them empty on purpose), with one exception:
 * CUDA_VISIBLE_DEVICES="" means "no devices" to CUDA, so when it is reached
 * (no earlier variable holds a list) and is set but empty, it is recorded
 * with an empty list, which device_selection_resolve() reads as "none".
 */
static int env_read_visible(env_info_t *out, const env_reader_t *r, char *err, size_t errlen) {
    static const char *const vars[] = {"SLURM_STEP_GPUS", "SLURM_JOB_GPUS", "GPU_DEVICE_ORDINAL",
                                       "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = env_reader_get(r, vars[i]);
        if (!v)
            continue;
        if (!*v && strcmp(vars[i], "CUDA_VISIBLE_DEVICES") != 0)
            continue;
        /* visible_var is sized for the longest name above. */
        snprintf(out->visible_var, sizeof out->visible_var, "%s", vars[i]);
        int rc =
            env_copy_exact(out->visible_list, sizeof out->visible_list, vars[i], v, err, errlen);
        if (rc != 0)
            out->visible_var[0] = '\0';
        return rc;
    }
    return 0;
}

/* CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER as CUDA reads them: set or
 * not, and the value verbatim (too long is an error, as above). */
static int env_read_cuda(env_info_t *out, const env_reader_t *r, char *err, size_t errlen) {
    const char *v = env_reader_get(r, "CUDA_VISIBLE_DEVICES");
    int rc;
    if (v) {
        if ((rc = env_copy_exact(out->cuda_visible, sizeof out->cuda_visible,
                                 "CUDA_VISIBLE_DEVICES", v, err, errlen)) != 0)
            return rc;
        out->cuda_visible_set = true;
    }
    v = env_reader_get(r, "CUDA_DEVICE_ORDER");
    if (v) {
        if ((rc = env_copy_exact(out->cuda_order, sizeof out->cuda_order, "CUDA_DEVICE_ORDER", v,
                                 err, errlen)) != 0)
            return rc;
        out->cuda_order_set = true;
    }
    return 0;
}

static env_kind_t env_detect_kind(const env_reader_t *r) {
    /* Presence decides, as in the Go tool: an empty SLURM_JOB_ID still
     * means we run under SLURM. */
    if (env_reader_get(r, "SLURM_JOB_ID"))
        return ENV_SLURM;
    if (env_reader_get(r, "FLUX_JOB_ID"))
        return ENV_FLUX;
    if (env_reader_get(r, "KUBERNETES_SERVICE_HOST"))
        return ENV_KUBERNETES;
    return ENV_STANDALONE;
}

static void env_info_clear(env_info_t *out) {
    memset(out, 0, sizeof *out);
    out->task_rank = out->local_rank = out->num_nodes = out->num_tasks = -1;
}

int env_detect(env_kind_t forced, env_getter_fn get, void *user_data, const char *hostname,
               env_info_t *out, char *err, size_t errlen) {
    if (!out || !get)
        return kgs_seterr(err, errlen, KGS_EINVAL, "detect environment: no getter or output");
    env_info_clear(out);
    env_reader_t r = {get, user_data};
    env_kind_t kind = forced == ENV_AUTO ? env_detect_kind(&r) : forced;
    out->orchestrator = kind;

    int rc;
    switch (kind) {
    case ENV_SLURM:
        rc = env_read_slurm(out, &r, hostname, err, errlen);
        break;
    case ENV_FLUX:
        rc = env_read_flux(out, &r, hostname, err, errlen);
        break;
    case ENV_KUBERNETES:
        rc = env_read_kubernetes(out, &r, hostname, err, errlen);
        break;
    case ENV_STANDALONE:
        rc = env_set_node(out, &r, NULL, hostname, err, errlen);
        break;
    default:
        rc = kgs_seterr(err, errlen, KGS_EINVAL, "detect environment: unknown kind %d", (int)kind);
        break;
    }
    if (rc == 0)
        rc = env_read_visible(out, &r, err, errlen);
    if (rc == 0)
        rc = env_read_cuda(out, &r, err, errlen);
    if (rc != 0) {
        env_info_clear(out);
        out->orchestrator = kind == ENV_AUTO ? ENV_STANDALONE : kind;
    }
    return rc;
}

/* Appends s to out[*pos], keeping room for the NUL. */
static int env_path_append(char *out, size_t outlen, size_t *pos, const char *s, size_t n,
                           const char *tmpl, char *err, size_t errlen) {
    if (n >= outlen - *pos)
        return kgs_seterr(err, errlen, KGS_ERANGE,
                          "output path \"%s\": expanded path longer than %zu bytes", tmpl,
                          outlen - 1);
    memcpy(out + *pos, s, n);
    *pos += n;
    out[*pos] = '\0';
    return 0;
}

int env_expand_output_path(const char *tmpl, const env_info_t *env, char *out, size_t outlen,
                           char *err, size_t errlen) {
    if (!tmpl || !env || !out || outlen == 0)
        return kgs_seterr(err, errlen, KGS_EINVAL, "output path: no template or buffer");
    out[0] = '\0';
    size_t pos = 0;
    int rc = 0;
    for (const char *p = tmpl; *p; p++) {
        if (*p != '%') {
            if ((rc = env_path_append(out, outlen, &pos, p, 1, tmpl, err, errlen)) != 0)
                break;
            continue;
        }
        char rank[16];
        switch (p[1]) {
        case '%':
            rc = env_path_append(out, outlen, &pos, "%", 1, tmpl, err, errlen);
            break;
        case 'j':
            if (!env->job_id[0])
                rc = kgs_seterr(err, errlen, KGS_EINVAL,
                                "output path \"%s\": %%j needs a job id, but none is known "
                                "(environment: %s)",
                                tmpl, env_kind_name(env->orchestrator));
            else
                rc = env_path_append(out, outlen, &pos, env->job_id, strlen(env->job_id), tmpl, err,
                                     errlen);
            break;
        case 'n':
            if (!env->node[0])
                rc = kgs_seterr(err, errlen, KGS_EINVAL,
                                "output path \"%s\": %%n needs a node name, but none is known",
                                tmpl);
            else
                rc = env_path_append(out, outlen, &pos, env->node, strlen(env->node), tmpl, err,
                                     errlen);
            break;
        case 't':
            if (env->task_rank < 0) {
                rc = kgs_seterr(err, errlen, KGS_EINVAL,
                                "output path \"%s\": %%t needs a task rank, but none is known "
                                "(environment: %s)",
                                tmpl, env_kind_name(env->orchestrator));
            } else {
                int n = snprintf(rank, sizeof rank, "%d", env->task_rank);
                rc = env_path_append(out, outlen, &pos, rank, (size_t)n, tmpl, err, errlen);
            }
            break;
        case '\0':
            rc = kgs_seterr(err, errlen, KGS_EINVAL,
                            "output path \"%s\": lone %% at the end (write %%%% for a "
                            "percent sign)",
                            tmpl);
            break;
        default:
            rc = kgs_seterr(err, errlen, KGS_EINVAL,
                            "output path \"%s\": unknown escape %%%c (valid: %%j job id, %%n "
                            "node, %%t task rank, %%%% percent sign)",
                            tmpl, p[1]);
            break;
        }
        if (rc != 0)
            break;
        p++; /* past the escape letter */
    }
    if (rc != 0)
        out[0] = '\0';
    return rc;
}
