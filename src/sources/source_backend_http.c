/*
 * source_backend_http.c - the HTTP scrape backend: serving-engine /metrics
 * (vLLM, Triton, TGI, SGLang) and generic Prometheus endpoints. One GET
 * with Connection: close per poll; the reply must be a 200 (redirects are
 * never followed: a redirect could point anywhere, past the SSRF guard), its
 * body is decoded (Content-Length, chunked or close-delimited) and parsed
 * as it arrives, line by line (prom_parse.h's stream), into
 * engine_metrics.c's scans: a poll holds its head until it is whole, then
 * one partial line, never the page.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/source_url.h"
#include "net/http_resp.h"
#include "sources/engine_metrics.h"
#include "sources/prom_parse.h"
#include "sources/source_backend.h"

static size_t http_request(const source_params_t *p, char *buf, size_t cap) {
    /* the token was checked when read: printable ASCII, no space, CR or LF */
    bool auth = p->bearer && p->bearer_len;
    int n = snprintf(buf, cap,
                     "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: keda-gpu-scaler\r\n"
                     "Accept: text/plain;version=0.0.4;q=1,*/*;q=0.1\r\n%s%.*s%s"
                     "Connection: close\r\n\r\n",
                     p->url.path[0] ? p->url.path : "/", p->url.host_header,
                     auth ? "Authorization: Bearer " : "", auth ? (int)p->bearer_len : 0,
                     auth ? p->bearer : "", auth ? "\r\n" : "");
    if (n < 0 || (size_t)n >= cap) {
        if (cap)
            explicit_bzero(buf, cap);
        return 0;
    }
    return (size_t)n;
}

/* One poll's reply: the head until it is whole, then the body decoded and
 * parsed line by line as it arrives (the page itself is never held). */
struct source_reply {
    const source_params_t *p;
    source_scratch_t *sc;
    char *head; /* the bytes before the head was whole (at most the head's limit + 1) */
    size_t hlen, hcap;
    bool head_done, done;
    http_resp_t r;
    http_resp_body_t dec; /* chunked */
    uint64_t left;        /* Content-Length: body bytes still to come */
    size_t body;          /* decoded body bytes so far */
    prom_stream_t *ps;
    engine_scan_t *es; /* ENGINE */
    demand_scan_t *ds; /* PROM */
    int failed;        /* a feed() failed: its value */
    char why[400];     /* a body bytes' sink failure */
};

static source_reply_t *http_begin(const source_params_t *p, source_scratch_t *sc) {
    source_reply_t *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->p = p;
    r->sc = sc;
    return r;
}

static void http_end(source_reply_t *r) {
    if (!r)
        return;
    free(r->head);
    prom_stream_free(r->ps);
    engine_scan_free(r->es);
    demand_scan_free(r->ds);
    free(r);
}

static size_t http_held(const source_reply_t *r) {
    return sizeof *r + r->hcap + (r->ps ? prom_stream_held(r->ps) : 0) +
           (r->es ? engine_scan_bytes() : 0) + (r->ds ? demand_scan_bytes() : 0);
}

static int fail(source_reply_t *r, int rc, char *msg, size_t msglen, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int fail(source_reply_t *r, int rc, char *msg, size_t msglen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, msglen, fmt, ap);
    va_end(ap);
    r->failed = rc;
    return rc;
}

/* A 200's head: what the status says, or the page's reader set up. */
static int head_status(source_reply_t *r, char *msg, size_t msglen) {
    const source_params_t *p = r->p;
    int st = r->r.status;
    if (st >= 300 && st < 400)
        return fail(r, -1, msg, msglen,
                    "HTTP %d: redirects are not followed (a redirect could point anywhere); use "
                    "the final URL",
                    st);
    if ((st == 401 || st == 403) && !p->auth_name)
        return fail(r, -1, msg, msglen,
                    "HTTP %d (want 200): the endpoint wants credentials; set sourceAuth to a "
                    "--source-auth profile of the server (docs/configuration.md, \"Authenticated "
                    "scrapes\")",
                    st);
    if (st == 401 || st == 403)
        return fail(r, -1, msg, msglen,
                    "HTTP %d (want 200): the credentials of sourceAuth %s were %s (%s)", st,
                    p->auth_name, st == 401 ? "not accepted" : "accepted but not allowed",
                    st == 401 ? "a wrong or expired token, or a client certificate the "
                                "server does not trust"
                              : "for an endpoint behind Kubernetes authorization, such as "
                                "an EPP's, the token's service account needs get on the "
                                "nonResourceURL /metrics");
    /* a Service's proxy, an ingress or a gateway with no ready server
     * behind it: what an engine URL answers while the workload is at zero
     * or its first replicas start */
    if (st == 502 || st == 503 || st == 504)
        return fail(r, SOURCE_PARSE_NO_SERVER, msg, msglen,
                    "HTTP %d (want 200): no server behind the address", st);
    if (st != 200)
        return fail(r, -1, msg, msglen, "HTTP %d (want 200)", st);
    prom_format_t fmt = prom_format_from_content_type(r->r.content_type);
    if (p->kind == SOURCE_KIND_ENGINE) {
        unsigned want = r->sc && r->sc->hists ? p->slo_mask : 0;
        r->es = engine_scan_new(p->engine, p->model, p->lora_adapter, want, want != 0);
        r->ps =
            r->es ? prom_stream_new(fmt, SOURCE_MAX_LINE_BYTES, engine_scan_sample, r->es) : NULL;
    } else {
        r->ds = demand_scan_new(p->prom);
        r->ps =
            r->ds ? prom_stream_new(fmt, SOURCE_MAX_LINE_BYTES, demand_scan_sample, r->ds) : NULL;
    }
    if (!r->ps)
        return fail(r, -1, msg, msglen, "out of memory");
    http_resp_body_init(&r->dec, &r->r);
    r->left = r->r.content_length >= 0 ? (uint64_t)r->r.content_length : 0;
    r->done = r->r.chunked ? r->dec.done : r->r.content_length == 0;
    return 0;
}

/* Decoded body bytes into the page's parser. */
static int body_sink(const char *data, size_t len, void *ud) {
    source_reply_t *r = ud;
    if (len > r->p->max_body_bytes - r->body) {
        snprintf(r->why, sizeof r->why, "bad response body: too large");
        return 2;
    }
    r->body += len;
    char why[300];
    int rc = prom_stream_feed(r->ps, data, len, why, sizeof why);
    if (rc != 0) {
        const char *sample_why = r->es ? engine_scan_error(r->es) : demand_scan_error(r->ds);
        snprintf(r->why, sizeof r->why, "metrics: %s", why[0] ? why : sample_why);
        return 3;
    }
    return 0;
}

static int body_feed(source_reply_t *r, const char *buf, size_t len, char *msg, size_t msglen) {
    if (r->r.chunked) {
        size_t used = 0;
        const char *reason = NULL;
        int brc = http_resp_body_feed(&r->dec, buf, len, &used, body_sink, r, &reason);
        if (brc == 2 || brc == 3)
            return fail(r, -1, msg, msglen, "%s", r->why);
        if (brc != 0)
            return fail(r, -1, msg, msglen, "bad response body: %s", reason ? reason : "?");
        r->done = r->dec.done;
        return r->done;
    }
    if (r->r.content_length >= 0) {
        if (len > r->left)
            len = (size_t)r->left;
        r->left -= len;
        r->done = r->left == 0;
    }
    if (len && body_sink(buf, len, r) != 0)
        return fail(r, -1, msg, msglen, "%s", r->why);
    return r->done;
}

static int http_feed(source_reply_t *r, const char *buf, size_t len, char *msg, size_t msglen) {
    if (r->failed)
        return fail(r, r->failed, msg, msglen, "%s", "the reply failed already");
    if (r->done)
        return 1;
    if (r->head_done)
        return body_feed(r, buf, len, msg, msglen);
    /* The head, kept until it is whole: at most its limit and a byte. */
    size_t room = HTTP_RESP_MAX_HEAD_BYTES + 1 - r->hlen, take = len < room ? len : room;
    if (r->hlen + take > r->hcap) {
        size_t cap = r->hcap ? r->hcap * 2 : 1024;
        while (cap < r->hlen + take)
            cap *= 2;
        char *nh = realloc(r->head, cap);
        if (!nh)
            return fail(r, -1, msg, msglen, "out of memory");
        r->head = nh;
        r->hcap = cap;
    }
    memcpy(r->head + r->hlen, buf, take);
    r->hlen += take;
    size_t head;
    const char *reason = NULL;
    int rc = http_resp_parse_head(r->head, r->hlen, &r->r, &head, &reason);
    if (rc == HTTP_RESP_INCOMPLETE)
        return 0;
    if (rc != HTTP_RESP_COMPLETE)
        return fail(r, -1, msg, msglen, "not an HTTP response: %s", reason ? reason : "?");
    r->head_done = true;
    if ((rc = head_status(r, msg, msglen)) != 0)
        return rc;
    /* the body: what the head's bytes held past it, then the rest of buf */
    rc = r->hlen > head ? body_feed(r, r->head + head, r->hlen - head, msg, msglen) : r->done;
    free(r->head);
    r->head = NULL;
    r->hlen = r->hcap = 0;
    if (rc != 0 || take == len)
        return rc;
    return body_feed(r, buf + take, len - take, msg, msglen);
}

static int http_finish(source_reply_t *r, bool eof, source_reading_t *out, char *msg,
                       size_t msglen) {
    if (r->failed)
        return r->failed;
    if (!r->head_done)
        return fail(r, -1, msg, msglen, "connection closed before the response headers");
    if (!r->done && r->r.chunked)
        return fail(r, -1, msg, msglen, "bad response body: %s",
                    eof ? "the chunked body was cut short" : "incomplete body");
    if (!r->done && r->r.content_length >= 0)
        return fail(r, -1, msg, msglen, "connection closed before the whole body (Content-Length)");
    char why[300];
    int rc = prom_stream_end(r->ps, why, sizeof why);
    if (rc != 0) {
        const char *sample_why = r->es ? engine_scan_error(r->es) : demand_scan_error(r->ds);
        return fail(r, -1, msg, msglen, "metrics (a %zu-byte body): %s", r->body,
                    why[0] ? why : sample_why);
    }
    const source_params_t *p = r->p;
    if (r->es) {
        engine_reading_t er;
        unsigned want = r->sc && r->sc->hists ? p->slo_mask : 0;
        if (engine_scan_finish(r->es, &er, want ? r->sc->hists : NULL, why, sizeof why) != 0)
            return fail(r, -1, msg, msglen, "metrics (a %zu-byte body): %s", r->body, why);
        memset(out, 0, sizeof *out);
        out->engine = er;
        return 0;
    }
    double sum;
    unsigned matched;
    if (demand_scan_finish(r->ds, &sum, &matched, why, sizeof why) != 0)
        return fail(r, -1, msg, msglen, "metrics (a %zu-byte body): %s", r->body, why);
    if (matched == 0)
        return fail(r, -1, msg, msglen,
                    "no sample of %s%s in the response (a missing metric is unknown, not 0)",
                    p->prom->demand_metric, p->prom->matcher_count ? " matching demandLabels" : "");
    memset(out, 0, sizeof *out);
    out->queue = sum;
    return 0;
}

/* The trigger parsed and checked each of its URLs; only a pod's URL, built
 * from its IP when it is listed, is parsed here. */
static int http_configure(const source_target_t *t, source_params_t *p, bool *tls, char *name,
                          size_t namelen, char *err, size_t errlen) {
    const demand_config_t *d = &t->c->demand;
    if (t->kind == SOURCE_KIND_PROM) {
        demand_queue_url(d, &p->url);
        /* demand_value_parse() reads the metric and the matchers: only they
         * are copied, so no URL, key or password of the trigger is */
        demand_config_t *q = calloc(1, sizeof *q);
        if (!q)
            return kgs_seterr(err, errlen, KGS_ENOMEM, "out of memory");
        memcpy(q->demand_metric, d->demand_metric, sizeof d->demand_metric);
        q->matcher_count = d->matcher_count;
        memcpy(q->matchers, d->matchers, sizeof d->matchers);
        p->prom = q;
        p->owned = q;
        char shown[320];
        source_url_redact(d->demand_endpoint, strlen(d->demand_endpoint), shown, sizeof shown);
        snprintf(name, namelen, "queue %.300s (%.200s)", shown, d->demand_metric);
    } else {
        bool parsed = !t->pod && demand_endpoint_url(d, t->url, &p->url);
        unsigned allowed = (1u << SOURCE_SCHEME_HTTP) | (1u << SOURCE_SCHEME_HTTPS);
        int rc = parsed ? 0 : source_url_parse(t->url, allowed, &p->url, err, errlen);
        if (rc)
            return rc;
        p->engine = d->engine;
        snprintf(p->model, sizeof p->model, "%s", d->model);
        snprintf(p->lora_adapter, sizeof p->lora_adapter, "%s", d->lora_adapter);
        p->slo_mask = d->slo_mask;
        /* The name shows in messages and logs: no secret of the URL */
        char shown[TRIGGER_URL_MAX + 128];
        source_url_redact(t->url, strlen(t->url), shown, sizeof shown);
        if (t->pod)
            snprintf(name, namelen, "%s pod %s (%s)", engine_name(p->engine), t->pod, shown);
        else
            snprintf(name, namelen, "%s %s", engine_name(p->engine), shown);
    }
    p->kind = t->kind;
    *tls = p->url.scheme == SOURCE_SCHEME_HTTPS;
    return 0;
}

static void http_release(source_params_t *p) {
    free(p->owned);
    p->owned = NULL;
    p->prom = NULL;
}

const source_backend_t source_backend_http = {
    .name = "http",
    .alpn = "http/1.1",
    .configure = http_configure,
    .release = http_release,
    .request = http_request,
    .begin = http_begin,
    .feed = http_feed,
    .finish = http_finish,
    .held = http_held,
    .end = http_end,
};
