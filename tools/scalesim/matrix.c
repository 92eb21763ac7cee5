/*
 * matrix.c - see matrix.h.
 *
 * Why these operating points: the controller is bought to hold on traffic it
 * was not tuned on, so every trace is replayed slower and faster than the
 * bench does (the same requests, their arrival times divided by the speed;
 * for the generators, every rate multiplied), with cold starts from a warm
 * image (60 s) to a large model on a new node (300 s), and a KV cache that
 * does or does not hold a long-context batch. The model is the bench's
 * (sim_model_default: Llama-3.1-8B on one H100), cold starts scaled in its
 * proportions as `scalesim recommend` does, at most 32 replicas, SLO 2 s.
 *
 * Why the online ideal's frontier and not one setting of it: one setting
 * buys a share over the SLO at some price; a policy that picks another share
 * is compared with what the ideal pays at that share (linear between its
 * swept points), so a cheap policy that misses more is not flattered and a
 * generous one is not punished for spending on a share the ideal's default
 * setting never reaches.
 *
 * Why the ramps shrink on fast replays: a 300 s ramp at each end of a pass
 * that lasts 255 s (Mooncake at x4) would keep under half of its requests,
 * and "x4" would carry less load than x2. Ramps of 40 % of a pass where
 * that is shorter than 300 s (a pass under 750 s) keep the same requests at
 * every such speed and leave the middle fifth of a pass at full rate; the
 * bench's own replays (conv x4, Mooncake x1) keep their 300 s ramps.
 */
#include "matrix.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "recommend.h"
#include "trace.h"

static const char *const trace_names[MATRIX_TRACES] = {"conv", "mooncake", "poisson", "onoff",
                                                       "diurnal"};

const char *matrix_trace_name(matrix_trace_t t) {
    return t < MATRIX_TRACES ? trace_names[t] : "?";
}

int matrix_trace_parse(const char *name) {
    for (int i = 0; i < MATRIX_TRACES; i++)
        if (!strcmp(name, trace_names[i]))
            return i;
    return -1;
}

void matrix_config_default(matrix_config_t *c) {
    memset(c, 0, sizeof *c);
    for (int i = 0; i < MATRIX_TRACES; i++)
        c->traces[i] = true;
    static const double speeds[] = {1, 2, 4}, cold[] = {60, 135, 300}, kv[] = {100000, 400000};
    memcpy(c->speeds, speeds, sizeof speeds);
    c->nspeeds = 3;
    memcpy(c->cold_s, cold, sizeof cold);
    c->ncold = 3;
    memcpy(c->kv_tokens, kv, sizeof kv);
    c->nkv = 2;
    snprintf(c->policies, sizeof c->policies, "od");
    c->conv_path = "../shared/data/azure-llm-inference-2023/AzureLLMInferenceTrace_conv.csv";
    c->mooncake_path = "../shared/data/mooncake-fast25/synthetic_trace.jsonl";
    c->syn_duration_s = 0;
}

/* The generators at x1 (bench/README.md's synthetic table: 1000 prompt and
 * 200 output tokens a request on average, seed 1): Poisson at 8 req/s; 60 s
 * bursts at 8 req/s with 120 s pauses; a 600 s cycle from 1 to 20 req/s. A
 * speed multiplies every rate. */
static void synth_of(const matrix_config_t *c, matrix_trace_t t, double speed, trace_synth_t *g) {
    trace_synth_kind_t kind = t == MATRIX_POISSON ? TRACE_SYN_POISSON
                              : t == MATRIX_ONOFF ? TRACE_SYN_ONOFF
                                                  : TRACE_SYN_DIURNAL;
    trace_synth_default(g, kind);
    if (kind == TRACE_SYN_DIURNAL) {
        g->peak_rate = 20;
        g->duration_s = 3600;
    } else {
        g->rate = 8;
        g->duration_s = 1800;
    }
    g->rate *= speed;
    g->peak_rate *= speed;
    if (c->syn_duration_s > 0)
        g->duration_s = c->syn_duration_s;
}

/* The ramp of a pass that lasts pass_s (after the speed). */
static double ramp_of(double pass_s) {
    double r = MATRIX_RAMP_SHARE * pass_s;
    return r < MATRIX_RAMP_S ? r : MATRIX_RAMP_S;
}

/* Trace t of the matrix at speed into *out. */
static int load_trace(const matrix_config_t *c, matrix_trace_t t, double speed, trace_t *out,
                      double *ramp_s, char *err, size_t errlen) {
    char e[512];
    *ramp_s = 0;
    if (t == MATRIX_CONV || t == MATRIX_MOONCAKE) {
        const char *path = t == MATRIX_CONV ? c->conv_path : c->mooncake_path;
        const char *flag = t == MATRIX_CONV ? "--conv" : "--mooncake";
        trace_options_t o;
        trace_options_default(&o);
        trace_t one;
        if (trace_load(path, TRACE_AUTO, &o, &one, e, sizeof e))
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "matrix: the %s trace: %s (give %s PATH, or leave %s out of "
                              "--traces)",
                              matrix_trace_name(t), e, flag, matrix_trace_name(t));
        double span = one.end_s;
        trace_deinit(&one);
        o.time_scale = speed;
        o.repetitions = MATRIX_REPS;
        o.gap_s = MATRIX_GAP_S;
        o.ramp_s = *ramp_s = ramp_of(span / speed);
        if (trace_load(path, TRACE_AUTO, &o, out, e, sizeof e))
            return kgs_seterr(err, errlen, KGS_EINVAL, "matrix: the %s trace at x%g: %s",
                              matrix_trace_name(t), speed, e);
        return 0;
    }
    trace_synth_t g;
    synth_of(c, t, speed, &g);
    trace_options_t o;
    trace_options_default(&o);
    if (trace_synthesize(&g, &o, out, e, sizeof e))
        return kgs_seterr(err, errlen, KGS_EINVAL, "matrix: the %s generator at x%g: %s",
                          matrix_trace_name(t), speed, e);
    return 0;
}

double matrix_frontier_compare(const report_frontier_t *f, double gpu_hours, double over_slo,
                               double *frontier_gpu_hours, bool *below) {
    *below = false;
    *frontier_gpu_hours = 0;
    if (f->pareto_count == 0)
        return 0;
    double g = report_frontier_at(f, over_slo);
    if (g < 0) {
        *below = true;
        g = f->pareto[0].gpu_hours; /* the lowest share: pareto is ascending in it */
    }
    *frontier_gpu_hours = g;
    return g > 0 ? gpu_hours / g : 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double matrix_median(double *v, size_t n) {
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void matrix_case_label(const matrix_case_t *c, char *buf, size_t len) {
    if (fmod(c->kv_tokens, 1000) == 0)
        snprintf(buf, len, "%s x%g cold %gs kv %gk", matrix_trace_name(c->trace), c->speed,
                 c->cold_s, c->kv_tokens / 1000);
    else
        snprintf(buf, len, "%s x%g cold %gs kv %g", matrix_trace_name(c->trace), c->speed,
                 c->cold_s, c->kv_tokens);
}

/* The policy with id in cases[i], or NULL. */
static const matrix_result_t *result_of(const matrix_case_t *c, char id) {
    for (size_t p = 0; p < c->npol; p++)
        if (c->pol[p].id == id)
            return &c->pol[p];
    return NULL;
}

static void summarise_policy(const matrix_case_t *cases, size_t n, size_t p, double *scratch,
                             matrix_policy_summary_t *ps) {
    ps->id = cases[0].pol[p].id;
    snprintf(ps->key, sizeof ps->key, "%s", cases[0].pol[p].key);
    ps->worst = n;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const matrix_result_t *r = &cases[i].pol[p];
        ps->cases++;
        ps->cancelled += r->cancelled_starts;
        ps->cold_starts += r->cold_starts;
        if (r->stability.syncs)
            ps->reversals += r->stability.reversals;
        if (r->stability.steps && r->stability.max_step > ps->max_step)
            ps->max_step = r->stability.max_step;
        if (cases[i].overloaded || !(r->frontier_gpu_hours > 0))
            continue;
        scratch[k++] = r->ratio;
        ps->below += r->below;
        if (ps->worst == n || r->ratio > ps->ratio_worst) {
            ps->ratio_worst = r->ratio;
            ps->worst = i;
        }
    }
    ps->judged = k;
    ps->ratio_median = matrix_median(scratch, k);
}

int matrix_summarise(const matrix_case_t *cases, size_t n, matrix_summary_t *out) {
    memset(out, 0, sizeof *out);
    out->cases = n;
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        out->overloaded += cases[i].overloaded;
        if (cases[i].ideal.pareto_count)
            out->ideal_reversals += cases[i].ideal.pareto[0].reversals;
        if (cases[i].ours_loses >= 0)
            out->compared++;
        if (cases[i].ours_loses > 0) {
            out->losses++;
            out->losses_judged += !cases[i].overloaded;
        }
    }
    double *scratch = malloc(n * sizeof *scratch);
    if (!scratch)
        return KGS_ENOMEM;
    out->npol = cases[0].npol;
    for (size_t p = 0; p < out->npol; p++)
        summarise_policy(cases, n, p, scratch, &out->pol[p]);
    free(scratch);
    return 0;
}

/* The online ideal's sweep for one case: MATRIX_IDEAL_UTILS utilisations
 * x MATRIX_IDEAL_HOLDS holds at the fixed drain, and its Pareto frontier. */
static int sweep_ideal(const trace_t *t, const sim_model_t *m, const sim_options_t *o,
                       const sim_policy_t *ideal, matrix_case_t *mc, size_t *sims, char *err,
                       size_t errlen) {
    report_frontier_t *f = &mc->ideal;
    memset(f, 0, sizeof *f);
    mc->best_over_slo = 1;
    _Static_assert(MATRIX_IDEAL_POINTS <= sizeof f->points / sizeof *f->points,
                   "report_frontier_t holds the sweep");
    for (int k = 0; k < MATRIX_IDEAL_POINTS; k++) {
        sim_policy_t p = *ideal;
        p.ideal_util = (3 + k % MATRIX_IDEAL_UTILS) / 10.0;
        p.ideal_drain_s = MATRIX_IDEAL_DRAIN_S;
        p.ideal_hold_s =
            k < MATRIX_IDEAL_UTILS ? MATRIX_IDEAL_HOLD_SHORT_S : MATRIX_IDEAL_HOLD_LONG_S;
        sim_result_t r;
        int rc = sim_run(t, m, &p, o, &r, err, errlen);
        if (rc)
            return rc;
        (*sims)++;
        report_point_t *x = &f->points[f->count++];
        x->gpu_hours = r.gpu_hours;
        x->over_slo = r.slo_miss_share;
        x->warm_over_slo = r.warm_miss_share;
        x->reversals = r.ideal_reversals;
        snprintf(x->knob, sizeof x->knob, "util=%.1f hold=%.0fs", p.ideal_util, p.ideal_hold_s);
        if (r.slo_miss_share < mc->best_over_slo)
            mc->best_over_slo = r.slo_miss_share;
        sim_result_deinit(&r);
    }
    report_pareto(f);
    mc->overloaded = mc->best_over_slo > MATRIX_OVERLOAD_SHARE;
    return 0;
}

/* One case: the model at its cold start and KV cache, the ideal's sweep, the
 * chosen policies against its frontier. */
static int run_case(const matrix_config_t *c, const trace_t *t, matrix_case_t *mc, size_t *sims,
                    char *err, size_t errlen) {
    sim_model_t m;
    sim_model_default(&m);
    m.kv_tokens = mc->kv_tokens;
    int rc = recommend_cold_start_apply(&m, mc->cold_s, err, errlen);
    if (rc)
        return rc;
    sim_options_t o;
    sim_options_default(&o);
    policy_knobs_t kn;
    policy_knobs_default(&kn);
    kn.ttft_target_s = sim_ttft_objective_s(&m, &o);
    kn.tpot_target_s = sim_tpot_objective_s(&m, &o);
    sim_policy_t all[POLICY_COUNT];
    size_t n = policies_default(all, &m, &kn);
    const sim_policy_t *ideal = NULL;
    for (size_t i = 0; i < n; i++)
        if (all[i].kind == SIM_POLICY_IDEAL)
            ideal = &all[i];
    if (!ideal)
        return kgs_seterr(err, errlen, KGS_ENOTFOUND, "matrix: no online ideal policy");
    mc->requests = t->count;
    mc->floor_over_slo =
        t->count ? (double)sim_floor(t, &m, o.slo_wait_s, MATRIX_FLOOR_IDLE_S) / (double)t->count
                 : 0;
    rc = sweep_ideal(t, &m, &o, ideal, mc, sims, err, errlen);
    if (rc)
        return rc;
    mc->npol = 0;
    for (const char *id = c->policies; *id; id++) {
        const sim_policy_t *p = NULL;
        for (size_t i = 0; i < n; i++)
            if (all[i].id == *id && all[i].kind == SIM_POLICY_KEDA)
                p = &all[i];
        if (!p)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "matrix: --policies %s: '%c' is no KEDA policy (%s)", c->policies,
                              *id, MATRIX_POLICY_LETTERS);
        sim_result_t r;
        rc = sim_run(t, &m, p, &o, &r, err, errlen);
        if (rc)
            return rc;
        (*sims)++;
        matrix_result_t *x = &mc->pol[mc->npol++];
        x->id = p->id;
        if (p->key)
            snprintf(x->key, sizeof x->key, "%s", p->key);
        else
            snprintf(x->key, sizeof x->key, "%c", p->id);
        x->gpu_hours = r.gpu_hours;
        x->over_slo = r.slo_miss_share;
        x->cold_starts = r.cold_starts;
        x->cancelled_starts = r.cancelled_starts;
        x->stability = r.stability;
        x->ratio = matrix_frontier_compare(&mc->ideal, x->gpu_hours, x->over_slo,
                                           &x->frontier_gpu_hours, &x->below);
        sim_result_deinit(&r);
    }
    const matrix_result_t *ours = result_of(mc, 'o'), *comp = result_of(mc, 'd');
    mc->ours_loses =
        !ours || !comp ? -1 : ours->gpu_hours > comp->gpu_hours && ours->over_slo > comp->over_slo;
    return 0;
}

int matrix_config_check(const matrix_config_t *c, size_t *ncases, char *err, size_t errlen) {
    size_t nt = 0;
    for (int i = 0; i < MATRIX_TRACES; i++)
        nt += c->traces[i];
    if (!nt || !c->nspeeds || !c->ncold || !c->nkv || !c->policies[0])
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "matrix: nothing to run: %zu traces, %zu speeds, %zu cold starts, %zu KV "
                          "sizes, policies \"%s\" (each needs at least one)",
                          nt, c->nspeeds, c->ncold, c->nkv, c->policies);
    for (size_t i = 0; i < c->ncold; i++)
        if (!(c->cold_s[i] >= RECOMMEND_COLD_START_MIN_S &&
              c->cold_s[i] <= RECOMMEND_COLD_START_MAX_S))
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "matrix: --cold %g: a cold start is %d..%d seconds", c->cold_s[i],
                              RECOMMEND_COLD_START_MIN_S, RECOMMEND_COLD_START_MAX_S);
    for (size_t i = 0; i < c->nspeeds; i++)
        if (!(c->speeds[i] >= MATRIX_SPEED_MIN && c->speeds[i] <= MATRIX_SPEED_MAX))
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "matrix: --speeds %g: a speed is %g..%g (1: as recorded)",
                              c->speeds[i], MATRIX_SPEED_MIN, MATRIX_SPEED_MAX);
    for (size_t i = 0; i < c->nkv; i++)
        if (!(c->kv_tokens[i] >= MATRIX_KV_MIN && c->kv_tokens[i] <= MATRIX_KV_MAX))
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "matrix: --kv %g: a KV cache is %g..%g tokens", c->kv_tokens[i],
                              MATRIX_KV_MIN, MATRIX_KV_MAX);
    for (const char *id = c->policies; *id; id++) {
        if (!strchr(MATRIX_POLICY_LETTERS, *id))
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "matrix: --policies %s: '%c' is no KEDA policy (%s)", c->policies,
                              *id, MATRIX_POLICY_LETTERS);
        if (strchr(id + 1, *id))
            return kgs_seterr(err, errlen, KGS_EINVAL, "matrix: --policies %s: '%c' is given twice",
                              c->policies, *id);
    }
    *ncases = nt * c->nspeeds * c->ncold * c->nkv;
    return 0;
}

int matrix_run(const matrix_config_t *c, matrix_case_cb cb, void *ud, matrix_case_t **cases,
               size_t *n, size_t *sims, char *err, size_t errlen) {
    *cases = NULL;
    *n = 0;
    *sims = 0;
    size_t total;
    int rc = matrix_config_check(c, &total, err, errlen);
    if (rc)
        return rc;
    matrix_case_t *v = calloc(total, sizeof *v);
    if (!v)
        return KGS_ENOMEM;
    size_t k = 0;
    for (int tr = 0; tr < MATRIX_TRACES; tr++) {
        if (!c->traces[tr])
            continue;
        for (size_t si = 0; si < c->nspeeds; si++) {
            trace_t t;
            double ramp_s;
            rc = load_trace(c, (matrix_trace_t)tr, c->speeds[si], &t, &ramp_s, err, errlen);
            if (rc)
                goto fail;
            for (size_t ci = 0; ci < c->ncold && !rc; ci++)
                for (size_t ki = 0; ki < c->nkv && !rc; ki++) {
                    matrix_case_t *mc = &v[k];
                    mc->trace = (matrix_trace_t)tr;
                    mc->speed = c->speeds[si];
                    mc->cold_s = c->cold_s[ci];
                    mc->kv_tokens = c->kv_tokens[ki];
                    mc->ramp_s = ramp_s;
                    rc = run_case(c, &t, mc, sims, err, errlen);
                    if (!rc && cb)
                        cb(mc, k, total, ud);
                    k += !rc;
                }
            trace_deinit(&t);
            if (rc)
                goto fail;
        }
    }
    *cases = v;
    *n = k;
    return 0;
fail:
    free(v);
    return rc;
}

/* ---- writers ---- */

/* A policy's cells: frontier GPU-h, ratio, reversals, max step ("-" where
 * undefined). */
typedef struct {
    char frontier[16], ratio[16], rev[16], step[16];
} cells_t;

static void cells_of(const matrix_result_t *r, cells_t *c) {
    snprintf(c->frontier, sizeof c->frontier, "-");
    snprintf(c->ratio, sizeof c->ratio, "-");
    snprintf(c->rev, sizeof c->rev, "-");
    snprintf(c->step, sizeof c->step, "-");
    if (r->frontier_gpu_hours > 0) {
        snprintf(c->frontier, sizeof c->frontier, "%.2f", r->frontier_gpu_hours);
        snprintf(c->ratio, sizeof c->ratio, "%.2f%s", r->ratio, r->below ? "*" : "");
    }
    if (r->stability.syncs)
        snprintf(c->rev, sizeof c->rev, "%u", r->stability.reversals);
    if (r->stability.steps)
        snprintf(c->step, sizeof c->step, "%.1f", r->stability.max_step);
}

/* The note of a policy's row: below the frontier, losing to composite. */
static void note_of(const matrix_case_t *mc, const matrix_result_t *r, char *buf, size_t len) {
    buf[0] = '\0';
    if (r->below)
        snprintf(buf, len, "below the frontier");
    if (r->id == 'o' && mc->ours_loses > 0) {
        size_t k = strlen(buf);
        snprintf(buf + k, len - k, "%sloses to composite on both axes", k ? "; " : "");
    }
}

/* The ideal's row note: its frontier and whether the case is overloaded. */
static void ideal_note(const matrix_case_t *mc, char *buf, size_t len) {
    const report_frontier_t *f = &mc->ideal;
    snprintf(buf, len, "best %s, frontier %zu of %zu points; floor %.1f%%%s",
             f->pareto_count ? f->pareto[0].knob : "-", f->pareto_count, f->count,
             100 * mc->floor_over_slo, mc->overloaded ? "; OVERLOADED" : "");
}

void matrix_print_header(FILE *f) {
    fprintf(f, "%-30s %-10s %7s %8s %9s %6s %6s %6s %4s %5s  %s\n", "case", "policy", "GPU-h",
            "> SLO", "ideal", "ratio", "cold", "cancel", "rev", "max", "note");
    fprintf(f, "%-30s %-10s %7s %8s %9s %6s %6s %6s %4s %5s\n", "", "", "", "", "GPU-h at", "",
            "starts", "starts", "", "step");
    fprintf(f, "%-30s %-10s %7s %8s %9s\n", "", "", "", "", "its share");
}

void matrix_print_case(FILE *f, const matrix_case_t *mc) {
    char label[64], note[128];
    matrix_case_label(mc, label, sizeof label);
    ideal_note(mc, note, sizeof note);
    const report_frontier_t *fr = &mc->ideal;
    if (fr->pareto_count)
        fprintf(f, "%-30s %-10s %7.2f %7.2f%% %9s %6s %6s %6s %4u %5s  %s\n", label, "ideal",
                fr->pareto[0].gpu_hours, 100 * fr->pareto[0].over_slo, "-", "-", "-", "-",
                fr->pareto[0].reversals, "-", note);
    for (size_t p = 0; p < mc->npol; p++) {
        const matrix_result_t *r = &mc->pol[p];
        cells_t c;
        cells_of(r, &c);
        note_of(mc, r, note, sizeof note);
        fprintf(f, "%-30s %-10s %7.2f %7.2f%% %9s %6s %6u %6u %4s %5s  %s\n", "", r->key,
                r->gpu_hours, 100 * r->over_slo, c.frontier, c.ratio, r->cold_starts,
                r->cancelled_starts, c.rev, c.step, note);
    }
}

/* A policy summary's cells: the median and worst ratio, the worst case, the
 * largest step ("-" where nothing was judged or defined). */
typedef struct {
    char median[16], worst_ratio[16], worst[64], step[16];
} summary_cells_t;

static void summary_cells(const matrix_case_t *cases, const matrix_summary_t *s,
                          const matrix_policy_summary_t *ps, summary_cells_t *c) {
    snprintf(c->median, sizeof c->median, "-");
    snprintf(c->worst_ratio, sizeof c->worst_ratio, "-");
    snprintf(c->worst, sizeof c->worst, "-");
    snprintf(c->step, sizeof c->step, "-");
    if (ps->judged) {
        snprintf(c->median, sizeof c->median, "%.2f", ps->ratio_median);
        snprintf(c->worst_ratio, sizeof c->worst_ratio, "%.2f", ps->ratio_worst);
    }
    if (ps->worst < s->cases)
        matrix_case_label(&cases[ps->worst], c->worst, sizeof c->worst);
    if (ps->max_step > 0)
        snprintf(c->step, sizeof c->step, "%.1f", ps->max_step);
}

static void loss_list(FILE *f, const matrix_case_t *cases, size_t n, const char *sep) {
    char label[64];
    bool first = true;
    for (size_t i = 0; i < n; i++) {
        if (cases[i].ours_loses <= 0)
            continue;
        matrix_case_label(&cases[i], label, sizeof label);
        fprintf(f, "%s%s%s", first ? "" : sep, label, cases[i].overloaded ? " (overloaded)" : "");
        first = false;
    }
}

void matrix_print_summary(FILE *f, const matrix_case_t *cases, const matrix_summary_t *s) {
    fprintf(f, "(ideal: the online ideal's point with the lowest share over the SLO; ratio: "
               "GPU-h / the ideal's frontier at the policy's share, * below every frontier point: "
               "against its lowest-share point; rev: reversals; max step: the largest ratio of "
               "consecutive desired counts)\n");
    fprintf(f,
            "summary: %zu cases, %zu overloaded (even the online ideal's best point misses the "
            "SLO for more than %.0f %% of requests: reported, not judged)\n",
            s->cases, s->overloaded, 100 * MATRIX_OVERLOAD_SHARE);
    if (s->compared) {
        fprintf(f,
                "ours loses to composite on both axes (more GPU-h and a higher share over the "
                "SLO) in %zu of %zu cases (%zu not overloaded)",
                s->losses, s->compared, s->losses_judged);
        if (s->losses) {
            fprintf(f, ": ");
            loss_list(f, cases, s->cases, ", ");
        }
        fprintf(f, "\n");
    }
    fprintf(f, "%-10s %6s %7s %7s %-30s %5s %9s %9s %8s %6s\n", "policy", "judged", "median",
            "worst", "worst case", "below", "cancelled", "reversals", "max step", "cold");
    for (size_t p = 0; p < s->npol; p++) {
        const matrix_policy_summary_t *ps = &s->pol[p];
        summary_cells_t c;
        summary_cells(cases, s, ps, &c);
        fprintf(f, "%-10s %6zu %7s %7s %-30s %5zu %9u %9u %8s %6u\n", ps->key, ps->judged, c.median,
                c.worst_ratio, c.worst, ps->below, ps->cancelled, ps->reversals, c.step,
                ps->cold_starts);
    }
    fprintf(f, "%-10s %6s %7s %7s %-30s %5s %9s %9u\n", "ideal", "-", "-", "-", "(its best points)",
            "-", "-", s->ideal_reversals);
    fprintf(f, "(judged: cases not overloaded; median, worst: of the ratio over them; below: of "
               "them below the frontier; cancelled starts, reversals and cold starts: sums over "
               "every case; max step: the largest; ideal: the online ideal's best point, its want "
               "read every 15 s: the traffic's own turns)\n");
}

static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void json_list(FILE *f, const double *v, size_t n) {
    fputc('[', f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s%g", i ? ", " : "", v[i]);
    fputc(']', f);
}

static void json_config(FILE *f, const matrix_config_t *c) {
    fprintf(f, "{\"config\": {\"traces\": [");
    bool first = true;
    for (int i = 0; i < MATRIX_TRACES; i++)
        if (c->traces[i]) {
            fprintf(f, "%s\"%s\"", first ? "" : ", ", trace_names[i]);
            first = false;
        }
    fprintf(f, "], \"speeds\": ");
    json_list(f, c->speeds, c->nspeeds);
    fprintf(f, ", \"cold_start_s\": ");
    json_list(f, c->cold_s, c->ncold);
    fprintf(f, ", \"kv_tokens\": ");
    json_list(f, c->kv_tokens, c->nkv);
    fprintf(f, ", \"policies\": ");
    json_str(f, c->policies);
    fprintf(f,
            ",\n  \"ideal_sweep\": {\"util\": [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9], \"hold_s\": "
            "[%d, %d], \"drain_s\": %d}, \"overloaded_over_slo\": %g, \"floor_idle_s\": %d,\n  "
            "\"replay\": {\"reps\": %d, \"gap_s\": %d, \"ramp_s\": %d, \"ramp_max_share\": %g}, "
            "\"synthetic\": {",
            MATRIX_IDEAL_HOLD_SHORT_S, MATRIX_IDEAL_HOLD_LONG_S, MATRIX_IDEAL_DRAIN_S,
            MATRIX_OVERLOAD_SHARE, MATRIX_FLOOR_IDLE_S, MATRIX_REPS, MATRIX_GAP_S, MATRIX_RAMP_S,
            MATRIX_RAMP_SHARE);
    for (int t = MATRIX_POISSON; t < MATRIX_TRACES; t++) {
        trace_synth_t g;
        synth_of(c, (matrix_trace_t)t, 1, &g);
        fprintf(f, "%s\"%s\": {\"rate\": %g, ", t == MATRIX_POISSON ? "" : ", ", trace_names[t],
                g.rate);
        if (t == MATRIX_ONOFF)
            fprintf(f, "\"on_s\": %g, \"off_s\": %g, ", g.on_s, g.off_s);
        if (t == MATRIX_DIURNAL)
            fprintf(f, "\"peak_rate\": %g, \"period_s\": %g, ", g.peak_rate, g.period_s);
        fprintf(f, "\"duration_s\": %g, \"ctx_tokens\": %u, \"gen_tokens\": %u, \"seed\": %llu}",
                g.duration_s, g.ctx_tokens, g.gen_tokens, g.seed);
    }
    fprintf(f, "}}");
}

static void json_result(FILE *f, const matrix_case_t *mc, const matrix_result_t *r) {
    fprintf(f, "{\"key\": ");
    json_str(f, r->key);
    fprintf(f, ", \"gpu_hours\": %.4f, \"over_slo\": %.6f, \"frontier_gpu_hours\": ", r->gpu_hours,
            r->over_slo);
    if (r->frontier_gpu_hours > 0)
        fprintf(f, "%.4f, \"ratio\": %.4f", r->frontier_gpu_hours, r->ratio);
    else
        fprintf(f, "null, \"ratio\": null");
    fprintf(f,
            ", \"below_frontier\": %s, \"cold_starts\": %u, \"cancelled_starts\": %u, "
            "\"hpa_syncs\": %u, \"reversals\": %u, \"max_step\": ",
            r->below ? "true" : "false", r->cold_starts, r->cancelled_starts, r->stability.syncs,
            r->stability.reversals);
    if (r->stability.steps)
        fprintf(f, "%.4f}", r->stability.max_step);
    else
        fprintf(f, "null}");
    (void)mc;
}

static void json_case(FILE *f, const matrix_case_t *mc) {
    char label[64];
    matrix_case_label(mc, label, sizeof label);
    fprintf(f, "{\"case\": ");
    json_str(f, label);
    fprintf(f,
            ", \"trace\": \"%s\", \"speed\": %g, \"cold_start_s\": %g, \"kv_tokens\": %g, "
            "\"ramp_s\": %g, \"requests\": %zu, \"floor_over_slo\": %.6f, \"overloaded\": %s, "
            "\"ideal_best_over_slo\": %.6f,\n   \"ideal\": [",
            trace_names[mc->trace], mc->speed, mc->cold_s, mc->kv_tokens, mc->ramp_s, mc->requests,
            mc->floor_over_slo, mc->overloaded ? "true" : "false", mc->best_over_slo);
    const report_frontier_t *fr = &mc->ideal;
    for (size_t k = 0; k < fr->count; k++) {
        const report_point_t *x = &fr->points[k];
        bool on = false;
        for (size_t j = 0; j < fr->pareto_count; j++)
            on |= !strcmp(fr->pareto[j].knob, x->knob);
        fprintf(f,
                "%s{\"knob\": \"%s\", \"gpu_hours\": %.4f, \"over_slo\": %.6f, \"reversals\": %u, "
                "\"pareto\": %s}",
                k ? ", " : "", x->knob, x->gpu_hours, x->over_slo, x->reversals,
                on ? "true" : "false");
    }
    fprintf(f, "],\n   \"policies\": [");
    for (size_t p = 0; p < mc->npol; p++) {
        fprintf(f, "%s", p ? ", " : "");
        json_result(f, mc, &mc->pol[p]);
    }
    fprintf(f, "], \"ours_loses_to_composite\": %s}",
            mc->ours_loses < 0 ? "null"
            : mc->ours_loses   ? "true"
                               : "false");
}

static void json_summary(FILE *f, const matrix_case_t *cases, const matrix_summary_t *s) {
    fprintf(f,
            "{\"cases\": %zu, \"overloaded\": %zu, \"compared\": %zu, "
            "\"ours_loses_to_composite\": %zu, \"ours_loses_to_composite_not_overloaded\": %zu, "
            "\"policies\": [",
            s->cases, s->overloaded, s->compared, s->losses, s->losses_judged);
    for (size_t p = 0; p < s->npol; p++) {
        const matrix_policy_summary_t *ps = &s->pol[p];
        fprintf(f, "%s\n  {\"key\": ", p ? "," : "");
        json_str(f, ps->key);
        fprintf(f, ", \"judged\": %zu, \"below_frontier\": %zu, ", ps->judged, ps->below);
        if (ps->judged)
            fprintf(f, "\"ratio_median\": %.4f, \"ratio_worst\": %.4f, \"worst_case\": ",
                    ps->ratio_median, ps->ratio_worst);
        else
            fprintf(f, "\"ratio_median\": null, \"ratio_worst\": null, \"worst_case\": ");
        if (ps->worst < s->cases) {
            char label[64];
            matrix_case_label(&cases[ps->worst], label, sizeof label);
            json_str(f, label);
        } else {
            fprintf(f, "null");
        }
        fprintf(f, ", \"cancelled_starts\": %u, \"reversals\": %u, \"max_step\": ", ps->cancelled,
                ps->reversals);
        if (ps->max_step > 0)
            fprintf(f, "%.4f", ps->max_step);
        else
            fprintf(f, "null");
        fprintf(f, ", \"cold_starts\": %u}", ps->cold_starts);
    }
    fprintf(f, "], \"ideal_best_reversals\": %u}", s->ideal_reversals);
}

int matrix_json(const char *path, const matrix_config_t *c, const matrix_case_t *cases, size_t n,
                const matrix_summary_t *s, char *err, size_t errlen) {
    FILE *f = report_json_open(path, err, errlen);
    if (!f)
        return KGS_EIO;
    json_config(f, c);
    fprintf(f, ",\n \"cases\": [");
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%s\n  ", i ? "," : "");
        json_case(f, &cases[i]);
    }
    fprintf(f, "\n ],\n \"summary\": ");
    json_summary(f, cases, s);
    fprintf(f, "}\n");
    return report_json_close(f, path, err, errlen);
}

static void md_summary(FILE *f, const matrix_case_t *cases, const matrix_summary_t *s) {
    fprintf(f, "%zu cases, %zu overloaded (the online ideal's best point > %.0f %% over the SLO).",
            s->cases, s->overloaded, 100 * MATRIX_OVERLOAD_SHARE);
    if (s->compared) {
        fprintf(f,
                " `ours` loses to `composite` on both axes in %zu of %zu cases (%zu not "
                "overloaded)",
                s->losses, s->compared, s->losses_judged);
        if (s->losses) {
            fprintf(f, ": ");
            loss_list(f, cases, s->cases, "; ");
        }
        fprintf(f, ".");
    }
    fprintf(f, "\n\n| policy | judged | GPU-h ratio median | worst | worst case | below the "
               "frontier | cancelled starts | reversals | max step | cold starts |\n"
               "|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t p = 0; p < s->npol; p++) {
        const matrix_policy_summary_t *ps = &s->pol[p];
        summary_cells_t c;
        summary_cells(cases, s, ps, &c);
        fprintf(f, "| `%s` | %zu | %s | %s | %s | %zu | %u | %u | %s | %u |\n", ps->key, ps->judged,
                c.median, c.worst_ratio, c.worst, ps->below, ps->cancelled, ps->reversals, c.step,
                ps->cold_starts);
    }
    fprintf(f, "| ideal (its best points) | - | - | - | - | - | - | %u | - | - |\n",
            s->ideal_reversals);
}

int matrix_markdown(const char *path, const matrix_case_t *cases, size_t n,
                    const matrix_summary_t *s, char *err, size_t errlen) {
    FILE *f = report_json_open(path, err, errlen);
    if (!f)
        return KGS_EIO;
    md_summary(f, cases, s);
    fprintf(f, "\n<details><summary>Every case</summary>\n\n| case | policy | GPU-h | > SLO | "
               "ideal GPU-h at its share | ratio | cold starts "
               "| cancelled | reversals | max step | note |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < n; i++) {
        const matrix_case_t *mc = &cases[i];
        char label[64], note[128];
        matrix_case_label(mc, label, sizeof label);
        ideal_note(mc, note, sizeof note);
        const report_frontier_t *fr = &mc->ideal;
        if (fr->pareto_count)
            fprintf(f, "| %s | ideal | %.2f | %.2f %% | - | - | - | - | %u | - | %s |\n", label,
                    fr->pareto[0].gpu_hours, 100 * fr->pareto[0].over_slo, fr->pareto[0].reversals,
                    note);
        for (size_t p = 0; p < mc->npol; p++) {
            const matrix_result_t *r = &mc->pol[p];
            cells_t c;
            cells_of(r, &c);
            note_of(mc, r, note, sizeof note);
            fprintf(f, "| | `%s` | %.2f | %.2f %% | %s | %s | %u | %u | %s | %s | %s |\n", r->key,
                    r->gpu_hours, 100 * r->over_slo, c.frontier, c.ratio, r->cold_starts,
                    r->cancelled_starts, c.rev, c.step, note);
        }
    }
    fprintf(f, "\n</details>\n");
    return report_json_close(f, path, err, errlen);
}
