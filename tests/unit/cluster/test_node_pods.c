/* test_node_pods.c - the pod attribution list: deep copies, bounds with
 * messages, unknown lists with a reason, and lookups that see through
 * time-slicing replica suffixes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cluster/node_pods.h"
#include "core/err.h"

static void test_node_pods_copies_entries_deeply(void **state) {
    (void)state;
    char ns[] = "ml", pod[] = "trainer-0", ctr[] = "main", dev[] = "GPU-a";
    const char *ids[] = {dev};
    node_pod_entry_t e = {ns, pod, ctr, ids, 1};
    node_pods_t *p = (node_pods_t *)&e; /* sentinel */
    assert_int_equal(node_pods_new(&e, 1, &p, NULL, 0), 0);
    ns[0] = pod[0] = ctr[0] = dev[0] = 'X';
    assert_true(p->known);
    assert_string_equal(p->error, "");
    assert_int_equal(p->count, 1);
    assert_string_equal(p->entries[0].namespace_, "ml");
    assert_string_equal(p->entries[0].pod, "trainer-0");
    assert_string_equal(p->entries[0].container, "main");
    assert_string_equal(p->entries[0].device_ids[0], "GPU-a");
    node_pods_free(p);
    node_pods_free(NULL);
}

static void test_node_pods_empty_known_list_has_no_entries(void **state) {
    (void)state;
    node_pods_t *p = NULL;
    assert_int_equal(node_pods_new(NULL, 0, &p, NULL, 0), 0);
    assert_true(p->known);
    assert_null(p->entries);
    assert_int_equal(p->count, 0);
    assert_int_equal(node_pods_lookup(p, "GPU-a", NULL, 0), 0);
    node_pods_free(p);
}

static void test_node_pods_lookup_strips_replica_suffixes_and_counts_all(void **state) {
    (void)state;
    const char *a[] = {"GPU-a::0", "GPU-a::1"}; /* one container, two replicas */
    const char *b[] = {"GPU-b", "GPU-a::2"};
    const char *c[] = {"MIG-m"};
    const char *d[] = {"GPU-ab"}; /* a longer uuid with the same prefix */
    node_pod_entry_t e[] = {{"n", "p1", "c", a, 2},
                            {"n", "p2", "c", b, 2},
                            {"n", "p3", "c", c, 1},
                            {"n", "p4", "c", d, 1}};
    node_pods_t *p = NULL;
    assert_int_equal(node_pods_new(e, 4, &p, NULL, 0), 0);
    const node_pod_entry_t *hit[4] = {NULL};
    assert_int_equal(node_pods_lookup(p, "GPU-a", hit, 4), 2);
    assert_string_equal(hit[0]->pod, "p1");
    assert_string_equal(hit[1]->pod, "p2");
    assert_null(hit[2]);
    /* The query may carry a suffix too; max bounds what is written. */
    assert_int_equal(node_pods_lookup(p, "GPU-a::7", hit, 1), 2);
    assert_int_equal(node_pods_lookup(p, "MIG-m", hit, 4), 1);
    assert_string_equal(hit[0]->pod, "p3");
    assert_int_equal(node_pods_lookup(p, "GPU-zz", hit, 4), 0);
    assert_int_equal(node_pods_lookup(p, NULL, hit, 4), 0);
    assert_int_equal(node_pods_lookup(NULL, "GPU-a", hit, 4), 0);
    node_pods_free(p);
}

static void test_node_pods_rejects_bounds_with_messages(void **state) {
    (void)state;
    char longname[300];
    memset(longname, 'x', 254);
    longname[254] = '\0';
    node_pods_t *p = (node_pods_t *)longname;
    char err[256];
    node_pod_entry_t e = {"n", longname, "c", NULL, 0};
    assert_int_equal(node_pods_new(&e, 1, &p, err, sizeof err), KGS_EINVAL);
    assert_null(p);
    assert_string_equal(err, "node pods: entries[0]: pod: longer than 253 bytes");

    node_pod_entry_t missing = {"n", NULL, "c", NULL, 0};
    assert_int_equal(node_pods_new(&missing, 1, &p, err, sizeof err), KGS_EINVAL);
    assert_string_equal(err, "node pods: entries[0]: pod: missing");

    char longid[300];
    memset(longid, 'g', 257);
    longid[257] = '\0';
    const char *ids[] = {"GPU-a", longid};
    node_pod_entry_t e2[] = {{"n", "p", "c", NULL, 0}, {"n", "p", "c", ids, 2}};
    assert_int_equal(node_pods_new(e2, 2, &p, err, sizeof err), KGS_EINVAL);
    assert_string_equal(err, "node pods: entries[1]: device id: longer than 256 bytes");

    node_pod_entry_t nodev = {"n", "p", "c", NULL, 3};
    assert_int_equal(node_pods_new(&nodev, 1, &p, err, sizeof err), KGS_EINVAL);
    assert_string_equal(err, "node pods: entries[0]: device ids missing");

    assert_int_equal(node_pods_new(&nodev, NODE_PODS_MAX_ENTRIES + 1, &p, err, sizeof err),
                     KGS_EINVAL);
    assert_string_equal(err, "node pods: 16385 entries, at most 16384");
}

static void test_node_pods_unknown_carries_a_cut_reason(void **state) {
    (void)state;
    node_pods_t *p = NULL;
    assert_int_equal(node_pods_new_unknown("dial unix /var/lib/kubelet: ENOENT", &p), 0);
    assert_false(p->known);
    assert_string_equal(p->error, "dial unix /var/lib/kubelet: ENOENT");
    assert_int_equal(p->count, 0);
    node_pods_free(p);

    char big[600];
    memset(big, 'r', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(node_pods_new_unknown(big, &p), 0);
    assert_int_equal(strlen(p->error), NODE_PODS_ERROR_MAX);
    node_pods_free(p);

    assert_int_equal(node_pods_new_unknown(NULL, &p), 0);
    assert_string_equal(p->error, "");
    node_pods_free(p);
}

static const char *resolve_some(void *ud, const char *driver, const char *pool,
                                const char *device) {
    (void)ud;
    (void)pool;
    if (strcmp(driver, "nic.example.com") == 0)
        return "";
    return strcmp(device, "gpu-0") == 0 ? "GPU-r0" : NULL;
}

static void test_node_pods_resolve_appends_uuids_after_the_plugin_ids(void **state) {
    (void)state;
    const char *ids[] = {"GPU-plugin"};
    node_pod_dra_t d[3] = {{"gpu.nvidia.com", "n1", "gpu-0", "", "", false},
                           {"gpu.nvidia.com", "n1", "gpu-9", "", "", false},
                           {"nic.example.com", "n1", "eth0", "", "", false}};
    node_pod_entry_t e[] = {{"ml", "p", "c", ids, 1, d, 3, 3}};
    node_pods_t *raw = NULL, *r1 = NULL, *r2 = NULL;
    assert_int_equal(node_pods_new(e, 1, &raw, NULL, 0), 0);
    assert_int_equal(raw->entries[0].dra_unresolved, 3);
    assert_int_equal(node_pods_resolve(raw, resolve_some, NULL, &r1, NULL, 0), 0);
    const node_pod_entry_t *x = &r1->entries[0];
    assert_int_equal(x->device_count, 2);
    assert_string_equal(x->device_ids[0], "GPU-plugin");
    assert_string_equal(x->device_ids[1], "GPU-r0");
    assert_int_equal(x->dra_unresolved, 1); /* gpu-9; the NIC is known, not a GPU */
    assert_true(x->dra[2].not_gpu);
    assert_false(node_pods_equal(raw, r1));
    /* Resolving the resolved list again starts from the plugin ids. */
    assert_int_equal(node_pods_resolve(r1, resolve_some, NULL, &r2, NULL, 0), 0);
    assert_true(node_pods_equal(r1, r2));
    assert_int_equal(r2->entries[0].device_count, 2);
    node_pods_free(r2);
    node_pods_free(r1);
    node_pods_free(raw);
}

static void test_node_pods_resolved_from_ignores_only_the_resolution(void **state) {
    (void)state;
    const char *ids[] = {"GPU-plugin"};
    node_pod_dra_t d[2] = {{"gpu.nvidia.com", "n1", "gpu-0", "", "", false},
                           {"nic.example.com", "n1", "eth0", "", "", false}};
    node_pod_entry_t e[] = {{"ml", "p", "c", ids, 1, d, 2, 2}};
    node_pods_t *sent = NULL, *r = NULL, *other = NULL;
    assert_int_equal(node_pods_new(e, 1, &sent, NULL, 0), 0);
    assert_int_equal(node_pods_resolve(sent, resolve_some, NULL, &r, NULL, 0), 0);
    assert_false(node_pods_equal(r, sent)); /* a uuid, an extra id, a not_gpu */
    assert_true(node_pods_resolved_from(r, sent));
    assert_true(node_pods_resolved_from(sent, sent));
    /* A different device, share id or plugin id is another list. */
    d[0].share_id = "s1";
    assert_int_equal(node_pods_new(e, 1, &other, NULL, 0), 0);
    assert_false(node_pods_resolved_from(r, other));
    node_pods_free(other);
    d[0].share_id = "";
    ids[0] = "GPU-other";
    assert_int_equal(node_pods_new(e, 1, &other, NULL, 0), 0);
    assert_false(node_pods_resolved_from(r, other));
    /* `sent` must carry no resolution of its own. */
    assert_false(node_pods_resolved_from(sent, r));
    assert_false(node_pods_resolved_from(r, NULL));
    assert_true(node_pods_resolved_from(NULL, NULL));
    node_pods_free(other);
    node_pods_free(r);
    node_pods_free(sent);
}

static void test_node_pods_rejects_a_dra_device_without_driver(void **state) {
    (void)state;
    node_pod_dra_t d = {"", "n1", "gpu-0", "", "", false};
    node_pod_entry_t e[] = {{"ml", "p", "c", NULL, 0, &d, 1, 1}};
    node_pods_t *p = NULL;
    char err[256];
    assert_int_equal(node_pods_new(e, 1, &p, err, sizeof err), KGS_EINVAL);
    assert_string_equal(err, "node pods: entries[0]: DRA device 0: empty driver");
    assert_null(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_pods_copies_entries_deeply),
        cmocka_unit_test(test_node_pods_empty_known_list_has_no_entries),
        cmocka_unit_test(test_node_pods_lookup_strips_replica_suffixes_and_counts_all),
        cmocka_unit_test(test_node_pods_rejects_bounds_with_messages),
        cmocka_unit_test(test_node_pods_unknown_carries_a_cut_reason),
        cmocka_unit_test(test_node_pods_resolve_appends_uuids_after_the_plugin_ids),
        cmocka_unit_test(test_node_pods_resolved_from_ignores_only_the_resolution),
        cmocka_unit_test(test_node_pods_rejects_a_dra_device_without_driver),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
