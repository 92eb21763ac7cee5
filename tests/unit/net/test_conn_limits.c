/* test_conn_limits.c - the connection cap below the descriptor limit, the
 * per-peer default, and the per-peer count table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>

#include "net/conn_limits.h"

static void test_conn_limits_clamp_keeps_headroom_below_the_descriptor_limit(void **state) {
    (void)state;
    conn_limits_t l;
    /* The case: RLIMIT_NOFILE 1024 = the default cap. */
    conn_limits_clamp(1024, 1024, &l);
    assert_int_equal(l.max_connections, 1024 - CONN_LIMITS_FD_HEADROOM);
    assert_int_equal(l.headroom, CONN_LIMITS_FD_HEADROOM);
    assert_true(l.clamped);
    /* A small limit keeps half. */
    conn_limits_clamp(1024, 256, &l);
    assert_int_equal(l.max_connections, 128);
    assert_int_equal(l.headroom, 128);
    assert_true(l.clamped);
    /* Enough descriptors: the cap is what was asked. */
    conn_limits_clamp(1024, 1048576, &l);
    assert_int_equal(l.max_connections, 1024);
    assert_false(l.clamped);
    conn_limits_clamp(1024, 1024 + CONN_LIMITS_FD_HEADROOM, &l);
    assert_int_equal(l.max_connections, 1024);
    assert_false(l.clamped);
    /* No limit known, and the smallest limits: never 0. */
    conn_limits_clamp(1024, 0, &l);
    assert_int_equal(l.max_connections, 1024);
    assert_false(l.clamped);
    conn_limits_clamp(1024, 1, &l);
    assert_int_equal(l.max_connections, 1);
    conn_limits_clamp(5, 3, &l);
    assert_int_equal(l.max_connections, 2);
}

static void test_conn_limits_per_peer_default_is_half_rounded_up(void **state) {
    (void)state;
    assert_int_equal(conn_limits_per_peer_default(1024), 512);
    assert_int_equal(conn_limits_per_peer_default(1025), 513);
    assert_int_equal(conn_limits_per_peer_default(2), 1);
    assert_int_equal(conn_limits_per_peer_default(1), 1);
    assert_int_equal(conn_limits_per_peer_default(0), 1);
}

static peer_key_t v4(const char *ip) {
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in *a = (struct sockaddr_in *)&ss;
    a->sin_family = AF_INET;
    a->sin_port = htons(40000); /* the port never matters */
    inet_pton(AF_INET, ip, &a->sin_addr);
    peer_key_t k;
    assert_true(peer_key_from_sockaddr(&ss, &k));
    return k;
}

static peer_key_t v6(const char *ip) {
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
    a->sin6_family = AF_INET6;
    inet_pton(AF_INET6, ip, &a->sin6_addr);
    peer_key_t k;
    assert_true(peer_key_from_sockaddr(&ss, &k));
    return k;
}

static void test_peer_key_ignores_the_port_and_maps_v4_in_v6(void **state) {
    (void)state;
    peer_key_t a = v4("10.0.0.7"), b = v6("::ffff:10.0.0.7"), c = v6("2001:db8::7");
    assert_int_equal(a.family, 4);
    assert_memory_equal(&a, &b, sizeof a);
    assert_int_equal(c.family, 6);
    struct sockaddr_storage unspec;
    memset(&unspec, 0, sizeof unspec);
    peer_key_t k;
    assert_false(peer_key_from_sockaddr(&unspec, &k));
}

static void test_peer_table_counts_by_address_through_churn(void **state) {
    (void)state;
    peer_table_t t;
    peer_table_init(&t);
    peer_key_t a = v4("127.0.0.2"), b = v4("127.0.0.1");
    assert_int_equal(peer_table_count(&t, &a), 0);
    for (int i = 0; i < 600; i++)
        assert_int_equal(peer_table_add(&t, &a), 0);
    assert_int_equal(peer_table_add(&t, &b), 0);
    assert_int_equal(peer_table_count(&t, &a), 600);
    assert_int_equal(peer_table_count(&t, &b), 1);
    assert_int_equal(peer_table_peers(&t), 2);
    /* Many distinct peers (the table grows), then all but a few leave, in
     * an order that exercises the backward shift: every count stays right. */
    char ip[32];
    for (int i = 0; i < 3000; i++) {
        snprintf(ip, sizeof ip, "10.%d.%d.%d", i / 65536, (i / 256) % 256, i % 256);
        peer_key_t k = v4(ip);
        assert_int_equal(peer_table_add(&t, &k), 0);
    }
    assert_int_equal(peer_table_peers(&t), 3002);
    for (int i = 0; i < 3000; i += (i % 7 == 0 ? 1 : 2)) {
        snprintf(ip, sizeof ip, "10.%d.%d.%d", i / 65536, (i / 256) % 256, i % 256);
        peer_key_t k = v4(ip);
        peer_table_remove(&t, &k);
    }
    for (int i = 0; i < 3000; i++) {
        snprintf(ip, sizeof ip, "10.%d.%d.%d", i / 65536, (i / 256) % 256, i % 256);
        peer_key_t k = v4(ip);
        bool removed = false;
        for (int j = 0; j < 3000 && j <= i; j += (j % 7 == 0 ? 1 : 2))
            if (j == i)
                removed = true;
        assert_int_equal(peer_table_count(&t, &k), removed ? 0 : 1);
    }
    assert_int_equal(peer_table_count(&t, &a), 600);
    for (int i = 0; i < 600; i++)
        peer_table_remove(&t, &a);
    assert_int_equal(peer_table_count(&t, &a), 0);
    peer_table_remove(&t, &a); /* not there: ignored */
    assert_int_equal(peer_table_count(&t, &b), 1);
    peer_table_deinit(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conn_limits_clamp_keeps_headroom_below_the_descriptor_limit),
        cmocka_unit_test(test_conn_limits_per_peer_default_is_half_rounded_up),
        cmocka_unit_test(test_peer_key_ignores_the_port_and_maps_v4_in_v6),
        cmocka_unit_test(test_peer_table_counts_by_address_through_churn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
