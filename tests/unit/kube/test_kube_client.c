/* test_kube_client.c - API URL parsing, the in-cluster configuration, the
 * retry backoff and its reset rule (kube_backoff.h), TCP keepalive, and the
 * client's failure path on a real loop (nothing listening). The full
 * list/watch flow runs against a fake API server in integration_kube_client. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "kube/kube_client.h"
#include "kube/kube_backoff.h"
#include "core/err.h"

static void test_kube_client_parses_https_and_http_ip_urls(void **state) {
    (void)state;
    kube_url_t u;
    char err[256];
    assert_int_equal(kube_url_parse("https://10.96.0.1:443", &u, err, sizeof err), 0);
    assert_true(u.https);
    assert_string_equal(u.host, "10.96.0.1");
    assert_int_equal(u.port, 443);
    assert_int_equal(u.family, AF_INET);
    assert_string_equal(u.host_header, "10.96.0.1:443");
    assert_int_equal(kube_url_parse("https://10.0.0.1", &u, err, sizeof err), 0);
    assert_int_equal(u.port, 443);
    assert_int_equal(kube_url_parse("http://127.0.0.1:8080/", &u, err, sizeof err), 0);
    assert_false(u.https);
    assert_int_equal(u.port, 8080);
    assert_int_equal(kube_url_parse("http://127.0.0.1", &u, err, sizeof err), 0);
    assert_int_equal(u.port, 80);
    assert_int_equal(kube_url_parse("https://[fd00:10:96::1]:6443", &u, err, sizeof err), 0);
    assert_string_equal(u.host, "fd00:10:96::1");
    assert_int_equal(u.family, AF_INET6);
    assert_int_equal(u.port, 6443);
    assert_string_equal(u.host_header, "[fd00:10:96::1]:6443");
}

static void test_kube_client_rejects_host_names_and_odd_urls(void **state) {
    (void)state;
    kube_url_t u;
    char err[256];
    assert_int_equal(kube_url_parse("https://kubernetes.default.svc:443", &u, err, sizeof err),
                     KGS_EINVAL);
    assert_non_null(strstr(err, "is not an IP literal"));
    const char *bad[] = {"ftp://10.0.0.1",         "10.0.0.1:443",          "https://10.0.0.1:0",
                         "https://10.0.0.1:65536", "https://10.0.0.1:44x",  "https://10.0.0.1/api",
                         "https://10.0.0.1?x=1",   "https://user@10.0.0.1", "https://fd00::1",
                         "https://[10.0.0.1]",     "https://[fd00::1",      "https://",
                         "https://10.0.0.1:"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        if (kube_url_parse(bad[i], &u, err, sizeof err) != KGS_EINVAL)
            fail_msg("accepted %s", bad[i]);
        assert_non_null(strstr(err, "API URL"));
    }
    /* --kube-api is refused at start and logged: never with its password */
    const char *secret[] = {"https://u:pw-S3cret@10.0.0.1:6443", "https://u:pw-S3cret@kube:6443",
                            "https://10.0.0.1:6443/?token=pw-S3cret"};
    for (size_t i = 0; i < sizeof secret / sizeof secret[0]; i++) {
        assert_int_equal(kube_url_parse(secret[i], &u, err, sizeof err), KGS_EINVAL);
        if (strstr(err, "pw-S3cret"))
            fail_msg("%s: %s", secret[i], err);
    }
    assert_int_equal(kube_url_parse(secret[0], &u, err, sizeof err), KGS_EINVAL);
    assert_non_null(strstr(err, "API URL \"https://u:***@10.0.0.1:6443\": "));
}

typedef struct {
    char dir[64];
} sa_fixture_t;

static int setup_sa(void **state) {
    sa_fixture_t *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/kgs-sa-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    *state = f;
    return 0;
}

static int teardown_sa(void **state) {
    sa_fixture_t *f = *state;
    char p[128];
    snprintf(p, sizeof p, "%s/token", f->dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/ca.crt", f->dir);
    unlink(p);
    rmdir(f->dir);
    free(f);
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
    return 0;
}

static void touch(const char *dir, const char *name) {
    char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *fp = fopen(p, "w");
    assert_non_null(fp);
    fputs("x\n", fp);
    fclose(fp);
}

static void test_kube_client_in_cluster_config_names_what_is_missing(void **state) {
    sa_fixture_t *f = *state;
    kube_client_config_t cfg;
    char err[512];
    unsetenv("KUBERNETES_SERVICE_HOST");
    assert_int_equal(kube_client_config_in_cluster(&cfg, f->dir, err, sizeof err), KGS_ENOTFOUND);
    assert_non_null(strstr(err, "KUBERNETES_SERVICE_HOST is not set"));
    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    unsetenv("KUBERNETES_SERVICE_PORT");
    assert_int_equal(kube_client_config_in_cluster(&cfg, f->dir, err, sizeof err), KGS_ENOTFOUND);
    assert_non_null(strstr(err, "KUBERNETES_SERVICE_PORT is not set"));
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    assert_int_equal(kube_client_config_in_cluster(&cfg, f->dir, err, sizeof err), KGS_ENOTFOUND);
    assert_non_null(strstr(err, "/token: No such file or directory"));
    touch(f->dir, "token");
    assert_int_equal(kube_client_config_in_cluster(&cfg, f->dir, err, sizeof err), KGS_ENOTFOUND);
    assert_non_null(strstr(err, "/ca.crt: No such file or directory"));
    touch(f->dir, "ca.crt");
    assert_int_equal(kube_client_config_in_cluster(&cfg, f->dir, err, sizeof err), 0);
    assert_string_equal(cfg.api_url, "https://10.96.0.1:443");
    assert_non_null(strstr(cfg.token_file, "/token"));
    assert_non_null(strstr(cfg.ca_file, "/ca.crt"));
    assert_int_equal(cfg.page_limit, 500);
    assert_int_equal(cfg.watch_timeout_s, 300);
    setenv("KUBERNETES_SERVICE_HOST", "fd00:10:96::1", 1);
    assert_int_equal(kube_client_config_in_cluster(&cfg, f->dir, err, sizeof err), 0);
    assert_string_equal(cfg.api_url, "https://[fd00:10:96::1]:443");
    setenv("KUBERNETES_SERVICE_HOST", "kubernetes.default", 1);
    assert_int_equal(kube_client_config_in_cluster(&cfg, f->dir, err, sizeof err), KGS_EINVAL);
    assert_non_null(strstr(err, "not an IP literal"));
    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "https", 1);
    assert_int_equal(kube_client_config_in_cluster(&cfg, f->dir, err, sizeof err), KGS_EINVAL);
}

/* ---- on a loop: connection refused -> backoff, last error, not synced ---- */

typedef struct {
    loop_t *loop;
    kube_client_t *client;
    int synced, changes;
    loop_timer_t stop;
} run_t;

static void on_synced(void *ud) {
    ((run_t *)ud)->synced++;
}
static void on_change(void *ud) {
    ((run_t *)ud)->changes++;
}
static void on_stop(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)t;
    (void)ud;
    loop_stop(loop);
}

static void test_kube_client_reports_connection_refused_and_backs_off(void **state) {
    (void)state;
    /* A port that refuses: bind one, learn its number, close it. */
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = 0};
    sin.sin_addr.s_addr = htonl(0x7f000001);
    assert_int_equal(bind(s, (struct sockaddr *)&sin, sizeof sin), 0);
    socklen_t sl = sizeof sin;
    getsockname(s, (struct sockaddr *)&sin, &sl);
    close(s);

    run_t r = {0};
    char err[256];
    assert_int_equal(loop_new(&r.loop, err, sizeof err), 0);
    kube_client_config_t cfg;
    kube_client_config_init(&cfg);
    snprintf(cfg.api_url, sizeof cfg.api_url, "http://127.0.0.1:%u", ntohs(sin.sin_port));
    cfg.backoff_min_ns = 20 * NS_PER_MS;
    cfg.backoff_max_ns = 40 * NS_PER_MS;
    kube_client_callbacks_t cbs = {.on_synced = on_synced, .on_change = on_change, .user_data = &r};
    assert_int_equal(kube_client_new(r.loop, &cfg, &cbs, NULL, &r.client, err, sizeof err), 0);
    /* Nothing happens synchronously (callback contract). */
    assert_string_equal(kube_client_last_error(r.client), "");
    loop_timer_init(&r.stop, on_stop, &r);
    loop_timer_start(r.loop, &r.stop, clock_mono_now() + 300 * NS_PER_MS);
    assert_int_equal(loop_run(r.loop), 0);
    assert_non_null(strstr(kube_client_last_error(r.client), "connect: Connection refused"));
    assert_non_null(strstr(kube_client_last_error(r.client), "list pods 127.0.0.1:"));
    assert_false(kube_client_synced(r.client, clock_mono_now()));
    kube_client_stats_t st;
    kube_client_stats(r.client, &st);
    /* 300 ms at 20..40 ms per retry: several tries, but bounded. */
    assert_true(st.failures >= 4 && st.failures <= 20);
    assert_int_equal(st.lists, 0);
    assert_int_equal(r.synced, 0);
    assert_int_equal(r.changes, 0);
    kube_client_free(r.client);
    kube_client_free(NULL);
    loop_free(r.loop);
}

static void test_kube_client_new_rejects_bad_config(void **state) {
    (void)state;
    loop_t *loop;
    char err[256];
    assert_int_equal(loop_new(&loop, err, sizeof err), 0);
    kube_client_config_t cfg;
    kube_client_config_init(&cfg);
    snprintf(cfg.api_url, sizeof cfg.api_url, "https://kubernetes.default.svc");
    kube_client_t *c = (kube_client_t *)&cfg;
    assert_int_equal(kube_client_new(loop, &cfg, NULL, NULL, &c, err, sizeof err), KGS_EINVAL);
    assert_null(c);
    snprintf(cfg.api_url, sizeof cfg.api_url, "https://10.0.0.1");
    snprintf(cfg.ca_file, sizeof cfg.ca_file, "/nonexistent/ca.crt");
    assert_int_equal(kube_client_new(loop, &cfg, NULL, NULL, &c, err, sizeof err), KGS_EINVAL);
    assert_non_null(strstr(err, "/nonexistent/ca.crt"));
    /* the watched resource is looked up in the client's table: the error
     * names the bad value and every valid one */
    kube_client_config_init(&cfg);
    snprintf(cfg.api_url, sizeof cfg.api_url, "http://127.0.0.1:1");
    snprintf(cfg.resource, sizeof cfg.resource, "pod");
    assert_int_equal(kube_client_new(loop, &cfg, NULL, NULL, &c, err, sizeof err), KGS_EINVAL);
    assert_string_equal(err, "kube client: resource \"pod\": want pods, nodes or resourceslices");
    assert_null(c);
    /* pods and nodes are held in a pod cache, resourceslices in a slice index */
    static const struct {
        const char *resource;
        bool cache, slices;
    } kinds[] = {{"", true, false},
                 {"pods", true, false},
                 {"nodes", true, false},
                 {"resourceslices", false, true}};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        snprintf(cfg.resource, sizeof cfg.resource, "%s", kinds[i].resource);
        assert_int_equal(kube_client_new(loop, &cfg, NULL, NULL, &c, err, sizeof err), 0);
        assert_int_equal(kube_client_cache(c) != NULL, kinds[i].cache);
        assert_int_equal(kube_client_slices(c) != NULL, kinds[i].slices);
        assert_false(kube_client_synced(c, 0));
        assert_string_equal(kube_client_last_error(c), "");
        kube_client_free(c);
        c = NULL;
    }
    loop_free(loop);
}

/* ---- backoff (pure) ---------------------------------------------------------------- */

static void test_kube_backoff_doubles_to_the_cap_each_delay_in_half_to_full(void **state) {
    (void)state;
    kube_backoff_t b;
    kube_backoff_init(&b, 100 * NS_PER_MS, 1600 * NS_PER_MS, 42);
    const uint64_t base_ms[] = {100, 200, 400, 800, 1600, 1600, 1600, 1600};
    for (size_t i = 0; i < sizeof base_ms / sizeof base_ms[0]; i++) {
        uint64_t base = base_ms[i] * NS_PER_MS;
        uint64_t d = kube_backoff_next(&b);
        if (d < base / 2 || d > base)
            fail_msg("delay %zu: %llu ns, want %llu..%llu", i, (unsigned long long)d,
                     (unsigned long long)(base / 2), (unsigned long long)base);
        assert_int_equal(b.attempts, i + 1);
    }
}

static void test_kube_backoff_is_reproducible_from_its_seed(void **state) {
    (void)state;
    kube_backoff_t a, b, c;
    kube_backoff_init(&a, NS_PER_SEC, 30 * NS_PER_SEC, 7);
    kube_backoff_init(&b, NS_PER_SEC, 30 * NS_PER_SEC, 7);
    kube_backoff_init(&c, NS_PER_SEC, 30 * NS_PER_SEC, 8);
    int differ = 0;
    for (int i = 0; i < 10; i++) {
        uint64_t x = kube_backoff_next(&a);
        assert_true(x == kube_backoff_next(&b));
        differ += x != kube_backoff_next(&c);
    }
    assert_true(differ > 0);
    /* seed 0 is a fixed seed too, not "no jitter" */
    kube_backoff_init(&a, NS_PER_SEC, NS_PER_SEC, 0);
    kube_backoff_init(&b, NS_PER_SEC, NS_PER_SEC, 0);
    assert_true(kube_backoff_next(&a) == kube_backoff_next(&b));
}

static void test_kube_backoff_jitter_spreads_over_the_upper_half_only(void **state) {
    (void)state;
    kube_backoff_t b;
    kube_backoff_init(&b, 1000, 1000, 99); /* base stays 1000 ns */
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t d = kube_backoff_next(&b);
        lo = d < lo ? d : lo;
        hi = d > hi ? d : hi;
    }
    assert_true(lo >= 500 && lo < 600);
    assert_true(hi <= 1000 && hi > 900);
    /* a 1 ns base cannot be halved: the delay is the base */
    kube_backoff_init(&b, 1, 1, 5);
    assert_true(kube_backoff_next(&b) == 1);
}

static void test_kube_backoff_reset_starts_again_from_the_minimum(void **state) {
    (void)state;
    kube_backoff_t b;
    kube_backoff_init(&b, 100, 100000, 3);
    for (int i = 0; i < 11; i++) /* 100 ns doubled 10 times passes the cap */
        kube_backoff_next(&b);
    assert_true(kube_backoff_next(&b) >= 100000 / 2);
    kube_backoff_reset(&b);
    assert_int_equal(b.attempts, 0);
    uint64_t d = kube_backoff_next(&b);
    assert_true(d >= 50 && d <= 100);
}

/* Only a watch that lived resets the backoff: data 30 s or more after it
 * was requested. A LIST is no watch; a watch that got its head and then
 * nothing (last data 0) never lived, however long it stayed open. */
static void test_kube_watch_lived_needs_data_after_the_minimum_life(void **state) {
    (void)state;
    mono_ns_t start = 100 * NS_PER_SEC, life = 30 * NS_PER_SEC;
    assert_false(kube_watch_lived(start, 0, life));
    assert_false(kube_watch_lived(start, start, life));
    assert_false(kube_watch_lived(start, start + life - 1, life));
    assert_true(kube_watch_lived(start, start + life, life));
    assert_true(kube_watch_lived(start, start + 300 * NS_PER_SEC, life));
    assert_false(kube_watch_lived(start, start - 1, life));
}

static void test_kube_client_config_defaults_bound_idle_and_lists(void **state) {
    (void)state;
    kube_client_config_t cfg;
    kube_client_config_init(&cfg);
    assert_true(cfg.watch_idle_ns <= 120 * NS_PER_SEC);
    assert_true(cfg.watch_idle_ns >= 60 * NS_PER_SEC); /* one bookmark period at least */
    assert_true(cfg.watch_min_life_ns == 30 * NS_PER_SEC);
    /* Kubernetes' largest supported cluster is listed whole, in pages of
     * page_limit within the page cap; a chain past it is refused */
    assert_int_equal(cfg.list_max_items, 150000);
    assert_int_equal(cfg.list_max_pages, 1000);
    assert_true((uint64_t)cfg.list_max_pages * cfg.page_limit >= cfg.list_max_items);
    /* the chart's 256 Mi holds the assembled list, the new cache and the
     * old one of the ~20,000 pods docs/operations.md says it fits */
    assert_true(3 * (uint64_t)20000 * sizeof(pod_t) < (uint64_t)200 << 20);
    loop_t *loop;
    char err[256];
    assert_int_equal(loop_new(&loop, err, sizeof err), 0);
    snprintf(cfg.api_url, sizeof cfg.api_url, "http://127.0.0.1:1");
    kube_client_t *c = NULL;
    cfg.watch_idle_ns = 0;
    assert_int_equal(kube_client_new(loop, &cfg, NULL, NULL, &c, err, sizeof err), KGS_EINVAL);
    assert_non_null(strstr(err, "watch_idle_ns"));
    kube_client_config_init(&cfg);
    snprintf(cfg.api_url, sizeof cfg.api_url, "http://127.0.0.1:1");
    cfg.list_max_items = 0;
    assert_int_equal(kube_client_new(loop, &cfg, NULL, NULL, &c, err, sizeof err), KGS_EINVAL);
    assert_non_null(strstr(err, "list_max_items"));
    assert_null(c);
    loop_free(loop);
}

static void test_kube_tcp_keepalive_sets_idle_interval_and_count(void **state) {
    (void)state;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    char err[200];
    assert_int_equal(kube_tcp_keepalive(fd, err, sizeof err), 0);
    int v = 0;
    socklen_t vl = sizeof v;
    assert_int_equal(getsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &v, &vl), 0);
    assert_int_equal(v, 1);
    assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &v, &vl), 0);
    assert_int_equal(v, 30);
    assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &v, &vl), 0);
    assert_int_equal(v, 10);
    assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &v, &vl), 0);
    assert_int_equal(v, 3);
    close(fd);
    assert_int_equal(kube_tcp_keepalive(-1, err, sizeof err), KGS_EIO);
    assert_non_null(strstr(err, "setsockopt SO_KEEPALIVE 1: Bad file descriptor"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kube_client_parses_https_and_http_ip_urls),
        cmocka_unit_test(test_kube_client_rejects_host_names_and_odd_urls),
        cmocka_unit_test_setup_teardown(test_kube_client_in_cluster_config_names_what_is_missing,
                                        setup_sa, teardown_sa),
        cmocka_unit_test(test_kube_client_reports_connection_refused_and_backs_off),
        cmocka_unit_test(test_kube_client_new_rejects_bad_config),
        cmocka_unit_test(test_kube_backoff_doubles_to_the_cap_each_delay_in_half_to_full),
        cmocka_unit_test(test_kube_backoff_is_reproducible_from_its_seed),
        cmocka_unit_test(test_kube_backoff_jitter_spreads_over_the_upper_half_only),
        cmocka_unit_test(test_kube_backoff_reset_starts_again_from_the_minimum),
        cmocka_unit_test(test_kube_watch_lived_needs_data_after_the_minimum_life),
        cmocka_unit_test(test_kube_client_config_defaults_bound_idle_and_lists),
        cmocka_unit_test(test_kube_tcp_keepalive_sets_idle_interval_and_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
