/*
 * fuzz_hist_window.c - an engine's histogram, from arbitrary scrape bytes,
 * through the windowed-quantile path: prom_parse() as Prometheus text, each
 * `*_bucket` sample's le label and value into hist_collect_bucket(), `_sum`
 * into hist_collect_sum(), then hist_collect_finish(), a pod's deltas and
 * hist_quantile().
 *
 * Checked:
 *   - a refused bucket or histogram: KGS_EINVAL with a non-empty message;
 *   - a finished histogram: bounds strictly increasing and finite, buckets
 *     non-decreasing, finite and not negative, the +Inf count at least the
 *     last bucket;
 *   - a pod scraped twice with the same counts adds nothing to the window;
 *     scraped once with since_start, the window holds exactly its counts;
 *   - quantiles: none when the count is 0; otherwise finite, between
 *     min(0, first bound) and the last bound, and not decreasing in q.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/err.h"
#include "sources/hist_window.h"
#include "sources/prom_parse.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct {
    hist_collect_t c;
    bool refused;
} collect_state_t;

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !memcmp(s + n - m, suffix, m);
}

static int on_sample(void *ud, const prom_sample_t *s) {
    collect_state_t *st = ud;
    char err[256] = "";
    if (ends_with(s->name, "_bucket")) {
        const char *le = prom_sample_label(s, "le");
        int rc = hist_collect_bucket(&st->c, le, s->value, err, sizeof err);
        if (rc) {
            FUZZ_CHECK(rc == KGS_EINVAL && err[0]);
            st->refused = true;
            return 1;
        }
    } else if (ends_with(s->name, "_sum")) {
        hist_collect_sum(&st->c, s->value);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static collect_state_t st;
    memset(&st, 0, sizeof st);
    if (prom_parse((const char *)data, size, PROM_FORMAT_TEXT, on_sample, &st, NULL, 0) ||
        st.refused)
        return 0;
    hist_layout_t layout;
    hist_counts_t h;
    char err[256] = "";
    int rc = hist_collect_finish(&st.c, &layout, &h, err, sizeof err);
    if (rc) {
        FUZZ_CHECK(rc == KGS_EINVAL && err[0]);
        return 0;
    }
    FUZZ_CHECK(layout.n <= HIST_MAX_BUCKETS);
    for (unsigned i = 0; i < layout.n; i++) {
        FUZZ_CHECK(isfinite(layout.le[i]));
        FUZZ_CHECK(i == 0 || layout.le[i] > layout.le[i - 1]);
        FUZZ_CHECK(isfinite(h.bucket[i]) && h.bucket[i] >= 0);
        FUZZ_CHECK(i == 0 || h.bucket[i] >= h.bucket[i - 1]);
    }
    FUZZ_CHECK(layout.n == 0 || h.count >= h.bucket[layout.n - 1]);

    static hist_window_t w;
    hist_window_reset(&w, &layout);
    hist_pod_t pod = {0};
    hist_counts_t d, sum;
    FUZZ_CHECK(!hist_pod_delta(&pod, &h, false, layout.n, &d)); /* a baseline */
    FUZZ_CHECK(hist_pod_delta(&pod, &h, false, layout.n, &d));
    hist_window_add(&w, 1000000000ull, &d, 0);
    FUZZ_CHECK(hist_window_sum(&w, 1000000000ull, 30000000000ull, &sum) == 0);
    hist_pod_t fresh = {0};
    FUZZ_CHECK(hist_pod_delta(&fresh, &h, true, layout.n, &d));
    hist_window_add(&w, 2000000000ull, &d, 0);
    FUZZ_CHECK(hist_window_sum(&w, 2000000000ull, 30000000000ull, &sum) == h.count);

    const double qs[] = {0.01, 0.5, 0.9, 0.99};
    double prev = -INFINITY;
    for (unsigned k = 0; k < sizeof qs / sizeof qs[0]; k++) {
        double v = NAN;
        bool have = hist_quantile(&layout, &sum, qs[k], &v);
        FUZZ_CHECK(have == (sum.count > 0));
        if (!have)
            continue;
        FUZZ_CHECK(isfinite(v));
        if (layout.n) {
            double lo = layout.le[0] < 0 ? layout.le[0] : 0;
            FUZZ_CHECK(v >= lo && v <= layout.le[layout.n - 1]);
        }
        FUZZ_CHECK(v >= prev);
        prev = v;
    }
    return 0;
}
