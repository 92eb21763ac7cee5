/*
 * tenant.h - who may claim what: the checks that keep one namespace's
 * triggers out of another's pods and credentials, made on every RPC before
 * anything is started or read (docs/operations.md, "Multi-tenant model").
 *
 * A trigger arrives with the namespace of its ScaledObject (KEDA's claim;
 * with mTLS between KEDA and the scaler, only KEDA can make it). Two things
 * a trigger names could reach beyond that namespace, and both are refused
 * unless the operator said otherwise on the server:
 *   - `namespace:` (the scope of podSelector) naming another namespace: off
 *     unless --allow-cross-namespace lists the pair SRC:DST;
 *   - `sourceAuth:` a --source-auth profile: allowed only from the
 *     profile's namespaces, only for the profile's destinations, over https
 *     unless it allows http, and never for another namespace's pods.
 * A refusal names the trigger's own values (the namespace it asked for,
 * the URL's host) and the flag to change, never anything read from the
 * other namespace: it is the same whether that namespace exists, has pods
 * or has none, so it answers no question about it.
 *
 * Text form of --allow-cross-namespace: comma-separated SRC:DST pairs,
 * each a namespace name or * ("monitoring:llm,ops:*"); "*:*" is the old
 * behaviour (every namespace may read every namespace's pods).
 *
 * Pure: no I/O, no allocation, no globals. Any thread.
 */
#ifndef KGS_CORE_TENANT_H
#define KGS_CORE_TENANT_H

#include <stdbool.h>
#include <stddef.h>

#include "core/source_auth.h"
#include "core/trigger_config.h"

#define TENANT_MAX_CROSS 64
#define TENANT_NS_MAX 63

typedef struct {
    char src[TENANT_NS_MAX + 1]; /* a namespace, or "*" */
    char dst[TENANT_NS_MAX + 1];
} tenant_cross_t;

/* Caller-owned storage; all zero = no cross-namespace scope at all. */
typedef struct {
    unsigned n;
    tenant_cross_t pair[TENANT_MAX_CROSS];
} tenant_cross_ns_t;

/*
 * Parses the --allow-cross-namespace text into *out, replacing what was
 * there ("" = none). Refused with KGS_EINVAL and a message naming the
 * entry: not SRC:DST, a side that is neither a namespace name (RFC 1123
 * label, at most 63) nor *, SRC equal to DST (a namespace always reads its
 * own pods), a pair given twice, more than TENANT_MAX_CROSS pairs. *out is
 * unchanged on failure.
 */
int tenant_cross_ns_parse(const char *text, tenant_cross_ns_t *out, char *err, size_t errlen);

/* Whether triggers of namespace src may scope podSelector to namespace dst
 * (always true when they are equal). */
bool tenant_cross_ns_allows(const tenant_cross_ns_t *x, const char *src, const char *dst);

/* What the checks know of the server. Both borrowed; NULL auth = the
 * profiles are not known (validate without --source-auth): only the
 * checks that need none are made. NULL cross = no pair allowed. */
typedef struct {
    const source_auth_set_t *auth;
    const tenant_cross_ns_t *cross;
} tenant_policy_t;

/* The profile named name in set, admitted for namespace ns: 0 with *out
 * (pointing into set), or KGS_EINVAL naming the profiles the server has
 * (never a credential) or the namespaces the profile allows. The RPC's
 * check and the source hub's both use it. */
int tenant_profile_admit(const source_auth_set_t *set, const char *name, const char *ns,
                         const source_auth_profile_t **out, char *err, size_t errlen);

/*
 * Whether trigger c (borrowed, a valid config) may be served to a
 * ScaledObject in namespace ns. Returns 0, or KGS_EINVAL with the message
 * (one problem: the first of: namespace scope, sourceAuth with another
 * namespace, the profile unknown or not for ns, a URL outside the
 * profile's destinations or over plain http, podSelector pods the profile
 * does not cover).
 */
int tenant_check_trigger(const tenant_policy_t *p, const trigger_config_t *c, const char *ns,
                         char *err, size_t errlen);

#endif
