/*
 * source_auth.c - see the header.
 */
#include "core/source_auth.h"

#include <stdio.h>
#include <string.h>

#include "core/err.h"

typedef struct {
    const char *p;
    size_t n;
} span_t;

static span_t trim(const char *p, size_t n) {
    while (n && (*p == ' ' || *p == '\t'))
        p++, n--;
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    return (span_t){p, n};
}

static bool span_is(span_t s, const char *lit) {
    return s.n == strlen(lit) && memcmp(s.p, lit, s.n) == 0;
}

/* A DNS label (RFC 1123) of at most max bytes: what Kubernetes names
 * namespaces with, and what profile names are. */
static bool dns_label(const char *p, size_t n, size_t max) {
    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!alnum && !(c == '-' && i > 0 && i + 1 < n))
            return false;
    }
    return true;
}

bool source_auth_name_valid(const char *name, size_t len) {
    return dns_label(name, len, SOURCE_AUTH_NAME_MAX);
}

enum { K_TOKEN, K_CA, K_CERT, K_KEY, K_NS, K_COUNT };
static const char *const key_names[K_COUNT] = {"token-file", "ca-file", "cert-file", "key-file",
                                               "namespaces"};

static int set_path(const char *pname, const char *key, span_t v, char *dst, char *err,
                    size_t errlen) {
    if (v.n == 0 || v.p[0] != '/')
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "profile %s: %s \"%.*s\" is not an absolute path (e.g. "
                          "/var/run/secrets/kgs/token)",
                          pname, key, (int)(v.n > 200 ? 200 : v.n), v.p);
    if (v.n > SOURCE_AUTH_PATH_MAX)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "profile %s: %s is %zu bytes long; the limit is %d", pname, key, v.n,
                          SOURCE_AUTH_PATH_MAX);
    for (size_t i = 0; i < v.n; i++)
        if ((unsigned char)v.p[i] < 0x20 || v.p[i] == 0x7f)
            return kgs_seterr(err, errlen, KGS_EINVAL, "profile %s: %s holds a control character",
                              pname, key);
    memcpy(dst, v.p, v.n);
    dst[v.n] = '\0';
    return 0;
}

static int set_namespaces(source_auth_profile_t *pr, span_t v, char *err, size_t errlen) {
    if (span_is(v, "*")) {
        pr->all_namespaces = true;
        return 0;
    }
    const char *p = v.p, *end = v.p + v.n;
    for (;;) {
        const char *bar = memchr(p, '|', (size_t)(end - p));
        span_t ns = trim(p, (size_t)((bar ? bar : end) - p));
        if (!dns_label(ns.p, ns.n, SOURCE_AUTH_NS_MAX))
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "profile %s: namespace \"%.*s\" is not a Kubernetes namespace name "
                              "(lower-case letters, digits and '-', at most %d); list them "
                              "separated by '|', or * for every namespace",
                              pr->name, (int)(ns.n > 80 ? 80 : ns.n), ns.p, SOURCE_AUTH_NS_MAX);
        for (unsigned i = 0; i < pr->nns; i++)
            if (strlen(pr->ns[i]) == ns.n && memcmp(pr->ns[i], ns.p, ns.n) == 0)
                return kgs_seterr(err, errlen, KGS_EINVAL,
                                  "profile %s: namespace %.*s is listed twice", pr->name, (int)ns.n,
                                  ns.p);
        if (pr->nns == SOURCE_AUTH_MAX_NAMESPACES)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "profile %s: more than %d namespaces (use * for every namespace, "
                              "or another profile)",
                              pr->name, SOURCE_AUTH_MAX_NAMESPACES);
        memcpy(pr->ns[pr->nns], ns.p, ns.n);
        pr->ns[pr->nns][ns.n] = '\0';
        pr->nns++;
        if (!bar)
            return 0;
        p = bar + 1;
    }
}

static int parse_profile(span_t text, source_auth_set_t *set, char *err, size_t errlen) {
    const char *colon = memchr(text.p, ':', text.n);
    span_t name = trim(text.p, colon ? (size_t)(colon - text.p) : text.n);
    if (!colon)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "profile \"%.*s\": want NAME:key=value,... (e.g. "
                          "epp:token-file=/var/run/secrets/kgs/token,namespaces=llm)",
                          (int)(name.n > 80 ? 80 : name.n), name.p);
    if (!source_auth_name_valid(name.p, name.n))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "profile name \"%.*s\" is not valid: lower-case letters, digits and "
                          "'-' (not first or last), at most %d",
                          (int)(name.n > 80 ? 80 : name.n), name.p, SOURCE_AUTH_NAME_MAX);
    char pname[SOURCE_AUTH_NAME_MAX + 1];
    memcpy(pname, name.p, name.n);
    pname[name.n] = '\0';
    if (source_auth_find(set, pname))
        return kgs_seterr(err, errlen, KGS_EINVAL, "profile %s is defined twice", pname);
    if (set->n == SOURCE_AUTH_MAX_PROFILES)
        return kgs_seterr(err, errlen, KGS_EINVAL, "more than %d profiles",
                          SOURCE_AUTH_MAX_PROFILES);
    source_auth_profile_t *pr = &set->p[set->n];
    memset(pr, 0, sizeof *pr);
    memcpy(pr->name, pname, sizeof pname);
    bool seen[K_COUNT] = {false};
    const char *p = colon + 1, *end = text.p + text.n;
    for (;;) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        span_t item = trim(p, (size_t)((comma ? comma : end) - p));
        const char *eq = memchr(item.p, '=', item.n);
        span_t key = trim(item.p, eq ? (size_t)(eq - item.p) : item.n);
        int k = 0;
        while (k < K_COUNT && !span_is(key, key_names[k]))
            k++;
        if (k == K_COUNT || !eq)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "profile %s: \"%.*s\" is not key=value with a key of token-file, "
                              "ca-file, cert-file, key-file, namespaces",
                              pname, (int)(item.n > 80 ? 80 : item.n), item.p);
        if (seen[k])
            return kgs_seterr(err, errlen, KGS_EINVAL, "profile %s: %s is given twice", pname,
                              key_names[k]);
        seen[k] = true;
        span_t v = trim(eq + 1, (size_t)(item.p + item.n - (eq + 1)));
        int rc = 0;
        switch (k) {
        case K_TOKEN:
            rc = set_path(pname, key_names[k], v, pr->token_file, err, errlen);
            break;
        case K_CA:
            rc = set_path(pname, key_names[k], v, pr->ca_file, err, errlen);
            break;
        case K_CERT:
            rc = set_path(pname, key_names[k], v, pr->cert_file, err, errlen);
            break;
        case K_KEY:
            rc = set_path(pname, key_names[k], v, pr->key_file, err, errlen);
            break;
        default:
            rc = set_namespaces(pr, v, err, errlen);
            break;
        }
        if (rc)
            return rc;
        if (!comma)
            break;
        p = comma + 1;
    }
    if (seen[K_CERT] != seen[K_KEY])
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "profile %s: cert-file and key-file go together (a client "
                          "certificate and its private key)",
                          pname);
    if (!seen[K_TOKEN] && !seen[K_CA] && !seen[K_CERT])
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "profile %s: no credential: give token-file, cert-file and key-file, "
                          "or ca-file",
                          pname);
    if (!seen[K_NS])
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "profile %s: namespaces is required: the namespaces whose triggers may "
                          "use it, separated by '|', or * for every namespace",
                          pname);
    set->n++;
    return 0;
}

int source_auth_parse(const char *text, source_auth_set_t *out, char *err, size_t errlen) {
    /* parsed into a copy first: *out is left unchanged on failure (about
     * 25 KiB of stack, once at start) */
    source_auth_set_t tmp;
    memset(&tmp, 0, sizeof tmp);
    const char *p = text, *end = text + strlen(text);
    while (p < end) {
        const char *semi = memchr(p, ';', (size_t)(end - p));
        span_t prof = trim(p, (size_t)((semi ? semi : end) - p));
        if (prof.n) {
            int rc = parse_profile(prof, &tmp, err, errlen);
            if (rc)
                return rc;
        }
        if (!semi)
            break;
        p = semi + 1;
    }
    *out = tmp;
    return 0;
}

const source_auth_profile_t *source_auth_find(const source_auth_set_t *set, const char *name) {
    for (unsigned i = 0; set && i < set->n; i++)
        if (strcmp(set->p[i].name, name) == 0)
            return &set->p[i];
    return NULL;
}

bool source_auth_allows(const source_auth_profile_t *p, const char *ns) {
    if (p->all_namespaces)
        return true;
    for (unsigned i = 0; i < p->nns; i++)
        if (strcmp(p->ns[i], ns) == 0)
            return true;
    return false;
}
