/*
 * agent_pool.h - the aggregator's side of kgs.cluster.v1.Agent/Watch: one
 * stream per agent address, each snapshot decoded into a cluster_view_t,
 * broken streams re-dialled with jittered exponential backoff. Loop thread
 * only.
 *
 * Per agent: a message that fails to decode is logged (rate limited) and
 * dropped, the stream stays. A stream that ends, a connection that fails,
 * or a stream silent for max(idle floor, 5 x the agent's sample interval)
 * (a half-open connection: agents send every sample) marks the entry
 * disconnected with the reason and is re-dialled after a delay drawn
 * uniformly from [backoff_min, cap]; the cap doubles on each failure up to
 * backoff_max and falls back to backoff_min after a stream that delivered
 * at least one snapshot.
 */
#ifndef KGS_CLUSTER_AGENT_POOL_H
#define KGS_CLUSTER_AGENT_POOL_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "cluster/cluster_view.h"
#include "core/log.h"
#include "net/loop.h"

/* An address longer than this (bytes, without the NUL) is refused: it must
 * fit cluster_node_t.address. */
#define AGENT_POOL_ADDRESS_MAX 127u

typedef struct agent_pool agent_pool_t;

typedef struct {
    loop_t *loop;         /* borrowed; outlives the pool. Required */
    const logger_t *log;  /* borrowed; may be NULL */
    cluster_view_t *view; /* borrowed; outlives the pool. Required */
    /* Called after the view changed (snapshot, disconnect, removal). Calls
     * are coalesced: one per loop iteration at most, always from a timer of
     * the pool, never from inside agent_pool_* or a gRPC callback, so it may
     * call agent_pool_set_addresses() or agent_pool_free(). May be NULL. */
    void (*on_change)(void *user_data);
    void *user_data;
    uint64_t backoff_min_ns; /* 0 = 0.5 s */
    uint64_t backoff_max_ns; /* 0 = 30 s; raised to backoff_min when below it */
    uint64_t idle_floor_ns;  /* the least silence that counts as dead; 0 = 10 s */
    /* TLS to the agents (mTLS when the context holds a client certificate);
     * NULL = h2c. The pool takes its own reference, and each connection
     * holds one on the context it was dialled with, so a reload may free
     * the caller's. */
    SSL_CTX *tls;
    /* The name every agent's certificate must carry (agents are dialled by
     * pod IP and share one certificate); NULL = the IP itself (an IP SAN). */
    const char *tls_server_name;
    /* For messages only (borrowed, outlive the pool; may be NULL): the
     * files behind tls, named when a handshake fails. */
    const char *tls_ca_file, *tls_cert_file;
} agent_pool_opts_t;

/* Creates an empty pool (opts copied). Returns 0 with *out (returned: free
 * with agent_pool_free), KGS_EINVAL (no loop or view), or KGS_ENOMEM. */
int agent_pool_new(const agent_pool_opts_t *o, agent_pool_t **out);

/*
 * Sets the desired agent addresses (borrowed for the call; "ip:port" or
 * "[ip6]:port": IP literals, because connecting resolves the host with a
 * blocking getaddrinfo; duplicates count once). New addresses are dialled
 * at once, removed ones are closed and forgotten (cluster_view_remove),
 * kept ones are left untouched. Returns 0, KGS_EINVAL (an address NULL,
 * empty, without ":port", or longer than AGENT_POOL_ADDRESS_MAX; logged)
 * or KGS_ENOMEM; on failure the pool is unchanged.
 */
int agent_pool_set_addresses(agent_pool_t *p, const char *const *addrs, size_t n);

/* New dials use ctx (a reference is taken; the previous one is released
 * once no connection uses it); streams already open keep theirs, as a
 * rotated certificate matters only at the next handshake. NULL = h2c. */
void agent_pool_set_tls(agent_pool_t *p, SSL_CTX *ctx);

/* Agents the pool holds (each one connection, connected or being dialled). */
unsigned agent_pool_size(const agent_pool_t *p);

/* Agents whose current stream has delivered at least one snapshot. */
unsigned agent_pool_connected(const agent_pool_t *p);

/* Closes every stream and frees the pool. The view keeps its entries (the
 * caller owns it). Safe inside on_change. NULL does nothing. */
void agent_pool_free(agent_pool_t *p);

#endif
