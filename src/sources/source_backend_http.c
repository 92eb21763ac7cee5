/*
 * source_backend_http.c - the HTTP scrape backend: serving-engine /metrics
 * (vLLM, Triton, TGI, SGLang) and generic Prometheus endpoints. One GET
 * with Connection: close per poll; the reply must be a 200 (redirects are
 * never followed: a redirect could point anywhere, past the SSRF guard), its
 * body is decoded (Content-Length, chunked or close-delimited) and parsed
 * by engine_metrics.c.
 */
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

static int http_complete(const source_params_t *p, source_scratch_t *sc, const char *buf,
                         size_t len, char *why, size_t whylen) {
    (void)p;
    (void)sc;
    http_resp_t r;
    size_t head;
    const char *reason = NULL;
    int rc = http_resp_parse_head(buf, len, &r, &head, &reason);
    if (rc == HTTP_RESP_INCOMPLETE)
        return 0;
    if (rc != HTTP_RESP_COMPLETE) {
        snprintf(why, whylen, "not an HTTP response: %s", reason ? reason : "?");
        return -1;
    }
    if (r.content_length >= 0 && !r.chunked)
        return len - head >= (uint64_t)r.content_length ? 1 : 0;
    return 0; /* chunked or close-delimited: Connection: close ends it */
}

typedef struct {
    char *p;
    size_t n, cap, max;
} body_t;

static int body_sink(const char *data, size_t len, void *ud) {
    body_t *b = ud;
    if (b->n + len > b->max)
        return 2;
    if (b->n + len > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 65536;
        while (cap < b->n + len)
            cap *= 2;
        char *np = realloc(b->p, cap);
        if (!np)
            return 1;
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, len);
    b->n += len;
    return 0;
}

/* The reading in a 200 reply's body text[0..tlen). */
static int read_body(const source_params_t *p, source_scratch_t *sc, const char *text, size_t tlen,
                     const char *content_type, source_reading_t *out, char *msg, size_t msglen) {
    prom_format_t fmt = prom_format_from_content_type(content_type);
    char why[300];
    if (p->kind == SOURCE_KIND_ENGINE) {
        engine_reading_t er;
        unsigned want = sc && sc->hists ? p->slo_mask : 0;
        if (engine_reading_parse_full(p->engine, p->model, p->lora_adapter, want, text, tlen, fmt,
                                      &er, want ? sc->hists : NULL, why, sizeof why) != 0) {
            snprintf(msg, msglen, "metrics (a %zu-byte body): %s", tlen, why);
            return -1;
        }
        memset(out, 0, sizeof *out);
        out->engine = er;
        return 0;
    }
    double sum;
    unsigned matched;
    if (demand_value_parse(p->prom, text, tlen, fmt, &sum, &matched, why, sizeof why) != 0) {
        snprintf(msg, msglen, "metrics (a %zu-byte body): %s", tlen, why);
        return -1;
    }
    if (matched == 0) {
        snprintf(msg, msglen,
                 "no sample of %s%s in the response (a missing metric is unknown, not 0)",
                 p->prom->demand_metric, p->prom->matcher_count ? " matching demandLabels" : "");
        return -1;
    }
    memset(out, 0, sizeof *out);
    out->queue = sum;
    return 0;
}

static int http_parse(const source_params_t *p, source_scratch_t *sc, const char *buf, size_t len,
                      bool eof, source_reading_t *out, char *msg, size_t msglen) {
    (void)sc;
    http_resp_t r;
    size_t head;
    const char *reason = NULL;
    int rc = http_resp_parse_head(buf, len, &r, &head, &reason);
    if (rc != HTTP_RESP_COMPLETE) {
        snprintf(msg, msglen, "%s",
                 rc == HTTP_RESP_INCOMPLETE ? "connection closed before the response headers"
                 : reason                   ? reason
                                            : "not an HTTP response");
        return -1;
    }
    if (r.status >= 300 && r.status < 400) {
        snprintf(msg, msglen,
                 "HTTP %d: redirects are not followed (a redirect could point anywhere); use "
                 "the final URL",
                 r.status);
        return -1;
    }
    if ((r.status == 401 || r.status == 403) && !p->auth_name) {
        snprintf(msg, msglen,
                 "HTTP %d (want 200): the endpoint wants credentials; set sourceAuth to a "
                 "--source-auth profile of the server (docs/configuration.md, \"Authenticated "
                 "scrapes\")",
                 r.status);
        return -1;
    }
    if (r.status == 401 || r.status == 403) {
        snprintf(msg, msglen, "HTTP %d (want 200): the credentials of sourceAuth %s were %s (%s)",
                 r.status, p->auth_name,
                 r.status == 401 ? "not accepted" : "accepted but not allowed",
                 r.status == 401 ? "a wrong or expired token, or a client certificate the "
                                   "server does not trust"
                                 : "for an endpoint behind Kubernetes authorization, such as "
                                   "an EPP's, the token's service account needs get on the "
                                   "nonResourceURL /metrics");
        return -1;
    }
    if (r.status == 502 || r.status == 503 || r.status == 504) {
        /* a Service's proxy, an ingress or a gateway with no ready server
         * behind it: what an engine URL answers while the workload is at
         * zero or its first replicas start */
        snprintf(msg, msglen, "HTTP %d (want 200): no server behind the address", r.status);
        return SOURCE_PARSE_NO_SERVER;
    }
    if (r.status != 200) {
        snprintf(msg, msglen, "HTTP %d (want 200)", r.status);
        return -1;
    }
    const char *text = buf + head;
    size_t tlen = len - head;
    body_t body = {.max = p->max_body_bytes};
    if (r.chunked) {
        http_resp_body_t dec;
        http_resp_body_init(&dec, &r);
        size_t used = 0;
        int brc = http_resp_body_feed(&dec, text, tlen, &used, body_sink, &body, &reason);
        if (brc == 0 && !dec.done)
            brc = -1, reason = eof ? "the chunked body was cut short" : "incomplete body";
        if (brc != 0) {
            snprintf(msg, msglen, "bad response body: %s",
                     brc == 1   ? "out of memory"
                     : brc == 2 ? "too large"
                                : reason);
            free(body.p);
            return -1;
        }
        text = body.p ? body.p : "";
        tlen = body.n;
    } else if (r.content_length >= 0) {
        if (tlen < (uint64_t)r.content_length) {
            snprintf(msg, msglen, "connection closed before the whole body (Content-Length)");
            return -1;
        }
        tlen = (size_t)r.content_length;
    }
    rc = read_body(p, sc, text, tlen, r.content_type, out, msg, msglen);
    free(body.p);
    return rc;
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
    .complete = http_complete,
    .parse = http_parse,
};
