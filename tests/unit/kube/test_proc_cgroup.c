/*
 * /proc/<pid>/cgroup lines in the formats real nodes write: cgroup v2 and
 * v1, the kubelet's systemd and cgroupfs drivers, containerd, Docker and
 * CRI-O, and paths relative to a containerised reader's cgroup namespace.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/err.h"
#include "kube/proc_cgroup.h"

#define UID "5f3c1b2a-9d4e-4f6a-8b7c-1234567890ab"
#define UID_ "5f3c1b2a_9d4e_4f6a_8b7c_1234567890ab"
#define CID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static int parse(const char *text, cgroup_pod_t *out, char *err) {
    return cgroup_pod_parse(text, strlen(text), out, err, 256);
}

static void expect_pod(const char *text, const char *uid, const char *cid, const char *runtime) {
    cgroup_pod_t p;
    char err[256] = "";
    int rc = parse(text, &p, err);
    if (rc != 0)
        fail_msg("rc %d (%s) for %s", rc, err, text);
    assert_string_equal(p.pod_uid, uid);
    assert_string_equal(p.container_id, cid);
    assert_string_equal(p.runtime, runtime);
}

static void test_cgroup_v2_systemd_driver(void **state) {
    (void)state;
    expect_pod("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
               ".slice/cri-containerd-" CID ".scope\n",
               UID, CID, "containerd");
    /* Guaranteed QoS: no QoS slice */
    expect_pod("0::/kubepods.slice/kubepods-pod" UID_ ".slice/docker-" CID ".scope\n", UID, CID,
               "docker");
    expect_pod("0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_
               ".slice/crio-" CID ".scope\n",
               UID, CID, "crio");
    /* Upper-case hex is folded; no trailing newline is fine. */
    expect_pod("0::/kubepods.slice/kubepods-pod5F3C1B2A_9D4E_4F6A_8B7C_1234567890AB.slice", UID, "",
               "");
}

static void test_cgroup_v2_cgroupfs_driver(void **state) {
    (void)state;
    expect_pod("0::/kubepods/burstable/pod" UID "/" CID "\n", UID, CID, "");
    expect_pod("0::/kubepods/pod" UID "/" CID "\n", UID, CID, "");
}

static void test_cgroup_v2_relative_to_the_readers_namespace(void **state) {
    (void)state;
    /* What a containerised agent with a private cgroup namespace reads. */
    expect_pod("0::/../../kubepods-besteffort-pod" UID_ ".slice/cri-containerd-" CID ".scope\n",
               UID, CID, "containerd");
}

static void test_cgroup_v1_lines(void **state) {
    (void)state;
    expect_pod("12:memory:/kubepods/burstable/pod" UID "/" CID "\n"
               "11:cpu,cpuacct:/kubepods/burstable/pod" UID "/" CID "\n"
               "1:name=systemd:/kubepods/burstable/pod" UID "/" CID "\n"
               "0::/\n",
               UID, CID, "");
    /* Hybrid: v1 controllers with the systemd driver, unified line at the end. */
    expect_pod("10:devices:/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
               ".slice/docker-" CID ".scope\n"
               "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
               ".slice/docker-" CID ".scope\n",
               UID, CID, "docker");
}

static void test_cgroup_static_pod_and_crio_conmon(void **state) {
    (void)state;
    /* A static pod's UID is a 32-hex hash; conmon is not the container. */
    expect_pod("0::/kubepods.slice/kubepods-burstable.slice/"
               "kubepods-burstable-pod0b1f8bc6a1bc4e1b8b2d0e2fdc3b6f5e.slice/crio-conmon-" CID
               ".scope\n",
               "0b1f8bc6a1bc4e1b8b2d0e2fdc3b6f5e", "", "");
}

static void test_cgroup_host_processes_are_not_found(void **state) {
    (void)state;
    cgroup_pod_t p;
    char err[256] = "";
    assert_int_equal(parse("0::/system.slice/containerd.service\n", &p, err), KGS_ENOTFOUND);
    assert_non_null(strstr(err, "no Kubernetes pod"));
    assert_int_equal(parse("0::/user.slice/user-1000.slice/session-2.scope\n", &p, err),
                     KGS_ENOTFOUND);
    /* "kubepods" alone (the QoS slice, or a pod-less path) names no pod. */
    assert_int_equal(parse("0::/kubepods.slice/kubepods-burstable.slice\n", &p, err),
                     KGS_ENOTFOUND);
    /* A UID of the wrong shape is not a pod. */
    assert_int_equal(parse("0::/kubepods/burstable/pod1234/" CID "\n", &p, err), KGS_ENOTFOUND);
    assert_int_equal(parse("0::/kubepods/burstable/pod" UID_ "/" CID "\n", &p, err),
                     KGS_ENOTFOUND); /* cgroupfs keeps the dashes */
}

static void test_cgroup_malformed_text_is_invalid(void **state) {
    (void)state;
    cgroup_pod_t p;
    char err[256] = "";
    assert_int_equal(parse("", &p, err), KGS_EINVAL);
    assert_non_null(strstr(err, "empty"));
    assert_int_equal(parse("not a cgroup file\n", &p, err), KGS_EINVAL);
    assert_non_null(strstr(err, "line 1"));
    assert_int_equal(parse("x::/kubepods/pod" UID "\n", &p, err), KGS_EINVAL);
    assert_non_null(strstr(err, "\"x\""));
    assert_int_equal(parse("0::/kubepods/pod" UID "\n"
                           "1:name=systemd:/kubepods/pod11111111-2222-3333-4444-555555555555\n",
                           &p, err),
                     KGS_EINVAL);
    assert_non_null(strstr(err, "two pods"));
}

static void test_proc_cgroup_read_from_a_proc_tree(void **state) {
    (void)state;
    char root[] = "/tmp/test_proc_cgroup.XXXXXX";
    assert_non_null(mkdtemp(root));
    char dir[300], file[320];
    snprintf(dir, sizeof dir, "%s/4242", root);
    assert_int_equal(mkdir(dir, 0700), 0);
    snprintf(file, sizeof file, "%s/cgroup", dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs("0::/kubepods/burstable/pod" UID "/" CID "\n", f);
    fclose(f);
    cgroup_pod_t p;
    char err[512] = "";
    assert_int_equal(proc_cgroup_read(root, 4242, &p, err, sizeof err), 0);
    assert_string_equal(p.pod_uid, UID);
    assert_int_equal(proc_cgroup_read(root, 4243, &p, err, sizeof err), KGS_EIO);
    assert_non_null(strstr(err, "4243/cgroup"));

    /* A snapshot's records get their pods; an unreadable pid stays "". */
    snapshot_t *s = snapshot_new_with_procs(1, 0, 2);
    assert_non_null(s);
    s->procs[0].pid = 4242;
    s->procs[1].pid = 4243;
    snprintf(s->procs[1].pod_uid, sizeof s->procs[1].pod_uid, "stale");
    assert_int_equal(proc_cgroup_annotate(s, root), 1);
    assert_true(s->procs_attributed);
    assert_string_equal(s->procs[0].pod_uid, UID);
    assert_string_equal(s->procs[0].container_id, CID);
    assert_string_equal(s->procs[1].pod_uid, "");
    snapshot_unref(s);
    unlink(file);
    rmdir(dir);
    rmdir(root);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cgroup_v2_systemd_driver),
        cmocka_unit_test(test_cgroup_v2_cgroupfs_driver),
        cmocka_unit_test(test_cgroup_v2_relative_to_the_readers_namespace),
        cmocka_unit_test(test_cgroup_v1_lines),
        cmocka_unit_test(test_cgroup_static_pod_and_crio_conmon),
        cmocka_unit_test(test_cgroup_host_processes_are_not_found),
        cmocka_unit_test(test_cgroup_malformed_text_is_invalid),
        cmocka_unit_test(test_proc_cgroup_read_from_a_proc_tree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
