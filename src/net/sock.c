#include "net/sock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/err.h"

int sock_listen(const char *addr, uint16_t port, int *out_fd, uint16_t *bound_port, char *err,
                size_t errlen) {
    char host[64];
    size_t alen = strlen(addr);
    if (alen >= 2 && addr[0] == '[' && addr[alen - 1] == ']' && alen - 2 < sizeof host) {
        memcpy(host, addr + 1, alen - 2);
        host[alen - 2] = '\0';
    } else {
        snprintf(host, sizeof host, "%s", addr);
    }
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    socklen_t sslen;
    bool v6 = false;
    struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
        sin->sin_family = AF_INET;
        sin->sin_port = htons(port);
        sslen = sizeof *sin;
    } else if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons(port);
        sslen = sizeof *sin6;
        v6 = true;
    } else {
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "listen %s:%u: invalid address: must be a numeric IPv4 or IPv6 address "
                          "(e.g. 0.0.0.0, ::, 127.0.0.1)",
                          addr, (unsigned)port);
    }
    char where[96];
    if (v6 && addr[0] != '[')
        snprintf(where, sizeof where, "[%s]:%u", addr, (unsigned)port);
    else
        snprintf(where, sizeof where, "%s:%u", addr, (unsigned)port);

    const char *step = "socket";
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        goto fail;
    int one = 1;
    step = "setsockopt SO_REUSEADDR";
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0)
        goto fail;
    step = "bind";
    if (bind(fd, (struct sockaddr *)&ss, sslen) != 0)
        goto fail;
    step = "listen";
    if (listen(fd, SOMAXCONN) != 0)
        goto fail;
    step = "getsockname";
    sslen = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sslen) != 0)
        goto fail;
    *bound_port = ntohs(v6 ? sin6->sin6_port : sin->sin_port);
    *out_fd = fd;
    return 0;
fail:;
    int saved = errno;
    if (fd >= 0)
        close(fd);
    return kgs_seterr(err, errlen, saved == ENOMEM ? KGS_ENOMEM : KGS_EIO, "listen %s: %s: %s",
                      where, step, strerror(saved));
}

void sock_format_peer(const struct sockaddr_storage *ss, char *out, size_t outlen) {
    char ip[INET6_ADDRSTRLEN];
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
        inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
        snprintf(out, outlen, "%s:%u", ip, ntohs(a->sin_port));
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
        inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
        snprintf(out, outlen, "[%s]:%u", ip, ntohs(a->sin6_port));
    } else {
        snprintf(out, outlen, "?");
    }
}

int sock_reserve_open(void) {
    return open("/dev/null", O_RDONLY | O_CLOEXEC);
}

int sock_accept_reserved(int listen_fd, int *reserve, struct sockaddr_storage *ss) {
    if (*reserve >= 0) {
        close(*reserve);
        *reserve = -1;
    }
    for (;;) {
        socklen_t sl = sizeof *ss;
        int fd = accept4(listen_fd, (struct sockaddr *)ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0 || errno != EINTR)
            return fd;
    }
}
