/*
 * gpu-metrics - GPU metrics from NVML on bare metal, SLURM, Flux, Kubernetes
 * and containers, in table, JSON, JSON Lines and CSV.
 *
 * One shot: sweep once (twice, 150 ms apart, when a rate needs two
 * readings) and print. With --interval: the sampler thread sweeps on that
 * cadence and this thread prints each new snapshot until --count samples,
 * SIGINT or SIGTERM.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/options.h"
#include "cli/output.h"
#include "cli/proc_info.h"
#include "core/duration.h"
#include "core/err.h"
#include "core/log.h"
#include "env/cuda_index.h"
#include "env/env.h"
#include "gpu/select.h"
#include "nvml/collector.h"
#include "nvml/loader.h"
#include "gpu/sampler.h"

#ifndef KGS_VERSION
#define KGS_VERSION "0.0.0"
#endif
#ifndef KGS_GIT_DESCRIBE
#define KGS_GIT_DESCRIBE "unknown"
#endif

enum { EXIT_OK = 0, EXIT_NVML = 1, EXIT_USAGE = 2, EXIT_GPU_UNHEALTHY = 3 };

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig) {
    (void)sig;
    stop_requested = 1;
}

static void usage_error(const char *msg) {
    fprintf(stderr, "gpu-metrics: %s\n", msg);
    fprintf(stderr, "usage: gpu-metrics [--format table|json|jsonl|csv] [--interval DURATION] "
                    "[--count N] [--device LIST] [--env auto|k8s|kubernetes|slurm|flux|standalone] "
                    "[--output FILE] [--nvml-library PATH] [--processes] [--quiet] [--dry-run] "
                    "[--version]\n");
}

static void print_dry_run(FILE *out, const cli_options_t *o, const env_info_t *env,
                          const char *output_path) {
    char dur[32];
    fprintf(out, "Environment:   %s\n", env_kind_name(env->orchestrator));
    fprintf(out, "Node:          %s\n", env->node[0] ? env->node : "(unknown)");
    if (env->job_id[0]) {
        fprintf(out, "Job:           %s", env->job_id);
        if (env->job_name[0])
            fprintf(out, " (%s)", env->job_name);
        if (env->task_rank >= 0)
            fprintf(out, " rank %d", env->task_rank);
        fputc('\n', out);
    }
    if (env->partition[0])
        fprintf(out, "Partition:     %s\n", env->partition);
    if (env->pod_name[0])
        fprintf(out, "Pod:           %s/%s\n", env->namespace_[0] ? env->namespace_ : "-",
                env->pod_name);
    if (o->device)
        fprintf(out, "Devices:       %s (from --device)\n", o->device);
    else if (env->visible_var[0])
        fprintf(out, "Devices:       %s (from %s)\n", env->visible_list, env->visible_var);
    else
        fprintf(out, "Devices:       all\n");
    fprintf(out, "CUDA:          CUDA_VISIBLE_DEVICES %s%s%s, CUDA_DEVICE_ORDER %s\n",
            env->cuda_visible_set ? "\"" : "unset", env->cuda_visible_set ? env->cuda_visible : "",
            env->cuda_visible_set ? "\"" : "",
            env->cuda_order_set ? env->cuda_order : "unset (FASTEST_FIRST)");
    fprintf(out, "Format:        %s\n", output_format_name(o->format));
    fprintf(out, "Interval:      %s\n",
            o->interval_ns ? duration_format(o->interval_ns, dur, sizeof dur) : "one shot");
    if (o->count)
        fprintf(out, "Count:         %llu\n", (unsigned long long)o->count);
    fprintf(out, "GPU backend:   %s\n", gpu_backend_kind_name(o->gpu_backend));
    fprintf(out, "NVML library:  %s\n", o->nvml_library ? o->nvml_library : NVML_DEFAULT_LIBRARY);
    fprintf(out, "Output:        %s\n", output_path ? output_path : "stdout");
}

/* 3 when any selected GPU is lost, needs a reset or errors; else 0. */
static int health_exit_code(const snapshot_t *s, const device_selection_t *sel) {
    for (unsigned i = 0; i < s->gpu_count; i++) {
        const gpu_record_t *g = &s->gpus[i];
        if (!device_selection_has_gpu(sel, g)) {
            bool any_mig = false;
            for (unsigned m = 0; m < g->mig_count; m++)
                any_mig |= device_selection_has_mig(sel, s, g->mig_first + m);
            if (!any_mig)
                continue;
        }
        if (g->health != GPU_HEALTH_OK)
            return EXIT_GPU_UNHEALTHY;
    }
    return EXIT_OK;
}

/* What a sample needs beside the snapshot, and what stays across samples. */
typedef struct {
    const env_info_t *env;
    const device_selection_t *sel;
    proc_lookup_t lookup;
    bool quiet;
    char last_note[CUDA_INDEX_NOTE_MAX + 1024]; /* the last note put on stderr (CSV) */
} sample_ctx_t;

/* CSV has no place for a note: stderr, once for each new one. */
static void note_once(sample_ctx_t *c, const char *what, const char *note) {
    char line[sizeof c->last_note];
    if (c->quiet || !note || !note[0])
        return;
    snprintf(line, sizeof line, "%s: %s", what, note);
    if (strcmp(line, c->last_note) == 0)
        return;
    snprintf(c->last_note, sizeof c->last_note, "%s", line);
    fprintf(stderr, "gpu-metrics: note: %s\n", line);
}

/* Writes one sample with its CUDA indexes and, where printed, what /proc
 * says about its processes. */
static int write_sample(sample_ctx_t *c, output_writer_t *w, FILE *out, const snapshot_t *snap) {
    cuda_index_map_t cuda;
    proc_info_t *infos = NULL;
    int rc = cuda_index_map_build(c->env, snap, &cuda);
    bool wants_procs = w->format == OUTPUT_JSON || w->format == OUTPUT_JSONL || w->processes;
    if (rc == 0 && wants_procs && snap->proc_total) {
        infos = calloc(snap->proc_total, sizeof *infos);
        if (!infos)
            rc = KGS_ENOMEM;
        else
            proc_lookup_fill(&c->lookup, snap, infos);
    }
    if (rc == 0) {
        output_extra_t x = {.cuda = &cuda,
                            .procs = infos,
                            .procs_note = c->lookup.host_pidns ? NULL : c->lookup.why};
        errno = 0;
        rc = output_write_sample(w, out, snap, c->env, c->sel, &x);
        if (w->format == OUTPUT_CSV && rc == 0) {
            note_once(c, "cuda_index unknown", cuda.note);
            if (w->processes && snap->proc_total)
                note_once(c, "command and pod unknown", x.procs_note);
        }
    }
    if (rc != 0)
        fprintf(stderr, "gpu-metrics: write output: %s%s%s\n", kgs_err_str(rc),
                rc == KGS_EIO && errno ? ": " : "", rc == KGS_EIO && errno ? strerror(errno) : "");
    free(infos);
    cuda_index_map_deinit(&cuda);
    return rc;
}

static void sleep_ns(uint64_t ns) {
    struct timespec ts = {.tv_sec = (time_t)(ns / NS_PER_SEC), .tv_nsec = (long)(ns % NS_PER_SEC)};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR && !stop_requested) {
    }
}

/*
 * The first sweep: tells whether NVML works, and primes the counters that
 * need two readings (NVLink rates, GPM). A failed initialisation is
 * reported here, once, and ends the program: the collector's own warning
 * ("... failed: <NVML's error>; retrying in 1 s") would repeat NVML's error
 * and promise a retry that never comes, so the sweep runs with warnings
 * held back. Later sweeps warn as usual. EXIT_OK and *snap, or EXIT_NVML.
 */
static int first_sweep(gpu_backend_t *backend, logger_t *log, const nvml_loader_t *loader,
                       snapshot_t **snap) {
    log_level_t level = log->level;
    if (log->level < LOG_ERROR)
        log->level = LOG_ERROR;
    int sampled = gpu_backend_sample(backend, clock_mono_now(), snap);
    log->level = level;
    if (sampled != 0) {
        fprintf(stderr, "gpu-metrics: out of memory\n");
        return EXIT_NVML;
    }
    if ((*snap)->status != SNAPSHOT_NVML_DOWN)
        return EXIT_OK;
    /* An AMD reader's message (alone, or an AMD half of a mixed node) says
     * where it looked: no NVIDIA hint for it. */
    if (!loader || strcmp(snapshot_down_subject(*snap), "NVML") != 0) {
        fprintf(stderr, "gpu-metrics: %s\n", (*snap)->error);
        return EXIT_NVML;
    }
    fprintf(stderr, "gpu-metrics: NVML unavailable: %s\n", (*snap)->error);
    /* What the library said is above (nvmlErrorString); the hint is the
     * same for any library, a driver's or the stand-in's. */
    fprintf(stderr,
            "gpu-metrics: hint: %s could not initialise (its reason above); with the NVIDIA "
            "driver, check that it is loaded (nvidia-smi) and this user may open /dev/nvidia*.\n",
            nvml_loader_path(loader));
    return EXIT_NVML;
}

/*
 * The devices to show: --device, else the scheduler's list, else all.
 * CUDA_VISIBLE_DEVICES means what CUDA makes of it (its list ends at the
 * first invalid entry, "-1" = no GPU); every other list, and --device,
 * must name only devices that exist. EXIT_OK, or EXIT_USAGE said on stderr.
 */
static int select_devices(const cli_options_t *o, const env_info_t *env, const snapshot_t *snap,
                          device_selection_t *sel) {
    const char *list_var = o->device ? "--device" : env->visible_var;
    const char *list = o->device ? o->device : env->visible_list;
    if (!o->device && !env->visible_var[0]) {
        memset(sel, 0, sizeof *sel);
        sel->all_gpus = true;
        return EXIT_OK;
    }
    bool cuda = !o->device && strcmp(list_var, "CUDA_VISIBLE_DEVICES") == 0;
    char note[768] = "", err[1024];
    int rc =
        cuda ? device_selection_resolve_cuda(list, snap, sel, note, sizeof note, err, sizeof err)
             : device_selection_resolve(list_var, list, snap, sel, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "gpu-metrics: %s\n", err);
        return EXIT_USAGE;
    }
    if (!o->quiet && note[0])
        fprintf(stderr, "gpu-metrics: note: %s\n", note);
    else if (!o->quiet && !o->device && !sel->all_gpus && sel->gpu_count == 0 &&
             sel->mig_count == 0)
        fprintf(stderr, "gpu-metrics: note: %s=\"%s\" selects no GPU\n", list_var, list);
    return EXIT_OK;
}

/* --interval: prints each new snapshot of the running sampler until
 * --count samples or a signal. *snap holds the last one printed (the
 * caller releases it). Returns the exit code. */
static int print_continuously(const cli_options_t *o, sampler_t *sampler, sample_ctx_t *sc,
                              output_writer_t *writer, FILE *out, snapshot_t **snap) {
    bool live_table = o->format == OUTPUT_TABLE && out == stdout && isatty(STDOUT_FILENO);
    uint64_t last_seq = 0, printed = 0;
    int exit_code = EXIT_OK;
    while (!stop_requested && (o->count == 0 || printed < o->count)) {
        /* Short waits so a signal is noticed promptly. */
        snapshot_t *next = sampler_wait_newer(sampler, last_seq, 200 * NS_PER_MS);
        if (!next)
            continue;
        snapshot_unref(*snap);
        *snap = next;
        last_seq = next->seq;
        if (live_table)
            fputs("\033[H\033[2J", out); /* redraw in place, like watch(1) */
        if (write_sample(sc, writer, out, next) != 0)
            return EXIT_USAGE;
        fflush(out);
        printed++;
        exit_code =
            next->status == SNAPSHOT_NVML_DOWN ? EXIT_NVML : health_exit_code(next, sc->sel);
    }
    return exit_code;
}

/* One shot: a fresh sweep (the first one primed the rates), printed.
 * *snap is replaced by it (the caller releases it). Returns the exit code. */
static int print_once(gpu_backend_t *backend, bool nvml, sample_ctx_t *sc, output_writer_t *writer,
                      FILE *out, snapshot_t **snap) {
    snapshot_unref(*snap);
    *snap = NULL;
    if (gpu_backend_sample(backend, clock_mono_now(), snap) != 0)
        return EXIT_NVML;
    if ((*snap)->status == SNAPSHOT_NVML_DOWN) {
        fprintf(stderr, "gpu-metrics: %s%s%s\n", nvml ? snapshot_down_subject(*snap) : "",
                nvml ? " unavailable: " : "", (*snap)->error);
        return EXIT_NVML;
    }
    if (write_sample(sc, writer, out, *snap) != 0)
        return EXIT_USAGE;
    return health_exit_code(*snap, sc->sel);
}

/* --interval: the sampler thread owns the backend from here (*backend is
 * emptied, *sampler set for the caller to stop); SIGINT and SIGTERM end
 * the printing. Returns the exit code. */
static int print_every_interval(const cli_options_t *o, logger_t *log, gpu_backend_t *backend,
                                sample_ctx_t *sc, output_writer_t *writer, FILE *out,
                                sampler_t **sampler, snapshot_t **snap) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    sampler_opts_t so = {.interval_ns = o->interval_ns, .log = log};
    gpu_backend_t handed = *backend;
    *backend = (gpu_backend_t){0};
    char err[1024];
    if (sampler_start(handed, &so, sampler, err, sizeof err) != 0) {
        fprintf(stderr, "gpu-metrics: %s\n", err);
        return EXIT_NVML;
    }
    return print_continuously(o, *sampler, sc, writer, out, snap);
}

int main(int argc, char **argv) {
    cli_options_t o;
    char err[1024];
    if (cli_options_parse(argc, argv, &o, err, sizeof err) != 0) {
        usage_error(err);
        return EXIT_USAGE;
    }
    if (o.help) {
        fputs(cli_usage_text, stdout);
        return EXIT_OK;
    }
    if (o.version) {
        printf("gpu-metrics %s (%s)\n", KGS_VERSION, KGS_GIT_DESCRIBE);
        return EXIT_OK;
    }

    logger_t log = {.level = o.quiet ? LOG_OFF : LOG_WARN, .out = stderr};

    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0)
        host[0] = '\0';
    env_info_t env;
    if (env_detect(o.env, env_getter_process, NULL, host, &env, err, sizeof err) != 0) {
        usage_error(err);
        return EXIT_USAGE;
    }

    char output_path[4096];
    const char *out_path = NULL;
    if (o.output) {
        if (env_expand_output_path(o.output, &env, output_path, sizeof output_path, err,
                                   sizeof err) != 0) {
            usage_error(err);
            return EXIT_USAGE;
        }
        out_path = output_path;
    }

    if (o.dry_run) {
        print_dry_run(stdout, &o, &env, out_path);
        return EXIT_OK;
    }

    gpu_select_opts_t so_gpu = {.kind = o.gpu_backend,
                                .nvml_library = o.nvml_library,
                                .sys_root = o.sys_root,
                                .proc_root = o.proc_root,
                                .node_name = env.node,
                                .log = &log};
    gpu_selection_t gpu;
    if (gpu_backend_select(&so_gpu, &gpu, err, sizeof err) != 0) {
        fprintf(stderr, "gpu-metrics: %s\n", err);
        if (o.gpu_backend != GPU_BACKEND_AMDGPU_SYSFS)
            fprintf(stderr, "gpu-metrics: hint: is the NVIDIA driver installed and its library on "
                            "the library path? In a container, run with the NVIDIA runtime "
                            "(NVIDIA_DRIVER_CAPABILITIES=utility); or name the library with "
                            "--nvml-library PATH. On AMD GPUs without ROCm: --gpu-backend "
                            "amdgpu-sysfs (docs/amd.md).\n");
        return EXIT_NVML;
    }
    nvml_loader_t *loader = gpu.loader;
    LOG_DEBUG(&log, "GPU backend %s", gpu.why);

    int exit_code = EXIT_OK;
    gpu_backend_t backend = gpu.backend;
    gpu.backend = (gpu_backend_t){0};
    sampler_t *sampler = NULL;
    snapshot_t *snap = NULL;
    FILE *out = stdout;
    device_selection_t sel;

    if ((exit_code = first_sweep(&backend, &log, loader, &snap)) != EXIT_OK)
        goto done;
    if ((exit_code = select_devices(&o, &env, snap, &sel)) != EXIT_OK)
        goto done;

    if (out_path) {
        out = fopen(out_path, "w");
        if (!out) {
            fprintf(stderr, "gpu-metrics: open --output %s: %s\n", out_path, strerror(errno));
            out = stdout;
            exit_code = EXIT_USAGE;
            goto done;
        }
    }

    output_writer_t writer;
    output_writer_init(&writer, o.format);
    writer.processes = o.processes;
    sample_ctx_t sc = {.env = &env, .sel = &sel, .quiet = o.quiet};
    proc_lookup_init(&sc.lookup, "/proc");

    if (gpu_backend_wants_second_sample(&backend))
        sleep_ns(COLLECTOR_RATE_WINDOW_NS);

    if (o.interval_ns == 0)
        exit_code = print_once(&backend, loader != NULL, &sc, &writer, out, &snap);
    else
        exit_code = print_every_interval(&o, &log, &backend, &sc, &writer, out, &sampler, &snap);

done:
    sampler_stop(sampler);
    gpu_backend_deinit(&backend);
    snapshot_unref(snap);
    if (out != stdout && fclose(out) != 0 && exit_code == EXIT_OK) {
        fprintf(stderr, "gpu-metrics: close --output %s: %s\n", out_path, strerror(errno));
        exit_code = EXIT_USAGE;
    }
    gpu_selection_deinit(&gpu); /* the library, now that nothing calls it */
    return exit_code;
}
