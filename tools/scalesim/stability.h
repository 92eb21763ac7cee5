/*
 * stability.h - how steadily a policy asks for replicas: the `reversals` and
 * `max_step` figures of the simulator's table (bench/README.md, "Stability
 * figures"). Pure: no I/O, no allocation; caller-owned storage.
 *
 * The input is the sequence of desired replica counts a KEDA policy asks the
 * HPA for, one per HPA sync: what the metric KEDA hands the HPA comes to in
 * replicas by the HPA's own formula without its tolerance band
 * (ceil(value / target) for AverageValue), before the HPA stabilises, limits
 * and clamps it. The HPA runs only while the workload has replicas, so a
 * scale to zero, or a sync with no metric (a failed evaluation), ends a run
 * (stability_break); nothing is compared across runs.
 *
 *   reversals: within a run, take the moves d[k] - d[k-1] whose magnitude is
 *              greater than 1 (moves of 0 or 1 are skipped); a reversal is
 *              such a move whose sign differs from the previous such move.
 *              Up 10, flat, up 1, down 15 is one reversal.
 *   max_step:  the largest max(a, b) / min(a, b) over consecutive counts a,
 *              b of a run that are both > 0 (a move to or from 0 has no
 *              ratio). Defined only when steps > 0.
 */
#ifndef SCALESIM_STABILITY_H
#define SCALESIM_STABILITY_H

typedef struct {
    /* read-only */
    unsigned syncs;     /* counts taken in (stability_add calls) */
    unsigned reversals; /* see above */
    unsigned steps;     /* consecutive pairs with both counts > 0 */
    double max_step;    /* >= 1 when steps > 0; 0 (undefined) otherwise */
    /* private */
    int _prev;      /* the run's last count; -1 before a run starts */
    int _last_move; /* sign of the run's last move of magnitude > 1; 0 none yet */
} stability_t;

void stability_init(stability_t *s);

/* Takes in one sync's desired count (>= 0; a negative one is taken as 0). */
void stability_add(stability_t *s, int desired);

/* Ends the current run: the next count starts a new one. */
void stability_break(stability_t *s);

#endif
