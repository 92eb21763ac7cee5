/*
 * query.c - `keda-gpu-scaler query`: call a scaler the way KEDA does and
 * show what KEDA and the HPA would do with the answer.
 *
 * One connection; per round GetMetricSpec -> GetMetrics -> IsActive, in
 * KEDA's order (GetMetricsAndActivity). With --watch, rounds repeat every
 * --interval and a StreamIsActive stays open beside them (what the
 * external-push trigger uses), printing every push.
 */
#include "server/query.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "core/duration.h"
#include "core/err.h"
#include "core/metadata.h"
#include "core/trigger_config.h"
#include "core/strbuf.h"
#include "net/grpc_client.h"
#include "net/grpc_frame.h"
#include "net/loop.h"
#include "net/tls.h"
#include "proto/externalscaler.pb-c.h"
#include "server/explain_text.h"

#define MAX_METADATA 64

const char query_usage_text[] =
    "Usage: keda-gpu-scaler query --address HOST:PORT --metadata KEY=VALUE... [flags]\n"
    "\n"
    "Calls a scaler exactly as KEDA does (GetMetricSpec, GetMetrics, IsActive on one\n"
    "connection) and prints the metric, its target, its value, whether the trigger is\n"
    "active, and the replica count KEDA and the HPA would choose.\n"
    "\n"
    "Flags:\n"
    "  --address HOST:PORT     the scaler (KEDA's scalerAddress), e.g. 127.0.0.1:6000\n"
    "  --metadata KEY=VALUE    one trigger metadata entry; repeat for each key\n"
    "  --name NAME             ScaledObject name sent with the calls (default query)\n"
    "  --namespace NS          ScaledObject namespace (default default)\n"
    "  --replicas N            current replicas, for the HPA's Value arithmetic\n"
    "  --max-replicas N        maxReplicaCount to clamp to (default 100)\n"
    "  --watch                 repeat every --interval and keep a StreamIsActive open,\n"
    "                          reopened as KEDA does when it ends (after 2 s, doubling\n"
    "                          up to 60 s, back to 2 s after an OK end); a closed\n"
    "                          connection is dialled again\n"
    "  --changes               with --watch, print a round only when its value, activity\n"
    "                          or replicas differ from the last printed one\n"
    "  --interval DURATION     time between rounds with --watch (default 2s)\n"
    "  --count N               stop after N rounds (default 1, or unlimited with --watch)\n"
    "  --timeout DURATION      deadline per call (default 3s, KEDA's HPA-path budget)\n"
    "  --tls                   use TLS; with --ca FILE to trust, --cert FILE --key FILE\n"
    "                          for mTLS, --server-name NAME, --insecure to skip checks\n"
    "\n"
    "With metricType=demand and the queueing model, each round also prints the\n"
    "model's inputs: arrival rate, per-replica capacity and cold start (each\n"
    "learned, derived, configured or prior), the tokens one request costs, the\n"
    "backlog, the work due over one cold start, what the Ready and starting pods\n"
    "can do, and the deficit.\n"
    "\n"
    "Replicas: KEDA's default AverageValue target gives ceil(value / target); with\n"
    "the trigger's metricType: Value it is ceil(replicas x value / target). An\n"
    "inactive trigger with minReplicaCount 0 gives 0.\n"
    "\n"
    "Example:\n"
    "  keda-gpu-scaler query --address 127.0.0.1:6000 --metadata metricType=gpu_utilization \\\n"
    "      --metadata targetValue=60 --watch\n";

typedef struct {
    const char *address, *name, *namespace_;
    const char *keys[MAX_METADATA], *values[MAX_METADATA];
    size_t nmeta;
    long replicas, max_replicas, count;
    bool watch, changes, tls, insecure, help;
    const char *ca, *cert, *key, *server_name;
    uint64_t interval_ns, timeout_ns;
} query_opts_t;

typedef struct {
    query_opts_t o;
    loop_t *loop;
    grpc_client_t *client;
    SSL_CTX *tls;
    grpc_client_opts_t co; /* to connect again after the connection closed */
    loop_timer_t round_timer;
    long rounds_done;
    int exit_code;
    bool stream_open;
    /* StreamIsActive is reopened the way KEDA's externalPushScaler does:
     * after 2 s, doubling per failed stream up to 60 s, back to 2 s after a
     * stream that ended OK */
    loop_timer_t stream_timer;
    unsigned stream_backoff_s;
    bool may_reconnect; /* inside a timer, not a callback of the old connection */
    bool mode_hinted;   /* the TLS-vs-h2c hint was printed */
    /* current round */
    char metric_name[128];
    double target, value;
    int64_t target_int, value_int;
    /* which answers of this round arrived and decoded: a call that ends OK
     * without one is an error, never a printed 0 */
    bool have_spec, have_value, have_active;
    bool queueing;       /* metricType=demand without per-signal targets: the queueing model */
    bool metrics_failed; /* this round's GetMetrics failed: IsActive may still say active */
    int sigfd;
    loop_io_t *sig_io;
    bool quitting; /* tearing down: pending calls end without output */
    Externalscaler__ScaledObjectRef__ScalerMetadataEntry entries[MAX_METADATA];
    Externalscaler__ScaledObjectRef__ScalerMetadataEntry *entry_ptrs[MAX_METADATA];
    char *keyz[MAX_METADATA]; /* each --metadata key alone, NUL-terminated (owned) */
    /* with --changes: the last line printed of each kind, without its time
     * (grown to fit: a line is never cut) */
    strbuf_t last_round, last_error, last_push, last_explain[EXPLAIN_LINES];
} query_t;

/* ---- flags ---------------------------------------------------------------- */

static int parse_long(const char *v, long min, const char *flag, long *out, char *err,
                      size_t errlen) {
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || end == v || *end || n < min)
        return kgs_seterr(err, errlen, KGS_EINVAL, "invalid %s \"%s\": must be an integer >= %ld",
                          flag, v, min);
    *out = n;
    return 0;
}

static int query_parse(int argc, char **argv, query_opts_t *o, char *err, size_t errlen) {
    memset(o, 0, sizeof *o);
    o->name = "query";
    o->namespace_ = "default";
    o->replicas = -1;
    o->max_replicas = 100;
    o->count = -1;
    o->interval_ns = 2 * NS_PER_SEC;
    o->timeout_ns = 3 * NS_PER_SEC;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        char sub[256];
#define NEED_VALUE()                                                                               \
    do {                                                                                           \
        if (!v)                                                                                    \
            return kgs_seterr(err, errlen, KGS_EINVAL, "flag %s needs a value", a);                \
        i++;                                                                                       \
    } while (0)
        if (strcmp(a, "--address") == 0) {
            NEED_VALUE();
            o->address = v;
        } else if (strcmp(a, "--metadata") == 0) {
            NEED_VALUE();
            const char *eq = strchr(v, '=');
            if (!eq || eq == v)
                return kgs_seterr(err, errlen, KGS_EINVAL,
                                  "--metadata \"%s\": expected KEY=VALUE (e.g. targetValue=60)", v);
            if (o->nmeta == MAX_METADATA)
                return kgs_seterr(err, errlen, KGS_EINVAL, "at most %d --metadata entries",
                                  MAX_METADATA);
            o->keys[o->nmeta] = v;
            o->values[o->nmeta] = eq + 1;
            o->nmeta++;
        } else if (strcmp(a, "--name") == 0) {
            NEED_VALUE();
            o->name = v;
        } else if (strcmp(a, "--namespace") == 0) {
            NEED_VALUE();
            o->namespace_ = v;
        } else if (strcmp(a, "--replicas") == 0) {
            NEED_VALUE();
            if (parse_long(v, 0, a, &o->replicas, err, errlen))
                return KGS_EINVAL;
        } else if (strcmp(a, "--max-replicas") == 0) {
            NEED_VALUE();
            if (parse_long(v, 1, a, &o->max_replicas, err, errlen))
                return KGS_EINVAL;
        } else if (strcmp(a, "--count") == 0) {
            NEED_VALUE();
            if (parse_long(v, 1, a, &o->count, err, errlen))
                return KGS_EINVAL;
        } else if (strcmp(a, "--interval") == 0 || strcmp(a, "--timeout") == 0) {
            NEED_VALUE();
            uint64_t ns;
            if (duration_parse_ns(v, &ns, sub, sizeof sub) || ns == 0)
                return kgs_seterr(err, errlen, KGS_EINVAL, "%s: %s", a,
                                  ns == 0 ? "must be more than 0" : sub);
            if (a[2] == 'i')
                o->interval_ns = ns;
            else
                o->timeout_ns = ns;
        } else if (strcmp(a, "--watch") == 0) {
            o->watch = true;
        } else if (strcmp(a, "--changes") == 0) {
            o->changes = true;
        } else if (strcmp(a, "--tls") == 0) {
            o->tls = true;
        } else if (strcmp(a, "--insecure") == 0) {
            o->insecure = true;
        } else if (strcmp(a, "--ca") == 0) {
            NEED_VALUE();
            o->ca = v;
        } else if (strcmp(a, "--cert") == 0) {
            NEED_VALUE();
            o->cert = v;
        } else if (strcmp(a, "--key") == 0) {
            NEED_VALUE();
            o->key = v;
        } else if (strcmp(a, "--server-name") == 0) {
            NEED_VALUE();
            o->server_name = v;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            o->help = true;
        } else {
            return kgs_seterr(err, errlen, KGS_EINVAL, "query: unknown flag %s (see query --help)",
                              a);
        }
#undef NEED_VALUE
    }
    if (o->help)
        return 0;
    if (!o->address)
        return kgs_seterr(err, errlen, KGS_EINVAL, "query needs --address HOST:PORT");
    if ((o->cert != NULL) != (o->key != NULL))
        return kgs_seterr(err, errlen, KGS_EINVAL, "--cert and --key go together");
    if ((o->ca || o->cert || o->insecure || o->server_name) && !o->tls)
        return kgs_seterr(err, errlen, KGS_EINVAL, "--ca/--cert/--key/--insecure need --tls");
    if (o->changes && !o->watch)
        return kgs_seterr(err, errlen, KGS_EINVAL, "--changes needs --watch");
    if (o->count < 0)
        o->count = o->watch ? 0 : 1;
    return 0;
}

/* ---- messages ---------------------------------------------------------------------- */

/* Builds the ScaledObjectRef; values point into argv, keys (cut at '=')
 * from q->keyz. */
static void build_ref(query_t *q, Externalscaler__ScaledObjectRef *ref) {
    const query_opts_t *o = &q->o;
    Externalscaler__ScaledObjectRef__ScalerMetadataEntry *entries = q->entries;
    Externalscaler__ScaledObjectRef__ScalerMetadataEntry **entry_ptrs = q->entry_ptrs;
    externalscaler__scaled_object_ref__init(ref);
    ref->name = (char *)o->name;
    ref->namespace_ = (char *)o->namespace_;
    for (size_t i = 0; i < o->nmeta; i++) {
        externalscaler__scaled_object_ref__scaler_metadata_entry__init(&entries[i]);
        entries[i].key = q->keyz[i];
        entries[i].value = (char *)o->values[i];
        entry_ptrs[i] = &entries[i];
    }
    ref->n_scalermetadata = o->nmeta;
    ref->scalermetadata = entry_ptrs;
}

static uint8_t *pack(const ProtobufCMessage *m, size_t *len) {
    *len = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = malloc(*len ? *len : 1);
    if (buf)
        protobuf_c_message_pack(m, buf);
    return buf;
}

static void timestamp(char *out, size_t n) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    localtime_r(&ts.tv_sec, &tm);
    size_t w = strftime(out, n, "%H:%M:%S", &tm);
    snprintf(out + w, n - w, ".%03ld", ts.tv_nsec / 1000000);
}

/* ---- the round -------------------------------------------------------------------- */

static void start_round(query_t *q);
static void call_with_ref(query_t *q, const char *method, grpc_client_message_cb on_msg,
                          grpc_client_done_cb on_done, bool metrics_request);

static void round_finished(query_t *q) {
    if (q->quitting)
        return;
    q->rounds_done++;
    if (q->o.count && q->rounds_done >= q->o.count) {
        loop_stop(q->loop);
        return;
    }
    loop_timer_start(q->loop, &q->round_timer, clock_add_sat(loop_now(q->loop), q->o.interval_ns));
}

/* Prints TEXT after the time, unless --changes is on and LAST holds the
 * same text (a round that repeats the last one is not a change). */
static void emit(const query_t *q, strbuf_t *last, const char *text) {
    if (q->o.changes && strcmp(last->s, text) == 0)
        return;
    strbuf_clear(last);
    strbuf_printf(last, "%s", text);
    char ts[32];
    timestamp(ts, sizeof ts);
    printf("%s  %s\n", ts, text);
    fflush(stdout);
}

/* A number as a person writes it: 39, 0.5, 428.571 (three decimals at
 * most, no trailing zeros). */
static void fmt_number(char *buf, size_t n, double v) {
    if (!isfinite(v)) {
        snprintf(buf, n, "%g", v);
        return;
    }
    snprintf(buf, n, "%.3f", v);
    char *dot = strchr(buf, '.');
    if (!dot)
        return;
    char *e = buf + strlen(buf);
    while (e > dot + 1 && e[-1] == '0')
        *--e = '\0';
    if (e == dot + 1)
        *dot = '\0';
    if (strcmp(buf, "-0") == 0)
        strcpy(buf, "0");
}

/* Once per run: the flag that picks the mode the server speaks, when the
 * connection's failure showed it speaks the other one. */
static void mode_hint(query_t *q, const char *ts) {
    grpc_client_mode_hint_t h = grpc_client_mode_hint(q->client);
    if (q->mode_hinted || h == GRPC_CLIENT_MODE_OK)
        return;
    q->mode_hinted = true;
    if (h == GRPC_CLIENT_MODE_SERVER_TLS)
        printf("%s  hint: the server speaks TLS: add --tls, with --ca FILE to trust its "
               "certificate (--insecure skips the check)\n",
               ts);
    else
        printf("%s  hint: the server may speak plaintext HTTP/2 (h2c): try without --tls\n", ts);
}

/* A call's error line (the round goes on or ends: the caller says). */
static void print_error(query_t *q, const char *call, int status, const char *msg) {
    strbuf_t text;
    strbuf_init(&text);
    strbuf_printf(&text, "%s: %s: %s", call, grpc_status_name(status), msg);
    emit(q, &q->last_error, text.s);
    strbuf_free(&text);
    strbuf_clear(&q->last_round); /* after an error, the next answer is a change */
    char ts[32];
    timestamp(ts, sizeof ts);
    mode_hint(q, ts);
    fflush(stdout);
    q->exit_code = 1;
}

static void round_error(query_t *q, const char *call, int status, const char *msg) {
    if (q->quitting)
        return;
    print_error(q, call, status, msg);
    round_finished(q);
}

static long replicas_average_value(double value, double target, long max) {
    double d = ceil(value / target - 1e-9);
    if (d < 1)
        d = 1;
    return d > (double)max ? max : (long)d;
}

/* The decision behind the value (the server's Explain): a line each for
 * the signals, the latency targets, the engines and the queueing model. */
static void on_explain_msg(void *ud, const uint8_t *msg, size_t len) {
    query_t *q = ud;
    Externalscaler__GetMetricsResponse *r =
        externalscaler__get_metrics_response__unpack(NULL, len, msg);
    if (!r)
        return;
    size_t n = r->n_metricvalues;
    const char **names = calloc(n ? n : 1, sizeof *names);
    double *values = calloc(n ? n : 1, sizeof *values);
    strbuf_t lines[EXPLAIN_LINES];
    for (int k = 0; k < EXPLAIN_LINES; k++)
        strbuf_init(&lines[k]);
    if (names && values) {
        for (size_t i = 0; i < n; i++) {
            names[i] = r->metricvalues[i]->metricname ? r->metricvalues[i]->metricname : "";
            values[i] = r->metricvalues[i]->metricvaluefloat;
        }
        explain_text(names, values, n, q->queueing, lines);
    }
    for (int k = 0; k < EXPLAIN_LINES; k++) {
        if (lines[k].len)
            emit(q, &q->last_explain[k], lines[k].s);
        strbuf_free(&lines[k]);
    }
    free(names);
    free(values);
    externalscaler__get_metrics_response__free_unpacked(r, NULL);
}

static void on_explain_done(void *ud, int status, const char *msg) {
    query_t *q = ud;
    /* a GPU trigger (FAILED_PRECONDITION) has no decision to show; an
     * older server does not know the method */
    if (status != GRPC_OK && status != GRPC_FAILED_PRECONDITION && status != GRPC_UNIMPLEMENTED) {
        round_error(q, "Explain", status, msg);
        return;
    }
    round_finished(q);
}

static void on_is_active_msg(void *ud, const uint8_t *msg, size_t len) {
    query_t *q = ud;
    Externalscaler__IsActiveResponse *r =
        externalscaler__is_active_response__unpack(NULL, len, msg);
    if (!r)
        return;
    q->have_active = true;
    bool active = r->result;
    externalscaler__is_active_response__free_unpacked(r, NULL);
    /* KEDA reads the float fields when they are > 0, else the ints. */
    double target = q->target > 0 ? q->target : (double)q->target_int;
    double value = q->value > 0 ? q->value : (double)q->value_int;
    char tv[32], vv[32];
    fmt_number(tv, sizeof tv, target);
    fmt_number(vv, sizeof vv, value);
    strbuf_t text;
    strbuf_init(&text);
    if (q->metrics_failed) {
        /* GetMetrics failed, yet IsActive answered: a queue reads work
         * while the value is unknown (docs/configuration.md, "A queue
         * always speaks at zero") */
        strbuf_printf(&text, "%-22s target %-8s value unknown    active %-5s  replicas: %s",
                      q->metric_name, tv, active ? "true" : "false",
                      active ? "KEDA wakes a workload at 0 to 1; the HPA keeps its count "
                               "(GetMetrics failed)"
                             : "0 once cooldownPeriod passes");
    } else {
        long avg = active ? replicas_average_value(value, target, q->o.max_replicas) : 0;
        strbuf_printf(&text,
                      "%-22s target %-8s value %-10s active %-5s  replicas: %ld (AverageValue)",
                      q->metric_name, tv, vv, active ? "true" : "false", avg);
        if (q->o.replicas >= 0) {
            long cur = q->o.replicas;
            long v = 0;
            if (active) {
                double d = cur > 0 ? ceil((double)cur * value / target - 1e-9) : 1;
                v = d < 1 ? 1 : (d > (double)q->o.max_replicas ? q->o.max_replicas : (long)d);
            }
            strbuf_printf(&text, ", %ld (Value, from %ld)", v, cur);
        }
    }
    emit(q, &q->last_round, text.s);
    strbuf_free(&text);
    if (!q->metrics_failed)
        strbuf_clear(&q->last_error);
}

static void on_is_active_done(void *ud, int status, const char *msg) {
    query_t *q = ud;
    if (status != GRPC_OK && q->metrics_failed) {
        /* the value and the activity are both unknown: say why */
        call_with_ref(q, "/kgs.v1.Inspect/Explain", on_explain_msg, on_explain_done, false);
        return;
    }
    if (status != GRPC_OK) {
        round_error(q, "IsActive", status, msg);
        return;
    }
    if (!q->have_active) {
        round_error(q, "IsActive", GRPC_INTERNAL, "no decodable IsActiveResponse");
        return;
    }
    /* the decision behind the answer (a GPU trigger has none: FAILED_PRECONDITION) */
    call_with_ref(q, "/kgs.v1.Inspect/Explain", on_explain_msg, on_explain_done, false);
}

static void on_metrics_msg(void *ud, const uint8_t *msg, size_t len) {
    query_t *q = ud;
    Externalscaler__GetMetricsResponse *r =
        externalscaler__get_metrics_response__unpack(NULL, len, msg);
    if (!r)
        return;
    if (r->n_metricvalues > 0) {
        q->value = r->metricvalues[0]->metricvaluefloat;
        q->value_int = r->metricvalues[0]->metricvalue;
        q->have_value = true;
    }
    externalscaler__get_metrics_response__free_unpacked(r, NULL);
}

static void on_metrics_done(void *ud, int status, const char *msg) {
    query_t *q = ud;
    if (status != GRPC_OK) {
        /* KEDA asks IsActive on its own loop even when GetMetrics fails:
         * so does a round, and Explain says what failed */
        if (q->quitting)
            return;
        print_error(q, "GetMetrics", status, msg);
        q->metrics_failed = true;
        call_with_ref(q, "IsActive", on_is_active_msg, on_is_active_done, false);
        return;
    }
    if (!q->have_value) {
        round_error(q, "GetMetrics", GRPC_INTERNAL,
                    "the response held no metric value (or could not be decoded)");
        return;
    }
    call_with_ref(q, "IsActive", on_is_active_msg, on_is_active_done, false);
}

static void on_spec_msg(void *ud, const uint8_t *msg, size_t len) {
    query_t *q = ud;
    Externalscaler__GetMetricSpecResponse *r =
        externalscaler__get_metric_spec_response__unpack(NULL, len, msg);
    if (!r)
        return;
    if (r->n_metricspecs > 0) {
        snprintf(q->metric_name, sizeof q->metric_name, "%s", r->metricspecs[0]->metricname);
        q->target = r->metricspecs[0]->targetsizefloat;
        q->target_int = r->metricspecs[0]->targetsize;
        q->have_spec = true;
    }
    externalscaler__get_metric_spec_response__free_unpacked(r, NULL);
}

static void on_spec_done(void *ud, int status, const char *msg) {
    query_t *q = ud;
    if (status != GRPC_OK) {
        round_error(q, "GetMetricSpec", status, msg);
        return;
    }
    if (!q->have_spec) {
        round_error(q, "GetMetricSpec", GRPC_INTERNAL,
                    "the response held no metric spec (or could not be decoded)");
        return;
    }
    call_with_ref(q, "GetMetrics", on_metrics_msg, on_metrics_done, true);
}

/* A call; when the connection has closed (the server restarted or went
 * away) and this runs from a timer, on a new connection, as KEDA's gRPC
 * channel reconnects on its own. Never from a callback of the old
 * connection, which is freed here. */
static int client_call(query_t *q, const char *path, const uint8_t *buf, size_t len,
                       uint64_t timeout_ns, grpc_client_message_cb on_msg,
                       grpc_client_done_cb on_done) {
    int rc = grpc_client_call(q->client, path, buf, len, timeout_ns, on_msg, on_done, q, NULL);
    if (rc != KGS_ESTATE || !q->may_reconnect)
        return rc;
    grpc_client_t *fresh;
    char err[256];
    if (grpc_client_connect(q->loop, &q->co, &fresh, err, sizeof err) != 0)
        return rc;
    grpc_client_free(q->client); /* closed: no call of ours is pending on it */
    q->client = fresh;
    return grpc_client_call(q->client, path, buf, len, timeout_ns, on_msg, on_done, q, NULL);
}

static void call_with_ref(query_t *q, const char *method, grpc_client_message_cb on_msg,
                          grpc_client_done_cb on_done, bool metrics_request) {
    Externalscaler__ScaledObjectRef ref;
    build_ref(q, &ref);
    size_t len;
    uint8_t *buf;
    if (metrics_request) {
        Externalscaler__GetMetricsRequest req = EXTERNALSCALER__GET_METRICS_REQUEST__INIT;
        req.scaledobjectref = &ref;
        req.metricname = q->metric_name;
        buf = pack(&req.base, &len);
    } else {
        buf = pack(&ref.base, &len);
    }
    char path[96];
    if (method[0] == '/')
        snprintf(path, sizeof path, "%s", method);
    else
        snprintf(path, sizeof path, "/externalscaler.ExternalScaler/%s", method);
    int rc = buf ? client_call(q, path, buf, len, q->o.timeout_ns, on_msg, on_done) : KGS_ENOMEM;
    free(buf);
    if (rc != 0)
        round_error(q, method, GRPC_UNAVAILABLE, "connection is closed");
}

static void start_round(query_t *q) {
    q->value = q->target = 0;
    q->value_int = q->target_int = 0;
    q->metric_name[0] = '\0';
    q->have_spec = q->have_value = q->have_active = false;
    q->metrics_failed = false;
    q->may_reconnect = true;
    call_with_ref(q, "GetMetricSpec", on_spec_msg, on_spec_done, false);
    q->may_reconnect = false;
}

static void on_round_timer(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)loop;
    (void)t;
    start_round(ud);
}

/* ---- the stream (--watch) ------------------------------------------------------- */

static void on_stream_msg(void *ud, const uint8_t *msg, size_t len) {
    query_t *q = ud;
    Externalscaler__IsActiveResponse *r =
        externalscaler__is_active_response__unpack(NULL, len, msg);
    if (!r)
        return;
    emit(q, &q->last_push,
         r->result ? "StreamIsActive push: active true" : "StreamIsActive push: active false");
    externalscaler__is_active_response__free_unpacked(r, NULL);
}

static void on_stream_done(void *ud, int status, const char *msg) {
    query_t *q = ud;
    q->stream_open = false;
    strbuf_clear(&q->last_push); /* a new stream's first push is news */
    if (q->quitting)
        return;
    if (status == GRPC_OK)
        q->stream_backoff_s = 2;
    unsigned wait = q->stream_backoff_s;
    char ts[32];
    timestamp(ts, sizeof ts);
    printf("%s  StreamIsActive ended: %s%s%s; reopening in %u s\n", ts, grpc_status_name(status),
           msg[0] ? ": " : "", msg, wait);
    mode_hint(q, ts);
    fflush(stdout);
    if (status != GRPC_OK)
        q->stream_backoff_s = wait * 2 > 60 ? 60 : wait * 2;
    loop_timer_start(q->loop, &q->stream_timer,
                     clock_add_sat(loop_now(q->loop), (uint64_t)wait * 1000000000ull));
}

static void open_stream(query_t *q) {
    Externalscaler__ScaledObjectRef ref;
    build_ref(q, &ref);
    size_t len;
    uint8_t *buf = pack(&ref.base, &len);
    q->may_reconnect = true;
    int rc = buf ? client_call(q, "/externalscaler.ExternalScaler/StreamIsActive", buf, len, 0,
                               on_stream_msg, on_stream_done)
                 : KGS_ENOMEM;
    q->may_reconnect = false;
    free(buf);
    if (rc == 0) {
        q->stream_open = true;
        return;
    }
    /* not even started (the server is not there): the same backoff */
    unsigned wait = q->stream_backoff_s;
    q->stream_backoff_s = wait * 2 > 60 ? 60 : wait * 2;
    loop_timer_start(q->loop, &q->stream_timer,
                     clock_add_sat(loop_now(q->loop), (uint64_t)wait * 1000000000ull));
}

static void on_stream_timer(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)loop;
    (void)t;
    open_stream(ud);
}

static void on_signal(loop_t *loop, int fd, uint32_t events, void *ud) {
    (void)events;
    (void)ud;
    struct signalfd_siginfo si;
    while (read(fd, &si, sizeof si) > 0) {
    }
    loop_stop(loop);
}

/* The trigger sizes with the queueing model (metricType demand without
 * per-signal targets): then a missing pod list is worth saying. Parsed as
 * the server would; a trigger that does not parse is the server's to
 * refuse. */
static bool uses_queueing_model(const query_opts_t *o) {
    metadata_pair_t pairs[MAX_METADATA];
    for (size_t i = 0; i < o->nmeta; i++) {
        pairs[i].key = o->keys[i]; /* "key=value": the key ends before the '=' */
        pairs[i].key_len = (size_t)(o->values[i] - 1 - o->keys[i]);
        pairs[i].value = o->values[i];
        pairs[i].value_len = strlen(o->values[i]);
    }
    trigger_config_t *c = malloc(sizeof *c);
    bool q = c && trigger_config_parse(pairs, o->nmeta, c, NULL, 0) == 0 &&
             c->demand.type == DEMAND_COMPOSITE && c->demand.sizing == DEMAND_MODEL_QUEUEING;
    free(c);
    return q;
}

int query_main(int argc, char **argv) {
    query_t q;
    memset(&q, 0, sizeof q);
    char err[512];
    if (query_parse(argc, argv, &q.o, err, sizeof err) != 0) {
        fprintf(stderr, "keda-gpu-scaler query: %s\n", err);
        return 2;
    }
    if (q.o.help) {
        fputs(query_usage_text, stdout);
        return 0;
    }
    q.queueing = uses_queueing_model(&q.o);
    strbuf_init(&q.last_round);
    strbuf_init(&q.last_error);
    strbuf_init(&q.last_push);
    for (int k = 0; k < EXPLAIN_LINES; k++)
        strbuf_init(&q.last_explain[k]);
    if (q.o.tls) {
        q.tls = tls_client_ctx_new(q.o.ca, q.o.cert, q.o.key, q.o.insecure, err, sizeof err);
        if (!q.tls) {
            fprintf(stderr, "keda-gpu-scaler query: %s\n", err);
            return 2;
        }
    }
    if (loop_new(&q.loop, err, sizeof err) != 0) {
        fprintf(stderr, "keda-gpu-scaler query: %s\n", err);
        SSL_CTX_free(q.tls);
        return 1;
    }
    q.co =
        (grpc_client_opts_t){.address = q.o.address, .tls = q.tls, .server_name = q.o.server_name};
    if (grpc_client_connect(q.loop, &q.co, &q.client, err, sizeof err) != 0) {
        fprintf(stderr, "keda-gpu-scaler query: %s\n", err);
        loop_free(q.loop);
        SSL_CTX_free(q.tls);
        return 1;
    }
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    q.sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (q.sigfd >= 0)
        q.sig_io = loop_io_add(q.loop, q.sigfd, EPOLLIN, on_signal, &q);

    loop_timer_init(&q.round_timer, on_round_timer, &q);
    loop_timer_init(&q.stream_timer, on_stream_timer, &q);
    q.stream_backoff_s = 2;
    bool keys_ok = true;
    for (size_t i = 0; i < q.o.nmeta && keys_ok; i++)
        keys_ok = (q.keyz[i] = strndup(q.o.keys[i], (size_t)(q.o.values[i] - 1 - q.o.keys[i])));
    if (keys_ok) {
        if (q.o.watch)
            open_stream(&q);
        start_round(&q);
        loop_run(q.loop);
    } else {
        fprintf(stderr, "keda-gpu-scaler query: out of memory\n");
        q.exit_code = 1;
    }

    q.quitting = true;
    loop_timer_stop(q.loop, &q.round_timer);
    loop_timer_stop(q.loop, &q.stream_timer);
    grpc_client_free(q.client);
    loop_io_remove(q.loop, q.sig_io);
    if (q.sigfd >= 0)
        close(q.sigfd);
    loop_free(q.loop);
    SSL_CTX_free(q.tls);
    strbuf_free(&q.last_round);
    strbuf_free(&q.last_error);
    strbuf_free(&q.last_push);
    for (int k = 0; k < EXPLAIN_LINES; k++)
        strbuf_free(&q.last_explain[k]);
    for (size_t i = 0; i < q.o.nmeta; i++)
        free(q.keyz[i]);
    return q.exit_code;
}
