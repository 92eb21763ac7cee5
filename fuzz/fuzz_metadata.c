/*
 * fuzz_metadata.c - trigger_config_parse() and the config cache on arbitrary
 * metadata maps.
 *
 * Input: lines "key=value" ('\n' separated, at most 64); a line without '='
 * is a key with an empty value. Bytes are passed as slices, so keys and
 * values may hold NULs and are never NUL-terminated.
 *
 * Checked:
 *   - success: every invariant the evaluator and the server rely on (target
 *     finite and >= 0.001, activation finite and >= 0, poll >= 1, metric name
 *     charset, enums in range, lists within bounds and well-formed);
 *   - failure: KGS_EINVAL with every problem a whole, non-empty message,
 *     formatted whole (and, in a small buffer, summarised, never cut);
 *   - the outcome (config bytes or message) is the same for the reversed
 *     pair order;
 *   - the cache returns the same entry for both orders, holds the same
 *     status, and never exceeds its capacity once everything is released.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/config_cache.h"
#include "core/err.h"
#include "core/trigger_config.h"

#include "fuzz_check.h"

#define MAX_PAIRS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_config(const trigger_config_t *c) {
    FUZZ_CHECK(isfinite(c->target_value) && c->target_value >= 0.001);
    FUZZ_CHECK(isfinite(c->activation_threshold) && c->activation_threshold >= 0);
    FUZZ_CHECK(c->poll_interval_s >= 1);
    FUZZ_CHECK((unsigned)c->metric_type < METRIC_TYPE_COUNT);
    FUZZ_CHECK((unsigned)c->aggregation <= AGG_P99);
    FUZZ_CHECK(c->gpu_index >= -1);
    size_t n = strnlen(c->metric_name, sizeof c->metric_name);
    FUZZ_CHECK(n >= 1 && n <= 127);
    for (size_t i = 0; i < n; i++) {
        char ch = c->metric_name[i];
        FUZZ_CHECK((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-');
    }
    FUZZ_CHECK(strnlen(c->profile, sizeof c->profile) < sizeof c->profile);
    FUZZ_CHECK(c->gpu_uuid_count <= TRIGGER_MAX_UUIDS);
    FUZZ_CHECK(c->mig_uuid_count <= TRIGGER_MAX_UUIDS);
    FUZZ_CHECK(c->mig_profile_count <= TRIGGER_MAX_UUIDS);
    for (unsigned i = 0; i < c->gpu_uuid_count; i++) {
        FUZZ_CHECK(strnlen(c->gpu_uuids[i], 96) < 96);
        FUZZ_CHECK(strncmp(c->gpu_uuids[i], "GPU-", 4) == 0);
    }
    for (unsigned i = 0; i < c->mig_uuid_count; i++) {
        FUZZ_CHECK(strnlen(c->mig_uuids[i], 96) < 96);
        FUZZ_CHECK(strncmp(c->mig_uuids[i], "MIG-", 4) == 0);
    }
    for (unsigned i = 0; i < c->mig_profile_count; i++)
        FUZZ_CHECK(strnlen(c->mig_profiles[i], 32) < 32 && strchr(c->mig_profiles[i], 'g'));
    FUZZ_CHECK(!(c->gpu_index >= 0 && c->gpu_uuid_count > 0));
    FUZZ_CHECK(!(c->mig_uuid_count > 0 && c->mig_profile_count > 0));

    /* Demand signals: what source_hub and demand_evaluate rely on. */
    const demand_config_t *d = &c->demand;
    FUZZ_CHECK((unsigned)d->type < DEMAND_TYPE_COUNT);
    FUZZ_CHECK(d->endpoint_count <= TRIGGER_MAX_ENDPOINTS);
    for (unsigned i = 0; i < d->endpoint_count; i++) {
        FUZZ_CHECK(strnlen(d->endpoints[i], TRIGGER_URL_MAX) < TRIGGER_URL_MAX);
        /* A scheme is case-insensitive (RFC 3986): httP:// is accepted. */
        FUZZ_CHECK(strncasecmp(d->endpoints[i], "http", 4) == 0);
    }
    FUZZ_CHECK(d->matcher_count <= TRIGGER_MAX_MATCHERS);
    FUZZ_CHECK(d->redis_db >= 0 && d->redis_db <= 15);
    if (d->type == DEMAND_NONE) {
        FUZZ_CHECK(d->engine == ENGINE_NONE && d->queue == QUEUE_NONE);
    } else {
        FUZZ_CHECK(d->interval_ns >= 100000000ull && d->interval_ns <= 60000000000ull);
        FUZZ_CHECK(d->timeout_ns >= 100000000ull && d->timeout_ns <= 30000000000ull);
        /* an engine is read from URLs or from podSelector's pods */
        if (d->engine != ENGINE_NONE)
            FUZZ_CHECK(d->endpoint_count > 0 || c->has_pod_selector);
        if (d->type == DEMAND_QUEUE_LENGTH)
            FUZZ_CHECK(d->queue != QUEUE_NONE);
        if (d->type == DEMAND_COMPOSITE && d->sizing == DEMAND_MODEL_COMPOSITE)
            FUZZ_CHECK(c->target_value == 100 &&
                       (d->target_queue > 0 || d->target_running > 0 || d->target_kv > 0 ||
                        d->target_gpu > 0 || d->target_prompt_tokens > 0 ||
                        d->target_generation_tokens > 0));
        /* the queueing model: no per-signal target, its knobs in range, a
         * signal to size from */
        if (d->type == DEMAND_COMPOSITE && d->sizing == DEMAND_MODEL_QUEUEING)
            FUZZ_CHECK(c->target_value == 100 && d->target_queue == 0 && d->target_running == 0 &&
                       d->target_kv == 0 && d->target_gpu == 0 && d->target_prompt_tokens == 0 &&
                       d->target_generation_tokens == 0 && d->target_utilization >= 0 &&
                       d->target_utilization <= 1 && d->drain_s >= 1 && d->drain_s <= 600 &&
                       d->capacity_rps >= 0 && !d->forecast_trend &&
                       (d->engine != ENGINE_NONE || d->queue != QUEUE_NONE));
        FUZZ_CHECK((unsigned)d->sizing <= DEMAND_MODEL_COMPOSITE);
        if (d->type >= DEMAND_VLLM_QUEUE_DEPTH && d->type <= DEMAND_ENGINE_KV_CACHE)
            FUZZ_CHECK(d->engine != ENGINE_NONE);
        /* token rates: an engine with token counters; LoRA: vLLM and an adapter */
        if (demand_uses_token_rates(d))
            FUZZ_CHECK(d->engine != ENGINE_NONE && d->engine != ENGINE_TRITON &&
                       d->engine != ENGINE_EPP);
        /* epp: its queue and pool gauges only (no latency, no queueing model) */
        if (d->engine == ENGINE_EPP)
            FUZZ_CHECK(d->slo_mask == 0 && d->type != DEMAND_SLO &&
                       !(d->type == DEMAND_COMPOSITE && d->sizing == DEMAND_MODEL_QUEUEING));
        FUZZ_CHECK((d->type == DEMAND_VLLM_LORA_WAITING_ENGINES) == (d->lora_adapter[0] != '\0'));
        if (d->type == DEMAND_VLLM_LORA_WAITING_ENGINES)
            FUZZ_CHECK(d->engine == ENGINE_VLLM && !strchr(d->lora_adapter, ','));
        if (d->queue == QUEUE_PROMETHEUS)
            FUZZ_CHECK(d->demand_metric[0] != '\0' && d->demand_endpoint[0] != '\0');
        if (d->queue == QUEUE_REDIS_LIST || d->queue == QUEUE_REDIS_STREAM)
            FUZZ_CHECK(d->redis_key[0] != '\0' && d->redis_address[0] != '\0');
        /* parse once: every URL the sources will use is kept parsed */
        for (unsigned i = 0; i < d->endpoint_count; i++) {
            source_url_t u;
            FUZZ_CHECK(demand_endpoint_url(d, d->endpoints[i], &u) && u.host[0] != '\0');
        }
        if (d->queue != QUEUE_NONE) {
            source_url_t u;
            demand_queue_url(d, &u);
            FUZZ_CHECK(u.host[0] != '\0');
        }
    }
}

/* Every problem stored is a whole, non-empty message inside text, in
 * order; the note names a stored problem. */
static void check_problems(const trigger_problems_t *p) {
    FUZZ_CHECK(p->count >= 1 && p->stored <= p->count && p->stored <= TRIGGER_MAX_PROBLEMS);
    const char *end = p->text;
    for (unsigned i = 0; i < p->stored; i++) {
        FUZZ_CHECK(p->msg[i] >= end && p->msg[i] < p->text + sizeof p->text);
        size_t len = strnlen(p->msg[i], (size_t)(p->text + sizeof p->text - p->msg[i]));
        FUZZ_CHECK(len > 0 && p->msg[i] + len < p->text + sizeof p->text);
        end = p->msg[i] + len + 1;
        char one[16384];
        FUZZ_CHECK(trigger_problems_format_one(p, i, one, sizeof one) >= len);
        FUZZ_CHECK(strncmp(one, p->msg[i], len) == 0);
    }
    FUZZ_CHECK(!p->note || (p->note_on >= 0 && (unsigned)p->note_on < p->count));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    metadata_pair_t pairs[MAX_PAIRS], rev[MAX_PAIRS];
    size_t n = 0;
    const char *p = (const char *)data;
    size_t i = 0;
    while (i < size && n < MAX_PAIRS) {
        size_t start = i;
        while (i < size && p[i] != '\n')
            i++;
        size_t eq = start;
        while (eq < i && p[eq] != '=')
            eq++;
        pairs[n].key = p + start;
        pairs[n].key_len = eq - start;
        pairs[n].value = eq < i ? p + eq + 1 : p + i;
        pairs[n].value_len = eq < i ? i - eq - 1 : 0;
        n++;
        i++; /* the newline */
    }
    for (size_t k = 0; k < n; k++)
        rev[k] = pairs[n - 1 - k];

    static trigger_config_t a, b; /* large: keep them off the stack */
    static trigger_problems_t pa, pb;
    static char ea[16384], eb[16384];
    int ra = trigger_config_parse_problems(pairs, n, &a, &pa);
    int rb = trigger_config_parse_problems(rev, n, &b, &pb);
    FUZZ_CHECK(ra == rb);
    if (ra == 0) {
        check_config(&a);
        FUZZ_CHECK(memcmp(&a, &b, sizeof a) == 0);
        FUZZ_CHECK(pa.count == 0 && trigger_problems_format(&pa, ea, sizeof ea) == 0);
    } else {
        FUZZ_CHECK(ra == KGS_EINVAL);
        check_problems(&pa);
        size_t la = trigger_problems_format(&pa, ea, sizeof ea);
        FUZZ_CHECK(la < sizeof ea && strlen(ea) == la && la > 0);
        trigger_problems_format(&pb, eb, sizeof eb);
        FUZZ_CHECK(strcmp(ea, eb) == 0);
        /* the old interface: the same message, or, in a small buffer, whole
         * problems and a summary (never one cut) */
        char small[256];
        FUZZ_CHECK(trigger_config_parse(pairs, n, &b, small, sizeof small) == KGS_EINVAL);
        FUZZ_CHECK(small[0] != '\0');
        if (la < sizeof small)
            FUZZ_CHECK(strcmp(small, ea) == 0);
    }

    config_cache_t *cache = NULL;
    if (config_cache_new(2, &cache) != 0)
        return 0;
    const config_entry_t *e1 = config_cache_acquire(cache, pairs, n);
    const config_entry_t *e2 = config_cache_acquire(cache, rev, n);
    const config_entry_t *e3 = config_cache_acquire(cache, pairs, n > 0 ? n - 1 : 0);
    if (e1 && e2) {
        FUZZ_CHECK(e1 == e2 && e1->id == e2->id);
        FUZZ_CHECK(e1->status == ra);
        if (ra == 0)
            FUZZ_CHECK(e1->config && memcmp(e1->config, &a, sizeof a) == 0);
        else
            FUZZ_CHECK(strcmp(e1->error, ea) == 0);
    }
    config_cache_release(cache, e3);
    config_cache_release(cache, e2);
    config_cache_release(cache, e1);
    FUZZ_CHECK(config_cache_size(cache) <= 2);
    config_cache_free(cache);
    return 0;
}
