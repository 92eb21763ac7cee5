/*
 * fuzz_engine_hist.c - engine_reading_parse_full() (the latency histograms
 * of metricType slo) on arbitrary bytes, for every engine, as Prometheus
 * text and OpenMetrics, with every signal wanted and with one, without and
 * with a model filter.
 *
 * Checked:
 *   - failure: KGS_EINVAL or KGS_ENOMEM, a non-empty message, a reading
 *     and histograms that are all zero; bytes the gauge reader refuses are
 *     refused here too;
 *   - success: the gauges are the gauge reader's, byte for byte (reading
 *     histograms changes nothing else), hist_mask = the mask, the mask is
 *     within what was wanted; every histogram found has at most
 *     HIST_MAX_BUCKETS strictly increasing finite bounds, cumulative finite
 *     non-negative counts under its +Inf count, and quantiles that are
 *     numbers within [min(0, first bound), last bound];
 *   - the same bytes give the same histograms;
 *   - read as a poll reads them (engine_scan fed by a prom_stream, in
 *     pieces of 1 + size % 61 bytes): the same verdict, and the same
 *     reading and histograms, or the same message.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/err.h"
#include "sources/engine_metrics.h"
#include "sources/hist_window.h"
#include "sources/prom_parse.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool all_zero(const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i])
            return false;
    return true;
}

static void check_hist(const hist_layout_t *l, const hist_counts_t *c) {
    FUZZ_CHECK(l->n <= HIST_MAX_BUCKETS);
    double below = 0;
    for (unsigned i = 0; i < l->n; i++) {
        FUZZ_CHECK(isfinite(l->le[i]));
        if (i)
            FUZZ_CHECK(l->le[i] > l->le[i - 1]);
        FUZZ_CHECK(isfinite(c->bucket[i]) && c->bucket[i] >= below);
        below = c->bucket[i];
    }
    FUZZ_CHECK(isfinite(c->count) && c->count >= below);
    static const double qs[] = {0.5, 0.9, 0.99};
    for (size_t k = 0; k < 3; k++) {
        double v = NAN;
        bool ok = hist_quantile(l, c, qs[k], &v);
        FUZZ_CHECK(ok == (c->count > 0));
        if (ok && l->n) {
            FUZZ_CHECK(!isnan(v));
            double lo = l->le[0] < 0 ? l->le[0] : 0;
            FUZZ_CHECK(v >= lo - 1e-9 * fabs(lo) && v <= l->le[l->n - 1] * (1 + 1e-12) + 1e-300);
        }
    }
}

static engine_hists_t h, again, streamed;

/* The same page read as a poll reads it: samples through engine_scan from
 * a prom_stream fed in pieces of 1 + size % 61 bytes. Returns its verdict
 * with the reading, histograms and message. */
static int parse_streamed(engine_t e, const char *model, unsigned want, const uint8_t *data,
                          size_t size, prom_format_t fmt, engine_reading_t *r, char *err,
                          size_t errlen) {
    engine_scan_t *sc = engine_scan_new(e, model, NULL, want, true);
    FUZZ_CHECK(sc != NULL);
    prom_stream_t *ps = prom_stream_new(fmt, size + 1, engine_scan_sample, sc);
    FUZZ_CHECK(ps != NULL);
    size_t step = 1 + size % 61;
    int rc = 0;
    err[0] = '\0';
    for (size_t o = 0; o < size && rc == 0; o += step)
        rc = prom_stream_feed(ps, (const char *)data + o, size - o < step ? size - o : step, err,
                              errlen);
    if (rc == 0)
        rc = prom_stream_end(ps, err, errlen);
    if (rc != 0 && !err[0])
        snprintf(err, errlen, "%s", engine_scan_error(sc));
    if (rc == 0)
        rc = engine_scan_finish(sc, r, &streamed, err, errlen);
    prom_stream_free(ps);
    engine_scan_free(sc);
    return rc;
}

static void parse_one(engine_t e, const char *model, unsigned want, const uint8_t *data,
                      size_t size, prom_format_t fmt) {
    engine_reading_t plain, r, r2;
    int plain_rc = engine_reading_parse(e, model, (const char *)data, size, fmt, &plain, NULL, 0);
    char err[512];
    memset(err, 'z', sizeof err);
    memset(&r, 0xa5, sizeof r);
    memset(&h, 0xa5, sizeof h);
    int rc = engine_reading_parse_full(e, model, NULL, want, (const char *)data, size, fmt, &r, &h,
                                       err, sizeof err);
    engine_reading_t rs;
    char serr[512];
    int src = parse_streamed(e, model, want, data, size, fmt, &rs, serr, sizeof serr);
    FUZZ_CHECK(src == rc);
    if (rc == 0)
        FUZZ_CHECK(memcmp(&rs, &r, sizeof r) == 0 && memcmp(&streamed, &h, sizeof h) == 0);
    else
        FUZZ_CHECK(strcmp(serr, err) == 0);
    if (rc != 0) {
        FUZZ_CHECK(rc == KGS_EINVAL || rc == KGS_ENOMEM);
        FUZZ_CHECK(memchr(err, '\0', sizeof err) != NULL && err[0] != '\0');
        FUZZ_CHECK(all_zero(&r, sizeof r));
        FUZZ_CHECK(all_zero(&h, sizeof h));
        return;
    }
    FUZZ_CHECK(plain_rc == 0);
    FUZZ_CHECK((h.mask & ~want) == 0);
    FUZZ_CHECK(r.hist_mask == h.mask);
    /* a histogram lacking is one wanted and not found, on the engine's page */
    FUZZ_CHECK((r.hist_lacking & ~want) == 0 && (r.hist_lacking & h.mask) == 0);
    if (r.hist_lacking)
        FUZZ_CHECK(r.recognised);
    r.hist_mask = 0;
    r.hist_lacking = 0;
    FUZZ_CHECK(memcmp(&r, &plain, sizeof r) == 0);
    for (int s = 0; s < SLO_SIGNAL_COUNT; s++) {
        if (h.mask & (1u << s))
            check_hist(&h.layout[s], &h.counts[s]);
        else
            FUZZ_CHECK(all_zero(&h.layout[s], sizeof h.layout[s]) &&
                       all_zero(&h.counts[s], sizeof h.counts[s]));
    }
    if (h.has_start)
        FUZZ_CHECK(isfinite(h.start_time_s) && h.start_time_s > 0);
    FUZZ_CHECK(engine_reading_parse_full(e, model, NULL, want, (const char *)data, size, fmt, &r2,
                                         &again, NULL, 0) == 0);
    FUZZ_CHECK(memcmp(&again, &h, sizeof h) == 0);
}

static void run(const uint8_t *data, size_t size, prom_format_t fmt) {
    static const engine_t engines[] = {ENGINE_VLLM, ENGINE_TRITON, ENGINE_TGI, ENGINE_SGLANG};
    for (size_t i = 0; i < sizeof engines / sizeof engines[0]; i++) {
        parse_one(engines[i], "", (1u << SLO_SIGNAL_COUNT) - 1, data, size, fmt);
        parse_one(engines[i], "m", (1u << SLO_SIGNAL_COUNT) - 1, data, size, fmt);
        parse_one(engines[i], "", 1u << (size % SLO_SIGNAL_COUNT), data, size, fmt);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    run(data, size, PROM_FORMAT_TEXT);
    run(data, size, PROM_FORMAT_OPENMETRICS);
    return 0;
}
