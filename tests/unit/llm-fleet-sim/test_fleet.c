/* test_fleet.c - llm-fleet-sim's replica model: cold starts, the gateway
 * queue and its dispatch, service times and vLLM's counters, and the order
 * in which a scale-down removes replicas. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fleet.h"

static fleet_t *new_fleet(unsigned slots) {
    fleet_t *f = malloc(sizeof *f);
    assert_non_null(f);
    fleet_params_t p;
    fleet_params_default(&p, slots);
    char err[256];
    assert_int_equal(fleet_params_validate(&p, err, sizeof err), 0);
    fleet_init(f, &p);
    return f;
}

static load_request_t req(double at, unsigned prompt, unsigned out, bool length) {
    return (load_request_t){at, prompt, out, length};
}

static void test_fleet_replicas_are_ready_after_the_cold_start(void **state) {
    (void)state;
    fleet_t *f = new_fleet(4);
    assert_int_equal(fleet_scale(f, 10, 2), 2);
    fleet_summary_t s;
    fleet_summary(f, &s);
    assert_int_equal(s.replicas, 2);
    assert_int_equal(s.starting, 2);
    assert_int_equal(s.ready, 0);
    assert_int_equal(fleet_advance(f, 99.9), 0);  /* 10 + 90 s not reached */
    assert_int_equal(fleet_advance(f, 100), 0x3); /* slots 0 and 1, the lowest */
    assert_int_equal(fleet_advance(f, 101), 0);   /* reported once */
    fleet_summary(f, &s);
    assert_int_equal(s.ready, 2);
    assert_int_equal(fleet_scale(f, 101, 9), 4); /* clamped to the slots */
    free(f);
}

static void test_fleet_gateway_holds_requests_until_a_replica_is_ready(void **state) {
    (void)state;
    fleet_t *f = new_fleet(2);
    for (int i = 0; i < 30; i++)
        assert_true(fleet_arrive(f, &(load_request_t){0, 400, 100, false}));
    fleet_scale(f, 0, 1);
    fleet_advance(f, 50);
    fleet_summary_t s;
    fleet_summary(f, &s);
    assert_int_equal(s.queue, 30); /* starting: serves nothing */
    fleet_advance(f, 90);
    fleet_summary(f, &s);
    /* 16 run (max_num_seqs), 5 wait inside (the gateway's threshold), 9 at the gateway */
    assert_int_equal(s.running, 16);
    assert_int_equal(s.waiting, 5);
    assert_int_equal(s.queue, 9);
    assert_int_equal(f->max_queue, 30);
    assert_true(fabs(f->max_wait_s - 90) < 1e-9);
    free(f);
}

static void test_fleet_a_request_counts_prompt_then_tokens_then_success(void **state) {
    (void)state;
    fleet_t *f = new_fleet(1);
    fleet_scale(f, 0, 1);
    fleet_advance(f, 90);
    /* 800 prompt tokens: 0.1 s prefill at 8000/s; 300 tokens at 30/s: 10 s */
    load_request_t r = req(90, 800, 300, false);
    fleet_arrive(f, &r);
    fleet_advance(f, 90);
    const fleet_slot_t *s = &f->slot[0];
    assert_int_equal(s->nrunning, 1);
    assert_true(s->prompt_tokens_total == 0);
    fleet_advance(f, 90.1);
    assert_true(s->prompt_tokens_total == 800);
    fleet_advance(f, 95.1); /* half the decode (149 or 150 with the rounding of 95.1 - 90.1) */
    assert_in_range((unsigned)s->generation_tokens_total, 149, 150);
    assert_true(fleet_kv_usage(f, 0) > 0);
    assert_true(fleet_kv_usage(f, 0) <= 1);
    fleet_advance(f, 100.1);
    assert_int_equal(s->nrunning, 0);
    assert_true(s->generation_tokens_total == 300);
    assert_true(s->success_stop == 1 && s->success_length == 0 && s->success_abort == 0);
    assert_int_equal(f->completed, 1);
    r = req(101, 100, 512, true);
    fleet_arrive(f, &r);
    fleet_advance(f, 101);
    fleet_advance(f, 200);
    assert_true(s->success_length == 1);
    free(f);
}

static void test_fleet_dispatch_picks_the_least_loaded_ready_replica(void **state) {
    (void)state;
    fleet_t *f = new_fleet(3);
    fleet_scale(f, 0, 3);
    fleet_advance(f, 90);
    for (int i = 0; i < 9; i++)
        fleet_arrive(f, &(load_request_t){90, 100, 300, false});
    fleet_advance(f, 90);
    for (unsigned i = 0; i < 3; i++)
        assert_int_equal(f->slot[i].nrunning, 3);
    free(f);
}

static void test_fleet_scale_down_removes_starting_then_newest_ready(void **state) {
    (void)state;
    fleet_t *f = new_fleet(4);
    fleet_scale(f, 0, 2); /* slots 0, 1: Ready at 90 */
    fleet_advance(f, 90);
    fleet_scale(f, 100, 3); /* slot 2: starting */
    fleet_scale(f, 101, 2);
    assert_int_equal(f->slot[2].state, FLEET_ABSENT); /* the one not Ready goes first */
    assert_int_equal(f->slot[1].state, FLEET_READY);
    fleet_scale(f, 102, 3); /* slot 2 again, Ready at 192 */
    fleet_advance(f, 200);
    fleet_scale(f, 201, 2);
    assert_int_equal(f->slot[2].state, FLEET_ABSENT); /* the most recently Ready */
    assert_int_equal(f->slot[0].state, FLEET_READY);
    assert_int_equal(f->slot[1].state, FLEET_READY);
    free(f);
}

static void test_fleet_a_removed_replica_gives_its_requests_back(void **state) {
    (void)state;
    fleet_t *f = new_fleet(1);
    fleet_scale(f, 0, 1);
    fleet_advance(f, 90);
    for (unsigned i = 0; i < 25; i++) /* prompt sizes number them */
        fleet_arrive(f, &(load_request_t){90, 100 + i, 300, false});
    fleet_advance(f, 90);
    fleet_advance(f, 91); /* prompts counted */
    assert_true(f->slot[0].prompt_tokens_total > 0);
    fleet_summary_t s;
    fleet_summary(f, &s);
    assert_int_equal(s.running + s.waiting + s.queue, 25);
    fleet_scale(f, 92, 0);
    fleet_summary(f, &s);
    assert_int_equal(s.queue, 25);
    assert_int_equal(f->requeued, 21);
    /* every request is back, none twice */
    unsigned seen = 0;
    for (size_t k = 0; k < f->gw_len; k++)
        seen |= 1u << (f->gateway[(f->gw_head + k) % FLEET_GATEWAY_MAX].prompt_tokens - 100);
    assert_int_equal(seen, (1u << 25) - 1);
    /* the pod in that slot later is a new one: counters from 0 */
    fleet_scale(f, 93, 1);
    assert_true(f->slot[0].prompt_tokens_total == 0);
    assert_true(f->slot[0].success_stop == 0);
    free(f);
}

static void test_fleet_serves_a_whole_burst(void **state) {
    (void)state;
    fleet_t *f = new_fleet(8);
    load_t l;
    load_init(&l, 5, 0);
    fleet_scale(f, 0, 4);
    static load_request_t batch[256];
    uint64_t arrived = 0;
    for (double t = 0; t < 1000; t += 0.05) { /* bounded: 20 000 steps */
        size_t n = load_arrivals(&l, t, batch, 256);
        for (size_t i = 0; i < n; i++)
            arrived += fleet_arrive(f, &batch[i]);
        fleet_advance(f, t);
    }
    fleet_summary_t s;
    fleet_summary(f, &s);
    assert_int_equal(s.queue + s.running + s.waiting, 0);
    assert_int_equal(f->completed, arrived);
    assert_int_equal(f->rejected, 0);
    double ok = 0;
    for (unsigned i = 0; i < 4; i++)
        ok += f->slot[i].success_stop + f->slot[i].success_length;
    assert_true(ok == (double)arrived);
    free(f);
}

static void test_fleet_capacity_is_the_measured_throughput_of_a_full_replica(void **state) {
    (void)state;
    fleet_params_t p;
    fleet_params_default(&p, 1);
    load_t l;
    load_init(&l, 11, 0);
    /* mean prompt 600 (0.075 s), mean output (sum 50..511 + 89 x 512) / 551
     * = 317.98 tokens (10.6 s): 16 / 10.674 = 1.499 requests/s */
    double cap = fleet_capacity_rps(&p, &l);
    assert_true(fabs(cap - 1.499) < 0.002);
    /* and a replica kept full does about that */
    fleet_t *f = new_fleet(1);
    fleet_scale(f, 0, 1);
    fleet_advance(f, 90);
    static load_request_t batch[256];
    /* 4 requests/s from the start: more than it can do, work always waits */
    l.profile[0] = (load_point_t){0, 4};
    l.profile[1] = (load_point_t){10000, 4};
    l.npoints = 2;
    load_restart(&l, 90);
    for (double t = 90; t < 3690; t += 0.05) {
        size_t n = load_arrivals(&l, t, batch, 256);
        for (size_t i = 0; i < n; i++)
            fleet_arrive(f, &batch[i]);
        fleet_advance(f, t);
    }
    double done_rps = (double)f->completed / 3600;
    assert_true(fabs(done_rps - cap) / cap < 0.05);
    free(f);
}

static void test_fleet_params_validate_names_the_bad_field(void **state) {
    (void)state;
    fleet_params_t p;
    char err[256];
    fleet_params_default(&p, 17);
    assert_int_not_equal(fleet_params_validate(&p, err, sizeof err), 0);
    assert_string_equal(err, "replica slots 17 (valid: 1 to 16)");
    fleet_params_default(&p, 8);
    p.max_num_seqs = 0;
    assert_int_not_equal(fleet_params_validate(&p, err, sizeof err), 0);
    assert_string_equal(err, "max_num_seqs 0 (valid: 1 to 64)");
    fleet_params_default(&p, 8);
    p.cold_start_s = NAN;
    assert_int_not_equal(fleet_params_validate(&p, err, sizeof err), 0);
    assert_string_equal(err, "cold start nan s (valid: finite, > 0)");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fleet_replicas_are_ready_after_the_cold_start),
        cmocka_unit_test(test_fleet_gateway_holds_requests_until_a_replica_is_ready),
        cmocka_unit_test(test_fleet_a_request_counts_prompt_then_tokens_then_success),
        cmocka_unit_test(test_fleet_dispatch_picks_the_least_loaded_ready_replica),
        cmocka_unit_test(test_fleet_scale_down_removes_starting_then_newest_ready),
        cmocka_unit_test(test_fleet_a_removed_replica_gives_its_requests_back),
        cmocka_unit_test(test_fleet_serves_a_whole_burst),
        cmocka_unit_test(test_fleet_capacity_is_the_measured_throughput_of_a_full_replica),
        cmocka_unit_test(test_fleet_params_validate_names_the_bad_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
