/*
 * source_poll.c - a source's polls: its timer, its addresses, one fetch and
 * its reply (files of the hub: source_hub_internal.h).
 *
 * Each source has one timer. A poll is one fetch (fetch.c): a fresh
 * connection, one HTTP GET or one Redis pipeline. The next poll starts one
 * interval after the previous one started (or at once when a poll took
 * longer than that), so a slow source never has two polls in flight. What
 * the bytes of a poll say is the source's backend's business
 * (source_backend.h: HTTP scrape, Redis); what a reading means for a
 * trigger is core/demand_eval.c's. What a poll leaves (the reading, the
 * error, the counter window, the latency windows of the subscriptions that
 * read it) is what the reading door copies out.
 *
 * Before every connect: the SSRF guard, the egress allow-list, the
 * namespace's read rate and, for a source read with a sourceAuth profile,
 * the profile's credentials (source_hub_auth.c).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/egress.h"
#include "core/err.h"
#include "core/fair_share.h"
#include "core/source_url.h"
#include "net/sock.h"
#include "net/tls.h"
#include "sources/source_hub_internal.h"
#define SOURCE_TURNS_NS 600000000000ull /* taking turns: for 10 min after the last sign */

/* ---- a poll's outcome ------------------------------------------------------------ */

/* A failed poll: kind says whether anybody was there (demand_fail_t). */
static void set_failure(source_t *s, demand_fail_t kind, const char *msg) {
    s->fail_kind = kind;
    if (strncmp(s->error, msg, sizeof s->error - 1) != 0) {
        if (!s->error[0] || !s->polled_once)
            LOG_WARN(s->hub->o.log, "source %s: %s", s->name, msg);
        snprintf(s->error, sizeof s->error, "%.*s", (int)sizeof s->error - 1, msg);
        hub_notify(s->hub);
    }
    s->polled_once = true;
    s->hub->stats.failures++;
}

static void set_error(source_t *s, const char *msg) {
    set_failure(s, DEMAND_FAIL_OTHER, msg);
}

/* What a fetch's status says of the server (fetch.h). */
static demand_fail_t fetch_fail_kind(int status) {
    return status == KGS_ENOPEER     ? DEMAND_FAIL_NO_SERVER
           : status == KGS_ETIMEDOUT ? DEMAND_FAIL_SLOW
                                     : DEMAND_FAIL_OTHER;
}

static void success(source_t *s, mono_ns_t now) {
    if (s->error[0]) {
        LOG_INFO(s->hub->o.log, "source %s: recovered", s->name);
        s->error[0] = '\0';
    }
    s->polled_once = true;
    s->have_reading = true;
    s->last_ok = now;
    hub_notify(s->hub);
}
/* One poll's histograms of source s: per signal, the increase since the
 * pod's previous scrape (hist_pod_delta: the first scrape is a baseline
 * unless process_start_time_seconds lies inside the window; a drop is a
 * restart) into the window of every subscription that reads s. A layout
 * that changed (an upgraded engine) starts the pod's baseline again, and a
 * window that gets another layout than it holds starts again in that one
 * (pods of two layouts at once: latency stays unknown until one remains). */
static void hist_feed(source_t *s, const engine_hists_t *eh, mono_ns_t now) {
    source_hub_t *h = s->hub;
    source_hist_t *sh = s->hist;
    double wall_s = (double)clock_wall_ms() / 1000.0;
    bool since_start = eh->has_start && eh->start_time_s >= wall_s - (double)s->window_max_s &&
                       eh->start_time_s <= wall_s + 60;
    for (int sig = 0; sig < SLO_SIGNAL_COUNT; sig++) {
        if (!(eh->mask & (1u << sig)))
            continue;
        if (!hist_layout_equal(&sh->layout[sig], &eh->layout[sig])) {
            sh->layout[sig] = eh->layout[sig];
            memset(&sh->pod[sig], 0, sizeof sh->pod[sig]);
        }
        hist_counts_t delta;
        if (!hist_pod_delta(&sh->pod[sig], &eh->counts[sig], since_start, sh->layout[sig].n,
                            &delta))
            continue;
        for (unsigned i = 0; i < sh->nsubs; i++) {
            sub_t *u = hub_sub_find(h, sh->subs[i].id, sh->subs[i].ns);
            if (!u || !(u->slo_mask & (1u << sig)))
                continue;
            /* counted in the subscription's bytes from the start */
            if (!u->win[sig] && !(u->win[sig] = calloc(1, sizeof *u->win[sig]))) {
                u->hist_incomplete = u->retry = true;
                continue;
            }
            hist_window_t *w = u->win[sig];
            if (!hist_layout_equal(hist_window_layout(w), &sh->layout[sig]))
                hist_window_reset(w, &sh->layout[sig]);
            uint64_t spacing = u->window_ns / 32 ? u->window_ns / 32 : 1;
            hist_window_add(w, now, &delta, spacing);
        }
    }
    /* drop the subscriptions that are gone */
    unsigned k = 0;
    for (unsigned i = 0; i < sh->nsubs; i++)
        if (hub_sub_find(h, sh->subs[i].id, sh->subs[i].ns))
            sh->subs[k++] = sh->subs[i];
    sh->nsubs = k;
}
/* ---- one poll's reply -------------------------------------------------------------- */

/* s's reply holds `held` bytes now: counted against --source-read-bytes,
 * shared fairly between the namespaces the sources are charged to
 * (core/fair_share.h). A growth past the share is refused: -1 with the
 * message, the old figure kept. */
static int read_hold(source_t *s, size_t held, char *msg, size_t msglen) {
    source_hub_t *h = s->hub;
    ns_count_t *c = s->charged;
    if (held > s->held) {
        size_t add = held - s->held, mine = c ? c->read_held : s->held;
        if (!fair_share_admits(mine, h->read_held, add, h->o.max_read_bytes)) {
            h->stats.refused_read_bytes++;
            snprintf(msg, msglen,
                     "response bytes held by the polls in flight: %zu of namespace \"%.100s\", "
                     "%zu in all; %zu more would pass its share of --source-read-bytes %zu",
                     mine, c ? c->ns : "?", h->read_held, add, h->o.max_read_bytes);
            return -1;
        }
    }
    h->read_held = h->read_held - s->held + held;
    if (c)
        c->read_held = c->read_held - s->held + held;
    s->held = held;
    return 0;
}

/* Gives back what s's reply holds to --source-read-bytes and frees it. */
void hub_reply_end(source_t *s) {
    if (s->reply)
        s->backend->end(s->reply);
    s->reply = NULL;
    (void)read_hold(s, 0, NULL, 0);
}

/* The bytes of a poll's reply as they arrive: counted against the
 * namespace's read rate, parsed by the backend, and what the reply holds
 * after them counted against the process-wide --source-read-bytes. */
static int poll_data(void *ud, const char *buf, size_t len, char *why, size_t whylen) {
    source_t *s = ud;
    source_hub_t *h = s->hub;
    h->stats.bytes += len;
    if (s->charged)
        s->charged->rtokens -= (double)len;
    int rc = s->backend->feed(s->reply, buf, len, s->reply_msg, sizeof s->reply_msg);
    if (rc >= 0 && read_hold(s, s->backend->held(s->reply), s->reply_msg, sizeof s->reply_msg) != 0)
        rc = -1;
    if (rc < 0) {
        s->reply_rc = rc;
        snprintf(why, whylen, "%s", s->reply_msg);
        return -1;
    }
    return rc;
}

/* Which process answered source s now (engine_reading_t.start_time_s): a
 * process other than the last one starts the counter window again (one
 * process's counters never differenced against another's), and one seen
 * before another marks the URL as taking turns for SOURCE_TURNS_NS. */
static void note_process(source_t *s, const engine_reading_t *r, mono_ns_t now) {
    if (!r->has_start || (s->nstarts && s->starts[0] == r->start_time_s))
        return;
    unsigned seen = 0;
    while (seen < s->nstarts && s->starts[seen] != r->start_time_s)
        seen++;
    if (s->nstarts)
        memset(&s->counters, 0, sizeof s->counters);
    if (seen < s->nstarts)
        s->turns_until = clock_add_sat(now, SOURCE_TURNS_NS);
    else if (s->nstarts < SOURCE_STARTS)
        seen = s->nstarts++;
    else
        seen = SOURCE_STARTS - 1;
    memmove(&s->starts[1], &s->starts[0], seen * sizeof *s->starts);
    s->starts[0] = r->start_time_s;
}

/* The end of one fetch: the backend's reading of the reply; what the
 * reading means over time (failures, recovery, rates) is kept here. */
static void poll_done(void *ud, int status, bool eof, const char *error) {
    source_t *s = ud;
    source_hub_t *h = s->hub;
    mono_ns_t now = loop_now(h->o.loop);
    char msg[512];
    s->inflight = NULL;
    source_reading_t r;
    int prc = status == 0 ? s->backend->finish(s->reply, eof, &r, msg, sizeof msg) : 0;
    hub_reply_end(s);
    if (status == KGS_EINVAL && s->reply_rc) {
        /* the reply said it (the message is the source's, not the peer's) */
        set_failure(
            s, s->reply_rc == SOURCE_PARSE_NO_SERVER ? DEMAND_FAIL_NO_SERVER : DEMAND_FAIL_OTHER,
            s->reply_msg);
        return;
    }
    if (status != 0) {
        if (s->naddrs > 1)
            s->next_addr = (s->next_addr + 1) % s->naddrs;
        set_failure(s, fetch_fail_kind(status), error);
        return;
    }
    if (prc != 0) {
        set_failure(s, prc == SOURCE_PARSE_NO_SERVER ? DEMAND_FAIL_NO_SERVER : DEMAND_FAIL_OTHER,
                    msg);
        return;
    }
    if (s->p.kind == SOURCE_KIND_ENGINE) {
        if (memcmp(&r.engine, &s->reading, sizeof r.engine) != 0)
            hub_notify(h);
        s->reading = r.engine;
        note_process(s, &r.engine, now);
        if (s->p.slo_mask && s->hist)
            hist_feed(s, h->scratch.hists, now);
        if (r.engine.has_triton)
            counter_window_push(&s->counters, now, r.engine.queue_us, r.engine.success,
                                (uint64_t)s->window_max_s * 10000000ull);
        else if (r.engine.has_tokens)
            counter_window_push(&s->counters, now, r.engine.prompt_tokens_total,
                                r.engine.generation_tokens_total,
                                (uint64_t)s->window_max_s * 10000000ull);
    } else {
        if (r.queue != s->queue_value)
            hub_notify(h);
        s->queue_value = r.queue;
    }
    success(s, now);
}
/* ---- polling --------------------------------------------------------------------- */

void hub_schedule(source_t *s, mono_ns_t now) {
    mono_ns_t due = s->poll_started + s->interval_ns;
    loop_timer_start(s->hub->o.loop, &s->timer, due > now ? due : now);
}

static SSL_CTX *hub_tls(source_hub_t *h);

/* A pod's source with a sourceAuth profile: the pod must still hold the
 * address (core/tenant.h); true when refused (the source's error says why). */
static bool auth_pod_refused(source_hub_t *h, source_t *s, const struct sockaddr_storage *addr,
                             socklen_t addrlen) {
    char why[400] = "no pod check in this process";
    if (h->o.auth_pod_check &&
        h->o.auth_pod_check(h->o.user_data, s->auth_pod, (const struct sockaddr *)addr, addrlen,
                            why, sizeof why) == 0)
        return false;
    char msg[512];
    snprintf(msg, sizeof msg, "sourceAuth %s: credential not sent: %s", h->auth[s->auth].p->name,
             why);
    set_error(s, msg);
    return true;
}

/* --source-read-rate: whether s's namespace has read more than its share
 * lately; then its next poll waits until the debt is paid (the timer is
 * re-armed for then) and this returns true. A wait that outlasts the
 * source's timeout is reported on the source, naming the flag: its
 * readings go stale for a reason the operator can act on. */
static bool read_rate_wait(source_t *s, mono_ns_t now) {
    source_hub_t *h = s->hub;
    ns_count_t *c = s->charged;
    if (!c)
        return false;
    double rate = h->o.read_rate;
    if (now > c->rtokens_at) {
        c->rtokens += (double)(now - c->rtokens_at) / 1e9 * rate;
        c->rtokens_at = now;
    }
    if (c->rtokens > rate)
        c->rtokens = rate;
    if (c->rtokens >= 0)
        return false;
    h->stats.read_rate_waits++;
    uint64_t wait_ns = (uint64_t)(-c->rtokens / rate * 1e9) + 1;
    loop_timer_start(h->o.loop, &s->timer, clock_add_sat(now, wait_ns));
    if (wait_ns > s->timeout_ns) {
        char m[400];
        snprintf(m, sizeof m,
                 "polls wait %.1f s: the sources of namespace \"%.100s\" read more than %.0f "
                 "bytes a second (--source-read-rate)",
                 (double)wait_ns / 1e9, c->ns, rate);
        set_error(s, m);
    }
    return true;
}

static void poll_source(source_t *s) {
    source_hub_t *h = s->hub;
    mono_ns_t now = loop_now(h->o.loop);
    char msg[512], err[300];
    if (!s->inflight && read_rate_wait(s, now))
        return;
    s->poll_started = now;
    hub_schedule(s, now);
    if (s->inflight)
        return;
    h->stats.polls++;
    if (s->naddrs == 0) {
        if (s->resolve_error[0])
            set_error(s, s->resolve_error);
        return;
    }
    const struct sockaddr_storage *addr = &s->addrs[s->next_addr % s->naddrs];
    socklen_t addrlen = s->addrlens[s->next_addr % s->naddrs];
    const char *refused = source_guard_addr((const struct sockaddr *)addr, addrlen);
    if (refused) {
        char peer[64];
        sock_format_peer(addr, peer, sizeof peer);
        snprintf(msg, sizeof msg, "refused to connect to %s: %s (SSRF guard)", peer, refused);
        set_error(s, msg);
        return;
    }
    if (h->o.egress) {
        char why[300];
        if (egress_check(h->o.egress, (const struct sockaddr *)addr, addrlen, why, sizeof why)) {
            h->stats.refused_egress++;
            snprintf(msg, sizeof msg, "refused to connect to %s (egress allow-list)", why);
            set_error(s, msg);
            return;
        }
    }
    SSL_CTX *tls = s->tls ? hub_tls(h) : NULL;
    s->p.bearer = NULL;
    s->p.bearer_len = 0;
    if (s->auth >= 0) {
        auth_rt_t *a = &h->auth[s->auth];
        hub_auth_refresh(h, a, now);
        if (a->error[0]) {
            set_error(s, a->error);
            return;
        }
        if (s->auth_pod && auth_pod_refused(h, s, addr, addrlen))
            return;
        s->p.bearer = a->token_len ? a->token : NULL;
        s->p.bearer_len = a->token_len;
        if (s->tls && a->tls)
            tls = tls_client_ctx(a->tls);
    }
    /* room for a bearer token of SOURCE_AUTH_TOKEN_MAX bytes */
    char req[SOURCE_AUTH_TOKEN_MAX + 4096];
    size_t n = s->backend->request(&s->p, req, sizeof req);
    s->p.bearer = NULL; /* borrowed for request() only */
    if (n == 0) {
        set_error(s, "request too large");
        return;
    }
    fetch_request_t fr = {
        .addr = *addr,
        .addrlen = addrlen,
        .tls = tls,
        .tls_host = s->p.url.host,
        .alpn = s->backend->alpn,
        .request = req,
        .request_len = n,
        .max_bytes = h->o.max_body_bytes + 65536,
        .timeout_ns = s->timeout_ns,
        .data = poll_data,
        .done = poll_done,
        .user_data = s,
    };
    if (s->tls && !tls) {
        char m[400];
        explicit_bzero(req, n);
        snprintf(m, sizeof m, "TLS is not available (no CA bundle could be loaded: %s)",
                 h->tls_error);
        set_error(s, m);
        return;
    }
    s->reply_rc = 0;
    s->reply = s->backend->begin(&s->p, &h->scratch);
    if (!s->reply) {
        explicit_bzero(req, n);
        set_error(s, "out of memory");
        return;
    }
    if (read_hold(s, s->backend->held(s->reply), msg, sizeof msg) != 0) {
        explicit_bzero(req, n);
        hub_reply_end(s);
        set_error(s, msg); /* this poll only: the next one tries again */
        return;
    }
    int frc = fetch_start(h->o.loop, &fr, &s->inflight, err, sizeof err);
    explicit_bzero(req, n); /* it may hold a token; the fetch has its own copy */
    if (frc != 0) {
        s->inflight = NULL;
        hub_reply_end(s);
        set_failure(s, fetch_fail_kind(frc), err);
    }
}

void hub_on_timer(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)loop;
    (void)t;
    poll_source(ud);
}

/* The client TLS context for https and rediss sources, built when the first
 * one polls: a server without TLS sources never touches libcrypto's pages
 * (3.9 MiB of idle RSS). With --source-ca-file it was built at start, so a
 * bad file fails the start. */
static SSL_CTX *hub_tls(source_hub_t *h) {
    if (!h->tls && !h->tls_tried) {
        h->tls_tried = true;
        h->tls = tls_client_ctx_new(NULL, NULL, NULL, false, h->tls_error, sizeof h->tls_error);
        if (h->tls)
            SSL_CTX_set_alpn_protos(h->tls, NULL, 0); /* ALPN is set per connection */
    }
    return h->tls;
}

void hub_on_resolved(void *ud, const char *const *addrs, size_t n, const char *error) {
    source_t *s = ud;
    if (error)
        snprintf(s->resolve_error, sizeof s->resolve_error, "%s", error);
    else
        s->resolve_error[0] = '\0';
    if (n == 0)
        return;
    /* "ip:port" or "[ip6]:port"; every address must pass the guard, so a
     * name that also resolves to a metadata address is refused as a whole
     * (only that address is kept, and poll_source reports it). */
    struct sockaddr_storage got[SOURCE_MAX_ADDRS];
    socklen_t gotlen[SOURCE_MAX_ADDRS];
    unsigned ngot = 0;
    for (size_t i = 0; i < n && ngot < SOURCE_MAX_ADDRS; i++) {
        char host[64];
        const char *a = addrs[i];
        const char *colon = strrchr(a, ':');
        if (!colon)
            continue;
        size_t hl = (size_t)(colon - a);
        if (a[0] == '[' && hl >= 2) {
            a++;
            hl -= 2;
        }
        if (hl >= sizeof host)
            continue;
        memcpy(host, a, hl);
        host[hl] = '\0';
        struct sockaddr_storage ss;
        memset(&ss, 0, sizeof ss);
        socklen_t sl;
        struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
        struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
        if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
            v4->sin_family = AF_INET;
            v4->sin_port = htons(s->p.url.port);
            sl = sizeof *v4;
        } else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
            v6->sin6_family = AF_INET6;
            v6->sin6_port = htons(s->p.url.port);
            sl = sizeof *v6;
        } else {
            continue;
        }
        if (source_guard_addr((struct sockaddr *)&ss, sl)) {
            got[0] = ss;
            gotlen[0] = sl;
            ngot = 1;
            break;
        }
        got[ngot] = ss;
        gotlen[ngot++] = sl;
    }
    if (ngot == 0)
        return;
    memcpy(s->addrs, got, ngot * sizeof got[0]);
    memcpy(s->addrlens, gotlen, ngot * sizeof gotlen[0]);
    s->naddrs = ngot;
    s->next_addr = 0;
}
