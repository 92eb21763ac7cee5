/*
 * config_cache.h - parses each distinct trigger metadata map once and shares
 * the result (valid config or error) between every RPC and stream that uses
 * the same map. Maps are compared order-independently (sorted by key).
 *
 * Single-threaded: the event loop owns the cache; no locking inside. Entries
 * are refcounted; entries in use are never evicted; beyond `capacity` the
 * least-recently-used unreferenced entry is freed. When every entry is in
 * use the cache grows past capacity rather than fail.
 */
#ifndef KGS_CONFIG_CACHE_H
#define KGS_CONFIG_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "core/metadata.h"
#include "core/trigger_config.h"

typedef struct config_cache config_cache_t;

typedef struct config_entry {
    int status;              /* 0 or KGS_EINVAL: bad metadata is cached too */
    trigger_config_t config; /* valid when status == 0 */
    char error[512];         /* the message when status != 0 */
    uint64_t id;             /* unique per distinct map (never reused); streams group by it */

    /* private */
    unsigned _refs;
    uint64_t _hash;
    struct config_entry *_hnext;                /* hash chain */
    struct config_entry *_lru_prev, *_lru_next; /* unreferenced entries only, MRU first */
    size_t _key_len;
    char *_key; /* canonical form: sorted pairs, length-prefixed */
} config_entry_t;

/* capacity >= 1 (0 is treated as 1). Returns 0 or KGS_ENOMEM. */
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

/* Frees the cache; all entries must have been released. NULL does nothing. */
void config_cache_free(config_cache_t *c);

#endif
