/*
 * metrics.c - renders keda_gpu_scaler_* from a snapshot and the server's
 * statistics.
 *
 * DESIGN
 * The Go system set gauges as a side effect of KEDA's RPCs, so values froze
 * without traffic and series of removed GPUs never went away. Here a scrape
 * renders from the latest snapshot alone: what is not in it is not exported.
 * A family's HELP/TYPE header is written only before its first sample, so an
 * exposition never carries an empty family (e.g. no MIG on this node).
 * Families are written whole, GPU by GPU inside each, as the text format
 * requires all samples of one metric to be adjacent.
 */
#include "server/metrics.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define NS "keda_gpu_scaler_"

static const char *const method_names[RPC_METHOD_COUNT] = {
    "IsActive",         "StreamIsActive", "GetMetricSpec", "GetMetrics",
    "StreamMetricSpec", "HealthCheck",    "HealthWatch",   "Other",
};

/* 50 us .. 5 s: an RPC served from memory takes tens of microseconds, so
 * the Go system's DefBuckets (5 ms and up) would put them all in one bucket. */
static const double rpc_bounds[METRICS_RPC_BUCKETS] = {
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
    0.025,   0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,
};

/* 100 us .. 10 s: a sweep is sub-millisecond per GPU without PCIe windows,
 * tens of milliseconds with them, and seconds only when a driver hangs. */
static const double sample_bounds[METRICS_SAMPLE_BUCKETS] = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};

const char *rpc_method_name(rpc_method_t m) {
    return (unsigned)m < RPC_METHOD_COUNT ? method_names[m] : method_names[RPC_OTHER];
}

void server_stats_init(server_stats_t *st) {
    memset(st, 0, sizeof *st);
}

void server_stats_record_rpc(server_stats_t *st, rpc_method_t m, int grpc_status, double seconds) {
    if ((unsigned)m >= RPC_METHOD_COUNT)
        m = RPC_OTHER;
    if (!(seconds > 0)) /* also NaN */
        seconds = 0;
    st->requests[m]++;
    if (grpc_status != 0)
        st->errors[m]++;
    metrics_rpc_hist_t *h = &st->latency[m];
    prom_histogram_t v = {rpc_bounds, METRICS_RPC_BUCKETS, h->_counts, h->_sum, h->_count};
    prom_histogram_observe(&v, seconds);
    h->_sum = v.sum;
    h->_count = v.count;
}

void server_stats_record_snapshot(server_stats_t *st, const snapshot_t *s) {
    if (!s || s->seq == st->last_seq)
        return;
    st->last_seq = s->seq;
    st->collections++;
    if (s->status != SNAPSHOT_OK)
        st->collection_errors++;
    prom_histogram_t v = {sample_bounds, METRICS_SAMPLE_BUCKETS, st->_sample_counts,
                          st->_sample_sum, st->_sample_count};
    prom_histogram_observe(&v, (double)s->sample_duration_ns / 1e9);
    st->_sample_sum = v.sum;
    st->_sample_count = v.count;
}

/* ---- rendering -------------------------------------------------------------- */

/* A family whose header is written before its first sample only. */
typedef struct {
    prom_buf_t *b;
    const char *name, *type, *help;
    bool started;
} family_t;

static family_t family(prom_buf_t *b, const char *name, const char *type, const char *help) {
    return (family_t){b, name, type, help, false};
}

static void family_start(family_t *f) {
    if (!f->started) {
        prom_family(f->b, f->name, f->type, f->help);
        f->started = true;
    }
}

static void sample(family_t *f, const prom_label_t *labels, size_t n, const prom_label_t *extra,
                   double v) {
    family_start(f);
    prom_sample(f->b, f->name, NULL, labels, n, extra, v);
}

/* Labels of one GPU's series; idx is the caller's storage. */
#define GPU_LABELS 4
static void gpu_labels(const gpu_record_t *g, const char *node, char idx[16],
                       prom_label_t out[GPU_LABELS]) {
    snprintf(idx, 16, "%u", g->index);
    out[0] = (prom_label_t){"gpu_index", idx};
    out[1] = (prom_label_t){"gpu_uuid", g->uuid};
    out[2] = (prom_label_t){"gpu_name", g->name};
    out[3] = (prom_label_t){"node", node};
}

typedef double (*gpu_value_fn)(const gpu_record_t *g);

static double v_gpu_util(const gpu_record_t *g) {
    return g->gpu_util_pct;
}
static double v_mem_util(const gpu_record_t *g) {
    return g->mem_util_pct;
}
static double v_mem_used(const gpu_record_t *g) {
    return (double)g->memory_used_bytes;
}
static double v_mem_total(const gpu_record_t *g) {
    return (double)g->memory_total_bytes;
}
static double v_temp(const gpu_record_t *g) {
    return g->temperature_c;
}
static double v_power(const gpu_record_t *g) {
    return g->power_w;
}
static double v_power_limit(const gpu_record_t *g) {
    return g->power_limit_w;
}
static double v_sm_active(const gpu_record_t *g) {
    return g->sm_active_pct;
}
static double v_sm_occupancy(const gpu_record_t *g) {
    return g->sm_occupancy_pct;
}
static double v_dram_bw(const gpu_record_t *g) {
    return g->dram_bw_util_pct;
}
/* The Go gauge was NVML's KB/s as is; ours are bytes/s from KiB/s. */
static double v_pcie_tx(const gpu_record_t *g) {
    return (double)g->pcie_tx_bytes_per_s / 1024.0;
}
static double v_pcie_rx(const gpu_record_t *g) {
    return (double)g->pcie_rx_bytes_per_s / 1024.0;
}
/* "mbps" in the Go name; MiB/s here, documented in HELP. */
static double v_nvlink_tx(const gpu_record_t *g) {
    return g->nvlink_tx_bytes_per_s / 1048576.0;
}
static double v_nvlink_rx(const gpu_record_t *g) {
    return g->nvlink_rx_bytes_per_s / 1048576.0;
}

typedef struct {
    const char *name;
    const char *help;
    gpu_field_t field;
    gpu_value_fn value;
} gpu_gauge_t;

static const gpu_gauge_t gpu_gauges[] = {
    {NS "gpu_utilization_percent", "Percent of time a kernel ran on the GPU (NVML).",
     GPU_F_GPU_UTIL, v_gpu_util},
    {NS "gpu_memory_utilization_percent",
     "Percent of time device memory was read or written (NVML memory utilization).", GPU_F_MEM_UTIL,
     v_mem_util},
    {NS "gpu_memory_used_bytes", "Device memory in use, bytes.", GPU_F_MEM_USED, v_mem_used},
    {NS "gpu_memory_total_bytes", "Device memory installed, bytes.", GPU_F_MEM_TOTAL, v_mem_total},
    {NS "gpu_temperature_celsius", "GPU core temperature, degrees Celsius.", GPU_F_TEMPERATURE,
     v_temp},
    {NS "gpu_power_draw_watts", "Power drawn by the board, watts.", GPU_F_POWER, v_power},
    {NS "gpu_power_limit_watts", "Power management limit, watts.", GPU_F_POWER_LIMIT,
     v_power_limit},
    {NS "gpu_sm_active_percent", "Percent of time at least one warp was active per SM (GPM).",
     GPU_F_SM_ACTIVE, v_sm_active},
    {NS "gpu_sm_occupancy_percent", "Resident warps as a percent of the SM maximum (GPM).",
     GPU_F_SM_OCCUPANCY, v_sm_occupancy},
    {NS "gpu_dram_bandwidth_utilization_percent",
     "Device memory bandwidth used, percent of peak (GPM).", GPU_F_DRAM_BW_UTIL, v_dram_bw},
};

static void render_gpu_gauge(prom_buf_t *b, const snapshot_t *s, const char *node,
                             const gpu_gauge_t *gg) {
    family_t f = family(b, gg->name, "gauge", gg->help);
    for (unsigned i = 0; i < s->gpu_count; i++) {
        const gpu_record_t *g = &s->gpus[i];
        if (!gpu_has(g, gg->field))
            continue;
        char idx[16];
        prom_label_t l[GPU_LABELS];
        gpu_labels(g, node, idx, l);
        sample(&f, l, GPU_LABELS, NULL, gg->value(g));
    }
}

/* A gauge with direction="tx"/"rx" from two fields. */
static void render_gpu_directional(prom_buf_t *b, const snapshot_t *s, const char *node,
                                   const char *name, const char *help, gpu_field_t ftx,
                                   gpu_value_fn tx, gpu_field_t frx, gpu_value_fn rx) {
    family_t f = family(b, name, "gauge", help);
    for (unsigned i = 0; i < s->gpu_count; i++) {
        const gpu_record_t *g = &s->gpus[i];
        char idx[16];
        prom_label_t l[GPU_LABELS];
        gpu_labels(g, node, idx, l);
        if (gpu_has(g, ftx))
            sample(&f, l, GPU_LABELS, &(prom_label_t){"direction", "tx"}, tx(g));
        if (gpu_has(g, frx))
            sample(&f, l, GPU_LABELS, &(prom_label_t){"direction", "rx"}, rx(g));
    }
}

/* One series a GPU whose labels add its vendor, so a dashboard or a query
 * can tell (or join on) NVIDIA and AMD GPUs of one fleet. */
static void render_gpu_info(prom_buf_t *b, const snapshot_t *s, const char *node) {
    family_t f = family(b, NS "gpu_info", "gauge",
                        "Always 1; labels carry each GPU's vendor (nvidia, amd) beside its "
                        "index, UUID (an AMD GPU's PCI address) and name.");
    for (unsigned i = 0; i < s->gpu_count; i++) {
        const gpu_record_t *g = &s->gpus[i];
        char idx[16];
        prom_label_t l[GPU_LABELS];
        gpu_labels(g, node, idx, l);
        const char *vendor = gpu_vendor_name(g->vendor);
        sample(&f, l, GPU_LABELS, &(prom_label_t){"vendor", vendor ? vendor : "unknown"}, 1);
    }
}

static void render_gpu_health(prom_buf_t *b, const snapshot_t *s, const char *node) {
    static const gpu_health_t states[] = {GPU_HEALTH_OK, GPU_HEALTH_LOST, GPU_HEALTH_RESET_REQUIRED,
                                          GPU_HEALTH_ERROR};
    family_t f = family(b, NS "gpu_health", "gauge",
                        "1 for the GPU's current health state, 0 for the others.");
    for (unsigned i = 0; i < s->gpu_count; i++) {
        const gpu_record_t *g = &s->gpus[i];
        char idx[16];
        prom_label_t l[GPU_LABELS];
        gpu_labels(g, node, idx, l);
        for (size_t k = 0; k < sizeof states / sizeof states[0]; k++)
            sample(&f, l, GPU_LABELS, &(prom_label_t){"state", gpu_health_name(states[k])},
                   g->health == states[k] ? 1 : 0);
    }
}

typedef double (*mig_value_fn)(const mig_record_t *m);
static double m_mem_used(const mig_record_t *m) {
    return (double)m->memory_used_bytes;
}
static double m_mem_total(const mig_record_t *m) {
    return (double)m->memory_total_bytes;
}
static double m_sm_active(const mig_record_t *m) {
    return m->sm_active_pct;
}
static double m_sm_occupancy(const mig_record_t *m) {
    return m->sm_occupancy_pct;
}
static double m_dram_bw(const mig_record_t *m) {
    return m->dram_bw_util_pct;
}

static const struct {
    const char *name;
    const char *help;
    gpu_field_t field;
    mig_value_fn value;
} mig_gauges[] = {
    {NS "mig_memory_used_bytes", "MIG instance memory in use, bytes.", GPU_F_MEM_USED, m_mem_used},
    {NS "mig_memory_total_bytes", "MIG instance memory size, bytes.", GPU_F_MEM_TOTAL, m_mem_total},
    {NS "mig_sm_active_percent", "MIG instance SM activity, percent (GPM).", GPU_F_SM_ACTIVE,
     m_sm_active},
    {NS "mig_sm_occupancy_percent", "MIG instance SM occupancy, percent (GPM).", GPU_F_SM_OCCUPANCY,
     m_sm_occupancy},
    {NS "mig_dram_bandwidth_utilization_percent",
     "MIG instance memory bandwidth used, percent of peak (GPM).", GPU_F_DRAM_BW_UTIL, m_dram_bw},
};

#define MIG_LABELS 6
static void render_mig(prom_buf_t *b, const snapshot_t *s, const char *node) {
    for (size_t k = 0; k < sizeof mig_gauges / sizeof mig_gauges[0]; k++) {
        family_t f = family(b, mig_gauges[k].name, "gauge", mig_gauges[k].help);
        for (unsigned i = 0; i < s->mig_total; i++) {
            const mig_record_t *m = &s->mig[i];
            if (!mig_has(m, mig_gauges[k].field))
                continue;
            const gpu_record_t *parent = snapshot_gpu_by_index(s, m->parent_index);
            char idx[16], gi[16];
            snprintf(idx, sizeof idx, "%u", m->parent_index);
            if (m->ids_valid)
                snprintf(gi, sizeof gi, "%u", m->gpu_instance_id);
            else
                gi[0] = '\0';
            prom_label_t l[MIG_LABELS] = {
                {"gpu_index", idx},      {"gpu_uuid", parent ? parent->uuid : ""},
                {"mig_uuid", m->uuid},   {"mig_profile", m->profile},
                {"gpu_instance_id", gi}, {"node", node},
            };
            sample(&f, l, MIG_LABELS, NULL, mig_gauges[k].value(m));
        }
    }
}

static void render_gpus(prom_buf_t *b, const snapshot_t *s, const char *node) {
    for (size_t k = 0; k < sizeof gpu_gauges / sizeof gpu_gauges[0]; k++)
        render_gpu_gauge(b, s, node, &gpu_gauges[k]);
    render_gpu_directional(b, s, node, NS "gpu_pcie_throughput_kbps",
                           "PCIe throughput, KiB/s (NVML's KB/s).", GPU_F_PCIE_TX, v_pcie_tx,
                           GPU_F_PCIE_RX, v_pcie_rx);
    render_gpu_directional(b, s, node, NS "gpu_nvlink_throughput_mbps",
                           "NVLink throughput summed over links, MiB/s.", GPU_F_NVLINK_TX,
                           v_nvlink_tx, GPU_F_NVLINK_RX, v_nvlink_rx);
    render_gpu_info(b, s, node);
    render_gpu_health(b, s, node);
    render_mig(b, s, node);
}

static void one(prom_buf_t *b, const char *name, const char *type, const char *help, double v) {
    prom_family(b, name, type, help);
    prom_sample(b, name, NULL, NULL, 0, NULL, v);
}

static void write_hist(prom_buf_t *b, const char *name, const prom_label_t *labels, size_t n,
                       const double *bounds, size_t nbounds, const uint64_t *counts, double sum,
                       uint64_t count) {
    uint64_t copy[METRICS_RPC_BUCKETS > METRICS_SAMPLE_BUCKETS ? METRICS_RPC_BUCKETS + 1
                                                               : METRICS_SAMPLE_BUCKETS + 1];
    memcpy(copy, counts, (nbounds + 1) * sizeof copy[0]);
    prom_histogram_t h = {bounds, nbounds, copy, sum, count};
    prom_histogram_write(b, name, labels, n, &h);
}

static void render_rpc(prom_buf_t *b, const server_stats_t *st) {
    prom_label_t l[1];
    prom_family(b, NS "scaler_requests_total", "counter",
                "gRPC requests finished, by method (health checks included).");
    for (int m = 0; m < RPC_METHOD_COUNT; m++) {
        l[0] = (prom_label_t){"method", method_names[m]};
        prom_sample(b, NS "scaler_requests_total", NULL, l, 1, NULL, (double)st->requests[m]);
    }
    prom_family(b, NS "scaler_request_errors_total", "counter",
                "gRPC requests finished with a status other than OK, by method.");
    for (int m = 0; m < RPC_METHOD_COUNT; m++) {
        l[0] = (prom_label_t){"method", method_names[m]};
        prom_sample(b, NS "scaler_request_errors_total", NULL, l, 1, NULL, (double)st->errors[m]);
    }
    prom_family(b, NS "scaler_request_duration_seconds", "histogram",
                "gRPC request duration (streams: until closed), seconds.");
    for (int m = 0; m < RPC_METHOD_COUNT; m++) {
        l[0] = (prom_label_t){"method", method_names[m]};
        const metrics_rpc_hist_t *h = &st->latency[m];
        write_hist(b, NS "scaler_request_duration_seconds", l, 1, rpc_bounds, METRICS_RPC_BUCKETS,
                   h->_counts, h->_sum, h->_count);
    }
}

/* What the budgets refused, by the flag that sets the limit, and what the
 * config cache and the open streams hold (docs/operations.md, "Limits"). */
static void render_budgets(prom_buf_t *b, const metrics_context_t *ctx) {
    const scaler_budget_stats_t *g = &ctx->budgets;
    const struct {
        const char *limit;
        uint64_t n;
    } refused[] = {
        {"max-request-bytes", ctx->requests_too_large},
        {"max-metadata-entries", g->refused_metadata_entries},
        {"max-metadata-bytes", g->refused_metadata_bytes},
        {"max-stream-bytes", g->refused_stream_bytes},
        {"config-cache-bytes", g->refused_streams_total},
        {"max-sources", ctx->source_refused_max},
        {"max-sources-per-namespace", ctx->source_refused_per_ns},
        {"source-create-rate", ctx->source_refused_rate},
        {"source-read-bytes", ctx->source_stats.refused_read_bytes},
        {"subscription-bytes", ctx->source_stats.refused_subscriptions},
        {"max-connections", ctx->refused_max_connections},
        {"max-connections-per-peer", ctx->refused_max_connections_per_peer},
        {"rlimit-nofile", ctx->refused_out_of_descriptors},
        {"http-connections", ctx->http_evictions},
        {"max-buffered-bytes-per-connection", ctx->grpc_limits.refused_buffered_per_connection},
        {"max-buffered-bytes", ctx->grpc_limits.refused_buffered},
        /* fixed limits, named after what they bound (docs/operations.md) */
        {"header-list-bytes", ctx->grpc_limits.refused_header_list},
        {"hpack-amplification", ctx->grpc_limits.refused_hpack},
    };
    prom_family(b, NS "limit_refusals_total", "counter",
                "Requests and streams refused with RESOURCE_EXHAUSTED, and connections closed "
                "at once, by the flag of the limit they exceeded (rlimit-nofile: out of file "
                "descriptors; http-connections: evicted from a full probe or metrics port).");
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        prom_label_t l[1] = {{"limit", refused[i].limit}};
        prom_sample(b, NS "limit_refusals_total", NULL, l, 1, NULL, (double)refused[i].n);
    }
    one(b, NS "request_buffered_bytes", "gauge",
        "Request bytes the gRPC connections hold while their messages are incomplete "
        "(--max-buffered-bytes bounds them).",
        (double)ctx->grpc_limits.buffered_bytes);
    one(b, NS "config_cache_bytes", "gauge",
        "Bytes the parsed trigger configurations cost (--config-cache-bytes bounds them).",
        (double)g->cache_bytes);
    one(b, NS "config_cache_entries", "gauge", "Distinct metadata maps cached (valid or not).",
        (double)g->cache_entries);
    one(b, NS "config_cache_evictions_total", "counter",
        "Cached configurations freed to stay within the cache's bounds.",
        (double)g->cache_evictions);
    if (ctx->has_sources) {
        const source_hub_stats_t *hs = &ctx->source_stats;
        one(b, NS "source_read_held_bytes", "gauge",
            "Bytes the replies of the demand-source polls in flight hold (heads, partial lines, "
            "Redis replies; --source-read-bytes bounds them).",
            (double)hs->read_held);
        one(b, NS "source_read_rate_waits_total", "counter",
            "Polls delayed because their namespace's sources read more than --source-read-rate "
            "bytes a second.",
            (double)hs->read_rate_waits);
        one(b, NS "subscription_bytes", "gauge",
            "Bytes the demand triggers' state costs (forecast, model, latency windows; "
            "--subscription-bytes bounds it).",
            (double)hs->sub_bytes);
        one(b, NS "subscriptions", "gauge",
            "Demand triggers with state, per namespace counted once each.",
            (double)hs->subscriptions);
    }
    one(b, NS "stream_pinned_bytes", "gauge",
        "Bytes open StreamIsActive streams (and calls waiting for a source's first poll) pin: "
        "configuration and bookkeeping, all connections.",
        (double)g->stream_bytes);
}

/* ---- the decision of each demand trigger -------------------------------------- */

/* A trigger's labels: the ScaledObject's namespace and name, the metric
 * name (and room for one or two more). Not "namespace": Prometheus gives
 * every target its pod's namespace under that name, and would rename ours
 * to exported_namespace. */
static size_t trigger_labels(const demand_view_ref_t *t, prom_label_t *l) {
    l[0] = (prom_label_t){"scaledobject_namespace", t->ns};
    l[1] = (prom_label_t){"scaledobject", t->scaled_object};
    l[2] = (prom_label_t){"metric", t->metric_name};
    return 3;
}

/* One family with a sample per trigger; value() says whether a trigger
 * has one and what it is. */
static void trigger_family(prom_buf_t *b, const metrics_context_t *ctx, const char *name,
                           const char *help, bool (*value)(const demand_view_t *, double *)) {
    bool started = false;
    for (size_t i = 0; i < ctx->ntriggers; i++) {
        double v;
        if (!value(ctx->triggers[i].view, &v))
            continue;
        if (!started)
            prom_family(b, name, "gauge", help);
        started = true;
        prom_label_t l[3];
        prom_sample(b, name, NULL, l, trigger_labels(&ctx->triggers[i], l), NULL, v);
    }
}

static bool t_up(const demand_view_t *v, double *out) {
    *out = v->status == EVAL_OK;
    return true;
}

static bool t_value(const demand_view_t *v, double *out) {
    *out = v->value;
    return v->status == EVAL_OK;
}

static bool t_active(const demand_view_t *v, double *out) {
    *out = v->status == EVAL_OK ? v->active : v->wake;
    return v->status == EVAL_OK || v->wake;
}

/* One family with a sample per trigger and signal: signal values (need
 * false) or the replicas each signal asks for (need true). */
static void signal_family(prom_buf_t *b, const metrics_context_t *ctx, const char *name,
                          const char *help, bool need) {
    bool started = false;
    for (size_t i = 0; i < ctx->ntriggers; i++) {
        const demand_view_t *v = ctx->triggers[i].view;
        for (int sg = 0; sg < DSIG_COUNT; sg++) {
            double x = need ? v->need[sg] : v->signal[sg];
            if (!v->known[sg] && !need)
                continue;
            if (!isfinite(x) || (!need && (sg == DSIG_QUEUEING_MODEL || sg == DSIG_LATENCY)))
                continue;
            if (!started)
                prom_family(b, name, "gauge", help);
            started = true;
            prom_label_t l[4];
            size_t n = trigger_labels(&ctx->triggers[i], l);
            l[n++] = (prom_label_t){"signal", demand_signal_name((demand_signal_t)sg)};
            prom_sample(b, name, NULL, l, n, NULL, x);
        }
    }
}

static void render_triggers(prom_buf_t *b, const metrics_context_t *ctx) {
    one(b, NS "triggers_omitted", "gauge",
        "Demand triggers whose decision is not exported because more than "
        "100 were evaluated (the most recently evaluated are).",
        (double)ctx->triggers_omitted);
    trigger_family(b, ctx, NS "trigger_up",
                   "1 when the trigger's last answer was a value, 0 an error.", t_up);
    trigger_family(b, ctx, NS "trigger_value", "The value the trigger's last answer gave KEDA.",
                   t_value);
    trigger_family(b, ctx, NS "trigger_active",
                   "1 when the trigger's last answer said active (also while a queue reads work "
                   "and the value is unknown).",
                   t_active);
    signal_family(b, ctx, NS "trigger_signal",
                  "What each signal of the trigger read at its last answer (requests, % for "
                  "kv_cache, tokens/s, the GPU metric's unit).",
                  false);
    signal_family(b, ctx, NS "trigger_signal_replicas",
                  "The replicas each signal with a target asked for at the trigger's last "
                  "answer (queueing_model: the model's; latency: the latency targets').",
                  true);
    bool started = false;
    for (size_t i = 0; i < ctx->ntriggers; i++) {
        const demand_view_t *v = ctx->triggers[i].view;
        if (v->decided_by < 0)
            continue;
        if (!started)
            prom_family(b, NS "trigger_decided_by", "gauge",
                        "Always 1; the signal label names the signal whose need was the "
                        "trigger's last value.");
        started = true;
        prom_label_t l[4];
        size_t n = trigger_labels(&ctx->triggers[i], l);
        l[n++] = (prom_label_t){"signal", demand_signal_name((demand_signal_t)v->decided_by)};
        prom_sample(b, NS "trigger_decided_by", NULL, l, n, NULL, 1);
    }
    static const char *const qn[3] = {"0.5", "0.9", "0.99"};
    const char *fam[2] = {NS "trigger_latency_seconds", NS "trigger_latency_target_seconds"};
    const char *help[2] = {"A latency target's quantile observed over the trigger's window.",
                           "A latency target of the trigger."};
    for (int k = 0; k < 2; k++) {
        started = false;
        for (size_t i = 0; i < ctx->ntriggers; i++)
            for (int sg = 0; sg < SLO_SIGNAL_COUNT; sg++)
                for (int q = 0; q < 3; q++) {
                    const demand_view_t *v = ctx->triggers[i].view;
                    double x = k ? v->latency[sg][q].target_s : v->latency[sg][q].observed_s;
                    if (!(v->latency[sg][q].target_s > 0) || !isfinite(x) ||
                        (!k && !v->latency[sg][q].known))
                        continue;
                    if (!started)
                        prom_family(b, fam[k], "gauge", help[k]);
                    started = true;
                    prom_label_t l[5];
                    size_t n = trigger_labels(&ctx->triggers[i], l);
                    l[n++] = (prom_label_t){"signal", slo_signal_name((slo_signal_t)sg)};
                    l[n++] = (prom_label_t){"quantile", qn[q]};
                    prom_sample(b, fam[k], NULL, l, n, NULL, x);
                }
    }
    started = false;
    for (size_t i = 0; i < ctx->ntriggers; i++) {
        const demand_view_t *v = ctx->triggers[i].view;
        if (!v->engines)
            continue;
        const struct {
            const char *state;
            unsigned n;
        } st[] = {{"answering", v->answering},
                  {"not_serving", v->not_serving},
                  {"failing", v->failing},
                  {"pending", v->pending}};
        if (!started)
            prom_family(b, NS "trigger_engines", "gauge",
                        "The trigger's engine endpoints at its last answer, by state (not_serving: "
                        "nobody there, as at zero replicas).");
        started = true;
        for (size_t k = 0; k < sizeof st / sizeof *st; k++) {
            prom_label_t l[4];
            size_t n = trigger_labels(&ctx->triggers[i], l);
            l[n++] = (prom_label_t){"state", st[k].state};
            prom_sample(b, NS "trigger_engines", NULL, l, n, NULL, st[k].n);
        }
    }
}

/* What the NVML sampler did: left out where no NVML is read (aggregator). */
static void render_nvml(prom_buf_t *out, const snapshot_t *snap, const server_stats_t *st,
                        const metrics_context_t *ctx, const char *node) {
    bool nvml_ok = snap && snap->status == SNAPSHOT_OK;
    one(out, NS "nvml_up", "gauge",
        "1 when the latest sample reached NVML, 0 when NVML is down or not sampled yet.",
        nvml_ok ? 1 : 0);
    if (ctx->gpu_backend) {
        prom_label_t gl[2] = {{"backend", ctx->gpu_backend}, {"node", node}};
        prom_family(out, NS "gpu_backend_info", "gauge",
                    "Always 1; labels carry the GPU backend (--gpu-backend) this node reads.");
        prom_sample(out, NS "gpu_backend_info", NULL, gl, 2, NULL, 1);
    }
    if (nvml_ok && snap->driver_version[0]) {
        prom_label_t dl[2] = {{"driver_version", snap->driver_version}, {"node", node}};
        prom_family(out, NS "nvml_driver_info", "gauge", "Always 1; labels carry the driver.");
        prom_sample(out, NS "nvml_driver_info", NULL, dl, 2, NULL, 1);
    }
    /* The Go docs promised gpu_device_count, which never existed; promtool's
     * lint rejects a gauge ending in _count (it reads as a histogram's), so
     * the name is gpu_devices. */
    if (nvml_ok)
        one(out, NS "gpu_devices", "gauge", "GPUs NVML reports on this node.", snap->gpu_count);
    if (snap) {
        double age = ctx->now > snap->taken_mono ? (double)(ctx->now - snap->taken_mono) / 1e9 : 0;
        one(out, NS "snapshot_age_seconds", "gauge", "Age of the latest sample, seconds.", age);
        one(out, NS "sample_duration_seconds", "gauge",
            "How long the latest NVML sweep took, seconds.",
            (double)snap->sample_duration_ns / 1e9);
    }
    one(out, NS "sampler_overruns_total", "counter",
        "NVML sweeps that took longer than the sample interval.", (double)ctx->sampler_overruns);

    one(out, NS "collections_total", "counter", "NVML sweeps completed.", (double)st->collections);
    one(out, NS "collection_errors_total", "counter", "NVML sweeps that found NVML down.",
        (double)st->collection_errors);
    prom_family(out, NS "collection_duration_seconds", "histogram",
                "NVML sweep duration, seconds.");
    write_hist(out, NS "collection_duration_seconds", NULL, 0, sample_bounds,
               METRICS_SAMPLE_BUCKETS, st->_sample_counts, st->_sample_sum, st->_sample_count);
}

_Static_assert(COLD_START_BUCKETS <= METRICS_RPC_BUCKETS, "write_hist's copy holds the buckets");

/* Per workload (pod_namespace, pod_selector: not `namespace`, which Prometheus gives every target
 * for the scaler's own pod): each stage's histogram (stage "node", "image", "weights"), failed
 * starts by reason (a fixed set, so every reason has a series from the start and rate() sees the
 * first one), and the pods waiting for a node now. 64 workloads at most. */
static void render_cold_starts(prom_buf_t *b, const cold_start_book_t *book) {
    if (!book || book->n == 0)
        return;
    prom_label_t l[3];
    const char *h = NS "cold_start_stage_seconds";
    prom_family(b, h, "histogram",
                "Completed pod starts of a podSelector workload by stage, seconds: node "
                "(created to scheduled: the wait for a node), image (scheduled to every "
                "container running: image pulls, init containers), weights (running to Ready: "
                "model load and warm-up).");
    for (size_t i = 0; i < book->n; i++) {
        const cold_start_workload_t *w = book->w[i];
        l[0] = (prom_label_t){"pod_namespace", w->ns};
        l[1] = (prom_label_t){"pod_selector", w->selector};
        for (int k = 0; k < POD_STAGE_COUNT; k++) {
            l[2] = (prom_label_t){"stage", pod_stage_name((pod_stage_t)k)};
            write_hist(b, h, l, 3, cold_start_bucket_bounds(), COLD_START_BUCKETS, w->rec.hist[k],
                       w->rec.hist_sum[k], w->rec.completed);
        }
    }
    const char *f = NS "cold_start_failures_total";
    prom_family(b, f, "counter",
                "Pod starts of a podSelector workload that failed, by reason: ImagePullBackOff, "
                "ErrImagePull, CrashLoopBackOff, OOMKilled, Unschedulable (deleted while "
                "waiting for a node), other.");
    for (size_t i = 0; i < book->n; i++) {
        const cold_start_workload_t *w = book->w[i];
        l[0] = (prom_label_t){"pod_namespace", w->ns};
        l[1] = (prom_label_t){"pod_selector", w->selector};
        for (int t = 1; t < POD_TROUBLE_COUNT; t++) {
            l[2] = (prom_label_t){"reason", pod_trouble_name((pod_trouble_t)t)};
            prom_sample(b, f, NULL, l, 3, NULL, (double)w->rec.failed[t]);
        }
    }
    const char *g = NS "cold_start_waiting_for_node";
    prom_family(b, g, "gauge",
                "Pods of a podSelector workload Unschedulable now (waiting for a node).");
    for (size_t i = 0; i < book->n; i++) {
        const cold_start_workload_t *w = book->w[i];
        l[0] = (prom_label_t){"pod_namespace", w->ns};
        l[1] = (prom_label_t){"pod_selector", w->selector};
        prom_sample(b, g, NULL, l, 2, NULL, w->rec.waiting_for_node);
    }
}

void metrics_render(prom_buf_t *out, const snapshot_t *snap, const server_stats_t *st,
                    const metrics_context_t *ctx) {
    const char *node = ctx->node ? ctx->node : snap ? snap->node_name : "";

    prom_label_t bi[2] = {{"version", ctx->version ? ctx->version : "unknown"},
                          {"commit", ctx->commit ? ctx->commit : "unknown"}};
    prom_family(out, NS "build_info", "gauge", "Always 1; labels carry the build.");
    prom_sample(out, NS "build_info", NULL, bi, 2, NULL, 1);

    one(out, NS "ready", "gauge", "1 when /readyz answers 200.", ctx->ready ? 1 : 0);
    if (!ctx->no_nvml)
        render_nvml(out, snap, st, ctx, node);
    if (ctx->stale_after_ns > 0)
        one(out, NS "snapshot_stale_after_seconds", "gauge",
            "Sample age beyond which RPCs fail with UNAVAILABLE (--stale-after), seconds.",
            (double)ctx->stale_after_ns / 1e9);

    render_rpc(out, st);
    one(out, NS "grpc_streams_open", "gauge", "gRPC streams open now.", ctx->streams_open);
    one(out, NS "grpc_connections_open", "gauge", "gRPC connections open now.",
        ctx->connections_open);
    if (ctx->has_sources) {
        one(out, NS "sources", "gauge",
            "Demand sources (engine endpoints, queues) being polled now.", ctx->sources);
        one(out, NS "source_polls_total", "counter", "Demand source polls completed.",
            (double)ctx->source_polls);
        one(out, NS "source_poll_failures_total", "counter",
            "Demand source polls that failed (connect, TLS, HTTP status, parse, timeout).",
            (double)ctx->source_failures);
        one(out, NS "source_response_bytes_total", "counter", "Bytes read from demand sources.",
            (double)ctx->source_bytes);
        one(out, NS "source_egress_refusals_total", "counter",
            "Demand source polls refused before connecting because the address or port is "
            "outside --source-allow-cidrs / --source-allow-ports.",
            (double)ctx->source_refused_egress);
    }

    if (ctx->has_budgets)
        render_budgets(out, ctx);
    if (ctx->has_sources)
        render_triggers(out, ctx);
    render_cold_starts(out, ctx->cold_starts);

    if (!ctx->no_nvml && snap && snap->status == SNAPSHOT_OK)
        render_gpus(out, snap, node);
}
