/* test_trigger_demand.c - parse once: the engine URLs and the queue address
 * of a demand trigger come out of trigger_config_parse() already parsed and
 * SSRF-checked, exactly as source_url would parse them again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/err.h"
#include "core/source_url.h"
#include "core/trigger_config.h"

static trigger_config_t cfg; /* ~25 KiB: off the stack */

static int parse(const char *const *kv) {
    metadata_pair_t p[16];
    size_t n = 0;
    for (; kv[2 * n]; n++)
        p[n] =
            (metadata_pair_t){kv[2 * n], strlen(kv[2 * n]), kv[2 * n + 1], strlen(kv[2 * n + 1])};
    char err[512] = "";
    int rc = trigger_config_parse(p, n, &cfg, err, sizeof err);
    if (rc)
        print_message("parse: %s\n", err);
    return rc;
}
#define PARSE(...) parse((const char *const[]){__VA_ARGS__, NULL})

static const unsigned HTTP = (1u << SOURCE_SCHEME_HTTP) | (1u << SOURCE_SCHEME_HTTPS);

static void test_trigger_demand_keeps_every_engine_url_parsed(void **state) {
    (void)state;
    assert_int_equal(PARSE("metricType", "vllm_queue_depth", "targetValue", "5", "vllmEndpoint",
                           "http://vllm-0.vllm:8000/metrics, https://[::1]:9443/m?x=1"),
                     0);
    assert_int_equal(cfg.demand.endpoint_count, 2);
    source_url_t got[2];
    for (unsigned i = 0; i < 2; i++) {
        source_url_t again, expanded;
        assert_int_equal(source_url_parse(cfg.demand.endpoints[i], HTTP, &again, NULL, 0), 0);
        source_url_expand(cfg.demand.endpoints[i], &cfg.demand.endpoint_urls[i], &expanded);
        assert_memory_equal(&expanded, &again, sizeof again);
        assert_true(demand_endpoint_url(&cfg.demand, cfg.demand.endpoints[i], &got[i]));
        assert_memory_equal(&got[i], &again, sizeof again);
    }
    assert_string_equal(got[0].host, "vllm-0.vllm");
    assert_int_equal(got[1].port, 9443);
    assert_int_equal(got[1].scheme, SOURCE_SCHEME_HTTPS);
    assert_string_equal(got[1].host, "::1");
    assert_string_equal(got[1].path, "/m?x=1");
    source_url_t untouched = got[0];
    assert_false(demand_endpoint_url(&cfg.demand, "http://other:8000/metrics", &got[0]));
    assert_memory_equal(&got[0], &untouched, sizeof untouched);

    /* A copy of the config carries its parsed URLs: they refer into its own
     * text, not the original's. */
    static trigger_config_t copy;
    copy = cfg;
    memset(&cfg, 0, sizeof cfg);
    source_url_t fromcopy;
    assert_true(demand_endpoint_url(&copy.demand, "https://[::1]:9443/m?x=1", &fromcopy));
    assert_memory_equal(&fromcopy, &got[1], sizeof fromcopy);
}

static void test_trigger_demand_keeps_the_redis_address_parsed(void **state) {
    (void)state;
    assert_int_equal(PARSE("metricType", "queue_length", "targetValue", "10", "redisAddress",
                           "rediss://redis.queues:6380/2", "redisListName", "jobs"),
                     0);
    source_url_t q, again;
    demand_queue_url(&cfg.demand, &q);
    assert_int_equal(source_addr_parse(cfg.demand.redis_address, &again, NULL, NULL, NULL, 0), 0);
    assert_memory_equal(&q, &again, sizeof q);
    assert_string_equal(q.host, "redis.queues");
    assert_int_equal(q.port, 6380);
    assert_int_equal(q.scheme, SOURCE_SCHEME_REDISS);
    assert_true(cfg.demand.redis_tls);
    assert_int_equal(cfg.demand.redis_db, 2);
    assert_int_equal(cfg.demand.endpoint_count, 0);
}

static void test_trigger_demand_keeps_the_prometheus_endpoint_parsed(void **state) {
    (void)state;
    assert_int_equal(PARSE("metricType", "queue_length", "targetValue", "10", "demandEndpoint",
                           "http://gateway.ai:9000/metrics", "demandMetric", "queue_depth"),
                     0);
    source_url_t q, again;
    assert_int_equal(source_url_parse(cfg.demand.demand_endpoint, HTTP, &again, NULL, 0), 0);
    demand_queue_url(&cfg.demand, &q);
    assert_memory_equal(&q, &again, sizeof again);
    assert_string_equal(q.host_header, "gateway.ai:9000");
    assert_string_equal(q.path, "/metrics");
}

static void test_trigger_demand_refuses_a_guarded_url_at_parse_time(void **state) {
    (void)state;
    assert_int_equal(PARSE("metricType", "vllm_queue_depth", "targetValue", "5", "vllmEndpoint",
                           "http://169.254.169.254/latest/meta-data"),
                     KGS_EINVAL);
    /* a failed parse leaves no parsed URL behind */
    assert_int_equal(cfg.demand.endpoint_count, 0);
    static const source_url_ref_t zero_ref;
    assert_memory_equal(&cfg.demand.endpoint_urls[0], &zero_ref, sizeof zero_ref);
    static const source_url_t zero_url;
    source_url_t q;
    demand_queue_url(&cfg.demand, &q);
    assert_memory_equal(&q, &zero_url, sizeof q);
}

/* The message of a refused trigger (KEDA copies it into the ScaledObject's
 * events) never shows a password or a token of the URLs it names. */
static void expect_refusal_hides(const char *const *kv, const char *secret, const char *shown) {
    metadata_pair_t p[16];
    size_t n = 0;
    for (; kv[2 * n]; n++)
        p[n] =
            (metadata_pair_t){kv[2 * n], strlen(kv[2 * n]), kv[2 * n + 1], strlen(kv[2 * n + 1])};
    char err[1024] = "";
    assert_int_equal(trigger_config_parse(p, n, &cfg, err, sizeof err), KGS_EINVAL);
    if (strstr(err, secret))
        fail_msg("the message repeats \"%s\": %s", secret, err);
    if (!strstr(err, shown))
        fail_msg("the message lacks \"%s\": %s", shown, err);
}
#define HIDES(secret, shown, ...)                                                                  \
    expect_refusal_hides((const char *const[]){__VA_ARGS__, NULL}, secret, shown)

static void test_trigger_demand_refusals_mask_credentials_in_urls(void **state) {
    (void)state;
    HIDES("pw", "redis://u:***@redis.queues:6379", "metricType", "queue_length", "targetValue", "5",
          "redisAddress", "redis://u:pw@redis.queues:6379", "redisListName", "jobs");
    HIDES("pw", "u:***@redis.queues:6379", "metricType", "queue_length", "targetValue", "5",
          "redisAddress", "u:pw@redis.queues:6379", "redisListName", "jobs");
    HIDES("pw", "http://u:***@prom:9090/metrics", "metricType", "queue_length", "targetValue", "5",
          "demandEndpoint", "http://u:pw@prom:9090/metrics", "demandMetric", "q");
    HIDES("pw", "http://u:***@vllm-0:8000/metrics", "metricType", "vllm_queue_depth", "targetValue",
          "5", "vllmEndpoint", "http://u:pw@vllm-0:8000/metrics");
    /* a list: the entry that is refused, and the whole list in "an empty entry" */
    HIDES("pw", "http://u:***@vllm-1:8000/metrics", "metricType", "engine_queue", "engine", "vllm",
          "targetValue", "5", "engineEndpoint",
          "http://vllm-0:8000/metrics,http://u:pw@vllm-1:8000/metrics");
    HIDES("pw", "http://u:***@vllm-1", "metricType", "engine_queue", "engine", "vllm",
          "targetValue", "5", "engineEndpoint", "http://u:pw@vllm-1/metrics,,http://b/m");
    /* a token in the query of an endpoint refused for another reason */
    HIDES("tkn", "access_token=***", "metricType", "engine_queue", "engine", "vllm", "targetValue",
          "5", "engineEndpoint", "http://169.254.169.254/m?access_token=tkn");
    HIDES("tkn", "?token=***", "metricType", "engine_queue", "engine", "vllm", "targetValue", "5",
          "engineEndpoint", "http://a/m?token=tkn,http://a/m?token=tkn");
    HIDES("tkn", "/metrics?token=***", "metricType", "engine_queue", "engine", "vllm",
          "targetValue", "5", "podSelector", "app=vllm", "enginePath", "/metrics?token=tkn#x");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trigger_demand_keeps_every_engine_url_parsed),
        cmocka_unit_test(test_trigger_demand_keeps_the_redis_address_parsed),
        cmocka_unit_test(test_trigger_demand_keeps_the_prometheus_endpoint_parsed),
        cmocka_unit_test(test_trigger_demand_refuses_a_guarded_url_at_parse_time),
        cmocka_unit_test(test_trigger_demand_refusals_mask_credentials_in_urls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
