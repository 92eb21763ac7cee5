/* test_counter_window.c - counter increases over a sliding window, at any
 * poll cadence, across counter resets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sources/counter_window.h"

#define S 1000000000ull
#define MS 1000000ull
#define NEAR(x, want, tol) assert_true((x) > (want) - (tol) && (x) < (want) + (tol))

/* Polls every 100 ms with a 30 s window (spacing 300 ms): the window must
 * slide. The first version kept only the first and the newest point here,
 * and measured from the start of the history. */
static void test_window_slides_at_a_fast_cadence(void **state) {
    (void)state;
    static counter_window_t w;
    memset(&w, 0, sizeof w);
    double a = 0, b = 0;
    for (uint64_t t = 0; t <= 120 * S; t += 100 * MS) {
        double rate = t < 60 * S ? 10 : 20; /* requests/s */
        a += rate * 0.1 * 2500;             /* 2.5 ms queued each */
        b += rate * 0.1;
        counter_window_push(&w, t, a, b, 30 * S / 100);
    }
    double da, db, secs;
    assert_true(counter_window_delta(&w, 120 * S, 30 * S, &da, &db, &secs));
    NEAR(secs, 30, 0.5);
    NEAR(db / secs, 20, 0.5);
    NEAR(da / db, 2500, 1);
}

static void test_needs_two_points_and_restarts_after_a_reset(void **state) {
    (void)state;
    static counter_window_t w;
    memset(&w, 0, sizeof w);
    double da, db, secs;
    assert_false(counter_window_delta(&w, 0, 30 * S, &da, &db, &secs));
    counter_window_push(&w, 0, 100, 10, 0);
    assert_false(counter_window_delta(&w, 0, 30 * S, &da, &db, &secs));
    counter_window_push(&w, 1 * S, 200, 20, 0);
    assert_true(counter_window_delta(&w, 1 * S, 30 * S, &da, &db, &secs));
    NEAR(db, 10, 1e-9);
    /* Triton restarts: counters drop. The window restarts after the drop. */
    counter_window_push(&w, 2 * S, 5, 1, 0);
    assert_false(counter_window_delta(&w, 2 * S, 30 * S, &da, &db, &secs));
    counter_window_push(&w, 3 * S, 15, 3, 0);
    assert_true(counter_window_delta(&w, 3 * S, 30 * S, &da, &db, &secs));
    NEAR(db, 2, 1e-9);
    NEAR(secs, 1, 1e-9);
}

static void test_keeps_the_newest_points_when_full(void **state) {
    (void)state;
    static counter_window_t w;
    memset(&w, 0, sizeof w);
    for (uint64_t i = 0; i < 1000; i++)
        counter_window_push(&w, i * S, (double)i, (double)i, 0);
    double da, db, secs;
    /* 1,000 s of history, 128 points kept: the widest window is 127 s. */
    assert_true(counter_window_delta(&w, 999 * S, 600 * S, &da, &db, &secs));
    NEAR(secs, 127, 1e-9);
    assert_true(counter_window_delta(&w, 999 * S, 10 * S, &da, &db, &secs));
    NEAR(secs, 10, 1e-9);
    NEAR(db, 10, 1e-9);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window_slides_at_a_fast_cadence),
        cmocka_unit_test(test_needs_two_points_and_restarts_after_a_reset),
        cmocka_unit_test(test_keeps_the_newest_points_when_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
