/* test_transport.c - net/transport.c over a socketpair, both ends in this
 * thread: plain reads and writes (AGAIN, EOF, a broken peer), a TLS
 * handshake with ALPN h2, decrypted bytes held inside OpenSSL that the
 * socket no longer shows (why the servers read until AGAIN), a peer that
 * offers no ALPN, and a TLS client facing a plaintext peer (told it may
 * speak h2c). Certificates from test_pki.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/tls.h"
#include "net/transport.h"

#include "test_pki.h"

static test_pki_t pki;

static void socket_pair(int sv[2]) {
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
}

static void test_plain_reads_writes_again_eof_and_a_broken_peer(void **state) {
    (void)state;
    int sv[2];
    socket_pair(sv);
    transport_t t;
    assert_int_equal(transport_init(&t, sv[0], NULL, true, NULL), 0);
    assert_true(t.handshake_done);
    assert_int_equal(transport_handshake(&t), 0);
    assert_int_equal(transport_poll_events(&t, true, false), EPOLLIN);
    assert_int_equal(transport_poll_events(&t, false, true), EPOLLOUT);
    assert_int_equal(transport_poll_events(&t, false, false), 0);
    char buf[16];
    assert_int_equal(transport_read(&t, buf, sizeof buf), TRANSPORT_AGAIN);
    assert_int_equal(write(sv[1], "abc", 3), 3);
    assert_int_equal(transport_read(&t, buf, sizeof buf), 3);
    assert_memory_equal(buf, "abc", 3);
    assert_int_equal(transport_write(&t, "xyz", 3), 3);
    assert_int_equal(read(sv[1], buf, sizeof buf), 3);
    assert_memory_equal(buf, "xyz", 3);
    close(sv[1]);
    assert_int_equal(transport_read(&t, buf, sizeof buf), 0); /* orderly EOF */
    assert_int_equal(transport_write(&t, "xyz", 3), TRANSPORT_ERROR);
    assert_non_null(strstr(t.error, "send: "));
    transport_close(&t);
    assert_int_equal(t.fd, -1);
}

/* Drives both handshakes until neither would block; returns the server's
 * and the client's last results. */
static void handshake(transport_t *srv, transport_t *cli, int *srv_rc, int *cli_rc, char *why,
                      size_t whylen) {
    *srv_rc = *cli_rc = TRANSPORT_AGAIN;
    for (int i = 0; i < 100 && (*srv_rc == TRANSPORT_AGAIN || *cli_rc == TRANSPORT_AGAIN); i++) {
        if (*cli_rc == TRANSPORT_AGAIN)
            *cli_rc = transport_client_handshake(cli, "h2", why, whylen);
        if (*srv_rc == TRANSPORT_AGAIN)
            *srv_rc = transport_handshake(srv);
    }
}

typedef struct {
    tls_server_t *tls;
    SSL_CTX *client;
} contexts_t;

static void contexts_new(contexts_t *c) {
    char err[600];
    assert_int_equal(tls_server_new(pki.chain_pem, pki.leaf_key, NULL, &c->tls, err, sizeof err),
                     0);
    c->client = tls_client_ctx_new(pki.ca_pem, NULL, NULL, false, err, sizeof err);
    assert_non_null(c->client);
}

static void contexts_free(contexts_t *c) {
    SSL_CTX_free(c->client);
    tls_server_free(c->tls);
}

static void test_tls_handshakes_with_alpn_h2_then_carries_bytes(void **state) {
    (void)state;
    contexts_t ctx;
    contexts_new(&ctx);
    int sv[2];
    socket_pair(sv);
    transport_t srv, cli;
    assert_int_equal(transport_init(&srv, sv[0], tls_server_ctx(ctx.tls), true, NULL), 0);
    assert_int_equal(transport_init(&cli, sv[1], ctx.client, false, "localhost"), 0);
    assert_false(srv.handshake_done);
    /* Before the handshake the server waits to read, whatever it wants. */
    assert_int_equal(transport_poll_events(&srv, false, false), EPOLLIN);
    int src, crc;
    char why[300] = "";
    handshake(&srv, &cli, &src, &crc, why, sizeof why);
    assert_int_equal(crc, 0);
    assert_int_equal(src, 0);
    assert_true(srv.handshake_done && cli.handshake_done);
    assert_int_equal(transport_poll_events(&srv, true, false), EPOLLIN);

    /* One 100-byte record, read 10 bytes at a time: after the first read the
     * socket is empty (OpenSSL took the whole record), yet the rest is
     * there to read: a loop that waits for epoll would never see it. */
    char msg[100], buf[100];
    for (size_t i = 0; i < sizeof msg; i++)
        msg[i] = (char)i;
    assert_int_equal(transport_write(&cli, msg, sizeof msg), sizeof msg);
    size_t got = 0;
    ssize_t n = TRANSPORT_AGAIN;
    for (int i = 0; i < 100 && n == TRANSPORT_AGAIN; i++)
        n = transport_read(&srv, buf, 10);
    assert_int_equal(n, 10);
    got += 10;
    uint8_t peek;
    assert_int_equal(recv(srv.fd, &peek, 1, MSG_PEEK | MSG_DONTWAIT), -1);
    assert_int_equal(errno, EAGAIN);
    while (got < sizeof msg && (n = transport_read(&srv, buf + got, 10)) > 0)
        got += (size_t)n;
    assert_int_equal(got, sizeof msg);
    assert_memory_equal(buf, msg, sizeof msg);
    assert_int_equal(transport_read(&srv, buf, 10), TRANSPORT_AGAIN);

    /* The client closes with close_notify: the server reads an orderly EOF. */
    transport_close(&cli);
    n = TRANSPORT_AGAIN;
    for (int i = 0; i < 100 && n == TRANSPORT_AGAIN; i++)
        n = transport_read(&srv, buf, sizeof buf);
    assert_int_equal(n, 0);
    transport_close(&srv);
    contexts_free(&ctx);
}

static void test_a_tls_peer_without_alpn_h2_is_refused(void **state) {
    (void)state;
    contexts_t ctx;
    contexts_new(&ctx);
    SSL_CTX *bare = SSL_CTX_new(TLS_client_method()); /* offers no ALPN, checks nothing */
    assert_non_null(bare);
    int sv[2];
    socket_pair(sv);
    transport_t srv, cli;
    assert_int_equal(transport_init(&srv, sv[0], tls_server_ctx(ctx.tls), true, NULL), 0);
    assert_int_equal(transport_init(&cli, sv[1], bare, false, NULL), 0);
    int src, crc;
    char why[300] = "";
    handshake(&srv, &cli, &src, &crc, why, sizeof why);
    assert_int_equal(src, TRANSPORT_ERROR);
    assert_false(srv.handshake_done);
    assert_non_null(strstr(srv.error, "TLS handshake"));
    transport_close(&srv);
    transport_close(&cli);
    SSL_CTX_free(bare);
    contexts_free(&ctx);
}

static void test_a_tls_client_facing_plaintext_hears_it_may_speak_h2c(void **state) {
    (void)state;
    contexts_t ctx;
    contexts_new(&ctx);
    const char *answers[] = {"HTTP/1.1 400 Bad Request\r\n\r\n", NULL /* close, no answer */};
    const char *says[] = {"answered with bytes that are not TLS",
                          "closed the connection without answering"};
    for (size_t i = 0; i < 2; i++) {
        int sv[2];
        socket_pair(sv);
        transport_t cli;
        assert_int_equal(transport_init(&cli, sv[1], ctx.client, false, "localhost"), 0);
        char why[300] = "";
        assert_int_equal(transport_client_handshake(&cli, "h2", why, sizeof why), TRANSPORT_AGAIN);
        char hello[4096];
        assert_true(read(sv[0], hello, sizeof hello) > 0); /* the ClientHello */
        if (answers[i])
            assert_int_equal(write(sv[0], answers[i], strlen(answers[i])),
                             (ssize_t)strlen(answers[i]));
        close(sv[0]);
        assert_int_equal(transport_client_handshake(&cli, "h2", why, sizeof why), TRANSPORT_ERROR);
        assert_true(cli.peer_not_tls);
        assert_non_null(strstr(why, says[i]));
        assert_non_null(strstr(why, "h2c"));
        transport_close(&cli);
    }
    contexts_free(&ctx);
}

static int setup(void **state) {
    (void)state;
    return test_pki_make(&pki);
}

static int teardown(void **state) {
    (void)state;
    test_pki_remove(&pki);
    return 0;
}

int main(void) {
    /* As the server's main does: OpenSSL writes with write(2), and a close
     * that sends close_notify to a peer already gone must not kill us. */
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_reads_writes_again_eof_and_a_broken_peer),
        cmocka_unit_test(test_tls_handshakes_with_alpn_h2_then_carries_bytes),
        cmocka_unit_test(test_a_tls_peer_without_alpn_h2_is_refused),
        cmocka_unit_test(test_a_tls_client_facing_plaintext_hears_it_may_speak_h2c),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
