/* test_kube_client.c - API URL parsing, the in-cluster configuration, and
 * the client's failure path on a real loop (nothing listening). The full
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
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "kube/kube_client.h"
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
    loop_free(loop);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kube_client_parses_https_and_http_ip_urls),
        cmocka_unit_test(test_kube_client_rejects_host_names_and_odd_urls),
        cmocka_unit_test_setup_teardown(test_kube_client_in_cluster_config_names_what_is_missing,
                                        setup_sa, teardown_sa),
        cmocka_unit_test(test_kube_client_reports_connection_refused_and_backs_off),
        cmocka_unit_test(test_kube_client_new_rejects_bad_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
