/*
 * kube_watch_tool.c - runs kube_client on a loop and prints the pod cache
 * as one JSON line on every sync and change, for integration_kube_client:
 *
 *   kube_watch_tool --api http://127.0.0.1:PORT [--token-file F] [--ca F]
 *                   [--page-limit N] [--watch-timeout S] [--backoff-ms MS]
 *                   [--backoff-max-ms MS] [--watch-idle-ms MS] [--min-life-ms MS]
 *                   [--list-max-items N] [--list-max-pages N] [--seed N] [--tick-ms MS]
 *
 * The options set the kube_client_config_t field of the same name, so the
 * tests can shorten the limits. --tick-ms also prints a "tick" line every
 * MS ms (the synced flag as an RPC would read it, between events).
 *
 * A line: {"event":"synced"|"change"|"tick","rv":"..","synced":true,"error":"..",
 * "stats":{...},"pods":[{"namespace","name","uid","node","pod_ip","phase",
 * "deleting","resource_version","labels":{}}...]} with pods sorted by
 * namespace/name. Logs go to stderr. SIGTERM/SIGINT exit 0.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "kube/kube_client.h"
#include "core/err.h"

static volatile sig_atomic_t stop_requested;
static loop_t *signal_loop; /* set once before handlers are installed */

static void on_signal(int sig) {
    (void)sig;
    stop_requested = 1;
    loop_wakeup(signal_loop);
}

static void on_wakeup(loop_t *loop, void *ud) {
    (void)ud;
    if (stop_requested)
        loop_stop(loop);
}

typedef struct {
    kube_client_t *client;
    loop_t *loop;
    loop_timer_t tick;
    uint64_t tick_ns;
} tool_t;

static bool collect(const pod_t *p, void *ud) {
    json_t *labels = json_object();
    for (size_t i = 0; i < p->label_count; i++) {
        const char *k, *v;
        pod_label_at(p, i, &k, &v);
        json_object_set_new(labels, k, json_string(v));
    }
    json_array_append_new(ud, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:b, s:s, s:o}",
                                        "namespace", p->namespace, "name", p->name, "uid", p->uid,
                                        "node", p->node, "pod_ip", p->pod_ip, "phase",
                                        pod_phase_name(p->phase), "deleting", p->deleting,
                                        "resource_version", p->resource_version, "labels", labels));
    return true;
}

static int by_name(const void *a, const void *b) {
    json_t *const *x = a, *const *y = b;
    int c = strcmp(json_string_value(json_object_get(*x, "namespace")),
                   json_string_value(json_object_get(*y, "namespace")));
    return c ? c
             : strcmp(json_string_value(json_object_get(*x, "name")),
                      json_string_value(json_object_get(*y, "name")));
}

static void print_state(tool_t *t, const char *event) {
    const pod_cache_t *cache = kube_client_cache(t->client);
    json_t *pods = json_array();
    pod_cache_foreach(cache, collect, pods);
    size_t n = json_array_size(pods);
    json_t **v = calloc(n ? n : 1, sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = json_incref(json_array_get(pods, i));
    qsort(v, n, sizeof *v, by_name);
    json_array_clear(pods);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(pods, v[i]);
    free(v);
    kube_client_stats_t st;
    kube_client_stats(t->client, &st);
    json_t *line = json_pack(
        "{s:s, s:s, s:b, s:s, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
        "s:I}, s:o}",
        "event", event, "rv", pod_cache_resource_version(cache), "synced",
        kube_client_synced(t->client, loop_now(t->loop)), "error",
        kube_client_last_error(t->client), "stats", "lists", (json_int_t)st.lists, "list_pages",
        (json_int_t)st.list_pages, "watches", (json_int_t)st.watches, "events",
        (json_int_t)st.events, "gone", (json_int_t)st.gone, "failures", (json_int_t)st.failures,
        "skipped_pods", (json_int_t)st.skipped_pods, "refused_lists", (json_int_t)st.refused_lists,
        "idle_watches", (json_int_t)st.idle_watches, "pods", pods);
    char *s = json_dumps(line, JSON_COMPACT);
    printf("%s\n", s);
    fflush(stdout);
    free(s);
    json_decref(line);
}

static void on_synced(void *ud) {
    print_state(ud, "synced");
}

static void on_change(void *ud) {
    print_state(ud, "change");
}

static void on_tick(loop_t *loop, loop_timer_t *timer, void *ud) {
    tool_t *t = ud;
    print_state(t, "tick");
    loop_timer_start(loop, timer, clock_add_sat(loop_now(loop), t->tick_ns));
}

static int usage(void) {
    fprintf(stderr, "usage: kube_watch_tool --api URL [--token-file F] [--ca F] "
                    "[--page-limit N] [--watch-timeout S] [--backoff-ms MS] [--backoff-max-ms MS] "
                    "[--watch-idle-ms MS] [--min-life-ms MS] [--list-max-items N] "
                    "[--list-max-pages N] [--seed N] [--tick-ms MS]\n");
    return 2;
}

int main(int argc, char **argv) {
    kube_client_config_t cfg;
    kube_client_config_init(&cfg);
    tool_t t = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc)
            return usage();
        const char *v = argv[++i];
        if (strcmp(a, "--api") == 0)
            snprintf(cfg.api_url, sizeof cfg.api_url, "%s", v);
        else if (strcmp(a, "--token-file") == 0)
            snprintf(cfg.token_file, sizeof cfg.token_file, "%s", v);
        else if (strcmp(a, "--ca") == 0)
            snprintf(cfg.ca_file, sizeof cfg.ca_file, "%s", v);
        else if (strcmp(a, "--page-limit") == 0)
            cfg.page_limit = (uint32_t)strtoul(v, NULL, 10);
        else if (strcmp(a, "--watch-timeout") == 0)
            cfg.watch_timeout_s = (uint32_t)strtoul(v, NULL, 10);
        else if (strcmp(a, "--backoff-ms") == 0)
            cfg.backoff_min_ns = strtoull(v, NULL, 10) * NS_PER_MS;
        else if (strcmp(a, "--backoff-max-ms") == 0)
            cfg.backoff_max_ns = strtoull(v, NULL, 10) * NS_PER_MS;
        else if (strcmp(a, "--watch-idle-ms") == 0)
            cfg.watch_idle_ns = strtoull(v, NULL, 10) * NS_PER_MS;
        else if (strcmp(a, "--min-life-ms") == 0)
            cfg.watch_min_life_ns = strtoull(v, NULL, 10) * NS_PER_MS;
        else if (strcmp(a, "--list-max-items") == 0)
            cfg.list_max_items = (uint32_t)strtoul(v, NULL, 10);
        else if (strcmp(a, "--list-max-pages") == 0)
            cfg.list_max_pages = (uint32_t)strtoul(v, NULL, 10);
        else if (strcmp(a, "--seed") == 0)
            cfg.jitter_seed = strtoull(v, NULL, 10);
        else if (strcmp(a, "--tick-ms") == 0)
            t.tick_ns = strtoull(v, NULL, 10) * NS_PER_MS;
        else
            return usage();
    }
    if (!cfg.api_url[0])
        return usage();
    logger_t log = {.level = LOG_DEBUG, .out = stderr, .format = LOG_FORMAT_TEXT};
    char err[512];
    if (loop_new(&t.loop, err, sizeof err)) {
        fprintf(stderr, "kube_watch_tool: %s\n", err);
        return 1;
    }
    signal_loop = t.loop;
    loop_set_wakeup(t.loop, on_wakeup, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    kube_client_callbacks_t cbs = {.on_synced = on_synced, .on_change = on_change, .user_data = &t};
    if (kube_client_new(t.loop, &cfg, &cbs, &log, &t.client, err, sizeof err)) {
        fprintf(stderr, "kube_watch_tool: %s\n", err);
        loop_free(t.loop);
        return 1;
    }
    loop_timer_init(&t.tick, on_tick, &t);
    if (t.tick_ns)
        loop_timer_start(t.loop, &t.tick, clock_add_sat(loop_now(t.loop), t.tick_ns));
    int rc = loop_run(t.loop);
    loop_timer_stop(t.loop, &t.tick);
    kube_client_free(t.client);
    loop_free(t.loop);
    return rc ? 1 : 0;
}
