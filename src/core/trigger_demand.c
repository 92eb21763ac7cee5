/*
 * trigger_demand.c - the engine, queue, composite (metricType demand) and
 * forecast keys of a trigger: step 11 of trigger_config_parse(). Each key is
 * checked against the metric type it serves, so a key that would be ignored
 * is an error, like everywhere else in the trigger configuration.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "core/err.h"
#include "core/source_auth.h"
#include "core/trigger_config_internal.h"
#include "core/source_url.h"

/* ---- demand signals (engines, queues, composite) ------------------------------ */

/* 11. Engine, queue and composite keys. Each key is checked against the
 * metric type it serves, so a key that would be ignored is an error. */

static bool any_slot(const metadata_pair_t *slot[K_COUNT], const int *keys, size_t n, int *which) {
    for (size_t i = 0; i < n; i++)
        if (slot[keys[i]]) {
            *which = keys[i];
            return true;
        }
    return false;
}

/* Copies a value into dst (cap bytes with the NUL); false when too long or
 * holding a NUL, CR or LF (they would end a request line or header). */
static bool copy_plain(slice_t v, char *dst, size_t cap) {
    if (v.n == 0 || v.n >= cap)
        return false;
    for (size_t i = 0; i < v.n; i++)
        if (v.p[i] == '\0' || v.p[i] == '\r' || v.p[i] == '\n')
            return false;
    memcpy(dst, v.p, v.n);
    dst[v.n] = '\0';
    return true;
}

/* A comma list of engine URLs into c->demand.endpoints. */
static int parse_endpoints(const char *key, slice_t v, demand_config_t *d, trigger_problems_t *P) {
    char q[QBUF], why[1024], url[TRIGGER_URL_MAX]; /* why: any source_url message */
    size_t i = 0;
    d->endpoint_count = 0;
    while (i <= v.n) {
        size_t j = i;
        while (j < v.n && v.p[j] != ',')
            j++;
        size_t a = i, b = j;
        while (a < b && (v.p[a] == ' ' || v.p[a] == '\t'))
            a++;
        while (b > a && (v.p[b - 1] == ' ' || v.p[b - 1] == '\t'))
            b--;
        if (a == b)
            return tc_fail(P,
                           "invalid %s %s: an empty entry; give one or more URLs separated by "
                           "commas, e.g. \"http://vllm-0.vllm:8000/metrics\"",
                           key, source_url_quote(q, sizeof q, v.p, v.n));
        if (d->endpoint_count == TRIGGER_MAX_ENDPOINTS)
            return tc_fail(P,
                           "invalid %s: more than %d URLs; for more pods use podSelector "
                           "with the aggregator role",
                           key, TRIGGER_MAX_ENDPOINTS);
        if (b - a >= sizeof url || memchr(v.p + a, '\0', b - a))
            return tc_fail(P, "invalid %s %s: a URL longer than %d bytes", key,
                           source_url_quote(q, sizeof q, v.p + a, b - a), TRIGGER_URL_MAX - 1);
        memcpy(url, v.p + a, b - a);
        url[b - a] = '\0';
        /* The ref points into url's bytes, which endpoints[] keeps below. */
        source_url_ref_t *u = &d->endpoint_urls[d->endpoint_count];
        unsigned allowed = (1u << SOURCE_SCHEME_HTTP) | (1u << SOURCE_SCHEME_HTTPS);
        if (source_url_parse_ref(url, allowed, u, why, sizeof why) != 0)
            return tc_fail(P, "invalid %s %s: %s", key, source_url_quote(q, sizeof q, url, b - a),
                           why);
        for (unsigned k = 0; k < d->endpoint_count; k++)
            if (strcmp(d->endpoints[k], url) == 0)
                return tc_fail(P, "invalid %s: %s is listed twice (it would be counted twice)", key,
                               source_url_quote(q, sizeof q, url, b - a));
        memcpy(d->endpoints[d->endpoint_count++], url, b - a + 1);
        i = j + 1;
    }
    return 0;
}

/* demandLabels: name="value" or name!="value", comma separated; the value
 * in double quotes with \" and \\ escapes (PromQL matcher syntax, no regex). */
static int parse_matchers(slice_t v, demand_config_t *d, trigger_problems_t *P) {
    char q[QBUF];
    size_t i = 0;
    const char *what = "expected name=\"value\" or name!=\"value\", separated by commas";
    while (i < v.n) {
        while (i < v.n && (v.p[i] == ' ' || v.p[i] == ','))
            i++;
        if (i == v.n)
            break;
        if (d->matcher_count == TRIGGER_MAX_MATCHERS)
            return tc_fail(P, "invalid demandLabels: more than %d matchers", TRIGGER_MAX_MATCHERS);
        size_t s0 = i;
        while (i < v.n && (isalnum((unsigned char)v.p[i]) || v.p[i] == '_'))
            i++;
        size_t nlen = i - s0;
        if (nlen == 0 || nlen >= sizeof d->matchers[0].name || isdigit((unsigned char)v.p[s0]))
            return tc_fail(P, "invalid demandLabels %s: %s", kgs_quote(q, sizeof q, v.p, v.n),
                           what);
        bool negate = false;
        if (i < v.n && v.p[i] == '!') {
            negate = true;
            i++;
        }
        if (i + 1 >= v.n || v.p[i] != '=' || v.p[i + 1] != '"')
            return tc_fail(P, "invalid demandLabels %s: %s", kgs_quote(q, sizeof q, v.p, v.n),
                           what);
        i += 2;
        char *dst = d->matchers[d->matcher_count].value;
        size_t o = 0;
        bool closed = false;
        while (i < v.n) {
            char ch = v.p[i++];
            if (ch == '"') {
                closed = true;
                break;
            }
            if (ch == '\\' && i < v.n)
                ch = v.p[i++] == 'n' ? '\n' : v.p[i - 1];
            if (ch == '\0' || o + 1 >= sizeof d->matchers[0].value)
                return tc_fail(P, "invalid demandLabels %s: a value too long or holding a NUL",
                               kgs_quote(q, sizeof q, v.p, v.n));
            dst[o++] = ch;
        }
        if (!closed)
            return tc_fail(P, "invalid demandLabels %s: unterminated quoted value",
                           kgs_quote(q, sizeof q, v.p, v.n));
        dst[o] = '\0';
        memcpy(d->matchers[d->matcher_count].name, v.p + s0, nlen);
        d->matchers[d->matcher_count].name[nlen] = '\0';
        d->matchers[d->matcher_count].negate = negate;
        d->matcher_count++;
        while (i < v.n && v.p[i] == ' ')
            i++;
        if (i < v.n && v.p[i] != ',')
            return tc_fail(P, "invalid demandLabels %s: %s", kgs_quote(q, sizeof q, v.p, v.n),
                           what);
    }
    return 0;
}

static bool type_is_engine_only(demand_type_t t) {
    return (t >= DEMAND_VLLM_QUEUE_DEPTH && t <= DEMAND_ENGINE_KV_CACHE) ||
           t == DEMAND_ENGINE_PROMPT_TOKENS_RATE || t == DEMAND_ENGINE_GENERATION_TOKENS_RATE ||
           t == DEMAND_VLLM_LORA_WAITING_ENGINES;
}

static bool type_is_token_rate(demand_type_t t) {
    return t == DEMAND_ENGINE_PROMPT_TOKENS_RATE || t == DEMAND_ENGINE_GENERATION_TOKENS_RATE;
}

bool demand_uses_token_rates(const demand_config_t *d) {
    return type_is_token_rate(d->type) ||
           (d->type == DEMAND_COMPOSITE &&
            (d->target_prompt_tokens > 0 || d->target_generation_tokens > 0));
}

static bool engine_has_running(engine_t e) {
    return e != ENGINE_TRITON;
}

static bool engine_has_kv(engine_t e) {
    return e == ENGINE_VLLM || e == ENGINE_SGLANG || e == ENGINE_EPP;
}

/* Which engine the trigger reads, from engine, the endpoint key and the
 * metric type, into d->engine (ENGINE_NONE when none is needed); *ep_key:
 * the endpoint key given, or -1. KGS_EINVAL when it cannot be told (the
 * checks that depend on the engine are skipped then). */
static int pick_engine(const metadata_pair_t *slot[K_COUNT], trigger_config_t *c, bool needed,
                       int *ep_key, trigger_problems_t *P) {
    demand_config_t *d = &c->demand;
    const char *tname = tc_demand_names[d->type];
    int implied = ENGINE_NONE; /* from the metric type */
    if (d->type == DEMAND_VLLM_QUEUE_DEPTH || d->type == DEMAND_VLLM_KV_CACHE_USAGE ||
        d->type == DEMAND_VLLM_LORA_WAITING_ENGINES)
        implied = ENGINE_VLLM;
    if (d->type == DEMAND_TRITON_QUEUE_WAIT_MS || d->type == DEMAND_TRITON_REQUEST_RATE)
        implied = ENGINE_TRITON;

    int nkeys = 0;
    *ep_key = -1;
    for (int k = K_VLLM_ENDPOINT; k <= K_ENGINE_ENDPOINT; k++)
        if (slot[k]) {
            *ep_key = k;
            nkeys++;
        }
    static const int engine_keys[] = {
        K_VLLM_ENDPOINT, K_TRITON_ENDPOINT, K_ENGINE_ENDPOINT, K_ENGINE, K_ENGINE_PORT,
        K_ENGINE_PATH,   K_ENGINE_SCHEME,   K_MODEL,           K_WINDOW, K_LORA_ADAPTER};
    int which;
    if (!needed) {
        if (any_slot(slot, engine_keys, sizeof engine_keys / sizeof *engine_keys, &which))
            tc_fail(P,
                    "%s is set, but metricType %s reads no serving engine; engine keys apply to "
                    "vllm_*, triton_*, engine_* and demand",
                    tc_keys[which].name, tname[0] ? tname : tc_metric_names[c->metric_type]);
        return 0;
    }
    int rc = 0;
    if (nkeys > 1)
        rc = tc_fail(P, "more than one of vllmEndpoint, tritonEndpoint and engineEndpoint is "
                        "set: one trigger reads one kind of engine; give one of them");
    int by_key = *ep_key == K_VLLM_ENDPOINT     ? ENGINE_VLLM
                 : *ep_key == K_TRITON_ENDPOINT ? ENGINE_TRITON
                                                : ENGINE_NONE;
    int named = ENGINE_NONE;
    if (slot[K_ENGINE]) {
        if (tc_key_enum(K_ENGINE, tc_value_of(slot[K_ENGINE]), &named, P) != 0)
            return KGS_EINVAL;
        named++;
    }
    int e = named ? named : by_key ? by_key : implied;
    if (named && by_key && named != by_key)
        rc = tc_fail(P, "engine is \"%s\" but %s is set (a %s URL)", tc_engine_names[named],
                     tc_keys[*ep_key].name, tc_engine_names[by_key]);
    if (implied && e != implied)
        rc = tc_fail(P,
                     "metricType %s reads %s, but engine is \"%s\"; for any engine use "
                     "engine_queue, engine_running or engine_kv_cache",
                     tname, tc_engine_names[implied], tc_engine_names[e]);
    if (e == ENGINE_NONE)
        return tc_fail(P,
                       "metricType %s needs the serving engine: set engine (vllm, triton, tgi, "
                       "sglang or epp), or vllmEndpoint / tritonEndpoint",
                       tname);
    if (rc)
        return rc;
    d->engine = (engine_t)e;
    return 0;
}

/* Where and how the engine is scraped: the endpoint URLs, or podSelector's
 * pods with enginePort, enginePath and engineScheme; and model. */
static void engine_where(const metadata_pair_t *slot[K_COUNT], trigger_config_t *c, int ep_key,
                         trigger_problems_t *P) {
    char q[QBUF];
    demand_config_t *d = &c->demand;
    engine_t e = d->engine;
    slice_t v;
    int which;
    /* The queueing model counts replicas from podSelector's pods and learns
     * from completed-request counters: for epp the pods are the EPP's, not
     * the model servers, and the EPP exports neither. */
    if (e == ENGINE_EPP && d->type == DEMAND_COMPOSITE && d->sizing == DEMAND_MODEL_QUEUEING)
        tc_fail(P, "demandModel queueing does not work with engine epp: it counts replicas from "
                   "podSelector's pods, which for epp are the EPP pods, not the model servers; "
                   "set demandModel: composite with targetQueuePerReplica (requests waiting at "
                   "the gateway and in the model servers), targetRunningPerReplica or "
                   "targetKvCache");
    if (ep_key >= 0) {
        parse_endpoints(tc_keys[ep_key].name, tc_value_of(slot[ep_key]), d, P);
        static const int pod_keys[] = {K_ENGINE_PORT, K_ENGINE_PATH, K_ENGINE_SCHEME};
        if (any_slot(slot, pod_keys, 3, &which))
            tc_fail(P,
                    "%s is set together with %s: it applies to the pods of podSelector; put the "
                    "port, path and scheme in the URLs instead",
                    tc_keys[which].name, tc_keys[ep_key].name);
    } else if (!slot[K_POD_SELECTOR]) {
        tc_fail(P,
                "metricType %s needs where to scrape %s: %s (a comma list of metrics URLs), or "
                "podSelector with the aggregator role (every selected pod is scraped)",
                tc_demand_names[d->type], tc_engine_names[e],
                e == ENGINE_VLLM     ? "vllmEndpoint"
                : e == ENGINE_TRITON ? "tritonEndpoint"
                                     : "engineEndpoint");
    }
    /* in engine_t order; the EPP's metrics port is 9090 (its --metrics-port) */
    static const uint16_t default_ports[ENGINE_EPP + 1] = {0, 8000, 8002, 80, 30000, 9090};
    d->engine_port = default_ports[e];
    strcpy(d->engine_path, "/metrics");
    long long port;
    if (slot[K_ENGINE_PORT] &&
        tc_key_int(K_ENGINE_PORT, tc_value_of(slot[K_ENGINE_PORT]), &port, P) == 0)
        d->engine_port = (uint16_t)port;
    if (slot[K_ENGINE_PATH]) {
        v = tc_value_of(slot[K_ENGINE_PATH]);
        bool ok = v.n > 0 && v.p[0] == '/' && v.n < sizeof d->engine_path;
        for (size_t i = 0; ok && i < v.n; i++)
            ok = (unsigned char)v.p[i] > ' ' && (unsigned char)v.p[i] < 0x7f && v.p[i] != '#';
        if (!ok) {
            tc_fail(P,
                    "invalid enginePath %s: must start with '/' and hold no spaces, control "
                    "bytes or '#', e.g. \"/metrics\"",
                    source_url_quote(q, sizeof q, v.p, v.n));
        } else {
            memcpy(d->engine_path, v.p, v.n);
            d->engine_path[v.n] = '\0';
        }
    }
    int sch = 0;
    if (slot[K_ENGINE_SCHEME] &&
        tc_key_enum(K_ENGINE_SCHEME, tc_value_of(slot[K_ENGINE_SCHEME]), &sch, P) == 0)
        d->engine_https = sch == 1;
    if (slot[K_MODEL]) {
        v = tc_value_of(slot[K_MODEL]);
        if (e == ENGINE_TGI)
            tc_fail(P, "model is set, but TGI serves one model per server and its metrics carry "
                       "no model label; drop model");
        else if (!copy_plain(v, d->model, sizeof d->model))
            tc_fail(P, "invalid model %s: must be 1-255 bytes without control characters",
                    kgs_quote(q, sizeof q, v.p, v.n));
    }
}

/* What the engine must export for the metric type: windowSeconds, the
 * running and KV-cache gauges, token counters, loraAdapter. */
static void engine_what(const metadata_pair_t *slot[K_COUNT], trigger_config_t *c,
                        trigger_problems_t *P) {
    char q[QBUF];
    demand_config_t *d = &c->demand;
    const char *tname = tc_demand_names[d->type];
    bool rate = d->type == DEMAND_TRITON_QUEUE_WAIT_MS || d->type == DEMAND_TRITON_REQUEST_RATE ||
                demand_uses_token_rates(d) || slot[K_TARGET_PROMPT_TOKENS] ||
                slot[K_TARGET_GEN_TOKENS];
    d->window_s = 30;
    long long w;
    bool slo_given = false;
    for (int k = K_TTFT_P50; k <= K_ITL_P99; k++)
        slo_given |= slot[k] != NULL;
    if (slot[K_WINDOW] && !rate && !slo_given)
        tc_fail(P,
                "windowSeconds is set, but metricType %s is not a rate and has no latency "
                "target; it applies to triton_queue_wait_ms, triton_request_rate, "
                "engine_prompt_tokens_rate, engine_generation_tokens_rate, demand with "
                "targetPromptTokensPerReplica or targetGenerationTokensPerReplica, and latency "
                "objectives (slo, or *Target keys on demand)",
                tname);
    else if (slot[K_WINDOW] && tc_key_int(K_WINDOW, tc_value_of(slot[K_WINDOW]), &w, P) == 0)
        d->window_s = (unsigned)w;
    if (d->type == DEMAND_ENGINE_RUNNING && !engine_has_running(d->engine))
        tc_fail(P, "metricType engine_running: Triton exports no requests-in-flight gauge; use "
                   "triton_request_rate or engine_queue");
    if (demand_uses_token_rates(d) && (d->engine == ENGINE_TRITON || d->engine == ENGINE_EPP))
        tc_fail(P,
                d->engine == ENGINE_TRITON
                    ? "%s: Triton exports no prompt or generation token counters; token rates "
                      "exist for vllm, tgi and sglang"
                    : "%s: engine epp is read for its queues and pool gauges, not for token "
                      "counters; token rates exist for vllm, tgi and sglang: scrape the model "
                      "servers with their engine",
                type_is_token_rate(d->type)   ? tname
                : d->target_prompt_tokens > 0 ? "targetPromptTokensPerReplica"
                                              : "targetGenerationTokensPerReplica");
    if (slot[K_LORA_ADAPTER] && d->type != DEMAND_VLLM_LORA_WAITING_ENGINES)
        tc_fail(P,
                "loraAdapter is set, but metricType is %s; it applies to "
                "vllm_lora_waiting_engines",
                tname);
    if (d->type == DEMAND_VLLM_LORA_WAITING_ENGINES) {
        if (!slot[K_LORA_ADAPTER]) {
            tc_fail(P, "metricType vllm_lora_waiting_engines needs loraAdapter: the name of the "
                       "LoRA adapter (as requests name it in \"model\", e.g. \"sql-lora\")");
        } else {
            slice_t v = tc_value_of(slot[K_LORA_ADAPTER]);
            /* vLLM joins the names with ','; a name holding one could never match */
            bool ok = copy_plain(v, d->lora_adapter, sizeof d->lora_adapter) &&
                      !memchr(v.p, ',', v.n) && !memchr(v.p, '"', v.n);
            if (!ok) {
                d->lora_adapter[0] = '\0';
                tc_fail(P,
                        "invalid loraAdapter %s: must be 1-255 bytes without control "
                        "characters, ',' or '\"' (an adapter name as vLLM lists it)",
                        kgs_quote(q, sizeof q, v.p, v.n));
            }
        }
    }
    if (d->type == DEMAND_ENGINE_KV_CACHE && !engine_has_kv(d->engine))
        tc_fail(P,
                "metricType engine_kv_cache: %s exports no KV-cache usage; it exists for vllm, "
                "sglang and epp",
                tc_engine_names[d->engine]);
}

/* The serving engine: which one, where, and what it must export. 0, or
 * KGS_EINVAL when which engine could not be told. */
static int resolve_engine(const metadata_pair_t *slot[K_COUNT], trigger_config_t *c, bool needed,
                          trigger_problems_t *P) {
    int ep_key = -1;
    if (pick_engine(slot, c, needed, &ep_key, P) != 0)
        return KGS_EINVAL;
    if (!needed)
        return 0;
    engine_where(slot, c, ep_key, P);
    engine_what(slot, c, P);
    return 0;
}

/* redisAddress and its keys (a Redis list or stream). */
static void resolve_redis(const metadata_pair_t *slot[K_COUNT], demand_config_t *d, int which,
                          trigger_problems_t *P) {
    char q[QBUF];
    slice_t v;
    if (!slot[K_REDIS_ADDRESS]) {
        tc_fail(P, "%s is set without redisAddress (host:port, e.g. \"redis.queues:6379\")",
                tc_keys[which].name);
    } else {
        v = tc_value_of(slot[K_REDIS_ADDRESS]);
        char addr[TRIGGER_URL_MAX], why[1024]; /* any source_url message */
        bool tls = false;
        int db = 0;
        if (!copy_plain(v, addr, sizeof addr)) {
            tc_fail(P, "invalid redisAddress %s", source_url_quote(q, sizeof q, v.p, v.n));
        } else if (source_addr_parse_ref(addr, &d->queue_url, &tls, &db, why, sizeof why) != 0) {
            tc_fail(P, "invalid redisAddress %s: %s", source_url_quote(q, sizeof q, v.p, v.n), why);
        } else {
            strcpy(d->redis_address, addr);
            d->redis_tls = tls;
            d->redis_db = db;
        }
    }
    if (slot[K_REDIS_LIST] && slot[K_REDIS_STREAM])
        tc_fail(P, "redisListName and redisStream are both set: give the list or the stream");
    if (slot[K_REDIS_ADDRESS] && !slot[K_REDIS_LIST] && !slot[K_REDIS_STREAM])
        tc_fail(P, "redisAddress is set without redisListName or redisStream: which key holds "
                   "the queue?");
    int kk = slot[K_REDIS_LIST] ? K_REDIS_LIST : K_REDIS_STREAM;
    if (slot[kk]) {
        v = tc_value_of(slot[kk]);
        if (v.n == 0 || v.n >= sizeof d->redis_key) {
            tc_fail(P, "invalid %s %s: must be 1-511 bytes", tc_keys[kk].name,
                    kgs_quote(q, sizeof q, v.p, v.n));
        } else {
            memcpy(d->redis_key, v.p, v.n);
            d->redis_key[v.n] = '\0';
        }
    }
    /* list or stream, when one of them alone is given: the group and measure
     * keys are checked against it (neither or both is reported above) */
    bool stream = slot[K_REDIS_STREAM] && !slot[K_REDIS_LIST];
    bool list = slot[K_REDIS_LIST] && !slot[K_REDIS_STREAM];
    if (slot[K_REDIS_GROUP]) {
        v = tc_value_of(slot[K_REDIS_GROUP]);
        if (list)
            tc_fail(P, "redisConsumerGroup is set with redisListName: consumer groups exist on "
                       "streams (redisStream)");
        else if (stream && !copy_plain(v, d->redis_group, sizeof d->redis_group))
            tc_fail(P, "invalid redisConsumerGroup %s: must be 1-255 bytes",
                    kgs_quote(q, sizeof q, v.p, v.n));
    }
    d->stream_measure = slot[K_REDIS_GROUP] ? STREAM_MEASURE_LAG : STREAM_MEASURE_LENGTH;
    int m = 0;
    if (slot[K_REDIS_MEASURE]) {
        if (list)
            tc_fail(P, "redisStreamMeasure is set with redisListName: it applies to streams");
        else if (stream &&
                 tc_key_enum(K_REDIS_MEASURE, tc_value_of(slot[K_REDIS_MEASURE]), &m, P) == 0) {
            d->stream_measure = (stream_measure_t)m;
            if (d->stream_measure != STREAM_MEASURE_LENGTH && !slot[K_REDIS_GROUP])
                tc_fail(P,
                        "redisStreamMeasure %s needs redisConsumerGroup (lag and pending are "
                        "per consumer group)",
                        tc_keys[K_REDIS_MEASURE].values[m]);
        }
    }
    long long db2;
    if (slot[K_REDIS_DB] && tc_key_int(K_REDIS_DB, tc_value_of(slot[K_REDIS_DB]), &db2, P) == 0)
        d->redis_db = (int)db2;
    bool t = false;
    if (slot[K_REDIS_TLS] && tc_key_bool(K_REDIS_TLS, tc_value_of(slot[K_REDIS_TLS]), &t, P) == 0) {
        if (d->redis_tls && !t)
            tc_fail(P, "redisTLS is false but redisAddress is a rediss:// URL");
        d->redis_tls = t;
    }
    if (slot[K_REDIS_USER]) {
        v = tc_value_of(slot[K_REDIS_USER]);
        if (!copy_plain(v, d->redis_username, sizeof d->redis_username))
            tc_fail(P, "invalid redisUsernameFromEnv: the resolved value must be 1-255 bytes "
                       "without control characters");
    }
    if (slot[K_REDIS_PASS]) {
        v = tc_value_of(slot[K_REDIS_PASS]);
        /* The value is a secret (KEDA resolved it): never quote it. */
        if (v.n == 0 || v.n >= sizeof d->redis_password || memchr(v.p, '\0', v.n)) {
            tc_fail(P, "invalid redisPasswordFromEnv: the resolved value must be 1-511 bytes "
                       "(value not shown)");
        } else {
            memcpy(d->redis_password, v.p, v.n);
            d->redis_password[v.n] = '\0';
        }
    }
    if (slot[K_REDIS_USER] && !slot[K_REDIS_PASS])
        tc_fail(P, "redisUsernameFromEnv is set without redisPasswordFromEnv: Redis ACL users "
                   "log in with both");
    if (slot[K_REDIS_ADDRESS] && (slot[K_REDIS_LIST] || slot[K_REDIS_STREAM]))
        d->queue = stream ? QUEUE_REDIS_STREAM : QUEUE_REDIS_LIST;
}

/* demandEndpoint, demandMetric and demandLabels (a Prometheus queue). */
static void resolve_prom(const metadata_pair_t *slot[K_COUNT], demand_config_t *d,
                         trigger_problems_t *P) {
    char q[QBUF], why[1024]; /* any source_url message */
    slice_t v;
    if (!slot[K_DEMAND_ENDPOINT] || !slot[K_DEMAND_METRIC])
        tc_fail(P,
                "a Prometheus queue needs demandEndpoint (a metrics URL) and demandMetric (the "
                "sample name)%s",
                slot[K_DEMAND_ENDPOINT] ? ": demandMetric is missing"
                : slot[K_DEMAND_METRIC] ? ": demandEndpoint is missing"
                                        : ": both are missing");
    if (slot[K_DEMAND_ENDPOINT]) {
        v = tc_value_of(slot[K_DEMAND_ENDPOINT]);
        if (!copy_plain(v, d->demand_endpoint, sizeof d->demand_endpoint))
            tc_fail(P, "invalid demandEndpoint %s", source_url_quote(q, sizeof q, v.p, v.n));
        else if (source_url_parse_ref(d->demand_endpoint,
                                      (1u << SOURCE_SCHEME_HTTP) | (1u << SOURCE_SCHEME_HTTPS),
                                      &d->queue_url, why, sizeof why) != 0)
            tc_fail(P, "invalid demandEndpoint %s: %s", source_url_quote(q, sizeof q, v.p, v.n),
                    why);
    }
    if (slot[K_DEMAND_METRIC]) {
        v = tc_value_of(slot[K_DEMAND_METRIC]);
        bool ok = v.n > 0 && v.n < sizeof d->demand_metric &&
                  (isalpha((unsigned char)v.p[0]) || v.p[0] == '_' || v.p[0] == ':');
        for (size_t i = 0; ok && i < v.n; i++)
            ok = isalnum((unsigned char)v.p[i]) || v.p[i] == '_' || v.p[i] == ':';
        if (!ok) {
            tc_fail(P,
                    "invalid demandMetric %s: must be a Prometheus metric name "
                    "[a-zA-Z_:][a-zA-Z0-9_:]*",
                    kgs_quote(q, sizeof q, v.p, v.n));
        } else {
            memcpy(d->demand_metric, v.p, v.n);
            d->demand_metric[v.n] = '\0';
        }
    }
    if (slot[K_DEMAND_LABELS])
        parse_matchers(tc_value_of(slot[K_DEMAND_LABELS]), d, P);
    if (slot[K_DEMAND_ENDPOINT] && slot[K_DEMAND_METRIC])
        d->queue = QUEUE_PROMETHEUS;
}

/* The queue (Redis or Prometheus). 0, or KGS_EINVAL when which queue could
 * not be told. */
static int resolve_queue(const metadata_pair_t *slot[K_COUNT], trigger_config_t *c, bool allowed,
                         trigger_problems_t *P) {
    demand_config_t *d = &c->demand;
    int which, which2;
    static const int redis_keys[] = {K_REDIS_ADDRESS, K_REDIS_LIST,    K_REDIS_STREAM,
                                     K_REDIS_GROUP,   K_REDIS_MEASURE, K_REDIS_DB,
                                     K_REDIS_TLS,     K_REDIS_USER,    K_REDIS_PASS};
    static const int prom_keys[] = {K_DEMAND_ENDPOINT, K_DEMAND_METRIC, K_DEMAND_LABELS};
    bool any_redis = any_slot(slot, redis_keys, 9, &which);
    bool any_prom = any_slot(slot, prom_keys, 3, &which2);
    if (!allowed && (any_redis || any_prom))
        return tc_fail(P,
                       "%s is set, but metricType %s reads no queue; queue keys apply to "
                       "queue_length and demand",
                       tc_keys[any_redis ? which : which2].name,
                       d->type ? tc_demand_names[d->type] : tc_metric_names[c->metric_type]);
    if (any_redis && any_prom)
        return tc_fail(P,
                       "both a Redis queue (%s) and a Prometheus queue (%s) are set: one trigger "
                       "reads one queue; use two triggers",
                       tc_keys[which].name, tc_keys[which2].name);
    if (any_redis)
        resolve_redis(slot, d, which, P);
    if (any_prom)
        resolve_prom(slot, d, P);
    return 0;
}

/* The keys of demandModel composite and queueing, on a trigger that is not
 * metricType demand: the first one named. */
static void refuse_demand_keys(const metadata_pair_t *slot[K_COUNT], const trigger_config_t *c,
                               trigger_problems_t *P) {
    static const int comp_keys[] = {K_TARGET_QUEUE,      K_TARGET_RUNNING,   K_TARGET_KV,
                                    K_TARGET_GPU,        K_GPU_METRIC_TYPE,  K_ACTIVATION_QUEUE,
                                    K_ACTIVATION_GPU,    K_DEMAND_MODEL,     K_TARGET_UTILIZATION,
                                    K_DRAIN_SECONDS,     K_CAPACITY,         K_TARGET_PROMPT_TOKENS,
                                    K_TARGET_GEN_TOKENS, K_TARGET_SATURATION};
    demand_type_t t = c->demand.type;
    int which;
    if (any_slot(slot, comp_keys, sizeof comp_keys / sizeof *comp_keys, &which))
        tc_fail(P,
                "%s is set, but it applies to metricType demand (one trigger sizing the fleet "
                "from queue, engine and GPU signals); metricType is %s",
                tc_keys[which].name, t ? tc_demand_names[t] : tc_metric_names[c->metric_type]);
}

static const int tkeys[] = {K_TARGET_QUEUE,     K_TARGET_RUNNING,       K_TARGET_KV,
                            K_TARGET_GPU,       K_TARGET_PROMPT_TOKENS, K_TARGET_GEN_TOKENS,
                            K_TARGET_SATURATION};
#define NTKEYS ((int)(sizeof tkeys / sizeof *tkeys))

/* metricType demand: which model, and the keys of each. */
static void demand_model(const metadata_pair_t *slot[K_COUNT], trigger_config_t *c, bool any_slo,
                         trigger_problems_t *P) {
    demand_config_t *d = &c->demand;
    int which, target_key = -1;
    bool has_target = any_slot(slot, tkeys, (size_t)NTKEYS, &target_key);
    int model = has_target ? DEMAND_MODEL_COMPOSITE : DEMAND_MODEL_QUEUEING;
    /* an unknown demandModel: the checks of which keys go with which model
     * wait for it (the default model is assumed for the rest) */
    bool model_known =
        !slot[K_DEMAND_MODEL] ||
        tc_key_enum(K_DEMAND_MODEL, tc_value_of(slot[K_DEMAND_MODEL]), &model, P) == 0;
    d->sizing = (demand_model_t)model;
    bool queueing = d->sizing == DEMAND_MODEL_QUEUEING;
    if (model_known && queueing && has_target)
        tc_fail(P,
                "%s is a per-signal target of demandModel: composite, but demandModel is "
                "queueing, which learns what one replica can do; drop %s, or set demandModel: "
                "composite",
                tc_keys[target_key].name, tc_keys[target_key].name);
    static const int qkeys[] = {K_TARGET_UTILIZATION, K_DRAIN_SECONDS, K_CAPACITY};
    if (model_known && !queueing && any_slot(slot, qkeys, 3, &which))
        tc_fail(P,
                "%s is a key of demandModel: queueing, but demandModel is composite%s; drop %s, "
                "or drop the per-signal targets to use the queueing model",
                tc_keys[which].name, slot[K_DEMAND_MODEL] ? "" : " (a per-signal target is set)",
                tc_keys[which].name);
    if (slot[K_TARGET_VALUE] || slot[K_TARGET_GPU_UTIL] || slot[K_TARGET_MEM_UTIL])
        tc_fail(P,
                queueing ? "metricType demand reports replicas needed x 100 against a fixed "
                           "target of 100; the queueing model sizes the fleet itself (tune it "
                           "with targetUtilization and drainSeconds): drop %s"
                         : "metricType demand reports replicas needed x 100 against a fixed "
                           "target of 100; set per-signal targets (targetQueuePerReplica, "
                           "targetRunningPerReplica, targetKvCache, targetGpu, "
                           "targetPromptTokensPerReplica, targetGenerationTokensPerReplica, "
                           "targetSaturation) instead of %s",
                slot[K_TARGET_VALUE]      ? "targetValue"
                : slot[K_TARGET_GPU_UTIL] ? "targetGpuUtilization"
                                          : "targetMemoryUtilization");
    if (slot[K_ACTIVATION])
        tc_fail(P, "metricType demand is active while work waits or runs; tune it with "
                   "activationQueue and activationGpu, not activationThreshold");
    double *dst[] = {&d->target_queue,     &d->target_running,       &d->target_kv,
                     &d->target_gpu,       &d->target_prompt_tokens, &d->target_generation_tokens,
                     &d->target_saturation};
    for (int i = 0; i < NTKEYS; i++)
        if (slot[tkeys[i]])
            tc_parse_target(tc_keys[tkeys[i]].name, tc_value_of(slot[tkeys[i]]), dst[i], P);
    if (model_known && !has_target && !any_slo && !queueing)
        tc_fail(P, "demandModel composite needs at least one per-signal target: "
                   "targetQueuePerReplica, targetRunningPerReplica, targetKvCache, targetGpu, "
                   "targetPromptTokensPerReplica, targetGenerationTokensPerReplica, "
                   "targetSaturation (engine epp) or a latency target (ttftP90Target, ...)");
    if (queueing) {
        d->target_utilization = 0; /* 0: the headroom follows the arrivals */
        d->drain_s = 10;
        long long ds;
        if (slot[K_TARGET_UTILIZATION])
            tc_key_ratio(K_TARGET_UTILIZATION, tc_value_of(slot[K_TARGET_UTILIZATION]),
                         &d->target_utilization, P);
        if (slot[K_DRAIN_SECONDS] &&
            tc_key_int(K_DRAIN_SECONDS, tc_value_of(slot[K_DRAIN_SECONDS]), &ds, P) == 0)
            d->drain_s = (unsigned)ds;
        if (slot[K_CAPACITY])
            tc_parse_target("capacityPerReplica", tc_value_of(slot[K_CAPACITY]), &d->capacity_rps,
                            P);
        static const int sig_keys[] = {K_ENGINE,          K_VLLM_ENDPOINT, K_TRITON_ENDPOINT,
                                       K_ENGINE_ENDPOINT, K_REDIS_ADDRESS, K_DEMAND_ENDPOINT};
        if (!any_slot(slot, sig_keys, 6, &which))
            tc_fail(P, "metricType demand needs a signal to size the fleet from: the serving "
                       "engine (engine with podSelector, or vllmEndpoint / tritonEndpoint / "
                       "engineEndpoint) and/or a queue (redisAddress with redisListName or "
                       "redisStream, or demandEndpoint with demandMetric)");
    }
    c->target_value = 100;
    c->activation_threshold = 0;
    if (slot[K_GPU_METRIC_TYPE]) {
        int m = 0;
        if (!slot[K_TARGET_GPU])
            tc_fail(P, "gpuMetricType is set without targetGpu: it names the GPU metric "
                       "targetGpu applies to");
        if (tc_key_enum(K_GPU_METRIC_TYPE, tc_value_of(slot[K_GPU_METRIC_TYPE]), &m, P) == 0)
            c->metric_type = (metric_type_t)m;
    }
    if (slot[K_ACTIVATION_QUEUE]) {
        if (!slot[K_TARGET_QUEUE] && !queueing)
            tc_fail(P, "activationQueue is set without targetQueuePerReplica");
        tc_key_nonneg(K_ACTIVATION_QUEUE, tc_value_of(slot[K_ACTIVATION_QUEUE]),
                      &d->activation_queue, P);
    }
    if (slot[K_ACTIVATION_GPU]) {
        if (!slot[K_TARGET_GPU])
            tc_fail(P, "activationGpu is set without targetGpu");
        tc_key_nonneg(K_ACTIVATION_GPU, tc_value_of(slot[K_ACTIVATION_GPU]), &d->activation_gpu, P);
    }
}

/* Whether metricType demand reads the engine: for a running, KV-cache,
 * token-rate or latency target, or for the queue when no Redis or
 * Prometheus queue holds it (an engine named beside such a queue adds its
 * waiting count). */
static bool demand_needs_engine(const metadata_pair_t *slot[K_COUNT], const demand_config_t *d,
                                bool any_slo) {
    bool queueing = d->sizing == DEMAND_MODEL_QUEUEING;
    bool queue = slot[K_TARGET_QUEUE] || queueing;
    int which;
    if (slot[K_TARGET_RUNNING] || slot[K_TARGET_KV] || any_slo || slot[K_TARGET_PROMPT_TOKENS] ||
        slot[K_TARGET_GEN_TOKENS] || slot[K_TARGET_SATURATION] ||
        (queue && !slot[K_REDIS_ADDRESS] && !slot[K_DEMAND_ENDPOINT]))
        return true;
    static const int ek[] = {K_ENGINE, K_VLLM_ENDPOINT, K_TRITON_ENDPOINT, K_ENGINE_ENDPOINT};
    return queue && any_slot(slot, ek, 4, &which);
}

/* A single-signal or slo trigger: its targetValue and activationThreshold. */
static void single_target(const metadata_pair_t *slot[K_COUNT], trigger_config_t *c,
                          trigger_problems_t *P) {
    demand_type_t t = c->demand.type;
    if (t == DEMAND_SLO) {
        if (slot[K_TARGET_VALUE])
            tc_fail(P, "metricType slo reports replicas needed x 100 against a fixed target of "
                       "100; set latency targets (ttftP90Target, ...) instead of targetValue");
        if (slot[K_ACTIVATION])
            tc_fail(P, "metricType slo is active while requests are observed or in flight; "
                       "activationThreshold does not apply to it");
        c->target_value = 100;
        c->activation_threshold = 0;
    } else if (t != DEMAND_NONE && t != DEMAND_COMPOSITE && !c->profile[0] &&
               !slot[K_TARGET_VALUE]) {
        tc_fail(P, "metricType %s needs targetValue (%s per replica); there is no sensible default",
                tc_demand_names[t],
                t == DEMAND_VLLM_KV_CACHE_USAGE || t == DEMAND_ENGINE_KV_CACHE ? "KV-cache percent"
                : t == DEMAND_TRITON_QUEUE_WAIT_MS      ? "milliseconds of queue wait"
                : t == DEMAND_TRITON_REQUEST_RATE       ? "requests per second"
                : t == DEMAND_ENGINE_RUNNING            ? "requests in flight"
                : type_is_token_rate(t)                 ? "tokens per second"
                : t == DEMAND_VLLM_LORA_WAITING_ENGINES ? "engines with the adapter's requests "
                                                          "waiting"
                                                        : "requests waiting");
    }
    if (t != DEMAND_NONE && t != DEMAND_COMPOSITE &&
        (slot[K_TARGET_GPU_UTIL] || slot[K_TARGET_MEM_UTIL]))
        tc_fail(P, "%s sets a GPU metric, but metricType is %s; use targetValue",
                slot[K_TARGET_GPU_UTIL] ? "targetGpuUtilization" : "targetMemoryUtilization",
                tc_demand_names[t]);
}

/* What the sources, once known, must provide for metricType demand and
 * queue_length. */
static void check_sources(const metadata_pair_t *slot[K_COUNT], const trigger_config_t *c,
                          trigger_problems_t *P) {
    const demand_config_t *d = &c->demand;
    bool composite = d->type == DEMAND_COMPOSITE;
    static const int queue_keys[] = {K_REDIS_ADDRESS,   K_REDIS_LIST,    K_REDIS_STREAM,
                                     K_REDIS_GROUP,     K_REDIS_MEASURE, K_REDIS_DB,
                                     K_REDIS_TLS,       K_REDIS_USER,    K_REDIS_PASS,
                                     K_DEMAND_ENDPOINT, K_DEMAND_METRIC, K_DEMAND_LABELS};
    int which;
    /* a queue key given: what is missing beside it is reported with it */
    if (d->type == DEMAND_QUEUE_LENGTH && d->queue == QUEUE_NONE &&
        !any_slot(slot, queue_keys, sizeof queue_keys / sizeof *queue_keys, &which))
        tc_fail(P, "metricType queue_length needs a queue: redisAddress with redisListName or "
                   "redisStream, or demandEndpoint with demandMetric");
    if (composite && slot[K_TARGET_QUEUE] && d->queue == QUEUE_NONE && d->engine == ENGINE_NONE)
        tc_fail(P, "targetQueuePerReplica needs a queue: a Redis or Prometheus queue, or an "
                   "engine's waiting requests");
    if (composite && slot[K_TARGET_RUNNING] && d->engine != ENGINE_NONE &&
        !engine_has_running(d->engine))
        tc_fail(P, "targetRunningPerReplica: Triton exports no requests-in-flight gauge");
    if (composite && slot[K_TARGET_SATURATION] && d->engine != ENGINE_EPP)
        tc_fail(P,
                "targetSaturation reads the endpoint picker's pool saturation "
                "(llm_d_epp_flow_control_pool_saturation): it needs engine epp, not %s",
                d->engine == ENGINE_NONE ? "no engine" : tc_engine_names[d->engine]);
    if (composite && slot[K_TARGET_KV] && d->engine != ENGINE_NONE && !engine_has_kv(d->engine))
        tc_fail(P,
                "targetKvCache: %s exports no KV-cache usage; it exists for vllm, sglang and "
                "epp",
                tc_engine_names[d->engine]);
}

/* sourceAuth: the name of a --source-auth profile, for HTTP sources only.
 * sources_known: the engine and the queue were told apart (else whether
 * the trigger reads an HTTP source is unknown). */
static void resolve_source_auth(const metadata_pair_t *slot[K_COUNT], demand_config_t *d,
                                bool sources_known, trigger_problems_t *P) {
    if (!slot[K_SOURCE_AUTH])
        return;
    slice_t v = tc_value_of(slot[K_SOURCE_AUTH]);
    if (sources_known && d->engine == ENGINE_NONE && d->queue != QUEUE_PROMETHEUS &&
        !slot[K_DEMAND_ENDPOINT])
        tc_fail(P, "sourceAuth is set, but the trigger reads no HTTP source; it applies to engine "
                   "endpoints, podSelector pods and demandEndpoint (a Redis queue authenticates "
                   "with redisPasswordFromEnv)");
    if (!source_auth_name_valid(v.p, v.n)) {
        char q[QBUF];
        tc_fail(P,
                "invalid sourceAuth %s: must name a --source-auth profile of the server "
                "(lower-case letters, digits and '-', at most %d)",
                kgs_quote(q, sizeof q, v.p, v.n), SOURCE_AUTH_NAME_MAX);
        return;
    }
    memcpy(d->source_auth, v.p, v.n);
    d->source_auth[v.n] = '\0';
}

/* forecast and coldStartSeconds. */
static void resolve_forecast(const metadata_pair_t *slot[K_COUNT], trigger_config_t *c,
                             trigger_problems_t *P) {
    demand_config_t *d = &c->demand;
    demand_type_t t = d->type;
    bool queueing = t == DEMAND_COMPOSITE && d->sizing == DEMAND_MODEL_QUEUEING;
    if (!slot[K_FORECAST] && !slot[K_COLD_START])
        return;
    const char *key = slot[K_FORECAST] ? "forecast" : "coldStartSeconds";
    if (t == DEMAND_NONE) {
        tc_fail(P,
                "%s is set, but metricType %s is a GPU metric; forecast applies to engine, queue "
                "and demand metric types",
                key, tc_metric_names[c->metric_type]);
        return;
    }
    if (t == DEMAND_SLO) {
        tc_fail(P,
                "%s is set, but metricType slo follows latency that is observed, not forecast; "
                "forecast applies to engine, queue and demand metric types",
                key);
        return;
    }
    int k = 0;
    long long cs;
    bool bad = false;
    if (slot[K_FORECAST]) {
        bad |= tc_key_enum(K_FORECAST, tc_value_of(slot[K_FORECAST]), &k, P) != 0;
        d->forecast_trend = k == 1;
    }
    if (slot[K_COLD_START]) {
        if (tc_key_int(K_COLD_START, tc_value_of(slot[K_COLD_START]), &cs, P) == 0)
            d->cold_start_s = (unsigned)cs;
        else
            bad = true;
    }
    if (bad)
        return; /* what follows ties the two values together */
    if (queueing && d->forecast_trend)
        tc_fail(P, "forecast: trend applies to demandModel composite and the single-signal "
                   "types; demandModel queueing follows the arrival rate's own trend "
                   "(coldStartSeconds alone sets its cold start)");
    if (d->forecast_trend && !d->cold_start_s)
        tc_fail(P, "forecast: trend needs coldStartSeconds (how far ahead to look: the time a "
                   "new replica needs to serve)");
    if (!d->forecast_trend && d->cold_start_s && !queueing)
        tc_fail(P, "coldStartSeconds is set, but forecast is none: it is how far ahead forecast: "
                   "trend looks; add forecast: trend or drop it");
}

/* sourceInterval and sourceTimeout, for triggers that read a source. */
static void resolve_cadence(const metadata_pair_t *slot[K_COUNT], trigger_config_t *c,
                            bool sources_known, trigger_problems_t *P) {
    demand_config_t *d = &c->demand;
    demand_type_t t = d->type;
    int which;
    d->interval_ns = 1000000000ull;
    d->timeout_ns = 2000000000ull;
    static const int src_keys[] = {K_SOURCE_INTERVAL, K_SOURCE_TIMEOUT};
    bool none = t == DEMAND_NONE || (sources_known && t == DEMAND_COMPOSITE &&
                                     d->engine == ENGINE_NONE && d->queue == QUEUE_NONE);
    if (none) {
        if (any_slot(slot, src_keys, 2, &which))
            tc_fail(P, "%s is set, but the trigger reads no engine or queue source",
                    tc_keys[which].name);
        if (t == DEMAND_NONE)
            d->interval_ns = d->timeout_ns = 0;
        return;
    }
    if (slot[K_SOURCE_INTERVAL])
        tc_key_duration(K_SOURCE_INTERVAL, tc_value_of(slot[K_SOURCE_INTERVAL]), &d->interval_ns,
                        P);
    if (slot[K_SOURCE_TIMEOUT])
        tc_key_duration(K_SOURCE_TIMEOUT, tc_value_of(slot[K_SOURCE_TIMEOUT]), &d->timeout_ns, P);
}

int tc_resolve_demand(const metadata_pair_t *slot[K_COUNT], trigger_config_t *c,
                      trigger_problems_t *P) {
    demand_config_t *d = &c->demand;
    demand_type_t t = d->type;
    bool composite = t == DEMAND_COMPOSITE, any_slo = false;
    unsigned before = P->count;
    tc_resolve_slo(slot, c, &any_slo, P);

    /* Composite targets come first: they decide the model and which sources
     * are needed. */
    bool need_engine = type_is_engine_only(t) || t == DEMAND_SLO;
    if (!composite)
        refuse_demand_keys(slot, c, P);
    if (composite) {
        demand_model(slot, c, any_slo, P);
        need_engine = demand_needs_engine(slot, d, any_slo);
    }
    single_target(slot, c, P);

    /* GPU selection makes sense only where GPUs are read. */
    if (t != DEMAND_NONE && !(composite && slot[K_TARGET_GPU])) {
        static const int gpu_keys[] = {K_GPU_INDEX,      K_GPU_UUID,    K_MIG_UUID,
                                       K_MIG_PROFILE,    K_AGGREGATION, K_NODE_SELECTOR,
                                       K_POD_AGGREGATION};
        int which;
        if (any_slot(slot, gpu_keys, 7, &which))
            tc_fail(P, "%s selects or combines GPUs, but metricType %s reads no GPU metric%s",
                    tc_keys[which].name, tc_demand_names[t],
                    composite ? " (add targetGpu to combine a GPU signal)" : "");
    }

    bool engine_ok = resolve_engine(slot, c, need_engine, P) == 0;
    if (engine_ok)
        tc_check_slo_engine(c, P);
    bool queue_ok = resolve_queue(slot, c, t == DEMAND_QUEUE_LENGTH || composite, P) == 0;
    if (engine_ok && queue_ok)
        check_sources(slot, c, P);
    resolve_source_auth(slot, d, engine_ok && queue_ok, P);
    resolve_forecast(slot, c, P);
    resolve_cadence(slot, c, engine_ok && queue_ok, P);
    return P->count > before ? KGS_EINVAL : 0;
}

bool demand_endpoint_url(const demand_config_t *d, const char *url, source_url_t *out) {
    for (unsigned i = 0; i < d->endpoint_count && i < TRIGGER_MAX_ENDPOINTS; i++)
        if (strcmp(d->endpoints[i], url) == 0) {
            source_url_expand(d->endpoints[i], &d->endpoint_urls[i], out);
            return true;
        }
    return false;
}

void demand_queue_url(const demand_config_t *d, source_url_t *out) {
    /* redis_address and demand_endpoint are one buffer: either names it. */
    source_url_expand(d->demand_endpoint, &d->queue_url, out);
}
