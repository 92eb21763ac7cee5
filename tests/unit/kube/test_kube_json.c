/*
 * test_kube_json.c - the JSON helpers the pod and ResourceSlice decoders
 * share (kube/kube_json.h): what they accept, and the messages that name
 * the object, the field and the bound.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "kube/kube_json.h"
#include "core/err.h"

static json_t *parse(const char *doc) {
    json_error_t je;
    json_t *j = json_loads(doc, JSON_ALLOW_NUL, &je);
    assert_non_null(j);
    return j;
}

static void test_kube_json_load_names_the_document_and_keeps_the_callers_flags(void **state) {
    (void)state;
    char err[256];
    int rc = -1;
    const char dup[] = "{\"a\":1,\"a\":2}";
    json_t *j = kube_json_load(dup, sizeof dup - 1, 0, "PodList", err, sizeof err, &rc);
    assert_non_null(j);
    assert_int_equal(rc, 0);
    json_decref(j);
    assert_null(kube_json_load(dup, sizeof dup - 1, JSON_REJECT_DUPLICATES, "ResourceSliceList",
                               err, sizeof err, &rc));
    assert_int_equal(rc, KGS_EINVAL);
    assert_non_null(strstr(err, "ResourceSliceList: bad JSON at line 1 column"));
    assert_null(kube_json_load("[1]", 3, 0, "watch event", err, sizeof err, &rc));
    assert_int_equal(rc, KGS_EINVAL);
    assert_string_equal(err, "watch event: not a JSON object");
}

static void test_kube_json_string_checks_presence_type_nul_bound_and_emptiness(void **state) {
    (void)state;
    char err[256];
    const char *s = NULL;
    json_t *j =
        parse("{\"ok\":\"abc\",\"num\":1,\"nul\":\"a\\u0000b\",\"empty\":\"\",\"nil\":null}");
    assert_int_equal(kube_json_string(j, "ok", true, &s, 4, "pod a/b", "x", err, sizeof err), 0);
    assert_string_equal(s, "abc");
    assert_int_equal(
        kube_json_string(j, "ok", true, &s, 3, "pod a/b", "metadata.name", err, sizeof err),
        KGS_ERANGE);
    assert_string_equal(err, "pod a/b: metadata.name: 3 bytes, limit 2");
    assert_string_equal(s, "");
    assert_int_equal(kube_json_string(j, "num", false, &s, 8, "w", "f", err, sizeof err),
                     KGS_EINVAL);
    assert_string_equal(err, "w: f: not a string");
    assert_int_equal(kube_json_string(j, "nul", false, &s, 8, "w", "f", err, sizeof err),
                     KGS_EINVAL);
    assert_string_equal(err, "w: f: contains a NUL character");
    assert_int_equal(kube_json_string(j, "empty", true, &s, 8, "w", "f", err, sizeof err),
                     KGS_EINVAL);
    assert_string_equal(err, "w: f: empty");
    assert_int_equal(kube_json_string(j, "empty", false, &s, 8, "w", "f", err, sizeof err), 0);
    assert_int_equal(kube_json_string(j, "nil", true, &s, 8, "w", "f", err, sizeof err),
                     KGS_EINVAL);
    assert_string_equal(err, "w: f: missing");
    assert_int_equal(kube_json_string(NULL, "nil", false, &s, 8, "w", "f", err, sizeof err), 0);
    assert_string_equal(s, "");
    char buf[4] = "zzz";
    assert_int_equal(kube_json_copy(j, "ok", true, buf, 3, "w", "f", err, sizeof err), KGS_ERANGE);
    assert_string_equal(buf, "");
    assert_int_equal(kube_json_copy(j, "ok", true, buf, sizeof buf, "w", "f", err, sizeof err), 0);
    assert_string_equal(buf, "abc");
    bool bad = false;
    assert_null(kube_json_object(j, "nil", &bad));
    assert_false(bad);
    assert_null(kube_json_object(j, "ok", &bad));
    assert_true(bad);
    json_decref(j);
}

static void test_kube_json_list_head_reads_kind_version_continue_and_items(void **state) {
    (void)state;
    static const char *const kinds[] = {"PodList", "NodeList", NULL};
    char err[256], rv[8], cont[8];
    const json_t *items = (const json_t *)&items;
    json_t *j = parse("{\"kind\":\"NodeList\",\"metadata\":{\"resourceVersion\":\"7\","
                      "\"continue\":\"c1\"},\"items\":[{}, {}]}");
    assert_int_equal(kube_json_list_head(j, kinds, "PodList", rv, sizeof rv, cont, sizeof cont,
                                         &items, err, sizeof err),
                     0);
    assert_string_equal(rv, "7");
    assert_string_equal(cont, "c1");
    assert_non_null(items);
    assert_int_equal(json_array_size(items), 2);
    json_decref(j);
    static const struct {
        const char *doc;
        int rc;
        const char *err;
    } bad[] = {
        {"{\"kind\":\"PodLists\",\"metadata\":{\"resourceVersion\":\"7\"}}", KGS_EINVAL,
         "PodList: kind is not \"PodList\" or \"NodeList\""},
        {"{\"metadata\":[]}", KGS_EINVAL, "PodList: metadata: missing or not an object"},
        {"{\"metadata\":{}}", KGS_EINVAL, "PodList: metadata.resourceVersion: missing"},
        {"{\"metadata\":{\"resourceVersion\":\"12345678\"}}", KGS_ERANGE,
         "PodList: metadata.resourceVersion: 8 bytes, limit 7"},
        {"{\"metadata\":{\"resourceVersion\":\"7\"},\"items\":{}}", KGS_EINVAL,
         "PodList: items: not an array"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        j = parse(bad[i].doc);
        assert_int_equal(kube_json_list_head(j, kinds, "PodList", rv, sizeof rv, cont, sizeof cont,
                                             &items, err, sizeof err),
                         bad[i].rc);
        assert_string_equal(err, bad[i].err);
        json_decref(j);
    }
    /* no items, or null: an empty page */
    j = parse("{\"metadata\":{\"resourceVersion\":\"7\"},\"items\":null}");
    assert_int_equal(kube_json_list_head(j, kinds, "PodList", rv, sizeof rv, cont, sizeof cont,
                                         &items, err, sizeof err),
                     0);
    assert_null(items);
    assert_string_equal(cont, "");
    json_decref(j);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kube_json_load_names_the_document_and_keeps_the_callers_flags),
        cmocka_unit_test(test_kube_json_string_checks_presence_type_nul_bound_and_emptiness),
        cmocka_unit_test(test_kube_json_list_head_reads_kind_version_continue_and_items),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
