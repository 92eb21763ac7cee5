/*
 * counter_window.c - see the header.
 */
#include "sources/counter_window.h"

static counter_point_t *at(counter_window_t *w, unsigned i) {
    return &w->_p[(w->_first + i) % COUNTER_WINDOW_POINTS];
}

static const counter_point_t *cat(const counter_window_t *w, unsigned i) {
    return &w->_p[(w->_first + i) % COUNTER_WINDOW_POINTS];
}

void counter_window_push(counter_window_t *w, uint64_t at_ns, double a, double b,
                         uint64_t spacing_ns) {
    /* The newest point is provisional while it is closer than spacing to
     * the one before it: overwrite it rather than add one. */
    if (w->_n >= 2 && at(w, w->_n - 1)->at_ns - at(w, w->_n - 2)->at_ns < spacing_ns) {
        *at(w, w->_n - 1) = (counter_point_t){at_ns, a, b};
        return;
    }
    if (w->_n == COUNTER_WINDOW_POINTS) {
        w->_first = (w->_first + 1) % COUNTER_WINDOW_POINTS;
        w->_n--;
    }
    *at(w, w->_n) = (counter_point_t){at_ns, a, b};
    w->_n++;
}

bool counter_window_delta(const counter_window_t *w, uint64_t now_ns, uint64_t window_ns,
                          double *da, double *db, double *seconds) {
    if (w->_n < 2)
        return false;
    uint64_t from = now_ns > window_ns ? now_ns - window_ns : 0;
    unsigned last = w->_n - 1, base = 0;
    for (unsigned i = 0; i < w->_n; i++)
        if (cat(w, i)->at_ns <= from)
            base = i;
    for (unsigned i = base + 1; i <= last; i++)
        if (cat(w, i)->a < cat(w, i - 1)->a || cat(w, i)->b < cat(w, i - 1)->b)
            base = i; /* a counter reset */
    if (base == last || cat(w, last)->at_ns <= cat(w, base)->at_ns)
        return false;
    *da = cat(w, last)->a - cat(w, base)->a;
    *db = cat(w, last)->b - cat(w, base)->b;
    *seconds = (double)(cat(w, last)->at_ns - cat(w, base)->at_ns) / 1e9;
    return true;
}
