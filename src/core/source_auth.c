/*
 * source_auth.c - see the header.
 */
#include "core/source_auth.h"

#include <arpa/inet.h>
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

enum { K_TOKEN, K_CA, K_CERT, K_KEY, K_NS, K_HOSTS, K_CIDRS, K_PODS, K_HTTP, K_COUNT };
static const char *const key_names[K_COUNT] = {"token-file", "ca-file",    "cert-file",
                                               "key-file",   "namespaces", "hosts",
                                               "cidrs",      "pods",       "http"};
#define KEY_LIST "token-file, ca-file, cert-file, key-file, namespaces, hosts, cidrs, pods, http"

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

/* A host name as the URL parser keeps it (lower case, labels of a-z 0-9 '-'
 * '_'), optionally "*." first; not an IP address (cidrs are for those). */
static bool host_pattern_valid(span_t h) {
    if (h.n > 2 && h.p[0] == '*' && h.p[1] == '.')
        h.p += 2, h.n -= 2;
    if (h.n == 0 || h.n > SOURCE_AUTH_HOST_MAX)
        return false;
    size_t label = 0;
    bool alpha = false;
    for (size_t i = 0; i < h.n; i++) {
        char c = h.p[i];
        if (c == '.') {
            if (label == 0 || h.p[i - 1] == '-')
                return false;
            label = 0;
            continue;
        }
        bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
        if (!ok || (c == '-' && label == 0) || ++label > 63)
            return false;
        alpha |= !(c >= '0' && c <= '9');
    }
    /* a last label all digits is an address to getaddrinfo, not a name */
    size_t last = h.n;
    while (last > 0 && h.p[last - 1] != '.')
        last--;
    bool numeric_tail = true;
    for (size_t i = last; i < h.n; i++)
        numeric_tail &= h.p[i] >= '0' && h.p[i] <= '9';
    return label > 0 && h.p[h.n - 1] != '-' && alpha && !numeric_tail;
}

static int set_hosts(source_auth_profile_t *pr, span_t v, char *err, size_t errlen) {
    const char *p = v.p, *end = v.p + v.n;
    for (;;) {
        const char *bar = memchr(p, '|', (size_t)(end - p));
        span_t h = trim(p, (size_t)((bar ? bar : end) - p));
        if (h.n && h.p[h.n - 1] == '.')
            h.n--; /* "svc." is "svc" */
        if (!host_pattern_valid(h))
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "profile %s: host \"%.*s\" is not a host name (lower-case DNS "
                              "name such as epp.llm.svc, or *.llm.svc for every name below it; "
                              "an IP address goes in cidrs)",
                              pr->name, (int)(h.n > 80 ? 80 : h.n), h.p);
        if (pr->nhosts == SOURCE_AUTH_MAX_HOSTS)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "profile %s: more than %d hosts (use a *.suffix pattern)", pr->name,
                              SOURCE_AUTH_MAX_HOSTS);
        _Static_assert(sizeof pr->hosts[0] >= SOURCE_AUTH_HOST_MAX + 3, "\"*.\", a name, NUL");
        memcpy(pr->hosts[pr->nhosts], h.p, h.n);
        pr->hosts[pr->nhosts][h.n] = '\0';
        pr->nhosts++;
        if (!bar)
            return 0;
        p = bar + 1;
    }
}

static int set_cidrs(source_auth_profile_t *pr, span_t v, char *err, size_t errlen) {
    const char *p = v.p, *end = v.p + v.n;
    for (;;) {
        const char *bar = memchr(p, '|', (size_t)(end - p));
        span_t c = trim(p, (size_t)((bar ? bar : end) - p));
        char why[200];
        if (c.n == 0)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "profile %s: cidrs: an empty entry (networks such as "
                              "10.20.0.0/16|fd00::/8, separated by '|')",
                              pr->name);
        if (pr->ncidrs == SOURCE_AUTH_MAX_CIDRS)
            return kgs_seterr(err, errlen, KGS_EINVAL, "profile %s: more than %d cidrs", pr->name,
                              SOURCE_AUTH_MAX_CIDRS);
        if (egress_cidr_parse(c.p, c.n, &pr->cidrs[pr->ncidrs], why, sizeof why) != 0)
            return kgs_seterr(err, errlen, KGS_EINVAL, "profile %s: cidrs: %s", pr->name, why);
        pr->ncidrs++;
        if (!bar)
            return 0;
        p = bar + 1;
    }
}

static int set_word(const char *pname, const char *key, span_t v, const char *word, bool *dst,
                    char *err, size_t errlen) {
    if (!span_is(v, word))
        return kgs_seterr(err, errlen, KGS_EINVAL, "profile %s: %s=%.*s: the only value is %s",
                          pname, key, (int)(v.n > 80 ? 80 : v.n), v.p, word);
    *dst = true;
    return 0;
}

/* Key k's value v into pr. */
static int set_key(source_auth_profile_t *pr, int k, span_t v, char *err, size_t errlen) {
    switch (k) {
    case K_TOKEN:
        return set_path(pr->name, key_names[k], v, pr->token_file, err, errlen);
    case K_CA:
        return set_path(pr->name, key_names[k], v, pr->ca_file, err, errlen);
    case K_CERT:
        return set_path(pr->name, key_names[k], v, pr->cert_file, err, errlen);
    case K_KEY:
        return set_path(pr->name, key_names[k], v, pr->key_file, err, errlen);
    case K_HOSTS:
        return set_hosts(pr, v, err, errlen);
    case K_CIDRS:
        return set_cidrs(pr, v, err, errlen);
    case K_PODS:
        return set_word(pr->name, key_names[k], v, "own-namespace", &pr->pods_own_namespace, err,
                        errlen);
    case K_HTTP:
        return set_word(pr->name, key_names[k], v, "allow", &pr->allow_http, err, errlen);
    default:
        return set_namespaces(pr, v, err, errlen);
    }
}

/* What a whole profile must have, once every key is read. */
static int profile_complete(const source_auth_profile_t *pr, const bool seen[K_COUNT], char *err,
                            size_t errlen) {
    const char *pname = pr->name;
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
    if (source_auth_has_credential(pr) && !pr->nhosts && !pr->ncidrs && !pr->pods_own_namespace)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "profile %s: where may its %s go? A credential is bound to "
                          "destinations: add hosts=NAME|*.SUFFIX (the URLs' host names), "
                          "cidrs=NETWORK (IP-literal URLs) or pods=own-namespace (podSelector "
                          "pods of the ScaledObject's namespace)",
                          pname, pr->token_file[0] ? "token" : "client certificate");
    if (pr->allow_http && !pr->token_file[0])
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "profile %s: http=allow without token-file: a ca-file or client "
                          "certificate is used only over https",
                          pname);
    return 0;
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
                              "profile %s: \"%.*s\" is not key=value with a key of " KEY_LIST,
                              pname, (int)(item.n > 80 ? 80 : item.n), item.p);
        if (seen[k])
            return kgs_seterr(err, errlen, KGS_EINVAL, "profile %s: %s is given twice", pname,
                              key_names[k]);
        seen[k] = true;
        span_t v = trim(eq + 1, (size_t)(item.p + item.n - (eq + 1)));
        int rc = set_key(pr, k, v, err, errlen);
        if (rc)
            return rc;
        if (!comma)
            break;
        p = comma + 1;
    }
    int rc = profile_complete(pr, seen, err, errlen);
    if (rc)
        return rc;
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

bool source_auth_has_credential(const source_auth_profile_t *p) {
    return p->token_file[0] || p->cert_file[0];
}

bool source_auth_host_allowed(const source_auth_profile_t *p, const char *host) {
    size_t n = strlen(host);
    if (n && host[n - 1] == '.')
        n--;
    for (unsigned i = 0; i < p->nhosts; i++) {
        const char *h = p->hosts[i];
        size_t hn = strlen(h);
        if (h[0] == '*') {
            /* "*.x": at least one label, then ".x" */
            size_t sn = hn - 1; /* ".x" */
            if (n > sn && memcmp(host + n - sn, h + 1, sn) == 0 && host[0] != '.')
                return true;
        } else if (hn == n && memcmp(h, host, n) == 0) {
            return true;
        }
    }
    return false;
}

/* "hosts=a|b, cidrs=none, pods=no": where p's credential may go, for messages. */
static void describe_destinations(const source_auth_profile_t *p, char *buf, size_t len) {
    size_t o = 0;
    int w = snprintf(buf, len, "hosts=");
    o = w > 0 ? (size_t)w : 0;
    for (unsigned i = 0; i < p->nhosts && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? "|" : "", p->hosts[i]);
    if (!p->nhosts && o < len)
        o += (size_t)snprintf(buf + o, len - o, "none");
    if (o < len)
        o += (size_t)snprintf(buf + o, len - o, ", cidrs=");
    for (unsigned i = 0; i < p->ncidrs && o < len; i++) {
        char a[INET6_ADDRSTRLEN];
        inet_ntop(p->cidrs[i].family, p->cidrs[i].addr, a, sizeof a);
        o += (size_t)snprintf(buf + o, len - o, "%s%s/%u", i ? "|" : "", a, p->cidrs[i].prefix);
    }
    if (!p->ncidrs && o < len)
        o += (size_t)snprintf(buf + o, len - o, "none");
    if (o < len)
        snprintf(buf + o, len - o, ", pods=%s", p->pods_own_namespace ? "own-namespace" : "none");
}

/* Plain http with p: 0 when allowed, else the refusal. what: the URL's host or "pods". */
static int check_http(const source_auth_profile_t *p, const char *what, char *err, size_t errlen) {
    if (p->cert_file[0] || p->ca_file[0])
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "sourceAuth %s has %s, which needs https (an https:// URL, or "
                          "engineScheme: https for podSelector pods); %s is http",
                          p->name, p->cert_file[0] ? "a client certificate" : "a ca-file", what);
    if (!p->allow_http)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "sourceAuth %s: %s is plain http, and the profile's bearer token would "
                          "cross the network in clear: use https (engineScheme: https for "
                          "podSelector pods), or add http=allow to --source-auth %s (plain http "
                          "is refused by default: docs/operations.md, \"Multi-tenant model\")",
                          p->name, what, p->name);
    return 0;
}

int source_auth_check_url(const source_auth_profile_t *p, const source_url_t *u, char *err,
                          size_t errlen) {
    char where[SOURCE_HOST_MAX + 40];
    snprintf(where, sizeof where, "%s://%s%s%s:%u",
             u->scheme == SOURCE_SCHEME_HTTPS ? "https" : "http", u->family == AF_INET6 ? "[" : "",
             u->host, u->family == AF_INET6 ? "]" : "", (unsigned)u->port);
    if (u->scheme != SOURCE_SCHEME_HTTPS) {
        int rc = check_http(p, where, err, errlen);
        if (rc)
            return rc;
    }
    if (!source_auth_has_credential(p))
        return 0;
    char dest[SOURCE_AUTH_MAX_HOSTS * 64 + 256];
    if (u->host_is_ip) {
        struct sockaddr_storage ss;
        memset(&ss, 0, sizeof ss);
        socklen_t sl;
        if (u->family == AF_INET6) {
            struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
            v6->sin6_family = AF_INET6;
            inet_pton(AF_INET6, u->host, &v6->sin6_addr);
            sl = sizeof *v6;
        } else {
            struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
            v4->sin_family = AF_INET;
            inet_pton(AF_INET, u->host, &v4->sin_addr);
            sl = sizeof *v4;
        }
        if (egress_cidr_match(p->cidrs, p->ncidrs, (const struct sockaddr *)&ss, sl))
            return 0;
        describe_destinations(p, dest, sizeof dest);
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "sourceAuth %s may not send its credential to %s: the address is not "
                          "in the profile's cidrs (--source-auth %s: %s)",
                          p->name, where, p->name, dest);
    }
    if (source_auth_host_allowed(p, u->host))
        return 0;
    describe_destinations(p, dest, sizeof dest);
    return kgs_seterr(err, errlen, KGS_EINVAL,
                      "sourceAuth %s may not send its credential to %s: the host is not in the "
                      "profile's hosts (--source-auth %s: %s)",
                      p->name, where, p->name, dest);
}

int source_auth_check_pods(const source_auth_profile_t *p, bool https, char *err, size_t errlen) {
    if (!https) {
        int rc = check_http(p, "the podSelector pods' endpoint", err, errlen);
        if (rc)
            return rc;
    }
    if (!source_auth_has_credential(p) || p->pods_own_namespace)
        return 0;
    char dest[SOURCE_AUTH_MAX_HOSTS * 64 + 256];
    describe_destinations(p, dest, sizeof dest);
    return kgs_seterr(err, errlen, KGS_EINVAL,
                      "sourceAuth %s may not send its credential to podSelector pods: add "
                      "pods=own-namespace to --source-auth %s (%s)",
                      p->name, p->name, dest);
}
