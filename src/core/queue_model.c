/*
 * queue_model.c - the estimators and the sizing rule (see the header for
 * the contract and the reasons).
 *
 * Smoothing is exponential in elapsed time, 1 - exp(-dt / tau), so a source
 * polled every 100 ms and one polled every 5 s converge on the same time
 * scale. The arrival rate keeps two averages and reports the larger: a burst
 * shows within ~10 s, and a lull lowers the estimate only over ~60 s, which
 * is the asymmetry an SLO wants (a replica too many costs a little, a
 * replica too few queues every request behind it).
 */
#include "core/queue_model.h"

#include <math.h>
#include <string.h>

#define TAU_LAMBDA_FAST_S 10.0
#define TAU_LAMBDA_SLOW_S 60.0
#define TAU_CAPACITY_S 120.0
#define TAU_TREND_S 30.0
#define TAU_SERVICE_S 60.0
#define MIX_RATIO_MIN 0.25
#define MIX_RATIO_MAX 4.0
/* A pod still starting after the expected cold start is assumed to serve
 * for this share of the horizon: it is late, not gone. */
#define OVERDUE_SERVE_SHARE 0.75

static bool ok(double v) {
    return isfinite(v) && v >= 0;
}

static double weight(double dt, double tau) {
    return -expm1(-dt / tau);
}

static double smooth(double old, double obs, double dt, double tau) {
    return old + weight(dt, tau) * (obs - old);
}

void queue_model_init(queue_model_t *m) {
    memset(m, 0, sizeof *m);
}

void queue_model_params_default(queue_model_params_t *p) {
    p->target_utilisation = QUEUE_MODEL_DEFAULT_UTILISATION;
    p->drain_s = QUEUE_MODEL_DEFAULT_DRAIN_S;
    p->cold_start_s = 0;
    p->capacity_rps = 0;
}

/* A copy of *in with every unusable number marked as not provided. */
static void sanitise(const queue_model_sample_t *in, queue_model_sample_t *s) {
    *s = *in;
    if (!ok(s->completed))
        s->has_completed = false;
    if (!ok(s->prompt_tokens) || !ok(s->generation_tokens))
        s->has_tokens = false;
    if (!ok(s->waiting) || !ok(s->running))
        s->has_engine = false;
    if (!ok(s->queue))
        s->has_queue = false;
    if (s->starting_ages > QUEUE_MODEL_MAX_STARTING)
        s->starting_ages = QUEUE_MODEL_MAX_STARTING;
    if (s->starting_ages > s->starting)
        s->starting_ages = s->starting;
    for (unsigned i = 0; i < s->starting_ages; i++)
        if (!ok(s->starting_age_s[i]))
            s->starting_age_s[i] = 0;
}

/* Requests present (waiting anywhere, or running) in s, and whether that is
 * known the same way in both samples (a gauge that appears or disappears
 * between them would read as arrivals or completions). */
static bool present(const queue_model_sample_t *a, const queue_model_sample_t *b, double *pa,
                    double *pb) {
    if (a->has_engine != b->has_engine || a->has_queue != b->has_queue)
        return false;
    if (!a->has_engine && !a->has_queue)
        return false;
    *pa = (a->has_engine ? a->waiting + a->running : 0) + (a->has_queue ? a->queue : 0);
    *pb = (b->has_engine ? b->waiting + b->running : 0) + (b->has_queue ? b->queue : 0);
    return true;
}

static double backlog_of(const queue_model_sample_t *s) {
    return (s->has_engine ? s->waiting : 0) + (s->has_queue ? s->queue : 0);
}

void queue_model_observe(queue_model_t *m, const queue_model_sample_t *in) {
    queue_model_sample_t s;
    sanitise(in, &s);
    if (!isfinite(s.t_s))
        return;
    if (!m->have_prev) {
        m->prev = s;
        m->have_prev = true;
        return;
    }
    const queue_model_sample_t *p = &m->prev;
    double dt = s.t_s - p->t_s;
    if (!(dt > 0))
        return;

    bool counters = s.has_completed && p->has_completed;
    double done = counters ? s.completed - p->completed : 0;
    bool reset = counters && done < 0; /* a pod restarted: its counters began again */
    if (s.members != p->members) {
        /* other engines than last time: neither the counters' nor the
         * gauges' sums compare; the next interval will */
        m->prev = s;
        return;
    }

    /* Arrival rate. With completions: what finished plus what accumulated.
     * Without them, only while nothing is Ready does the queue's growth
     * count every arrival exactly (nothing drains it). */
    double pa, pb;
    bool have_present = present(p, &s, &pa, &pb);
    bool rate_known = false;
    double arrived = 0;
    if (counters && !reset && have_present) {
        arrived = done + (pb - pa);
        rate_known = true;
    } else if (!s.has_completed && have_present && p->ready == 0 && s.ready == 0) {
        arrived = pb - pa;
        rate_known = true;
    }
    if (rate_known) {
        /* a negative sum (gauges read between two scrapes of different pods)
         * reads as no arrivals, not as negative ones */
        double obs = arrived > 0 ? arrived / dt : 0;
        if (!m->have_lambda) {
            m->lambda_fast = m->lambda_slow = obs;
            m->have_lambda = true;
        } else {
            double before = m->lambda_fast;
            m->lambda_fast = smooth(m->lambda_fast, obs, dt, TAU_LAMBDA_FAST_S);
            m->lambda_trend =
                smooth(m->lambda_trend, (m->lambda_fast - before) / dt, dt, TAU_TREND_S);
            m->lambda_slow = smooth(m->lambda_slow, obs, dt, TAU_LAMBDA_SLOW_S);
        }
    }

    if (counters && !reset) {
        double rate = done / dt;
        /* Little's law inputs: completions/s and requests running. */
        if (s.has_engine) {
            if (!m->have_service) {
                m->completion_rps = rate;
                m->running_avg = s.running;
                m->have_service = true;
            } else {
                m->completion_rps = smooth(m->completion_rps, rate, dt, TAU_SERVICE_S);
                m->running_avg = smooth(m->running_avg, s.running, dt, TAU_SERVICE_S);
            }
        }
        /* Work per request, from the token counters. */
        bool tokens = s.has_tokens && p->has_tokens;
        double dp = tokens ? s.prompt_tokens - p->prompt_tokens : -1;
        double dg = tokens ? s.generation_tokens - p->generation_tokens : -1;
        if (tokens && done > 0 && dp >= 0 && dg >= 0) {
            double w = (dg + QUEUE_MODEL_PREFILL_WEIGHT * dp) / done;
            if (w > 0) {
                m->work_per_req = m->have_work ? smooth(m->work_per_req, w, dt, TAU_SERVICE_S) : w;
                m->have_work = true;
            }
        }
        /* Capacity: completions per Ready replica while work waited through
         * the whole interval and the fleet did not change size. */
        if (backlog_of(p) > 0 && backlog_of(&s) > 0 && s.ready > 0 && s.ready == p->ready) {
            double obs = rate / s.ready;
            m->capacity_rps =
                m->have_capacity ? smooth(m->capacity_rps, obs, dt, TAU_CAPACITY_S) : obs;
            if (m->have_work)
                m->capacity_work_per_req = m->work_per_req;
            m->have_capacity = m->capacity_rps > 0;
        }
    }
    m->prev = s;
}

void queue_model_observe_cold_start(queue_model_t *m, double seconds) {
    if (!isfinite(seconds) || seconds <= 0)
        return;
    m->cold_samples[m->cold_count % QUEUE_MODEL_COLD_SAMPLES] = seconds;
    m->cold_count++;
}

static double capacity_of(const queue_model_t *m, const queue_model_params_t *p,
                          queue_model_source_t *from) {
    if (p->capacity_rps > 0) {
        *from = QM_FROM_OVERRIDE;
        return p->capacity_rps;
    }
    if (m->have_capacity) {
        double c = m->capacity_rps;
        /* The mix moved since capacity was measured: heavier requests, fewer
         * of them per second. */
        if (m->have_work && m->capacity_work_per_req > 0 && m->work_per_req > 0) {
            double r = m->capacity_work_per_req / m->work_per_req;
            r = r < MIX_RATIO_MIN ? MIX_RATIO_MIN : r > MIX_RATIO_MAX ? MIX_RATIO_MAX : r;
            c *= r;
        }
        *from = QM_FROM_LEARNED;
        return c;
    }
    if (m->have_service && m->completion_rps > 0 && m->running_avg > 0) {
        double service_s = m->running_avg / m->completion_rps;
        *from = QM_FROM_DERIVED;
        return QUEUE_MODEL_PRIOR_CONCURRENCY / service_s;
    }
    *from = QM_FROM_PRIOR;
    return QUEUE_MODEL_PRIOR_CAPACITY_RPS;
}

static double cold_start_of(const queue_model_t *m, const queue_model_params_t *p,
                            queue_model_source_t *from) {
    if (p->cold_start_s > 0) {
        *from = QM_FROM_OVERRIDE;
        return p->cold_start_s;
    }
    unsigned n =
        m->cold_count < QUEUE_MODEL_COLD_SAMPLES ? m->cold_count : QUEUE_MODEL_COLD_SAMPLES;
    if (n == 0) {
        *from = QM_FROM_PRIOR;
        return QUEUE_MODEL_PRIOR_COLD_START_S;
    }
    double sum = 0;
    for (unsigned i = 0; i < n; i++)
        sum += m->cold_samples[i];
    *from = QM_FROM_LEARNED;
    return sum / n;
}

void queue_model_decide(const queue_model_t *m, const queue_model_params_t *p,
                        const queue_model_sample_t *in, queue_model_decision_t *out) {
    queue_model_sample_t s;
    sanitise(in, &s);
    memset(out, 0, sizeof *out);
    double util = p->target_utilisation > 0 && p->target_utilisation <= 1
                      ? p->target_utilisation
                      : QUEUE_MODEL_DEFAULT_UTILISATION;
    double drain = p->drain_s > 0 ? p->drain_s : QUEUE_MODEL_DEFAULT_DRAIN_S;

    double mu = capacity_of(m, p, &out->capacity_from);
    double horizon = cold_start_of(m, p, &out->cold_start_from);
    double lambda = 0;
    out->lambda_from = QM_FROM_PRIOR;
    /* A queue alone (no completion counters) shows arrivals only while no
     * replica drains it; once replicas serve, the rate is unknown and the
     * rule sizes on the backlog alone. */
    if (m->have_lambda && (s.has_completed || s.ready == 0)) {
        lambda = fmax(m->lambda_fast, m->lambda_slow);
        out->lambda_from = QM_FROM_LEARNED;
    }

    double backlog = backlog_of(&s);
    /* A rising rate keeps rising over the horizon (a ramp): the arrivals of
     * the next T are lambda T + trend T^2 / 2. A falling one is not
     * extrapolated (scale-down stays with the HPA's window). */
    double trend = m->lambda_trend > 0 ? m->lambda_trend : 0;
    double due = backlog + lambda * horizon + 0.5 * trend * horizon * horizon;
    /* Ready pods serve the whole horizon; a starting pod of age a is Ready
     * in (horizon - a) and serves a; one with no known age serves nothing
     * within it (it was just created). */
    double serving_s = (double)s.ready * horizon;
    for (unsigned i = 0; i < s.starting_ages; i++) {
        double a = s.starting_age_s[i];
        serving_s += a < horizon ? a : OVERDUE_SERVE_SHARE * horizon;
    }
    double can_do = mu * serving_s;
    double deficit = due > can_do ? due - can_do : 0;

    double steady = lambda / (mu * util);
    double replicas = steady + deficit / (mu * drain);
    /* Work exists but no rate is known yet (the first reading after a wake):
     * one replica per drain target's worth of the backlog, at least one. */
    if (replicas < 1 && (backlog > 0 || (s.has_engine && s.running > 0)))
        replicas = 1;

    /* Finite inputs can still overflow (a backlog of 1e307 at 0.001 req/s):
     * the need is then unknown, and 0 would scale the workload to nothing. */
    out->replicas = !isfinite(replicas) ? NAN : replicas > 0 ? replicas : 0;
    out->lambda_rps = lambda;
    out->capacity_rps = mu;
    out->cold_start_s = horizon;
    out->backlog = backlog;
    out->work_due = due;
    out->can_do = can_do;
    out->deficit = deficit;
    out->steady = steady;
}

const char *queue_model_source_name(queue_model_source_t s) {
    switch (s) {
    case QM_FROM_OVERRIDE:
        return "configured";
    case QM_FROM_LEARNED:
        return "learned";
    case QM_FROM_DERIVED:
        return "derived";
    case QM_FROM_PRIOR:
        return "prior";
    }
    return "?";
}
