/* test_queue_model.c - the queueing demand model on hand-computed cases:
 * each estimator (the arrival rate from the ring, a counter reset, a pod
 * appearing mid-interval, a backlog draining, one burst, a ramp against a
 * step and a burst inside one of the ring's buckets, capacity learned
 * while saturated and derived before, the cold start), the plan (a first wake with no history, a
 * wake onto a warm node, starting pods kept while demand remains and released when it vanished,
 * never an order counted twice, Ready replicas carrying a ramp before
 * anything is ordered, a young capacity's bounded order, the HPA's step
 * and a learned ceiling), the keep-alive on on/off and diurnal traffic
 * (its hold counted at today's capacity), and the inference of starting
 * pods without a pod list. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/queue_model.h"

#define NEAR(a, b, tol) assert_true(fabs((double)(a) - (double)(b)) <= (tol))

static queue_model_params_t params(void) {
    queue_model_params_t p;
    queue_model_params_default(&p);
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
                              .has_pods = true,
                              .ready = ready,
                              .members = ready};
    return s;
}

/* A fleet of `ready` replicas completing `rate` requests/s with `running`
 * in flight and nothing waiting, from t0 to t1, one sample a second. */
static double steady(queue_model_t *m, double t0, double t1, double rate, double running,
                     unsigned ready, double done) {
    for (double t = t0; t <= t1; t++) {
        queue_model_sample_t s = engine(t, done, 0, running, ready);
        queue_model_observe(m, &s);
        done += rate;
    }
    return done;
}

static void decide_at(queue_model_t *m, const queue_model_sample_t *s, queue_model_decision_t *d) {
    queue_model_params_t p = params();
    queue_model_decide(m, &p, s, d);
}

/* ---- estimators ------------------------------------------------------------- */

/* Nothing observed: every input is a documented prior, none is 0, and with
 * no work there is nothing to ask for. */
static void test_priors_when_nothing_is_known(void **state) {
    (void)state;
    queue_model_t m;
    queue_model_init(&m);
    queue_model_sample_t s = {.t_s = 0, .has_queue = true, .queue = 0, .has_pods = true};
    queue_model_observe(&m, &s);
    queue_model_decision_t d;
    decide_at(&m, &s, &d);
    assert_int_equal(d.capacity_from, QM_FROM_PRIOR);
    NEAR(d.capacity_rps, QUEUE_MODEL_PRIOR_CAPACITY_RPS, 0);
    assert_int_equal(d.cold_start_from, QM_FROM_PRIOR);
    NEAR(d.cold_start_s, QUEUE_MODEL_PRIOR_COLD_START_S, 0);
    assert_int_equal(d.lambda_from, QM_FROM_PRIOR);
    NEAR(d.replicas, 0, 0);
}

/* 4 requests/s: after 40 s the 30 s window holds 120 arrivals: 4/s. The
 * fleet ran at one size for over a minute, so Little's law gives the
 * capacity: 8 running at 4/s is 2 s a request, 16 at once / 2 s = 8/s. */
static void test_rate_from_the_window_and_capacity_derived(void **state) {
    (void)state;
    queue_model_t m;
    queue_model_init(&m);
    steady(&m, 0, 120, 4, 8, 2, 0);
    queue_model_decision_t d;
    decide_at(&m, &m.prev, &d);
    assert_int_equal(d.lambda_from, QM_FROM_LEARNED);
    NEAR(d.lambda_rps, 4, 1e-9);
    assert_int_equal(d.capacity_from, QM_FROM_DERIVED);
    NEAR(d.capacity_rps, 8, 1e-6);
    /* (4 + sqrt(4 / 10)) / 8 = 0.579; no backlog: the Ready share the load
     * needs, and one while requests run */
    NEAR(d.steady, (4 + sqrt(0.4)) / 8, 1e-6);
    NEAR(d.need, 1, 1e-9);
}

/* A restart sends a counter back to 10: the interval carries the rate seen
 * so far (no negative, no spike), and the rate stays 4/s. */
static void test_counter_reset_carries_the_rate(void **state) {
    (void)state;
    queue_model_t m;
    queue_model_init(&m);
    double done = steady(&m, 0, 99, 4, 8, 2, 0);
    (void)done;
    steady(&m, 100, 200, 4, 8, 2, 10);
    queue_model_decision_t d;
    decide_at(&m, &m.prev, &d);
    NEAR(d.lambda_rps, 4, 1e-6);
}

/* A pod appears mid-run with 5000 requests already on its counter and 12
 * running: summed over another set of engines, the interval carries the
 * rate (no burst of 5012), and the next intervals count the new pod too. */
static void test_a_pod_appearing_is_not_a_burst(void **state) {
    (void)state;
    queue_model_t m;
    queue_model_init(&m);
    double done = steady(&m, 0, 99, 4, 8, 1, 0);
    for (double t = 100; t <= 200; t++) {
        queue_model_sample_t s = engine(t, done + 5000 + 2 * (t - 100), 0, 20, 2);
        s.members = 3; /* the sum of the two pods' hashes: another set */
        queue_model_observe(&m, &s);
        queue_model_decision_t d;
        decide_at(&m, &s, &d);
        assert_true(d.lambda_rps < 6 + 1e-6); /* 4/s, then 6/s: never the spike */
        done += 4;
    }
    queue_model_decision_t d;
    decide_at(&m, &m.prev, &d);
    NEAR(d.lambda_rps, 6, 1e-6);
}

/* A backlog draining: 600 requests queued while nothing arrives, completed
 * at 20/s. Completions rise and those present fall by as much: no arrival. */
static void test_a_backlog_draining_is_not_arrivals(void **state) {
    (void)state;
    queue_model_t m;
    queue_model_init(&m);
    double done = 0, queue = 600;
    for (double t = 0; t <= 30; t++) {
        queue_model_sample_t s = engine(t, done, 0, 10, 2);
        s.has_queue = true;
        s.queue = queue;
        queue_model_observe(&m, &s);
        done += 20;
        queue -= 20;
    }
    queue_model_decision_t d;
    decide_at(&m, &m.prev, &d);
    NEAR(d.lambda_rps, 0, 1e-9);
}

/* One burst of 30 requests into the queue while nothing serves: a backlog
 * of 30, and what it is worth as a rate over the 30 s window (1/s), gone
 * once the window has passed it. */
static void test_one_burst_is_a_backlog_not_a_rate(void **state) {
    (void)state;
    queue_model_t m;
    queue_model_init(&m);
    for (double t = 0; t <= 100; t++) {
        queue_model_sample_t s = {
            .t_s = t, .has_queue = true, .queue = t >= 50 ? 30 : 0, .has_pods = true};
        queue_model_observe(&m, &s);
        queue_model_decision_t d;
        decide_at(&m, &s, &d);
        if (t == 50)
            NEAR(d.lambda_rps, 1, 1e-9);
        if (t == 85)
            NEAR(d.lambda_rps, 0, 1e-9);
        if (t >= 50)
            NEAR(d.backlog, 30, 0);
    }
}

/* A ramp rises across each of the last four 30 s windows by more than
 * Poisson noise and is extrapolated once over a cold start; a step (a burst
 * beginning) rises across one or two of them only, and is not. */
static void test_a_ramp_is_extrapolated_a_step_is_not(void **state) {
    (void)state;
    queue_model_params_t p = params();
    p.cold_start_s = 60;
    queue_model_t ramp, step;
    queue_model_init(&ramp);
    queue_model_init(&step);
    double a = 0, b = 0;
    for (double t = 0; t <= 300; t++) {
        queue_model_sample_t r = engine(t, a, 0, 4, 4), s = engine(t, b, 0, 4, 4);
        queue_model_observe(&ramp, &r);
        queue_model_observe(&step, &s);
        a += t / 20;           /* the rate rises by 3/s a minute */
        b += t >= 240 ? 5 : 0; /* 0, then 5/s from t = 240 */
    }
    queue_model_decision_t dr, ds;
    queue_model_decide(&ramp, &p, &ramp.prev, &dr);
    queue_model_decide(&step, &p, &step.prev, &ds);
    /* the ramp's rate over the last 30 s is ~14.25/s, each window before
     * 1.5/s lower (Poisson noise on a difference: ~1/s): the rise over one
     * cold start is 3/s */
    NEAR(dr.rise_rps, 3, 0.05);
    NEAR(ds.rise_rps, 0, 0);
}

/* A burst that begins inside one of the ring's 10 s buckets (7 s after its
 * first second) lies in that bucket only: at no decision over the next two
 * minutes does it read as a ramp. Interpolating within the bucket spread a
 * share of it over the seconds before it began, three windows rose, and
 * each burst of on/off traffic ordered replicas for a rise that never came
 * (cancelled when the burst ended). */
static void test_a_burst_inside_a_bucket_is_no_ramp(void **state) {
    (void)state;
    queue_model_params_t p = params();
    p.cold_start_s = 135;
    for (double begin = 241; begin < 250; begin += 3) {
        queue_model_t m;
        queue_model_init(&m);
        double done = 0;
        for (double t = 0; t <= begin + 120; t++) {
            queue_model_sample_t s = engine(t, done, 0, 4, 4);
            queue_model_observe(&m, &s);
            if (t >= begin) {
                queue_model_decision_t d;
                queue_model_decide(&m, &p, &s, &d);
                NEAR(d.rise_rps, 0, 0);
            }
            done += t >= begin ? 16 : 0;
        }
    }
}

/* Saturated: 3 Ready replicas, work waits throughout, 6 completions/s of
 * 100 prompt + 50 generated tokens: capacity 2 requests/s each, learned
 * once the fleet has settled; then the mix doubles in cost and the same
 * work per second is 1 request/s. */
static void test_capacity_learned_while_saturated_follows_the_mix(void **state) {
    (void)state;
    queue_model_t m;
    queue_model_init(&m);
    double done = 0;
    for (double t = 0; t <= 120; t++) {
        queue_model_sample_t s = engine(t, done, 50, 48, 3);
        s.has_tokens = true;
        s.prompt_tokens = 100 * done;
        s.generation_tokens = 50 * done;
        queue_model_observe(&m, &s);
        done += 6;
    }
    queue_model_decision_t d;
    decide_at(&m, &m.prev, &d);
    assert_int_equal(d.capacity_from, QM_FROM_LEARNED);
    NEAR(d.capacity_rps, 2, 1e-6);
    NEAR(d.work_per_req, 75, 1e-6); /* 50 + 100 / 4 */
    double prompt = m.prev.prompt_tokens, gen = m.prev.generation_tokens;
    for (double t = 121; t <= 400; t++) {
        queue_model_sample_t s = engine(t, done, 50, 48, 3);
        s.has_tokens = true;
        prompt += 3 * 200;
        gen += 3 * 100;
        s.prompt_tokens = prompt;
        s.generation_tokens = gen;
        queue_model_observe(&m, &s);
        done += 3;
    }
    decide_at(&m, &m.prev, &d);
    NEAR(d.work_per_req, 150, 1); /* 100 + 200 / 4 */
    NEAR(d.capacity_rps, 1, 0.02);
}

/* A model that starts beside a fleet already running (the scaler restarted,
 * the trigger first asked for at t = 5000 s) does not know when that fleet
 * last changed size: its first seconds are not a settled fleet, and no
 * capacity is learned from them; once 10 s have passed, it is. */
static void test_a_model_started_late_waits_for_a_settled_fleet(void **state) {
    (void)state;
    queue_model_t m;
    queue_model_init(&m);
    double done = 0;
    for (double t = 5000; t <= 5009; t++) {
        queue_model_sample_t s = engine(t, done, 50, 48, 3);
        queue_model_observe(&m, &s);
        done += 6;
    }
    assert_false(m.have_capacity);
    for (double t = 5010; t <= 5030; t++) {
        queue_model_sample_t s = engine(t, done, 50, 48, 3);
        queue_model_observe(&m, &s);
        done += 6;
    }
    assert_true(m.have_capacity);
}

/* ---- the plan ------------------------------------------------------------------ */

static queue_model_sample_t queued(double t, double queue, unsigned ready, unsigned starting,
                                   double age) {
    queue_model_sample_t s = {.t_s = t,
                              .has_queue = true,
                              .queue = queue,
                              .has_pods = true,
                              .ready = ready,
                              .starting = starting};
    for (unsigned i = 0; i < starting && i < QUEUE_MODEL_MAX_STARTING; i++)
        s.starting_age_s[s.starting_ages++] = age;
    return s;
}

/* A first wake with no history: nothing known of a replica (1 request/s
 * prior), so each new one is asked to clear its share over a cold start
 * (120 s prior), not the drain target, and the order is bounded: 40
 * queued -> 1, 400 -> 3.33, 4000 -> 5 (the HPA's first step from the one
 * replica KEDA wakes: 4 pods more), never hundreds. */
static void test_first_wake_with_no_history_is_a_bounded_order(void **state) {
    (void)state;
    const double backlog[] = {40, 400, 4000}, want[] = {1, 400.0 / 120, 5};
    for (int i = 0; i < 3; i++) {
        queue_model_t m;
        queue_model_init(&m);
        queue_model_sample_t s = queued(0, backlog[i], 0, 0, 0);
        queue_model_observe(&m, &s);
        queue_model_decision_t d;
        decide_at(&m, &s, &d);
        NEAR(d.replicas, want[i], 1e-9);
        assert_int_equal(d.capacity_from, QM_FROM_PRIOR);
    }
}

/* The model once it knows: 10 requests/s per replica configured, cold
 * start 60 s, drain 10 s. 300 queued, nothing arriving, nothing Ready: a
 * replica ordered now clears 100 in 10 s, so 3; as those 3 pods age and the
 * queue stays (nothing serves it yet), the answer stays 3: they are never
 * cancelled and never ordered again. Once they serve and the queue is gone,
 * nothing keeps them but the keep-alive. */
static void test_orders_are_kept_and_never_counted_twice(void **state) {
    (void)state;
    queue_model_params_t p = params();
    p.capacity_rps = 10;
    p.cold_start_s = 60;
    queue_model_t m;
    queue_model_init(&m);
    queue_model_decision_t d;
    queue_model_sample_t s = queued(0, 300, 0, 0, 0);
    queue_model_observe(&m, &s);
    queue_model_decide(&m, &p, &s, &d);
    NEAR(d.replicas, 3, 1e-9);
    for (double t = 1; t < 60; t += 1) {
        s = queued(t, 300, 0, 3, t);
        queue_model_observe(&m, &s);
        queue_model_decide(&m, &p, &s, &d);
        assert_int_equal(d.kept_starting, 3);
        NEAR(d.ordered, 0, 1e-9);
        NEAR(d.replicas, 3, 1e-9);
    }
}

/* The work a starting pod was ordered for is gone (another replica became
 * Ready and drained it, nothing arrives): it is released. */
static void test_a_starting_pod_whose_work_is_gone_is_released(void **state) {
    (void)state;
    queue_model_params_t p = params();
    p.capacity_rps = 10;
    p.cold_start_s = 60;
    queue_model_t m;
    queue_model_init(&m);
    queue_model_decision_t d;
    queue_model_sample_t s = queued(0, 0, 1, 2, 30);
    queue_model_observe(&m, &s);
    queue_model_decide(&m, &p, &s, &d);
    assert_int_equal(d.kept_starting, 0);
    NEAR(d.need, 0, 1e-9);
}

/* Starting pods are kept while demand remains, even when the Ready ones
 * could carry it now: a start cancelled and asked for again costs a whole
 * cold start more. 1 Ready replica of 10/s serves 2 requests/s; 2 pods
 * ordered 30 s ago are still starting: all 3 stay (and so does the Ready
 * one: a scale-down deletes the starting pods first). */
static void test_starting_pods_are_kept_while_demand_remains(void **state) {
    (void)state;
    queue_model_params_t p = params();
    p.capacity_rps = 10;
    p.cold_start_s = 60;
    queue_model_t m;
    queue_model_init(&m);
    double done = steady(&m, 0, 60, 2, 1, 1, 0);
    queue_model_sample_t s = engine(61, done, 0, 1, 1);
    s.starting = 2;
    s.starting_ages = 2;
    s.starting_age_s[0] = s.starting_age_s[1] = 30;
    queue_model_observe(&m, &s);
    queue_model_decision_t d;
    queue_model_decide(&m, &p, &s, &d);
    NEAR(d.lambda_rps, 2, 0.1);
    assert_int_equal(d.kept_starting, 2);
    NEAR(d.replicas, 3, 1e-9);
}

/* Ready replicas are never released to order new ones: 24 Ready of 1/s
 * each, the arrivals ramping 3/s a minute to ~14/s. The answer keeps the
 * Ready replicas the ramp needs a cold start ahead (~17/s + headroom) and
 * orders nothing: a new replica would serve after a cold start, a Ready one
 * serves now. */
static void test_ready_replicas_carry_a_ramp_before_anything_is_ordered(void **state) {
    (void)state;
    queue_model_params_t p = params();
    p.capacity_rps = 1;
    p.cold_start_s = 60;
    queue_model_t m;
    queue_model_init(&m);
    queue_model_decision_t d;
    double done = 0;
    for (double t = 0; t <= 240; t++) {
        queue_model_sample_t s = engine(t, done, 0, 4, 24);
        queue_model_observe(&m, &s);
        done += 2 + 3 * t / 60;
    }
    queue_model_decide(&m, &p, &m.prev, &d);
    assert_true(d.rise_rps > 2 && d.rise_rps <= 3.5);
    NEAR(d.ordered, 0, 1e-9);
    assert_true(d.need >= d.lambda_rps + d.rise_rps && d.need < 24);
}

/* A capacity learned over less than a minute of saturation is young (the
 * first intervals after a wake read low): the order stays bounded as with
 * a prior, at 8 or twice the Ready replicas, never below the pods there (5
 * Ready and 5 starting: 10); once older, only the HPA's step bounds it
 * (twice the 10 pods). */
static queue_model_sample_t saturated(double t, double done) {
    queue_model_sample_t s = engine(t, done, 1000, 32, 5);
    s.starting = 5; /* no ages: just created */
    return s;
}

static void test_a_young_capacity_bounds_the_order(void **state) {
    (void)state;
    queue_model_t m;
    queue_model_init(&m);
    queue_model_decision_t d;
    double done = 0;
    for (double t = 0; t <= 30; t++) { /* 1000 waiting, 1 done/s each */
        queue_model_sample_t s = saturated(t, done);
        queue_model_observe(&m, &s);
        done += 5;
    }
    decide_at(&m, &m.prev, &d);
    assert_int_equal(d.capacity_from, QM_FROM_LEARNED);
    NEAR(d.capacity_rps, 1, 1e-6);
    NEAR(d.replicas, 10, 1e-9); /* 1000 / (1 x 10 s) = 100 asked for */
    for (double t = 31; t <= 120; t++) {
        queue_model_sample_t s = saturated(t, done);
        queue_model_observe(&m, &s);
        done += 5;
    }
    decide_at(&m, &m.prev, &d);
    NEAR(d.replicas, 20, 1e-9);
    assert_true(d.step_limited);
}

/* The keep-alive holds the load that asked, counted at today's capacity: 7
 * requests/s asked for 8 replicas while a replica was taken to do 1/s; the
 * load stops, and with a replica now known to do 4/s the hold is the 2
 * replicas that load needs, not the 8 it asked for then. */
static void test_the_hold_is_counted_at_todays_capacity(void **state) {
    (void)state;
    queue_model_params_t p = params();
    p.cold_start_s = 60;
    p.capacity_rps = 1;
    queue_model_t m;
    queue_model_init(&m);
    queue_model_decision_t d;
    double done = 0;
    for (double t = 0; t <= 120; t++) {
        queue_model_sample_t s = engine(t, done, 0, 7, 8);
        queue_model_observe(&m, &s);
        queue_model_decide(&m, &p, &s, &d);
        done += 7;
    }
    NEAR(d.replicas, 8, 1e-9);
    p.capacity_rps = 4;
    for (double t = 121; t <= 160; t++) {
        queue_model_sample_t s = engine(t, done, 0, 0, 8);
        queue_model_observe(&m, &s);
        queue_model_decide(&m, &p, &s, &d);
    }
    NEAR(d.need, 0, 1e-9);
    assert_true(d.replicas >= 2 && d.replicas <= 3);
}

/* The answer asks no more than one HPA scale-up step (4 pods or 100 %,
 * whichever is more), and learns a ceiling: the fleet stayed at 6 pods for
 * 45 s while more were asked (maxReplicaCount), so the answer is cut to 6
 * until the fleet grows past it. */
static void test_the_hpa_step_and_a_learned_ceiling(void **state) {
    (void)state;
    queue_model_params_t p = params();
    p.capacity_rps = 1;
    p.cold_start_s = 60;
    queue_model_t m;
    queue_model_init(&m);
    queue_model_decision_t d;
    queue_model_sample_t s = queued(0, 10000, 2, 0, 0);
    queue_model_observe(&m, &s);
    queue_model_decide(&m, &p, &s, &d);
    NEAR(d.replicas, 6, 1e-9); /* 2 + 4 */
    assert_true(d.step_limited);
    for (double t = 1; t <= 50; t++) {
        s = queued(t, 10000, 6, 0, 0);
        queue_model_observe(&m, &s);
        queue_model_decide(&m, &p, &s, &d);
    }
    assert_int_equal(d.ceiling, 6);
    NEAR(d.replicas, 6, 1e-9);
    s = queued(51, 10000, 7, 0, 0);
    queue_model_observe(&m, &s);
    queue_model_decide(&m, &p, &s, &d);
    assert_int_equal(d.ceiling, 0);
    NEAR(d.replicas, 14, 1e-9);
}

/* An answer a little above the pods (5.15 for 5: arrivals at 4.95/s, 5
 * waiting, 5 replicas completing 1/s each) is inside the HPA's 10 %
 * tolerance: the HPA leaves the fleet as it is, and that is no ceiling.
 * (Learned from it, the ceiling capped every later answer at 5 for ten
 * minutes, however the load rose.) */
static void test_an_answer_within_the_hpa_tolerance_is_no_ceiling(void **state) {
    (void)state;
    queue_model_params_t p = params();
    p.capacity_rps = 1;
    p.cold_start_s = 60;
    p.target_utilisation = 1;
    queue_model_t m;
    queue_model_init(&m);
    queue_model_decision_t d;
    for (double t = 0; t <= 120; t++) {
        queue_model_sample_t s = engine(t, 4.95 * t, 5, 5, 5);
        queue_model_observe(&m, &s);
        queue_model_decide(&m, &p, &s, &d);
    }
    assert_true(d.replicas > 5 && d.replicas <= 5.5);
    assert_int_equal(d.ceiling, 0);
    /* the load rises: the answer follows it, one HPA step at a time */
    double done = 4.95 * 120;
    for (double t = 121; t <= 160; t++) {
        done += 20;
        queue_model_sample_t s = engine(t, done, 5, 5, 5);
        queue_model_observe(&m, &s);
        queue_model_decide(&m, &p, &s, &d);
    }
    assert_true(d.replicas > 8.9);
}

/* A wake onto a warm node: the same backlog, one pod starting 10 s ago;
 * on a new node it is Ready in 50 s, on a node already up (the seam for
 * the cold start by stage says: in 5 s) it serves 45 s sooner, and fewer
 * new replicas are asked for. */
static void test_a_wake_onto_a_warm_node(void **state) {
    (void)state;
    queue_model_params_t p = params();
    p.capacity_rps = 10;
    p.cold_start_s = 60;
    queue_model_decision_t cold_d, warm_d;
    queue_model_t cold, warm;
    queue_model_init(&cold);
    queue_model_init(&warm);
    queue_model_sample_t s = queued(100, 1000, 0, 1, 10);
    queue_model_observe(&cold, &s);
    queue_model_decide(&cold, &p, &s, &cold_d);
    s.starting_etas = 1;
    s.starting_eta_s[0] = 5;
    queue_model_observe(&warm, &s);
    queue_model_decide(&warm, &p, &s, &warm_d);
    /* by the time a new replica has served its 10 s (70 s from now): cold,
     * the pod served 20 s, 1000 - 200 = 800 left -> 8 new; warm, 65 s, 1000
     * - 650 = 350 -> 3.5 new */
    NEAR(cold_d.ordered, 8, 1e-6);
    NEAR(warm_d.ordered, 3.5, 1e-6);
    assert_int_equal(warm_d.kept_starting, 1);
}

/* Finite inputs that overflow: the need is unknown (NaN), never 0. */
static void test_an_overflowing_need_is_nan_not_zero(void **state) {
    (void)state;
    queue_model_params_t p = params();
    p.capacity_rps = 1e-300;
    queue_model_t m;
    queue_model_init(&m);
    queue_model_sample_t s = queued(0, 1e300, 0, 0, 0);
    queue_model_observe(&m, &s);
    queue_model_decision_t d;
    queue_model_decide(&m, &p, &s, &d);
    assert_true(isnan(d.replicas));
}

/* ---- keep-alive ---------------------------------------------------------------- */

/* On/off traffic: 60 s of 8 requests/s, 120 s of nothing, cold start
 * 135 s. Released in a pause, a replica costs a wake per burst; the gaps
 * the need shows (it stops asking ~25 s into the pause, once the rate
 * window has emptied, and asks again as the next burst begins: ~95 s) are
 * far shorter than three cold starts, so K covers them (the bin edge
 * above, ~101 s) and the load's replica is held through every pause. */
static void test_keepalive_holds_through_short_pauses(void **state) {
    (void)state;
    queue_model_params_t p = params();
    p.capacity_rps = 10;
    p.cold_start_s = 135;
    queue_model_t m;
    queue_model_init(&m);
    queue_model_decision_t d;
    double done = 0;
    double held_in_pause = -1;
    for (double t = 0; t < 1800; t++) {
        bool on = fmod(t, 180) < 60;
        queue_model_sample_t s = engine(t, done, 0, on ? 4 : 0, 1);
        queue_model_observe(&m, &s);
        queue_model_decide(&m, &p, &s, &d);
        done += on ? 8 : 0;
        if (t > 1500 && fmod(t, 180) == 170) /* the end of a late pause */
            held_in_pause = d.replicas;
    }
    assert_true(d.keepalive_s >= 95 && d.keepalive_s <= 3 * 135);
    assert_true(held_in_pause >= 1);
}

/* Diurnal traffic: the load rises over an hour and falls over the next;
 * a replica the load stops asking for is asked again only hours later, if
 * at all: the gaps are long, K is short, and the falling side releases. */
static void test_keepalive_releases_on_a_slow_fall(void **state) {
    (void)state;
    queue_model_params_t p = params();
    p.capacity_rps = 1;
    p.cold_start_s = 135;
    queue_model_t m;
    queue_model_init(&m);
    queue_model_decision_t d;
    double done = 0;
    for (double t = 0; t < 4 * 3600; t++) {
        double rate = 10 * (0.5 - 0.5 * cos(2 * M_PI * t / 7200)); /* 0 .. 10 .. 0, 2 h */
        queue_model_sample_t s = engine(t, done, 0, rate, (unsigned)ceil(rate + 1));
        s.members = 1;
        queue_model_observe(&m, &s);
        queue_model_decide(&m, &p, &s, &d);
        done += rate;
        /* on the falling side the answer follows the need within K */
        if (t > 7200 + 1800 && t < 7200 + 3000)
            assert_true(d.replicas - d.need < 2.0);
    }
    assert_true(d.keepalive_s <= 3 * 135);
}

/* Rule 5: a small fall is walked, a large one taken. 120 requests/s on
 * replicas of 10/s want 12.35 (13 with the keep-alive's level); 14 Ready
 * and 2 starting are all kept (16). When the two are Ready the answer
 * would fall to 13: 3 replicas, at most a quarter of 16, so it goes down
 * one replica per HPA sync (15 at +15 s, 14 at +30 s, 13 at +45 s and
 * there it stays). With 25 requests/s the same fleet wants 3: a fall of
 * 13, taken at once. */
static void test_a_small_fall_is_walked_a_large_one_taken(void **state) {
    (void)state;
    queue_model_params_t p = params();
    p.capacity_rps = 10;
    p.cold_start_s = 60;
    const double rate[] = {120, 25};
    for (int k = 0; k < 2; k++) {
        queue_model_t m;
        queue_model_init(&m);
        queue_model_decision_t d;
        double done = steady(&m, 0, 60, rate[k], 5, 14, 0);
        queue_model_sample_t s = engine(61, done, 0, 5, 14);
        s.starting = 2;
        s.starting_ages = 2;
        s.starting_age_s[0] = s.starting_age_s[1] = 50;
        queue_model_observe(&m, &s);
        queue_model_decide(&m, &p, &s, &d);
        NEAR(d.replicas, 16, 1e-9);
        assert_false(d.walking);
        done += rate[k];
        for (double t = 62; t <= 62 + 60; t++) {
            s = engine(t, done, 0, 5, 16);
            queue_model_observe(&m, &s);
            queue_model_decide(&m, &p, &s, &d);
            done += rate[k];
            if (k == 1) { /* taken at once */
                NEAR(d.replicas, 3, 1e-9);
                assert_false(d.walking);
                continue;
            }
            double want = 16 - (t - 61) / QUEUE_MODEL_HPA_SYNC_S;
            if (want > 13) {
                NEAR(d.replicas, want, 1e-9);
                assert_true(d.walking);
                assert_true(d.held > 0);
            } else {
                NEAR(d.replicas, 13, 1e-9);
                assert_false(d.walking);
            }
        }
    }
}

/* The cold start by stage (issue 33): starts seen taking 60 s for a node,
 * 40 s for the image and 30 s for the weights. A pod ordered when the
 * newest start found a node up (scheduled at once) pays the image and the
 * weights, 70 s; when the newest waited for a node, or a pod of the
 * workload waits for one now, all three, 130 s. A wake onto a warm node is
 * shorter than one onto a new node. */
static void test_a_warm_node_wake_is_shorter_than_a_cold_node_wake(void **state) {
    (void)state;
    queue_model_params_t p = params();
    p.capacity_rps = 10;
    const double cold_start[3] = {60, 40, 30}, warm_start[3] = {1, 40, 30};
    queue_model_decision_t d;
    queue_model_t m;

    queue_model_init(&m); /* the newest start found a node up */
    queue_model_observe_stages(&m, cold_start);
    queue_model_observe_stages(&m, warm_start);
    queue_model_sample_t s = queued(100, 50, 0, 0, 0);
    queue_model_observe(&m, &s);
    queue_model_decide(&m, &p, &s, &d);
    assert_int_equal(d.cold_start_from, QM_FROM_LEARNED);
    assert_int_equal(d.cold_start_stages, 1);
    NEAR(d.cold_start_s, 70, 1e-9);
    double warm = d.cold_start_s;

    queue_model_init(&m); /* ... and one pod waits for a node now */
    queue_model_observe_stages(&m, cold_start);
    queue_model_observe_stages(&m, warm_start);
    s = queued(100, 50, 0, 1, 5);
    s.waiting_for_node = 1;
    queue_model_observe(&m, &s);
    queue_model_decide(&m, &p, &s, &d);
    assert_int_equal(d.cold_start_stages, 2);
    NEAR(d.cold_start_s, (60 + 1) / 2.0 + 70, 1e-9);

    queue_model_init(&m); /* the newest start waited for a node */
    queue_model_observe_stages(&m, warm_start);
    queue_model_observe_stages(&m, cold_start);
    s = queued(100, 50, 0, 0, 0);
    queue_model_observe(&m, &s);
    queue_model_decide(&m, &p, &s, &d);
    assert_int_equal(d.cold_start_stages, 2);
    assert_true(d.cold_start_s > warm);

    /* a start with a stage that is not a duration teaches nothing */
    queue_model_init(&m);
    const double bad[3] = {-1, 40, 30};
    queue_model_observe_stages(&m, bad);
    queue_model_decide(&m, &p, &s, &d);
    assert_int_equal(d.cold_start_from, QM_FROM_PRIOR);
    assert_int_equal(d.cold_start_stages, 0);
}

/* A starting pod's time until Ready from its stage: 20 s into loading its
 * weights (30 s on average) it is Ready in 10 s, where "the cold start (130
 * s) minus its age (100 s)" said 30. What it completes by the horizon is
 * counted from then: 20 s more of 10/s = 200 requests more. */
static void test_a_starting_pod_is_counted_from_its_stage(void **state) {
    (void)state;
    queue_model_params_t p = params();
    p.capacity_rps = 10;
    const double start[3] = {60, 40, 30};
    queue_model_decision_t by_age, by_stage;
    queue_model_t m;
    queue_model_init(&m);
    queue_model_observe_stages(&m, start);
    queue_model_sample_t s = queued(100, 500, 0, 1, 100);
    queue_model_observe(&m, &s);
    queue_model_decide(&m, &p, &s, &by_age);
    queue_model_init(&m);
    queue_model_observe_stages(&m, start);
    s.starting_stages = 1;
    s.starting_stage[0] = QM_STAGE_WEIGHTS;
    s.starting_stage_age_s[0] = 20;
    queue_model_observe(&m, &s);
    queue_model_decide(&m, &p, &s, &by_stage);
    NEAR(by_stage.can_do - by_age.can_do, 200, 1e-6);
    /* overdue in its stage: a tenth of the stage is left, then nothing */
    queue_model_init(&m);
    queue_model_observe_stages(&m, start);
    s.starting_stage_age_s[0] = 300;
    queue_model_observe(&m, &s);
    queue_model_decide(&m, &p, &s, &by_stage);
    NEAR(by_stage.can_do - by_age.can_do, 10 * (30 - 3), 1e-6);
}

/* ---- without a pod list ---------------------------------------------------- */

/* The standalone role sees engines answering, not pods: the 3 replicas the
 * model asked for count as starting (aged from the answer) until they
 * answer, so the next decisions do not order them again; the first that
 * answers 70 s after the order is an observed cold start. */
static void test_without_a_pod_list_the_orders_count_as_starting(void **state) {
    (void)state;
    queue_model_params_t p = params();
    p.capacity_rps = 10;
    p.cold_start_s = 0; /* learn it */
    queue_model_t m;
    queue_model_init(&m);
    queue_model_decision_t d;
    queue_model_sample_t s = {.t_s = 0, .has_queue = true, .queue = 360};
    queue_model_observe(&m, &s);
    queue_model_decide(&m, &p, &s, &d);
    /* 360 over the prior 120 s cold start, drained in 10 s at 10/s: 3.6 */
    NEAR(d.replicas, 3.6, 1e-9);
    for (double t = 1; t < 70; t++) {
        s.t_s = t;
        queue_model_observe(&m, &s);
        queue_model_decide(&m, &p, &s, &d);
        assert_true(d.inferred_starting);
        assert_int_equal(d.starting, 4);
        NEAR(d.ordered, 0, 1e-9);
    }
    s.t_s = 70;
    s.ready = 1;
    queue_model_observe(&m, &s);
    queue_model_decide(&m, &p, &s, &d);
    assert_int_equal(m.cold_count, 1);
    NEAR(m.cold_samples[0], 70, 1e-6);
    assert_int_equal(d.starting, 3);
    /* all four answer: four cold starts learned; the queue grows to more
     * than they drain, so four more are asked for (the HPA's step: 8) */
    s.t_s = 75;
    s.ready = 4;
    s.queue = 36000;
    queue_model_observe(&m, &s);
    queue_model_decide(&m, &p, &s, &d);
    assert_int_equal(m.cold_count, 4);
    NEAR(d.replicas, 8, 1e-9);
    assert_int_equal(d.starting, 0);
    /* one engine misses one poll: that is no new order (the four asked
     * for still start), and its answer at the next poll is no 15 s cold
     * start */
    s.t_s = 90;
    s.ready = 3;
    queue_model_observe(&m, &s);
    queue_model_decide(&m, &p, &s, &d);
    assert_int_equal(d.starting, 4);
    unsigned asked = (unsigned)ceil(d.replicas - 1e-9); /* the HPA's next step */
    s.t_s = 105;
    s.ready = 4;
    queue_model_observe(&m, &s);
    queue_model_decide(&m, &p, &s, &d);
    assert_int_equal(m.cold_count, 4);
    assert_int_equal(d.starting, asked - 4);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_priors_when_nothing_is_known),
        cmocka_unit_test(test_rate_from_the_window_and_capacity_derived),
        cmocka_unit_test(test_counter_reset_carries_the_rate),
        cmocka_unit_test(test_a_pod_appearing_is_not_a_burst),
        cmocka_unit_test(test_a_backlog_draining_is_not_arrivals),
        cmocka_unit_test(test_one_burst_is_a_backlog_not_a_rate),
        cmocka_unit_test(test_a_ramp_is_extrapolated_a_step_is_not),
        cmocka_unit_test(test_a_burst_inside_a_bucket_is_no_ramp),
        cmocka_unit_test(test_capacity_learned_while_saturated_follows_the_mix),
        cmocka_unit_test(test_a_model_started_late_waits_for_a_settled_fleet),
        cmocka_unit_test(test_first_wake_with_no_history_is_a_bounded_order),
        cmocka_unit_test(test_orders_are_kept_and_never_counted_twice),
        cmocka_unit_test(test_a_starting_pod_whose_work_is_gone_is_released),
        cmocka_unit_test(test_starting_pods_are_kept_while_demand_remains),
        cmocka_unit_test(test_ready_replicas_carry_a_ramp_before_anything_is_ordered),
        cmocka_unit_test(test_a_young_capacity_bounds_the_order),
        cmocka_unit_test(test_the_hold_is_counted_at_todays_capacity),
        cmocka_unit_test(test_the_hpa_step_and_a_learned_ceiling),
        cmocka_unit_test(test_an_answer_within_the_hpa_tolerance_is_no_ceiling),
        cmocka_unit_test(test_a_wake_onto_a_warm_node),
        cmocka_unit_test(test_a_warm_node_wake_is_shorter_than_a_cold_node_wake),
        cmocka_unit_test(test_a_starting_pod_is_counted_from_its_stage),
        cmocka_unit_test(test_an_overflowing_need_is_nan_not_zero),
        cmocka_unit_test(test_keepalive_holds_through_short_pauses),
        cmocka_unit_test(test_keepalive_releases_on_a_slow_fall),
        cmocka_unit_test(test_a_small_fall_is_walked_a_large_one_taken),
        cmocka_unit_test(test_without_a_pod_list_the_orders_count_as_starting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
