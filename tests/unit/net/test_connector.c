/* test_connector.c - the outbound connector on a real loop with plain TCP
 * and unix sockets: a ready transport, each address tried in turn, the
 * address check refusing a list as a whole before any connect, a name
 * resolved on the DNS thread, the messages callers rely on, cancel, and a
 * connector in its owner's storage (connector_start_in).
 * TLS (ALPN, SNI, the name and IP checks) is covered end to end by the
 * integration tests (https engines and Redis, the Kubernetes API, query
 * over mTLS). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/err.h"
#include "net/connector.h"
#include "net/sock.h"

typedef struct {
    loop_t *loop;
    loop_timer_t stop_timer;
    connector_t *conn;
    int listen_fd;
    uint16_t port;      /* where listen_fd listens */
    uint16_t dead_port; /* nothing listens */
    bool in_start;
    int calls, status;
    char error[512];
    transport_t tr;
} fx_t;

static void on_stop(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)t;
    (void)ud;
    loop_stop(loop);
}

static uint16_t unused_port(void) {
    int fd;
    uint16_t port;
    assert_int_equal(sock_listen("127.0.0.1", 0, &fd, &port, NULL, 0), 0);
    close(fd); /* a fresh port nobody listens on: connect is refused */
    return port;
}

static int setup(void **state) {
    fx_t *fx = calloc(1, sizeof *fx);
    assert_non_null(fx);
    assert_int_equal(loop_new(&fx->loop, NULL, 0), 0);
    loop_timer_init(&fx->stop_timer, on_stop, fx);
    assert_int_equal(sock_listen("127.0.0.1", 0, &fx->listen_fd, &fx->port, NULL, 0), 0);
    fx->dead_port = unused_port();
    fx->tr.fd = -1;
    *state = fx;
    return 0;
}

static int teardown(void **state) {
    fx_t *fx = *state;
    connector_cancel(fx->conn);
    if (fx->tr.fd >= 0)
        transport_close(&fx->tr);
    loop_timer_stop(fx->loop, &fx->stop_timer);
    loop_free(fx->loop);
    close(fx->listen_fd);
    free(fx);
    return 0;
}

static void on_done(void *ud, int status, transport_t *tr, const char *error) {
    fx_t *fx = ud;
    assert_false(fx->in_start);
    fx->conn = NULL;
    fx->calls++;
    fx->status = status;
    if (status == 0) {
        assert_non_null(tr);
        assert_null(error);
        fx->tr = *tr;
    } else {
        assert_null(tr);
        snprintf(fx->error, sizeof fx->error, "%s", error);
    }
    loop_stop(fx->loop);
}

/* Runs the loop until done ran (it stops the loop) or ms passed. */
static void run_until_done(fx_t *fx, uint64_t ms) {
    assert_int_equal(
        loop_timer_start(fx->loop, &fx->stop_timer, loop_now(fx->loop) + ms * NS_PER_MS), 0);
    assert_int_equal(loop_run(fx->loop), 0);
    loop_timer_stop(fx->loop, &fx->stop_timer);
}

static int start(fx_t *fx, connector_opts_t *o, char *err, size_t errlen) {
    o->done = on_done;
    o->user_data = fx;
    fx->in_start = true;
    int rc = connector_start(fx->loop, o, &fx->conn, err, errlen);
    fx->in_start = false;
    if (rc != 0)
        assert_null(fx->conn);
    return rc;
}

static void v4(struct sockaddr_storage *ss, socklen_t *len, const char *ip, uint16_t port) {
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *sin = (struct sockaddr_in *)ss;
    sin->sin_family = AF_INET;
    sin->sin_port = htons(port);
    assert_int_equal(inet_pton(AF_INET, ip, &sin->sin_addr), 1);
    *len = sizeof *sin;
}

/* The connection arrived at the listener and carries bytes. */
static void assert_connected(fx_t *fx) {
    assert_int_equal(fx->calls, 1);
    assert_int_equal(fx->status, 0);
    assert_true(fx->tr.fd >= 0);
    assert_null(fx->tr.ssl);
    int peer = accept(fx->listen_fd, NULL, NULL);
    assert_true(peer >= 0);
    assert_int_equal(transport_write(&fx->tr, "ping", 4), 4);
    char buf[8];
    assert_int_equal(read(peer, buf, sizeof buf), 4);
    assert_memory_equal(buf, "ping", 4);
    close(peer);
}

static void test_connector_hands_over_a_connected_transport_from_the_loop(void **state) {
    fx_t *fx = *state;
    char addr[64], err[256];
    snprintf(addr, sizeof addr, "127.0.0.1:%u", fx->port);
    connector_opts_t o = {.address = addr};
    assert_int_equal(start(fx, &o, err, sizeof err), 0);
    assert_int_equal(connector_phase(fx->conn), CONNECTOR_CONNECTING);
    assert_int_equal(fx->calls, 0); /* never inside connector_start */
    run_until_done(fx, 2000);
    assert_connected(fx);
}

static void test_connector_tries_each_address_in_turn(void **state) {
    fx_t *fx = *state;
    struct sockaddr_storage ss[2];
    socklen_t lens[2];
    v4(&ss[0], &lens[0], "127.0.0.1", fx->dead_port);
    v4(&ss[1], &lens[1], "127.0.0.1", fx->port);
    char err[256];
    connector_opts_t o = {.addrs = ss, .addrlens = lens, .naddrs = 2};
    assert_int_equal(start(fx, &o, err, sizeof err), 0);
    run_until_done(fx, 2000);
    assert_connected(fx);
}

static void test_connector_reports_the_last_failure_when_every_address_fails(void **state) {
    fx_t *fx = *state;
    struct sockaddr_storage ss;
    socklen_t len;
    v4(&ss, &len, "127.0.0.1", fx->dead_port);
    char err[256] = "", want[128];
    connector_opts_t o = {.addrs = &ss, .addrlens = &len, .naddrs = 1};
    snprintf(want, sizeof want, "connect 127.0.0.1:%u: Connection refused", fx->dead_port);
    /* Refused at once or from the loop, depending on the kernel: either way
     * the same message, and exactly one way of hearing it. */
    int rc = start(fx, &o, err, sizeof err);
    if (rc == 0) {
        run_until_done(fx, 2000);
        assert_int_equal(fx->calls, 1);
        assert_int_equal(fx->status, KGS_ENOPEER); /* nobody there: not KGS_EIO */
        assert_string_equal(fx->error, want);
    } else {
        assert_int_equal(rc, KGS_ENOPEER);
        assert_string_equal(err, want);
        assert_int_equal(fx->calls, 0);
    }
}

static void test_connector_names_the_peer_as_the_caller_asks(void **state) {
    fx_t *fx = *state;
    struct sockaddr_storage ss;
    socklen_t len;
    v4(&ss, &len, "127.0.0.1", fx->dead_port);
    const char *names[] = {"", "agent-0"};
    const char *want[] = {"connect: Connection refused", "connect agent-0: Connection refused"};
    for (size_t i = 0; i < 2; i++) {
        char err[256] = "";
        fx->calls = 0;
        connector_opts_t o = {.addrs = &ss, .addrlens = &len, .naddrs = 1, .name = names[i]};
        int rc = start(fx, &o, err, sizeof err);
        if (rc == 0) {
            run_until_done(fx, 2000);
            assert_int_equal(fx->calls, 1);
            assert_string_equal(fx->error, want[i]);
        } else {
            assert_string_equal(err, want[i]);
        }
    }
}

static const char *refused_port;
static const char *refuse_port(const struct sockaddr *sa, socklen_t len) {
    (void)len;
    const struct sockaddr_in *sin = (const struct sockaddr_in *)(const void *)sa;
    char p[8];
    snprintf(p, sizeof p, "%u", ntohs(sin->sin_port));
    return strcmp(p, refused_port) == 0 ? "a forbidden port" : NULL;
}

static void test_connector_check_refuses_the_whole_list_before_any_connect(void **state) {
    fx_t *fx = *state;
    struct sockaddr_storage ss[2];
    socklen_t lens[2];
    v4(&ss[0], &lens[0], "127.0.0.1", fx->port); /* allowed, and listening */
    v4(&ss[1], &lens[1], "127.0.0.1", fx->dead_port);
    char port[8], err[256] = "", want[128];
    snprintf(port, sizeof port, "%u", fx->dead_port);
    refused_port = port;
    connector_opts_t o = {.addrs = ss, .addrlens = lens, .naddrs = 2, .check_addr = refuse_port};
    assert_int_equal(start(fx, &o, err, sizeof err), KGS_EIO);
    snprintf(want, sizeof want, "refused to connect to 127.0.0.1:%u: a forbidden port",
             fx->dead_port);
    assert_string_equal(err, want);
    /* Not even the allowed first address was dialled. */
    run_until_done(fx, 50);
    assert_int_equal(fx->calls, 0);
    assert_true(accept4(fx->listen_fd, NULL, NULL, SOCK_NONBLOCK) < 0);
}

static void test_connector_resolves_a_name_on_the_dns_thread(void **state) {
    fx_t *fx = *state;
    char addr[64], err[256];
    snprintf(addr, sizeof addr, "localhost:%u", fx->port);
    connector_opts_t o = {.address = addr};
    assert_int_equal(start(fx, &o, err, sizeof err), 0);
    assert_int_equal(connector_phase(fx->conn), CONNECTOR_RESOLVING);
    assert_string_equal(connector_phase_name(CONNECTOR_RESOLVING), "resolving");
    run_until_done(fx, 5000);
    /* localhost may also be ::1, tried after 127.0.0.1 (sorted): the listener
     * is on 127.0.0.1 either way. */
    assert_connected(fx);
}

static void test_connector_reports_an_unresolvable_name_from_the_loop(void **state) {
    fx_t *fx = *state;
    char err[256];
    connector_opts_t o = {.address = "no-such-host.invalid:1"};
    assert_int_equal(start(fx, &o, err, sizeof err), 0);
    run_until_done(fx, 10000);
    assert_int_equal(fx->calls, 1);
    assert_int_equal(fx->status, KGS_EIO);
    assert_non_null(strstr(fx->error, "resolve no-such-host.invalid"));
}

static void test_connector_fails_a_missing_unix_socket_at_once(void **state) {
    fx_t *fx = *state;
    char err[256] = "";
    connector_opts_t o = {.address = "unix:/nonexistent/kgs.sock",
                          .name = "unix:/nonexistent/kgs.sock"};
    assert_int_equal(start(fx, &o, err, sizeof err), KGS_EIO);
    assert_string_equal(err, "connect unix:/nonexistent/kgs.sock: No such file or directory");
    o.name = NULL; /* the peer names itself the same way */
    assert_int_equal(start(fx, &o, err, sizeof err), KGS_EIO);
    assert_string_equal(err, "connect unix:/nonexistent/kgs.sock: No such file or directory");
    assert_int_equal(fx->calls, 0);
}

static void test_connector_rejects_malformed_addresses(void **state) {
    fx_t *fx = *state;
    const char *bad[] = {"nohost", "127.0.0.1:",  ":6000",          "[::1]6000",
                         "unix:",  "127.0.0.1:0", "127.0.0.1:99999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[256] = "";
        connector_opts_t o = {.address = bad[i]};
        assert_int_equal(start(fx, &o, err, sizeof err), KGS_EINVAL);
        assert_non_null(strstr(err, bad[i]));
    }
    connector_opts_t neither = {.name = "x"};
    char err[256];
    assert_int_equal(start(fx, &neither, err, sizeof err), KGS_EINVAL);
    assert_int_equal(fx->calls, 0);
}

static void test_connector_cancel_calls_nothing_back(void **state) {
    fx_t *fx = *state;
    char addr[64], err[256];
    snprintf(addr, sizeof addr, "127.0.0.1:%u", fx->port);
    connector_opts_t o = {.address = addr};
    assert_int_equal(start(fx, &o, err, sizeof err), 0);
    connector_cancel(fx->conn);
    fx->conn = NULL;
    snprintf(addr, sizeof addr, "localhost:%u", fx->port);
    assert_int_equal(start(fx, &o, err, sizeof err), 0); /* cancelled while resolving */
    connector_cancel(fx->conn);
    fx->conn = NULL;
    run_until_done(fx, 200);
    assert_int_equal(fx->calls, 0);
}

/* connector_start_in: the owner reuses the room as soon as done runs (the
 * fetch puts its transport there), so done must not be handed anything
 * that lives in the storage. */
static connector_storage_t in_storage;

static void on_done_reusing_storage(void *ud, int status, transport_t *tr, const char *error) {
    memset(&in_storage, 0xa5, sizeof in_storage);
    on_done(ud, status, tr, error);
}

static void test_connector_runs_in_the_callers_storage(void **state) {
    fx_t *fx = *state;
    struct sockaddr_storage ss[2];
    socklen_t lens[2];
    v4(&ss[0], &lens[0], "127.0.0.1", fx->dead_port); /* moves on inside the storage */
    v4(&ss[1], &lens[1], "127.0.0.1", fx->port);
    char err[256];
    connector_opts_t o = {.addrs = ss,
                          .addrlens = lens,
                          .naddrs = 2,
                          .done = on_done_reusing_storage,
                          .user_data = fx};
    fx->in_start = true;
    assert_int_equal(connector_start_in(&in_storage, fx->loop, &o, &fx->conn, err, sizeof err), 0);
    fx->in_start = false;
    assert_ptr_equal(fx->conn, (void *)&in_storage);
    run_until_done(fx, 2000);
    assert_connected(fx);

    /* Cancelled (while resolving, too): nothing called back, nothing freed
     * that was not allocated (ASan and valgrind run this test). */
    char addr[64];
    snprintf(addr, sizeof addr, "localhost:%u", fx->port);
    connector_opts_t named = {.address = addr, .done = on_done, .user_data = fx};
    assert_int_equal(connector_start_in(&in_storage, fx->loop, &named, &fx->conn, err, sizeof err),
                     0);
    connector_cancel(fx->conn);
    fx->conn = NULL;
    /* A refused start leaves nothing running either. */
    connector_opts_t neither = {.done = on_done, .user_data = fx};
    assert_int_equal(
        connector_start_in(&in_storage, fx->loop, &neither, &fx->conn, err, sizeof err),
        KGS_EINVAL);
    assert_null(fx->conn);
    run_until_done(fx, 200);
    assert_int_equal(fx->calls, 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_connector_hands_over_a_connected_transport_from_the_loop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connector_tries_each_address_in_turn, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_connector_reports_the_last_failure_when_every_address_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connector_names_the_peer_as_the_caller_asks, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_connector_check_refuses_the_whole_list_before_any_connect, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connector_resolves_a_name_on_the_dns_thread, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_connector_reports_an_unresolvable_name_from_the_loop,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_connector_fails_a_missing_unix_socket_at_once, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_connector_rejects_malformed_addresses, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_connector_cancel_calls_nothing_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connector_runs_in_the_callers_storage, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
