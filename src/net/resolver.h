/*
 * resolver.h - a name resolved by DNS without blocking the loop: every A
 * and AAAA record of NAME:PORT, re-resolved on an interval. getaddrinfo runs
 * on the loop's shared pool of 4 lookup threads (started with the first
 * resolver, joined by loop_free; never a thread per name); results are
 * delivered on the loop thread. Used for
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
 * thread only. The first round runs on the next loop turn. Returns 0 with
 * *out (returned: resolver_free), KGS_EINVAL (no host, or a port that is
 * not 1-65535), KGS_EIO (the pool's eventfd, epoll or threads could not be
 * created) or KGS_ENOMEM, with a message in err; on failure on_result is
 * never called.
 */
int resolver_start(loop_t *loop, const char *name_port, uint64_t interval_ns,
                   resolver_result_cb on_result, void *user_data, resolver_t **out, char *err,
                   size_t errlen);

/*
 * resolver_start() for a name a caller supplied (a demand source's host):
 * its rounds wait in a queue of at most 256 lookups and at most 3 of the 4
 * threads run them, so hostile names cannot hold up the scaler's own
 * (agents, Kubernetes API). A round that finds that queue full is tried
 * again after 1 s, and a resolver that has delivered nothing yet gets the
 * error "resolve HOST: 256 lookups are already waiting for the DNS
 * threads; retrying". A failed lookup of a name is reused for 5 s (at most
 * the interval) by every resolver of that name, without a lookup.
 */
int resolver_start_untrusted(loop_t *loop, const char *name_port, uint64_t interval_ns,
                             resolver_result_cb on_result, void *user_data, resolver_t **out,
                             char *err, size_t errlen);

/* Stops and frees everything; no callback runs afterwards. Never waits: a
 * lookup in progress is abandoned to the pool. Loop thread only; safe inside
 * on_result. NULL does nothing. */
void resolver_free(resolver_t *r);

#endif
