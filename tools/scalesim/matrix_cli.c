/*
 * matrix_cli.c - see matrix_cli.h. The table goes to stdout as each case
 * finishes (to stderr when --json or --markdown owns stdout), then the
 * summary and the CPU time; --json and --markdown write the same figures
 * once the whole matrix has run.
 */
#include "matrix_cli.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/err.h"
#include "matrix.h"
#include "recommend.h"

void matrix_cli_usage(FILE *f) {
    fprintf(f,
            "usage: scalesim matrix [--traces LIST] [--speeds LIST] [--cold LIST] [--kv LIST]\n"
            "                       [--policies LETTERS] [--conv PATH] [--mooncake PATH]\n"
            "                       [--syn-duration S] [--json PATH|-] [--markdown PATH|-]\n"
            "the operating-point matrix (bench/README.md, \"Matrix\"): every trace x speed x cold\n"
            "start x KV cache; per case the online ideal swept over utilisation 0.3..0.9 x hold\n"
            "%d/%d s (drain %d s) and the chosen KEDA policies against its frontier\n"
            "  --traces LIST    of conv,mooncake,poisson,onoff,diurnal (all)\n"
            "  --speeds LIST    replay speeds; the generators' rate multipliers (1,2,4)\n"
            "  --cold LIST      cold starts in seconds, %d..%d (60,135,300)\n"
            "  --kv LIST        KV cache sizes in tokens (100000,400000)\n"
            "  --policies L     KEDA policies by letter, of abcdeosl (od: ours, composite)\n"
            "  --conv PATH      the Azure conv CSV (../shared/data/azure-llm-inference-2023/\n"
            "                   AzureLLMInferenceTrace_conv.csv, from the repository root)\n"
            "  --mooncake PATH  the Mooncake JSON Lines (../shared/data/mooncake-fast25/\n"
            "                   synthetic_trace.jsonl)\n"
            "  --syn-duration S every generator's duration (their own: 1800, 1800, 3600 s)\n"
            "  --json PATH|-    the figures as JSON; --markdown PATH|- as Markdown tables\n",
            MATRIX_IDEAL_HOLD_SHORT_S, MATRIX_IDEAL_HOLD_LONG_S, MATRIX_IDEAL_DRAIN_S,
            RECOMMEND_COLD_START_MIN_S, RECOMMEND_COLD_START_MAX_S);
}

/* "1,2,4" into v (at most MATRIX_MAX_VALUES numbers). */
static int parse_list(const char *flag, const char *s, double *v, size_t *n) {
    *n = 0;
    const char *p = s;
    while (s && *p) {
        char *end;
        double d = strtod(p, &end);
        if (end == p || (*end && *end != ',') || *n == MATRIX_MAX_VALUES) {
            fprintf(stderr,
                    "scalesim matrix: %s %s: expected up to %d numbers separated by commas\n", flag,
                    s, MATRIX_MAX_VALUES);
            return -1;
        }
        v[(*n)++] = d;
        p = *end ? end + 1 : end;
    }
    if (*n == 0) {
        fprintf(stderr, "scalesim matrix: %s needs a list of numbers, e.g. 1,2,4\n", flag);
        return -1;
    }
    return 0;
}

static int parse_traces(const char *s, bool *traces) {
    char buf[256];
    if (!s || strlen(s) >= sizeof buf) {
        fprintf(stderr, "scalesim matrix: --traces needs a list of conv,mooncake,poisson,onoff,"
                        "diurnal\n");
        return -1;
    }
    snprintf(buf, sizeof buf, "%s", s);
    memset(traces, 0, MATRIX_TRACES * sizeof *traces);
    for (char *save = NULL, *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        int t = matrix_trace_parse(w);
        if (t < 0) {
            fprintf(stderr,
                    "scalesim matrix: --traces %s: unknown trace %s (conv, mooncake, poisson, "
                    "onoff, diurnal)\n",
                    s, w);
            return -1;
        }
        traces[t] = true;
    }
    return 0;
}

typedef struct {
    matrix_config_t c;
    const char *json, *markdown;
} cli_t;

static int parse(int argc, char **argv, cli_t *cl) {
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            matrix_cli_usage(stdout);
            return 1;
        }
        if (!v) {
            fprintf(stderr, "scalesim matrix: %s needs a value\n", a);
            return -1;
        }
        if (!strcmp(a, "--traces"))
            rc = parse_traces(v, cl->c.traces);
        else if (!strcmp(a, "--speeds"))
            rc = parse_list(a, v, cl->c.speeds, &cl->c.nspeeds);
        else if (!strcmp(a, "--cold"))
            rc = parse_list(a, v, cl->c.cold_s, &cl->c.ncold);
        else if (!strcmp(a, "--kv"))
            rc = parse_list(a, v, cl->c.kv_tokens, &cl->c.nkv);
        else if (!strcmp(a, "--policies") && strlen(v) < sizeof cl->c.policies)
            snprintf(cl->c.policies, sizeof cl->c.policies, "%s", v);
        else if (!strcmp(a, "--conv"))
            cl->c.conv_path = v;
        else if (!strcmp(a, "--mooncake"))
            cl->c.mooncake_path = v;
        else if (!strcmp(a, "--json"))
            cl->json = v;
        else if (!strcmp(a, "--markdown"))
            cl->markdown = v;
        else if (!strcmp(a, "--syn-duration")) {
            char *end;
            cl->c.syn_duration_s = strtod(v, &end);
            if (*end || !(cl->c.syn_duration_s >= 60 && cl->c.syn_duration_s <= 86400)) {
                fprintf(stderr,
                        "scalesim matrix: --syn-duration %s: needs seconds in [60, 86400]\n", v);
                rc = -1;
            }
        } else {
            fprintf(stderr,
                    "scalesim matrix: unknown argument %s (--policies takes at most %d "
                    "letters)\n",
                    a, POLICY_COUNT);
            matrix_cli_usage(stderr);
            rc = -1;
        }
        if (rc)
            return -1;
        i++;
    }
    if (cl->json && cl->markdown && !strcmp(cl->json, "-") && !strcmp(cl->markdown, "-")) {
        fprintf(stderr, "scalesim matrix: --json - and --markdown - both want stdout; give one a "
                        "file\n");
        return -1;
    }
    return 0;
}

static void print_case(const matrix_case_t *c, size_t index, size_t total, void *ud) {
    (void)index;
    (void)total;
    FILE *f = ud;
    matrix_print_case(f, c);
    fflush(f);
}

static double wall_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int matrix_cli(int argc, char **argv) {
    cli_t cl = {0};
    matrix_config_default(&cl.c);
    int st = parse(argc, argv, &cl);
    if (st)
        return st > 0 ? 0 : 2;
    bool to_stdout =
        (cl.json && !strcmp(cl.json, "-")) || (cl.markdown && !strcmp(cl.markdown, "-"));
    FILE *txt = to_stdout ? stderr : stdout;
    char err[1024];
    matrix_case_t *cases;
    size_t n, sims;
    if (matrix_config_check(&cl.c, &n, err, sizeof err)) {
        fprintf(stderr, "scalesim %s\n", err);
        return 2;
    }
    clock_t c0 = clock();
    double w0 = wall_s();
    matrix_print_header(txt);
    int rc = matrix_run(&cl.c, print_case, txt, &cases, &n, &sims, err, sizeof err);
    if (rc) {
        fprintf(stderr, "scalesim %s\n", err);
        return 1;
    }
    matrix_summary_t s;
    int status = 0;
    if (matrix_summarise(cases, n, &s)) {
        fprintf(stderr, "scalesim matrix: out of memory\n");
        free(cases);
        return 1;
    }
    matrix_print_summary(txt, cases, &s);
    fprintf(txt, "(%zu cases, %zu simulations in %.1f s of CPU, %.1f s wall)\n", n, sims,
            (double)(clock() - c0) / CLOCKS_PER_SEC, wall_s() - w0);
    if (cl.json && matrix_json(cl.json, &cl.c, cases, n, &s, err, sizeof err)) {
        fprintf(stderr, "scalesim matrix: %s\n", err);
        status = 1;
    }
    if (cl.markdown && matrix_markdown(cl.markdown, cases, n, &s, err, sizeof err)) {
        fprintf(stderr, "scalesim matrix: %s\n", err);
        status = 1;
    }
    free(cases);
    return status;
}
