/*
 * options.h - gpu-metrics command-line flags, parsed without side effects
 * so the parser is unit-testable. Flags accept "--name value",
 * "--name=value" and the single-dash forms the Go tool accepted.
 */
#ifndef KGS_CLI_OPTIONS_H
#define KGS_CLI_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli/output.h"
#include "env/env.h"
#include "gpu/backend_kind.h"

typedef struct {
    output_format_t format;
    uint64_t interval_ns; /* 0 = one shot */
    uint64_t count;       /* samples to print; 0 = until interrupted (interval mode) */
    const char *device;   /* --device list, NULL = from the environment; borrowed from argv */
    bool processes;       /* --processes: list processes in the table, one CSV row each */
    bool quiet;
    env_kind_t env;
    bool dry_run;
    bool version;
    bool help;
    const char *nvml_library;       /* NULL = libnvidia-ml.so.1 */
    gpu_backend_kind_t gpu_backend; /* --gpu-backend, default auto */
    const char *sys_root;           /* --sys-root, NULL = /sys (amdgpu-sysfs) */
    const char *proc_root;          /* --proc-root, NULL = /proc (amdgpu-sysfs fdinfo) */
    const char *output;             /* template, NULL = stdout */
} cli_options_t;

/*
 * Parses argv[1..argc-1] into *o (defaults first). Returns 0, or KGS_EINVAL
 * with a message naming the flag and the valid values. Pointers in *o are
 * borrowed from argv.
 */
int cli_options_parse(int argc, char **argv, cli_options_t *o, char *err, size_t errlen);

/* The --help text. */
extern const char cli_usage_text[];

#endif
