/*
 * trigger_slo.c - the latency objectives of a trigger (metricType slo, or
 * the same keys on metricType demand): twelve *Target durations and the
 * three keys of the clamp (sloMinRequests, sloMaxStep, sloTolerance). The
 * evaluation is core/demand_eval.c's slo_decide(); docs/configuration.md
 * ("Latency objectives") is the reference.
 */
#include <stdio.h>
#include <string.h>

#include "core/err.h"
#include "core/trigger_config_internal.h"

/* The first target key, K_TTFT_P50; the twelve follow signal-major. */
#define SLO_FIRST_KEY K_TTFT_P50
#define SLO_NKEYS (TRIGGER_SLO_SIGNALS * TRIGGER_SLO_QUANTILES)

static const char *const signal_words[TRIGGER_SLO_SIGNALS] = {
    "time to first token", "time per output token", "end-to-end latency", "queue time"};

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
                              "ttftP90Target, ttftP99Target, tpotP*Target, e2eP*Target or "
                              "queueTimeP*Target (P50, P90 or P99), a duration such as "
                              "\"500ms\"");
        if (first >= 0)
            return tc_fail(P,
                           "%s is set without a latency target (ttftP90Target, tpotP90Target, "
                           "...): it tunes how latency objectives scale",
                           tc_keys[first].name);
        return 0;
    }
    *any = true; /* given, if not all valid: the trigger has latency objectives */
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

/* Which latency histograms each engine exports (engine_metrics.c names
 * them, with the upstream files): bit s for slo_signal_t s. */
static unsigned engine_slo_signals(engine_t e) {
    switch (e) {
    case ENGINE_VLLM:
    case ENGINE_SGLANG:
        return 0xfu; /* TTFT, TPOT, E2E, queue */
    case ENGINE_TGI:
        return 0xeu; /* TPOT, E2E, queue: TGI has no time-to-first-token histogram */
    case ENGINE_TRITON:
        return 0x1u; /* TTFT only: nv_inference_first_response_histogram_ms */
    case ENGINE_EPP: /* read for its queues and pool gauges only (none is a server's) */
    case ENGINE_NONE:
        break;
    }
    return 0;
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
    const char *why = "";
    if (d->engine == ENGINE_TGI)
        why = "TGI exports no time-to-first-token histogram (its router records queue, "
              "per-token and request durations); use tpot*, e2e* or queueTime* targets";
    else if (d->engine == ENGINE_TRITON)
        why = "Triton exports only time to first token as a histogram "
              "(nv_inference_first_response_histogram_ms, for decoupled models with "
              "--metrics-config histogram_latencies=true); its queue and compute durations are "
              "cumulative counters, which give a mean (metricType triton_queue_wait_ms), not a "
              "quantile";
    else if (d->engine == ENGINE_EPP)
        return tc_fail(P,
                       "%s is set, but engine epp is read for its queues and pool gauges, "
                       "not for latency: scrape the model servers for latency (engine vllm, "
                       "sglang, tgi or triton, with their podSelector or endpoints)",
                       tc_keys[k].name);
    return tc_fail(P, "%s is set, but %s exports no %s histogram: %s", tc_keys[k].name,
                   tc_engine_names[d->engine], signal_words[s], why);
}
