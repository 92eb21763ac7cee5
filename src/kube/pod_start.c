/*
 * pod_start.c - a pod's start from its status (see the header for the
 * sequence and its sources).
 *
 * DESIGN
 * Only four numbers, a byte and a short message are kept per pod: the
 * aggregator holds every pod of the cluster, and the stages need no more.
 * Everything is read leniently (an entry of another shape is skipped),
 * unlike the pod's identity and labels: a status is the kubelet's running
 * commentary, and a pod must not be dropped from scaling over it.
 */
#include "kube/pod_start.h"

#include <string.h>

#include "kube/kube_pods.h"

static const char *const trouble_names[POD_TROUBLE_COUNT] = {
    "",          "Unschedulable", "ImagePullBackOff", "ErrImagePull", "CrashLoopBackOff",
    "OOMKilled", "other",
};

const char *pod_trouble_name(pod_trouble_t t) {
    return (unsigned)t < POD_TROUBLE_COUNT ? trouble_names[t] : "";
}

static const char *const stage_names[POD_STAGE_COUNT] = {"node", "image", "weights"};

const char *pod_stage_name(pod_stage_t s) {
    return (unsigned)s < POD_STAGE_COUNT ? stage_names[s] : "";
}

/* Which trouble names the start best when several show at once: the one
 * furthest along (a crash says more than the pull that preceded it). */
static int trouble_rank(pod_trouble_t t) {
    static const int rank[POD_TROUBLE_COUNT] = {
        [POD_TROUBLE_NONE] = 0,
        [POD_TROUBLE_UNSCHEDULABLE] = 1,
        [POD_TROUBLE_OTHER] = 2,
        [POD_TROUBLE_ERR_IMAGE_PULL] = 3,
        [POD_TROUBLE_IMAGE_PULL_BACKOFF] = 4,
        [POD_TROUBLE_CRASH_LOOP_BACKOFF] = 5,
        [POD_TROUBLE_OOM_KILLED] = 6,
    };
    return (unsigned)t < POD_TROUBLE_COUNT ? rank[t] : 0;
}

static void trouble_raise(pod_start_t *s, pod_trouble_t t) {
    if (trouble_rank(t) > trouble_rank((pod_trouble_t)s->trouble))
        s->trouble = (uint8_t)t;
}

static const char *str_member(const json_t *o, const char *key) {
    const json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static int64_t time_member(const json_t *o, const char *key) {
    const char *s = str_member(o, key);
    int64_t t;
    return s && kube_time_parse(s, &t) && t > 0 ? t : 0;
}

/* A waiting container's reason: the two the kubelet writes while it
 * creates a container are no trouble; every other one is. */
static pod_trouble_t waiting_trouble(const char *reason) {
    if (!reason || !reason[0] || strcmp(reason, "ContainerCreating") == 0 ||
        strcmp(reason, "PodInitializing") == 0)
        return POD_TROUBLE_NONE;
    if (strcmp(reason, "ImagePullBackOff") == 0)
        return POD_TROUBLE_IMAGE_PULL_BACKOFF;
    if (strcmp(reason, "ErrImagePull") == 0)
        return POD_TROUBLE_ERR_IMAGE_PULL;
    if (strcmp(reason, "CrashLoopBackOff") == 0)
        return POD_TROUBLE_CRASH_LOOP_BACKOFF;
    return POD_TROUBLE_OTHER;
}

static bool oom_killed(const json_t *state) {
    const json_t *term = json_is_object(state) ? json_object_get(state, "terminated") : NULL;
    const char *r = str_member(term, "reason");
    return r && strcmp(r, "OOMKilled") == 0;
}

/* One container status: its trouble, and in *started its running
 * startedAt (0: not running). */
static void container_status(const json_t *cs, pod_start_t *s, int64_t *started) {
    *started = 0;
    if (!json_is_object(cs))
        return;
    const json_t *state = json_object_get(cs, "state");
    if (json_is_object(state)) {
        const json_t *running = json_object_get(state, "running");
        if (json_is_object(running))
            *started = time_member(running, "startedAt");
        trouble_raise(s, waiting_trouble(str_member(json_object_get(state, "waiting"), "reason")));
        if (oom_killed(state))
            trouble_raise(s, POD_TROUBLE_OOM_KILLED);
    }
    if (oom_killed(json_object_get(cs, "lastState")))
        trouble_raise(s, POD_TROUBLE_OOM_KILLED);
    const json_t *rc = json_object_get(cs, "restartCount");
    if (json_is_integer(rc) && json_integer_value(rc) > 0)
        s->restarted = true;
}

/* The scheduler's message, cut at a character boundary, control
 * characters as spaces (it ends up on one line of `query`). */
static void message_copy(char *dst, const char *src) {
    size_t n = strlen(src);
    if (n > POD_START_MESSAGE_MAX) {
        n = POD_START_MESSAGE_MAX;
        while (n > 0 && ((unsigned char)src[n] & 0xC0) == 0x80)
            n--; /* not inside a UTF-8 sequence */
    }
    for (size_t i = 0; i < n; i++)
        dst[i] = (unsigned char)src[i] < 0x20 || src[i] == 0x7f ? ' ' : src[i];
    dst[n] = '\0';
}

void pod_start_parse(const json_t *status, pod_start_t *out, char *message_buf) {
    memset(out, 0, sizeof *out);
    out->message = "";
    if (!json_is_object(status))
        return;
    size_t i;
    const json_t *e;
    const json_t *conds = json_object_get(status, "conditions");
    if (json_is_array(conds))
        json_array_foreach(conds, i, e) {
            const char *type = str_member(e, "type"), *st = str_member(e, "status");
            if (!type || !st)
                continue;
            bool is_true = strcmp(st, "True") == 0;
            if (strcmp(type, "PodScheduled") == 0) {
                const char *reason = str_member(e, "reason");
                if (is_true) {
                    out->scheduled_unix = time_member(e, "lastTransitionTime");
                } else if (reason && strcmp(reason, "Unschedulable") == 0) {
                    trouble_raise(out, POD_TROUBLE_UNSCHEDULABLE);
                    const char *msg = str_member(e, "message");
                    message_copy(message_buf, msg ? msg : "");
                    out->message = message_buf;
                }
            } else if (strcmp(type, "Ready") == 0 && is_true) {
                out->ready_unix = time_member(e, "lastTransitionTime");
            }
        }
    /* Every container running: the latest start. One not running yet (or
     * none reported) leaves running_unix 0. */
    const json_t *ctrs = json_object_get(status, "containerStatuses");
    size_t n = 0, running = 0;
    int64_t latest = 0;
    if (json_is_array(ctrs))
        json_array_foreach(ctrs, i, e) {
            int64_t started;
            container_status(e, out, &started);
            n++;
            if (started > 0) {
                running++;
                if (started > latest)
                    latest = started;
            }
        }
    if (n > 0 && running == n)
        out->running_unix = latest;
    /* Init containers run before the app containers start, so their pulls
     * and runs are inside the image stage already; their trouble is the
     * start's trouble. */
    const json_t *inits = json_object_get(status, "initContainerStatuses");
    if (json_is_array(inits))
        json_array_foreach(inits, i, e) {
            int64_t started;
            container_status(e, out, &started);
        }
    const char *phase = str_member(status, "phase");
    if (phase && strcmp(phase, "Failed") == 0)
        trouble_raise(out, POD_TROUBLE_OTHER);
}

bool pod_start_stages(int64_t created_unix, const pod_start_t *s, double stage_s[POD_STAGE_COUNT]) {
    if (created_unix <= 0 || s->scheduled_unix <= 0 || s->running_unix <= 0 || s->ready_unix <= 0 ||
        s->restarted)
        return false;
    if (s->scheduled_unix < created_unix || s->running_unix < s->scheduled_unix ||
        s->ready_unix < s->running_unix)
        return false;
    stage_s[POD_STAGE_NODE] = (double)(s->scheduled_unix - created_unix);
    stage_s[POD_STAGE_IMAGE] = (double)(s->running_unix - s->scheduled_unix);
    stage_s[POD_STAGE_WEIGHTS] = (double)(s->ready_unix - s->running_unix);
    return true;
}

bool pod_start_where(int64_t created_unix, const pod_start_t *s, int64_t now_unix,
                     pod_stage_t *stage, double *in_stage_s) {
    if (created_unix <= 0 || s->restarted || s->ready_unix > 0)
        return false;
    int64_t since;
    if (s->scheduled_unix <= 0) {
        *stage = POD_STAGE_NODE;
        since = created_unix;
    } else if (s->running_unix <= 0) {
        *stage = POD_STAGE_IMAGE;
        since = s->scheduled_unix;
    } else {
        *stage = POD_STAGE_WEIGHTS;
        since = s->running_unix;
    }
    *in_stage_s = now_unix > since ? (double)(now_unix - since) : 0;
    return true;
}
