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
        " epp:token-file=/var/run/secrets/kgs/epp/token,namespaces=llm|chat ; "
        "vault:ca-file=/etc/kgs/ca.pem, cert-file=/etc/kgs/tls.crt,key-file=/etc/kgs/tls.key,"
        "namespaces=*;",
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
    assert_refused("a:token-file=/t,namespaces=a;a:token-file=/u,namespaces=b",
                   "profile a is defined twice");
    assert_refused("a:token=/t,namespaces=a", "\"token=/t\" is not key=value with a key of");
    assert_refused("a:token-file,namespaces=a", "is not key=value");
    assert_refused("a:token-file=/t,token-file=/u,namespaces=a", "token-file is given twice");
    assert_refused("a:token-file=t,namespaces=a", "token-file \"t\" is not an absolute path");
    assert_refused("a:cert-file=/c,namespaces=a", "cert-file and key-file go together");
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
        o += snprintf(many + o, sizeof many - (size_t)o, "p%d:token-file=/t,namespaces=*;", i);
    assert_refused(many, "more than 8 profiles");
    char path[700] = "a:token-file=/";
    memset(path + 14, 'x', 600);
    strcpy(path + 614, ",namespaces=*");
    assert_refused(path, "token-file is 601 bytes long; the limit is 511");
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
        cmocka_unit_test(test_tokens),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
