/*
 * trigger_slo.c - the latency objectives of a trigger (metricType slo, or
 * the same keys on metricType demand): fifteen *Target durations and the
 * three keys of the clamp (sloMinRequests, sloMaxStep, sloTolerance). The
 * evaluation is core/demand_eval.c's slo_decide(); docs/configuration.md
 * ("Latency objectives") is the reference.
 */
#include <stdio.h>
#include <string.h>

#include "core/demand_eval.h"
#include "core/engine_table.h"
#include "core/err.h"
#include "core/trigger_config_internal.h"

/* The first target key, K_TTFT_P50; the fifteen follow signal-major. */
#define SLO_FIRST_KEY K_TTFT_P50
#define SLO_NKEYS (TRIGGER_SLO_SIGNALS * TRIGGER_SLO_QUANTILES)

static const char *const signal_words[TRIGGER_SLO_SIGNALS] = {
    "time to first token", "per-request time per output token", "end-to-end latency", "queue time",
    "inter-token latency"};

int tc_resolve_slo(const metadata_pair_t *slot[K_COUNT], trigger_config_t *c, bool *any,
                   trigger_problems_t *P) {
    demand_config_t *d = &c->demand;
    demand_type_t t = d->type;
    bool slo = t == DEMAND_SLO, composite = t == DEMAND_COMPOSITE;
    unsigned before = P->count;
    *any = false;
    d->slo_mask = 0;
    memset(d->slo_target_s, 0, sizeof d->slo_target_s);
    d->slo_min_requests = 10;
    d->slo_max_step = 2;
    d->slo_tolerance = 0.1;
    int first = -1;
    bool given = false; /* a target key is set (valid or not) */
    for (int k = SLO_FIRST_KEY; k < SLO_FIRST_KEY + SLO_NKEYS; k++)
        if (slot[k]) {
            given = true;
            if (first < 0)
                first = k;
        }
    for (int k = K_SLO_MIN_REQUESTS; k <= K_SLO_TOLERANCE; k++)
        if (slot[k] && first < 0)
            first = k;
    if (!slo && !composite) {
        if (first >= 0)
            return tc_fail(P,
                           "%s is set, but it applies to metricType slo (or demand, to add "
                           "latency objectives to it); metricType is %s",
                           tc_keys[first].name,
                           t ? tc_demand_names[t] : tc_metric_names[c->metric_type]);
        return 0;
    }
    for (int k = SLO_FIRST_KEY; k < SLO_FIRST_KEY + SLO_NKEYS; k++) {
        uint64_t ns = 0;
        if (!slot[k] || tc_key_duration((key_id_t)k, tc_value_of(slot[k]), &ns, P) != 0)
            continue;
        int i = k - SLO_FIRST_KEY;
        d->slo_target_s[i / TRIGGER_SLO_QUANTILES][i % TRIGGER_SLO_QUANTILES] = (double)ns / 1e9;
        d->slo_mask |= 1u << (i / TRIGGER_SLO_QUANTILES);
        *any = true;
    }
    if (!given) {
        if (slo)
            return tc_fail(P, "metricType slo needs at least one latency target: ttftP50Target, "
                              "ttftP90Target, ttftP99Target, tpotP*Target, e2eP*Target, "
                              "queueTimeP*Target or itlP*Target (P50, P90 or P99), a duration "
                              "such as \"500ms\"");
        if (first >= 0)
            return tc_fail(P,
                           "%s is set without a latency target (ttftP90Target, tpotP90Target, "
                           "...): it tunes how latency objectives scale",
                           tc_keys[first].name);
        return 0;
    }
    *any = true; /* given, if not all valid: the trigger has latency objectives */
    /* inter-token latency counts tokens: its quantiles are judged on the
     * requests that finished in the window, the end-to-end histogram's
     * count, so that histogram is read beside it (demand_eval.c) */
    if (d->slo_mask & (1u << SLO_ITL))
        d->slo_mask |= 1u << SLO_E2E;
    long long n = 0;
    if (slot[K_SLO_MIN_REQUESTS] &&
        tc_key_int(K_SLO_MIN_REQUESTS, tc_value_of(slot[K_SLO_MIN_REQUESTS]), &n, P) == 0)
        d->slo_min_requests = (unsigned)n;
    char q[QBUF];
    double v = 0;
    if (slot[K_SLO_MAX_STEP]) {
        slice_t s = tc_value_of(slot[K_SLO_MAX_STEP]);
        if (!tc_parse_number(s.p, s.n, &v) || !(v > 1 && v <= 100))
            tc_fail(P, "invalid sloMaxStep %s: must be %s", kgs_quote(q, sizeof q, s.p, s.n),
                    tc_keys[K_SLO_MAX_STEP].must);
        else
            d->slo_max_step = v;
    }
    if (slot[K_SLO_TOLERANCE] &&
        tc_key_nonneg(K_SLO_TOLERANCE, tc_value_of(slot[K_SLO_TOLERANCE]), &v, P) == 0) {
        slice_t s = tc_value_of(slot[K_SLO_TOLERANCE]);
        if (v > 0.5)
            tc_fail(P, "invalid sloTolerance %s: must be %s", kgs_quote(q, sizeof q, s.p, s.n),
                    tc_keys[K_SLO_TOLERANCE].must);
        else
            d->slo_tolerance = v;
    }
    return P->count > before ? KGS_EINVAL : 0;
}

/* Which latency histograms each engine exports in some release: bit s
 * for slo_signal_t s, from the engine table (core/engine_table.c). */
static unsigned engine_slo_signals(engine_t e) {
    unsigned m = 0;
    for (int s = 0; s < SLO_SIGNAL_COUNT; s++)
        if (engine_table_primary(e, EMR_LATENCY, s))
            m |= 1u << s;
    return m;
}

/* The histograms engine e exports, for a message: "a (one observation
 * per request), b (...)". */
static void engine_slo_list(engine_t e, char *buf, size_t len) {
    size_t at = 0;
    buf[0] = '\0';
    for (int s = 0; s < SLO_SIGNAL_COUNT && at < len; s++) {
        const engine_metric_t *m = engine_table_primary(e, EMR_LATENCY, s);
        if (!m)
            continue;
        int w = snprintf(buf + at, len - at, "%s%s for %s targets (%s)", at ? ", " : "", m->name,
                         slo_signal_name((slo_signal_t)s), engine_table_obs_words(m->per));
        if (w < 0)
            return;
        at += (size_t)w;
    }
}

int tc_check_slo_engine(const trigger_config_t *c, trigger_problems_t *P) {
    const demand_config_t *d = &c->demand;
    if (!d->slo_mask)
        return 0;
    unsigned lacking = d->slo_mask & ~engine_slo_signals(d->engine);
    if (!lacking)
        return 0;
    int s = 0;
    while (!(lacking & (1u << s)))
        s++;
    int k = -1;
    for (int q = 0; q < TRIGGER_SLO_QUANTILES && k < 0; q++)
        if (d->slo_target_s[s][q] > 0)
            k = SLO_FIRST_KEY + s * TRIGGER_SLO_QUANTILES + q;
    if (k < 0) /* the end-to-end histogram read beside an itl target */
        for (int q = 0; q < TRIGGER_SLO_QUANTILES && k < 0; q++)
            if (d->slo_target_s[SLO_ITL][q] > 0)
                k = SLO_FIRST_KEY + SLO_ITL * TRIGGER_SLO_QUANTILES + q;
    if (d->engine == ENGINE_EPP)
        return tc_fail(P,
                       "%s is set, but engine epp is read for its queues and pool gauges, "
                       "not for latency: scrape the model servers for latency (engine vllm, "
                       "sglang, tgi or triton, with their podSelector or endpoints)",
                       tc_keys[k].name);
    char have[600];
    engine_slo_list(d->engine, have, sizeof have);
    const char *hint = "";
    if (s == SLO_TPOT && (engine_slo_signals(d->engine) & (1u << SLO_ITL)))
        hint = " (its per-token histogram is read by the itl targets: itlP90Target, ...)";
    else if (d->engine == ENGINE_TRITON)
        hint = " (its queue and compute durations are cumulative counters: metricType "
               "triton_queue_wait_ms gives their mean, not a quantile)";
    return tc_fail(P, "%s is set, but %s exports no %s histogram%s; it exports %s", tc_keys[k].name,
                   engine_table_product(d->engine), signal_words[s], hint, have[0] ? have : "none");
}
