/*
 * forecast.c - Holt's linear smoothing with time-scaled weights (see the
 * header for the contract).
 *
 * Irregular sampling (Wright 1986, "Forecasting data published at irregular
 * time intervals using an extension of Holt's method"): with dt the time since
 * the previous update,
 *   a = 1 - (1 - alpha)^dt          b = 1 - (1 - beta)^dt
 *   level' = a * y + (1 - a) * (level + trend * dt)
 *   trend' = b * (level' - level) / dt + (1 - b) * trend
 * so the trend is a slope per second whatever the sampling cadence, and a
 * long gap between samples weighs the new sample more (the old state has
 * aged). The level is kept >= 0: a demand is never negative, and letting a
 * falling trend drive the level below zero would only delay the next ramp.
 *
 * Why the floor at the current value lives in forecast_ahead and not in the
 * state: the smoothed level lags a step down by design, and reporting it
 * would hold replicas the HPA's own stabilisation already holds. Reporting
 * max(now, forecast) means the forecast can only add replicas early.
 */
#include "core/forecast.h"

#include <math.h>

#include "core/err.h"

static bool weight_ok(double w) {
    return isfinite(w) && w > 0 && w <= 1;
}

int forecast_init(forecast_t *f, double alpha, double beta) {
    if (!f)
        return KGS_EINVAL;
    f->alpha = FORECAST_DEFAULT_ALPHA;
    f->beta = FORECAST_DEFAULT_BETA;
    f->level = 0;
    f->trend = 0;
    f->last_t = 0;
    f->count = 0;
    if (!weight_ok(alpha) || !weight_ok(beta))
        return KGS_EINVAL;
    f->alpha = alpha;
    f->beta = beta;
    return 0;
}

/* 1 - (1 - w)^dt, computed without cancellation for small w * dt. */
static double weight_for(double w, double dt) {
    if (w >= 1)
        return 1;
    return -expm1(dt * log1p(-w));
}

int forecast_update(forecast_t *f, double t_s, double value) {
    if (!f || !isfinite(t_s) || !isfinite(value) || value < 0)
        return KGS_EINVAL;
    if (f->count == 0) {
        f->level = value;
        f->trend = 0;
        f->last_t = t_s;
        f->count = 1;
        return 0;
    }
    double dt = t_s - f->last_t;
    if (dt < 0)
        return KGS_EINVAL;
    if (dt == 0) {
        /* A second reading at the same instant: no time has passed for a
         * slope, so only the level moves. */
        f->level += f->alpha * (value - f->level);
        f->count++;
        return 0;
    }
    double a = weight_for(f->alpha, dt);
    double b = weight_for(f->beta, dt);
    double level = a * value + (1 - a) * (f->level + f->trend * dt);
    if (level < 0)
        level = 0;
    double trend = b * (level - f->level) / dt + (1 - b) * f->trend;
    if (!isfinite(level) || !isfinite(trend))
        return KGS_EINVAL; /* overflow on absurd inputs: keep the old state */
    f->level = level;
    f->trend = trend;
    f->last_t = t_s;
    f->count++;
    return 0;
}

double forecast_ahead(const forecast_t *f, double t_s, double horizon_s, double now_value) {
    double now = isnan(now_value) || now_value < 0 ? 0 : now_value;
    if (!f || f->count == 0)
        return now;
    double h = isnan(horizon_s) || horizon_s < 0 ? 0 : horizon_s;
    double since = t_s - f->last_t;
    if (isnan(since) || since < 0)
        since = 0;
    double pred = f->level + f->trend * (since + h);
    if (isnan(pred) || pred < now)
        return now;
    return pred;
}
