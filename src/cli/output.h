/*
 * output.h - gpu-metrics output writers: table, JSON, JSON Lines, CSV.
 *
 * One schema everywhere (snake_case, units in field names, absent = null).
 * A writer keeps the state that spans samples (the CSV header is written
 * once per writer). Writers are pure formatting: they read a snapshot and
 * an env_info_t and write to a FILE*, nothing else.
 */
#ifndef KGS_CLI_OUTPUT_H
#define KGS_CLI_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>

#include "cli/proc_info.h"
#include "core/snapshot.h"
#include "env/cuda_index.h"
#include "env/env.h"

#define OUTPUT_SCHEMA_VERSION 1

typedef enum { OUTPUT_TABLE = 0, OUTPUT_JSON, OUTPUT_JSONL, OUTPUT_CSV } output_format_t;

/* Parses table|json|jsonl|csv. 0, or KGS_EINVAL naming the valid values. */
int output_format_parse(const char *s, output_format_t *out, char *err, size_t errlen);
const char *output_format_name(output_format_t f);

typedef struct {
    output_format_t format; /* public */
    /* public: --processes. The table lists each device's processes under
     * it; CSV writes one row per process (its own columns) instead of one
     * per device. JSON always carries them. */
    bool processes;
    bool _csv_header_done; /* private */
} output_writer_t;

/* A writer for `format`, processes off. */
void output_writer_init(output_writer_t *w, output_format_t format);

/* What gpu-metrics knows beside the snapshot. Every member may be NULL. */
typedef struct {
    const cuda_index_map_t *cuda; /* NULL: every CUDA index unknown */
    const proc_info_t *procs;     /* NULL, or one per snapshot process record */
    const char *procs_note;       /* why command and pod are unknown, or NULL */
} output_extra_t;

/*
 * Writes one sample: the devices of `snap` that `sel` selects (all when sel
 * is NULL), with the environment block from `env` and what `extra` adds
 * (NULL: nothing known beside the snapshot). Borrowed pointers.
 * Returns 0, KGS_EIO when writing to `out` failed, KGS_ENOMEM, or KGS_EINVAL
 * (NULL argument or unknown format).
 */
int output_write_sample(output_writer_t *w, FILE *out, const snapshot_t *snap,
                        const env_info_t *env, const device_selection_t *sel,
                        const output_extra_t *extra);

#endif
