/*
 * engine_metrics.c - engine scrapes to readings (see the header for the
 * metric names and why they are summed).
 */
#include "sources/engine_metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine_table.h"
#include "core/err.h"

typedef enum {
    W_NONE,
    W_WAITING,
    W_RUNNING,
    W_KV,
    W_KV_OLD,
    W_QUEUE_US,
    W_SUCCESS,
    /* The counters the queueing model learns from (see learning_sum()). */
    W_COMPLETED,
    W_PROMPT_TOKENS,
    W_GEN_TOKENS,
    W_LORA, /* vllm:lora_requests_info (see on_lora_sample()) */
} want_t;

/* One learning counter summed over its series: bad once a sample is not a
 * count (NaN, Inf or negative), which makes the sum unknown. */
typedef struct {
    double sum;
    bool seen, bad;
} counter_sum_t;

/* One latency histogram merged over its series while the scrape is read:
 * per distinct finite bound, the summed count and how many series gave it
 * (each series gives each bound once, so every bound must be given by as
 * many series as gave a +Inf bucket; otherwise the bounds differ). */
typedef struct {
    unsigned n;
    double le[HIST_MAX_BUCKETS];
    double v[HIST_MAX_BUCKETS];
    unsigned nc[HIST_MAX_BUCKETS];
    double inf, sum;
    unsigned ninf;
    bool seen;
} hist_acc_t;

/* Histogram slots: signal s's current family at 2s, its older (or
 * mirrored) name at 2s + 1, read only when the current is absent. */
#define H_SLOTS (2 * SLO_SIGNAL_COUNT)

/* engine epp. The gateway's names (core/engine_table.c cites them):
 * client_golang GaugeVecs, HELP prefixed "[ALPHA] "; llm-d's EPP renamed
 * the families to llm_d_epp_* and keeps the old names as deprecated
 * mirrors with equal values: per family the new name is read, the old one
 * only when no series of the new one is in the scrape, never both. */
typedef enum { EPP_READY, EPP_QUEUE, EPP_RUNNING, EPP_KV, EPP_SAT, EPP_POOL_GAUGES } epp_gauge_t;

/* One EPP serves one InferencePool; a few more in one scrape are read, a
 * scrape with more is refused rather than truncated. */
#define EPP_MAX_POOLS 16
#define EPP_POOL_NAME_MAX 253 /* a Kubernetes object name */

/* The pool gauge an EPP role is read into; EPP_POOL_GAUGES for none. */
static epp_gauge_t epp_gauge_of(engine_metric_role_t role) {
    switch (role) {
    case EMR_EPP_READY:
        return EPP_READY;
    case EMR_EPP_AVG_QUEUE:
        return EPP_QUEUE;
    case EMR_EPP_AVG_RUNNING:
        return EPP_RUNNING;
    case EMR_EPP_AVG_KV:
        return EPP_KV;
    case EMR_EPP_SATURATION:
        return EPP_SAT;
    default:
        return EPP_POOL_GAUGES;
    }
}

/* Which sample of a histogram a sample name is. */
typedef enum { SUF_NONE, SUF_BUCKET, SUF_SUM, SUF_COUNT } sample_suffix_t;

/* One pool's gauges, both generations of names, as read. */
typedef struct {
    char name[EPP_POOL_NAME_MAX + 1];
    bool has[EPP_POOL_GAUGES][2];
    double v[EPP_POOL_GAUGES][2];
    /* saturation per generation: [0] no stage label, [1] stage effective,
     * [2] the largest other stage (epp_saturation()) */
    bool sat_has[2][3];
    double sat[2][3];
} epp_pool_t;

typedef struct {
    bool flow_seen[2];
    double flow[2]; /* the flow-control queue, summed over its series */
    bool family_seen[EPP_POOL_GAUGES][2];
    const char *family[EPP_POOL_GAUGES][2]; /* their names (the table's), when seen */
    unsigned npools;
    epp_pool_t pool[EPP_MAX_POOLS];
} epp_acc_t;

typedef struct {
    engine_t engine;
    const char *model;
    char *err;
    size_t errlen;
    engine_reading_t *r;
    double kv_old; /* the deprecated vLLM gauge, used only when the new one is absent */
    bool has_kv_old;
    counter_sum_t completed, prompt, gen;
    unsigned want;                        /* latency signals to read (0: none) */
    hist_acc_t *h;                        /* H_SLOTS accumulators, when want */
    const engine_metric_t *hrow[H_SLOTS]; /* the table's row of each slot seen */
    bool recognised, served;
    bool has_start;
    double start;
    const char *adapter; /* loraAdapter; NULL or "": vllm:lora_requests_info is not read */
    double lora_newest;  /* the newest lora_requests_info series' value so far */
    epp_acc_t *epp;      /* engine epp: what its samples add up to */
    /* The last sample name looked up in the table and what it was: a
     * page's samples come a family at a time (a histogram's 10 to 30
     * buckets, a gauge's series per model or engine), so most lookups are
     * this one again. Names longer than the buffer are looked up each time. */
    char last_name[96];
    const engine_metric_t *last_row;
    sample_suffix_t last_suf;
} engine_ctx_t;

/* What a sample name is: the table's row (core/engine_table.c, which
 * cites each engine's source) and, for a histogram, which sample. */
static const engine_metric_t *row_of(engine_t e, const char *name, sample_suffix_t *suf) {
    size_t n = strlen(name);
    *suf = SUF_NONE;
    const engine_metric_t *m = engine_table_find(e, name, n);
    if (m)
        return m->kind == EM_HISTOGRAM ? NULL : m;
    static const struct {
        const char *s;
        sample_suffix_t suf;
    } sfx[] = {{"_bucket", SUF_BUCKET}, {"_sum", SUF_SUM}, {"_count", SUF_COUNT}};
    for (size_t i = 0; i < sizeof sfx / sizeof *sfx; i++) {
        size_t k = strlen(sfx[i].s);
        if (n > k && strcmp(name + n - k, sfx[i].s) == 0) {
            m = engine_table_find(e, name, n - k);
            if (m && m->kind == EM_HISTOGRAM) {
                *suf = sfx[i].suf;
                return m;
            }
            return NULL;
        }
    }
    return NULL;
}

static const char *hist_family_name(const engine_ctx_t *x, int slot) {
    return slot >= 0 && slot < H_SLOTS && x->hrow[slot] ? x->hrow[slot]->name : "?";
}

static const char *model_label(engine_t e);

/* A model name the filter did not keep, into r->other_models (distinct,
 * as many as fit). */
static void note_other_model(engine_reading_t *r, const char *name) {
    if (!name || !name[0])
        return;
    size_t n = strlen(name), have = strlen(r->other_models);
    for (const char *p = r->other_models; *p;) {
        const char *end = strstr(p, ", ");
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && !memcmp(p, name, n))
            return;
        p += len + (end ? 2 : 0);
    }
    size_t need = n + (have ? 2 : 0);
    if (have + need >= sizeof r->other_models) {
        r->other_models_more = true;
        return;
    }
    snprintf(r->other_models + have, sizeof r->other_models - have, "%s%s", have ? ", " : "", name);
}

/* A sample of latency histogram m (suf: which one). A _count above 0
 * says the engine has served requests (for any signal, wanted or not);
 * buckets and _sum of a wanted signal are merged into its slot. 1 when
 * taken, 0 when not wanted, or KGS_EINVAL. */
static int on_hist_sample(engine_ctx_t *x, const prom_sample_t *s, const engine_metric_t *m,
                          sample_suffix_t suf) {
    if (x->model[0]) {
        /* SGLang serves one model per server, and its newer queue-time
         * histogram is labelled by dp_rank alone: a series without the
         * model label is that server's */
        const char *ml = prom_sample_label(s, model_label(x->engine));
        if (ml ? strcmp(ml, x->model) != 0 : x->engine != ENGINE_SGLANG)
            return 1;
    }
    if (suf == SUF_COUNT) {
        if (isfinite(s->value) && s->value > 0)
            x->served = true;
        return 1;
    }
    int sig = m->signal;
    if (sig < 0 || sig >= SLO_SIGNAL_COUNT || !(x->want & (1u << sig)))
        return 0;
    int slot = 2 * sig + (m->rank ? 1 : 0);
    bool sum = suf == SUF_SUM;
    x->hrow[slot] = m;
    hist_acc_t *a = &x->h[slot];
    a->seen = true;
    if (sum) {
        a->sum += s->value;
        return 1;
    }
    double le = 0;
    bool inf = false;
    if (!hist_parse_le(prom_sample_label(s, "le"), &le, &inf))
        return kgs_seterr(x->err, x->errlen, KGS_EINVAL,
                          "%s: a bucket whose le label is missing or not a number",
                          hist_family_name(x, slot));
    if (!isfinite(s->value) || s->value < 0)
        return kgs_seterr(x->err, x->errlen, KGS_EINVAL,
                          "%s: a bucket counts %g observations (a count is finite and not "
                          "negative)",
                          hist_family_name(x, slot), s->value);
    if (inf) {
        a->inf += s->value;
        a->ninf++;
        return 1;
    }
    unsigned i = 0;
    while (i < a->n && a->le[i] != le)
        i++;
    if (i == a->n) {
        if (a->n == HIST_MAX_BUCKETS)
            return kgs_seterr(x->err, x->errlen, KGS_EINVAL,
                              "%s: more than %d distinct bucket bounds (series with different "
                              "bounds, or too many buckets)",
                              hist_family_name(x, slot), HIST_MAX_BUCKETS);
        a->le[i] = le;
        a->v[i] = 0;
        a->nc[i] = 0;
        a->n++;
    }
    a->v[i] += s->value;
    a->nc[i]++;
    return 1;
}

/* The merged histogram of slot into layout/counts; KGS_EINVAL naming the
 * family when its series' bounds differ or it is malformed. */
static int hist_finish(engine_ctx_t *x, int slot, hist_layout_t *layout, hist_counts_t *counts) {
    const hist_acc_t *a = &x->h[slot];
    const char *fam = hist_family_name(x, slot);
    for (unsigned i = 0; i < a->n; i++)
        if (a->nc[i] != a->ninf)
            return kgs_seterr(x->err, x->errlen, KGS_EINVAL,
                              "%s: its series have different bucket bounds in one scrape (le=%g "
                              "is in %u of %u series); buckets of different bounds cannot be "
                              "added",
                              fam, a->le[i], a->nc[i], a->ninf);
    hist_collect_t c;
    memset(&c, 0, sizeof c);
    char why[200];
    for (unsigned i = 0; i < a->n; i++)
        if (hist_collect_bound(&c, a->le[i], false, a->v[i], why, sizeof why) != 0)
            return kgs_seterr(x->err, x->errlen, KGS_EINVAL, "%s: %s", fam, why);
    if (a->ninf && hist_collect_bound(&c, 0, true, a->inf, why, sizeof why) != 0)
        return kgs_seterr(x->err, x->errlen, KGS_EINVAL, "%s: %s", fam, why);
    hist_collect_sum(&c, a->sum);
    if (hist_collect_finish(&c, layout, counts, why, sizeof why) != 0)
        return kgs_seterr(x->err, x->errlen, KGS_EINVAL, "%s: %s", fam, why);
    if (x->engine == ENGINE_TRITON) { /* milliseconds */
        for (unsigned i = 0; i < layout->n; i++)
            layout->le[i] /= 1000;
        counts->sum /= 1000;
    }
    return 0;
}

/* What a (non-histogram) row is read into. A TGI token histogram is read
 * through its _sum (the tokens of every request); its buckets and _count
 * are not. */
static want_t want_of(const engine_metric_t *m, sample_suffix_t suf) {
    if (m->kind == EM_HISTOGRAM && suf != SUF_SUM)
        return W_NONE;
    switch (m->role) {
    case EMR_WAITING:
        return W_WAITING;
    case EMR_RUNNING:
        return W_RUNNING;
    case EMR_KV:
        return m->rank ? W_KV_OLD : W_KV;
    case EMR_QUEUE_US:
        return W_QUEUE_US;
    case EMR_SUCCESS:
        return W_SUCCESS;
    case EMR_COMPLETED:
        return W_COMPLETED;
    case EMR_PROMPT_TOKENS:
        return W_PROMPT_TOKENS;
    case EMR_GEN_TOKENS:
        return W_GEN_TOKENS;
    case EMR_LORA:
        return W_LORA;
    default:
        return W_NONE;
    }
}

/* A gauge sample must be a count: NaN or Inf is not one (the sum is then
 * unknown, so the whole scrape is, never read as 0), and every gauge read
 * here counts something (requests, endpoints, a share of the KV cache,
 * microseconds, requests done): below 0 it is broken, not small. 0, or
 * KGS_EINVAL naming the metric. */
static int gauge_sample_check(engine_ctx_t *x, const prom_sample_t *s) {
    if (!isfinite(s->value))
        return kgs_seterr(x->err, x->errlen, KGS_EINVAL, "%s is %g: no usable value", s->name,
                          s->value);
    if (s->value < 0)
        return kgs_seterr(x->err, x->errlen, KGS_EINVAL, "%s is %g: a count cannot be negative",
                          s->name, s->value);
    return 0;
}

static const char *model_label(engine_t e) {
    return e == ENGINE_TRITON ? "model" : "model_name";
}

/* The learning counter w adds to, or NULL when w is not one. */
static counter_sum_t *learning_sum(engine_ctx_t *x, want_t w) {
    switch (w) {
    case W_COMPLETED:
        return &x->completed;
    case W_PROMPT_TOKENS:
        return &x->prompt;
    case W_GEN_TOKENS:
        return &x->gen;
    default:
        return NULL;
    }
}

static void counter_add(counter_sum_t *c, double v) {
    c->seen = true;
    if (!isfinite(v) || v < 0)
        c->bad = true;
    else
        c->sum += v;
}

/* Seen, every sample a count, and the sum did not overflow. */
static bool counter_known(const counter_sum_t *c) {
    return c->seen && !c->bad && isfinite(c->sum);
}

/* name is one item of the comma list (p, as vLLM joins adapter names). */
static bool in_comma_list(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && memcmp(p, name, n) == 0)
            return true;
        p = e ? e + 1 : NULL;
    }
    return false;
}

/* One vllm:lora_requests_info series: the newest wins. A value that is not
 * a finite number cannot be ordered: that series is skipped (the gauges,
 * not this one, decide whether the scrape is usable). */
static void on_lora_sample(engine_ctx_t *x, const prom_sample_t *s) {
    if (!x->adapter || !x->adapter[0] || !isfinite(s->value))
        return;
    const char *wl = prom_sample_label(s, "waiting_lora_adapters");
    const char *rl = prom_sample_label(s, "running_lora_adapters");
    bool waiting = wl && in_comma_list(wl, x->adapter);
    bool running = rl && in_comma_list(rl, x->adapter);
    engine_reading_t *r = x->r;
    if (!r->has_lora || s->value > x->lora_newest) {
        r->has_lora = true;
        x->lora_newest = s->value;
        r->lora_waiting = waiting;
        r->lora_running = running;
    } else if (s->value == x->lora_newest) {
        r->lora_waiting |= waiting;
        r->lora_running |= running;
    }
}

/* The pool named name in a, added when new; NULL with KGS_EINVAL set
 * when the name is too long or a holds EPP_MAX_POOLS already. */
static epp_pool_t *epp_pool(engine_ctx_t *x, const char *family, const char *name) {
    epp_acc_t *a = x->epp;
    if (strlen(name) > EPP_POOL_NAME_MAX) {
        kgs_seterr(x->err, x->errlen, KGS_EINVAL,
                   "%s: an inference pool name of %zu bytes (a Kubernetes name has at most %d)",
                   family, strlen(name), EPP_POOL_NAME_MAX);
        return NULL;
    }
    for (unsigned i = 0; i < a->npools; i++)
        if (strcmp(a->pool[i].name, name) == 0)
            return &a->pool[i];
    if (a->npools == EPP_MAX_POOLS) {
        kgs_seterr(x->err, x->errlen, KGS_EINVAL,
                   "%s: more than %d inference pools in one scrape (the name label); read at "
                   "most %d pools per endpoint picker",
                   family, EPP_MAX_POOLS, EPP_MAX_POOLS);
        return NULL;
    }
    epp_pool_t *p = &a->pool[a->npools++];
    memcpy(p->name, name, strlen(name) + 1);
    return p;
}

/* A pool saturation series (labelled inference_pool; since llm-d-router
 * PR #2221 also stage = prefill | decode | effective, effective being
 * their max): per pool the effective series, else the unlabelled one,
 * else the largest stage. */
static void epp_saturation(epp_pool_t *p, int gen, const prom_sample_t *s) {
    const char *stage = prom_sample_label(s, "stage");
    int k = !stage || !stage[0] ? 0 : strcmp(stage, "effective") == 0 ? 1 : 2;
    if (!p->sat_has[gen][k] || s->value > p->sat[gen][k])
        p->sat[gen][k] = s->value;
    p->sat_has[gen][k] = true;
}

/* One sample of an EPP scrape: the flow-control queue (summed, after the
 * model filter on model_name) or a pool gauge (kept per pool name, paired
 * in epp_finish()). Returns 0 or KGS_EINVAL. */
static int on_epp_sample(engine_ctx_t *x, const prom_sample_t *s) {
    sample_suffix_t suf;
    const engine_metric_t *m = row_of(ENGINE_EPP, s->name, &suf);
    if (!m)
        return 0;
    x->recognised = true;
    int gen = m->rank ? 1 : 0;
    epp_gauge_t g = epp_gauge_of(m->role);
    if (m->role != EMR_EPP_FLOW && g == EPP_POOL_GAUGES)
        return 0; /* recognises the EPP, read for nothing */
    if (m->role == EMR_EPP_FLOW && x->model[0]) {
        const char *ml = prom_sample_label(s, "model_name");
        if (!ml || strcmp(ml, x->model) != 0)
            return 0;
    }
    /* requests, endpoints, a share of the cache, a saturation ratio */
    int rc = gauge_sample_check(x, s);
    if (rc)
        return rc;
    epp_acc_t *a = x->epp;
    x->r->series++;
    if (m->role == EMR_EPP_FLOW) {
        a->flow_seen[gen] = true;
        a->flow[gen] += s->value;
        return 0;
    }
    const char *name = prom_sample_label(s, g == EPP_SAT ? "inference_pool" : "name");
    if (!name)
        name = ""; /* an absent label is the empty one, as in PromQL */
    epp_pool_t *p = epp_pool(x, s->name, name);
    if (!p)
        return KGS_EINVAL;
    a->family_seen[g][gen] = true;
    a->family[g][gen] = m->name;
    if (g == EPP_SAT) {
        epp_saturation(p, gen, s);
        p->has[g][gen] = true;
        return 0;
    }
    if (p->has[g][gen])
        return kgs_seterr(x->err, x->errlen, KGS_EINVAL,
                          "%s: two series for inference pool \"%.200s\" (an endpoint picker "
                          "exports one per pool; an average cannot be summed)",
                          s->name, name);
    p->has[g][gen] = true;
    p->v[g][gen] = s->value;
    return 0;
}

/* The EPP scrape into *r: waiting the flow-control queue; per pool, each
 * average x its ready endpoints, summed over pools (see demand_eval.h for
 * how EPP pods combine). Per family the new name wins over the old. A pool
 * with no ready endpoints adds 0 whatever its (stale) averages say; a pool
 * with endpoints but without an average makes that count unknown. */
static int epp_finish(engine_ctx_t *x) {
    const epp_acc_t *a = x->epp;
    engine_reading_t *r = x->r;
    int gen[EPP_POOL_GAUGES];
    for (int g = 0; g < EPP_POOL_GAUGES; g++)
        gen[g] = !a->family_seen[g][0] && a->family_seen[g][1] ? 1 : 0;
    int fgen = !a->flow_seen[0] && a->flow_seen[1] ? 1 : 0;
    bool flow = a->flow_seen[fgen];
    bool unknown[EPP_POOL_GAUGES] = {false};
    double sum[EPP_POOL_GAUGES] = {0};
    for (unsigned i = 0; i < a->npools; i++) {
        const epp_pool_t *p = &a->pool[i];
        if (!p->has[EPP_READY][gen[EPP_READY]]) {
            for (int g = EPP_QUEUE; g < EPP_SAT; g++)
                if (p->has[g][gen[g]])
                    return kgs_seterr(x->err, x->errlen, KGS_EINVAL,
                                      "%s{name=\"%.200s\"} has no %s series for its pool: an "
                                      "average cannot be turned into a count without the ready "
                                      "endpoints",
                                      a->family[g][gen[g]], p->name,
                                      gen[EPP_READY] ? "inference_pool_ready_pods"
                                                     : "llm_d_epp_ready_endpoints");
            if (p->has[EPP_SAT][gen[EPP_SAT]])
                unknown[EPP_SAT] = true; /* a saturation of a pool whose size is not known */
            continue;
        }
        double ready = p->v[EPP_READY][gen[EPP_READY]];
        r->has_pool = true;
        sum[EPP_READY] += ready;
        for (int g = EPP_QUEUE; g < EPP_SAT; g++) {
            if (p->has[g][gen[g]])
                sum[g] += p->v[g][gen[g]] * ready * (g == EPP_KV ? 100 : 1);
            else if (ready > 0)
                unknown[g] = true;
        }
        int sg = gen[EPP_SAT];
        if (p->has[EPP_SAT][sg]) {
            double v = p->sat_has[sg][1]   ? p->sat[sg][1]
                       : p->sat_has[sg][0] ? p->sat[sg][0]
                                           : p->sat[sg][2];
            sum[EPP_SAT] += v * ready; /* an empty pool reads 1.0 and adds 0 */
        } else if (ready > 0) {
            unknown[EPP_SAT] = true;
        }
    }
    /* Flow-control series appear with the first request queued: with the
     * pool gauges present and no series, nothing waits at the gateway. */
    r->has_waiting = (flow || r->has_pool) && !unknown[EPP_QUEUE];
    r->has_running = r->has_pool && !unknown[EPP_RUNNING];
    r->has_kv = r->has_pool && !unknown[EPP_KV];
    r->has_saturation = a->family_seen[EPP_SAT][gen[EPP_SAT]] && !unknown[EPP_SAT];
    r->pool_ready = sum[EPP_READY];
    if (r->has_waiting) {
        r->waiting = flow ? a->flow[fgen] : 0;
        r->pool_waiting = sum[EPP_QUEUE];
    }
    if (r->has_running)
        r->pool_running = sum[EPP_RUNNING];
    if (r->has_kv)
        r->pool_kv_percent = sum[EPP_KV];
    if (r->has_saturation)
        r->saturation_load = sum[EPP_SAT];
    return 0;
}

static int on_engine_sample(void *ud, const prom_sample_t *s) {
    engine_ctx_t *x = ud;
    if (x->engine == ENGINE_EPP)
        return on_epp_sample(x, s);
    if (strcmp(s->name, "process_start_time_seconds") == 0) {
        if (isfinite(s->value) && s->value > 0 && (!x->has_start || s->value > x->start)) {
            x->has_start = true;
            x->start = s->value;
            x->r->has_start = true;
            x->r->start_time_s = s->value;
        }
        return 0;
    }
    sample_suffix_t suf;
    const engine_metric_t *m;
    if (x->last_name[0] && strcmp(s->name, x->last_name) == 0) {
        m = x->last_row;
        suf = x->last_suf;
    } else {
        m = row_of(x->engine, s->name, &suf);
        size_t n = strlen(s->name);
        if (n < sizeof x->last_name) {
            memcpy(x->last_name, s->name, n + 1);
            x->last_row = m;
            x->last_suf = suf;
        } else {
            x->last_name[0] = '\0';
        }
    }
    if (!m)
        return 0;
    x->recognised = true; /* whatever the model filter keeps: the page is the engine's */
    if (m->role == EMR_LATENCY) {
        int h = on_hist_sample(x, s, m, suf);
        return h < 0 ? h : 0;
    }
    want_t w = want_of(m, suf);
    if (w == W_NONE)
        return 0;
    if (w == W_LORA) { /* no model_name label: the model filter does not apply */
        on_lora_sample(x, s);
        return 0;
    }
    if (x->model[0]) {
        const char *ml = prom_sample_label(s, model_label(x->engine));
        if (!ml || strcmp(ml, x->model) != 0) {
            note_other_model(x->r, ml);
            return 0;
        }
    }
    /* A learning counter is read on the side: a sample that is not a count
     * makes that counter unknown, never 0, and leaves the gauges (which
     * scaled this engine before the counters were read) usable. Nor do
     * these samples count in r->series. */
    counter_sum_t *learn = learning_sum(x, w);
    if (learn) {
        counter_add(learn, s->value);
        return 0;
    }
    int rc = gauge_sample_check(x, s);
    if (rc)
        return rc;
    double v = s->value;
    engine_reading_t *r = x->r;
    r->series++;
    switch (w) {
    case W_WAITING:
        r->has_waiting = true;
        r->waiting += v;
        break;
    case W_RUNNING:
        r->has_running = true;
        r->running += v;
        break;
    case W_KV:
        r->has_kv = true;
        r->kv_percent += v * 100;
        break;
    case W_KV_OLD:
        x->has_kv_old = true;
        x->kv_old += v * 100;
        break;
    case W_QUEUE_US:
        r->has_triton = true;
        r->queue_us += v;
        break;
    case W_SUCCESS:
        r->has_triton = true;
        r->success += v;
        counter_add(&x->completed, v); /* v is finite here */
        break;
    case W_COMPLETED:
    case W_PROMPT_TOKENS:
    case W_GEN_TOKENS:
    case W_LORA:
    case W_NONE:
        break;
    }
    return 0;
}

/* Seen, every sample a count, and the sum did not overflow, above 0. */
static bool counter_positive(const counter_sum_t *c) {
    return c->seen && !c->bad && isfinite(c->sum) && c->sum > 0;
}

/*
 * What the page says of the engine, once read (engine_reading_t's
 * recognised, served, hist_lacking, first_use_zero): on a page that is the
 * engine's (a family of its table is there), a gauge or counter the engine
 * creates on first use and that is absent reads as its zero (counters only
 * while nothing was served: an engine that served requests and shows no
 * completed counter lacks it); a wanted latency histogram that is absent
 * although the engine has served requests, or that only a flag turns on,
 * is lacking. An unrecognised page changes nothing (it stays an error).
 */
static void reading_finish(engine_ctx_t *x, unsigned want, unsigned found) {
    engine_reading_t *r = x->r;
    r->recognised = x->recognised;
    r->served = x->served || counter_positive(&x->completed) || counter_positive(&x->prompt) ||
                counter_positive(&x->gen);
    if (!x->recognised || x->engine == ENGINE_EPP)
        return;
    const engine_metric_t *m;
    if (!r->has_waiting && (m = engine_table_primary(x->engine, EMR_WAITING, -1)) &&
        m->presence == EMP_FIRST_USE) {
        r->has_waiting = true;
        r->first_use_zero |= ENGINE_ZERO_WAITING;
    }
    if (!r->has_running && (m = engine_table_primary(x->engine, EMR_RUNNING, -1)) &&
        m->presence == EMP_FIRST_USE) {
        r->has_running = true;
        r->first_use_zero |= ENGINE_ZERO_RUNNING;
    }
    /* a counter of another model is not this one's zero: with a model
     * filter only label-less families (TGI's) are read as first-use zeros */
    bool filtered = x->model[0] != '\0';
    if (!r->served) {
        if (!x->completed.seen && (m = engine_table_primary(x->engine, EMR_COMPLETED, -1)) &&
            m->presence == EMP_FIRST_USE && !(filtered && m->labels[0])) {
            x->completed.seen = true;
            r->first_use_zero |= ENGINE_ZERO_COMPLETED;
        }
        const engine_metric_t *p = engine_table_primary(x->engine, EMR_PROMPT_TOKENS, -1);
        const engine_metric_t *g = engine_table_primary(x->engine, EMR_GEN_TOKENS, -1);
        if (p && g && p->presence == EMP_FIRST_USE && g->presence == EMP_FIRST_USE &&
            !(filtered && (p->labels[0] || g->labels[0])) && (!x->prompt.seen || !x->gen.seen)) {
            x->prompt.seen = x->gen.seen = true;
            r->first_use_zero |= ENGINE_ZERO_TOKENS;
        }
    }
    for (int s = 0; s < SLO_SIGNAL_COUNT; s++) {
        if (!(want & (1u << s)) || (found & (1u << s)))
            continue;
        m = engine_table_primary(x->engine, EMR_LATENCY, s);
        if (!m || m->presence == EMP_FLAG || r->served)
            r->hist_lacking |= 1u << s;
    }
}

int engine_reading_parse(engine_t e, const char *model, const char *text, size_t len,
                         prom_format_t fmt, engine_reading_t *out, char *err, size_t errlen) {
    return engine_reading_parse_full(e, model, NULL, 0, text, len, fmt, out, NULL, err, errlen);
}

/* Sets x up to read one scrape for engine e into x->r (zeroed): acc
 * (H_SLOTS accumulators) and epp are the caller's storage. want is already
 * masked to the signals that exist and to whether histograms are wanted. */
static void engine_ctx_init(engine_ctx_t *x, hist_acc_t *acc, epp_acc_t *epp, engine_t e,
                            const char *model, const char *adapter, unsigned want,
                            engine_reading_t *r, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    *x = (engine_ctx_t){.engine = e,
                        .model = model ? model : "",
                        .err = err,
                        .errlen = errlen,
                        .r = r,
                        .want = want,
                        .h = want ? acc : NULL,
                        .adapter = adapter};
    if (want)
        memset(acc, 0, H_SLOTS * sizeof *acc);
    if (e == ENGINE_EPP) {
        memset(epp, 0, sizeof *epp);
        x->epp = epp;
        x->want = 0; /* the EPP is not read for latency */
    }
}

/* What the samples read into x add up to, once the page is read (rc: the
 * parse's outcome; a failure zeroes x->r and hists and is returned). */
static int engine_ctx_finish(engine_ctx_t *x, int rc, engine_hists_t *hists, char *err,
                             size_t errlen) {
    engine_reading_t *out = x->r;
    unsigned want = x->want;
    hist_acc_t *acc = x->h;
    if (rc == 0 && x->engine == ENGINE_EPP)
        rc = epp_finish(x);
    if (rc == 0 && want) {
        /* the current name wins; the older is read only without it */
        for (int s = 0; s < SLO_SIGNAL_COUNT && rc == 0; s++) {
            int slot = !acc[2 * s].seen && acc[2 * s + 1].seen ? 2 * s + 1 : 2 * s;
            if (!(want & (1u << s)) || !acc[slot].seen)
                continue;
            rc = hist_finish(x, slot, &hists->layout[s], &hists->counts[s]);
            if (rc == 0)
                hists->mask |= 1u << s;
        }
        hists->has_start = x->has_start;
        hists->start_time_s = x->start;
    }
    if (rc != 0) {
        memset(out, 0, sizeof *out);
        if (hists)
            memset(hists, 0, sizeof *hists);
        return rc;
    }
    reading_finish(x, want, hists ? hists->mask : 0);
    out->hist_mask = hists ? hists->mask : 0;
    if (!out->has_kv && x->has_kv_old) {
        out->has_kv = true;
        out->kv_percent = x->kv_old;
    }
    /* Finite samples can still sum past the largest double (two of 1e308):
     * the sum is then unknown, never the largest value KEDA can be sent. */
    const struct {
        double v;
        const char *what;
    } sums[] = {
        {out->waiting, "the waiting-requests gauge"},
        {out->running, "the running-requests gauge"},
        {out->kv_percent, "the KV-cache usage gauge"},
        {out->queue_us, "nv_inference_queue_duration_us"},
        {out->success, "nv_inference_request_success"},
        {out->pool_ready, "the ready-endpoints gauge"},
        {out->pool_waiting, "the pool's waiting requests (average queue size x ready endpoints)"},
        {out->pool_running,
         "the pool's running requests (average running requests x ready endpoints)"},
        {out->pool_kv_percent, "the pool's KV-cache usage (average utilization x ready endpoints)"},
        {out->saturation_load, "the pool saturation x ready endpoints"},
    };
    for (size_t i = 0; i < sizeof sums / sizeof *sums; i++)
        if (!isfinite(sums[i].v)) {
            memset(out, 0, sizeof *out);
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "%s summed over its series is not finite (the samples overflow)",
                              sums[i].what);
        }
    if (counter_known(&x->completed)) {
        out->has_completed = true;
        out->completed_total = x->completed.sum;
    }
    /* Both token counters or neither: the cost of a request needs both. */
    if (counter_known(&x->prompt) && counter_known(&x->gen)) {
        out->has_tokens = true;
        out->prompt_tokens_total = x->prompt.sum;
        out->generation_tokens_total = x->gen.sum;
    }
    return 0;
}

/* The latency signals to read: only those that exist, none without histograms. */
static unsigned want_mask(unsigned want, bool has_hists) {
    return has_hists ? want & ((1u << SLO_SIGNAL_COUNT) - 1) : 0;
}

int engine_reading_parse_full(engine_t e, const char *model, const char *adapter, unsigned want,
                              const char *text, size_t len, prom_format_t fmt,
                              engine_reading_t *out, engine_hists_t *hists, char *err,
                              size_t errlen) {
    want = want_mask(want, hists != NULL);
    if (hists)
        memset(hists, 0, sizeof *hists);
    hist_acc_t acc[H_SLOTS];
    epp_acc_t epp;
    engine_ctx_t x;
    engine_ctx_init(&x, acc, &epp, e, model, adapter, want, out, err, errlen);
    int rc = prom_parse(text, len, fmt, on_engine_sample, &x, err, errlen);
    return engine_ctx_finish(&x, rc, hists, err, errlen);
}

/* ---- a scrape read as it arrives ------------------------------------------------ */

struct engine_scan {
    engine_ctx_t x;
    engine_reading_t r;
    hist_acc_t acc[H_SLOTS];
    epp_acc_t epp;
    char model[256], adapter[256];
    char err[512]; /* why a sample stopped the scan */
};

engine_scan_t *engine_scan_new(engine_t e, const char *model, const char *adapter, unsigned want,
                               bool hists) {
    engine_scan_t *sc = malloc(sizeof *sc);
    if (!sc)
        return NULL;
    snprintf(sc->model, sizeof sc->model, "%s", model ? model : "");
    snprintf(sc->adapter, sizeof sc->adapter, "%s", adapter ? adapter : "");
    sc->err[0] = '\0';
    engine_ctx_init(&sc->x, sc->acc, &sc->epp, e, sc->model, adapter ? sc->adapter : NULL,
                    want_mask(want, hists), &sc->r, sc->err, sizeof sc->err);
    return sc;
}

int engine_scan_sample(void *scan, const prom_sample_t *s) {
    return on_engine_sample(&((engine_scan_t *)scan)->x, s);
}

const char *engine_scan_error(const engine_scan_t *sc) {
    return sc->err;
}

int engine_scan_finish(engine_scan_t *sc, engine_reading_t *out, engine_hists_t *hists, char *err,
                       size_t errlen) {
    if (hists)
        memset(hists, 0, sizeof *hists);
    else
        sc->x.want = 0;
    /* what finishing finds wrong (a histogram's bounds) goes to the caller */
    sc->x.err = err;
    sc->x.errlen = errlen;
    int rc = engine_ctx_finish(&sc->x, 0, hists, err, errlen);
    *out = sc->r;
    return rc;
}

size_t engine_scan_bytes(void) {
    return sizeof(engine_scan_t);
}

void engine_scan_free(engine_scan_t *sc) {
    free(sc);
}

typedef struct {
    const demand_config_t *d;
    char *err;
    size_t errlen;
    double sum;
    unsigned matched;
} demand_ctx_t;

static int on_demand_sample(void *ud, const prom_sample_t *s) {
    demand_ctx_t *x = ud;
    if (strcmp(s->name, x->d->demand_metric) != 0)
        return 0;
    for (unsigned i = 0; i < x->d->matcher_count; i++) {
        const char *v = prom_sample_label(s, x->d->matchers[i].name);
        /* PromQL: an absent label matches the empty string. */
        bool eq = strcmp(v ? v : "", x->d->matchers[i].value) == 0;
        if (eq == x->d->matchers[i].negate)
            return 0;
    }
    if (!isfinite(s->value))
        return kgs_seterr(x->err, x->errlen, KGS_EINVAL, "%s is %g: no usable value", s->name,
                          s->value);
    if (s->value < 0)
        return kgs_seterr(x->err, x->errlen, KGS_EINVAL,
                          "%s is %g: a queue length cannot be negative", s->name, s->value);
    x->sum += s->value;
    x->matched++;
    return 0;
}

int demand_value_parse(const demand_config_t *d, const char *text, size_t len, prom_format_t fmt,
                       double *sum, unsigned *matched, char *err, size_t errlen) {
    demand_ctx_t x = {.d = d, .err = err, .errlen = errlen};
    *sum = 0;
    *matched = 0;
    int rc = prom_parse(text, len, fmt, on_demand_sample, &x, err, errlen);
    if (rc != 0)
        return rc;
    if (!isfinite(x.sum))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s summed over %u samples is not finite (the samples overflow)",
                          d->demand_metric, x.matched);
    *sum = x.sum;
    *matched = x.matched;
    return 0;
}

/* ---- a generic endpoint's page read as it arrives -------------------------------- */

struct demand_scan {
    demand_ctx_t x;
    char err[512];
};

size_t demand_scan_bytes(void) {
    return sizeof(struct demand_scan);
}

demand_scan_t *demand_scan_new(const demand_config_t *d) {
    demand_scan_t *sc = calloc(1, sizeof *sc);
    if (!sc)
        return NULL;
    sc->x = (demand_ctx_t){.d = d, .err = sc->err, .errlen = sizeof sc->err};
    return sc;
}

int demand_scan_sample(void *scan, const prom_sample_t *s) {
    return on_demand_sample(&((demand_scan_t *)scan)->x, s);
}

const char *demand_scan_error(const demand_scan_t *sc) {
    return sc->err;
}

int demand_scan_finish(const demand_scan_t *sc, double *sum, unsigned *matched, char *err,
                       size_t errlen) {
    *sum = 0;
    *matched = 0;
    if (!isfinite(sc->x.sum))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s summed over %u samples is not finite (the samples overflow)",
                          sc->x.d->demand_metric, sc->x.matched);
    *sum = sc->x.sum;
    *matched = sc->x.matched;
    return 0;
}

void demand_scan_free(demand_scan_t *sc) {
    free(sc);
}
