/*
 * kube_client.h - keeps a pod cache current from the Kubernetes API with
 * one cluster-wide list + watch of pods (RBAC: get/list/watch pods), on the
 * event loop, never blocking it; or of nodes, or of DRA ResourceSlices
 * (kube_client_config_t.resource). What is watched is one row of
 * kube/kube_resource.h, defined beside its resource's code: adding a
 * watched resource is one file and one row in kube_client.c's resources[].
 *
 * Flow: LIST /api/v1/pods?limit=N (following metadata.continue), replace
 * the cache, then WATCH from the list's resourceVersion with bookmarks.
 * A watch that ends is resumed from the last resourceVersion seen (no
 * relist); "410 Gone" (HTTP 410, or an ERROR event with code 410) relists.
 * Every relist, and every re-watch after a failure or after a watch that
 * did not live (kube/kube_backoff.h), waits a jittered exponential backoff
 * (0.5 s doubling to 30 s) that only a watch that lived resets. A watch
 * silent for watch_idle_ns is given up, and the cache reads as not synced
 * until a relist succeeds. A list longer than list_max_items items or
 * list_max_pages pages is refused. The bearer token file is re-read for
 * every request, as projected service-account tokens rotate.
 *
 * Addresses: the API host must be an IP literal ("https://10.96.0.1:443",
 * "http://127.0.0.1:8080", "https://[fd00::1]:443"); in a cluster
 * KUBERNETES_SERVICE_HOST is one. HTTPS verifies the server against the CA
 * file and the IP in its certificate's subjectAltName (no SNI: RFC 6066
 * sends none for an IP), and offers ALPN "http/1.1"; a server that selects
 * another protocol is refused. Connections are opened by net/connector.h.
 *
 * Everything runs on the loop thread; no function here is thread-safe.
 */
#ifndef KGS_KUBE_KUBE_CLIENT_H
#define KGS_KUBE_KUBE_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kube/kube_pods.h"
#include "kube/resource_slices.h"
#include "core/clock.h"
#include "core/log.h"
#include "net/loop.h"

#define KUBE_PATH_MAX 4096
#define KUBE_URL_MAX 255

/* Where the service-account files are mounted in a pod. */
#define KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

typedef struct {
    char api_url[KUBE_URL_MAX + 1]; /* http(s)://IP[:port], no path */
    char resource[16]; /* "pods" (default), "nodes" or "resourceslices" (resource.k8s.io/v1) */
    char field_selector[256];                /* "" or e.g. "spec.driver=gpu.nvidia.com" */
    char token_file[KUBE_PATH_MAX];          /* "" sends no Authorization */
    char ca_file[KUBE_PATH_MAX];             /* https only; "" = system roots */
    uint32_t page_limit;                     /* list page size; default 500 */
    uint32_t watch_timeout_s;                /* timeoutSeconds per watch; default 300 */
    uint64_t stale_after_ns;                 /* see kube_client_synced(); default 60 s */
    uint64_t io_timeout_ns;                  /* connect/handshake/list silence; default 30 s */
    uint64_t backoff_min_ns, backoff_max_ns; /* default 0.5 s and 30 s */
    /* A watch that sends nothing (no event, no bookmark) for this long is
     * given up: the cache reads as not synced until a relist succeeds.
     * Default 120 s: the API server's watch cache sends a bookmark every
     * minute to a watch that asks for them (apiserver storage/cacher/
     * cacher.go, defaultBookmarkFrequency), so this is two periods, and one
     * late or dropped bookmark costs no relist. */
    uint64_t watch_idle_ns;
    /* A watch lived (and resets the backoff) when data came this long after
     * it was requested (kube_watch_lived). Default 30 s. */
    uint64_t watch_min_life_ns;
    /* The most items (pods, nodes, slices) and pages one list may assemble
     * across its continue chain; beyond either the list is refused, its
     * pages freed, and retried after the backoff. Default 150,000 items,
     * Kubernetes' own largest supported cluster ("no more than 150,000
     * total pods", kubernetes.io/docs/setup/best-practices/cluster-large):
     * a chain longer than any real cluster is an API that misbehaves. It
     * bounds memory against that API, not a large cluster's needs: a pod
     * is held in what its strings and labels need (416 bytes for a pod
     * with six labels), and a relist holds the old cache and the new one
     * it assembles, no more (~0.9 KiB a pod at its peak: 50,000 pods
     * 48 MiB, bench/README.md "What the pod cache is made of"). And 1,000
     * pages (a selector may make the server answer short pages; 150,000
     * at the 500-item page is 300). */
    uint32_t list_max_items;
    uint32_t list_max_pages;
    uint64_t jitter_seed; /* 0: seeded from the clock; else reproducible delays */
} kube_client_config_t;

/* Fills *cfg with the defaults above and empty strings. */
void kube_client_config_init(kube_client_config_t *cfg);

/*
 * The in-cluster configuration: https://$KUBERNETES_SERVICE_HOST:
 * $KUBERNETES_SERVICE_PORT, sa_dir/token and sa_dir/ca.crt (sa_dir NULL:
 * KUBE_SA_DIR). Checks that both files are readable now. Returns 0, or
 * KGS_ENOTFOUND naming what is missing ("in-cluster config:
 * KUBERNETES_SERVICE_HOST is not set (not running in a pod?)", "...:
 * /var/run/.../token: No such file or directory"), or KGS_EINVAL (the host
 * is not an IP literal, the port is not a number 1..65535). *cfg holds the
 * defaults on failure.
 */
int kube_client_config_in_cluster(kube_client_config_t *cfg, const char *sa_dir, char *err,
                                  size_t errlen);

/* A parsed API base URL. */
typedef struct {
    bool https;
    char host[64];        /* the IP literal, without brackets */
    uint16_t port;        /* default 443 / 80 */
    char host_header[72]; /* "10.0.0.1:443", "[::1]:8080" */
    int family;           /* AF_INET or AF_INET6 */
} kube_url_t;

/*
 * Parses "http(s)://IP[:port][/]". Returns 0, or KGS_EINVAL with a message:
 * another scheme, a host name instead of an IP literal (the message says
 * so), a bad port, a path, query or user info.
 */
int kube_url_parse(const char *url, kube_url_t *out, char *err, size_t errlen);

typedef struct kube_client kube_client_t;

typedef struct {
    /* After each completed (re)list, the cache replaced. */
    void (*on_synced)(void *user_data);
    /* After watch events changed the cache: at most once per socket read. */
    void (*on_change)(void *user_data);
    void *user_data;
} kube_client_callbacks_t;

typedef struct {
    uint64_t lists;         /* completed (re)lists */
    uint64_t list_pages;    /* pages fetched */
    uint64_t watches;       /* watch requests answered 200 */
    uint64_t events;        /* watch events applied (bookmarks included) */
    uint64_t gone;          /* 410 Gone seen (relist forced) */
    uint64_t failures;      /* connection/protocol/HTTP failures */
    uint64_t skipped_pods;  /* pods refused for over-long fields */
    uint64_t refused_lists; /* lists refused at list_max_items / list_max_pages */
    uint64_t idle_watches;  /* watches given up after watch_idle_ns of silence */
} kube_client_stats_t;

/*
 * Creates the client and schedules the first list on the next loop turn.
 * cfg and cbs are copied; loop and log (may be NULL) are borrowed for the
 * client's life. Callbacks run on the loop and may call kube_client_free().
 * Returns 0, KGS_EINVAL (bad URL, a TLS context that cannot be made from
 * the CA file) or KGS_ENOMEM, with a message. Returned: kube_client_free().
 */
int kube_client_new(loop_t *loop, const kube_client_config_t *cfg,
                    const kube_client_callbacks_t *cbs, const logger_t *log, kube_client_t **out,
                    char *err, size_t errlen);

/* Closes the connection, stops the timers, frees the cache. Safe from a
 * callback (the free happens when the callback returns). NULL does nothing. */
void kube_client_free(kube_client_t *c);

/* The cache. Borrowed: valid until kube_client_free(); read it on the loop
 * thread, and do not keep pod pointers past the callback. */
const pod_cache_t *kube_client_cache(const kube_client_t *c);

/* The ResourceSlice index of a "resourceslices" client (NULL for the
 * others; kube_client_cache is NULL for it). Borrowed like the cache; the
 * caller may look devices up (lookups rebuild its hash lazily) but must not
 * apply events to it. */
dra_index_t *kube_client_slices(const kube_client_t *c);

/* For /readyz and every answer that reads the cache: true once a list
 * completed, unless the client has been failing (no successful list or
 * watch since) for stale_after_ns, or a watch went silent for
 * watch_idle_ns since the last successful list (the cache may miss
 * changes: only a relist makes it current again). */
bool kube_client_synced(const kube_client_t *c, mono_ns_t now);

/* The last failure, "list pods 10.0.0.1:443: HTTP 403: pods is forbidden:
 * ..."; "" when none since the last success. Borrowed: valid until the next
 * loop turn. */
const char *kube_client_last_error(const kube_client_t *c);

void kube_client_stats(const kube_client_t *c, kube_client_stats_t *out);

/*
 * Turns on TCP keepalive on a connected socket: first probe after 30 s of
 * silence, then every 10 s, given up after 3 unanswered probes, so a path
 * that died (a node or a NAT that forgot us) fails the connection in about
 * a minute even while the watch's idle limit has not run out. Returns 0,
 * or KGS_EIO naming the option that failed.
 */
int kube_tcp_keepalive(int fd, char *err, size_t errlen);

#endif
