/*
 * kube_pods.c - pod JSON decoding and the pod cache.
 *
 * DESIGN
 * The cache is two chained hash tables over one set of heap entries: by uid
 * (what watch events identify pods by: a pod recreated under the same name
 * is a new uid) and by namespace/name (what the agents report). A relist
 * builds a complete new table set and swaps it in, so an allocation failure
 * half-way leaves the old content untouched: replace_all from an array,
 * replace_with from a second cache filled page by page (so the pods are
 * never held a third time, in an array). Apply allocates before it
 * unlinks anything for the same reason.
 *
 * Memory: the aggregator holds every pod of the cluster, so an entry is
 * one allocation of the pod's record followed by its strings and labels,
 * packed with their NULs: a pod costs what it holds (416 bytes for one with
 * six labels, against 3,200 when every field had its worst-case size).
 */
#include "kube/kube_pods.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/duration.h"
#include "core/hash.h"
#include "core/err.h"
#include "kube/kube_json.h"
#include "kube/kube_resource.h"

static const char *const phase_names[] = {"Unknown", "Pending", "Running", "Succeeded", "Failed"};

static bool digits(const char *s, unsigned n, unsigned *out) {
    unsigned v = 0;
    for (unsigned i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    *out = v;
    return true;
}

bool kube_time_parse(const char *s, int64_t *out) {
    unsigned y, mo, d, h, mi, se;
    if (strlen(s) < 20 || !digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) ||
        s[7] != '-' || !digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't') ||
        !digits(s + 11, 2, &h) || s[13] != ':' || !digits(s + 14, 2, &mi) || s[16] != ':' ||
        !digits(s + 17, 2, &se))
        return false;
    static const unsigned mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 || se > 60)
        return false;
    const char *z = s + 19;
    if (*z == '.') {
        z++;
        if (*z < '0' || *z > '9')
            return false;
        while (*z >= '0' && *z <= '9')
            z++;
    }
    int64_t off = 0;
    if ((*z == 'Z' || *z == 'z') && z[1] == '\0') {
        off = 0;
    } else if ((*z == '+' || *z == '-') && strlen(z) == 6 && z[3] == ':') {
        unsigned oh, om;
        if (!digits(z + 1, 2, &oh) || !digits(z + 4, 2, &om) || oh > 23 || om > 59)
            return false;
        off = (int64_t)(oh * 3600 + om * 60) * (*z == '-' ? -1 : 1);
    } else {
        return false;
    }
    *out = civil_days(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - off;
    return true;
}

const char *pod_phase_name(pod_phase_t phase) {
    if ((unsigned)phase >= sizeof phase_names / sizeof phase_names[0])
        return "Unknown";
    return phase_names[phase];
}

static const char *const event_names[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};

const char *kube_event_type_name(kube_event_type_t t) {
    if ((unsigned)t >= sizeof event_names / sizeof event_names[0])
        return "?";
    return event_names[t];
}

/* Labels are packed "key\0value\0" pairs: walked, not indexed. A pod has
 * at most KUBE_LABELS_MAX of them, a few in practice, so a walk costs what
 * an offset table did and keeps the table's 128 bytes off every pod. */
const char *pod_label(const pod_t *p, const char *key) {
    const char *k = p->_labels;
    for (size_t i = 0; i < p->label_count; i++) {
        size_t klen = strlen(k);
        const char *v = k + klen + 1;
        if (strcmp(k, key) == 0)
            return v;
        k = v + strlen(v) + 1;
    }
    return NULL;
}

int pod_label_at(const pod_t *p, size_t i, const char **key, const char **value) {
    if (i >= p->label_count)
        return KGS_ERANGE;
    const char *k = p->_labels;
    for (size_t j = 0; j < i; j++) {
        k += strlen(k) + 1;
        k += strlen(k) + 1;
    }
    if (key)
        *key = k;
    if (value)
        *value = k + strlen(k) + 1;
    return 0;
}

static const char *str_or_empty(const char *s) {
    return s ? s : "";
}

/* Every string "", nothing owned. */
static void pod_clear(pod_t *p) {
    memset(p, 0, sizeof *p);
    p->namespace = p->name = p->uid = p->node = p->pod_ip = p->resource_version = "";
    p->start.message = "";
}

void pod_deinit(pod_t *p) {
    free(p->_storage);
    pod_clear(p);
}

/* The strings a pod holds, in the order they are packed. */
enum {
    POD_STR_NS,
    POD_STR_NAME,
    POD_STR_UID,
    POD_STR_NODE,
    POD_STR_IP,
    POD_STR_RV,
    POD_STR_MSG,
    POD_STR_COUNT
};

static const char **pod_str_slot(pod_t *p, int k) {
    switch (k) {
    case POD_STR_NS:
        return &p->namespace;
    case POD_STR_NAME:
        return &p->name;
    case POD_STR_UID:
        return &p->uid;
    case POD_STR_NODE:
        return &p->node;
    case POD_STR_IP:
        return &p->pod_ip;
    case POD_STR_RV:
        return &p->resource_version;
    default:
        return &p->start.message;
    }
}

/* Bytes pod_pack_into needs for src's strings and labels. */
static size_t pod_packed_size(const pod_t *src) {
    size_t n = src->_labels ? src->_labels_len : 0;
    for (int k = 0; k < POD_STR_COUNT; k++)
        n += strlen(str_or_empty(*pod_str_slot((pod_t *)src, k))) + 1;
    return n;
}

/* *dst = *src with every string and the labels copied into
 * buf[0..pod_packed_size(src)); dst owns nothing (_storage NULL). */
static void pod_pack_into(pod_t *dst, const pod_t *src, char *buf) {
    pod_t tmp = *src;
    tmp._storage = NULL;
    for (int k = 0; k < POD_STR_COUNT; k++) {
        const char *s = str_or_empty(*pod_str_slot((pod_t *)src, k));
        size_t n = strlen(s) + 1;
        memcpy(buf, s, n);
        *pod_str_slot(&tmp, k) = buf;
        buf += n;
    }
    if (src->_labels && src->_labels_len) {
        memcpy(buf, src->_labels, src->_labels_len);
        tmp._labels = buf;
    } else {
        tmp._labels = NULL;
        tmp._labels_len = 0;
        tmp.label_count = 0;
    }
    *dst = tmp;
}

/* ---- decoding ---------------------------------------------------------------------- */

static pod_phase_t phase_parse(const char *s) {
    for (size_t i = 1; i < sizeof phase_names / sizeof phase_names[0]; i++)
        if (strcmp(s, phase_names[i]) == 0)
            return (pod_phase_t)i;
    return POD_PHASE_UNKNOWN;
}

/* Checks the labels and counts them and their bytes ("key\0value\0" each)
 * into *count and *bytes; labels_copy then packs them. */
static int labels_parse(const json_t *labels, uint16_t *count, uint16_t *bytes, const char *who,
                        char *err, size_t errlen) {
    *count = 0;
    *bytes = 0;
    if (!labels || json_is_null(labels))
        return 0;
    if (!json_is_object(labels))
        return kgs_seterr(err, errlen, KGS_EINVAL, "%s: metadata.labels: not an object", who);
    if (json_object_size(labels) > KUBE_LABELS_MAX)
        return kgs_seterr(err, errlen, KGS_ERANGE, "%s: metadata.labels: %zu labels, limit %d", who,
                          json_object_size(labels), KUBE_LABELS_MAX);
    const char *key;
    size_t klen;
    json_t *value;
    json_object_keylen_foreach((json_t *)labels, key, klen, value) {
        if (!json_is_string(value))
            return kgs_seterr(err, errlen, KGS_EINVAL, "%s: label %.80s: not a string", who, key);
        size_t vlen = json_string_length(value);
        const char *v = json_string_value(value);
        if (memchr(key, '\0', klen) || memchr(v, '\0', vlen))
            return kgs_seterr(err, errlen, KGS_EINVAL, "%s: label %.80s: contains a NUL", who, key);
        if (klen == 0 || klen > KUBE_LABEL_KEY_MAX)
            return kgs_seterr(err, errlen, klen ? KGS_ERANGE : KGS_EINVAL,
                              "%s: label key of %zu bytes: must be 1..%d", who, klen,
                              KUBE_LABEL_KEY_MAX);
        if (vlen > KUBE_LABEL_VALUE_MAX)
            return kgs_seterr(err, errlen, KGS_ERANGE,
                              "%s: label %.80s: value of %zu bytes, limit %d", who, key, vlen,
                              KUBE_LABEL_VALUE_MAX);
        size_t need = klen + 1 + vlen + 1;
        if (need > (size_t)KUBE_LABEL_BYTES - *bytes)
            return kgs_seterr(err, errlen, KGS_ERANGE, "%s: metadata.labels: more than %d bytes",
                              who, KUBE_LABEL_BYTES);
        (*count)++;
        *bytes = (uint16_t)(*bytes + need);
    }
    return 0;
}

/* Packs labels that labels_parse accepted into dst, in the same order. */
static void labels_copy(const json_t *labels, char *dst) {
    if (!json_is_object(labels))
        return;
    const char *key;
    size_t klen;
    json_t *value;
    json_object_keylen_foreach((json_t *)labels, key, klen, value) {
        size_t vlen = json_string_length(value);
        memcpy(dst, key, klen);
        dst[klen] = '\0';
        memcpy(dst + klen + 1, json_string_value(value), vlen + 1);
        dst += klen + 1 + vlen + 1;
    }
}

/* ---- GPU asks ---------------------------------------------------------------------- */

bool kube_quantity_positive(const json_t *q, uint16_t *count) {
    uint16_t scratch;
    uint16_t *n = count ? count : &scratch;
    *n = 0;
    if (!q || json_is_null(q))
        return false;
    if (json_is_integer(q) || json_is_real(q)) {
        double v = json_number_value(q);
        if (!(v > 0))
            return false;
        *n = v >= 65535.0 ? 65535 : (v < 1.0 ? 1 : (uint16_t)v);
        return true;
    }
    if (!json_is_string(q)) { /* not a quantity at all: unreadable, so an ask */
        *n = 1;
        return true;
    }
    /* Kubernetes' quantity grammar: [+-] digits [. digits] [suffix], where
     * the suffix is an SI or binary multiplier or an exponent. Only the
     * sign and the mantissa decide whether it is positive. */
    const char *s = json_string_value(q);
    size_t i = 0;
    if (s[i] == '+' || s[i] == '-')
        i++;
    bool negative = s[0] == '-', nonzero = false, integer = true, any = false;
    unsigned long v = 0;
    for (; (s[i] >= '0' && s[i] <= '9') || s[i] == '.'; i++) {
        if (s[i] == '.') {
            integer = false;
            continue;
        }
        any = true;
        if (s[i] != '0')
            nonzero = true;
        if (integer && v < 65535)
            v = v * 10 + (unsigned long)(s[i] - '0');
    }
    if (!any) { /* "", "abc": not a quantity we can read */
        *n = 1;
        return true;
    }
    if (negative || !nonzero)
        return false;
    *n = (s[i] == '\0' && integer) ? (v >= 65535 ? 65535 : (uint16_t)v) : 1;
    return true;
}

static uint8_t gpu_ask_kind(const char *resource) {
    static const char prefix[] = "nvidia.com/";
    static const char amd[] = "amd.com/";
    size_t n = sizeof prefix - 1;
    /* AMD's device plugin registers amd.com/gpu, or one resource per
     * partition profile (amd.com/cpx_nps4) with its mixed naming strategy. */
    if (strncmp(resource, amd, sizeof amd - 1) == 0 && resource[sizeof amd - 1] != '\0')
        return POD_ASK_AMD;
    if (strncmp(resource, prefix, n) != 0 || resource[n] == '\0')
        return 0;
    if (strcmp(resource + n, "gpu") == 0)
        return POD_ASK_NVIDIA_GPU;
    if (strncmp(resource + n, "mig-", 4) == 0)
        return POD_ASK_NVIDIA_MIG;
    return POD_ASK_NVIDIA_OTHER;
}

static void add_count(uint16_t *acc, uint16_t n) {
    *acc = (uint16_t)(*acc > 65535 - n ? 65535 : *acc + n);
}

/* One container's nvidia.com/<name> and amd.com/<name> asks: per resource the larger of limit and
 * request (Kubernetes makes them equal for extended resources, and fills a
 * missing request from the limit; the larger is the safe reading of an
 * object that broke that rule). */
static void container_asks(const json_t *ctr, pod_t *p) {
    const json_t *res = json_is_object(ctr) ? json_object_get(ctr, "resources") : NULL;
    if (!json_is_object(res))
        return;
    const json_t *limits = json_object_get(res, "limits");
    const json_t *requests = json_object_get(res, "requests");
    const json_t *lists[2] = {json_is_object(limits) ? limits : NULL,
                              json_is_object(requests) ? requests : NULL};
    for (int pass = 0; pass < 2; pass++) {
        if (!lists[pass])
            continue;
        const char *key;
        json_t *q;
        json_object_foreach((json_t *)lists[pass], key, q) {
            uint8_t kind = gpu_ask_kind(key);
            if (!kind)
                continue;
            /* A request with a limit of the same name was read with it. */
            if (pass == 1 && lists[0] && json_object_get(lists[0], key))
                continue;
            uint16_t n = 0, other = 0;
            bool pos = kube_quantity_positive(q, &n);
            if (pass == 0 && lists[1]) {
                bool pos2 = kube_quantity_positive(json_object_get(lists[1], key), &other);
                pos = pos || pos2;
                if (other > n)
                    n = other;
            }
            if (!pos)
                continue;
            p->gpu_asks |= kind;
            add_count(&p->gpu_ask_count, n);
        }
    }
}

/* Fills gpu_asks, gpu_ask_count and gpu_claims from spec (may be NULL). */
static void gpu_asks_parse(const json_t *spec, pod_t *p) {
    if (!spec)
        return;
    size_t i;
    const json_t *ctr;
    const json_t *ctrs = json_object_get(spec, "containers");
    if (json_is_array(ctrs))
        json_array_foreach(ctrs, i, ctr) container_asks(ctr, p);
    const json_t *inits = json_object_get(spec, "initContainers");
    if (json_is_array(inits))
        json_array_foreach(inits, i, ctr) {
            const json_t *rp = json_is_object(ctr) ? json_object_get(ctr, "restartPolicy") : NULL;
            if (json_is_string(rp) && strcmp(json_string_value(rp), "Always") == 0)
                container_asks(ctr, p);
        }
    const json_t *claims = json_object_get(spec, "resourceClaims");
    if (json_is_array(claims) && json_array_size(claims) > 0) {
        size_t n = json_array_size(claims);
        p->gpu_asks |= POD_ASK_CLAIM;
        p->gpu_claims = (uint8_t)(n > 255 ? 255 : n);
    }
}

bool pod_asks_gpu(const pod_t *p) {
    return p->gpu_asks != 0;
}

const char *pod_gpu_ask_describe(const pod_t *p, char *buf, size_t len) {
    if (!len)
        return buf;
    buf[0] = '\0';
    if (!pod_asks_gpu(p)) {
        snprintf(buf, len, "nothing");
        return buf;
    }
    static const struct {
        uint8_t bit;
        const char *name;
    } kinds[] = {{POD_ASK_NVIDIA_GPU, "nvidia.com/gpu"},
                 {POD_ASK_NVIDIA_MIG, "nvidia.com/mig-*"},
                 {POD_ASK_NVIDIA_OTHER, "nvidia.com/<other>"},
                 {POD_ASK_AMD, "amd.com/*"}};
    size_t o = 0;
    unsigned nkinds = 0;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        nkinds += (p->gpu_asks & kinds[k].bit) != 0;
    if (nkinds > 0) {
        int w = snprintf(buf, len, "%u %s", (unsigned)p->gpu_ask_count, nkinds > 1 ? "of " : "");
        o = w > 0 ? (size_t)w : 0;
        bool first = true;
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0] && o < len; k++) {
            if (!(p->gpu_asks & kinds[k].bit))
                continue;
            w = snprintf(buf + o, len - o, "%s%s", first ? "" : ", ", kinds[k].name);
            o += w > 0 ? (size_t)w : 0;
            first = false;
        }
    }
    if ((p->gpu_asks & POD_ASK_CLAIM) && o < len)
        snprintf(buf + o, len - o, "%s%u resource claim%s (DRA)", nkinds ? " and " : "",
                 (unsigned)p->gpu_claims, p->gpu_claims == 1 ? "" : "s");
    return buf;
}

/* Gives *p its own copy of every string it points at (borrowed from the
 * JSON until now) and of labels (labels_parse'd, label_bytes long), in one
 * allocation. Returns 0 or KGS_ENOMEM (*p then cleared). */
static int pod_own(pod_t *p, const json_t *labels, size_t label_bytes) {
    size_t n = label_bytes;
    for (int k = 0; k < POD_STR_COUNT; k++)
        n += strlen(*pod_str_slot(p, k)) + 1;
    char *buf = malloc(n);
    if (!buf) {
        pod_clear(p);
        return KGS_ENOMEM;
    }
    char *at = buf;
    for (int k = 0; k < POD_STR_COUNT; k++) {
        const char **slot = pod_str_slot(p, k);
        size_t len = strlen(*slot) + 1;
        memcpy(at, *slot, len);
        *slot = at;
        at += len;
    }
    p->_labels = label_bytes ? at : NULL;
    p->_labels_len = (uint16_t)label_bytes;
    if (label_bytes)
        labels_copy(labels, at);
    p->_storage = buf;
    return 0;
}

/*
 * Identity first (so a KGS_ERANGE later still names the pod), then the rest.
 * `who` grows from "pod" to "pod NS/NAME" as soon as those are known. The
 * strings are borrowed from obj until pod_own copies them, all at once.
 */
int kube_pod_from_json(const json_t *obj, pod_t *out, char *err, size_t errlen) {
    pod_clear(out);
    if (!json_is_object(obj))
        return kgs_seterr(err, errlen, KGS_EINVAL, "pod: not a JSON object");
    bool bad = false;
    const json_t *meta = kube_json_object(obj, "metadata", &bad);
    const json_t *spec = kube_json_object(obj, "spec", &bad);
    const json_t *status = kube_json_object(obj, "status", &bad);
    if (bad)
        return kgs_seterr(err, errlen, KGS_EINVAL, "pod: metadata, spec or status not an object");
    if (!meta)
        return kgs_seterr(err, errlen, KGS_EINVAL, "pod: metadata: missing");
    int rc;
    pod_t *p = out;
    /* Optional: nodes, read with the same parser for their labels, have none. */
    if ((rc = kube_json_string(meta, "namespace", false, &p->namespace, KUBE_NAMESPACE_MAX + 1,
                               "pod", "metadata.namespace", err, errlen)) ||
        (rc = kube_json_string(meta, "name", true, &p->name, KUBE_NAME_MAX + 1, "pod",
                               "metadata.name", err, errlen)))
        goto fail;
    char who[KUBE_NAMESPACE_MAX + KUBE_NAME_MAX + 8];
    snprintf(who, sizeof who, "pod %s/%s", p->namespace, p->name);
    if ((rc = kube_json_string(meta, "uid", true, &p->uid, KUBE_UID_MAX + 1, who, "metadata.uid",
                               err, errlen)))
        goto fail;
    if ((rc = kube_json_string(meta, "resourceVersion", true, &p->resource_version, KUBE_RV_MAX + 1,
                               who, "metadata.resourceVersion", err, errlen)) ||
        (rc = kube_json_string(spec, "nodeName", false, &p->node, KUBE_NODE_MAX + 1, who,
                               "spec.nodeName", err, errlen)) ||
        (rc = kube_json_string(status, "podIP", false, &p->pod_ip, KUBE_POD_IP_MAX + 1, who,
                               "status.podIP", err, errlen)))
        goto fail_keep_identity;
    char phase[32];
    if ((rc = kube_json_copy(status, "phase", false, phase, sizeof phase, who, "status.phase", err,
                             errlen)))
        goto fail_keep_identity;
    p->phase = phase_parse(phase);
    const json_t *ct = json_object_get(meta, "creationTimestamp");
    if (!json_is_string(ct) || !kube_time_parse(json_string_value(ct), &p->created_unix))
        p->created_unix = 0;
    const json_t *stt = status ? json_object_get(status, "startTime") : NULL;
    if (!json_is_string(stt) || !kube_time_parse(json_string_value(stt), &p->started_unix))
        p->started_unix = 0;
    char message[POD_START_MESSAGE_MAX + 1];
    pod_start_parse(status, &p->start, message);
    gpu_asks_parse(spec, p);
    const json_t *dt = json_object_get(meta, "deletionTimestamp");
    p->deleting = dt && !json_is_null(dt);
    /* Ready decides whether an engine's /metrics is scraped: a pod still
     * loading its model is Running but not serving. */
    const json_t *conds = status ? json_object_get(status, "conditions") : NULL;
    if (json_is_array(conds)) {
        size_t i;
        const json_t *cond;
        json_array_foreach(conds, i, cond) {
            const json_t *ty = json_object_get(cond, "type"), *st = json_object_get(cond, "status");
            if (json_is_string(ty) && json_is_string(st) &&
                strcmp(json_string_value(ty), "Ready") == 0)
                p->ready = strcmp(json_string_value(st), "True") == 0;
        }
    }
    const json_t *labels = json_object_get(meta, "labels");
    uint16_t label_bytes;
    if ((rc = labels_parse(labels, &p->label_count, &label_bytes, who, err, errlen)))
        goto fail_keep_identity;
    if (pod_own(p, labels, label_bytes))
        return kgs_seterr(err, errlen, KGS_ENOMEM, "%s: out of memory", who);
    return 0;

fail_keep_identity : {
    /* Keep only what the header promises: the identity. */
    const char *ns = p->namespace, *name = p->name, *uid = p->uid;
    pod_clear(p);
    p->namespace = ns;
    p->name = name;
    p->uid = uid;
    if (pod_own(p, NULL, 0))
        return kgs_seterr(err, errlen, KGS_ENOMEM, "%s: out of memory", who);
    return rc;
}
fail:
    pod_clear(p);
    return rc;
}

static int rv_copy(const json_t *meta, char *dst, size_t cap, bool required, const char *who,
                   char *err, size_t errlen) {
    return kube_json_copy(meta, "resourceVersion", required, dst, cap, who,
                          "metadata.resourceVersion", err, errlen);
}

void kube_pod_list_deinit(kube_pod_list_t *l) {
    for (size_t i = 0; i < l->count; i++)
        pod_deinit(&l->items[i]);
    free(l->items);
    memset(l, 0, sizeof *l);
}

int kube_pod_list_parse(const char *buf, size_t len, kube_pod_list_t *out, char *err,
                        size_t errlen) {
    memset(out, 0, sizeof *out);
    int rc;
    json_t *root = kube_json_load(buf, len, JSON_ALLOW_NUL, "PodList", err, errlen, &rc);
    if (!root)
        return rc;
    /* NodeList too: the node watch reads Node labels with this parser. */
    static const char *const kinds[] = {"PodList", "NodeList", NULL};
    const json_t *items;
    if ((rc = kube_json_list_head(root, kinds, "PodList", out->resource_version,
                                  sizeof out->resource_version, out->continue_token,
                                  sizeof out->continue_token, &items, err, errlen)))
        goto fail;
    size_t n = items ? json_array_size(items) : 0;
    if (n) {
        out->items = calloc(n, sizeof *out->items);
        if (!out->items) {
            rc = kgs_seterr(err, errlen, KGS_ENOMEM, "PodList: %zu items: out of memory", n);
            goto fail;
        }
    }
    for (size_t i = 0; i < n; i++) {
        char why[300];
        rc = kube_pod_from_json(json_array_get(items, i), &out->items[out->count], why, sizeof why);
        if (rc)
            pod_deinit(&out->items[out->count]); /* the identity an error leaves */
        if (rc == KGS_ERANGE) {
            if (out->skipped++ == 0)
                snprintf(out->skip_reason, sizeof out->skip_reason, "%.255s", why);
            continue;
        }
        if (rc) {
            kgs_seterr(err, errlen, rc, "PodList: item %zu: %s", i, why);
            goto fail;
        }
        out->count++;
    }
    json_decref(root);
    return 0;
fail:
    json_decref(root);
    kube_pod_list_deinit(out);
    return rc;
}

int kube_watch_envelope(const char *line, size_t len, json_t **root, kube_event_type_t *type,
                        const json_t **obj, char *rvbuf, int *error_code, char *err,
                        size_t errlen) {
    *obj = NULL;
    rvbuf[0] = '\0';
    if (error_code)
        *error_code = 0;
    int rc;
    *root = kube_json_load(line, len, JSON_ALLOW_NUL, "watch event", err, errlen, &rc);
    if (!*root)
        return rc;
    const json_t *jt = json_object_get(*root, "type");
    const json_t *o = json_object_get(*root, "object");
    if (!json_is_string(jt) || !json_is_object(o))
        return kgs_seterr(err, errlen, KGS_EINVAL, "watch event: type or object missing");
    const char *ts = json_string_value(jt);
    size_t t;
    for (t = 0; t < sizeof event_names / sizeof event_names[0]; t++)
        if (strcmp(ts, event_names[t]) == 0)
            break;
    if (t == sizeof event_names / sizeof event_names[0])
        return kgs_seterr(err, errlen, KGS_EINVAL, "watch event: unknown type \"%.40s\"", ts);
    *type = (kube_event_type_t)t;
    if (*type == KUBE_EVENT_ERROR) {
        /* A metav1.Status: {"kind":"Status","status":"Failure","message":
         * "too old resource version: 5 (9)","reason":"Expired","code":410}. */
        const json_t *code = json_object_get(o, "code");
        const json_t *msg = json_object_get(o, "message");
        if (!json_is_integer(code) || json_integer_value(code) < 0 ||
            json_integer_value(code) > 999)
            return kgs_seterr(err, errlen, KGS_EINVAL, "watch ERROR event: no valid status code");
        if (error_code)
            *error_code = (int)json_integer_value(code);
        kgs_seterr(err, errlen, 0, "watch ERROR event: %d: %.300s", (int)json_integer_value(code),
                   json_is_string(msg) ? json_string_value(msg) : "(no message)");
        return 0;
    }
    if (*type == KUBE_EVENT_BOOKMARK) {
        bool bad = false;
        const json_t *meta = kube_json_object(o, "metadata", &bad);
        if (bad || !meta)
            return kgs_seterr(err, errlen, KGS_EINVAL, "watch BOOKMARK event: metadata missing");
        return rv_copy(meta, rvbuf, KUBE_RV_MAX + 1, true, "watch BOOKMARK event", err, errlen);
    }
    *obj = o;
    return 0;
}

int kube_watch_rv_out(const char *rvbuf, char *rv, size_t rvlen, char *err, size_t errlen) {
    if (!rv || !rvlen)
        return 0;
    size_t n = strlen(rvbuf);
    if (n >= rvlen)
        return kgs_seterr(err, errlen, KGS_ERANGE, "watch event: resourceVersion too long");
    memcpy(rv, rvbuf, n + 1);
    return 0;
}

int kube_watch_event_parse(const char *line, size_t len, kube_event_type_t *type, pod_t *pod,
                           char *rv, size_t rvlen, int *error_code, char *err, size_t errlen) {
    pod_t scratch;
    pod_t *p = pod ? pod : &scratch;
    pod_clear(p);
    if (rv && rvlen)
        rv[0] = '\0';
    json_t *root;
    const json_t *obj;
    char rvbuf[KUBE_RV_MAX + 1];
    int rc = kube_watch_envelope(line, len, &root, type, &obj, rvbuf, error_code, err, errlen);
    if (rc == 0 && obj) {
        rc = kube_pod_from_json(obj, p, err, errlen);
        if (rc == 0) /* checked against KUBE_RV_MAX by the decoder */
            snprintf(rvbuf, sizeof rvbuf, "%s", p->resource_version);
    }
    if (rc == 0 && *type != KUBE_EVENT_ERROR)
        rc = kube_watch_rv_out(rvbuf, rv, rvlen, err, errlen);
    json_decref(root);
    if (p == &scratch)
        pod_deinit(&scratch);
    return rc;
}

/* ---- cache ------------------------------------------------------------------------- */

/* One allocation per pod: its value, then its strings and labels packed
 * (pod_pack_into), so a pod costs what it holds. */
typedef struct entry {
    struct entry *next_uid;          /* chain in by_uid */
    struct entry *next_nn;           /* chain in by_name */
    struct entry *ns_next, *ns_prev; /* its namespace's pods */
    pod_t pod;                       /* its strings point into bytes[] */
    char bytes[];
} entry_t;

/* The pods of one namespace, so that a workload's evaluation visits its
 * namespace's pods and not the cluster's (GetMetrics costs the same at
 * 500 pods and at 50,000 when the workload is the same). */
typedef struct ns_pods {
    struct ns_pods *next; /* chain in by_ns */
    entry_t *head;
    size_t count;
    char name[]; /* the namespace */
} ns_pods_t;

#define NS_BUCKETS 256

static entry_t *entry_new(const pod_t *src) {
    size_t n = pod_packed_size(src);
    entry_t *e = malloc(sizeof *e + n);
    if (e)
        pod_pack_into(&e->pod, src, e->bytes);
    return e;
}

typedef struct {
    entry_t **by_uid, **by_name;
    size_t nbuckets; /* power of two */
    size_t size;
    ns_pods_t **by_ns; /* NS_BUCKETS */
} table_t;

struct pod_cache {
    table_t t;
    char rv[KUBE_RV_MAX + 1];
};

#define hash_str kgs_fnv1a_cont /* namespace then name, as one key without building it */
#define HASH_SEED KGS_FNV_OFFSET

static size_t uid_slot(const table_t *t, const char *uid) {
    return (size_t)hash_str(HASH_SEED, uid) & (t->nbuckets - 1);
}

static size_t name_slot(const table_t *t, const char *ns, const char *name) {
    uint64_t h = hash_str(HASH_SEED, ns);
    h = kgs_fnv1a_bytes(h, "/", 1);
    return (size_t)hash_str(h, name) & (t->nbuckets - 1);
}

static size_t ns_slot(const char *ns) {
    return (size_t)hash_str(HASH_SEED, ns) & (NS_BUCKETS - 1);
}

static ns_pods_t *ns_find(const table_t *t, const char *ns) {
    for (ns_pods_t *n = t->by_ns[ns_slot(ns)]; n; n = n->next)
        if (strcmp(n->name, ns) == 0)
            return n;
    return NULL;
}

/* Puts e into its namespace's list (the list made on its first pod). */
static int ns_link(table_t *t, entry_t *e) {
    ns_pods_t *n = ns_find(t, e->pod.namespace);
    if (!n) {
        size_t len = strlen(e->pod.namespace);
        n = malloc(sizeof *n + len + 1);
        if (!n)
            return KGS_ENOMEM;
        memcpy(n->name, e->pod.namespace, len + 1);
        n->head = NULL;
        n->count = 0;
        size_t i = ns_slot(n->name);
        n->next = t->by_ns[i];
        t->by_ns[i] = n;
    }
    e->ns_prev = NULL;
    e->ns_next = n->head;
    if (n->head)
        n->head->ns_prev = e;
    n->head = e;
    n->count++;
    return 0;
}

/* Takes e out of its namespace's list, and the list away with its last pod. */
static void ns_unlink(table_t *t, entry_t *e) {
    ns_pods_t *n = ns_find(t, e->pod.namespace);
    if (!n)
        return;
    if (e->ns_prev)
        e->ns_prev->ns_next = e->ns_next;
    else
        n->head = e->ns_next;
    if (e->ns_next)
        e->ns_next->ns_prev = e->ns_prev;
    if (--n->count)
        return;
    for (ns_pods_t **pp = &t->by_ns[ns_slot(n->name)]; *pp; pp = &(*pp)->next)
        if (*pp == n) {
            *pp = n->next;
            break;
        }
    free(n);
}

static int table_init(table_t *t, size_t want) {
    size_t n = 16;
    while (n < want && n < ((size_t)1 << 30))
        n <<= 1;
    t->by_uid = calloc(n, sizeof *t->by_uid);
    t->by_name = calloc(n, sizeof *t->by_name);
    t->by_ns = calloc(NS_BUCKETS, sizeof *t->by_ns);
    if (!t->by_uid || !t->by_name || !t->by_ns) {
        free(t->by_uid);
        free(t->by_name);
        free(t->by_ns);
        t->by_uid = t->by_name = NULL;
        t->by_ns = NULL;
        return KGS_ENOMEM;
    }
    t->nbuckets = n;
    t->size = 0;
    return 0;
}

static void table_deinit(table_t *t) {
    for (size_t i = 0; i < t->nbuckets; i++) {
        entry_t *e = t->by_uid[i];
        while (e) {
            entry_t *next = e->next_uid;
            free(e);
            e = next;
        }
    }
    for (size_t i = 0; t->by_ns && i < NS_BUCKETS; i++)
        for (ns_pods_t *n = t->by_ns[i], *next; n; n = next) {
            next = n->next;
            free(n);
        }
    free(t->by_uid);
    free(t->by_name);
    free(t->by_ns);
    memset(t, 0, sizeof *t);
}

static entry_t **uid_link(const table_t *t, const char *uid) {
    entry_t **pp = &t->by_uid[uid_slot(t, uid)];
    while (*pp && strcmp((*pp)->pod.uid, uid) != 0)
        pp = &(*pp)->next_uid;
    return pp;
}

static void link_hash(table_t *t, entry_t *e) {
    size_t u = uid_slot(t, e->pod.uid), n = name_slot(t, e->pod.namespace, e->pod.name);
    e->next_uid = t->by_uid[u];
    t->by_uid[u] = e;
    e->next_nn = t->by_name[n];
    t->by_name[n] = e;
    t->size++;
}

/* Links a new entry everywhere. KGS_ENOMEM (e linked nowhere) when its
 * namespace's list could not be made. */
static int link_entry(table_t *t, entry_t *e) {
    if (ns_link(t, e) != 0)
        return KGS_ENOMEM;
    link_hash(t, e);
    return 0;
}

static void unlink_entry(table_t *t, entry_t *e) {
    ns_unlink(t, e);
    entry_t **pp = uid_link(t, e->pod.uid);
    if (*pp == e)
        *pp = e->next_uid;
    pp = &t->by_name[name_slot(t, e->pod.namespace, e->pod.name)];
    while (*pp && *pp != e)
        pp = &(*pp)->next_nn;
    if (*pp == e)
        *pp = e->next_nn;
    t->size--;
}

/* Doubles the buckets when the load passes 1. Failure to grow is not an
 * error: chains just get longer. */
static void table_maybe_grow(table_t *t) {
    if (t->size < t->nbuckets || t->nbuckets >= ((size_t)1 << 30))
        return;
    table_t bigger;
    if (table_init(&bigger, t->nbuckets * 2))
        return;
    for (size_t i = 0; i < t->nbuckets; i++) {
        entry_t *e = t->by_uid[i];
        while (e) {
            entry_t *next = e->next_uid;
            link_hash(&bigger, e);
            e = next;
        }
    }
    free(t->by_uid);
    free(t->by_name);
    free(bigger.by_ns); /* the namespaces' lists stay as they are */
    bigger.by_ns = t->by_ns;
    *t = bigger;
}

int pod_cache_new(pod_cache_t **out) {
    *out = NULL;
    pod_cache_t *c = calloc(1, sizeof *c);
    if (!c)
        return KGS_ENOMEM;
    if (table_init(&c->t, 16)) {
        free(c);
        return KGS_ENOMEM;
    }
    *out = c;
    return 0;
}

void pod_cache_free(pod_cache_t *c) {
    if (!c)
        return;
    table_deinit(&c->t);
    free(c);
}

static int rv_check(const char *rv) {
    return rv && strlen(rv) > KUBE_RV_MAX ? KGS_EINVAL : 0;
}

int pod_cache_replace_all(pod_cache_t *c, const pod_t *pods, size_t n, const char *rv) {
    if (rv_check(rv))
        return KGS_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!str_or_empty(pods[i].uid)[0])
            return KGS_EINVAL;
    table_t t;
    if (table_init(&t, n))
        return KGS_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        entry_t **pp = uid_link(&t, pods[i].uid);
        if (*pp) { /* listed twice: keep the last copy */
            entry_t *dup = *pp;
            unlink_entry(&t, dup);
            free(dup);
        }
        entry_t *e = entry_new(&pods[i]);
        if (!e || link_entry(&t, e) != 0) {
            free(e);
            table_deinit(&t);
            return KGS_ENOMEM;
        }
    }
    table_deinit(&c->t);
    c->t = t;
    snprintf(c->rv, sizeof c->rv, "%s", rv ? rv : "");
    return 0;
}

int pod_cache_replace_with(pod_cache_t *c, pod_cache_t *next, const char *rv) {
    if (rv_check(rv))
        return KGS_EINVAL;
    table_t empty;
    if (table_init(&empty, 16))
        return KGS_ENOMEM;
    table_deinit(&c->t);
    c->t = next->t;
    next->t = empty;
    next->rv[0] = '\0';
    snprintf(c->rv, sizeof c->rv, "%s", rv ? rv : "");
    return 0;
}

static bool str_eq(const char *a, const char *b) {
    return strcmp(str_or_empty(a), str_or_empty(b)) == 0;
}

static size_t labels_len(const pod_t *p) {
    return p->_labels && p->label_count ? p->_labels_len : 0;
}

/* Field-wise equality. */
static bool pod_equal(const pod_t *a, const pod_t *b) {
    if (a->ready != b->ready || a->created_unix != b->created_unix ||
        a->started_unix != b->started_unix || a->gpu_asks != b->gpu_asks ||
        a->gpu_claims != b->gpu_claims || a->gpu_ask_count != b->gpu_ask_count ||
        a->start.scheduled_unix != b->start.scheduled_unix ||
        a->start.running_unix != b->start.running_unix ||
        a->start.ready_unix != b->start.ready_unix || a->start.trouble != b->start.trouble ||
        a->start.restarted != b->start.restarted || !str_eq(a->start.message, b->start.message))
        return false;
    size_t la = labels_len(a);
    return str_eq(a->namespace, b->namespace) && str_eq(a->name, b->name) &&
           str_eq(a->uid, b->uid) && str_eq(a->node, b->node) && str_eq(a->pod_ip, b->pod_ip) &&
           str_eq(a->resource_version, b->resource_version) && a->phase == b->phase &&
           a->deleting == b->deleting &&
           (la ? a->label_count : 0) == (labels_len(b) ? b->label_count : 0) &&
           la == labels_len(b) && (la == 0 || memcmp(a->_labels, b->_labels, la) == 0);
}

int pod_cache_apply(pod_cache_t *c, kube_event_type_t type, const pod_t *pod, const char *rv,
                    bool *changed) {
    if (changed)
        *changed = false;
    if (rv_check(rv) || type == KUBE_EVENT_ERROR || (unsigned)type > KUBE_EVENT_ERROR)
        return KGS_EINVAL;
    if (type != KUBE_EVENT_BOOKMARK && (!pod || !str_or_empty(pod->uid)[0]))
        return KGS_EINVAL;
    switch (type) {
    case KUBE_EVENT_ADDED:
    case KUBE_EVENT_MODIFIED: {
        entry_t **pp = uid_link(&c->t, pod->uid);
        entry_t *old = *pp;
        if (old && pod_equal(&old->pod, pod))
            break;
        entry_t *e = entry_new(pod);
        if (!e)
            return KGS_ENOMEM;
        if (old) {
            unlink_entry(&c->t, old);
            free(old);
        }
        if (link_entry(&c->t, e) != 0) {
            free(e); /* the old copy is gone: the next relist brings it back */
            return KGS_ENOMEM;
        }
        table_maybe_grow(&c->t);
        if (changed)
            *changed = true;
        break;
    }
    case KUBE_EVENT_DELETED: {
        bool was = pod_cache_remove(c, pod->uid);
        if (changed)
            *changed = was;
        break;
    }
    default:
        break;
    }
    if (rv && rv[0])
        snprintf(c->rv, sizeof c->rv, "%s", rv);
    return 0;
}

bool pod_cache_remove(pod_cache_t *c, const char *uid) {
    entry_t *e = *uid_link(&c->t, uid);
    if (!e)
        return false;
    unlink_entry(&c->t, e);
    free(e);
    return true;
}

const pod_t *pod_cache_get(const pod_cache_t *c, const char *uid) {
    entry_t *e = *uid_link(&c->t, uid);
    return e ? &e->pod : NULL;
}

const pod_t *pod_cache_find(const pod_cache_t *c, const char *ns, const char *name) {
    for (entry_t *e = c->t.by_name[name_slot(&c->t, ns, name)]; e; e = e->next_nn)
        if (strcmp(e->pod.namespace, ns) == 0 && strcmp(e->pod.name, name) == 0)
            return &e->pod;
    return NULL;
}

void pod_cache_foreach(const pod_cache_t *c, pod_cache_cb cb, void *user_data) {
    for (size_t i = 0; i < c->t.nbuckets; i++)
        for (entry_t *e = c->t.by_uid[i]; e; e = e->next_uid)
            if (!cb(&e->pod, user_data))
                return;
}

void pod_cache_foreach_in(const pod_cache_t *c, const char *ns, pod_cache_cb cb, void *user_data) {
    const ns_pods_t *n = ns_find(&c->t, ns);
    for (const entry_t *e = n ? n->head : NULL; e; e = e->ns_next)
        if (!cb(&e->pod, user_data))
            return;
}

size_t pod_cache_size(const pod_cache_t *c) {
    return c->t.size;
}

const char *pod_cache_resource_version(const pod_cache_t *c) {
    return c->rv;
}

/* ---- the watched resources "pods" and "nodes" (kube_resource.h) ------------------- */

/* A Node is read with the pod parser (its labels), so both rows share
 * these; only the API path differs. */

static int pods_state_new(void **out) {
    pod_cache_t *c;
    int rc = pod_cache_new(&c);
    *out = rc ? NULL : c;
    return rc;
}

static void pods_state_free(void *state) {
    pod_cache_free(state);
}

static const char *pods_resource_version(const void *state) {
    return pod_cache_resource_version(state);
}

static size_t pods_size(const void *state) {
    return pod_cache_size(state);
}

static void pods_describe(const void *state, char *out, size_t cap) {
    (void)state;
    if (cap)
        out[0] = '\0';
}

static int pods_page_parse(const char *buf, size_t len, void **page, kube_page_info_t *info,
                           char *err, size_t errlen) {
    kube_pod_list_t *l = *page = malloc(sizeof *l);
    int rc = l ? kube_pod_list_parse(buf, len, l, err, errlen)
               : kgs_seterr(err, errlen, KGS_ENOMEM, "PodList: out of memory");
    if (rc == 0)
        kube_page_info_set(info, l->count, l->skipped, l->skip_reason, l->resource_version,
                           l->continue_token);
    else {
        free(l);
        *page = NULL;
    }
    return rc;
}

static void pods_page_free(void *page) {
    if (!page)
        return;
    kube_pod_list_deinit(page);
    free(page);
}

/* ADDED into a cache of its own: a uid listed twice keeps the last copy. */
static int pods_list_add(void **next, void *page) {
    kube_pod_list_t *l = page;
    pod_cache_t *n = *next;
    int rc = n ? 0 : pod_cache_new(&n);
    if (rc == 0)
        *next = n;
    for (size_t i = 0; i < l->count && rc == 0; i++)
        rc = pod_cache_apply(n, KUBE_EVENT_ADDED, &l->items[i], NULL, NULL);
    pods_page_free(l);
    return rc;
}

static void pods_list_free(void *next) {
    pod_cache_free(next);
}

/* glibc keeps what free() gave back in its arenas: after a relist freed
 * the old pods, RSS would stay near the relist's peak (50,000 pods: 46 MiB
 * after it, 25 MiB with the trim; bench/kube-relist.py). A relist that dropped RELIST_TRIM_PODS or
 * more hands the free pages back (a walk of the heap: milliseconds, once a relist). */
#define RELIST_TRIM_PODS 1000
static void release_replaced(size_t pods) {
    if (pods < RELIST_TRIM_PODS)
        return;
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

static int pods_list_replace(void *state, void *next, const char *rv) {
    size_t replaced = pod_cache_size(state);
    int rc = pod_cache_replace_with(state, next, rv);
    pod_cache_free(next); /* do not keep a big cluster's buckets around */
    if (rc == 0)
        release_replaced(replaced);
    return rc;
}

static int pods_watch_event(void *state, const char *line, size_t len, kube_event_result_t *out,
                            char *err, size_t errlen) {
    pod_cache_t *c = state;
    memset(out, 0, sizeof *out);
    pod_t pod;
    char rv[KUBE_RV_MAX + 1];
    int rc = kube_watch_event_parse(line, len, &out->type, &pod, rv, sizeof rv, &out->error_code,
                                    err, errlen);
    if (rc == KGS_ERANGE && pod.uid[0]) {
        /* Unrepresentable now: drop any old copy rather than keep stale labels. */
        out->skipped = true;
        out->changed = pod_cache_remove(c, pod.uid);
        pod_deinit(&pod);
        return 0;
    }
    if (rc || out->type == KUBE_EVENT_ERROR) {
        pod_deinit(&pod);
        return rc;
    }
    rc = pod_cache_apply(c, out->type, &pod, rv, &out->changed);
    pod_deinit(&pod);
    out->applying = rc != 0;
    return rc;
}

static const pod_cache_t *pods_pod_cache(const void *state) {
    return state;
}

#define POD_SHAPED_ROW                                                                             \
    .state_new = pods_state_new, .state_free = pods_state_free,                                    \
    .resource_version = pods_resource_version, .size = pods_size, .describe = pods_describe,       \
    .page_parse = pods_page_parse, .page_free = pods_page_free, .list_add = pods_list_add,         \
    .list_free = pods_list_free, .list_replace = pods_list_replace,                                \
    .watch_event = pods_watch_event, .pod_cache = pods_pod_cache, .dra_index = NULL

const kube_resource_t kube_resource_pods = {.name = "pods", .path = "/api/v1/pods", POD_SHAPED_ROW};
const kube_resource_t kube_resource_nodes = {
    .name = "nodes", .path = "/api/v1/nodes", POD_SHAPED_ROW};
