/*
 * source_backend_redis.c - the Redis queue backend: one pipeline per poll,
 * [AUTH] [SELECT] then LLEN for a list, or XLEN [XINFO GROUPS] for a stream
 * (pending entries or consumer-group lag). Our own RESP2 client
 * (resp.c) rather than hiredis: Debian 12's hiredis has no TLS. Replies
 * are read as they arrive: resp_scan() goes on where the last read
 * stopped (a reply dripped 1 KiB at a time is checked once, not from its
 * first byte after every read), each whole reply is parsed once and its
 * bytes dropped.
 */
#include <stdio.h>
#include <stdlib.h>
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

/* One poll's replies: the bytes of the reply being read (each whole reply
 * is read, then dropped), and what the earlier ones said. */
struct source_reply {
    const source_params_t *p;
    source_scratch_t *sc;
    char *buf;
    size_t len, cap;
    resp_scan_t scan; /* the reply at buf[0..len), as far as it was checked */
    unsigned idx, n;  /* replies read, replies expected */
    int64_t xlen;     /* XLEN's answer, before XINFO GROUPS */
    double value;     /* the last reply's queue length */
    int failed;
};

static source_reply_t *redis_begin(const source_params_t *p, source_scratch_t *sc) {
    source_reply_t *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->p = p;
    r->sc = sc;
    r->n = redis_nreplies(p);
    r->xlen = -1;
    resp_scan_init(&r->scan);
    return r;
}

static void redis_end(source_reply_t *r) {
    if (!r)
        return;
    free(r->buf);
    free(r);
}

static size_t redis_held(const source_reply_t *r) {
    return sizeof *r + r->cap;
}

/* Reply number r->idx (whole, parsed into r->sc->resp): an AUTH or SELECT
 * that failed, XLEN's length, or the queue length. 0, or -1 with msg. */
static int redis_reply_read(source_reply_t *r, char *msg, size_t msglen) {
    const source_params_t *p = r->p;
    const resp_reply_t *rep = r->sc->resp;
    const resp_node_t *n = &rep->nodes[0];
    const char *cmd_names[2];
    unsigned nc = 0;
    if (p->pass[0])
        cmd_names[nc++] = "AUTH";
    if (p->db)
        cmd_names[nc++] = "SELECT";
    if (r->idx < nc) {
        if (n->type == RESP_ERROR) {
            snprintf(msg, msglen, "%s failed: Redis answered %s", cmd_names[r->idx],
                     resp_error_describe(n));
            return -1;
        }
        return 0;
    }
    if (r->idx + 1 < r->n) { /* XLEN before XINFO GROUPS */
        if (n->type != RESP_INTEGER) {
            reply_error(msg, msglen, "XLEN", n);
            return -1;
        }
        if (n->integer < 0) {
            snprintf(msg, msglen, "XLEN (key not shown): Redis answered %lld, not a length",
                     (long long)n->integer);
            return -1;
        }
        r->xlen = n->integer;
        return 0;
    }
    return read_queue(p, rep, r->xlen, &r->value, msg, msglen);
}

static int redis_feed(source_reply_t *r, const char *buf, size_t len, char *msg, size_t msglen) {
    if (r->failed)
        return r->failed;
    if (r->idx == r->n)
        return 1;
    if (len > SOURCE_REDIS_MAX_REPLY_BYTES - r->len) {
        snprintf(msg, msglen, "a reply larger than %u bytes: refused",
                 SOURCE_REDIS_MAX_REPLY_BYTES);
        return r->failed = -1;
    }
    if (r->len + len > r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 512;
        while (cap < r->len + len)
            cap *= 2;
        char *nb = realloc(r->buf, cap);
        if (!nb) {
            snprintf(msg, msglen, "out of memory");
            return r->failed = -1;
        }
        r->buf = nb;
        r->cap = cap;
    }
    memcpy(r->buf + r->len, buf, len);
    r->len += len;
    /* Every reply that is whole now: checked once (resp_scan goes on where
     * it stopped), parsed once, read, and its bytes dropped. */
    while (r->idx < r->n) {
        char why[300];
        size_t used;
        int rc = resp_scan(&r->scan, r->buf, r->len, &used, why, sizeof why);
        if (rc == RESP_INCOMPLETE)
            return 0;
        if (rc == RESP_COMPLETE)
            rc = resp_parse(r->buf, used, r->sc->resp, &used, why, sizeof why);
        if (rc != RESP_COMPLETE) {
            snprintf(msg, msglen, "bad reply: %s", why);
            return r->failed = -1;
        }
        if (redis_reply_read(r, msg, msglen) != 0)
            return r->failed = -1;
        r->idx++;
        memmove(r->buf, r->buf + used, r->len - used);
        r->len -= used;
        resp_scan_init(&r->scan);
    }
    return 1;
}

static int redis_finish(source_reply_t *r, bool eof, source_reading_t *out, char *msg,
                        size_t msglen) {
    (void)eof;
    if (r->failed)
        return r->failed;
    if (r->idx < r->n) {
        snprintf(msg, msglen, "connection closed before every reply arrived");
        return r->failed = -1;
    }
    memset(out, 0, sizeof *out);
    out->queue = r->value;
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
    .begin = redis_begin,
    .feed = redis_feed,
    .finish = redis_finish,
    .held = redis_held,
    .end = redis_end,
};
