/*
 * load.c - see load.h.
 *
 * Arrivals of a Poisson process with a time-varying rate: the integral of
 * the rate since the last arrival (the hazard) is compared with an Exp(1)
 * draw; when it reaches it, a request arrives and a new threshold is drawn.
 * Integrating in small steps keeps the code obvious and the error below a
 * step (10 ms), far under anything the scaler or the screen resolves.
 */
#include "load.h"

#include <math.h>

#include "core/err.h"

/* splitmix64: a small, well-mixed generator, enough for a demo's dice. */
static uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* Uniform in (0, 1]: never 0, so -log() is finite. */
static double rng_unit(uint64_t *s) {
    return ((double)(rng_next(s) >> 11) + 1.0) / 9007199254740992.0;
}

static unsigned rng_between(uint64_t *s, unsigned lo, unsigned hi) {
    if (hi <= lo)
        return lo;
    return lo + (unsigned)(rng_next(s) % ((uint64_t)hi - lo + 1));
}

void load_init(load_t *l, uint64_t seed, double start_s) {
    static const load_point_t burst[] = {
        {0, 0}, {30, 0}, {90, 6}, {210, 6}, {270, 0},
    };
    for (size_t i = 0; i < sizeof burst / sizeof burst[0]; i++)
        l->profile[i] = burst[i];
    l->npoints = sizeof burst / sizeof burst[0];
    l->prompt_min = 200;
    l->prompt_max = 1000;
    l->output_min = 50;
    l->output_max = 600;
    l->max_tokens = 512;
    l->_rng = seed;
    load_restart(l, start_s);
}

int load_validate(const load_t *l, char *err, size_t errlen) {
    if (l->npoints < 1 || l->npoints > LOAD_MAX_POINTS)
        return kgs_seterr(err, errlen, KGS_EINVAL, "load profile: %zu points (valid: 1 to %d)",
                          l->npoints, LOAD_MAX_POINTS);
    if (l->profile[0].t_s != 0)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "load profile: the first point is at %g s (valid: 0)", l->profile[0].t_s);
    for (size_t i = 0; i < l->npoints; i++) {
        const load_point_t *p = &l->profile[i];
        if (!isfinite(p->rps) || p->rps < 0)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "load profile point %zu: rate %g requests/s (valid: finite, >= 0)", i,
                              p->rps);
        if (i > 0 && !(p->t_s > l->profile[i - 1].t_s))
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "load profile point %zu: at %g s, not after the point before it "
                              "(%g s)",
                              i, p->t_s, l->profile[i - 1].t_s);
    }
    if (l->prompt_min < 1 || l->prompt_max < l->prompt_min)
        return kgs_seterr(err, errlen, KGS_EINVAL, "prompt tokens %u-%u (valid: 1 <= min <= max)",
                          l->prompt_min, l->prompt_max);
    if (l->output_min < 1 || l->output_max < l->output_min || l->max_tokens < 1)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "output tokens %u-%u, max_tokens %u (valid: 1 <= min <= max, "
                          "max_tokens >= 1)",
                          l->output_min, l->output_max, l->max_tokens);
    return 0;
}

void load_restart(load_t *l, double start_s) {
    l->_start_s = start_s;
    l->_done_s = start_s;
    l->_hazard = 0;
    l->_next = -log(rng_unit(&l->_rng));
}

double load_rate(const load_t *l, double t_s) {
    double t = t_s - l->_start_s;
    if (t < 0 || l->npoints == 0)
        return 0;
    for (size_t i = 1; i < l->npoints; i++) {
        const load_point_t *a = &l->profile[i - 1], *b = &l->profile[i];
        if (t < b->t_s)
            return a->rps + (b->rps - a->rps) * (t - a->t_s) / (b->t_s - a->t_s);
    }
    return 0; /* after the last point */
}

double load_end_s(const load_t *l) {
    return l->_start_s + (l->npoints ? l->profile[l->npoints - 1].t_s : 0);
}

static void draw_request(load_t *l, double at_s, load_request_t *r) {
    r->arrive_s = at_s;
    r->prompt_tokens = rng_between(&l->_rng, l->prompt_min, l->prompt_max);
    unsigned want = rng_between(&l->_rng, l->output_min, l->output_max);
    r->hit_max_tokens = want >= l->max_tokens;
    r->output_tokens = r->hit_max_tokens ? l->max_tokens : want;
}

size_t load_arrivals(load_t *l, double t_s, load_request_t *out, size_t max) {
    size_t n = 0;
    /* arrivals a full buffer held back last time come first, at their time */
    while (l->_hazard >= l->_next && n < max) {
        l->_hazard -= l->_next;
        l->_next = -log(rng_unit(&l->_rng));
        draw_request(l, l->_done_s, &out[n++]);
    }
    double until = t_s < l->_done_s + LOAD_MAX_CALL_S ? t_s : l->_done_s + LOAD_MAX_CALL_S;
    /* bounded: (until - _done_s) / LOAD_STEP_S steps, at most 60 000 */
    while (l->_done_s < until && n < max) {
        double step = until - l->_done_s < LOAD_STEP_S ? until - l->_done_s : LOAD_STEP_S;
        double mid = l->_done_s + step / 2;
        l->_hazard += load_rate(l, mid) * step;
        l->_done_s += step;
        /* several arrivals may fall in one step at a high rate */
        while (l->_hazard >= l->_next && n < max) {
            l->_hazard -= l->_next;
            l->_next = -log(rng_unit(&l->_rng));
            draw_request(l, l->_done_s, &out[n++]);
        }
    }
    return n;
}
