/* test_prom_parse.c - the Prometheus text and OpenMetrics parser: real vLLM
 * and Triton output, histograms, summaries, escapes, timestamps, special
 * values, exemplars and # EOF, every error and its message, long lines and
 * a failing allocator, the callback's stop value, Content-Type detection
 * and label lookup.
 *
 * The module's .c file is included (STYLE rule 1) so that PROM_PARSE_MALLOC
 * can point at a counting, failing allocator; the library's copy is then
 * never linked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static int malloc_calls;
static bool malloc_fails;

static void *fake_malloc(size_t n) {
    malloc_calls++;
    return malloc_fails ? NULL : malloc(n);
}

#define PROM_PARSE_MALLOC fake_malloc
#include "sources/prom_parse.c"

/* ---- helpers --------------------------------------------------------------- */

#define MAX_GOT 64

/* A copy of one sample: the callback's view is borrowed. labels is
 * "name=value|name=value" in input order. */
typedef struct {
    char name[128];
    char labels[1024];
    unsigned nlabels;
    double value;
    bool has_ts;
    double ts;
} got_t;

typedef struct {
    got_t s[MAX_GOT];
    unsigned n;
    unsigned stop_after; /* 0: never stop */
    int stop_rc;
} collect_t;

static int collect(void *ud, const prom_sample_t *s) {
    collect_t *c = ud;
    assert_true(c->n < MAX_GOT);
    got_t *g = &c->s[c->n++];
    assert_true(strlen(s->name) < sizeof g->name);
    strcpy(g->name, s->name);
    size_t o = 0;
    g->labels[0] = '\0';
    for (unsigned i = 0; i < s->label_count; i++) {
        int w = snprintf(g->labels + o, sizeof g->labels - o, "%s%s=%s", i ? "|" : "",
                         s->labels[i].name, s->labels[i].value);
        assert_true(w > 0 && (size_t)w < sizeof g->labels - o);
        o += (size_t)w;
    }
    g->nlabels = s->label_count;
    g->value = s->value;
    g->has_ts = s->has_timestamp;
    g->ts = s->timestamp_s;
    if (c->stop_after && c->n == c->stop_after)
        return c->stop_rc;
    return 0;
}

static void setup_collect(collect_t *c) {
    memset(c, 0, sizeof *c);
}

static void same_samples(const collect_t *a, const collect_t *b, const char *how) {
    if (a->n != b->n)
        fail_msg("%s: %u samples, whole %u", how, b->n, a->n);
    for (unsigned i = 0; i < a->n; i++) {
        const got_t *x = &a->s[i], *y = &b->s[i];
        if (strcmp(x->name, y->name) != 0 || strcmp(x->labels, y->labels) != 0 ||
            x->has_ts != y->has_ts || memcmp(&x->value, &y->value, sizeof x->value) != 0 ||
            (x->has_ts && x->ts != y->ts))
            fail_msg("%s: sample %u differs from the whole parse's", how, i);
    }
}

/* text[0..len) fed to a stream in pieces of `piece` bytes (0: two pieces
 * split at the middle) must give what the whole parse gave: rc, message and
 * samples. */
static void stream_matches(const char *text, size_t len, prom_format_t fmt, int rc, const char *err,
                           const collect_t *whole, size_t piece) {
    collect_t c;
    setup_collect(&c);
    c.stop_after = whole->stop_after;
    c.stop_rc = whole->stop_rc;
    prom_stream_t *st = prom_stream_new(fmt, len + 1, collect, &c);
    assert_non_null(st);
    char e[256] = "";
    int got = 0;
    size_t step = piece ? piece : len / 2 + 1;
    for (size_t o = 0; o < len && got == 0; o += step)
        got = prom_stream_feed(st, text + o, len - o < step ? len - o : step, e, sizeof e);
    if (got == 0)
        got = prom_stream_end(st, e, sizeof e);
    char how[64];
    snprintf(how, sizeof how, "pieces of %zu", step);
    if (got != rc || strcmp(e, err) != 0)
        fail_msg("%s: %d \"%s\", whole %d \"%s\"", how, got, e, rc, err);
    same_samples(whole, &c, how);
    /* a failure is final */
    if (rc != 0 && prom_stream_feed(st, "x 1\n", 4, e, sizeof e) != rc)
        fail_msg("%s: a later feed forgot the failure", how);
    prom_stream_free(st);
}

static void stream_matches_all(const char *text, size_t len, prom_format_t fmt, int rc,
                               const char *err, const collect_t *whole) {
    stream_matches(text, len, fmt, rc, err, whole, 1);
    stream_matches(text, len, fmt, rc, err, whole, 0);
    stream_matches(text, len, fmt, rc, err, whole, 7);
    stream_matches(text, len, fmt, rc, err, whole, len ? len : 1);
}

/* Parses NUL-terminated text, which must succeed; the samples go to c. */
static void parse_ok(const char *text, prom_format_t fmt, collect_t *c) {
    char err[256] = "";
    setup_collect(c);
    int rc = prom_parse(text, strlen(text), fmt, collect, c, err, sizeof err);
    if (rc != 0)
        fail_msg("expected success, got %d: %s\n--- input:\n%s", rc, err, text);
    assert_string_equal(err, "");
    stream_matches_all(text, strlen(text), fmt, rc, err, c);
}

/* Expects (text, len) to fail with KGS_EINVAL, a message starting with
 * line_prefix ("line N: ") and containing needle (NULL: skip). */
static void expect_error(const char *text, size_t len, prom_format_t fmt, const char *line_prefix,
                         const char *needle) {
    char err[256] = "";
    collect_t c;
    setup_collect(&c);
    int rc = prom_parse(text, len, fmt, collect, &c, err, sizeof err);
    if (rc != KGS_EINVAL)
        fail_msg("expected KGS_EINVAL for \"%.*s\", got %d", (int)len, text, rc);
    if (strncmp(err, line_prefix, strlen(line_prefix)) != 0)
        fail_msg("\"%.*s\": message lacks prefix \"%s\": %s", (int)len, text, line_prefix, err);
    if (needle && !strstr(err, needle))
        fail_msg("\"%.*s\": message lacks \"%s\": %s", (int)len, text, needle, err);
    stream_matches_all(text, len, fmt, rc, err, &c);
}

#define ERR_TEXT(t, line, needle) expect_error(t, strlen(t), PROM_FORMAT_TEXT, line, needle)
#define ERR_OM(t, line, needle) expect_error(t, strlen(t), PROM_FORMAT_OPENMETRICS, line, needle)
#define ERR_BOTH(t, needle)                                                                        \
    do {                                                                                           \
        ERR_TEXT(t, "line 1: ", needle);                                                           \
        ERR_OM(t "\n# EOF\n", "line 1: ", needle);                                                 \
    } while (0)

/* The value of a one-sample TEXT input "x <value>". */
static double value_of(const char *value) {
    char text[128];
    snprintf(text, sizeof text, "x %s\n", value);
    collect_t c;
    parse_ok(text, PROM_FORMAT_TEXT, &c);
    assert_int_equal(c.n, 1);
    return c.s[0].value;
}

static int sum_values(void *ud, const prom_sample_t *s) {
    *(double *)ud += s->value;
    return 0;
}

static int stop_at_first(void *ud, const prom_sample_t *s) {
    (void)s;
    (*(int *)ud)++;
    return 1;
}

/* ---- real exporters -------------------------------------------------------- */

#define LLAMA "meta-llama/Llama-3.1-8B-Instruct"

static void test_prom_parse_reads_vllm_output(void **state) {
    (void)state;
    static const char text[] =
        "# HELP python_gc_objects_collected_total Objects collected during gc\n"
        "# TYPE python_gc_objects_collected_total counter\n"
        "python_gc_objects_collected_total{generation=\"0\"} 12093.0\n"
        "# HELP vllm:num_requests_running Number of requests currently running on GPU.\n"
        "# TYPE vllm:num_requests_running gauge\n"
        "vllm:num_requests_running{engine=\"0\",model_name=\"" LLAMA "\"} 2.0\n"
        "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.\n"
        "# TYPE vllm:num_requests_waiting gauge\n"
        "vllm:num_requests_waiting{engine=\"0\",model_name=\"" LLAMA "\"} 3.0\n"
        "# HELP vllm:gpu_cache_usage_perc GPU KV-cache usage. 1 means 100 percent usage.\n"
        "# TYPE vllm:gpu_cache_usage_perc gauge\n"
        "vllm:gpu_cache_usage_perc{engine=\"0\",model_name=\"" LLAMA "\"} 0.4523\n"
        "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.\n"
        "# TYPE vllm:prompt_tokens_total counter\n"
        "vllm:prompt_tokens_total{engine=\"0\",model_name=\"" LLAMA "\"} 1.234567e+06\n"
        "# HELP vllm:prompt_tokens_created Number of prefill tokens processed.\n"
        "# TYPE vllm:prompt_tokens_created gauge\n"
        "vllm:prompt_tokens_created{engine=\"0\",model_name=\"" LLAMA "\"} 1.7245e+09\n"
        "# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.\n"
        "# TYPE vllm:time_to_first_token_seconds histogram\n"
        "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.001\",model_name=\"" LLAMA
        "\"} 0.0\n"
        "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"" LLAMA
        "\"} 1523.0\n"
        "vllm:time_to_first_token_seconds_count{engine=\"0\",model_name=\"" LLAMA "\"} 1523.0\n"
        "vllm:time_to_first_token_seconds_sum{engine=\"0\",model_name=\"" LLAMA "\"} 231.5\n";
    collect_t c;
    parse_ok(text, PROM_FORMAT_TEXT, &c);
    assert_int_equal(c.n, 10);
    assert_string_equal(c.s[0].name, "python_gc_objects_collected_total");
    assert_string_equal(c.s[0].labels, "generation=0");
    assert_true(c.s[0].value == 12093.0);
    assert_string_equal(c.s[2].name, "vllm:num_requests_waiting");
    assert_string_equal(c.s[2].labels, "engine=0|model_name=" LLAMA);
    assert_int_equal(c.s[2].nlabels, 2);
    assert_true(c.s[2].value == 3.0);
    assert_false(c.s[2].has_ts);
    assert_true(c.s[3].value == 0.4523);
    assert_true(c.s[4].value == 1234567.0);
    assert_string_equal(c.s[5].name, "vllm:prompt_tokens_created");
    assert_string_equal(c.s[7].labels, "engine=0|le=+Inf|model_name=" LLAMA);
    assert_true(c.s[7].value == 1523.0);
    assert_string_equal(c.s[8].name, "vllm:time_to_first_token_seconds_count");
    assert_string_equal(c.s[9].name, "vllm:time_to_first_token_seconds_sum");
    assert_true(c.s[9].value == 231.5);
}

static void test_prom_parse_reads_triton_output(void **state) {
    (void)state;
    static const char text[] =
        "# HELP nv_inference_request_success Number of successful inference requests, all "
        "batch sizes\n"
        "# TYPE nv_inference_request_success counter\n"
        "nv_inference_request_success{model=\"resnet\",version=\"1\"} 42\n"
        "# HELP nv_inference_queue_duration_us Cumulative inference queuing duration in "
        "microseconds (includes cached requests)\n"
        "# TYPE nv_inference_queue_duration_us counter\n"
        "nv_inference_queue_duration_us{model=\"resnet\",version=\"1\"} 12345\n"
        "# HELP nv_inference_pending_request_count Instantaneous number of pending requests "
        "awaiting execution per-model.\n"
        "# TYPE nv_inference_pending_request_count gauge\n"
        "nv_inference_pending_request_count{model=\"resnet\",version=\"1\"} 7\n"
        "# HELP nv_gpu_utilization GPU utilization rate [0.0 - 1.0)\n"
        "# TYPE nv_gpu_utilization gauge\n"
        "nv_gpu_utilization{gpu_uuid=\"GPU-8a5e1c2d-0000-4b5a-9c1e-3f2a1b0c9d8e\"} 0.75\n";
    collect_t c;
    parse_ok(text, PROM_FORMAT_TEXT, &c);
    assert_int_equal(c.n, 4);
    assert_string_equal(c.s[1].name, "nv_inference_queue_duration_us");
    assert_string_equal(c.s[1].labels, "model=resnet|version=1");
    assert_true(c.s[1].value == 12345.0);
    assert_true(c.s[2].value == 7.0);
    assert_string_equal(c.s[3].labels, "gpu_uuid=GPU-8a5e1c2d-0000-4b5a-9c1e-3f2a1b0c9d8e");
    assert_true(c.s[3].value == 0.75);
}

static void test_prom_parse_reads_a_histogram(void **state) {
    (void)state;
    static const char text[] = "# HELP http_request_duration_seconds A histogram.\n"
                               "# TYPE http_request_duration_seconds histogram\n"
                               "http_request_duration_seconds_bucket{le=\"0.05\"} 24054\n"
                               "http_request_duration_seconds_bucket{le=\"0.1\"} 33444\n"
                               "http_request_duration_seconds_bucket{le=\"0.2\"} 100392\n"
                               "http_request_duration_seconds_bucket{le=\"0.5\"} 129389\n"
                               "http_request_duration_seconds_bucket{le=\"1\"} 133988\n"
                               "http_request_duration_seconds_bucket{le=\"+Inf\"} 144320\n"
                               "http_request_duration_seconds_sum 53423\n"
                               "http_request_duration_seconds_count 144320\n";
    collect_t c;
    parse_ok(text, PROM_FORMAT_TEXT, &c);
    assert_int_equal(c.n, 8);
    assert_string_equal(c.s[5].name, "http_request_duration_seconds_bucket");
    assert_string_equal(c.s[5].labels, "le=+Inf");
    assert_true(c.s[5].value == 144320.0);
    assert_int_equal(c.s[6].nlabels, 0);
    assert_string_equal(c.s[6].name, "http_request_duration_seconds_sum");
    assert_true(c.s[7].value == 144320.0);
}

static void test_prom_parse_reads_a_summary(void **state) {
    (void)state;
    static const char text[] = "# HELP rpc_duration_seconds A summary of the RPC duration.\n"
                               "# TYPE rpc_duration_seconds summary\n"
                               "rpc_duration_seconds{quantile=\"0.01\"} 3102\n"
                               "rpc_duration_seconds{quantile=\"0.05\"} 3272\n"
                               "rpc_duration_seconds{quantile=\"0.5\"} 4773\n"
                               "rpc_duration_seconds{quantile=\"0.9\"} 9001\n"
                               "rpc_duration_seconds{quantile=\"0.99\"} 76656\n"
                               "rpc_duration_seconds_sum 1.7560473e+07\n"
                               "rpc_duration_seconds_count 2693\n";
    collect_t c;
    parse_ok(text, PROM_FORMAT_TEXT, &c);
    assert_int_equal(c.n, 7);
    assert_string_equal(c.s[4].labels, "quantile=0.99");
    assert_true(c.s[4].value == 76656.0);
    assert_true(c.s[5].value == 17560473.0);
    assert_string_equal(c.s[6].name, "rpc_duration_seconds_count");
}

/* ---- label values ---------------------------------------------------------- */

static void test_prom_parse_unescapes_label_values(void **state) {
    (void)state;
    static const char text[] = "msdos_file_access_time_seconds{path=\"C:\\\\DIR\\\\FILE.TXT\","
                               "error=\"Cannot find file:\\n\\\"FILE.TXT\\\"\"} 1.458255915e9\n"
                               "greeting{text=\"Gr\xc3\xbc\xc3\x9f"
                               "e \xe2\x82\xac \xf0\x9f\x98\x80\"} 1\n"
                               "empty{v=\"\"} 1\n";
    collect_t c;
    parse_ok(text, PROM_FORMAT_TEXT, &c);
    assert_int_equal(c.n, 3);
    assert_string_equal(c.s[0].labels,
                        "path=C:\\DIR\\FILE.TXT|error=Cannot find file:\n\"FILE.TXT\"");
    assert_true(c.s[0].value == 1458255915.0);
    assert_string_equal(c.s[1].labels, "text=Gr\xc3\xbc\xc3\x9f"
                                       "e \xe2\x82\xac \xf0\x9f\x98\x80");
    assert_string_equal(c.s[2].labels, "v=");

    parse_ok("a{p=\"C:\\\\x\\n\\\"\"} 1\n# EOF\n", PROM_FORMAT_OPENMETRICS, &c);
    assert_string_equal(c.s[0].labels, "p=C:\\x\n\"");
}

static void test_prom_parse_keeps_unknown_escapes_in_text_like_prometheus(void **state) {
    (void)state;
    collect_t c;
    /* \t stays two bytes; a backslash before UTF-8 keeps the character whole. */
    parse_ok("a{v=\"x\\ty\\\xc3\xa9\"} 1\n", PROM_FORMAT_TEXT, &c);
    assert_int_equal(c.n, 1);
    assert_string_equal(c.s[0].labels, "v=x\\ty\\\xc3\xa9");
}

static void test_prom_parse_rejects_invalid_utf8_in_label_values(void **state) {
    (void)state;
    ERR_BOTH("a{v=\"\xff\"} 1", "invalid UTF-8 at column 6 in a label value");
    ERR_BOTH("a{v=\"\xc0\xaf\"} 1", "invalid UTF-8");         /* overlong '/' */
    ERR_BOTH("a{v=\"\xed\xa0\x80\"} 1", "invalid UTF-8");     /* surrogate */
    ERR_BOTH("a{v=\"\xf4\x90\x80\x80\"} 1", "invalid UTF-8"); /* above U+10FFFF */
    ERR_BOTH("a{v=\"\xe2\x82\"} 1", "invalid UTF-8");         /* cut short */
    ERR_TEXT("a{v=\"\xe2\x82", "line 1: ", "invalid UTF-8");
}

static void test_prom_parse_keeps_labels_in_input_order(void **state) {
    (void)state;
    collect_t c;
    parse_ok("m{z=\"1\",a=\"2\",m=\"3\"} 1\n", PROM_FORMAT_TEXT, &c);
    assert_string_equal(c.s[0].labels, "z=1|a=2|m=3");
}

static void test_prom_parse_accepts_exactly_max_labels(void **state) {
    (void)state;
    char text[2048];
    size_t o = (size_t)snprintf(text, sizeof text, "m{");
    for (int i = 0; i < PROM_MAX_LABELS; i++)
        o += (size_t)snprintf(text + o, sizeof text - o, "l%d=\"%d\",", i, i);
    snprintf(text + o, sizeof text - o, "} 1\n");
    collect_t c;
    parse_ok(text, PROM_FORMAT_TEXT, &c);
    assert_int_equal(c.s[0].nlabels, PROM_MAX_LABELS);

    snprintf(text + o, sizeof text - o, "extra=\"x\"} 1\n");
    ERR_TEXT(text, "line 1: ", "more than 32 labels");
}

/* ---- numbers --------------------------------------------------------------- */

static void test_prom_parse_reads_special_values(void **state) {
    (void)state;
    assert_true(isnan(value_of("NaN")));
    assert_true(isnan(value_of("nan")));
    assert_true(isnan(value_of("NAN")));
    assert_true(isinf(value_of("+Inf")) && value_of("+Inf") > 0);
    assert_true(isinf(value_of("-Inf")) && value_of("-Inf") < 0);
    assert_true(isinf(value_of("Inf")) && value_of("Inf") > 0);
    assert_true(isinf(value_of("inf")) && value_of("inf") > 0);
    assert_true(isinf(value_of("-infinity")) && value_of("-infinity") < 0);
    assert_true(isinf(value_of("+Infinity")) && value_of("+Infinity") > 0);
    double z = value_of("-0");
    assert_true(z == 0 && signbit(z));
    assert_true(value_of("1e-400") == 0); /* underflow is not an error in Go */
    assert_true(value_of(".5") == 0.5);
    assert_true(value_of("5.") == 5.0);
    assert_true(value_of("1E3") == 1000.0);
    assert_true(value_of("+12") == 12.0);
    assert_true(value_of("-1.5e-3") == -0.0015);
    assert_true(value_of("00012") == 12.0);
    assert_true(value_of("123456789012345") == 123456789012345.0);
    assert_true(value_of("12345678901234567890") == 12345678901234567890.0);
    assert_true(value_of("1.7976931348623157e308") == 1.7976931348623157e308);

    collect_t c;
    parse_ok("a NaN\nb +Inf 1\nc -Inf\n# EOF\n", PROM_FORMAT_OPENMETRICS, &c);
    assert_true(isnan(c.s[0].value));
    assert_true(isinf(c.s[1].value) && c.s[1].value > 0);
    assert_true(c.s[1].has_ts && c.s[1].ts == 1.0);
    assert_true(isinf(c.s[2].value) && c.s[2].value < 0);
}

static void test_prom_parse_rejects_bad_values(void **state) {
    (void)state;
    ERR_BOTH("a abc", "invalid value at column 3: not a number");
    ERR_BOTH("a 0x10", "invalid value at column 3: not a number");
    ERR_BOTH("a 0x1p3", "invalid value");
    ERR_BOTH("a 1_000", "invalid value");
    ERR_BOTH("a +nan", "invalid value");
    ERR_BOTH("a nan(1)", "invalid value");
    ERR_BOTH("a 1e", "invalid value");
    ERR_BOTH("a .", "invalid value");
    ERR_BOTH("a -", "invalid value");
    ERR_BOTH("a e5", "invalid value");
    ERR_BOTH("a 1.2.3", "invalid value");
    ERR_BOTH("a infinit", "invalid value");
    ERR_BOTH("a 1e999", "the value at column 3 is out of range");
    ERR_BOTH("a -1e999", "out of range");
    ERR_BOTH("a 00000000000000000000000000000000000000000000000000000000000000001",
             "is longer than 64 bytes");
    ERR_TEXT("a{b=\"c\"}x", "line 1: ", "invalid value at column 9");
}

static void test_prom_parse_reads_timestamps_in_both_formats(void **state) {
    (void)state;
    collect_t c;
    parse_ok("http_requests_total{method=\"post\",code=\"200\"} 1027 1395066363000\n"
             "a 1 -1500\n"
             "b 1 +2\n"
             "c 1 -9223372036854775808\n"
             "d 1 9223372036854775807\n",
             PROM_FORMAT_TEXT, &c);
    assert_int_equal(c.n, 5);
    assert_true(c.s[0].has_ts);
    assert_true(c.s[0].ts == 1395066363.0);
    assert_true(c.s[1].ts == -1.5);
    assert_true(c.s[2].ts == 0.002);
    assert_true(c.s[3].ts == (double)INT64_MIN / 1000.0);
    assert_true(c.s[4].ts == (double)INT64_MAX / 1000.0);

    parse_ok("foo_total 17.0 1520879607.789\nbar 1 -5\nbaz 2 1e3\n# EOF\n", PROM_FORMAT_OPENMETRICS,
             &c);
    assert_int_equal(c.n, 3);
    assert_true(c.s[0].has_ts && c.s[0].ts == 1520879607.789);
    assert_true(c.s[1].ts == -5.0);
    assert_true(c.s[2].ts == 1000.0);
}

static void test_prom_parse_rejects_bad_timestamps(void **state) {
    (void)state;
    ERR_TEXT("a 1 abc", "line 1: ", "invalid timestamp at column 5: not a number");
    ERR_TEXT("a 1 1.5", "line 1: ", "invalid timestamp at column 5");
    ERR_TEXT("a 1 -", "line 1: ", "invalid timestamp");
    ERR_TEXT("a 1 9223372036854775808", "line 1: ", "the timestamp at column 5 is out of range");
    ERR_TEXT("a 1 -9223372036854775809", "line 1: ", "out of range");
    ERR_TEXT("a 1 99999999999999999999999999999999999999999999999999999999999999999",
             "line 1: ", "longer than 64 bytes");
    ERR_OM("a 1 NaN\n# EOF\n", "line 1: ", "invalid timestamp at column 5");
    ERR_OM("a 1 +Inf\n# EOF\n", "line 1: ", "invalid timestamp");
    ERR_OM("a 1 1e999\n# EOF\n", "line 1: ", "out of range");
    ERR_OM("a 1 x\n# EOF\n", "line 1: ", "invalid timestamp at column 5");
}

/* ---- layout ---------------------------------------------------------------- */

static void test_prom_parse_allows_text_whitespace_and_comments(void **state) {
    (void)state;
    static const char text[] = "\n"
                               "   \t\n"
                               "#\n"
                               "#no space comment\n"
                               "# just a comment\n"
                               "# HELP\n"
                               "# HELP a help with \\\\ and \\n and \\q escapes\n"
                               "# HELP a.b odd help that promparse accepts\n"
                               "#\tTYPE\ta\tGAUGE  \n"
                               "  a   1  \n"
                               "b\t{ x = \"1\" , y=\"2\", }\t2\t3 \n"
                               "c{} 3\n"
                               "d{x=\"1\"}4\n"
                               "e{x=\"1\",} 5\r\n"
                               "f 6";
    collect_t c;
    parse_ok(text, PROM_FORMAT_TEXT, &c);
    assert_int_equal(c.n, 6);
    assert_string_equal(c.s[0].name, "a");
    assert_true(c.s[0].value == 1.0);
    assert_string_equal(c.s[1].labels, "x=1|y=2");
    assert_true(c.s[1].value == 2.0 && c.s[1].has_ts && c.s[1].ts == 0.003);
    assert_int_equal(c.s[2].nlabels, 0);
    assert_true(c.s[3].value == 4.0);
    assert_string_equal(c.s[4].labels, "x=1");
    assert_true(c.s[4].value == 5.0);
    assert_false(c.s[4].has_ts);
    assert_true(c.s[5].value == 6.0); /* last line without newline */
}

static void test_prom_parse_accepts_crlf_line_ends(void **state) {
    (void)state;
    collect_t c;
    parse_ok("# TYPE a gauge\r\na{x=\"1\"} 1 5\r\n\r\nb 2\r\n", PROM_FORMAT_TEXT, &c);
    assert_int_equal(c.n, 2);
    assert_true(c.s[0].ts == 0.005);
    parse_ok("# TYPE a gauge\r\na 1\r\n# EOF\r\n", PROM_FORMAT_OPENMETRICS, &c);
    assert_int_equal(c.n, 1);
}

static void test_prom_parse_accepts_empty_text(void **state) {
    (void)state;
    collect_t c;
    parse_ok("", PROM_FORMAT_TEXT, &c);
    assert_int_equal(c.n, 0);
    assert_int_equal(prom_parse(NULL, 0, PROM_FORMAT_TEXT, collect, &c, NULL, 0), 0);
    parse_ok("# EOF", PROM_FORMAT_OPENMETRICS, &c);
    assert_int_equal(c.n, 0);
}

/* ---- OpenMetrics ----------------------------------------------------------- */

static void test_prom_parse_reads_openmetrics_with_exemplars(void **state) {
    (void)state;
    static const char text[] =
        "# TYPE foo histogram\n"
        "# HELP foo Request latency.\n"
        "# UNIT foo seconds\n"
        "foo_bucket{le=\"0.01\"} 0\n"
        "foo_bucket{le=\"0.1\"} 8 # {} 0.054\n"
        "foo_bucket{le=\"1\"} 11 # {trace_id=\"KOO5S4vxi0o\"} 0.67\n"
        "foo_bucket{le=\"10\"} 17 # {trace_id=\"oHg5SJYRHA0\",span=\"x\"} 9.8 1520879607.789\n"
        "foo_bucket{le=\"+Inf\"} 17 1520879607.5 # {trace_id=\"a\"} 1e1\n"
        "foo_count 17\n"
        "foo_sum 324789.3\n"
        "foo_created 1520430000.123\n"
        "# TYPE build info\n"
        "build_info{version=\"1.2\",} 1\n"
        "# TYPE state stateset\n"
        "state{state=\"ready\"} 1\n"
        "# TYPE u unknown\n"
        "u -Inf\n"
        "# EOF\n";
    collect_t c;
    parse_ok(text, PROM_FORMAT_OPENMETRICS, &c);
    assert_int_equal(c.n, 11);
    assert_string_equal(c.s[1].labels, "le=0.1");
    assert_true(c.s[1].value == 8.0);
    assert_false(c.s[1].has_ts);
    assert_string_equal(c.s[3].labels, "le=10"); /* exemplar labels are not sample labels */
    assert_false(c.s[3].has_ts);                 /* nor is the exemplar's timestamp */
    assert_string_equal(c.s[4].labels, "le=+Inf");
    assert_true(c.s[4].has_ts && c.s[4].ts == 1520879607.5);
    assert_string_equal(c.s[7].name, "foo_created");
    assert_true(c.s[7].value == 1520430000.123);
    assert_string_equal(c.s[8].labels, "version=1.2");
}

static void test_prom_parse_requires_eof_in_openmetrics(void **state) {
    (void)state;
    ERR_OM("a 1\n", "line 2: ", "missing # EOF");
    ERR_OM("a 1", "line 2: ", "missing # EOF");
    ERR_OM("", "line 1: ", "missing # EOF");
    ERR_OM("# EOF \n", "line 1: ", "invalid comment");
    ERR_OM("# eof\n", "line 1: ", "invalid comment");
    ERR_OM("# EOF\na 1\n", "line 2: ", "data after # EOF");
    ERR_OM("# EOF\n\n", "line 2: ", "data after # EOF");
    ERR_OM("# EOF\n# EOF\n", "line 2: ", "data after # EOF");
    collect_t c;
    parse_ok("a 1\n# EOF\n", PROM_FORMAT_OPENMETRICS, &c);
    assert_int_equal(c.n, 1);
    parse_ok("a 1\n# EOF", PROM_FORMAT_OPENMETRICS, &c);
    assert_int_equal(c.n, 1);
    /* In text, # EOF is only a comment. */
    parse_ok("a 1\n# EOF\nb 2\n", PROM_FORMAT_TEXT, &c);
    assert_int_equal(c.n, 2);
}

static void test_prom_parse_applies_openmetrics_layout_rules(void **state) {
    (void)state;
    ERR_OM("a 1\n\n# EOF\n", "line 2: ", "empty line");
    ERR_OM("# a comment\n# EOF\n", "line 1: ", "invalid comment (OpenMetrics allows");
    ERR_OM("#\n# EOF\n", "line 1: ", "invalid comment");
    ERR_OM(" a 1\n# EOF\n", "line 1: ", "no metric name at column 1");
    ERR_OM("a  1\n# EOF\n", "line 1: ", "invalid value at column 3");
    ERR_OM("a\t1\n# EOF\n", "line 1: ", "invalid metric name at column 1: its byte 2");
    ERR_OM("a {x=\"1\"} 1\n# EOF\n", "line 1: ", "invalid value");
    ERR_OM("a{x=\"1\", y=\"2\"} 1\n# EOF\n", "line 1: ", "invalid label name at column 9");
    ERR_OM("a{x =\"1\"} 1\n# EOF\n",
           "line 1: ", "expected '=' after the label name at column 3, at column 4");
    ERR_OM("a{x=\"1\"}1\n# EOF\n", "line 1: ", "expected ' ' before the value, at column 9");
    ERR_OM("a 1 \n# EOF\n", "line 1: ", "unexpected space at the end");
    ERR_OM("a 1 2 x\n# EOF\n", "line 1: ", "unexpected text after the timestamp, at column 7");
    ERR_OM("a 1 2 \n# EOF\n", "line 1: ", "unexpected text after the timestamp");
    ERR_OM("# TYPE a untyped\n# EOF\n", "line 1: ", "unknown metric type at column 10");
    ERR_OM("# TYPE a Gauge\n# EOF\n", "line 1: ", "unknown metric type at column 10");
    ERR_OM("# TYPE a\n# EOF\n", "line 1: ", "missing metric type");
    ERR_OM("# HELP 1a x\n# EOF\n", "line 1: ", "invalid metric name in # HELP at column 8");
    ERR_OM("# HELP a.b x\n# EOF\n", "line 1: ", "invalid metric name in # HELP");
    ERR_OM("# HELP \n# EOF\n", "line 1: ", "invalid comment");
}

static void test_prom_parse_rejects_bad_exemplars(void **state) {
    (void)state;
    ERR_OM("a 1 # x\n# EOF\n", "line 1: ", "invalid exemplar at column 5");
    ERR_OM("a 1 #\n# EOF\n", "line 1: ", "invalid exemplar");
    ERR_OM("a 1 # {t=\"x\"}\n# EOF\n", "line 1: ", "expected ' ' and a value");
    ERR_OM("a 1 # {t=\"x\"} y\n# EOF\n", "line 1: ", "invalid exemplar value at column 15");
    ERR_OM("a 1 # {t=\"x\"} 1 z\n# EOF\n", "line 1: ", "invalid exemplar timestamp at column 17");
    ERR_OM("a 1 # {t=\"x\"} 1 2 3\n# EOF\n", "line 1: ", "unexpected text after the exemplar");
    ERR_OM("a 1 # {t=\"\\q\"} 1\n# EOF\n", "line 1: ", "invalid escape");
    ERR_OM("a 1 # {t=\"x\"\n# EOF\n", "line 1: ", "unterminated label set");
    /* Text has no exemplars. */
    ERR_TEXT("a 1 # {t=\"x\"} 1", "line 1: ", "invalid timestamp at column 5");
}

/* ---- errors ---------------------------------------------------------------- */

static void test_prom_parse_rejects_bad_metric_names(void **state) {
    (void)state;
    ERR_BOTH("3foo 1", "no metric name at column 1 (is this Prometheus text?)");
    ERR_BOTH("foo-bar 1", "invalid metric name at column 1: its byte 4");
    ERR_BOTH("foo.bar{a=\"b\"} 1", "invalid metric name at column 1: its byte 4");
    ERR_BOTH("{a=\"b\"} 1", "no metric name at column 1");
    ERR_BOTH("\"quoted\" 1", "no metric name at column 1");
    ERR_BOTH("foo\x01 1", "invalid metric name at column 1: its byte 4");
    ERR_BOTH("foo", "missing value after the metric name");
    ERR_BOTH("foo{}", "missing value after the metric name");
    ERR_TEXT("foo  \t", "line 1: ", "missing value");
}

static void test_prom_parse_rejects_bad_label_sets(void **state) {
    (void)state;
    ERR_BOTH("a{b=\"c} 1", "unterminated label value (opened at column 5)");
    ERR_BOTH("a{b=\"c\\\"} 1", "unterminated label value (opened at column 5)");
    ERR_BOTH("a{b=\"c\\", "unterminated label value (opened at column 5)");
    ERR_BOTH("a{b=\"1\",b=\"2\"} 1", "duplicate label name at column 9");
    ERR_BOTH("a{1b=\"1\"} 1", "invalid label name at column 3");
    ERR_BOTH("a{b:c=\"1\"} 1", "expected '=' after the label name at column 3, at column 4");
    ERR_BOTH("a{b=1} 1", "expected '\"' to open the value of the label at column 3, at column 5");
    ERR_BOTH("a{b=\"1\" c=\"2\"} 1",
             "expected ',' or '}' after the value of the label at column 3, at column");
    ERR_BOTH("a{b=\"1\";c=\"2\"} 1", "expected ',' or '}'");
    ERR_BOTH("a{,} 1", "invalid label name at column 3");
    ERR_BOTH("a{b=\"1\",,} 1", "invalid label name");
    ERR_BOTH("a{b=\"1\"", "unterminated label set");
    ERR_BOTH("a{b=\"1\",", "unterminated label set");
    ERR_BOTH("a{", "unterminated label set");
    ERR_BOTH("a{b", "expected '=' after the label name at column 3, at column 4");
    ERR_BOTH("a{b=", "expected '\"' to open");
    ERR_OM("a{b=\"\\t\"} 1\n# EOF\n", "line 1: ", "invalid escape at column 6 in a label value");
}

static void test_prom_parse_rejects_bad_text_metadata(void **state) {
    (void)state;
    ERR_TEXT("# TYPE a bogus\n", "line 1: ", "unknown metric type at column 10");
    ERR_TEXT("# TYPE a stateset\n", "line 1: ", "unknown metric type");
    ERR_TEXT("# TYPE a\n", "line 1: ", "missing metric type in # TYPE");
    ERR_TEXT("# TYPE a   \n", "line 1: ", "missing metric type");
    ERR_TEXT("# TYPE a.b gauge\n", "line 1: ", "invalid metric name in # TYPE at column 8");
    ERR_TEXT("# TYPE 1a gauge\n", "line 1: ", "invalid metric name in # TYPE");
    ERR_TEXT("# HELP \n", "line 1: ", "missing metric name in # HELP");
    ERR_TEXT("# HELP 9 x\n", "line 1: ", "invalid metric name in # HELP");
    ERR_TEXT("# TYPE\t \n", "line 1: ", "missing metric name in # TYPE");
}

static void test_prom_parse_rejects_junk_after_the_value(void **state) {
    (void)state;
    ERR_TEXT("a 1 2 3\n", "line 1: ", "unexpected text after the timestamp, at column 7");
    ERR_TEXT("a 1 2 # c\n", "line 1: ", "unexpected text after the timestamp, at column 7");
    ERR_OM("a 1 2 3\n# EOF\n", "line 1: ", "unexpected text after the timestamp, at column 7");
}

static void test_prom_parse_rejects_nul_bytes(void **state) {
    (void)state;
    static const char text[] = "a 1\nb{x=\"y\0\"} 2\n";
    expect_error(text, sizeof text - 1, PROM_FORMAT_TEXT, "line 2: ", "NUL byte at column 7");
    static const char comment[] = "# HELP a \0\n";
    expect_error(comment, sizeof comment - 1, PROM_FORMAT_TEXT, "line 1: ", "NUL byte");
    static const char after_eof[] = "# EOF\n\0";
    expect_error(after_eof, sizeof after_eof - 1, PROM_FORMAT_OPENMETRICS, "line 2: ", "NUL");
    static const char lone[] = "\0";
    expect_error(lone, 1, PROM_FORMAT_TEXT, "line 1: ", "NUL byte at column 1");
}

static void test_prom_parse_counts_lines_in_messages(void **state) {
    (void)state;
    ERR_TEXT("# HELP a x\n\na 1\r\nb 2\nc ?\nd 4\n", "line 5: ", "invalid value at column 3");
    ERR_OM("# TYPE a gauge\na 1\nb ?\n# EOF\n", "line 3: ", "invalid value");
}

static void test_prom_parse_stops_at_the_first_bad_line(void **state) {
    (void)state;
    char err[256] = "";
    collect_t c;
    setup_collect(&c);
    /* Samples before the bad line have been delivered; none after it. */
    int rc = prom_parse("a 1\nb 2\nc x\nd 4\n", 16, PROM_FORMAT_TEXT, collect, &c, err, sizeof err);
    assert_int_equal(rc, KGS_EINVAL);
    assert_int_equal(c.n, 2);
    assert_string_equal(err, "line 3: invalid value at column 3: not a number");
}

static void test_prom_parse_rejects_bad_arguments(void **state) {
    (void)state;
    char err[128] = "";
    assert_int_equal(prom_parse(NULL, 3, PROM_FORMAT_TEXT, NULL, NULL, err, sizeof err),
                     KGS_EINVAL);
    assert_string_equal(err, "parse metrics: no input buffer");
    assert_int_equal(prom_parse("a 1", 3, (prom_format_t)7, NULL, NULL, err, sizeof err),
                     KGS_EINVAL);
    assert_string_equal(err, "parse metrics: unknown format 7");
    /* err may be NULL, or too short for the whole message. */
    assert_int_equal(prom_parse("a x", 3, PROM_FORMAT_TEXT, NULL, NULL, NULL, 0), KGS_EINVAL);
    char tiny[5] = "zzzz";
    assert_int_equal(prom_parse("a x", 3, PROM_FORMAT_TEXT, NULL, NULL, tiny, sizeof tiny),
                     KGS_EINVAL);
    assert_string_equal(tiny, "line");
}

/* The text is a remote server's: a message says where, never what, so no
 * byte of a page the scaler was pointed at comes back to whoever asked. */
static void test_prom_parse_never_quotes_the_input_in_messages(void **state) {
    (void)state;
    char text[300];
    memset(text, 'x', sizeof text);
    memcpy(text, "a ", 2);
    text[sizeof text - 1] = '\0';
    char err[256] = "";
    assert_int_equal(prom_parse(text, strlen(text), PROM_FORMAT_TEXT, NULL, NULL, err, sizeof err),
                     KGS_EINVAL);
    assert_string_equal(err, "line 1: the value at column 3 is longer than 64 bytes");
    /* every kind of refusal, on a line full of one secret-looking token */
    static const char *const bodies[] = {
        "<html><body>tok_SECRET</body></html>\n",
        "tok_SECRET\n",
        "a{tok_SECRET=1} 1\n",
        "a{b=\"1\"tok_SECRET} 1\n",
        "a tok_SECRET\n",
        "a 1 tok_SECRET\n",
        "a 1 2 tok_SECRET\n",
        "# TYPE a tok_SECRET\n",
        "# TYPE tok-SECRET gauge\n",
        "a-tok_SECRET 1\n",
        "a{tok_SECRET=\"1\",tok_SECRET=\"2\"} 1\n",
        "a{b=\"tok_SECRET\xff\"} 1\n",
        "a{b=\"tok_SECRET",
        "tok_SECRET{",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof *bodies; i++)
        for (int om = 0; om < 2; om++) {
            err[0] = '\0';
            int rc = prom_parse(bodies[i], strlen(bodies[i]),
                                om ? PROM_FORMAT_OPENMETRICS : PROM_FORMAT_TEXT, NULL, NULL, err,
                                sizeof err);
            if (rc != KGS_EINVAL || strstr(err, "SECRET") || strstr(err, "tok"))
                fail_msg("%s (om %d): %d \"%s\"", bodies[i], om, rc, err);
        }
    static const char *const om_bodies[] = {
        "# tok_SECRET\n# EOF\n",
        "a 1 # tok_SECRET\n# EOF\n",
        "a 1 # {t=\"x\"} tok_SECRET\n# EOF\n",
        "a 1 # {t=\"x\"} 1 2 tok_SECRET\n# EOF\n",
        "a{b=\"\\q tok_SECRET\"} 1\n# EOF\n",
        "a{b=\"1\"}tok_SECRET\n# EOF\n",
    };
    for (size_t i = 0; i < sizeof om_bodies / sizeof *om_bodies; i++) {
        err[0] = '\0';
        int rc = prom_parse(om_bodies[i], strlen(om_bodies[i]), PROM_FORMAT_OPENMETRICS, NULL, NULL,
                            err, sizeof err);
        if (rc != KGS_EINVAL || strstr(err, "SECRET") || strstr(err, "tok"))
            fail_msg("%s: %d \"%s\"", om_bodies[i], rc, err);
    }
}

/* ---- callback -------------------------------------------------------------- */

static void test_prom_parse_returns_the_callbacks_stop_value(void **state) {
    (void)state;
    static const char text[] = "a 1\nb 2\nc 3\nd ?\n";
    char err[64] = "";
    collect_t c;
    setup_collect(&c);
    c.stop_after = 2;
    c.stop_rc = 42;
    assert_int_equal(prom_parse(text, strlen(text), PROM_FORMAT_TEXT, collect, &c, err, sizeof err),
                     42);
    assert_int_equal(c.n, 2);
    assert_string_equal(err, ""); /* the callback's reason is its own */

    setup_collect(&c);
    c.stop_after = 1;
    c.stop_rc = KGS_ENOTFOUND;
    assert_int_equal(prom_parse("a 1\n# EOF\n", 10, PROM_FORMAT_OPENMETRICS, collect, &c, NULL, 0),
                     KGS_ENOTFOUND);
    int calls = 0;
    assert_int_equal(prom_parse("a 1\nb 2\n", 8, PROM_FORMAT_TEXT, stop_at_first, &calls, NULL, 0),
                     1);
    assert_int_equal(calls, 1);
}

static void test_prom_parse_only_checks_without_a_callback(void **state) {
    (void)state;
    assert_int_equal(prom_parse("a 1\nb{c=\"d\"} 2 3\n", 17, PROM_FORMAT_TEXT, NULL, NULL, NULL, 0),
                     0);
    assert_int_equal(prom_parse("a 1\nb{c=\"d\"} 2 x\n", 17, PROM_FORMAT_TEXT, NULL, NULL, NULL, 0),
                     KGS_EINVAL);
}

/* ---- long lines and memory ------------------------------------------------- */

/* "short 1\nlong{v="xxx..."} 2\nafter{v="y"} 3\n" with a value of vlen bytes. */
static char *long_input(size_t vlen, size_t *len) {
    static const char head[] = "short 1\nlong{v=\"";
    static const char tail[] = "\"} 2\nafter{v=\"y\"} 3\n";
    *len = sizeof head - 1 + vlen + sizeof tail - 1;
    char *t = malloc(*len);
    assert_non_null(t);
    memcpy(t, head, sizeof head - 1);
    memset(t + sizeof head - 1, 'x', vlen);
    memcpy(t + sizeof head - 1 + vlen, tail, sizeof tail - 1);
    return t;
}

static int check_long(void *ud, const prom_sample_t *s) {
    size_t *vlen = ud;
    if (strcmp(s->name, "long") == 0) {
        const char *v = prom_sample_label(s, "v");
        assert_non_null(v);
        assert_int_equal(strlen(v), *vlen);
        assert_true(v[0] == 'x' && v[*vlen - 1] == 'x');
    }
    return 0;
}

static void test_prom_parse_handles_lines_of_any_length(void **state) {
    (void)state;
    static const size_t sizes[] = {4000, 4083, 4084, 70000, 1000000};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t len, vlen = sizes[k];
        char *t = long_input(vlen, &len);
        malloc_calls = 0;
        malloc_fails = false;
        char err[256] = "";
        int rc = prom_parse(t, len, PROM_FORMAT_TEXT, check_long, &vlen, err, sizeof err);
        if (rc != 0)
            fail_msg("%zu: %d %s", vlen, rc, err);
        /* the long line is vlen + 12 bytes; the stack holds lines below 4096 */
        assert_int_equal(malloc_calls, vlen + 12 < PROM_STACK_SCRATCH ? 0 : 1);
        free(t);
    }
}

/* A name-only line copies all its bytes plus a NUL: the most scratch a line
 * can need. 4095 bytes still fit the 4096-byte stack buffer (ASan checks the
 * edge), 4096 take the heap. */
static void test_prom_parse_fills_the_stack_buffer_to_the_edge(void **state) {
    (void)state;
    static char line[PROM_STACK_SCRATCH + 1];
    for (size_t n = PROM_STACK_SCRATCH - 1; n <= PROM_STACK_SCRATCH; n++) {
        memset(line, 'a', n);
        malloc_calls = 0;
        char err[256] = "";
        assert_int_equal(prom_parse(line, n, PROM_FORMAT_TEXT, NULL, NULL, err, sizeof err),
                         KGS_EINVAL);
        assert_non_null(strstr(err, "line 1: missing value after the metric name"));
        assert_int_equal(malloc_calls, n < PROM_STACK_SCRATCH ? 0 : 1);
    }
}

static void test_prom_parse_does_not_allocate_for_ordinary_lines(void **state) {
    (void)state;
    collect_t c;
    malloc_calls = 0;
    malloc_fails = true;
    setup_collect(&c);
    const char *t = "a{b=\"c\"} 1\nd 2\n";
    assert_int_equal(prom_parse(t, strlen(t), PROM_FORMAT_TEXT, collect, &c, NULL, 0), 0);
    assert_int_equal(c.n, 2);
    assert_int_equal(malloc_calls, 0);
    malloc_fails = false;
}

static void test_prom_parse_reports_allocation_failure(void **state) {
    (void)state;
    size_t len, vlen = 10000;
    char *t = long_input(vlen, &len);
    malloc_calls = 0;
    malloc_fails = true;
    char err[256] = "";
    collect_t c;
    setup_collect(&c);
    assert_int_equal(prom_parse(t, len, PROM_FORMAT_TEXT, collect, &c, err, sizeof err),
                     KGS_ENOMEM);
    assert_int_equal(malloc_calls, 1);
    assert_int_equal(c.n, 1); /* "short" only */
    assert_non_null(strstr(err, "line 2: "));
    malloc_fails = false;
    free(t);
}

/* ---- incremental ------------------------------------------------------------ */

/* A page fed in pieces keeps one line, not the page: 20,000 lines of a
 * 1.3 MB page leave the stream holding its struct and no buffer larger than
 * a line, however the page is cut. */
static void test_prom_stream_holds_a_line_not_the_page(void **state) {
    (void)state;
    size_t cap = 2000000, len = 0;
    char *page = malloc(cap);
    assert_non_null(page);
    for (unsigned i = 0; i < 20000; i++)
        len += (size_t)snprintf(page + len, cap - len,
                                "vllm:num_requests_waiting{model_name=\"m%u\",engine=\"0\"} %u\n",
                                i, i % 7);
    double sum = 0;
    size_t most = 0;
    prom_stream_t *st = prom_stream_new(PROM_FORMAT_TEXT, 0, sum_values, &sum);
    assert_non_null(st);
    char err[256];
    for (size_t o = 0; o < len; o += 1000) {
        assert_int_equal(
            prom_stream_feed(st, page + o, len - o < 1000 ? len - o : 1000, err, sizeof err), 0);
        if (prom_stream_held(st) > most)
            most = prom_stream_held(st);
    }
    assert_int_equal(prom_stream_end(st, err, sizeof err), 0);
    prom_stream_free(st);
    double want = 0;
    for (unsigned i = 0; i < 20000; i++)
        want += i % 7;
    assert_true(sum == want);
    assert_true(most < 4096); /* a partial line of < 100 bytes, doubled from 1 KiB */
    free(page);
}

static void test_prom_stream_refuses_a_line_over_its_limit(void **state) {
    (void)state;
    char line[300];
    memset(line, 'a', sizeof line);
    char err[256];
    prom_stream_t *st = prom_stream_new(PROM_FORMAT_TEXT, 100, NULL, NULL);
    assert_non_null(st);
    assert_int_equal(prom_stream_feed(st, "ok 1\n", 5, err, sizeof err), 0);
    /* cut short of its newline, 300 bytes are already too many */
    assert_int_equal(prom_stream_feed(st, line, 60, err, sizeof err), 0);
    assert_int_equal(prom_stream_feed(st, line, 60, err, sizeof err), KGS_EINVAL);
    assert_string_equal(err, "line 2: longer than 100 bytes");
    assert_true(prom_stream_held(st) < 1024 + 200);
    assert_int_equal(prom_stream_end(st, err, sizeof err), KGS_EINVAL);
    assert_string_equal(err, "line 2: longer than 100 bytes");
    prom_stream_free(st);
    assert_null(prom_stream_new((prom_format_t)7, 0, NULL, NULL));
    prom_stream_free(NULL);
}

static void test_prom_stream_reports_allocation_failure(void **state) {
    (void)state;
    prom_stream_t *st = prom_stream_new(PROM_FORMAT_TEXT, 0, NULL, NULL);
    assert_non_null(st);
    malloc_fails = true;
    char err[256];
    assert_int_equal(prom_stream_feed(st, "abc", 3, err, sizeof err), KGS_ENOMEM);
    assert_non_null(strstr(err, "line 1: "));
    malloc_fails = false;
    assert_int_equal(prom_stream_end(st, err, sizeof err), KGS_ENOMEM);
    prom_stream_free(st);
}

/* ---- Content-Type and lookup ----------------------------------------------- */

static void test_prom_format_from_content_type_detects_openmetrics(void **state) {
    (void)state;
    assert_int_equal(
        prom_format_from_content_type("application/openmetrics-text; version=1.0.0; charset=utf-8"),
        PROM_FORMAT_OPENMETRICS);
    assert_int_equal(prom_format_from_content_type("application/openmetrics-text"),
                     PROM_FORMAT_OPENMETRICS);
    assert_int_equal(prom_format_from_content_type("Application/OpenMetrics-Text;version=0.0.1"),
                     PROM_FORMAT_OPENMETRICS);
    assert_int_equal(prom_format_from_content_type("  application/openmetrics-text ; x=y"),
                     PROM_FORMAT_OPENMETRICS);
    assert_int_equal(prom_format_from_content_type("text/plain; version=0.0.4; charset=utf-8"),
                     PROM_FORMAT_TEXT);
    assert_int_equal(prom_format_from_content_type("text/plain"), PROM_FORMAT_TEXT);
    assert_int_equal(prom_format_from_content_type(NULL), PROM_FORMAT_TEXT);
    assert_int_equal(prom_format_from_content_type(""), PROM_FORMAT_TEXT);
    assert_int_equal(prom_format_from_content_type("application/openmetrics-textx"),
                     PROM_FORMAT_TEXT);
    assert_int_equal(prom_format_from_content_type("application/openmetrics-tex"),
                     PROM_FORMAT_TEXT);
    assert_int_equal(prom_format_from_content_type("application/json"), PROM_FORMAT_TEXT);
}

static int check_lookup(void *ud, const prom_sample_t *s) {
    (void)ud;
    assert_string_equal(prom_sample_label(s, "model"), "resnet");
    assert_string_equal(prom_sample_label(s, "version"), "1");
    assert_string_equal(prom_sample_label(s, "empty"), "");
    assert_null(prom_sample_label(s, "absent"));
    assert_null(prom_sample_label(s, "mode"));
    assert_null(prom_sample_label(s, NULL));
    assert_null(prom_sample_label(NULL, "model"));
    return 0;
}

static void test_prom_sample_label_finds_values(void **state) {
    (void)state;
    static const char text[] = "q{model=\"resnet\",version=\"1\",empty=\"\"} 1\n";
    assert_int_equal(prom_parse(text, strlen(text), PROM_FORMAT_TEXT, check_lookup, NULL, NULL, 0),
                     0);
    prom_sample_t none = {.name = "x", .labels = NULL, .label_count = 0};
    assert_null(prom_sample_label(&none, "model"));
}

/* The fast path gives strtod's double, bit for bit: every plain decimal of
 * up to 15 digits tried (a fixed pseudo-random sequence of 200,000, every
 * position of the point), and what it must refuse. */
static void test_plain_decimal_is_strtod_exactly(void **state) {
    (void)state;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    char buf[24];
    for (int k = 0; k < 200000; k++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int nd = 1 + (int)(x % 15);
        int dot = (int)((x >> 8) % (uint64_t)(nd + 1)); /* digits before the point */
        size_t o = 0;
        uint64_t y = x >> 16;
        for (int i = 0; i < nd; i++) {
            if (i == dot && dot > 0)
                buf[o++] = '.';
            buf[o++] = (char)('0' + (y % 10));
            y = y / 10 ? y / 10 : (x ^ (uint64_t)i * 0x2545f4914f6cdd1dull);
        }
        buf[o] = '\0';
        double fast = -1;
        assert_true(prom_plain_decimal(buf, o, &fast));
        double slow = strtod(buf, NULL);
        if (memcmp(&fast, &slow, sizeof fast) != 0)
            fail_msg("%s: fast %.17g, strtod %.17g", buf, fast, slow);
    }
    double v;
    const char *refused[] = {"",
                             ".",
                             "-1",
                             "+1",
                             "1e3",
                             "1.2.3",
                             " 1",
                             "1 ",
                             "0x10",
                             "inf",
                             "1234567890123456",
                             "0.0000000000000001"};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++)
        assert_false(prom_plain_decimal(refused[i], strlen(refused[i]), &v));
    assert_true(prom_plain_decimal("0.005", 5, &v));
    assert_true(v == 0.005);
    assert_true(prom_plain_decimal("3.", 2, &v));
    assert_true(v == 3.0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prom_stream_holds_a_line_not_the_page),
        cmocka_unit_test(test_prom_stream_refuses_a_line_over_its_limit),
        cmocka_unit_test(test_prom_stream_reports_allocation_failure),
        cmocka_unit_test(test_prom_parse_reads_vllm_output),
        cmocka_unit_test(test_prom_parse_reads_triton_output),
        cmocka_unit_test(test_prom_parse_reads_a_histogram),
        cmocka_unit_test(test_prom_parse_reads_a_summary),
        cmocka_unit_test(test_prom_parse_unescapes_label_values),
        cmocka_unit_test(test_prom_parse_keeps_unknown_escapes_in_text_like_prometheus),
        cmocka_unit_test(test_prom_parse_rejects_invalid_utf8_in_label_values),
        cmocka_unit_test(test_prom_parse_keeps_labels_in_input_order),
        cmocka_unit_test(test_prom_parse_accepts_exactly_max_labels),
        cmocka_unit_test(test_prom_parse_reads_special_values),
        cmocka_unit_test(test_prom_parse_rejects_bad_values),
        cmocka_unit_test(test_prom_parse_reads_timestamps_in_both_formats),
        cmocka_unit_test(test_prom_parse_rejects_bad_timestamps),
        cmocka_unit_test(test_prom_parse_allows_text_whitespace_and_comments),
        cmocka_unit_test(test_prom_parse_accepts_crlf_line_ends),
        cmocka_unit_test(test_prom_parse_accepts_empty_text),
        cmocka_unit_test(test_prom_parse_reads_openmetrics_with_exemplars),
        cmocka_unit_test(test_prom_parse_requires_eof_in_openmetrics),
        cmocka_unit_test(test_prom_parse_applies_openmetrics_layout_rules),
        cmocka_unit_test(test_prom_parse_rejects_bad_exemplars),
        cmocka_unit_test(test_prom_parse_rejects_bad_metric_names),
        cmocka_unit_test(test_prom_parse_rejects_bad_label_sets),
        cmocka_unit_test(test_prom_parse_rejects_bad_text_metadata),
        cmocka_unit_test(test_prom_parse_rejects_junk_after_the_value),
        cmocka_unit_test(test_prom_parse_rejects_nul_bytes),
        cmocka_unit_test(test_prom_parse_counts_lines_in_messages),
        cmocka_unit_test(test_prom_parse_stops_at_the_first_bad_line),
        cmocka_unit_test(test_prom_parse_rejects_bad_arguments),
        cmocka_unit_test(test_prom_parse_never_quotes_the_input_in_messages),
        cmocka_unit_test(test_prom_parse_returns_the_callbacks_stop_value),
        cmocka_unit_test(test_prom_parse_only_checks_without_a_callback),
        cmocka_unit_test(test_prom_parse_handles_lines_of_any_length),
        cmocka_unit_test(test_prom_parse_fills_the_stack_buffer_to_the_edge),
        cmocka_unit_test(test_prom_parse_does_not_allocate_for_ordinary_lines),
        cmocka_unit_test(test_prom_parse_reports_allocation_failure),
        cmocka_unit_test(test_prom_format_from_content_type_detects_openmetrics),
        cmocka_unit_test(test_prom_sample_label_finds_values),
        cmocka_unit_test(test_plain_decimal_is_strtod_exactly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
