/* test_queue_model.c - the queueing demand model: its estimators (arrival
 * rate, capacity, cold start, priors, counter resets) and the sizing rule on
 * hand-computed cases (a wake with backlog, starting pods, a burst, a quiet
 * fleet, a queue-only source). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/queue_model.h"

/* The hand-computed cases use utilisation 0.8 and a 60 s drain target. */
static queue_model_params_t params(void) {
    queue_model_params_t p;
    queue_model_params_default(&p);
    p.target_utilisation = 0.8;
    p.drain_s = 60;
    return p;
}

static queue_model_sample_t engine(double t, double completed, double waiting, double running,
                                   unsigned ready) {
    queue_model_sample_t s = {.t_s = t,
                              .has_completed = true,
                              .completed = completed,
                              .has_engine = true,
                              .waiting = waiting,
                              .running = running,
                              .ready = ready};
    return s;
}

/* Nothing observed: every input is a documented prior, none is 0. */
static void test_priors_when_nothing_is_known(void **state) {
    (void)state;
    queue_model_t m;
    queue_model_init(&m);
    queue_model_params_t p = params();
    queue_model_sample_t s = {.t_s = 0, .has_queue = true, .queue = 0};
    queue_model_decision_t d;
    queue_model_decide(&m, &p, &s, &d);
    assert_int_equal(d.capacity_from, QM_FROM_PRIOR);
    assert_float_equal(d.capacity_rps, QUEUE_MODEL_PRIOR_CAPACITY_RPS, 0);
    assert_int_equal(d.cold_start_from, QM_FROM_PRIOR);
    assert_float_equal(d.cold_start_s, QUEUE_MODEL_PRIOR_COLD_START_S, 0);
    assert_int_equal(d.lambda_from, QM_FROM_PRIOR);
    assert_float_equal(d.replicas, 0, 0); /* nothing waits, nothing runs */
}

/* A steady 4 req/s: completions 4/s with a constant 8 running. lambda
 * converges to 4; unsaturated, so capacity comes from Little's law: service
 * time 8 / 4 = 2 s, capacity = 16 / 2 = 8 req/s per replica. */
static void test_steady_rate_converges_and_capacity_is_derived(void **state) {
    (void)state;
    queue_model_t m;
    queue_model_init(&m);
    for (int t = 0; t <= 300; t++) {
        queue_model_sample_t s = engine(t, 4.0 * t, 0, 8, 2);
        queue_model_observe(&m, &s);
    }
    queue_model_params_t p = params();
    queue_model_sample_t now = engine(300, 1200, 0, 8, 2);
    queue_model_decision_t d;
    queue_model_decide(&m, &p, &now, &d);
    assert_int_equal(d.lambda_from, QM_FROM_LEARNED);
    assert_float_equal(d.lambda_rps, 4.0, 1e-6);
    assert_int_equal(d.capacity_from, QM_FROM_DERIVED);
    assert_float_equal(d.capacity_rps, 8.0, 1e-6);
    /* steady = 4 / (8 x 0.8) = 0.625; no deficit: 2 Ready replicas do 16/s */
    assert_float_equal(d.deficit, 0, 1e-9);
    assert_float_equal(d.replicas, 1.0, 1e-9); /* running > 0: at least one */
}

/* Saturated: 3 Ready replicas, work waits throughout, 6 completions/s ->
 * capacity 2 req/s per replica, learned. */
static void test_capacity_learned_while_saturated(void **state) {
    (void)state;
    queue_model_t m;
    queue_model_init(&m);
    for (int t = 0; t <= 600; t++) {
        queue_model_sample_t s = engine(t, 6.0 * t, 50, 48, 3);
        queue_model_observe(&m, &s);
    }
    queue_model_params_t p = params();
    queue_model_sample_t now = engine(600, 3600, 50, 48, 3);
    queue_model_decision_t d;
    queue_model_decide(&m, &p, &now, &d);
    assert_int_equal(d.capacity_from, QM_FROM_LEARNED);
    assert_float_equal(d.capacity_rps, 2.0, 1e-6);
    /* lambda = 6 (waiting constant); steady = 6 / (2 x 0.8) = 3.75; cold
     * start prior 120 s: due = 50 + 720 = 770, can_do = 3 x 2 x 120 = 720,
     * deficit 50, + 50 / (2 x 60) = 0.4167 */
    assert_float_equal(d.lambda_rps, 6.0, 1e-6);
    assert_float_equal(d.deficit, 50, 1e-6);
    assert_float_equal(d.replicas, 3.75 + 50.0 / 120.0, 1e-6);
}

/* A pod restart resets its counters: the interval is skipped, nothing reads
 * as a negative or huge rate, and the next intervals carry on. */
static void test_counter_reset_skips_the_interval(void **state) {
    (void)state;
    queue_model_t m;
    queue_model_init(&m);
    double base = 0;
    for (int t = 0; t <= 200; t++) {
        if (t == 100)
            base = -390; /* completed fell from 400 to 10 */
        queue_model_sample_t s = engine(t, 4.0 * t + base, 0, 8, 2);
        queue_model_observe(&m, &s);
        /* the reset interval is skipped: no dip to 0, no spike */
        if (t >= 60)
            assert_float_equal(m.lambda_fast, 4.0, 1e-3);
    }
    assert_float_equal(m.lambda_fast, 4.0, 1e-3);
}

/* A pod appears mid-run with 5000 requests already on its counter and 12
 * running: summed over a different set of engines, the interval compares
 * nothing (no spike of 5012 arrivals), and the next ones carry on. */
static void test_a_pod_appearing_is_not_a_burst(void **state) {
    (void)state;
    queue_model_t m;
    queue_model_init(&m);
    for (int t = 0; t <= 200; t++) {
        bool two = t >= 100;
        queue_model_sample_t s =
            engine(t, 4.0 * t + (two ? 5000 + 2.0 * (t - 100) : 0), 0, two ? 20 : 8, two ? 2 : 1);
        s.members = two ? 0x1111 + 0x2222 : 0x1111;
        queue_model_observe(&m, &s);
        if (t >= 60 && t < 100)
            assert_float_equal(m.lambda_fast, 4.0, 1e-3);
        if (t >= 100) /* 4/s, then 6/s: never the spike */
            assert_true(m.lambda_fast < 6.0 + 1e-6 && m.lambda_slow < 6.0 + 1e-6);
    }
    assert_float_equal(m.lambda_fast, 6.0, 1e-3);
}

/* No completion counter and no engine gauges: the rate is unknown and the
 * answer is never 0 while work waits. */
static void test_missing_counter_uses_prior_not_zero(void **state) {
    (void)state;
    queue_model_t m;
    queue_model_init(&m);
    queue_model_params_t p = params();
    queue_model_sample_t s = {.t_s = 0, .has_queue = true, .queue = 30, .ready = 2};
    queue_model_observe(&m, &s);
    s.t_s = 1;
    queue_model_observe(&m, &s);
    queue_model_decision_t d;
    queue_model_decide(&m, &p, &s, &d);
    assert_int_equal(d.lambda_from, QM_FROM_PRIOR);
    assert_int_equal(d.capacity_from, QM_FROM_PRIOR);
    assert_true(d.replicas >= 1);
}

/* Waking from zero: no replica, the queue grows 5 req/s (measured exactly:
 * nothing drains it), one pod just created. Cold start 135 s configured,
 * capacity 1 req/s configured. After 10 s: queue 50, lambda 5.
 * due = 50 + 5 x 135 = 725; the starting pod (age 10) serves 10 s -> 10;
 * deficit 715; steady 5 / 0.8 = 6.25; + 715 / 60 = 11.917 -> 18.17. */
static void test_wake_with_backlog(void **state) {
    (void)state;
    queue_model_t m;
    queue_model_init(&m);
    queue_model_params_t p = params();
    p.cold_start_s = 135;
    p.capacity_rps = 1;
    queue_model_sample_t s = {.has_queue = true, .starting = 1, .starting_ages = 1};
    for (int t = 0; t <= 10; t++) {
        s.t_s = t;
        s.queue = 5.0 * t;
        s.starting_age_s[0] = t;
        queue_model_observe(&m, &s);
    }
    queue_model_decision_t d;
    queue_model_decide(&m, &p, &s, &d);
    assert_float_equal(d.lambda_rps, 5, 1e-9);
    assert_float_equal(d.work_due, 725, 1e-9);
    assert_float_equal(d.can_do, 10, 1e-9);
    assert_float_equal(d.deficit, 715, 1e-9);
    assert_float_equal(d.replicas, 6.25 + 715.0 / 60.0, 1e-9);
}

/* Starting pods count for the capacity they bring within the horizon: the
 * same wake with 18 pods of age 60 needs nothing more than steady. */
static void test_starting_pods_are_counted(void **state) {
    (void)state;
    queue_model_t m;
    queue_model_init(&m);
    queue_model_params_t p = params();
    p.cold_start_s = 135;
    p.capacity_rps = 1;
    queue_model_sample_t s = {.has_queue = true, .starting = 18, .starting_ages = 18};
    for (int t = 0; t <= 60; t++) {
        s.t_s = t;
        s.queue = 5.0 * t;
        for (unsigned i = 0; i < 18; i++)
            s.starting_age_s[i] = t;
        queue_model_observe(&m, &s);
    }
    queue_model_decision_t d;
    queue_model_decide(&m, &p, &s, &d);
    /* due = 300 + 675 = 975; can_do = 18 x 60 = 1080 */
    assert_float_equal(d.can_do, 1080, 1e-9);
    assert_float_equal(d.deficit, 0, 1e-9);
    assert_float_equal(d.replicas, 6.25, 1e-9);
    /* a pod overdue (age 200 > 135) is late, not gone: 0.75 x 135 */
    s.starting = s.starting_ages = 1;
    s.starting_age_s[0] = 200;
    queue_model_decide(&m, &p, &s, &d);
    assert_float_equal(d.can_do, 0.75 * 135, 1e-9);
}

/* A burst: the rate jumps from 2 to 20 req/s. Within 10 s the fast average
 * is most of the way there; when it stops, the estimate falls only slowly. */
static void test_burst_rises_fast_falls_slow(void **state) {
    (void)state;
    queue_model_t m;
    queue_model_init(&m);
    double done = 0;
    int t = 0;
    for (; t <= 300; t++) {
        done += 2;
        queue_model_sample_t s = engine(t, done, 0, 4, 1);
        queue_model_observe(&m, &s);
    }
    for (int k = 0; k < 10; k++, t++) {
        done += 20;
        queue_model_sample_t s = engine(t, done, 0, 4, 1);
        queue_model_observe(&m, &s);
    }
    queue_model_params_t p = params();
    queue_model_decision_t d;
    queue_model_sample_t now = engine(t - 1, done, 0, 4, 1);
    queue_model_decide(&m, &p, &now, &d);
    assert_true(d.lambda_rps > 2 + 0.6 * 18); /* 1 - e^-1 of the step */
    for (int k = 0; k < 10; k++, t++) {
        done += 2;
        queue_model_sample_t s = engine(t, done, 0, 4, 1);
        queue_model_observe(&m, &s);
    }
    now = engine(t - 1, done, 0, 4, 1);
    queue_model_decide(&m, &p, &now, &d);
    assert_true(d.lambda_rps > 3.5); /* the slow average still remembers the burst */
}

/* A quiet fleet: nothing arrives, nothing waits, nothing runs -> 0 (KEDA's
 * activity, not the value, decides 1 -> 0). */
static void test_quiet_fleet_asks_for_nothing(void **state) {
    (void)state;
    queue_model_t m;
    queue_model_init(&m);
    for (int t = 0; t <= 600; t++) {
        queue_model_sample_t s = engine(t, 100, 0, 0, 3);
        queue_model_observe(&m, &s);
    }
    queue_model_params_t p = params();
    queue_model_sample_t now = engine(600, 100, 0, 0, 3);
    queue_model_decision_t d;
    queue_model_decide(&m, &p, &now, &d);
    assert_float_equal(d.lambda_rps, 0, 1e-9);
    assert_float_equal(d.replicas, 0, 1e-9);
}

/* A queue alone while replicas serve: arrivals cannot be seen, so the rule
 * sizes on the backlog (prior lambda), and says so. */
static void test_queue_only_while_serving_sizes_on_backlog(void **state) {
    (void)state;
    queue_model_t m;
    queue_model_init(&m);
    queue_model_params_t p = params();
    p.cold_start_s = 100;
    p.capacity_rps = 1;
    queue_model_sample_t s = {.has_queue = true, .queue = 0, .ready = 0};
    for (int t = 0; t <= 5; t++) { /* at zero: 2 req/s measured */
        s.t_s = t;
        s.queue = 2.0 * t;
        queue_model_observe(&m, &s);
    }
    s.t_s = 6;
    s.ready = 1;
    s.queue = 400;
    queue_model_observe(&m, &s);
    queue_model_decision_t d;
    queue_model_decide(&m, &p, &s, &d);
    assert_int_equal(d.lambda_from, QM_FROM_PRIOR);
    /* due 400, can_do 1 x 1 x 100 = 100, deficit 300 -> 300 / 60 = 5 */
    assert_float_equal(d.replicas, 5, 1e-9);
}

/* Cold start: the mean of the last 8 observed create -> Ready times. */
static void test_cold_start_learned_from_observations(void **state) {
    (void)state;
    queue_model_t m;
    queue_model_init(&m);
    queue_model_observe_cold_start(&m, NAN);
    queue_model_observe_cold_start(&m, -3);
    for (int i = 0; i < 4; i++)
        queue_model_observe_cold_start(&m, 1000); /* pushed out below */
    for (int i = 0; i < 8; i++)
        queue_model_observe_cold_start(&m, 90 + i * 10); /* 90 .. 160, mean 125 */
    queue_model_params_t p = params();
    queue_model_sample_t s = {.t_s = 0};
    queue_model_decision_t d;
    queue_model_decide(&m, &p, &s, &d);
    assert_int_equal(d.cold_start_from, QM_FROM_LEARNED);
    assert_float_equal(d.cold_start_s, 125, 1e-9);
    p.cold_start_s = 30;
    queue_model_decide(&m, &p, &s, &d);
    assert_int_equal(d.cold_start_from, QM_FROM_OVERRIDE);
    assert_float_equal(d.cold_start_s, 30, 0);
}

/* Heavier requests after capacity was learned: capacity scales with the
 * work per request (tokens). */
static void test_capacity_follows_the_request_mix(void **state) {
    (void)state;
    queue_model_t m;
    queue_model_init(&m);
    queue_model_sample_t s = engine(0, 0, 10, 16, 1);
    s.has_tokens = true;
    for (int t = 0; t <= 600; t++) { /* 2 req/s of 100 generated tokens */
        s.t_s = t;
        s.completed = 2.0 * t;
        s.generation_tokens = 200.0 * t;
        queue_model_observe(&m, &s);
    }
    double gen = s.generation_tokens, done = s.completed;
    for (int t = 601; t <= 1200; t++) { /* not saturated; 200-token requests */
        s.t_s = t;
        s.waiting = 0;
        done += 1;
        gen += 200;
        s.completed = done;
        s.generation_tokens = gen;
        queue_model_observe(&m, &s);
    }
    queue_model_params_t p = params();
    queue_model_decision_t d;
    queue_model_decide(&m, &p, &s, &d);
    assert_int_equal(d.capacity_from, QM_FROM_LEARNED);
    assert_float_equal(d.capacity_rps, 1.0, 0.01); /* twice the work: half the rate */
}

/* Garbage in reads as "not provided", and nothing is NaN. */
static void test_non_finite_inputs_are_ignored(void **state) {
    (void)state;
    queue_model_t m;
    queue_model_init(&m);
    queue_model_sample_t s = engine(0, 0, 0, 0, 1);
    queue_model_observe(&m, &s);
    s = engine(1, NAN, INFINITY, -1, 1);
    queue_model_observe(&m, &s);
    s = engine(0.5, 10, 0, 0, 1); /* time going back: ignored */
    queue_model_observe(&m, &s);
    queue_model_params_t p = params();
    p.target_utilisation = NAN;
    p.drain_s = -5;
    queue_model_decision_t d;
    queue_model_decide(&m, &p, &s, &d);
    assert_false(isnan(d.replicas));
    assert_false(m.have_lambda);
}

/* A ramp: arrivals rise 0.1 req/s every second. The trend is learned and
 * the work due over the horizon includes it (lambda T + trend T^2 / 2). */
static void test_ramp_counts_the_rise_over_the_horizon(void **state) {
    (void)state;
    queue_model_t m;
    queue_model_init(&m);
    queue_model_params_t p = params();
    p.cold_start_s = 100;
    p.capacity_rps = 1;
    double done = 0;
    queue_model_sample_t s;
    for (int t = 0; t <= 300; t++) {
        done += 0.1 * t;
        s = engine(t, done, 0, 0, 40);
        queue_model_observe(&m, &s);
    }
    queue_model_decision_t d;
    queue_model_decide(&m, &p, &s, &d);
    assert_float_equal(m.lambda_trend, 0.1, 0.01);
    /* lambda lags a ramp by ~its time constant: about 30 - 0.1 x 10 = 29 */
    assert_float_equal(d.lambda_rps, 29, 0.5);
    assert_float_equal(d.work_due, d.lambda_rps * 100 + 0.5 * m.lambda_trend * 100 * 100, 1e-6);
    /* then it stops rising: a falling rate is not extrapolated */
    for (int t = 301; t <= 400; t++) {
        done += 1;
        s = engine(t, done, 0, 0, 40);
        queue_model_observe(&m, &s);
    }
    queue_model_decide(&m, &p, &s, &d);
    assert_true(m.lambda_trend < 0);
    assert_float_equal(d.work_due, d.lambda_rps * 100, 1e-6);
}

/* Finite inputs whose need overflows a double: NaN (unknown), never the 0
 * that would scale the workload away (what it gave before). */
static void test_an_overflowing_need_is_nan_not_zero(void **state) {
    (void)state;
    queue_model_t m;
    queue_model_init(&m);
    queue_model_params_t p = params();
    p.capacity_rps = 1e-6;
    queue_model_sample_t s = {.t_s = 0, .has_queue = true, .queue = 1.7e308, .ready = 0};
    queue_model_observe(&m, &s);
    queue_model_decision_t d;
    queue_model_decide(&m, &p, &s, &d);
    assert_true(isnan(d.replicas));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_priors_when_nothing_is_known),
        cmocka_unit_test(test_steady_rate_converges_and_capacity_is_derived),
        cmocka_unit_test(test_capacity_learned_while_saturated),
        cmocka_unit_test(test_counter_reset_skips_the_interval),
        cmocka_unit_test(test_a_pod_appearing_is_not_a_burst),
        cmocka_unit_test(test_missing_counter_uses_prior_not_zero),
        cmocka_unit_test(test_wake_with_backlog),
        cmocka_unit_test(test_starting_pods_are_counted),
        cmocka_unit_test(test_burst_rises_fast_falls_slow),
        cmocka_unit_test(test_ramp_counts_the_rise_over_the_horizon),
        cmocka_unit_test(test_quiet_fleet_asks_for_nothing),
        cmocka_unit_test(test_queue_only_while_serving_sizes_on_backlog),
        cmocka_unit_test(test_cold_start_learned_from_observations),
        cmocka_unit_test(test_capacity_follows_the_request_mix),
        cmocka_unit_test(test_non_finite_inputs_are_ignored),
        cmocka_unit_test(test_an_overflowing_need_is_nan_not_zero),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
