/*
 * fair_share.h - how a budget shared by namespaces (tenants) admits one
 * more charge, so that one tenant can never take what another needs to be
 * served at all.
 *
 * The rule: a tenant may hold at most half of what the other tenants leave
 * free. Alone, it gets half the budget; a second tenant then gets at least
 * a quarter, a third an eighth, and so on: every tenant that holds nothing
 * yet can always take a small charge while the tenants already there keep
 * everything they hold (nothing is ever taken back, so no preemption is
 * needed). The price is that one tenant alone can use only half of the
 * budget: the flag that sets it says so.
 *
 * Pure, header-only: any thread.
 */
#ifndef KGS_CORE_FAIR_SHARE_H
#define KGS_CORE_FAIR_SHARE_H

#include <stdbool.h>
#include <stddef.h>

/* The most a tenant holding `mine` of `total` (every tenant's, its own
 * included) may hold in all under a budget of `limit`. */
static inline size_t fair_share_cap(size_t mine, size_t total, size_t limit) {
    size_t others = total > mine ? total - mine : 0;
    return others >= limit ? 0 : (limit - others) / 2;
}

/* Whether a charge of `add` more fits: within the tenant's cap and within
 * the budget itself. */
static inline bool fair_share_admits(size_t mine, size_t total, size_t add, size_t limit) {
    if (add > limit || total > limit - add)
        return false;
    size_t cap = fair_share_cap(mine, total, limit);
    return mine <= cap && add <= cap - mine;
}

#endif
