/* The pod-resources poller without a kubelet: argument checks, the backoff
 * and tick schedules (static functions, hence the included .c), errors
 * delivered from the loop, freeing from inside a callback, and freeing with
 * a call in flight. The exchange with a real grpc-go server is covered by
 * tests/integration/test_podres.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "kube/podres_client.c"

typedef struct {
    loop_t *loop;
    podres_client_t *client;
    char dir[64];
    char sock[96];
    int maps, errors;
    char last_error[512];
    bool free_in_callback;
    bool in_start;
    loop_timer_t stop_timer;
} fx_t;

static void on_stop(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)t;
    (void)ud;
    loop_stop(loop);
}

static int setup(void **state) {
    fx_t *fx = calloc(1, sizeof *fx);
    assert_non_null(fx);
    assert_int_equal(loop_new(&fx->loop, NULL, 0), 0);
    snprintf(fx->dir, sizeof fx->dir, "/tmp/kgs-podres-unit-XXXXXX");
    assert_non_null(mkdtemp(fx->dir));
    snprintf(fx->sock, sizeof fx->sock, "%s/kubelet.sock", fx->dir);
    loop_timer_init(&fx->stop_timer, on_stop, fx);
    *state = fx;
    return 0;
}

static int teardown(void **state) {
    fx_t *fx = *state;
    podres_client_free(fx->client);
    loop_timer_stop(fx->loop, &fx->stop_timer);
    loop_free(fx->loop);
    unlink(fx->sock);
    rmdir(fx->dir);
    free(fx);
    return 0;
}

static void run_for(fx_t *fx, uint64_t ns) {
    assert_int_equal(loop_timer_start(fx->loop, &fx->stop_timer, loop_now(fx->loop) + ns), 0);
    assert_int_equal(loop_run(fx->loop), 0);
}

static void fx_on_map(void *ud, pod_map_t *map) {
    fx_t *fx = ud;
    assert_false(fx->in_start);
    fx->maps++;
    pod_map_free(map);
}

static void fx_on_error(void *ud, const char *msg) {
    fx_t *fx = ud;
    assert_false(fx->in_start);
    fx->errors++;
    snprintf(fx->last_error, sizeof fx->last_error, "%s", msg);
    if (fx->free_in_callback) {
        podres_client_free(fx->client);
        fx->client = NULL;
    }
}

static int start(fx_t *fx, const char *path, uint64_t interval_ns, char *err, size_t errlen) {
    podres_client_callbacks_t cbs = {.on_map = fx_on_map, .on_error = fx_on_error, .user_data = fx};
    fx->in_start = true;
    int rc = podres_client_start(fx->loop, path, interval_ns, NULL, &cbs, &fx->client, err, errlen);
    fx->in_start = false;
    return rc;
}

static void test_podres_client_rejects_bad_arguments_without_calling_back(void **state) {
    fx_t *fx = *state;
    char err[256] = "";
    assert_int_equal(start(fx, "relative/kubelet.sock", 0, err, sizeof err), KGS_EINVAL);
    assert_null(fx->client);
    assert_non_null(strstr(err, "must be an absolute path"));

    char long_path[200];
    memset(long_path, 'a', sizeof long_path - 1);
    long_path[0] = '/';
    long_path[sizeof long_path - 1] = '\0';
    assert_int_equal(start(fx, long_path, 0, err, sizeof err), KGS_EINVAL);

    assert_int_equal(start(fx, fx->sock, 50 * NS_PER_MS, err, sizeof err), KGS_EINVAL);
    assert_string_equal(err, "pod-resources interval 50.0 ms: must be at least 100 ms");

    podres_client_callbacks_t no_map = {.on_error = fx_on_error, .user_data = fx};
    assert_int_equal(
        podres_client_start(fx->loop, fx->sock, 0, NULL, &no_map, &fx->client, err, sizeof err),
        KGS_EINVAL);
    assert_string_equal(err, "pod-resources client: the on_map callback is NULL");
    run_for(fx, 20 * NS_PER_MS);
    assert_int_equal(fx->errors + fx->maps, 0);
}

static void test_podres_client_backoff_doubles_from_half_a_second_to_ten(void **state) {
    (void)state;
    const uint64_t want_ms[] = {500, 1000, 2000, 4000, 8000, 10000, 10000};
    for (unsigned i = 0; i < 7; i++)
        assert_int_equal(backoff_delay_ns(i), want_ms[i] * NS_PER_MS);
    assert_int_equal(backoff_delay_ns(1000), PODRES_BACKOFF_MAX_NS);
}

static void test_podres_client_ticks_on_a_fixed_grid_and_skips_missed_ticks(void **state) {
    (void)state;
    podres_client_t c = {.grid_origin = 1000, .interval_ns = 100};
    assert_int_equal(next_grid_tick(&c, 1000), 1100);
    assert_int_equal(next_grid_tick(&c, 1099), 1100);
    assert_int_equal(next_grid_tick(&c, 1100), 1200);
    assert_int_equal(next_grid_tick(&c, 1550), 1600); /* 1200..1500 were missed */
    assert_int_equal(next_grid_tick(&c, 500), 1000);
    c.grid_origin = UINT64_MAX - 150;
    assert_int_equal(next_grid_tick(&c, UINT64_MAX - 10), UINT64_MAX);
}

static void test_podres_client_reports_a_missing_socket_from_the_loop_and_retries(void **state) {
    fx_t *fx = *state;
    assert_int_equal(start(fx, fx->sock, 0, NULL, 0), 0);
    assert_int_equal(fx->errors, 0); /* nothing inside start */
    assert_false(podres_client_stale(fx->client));
    run_for(fx, 100 * NS_PER_MS);
    assert_int_equal(fx->errors, 1);
    char want[512];
    snprintf(want, sizeof want, "list pod resources %s: connect unix:%s: No such file or directory",
             fx->sock, fx->sock);
    assert_string_equal(fx->last_error, want);
    assert_true(podres_client_stale(fx->client));
    assert_int_equal(podres_client_failures(fx->client), 1);
    assert_int_equal(podres_client_last_ok(fx->client), 0);
    /* The re-dial comes after 0.5 s, not at the 1 s tick. */
    run_for(fx, 600 * NS_PER_MS);
    assert_int_equal(fx->errors, 2);
    assert_int_equal(fx->maps, 0);
}

static void test_podres_client_can_be_freed_inside_its_error_callback(void **state) {
    fx_t *fx = *state;
    fx->free_in_callback = true;
    assert_int_equal(start(fx, fx->sock, 0, NULL, 0), 0);
    run_for(fx, 700 * NS_PER_MS);
    assert_int_equal(fx->errors, 1); /* exactly one: the client is gone */
    assert_null(fx->client);
}

static void test_podres_client_free_with_a_call_in_flight_calls_nothing_back(void **state) {
    fx_t *fx = *state;
    /* A listener that never accepts: the connect succeeds (backlog) and the
     * List stays in flight. */
    int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(lfd >= 0);
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    snprintf(un.sun_path, sizeof un.sun_path, "%s", fx->sock);
    assert_int_equal(bind(lfd, (struct sockaddr *)&un, sizeof un), 0);
    assert_int_equal(listen(lfd, 4), 0);
    assert_int_equal(start(fx, fx->sock, 0, NULL, 0), 0);
    run_for(fx, 100 * NS_PER_MS);
    assert_true(fx->client->in_flight);
    podres_client_free(fx->client);
    fx->client = NULL;
    run_for(fx, 50 * NS_PER_MS);
    assert_int_equal(fx->errors + fx->maps, 0);
    close(lfd);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_podres_client_rejects_bad_arguments_without_calling_back, setup, teardown),
        cmocka_unit_test(test_podres_client_backoff_doubles_from_half_a_second_to_ten),
        cmocka_unit_test(test_podres_client_ticks_on_a_fixed_grid_and_skips_missed_ticks),
        cmocka_unit_test_setup_teardown(
            test_podres_client_reports_a_missing_socket_from_the_loop_and_retries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_podres_client_can_be_freed_inside_its_error_callback,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_podres_client_free_with_a_call_in_flight_calls_nothing_back, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
