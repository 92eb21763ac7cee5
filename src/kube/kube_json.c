/*
 * kube_json.c - the JSON helpers of the Kubernetes object decoders (see
 * kube_json.h).
 */
#include "kube/kube_json.h"

#include <stdio.h>
#include <string.h>

#include "core/err.h"

json_t *kube_json_load(const char *buf, size_t len, size_t flags, const char *what, char *err,
                       size_t errlen, int *rc) {
    json_error_t je;
    json_t *root = json_loadb(buf, len, flags, &je);
    if (!root) {
        *rc = je.text[0] && strstr(je.text, "memory") ? KGS_ENOMEM : KGS_EINVAL;
        kgs_seterr(err, errlen, *rc, "%s: bad JSON at line %d column %d: %s", what, je.line,
                   je.column, je.text);
        return NULL;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        *rc = kgs_seterr(err, errlen, KGS_EINVAL, "%s: not a JSON object", what);
        return NULL;
    }
    *rc = 0;
    return root;
}

int kube_json_string(const json_t *parent, const char *key, bool required, const char **dst,
                     size_t cap, const char *who, const char *what, char *err, size_t errlen) {
    const json_t *v = parent ? json_object_get(parent, key) : NULL;
    *dst = "";
    if (!v || json_is_null(v)) {
        if (required)
            return kgs_seterr(err, errlen, KGS_EINVAL, "%s: %s: missing", who, what);
        return 0;
    }
    if (!json_is_string(v))
        return kgs_seterr(err, errlen, KGS_EINVAL, "%s: %s: not a string", who, what);
    size_t n = json_string_length(v);
    const char *s = json_string_value(v);
    if (memchr(s, '\0', n))
        return kgs_seterr(err, errlen, KGS_EINVAL, "%s: %s: contains a NUL character", who, what);
    if (n >= cap)
        return kgs_seterr(err, errlen, KGS_ERANGE, "%s: %s: %zu bytes, limit %zu", who, what, n,
                          cap - 1);
    if (required && n == 0) /* Kubernetes refuses these empty; an empty name could not be keyed */
        return kgs_seterr(err, errlen, KGS_EINVAL, "%s: %s: empty", who, what);
    *dst = s;
    return 0;
}

int kube_json_copy(const json_t *parent, const char *key, bool required, char *dst, size_t cap,
                   const char *who, const char *what, char *err, size_t errlen) {
    const char *s;
    int rc = kube_json_string(parent, key, required, &s, cap, who, what, err, errlen);
    snprintf(dst, cap, "%s", rc ? "" : s);
    return rc;
}

const json_t *kube_json_object(const json_t *parent, const char *key, bool *bad) {
    const json_t *v = parent ? json_object_get(parent, key) : NULL;
    if (!v || json_is_null(v))
        return NULL;
    if (!json_is_object(v)) {
        *bad = true;
        return NULL;
    }
    return v;
}

int kube_json_list_head(const json_t *root, const char *const *kinds, const char *what, char *rv,
                        size_t rvcap, char *cont, size_t contcap, const json_t **items, char *err,
                        size_t errlen) {
    *items = NULL;
    rv[0] = cont[0] = '\0';
    const json_t *kind = json_object_get(root, "kind");
    if (kind) {
        size_t i = 0;
        while (kinds[i] &&
               !(json_is_string(kind) && strcmp(json_string_value(kind), kinds[i]) == 0))
            i++;
        if (!kinds[i]) {
            char want[128] = "";
            for (size_t k = 0, o = 0; kinds[k] && o < sizeof want; k++) {
                int n = snprintf(want + o, sizeof want - o, "%s\"%s\"", k ? " or " : "", kinds[k]);
                if (n < 0)
                    break;
                o += (size_t)n;
            }
            return kgs_seterr(err, errlen, KGS_EINVAL, "%s: kind is not %s", what, want);
        }
    }
    bool bad = false;
    const json_t *meta = kube_json_object(root, "metadata", &bad);
    if (bad || !meta)
        return kgs_seterr(err, errlen, KGS_EINVAL, "%s: metadata: missing or not an object", what);
    int rc;
    if ((rc = kube_json_copy(meta, "resourceVersion", true, rv, rvcap, what,
                             "metadata.resourceVersion", err, errlen)) ||
        (rc = kube_json_copy(meta, "continue", false, cont, contcap, what, "metadata.continue", err,
                             errlen)))
        return rc;
    const json_t *it = json_object_get(root, "items");
    if (it && !json_is_null(it) && !json_is_array(it))
        return kgs_seterr(err, errlen, KGS_EINVAL, "%s: items: not an array", what);
    *items = json_is_array(it) ? it : NULL;
    return 0;
}
