/* test_source_hub.c - the hub's split between subscribe (creates and starts
 * sources) and signals (a read that creates nothing). The loop is never
 * run, so no poll goes out: only what each call leaves behind is checked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sources/source_hub.h"
#include "support/test_support.h"

typedef struct {
    loop_t *loop;
    source_hub_t *hub;
} fixture_t;

static int setup(void **state) {
    fixture_t *f = calloc(1, sizeof *f);
    char err[256];
    if (!f || loop_new(&f->loop, err, sizeof err) != 0) {
        free(f);
        return -1;
    }
    source_hub_opts_t o = {.loop = f->loop};
    if (source_hub_new(&o, &f->hub, err, sizeof err) != 0) {
        loop_free(f->loop);
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture_t *f = *state;
    source_hub_free(f->hub);
    loop_free(f->loop);
    free(f);
    return 0;
}

/* The shared builder, kept in static storage: the hub borrows configs. */
static trigger_config_t *parsed(trigger_config_t c) {
    static trigger_config_t keep;
    keep = c;
    return &keep;
}

#define HUB_CFG(...) parsed(CFG(__VA_ARGS__))

static unsigned sources(fixture_t *f) {
    source_hub_stats_t st;
    source_hub_stats(f->hub, &st);
    return st.sources;
}

static void test_source_hub_signals_creates_nothing(void **state) {
    fixture_t *f = *state;
    const trigger_config_t *c =
        HUB_CFG("metricType", "vllm_queue_depth", "targetValue", "5", "vllmEndpoint",
                "http://10.0.0.7:8000/metrics,http://10.0.0.8:8000/metrics");
    demand_inputs_t in;
    demand_learned_t learned;
    source_hub_signals(f->hub, c, 1, "ml", 1000, &in, &learned);
    assert_int_equal(sources(f), 0);
    assert_int_equal(in.pods_status, EVAL_OK);
    assert_int_equal(in.nengines, 2);
    assert_int_equal(in.engines[0].state, DEMAND_SOURCE_NOT_STARTED);
    assert_string_equal(in.engines[1].name, "http://10.0.0.8:8000/metrics");
    /* not subscribed: nothing learned is kept */
    assert_null(learned.forecast);
    assert_null(learned.model);
    assert_null(learned.view);
    assert_false(in.has_queue_source);
}

static void test_source_hub_subscribe_starts_each_source_once(void **state) {
    fixture_t *f = *state;
    const trigger_config_t *c = HUB_CFG(
        "metricType", "demand", "targetQueuePerReplica", "5", "engine", "vllm", "vllmEndpoint",
        "http://10.0.0.7:8000/metrics", "redisAddress", "10.0.0.9:6379", "redisListName", "jobs");
    source_hub_subscribe(f->hub, c, 1, "ml", 1000);
    assert_int_equal(sources(f), 2);
    source_hub_subscribe(f->hub, c, 1, "ml", 2000);    /* a lookup */
    source_hub_subscribe(f->hub, c, 1, "other", 2000); /* another namespace: shares the sources */
    assert_int_equal(sources(f), 2);
    demand_inputs_t in;
    demand_learned_t learned;
    source_hub_signals(f->hub, c, 1, "ml", 3000, &in, &learned);
    assert_int_equal(in.nengines, 1);
    assert_int_equal(in.engines[0].state, DEMAND_SOURCE_WAITING);
    assert_string_equal(in.engines[0].name, "vllm http://10.0.0.7:8000/metrics");
    assert_true(in.has_queue_source);
    assert_int_equal(in.queue.state, DEMAND_SOURCE_WAITING);
    assert_non_null(strstr(in.queue.name, "redis 10.0.0.9:6379 list jobs"));
    /* the subscription's learned state, handed out for the evaluation */
    assert_non_null(learned.forecast);
    assert_non_null(learned.model);
    assert_non_null(learned.view);
    assert_null(source_hub_view(f->hub, 1, "ml")); /* not evaluated yet */
    /* the evaluation of what was read: pending on the first poll */
    eval_result_t r;
    demand_evaluate_inputs(c, &in, &learned, 3000, NULL, &r);
    assert_int_equal(r.status, EVAL_UNAVAILABLE);
    /* it wrote its decision into the subscription's view */
    assert_ptr_equal(source_hub_view(f->hub, 1, "ml"), learned.view);
    assert_true(r.pending);
    assert_non_null(strstr(r.message, "waiting for the first poll"));
}

static void test_source_hub_pods_without_a_pod_list_is_a_role_error(void **state) {
    fixture_t *f = *state;
    const trigger_config_t *c = HUB_CFG("metricType", "vllm_queue_depth", "targetValue", "5",
                                        "engine", "vllm", "podSelector", "app=v");
    source_hub_subscribe(f->hub, c, 7, "ml", 1000);
    assert_int_equal(sources(f), 0);
    demand_inputs_t in;
    demand_learned_t learned;
    source_hub_signals(f->hub, c, 7, "ml", 1000, &in, &learned);
    assert_int_equal(in.pods_status, EVAL_FAILED_PRECONDITION);
    assert_non_null(strstr(in.pods_error, "needs the aggregator role"));
}

static const trigger_config_t *engine_at(unsigned i) {
    char url[64];
    snprintf(url, sizeof url, "http://10.0.0.%u:8000/metrics", i);
    return HUB_CFG("metricType", "vllm_queue_depth", "targetValue", "5", "vllmEndpoint", url);
}

/* The budgets: a namespace's cap, then the global one, each refusal a
 * RESOURCE_EXHAUSTED naming its flag; room made by the others' sources is
 * used on the next subscribe. */
static void test_source_hub_refuses_sources_beyond_the_caps(void **state) {
    fixture_t *f = *state;
    source_hub_free(f->hub);
    char err[256];
    source_hub_opts_t o = {
        .loop = f->loop, .max_sources = 3, .max_sources_per_ns = 2, .create_rate = 1000};
    assert_int_equal(source_hub_new(&o, &f->hub, err, sizeof err), 0);
    for (unsigned i = 1; i <= 3; i++)
        source_hub_subscribe(f->hub, engine_at(i), i, "a", 1000);
    assert_int_equal(sources(f), 2);
    demand_inputs_t in;
    demand_learned_t learned;
    eval_result_t r;
    const trigger_config_t *c = engine_at(3);
    source_hub_signals(f->hub, c, 3, "a", 1000, &in, &learned);
    assert_non_null(strstr(in.limit_error, "namespace \"a\": 2 polled now, at most 2 "
                                           "(--max-sources-per-namespace)"));
    demand_evaluate_inputs(c, &in, &learned, 1000, NULL, &r);
    assert_int_equal(r.status, EVAL_RESOURCE_EXHAUSTED);
    /* A URL already polled is shared, not created: no budget needed. */
    source_hub_subscribe(f->hub, engine_at(1), 11, "b", 1000);
    source_hub_subscribe(f->hub, engine_at(4), 4, "b", 1000);
    source_hub_subscribe(f->hub, engine_at(5), 5, "b", 1000);
    assert_int_equal(sources(f), 3);
    c = engine_at(5);
    source_hub_signals(f->hub, c, 5, "b", 1000, &in, &learned);
    assert_non_null(strstr(in.limit_error, "3 polled now, at most 3 (--max-sources)"));
    source_hub_stats_t st;
    source_hub_stats(f->hub, &st);
    assert_int_equal(st.refused_per_ns, 1);
    assert_int_equal(st.refused_max_sources, 1);
}

static void test_source_hub_limits_the_creation_rate(void **state) {
    fixture_t *f = *state;
    source_hub_free(f->hub);
    char err[256];
    source_hub_opts_t o = {.loop = f->loop, .create_rate = 1, .create_burst = 2};
    assert_int_equal(source_hub_new(&o, &f->hub, err, sizeof err), 0);
    mono_ns_t t = loop_now(f->loop);
    for (unsigned i = 1; i <= 3; i++)
        source_hub_subscribe(f->hub, engine_at(i), i, "a", t);
    assert_int_equal(sources(f), 2);
    demand_inputs_t in;
    demand_learned_t learned;
    source_hub_signals(f->hub, engine_at(3), 3, "a", t, &in, &learned);
    assert_non_null(strstr(in.limit_error, "(--source-create-rate)"));
    /* A second later a token is back: the next subscribe creates it. */
    source_hub_subscribe(f->hub, engine_at(3), 3, "a", t + 1000000000ull);
    assert_int_equal(sources(f), 3);
    source_hub_signals(f->hub, engine_at(3), 3, "a", t + 1000000000ull, &in, &learned);
    assert_string_equal(in.limit_error, "");
}

/* A pod list whose pods have addresses no URL can be built from: every
 * source for them fails to configure. */
static int bad_pods(void *ud, const trigger_config_t *c, const char *ns, source_pod_emit_cb emit,
                    void *emit_data, char *err, size_t errlen) {
    (void)ud, (void)c, (void)ns, (void)err, (void)errlen;
    for (unsigned i = 0; i < 5; i++) {
        char pod[32];
        snprintf(pod, sizeof pod, "x/p%u", i);
        source_pod_t p = {.pod = pod, .ip = "zz zz", .ready = true, .age_s = 100, .id = i};
        emit(emit_data, &p);
    }
    return 0;
}

/* A creation token is taken only for a source that is made: five pods
 * whose sources cannot be configured leave the bucket full. */
static void test_source_hub_takes_a_token_only_for_a_created_source(void **state) {
    fixture_t *f = *state;
    source_hub_free(f->hub);
    char err[256];
    source_hub_opts_t o = {
        .loop = f->loop, .create_rate = 0.001, .create_burst = 2, .list_pods = bad_pods};
    assert_int_equal(source_hub_new(&o, &f->hub, err, sizeof err), 0);
    mono_ns_t t = loop_now(f->loop);
    const trigger_config_t *pods = HUB_CFG("metricType", "vllm_queue_depth", "targetValue", "5",
                                           "engine", "vllm", "podSelector", "app=v");
    source_hub_subscribe(f->hub, pods, 100, "x", t);
    assert_int_equal(sources(f), 0);
    /* namespace a: the burst of 2 is still there, a third is beyond it */
    for (unsigned i = 1; i <= 3; i++)
        source_hub_subscribe(f->hub, engine_at(i), i, "a", t);
    assert_int_equal(sources(f), 2);
    demand_inputs_t in;
    demand_learned_t learned;
    source_hub_signals(f->hub, engine_at(3), 3, "a", t, &in, &learned);
    assert_non_null(strstr(in.limit_error, "(--source-create-rate)"));
}

/* The bucket burned by one namespace does not refuse another namespace's
 * first source (still counted against --max-sources). */
static void test_source_hub_burned_bucket_spares_another_namespaces_first_source(void **state) {
    fixture_t *f = *state;
    source_hub_free(f->hub);
    char err[256];
    source_hub_opts_t o = {.loop = f->loop, .create_rate = 0.001, .create_burst = 3};
    assert_int_equal(source_hub_new(&o, &f->hub, err, sizeof err), 0);
    mono_ns_t t = loop_now(f->loop);
    for (unsigned i = 1; i <= 6; i++)
        source_hub_subscribe(f->hub, engine_at(i), i, "attacker", t);
    assert_int_equal(sources(f), 3); /* the burst of 3 */
    source_hub_subscribe(f->hub, engine_at(20), 20, "victim", t);
    assert_int_equal(sources(f), 4);
    demand_inputs_t in;
    demand_learned_t learned;
    source_hub_signals(f->hub, engine_at(20), 20, "victim", t, &in, &learned);
    assert_string_equal(in.limit_error, "");
    assert_int_equal(in.engines[0].state, DEMAND_SOURCE_WAITING);
    /* its second source waits for a token like anybody's */
    source_hub_subscribe(f->hub, engine_at(21), 21, "victim", t);
    assert_int_equal(sources(f), 4);
}

/* Subscriptions are counted against --subscription-bytes, shared fairly:
 * one namespace's thousands of triggers stop at its share (half the
 * budget), another namespace's triggers are still subscribed, and a
 * configuration that leaves the cache frees its subscriptions at once. */
static void test_source_hub_bounds_subscriptions_per_namespace(void **state) {
    fixture_t *f = *state;
    source_hub_free(f->hub);
    char err[256];
    source_hub_opts_t o = {.loop = f->loop, .max_sub_bytes = 1u << 20, .create_rate = 1e6};
    assert_int_equal(source_hub_new(&o, &f->hub, err, sizeof err), 0);
    mono_ns_t t = loop_now(f->loop);
    const trigger_config_t *c = engine_at(1);
    for (uint64_t id = 1; id <= 2000; id++)
        source_hub_subscribe(f->hub, c, id, "attacker", t);
    source_hub_stats_t st;
    source_hub_stats(f->hub, &st);
    assert_true(st.sub_bytes <= (1u << 20) / 2);
    assert_true(st.subscriptions > 10 && st.subscriptions < 2000);
    assert_true(st.refused_subscriptions > 0);
    demand_inputs_t in;
    demand_learned_t learned;
    source_hub_signals(f->hub, c, 2000, "attacker", t, &in, &learned);
    assert_non_null(strstr(in.limit_error, "--subscription-bytes 1048576"));
    eval_result_t r;
    demand_evaluate_inputs(c, &in, &learned, t, NULL, &r);
    assert_int_equal(r.status, EVAL_RESOURCE_EXHAUSTED);
    /* another namespace is subscribed */
    source_hub_subscribe(f->hub, c, 1, "victim", t);
    source_hub_signals(f->hub, c, 1, "victim", t, &in, &learned);
    assert_string_equal(in.limit_error, "");
    assert_non_null(learned.forecast);
    /* the configurations go: so do their subscriptions, in every namespace */
    unsigned before = st.subscriptions;
    for (uint64_t id = 1; id <= 2000; id++)
        source_hub_forget(f->hub, id);
    source_hub_stats(f->hub, &st);
    assert_int_equal(st.subscriptions, 0);
    assert_int_equal(st.sub_bytes, 0);
    assert_true(before > 0);
}

/* A subscription with latency targets counts its windows from the start,
 * but makes them only when a histogram arrives: one whose engine never
 * answered holds none. */
static void test_source_hub_counts_latency_windows_before_making_them(void **state) {
    fixture_t *f = *state;
    source_hub_subscribe(f->hub, engine_at(1), 1, "ml", 1000); /* (the builder's storage is one) */
    source_hub_stats_t a, b;
    source_hub_stats(f->hub, &a);
    const trigger_config_t *slo =
        HUB_CFG("metricType", "slo", "engine", "vllm", "vllmEndpoint",
                "http://10.0.0.1:8000/metrics", "ttftP99Target", "500ms", "e2eP99Target", "5s");
    source_hub_subscribe(f->hub, slo, 2, "ml", 1000);
    source_hub_stats(f->hub, &b);
    assert_true(b.sub_bytes - a.sub_bytes >= a.sub_bytes + 2 * 20000);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_source_hub_signals_creates_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source_hub_subscribe_starts_each_source_once, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_source_hub_pods_without_a_pod_list_is_a_role_error,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_source_hub_refuses_sources_beyond_the_caps, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_source_hub_limits_the_creation_rate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source_hub_takes_a_token_only_for_a_created_source,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_source_hub_burned_bucket_spares_another_namespaces_first_source, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source_hub_bounds_subscriptions_per_namespace, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_source_hub_counts_latency_windows_before_making_them,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
