/*
 * podres_tool - runs podres_client on an event loop and prints what it
 * hands over, one JSON object per line on stdout:
 *
 *   {"devices":{"GPU-...":[{"namespace":"ml","pod":"vllm-0","container":"main",
 *                           "resource":"nvidia.com/gpu"}]},"stale":false}
 *   {"error":"list pod resources /path: ...","failures":1,"stale":true}
 *
 *   podres_tool SOCKET [--interval-ms N] [--max-seconds S] [--log-level L]
 *
 * It stops at SIGTERM/SIGINT or after --max-seconds (default 120), frees
 * everything and exits 0; 2 for usage errors, 1 when the client cannot start.
 * integration_podres drives it against the fake kubelet.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "kube/podres_client.h"
#include "core/err.h"
#include "core/log.h"
#include "net/loop.h"

#define SIGNAL_POLL_NS (50 * NS_PER_MS)

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig) {
    (void)sig;
    stop_requested = 1;
}

typedef struct {
    loop_t *loop;
    podres_client_t *client;
    loop_timer_t signal_timer, deadline_timer;
    unsigned long maps, errors;
} tool_t;

static void print_json(json_t *obj) {
    char *s = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS);
    if (s) {
        printf("%s\n", s);
        fflush(stdout);
        free(s);
    }
    json_decref(obj);
}

static int add_device(void *ud, const char *uuid, const pod_holder_t *holders, size_t n) {
    json_t *devices = ud, *list = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(list,
                              json_pack("{s:s, s:s, s:s, s:s}", "namespace", holders[i].namespace_,
                                        "pod", holders[i].pod, "container", holders[i].container,
                                        "resource", holders[i].resource_name));
    json_object_set_new(devices, uuid, list);
    return 0;
}

static void on_map(void *ud, pod_map_t *map) {
    tool_t *t = ud;
    t->maps++;
    json_t *devices = json_object();
    pod_map_foreach(map, add_device, devices);
    pod_map_free(map);
    print_json(
        json_pack("{s:o, s:b}", "devices", devices, "stale", podres_client_stale(t->client)));
}

static void on_error(void *ud, const char *msg) {
    tool_t *t = ud;
    t->errors++;
    print_json(json_pack("{s:s, s:I, s:b}", "error", msg, "failures",
                         (json_int_t)podres_client_failures(t->client), "stale",
                         podres_client_stale(t->client)));
}

static void on_signal_poll(loop_t *loop, loop_timer_t *timer, void *ud) {
    (void)ud;
    if (stop_requested)
        loop_stop(loop);
    else
        loop_timer_start(loop, timer, loop_now(loop) + SIGNAL_POLL_NS);
}

static void on_deadline(loop_t *loop, loop_timer_t *timer, void *ud) {
    (void)timer;
    (void)ud;
    fprintf(stderr, "podres_tool: --max-seconds reached\n");
    loop_stop(loop);
}

static int usage(void) {
    fprintf(stderr, "usage: podres_tool SOCKET [--interval-ms N] [--max-seconds S] "
                    "[--log-level debug|info|warn|error|off]\n");
    return 2;
}

static int parse_u64(const char *s, unsigned long long *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-')
        return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv) {
    const char *socket_path = NULL;
    unsigned long long interval_ms = 1000, max_s = 120;
    logger_t log = {.level = LOG_WARN, .out = stderr, .format = LOG_FORMAT_TEXT};
    char err[512];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--interval-ms") == 0 && i + 1 < argc) {
            if (parse_u64(argv[++i], &interval_ms) != 0 || interval_ms > 3600000)
                return usage();
        } else if (strcmp(argv[i], "--max-seconds") == 0 && i + 1 < argc) {
            if (parse_u64(argv[++i], &max_s) != 0 || max_s > 86400)
                return usage();
        } else if (strcmp(argv[i], "--log-level") == 0 && i + 1 < argc) {
            if (log_level_parse(argv[++i], &log.level, err, sizeof err) != 0) {
                fprintf(stderr, "podres_tool: %s\n", err);
                return 2;
            }
        } else if (argv[i][0] != '-' && !socket_path) {
            socket_path = argv[i];
        } else {
            return usage();
        }
    }
    if (!socket_path)
        return usage();

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    tool_t t = {0};
    if (loop_new(&t.loop, err, sizeof err) != 0) {
        fprintf(stderr, "podres_tool: %s\n", err);
        return 1;
    }
    podres_client_callbacks_t cbs = {.on_map = on_map, .on_error = on_error, .user_data = &t};
    if (podres_client_start(t.loop, socket_path, interval_ms * NS_PER_MS, &log, &cbs, &t.client,
                            err, sizeof err) != 0) {
        fprintf(stderr, "podres_tool: %s\n", err);
        loop_free(t.loop);
        return 1;
    }
    loop_timer_init(&t.signal_timer, on_signal_poll, &t);
    loop_timer_init(&t.deadline_timer, on_deadline, &t);
    mono_ns_t now = loop_now(t.loop);
    loop_timer_start(t.loop, &t.signal_timer, now + SIGNAL_POLL_NS);
    loop_timer_start(t.loop, &t.deadline_timer, clock_add_sat(now, max_s * NS_PER_SEC));
    int rc = loop_run(t.loop);
    podres_client_free(t.client);
    loop_timer_stop(t.loop, &t.signal_timer);
    loop_timer_stop(t.loop, &t.deadline_timer);
    loop_free(t.loop);
    fprintf(stderr, "podres_tool: %lu maps, %lu errors\n", t.maps, t.errors);
    return rc == 0 ? 0 : 1;
}
