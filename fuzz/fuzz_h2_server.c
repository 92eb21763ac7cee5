/*
 * fuzz_h2_server.c - the gRPC server (nghttp2 session glue, gRPC framing,
 * header checks, grpc-timeout, limits, the slow-request timer) fed raw
 * client bytes over a socketpair, with a handler that answers some calls
 * with a message and leaves others to the deadline.
 *
 * Each input is written to the client end (as much as the socket buffer
 * takes, in pieces cut at input-chosen offsets), the loop runs until it is
 * idle, the server's output is drained, and the client end is closed.
 * Checked: no sanitizer report; once the client is gone and the loop has
 * run, the server holds no connection and no call (nothing leaks between
 * inputs).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/grpc_server.h"
#include "net/loop.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static loop_t *loop;
static grpc_server_t *srv;

static void on_request(grpc_call_t *call, const char *path, const uint8_t *msg, size_t len,
                       void *ud) {
    (void)ud;
    /* Paths decide: answer with a message, fail, or leave it open (the
     * client's deadline, the slow timer or the close will end it). */
    size_t n = strlen(path);
    if (n && path[n - 1] == 'e') {
        return;
    }
    if (len && msg[0] & 1) {
        grpc_call_finish(call, 3, "bad % message \xff");
        return;
    }
    uint8_t reply[8] = {0x08, 0x01};
    grpc_call_send(call, reply, 2, false);
    grpc_call_finish(call, 0, NULL);
}

static void on_gone(grpc_call_t *call, void *call_ud, void *ud) {
    (void)call;
    (void)call_ud;
    (void)ud;
}

static void setup(void) {
    char err[256];
    FUZZ_CHECK(loop_new(&loop, err, sizeof err) == 0);
    grpc_server_opts_t o = {.listen_address = "127.0.0.1",
                            .port = 0,
                            .max_connections = 16,
                            .max_concurrent_streams = 100,
                            .handshake_timeout_ns = 50000000ull};
    grpc_server_handlers_t h = {.on_request = on_request, .on_call_gone = on_gone};
    FUZZ_CHECK(grpc_server_start(loop, &o, &h, NULL, &srv, err, sizeof err) == 0);
}

static void drain(int fd) {
    char buf[65536];
    while (read(fd, buf, sizeof buf) > 0)
        ;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!loop)
        setup();
    int sv[2];
    FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
    grpc_server_adopt(srv, sv[0]);
    /* The first byte picks a piece size, so frames split across reads. */
    size_t piece = size ? (size_t)data[0] * 64 + 1 : 1;
    size_t off = 0;
    for (int rounds = 0; off < size && rounds < 4096; rounds++) {
        size_t n = size - off < piece ? size - off : piece;
        ssize_t w = write(sv[1], data + off, n);
        if (w > 0)
            off += (size_t)w;
        else if (w < 0 && errno != EAGAIN)
            break;
        loop_run_once(loop, 0);
        drain(sv[1]);
        if (grpc_server_connection_count(srv) == 0)
            break; /* the server closed the connection */
    }
    for (int i = 0; i < 8; i++) {
        loop_run_once(loop, 0);
        drain(sv[1]);
    }
    close(sv[1]);
    for (int i = 0; i < 64 && grpc_server_connection_count(srv) > 0; i++)
        loop_run_once(loop, 1);
    FUZZ_CHECK(grpc_server_connection_count(srv) == 0);
    FUZZ_CHECK(grpc_server_call_count(srv) == 0);
    return 0;
}
