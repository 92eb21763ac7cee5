/*
 * recommend.c - see recommend.h.
 *
 * Why this grid: the scale-down window decides what a wake costs (the
 * replicas ordered for a wake's backlog are held for the window after it is
 * gone; KEDA's HPA default is 300 s; the model's own keep-alive holds the
 * load's replicas, so the default is 30 s), the utilisation what steady
 * load costs (0: the model's own headroom from the arrivals, the default),
 * the drain target how hard a backlog is attacked. 4 x 3 x 3 = 36
 * runs keeps a recommendation on an hour of a busy trace within seconds on
 * one core (bench/README.md, "scalesim recommend", has the measurement);
 * the model's defaults are one of the points, so the defaults' figures cost
 * no extra run.
 *
 * Why this rule: the share over the SLO of neighbouring settings differs by
 * noise-sized amounts (a few requests at a wake), so "the best share" alone
 * would pick among near-equals by chance and often at a high GPU cost. A
 * tolerance of half a percentage point, or a tenth of the best share when
 * that is larger, treats those as equal and then saves GPU-hours. It is one
 * rule for every trace: no constant depends on the trace.
 */
#include "recommend.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "core/err.h"
#include "core/queue_model.h"
#include "report.h"

static const double grid_util[] = {0, 0.7, 0.8}; /* 0: the headroom from the arrivals */
static const double grid_drain_s[] = {5, 10, 20};
static const double grid_window_s[] = {30, 60, 120, 300};
#define NELEM(a) (sizeof(a) / sizeof *(a))
_Static_assert(NELEM(grid_util) * NELEM(grid_drain_s) * NELEM(grid_window_s) <=
                   RECOMMEND_MAX_POINTS,
               "recommend_t.grid holds the whole grid");

#define DEFAULT_DOWN_WINDOW_S 30

void recommend_setting_default(recommend_setting_t *s) {
    s->util = QUEUE_MODEL_DEFAULT_UTILISATION;
    s->drain_s = QUEUE_MODEL_DEFAULT_DRAIN_S;
    s->down_window_s = DEFAULT_DOWN_WINDOW_S;
}

/*
 * The one place that turns a setting into the simulated policy: (o) ours,
 * the documented minimal queueing trigger, with qm_util and qm_drain_s
 * (which sim.c hands the product's parser as the trigger keys
 * targetUtilization and drainSeconds) and the HPA scale-down window.
 */
int recommend_policy_build(const sim_model_t *m, const policy_knobs_t *k,
                           const recommend_setting_t *s, recommend_policy_t *out, char *err,
                           size_t errlen) {
    sim_policy_t all[POLICY_COUNT];
    memset(out, 0, sizeof *out);
    out->knobs = *k;
    size_t n = policies_default(all, m, &out->knobs);
    for (size_t i = 0; i < n; i++) {
        if (!all[i].key || strcmp(all[i].key, "ours"))
            continue;
        out->p = all[i];
        snprintf(out->value[0], sizeof out->value[0], "%g", s->util);
        snprintf(out->value[1], sizeof out->value[1], "%g", s->drain_s);
        out->p.qm_util = s->util;
        out->p.qm_drain_s = s->drain_s;
        out->p.hpa_down_window_s = s->down_window_s;
        return 0;
    }
    return kgs_seterr(err, errlen, KGS_ENOTFOUND,
                      "recommend: the default policies have no queueing model (key \"ours\")");
}

int recommend_cold_start_apply(sim_model_t *m, double cold_start_s, char *err, size_t errlen) {
    if (!(cold_start_s >= RECOMMEND_COLD_START_MIN_S && cold_start_s <= RECOMMEND_COLD_START_MAX_S))
        return kgs_seterr(err, errlen, KGS_ERANGE,
                          "--cold-start %g: must be %d..%d seconds (create to Ready of one pod)",
                          cold_start_s, RECOMMEND_COLD_START_MIN_S, RECOMMEND_COLD_START_MAX_S);
    double sum = m->node_s + m->image_s + m->weights_s;
    if (sum <= 0) {
        m->node_s = m->image_s = 0;
        m->weights_s = cold_start_s;
        return 0;
    }
    double f = cold_start_s / sum;
    m->node_s *= f;
    m->image_s *= f;
    /* the last phase takes the rounding, so the three sum to exactly S */
    m->weights_s = cold_start_s - m->node_s - m->image_s;
    return 0;
}

size_t recommend_choose(const recommend_point_t *pts, size_t n, double *best_over_slo,
                        double *limit_over_slo) {
    double best = pts[0].over_slo;
    for (size_t i = 1; i < n; i++)
        if (pts[i].over_slo < best)
            best = pts[i].over_slo;
    double tol = RECOMMEND_TOL_REL * best;
    if (tol < RECOMMEND_TOL_ABS)
        tol = RECOMMEND_TOL_ABS;
    double limit = best + tol;
    size_t pick = n;
    for (size_t i = 0; i < n; i++) {
        if (pts[i].over_slo > limit)
            continue;
        if (pick == n || pts[i].gpu_hours < pts[pick].gpu_hours ||
            (pts[i].gpu_hours == pts[pick].gpu_hours && pts[i].over_slo < pts[pick].over_slo))
            pick = i;
    }
    *best_over_slo = best;
    *limit_over_slo = limit;
    return pick; /* the best point itself is within the limit: pick < n */
}

void recommend_stage_models(const sim_model_t *m, recommend_stage_t *out) {
    static const char *const keys[RECOMMEND_STAGE_COUNT] = {"as_given",       "warm_pool_1",
                                                            "warm_pool_2",    "image_halved",
                                                            "weights_halved", "node_linger_600"};
    for (size_t i = 0; i < RECOMMEND_STAGE_COUNT; i++) {
        memset(&out[i], 0, sizeof out[i]);
        out[i].key = keys[i];
        out[i].m = *m;
    }
    out[1].m.warm_pool = 1;
    out[2].m.warm_pool = 2;
    out[3].m.image_s = m->image_s / 2;
    out[4].m.weights_s = m->weights_s / 2;
    out[5].m.node_linger_s = RECOMMEND_STAGE_LINGER_S;
    snprintf(out[0].what, sizeof out[0].what, "as recommended above");
    snprintf(out[1].what, sizeof out[1].what, "warm pool of 1 node (always up)");
    snprintf(out[2].what, sizeof out[2].what, "warm pool of 2 nodes (always up)");
    snprintf(out[3].what, sizeof out[3].what, "image stage halved (%.1f s)", out[3].m.image_s);
    snprintf(out[4].what, sizeof out[4].what, "weights stage halved (%.1f s)", out[4].m.weights_s);
    snprintf(out[5].what, sizeof out[5].what, "nodes linger %d s (CA default)",
             RECOMMEND_STAGE_LINGER_S);
}

static void stage_fill(recommend_stage_t *x, double gpu_hours, double over_slo,
                       double warm_over_slo, double wait_p99_s, unsigned cold_starts,
                       unsigned peak_replicas) {
    x->gpu_hours = gpu_hours;
    x->over_slo = over_slo;
    x->warm_over_slo = warm_over_slo;
    x->wait_p99_s = wait_p99_s;
    x->cold_starts = cold_starts;
    x->peak_replicas = peak_replicas;
}

static void point_fill(recommend_point_t *x, const sim_result_t *r) {
    x->gpu_hours = r->gpu_hours;
    x->over_slo = r->slo_miss_share;
    x->warm_over_slo = r->warm_miss_share;
    x->wait_p99_s = r->wait_p99_s;
    x->cold_starts = r->cold_starts;
    x->peak_replicas = r->peak_replicas;
    x->cancelled_starts = r->cancelled_starts;
    x->stability = r->stability;
}

static bool setting_equal(const recommend_setting_t *a, const recommend_setting_t *b) {
    return a->util == b->util && a->drain_s == b->drain_s && a->down_window_s == b->down_window_s;
}

int recommend_run(const trace_t *t, const sim_model_t *m, const sim_options_t *o,
                  const policy_knobs_t *k, double floor_idle_s, recommend_t *out, char *err,
                  size_t errlen) {
    memset(out, 0, sizeof *out);
    if (t->count == 0)
        return kgs_seterr(err, errlen, KGS_EINVAL, "recommend: the trace has no requests");
    out->requests = t->count;
    out->slo_s = o->slo_wait_s;
    out->node_s = m->node_s;
    out->image_s = m->image_s;
    out->weights_s = m->weights_s;
    out->floor_over_slo = (double)sim_floor(t, m, o->slo_wait_s, floor_idle_s) / (double)t->count;
    recommend_setting_t def;
    recommend_setting_default(&def);
    out->defaults = RECOMMEND_MAX_POINTS;
    /* one policy at a time: each holds its metadata storage */
    recommend_policy_t rp;
    sim_result_t res;
    int rc;
    for (size_t w = 0; w < NELEM(grid_window_s); w++)
        for (size_t u = 0; u < NELEM(grid_util); u++)
            for (size_t d = 0; d < NELEM(grid_drain_s); d++) {
                recommend_point_t *x = &out->grid[out->count];
                x->s.util = grid_util[u];
                x->s.drain_s = grid_drain_s[d];
                x->s.down_window_s = grid_window_s[w];
                rc = recommend_policy_build(m, k, &x->s, &rp, err, errlen);
                if (rc)
                    return rc;
                if (out->count == 0) {
                    out->min_replicas = rp.p.min_replicas;
                    out->max_replicas = rp.p.max_replicas;
                    out->cooldown_s = rp.p.cooldown_s;
                    out->push = rp.p.push;
                }
                rc = sim_run(t, m, &rp.p, o, &res, err, errlen);
                if (rc)
                    return rc;
                point_fill(x, &res);
                sim_result_deinit(&res);
                if (setting_equal(&x->s, &def))
                    out->defaults = out->count;
                out->count++;
            }
    /* the grid holds the defaults by construction (a test checks it) */
    if (out->defaults == RECOMMEND_MAX_POINTS)
        return kgs_seterr(err, errlen, KGS_EINVAL, "recommend: the grid lacks the defaults");
    out->chosen =
        recommend_choose(out->grid, out->count, &out->best_over_slo, &out->limit_over_slo);

    policy_knobs_t kn = *k;
    sim_policy_t all[POLICY_COUNT];
    size_t n = policies_default(all, m, &kn);
    const sim_policy_t *ideal = NULL;
    for (size_t i = 0; i < n; i++)
        if (all[i].kind == SIM_POLICY_IDEAL)
            ideal = &all[i];
    if (!ideal)
        return kgs_seterr(err, errlen, KGS_ENOTFOUND, "recommend: no online ideal policy");
    rc = sim_run(t, m, ideal, o, &res, err, errlen);
    if (rc)
        return rc;
    point_fill(&out->ideal, &res);
    sim_result_deinit(&res);
    out->ideal.s.util = ideal->ideal_util;
    out->ideal.s.drain_s = ideal->ideal_drain_s;
    out->ideal.s.down_window_s = ideal->ideal_hold_s;

    /* which stage to attack: the chosen setting on each changed model */
    recommend_stage_models(m, out->stage);
    const recommend_point_t *c = &out->grid[out->chosen];
    stage_fill(&out->stage[0], c->gpu_hours, c->over_slo, c->warm_over_slo, c->wait_p99_s,
               c->cold_starts, c->peak_replicas);
    for (size_t i = 1; i < RECOMMEND_STAGE_COUNT; i++) {
        recommend_stage_t *x = &out->stage[i];
        rc = recommend_policy_build(&x->m, k, &c->s, &rp, err, errlen);
        if (rc)
            return rc;
        rc = sim_run(t, &x->m, &rp.p, o, &res, err, errlen);
        if (rc)
            return rc;
        stage_fill(x, res.gpu_hours, res.slo_miss_share, res.warm_miss_share, res.wait_p99_s,
                   res.cold_starts, res.peak_replicas);
        sim_result_deinit(&res);
    }
    out->stage_count = RECOMMEND_STAGE_COUNT;
    return 0;
}

static bool util_is_default(const recommend_setting_t *s) {
    return s->util == QUEUE_MODEL_DEFAULT_UTILISATION;
}

static bool drain_is_default(const recommend_setting_t *s) {
    return s->drain_s == QUEUE_MODEL_DEFAULT_DRAIN_S;
}

void recommend_snippet(FILE *f, const recommend_t *r) {
    const recommend_setting_t *s = &r->grid[r->chosen].s;
    fprintf(f,
            "# ScaledObject settings from scalesim recommend; merge into your ScaledObject and\n"
            "# keep the trigger's other metadata (scalerAddress, engine, pods, queue)\n"
            "spec:\n"
            "  minReplicaCount: %d\n"
            "  maxReplicaCount: %d\n"
            "  cooldownPeriod: %.0f\n"
            "  advanced:\n"
            "    horizontalPodAutoscalerConfig:\n"
            "      behavior:\n"
            "        scaleDown:\n"
            "          stabilizationWindowSeconds: %.0f\n"
            "  triggers:\n"
            "    - type: %s\n"
            "      metadata:\n"
            "        metricType: demand\n",
            r->min_replicas, r->max_replicas, r->cooldown_s, s->down_window_s,
            r->push ? "external-push" : "external");
    if (!util_is_default(s))
        fprintf(f, "        targetUtilization: \"%g\"\n", s->util);
    if (!drain_is_default(s))
        fprintf(f, "        drainSeconds: \"%g\"\n", s->drain_s);
    if (util_is_default(s) && drain_is_default(s))
        fprintf(f, "        # targetUtilization and drainSeconds: the defaults (%g, %g)\n",
                QUEUE_MODEL_DEFAULT_UTILISATION, QUEUE_MODEL_DEFAULT_DRAIN_S);
}

static void print_row(FILE *f, const char *what, const recommend_point_t *x, const char *knobs) {
    char rev[16] = "-", step[16] = "-";
    if (x->stability.syncs)
        snprintf(rev, sizeof rev, "%u", x->stability.reversals);
    if (x->stability.steps)
        snprintf(step, sizeof step, "%.1f", x->stability.max_step);
    fprintf(f, "%-13s %-34s %7.2f %7.2f%% %7.2f%% %8.1f %6u %5u %6u %4s %5s\n", what, knobs,
            x->gpu_hours, 100 * x->over_slo, 100 * x->warm_over_slo, x->wait_p99_s, x->cold_starts,
            x->peak_replicas, x->cancelled_starts, rev, step);
}

static void knobs_text(char *buf, size_t len, const recommend_setting_t *s) {
    if (s->util > 0)
        snprintf(buf, len, "util=%g drain=%gs window=%gs", s->util, s->drain_s, s->down_window_s);
    else
        snprintf(buf, len, "util=auto drain=%gs window=%gs", s->drain_s, s->down_window_s);
}

/* The stage table: each change beside the model as given. */
static void recommend_print_stages(FILE *f, const recommend_t *r) {
    if (r->stage_count == 0)
        return;
    const recommend_stage_t *b = &r->stage[0];
    fprintf(f,
            "\nwhich stage to attack: the recommended setting with one change each (node %.1f + "
            "image %.1f + weights %.1f s; a pod on a warm or lingering node pays the weights "
            "only)\n",
            b->m.node_s, b->m.image_s, b->m.weights_s);
    fprintf(f, "%-34s %7s %8s %8s %8s %6s %5s %8s %8s\n", "change", "GPU-h", "> SLO", "warm>SLO",
            "p99 (s)", "cold", "peak", "d GPU-h", "d > SLO");
    for (size_t i = 0; i < r->stage_count; i++) {
        const recommend_stage_t *x = &r->stage[i];
        fprintf(f, "%-34s %7.2f %7.2f%% %7.2f%% %8.1f %6u %5u", x->what, x->gpu_hours,
                100 * x->over_slo, 100 * x->warm_over_slo, x->wait_p99_s, x->cold_starts,
                x->peak_replicas);
        if (i == 0)
            fprintf(f, "\n");
        else
            fprintf(f, " %+8.2f %+7.2fp\n", x->gpu_hours - b->gpu_hours,
                    100 * (x->over_slo - b->over_slo));
    }
    fprintf(f, "(d: the change against the first row; p: percentage points; the warm pools "
               "are billed while idle, a lingering node until the cluster autoscaler removes "
               "it)\n");
}

void recommend_print(FILE *f, const recommend_t *r) {
    char kb[64];
    fprintf(f,
            "recommend: %zu requests, cold start %.0f s (node %.1f + image %.1f + weights %.1f "
            "s), SLO %.0f s; %zu settings of the queueing model and the online ideal simulated\n",
            r->requests, r->node_s + r->image_s + r->weights_s, r->node_s, r->image_s, r->weights_s,
            r->slo_s, r->count);
    fprintf(f,
            "rule: the fewest GPU-hours among the settings whose share over the SLO is within "
            "max(%.1f points, %.0f%% of the best) of the best (%.2f%%): <= %.2f%%\n",
            100 * RECOMMEND_TOL_ABS, 100 * RECOMMEND_TOL_REL, 100 * r->best_over_slo,
            100 * r->limit_over_slo);
    fprintf(f, "%-13s %-34s %7s %8s %8s %8s %6s %5s %6s %4s %5s\n", "", "setting", "GPU-h", "> SLO",
            "warm>SLO", "p99 (s)", "cold", "peak", "cancel", "rev", "step");
    knobs_text(kb, sizeof kb, &r->grid[r->chosen].s);
    print_row(f, "recommended", &r->grid[r->chosen], kb);
    knobs_text(kb, sizeof kb, &r->grid[r->defaults].s);
    print_row(f, "defaults", &r->grid[r->defaults], kb);
    snprintf(kb, sizeof kb, "util=%g drain=%gs hold=%gs", r->ideal.s.util, r->ideal.s.drain_s,
             r->ideal.s.down_window_s);
    print_row(f, "online ideal", &r->ideal, kb);
    fprintf(f,
            "floor: %.2f%% of the requests arrive within one cold start of a wake: over the SLO "
            "whatever an online policy does\n",
            100 * r->floor_over_slo);
    fprintf(f, "grid (* = within the tolerance, > = recommended):\n");
    for (size_t i = 0; i < r->count; i++) {
        knobs_text(kb, sizeof kb, &r->grid[i].s);
        print_row(f,
                  i == r->chosen                             ? "  >"
                  : r->grid[i].over_slo <= r->limit_over_slo ? "  *"
                                                             : "",
                  &r->grid[i], kb);
    }
    fprintf(f, "\n");
    recommend_snippet(f, r);
    recommend_print_stages(f, r);
}

static void json_point(FILE *f, const recommend_point_t *x, bool ideal) {
    fprintf(f,
            ideal ? "{\"util\": %g, \"drain_s\": %g, \"hold_s\": %g"
                  : "{\"target_utilization\": %g, \"drain_s\": %g, \"stabilization_window_s\": %g",
            x->s.util, x->s.drain_s, x->s.down_window_s);
    fprintf(f,
            ", \"gpu_hours\": %.4f, \"over_slo\": %.6f, \"warm_over_slo\": %.6f, "
            "\"wait_p99_s\": %.3f, \"cold_starts\": %u, \"peak_replicas\": %u, "
            "\"cancelled_starts\": %u, \"reversals\": ",
            x->gpu_hours, x->over_slo, x->warm_over_slo, x->wait_p99_s, x->cold_starts,
            x->peak_replicas, x->cancelled_starts);
    if (x->stability.syncs)
        fprintf(f, "%u", x->stability.reversals);
    else
        fprintf(f, "null");
    if (x->stability.steps)
        fprintf(f, ", \"max_step\": %.4f}", x->stability.max_step);
    else
        fprintf(f, ", \"max_step\": null}");
}

int recommend_json(const char *path, const recommend_t *r, char *err, size_t errlen) {
    FILE *f = report_json_open(path, err, errlen);
    if (!f)
        return KGS_EIO;
    fprintf(f,
            "{\"trace\": {\"requests\": %zu, \"slo_s\": %g, \"cold_start_s\": %g, "
            "\"node_s\": %g, \"image_s\": %g, \"weights_s\": %g},\n",
            r->requests, r->slo_s, r->node_s + r->image_s + r->weights_s, r->node_s, r->image_s,
            r->weights_s);
    fprintf(f,
            " \"rule\": {\"tolerance_abs\": %g, \"tolerance_rel\": %g, \"best_over_slo\": %.6f, "
            "\"limit_over_slo\": %.6f},\n",
            RECOMMEND_TOL_ABS, RECOMMEND_TOL_REL, r->best_over_slo, r->limit_over_slo);
    fprintf(f, " \"recommended\": ");
    json_point(f, &r->grid[r->chosen], false);
    fprintf(f, ",\n \"defaults\": ");
    json_point(f, &r->grid[r->defaults], false);
    fprintf(f, ",\n \"online_ideal\": ");
    json_point(f, &r->ideal, true);
    fprintf(f, ",\n \"floor\": {\"over_slo\": %.6f}", r->floor_over_slo);
    fprintf(f, ",\n \"grid\": [");
    for (size_t i = 0; i < r->count; i++) {
        fprintf(f, "%s\n  ", i ? "," : "");
        json_point(f, &r->grid[i], false);
    }
    fprintf(f, "\n ],\n \"stages\": [");
    for (size_t i = 0; i < r->stage_count; i++) {
        const recommend_stage_t *x = &r->stage[i];
        fprintf(f,
                "%s\n  {\"change\": \"%s\", \"node_s\": %g, \"image_s\": %g, \"weights_s\": "
                "%g, \"warm_pool\": %u, \"node_linger_s\": %g, \"gpu_hours\": %.4f, "
                "\"over_slo\": %.6f, \"warm_over_slo\": %.6f, \"wait_p99_s\": %.3f, "
                "\"cold_starts\": %u, \"peak_replicas\": %u}",
                i ? "," : "", x->key, x->m.node_s, x->m.image_s, x->m.weights_s, x->m.warm_pool,
                x->m.node_linger_s, x->gpu_hours, x->over_slo, x->warm_over_slo, x->wait_p99_s,
                x->cold_starts, x->peak_replicas);
    }
    const recommend_setting_t *s = &r->grid[r->chosen].s;
    fprintf(f,
            "\n ],\n \"scaled_object\": {\"minReplicaCount\": %d, \"maxReplicaCount\": %d, "
            "\"cooldownPeriod\": %.0f, \"stabilizationWindowSeconds\": %.0f, \"trigger_type\": "
            "\"%s\", \"metadata\": {\"metricType\": \"demand\"",
            r->min_replicas, r->max_replicas, r->cooldown_s, s->down_window_s,
            r->push ? "external-push" : "external");
    if (!util_is_default(s))
        fprintf(f, ", \"targetUtilization\": \"%g\"", s->util);
    if (!drain_is_default(s))
        fprintf(f, ", \"drainSeconds\": \"%g\"", s->drain_s);
    fprintf(f, "}}}\n");
    return report_json_close(f, path, err, errlen);
}
