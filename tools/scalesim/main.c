/*
 * main.c - scalesim: replays a request trace (or a synthetic one) through
 * the policies and prints the table and the floor; --svg writes the
 * replicas-over-time plot, --json the results, --sweep each policy's knob
 * sweep and Pareto frontier (table, SVG, and in the JSON).
 *
 *   scalesim (--trace FILE [--format auto|csv|jsonl] | --synthetic KIND)
 *            [--scale X] [--reps N] [--gap S] [--limit S] [--svg PATH]
 *            [--json PATH|-] [--sweep PATH] [--only LETTERS] [model flags]
 *   scalesim recommend (--trace FILE | --synthetic KIND) --cold-start S
 *            [--json PATH|-] [trace, model and run flags]
 *   scalesim matrix [--traces LIST] [--speeds LIST] [--cold LIST] [--kv LIST]
 *            [--policies LETTERS] [--json PATH|-] [--markdown PATH|-] (matrix_cli.c)
 *
 * recommend (recommend.h): the queueing model's ScaledObject settings for
 * that trace and cold start, chosen by simulation.
 *
 * Exit status: 0, 1 on a bad trace or argument, 2 on usage.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/err.h"
#include "core/forecast.h"
#include "matrix_cli.h"
#include "policies.h"
#include "recommend.h"
#include "report.h"
#include "sim.h"
#include "trace.h"

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: scalesim (--trace FILE | --synthetic poisson|onoff|diurnal) [options]\n"
        "       scalesim recommend (--trace FILE | --synthetic KIND) --cold-start S [--json "
        "PATH|-]\n"
        "                [trace, model and run options]\n"
        "       scalesim matrix [options]: the operating-point matrix (scalesim matrix --help)\n"
        "recommend: the queueing demand model's ScaledObject settings for this trace: cold\n"
        "         start S s (%d..%d: node, image and weights scaled to sum to S); simulates\n"
        "         util auto/0.7/0.8 x drain 5/10/20 s x scale-down window 30/60/120/300 s and\n"
        "         the online ideal; recommends the fewest GPU-h within max(%.1f points, %.0f%%)\n"
        "         of the best share over the SLO; prints the figures and a ScaledObject snippet,\n"
        "         then which stage to attack: the recommended setting with a warm pool of 1\n"
        "         and 2 nodes, the image or the weights stage halved, a 600 s node linger\n"
        "trace:   --format auto|csv|jsonl (auto: JSON Lines when it starts with '{')\n"
        "         --syn-rate R (5)  --syn-peak R (10, diurnal)  --syn-duration S (600)\n"
        "         --syn-on S (60)  --syn-off S (120)  --syn-period S (600)  --syn-ctx N (1000)\n"
        "         --syn-gen N (200)  --seed N (1)\n"
        "         --scale X (replay X times faster, 1)  --reps N (1)  --gap S (idle s "
        "between reps, 0)\n"
        "         --limit S (first S s of the file only)  --ramp S (ramp each repetition up and\n"
        "         down over S s, deterministic thinning)\n"
        "model:   --prefill TOK/S (10000)  --decode TOK/S (2500)  --seq-decode TOK/S (100)\n"
        "         --batch N (64)  --kv TOKENS (400000)  --kv-block N (16)  --node-s S (60)\n"
        "         --image-s S (45)\n"
        "         --weights-s S (30)  --warm-pool N (0)  --node-linger S (0: how long a node\n"
        "         stays, billed, after its pod leaves; a new pod then pays the weights only)\n"
        "run:     --max-replicas N (32)  --slo S (2)  --dt S (0.1)  --tail S (900)\n"
        "         --ttft-slo S (the --slo value)  --tpot-slo S (2 / --seq-decode: half the\n"
        "         speed alone)  objectives of the TTFT/TPOT ok columns and the slo policies'\n"
        "         targets; --ttft-seen dispatch|arrival (dispatch: the engine's TTFT histogram\n"
        "         counts from when the gateway sends the request; arrival: from its arrival)\n"
        "         --alpha A (%.2f)  --beta B (%.2f)  (forecast weights per second)\n"
        "         --target-queue N (4)  --target-running N (12)  --target-kv PCT (70): (d), (e)\n"
        "         --ideal-util U (0.5)  --ideal-drain S (10)  --ideal-hold S (60): (i)\n"
        "         --only LETTERS (of abcdeoslif)  --svg PATH  --csv PATH (the timeline)\n"
        "         --json PATH|-  --sweep PATH (sweep each policy's knob: frontier SVG)\n"
        "         --floor-idle S (300: idle time after which a wake counts for the floor)\n",
        RECOMMEND_COLD_START_MIN_S, RECOMMEND_COLD_START_MAX_S, 100 * RECOMMEND_TOL_ABS,
        100 * RECOMMEND_TOL_REL, FORECAST_DEFAULT_ALPHA, FORECAST_DEFAULT_BETA);
}

static int num(const char *flag, const char *v, double lo, double hi, double *out) {
    char *end;
    double d = v ? strtod(v, &end) : 0;
    if (!v || *end || !(d >= lo && d <= hi)) {
        fprintf(stderr, "scalesim: %s %s: needs a number in [%g, %g]\n", flag, v ? v : "(none)", lo,
                hi);
        return -1;
    }
    *out = d;
    return 0;
}

/* scalesim recommend, once the trace is read: the text (stdout, or stderr
 * when the JSON owns stdout) and the JSON. */
static int recommend_cli(const trace_t *t, sim_model_t *m, const sim_options_t *so,
                         const policy_knobs_t *kn, double cold_start_s, double floor_idle_s,
                         const char *json) {
    char err[512];
    if (recommend_cold_start_apply(m, cold_start_s, err, sizeof err)) {
        fprintf(stderr, "scalesim: %s\n", err);
        return 2;
    }
    FILE *txt = json && !strcmp(json, "-") ? stderr : stdout;
    recommend_t r;
    clock_t c0 = clock();
    if (recommend_run(t, m, so, kn, floor_idle_s, &r, err, sizeof err)) {
        fprintf(stderr, "scalesim: %s\n", err);
        return 1;
    }
    double cpu_s = (double)(clock() - c0) / CLOCKS_PER_SEC;
    recommend_print(txt, &r);
    fprintf(txt, "(%zu simulations in %.1f s of CPU)\n",
            r.count + 1 + (r.stage_count ? r.stage_count - 1 : 0), cpu_s);
    if (json && recommend_json(json, &r, err, sizeof err)) {
        fprintf(stderr, "scalesim: %s\n", err);
        return 1;
    }
    return 0;
}

/* Everything the command line sets. */
typedef struct {
    trace_options_t to;
    sim_model_t m;
    sim_options_t so;
    const char *trace_path, *svg, *only, *csv, *json, *sweep, *synth, *format;
    double reps, max_rep, warm, batch, kv_block, floor_idle;
    trace_synth_t syn;
    double syn_ctx, syn_gen, seed;
    double syn_rate, syn_peak, syn_dur, syn_on, syn_off, syn_period;
    policy_knobs_t kn;
    double alpha, beta, tq, tr, tk;
    bool rec; /* `scalesim recommend ...`: the same trace, model and run flags */
    double cold_start;
} cli_t;

static void cli_init(cli_t *c) {
    memset(c, 0, sizeof *c);
    trace_options_default(&c->to);
    sim_model_default(&c->m);
    sim_options_default(&c->so);
    c->format = "auto";
    c->reps = 1;
    c->max_rep = 32;
    c->batch = c->m.batch;
    c->kv_block = c->m.kv_block;
    c->floor_idle = 300;
    trace_synth_default(&c->syn, TRACE_SYN_POISSON);
    c->syn_ctx = c->syn.ctx_tokens;
    c->syn_gen = c->syn.gen_tokens;
    c->seed = 1;
    c->syn_rate = c->syn_peak = c->syn_dur = c->syn_on = c->syn_off = c->syn_period = -1;
    policy_knobs_default(&c->kn);
    c->alpha = c->kn.alpha;
    c->beta = c->kn.beta;
    c->cold_start = -1;
}

/* One flag and its value (NULL when none): 0 taken, -1 a bad value (said
 * on stderr), 1 not a flag of scalesim. */
static int parse_flag(cli_t *c, const char *a, const char *v) {
    const struct {
        const char *flag;
        const char **to;
    } strs[] = {{"--trace", &c->trace_path}, {"--svg", &c->svg},        {"--csv", &c->csv},
                {"--only", &c->only},        {"--json", &c->json},      {"--sweep", &c->sweep},
                {"--format", &c->format},    {"--synthetic", &c->synth}};
    for (size_t i = 0; i < sizeof strs / sizeof *strs; i++)
        if (!strcmp(a, strs[i].flag)) {
            *strs[i].to = v;
            return 0;
        }
    const struct {
        const char *flag;
        double lo, hi;
        double *to;
    } nums[] = {
        {"--syn-rate", 0, 1e5, &c->syn_rate},
        {"--syn-peak", 1e-6, 1e5, &c->syn_peak},
        {"--syn-duration", 1, 1e7, &c->syn_dur},
        {"--syn-on", 1e-3, 1e7, &c->syn_on},
        {"--syn-off", 0, 1e7, &c->syn_off},
        {"--syn-period", 1, 1e7, &c->syn_period},
        {"--syn-ctx", 1, 1e6, &c->syn_ctx},
        {"--syn-gen", 1, 1e6, &c->syn_gen},
        {"--seed", 0, 1e15, &c->seed},
        {"--kv-block", 1, 1024, &c->kv_block},
        {"--cold-start", RECOMMEND_COLD_START_MIN_S, RECOMMEND_COLD_START_MAX_S, &c->cold_start},
        {"--floor-idle", 1, 1e7, &c->floor_idle},
        {"--ideal-util", 0.01, 1, &c->kn.ideal_util},
        {"--ideal-drain", 1, 86400, &c->kn.ideal_drain_s},
        {"--ideal-hold", 0, 86400, &c->kn.ideal_hold_s},
        {"--scale", 1e-3, 1e3, &c->to.time_scale},
        {"--reps", 1, 100, &c->reps},
        {"--gap", 0, 86400, &c->to.gap_s},
        {"--ramp", 0, 86400, &c->to.ramp_s},
        {"--limit", 0, 1e7, &c->to.limit_s},
        {"--prefill", 1, 1e7, &c->m.prefill_tok_s},
        {"--decode", 1, 1e7, &c->m.decode_tok_s},
        {"--seq-decode", 1, 1e6, &c->m.decode_seq_tok_s},
        {"--batch", 1, 1024, &c->batch},
        {"--kv", 1, 1e9, &c->m.kv_tokens},
        {"--node-s", 0, 86400, &c->m.node_s},
        {"--image-s", 0, 86400, &c->m.image_s},
        {"--weights-s", 0, 86400, &c->m.weights_s},
        {"--warm-pool", 0, 64, &c->warm},
        {"--node-linger", 0, 86400, &c->m.node_linger_s},
        {"--max-replicas", 1, 256, &c->max_rep},
        {"--slo", 0, 3600, &c->so.slo_wait_s},
        {"--ttft-slo", 0.001, 3600, &c->so.ttft_slo_s},
        {"--tpot-slo", 0.0001, 60, &c->so.tpot_slo_s},
        {"--dt", 0.01, 1, &c->so.dt_s},
        {"--tail", 0, 86400, &c->so.tail_s},
        {"--alpha", 1e-6, 1, &c->alpha},
        {"--beta", 1e-6, 1, &c->beta},
        {"--target-queue", 0.001, 1e6, &c->tq},
        {"--target-running", 0.001, 1e6, &c->tr},
        {"--target-kv", 0.001, 1e6, &c->tk},
    };
    for (size_t i = 0; i < sizeof nums / sizeof *nums; i++)
        if (!strcmp(a, nums[i].flag))
            return num(a, v, nums[i].lo, nums[i].hi, nums[i].to);
    if (strcmp(a, "--ttft-seen"))
        return 1;
    if (v && !strcmp(v, "dispatch"))
        c->so.ttft_seen = SIM_TTFT_SEEN_DISPATCH;
    else if (v && !strcmp(v, "arrival"))
        c->so.ttft_seen = SIM_TTFT_SEEN_ARRIVAL;
    else {
        fprintf(stderr, "scalesim: --ttft-seen %s: expected dispatch or arrival\n",
                v ? v : "(none)");
        return -1;
    }
    return 0;
}

/* The flags that only make sense together, checked once all are read. */
static int check_args(cli_t *c) {
    if (!c->rec && c->cold_start >= 0) {
        fprintf(stderr, "scalesim: --cold-start is a flag of scalesim recommend\n");
        return -1;
    }
    if (c->rec && c->cold_start < 0) {
        fprintf(stderr,
                "scalesim recommend: --cold-start S is required: seconds from pod "
                "creation to Ready, %d..%d\n",
                RECOMMEND_COLD_START_MIN_S, RECOMMEND_COLD_START_MAX_S);
        return -1;
    }
    if (c->rec && (c->svg || c->csv || c->sweep || c->only)) {
        fprintf(stderr,
                "scalesim recommend: --%s does not apply (recommend writes its text and "
                "--json only)\n",
                c->svg     ? "svg"
                : c->csv   ? "csv"
                : c->sweep ? "sweep"
                           : "only");
        return -1;
    }
    if (!c->trace_path == !c->synth) {
        fprintf(stderr, "scalesim: give one of --trace and --synthetic\n");
        usage(stderr);
        return -1;
    }
    if (strcmp(c->format, "auto") && strcmp(c->format, "csv") && strcmp(c->format, "jsonl")) {
        fprintf(stderr, "scalesim: --format %s: expected auto, csv or jsonl\n", c->format);
        return -1;
    }
    return 0;
}

/* The command line into *c: 0, 1 after --help, -1 on a usage error (said). */
static int parse_args(int argc, char **argv, cli_t *c) {
    for (int i = c->rec ? 2 : 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 1;
        }
        int rc = parse_flag(c, a, v);
        if (rc > 0) {
            fprintf(stderr, "scalesim: unknown argument %s\n", a);
            usage(stderr);
            return -1;
        }
        if (rc < 0)
            return -1;
        if (!v) {
            fprintf(stderr, "scalesim: %s needs a value\n", a);
            return -1;
        }
        i++;
    }
    if (check_args(c))
        return -1;
    c->to.repetitions = (unsigned)c->reps;
    c->m.batch = (unsigned)c->batch;
    c->m.kv_block = (unsigned)c->kv_block;
    c->m.warm_pool = (unsigned)c->warm;
    c->kn.max_replicas = (int)c->max_rep;
    c->kn.alpha = c->alpha;
    c->kn.beta = c->beta;
    if (c->tq > 0)
        snprintf(c->kn.target_queue, sizeof c->kn.target_queue, "%g", c->tq);
    if (c->tr > 0)
        snprintf(c->kn.target_running, sizeof c->kn.target_running, "%g", c->tr);
    if (c->tk > 0)
        snprintf(c->kn.target_kv, sizeof c->kn.target_kv, "%g", c->tk);
    return 0;
}

/* The trace: read, or generated. Returns the exit status (0 when *t holds it). */
static int load_input(cli_t *c, trace_t *t) {
    char err[512];
    trace_format_t fmt = !strcmp(c->format, "csv")     ? TRACE_CSV
                         : !strcmp(c->format, "jsonl") ? TRACE_JSONL
                                                       : TRACE_AUTO;
    if (!c->synth) {
        if (trace_load(c->trace_path, fmt, &c->to, t, err, sizeof err)) {
            fprintf(stderr, "scalesim: %s\n", err);
            return 1;
        }
        return 0;
    }
    int kind = trace_synth_kind_parse(c->synth);
    if (kind < 0) {
        fprintf(stderr, "scalesim: --synthetic %s: expected poisson, onoff or diurnal\n", c->synth);
        return 2;
    }
    trace_synth_t *g = &c->syn;
    trace_synth_default(g, (trace_synth_kind_t)kind);
    if (c->syn_rate >= 0)
        g->rate = c->syn_rate;
    if (c->syn_peak > 0)
        g->peak_rate = c->syn_peak;
    if (c->syn_dur > 0)
        g->duration_s = c->syn_dur;
    if (c->syn_on > 0)
        g->on_s = c->syn_on;
    if (c->syn_off >= 0)
        g->off_s = c->syn_off;
    if (c->syn_period > 0)
        g->period_s = c->syn_period;
    g->ctx_tokens = (unsigned)c->syn_ctx;
    g->gen_tokens = (unsigned)c->syn_gen;
    g->seed = (unsigned long long)c->seed;
    if (trace_synthesize(g, &c->to, t, err, sizeof err)) {
        fprintf(stderr, "scalesim: %s\n", err);
        return 1;
    }
    return 0;
}

/* --sweep: each policy's knob sweep and Pareto frontier into *fr (returned,
 * free()), *nfr of them. Returns 0 or 1 (said). */
static int sweep_all(const trace_t *t, const cli_t *c, const sim_policy_t *pol, size_t k,
                     report_frontier_t **frp, size_t *nfr) {
    char err[512];
    report_frontier_t *fr = calloc(k ? k : 1, sizeof *fr);
    policy_variant_t *var = malloc(POLICY_MAX_VARIANTS * sizeof *var);
    *frp = fr;
    *nfr = 0;
    if (!fr || !var) {
        fprintf(stderr, "scalesim: out of memory\n");
        free(var);
        return 1;
    }
    int status = 0;
    for (size_t i = 0; status == 0 && i < k; i++) {
        size_t nv = policy_variants(&pol[i], var, POLICY_MAX_VARIANTS);
        if (nv == 0)
            continue;
        report_frontier_t *f = &fr[(*nfr)++];
        f->policy = &pol[i];
        for (size_t j = 0; j < nv && f->count < sizeof f->points / sizeof *f->points; j++) {
            sim_result_t vr;
            if (sim_run(t, &c->m, &var[j].p, &c->so, &vr, err, sizeof err)) {
                fprintf(stderr, "scalesim: %s (%s)\n", err, var[j].knob);
                status = 1;
                break;
            }
            report_point_t *x = &f->points[f->count++];
            x->gpu_hours = vr.gpu_hours;
            x->over_slo = vr.slo_miss_share;
            x->warm_over_slo = vr.warm_miss_share;
            snprintf(x->knob, sizeof x->knob, "%s", var[j].knob);
            sim_result_deinit(&vr);
        }
        report_pareto(f);
    }
    free(var);
    return status;
}

/* The frontiers' table, each policy against the online ideal's, their SVG. */
static int print_frontiers(FILE *txt, const cli_t *c, const trace_t *t, const sim_policy_t *pol,
                           const sim_result_t *res, size_t k, const report_frontier_t *fr,
                           size_t nfr, size_t floor_n) {
    char err[512];
    const report_frontier_t *ideal = NULL;
    for (size_t i = 0; i < nfr; i++)
        if (fr[i].policy->kind == SIM_POLICY_IDEAL)
            ideal = &fr[i];
    report_frontier_table(txt, fr, nfr);
    for (size_t i = 0; ideal && i < k; i++) {
        double g = report_frontier_at(ideal, res[i].slo_miss_share);
        if (g > 0)
            fprintf(txt,
                    "(%c) %.2f GPU-h at %.2f%% > SLO; the online ideal's frontier at "
                    "that share: %.2f GPU-h (ratio %.2f)\n",
                    pol[i].id, res[i].gpu_hours, 100 * res[i].slo_miss_share, g,
                    res[i].gpu_hours / g);
        else
            fprintf(txt,
                    "(%c) %.2f GPU-h at %.2f%% > SLO; no online-ideal setting is that "
                    "good\n",
                    pol[i].id, res[i].gpu_hours, 100 * res[i].slo_miss_share);
    }
    char title[256];
    snprintf(title, sizeof title, "scalesim frontiers: %zu requests, SLO %.0f s", t->count,
             c->so.slo_wait_s);
    if (report_frontier_svg(c->sweep, fr, nfr, t->count ? (double)floor_n / (double)t->count : 0,
                            title, err, sizeof err)) {
        fprintf(stderr, "scalesim: %s\n", err);
        return 1;
    }
    fprintf(txt, "frontier plot: %s\n", c->sweep);
    return 0;
}

/* --svg and --csv: the replicas over time against the demand. */
static int write_plots(FILE *txt, const cli_t *c, const trace_t *t, const sim_policy_t *pol,
                       const sim_result_t *res, size_t k) {
    char err[512];
    float *demand;
    size_t pts;
    if (sim_demand_timeline(t, &c->m, c->so.timeline_step_s, sim_end_s(t, &c->so), 60, &demand,
                            &pts)) {
        fprintf(stderr, "scalesim: out of memory\n");
        return 1;
    }
    int status = 0;
    char title[256];
    snprintf(title, sizeof title,
             "scalesim: %zu requests, time scale %.1f, %u repetitions, %.0f s ramps, %.0f s gaps",
             t->count, c->to.time_scale, c->to.repetitions, c->to.ramp_s, c->to.gap_s);
    if (c->csv &&
        report_csv(c->csv, pol, res, k, demand, pts, c->so.timeline_step_s, err, sizeof err)) {
        fprintf(stderr, "scalesim: %s\n", err);
        status = 1;
    }
    if (!c->svg) {
    } else if (report_svg(c->svg, pol, res, k, demand, pts, c->so.timeline_step_s, title, err,
                          sizeof err)) {
        fprintf(stderr, "scalesim: %s\n", err);
        status = 1;
    } else {
        fprintf(txt, "plot: %s\n", c->svg);
    }
    free(demand);
    return status;
}

/* The policy table run: every policy (or --only's), the sweep, the outputs. */
static int run_policies(cli_t *c, const trace_t *t) {
    char err[512];
    c->kn.ttft_target_s = sim_ttft_objective_s(&c->m, &c->so);
    c->kn.tpot_target_s = sim_tpot_objective_s(&c->m, &c->so);
    sim_policy_t all[POLICY_COUNT], pol[POLICY_COUNT];
    size_t n = policies_default(all, &c->m, &c->kn), k = 0;
    /* the table's order: the latency policies beside ours, the yardsticks last */
    for (const char *id = "abcdeoslif"; *id; id++)
        for (size_t i = 0; i < n; i++)
            if (all[i].id == *id && (!c->only || strchr(c->only, all[i].id)))
                pol[k++] = all[i];
    /* with --json - the JSON owns stdout: the text goes to stderr */
    FILE *txt = c->json && !strcmp(c->json, "-") ? stderr : stdout;
    sim_result_t res[POLICY_COUNT];
    memset(res, 0, sizeof res);
    int status = 0;
    fprintf(txt,
            "trace: %zu requests (%zu per repetition x %u), last arrival at %.0f s; "
            "simulated %.0f s\n",
            t->count, t->source_count, c->to.repetitions, t->end_s, sim_end_s(t, &c->so));
    for (size_t i = 0; i < k; i++)
        if (sim_run(t, &c->m, &pol[i], &c->so, &res[i], err, sizeof err)) {
            fprintf(stderr, "scalesim: %s\n", err);
            status = 1;
            k = i;
            break;
        }
    report_frontier_t *fr = NULL;
    size_t nfr = 0;
    if (status == 0 && c->sweep)
        status = sweep_all(t, c, pol, k, &fr, &nfr);
    size_t floor_n = sim_floor(t, &c->m, c->so.slo_wait_s, c->floor_idle);
    if (status == 0) {
        report_table(txt, pol, res, k, c->so.slo_wait_s);
        fprintf(txt,
                "floor: %zu requests (%.2f%%) arrive within one cold start - the SLO of a wake "
                "(the first arrival, or one after >= %.0f s idle): no online policy at zero serves "
                "them within %.0f s\n",
                floor_n, t->count ? 100.0 * (double)floor_n / (double)t->count : 0, c->floor_idle,
                c->so.slo_wait_s);
        if (nfr)
            status = print_frontiers(txt, c, t, pol, res, k, fr, nfr, floor_n);
        if (c->json &&
            report_json(c->json, pol, res, k, floor_n, t->count, fr, nfr, err, sizeof err)) {
            fprintf(stderr, "scalesim: %s\n", err);
            status = 1;
        }
    }
    if (status == 0 && (c->svg || c->csv))
        status = write_plots(txt, c, t, pol, res, k);
    for (size_t i = 0; i < k; i++)
        sim_result_deinit(&res[i]);
    free(fr);
    return status;
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "matrix"))
        return matrix_cli(argc - 2, argv + 2);
    cli_t c;
    cli_init(&c);
    c.rec = argc > 1 && !strcmp(argv[1], "recommend");
    int st = parse_args(argc, argv, &c);
    if (st)
        return st > 0 ? 0 : 2;
    trace_t t;
    st = load_input(&c, &t);
    if (st)
        return st;
    if (c.rec)
        st = recommend_cli(&t, &c.m, &c.so, &c.kn, c.cold_start, c.floor_idle, c.json);
    else
        st = run_policies(&c, &t);
    trace_deinit(&t);
    return st;
}
