/* test_source_backend_redis.c - the Redis queue backend without sockets:
 * the pipeline it sends, and the replies it reads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sources/source_backend.h"
#include "support/test_support.h"

typedef struct {
    source_params_t p;
    source_scratch_t sc;
} fixture_t;

static int setup(void **state) {
    fixture_t *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    f->sc.resp = malloc(sizeof *f->sc.resp);
    if (!f->sc.resp) {
        free(f);
        return -1;
    }
    f->p.kind = SOURCE_KIND_REDIS;
    f->p.qkind = QUEUE_REDIS_LIST;
    snprintf(f->p.rkey, sizeof f->p.rkey, "jobs");
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture_t *f = *state;
    free(f->sc.resp);
    free(f);
    return 0;
}

/* The reply read whole, and again dripped a byte and three bytes at a
 * time: every way must say the same. */
static int parse(fixture_t *f, const char *reply, source_reading_t *r, char *msg) {
    size_t n = strlen(reply);
    int rc =
        source_backend_read(&source_backend_redis, &f->p, &f->sc, reply, n, 0, false, r, msg, 512);
    static const size_t pieces[] = {1, 3};
    for (size_t i = 0; i < 2; i++) {
        char m2[512] = "";
        source_reading_t r2;
        memset(&r2, 0, sizeof r2);
        int rc2 = source_backend_read(&source_backend_redis, &f->p, &f->sc, reply, n, pieces[i],
                                      false, &r2, m2, sizeof m2);
        if (rc2 != rc || (rc != 0 && strcmp(m2, msg) != 0) || (rc == 0 && r2.queue != r->queue))
            fail_msg("pieces of %zu: %d \"%s\", whole %d \"%s\"", pieces[i], rc2, m2, rc,
                     rc ? msg : "");
    }
    return rc;
}

/* What feed() says of reply[0..len). */
static int feed(fixture_t *f, const char *reply, size_t len) {
    char why[256];
    source_reply_t *r = source_backend_redis.begin(&f->p, &f->sc);
    assert_non_null(r);
    int rc = source_backend_redis.feed(r, reply, len, why, sizeof why);
    source_backend_redis.end(r);
    return rc;
}

static void test_source_backend_redis_pipeline(void **state) {
    fixture_t *f = *state;
    char buf[1024];
    size_t n = source_backend_redis.request(&f->p, buf, sizeof buf);
    assert_int_equal(n, strlen("*2\r\n$4\r\nLLEN\r\n$4\r\njobs\r\n"));
    assert_memory_equal(buf, "*2\r\n$4\r\nLLEN\r\n$4\r\njobs\r\n", n);
    snprintf(f->p.user, sizeof f->p.user, "u");
    snprintf(f->p.pass, sizeof f->p.pass, "pw");
    f->p.db = 3;
    f->p.qkind = QUEUE_REDIS_STREAM;
    f->p.measure = STREAM_MEASURE_LAG;
    n = source_backend_redis.request(&f->p, buf, sizeof buf);
    const char *want = "*3\r\n$4\r\nAUTH\r\n$1\r\nu\r\n$2\r\npw\r\n"
                       "*2\r\n$6\r\nSELECT\r\n$1\r\n3\r\n"
                       "*2\r\n$4\r\nXLEN\r\n$4\r\njobs\r\n"
                       "*3\r\n$5\r\nXINFO\r\n$6\r\nGROUPS\r\n$4\r\njobs\r\n";
    assert_int_equal(n, strlen(want));
    assert_memory_equal(buf, want, n);
    assert_int_equal(source_backend_redis.request(&f->p, buf, 10), 0);
    assert_null(source_backend_redis.alpn);
    assert_ptr_equal(source_backend_for(SOURCE_KIND_REDIS), &source_backend_redis);
}

static void test_source_backend_redis_complete_counts_replies(void **state) {
    fixture_t *f = *state;
    char why[256];
    snprintf(f->p.pass, sizeof f->p.pass, "pw");
    const char *two = "+OK\r\n:7\r\n";
    assert_int_equal(feed(f, two, 5), 0);
    assert_int_equal(feed(f, two, strlen(two)), 1);
    assert_int_equal(feed(f, "?x\r\n", 4), -1);
    /* a reply over SOURCE_REDIS_MAX_REPLY_BYTES is refused, whole or not */
    source_reply_t *r = source_backend_redis.begin(&f->p, &f->sc);
    const char *hdr = "+OK\r\n$2000000\r\n";
    assert_int_equal(source_backend_redis.feed(r, hdr, strlen(hdr), why, sizeof why), 0);
    static char chunk[4096];
    memset(chunk, 'x', sizeof chunk);
    int rc = 0;
    for (unsigned i = 0; i < 1000 && rc == 0; i++)
        rc = source_backend_redis.feed(r, chunk, sizeof chunk, why, sizeof why);
    assert_int_equal(rc, -1);
    assert_string_equal(why, "a reply larger than 1048576 bytes: refused");
    assert_true(source_backend_redis.held(r) <= 2 * SOURCE_REDIS_MAX_REPLY_BYTES);
    source_backend_redis.end(r);
}

static void test_source_backend_redis_list_length(void **state) {
    fixture_t *f = *state;
    source_reading_t r;
    char msg[512];
    assert_int_equal(parse(f, ":42\r\n", &r, msg), 0);
    assert_true(r.queue == 42);
    assert_int_equal(parse(f, "-WRONGTYPE Operation against a key\r\n", &r, msg), -1);
    assert_string_equal(msg,
                        "LLEN (key not shown): Redis answered WRONGTYPE (the key holds another "
                        "type: a list for redisListName, a stream for redisStream)");
    /* a length is a count: a negative one is an error, never a queue */
    assert_int_equal(parse(f, ":-5\r\n", &r, msg), -1);
    assert_string_equal(msg, "LLEN (key not shown): Redis answered -5, not a length");
    /* a reply of another type is named, not quoted */
    assert_int_equal(parse(f, "$10\r\ntok_SECRET\r\n", &r, msg), -1);
    assert_string_equal(msg, "LLEN (key not shown): Redis answered a bulk string, not an integer");
    assert_int_equal(parse(f, "-ERR tok_SECRET\r\n", &r, msg), -1);
    assert_string_equal(msg, "LLEN (key not shown): Redis answered ERR (the server's text is not "
                             "shown)");
    assert_int_equal(parse(f, "+tok_SECRET\r\n", &r, msg), -1);
    assert_null(strstr(msg, "SECRET"));
    /* what is not RESP at all (another kind of server) is not quoted either */
    assert_int_equal(parse(f, "HTTP/1.1 400 tok_SECRET\r\n\r\n", &r, msg), -1);
    assert_null(strstr(msg, "SECRET"));
    assert_null(strstr(msg, "HTTP"));
    assert_int_equal(
        source_backend_read(&source_backend_redis, &f->p, &f->sc, ":4", 2, 0, true, &r, msg, 512),
        -1);
    assert_string_equal(msg, "connection closed before every reply arrived");
}

static void test_source_backend_redis_auth_failure_does_not_echo_the_password(void **state) {
    fixture_t *f = *state;
    snprintf(f->p.pass, sizeof f->p.pass, "s3cret");
    source_reading_t r;
    char msg[512];
    assert_int_equal(parse(f, "-WRONGPASS invalid username-password pair\r\n:1\r\n", &r, msg), -1);
    assert_string_equal(msg, "AUTH failed: Redis answered WRONGPASS (the user name or password is "
                             "wrong)");
    assert_null(strstr(msg, "s3cret"));
}

static void test_source_backend_redis_stream_lag_and_pending(void **state) {
    fixture_t *f = *state;
    f->p.qkind = QUEUE_REDIS_STREAM;
    f->p.measure = STREAM_MEASURE_LAG;
    snprintf(f->p.group, sizeof f->p.group, "workers");
    const char *groups =
        ":3\r\n*1\r\n*12\r\n$4\r\nname\r\n$7\r\nworkers\r\n$9\r\nconsumers\r\n:1\r\n$7\r\n"
        "pending\r\n:1\r\n$17\r\nlast-delivered-id\r\n$15\r\n1795982493353-0\r\n$12\r\n"
        "entries-read\r\n:1\r\n$3\r\nlag\r\n:2\r\n";
    source_reading_t r;
    char msg[512];
    assert_int_equal(parse(f, groups, &r, msg), 0);
    assert_true(r.queue == 2);
    f->p.measure = STREAM_MEASURE_PENDING;
    assert_int_equal(parse(f, groups, &r, msg), 0);
    assert_true(r.queue == 1);
    /* no stream yet: nothing was ever queued */
    assert_int_equal(parse(f, ":0\r\n-ERR no such key\r\n", &r, msg), 0);
    assert_true(r.queue == 0);
    /* no such group yet: with lag, every entry waits for it */
    f->p.measure = STREAM_MEASURE_LAG;
    snprintf(f->p.group, sizeof f->p.group, "other");
    assert_int_equal(parse(f, groups, &r, msg), 0);
    assert_true(r.queue == 3);
    assert_int_equal(parse(f, "-ERR boom\r\n*0\r\n", &r, msg), -1);
    assert_string_equal(msg, "XLEN (key not shown): Redis answered ERR (the server's text is not "
                             "shown)");
    assert_int_equal(parse(f, ":-1\r\n*0\r\n", &r, msg), -1);
    assert_string_equal(msg, "XLEN (key not shown): Redis answered -1, not a length");
}

/* configure: the trigger's Redis queue; the password is kept for AUTH but
 * is not in the name, and release wipes it. */
static void test_source_backend_redis_configure(void **state) {
    (void)state;
    trigger_config_t c = CFG("metricType", "queue_length", "targetValue", "5", "redisAddress",
                             "rediss://r.queues:6380/2", "redisStream", "jobs",
                             "redisConsumerGroup", "workers", "redisPasswordFromEnv", "pw-123");
    source_params_t p;
    memset(&p, 0, sizeof p);
    bool tls = false;
    char name[256], err[256];
    source_target_t t = {SOURCE_KIND_REDIS, &c, NULL, NULL};
    assert_int_equal(
        source_backend_redis.configure(&t, &p, &tls, name, sizeof name, err, sizeof err), 0);
    assert_true(tls);
    assert_int_equal(p.db, 2);
    assert_int_equal(p.qkind, QUEUE_REDIS_STREAM);
    assert_string_equal(p.rkey, "jobs");
    assert_string_equal(p.group, "workers");
    assert_string_equal(p.pass, "pw-123");
    assert_string_equal(name, "redis r.queues:6380 stream jobs group workers");
    assert_null(strstr(name, "pw-123"));
    source_backend_redis.release(&p);
    assert_string_equal(p.pass, "");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_source_backend_redis_pipeline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source_backend_redis_complete_counts_replies, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_source_backend_redis_list_length, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_source_backend_redis_auth_failure_does_not_echo_the_password, setup, teardown),
        cmocka_unit_test(test_source_backend_redis_configure),
        cmocka_unit_test_setup_teardown(test_source_backend_redis_stream_lag_and_pending, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
