/*
 * stability.c - see stability.h. Why these definitions: the issue that asked
 * for them (the queueing model's output jumping 42 -> 5 -> ... -> 113 -> 46
 * -> 131 between syncs) is about a controller that changes its mind, not
 * about one that follows traffic. A move of one replica is the rounding of a
 * steady signal, so it neither counts as a move nor interrupts one; a flat
 * stretch between a rise and a fall does not hide the fall. The ratio
 * ignores moves to and from zero, which the HPA's formula produces whenever
 * the metric reads 0 and which KEDA's activation, not the HPA, acts on.
 */
#include "stability.h"

void stability_init(stability_t *s) {
    s->syncs = 0;
    s->reversals = 0;
    s->steps = 0;
    s->max_step = 0;
    s->_prev = -1;
    s->_last_move = 0;
}

void stability_break(stability_t *s) {
    s->_prev = -1;
    s->_last_move = 0;
}

void stability_add(stability_t *s, int desired) {
    int d = desired < 0 ? 0 : desired;
    s->syncs++;
    if (s->_prev >= 0) {
        int a = s->_prev, move = d - a;
        if (move > 1 || move < -1) {
            int sign = move > 0 ? 1 : -1;
            if (s->_last_move != 0 && sign != s->_last_move)
                s->reversals++;
            s->_last_move = sign;
        }
        if (a > 0 && d > 0) {
            double r = a > d ? (double)a / d : (double)d / a;
            s->steps++;
            if (r > s->max_step)
                s->max_step = r;
        }
    }
    s->_prev = d;
}
