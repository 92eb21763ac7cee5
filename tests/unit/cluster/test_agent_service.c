/* test_agent_service.c - Agent/Watch end to end over loopback h2c: a real
 * grpc_server dispatching to the agent service and a real grpc_client
 * decoding what arrives. The first snapshot comes at once (or with the
 * first publish), each publish is one message, bad requests end with their
 * status, a cancelled stream is forgotten, and shutdown ends streams OK.
 *
 * Not tested here: latest_only under a reader that stops reading. It needs
 * a client that stops consuming its HTTP/2 window, which grpc_client does
 * not offer; grpc_server's own tests own that behaviour. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cluster/agent_service.h"
#include "cluster/snapshot_codec.h"
#include "core/err.h"
#include "net/grpc_client.h"
#include "net/grpc_frame.h"
#include "net/grpc_server.h"
#include "net/loop.h"
#include "proto/cluster.pb-c.h"
#include "support/test_support.h"

#define MS UINT64_C(1000000)
#define MAX_MSGS 16

typedef struct fixture fixture_t;

/* What the test does after message n arrives (n counts from 1). */
typedef void (*on_nth_fn)(fixture_t *f, unsigned n);

struct fixture {
    loop_t *loop;
    grpc_server_t *server;
    agent_service_t *svc;
    grpc_client_t *client;
    grpc_client_call_t *call;
    loop_timer_t guard; /* bounds every test */
    loop_timer_t step;  /* scripted actions */
    void (*step_fn)(fixture_t *f);

    snapshot_t *current; /* what current_snapshot() returns */
    node_pods_t *pods;
    unsigned snapshot_calls;

    on_nth_fn on_nth;
    unsigned nmsgs;
    uint64_t seqs[MAX_MSGS];
    mono_ns_t taken[MAX_MSGS];
    bool pods_known[MAX_MSGS];
    unsigned decode_failures;
    int done_status;
    char done_message[256];
    unsigned done_calls;
    bool guard_fired;
};

/* ---- fixture ------------------------------------------------------------------- */

static snapshot_t *make_snapshot(uint64_t seq, mono_ns_t taken) {
    return ts_one_gpu_snapshot("node-a", "GPU-aaaa", seq, taken);
}

static void set_current(fixture_t *f, snapshot_t *s) {
    snapshot_unref(f->current);
    f->current = s;
}

static snapshot_t *current_snapshot(void *ud) {
    fixture_t *f = ud;
    f->snapshot_calls++;
    return snapshot_ref(f->current);
}

static const node_pods_t *current_pods(void *ud) {
    fixture_t *f = ud;
    return f->pods;
}

/* The server dispatcher main would have: everything to the agent service
 * here, so its own UNIMPLEMENTED answer is exercised too. */
static void on_request(grpc_call_t *call, const char *path, const uint8_t *msg, size_t len,
                       void *ud) {
    agent_service_on_request(call, path, msg, len, ud);
}

static void on_call_gone(grpc_call_t *call, void *call_ud, void *ud) {
    assert_true(agent_service_owns_call(ud, call));
    agent_service_on_call_gone(call, call_ud, ud);
}

static void on_guard(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)t;
    fixture_t *f = ud;
    f->guard_fired = true;
    loop_stop(loop);
}

static void on_step(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)loop;
    (void)t;
    fixture_t *f = ud;
    f->step_fn(f);
}

static void schedule(fixture_t *f, uint64_t after_ns, void (*fn)(fixture_t *f)) {
    f->step_fn = fn;
    assert_int_equal(
        loop_timer_start(f->loop, &f->step, clock_add_sat(loop_now(f->loop), after_ns)), 0);
}

static int setup(void **state) {
    fixture_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    char err[256];
    assert_int_equal(loop_new(&f->loop, err, sizeof err), 0);
    agent_service_opts_t ao = {.loop = f->loop,
                               .current_snapshot = current_snapshot,
                               .current_pods = current_pods,
                               .user_data = f,
                               .sample_interval_ms = 500};
    assert_int_equal(agent_service_new(&ao, &f->svc), 0);
    grpc_server_opts_t so = {.listen_address = "127.0.0.1",
                             .port = 0,
                             .max_connections = 16,
                             .idle_timeout_ns = 0,
                             .max_concurrent_streams = 100};
    grpc_server_handlers_t h = {.on_request = on_request, .on_call_gone = on_call_gone};
    if (grpc_server_start(f->loop, &so, &h, f->svc, &f->server, err, sizeof err) != 0)
        fail_msg("grpc_server_start: %s", err);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%u", grpc_server_port(f->server));
    grpc_client_opts_t co = {.address = addr};
    if (grpc_client_connect(f->loop, &co, &f->client, err, sizeof err) != 0)
        fail_msg("grpc_client_connect: %s", err);
    loop_timer_init(&f->guard, on_guard, f);
    loop_timer_init(&f->step, on_step, f);
    f->done_status = -1;
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture_t *f = *state;
    loop_timer_stop(f->loop, &f->guard);
    loop_timer_stop(f->loop, &f->step);
    grpc_client_free(f->client);
    grpc_server_free(f->server);
    agent_service_free(f->svc);
    loop_free(f->loop);
    snapshot_unref(f->current);
    node_pods_free(f->pods);
    free(f);
    return 0;
}

/* ---- client side ------------------------------------------------------------------ */

static void on_message(void *ud, const uint8_t *msg, size_t len) {
    fixture_t *f = ud;
    snapshot_t *s = NULL;
    node_pods_t *pods = NULL;
    char err[256];
    if (snapshot_codec_decode(msg, len, loop_now(f->loop), &s, &pods, err, sizeof err) != 0) {
        fprintf(stderr, "decode: %s\n", err);
        f->decode_failures++;
        return;
    }
    if (f->nmsgs < MAX_MSGS) {
        f->seqs[f->nmsgs] = s->seq;
        f->taken[f->nmsgs] = s->taken_mono;
        f->pods_known[f->nmsgs] = pods->known;
    }
    f->nmsgs++;
    snapshot_unref(s);
    node_pods_free(pods);
    if (f->on_nth)
        f->on_nth(f, f->nmsgs);
}

static void on_done(void *ud, int status, const char *message) {
    fixture_t *f = ud;
    f->done_calls++;
    f->done_status = status;
    snprintf(f->done_message, sizeof f->done_message, "%s", message ? message : "");
    f->call = NULL;
    loop_stop(f->loop);
}

static void start_watch_raw(fixture_t *f, const char *path, const uint8_t *req, size_t len) {
    assert_int_equal(
        grpc_client_call(f->client, path, req, len, 0, on_message, on_done, f, &f->call), 0);
}

static void start_watch(fixture_t *f, uint32_t version) {
    Kgs__Cluster__V1__WatchRequest req = KGS__CLUSTER__V1__WATCH_REQUEST__INIT;
    req.protocol_version = version;
    uint8_t buf[16];
    size_t n = kgs__cluster__v1__watch_request__pack(&req, buf);
    start_watch_raw(f, AGENT_SERVICE_WATCH_PATH, buf, n);
}

static void run(fixture_t *f) {
    assert_int_equal(
        loop_timer_start(f->loop, &f->guard, clock_add_sat(clock_mono_now(), 5000 * MS)), 0);
    assert_int_equal(loop_run(f->loop), 0);
    loop_timer_stop(f->loop, &f->guard);
    assert_false(f->guard_fired);
}

/* ---- cases ------------------------------------------------------------------------ */

/* 1 arrives at open; each arrival publishes the next; after 3, shutdown. */
static void publish_next_then_shutdown(fixture_t *f, unsigned n) {
    if (n < 3) {
        set_current(f, make_snapshot(n + 1, loop_now(f->loop)));
        assert_int_equal(agent_service_publish(f->svc), 0);
    } else {
        assert_int_equal(agent_service_stream_count(f->svc), 1);
        agent_service_shutdown(f->svc);
        assert_int_equal(agent_service_stream_count(f->svc), 0);
    }
}

static void test_agent_service_sends_current_at_once_then_each_publish_then_ends_ok(void **state) {
    fixture_t *f = *state;
    /* Taken 40 ms before the stream opens: the age survives the trip. */
    mono_ns_t now = clock_mono_now();
    set_current(f, make_snapshot(1, now - 40 * MS));
    assert_int_equal(node_pods_new(NULL, 0, &f->pods, NULL, 0), 0);
    f->on_nth = publish_next_then_shutdown;
    start_watch(f, 1);
    run(f);
    assert_int_equal(f->done_calls, 1);
    assert_int_equal(f->done_status, GRPC_OK);
    assert_int_equal(f->decode_failures, 0);
    assert_int_equal(f->nmsgs, 3);
    assert_int_equal(f->seqs[0], 1);
    assert_int_equal(f->seqs[1], 2);
    assert_int_equal(f->seqs[2], 3);
    assert_true(f->pods_known[0]);
    /* Same clock on both ends here: the rebuilt taken_mono is never
     * earlier than the real one (ages round down) and later only by the
     * time the message spent between encode and decode. */
    assert_true(f->taken[0] >= now - 40 * MS);
    assert_true(f->taken[0] <= now - 40 * MS + 100 * MS);
    /* One snapshot read per open and per publish, none more. */
    assert_int_equal(f->snapshot_calls, 3);
    assert_int_equal(agent_service_stream_count(f->svc), 0);
}

static void check_waiting_then_publish(fixture_t *f) {
    assert_int_equal(f->nmsgs, 0);
    assert_int_equal(agent_service_stream_count(f->svc), 1);
    set_current(f, make_snapshot(7, loop_now(f->loop)));
    assert_int_equal(agent_service_publish(f->svc), 0);
}

static void shutdown_after_first(fixture_t *f, unsigned n) {
    (void)n;
    agent_service_shutdown(f->svc);
}

static void test_agent_service_stream_waits_for_the_first_snapshot(void **state) {
    fixture_t *f = *state;
    /* pods source returns NULL: the aggregator learns pods are unknown. */
    f->on_nth = shutdown_after_first;
    start_watch(f, 1);
    schedule(f, 100 * MS, check_waiting_then_publish);
    run(f);
    assert_int_equal(f->done_status, GRPC_OK);
    assert_int_equal(f->nmsgs, 1);
    assert_int_equal(f->seqs[0], 7);
    assert_false(f->pods_known[0]);
}

static void test_agent_service_publish_without_streams_reads_nothing(void **state) {
    fixture_t *f = *state;
    set_current(f, make_snapshot(1, 0));
    assert_int_equal(agent_service_publish(f->svc), 0);
    assert_int_equal(f->snapshot_calls, 0);
}

static void test_agent_service_refuses_protocol_version_0_and_2(void **state) {
    fixture_t *f = *state;
    set_current(f, make_snapshot(1, 0));
    start_watch(f, 0);
    run(f);
    assert_int_equal(f->done_status, GRPC_FAILED_PRECONDITION);
    assert_string_equal(f->done_message, "WatchRequest protocol_version 0 is not supported: this "
                                         "agent speaks version 1");
    assert_int_equal(f->nmsgs, 0);

    f->done_calls = 0;
    start_watch(f, 2);
    run(f);
    assert_int_equal(f->done_calls, 1);
    assert_int_equal(f->done_status, GRPC_FAILED_PRECONDITION);
    assert_non_null(strstr(f->done_message, "protocol_version 2 is not supported"));
    assert_int_equal(agent_service_stream_count(f->svc), 0);
}

static void test_agent_service_refuses_malformed_request_and_other_methods(void **state) {
    fixture_t *f = *state;
    const uint8_t junk[] = {0x08}; /* a tag without its varint */
    start_watch_raw(f, AGENT_SERVICE_WATCH_PATH, junk, sizeof junk);
    run(f);
    assert_int_equal(f->done_status, GRPC_INVALID_ARGUMENT);
    assert_string_equal(f->done_message, "malformed WatchRequest");

    start_watch_raw(f, "/kgs.cluster.v1.Agent/Nope", NULL, 0);
    run(f);
    assert_int_equal(f->done_status, GRPC_UNIMPLEMENTED);
    assert_string_equal(f->done_message, "method /kgs.cluster.v1.Agent/Nope is not implemented");
    assert_true(agent_service_handles(AGENT_SERVICE_WATCH_PATH));
    assert_false(agent_service_handles("/kgs.cluster.v1.Agent/Nope"));
    assert_false(agent_service_handles(NULL));
}

static void expect_stream_gone(fixture_t *f) {
    if (agent_service_stream_count(f->svc) == 0) {
        loop_stop(f->loop);
        return;
    }
    schedule(f, 10 * MS, expect_stream_gone); /* the RST_STREAM is on its way */
}

static void cancel_after_first(fixture_t *f, unsigned n) {
    (void)n;
    assert_int_equal(agent_service_stream_count(f->svc), 1);
    grpc_client_cancel(f->call);
}

static void on_done_keep_running(void *ud, int status, const char *message) {
    fixture_t *f = ud;
    f->done_calls++;
    f->done_status = status;
    (void)message;
    f->call = NULL;
    schedule(f, 0, expect_stream_gone);
}

static void test_agent_service_forgets_a_cancelled_stream(void **state) {
    fixture_t *f = *state;
    set_current(f, make_snapshot(1, 0));
    f->on_nth = cancel_after_first;
    Kgs__Cluster__V1__WatchRequest req = KGS__CLUSTER__V1__WATCH_REQUEST__INIT;
    req.protocol_version = 1;
    uint8_t buf[16];
    size_t n = kgs__cluster__v1__watch_request__pack(&req, buf);
    assert_int_equal(grpc_client_call(f->client, AGENT_SERVICE_WATCH_PATH, buf, n, 0, on_message,
                                      on_done_keep_running, f, &f->call),
                     0);
    run(f);
    assert_int_equal(f->done_calls, 1);
    assert_int_equal(f->done_status, GRPC_CANCELLED);
    assert_int_equal(f->nmsgs, 1);
    assert_int_equal(agent_service_stream_count(f->svc), 0);
    /* Publishing to nobody is fine. */
    assert_int_equal(agent_service_publish(f->svc), 0);
}

static void test_agent_service_refuses_new_streams_after_shutdown(void **state) {
    fixture_t *f = *state;
    set_current(f, make_snapshot(1, 0));
    agent_service_shutdown(f->svc);
    start_watch(f, 1);
    run(f);
    assert_int_equal(f->done_status, GRPC_UNAVAILABLE);
    assert_string_equal(f->done_message, "agent is shutting down");
    assert_int_equal(f->nmsgs, 0);
}

static void test_agent_service_new_checks_its_options(void **state) {
    (void)state;
    agent_service_t *svc = (agent_service_t *)&svc;
    agent_service_opts_t o = {0};
    assert_int_equal(agent_service_new(&o, &svc), KGS_EINVAL);
    assert_null(svc);
    agent_service_free(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_agent_service_sends_current_at_once_then_each_publish_then_ends_ok, setup,
            teardown),
        cmocka_unit_test_setup_teardown(test_agent_service_stream_waits_for_the_first_snapshot,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_agent_service_publish_without_streams_reads_nothing,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_agent_service_refuses_protocol_version_0_and_2, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_agent_service_refuses_malformed_request_and_other_methods, setup, teardown),
        cmocka_unit_test_setup_teardown(test_agent_service_forgets_a_cancelled_stream, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_agent_service_refuses_new_streams_after_shutdown,
                                        setup, teardown),
        cmocka_unit_test(test_agent_service_new_checks_its_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
