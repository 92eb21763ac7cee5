/*
 * config_cache.c - content-addressed cache of parsed trigger metadata.
 *
 * KEDA sends the whole metadata map on every RPC. Parsing it each time would
 * be cheap but not free, and streams need a stable identity for "the same
 * trigger" (entry id) to group their work. So each distinct map is parsed
 * once; its result (config or error message) is shared.
 *
 * Identity is the canonical form of the map: pairs sorted by (key, value)
 * bytes and serialised as [u64 klen][key][u64 vlen][value]... . Lookup hashes
 * the sorted pairs (FNV-1a over the same serialisation) and compares against
 * the stored canonical bytes without building them, so a hit allocates
 * nothing for maps of up to SMALL_N pairs.
 *
 * Eviction: referenced entries are never freed. Unreferenced ones sit in an
 * LRU list (most recent first); whenever the cache holds more than
 * max_entries entries or max_bytes bytes the tail is freed. If every entry
 * is referenced the cache temporarily exceeds its bounds (what streams pin
 * is budgeted by the scaler).
 *
 * Errors keep no canonical form: (bucket hash, seeded hash, length) stand
 * for it. A megabyte of rejected metadata then costs a few hundred bytes
 * here, not a megabyte per distinct map.
 *
 * Single-threaded by design: only the event loop calls these functions.
 */
#include "core/hash.h"
#include "core/config_cache.h"

#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/err.h"

#define SMALL_N 32
/* What malloc adds to each block, roughly (glibc: 8-16 bytes); counted so
 * that the byte bound tracks the heap, not just the payloads. */
#define ALLOC_OVERHEAD 16

struct config_cache {
    size_t capacity;
    size_t max_bytes; /* 0 = none */
    size_t bytes;
    uint64_t seed;
    uint64_t evictions;
    size_t size;
    size_t nbuckets; /* power of two */
    config_entry_t **buckets;
    config_entry_t *lru_head, *lru_tail; /* unreferenced entries, MRU first */
    uint64_t next_id;
    void (*on_evict)(void *user_data, uint64_t id);
    void *evict_user_data;
};

/* ---- canonical form --------------------------------------------------------- */

static void norm(const metadata_pair_t *in, metadata_pair_t *out) {
    out->key = in->key ? in->key : "";
    out->key_len = in->key ? in->key_len : 0;
    out->value = in->value ? in->value : "";
    out->value_len = in->value ? in->value_len : 0;
}

static int pair_cmp(const metadata_pair_t *a, const metadata_pair_t *b) {
    int c = metadata_slice_cmp(a->key, a->key_len, b->key, b->key_len);
    return c ? c : metadata_slice_cmp(a->value, a->value_len, b->value, b->value_len);
}

static int pair_qsort_cmp(const void *a, const void *b) {
    return pair_cmp(a, b);
}

static void sort_pairs(metadata_pair_t *p, size_t n) {
    if (n > SMALL_N) {
        qsort(p, n, sizeof *p, pair_qsort_cmp);
        return;
    }
    for (size_t i = 1; i < n; i++) {
        metadata_pair_t x = p[i];
        size_t j = i;
        while (j > 0 && pair_cmp(&p[j - 1], &x) > 0) {
            p[j] = p[j - 1];
            j--;
        }
        p[j] = x;
    }
}

#define FNV_OFFSET KGS_FNV_OFFSET
#define fnv kgs_fnv1a_bytes

static uint64_t len_bytes_hash(uint64_t h, uint64_t len) {
    uint64_t l = (uint64_t)len;
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(l >> (8 * i));
    return fnv(h, b, 8);
}

static uint64_t hash_pairs_from(uint64_t h, const metadata_pair_t *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        h = len_bytes_hash(h, p[i].key_len);
        h = fnv(h, p[i].key, p[i].key_len);
        h = len_bytes_hash(h, p[i].value_len);
        h = fnv(h, p[i].value, p[i].value_len);
    }
    return h;
}

static uint64_t hash_pairs(const metadata_pair_t *p, size_t n) {
    return hash_pairs_from(FNV_OFFSET, p, n);
}

/* The errors' second hash: the seed goes in first, so which maps collide
 * depends on a value the caller cannot see. */
static uint64_t hash_pairs_seeded(uint64_t seed, const metadata_pair_t *p, size_t n) {
    return hash_pairs_from(len_bytes_hash(FNV_OFFSET, seed), p, n);
}

/* Bytes of the canonical form, or 0 on size_t overflow. */
static size_t canonical_len(const metadata_pair_t *p, size_t n) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        size_t add = 16;
        if (p[i].key_len > SIZE_MAX - add)
            return 0;
        add += p[i].key_len;
        if (p[i].value_len > SIZE_MAX - add)
            return 0;
        add += p[i].value_len;
        if (add > SIZE_MAX - total)
            return 0;
        total += add;
    }
    return total == 0 ? 1 : total; /* empty map: one byte, so malloc(0) is avoided */
}

static void put_len(char *dst, size_t len) {
    uint64_t l = (uint64_t)len;
    for (int i = 0; i < 8; i++)
        dst[i] = (char)(unsigned char)(l >> (8 * i));
}

static void write_canonical(char *dst, const metadata_pair_t *p, size_t n) {
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        put_len(dst + o, p[i].key_len);
        o += 8;
        memcpy(dst + o, p[i].key, p[i].key_len);
        o += p[i].key_len;
        put_len(dst + o, p[i].value_len);
        o += 8;
        memcpy(dst + o, p[i].value, p[i].value_len);
        o += p[i].value_len;
    }
    if (o == 0)
        dst[0] = '\0';
}

/* true when the stored canonical bytes equal the sorted pairs. */
static bool canonical_equal(const config_entry_t *e, const metadata_pair_t *p, size_t n,
                            size_t len) {
    if (e->_key_len != len)
        return false;
    const char *k = e->_key;
    char lb[8];
    for (size_t i = 0; i < n; i++) {
        put_len(lb, p[i].key_len);
        if (memcmp(k, lb, 8) != 0 || memcmp(k + 8, p[i].key, p[i].key_len) != 0)
            return false;
        k += 8 + p[i].key_len;
        put_len(lb, p[i].value_len);
        if (memcmp(k, lb, 8) != 0 || memcmp(k + 8, p[i].value, p[i].value_len) != 0)
            return false;
        k += 8 + p[i].value_len;
    }
    return true;
}

/* ---- LRU list and hash table ---------------------------------------------- */

static void lru_unlink(config_cache_t *c, config_entry_t *e) {
    if (e->_lru_prev)
        e->_lru_prev->_lru_next = e->_lru_next;
    else if (c->lru_head == e)
        c->lru_head = e->_lru_next;
    if (e->_lru_next)
        e->_lru_next->_lru_prev = e->_lru_prev;
    else if (c->lru_tail == e)
        c->lru_tail = e->_lru_prev;
    e->_lru_prev = e->_lru_next = NULL;
}

static void lru_push_front(config_cache_t *c, config_entry_t *e) {
    e->_lru_prev = NULL;
    e->_lru_next = c->lru_head;
    if (c->lru_head)
        c->lru_head->_lru_prev = e;
    c->lru_head = e;
    if (!c->lru_tail)
        c->lru_tail = e;
}

static void table_remove(config_cache_t *c, config_entry_t *e) {
    config_entry_t **pp = &c->buckets[e->_hash & (c->nbuckets - 1)];
    while (*pp && *pp != e)
        pp = &(*pp)->_hnext;
    if (*pp)
        *pp = e->_hnext;
}

/* Doubles the bucket array when the load exceeds 1; failure is harmless
 * (chains just get longer). */
static void table_maybe_grow(config_cache_t *c) {
    if (c->size <= c->nbuckets || c->nbuckets > SIZE_MAX / 2 / sizeof(config_entry_t *))
        return;
    size_t nb = c->nbuckets * 2;
    config_entry_t **b = calloc(nb, sizeof *b);
    if (!b)
        return;
    for (size_t i = 0; i < c->nbuckets; i++) {
        config_entry_t *e = c->buckets[i];
        while (e) {
            config_entry_t *next = e->_hnext;
            e->_hnext = b[e->_hash & (nb - 1)];
            b[e->_hash & (nb - 1)] = e;
            e = next;
        }
    }
    free(c->buckets);
    c->buckets = b;
    c->nbuckets = nb;
}

static void entry_free(config_entry_t *e) {
    if (e->error && e->error[0])
        free((void *)(uintptr_t)e->error); /* the cache allocated it */
    free(e->_key);
    free((void *)(uintptr_t)e->config); /* the cache allocated it */
    free(e);
}

static bool over_bounds(const config_cache_t *c) {
    return c->size > c->capacity || (c->max_bytes && c->bytes > c->max_bytes);
}

/* Frees unreferenced entry e and tells whoever keeps state for it. */
static void evict_entry(config_cache_t *c, config_entry_t *e) {
    lru_unlink(c, e);
    table_remove(c, e);
    c->size--;
    c->bytes -= e->_bytes;
    c->evictions++;
    uint64_t id = e->id;
    bool valid = e->status == 0;
    entry_free(e);
    if (valid && c->on_evict)
        c->on_evict(c->evict_user_data, id);
}

static void evict_over_bounds(config_cache_t *c) {
    while (over_bounds(c) && c->lru_tail)
        evict_entry(c, c->lru_tail);
}

/* ---- public ---------------------------------------------------------------- */

int config_cache_new_opts(const config_cache_opts_t *o, config_cache_t **out) {
    *out = NULL;
    size_t capacity = o->max_entries ? o->max_entries : 1;
    config_cache_t *c = calloc(1, sizeof *c);
    if (!c)
        return KGS_ENOMEM;
    c->capacity = capacity;
    c->max_bytes = o->max_bytes;
    c->seed = o->seed;
    c->on_evict = o->on_evict;
    c->evict_user_data = o->evict_user_data;
    c->nbuckets = 16;
    while (c->nbuckets < capacity && c->nbuckets < ((size_t)1 << 20))
        c->nbuckets *= 2;
    c->buckets = calloc(c->nbuckets, sizeof *c->buckets);
    if (!c->buckets) {
        free(c);
        return KGS_ENOMEM;
    }
    c->next_id = 1;
    *out = c;
    return 0;
}

int config_cache_new(size_t capacity, config_cache_t **out) {
    config_cache_opts_t o = {.max_entries = capacity};
    return config_cache_new_opts(&o, out);
}

const config_entry_t *config_cache_acquire(config_cache_t *c, const metadata_pair_t *pairs,
                                           size_t n) {
    if (!c || (n > 0 && !pairs))
        return NULL;
    metadata_pair_t small[SMALL_N];
    metadata_pair_t *sorted = small;
    if (n > SMALL_N) {
        if (n > SIZE_MAX / sizeof *sorted)
            return NULL;
        sorted = malloc(n * sizeof *sorted);
        if (!sorted)
            return NULL;
    }
    for (size_t i = 0; i < n; i++)
        norm(&pairs[i], &sorted[i]);
    sort_pairs(sorted, n);

    config_entry_t *e = NULL;
    size_t klen = canonical_len(sorted, n);
    if (klen == 0)
        goto out; /* cannot even be represented: treat as out of memory */
    uint64_t h = hash_pairs(sorted, n);

    bool have_h2 = false;
    uint64_t h2 = 0;
    for (e = c->buckets[h & (c->nbuckets - 1)]; e; e = e->_hnext) {
        if (e->_hash != h || e->_key_len != klen)
            continue;
        if (e->_key) {
            if (canonical_equal(e, sorted, n, klen))
                break;
            continue;
        }
        if (!have_h2) { /* computed only for a keyless candidate */
            h2 = hash_pairs_seeded(c->seed, sorted, n);
            have_h2 = true;
        }
        if (e->_hash2 == h2)
            break;
    }
    if (e) {
        if (e->_refs++ == 0)
            lru_unlink(c, e);
        goto out;
    }

    e = calloc(1, sizeof *e);
    trigger_config_t *cfg = malloc(sizeof *cfg);
    trigger_problems_t *problems = malloc(sizeof *problems);
    if (!e || !cfg || !problems) {
        free(e);
        free(cfg);
        free(problems);
        e = NULL;
        goto out;
    }
    e->status = trigger_config_parse_problems(sorted, n, cfg, problems);
    e->error = "";
    e->_bytes = sizeof *e + ALLOC_OVERHEAD;
    if (e->status != 0) {
        /* every problem, whole: the message is sized to it, never cut */
        size_t len = trigger_problems_format(problems, NULL, 0) + 1;
        char *msg = malloc(len);
        if (!msg) {
            free(cfg);
            free(problems);
            free(e);
            e = NULL;
            goto out;
        }
        trigger_problems_format(problems, msg, len);
        e->error = msg;
        e->_bytes += len + ALLOC_OVERHEAD;
    }
    free(problems);
    if (e->status == 0) {
        e->_key = malloc(klen);
        if (!e->_key) {
            free(cfg);
            free(e);
            e = NULL;
            goto out;
        }
        write_canonical(e->_key, sorted, n);
        e->config = cfg;
        e->_bytes += klen + sizeof *cfg + 2 * ALLOC_OVERHEAD;
    } else {
        free(cfg);
        e->_hash2 = have_h2 ? h2 : hash_pairs_seeded(c->seed, sorted, n);
    }
    e->_key_len = klen;
    e->_hash = h;
    e->_refs = 1;
    e->id = c->next_id++;
    e->_hnext = c->buckets[h & (c->nbuckets - 1)];
    c->buckets[h & (c->nbuckets - 1)] = e;
    c->size++;
    c->bytes += e->_bytes;
    table_maybe_grow(c);
    evict_over_bounds(c);
out:
    if (sorted != small)
        free(sorted);
    return e;
}

void config_cache_release(config_cache_t *c, const config_entry_t *ce) {
    if (!c || !ce)
        return;
    /* The cache owns every entry; callers get a const view of it. */
    config_entry_t *e = (config_entry_t *)(uintptr_t)ce;
    if (e->_refs == 0)
        abort(); /* released more often than acquired: a caller bug */
    if (--e->_refs > 0)
        return;
    e->_released = clock_mono_now();
    lru_push_front(c, e);
    evict_over_bounds(c);
}

size_t config_cache_expire(config_cache_t *c, mono_ns_t now, uint64_t idle_ns) {
    size_t freed = 0;
    while (c && c->lru_tail && now > c->lru_tail->_released &&
           now - c->lru_tail->_released > idle_ns) {
        config_entry_t *e = c->lru_tail;
        freed += e->_bytes;
        evict_entry(c, e);
    }
    return freed;
}

size_t config_cache_size(const config_cache_t *c) {
    return c ? c->size : 0;
}

size_t config_cache_bytes(const config_cache_t *c) {
    return c ? c->bytes : 0;
}

size_t config_cache_entry_bytes(const config_entry_t *e) {
    return e ? e->_bytes : 0;
}

/* An error's message (every problem, formatted) stays below what a valid
 * entry's configuration costs, so the estimate below bounds errors too. */
_Static_assert(sizeof(((trigger_problems_t *)0)->text) + 64 * TRIGGER_MAX_PROBLEMS + 256 <
                   sizeof(trigger_config_t),
               "an error's message may cost more than config_cache_entry_bytes_for says");

size_t config_cache_entry_bytes_for(size_t n, size_t kv_bytes) {
    size_t fixed = sizeof(config_entry_t) + sizeof(trigger_config_t) + 3 * ALLOC_OVERHEAD;
    if (n > (SIZE_MAX - fixed) / 16 - 1 || kv_bytes > SIZE_MAX - fixed - 16 * n - 1)
        return SIZE_MAX;
    size_t key = 16 * n + kv_bytes; /* canonical_len: [u64 klen][key][u64 vlen][value]... */
    return fixed + (key ? key : 1);
}

uint64_t config_cache_evictions(const config_cache_t *c) {
    return c ? c->evictions : 0;
}

void config_cache_free(config_cache_t *c) {
    if (!c)
        return;
    for (size_t i = 0; i < c->nbuckets; i++) {
        config_entry_t *e = c->buckets[i];
        while (e) {
            config_entry_t *next = e->_hnext;
            entry_free(e);
            e = next;
        }
    }
    free(c->buckets);
    free(c);
}
