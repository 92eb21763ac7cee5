/* test_pod_start.c - a pod's start read from its status, and the three
 * cold-start stages, on hand-written statuses shaped like the API server's.
 *
 * The statuses follow k8s.io/api core/v1 types.go at Kubernetes v1.31
 * (PodStatus.conditions: PodCondition type/status/reason/message/
 * lastTransitionTime; containerStatuses/initContainerStatuses:
 * ContainerStatus state/lastState/restartCount, ContainerStateRunning
 * .startedAt, ContainerStateWaiting.reason, ContainerStateTerminated
 * .reason) and the order in which the scheduler and the kubelet write them
 * (v1.31 pkg/kubelet/status/generate.go): PodScheduled False reason
 * Unschedulable while no node fits, PodScheduled True at the binding, then
 * PodReadyToStartContainers, Initialized, the containers waiting
 * (ContainerCreating; ErrImagePull -> ImagePullBackOff when a pull fails;
 * CrashLoopBackOff after a crash) then running, and ContainersReady and
 * Ready True once the readiness probe passes. Single quotes stand for
 * double quotes (sq()). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kube/kube_pods.h"
#include "kube/pod_start.h"

/* 2026-11-29T10:00:00Z */
#define T0 1795946400

static json_t *sq(const char *s) {
    char *d = strdup(s);
    assert_non_null(d);
    for (char *p = d; *p; p++)
        if (*p == '\'')
            *p = '"';
    json_error_t je;
    json_t *j = json_loads(d, 0, &je);
    free(d);
    if (!j)
        fail_msg("bad test JSON: %s", je.text);
    return j;
}

/* The stages of issue 33's example: created 10:00:00, waited 61 s for a
 * node (the autoscaler added one), pulled for 38 s, loaded weights for
 * 29 s: Ready at 10:02:08, 128 s in all. */
#define STATUS_READY                                                                               \
    "{'phase':'Running','conditions':["                                                            \
    "{'type':'PodReadyToStartContainers','status':'True','lastProbeTime':null,"                    \
    "'lastTransitionTime':'2026-11-29T10:01:39Z'},"                                                \
    "{'type':'Initialized','status':'True','lastProbeTime':null,"                                  \
    "'lastTransitionTime':'2026-11-29T10:01:01Z'},"                                                \
    "{'type':'Ready','status':'True','lastProbeTime':null,"                                        \
    "'lastTransitionTime':'2026-11-29T10:02:08Z'},"                                                \
    "{'type':'ContainersReady','status':'True','lastProbeTime':null,"                              \
    "'lastTransitionTime':'2026-11-29T10:02:08Z'},"                                                \
    "{'type':'PodScheduled','status':'True','lastProbeTime':null,"                                 \
    "'lastTransitionTime':'2026-11-29T10:01:01Z'}],"                                               \
    "'hostIP':'10.0.1.9','podIP':'10.244.3.4','startTime':'2026-11-29T10:01:01Z',"                 \
    "'initContainerStatuses':[{'name':'fetch-config','image':'busybox:1.36',"                      \
    "'ready':true,'restartCount':0,'started':false,'state':{'terminated':{'exitCode':0,"           \
    "'reason':'Completed','startedAt':'2026-11-29T10:01:20Z',"                                     \
    "'finishedAt':'2026-11-29T10:01:21Z'}}}],"                                                     \
    "'containerStatuses':[{'name':'vllm','image':'vllm/vllm-openai:v0.6.3','ready':true,"          \
    "'restartCount':0,'started':true,'state':{'running':{'startedAt':'2026-11-29T10:01:37Z'}},"    \
    "'lastState':{}},{'name':'metrics-proxy','image':'envoyproxy/envoy:v1.31','ready':true,"       \
    "'restartCount':0,'started':true,'state':{'running':{'startedAt':'2026-11-29T10:01:39Z'}},"    \
    "'lastState':{}}],'qosClass':'Burstable'}"

static void test_pod_start_reads_the_three_stages_of_a_ready_pod(void **state) {
    (void)state;
    json_t *j = sq(STATUS_READY);
    pod_start_t s;
    char msg[POD_START_MESSAGE_MAX + 1];
    memset(&s, 0x5a, sizeof s);
    pod_start_parse(j, &s, msg);
    assert_true(s.scheduled_unix == T0 + 61);
    /* the later of the two containers' starts */
    assert_true(s.running_unix == T0 + 99);
    assert_true(s.ready_unix == T0 + 128);
    assert_int_equal(s.trouble, POD_TROUBLE_NONE);
    assert_false(s.restarted);
    assert_string_equal(s.message, "");
    double st[POD_STAGE_COUNT];
    assert_true(pod_start_stages(T0, &s, st));
    assert_true(st[POD_STAGE_NODE] == 61);
    assert_true(st[POD_STAGE_IMAGE] == 38);
    assert_true(st[POD_STAGE_WEIGHTS] == 29);
    assert_string_equal(pod_stage_name(POD_STAGE_NODE), "node");
    assert_string_equal(pod_stage_name(POD_STAGE_IMAGE), "image");
    assert_string_equal(pod_stage_name(POD_STAGE_WEIGHTS), "weights");
    assert_string_equal(pod_stage_name(POD_STAGE_COUNT), "");
    json_decref(j);
}

/* The scheduler's first word on a pod no node fits: the wait for a node,
 * with its message (what an operator needs to know why). */
static void test_pod_start_unschedulable_keeps_the_schedulers_message(void **state) {
    (void)state;
    json_t *j = sq("{'phase':'Pending','conditions':[{'type':'PodScheduled','status':'False',"
                   "'lastProbeTime':null,'lastTransitionTime':'2026-11-29T10:00:00Z',"
                   "'reason':'Unschedulable','message':'0/3 nodes are available: 3 Insufficient "
                   "nvidia.com/gpu. preemption: 0/3 nodes are available: 3 No preemption victims "
                   "found for incoming pod.'}],'qosClass':'Burstable'}");
    pod_start_t s;
    char msg[POD_START_MESSAGE_MAX + 1];
    pod_start_parse(j, &s, msg);
    assert_int_equal(s.trouble, POD_TROUBLE_UNSCHEDULABLE);
    assert_string_equal(pod_trouble_name((pod_trouble_t)s.trouble), "Unschedulable");
    assert_true(s.scheduled_unix == 0 && s.running_unix == 0 && s.ready_unix == 0);
    assert_string_equal(s.message, "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. "
                                   "preemption: 0/3 nodes are available: 3 No preemption "
                                   "victims found for incoming pod.");
    double st[POD_STAGE_COUNT];
    assert_false(pod_start_stages(T0, &s, st));
    json_decref(j);
}

/* Scheduled, its container still being created: no trouble, not running. */
static void test_pod_start_container_creating_is_no_trouble(void **state) {
    (void)state;
    json_t *j = sq("{'phase':'Pending','conditions':[{'type':'PodScheduled','status':'True',"
                   "'lastTransitionTime':'2026-11-29T10:00:02Z'},{'type':'Ready','status':'False',"
                   "'reason':'ContainersNotReady','lastTransitionTime':'2026-11-29T10:00:02Z'}],"
                   "'initContainerStatuses':[{'name':'init','restartCount':0,'state':{'waiting':"
                   "{'reason':'PodInitializing'}}}],"
                   "'containerStatuses':[{'name':'vllm','restartCount':0,'ready':false,"
                   "'state':{'waiting':{'reason':'ContainerCreating'}}}]}");
    pod_start_t s;
    char msg[POD_START_MESSAGE_MAX + 1];
    pod_start_parse(j, &s, msg);
    assert_int_equal(s.trouble, POD_TROUBLE_NONE);
    assert_true(s.scheduled_unix == T0 + 2);
    assert_true(s.running_unix == 0 && s.ready_unix == 0);
    json_decref(j);
}

/* One container running, the other still pulling: not every container
 * runs yet, so the image stage has not ended. */
static void test_pod_start_running_needs_every_container(void **state) {
    (void)state;
    json_t *j = sq("{'phase':'Pending','containerStatuses':["
                   "{'name':'a','restartCount':0,'state':{'running':{'startedAt':"
                   "'2026-11-29T10:00:40Z'}}},"
                   "{'name':'b','restartCount':0,'state':{'waiting':{'reason':"
                   "'ContainerCreating'}}}]}");
    pod_start_t s;
    char msg[POD_START_MESSAGE_MAX + 1];
    pod_start_parse(j, &s, msg);
    assert_true(s.running_unix == 0);
    json_decref(j);
}

/* The kubelet's image pull failures, an app container's and an init
 * container's: ErrImagePull first, ImagePullBackOff while it waits. */
static void test_pod_start_image_pull_failures(void **state) {
    (void)state;
    static const struct {
        const char *status;
        pod_trouble_t want;
    } cases[] = {
        {"{'phase':'Pending','containerStatuses':[{'name':'vllm','restartCount':0,'state':"
         "{'waiting':{'reason':'ErrImagePull','message':'rpc error: code = NotFound desc = "
         "failed to pull and unpack image'}}}]}",
         POD_TROUBLE_ERR_IMAGE_PULL},
        {"{'phase':'Pending','containerStatuses':[{'name':'vllm','restartCount':0,'state':"
         "{'waiting':{'reason':'ImagePullBackOff','message':'Back-off pulling image "
         "registry.example/vllm:v9'}}}]}",
         POD_TROUBLE_IMAGE_PULL_BACKOFF},
        {"{'phase':'Pending','initContainerStatuses':[{'name':'weights','restartCount':0,"
         "'state':{'waiting':{'reason':'ImagePullBackOff'}}}],'containerStatuses':[{'name':"
         "'vllm','restartCount':0,'state':{'waiting':{'reason':'PodInitializing'}}}]}",
         POD_TROUBLE_IMAGE_PULL_BACKOFF},
        {"{'phase':'Pending','containerStatuses':[{'name':'vllm','restartCount':0,'state':"
         "{'waiting':{'reason':'CreateContainerConfigError','message':'secret hf not "
         "found'}}}]}",
         POD_TROUBLE_OTHER},
        {"{'phase':'Failed','reason':'Evicted','message':'The node was low on resource: "
         "memory.'}",
         POD_TROUBLE_OTHER},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        json_t *j = sq(cases[i].status);
        pod_start_t s;
        char msg[POD_START_MESSAGE_MAX + 1];
        pod_start_parse(j, &s, msg);
        assert_int_equal(s.trouble, cases[i].want);
        assert_true(s.running_unix == 0);
        json_decref(j);
    }
    assert_string_equal(pod_trouble_name(POD_TROUBLE_ERR_IMAGE_PULL), "ErrImagePull");
    assert_string_equal(pod_trouble_name(POD_TROUBLE_IMAGE_PULL_BACKOFF), "ImagePullBackOff");
    assert_string_equal(pod_trouble_name(POD_TROUBLE_OTHER), "other");
    assert_string_equal(pod_trouble_name(POD_TROUBLE_NONE), "");
    assert_string_equal(pod_trouble_name(POD_TROUBLE_COUNT), "");
}

/* A crash loop: the container ran, exited, and waits to run again; its
 * last run ended with an error, or killed for memory (OOMKilled names it
 * better than the loop it causes). */
static void test_pod_start_crash_loop_and_oom_killed(void **state) {
    (void)state;
    json_t *j = sq("{'phase':'Running','conditions':[{'type':'PodScheduled','status':'True',"
                   "'lastTransitionTime':'2026-11-29T10:00:01Z'}],'containerStatuses':[{'name':"
                   "'vllm','ready':false,'restartCount':3,'state':{'waiting':{'reason':"
                   "'CrashLoopBackOff','message':'back-off 40s restarting failed container=vllm'}},"
                   "'lastState':{'terminated':{'exitCode':1,'reason':'Error','startedAt':"
                   "'2026-11-29T10:01:10Z','finishedAt':'2026-11-29T10:01:30Z'}}}]}");
    pod_start_t s;
    char msg[POD_START_MESSAGE_MAX + 1];
    pod_start_parse(j, &s, msg);
    assert_int_equal(s.trouble, POD_TROUBLE_CRASH_LOOP_BACKOFF);
    assert_true(s.restarted);
    assert_true(s.running_unix == 0);
    json_decref(j);

    j = sq("{'phase':'Running','containerStatuses':[{'name':'vllm','ready':false,"
           "'restartCount':1,'state':{'waiting':{'reason':'CrashLoopBackOff'}},"
           "'lastState':{'terminated':{'exitCode':137,'reason':'OOMKilled','startedAt':"
           "'2026-11-29T10:01:10Z','finishedAt':'2026-11-29T10:01:50Z'}}}]}");
    pod_start_parse(j, &s, msg);
    assert_int_equal(s.trouble, POD_TROUBLE_OOM_KILLED);
    assert_string_equal(pod_trouble_name(POD_TROUBLE_OOM_KILLED), "OOMKilled");
    json_decref(j);

    /* running again after the OOM kill: the times describe the restart */
    j = sq("{'phase':'Running','conditions':[{'type':'PodScheduled','status':'True',"
           "'lastTransitionTime':'2026-11-29T10:00:01Z'},{'type':'Ready','status':'True',"
           "'lastTransitionTime':'2026-11-29T10:03:00Z'}],'containerStatuses':[{'name':'vllm',"
           "'restartCount':1,'state':{'running':{'startedAt':'2026-11-29T10:02:00Z'}},"
           "'lastState':{'terminated':{'reason':'OOMKilled'}}}]}");
    pod_start_parse(j, &s, msg);
    assert_int_equal(s.trouble, POD_TROUBLE_OOM_KILLED);
    assert_true(s.running_unix == T0 + 120 && s.ready_unix == T0 + 180);
    double st[POD_STAGE_COUNT];
    assert_false(pod_start_stages(T0, &s, st));
    json_decref(j);
}

/* The message is for one line of `query`: cut at a character boundary,
 * control characters as spaces. */
static void test_pod_start_message_is_cut_at_a_character_and_kept_on_one_line(void **state) {
    (void)state;
    char msg[400];
    /* 190 ASCII bytes, then a 2-byte character across the cut */
    memset(msg, 'x', 190);
    strcpy(msg + 190, "\xc3\xa9tail");
    msg[3] = '\n';
    json_t *status = json_pack("{s:[{s:s,s:s,s:s,s:s}]}", "conditions", "type", "PodScheduled",
                               "status", "False", "reason", "Unschedulable", "message", msg);
    assert_non_null(status);
    pod_start_t s;
    char kept[POD_START_MESSAGE_MAX + 1];
    pod_start_parse(status, &s, kept);
    assert_int_equal(strlen(s.message), 190);
    assert_int_equal(s.message[3], ' ');
    assert_int_equal(s.message[189], 'x');
    json_decref(status);
}

/* The status is commentary: odd shapes are skipped, never an error. */
static void test_pod_start_skips_entries_of_another_shape(void **state) {
    (void)state;
    const char *odd[] = {
        "{'conditions':{'type':'Ready'}}",
        "{'conditions':[1,'x',null,{'type':'Ready','status':'True','lastTransitionTime':7},"
        "{'type':'PodScheduled','status':'True','lastTransitionTime':'yesterday'}]}",
        "{'containerStatuses':[{'state':[]},{'state':{'running':{'startedAt':5}}},7],"
        "'initContainerStatuses':{}}",
        "{'containerStatuses':[{'state':{'running':{}}, 'restartCount':'3'}]}",
    };
    for (size_t i = 0; i < sizeof odd / sizeof *odd; i++) {
        json_t *j = sq(odd[i]);
        pod_start_t s;
        char msg[POD_START_MESSAGE_MAX + 1];
        pod_start_parse(j, &s, msg);
        assert_true(s.scheduled_unix == 0 && s.running_unix == 0 && s.ready_unix == 0);
        assert_int_equal(s.trouble, POD_TROUBLE_NONE);
        assert_false(s.restarted);
        json_decref(j);
    }
    pod_start_t s;
    char msg[POD_START_MESSAGE_MAX + 1];
    pod_start_parse(NULL, &s, msg);
    assert_int_equal(s.trouble, POD_TROUBLE_NONE);
}

/* Stages only from times in the sequence's order; an unknown creation
 * time or a clock that ran backwards is no figure. */
static void test_pod_start_stages_need_every_time_in_order(void **state) {
    (void)state;
    pod_start_t s = {.scheduled_unix = T0 + 10, .running_unix = T0 + 20, .ready_unix = T0 + 30};
    double st[POD_STAGE_COUNT];
    assert_true(pod_start_stages(T0, &s, st));
    assert_false(pod_start_stages(0, &s, st));
    assert_false(pod_start_stages(T0 + 11, &s, st));
    s.running_unix = T0 + 5;
    assert_false(pod_start_stages(T0, &s, st));
    s.running_unix = T0 + 31;
    assert_false(pod_start_stages(T0, &s, st));
    /* all at once: a warm node, a cached image, no probe */
    pod_start_t z = {.scheduled_unix = T0, .running_unix = T0, .ready_unix = T0};
    assert_true(pod_start_stages(T0, &z, st));
    assert_true(st[0] == 0 && st[1] == 0 && st[2] == 0);
}

/* Where an unfinished start is: waiting for a node since creation, pulling
 * since it was scheduled, loading weights since its containers run; a
 * Ready pod, a restarted one or one with no creation time is nowhere. */
static void test_pod_start_where_an_unfinished_start_is(void **state) {
    (void)state;
    pod_stage_t st;
    double in;
    pod_start_t s = {0};
    assert_true(pod_start_where(T0, &s, T0 + 70, &st, &in));
    assert_int_equal(st, POD_STAGE_NODE);
    assert_true(in == 70);
    s.scheduled_unix = T0 + 60;
    assert_true(pod_start_where(T0, &s, T0 + 70, &st, &in));
    assert_int_equal(st, POD_STAGE_IMAGE);
    assert_true(in == 10);
    s.running_unix = T0 + 100;
    assert_true(pod_start_where(T0, &s, T0 + 120, &st, &in));
    assert_int_equal(st, POD_STAGE_WEIGHTS);
    assert_true(in == 20);
    assert_true(pod_start_where(T0, &s, T0 + 90, &st, &in)); /* a clock behind: 0 s in it */
    assert_true(in == 0);
    assert_false(pod_start_where(0, &s, T0 + 120, &st, &in));
    s.restarted = true;
    assert_false(pod_start_where(T0, &s, T0 + 120, &st, &in));
    s.restarted = false;
    s.ready_unix = T0 + 130;
    assert_false(pod_start_where(T0, &s, T0 + 140, &st, &in));
}

/* Through the pod decoder: the start is part of the pod, and the cache
 * sees a pod whose start moved on as changed. */
static void test_pod_start_is_read_with_the_pod_and_a_change_is_a_change(void **state) {
    (void)state;
    json_t *pending =
        sq("{'metadata':{'name':'vllm-0','namespace':'inference','uid':'u-1','resourceVersion':"
           "'10','creationTimestamp':'2026-11-29T10:00:00Z'},'spec':{},'status':{'phase':"
           "'Pending','conditions':[{'type':'PodScheduled','status':'False','reason':"
           "'Unschedulable','message':'0/1 nodes are available'}]}}");
    json_t *bound =
        sq("{'metadata':{'name':'vllm-0','namespace':'inference','uid':'u-1','resourceVersion':"
           "'10','creationTimestamp':'2026-11-29T10:00:00Z'},'spec':{},'status':{'phase':"
           "'Pending','conditions':[{'type':'PodScheduled','status':'True',"
           "'lastTransitionTime':'2026-11-29T10:01:01Z'}]}}");
    pod_t a, b;
    assert_int_equal(kube_pod_from_json(pending, &a, NULL, 0), 0);
    assert_int_equal(kube_pod_from_json(bound, &b, NULL, 0), 0);
    assert_int_equal(a.start.trouble, POD_TROUBLE_UNSCHEDULABLE);
    assert_string_equal(a.start.message, "0/1 nodes are available");
    assert_true(b.start.scheduled_unix == T0 + 61);
    pod_cache_t *c;
    assert_int_equal(pod_cache_new(&c), 0);
    bool changed = false;
    assert_int_equal(pod_cache_apply(c, KUBE_EVENT_ADDED, &a, "10", &changed), 0);
    assert_true(changed);
    assert_int_equal(pod_cache_apply(c, KUBE_EVENT_MODIFIED, &a, "10", &changed), 0);
    assert_false(changed);
    assert_int_equal(pod_cache_apply(c, KUBE_EVENT_MODIFIED, &b, "10", &changed), 0);
    assert_true(changed);
    assert_true(pod_cache_get(c, "u-1")->start.scheduled_unix == T0 + 61);
    pod_cache_free(c);
    pod_deinit(&a);
    pod_deinit(&b);
    json_decref(pending);
    json_decref(bound);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pod_start_reads_the_three_stages_of_a_ready_pod),
        cmocka_unit_test(test_pod_start_unschedulable_keeps_the_schedulers_message),
        cmocka_unit_test(test_pod_start_container_creating_is_no_trouble),
        cmocka_unit_test(test_pod_start_running_needs_every_container),
        cmocka_unit_test(test_pod_start_image_pull_failures),
        cmocka_unit_test(test_pod_start_crash_loop_and_oom_killed),
        cmocka_unit_test(test_pod_start_message_is_cut_at_a_character_and_kept_on_one_line),
        cmocka_unit_test(test_pod_start_skips_entries_of_another_shape),
        cmocka_unit_test(test_pod_start_stages_need_every_time_in_order),
        cmocka_unit_test(test_pod_start_where_an_unfinished_start_is),
        cmocka_unit_test(test_pod_start_is_read_with_the_pod_and_a_change_is_a_change),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
