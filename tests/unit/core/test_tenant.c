/* test_tenant.c - who may claim what (core/tenant.h): the
 * --allow-cross-namespace text, a trigger's namespace scope against it, and
 * a trigger's sourceAuth against its profile's namespaces and destinations.
 * The refusals name the trigger's own values and the flag, and read nothing
 * of another namespace: the label-oracle case of issue 28 gets one answer
 * whatever the selector. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/err.h"
#include "core/source_auth.h"
#include "core/tenant.h"
#include "core/trigger_config.h"

static trigger_config_t cfg; /* ~25 KiB: off the stack */
static source_auth_set_t profiles;
static tenant_cross_ns_t cross;

static void parse(const char *const *kv) {
    metadata_pair_t p[16];
    size_t n = 0;
    for (; kv[2 * n]; n++)
        p[n] =
            (metadata_pair_t){kv[2 * n], strlen(kv[2 * n]), kv[2 * n + 1], strlen(kv[2 * n + 1])};
    char err[512] = "";
    if (trigger_config_parse(p, n, &cfg, err, sizeof err) != 0)
        fail_msg("parse: %s", err);
}
#define PARSE(...) parse((const char *const[]){__VA_ARGS__, NULL})

/* tenant_check_trigger on cfg from ns: "" when allowed, else the message. */
static const char *check(const tenant_policy_t *p, const char *ns) {
    static char err[1024];
    err[0] = '\0';
    int rc = tenant_check_trigger(p, &cfg, ns, err, sizeof err);
    if (rc == 0)
        assert_string_equal(err, "");
    else
        assert_int_equal(rc, KGS_EINVAL);
    return err;
}

static void assert_contains(const char *got, const char *want) {
    if (!strstr(got, want))
        fail_msg("\"%s\"\ndoes not contain\n\"%s\"", got, want);
}

static void test_cross_namespace_text(void **state) {
    (void)state;
    char err[300];
    assert_int_equal(tenant_cross_ns_parse("", &cross, err, sizeof err), 0);
    assert_int_equal(cross.n, 0);
    assert_int_equal(
        tenant_cross_ns_parse(" monitoring:llm ,ops:*,*:shared", &cross, err, sizeof err), 0);
    assert_int_equal(cross.n, 3);
    assert_true(tenant_cross_ns_allows(&cross, "monitoring", "llm"));
    assert_false(tenant_cross_ns_allows(&cross, "monitoring", "chat"));
    assert_true(tenant_cross_ns_allows(&cross, "ops", "chat"));
    assert_true(tenant_cross_ns_allows(&cross, "anyone", "shared"));
    assert_false(tenant_cross_ns_allows(&cross, "llm", "monitoring"));
    assert_true(tenant_cross_ns_allows(&cross, "llm", "llm")); /* its own: always */
    assert_true(tenant_cross_ns_allows(NULL, "llm", "llm"));
    assert_false(tenant_cross_ns_allows(NULL, "llm", "chat"));
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"monitoring", "\"monitoring\" is not SRC:DST"},
        {"a:b,", "an empty entry"},
        {",a:b", "an empty entry"},
        {"a:B", "\"a:B\": DST is not a namespace name"},
        {":b", "SRC is not a namespace name"},
        {"a:a", "a namespace always selects its own pods"},
        {"a:b,a:b", "a:b is given twice"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cross.n = 7; /* unchanged on failure */
        err[0] = '\0';
        assert_int_equal(tenant_cross_ns_parse(bad[i].text, &cross, err, sizeof err), KGS_EINVAL);
        assert_contains(err, bad[i].want);
        assert_int_equal(cross.n, 7);
    }
    char many[2048];
    int o = 0;
    for (int i = 0; i <= TENANT_MAX_CROSS; i++)
        o += snprintf(many + o, sizeof many - (size_t)o, "%sa:n%d", i ? "," : "", i);
    assert_int_equal(tenant_cross_ns_parse(many, &cross, err, sizeof err), KGS_EINVAL);
    assert_contains(err, "more than 64 pairs");
}

/* Issue 28: from `attacker`, `namespace: victim` with a podSelector read the
 * victim's pods, and the answer for team=finance (2 pods) differed from
 * team=hr (0): a label oracle. Now both are refused before any pod is
 * looked at, with the same words apart from the selector-free fields. */
static void test_another_namespace_is_refused_unless_allowed(void **state) {
    (void)state;
    tenant_policy_t p = {.auth = NULL, .cross = NULL};
    char first[1024];
    PARSE("metricType", "gpu_utilization", "targetValue", "50", "podSelector", "team=finance",
          "namespace", "victim");
    snprintf(first, sizeof first, "%s", check(&p, "attacker"));
    assert_string_equal(first, "namespace victim: triggers of namespace attacker may select pods "
                               "of their own namespace only; the operator allows another with "
                               "--allow-cross-namespace=attacker:victim on the server");
    PARSE("metricType", "gpu_utilization", "targetValue", "50", "podSelector", "team=hr",
          "namespace", "victim");
    assert_string_equal(check(&p, "attacker"), first); /* no oracle: the same answer */
    /* its own namespace named explicitly, and no namespace key: allowed */
    assert_string_equal(check(&p, "victim"), "");
    PARSE("metricType", "gpu_utilization", "targetValue", "50", "podSelector", "team=hr");
    assert_string_equal(check(&p, "attacker"), "");
    /* the operator's pair allows exactly that direction */
    char err[300];
    assert_int_equal(tenant_cross_ns_parse("attacker:victim", &cross, err, sizeof err), 0);
    p.cross = &cross;
    PARSE("metricType", "gpu_utilization", "targetValue", "50", "podSelector", "team=hr",
          "namespace", "victim");
    assert_string_equal(check(&p, "attacker"), "");
    assert_contains(check(&p, "other"), "--allow-cross-namespace=other:victim");
}

static void test_source_auth_is_bound_to_namespace_and_destinations(void **state) {
    (void)state;
    char err[600] = "";
    assert_int_equal(source_auth_parse("epp:token-file=/t,namespaces=llm|chat,hosts=epp.llm.svc;"
                                       "pods:token-file=/t,namespaces=*,pods=own-namespace",
                                       &profiles, err, sizeof err),
                     0);
    assert_int_equal(tenant_cross_ns_parse("*:*", &cross, err, sizeof err), 0);
    tenant_policy_t p = {.auth = &profiles, .cross = &cross};
    PARSE("metricType", "engine_queue", "engine", "epp", "engineEndpoint",
          "https://epp.llm.svc:9090/metrics", "targetValue", "4", "sourceAuth", "epp");
    assert_string_equal(check(&p, "llm"), "");
    assert_string_equal(check(&p, "team-b"), "sourceAuth epp may not be used from namespace "
                                             "team-b (--source-auth epp: namespaces=llm|chat)");
    /* a permitted namespace naming its own server: refused before any request */
    PARSE("metricType", "engine_queue", "engine", "vllm", "vllmEndpoint",
          "https://epp.llm.svc:9090/metrics,https://collector.attacker.example/metrics",
          "targetValue", "4", "sourceAuth", "epp");
    assert_contains(check(&p, "llm"), "sourceAuth epp may not send its credential to "
                                      "https://collector.attacker.example:443: the host is not "
                                      "in the profile's hosts");
    /* the same host over plain http */
    PARSE("metricType", "engine_queue", "engine", "epp", "engineEndpoint",
          "http://epp.llm.svc:9090/metrics", "targetValue", "4", "sourceAuth", "epp");
    assert_contains(check(&p, "llm"), "is plain http");
    /* a demandEndpoint is a destination too */
    PARSE("metricType", "queue_length", "demandEndpoint", "https://prom.attacker.example/metrics",
          "demandMetric", "q", "targetValue", "4", "sourceAuth", "epp");
    assert_contains(check(&p, "llm"), "https://prom.attacker.example:443: the host is not");
    /* podSelector pods: the profile must say pods=own-namespace ... */
    PARSE("metricType", "engine_queue", "engine", "vllm", "podSelector", "app=vllm", "engineScheme",
          "https", "targetValue", "4", "sourceAuth", "epp");
    assert_contains(check(&p, "llm"), "add pods=own-namespace to --source-auth epp");
    PARSE("metricType", "engine_queue", "engine", "vllm", "podSelector", "app=vllm", "engineScheme",
          "https", "targetValue", "4", "sourceAuth", "pods");
    assert_string_equal(check(&p, "llm"), "");
    /* ... and never another namespace's, whatever --allow-cross-namespace says */
    PARSE("metricType", "engine_queue", "engine", "vllm", "podSelector", "app=vllm", "namespace",
          "victim", "engineScheme", "https", "targetValue", "4", "sourceAuth", "pods");
    assert_string_equal(check(&p, "llm"),
                        "sourceAuth pods with namespace victim: a profile's credential goes only "
                        "to the ScaledObject's own namespace (llm); drop namespace or sourceAuth");
    /* an unknown profile: named with the ones there are */
    PARSE("metricType", "engine_queue", "engine", "epp", "engineEndpoint",
          "https://epp.llm.svc:9090/metrics", "targetValue", "4", "sourceAuth", "nope");
    assert_string_equal(check(&p, "llm"), "sourceAuth nope: the server has no --source-auth "
                                          "profile of that name (it has: epp, pods)");
    /* profiles not known (validate without --source-auth): only what needs none */
    tenant_policy_t blind = {.auth = NULL, .cross = NULL};
    assert_string_equal(check(&blind, "llm"), "");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cross_namespace_text),
        cmocka_unit_test(test_another_namespace_is_refused_unless_allowed),
        cmocka_unit_test(test_source_auth_is_bound_to_namespace_and_destinations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
