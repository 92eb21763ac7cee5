/*
 * queue_model.c - the estimators, the plan and the keep-alive (see the
 * header for the contract and the reasons).
 *
 * Smoothing is exponential in elapsed time, 1 - exp(-dt / tau), so a source
 * polled every 100 ms and one polled every 5 s converge on the same time
 * scale. The arrival rate is not smoothed per interval: it is a count over
 * a window of the arrivals ring, so one scrape's jitter (a gauge read
 * between two completions), a backlog draining (completions up, those
 * present down by as much) or a burst of a few requests moves it by what
 * they are worth over the window, never by what one interval divided by
 * its length would make of them.
 */
#include "core/queue_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TAU_CAPACITY_S 600.0
/* After the Ready count changes, the fleet settles for this long before a
 * saturated interval counts towards capacity (a replica just Ready admits a
 * batch at once and completes its first requests a service time later). */
#define SETTLE_S 10.0
/* A capacity measured over fewer saturated seconds than this is young (the
 * first intervals after a wake, engines filling their batches, read low):
 * orders stay bounded as with a prior until it is older. */
#define CAPACITY_CONFIDENT_S 60.0
/* Little's law is read only after the fleet ran this long at one size. */
#define SERVICE_SETTLE_S 60.0
#define TAU_SERVICE_S 60.0
/* A starting pod past the expected cold start is late, not gone: it is
 * assumed Ready within this share of the cold start. */
#define OVERDUE_SHARE 0.1
/* Without a pod list, a pod ordered this many cold starts ago that never
 * answered is forgotten (the order was capped, or the pod failed). */
#define ORDER_FORGET_COLD_STARTS 2.0
/* Less than this much work left at the horizon is none (half a request). */
#define LEFT_NONE 0.5
/* The fluid projection's steps over the horizon. */
#define PROJECTION_STEPS 96
/* Keep-alive: a fall of the need shorter than this is noise, not a gap;
 * the bins are log-spaced from it by this factor. */
#define GAP_MIN_S 5.0
#define GAP_BIN_FACTOR 1.65
/* The cost of a cold start in idle replica-seconds, in cold starts: a
 * replica released and asked for again costs its start-up (billed while
 * nobody is served), and every request that arrives meanwhile waits for it.
 * One cold start would be rent-or-buy's break-even for the GPU time alone;
 * three count the waiting too (bench/README.md, "The matrix": 2 lets
 * on/off traffic whose pauses outlast a short cold start pay a wake per
 * burst, 4 buys little more). */
#define COLD_START_COST 3.0
/* The fleet stayed this long at one count while more was asked: a ceiling
 * (three of the HPA's 15 s syncs: it creates pods at the sync it asks). */
#define CEILING_S 45.0
#define CEILING_FORGET_S 600.0
/* Gaps older than this weigh half (the traffic's pattern moves). */
#define GAP_HALF_LIFE_S 3600.0
/* A rate is taken to rise when it exceeds an earlier one by this many
 * standard deviations of Poisson noise (two: about one window in forty
 * reads a rise in a steady stream). */
#define RISE_NOISE_SD 2.0
/* A ramp is a rate that rose across this many adjacent rate windows. */
#define RAMP_WINDOWS 4
/* rule 5 (queue_model.h): a fall of at most this share of the last answer,
 * or of WALK_MIN_REPLICAS, is walked down one replica per HPA sync */
#define WALK_SHARE 0.25
#define WALK_MIN_REPLICAS 2.0

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
    for (unsigned j = 0; j < QUEUE_MODEL_LEVELS; j++)
        m->level_last_s[j] = m->level_ordered_s[j] = -1;
    m->above_since = -1;
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
    if (s->starting_etas > s->starting_ages)
        s->starting_etas = s->starting_ages;
    if (s->starting_stages > s->starting_ages)
        s->starting_stages = s->starting_ages;
    if (s->waiting_for_node > s->starting)
        s->waiting_for_node = s->starting;
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

/* Work done so far: weighted tokens, or requests where the engine exports
 * no token counters (then a request is the unit of work). */
static double work_of(const queue_model_sample_t *s) {
    return s->has_tokens ? s->generation_tokens + QUEUE_MODEL_PREFILL_WEIGHT * s->prompt_tokens
                         : s->completed;
}

/* ---- the arrivals ring ----------------------------------------------------- */

static unsigned ring_index(const queue_model_t *m, unsigned age) {
    return (m->bucket_head + QUEUE_MODEL_BUCKETS - age) % QUEUE_MODEL_BUCKETS;
}

static void ring_push(queue_model_t *m, double t) {
    if (m->nbuckets && t - m->bucket_t[m->bucket_head] < QUEUE_MODEL_BUCKET_S)
        return;
    if (m->nbuckets)
        m->bucket_head = (m->bucket_head + 1) % QUEUE_MODEL_BUCKETS;
    if (m->nbuckets < QUEUE_MODEL_BUCKETS)
        m->nbuckets++;
    m->bucket_t[m->bucket_head] = t;
    m->bucket_a[m->bucket_head] = m->arrived;
}

/* The arrivals counter at time t (interpolated between the ring's points;
 * now_a at now; before the oldest point: the oldest value, i.e. history
 * that is not there counts as no arrivals). */
static double arrived_at(const queue_model_t *m, double t, double now, double now_a) {
    if (t >= now || !m->nbuckets)
        return now_a;
    double t_after = now, a_after = now_a;
    for (unsigned age = 0; age < m->nbuckets; age++) {
        unsigned i = ring_index(m, age);
        if (m->bucket_t[i] <= t) {
            double span = t_after - m->bucket_t[i];
            double f = span > 0 ? (t - m->bucket_t[i]) / span : 1;
            return m->bucket_a[i] + f * (a_after - m->bucket_a[i]);
        }
        t_after = m->bucket_t[i];
        a_after = m->bucket_a[i];
    }
    return a_after;
}

/* Arrivals per second over [end - window, end]; never negative. */
static double rate_over(const queue_model_t *m, double end, double window, double now) {
    double a1 = arrived_at(m, end, now, m->arrived),
           a0 = arrived_at(m, end - window, now, m->arrived);
    double r = (a1 - a0) / window;
    return r > 0 ? r : 0;
}

/* By how much the rate over a window, `later`, exceeds the rate over an
 * earlier window that does not overlap it, beyond what Poisson noise would
 * make of two equal rates (RISE_NOISE_SD standard deviations of the
 * difference of two counts over the window); 0 when it does not. */
static double rise_beyond_noise(double earlier, double later) {
    double w = QUEUE_MODEL_RATE_WINDOW_S;
    double r = later - earlier - RISE_NOISE_SD * sqrt((earlier + later) / w);
    return r > 0 ? r : 0;
}

/* Whether the arrivals rise: the rate over the last window above the one
 * before it by more than noise. */
static bool rising(const queue_model_t *m, double now, double lambda) {
    double w = QUEUE_MODEL_RATE_WINDOW_S;
    return rise_beyond_noise(rate_over(m, now - w, w, now), lambda) > 0;
}

/* The arrival rate over the i-th window of whole buckets back from the
 * ring's newest point (window 0 ends there), and its length; false when
 * the ring does not reach that far. Whole buckets, never interpolated
 * within one: a burst that begins inside a bucket is in that bucket only,
 * where interpolation would have spread a share of it over the seconds
 * before it began (and a step would read as a rise across one more
 * window). */
static bool window_rate(const queue_model_t *m, unsigned i, double *rate, double *span) {
    unsigned per = (unsigned)lround(QUEUE_MODEL_RATE_WINDOW_S / QUEUE_MODEL_BUCKET_S);
    unsigned newer = i * per, older = (i + 1) * per;
    if (older >= m->nbuckets)
        return false;
    unsigned a = ring_index(m, newer), b = ring_index(m, older);
    double d = m->bucket_t[a] - m->bucket_t[b];
    if (!(d > 0))
        return false;
    double r = (m->bucket_a[a] - m->bucket_a[b]) / d;
    *rate = r > 0 ? r : 0;
    *span = d;
    return true;
}

/* Whether the rate `later` (over span_l s) exceeds `earlier` (over span_e
 * s) by more than `sd` standard deviations of Poisson noise on their
 * difference. */
static bool above_noise(double earlier, double span_e, double later, double span_l, double sd) {
    return later - earlier > sd * sqrt(earlier / span_e + later / span_l);
}

/* The rise of the arrival rate to extrapolate over the next cold start:
 * only a ramp's. A ramp begins when the rate over each of the last
 * RAMP_WINDOWS adjacent windows (whole buckets) exceeds the one before it
 * by more than one standard deviation of Poisson noise (a steady stream
 * passes three such tests in a row about once in a few hundred reads). A
 * step (a burst beginning) lies in one bucket, so it rises across at most
 * two windows (the one it began in, the first one after it) and one
 * difference is flat: it is not a ramp. A ramp lasts while the rate rose
 * across the windows by more than twice the noise and one of the last two
 * differences still rises (one flat difference does not end it; a step
 * that passed for a ramp ends two windows after it). The slope is the
 * rise across the windows, and the rise over a cold start never exceeds
 * what the rate rose over the last one. */
static double ramp_rise(queue_model_t *m, double t, double lambda, double cold, double now) {
    double w = QUEUE_MODEL_RATE_WINDOW_S;
    bool was = m->in_ramp;
    m->in_ramp = false;
    if (now < RAMP_WINDOWS * w || now < cold + w)
        return 0;
    double r[RAMP_WINDOWS], d[RAMP_WINDOWS];
    for (unsigned i = 0; i < RAMP_WINDOWS; i++)
        if (!window_rate(m, i, &r[i], &d[i]))
            return 0;
    bool each = true, recent = false;
    for (unsigned i = 0; i + 1 < RAMP_WINDOWS; i++) {
        bool up = above_noise(r[i + 1], d[i + 1], r[i], d[i], 1);
        each = each && up;
        if (i < 2)
            recent = recent || up;
    }
    unsigned last = RAMP_WINDOWS - 1;
    if (!(each || (was && recent && above_noise(r[last], d[last], r[0], d[0], 2))))
        return 0;
    m->in_ramp = true;
    /* the windows' middles are (d[0] + d[last]) / 2 + the windows between apart */
    double between = (d[0] + d[last]) / 2;
    for (unsigned i = 1; i < last; i++)
        between += d[i];
    double rise = (r[0] - r[last]) / between * cold;
    double seen = lambda - rate_over(m, t - cold, w, t);
    return rise < seen ? rise : seen > 0 ? seen : 0;
}

/* ---- observing -------------------------------------------------------------- */

void queue_model_observe(queue_model_t *m, const queue_model_sample_t *in) {
    queue_model_sample_t s;
    sanitise(in, &s);
    if (!isfinite(s.t_s))
        return;
    if (!m->have_prev) {
        m->prev = s;
        m->have_prev = true;
        m->t0_s = s.t_s;
        /* when the fleet last changed size is not known: as if now, so
         * the first seconds are not read as a settled fleet */
        m->ready_since = s.t_s;
        ring_push(m, s.t_s);
        return;
    }
    const queue_model_sample_t *p = &m->prev;
    double dt = s.t_s - p->t_s;
    if (!(dt > 0))
        return;

    /* the same engines, counters that only grew: the interval compares */
    bool counters = s.has_completed && p->has_completed && s.members == p->members;
    double done = counters ? s.completed - p->completed : 0;
    if (counters && done < 0)
        counters = false; /* a pod restarted: its counters began again */

    /* Arrivals. With completions: what finished plus what accumulated.
     * Without them, only while nothing is Ready does the queue's growth
     * count every arrival exactly (nothing drains it). Another set of
     * engines than last time: the rate so far carries the interval. */
    double pa, pb;
    bool have_present = present(p, &s, &pa, &pb);
    m->rate_unknown = false;
    if (counters && have_present) {
        m->arrived += done + (pb - pa);
    } else if (!s.has_completed && have_present && p->ready == 0 && s.ready == 0) {
        m->arrived += pb - pa;
    } else if (s.has_completed && p->has_completed) {
        m->arrived += rate_over(m, p->t_s, QUEUE_MODEL_RATE_WINDOW_S, p->t_s) * dt;
    } else {
        m->rate_unknown = true; /* a queue alone while replicas drain it */
    }
    ring_push(m, s.t_s);

    if (counters) {
        double rate = done / dt;
        /* Little's law inputs: completions/s and requests running. */
        if (s.has_engine) {
            /* Little's law needs a fleet in its stride: not the seconds
             * after it changed size, when it has admitted but not yet
             * completed (running / completions reads as a huge service time) */
            if (s.ready == p->ready && p->t_s - m->ready_since >= SETTLE_S)
                m->service_settled_s += dt;
            else
                m->service_settled_s = 0;
            if (!m->have_service) {
                m->completion_rps = rate;
                m->running_avg = s.running;
                m->have_service = true;
            } else {
                m->completion_rps = smooth(m->completion_rps, rate, dt, TAU_SERVICE_S);
                m->running_avg = smooth(m->running_avg, s.running, dt, TAU_SERVICE_S);
            }
            /* kept when the fleet changes size again: the service time of
             * a request does not change with the replicas */
            if (m->service_settled_s >= SERVICE_SETTLE_S && m->completion_rps > 0 &&
                m->running_avg > 0)
                m->derived_rps = QUEUE_MODEL_PRIOR_CONCURRENCY * m->completion_rps / m->running_avg;
        }
        /* Work per request, from the token counters. */
        double dw = work_of(&s) - work_of(p);
        bool tokens = s.has_tokens && p->has_tokens;
        if (tokens && done > 0 && dw > 0) {
            double w = dw / done;
            m->work_per_req = m->have_work ? smooth(m->work_per_req, w, dt, TAU_SERVICE_S) : w;
            m->have_work = true;
        }
        /* Capacity: work per Ready replica while work waited through the
         * whole interval, the fleet of the same size, and not in the
         * settling after it changed (a replica just Ready admits a batch
         * at once and completes its first requests a service time later). */
        if (backlog_of(p) > 0 && backlog_of(&s) > 0 && s.ready > 0 && s.ready == p->ready &&
            p->t_s - m->ready_since >= SETTLE_S && dw >= 0 && (tokens || !s.has_tokens)) {
            double keep = 1 - weight(dt, TAU_CAPACITY_S);
            m->sat_work = m->sat_work * keep + dw;
            m->sat_done = m->sat_done * keep + done;
            m->sat_replica_s = m->sat_replica_s * keep + dt * s.ready;
            m->have_capacity = m->sat_work > 0 && m->sat_replica_s >= SETTLE_S;
            m->sat_seconds += dt;
        }
    }
    if (s.ready != p->ready)
        m->ready_since = s.t_s;
    m->prev = s;
}

void queue_model_observe_cold_start(queue_model_t *m, double seconds) {
    if (!isfinite(seconds) || seconds <= 0)
        return;
    m->cold_samples[m->cold_count % QUEUE_MODEL_COLD_SAMPLES] = seconds;
    m->cold_count++;
}

void queue_model_observe_stages(queue_model_t *m, const double stage_s[QUEUE_MODEL_STAGES]) {
    for (unsigned k = 0; k < QUEUE_MODEL_STAGES; k++)
        if (!isfinite(stage_s[k]) || stage_s[k] < 0)
            return;
    memcpy(m->stage_samples[m->stage_count % QUEUE_MODEL_COLD_SAMPLES], stage_s,
           sizeof m->stage_samples[0]);
    m->stage_count++;
    m->last_node_s = stage_s[0];
}

/* The mean of each stage over the starts seen; false when none was. */
static bool stage_means(const queue_model_t *m, double mean[QUEUE_MODEL_STAGES]) {
    unsigned n =
        m->stage_count < QUEUE_MODEL_COLD_SAMPLES ? m->stage_count : QUEUE_MODEL_COLD_SAMPLES;
    if (n == 0)
        return false;
    for (unsigned k = 0; k < QUEUE_MODEL_STAGES; k++) {
        double sum = 0;
        for (unsigned i = 0; i < n; i++)
            sum += m->stage_samples[i][k];
        mean[k] = sum / n;
    }
    return true;
}

/* ---- the estimates ----------------------------------------------------------- */

/* Requests per second one Ready replica completes. The capacity was
 * learned in work: the mix it is divided by now is today's. */
static double capacity_of(const queue_model_t *m, const queue_model_params_t *p,
                          queue_model_source_t *from) {
    if (p->capacity_rps > 0) {
        *from = QM_FROM_OVERRIDE;
        return p->capacity_rps;
    }
    if (m->have_capacity) {
        *from = QM_FROM_LEARNED;
        if (m->have_work && m->work_per_req > 0 && m->prev.has_tokens)
            return m->sat_work / m->sat_replica_s / m->work_per_req;
        return m->sat_done / m->sat_replica_s;
    }
    if (m->derived_rps > 0) {
        *from = QM_FROM_DERIVED;
        return m->derived_rps;
    }
    *from = QM_FROM_PRIOR;
    return QUEUE_MODEL_PRIOR_CAPACITY_RPS;
}

/* The cold start a pod ordered now pays. Configured, it is that. Learned
 * by stage: the image and the weights, and the node unless the newest start
 * found one up and no pod of the workload waits for one now (*stages 1 or
 * 2, the stages' means in mean[]). Else the mean create -> Ready of the
 * pods seen starting, else the prior. */
static double cold_start_of(const queue_model_t *m, const queue_model_params_t *p,
                            const queue_model_sample_t *s, queue_model_source_t *from,
                            unsigned char *stages, double mean[QUEUE_MODEL_STAGES]) {
    *stages = 0;
    if (p->cold_start_s > 0) {
        *from = QM_FROM_OVERRIDE;
        return p->cold_start_s;
    }
    if (stage_means(m, mean)) {
        bool warm = m->last_node_s <= QUEUE_MODEL_WARM_NODE_S && s->waiting_for_node == 0;
        *from = QM_FROM_LEARNED;
        *stages = warm ? 1 : 2;
        double t = mean[1] + mean[2] + (warm ? 0 : mean[0]);
        return t > 0 ? t : 1; /* a start of 0 s still takes a sync to be seen */
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

/* Seconds until a starting pod is Ready, from its stage and its time in it:
 * what the stage has left of its mean (a stage overdue has OVERDUE_SHARE of
 * it left), then the later stages' means; < 0 when the stage is not known. */
static double stage_left(const double mean[QUEUE_MODEL_STAGES], unsigned stage, double age) {
    if (stage < QM_STAGE_NODE || stage > QM_STAGE_WEIGHTS || !isfinite(age) || age < 0)
        return -1;
    unsigned k = stage - QM_STAGE_NODE;
    double left = mean[k] - age;
    if (left < OVERDUE_SHARE * mean[k])
        left = OVERDUE_SHARE * mean[k];
    for (unsigned j = k + 1; j < QUEUE_MODEL_STAGES; j++)
        left += mean[j];
    return left;
}

/* ---- the plan ------------------------------------------------------------------ */

/* Arrivals per second tau seconds ahead: the rate now, rising linearly by
 * `rise` over one cold start (the rise observed over the last one), then
 * flat. */
static double rate_ahead(double lambda, double rise, double cold, double tau) {
    return lambda + (tau < cold ? rise * tau / cold : rise);
}

typedef struct {
    double lambda, rise, cold, cap, backlog;
    double ready;          /* Ready replicas kept (fractional: the load's share) */
    const double *arrival; /* seconds until each starting pod is Ready, ascending */
    unsigned nstarting;
} plan_in_t;

/* The fluid queue over [0, until] with the Ready replicas and the first k
 * starting pods: the backlog left at `until`. Integrated between the
 * events (a pod becoming Ready, the end of the rise), each segment in steps
 * of at most until / PROJECTION_STEPS at its midpoint rate: exact while the
 * backlog does not reach 0 inside a step. */
static double project(const plan_in_t *in, unsigned k, double until) {
    double b = in->backlog, tau = 0, max_step = until / PROJECTION_STEPS;
    double serving = in->ready;
    unsigned next = 0;
    for (;;) {
        while (next < k && in->arrival[next] <= tau + 1e-9) {
            serving++;
            next++;
        }
        if (tau >= until - 1e-9)
            break;
        double end = until;
        if (next < k && in->arrival[next] < end)
            end = in->arrival[next];
        if (tau < in->cold && in->cold < end)
            end = in->cold;
        int n = (int)ceil((end - tau) / max_step - 1e-9);
        double step = (end - tau) / (n > 0 ? n : 1);
        for (int i = 0; i < n; i++) {
            double mid = tau + (i + 0.5) * step;
            b += (rate_ahead(in->lambda, in->rise, in->cold, mid) - serving * in->cap) * step;
            if (b < 0)
                b = 0;
        }
        tau = end;
    }
    return b;
}

/* The fewest Ready replicas, between `low` and all of them, with which the
 * projection leaves nothing undone at the horizon (found by bisection: the
 * backlog left falls as replicas are added). */
static double fewest_ready(const plan_in_t *in, double low, double horizon) {
    plan_in_t p = *in;
    double lo = low > 0 ? low : 0, hi = in->ready;
    p.ready = lo;
    if (!(project(&p, p.nstarting, horizon) > LEFT_NONE))
        return lo;
    for (int i = 0; i < 30 && hi - lo > 0.01; i++) {
        p.ready = (lo + hi) / 2;
        if (project(&p, p.nstarting, horizon) > LEFT_NONE)
            lo = p.ready;
        else
            hi = p.ready;
    }
    return hi;
}

/* ---- the keep-alive ------------------------------------------------------------ */

static double gap_bin_low(unsigned b) {
    return GAP_MIN_S * pow(GAP_BIN_FACTOR, b);
}

static void record_gap(queue_model_t *m, double gap) {
    if (!(gap >= GAP_MIN_S))
        return;
    unsigned b = 0;
    while (b + 1 < QUEUE_MODEL_GAP_BINS && gap >= gap_bin_low(b + 1))
        b++;
    m->gap_weight[b] += 1;
    m->gaps_seen += 1;
}

/* The hold K: the value among 0 and the bins' edges that minimises the
 * expected cost of a fall of the need, hold time while it lasts (up to K)
 * plus, when it outlasts K, one cold start's worth. Nothing seen yet: K =
 * the cost of a cold start (rent-or-buy's break-even). */
static double keepalive_of(const queue_model_t *m, double cold) {
    double c = COLD_START_COST * cold;
    double total = 0;
    for (unsigned b = 0; b < QUEUE_MODEL_GAP_BINS; b++)
        total += m->gap_weight[b];
    if (total <= 0)
        return c;
    double best_k = 0, best = INFINITY;
    for (unsigned kb = 0; kb <= QUEUE_MODEL_GAP_BINS; kb++) {
        double k = kb == 0 ? 0 : gap_bin_low(kb); /* the top of bin kb - 1 */
        double cost = 0;
        for (unsigned b = 0; b < QUEUE_MODEL_GAP_BINS; b++) {
            double g = sqrt(gap_bin_low(b) * gap_bin_low(b + 1)); /* the bin's middle */
            cost += m->gap_weight[b] * (g <= k ? g : k + c);
        }
        if (cost < best - 1e-9) {
            best = cost;
            best_k = k;
        }
    }
    return best_k;
}

/* Ages the gaps seen (half-life GAP_HALF_LIFE_S) by dt. */
static void age_gaps(queue_model_t *m, double dt) {
    if (!(dt > 0))
        return;
    double f = exp2(-dt / GAP_HALF_LIFE_S);
    for (unsigned b = 0; b < QUEUE_MODEL_GAP_BINS; b++)
        m->gap_weight[b] *= (float)f;
}

/* Records that the load `load` (requests/s) asks for n replicas at now
 * (seconds since t0): a level it returns to after a fall is a gap; then
 * the replicas that the loads which asked for the levels within the last k
 * seconds need at the capacity cap (each level at most itself). */
static unsigned levels_update(queue_model_t *m, unsigned n, double load, double cap, double now,
                              double before, double k) {
    if (n > QUEUE_MODEL_LEVELS)
        n = QUEUE_MODEL_LEVELS;
    for (unsigned j = 0; j < n; j++) {
        /* not asked at the previous decision: the need had fallen below j */
        if (m->level_last_s[j] >= 0 && m->level_last_s[j] < (float)before - 1e-3f)
            record_gap(m, now - m->level_last_s[j]);
        m->level_last_s[j] = (float)now;
        m->level_load[j] = (float)load;
    }
    unsigned held = n;
    for (unsigned j = n; j < QUEUE_MODEL_LEVELS; j++) {
        if (!(m->level_last_s[j] >= 0 && now - m->level_last_s[j] <= k))
            continue;
        double r = ceil(m->level_load[j] / cap - 1e-9);
        unsigned h = r >= j + 1 ? j + 1 : r > 0 ? (unsigned)r : 0;
        if (h > held)
            held = h;
    }
    return held;
}

/* ---- starting pods without a pod list ---------------------------------------- */

/* The pods the model asked for that do not answer yet: levels above the
 * engines that answer, up to the last answer, ordered within the last
 * ORDER_FORGET_COLD_STARTS cold starts. Their ages into age[]; a level
 * that answers now is one observed cold start. */
static unsigned inferred_starting(queue_model_t *m, const queue_model_sample_t *s, double now,
                                  double cold, double *age) {
    unsigned n = 0;
    for (unsigned j = 0; j < m->last_answer && j < QUEUE_MODEL_LEVELS; j++) {
        float at = m->level_ordered_s[j];
        if (at < 0)
            continue;
        if (j < s->ready) {
            /* answering now: if it did not before, that took this long */
            if (j >= m->prev_ready_seen)
                queue_model_observe_cold_start(m, now - at);
            m->level_ordered_s[j] = -1;
            continue;
        }
        if (now - at > ORDER_FORGET_COLD_STARTS * cold) {
            m->level_ordered_s[j] = -1;
            continue;
        }
        if (n < QUEUE_MODEL_MAX_STARTING)
            age[n++] = now - at;
    }
    return n;
}

/* The fleet's ceiling, learned from the pod list: the pods stayed at one
 * count (at least one) for CEILING_S while the answers asked for more
 * (maxReplicaCount, a quota, the HPA's own limits: KEDA does not tell the
 * scaler its maxReplicaCount). An answer above it is no more than noise
 * the HPA clamps, so it is cut there; the ceiling is forgotten when the
 * fleet grows past it or CEILING_FORGET_S after it was learned (the limit
 * may have been raised), and learned again if it still holds. */
static unsigned learn_ceiling(queue_model_t *m, unsigned pods, double now) {
    if (m->ceiling && (pods > m->ceiling || now - m->ceiling_at > CEILING_FORGET_S))
        m->ceiling = 0;
    /* asked for more than the HPA acts on: within its tolerance (the value
     * over the pods within 10 % of the target) it leaves the fleet alone,
     * and a fleet that did not grow then met no ceiling */
    if (!m->decided || !(m->last.replicas > pods * (1 + QUEUE_MODEL_HPA_TOLERANCE)) || pods == 0) {
        m->above_since = -1;
    } else if (m->above_since < 0 || pods != m->above_pods) {
        m->above_since = now;
        m->above_pods = pods;
    } else if (now - m->above_since >= CEILING_S && m->ceiling == 0) {
        m->ceiling = pods;
        m->ceiling_at = now;
    }
    return m->ceiling;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y ? 1 : 0;
}

/* ---- the decision -------------------------------------------------------------- */

void queue_model_decide(queue_model_t *m, const queue_model_params_t *p,
                        const queue_model_sample_t *in, queue_model_decision_t *out) {
    queue_model_sample_t s;
    sanitise(in, &s);
    if (m->decided && s.t_s <= m->last_decide_t) {
        *out = m->last;
        return;
    }
    memset(out, 0, sizeof *out);
    bool fixed_util = p->target_utilisation > 0 && p->target_utilisation <= 1;
    double drain = p->drain_s > 0 ? p->drain_s : QUEUE_MODEL_DEFAULT_DRAIN_S;
    double now = isfinite(s.t_s) ? s.t_s - m->t0_s : 0;

    double cap = capacity_of(m, p, &out->capacity_from);
    double stage_mean[QUEUE_MODEL_STAGES];
    double cold =
        cold_start_of(m, p, &s, &out->cold_start_from, &out->cold_start_stages, stage_mean);
    bool by_stage = out->cold_start_stages != 0; /* stage_mean[] is set */
    /* A capacity never measured nor configured orders as if each new
     * replica drained its share over a cold start, not the drain target: a
     * prior that is wrong then costs a bounded order. */
    double drain_eff = out->capacity_from == QM_FROM_PRIOR && drain < cold ? cold : drain;

    /* The arrival rate, and its rise over the last cold start (extrapolated
     * once, never beyond what was observed; a fall is not extrapolated). */
    double lambda = 0, rise = 0;
    out->lambda_from = QM_FROM_PRIOR;
    if (m->nbuckets && !m->rate_unknown && now > 0) {
        lambda = rate_over(m, s.t_s, QUEUE_MODEL_RATE_WINDOW_S, s.t_s);
        out->lambda_from = QM_FROM_LEARNED;
        rise = ramp_rise(m, s.t_s, lambda, cold, now);
    }

    /* The pods: Ready, and those on their way with the time until Ready. */
    double ages[QUEUE_MODEL_MAX_STARTING];
    unsigned nstart;
    if (s.has_pods) {
        nstart = s.starting_ages;
        memcpy(ages, s.starting_age_s, nstart * sizeof *ages);
        for (unsigned i = s.starting_ages; i < s.starting && nstart < QUEUE_MODEL_MAX_STARTING; i++)
            ages[nstart++] = 0;
    } else {
        nstart = inferred_starting(m, &s, now, cold, ages);
        out->inferred_starting = true;
    }
    m->prev_ready_seen = s.ready;
    double arrival[QUEUE_MODEL_MAX_STARTING];
    for (unsigned i = 0; i < nstart; i++) {
        bool eta = s.has_pods && i < s.starting_etas && s.starting_eta_s[i] >= 0 &&
                   isfinite(s.starting_eta_s[i]);
        double left = -1;
        if (!eta && by_stage && s.has_pods && i < s.starting_stages)
            left = stage_left(stage_mean, s.starting_stage[i], s.starting_stage_age_s[i]);
        arrival[i] = eta              ? s.starting_eta_s[i]
                     : left >= 0      ? left
                     : ages[i] < cold ? cold - ages[i]
                                      : OVERDUE_SHARE * cold;
    }
    qsort(arrival, nstart, sizeof *arrival, cmp_double);

    double backlog = backlog_of(&s);
    bool work = backlog > 0 || (s.has_engine && s.running > 0);
    /* The load to carry beyond its mean: with targetUtilization, what that
     * leaves free; else one standard deviation of the arrivals over 10 s as
     * a Poisson stream would show it. Burstier traffic is the keep-alive's
     * to hold (it keeps the recent peak), not a fixed margin's to pay for
     * all the time. */
    double headroom =
        fixed_util ? lambda * (1 / p->target_utilisation - 1) : sqrt(lambda / QUEUE_MODEL_BUCKET_S);
    out->headroom_rps = headroom;
    double steady = (lambda + headroom) / cap;
    double horizon = cold + drain_eff;
    /* Every starting pod is kept until it is Ready, unless the demand it
     * was ordered for vanished (no arrivals over the rate window, nothing
     * waiting, nothing running): a start cancelled and asked for again
     * costs a whole cold start more, and an order is made only for what
     * the pods there leave undone, so what it was made for still waits. */
    bool vanished = !(lambda > 0) && !work;
    unsigned keep = vanished ? 0 : nstart;
    /* Ready replicas: every one while a starting pod is kept (a scale-down
     * deletes the pods that are not Ready first, the ReplicaSet's victim
     * order: an answer below them all would cancel a kept start), while a
     * backlog waits or while the arrivals rise (a replica is released
     * because demand fell, never while it grows); else the fewest that
     * leave nothing undone over the horizon, and at least the load's share
     * now (the rest is the keep-alive's to hold). Ready replicas are never
     * released while new ones are ordered: they serve at once, a new one
     * after a cold start. */
    plan_in_t plan = {lambda, rise, cold, cap, backlog, s.ready, arrival, keep};
    double left = project(&plan, keep, horizon);
    if (keep == 0 && !(backlog > 0) && !(left > LEFT_NONE) && !rising(m, s.t_s, lambda) &&
        steady < s.ready)
        plan.ready = fewest_ready(&plan, steady, horizon);
    double ready = plan.ready;
    /* what the Ready and kept pods leave undone by the time a replica
     * ordered now would have drained its share (Ready after the cold
     * start, then the drain target): only that is ordered for, so a pod
     * already on its way is never ordered again as it ages */
    double lam_then = rate_ahead(lambda, rise, cold, cold);
    double short_load = (lam_then + headroom) / cap - (ready + keep);
    double ordered =
        (left > LEFT_NONE ? left / (cap * drain_eff) : 0) + (short_load > 0 ? short_load : 0);
    double need = ready + keep + ordered;
    if (need <= s.ready + keep)
        ordered = 0; /* the Ready replicas there carry it: nothing new is asked for */
    /* What a replica does not measured (a prior, or Little's law with a
     * prior concurrency): a bounded order, the estimate cannot be trusted
     * with more. */
    double bound = INFINITY;
    if (out->capacity_from == QM_FROM_PRIOR || out->capacity_from == QM_FROM_DERIVED ||
        (out->capacity_from == QM_FROM_LEARNED && m->sat_seconds < CAPACITY_CONFIDENT_S)) {
        bound = s.ready * 2.0 > QUEUE_MODEL_PRIOR_MAX_REPLICAS ? s.ready * 2.0
                                                               : QUEUE_MODEL_PRIOR_MAX_REPLICAS;
        if (bound < s.ready + nstart)
            bound = s.ready + nstart; /* never below the pods already there */
        if (need > bound)
            need = bound;
    }
    /* Work exists but nothing asks (no rate yet, the first reading after a
     * wake): one replica. */
    if (need < 1 && work)
        need = 1;

    out->need = isfinite(need) ? need : NAN;
    /* The keep-alive holds the load's replicas, not a drain's: the replicas
     * the load asks for now at the target utilisation (one while there is
     * work), held for K after they stop being asked for. */
    double base = steady > (work ? 1 : 0) ? steady : (work ? 1 : 0);
    if (base > need)
        base = need;
    unsigned n = isfinite(base) && base > 0 ? (unsigned)ceil(base - 1e-9) : 0;
    double before = m->decided ? m->last_decide_t - m->t0_s : now;
    if (m->decided)
        age_gaps(m, s.t_s - m->last_decide_t);
    double k = keepalive_of(m, cold);
    unsigned held = levels_update(m, n, base * cap, cap, now, before, k);
    double replicas = held > need ? (double)held : need;
    if (replicas > bound)
        replicas = bound;
    /* The HPA's default scale-up policy adds at most 4 pods or 100 % per
     * 15 s sync, whichever is more: an answer beyond that is clamped there
     * (and asked again at the next sync, from the larger fleet), so the
     * answer asks no more; what it drops is noise in the projection that
     * the HPA would never act on. */
    double pods = s.ready + nstart;
    double from = pods > 1 ? pods : 1; /* KEDA wakes a workload to 1 first */
    double step = from + QUEUE_MODEL_STEP_PODS > 2 * from ? from + QUEUE_MODEL_STEP_PODS : 2 * from;
    out->step_limited = replicas > step;
    if (replicas > step)
        replicas = step;
    /* A small fall is walked (rule 5): one replica per HPA sync from the
     * last answer. A first answer, or one after a long silence, has no walk
     * to continue (the floor is then below anything asked). */
    if (m->decided && isfinite(m->last.replicas) && isfinite(replicas)) {
        double last = m->last.replicas, fall = last - replicas;
        double small =
            WALK_SHARE * last > WALK_MIN_REPLICAS ? WALK_SHARE * last : WALK_MIN_REPLICAS;
        double floor_now = last - (s.t_s - m->last_decide_t) / QUEUE_MODEL_HPA_SYNC_S;
        if (fall > 0 && fall <= small && replicas < floor_now - 1e-9) {
            replicas = floor_now;
            out->walking = true;
        }
    }
    unsigned ceiling = s.has_pods ? learn_ceiling(m, (unsigned)pods, now) : 0;
    out->ceiling = ceiling;
    if (ceiling > 0 && replicas > ceiling)
        replicas = ceiling;

    /* Finite inputs can still overflow (a backlog of 1e307 at 0.001 req/s):
     * the need is then unknown, and 0 would scale the workload to nothing. */
    out->replicas = !isfinite(need) ? NAN : replicas > 0 ? replicas : 0;
    out->held = isfinite(need) && replicas > need ? replicas - need : 0;
    out->keepalive_s = k;
    out->lambda_rps = lambda;
    out->rise_rps = rise;
    out->capacity_rps = cap;
    out->work_per_req = m->have_work ? m->work_per_req : 0;
    out->cold_start_s = cold;
    out->backlog = backlog;
    out->work_due = backlog + (lambda + rise / 2) * horizon;
    out->can_do = cap * (ready * horizon);
    for (unsigned i = 0; i < keep; i++)
        out->can_do += cap * (horizon - arrival[i]);
    out->deficit = left;
    out->steady = steady;
    out->ready = s.ready;
    out->starting = nstart;
    out->kept_starting = keep;
    out->ordered = ordered;

    /* Without a pod list, the pods asked for are the orders counted as
     * starting until they answer: the levels above the last answer (a
     * level below it was asked for before: an engine that answered and
     * misses a poll is no new order, nor is one forgotten as failed). */
    unsigned answer = isfinite(out->replicas) ? (unsigned)ceil(out->replicas - 1e-9) : 0;
    for (unsigned j = 0; j < QUEUE_MODEL_LEVELS; j++) {
        if (j < answer && j >= s.ready && j >= m->last_answer && m->level_ordered_s[j] < 0 &&
            !s.has_pods)
            m->level_ordered_s[j] = (float)now;
        else if (j >= answer)
            m->level_ordered_s[j] = -1;
    }
    m->last_answer = answer;
    m->last_decide_t = s.t_s;
    m->decided = true;
    m->last = *out;
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
