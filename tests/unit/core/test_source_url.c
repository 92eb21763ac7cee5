/* test_source_url.c - engine URLs and Redis addresses: every accepted form
 * and its defaults, every refusal and its message, and the SSRF guard on
 * names and on addresses in all their IPv4 and IPv6 spellings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cmocka.h>

#include "core/err.h"
#include "core/source_url.h"

/* ---- helpers --------------------------------------------------------------- */

#define HTTP_ONLY ((1u << SOURCE_SCHEME_HTTP) | (1u << SOURCE_SCHEME_HTTPS))
#define ALL_SCHEMES 0xfu

static const source_url_t zero_url;     /* what a failed parse leaves behind */
static const source_url_ref_t zero_ref; /* likewise for the compact form */

/* Every parse here is done twice, the compact way too: the ref parse must
 * agree on the outcome and the message, and a ref expanded from the text
 * (from a copy of it, as the trigger config keeps it) must give the very
 * bytes of the full parse. */
static void expect_ref_agrees(const char *text, int rc, const char *err, const source_url_ref_t *r,
                              int rrc, const char *rerr, const source_url_t *u) {
    if (rrc != rc || strcmp(err, rerr) != 0)
        fail_msg("%s: full parse %d \"%s\", compact parse %d \"%s\"", text ? text : "(null)", rc,
                 err, rrc, rerr);
    if (rc != 0) {
        assert_memory_equal(r, &zero_ref, sizeof *r);
        return;
    }
    static char copy[70000];
    snprintf(copy, sizeof copy, "%s", text);
    source_url_t e;
    memset(&e, 0x5a, sizeof e);
    source_url_expand(copy, r, &e);
    assert_memory_equal(&e, u, sizeof e);
}

static void check_ref(const char *url, unsigned allowed, int rc, const char *err,
                      const source_url_t *u) {
    source_url_ref_t r;
    char rerr[512] = "";
    memset(&r, 0x5a, sizeof r);
    int rrc = source_url_parse_ref(url, allowed, &r, rerr, sizeof rerr);
    expect_ref_agrees(url, rc, err, &r, rrc, rerr, u);
}

static source_url_t parse_ok(const char *url, unsigned allowed) {
    source_url_t u;
    char err[512] = "";
    memset(&u, 0x5a, sizeof u); /* sentinel */
    int rc = source_url_parse(url, allowed, &u, err, sizeof err);
    if (rc != 0)
        fail_msg("expected %s to parse, got %d: %s", url, rc, err);
    check_ref(url, allowed, rc, err, &u);
    return u;
}

#define URL_OK(url) parse_ok(url, HTTP_ONLY)

/* Expects url to be refused with both needles (NULL: skip) in the message,
 * the struct zeroed, and the message free of `secret` (NULL: skip). */
static void expect_refused(const char *url, unsigned allowed, const char *needle1,
                           const char *needle2, const char *secret) {
    source_url_t u;
    char err[512] = "";
    memset(&u, 0x5a, sizeof u);
    int rc = source_url_parse(url, allowed, &u, err, sizeof err);
    if (rc != KGS_EINVAL)
        fail_msg("expected KGS_EINVAL for %s, got %d", url ? url : "(null)", rc);
    if (!err[0])
        fail_msg("%s: empty message", url);
    if (needle1 && !strstr(err, needle1))
        fail_msg("%s: message lacks \"%s\": %s", url, needle1, err);
    if (needle2 && !strstr(err, needle2))
        fail_msg("%s: message lacks \"%s\": %s", url, needle2, err);
    if (secret && strstr(err, secret))
        fail_msg("%s: message repeats \"%s\": %s", url, secret, err);
    assert_memory_equal(&u, &zero_url, sizeof u);
    check_ref(url, allowed, rc, err, &u);
}

#define REFUSED(url, n1, n2) expect_refused(url, HTTP_ONLY, n1, n2, NULL)

static const char *guard4(const char *ip) {
    struct sockaddr_in in;
    memset(&in, 0, sizeof in);
    in.sin_family = AF_INET;
    if (inet_pton(AF_INET, ip, &in.sin_addr) != 1)
        fail_msg("bad test address %s", ip);
    return source_guard_addr((const struct sockaddr *)&in, sizeof in);
}

static const char *guard6(const char *ip) {
    struct sockaddr_in6 in6;
    memset(&in6, 0, sizeof in6);
    in6.sin6_family = AF_INET6;
    if (inet_pton(AF_INET6, ip, &in6.sin6_addr) != 1)
        fail_msg("bad test address %s", ip);
    return source_guard_addr((const struct sockaddr *)&in6, sizeof in6);
}

static void expect_guarded(const char *why, const char *ip, const char *needle) {
    if (!why)
        fail_msg("%s: expected refusal", ip);
    if (needle && !strstr(why, needle))
        fail_msg("%s: reason lacks \"%s\": %s", ip, needle, why);
}

#define REFUSED4(ip, needle) expect_guarded(guard4(ip), ip, needle)
#define REFUSED6(ip, needle) expect_guarded(guard6(ip), ip, needle)
#define ALLOWED4(ip)                                                                               \
    do {                                                                                           \
        const char *why_ = guard4(ip);                                                             \
        if (why_)                                                                                  \
            fail_msg("%s: expected allowed, got %s", ip, why_);                                    \
    } while (0)
#define ALLOWED6(ip)                                                                               \
    do {                                                                                           \
        const char *why_ = guard6(ip);                                                             \
        if (why_)                                                                                  \
            fail_msg("%s: expected allowed, got %s", ip, why_);                                    \
    } while (0)

static source_url_t addr_ok(const char *addr, bool *tls, int *db) {
    source_url_t u;
    char err[512] = "";
    memset(&u, 0x5a, sizeof u);
    bool tls0 = tls ? *tls : false;
    int db0 = db ? *db : 0;
    int rc = source_addr_parse(addr, &u, tls, db, err, sizeof err);
    if (rc != 0)
        fail_msg("expected %s to parse, got %d: %s", addr, rc, err);
    source_url_ref_t r;
    char rerr[512] = "";
    bool rtls = tls0;
    int rdb = db0;
    memset(&r, 0x5a, sizeof r);
    int rrc =
        source_addr_parse_ref(addr, &r, tls ? &rtls : NULL, db ? &rdb : NULL, rerr, sizeof rerr);
    expect_ref_agrees(addr, rc, err, &r, rrc, rerr, &u);
    if (tls)
        assert_int_equal(rtls, *tls);
    if (db)
        assert_int_equal(rdb, *db);
    return u;
}

static void expect_addr_refused(const char *addr, const char *needle, const char *secret) {
    source_url_t u;
    char err[512] = "";
    bool tls = true;
    int db = 7;
    memset(&u, 0x5a, sizeof u);
    int rc = source_addr_parse(addr, &u, &tls, &db, err, sizeof err);
    if (rc != KGS_EINVAL)
        fail_msg("expected KGS_EINVAL for %s, got %d", addr ? addr : "(null)", rc);
    if (!err[0])
        fail_msg("%s: empty message", addr);
    if (needle && !strstr(err, needle))
        fail_msg("%s: message lacks \"%s\": %s", addr, needle, err);
    if (secret && strstr(err, secret))
        fail_msg("%s: message repeats \"%s\": %s", addr, secret, err);
    assert_memory_equal(&u, &zero_url, sizeof u);
    assert_true(tls);
    assert_int_equal(db, 7);
    source_url_ref_t r;
    char rerr[512] = "";
    memset(&r, 0x5a, sizeof r);
    int rrc = source_addr_parse_ref(addr, &r, &tls, &db, rerr, sizeof rerr);
    expect_ref_agrees(addr, rc, err, &r, rrc, rerr, &u);
    assert_true(tls);
    assert_int_equal(db, 7);
}

/* ---- accepted URLs --------------------------------------------------------- */

static void test_source_url_parses_http_name_port_and_path(void **state) {
    (void)state;
    source_url_t u = URL_OK("http://vllm.default.svc:8000/metrics");
    assert_int_equal(u.scheme, SOURCE_SCHEME_HTTP);
    assert_string_equal(u.host, "vllm.default.svc");
    assert_false(u.host_is_ip);
    assert_int_equal(u.family, AF_UNSPEC);
    assert_int_equal(u.port, 8000);
    assert_string_equal(u.path, "/metrics");
    assert_string_equal(u.host_header, "vllm.default.svc:8000");
}

static void test_source_url_fills_default_ports_and_root_path(void **state) {
    (void)state;
    source_url_t u = URL_OK("http://vllm");
    assert_int_equal(u.port, 80);
    assert_string_equal(u.path, "/");
    assert_string_equal(u.host_header, "vllm:80");
    u = URL_OK("https://triton.ml.svc.cluster.local/");
    assert_int_equal(u.scheme, SOURCE_SCHEME_HTTPS);
    assert_int_equal(u.port, 443);
    assert_string_equal(u.path, "/");
    assert_string_equal(u.host_header, "triton.ml.svc.cluster.local:443");
    u = parse_ok("redis://cache", ALL_SCHEMES);
    assert_int_equal(u.scheme, SOURCE_SCHEME_REDIS);
    assert_int_equal(u.port, 6379);
    assert_string_equal(u.path, "");
    u = parse_ok("rediss://cache/2", ALL_SCHEMES);
    assert_int_equal(u.scheme, SOURCE_SCHEME_REDISS);
    assert_int_equal(u.port, 6379);
    assert_string_equal(u.path, "");
    assert_string_equal(u.host_header, "cache:6379");
}

static void test_source_url_lower_cases_host_and_scheme_but_not_path(void **state) {
    (void)state;
    source_url_t u = URL_OK("HTTP://VLLM.Example.COM:8000/Metrics?Format=Text");
    assert_int_equal(u.scheme, SOURCE_SCHEME_HTTP);
    assert_string_equal(u.host, "vllm.example.com");
    assert_string_equal(u.path, "/Metrics?Format=Text");
    assert_string_equal(u.host_header, "vllm.example.com:8000");
    u = URL_OK("hTTpS://TGI");
    assert_int_equal(u.scheme, SOURCE_SCHEME_HTTPS);
    assert_string_equal(u.host, "tgi");
}

static void test_source_url_keeps_the_query(void **state) {
    (void)state;
    assert_string_equal(URL_OK("http://h:8002/metrics?format=text&x=1").path,
                        "/metrics?format=text&x=1");
    assert_string_equal(URL_OK("http://h?x=1").path, "/?x=1");
    assert_string_equal(URL_OK("http://h:9/?").path, "/?");
    assert_string_equal(URL_OK("http://h/a/b/?q=/x?y").path, "/a/b/?q=/x?y");
    assert_string_equal(URL_OK("http://h/federate?match%5B%5D=%7Bjob%3D%22vllm%22%7D").path,
                        "/federate?match%5B%5D=%7Bjob%3D%22vllm%22%7D");
    assert_string_equal(URL_OK("http://h/-._~!$&'()*+,;=:@").path, "/-._~!$&'()*+,;=:@");
}

static void test_source_url_parses_ipv4_literals(void **state) {
    (void)state;
    source_url_t u = URL_OK("http://10.0.0.5:9400/metrics");
    assert_true(u.host_is_ip);
    assert_int_equal(u.family, AF_INET);
    assert_string_equal(u.host, "10.0.0.5");
    assert_string_equal(u.host_header, "10.0.0.5:9400");
    u = URL_OK("http://127.0.0.1:8000/metrics"); /* a sidecar engine */
    assert_string_equal(u.host, "127.0.0.1");
    assert_string_equal(URL_OK("http://0.1.2.3.example/").host, "0.1.2.3.example");
    assert_string_equal(URL_OK("http://255.255.255.254/").host, "255.255.255.254");
    assert_string_equal(URL_OK("http://192.168.0.10/").host, "192.168.0.10");
}

static void test_source_url_parses_ipv6_literals_into_canonical_form(void **state) {
    (void)state;
    source_url_t u = URL_OK("http://[::1]:8000/metrics");
    assert_true(u.host_is_ip);
    assert_int_equal(u.family, AF_INET6);
    assert_string_equal(u.host, "::1");
    assert_string_equal(u.host_header, "[::1]:8000");
    u = URL_OK("http://[FD12:3456:0:0::0001]/");
    assert_string_equal(u.host, "fd12:3456::1");
    assert_string_equal(u.host_header, "[fd12:3456::1]:80");
    u = URL_OK("https://[2001:db8::1]");
    assert_string_equal(u.host_header, "[2001:db8::1]:443");
    assert_string_equal(u.path, "/");
    u = URL_OK("http://[::ffff:10.1.2.3]:8080/m");
    assert_string_equal(u.host, "::ffff:10.1.2.3");
    assert_string_equal(u.host_header, "[::ffff:10.1.2.3]:8080");
    u = URL_OK("http://[fd00:ec2::253]/"); /* next to AWS IMDS, but an ordinary ULA */
    assert_string_equal(u.host, "fd00:ec2::253");
}

static void test_source_url_accepts_fqdn_underscores_and_port_edges(void **state) {
    (void)state;
    assert_string_equal(URL_OK("http://vllm.ns.svc.cluster.local.:8000/").host,
                        "vllm.ns.svc.cluster.local.");
    assert_string_equal(URL_OK("http://vllm.ns.svc.cluster.local.:8000/").host_header,
                        "vllm.ns.svc.cluster.local.:8000");
    assert_string_equal(URL_OK("http://my_engine:8000/").host, "my_engine"); /* compose names */
    assert_string_equal(URL_OK("http://1password.com/").host, "1password.com");
    assert_string_equal(URL_OK("http://0xfg/").host, "0xfg"); /* not a number to inet_aton */
    assert_int_equal(URL_OK("http://h:1/").port, 1);
    assert_int_equal(URL_OK("http://h:65535/").port, 65535);
    assert_int_equal(URL_OK("http://h:08000/").port, 8000);
    char label[80];
    memset(label, 'a', 63);
    label[63] = '\0';
    char url[128];
    snprintf(url, sizeof url, "http://%s.b/", label);
    assert_string_equal(URL_OK(url).host + 63, ".b");
}

static void test_source_url_accepts_the_longest_host_and_path(void **state) {
    (void)state;
    /* 253 characters: four labels of 62 and one of 1, with dots */
    char host[SOURCE_HOST_MAX + 2];
    size_t o = 0;
    for (int l = 0; l < 4; l++) {
        memset(host + o, 'a' + l, 62);
        o += 62;
        host[o++] = '.';
    }
    host[o++] = 'z';
    host[o] = '\0';
    assert_int_equal(strlen(host), SOURCE_HOST_MAX);
    char url[SOURCE_HOST_MAX + SOURCE_PATH_MAX + 32];
    snprintf(url, sizeof url, "http://%s:65535/", host);
    source_url_t u = URL_OK(url);
    assert_string_equal(u.host, host);
    assert_int_equal(strlen(u.host_header), SOURCE_HOST_MAX + 6);

    char path[SOURCE_PATH_MAX + 2];
    path[0] = '/';
    memset(path + 1, 'p', SOURCE_PATH_MAX - 1);
    path[SOURCE_PATH_MAX] = '\0';
    snprintf(url, sizeof url, "http://h%s", path);
    assert_int_equal(strlen(URL_OK(url).path), SOURCE_PATH_MAX);
    path[SOURCE_PATH_MAX] = 'p';
    path[SOURCE_PATH_MAX + 1] = '\0';
    snprintf(url, sizeof url, "http://h%s", path);
    REFUSED(url, "1025 bytes", "1024");
    snprintf(url, sizeof url, "http://h?%s", path + 3); /* '?' and 1022 bytes, plus "/" */
    assert_int_equal(strlen(URL_OK(url).path), SOURCE_PATH_MAX);
    snprintf(url, sizeof url, "http://h?%s", path + 2);
    REFUSED(url, "1025 bytes", NULL);
}

/* ---- refused URLs ---------------------------------------------------------- */

static void test_source_url_refuses_other_schemes_naming_the_accepted_ones(void **state) {
    (void)state;
    REFUSED("ftp://h/metrics", "\"ftp\"", "use http:// or https://");
    REFUSED("redis://h:6379", "\"redis\"", "http:// or https://");
    REFUSED("file:///etc/passwd", "\"file\"", NULL);
    REFUSED("gopher://h:6379/_INFO", "\"gopher\"", NULL);
    expect_refused("https://h", 1u << SOURCE_SCHEME_HTTP, "\"https\"", "use http://", NULL);
    expect_refused("http://h", 1u << SOURCE_SCHEME_REDIS | 1u << SOURCE_SCHEME_REDISS,
                   "use redis:// or rediss://", NULL, NULL);
    expect_refused("ws://h", ALL_SCHEMES, "http://, https://, redis:// or rediss://", NULL, NULL);
    expect_refused("http://h", 0, "no URL scheme", NULL, NULL);
    REFUSED("h:8000/metrics", "not an absolute URL", "http:// or https://");
    REFUSED("http:/h/metrics", "not an absolute URL", NULL);
    REFUSED("http:h", "not an absolute URL", NULL);
    REFUSED("//h/metrics", "not an absolute URL", NULL);
    REFUSED("://h/", "not an absolute URL", NULL);
    REFUSED("ht!tp://h/", "not an absolute URL", NULL);
    REFUSED("", "empty URL", NULL);
    expect_refused(NULL, HTTP_ONLY, "empty URL", NULL, NULL);
}

static void test_source_url_refuses_credentials_without_repeating_them(void **state) {
    (void)state;
    expect_refused("http://admin:s3cr3t@vllm:8000/metrics", HTTP_ONLY, "credentials", "Secret",
                   "s3cr3t");
    expect_refused("http://s3cr3t@vllm/", HTTP_ONLY, "credentials", NULL, "s3cr3t");
    expect_refused("http://@vllm/", HTTP_ONLY, "credentials", NULL, NULL);
    /* the classic parser differential: we never pick a host out of this */
    expect_refused("http://evil.example\\@169.254.169.254/", HTTP_ONLY, "credentials", NULL, NULL);
    expect_refused("http://1.2.3.4:80@169.254.169.254/", HTTP_ONLY, "credentials", NULL, NULL);
    /* a password with '/' ends the authority early: the "port" is secret */
    expect_refused("http://user:s3cr3t/x@h/", HTTP_ONLY, "bad port", NULL, "s3cr3t");
    expect_refused("redis://:s3cr3t@cache:6379/0", ALL_SCHEMES, "credentials", NULL, "s3cr3t");
}

static void test_source_url_refuses_fragments(void **state) {
    (void)state;
    REFUSED("http://h/metrics#x", "fragment", NULL);
    REFUSED("http://h#", "fragment", NULL);
    REFUSED("http://169.254.169.254#@h/", "fragment", NULL);
}

static void test_source_url_refuses_an_empty_host(void **state) {
    (void)state;
    REFUSED("http://", "empty host", NULL);
    REFUSED("http:///metrics", "empty host", NULL);
    REFUSED("http://:8000/metrics", "empty host", NULL);
    REFUSED("http://?x", "empty host", NULL);
    REFUSED("http://[]/", "empty host", NULL);
    REFUSED("http://[]:80/", "empty host", NULL);
}

static void test_source_url_refuses_bad_ports(void **state) {
    (void)state;
    REFUSED("http://h:0/", "bad port", "1-65535");
    REFUSED("http://h:65536/", "bad port", NULL);
    REFUSED("http://h:99999999999999999999/", "bad port", NULL);
    REFUSED("http://h:8a/", "bad port", "digits");
    REFUSED("http://h:-1/", "bad port", NULL);
    REFUSED("http://h:+80/", "bad port", NULL);
    REFUSED("http://h:0x50/", "bad port", NULL);
    REFUSED("http://h:/", "empty port", NULL);
    REFUSED("http://[::1]:/", "empty port", NULL);
    REFUSED("http://[::1]:0/", "bad port", NULL);
    REFUSED("http://h:80:81/", "brackets", NULL);
}

static void test_source_url_refuses_ipv6_zone_ids_and_bad_brackets(void **state) {
    (void)state;
    REFUSED("http://[fe80::1%25eth0]:8000/", "zone", NULL);
    REFUSED("http://[fd00::1%eth0]/", "zone", NULL);
    REFUSED("http://[1.2.3.4]/", "not an IPv6 address", NULL);
    REFUSED("http://[vllm]/", "not an IPv6 address", NULL);
    REFUSED("http://[::1/", "missing ']'", NULL);
    REFUSED("http://[::1]x/", "after ']'", NULL);
    REFUSED("http://[::1]]/", "after ']'", NULL);
    REFUSED("http://[0000:0000:0000:0000:0000:0000:0000:0000:1]/", "not an IPv6 address", NULL);
    REFUSED("http://::1/", "brackets", NULL);
    REFUSED("http://fe80::1:8000/", "brackets", NULL);
}

static void test_source_url_refuses_non_canonical_ipv4(void **state) {
    (void)state;
    static const char *const bad[] = {
        "http://0x7f.1/",
        "http://127.1/",
        "http://017.0.0.1/",
        "http://2130706433/",
        "http://0x7f000001/",
        "http://0177.0.0.1/",
        "http://127.0.0.1./",
        "http://1.2.3.4.5/",
        "http://256.1.1.1/",
        "http://1.2.3.0x4/",
        "http://01.2.3.4/",
        "http://1.2.3.04/",
        "http://169.254.43518/",
        "http://0/",
        "http://0x/",
        "http://a.b.1/",
        "http://1..2.3/",
        "http://1.2.3.1234/",
        "http://0xA9.0xFE.0xA9.0xFE/",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        REFUSED(bad[i], "not a canonical IPv4 address", "a.b.c.d");
}

static void test_source_url_refuses_spaces_control_and_non_ascii_bytes(void **state) {
    (void)state;
    REFUSED("http://h /metrics", "space byte 0x20 at offset 8", NULL);
    REFUSED(" http://h/", "space", "offset 0");
    REFUSED("http://h/metrics\t", "control byte 0x09 at offset 16", NULL);
    REFUSED("http://h\r\nHost: evil/", "control byte 0x0d at offset 8", NULL);
    REFUSED("http://h/\x7f", "non-ASCII byte 0x7f", NULL);
    REFUSED("http://h\xc3\xa9.example/", "non-ASCII byte 0xc3 at offset 8", "xn--");
    REFUSED("http://h/caf\xc3\xa9", "non-ASCII", NULL);
}

static void test_source_url_refuses_invalid_host_names(void **state) {
    (void)state;
    REFUSED("http://-h/", "not a valid DNS name", NULL);
    REFUSED("http://h-/", "not a valid DNS name", NULL);
    REFUSED("http://_svc/", "not a valid DNS name", NULL);
    REFUSED("http://a..b/", "not a valid DNS name", NULL);
    REFUSED("http://.a/", "not a valid DNS name", NULL);
    REFUSED("http://a../", "not a valid DNS name", NULL);
    REFUSED("http://./", "not a valid DNS name", NULL);
    REFUSED("http://a!b/", "'!'", "not a valid DNS name");
    REFUSED("http://a\\b/", "'\\'", NULL);
    REFUSED("http://a*b/", "'*'", NULL);
    REFUSED("http://a\"b/", "\"a\\\"b\"", NULL); /* quoted with kgs_quote */
    char url[600];
    char label[65];
    memset(label, 'a', 64);
    label[64] = '\0';
    snprintf(url, sizeof url, "http://%s/", label);
    REFUSED(url, "not a valid DNS name", "1-63");
    char host[300];
    memset(host, 'a', 254);
    for (int i = 50; i < 254; i += 50)
        host[i] = '.';
    host[254] = '\0';
    snprintf(url, sizeof url, "http://%s/", host);
    REFUSED(url, "longer than 253", NULL);
    host[253] = '.'; /* 253 plus a trailing dot does not fit either */
    snprintf(url, sizeof url, "http://%s/", host);
    REFUSED(url, "longer than 253", NULL);
}

static void test_source_url_refuses_percent_encoding_in_the_host(void **state) {
    (void)state;
    REFUSED("http://%6c%6fcalhost/", "percent-encoding", NULL);
    REFUSED("http://169.254.169.254%2e/", "percent-encoding", NULL);
    REFUSED("http://h%2F@x/", "credentials", NULL);
}

static void test_source_url_refuses_bad_path_bytes_and_escapes(void **state) {
    (void)state;
    REFUSED("http://h/a%zz", "'%' at offset 2", "two hex digits");
    REFUSED("http://h/a%4", "'%' at offset 2", NULL);
    REFUSED("http://h/a%", "'%' at offset 2", NULL);
    REFUSED("http://h/federate?match[]=x", "'['", "%5B");
    REFUSED("http://h/a\\b", "'\\'", "%5C");
    REFUSED("http://h/a\"b", "%22", NULL);
    REFUSED("http://h/{x}", "%7B", NULL);
    REFUSED("http://h/a|b", "%7C", NULL);
    REFUSED("http://h/a^b", "%5E", NULL);
    REFUSED("http://h/a`b", "%60", NULL);
    REFUSED("http://h/<b>", "%3C", NULL);
    assert_string_equal(URL_OK("http://h/a%41%7e").path, "/a%41%7e");
}

static void test_source_url_refuses_guarded_names(void **state) {
    (void)state;
    static const char *const bad[] = {
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://METADATA.GOOGLE.INTERNAL./",
        "http://metadata/computeMetadata/v1/",
        "http://Metadata./",
        "http://metadata.goog/",
        "http://instance-data/latest/meta-data/",
        "http://instance-data.ec2.internal/",
        "http://x.metadata.google.internal/",
        "http://a.b.Metadata.Google.Internal:80/",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        REFUSED(bad[i], "is not allowed", "cloud metadata service name");
    assert_string_equal(URL_OK("http://metadata.ns.svc:8080/").host, "metadata.ns.svc");
    assert_string_equal(URL_OK("http://metadata-server/").host, "metadata-server");
    assert_string_equal(URL_OK("http://notmetadata.google.internal/").host,
                        "notmetadata.google.internal");
    assert_string_equal(URL_OK("http://instance-data.ec2.internal.example/").host,
                        "instance-data.ec2.internal.example");
}

static void test_source_url_refuses_guarded_ip_literals(void **state) {
    (void)state;
    REFUSED("http://169.254.169.254/latest/meta-data/", "\"169.254.169.254\" is not allowed",
            "link-local address (169.254.0.0/16)");
    REFUSED("http://169.254.170.2/v2/credentials", "link-local", NULL);
    REFUSED("http://100.100.100.200/latest/meta-data/", "Alibaba", NULL);
    REFUSED("http://192.0.0.192/latest/", "Oracle", NULL);
    REFUSED("http://168.63.129.16/machine", "WireServer", NULL);
    REFUSED("http://0.0.0.0:8000/", "unspecified", NULL);
    REFUSED("http://224.0.0.1/", "multicast", NULL);
    REFUSED("http://255.255.255.255/", "broadcast", NULL);
    REFUSED("http://[fd00:ec2::254]/latest/meta-data/", "AWS instance metadata", NULL);
    REFUSED("http://[FD00:EC2:0::254]/", "\"fd00:ec2::254\"", NULL);
    REFUSED("http://[fd00:ec2::23]/", "EKS Pod Identity", NULL);
    REFUSED("http://[fd20:ce::254]/", "Google Compute Engine", NULL);
    REFUSED("http://[fd00:c1::a9fe:a9fe]/", "Oracle", NULL);
    REFUSED("http://[::ffff:169.254.169.254]/", "IPv4-mapped", "link-local");
    REFUSED("http://[::ffff:a9fe:a9fe]/", "IPv4-mapped", NULL);
    REFUSED("http://[64:ff9b::a9fe:a9fe]/", "NAT64", "link-local");
    REFUSED("http://[64:ff9b::100.100.100.200]/", "NAT64", "Alibaba");
    REFUSED("http://[::169.254.169.254]/", "IPv4-compatible", NULL);
    REFUSED("http://[fe80::1]/", "link-local address (fe80::/10)", NULL);
    REFUSED("http://[::]/", "unspecified address (::)", NULL);
    REFUSED("http://[ff02::1]/", "multicast", NULL);
    expect_refused("redis://169.254.169.254:6379", ALL_SCHEMES, "link-local", NULL, NULL);
}

static void test_source_url_accepts_null_and_tiny_error_buffers(void **state) {
    (void)state;
    source_url_t u;
    assert_int_equal(source_url_parse("ftp://h", HTTP_ONLY, &u, NULL, 0), KGS_EINVAL);
    assert_int_equal(source_url_parse("ftp://h", HTTP_ONLY, &u, NULL, 64), KGS_EINVAL);
    char small[5] = "xxxx";
    assert_int_equal(source_url_parse("ftp://h", HTTP_ONLY, &u, small, sizeof small), KGS_EINVAL);
    assert_int_equal(strlen(small), 4);
    char one[1] = {'x'};
    assert_int_equal(source_url_parse("ftp://h", HTTP_ONLY, &u, one, sizeof one), KGS_EINVAL);
    assert_int_equal(one[0], '\0');
    char err[64];
    assert_int_equal(source_url_parse("http://h", HTTP_ONLY, NULL, err, sizeof err), KGS_EINVAL);
    assert_int_equal(source_addr_parse("h", NULL, NULL, NULL, err, sizeof err), KGS_EINVAL);
}

static void test_source_url_rebuilt_from_its_parts_parses_to_identical_bytes(void **state) {
    (void)state;
    static const char *const urls[] = {
        "http://vllm:8000/metrics", "HTTPS://Triton.NS.svc.:8002/metrics?a=b",
        "http://[FD12::0:1]:9/x",   "http://[::ffff:10.0.0.1]",
        "http://10.2.3.4?q",        "redis://cache:6380/3",
        "rediss://[2001:db8::7]",
    };
    for (size_t i = 0; i < sizeof urls / sizeof urls[0]; i++) {
        source_url_t a = parse_ok(urls[i], ALL_SCHEMES);
        static const char *const names[] = {"http", "https", "redis", "rediss"};
        char rebuilt[SOURCE_HOST_MAX + SOURCE_PATH_MAX + 32];
        snprintf(rebuilt, sizeof rebuilt, a.family == AF_INET6 ? "%s://[%s]:%u%s" : "%s://%s:%u%s",
                 names[a.scheme], a.host, (unsigned)a.port, a.path);
        source_url_t b = parse_ok(rebuilt, ALL_SCHEMES);
        assert_memory_equal(&a, &b, sizeof a);
    }
}

/* ---- Redis addresses --------------------------------------------------------- */

static void test_source_addr_parses_bare_addresses_leaving_tls_and_db(void **state) {
    (void)state;
    bool tls = true;
    int db = 9;
    source_url_t u = addr_ok("redis-master.queue:6380", &tls, &db);
    assert_int_equal(u.scheme, SOURCE_SCHEME_REDIS);
    assert_string_equal(u.host, "redis-master.queue");
    assert_int_equal(u.port, 6380);
    assert_string_equal(u.path, "");
    assert_string_equal(u.host_header, "redis-master.queue:6380");
    assert_true(tls);
    assert_int_equal(db, 9);

    u = addr_ok("Redis", &tls, &db);
    assert_string_equal(u.host, "redis");
    assert_int_equal(u.port, 6379);
    u = addr_ok("[::1]:6380", &tls, &db);
    assert_string_equal(u.host, "::1");
    assert_int_equal(u.family, AF_INET6);
    assert_string_equal(u.host_header, "[::1]:6380");
    u = addr_ok("[fd00::5]", &tls, &db);
    assert_int_equal(u.port, 6379);
    assert_string_equal(u.host_header, "[fd00::5]:6379");
    u = addr_ok("10.0.0.7", &tls, &db);
    assert_int_equal(u.family, AF_INET);
    assert_string_equal(u.host_header, "10.0.0.7:6379");
    u = addr_ok("127.0.0.1:6379", NULL, NULL);
    assert_string_equal(u.host, "127.0.0.1");
    assert_true(tls);
    assert_int_equal(db, 9);
}

static void test_source_addr_parses_redis_urls_setting_tls_and_db(void **state) {
    (void)state;
    bool tls = true;
    int db = 9;
    source_url_t u = addr_ok("redis://cache:6380/3", &tls, &db);
    assert_int_equal(u.scheme, SOURCE_SCHEME_REDIS);
    assert_int_equal(u.port, 6380);
    assert_string_equal(u.path, "");
    assert_false(tls);
    assert_int_equal(db, 3);

    u = addr_ok("rediss://cache/15", &tls, &db);
    assert_int_equal(u.scheme, SOURCE_SCHEME_REDISS);
    assert_int_equal(u.port, 6379);
    assert_true(tls);
    assert_int_equal(db, 15);

    db = 9;
    tls = false;
    u = addr_ok("REDISS://[2001:db8::2]:7000", &tls, &db);
    assert_string_equal(u.host_header, "[2001:db8::2]:7000");
    assert_true(tls);
    assert_int_equal(db, 9);
    addr_ok("redis://cache/", &tls, &db);
    assert_false(tls);
    assert_int_equal(db, 9);
    addr_ok("redis://cache/0", &tls, &db);
    assert_int_equal(db, 0);
    addr_ok("rediss://cache/7", NULL, NULL);
}

static void test_source_addr_refuses_bad_addresses(void **state) {
    (void)state;
    expect_addr_refused("", "empty address", NULL);
    expect_addr_refused(NULL, "empty address", NULL);
    expect_addr_refused("redis://cache/16", "0 to 15", NULL);
    expect_addr_refused("redis://cache/99", "0 to 15", NULL);
    expect_addr_refused("redis://cache/01", "0 to 15", NULL);
    expect_addr_refused("redis://cache/123", "database number", NULL);
    expect_addr_refused("redis://cache/abc", "database number", NULL);
    expect_addr_refused("redis://cache/1/2", "database number", NULL);
    expect_addr_refused("redis://cache/-1", "database number", NULL);
    expect_addr_refused("redis://cache/?db=1", "no query", NULL);
    expect_addr_refused("redis://cache?db=1", "no query", NULL);
    expect_addr_refused("redis://cache/1#x", "fragment", NULL);
    expect_addr_refused("http://cache:6379", "use redis:// or rediss://", NULL);
    expect_addr_refused("redis://:s3cr3t@cache:6379/0", "credentials", "s3cr3t");
    expect_addr_refused("default:s3cr3t@cache:6379", "credentials", "s3cr3t");
    expect_addr_refused("cache:6379/0", "redis://host:port/N", NULL);
    expect_addr_refused("cache:6379?db=0", "unexpected '?'", NULL);
    expect_addr_refused("cache#1", "unexpected '#'", NULL);
    expect_addr_refused("::1", "brackets", NULL);
    expect_addr_refused("fd00::5:6379", "brackets", NULL);
    expect_addr_refused("[::1", "missing ']'", NULL);
    expect_addr_refused("cache:0", "bad port", NULL);
    expect_addr_refused("cache:", "empty port", NULL);
    expect_addr_refused(":6379", "empty host", NULL);
    expect_addr_refused("cache 1:6379", "space", NULL);
    expect_addr_refused("127.1:6379", "canonical IPv4", NULL);
    expect_addr_refused("169.254.169.254:6379", "link-local", NULL);
    expect_addr_refused("[::ffff:100.100.100.200]:6379", "Alibaba", NULL);
    expect_addr_refused("metadata:6379", "cloud metadata service name", NULL);
    expect_addr_refused("redis://metadata.google.internal", "cloud metadata", NULL);
}

/* ---- the guard ----------------------------------------------------------------- */

static void test_source_guard_name_refuses_metadata_names_only(void **state) {
    (void)state;
    static const char *const bad[] = {
        "metadata.google.internal",
        "metadata.google.internal.",
        "METADATA.Google.Internal",
        "metadata.goog",
        "Metadata.Goog.",
        "metadata",
        "METADATA.",
        "instance-data",
        "instance-data.",
        "instance-data.ec2.internal",
        "Instance-Data.EC2.Internal.",
        "computeMetadata.metadata.google.internal",
        "a.b.metadata.google.internal.",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *why = source_guard_name(bad[i]);
        if (!why)
            fail_msg("%s: expected refusal", bad[i]);
        assert_non_null(strstr(why, "cloud metadata service name"));
    }
    assert_non_null(source_guard_name(NULL));
    assert_non_null(source_guard_name(""));
    static const char *const good[] = {
        "vllm",
        "metadata.ns.svc",
        "metadata.ns.svc.cluster.local",
        "metadata-svc",
        "mymetadata",
        "metadata.googl",
        "metadata.google.internal.example.com",
        "xmetadata.google.internal",
        "google.internal",
        "instance-data2",
        "ec2.internal",
        ".",
        "metadata..",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        const char *why = source_guard_name(good[i]);
        if (why)
            fail_msg("%s: expected allowed, got %s", good[i], why);
    }
}

static void test_source_guard_addr_refuses_ipv4_metadata_and_special_ranges(void **state) {
    (void)state;
    REFUSED4("169.254.169.254", "link-local address (169.254.0.0/16)");
    REFUSED4("169.254.170.2", "link-local");  /* AWS ECS task metadata */
    REFUSED4("169.254.170.23", "link-local"); /* EKS Pod Identity agent */
    REFUSED4("169.254.0.0", "link-local");
    REFUSED4("169.254.255.255", "link-local");
    REFUSED4("100.100.100.200", "Alibaba Cloud metadata service (100.100.100.200)");
    REFUSED4("192.0.0.192", "Oracle Cloud Classic metadata service (192.0.0.192)");
    REFUSED4("168.63.129.16", "Azure WireServer");
    REFUSED4("0.0.0.0", "unspecified network (0.0.0.0/8)");
    REFUSED4("0.255.255.255", "unspecified");
    REFUSED4("224.0.0.1", "multicast address (224.0.0.0/4)");
    REFUSED4("239.255.255.255", "multicast");
    REFUSED4("255.255.255.255", "broadcast address (255.255.255.255)");
}

static void test_source_guard_addr_allows_loopback_private_and_public_ipv4(void **state) {
    (void)state;
    ALLOWED4("127.0.0.1");
    ALLOWED4("127.255.255.254");
    ALLOWED4("10.0.0.1");
    ALLOWED4("172.16.5.4");
    ALLOWED4("192.168.1.1");
    ALLOWED4("100.64.0.1");
    ALLOWED4("8.8.8.8");
    ALLOWED4("1.0.0.0");
    ALLOWED4("169.253.255.255");
    ALLOWED4("169.255.0.0");
    ALLOWED4("100.100.100.199");
    ALLOWED4("100.100.100.201");
    ALLOWED4("192.0.0.191");
    ALLOWED4("192.0.0.193");
    ALLOWED4("168.63.129.17");
    ALLOWED4("223.255.255.255");
    ALLOWED4("240.0.0.1"); /* class E: GKE can use it for pods */
    ALLOWED4("255.255.255.254");
}

static void test_source_guard_addr_refuses_ipv6_metadata_and_special_ranges(void **state) {
    (void)state;
    REFUSED6("::", "unspecified address (::)");
    REFUSED6("fe80::1", "link-local address (fe80::/10)");
    REFUSED6("febf:ffff::1", "link-local");
    REFUSED6("fe80::a9fe:a9fe", "link-local"); /* OpenStack's IPv6 metadata */
    REFUSED6("ff02::1", "multicast address (ff00::/8)");
    REFUSED6("ff05::2", "multicast");
    REFUSED6("fd00:ec2::254", "AWS instance metadata service (fd00:ec2::254)");
    REFUSED6("fd00:ec2::23", "Amazon EKS Pod Identity agent (fd00:ec2::23)");
    REFUSED6("fd20:ce::254", "Google Compute Engine metadata server (fd20:ce::254)");
    REFUSED6("fd00:c1::a9fe:a9fe", "Oracle Cloud metadata service");
}

/* Each refused IPv4 address, in each IPv6 spelling. */
static void test_source_guard_addr_refuses_ipv4_metadata_in_every_ipv6_form(void **state) {
    (void)state;
    static const struct {
        const char *v4, *hex, *needle;
    } targets[] = {
        {"169.254.169.254", "a9fe:a9fe", "link-local"},
        {"100.100.100.200", "6464:64c8", "Alibaba"},
        {"192.0.0.192", "c000:c0", "Oracle Cloud Classic"},
        {"168.63.129.16", "a83f:8110", "Azure WireServer"},
        {"0.0.0.1", "0:1", "unspecified network"},
        {"224.0.0.251", "e000:fb", "multicast"},
        {"255.255.255.255", "ffff:ffff", "broadcast"},
    };
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
        char a[64];
        snprintf(a, sizeof a, "::ffff:%s", targets[i].v4);
        REFUSED6(a, targets[i].needle);
        REFUSED6(a, "IPv4-mapped");
        snprintf(a, sizeof a, "::ffff:%s", targets[i].hex);
        REFUSED6(a, "IPv4-mapped");
        snprintf(a, sizeof a, "::ffff:0:%s", targets[i].v4);
        REFUSED6(a, "IPv4-translated");
        snprintf(a, sizeof a, "64:ff9b::%s", targets[i].v4);
        REFUSED6(a, targets[i].needle);
        REFUSED6(a, "NAT64");
        if (strcmp(targets[i].v4, "0.0.0.1") != 0) {               /* ambiguous zeros: see the .c */
            snprintf(a, sizeof a, "64:ff9b:1::%s", targets[i].v4); /* local-use, /96 */
            REFUSED6(a, "NAT64");
        }
        if (strcmp(targets[i].v4, "0.0.0.1") != 0) { /* ::1 is loopback */
            snprintf(a, sizeof a, "::%s", targets[i].v4);
            REFUSED6(a, "IPv4-compatible");
        }
        snprintf(a, sizeof a, "2002:%s::1", targets[i].hex);
        REFUSED6(a, targets[i].needle);
        REFUSED6(a, "6to4");
    }
    /* local-use NAT64 with a /64 prefix: the address sits in octets 9-12 */
    REFUSED6("64:ff9b:1:0:a9:fea9:fe00:0", "NAT64");
    /* and with /48: octets 6-7 and 9-10 */
    REFUSED6("64:ff9b:1:a9fe:a9:fe00::", "NAT64");
}

static void test_source_guard_addr_allows_loopback_ula_and_public_ipv6(void **state) {
    (void)state;
    ALLOWED6("::1");
    ALLOWED6("::ffff:127.0.0.1");
    ALLOWED6("::ffff:10.0.0.1");
    ALLOWED6("64:ff9b::8.8.8.8");
    ALLOWED6("64:ff9b::10.1.2.3");
    ALLOWED6("64:ff9b:1::8.8.8.8");
    ALLOWED6("64:ff9b:1:a00:1::");                  /* 10.0.1.0 under /48, 1.0.0.0 under /64 */
    ALLOWED6("64:ff9b:1:a9fe:a9fe::1");             /* octet 8 is not zero: only the /96 reading */
    REFUSED6("64:ff9b:1:0:1:a9fe:a9fe:1", "NAT64"); /* /96: 169.254.0.1 */
    ALLOWED6("2002:0808:0808::1");
    ALLOWED6("::10.0.0.1");
    ALLOWED6("fd00::1");
    ALLOWED6("fd00:ec2::253");
    ALLOWED6("fd00:ec2::1:254");
    ALLOWED6("fd20:ce::253");
    ALLOWED6("fc00::1");
    ALLOWED6("2001:db8::1");
    ALLOWED6("2606:4700:4700::1111");
    ALLOWED6("fec0::1");
}

static void test_source_guard_addr_refuses_incomplete_or_foreign_sockaddrs(void **state) {
    (void)state;
    assert_non_null(source_guard_addr(NULL, 0));
    struct sockaddr_in in;
    memset(&in, 0, sizeof in);
    in.sin_family = AF_INET;
    in.sin_addr.s_addr = htonl(0x0a000001);
    assert_null(source_guard_addr((const struct sockaddr *)&in, sizeof in));
    assert_non_null(source_guard_addr((const struct sockaddr *)&in, sizeof in - 1));
    assert_non_null(source_guard_addr((const struct sockaddr *)&in, 1));
    struct sockaddr_in6 in6;
    memset(&in6, 0, sizeof in6);
    in6.sin6_family = AF_INET6;
    in6.sin6_addr.s6_addr[15] = 1;
    assert_null(source_guard_addr((const struct sockaddr *)&in6, sizeof in6));
    assert_non_null(source_guard_addr((const struct sockaddr *)&in6, sizeof(struct sockaddr_in)));
    struct sockaddr_un un;
    memset(&un, 0, sizeof un);
    un.sun_family = AF_UNIX;
    assert_non_null(source_guard_addr((const struct sockaddr *)&un, sizeof un));
    /* a sockaddr_storage, as getaddrinfo users often pass */
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    memcpy(&ss, &in6, sizeof in6);
    assert_null(source_guard_addr((const struct sockaddr *)&ss, sizeof ss));
    /* an unaligned copy */
    unsigned char raw[sizeof(struct sockaddr_in) + 1];
    in.sin_addr.s_addr = htonl(0xa9fea9fe);
    memcpy(raw + 1, &in, sizeof in);
    assert_non_null(source_guard_addr((const struct sockaddr *)(void *)(raw + 1), sizeof in));
}

/* ---- the compact form --------------------------------------------------------- */

static void test_source_url_ref_is_small_and_expands_a_zero_ref_to_zero(void **state) {
    (void)state;
    /* The trigger config holds 17 of these: keep them small. */
    assert_true(sizeof(source_url_ref_t) <= 28);
    source_url_t u;
    memset(&u, 0x5a, sizeof u);
    source_url_expand("http://ignored:1/", &zero_ref, &u);
    assert_memory_equal(&u, &zero_url, sizeof u);
}

static void test_source_url_ref_refers_into_the_text_it_was_parsed_from(void **state) {
    (void)state;
    source_url_ref_t r;
    const char *url = "HTTPS://Triton.NS.svc.:8002?a=b";
    assert_int_equal(source_url_parse_ref(url, HTTP_ONLY, &r, NULL, 0), 0);
    assert_int_equal(r.host_off, 8);
    assert_int_equal(r.host_len, 14);
    assert_int_equal(r.path_off, 27);
    assert_int_equal(r.path_len, 4);
    assert_int_equal(r.path_slash, 1);
    assert_int_equal(r.port, 8002);
    assert_int_equal(r.scheme, SOURCE_SCHEME_HTTPS);
    assert_int_equal(r.family, AF_UNSPEC);
    source_url_t u;
    source_url_expand(url, &r, &u);
    assert_string_equal(u.host, "triton.ns.svc.");
    assert_string_equal(u.path, "/?a=b");
    assert_string_equal(u.host_header, "triton.ns.svc.:8002");

    /* A literal's bytes are kept, ready for connect(). */
    assert_int_equal(source_url_parse_ref("http://[FD12::0:1]:9/x", HTTP_ONLY, &r, NULL, 0), 0);
    static const uint8_t fd12[16] = {0xfd, 0x12, [15] = 1};
    assert_int_equal(r.family, AF_INET6);
    assert_memory_equal(r.addr, fd12, 16);
    assert_int_equal(source_addr_parse_ref("10.1.2.3:6380", &r, NULL, NULL, NULL, 0), 0);
    static const uint8_t ten[16] = {10, 1, 2, 3};
    assert_int_equal(r.family, AF_INET);
    assert_memory_equal(r.addr, ten, 16);
    assert_int_equal(r.scheme, SOURCE_SCHEME_REDIS);
}

static void test_source_url_ref_refuses_text_its_offsets_cannot_reach(void **state) {
    (void)state;
    /* A port may carry any number of leading zeros, so only the text's
     * length bounds the offsets: past 65535 bytes the compact form refuses
     * what the full one accepts. */
    static char url[70000];
    size_t o = (size_t)snprintf(url, sizeof url, "http://h:");
    memset(url + o, '0', 65600);
    o += 65600;
    snprintf(url + o, sizeof url - o, "80/x");
    source_url_t u;
    assert_int_equal(source_url_parse(url, HTTP_ONLY, &u, NULL, 0), 0);
    assert_int_equal(u.port, 80);
    source_url_ref_t r;
    char err[128];
    memset(&r, 0x5a, sizeof r);
    assert_int_equal(source_url_parse_ref(url, HTTP_ONLY, &r, err, sizeof err), KGS_EINVAL);
    assert_string_equal(err, "longer than 65535 bytes");
    assert_memory_equal(&r, &zero_ref, sizeof r);
    assert_int_equal(source_addr_parse_ref(url, &r, NULL, NULL, err, sizeof err), KGS_EINVAL);
    assert_memory_equal(&r, &zero_ref, sizeof r);
    assert_int_equal(source_url_parse_ref("http://h", HTTP_ONLY, NULL, err, sizeof err),
                     KGS_EINVAL);
    assert_int_equal(source_addr_parse_ref("h", NULL, NULL, NULL, err, sizeof err), KGS_EINVAL);
}

/* ---- secrets in URLs (source_url_redact) ---------------------------------------- */

static void expect_redacted(const char *in, const char *want) {
    char out[1024];
    memset(out, 0x5a, sizeof out);
    size_t n = source_url_redact(in, strlen(in), out, sizeof out);
    if (strcmp(out, want) != 0 || n != strlen(want))
        fail_msg("redact %s: got \"%s\" (%zu), want \"%s\"", in, out, n, want);
}

static void test_source_url_redact_masks_the_password_and_keeps_the_user(void **state) {
    (void)state;
    expect_redacted("redis://u:pw@host:6379", "redis://u:***@host:6379");
    expect_redacted("rediss://default:s3cret@redis.queues:6380/2",
                    "rediss://default:***@redis.queues:6380/2");
    expect_redacted("http://u:pw@host/metrics", "http://u:***@host/metrics");
    expect_redacted("redis://:pw@host", "redis://:***@host");
    /* an empty password: nothing to hide */
    expect_redacted("http://u:@host/", "http://u:@host/");
    /* the last '@' ends the userinfo: an unencoded '@' in the password is hidden too */
    expect_redacted("http://u:p@ss@host/", "http://u:***@host/");
    /* ':' and ',' inside the password are part of it */
    expect_redacted("http://u:a:b,c@host/", "http://u:***@host/");
}

static void test_source_url_redact_masks_a_lone_userinfo_whole(void **state) {
    (void)state;
    /* "https://TOKEN@host" is how many APIs take a token */
    expect_redacted("https://ghp_abcdef@host/m", "https://***@host/m");
    expect_redacted("redis://pw@host:6379", "redis://***@host:6379");
    expect_redacted("http://@host/", "http://@host/");
}

static void test_source_url_redact_keeps_percent_encoding_inside_the_mask(void **state) {
    (void)state;
    expect_redacted("http://u%40corp:p%40ss%3Aw@host/", "http://u%40corp:***@host/");
    /* an encoded ':' is not the separator: the whole userinfo goes */
    expect_redacted("http://u%3Apw@host/", "http://***@host/");
}

static void test_source_url_redact_reads_addresses_without_a_scheme(void **state) {
    (void)state;
    expect_redacted("u:pw@host:6379", "u:***@host:6379");
    expect_redacted(":pw@10.0.0.1:6379", ":***@10.0.0.1:6379");
    expect_redacted("host:6379", "host:6379");
    expect_redacted("[::1]:6379", "[::1]:6379");
}

static void test_source_url_redact_handles_ipv6_hosts(void **state) {
    (void)state;
    expect_redacted("http://[fd00::1]:8000/metrics", "http://[fd00::1]:8000/metrics");
    expect_redacted("http://u:pw@[fd00::1]:8000/metrics", "http://u:***@[fd00::1]:8000/metrics");
    expect_redacted("redis://u:pw@[::1]", "redis://u:***@[::1]");
}

static void test_source_url_redact_leaves_an_at_sign_in_path_or_query(void **state) {
    (void)state;
    expect_redacted("http://host/a@b", "http://host/a@b");
    expect_redacted("http://host:80/m/u:x@y", "http://host:80/m/u:x@y");
    expect_redacted("http://host/m?user=a@b.example", "http://host/m?user=a@b.example");
    expect_redacted("http://host?x=a@b", "http://host?x=a@b");
    expect_redacted("http://host#frag=a@b", "http://host#frag=a@b");
}

static void test_source_url_redact_masks_secret_query_values(void **state) {
    (void)state;
    expect_redacted("http://h/metrics?token=abc", "http://h/metrics?token=***");
    expect_redacted("http://h/m?pod=0&access_token=abc&x=1",
                    "http://h/m?pod=0&access_token=***&x=1");
    expect_redacted("http://h/m?API_KEY=abc;b=2", "http://h/m?API_KEY=***;b=2");
    expect_redacted("http://h/m?X-Amz-Signature=ab12&X-Amz-Date=1",
                    "http://h/m?X-Amz-Signature=***&X-Amz-Date=1");
    expect_redacted("http://h/m?client_secret=s&password=p&sig=q&sessionid=r",
                    "http://h/m?client_secret=***&password=***&sig=***&sessionid=***");
    /* the name is read percent-decoded; the value is masked as written */
    expect_redacted("http://h/m?access%5Ftoken=a%26b", "http://h/m?access%5Ftoken=***");
    /* a bare component could be a token; an empty value has nothing to hide */
    expect_redacted("http://h/m?abcdef0123", "http://h/m?***");
    expect_redacted("http://h/m?token=&pod=1", "http://h/m?token=&pod=1");
    /* a fragment is read the same way */
    expect_redacted("http://h/m#access_token=abc", "http://h/m#access_token=***");
    /* a URL inside a query value has its userinfo masked too */
    expect_redacted("http://h/m?next=http://u:pw@x/", "http://h/m?next=http://u:***@x/");
    /* ordinary parameters stay, so two endpoints can be told apart */
    expect_redacted("http://h/fx/vllm?pod=1", "http://h/fx/vllm?pod=1");
}

static void test_source_url_redact_masks_each_entry_of_a_list(void **state) {
    (void)state;
    expect_redacted("http://a:1/m,http://u:pw@b:2/m", "http://a:1/m,http://u:***@b:2/m");
    expect_redacted("http://u:pw@a/m, http://b/m?token=t,http://c/m",
                    "http://u:***@a/m, http://b/m?token=***");
    expect_redacted("http://a/m,u:pw@b:6379", "http://a/m,u:***@b:6379");
}

static void test_source_url_redact_bounds_its_output(void **state) {
    (void)state;
    const char *in = "redis://user:password@host:6379";
    char out[16];
    memset(out, 0x5a, sizeof out);
    size_t n = source_url_redact(in, strlen(in), out, sizeof out);
    assert_int_equal(n, strlen("redis://user:***@host:6379"));
    assert_string_equal(out, "redis://user:**");
    assert_int_equal(source_url_redact(in, strlen(in), NULL, 0), n);
    assert_int_equal(source_url_redact(NULL, 0, out, sizeof out), 0);
    assert_string_equal(out, "");
    /* a password cut by the quote's length limit is still masked */
    char q[KGS_QUOTE_BUF];
    char longurl[200];
    snprintf(longurl, sizeof longurl, "redis://a-rather-long-user-name-for-redis:%s@h:6379",
             "pw-that-crosses-the-cut-0123456789");
    source_url_quote(q, sizeof q, longurl, strlen(longurl));
    assert_null(strstr(q, "pw-that"));
    assert_non_null(strstr(q, "a-rather-long-user-name-for-redis:***@h"));
    /* and the quote still says it was cut */
    source_url_quote(q, sizeof q, "http://h/0123456789012345678901234567890123456789abcdefghij",
                     58);
    assert_non_null(strstr(q, "\"..."));
}

static void test_source_url_redact_is_linear_on_hostile_lists(void **state) {
    (void)state;
    /* 1 MiB of commas and one '@' at the end: every entry start shares one
     * scan, so this takes milliseconds, not the hours a rescan per entry would */
    size_t n = 1u << 20;
    static char big[(1u << 20) + 8];
    for (size_t i = 0; i < n; i++)
        big[i] = (i % 2) ? ',' : 'a';
    big[n - 1] = '@';
    char out[64];
    size_t len = source_url_redact(big, n, out, sizeof out);
    assert_string_equal(out, "***@");
    assert_int_equal(len, 4);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_source_url_parses_http_name_port_and_path),
        cmocka_unit_test(test_source_url_fills_default_ports_and_root_path),
        cmocka_unit_test(test_source_url_lower_cases_host_and_scheme_but_not_path),
        cmocka_unit_test(test_source_url_keeps_the_query),
        cmocka_unit_test(test_source_url_parses_ipv4_literals),
        cmocka_unit_test(test_source_url_parses_ipv6_literals_into_canonical_form),
        cmocka_unit_test(test_source_url_accepts_fqdn_underscores_and_port_edges),
        cmocka_unit_test(test_source_url_accepts_the_longest_host_and_path),
        cmocka_unit_test(test_source_url_refuses_other_schemes_naming_the_accepted_ones),
        cmocka_unit_test(test_source_url_refuses_credentials_without_repeating_them),
        cmocka_unit_test(test_source_url_refuses_fragments),
        cmocka_unit_test(test_source_url_refuses_an_empty_host),
        cmocka_unit_test(test_source_url_refuses_bad_ports),
        cmocka_unit_test(test_source_url_refuses_ipv6_zone_ids_and_bad_brackets),
        cmocka_unit_test(test_source_url_refuses_non_canonical_ipv4),
        cmocka_unit_test(test_source_url_refuses_spaces_control_and_non_ascii_bytes),
        cmocka_unit_test(test_source_url_refuses_invalid_host_names),
        cmocka_unit_test(test_source_url_refuses_percent_encoding_in_the_host),
        cmocka_unit_test(test_source_url_refuses_bad_path_bytes_and_escapes),
        cmocka_unit_test(test_source_url_refuses_guarded_names),
        cmocka_unit_test(test_source_url_refuses_guarded_ip_literals),
        cmocka_unit_test(test_source_url_accepts_null_and_tiny_error_buffers),
        cmocka_unit_test(test_source_url_rebuilt_from_its_parts_parses_to_identical_bytes),
        cmocka_unit_test(test_source_addr_parses_bare_addresses_leaving_tls_and_db),
        cmocka_unit_test(test_source_addr_parses_redis_urls_setting_tls_and_db),
        cmocka_unit_test(test_source_addr_refuses_bad_addresses),
        cmocka_unit_test(test_source_guard_name_refuses_metadata_names_only),
        cmocka_unit_test(test_source_guard_addr_refuses_ipv4_metadata_and_special_ranges),
        cmocka_unit_test(test_source_guard_addr_allows_loopback_private_and_public_ipv4),
        cmocka_unit_test(test_source_guard_addr_refuses_ipv6_metadata_and_special_ranges),
        cmocka_unit_test(test_source_guard_addr_refuses_ipv4_metadata_in_every_ipv6_form),
        cmocka_unit_test(test_source_guard_addr_allows_loopback_ula_and_public_ipv6),
        cmocka_unit_test(test_source_guard_addr_refuses_incomplete_or_foreign_sockaddrs),
        cmocka_unit_test(test_source_url_ref_is_small_and_expands_a_zero_ref_to_zero),
        cmocka_unit_test(test_source_url_ref_refers_into_the_text_it_was_parsed_from),
        cmocka_unit_test(test_source_url_ref_refuses_text_its_offsets_cannot_reach),
        cmocka_unit_test(test_source_url_redact_masks_the_password_and_keeps_the_user),
        cmocka_unit_test(test_source_url_redact_masks_a_lone_userinfo_whole),
        cmocka_unit_test(test_source_url_redact_keeps_percent_encoding_inside_the_mask),
        cmocka_unit_test(test_source_url_redact_reads_addresses_without_a_scheme),
        cmocka_unit_test(test_source_url_redact_handles_ipv6_hosts),
        cmocka_unit_test(test_source_url_redact_leaves_an_at_sign_in_path_or_query),
        cmocka_unit_test(test_source_url_redact_masks_secret_query_values),
        cmocka_unit_test(test_source_url_redact_masks_each_entry_of_a_list),
        cmocka_unit_test(test_source_url_redact_bounds_its_output),
        cmocka_unit_test(test_source_url_redact_is_linear_on_hostile_lists),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
