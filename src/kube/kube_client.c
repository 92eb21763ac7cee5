/*
 * kube_client.c - list + watch of one resource (pods, nodes, DRA
 * ResourceSlices) over HTTP/1.1 on the event loop.
 *
 * DESIGN
 * One connection at a time, one request per connection (Connection:
 * close): a list page, or a watch. The phases follow each other:
 *
 *   LIST page 1..n ──► cache replaced, on_synced ──► WATCH ──► events ──► on_change
 *     │  ▲  (over list_max_items/pages:               │
 *     │  │   pages dropped, backoff, LIST)             │ ended after it lived: WATCH at once
 *     │  │                                             │ ended, not lived: backoff, WATCH
 *     │  └── backoff ◄── 410 Gone (HTTP or event) ◄────┤ failure, or ended within 1 s with no
 *     │                  silent for watch_idle_ns ◄────┤   change (a bookmark is none): backoff,
 *     │                  (not synced until LIST)       ▼   WATCH (LIST if never listed)
 *     └── failure: backoff, LIST from page 1
 *
 * Backoff (kube/kube_backoff.h): every relist and every re-watch but the
 * one after a watch that lived waits a jittered delay that doubles from
 * backoff_min to backoff_max. Only a watch that lived resets it: data (an
 * event, a bookmark, the clean end) came watch_min_life_ns (30 s) or more
 * after it was requested. A LIST alone never does, so "LIST ok, WATCH
 * 410" or "WATCH: one BOOKMARK, close" loops slow down to one try per
 * backoff_max.
 *
 * Timers: `retry` starts the next request (after a backoff, or at once on
 * the next loop turn, so nothing recurses and no callback runs inside
 * kube_client_new); `idle` fails a connection that has been silent for
 * io_timeout (connect, handshake, a list), or for watch_idle_ns (120 s:
 * two bookmark periods) on a watch. A watch given up for silence leaves the
 * cache "not synced" (kube_client_synced) until a relist succeeds: nothing
 * says what it missed. The idle deadline is checked lazily: reads only
 * store the time, and the timer re-arms itself for what is left. TCP
 * keepalive (30 s idle, 10 s interval, 3 probes) fails a dead path sooner.
 *
 * Memory: a list's pages go into a second cache as they arrive (each page
 * freed once its pods are in), which replaces the cache when the continue
 * chain ends: a relist holds the old pods and the new, never a third copy
 * in an assembled list. A chain over list_max_items items or
 * list_max_pages pages is refused, its pods freed, and retried after the
 * backoff. How a relist replaces the old state is the resource's own (a
 * pod relist that replaced many pods hands the freed pages back to the
 * system: kube_pods.c, release_replaced).
 *
 * Resources: what is listed and watched (pods, nodes, resourceslices) is
 * one constant row of functions (kube/kube_resource.h), defined beside its
 * resource's code and looked up once by name in resources[] below; nothing
 * here asks which resource it serves. Adding a watched resource = one file
 * (its decoding, its state, its row) + one row in resources[].
 *
 * Connecting: net/connector.c opens each connection (the API host is an
 * IP literal, so nothing is resolved), with TLS from a fresh client context
 * per connection (a rotated CA file is picked up), ALPN "http/1.1" offered
 * (a server that picks another protocol is refused), no SNI (RFC 6066: not
 * for an IP) and the IP checked against the certificate's subjectAltName.
 * The client then reads and writes through the transport it hands over.
 *
 * Callbacks may free the client: notify() counts the depth and defers the
 * free until the outermost callback returns; every caller of notify()
 * returns at once when it reports the client gone.
 */
#include "kube/kube_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/ssl.h>

#include "core/err.h"
#include "core/source_url.h"
#include "kube/kube_backoff.h"
#include "kube/kube_resource.h"
#include "net/connector.h"
#include "net/http_resp.h"
#include "net/tls.h"
#include "net/token_file.h"
#include "net/transport.h"

#define LIST_BODY_MAX ((size_t)256 << 20) /* one page of 500 pods is a few MiB */
#define WATCH_LINE_MAX ((size_t)8 << 20)  /* one event: a pod is at most ~1.5 MiB in etcd */
#define ERROR_BODY_MAX 4096
#define TOKEN_MAX 65536

typedef enum { PHASE_IDLE, PHASE_LIST, PHASE_WATCH } phase_t;
typedef enum { CONN_NONE, CONN_CONNECTING, CONN_SENDING, CONN_HEAD, CONN_BODY } conn_state_t;

struct kube_client {
    loop_t *loop;
    kube_client_config_t cfg;
    kube_url_t url;
    kube_client_callbacks_t cbs;
    const logger_t *log;
    const kube_resource_t *res; /* what is listed and watched (kube_resource.h) */
    void *state;                /* its state: a pod cache, a slice index */
    char list_what[32];         /* "list pods": the start of every error message */
    char watch_what[32];        /* "watch pods" */

    /* the connection */
    phase_t phase;
    conn_state_t cstate;
    connector_t *conn; /* while CONNECTING (TLS handshake included) */
    SSL_CTX *conn_ctx; /* this connection's TLS context, until it is handed over */
    transport_t tr;
    loop_io_t *io;
    uint32_t io_events;
    uint64_t gen; /* bumped on every close: a read loop stops when it changes */
    char *req;
    size_t req_len, req_off;
    char head[HTTP_RESP_MAX_HEAD_BYTES + 1];
    size_t head_len;
    http_resp_t resp;
    http_resp_body_t body;
    char *buf; /* list body, watch line or error body */
    size_t buf_len, buf_cap;
    mono_ns_t last_io, conn_started;
    bool watch_saw_change;     /* an ADDED/MODIFIED/DELETED arrived on this watch */
    bool watch_answered;       /* this watch was answered 200 (its life is judged on close) */
    bool watch_lived;          /* the last watch closed lived (kube_watch_lived) */
    mono_ns_t watch_last_data; /* the last complete line or clean end of this watch */

    /* the list being assembled across pages */
    void *next;   /* its objects so far (res->list_add); NULL between lists */
    size_t acc_n; /* items its pages held (the cap counts these) */
    char cont[KUBE_CONTINUE_MAX + 1];
    uint32_t chain_pages; /* pages of the list being assembled */
    bool relist_needed;
    bool changed;

    loop_timer_t retry, idle;
    kube_backoff_t backoff;
    bool listed, failing;
    bool blind; /* a watch went silent since the last list: not synced */
    mono_ns_t failing_since;
    char last_error[512];
    kube_client_stats_t stats;
    int cb_depth;
    bool free_pending;
    char rbuf[65536]; /* socket read scratch */
};

static void conn_close(kube_client_t *c);
static void client_fail(kube_client_t *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void schedule(kube_client_t *c, uint64_t delay_ns);

/* ---- configuration ----------------------------------------------------------------- */

void kube_client_config_init(kube_client_config_t *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->page_limit = 500;
    cfg->watch_timeout_s = 300;
    cfg->stale_after_ns = 60 * NS_PER_SEC;
    cfg->io_timeout_ns = 30 * NS_PER_SEC;
    cfg->backoff_min_ns = 500 * NS_PER_MS;
    cfg->backoff_max_ns = 30 * NS_PER_SEC;
    cfg->watch_idle_ns = 120 * NS_PER_SEC;
    cfg->watch_min_life_ns = 30 * NS_PER_SEC;
    cfg->list_max_items = 150000;
    cfg->list_max_pages = 1000;
}

int kube_url_parse(const char *url, kube_url_t *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    /* messages show the URL with any password or token masked */
    char shown[101];
    source_url_redact(url, strlen(url), shown, sizeof shown);
    const char *p;
    if (strncmp(url, "https://", 8) == 0) {
        out->https = true;
        out->port = 443;
        p = url + 8;
    } else if (strncmp(url, "http://", 7) == 0) {
        out->port = 80;
        p = url + 7;
    } else {
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "API URL \"%.100s\": scheme must be http:// or https://", shown);
    }
    const char *host = p, *host_end;
    if (*p == '[') {
        host = p + 1;
        host_end = strchr(host, ']');
        if (!host_end)
            return kgs_seterr(err, errlen, KGS_EINVAL, "API URL \"%.100s\": missing ']'", shown);
        p = host_end + 1;
    } else {
        host_end = p + strcspn(p, ":/?#@");
        p = host_end;
    }
    if (*p == '@' || memchr(host, '@', (size_t)(host_end - host)))
        return kgs_seterr(err, errlen, KGS_EINVAL, "API URL \"%.100s\": user info not allowed",
                          shown);
    size_t hlen = (size_t)(host_end - host);
    if (hlen == 0 || hlen >= sizeof out->host)
        return kgs_seterr(err, errlen, KGS_EINVAL, "API URL \"%.100s\": bad host", shown);
    memcpy(out->host, host, hlen);
    out->host[hlen] = '\0';
    unsigned char addr[sizeof(struct in6_addr)];
    if (inet_pton(AF_INET, out->host, addr) == 1 && host[-1] != '[')
        out->family = AF_INET;
    else if (inet_pton(AF_INET6, out->host, addr) == 1 && host[-1] == '[')
        out->family = AF_INET6;
    else
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "API URL \"%.100s\": host \"%s\" is not an IP literal (host names "
                          "are not resolved yet; IPv6 goes in brackets)",
                          shown, out->host);
    if (*p == ':') {
        p++;
        unsigned long port = 0;
        const char *digits = p;
        while (*p >= '0' && *p <= '9' && port <= 65535)
            port = port * 10 + (unsigned long)(*p++ - '0');
        if (p == digits || port == 0 || port > 65535 || (*p && *p != '/'))
            return kgs_seterr(err, errlen, KGS_EINVAL, "API URL \"%.100s\": bad port", shown);
        out->port = (uint16_t)port;
    }
    if (*p && strcmp(p, "/") != 0)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "API URL \"%.100s\": no path, query or fragment allowed", shown);
    snprintf(out->host_header, sizeof out->host_header,
             out->family == AF_INET6 ? "[%s]:%u" : "%s:%u", out->host, (unsigned)out->port);
    return 0;
}

int kube_client_config_in_cluster(kube_client_config_t *cfg, const char *sa_dir, char *err,
                                  size_t errlen) {
    kube_client_config_init(cfg);
    if (!sa_dir)
        sa_dir = KUBE_SA_DIR;
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    if (!host || !*host)
        return kgs_seterr(err, errlen, KGS_ENOTFOUND,
                          "in-cluster config: KUBERNETES_SERVICE_HOST is not set (not running "
                          "in a pod?)");
    if (!port || !*port)
        return kgs_seterr(err, errlen, KGS_ENOTFOUND,
                          "in-cluster config: KUBERNETES_SERVICE_PORT is not set");
    kube_client_config_t c;
    kube_client_config_init(&c);
    bool v6 = strchr(host, ':') != NULL;
    if ((size_t)snprintf(c.api_url, sizeof c.api_url, v6 ? "https://[%s]:%s" : "https://%s:%s",
                         host, port) >= sizeof c.api_url)
        return kgs_seterr(err, errlen, KGS_EINVAL, "in-cluster config: API address too long");
    kube_url_t u;
    char why[300];
    if (kube_url_parse(c.api_url, &u, why, sizeof why))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "in-cluster config: KUBERNETES_SERVICE_HOST/PORT: %s", why);
    if ((size_t)snprintf(c.token_file, sizeof c.token_file, "%s/token", sa_dir) >=
            sizeof c.token_file ||
        (size_t)snprintf(c.ca_file, sizeof c.ca_file, "%s/ca.crt", sa_dir) >= sizeof c.ca_file)
        return kgs_seterr(err, errlen, KGS_EINVAL, "in-cluster config: %.100s: path too long",
                          sa_dir);
    const char *files[] = {c.token_file, c.ca_file};
    for (size_t i = 0; i < 2; i++)
        if (access(files[i], R_OK) != 0)
            return kgs_seterr(err, errlen, KGS_ENOTFOUND,
                              "in-cluster config: %s: %s (is the service account token "
                              "mounted? automountServiceAccountToken must not be false)",
                              files[i], strerror(errno));
    *cfg = c;
    return 0;
}

/* ---- small helpers ----------------------------------------------------------------- */

/* The resources a client can watch, by the name the config spells (the
 * first is the default). Adding one: its file with its kube_resource_t row
 * (kube_resource.h), and the row here. */
static const kube_resource_t *const resources[] = {
    &kube_resource_pods,
    &kube_resource_nodes,
    &kube_resource_resourceslices,
};
#define N_RESOURCES (sizeof resources / sizeof resources[0])

/* The row for a configured name ("" is the first), or NULL. */
static const kube_resource_t *resource_find(const char *name) {
    if (!name[0])
        return resources[0];
    for (size_t i = 0; i < N_RESOURCES; i++)
        if (strcmp(name, resources[i]->name) == 0)
            return resources[i];
    return NULL;
}

/* "pods, nodes or resourceslices": the valid names, for messages. */
static void resource_names(char *out, size_t cap) {
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; i < N_RESOURCES && o < cap; i++) {
        const char *sep = i == 0 ? "" : i + 1 == N_RESOURCES ? " or " : ", ";
        int n = snprintf(out + o, cap - o, "%s%s", sep, resources[i]->name);
        if (n < 0)
            break;
        o += (size_t)n;
    }
}

/* What this client lists and watches: "pods", "nodes" or "resourceslices". */
static const char *res(const kube_client_t *c) {
    return c->res->name;
}

/* "list pods", "watch nodes": the start of every error message. */
static const char *phase_name(const kube_client_t *c) {
    if (c->phase == PHASE_LIST)
        return c->list_what;
    if (c->phase == PHASE_WATCH)
        return c->watch_what;
    return res(c);
}

static const char *cache_rv(const kube_client_t *c) {
    return c->res->resource_version(c->state);
}

/* Percent-encodes everything but RFC 3986 unreserved characters. */
static bool url_encode(const char *s, char *out, size_t cap) {
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        bool plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                     (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.' || ch == '~';
        if (o + (plain ? 1 : 3) >= cap)
            return false;
        if (plain) {
            out[o++] = (char)ch;
        } else {
            out[o++] = '%';
            out[o++] = hex[ch >> 4];
            out[o++] = hex[ch & 15];
        }
    }
    out[o] = '\0';
    return true;
}

/* Reads the token file (net/token_file.h: whitespace trimmed, a bearer
 * token). Returned: free(). A small local file (tmpfs in a pod), so the
 * blocking read is acceptable. */
static char *token_read(const char *path, char *err, size_t errlen) {
    char *tok = malloc(TOKEN_MAX + 1);
    size_t n = 0;
    if (!tok) {
        kgs_seterr(err, errlen, KGS_ENOMEM, "token file %s: out of memory", path);
        return NULL;
    }
    if (token_file_read(path, tok, TOKEN_MAX + 1, &n, NULL, err, errlen) != 0) {
        free(tok);
        return NULL;
    }
    return tok;
}

/* Grows c->buf to hold `more` bytes beyond buf_len, up to `max`. */
static int buf_append(kube_client_t *c, const char *data, size_t len, size_t max) {
    if (len > max - c->buf_len)
        return KGS_ERANGE;
    if (c->buf_len + len + 1 > c->buf_cap) {
        size_t cap = c->buf_cap ? c->buf_cap : 65536;
        while (cap < c->buf_len + len + 1)
            cap *= 2;
        char *nb = realloc(c->buf, cap);
        if (!nb)
            return KGS_ENOMEM;
        c->buf = nb;
        c->buf_cap = cap;
    }
    memcpy(c->buf + c->buf_len, data, len);
    c->buf_len += len;
    c->buf[c->buf_len] = '\0';
    return 0;
}

/* Runs a callback; returns true when the client was freed inside it (the
 * caller must then return without touching c). */
static bool notify(kube_client_t *c, void (*cb)(void *)) {
    if (!cb)
        return false;
    c->cb_depth++;
    cb(c->cbs.user_data);
    c->cb_depth--;
    if (c->free_pending && c->cb_depth == 0) {
        c->free_pending = false;
        kube_client_free(c);
        return true;
    }
    return c->free_pending;
}

/* ---- connection -------------------------------------------------------------------- */

static void conn_close(kube_client_t *c) {
    if (c->cstate == CONN_NONE)
        return;
    if (c->phase == PHASE_WATCH && c->watch_answered) {
        /* The reset rule (kube_backoff.h): judged once per watch, before
         * whoever closes it asks for the next delay. */
        c->watch_answered = false;
        c->watch_lived =
            kube_watch_lived(c->conn_started, c->watch_last_data, c->cfg.watch_min_life_ns);
        if (c->watch_lived)
            kube_backoff_reset(&c->backoff);
    }
    connector_cancel(c->conn);
    c->conn = NULL;
    SSL_CTX_free(c->conn_ctx);
    c->conn_ctx = NULL;
    loop_io_remove(c->loop, c->io);
    c->io = NULL;
    transport_close(&c->tr);
    loop_timer_stop(c->loop, &c->idle);
    free(c->req);
    c->req = NULL;
    c->req_len = c->req_off = 0;
    c->head_len = 0;
    c->buf_len = 0;
    c->cstate = CONN_NONE;
    c->gen++;
}

static void update_poll(kube_client_t *c) {
    if (!c->io)
        return; /* still with the connector */
    bool want_write = c->cstate == CONN_SENDING;
    bool want_read = c->cstate == CONN_HEAD || c->cstate == CONN_BODY;
    uint32_t ev = transport_poll_events(&c->tr, want_read, want_write);
    if (ev != c->io_events && loop_io_modify(c->loop, c->io, ev) == 0)
        c->io_events = ev;
}

/* A watch gets watch_idle_ns (bookmarks arrive about every minute; see
 * kube_client_config_t), not timeoutSeconds + a margin: a silent path must
 * not serve a stale cache for minutes. */
static uint64_t idle_limit(const kube_client_t *c) {
    if (c->phase == PHASE_WATCH && (c->cstate == CONN_HEAD || c->cstate == CONN_BODY))
        return c->cfg.watch_idle_ns;
    return c->cfg.io_timeout_ns;
}

static void on_idle(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)t;
    kube_client_t *c = ud;
    mono_ns_t due = clock_add_sat(c->last_io, idle_limit(c));
    if (loop_now(loop) < due) {
        loop_timer_start(loop, &c->idle, due);
        return;
    }
    if (c->phase == PHASE_WATCH && (c->cstate == CONN_HEAD || c->cstate == CONN_BODY)) {
        /* Changes may have been missed while the path was silent, and
         * nothing says the cache is current: answer "not synced" until a
         * relist has made it so. */
        c->blind = true;
        c->relist_needed = true;
        c->stats.idle_watches++;
        client_fail(c,
                    "watch %s %s: nothing (no event, no bookmark) for %llu ms; the cache may "
                    "miss changes until a relist",
                    res(c), c->url.host_header, (unsigned long long)(idle_limit(c) / NS_PER_MS));
        return;
    }
    client_fail(c, "%s %s: no answer for %llu ms", phase_name(c), c->url.host_header,
                (unsigned long long)(idle_limit(c) / NS_PER_MS));
}

/* Every failure goes through the backoff (kube_backoff.h). */
static void client_fail(kube_client_t *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->last_error, sizeof c->last_error, fmt, ap);
    va_end(ap);
    mono_ns_t now = loop_now(c->loop);
    if (!c->failing) {
        c->failing = true;
        c->failing_since = now;
    }
    c->stats.failures++;
    conn_close(c);
    uint64_t delay = kube_backoff_next(&c->backoff);
    LOG_WARN(c->log, "kube %s: %s; retrying in %llu ms", c->url.host_header, c->last_error,
             (unsigned long long)(delay / NS_PER_MS));
    schedule(c, delay);
}

/* A list completed or a watch was answered: no longer failing. This does
 * not reset the backoff; only a watch that lived does (conn_close). */
static void succeeded(kube_client_t *c) {
    c->failing = false;
    c->last_error[0] = '\0';
}

/* 410 Gone (by status or by an ERROR event, on a watch or an expired
 * continue token): relist, after the backoff like every relist, so an
 * API that answers 410 to everything is not asked thousands of times a
 * second. */
static void relist_after_gone(kube_client_t *c, const char *why) {
    c->stats.gone++;
    conn_close(c);
    c->cont[0] = '\0';
    c->relist_needed = true;
    uint64_t delay = kube_backoff_next(&c->backoff);
    LOG_INFO(c->log, "kube %s: %s; relisting in %llu ms", c->url.host_header, why,
             (unsigned long long)(delay / NS_PER_MS));
    schedule(c, delay);
}

static void on_connected(void *ud, int status, transport_t *tr, const char *error);

/* Builds the request and starts connecting. Failures go through
 * client_fail (backoff). */
static void conn_open(kube_client_t *c, const char *path) {
    char why[400];
    char *token = NULL;
    SSL_CTX *ctx = NULL;
    if (c->cfg.token_file[0] && !(token = token_read(c->cfg.token_file, why, sizeof why))) {
        client_fail(c, "%s %s: %s", phase_name(c), c->url.host_header, why);
        return;
    }
    size_t cap = strlen(path) + (token ? strlen(token) : 0) + 512;
    c->req = malloc(cap);
    if (!c->req) {
        free(token);
        client_fail(c, "%s: out of memory", phase_name(c));
        return;
    }
    int n = snprintf(c->req, cap,
                     "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: keda-gpu-scaler\r\n"
                     "Accept: application/json\r\n%s%s%sConnection: close\r\n\r\n",
                     path, c->url.host_header, token ? "Authorization: Bearer " : "",
                     token ? token : "", token ? "\r\n" : "");
    free(token);
    c->req_len = (size_t)n;
    c->req_off = 0;

    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    socklen_t sslen;
    if (c->url.family == AF_INET) {
        struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
        sin->sin_family = AF_INET;
        sin->sin_port = htons(c->url.port);
        inet_pton(AF_INET, c->url.host, &sin->sin_addr);
        sslen = sizeof *sin;
    } else {
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons(c->url.port);
        inet_pton(AF_INET6, c->url.host, &sin6->sin6_addr);
        sslen = sizeof *sin6;
    }
    if (c->url.https) {
        /* A fresh context per connection: a rotated CA file is picked up. */
        ctx = tls_client_ctx_new(c->cfg.ca_file[0] ? c->cfg.ca_file : NULL, NULL, NULL, false, why,
                                 sizeof why);
        if (!ctx)
            goto fail;
    }
    connector_opts_t co = {
        .addrs = &ss,
        .addrlens = &sslen,
        .naddrs = 1,
        .name = "", /* client_fail names the phase and the host */
        .tls = ctx,
        .tls_host = c->url.host,
        .alpn = "http/1.1",
        .done = on_connected,
        .user_data = c,
    };
    c->tr.fd = -1;
    c->tr.ssl = NULL;
    if (connector_start(c->loop, &co, &c->conn, why, sizeof why) != 0)
        goto fail;
    c->conn_ctx = ctx;
    c->cstate = CONN_CONNECTING;
    c->conn_started = c->last_io = loop_now(c->loop);
    c->head_len = 0;
    c->buf_len = 0;
    c->watch_saw_change = false;
    c->watch_answered = false;
    c->watch_last_data = 0;
    loop_timer_start(c->loop, &c->idle, clock_add_sat(c->last_io, c->cfg.io_timeout_ns));
    LOG_DEBUG(c->log, "kube %s: GET %s", c->url.host_header, path);
    return;
fail:
    SSL_CTX_free(ctx);
    free(c->req);
    c->req = NULL;
    client_fail(c, "%s %s: %s", phase_name(c), c->url.host_header, why);
}

/* Drops the list being assembled. */
static void list_drop(kube_client_t *c) {
    c->acc_n = 0;
    c->res->list_free(c->next);
    c->next = NULL;
}

/* "&fieldSelector=..." when one is configured, else "". */
static void field_selector_arg(const kube_client_t *c, char *out, size_t cap) {
    char enc[sizeof c->cfg.field_selector * 3 + 1];
    out[0] = '\0';
    if (c->cfg.field_selector[0] && url_encode(c->cfg.field_selector, enc, sizeof enc))
        snprintf(out, cap, "&fieldSelector=%s", enc);
}

static void start_list(kube_client_t *c) {
    char path[KUBE_CONTINUE_MAX * 3 + 1024];
    char enc[KUBE_CONTINUE_MAX * 3 + 1];
    char fs[sizeof c->cfg.field_selector * 3 + 32];
    c->phase = PHASE_LIST;
    if (!c->cont[0]) {
        list_drop(c); /* a list that failed half-way */
        c->chain_pages = 0;
    }
    field_selector_arg(c, fs, sizeof fs);
    int n =
        snprintf(path, sizeof path, "%s?limit=%u%s", c->res->path, (unsigned)c->cfg.page_limit, fs);
    if (c->cont[0] && url_encode(c->cont, enc, sizeof enc))
        snprintf(path + n, sizeof path - (size_t)n, "&continue=%s", enc);
    conn_open(c, path);
}

static void start_watch(kube_client_t *c) {
    char path[2048], enc[KUBE_RV_MAX * 3 + 1];
    char fs[sizeof c->cfg.field_selector * 3 + 32];
    c->phase = PHASE_WATCH;
    url_encode(cache_rv(c), enc, sizeof enc);
    field_selector_arg(c, fs, sizeof fs);
    snprintf(path, sizeof path,
             "%s?watch=1&allowWatchBookmarks=true&resourceVersion=%s&timeoutSeconds=%u%s",
             c->res->path, enc, (unsigned)c->cfg.watch_timeout_s, fs);
    conn_open(c, path);
}

static void on_retry(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)loop;
    (void)t;
    kube_client_t *c = ud;
    if (c->cstate != CONN_NONE)
        return;
    if (!c->listed || c->relist_needed || c->phase == PHASE_LIST) {
        /* A list that failed part-way starts over: its pages must come
         * from one snapshot. */
        c->cont[0] = '\0';
        c->relist_needed = false;
        start_list(c);
    } else {
        start_watch(c);
    }
}

static void schedule(kube_client_t *c, uint64_t delay_ns) {
    loop_timer_start(c->loop, &c->retry, clock_add_sat(loop_now(c->loop), delay_ns));
}

/* ---- response handling ------------------------------------------------------------- */

static int sink_collect(const char *data, size_t len, void *ud) {
    kube_client_t *c = ud;
    if (c->resp.status != 200) /* an error body: keep the start for the message */
        return buf_append(c, data,
                          len < ERROR_BODY_MAX - c->buf_len ? len : ERROR_BODY_MAX - c->buf_len,
                          ERROR_BODY_MAX);
    return buf_append(c, data, len, LIST_BODY_MAX);
}

/* Applies one watch line. Returns 0 to go on, or 1 when it closed the
 * connection (failure or relist). */
static int watch_line(kube_client_t *c, const char *line, size_t len) {
    while (len && (line[len - 1] == '\r' || line[len - 1] == ' '))
        len--;
    if (!len)
        return 0;
    kube_event_result_t ev;
    char why[400];
    int rc = c->res->watch_event(c->state, line, len, &ev, why, sizeof why);
    if (rc == 0 && ev.skipped) {
        c->stats.skipped_pods++;
        c->changed |= ev.changed;
        LOG_WARN(c->log, "kube %s: %s (ignored)", c->url.host_header, why);
        return 0;
    }
    if (rc) {
        c->relist_needed = true; /* an event is lost: only a relist is consistent again */
        if (ev.applying)
            client_fail(c, "watch %s: applying an event: %s", res(c), kgs_err_str(rc));
        else
            client_fail(c, "watch %s %s: %s", res(c), c->url.host_header, why);
        return 1;
    }
    if (ev.type == KUBE_EVENT_ERROR) {
        if (ev.error_code == 410) {
            relist_after_gone(c, why);
        } else {
            client_fail(c, "watch %s %s: %s", res(c), c->url.host_header, why);
        }
        return 1;
    }
    c->stats.events++;
    c->watch_last_data = loop_now(c->loop);
    c->watch_saw_change |= ev.type != KUBE_EVENT_BOOKMARK;
    c->changed |= ev.changed;
    return 0;
}

static int sink_watch(const char *data, size_t len, void *ud) {
    kube_client_t *c = ud;
    if (c->resp.status != 200)
        return sink_collect(data, len, ud);
    uint64_t gen = c->gen;
    while (len) {
        const char *nl = memchr(data, '\n', len);
        size_t take = nl ? (size_t)(nl - data) : len;
        if (c->buf_len == 0 && nl) {
            /* The common case: a whole line inside this piece, no copy. */
            if (watch_line(c, data, take) || c->gen != gen)
                return 1;
        } else {
            int rc = buf_append(c, data, take, WATCH_LINE_MAX);
            if (rc) {
                c->relist_needed = true;
                client_fail(c, "watch %s %s: event longer than %zu bytes or out of memory", res(c),
                            c->url.host_header, WATCH_LINE_MAX);
                return 1;
            }
            if (nl) {
                size_t line_len = c->buf_len;
                c->buf_len = 0; /* watch_line may close the connection, which resets it too */
                if (watch_line(c, c->buf, line_len) || c->gen != gen)
                    return 1;
            }
        }
        data += take + (nl ? 1 : 0);
        len -= take + (nl ? 1 : 0);
    }
    return 0;
}

/* The message of a metav1.Status body, or the body's start. */
static void error_body_message(const kube_client_t *c, char *out, size_t cap) {
    out[0] = '\0';
    if (!c->buf_len)
        return;
    json_t *j = json_loadb(c->buf, c->buf_len, 0, NULL);
    const json_t *m = j ? json_object_get(j, "message") : NULL;
    if (json_is_string(m))
        snprintf(out, cap, ": %s", json_string_value(m));
    else
        snprintf(out, cap, ": %.*s", (int)(c->buf_len < 200 ? c->buf_len : 200), c->buf);
    json_decref(j);
}

static bool list_done(kube_client_t *c);

/*
 * Checks a page against the caps before it joins the list being assembled
 * (items: what is held so far plus this page's; more: the page has a
 * continue token). Over a cap, the list is dropped, what it held is freed,
 * and a fresh list is tried after the backoff: a server that never ends its
 * continue chain costs bounded memory and a bounded rate of requests.
 * Returns true when refused (the connection is already closed).
 */
static bool list_over_cap(kube_client_t *c, size_t items, bool more) {
    c->chain_pages++;
    bool too_many = items > c->cfg.list_max_items;
    bool too_long = more && c->chain_pages >= c->cfg.list_max_pages;
    if (!too_many && !too_long)
        return false;
    c->stats.refused_lists++;
    c->cont[0] = '\0';
    list_drop(c);
    if (too_many)
        client_fail(c,
                    "list %s %s: refused: %zu items after %u pages, over the cap of %u items "
                    "(list_max_items); the pages are dropped",
                    res(c), c->url.host_header, items, c->chain_pages, c->cfg.list_max_items);
    else
        client_fail(c,
                    "list %s %s: refused: the continue chain goes on past %u pages (%zu items), "
                    "the cap (list_max_pages); the pages are dropped",
                    res(c), c->url.host_header, c->chain_pages, items);
    return true;
}

/* The last page of a list is in the cache: watch from its version. */
static bool list_done(kube_client_t *c) {
    c->listed = true;
    c->blind = false;
    c->stats.lists++;
    succeeded(c);
    start_watch(c);
    return notify(c, c->cbs.on_synced);
}

/* A list page arrived whole. Returns true if the client was freed. */
static bool list_page_done(kube_client_t *c) {
    void *page;
    kube_page_info_t info;
    char why[400];
    int rc = c->res->page_parse(c->buf, c->buf_len, &page, &info, why, sizeof why);
    conn_close(c);
    if (rc) {
        c->cont[0] = '\0';
        client_fail(c, "list %s %s: %s", res(c), c->url.host_header, why);
        return false;
    }
    c->stats.list_pages++;
    c->stats.skipped_pods += info.skipped;
    if (info.skipped)
        LOG_WARN(c->log, "kube %s: list %s: %zu ignored, first: %s", c->url.host_header, res(c),
                 info.skipped, info.skip_reason);
    if (list_over_cap(c, c->acc_n + info.count, info.continue_token[0] != '\0')) {
        c->res->page_free(page);
        return false;
    }
    rc = c->res->list_add(&c->next, page); /* frees the page */
    if (rc) {
        c->cont[0] = '\0';
        client_fail(c, "list %s: out of memory", res(c));
        return false;
    }
    c->acc_n += info.count;
    snprintf(c->cont, sizeof c->cont, "%s", info.continue_token);
    if (c->cont[0]) {
        start_list(c);
        return false;
    }
    rc = c->res->list_replace(c->state, c->next, info.resource_version); /* frees next */
    c->next = NULL;
    c->acc_n = 0;
    if (rc) {
        client_fail(c, "list %s: replacing the cache: %s", res(c), kgs_err_str(rc));
        return false;
    }
    char detail[64];
    c->res->describe(c->state, detail, sizeof detail);
    LOG_INFO(c->log, "kube %s: listed %zu %s%s at resourceVersion %s", c->url.host_header,
             c->res->size(c->state), res(c), detail, cache_rv(c));
    return list_done(c);
}

/* The response head is in: decide what the body means. Returns 1 when
 * the connection was closed. */
static int head_done(kube_client_t *c) {
    int st = c->resp.status;
    if (st == 410) {
        /* an expired continue token also answers 410 */
        char why[64];
        snprintf(why, sizeof why, "%s: HTTP 410 Gone", phase_name(c));
        relist_after_gone(c, why);
        return 1;
    }
    if (st == 200 && c->phase == PHASE_WATCH) {
        c->stats.watches++;
        c->watch_answered = true;
        succeeded(c);
    }
    return 0;
}

/* The whole body arrived (or the stream ended). Returns true if freed. */
static bool body_done(kube_client_t *c) {
    if (c->resp.status != 200) {
        char msg[300];
        error_body_message(c, msg, sizeof msg);
        c->cont[0] = '\0';
        client_fail(c, "%s %s: HTTP %d%s", phase_name(c), c->url.host_header, c->resp.status, msg);
        return false;
    }
    if (c->phase == PHASE_LIST)
        return list_page_done(c);
    /* The watch ended (timeoutSeconds, or the server closed it): resume
     * from the last resourceVersion. A watch that ends within a second
     * without a change (a bookmark is no change) is a failure; one that
     * did not live (kube_backoff.h) resumes after the backoff; only one
     * that lived resumes at once. So a misbehaving server cannot spin us,
     * bookmark or not. */
    mono_ns_t now = loop_now(c->loop);
    if (c->body.done)
        c->watch_last_data = now; /* a clean end is a sign of life */
    bool quick = now - c->conn_started < NS_PER_SEC && !c->watch_saw_change;
    if (quick) {
        client_fail(c, "watch %s %s: stream ended at once", res(c), c->url.host_header);
        return false;
    }
    conn_close(c); /* judges the watch's life */
    uint64_t delay = c->watch_lived ? 0 : kube_backoff_next(&c->backoff);
    LOG_DEBUG(c->log, "kube %s: watch ended; resuming at %s in %llu ms", c->url.host_header,
              cache_rv(c), (unsigned long long)(delay / NS_PER_MS));
    schedule(c, delay);
    return false;
}

/* Feeds bytes read from the socket. Returns 1 when the connection was
 * closed (or replaced), 2 when the client was freed. */
static int process(kube_client_t *c, const char *data, size_t len) {
    uint64_t gen = c->gen;
    if (c->cstate == CONN_HEAD) {
        size_t room = HTTP_RESP_MAX_HEAD_BYTES + 1 - c->head_len;
        size_t n = len < room ? len : room;
        memcpy(c->head + c->head_len, data, n);
        c->head_len += n;
        size_t used;
        const char *why;
        int rc = http_resp_parse_head(c->head, c->head_len, &c->resp, &used, &why);
        if (rc == HTTP_RESP_INCOMPLETE)
            return 0;
        if (rc != HTTP_RESP_COMPLETE) {
            client_fail(c, "%s %s: bad response: %s", phase_name(c), c->url.host_header, why);
            return 1;
        }
        /* Bytes past the head: those already in `head`, then the rest of data. */
        size_t extra_in_head = c->head_len - used;
        size_t from_data = len - n;
        http_resp_body_init(&c->body, &c->resp);
        c->cstate = CONN_BODY;
        c->buf_len = 0;
        if (head_done(c))
            return 1;
        if (extra_in_head) {
            int r = process(c, c->head + used, extra_in_head);
            if (r)
                return r;
        }
        if (from_data)
            return process(c, data + n, from_data);
        if (c->body.done)
            return body_done(c) ? 2 : 1;
        return 0;
    }
    size_t used;
    const char *why;
    int rc = http_resp_body_feed(&c->body, data, len, &used,
                                 c->phase == PHASE_WATCH ? sink_watch : sink_collect, c, &why);
    if (c->gen != gen)
        return 1;
    if (rc == HTTP_RESP_ERROR) {
        c->relist_needed = c->phase == PHASE_WATCH;
        client_fail(c, "%s %s: bad response body: %s", phase_name(c), c->url.host_header, why);
        return 1;
    }
    if (rc) {
        client_fail(c, "%s %s: response body: %s", phase_name(c), c->url.host_header,
                    kgs_err_str(rc));
        return 1;
    }
    if (c->body.done)
        return body_done(c) ? 2 : 1;
    return 0;
}

static void on_io(loop_t *loop, int fd, uint32_t events, void *ud) {
    (void)loop;
    (void)fd;
    (void)events;
    kube_client_t *c = ud;
    uint64_t gen = c->gen;
    c->last_io = loop_now(c->loop);
    if (c->cstate == CONN_SENDING) {
        while (c->req_off < c->req_len) {
            ssize_t n = transport_write(&c->tr, c->req + c->req_off, c->req_len - c->req_off);
            if (n == TRANSPORT_AGAIN) {
                update_poll(c);
                return;
            }
            if (n < 0) {
                client_fail(c, "%s %s: %s", phase_name(c), c->url.host_header, c->tr.error);
                return;
            }
            c->req_off += (size_t)n;
        }
        c->cstate = CONN_HEAD;
        loop_timer_start(c->loop, &c->idle, clock_add_sat(c->last_io, idle_limit(c)));
    }
    c->changed = false;
    while (c->gen == gen && (c->cstate == CONN_HEAD || c->cstate == CONN_BODY)) {
        ssize_t n = transport_read(&c->tr, c->rbuf, sizeof c->rbuf);
        if (n == TRANSPORT_AGAIN) {
            update_poll(c);
            break;
        }
        if (n == TRANSPORT_ERROR) {
            client_fail(c, "%s %s: %s", phase_name(c), c->url.host_header, c->tr.error);
            break;
        }
        if (n == 0) {
            const char *bwhy;
            if (c->cstate == CONN_HEAD) {
                client_fail(c, "%s %s: connection closed before a response", phase_name(c),
                            c->url.host_header);
            } else if (http_resp_body_eof(&c->body, &bwhy) != 0 && c->phase == PHASE_LIST) {
                client_fail(c, "%s %s: %s", phase_name(c), c->url.host_header, bwhy);
            } else if (body_done(c)) {
                return;
            }
            /* A watch cut short mid-stream is an ordinary end: resume from
             * the last complete event (a partial line is dropped). */
            break;
        }
        int r = process(c, c->rbuf, (size_t)n);
        if (r == 2)
            return;
        if (r)
            break;
    }
    if (c->changed) {
        c->changed = false;
        notify(c, c->cbs.on_change);
    }
}

static void on_connected(void *ud, int status, transport_t *tr, const char *error) {
    kube_client_t *c = ud;
    c->conn = NULL;            /* gone */
    SSL_CTX_free(c->conn_ctx); /* the SSL holds its own reference */
    c->conn_ctx = NULL;
    if (status != 0) {
        client_fail(c, "%s %s: %s", phase_name(c), c->url.host_header, error);
        return;
    }
    c->tr = *tr;
    char why[200];
    if (kube_tcp_keepalive(c->tr.fd, why, sizeof why) != 0) /* a watch still has its idle limit */
        LOG_WARN(c->log, "kube %s: %s", c->url.host_header, why);
    c->io_events = EPOLLOUT;
    c->io = loop_io_add(c->loop, c->tr.fd, EPOLLOUT, on_io, c);
    if (!c->io) {
        client_fail(c, "%s %s: epoll: %s", phase_name(c), c->url.host_header, strerror(errno));
        return;
    }
    c->cstate = CONN_SENDING;
    on_io(c->loop, c->tr.fd, EPOLLOUT, c);
}

/* ---- lifetime ---------------------------------------------------------------------- */

int kube_client_new(loop_t *loop, const kube_client_config_t *cfg,
                    const kube_client_callbacks_t *cbs, const logger_t *log, kube_client_t **out,
                    char *err, size_t errlen) {
    *out = NULL;
    kube_url_t url;
    int rc = kube_url_parse(cfg->api_url, &url, err, errlen);
    if (rc)
        return rc;
    if (cfg->page_limit == 0 || cfg->watch_timeout_s == 0 || cfg->io_timeout_ns == 0 ||
        cfg->backoff_min_ns == 0 || cfg->backoff_max_ns < cfg->backoff_min_ns ||
        cfg->watch_idle_ns == 0 || cfg->list_max_items == 0 || cfg->list_max_pages == 0)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "kube client: page_limit, watch_timeout_s, io_timeout_ns, backoff, "
                          "watch_idle_ns, list_max_items and list_max_pages must be > 0 (use "
                          "kube_client_config_init)");
    const kube_resource_t *resource =
        memchr(cfg->resource, '\0', sizeof cfg->resource) ? resource_find(cfg->resource) : NULL;
    if (!resource) {
        char names[128];
        resource_names(names, sizeof names);
        return kgs_seterr(err, errlen, KGS_EINVAL, "kube client: resource \"%.*s\": want %s",
                          (int)sizeof cfg->resource, cfg->resource, names);
    }
    if (memchr(cfg->field_selector, '\0', sizeof cfg->field_selector) == NULL)
        return kgs_seterr(err, errlen, KGS_EINVAL, "kube client: field selector not terminated");
    if (url.https) {
        /* Fail early on a CA file that cannot be used; connections make their own. */
        SSL_CTX *ctx = tls_client_ctx_new(cfg->ca_file[0] ? cfg->ca_file : NULL, NULL, NULL, false,
                                          err, errlen);
        if (!ctx)
            return KGS_EINVAL;
        SSL_CTX_free(ctx);
    }
    kube_client_t *c = calloc(1, sizeof *c);
    if (!c)
        return kgs_seterr(err, errlen, KGS_ENOMEM, "kube client: out of memory");
    c->res = resource;
    if (resource->state_new(&c->state)) {
        free(c);
        return kgs_seterr(err, errlen, KGS_ENOMEM, "kube client: out of memory");
    }
    snprintf(c->list_what, sizeof c->list_what, "list %s", resource->name);
    snprintf(c->watch_what, sizeof c->watch_what, "watch %s", resource->name);
    c->loop = loop;
    c->cfg = *cfg;
    c->url = url;
    if (cbs)
        c->cbs = *cbs;
    c->log = log;
    c->tr.fd = -1;
    uint64_t seed = cfg->jitter_seed;
    if (!seed) /* replicas spread their retries apart */
        seed = clock_mono_now() ^ (uint64_t)(uintptr_t)c ^ UINT64_C(0x9E3779B97F4A7C15);
    kube_backoff_init(&c->backoff, cfg->backoff_min_ns, cfg->backoff_max_ns, seed);
    loop_timer_init(&c->retry, on_retry, c);
    loop_timer_init(&c->idle, on_idle, c);
    schedule(c, 0);
    *out = c;
    return 0;
}

void kube_client_free(kube_client_t *c) {
    if (!c)
        return;
    if (c->cb_depth > 0) {
        c->free_pending = true;
        return;
    }
    conn_close(c);
    loop_timer_stop(c->loop, &c->retry);
    loop_timer_stop(c->loop, &c->idle);
    c->res->state_free(c->state);
    list_drop(c);
    free(c->buf);
    free(c);
}

const pod_cache_t *kube_client_cache(const kube_client_t *c) {
    return c->res->pod_cache ? c->res->pod_cache(c->state) : NULL;
}

dra_index_t *kube_client_slices(const kube_client_t *c) {
    return c->res->dra_index ? c->res->dra_index(c->state) : NULL;
}

bool kube_client_synced(const kube_client_t *c, mono_ns_t now) {
    if (!c->listed || c->blind)
        return false;
    return !c->failing || now - c->failing_since < c->cfg.stale_after_ns;
}

const char *kube_client_last_error(const kube_client_t *c) {
    return c->last_error;
}

void kube_client_stats(const kube_client_t *c, kube_client_stats_t *out) {
    *out = c->stats;
}

int kube_tcp_keepalive(int fd, char *err, size_t errlen) {
    static const struct {
        int level, name, value;
        const char *what;
    } opts[] = {
        {SOL_SOCKET, SO_KEEPALIVE, 1, "SO_KEEPALIVE"},
        {IPPROTO_TCP, TCP_KEEPIDLE, 30, "TCP_KEEPIDLE"},
        {IPPROTO_TCP, TCP_KEEPINTVL, 10, "TCP_KEEPINTVL"},
        {IPPROTO_TCP, TCP_KEEPCNT, 3, "TCP_KEEPCNT"},
    };
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++)
        if (setsockopt(fd, opts[i].level, opts[i].name, &opts[i].value, sizeof opts[i].value) != 0)
            return kgs_seterr(err, errlen, KGS_EIO, "setsockopt %s %d: %s", opts[i].what,
                              opts[i].value, strerror(errno));
    return 0;
}
