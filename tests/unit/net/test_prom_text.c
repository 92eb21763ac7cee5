/* test_prom_text.c - Prometheus text exposition writer.
 *
 * The module's .c file is included (STYLE rule 1) so that PROM_REALLOC can
 * point at a failing allocator; the library's copy is then never linked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

static int realloc_budget = -1; /* -1: unlimited; else successful calls left */
static int realloc_calls;

static void *fake_realloc(void *p, size_t n) {
    realloc_calls++;
    if (realloc_budget == 0)
        return NULL;
    if (realloc_budget > 0)
        realloc_budget--;
    return realloc(p, n);
}

#define PROM_REALLOC fake_realloc
#include "net/prom_text.c"

static int setup(void **state) {
    prom_buf_t *b = malloc(sizeof *b);
    if (!b)
        return -1;
    prom_buf_init(b);
    realloc_budget = -1;
    realloc_calls = 0;
    *state = b;
    return 0;
}

static int teardown(void **state) {
    prom_buf_t *b = *state;
    prom_buf_free(b);
    assert_null(b->data);
    free(b);
    return 0;
}

static void test_prom_text_writes_family_header_with_escaped_help(void **state) {
    prom_buf_t *b = *state;
    prom_family(b, "gpu_power_watts", "gauge", "Power draw\\in watts\nper GPU \"now\"");
    assert_false(b->failed);
    assert_string_equal(b->data, "# HELP gpu_power_watts Power draw\\\\in watts\\nper GPU \"now\"\n"
                                 "# TYPE gpu_power_watts gauge\n");
    assert_int_equal(b->len, strlen(b->data));
    prom_buf_reset(b);
    prom_family(b, "x", "untyped", NULL);
    assert_string_equal(b->data, "# TYPE x untyped\n");
}

static void test_prom_text_escapes_label_values(void **state) {
    prom_buf_t *b = *state;
    prom_label_t labels[] = {
        {"uuid", "GPU-1234"},
        {"path", "C:\\dir\\\"q\"\nnext"},
        {"empty", ""},
    };
    prom_sample(b, "m", NULL, labels, 3, NULL, 1);
    assert_string_equal(
        b->data, "m{uuid=\"GPU-1234\",path=\"C:\\\\dir\\\\\\\"q\\\"\\nnext\",empty=\"\"} 1\n");
}

static void test_prom_text_places_suffix_and_extra_label(void **state) {
    prom_buf_t *b = *state;
    prom_label_t l = {"gpu", "0"};
    prom_label_t le = {"le", "0.5"};
    prom_sample(b, "lat_seconds", "_bucket", &l, 1, &le, 3);
    prom_sample(b, "lat_seconds", "_bucket", NULL, 0, &le, 3);
    prom_sample(b, "lat_seconds", "_sum", NULL, 0, NULL, 1.5);
    assert_string_equal(b->data, "lat_seconds_bucket{gpu=\"0\",le=\"0.5\"} 3\n"
                                 "lat_seconds_bucket{le=\"0.5\"} 3\n"
                                 "lat_seconds_sum 1.5\n");
}

static void test_prom_text_formats_numbers_shortest_and_exact(void **state) {
    prom_buf_t *b = *state;
    static const struct {
        double v;
        const char *s;
    } cases[] = {
        {0, "0"},
        {-0.0, "0"},
        {42, "42"},
        {-7, "-7"},
        {0.5, "0.5"},
        {0.1, "0.1"},
        {1.0 / 3.0, "0.3333333333333333"},
        {123456789012345, "123456789012345"},
        {4294967296.0, "4294967296"},
        {1e21, "1e+21"},
        {1e-7, "1e-07"},
        {0.000123, "0.000123"},
        {9007199254740993.0, "9007199254740992"},
        {1.7976931348623157e308, "1.7976931348623157e+308"},
        {5e-324, "4.94065645841247e-324"},
        {NAN, "NaN"},
        {INFINITY, "+Inf"},
        {-INFINITY, "-Inf"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        prom_buf_reset(b);
        prom_sample(b, "v", NULL, NULL, 0, NULL, cases[i].v);
        char want[64];
        snprintf(want, sizeof want, "v %s\n", cases[i].s);
        if (strcmp(b->data, want) != 0) {
            /* 2^53 + 1 is not a double; %g may print 9.007199254740992e+15. */
            if (i == 12 && strcmp(b->data, "v 9.007199254740992e+15\n") == 0)
                continue;
            fail_msg("case %zu: got \"%s\", want \"%s\"", i, b->data, want);
        }
    }
}

static void test_prom_text_numbers_read_back_exactly(void **state) {
    prom_buf_t *b = *state;
    uint64_t s = UINT64_C(0x9e3779b97f4a7c15);
    for (int i = 0; i < 20000; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        double v;
        uint64_t bits = s;
        memcpy(&v, &bits, sizeof v);
        if (isnan(v))
            continue;
        char num[40];
        format_value(v, num);
        if (isinf(v))
            continue;
        if (strtod(num, NULL) != v)
            fail_msg("%.17g printed as %s", v, num);
    }
    (void)b;
}

static void test_prom_text_histogram_buckets_are_cumulative(void **state) {
    prom_buf_t *b = *state;
    static const double bounds[] = {0.1, 1, 10};
    uint64_t counts[4] = {0};
    prom_histogram_t h = {bounds, 3, counts, 0, 0};
    const double obs[] = {0.05, 0.1, 0.5, 1, 5, 50, 100};
    for (size_t i = 0; i < sizeof obs / sizeof obs[0]; i++)
        prom_histogram_observe(&h, obs[i]);
    assert_int_equal(counts[0], 2); /* le is inclusive */
    assert_int_equal(counts[1], 2);
    assert_int_equal(counts[2], 1);
    assert_int_equal(counts[3], 2);
    assert_int_equal(h.count, 7);
    prom_label_t l = {"gpu", "0"};
    prom_histogram_write(b, "lat_seconds", &l, 1, &h);
    assert_string_equal(b->data, "lat_seconds_bucket{gpu=\"0\",le=\"0.1\"} 2\n"
                                 "lat_seconds_bucket{gpu=\"0\",le=\"1\"} 4\n"
                                 "lat_seconds_bucket{gpu=\"0\",le=\"10\"} 5\n"
                                 "lat_seconds_bucket{gpu=\"0\",le=\"+Inf\"} 7\n"
                                 "lat_seconds_sum{gpu=\"0\"} 156.65\n"
                                 "lat_seconds_count{gpu=\"0\"} 7\n");
}

static void test_prom_text_histogram_counts_nan_only_in_inf(void **state) {
    prom_buf_t *b = *state;
    static const double bounds[] = {1};
    uint64_t counts[2] = {0};
    prom_histogram_t h = {bounds, 1, counts, 0, 0};
    prom_histogram_observe(&h, NAN);
    prom_histogram_observe(&h, -INFINITY);
    assert_int_equal(counts[0], 1);
    assert_int_equal(counts[1], 1);
    prom_histogram_write(b, "h", NULL, 0, &h);
    assert_string_equal(b->data, "h_bucket{le=\"1\"} 1\n"
                                 "h_bucket{le=\"+Inf\"} 2\n"
                                 "h_sum NaN\n"
                                 "h_count 2\n");
}

static void test_prom_text_reset_keeps_capacity(void **state) {
    prom_buf_t *b = *state;
    for (int i = 0; i < 200; i++)
        prom_sample(b, "some_metric_name", NULL, NULL, 0, NULL, i);
    size_t cap = b->cap;
    char *data = b->data;
    int calls = realloc_calls;
    assert_true(cap > 1024);
    prom_buf_reset(b);
    assert_int_equal(b->len, 0);
    assert_string_equal(b->data, "");
    for (int i = 0; i < 200; i++)
        prom_sample(b, "some_metric_name", NULL, NULL, 0, NULL, i);
    assert_int_equal(realloc_calls, calls);
    assert_ptr_equal(b->data, data);
    assert_int_equal(b->cap, cap);
}

static void test_prom_text_latches_allocation_failure_until_reset(void **state) {
    prom_buf_t *b = *state;
    realloc_budget = 0;
    prom_family(b, "m", "gauge", "help");
    assert_true(b->failed);
    assert_null(b->data);
    assert_int_equal(b->len, 0);

    /* Fail while growing: the output so far stays, nothing more is added. */
    realloc_budget = -1;
    prom_buf_reset(b);
    assert_false(b->failed);
    prom_sample(b, "m", NULL, NULL, 0, NULL, 1);
    size_t len = b->len;
    realloc_budget = 0;
    for (int i = 0; i < 200 && !b->failed; i++)
        prom_sample(b, "some_metric_name", NULL, NULL, 0, NULL, i);
    assert_true(b->failed);
    len = b->len;
    prom_sample(b, "m", NULL, NULL, 0, NULL, 1);
    assert_int_equal(b->len, len);
    assert_int_equal(strlen(b->data), b->len);

    realloc_budget = -1;
    prom_buf_reset(b);
    prom_sample(b, "m", NULL, NULL, 0, NULL, 1);
    assert_false(b->failed);
    assert_string_equal(b->data, "m 1\n");
}

static void test_prom_text_free_accepts_null_and_empty(void **state) {
    (void)state;
    prom_buf_free(NULL);
    prom_buf_t b;
    prom_buf_init(&b);
    prom_buf_free(&b);
    prom_buf_reset(&b);
    assert_int_equal(b.len, 0);
}

/* A small but complete exposition, as the server will write it. */
static void write_sample_exposition(prom_buf_t *b) {
    prom_label_t gpu0[] = {{"uuid", "GPU-0"}, {"name", "NVIDIA \"H100\"\n80GB\\PCIe"}};
    prom_label_t gpu1[] = {{"uuid", "GPU-1"}, {"name", "caf\xc3\xa9"}};
    prom_family(b, "kgs_gpu_utilization_ratio", "gauge", "GPU busy fraction.\nSampled \\ NVML.");
    prom_sample(b, "kgs_gpu_utilization_ratio", NULL, gpu0, 2, NULL, 0.5);
    prom_sample(b, "kgs_gpu_utilization_ratio", NULL, gpu1, 2, NULL, NAN);
    prom_family(b, "kgs_requests_total", "counter", "Requests served.");
    prom_sample(b, "kgs_requests_total", NULL, NULL, 0, NULL, 12345678901234.0);
    prom_family(b, "kgs_temperature_celsius", "gauge", "Temperature.");
    prom_sample(b, "kgs_temperature_celsius", NULL, gpu0, 2, NULL, INFINITY);
    prom_sample(b, "kgs_temperature_celsius", NULL, gpu1, 2, NULL, -INFINITY);
    static const double bounds[] = {0.001, 0.01, 0.1, 1};
    uint64_t counts[5] = {0};
    prom_histogram_t h = {bounds, 4, counts, 0, 0};
    for (int i = 0; i < 100; i++)
        prom_histogram_observe(&h, i * 0.013);
    prom_family(b, "kgs_sample_duration_seconds", "histogram", "NVML sampling time.");
    prom_histogram_write(b, "kgs_sample_duration_seconds", gpu0, 2, &h);
    prom_histogram_write(b, "kgs_sample_duration_seconds", gpu1, 2, &h);
}

static void test_prom_text_exposition_passes_promtool(void **state) {
    prom_buf_t *b = *state;
    const char *promtool = "/usr/bin/promtool";
    if (access(promtool, X_OK) != 0) {
        printf("SKIP: %s not installed (Debian package prometheus)\n", promtool);
        skip();
    }
    write_sample_exposition(b);
    assert_false(b->failed);
    char path[] = "/tmp/kgs_prom_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, b->data, b->len), (ssize_t)b->len);
    close(fd);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "%s check metrics < %s 2>&1", promtool, path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char out[4096];
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    unlink(path);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("promtool check metrics: status %d: %s\n--- input ---\n%s", st, out, b->data);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_prom_text_writes_family_header_with_escaped_help,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_prom_text_escapes_label_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prom_text_places_suffix_and_extra_label, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_prom_text_formats_numbers_shortest_and_exact, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_prom_text_numbers_read_back_exactly, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prom_text_histogram_buckets_are_cumulative, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_prom_text_histogram_counts_nan_only_in_inf, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_prom_text_reset_keeps_capacity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prom_text_latches_allocation_failure_until_reset,
                                        setup, teardown),
        cmocka_unit_test(test_prom_text_free_accepts_null_and_empty),
        cmocka_unit_test_setup_teardown(test_prom_text_exposition_passes_promtool, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
