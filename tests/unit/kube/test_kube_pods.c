/* test_kube_pods.c - pod JSON decoding (PodList pages, watch events) and
 * the pod cache, on hand-written samples shaped like the API server's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kube/kube_pods.h"
#include "core/err.h"

/* A Running vLLM pod as `kubectl get pod -o json` shows it, trimmed of
 * nothing we would ignore anyway (managedFields, containers, conditions). */
#define POD_RUNNING                                                                                \
    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"vllm-7d9f8-abcde\","         \
    "\"generateName\":\"vllm-7d9f8-\",\"namespace\":\"inference\","                                \
    "\"uid\":\"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\",\"resourceVersion\":\"120045\","             \
    "\"creationTimestamp\":\"2026-11-29T10:00:00Z\",\"labels\":{\"app\":\"vllm\","                 \
    "\"app.kubernetes.io/name\":\"vllm\",\"pod-template-hash\":\"7d9f8\"},"                        \
    "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\","                    \
    "\"name\":\"vllm-7d9f8\",\"uid\":\"aa\",\"controller\":true}],"                                \
    "\"managedFields\":[{\"manager\":\"kube-controller-manager\",\"operation\":\"Update\"}]},"     \
    "\"spec\":{\"nodeName\":\"gpu-node-1\",\"containers\":[{\"name\":\"vllm\","                    \
    "\"image\":\"vllm/vllm-openai:v0.6.3\",\"resources\":{\"limits\":{\"nvidia.com/"               \
    "gpu\":\"1\"}}}]},"                                                                            \
    "\"status\":{\"phase\":\"Running\",\"hostIP\":\"10.0.1.5\",\"podIP\":\"10.244.1.17\","         \
    "\"podIPs\":[{\"ip\":\"10.244.1.17\"}],\"conditions\":[{\"type\":\"Ready\",\"status\":"        \
    "\"True\"}]}}"

#define POD_PENDING                                                                                \
    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"vllm-7d9f8-fghij\","         \
    "\"namespace\":\"inference\",\"uid\":\"11111111-2222-3333-4444-555555555555\","                \
    "\"resourceVersion\":\"120050\",\"labels\":{\"app\":\"vllm\"}},"                               \
    "\"spec\":{\"containers\":[{\"name\":\"vllm\"}]},"                                             \
    "\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\","                \
    "\"status\":\"False\",\"reason\":\"Unschedulable\"}],\"qosClass\":\"Burstable\"}}"

#define POD_SUCCEEDED                                                                              \
    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"train-job-x7k2p\","          \
    "\"namespace\":\"training\",\"uid\":\"66666666-7777-8888-9999-000000000000\","                 \
    "\"resourceVersion\":\"119900\",\"labels\":{\"job-name\":\"train-job\","                       \
    "\"batch.kubernetes.io/controller-uid\":\"abc\"}},"                                            \
    "\"spec\":{\"nodeName\":\"gpu-node-2\"},\"status\":{\"phase\":\"Succeeded\","                  \
    "\"podIP\":\"10.244.2.9\"}}"

#define POD_TERMINATING                                                                            \
    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"vllm-7d9f8-abcde\","         \
    "\"namespace\":\"inference\",\"uid\":\"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\","                \
    "\"resourceVersion\":\"120101\",\"deletionTimestamp\":\"2026-11-29T11:00:30Z\","               \
    "\"deletionGracePeriodSeconds\":30,\"labels\":{\"app\":\"vllm\"}},"                            \
    "\"spec\":{\"nodeName\":\"gpu-node-1\"},\"status\":{\"phase\":\"Running\","                    \
    "\"podIP\":\"10.244.1.17\"}}"

static const char pod_list[] =
    "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"120077\","
    "\"continue\":\"eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTIwMDc3LCJzdGFydCI6InRyYWluaW5nL3QifQ\","
    "\"remainingItemCount\":12},\"items\":[" POD_RUNNING "," POD_PENDING "," POD_SUCCEEDED "]}";

/* kube_pod_from_json into a pod that may hold an earlier decode's strings. */
static int decode(const json_t *j, pod_t *p, char *err, size_t errlen) {
    pod_deinit(p);
    return kube_pod_from_json(j, p, err, errlen);
}

static json_t *load(const char *s) {
    json_error_t je;
    json_t *j = json_loads(s, JSON_ALLOW_NUL, &je);
    if (!j)
        fail_msg("bad test JSON: %s", je.text);
    return j;
}

static void test_kube_pods_decodes_a_running_pod_with_labels(void **state) {
    (void)state;
    json_t *j = load(POD_RUNNING);
    pod_t p = {0};
    char err[256] = "sentinel";
    assert_int_equal(decode(j, &p, err, sizeof err), 0);
    assert_string_equal(p.namespace, "inference");
    assert_string_equal(p.name, "vllm-7d9f8-abcde");
    assert_string_equal(p.uid, "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0");
    assert_string_equal(p.node, "gpu-node-1");
    assert_string_equal(p.pod_ip, "10.244.1.17");
    assert_string_equal(p.resource_version, "120045");
    assert_int_equal(p.phase, POD_PHASE_RUNNING);
    assert_false(p.deleting);
    assert_true(p.created_unix == 1795946400); /* 2026-11-29T10:00:00Z */
    assert_int_equal(p.label_count, 3);
    assert_string_equal(pod_label(&p, "app"), "vllm");
    assert_string_equal(pod_label(&p, "app.kubernetes.io/name"), "vllm");
    assert_string_equal(pod_label(&p, "pod-template-hash"), "7d9f8");
    assert_null(pod_label(&p, "missing"));
    const char *k, *v;
    assert_int_equal(pod_label_at(&p, 0, &k, &v), 0);
    assert_string_equal(k, "app");
    assert_string_equal(v, "vllm");
    assert_int_equal(pod_label_at(&p, 3, &k, &v), KGS_ERANGE);
    json_decref(j);
    pod_deinit(&p);
}

/* creationTimestamp as Kubernetes writes it: what the queueing model ages
 * starting pods by. Anything else is "unknown", never a wrong age. */
static void test_kube_time_parse_rfc3339(void **state) {
    (void)state;
    int64_t t = -1;
    assert_true(kube_time_parse("1970-01-01T00:00:00Z", &t) && t == 0);
    assert_true(kube_time_parse("2026-11-29T10:00:00Z", &t) && t == 1795946400);
    assert_true(kube_time_parse("2024-02-29T23:59:59.123456Z", &t) && t == 1709251199);
    assert_true(kube_time_parse("2026-11-29T12:00:00+02:00", &t) && t == 1795946400);
    assert_true(kube_time_parse("2026-11-29T05:30:00-04:30", &t) && t == 1795946400);
    const char *bad[] = {"",
                         "2026-11-29",
                         "2026-11-29 10:00:00Z",
                         "2026-13-01T00:00:00Z",
                         "2026-02-30T00:00:00Z",
                         "2026-11-29T24:00:00Z",
                         "2026-11-29T10:00:00",
                         "2026-11-29T10:00:00.Z",
                         "2026-11-29T10:00:00+0200",
                         "2026-11-29T10:00:00Zjunk",
                         "20x6-11-29T10:00:00Z"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        t = 42;
        assert_false(kube_time_parse(bad[i], &t));
        assert_true(t == 42);
    }
}

static void test_kube_pods_decodes_pending_succeeded_and_terminating(void **state) {
    (void)state;
    pod_t p = {0};
    json_t *j = load(POD_PENDING);
    assert_int_equal(decode(j, &p, NULL, 0), 0);
    assert_int_equal(p.phase, POD_PHASE_PENDING);
    assert_string_equal(p.node, "");
    assert_string_equal(p.pod_ip, "");
    json_decref(j);
    j = load(POD_SUCCEEDED);
    assert_int_equal(decode(j, &p, NULL, 0), 0);
    assert_int_equal(p.phase, POD_PHASE_SUCCEEDED);
    assert_string_equal(pod_phase_name(p.phase), "Succeeded");
    json_decref(j);
    j = load(POD_TERMINATING);
    assert_int_equal(decode(j, &p, NULL, 0), 0);
    assert_true(p.deleting);
    assert_int_equal(p.phase, POD_PHASE_RUNNING);
    json_decref(j);
    /* deletionTimestamp: null is "not deleting"; an unknown phase is Unknown. */
    j = load(
        "{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\",\"uid\":\"u\","
        "\"resourceVersion\":\"1\",\"deletionTimestamp\":null},\"status\":{\"phase\":\"Weird\"}}");
    assert_int_equal(decode(j, &p, NULL, 0), 0);
    assert_false(p.deleting);
    assert_int_equal(p.phase, POD_PHASE_UNKNOWN);
    json_decref(j);
    pod_deinit(&p);
}

static void test_kube_pods_rejects_missing_identity_with_a_message(void **state) {
    (void)state;
    pod_t p = {0};
    char err[256];
    json_t *j =
        load("{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\",\"resourceVersion\":\"1\"}}");
    assert_int_equal(decode(j, &p, err, sizeof err), KGS_EINVAL);
    assert_string_equal(err, "pod b/a: metadata.uid: missing");
    json_decref(j);
    j = load(
        "{\"metadata\":{\"name\":7,\"namespace\":\"b\",\"uid\":\"u\",\"resourceVersion\":\"1\"}}");
    assert_int_equal(decode(j, &p, err, sizeof err), KGS_EINVAL);
    assert_string_equal(err, "pod: metadata.name: not a string");
    json_decref(j);
    j = load("[1]");
    assert_int_equal(decode(j, &p, err, sizeof err), KGS_EINVAL);
    json_decref(j);
    j = load("{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\",\"uid\":\"u\","
             "\"resourceVersion\":\"1\",\"labels\":{\"x\":\"a\\u0000b\"}}}");
    assert_int_equal(decode(j, &p, err, sizeof err), KGS_EINVAL);
    json_decref(j);
    pod_deinit(&p);
}

static void test_kube_pods_refuses_over_long_fields_instead_of_truncating(void **state) {
    (void)state;
    char big[400], doc[1200], err[300];
    pod_t p = {0};
    memset(big, 'v', 64);
    big[64] = '\0';
    snprintf(doc, sizeof doc,
             "{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\",\"uid\":\"u1\","
             "\"resourceVersion\":\"1\",\"labels\":{\"k\":\"%s\"}}}",
             big);
    json_t *j = load(doc);
    assert_int_equal(decode(j, &p, err, sizeof err), KGS_ERANGE);
    assert_non_null(strstr(err, "pod b/a: label k: value of 64 bytes, limit 63"));
    /* The identity survives, so a caller can drop a stale cached copy. */
    assert_string_equal(p.uid, "u1");
    assert_string_equal(p.name, "a");
    assert_int_equal(p.label_count, 0);
    json_decref(j);
    /* A 63-byte value is fine. */
    big[63] = '\0';
    snprintf(doc, sizeof doc,
             "{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\",\"uid\":\"u1\","
             "\"resourceVersion\":\"1\",\"labels\":{\"k\":\"%s\"}}}",
             big);
    j = load(doc);
    assert_int_equal(decode(j, &p, err, sizeof err), 0);
    assert_int_equal(strlen(pod_label(&p, "k")), 63);
    json_decref(j);
    /* A 64-byte namespace. */
    memset(big, 'n', 64);
    big[64] = '\0';
    snprintf(doc, sizeof doc,
             "{\"metadata\":{\"name\":\"a\",\"namespace\":\"%s\",\"uid\":\"u1\","
             "\"resourceVersion\":\"1\"}}",
             big);
    j = load(doc);
    assert_int_equal(decode(j, &p, err, sizeof err), KGS_ERANGE);
    json_decref(j);
    /* 65 labels. */
    json_t *labels = json_object();
    for (int i = 0; i < 65; i++) {
        char k[16];
        snprintf(k, sizeof k, "l%d", i);
        json_object_set_new(labels, k, json_string("x"));
    }
    j = load("{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\",\"uid\":\"u\","
             "\"resourceVersion\":\"1\"}}");
    json_object_set_new(json_object_get(j, "metadata"), "labels", labels);
    assert_int_equal(decode(j, &p, err, sizeof err), KGS_ERANGE);
    /* 64 labels fit, but 64 labels of 40-byte keys do not fit the byte budget. */
    json_object_del(labels, "l64");
    assert_int_equal(decode(j, &p, err, sizeof err), 0);
    assert_int_equal(p.label_count, 64);
    assert_string_equal(pod_label(&p, "l63"), "x");
    json_t *wide = json_object();
    for (int i = 0; i < 64; i++) {
        char k[64];
        snprintf(k, sizeof k, "example.com/a-rather-long-label-key-%04d", i);
        json_object_set_new(wide, k, json_string("value"));
    }
    json_object_set_new(json_object_get(j, "metadata"), "labels", wide);
    assert_int_equal(decode(j, &p, err, sizeof err), KGS_ERANGE);
    assert_non_null(strstr(err, "more than 2048 bytes"));
    json_decref(j);
    pod_deinit(&p);
}

static void test_kube_pods_parses_a_pod_list_page(void **state) {
    (void)state;
    kube_pod_list_t l;
    char err[256];
    assert_int_equal(kube_pod_list_parse(pod_list, strlen(pod_list), &l, err, sizeof err), 0);
    assert_int_equal(l.count, 3);
    assert_string_equal(l.resource_version, "120077");
    assert_string_equal(
        l.continue_token,
        "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTIwMDc3LCJzdGFydCI6InRyYWluaW5nL3QifQ");
    assert_string_equal(l.items[0].name, "vllm-7d9f8-abcde");
    assert_string_equal(l.items[2].namespace, "training");
    assert_int_equal(l.skipped, 0);
    kube_pod_list_deinit(&l);
    assert_null(l.items);
    kube_pod_list_deinit(&l); /* twice is harmless */
    const char empty[] = "{\"kind\":\"PodList\",\"apiVersion\":\"v1\","
                         "\"metadata\":{\"resourceVersion\":\"5\"},\"items\":[]}";
    assert_int_equal(kube_pod_list_parse(empty, sizeof empty - 1, &l, NULL, 0), 0);
    assert_int_equal(l.count, 0);
    assert_string_equal(l.continue_token, "");
    kube_pod_list_deinit(&l);
}

static void test_kube_pods_list_skips_an_over_long_pod_but_fails_on_a_broken_one(void **state) {
    (void)state;
    char big[70];
    memset(big, 'v', 64);
    big[64] = '\0';
    char doc[2048];
    snprintf(doc, sizeof doc,
             "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"9\"},\"items\":["
             "%s,{\"metadata\":{\"name\":\"odd\",\"namespace\":\"x\",\"uid\":\"u\","
             "\"resourceVersion\":\"3\",\"labels\":{\"k\":\"%s\"}}}]}",
             POD_PENDING, big);
    kube_pod_list_t l;
    char err[256];
    assert_int_equal(kube_pod_list_parse(doc, strlen(doc), &l, err, sizeof err), 0);
    assert_int_equal(l.count, 1);
    assert_int_equal(l.skipped, 1);
    assert_non_null(strstr(l.skip_reason, "pod x/odd"));
    kube_pod_list_deinit(&l);
    snprintf(doc, sizeof doc,
             "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"9\"},\"items\":["
             "%s,{\"metadata\":{\"name\":\"odd\"}}]}",
             POD_PENDING);
    l.count = 77;
    assert_int_equal(kube_pod_list_parse(doc, strlen(doc), &l, err, sizeof err), KGS_EINVAL);
    /* namespace is optional (nodes have none); the uid is not */
    assert_string_equal(err, "PodList: item 1: pod /odd: metadata.uid: missing");
    assert_int_equal(l.count, 0);
    assert_null(l.items);
    const char *bad[] = {"",
                         "{",
                         "[]",
                         "{\"kind\":\"ServiceList\",\"metadata\":{}}",
                         "{\"kind\":\"PodList\",\"items\":[]}",
                         "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"1\"},"
                         "\"items\":{}}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(kube_pod_list_parse(bad[i], strlen(bad[i]), &l, NULL, 0), KGS_EINVAL);
}

static void test_kube_pods_parses_watch_events_of_every_type(void **state) {
    (void)state;
    kube_event_type_t type = (kube_event_type_t)99;
    pod_t p = {0};
    char rv[KUBE_RV_MAX + 1] = "sentinel", err[256];
    int code = 123;
    const char added[] = "{\"type\":\"ADDED\",\"object\":" POD_RUNNING "}\n";
    assert_int_equal(kube_watch_event_parse(added, sizeof added - 1, &type, &p, rv, sizeof rv,
                                            &code, err, sizeof err),
                     0);
    assert_int_equal(type, KUBE_EVENT_ADDED);
    assert_string_equal(rv, "120045");
    assert_int_equal(code, 0);
    assert_string_equal(p.name, "vllm-7d9f8-abcde");

    const char modified[] = "{\"type\":\"MODIFIED\",\"object\":" POD_TERMINATING "}\r\n";
    pod_deinit(&p);
    assert_int_equal(kube_watch_event_parse(modified, sizeof modified - 1, &type, &p, rv, sizeof rv,
                                            &code, err, sizeof err),
                     0);
    assert_int_equal(type, KUBE_EVENT_MODIFIED);
    assert_true(p.deleting);
    assert_string_equal(rv, "120101");

    const char deleted[] = "{\"type\":\"DELETED\",\"object\":" POD_SUCCEEDED "}";
    pod_deinit(&p);
    assert_int_equal(kube_watch_event_parse(deleted, sizeof deleted - 1, &type, &p, rv, sizeof rv,
                                            &code, err, sizeof err),
                     0);
    assert_int_equal(type, KUBE_EVENT_DELETED);

    const char bookmark[] =
        "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\","
        "\"metadata\":{\"resourceVersion\":\"120500\",\"creationTimestamp\":null,"
        "\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}},"
        "\"spec\":{\"containers\":null},\"status\":{}}}";
    pod_deinit(&p);
    assert_int_equal(kube_watch_event_parse(bookmark, sizeof bookmark - 1, &type, &p, rv, sizeof rv,
                                            &code, err, sizeof err),
                     0);
    assert_int_equal(type, KUBE_EVENT_BOOKMARK);
    assert_string_equal(rv, "120500");
    assert_string_equal(p.uid, "");

    const char gone[] =
        "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\","
        "\"metadata\":{},\"status\":\"Failure\",\"message\":\"too old resource version: "
        "120045 (120400)\",\"reason\":\"Expired\",\"code\":410}}";
    pod_deinit(&p);
    assert_int_equal(kube_watch_event_parse(gone, sizeof gone - 1, &type, &p, rv, sizeof rv, &code,
                                            err, sizeof err),
                     0);
    assert_int_equal(type, KUBE_EVENT_ERROR);
    assert_int_equal(code, 410);
    assert_string_equal(rv, "");
    assert_string_equal(err, "watch ERROR event: 410: too old resource version: 120045 (120400)");

    /* pod, rv and error_code may be NULL. */
    assert_int_equal(
        kube_watch_event_parse(added, sizeof added - 1, &type, NULL, NULL, 0, NULL, NULL, 0), 0);
    pod_deinit(&p);
}

static void test_kube_pods_rejects_malformed_watch_events(void **state) {
    (void)state;
    const char *bad[] = {
        "",
        "not json",
        "{\"type\":\"ADDED\"}",
        "{\"type\":\"SYNC\",\"object\":{}}",
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{}}}",
        "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{}}}",
        "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":\"410\"}}",
        "{\"type\":\"ADDED\",\"object\":" POD_RUNNING "} trailing",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kube_event_type_t type;
        char err[256] = "";
        int rc = kube_watch_event_parse(bad[i], strlen(bad[i]), &type, NULL, NULL, 0, NULL, err,
                                        sizeof err);
        if (rc != KGS_EINVAL)
            fail_msg("case %zu (%s): rc %d", i, bad[i], rc);
        assert_true(err[0] != '\0');
    }
}

/* ---- cache ------------------------------------------------------------------------- */

static pod_t mk(const char *ns, const char *name, const char *uid, const char *rv,
                pod_phase_t phase) {
    pod_t p = {0}; /* its strings borrow the arguments: the cache copies them */
    p.namespace = ns;
    p.name = name;
    p.uid = uid;
    p.resource_version = rv;
    p.phase = phase;
    return p;
}

static int setup_cache(void **state) {
    pod_cache_t *c;
    if (pod_cache_new(&c))
        return -1;
    *state = c;
    return 0;
}

static int teardown_cache(void **state) {
    pod_cache_free(*state);
    pod_cache_free(NULL);
    return 0;
}

static bool count_cb(const pod_t *p, void *ud) {
    (void)p;
    (*(size_t *)ud)++;
    return true;
}

static void test_kube_pods_cache_adds_modifies_and_deletes(void **state) {
    pod_cache_t *c = *state;
    bool changed = false;
    assert_string_equal(pod_cache_resource_version(c), "");
    pod_t a = mk("inference", "a", "uid-a", "10", POD_PHASE_PENDING);
    assert_int_equal(pod_cache_apply(c, KUBE_EVENT_ADDED, &a, "10", &changed), 0);
    assert_true(changed);
    assert_int_equal(pod_cache_size(c), 1);
    assert_string_equal(pod_cache_resource_version(c), "10");
    assert_int_equal(pod_cache_get(c, "uid-a")->phase, POD_PHASE_PENDING);

    a.phase = POD_PHASE_RUNNING;
    a.node = "gpu-node-1";
    assert_int_equal(pod_cache_apply(c, KUBE_EVENT_MODIFIED, &a, "11", &changed), 0);
    assert_true(changed);
    assert_int_equal(pod_cache_size(c), 1);
    assert_int_equal(pod_cache_find(c, "inference", "a")->phase, POD_PHASE_RUNNING);
    assert_string_equal(pod_cache_find(c, "inference", "a")->node, "gpu-node-1");
    /* The same content again is no change, but the resourceVersion moves. */
    assert_int_equal(pod_cache_apply(c, KUBE_EVENT_MODIFIED, &a, "12", &changed), 0);
    assert_false(changed);
    assert_string_equal(pod_cache_resource_version(c), "12");

    pod_t b = mk("inference", "b", "uid-b", "13", POD_PHASE_RUNNING);
    assert_int_equal(pod_cache_apply(c, KUBE_EVENT_MODIFIED, &b, "13", &changed), 0);
    assert_true(changed); /* a MODIFIED for an unknown pod inserts it */
    assert_int_equal(pod_cache_size(c), 2);

    assert_int_equal(pod_cache_apply(c, KUBE_EVENT_DELETED, &a, "14", &changed), 0);
    assert_true(changed);
    assert_null(pod_cache_get(c, "uid-a"));
    assert_null(pod_cache_find(c, "inference", "a"));
    assert_int_equal(pod_cache_apply(c, KUBE_EVENT_DELETED, &a, "15", &changed), 0);
    assert_false(changed);

    assert_int_equal(pod_cache_apply(c, KUBE_EVENT_BOOKMARK, NULL, "20", &changed), 0);
    assert_false(changed);
    assert_string_equal(pod_cache_resource_version(c), "20");
    assert_int_equal(pod_cache_apply(c, KUBE_EVENT_ERROR, NULL, "21", &changed), KGS_EINVAL);
    assert_int_equal(pod_cache_apply(c, KUBE_EVENT_ADDED, NULL, "21", &changed), KGS_EINVAL);
    assert_string_equal(pod_cache_resource_version(c), "20");

    size_t n = 0;
    pod_cache_foreach(c, count_cb, &n);
    assert_int_equal(n, 1);
}

/* Names of the pods of a namespace, sorted, as "a,b,". */
static bool name_cb(const pod_t *p, void *ud) {
    char *out = ud;
    strcat(out, p->name);
    strcat(out, ",");
    return true;
}

static void names_in(const pod_cache_t *c, const char *ns, char *out) {
    out[0] = '\0';
    pod_cache_foreach_in(c, ns, name_cb, out);
}

static void test_kube_pods_cache_visits_one_namespace(void **state) {
    pod_cache_t *c = *state;
    char names[256];
    const char *order[] = {"a", "b", "c", "d"};
    const char *nss[] = {"team-1", "team-2", "team-1", "team-1"};
    for (int i = 0; i < 4; i++) {
        char uid[16];
        snprintf(uid, sizeof uid, "uid-%s", order[i]);
        pod_t p = mk(nss[i], order[i], uid, "1", POD_PHASE_RUNNING);
        assert_int_equal(pod_cache_apply(c, KUBE_EVENT_ADDED, &p, "1", NULL), 0);
    }
    names_in(c, "team-1", names);
    assert_int_equal(strlen(names), 6); /* a, c and d, newest first */
    assert_string_equal(names, "d,c,a,");
    names_in(c, "team-2", names);
    assert_string_equal(names, "b,");
    names_in(c, "nobody", names);
    assert_string_equal(names, "");
    /* a pod that changes stays listed once; one deleted leaves; the last
     * one of a namespace takes the namespace with it */
    pod_t c2 = mk("team-1", "c", "uid-c", "2", POD_PHASE_SUCCEEDED);
    assert_int_equal(pod_cache_apply(c, KUBE_EVENT_MODIFIED, &c2, "2", NULL), 0);
    names_in(c, "team-1", names);
    assert_string_equal(names, "c,d,a,");
    assert_true(pod_cache_remove(c, "uid-d"));
    assert_true(pod_cache_remove(c, "uid-b"));
    names_in(c, "team-1", names);
    assert_string_equal(names, "c,a,");
    names_in(c, "team-2", names);
    assert_string_equal(names, "");
    pod_t b = mk("team-2", "b", "uid-b", "3", POD_PHASE_RUNNING);
    assert_int_equal(pod_cache_apply(c, KUBE_EVENT_ADDED, &b, "3", NULL), 0);
    names_in(c, "team-2", names);
    assert_string_equal(names, "b,");
    /* a relist and a growing table keep the lists right */
    pod_t list[40];
    char nm[40][8], uid[40][12];
    for (int i = 0; i < 40; i++) {
        snprintf(nm[i], sizeof nm[i], "p%d", i);
        snprintf(uid[i], sizeof uid[i], "u%d", i);
        list[i] = mk(i % 2 ? "odd" : "even", nm[i], uid[i], "1", POD_PHASE_RUNNING);
    }
    assert_int_equal(pod_cache_replace_all(c, list, 40, "9"), 0);
    names_in(c, "team-1", names);
    assert_string_equal(names, "");
    size_t n = 0;
    pod_cache_foreach_in(c, "odd", count_cb, &n);
    assert_int_equal(n, 20);
    for (int i = 0; i < 40; i++) {
        char u2[12], n2[8];
        snprintf(u2, sizeof u2, "v%d", i);
        snprintf(n2, sizeof n2, "q%d", i);
        pod_t p = mk("odd", n2, u2, "1", POD_PHASE_RUNNING);
        assert_int_equal(pod_cache_apply(c, KUBE_EVENT_ADDED, &p, "10", NULL), 0);
    }
    n = 0;
    pod_cache_foreach_in(c, "odd", count_cb, &n);
    assert_int_equal(n, 60);
    n = 0;
    pod_cache_foreach_in(c, "even", count_cb, &n);
    assert_int_equal(n, 20);
}

static void test_kube_pods_cache_relist_drops_vanished_pods(void **state) {
    pod_cache_t *c = *state;
    pod_t a = mk("ns", "a", "uid-a", "1", POD_PHASE_RUNNING);
    pod_t b = mk("ns", "b", "uid-b", "2", POD_PHASE_RUNNING);
    assert_int_equal(pod_cache_apply(c, KUBE_EVENT_ADDED, &a, "1", NULL), 0);
    assert_int_equal(pod_cache_apply(c, KUBE_EVENT_ADDED, &b, "2", NULL), 0);
    /* b vanished while the watch was down; c is new; a changed phase. */
    pod_t list[3] = {mk("ns", "a", "uid-a", "5", POD_PHASE_SUCCEEDED),
                     mk("ns", "c", "uid-c", "6", POD_PHASE_PENDING),
                     mk("ns", "c", "uid-c", "7", POD_PHASE_RUNNING)};
    assert_int_equal(pod_cache_replace_all(c, list, 3, "100"), 0);
    assert_int_equal(pod_cache_size(c), 2);
    assert_null(pod_cache_get(c, "uid-b"));
    assert_null(pod_cache_find(c, "ns", "b"));
    assert_int_equal(pod_cache_get(c, "uid-a")->phase, POD_PHASE_SUCCEEDED);
    assert_int_equal(pod_cache_get(c, "uid-c")->phase, POD_PHASE_RUNNING); /* last copy wins */
    assert_string_equal(pod_cache_resource_version(c), "100");
    assert_int_equal(pod_cache_replace_all(c, NULL, 0, ""), 0);
    assert_int_equal(pod_cache_size(c), 0);
    pod_t nouid = mk("ns", "x", "", "1", POD_PHASE_RUNNING);
    assert_int_equal(pod_cache_replace_all(c, &nouid, 1, "1"), KGS_EINVAL);
}

/* The cache keeps its own packed copy: the decoded pod (and the JSON it
 * came from) can go at once, and every string and label reads the same. A
 * hand-built pod's NULL strings are kept as "". */
static void test_kube_pods_cache_keeps_its_own_packed_copy_of_a_pod(void **state) {
    pod_cache_t *c = *state;
    json_t *j = load(POD_RUNNING);
    pod_t p = {0};
    assert_int_equal(decode(j, &p, NULL, 0), 0);
    json_decref(j);
    assert_int_equal(pod_cache_apply(c, KUBE_EVENT_ADDED, &p, "1", NULL), 0);
    pod_deinit(&p);
    assert_string_equal(p.uid, ""); /* released, every string "" */
    const pod_t *held = pod_cache_find(c, "inference", "vllm-7d9f8-abcde");
    assert_non_null(held);
    assert_string_equal(held->uid, "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0");
    assert_string_equal(held->node, "gpu-node-1");
    assert_string_equal(held->pod_ip, "10.244.1.17");
    assert_string_equal(held->resource_version, "120045");
    assert_string_equal(held->start.message, "");
    assert_int_equal(held->label_count, 3);
    assert_string_equal(pod_label(held, "pod-template-hash"), "7d9f8");
    const char *k, *v;
    assert_int_equal(pod_label_at(held, 2, &k, &v), 0);
    assert_non_null(pod_label(held, k));
    assert_string_equal(pod_label(held, k), v);
    assert_int_equal(pod_label_at(held, 3, &k, &v), KGS_ERANGE);

    pod_t bare = {0};
    bare.uid = "uid-bare";
    assert_int_equal(pod_cache_apply(c, KUBE_EVENT_ADDED, &bare, NULL, NULL), 0);
    held = pod_cache_get(c, "uid-bare");
    assert_non_null(held);
    assert_string_equal(held->namespace, "");
    assert_string_equal(held->node, "");
    assert_string_equal(held->start.message, "");
    assert_null(pod_label(held, "app"));
    assert_non_null(pod_cache_find(c, "", ""));
}

/* A relist assembled in a second cache replaces the content in one step:
 * pods not listed are gone, the second cache is left empty and usable. */
static void test_kube_pods_cache_replace_with_takes_the_assembled_list(void **state) {
    pod_cache_t *c = *state;
    pod_t a = mk("ns", "a", "uid-a", "1", POD_PHASE_RUNNING);
    pod_t b = mk("ns", "b", "uid-b", "2", POD_PHASE_RUNNING);
    assert_int_equal(pod_cache_apply(c, KUBE_EVENT_ADDED, &a, "2", NULL), 0);
    assert_int_equal(pod_cache_apply(c, KUBE_EVENT_ADDED, &b, "2", NULL), 0);
    pod_cache_t *next;
    assert_int_equal(pod_cache_new(&next), 0);
    pod_t listed[3] = {mk("ns", "a", "uid-a", "5", POD_PHASE_SUCCEEDED),
                       mk("ns", "c", "uid-c", "6", POD_PHASE_PENDING),
                       mk("ns", "c", "uid-c", "7", POD_PHASE_RUNNING)};
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(pod_cache_apply(next, KUBE_EVENT_ADDED, &listed[i], NULL, NULL), 0);
    char long_rv[KUBE_RV_MAX + 2];
    memset(long_rv, '9', sizeof long_rv - 1);
    long_rv[sizeof long_rv - 1] = '\0';
    assert_int_equal(pod_cache_replace_with(c, next, long_rv), KGS_EINVAL);
    assert_int_equal(pod_cache_size(c), 2); /* unchanged */
    assert_int_equal(pod_cache_size(next), 2);
    assert_int_equal(pod_cache_replace_with(c, next, "100"), 0);
    assert_int_equal(pod_cache_size(c), 2);
    assert_null(pod_cache_get(c, "uid-b"));
    assert_int_equal(pod_cache_get(c, "uid-a")->phase, POD_PHASE_SUCCEEDED);
    assert_int_equal(pod_cache_find(c, "ns", "c")->phase, POD_PHASE_RUNNING); /* last copy */
    assert_string_equal(pod_cache_resource_version(c), "100");
    assert_int_equal(pod_cache_size(next), 0);
    assert_string_equal(pod_cache_resource_version(next), "");
    assert_int_equal(pod_cache_apply(next, KUBE_EVENT_ADDED, &b, NULL, NULL), 0);
    assert_non_null(pod_cache_get(next, "uid-b"));
    pod_cache_free(next);
}

static void test_kube_pods_cache_grows_and_keeps_every_pod_reachable(void **state) {
    pod_cache_t *c = *state;
    enum { N = 5000 };
    for (int i = 0; i < N; i++) {
        char name[32], uid[32];
        snprintf(name, sizeof name, "pod-%d", i);
        snprintf(uid, sizeof uid, "uid-%d", i);
        pod_t p = mk(i % 2 ? "odd" : "even", name, uid, "1", POD_PHASE_RUNNING);
        assert_int_equal(pod_cache_apply(c, KUBE_EVENT_ADDED, &p, NULL, NULL), 0);
    }
    assert_int_equal(pod_cache_size(c), N);
    for (int i = 0; i < N; i += 7) {
        char name[32], uid[32];
        snprintf(name, sizeof name, "pod-%d", i);
        snprintf(uid, sizeof uid, "uid-%d", i);
        assert_non_null(pod_cache_get(c, uid));
        assert_non_null(pod_cache_find(c, i % 2 ? "odd" : "even", name));
        assert_null(pod_cache_find(c, i % 2 ? "even" : "odd", name));
        assert_true(pod_cache_remove(c, uid));
    }
    size_t n = 0;
    pod_cache_foreach(c, count_cb, &n);
    assert_int_equal(n, pod_cache_size(c));
    assert_int_equal(n, N - (N + 6) / 7);
}

static void test_kube_pods_cache_applies_parsed_events_end_to_end(void **state) {
    pod_cache_t *c = *state;
    kube_pod_list_t l;
    assert_int_equal(kube_pod_list_parse(pod_list, strlen(pod_list), &l, NULL, 0), 0);
    assert_int_equal(pod_cache_replace_all(c, l.items, l.count, l.resource_version), 0);
    kube_pod_list_deinit(&l);
    assert_int_equal(pod_cache_size(c), 3);
    const char *events[] = {
        "{\"type\":\"MODIFIED\",\"object\":" POD_TERMINATING "}",
        "{\"type\":\"DELETED\",\"object\":" POD_SUCCEEDED "}",
    };
    for (size_t i = 0; i < 2; i++) {
        kube_event_type_t t;
        pod_t p = {0};
        char rv[KUBE_RV_MAX + 1];
        assert_int_equal(kube_watch_event_parse(events[i], strlen(events[i]), &t, &p, rv, sizeof rv,
                                                NULL, NULL, 0),
                         0);
        assert_int_equal(pod_cache_apply(c, t, &p, rv, NULL), 0);
        pod_deinit(&p);
    }
    assert_int_equal(pod_cache_size(c), 2);
    assert_true(pod_cache_find(c, "inference", "vllm-7d9f8-abcde")->deleting);
    assert_null(pod_cache_find(c, "training", "train-job-x7k2p"));
    assert_string_equal(pod_cache_resource_version(c), "119900");
}

/* ---- GPU asks --------------------------------------------------------------------- */

/* A Running pod as the API server writes it, with `spec` (the part after
 * "nodeName") and `start` (status.startTime, or "" for none) filled in. */
static pod_t pod_with_spec(const char *spec, const char *start) {
    char buf[8192];
    snprintf(buf, sizeof buf,
             "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"p\","
             "\"namespace\":\"ns\",\"uid\":\"u-1\",\"resourceVersion\":\"7\","
             "\"creationTimestamp\":\"2026-11-29T10:00:00Z\"},"
             "\"spec\":{\"nodeName\":\"gpu-node-1\",\"restartPolicy\":\"Always\",%s},"
             "\"status\":{\"phase\":\"Running\",%s%s%s\"qosClass\":\"BestEffort\"}}",
             spec, start[0] ? "\"startTime\":\"" : "", start, start[0] ? "\"," : "");
    json_t *j = load(buf);
    pod_t p = {0};
    char err[256] = "";
    if (decode(j, &p, err, sizeof err) != 0)
        fail_msg("pod did not parse: %s\n%s", err, buf);
    json_decref(j);
    return p;
}

static void test_kube_pods_reads_nvidia_limits_and_requests_as_gpu_asks(void **state) {
    (void)state;
    json_t *j = load(POD_RUNNING);
    pod_t p = {0};
    assert_int_equal(decode(j, &p, NULL, 0), 0);
    json_decref(j);
    assert_true(pod_asks_gpu(&p));
    assert_int_equal(p.gpu_asks, POD_ASK_NVIDIA_GPU);
    assert_int_equal(p.gpu_ask_count, 1);
    assert_int_equal(p.started_unix, 0); /* no startTime in this fixture */

    /* Two containers, a limit and a request-only ask (requests default to
     * limits for extended resources; a request alone is read too). */
    pod_deinit(&p);
    p = pod_with_spec("\"containers\":[{\"name\":\"vllm\",\"image\":\"vllm/vllm-openai:v0.6.3\","
                      "\"resources\":{\"limits\":{\"cpu\":\"8\",\"memory\":\"64Gi\","
                      "\"nvidia.com/gpu\":\"2\"},\"requests\":{\"cpu\":\"4\",\"memory\":\"64Gi\","
                      "\"nvidia.com/gpu\":\"2\"}}},{\"name\":\"proxy\",\"image\":\"envoy\","
                      "\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"1\"}}}]",
                      "2026-11-29T10:00:05Z");
    assert_int_equal(p.gpu_asks, POD_ASK_NVIDIA_GPU);
    assert_int_equal(p.gpu_ask_count, 3); /* 2 (limit = request, counted once) + 1 */
    assert_int_equal(p.started_unix, p.created_unix + 5);

    /* The mixed MIG strategy's resources, and a renamed shared GPU. */
    pod_deinit(&p);
    p = pod_with_spec("\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{"
                      "\"nvidia.com/mig-1g.10gb\":\"1\",\"nvidia.com/gpu.shared\":\"1\"}}}]",
                      "");
    assert_int_equal(p.gpu_asks, POD_ASK_NVIDIA_MIG | POD_ASK_NVIDIA_OTHER);
    assert_int_equal(p.gpu_ask_count, 2);
    pod_deinit(&p);
}

/* AMD's device plugin: amd.com/gpu, or a partition profile resource with
 * its mixed naming strategy (amd.com/cpx_nps4). */
static void test_kube_pods_amd_resources_are_gpu_asks(void **state) {
    (void)state;
    pod_t p = pod_with_spec("\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":"
                            "{\"amd.com/gpu\":\"2\"}}},{\"name\":\"b\",\"resources\":"
                            "{\"limits\":{\"amd.com/cpx_nps4\":\"1\"}}}]",
                            "");
    assert_true(pod_asks_gpu(&p));
    assert_int_equal(p.gpu_asks, POD_ASK_AMD);
    assert_int_equal(p.gpu_ask_count, 3);
    char d[64];
    assert_string_equal(pod_gpu_ask_describe(&p, d, sizeof d), "3 amd.com/*");
    pod_deinit(&p);
}

static void test_kube_pods_a_pod_without_a_positive_nvidia_quantity_asks_for_no_gpu(void **state) {
    (void)state;
    const char *specs[] = {
        /* CPU only */
        "\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{\"cpu\":\"1\"}}}]",
        /* a zero quantity, in both forms */
        "\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"0\"},"
        "\"requests\":{\"nvidia.com/gpu\":\"0\"}}}]",
        /* another vendor's device, not a GPU */
        "\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{\"example.com/fpga\":\"1\"}}}]",
        /* a zero AMD quantity */
        "\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{\"amd.com/gpu\":\"0\"}}}]",
        /* no resources at all */
        "\"containers\":[{\"name\":\"a\",\"image\":\"busybox\"}]",
        /* a plain init container: it has exited by the time the pod runs */
        "\"initContainers\":[{\"name\":\"warmup\",\"resources\":{\"limits\":"
        "{\"nvidia.com/gpu\":\"1\"}}}],\"containers\":[{\"name\":\"a\"}]",
        /* an empty resourceClaims list */
        "\"containers\":[{\"name\":\"a\"}],\"resourceClaims\":[]",
    };
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        pod_t p = pod_with_spec(specs[i], "");
        if (pod_asks_gpu(&p))
            fail_msg("spec %zu asks for a GPU (bits %#x): %s", i, p.gpu_asks, specs[i]);
        assert_int_equal(p.gpu_ask_count, 0);
        char d[64];
        assert_string_equal(pod_gpu_ask_describe(&p, d, sizeof d), "nothing");
        pod_deinit(&p);
    }
}

static void test_kube_pods_sidecars_and_resource_claims_ask_for_gpus(void **state) {
    (void)state;
    /* A restartable init container (a sidecar) runs for the pod's life. */
    pod_t p = pod_with_spec("\"initContainers\":[{\"name\":\"embed\",\"restartPolicy\":\"Always\","
                            "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}],"
                            "\"containers\":[{\"name\":\"a\"}]",
                            "");
    assert_int_equal(p.gpu_asks, POD_ASK_NVIDIA_GPU);
    assert_int_equal(p.gpu_ask_count, 1);
    char d[96];
    assert_string_equal(pod_gpu_ask_describe(&p, d, sizeof d), "1 nvidia.com/gpu");

    /* DRA: the pod's claims, referenced by its containers. */
    pod_deinit(&p);
    p = pod_with_spec("\"containers\":[{\"name\":\"a\",\"resources\":{\"claims\":[{\"name\":"
                      "\"gpu\"}]}}],\"resourceClaims\":[{\"name\":\"gpu\","
                      "\"resourceClaimTemplateName\":\"single-gpu\"},{\"name\":\"mig\","
                      "\"resourceClaimName\":\"shared-mig\"}]",
                      "");
    assert_int_equal(p.gpu_asks, POD_ASK_CLAIM);
    assert_int_equal(p.gpu_claims, 2);
    assert_string_equal(pod_gpu_ask_describe(&p, d, sizeof d), "2 resource claims (DRA)");

    pod_deinit(&p);
    p = pod_with_spec("\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{"
                      "\"nvidia.com/gpu\":\"2\",\"nvidia.com/mig-3g.40gb\":\"1\"}}}],"
                      "\"resourceClaims\":[{\"name\":\"x\",\"resourceClaimName\":\"c\"}]",
                      "");
    assert_string_equal(pod_gpu_ask_describe(&p, d, sizeof d),
                        "3 of nvidia.com/gpu, nvidia.com/mig-* and 1 resource claim (DRA)");
    /* Cut to the buffer, NUL-terminated. */
    assert_string_equal(pod_gpu_ask_describe(&p, d, 6), "3 of ");
    pod_deinit(&p);
}

static void test_kube_quantity_positive_reads_kubernetes_quantities(void **state) {
    (void)state;
    static const struct {
        const char *json;
        bool positive;
        unsigned count;
    } cases[] = {
        {"\"1\"", true, 1},       {"\"2\"", true, 2},    {"\"0\"", false, 0},
        {"\"000\"", false, 0},    {"\"-1\"", false, 0},  {"\"+3\"", true, 3},
        {"\"1k\"", true, 1},      {"\"0k\"", false, 0},  {"\"5e2\"", true, 1},
        {"\"0.5\"", true, 1},     {"\"0.0\"", false, 0}, {"\"70000\"", true, 65535},
        {"\"garbage\"", true, 1}, {"\"\"", true, 1},     {"2", true, 2},
        {"0", false, 0},          {"-2.5", false, 0},    {"null", false, 0},
        {"{}", true, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_error_t je;
        json_t *q = json_loads(cases[i].json, JSON_DECODE_ANY, &je);
        if (!q)
            fail_msg("bad test JSON %s", cases[i].json);
        uint16_t n = 777;
        bool pos = kube_quantity_positive(q, &n);
        json_decref(q);
        if (pos != cases[i].positive || n != cases[i].count)
            fail_msg("quantity %s: positive %d count %u, want %d %u", cases[i].json, pos,
                     (unsigned)n, cases[i].positive, cases[i].count);
    }
}

static void test_kube_pods_cache_sees_a_changed_start_time_or_ask(void **state) {
    pod_cache_t *c = *state;
    pod_t a = pod_with_spec("\"containers\":[{\"name\":\"a\"}]", "");
    pod_t b = pod_with_spec("\"containers\":[{\"name\":\"a\"}]", "2026-11-29T10:00:07Z");
    bool changed = false;
    assert_int_equal(pod_cache_apply(c, KUBE_EVENT_ADDED, &a, "7", &changed), 0);
    assert_true(changed);
    assert_int_equal(pod_cache_apply(c, KUBE_EVENT_MODIFIED, &b, "7", &changed), 0);
    assert_true(changed);
    assert_int_equal(pod_cache_get(c, "u-1")->started_unix, b.started_unix);
    pod_deinit(&a);
    pod_deinit(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kube_pods_decodes_a_running_pod_with_labels),
        cmocka_unit_test(test_kube_time_parse_rfc3339),
        cmocka_unit_test(test_kube_pods_decodes_pending_succeeded_and_terminating),
        cmocka_unit_test(test_kube_pods_rejects_missing_identity_with_a_message),
        cmocka_unit_test(test_kube_pods_refuses_over_long_fields_instead_of_truncating),
        cmocka_unit_test(test_kube_pods_parses_a_pod_list_page),
        cmocka_unit_test(test_kube_pods_list_skips_an_over_long_pod_but_fails_on_a_broken_one),
        cmocka_unit_test(test_kube_pods_parses_watch_events_of_every_type),
        cmocka_unit_test(test_kube_pods_rejects_malformed_watch_events),
        cmocka_unit_test_setup_teardown(test_kube_pods_cache_adds_modifies_and_deletes, setup_cache,
                                        teardown_cache),
        cmocka_unit_test_setup_teardown(test_kube_pods_cache_visits_one_namespace, setup_cache,
                                        teardown_cache),
        cmocka_unit_test_setup_teardown(test_kube_pods_cache_relist_drops_vanished_pods,
                                        setup_cache, teardown_cache),
        cmocka_unit_test_setup_teardown(test_kube_pods_cache_keeps_its_own_packed_copy_of_a_pod,
                                        setup_cache, teardown_cache),
        cmocka_unit_test_setup_teardown(test_kube_pods_cache_replace_with_takes_the_assembled_list,
                                        setup_cache, teardown_cache),
        cmocka_unit_test_setup_teardown(test_kube_pods_cache_grows_and_keeps_every_pod_reachable,
                                        setup_cache, teardown_cache),
        cmocka_unit_test_setup_teardown(test_kube_pods_cache_applies_parsed_events_end_to_end,
                                        setup_cache, teardown_cache),
        cmocka_unit_test(test_kube_pods_reads_nvidia_limits_and_requests_as_gpu_asks),
        cmocka_unit_test(test_kube_pods_amd_resources_are_gpu_asks),
        cmocka_unit_test(test_kube_pods_a_pod_without_a_positive_nvidia_quantity_asks_for_no_gpu),
        cmocka_unit_test(test_kube_pods_sidecars_and_resource_claims_ask_for_gpus),
        cmocka_unit_test(test_kube_quantity_positive_reads_kubernetes_quantities),
        cmocka_unit_test_setup_teardown(test_kube_pods_cache_sees_a_changed_start_time_or_ask,
                                        setup_cache, teardown_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
