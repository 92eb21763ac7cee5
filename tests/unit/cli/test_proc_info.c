/*
 * test_proc_info.c - command names and pods of GPU processes from a /proc
 * tree, looked up only where /proc counts process ids as NVML does (the
 * host's PID namespace). The trees are fakes built in a temporary
 * directory: <root>/self/ns/pid is a symbolic link whose text is what the
 * kernel would show.
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

#include "cli/proc_info.h"
#include "core/err.h"

#define POD_UID "5f3c1b2a-9d4e-4f6a-8b7c-1234567890ab"
#define CID "3b5e0d1c2a4f6e8d0b1c3a5e7f9d2b4c6a8e0f1d3c5b7a9e2d4f6b8c0a1e3d5f"

typedef struct {
    char root[64];
} tree_t;

static void write_file(const char *root, const char *rel, const char *text) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

static void make_dir(const char *root, const char *rel) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    assert_int_equal(mkdir(path, 0755), 0);
}

/* A tree whose self/ns/pid says `ns` (NULL: no such link), with process
 * 4242 (comm and a pod's cgroup) and 4343 (comm, a host process). */
static int tree_setup(void **state, const char *ns) {
    tree_t *t = calloc(1, sizeof *t);
    if (!t)
        return -1;
    snprintf(t->root, sizeof t->root, "/tmp/kgs-proc-XXXXXX");
    if (!mkdtemp(t->root))
        return -1;
    make_dir(t->root, "self");
    make_dir(t->root, "self/ns");
    if (ns) {
        char link[256];
        snprintf(link, sizeof link, "%s/self/ns/pid", t->root);
        if (symlink(ns, link) != 0)
            return -1;
    }
    make_dir(t->root, "4242");
    write_file(t->root, "4242/comm", "python3\n");
    write_file(t->root, "4242/cgroup",
               "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
               "5f3c1b2a_9d4e_4f6a_8b7c_1234567890ab.slice/cri-containerd-" CID ".scope\n");
    make_dir(t->root, "4343");
    write_file(t->root, "4343/comm", "slurmstepd\n");
    write_file(t->root, "4343/cgroup", "0::/system.slice/slurmstepd.scope/job_7/step_0\n");
    *state = t;
    return 0;
}

static int setup_host(void **state) {
    return tree_setup(state, "pid:[4026531836]");
}

static int setup_container(void **state) {
    return tree_setup(state, "pid:[4026532871]");
}

static int setup_unreadable(void **state) {
    return tree_setup(state, NULL);
}

static int tree_teardown(void **state) {
    tree_t *t = *state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", t->root);
    int rc = system(cmd);
    free(t);
    return rc == 0 ? 0 : -1;
}

/* A snapshot listing processes 4242, 4343 and 999999 (gone). */
static snapshot_t *snap_three(void) {
    snapshot_t *s = snapshot_new_with_procs(1, 0, 3);
    assert_non_null(s);
    s->procs[0].pid = 4242;
    s->procs[1].pid = 4343;
    s->procs[2].pid = 999999;
    return s;
}

static void test_proc_info_parse_comm_strips_the_newline_and_rejects_junk(void **st) {
    (void)st;
    char out[PROC_INFO_COMM_MAX];
    assert_int_equal(proc_info_parse_comm("python3\n", 8, out), 0);
    assert_string_equal(out, "python3");
    assert_int_equal(proc_info_parse_comm("a b", 3, out), 0); /* no newline: kept whole */
    assert_string_equal(out, "a b");
    assert_int_equal(proc_info_parse_comm("123456789012345\n", 16, out), 0); /* 15: the most */
    assert_string_equal(out, "123456789012345");
    assert_int_equal(proc_info_parse_comm("1234567890123456\n", 17, out), KGS_EINVAL);
    assert_string_equal(out, "");
    assert_int_equal(proc_info_parse_comm("\n", 1, out), KGS_EINVAL);
    assert_int_equal(proc_info_parse_comm("", 0, out), KGS_EINVAL);
    assert_int_equal(proc_info_parse_comm("a\0b\n", 4, out), KGS_EINVAL);
}

static void test_proc_info_parse_pidns_reads_only_the_pid_link_form(void **st) {
    (void)st;
    unsigned long long ino = 7;
    assert_true(proc_info_parse_pidns("pid:[4026531836]", &ino));
    assert_true(ino == PROC_INFO_INIT_PIDNS_INO);
    const char *bad[] = {"pid:[]",
                         "pid:[12",
                         "pid:[12]x",
                         "net:[4026531836]",
                         "pid:[-1]",
                         "pid: [1]",
                         "pid:[123456789012345678901]",
                         "4026531836",
                         ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ino = 7;
        if (proc_info_parse_pidns(bad[i], &ino))
            fail_msg("accepted \"%s\"", bad[i]);
        assert_true(ino == 7);
    }
    assert_false(proc_info_parse_pidns(NULL, &ino));
}

static void test_proc_info_host_namespace_reads_comm_and_pod(void **state) {
    tree_t *t = *state;
    proc_lookup_t l;
    proc_lookup_init(&l, t->root);
    assert_true(l.host_pidns);
    assert_string_equal(l.why, "");
    snapshot_t *s = snap_three();
    proc_info_t info[3];
    memset(info, 0x5a, sizeof info);
    proc_lookup_fill(&l, s, info);
    assert_true(info[0].comm_ok);
    assert_string_equal(info[0].comm, "python3");
    assert_true(info[0].pod_ok);
    assert_string_equal(info[0].pod_uid, POD_UID);
    assert_string_equal(info[0].container_id, CID);
    assert_true(info[1].comm_ok);
    assert_string_equal(info[1].comm, "slurmstepd");
    assert_true(info[1].pod_ok); /* read, and in no pod */
    assert_string_equal(info[1].pod_uid, "");
    assert_false(info[2].comm_ok); /* exited: unknown, not "" */
    assert_false(info[2].pod_ok);
    snapshot_unref(s);
}

static void test_proc_info_other_namespace_looks_nothing_up_and_says_why(void **state) {
    tree_t *t = *state;
    proc_lookup_t l;
    proc_lookup_init(&l, t->root);
    assert_false(l.host_pidns);
    assert_non_null(strstr(l.why, "PID namespace pid:[4026532871], not the host's"));
    assert_non_null(strstr(l.why, "hostPID"));
    snapshot_t *s = snap_three();
    proc_info_t info[3];
    memset(info, 0x5a, sizeof info);
    proc_lookup_fill(&l, s, info);
    for (int i = 0; i < 3; i++) {
        assert_false(info[i].comm_ok); /* 4242 exists here, but is another process */
        assert_false(info[i].pod_ok);
    }
    snapshot_unref(s);
}

static void test_proc_info_unreadable_namespace_is_not_assumed_the_host(void **state) {
    tree_t *t = *state;
    proc_lookup_t l;
    proc_lookup_init(&l, t->root);
    assert_false(l.host_pidns);
    assert_non_null(strstr(l.why, "cannot read"));
    assert_non_null(strstr(l.why, "/self/ns/pid"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_proc_info_parse_comm_strips_the_newline_and_rejects_junk),
        cmocka_unit_test(test_proc_info_parse_pidns_reads_only_the_pid_link_form),
        cmocka_unit_test_setup_teardown(test_proc_info_host_namespace_reads_comm_and_pod,
                                        setup_host, tree_teardown),
        cmocka_unit_test_setup_teardown(
            test_proc_info_other_namespace_looks_nothing_up_and_says_why, setup_container,
            tree_teardown),
        cmocka_unit_test_setup_teardown(test_proc_info_unreadable_namespace_is_not_assumed_the_host,
                                        setup_unreadable, tree_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
