/*
 * hist_window.c - see the header.
 */
#include "sources/hist_window.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "sources/prom_parse.h"

bool hist_parse_le(const char *le, double *v, bool *inf) {
    size_t n = le ? strlen(le) : 0;
    if (n == 0 || n > 64)
        return false;
    if (!strcmp(le, "+Inf") || !strcmp(le, "Inf") || !strcmp(le, "+inf")) {
        *inf = true;
        return true;
    }
    if (prom_plain_decimal(le, n, v)) { /* "0.005": the bounds of real layouts */
        *inf = false;
        return true;
    }
    char *end = NULL;
    double d = strtod(le, &end);
    if (end == le || *end || !isfinite(d) || (le[0] == '0' && (le[1] == 'x' || le[1] == 'X')))
        return false;
    *v = d;
    *inf = false;
    return true;
}

static bool count_ok(double v) {
    return isfinite(v) && v >= 0;
}

int hist_collect_bucket(hist_collect_t *c, const char *le, double value, char *err, size_t errlen) {
    double bound = 0;
    bool inf = false;
    if (!hist_parse_le(le, &bound, &inf))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "a histogram bucket's le label is not a number (%zu bytes)",
                          le ? strlen(le) : 0);
    return hist_collect_bound(c, bound, inf, value, err, errlen);
}

int hist_collect_bound(hist_collect_t *c, double bound, bool inf, double value, char *err,
                       size_t errlen) {
    if (!inf && !isfinite(bound))
        return kgs_seterr(err, errlen, KGS_EINVAL, "a histogram bucket's bound is not finite");
    if (!count_ok(value))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "a histogram bucket counts %g observations: a count is finite and "
                          "not negative",
                          value);
    if (inf) {
        if (c->_has_inf)
            return kgs_seterr(err, errlen, KGS_EINVAL, "the +Inf bucket is given twice");
        c->_has_inf = true;
        c->_inf = value;
        return 0;
    }
    for (unsigned i = 0; i < c->_n; i++)
        if (c->_le[i] == bound)
            return kgs_seterr(err, errlen, KGS_EINVAL, "the bucket le=%g is given twice", bound);
    if (c->_n == HIST_MAX_BUCKETS)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "a histogram has more than %d finite buckets; at most %d are read",
                          HIST_MAX_BUCKETS, HIST_MAX_BUCKETS);
    c->_le[c->_n] = bound;
    c->_v[c->_n] = value;
    c->_n++;
    return 0;
}

void hist_collect_sum(hist_collect_t *c, double value) {
    c->_sum = value;
    c->_has_sum = true;
}

int hist_collect_finish(const hist_collect_t *c, hist_layout_t *layout, hist_counts_t *counts,
                        char *err, size_t errlen) {
    if (!c->_has_inf)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "a histogram without its le=\"+Inf\" bucket (%u finite buckets)", c->_n);
    /* Insertion sort: expositions list buckets in order, so this is one pass. */
    unsigned idx[HIST_MAX_BUCKETS];
    for (unsigned i = 0; i < c->_n; i++) {
        unsigned j = i;
        while (j > 0 && c->_le[idx[j - 1]] > c->_le[i]) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = i;
    }
    memset(layout, 0, sizeof *layout);
    memset(counts, 0, sizeof *counts);
    layout->n = c->_n;
    double below = 0;
    for (unsigned i = 0; i < c->_n; i++) {
        layout->le[i] = c->_le[idx[i]];
        counts->bucket[i] = c->_v[idx[i]];
        if (counts->bucket[i] < below)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "the bucket le=%g counts %g, fewer than the %g below it: buckets "
                              "are cumulative",
                              layout->le[i], counts->bucket[i], below);
        below = counts->bucket[i];
    }
    if (c->_inf < below)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "the +Inf bucket counts %g, fewer than the %g below it: buckets are "
                          "cumulative",
                          c->_inf, below);
    counts->count = c->_inf;
    counts->sum = c->_has_sum && isfinite(c->_sum) ? c->_sum : 0;
    return 0;
}

bool hist_layout_equal(const hist_layout_t *a, const hist_layout_t *b) {
    if (a->n != b->n)
        return false;
    for (unsigned i = 0; i < a->n; i++)
        if (a->le[i] != b->le[i])
            return false;
    return true;
}

bool hist_pod_delta(hist_pod_t *pod, const hist_counts_t *now, bool since_start, unsigned nbuckets,
                    hist_counts_t *delta) {
    bool first = !pod->_seen;
    bool reset = false;
    if (!first) {
        reset = now->count < pod->_last.count;
        for (unsigned i = 0; i < nbuckets && !reset; i++)
            reset = now->bucket[i] < pod->_last.bucket[i];
    }
    bool have = true;
    if (first && !since_start) {
        have = false;
    } else if (first || reset) {
        *delta = *now;
    } else {
        for (unsigned i = 0; i < nbuckets; i++)
            delta->bucket[i] = now->bucket[i] - pod->_last.bucket[i];
        delta->count = now->count - pod->_last.count;
        delta->sum = now->sum - pod->_last.sum;
    }
    pod->_last = *now;
    pod->_seen = true;
    return have;
}

static hist_slot_t *slot(hist_window_t *w, unsigned i) {
    return &w->_s[(w->_first + i) % HIST_WINDOW_SLOTS];
}

static const hist_slot_t *cslot(const hist_window_t *w, unsigned i) {
    return &w->_s[(w->_first + i) % HIST_WINDOW_SLOTS];
}

void hist_window_reset(hist_window_t *w, const hist_layout_t *layout) {
    w->_layout = *layout;
    w->_n = 0;
    w->_first = 0;
}

const hist_layout_t *hist_window_layout(const hist_window_t *w) {
    return &w->_layout;
}

void hist_window_add(hist_window_t *w, uint64_t at_ns, const hist_counts_t *delta,
                     uint64_t spacing_ns) {
    /* A new slot once the newest is spacing old (and never for the same
     * instant: every pod scraped in one round lands in one slot). A time
     * before the newest slot's joins it. */
    uint64_t gap = spacing_ns ? spacing_ns : 1;
    if (w->_n == 0 ||
        (at_ns > slot(w, w->_n - 1)->at_ns && at_ns - slot(w, w->_n - 1)->at_ns >= gap)) {
        if (w->_n == HIST_WINDOW_SLOTS) {
            w->_first = (w->_first + 1) % HIST_WINDOW_SLOTS;
            w->_n--;
        }
        hist_slot_t *s = slot(w, w->_n++);
        memset(s, 0, sizeof *s);
        s->at_ns = at_ns;
    }
    hist_slot_t *s = slot(w, w->_n - 1);
    for (unsigned i = 0; i < w->_layout.n; i++)
        s->c.bucket[i] += delta->bucket[i];
    s->c.count += delta->count;
    s->c.sum += delta->sum;
}

double hist_window_sum(const hist_window_t *w, uint64_t now_ns, uint64_t window_ns,
                       hist_counts_t *out) {
    memset(out, 0, sizeof *out);
    bool all = now_ns < window_ns;
    uint64_t from = all ? 0 : now_ns - window_ns;
    for (unsigned k = 0; k < w->_n; k++) {
        const hist_slot_t *s = cslot(w, k);
        /* A slot holds what the scrapes at its time counted since the ones
         * before; at `from` or earlier it is history (the window is
         * (now - window, now]). */
        if (!all && s->at_ns <= from)
            continue;
        for (unsigned i = 0; i < w->_layout.n; i++)
            out->bucket[i] += s->c.bucket[i];
        out->count += s->c.count;
        out->sum += s->c.sum;
    }
    return out->count;
}

bool hist_quantile(const hist_layout_t *layout, const hist_counts_t *counts, double q,
                   double *out) {
    if (!(counts->count > 0) || !(q > 0 && q < 1))
        return false;
    double rank = q * counts->count;
    /* Buckets made non-decreasing (histogram_quantile's own guard against
     * a delta that crosses a scrape inconsistently). */
    double below = 0, prev_le = 0;
    for (unsigned i = 0; i < layout->n; i++) {
        double cum = counts->bucket[i] > below ? counts->bucket[i] : below;
        if (cum >= rank) {
            double start = i == 0 ? (layout->le[0] > 0 ? 0 : layout->le[0]) : prev_le;
            double in = cum - below;
            double v =
                in > 0 ? start + (layout->le[i] - start) * ((rank - below) / in) : layout->le[i];
            /* start + (le - start) x 1 can round past le (0.001 + 0.009 is
             * 0.010000000000000002): the quantile stays inside its bucket */
            *out = v > layout->le[i] ? layout->le[i] : v < start ? start : v;
            return true;
        }
        below = cum;
        prev_le = layout->le[i];
    }
    /* In the +Inf bucket: the largest finite bound, or 0 without any. */
    *out = layout->n ? layout->le[layout->n - 1] : 0;
    return true;
}
