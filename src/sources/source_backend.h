/*
 * source_backend.h - what one kind of demand source speaks, behind one small
 * table of functions (as nvtop's struct gpu_vendor or Redis's
 * ConnectionType): what a new source reads from its trigger, the request
 * bytes of a poll, and the reply's bytes, as they arrive, turned into a
 * reading. The
 * hub (source_hub.c) owns everything else: sources, addresses, the SSRF
 * guard, timers, fetches, errors over time. Adding a backend is one file
 * (source_backend_<name>.c) and one row in source_backend_for()'s table.
 *
 * Backends are pure: no sockets, no clock, no globals, no allocation beyond
 * a poll's reply state and what configure() keeps for the source (release()
 * frees it); each function is unit-tested with byte strings
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

/* feed() / finish(): the address answered, but only to say nobody serves
 * behind it. */
#define SOURCE_PARSE_NO_SERVER (-2)

/* One poll's reply while it arrives: what a backend keeps between reads
 * (opaque; begin() makes it, end() frees it). */
typedef struct source_reply source_reply_t;

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
    /*
     * The reply of one poll, read as it arrives (never held whole: an HTTP
     * body is parsed line by line, a Redis pipeline reply by reply):
     * begin() returns the reply state for p (borrowed, with sc, until end()),
     * or NULL when out of memory. feed() takes the next bytes (borrowed for
     * the call) and returns 0 read more, 1 the reply is whole (bytes after
     * it are not for it), or -1 with the message the source reports (e.g.
     * "HTTP 500 (want 200)", "AUTH failed: WRONGPASS ..."), or
     * SOURCE_PARSE_NO_SERVER with its message when the reply says no server
     * is behind the address (a proxy's 502, 503 or 504); a failure is final.
     * finish() gives the reading once feed() said 1 (eof false) or the peer
     * closed (eof true): 0 with *out, or -1 / SOURCE_PARSE_NO_SERVER with
     * the message; *out is written only on success. held() is what the
     * reply holds now (the hub's --source-read-bytes counts it). end() frees
     * it (NULL does nothing).
     */
    source_reply_t *(*begin)(const source_params_t *p, source_scratch_t *sc);
    int (*feed)(source_reply_t *r, const char *buf, size_t len, char *msg, size_t msglen);
    int (*finish)(source_reply_t *r, bool eof, source_reading_t *out, char *msg, size_t msglen);
    size_t (*held)(const source_reply_t *r);
    void (*end)(source_reply_t *r);
} source_backend_t;

/* The longest line of a scraped page (prom_parse.h's stream: a longer one
 * fails the poll) and the most bytes of one Redis reply: what one poll in
 * flight may hold beside its bookkeeping. */
#define SOURCE_MAX_LINE_BYTES (64u * 1024)
#define SOURCE_REDIS_MAX_REPLY_BYTES (1024u * 1024)

/*
 * A whole reply buf[0..len) read as a poll reads it: begin, feed in pieces
 * of `piece` bytes (0: one piece), finish (eof: the peer closed after the
 * bytes; a reply that is whole before its end is finished as whole), end.
 * Returns what feed() or finish() returned, with msg. For tests and tools.
 */
int source_backend_read(const source_backend_t *b, const source_params_t *p, source_scratch_t *sc,
                        const char *buf, size_t len, size_t piece, bool eof, source_reading_t *out,
                        char *msg, size_t msglen);

extern const source_backend_t source_backend_http;  /* ENGINE, PROM */
extern const source_backend_t source_backend_redis; /* REDIS */

/* The backend of a kind (a static table entry); NULL out of range. */
const source_backend_t *source_backend_for(source_kind_t kind);

#endif
