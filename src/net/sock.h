/*
 * sock.h - the socket plumbing the gRPC and HTTP servers share.
 */
#ifndef KGS_NET_SOCK_H
#define KGS_NET_SOCK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/*
 * A listening TCP socket (non-blocking, close-on-exec, SO_REUSEADDR) on a
 * numeric IPv4 or IPv6 address ("0.0.0.0", "::", "[::1]", "127.0.0.1");
 * port 0 picks a free one. Returns 0 with the socket in *out_fd and the
 * bound port in *bound_port, or KGS_EINVAL (not a numeric address) /
 * KGS_EIO / KGS_ENOMEM with "listen 0.0.0.0:6000: bind: Address already in
 * use". The caller owns the descriptor.
 */
int sock_listen(const char *addr, uint16_t port, int *out_fd, uint16_t *bound_port, char *err,
                size_t errlen);

/*
 * The reserve descriptor (as libuv keeps one): a listener that runs out of
 * descriptors (EMFILE, ENFILE) cannot accept, so its pending connection
 * stays queued and a level-triggered listener fires again at once, for
 * ever. Holding one spare descriptor lets it still take that connection:
 * sock_reserve_open() opens the spare (/dev/null, close-on-exec) and
 * returns it, or -1; sock_accept_reserved() closes *reserve (set to -1)
 * and accepts one connection into the freed slot, returning its
 * descriptor (non-blocking, close-on-exec; the caller owns it: serve it or
 * close it to shed the connection), or -1 with errno (EAGAIN when nothing
 * was pending). Refill the spare with sock_reserve_open() once a
 * descriptor is free again.
 */
int sock_reserve_open(void);
int sock_accept_reserved(int listen_fd, int *reserve, struct sockaddr_storage *ss);

/* "1.2.3.4:5678" or "[::1]:5678" for a peer address; "?" otherwise. */
void sock_format_peer(const struct sockaddr_storage *ss, char *out, size_t outlen);

#endif
