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

/* "1.2.3.4:5678" or "[::1]:5678" for a peer address; "?" otherwise. */
void sock_format_peer(const struct sockaddr_storage *ss, char *out, size_t outlen);

#endif
