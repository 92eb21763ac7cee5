/*
 * pod_memory - what the aggregator's pod cache costs: bytes per pod held,
 * and the peak of a relist (kube_client.c's list_page_done flow: 500-pod
 * PodList pages parsed, assembled, then the cache replaced).
 *
 *   pod_memory [PODS]   (default 50000)
 *
 * Prints sizeof(pod_t), the heap bytes per cached pod (mallinfo2), RSS
 * after the first list settles, and the peak RSS (VmHWM) of a second,
 * full relist on top of it. The pods are realistic inference pods: six
 * labels, one container asking for nvidia.com/gpu, the usual conditions.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kube_pods.h"

#define PAGE 500

static long status_kib(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t n = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, key, n) == 0)
            v = strtol(line + n, NULL, 10);
    if (f)
        fclose(f);
    return v;
}

static size_t page_json(char *buf, size_t cap, size_t first, size_t count, int gen, bool more) {
    size_t o =
        (size_t)snprintf(buf, cap,
                         "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"%d%06zu\","
                         "\"continue\":\"%s\"},\"items\":[",
                         gen, first, more ? "token" : "");
    for (size_t i = first; i < first + count; i++)
        o += (size_t)snprintf(
            buf + o, cap - o,
            "%s{\"metadata\":{\"namespace\":\"team-%zu\",\"name\":\"vllm-llama-%zu-7d9f8c6b5-x%"
            "05zu\","
            "\"uid\":\"6f1c2a3b-4d5e-4f60-8a9b-%012zu\",\"resourceVersion\":\"%d%06zu\","
            "\"creationTimestamp\":\"2026-11-29T10:00:00Z\",\"labels\":{\"app\":\"vllm-llama-%zu\","
            "\"app.kubernetes.io/name\":\"vllm\",\"app.kubernetes.io/instance\":\"llama-%zu\","
            "\"pod-template-hash\":\"7d9f8c6b5\",\"team\":\"team-%zu\",\"tier\":\"inference\"}},"
            "\"spec\":{\"nodeName\":\"gpu-node-%05zu\",\"containers\":[{\"name\":\"vllm\","
            "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]},"
            "\"status\":{\"phase\":\"Running\",\"podIP\":\"10.%zu.%zu.%zu\","
            "\"startTime\":\"2026-11-29T10:00:01Z\",\"conditions\":["
            "{\"type\":\"PodScheduled\",\"status\":\"True\",\"lastTransitionTime\":\"2026-11-29T10:"
            "00:01Z\"},"
            "{\"type\":\"Ready\",\"status\":\"True\",\"lastTransitionTime\":\"2026-11-29T10:01:"
            "00Z\"}],"
            "\"containerStatuses\":[{\"name\":\"vllm\",\"restartCount\":0,\"state\":{\"running\":"
            "{\"startedAt\":\"2026-11-29T10:00:30Z\"}}}]}}",
            i == first ? "" : ",", i % 40, i % 200, i, i, gen, i, i % 200, i % 200, i % 40, i / 5,
            (i >> 16) & 255, (i >> 8) & 255, i & 255);
    o += (size_t)snprintf(buf + o, cap - o, "]}");
    return o;
}

/* One list, as list_page_done assembles it: each page's pods into a
 * second cache as the page arrives, which then replaces the cache. */
static int relist(pod_cache_t *cache, size_t n, int gen, char *buf, size_t cap) {
    pod_cache_t *next;
    if (pod_cache_new(&next))
        return 1;
    char rv[KUBE_RV_MAX + 1] = "";
    int rc = 0;
    for (size_t first = 0; first < n && rc == 0; first += PAGE) {
        size_t count = n - first < PAGE ? n - first : PAGE;
        size_t len = page_json(buf, cap, first, count, gen, first + count < n);
        kube_pod_list_t page;
        char err[300];
        if (kube_pod_list_parse(buf, len, &page, err, sizeof err)) {
            fprintf(stderr, "parse: %s\n", err);
            rc = 1;
            break;
        }
        for (size_t i = 0; i < page.count && rc == 0; i++)
            rc = pod_cache_apply(next, KUBE_EVENT_ADDED, &page.items[i], NULL, NULL);
        snprintf(rv, sizeof rv, "%s", page.resource_version);
        kube_pod_list_deinit(&page);
    }
    if (rc == 0)
        rc = pod_cache_replace_with(cache, next, rv);
    pod_cache_free(next);
    return rc;
}

int main(int argc, char **argv) {
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 50000;
    size_t cap = PAGE * 2048 + 256;
    char *buf = malloc(cap);
    pod_cache_t *cache;
    if (!buf || pod_cache_new(&cache))
        return 1;
    struct mallinfo2 m0 = mallinfo2();
    if (relist(cache, n, 1, buf, cap))
        return 1;
    malloc_trim(0);
    struct mallinfo2 m1 = mallinfo2();
    long settled = status_kib("VmRSS:");
    if (relist(cache, n, 2, buf, cap))
        return 1;
    long peak = status_kib("VmHWM:");
    malloc_trim(0);
    long after = status_kib("VmRSS:");
    printf("pods=%zu sizeof_pod_t=%zu heap_bytes_per_pod=%.0f settled_rss_kib=%ld "
           "relist_peak_rss_kib=%ld after_relist_rss_kib=%ld cached=%zu\n",
           n, sizeof(pod_t), (double)(m1.uordblks - m0.uordblks) / (double)n, settled, peak, after,
           pod_cache_size(cache));
    pod_cache_free(cache);
    free(buf);
    return 0;
}
