/*
 * source_backend_redis.c - the Redis queue backend: one pipeline per poll,
 * [AUTH] [SELECT] then LLEN for a list, or XLEN [XINFO GROUPS] for a stream
 * (pending entries or consumer-group lag). Our own RESP2 client
 * (resp.c) rather than hiredis: Debian 12's hiredis has no TLS.
 */
#include <stdio.h>
#include <string.h>

#include "core/err.h"
#include "sources/resp.h"
#include "sources/source_backend.h"

/* Replies the pipeline of p expects. */
static unsigned redis_nreplies(const source_params_t *p) {
    unsigned n = 1; /* LLEN or XLEN */
    if (p->pass[0])
        n++;
    if (p->db)
        n++;
    if (p->qkind != QUEUE_REDIS_LIST && p->measure != STREAM_MEASURE_LENGTH)
        n++; /* XINFO GROUPS */
    return n;
}

static size_t redis_request(const source_params_t *p, char *buf, size_t cap) {
    size_t o = 0;
    if (p->pass[0]) {
        const char *argv[3] = {"AUTH", p->user, p->pass};
        size_t lens[3] = {4, strlen(p->user), strlen(p->pass)};
        if (p->user[0]) {
            o += resp_encode(buf + o, o < cap ? cap - o : 0, 3, argv, lens);
        } else {
            const char *a2[2] = {"AUTH", p->pass};
            size_t l2[2] = {4, lens[2]};
            o += resp_encode(buf + o, o < cap ? cap - o : 0, 2, a2, l2);
        }
    }
    if (p->db) {
        char dbs[8];
        snprintf(dbs, sizeof dbs, "%d", p->db);
        const char *argv[2] = {"SELECT", dbs};
        size_t lens[2] = {6, strlen(dbs)};
        o += resp_encode(buf + o, o < cap ? cap - o : 0, 2, argv, lens);
    }
    size_t kl = strlen(p->rkey);
    if (p->qkind == QUEUE_REDIS_LIST) {
        const char *argv[2] = {"LLEN", p->rkey};
        size_t lens[2] = {4, kl};
        o += resp_encode(buf + o, o < cap ? cap - o : 0, 2, argv, lens);
    } else {
        const char *argv[2] = {"XLEN", p->rkey};
        size_t lens[2] = {4, kl};
        o += resp_encode(buf + o, o < cap ? cap - o : 0, 2, argv, lens);
        if (p->measure != STREAM_MEASURE_LENGTH) {
            const char *a3[3] = {"XINFO", "GROUPS", p->rkey};
            size_t l3[3] = {5, 6, kl};
            o += resp_encode(buf + o, o < cap ? cap - o : 0, 3, a3, l3);
        }
    }
    return o <= cap ? o : 0;
}

static int redis_complete(const source_params_t *p, source_scratch_t *sc, const char *buf,
                          size_t len, char *why, size_t whylen) {
    size_t off = 0;
    unsigned n = redis_nreplies(p);
    for (unsigned i = 0; i < n; i++) {
        size_t used;
        int rc = resp_parse(buf + off, len - off, sc->resp, &used, why, whylen);
        if (rc == RESP_INCOMPLETE)
            return 0;
        if (rc != RESP_COMPLETE)
            return -1;
        off += used;
    }
    return 1;
}

/* "<cmd> (key not shown): <what the reply is>" for a reply that is not the
 * integer asked for: an error by its code, anything else by its type. The
 * reply's text is never copied (resp.h says why). */
static void reply_error(char *msg, size_t msglen, const char *cmd, const resp_node_t *n) {
    if (n->type == RESP_ERROR)
        snprintf(msg, msglen, "%s (key not shown): Redis answered %s", cmd, resp_error_describe(n));
    else
        snprintf(msg, msglen, "%s (key not shown): Redis answered %s, not an integer", cmd,
                 resp_type_describe(n->type));
}

/* The queue length in the last reply n (the reply tree is sc->resp). */
static int read_queue(const source_params_t *p, const resp_reply_t *r, int64_t xlen, double *v,
                      char *msg, size_t msglen) {
    const resp_node_t *n = &r->nodes[0];
    char why[300];
    if (p->qkind == QUEUE_REDIS_LIST || p->measure == STREAM_MEASURE_LENGTH) {
        const char *cmd = p->qkind == QUEUE_REDIS_LIST ? "LLEN" : "XLEN";
        if (n->type != RESP_INTEGER) {
            reply_error(msg, msglen, cmd, n);
            return -1;
        }
        if (n->integer < 0) {
            snprintf(msg, msglen, "%s (key not shown): Redis answered %lld, not a length", cmd,
                     (long long)n->integer);
            return -1;
        }
        *v = (double)n->integer;
        return 0;
    }
    int64_t pending = 0, lag = 0;
    bool lag_known = false;
    if (n->type == RESP_ERROR && n->len >= 13 && memmem(n->str, n->len, "no such key", 11)) {
        *v = 0; /* no stream yet: nothing was ever queued */
        return 0;
    }
    int rc = resp_xinfo_group(r, p->group, &pending, &lag, &lag_known, why, sizeof why);
    if (rc == KGS_ENOTFOUND) {
        /* No consumer has created the group yet (nothing ran): every entry
         * is waiting for it. */
        *v = p->measure == STREAM_MEASURE_LAG ? (double)(xlen < 0 ? 0 : xlen) : 0;
    } else if (rc != 0) {
        snprintf(msg, msglen, "XINFO GROUPS: %s", why);
        return -1;
    } else if (p->measure == STREAM_MEASURE_PENDING) {
        *v = (double)pending;
    } else {
        /* Redis reports lag as nil after deletions it cannot account for;
         * the stream length bounds it from above. */
        *v = lag_known ? (double)lag : (double)(xlen < 0 ? 0 : xlen);
    }
    return 0;
}

static int redis_parse(const source_params_t *p, source_scratch_t *sc, const char *buf, size_t len,
                       bool eof, source_reading_t *out, char *msg, size_t msglen) {
    char why[300];
    unsigned nreplies = redis_nreplies(p);
    if (eof && redis_complete(p, sc, buf, len, why, sizeof why) != 1) {
        snprintf(msg, msglen, "connection closed before every reply arrived");
        return -1;
    }
    const char *cmd_names[2];
    unsigned nc = 0;
    if (p->pass[0])
        cmd_names[nc++] = "AUTH";
    if (p->db)
        cmd_names[nc++] = "SELECT";
    size_t off = 0;
    int64_t xlen = -1;
    resp_reply_t *r = sc->resp;
    for (unsigned idx = 0; idx < nreplies; idx++) {
        size_t used;
        if (resp_parse(buf + off, len - off, r, &used, why, sizeof why) != RESP_COMPLETE) {
            snprintf(msg, msglen, "bad reply: %s", why);
            return -1;
        }
        off += used;
        const resp_node_t *n = &r->nodes[0];
        if (idx < nc) {
            if (n->type == RESP_ERROR) {
                snprintf(msg, msglen, "%s failed: Redis answered %s", cmd_names[idx],
                         resp_error_describe(n));
                return -1;
            }
            continue;
        }
        if (idx + 1 < nreplies) { /* XLEN before XINFO GROUPS */
            if (n->type != RESP_INTEGER) {
                reply_error(msg, msglen, "XLEN", n);
                return -1;
            }
            if (n->integer < 0) {
                snprintf(msg, msglen, "XLEN (key not shown): Redis answered %lld, not a length",
                         (long long)n->integer);
                return -1;
            }
            xlen = n->integer;
            continue;
        }
        double v;
        if (read_queue(p, r, xlen, &v, msg, msglen) != 0)
            return -1;
        memset(out, 0, sizeof *out);
        out->queue = v;
    }
    return 0;
}

static int redis_configure(const source_target_t *t, source_params_t *p, bool *tls, char *name,
                           size_t namelen, char *err, size_t errlen) {
    const demand_config_t *d = &t->c->demand;
    (void)err, (void)errlen;      /* nothing here can fail */
    demand_queue_url(d, &p->url); /* parsed and checked with the config */
    p->kind = SOURCE_KIND_REDIS;
    *tls = d->redis_tls;
    p->db = d->redis_db;
    p->qkind = d->queue;
    p->measure = d->stream_measure;
    snprintf(p->rkey, sizeof p->rkey, "%s", d->redis_key);
    snprintf(p->group, sizeof p->group, "%s", d->redis_group);
    snprintf(p->user, sizeof p->user, "%s", d->redis_username);
    snprintf(p->pass, sizeof p->pass, "%s", d->redis_password);
    snprintf(name, namelen, "redis %s %s %.200s%s%.100s", p->url.host_header,
             d->queue == QUEUE_REDIS_LIST ? "list" : "stream", d->redis_key,
             d->redis_group[0] ? " group " : "", d->redis_group);
    return 0;
}

static void redis_release(source_params_t *p) {
    explicit_bzero(p->pass, sizeof p->pass);
}

const source_backend_t source_backend_redis = {
    .name = "redis",
    .alpn = NULL,
    .configure = redis_configure,
    .release = redis_release,
    .request = redis_request,
    .complete = redis_complete,
    .parse = redis_parse,
};
