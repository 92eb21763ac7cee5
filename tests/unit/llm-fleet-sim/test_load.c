/* test_load.c - llm-fleet-sim's request load: the rate profile, seeded
 * Poisson arrivals that lose nothing when the caller's buffer is small, and
 * the request mix. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "load.h"

static void test_load_rate_follows_the_profile_linearly(void **state) {
    (void)state;
    load_t l;
    load_init(&l, 1, 100);                            /* the burst starts at 100 s */
    assert_true(load_rate(&l, 50) == 0);              /* before the start */
    assert_true(load_rate(&l, 120) == 0);             /* the idle first 30 s */
    assert_true(fabs(load_rate(&l, 160) - 3) < 1e-9); /* half way up: 0 -> 6 over 30..90 */
    assert_true(fabs(load_rate(&l, 200) - 6) < 1e-9);
    assert_true(fabs(load_rate(&l, 340) - 3) < 1e-9); /* half way down: 210..270 */
    assert_true(load_rate(&l, 370) == 0);             /* after the last point */
    assert_true(fabs(load_end_s(&l) - 370) < 1e-9);
}

/* Everything that arrives until t, in batches of `batch`. */
static size_t arrive_all(load_t *l, double t, size_t batch, load_request_t *out, size_t cap) {
    size_t total = 0;
    for (int guard = 0; guard < 100000 && total < cap; guard++) {
        size_t room = cap - total < batch ? cap - total : batch;
        size_t n = load_arrivals(l, t, out + total, room);
        total += n;
        if (n < room)
            break;
    }
    return total;
}

static void test_load_arrivals_are_the_rate_integral_and_seeded(void **state) {
    (void)state;
    static load_request_t a[4000], b[4000];
    load_t la, lb;
    load_init(&la, 42, 0);
    load_init(&lb, 42, 0);
    size_t na = arrive_all(&la, 400, 4000, a, 4000);
    size_t nb = arrive_all(&lb, 400, 1, b, 4000); /* one at a time: none lost */
    /* the integral: 60 x 6 / 2 + 120 x 6 + 60 x 6 / 2 = 1080; Poisson sd ~33 */
    assert_in_range(na, 960, 1200);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, na * sizeof a[0]);
    for (size_t i = 1; i < na; i++)
        assert_true(a[i].arrive_s >= a[i - 1].arrive_s);
    assert_true(a[0].arrive_s > 30); /* nothing in the idle first 30 s */
    assert_true(a[na - 1].arrive_s <= 270 + LOAD_STEP_S);
    load_t lc;
    load_init(&lc, 43, 0);
    size_t nc = arrive_all(&lc, 400, 4000, b, 4000);
    assert_true(nc != na || memcmp(a, b, na * sizeof a[0]) != 0); /* another seed differs */
}

static void test_load_requests_follow_the_mix(void **state) {
    (void)state;
    static load_request_t r[4000];
    load_t l;
    load_init(&l, 7, 0);
    size_t n = arrive_all(&l, 400, 4000, r, 4000);
    size_t length = 0;
    for (size_t i = 0; i < n; i++) {
        assert_in_range(r[i].prompt_tokens, 200, 1000);
        assert_in_range(r[i].output_tokens, 50, 512);
        assert_true(r[i].hit_max_tokens == (r[i].output_tokens == 512));
        length += r[i].hit_max_tokens;
    }
    /* outputs uniform in 50..600 cut at 512: 89 / 551 = 16 % hit max_tokens */
    assert_in_range(length * 100 / n, 11, 21);
}

static void test_load_restart_begins_a_new_burst(void **state) {
    (void)state;
    static load_request_t r[4000];
    load_t l;
    load_init(&l, 3, 0);
    arrive_all(&l, 400, 4000, r, 4000);
    load_restart(&l, 1000);
    assert_int_equal(load_arrivals(&l, 1030, r, 4000), 0); /* the idle 30 s */
    size_t n = arrive_all(&l, 1400, 4000, r, 4000);
    assert_in_range(n, 960, 1200);
    assert_true(r[0].arrive_s > 1030);
}

static void test_load_validate_names_the_bad_field(void **state) {
    (void)state;
    load_t l;
    char err[256];
    load_init(&l, 1, 0);
    assert_int_equal(load_validate(&l, err, sizeof err), 0);
    l.profile[2].t_s = 20; /* before the point before it (30) */
    assert_int_not_equal(load_validate(&l, err, sizeof err), 0);
    assert_non_null(strstr(err, "point 2: at 20 s, not after the point before it (30 s)"));
    load_init(&l, 1, 0);
    l.profile[3].rps = -1;
    assert_int_not_equal(load_validate(&l, err, sizeof err), 0);
    assert_non_null(strstr(err, "rate -1 requests/s (valid: finite, >= 0)"));
    load_init(&l, 1, 0);
    l.prompt_min = 0;
    assert_int_not_equal(load_validate(&l, err, sizeof err), 0);
    assert_non_null(strstr(err, "prompt tokens 0-1000 (valid: 1 <= min <= max)"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_rate_follows_the_profile_linearly),
        cmocka_unit_test(test_load_arrivals_are_the_rate_integral_and_seeded),
        cmocka_unit_test(test_load_requests_follow_the_mix),
        cmocka_unit_test(test_load_restart_begins_a_new_burst),
        cmocka_unit_test(test_load_validate_names_the_bad_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
