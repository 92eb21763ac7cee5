/*
 * forecast.h - Holt's linear (double exponential) smoothing of one demand
 * value sampled at irregular times, to report the demand expected a cold
 * start ahead (trigger keys `forecast: trend` and `coldStartSeconds`).
 *
 * Why: a new GPU replica serves only after node provisioning, image pull
 * and weight load (minutes). A scaler that reports the demand it sees now
 * is late by exactly one cold start on every ramp. The forecast reports
 * level + trend x (cold start), never less than the demand now, so it can
 * only scale up earlier; scale-down stays with KEDA's cooldown and the
 * HPA's stabilisation window.
 *
 * Smoothing weights are per second of elapsed time: an update dt seconds
 * after the previous one uses 1 - (1 - alpha)^dt for the level and
 * 1 - (1 - beta)^dt for the trend, so a source polled every 0.5 s or every
 * 5 s converges on the same time scale. The trend is in units per second.
 *
 * Pure: no I/O, no clock reads (time is an argument, in seconds on any
 * monotonic clock), no allocation. A forecast_t is caller-owned storage;
 * one writer at a time (the caller serialises updates and reads).
 */
#ifndef KGS_CORE_FORECAST_H
#define KGS_CORE_FORECAST_H

#include <stdbool.h>

/* Defaults chosen with tools/scalesim on the Azure LLM trace (bench/README.md,
 * "Autoscaling simulator"): level and trend time constants of ~10 s and
 * ~50 s. On that trace the forecast did not beat plain demand scaling on
 * GPU-hours at equal SLO, so the trigger's default is `forecast: none`. */
#define FORECAST_DEFAULT_ALPHA 0.1
#define FORECAST_DEFAULT_BETA 0.02

typedef struct {
    /* read-only for callers */
    double alpha;   /* level weight per second, (0, 1] */
    double beta;    /* trend weight per second, (0, 1] */
    double level;   /* smoothed value, >= 0 */
    double trend;   /* smoothed change per second (may be negative) */
    double last_t;  /* seconds: time of the last accepted update */
    unsigned count; /* accepted updates; 0 = nothing seen yet */
} forecast_t;

/*
 * Initialises *f with the given weights (per second). Returns 0, or
 * KGS_EINVAL when f is NULL or alpha/beta is not a finite number in (0, 1]
 * (then *f, if non-NULL, is left at the defaults, still usable).
 */
int forecast_init(forecast_t *f, double alpha, double beta);

/*
 * Feeds the value observed at time t_s (seconds). The first update sets the
 * level and a zero trend. A later update with t_s equal to the previous one
 * moves the level by alpha and leaves the trend. Returns 0, or KGS_EINVAL
 * (state unchanged) when f is NULL, t_s or value is NaN or infinite, value is
 * negative, or t_s is earlier than the previous update.
 */
int forecast_update(forecast_t *f, double t_s, double value);

/*
 * The demand expected horizon_s seconds after t_s:
 *   max(now_value, level + trend x (t_s - last update + horizon_s)),
 * never negative. now_value is the demand now (NaN or negative reads as 0);
 * a NaN or negative horizon reads as 0; with no update yet, or a NaN
 * extrapolation, the answer is now_value. f may be NULL (same as no update).
 */
double forecast_ahead(const forecast_t *f, double t_s, double horizon_s, double now_value);

#endif
