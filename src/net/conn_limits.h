/*
 * conn_limits.h - how many connections a server may hold, in all and per
 * peer address. Pure: no system calls (the caller reads RLIMIT_NOFILE and
 * passes it in), so every rule is unit-tested with plain numbers.
 *
 * - conn_limits_clamp(): the gRPC connection cap must stay below the
 *   descriptor limit, with headroom for what else the process opens (the
 *   probe and metrics ports' own connections, sources, agents, the
 *   Kubernetes API, files). A cap above it would run the process out of
 *   descriptors before the cap refuses anyone.
 * - conn_limits_per_peer_default(): one address may hold at most half the
 *   slots, so a single client (or everything behind one NAT) never locks
 *   out the others, KEDA among them.
 * - peer_table_t: open connections counted by peer address (the port is
 *   ignored), so the per-peer check is one hash lookup per accept.
 */
#ifndef KGS_NET_CONN_LIMITS_H
#define KGS_NET_CONN_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Descriptors kept out of the gRPC cap: the probe and metrics ports' 64
 * connections each, and 128 for sources, agents, the Kubernetes API, the
 * listeners, the loop's own descriptors and files. Below twice this, half
 * the limit is kept instead, so a small limit still serves some gRPC. */
#define CONN_LIMITS_FD_HEADROOM 256u

typedef struct {
    unsigned max_connections; /* what the server may hold: requested, or less */
    unsigned headroom;        /* descriptors kept for everything else */
    bool clamped;             /* max_connections is below what was requested */
} conn_limits_t;

/*
 * The connection cap for a process whose descriptor limit is `nofile`
 * (RLIMIT_NOFILE's soft limit; 0 or RLIM_INFINITY-sized values mean "no
 * limit to respect"). With nofile >= 2 x CONN_LIMITS_FD_HEADROOM the
 * headroom is CONN_LIMITS_FD_HEADROOM, else nofile / 2. The result is
 * min(requested, nofile - headroom), and at least 1. Pure.
 */
void conn_limits_clamp(unsigned requested, uint64_t nofile, conn_limits_t *out);

/* The default per-peer cap for a total cap of `max_connections`: half,
 * rounded up (so 1 for a cap of 1 or 2). Pure. */
unsigned conn_limits_per_peer_default(unsigned max_connections);

/* A peer address without its port: AF_INET (4 bytes) or AF_INET6 (16;
 * an IPv4-mapped IPv6 address is stored as the IPv4 one, so a peer
 * counts once whichever way it connects). */
typedef struct {
    uint8_t family; /* 4 or 6 */
    uint8_t addr[16];
} peer_key_t;

/* Fills *key from an accepted peer's address. Returns false for anything
 * but AF_INET / AF_INET6 (a socketpair: not counted per peer). Pure. */
bool peer_key_from_sockaddr(const struct sockaddr_storage *ss, peer_key_t *key);

/* Private: one slot of the open-addressing table. count 0 = free. */
typedef struct {
    peer_key_t _key;
    unsigned _count;
} peer_slot_t;

/*
 * Connections by peer. Caller-owned storage: peer_table_init() / _deinit().
 * The table grows with the number of distinct peers (load at most 1/2) and
 * starts empty, so an idle server pays nothing. Loop thread only.
 */
typedef struct {
    peer_slot_t *_slots;
    size_t _cap;  /* a power of two, or 0 before the first add */
    size_t _used; /* distinct peers */
} peer_table_t;

void peer_table_init(peer_table_t *t);
void peer_table_deinit(peer_table_t *t);

/* Open connections from key's address now. */
unsigned peer_table_count(const peer_table_t *t, const peer_key_t *key);

/* Counts one more connection from key. Returns 0, or KGS_ENOMEM (the
 * table is unchanged). */
int peer_table_add(peer_table_t *t, const peer_key_t *key);

/* Counts one connection from key less; a key not in the table is ignored. */
void peer_table_remove(peer_table_t *t, const peer_key_t *key);

/* Distinct peers with at least one connection. */
size_t peer_table_peers(const peer_table_t *t);

#endif
