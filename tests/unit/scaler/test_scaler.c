/* test_scaler.c - scaler.c's dispatch without sockets: method path ->
 * handler, status codes and messages, the role rules, and what an RPC
 * starts. The seam is grpc_server.h's call API, which this file
 * implements with a recording fake (the test links scaler.c, not
 * grpc_server.c); the loop is a real one that is never run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "net/grpc_frame.h"
#include "net/grpc_server.h"
#include "proto/externalscaler.pb-c.h"
#include "proto/health.pb-c.h"
#include "scaler/scaler.h"

/* ---- the fake call ------------------------------------------------------------- */

struct grpc_call {
    void *user_data;
    size_t *conn; /* the connection's byte count; NULL: the call's own */
    size_t own_conn;
    int status; /* -1 until finished */
    char message[600];
    uint8_t sent[4096]; /* the last message */
    size_t sent_len;
    unsigned nsent;
};

void grpc_call_set_user_data(grpc_call_t *c, void *user_data) {
    c->user_data = user_data;
}

void *grpc_call_user_data(const grpc_call_t *c) {
    return c->user_data;
}

mono_ns_t grpc_call_deadline(const grpc_call_t *c) {
    (void)c;
    return 0;
}

const char *grpc_call_peer(const grpc_call_t *c) {
    (void)c;
    return "127.0.0.1:5555";
}

size_t *grpc_call_connection_bytes(grpc_call_t *c) {
    return c->conn ? c->conn : &c->own_conn;
}

int grpc_call_send(grpc_call_t *c, const uint8_t *msg, size_t len, bool latest_only) {
    (void)latest_only;
    assert_true(len <= sizeof c->sent);
    memcpy(c->sent, msg, len);
    c->sent_len = len;
    c->nsent++;
    return 0;
}

void grpc_call_finish(grpc_call_t *c, int status, const char *message) {
    assert_int_equal(c->status, -1); /* exactly once */
    c->status = status;
    snprintf(c->message, sizeof c->message, "%s", message ? message : "");
}

/* ---- fixture ------------------------------------------------------------------- */

typedef struct {
    loop_t *loop;
    scaler_t *sc;
    unsigned rpcs_done;
    scaler_rpc_t last_rpc;
    int last_status;
    unsigned evaluations, configs_seen;
    eval_result_t answer; /* what the fake cluster evaluation says */
} fixture_t;

static void on_rpc_done(void *ud, scaler_rpc_t rpc, int status, double seconds) {
    (void)seconds;
    fixture_t *f = ud;
    f->rpcs_done++;
    f->last_rpc = rpc;
    f->last_status = status;
}

static snapshot_t *no_snapshot(void *ud) {
    (void)ud;
    return NULL;
}

static void fake_evaluate(void *ud, const trigger_config_t *c, const char *ns, mono_ns_t now,
                          eval_result_t *out) {
    (void)c;
    (void)ns;
    (void)now;
    fixture_t *f = ud;
    f->evaluations++;
    *out = f->answer;
}

static bool fake_ready(void *ud, mono_ns_t now, char *why, size_t whylen) {
    (void)ud;
    (void)now;
    snprintf(why, whylen, "not yet");
    return false;
}

static void fake_on_config(void *ud, const trigger_config_t *c, const char *ns) {
    (void)c;
    (void)ns;
    fixture_t *f = ud;
    f->configs_seen++;
}

static size_t budget_max_stream_bytes, budget_cache_bytes; /* for setup_budget */

static int setup_role(void **state, bool aggregator) {
    fixture_t *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    char err[256];
    if (loop_new(&f->loop, err, sizeof err) != 0) {
        free(f);
        return -1;
    }
    scaler_opts_t o = {.loop = f->loop,
                       .stale_after_ns = 5000000000ull,
                       .current_snapshot = no_snapshot,
                       .on_rpc_done = on_rpc_done,
                       .rpc_user_data = f,
                       .max_stream_bytes = budget_max_stream_bytes,
                       .config_cache_bytes = budget_cache_bytes};
    if (aggregator) {
        o.evaluate = fake_evaluate;
        o.ready = fake_ready;
        o.on_config = fake_on_config;
        o.eval_user_data = f;
    }
    if (scaler_new(&o, &f->sc) != 0) {
        loop_free(f->loop);
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

/* No sources and no cluster evaluation: the agent's view. */
static int setup_agent(void **state) {
    return setup_role(state, false);
}

static int setup_aggregator(void **state) {
    return setup_role(state, true);
}

/* The agent with room for about three streams of one namespace on a
 * connection (each pins a configuration of ~26 KiB; one namespace alone
 * gets half of the 200,000) and five in all. */
static int setup_budget(void **state) {
    budget_max_stream_bytes = 200 * 1000;
    budget_cache_bytes = 320 * 1000;
    int rc = setup_role(state, false);
    budget_max_stream_bytes = budget_cache_bytes = 0;
    return rc;
}

static int setup_budget_aggregator(void **state) {
    budget_max_stream_bytes = 200 * 1000;
    budget_cache_bytes = 320 * 1000;
    int rc = setup_role(state, true);
    budget_max_stream_bytes = budget_cache_bytes = 0;
    return rc;
}

static int teardown(void **state) {
    fixture_t *f = *state;
    scaler_free(f->sc);
    loop_free(f->loop);
    free(f);
    return 0;
}

/* A ScaledObjectRef "ml/so" with metadata kv (NULL-terminated pairs),
 * packed into buf, as GetMetricsRequest when get_metrics. */
/* The ScaledObjectRef.namespace pack_ref writes ("ml" unless a test sets it). */
static const char *ref_namespace = "ml";

static size_t pack_ref(const char *const *kv, bool get_metrics, uint8_t *buf, size_t cap) {
    Externalscaler__ScaledObjectRef__ScalerMetadataEntry entries[16];
    Externalscaler__ScaledObjectRef__ScalerMetadataEntry *ptrs[16];
    size_t n = 0;
    for (; kv[2 * n]; n++) {
        Externalscaler__ScaledObjectRef__ScalerMetadataEntry e =
            EXTERNALSCALER__SCALED_OBJECT_REF__SCALER_METADATA_ENTRY__INIT;
        e.key = (char *)kv[2 * n];
        e.value = (char *)kv[2 * n + 1];
        entries[n] = e;
        ptrs[n] = &entries[n];
    }
    Externalscaler__ScaledObjectRef ref = EXTERNALSCALER__SCALED_OBJECT_REF__INIT;
    ref.name = "so";
    ref.namespace_ = (char *)ref_namespace;
    ref.n_scalermetadata = n;
    ref.scalermetadata = ptrs;
    size_t len;
    if (get_metrics) {
        Externalscaler__GetMetricsRequest gm = EXTERNALSCALER__GET_METRICS_REQUEST__INIT;
        gm.scaledobjectref = &ref;
        gm.metricname = "m";
        len = protobuf_c_message_get_packed_size(&gm.base);
        assert_true(len <= cap);
        protobuf_c_message_pack(&gm.base, buf);
    } else {
        len = protobuf_c_message_get_packed_size(&ref.base);
        assert_true(len <= cap);
        protobuf_c_message_pack(&ref.base, buf);
    }
    return len;
}

static grpc_call_t call_method(fixture_t *f, const char *method, const char *const *kv) {
    uint8_t buf[2048];
    size_t len = pack_ref(kv, strcmp(method, "GetMetrics") == 0, buf, sizeof buf);
    char path[128];
    snprintf(path, sizeof path, "/externalscaler.ExternalScaler/%s", method);
    grpc_call_t c;
    memset(&c, 0, sizeof c);
    c.status = -1;
    scaler_on_request(&c, path, buf, len, f->sc);
    return c;
}

#define KV(...) ((const char *const[]){__VA_ARGS__, NULL})
#define GPU_TRIGGER KV("metricType", "gpu_utilization", "targetValue", "50")
#define QUEUE_TRIGGER                                                                              \
    KV("metricType", "queue_length", "targetValue", "5", "redisAddress", "r:6379",                 \
       "redisListName", "q")

/* ---- cases --------------------------------------------------------------------- */

static void test_scaler_unknown_method_is_unimplemented(void **state) {
    fixture_t *f = *state;
    grpc_call_t c;
    memset(&c, 0, sizeof c);
    c.status = -1;
    scaler_on_request(&c, "/externalscaler.ExternalScaler/Nope", NULL, 0, f->sc);
    assert_int_equal(c.status, GRPC_UNIMPLEMENTED);
    assert_string_equal(c.message, "method /externalscaler.ExternalScaler/Nope is not implemented");
    assert_int_equal(f->last_rpc, SCALER_RPC_OTHER);
    memset(&c, 0, sizeof c);
    c.status = -1;
    scaler_on_request(&c, "/other.Service/IsActive", NULL, 0, f->sc);
    assert_int_equal(c.status, GRPC_UNIMPLEMENTED);
    /* KEDA reads UNIMPLEMENTED on StreamMetricSpec as "pull only" */
    c = call_method(f, "StreamMetricSpec", GPU_TRIGGER);
    assert_int_equal(c.status, GRPC_UNIMPLEMENTED);
    assert_int_equal(f->last_rpc, SCALER_RPC_STREAM_METRIC_SPEC);
    assert_int_equal(f->rpcs_done, 3);
}

static void test_scaler_malformed_message_is_invalid_argument(void **state) {
    fixture_t *f = *state;
    grpc_call_t c;
    memset(&c, 0, sizeof c);
    c.status = -1;
    const uint8_t junk[] = {0xff, 0xff, 0xff};
    scaler_on_request(&c, "/externalscaler.ExternalScaler/IsActive", junk, sizeof junk, f->sc);
    assert_int_equal(c.status, GRPC_INVALID_ARGUMENT);
    assert_string_equal(c.message, "malformed request message (protobuf decoding failed)");
}

static void test_scaler_bad_config_is_invalid_argument(void **state) {
    fixture_t *f = *state;
    grpc_call_t c = call_method(f, "GetMetricSpec", KV("metricType", "gpu_utilisation"));
    assert_int_equal(c.status, GRPC_INVALID_ARGUMENT);
    assert_non_null(strstr(c.message, "gpu_utilisation"));
    /* cached: the same answer again */
    grpc_call_t again = call_method(f, "GetMetrics", KV("metricType", "gpu_utilisation"));
    assert_int_equal(again.status, GRPC_INVALID_ARGUMENT);
    assert_string_equal(again.message, c.message);
    assert_int_equal(f->last_rpc, SCALER_RPC_GET_METRICS);
}

static void test_scaler_metric_spec_answers_name_and_target(void **state) {
    fixture_t *f = *state;
    grpc_call_t c = call_method(f, "GetMetricSpec", GPU_TRIGGER);
    assert_int_equal(c.status, GRPC_OK);
    assert_int_equal(c.nsent, 1);
    Externalscaler__GetMetricSpecResponse *r =
        externalscaler__get_metric_spec_response__unpack(NULL, c.sent_len, c.sent);
    assert_non_null(r);
    assert_int_equal(r->n_metricspecs, 1);
    assert_int_equal(r->metricspecs[0]->targetsize, 50);
    assert_true(r->metricspecs[0]->targetsizefloat == 50.0);
    assert_non_null(r->metricspecs[0]->metricname);
    externalscaler__get_metric_spec_response__free_unpacked(r, NULL);
}

static void test_scaler_no_snapshot_is_unavailable(void **state) {
    fixture_t *f = *state;
    grpc_call_t c = call_method(f, "GetMetrics", GPU_TRIGGER);
    assert_int_equal(c.status, GRPC_UNAVAILABLE);
    assert_string_equal(c.message, "no GPU snapshot yet: the first NVML sample has not completed");
    c = call_method(f, "IsActive", GPU_TRIGGER);
    assert_int_equal(c.status, GRPC_UNAVAILABLE);
}

/* A stream opened while the answer is unknown stays open and silent (KEDA
 * would otherwise reconnect only after its backoff), and pushes the state
 * as soon as it is known. */
static void test_scaler_stream_opened_while_unknown_stays_open(void **state) {
    fixture_t *f = *state;
    f->answer.status = EVAL_UNAVAILABLE;
    snprintf(f->answer.message, sizeof f->answer.message, "GPU 0 lost");
    uint8_t buf[2048];
    size_t len = pack_ref(GPU_TRIGGER, false, buf, sizeof buf);
    grpc_call_t c;
    memset(&c, 0, sizeof c);
    c.status = -1;
    scaler_on_request(&c, "/externalscaler.ExternalScaler/StreamIsActive", buf, len, f->sc);
    assert_int_equal(c.status, -1); /* not finished */
    assert_int_equal(c.nsent, 0);   /* and silent */
    assert_int_equal(scaler_stream_count(f->sc), 1);
    scaler_refresh(f->sc); /* still unknown: still silent */
    assert_int_equal(c.nsent, 0);
    f->answer.status = EVAL_OK;
    f->answer.value = 1;
    f->answer.active = true;
    f->answer.message[0] = '\0';
    scaler_refresh(f->sc);
    assert_int_equal(c.nsent, 1);
    Externalscaler__IsActiveResponse *a =
        externalscaler__is_active_response__unpack(NULL, c.sent_len, c.sent);
    assert_non_null(a);
    assert_true(a->result);
    externalscaler__is_active_response__free_unpacked(a, NULL);
    /* the pull path keeps reporting errors */
    f->answer.status = EVAL_UNAVAILABLE;
    grpc_call_t p = call_method(f, "IsActive", GPU_TRIGGER);
    assert_int_equal(p.status, GRPC_UNAVAILABLE);
    scaler_on_call_gone(&c, c.user_data, f->sc);
    assert_int_equal(scaler_stream_count(f->sc), 0);
}

static void test_scaler_selectors_on_a_node_role_are_invalid_argument(void **state) {
    fixture_t *f = *state;
    grpc_call_t c = call_method(
        f, "GetMetrics",
        KV("metricType", "gpu_utilization", "targetValue", "50", "podSelector", "app=x"));
    assert_int_equal(c.status, GRPC_INVALID_ARGUMENT);
    assert_string_equal(c.message, "podSelector and nodeSelector need the aggregator role: this "
                                   "server sees only its own node's GPUs and no pods");
}

static void test_scaler_demand_trigger_without_sources_is_failed_precondition(void **state) {
    fixture_t *f = *state;
    grpc_call_t c = call_method(f, "GetMetrics", QUEUE_TRIGGER);
    assert_int_equal(c.status, GRPC_FAILED_PRECONDITION);
    assert_string_equal(c.message, "metricType queue_length reads engine or queue sources, which "
                                   "this role does not poll; ask the standalone or aggregator "
                                   "role");
    c = call_method(f, "IsActive", QUEUE_TRIGGER);
    assert_int_equal(c.status, GRPC_FAILED_PRECONDITION);
    /* the spec itself needs no source */
    c = call_method(f, "GetMetricSpec", QUEUE_TRIGGER);
    assert_int_equal(c.status, GRPC_OK);
}

static void test_scaler_aggregator_answers_from_its_evaluation(void **state) {
    fixture_t *f = *state;
    f->answer.status = EVAL_OK;
    f->answer.value = 130.4;
    f->answer.active = true;
    grpc_call_t c = call_method(f, "GetMetrics", GPU_TRIGGER);
    assert_int_equal(c.status, GRPC_OK);
    Externalscaler__GetMetricsResponse *r =
        externalscaler__get_metrics_response__unpack(NULL, c.sent_len, c.sent);
    assert_non_null(r);
    assert_int_equal(r->n_metricvalues, 1);
    assert_int_equal(r->metricvalues[0]->metricvalue, 130);
    assert_true(r->metricvalues[0]->metricvaluefloat == 130.4);
    externalscaler__get_metrics_response__free_unpacked(r, NULL);
    c = call_method(f, "IsActive", GPU_TRIGGER);
    assert_int_equal(c.status, GRPC_OK);
    Externalscaler__IsActiveResponse *a =
        externalscaler__is_active_response__unpack(NULL, c.sent_len, c.sent);
    assert_non_null(a);
    assert_true(a->result);
    externalscaler__is_active_response__free_unpacked(a, NULL);
    /* every call that brings a config announces it (the Node watch starts
     * there), including GetMetricSpec, which evaluates nothing */
    unsigned evals = f->evaluations;
    c = call_method(f, "GetMetricSpec", GPU_TRIGGER);
    assert_int_equal(c.status, GRPC_OK);
    assert_int_equal(f->evaluations, evals);
    assert_int_equal(f->configs_seen, 3);
    /* the evaluation's error is the call's status */
    f->answer.status = EVAL_FAILED_PRECONDITION;
    snprintf(f->answer.message, sizeof f->answer.message, "gpuIndex 9 out of range");
    c = call_method(f, "GetMetrics", KV("metricType", "gpu_utilization", "targetValue", "60"));
    assert_int_equal(c.status, GRPC_FAILED_PRECONDITION);
    assert_string_equal(c.message, "gpuIndex 9 out of range");
    /* a bad config announces nothing */
    unsigned seen = f->configs_seen;
    call_method(f, "GetMetrics", KV("metricType", "nope"));
    assert_int_equal(f->configs_seen, seen);
}

static void test_scaler_health_check_follows_readiness(void **state) {
    fixture_t *f = *state;
    Grpc__Health__V1__HealthCheckRequest req = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
    req.service = "";
    uint8_t buf[64];
    size_t len = protobuf_c_message_get_packed_size(&req.base);
    protobuf_c_message_pack(&req.base, buf);
    grpc_call_t c;
    memset(&c, 0, sizeof c);
    c.status = -1;
    scaler_on_request(&c, "/grpc.health.v1.Health/Check", buf, len, f->sc);
    assert_int_equal(c.status, GRPC_OK);
    Grpc__Health__V1__HealthCheckResponse *r =
        grpc__health__v1__health_check_response__unpack(NULL, c.sent_len, c.sent);
    assert_non_null(r);
    assert_int_equal(r->status,
                     GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING);
    grpc__health__v1__health_check_response__free_unpacked(r, NULL);
    req.service = "no.such.Service";
    len = protobuf_c_message_get_packed_size(&req.base);
    protobuf_c_message_pack(&req.base, buf);
    memset(&c, 0, sizeof c);
    c.status = -1;
    scaler_on_request(&c, "/grpc.health.v1.Health/Check", buf, len, f->sc);
    assert_int_equal(c.status, GRPC_NOT_FOUND);
    assert_int_equal(f->last_rpc, SCALER_RPC_HEALTH_CHECK);
}

/* Raw ScaledObjectRef bytes: n entries of key "k<i>" and a value of vlen 'v's. */
static size_t raw_ref(size_t n, size_t vlen, uint8_t *buf, size_t cap) {
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char key[24];
        int kl = snprintf(key, sizeof key, "k%zu", i);
        size_t entry = 2 + (size_t)kl + 3 + vlen; /* vlen < 16384: a 2-byte varint at most */
        assert_true(o + entry + 4 <= cap && vlen < 128 * 128);
        buf[o++] = 0x1a;
        size_t inner = 2 + (size_t)kl + 1 + (vlen < 128 ? 1 : 2) + vlen;
        if (inner < 128) {
            buf[o++] = (uint8_t)inner;
        } else {
            buf[o++] = (uint8_t)(inner | 0x80);
            buf[o++] = (uint8_t)(inner >> 7);
        }
        buf[o++] = 0x0a;
        buf[o++] = (uint8_t)kl;
        memcpy(buf + o, key, (size_t)kl);
        o += (size_t)kl;
        buf[o++] = 0x12;
        if (vlen < 128) {
            buf[o++] = (uint8_t)vlen;
        } else {
            buf[o++] = (uint8_t)(vlen | 0x80);
            buf[o++] = (uint8_t)(vlen >> 7);
        }
        memset(buf + o, 'v', vlen);
        o += vlen;
    }
    return o;
}

static void test_scaler_metadata_over_the_entry_limit_is_refused_before_decoding(void **state) {
    fixture_t *f = *state;
    static uint8_t buf[8192];
    size_t len = raw_ref(300, 0, buf, sizeof buf);
    grpc_call_t c;
    memset(&c, 0, sizeof c);
    c.status = -1;
    scaler_on_request(&c, "/externalscaler.ExternalScaler/IsActive", buf, len, f->sc);
    assert_int_equal(c.status, GRPC_RESOURCE_EXHAUSTED);
    assert_string_equal(c.message, "metadata: 300 entries, at most 256 (--max-metadata-entries)");
    scaler_budget_stats_t b;
    scaler_budget_stats(f->sc, &b);
    assert_int_equal(b.refused_metadata_entries, 1);
    assert_int_equal(b.cache_entries, 0); /* nothing was parsed or cached */
    /* 256 is allowed (and then rejected as unknown keys, by the parser) */
    len = raw_ref(256, 0, buf, sizeof buf);
    memset(&c, 0, sizeof c);
    c.status = -1;
    scaler_on_request(&c, "/externalscaler.ExternalScaler/IsActive", buf, len, f->sc);
    assert_int_equal(c.status, GRPC_INVALID_ARGUMENT);
}

static void test_scaler_metadata_over_the_byte_limit_is_refused(void **state) {
    fixture_t *f = *state;
    static uint8_t buf[40000];
    size_t len = raw_ref(3, 11000, buf, sizeof buf); /* 3 x (2 + 11000) > 32768 */
    /* as a GetMetricsRequest: field 1 around it */
    static uint8_t gm[40016];
    size_t o = 0;
    gm[o++] = 0x0a;
    size_t l = len;
    while (l >= 0x80) {
        gm[o++] = (uint8_t)(l | 0x80);
        l >>= 7;
    }
    gm[o++] = (uint8_t)l;
    memcpy(gm + o, buf, len);
    o += len;
    grpc_call_t c;
    memset(&c, 0, sizeof c);
    c.status = -1;
    scaler_on_request(&c, "/externalscaler.ExternalScaler/GetMetrics", gm, o, f->sc);
    assert_int_equal(c.status, GRPC_RESOURCE_EXHAUSTED);
    assert_string_equal(c.message, "metadata: 33006 bytes of keys and values, at most 32768 "
                                   "(--max-metadata-bytes)");
    scaler_budget_stats_t b;
    scaler_budget_stats(f->sc, &b);
    assert_int_equal(b.refused_metadata_bytes, 1);
}

/* Opens StreamIsActive with targetValue v on the connection conn. */
static void open_stream(fixture_t *f, grpc_call_t *c, size_t *conn, int v) {
    char tv[16];
    snprintf(tv, sizeof tv, "%d", v);
    uint8_t buf[2048];
    size_t len =
        pack_ref(KV("metricType", "gpu_utilization", "targetValue", tv), false, buf, sizeof buf);
    memset(c, 0, sizeof *c);
    c->status = -1;
    c->conn = conn;
    scaler_on_request(c, "/externalscaler.ExternalScaler/StreamIsActive", buf, len, f->sc);
}

static void test_scaler_streams_are_budgeted_per_connection_and_in_all(void **state) {
    fixture_t *f = *state;
    static grpc_call_t a[8], b[8];
    size_t conn_a = 0, conn_b = 0;
    open_stream(f, &a[0], &conn_a, 10);
    assert_int_equal(a[0].status, -1); /* open */
    size_t one = conn_a;               /* what one stream costs */
    assert_true(one > sizeof(trigger_config_t));
    scaler_budget_stats_t st;
    scaler_budget_stats(f->sc, &st);
    assert_int_equal(st.stream_bytes, one);
    /* connection A: one namespace alone gets half of 200,000 bytes */
    size_t fit = 100 * 1000 / one;
    assert_true(fit >= 1 && fit < 8);
    for (size_t i = 1; i < fit; i++) {
        open_stream(f, &a[i], &conn_a, 10 + (int)i);
        assert_int_equal(a[i].status, -1);
    }
    open_stream(f, &a[fit], &conn_a, 50);
    assert_int_equal(a[fit].status, GRPC_RESOURCE_EXHAUSTED);
    char want[400];
    snprintf(want, sizeof want,
             "StreamIsActive: namespace ml's open streams on this connection hold %zu bytes; %zu "
             "more would pass its share of 100000 (half of what other namespaces leave of "
             "--max-stream-bytes 200000, per connection)",
             fit * one, one);
    assert_string_equal(a[fit].message, want);
    assert_int_equal(conn_a, fit * one); /* the refused one charged nothing */
    assert_int_equal(scaler_stream_count(f->sc), fit);
    /* connection B has its own budget; the namespace's share of all streams
     * is half of 320,000 */
    size_t total_fit = 160 * 1000 / one, opened_b = 0;
    for (size_t i = 0; fit + i < total_fit && i < fit; i++) {
        open_stream(f, &b[i], &conn_b, 60 + (int)i);
        assert_int_equal(b[i].status, -1);
        opened_b++;
    }
    open_stream(f, &b[opened_b], &conn_b, 99);
    assert_int_equal(b[opened_b].status, GRPC_RESOURCE_EXHAUSTED);
    scaler_budget_stats(f->sc, &st);
    assert_int_equal(st.refused_stream_bytes + st.refused_streams_total, 2);
    /* refused before their maps were parsed (the namespace's share is
     * judged on the estimate): not cached */
    assert_int_equal(st.cache_entries, fit + opened_b);
    /* a stream that ends gives its bytes back: A has room for one again */
    scaler_on_call_gone(&a[0], a[0].user_data, f->sc);
    assert_int_equal(conn_a, (fit - 1) * one);
    open_stream(f, &a[7], &conn_a, 77);
    assert_int_equal(a[7].status, -1);
    assert_int_equal(conn_a, fit * one);
    /* and everything is given back when they all end */
    for (size_t i = 1; i < fit; i++)
        scaler_on_call_gone(&a[i], a[i].user_data, f->sc);
    scaler_on_call_gone(&a[7], a[7].user_data, f->sc);
    for (size_t i = 0; i < opened_b; i++)
        scaler_on_call_gone(&b[i], b[i].user_data, f->sc);
    assert_int_equal(conn_a, 0);
    assert_int_equal(conn_b, 0);
    scaler_budget_stats(f->sc, &st);
    assert_int_equal(st.stream_bytes, 0);
    assert_int_equal(scaler_stream_count(f->sc), 0);
    /* the closed streams' entries stay cached within the byte bound */
    assert_true(st.cache_bytes <= 320 * 1000);
}

/* KEDA sends every namespace's streams over one connection: one namespace
 * that opens all it can leaves another namespace's stream served on the
 * same connection (before, the first filled the connection's budget). */
static void test_scaler_one_namespace_leaves_room_on_the_connection(void **state) {
    fixture_t *f = *state;
    static grpc_call_t c[40];
    size_t conn = 0;
    unsigned n = 0, refused = 0;
    ref_namespace = "attacker";
    for (; n < 40; n++) {
        open_stream(f, &c[n], &conn, 100 + (int)n);
        if (c[n].status == GRPC_RESOURCE_EXHAUSTED)
            refused++;
    }
    assert_true(refused > 0);
    ref_namespace = "victim";
    static grpc_call_t v;
    open_stream(f, &v, &conn, 7);
    assert_int_equal(v.status, -1); /* open, served */
    ref_namespace = "ml";
    scaler_on_call_gone(&v, v.user_data, f->sc);
    for (unsigned i = 0; i < n; i++)
        if (c[i].status == -1)
            scaler_on_call_gone(&c[i], c[i].user_data, f->sc);
    assert_int_equal(conn, 0);
}

static void test_scaler_waiting_calls_are_budgeted_like_streams(void **state) {
    fixture_t *f = *state;
    /* the evaluation waits for a source's first poll: calls are held */
    f->answer.status = EVAL_UNAVAILABLE;
    f->answer.pending = true;
    snprintf(f->answer.message, sizeof f->answer.message, "waiting for the first poll");
    static grpc_call_t c[8];
    size_t conn = 0;
    uint8_t buf[2048];
    size_t n = 0, one = 0;
    for (;; n++) {
        assert_true(n < 8);
        char tv[16];
        snprintf(tv, sizeof tv, "%zu", 10 + n);
        size_t len =
            pack_ref(KV("metricType", "gpu_utilization", "targetValue", tv), true, buf, sizeof buf);
        memset(&c[n], 0, sizeof c[n]);
        c[n].status = -1;
        c[n].conn = &conn;
        scaler_on_request(&c[n], "/externalscaler.ExternalScaler/GetMetrics", buf, len, f->sc);
        if (c[n].status != -1)
            break; /* answered at once: over the budget */
        if (n == 0)
            one = conn;
    }
    assert_true(n >= 2 && n == 100 * 1000 / one);
    assert_int_equal(c[n].status, GRPC_UNAVAILABLE); /* not refused: just not held */
    assert_string_equal(c[n].message, "waiting for the first poll");
    assert_int_equal(conn, n * one);
    /* one gone: its bytes come back */
    scaler_on_call_gone(&c[0], c[0].user_data, f->sc);
    assert_int_equal(conn, (n - 1) * one);
    /* the poll answers: every held call is answered and gives its bytes back */
    f->answer.status = EVAL_OK;
    f->answer.pending = false;
    f->answer.value = 3;
    f->answer.message[0] = '\0';
    scaler_refresh(f->sc);
    for (size_t i = 1; i < n; i++)
        assert_int_equal(c[i].status, GRPC_OK);
    assert_int_equal(conn, 0);
    scaler_budget_stats_t st;
    scaler_budget_stats(f->sc, &st);
    assert_int_equal(st.stream_bytes, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_scaler_unknown_method_is_unimplemented, setup_agent,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_scaler_malformed_message_is_invalid_argument,
                                        setup_agent, teardown),
        cmocka_unit_test_setup_teardown(test_scaler_bad_config_is_invalid_argument, setup_agent,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_scaler_metric_spec_answers_name_and_target,
                                        setup_agent, teardown),
        cmocka_unit_test_setup_teardown(test_scaler_no_snapshot_is_unavailable, setup_agent,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_scaler_selectors_on_a_node_role_are_invalid_argument,
                                        setup_agent, teardown),
        cmocka_unit_test_setup_teardown(
            test_scaler_demand_trigger_without_sources_is_failed_precondition, setup_agent,
            teardown),
        cmocka_unit_test_setup_teardown(test_scaler_aggregator_answers_from_its_evaluation,
                                        setup_aggregator, teardown),
        cmocka_unit_test_setup_teardown(test_scaler_health_check_follows_readiness,
                                        setup_aggregator, teardown),
        cmocka_unit_test_setup_teardown(
            test_scaler_metadata_over_the_entry_limit_is_refused_before_decoding, setup_agent,
            teardown),
        cmocka_unit_test_setup_teardown(test_scaler_metadata_over_the_byte_limit_is_refused,
                                        setup_agent, teardown),
        cmocka_unit_test_setup_teardown(test_scaler_streams_are_budgeted_per_connection_and_in_all,
                                        setup_budget, teardown),
        cmocka_unit_test_setup_teardown(test_scaler_one_namespace_leaves_room_on_the_connection,
                                        setup_budget, teardown),
        cmocka_unit_test_setup_teardown(test_scaler_waiting_calls_are_budgeted_like_streams,
                                        setup_budget_aggregator, teardown),
        cmocka_unit_test_setup_teardown(test_scaler_stream_opened_while_unknown_stays_open,
                                        setup_aggregator, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
