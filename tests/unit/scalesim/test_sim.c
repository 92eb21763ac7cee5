/* test_sim.c - the simulator end to end on short synthetic traces: every
 * policy runs, the output is the same twice, the trace readers (CSV, JSON
 * Lines) and generators work, paged KV admits and preempts like vLLM, the
 * online ideal follows the load, the floor and the JSON are right, a node
 * lingering after its pod is billed and spares a quick re-wake its node
 * and image stages. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/err.h"
#include "policies.h"
#include "report.h"
#include "sim.h"
#include "trace.h"
#include "scalesim_test.h"

/* 2 req/s for 300 s, then 12 req/s for 300 s; 400 context, 100 output. */
static char *synthetic_csv(size_t *len) {
    size_t cap = 1 << 20, n = 0;
    char *b = malloc(cap);
    assert_non_null(b);
    n += (size_t)snprintf(b, cap, "TIMESTAMP,ContextTokens,GeneratedTokens\n");
    for (int s = 0; s < 600; s++) {
        int per = s < 300 ? 2 : 12;
        for (int k = 0; k < per; k++)
            n += (size_t)snprintf(b + n, cap - n, "%.3f,%d,%d\n", s + (double)k / per,
                                  400 + 10 * (k % 5), 100);
    }
    *len = n;
    return b;
}

/* The key of policy i of the default set. */
static const char *p_key(size_t i) {
    sim_model_t m;
    sim_model_default(&m);
    policy_knobs_t k;
    policy_knobs_default(&k);
    static sim_policy_t p[POLICY_COUNT];
    policies_default(p, &m, &k);
    return p[i].key ? p[i].key : "";
}

static void run_all(const trace_t *t, sim_result_t *res, size_t *n) {
    sim_model_t m;
    sim_model_default(&m);
    sim_options_t o;
    sim_options_default(&o);
    o.tail_s = 400;
    policy_knobs_t k;
    policy_knobs_default(&k);
    sim_policy_t p[POLICY_COUNT];
    *n = policies_default(p, &m, &k);
    char err[512];
    for (size_t i = 0; i < *n; i++) {
        int rc = sim_run(t, &m, &p[i], &o, &res[i], err, sizeof err);
        if (rc)
            fail_msg("policy %c: %s", p[i].id, err);
    }
}

static void test_sim_runs_every_policy_deterministically(void **state) {
    (void)state;
    size_t len;
    char *csv = synthetic_csv(&len);
    trace_options_t to;
    trace_options_default(&to);
    to.repetitions = 2;
    to.gap_s = 900;
    trace_t t;
    char err[256];
    assert_int_equal(trace_parse(csv, len, &to, &t, err, sizeof err), 0);
    free(csv);
    sim_result_t a[POLICY_COUNT], b[POLICY_COUNT];
    size_t n;
    run_all(&t, a, &n);
    run_all(&t, b, &n);
    for (size_t i = 0; i < n; i++) {
        assert_memory_equal(&a[i].gpu_hours, &b[i].gpu_hours, sizeof(double));
        assert_memory_equal(&a[i].wait_p99_s, &b[i].wait_p99_s, sizeof(double));
        assert_int_equal(a[i].cold_starts, b[i].cold_starts);
        assert_int_equal(a[i].points, b[i].points);
        assert_memory_equal(a[i].replicas, b[i].replicas, a[i].points * sizeof(float));
        assert_true(a[i].gpu_hours > 0);
        assert_int_equal(a[i].eval_errors, 0);
    }
    /* (d) scales to zero in the 900 s gap and wakes for the second run */
    assert_int_equal(a[3].wakes, 2);
    /* (c) waits for its 30 s poll on top of the cold start, (d) is pushed */
    assert_true(a[2].wake_mean_s > a[3].wake_mean_s);
    assert_true(a[3].wake_mean_s >= 135 && a[3].wake_mean_s < 137);
    /* the oracle starts from zero like every policy: it wakes once, for the
     * first pass; the second pass finds its replicas started ahead, so no
     * request that arrived while a replica served waits over the SLO */
    assert_string_equal(p_key(7), "oracle");
    assert_int_equal(a[7].wakes, 1);
    assert_true(a[7].warm_miss_share < 0.01);
    assert_true(a[7].cold_requests > 0);
    /* the online ideal wakes for both passes, and serves every request */
    assert_string_equal(p_key(6), "online-ideal");
    assert_int_equal(a[6].wakes, 2);
    assert_int_equal(a[6].unfinished, 0);
    /* the Go system's node-max cap: never more than ceil(100 / 70) = 2 */
    assert_true(a[0].peak_replicas <= 2);
    /* the stability figures are as deterministic; only KEDA policies have
     * HPA syncs (the yardsticks set replicas themselves) */
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(a[i].cancelled_starts, b[i].cancelled_starts);
        assert_int_equal(a[i].stability.syncs, b[i].stability.syncs);
        assert_int_equal(a[i].stability.reversals, b[i].stability.reversals);
        assert_memory_equal(&a[i].stability.max_step, &b[i].stability.max_step, sizeof(double));
        bool yardstick = i == 6 || i == 7;
        assert_true(yardstick ? a[i].stability.syncs == 0 : a[i].stability.syncs > 0);
    }
    for (size_t i = 0; i < n; i++) {
        sim_result_deinit(&a[i]);
        sim_result_deinit(&b[i]);
    }
    trace_deinit(&t);
}

static void test_trace_parses_azure_timestamps_and_applies_options(void **state) {
    (void)state;
    static const char csv[] = "TIMESTAMP,ContextTokens,GeneratedTokens\r\n"
                              "2023-11-16 23:59:59.5000000,374,44\r\n"
                              "2023-11-17 00:00:01.5000000,396,109\r\n"
                              "2023-11-17 00:00:03.5000000,10,1\r\n";
    trace_options_t o;
    trace_options_default(&o);
    o.time_scale = 2;
    o.repetitions = 3;
    o.gap_s = 10;
    trace_t t;
    char err[256];
    assert_int_equal(trace_parse(csv, sizeof csv - 1, &o, &t, err, sizeof err), 0);
    assert_int_equal(t.count, 9);
    assert_int_equal(t.source_count, 3);
    /* span 4 s / 2 = 2 s; repetition k starts at k x (2 + 10) */
    assert_float_equal(t.reqs[1].arrival_s, 1, 1e-9);
    assert_float_equal(t.reqs[3].arrival_s, 12, 1e-9);
    assert_float_equal(t.reqs[8].arrival_s, 26, 1e-9);
    assert_int_equal(t.reqs[1].ctx_tokens, 396);
    assert_int_equal(t.reqs[1].gen_tokens, 109);
    trace_deinit(&t);
    static const char bad[] = "h\n1,2\n";
    assert_int_equal(trace_parse(bad, sizeof bad - 1, &o, &t, err, sizeof err), KGS_EINVAL);
    assert_non_null(strstr(err, "line 2"));
}

static void test_trace_ramp_thins_the_edges_deterministically(void **state) {
    (void)state;
    size_t len;
    char *csv = synthetic_csv(&len);
    trace_options_t o;
    trace_options_default(&o);
    o.ramp_s = 100;
    trace_t a, b;
    char err[256];
    assert_int_equal(trace_parse(csv, len, &o, &a, err, sizeof err), 0);
    assert_int_equal(trace_parse(csv, len, &o, &b, err, sizeof err), 0);
    free(csv);
    assert_int_equal(a.count, b.count);
    assert_memory_equal(a.reqs, b.reqs, a.count * sizeof *a.reqs);
    size_t early = 0, mid = 0;
    for (size_t i = 0; i < a.count; i++) {
        if (a.reqs[i].arrival_s < 50)
            early++;
        else if (a.reqs[i].arrival_s >= 150 && a.reqs[i].arrival_s < 200)
            mid++;
    }
    /* 100 requests in [0, 50) kept with p = t / 100 (~25); all 100 in [150, 200) */
    assert_true(early > 10 && early < 45);
    assert_int_equal(mid, 100);
    trace_deinit(&a);
    trace_deinit(&b);
}

static void test_trace_reads_mooncake_jsonl_and_detects_the_format(void **state) {
    (void)state;
    /* keys in any order, other keys (hash_ids) ignored, a key name inside a
     * string value is not a key */
    static const char jl[] =
        "{\"timestamp\": 0, \"input_length\": 40160, \"output_length\": 6, \"hash_ids\": [0, 1]}\n"
        "\n"
        "{\"hash_ids\": [2], \"output_length\": 83, \"note\": \"timestamp\", \"timestamp\": 2500, "
        "\"input_length\": 18440}\r\n"
        "{\"input_length\": 10, \"output_length\": 1, \"timestamp\": 1000}";
    assert_int_equal(trace_detect(jl, sizeof jl - 1), TRACE_JSONL);
    assert_int_equal(trace_detect("  \n{", 4), TRACE_JSONL);
    assert_int_equal(trace_detect("TIMESTAMP,a,b\n", 14), TRACE_CSV);
    trace_options_t o;
    trace_options_default(&o);
    trace_t t;
    char err[256];
    assert_int_equal(trace_parse_jsonl(jl, sizeof jl - 1, &o, &t, err, sizeof err), 0);
    assert_int_equal(t.count, 3);
    /* milliseconds -> seconds, sorted by arrival */
    assert_float_equal(t.reqs[0].arrival_s, 0, 1e-9);
    assert_float_equal(t.reqs[1].arrival_s, 1, 1e-9);
    assert_float_equal(t.reqs[2].arrival_s, 2.5, 1e-9);
    assert_int_equal(t.reqs[0].ctx_tokens, 40160);
    assert_int_equal(t.reqs[0].gen_tokens, 6);
    assert_int_equal(t.reqs[2].ctx_tokens, 18440);
    assert_int_equal(t.reqs[2].gen_tokens, 83);
    trace_deinit(&t);
    static const char missing[] = "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1}\n"
                                  "{\"timestamp\": 1, \"output_length\": 1}\n";
    assert_int_equal(trace_parse_jsonl(missing, sizeof missing - 1, &o, &t, err, sizeof err),
                     KGS_EINVAL);
    assert_non_null(strstr(err, "line 2"));
    assert_non_null(strstr(err, "input_length"));
    static const char negative[] =
        "{\"timestamp\": -5, \"input_length\": 5, \"output_length\": 1}\n";
    assert_int_equal(trace_parse_jsonl(negative, sizeof negative - 1, &o, &t, err, sizeof err),
                     KGS_EINVAL);
    assert_non_null(strstr(err, "timestamp"));
}

static size_t count_in(const trace_t *t, double a, double b) {
    size_t n = 0;
    for (size_t i = 0; i < t->count; i++)
        if (t->reqs[i].arrival_s >= a && t->reqs[i].arrival_s < b)
            n++;
    return n;
}

static void test_trace_synthetic_generators_are_seeded_and_shaped(void **state) {
    (void)state;
    trace_options_t o;
    trace_options_default(&o);
    trace_synth_t g;
    trace_t a, b, c;
    char err[256];
    /* Poisson 5/s for 600 s: 3000 expected, sd 55; the same seed gives the
     * same trace, another seed another one */
    trace_synth_default(&g, TRACE_SYN_POISSON);
    assert_int_equal(trace_synthesize(&g, &o, &a, err, sizeof err), 0);
    assert_int_equal(trace_synthesize(&g, &o, &b, err, sizeof err), 0);
    assert_true(a.count > 3000 - 4 * 55 && a.count < 3000 + 4 * 55);
    assert_int_equal(a.count, b.count);
    assert_memory_equal(a.reqs, b.reqs, a.count * sizeof *a.reqs);
    g.seed = 2;
    assert_int_equal(trace_synthesize(&g, &o, &c, err, sizeof err), 0);
    assert_true(c.count != a.count || memcmp(a.reqs, c.reqs, a.count * sizeof *a.reqs) != 0);
    for (size_t i = 0; i < a.count; i++) {
        assert_true(a.reqs[i].ctx_tokens >= 500 && a.reqs[i].ctx_tokens <= 1500);
        assert_true(a.reqs[i].gen_tokens >= 100 && a.reqs[i].gen_tokens <= 300);
    }
    trace_deinit(&a);
    trace_deinit(&b);
    trace_deinit(&c);
    /* on-off: 60 s at 5/s, then 120 s of nothing, repeated; the trace
     * starts at its first arrival, so look at the second cycle */
    trace_synth_default(&g, TRACE_SYN_ONOFF);
    assert_int_equal(trace_synthesize(&g, &o, &a, err, sizeof err), 0);
    double t0 = 0; /* the first arrival was at ~0.2 s: shift back is < 2 s */
    assert_int_equal(count_in(&a, 180 + 2 - t0, 180 + 58 - t0) > 200, 1);
    assert_int_equal(count_in(&a, 60 + 2, 180 - 2), 0);
    assert_int_equal(count_in(&a, 240 + 2, 360 - 2), 0);
    trace_deinit(&a);
    /* diurnal from 1/s to 10/s over 600 s: the crest (300 s) carries far
     * more than the troughs (0 and 600 s) */
    trace_synth_default(&g, TRACE_SYN_DIURNAL);
    assert_int_equal(trace_synthesize(&g, &o, &a, err, sizeof err), 0);
    size_t crest = count_in(&a, 250, 350), trough = count_in(&a, 0, 50) + count_in(&a, 550, 600);
    assert_true(crest > 800 && crest < 1100); /* ~ 100 s x 9.8/s */
    assert_true(trough < 250);                /* ~ 100 s x 1.2/s */
    trace_deinit(&a);
    /* bad parameters name themselves */
    g.peak_rate = 0.5; /* below the trough */
    assert_int_equal(trace_synthesize(&g, &o, &a, err, sizeof err), KGS_EINVAL);
    assert_non_null(strstr(err, "peak"));
    assert_int_equal(trace_synth_kind_parse("onoff"), TRACE_SYN_ONOFF);
    assert_int_equal(trace_synth_kind_parse("sine"), -1);
}

static void test_sim_paged_kv_admits_on_the_prompt_and_preempts_the_newest(void **state) {
    (void)state;
    sim_model_t m;
    sim_model_default(&m);
    m.kv_tokens = 2000; /* 125 blocks of 16 */
    sim_options_t o;
    sim_options_default(&o);
    o.tail_s = 120;
    sim_policy_t p = one_replica();
    char err[256];
    /* four requests of 400 prompt + 400 output at t = 1: a whole-request
     * reservation (800 tokens each) would admit two; paged admission takes
     * all four (25 prompt blocks each: 100 of 125, watermark 1), then the
     * decode growth (25 blocks each) runs out and the newest are preempted
     * and recomputed; every request finishes */
    trace_request_t r[4];
    for (int i = 0; i < 4; i++)
        r[i] = (trace_request_t){.arrival_s = 1, .ctx_tokens = 400, .gen_tokens = 400};
    trace_t t = make_trace(r, 4);
    sim_result_t res;
    assert_int_equal(sim_run(&t, &m, &p, &o, &res, err, sizeof err), 0);
    assert_int_equal(res.unfinished, 0);
    assert_int_equal(res.completed, 4); /* the preempted ones too */
    assert_true(res.wait_max_s < 0.2);  /* all four scheduled at once */
    assert_true(res.preemptions >= 1);
    sim_result_deinit(&res);
    trace_deinit(&t);

    /* the head's long output does not block the next request: 1000 prompt
     * + 8000 output would reserve 9000 of 10000 tokens; paged, the 500-token
     * prompt behind it is scheduled at once */
    m.kv_tokens = 10000;
    trace_request_t h[2] = {{.arrival_s = 1, .ctx_tokens = 1000, .gen_tokens = 8000},
                            {.arrival_s = 1.5, .ctx_tokens = 1500, .gen_tokens = 10}};
    t = make_trace(h, 2);
    assert_int_equal(sim_run(&t, &m, &p, &o, &res, err, sizeof err), 0);
    assert_true(res.wait_max_s < 0.2);
    sim_result_deinit(&res);
    trace_deinit(&t);

    /* a prompt larger than the whole cache runs alone rather than never */
    m.kv_tokens = 2000;
    trace_request_t big[2] = {{.arrival_s = 1, .ctx_tokens = 5000, .gen_tokens = 50},
                              {.arrival_s = 1, .ctx_tokens = 100, .gen_tokens = 10}};
    t = make_trace(big, 2);
    assert_int_equal(sim_run(&t, &m, &p, &o, &res, err, sizeof err), 0);
    assert_int_equal(res.unfinished, 0);
    assert_int_equal(res.completed, 2);
    sim_result_deinit(&res);
    trace_deinit(&t);
}

static void test_sim_online_ideal_follows_a_steady_load(void **state) {
    (void)state;
    sim_model_t m;
    sim_model_default(&m);
    sim_options_t o;
    sim_options_default(&o);
    o.tail_s = 300;
    policy_knobs_t k;
    policy_knobs_default(&k);
    sim_policy_t p[POLICY_COUNT];
    policies_default(p, &m, &k);
    const sim_policy_t *ideal = &p[6];
    assert_int_equal(ideal->kind, SIM_POLICY_IDEAL);
    /* Poisson 10/s of 1000 + 200 tokens for 1200 s: 0.18 replica-s each on
     * average, 1.8 replicas of work; at util 0.5 lam / util = 3.6 -> 4
     * replicas once the backlog of the wake is gone */
    trace_synth_t g;
    trace_synth_default(&g, TRACE_SYN_POISSON);
    g.rate = 10;
    g.duration_s = 1200;
    trace_options_t to;
    trace_options_default(&to);
    trace_t t;
    char err[256];
    assert_int_equal(trace_synthesize(&g, &to, &t, err, sizeof err), 0);
    sim_result_t r;
    assert_int_equal(sim_run(&t, &m, ideal, &o, &r, err, sizeof err), 0);
    assert_int_equal(r.unfinished, 0);
    assert_int_equal(r.completed, t.count);
    assert_int_equal(r.wakes, 1);
    /* the last minutes of arrivals run on 4 serving replicas (5 when the
     * 60 s mean of a Poisson stream passes 2 replicas of work) */
    size_t lo = (size_t)(700 / o.timeline_step_s), hi = (size_t)(1150 / o.timeline_step_s);
    for (size_t i = lo; i < hi; i++)
        assert_true(r.serving[i] >= 4 && r.serving[i] <= 5);
    /* and it scales to zero after the arrivals stop (hold 60 s) */
    assert_true(r.replicas[r.points - 1] == 0);
    /* the misses are the wake's: what arrived before the backlog of the
     * first cold start was cleared (by 300 s); everything later meets the
     * SLO */
    assert_true(r.slo_miss_share > 0);
    assert_true(r.slo_miss_share <= (double)count_in(&t, 0, 300) / (double)t.count);
    /* a steady load: the ideal's want, read every 15 s, does not turn */
    assert_true(r.ideal_reversals <= 1);
    sim_result_deinit(&r);
    trace_deinit(&t);
    /* a diurnal load, 1 -> 80 -> 1 req/s every 600 s for 1800 s: the want
     * moves by more than one replica a sync and turns at crests and
     * troughs (the reference the matrix gives the policies' reversals): a
     * few times in three cycles, never every sync */
    trace_synth_default(&g, TRACE_SYN_DIURNAL);
    g.peak_rate = 80;
    g.duration_s = 1800;
    assert_int_equal(trace_synthesize(&g, &to, &t, err, sizeof err), 0);
    assert_int_equal(sim_run(&t, &m, ideal, &o, &r, err, sizeof err), 0);
    assert_true(r.ideal_reversals >= 2 && r.ideal_reversals <= 12);
    assert_int_equal(r.stability.syncs, 0); /* no HPA: its own figures stay undefined */
    sim_result_deinit(&r);
    trace_deinit(&t);
}

static void test_sim_floor_counts_arrivals_within_a_cold_start_of_a_wake(void **state) {
    (void)state;
    sim_model_t m;
    sim_model_default(&m); /* cold start 135 s; SLO 2 s: a wake's first 133 s */
    trace_request_t r[] = {{.arrival_s = 0},   {.arrival_s = 10},  {.arrival_s = 132.9},
                           {.arrival_s = 200}, {.arrival_s = 600}, {.arrival_s = 700},
                           {.arrival_s = 800}};
    trace_t t = make_trace(r, sizeof r / sizeof *r);
    /* wakes at 0 and 600 (after 400 s idle >= 300): 0, 10, 132.9; 600, 700 */
    assert_int_equal(sim_floor(&t, &m, 2, 300), 5);
    /* with idle 500 only the first wake counts */
    assert_int_equal(sim_floor(&t, &m, 2, 500), 3);
    /* an SLO longer than the cold start: no floor */
    assert_int_equal(sim_floor(&t, &m, 200, 300), 0);
    /* a node lingering after a scale to zero leaves the weights, 30 s: a
     * wake's first 28 s (0, 10; 600) */
    m.node_linger_s = 600;
    assert_int_equal(sim_floor(&t, &m, 2, 300), 3);
    trace_deinit(&t);
}

static void test_report_json_has_every_key_and_fractions(void **state) {
    (void)state;
    size_t len;
    char *csv = synthetic_csv(&len);
    trace_options_t to;
    trace_options_default(&to);
    trace_t t;
    char err[256];
    assert_int_equal(trace_parse(csv, len, &to, &t, err, sizeof err), 0);
    free(csv);
    sim_result_t res[POLICY_COUNT];
    size_t n;
    run_all(&t, res, &n);
    sim_model_t m;
    sim_model_default(&m);
    policy_knobs_t k;
    policy_knobs_default(&k);
    sim_policy_t p[POLICY_COUNT];
    policies_default(p, &m, &k);
    char path[] = "/tmp/scalesim-json-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(report_json(path, p, res, n, 7, t.count, NULL, 0, err, sizeof err), 0);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char buf[1 << 16];
    size_t got = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    unlink(path);
    buf[got] = '\0';
    static const char *const keys[] = {
        "\"key\": \"composite\"", "\"key\": \"ours\"", "\"key\": \"online-ideal\"",
        "\"key\": \"oracle\"",    "\"gpu_hours\"",     "\"over_slo\"",
        "\"warm_over_slo\"",      "\"cold_starts\"",   "\"peak_replicas\"",
        "\"wait_p50_s\"",         "\"wait_p99_s\"",    "\"label\"",
        "\"cancelled_starts\"",   "\"hpa_syncs\"",     "\"reversals\"",
        "\"max_step\"",           "\"floor\""};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        if (!strstr(buf, keys[i]))
            fail_msg("JSON lacks %s:\n%s", keys[i], buf);
    /* the yardsticks have no HPA: their reversals and max step are null */
    const char *ideal = strstr(buf, "\"key\": \"online-ideal\"");
    assert_non_null(ideal);
    const char *end = strchr(ideal, '}');
    assert_non_null(end);
    const char *rev = strstr(ideal, "\"reversals\": null, \"max_step\": null");
    assert_true(rev && rev < end);
    /* shares are fractions */
    for (const char *q = buf; (q = strstr(q, "\"over_slo\": ")) != NULL; q++) {
        double v = strtod(q + 12, NULL);
        assert_true(v >= 0 && v <= 1);
    }
    for (size_t i = 0; i < n; i++)
        sim_result_deinit(&res[i]);
    trace_deinit(&t);
}

static void test_sim_victim_order_follows_the_replicaset_controller(void **state) {
    (void)state;
    const double now = 1000;
    /* waiting for a node, pulling its image, loading weights, Ready */
    sim_victim_t unsched = {.created_s = 900, .uid = 1};
    sim_victim_t pulling = {.scheduled = true, .created_s = 990, .uid = 2};
    sim_victim_t loading = {.scheduled = true, .running = true, .created_s = 995, .uid = 3};
    sim_victim_t ready = {.scheduled = true,
                          .running = true,
                          .ready = true,
                          .created_s = 999,
                          .ready_s = 999,
                          .uid = 4};
    /* 1-3: unscheduled, then Pending, then not Ready, whatever their age */
    assert_true(sim_victim_before(&unsched, &pulling, now));
    assert_false(sim_victim_before(&pulling, &unsched, now));
    assert_true(sim_victim_before(&pulling, &loading, now));
    assert_false(sim_victim_before(&loading, &pulling, now));
    assert_true(sim_victim_before(&loading, &ready, now));
    assert_false(sim_victim_before(&ready, &loading, now));
    /* 6: of two Ready pods the one Ready for less time: 10 s ago is 2^33 ns,
     * 100 s ago 2^36 ns */
    sim_victim_t r10 = ready, r100 = ready;
    r10.ready_s = now - 10;
    r100.ready_s = now - 100;
    r100.uid = 5;
    assert_true(sim_victim_before(&r10, &r100, now));
    assert_false(sim_victim_before(&r100, &r10, now));
    /* within one power of two (100 s and 101 s ago: both 2^36 ns) the uid
     * decides, one way only */
    sim_victim_t r101 = r100;
    r101.ready_s = now - 101;
    r101.uid = 6;
    assert_true(sim_victim_before(&r100, &r101, now) != sim_victim_before(&r101, &r100, now));
    /* 8: of two pods waiting for a node the newer: 5 s (2^32 ns) before 60 s
     * (2^35 ns) */
    sim_victim_t new5 = unsched, old60 = unsched;
    new5.created_s = now - 5;
    old60.created_s = now - 60;
    old60.uid = 7;
    assert_true(sim_victim_before(&new5, &old60, now));
    assert_false(sim_victim_before(&old60, &new5, now));
    /* the same pod: neither first */
    assert_false(sim_victim_before(&ready, &ready, now));
}

/* One Ready replica busy for 40 s: the GPU trigger (target 70) asks for a
 * second one at the sync at 15 s; at the sync at 45 s the request is done,
 * utilisation reads 0 and, with no scale-down window, the HPA goes back to
 * its minimum of 1 while the new pod still waits for its node (135 s to
 * Ready): the controller deletes the pod that is not Ready, a cancelled
 * start, and keeps the one serving. */
static void test_sim_counts_a_start_cancelled_before_ready(void **state) {
    (void)state;
    sim_model_t m;
    sim_model_default(&m);
    sim_options_t o;
    sim_options_default(&o);
    o.tail_s = 120;
    sim_policy_t p = one_replica();
    p.max_replicas = 4;
    p.signal_period_s = 1;
    p.signal_delay_s = 0;
    p.hpa_behavior = true;
    p.hpa_up_pods = 4;
    p.hpa_up_percent = 100;
    p.hpa_up_period_s = 15;
    p.hpa_down_window_s = 0;
    const trace_request_t r[] = {{0, 1000, 4000}}; /* 0.1 s prefill, 40 s of decode */
    trace_t t = make_trace(r, 1);
    sim_result_t res;
    char err[256];
    assert_int_equal(sim_run(&t, &m, &p, &o, &res, err, sizeof err), 0);
    assert_int_equal(res.completed, 1);
    assert_int_equal(res.cold_starts, 1);
    assert_int_equal(res.cancelled_starts, 1);
    /* the HPA asked for 2, 2, then 0 (the minimum clamps it to 1): no
     * reversal, and the one pair both > 0 is 2 -> 2 */
    assert_true(res.stability.syncs >= 3);
    assert_int_equal(res.stability.reversals, 0);
    assert_true(res.stability.max_step == 1);
    sim_result_deinit(&res);
    free(t.reqs);
}

static void test_report_pareto_keeps_the_non_dominated_points(void **state) {
    (void)state;
    report_frontier_t f;
    memset(&f, 0, sizeof f);
    static const double pts[][2] = {{10, 0.05}, {8, 0.10}, {9, 0.12}, {5, 0.30}, {12, 0.05}};
    for (size_t i = 0; i < 5; i++) {
        f.points[i].gpu_hours = pts[i][0];
        f.points[i].over_slo = pts[i][1];
        snprintf(f.points[i].knob, sizeof f.points[i].knob, "k%zu", i);
    }
    f.count = 5;
    report_pareto(&f);
    /* (9, 0.12) is beaten by (8, 0.10), (12, 0.05) by (10, 0.05) */
    assert_int_equal(f.pareto_count, 3);
    assert_string_equal(f.pareto[0].knob, "k0");
    assert_string_equal(f.pareto[1].knob, "k1");
    assert_string_equal(f.pareto[2].knob, "k3");
    /* at 0.2: between (8, 0.10) and (5, 0.30): 6.5; better than any: none */
    assert_float_equal(report_frontier_at(&f, 0.2), 6.5, 1e-9);
    assert_true(report_frontier_at(&f, 0.01) < 0);
    assert_float_equal(report_frontier_at(&f, 0.5), 5, 1e-9);
}

/* One short request at 0 and one at a1 through the online ideal (hold 60 s):
 * each wakes a pod from zero, which leaves after the hold. */
static void linger_run(double linger_s, double a1, double tail_s, sim_result_t *res) {
    sim_model_t m;
    sim_model_default(&m); /* node 60 + image 45 + weights 30 s */
    m.node_linger_s = linger_s;
    sim_options_t o;
    sim_options_default(&o);
    o.tail_s = tail_s;
    policy_knobs_t k;
    policy_knobs_default(&k);
    sim_policy_t p[POLICY_COUNT];
    policies_default(p, &m, &k);
    assert_int_equal(p[6].kind, SIM_POLICY_IDEAL);
    const trace_request_t r[] = {{0, 100, 1}, {a1, 100, 1}};
    trace_t t = make_trace(r, 2);
    char err[256];
    assert_int_equal(sim_run(&t, &m, &p[6], &o, res, err, sizeof err), 0);
    assert_int_equal(res->completed, 2);
    assert_int_equal(res->cold_starts, 2);
    assert_int_equal(res->wakes, 2);
    free(t.reqs);
}

static void test_sim_node_linger_skips_the_node_stage_and_is_billed(void **state) {
    (void)state;
    sim_result_t r0, rl;
    /* the first pod: created at 0, on its node at 60 (billed from then),
     * Ready at 135, serves at once, the ideal releases it after its 60 s
     * hold; the second request comes 600 s later */
    linger_run(0, 600, 2000, &r0);
    assert_true(fabs(r0.wake_max_s - 135) < 0.2);
    assert_true(fabs(2 * r0.wake_mean_s - 270) < 0.2);
    /* a 300 s linger is over by then: the second wake pays all 135 s, the
     * pods are the same, and each of the two left nodes is billed 300 s
     * more (the run ends 2000 s after the last arrival, past both) */
    linger_run(300, 600, 2000, &rl);
    assert_true(fabs(2 * rl.wake_mean_s - 270) < 0.2);
    assert_true(fabs(3600 * (rl.gpu_hours - r0.gpu_hours) - 2 * 300) < 0.2);
    sim_result_deinit(&rl);
    /* a 900 s linger is not: the second pod lands on the first one's node
     * and pays the weights only, 30 s; the node is billed without a break
     * from 60 s to the end of the run (600 + 300: the second pod's node
     * lingers past it) */
    linger_run(900, 600, 300, &rl);
    assert_true(fabs(rl.wake_max_s - 135) < 0.2);
    assert_true(fabs(2 * rl.wake_mean_s - (135 + 30)) < 0.2);
    assert_true(fabs(3600 * rl.gpu_hours - (900 - 60)) < 0.2);
    sim_result_deinit(&rl);
    sim_result_deinit(&r0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_runs_every_policy_deterministically),
        cmocka_unit_test(test_trace_parses_azure_timestamps_and_applies_options),
        cmocka_unit_test(test_trace_ramp_thins_the_edges_deterministically),
        cmocka_unit_test(test_trace_reads_mooncake_jsonl_and_detects_the_format),
        cmocka_unit_test(test_trace_synthetic_generators_are_seeded_and_shaped),
        cmocka_unit_test(test_sim_paged_kv_admits_on_the_prompt_and_preempts_the_newest),
        cmocka_unit_test(test_sim_online_ideal_follows_a_steady_load),
        cmocka_unit_test(test_sim_floor_counts_arrivals_within_a_cold_start_of_a_wake),
        cmocka_unit_test(test_report_json_has_every_key_and_fractions),
        cmocka_unit_test(test_sim_victim_order_follows_the_replicaset_controller),
        cmocka_unit_test(test_sim_counts_a_start_cancelled_before_ready),
        cmocka_unit_test(test_report_pareto_keeps_the_non_dominated_points),
        cmocka_unit_test(test_sim_node_linger_skips_the_node_stage_and_is_billed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
