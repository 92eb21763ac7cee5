/*
 * output.c - gpu-metrics output writers: table, JSON, JSON Lines, CSV.
 *
 * DESIGN
 *
 * One schema in every format. Field names are snake_case with the unit in
 * the name (memory_used_bytes, power_draw_watts). A field whose validity bit
 * is clear is absent: JSON null, an empty CSV cell, "-" in the table; it is
 * never printed as 0. This replaces the Go CLI's PascalCase device keys,
 * pretty-printed "jsonl", per-sample CSV header and null `devices`
 * (reference §11.D item 27).
 *
 * Numbers. Integers are printed as integers. Doubles are printed with 15
 * significant digits ("%.15g", the most that survive a decimal round trip,
 * so 71.3 stays 71.3 rather than 71.299999999999997) and always carry a
 * decimal point ("312.0"), in JSON and CSV alike. Every value we print is far
 * below 1e15, so no exponent appears. A non-finite double is treated as
 * absent.
 *
 * Strings from NVML and from the environment are untrusted bytes. Invalid
 * UTF-8 becomes U+FFFD everywhere (jansson refuses invalid UTF-8, and a CSV
 * reader would choke on it); in the table, control characters also become
 * '?' so they cannot break the alignment or the terminal.
 *
 * Selection. sel == NULL or sel->all_gpus prints everything. Otherwise a GPU
 * that device_selection_has_gpu() selects is printed whole, with all its MIG
 * instances (env.h: "whole GPUs, with their MIG instances"). A MIG instance
 * selected on its own (device_selection_has_mig()) is printed under its
 * parent GPU; the parent entry then carries its own identity and metrics
 * too, because the instance's context lives there (temperature, power,
 * clocks, health are per physical GPU), but it lists only the selected
 * instances. In CSV that parent still gets its own row.
 *
 * CSV follows RFC 4180 except that records end in "\n" (as Go's
 * encoding/csv and the Go CLI did): a cell is quoted when it holds a comma,
 * a double quote, CR or LF, and quotes inside are doubled. The header is
 * written once per writer. MIG rows leave the per-GPU columns empty.
 *
 * Table. A banner (environment, node, job and rank or pod, driver, time),
 * a blank line, then one row per GPU and an indented row per MIG instance.
 * "-" marks an absent value; a blank cell in a MIG row means "not measured
 * per instance". Names are cut at 22 display columns with "…"; widths are
 * counted in display columns (one per code point), so "°", "└" and "…"
 * line up. Nothing depends on the time of day except the timestamp itself.
 *
 * CUDA index. Beside NVML's index every device and MIG instance carries
 * cuda_index and cuda_visible from the cuda_index_map_t the caller passes
 * (env/cuda_index.h decides them; no map = all unknown). An unknown one is
 * null, "" or "-", and its reason travels once per sample: JSON's
 * cuda_index_note, a line under the table; CSV has no place for it (the
 * caller puts it on stderr).
 *
 * Processes. NVML's per-device (and per-MIG-instance) lists come from the
 * snapshot; what /proc says about each process (command, pod) comes from
 * the caller, in an array parallel to snapshot->procs. An absent list is
 * null with processes_error, never an empty one: "no process" and "NVML
 * did not say" must stay apart. JSON always carries the lists; the table
 * and CSV only with --processes (writer.processes), since they are rows of
 * another shape: indented lines, or CSV rows with their own header.
 *
 * Write errors. Every sample ends with fflush(), so a continuous run streams
 * sample by sample and a full disk or closed pipe is seen at the sample that
 * hit it: KGS_EIO.
 */
#include "cli/output.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "core/err.h"
#include "core/suggest.h"

/* JSON/CSV name of each gpu_field_t, indexed by the enum. */
static const char *const field_json_names[GPU_F_COUNT] = {
    [GPU_F_GPU_UTIL] = "gpu_utilization_percent",
    [GPU_F_MEM_UTIL] = "memory_utilization_percent",
    [GPU_F_MEM_USED] = "memory_used_bytes",
    [GPU_F_MEM_TOTAL] = "memory_total_bytes",
    [GPU_F_MEM_RESERVED] = "memory_reserved_bytes",
    [GPU_F_TEMPERATURE] = "temperature_celsius",
    [GPU_F_POWER] = "power_draw_watts",
    [GPU_F_POWER_LIMIT] = "power_limit_watts",
    [GPU_F_ENERGY] = "energy_joules",
    [GPU_F_PCIE_TX] = "pcie_tx_bytes_per_second",
    [GPU_F_PCIE_RX] = "pcie_rx_bytes_per_second",
    [GPU_F_NVLINK_TX] = "nvlink_tx_bytes_per_second",
    [GPU_F_NVLINK_RX] = "nvlink_rx_bytes_per_second",
    [GPU_F_SM_CLOCK] = "sm_clock_mhz",
    [GPU_F_CLOCK_EVENT_REASONS] = "clock_event_reasons",
    [GPU_F_SM_ACTIVE] = "sm_active_percent",
    [GPU_F_SM_OCCUPANCY] = "sm_occupancy_percent",
    [GPU_F_DRAM_BW_UTIL] = "dram_bandwidth_utilization_percent",
};
_Static_assert(GPU_F_COUNT == 18, "a new gpu field needs a JSON name and a metric column");

/* NVML_ERROR_NOT_SUPPORTED: the device lacks the field; not an error to report. */
#define OUTPUT_NVML_NOT_SUPPORTED 3

/* NVML clocks-event (formerly throttle) reason bits, in bit order. */
static const struct {
    uint64_t bit;
    const char *name;
} clock_reasons[] = {
    {0x1, "gpu_idle"},
    {0x2, "applications_clocks_setting"},
    {0x4, "sw_power_cap"},
    {0x8, "hw_slowdown"},
    {0x10, "sync_boost"},
    {0x20, "sw_thermal_slowdown"},
    {0x40, "hw_thermal_slowdown"},
    {0x80, "hw_power_brake_slowdown"},
    {0x100, "display_clock_setting"},
};

/* The metric columns, in order: one per GPU field, plus memory_used_percent
 * (derived) right after memory_reserved_bytes. Shared by CSV. */
#define OUTPUT_METRIC_DERIVED_MEM_PCT (-1)
static const int metric_columns[] = {
    GPU_F_GPU_UTIL,     GPU_F_MEM_UTIL,
    GPU_F_MEM_USED,     GPU_F_MEM_TOTAL,
    GPU_F_MEM_RESERVED, OUTPUT_METRIC_DERIVED_MEM_PCT,
    GPU_F_TEMPERATURE,  GPU_F_POWER,
    GPU_F_POWER_LIMIT,  GPU_F_ENERGY,
    GPU_F_PCIE_TX,      GPU_F_PCIE_RX,
    GPU_F_NVLINK_TX,    GPU_F_NVLINK_RX,
    GPU_F_SM_CLOCK,     GPU_F_CLOCK_EVENT_REASONS,
    GPU_F_SM_ACTIVE,    GPU_F_SM_OCCUPANCY,
    GPU_F_DRAM_BW_UTIL,
};
#define METRIC_COLUMN_COUNT (sizeof metric_columns / sizeof metric_columns[0])

static const char *const csv_id_columns[] = {
    "collected_at",
    "orchestrator",
    "node",
    "job_id",
    "task_rank",
    "driver_version",
    "index",
    "cuda_index",
    "cuda_visible",
    "uuid",
    "name",
    "pci_bus_id",
    "health",
    "is_mig_instance",
    "parent_index",
    "mig_profile",
    "gpu_instance_id",
    "compute_instance_id",
};
#define CSV_ID_COLUMN_COUNT (sizeof csv_id_columns / sizeof csv_id_columns[0])

/* After the metric columns of a device row. */
static const char *const csv_tail_columns[] = {"process_count", "processes_error"};

/* The columns of --processes CSV: one row per process. */
static const char *const csv_process_columns[] = {
    "collected_at",
    "orchestrator",
    "node",
    "job_id",
    "task_rank",
    "driver_version",
    "index",
    "cuda_index",
    "uuid",
    "is_mig_instance",
    "gpu_instance_id",
    "compute_instance_id",
    "pid",
    "command",
    "used_memory_bytes",
    "sm_utilization_percent",
    "memory_utilization_percent",
    "pod_uid",
    "container_id",
};

/* ------------------------------------------------------------------------ */
/* Format names                                                             */

static const char *const format_names[] = {[OUTPUT_TABLE] = "table",
                                           [OUTPUT_JSON] = "json",
                                           [OUTPUT_JSONL] = "jsonl",
                                           [OUTPUT_CSV] = "csv"};

int output_format_parse(const char *s, output_format_t *out, char *err, size_t errlen) {
    if (s) {
        for (size_t i = 0; i < sizeof format_names / sizeof format_names[0]; i++) {
            if (strcmp(s, format_names[i]) == 0) {
                *out = (output_format_t)i;
                return 0;
            }
        }
    }
    const char *hint = s ? suggest_value(s, strlen(s), format_names,
                                         sizeof format_names / sizeof format_names[0], NULL, 0)
                         : NULL;
    if (hint)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "parse --format '%s': unknown format; valid: table, json, jsonl, csv; "
                          "did you mean '%s'?",
                          s, hint);
    return kgs_seterr(err, errlen, KGS_EINVAL,
                      "parse --format '%s': unknown format; valid: table, json, jsonl, csv",
                      s ? s : "(null)");
}

const char *output_format_name(output_format_t f) {
    return (unsigned)f < sizeof format_names / sizeof format_names[0] ? format_names[f] : "?";
}

void output_writer_init(output_writer_t *w, output_format_t format) {
    w->format = format;
    w->processes = false;
    w->_csv_header_done = false;
}

/* ------------------------------------------------------------------------ */
/* Strings and numbers                                                      */

/*
 * Decodes one well-formed UTF-8 sequence at s (n bytes available). Returns
 * its length and the code point, or 0 when the bytes are not well formed
 * (overlong forms, surrogates and values above U+10FFFF included).
 */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp) {
    unsigned char c = s[0];
    size_t len;
    uint32_t v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
        len = 2, v = c & 0x1Fu, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3, v = c & 0x0Fu, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4, v = c & 0x07u, min = 0x10000;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0u) != 0x80u)
            return 0;
        v = (v << 6) | (s[i] & 0x3Fu);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *cp = v;
    return len;
}

/*
 * Copies the string in src (at most srcmax bytes; fixed-size record fields
 * may lack their NUL) into dst (dstlen bytes, NUL-terminated) as valid
 * UTF-8: each byte that does not start a well-formed sequence becomes
 * U+FFFD. With `printable`, control characters become '?' as well (for the
 * table). Truncates at a character boundary. Returns the bytes written.
 */
static size_t text_sanitize(const char *src, size_t srcmax, char *dst, size_t dstlen,
                            bool printable) {
    static const char replacement[] = "\xEF\xBF\xBD";
    size_t n = src ? strnlen(src, srcmax) : 0, o = 0;
    const unsigned char *s = (const unsigned char *)src;
    if (dstlen == 0)
        return 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t len = utf8_decode(s + i, n - i, &cp);
        const char *piece = (const char *)s + i;
        size_t plen = len;
        if (len == 0) {
            piece = replacement, plen = 3, len = 1;
        } else if (printable && (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0))) {
            piece = "?", plen = 1;
        }
        if (o + plen >= dstlen)
            break;
        memcpy(dst + o, piece, plen);
        o += plen;
        i += len;
    }
    dst[o] = '\0';
    return o;
}

/* Display columns of valid UTF-8: one per code point. Good for the ASCII,
 * Latin and box-drawing text we print; East Asian wide characters in a GPU
 * name would be under-counted (none exist in NVML product names). */
static size_t text_width(const char *s) {
    size_t w = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0u) != 0x80u)
            w++;
    return w;
}

/* Truncates valid UTF-8 in place to at most `cols` display columns, ending
 * in "…" when something was cut. buf must have room for the 3-byte "…". */
static void text_truncate(char *buf, size_t bufsize, size_t cols) {
    if (text_width(buf) <= cols || cols == 0)
        return;
    size_t w = 0, i = 0;
    for (; buf[i]; i++) {
        if (((unsigned char)buf[i] & 0xC0u) != 0x80u) {
            if (w == cols - 1)
                break;
            w++;
        }
    }
    if (i + 4 <= bufsize)
        memcpy(buf + i, "\xE2\x80\xA6", 4); /* "…" and the NUL */
}

/* Same text as jansson prints for a real under JSON_REAL_PRECISION(15):
 * "%.15g", plus ".0" when that looks like an integer. */
static void format_real(char *buf, size_t len, double v) {
    snprintf(buf, len, "%.15g", v);
    if (!strpbrk(buf, ".eEn") && strlen(buf) + 2 < len)
        strcat(buf, ".0");
}

/* RFC 3339 UTC with milliseconds, e.g. 2026-11-29T17:40:01.123Z. */
static void format_timestamp(char *buf, size_t len, int64_t wall_ms) {
    int64_t secs = wall_ms / 1000, ms = wall_ms % 1000;
    if (ms < 0)
        ms += 1000, secs -= 1;
    time_t t = (time_t)secs;
    struct tm tm;
    if (!gmtime_r(&t, &tm)) {
        snprintf(buf, len, "1970-01-01T00:00:00.000Z");
        return;
    }
    snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)ms);
}

/* Writes the reason names of `mask` separated by `sep` into buf; unknown
 * bits are written one by one as "0x200". */
static void format_clock_reasons(char *buf, size_t len, uint64_t mask, const char *sep) {
    size_t o = 0;
    buf[0] = '\0';
    for (unsigned bit = 0; bit < 64; bit++) {
        uint64_t b = (uint64_t)1 << bit;
        if (!(mask & b))
            continue;
        char hex[24];
        const char *name = NULL;
        for (size_t i = 0; i < sizeof clock_reasons / sizeof clock_reasons[0]; i++)
            if (clock_reasons[i].bit == b)
                name = clock_reasons[i].name;
        if (!name) {
            snprintf(hex, sizeof hex, "0x%" PRIx64, b);
            name = hex;
        }
        int n = snprintf(buf + o, len - o, "%s%s", o ? sep : "", name);
        if (n < 0 || (size_t)n >= len - o)
            return;
        o += (size_t)n;
    }
}

static bool mig_memory_used_pct(const mig_record_t *m, double *out_pct) {
    if (!mig_has(m, GPU_F_MEM_USED) || !mig_has(m, GPU_F_MEM_TOTAL) || m->memory_total_bytes == 0)
        return false;
    *out_pct = (double)m->memory_used_bytes * 100.0 / (double)m->memory_total_bytes;
    return true;
}

/* The node name: the environment's, else NVML's host name, else none. */
static const char *node_name(const snapshot_t *snap, const env_info_t *env) {
    if (env && env->node[0])
        return env->node;
    if (snap->node_name[0])
        return snap->node_name;
    return "";
}

/* ------------------------------------------------------------------------ */
/* Selection                                                                */

/* Slots [first, end) of g's instances in snap->mig, clamped to mig_total so
 * a bad record cannot send us out of bounds. */
static void gpu_mig_range(const snapshot_t *snap, const gpu_record_t *g, unsigned *first,
                          unsigned *end) {
    unsigned f = g->mig_first, c = g->mig_count;
    if (f > snap->mig_total)
        f = snap->mig_total;
    if (c > snap->mig_total - f)
        c = snap->mig_total - f;
    *first = f;
    *end = f + c;
}

static bool select_all(const device_selection_t *sel) {
    return sel == NULL || sel->all_gpus;
}

static bool mig_selected(const device_selection_t *sel, const snapshot_t *snap,
                         const gpu_record_t *g, unsigned slot) {
    return select_all(sel) || device_selection_has_gpu(sel, g) ||
           device_selection_has_mig(sel, snap, slot);
}

/* A GPU is shown when selected itself or when one of its instances is. */
static bool gpu_shown(const device_selection_t *sel, const snapshot_t *snap,
                      const gpu_record_t *g) {
    if (select_all(sel) || device_selection_has_gpu(sel, g))
        return true;
    unsigned first, end;
    gpu_mig_range(snap, g, &first, &end);
    for (unsigned s = first; s < end; s++)
        if (device_selection_has_mig(sel, snap, s))
            return true;
    return false;
}

/* ------------------------------------------------------------------------ */
/* CUDA index and processes                                                 */

static const cuda_index_t cuda_unknown = {CUDA_INDEX_UNKNOWN, 0};

/* The CUDA index of GPU record g (in snap->gpus) or of MIG slot `slot`;
 * unknown without a map. */
static cuda_index_t cuda_of_gpu(const output_extra_t *x, const snapshot_t *snap,
                                const gpu_record_t *g) {
    size_t pos = (size_t)(g - snap->gpus);
    /* CUDA does not enumerate AMD GPUs: no CUDA index, nor a note about one. */
    if (!x || !x->cuda || pos >= x->cuda->gpu_count || g->vendor == GPU_VENDOR_AMD)
        return cuda_unknown;
    return x->cuda->gpu[pos];
}

static cuda_index_t cuda_of_mig(const output_extra_t *x, unsigned slot) {
    if (!x || !x->cuda || slot >= x->cuda->mig_count)
        return cuda_unknown;
    return x->cuda->mig[slot];
}

/* The note for an unknown CUDA index, when some shown device has one. */
static const char *cuda_note(const output_extra_t *x, const snapshot_t *snap,
                             const device_selection_t *sel) {
    if (!x || !x->cuda || !x->cuda->note[0])
        return NULL;
    for (unsigned i = 0; i < snap->gpu_count; i++) {
        const gpu_record_t *g = &snap->gpus[i];
        if (!gpu_shown(sel, snap, g) || g->vendor == GPU_VENDOR_AMD)
            continue;
        cuda_index_state_t st = cuda_of_gpu(x, snap, g).state;
        bool open = st == CUDA_INDEX_UNKNOWN || st == CUDA_INDEX_VISIBLE;
        unsigned first, end;
        gpu_mig_range(snap, g, &first, &end);
        for (unsigned s = first; s < end && !open; s++)
            open = mig_selected(sel, snap, g, s) && cuda_of_mig(x, s).state == CUDA_INDEX_UNKNOWN;
        if (open)
            return x->cuda->note;
    }
    return NULL;
}

/* Why a process list is absent, or NULL when it is present: NVML's code
 * name; MIG_ENABLED for a GPU in MIG mode (each instance lists its own);
 * the health code of a lost GPU; FUNCTION_NOT_FOUND when no variant of the
 * call exists in this driver. */
static const char *procs_error(const proc_list_t *pl, const gpu_record_t *g, bool whole_gpu) {
    if (pl->list_ok)
        return NULL;
    if (whole_gpu && g->mig_enabled)
        return "MIG_ENABLED";
    if (g->health != GPU_HEALTH_OK && g->health_nvml_code != 0)
        return nvml_code_name(g->health_nvml_code);
    if (pl->list_code != 0)
        return nvml_code_name(pl->list_code);
    return "FUNCTION_NOT_FOUND";
}

/* The records of a present list, clamped to the snapshot. */
static unsigned procs_count(const snapshot_t *snap, const proc_list_t *pl) {
    if (!pl->list_ok || pl->first > snap->proc_total)
        return 0;
    return pl->count <= snap->proc_total - pl->first ? pl->count : snap->proc_total - pl->first;
}

/* What /proc said about process record i, or NULL. */
static const proc_info_t *proc_info_of(const output_extra_t *x, unsigned i) {
    return x && x->procs ? &x->procs[i] : NULL;
}

/* The pod of process record i: the snapshot's when the agent attributed
 * it, else /proc's; "" when none is known. */
static const char *proc_pod(const snapshot_t *snap, const output_extra_t *x, unsigned i,
                            bool container) {
    const proc_record_t *p = &snap->procs[i];
    const proc_info_t *info = proc_info_of(x, i);
    if (snap->procs_attributed)
        return container ? p->container_id : p->pod_uid;
    if (info && info->pod_ok)
        return container ? info->container_id : info->pod_uid;
    return "";
}

/* ------------------------------------------------------------------------ */
/* Output helpers                                                           */

/* Ends a sample: flush, and report any error the stream saw. */
static int out_finish(FILE *out) {
    if (fflush(out) != 0 || ferror(out))
        return KGS_EIO;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* JSON                                                                     */

typedef struct {
    bool ok; /* false once an allocation failed */
} json_build_t;

/* Sets obj[key] = v, taking v. Records failure (NULL v or OOM). */
static void jset(json_build_t *b, json_t *obj, const char *key, json_t *v) {
    if (!v || !obj || json_object_set_new(obj, key, v) != 0)
        b->ok = false;
}

static void jappend(json_build_t *b, json_t *arr, json_t *v) {
    if (!v || !arr || json_array_append_new(arr, v) != 0)
        b->ok = false;
}

/* A sanitised string, or null when s is empty. */
static json_t *jstr_or_null(const char *s, size_t max) {
    char buf[3 * 1024 + 4];
    size_t n = text_sanitize(s, max, buf, sizeof buf, false);
    return n ? json_stringn(buf, n) : json_null();
}

static json_t *jint_or_null(int v) {
    return v < 0 ? json_null() : json_integer(v);
}

static json_t *ju64(uint64_t v) {
    return v <= (uint64_t)INT64_MAX ? json_integer((json_int_t)v) : json_real((double)v);
}

static json_t *jreal(double v) {
    return isfinite(v) ? json_real(v) : json_null();
}

/* The environment block: what env says, verbatim. Without an env every key
 * is still there, all null, so consumers see one shape. */
static json_t *json_environment(json_build_t *b, const env_info_t *env) {
    static const env_info_t unknown = {
        .task_rank = -1, .local_rank = -1, .num_nodes = -1, .num_tasks = -1};
    json_t *o = json_object();
    jset(b, o, "orchestrator", env ? json_string(env_kind_name(env->orchestrator)) : json_null());
    if (!env)
        env = &unknown;
#define JS(key, field) jset(b, o, key, jstr_or_null(field, sizeof(field)))
    JS("node", env->node);
    JS("job_id", env->job_id);
    JS("job_name", env->job_name);
    jset(b, o, "task_rank", jint_or_null(env->task_rank));
    jset(b, o, "local_rank", jint_or_null(env->local_rank));
    jset(b, o, "num_nodes", jint_or_null(env->num_nodes));
    jset(b, o, "num_tasks", jint_or_null(env->num_tasks));
    JS("partition", env->partition);
    JS("nodelist", env->nodelist);
    JS("pod_name", env->pod_name);
    JS("namespace", env->namespace_);
    JS("flux_uri", env->flux_uri);
    JS("visible_devices_var", env->visible_var);
    JS("visible_devices", env->visible_list);
#undef JS
    /* Set but empty is "" (CUDA then sees no device), unset is null. */
    jset(b, o, "cuda_visible_devices",
         env->cuda_visible_set
             ? (env->cuda_visible[0] ? jstr_or_null(env->cuda_visible, sizeof env->cuda_visible)
                                     : json_string(""))
             : json_null());
    jset(b, o, "cuda_device_order",
         env->cuda_order_set
             ? (env->cuda_order[0] ? jstr_or_null(env->cuda_order, sizeof env->cuda_order)
                                   : json_string(""))
             : json_null());
    return o;
}

static json_t *json_cuda_index(cuda_index_t c) {
    return c.state == CUDA_INDEX_KNOWN ? json_integer(c.index) : json_null();
}

static json_t *json_cuda_visible(cuda_index_t c) {
    switch (c.state) {
    case CUDA_INDEX_KNOWN:
    case CUDA_INDEX_VISIBLE:
        return json_true();
    case CUDA_INDEX_HIDDEN:
        return json_false();
    case CUDA_INDEX_UNKNOWN:
        break;
    }
    return json_null();
}

/* One process: pid, what /proc said, NVML's figures. */
static json_t *json_process(json_build_t *b, const snapshot_t *snap, unsigned i,
                            const output_extra_t *x) {
    const proc_record_t *p = &snap->procs[i];
    const proc_info_t *info = proc_info_of(x, i);
    json_t *o = json_object();
    jset(b, o, "pid", json_integer(p->pid));
    jset(b, o, "command",
         info && info->comm_ok ? jstr_or_null(info->comm, sizeof info->comm) : json_null());
    jset(b, o, "used_memory_bytes",
         proc_has(p, PROC_F_USED_MEMORY) ? ju64(p->used_memory_bytes) : json_null());
    jset(b, o, "sm_utilization_percent",
         proc_has(p, PROC_F_SM_UTIL) ? jreal(p->sm_util_pct) : json_null());
    jset(b, o, "memory_utilization_percent",
         proc_has(p, PROC_F_MEM_UTIL) ? jreal(p->mem_util_pct) : json_null());
    jset(b, o, "pod_uid", jstr_or_null(proc_pod(snap, x, i, false), SNAPSHOT_POD_UID_MAX));
    jset(b, o, "container_id", jstr_or_null(proc_pod(snap, x, i, true), SNAPSHOT_CONTAINER_ID_MAX));
    return o;
}

/* "processes", "processes_error", "processes_dropped" of a device. */
static void json_process_list(json_build_t *b, json_t *o, const snapshot_t *snap,
                              const proc_list_t *pl, const gpu_record_t *g, bool whole_gpu,
                              const output_extra_t *x) {
    const char *why = procs_error(pl, g, whole_gpu);
    json_t *arr = why ? json_null() : json_array();
    unsigned n = procs_count(snap, pl);
    for (unsigned k = 0; k < n; k++)
        jappend(b, arr, json_process(b, snap, pl->first + k, x));
    jset(b, o, "processes", arr);
    jset(b, o, "processes_error", why ? json_string(why) : json_null());
    jset(b, o, "processes_dropped", why ? json_null() : json_integer(pl->dropped));
}

static json_t *json_clock_reasons(json_build_t *b, uint64_t mask) {
    json_t *a = json_array();
    for (unsigned bit = 0; bit < 64; bit++) {
        uint64_t v = (uint64_t)1 << bit;
        if (mask & v) {
            char name[64];
            format_clock_reasons(name, sizeof name, v, "");
            jappend(b, a, json_string(name));
        }
    }
    return a;
}

/* The value of field f of g as JSON; null when absent. */
static json_t *json_gpu_field(json_build_t *b, const gpu_record_t *g, gpu_field_t f) {
    if (!gpu_has(g, f))
        return json_null();
    switch (f) {
    case GPU_F_GPU_UTIL:
        return json_integer(g->gpu_util_pct);
    case GPU_F_MEM_UTIL:
        return json_integer(g->mem_util_pct);
    case GPU_F_MEM_USED:
        return ju64(g->memory_used_bytes);
    case GPU_F_MEM_TOTAL:
        return ju64(g->memory_total_bytes);
    case GPU_F_MEM_RESERVED:
        return ju64(g->memory_reserved_bytes);
    case GPU_F_TEMPERATURE:
        return json_integer(g->temperature_c);
    case GPU_F_POWER:
        return jreal(g->power_w);
    case GPU_F_POWER_LIMIT:
        return jreal(g->power_limit_w);
    case GPU_F_ENERGY:
        return jreal((double)g->energy_mj / 1000.0);
    case GPU_F_PCIE_TX:
        return ju64(g->pcie_tx_bytes_per_s);
    case GPU_F_PCIE_RX:
        return ju64(g->pcie_rx_bytes_per_s);
    case GPU_F_NVLINK_TX:
        return jreal(g->nvlink_tx_bytes_per_s);
    case GPU_F_NVLINK_RX:
        return jreal(g->nvlink_rx_bytes_per_s);
    case GPU_F_SM_CLOCK:
        return json_integer(g->sm_clock_mhz);
    case GPU_F_CLOCK_EVENT_REASONS:
        return json_clock_reasons(b, g->clock_event_reasons);
    case GPU_F_SM_ACTIVE:
        return jreal(g->sm_active_pct);
    case GPU_F_SM_OCCUPANCY:
        return jreal(g->sm_occupancy_pct);
    case GPU_F_DRAM_BW_UTIL:
        return jreal(g->dram_bw_util_pct);
    case GPU_F_COUNT:
        break;
    }
    return json_null();
}

static json_t *json_mig(json_build_t *b, const snapshot_t *snap, const gpu_record_t *g,
                        unsigned slot, const output_extra_t *x) {
    const mig_record_t *m = &snap->mig[slot];
    json_t *o = json_object();
    double pct;
    jset(b, o, "cuda_index", json_cuda_index(cuda_of_mig(x, slot)));
    jset(b, o, "cuda_visible", json_cuda_visible(cuda_of_mig(x, slot)));
    jset(b, o, "uuid", jstr_or_null(m->uuid, sizeof m->uuid));
    jset(b, o, "name", jstr_or_null(m->name, sizeof m->name));
    jset(b, o, "profile", jstr_or_null(m->profile, sizeof m->profile));
    jset(b, o, "gpu_instance_id", m->ids_valid ? json_integer(m->gpu_instance_id) : json_null());
    jset(b, o, "compute_instance_id",
         m->ids_valid ? json_integer(m->compute_instance_id) : json_null());
    jset(b, o, "memory_used_bytes",
         mig_has(m, GPU_F_MEM_USED) ? ju64(m->memory_used_bytes) : json_null());
    jset(b, o, "memory_total_bytes",
         mig_has(m, GPU_F_MEM_TOTAL) ? ju64(m->memory_total_bytes) : json_null());
    jset(b, o, "memory_used_percent", mig_memory_used_pct(m, &pct) ? jreal(pct) : json_null());
    jset(b, o, "sm_active_percent",
         mig_has(m, GPU_F_SM_ACTIVE) ? jreal(m->sm_active_pct) : json_null());
    jset(b, o, "sm_occupancy_percent",
         mig_has(m, GPU_F_SM_OCCUPANCY) ? jreal(m->sm_occupancy_pct) : json_null());
    jset(b, o, "dram_bandwidth_utilization_percent",
         mig_has(m, GPU_F_DRAM_BW_UTIL) ? jreal(m->dram_bw_util_pct) : json_null());
    json_process_list(b, o, snap, &m->procs, g, false, x);
    return o;
}

static json_t *json_device(json_build_t *b, const snapshot_t *snap, const gpu_record_t *g,
                           const device_selection_t *sel, const output_extra_t *x) {
    json_t *o = json_object();
    double pct;
    jset(b, o, "index", json_integer(g->index));
    jset(b, o, "cuda_index", json_cuda_index(cuda_of_gpu(x, snap, g)));
    jset(b, o, "cuda_visible", json_cuda_visible(cuda_of_gpu(x, snap, g)));
    jset(b, o, "uuid", jstr_or_null(g->uuid, sizeof g->uuid));
    jset(b, o, "name", jstr_or_null(g->name, sizeof g->name));
    jset(b, o, "pci_bus_id", jstr_or_null(g->pci_bus_id, sizeof g->pci_bus_id));
    jset(b, o, "vendor",
         gpu_vendor_name(g->vendor) ? json_string(gpu_vendor_name(g->vendor)) : json_null());
    jset(b, o, "health", json_string(gpu_health_name(g->health)));
    jset(b, o, "health_error",
         g->health != GPU_HEALTH_OK && g->health_nvml_code != 0
             ? json_string(nvml_code_name(g->health_nvml_code))
             : json_null());
    for (size_t i = 0; i < METRIC_COLUMN_COUNT; i++) {
        int f = metric_columns[i];
        if (f == OUTPUT_METRIC_DERIVED_MEM_PCT)
            jset(b, o, "memory_used_percent",
                 gpu_memory_used_pct(g, &pct) ? jreal(pct) : json_null());
        else
            jset(b, o, field_json_names[f], json_gpu_field(b, g, (gpu_field_t)f));
    }
    json_t *errs = json_object();
    for (int f = 0; f < GPU_F_COUNT; f++) {
        int code = g->field_error[f];
        if (code != 0 && code != OUTPUT_NVML_NOT_SUPPORTED)
            jset(b, errs, field_json_names[f], json_string(nvml_code_name(code)));
    }
    jset(b, o, "field_errors", errs);
    json_process_list(b, o, snap, &g->procs, g, true, x);
    jset(b, o, "mig_enabled", json_boolean(g->mig_enabled));
    json_t *migs = json_array();
    unsigned first, end;
    gpu_mig_range(snap, g, &first, &end);
    for (unsigned s = first; s < end; s++)
        if (mig_selected(sel, snap, g, s))
            jappend(b, migs, json_mig(b, snap, g, s, x));
    jset(b, o, "mig_instances", migs);
    return o;
}

/* True when some shown device has a present process list. */
static bool any_process_list(const snapshot_t *snap, const device_selection_t *sel) {
    for (unsigned i = 0; i < snap->gpu_count; i++) {
        const gpu_record_t *g = &snap->gpus[i];
        if (!gpu_shown(sel, snap, g))
            continue;
        if (g->procs.list_ok && g->procs.count)
            return true;
        unsigned first, end;
        gpu_mig_range(snap, g, &first, &end);
        for (unsigned s = first; s < end; s++)
            if (mig_selected(sel, snap, g, s) && snap->mig[s].procs.list_ok &&
                snap->mig[s].procs.count)
                return true;
    }
    return false;
}

/* The note on process commands and pods, when a shown device lists a
 * process they are unknown for. */
static const char *procs_note(const output_extra_t *x, const snapshot_t *snap,
                              const device_selection_t *sel) {
    if (!x || !x->procs_note || !x->procs_note[0])
        return NULL;
    return any_process_list(snap, sel) ? x->procs_note : NULL;
}

static json_t *json_sample(json_build_t *b, const snapshot_t *snap, const env_info_t *env,
                           const device_selection_t *sel, const output_extra_t *x) {
    json_t *root = json_object();
    char ts[80];
    format_timestamp(ts, sizeof ts, snap->taken_wall_ms);
    jset(b, root, "schema_version", json_integer(OUTPUT_SCHEMA_VERSION));
    jset(b, root, "collected_at", json_string(ts));
    jset(b, root, "node", jstr_or_null(node_name(snap, env), ENV_STR_MAX));
    jset(b, root, "driver_version",
         jstr_or_null(snap->driver_version, sizeof snap->driver_version));
    jset(b, root, "environment", json_environment(b, env));
    json_t *devs = json_array();
    for (unsigned i = 0; i < snap->gpu_count; i++)
        if (gpu_shown(sel, snap, &snap->gpus[i]))
            jappend(b, devs, json_device(b, snap, &snap->gpus[i], sel, x));
    jset(b, root, "devices", devs);
    const char *note = cuda_note(x, snap, sel);
    jset(b, root, "cuda_index_note", note ? jstr_or_null(note, CUDA_INDEX_NOTE_MAX) : json_null());
    note = procs_note(x, snap, sel);
    jset(b, root, "process_info_note", note ? jstr_or_null(note, 1024) : json_null());
    bool down = snap->status == SNAPSHOT_NVML_DOWN;
    jset(b, root, "status", json_string(down ? "nvml_down" : "ok"));
    json_t *error = json_null();
    if (snap->error[0])
        error = jstr_or_null(snap->error, sizeof snap->error);
    else if (down)
        error = json_string(nvml_code_name(snap->nvml_code));
    jset(b, root, "error", error);
    return root;
}

static int write_json(FILE *out, const snapshot_t *snap, const env_info_t *env,
                      const device_selection_t *sel, const output_extra_t *x, bool lines) {
    json_build_t b = {.ok = true};
    json_t *root = json_sample(&b, snap, env, sel, x);
    char *text = NULL;
    int rc = 0;
    if (!b.ok || !root) {
        rc = KGS_ENOMEM;
        goto out;
    }
    size_t flags =
        JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15) | (lines ? JSON_COMPACT : JSON_INDENT(2));
    text = json_dumps(root, flags);
    if (!text) {
        rc = KGS_ENOMEM;
        goto out;
    }
    if (fputs(text, out) == EOF || fputc('\n', out) == EOF)
        rc = KGS_EIO;
out:
    free(text);
    json_decref(root);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* CSV                                                                      */

/* Writes one cell, quoted per RFC 4180 when it holds , " CR or LF. */
static void csv_cell(FILE *out, const char *s, bool first) {
    if (!first)
        fputc(',', out);
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

static void csv_text(FILE *out, const char *s, size_t max) {
    char buf[3 * 1024 + 4];
    text_sanitize(s, max, buf, sizeof buf, false);
    csv_cell(out, buf, false);
}

static void csv_uint(FILE *out, bool present, uint64_t v) {
    char buf[24] = "";
    if (present)
        snprintf(buf, sizeof buf, "%" PRIu64, v);
    csv_cell(out, buf, false);
}

static void csv_int(FILE *out, bool present, int64_t v) {
    char buf[24] = "";
    if (present)
        snprintf(buf, sizeof buf, "%" PRId64, v);
    csv_cell(out, buf, false);
}

static void csv_real(FILE *out, bool present, double v) {
    char buf[40] = "";
    if (present && isfinite(v))
        format_real(buf, sizeof buf, v);
    csv_cell(out, buf, false);
}

static void csv_header(FILE *out, bool processes) {
    if (processes) {
        for (size_t i = 0; i < sizeof csv_process_columns / sizeof csv_process_columns[0]; i++)
            csv_cell(out, csv_process_columns[i], i == 0);
        fputc('\n', out);
        return;
    }
    for (size_t i = 0; i < CSV_ID_COLUMN_COUNT; i++)
        csv_cell(out, csv_id_columns[i], i == 0);
    for (size_t i = 0; i < METRIC_COLUMN_COUNT; i++) {
        int f = metric_columns[i];
        csv_cell(out,
                 f == OUTPUT_METRIC_DERIVED_MEM_PCT ? "memory_used_percent" : field_json_names[f],
                 false);
    }
    for (size_t i = 0; i < sizeof csv_tail_columns / sizeof csv_tail_columns[0]; i++)
        csv_cell(out, csv_tail_columns[i], false);
    fputc('\n', out);
}

/* cuda_index and cuda_visible: a number or empty; true, false or empty. */
static void csv_cuda_cells(FILE *out, cuda_index_t c) {
    csv_uint(out, c.state == CUDA_INDEX_KNOWN, c.index);
    csv_cell(out,
             c.state == CUDA_INDEX_HIDDEN    ? "false"
             : c.state == CUDA_INDEX_UNKNOWN ? ""
                                             : "true",
             false);
}

/* process_count (empty when the list is absent) and processes_error. */
static void csv_procs_cells(FILE *out, const snapshot_t *snap, const proc_list_t *pl,
                            const gpu_record_t *g, bool whole_gpu) {
    const char *why = procs_error(pl, g, whole_gpu);
    csv_uint(out, !why, procs_count(snap, pl) + pl->dropped);
    csv_cell(out, why ? why : "", false);
}

/* The environment columns, collected_at .. driver_version. */
static void csv_env_cells(FILE *out, const char *ts, const snapshot_t *snap,
                          const env_info_t *env) {
    csv_cell(out, ts, true);
    csv_cell(out, env ? env_kind_name(env->orchestrator) : "", false);
    csv_text(out, node_name(snap, env), ENV_STR_MAX);
    csv_text(out, env ? env->job_id : "", ENV_STR_MAX);
    csv_int(out, env && env->task_rank >= 0, env ? env->task_rank : 0);
    csv_text(out, snap->driver_version, sizeof snap->driver_version);
}

static void csv_gpu_metric(FILE *out, const gpu_record_t *g, int f) {
    double pct;
    char reasons[512];
    if (f == OUTPUT_METRIC_DERIVED_MEM_PCT) {
        bool p = gpu_memory_used_pct(g, &pct);
        csv_real(out, p, p ? pct : 0);
        return;
    }
    bool p = gpu_has(g, (gpu_field_t)f);
    switch ((gpu_field_t)f) {
    case GPU_F_GPU_UTIL:
        csv_uint(out, p, g->gpu_util_pct);
        return;
    case GPU_F_MEM_UTIL:
        csv_uint(out, p, g->mem_util_pct);
        return;
    case GPU_F_MEM_USED:
        csv_uint(out, p, g->memory_used_bytes);
        return;
    case GPU_F_MEM_TOTAL:
        csv_uint(out, p, g->memory_total_bytes);
        return;
    case GPU_F_MEM_RESERVED:
        csv_uint(out, p, g->memory_reserved_bytes);
        return;
    case GPU_F_TEMPERATURE:
        csv_int(out, p, g->temperature_c);
        return;
    case GPU_F_POWER:
        csv_real(out, p, g->power_w);
        return;
    case GPU_F_POWER_LIMIT:
        csv_real(out, p, g->power_limit_w);
        return;
    case GPU_F_ENERGY:
        csv_real(out, p, (double)g->energy_mj / 1000.0);
        return;
    case GPU_F_PCIE_TX:
        csv_uint(out, p, g->pcie_tx_bytes_per_s);
        return;
    case GPU_F_PCIE_RX:
        csv_uint(out, p, g->pcie_rx_bytes_per_s);
        return;
    case GPU_F_NVLINK_TX:
        csv_real(out, p, g->nvlink_tx_bytes_per_s);
        return;
    case GPU_F_NVLINK_RX:
        csv_real(out, p, g->nvlink_rx_bytes_per_s);
        return;
    case GPU_F_SM_CLOCK:
        csv_uint(out, p, g->sm_clock_mhz);
        return;
    case GPU_F_CLOCK_EVENT_REASONS:
        /* An empty cell means absent, so "no reason" (mask 0) is spelled "none". */
        if (p && g->clock_event_reasons == 0)
            snprintf(reasons, sizeof reasons, "none");
        else if (p)
            format_clock_reasons(reasons, sizeof reasons, g->clock_event_reasons, "|");
        else
            reasons[0] = '\0';
        csv_cell(out, reasons, false);
        return;
    case GPU_F_SM_ACTIVE:
        csv_real(out, p, g->sm_active_pct);
        return;
    case GPU_F_SM_OCCUPANCY:
        csv_real(out, p, g->sm_occupancy_pct);
        return;
    case GPU_F_DRAM_BW_UTIL:
        csv_real(out, p, g->dram_bw_util_pct);
        return;
    case GPU_F_COUNT:
        break;
    }
    csv_cell(out, "", false);
}

/* A MIG row carries the fields a mig_record_t has; the rest are empty. */
static void csv_mig_metric(FILE *out, const mig_record_t *m, int f) {
    double pct;
    if (f == OUTPUT_METRIC_DERIVED_MEM_PCT) {
        bool p = mig_memory_used_pct(m, &pct);
        csv_real(out, p, p ? pct : 0);
        return;
    }
    bool p = mig_has(m, (gpu_field_t)f);
    switch ((gpu_field_t)f) {
    case GPU_F_MEM_USED:
        csv_uint(out, p, m->memory_used_bytes);
        return;
    case GPU_F_MEM_TOTAL:
        csv_uint(out, p, m->memory_total_bytes);
        return;
    case GPU_F_SM_ACTIVE:
        csv_real(out, p, m->sm_active_pct);
        return;
    case GPU_F_SM_OCCUPANCY:
        csv_real(out, p, m->sm_occupancy_pct);
        return;
    case GPU_F_DRAM_BW_UTIL:
        csv_real(out, p, m->dram_bw_util_pct);
        return;
    default:
        csv_cell(out, "", false);
        return;
    }
}

/* One --processes row per process of a present list. */
static void csv_process_rows(FILE *out, const char *ts, const snapshot_t *snap,
                             const env_info_t *env, const output_extra_t *x, const gpu_record_t *g,
                             int mig_slot) {
    const mig_record_t *m = mig_slot >= 0 ? &snap->mig[mig_slot] : NULL;
    const proc_list_t *pl = m ? &m->procs : &g->procs;
    unsigned n = procs_count(snap, pl);
    for (unsigned k = 0; k < n; k++) {
        unsigned i = pl->first + k;
        const proc_record_t *p = &snap->procs[i];
        const proc_info_t *info = proc_info_of(x, i);
        csv_env_cells(out, ts, snap, env);
        csv_uint(out, true, g->index);
        cuda_index_t c = m ? cuda_of_mig(x, (unsigned)mig_slot) : cuda_of_gpu(x, snap, g);
        csv_uint(out, c.state == CUDA_INDEX_KNOWN, c.index);
        csv_text(out, m ? m->uuid : g->uuid, sizeof g->uuid);
        csv_cell(out, m ? "true" : "false", false);
        csv_uint(out, m && m->ids_valid, m ? m->gpu_instance_id : 0);
        csv_uint(out, m && m->ids_valid, m ? m->compute_instance_id : 0);
        csv_uint(out, true, p->pid);
        csv_text(out, info && info->comm_ok ? info->comm : "", PROC_INFO_COMM_MAX);
        csv_uint(out, proc_has(p, PROC_F_USED_MEMORY), p->used_memory_bytes);
        csv_real(out, proc_has(p, PROC_F_SM_UTIL), p->sm_util_pct);
        csv_real(out, proc_has(p, PROC_F_MEM_UTIL), p->mem_util_pct);
        csv_text(out, proc_pod(snap, x, i, false), SNAPSHOT_POD_UID_MAX);
        csv_text(out, proc_pod(snap, x, i, true), SNAPSHOT_CONTAINER_ID_MAX);
        fputc('\n', out);
    }
}

static void write_csv_processes(FILE *out, const char *ts, const snapshot_t *snap,
                                const env_info_t *env, const device_selection_t *sel,
                                const output_extra_t *x) {
    for (unsigned i = 0; i < snap->gpu_count; i++) {
        const gpu_record_t *g = &snap->gpus[i];
        if (!gpu_shown(sel, snap, g))
            continue;
        csv_process_rows(out, ts, snap, env, x, g, -1);
        unsigned first, end;
        gpu_mig_range(snap, g, &first, &end);
        for (unsigned s = first; s < end; s++)
            if (mig_selected(sel, snap, g, s))
                csv_process_rows(out, ts, snap, env, x, g, (int)s);
    }
}

static void write_csv(output_writer_t *w, FILE *out, const snapshot_t *snap, const env_info_t *env,
                      const device_selection_t *sel, const output_extra_t *x) {
    char ts[80];
    format_timestamp(ts, sizeof ts, snap->taken_wall_ms);
    if (!w->_csv_header_done) {
        csv_header(out, w->processes);
        w->_csv_header_done = true;
    }
    if (w->processes) {
        write_csv_processes(out, ts, snap, env, sel, x);
        return;
    }
    for (unsigned i = 0; i < snap->gpu_count; i++) {
        const gpu_record_t *g = &snap->gpus[i];
        if (!gpu_shown(sel, snap, g))
            continue;
        csv_env_cells(out, ts, snap, env);
        csv_uint(out, true, g->index);
        csv_cuda_cells(out, cuda_of_gpu(x, snap, g));
        csv_text(out, g->uuid, sizeof g->uuid);
        csv_text(out, g->name, sizeof g->name);
        csv_text(out, g->pci_bus_id, sizeof g->pci_bus_id);
        csv_cell(out, gpu_health_name(g->health), false);
        csv_cell(out, "false", false);
        for (int k = 0; k < 4; k++) /* parent_index .. compute_instance_id */
            csv_cell(out, "", false);
        for (size_t c = 0; c < METRIC_COLUMN_COUNT; c++)
            csv_gpu_metric(out, g, metric_columns[c]);
        csv_procs_cells(out, snap, &g->procs, g, true);
        fputc('\n', out);

        unsigned first, end;
        gpu_mig_range(snap, g, &first, &end);
        for (unsigned s = first; s < end; s++) {
            const mig_record_t *m = &snap->mig[s];
            if (!mig_selected(sel, snap, g, s))
                continue;
            csv_env_cells(out, ts, snap, env);
            csv_uint(out, true, g->index);
            csv_cuda_cells(out, cuda_of_mig(x, s));
            csv_text(out, m->uuid, sizeof m->uuid);
            csv_text(out, m->name, sizeof m->name);
            csv_text(out, g->pci_bus_id, sizeof g->pci_bus_id);
            csv_cell(out, gpu_health_name(g->health), false);
            csv_cell(out, "true", false);
            csv_uint(out, true, g->index);
            csv_text(out, m->profile, sizeof m->profile);
            csv_uint(out, m->ids_valid, m->gpu_instance_id);
            csv_uint(out, m->ids_valid, m->compute_instance_id);
            for (size_t c = 0; c < METRIC_COLUMN_COUNT; c++)
                csv_mig_metric(out, m, metric_columns[c]);
            csv_procs_cells(out, snap, &m->procs, g, false);
            fputc('\n', out);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Table                                                                    */

enum {
    TCOL_GPU,
    TCOL_CUDA,
    TCOL_NAME,
    TCOL_HEALTH,
    TCOL_UTIL,
    TCOL_MEMUTIL,
    TCOL_MEMUSED,
    TCOL_MEMTOTAL,
    TCOL_MEMPCT,
    TCOL_TEMP,
    TCOL_POWER,
    TCOL_LIMIT,
    TCOL_SMACT,
    TCOL_PCIE_TX,
    TCOL_PCIE_RX,
    TCOL_NVL_TX,
    TCOL_NVL_RX,
    TCOL_COUNT
};

static const char *const table_headers[TCOL_COUNT] = {
    "GPU",     "CUDA",     "Name",    "Health",    "Util%",    "MemUtil%",
    "MemUsed", "MemTotal", "Mem%",    "Temp°C",    "Power W",  "Limit W",
    "SMAct%",  "PCIe TX",  "PCIe RX", "NVLink TX", "NVLink RX"};

#define TABLE_NAME_COLS 22
#define TABLE_CELL_MAX 128

typedef char table_row_t[TCOL_COUNT][TABLE_CELL_MAX];

/* 1.5 GiB / 512.0 MiB: binary units, one decimal. */
static void format_bytes(char *buf, size_t len, uint64_t v) {
    double mib = (double)v / (1024.0 * 1024.0);
    if (mib >= 1023.95)
        snprintf(buf, len, "%.1f GiB", mib / 1024.0);
    else
        snprintf(buf, len, "%.1f MiB", mib);
}

/* 1.2 GiB/s: binary units like the memory columns beside it (NVML counts
 * PCIe in KiB/s), one decimal, the smallest unit KiB/s. */
static void format_rate(char *buf, size_t len, double v) {
    double kib = v / 1024.0;
    if (kib >= 1023.95 * 1024.0)
        snprintf(buf, len, "%.1f GiB/s", kib / (1024.0 * 1024.0));
    else if (kib >= 1023.95)
        snprintf(buf, len, "%.1f MiB/s", kib / 1024.0);
    else
        snprintf(buf, len, "%.1f KiB/s", kib);
}

static void cell_uint(char *cell, bool present, uint64_t v) {
    if (present)
        snprintf(cell, TABLE_CELL_MAX, "%" PRIu64, v);
    else
        strcpy(cell, "-");
}

static void cell_real1(char *cell, bool present, double v) {
    if (present && isfinite(v))
        snprintf(cell, TABLE_CELL_MAX, "%.1f", v);
    else
        strcpy(cell, "-");
}

static void cell_bytes(char *cell, bool present, uint64_t v) {
    if (present)
        format_bytes(cell, TABLE_CELL_MAX, v);
    else
        strcpy(cell, "-");
}

static void cell_rate(char *cell, bool present, double v) {
    if (present && isfinite(v) && v >= 0)
        format_rate(cell, TABLE_CELL_MAX, v);
    else
        strcpy(cell, "-");
}

/* The CUDA column: the ordinal, "hidden" when CUDA does not enumerate the
 * device in this process, "-" when that or the ordinal is unknown. */
static void cell_cuda(char *cell, cuda_index_t c) {
    if (c.state == CUDA_INDEX_KNOWN)
        snprintf(cell, TABLE_CELL_MAX, "%u", c.index);
    else
        strcpy(cell, c.state == CUDA_INDEX_HIDDEN ? "hidden" : "-");
}

static void table_gpu_row(table_row_t r, const gpu_record_t *g, cuda_index_t cuda) {
    double pct = 0;
    snprintf(r[TCOL_GPU], TABLE_CELL_MAX, "%u", g->index);
    cell_cuda(r[TCOL_CUDA], cuda);
    text_sanitize(g->name, sizeof g->name, r[TCOL_NAME], TABLE_CELL_MAX - 4, true);
    if (!r[TCOL_NAME][0])
        strcpy(r[TCOL_NAME], "-");
    text_truncate(r[TCOL_NAME], TABLE_CELL_MAX, TABLE_NAME_COLS);
    snprintf(r[TCOL_HEALTH], TABLE_CELL_MAX, "%s", gpu_health_name(g->health));
    cell_uint(r[TCOL_UTIL], gpu_has(g, GPU_F_GPU_UTIL), g->gpu_util_pct);
    cell_uint(r[TCOL_MEMUTIL], gpu_has(g, GPU_F_MEM_UTIL), g->mem_util_pct);
    cell_bytes(r[TCOL_MEMUSED], gpu_has(g, GPU_F_MEM_USED), g->memory_used_bytes);
    cell_bytes(r[TCOL_MEMTOTAL], gpu_has(g, GPU_F_MEM_TOTAL), g->memory_total_bytes);
    bool p = gpu_memory_used_pct(g, &pct);
    cell_real1(r[TCOL_MEMPCT], p, pct);
    if (gpu_has(g, GPU_F_TEMPERATURE))
        snprintf(r[TCOL_TEMP], TABLE_CELL_MAX, "%d", g->temperature_c);
    else
        strcpy(r[TCOL_TEMP], "-");
    cell_real1(r[TCOL_POWER], gpu_has(g, GPU_F_POWER), g->power_w);
    cell_real1(r[TCOL_LIMIT], gpu_has(g, GPU_F_POWER_LIMIT), g->power_limit_w);
    cell_real1(r[TCOL_SMACT], gpu_has(g, GPU_F_SM_ACTIVE), g->sm_active_pct);
    cell_rate(r[TCOL_PCIE_TX], gpu_has(g, GPU_F_PCIE_TX), (double)g->pcie_tx_bytes_per_s);
    cell_rate(r[TCOL_PCIE_RX], gpu_has(g, GPU_F_PCIE_RX), (double)g->pcie_rx_bytes_per_s);
    cell_rate(r[TCOL_NVL_TX], gpu_has(g, GPU_F_NVLINK_TX), g->nvlink_tx_bytes_per_s);
    cell_rate(r[TCOL_NVL_RX], gpu_has(g, GPU_F_NVLINK_RX), g->nvlink_rx_bytes_per_s);
}

/* A MIG instance: "  └ MIG 3g.40gb (GI 1/CI 0)" in the Name column, its
 * memory and SM activity; the per-GPU columns stay blank (not applicable,
 * which is different from "-", absent). */
static void table_mig_row(table_row_t r, const mig_record_t *m, cuda_index_t cuda) {
    char label[64], ids[48] = "";
    double pct = 0;
    cell_cuda(r[TCOL_CUDA], cuda);
    text_sanitize(m->profile[0] ? m->profile : m->name,
                  m->profile[0] ? sizeof m->profile : sizeof m->name, label, sizeof label, true);
    if (m->ids_valid)
        snprintf(ids, sizeof ids, "%s(GI %u/CI %u)", label[0] ? " " : "", m->gpu_instance_id,
                 m->compute_instance_id);
    snprintf(r[TCOL_NAME], TABLE_CELL_MAX, "  \xE2\x94\x94 MIG%s%s%s", label[0] ? " " : "", label,
             ids);
    cell_bytes(r[TCOL_MEMUSED], mig_has(m, GPU_F_MEM_USED), m->memory_used_bytes);
    cell_bytes(r[TCOL_MEMTOTAL], mig_has(m, GPU_F_MEM_TOTAL), m->memory_total_bytes);
    bool p = mig_memory_used_pct(m, &pct);
    cell_real1(r[TCOL_MEMPCT], p, pct);
    cell_real1(r[TCOL_SMACT], mig_has(m, GPU_F_SM_ACTIVE), m->sm_active_pct);
}

/* Prints one row: text columns left-aligned, numbers right-aligned, two
 * spaces between columns, no trailing blanks. */
static void table_print_row(FILE *out, const table_row_t r, const size_t *width) {
    char line[TCOL_COUNT * (TABLE_CELL_MAX + 2 * TABLE_CELL_MAX) + 8];
    size_t o = 0;
    for (int c = 0; c < TCOL_COUNT; c++) {
        size_t w = text_width(r[c]), pad = width[c] > w ? width[c] - w : 0;
        bool left = c <= TCOL_HEALTH;
        if (c > 0)
            line[o++] = ' ', line[o++] = ' ';
        if (!left)
            for (size_t k = 0; k < pad; k++)
                line[o++] = ' ';
        size_t n = strlen(r[c]);
        memcpy(line + o, r[c], n);
        o += n;
        if (left)
            for (size_t k = 0; k < pad; k++)
                line[o++] = ' ';
    }
    while (o > 0 && line[o - 1] == ' ')
        o--;
    line[o++] = '\n';
    fwrite(line, 1, o, out);
}

static void table_banner(FILE *out, const snapshot_t *snap, const env_info_t *env) {
    char ts[80], buf[3 * 1024 + 4];
    format_timestamp(ts, sizeof ts, snap->taken_wall_ms);
    fprintf(out, "Environment: %s", env ? env_kind_name(env->orchestrator) : "-");
    text_sanitize(node_name(snap, env), ENV_STR_MAX, buf, sizeof buf, true);
    fprintf(out, " | Node: %s", buf[0] ? buf : "-");
    if (env && env->job_id[0]) {
        text_sanitize(env->job_id, sizeof env->job_id, buf, sizeof buf, true);
        fprintf(out, " | Job: %s", buf);
        if (env->task_rank >= 0)
            fprintf(out, " rank %d", env->task_rank);
    }
    if (env && env->pod_name[0]) {
        text_sanitize(env->pod_name, sizeof env->pod_name, buf, sizeof buf, true);
        fprintf(out, " | Pod: ");
        if (env->namespace_[0]) {
            char ns[3 * ENV_STR_MAX + 4];
            text_sanitize(env->namespace_, sizeof env->namespace_, ns, sizeof ns, true);
            fprintf(out, "%s/", ns);
        }
        fputs(buf, out);
    }
    text_sanitize(snap->driver_version, sizeof snap->driver_version, buf, sizeof buf, true);
    fprintf(out, " | Driver: %s | %s\n\n", buf[0] ? buf : "-", ts);
}

/* The rows of one table, grown as they are added. */
typedef struct {
    table_row_t *rows;
    size_t n, cap;
    bool ok; /* false once an allocation failed */
} table_t;

/* A new blank row, or NULL (then t->ok is false). */
static char (*table_add(table_t *t))[TABLE_CELL_MAX] {
    if (!t->ok)
        return NULL;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        table_row_t *rows = realloc(t->rows, cap * sizeof *rows);
        if (!rows) {
            t->ok = false;
            return NULL;
        }
        t->rows = rows;
        t->cap = cap;
    }
    memset(t->rows[t->n], 0, sizeof t->rows[t->n]);
    return t->rows[t->n++];
}

/* --processes: one row per process of a device, under it, indented by
 * `indent` spaces: pid and command in the Name column, SM and memory
 * utilisation share in Util% and MemUtil%, its memory in MemUsed. An
 * absent list and an empty one each get a row that says so. */
static void table_process_rows(table_t *t, const snapshot_t *snap, const proc_list_t *pl,
                               const gpu_record_t *g, bool whole_gpu, int indent,
                               const output_extra_t *x) {
    const char *why = procs_error(pl, g, whole_gpu);
    char(*r)[TABLE_CELL_MAX];
    if (why && strcmp(why, "MIG_ENABLED") == 0)
        return; /* each instance lists its own */
    unsigned n = procs_count(snap, pl);
    if (why || n == 0) {
        if ((r = table_add(t)) != NULL)
            snprintf(r[TCOL_NAME], TABLE_CELL_MAX, "%*s%s%s%s", indent, "",
                     why ? "processes unknown (" : "no processes", why ? why : "", why ? ")" : "");
        return;
    }
    for (unsigned k = 0; k < n && (r = table_add(t)) != NULL; k++) {
        unsigned i = pl->first + k;
        const proc_record_t *p = &snap->procs[i];
        const proc_info_t *info = proc_info_of(x, i);
        char comm[3 * PROC_INFO_COMM_MAX + 4] = "";
        if (info && info->comm_ok)
            text_sanitize(info->comm, sizeof info->comm, comm, sizeof comm, true);
        snprintf(r[TCOL_NAME], TABLE_CELL_MAX, "%*spid %u%s%s", indent, "", (unsigned)p->pid,
                 comm[0] ? " " : "", comm);
        cell_real1(r[TCOL_UTIL], proc_has(p, PROC_F_SM_UTIL), p->sm_util_pct);
        cell_real1(r[TCOL_MEMUTIL], proc_has(p, PROC_F_MEM_UTIL), p->mem_util_pct);
        cell_bytes(r[TCOL_MEMUSED], proc_has(p, PROC_F_USED_MEMORY), p->used_memory_bytes);
    }
    if (pl->dropped && (r = table_add(t)) != NULL)
        snprintf(r[TCOL_NAME], TABLE_CELL_MAX, "%*s... and %u more", indent, "", pl->dropped);
}

/* The rows of every shown GPU and MIG instance (and their processes). */
static void table_rows(table_t *t, const snapshot_t *snap, const device_selection_t *sel,
                       const output_extra_t *x, bool processes) {
    char(*r)[TABLE_CELL_MAX];
    for (unsigned i = 0; i < snap->gpu_count && t->ok; i++) {
        const gpu_record_t *g = &snap->gpus[i];
        unsigned first, end;
        if (!gpu_shown(sel, snap, g))
            continue;
        if ((r = table_add(t)) != NULL)
            table_gpu_row(r, g, cuda_of_gpu(x, snap, g));
        if (processes)
            table_process_rows(t, snap, &g->procs, g, true, 2, x);
        gpu_mig_range(snap, g, &first, &end);
        for (unsigned s = first; s < end; s++) {
            if (!mig_selected(sel, snap, g, s))
                continue;
            if ((r = table_add(t)) != NULL)
                table_mig_row(r, &snap->mig[s], cuda_of_mig(x, s));
            if (processes)
                table_process_rows(t, snap, &snap->mig[s].procs, g, false, 6, x);
        }
    }
}

/* A note under the table, sanitised: "<label>: <text>". */
static void table_note(FILE *out, const char *label, const char *text) {
    char buf[3 * 1024 + 4];
    if (!text)
        return;
    text_sanitize(text, 1024, buf, sizeof buf, true);
    fprintf(out, "%s: %s\n", label, buf);
}

static int write_table(FILE *out, const snapshot_t *snap, const env_info_t *env,
                       const device_selection_t *sel, const output_extra_t *x, bool processes) {
    table_banner(out, snap, env);
    if (snap->status == SNAPSHOT_NVML_DOWN) {
        char buf[3 * 256 + 4];
        text_sanitize(snap->error, sizeof snap->error, buf, sizeof buf, true);
        fprintf(out, "%s unavailable: %s\n", snapshot_down_subject(snap),
                buf[0] ? buf : nvml_code_name(snap->nvml_code));
        return 0;
    }
    table_t t = {.ok = true};
    char(*head)[TABLE_CELL_MAX] = table_add(&t);
    if (head)
        for (int c = 0; c < TCOL_COUNT; c++)
            snprintf(head[c], TABLE_CELL_MAX, "%s", table_headers[c]);
    table_rows(&t, snap, sel, x, processes);
    if (!t.ok) {
        free(t.rows);
        return KGS_ENOMEM;
    }
    if (t.n == 1) {
        free(t.rows);
        fputs(snap->gpu_count ? "No GPU selected.\n" : "No GPU found.\n", out);
        return 0;
    }
    size_t width[TCOL_COUNT] = {0};
    for (size_t i = 0; i < t.n; i++)
        for (int c = 0; c < TCOL_COUNT; c++) {
            size_t w = text_width(t.rows[i][c]);
            if (w > width[c])
                width[c] = w;
        }
    for (size_t i = 0; i < t.n; i++)
        table_print_row(out, (const char(*)[TABLE_CELL_MAX])t.rows[i], width);
    free(t.rows);
    const char *cnote = cuda_note(x, snap, sel),
               *pnote = processes ? procs_note(x, snap, sel) : NULL;
    if (cnote || pnote)
        fputc('\n', out);
    table_note(out, "CUDA index unknown (-)", cnote);
    table_note(out, "Process names unknown", pnote);
    return 0;
}

/* ------------------------------------------------------------------------ */

int output_write_sample(output_writer_t *w, FILE *out, const snapshot_t *snap,
                        const env_info_t *env, const device_selection_t *sel,
                        const output_extra_t *extra) {
    int rc;
    if (!w || !out || !snap)
        return KGS_EINVAL;
    switch (w->format) {
    case OUTPUT_JSON:
    case OUTPUT_JSONL:
        rc = write_json(out, snap, env, sel, extra, w->format == OUTPUT_JSONL);
        break;
    case OUTPUT_CSV:
        write_csv(w, out, snap, env, sel, extra);
        rc = 0;
        break;
    case OUTPUT_TABLE:
        rc = write_table(out, snap, env, sel, extra, w->processes);
        break;
    default:
        return KGS_EINVAL;
    }
    int frc = out_finish(out);
    return rc ? rc : frc;
}
