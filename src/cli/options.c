#include "cli/options.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/duration.h"
#include "core/err.h"
#include "core/flags.h"
#include "core/suggest.h"
#include "gpu/backend_kind.h"

const char cli_usage_text[] =
    "Usage: gpu-metrics [flags]\n"
    "\n"
    "Print GPU metrics (NVIDIA through NVML, AMD through the amdgpu driver's\n"
    "sysfs files) on bare metal, SLURM, Flux, Kubernetes and containers, in one\n"
    "schema for every output format.\n"
    "\n"
    "Flags:\n"
    "  --format table|json|jsonl|csv  output format (default table); jsonl is one\n"
    "                                 compact JSON object per line per sample\n"
    "  --interval DURATION            sample every DURATION (500ms, 5s, 1m);\n"
    "                                 0 = one sample and exit (default 0);\n"
    "                                 at least 100ms otherwise\n"
    "  --count N                      stop after N samples (needs --interval)\n"
    "  --device LIST                  only these GPUs: NVML indexes (0,1), GPU-<uuid>\n"
    "                                 or a unique prefix, MIG-<uuid>, all, none;\n"
    "                                 overrides the scheduler's list; -1 = all\n"
    "  --env auto|k8s|kubernetes|slurm|flux|standalone\n"
    "                                 environment to report (default auto:\n"
    "                                 SLURM, then Flux, then Kubernetes)\n"
    "  --output FILE                  write to FILE instead of stdout; %j = job id,\n"
    "                                 %n = node name, %t = task rank, %% = %\n"
    "  --nvml-library PATH            NVML library to load (default\n"
    "                                 libnvidia-ml.so.1 from the library path)\n"
    "  --gpu-backend auto|nvml|amdsmi|amdgpu-sysfs|nvml+amdsmi|nvml+amdgpu-sysfs\n"
    "                                 how GPUs are read (default auto: NVML if it\n"
    "                                 loads, else amd-smi if libamd_smi.so loads\n"
    "                                 and lists GPUs, else amdgpu sysfs if an\n"
    "                                 amdgpu card is there; NVML and an AMD one\n"
    "                                 both on a node with both vendors)\n"
    "  --sys-root DIR                 amdgpu-sysfs: where class/drm is (default\n"
    "                                 /sys)\n"
    "  --proc-root DIR                amdgpu-sysfs: where PID/fdinfo is, for\n"
    "                                 per-process use (default /proc)\n"
    "  --processes                    table: list each GPU's processes under it;\n"
    "                                 csv: one row per process instead of per GPU\n"
    "                                 (json and jsonl always carry them)\n"
    "  --quiet                        no warnings on stderr\n"
    "  --dry-run                      print what would be collected; no NVML\n"
    "  --version                      print the version and exit\n"
    "  --help                         this text\n"
    "\n"
    "GPU restriction: without --device, the first non-empty of SLURM_STEP_GPUS,\n"
    "SLURM_JOB_GPUS, GPU_DEVICE_ORDINAL, CUDA_VISIBLE_DEVICES and\n"
    "NVIDIA_VISIBLE_DEVICES selects the GPUs; an entry that matches no GPU is an\n"
    "error, never a silent \"all GPUs\". Integers are NVML indexes (PCI bus order).\n"
    "CUDA_VISIBLE_DEVICES is read as CUDA reads it: up to its first invalid entry\n"
    "(-1 = no GPU, 0,-1,1 = GPU 0), with a note on stderr.\n"
    "\n"
    "CUDA index: beside each NVML index, cuda_index is the ordinal this process's\n"
    "CUDA code uses (cuda:0), from CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER; null\n"
    "(\"-\" in the table) where NVIDIA documents no answer, with the reason in\n"
    "cuda_index_note (table: under it; csv: on stderr). Integers and an unset list\n"
    "need CUDA_DEVICE_ORDER=PCI_BUS_ID on a node with more than one GPU.\n"
    "\n"
    "Exit status: 0 ok; 1 NVML unavailable; 2 usage or configuration error;\n"
    "3 a selected GPU is lost or erroring (the sample is still printed).\n"
    "\n"
    "Examples:\n"
    "  gpu-metrics\n"
    "  gpu-metrics --format jsonl --interval 5s --output gpu-%j-%n-%t.jsonl\n"
    "  gpu-metrics --format csv --interval 1s --count 60 --device 0,1\n"
    "  gpu-metrics --processes\n";

static int take_value(int argc, char **argv, int *i, const char *inline_value, const char *name,
                      const char **out, char *err, size_t errlen) {
    if (inline_value) {
        *out = inline_value;
        return 0;
    }
    if (*i + 1 >= argc)
        return kgs_seterr(err, errlen, KGS_EINVAL, "flag --%s needs a value", name);
    *out = argv[++*i];
    return 0;
}

static int parse_bool(const char *v, const char *name, bool *out, char *err, size_t errlen) {
    if (!v || strcmp(v, "true") == 0 || strcmp(v, "1") == 0) {
        *out = true;
        return 0;
    }
    if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0) {
        *out = false;
        return 0;
    }
    return kgs_seterr(err, errlen, KGS_EINVAL,
                      "invalid value \"%s\" for --%s: must be true or false", v, name);
}

/* Every flag name, for "did you mean" (the server's flags use the same rules). */
static const char *const cli_flag_names[] = {
    "format",       "interval",    "count",    "device",    "env",
    "nvml-library", "gpu-backend", "sys-root", "proc-root", "output",
    "quiet",        "dry-run",     "version",  "help",      "processes",
};

/* "unknown flag --formt (did you mean --format?)"; a bare word close to a
 * flag ("formt") is taken for that flag with its dashes forgotten. */
static int unknown_argument(const char *a, char *err, size_t errlen) {
    const char *name = a + (a[0] == '-' ? (a[1] == '-' ? 2 : 1) : 0);
    size_t len = strcspn(name, "=");
    const char *best =
        suggest_name(name, len, cli_flag_names, sizeof cli_flag_names / sizeof cli_flag_names[0]);
    if (a[0] == '-')
        return best ? kgs_seterr(err, errlen, KGS_EINVAL,
                                 "unknown flag %.*s (did you mean --%s?); see --help",
                                 (int)(len + (size_t)(name - a)), a, best)
                    : kgs_seterr(err, errlen, KGS_EINVAL, "unknown flag %.*s; see --help",
                                 (int)(len + (size_t)(name - a)), a);
    return best ? kgs_seterr(err, errlen, KGS_EINVAL,
                             "unexpected argument \"%s\" (did you mean --%s?); see --help", a, best)
                : kgs_seterr(err, errlen, KGS_EINVAL, "unexpected argument \"%s\"; see --help", a);
}

int cli_options_parse(int argc, char **argv, cli_options_t *o, char *err, size_t errlen) {
    memset(o, 0, sizeof *o);
    o->format = OUTPUT_TABLE;
    o->env = ENV_AUTO;
    bool count_set = false;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *iv = NULL, *v = NULL;
        int rc = 0;
        char sub[256];
        if (strcmp(a, "version") == 0 && i == 1 && argc == 2) {
            o->version = true; /* the Go tool's bare "version" argument */
        } else if (flag_match(a, "format", &iv)) {
            if ((rc = take_value(argc, argv, &i, iv, "format", &v, err, errlen)))
                return rc;
            if (output_format_parse(v, &o->format, sub, sizeof sub))
                return kgs_seterr(err, errlen, KGS_EINVAL, "%s", sub); /* names --format */
        } else if (flag_match(a, "interval", &iv)) {
            if ((rc = take_value(argc, argv, &i, iv, "interval", &v, err, errlen)))
                return rc;
            if (duration_parse_ns(v, &o->interval_ns, sub, sizeof sub))
                return kgs_seterr(err, errlen, KGS_EINVAL, "--interval: %s", sub);
            if (o->interval_ns != 0 && o->interval_ns < 100 * UINT64_C(1000000))
                return kgs_seterr(err, errlen, KGS_EINVAL,
                                  "--interval %s is too short: use 0 (one sample) or at least "
                                  "100ms",
                                  v);
        } else if (flag_match(a, "count", &iv)) {
            if ((rc = take_value(argc, argv, &i, iv, "count", &v, err, errlen)))
                return rc;
            char *end;
            errno = 0;
            unsigned long long n = strtoull(v, &end, 10);
            if (errno || end == v || *end || v[0] == '-' || n == 0)
                return kgs_seterr(err, errlen, KGS_EINVAL,
                                  "invalid --count \"%s\": must be a whole number >= 1", v);
            o->count = n;
            count_set = true;
        } else if (flag_match(a, "device", &iv)) {
            if ((rc = take_value(argc, argv, &i, iv, "device", &v, err, errlen)))
                return rc;
            o->device = strcmp(v, "-1") == 0 ? "all" : v; /* -1 was "all" in the Go tool */
        } else if (flag_match(a, "env", &iv)) {
            if ((rc = take_value(argc, argv, &i, iv, "env", &v, err, errlen)))
                return rc;
            if (env_kind_parse(v, &o->env, sub, sizeof sub))
                return kgs_seterr(err, errlen, KGS_EINVAL, "%s", sub); /* names --env */
        } else if (flag_match(a, "nvml-library", &iv)) {
            if ((rc =
                     take_value(argc, argv, &i, iv, "nvml-library", &o->nvml_library, err, errlen)))
                return rc;
        } else if (flag_match(a, "gpu-backend", &iv)) {
            if ((rc = take_value(argc, argv, &i, iv, "gpu-backend", &v, err, errlen)))
                return rc;
            if (gpu_backend_kind_parse(v, &o->gpu_backend, sub, sizeof sub))
                return kgs_seterr(err, errlen, KGS_EINVAL, "--gpu-backend: %s", sub);
        } else if (flag_match(a, "sys-root", &iv)) {
            if ((rc = take_value(argc, argv, &i, iv, "sys-root", &o->sys_root, err, errlen)))
                return rc;
            if (!o->sys_root[0])
                return kgs_seterr(err, errlen, KGS_EINVAL, "--sys-root needs a directory");
        } else if (flag_match(a, "proc-root", &iv)) {
            if ((rc = take_value(argc, argv, &i, iv, "proc-root", &o->proc_root, err, errlen)))
                return rc;
            if (!o->proc_root[0])
                return kgs_seterr(err, errlen, KGS_EINVAL, "--proc-root needs a directory");
        } else if (flag_match(a, "output", &iv)) {
            if ((rc = take_value(argc, argv, &i, iv, "output", &o->output, err, errlen)))
                return rc;
            if (!o->output[0])
                return kgs_seterr(err, errlen, KGS_EINVAL, "--output needs a file name");
        } else if (flag_match(a, "processes", &iv)) {
            if ((rc = parse_bool(iv, "processes", &o->processes, err, errlen)))
                return rc;
        } else if (flag_match(a, "quiet", &iv)) {
            if ((rc = parse_bool(iv, "quiet", &o->quiet, err, errlen)))
                return rc;
        } else if (flag_match(a, "dry-run", &iv)) {
            if ((rc = parse_bool(iv, "dry-run", &o->dry_run, err, errlen)))
                return rc;
        } else if (flag_match(a, "version", &iv)) {
            o->version = true;
        } else if (flag_match(a, "help", &iv) || flag_match(a, "h", &iv)) {
            o->help = true;
        } else {
            return unknown_argument(a, err, errlen);
        }
    }
    if (count_set && o->interval_ns == 0 && o->count > 1)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "--count %llu needs --interval (without it gpu-metrics takes one "
                          "sample)",
                          (unsigned long long)o->count);
    return 0;
}
