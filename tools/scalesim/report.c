/*
 * report.c - see report.h. The SVG is small multiples (one panel per
 * policy, same axes) rather than six lines on one chart: the differences
 * that matter (lag on a ramp, a cap, an oscillation) are visible at once.
 */
#include "report.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "core/err.h"

void report_stability(const sim_result_t *r, char *reversals, size_t rlen, char *max_step,
                      size_t mlen) {
    if (r->stability.syncs)
        snprintf(reversals, rlen, "%u", r->stability.reversals);
    else
        snprintf(reversals, rlen, "-");
    if (r->stability.steps)
        snprintf(max_step, mlen, "%.1f", r->stability.max_step);
    else
        snprintf(max_step, mlen, "-");
}

void report_table(FILE *f, const sim_policy_t *p, const sim_result_t *r, size_t n,
                  double slo_wait_s) {
    fprintf(f, "%-46s %7s %8s %7s %7s %8s %8s %8s %6s %5s %10s %8s %8s %7s %7s %6s %4s %5s\n",
            "policy", "GPU-h", "wait p50", "p95", "p99", "> SLO", "warm p99", "warm>SLO", "cold",
            "peak", "wake mean", "TTFT p90", "TPOT p90", "TTFT", "TPOT", "cancel", "rev", "max");
    fprintf(f, "%-46s %7s %8s %7s %7s %8s %8s %8s %6s %5s %10s %8s %8s %7s %7s %6s %4s %5s\n", "",
            "", "(s)", "(s)", "(s)", "", "(s)", "", "starts", "reps", "/max (s)", "(s)", "(ms)",
            "ok", "ok", "starts", "", "step");
    for (size_t i = 0; i < n; i++) {
        char rev[16], step[16];
        report_stability(&r[i], rev, sizeof rev, step, sizeof step);
        char wake[32];
        if (r[i].wakes)
            snprintf(wake, sizeof wake, "%.0f/%.0f", r[i].wake_mean_s, r[i].wake_max_s);
        else
            snprintf(wake, sizeof wake, "-");
        char name[64];
        snprintf(name, sizeof name, "(%c) %s", p[i].id, p[i].name);
        fprintf(f,
                "%-46s %7.2f %8.2f %7.1f %7.1f %7.2f%% %8.1f %7.2f%% %6u %5u %10s %8.2f %8.1f "
                "%6.2f%% %6.2f%% %6u %4s %5s\n",
                name, r[i].gpu_hours, r[i].wait_p50_s, r[i].wait_p95_s, r[i].wait_p99_s,
                100 * r[i].slo_miss_share, r[i].warm_p99_s, 100 * r[i].warm_miss_share,
                r[i].cold_starts, r[i].peak_replicas, wake, r[i].ttft_p90_s, 1000 * r[i].tpot_p90_s,
                100 * r[i].ttft_ok_share, 100 * r[i].tpot_ok_share, r[i].cancelled_starts, rev,
                step);
    }
    fprintf(f,
            "(> SLO: share of requests whose queue wait exceeded %.0f s; warm: only requests that "
            "arrived while a replica was serving, i.e. not waiting for a wake from zero)\n",
            slo_wait_s);
    fprintf(f, "(cancel starts: pods deleted before they were Ready; rev: reversals and max "
               "step: the largest ratio between consecutive desired counts, of the replicas the "
               "trigger asked the HPA for at each sync; - : no HPA)\n");
    if (n)
        fprintf(f,
                "(TTFT: arrival at the queue to the first token; TPOT: decode time per output "
                "token; ok: share of requests with TTFT <= %.3g s, of those with output TPOT <= "
                "%.3g ms)\n",
                r[0].ttft_slo_s, 1000 * r[0].tpot_slo_s);
}

static const char *const colours[] = {"#d62728", "#ff7f0e", "#9467bd", "#1f77b4",
                                      "#2ca02c", "#e377c2", "#17becf", "#555555"};

int report_svg(const char *path, const sim_policy_t *p, const sim_result_t *r, size_t n,
               const float *demand, size_t points, double step_s, const char *title, char *err,
               size_t errlen) {
    FILE *f = fopen(path, "w");
    if (!f)
        return kgs_seterr(err, errlen, KGS_EIO, "write %s: %s", path, strerror(errno));
    const double W = 1100, left = 60, right = 20, ph = 120, gap = 28, top = 50;
    double H = top + n * (ph + gap) + 30;
    double ymax = 1;
    for (size_t k = 0; k < points; k++)
        if (demand[k] / 0.8 > ymax)
            ymax = demand[k] / 0.8;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < r[i].points; k++)
            if (r[i].replicas[k] > ymax)
                ymax = r[i].replicas[k];
    ymax = (double)(int)(ymax + 1.999);
    double xs = (W - left - right) / (double)(points > 1 ? points - 1 : 1);
    double span_min = (double)(points - 1) * step_s / 60;
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "font-family=\"sans-serif\" font-size=\"11\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
            "<text x=\"%.0f\" y=\"20\" font-size=\"14\">%s</text>\n"
            "<text x=\"%.0f\" y=\"38\" fill=\"#666\">grey: demand in replicas (work arriving / "
            "one replica's capacity, 60 s mean); line: billed replicas; dotted: serving "
            "replicas</text>\n",
            W, H, left, title, left);
    for (size_t i = 0; i < n; i++) {
        double y0 = top + i * (ph + gap) + 14;
        const char *c = colours[i % (sizeof colours / sizeof *colours)];
        fprintf(f,
                "<text x=\"%.0f\" y=\"%.0f\" fill=\"%s\">(%c) %s — %.2f GPU-h, p99 wait %.1f "
                "s</text>\n",
                left, y0 - 3, c, p[i].id, p[i].name, r[i].gpu_hours, r[i].wait_p99_s);
        fprintf(f,
                "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" "
                "stroke=\"#ccc\"/>\n",
                left, y0, W - left - right, ph);
        for (int g = 0; g <= 2; g++) {
            double v = ymax * g / 2;
            fprintf(f,
                    "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\" fill=\"#666\">%.0f</text>\n",
                    left - 4, y0 + ph - ph * g / 2 + 4, v);
        }
        /* demand area */
        fprintf(f, "<path fill=\"#ddd\" d=\"M%.1f %.1f", left, y0 + ph);
        for (size_t k = 0; k < points; k++)
            fprintf(f, " L%.1f %.1f", left + k * xs, y0 + ph - ph * demand[k] / ymax);
        fprintf(f, " L%.1f %.1f Z\"/>\n", left + (points - 1) * xs, y0 + ph);
        const float *series[2] = {r[i].replicas, r[i].serving};
        for (int sidx = 0; sidx < 2; sidx++) {
            fprintf(f, "<path fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"%s d=\"", c,
                    sidx ? "1" : "1.6", sidx ? " stroke-dasharray=\"2 2\"" : "");
            size_t np = r[i].points < points ? r[i].points : points;
            for (size_t k = 0; k < np; k++) {
                double y = y0 + ph - ph * series[sidx][k] / ymax;
                /* steps: horizontal then vertical */
                if (k == 0)
                    fprintf(f, "M%.1f %.1f", left, y);
                else
                    fprintf(f, " H%.1f V%.1f", left + k * xs, y);
            }
            fprintf(f, "\"/>\n");
        }
    }
    double yb = top + n * (ph + gap) + 4;
    for (int m = 0; m <= 10; m++) {
        double x = left + (W - left - right) * m / 10;
        fprintf(
            f, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\" fill=\"#666\">%.0f min</text>\n",
            x, yb, span_min * m / 10);
    }
    fprintf(f, "</svg>\n");
    int bad = ferror(f);
    if (fclose(f) || bad)
        return kgs_seterr(err, errlen, KGS_EIO, "write %s: I/O error", path);
    return 0;
}

int report_csv(const char *path, const sim_policy_t *p, const sim_result_t *r, size_t n,
               const float *demand, size_t points, double step_s, char *err, size_t errlen) {
    FILE *f = fopen(path, "w");
    if (!f)
        return kgs_seterr(err, errlen, KGS_EIO, "write %s: %s", path, strerror(errno));
    fprintf(f, "t_s,demand_replicas");
    for (size_t i = 0; i < n; i++)
        fprintf(f, ",%c_billed,%c_serving", p[i].id, p[i].id);
    fprintf(f, "\n");
    for (size_t k = 0; k < points; k++) {
        fprintf(f, "%.0f,%.3f", k * step_s, demand[k]);
        for (size_t i = 0; i < n; i++)
            if (k < r[i].points)
                fprintf(f, ",%.0f,%.0f", r[i].replicas[k], r[i].serving[k]);
            else
                fprintf(f, ",,");
        fprintf(f, "\n");
    }
    int bad = ferror(f);
    if (fclose(f) || bad)
        return kgs_seterr(err, errlen, KGS_EIO, "write %s: I/O error", path);
    return 0;
}

void report_pareto(report_frontier_t *f) {
    f->pareto_count = 0;
    for (size_t i = 0; i < f->count; i++) {
        const report_point_t *a = &f->points[i];
        bool dominated = false;
        for (size_t j = 0; j < f->count && !dominated; j++) {
            const report_point_t *b = &f->points[j];
            if (j == i)
                continue;
            bool le = b->gpu_hours <= a->gpu_hours && b->over_slo <= a->over_slo;
            bool lt = b->gpu_hours < a->gpu_hours || b->over_slo < a->over_slo;
            /* of two equal points keep the first */
            dominated = (le && lt) || (le && !lt && j < i);
        }
        if (!dominated)
            f->pareto[f->pareto_count++] = *a;
    }
    /* insertion sort by over_slo */
    for (size_t i = 1; i < f->pareto_count; i++) {
        report_point_t x = f->pareto[i];
        size_t j = i;
        while (j > 0 && f->pareto[j - 1].over_slo > x.over_slo) {
            f->pareto[j] = f->pareto[j - 1];
            j--;
        }
        f->pareto[j] = x;
    }
}

double report_frontier_at(const report_frontier_t *f, double over_slo) {
    /* pareto is ascending in over_slo and so descending in GPU-hours */
    double best = -1;
    for (size_t i = 0; i < f->pareto_count; i++) {
        const report_point_t *a = &f->pareto[i];
        if (a->over_slo <= over_slo) {
            best = a->gpu_hours;
            if (i + 1 < f->pareto_count && f->pareto[i + 1].over_slo > over_slo) {
                const report_point_t *b = &f->pareto[i + 1];
                double w = (over_slo - a->over_slo) / (b->over_slo - a->over_slo);
                best = a->gpu_hours + w * (b->gpu_hours - a->gpu_hours);
            }
        }
    }
    return best;
}

static void json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static const char *policy_key(const sim_policy_t *p, char *buf, size_t len) {
    if (p->key)
        return p->key;
    snprintf(buf, len, "%c", p->id);
    return buf;
}

FILE *report_json_open(const char *path, char *err, size_t errlen) {
    FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;
    if (!f)
        kgs_seterr(err, errlen, KGS_EIO, "write %s: %s", path, strerror(errno));
    return f;
}

int report_json_close(FILE *f, const char *path, char *err, size_t errlen) {
    int bad = ferror(f);
    if (f == stdout ? fflush(f) != 0 : fclose(f) != 0)
        bad = 1;
    if (bad)
        return kgs_seterr(err, errlen, KGS_EIO, "write %s: I/O error", path);
    return 0;
}

void report_json_stability(FILE *f, const sim_result_t *r) {
    const stability_t *st = &r->stability;
    fprintf(f, "\"cancelled_starts\": %u, \"hpa_syncs\": %u, \"reversals\": ", r->cancelled_starts,
            st->syncs);
    if (st->syncs)
        fprintf(f, "%u", st->reversals);
    else
        fprintf(f, "null");
    fprintf(f, ", \"max_step\": ");
    if (st->steps)
        fprintf(f, "%.4f", st->max_step);
    else
        fprintf(f, "null");
}

int report_json(const char *path, const sim_policy_t *p, const sim_result_t *r, size_t n,
                size_t floor_requests, size_t requests, const report_frontier_t *fr, size_t nfr,
                char *err, size_t errlen) {
    FILE *f = report_json_open(path, err, errlen);
    if (!f)
        return KGS_EIO;
    char kb[8];
    fprintf(f, "{\"policies\": [");
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%s\n  {\"key\": ", i ? "," : "");
        json_string(f, policy_key(&p[i], kb, sizeof kb));
        fprintf(f, ", \"label\": ");
        json_string(f, p[i].name);
        fprintf(f,
                ", \"gpu_hours\": %.4f, \"over_slo\": %.6f, \"warm_over_slo\": %.6f, "
                "\"cold_starts\": %u, \"peak_replicas\": %u, \"wait_p50_s\": %.3f, "
                "\"wait_p99_s\": %.3f, \"cold_requests\": %zu, \"preemptions\": %u, "
                "\"completed\": %zu, \"ttft_p50_s\": %.4f, \"ttft_p90_s\": %.4f, "
                "\"ttft_p99_s\": %.4f, \"tpot_p50_s\": %.5f, \"tpot_p90_s\": %.5f, "
                "\"tpot_p99_s\": %.5f, \"ttft_ok\": %.6f, \"tpot_ok\": %.6f, \"both_ok\": %.6f, ",
                r[i].gpu_hours, r[i].slo_miss_share, r[i].warm_miss_share, r[i].cold_starts,
                r[i].peak_replicas, r[i].wait_p50_s, r[i].wait_p99_s, r[i].cold_requests,
                r[i].preemptions, r[i].completed, r[i].ttft_p50_s, r[i].ttft_p90_s, r[i].ttft_p99_s,
                r[i].tpot_p50_s, r[i].tpot_p90_s, r[i].tpot_p99_s, r[i].ttft_ok_share,
                r[i].tpot_ok_share, r[i].both_ok_share);
        report_json_stability(f, &r[i]);
        fputc('}', f);
    }
    fprintf(f, "\n ],\n \"floor\": {\"requests\": %zu, \"over_slo\": %.6f}", floor_requests,
            requests ? (double)floor_requests / (double)requests : 0);
    fprintf(f, ",\n \"frontiers\": [");
    for (size_t i = 0; fr && i < nfr; i++) {
        fprintf(f, "%s\n  {\"key\": ", i ? "," : "");
        json_string(f, policy_key(fr[i].policy, kb, sizeof kb));
        fprintf(f, ", \"points\": [");
        for (size_t k = 0; k < fr[i].count; k++) {
            const report_point_t *x = &fr[i].points[k];
            bool on = false;
            for (size_t j = 0; j < fr[i].pareto_count; j++)
                on |= !strcmp(fr[i].pareto[j].knob, x->knob);
            fprintf(f, "%s{\"knob\": ", k ? ", " : "");
            json_string(f, x->knob);
            fprintf(f, ", \"gpu_hours\": %.4f, \"over_slo\": %.6f, \"pareto\": %s}", x->gpu_hours,
                    x->over_slo, on ? "true" : "false");
        }
        fprintf(f, "]}");
    }
    fprintf(f, "\n ]}\n");
    return report_json_close(f, path, err, errlen);
}

void report_frontier_table(FILE *f, const report_frontier_t *fr, size_t n) {
    fprintf(f, "frontiers (GPU-h against share over SLO; * = Pareto-optimal):\n");
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "(%c) %s\n", fr[i].policy->id, fr[i].policy->name);
        for (size_t k = 0; k < fr[i].count; k++) {
            const report_point_t *x = &fr[i].points[k];
            bool on = false;
            for (size_t j = 0; j < fr[i].pareto_count; j++)
                on |= !strcmp(fr[i].pareto[j].knob, x->knob);
            fprintf(f, "  %c %-34s %7.2f GPU-h %7.2f%% > SLO %7.2f%% warm\n", on ? '*' : ' ',
                    x->knob, x->gpu_hours, 100 * x->over_slo, 100 * x->warm_over_slo);
        }
    }
}

int report_frontier_svg(const char *path, const report_frontier_t *fr, size_t n, double floor_share,
                        const char *title, char *err, size_t errlen) {
    FILE *f = fopen(path, "w");
    if (!f)
        return kgs_seterr(err, errlen, KGS_EIO, "write %s: %s", path, strerror(errno));
    const double W = 1000, H = 560, left = 70, right = 320, top = 50, bottom = 50;
    const double pw = W - left - right, ph = H - top - bottom;
    /* x: share over SLO, log10 from 0.1 % to 100 % (0 drawn at 0.1 %) */
    const double xlo = -3, xhi = 0;
    double ymax = 1;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < fr[i].count; k++)
            if (fr[i].points[k].gpu_hours > ymax)
                ymax = fr[i].points[k].gpu_hours;
    ymax = ceil(ymax * 1.05);
#define XP(v) (left + pw * ((log10((v) < 1e-3 ? 1e-3 : (v)) - xlo) / (xhi - xlo)))
#define YP(v) (top + ph - ph * (v) / ymax)
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "font-family=\"sans-serif\" font-size=\"11\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
            "<text x=\"%.0f\" y=\"20\" font-size=\"14\">%s</text>\n"
            "<text x=\"%.0f\" y=\"38\" fill=\"#666\">each policy's knob sweep: dots every "
            "setting, line its Pareto frontier; lower left is better</text>\n"
            "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" "
            "stroke=\"#999\"/>\n",
            W, H, left, title, left, left, top, pw, ph);
    static const double ticks[] = {0.001, 0.01, 0.1, 1};
    static const char *const tick_label[] = {"&lt;=0.1%", "1%", "10%", "100%"};
    for (int t = 0; t < 4; t++) {
        double x = XP(ticks[t]);
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#eee\"/>\n"
                "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\" fill=\"#666\">%s</text>\n",
                x, top, x, top + ph, x, top + ph + 16, tick_label[t]);
    }
    fprintf(f,
            "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">share of requests waiting over "
            "the SLO (log)</text>\n",
            left + pw / 2, H - 10);
    for (int g = 0; g <= 4; g++) {
        double v = ymax * g / 4;
        fprintf(f,
                "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#eee\"/>\n"
                "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#666\">%.0f</text>\n",
                left, YP(v), left + pw, YP(v), left - 4, YP(v) + 4, v);
    }
    fprintf(f,
            "<text x=\"16\" y=\"%.0f\" transform=\"rotate(-90 16 %.0f)\" "
            "text-anchor=\"middle\">GPU-hours</text>\n",
            top + ph / 2, top + ph / 2);
    if (floor_share > 0)
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#000\" "
                "stroke-dasharray=\"5 4\"/>\n<text x=\"%.1f\" y=\"%.0f\" fill=\"#000\">floor "
                "%.1f%%: arrivals during a wake's cold start</text>\n",
                XP(floor_share), top, XP(floor_share), top + ph, XP(floor_share) + 4, top + 14,
                100 * floor_share);
    for (size_t i = 0; i < n; i++) {
        const char *c = colours[i % (sizeof colours / sizeof *colours)];
        for (size_t k = 0; k < fr[i].count; k++)
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\" opacity=\"0.5\"/>\n",
                    XP(fr[i].points[k].over_slo), YP(fr[i].points[k].gpu_hours), c);
        /* the frontier's own points solid: a one-point frontier has no line */
        for (size_t k = 0; k < fr[i].pareto_count; k++)
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"/>\n",
                    XP(fr[i].pareto[k].over_slo), YP(fr[i].pareto[k].gpu_hours), c);
        fprintf(f, "<path fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\" d=\"", c);
        for (size_t k = 0; k < fr[i].pareto_count; k++)
            fprintf(f, "%s%.1f %.1f", k ? " L" : "M", XP(fr[i].pareto[k].over_slo),
                    YP(fr[i].pareto[k].gpu_hours));
        fprintf(f, "\"/>\n");
        double ly = top + 10 + 18 * (double)i;
        fprintf(f,
                "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"%s\" "
                "stroke-width=\"3\"/>\n<text x=\"%.0f\" y=\"%.0f\">(%c) %s</text>\n",
                left + pw + 10, ly, left + pw + 26, ly, c, left + pw + 30, ly + 4, fr[i].policy->id,
                fr[i].policy->name);
    }
#undef XP
#undef YP
    fprintf(f, "</svg>\n");
    int bad = ferror(f);
    if (fclose(f) || bad)
        return kgs_seterr(err, errlen, KGS_EIO, "write %s: I/O error", path);
    return 0;
}
