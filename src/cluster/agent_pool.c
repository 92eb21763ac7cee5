/*
 * agent_pool.c - one Agent/Watch stream per agent, feeding a cluster view.
 *
 * DESIGN
 * Each agent owns one grpc_client (one HTTP/2 connection) carrying exactly
 * one Watch call, so "the stream ended" and "the connection is gone" are
 * the same event: agent_drop() frees the client, records the reason in the
 * view and arms the retry timer. Dialling a fresh connection instead of
 * re-using one whose stream ended keeps a broken connection from being
 * re-used and costs one handshake per outage.
 *
 * Scale. A pool of 10,000 agents is a list; agent_pool_set_addresses (run
 * on every DNS answer) matches the wanted addresses and the pool through a
 * hash set built for the call, so an unchanged answer costs O(n), not the
 * O(n^2) string compares (~10^8 at 10,000 agents) of scanning the list for
 * each address. Each agent holds one descriptor; a list that cannot fit
 * under RLIMIT_NOFILE is said once, naming the limit and what to raise.
 *
 * Re-entrancy. gRPC callbacks (on_message inside the HTTP/2 receive path,
 * on_done from the client's zero timer) never call user code: they only
 * update the view and mark the pool dirty. A zero-delay timer of the pool
 * (the notify timer) then runs on_change once for everything that changed
 * in that loop iteration. So when user code runs, no pool or client frame
 * is on the stack, and it may remove agents or free the pool outright.
 * Freeing a client ourselves is done only from our own timers or from
 * on_done (grpc_client allows freeing the client there); grpc_client_free
 * delivers on_done synchronously, which the `closing` flag swallows.
 *
 * Idle detection. Agents send a snapshot every sample interval; the wire
 * message says what that interval is (sample_interval_ms), which the decoder
 * does not return, so the top-level field is read straight off the bytes
 * (wire_sample_interval_ms). The idle timer covers connection setup too: a
 * connect that never completes is dead the same way.
 *
 * Backoff is "full jitter" between the floor and a cap that doubles on each
 * failure (AWS architecture blog, "Exponential Backoff And Jitter"), so a
 * fleet of aggregators that lost an agent at once does not re-dial in step.
 */
#include "cluster/agent_pool.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cluster/agent_service.h"
#include "cluster/snapshot_codec.h"
#include "core/err.h"
#include "core/hash.h"
#include "net/conn_limits.h"
#include "net/grpc_client.h"
#include "net/grpc_frame.h"
#include "proto/cluster.pb-c.h"

#define DEFAULT_BACKOFF_MIN_NS (500 * NS_PER_MS)
#define DEFAULT_BACKOFF_MAX_NS (30 * NS_PER_SEC)
#define DEFAULT_IDLE_FLOOR_NS (10 * NS_PER_SEC)
#define IDLE_INTERVALS 5u
#define LOG_INTERVAL_NS (60 * NS_PER_SEC)

typedef struct agent agent_t;

struct agent {
    agent_pool_t *pool;
    char address[AGENT_POOL_ADDRESS_MAX + 1];
    grpc_client_t *client; /* NULL while waiting to re-dial */
    SSL_CTX *client_tls;   /* a reference on the context client was dialled with */
    grpc_client_call_t *call;
    bool closing;         /* we are freeing client: ignore its on_done */
    bool streaming;       /* the current stream delivered a snapshot */
    uint32_t interval_ms; /* the agent's last reported sample interval; 0 unknown */
    uint64_t backoff_cap_ns;
    loop_timer_t retry_timer;
    loop_timer_t idle_timer; /* armed for the silence limit; fires, then checks last_heard */
    mono_ns_t last_heard;    /* when the stream last delivered a message */
    agent_t *next;
};

struct agent_pool {
    agent_pool_opts_t o; /* o.tls: our reference */
    agent_t *agents;
    unsigned connected;
    loop_timer_t notify_timer;
    uint64_t rng;
    log_ratelimit_t rl;
    size_t fd_warned_at; /* the agent count the descriptor warning was last given for */
};

static void agent_connect(agent_t *a);

/* ---- small pieces --------------------------------------------------------------- */

/* xorshift64*: jitter only, not security. */
static uint64_t pool_random(agent_pool_t *p) {
    uint64_t x = p->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    p->rng = x;
    return x * UINT64_C(2685821657736338717);
}

/* A uniform delay in [min, cap], then the cap doubles (saturating at max). */
static uint64_t agent_next_delay(agent_t *a) {
    agent_pool_t *p = a->pool;
    uint64_t lo = p->o.backoff_min_ns, cap = a->backoff_cap_ns;
    if (cap < lo)
        cap = lo;
    uint64_t span = cap - lo;
    uint64_t delay = lo + (span == UINT64_MAX ? pool_random(p) : pool_random(p) % (span + 1));
    a->backoff_cap_ns = cap > p->o.backoff_max_ns / 2 ? p->o.backoff_max_ns : cap * 2;
    return delay;
}

static uint64_t agent_idle_timeout(const agent_t *a) {
    uint64_t t = (uint64_t)a->interval_ms * IDLE_INTERVALS * NS_PER_MS;
    return t > a->pool->o.idle_floor_ns ? t : a->pool->o.idle_floor_ns;
}

static void pool_changed(agent_pool_t *p) {
    if (p->o.on_change && !loop_timer_armed(&p->notify_timer))
        loop_timer_start(p->o.loop, &p->notify_timer, loop_now(p->o.loop));
}

static void on_notify(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)loop;
    (void)t;
    agent_pool_t *p = ud;
    /* Last statement: on_change may free the pool. */
    p->o.on_change(p->o.user_data);
}

static bool read_varint(const uint8_t *b, size_t len, size_t *off, uint64_t *v) {
    uint64_t r = 0;
    for (unsigned shift = 0; shift < 64 && *off < len; shift += 7) {
        uint8_t c = b[(*off)++];
        r |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *v = r;
            return true;
        }
    }
    return false;
}

/*
 * NodeSnapshot.sample_interval_ms (field 6, varint) read off the wire
 * without unpacking the message: walks the top-level fields, skipping the
 * others. The last occurrence wins, as in protobuf. 0 when absent or the
 * bytes are malformed (the caller has decoded them successfully already).
 */
static uint32_t wire_sample_interval_ms(const uint8_t *b, size_t len) {
    size_t off = 0;
    uint32_t found = 0;
    while (off < len) {
        uint64_t tag, v;
        if (!read_varint(b, len, &off, &tag))
            return 0;
        switch (tag & 7u) {
        case 0:
            if (!read_varint(b, len, &off, &v))
                return 0;
            if ((tag >> 3) == 6)
                found = (uint32_t)v; /* protobuf truncates a uint32 the same way */
            break;
        case 1:
            if (len - off < 8)
                return 0;
            off += 8;
            break;
        case 2:
            if (!read_varint(b, len, &off, &v) || v > len - off)
                return 0;
            off += (size_t)v;
            break;
        case 5:
            if (len - off < 4)
                return 0;
            off += 4;
            break;
        default:
            return 0;
        }
    }
    return found;
}

/* ---- one agent ------------------------------------------------------------------ */

/* Closes the client (if any) without reporting anything. */
static void agent_close(agent_t *a) {
    agent_pool_t *p = a->pool;
    loop_timer_stop(p->o.loop, &a->idle_timer);
    if (a->client) {
        a->closing = true;
        grpc_client_free(a->client); /* on_done runs now, swallowed */
        a->closing = false;
        a->client = NULL;
    }
    SSL_CTX_free(a->client_tls); /* NULL is a no-op */
    a->client_tls = NULL;
    a->call = NULL;
    if (a->streaming) {
        a->streaming = false;
        p->connected--;
    }
}

/* The stream is gone: record why, and re-dial after the backoff. Only from
 * our own timers, on_done, or agent_connect (never inside nghttp2). */
static void agent_drop(agent_t *a, const char *reason) {
    agent_pool_t *p = a->pool;
    if (a->streaming)
        a->backoff_cap_ns = p->o.backoff_min_ns; /* it worked: start over */
    agent_close(a);
    uint64_t delay = agent_next_delay(a);
    char key[AGENT_POOL_ADDRESS_MAX + 16];
    snprintf(key, sizeof key, "down %s", a->address);
    LOG_RATELIMITED(p->o.log, &p->rl, key, loop_now(p->o.loop), LOG_WARN,
                    "agent %s: %s; retrying in %llu ms", a->address, reason,
                    (unsigned long long)(delay / NS_PER_MS));
    cluster_view_disconnected(p->o.view, a->address, reason);
    pool_changed(p);
    if (loop_timer_start(p->o.loop, &a->retry_timer, clock_add_sat(loop_now(p->o.loop), delay)) !=
        0)
        LOG_ERROR(p->o.log,
                  "agent %s: cannot schedule a redial: out of memory; it stays down until it is "
                  "removed and added again",
                  a->address);
}

static void on_watch_message(void *ud, const uint8_t *msg, size_t len) {
    agent_t *a = ud;
    agent_pool_t *p = a->pool;
    mono_ns_t now = loop_now(p->o.loop);
    /* Any message proves the connection alive, even one we cannot read. */
    uint32_t interval = wire_sample_interval_ms(msg, len);
    snapshot_t *snap = NULL;
    node_pods_t *pods = NULL;
    char err[256];
    int rc = snapshot_codec_decode(msg, len, now, &snap, &pods, err, sizeof err);
    if (rc == 0 && interval)
        a->interval_ms = interval;
    /* The idle timer is not moved on every message (10,000 agents: 10,000
     * heap re-sorts a second); it fires at the old deadline and looks. */
    a->last_heard = now;
    if (!loop_timer_armed(&a->idle_timer))
        loop_timer_start(p->o.loop, &a->idle_timer, clock_add_sat(now, agent_idle_timeout(a)));
    if (rc != 0) {
        char key[AGENT_POOL_ADDRESS_MAX + 16];
        snprintf(key, sizeof key, "decode %s", a->address);
        LOG_RATELIMITED(p->o.log, &p->rl, key, now, LOG_WARN, "agent %s: dropped a snapshot: %s",
                        a->address, err);
        return;
    }
    if (!a->streaming) {
        a->streaming = true;
        p->connected++;
        LOG_INFO(p->o.log, "agent %s: watching node %s%s", a->address, snap->node_name,
                 a->client_tls ? " over TLS" : "");
    }
    if (cluster_view_update(p->o.view, a->address, snap, pods, now) != 0)
        LOG_RATELIMITED(p->o.log, &p->rl, "view oom", now, LOG_ERROR,
                        "agent %s: snapshot dropped: out of memory", a->address);
    pool_changed(p);
}

/*
 * What a failed connection says about the TLS set-up, in the flags' words:
 * a mode mismatch, an agent certificate our CA does not sign (or for
 * another name), or an agent refusing our client certificate. "" when it
 * says nothing about TLS. The client must still be open (its mode hint).
 */
static void tls_hint(const agent_t *a, const char *message, char *buf, size_t len) {
    const agent_pool_opts_t *o = &a->pool->o;
    grpc_client_mode_hint_t mode =
        a->client ? grpc_client_mode_hint(a->client) : GRPC_CLIENT_MODE_OK;
    buf[0] = '\0';
    if (mode == GRPC_CLIENT_MODE_SERVER_TLS)
        snprintf(buf, len,
                 " (the agent speaks TLS: give --agents-tls-ca, --agents-tls-cert and "
                 "--agents-tls-key)");
    else if (mode == GRPC_CLIENT_MODE_SERVER_PLAINTEXT)
        snprintf(buf, len,
                 " (the agent speaks plaintext: start the agents with --tls-cert, --tls-key and "
                 "--tls-client-ca, or drop --agents-tls-ca)");
    else if (!o->tls || !message)
        return;
    else if (strstr(message, "certificate verification"))
        snprintf(buf, len,
                 " (the agent's certificate does not verify against --agents-tls-ca %s for the "
                 "name %s)",
                 o->tls_ca_file ? o->tls_ca_file : "(system roots)",
                 o->tls_server_name ? o->tls_server_name : "of its IP (--agents-tls-server-name)");
    /* With TLS 1.3 the server checks our certificate after our side of the
     * handshake is done: its refusal arrives as an alert on the first read
     * or, when our first write meets its close first, as a bare reset on a
     * connection that never delivered a snapshot. */
    else if (!o->tls_cert_file && (strstr(message, "alert") || strstr(message, "TLS write:") ||
                                   strstr(message, "TLS read:")))
        snprintf(buf, len,
                 " (agents with --tls-client-ca want a client certificate: give "
                 "--agents-tls-cert and --agents-tls-key)");
    else if (strstr(message, "alert") &&
             (strstr(message, "certificate") || strstr(message, "unknown ca")))
        snprintf(buf, len,
                 " (the agent refused our client certificate --agents-tls-cert %s: is it signed "
                 "by the agents' --tls-client-ca?)",
                 o->tls_cert_file);
    else if (!a->streaming && (strstr(message, "TLS read:") || strstr(message, "TLS write:")))
        snprintf(buf, len,
                 " (the agent closed the connection after the handshake: did it refuse our "
                 "client certificate --agents-tls-cert %s? is it signed by the agents' "
                 "--tls-client-ca?)",
                 o->tls_cert_file);
}

static void on_watch_done(void *ud, int status, const char *message) {
    agent_t *a = ud;
    if (a->closing)
        return;
    a->call = NULL;
    char reason[640], hint[256];
    if (status == GRPC_OK) {
        snprintf(reason, sizeof reason, "watch ended by the agent");
    } else {
        tls_hint(a, message, hint, sizeof hint);
        snprintf(reason, sizeof reason, "watch: %s: %s%s", grpc_status_name(status),
                 message && message[0] ? message : "(no message)", hint);
    }
    agent_drop(a, reason);
}

static void on_idle(loop_t *loop, loop_timer_t *t, void *ud) {
    agent_t *a = ud;
    mono_ns_t due = clock_add_sat(a->last_heard, agent_idle_timeout(a));
    if (loop_now(loop) < due) { /* heard from since it was armed */
        loop_timer_start(loop, t, due);
        return;
    }
    char reason[128];
    snprintf(reason, sizeof reason, "nothing received for %llu ms: connection presumed dead",
             (unsigned long long)(agent_idle_timeout(a) / NS_PER_MS));
    agent_drop(a, reason);
}

static void on_retry(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)loop;
    (void)t;
    agent_connect(ud);
}

/* Dials and starts the Watch; a synchronous failure goes through
 * agent_drop like an asynchronous one. */
static void agent_connect(agent_t *a) {
    agent_pool_t *p = a->pool;
    char err[300];
    grpc_client_opts_t co = {.address = a->address,
                             .tls = p->o.tls,
                             .server_name = p->o.tls ? p->o.tls_server_name : NULL,
                             .log = p->o.log};
    if (grpc_client_connect(p->o.loop, &co, &a->client, err, sizeof err) != 0) {
        a->client = NULL;
        agent_drop(a, err);
        return;
    }
    /* The connector makes its SSL later, after the TCP connect: this
     * connection keeps the context alive across a reload until then. */
    if (p->o.tls && SSL_CTX_up_ref(p->o.tls) == 1)
        a->client_tls = p->o.tls;
    Kgs__Cluster__V1__WatchRequest req = KGS__CLUSTER__V1__WATCH_REQUEST__INIT;
    req.protocol_version = SNAPSHOT_CODEC_PROTOCOL_VERSION;
    uint8_t buf[16];
    size_t n = kgs__cluster__v1__watch_request__pack(&req, buf);
    int rc = grpc_client_call(a->client, AGENT_SERVICE_WATCH_PATH, buf, n, 0, on_watch_message,
                              on_watch_done, a, &a->call);
    if (rc != 0) {
        snprintf(err, sizeof err, "start watch: %s", kgs_err_str(rc));
        agent_drop(a, err);
        return;
    }
    a->last_heard = loop_now(p->o.loop);
    loop_timer_start(p->o.loop, &a->idle_timer,
                     clock_add_sat(a->last_heard, agent_idle_timeout(a)));
}

static void agent_free(agent_t *a) {
    loop_timer_stop(a->pool->o.loop, &a->retry_timer);
    agent_close(a);
    free(a);
}

/* ---- the pool ------------------------------------------------------------------- */

int agent_pool_new(const agent_pool_opts_t *o, agent_pool_t **out) {
    if (!o || !o->loop || !o->view || !out)
        return KGS_EINVAL;
    agent_pool_t *p = calloc(1, sizeof *p);
    if (!p)
        return KGS_ENOMEM;
    p->o = *o;
    if (p->o.tls && SSL_CTX_up_ref(p->o.tls) != 1) {
        free(p);
        return KGS_ENOMEM;
    }
    if (!p->o.backoff_min_ns)
        p->o.backoff_min_ns = DEFAULT_BACKOFF_MIN_NS;
    if (!p->o.backoff_max_ns)
        p->o.backoff_max_ns = DEFAULT_BACKOFF_MAX_NS;
    if (p->o.backoff_max_ns < p->o.backoff_min_ns)
        p->o.backoff_max_ns = p->o.backoff_min_ns;
    if (!p->o.idle_floor_ns)
        p->o.idle_floor_ns = DEFAULT_IDLE_FLOOR_NS;
    p->rng = clock_mono_now() ^ (uint64_t)(uintptr_t)p ^ UINT64_C(0x9e3779b97f4a7c15);
    if (!p->rng)
        p->rng = 1;
    loop_timer_init(&p->notify_timer, on_notify, p);
    log_ratelimit_init(&p->rl, LOG_INTERVAL_NS);
    *out = p;
    return 0;
}

/* "host:port" or "[v6]:port" with a decimal port 1-65535. */
static bool address_valid(const char *s) {
    size_t len = strlen(s);
    if (len == 0 || len > AGENT_POOL_ADDRESS_MAX)
        return false;
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s)
        return false;
    if (s[0] == '[' && (colon[-1] != ']' || colon - s < 3))
        return false;
    unsigned long port = 0;
    const char *d = colon + 1;
    if (!*d)
        return false;
    for (; *d; d++) {
        if (*d < '0' || *d > '9')
            return false;
        port = port * 10 + (unsigned long)(*d - '0');
        if (port > 65535)
            return false;
    }
    return port > 0;
}

/* A set of strings for one call: open addressing over a power-of-two
 * table of borrowed pointers, load at most 1/2. */
typedef struct {
    const char **slot;
    size_t mask;
} str_set_t;

static int str_set_init(str_set_t *t, size_t n) {
    size_t cap = 16;
    while (cap < 2 * n)
        cap <<= 1;
    t->slot = calloc(cap, sizeof *t->slot);
    t->mask = cap - 1;
    return t->slot ? 0 : KGS_ENOMEM;
}

/* Adds s; false when it was there already. */
static bool str_set_add(str_set_t *t, const char *s) {
    size_t i = (size_t)kgs_fnv1a(s) & t->mask;
    for (; t->slot[i]; i = (i + 1) & t->mask)
        if (strcmp(t->slot[i], s) == 0)
            return false;
    t->slot[i] = s;
    return true;
}

static bool str_set_has(const str_set_t *t, const char *s) {
    for (size_t i = (size_t)kgs_fnv1a(s) & t->mask; t->slot[i]; i = (i + 1) & t->mask)
        if (strcmp(t->slot[i], s) == 0)
            return true;
    return false;
}

/* Says once per agent count that the agents cannot all hold a connection
 * under the descriptor limit, and what to raise. */
static void check_descriptors(agent_pool_t *p, size_t agents) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return;
    uint64_t need = (uint64_t)agents + CONN_LIMITS_FD_HEADROOM;
    if (need <= rl.rlim_cur) {
        p->fd_warned_at = 0;
        return;
    }
    if (p->fd_warned_at == agents)
        return;
    p->fd_warned_at = agents;
    LOG_ERROR(p->o.log,
              "%zu agents need one connection each: %llu descriptors with the %u kept for the "
              "Kubernetes API, probes, sources and files, but RLIMIT_NOFILE is %llu: agents past "
              "the limit fail to connect (\"Too many open files\"). "
              "Raise the limit to at least %llu plus --max-connections (the container runtime's "
              "nofile limit, e.g. containerd's LimitNOFILE or docker --ulimit nofile=N:N; "
              "ulimit -n outside a container)",
              agents, (unsigned long long)need, CONN_LIMITS_FD_HEADROOM,
              (unsigned long long)rl.rlim_cur, (unsigned long long)need);
}

int agent_pool_set_addresses(agent_pool_t *p, const char *const *addrs, size_t n) {
    if (!p || (n && !addrs))
        return KGS_EINVAL;
    for (size_t i = 0; i < n; i++) {
        if (!addrs[i] || !address_valid(addrs[i])) {
            LOG_ERROR(p->o.log,
                      "agent address \"%s\": expected IP:PORT or [IPv6]:PORT, at most %u bytes",
                      addrs[i] ? addrs[i] : "(null)", AGENT_POOL_ADDRESS_MAX);
            return KGS_EINVAL;
        }
    }
    /* The pool's addresses and the wanted ones, as sets. */
    size_t have = agent_pool_size(p);
    str_set_t pool, wanted;
    if (str_set_init(&pool, have) != 0)
        return KGS_ENOMEM;
    if (str_set_init(&wanted, n) != 0) {
        free(pool.slot);
        return KGS_ENOMEM;
    }
    for (agent_t *a = p->agents; a; a = a->next)
        str_set_add(&pool, a->address);
    /* Allocate every new agent first so that ENOMEM changes nothing. */
    agent_t *fresh = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!str_set_add(&wanted, addrs[i]) || str_set_has(&pool, addrs[i]))
            continue; /* listed twice, or already in the pool */
        agent_t *a = calloc(1, sizeof *a);
        if (!a) {
            while (fresh) {
                agent_t *next = fresh->next;
                free(fresh);
                fresh = next;
            }
            free(pool.slot);
            free(wanted.slot);
            return KGS_ENOMEM;
        }
        a->pool = p;
        snprintf(a->address, sizeof a->address, "%s", addrs[i]);
        a->backoff_cap_ns = p->o.backoff_min_ns;
        loop_timer_init(&a->retry_timer, on_retry, a);
        loop_timer_init(&a->idle_timer, on_idle, a);
        a->next = fresh;
        fresh = a;
    }
    /* Forget the agents no longer wanted. */
    for (agent_t **pp = &p->agents; *pp;) {
        agent_t *a = *pp;
        if (str_set_has(&wanted, a->address)) {
            pp = &a->next;
            continue;
        }
        *pp = a->next;
        LOG_INFO(p->o.log, "agent %s: no longer discovered", a->address);
        cluster_view_remove(p->o.view, a->address);
        agent_free(a);
        pool_changed(p);
    }
    free(pool.slot);
    free(wanted.slot);
    size_t total = agent_pool_size(p);
    for (const agent_t *a = fresh; a; a = a->next)
        total++;
    check_descriptors(p, total);
    /* Link and dial the new ones. */
    while (fresh) {
        agent_t *a = fresh;
        fresh = a->next;
        a->next = p->agents;
        p->agents = a;
        LOG_INFO(p->o.log, "agent %s: discovered", a->address);
        agent_connect(a);
    }
    return 0;
}

void agent_pool_set_tls(agent_pool_t *p, SSL_CTX *ctx) {
    if (!p || ctx == p->o.tls)
        return;
    if (ctx && SSL_CTX_up_ref(ctx) != 1) {
        LOG_ERROR(p->o.log, "agents TLS: cannot keep the reloaded context: out of memory; new "
                            "dials use the previous one");
        return;
    }
    SSL_CTX_free(p->o.tls);
    p->o.tls = ctx;
}

unsigned agent_pool_size(const agent_pool_t *p) {
    unsigned n = 0;
    for (const agent_t *a = p ? p->agents : NULL; a; a = a->next)
        n++;
    return n;
}

unsigned agent_pool_connected(const agent_pool_t *p) {
    return p ? p->connected : 0;
}

void agent_pool_free(agent_pool_t *p) {
    if (!p)
        return;
    while (p->agents) {
        agent_t *a = p->agents;
        p->agents = a->next;
        agent_free(a);
    }
    loop_timer_stop(p->o.loop, &p->notify_timer);
    SSL_CTX_free(p->o.tls);
    free(p);
}
