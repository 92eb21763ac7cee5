/*
 * env.h - where are we running (SLURM, Flux, Kubernetes, bare metal), and
 * which GPUs is this job allowed to see.
 *
 * Pure: environment variables are read through a getter so tests pass a
 * table; nothing here touches NVML or the file system.
 */
#ifndef KGS_ENV_ENV_H
#define KGS_ENV_ENV_H

#include <stdbool.h>
#include <stddef.h>

#include "core/snapshot.h"

typedef enum { ENV_AUTO = 0, ENV_STANDALONE, ENV_KUBERNETES, ENV_SLURM, ENV_FLUX } env_kind_t;

/* Parses a --env value: auto, k8s, kubernetes, slurm, flux, standalone.
 * Returns 0, or KGS_EINVAL with a message listing the valid values. */
int env_kind_parse(const char *s, env_kind_t *out, char *err, size_t errlen);

/* "auto", "standalone", "kubernetes", "slurm", "flux". */
const char *env_kind_name(env_kind_t k);

/* Returns the value of variable `name`, or NULL when unset. */
typedef const char *(*env_getter_fn)(const char *name, void *user_data);

/* getenv() as an env_getter_fn. */
const char *env_getter_process(const char *name, void *user_data);

#define ENV_STR_MAX 256

/* What the environment says about this job. Empty string = not known;
 * an int field of -1 = not known. */
typedef struct {
    env_kind_t orchestrator; /* never ENV_AUTO after env_detect() */
    char node[ENV_STR_MAX];
    char job_id[ENV_STR_MAX];
    char job_name[ENV_STR_MAX];
    int task_rank;  /* SLURM_PROCID / FLUX_TASK_RANK */
    int local_rank; /* SLURM_LOCALID / FLUX_TASK_LOCAL_ID */
    int num_nodes;  /* SLURM_JOB_NUM_NODES / FLUX_JOB_NNODES */
    int num_tasks;  /* SLURM_NTASKS / FLUX_JOB_SIZE */
    char partition[ENV_STR_MAX];
    char nodelist[1024];
    char pod_name[ENV_STR_MAX];
    char namespace_[ENV_STR_MAX];
    char flux_uri[1024];
    /* The scheduler's GPU restriction: the first non-empty of
     * SLURM_STEP_GPUS, SLURM_JOB_GPUS, GPU_DEVICE_ORDINAL,
     * CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES. Both "" when none. */
    char visible_var[32];
    char visible_list[1024];
    /* What CUDA itself reads in this process, whichever variable above
     * selects the devices shown: CUDA_VISIBLE_DEVICES (set even when empty:
     * CUDA then sees no device) and CUDA_DEVICE_ORDER. For the CUDA index
     * (cuda_index.h). */
    bool cuda_visible_set;
    char cuda_visible[1024];
    bool cuda_order_set;
    char cuda_order[64];
} env_info_t;

/*
 * Fills `out`. `forced` = ENV_AUTO detects in the order SLURM (SLURM_JOB_ID
 * set) -> Flux (FLUX_JOB_ID) -> Kubernetes (KUBERNETES_SERVICE_HOST) ->
 * standalone; another value uses that orchestrator's variables regardless.
 * Node: SLURMD_NODENAME (SLURM), `hostname` (Flux, standalone), NODE_NAME or
 * `hostname` (Kubernetes). `hostname` is borrowed; may be NULL.
 * Returns 0, or KGS_EINVAL when a variable holds a malformed number (the
 * message names the variable and its value).
 */
int env_detect(env_kind_t forced, env_getter_fn get, void *user_data, const char *hostname,
               env_info_t *out, char *err, size_t errlen);

/*
 * Which devices a sample should show. `all_gpus` true: every GPU and every
 * MIG instance. Otherwise only the listed GPU indexes (whole GPUs, with their
 * MIG instances) and the listed MIG instances (by index into snapshot->mig).
 */
typedef struct {
    bool all_gpus;
    unsigned gpu_count;
    unsigned gpu_index[64]; /* NVML indexes */
    unsigned mig_count;
    unsigned mig_slot[256]; /* indexes into snapshot_t.mig[] */
} device_selection_t;

/*
 * Resolves a device list (the value of one of the variables above, or of
 * --device) against the devices in `snap`. Entries, comma separated, blanks
 * trimmed: an NVML index ("0"), "GPU-<uuid>" or any unique prefix of a GPU
 * UUID (as CUDA accepts), "MIG-<uuid>", "all"; "none", "void" or "" alone
 * select no device. An entry that matches nothing, an ambiguous prefix, or
 * a malformed entry is an error naming it (KGS_ENOTFOUND / KGS_EINVAL);
 * never a silent fallback to all GPUs. `var` names the source in messages
 * (e.g. "CUDA_VISIBLE_DEVICES"); borrowed.
 */
int device_selection_resolve(const char *var, const char *list, const snapshot_t *snap,
                             device_selection_t *out, char *err, size_t errlen);

/*
 * CUDA_VISIBLE_DEVICES as CUDA reads it: the same entries and single-word
 * forms as above, but the first entry that selects nothing here (malformed,
 * such as "-1", empty, an index or UUID this node lacks, an ambiguous
 * prefix) ends the list: the entries before it stand and the rest are
 * ignored, so "-1" selects no GPU and "0,-1,1" only GPU 0. That is not an
 * error: note (NULL allowed) then names the entry and what is visible, for
 * the caller to show; it is "" when every entry was read. Errors: KGS_EINVAL
 * for NULL arguments, KGS_ERANGE past the selection's room.
 */
int device_selection_resolve_cuda(const char *list, const snapshot_t *snap, device_selection_t *out,
                                  char *note, size_t notelen, char *err, size_t errlen);

/* True when GPU record `g` (or MIG instance slot `mig_slot`) is selected. */
bool device_selection_has_gpu(const device_selection_t *sel, const gpu_record_t *g);
bool device_selection_has_mig(const device_selection_t *sel, const snapshot_t *snap,
                              unsigned mig_slot);

/*
 * Expands an --output template: %j job id, %n node, %t task rank, %% a
 * percent sign. An unknown escape, or %j/%t with no job id/rank known, is
 * KGS_EINVAL with a message naming it. Writes at most outlen bytes including
 * the NUL; KGS_ERANGE when it does not fit.
 */
int env_expand_output_path(const char *tmpl, const env_info_t *env, char *out, size_t outlen,
                           char *err, size_t errlen);

#endif
