/*
 * policies.c - policies (a)..(f). Every number here is a configuration a
 * user could write; bench/README.md explains each choice.
 *
 * (a) The Go system: NVML GPU utilisation, `aggregation: max` over the node
 *     it runs on, answered by whichever DaemonSet pod KEDA reaches
 *     (round robin), AverageValue target 70. GPU utilisation reads 0 with no
 *     pod, so it cannot wake from zero: minReplicaCount 1.
 * (b) dcgm-exporter -> Prometheus -> KEDA: sum of GPU utilisation over the
 *     workload (the correct total), target 70, seen 30 s late (15 s scrape +
 *     rule/query lag), pollingInterval 30 s, minReplicaCount 1.
 * (c) KEDA's queue scaler: the request queue, target 5 waiting per replica,
 *     pollingInterval 30 s (the default), pull only, minReplicaCount 0.
 * (d) Composite: metricType demand on queue + running + KV cache, external-push,
 *     sourceInterval 1 s, minReplicaCount 0.
 * (e) (d) with forecast: trend and coldStartSeconds = the model's cold start.
 * (o) Ours: what a user gets from the documented minimal `metricType:
 *     demand` trigger (docs/configuration.md, "The queueing model") with
 *     the recommended ScaledObject settings (HPA behavior: a 30 s
 *     scale-down window; cooldownPeriod 60): the same on every trace. The product's own
 *     evaluation decides, through demand_evaluate_inputs(), fed what the
 *     aggregator's hub would read (engine counters and gauges of Ready
 *     pods, the queue, the pod list with ages).
 * (i) The online ideal: knows the work arriving now and the work queued,
 *     exactly; no future; sets replicas each second, no KEDA, no HPA.
 * (f) The oracle: knows every future arrival and the cold start.
 * (s) Latency alone: metricType slo on the engines' histograms, p90 TTFT
 *     and p90 TPOT at the table's objectives, windowSeconds 30 (default),
 *     the clamp's defaults; ScaledObject as (o). Latency cannot wake from
 *     zero (no pod, no histogram): minReplicaCount 1.
 * (l) Ours + latency: (o) with the same two targets (the larger need of
 *     the queueing model and latency wins).
 * (d) is `composite`, the configuration before the queueing model; no
 * policy but (o), (s), (l) sets an HPA behavior (KEDA sets none unless the
 * ScaledObject does), so the legacy scale-up limit applies to them.
 */
#include "policies.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/forecast.h"

#define META(p, k, v)                                                                              \
    do {                                                                                           \
        (p)->meta[(p)->meta_count][0] = (k);                                                       \
        (p)->meta[(p)->meta_count][1] = (v);                                                       \
        (p)->meta_count++;                                                                         \
    } while (0)

static void base(sim_policy_t *p, char id, const char *name, int max_replicas) {
    memset(p, 0, sizeof *p);
    p->id = id;
    p->name = name;
    p->kind = SIM_POLICY_KEDA;
    p->metric_type = HPA_AVERAGE_VALUE;
    p->polling_s = 30;
    p->cooldown_s = 300;
    p->min_replicas = 0;
    p->max_replicas = max_replicas;
    p->signal_period_s = 1;
    p->oracle_util = 0.8;
    p->oracle_window_s = 60;
    p->key = NULL;
}

void policy_knobs_default(policy_knobs_t *k) {
    k->max_replicas = 32;
    k->alpha = FORECAST_DEFAULT_ALPHA;
    k->beta = FORECAST_DEFAULT_BETA;
    snprintf(k->target_queue, sizeof k->target_queue, "4");
    snprintf(k->target_running, sizeof k->target_running, "12");
    snprintf(k->target_kv, sizeof k->target_kv, "70");
    /* on the Pareto frontier of both bench traces (bench/README.md) */
    k->ideal_util = 0.5;
    k->ideal_drain_s = 10;
    k->ideal_window_s = 60;
    k->ideal_hold_s = 60;
    k->ttft_target_s = 0;
    k->tpot_target_s = 0;
    k->ttft_target[0] = k->tpot_target[0] = '\0';
}

/* the recommended ScaledObject of (o): external-push, the HPA's default
 * scale-up policy, a 30 s scale-down window and cooldownPeriod 60 (the
 * model holds replicas itself, with its learned keep-alive) */
static void recommended_scaledobject(sim_policy_t *p) {
    p->push = true; /* type: external-push */
    p->hpa_behavior = true;
    p->hpa_up_pods = 4;
    p->hpa_up_percent = 100;
    p->hpa_up_period_s = 15;
    p->hpa_down_window_s = 30;
    p->cooldown_s = 60;
}

/* seconds as a duration a user would write: whole ms as "20ms", else "us" */
static void duration(char *b, size_t n, double s) {
    double ms = s * 1e3;
    if (fabs(ms - round(ms)) < 1e-6)
        snprintf(b, n, "%.0fms", ms);
    else
        snprintf(b, n, "%.0fus", s * 1e6);
}

static void latency_targets(sim_policy_t *p, const policy_knobs_t *k) {
    META(p, "ttftP90Target", k->ttft_target);
    META(p, "tpotP90Target", k->tpot_target);
}

static void demand_keys(sim_policy_t *p, const policy_knobs_t *k) {
    META(p, "scalerAddress", "keda-gpu-scaler.keda.svc:6000");
    META(p, "metricType", "demand");
    META(p, "engine", "vllm");
    META(p, "vllmEndpoint", "http://llama.ml.svc:8000/metrics");
    META(p, "redisAddress", "redis.queues:6379");
    META(p, "redisListName", "llama-requests");
    META(p, "targetQueuePerReplica", k->target_queue);
    META(p, "targetRunningPerReplica", k->target_running);
    META(p, "targetKvCache", k->target_kv);
    META(p, "sourceInterval", "1s");
}

size_t policies_default(sim_policy_t *out, const sim_model_t *m, policy_knobs_t *k) {
    int max_replicas = k->max_replicas;
    sim_policy_t *p = &out[0];
    base(p, 'a', "Go system: node-local max GPU util", max_replicas);
    META(p, "scalerAddress", "keda-gpu-scaler.keda.svc:6000");
    META(p, "metricType", "gpu_utilization");
    META(p, "targetValue", "70");
    META(p, "aggregation", "max");
    p->min_replicas = 1;
    p->node_local = true;

    p = &out[1];
    base(p, 'b', "dcgm->Prometheus: sum GPU util, 30 s late", max_replicas);
    META(p, "scalerAddress", "prometheus");
    META(p, "metricType", "gpu_utilization");
    META(p, "targetValue", "70");
    META(p, "aggregation", "sum");
    p->min_replicas = 1;
    p->signal_period_s = 15;
    p->signal_delay_s = 30;

    p = &out[2];
    base(p, 'c', "KEDA queue scaler, 30 s poll", max_replicas);
    META(p, "scalerAddress", "redis");
    META(p, "metricType", "queue_length");
    META(p, "redisAddress", "redis.queues:6379");
    META(p, "redisListName", "llama-requests");
    META(p, "targetValue", "5");

    p = &out[3];
    base(p, 'd', "composite: demand queue+running+KV, push", max_replicas);
    demand_keys(p, k);
    p->push = true;

    p = &out[4];
    base(p, 'e', "composite + forecast: trend", max_replicas);
    demand_keys(p, k);
    p->push = true;
    /* The product's keys: trigger_config_parse() turns them into
     * demand.forecast_trend and demand.cold_start_s, which sim.c reads. */
    META(p, "forecast", "trend");
    snprintf(k->cold_start, sizeof k->cold_start, "%.0f", m->node_s + m->image_s + m->weights_s);
    META(p, "coldStartSeconds", k->cold_start);
    p->forecast_alpha = k->alpha;
    p->forecast_beta = k->beta;

    p = &out[5];
    base(p, 'o', "ours: documented minimal demand trigger", max_replicas);
    p->key = "ours";
    /* docs/configuration.md, "The queueing model": metricType demand with
     * no per-signal target, the engine's pods and the queue in front of
     * them, the product's defaults (headroom from the arrivals, drainSeconds
     * 10, cold start, capacity and keep-alive learned), and the recommended
     * ScaledObject: external-push, minReplicaCount 0, cooldownPeriod 60,
     * the HPA's default scale-up policy and a 30 s scale-down window. */
    META(p, "scalerAddress", "keda-gpu-scaler.keda.svc:6000");
    META(p, "metricType", "demand");
    META(p, "engine", "vllm");
    META(p, "podSelector", "app=llama");
    META(p, "redisAddress", "redis.queues:6379");
    META(p, "redisListName", "llama-requests");
    p->queue_model = true;
    recommended_scaledobject(p);
    sim_policy_t ours = *p;

    p = &out[6];
    base(p, 'i', "online ideal: present arrivals+backlog", max_replicas);
    p->key = "online-ideal";
    p->kind = SIM_POLICY_IDEAL;
    p->ideal_util = k->ideal_util;
    p->ideal_drain_s = k->ideal_drain_s;
    p->ideal_window_s = k->ideal_window_s;
    p->ideal_hold_s = k->ideal_hold_s;

    p = &out[7];
    base(p, 'f', "oracle: knows all future arrivals", max_replicas);
    p->key = "oracle";
    p->kind = SIM_POLICY_ORACLE;
    /* the latency targets: the table's objectives, as durations */
    sim_options_t o;
    sim_options_default(&o);
    double ttft = k->ttft_target_s > 0 ? k->ttft_target_s : sim_ttft_objective_s(m, &o);
    double tpot = k->tpot_target_s > 0 ? k->tpot_target_s : sim_tpot_objective_s(m, &o);
    duration(k->ttft_target, sizeof k->ttft_target, ttft);
    duration(k->tpot_target, sizeof k->tpot_target, tpot);

    p = &out[8];
    base(p, 's', "latency alone: slo p90 TTFT + p90 TPOT", max_replicas);
    p->key = "slo";
    META(p, "scalerAddress", "keda-gpu-scaler.keda.svc:6000");
    META(p, "metricType", "slo");
    META(p, "engine", "vllm");
    META(p, "podSelector", "app=llama");
    latency_targets(p, k);
    recommended_scaledobject(p);
    /* the latency clamp holds nothing itself (no keep-alive, unlike the
     * queueing model): the 120 s scale-down window it was measured with,
     * not the 30 s that (o) can afford */
    p->hpa_down_window_s = 120;
    p->min_replicas = 1;

    p = &out[9];
    ours.id = 'l';
    ours.name = "ours + latency: demand + the slo targets";
    ours.key = "ours+slo";
    *p = ours;
    latency_targets(p, k);

    out[3].key = "composite";
    out[0].key = "a";
    out[1].key = "b";
    out[2].key = "c";
    out[4].key = "e";
    return POLICY_COUNT;
}

/* Points base's metadata key at v's own value buffer. */
static void set_meta(policy_variant_t *v, const char *key, double x) {
    snprintf(v->value, sizeof v->value, "%g", x);
    snprintf(v->knob, sizeof v->knob, "%s=%s", key, v->value);
    for (unsigned i = 0; i < v->p.meta_count; i++)
        if (!strcmp(v->p.meta[i][0], key)) {
            v->p.meta[i][1] = v->value;
            return;
        }
}

size_t policy_variants(const sim_policy_t *b, policy_variant_t *out, size_t cap) {
    size_t n = 0;
    static const double gpu[] = {40, 55, 70, 85};
    static const double queue[] = {1, 2, 5, 10, 20};
    static const double demand[] = {2, 4, 8, 16, 32, 64};
    static const double oracle[] = {0.5, 0.6, 0.7, 0.8, 0.9, 1.0};
    static const double util[] = {0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9};
    static const double drain[] = {10, 30, 120};
    static const double hold[] = {60, 300};
    const double *v = NULL;
    size_t nv = 0;
    const char *key = NULL;
    if (b->kind == SIM_POLICY_IDEAL) {
        for (size_t a = 0; a < sizeof util / sizeof *util; a++)
            for (size_t d = 0; d < sizeof drain / sizeof *drain; d++)
                for (size_t h = 0; h < sizeof hold / sizeof *hold && n < cap; h++) {
                    policy_variant_t *x = &out[n++];
                    x->p = *b;
                    x->p.ideal_util = util[a];
                    x->p.ideal_drain_s = drain[d];
                    x->p.ideal_hold_s = hold[h];
                    x->value[0] = '\0';
                    snprintf(x->knob, sizeof x->knob, "util=%.1f drain=%.0fs hold=%.0fs", util[a],
                             drain[d], hold[h]);
                }
        return n;
    }
    if (b->queue_model) { /* the model's utilisation x drain target x scale-down window */
        static const double qutil[] = {0.5, 0.6, 0.7, 0.8};
        static const double qdrain[] = {10, 30};
        static const double qwin[] = {60, 120, 300};
        for (size_t a = 0; a < sizeof qutil / sizeof *qutil; a++)
            for (size_t d = 0; d < sizeof qdrain / sizeof *qdrain; d++)
                for (size_t w = 0; w < sizeof qwin / sizeof *qwin && n < cap; w++) {
                    policy_variant_t *x = &out[n++];
                    x->p = *b;
                    x->p.qm_util = qutil[a];
                    x->p.qm_drain_s = qdrain[d];
                    x->p.hpa_down_window_s = qwin[w];
                    x->value[0] = '\0';
                    snprintf(x->knob, sizeof x->knob, "util=%.1f drain=%.0fs window=%.0fs",
                             qutil[a], qdrain[d], qwin[w]);
                }
        return n;
    }
    bool slo = false;
    for (unsigned j = 0; j < b->meta_count; j++)
        slo |= !strcmp(b->meta[j][0], "metricType") && !strcmp(b->meta[j][1], "slo");
    if (slo) { /* latency alone: how far one evaluation may step (sloMaxStep) */
        static const double step[] = {1.5, 2, 4, 8, 16};
        for (size_t i = 0; i < sizeof step / sizeof *step && n < cap; i++) {
            policy_variant_t *x = &out[n++];
            x->p = *b;
            snprintf(x->value, sizeof x->value, "%g", step[i]);
            snprintf(x->knob, sizeof x->knob, "sloMaxStep=%s", x->value);
            if (x->p.meta_count < SIM_MAX_META)
                META(&x->p, "sloMaxStep", x->value);
        }
        return n;
    }
    if (b->kind == SIM_POLICY_ORACLE) {
        for (size_t i = 0; i < sizeof oracle / sizeof *oracle && n < cap; i++) {
            policy_variant_t *x = &out[n++];
            x->p = *b;
            x->p.oracle_util = oracle[i];
            x->value[0] = '\0';
            snprintf(x->knob, sizeof x->knob, "util=%.1f", oracle[i]);
        }
        return n;
    }
    for (unsigned i = 0; i < b->meta_count; i++) {
        const char *k = b->meta[i][0];
        if (!strcmp(k, "targetQueuePerReplica")) {
            key = k;
            v = demand;
            nv = sizeof demand / sizeof *demand;
        } else if (!strcmp(k, "targetValue") && !key) {
            key = k;
            bool q = false;
            for (unsigned j = 0; j < b->meta_count; j++)
                q |= !strcmp(b->meta[j][0], "metricType") && !strcmp(b->meta[j][1], "queue_length");
            v = q ? queue : gpu;
            nv = q ? sizeof queue / sizeof *queue : sizeof gpu / sizeof *gpu;
        }
    }
    for (size_t i = 0; key && i < nv && n < cap; i++) {
        policy_variant_t *x = &out[n++];
        x->p = *b;
        set_meta(x, key, v[i]);
    }
    return n;
}
