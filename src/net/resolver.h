/*
 * resolver.h - a name resolved by DNS without blocking the loop: every A
 * and AAAA record of NAME:PORT, re-resolved on an interval. getaddrinfo runs
 * on a helper thread; results are delivered on the loop thread. Used for
 * agent discovery (--agents-dns, a headless Service), for named demand
 * sources, and by the connector (connector.h) for one round per connection.
 * Its messages say "agents DNS" for the flag it was written for.
 *
 * A failed resolution does not empty the list: on_result gets the error
 * together with the last list that resolved, so one DNS hiccup does not
 * drop every agent. (A headless Service with no ready endpoints answers
 * NXDOMAIN, so "all agents gone" looks like an error too and the old list
 * stays; its streams then fail on their own and the view says so.)
 */
#ifndef KGS_NET_RESOLVER_H
#define KGS_NET_RESOLVER_H

#include <stddef.h>
#include <stdint.h>

#include "net/loop.h"

typedef struct resolver resolver_t;

/*
 * Called on the loop thread after a resolution whose outcome differs from
 * the last one delivered (the first outcome is always delivered; a list or
 * error that stays the same is not repeated). addrs[0..n) are "ip:port" and
 * "[ip6]:port", sorted (strcmp) and without duplicates; error is NULL on
 * success, else a message like "resolve agents.ns.svc: Name or service not
 * known" and addrs is the last successful list (n 0 before any). All
 * borrowed for the call. The callback may call resolver_free().
 */
typedef void (*resolver_result_cb)(void *user_data, const char *const *addrs, size_t n,
                                   const char *error);

/*
 * Starts resolving `name_port` ("agents.ns.svc:6000", "[::1]:6000";
 * borrowed for the call) now and then every interval_ns (0 = 10 s). Loop
 * thread only. Returns 0 with *out (returned: resolver_free), KGS_EINVAL
 * (no host, or a port that is not 1-65535), KGS_EIO (eventfd, epoll or
 * thread creation failed) or KGS_ENOMEM, with a message in err; on
 * failure on_result is never called.
 */
int resolver_start(loop_t *loop, const char *name_port, uint64_t interval_ns,
                   resolver_result_cb on_result, void *user_data, resolver_t **out, char *err,
                   size_t errlen);

/* Stops and joins the thread (waiting for a lookup in progress, which the
 * resolver's own timeouts in resolv.conf bound) and frees everything; no
 * callback runs afterwards. Loop thread only; safe inside on_result. NULL
 * does nothing. */
void resolver_free(resolver_t *r);

#endif
