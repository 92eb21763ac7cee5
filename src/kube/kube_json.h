/*
 * kube_json.h - the JSON helpers the Kubernetes object decoders share
 * (kube_pods.c for pods and nodes, resource_slices.c for ResourceSlices):
 * a document loaded as one JSON object, a string member checked against
 * its bound, an object member. Pure: no I/O; jansson does the JSON.
 *
 * Messages name the object and the field: "<who>: <what>: <reason>", where
 * `who` is the object ("pod ns/name", "resourceslice s", "PodList") and
 * `what` the field as Kubernetes spells its path ("metadata.name").
 */
#ifndef KGS_KUBE_KUBE_JSON_H
#define KGS_KUBE_KUBE_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/*
 * buf[0..len) (borrowed; need not be NUL terminated) parsed with jansson's
 * `flags` (JSON_ALLOW_NUL, JSON_REJECT_DUPLICATES, ...). Returns the root
 * (json_decref it) with *rc 0, or NULL with *rc and a message naming `what`:
 * KGS_EINVAL ("<what>: bad JSON at line L column C: <reason>", "<what>: not
 * a JSON object") or KGS_ENOMEM.
 */
json_t *kube_json_load(const char *buf, size_t len, size_t flags, const char *what, char *err,
                       size_t errlen, int *rc);

/*
 * Points *dst at the string member `key` of parent (borrowed from parent;
 * parent may be NULL) of under cap bytes; "" when it is absent or null and
 * not required. Returns 0, or with a message: KGS_EINVAL (missing when
 * required, not a string, holding a NUL, empty when required), KGS_ERANGE
 * ("<who>: <what>: N bytes, limit M"). *dst is "" on failure.
 */
int kube_json_string(const json_t *parent, const char *key, bool required, const char **dst,
                     size_t cap, const char *who, const char *what, char *err, size_t errlen);

/* kube_json_string() copied into dst[cap]; "" on failure. */
int kube_json_copy(const json_t *parent, const char *key, bool required, char *dst, size_t cap,
                   const char *who, const char *what, char *err, size_t errlen);

/* The member `key` of parent (may be NULL) when it is an object; NULL when
 * absent or null; NULL with *bad set when it has another type. */
const json_t *kube_json_object(const json_t *parent, const char *key, bool *bad);

/*
 * The head every list page (PodList, ResourceSliceList, ...) shares, read
 * from root: "kind", when present, one of kinds[] (NULL-terminated);
 * metadata an object; metadata.resourceVersion (required, non-empty) into
 * rv[rvcap]; metadata.continue ("" on the last page) into cont[contcap];
 * *items the "items" array, NULL when absent or null. `what` names the
 * list in messages. Returns 0, or KGS_EINVAL / KGS_ERANGE with a message
 * ("PodList: kind is not \"PodList\" or \"NodeList\"", "PodList:
 * metadata.continue: 5000 bytes, limit 4095", ...).
 */
int kube_json_list_head(const json_t *root, const char *const *kinds, const char *what, char *rv,
                        size_t rvcap, char *cont, size_t contcap, const json_t **items, char *err,
                        size_t errlen);

#endif
