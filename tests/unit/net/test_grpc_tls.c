/* test_grpc_tls.c - the gRPC server and client over TLS on one event loop
 * (net/tls.c contexts, net/transport.c, ALPN h2), with a CA and leaf from
 * test_pki.c: a unary call, mTLS with and without a client certificate, a
 * server name the certificate does not hold, and each side speaking the
 * other mode (the client is told which, as the integration tests pin for
 * the real binary). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/grpc_client.h"
#include "net/grpc_frame.h"
#include "net/grpc_server.h"
#include "net/loop.h"
#include "net/tls.h"

#include "test_pki.h"

static test_pki_t pki;

typedef struct {
    loop_t *loop;
    tls_server_t *tls;
    grpc_server_t *srv;
    uint16_t port;
    int requests;
} fixture_t;

typedef struct {
    int messages;
    bool done;
    int status;
    char message[512];
} result_t;

static void on_request(grpc_call_t *call, const char *path, const uint8_t *msg, size_t len,
                       void *ud) {
    (void)path;
    fixture_t *f = ud;
    f->requests++;
    assert_int_equal(grpc_call_send(call, msg, len, false), 0);
    grpc_call_finish(call, GRPC_OK, NULL);
}

static void on_message(void *ud, const uint8_t *msg, size_t len) {
    (void)msg;
    (void)len;
    ((result_t *)ud)->messages++;
}

static void on_done(void *ud, int status, const char *message) {
    result_t *r = ud;
    assert_false(r->done);
    r->done = true;
    r->status = status;
    snprintf(r->message, sizeof r->message, "%s", message);
}

/* A server on 127.0.0.1: TLS with the leaf (client certificates signed by
 * the CA required when mtls) or, with tls false, h2c. */
static fixture_t *server_start(bool tls, bool mtls) {
    fixture_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    char err[600];
    assert_int_equal(loop_new(&f->loop, err, sizeof err), 0);
    if (tls)
        assert_int_equal(tls_server_new(pki.chain_pem, pki.leaf_key, mtls ? pki.ca_pem : NULL,
                                        &f->tls, err, sizeof err),
                         0);
    grpc_server_opts_t o = {.listen_address = "127.0.0.1", .tls = f->tls, .max_connections = 16};
    grpc_server_handlers_t h = {.on_request = on_request};
    assert_int_equal(grpc_server_start(f->loop, &o, &h, f, &f->srv, err, sizeof err), 0);
    f->port = grpc_server_port(f->srv);
    return f;
}

static void server_free(fixture_t *f) {
    grpc_server_free(f->srv);
    tls_server_free(f->tls);
    loop_free(f->loop);
    free(f);
}

/* One unary call from a client with ctx (NULL: h2c) and server_name (NULL:
 * the address's host); returns its hint through *hint. */
static void call_once(fixture_t *f, SSL_CTX *ctx, const char *server_name, result_t *r,
                      grpc_client_mode_hint_t *hint) {
    char addr[32];
    snprintf(addr, sizeof addr, "127.0.0.1:%u", f->port);
    grpc_client_opts_t o = {.address = addr, .tls = ctx, .server_name = server_name};
    grpc_client_t *c = NULL;
    char err[256];
    assert_int_equal(grpc_client_connect(f->loop, &o, &c, err, sizeof err), 0);
    const uint8_t req[] = {0x08, 0x2a};
    memset(r, 0, sizeof *r);
    assert_int_equal(
        grpc_client_call(c, "/t.S/Echo", req, sizeof req, 0, on_message, on_done, r, NULL), 0);
    for (int i = 0; i < 5000 && !r->done; i++)
        loop_run_once(f->loop, 1);
    assert_true(r->done);
    *hint = grpc_client_mode_hint(c);
    grpc_client_free(c);
}

static SSL_CTX *client_ctx(bool with_cert) {
    char err[600];
    SSL_CTX *ctx = tls_client_ctx_new(pki.ca_pem, with_cert ? pki.leaf_pem : NULL,
                                      with_cert ? pki.leaf_key : NULL, false, err, sizeof err);
    assert_non_null(ctx);
    return ctx;
}

static void test_a_unary_call_over_tls_round_trips(void **state) {
    (void)state;
    fixture_t *f = server_start(true, false);
    SSL_CTX *ctx = client_ctx(false);
    result_t r;
    grpc_client_mode_hint_t hint;
    call_once(f, ctx, NULL, &r, &hint); /* 127.0.0.1: checked against the IP SAN */
    assert_int_equal(r.status, GRPC_OK);
    assert_int_equal(r.messages, 1);
    call_once(f, ctx, "localhost", &r, &hint); /* a name: SNI and the DNS SAN */
    assert_int_equal(r.status, GRPC_OK);
    assert_int_equal(hint, GRPC_CLIENT_MODE_OK);
    assert_int_equal(f->requests, 2);
    SSL_CTX_free(ctx);
    server_free(f);
}

static void test_mtls_serves_a_client_certificate_and_refuses_none(void **state) {
    (void)state;
    fixture_t *f = server_start(true, true);
    SSL_CTX *with = client_ctx(true), *without = client_ctx(false);
    result_t r;
    grpc_client_mode_hint_t hint;
    call_once(f, with, NULL, &r, &hint);
    assert_int_equal(r.status, GRPC_OK);
    call_once(f, without, NULL, &r, &hint);
    assert_int_equal(r.status, GRPC_UNAVAILABLE);
    assert_int_equal(r.messages, 0);
    assert_int_equal(f->requests, 1);
    SSL_CTX_free(with);
    SSL_CTX_free(without);
    server_free(f);
}

static void test_a_server_name_the_certificate_does_not_hold_is_refused(void **state) {
    (void)state;
    fixture_t *f = server_start(true, false);
    SSL_CTX *ctx = client_ctx(false);
    result_t r;
    grpc_client_mode_hint_t hint;
    call_once(f, ctx, "agents.example", &r, &hint);
    assert_int_equal(r.status, GRPC_UNAVAILABLE);
    assert_non_null(strstr(r.message, "certificate"));
    assert_int_equal(f->requests, 0);
    SSL_CTX_free(ctx);
    server_free(f);
}

static void test_a_plaintext_client_on_the_tls_port_is_told_to_use_tls(void **state) {
    (void)state;
    fixture_t *f = server_start(true, false);
    result_t r;
    grpc_client_mode_hint_t hint;
    call_once(f, NULL, NULL, &r, &hint);
    assert_int_equal(r.status, GRPC_UNAVAILABLE);
    assert_non_null(strstr(r.message, "connect with TLS"));
    assert_int_equal(hint, GRPC_CLIENT_MODE_SERVER_TLS);
    server_free(f);
}

static void test_a_tls_client_on_the_h2c_port_hears_it_speaks_plaintext(void **state) {
    (void)state;
    fixture_t *f = server_start(false, false);
    SSL_CTX *ctx = client_ctx(false);
    result_t r;
    grpc_client_mode_hint_t hint;
    call_once(f, ctx, NULL, &r, &hint);
    assert_int_equal(r.status, GRPC_UNAVAILABLE);
    assert_int_equal(hint, GRPC_CLIENT_MODE_SERVER_PLAINTEXT);
    assert_int_equal(f->requests, 0);
    SSL_CTX_free(ctx);
    server_free(f);
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
        cmocka_unit_test(test_a_unary_call_over_tls_round_trips),
        cmocka_unit_test(test_mtls_serves_a_client_certificate_and_refuses_none),
        cmocka_unit_test(test_a_server_name_the_certificate_does_not_hold_is_refused),
        cmocka_unit_test(test_a_plaintext_client_on_the_tls_port_is_told_to_use_tls),
        cmocka_unit_test(test_a_tls_client_on_the_h2c_port_hears_it_speaks_plaintext),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
