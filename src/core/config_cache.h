/*
 * config_cache.h - parses each distinct trigger metadata map once and shares
 * the result (valid config or error) between every RPC and stream that uses
 * the same map. Maps are compared order-independently (sorted by key).
 *
 * Single-threaded: the event loop owns the cache; no locking inside. Entries
 * are refcounted; entries in use are never evicted; beyond `max_entries`
 * entries or `max_bytes` bytes (config_cache_entry_bytes, summed) the
 * least-recently-used unreferenced entries are freed. When every entry is
 * in use the cache grows past its bounds rather than fail: callers that pin
 * entries for long (streams) budget what they pin themselves.
 *
 * A valid entry keeps its map's canonical form, to tell maps apart exactly.
 * An error keeps only a digest of it (two 64-bit hashes, one keyed by
 * `seed`) and its message: a rejected map can be a megabyte, and an error
 * answered for a map whose digest collides with it is the only risk, which
 * the secret seed makes a guess.
 */
#ifndef KGS_CORE_CONFIG_CACHE_H
#define KGS_CORE_CONFIG_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "core/clock.h"
#include "core/metadata.h"
#include "core/trigger_config.h"

typedef struct config_cache config_cache_t;

typedef struct config_entry {
    int status;                     /* 0 or KGS_EINVAL: bad metadata is cached too */
    const trigger_config_t *config; /* when status == 0; NULL otherwise */
    const char *error; /* status != 0: every problem, whole (trigger_problems_format); else "" */
    uint64_t id;       /* unique per distinct map (never reused); streams group by it */

    /* private */
    unsigned _refs;
    uint64_t _hash;                             /* of the canonical form: the bucket */
    uint64_t _hash2;                            /* errors: the seeded hash of the canonical form */
    size_t _bytes;                              /* what the entry costs, allocations included */
    struct config_entry *_hnext;                /* hash chain */
    struct config_entry *_lru_prev, *_lru_next; /* unreferenced entries only, MRU first */
    size_t _key_len;                            /* of the canonical form (errors too) */
    mono_ns_t _released;                        /* when its last reference went */
    char *_key; /* canonical form: sorted pairs, length-prefixed; NULL for errors */
} config_entry_t;

typedef struct {
    size_t max_entries; /* >= 1 (0 is treated as 1) */
    size_t max_bytes;   /* 0 = no byte bound */
    uint64_t seed;      /* keys the digest of cached errors; the server draws it at random */
    /* Called with the id of each valid entry evicted (never for one in use,
     * nor at config_cache_free), after it is freed: what was kept for that
     * configuration elsewhere (the source hub's subscriptions) goes with
     * it. NULL: nobody is told. The callback must not call into the cache. */
    void (*on_evict)(void *user_data, uint64_t id);
    void *evict_user_data;
} config_cache_opts_t;

/* Returns 0 or KGS_ENOMEM. */
int config_cache_new_opts(const config_cache_opts_t *opts, config_cache_t **out);

/* max_entries = capacity, no byte bound, seed 0. */
int config_cache_new(size_t capacity, config_cache_t **out);

/*
 * Returns a referenced entry for this map (parsing it on first sight); NULL
 * only when out of memory. Release it with config_cache_release.
 */
const config_entry_t *config_cache_acquire(config_cache_t *c, const metadata_pair_t *pairs,
                                           size_t n);

/* Drops one reference. NULL e does nothing. */
void config_cache_release(config_cache_t *c, const config_entry_t *e);

/* Number of entries held (referenced or not). */
size_t config_cache_size(const config_cache_t *c);

/* Bytes the entries held cost (referenced or not), and what one costs: the
 * entry, its canonical form and its configuration, with their allocations. */
size_t config_cache_bytes(const config_cache_t *c);
size_t config_cache_entry_bytes(const config_entry_t *e);

/* What a valid entry for a map of n pairs with kv_bytes bytes of keys and
 * values costs (an upper bound for an error's): known before the map is
 * parsed, from metadata_wire_count's figures. SIZE_MAX on overflow. */
size_t config_cache_entry_bytes_for(size_t n, size_t kv_bytes);

/* Frees every unreferenced entry unused for more than idle_ns at `now`
 * (monotonic; the least recently used first, each counted as an eviction
 * and told to on_evict): a configuration nobody asks for any more does not
 * hold memory for ever. Returns the bytes freed. */
size_t config_cache_expire(config_cache_t *c, mono_ns_t now, uint64_t idle_ns);

/* Entries freed to stay within the bounds or expired, since creation. */
uint64_t config_cache_evictions(const config_cache_t *c);

/* Frees the cache; all entries must have been released. NULL does nothing. */
void config_cache_free(config_cache_t *c);

#endif
