/* test_source_auth.c - --source-auth profiles: the text form (what is
 * refused, with which message), namespace admission, profile names as the
 * sourceAuth key checks them, and token file bytes as bearer tokens (never
 * quoted in a message). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "core/err.h"
#include "core/bearer_token.h"
#include "core/source_auth.h"
#include "core/source_url.h"

static source_auth_set_t set;

static void assert_refused(const char *text, const char *want) {
    char err[512] = "";
    memset(&set, 0, sizeof set);
    set.n = 1; /* unchanged on failure */
    int rc = source_auth_parse(text, &set, err, sizeof err);
    if (rc != KGS_EINVAL || !strstr(err, want))
        fail_msg("source_auth_parse(\"%s\") = %d \"%s\"; want EINVAL with \"%s\"", text, rc, err,
                 want);
    assert_int_equal(set.n, 1);
}

static void test_two_profiles_parse(void **state) {
    (void)state;
    char err[512] = "";
    int rc = source_auth_parse(
        " epp:token-file=/var/run/secrets/kgs/epp/token,namespaces=llm|chat,hosts=epp.llm.svc ; "
        "vault:ca-file=/etc/kgs/ca.pem, cert-file=/etc/kgs/tls.crt,key-file=/etc/kgs/tls.key,"
        "namespaces=*,cidrs=10.20.0.0/16;",
        &set, err, sizeof err);
    assert_int_equal(rc, 0);
    assert_int_equal(set.n, 2);
    const source_auth_profile_t *epp = source_auth_find(&set, "epp");
    assert_non_null(epp);
    assert_string_equal(epp->token_file, "/var/run/secrets/kgs/epp/token");
    assert_string_equal(epp->cert_file, "");
    assert_int_equal(epp->nns, 2);
    assert_true(source_auth_allows(epp, "llm"));
    assert_true(source_auth_allows(epp, "chat"));
    assert_false(source_auth_allows(epp, "other"));
    assert_false(source_auth_allows(epp, "ll"));
    const source_auth_profile_t *v = source_auth_find(&set, "vault");
    assert_non_null(v);
    assert_string_equal(v->ca_file, "/etc/kgs/ca.pem");
    assert_string_equal(v->cert_file, "/etc/kgs/tls.crt");
    assert_string_equal(v->key_file, "/etc/kgs/tls.key");
    assert_true(v->all_namespaces);
    assert_true(source_auth_allows(v, "anything"));
    assert_null(source_auth_find(&set, "nope"));
    /* empty: no profiles */
    assert_int_equal(source_auth_parse("", &set, err, sizeof err), 0);
    assert_int_equal(set.n, 0);
}

static void test_refusals_name_the_problem(void **state) {
    (void)state;
    assert_refused("epp", "want NAME:key=value");
    assert_refused("EPP:token-file=/t,namespaces=a", "profile name \"EPP\" is not valid");
    assert_refused("-x:token-file=/t,namespaces=a", "is not valid");
    assert_refused("a:token-file=/t,namespaces=a,pods=own-namespace;a:token-file=/u,namespaces=b",
                   "profile a is defined twice");
    assert_refused("a:token=/t,namespaces=a", "\"token=/t\" is not key=value with a key of");
    assert_refused("a:token-file,namespaces=a", "is not key=value");
    assert_refused("a:token-file=/t,token-file=/u,namespaces=a", "token-file is given twice");
    assert_refused("a:token-file=t,namespaces=a", "token-file \"t\" is not an absolute path");
    assert_refused("a:cert-file=/c,namespaces=a,hosts=x.svc", "cert-file and key-file go together");
    assert_refused("a:key-file=/k,namespaces=a", "cert-file and key-file go together");
    assert_refused("a:namespaces=a", "no credential");
    assert_refused("a:token-file=/t", "namespaces is required");
    assert_refused("a:token-file=/t,namespaces=", "namespace \"\" is not a Kubernetes namespace");
    assert_refused("a:token-file=/t,namespaces=a||b", "namespace \"\" is not");
    assert_refused("a:token-file=/t,namespaces=Team", "namespace \"Team\" is not");
    assert_refused("a:token-file=/t,namespaces=a|a", "namespace a is listed twice");
    char many[1024];
    int o = snprintf(many, sizeof many, "a:token-file=/t,namespaces=n0");
    for (int i = 1; i <= SOURCE_AUTH_MAX_NAMESPACES; i++)
        o += snprintf(many + o, sizeof many - (size_t)o, "|n%d", i);
    assert_refused(many, "more than 16 namespaces");
    o = 0;
    for (int i = 0; i <= SOURCE_AUTH_MAX_PROFILES; i++)
        o += snprintf(many + o, sizeof many - (size_t)o, "p%d:ca-file=/t,namespaces=*;", i);
    assert_refused(many, "more than 8 profiles");
    char path[700] = "a:token-file=/";
    memset(path + 14, 'x', 600);
    strcpy(path + 614, ",namespaces=*");
    assert_refused(path, "token-file is 601 bytes long; the limit is 511");
}

/* Destinations: what a credential is bound to, and how a profile without one
 * is refused (a token or certificate with no destination went anywhere before). */
static void test_destinations_parse_and_are_required(void **state) {
    (void)state;
    char err[512] = "";
    assert_int_equal(
        source_auth_parse("epp:token-file=/t,namespaces=llm,hosts=epp.llm.svc|*.gw.svc."
                          ",cidrs=10.20.0.0/16|fd00::/8|192.168.1.7,pods=own-namespace,"
                          "http=allow",
                          &set, err, sizeof err),
        0);
    const source_auth_profile_t *p = source_auth_find(&set, "epp");
    assert_non_null(p);
    assert_int_equal(p->nhosts, 2);
    assert_string_equal(p->hosts[1], "*.gw.svc");
    assert_int_equal(p->ncidrs, 3);
    assert_int_equal(p->cidrs[2].prefix, 32);
    assert_true(p->pods_own_namespace);
    assert_true(p->allow_http);
    /* "*." and a name of the longest a DNS name may be (253), stored whole,
     * and the next host untouched (the slot once held the name alone) */
    char longest[253 + 1], spec[700];
    memset(longest, 'a', 253);
    for (int i = 63; i < 253; i += 64)
        longest[i] = '.';
    longest[253] = '\0';
    snprintf(spec, sizeof spec, "w:token-file=/t,namespaces=a,hosts=*.%s|b.svc", longest);
    assert_int_equal(source_auth_parse(spec, &set, err, sizeof err), 0);
    p = source_auth_find(&set, "w");
    assert_non_null(p);
    assert_int_equal(p->nhosts, 2);
    assert_int_equal(strlen(p->hosts[0]), 255);
    assert_memory_equal(p->hosts[0] + 2, longest, 253);
    assert_string_equal(p->hosts[1], "b.svc");
    /* a ca-file alone is no credential: no destination needed */
    assert_int_equal(source_auth_parse("ca:ca-file=/ca.pem,namespaces=*", &set, err, sizeof err),
                     0);
    assert_false(source_auth_has_credential(&set.p[0]));
    assert_refused("a:token-file=/t,namespaces=a",
                   "profile a: where may its token go? A credential is bound to destinations: add "
                   "hosts=NAME|*.SUFFIX (the URLs' host names), cidrs=NETWORK (IP-literal URLs) or "
                   "pods=own-namespace");
    assert_refused("a:cert-file=/c,key-file=/k,namespaces=a",
                   "where may its client certificate go?");
    assert_refused(
        "a:token-file=/t,namespaces=a,hosts=10.0.0.1",
        "host \"10.0.0.1\" is not a host name (lower-case DNS name such as "
        "epp.llm.svc, or *.llm.svc for every name below it; an IP address goes in cidrs)");
    assert_refused("a:token-file=/t,namespaces=a,hosts=Epp.svc", "host \"Epp.svc\" is not");
    assert_refused("a:token-file=/t,namespaces=a,hosts=*", "host \"*\" is not");
    assert_refused("a:token-file=/t,namespaces=a,hosts=a..b", "host \"a..b\" is not");
    assert_refused("a:token-file=/t,namespaces=a,hosts=x||y", "host \"\" is not");
    assert_refused("a:token-file=/t,namespaces=a,cidrs=10.0.0.1/8",
                   "profile a: cidrs: \"10.0.0.1/8\": host bits set (did you mean 10.0.0.0/8?)");
    assert_refused("a:token-file=/t,namespaces=a,cidrs=", "cidrs: an empty entry");
    assert_refused("a:token-file=/t,namespaces=a,pods=all",
                   "pods=all: the only value is own-namespace");
    assert_refused("a:token-file=/t,namespaces=a,hosts=x.svc,http=yes",
                   "http=yes: the only value is allow");
    assert_refused("a:ca-file=/c,namespaces=a,http=allow",
                   "http=allow without token-file: a ca-file or client certificate is used only "
                   "over https");
}

static void url(const char *text, source_url_t *u) {
    char err[300];
    if (source_url_parse(text, (1u << SOURCE_SCHEME_HTTP) | (1u << SOURCE_SCHEME_HTTPS), u, err,
                         sizeof err) != 0)
        fail_msg("%s: %s", text, err);
}

static void assert_url(const source_auth_profile_t *p, const char *text, const char *want) {
    source_url_t u;
    url(text, &u);
    char err[700] = "";
    int rc = source_auth_check_url(p, &u, err, sizeof err);
    if (!want) {
        if (rc != 0)
            fail_msg("%s refused: %s", text, err);
        return;
    }
    if (rc != KGS_EINVAL || !strstr(err, want))
        fail_msg("%s: rc %d \"%s\"; want \"%s\"", text, rc, err, want);
}

static void test_urls_outside_the_destinations_are_refused(void **state) {
    (void)state;
    char err[512] = "";
    assert_int_equal(
        source_auth_parse("tok:token-file=/t,namespaces=*,hosts=epp.llm.svc|*.gw.svc,"
                          "cidrs=10.20.0.0/16|fd00::/8;"
                          "plain:token-file=/t,namespaces=*,hosts=epp.llm.svc,http=allow;"
                          "ca:ca-file=/ca,namespaces=*;"
                          "pods:token-file=/t,namespaces=*,pods=own-namespace",
                          &set, err, sizeof err),
        0);
    const source_auth_profile_t *tok = source_auth_find(&set, "tok");
    assert_url(tok, "https://epp.llm.svc:9090/metrics", NULL);
    assert_url(tok, "https://epp.llm.svc.:9090/metrics",
               NULL); /* a trailing dot is the same name */
    assert_url(tok, "https://a.gw.svc/metrics", NULL);
    assert_url(tok, "https://a.b.gw.svc/metrics", NULL);
    assert_url(tok, "https://10.20.3.4:8000/metrics", NULL);
    assert_url(tok, "https://[fd00::1]:8000/metrics", NULL);
    /* the attacker's own server, a look-alike, the suffix itself, an address outside */
    assert_url(tok, "https://attacker.example:443/metrics",
               "sourceAuth tok may not send its credential to https://attacker.example:443: the "
               "host is not in the profile's hosts (--source-auth tok: hosts=epp.llm.svc|*.gw.svc, "
               "cidrs=10.20.0.0/16|fd00::/8, pods=none)");
    assert_url(tok, "https://epp.llm.svc.attacker.example/metrics", "the host is not in");
    assert_url(tok, "https://xepp.llm.svc/metrics", "the host is not in");
    assert_url(tok, "https://gw.svc/metrics", "the host is not in");
    assert_url(tok, "https://10.21.0.1/metrics",
               "sourceAuth tok may not send its credential to https://10.21.0.1:443: the address "
               "is not in the profile's cidrs");
    assert_url(tok, "https://[2001:db8::1]/metrics",
               "https://[2001:db8::1]:443: the address is not in");
    /* plain http: refused by default, saying what to add */
    assert_url(tok, "http://epp.llm.svc:9090/metrics",
               "sourceAuth tok: http://epp.llm.svc:9090 is plain http, and the profile's bearer "
               "token would cross the network in clear: use https (engineScheme: https for "
               "podSelector pods), or add http=allow to --source-auth tok");
    assert_url(source_auth_find(&set, "plain"), "http://epp.llm.svc:9090/metrics", NULL);
    assert_url(source_auth_find(&set, "plain"), "http://other.svc/metrics", "the host is not in");
    /* a CA alone goes with any https URL, never http */
    assert_url(source_auth_find(&set, "ca"), "https://anything.example/metrics", NULL);
    assert_url(source_auth_find(&set, "ca"), "http://anything.example/metrics",
               "sourceAuth ca has a ca-file, which needs https");
    /* podSelector pods */
    assert_int_equal(source_auth_check_pods(source_auth_find(&set, "pods"), true, err, sizeof err),
                     0);
    assert_int_equal(source_auth_check_pods(source_auth_find(&set, "pods"), false, err, sizeof err),
                     KGS_EINVAL);
    assert_non_null(strstr(err, "the podSelector pods' endpoint is plain http"));
    assert_int_equal(source_auth_check_pods(tok, true, err, sizeof err), KGS_EINVAL);
    assert_non_null(strstr(err, "sourceAuth tok may not send its credential to podSelector pods: "
                                "add pods=own-namespace to --source-auth tok"));
    assert_url(source_auth_find(&set, "pods"), "https://10.0.0.1/metrics",
               "the address is not in the profile's cidrs");
}

static void test_profile_names(void **state) {
    (void)state;
    assert_true(source_auth_name_valid("epp", 3));
    assert_true(source_auth_name_valid("a-1", 3));
    assert_false(source_auth_name_valid("", 0));
    assert_false(source_auth_name_valid("a_b", 3));
    assert_false(source_auth_name_valid("a-", 2));
    assert_false(source_auth_name_valid("A", 1));
    char long_name[65];
    memset(long_name, 'a', 64);
    long_name[64] = '\0';
    assert_true(source_auth_name_valid(long_name, 63));
    assert_false(source_auth_name_valid(long_name, 64));
}

static void test_tokens(void **state) {
    (void)state;
    char err[300];
    size_t n = 0;
    assert_int_equal(bearer_token_check("eyJhbGc.x-y_z\n", 14, 64, &n, err, sizeof err), 0);
    assert_int_equal(n, 13);
    assert_int_equal(bearer_token_check("tok \r\n\t", 7, 64, &n, err, sizeof err), 0);
    assert_int_equal(n, 3);
    assert_int_equal(bearer_token_check("\n\n", 2, 64, &n, err, sizeof err), KGS_EINVAL);
    assert_non_null(strstr(err, "empty"));
    /* a CR or LF inside would split the header: refused, and not quoted */
    assert_int_equal(bearer_token_check("sec\r\nX-Evil: 1", 14, 64, &n, err, sizeof err),
                     KGS_EINVAL);
    assert_non_null(strstr(err, "byte 3 of the token is 0x0d"));
    assert_null(strstr(err, "sec"));
    assert_int_equal(bearer_token_check("a b", 3, 64, &n, err, sizeof err), KGS_EINVAL);
    static char big[SOURCE_AUTH_TOKEN_MAX + 2];
    memset(big, 'a', sizeof big);
    assert_int_equal(
        bearer_token_check(big, SOURCE_AUTH_TOKEN_MAX, SOURCE_AUTH_TOKEN_MAX, &n, err, sizeof err),
        0);
    assert_int_equal(bearer_token_check(big, SOURCE_AUTH_TOKEN_MAX + 1, SOURCE_AUTH_TOKEN_MAX, &n,
                                        err, sizeof err),
                     KGS_EINVAL);
    assert_non_null(strstr(err, "the limit is 16384"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_profiles_parse),
        cmocka_unit_test(test_refusals_name_the_problem),
        cmocka_unit_test(test_profile_names),
        cmocka_unit_test(test_destinations_parse_and_are_required),
        cmocka_unit_test(test_urls_outside_the_destinations_are_refused),
        cmocka_unit_test(test_tokens),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
