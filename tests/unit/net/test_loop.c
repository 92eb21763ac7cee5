/* The event loop: timer order and re-arming, removal of a registration from
 * inside a callback of the same epoll batch, and coalesced wakeups. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "net/loop.h"

typedef struct {
    loop_t *loop;
    int order[8];
    int n;
    loop_timer_t t[4];
} timer_fx_t;

static void on_timer(loop_t *loop, loop_timer_t *t, void *ud) {
    timer_fx_t *fx = ud;
    int id = (int)(t - fx->t);
    fx->order[fx->n++] = id;
    if (id == 3)
        loop_stop(loop);
}

static void test_loop_timers_fire_in_due_order_and_stop_cancels(void **state) {
    (void)state;
    timer_fx_t fx = {0};
    assert_int_equal(loop_new(&fx.loop, NULL, 0), 0);
    mono_ns_t now = loop_now(fx.loop);
    for (int i = 0; i < 4; i++)
        loop_timer_init(&fx.t[i], on_timer, &fx);
    assert_int_equal(loop_timer_start(fx.loop, &fx.t[3], now + 40 * NS_PER_MS), 0);
    assert_int_equal(loop_timer_start(fx.loop, &fx.t[1], now + 10 * NS_PER_MS), 0);
    assert_int_equal(loop_timer_start(fx.loop, &fx.t[0], now + 5 * NS_PER_MS), 0);
    assert_int_equal(loop_timer_start(fx.loop, &fx.t[2], now + 20 * NS_PER_MS), 0);
    loop_timer_stop(fx.loop, &fx.t[2]);
    assert_false(loop_timer_armed(&fx.t[2]));
    /* Re-arming moves a timer rather than adding it twice. */
    assert_int_equal(loop_timer_start(fx.loop, &fx.t[1], now + 30 * NS_PER_MS), 0);
    assert_int_equal(loop_run(fx.loop), 0);
    assert_int_equal(fx.n, 3);
    assert_int_equal(fx.order[0], 0);
    assert_int_equal(fx.order[1], 1);
    assert_int_equal(fx.order[2], 3);
    assert_true(loop_now(fx.loop) >= now + 40 * NS_PER_MS);
    loop_free(fx.loop);
}

typedef struct {
    loop_t *loop;
    loop_io_t *io[2];
    int fds[2][2];
    int calls[2];
} io_fx_t;

static void on_io(loop_t *loop, int fd, uint32_t events, void *ud) {
    (void)events;
    io_fx_t *fx = ud;
    int me = fd == fx->fds[0][0] ? 0 : 1;
    fx->calls[me]++;
    /* Whoever runs first removes both: the other must not be called. */
    loop_io_remove(loop, fx->io[0]);
    loop_io_remove(loop, fx->io[1]);
    loop_stop(loop);
}

static void test_loop_removed_registration_is_not_called_later_in_the_batch(void **state) {
    (void)state;
    io_fx_t fx = {0};
    assert_int_equal(loop_new(&fx.loop, NULL, 0), 0);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fx.fds[i]), 0);
        assert_int_equal(write(fx.fds[i][1], "x", 1), 1);
        fx.io[i] = loop_io_add(fx.loop, fx.fds[i][0], EPOLLIN, on_io, &fx);
        assert_non_null(fx.io[i]);
    }
    assert_int_equal(loop_run(fx.loop), 0);
    assert_int_equal(fx.calls[0] + fx.calls[1], 1);
    for (int i = 0; i < 2; i++) {
        close(fx.fds[i][0]);
        close(fx.fds[i][1]);
    }
    loop_free(fx.loop);
}

typedef struct {
    loop_t *loop;
    int wakeups;
    loop_timer_t stop;
} wake_fx_t;

static void on_wake(loop_t *loop, void *ud) {
    (void)loop;
    wake_fx_t *fx = ud;
    fx->wakeups++;
}

static void on_stop(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)t;
    (void)ud;
    loop_stop(loop);
}

static void *waker(void *arg) {
    wake_fx_t *fx = arg;
    for (int i = 0; i < 1000; i++)
        loop_wakeup(fx->loop);
    return NULL;
}

static void test_loop_wakeups_from_another_thread_coalesce(void **state) {
    (void)state;
    wake_fx_t fx = {0};
    assert_int_equal(loop_new(&fx.loop, NULL, 0), 0);
    loop_set_wakeup(fx.loop, on_wake, &fx);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, waker, &fx), 0);
    pthread_join(th, NULL);
    loop_timer_init(&fx.stop, on_stop, &fx);
    loop_timer_start(fx.loop, &fx.stop, loop_now(fx.loop) + 50 * NS_PER_MS);
    assert_int_equal(loop_run(fx.loop), 0);
    /* 1000 wakeups before the loop ran: one callback. */
    assert_int_equal(fx.wakeups, 1);
    loop_free(fx.loop);
}

/* A timer that re-arms itself for "now" runs once per iteration, however
 * many timers the heap holds: the descriptors ready meanwhile are served
 * between its runs (before, it ran again in the same pass, up to once per
 * armed timer). */
typedef struct {
    loop_t *loop;
    int runs;
    loop_timer_t self, idle[100];
} rearm_fx_t;

static void on_rearm(loop_t *loop, loop_timer_t *t, void *ud) {
    rearm_fx_t *fx = ud;
    fx->runs++;
    loop_timer_start(loop, t, loop_now(loop));
}

static void on_idle(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)loop, (void)t, (void)ud;
}

static void test_loop_timer_rearmed_for_now_runs_next_iteration(void **state) {
    (void)state;
    rearm_fx_t fx = {0};
    char err[128];
    assert_int_equal(loop_new(&fx.loop, err, sizeof err), 0);
    for (int i = 0; i < 100; i++) {
        loop_timer_init(&fx.idle[i], on_idle, &fx);
        loop_timer_start(fx.loop, &fx.idle[i], loop_now(fx.loop) + 60 * NS_PER_SEC);
    }
    loop_timer_init(&fx.self, on_rearm, &fx);
    loop_timer_start(fx.loop, &fx.self, loop_now(fx.loop));
    for (int i = 1; i <= 3; i++) {
        assert_true(loop_run_once(fx.loop, 1000) >= 0);
        assert_int_equal(fx.runs, i);
    }
    for (int i = 0; i < 100; i++)
        loop_timer_stop(fx.loop, &fx.idle[i]);
    loop_timer_stop(fx.loop, &fx.self);
    loop_free(fx.loop);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loop_timers_fire_in_due_order_and_stop_cancels),
        cmocka_unit_test(test_loop_removed_registration_is_not_called_later_in_the_batch),
        cmocka_unit_test(test_loop_wakeups_from_another_thread_coalesce),
        cmocka_unit_test(test_loop_timer_rearmed_for_now_runs_next_iteration),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
