/*
 * report.c - see report.h. The SVG is small multiples (one panel per
 * policy, same axes) rather than six lines on one chart: the differences
 * that matter (lag on a ramp, a cap, an oscillation) are visible at once.
 */
#include "report.h"

#include <errno.h>
#include <string.h>

#include "core/err.h"

void report_table(FILE *f, const sim_policy_t *p, const sim_result_t *r, size_t n,
                  double slo_wait_s) {
    fprintf(f, "%-46s %7s %8s %7s %7s %8s %8s %8s %6s %5s %10s\n", "policy", "GPU-h", "wait p50",
            "p95", "p99", "> SLO", "warm p99", "warm>SLO", "cold", "peak", "wake mean");
    fprintf(f, "%-46s %7s %8s %7s %7s %8s %8s %8s %6s %5s %10s\n", "", "", "(s)", "(s)", "(s)", "",
            "(s)", "", "starts", "reps", "/max (s)");
    for (size_t i = 0; i < n; i++) {
        char wake[32];
        if (r[i].wakes)
            snprintf(wake, sizeof wake, "%.0f/%.0f", r[i].wake_mean_s, r[i].wake_max_s);
        else
            snprintf(wake, sizeof wake, "-");
        char name[64];
        snprintf(name, sizeof name, "(%c) %s", p[i].id, p[i].name);
        fprintf(f, "%-46s %7.2f %8.2f %7.1f %7.1f %7.2f%% %8.1f %7.2f%% %6u %5u %10s\n", name,
                r[i].gpu_hours, r[i].wait_p50_s, r[i].wait_p95_s, r[i].wait_p99_s,
                100 * r[i].slo_miss_share, r[i].warm_p99_s, 100 * r[i].warm_miss_share,
                r[i].cold_starts, r[i].peak_replicas, wake);
    }
    fprintf(f,
            "(> SLO: share of requests whose queue wait exceeded %.0f s; warm: only requests that "
            "arrived while a replica was serving, i.e. not waiting for a wake from zero)\n",
            slo_wait_s);
}

static const char *const colours[] = {"#d62728", "#ff7f0e", "#9467bd",
                                      "#1f77b4", "#2ca02c", "#555555"};

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
