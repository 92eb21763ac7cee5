/*
 * keda.c - KEDA and the HPA, played against a real keda-gpu-scaler over
 * gRPC, with the calls KEDA makes (../shared/reference/keda-contract.md,
 * sections 2.4-2.7) on our own client (net/grpc_client.h), the way
 * `keda-gpu-scaler query` makes them (src/server/query.c):
 *
 * - KEDA's scale loop, every pollingInterval: GetMetricSpec, GetMetrics,
 *   IsActive; active at 0 replicas wakes the workload (0 -> 1), inactive
 *   with replicas > 0 writes 0 once cooldownPeriod has passed since the
 *   last active answer (hpa_keda_poll);
 * - the external-push trigger's StreamIsActive: a `true` wakes the workload
 *   at once (a `false` is ignored, as KEDA does); reopened after 2 s,
 *   doubling to 60 s, back to 2 s after a stream that ended OK;
 * - the HPA, every sync period while replicas >= 1: the same three calls
 *   (KEDA's metrics server makes them), then ceil(value / target), the
 *   tolerance, the scale-down stabilisation window and the scale-up
 *   policies (hpa_sync), clamped to [1, maxReplicaCount];
 * - after each round, the scaler's Explain, for the screen.
 * One round at a time on the one connection; a timer that fires during a
 * round runs its round right after. Periods are KEDA's and Kubernetes'
 * defaults (and the docs' scale-down window), divided by the time scale.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "core/err.h"
#include "explain.h"
#include "net/grpc_frame.h"

/* Wall nanoseconds for model seconds. */
static uint64_t wall_ns(const app_t *a, double model_s) {
    double ns = model_s / a->o.time_scale * 1e9;
    return ns > 0 ? (uint64_t)ns : 0;
}

static void arm(app_t *a, loop_timer_t *t, double model_s) {
    loop_timer_start(a->loop, t, clock_add_sat(loop_now(a->loop), wall_ns(a, model_s)));
}

/* ---- messages -------------------------------------------------------- */

static uint8_t *pack(const ProtobufCMessage *m, size_t *len) {
    *len = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = malloc(*len ? *len : 1);
    if (buf)
        protobuf_c_message_pack(m, buf);
    return buf;
}

/* A trigger: its metadata, and the ScaledObject it belongs to. */
typedef struct {
    const char *const *keys, *const *values;
    size_t n;
    const char *name;
} trigger_t;

static trigger_t demand_trigger(const lfs_keda_t *k) {
    return (trigger_t){k->keys, k->values, k->nmeta, "llama"};
}

static trigger_t gpu_trigger(const lfs_keda_t *k) {
    return (trigger_t){k->gpu_keys, k->gpu_values, 2, "llama-gpu"};
}

/* The ScaledObjectRef (namespace demo) with the trigger's metadata;
 * entries live in the caller's arrays. */
static void build_ref(const trigger_t *t, Externalscaler__ScaledObjectRef *ref,
                      Externalscaler__ScaledObjectRef__ScalerMetadataEntry *entries,
                      Externalscaler__ScaledObjectRef__ScalerMetadataEntry **ptrs) {
    externalscaler__scaled_object_ref__init(ref);
    ref->name = (char *)t->name;
    ref->namespace_ = "demo";
    for (size_t i = 0; i < t->n; i++) {
        externalscaler__scaled_object_ref__scaler_metadata_entry__init(&entries[i]);
        entries[i].key = (char *)t->keys[i];
        entries[i].value = (char *)t->values[i];
        ptrs[i] = &entries[i];
    }
    ref->n_scalermetadata = t->n;
    ref->scalermetadata = ptrs;
}

/* A call; when the connection has closed and this runs from a timer (not a
 * callback of the old connection), on a new connection, as KEDA's channel
 * reconnects. */
static int client_call(app_t *a, const char *path, const uint8_t *buf, size_t len,
                       uint64_t timeout_ns, grpc_client_message_cb on_msg,
                       grpc_client_done_cb on_done) {
    lfs_keda_t *k = &a->k;
    int rc = grpc_client_call(k->client, path, buf, len, timeout_ns, on_msg, on_done, a, NULL);
    if (rc != KGS_ESTATE || !k->may_reconnect)
        return rc;
    grpc_client_t *fresh;
    char err[256];
    if (grpc_client_connect(a->loop, &k->co, &fresh, err, sizeof err) != 0)
        return rc;
    grpc_client_free(k->client); /* closed: no call of ours is pending on it */
    k->client = fresh;
    return grpc_client_call(k->client, path, buf, len, timeout_ns, on_msg, on_done, a, NULL);
}

/* KEDA's HPA-path budget per call (keda-contract.md 2.4). */
#define CALL_TIMEOUT_NS (3 * NS_PER_SEC)

/* A call about trigger t: its ScaledObjectRef, or (metric_name not NULL)
 * a GetMetricsRequest for that metric. */
static int call_about(app_t *a, const trigger_t *t, const char *path, const char *metric_name,
                      grpc_client_message_cb on_msg, grpc_client_done_cb on_done) {
    Externalscaler__ScaledObjectRef ref;
    Externalscaler__ScaledObjectRef__ScalerMetadataEntry entries[LFS_MAX_METADATA + 8];
    Externalscaler__ScaledObjectRef__ScalerMetadataEntry *ptrs[LFS_MAX_METADATA + 8];
    build_ref(t, &ref, entries, ptrs);
    size_t len;
    uint8_t *buf;
    uint64_t timeout_ns = strstr(path, "/StreamIsActive") ? 0 : CALL_TIMEOUT_NS;
    if (metric_name) {
        Externalscaler__GetMetricsRequest req = EXTERNALSCALER__GET_METRICS_REQUEST__INIT;
        req.scaledobjectref = &ref;
        req.metricname = (char *)metric_name;
        buf = pack(&req.base, &len);
    } else {
        buf = pack(&ref.base, &len);
    }
    int rc = buf ? client_call(a, path, buf, len, timeout_ns, on_msg, on_done) : KGS_ENOMEM;
    free(buf);
    return rc;
}

/* ---- the round --------------------------------------------------------- */

static void start_round_if_idle(app_t *a);

static const char *round_name(lfs_round_kind_t r) {
    return r == ROUND_POLL ? "KEDA poll" : "HPA sync";
}

/* KEDA's scale loop with this round's IsActive answer. */
static void decide_poll(app_t *a) {
    lfs_keda_t *k = &a->k;
    double now = lfs_now(a);
    unsigned cur = a->fleet->replicas;
    unsigned n = (unsigned)hpa_keda_poll(&k->keda, now, (int)cur, k->active);
    char why[160];
    if (n != cur) {
        snprintf(why, sizeof why, "%s: %s -> %u replicas (%s)", round_name(ROUND_POLL),
                 k->active ? "active" : "inactive", n,
                 k->active ? "wakes from 0" : "inactive for cooldownPeriod");
        lfs_set_replicas(a, n, why);
        return;
    }
    if (k->active || cur == 0) {
        snprintf(why, sizeof why, "%s: %s", round_name(ROUND_POLL),
                 k->active ? (cur ? "active, the HPA sizes" : "active") : "inactive, stays at 0");
    } else {
        double left = k->keda._last_active_s + k->keda.cooldown_s - now;
        snprintf(why, sizeof why, "%s: inactive, to 0 after cooldownPeriod (%.0f s more)",
                 round_name(ROUND_POLL), left > 0 ? left / a->o.time_scale : 0);
    }
    lfs_print(a, why);
}

/* The HPA's sync with this round's value. */
static void decide_hpa(app_t *a) {
    lfs_keda_t *k = &a->k;
    unsigned cur = a->fleet->replicas;
    char why[160];
    if (cur == 0) { /* KEDA took it to 0 during the round: the HPA is off */
        lfs_print(a, "HPA sync: off at 0 replicas");
        return;
    }
    fleet_summary_t fs;
    fleet_summary(a->fleet, &fs);
    int want = hpa_replicas_average_value(k->value, k->target, (int)cur, k->hpa.tolerance);
    int n = hpa_sync(&k->hpa, lfs_now(a), (int)cur, (int)fs.ready, k->value, k->target);
    if ((unsigned)n != cur) {
        snprintf(why, sizeof why, "HPA sync: ceil(value/target) = %d, %u -> %d replicas", want, cur,
                 n);
        lfs_set_replicas(a, (unsigned)n, why);
        return;
    }
    if (want < (int)cur)
        snprintf(why, sizeof why, "HPA sync: ceil(value/target) = %d, holds %u (scale-down window)",
                 want, cur);
    else
        snprintf(why, sizeof why, "HPA sync: ceil(value/target) = %d, stays %u", want, cur);
    lfs_print(a, why);
}

static void finish_round(app_t *a, bool ok) {
    lfs_keda_t *k = &a->k;
    lfs_round_kind_t r = k->round;
    k->round = ROUND_NONE;
    if (a->quitting)
        return;
    if (!ok) {
        char line[700];
        snprintf(line, sizeof line, "%s: %s (no change)", round_name(r), k->error);
        lfs_print(a, line);
    } else {
        k->last_active = k->active;
        k->last_value = k->value;
        k->last_gpu = k->have_gpu ? k->gpu_value : NAN;
        snprintf(k->last_explain, sizeof k->last_explain, "%s", k->explain);
        if (r == ROUND_POLL)
            decide_poll(a);
        else
            decide_hpa(a);
    }
    start_round_if_idle(a);
}

static void round_failed(app_t *a, const char *call, int status, const char *msg) {
    snprintf(a->k.error, sizeof a->k.error, "%s: %s: %s", call, grpc_status_name(status), msg);
    finish_round(a, false);
}

static void on_explain_msg(void *ud, const uint8_t *msg, size_t len) {
    app_t *a = ud;
    explain_decode(msg, len, a->k.explain, sizeof a->k.explain);
}

static void on_gpu_msg(void *ud, const uint8_t *msg, size_t len) {
    app_t *a = ud;
    Externalscaler__GetMetricsResponse *r =
        externalscaler__get_metrics_response__unpack(NULL, len, msg);
    if (!r)
        return;
    if (r->n_metricvalues > 0) {
        a->k.gpu_value = r->metricvalues[0]->metricvaluefloat;
        a->k.have_gpu = true;
    }
    externalscaler__get_metrics_response__free_unpacked(r, NULL);
}

static void on_gpu_done(void *ud, int status, const char *msg) {
    (void)msg; /* the column shows "-": the demand trigger's answer is the story */
    app_t *a = ud;
    if (status != GRPC_OK)
        a->k.have_gpu = false;
    finish_round(a, true);
}

static void on_explain_done(void *ud, int status, const char *msg) {
    app_t *a = ud;
    if (status != GRPC_OK)
        snprintf(a->k.explain, sizeof a->k.explain, "Explain: %s: %s", grpc_status_name(status),
                 msg);
    /* what a GPU-utilisation trigger would read now, for the gpu column */
    a->k.have_gpu = false;
    trigger_t t = gpu_trigger(&a->k);
    if (call_about(a, &t, "/externalscaler.ExternalScaler/GetMetrics", "keda_gpu_metric",
                   on_gpu_msg, on_gpu_done) != 0)
        finish_round(a, true);
}

static void on_active_msg(void *ud, const uint8_t *msg, size_t len) {
    app_t *a = ud;
    Externalscaler__IsActiveResponse *r =
        externalscaler__is_active_response__unpack(NULL, len, msg);
    if (!r)
        return;
    a->k.active = r->result;
    a->k.have_active = true;
    externalscaler__is_active_response__free_unpacked(r, NULL);
}

static void on_active_done(void *ud, int status, const char *msg) {
    app_t *a = ud;
    if (status != GRPC_OK || !a->k.have_active) {
        round_failed(a, "IsActive", status != GRPC_OK ? status : GRPC_INTERNAL,
                     status != GRPC_OK ? msg : "no decodable IsActiveResponse");
        return;
    }
    a->k.explain[0] = '\0';
    trigger_t t = demand_trigger(&a->k);
    if (call_about(a, &t, "/kgs.v1.Inspect/Explain", NULL, on_explain_msg, on_explain_done) != 0)
        finish_round(a, true); /* the decision stands without the explanation */
}

static void on_metrics_msg(void *ud, const uint8_t *msg, size_t len) {
    app_t *a = ud;
    Externalscaler__GetMetricsResponse *r =
        externalscaler__get_metrics_response__unpack(NULL, len, msg);
    if (!r)
        return;
    if (r->n_metricvalues > 0) {
        /* KEDA reads the float when it is > 0, else the int */
        double f = r->metricvalues[0]->metricvaluefloat;
        a->k.value = f > 0 ? f : (double)r->metricvalues[0]->metricvalue;
        a->k.have_value = true;
    }
    externalscaler__get_metrics_response__free_unpacked(r, NULL);
}

static void on_metrics_done(void *ud, int status, const char *msg) {
    app_t *a = ud;
    if (status != GRPC_OK || !a->k.have_value) {
        round_failed(a, "GetMetrics", status != GRPC_OK ? status : GRPC_INTERNAL,
                     status != GRPC_OK ? msg : "the response held no metric value");
        return;
    }
    trigger_t t = demand_trigger(&a->k);
    if (call_about(a, &t, "/externalscaler.ExternalScaler/IsActive", NULL, on_active_msg,
                   on_active_done) != 0)
        round_failed(a, "IsActive", GRPC_UNAVAILABLE, "connection is closed");
}

static void on_spec_msg(void *ud, const uint8_t *msg, size_t len) {
    app_t *a = ud;
    Externalscaler__GetMetricSpecResponse *r =
        externalscaler__get_metric_spec_response__unpack(NULL, len, msg);
    if (!r)
        return;
    if (r->n_metricspecs > 0) {
        const Externalscaler__MetricSpec *s = r->metricspecs[0];
        snprintf(a->k.metric_name, sizeof a->k.metric_name, "%s", s->metricname);
        a->k.target = s->targetsizefloat > 0 ? s->targetsizefloat : (double)s->targetsize;
        a->k.have_spec = a->k.target > 0;
    }
    externalscaler__get_metric_spec_response__free_unpacked(r, NULL);
}

static void on_spec_done(void *ud, int status, const char *msg) {
    app_t *a = ud;
    if (status != GRPC_OK || !a->k.have_spec) {
        round_failed(a, "GetMetricSpec", status != GRPC_OK ? status : GRPC_INTERNAL,
                     status != GRPC_OK ? msg : "no metric spec with a target above 0");
        return;
    }
    trigger_t t = demand_trigger(&a->k);
    if (call_about(a, &t, "/externalscaler.ExternalScaler/GetMetrics", a->k.metric_name,
                   on_metrics_msg, on_metrics_done) != 0)
        round_failed(a, "GetMetrics", GRPC_UNAVAILABLE, "connection is closed");
}

static void start_round_if_idle(app_t *a) {
    lfs_keda_t *k = &a->k;
    if (k->round != ROUND_NONE || a->quitting)
        return;
    if (k->poll_due) {
        k->poll_due = false;
        k->round = ROUND_POLL;
    } else if (k->hpa_due) {
        k->hpa_due = false;
        if (a->fleet->replicas == 0)
            return; /* the HPA does nothing at 0 */
        k->round = ROUND_HPA;
    } else {
        return;
    }
    k->have_spec = k->have_value = k->have_active = false;
    k->target = k->value = 0;
    k->active = false;
    /* a call started here may dial again; from a gRPC callback it may not */
    trigger_t t = demand_trigger(k);
    int rc = call_about(a, &t, "/externalscaler.ExternalScaler/GetMetricSpec", NULL, on_spec_msg,
                        on_spec_done);
    if (rc != 0) {
        snprintf(k->error, sizeof k->error, "GetMetricSpec: %s", kgs_err_str(rc));
        k->round = ROUND_NONE;
        lfs_print(a, k->error);
    }
}

static void on_poll_timer(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)loop;
    app_t *a = ud;
    a->k.poll_due = true;
    arm(a, t, LFS_KEDA_POLLING_S);
    a->k.may_reconnect = true;
    start_round_if_idle(a);
    a->k.may_reconnect = false;
}

static void on_hpa_timer(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)loop;
    app_t *a = ud;
    if (a->fleet->replicas > 0)
        a->k.hpa_due = true;
    arm(a, t, LFS_HPA_SYNC_S);
    a->k.may_reconnect = true;
    start_round_if_idle(a);
    a->k.may_reconnect = false;
}

/* ---- StreamIsActive (external-push) ----------------------------------- */

static void open_stream(app_t *a);

static void on_stream_msg(void *ud, const uint8_t *msg, size_t len) {
    app_t *a = ud;
    Externalscaler__IsActiveResponse *r =
        externalscaler__is_active_response__unpack(NULL, len, msg);
    if (!r)
        return;
    bool active = r->result;
    externalscaler__is_active_response__free_unpacked(r, NULL);
    /* a `true` wakes the workload at once and refreshes lastActiveTime; a
     * `false` is ignored: deactivation is the polling's (keda-contract 2.7) */
    if (!active)
        return;
    unsigned cur = a->fleet->replicas;
    unsigned n = (unsigned)hpa_keda_poll(&a->k.keda, lfs_now(a), (int)cur, true);
    if (n != cur)
        lfs_set_replicas(a, n, "StreamIsActive pushed true: KEDA wakes it, 0 -> 1 replica");
}

static void on_stream_done(void *ud, int status, const char *msg) {
    app_t *a = ud;
    lfs_keda_t *k = &a->k;
    k->stream_open = false;
    if (a->quitting)
        return;
    if (status == GRPC_OK)
        k->stream_backoff_s = 2;
    unsigned wait = k->stream_backoff_s;
    char line[700];
    snprintf(line, sizeof line, "StreamIsActive ended: %s%s%s; KEDA reopens it in %u s",
             grpc_status_name(status), msg[0] ? ": " : "", msg, wait);
    lfs_print(a, line);
    if (status != GRPC_OK)
        k->stream_backoff_s = wait * 2 > 60 ? 60 : wait * 2;
    /* KEDA's backoff is wall time, not the simulated cluster's */
    loop_timer_start(a->loop, &k->stream_timer,
                     clock_add_sat(loop_now(a->loop), (uint64_t)wait * NS_PER_SEC));
}

static void open_stream(app_t *a) {
    lfs_keda_t *k = &a->k;
    k->may_reconnect = true;
    trigger_t t = demand_trigger(k);
    int rc = call_about(a, &t, "/externalscaler.ExternalScaler/StreamIsActive", NULL, on_stream_msg,
                        on_stream_done);
    k->may_reconnect = false;
    if (rc == 0) {
        k->stream_open = true;
        return;
    }
    unsigned wait = k->stream_backoff_s;
    k->stream_backoff_s = wait * 2 > 60 ? 60 : wait * 2;
    loop_timer_start(a->loop, &k->stream_timer,
                     clock_add_sat(loop_now(a->loop), (uint64_t)wait * NS_PER_SEC));
}

static void on_stream_timer(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)loop;
    (void)t;
    open_stream(ud);
}

/* ---- start, stop ------------------------------------------------------- */

int lfs_keda_start(app_t *a, char *err, size_t errlen) {
    lfs_keda_t *k = &a->k;
    k->co = (grpc_client_opts_t){.address = a->o.scaler};
    int rc = grpc_client_connect(a->loop, &k->co, &k->client, err, errlen);
    if (rc != 0) {
        k->client = NULL;
        return rc;
    }
    k->gpu_keys[0] = "metricType";
    k->gpu_values[0] = "gpu_utilization";
    k->gpu_keys[1] = "targetValue";
    k->gpu_values[1] = "60";
    hpa_keda_init(&k->keda, LFS_KEDA_POLLING_S, LFS_KEDA_COOLDOWN_S, 0, (int)a->o.slots);
    hpa_init(&k->hpa, 1, (int)a->o.slots);        /* a behavior: Kubernetes' default rules ... */
    k->hpa.down_window_s = LFS_HPA_DOWN_WINDOW_S; /* ... with the recommended window */
    k->hpa.sync_s = LFS_HPA_SYNC_S;
    loop_timer_init(&k->poll_timer, on_poll_timer, a);
    loop_timer_init(&k->hpa_timer, on_hpa_timer, a);
    loop_timer_init(&k->stream_timer, on_stream_timer, a);
    k->stream_backoff_s = 2;
    open_stream(a);
    /* KEDA's scale loop runs at once, then every pollingInterval */
    loop_timer_start(a->loop, &k->poll_timer, loop_now(a->loop));
    arm(a, &k->hpa_timer, LFS_HPA_SYNC_S);
    return 0;
}

void lfs_keda_stop(app_t *a) {
    lfs_keda_t *k = &a->k;
    if (!k->client)
        return; /* never started */
    loop_timer_stop(a->loop, &k->poll_timer);
    loop_timer_stop(a->loop, &k->hpa_timer);
    loop_timer_stop(a->loop, &k->stream_timer);
    grpc_client_free(k->client); /* pending calls end first (quitting: no output) */
    k->client = NULL;
}
