/*
 * connector.c - resolve, connect, TLS, ready: one outbound connection.
 *
 * DESIGN
 * Phases run forward only: RESOLVING (a name: the DNS thread, one round,
 * then the resolver is freed), CONNECTING (one address at a time; a connect
 * that fails moves on to the next address, a TLS failure does not, since a
 * certificate problem is not the address's fault), HANDSHAKE. The address
 * check runs over the whole list before the first connect, so a name that
 * resolves to one allowed and one forbidden address is refused outright
 * rather than used until the allowed one fails.
 *
 * Whatever can be decided inside connector_start (a bad address, a refused
 * address, connect failing at once on every address) is returned from it,
 * and done is never called; everything later reaches done from an I/O or
 * resolver callback, so done never runs inside connector_start. The
 * connector frees itself before calling done, which may therefore free its
 * owner or start the next connection.
 *
 * Cancelling while RESOLVING never waits: resolver_free abandons a lookup
 * in progress to the loop's shared DNS pool (net/resolver.c). Before the
 * connector, the gRPC client resolved on the loop thread every time.
 */
#include "net/connector.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include <openssl/x509v3.h>

#include "core/err.h"
#include "net/resolver.h"
#include "net/sock.h"

/* One address failed (try the next); anything negative is a KGS_E* code. */
#define ATTEMPT_FAILED 1

struct connector {
    loop_t *loop;
    connector_phase_t phase;
    connector_done_cb done;
    void *user_data;
    connector_addr_check_cb check_addr;
    SSL_CTX *tls;
    char *name; /* NULL: the peer */
    char *tls_host;
    char *alpn;
    bool alpn_required;
    bool embedded; /* in its owner's connector_storage_t: never freed here */
    /* The last failed attempt found nobody at its address (refused,
     * unreachable, timed out in the kernel): KGS_ENOPEER, not KGS_EIO. */
    bool no_peer;

    /* A connection to one address (each source poll, an IP literal) keeps
     * it in one1: no allocation besides the connector itself. */
    struct sockaddr_storage *addrs; /* &one1.addr, or heap */
    socklen_t *addrlens;            /* &one1.len, or heap */
    size_t naddrs, next;
    struct {
        struct sockaddr_storage addr;
        socklen_t len;
    } one1;
    resolver_t *resolver;

    transport_t tr;
    bool tr_open;
    loop_io_t *io;
    uint32_t io_events;
    /* No message buffers here: a failure is reported in the same call chain
     * that found it, so its message lives on that chain's stack (ERROR_MAX).
     * The 500 pod sources of an aggregator, polled in the same instant, each
     * hold a connector at once: this struct is per-poll peak memory. */
};

/* Room for one failure message ("connect PEER: REASON", "refused to ..."). */
#define ERROR_MAX 512

const char *connector_phase_name(connector_phase_t p) {
    switch (p) {
    case CONNECTOR_RESOLVING:
        return "resolving";
    case CONNECTOR_CONNECTING:
        return "connecting";
    case CONNECTOR_HANDSHAKE:
        return "in the TLS handshake";
    }
    return "?";
}

connector_phase_t connector_phase(const connector_t *c) {
    return c->phase;
}

/* "1.2.3.4:80", "[::1]:80", "unix:/path". */
static void format_addr(const struct sockaddr_storage *ss, char *out, size_t outlen) {
    if (ss->ss_family == AF_UNIX)
        snprintf(out, outlen, "unix:%s", ((const struct sockaddr_un *)ss)->sun_path);
    else
        sock_format_peer(ss, out, outlen);
}

/* The peer as messages name it: "X " after "connect", "" when left out;
 * else the address being tried, formatted into buf. */
static const char *label(const connector_t *c, char *buf, size_t buflen) {
    if (c->name)
        return c->name;
    format_addr(&c->addrs[c->next], buf, buflen);
    return buf;
}

static char *dup_or_null(const char *s) {
    return s ? strdup(s) : NULL;
}

/* Closes the attempt in progress (socket, TLS, registration). */
static void attempt_close(connector_t *c) {
    if (c->io)
        loop_io_remove(c->loop, c->io);
    c->io = NULL;
    if (c->tr_open)
        transport_close(&c->tr);
    c->tr_open = false;
}

static void release(connector_t *c) {
    attempt_close(c);
    resolver_free(c->resolver);
    free(c->name);
    free(c->tls_host);
    free(c->alpn);
    if (c->addrs != &c->one1.addr) {
        free(c->addrs);
        free(c->addrlens);
    }
    if (!c->embedded)
        free(c);
}

/* Ends the connector and reports; c is gone afterwards. */
static void finish(connector_t *c, int status, const char *error) {
    connector_done_cb done = c->done;
    void *ud = c->user_data;
    transport_t tr = {.fd = -1};
    char msg[512] = "";
    if (status == 0) {
        loop_io_remove(c->loop, c->io); /* the owner registers the fd itself */
        c->io = NULL;
        tr = c->tr;
        c->tr_open = false; /* handed over */
    } else {
        /* The precision says what the size does (a longer message is cut at
         * 511 bytes): -Wformat-truncation once inlining shows a caller's
         * larger buffer. */
        snprintf(msg, sizeof msg, "%.511s", error ? error : kgs_err_str(status));
    }
    release(c);
    done(ud, status, status == 0 ? &tr : NULL, status == 0 ? NULL : msg);
}

static void on_io(loop_t *loop, int fd, uint32_t events, void *ud);

/* TLS settings of this connection: the ALPN offer and the name to check.
 * A failure's message goes to error (ERROR_MAX bytes). */
static int tls_setup(connector_t *c, char *error) {
    SSL *ssl = c->tr.ssl;
    if (c->alpn) {
        unsigned char wire[256];
        size_t n = strlen(c->alpn);
        if (n == 0 || n >= sizeof wire)
            return kgs_seterr(error, ERROR_MAX, KGS_EINVAL, "TLS: ALPN \"%s\": bad length",
                              c->alpn);
        wire[0] = (unsigned char)n;
        memcpy(wire + 1, c->alpn, n);
        if (SSL_set_alpn_protos(ssl, wire, (unsigned)n + 1) != 0)
            return kgs_seterr(error, ERROR_MAX, KGS_ENOMEM, "TLS: cannot offer ALPN");
    }
    const char *host = c->tls_host ? c->tls_host : "";
    if (!host[0])
        return 0;
    X509_VERIFY_PARAM *param = SSL_get0_param(ssl);
    unsigned char ipbuf[16];
    int ok;
    if (inet_pton(AF_INET, host, ipbuf) == 1 || inet_pton(AF_INET6, host, ipbuf) == 1) {
        /* No SNI for an IP literal (RFC 6066 section 3); verify the IP SAN. */
        ok = X509_VERIFY_PARAM_set1_ip_asc(param, host);
    } else {
        SSL_set_tlsext_host_name(ssl, host);
        X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        ok = X509_VERIFY_PARAM_set1_host(param, host, 0);
    }
    if (ok != 1)
        return kgs_seterr(error, ERROR_MAX, KGS_EIO, "TLS: cannot set the name to verify");
    return 0;
}

/* Whether a connect() error says that no server is at the address: what a
 * pod that is not there, or a Service without endpoints, answers. */
static bool errno_no_peer(int e) {
    return e == ECONNREFUSED || e == EHOSTUNREACH || e == ENETUNREACH || e == ETIMEDOUT ||
           e == EHOSTDOWN || e == ENETDOWN;
}

/* Starts connecting to addrs[next]. Returns 0 (in progress), ATTEMPT_FAILED
 * (this address: error, ERROR_MAX bytes, says why) or a KGS_E* code (error). */
static int attempt(connector_t *c, char *error) {
    const struct sockaddr_storage *ss = &c->addrs[c->next];
    socklen_t len = c->addrlens[c->next];
    char peer[128];
    const char *who = label(c, peer, sizeof peer);
    int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        c->no_peer = false;
        snprintf(error, ERROR_MAX, "%s%s%ssocket: %s", who[0] ? "connect " : "", who,
                 who[0] ? ": " : "", strerror(errno));
        return ATTEMPT_FAILED;
    }
    if (connect(fd, (const struct sockaddr *)ss, len) != 0 && errno != EINPROGRESS) {
        c->no_peer = errno_no_peer(errno);
        snprintf(error, ERROR_MAX, "connect%s%s: %s", who[0] ? " " : "", who, strerror(errno));
        close(fd);
        return ATTEMPT_FAILED;
    }
    if (transport_init(&c->tr, fd, c->tls, false, NULL) != 0) {
        close(fd);
        return kgs_seterr(error, ERROR_MAX, KGS_ENOMEM, "out of memory");
    }
    c->tr_open = true;
    int rc = c->tr.ssl ? tls_setup(c, error) : 0;
    if (rc != 0) {
        attempt_close(c);
        return rc;
    }
    c->io_events = EPOLLOUT;
    c->io = loop_io_add(c->loop, fd, EPOLLOUT, on_io, c);
    if (!c->io) {
        int e = errno;
        attempt_close(c);
        return kgs_seterr(error, ERROR_MAX, KGS_EIO, "epoll: %s", strerror(e));
    }
    c->phase = CONNECTOR_CONNECTING;
    return 0;
}

/* Tries addrs[next..] until one is in progress. Returns 0, or the last
 * failure's code (when every address failed: KGS_ENOPEER if the last one
 * found nobody there, else KGS_EIO) with its message in error (ERROR_MAX
 * bytes). */
static int attempt_from_next(connector_t *c, char *error) {
    for (; c->next < c->naddrs; c->next++) {
        int rc = attempt(c, error);
        if (rc == 0)
            return 0;
        if (rc != ATTEMPT_FAILED)
            return rc;
    }
    return c->no_peer ? KGS_ENOPEER : KGS_EIO;
}

/* The address check over the whole list, then the first attempt (error
 * as for attempt_from_next). */
static int begin(connector_t *c, char *error) {
    if (c->check_addr) {
        for (size_t i = 0; i < c->naddrs; i++) {
            const char *why = c->check_addr((const struct sockaddr *)&c->addrs[i], c->addrlens[i]);
            if (why) {
                char peer[128];
                format_addr(&c->addrs[i], peer, sizeof peer);
                return kgs_seterr(error, ERROR_MAX, KGS_EIO, "refused to connect to %s: %s", peer,
                                  why);
            }
        }
    }
    c->next = 0;
    return attempt_from_next(c, error);
}

static void handshake(connector_t *c) {
    char why[400], msg[640];
    int rc = transport_client_handshake(&c->tr, c->alpn, why, sizeof why);
    if (rc == 0 && c->alpn_required) {
        const unsigned char *proto = NULL;
        unsigned len = 0;
        SSL_get0_alpn_selected(c->tr.ssl, &proto, &len);
        if (len == 0) {
            snprintf(why, sizeof why, "TLS handshake: peer did not negotiate ALPN %s",
                     c->alpn ? c->alpn : "");
            rc = TRANSPORT_ERROR;
        }
    }
    if (rc == TRANSPORT_AGAIN) {
        uint32_t ev = transport_poll_events(&c->tr, false, false);
        if (ev != c->io_events && loop_io_modify(c->loop, c->io, ev) == 0)
            c->io_events = ev;
        return;
    }
    if (rc != 0) {
        char peer[128];
        const char *who = label(c, peer, sizeof peer);
        snprintf(msg, sizeof msg, "%.200s%s%s", who, who[0] ? ": " : "", why);
        finish(c, c->tr.peer_not_tls ? KGS_EPROTO : KGS_EIO, msg);
        return;
    }
    finish(c, 0, NULL);
}

static void on_io(loop_t *loop, int fd, uint32_t events, void *ud) {
    (void)loop;
    connector_t *c = ud;
    if (c->phase == CONNECTOR_CONNECTING) {
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0)
            soerr = errno;
        if (soerr) {
            char peer[128], error[ERROR_MAX];
            const char *who = label(c, peer, sizeof peer);
            snprintf(error, ERROR_MAX, "connect%s%s: %s", who[0] ? " " : "", who, strerror(soerr));
            c->no_peer = errno_no_peer(soerr);
            attempt_close(c);
            c->next++;
            int rc = attempt_from_next(c, error);
            if (rc != 0)
                finish(c, rc, error);
            return;
        }
        if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
            return;
        if (!c->tr.ssl) {
            finish(c, 0, NULL);
            return;
        }
        c->phase = CONNECTOR_HANDSHAKE;
    }
    handshake(c);
}

/* "ip:port" / "[ip6]:port" (the resolver's format) into a sockaddr. */
static bool parse_numeric(const char *s, struct sockaddr_storage *ss, socklen_t *len) {
    char host[64];
    const char *colon;
    if (s[0] == '[') {
        const char *end = strchr(s, ']');
        if (!end || end[1] != ':' || (size_t)(end - s - 1) >= sizeof host)
            return false;
        memcpy(host, s + 1, (size_t)(end - s - 1));
        host[end - s - 1] = '\0';
        colon = end + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon || (size_t)(colon - s) >= sizeof host)
            return false;
        memcpy(host, s, (size_t)(colon - s));
        host[colon - s] = '\0';
    }
    char *endp;
    unsigned long port = strtoul(colon + 1, &endp, 10);
    if (*endp || port == 0 || port > 65535)
        return false;
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
    if (s[0] != '[' && inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        *len = sizeof *v4;
        return true;
    }
    if (s[0] == '[' && inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        *len = sizeof *v6;
        return true;
    }
    return false;
}

static int alloc_addrs(connector_t *c, size_t n) {
    if (n == 1) {
        c->addrs = &c->one1.addr;
        c->addrlens = &c->one1.len;
        c->naddrs = 0;
        return 0;
    }
    c->addrs = calloc(n, sizeof *c->addrs);
    c->addrlens = calloc(n, sizeof *c->addrlens);
    if (!c->addrs || !c->addrlens)
        return KGS_ENOMEM;
    c->naddrs = 0;
    return 0;
}

static void on_resolved(void *ud, const char *const *addrs, size_t n, const char *error) {
    connector_t *c = ud;
    /* One round is all a connection needs; addrs and error stay valid
     * until this callback returns (resolver.h). */
    resolver_free(c->resolver);
    c->resolver = NULL;
    if (error || n == 0) {
        finish(c, KGS_EIO, error ? error : "resolve: no address");
        return;
    }
    if (alloc_addrs(c, n) != 0) {
        finish(c, KGS_ENOMEM, "out of memory");
        return;
    }
    for (size_t i = 0; i < n; i++)
        if (parse_numeric(addrs[i], &c->addrs[c->naddrs], &c->addrlens[c->naddrs]))
            c->naddrs++;
    char msg[ERROR_MAX];
    int rc = c->naddrs ? begin(c, msg)
                       : kgs_seterr(msg, ERROR_MAX, KGS_EIO, "resolve: no usable address");
    if (rc != 0)
        finish(c, rc, msg);
}

/* Splits "host:port" / "[v6]:port". */
static int split_host_port(const char *addr, char *host, size_t hostlen, const char **port) {
    const char *colon;
    if (addr[0] == '[') {
        const char *end = strchr(addr, ']');
        if (!end || end[1] != ':' || (size_t)(end - addr - 1) >= hostlen)
            return -1;
        snprintf(host, hostlen, "%.*s", (int)(end - addr - 1), addr + 1);
        colon = end + 1;
    } else {
        colon = strrchr(addr, ':');
        if (!colon || colon == addr || (size_t)(colon - addr) >= hostlen)
            return -1;
        snprintf(host, hostlen, "%.*s", (int)(colon - addr), addr);
    }
    if (!colon[1])
        return -1;
    *port = colon + 1;
    return 0;
}

/* opts->address into addresses (a literal or a unix path) or a lookup. */
static int from_address(connector_t *c, const char *address, char *err, size_t errlen) {
    if (strncmp(address, "unix:", 5) == 0) {
        /* A unix socket (the kubelet's pod-resources API): "unix:/path". */
        const char *path = address + 5;
        struct sockaddr_un un = {.sun_family = AF_UNIX};
        if (!path[0] || strlen(path) >= sizeof un.sun_path)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "address \"%s\": expected unix:/absolute/path (at most %zu bytes)",
                              address, sizeof un.sun_path - 1);
        memcpy(un.sun_path, path, strlen(path) + 1);
        if (alloc_addrs(c, 1) != 0)
            return kgs_seterr(err, errlen, KGS_ENOMEM, "connect %s: out of memory", address);
        memcpy(&c->addrs[0], &un, sizeof un);
        c->addrlens[0] = sizeof un;
        c->naddrs = 1;
        return 0;
    }
    char host[256];
    const char *port;
    if (split_host_port(address, host, sizeof host, &port) != 0)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "address \"%s\": expected HOST:PORT (e.g. 127.0.0.1:6000) or unix:/path",
                          address);
    char numeric[300];
    unsigned char ip[16];
    bool v6 = inet_pton(AF_INET6, host, ip) == 1;
    if (v6 || inet_pton(AF_INET, host, ip) == 1) {
        snprintf(numeric, sizeof numeric, v6 ? "[%s]:%s" : "%s:%s", host, port);
        if (alloc_addrs(c, 1) != 0)
            return kgs_seterr(err, errlen, KGS_ENOMEM, "connect %s: out of memory", address);
        if (!parse_numeric(numeric, &c->addrs[0], &c->addrlens[0]))
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "address \"%s\": port \"%s\": expected 1-65535", address, port);
        c->naddrs = 1;
        return 0;
    }
    c->phase = CONNECTOR_RESOLVING;
    return resolver_start(c->loop, address, 0, on_resolved, c, &c->resolver, err, errlen);
}

_Static_assert(sizeof(struct connector) <= sizeof(connector_storage_t),
               "CONNECTOR_STORAGE_SIZE is too small for struct connector");

static bool opts_ok(const connector_opts_t *o) {
    return o->done && !o->address != !o->addrs && (!o->addrs || (o->naddrs && o->addrlens));
}

#define OPTS_MSG "connector: want a done callback and either an address or addresses"

/* connector_start's work on a zeroed c, heap or embedded; a failure
 * releases c. */
static int start(connector_t *c, loop_t *loop, const connector_opts_t *o, connector_t **out,
                 char *err, size_t errlen) {
    c->loop = loop;
    c->done = o->done;
    c->user_data = o->user_data;
    c->check_addr = o->check_addr;
    c->tls = o->tls;
    c->alpn_required = o->alpn_required;
    c->phase = CONNECTOR_CONNECTING;
    c->tr.fd = -1;
    c->name = dup_or_null(o->name);
    c->tls_host = dup_or_null(o->tls_host);
    c->alpn = dup_or_null(o->alpn);
    if ((o->name && !c->name) || (o->tls_host && !c->tls_host) || (o->alpn && !c->alpn)) {
        release(c);
        return kgs_seterr(err, errlen, KGS_ENOMEM, "connector: out of memory");
    }
    int rc;
    if (o->addrs) {
        if (alloc_addrs(c, o->naddrs) != 0) {
            release(c);
            return kgs_seterr(err, errlen, KGS_ENOMEM, "connector: out of memory");
        }
        memcpy(c->addrs, o->addrs, o->naddrs * sizeof *c->addrs);
        memcpy(c->addrlens, o->addrlens, o->naddrs * sizeof *c->addrlens);
        c->naddrs = o->naddrs;
    } else if ((rc = from_address(c, o->address, err, errlen)) != 0) {
        release(c);
        return rc;
    }
    char msg[ERROR_MAX];
    if (c->phase != CONNECTOR_RESOLVING && (rc = begin(c, msg)) != 0) {
        kgs_seterr(err, errlen, rc, "%s", msg);
        release(c);
        return rc;
    }
    *out = c;
    return 0;
}

int connector_start(loop_t *loop, const connector_opts_t *o, connector_t **out, char *err,
                    size_t errlen) {
    *out = NULL;
    if (!opts_ok(o))
        return kgs_seterr(err, errlen, KGS_EINVAL, OPTS_MSG);
    connector_t *c = calloc(1, sizeof *c);
    if (!c)
        return kgs_seterr(err, errlen, KGS_ENOMEM, "connector: out of memory");
    return start(c, loop, o, out, err, errlen);
}

int connector_start_in(connector_storage_t *storage, loop_t *loop, const connector_opts_t *o,
                       connector_t **out, char *err, size_t errlen) {
    *out = NULL;
    if (!opts_ok(o))
        return kgs_seterr(err, errlen, KGS_EINVAL, OPTS_MSG);
    connector_t *c = (connector_t *)storage;
    memset(c, 0, sizeof *c);
    c->embedded = true;
    return start(c, loop, o, out, err, errlen);
}

void connector_cancel(connector_t *c) {
    if (c)
        release(c);
}
