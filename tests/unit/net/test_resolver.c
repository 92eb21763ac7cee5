/* test_resolver.c - DNS discovery off the loop: the real getaddrinfo for
 * localhost and an unresolvable name, and a scripted lookup (the resolver's
 * seam, reached by including the .c file) for ordering, deduplication,
 * keeping the last list through a failure, not repeating unchanged
 * outcomes, and freeing from inside the callback. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "net/resolver.c"

#define MS NS_PER_MS
#define MAX_RESULTS 16
#define MAX_ADDRS 8

typedef struct {
    size_t n;
    char addrs[MAX_ADDRS][ADDR_MAX];
    bool failed;
    char error[512];
} seen_t;

/* One scripted answer: a list of IP literals, or an EAI code. */
typedef struct {
    const char *ips[MAX_ADDRS];
    int gai;
} step_t;

typedef struct {
    loop_t *loop;
    resolver_t *r;
    loop_timer_t guard, stop_after;
    bool guard_fired;
    unsigned results;
    seen_t seen[MAX_RESULTS];
    unsigned stop_at; /* loop_stop after this many results (0: never) */
    bool free_in_cb;

    /* The fake lookup (runs on the resolver thread). */
    pthread_mutex_t mu;
    const step_t *script;
    size_t script_len;
    unsigned lookups;
} fixture_t;

/* ---- fake lookup ------------------------------------------------------------- */

typedef struct {
    struct addrinfo ai;
    struct sockaddr_storage ss;
} fake_ai_t;

static int fake_lookup(void *ud, const char *host, const char *port, struct addrinfo **res) {
    (void)host;
    fixture_t *f = ud;
    pthread_mutex_lock(&f->mu);
    size_t i = f->lookups < f->script_len ? f->lookups : f->script_len - 1;
    f->lookups++;
    const step_t *s = &f->script[i];
    pthread_mutex_unlock(&f->mu);
    if (s->gai)
        return s->gai;
    struct addrinfo *head = NULL, **tail = &head;
    for (size_t k = 0; k < MAX_ADDRS && s->ips[k]; k++) {
        fake_ai_t *n = calloc(1, sizeof *n);
        assert_non_null(n);
        if (strchr(s->ips[k], ':')) {
            struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&n->ss;
            s6->sin6_family = AF_INET6;
            s6->sin6_port = htons((uint16_t)atoi(port));
            assert_int_equal(inet_pton(AF_INET6, s->ips[k], &s6->sin6_addr), 1);
            n->ai.ai_family = AF_INET6;
            n->ai.ai_addrlen = sizeof *s6;
        } else {
            struct sockaddr_in *s4 = (struct sockaddr_in *)&n->ss;
            s4->sin_family = AF_INET;
            s4->sin_port = htons((uint16_t)atoi(port));
            assert_int_equal(inet_pton(AF_INET, s->ips[k], &s4->sin_addr), 1);
            n->ai.ai_family = AF_INET;
            n->ai.ai_addrlen = sizeof *s4;
        }
        n->ai.ai_socktype = SOCK_STREAM;
        n->ai.ai_addr = (struct sockaddr *)&n->ss;
        *tail = &n->ai;
        tail = &n->ai.ai_next;
    }
    *res = head;
    return 0;
}

static void fake_release(void *ud, struct addrinfo *res) {
    (void)ud;
    while (res) {
        struct addrinfo *next = res->ai_next;
        free(res); /* ai is the first member of fake_ai_t */
        res = next;
    }
}

static unsigned lookups(fixture_t *f) {
    pthread_mutex_lock(&f->mu);
    unsigned n = f->lookups;
    pthread_mutex_unlock(&f->mu);
    return n;
}

/* ---- fixture ------------------------------------------------------------------ */

static void on_guard(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)t;
    fixture_t *f = ud;
    f->guard_fired = true;
    loop_stop(loop);
}

static void on_stop_after(loop_t *loop, loop_timer_t *t, void *ud) {
    (void)t;
    (void)ud;
    loop_stop(loop);
}

static void on_result(void *ud, const char *const *addrs, size_t n, const char *error) {
    fixture_t *f = ud;
    if (f->results < MAX_RESULTS) {
        seen_t *s = &f->seen[f->results];
        assert_true(n <= MAX_ADDRS);
        s->n = n;
        for (size_t i = 0; i < n; i++)
            snprintf(s->addrs[i], sizeof s->addrs[i], "%s", addrs[i]);
        s->failed = error != NULL;
        snprintf(s->error, sizeof s->error, "%s", error ? error : "");
    }
    f->results++;
    if (f->free_in_cb) {
        resolver_free(f->r);
        f->r = NULL;
    }
    if (f->stop_at && f->results == f->stop_at)
        loop_stop(f->loop);
}

static int setup(void **state) {
    fixture_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    char err[256];
    assert_int_equal(loop_new(&f->loop, err, sizeof err), 0);
    loop_timer_init(&f->guard, on_guard, f);
    loop_timer_init(&f->stop_after, on_stop_after, f);
    pthread_mutex_init(&f->mu, NULL);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture_t *f = *state;
    resolver_free(f->r);
    loop_timer_stop(f->loop, &f->guard);
    loop_timer_stop(f->loop, &f->stop_after);
    loop_free(f->loop);
    pthread_mutex_destroy(&f->mu);
    free(f);
    return 0;
}

/* Runs the loop until loop_stop, or the guard after `bound_ms`. */
static void run_for(fixture_t *f, uint64_t bound_ms) {
    assert_int_equal(
        loop_timer_start(f->loop, &f->guard, clock_add_sat(clock_mono_now(), bound_ms * MS)), 0);
    assert_int_equal(loop_run(f->loop), 0);
    loop_timer_stop(f->loop, &f->guard);
}

static void start_fake(fixture_t *f, const step_t *script, size_t len, uint64_t interval_ns) {
    f->script = script;
    f->script_len = len;
    resolver_lookup_t lk = {.lookup = fake_lookup, .release = fake_release, .ud = f};
    char err[256];
    if (resolver_start_with(f->loop, "agents.ns.svc:6000", interval_ns, &lk, false, on_result, f,
                            &f->r, err, sizeof err) != 0)
        fail_msg("resolver_start_with: %s", err);
}

/* ---- real getaddrinfo ----------------------------------------------------------- */

static void test_resolver_resolves_localhost_to_loopback_addresses(void **state) {
    fixture_t *f = *state;
    char err[256];
    if (resolver_start(f->loop, "localhost:6000", 0, on_result, f, &f->r, err, sizeof err) != 0)
        fail_msg("resolver_start: %s", err);
    f->stop_at = 1;
    run_for(f, 5000);
    assert_false(f->guard_fired);
    assert_int_equal(f->results, 1);
    if (f->seen[0].failed)
        skip(); /* a sandbox without a localhost entry */
    assert_true(f->seen[0].n >= 1);
    for (size_t i = 0; i < f->seen[0].n; i++)
        assert_true(strcmp(f->seen[0].addrs[i], "127.0.0.1:6000") == 0 ||
                    strcmp(f->seen[0].addrs[i], "[::1]:6000") == 0);
}

static void test_resolver_reports_an_error_for_an_unresolvable_name(void **state) {
    fixture_t *f = *state;
    char err[256];
    if (resolver_start(f->loop, "no-such-host.invalid:1", 0, on_result, f, &f->r, err,
                       sizeof err) != 0)
        fail_msg("resolver_start: %s", err);
    f->stop_at = 1;
    run_for(f, 5000);
    if (f->guard_fired) {
        /* DNS here neither answers nor fails within the bound. */
        print_message("lookup still running after 5 s; the error path was not observed\n");
        skip();
    }
    assert_int_equal(f->results, 1);
    assert_true(f->seen[0].failed);
    assert_int_equal(f->seen[0].n, 0);
    assert_non_null(strstr(f->seen[0].error, "resolve no-such-host.invalid: "));
}

/* ---- scripted lookups --------------------------------------------------------------- */

static void test_resolver_sorts_and_deduplicates_addresses(void **state) {
    fixture_t *f = *state;
    static const step_t script[] = {
        {.ips = {"10.0.0.2", "fd00::1", "10.0.0.1", "10.0.0.2", "10.0.0.10"}}};
    start_fake(f, script, 1, 0);
    f->stop_at = 1;
    run_for(f, 2000);
    assert_int_equal(f->results, 1);
    const seen_t *s = &f->seen[0];
    assert_false(s->failed);
    assert_int_equal(s->n, 4);
    assert_string_equal(s->addrs[0], "10.0.0.10:6000"); /* strcmp order */
    assert_string_equal(s->addrs[1], "10.0.0.1:6000");
    assert_string_equal(s->addrs[2], "10.0.0.2:6000");
    assert_string_equal(s->addrs[3], "[fd00::1]:6000");
}

static void
test_resolver_keeps_the_last_list_through_a_failure_and_repeats_no_outcome(void **state) {
    fixture_t *f = *state;
    static const step_t script[] = {
        {.ips = {"10.0.0.1", "10.0.0.2"}},
        {.ips = {"10.0.0.2", "10.0.0.1"}}, /* same list: not delivered */
        {.gai = EAI_AGAIN},
        {.gai = EAI_AGAIN}, /* same error: not delivered */
        {.ips = {"10.0.0.1"}},
        {.ips = {"10.0.0.1"}}, /* and repeated from here on */
    };
    start_fake(f, script, sizeof script / sizeof script[0], 10 * MS);
    f->stop_at = 3;
    run_for(f, 3000);
    assert_false(f->guard_fired);
    /* Let several more rounds pass: nothing new may arrive. */
    unsigned before = lookups(f);
    assert_int_equal(
        loop_timer_start(f->loop, &f->stop_after, clock_add_sat(clock_mono_now(), 150 * MS)), 0);
    assert_int_equal(loop_run(f->loop), 0);
    assert_true(lookups(f) >= before + 3);
    assert_int_equal(f->results, 3);

    assert_false(f->seen[0].failed);
    assert_int_equal(f->seen[0].n, 2);
    assert_string_equal(f->seen[0].addrs[0], "10.0.0.1:6000");
    assert_string_equal(f->seen[0].addrs[1], "10.0.0.2:6000");

    assert_true(f->seen[1].failed);
    assert_int_equal(f->seen[1].n, 2); /* the last good list, unchanged */
    assert_string_equal(f->seen[1].addrs[0], "10.0.0.1:6000");
    assert_string_equal(f->seen[1].addrs[1], "10.0.0.2:6000");
    char want[512];
    snprintf(want, sizeof want, "resolve agents.ns.svc: %s", gai_strerror(EAI_AGAIN));
    assert_string_equal(f->seen[1].error, want);

    assert_false(f->seen[2].failed);
    assert_int_equal(f->seen[2].n, 1);
    assert_string_equal(f->seen[2].addrs[0], "10.0.0.1:6000");
}

static void test_resolver_reports_a_first_failure_with_an_empty_list(void **state) {
    fixture_t *f = *state;
    static const step_t script[] = {{.gai = EAI_NONAME}};
    start_fake(f, script, 1, 0);
    f->stop_at = 1;
    run_for(f, 2000);
    assert_int_equal(f->results, 1);
    assert_true(f->seen[0].failed);
    assert_int_equal(f->seen[0].n, 0);
}

static void test_resolver_can_be_freed_inside_its_callback(void **state) {
    fixture_t *f = *state;
    static const step_t script[] = {{.ips = {"10.0.0.1"}}, {.ips = {"10.0.0.2"}}};
    start_fake(f, script, 2, 5 * MS);
    f->free_in_cb = true;
    assert_int_equal(
        loop_timer_start(f->loop, &f->stop_after, clock_add_sat(clock_mono_now(), 200 * MS)), 0);
    run_for(f, 2000);
    assert_false(f->guard_fired);
    assert_null(f->r);
    assert_int_equal(f->results, 1);
}

/* Threads of this process, from /proc/self/status. */
static int threads_now(void) {
    FILE *fp = fopen("/proc/self/status", "r");
    if (!fp)
        return -1;
    char line[256];
    int n = -1;
    while (fgets(line, sizeof line, fp))
        if (sscanf(line, "Threads: %d", &n) == 1)
            break;
    fclose(fp);
    return n;
}

static void on_count(void *ud, const char *const *addrs, size_t n, const char *error) {
    (void)addrs;
    (void)n;
    (void)error;
    fixture_t *f = ud;
    f->results++;
    if (f->stop_at && f->results == f->stop_at)
        loop_stop(f->loop);
}

/* 200 names that do not resolve cost the pool's threads, not one each
 * (issue 16: 500 unresolvable names made 500 threads and eventfds). */
static void test_resolver_shares_one_pool_of_threads_among_many_names(void **state) {
    fixture_t *f = *state;
    static const step_t script[] = {{.gai = EAI_NONAME}};
    f->script = script;
    f->script_len = 1;
    resolver_lookup_t lk = {.lookup = fake_lookup, .release = fake_release, .ud = f};
    enum { N = 200 };
    resolver_t *rs[N];
    int before = threads_now();
    for (unsigned i = 0; i < N; i++) {
        char name[64], err[256];
        snprintf(name, sizeof name, "name-%u.invalid:80", i);
        assert_int_equal(
            resolver_start_with(f->loop, name, 0, &lk, true, on_count, f, &rs[i], err, sizeof err),
            0);
    }
    f->stop_at = N;
    run_for(f, 5000);
    assert_int_equal(f->results, N);
    int after = threads_now();
    if (before > 0)
        assert_true(after - before <= POOL_THREADS);
    for (unsigned i = 0; i < N; i++)
        resolver_free(rs[i]);
}

/* Two resolvers of one failing name: one lookup, the second gets the
 * cached failure. */
static void test_resolver_reuses_a_recent_failure_of_the_same_name(void **state) {
    fixture_t *f = *state;
    static const step_t script[] = {{.gai = EAI_NONAME}};
    f->script = script;
    f->script_len = 1;
    resolver_lookup_t lk = {.lookup = fake_lookup, .release = fake_release, .ud = f};
    char err[256];
    resolver_t *a, *b;
    assert_int_equal(resolver_start_with(f->loop, "dead.invalid:80", 60 * NS_PER_SEC, &lk, true,
                                         on_count, f, &a, err, sizeof err),
                     0);
    f->stop_at = 1;
    run_for(f, 2000);
    assert_int_equal(resolver_start_with(f->loop, "dead.invalid:80", 60 * NS_PER_SEC, &lk, true,
                                         on_count, f, &b, err, sizeof err),
                     0);
    f->stop_at = 2;
    run_for(f, 2000);
    assert_int_equal(f->results, 2);
    assert_int_equal(lookups(f), 1);
    resolver_free(a);
    resolver_free(b);
}

static void test_resolver_rejects_a_malformed_name_port(void **state) {
    fixture_t *f = *state;
    static const char *const bad[] = {"agents",       "agents:",      ":6000",    "agents:0",
                                      "agents:65536", "agents:6x",    "::1:6000", "[::1]6000",
                                      "[::1:6000",    "agents:123456"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        resolver_t *r = (resolver_t *)(uintptr_t)0x5a5a;
        char err[256] = "";
        assert_int_equal(resolver_start(f->loop, bad[i], 0, on_result, f, &r, err, sizeof err),
                         KGS_EINVAL);
        assert_ptr_equal(r, (resolver_t *)(uintptr_t)0x5a5a);
        assert_non_null(strstr(err, bad[i]));
    }
    assert_int_equal(f->results, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_resolver_resolves_localhost_to_loopback_addresses,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_resolver_reports_an_error_for_an_unresolvable_name,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_resolver_sorts_and_deduplicates_addresses, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_resolver_keeps_the_last_list_through_a_failure_and_repeats_no_outcome, setup,
            teardown),
        cmocka_unit_test_setup_teardown(test_resolver_reports_a_first_failure_with_an_empty_list,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_resolver_can_be_freed_inside_its_callback, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_resolver_shares_one_pool_of_threads_among_many_names,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_resolver_reuses_a_recent_failure_of_the_same_name,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_resolver_rejects_a_malformed_name_port, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
