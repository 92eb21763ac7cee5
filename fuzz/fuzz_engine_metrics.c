/*
 * fuzz_engine_metrics.c - engine_reading_parse() on arbitrary bytes (one
 * scrape, never NUL-terminated), for every engine (the endpoint picker,
 * epp, too), as Prometheus text and as OpenMetrics, without and with a
 * model filter.
 *
 * Checked:
 *   - failure: KGS_EINVAL or KGS_ENOMEM, a non-empty message, and a
 *     reading that is all zero; input the parser rejects always fails, and
 *     input it accepts fails only for a value that is not a number
 *     ("... no usable value");
 *   - success: a field whose has_* is false is 0, a known gauge is not
 *     NaN (a sum of finite samples may overflow to Inf), a known completed
 *     or token counter is finite and never negative, and
 *     has_tokens means both token totals are known; a known gauge means at
 *     least one series was counted;
 *   - the same bytes give the same reading (byte for byte);
 *   - the model filter only takes away: fewer series, and a counter known
 *     both ways is no larger filtered;
 *   - engine epp: the pool counts are known only with their has_* (and
 *     running / KV only with pool gauges), the summed running and KV stay
 *     0; other engines never set the pool fields; a failure on input the
 *     parser accepts may also be one of the pool rules (limit, pairing,
 *     duplicates);
 *   - vLLM's LoRA series (engine_reading_parse_full, adapter "a"): the
 *     adapter flags only with has_lora; reading it changes nothing else of
 *     the reading (status, gauges, counters), and without an adapter, or for
 *     another engine, has_lora stays false.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/err.h"
#include "sources/engine_metrics.h"
#include "sources/prom_parse.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A known gauge is a number; it may be +-Inf when finite samples overflow
 * the sum. A known learning counter is finite. An unknown field is 0. */
static void check_field(bool has, double v, bool finite) {
    if (!has)
        FUZZ_CHECK(v == 0);
    else
        FUZZ_CHECK(finite ? isfinite(v) : !isnan(v));
}

static void check_reading(engine_t e, const engine_reading_t *r) {
    check_field(r->has_waiting, r->waiting, false);
    check_field(r->has_running, r->running, false);
    check_field(r->has_kv, r->kv_percent, false);
    check_field(r->has_triton, r->queue_us, false);
    check_field(r->has_triton, r->success, false);
    check_field(r->has_completed, r->completed_total, true);
    check_field(r->has_tokens, r->prompt_tokens_total, true);
    check_field(r->has_tokens, r->generation_tokens_total, true);
    FUZZ_CHECK(r->completed_total >= 0);
    FUZZ_CHECK(r->prompt_tokens_total >= 0 && r->generation_tokens_total >= 0);
    if (!r->has_lora)
        FUZZ_CHECK(!r->lora_waiting && !r->lora_running);
    /* a first-use family read as the engine's zero counts no series */
    if ((r->has_waiting && !(r->first_use_zero & ENGINE_ZERO_WAITING)) ||
        (r->has_running && !(r->first_use_zero & ENGINE_ZERO_RUNNING)) || r->has_kv ||
        r->has_triton)
        FUZZ_CHECK(r->series > 0);
    if (r->first_use_zero)
        FUZZ_CHECK(r->recognised && e != ENGINE_EPP);
    if (r->first_use_zero & ENGINE_ZERO_WAITING)
        FUZZ_CHECK(r->has_waiting && r->waiting == 0);
    if (r->first_use_zero & ENGINE_ZERO_RUNNING)
        FUZZ_CHECK(r->has_running && r->running == 0);
    if (r->first_use_zero & (ENGINE_ZERO_COMPLETED | ENGINE_ZERO_TOKENS))
        FUZZ_CHECK(!r->served);
    FUZZ_CHECK(r->hist_lacking == 0); /* no latency targets here */
    check_field(r->has_saturation, r->saturation_load, false);
    check_field(r->has_pool, r->pool_ready, false);
    check_field(r->has_waiting, r->pool_waiting, false);
    check_field(r->has_running, r->pool_running, false);
    check_field(r->has_kv, r->pool_kv_percent, false);
    FUZZ_CHECK(!(r->pool_ready < 0 || r->pool_waiting < 0 || r->pool_running < 0 ||
                 r->pool_kv_percent < 0));
    if (e == ENGINE_EPP) {
        FUZZ_CHECK(r->running == 0 && r->kv_percent == 0);
        FUZZ_CHECK(!r->has_triton && !r->has_completed && !r->has_tokens);
        if (r->has_running || r->has_kv)
            FUZZ_CHECK(r->has_pool);
        if (!r->has_pool)
            FUZZ_CHECK(r->pool_waiting == 0 && r->pool_running == 0 && r->pool_kv_percent == 0);
    } else {
        FUZZ_CHECK(!r->has_pool && r->pool_ready == 0 && r->pool_waiting == 0 &&
                   r->pool_running == 0 && r->pool_kv_percent == 0);
    }
}

static bool all_zero(const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i])
            return false;
    return true;
}

/* Returns engine_reading_parse()'s status; *r holds the reading. */
static int parse_one(engine_t e, const char *model, const uint8_t *data, size_t size,
                     prom_format_t fmt, int syntax_rc, engine_reading_t *r) {
    char err[512];
    memset(err, 'z', sizeof err);
    memset(r, 0xa5, sizeof *r); /* every byte must be written */
    int rc = engine_reading_parse(e, model, (const char *)data, size, fmt, r, err, sizeof err);
    if (rc != 0) {
        FUZZ_CHECK(rc == KGS_EINVAL || rc == KGS_ENOMEM);
        FUZZ_CHECK(memchr(err, '\0', sizeof err) != NULL && err[0] != '\0');
        FUZZ_CHECK(all_zero(r, sizeof *r));
        if (syntax_rc == 0 && rc == KGS_EINVAL)
            FUZZ_CHECK(strstr(err, "no usable value") != NULL ||
                       strstr(err, "cannot be negative") != NULL ||
                       strstr(err, "is not finite (the samples overflow)") != NULL ||
                       (e == ENGINE_EPP && (strstr(err, "inference pool") != NULL ||
                                            strstr(err, "series for its pool") != NULL)));
        return rc;
    }
    FUZZ_CHECK(syntax_rc == 0);
    check_reading(e, r);
    FUZZ_CHECK(!r->has_lora); /* no adapter asked for */
    engine_reading_t again;
    FUZZ_CHECK(engine_reading_parse(e, model, (const char *)data, size, fmt, &again, NULL, 0) == 0);
    FUZZ_CHECK(memcmp(&again, r, sizeof again) == 0);
    /* With an adapter: the same reading plus the LoRA flags (vLLM only). */
    engine_reading_t lora;
    memset(&lora, 0xa5, sizeof lora);
    FUZZ_CHECK(engine_reading_parse_full(e, model, "a", 0, (const char *)data, size, fmt, &lora,
                                         NULL, NULL, 0) == 0);
    check_reading(e, &lora);
    if (e != ENGINE_VLLM)
        FUZZ_CHECK(!lora.has_lora);
    lora.has_lora = lora.lora_waiting = lora.lora_running = false;
    FUZZ_CHECK(memcmp(&lora, r, sizeof lora) == 0);
    return 0;
}

static void run(const uint8_t *data, size_t size, prom_format_t fmt) {
    static const engine_t engines[] = {ENGINE_VLLM, ENGINE_TRITON, ENGINE_TGI, ENGINE_SGLANG,
                                       ENGINE_EPP};
    int syntax_rc = prom_parse((const char *)data, size, fmt, NULL, NULL, NULL, 0);
    for (size_t i = 0; i < sizeof engines / sizeof engines[0]; i++) {
        engine_reading_t all, one;
        int rc_all = parse_one(engines[i], "", data, size, fmt, syntax_rc, &all);
        int rc_one = parse_one(engines[i], "m", data, size, fmt, syntax_rc, &one);
        if (rc_all != 0 || rc_one != 0)
            continue;
        FUZZ_CHECK(one.series <= all.series);
        if (one.has_completed && all.has_completed)
            FUZZ_CHECK(one.completed_total <= all.completed_total * (1 + 1e-9) + 1e-9);
        if (one.has_tokens && all.has_tokens) {
            FUZZ_CHECK(one.prompt_tokens_total <= all.prompt_tokens_total * (1 + 1e-9) + 1e-9);
            FUZZ_CHECK(one.generation_tokens_total <=
                       all.generation_tokens_total * (1 + 1e-9) + 1e-9);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    run(data, size, PROM_FORMAT_TEXT);
    run(data, size, PROM_FORMAT_OPENMETRICS);
    return 0;
}
