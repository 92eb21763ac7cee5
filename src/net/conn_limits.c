/*
 * conn_limits.c - connection caps: the clamp below the descriptor limit,
 * the per-peer default, and the per-peer count table.
 *
 * DESIGN
 * The table is open addressing with linear probing and backward-shift
 * deletion (no tombstones, so a churn of connects and closes never
 * degrades it). Its size is bounded by the number of open connections,
 * which the total cap bounds, so even keys chosen to collide (FNV-1a is
 * not keyed) cost at most a scan of that many slots per accept.
 * Addresses count whole: an IPv6 peer is its /128, not its /64, because in
 * Kubernetes every pod on a node usually shares the node's /64 (KEDA's pod
 * among them).
 */
#include "net/conn_limits.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/hash.h"

void conn_limits_clamp(unsigned requested, uint64_t nofile, conn_limits_t *out) {
    out->max_connections = requested ? requested : 1;
    out->headroom = 0;
    out->clamped = false;
    if (nofile == 0 || nofile >= (uint64_t)UINT32_MAX)
        return; /* no limit worth respecting */
    uint64_t headroom =
        nofile >= 2 * CONN_LIMITS_FD_HEADROOM ? CONN_LIMITS_FD_HEADROOM : nofile / 2;
    uint64_t room = nofile - headroom;
    if (room < 1)
        room = 1;
    out->headroom = (unsigned)headroom;
    if ((uint64_t)out->max_connections > room) {
        out->max_connections = (unsigned)room;
        out->clamped = true;
    }
}

unsigned conn_limits_per_peer_default(unsigned max_connections) {
    if (max_connections <= 1)
        return 1;
    return max_connections / 2 + max_connections % 2;
}

bool peer_key_from_sockaddr(const struct sockaddr_storage *ss, peer_key_t *key) {
    memset(key, 0, sizeof *key);
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
        key->family = 4;
        memcpy(key->addr, &a->sin_addr, 4);
        return true;
    }
    if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
        static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (memcmp(a->sin6_addr.s6_addr, v4mapped, 12) == 0) {
            key->family = 4;
            memcpy(key->addr, a->sin6_addr.s6_addr + 12, 4);
        } else {
            key->family = 6;
            memcpy(key->addr, a->sin6_addr.s6_addr, 16);
        }
        return true;
    }
    return false;
}

static bool key_eq(const peer_key_t *a, const peer_key_t *b) {
    return a->family == b->family && memcmp(a->addr, b->addr, 16) == 0;
}

static size_t key_slot(const peer_key_t *k, size_t cap) {
    uint64_t h = kgs_fnv1a_bytes(KGS_FNV_OFFSET, &k->family, 1);
    h = kgs_fnv1a_bytes(h, k->addr, k->family == 4 ? 4 : 16);
    return (size_t)h & (cap - 1);
}

void peer_table_init(peer_table_t *t) {
    memset(t, 0, sizeof *t);
}

void peer_table_deinit(peer_table_t *t) {
    free(t->_slots);
    memset(t, 0, sizeof *t);
}

/* The slot holding key, or the free slot where it would go. cap > 0. */
static size_t find(const peer_table_t *t, const peer_key_t *key) {
    size_t i = key_slot(key, t->_cap);
    while (t->_slots[i]._count && !key_eq(&t->_slots[i]._key, key))
        i = (i + 1) & (t->_cap - 1);
    return i;
}

unsigned peer_table_count(const peer_table_t *t, const peer_key_t *key) {
    if (!t->_cap)
        return 0;
    return t->_slots[find(t, key)]._count;
}

static int grow(peer_table_t *t) {
    size_t cap = t->_cap ? t->_cap * 2 : 16;
    if (cap > SIZE_MAX / sizeof(peer_slot_t))
        return KGS_ENOMEM;
    peer_slot_t *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return KGS_ENOMEM;
    peer_table_t n = {slots, cap, t->_used};
    for (size_t i = 0; i < t->_cap; i++)
        if (t->_slots[i]._count)
            slots[find(&n, &t->_slots[i]._key)] = t->_slots[i];
    free(t->_slots);
    *t = n;
    return 0;
}

int peer_table_add(peer_table_t *t, const peer_key_t *key) {
    if (t->_cap) {
        peer_slot_t *s = &t->_slots[find(t, key)];
        if (s->_count) {
            s->_count++;
            return 0;
        }
    }
    /* A new peer: keep the load at most 1/2 so probes stay short. */
    if ((t->_used + 1) * 2 > t->_cap && grow(t) != 0)
        return KGS_ENOMEM;
    peer_slot_t *s = &t->_slots[find(t, key)];
    s->_key = *key;
    s->_count = 1;
    t->_used++;
    return 0;
}

void peer_table_remove(peer_table_t *t, const peer_key_t *key) {
    if (!t->_cap)
        return;
    size_t i = find(t, key);
    if (!t->_slots[i]._count)
        return;
    if (--t->_slots[i]._count > 0)
        return;
    t->_used--;
    /* Backward shift: pull later members of the probe run into the hole,
     * each only if its home slot is not between the hole and itself. */
    size_t mask = t->_cap - 1, hole = i, j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!t->_slots[j]._count)
            break;
        size_t home = key_slot(&t->_slots[j]._key, t->_cap);
        bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
        if (stays)
            continue;
        t->_slots[hole] = t->_slots[j];
        t->_slots[j]._count = 0;
        hole = j;
    }
}

size_t peer_table_peers(const peer_table_t *t) {
    return t->_used;
}
