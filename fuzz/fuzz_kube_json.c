/* fuzz_kube_json.c - PodList pages and watch events from the Kubernetes API
 * (outside bytes), and the cache fed with whatever parsed. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kube/kube_pods.h"
#include "core/err.h"
#include "fuzz_check.h"

static void check_pod(const pod_t *p) {
    /* namespace may be empty: the same parser reads Nodes, which are
     * cluster-scoped (a pod without one matches no namespace). */
    FUZZ_CHECK(p->uid[0] && p->name[0] && p->resource_version[0]);
    FUZZ_CHECK(strlen(p->namespace) <= KUBE_NAMESPACE_MAX);
    FUZZ_CHECK(strlen(p->name) <= KUBE_NAME_MAX);
    FUZZ_CHECK(p->label_count <= KUBE_LABELS_MAX);
    for (size_t i = 0; i < p->label_count; i++) {
        const char *k, *v;
        FUZZ_CHECK(pod_label_at(p, i, &k, &v) == 0);
        FUZZ_CHECK(strlen(k) >= 1 && strlen(k) <= KUBE_LABEL_KEY_MAX);
        FUZZ_CHECK(strlen(v) <= KUBE_LABEL_VALUE_MAX);
        FUZZ_CHECK(pod_label(p, k) != NULL);
    }
    /* The GPU ask: counts only with their bits (a device plugin's resource,
     * NVIDIA's or AMD's), the description bounded. */
    const unsigned plugin =
        POD_ASK_NVIDIA_GPU | POD_ASK_NVIDIA_MIG | POD_ASK_NVIDIA_OTHER | POD_ASK_AMD;
    FUZZ_CHECK((p->gpu_asks & ~(plugin | POD_ASK_CLAIM)) == 0);
    FUZZ_CHECK((p->gpu_claims > 0) == ((p->gpu_asks & POD_ASK_CLAIM) != 0));
    FUZZ_CHECK(p->gpu_ask_count == 0 || (p->gpu_asks & plugin));
    FUZZ_CHECK(!(p->gpu_asks & plugin) || p->gpu_ask_count > 0);
    /* The start: a known trouble, a bounded one-line message, stages only
     * in order. */
    FUZZ_CHECK(p->start.trouble < POD_TROUBLE_COUNT);
    FUZZ_CHECK(strlen(p->start.message) <= POD_START_MESSAGE_MAX);
    for (const char *m = p->start.message; *m; m++)
        FUZZ_CHECK((unsigned char)*m >= 0x20 && *m != 0x7f);
    double st[POD_STAGE_COUNT];
    if (pod_start_stages(p->created_unix, &p->start, st))
        for (int i = 0; i < POD_STAGE_COUNT; i++)
            FUZZ_CHECK(st[i] >= 0);
    char d[40];
    memset(d, 'x', sizeof d);
    pod_gpu_ask_describe(p, d, sizeof d - 8);
    FUZZ_CHECK(memchr(d, '\0', sizeof d - 8) != NULL && d[sizeof d - 1] == 'x');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    pod_cache_t *cache;
    if (pod_cache_new(&cache))
        return 0;
    char err[300];
    kube_pod_list_t l;
    int rc = kube_pod_list_parse((const char *)data, size, &l, err, sizeof err);
    if (rc == 0) {
        for (size_t i = 0; i < l.count; i++)
            check_pod(&l.items[i]);
        FUZZ_CHECK(pod_cache_replace_all(cache, l.items, l.count, l.resource_version) == 0);
        FUZZ_CHECK(pod_cache_size(cache) <= l.count);
        for (size_t i = 0; i < l.count; i++)
            FUZZ_CHECK(pod_cache_get(cache, l.items[i].uid) != NULL);
        for (size_t i = 0; i < pod_cache_size(cache) && i < l.count; i++) {
            const pod_t *held = pod_cache_get(cache, l.items[i].uid);
            check_pod(held);
        }
        kube_pod_list_deinit(&l);
    } else {
        FUZZ_CHECK(l.items == NULL && l.count == 0);
    }
    /* Every line as a watch event, applied in order. */
    const char *p = (const char *)data, *end = p + size;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        kube_event_type_t type;
        pod_t pod;
        char rv[KUBE_RV_MAX + 1];
        int code = -1;
        rc = kube_watch_event_parse(p, n, &type, &pod, rv, sizeof rv, &code, err, sizeof err);
        if (rc == 0 && type == KUBE_EVENT_ERROR) {
            FUZZ_CHECK(code >= 0 && code <= 999);
        } else if (rc == 0) {
            FUZZ_CHECK(code == 0);
            if (type != KUBE_EVENT_BOOKMARK)
                check_pod(&pod);
            size_t before = pod_cache_size(cache);
            bool changed;
            FUZZ_CHECK(pod_cache_apply(cache, type, &pod, rv, &changed) == 0);
            FUZZ_CHECK(strcmp(pod_cache_resource_version(cache), rv) == 0);
            if (type == KUBE_EVENT_DELETED)
                FUZZ_CHECK(pod_cache_get(cache, pod.uid) == NULL &&
                           pod_cache_size(cache) + (changed ? 1 : 0) == before);
            else if (type != KUBE_EVENT_BOOKMARK) {
                /* the cache's packed copy reads as the decoded pod */
                const pod_t *held = pod_cache_get(cache, pod.uid);
                FUZZ_CHECK(held != NULL && held->label_count == pod.label_count);
                check_pod(held);
            }
        }
        pod_deinit(&pod);
        p += n + 1;
    }
    pod_cache_free(cache);
    return 0;
}
