/*
 * scalesim_test.h - builders the simulator's unit tests share: a fixed
 * one-replica fleet and a trace from a few requests. Include after
 * <cmocka.h>, policies.h, sim.h and trace.h.
 */
#ifndef SCALESIM_TEST_H
#define SCALESIM_TEST_H

#include <stdlib.h>
#include <string.h>

/* A fixed fleet of one replica: the GPU trigger (policy (b)) with
 * min = max = 1, so it never scales. */
static inline sim_policy_t one_replica(void) {
    sim_model_t m;
    sim_model_default(&m);
    policy_knobs_t k;
    policy_knobs_default(&k);
    static sim_policy_t p[POLICY_COUNT];
    policies_default(p, &m, &k);
    sim_policy_t one = p[1];
    one.min_replicas = one.max_replicas = 1;
    return one;
}

/* A trace of r[0..n) (copied; the caller frees t.reqs). */
static inline trace_t make_trace(const trace_request_t *r, size_t n) {
    trace_t t;
    memset(&t, 0, sizeof t);
    t.reqs = malloc(n * sizeof *t.reqs);
    assert_non_null(t.reqs);
    memcpy(t.reqs, r, n * sizeof *r);
    t.count = t.source_count = n;
    t.end_s = r[n - 1].arrival_s;
    return t;
}

#endif
