/* test_forecast.c - Holt's linear smoothing on steady values, ramps, steps,
 * irregular sampling and bad input. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/err.h"
#include "core/forecast.h"

static forecast_t fresh(void) {
    forecast_t f;
    assert_int_equal(forecast_init(&f, FORECAST_DEFAULT_ALPHA, FORECAST_DEFAULT_BETA), 0);
    return f;
}

static void test_forecast_steady_value_forecasts_the_value(void **state) {
    (void)state;
    forecast_t f = fresh();
    for (int t = 0; t <= 600; t++)
        assert_int_equal(forecast_update(&f, t, 40), 0);
    assert_float_equal(forecast_ahead(&f, 600, 135, 40), 40, 1e-9);
    assert_float_equal(f.trend, 0, 1e-12);
}

static void test_forecast_linear_ramp_forecasts_value_plus_slope_times_horizon(void **state) {
    (void)state;
    forecast_t f = fresh();
    double slope = 0.5; /* per second */
    for (int t = 0; t <= 900; t++)
        assert_int_equal(forecast_update(&f, t, 10 + slope * t), 0);
    double now = 10 + slope * 900;
    assert_float_equal(f.trend, slope, 0.01);
    assert_float_equal(forecast_ahead(&f, 900, 120, now), now + slope * 120, 2.0);
    /* asked later than the last update: the time since counts too */
    assert_float_equal(forecast_ahead(&f, 910, 120, now), now + slope * 130, 2.0);
}

static void test_forecast_step_up_is_never_below_now_and_converges(void **state) {
    (void)state;
    forecast_t f = fresh();
    for (int t = 0; t < 100; t++)
        forecast_update(&f, t, 10);
    for (int t = 100; t <= 1000; t++) {
        forecast_update(&f, t, 50);
        assert_true(forecast_ahead(&f, t, 60, 50) >= 50);
    }
    /* long after the step the trend has died out */
    assert_float_equal(forecast_ahead(&f, 1000, 60, 50), 50, 0.5);
}

static void test_forecast_step_down_falls_back_to_now(void **state) {
    (void)state;
    forecast_t f = fresh();
    for (int t = 0; t < 300; t++)
        forecast_update(&f, t, 80);
    for (int t = 300; t <= 1500; t++) {
        forecast_update(&f, t, 20);
        double v = forecast_ahead(&f, t, 60, 20);
        assert_true(v >= 20);
        if (t > 1200) /* converged: never above the old level, back at now */
            assert_float_equal(v, 20, 0.5);
        assert_true(v <= 80 + 1e-9);
    }
}

static void test_forecast_irregular_intervals_estimate_the_slope_per_second(void **state) {
    (void)state;
    forecast_t f = fresh();
    static const double gaps[] = {0.5, 3, 1, 7, 0.25, 2};
    double t = 0, slope = 2;
    for (int i = 0; i < 600; i++) {
        assert_int_equal(forecast_update(&f, t, 100 + slope * t), 0);
        t += gaps[i % 6];
    }
    assert_float_equal(f.trend, slope, 0.05);
    /* same time scale whatever the cadence: a 1 s and a 5 s poller agree */
    forecast_t a = fresh(), b = fresh();
    for (int s = 0; s <= 300; s++) {
        forecast_update(&a, s, s < 100 ? 0 : 30);
        if (s % 5 == 0)
            forecast_update(&b, s, s < 100 ? 0 : 30);
    }
    assert_float_equal(a.level, b.level, 1.0);
}

static void test_forecast_rejects_nan_negative_and_time_going_back(void **state) {
    (void)state;
    forecast_t f = fresh();
    assert_int_equal(forecast_update(&f, 0, NAN), KGS_EINVAL);
    assert_int_equal(forecast_update(&f, NAN, 1), KGS_EINVAL);
    assert_int_equal(forecast_update(&f, 0, -1), KGS_EINVAL);
    assert_int_equal(forecast_update(&f, 0, INFINITY), KGS_EINVAL);
    assert_int_equal(f.count, 0);
    /* no update yet: the answer is the value now, NaN/negative read as 0 */
    assert_float_equal(forecast_ahead(&f, 0, 60, 7), 7, 0);
    assert_float_equal(forecast_ahead(&f, 0, 60, NAN), 0, 0);
    assert_float_equal(forecast_ahead(&f, 0, 60, -3), 0, 0);
    assert_float_equal(forecast_ahead(NULL, 0, 60, 5), 5, 0);
    assert_int_equal(forecast_update(&f, 10, 5), 0);
    assert_int_equal(forecast_update(&f, 9, 5), KGS_EINVAL);
    assert_int_equal(forecast_update(&f, 10, 7), 0); /* same instant: level only */
    assert_float_equal(f.trend, 0, 0);
    assert_true(f.level > 5 && f.level < 7);
    assert_int_equal(forecast_update(NULL, 11, 1), KGS_EINVAL);
    /* NaN or negative horizon reads as 0 */
    assert_float_equal(forecast_ahead(&f, 10, NAN, 0), f.level, 1e-12);
    assert_float_equal(forecast_ahead(&f, 10, -5, 0), f.level, 1e-12);
}

static void test_forecast_falling_trend_never_goes_negative(void **state) {
    (void)state;
    forecast_t f = fresh();
    for (int t = 0; t <= 200; t++)
        forecast_update(&f, t, t < 100 ? 100 - t : 0);
    assert_true(f.level >= 0);
    assert_true(forecast_ahead(&f, 200, 600, 0) >= 0);
}

static void test_forecast_init_rejects_bad_weights(void **state) {
    (void)state;
    forecast_t f;
    assert_int_equal(forecast_init(&f, 0, 0.1), KGS_EINVAL);
    assert_float_equal(f.alpha, FORECAST_DEFAULT_ALPHA, 0); /* still usable */
    assert_int_equal(forecast_init(&f, 0.1, 1.5), KGS_EINVAL);
    assert_int_equal(forecast_init(&f, NAN, 0.1), KGS_EINVAL);
    assert_int_equal(forecast_init(NULL, 0.1, 0.1), KGS_EINVAL);
    assert_int_equal(forecast_init(&f, 1, 1), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forecast_steady_value_forecasts_the_value),
        cmocka_unit_test(test_forecast_linear_ramp_forecasts_value_plus_slope_times_horizon),
        cmocka_unit_test(test_forecast_step_up_is_never_below_now_and_converges),
        cmocka_unit_test(test_forecast_step_down_falls_back_to_now),
        cmocka_unit_test(test_forecast_irregular_intervals_estimate_the_slope_per_second),
        cmocka_unit_test(test_forecast_rejects_nan_negative_and_time_going_back),
        cmocka_unit_test(test_forecast_falling_trend_never_goes_negative),
        cmocka_unit_test(test_forecast_init_rejects_bad_weights),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
