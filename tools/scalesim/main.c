/*
 * main.c - scalesim: replays a request trace through policies (a)..(f) and
 * prints the table; --svg writes the replicas-over-time plot.
 *
 *   scalesim --trace FILE [--scale X] [--reps N] [--gap S] [--limit S]
 *            [--svg PATH] [--only LETTERS] [model and option flags]
 *
 * Exit status: 0, 1 on a bad trace or argument, 2 on usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/forecast.h"
#include "policies.h"
#include "report.h"
#include "sim.h"
#include "trace.h"

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: scalesim --trace FILE [options]\n"
        "trace:   --scale X (replay X times faster, 1)  --reps N (1)  --gap S (idle s "
        "between reps, 0)\n"
        "         --limit S (first S s of the file only)  --ramp S (ramp each repetition up and\n"
        "         down over S s, deterministic thinning)\n"
        "model:   --prefill TOK/S (10000)  --decode TOK/S (2500)  --seq-decode TOK/S (100)\n"
        "         --batch N (64)  --kv TOKENS (100000)  --node-s S (60)  --image-s S (45)\n"
        "         --weights-s S (30)  --warm-pool N (0)\n"
        "run:     --max-replicas N (32)  --slo S (2)  --dt S (0.1)  --tail S (900)\n"
        "         --alpha A (%.2f)  --beta B (%.2f)  (forecast weights per second)\n"
        "         --target-queue N (4)  --target-running N (12)  --target-kv PCT (70): (d), (e)\n"
        "         --only LETTERS (e.g. def)  --svg PATH  --csv PATH (the timeline)\n",
        FORECAST_DEFAULT_ALPHA, FORECAST_DEFAULT_BETA);
}

static int num(const char *flag, const char *v, double lo, double hi, double *out) {
    char *end;
    double d = v ? strtod(v, &end) : 0;
    if (!v || *end || !(d >= lo && d <= hi)) {
        fprintf(stderr, "scalesim: %s needs a number in [%g, %g]\n", flag, lo, hi);
        return -1;
    }
    *out = d;
    return 0;
}

int main(int argc, char **argv) {
    trace_options_t to;
    trace_options_default(&to);
    sim_model_t m;
    sim_model_default(&m);
    sim_options_t so;
    sim_options_default(&so);
    const char *trace_path = NULL, *svg = NULL, *only = NULL, *csv = NULL;
    double reps = 1, max_rep = 32, warm = 0, batch = m.batch;
    policy_knobs_t kn;
    policy_knobs_default(&kn);
    double alpha = kn.alpha, beta = kn.beta, tq = 0, tr = 0, tk = 0;
    for (int i = 1; i < argc; i++) {
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
        else if (!strcmp(a, "--dt"))
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
    if (!trace_path) {
        usage(stderr);
        return 2;
    }
    to.repetitions = (unsigned)reps;
    m.batch = (unsigned)batch;
    m.warm_pool = (unsigned)warm;

    char err[512];
    trace_t t;
    if (trace_load(trace_path, &to, &t, err, sizeof err)) {
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
    size_t n = policies_default(all, &m, &kn), k = 0;
    for (size_t i = 0; i < n; i++)
        if (!only || strchr(only, all[i].id))
            pol[k++] = all[i];
    sim_result_t res[POLICY_COUNT];
    memset(res, 0, sizeof res);
    int status = 0;
    printf("trace: %zu requests (%zu per repetition x %u), last arrival at %.0f s; "
           "simulated %.0f s\n",
           t.count, t.source_count, to.repetitions, t.end_s, sim_end_s(&t, &so));
    for (size_t i = 0; i < k; i++)
        if (sim_run(&t, &m, &pol[i], &so, &res[i], err, sizeof err)) {
            fprintf(stderr, "scalesim: %s\n", err);
            status = 1;
            k = i;
            break;
        }
    if (status == 0) {
        report_table(stdout, pol, res, k, so.slo_wait_s);
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
                    printf("plot: %s\n", svg);
                }
                free(demand);
            }
        }
    }
    for (size_t i = 0; i < k; i++)
        sim_result_deinit(&res[i]);
    trace_deinit(&t);
    return status;
}
