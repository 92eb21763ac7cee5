/*
 * source_backend.h - what one kind of demand source speaks, behind one small
 * table of functions (as nvtop's struct gpu_vendor or Redis's
 * ConnectionType): the request bytes of a poll, when the reply is whole,
 * what a new source reads from its trigger, the request bytes of a poll,
 * when the reply is whole, and the reply bytes turned into a reading. The
 * hub (source_hub.c) owns everything else: sources, addresses, the SSRF
 * guard, timers, fetches, errors over time. Adding a backend is one file
 * (source_backend_<name>.c) and one row in source_backend_for()'s table.
 *
 * Backends are pure: no sockets, no clock, no globals, no allocation beyond
 * a reply body and what configure() keeps for the source (release() frees
 * it); each function is unit-tested with byte strings
 * (tests/unit/sources/test_source_backend_*.c). Any thread.
 */
#ifndef KGS_SOURCES_SOURCE_BACKEND_H
#define KGS_SOURCES_SOURCE_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#include "core/demand_eval.h"
#include "core/trigger_config.h"
#include "sources/engine_metrics.h"
#include "sources/resp.h"
#include "core/source_url.h"

typedef enum {
    SOURCE_KIND_ENGINE, /* a serving engine's /metrics (HTTP scrape) */
    SOURCE_KIND_PROM,   /* a generic Prometheus endpoint: one metric's sum (HTTP scrape) */
    SOURCE_KIND_REDIS,  /* a Redis list or stream */
    SOURCE_KIND_COUNT
} source_kind_t;

/* What decides what one source reads. All fields public; the storage is
 * the source's (a password lives here: never log it). */
typedef struct {
    source_kind_t kind;
    source_url_t url;      /* HTTP: path and Host:; Redis: the address */
    size_t max_body_bytes; /* HTTP: a decoded body over this fails */
    /* ENGINE */
    engine_t engine;
    char model[256];
    char lora_adapter[256]; /* "" = vllm:lora_requests_info not read */
    /* Latency histograms to read too (bit s for slo_signal_t s; 0: none,
     * the scrape costs what a gauge scrape does). The hub widens it when
     * a trigger with latency targets shares the source. */
    unsigned slo_mask;
    /* PROM: the trigger's metric and matchers (configure() points it at its own copy) */
    const demand_config_t *prom;
    void *owned; /* what configure() allocated; release() frees it */
    /* sourceAuth (HTTP): the profile's name for messages (NULL: none), and
     * the bearer token request() sends, lent by the hub for that call only
     * (NULL: no Authorization header). Never in a message. */
    const char *auth_name;
    const char *bearer;
    size_t bearer_len;
    /* REDIS */
    queue_kind_t qkind;
    stream_measure_t measure;
    int db;
    char rkey[512], group[256], user[256], pass[512];
} source_params_t;

/* What one new source is to read: its kind, the trigger (every URL of it
 * parsed and checked with the config), and for an engine its URL and pod. */
typedef struct {
    source_kind_t kind;
    const trigger_config_t *c;
    const char *url; /* ENGINE: the /metrics URL */
    const char *pod; /* ENGINE: "namespace/name" of a pod's source; NULL for the trigger's URL */
} source_target_t;

/* One successful poll. */
typedef struct {
    engine_reading_t engine; /* ENGINE */
    double queue;            /* PROM, REDIS */
} source_reading_t;

/* Caller-owned scratch shared by every poll of a hub (loop thread). */
typedef struct {
    resp_reply_t *resp; /* Redis replies: about 160 KiB */
    /* ENGINE with slo_mask: the histograms of the last successful parse
     * (NULL: none are read). */
    engine_hists_t *hists;
} source_scratch_t;

/* parse(): the address answered, but only to say nobody serves behind it. */
#define SOURCE_PARSE_NO_SERVER (-2)

typedef struct source_backend {
    const char *name; /* "http", "redis" */
    const char *alpn; /* offered over TLS; NULL offers none */
    /* Fills *p (zero but for max_body_bytes) for t, *tls (whether to speak
     * TLS) and the display name for messages (no secret in it). Returns 0, or
     * a KGS_E* code with a message (KGS_ENOMEM is worth another try). */
    int (*configure)(const source_target_t *t, source_params_t *p, bool *tls, char *name,
                     size_t namelen, char *err, size_t errlen);
    /* Frees what configure() kept in p (p->owned) and wipes secrets. */
    void (*release)(source_params_t *p);
    /* The request of one poll into buf[0..cap); its length, or 0 when it
     * does not fit. */
    size_t (*request)(const source_params_t *p, char *buf, size_t cap);
    /* Whether buf[0..len) (everything read so far) is a whole reply: 1, 0
     * read more, -1 malformed (reason in why). */
    int (*complete)(const source_params_t *p, source_scratch_t *sc, const char *buf, size_t len,
                    char *why, size_t whylen);
    /* The reply (eof: the peer closed after it) -> *out. Returns 0, or -1
     * with the message the source reports (e.g. "HTTP 500 (want 200)",
     * "AUTH failed: WRONGPASS ..."), or SOURCE_PARSE_NO_SERVER with its
     * message when the reply says no server is behind the address (a
     * proxy's 502, 503 or 504); *out is written only on success. */
    int (*parse)(const source_params_t *p, source_scratch_t *sc, const char *buf, size_t len,
                 bool eof, source_reading_t *out, char *msg, size_t msglen);
} source_backend_t;

extern const source_backend_t source_backend_http;  /* ENGINE, PROM */
extern const source_backend_t source_backend_redis; /* REDIS */

/* The backend of a kind (a static table entry); NULL out of range. */
const source_backend_t *source_backend_for(source_kind_t kind);

#endif
