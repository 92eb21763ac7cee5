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
 * (d) Ours: metricType demand on queue + running + KV cache, external-push,
 *     sourceInterval 1 s, minReplicaCount 0.
 * (e) (d) with forecast: trend and coldStartSeconds = the model's cold start.
 * (f) The oracle.
 */
#include "policies.h"

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
}

void policy_knobs_default(policy_knobs_t *k) {
    k->max_replicas = 32;
    k->alpha = FORECAST_DEFAULT_ALPHA;
    k->beta = FORECAST_DEFAULT_BETA;
    snprintf(k->target_queue, sizeof k->target_queue, "4");
    snprintf(k->target_running, sizeof k->target_running, "12");
    snprintf(k->target_kv, sizeof k->target_kv, "70");
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
    base(p, 'd', "ours: demand queue+running+KV, push", max_replicas);
    demand_keys(p, k);
    p->push = true;

    p = &out[4];
    base(p, 'e', "ours + forecast: trend", max_replicas);
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
    base(p, 'f', "oracle: foresight of arrivals + cold starts", max_replicas);
    p->kind = SIM_POLICY_ORACLE;
    return POLICY_COUNT;
}
