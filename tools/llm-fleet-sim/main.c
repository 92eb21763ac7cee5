/*
 * main.c - llm-fleet-sim: an LLM serving fleet on loopback (an LLM
 * gateway's queue, vLLM replicas, a burst of requests) and KEDA + the HPA
 * driving it, against a real keda-gpu-scaler. What `make run` shows.
 *
 * One thread, one event loop (net/loop.h): a 50 ms tick advances the load
 * and the fleet (load.h, fleet.h: pure), opens a replica's /metrics port
 * when it turns Ready and closes it when it goes (a pod that is not there
 * refuses connections), and keeps the cycle's score; keda.c plays KEDA and
 * the HPA over gRPC; every decision and replica change prints one line.
 * Time in the model is wall time times --time-scale.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "app.h"
#include "core/err.h"
#include "node.h"
#include "pages.h"

#define TICK_NS (50 * NS_PER_MS)
#define HEADER_EVERY 30

static const char usage_text[] =
    "Usage: llm-fleet-sim --scaler HOST:PORT [flags]\n"
    "\n"
    "Plays an LLM serving fleet on loopback - an LLM gateway's request queue\n"
    "(llm-d's endpoint picker), up to --max-replicas vLLM replicas (one\n"
    "/metrics port each, open only while that replica is Ready), a burst of\n"
    "requests - and KEDA + the HPA scaling it with a keda-gpu-scaler (a\n"
    "metricType demand trigger, external-push) from zero and back. Prints one\n"
    "line per decision or replica change. Time runs --time-scale times faster\n"
    "than a real fleet.\n"
    "\n"
    "Flags:\n"
    "  --scaler HOST:PORT      the keda-gpu-scaler to ask (required)\n"
    "  --listen ADDR           address of the /metrics pages (default 127.0.0.1)\n"
    "  --engine-port N         replica i serves vLLM /metrics on N+i (default 8100)\n"
    "  --gateway-port N        the gateway's /metrics (default 9400)\n"
    "  --max-replicas N        maxReplicaCount: replica slots, 1-16 (default 8)\n"
    "  --time-scale X          how much faster than a real fleet, 1-60 (default 6)\n"
    "  --cycles N              stop after N cycles 0 -> N -> 0 (default 0: until Ctrl-C)\n"
    "  --max-seconds S         fail (exit 1) if the cycles are not done in S s (default: no "
    "bound)\n"
    "  --seed N                the load's random seed (default 1)\n"
    "  --metadata KEY=VALUE    one more trigger metadata entry (repeatable)\n"
    "  --node-scenario FILE    keep FILE, the NVML stand-in's scenario of the node,\n"
    "                          current: one H100 per replica slot (default: none)\n"
    "\n"
    "Exit status: 0 when --cycles cycles are done (or on Ctrl-C), 1 when\n"
    "--max-seconds passed first, 2 for a usage error, 3 when a port is taken.\n";

/* ---- options ----------------------------------------------------------- */

static int parse_uint(const char *flag, const char *v, unsigned lo, unsigned hi, unsigned *out,
                      char *err, size_t errlen) {
    char *end;
    errno = 0;
    unsigned long n = strtoul(v, &end, 10);
    if (errno || end == v || *end || v[0] == '-' || n < lo || n > hi)
        return kgs_seterr(err, errlen, KGS_EINVAL, "%s \"%s\": must be an integer from %u to %u",
                          flag, v, lo, hi);
    *out = (unsigned)n;
    return 0;
}

static int parse_double(const char *flag, const char *v, double lo, double hi, double *out,
                        char *err, size_t errlen) {
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(d) || d < lo || d > hi)
        return kgs_seterr(err, errlen, KGS_EINVAL, "%s \"%s\": must be a number from %g to %g",
                          flag, v, lo, hi);
    *out = d;
    return 0;
}

static int parse_args(int argc, char **argv, lfs_opts_t *o, char *err, size_t errlen) {
    memset(o, 0, sizeof *o);
    o->listen = "127.0.0.1";
    o->engine_port = 8100;
    o->gateway_port = 9400;
    o->slots = 8;
    o->time_scale = 6;
    o->seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        unsigned u;
        int rc = 0;
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            o->help = true;
            return 0;
        }
        if (!v)
            return kgs_seterr(err, errlen, KGS_EINVAL, "%s needs a value (see --help)", f);
        i++;
        if (!strcmp(f, "--scaler"))
            o->scaler = v;
        else if (!strcmp(f, "--listen"))
            o->listen = v;
        else if (!strcmp(f, "--node-scenario"))
            o->node_file = v;
        else if (!strcmp(f, "--engine-port"))
            rc = parse_uint(f, v, 1, 65535 - FLEET_MAX_SLOTS, &o->engine_port, err, errlen);
        else if (!strcmp(f, "--gateway-port"))
            rc = parse_uint(f, v, 1, 65535, &o->gateway_port, err, errlen);
        else if (!strcmp(f, "--max-replicas"))
            rc = parse_uint(f, v, 1, FLEET_MAX_SLOTS, &o->slots, err, errlen);
        else if (!strcmp(f, "--time-scale"))
            rc = parse_double(f, v, 1, 60, &o->time_scale, err, errlen);
        else if (!strcmp(f, "--cycles"))
            rc = parse_uint(f, v, 0, 1000, &o->cycles, err, errlen);
        else if (!strcmp(f, "--max-seconds"))
            rc = parse_double(f, v, 1, 86400, &o->max_wall_s, err, errlen);
        else if (!strcmp(f, "--seed")) {
            rc = parse_uint(f, v, 0, 4294967295u, &u, err, errlen);
            o->seed = u;
        } else if (!strcmp(f, "--metadata")) {
            const char *eq = strchr(v, '=');
            if (!eq || eq == v)
                return kgs_seterr(err, errlen, KGS_EINVAL,
                                  "--metadata \"%s\": expected KEY=VALUE (e.g. partialData=ignore)",
                                  v);
            if (o->nmeta == LFS_MAX_METADATA)
                return kgs_seterr(err, errlen, KGS_EINVAL, "at most %d --metadata entries",
                                  LFS_MAX_METADATA);
            o->meta_keys[o->nmeta] = v;
            o->meta_values[o->nmeta++] = eq + 1;
        } else
            return kgs_seterr(err, errlen, KGS_EINVAL, "unknown flag %s (see --help)", f);
        if (rc)
            return rc;
    }
    if (!o->scaler)
        return kgs_seterr(err, errlen, KGS_EINVAL, "--scaler HOST:PORT is required (see --help)");
    return 0;
}

/* ---- the pages --------------------------------------------------------- */

static void on_page(const http1_request_t *req, http_response_t *resp, prom_buf_t *scratch,
                    void *ud) {
    (void)scratch;
    lfs_page_ctx_t *c = ud;
    app_t *a = c->app;
    size_t plen = req->path_len;
    const char *q = memchr(req->path, '?', plen);
    if (q)
        plen = (size_t)(q - req->path);
    if (plen != 8 || memcmp(req->path, "/metrics", 8) != 0)
        return; /* the preset 404 */
    size_t n;
    if (c->slot == -1) {
        fleet_summary_t fs;
        fleet_summary(a->fleet, &fs);
        pages_pool_t pool = {fs.queue, fs.ready, 0, 0, 0};
        if (fs.ready) {
            double kv = 0;
            for (unsigned i = 0; i < a->o.slots; i++)
                if (a->fleet->slot[i].state == FLEET_READY)
                    kv += fleet_kv_usage(a->fleet, i);
            pool.avg_waiting = (double)fs.waiting / fs.ready;
            pool.avg_running = (double)fs.running / fs.ready;
            pool.avg_kv = kv / fs.ready;
        }
        n = pages_gateway(a->page, sizeof a->page, &pool);
    } else {
        n = pages_vllm(a->page, sizeof a->page, &a->fleet->slot[c->slot],
                       fleet_kv_usage(a->fleet, (unsigned)c->slot));
    }
    if (n == 0) {
        resp->status = 500;
        resp->body = "page too large\n";
        resp->body_len = strlen(resp->body);
        return;
    }
    resp->status = 200;
    resp->content_type = PAGES_CONTENT_TYPE;
    resp->body = a->page;
    resp->body_len = n;
}

/* Listens for one page; on failure err names the port and the flag that
 * moves it. */
static int page_listen(app_t *a, unsigned port, lfs_page_ctx_t *ctx, const char *what,
                       const char *flag, http_server_t **out, char *err, size_t errlen) {
    char sub[256];
    http_server_opts_t so = {.max_connections = 32};
    if (http_server_listen(a->loop, a->o.listen, (uint16_t)port, &so, on_page, ctx, out, sub,
                           sizeof sub) == 0)
        return 0;
    return kgs_seterr(err, errlen, KGS_EIO, "%s: %s (move it with %s)", what, sub, flag);
}

/* Opens the port of every Ready replica and closes the others: a replica
 * that is not Ready refuses connections, as a pod that is not there. */
static int sync_servers(app_t *a, char *err, size_t errlen) {
    for (unsigned i = 0; i < a->o.slots; i++) {
        bool ready = a->fleet->slot[i].state == FLEET_READY;
        if (ready && !a->slot_srv[i]) {
            char what[64];
            snprintf(what, sizeof what, "replica %u's vLLM /metrics", i);
            int rc = page_listen(a, a->o.engine_port + i, &a->slot_ctx[i], what, "--engine-port",
                                 &a->slot_srv[i], err, errlen);
            if (rc)
                return rc;
        } else if (!ready && a->slot_srv[i]) {
            http_server_free(a->slot_srv[i]);
            a->slot_srv[i] = NULL;
        }
    }
    return 0;
}

/* Every port this run needs, tried once at the start, so a taken one is
 * named before anything else happens. */
static int probe_ports(app_t *a, char *err, size_t errlen) {
    for (unsigned i = 0; i < a->o.slots; i++) {
        char what[64];
        snprintf(what, sizeof what, "replica %u's vLLM /metrics", i);
        http_server_t *s;
        int rc = page_listen(a, a->o.engine_port + i, &a->slot_ctx[i], what, "--engine-port", &s,
                             err, errlen);
        if (rc)
            return rc;
        http_server_free(s);
    }
    return page_listen(a, a->o.gateway_port, &a->gateway_ctx, "the gateway's /metrics",
                       "--gateway-port", &a->gateway_srv, err, errlen);
}

/* ---- the trigger ------------------------------------------------------- */

/* The ScaledObject's trigger metadata: every replica slot's URL, the
 * gateway queue, the cold start in this run's seconds, and --metadata. */
static void build_trigger(app_t *a) {
    lfs_keda_t *k = &a->k;
    size_t w = 0;
    for (unsigned i = 0; i < a->o.slots; i++)
        w += (size_t)snprintf(a->endpoints + w, sizeof a->endpoints - w, "%shttp://%s:%u/metrics",
                              i ? "," : "", a->o.listen, a->o.engine_port + i);
    snprintf(a->gateway_url, sizeof a->gateway_url, "http://%s:%u/metrics", a->o.listen,
             a->o.gateway_port);
    long cold = lround(LFS_REAL_COLD_START_S / a->o.time_scale);
    snprintf(a->cold_start, sizeof a->cold_start, "%ld", cold < 1 ? 1 : cold);
    /* The scaler learns a replica's capacity over minutes of its own, real
     * time; at --time-scale its learning would trail the fleet by that
     * factor, so it is told, as an operator would tell it from a benchmark
     * (in this run's seconds) */
    snprintf(a->capacity, sizeof a->capacity, "%.2f",
             fleet_capacity_rps(&a->fleet->p, &a->load) * a->o.time_scale);
    static const char *const fixed_keys[] = {
        "metricType",   "engine",           "vllmEndpoint",      "demandEndpoint",
        "demandMetric", "coldStartSeconds", "capacityPerReplica"};
    const char *fixed_values[] = {"demand",
                                  "vllm",
                                  a->endpoints,
                                  a->gateway_url,
                                  "llm_d_epp_flow_control_queue_size",
                                  a->cold_start,
                                  a->capacity};
    for (size_t i = 0; i < sizeof fixed_keys / sizeof fixed_keys[0]; i++) {
        k->keys[k->nmeta] = fixed_keys[i];
        k->values[k->nmeta++] = fixed_values[i];
    }
    /* --metadata KEY=VALUE: the key, cut at '=', is copied */
    for (size_t i = 0; i < a->o.nmeta; i++) {
        size_t klen = (size_t)(a->o.meta_values[i] - 1 - a->o.meta_keys[i]);
        snprintf(a->keybuf[i], sizeof a->keybuf[i], "%.*s", (int)klen, a->o.meta_keys[i]);
        k->keys[k->nmeta] = a->keybuf[i];
        k->values[k->nmeta++] = a->o.meta_values[i];
    }
}

/* ---- the screen -------------------------------------------------------- */

double lfs_now(app_t *a) {
    return (double)(loop_now(a->loop) - a->t0) / 1e9 * a->o.time_scale;
}

static double wall_s(app_t *a) {
    return (double)(loop_now(a->loop) - a->t0) / 1e9;
}

static void print_banner(app_t *a) {
    double s = a->o.time_scale;
    printf("== llm-fleet-sim: an LLM fleet that keda-gpu-scaler wakes from zero, sizes, and "
           "returns to zero ==\n"
           "Simulated on %s (nothing else to install):\n"
           "  gateway   llm-d's endpoint picker holding requests: %s (%s)\n"
           "  replicas  up to %u vLLM v0.11.0 pods (%s), /metrics on ports %u-%u, each open only "
           "while that pod is Ready\n"
           "  load      a burst: the rate rises to 6 requests/s over 60 s, holds 2 min, falls to 0 "
           "over 1 min (real-fleet figures)\n"
           "  KEDA, HPA an external-push trigger; pollingInterval 30 s, cooldownPeriod 300 s, HPA "
           "sync 15 s, scale-down window 120 s\n",
           a->o.listen, a->gateway_url, "llm_d_epp_flow_control_queue_size", a->o.slots,
           PAGES_MODEL, a->o.engine_port, a->o.engine_port + a->o.slots - 1);
    printf("Time runs %gx faster than a real fleet: a replica's cold start takes %.0f s here for "
           "%.0f s in llm-d's measurement of vLLM with its defaults (90.65 s, Qwen3-32B on an "
           "H100), and every period above is divided by %g. The scaler's own clock is not: its "
           "rates read %gx a real fleet's.\n",
           s, LFS_REAL_COLD_START_S / s, LFS_REAL_COLD_START_S, s, s);
    printf("The trigger (standalone role, metricType demand, the default queueing model):\n");
    for (size_t i = 0; i < a->k.nmeta; i++)
        printf("  %s: %s\n", a->k.keys[i], a->k.values[i]);
    double cap = fleet_capacity_rps(&a->fleet->p, &a->load);
    printf("coldStartSeconds and capacityPerReplica (%u requests at once, %.1f s each: %.2f/s, "
           "x%g) are given because the standalone role sees no pod list to learn cold starts "
           "from, and the scaler learns capacity over minutes of real time, which at %gx would "
           "trail the fleet.\n",
           a->fleet->p.max_num_seqs, a->fleet->p.max_num_seqs / cap, cap, s, s);
    printf("Columns: time since start; queue at the gateway; wait, run = vLLM's waiting and "
           "running requests summed over the Ready replicas; repl = the replicas KEDA or the HPA "
           "set (ready + start); active = IsActive; value = GetMetrics (100 x the replicas the "
           "model asks for; target 100); the decision; then the scaler's Explain (the model's "
           "inputs: arrival rate lambda, capacity per replica, cold start T, backlog, ...).\n\n");
    fflush(stdout);
}

static void print_header(void) {
    printf("%7s %6s %5s %5s %5s %5s %5s  %-6s %-7s %5s  %-62s %s\n", "time", "queue", "wait", "run",
           "repl", "ready", "start", "active", "value", "gpu%", "decision", "the scaler's Explain");
}

void lfs_print(app_t *a, const char *decision) {
    fleet_summary_t fs;
    fleet_summary(a->fleet, &fs);
    char value[32] = "-", gpu[32] = "-", line[sizeof a->last_line];
    if (!isnan(a->k.last_value))
        snprintf(value, sizeof value, "%.1f", a->k.last_value);
    if (!isnan(a->k.last_gpu))
        snprintf(gpu, sizeof gpu, "%.0f", a->k.last_gpu);
    snprintf(line, sizeof line, "%6zu %5u %5u %5u %5u %5u  %-6s %-7s %5s  %-62s %s", fs.queue,
             fs.waiting, fs.running, fs.replicas, fs.ready, fs.starting,
             a->k.last_active < 0 ? "-"
             : a->k.last_active   ? "true"
                                  : "false",
             value, gpu, decision, a->k.last_explain);
    if (strcmp(line, a->last_line) == 0)
        return; /* nothing changed: one line per change */
    snprintf(a->last_line, sizeof a->last_line, "%s", line);
    if (a->lines++ % HEADER_EVERY == 0)
        print_header();
    printf("%6.1fs %s\n", wall_s(a), line);
    fflush(stdout);
}

void lfs_set_replicas(app_t *a, unsigned n, const char *why) {
    fleet_scale(a->fleet, lfs_now(a), n);
    char err[512];
    if (sync_servers(a, err, sizeof err) != 0) {
        fprintf(stderr, "llm-fleet-sim: %s\n", err);
        a->exit_code = 3;
        loop_stop(a->loop);
    }
    if (a->fleet->replicas > 0 && a->woke_s < 0)
        a->woke_s = lfs_now(a);
    if (a->fleet->replicas > a->peak)
        a->peak = a->fleet->replicas;
    lfs_print(a, why);
}

/* ---- the clock: load, fleet, cycles ------------------------------------ */

/* One line for the replicas that turned Ready in this tick (bits). */
static void print_ready(app_t *a, uint32_t bits) {
    char who[128] = "", ports[128] = "";
    size_t w = 0, p = 0;
    unsigned count = 0;
    for (unsigned i = 0; i < a->o.slots; i++) {
        if (!(bits & (UINT32_C(1) << i)))
            continue;
        w += (size_t)snprintf(who + w, sizeof who - w, "%s%u", count ? "," : "", i);
        p += (size_t)snprintf(ports + p, sizeof ports - p, "%s%u", count ? "," : "",
                              a->o.engine_port + i);
        count++;
    }
    char why[320];
    snprintf(why, sizeof why, "replica%s %s Ready after a %.0f s cold start: port%s %s open%s",
             count > 1 ? "s" : "", who, a->fleet->p.cold_start_s / a->o.time_scale,
             count > 1 ? "s" : "", ports, count > 1 ? "" : "s");
    lfs_print(a, why);
}

/* Rewrites the node's scenario when the GPUs' readings changed: a new file
 * renamed over the old, as the NVML stand-in wants (sim/README.md). */
static int write_node(app_t *a, double now, char *err, size_t errlen) {
    size_t n = node_scenario(a->node_text[0], sizeof a->node_text[0], a->fleet, now);
    if (n == 0)
        return kgs_seterr(err, errlen, KGS_ENOMEM, "--node-scenario: the scenario does not fit");
    if (strcmp(a->node_text[0], a->node_text[1]) == 0)
        return 0;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", a->o.node_file);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return kgs_seterr(err, errlen, KGS_EIO, "--node-scenario %s: open: %s", tmp,
                          strerror(errno));
    size_t put = fwrite(a->node_text[0], 1, n, f);
    int saved = errno;
    if (fclose(f) != 0 || put != n) {
        saved = put != n ? saved : errno;
        unlink(tmp);
        return kgs_seterr(err, errlen, KGS_EIO, "--node-scenario %s: write: %s", tmp,
                          strerror(saved));
    }
    if (rename(tmp, a->o.node_file) != 0) {
        saved = errno;
        unlink(tmp);
        return kgs_seterr(err, errlen, KGS_EIO, "--node-scenario %s: rename: %s", a->o.node_file,
                          strerror(saved));
    }
    memcpy(a->node_text[1], a->node_text[0], n + 1);
    return 0;
}

/* A cycle ends when the burst is over and the fleet is back at 0 with
 * nothing queued, having woken (0 -> N -> 0). */
static void end_of_cycle(app_t *a, double now) {
    fleet_t *f = a->fleet;
    a->cycle++;
    double here = (now - a->cycle_start_s) / a->o.time_scale;
    printf("cycle %u done: 0 -> %u -> 0 replicas in %.0f s here (%.1f min of a real fleet); "
           "%llu requests served, the gateway queue peaked at %zu, the longest wait there was "
           "%.0f s here (%.0f s real); %llu requests retried after their replica went away\n\n",
           a->cycle, a->peak, here, here * a->o.time_scale / 60, (unsigned long long)f->completed,
           f->max_queue, f->max_wait_s / a->o.time_scale, f->max_wait_s,
           (unsigned long long)f->requeued);
    fflush(stdout);
    if (a->o.cycles && a->cycle >= a->o.cycles) {
        a->exit_code = 0;
        loop_stop(a->loop);
        return;
    }
    load_restart(&a->load, now);
    fleet_reset_stats(f);
    a->cycle_start_s = now;
    a->woke_s = -1;
    a->peak = 0;
}

static void on_tick(loop_t *loop, loop_timer_t *t, void *ud) {
    app_t *a = ud;
    loop_timer_start(loop, t, clock_add_sat(loop_now(loop), TICK_NS));
    double now = lfs_now(a);
    load_request_t batch[256];
    size_t n;
    /* bounded: the load integrates at most LOAD_MAX_CALL_S per call, and a
     * tick covers far less; the loop ends when a call returns fewer */
    for (unsigned rounds = 0; rounds < 1000; rounds++) {
        n = load_arrivals(&a->load, now, batch, sizeof batch / sizeof batch[0]);
        for (size_t i = 0; i < n; i++)
            fleet_arrive(a->fleet, &batch[i]);
        if (n < sizeof batch / sizeof batch[0])
            break;
    }
    uint32_t ready = fleet_advance(a->fleet, now);
    char err[512];
    if (sync_servers(a, err, sizeof err) != 0) {
        fprintf(stderr, "llm-fleet-sim: %s\n", err);
        a->exit_code = 3;
        loop_stop(loop);
        return;
    }
    if (ready)
        print_ready(a, ready);
    if (a->o.node_file && write_node(a, now, err, sizeof err) != 0) {
        fprintf(stderr, "llm-fleet-sim: %s\n", err);
        a->exit_code = 1;
        loop_stop(loop);
        return;
    }
    fleet_summary_t fs;
    fleet_summary(a->fleet, &fs);
    if (a->woke_s >= 0 && now > load_end_s(&a->load) && fs.replicas == 0 && fs.queue == 0)
        end_of_cycle(a, now);
    if (a->o.max_wall_s > 0 && wall_s(a) > a->o.max_wall_s && a->exit_code != 0) {
        fprintf(stderr,
                "llm-fleet-sim: %u of %u cycles 0 -> N -> 0 done within --max-seconds %g (the "
                "fleet has %u replicas, %zu requests queued)\n",
                a->cycle, a->o.cycles, a->o.max_wall_s, fs.replicas, fs.queue);
        a->exit_code = 1;
        loop_stop(loop);
    }
}

static void on_signal(loop_t *loop, int fd, uint32_t events, void *ud) {
    (void)events;
    app_t *a = ud;
    struct signalfd_siginfo si;
    while (read(fd, &si, sizeof si) > 0) {
    }
    a->exit_code = 0;
    loop_stop(loop);
}

/* ---- main -------------------------------------------------------------- */

static int app_setup(app_t *a, char *err, size_t errlen) {
    fleet_params_t p;
    fleet_params_default(&p, a->o.slots);
    if (fleet_params_validate(&p, err, errlen))
        return KGS_EINVAL;
    a->fleet = malloc(sizeof *a->fleet);
    if (!a->fleet)
        return kgs_seterr(err, errlen, KGS_ENOMEM, "out of memory for the fleet");
    fleet_init(a->fleet, &p);
    load_init(&a->load, a->o.seed, 0);
    if (load_validate(&a->load, err, errlen))
        return KGS_EINVAL;
    a->woke_s = -1;
    a->k.last_active = -1;
    a->k.last_value = NAN;
    a->k.last_gpu = NAN;
    a->exit_code = a->o.cycles ? 1 : 0; /* until the cycles are done */
    for (unsigned i = 0; i < FLEET_MAX_SLOTS; i++)
        a->slot_ctx[i] = (lfs_page_ctx_t){a, (int)i};
    a->gateway_ctx = (lfs_page_ctx_t){a, -1};
    int rc = loop_new(&a->loop, err, errlen);
    if (rc)
        return rc;
    a->t0 = loop_now(a->loop);
    loop_timer_init(&a->tick, on_tick, a);
    rc = probe_ports(a, err, errlen);
    if (rc)
        return rc;
    build_trigger(a);
    return 0;
}

static void app_teardown(app_t *a) {
    a->quitting = true;
    if (a->loop) {
        loop_timer_stop(a->loop, &a->tick);
        lfs_keda_stop(a);
        for (unsigned i = 0; i < FLEET_MAX_SLOTS; i++)
            http_server_free(a->slot_srv[i]);
        http_server_free(a->gateway_srv);
        loop_free(a->loop);
    }
    free(a->fleet);
}

int main(int argc, char **argv) {
    static app_t app; /* about 20 KiB: off the stack; main's own object */
    app_t *a = &app;
    char err[512];
    if (parse_args(argc, argv, &a->o, err, sizeof err) != 0) {
        fprintf(stderr, "llm-fleet-sim: %s\n", err);
        return 2;
    }
    if (a->o.help) {
        fputs(usage_text, stdout);
        return 0;
    }
    int rc = app_setup(a, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "llm-fleet-sim: %s\n", err);
        app_teardown(a);
        return rc == KGS_EIO ? 3 : 2; /* EIO: a port is taken */
    }
    if (lfs_keda_start(a, err, sizeof err) != 0) {
        fprintf(stderr, "llm-fleet-sim: the scaler %s: %s\n", a->o.scaler, err);
        app_teardown(a);
        return 1;
    }
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    int sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    loop_io_t *sig_io = sigfd >= 0 ? loop_io_add(a->loop, sigfd, EPOLLIN, on_signal, a) : NULL;
    print_banner(a);
    loop_timer_start(a->loop, &a->tick, loop_now(a->loop));
    loop_run(a->loop);
    loop_io_remove(a->loop, sig_io);
    if (sigfd >= 0)
        close(sigfd);
    int code = a->exit_code;
    app_teardown(a);
    return code;
}
