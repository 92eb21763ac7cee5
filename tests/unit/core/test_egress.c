/* test_egress.c - the sources' egress allow-list: CIDR and port-list
 * parsing (what is refused, and with which message) and matching resolved
 * addresses, IPv4-mapped IPv6 included. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "core/egress.h"
#include "core/err.h"

static socklen_t sa_of(const char *ip, uint16_t port, struct sockaddr_storage *ss) {
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, ip, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        return sizeof *v4;
    }
    assert_int_equal(inet_pton(AF_INET6, ip, &v6->sin6_addr), 1);
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    return sizeof *v6;
}

static const char *check(const egress_policy_t *p, const char *ip, uint16_t port, char *why,
                         size_t whylen) {
    struct sockaddr_storage ss;
    socklen_t l = sa_of(ip, port, &ss);
    return egress_check(p, (struct sockaddr *)&ss, l, why, whylen);
}

static void test_egress_empty_policy_allows_everything(void **state) {
    (void)state;
    egress_policy_t p;
    memset(&p, 0, sizeof p);
    char err[256];
    assert_int_equal(egress_parse_cidrs("", &p, err, sizeof err), 0);
    assert_int_equal(egress_parse_ports(" ", &p, err, sizeof err), 0);
    assert_null(check(&p, "203.0.113.9", 1, NULL, 0));
    assert_null(check(&p, "2001:db8::1", 65535, NULL, 0));
}

static void test_egress_matches_cidrs_of_both_families(void **state) {
    (void)state;
    egress_policy_t p;
    memset(&p, 0, sizeof p);
    char err[256], why[256];
    assert_int_equal(
        egress_parse_cidrs("10.0.0.0/8, 192.168.1.7 ,fd00::/8,0.0.0.0/0x", &p, err, sizeof err),
        KGS_EINVAL);
    assert_int_equal(p.ncidrs, 0); /* unchanged on failure */
    assert_int_equal(
        egress_parse_cidrs("10.0.0.0/8, 192.168.1.7 ,fd00::/8,172.16.0.0/13", &p, err, sizeof err),
        0);
    assert_int_equal(p.ncidrs, 4);
    assert_null(check(&p, "10.255.1.2", 80, NULL, 0));
    assert_null(check(&p, "192.168.1.7", 80, NULL, 0));
    assert_null(check(&p, "fd12:3456::1", 80, NULL, 0));
    assert_null(check(&p, "::ffff:10.1.2.3", 80, NULL, 0)); /* mapped: read as IPv4 */
    assert_null(check(&p, "172.23.255.255", 80, NULL, 0));
    assert_string_equal(check(&p, "172.24.0.1", 80, why, sizeof why), "--source-allow-cidrs");
    assert_string_equal(check(&p, "192.168.1.8", 8080, why, sizeof why), "--source-allow-cidrs");
    assert_string_equal(why, "192.168.1.8:8080 (private, RFC 1918) is not in --source-allow-cidrs");
    assert_non_null(check(&p, "127.0.0.1", 80, why, sizeof why));
    assert_string_equal(why, "127.0.0.1:80 (loopback) is not in --source-allow-cidrs");
    assert_non_null(check(&p, "2001:db8::1", 443, why, sizeof why));
    assert_string_equal(why, "[2001:db8::1]:443 (public) is not in --source-allow-cidrs");
}

static void test_egress_refuses_malformed_cidrs_naming_the_entry(void **state) {
    (void)state;
    static const struct {
        const char *in, *want;
    } bad[] = {
        {"10.0.0.1/8", "host bits set (did you mean 10.0.0.0/8?)"},
        {"10.0.0.0/33", "prefix length must be 0-32"},
        {"fd00::/129", "prefix length must be 0-128"},
        {"10.0.0.0/", "prefix length"},
        {"10.1", "not an IPv4"},
        {"example.com/8", "not an IPv4"},
        {"10.0.0.0/8,,fd00::/8", "empty entry"},
        {"10.0.0.0/8,", "empty entry"},
        {"::ffff:0:0/95", "host bits set"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        egress_policy_t p;
        memset(&p, 0, sizeof p);
        char err[256] = "";
        assert_int_equal(egress_parse_cidrs(bad[i].in, &p, err, sizeof err), KGS_EINVAL);
        if (!strstr(err, bad[i].want) || !strstr(err, "--source-allow-cidrs"))
            fail_msg("%s: got \"%s\"", bad[i].in, err);
    }
}

static void test_egress_matches_ports_and_ranges(void **state) {
    (void)state;
    egress_policy_t p;
    memset(&p, 0, sizeof p);
    char err[256], why[256];
    assert_int_equal(egress_parse_ports("80, 443,8000-8999", &p, err, sizeof err), 0);
    assert_int_equal(p.nports, 3);
    assert_null(check(&p, "10.0.0.1", 80, NULL, 0));
    assert_null(check(&p, "10.0.0.1", 8999, NULL, 0));
    assert_string_equal(check(&p, "10.0.0.1", 9000, why, sizeof why), "--source-allow-ports");
    assert_string_equal(why, "10.0.0.1:9000 (private, RFC 1918): port 9000 is not in "
                             "--source-allow-ports");
    static const char *const bad[] = {"0",     "65536", "80-",     "-80",
                                      "90-80", "8o",    "80,,443", "123456"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char e2[256] = "";
        assert_int_equal(egress_parse_ports(bad[i], &p, e2, sizeof e2), KGS_EINVAL);
        assert_non_null(strstr(e2, "--source-allow-ports"));
    }
    assert_int_equal(p.nports, 3); /* unchanged */
}

static void test_egress_names_address_classes(void **state) {
    (void)state;
    static const struct {
        const char *ip, *cls;
    } cases[] = {
        {"127.0.0.1", "loopback"},
        {"10.1.1.1", "private, RFC 1918"},
        {"100.64.0.1", "shared address space (CGNAT), RFC 6598"},
        {"8.8.8.8", "public"},
        {"::1", "loopback"},
        {"fd00::1", "unique local (IPv6 ULA)"},
        {"fe80::1", "link-local"},
        {"::ffff:192.168.0.1", "private, RFC 1918"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct sockaddr_storage ss;
        socklen_t l = sa_of(cases[i].ip, 80, &ss);
        assert_string_equal(egress_addr_class((struct sockaddr *)&ss, l), cases[i].cls);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_egress_empty_policy_allows_everything),
        cmocka_unit_test(test_egress_matches_cidrs_of_both_families),
        cmocka_unit_test(test_egress_refuses_malformed_cidrs_naming_the_entry),
        cmocka_unit_test(test_egress_matches_ports_and_ranges),
        cmocka_unit_test(test_egress_names_address_classes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
