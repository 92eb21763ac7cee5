/*
 * counter_window.h - a short history of two cumulative counters (Triton's
 * queue time and successful requests), and their increase over a window.
 * Pure: no I/O, no clock, no allocation.
 *
 * Points are kept at least `spacing` apart (window / 100 of the longest
 * window asked for), except the newest, which always holds the latest
 * sample: 128 points then cover the longest window at any poll cadence. A
 * counter that goes down (the server restarted) starts the window again
 * after the drop.
 */
#ifndef KGS_SOURCES_COUNTER_WINDOW_H
#define KGS_SOURCES_COUNTER_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

#define COUNTER_WINDOW_POINTS 128

typedef struct {
    uint64_t at_ns;
    double a, b;
} counter_point_t;

/* Caller-owned; zero it to start. Fields private. */
typedef struct {
    counter_point_t _p[COUNTER_WINDOW_POINTS];
    unsigned _n, _first;
} counter_window_t;

/* Records counters a and b at at_ns (monotonic, not decreasing); spacing_ns
 * as above. */
void counter_window_push(counter_window_t *w, uint64_t at_ns, double a, double b,
                         uint64_t spacing_ns);

/*
 * The increase of a and b over the window_ns before the newest point (from
 * the newest point at or before its start, or the oldest kept), and the
 * seconds it spans. false when there are not two points to compare since
 * the last counter reset.
 */
bool counter_window_delta(const counter_window_t *w, uint64_t now_ns, uint64_t window_ns,
                          double *da, double *db, double *seconds);

#endif
