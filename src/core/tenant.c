/*
 * tenant.c - see the header.
 *
 * Why at every RPC and not only at GetMetricSpec: KEDA calls GetMetricSpec
 * once per ScaledObject generation, but any caller that reaches the port
 * may call GetMetrics or IsActive directly, and the config cache is keyed
 * by metadata alone (one entry serves every namespace), so the namespace
 * check cannot live in the parse. It costs a few string comparisons.
 */
#include "core/tenant.h"

#include <stdio.h>
#include <string.h>

#include "core/err.h"

/* A namespace name: an RFC 1123 label of at most TENANT_NS_MAX bytes. */
static bool ns_name(const char *p, size_t n) {
    return source_auth_name_valid(p, n); /* the same rule: a DNS label of at most 63 */
}

static bool side_valid(const char *p, size_t n) {
    return (n == 1 && p[0] == '*') || ns_name(p, n);
}

static const char *trim(const char *p, size_t *n) {
    while (*n && (*p == ' ' || *p == '\t'))
        p++, (*n)--;
    while (*n && (p[*n - 1] == ' ' || p[*n - 1] == '\t'))
        (*n)--;
    return p;
}

/* One SRC:DST entry (b, n) into *pair. */
static int parse_pair(const char *b, size_t n, tenant_cross_t *pair, char *err, size_t errlen) {
    const char *colon = memchr(b, ':', n);
    int shown = n > 80 ? 80 : (int)n;
    if (!colon)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "--allow-cross-namespace: \"%.*s\" is not SRC:DST (the namespace of the "
                          "ScaledObjects, then the namespace whose pods they may select, e.g. "
                          "monitoring:llm)",
                          shown, b);
    size_t sn = (size_t)(colon - b), dn = n - sn - 1;
    const char *s = trim(b, &sn), *d = trim(colon + 1, &dn);
    if (!side_valid(s, sn) || !side_valid(d, dn))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "--allow-cross-namespace: \"%.*s\": %s is not a namespace name "
                          "(lower-case letters, digits and '-', at most %d) or *",
                          shown, b, side_valid(s, sn) ? "DST" : "SRC", TENANT_NS_MAX);
    if (sn == dn && memcmp(s, d, sn) == 0 && s[0] != '*')
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "--allow-cross-namespace: \"%.*s\": a namespace always selects its own "
                          "pods; list only other namespaces",
                          shown, b);
    memset(pair, 0, sizeof *pair);
    memcpy(pair->src, s, sn);
    memcpy(pair->dst, d, dn);
    return 0;
}

int tenant_cross_ns_parse(const char *text, tenant_cross_ns_t *out, char *err, size_t errlen) {
    tenant_cross_ns_t tmp;
    memset(&tmp, 0, sizeof tmp);
    const char *p = text ? text : "", *end = p + strlen(p);
    while (p <= end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        size_t n = (size_t)((comma ? comma : end) - p);
        const char *b = trim(p, &n);
        if (n == 0 && (comma || tmp.n))
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "--allow-cross-namespace: an empty entry (SRC:DST pairs separated "
                              "by commas)");
        if (n) {
            if (tmp.n == TENANT_MAX_CROSS)
                return kgs_seterr(err, errlen, KGS_EINVAL,
                                  "--allow-cross-namespace: more than %d pairs (use * on one side)",
                                  TENANT_MAX_CROSS);
            tenant_cross_t *pair = &tmp.pair[tmp.n];
            int rc = parse_pair(b, n, pair, err, errlen);
            if (rc)
                return rc;
            for (unsigned i = 0; i < tmp.n; i++)
                if (strcmp(tmp.pair[i].src, pair->src) == 0 &&
                    strcmp(tmp.pair[i].dst, pair->dst) == 0)
                    return kgs_seterr(err, errlen, KGS_EINVAL,
                                      "--allow-cross-namespace: %s:%s is given twice", pair->src,
                                      pair->dst);
            tmp.n++;
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    *out = tmp;
    return 0;
}

bool tenant_cross_ns_allows(const tenant_cross_ns_t *x, const char *src, const char *dst) {
    if (strcmp(src, dst) == 0)
        return true;
    for (unsigned i = 0; x && i < x->n; i++) {
        const tenant_cross_t *p = &x->pair[i];
        if ((p->src[0] == '*' || strcmp(p->src, src) == 0) &&
            (p->dst[0] == '*' || strcmp(p->dst, dst) == 0))
            return true;
    }
    return false;
}

int tenant_profile_admit(const source_auth_set_t *set, const char *name, const char *ns,
                         const source_auth_profile_t **out, char *err, size_t errlen) {
    const source_auth_profile_t *p = source_auth_find(set, name);
    if (!p) {
        char names[400] = "";
        size_t o = 0;
        for (unsigned i = 0; i < set->n && o < sizeof names; i++)
            o += (size_t)snprintf(names + o, sizeof names - o, "%s%s", i ? ", " : "",
                                  set->p[i].name);
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "sourceAuth %s: the server has no --source-auth profile of that name "
                          "(%s%s)",
                          name, set->n ? "it has: " : "it has none", names);
    }
    if (!source_auth_allows(p, ns)) {
        char list[300] = "";
        size_t o = 0;
        for (unsigned k = 0; k < p->nns && o < sizeof list; k++)
            o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", k ? "|" : "", p->ns[k]);
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "sourceAuth %s may not be used from namespace %s (--source-auth %s: "
                          "namespaces=%s)",
                          name, ns, name, list);
    }
    *out = p;
    return 0;
}

/* Every HTTP destination of c against profile p. */
static int check_destinations(const source_auth_profile_t *p, const trigger_config_t *c, char *err,
                              size_t errlen) {
    const demand_config_t *d = &c->demand;
    source_url_t u;
    for (unsigned i = 0; i < d->endpoint_count; i++) {
        source_url_expand(d->endpoints[i], &d->endpoint_urls[i], &u);
        int rc = source_auth_check_url(p, &u, err, errlen);
        if (rc)
            return rc;
    }
    if (d->engine != ENGINE_NONE && d->endpoint_count == 0 && c->has_pod_selector) {
        int rc = source_auth_check_pods(p, d->engine_https, err, errlen);
        if (rc)
            return rc;
    }
    if (d->queue == QUEUE_PROMETHEUS) {
        demand_queue_url(d, &u);
        int rc = source_auth_check_url(p, &u, err, errlen);
        if (rc)
            return rc;
    }
    return 0;
}

int tenant_check_trigger(const tenant_policy_t *p, const trigger_config_t *c, const char *ns,
                         char *err, size_t errlen) {
    const char *auth = c->demand.source_auth;
    bool other_ns = c->has_namespace && strcmp(c->pod_namespace, ns) != 0;
    if (other_ns && auth[0])
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "sourceAuth %s with namespace %s: a profile's credential goes only to "
                          "the ScaledObject's own namespace (%s); drop namespace or sourceAuth",
                          auth, c->pod_namespace, ns);
    if (other_ns && !tenant_cross_ns_allows(p->cross, ns, c->pod_namespace))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "namespace %s: triggers of namespace %s may select pods of their own "
                          "namespace only; the operator allows another with "
                          "--allow-cross-namespace=%s:%s on the server",
                          c->pod_namespace, ns, ns, c->pod_namespace);
    if (!auth[0] || !p->auth)
        return 0;
    const source_auth_profile_t *prof = NULL;
    int rc = tenant_profile_admit(p->auth, auth, ns, &prof, err, errlen);
    if (rc)
        return rc;
    return check_destinations(prof, c, err, errlen);
}
