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
        "         util 0.6/0.7/0.8 x drain 5/10/20 s x scale-down window 60/120/180/300 s and\n"
        "         the online ideal; recommends the fewest GPU-h within max(%.1f points, %.0f%%)\n"
        "         of the best share over the SLO; prints the figures and a ScaledObject snippet\n"
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
        "         --weights-s S (30)  --warm-pool N (0)\n"
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
    fprintf(txt, "(%zu simulations in %.1f s of CPU)\n", r.count + 1, cpu_s);
    if (json && recommend_json(json, &r, err, sizeof err)) {
        fprintf(stderr, "scalesim: %s\n", err);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "matrix"))
        return matrix_cli(argc - 2, argv + 2);
    trace_options_t to;
    trace_options_default(&to);
    sim_model_t m;
    sim_model_default(&m);
    sim_options_t so;
    sim_options_default(&so);
    const char *trace_path = NULL, *svg = NULL, *only = NULL, *csv = NULL, *json = NULL,
               *sweep = NULL, *synth = NULL, *format = "auto";
    double reps = 1, max_rep = 32, warm = 0, batch = m.batch, kv_block = m.kv_block;
    double floor_idle = 300;
    trace_synth_t syn;
    trace_synth_default(&syn, TRACE_SYN_POISSON);
    double syn_ctx = syn.ctx_tokens, syn_gen = syn.gen_tokens, seed = 1;
    double syn_rate = -1, syn_peak = -1, syn_dur = -1, syn_on = -1, syn_off = -1, syn_period = -1;
    policy_knobs_t kn;
    policy_knobs_default(&kn);
    double alpha = kn.alpha, beta = kn.beta, tq = 0, tr = 0, tk = 0;
    /* `scalesim recommend ...`: the same trace, model and run flags */
    bool rec = argc > 1 && !strcmp(argv[1], "recommend");
    double cold_start = -1;
    for (int i = rec ? 2 : 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--trace"))
            trace_path = v;
        else if (!strcmp(a, "--svg"))
            svg = v;
        else if (!strcmp(a, "--csv"))
            csv = v;
        else if (!strcmp(a, "--only"))
            only = v;
        else if (!strcmp(a, "--json"))
            json = v;
        else if (!strcmp(a, "--sweep"))
            sweep = v;
        else if (!strcmp(a, "--format"))
            format = v;
        else if (!strcmp(a, "--synthetic"))
            synth = v;
        else if (!strcmp(a, "--syn-rate"))
            rc = num(a, v, 0, 1e5, &syn_rate);
        else if (!strcmp(a, "--syn-peak"))
            rc = num(a, v, 1e-6, 1e5, &syn_peak);
        else if (!strcmp(a, "--syn-duration"))
            rc = num(a, v, 1, 1e7, &syn_dur);
        else if (!strcmp(a, "--syn-on"))
            rc = num(a, v, 1e-3, 1e7, &syn_on);
        else if (!strcmp(a, "--syn-off"))
            rc = num(a, v, 0, 1e7, &syn_off);
        else if (!strcmp(a, "--syn-period"))
            rc = num(a, v, 1, 1e7, &syn_period);
        else if (!strcmp(a, "--syn-ctx"))
            rc = num(a, v, 1, 1e6, &syn_ctx);
        else if (!strcmp(a, "--syn-gen"))
            rc = num(a, v, 1, 1e6, &syn_gen);
        else if (!strcmp(a, "--seed"))
            rc = num(a, v, 0, 1e15, &seed);
        else if (!strcmp(a, "--kv-block"))
            rc = num(a, v, 1, 1024, &kv_block);
        else if (!strcmp(a, "--cold-start"))
            rc = num(a, v, RECOMMEND_COLD_START_MIN_S, RECOMMEND_COLD_START_MAX_S, &cold_start);
        else if (!strcmp(a, "--floor-idle"))
            rc = num(a, v, 1, 1e7, &floor_idle);
        else if (!strcmp(a, "--ideal-util"))
            rc = num(a, v, 0.01, 1, &kn.ideal_util);
        else if (!strcmp(a, "--ideal-drain"))
            rc = num(a, v, 1, 86400, &kn.ideal_drain_s);
        else if (!strcmp(a, "--ideal-hold"))
            rc = num(a, v, 0, 86400, &kn.ideal_hold_s);
        else if (!strcmp(a, "--scale"))
            rc = num(a, v, 1e-3, 1e3, &to.time_scale);
        else if (!strcmp(a, "--reps"))
            rc = num(a, v, 1, 100, &reps);
        else if (!strcmp(a, "--gap"))
            rc = num(a, v, 0, 86400, &to.gap_s);
        else if (!strcmp(a, "--ramp"))
            rc = num(a, v, 0, 86400, &to.ramp_s);
        else if (!strcmp(a, "--limit"))
            rc = num(a, v, 0, 1e7, &to.limit_s);
        else if (!strcmp(a, "--prefill"))
            rc = num(a, v, 1, 1e7, &m.prefill_tok_s);
        else if (!strcmp(a, "--decode"))
            rc = num(a, v, 1, 1e7, &m.decode_tok_s);
        else if (!strcmp(a, "--seq-decode"))
            rc = num(a, v, 1, 1e6, &m.decode_seq_tok_s);
        else if (!strcmp(a, "--batch"))
            rc = num(a, v, 1, 1024, &batch);
        else if (!strcmp(a, "--kv"))
            rc = num(a, v, 1, 1e9, &m.kv_tokens);
        else if (!strcmp(a, "--node-s"))
            rc = num(a, v, 0, 86400, &m.node_s);
        else if (!strcmp(a, "--image-s"))
            rc = num(a, v, 0, 86400, &m.image_s);
        else if (!strcmp(a, "--weights-s"))
            rc = num(a, v, 0, 86400, &m.weights_s);
        else if (!strcmp(a, "--warm-pool"))
            rc = num(a, v, 0, 64, &warm);
        else if (!strcmp(a, "--max-replicas"))
            rc = num(a, v, 1, 256, &max_rep);
        else if (!strcmp(a, "--slo"))
            rc = num(a, v, 0, 3600, &so.slo_wait_s);
        else if (!strcmp(a, "--ttft-slo"))
            rc = num(a, v, 0.001, 3600, &so.ttft_slo_s);
        else if (!strcmp(a, "--tpot-slo"))
            rc = num(a, v, 0.0001, 60, &so.tpot_slo_s);
        else if (!strcmp(a, "--ttft-seen")) {
            if (v && !strcmp(v, "dispatch"))
                so.ttft_seen = SIM_TTFT_SEEN_DISPATCH;
            else if (v && !strcmp(v, "arrival"))
                so.ttft_seen = SIM_TTFT_SEEN_ARRIVAL;
            else {
                fprintf(stderr, "scalesim: --ttft-seen %s: expected dispatch or arrival\n",
                        v ? v : "(none)");
                return 2;
            }
        } else if (!strcmp(a, "--dt"))
            rc = num(a, v, 0.01, 1, &so.dt_s);
        else if (!strcmp(a, "--tail"))
            rc = num(a, v, 0, 86400, &so.tail_s);
        else if (!strcmp(a, "--alpha"))
            rc = num(a, v, 1e-6, 1, &alpha);
        else if (!strcmp(a, "--beta"))
            rc = num(a, v, 1e-6, 1, &beta);
        else if (!strcmp(a, "--target-queue"))
            rc = num(a, v, 0.001, 1e6, &tq);
        else if (!strcmp(a, "--target-running"))
            rc = num(a, v, 0.001, 1e6, &tr);
        else if (!strcmp(a, "--target-kv"))
            rc = num(a, v, 0.001, 1e6, &tk);
        else {
            fprintf(stderr, "scalesim: unknown argument %s\n", a);
            usage(stderr);
            return 2;
        }
        if (rc)
            return 2;
        if (!v) {
            fprintf(stderr, "scalesim: %s needs a value\n", a);
            return 2;
        }
        i++;
    }
    if (!rec && cold_start >= 0) {
        fprintf(stderr, "scalesim: --cold-start is a flag of scalesim recommend\n");
        return 2;
    }
    if (rec && cold_start < 0) {
        fprintf(stderr,
                "scalesim recommend: --cold-start S is required: seconds from pod "
                "creation to Ready, %d..%d\n",
                RECOMMEND_COLD_START_MIN_S, RECOMMEND_COLD_START_MAX_S);
        return 2;
    }
    if (rec && (svg || csv || sweep || only)) {
        fprintf(stderr,
                "scalesim recommend: --%s does not apply (recommend writes its text and "
                "--json only)\n",
                svg     ? "svg"
                : csv   ? "csv"
                : sweep ? "sweep"
                        : "only");
        return 2;
    }
    if (!trace_path == !synth) {
        fprintf(stderr, "scalesim: give one of --trace and --synthetic\n");
        usage(stderr);
        return 2;
    }
    trace_format_t fmt = TRACE_AUTO;
    if (!strcmp(format, "csv"))
        fmt = TRACE_CSV;
    else if (!strcmp(format, "jsonl"))
        fmt = TRACE_JSONL;
    else if (strcmp(format, "auto")) {
        fprintf(stderr, "scalesim: --format %s: expected auto, csv or jsonl\n", format);
        return 2;
    }
    to.repetitions = (unsigned)reps;
    m.batch = (unsigned)batch;
    m.kv_block = (unsigned)kv_block;
    m.warm_pool = (unsigned)warm;

    char err[512];
    trace_t t;
    if (synth) {
        int kind = trace_synth_kind_parse(synth);
        if (kind < 0) {
            fprintf(stderr, "scalesim: --synthetic %s: expected poisson, onoff or diurnal\n",
                    synth);
            return 2;
        }
        trace_synth_default(&syn, (trace_synth_kind_t)kind);
        if (syn_rate >= 0)
            syn.rate = syn_rate;
        if (syn_peak > 0)
            syn.peak_rate = syn_peak;
        if (syn_dur > 0)
            syn.duration_s = syn_dur;
        if (syn_on > 0)
            syn.on_s = syn_on;
        if (syn_off >= 0)
            syn.off_s = syn_off;
        if (syn_period > 0)
            syn.period_s = syn_period;
        syn.ctx_tokens = (unsigned)syn_ctx;
        syn.gen_tokens = (unsigned)syn_gen;
        syn.seed = (unsigned long long)seed;
        if (trace_synthesize(&syn, &to, &t, err, sizeof err)) {
            fprintf(stderr, "scalesim: %s\n", err);
            return 1;
        }
    } else if (trace_load(trace_path, fmt, &to, &t, err, sizeof err)) {
        fprintf(stderr, "scalesim: %s\n", err);
        return 1;
    }
    sim_policy_t all[POLICY_COUNT], pol[POLICY_COUNT];
    kn.max_replicas = (int)max_rep;
    kn.alpha = alpha;
    kn.beta = beta;
    if (tq > 0)
        snprintf(kn.target_queue, sizeof kn.target_queue, "%g", tq);
    if (tr > 0)
        snprintf(kn.target_running, sizeof kn.target_running, "%g", tr);
    if (tk > 0)
        snprintf(kn.target_kv, sizeof kn.target_kv, "%g", tk);
    if (rec) {
        int st = recommend_cli(&t, &m, &so, &kn, cold_start, floor_idle, json);
        trace_deinit(&t);
        return st;
    }
    kn.ttft_target_s = sim_ttft_objective_s(&m, &so);
    kn.tpot_target_s = sim_tpot_objective_s(&m, &so);
    size_t n = policies_default(all, &m, &kn), k = 0;
    /* the table's order: the latency policies beside ours, the yardsticks last */
    for (const char *id = "abcdeoslif"; *id; id++)
        for (size_t i = 0; i < n; i++)
            if (all[i].id == *id && (!only || strchr(only, all[i].id)))
                pol[k++] = all[i];
    /* with --json - the JSON owns stdout: the text goes to stderr */
    FILE *txt = json && !strcmp(json, "-") ? stderr : stdout;
    sim_result_t res[POLICY_COUNT];
    memset(res, 0, sizeof res);
    int status = 0;
    fprintf(txt,
            "trace: %zu requests (%zu per repetition x %u), last arrival at %.0f s; "
            "simulated %.0f s\n",
            t.count, t.source_count, to.repetitions, t.end_s, sim_end_s(&t, &so));
    for (size_t i = 0; i < k; i++)
        if (sim_run(&t, &m, &pol[i], &so, &res[i], err, sizeof err)) {
            fprintf(stderr, "scalesim: %s\n", err);
            status = 1;
            k = i;
            break;
        }
    report_frontier_t *fr = NULL;
    size_t nfr = 0;
    if (status == 0 && sweep) {
        fr = calloc(k, sizeof *fr);
        policy_variant_t *var = malloc(POLICY_MAX_VARIANTS * sizeof *var);
        if (!fr || !var) {
            fprintf(stderr, "scalesim: out of memory\n");
            status = 1;
        }
        for (size_t i = 0; status == 0 && i < k; i++) {
            size_t nv = policy_variants(&pol[i], var, POLICY_MAX_VARIANTS);
            if (nv == 0)
                continue;
            report_frontier_t *f = &fr[nfr++];
            f->policy = &pol[i];
            for (size_t j = 0; j < nv && f->count < sizeof f->points / sizeof *f->points; j++) {
                sim_result_t vr;
                if (sim_run(&t, &m, &var[j].p, &so, &vr, err, sizeof err)) {
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
    }
    size_t floor_n = sim_floor(&t, &m, so.slo_wait_s, floor_idle);
    if (status == 0) {
        report_table(txt, pol, res, k, so.slo_wait_s);
        fprintf(txt,
                "floor: %zu requests (%.2f%%) arrive within one cold start - the SLO of a wake "
                "(the first arrival, or one after >= %.0f s idle): no online policy at zero serves "
                "them within %.0f s\n",
                floor_n, t.count ? 100.0 * (double)floor_n / (double)t.count : 0, floor_idle,
                so.slo_wait_s);
        const report_frontier_t *ideal = NULL;
        for (size_t i = 0; i < nfr; i++)
            if (fr[i].policy->kind == SIM_POLICY_IDEAL)
                ideal = &fr[i];
        if (nfr) {
            report_frontier_table(txt, fr, nfr);
            if (ideal)
                for (size_t i = 0; i < k; i++) {
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
            snprintf(title, sizeof title, "scalesim frontiers: %zu requests, SLO %.0f s", t.count,
                     so.slo_wait_s);
            if (report_frontier_svg(sweep, fr, nfr, t.count ? (double)floor_n / (double)t.count : 0,
                                    title, err, sizeof err)) {
                fprintf(stderr, "scalesim: %s\n", err);
                status = 1;
            } else {
                fprintf(txt, "frontier plot: %s\n", sweep);
            }
        }
        if (json && report_json(json, pol, res, k, floor_n, t.count, fr, nfr, err, sizeof err)) {
            fprintf(stderr, "scalesim: %s\n", err);
            status = 1;
        }
    }
    if (status == 0) {
        if (svg || csv) {
            float *demand;
            size_t pts;
            if (sim_demand_timeline(&t, &m, so.timeline_step_s, sim_end_s(&t, &so), 60, &demand,
                                    &pts)) {
                fprintf(stderr, "scalesim: out of memory\n");
                status = 1;
            } else {
                char title[256];
                snprintf(title, sizeof title,
                         "scalesim: %zu requests, time scale %.1f, %u repetitions, %.0f s ramps, "
                         "%.0f s gaps",
                         t.count, to.time_scale, to.repetitions, to.ramp_s, to.gap_s);
                if (csv && report_csv(csv, pol, res, k, demand, pts, so.timeline_step_s, err,
                                      sizeof err)) {
                    fprintf(stderr, "scalesim: %s\n", err);
                    status = 1;
                }
                if (!svg) {
                } else if (report_svg(svg, pol, res, k, demand, pts, so.timeline_step_s, title, err,
                                      sizeof err)) {
                    fprintf(stderr, "scalesim: %s\n", err);
                    status = 1;
                } else {
                    fprintf(txt, "plot: %s\n", svg);
                }
                free(demand);
            }
        }
    }
    for (size_t i = 0; i < k; i++)
        sim_result_deinit(&res[i]);
    free(fr);
    trace_deinit(&t);
    return status;
}
