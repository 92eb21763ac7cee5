/* test_agent_pool.c - the aggregator's Watch streams end to end over
 * loopback h2c: real grpc_servers serving agent_service (one per fake
 * agent, each with its own node name) and the pool feeding a real
 * cluster_view. The loop is driven by a poll timer that stops it when a
 * condition holds, with a guard bounding every wait. The backoff and the
 * wire peek are static, so the .c file is included (STYLE rule 1). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <cmocka.h>

#include "cluster/agent_pool.c"
#include "cluster/agent_service.h"
#include "cluster/cluster_view.h"
#include "cluster/snapshot_codec.h"
#include "core/err.h"
#include "net/grpc_frame.h"
#include "net/grpc_server.h"
#include "net/loop.h"
#include "support/test_support.h"

#define MS NS_PER_MS
#define NAGENTS 3

typedef struct fixture fixture_t;

typedef struct {
    fixture_t *f;
    int index;
    grpc_server_t *server;
    agent_service_t *svc;
    snapshot_t *current;
    uint16_t port;
    char addr[32];
    uint32_t sample_interval_ms;
    bool garbage_first; /* answer Watch with junk, then a real snapshot */
} fake_agent_t;

struct fixture {
    loop_t *loop;
    cluster_view_t *view;
    agent_pool_t *pool;
    fake_agent_t agents[NAGENTS];
    loop_timer_t guard, poll;
    bool guard_fired;
    bool (*until)(fixture_t *f);
    unsigned changes;
    bool free_in_change, clear_in_change;
};

/* ---- fake agents ----------------------------------------------------------------- */

static snapshot_t *make_snapshot(const fake_agent_t *a, uint64_t seq, mono_ns_t taken) {
    char node[32], uuid[32];
    snprintf(node, sizeof node, "node-%d", a->index);
    snprintf(uuid, sizeof uuid, "GPU-%04d", a->index);
    return ts_one_gpu_snapshot(node, uuid, seq, taken);
}

static snapshot_t *current_snapshot(void *ud) {
    fake_agent_t *a = ud;
    return snapshot_ref(a->current);
}

static void on_request(grpc_call_t *call, const char *path, const uint8_t *msg, size_t len,
                       void *ud) {
    fake_agent_t *a = ud;
    if (a->garbage_first && agent_service_handles(path)) {
        /* Not a NodeSnapshot, then a good one, and the stream stays open. */
        static const uint8_t junk[] = {0x08, 0x07, 0xff};
        assert_int_equal(grpc_call_send(call, junk, sizeof junk, false), 0);
        uint8_t *buf = NULL;
        size_t n = 0;
        snapshot_t *s = make_snapshot(a, 1, loop_now(a->f->loop));
        assert_int_equal(snapshot_codec_encode(s, NULL, loop_now(a->f->loop), a->sample_interval_ms,
                                               &buf, &n, NULL, 0),
                         0);
        assert_int_equal(grpc_call_send(call, buf, n, false), 0);
        free(buf);
        snapshot_unref(s);
        grpc_call_set_user_data(call, a);
        return;
    }
    agent_service_on_request(call, path, msg, len, a->svc);
}

static void on_call_gone(grpc_call_t *call, void *call_ud, void *ud) {
    fake_agent_t *a = ud;
    if (call_ud == a)
        return; /* the garbage stream */
    agent_service_on_call_gone(call, call_ud, a->svc);
}

/* Starts agent i on `port` (0 = ephemeral) serving `seq` (0 = nothing yet). */
static void agent_start(fixture_t *f, int i, uint16_t port, uint64_t seq) {
    fake_agent_t *a = &f->agents[i];
    a->f = f;
    a->index = i;
    if (!a->sample_interval_ms)
        a->sample_interval_ms = 20;
    snapshot_unref(a->current);
    a->current = seq ? make_snapshot(a, seq, loop_now(f->loop)) : NULL;
    agent_service_opts_t ao = {.loop = f->loop,
                               .current_snapshot = current_snapshot,
                               .user_data = a,
                               .sample_interval_ms = a->sample_interval_ms};
    assert_int_equal(agent_service_new(&ao, &a->svc), 0);
    grpc_server_opts_t so = {.listen_address = "127.0.0.1",
                             .port = port,
                             .max_connections = 16,
                             .max_concurrent_streams = 100};
    grpc_server_handlers_t h = {.on_request = on_request, .on_call_gone = on_call_gone};
    char err[256];
    if (grpc_server_start(f->loop, &so, &h, a, &a->server, err, sizeof err) != 0)
        fail_msg("grpc_server_start: %s", err);
    a->port = grpc_server_port(a->server);
    snprintf(a->addr, sizeof a->addr, "127.0.0.1:%u", a->port);
}

static void agent_stop(fake_agent_t *a) {
    grpc_server_free(a->server);
    a->server = NULL;
    agent_service_free(a->svc);
    a->svc = NULL;
}

static void agent_publish(fixture_t *f, int i, uint64_t seq) {
    fake_agent_t *a = &f->agents[i];
    snapshot_unref(a->current);
    a->current = make_snapshot(a, seq, loop_now(f->loop));
    assert_int_equal(agent_service_publish(a->svc), 0);
}

/* ---- fixture ------------------------------------------------------------------- */

static void on_change(void *ud) {
    fixture_t *f = ud;
    f->changes++;
    if (f->free_in_change) {
        agent_pool_free(f->pool);
        f->pool = NULL;
    } else if (f->clear_in_change) {
        assert_int_equal(agent_pool_set_addresses(f->pool, NULL, 0), 0);
        f->clear_in_change = false;
    }
}

static void on_guard(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)t;
    fixture_t *f = ud;
    f->guard_fired = true;
    loop_stop(loop);
}

static void on_poll(loop_t *loop, loop_timer_t *t, void *ud) {
    fixture_t *f = ud;
    if (f->until && f->until(f)) {
        loop_stop(loop);
        return;
    }
    loop_timer_start(loop, t, clock_add_sat(loop_now(loop), 2 * MS));
}

/* Runs the loop until `until` holds (NULL: for bound_ms exactly); fails the
 * test when the guard fires first. */
static void run_until(fixture_t *f, bool (*until)(fixture_t *f), uint64_t bound_ms) {
    f->until = until;
    f->guard_fired = false;
    assert_int_equal(
        loop_timer_start(f->loop, &f->guard, clock_add_sat(clock_mono_now(), bound_ms * MS)), 0);
    assert_int_equal(loop_timer_start(f->loop, &f->poll, clock_mono_now()), 0);
    assert_int_equal(loop_run(f->loop), 0);
    loop_timer_stop(f->loop, &f->guard);
    loop_timer_stop(f->loop, &f->poll);
    if (until)
        assert_false(f->guard_fired);
}

static void new_pool(fixture_t *f, uint64_t idle_floor_ns) {
    agent_pool_opts_t o = {.loop = f->loop,
                           .view = f->view,
                           .on_change = on_change,
                           .user_data = f,
                           .backoff_min_ns = 50 * MS,
                           .backoff_max_ns = 200 * MS,
                           .idle_floor_ns = idle_floor_ns};
    assert_int_equal(agent_pool_new(&o, &f->pool), 0);
}

static void point_at(fixture_t *f, const int *which, size_t n) {
    const char *addrs[NAGENTS];
    for (size_t i = 0; i < n; i++)
        addrs[i] = f->agents[which[i]].addr;
    assert_int_equal(agent_pool_set_addresses(f->pool, addrs, n), 0);
}

static int setup(void **state) {
    fixture_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    char err[256];
    assert_int_equal(loop_new(&f->loop, err, sizeof err), 0);
    assert_int_equal(cluster_view_new(&f->view), 0);
    loop_timer_init(&f->guard, on_guard, f);
    loop_timer_init(&f->poll, on_poll, f);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture_t *f = *state;
    agent_pool_free(f->pool);
    for (int i = 0; i < NAGENTS; i++) {
        if (f->agents[i].server)
            agent_stop(&f->agents[i]);
        snapshot_unref(f->agents[i].current);
    }
    loop_timer_stop(f->loop, &f->guard);
    loop_timer_stop(f->loop, &f->poll);
    cluster_view_free(f->view);
    loop_free(f->loop);
    free(f);
    return 0;
}

/* ---- conditions ------------------------------------------------------------------ */

static const cluster_node_t *entry(fixture_t *f, int i) {
    for (size_t k = 0; k < cluster_view_count(f->view); k++) {
        const cluster_node_t *e = cluster_view_at(f->view, k);
        if (strcmp(e->address, f->agents[i].addr) == 0)
            return e;
    }
    return NULL;
}

static uint64_t seq_of(fixture_t *f, int i) {
    const cluster_node_t *e = entry(f, i);
    return e && e->snap ? e->snap->seq : 0;
}

static bool all_connected(fixture_t *f) {
    for (int i = 0; i < NAGENTS; i++) {
        const cluster_node_t *e = entry(f, i);
        if (!e || !e->connected || !e->snap)
            return false;
    }
    return true;
}

static bool agent1_at_seq2(fixture_t *f) {
    return seq_of(f, 1) == 2;
}

static bool agent0_down(fixture_t *f) {
    const cluster_node_t *e = entry(f, 0);
    return e && !e->connected;
}

static bool agent0_back_at_seq5(fixture_t *f) {
    const cluster_node_t *e = entry(f, 0);
    return e && e->connected && seq_of(f, 0) == 5;
}

static bool agent1_stream_gone(fixture_t *f) {
    return agent_service_stream_count(f->agents[1].svc) == 0;
}

static bool agent0_connected(fixture_t *f) {
    const cluster_node_t *e = entry(f, 0);
    return e && e->connected && e->snap;
}

static void start_all_and_connect(fixture_t *f) {
    for (int i = 0; i < NAGENTS; i++)
        agent_start(f, i, 0, 1);
    new_pool(f, 0);
    point_at(f, (const int[]){0, 1, 2}, NAGENTS);
    run_until(f, all_connected, 3000);
    assert_int_equal(agent_pool_connected(f->pool), NAGENTS);
}

/* ---- cases ------------------------------------------------------------------------ */

static void test_agent_pool_watches_every_agent_and_follows_publishes(void **state) {
    fixture_t *f = *state;
    start_all_and_connect(f);
    assert_int_equal(cluster_view_count(f->view), NAGENTS);
    for (int i = 0; i < NAGENTS; i++) {
        char node[16];
        snprintf(node, sizeof node, "node-%d", i);
        const cluster_node_t *e = cluster_view_find_node(f->view, node);
        assert_non_null(e);
        assert_string_equal(e->address, f->agents[i].addr);
        assert_int_equal(e->snap->seq, 1);
    }
    assert_true(f->changes >= 1);

    unsigned before = f->changes;
    agent_publish(f, 1, 2);
    run_until(f, agent1_at_seq2, 2000);
    assert_true(f->changes > before);
    assert_int_equal(seq_of(f, 0), 1);
    assert_int_equal(seq_of(f, 2), 1);
    assert_int_equal(entry(f, 1)->snap->gpus[0].gpu_util_pct, 2);
}

static void test_agent_pool_marks_a_stopped_agent_down_and_redials_it(void **state) {
    fixture_t *f = *state;
    start_all_and_connect(f);
    uint16_t port = f->agents[0].port;
    agent_stop(&f->agents[0]);
    run_until(f, agent0_down, 2000);
    const cluster_node_t *e = entry(f, 0);
    assert_true(e->error[0] != '\0');
    assert_non_null(e->snap); /* the last snapshot stays, ageing */
    assert_true(entry(f, 1)->connected);
    assert_true(entry(f, 2)->connected);
    assert_int_equal(agent_pool_connected(f->pool), NAGENTS - 1);

    /* Back on the same port: redialled within the backoff (cap 200 ms). */
    agent_start(f, 0, port, 5);
    assert_int_equal(f->agents[0].port, port);
    run_until(f, agent0_back_at_seq5, 2000);
    assert_int_equal(entry(f, 0)->error[0], '\0');
    assert_int_equal(agent_pool_connected(f->pool), NAGENTS);
}

static void test_agent_pool_forgets_a_removed_address(void **state) {
    fixture_t *f = *state;
    start_all_and_connect(f);
    point_at(f, (const int[]){2, 0}, 2);
    assert_int_equal(cluster_view_count(f->view), 2);
    assert_null(entry(f, 1));
    assert_null(cluster_view_find_node(f->view, "node-1"));
    assert_int_equal(agent_pool_connected(f->pool), 2);
    run_until(f, agent1_stream_gone, 2000);
    /* Publishing on the forgotten agent changes nothing. */
    agent_publish(f, 1, 9);
    agent_publish(f, 0, 3);
    run_until(f, NULL, 100);
    assert_null(entry(f, 1));
    assert_int_equal(seq_of(f, 0), 3);
    assert_true(entry(f, 0)->connected);
    assert_true(entry(f, 2)->connected);
}

static void test_agent_pool_can_be_freed_inside_on_change(void **state) {
    fixture_t *f = *state;
    agent_start(f, 0, 0, 1);
    new_pool(f, 0);
    f->free_in_change = true;
    point_at(f, (const int[]){0}, 1);
    run_until(f, NULL, 200);
    assert_null(f->pool);
    assert_int_equal(f->changes, 1);
    run_until(f, NULL, 50);
    assert_int_equal(f->changes, 1);
}

static bool view_empty_and_no_streams(fixture_t *f) {
    return cluster_view_count(f->view) == 0 && agent_service_stream_count(f->agents[0].svc) == 0;
}

static void test_agent_pool_can_drop_addresses_inside_on_change(void **state) {
    fixture_t *f = *state;
    agent_start(f, 0, 0, 1);
    new_pool(f, 0);
    f->clear_in_change = true;
    point_at(f, (const int[]){0}, 1);
    run_until(f, view_empty_and_no_streams, 2000);
    assert_int_equal(agent_pool_connected(f->pool), 0);
}

static bool agent0_idle_dropped(fixture_t *f) {
    const cluster_node_t *e = entry(f, 0);
    return e && !e->connected && strstr(e->error, "nothing received");
}

static void test_agent_pool_redials_an_agent_that_goes_silent(void **state) {
    fixture_t *f = *state;
    agent_start(f, 0, 0, 0); /* accepts Watch, sends nothing */
    new_pool(f, 100 * MS);
    point_at(f, (const int[]){0}, 1);
    run_until(f, agent0_idle_dropped, 2000);
    assert_null(entry(f, 0)->snap);
    /* Once it speaks, the redialled stream gets the snapshot at once. */
    agent_publish(f, 0, 1);
    run_until(f, agent0_connected, 2000);
    assert_int_equal(agent_pool_connected(f->pool), 1);
}

static void
test_agent_pool_waits_five_sample_intervals_before_calling_an_agent_silent(void **state) {
    fixture_t *f = *state;
    /* The agent reports a 1 s cadence: 5 s of silence, not the 100 ms floor. */
    f->agents[0].sample_interval_ms = 1000;
    agent_start(f, 0, 0, 1);
    new_pool(f, 100 * MS);
    point_at(f, (const int[]){0}, 1);
    run_until(f, agent0_connected, 2000);
    unsigned before = f->changes;
    run_until(f, NULL, 400);
    assert_true(entry(f, 0)->connected);
    assert_int_equal(f->changes, before);
}

static void test_agent_pool_drops_an_undecodable_message_but_keeps_the_stream(void **state) {
    fixture_t *f = *state;
    f->agents[0].garbage_first = true;
    agent_start(f, 0, 0, 0);
    new_pool(f, 0);
    point_at(f, (const int[]){0}, 1);
    run_until(f, agent0_connected, 2000);
    run_until(f, NULL, 100);
    const cluster_node_t *e = entry(f, 0);
    assert_true(e->connected);
    assert_int_equal(e->snap->seq, 1);
    assert_int_equal(agent_pool_connected(f->pool), 1);
    assert_int_equal(grpc_server_call_count(f->agents[0].server), 1);
}

static bool agent0_refused(fixture_t *f) {
    const cluster_node_t *e = entry(f, 0);
    return e && !e->connected && e->error[0];
}

static void test_agent_pool_records_an_unreachable_agent(void **state) {
    fixture_t *f = *state;
    agent_start(f, 0, 0, 1);
    agent_stop(&f->agents[0]); /* a port nobody listens on now */
    new_pool(f, 0);
    point_at(f, (const int[]){0}, 1);
    run_until(f, agent0_refused, 2000);
    assert_null(entry(f, 0)->snap);
    assert_string_equal(entry(f, 0)->node, "");
    assert_int_equal(agent_pool_connected(f->pool), 0);
}

static void test_agent_pool_rejects_malformed_addresses_and_changes_nothing(void **state) {
    fixture_t *f = *state;
    new_pool(f, 0);
    static const char *const bad[] = {
        "",      "10.0.0.1", "10.0.0.1:", "10.0.0.1:0", "10.0.0.1:65536", "10.0.0.1:6x",
        ":6000", "[]:6000"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *addrs[2] = {"127.0.0.1:1", bad[i]};
        assert_int_equal(agent_pool_set_addresses(f->pool, addrs, 2), KGS_EINVAL);
    }
    const char *addrs[1] = {NULL};
    assert_int_equal(agent_pool_set_addresses(f->pool, addrs, 1), KGS_EINVAL);
    char longer[AGENT_POOL_ADDRESS_MAX + 8];
    memset(longer, 'a', sizeof longer);
    memcpy(longer + sizeof longer - 6, ":6000", 6);
    addrs[0] = longer;
    assert_int_equal(agent_pool_set_addresses(f->pool, addrs, 1), KGS_EINVAL);
    run_until(f, NULL, 20);
    assert_int_equal(cluster_view_count(f->view), 0);
    assert_int_equal(f->changes, 0);
}

static void test_agent_pool_says_when_the_agents_outgrow_the_descriptor_limit(void **state) {
    fixture_t *f = *state;
    struct rlimit old, low;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    low = old;
    low.rlim_cur = 400;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    logger_t log = {.level = LOG_ERROR, .out = out};
    agent_pool_opts_t o = {.loop = f->loop, .view = f->view, .log = &log};
    assert_int_equal(agent_pool_new(&o, &f->pool), 0);
    /* 200 agents, each listed twice: 200 + 256 kept > 400 */
    static char addr[400][24];
    const char *addrs[400];
    for (int i = 0; i < 400; i++) {
        snprintf(addr[i], sizeof addr[i], "127.0.0.1:%d", 1 + i % 200);
        addrs[i] = addr[i];
    }
    assert_int_equal(agent_pool_set_addresses(f->pool, addrs, 400), 0);
    assert_int_equal(agent_pool_set_addresses(f->pool, addrs, 400), 0); /* said once */
    fflush(out);
    assert_non_null(strstr(text, "200 agents need one connection each: 456 descriptors"));
    assert_non_null(strstr(text, "RLIMIT_NOFILE is 400"));
    assert_null(strstr(strstr(text, "RLIMIT_NOFILE is 400") + 1, "RLIMIT_NOFILE is 400"));
    /* 100 fit: nothing more is said */
    size_t before = len;
    assert_int_equal(agent_pool_set_addresses(f->pool, addrs, 100), 0);
    fflush(out);
    assert_int_equal(len, before);
    agent_pool_free(f->pool);
    f->pool = NULL;
    fclose(out);
    free(text);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
}

static void test_agent_pool_backoff_is_jittered_under_a_doubling_cap(void **state) {
    fixture_t *f = *state;
    new_pool(f, 0); /* min 50 ms, max 200 ms */
    agent_t a = {.pool = f->pool, .backoff_cap_ns = 50 * MS};
    uint64_t caps[] = {50 * MS, 100 * MS, 200 * MS, 200 * MS, 200 * MS};
    for (int round = 0; round < 200; round++) {
        a.backoff_cap_ns = 50 * MS;
        for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
            uint64_t d = agent_next_delay(&a);
            assert_true(d >= 50 * MS);
            assert_true(d <= caps[i]);
        }
    }
    /* Full jitter: draws spread over the range, not all at one end. */
    unsigned low = 0, high = 0;
    for (int i = 0; i < 400; i++) {
        a.backoff_cap_ns = 200 * MS;
        uint64_t d = agent_next_delay(&a);
        low += d < 125 * MS;
        high += d >= 125 * MS;
    }
    assert_true(low > 100 && high > 100);
}

static void test_agent_pool_reads_the_sample_interval_off_the_wire(void **state) {
    (void)state;
    /* protocol_version 1, node "n", seq 300, sample_interval_ms 1000. */
    static const uint8_t msg[] = {0x08, 0x01, 0x12, 0x01, 'n', 0x18, 0xac, 0x02, 0x30, 0xe8, 0x07};
    assert_int_equal(wire_sample_interval_ms(msg, sizeof msg), 1000);
    assert_int_equal(wire_sample_interval_ms(msg, 8), 0);  /* absent */
    assert_int_equal(wire_sample_interval_ms(msg, 10), 0); /* cut inside the varint */
    static const uint8_t long_len[] = {0x12, 0x7f, 'x'};   /* length past the end */
    assert_int_equal(wire_sample_interval_ms(long_len, sizeof long_len), 0);
    static const uint8_t twice[] = {0x30, 0x0a, 0x30, 0x14}; /* the last one wins */
    assert_int_equal(wire_sample_interval_ms(twice, sizeof twice), 20);
    static const uint8_t fixed[] = {0x39, 1, 2, 3, 4, 5, 6, 7, 8, 0x3d, 1, 2, 3, 4, 0x30, 0x05};
    assert_int_equal(wire_sample_interval_ms(fixed, sizeof fixed), 5); /* skipped whole */
    static const uint8_t group[] = {0x33, 0x30, 0x01};                 /* wire type 3: refused */
    assert_int_equal(wire_sample_interval_ms(group, sizeof group), 0);
}

int main(void) {
#define CASE(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        CASE(test_agent_pool_watches_every_agent_and_follows_publishes),
        CASE(test_agent_pool_marks_a_stopped_agent_down_and_redials_it),
        CASE(test_agent_pool_forgets_a_removed_address),
        CASE(test_agent_pool_can_be_freed_inside_on_change),
        CASE(test_agent_pool_can_drop_addresses_inside_on_change),
        CASE(test_agent_pool_redials_an_agent_that_goes_silent),
        CASE(test_agent_pool_waits_five_sample_intervals_before_calling_an_agent_silent),
        CASE(test_agent_pool_drops_an_undecodable_message_but_keeps_the_stream),
        CASE(test_agent_pool_records_an_unreachable_agent),
        CASE(test_agent_pool_rejects_malformed_addresses_and_changes_nothing),
        CASE(test_agent_pool_says_when_the_agents_outgrow_the_descriptor_limit),
        CASE(test_agent_pool_backoff_is_jittered_under_a_doubling_cap),
        CASE(test_agent_pool_reads_the_sample_interval_off_the_wire),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
