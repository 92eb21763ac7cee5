/* test_source_backend_http.c - the HTTP scrape backend without sockets:
 * request bytes, reply completeness, and reply bytes -> reading. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "sources/source_backend.h"
#include "support/test_support.h"

static const char VLLM[] = "# TYPE vllm:num_requests_waiting gauge\n"
                           "vllm:num_requests_waiting{model_name=\"m\"} 3\n"
                           "vllm:num_requests_running{model_name=\"m\"} 2\n"
                           "vllm:kv_cache_usage_perc{model_name=\"m\"} 0.25\n";

static source_params_t engine_params(void) {
    source_params_t p;
    memset(&p, 0, sizeof p);
    p.kind = SOURCE_KIND_ENGINE;
    p.engine = ENGINE_VLLM;
    p.max_body_bytes = 1 << 20;
    char err[256];
    unsigned http = 1u << SOURCE_SCHEME_HTTP;
    if (source_url_parse("http://10.0.0.7:8000/metrics?x=1", http, &p.url, err, sizeof err) != 0)
        fail_msg("%s", err);
    return p;
}

/* The reply read whole (the peer closing after it), and again dripped a
 * byte and five bytes at a time: every way must say the same. */
static int parse(const source_params_t *p, const char *reply, source_reading_t *r, char *msg) {
    source_scratch_t sc = {0};
    size_t n = strlen(reply);
    int rc = source_backend_read(&source_backend_http, p, &sc, reply, n, 0, true, r, msg, 512);
    static const size_t pieces[] = {1, 5};
    for (size_t i = 0; i < 2; i++) {
        char m2[512] = "";
        source_reading_t r2;
        memset(&r2, 0, sizeof r2);
        int rc2 = source_backend_read(&source_backend_http, p, &sc, reply, n, pieces[i], true, &r2,
                                      m2, sizeof m2);
        if (rc2 != rc || (rc != 0 && strcmp(m2, msg) != 0) ||
            (rc == 0 && memcmp(&r2, r, sizeof r2) != 0))
            fail_msg("pieces of %zu: %d \"%s\", whole %d \"%s\"", pieces[i], rc2, m2, rc,
                     rc ? msg : "");
    }
    return rc;
}

/* What feed() says of the first len bytes of a reply. */
static int feed(const source_params_t *p, const char *reply, size_t len, char *why) {
    source_scratch_t sc = {0};
    source_reply_t *r = source_backend_http.begin(p, &sc);
    assert_non_null(r);
    int rc = source_backend_http.feed(r, reply, len, why, 256);
    assert_true(source_backend_http.held(r) >= 64);
    source_backend_http.end(r);
    return rc;
}

static void test_source_backend_http_request_names_path_and_host(void **state) {
    (void)state;
    source_params_t p = engine_params();
    char buf[1024];
    size_t n = source_backend_http.request(&p, buf, sizeof buf);
    assert_true(n > 0 && n < sizeof buf);
    buf[n] = '\0';
    assert_non_null(strstr(buf, "GET /metrics?x=1 HTTP/1.1\r\nHost: 10.0.0.7:8000\r\n"));
    assert_non_null(strstr(buf, "Connection: close\r\n\r\n"));
    assert_int_equal(source_backend_http.request(&p, buf, 20), 0); /* does not fit */
    assert_string_equal(source_backend_http.alpn, "http/1.1");
    assert_ptr_equal(source_backend_for(SOURCE_KIND_ENGINE), &source_backend_http);
    assert_ptr_equal(source_backend_for(SOURCE_KIND_PROM), &source_backend_http);
    assert_null(source_backend_for(SOURCE_KIND_COUNT));
}

static void test_source_backend_http_feed_says_when_the_reply_is_whole(void **state) {
    (void)state;
    source_params_t p = engine_params();
    char why[256];
    const char *whole = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab 1\n";
    assert_int_equal(feed(&p, whole, strlen(whole), why), 1);
    assert_int_equal(feed(&p, whole, strlen(whole) - 1, why), 0);
    assert_int_equal(feed(&p, whole, 10, why), 0);
    const char *chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab 1\n\r\n";
    assert_int_equal(feed(&p, chunked, strlen(chunked), why), 0);
    const char *ended =
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab 1\n\r\n0\r\n\r\n";
    assert_int_equal(feed(&p, ended, strlen(ended), why), 1);
    const char *junk = "SSH-2.0-OpenSSH_9.2\r\n\r\n";
    assert_int_equal(feed(&p, junk, strlen(junk), why), -1);
    assert_non_null(strstr(why, "not an HTTP response"));
    /* a status that is not 200 fails at the head, before any body */
    const char *err500 = "HTTP/1.1 500 Oops\r\nContent-Length: 9000000\r\n\r\n";
    assert_int_equal(feed(&p, err500, strlen(err500), why), -1);
    assert_string_equal(why, "HTTP 500 (want 200)");
}

/* A body is parsed as it arrives: a poll holds its head until it is whole
 * and then one partial line, however large the page; a line over the limit
 * fails it. */
static void test_source_backend_http_holds_a_line_not_the_body(void **state) {
    (void)state;
    source_params_t p = engine_params();
    p.max_body_bytes = 64u << 20;
    source_scratch_t sc = {0};
    source_reply_t *r = source_backend_http.begin(&p, &sc);
    char why[256];
    const char *head = "HTTP/1.1 200 OK\r\nContent-Length: 8388608\r\n\r\n";
    assert_int_equal(source_backend_http.feed(r, head, strlen(head), why, sizeof why), 0);
    char line[128];
    int n = snprintf(line, sizeof line, "vllm:num_requests_waiting{model_name=\"m\"} 1\n");
    size_t sent = 0, most = 0;
    while (sent + (size_t)n <= 8388608 - 100) {
        assert_int_equal(source_backend_http.feed(r, line, (size_t)n, why, sizeof why), 0);
        sent += (size_t)n;
        if (source_backend_http.held(r) > most)
            most = source_backend_http.held(r);
    }
    assert_true(most < 64 * 1024);
    source_backend_http.end(r);
    /* a line longer than SOURCE_MAX_LINE_BYTES */
    r = source_backend_http.begin(&p, &sc);
    const char *close = "HTTP/1.1 200 OK\r\n\r\n";
    assert_int_equal(source_backend_http.feed(r, close, strlen(close), why, sizeof why), 0);
    static char big[SOURCE_MAX_LINE_BYTES + 1];
    memset(big, 'a', sizeof big);
    assert_int_equal(source_backend_http.feed(r, big, sizeof big, why, sizeof why), -1);
    assert_string_equal(why, "metrics: line 1: longer than 65536 bytes");
    assert_true(source_backend_http.held(r) < 2 * SOURCE_MAX_LINE_BYTES);
    source_backend_http.end(r);
}

static void test_source_backend_http_engine_reading(void **state) {
    (void)state;
    source_params_t p = engine_params();
    char reply[2048], msg[512];
    snprintf(reply, sizeof reply,
             "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
             "Content-Length: %zu\r\n\r\n%s",
             strlen(VLLM), VLLM);
    source_reading_t r;
    assert_int_equal(parse(&p, reply, &r, msg), 0);
    assert_true(r.engine.has_waiting && r.engine.has_running && r.engine.has_kv);
    assert_true(r.engine.waiting == 3 && r.engine.running == 2 && r.engine.kv_percent == 25);
    /* chunked, in two chunks */
    snprintf(reply, sizeof reply,
             "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n%.16s\r\n%zx\r\n%s\r\n"
             "0\r\n\r\n",
             VLLM, strlen(VLLM) - 16, VLLM + 16);
    assert_int_equal(parse(&p, reply, &r, msg), 0);
    assert_true(r.engine.waiting == 3);
    /* close-delimited */
    snprintf(reply, sizeof reply, "HTTP/1.1 200 OK\r\n\r\n%s", VLLM);
    assert_int_equal(parse(&p, reply, &r, msg), 0);
    assert_true(r.engine.running == 2);
}

static void test_source_backend_http_reply_errors_name_the_problem(void **state) {
    (void)state;
    source_params_t p = engine_params();
    char msg[512];
    source_reading_t r;
    /* a proxy with no server behind it: told apart from other failures */
    for (int st = 502; st <= 504; st++) {
        char reply[128], want[96];
        snprintf(reply, sizeof reply, "HTTP/1.1 %d No\r\nContent-Length: 0\r\n\r\n", st);
        assert_int_equal(parse(&p, reply, &r, msg), SOURCE_PARSE_NO_SERVER);
        snprintf(want, sizeof want, "HTTP %d (want 200): no server behind the address", st);
        assert_string_equal(msg, want);
    }
    assert_int_equal(parse(&p, "HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n", &r, msg), -1);
    assert_string_equal(msg, "HTTP 500 (want 200)");
    assert_int_equal(
        parse(&p, "HTTP/1.1 302 Found\r\nLocation: http://169.254.169.254/\r\n\r\n", &r, msg), -1);
    assert_non_null(strstr(msg, "HTTP 302: redirects are not followed"));
    assert_int_equal(parse(&p, "HTTP/1.1 200 OK\r\nContent-", &r, msg), -1);
    assert_string_equal(msg, "connection closed before the response headers");
    assert_int_equal(parse(&p, "HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\nabc", &r, msg), -1);
    assert_string_equal(msg, "connection closed before the whole body (Content-Length)");
    assert_int_equal(
        parse(&p, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", &r, msg), -1);
    assert_string_equal(msg, "bad response body: the chunked body was cut short");
    assert_int_equal(parse(&p, "HTTP/1.1 200 OK\r\n\r\nvllm:num_requests_waiting NaN\n", &r, msg),
                     -1);
    assert_string_equal(msg, "metrics: vllm:num_requests_waiting is nan: no usable value");
    /* A page that is not metrics is described, never quoted: its bytes are
     * whatever the URL (anything a caller can name) served */
    assert_int_equal(parse(&p,
                           "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"
                           "<html>token=tok_SECRET_0123456789</html>\n",
                           &r, msg),
                     -1);
    assert_string_equal(msg, "metrics: line 1: no metric name at column 1 (is "
                             "this Prometheus text?)");
    assert_int_equal(parse(&p, "HTTP/1.1 200 OK\r\n\r\ntok_SECRET_0123456789 here\n", &r, msg), -1);
    assert_null(strstr(msg, "SECRET"));
    p.max_body_bytes = 4;
    assert_int_equal(
        parse(&p, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabcde\r\n0\r\n\r\n",
              &r, msg),
        -1);
    assert_string_equal(msg, "bad response body: too large");
}

static void test_source_backend_http_prometheus_queue_sum(void **state) {
    (void)state;
    static trigger_config_t c;
    const char *kv[] = {
        "metricType",     "queue_length",          "targetValue",  "3",
        "demandEndpoint", "http://g:9090/metrics", "demandMetric", "gateway:queue_depth",
        "demandLabels",   "pool=\"gpu\""};
    metadata_pair_t pairs[5];
    for (size_t i = 0; i < 5; i++) {
        pairs[i].key = kv[2 * i];
        pairs[i].key_len = strlen(kv[2 * i]);
        pairs[i].value = kv[2 * i + 1];
        pairs[i].value_len = strlen(kv[2 * i + 1]);
    }
    char err[512];
    if (trigger_config_parse(pairs, 5, &c, err, sizeof err) != 0)
        fail_msg("%s", err);
    source_params_t p = engine_params();
    p.kind = SOURCE_KIND_PROM;
    p.prom = &c.demand;
    char msg[512];
    source_reading_t r;
    assert_int_equal(parse(&p,
                           "HTTP/1.1 200 OK\r\n\r\n"
                           "gateway:queue_depth{pool=\"gpu\",m=\"a\"} 4\n"
                           "gateway:queue_depth{pool=\"gpu\",m=\"b\"} 3\n"
                           "gateway:queue_depth{pool=\"cpu\"} 100\n",
                           &r, msg),
                     0);
    assert_true(r.queue == 7);
    assert_int_equal(
        parse(&p, "HTTP/1.1 200 OK\r\n\r\ngateway:queue_depth{pool=\"cpu\"} 1\n", &r, msg), -1);
    assert_string_equal(msg, "no sample of gateway:queue_depth matching demandLabels in the "
                             "response (a missing metric is unknown, not 0)");
}

/* What finishing a page finds wrong (a latency histogram whose series have
 * different bounds) is named in the message (the scan kept it to itself,
 * and the message said only "metrics (a N-byte body): "). */
static void test_source_backend_http_names_a_histogram_problem(void **state) {
    (void)state;
    source_params_t p = engine_params();
    p.slo_mask = 1u << SLO_TTFT;
    static engine_hists_t hists;
    source_scratch_t sc = {.hists = &hists};
    const char *reply = "HTTP/1.1 200 OK\r\n\r\n"
                        "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.5\"} 3\n"
                        "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"+Inf\"} 4\n"
                        "vllm:time_to_first_token_seconds_bucket{engine=\"1\",le=\"1\"} 3\n"
                        "vllm:time_to_first_token_seconds_bucket{engine=\"1\",le=\"+Inf\"} 4\n";
    char msg[512];
    source_reading_t r;
    assert_int_equal(source_backend_read(&source_backend_http, &p, &sc, reply, strlen(reply), 7,
                                         true, &r, msg, sizeof msg),
                     -1);
    assert_non_null(strstr(msg, "vllm:time_to_first_token_seconds: its series have different "
                                "bucket bounds"));
}

/* configure: what a new source reads, from the trigger; an engine URL of
 * the trigger is taken parsed, a pod's is parsed here, and a Prometheus
 * queue keeps a copy of its metric and matchers only. */
static void test_source_backend_http_configure(void **state) {
    (void)state;
    trigger_config_t c = CFG("metricType", "engine_queue", "targetValue", "5", "engine", "vllm",
                             "vllmEndpoint", "https://v.ml:8443/metrics", "model", "llama");
    source_params_t p;
    memset(&p, 0, sizeof p);
    bool tls = false;
    char name[256], err[256];
    source_target_t t = {SOURCE_KIND_ENGINE, &c, "https://v.ml:8443/metrics", NULL};
    assert_int_equal(
        source_backend_http.configure(&t, &p, &tls, name, sizeof name, err, sizeof err), 0);
    assert_true(tls);
    assert_int_equal(p.kind, SOURCE_KIND_ENGINE);
    assert_int_equal(p.engine, ENGINE_VLLM);
    assert_string_equal(p.model, "llama");
    assert_string_equal(p.url.host, "v.ml");
    assert_string_equal(name, "vllm https://v.ml:8443/metrics");
    source_backend_http.release(&p);
    /* a pod's URL */
    memset(&p, 0, sizeof p);
    t.url = "http://10.1.2.3:8000/metrics";
    t.pod = "ml/llama-0";
    assert_int_equal(
        source_backend_http.configure(&t, &p, &tls, name, sizeof name, err, sizeof err), 0);
    assert_false(tls);
    assert_string_equal(name, "vllm pod ml/llama-0 (http://10.1.2.3:8000/metrics)");
    source_backend_http.release(&p);
    t.url = "http://[::1:8000/metrics";
    assert_int_not_equal(
        source_backend_http.configure(&t, &p, &tls, name, sizeof name, err, sizeof err), 0);
    /* a Prometheus queue: the metric and matchers, nothing else */
    c = CFG("metricType", "queue_length", "targetValue", "5", "demandEndpoint",
            "http://gw:9000/metrics", "demandMetric", "gateway:queue_depth", "demandLabels",
            "pool=\"gpu\"");
    memset(&p, 0, sizeof p);
    source_target_t q = {SOURCE_KIND_PROM, &c, NULL, NULL};
    assert_int_equal(
        source_backend_http.configure(&q, &p, &tls, name, sizeof name, err, sizeof err), 0);
    assert_non_null(p.prom);
    assert_ptr_not_equal(p.prom, &c.demand);
    assert_string_equal(p.prom->demand_metric, "gateway:queue_depth");
    assert_int_equal(p.prom->matcher_count, 1);
    assert_string_equal(p.prom->demand_endpoint, ""); /* not copied */
    assert_string_equal(p.url.host, "gw");
    assert_string_equal(name, "queue http://gw:9000/metrics (gateway:queue_depth)");
    source_backend_http.release(&p);
    assert_null(p.prom);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_source_backend_http_request_names_path_and_host),
        cmocka_unit_test(test_source_backend_http_feed_says_when_the_reply_is_whole),
        cmocka_unit_test(test_source_backend_http_holds_a_line_not_the_body),
        cmocka_unit_test(test_source_backend_http_engine_reading),
        cmocka_unit_test(test_source_backend_http_reply_errors_name_the_problem),
        cmocka_unit_test(test_source_backend_http_prometheus_queue_sum),
        cmocka_unit_test(test_source_backend_http_names_a_histogram_problem),
        cmocka_unit_test(test_source_backend_http_configure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
