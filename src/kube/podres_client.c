/*
 * podres_client.c - the kubelet pod-resources poller on the event loop.
 *
 * DESIGN
 * One timer drives everything. It ticks on a fixed grid (origin + k *
 * interval) while the kubelet answers, and is pulled onto a backoff
 * schedule when the connection has to be re-dialled. A tick:
 *   - finds a call still in flight: skipped (a 2 s deadline against a 1 s
 *     interval means a slow kubelet costs ticks, never overlapping calls);
 *   - has no connection: dials (a unix connect succeeds or fails at once);
 *   - issues List. A connection the kubelet closed since the last tick
 *     (its restart) is noticed there (grpc_client_call says KGS_ESTATE) and
 *     re-dialled once within the same tick, so a restart that is already
 *     over costs no failed poll.
 * The answer is decoded and turned into a pod map as it arrives
 * (on_message); on_done delivers it, or the failure.
 *
 * Re-entrancy: every handler updates all of its state first and calls the
 * user's callback as its very last statement, so a callback may free the
 * client (STYLE 16) and nothing touches it afterwards. podres_client_free()
 * sets `closing` before it frees the gRPC client, because grpc_client_free()
 * reports the abandoned call to on_done synchronously.
 */
#include "kube/podres_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "core/err.h"
#include "net/grpc_client.h"
#include "net/grpc_frame.h"
#include "proto/podresources.pb-c.h"

#define PODRES_LIST_PATH "/v1.PodResourcesLister/List"

struct podres_client {
    loop_t *loop;
    const logger_t *log;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    char address[sizeof(((struct sockaddr_un *)0)->sun_path) + 8]; /* "unix:" + path */
    uint64_t interval_ns;
    podres_client_callbacks_t cbs;

    loop_timer_t timer;
    mono_ns_t grid_origin;
    grpc_client_t *grpc; /* NULL while disconnected */
    bool in_flight;
    unsigned backoff_step; /* connection failures since the last success */

    /* The answer of the call in flight, decoded in on_message. */
    pod_map_t *pending;
    bool got_message;
    char pending_err[256]; /* why the answer could not be used; "" if it could */

    bool stale;
    bool closing;
    mono_ns_t last_ok;
    uint64_t failures;
};

/* The first grid point strictly after now. */
static mono_ns_t next_grid_tick(const podres_client_t *c, mono_ns_t now) {
    if (now < c->grid_origin)
        return c->grid_origin;
    uint64_t k = (now - c->grid_origin) / c->interval_ns + 1;
    if (k > (UINT64_MAX - c->grid_origin) / c->interval_ns)
        return UINT64_MAX;
    return c->grid_origin + k * c->interval_ns;
}

static uint64_t backoff_delay_ns(unsigned step) {
    uint64_t d = PODRES_BACKOFF_MIN_NS;
    for (unsigned i = 0; i < step && d < PODRES_BACKOFF_MAX_NS; i++)
        d *= 2;
    return d < PODRES_BACKOFF_MAX_NS ? d : PODRES_BACKOFF_MAX_NS;
}

static void arm(podres_client_t *c, mono_ns_t due) {
    if (loop_timer_start(c->loop, &c->timer, due) != 0)
        /* Out of memory for the timer heap: nothing else would poll again. */
        LOG_ERROR(c->log, "pod-resources %s: cannot arm the poll timer: out of memory", c->path);
}

static void drop_connection(podres_client_t *c) {
    grpc_client_t *g = c->grpc;
    c->grpc = NULL;
    grpc_client_free(g); /* no call is in flight here: nothing re-enters */
}

/*
 * Records a failed poll and calls on_error (last). `redial` closes the
 * connection and schedules the next attempt on the backoff; otherwise the
 * grid tick already armed stands.
 */
static void poll_failed(podres_client_t *c, bool redial, const char *reason) {
    mono_ns_t now = loop_now(c->loop);
    c->stale = true;
    c->failures++;
    if (redial) {
        drop_connection(c);
        uint64_t delay = backoff_delay_ns(c->backoff_step);
        if (c->backoff_step < 32)
            c->backoff_step++;
        arm(c, clock_add_sat(now, delay));
        reason = reason ? reason : "";
        if (c->failures == 1)
            LOG_WARN(c->log, "pod-resources %s: %s (re-dialling in %llu ms)", c->path, reason,
                     (unsigned long long)(delay / NS_PER_MS));
        else
            LOG_DEBUG(c->log, "pod-resources %s: %s (failure %llu, re-dialling in %llu ms)",
                      c->path, reason, (unsigned long long)c->failures,
                      (unsigned long long)(delay / NS_PER_MS));
    } else {
        if (!loop_timer_armed(&c->timer))
            arm(c, next_grid_tick(c, now));
        if (c->failures == 1)
            LOG_WARN(c->log, "pod-resources %s: %s", c->path, reason);
        else
            LOG_DEBUG(c->log, "pod-resources %s: %s (failure %llu)", c->path, reason,
                      (unsigned long long)c->failures);
    }
    if (c->cbs.on_error) {
        char msg[512];
        snprintf(msg, sizeof msg, "list pod resources %s: %s", c->path, reason);
        c->cbs.on_error(c->cbs.user_data, msg);
    }
}

static void on_list_message(void *ud, const uint8_t *msg, size_t len) {
    podres_client_t *c = ud;
    if (c->got_message) {
        /* Unary: a second message is a protocol violation; keep the error. */
        pod_map_free(c->pending);
        c->pending = NULL;
        snprintf(c->pending_err, sizeof c->pending_err, "more than one answer message");
        return;
    }
    c->got_message = true;
    V1__ListPodResourcesResponse *r = v1__list_pod_resources_response__unpack(NULL, len, msg);
    if (!r) {
        snprintf(c->pending_err, sizeof c->pending_err,
                 "decode ListPodResourcesResponse (%zu bytes): malformed protobuf", len);
        return;
    }
    char err[200];
    if (pod_map_from_response(r, &c->pending, err, sizeof err) != 0)
        snprintf(c->pending_err, sizeof c->pending_err, "%s", err);
    v1__list_pod_resources_response__free_unpacked(r, NULL);
}

/* Failures that mean the kubelet is gone, restarting or wedged. */
static bool status_needs_redial(int status) {
    return status == GRPC_UNAVAILABLE || status == GRPC_DEADLINE_EXCEEDED ||
           status == GRPC_INTERNAL || status == GRPC_CANCELLED;
}

static void on_list_done(void *ud, int status, const char *message) {
    podres_client_t *c = ud;
    if (c->closing)
        return; /* podres_client_free() abandoned the call */
    c->in_flight = false;
    pod_map_t *map = c->pending;
    c->pending = NULL;
    if (status == GRPC_OK && map) {
        if (c->failures > 0)
            LOG_INFO(c->log, "pod-resources %s: answering again after %llu failed polls", c->path,
                     (unsigned long long)c->failures);
        c->stale = false;
        c->failures = 0;
        c->backoff_step = 0;
        c->last_ok = loop_now(c->loop);
        c->cbs.on_map(c->cbs.user_data, map);
        return;
    }
    pod_map_free(map);
    char reason[400];
    if (status == GRPC_OK) {
        snprintf(reason, sizeof reason, "%s",
                 c->pending_err[0] ? c->pending_err : "OK without an answer message");
        poll_failed(c, false, reason);
        return;
    }
    snprintf(reason, sizeof reason, "%s: %s", grpc_status_name(status),
             message && message[0] ? message : "(no message)");
    poll_failed(c, status_needs_redial(status), reason);
}

static int dial(podres_client_t *c, char *err, size_t errlen) {
    grpc_client_opts_t opts = {.address = c->address, .log = c->log};
    return grpc_client_connect(c->loop, &opts, &c->grpc, err, errlen);
}

static void on_tick(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)t;
    podres_client_t *c = ud;
    mono_ns_t now = loop_now(loop);
    arm(c, next_grid_tick(c, now));
    if (c->in_flight) {
        LOG_DEBUG(c->log, "pod-resources %s: previous List still running; tick skipped", c->path);
        return;
    }
    char err[300];
    for (int attempt = 0;; attempt++) {
        if (!c->grpc && dial(c, err, sizeof err) != 0) {
            c->grpc = NULL;
            poll_failed(c, true, err);
            return;
        }
        c->pending = NULL;
        c->got_message = false;
        c->pending_err[0] = '\0';
        int rc = grpc_client_call(c->grpc, PODRES_LIST_PATH, NULL, 0, PODRES_CALL_TIMEOUT_NS,
                                  on_list_message, on_list_done, c, NULL);
        if (rc == 0)
            break;
        /* KGS_ESTATE: the kubelet closed the connection since the last
         * tick (a restart); dial again at once, but only once. */
        drop_connection(c);
        if (rc != KGS_ESTATE || attempt > 0) {
            snprintf(err, sizeof err, "start List: %s", kgs_err_str(rc));
            poll_failed(c, true, err);
            return;
        }
    }
    c->in_flight = true;
}

int podres_client_start(loop_t *loop, const char *socket_path, uint64_t interval_ns,
                        const logger_t *log, const podres_client_callbacks_t *cbs,
                        podres_client_t **out, char *err, size_t errlen) {
    if (out)
        *out = NULL;
    if (!loop || !socket_path || !cbs || !cbs->on_map || !out)
        return kgs_seterr(err, errlen, KGS_EINVAL, "pod-resources client: %s is NULL",
                          !loop          ? "loop"
                          : !socket_path ? "socket path"
                          : !cbs         ? "callbacks"
                          : !out         ? "out"
                                         : "the on_map callback");
    if (interval_ns == 0)
        interval_ns = PODRES_DEFAULT_INTERVAL_NS;
    if (interval_ns < PODRES_MIN_INTERVAL_NS)
        return kgs_seterr(
            err, errlen, KGS_EINVAL, "pod-resources interval %.1f ms: must be at least %llu ms",
            (double)interval_ns / 1e6, (unsigned long long)(PODRES_MIN_INTERVAL_NS / NS_PER_MS));
    size_t len = strlen(socket_path);
    struct sockaddr_un un;
    if (socket_path[0] != '/' || len >= sizeof un.sun_path)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "pod-resources socket \"%s\": must be an absolute path of at most %zu "
                          "bytes",
                          socket_path, sizeof un.sun_path - 1);
    podres_client_t *c = calloc(1, sizeof *c);
    if (!c)
        return kgs_seterr(err, errlen, KGS_ENOMEM, "pod-resources client: out of memory");
    c->loop = loop;
    c->log = log;
    memcpy(c->path, socket_path, len + 1);
    snprintf(c->address, sizeof c->address, "unix:%s", socket_path);
    c->interval_ns = interval_ns;
    c->cbs = *cbs;
    loop_timer_init(&c->timer, on_tick, c);
    /* The first poll runs on the next loop turn (callbacks never run inside
     * start); the grid counts from there. */
    c->grid_origin = loop_now(loop);
    if (loop_timer_start(loop, &c->timer, c->grid_origin) != 0) {
        free(c);
        return kgs_seterr(err, errlen, KGS_ENOMEM, "pod-resources client: out of memory");
    }
    *out = c;
    return 0;
}

bool podres_client_stale(const podres_client_t *c) {
    return c && c->stale;
}

mono_ns_t podres_client_last_ok(const podres_client_t *c) {
    return c ? c->last_ok : 0;
}

uint64_t podres_client_failures(const podres_client_t *c) {
    return c ? c->failures : 0;
}

void podres_client_free(podres_client_t *c) {
    if (!c)
        return;
    c->closing = true;
    loop_timer_stop(c->loop, &c->timer);
    grpc_client_free(c->grpc); /* calls on_list_done, which sees `closing` */
    pod_map_free(c->pending);
    free(c);
}
