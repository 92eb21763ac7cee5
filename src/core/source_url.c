/*
 * source_url.c - strict endpoint URLs and Redis addresses, and the SSRF guard.
 *
 * The parser is deliberately narrower than RFC 3986 and the WHATWG URL
 * standard. Every input it accepts has one reading, and it is the reading
 * that getaddrinfo(), the HTTP server and our own request line agree on:
 *   - the authority ends at the first '/', '?' or end of input, and must not
 *     hold '@' at all, so "http://a\@169.254.169.254/" and friends are
 *     refused rather than split differently from a browser;
 *   - a host whose last label is a number is an IPv4 address to inet_aton
 *     (glibc's getaddrinfo tries it before DNS), so it must be the one
 *     canonical dotted quad or nothing; we never convert "0x7f.1" ourselves;
 *   - IPv6 literals are stored in inet_ntop's form, so one address has one
 *     spelling in host, host_header and in any cache keyed by them.
 * The guard then runs on the literal here and again, by the caller, on
 * every resolved address right before connect().
 *
 * One parser fills a spec_t (offsets into the text, the literal's bytes);
 * the full source_url_t and the compact source_url_ref_t are two ways of
 * storing it, and expand() is the only place the full form is written, so
 * source_url_expand() of a ref gives what source_url_parse() gave.
 *
 * Error messages quote outside input with kgs_quote(), but only pieces that
 * cannot be a secret: nothing around an '@', and never the port text (in
 * "http://user:pa/ss@host" the authority is "user:pa", so the "port" is part
 * of a password).
 */
#include "core/source_url.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "core/err.h"

#define QBUF KGS_QUOTE_BUF
#define SCHEME_COUNT 4
#define REDIS_DB_MAX 15

static const char *const scheme_names[SCHEME_COUNT] = {"http", "https", "redis", "rediss"};
static const uint16_t scheme_ports[SCHEME_COUNT] = {80, 443, 6379, 6379};

/* ---- character classes (ASCII only, no locale) ------------------------------- */

static bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

static bool is_alpha(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_alnum(char c) {
    return is_digit(c) || is_alpha(c);
}

static bool is_hex(char c) {
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static char to_lower(char c) {
    return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

/* RFC 3986 unreserved, sub-delims, ':' and '@' (pchar without '%'), plus
 * '/' and '?', which may appear anywhere in a path-and-query. */
static bool is_path_char(char c) {
    return is_alnum(c) || strchr("-._~!$&'()*+,;=:@/?", c) != NULL;
}

/* a and b (NUL-terminated, lower-case) are equal ignoring ASCII case. */
static bool ieq(const char *a, size_t alen, const char *b) {
    size_t blen = strlen(b);
    if (alen != blen)
        return false;
    for (size_t i = 0; i < alen; i++)
        if (to_lower(a[i]) != b[i])
            return false;
    return true;
}

/* ---- the guard --------------------------------------------------------------- */

/* The ways an IPv4 address can appear: itself, and inside an IPv6 address. */
enum { FORM_PLAIN, FORM_MAPPED, FORM_TRANSLATED, FORM_COMPAT, FORM_NAT64, FORM_6TO4, FORM_COUNT };

typedef struct {
    uint32_t net;
    uint32_t mask;
    const char *reason[FORM_COUNT];
} v4_rule_t;

#define IP4(a, b, c, d) (((uint32_t)(a) << 24) | ((uint32_t)(b) << 16) | ((uint32_t)(c) << 8) | (d))
#define MASK(bits) ((uint32_t)(0xffffffffu << (32 - (bits))))
#define V4_RULE(a, b, c, d, bits, what)                                                            \
    {                                                                                              \
        IP4(a, b, c, d), MASK(bits), {                                                             \
            what, what " in an IPv4-mapped IPv6 address (::ffff:0:0/96)",                          \
                what " in an IPv4-translated IPv6 address (::ffff:0:0:0/96)",                      \
                what " in an IPv4-compatible IPv6 address (::/96)",                                \
                what " in a NAT64 address (64:ff9b::/96, 64:ff9b:1::/48)",                         \
                what " in a 6to4 address (2002::/16)"                                              \
        }                                                                                          \
    }

static const v4_rule_t v4_rules[] = {
    V4_RULE(0, 0, 0, 0, 8, "unspecified network (0.0.0.0/8)"),
    V4_RULE(169, 254, 0, 0, 16,
            "link-local address (169.254.0.0/16), where cloud metadata services live"),
    V4_RULE(100, 100, 100, 200, 32, "Alibaba Cloud metadata service (100.100.100.200)"),
    V4_RULE(192, 0, 0, 192, 32, "Oracle Cloud Classic metadata service (192.0.0.192)"),
    V4_RULE(168, 63, 129, 16, 32, "Azure WireServer platform endpoint (168.63.129.16)"),
    V4_RULE(224, 0, 0, 0, 4, "multicast address (224.0.0.0/4)"),
    V4_RULE(255, 255, 255, 255, 32, "broadcast address (255.255.255.255)"),
};

static const char *guard_v4(uint32_t addr, int form) {
    for (size_t i = 0; i < sizeof v4_rules / sizeof v4_rules[0]; i++)
        if ((addr & v4_rules[i].mask) == v4_rules[i].net)
            return v4_rules[i].reason[form];
    return NULL;
}

static uint32_t load_v4(const uint8_t *p) {
    return IP4(p[0], p[1], p[2], p[3]);
}

typedef struct {
    uint8_t addr[16];
    const char *reason;
} v6_exact_t;

static const v6_exact_t v6_exact[] = {
    {{0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54},
     "AWS instance metadata service (fd00:ec2::254)"},
    {{0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x23},
     "Amazon EKS Pod Identity agent (fd00:ec2::23)"},
    {{0xfd, 0x20, 0x00, 0xce, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54},
     "Google Compute Engine metadata server (fd20:ce::254)"},
    {{0xfd, 0x00, 0x00, 0xc1, 0, 0, 0, 0, 0, 0, 0, 0, 0xa9, 0xfe, 0xa9, 0xfe},
     "Oracle Cloud metadata service (fd00:c1::a9fe:a9fe)"},
};

static bool all_zero(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

/* The IPv4 address at the RFC 6052 position for a NAT64 prefix of `bits`
 * bits: the octets after the prefix, skipping the reserved octet 8. */
static uint32_t nat64_v4(const uint8_t a[16], int bits) {
    uint8_t v[4];
    int from = bits / 8;
    for (int i = 0, j = from; i < 4; j++) {
        if (j == 8)
            continue;
        v[i++] = a[j];
    }
    return load_v4(v);
}

/*
 * The local-use NAT64 prefix 64:ff9b:1::/48 (RFC 8215) is subdivided by the
 * operator into a prefix of /48, /56, /64 or /96, and the address does not
 * say which, so every reading that RFC 6052 allows (octet 8 zero, zero
 * suffix) is checked and any refused one refuses the address. Zero octets
 * are ambiguous across readings (in 64:ff9b:1:a00:1:: the /96 reading is
 * 0.0.0.0), so 0.0.0.0/8 is not refused through this prefix; a translator
 * does not forward to it either.
 */
static const char *guard_nat64_local(const uint8_t a[16]) {
    static const struct {
        int bits;
        int suffix; /* first octet that must be zero after the address */
    } readings[] = {{48, 11}, {56, 12}, {64, 13}, {96, 16}};
    for (size_t i = 0; i < sizeof readings / sizeof readings[0]; i++) {
        if (readings[i].bits < 96 && a[8] != 0)
            continue;
        if (!all_zero(a + readings[i].suffix, (size_t)(16 - readings[i].suffix)))
            continue;
        uint32_t v4 = nat64_v4(a, readings[i].bits);
        if ((v4 >> 24) == 0)
            continue;
        const char *why = guard_v4(v4, FORM_NAT64);
        if (why)
            return why;
    }
    return NULL;
}

static const char *guard_v6(const uint8_t a[16]) {
    if (all_zero(a, 16))
        return "unspecified address (::)";
    if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
        return "link-local address (fe80::/10)";
    if (a[0] == 0xff)
        return "multicast address (ff00::/8)";
    for (size_t i = 0; i < sizeof v6_exact / sizeof v6_exact[0]; i++)
        if (memcmp(a, v6_exact[i].addr, 16) == 0)
            return v6_exact[i].reason;

    if (all_zero(a, 10) && a[10] == 0xff && a[11] == 0xff)
        return guard_v4(load_v4(a + 12), FORM_MAPPED);
    if (all_zero(a, 8) && a[8] == 0xff && a[9] == 0xff && a[10] == 0 && a[11] == 0)
        return guard_v4(load_v4(a + 12), FORM_TRANSLATED);
    if (all_zero(a, 12)) {
        if (all_zero(a + 12, 3) && a[15] == 1)
            return NULL; /* ::1, loopback, not 0.0.0.1 */
        return guard_v4(load_v4(a + 12), FORM_COMPAT);
    }
    if (a[0] == 0x00 && a[1] == 0x64 && a[2] == 0xff && a[3] == 0x9b) {
        if (a[4] == 0 && a[5] == 1)
            return guard_nat64_local(a);
        return guard_v4(load_v4(a + 12), FORM_NAT64); /* well-known 64:ff9b::/96 */
    }
    if (a[0] == 0x20 && a[1] == 0x02)
        return guard_v4(load_v4(a + 2), FORM_6TO4);
    return NULL;
}

const char *source_guard_addr(const struct sockaddr *sa, socklen_t len) {
    if (!sa || len < (socklen_t)sizeof(sa_family_t))
        return "no address";
    sa_family_t family;
    memcpy(&family, (const char *)sa + offsetof(struct sockaddr, sa_family), sizeof family);
    if (family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        struct sockaddr_in in; /* copied: sa need not be aligned for sockaddr_in */
        memcpy(&in, sa, sizeof in);
        return guard_v4(ntohl(in.sin_addr.s_addr), FORM_PLAIN);
    }
    if (family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 in6;
        memcpy(&in6, sa, sizeof in6);
        return guard_v6(in6.sin6_addr.s6_addr);
    }
    return "not a complete IPv4 or IPv6 address";
}

static const char *const guarded_names[] = {
    "metadata.google.internal",   "metadata.goog", "metadata", "instance-data",
    "instance-data.ec2.internal",
};
#define GUARDED_SUFFIX ".metadata.google.internal"

const char *source_guard_name(const char *host) {
    if (!host || !*host)
        return "empty host name";
    size_t n = strlen(host);
    if (host[n - 1] == '.')
        n--;
    for (size_t i = 0; i < sizeof guarded_names / sizeof guarded_names[0]; i++)
        if (ieq(host, n, guarded_names[i]))
            return "cloud metadata service name (a Service of that name is reached by its full "
                   "name, e.g. metadata.<namespace>.svc)";
    size_t sl = strlen(GUARDED_SUFFIX);
    if (n > sl && ieq(host + n - sl, sl, GUARDED_SUFFIX))
        return "cloud metadata service name (*.metadata.google.internal)";
    return NULL;
}

/* ---- host, port and path ------------------------------------------------------ */

/* What a parse found, as offsets into the text it read. */
typedef struct {
    const char *text; /* the URL or address being parsed (borrowed) */
    source_scheme_t scheme;
    int family; /* AF_UNSPEC for a name */
    uint8_t addr[16];
    uint16_t port;
    size_t host_off, host_len; /* as written; IPv6 without brackets */
    size_t path_off, path_len; /* http(s) only */
    bool path_slash;
} spec_t;

/* The host as stored: a lower-cased name, the dotted quad as written (the
 * parser accepts only the canonical form), IPv6 in inet_ntop's form. buf
 * holds SOURCE_HOST_MAX + 1 bytes. */
static void spec_host(const char *text, const spec_t *sp, char *buf) {
    if (sp->family == AF_INET6) {
        struct in6_addr a6;
        memcpy(&a6, sp->addr, sizeof a6);
        if (!inet_ntop(AF_INET6, &a6, buf, SOURCE_HOST_MAX + 1))
            buf[0] = '\0'; /* not reached: the buffer holds any IPv6 address */
        return;
    }
    for (size_t i = 0; i < sp->host_len; i++)
        buf[i] = to_lower(text[sp->host_off + i]);
    buf[sp->host_len] = '\0';
}

/* The full form of *sp (text: what it was parsed from). */
static void expand(const char *text, const spec_t *sp, source_url_t *out) {
    memset(out, 0, sizeof *out);
    out->scheme = sp->scheme;
    out->family = sp->family;
    out->host_is_ip = sp->family != AF_UNSPEC;
    out->port = sp->port;
    spec_host(text, sp, out->host);
    if (sp->scheme == SOURCE_SCHEME_HTTP || sp->scheme == SOURCE_SCHEME_HTTPS) {
        size_t o = 0;
        if (sp->path_slash)
            out->path[o++] = '/';
        memcpy(out->path + o, text + sp->path_off, sp->path_len);
        out->path[o + sp->path_len] = '\0';
    }
    snprintf(out->host_header, sizeof out->host_header,
             out->family == AF_INET6 ? "[%s]:%u" : "%s:%u", out->host, (unsigned)out->port);
}

/* Strict dotted quad: four decimal parts 0-255, no leading zeros. */
static bool parse_ipv4_strict(const char *s, size_t n, uint8_t out[4]) {
    size_t i = 0;
    for (int part = 0; part < 4; part++) {
        if (part > 0) {
            if (i >= n || s[i] != '.')
                return false;
            i++;
        }
        size_t start = i;
        unsigned v = 0;
        while (i < n && is_digit(s[i]) && i - start < 3)
            v = v * 10 + (unsigned)(s[i++] - '0');
        size_t len = i - start;
        if (len == 0 || (len > 1 && s[start] == '0') || v > 255)
            return false;
        out[part] = (uint8_t)v;
    }
    return i == n;
}

/* What inet_aton takes for a number: decimal/octal digits, or 0x and hex. */
static bool is_numeric_label(const char *s, size_t n) {
    if (n == 0)
        return false;
    size_t i = 0;
    if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        for (i = 2; i < n; i++)
            if (!is_hex(s[i]))
                return false;
        return true;
    }
    for (; i < n; i++)
        if (!is_digit(s[i]))
            return false;
    return true;
}

#define NAME_RULE                                                                                  \
    "dot-separated labels of a-z, 0-9, '-' and '_', each 1-63 characters starting and ending "     \
    "with a letter or digit"

/* A host outside brackets: a DNS name or a canonical IPv4 literal. */
static int parse_name_or_v4(const char *h, size_t n, spec_t *out, char *err, size_t errlen) {
    char q[QBUF];
    if (n > SOURCE_HOST_MAX)
        return kgs_seterr(err, errlen, KGS_EINVAL, "host %s is longer than %d characters",
                          kgs_quote(q, sizeof q, h, n), SOURCE_HOST_MAX);
    if (memchr(h, '%', n))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "host %s: percent-encoding is not allowed in the host",
                          kgs_quote(q, sizeof q, h, n));

    /* The last label, ignoring one trailing dot. */
    size_t end = (h[n - 1] == '.') ? n - 1 : n;
    size_t last = end;
    while (last > 0 && h[last - 1] != '.')
        last--;
    if (is_numeric_label(h + last, end - last)) {
        uint8_t v4[4];
        if (!parse_ipv4_strict(h, n, v4))
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "host %s is not a canonical IPv4 address: write four decimal "
                              "numbers 0-255 without leading zeros (a.b.c.d); other forms are "
                              "refused rather than guessed",
                              kgs_quote(q, sizeof q, h, n));
        memcpy(out->addr, v4, sizeof v4);
        out->family = AF_INET;
        out->host_off = (size_t)(h - out->text);
        out->host_len = n;
        return 0;
    }

    if (n == 1 && h[0] == '.')
        return kgs_seterr(err, errlen, KGS_EINVAL, "host \".\" is not a valid DNS name");
    size_t label = 0; /* start of the current label */
    for (size_t i = 0; i <= n; i++) {
        if (i < n && h[i] != '.') {
            char c = h[i];
            if (!is_alnum(c) && c != '-' && c != '_')
                return kgs_seterr(err, errlen, KGS_EINVAL,
                                  "host %s is not a valid DNS name or IP address: character "
                                  "'%c' is not allowed (" NAME_RULE ")",
                                  kgs_quote(q, sizeof q, h, n), c);
            continue;
        }
        size_t len = i - label;
        if (len == 0 && i == n && n > 0 && label > 0)
            break; /* one trailing dot: a fully qualified name */
        if (len == 0 || len > 63 || !is_alnum(h[label]) || !is_alnum(h[i - 1]))
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "host %s is not a valid DNS name: " NAME_RULE,
                              kgs_quote(q, sizeof q, h, n));
        label = i + 1;
    }
    out->family = AF_UNSPEC;
    out->host_off = (size_t)(h - out->text);
    out->host_len = n;
    return 0;
}

/* "host[:port]" or "[v6][:port]": a, n is the whole authority. */
static int parse_authority(const char *a, size_t n, spec_t *out, char *err, size_t errlen) {
    char q[QBUF];
    const char *rest;
    if (n > 0 && a[0] == '[') {
        const char *close = memchr(a, ']', n);
        if (!close)
            return kgs_seterr(err, errlen, KGS_EINVAL, "missing ']' after the IPv6 address");
        const char *h = a + 1;
        size_t hl = (size_t)(close - h);
        rest = close + 1;
        if (hl == 0)
            return kgs_seterr(err, errlen, KGS_EINVAL, "empty host");
        if (memchr(h, '%', hl))
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "host %s: IPv6 zone ids are not allowed (they only serve "
                              "link-local addresses, which are refused)",
                              kgs_quote(q, sizeof q, h, hl));
        char buf[INET6_ADDRSTRLEN];
        struct in6_addr a6;
        bool ok = hl < sizeof buf;
        if (ok) {
            memcpy(buf, h, hl);
            buf[hl] = '\0';
            ok = inet_pton(AF_INET6, buf, &a6) == 1;
        }
        if (!ok)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "host %s is not an IPv6 address (brackets are only for IPv6)",
                              kgs_quote(q, sizeof q, h, hl));
        if (!inet_ntop(AF_INET6, &a6, buf, sizeof buf))
            return kgs_seterr(err, errlen, KGS_EINVAL, "cannot format the IPv6 address");
        memcpy(out->addr, &a6, sizeof a6);
        out->family = AF_INET6;
        out->host_off = (size_t)(h - out->text);
        out->host_len = hl;
        if (rest < a + n && *rest != ':')
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "unexpected text after ']': expected ':port', a path or the end");
    } else {
        const char *colon = memchr(a, ':', n);
        size_t hl = colon ? (size_t)(colon - a) : n;
        if (colon && memchr(colon + 1, ':', n - hl - 1))
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "an IPv6 address must be written in brackets, as in [::1]:8000");
        if (hl == 0)
            return kgs_seterr(err, errlen, KGS_EINVAL, "empty host");
        int rc = parse_name_or_v4(a, hl, out, err, errlen);
        if (rc)
            return rc;
        rest = a + hl;
    }

    if (rest < a + n) { /* *rest == ':' */
        const char *p = rest + 1;
        size_t pl = (size_t)(a + n - p);
        unsigned long port = 0;
        if (pl == 0)
            return kgs_seterr(err, errlen, KGS_EINVAL, "empty port after ':'");
        for (size_t i = 0; i < pl; i++) {
            if (!is_digit(p[i]))
                return kgs_seterr(err, errlen, KGS_EINVAL,
                                  "bad port: it must be decimal digits, 1-65535");
            if (port <= 65535)
                port = port * 10 + (unsigned long)(p[i] - '0');
        }
        if (port == 0 || port > 65535)
            return kgs_seterr(err, errlen, KGS_EINVAL, "bad port: it must be 1-65535");
        out->port = (uint16_t)port;
    }
    return 0;
}

/* Path and query of an http(s) URL, "" allowed (becomes "/"). */
static int parse_http_path(const char *p, size_t n, spec_t *out, char *err, size_t errlen) {
    size_t need = n + (n == 0 || p[0] == '?');
    if (need > SOURCE_PATH_MAX)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "path and query are %zu bytes long, more than the %d allowed", need,
                          SOURCE_PATH_MAX);
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (c == '%') {
            if (!(i + 2 < n && is_hex(p[i + 1]) && is_hex(p[i + 2])))
                return kgs_seterr(err, errlen, KGS_EINVAL,
                                  "'%%' at offset %zu of the path is not followed by two hex "
                                  "digits",
                                  i);
            i += 2;
            continue;
        }
        if (!is_path_char(c))
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "character '%c' at offset %zu of the path must be "
                              "percent-encoded (as %%%02X)",
                              c, i, (unsigned)(unsigned char)c);
    }
    out->path_slash = n == 0 || p[0] == '?';
    out->path_off = (size_t)(p - out->text);
    out->path_len = n;
    return 0;
}

/* Path of a redis(s) URL: "", "/" or "/N". *db is set to N or left. */
static int parse_redis_path(const char *p, size_t n, int *db, char *err, size_t errlen) {
    if (memchr(p, '?', n))
        return kgs_seterr(err, errlen, KGS_EINVAL, "a redis URL takes no query");
    if (n <= 1)
        return 0; /* "" or "/" */
    int v = 0;
    for (size_t i = 1; i < n; i++) {
        if (!is_digit(p[i]) || i > 2)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "a redis URL takes only a database number as its path, /0 to "
                              "/%d",
                              REDIS_DB_MAX);
        v = v * 10 + (p[i] - '0');
    }
    if (v > REDIS_DB_MAX || (n > 2 && p[1] == '0'))
        return kgs_seterr(err, errlen, KGS_EINVAL, "redis database must be 0 to %d", REDIS_DB_MAX);
    *db = v;
    return 0;
}

/* ---- the parsers -------------------------------------------------------------- */

static size_t list_schemes(unsigned allowed, char *buf, size_t buflen) {
    size_t o = 0, count = 0, total = 0;
    buf[0] = '\0';
    for (int s = 0; s < SCHEME_COUNT; s++)
        total += (allowed >> s) & 1u;
    for (int s = 0; s < SCHEME_COUNT; s++) {
        if (!((allowed >> s) & 1u))
            continue;
        const char *sep = count == 0 ? "" : (count + 1 == total ? " or " : ", ");
        int w = snprintf(buf + o, buflen - o, "%s%s://", sep, scheme_names[s]);
        if (w < 0 || (size_t)w >= buflen - o)
            break;
        o += (size_t)w;
        count++;
    }
    return count;
}

/* Control bytes, spaces and non-ASCII anywhere. */
static int check_bytes(const char *s, char *err, size_t errlen) {
    for (size_t i = 0; s[i]; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= 0x20 || c >= 0x7f)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "%s byte 0x%02x at offset %zu (percent-encode it in a path; a "
                              "host name must be ASCII, e.g. xn--...)",
                              c == ' ' ? "space" : (c < 0x7f ? "control" : "non-ASCII"), c, i);
    }
    return 0;
}

/* The whole URL; *db gets a redis database when there is one. */
static int parse_url(const char *url, unsigned allowed, spec_t *out, int *db, char *err,
                     size_t errlen) {
    char q[QBUF], accepted[64];
    if (!url || !*url)
        return kgs_seterr(err, errlen, KGS_EINVAL, "empty URL");
    if (list_schemes(allowed, accepted, sizeof accepted) == 0)
        return kgs_seterr(err, errlen, KGS_EINVAL, "no URL scheme is accepted here");
    int rc = check_bytes(url, err, errlen);
    if (rc)
        return rc;

    const char *sep = strstr(url, "://");
    size_t sl = sep ? (size_t)(sep - url) : 0;
    for (size_t i = 0; i < sl; i++)
        if (!is_alnum(url[i]) && url[i] != '+' && url[i] != '-' && url[i] != '.')
            sep = NULL;
    if (!sep || sl == 0 || !is_alpha(url[0]))
        return kgs_seterr(err, errlen, KGS_EINVAL, "not an absolute URL: it must start with %s",
                          accepted);
    int scheme = -1;
    for (int s = 0; s < SCHEME_COUNT; s++)
        if (ieq(url, sl, scheme_names[s]))
            scheme = s;
    if (scheme < 0 || !((allowed >> scheme) & 1u))
        return kgs_seterr(err, errlen, KGS_EINVAL, "scheme %s is not accepted here: use %s",
                          kgs_quote(q, sizeof q, url, sl), accepted);
    out->scheme = (source_scheme_t)scheme;
    out->port = scheme_ports[scheme];

    if (strchr(url, '#'))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "a fragment ('#...') is not allowed: it is never sent to the server");
    const char *auth = sep + 3;
    size_t al = strcspn(auth, "/?");
    if (memchr(auth, '@', al))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "credentials in the URL (user:password@) are not allowed: keep them "
                          "in a Kubernetes Secret");
    rc = parse_authority(auth, al, out, err, errlen);
    if (rc)
        return rc;

    const char *path = auth + al;
    size_t pl = strlen(path);
    if (scheme == SOURCE_SCHEME_HTTP || scheme == SOURCE_SCHEME_HTTPS)
        rc = parse_http_path(path, pl, out, err, errlen);
    else
        rc = parse_redis_path(path, pl, db, err, errlen);
    return rc;
}

/* The guard on the parsed host. */
static int finish(const spec_t *sp, char *err, size_t errlen) {
    char q[QBUF], host[SOURCE_HOST_MAX + 1];
    const char *why;
    if (sp->family == AF_INET) {
        struct sockaddr_in in;
        memset(&in, 0, sizeof in);
        in.sin_family = AF_INET;
        memcpy(&in.sin_addr, sp->addr, sizeof in.sin_addr);
        why = source_guard_addr((const struct sockaddr *)&in, sizeof in);
    } else if (sp->family == AF_INET6) {
        struct sockaddr_in6 in6;
        memset(&in6, 0, sizeof in6);
        in6.sin6_family = AF_INET6;
        memcpy(&in6.sin6_addr, sp->addr, sizeof in6.sin6_addr);
        why = source_guard_addr((const struct sockaddr *)&in6, sizeof in6);
    } else {
        spec_host(sp->text, sp, host);
        why = source_guard_name(host);
    }
    if (why) {
        spec_host(sp->text, sp, host);
        return kgs_seterr(err, errlen, KGS_EINVAL, "host %s is not allowed: %s",
                          kgs_quote(q, sizeof q, host, strlen(host)), why);
    }
    return 0;
}

/* The whole URL, checked. */
static int url_spec(const char *url, unsigned allowed, spec_t *sp, char *err, size_t errlen) {
    memset(sp, 0, sizeof *sp);
    sp->text = url;
    int db = -1;
    int rc = parse_url(url, allowed, sp, &db, err, errlen);
    if (rc == 0)
        rc = finish(sp, err, errlen);
    return rc;
}

int source_url_parse(const char *url, unsigned allowed, source_url_t *out, char *err,
                     size_t errlen) {
    if (!out)
        return kgs_seterr(err, errlen, KGS_EINVAL, "no output struct");
    spec_t sp;
    int rc = url_spec(url, allowed, &sp, err, errlen);
    if (rc)
        memset(out, 0, sizeof *out);
    else
        expand(url, &sp, out);
    return rc;
}

/* The address, checked; *tls and *db as source_addr_parse() says. */
static int addr_spec(const char *addr, spec_t *sp, bool *tls, int *db, char *err, size_t errlen) {
    memset(sp, 0, sizeof *sp);
    sp->text = addr;
    if (!addr || !*addr)
        return kgs_seterr(err, errlen, KGS_EINVAL, "empty address");

    int rc, newdb = -1;
    bool is_url = strstr(addr, "://") != NULL;
    if (is_url) {
        unsigned redis = (1u << SOURCE_SCHEME_REDIS) | (1u << SOURCE_SCHEME_REDISS);
        rc = parse_url(addr, redis, sp, &newdb, err, errlen);
    } else {
        rc = check_bytes(addr, err, errlen);
        if (rc == 0) {
            sp->scheme = SOURCE_SCHEME_REDIS;
            sp->port = scheme_ports[SOURCE_SCHEME_REDIS];
            size_t al = strcspn(addr, "/?#@");
            if (addr[al] == '@')
                rc = kgs_seterr(err, errlen, KGS_EINVAL,
                                "credentials in the address (user:password@) are not allowed: "
                                "keep them in a Kubernetes Secret");
            else if (addr[al] == '/')
                rc = kgs_seterr(err, errlen, KGS_EINVAL,
                                "a Redis address takes no path: a database number needs the "
                                "redis://host:port/N form");
            else if (addr[al])
                rc = kgs_seterr(err, errlen, KGS_EINVAL,
                                "unexpected '%c' in a Redis address (expected host:port, "
                                "[v6]:port or redis://host:port/N)",
                                addr[al]);
            else
                rc = parse_authority(addr, al, sp, err, errlen);
        }
    }
    if (rc == 0)
        rc = finish(sp, err, errlen);
    if (rc)
        return rc;
    if (is_url && tls)
        *tls = sp->scheme == SOURCE_SCHEME_REDISS;
    if (newdb >= 0 && db)
        *db = newdb;
    return 0;
}

int source_addr_parse(const char *addr, source_url_t *out, bool *tls, int *db, char *err,
                      size_t errlen) {
    if (!out)
        return kgs_seterr(err, errlen, KGS_EINVAL, "no output struct");
    spec_t sp;
    int rc = addr_spec(addr, &sp, tls, db, err, errlen);
    if (rc)
        memset(out, 0, sizeof *out);
    else
        expand(addr, &sp, out);
    return rc;
}

/* ---- the compact form ------------------------------------------------------------ */

static void to_ref(const spec_t *sp, source_url_ref_t *out) {
    memset(out, 0, sizeof *out);
    memcpy(out->addr, sp->addr, sizeof out->addr);
    out->host_off = (uint16_t)sp->host_off;
    out->host_len = (uint8_t)sp->host_len;
    out->path_off = (uint16_t)sp->path_off;
    out->path_len = (uint16_t)sp->path_len;
    out->port = sp->port;
    out->scheme = (uint8_t)sp->scheme;
    out->family = (uint8_t)sp->family;
    out->path_slash = sp->path_slash;
}

/* The offsets are 16 bits: refuse what they cannot reach. */
static int check_ref_length(const char *text, char *err, size_t errlen) {
    if (text && strnlen(text, (size_t)UINT16_MAX + 1) > UINT16_MAX)
        return kgs_seterr(err, errlen, KGS_EINVAL, "longer than %u bytes", (unsigned)UINT16_MAX);
    return 0;
}

int source_url_parse_ref(const char *url, unsigned allowed, source_url_ref_t *out, char *err,
                         size_t errlen) {
    if (!out)
        return kgs_seterr(err, errlen, KGS_EINVAL, "no output struct");
    memset(out, 0, sizeof *out);
    spec_t sp;
    int rc = check_ref_length(url, err, errlen);
    if (rc == 0)
        rc = url_spec(url, allowed, &sp, err, errlen);
    if (rc == 0)
        to_ref(&sp, out);
    return rc;
}

int source_addr_parse_ref(const char *addr, source_url_ref_t *out, bool *tls, int *db, char *err,
                          size_t errlen) {
    if (!out)
        return kgs_seterr(err, errlen, KGS_EINVAL, "no output struct");
    memset(out, 0, sizeof *out);
    spec_t sp;
    int rc = check_ref_length(addr, err, errlen);
    if (rc == 0)
        rc = addr_spec(addr, &sp, tls, db, err, errlen);
    if (rc == 0)
        to_ref(&sp, out);
    return rc;
}

void source_url_expand(const char *text, const source_url_ref_t *ref, source_url_t *out) {
    if (ref->host_len == 0) {
        memset(out, 0, sizeof *out);
        return;
    }
    spec_t sp;
    memset(&sp, 0, sizeof sp);
    sp.text = text;
    sp.scheme = (source_scheme_t)ref->scheme;
    sp.family = ref->family;
    memcpy(sp.addr, ref->addr, sizeof sp.addr);
    sp.port = ref->port;
    sp.host_off = ref->host_off;
    sp.host_len = ref->host_len;
    sp.path_off = ref->path_off;
    sp.path_len = ref->path_len;
    sp.path_slash = ref->path_slash != 0;
    expand(text, &sp, out);
}

/* ---- secrets in URLs ------------------------------------------------------------ */

/*
 * Query parameter names whose value is a secret: a name holding any of
 * these, ignoring ASCII case and after percent-decoding, has its value
 * masked ("access_token", "api_key", "X-Amz-Signature", "client_secret",
 * "password", "sessionid", Azure SAS "sig", ...). A name longer than
 * NAME_SCAN_MAX decoded bytes, or holding a NUL, counts as secret too: it
 * is cheaper to mask it than to read it whole.
 */
static const char *const secret_words[] = {"token", "key",  "secret", "pass",    "pwd",   "auth",
                                           "sig",   "cred", "jwt",    "session", "bearer"};
#define NAME_SCAN_MAX 64

static int hex_value(char c) {
    return is_digit(c) ? c - '0' : to_lower(c) - 'a' + 10;
}

static bool secret_name(const char *p, size_t n) {
    char name[NAME_SCAN_MAX + 1];
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (c == '%' && i + 2 < n && is_hex(p[i + 1]) && is_hex(p[i + 2])) {
            c = (char)(hex_value(p[i + 1]) << 4 | hex_value(p[i + 2]));
            i += 2;
        }
        if (c == '\0' || o == NAME_SCAN_MAX)
            return true;
        name[o++] = to_lower(c);
    }
    name[o] = '\0';
    for (size_t w = 0; w < sizeof secret_words / sizeof *secret_words; w++)
        if (strstr(name, secret_words[w]))
            return true;
    return false;
}

/* Output written up to cap - 1 bytes and always NUL-terminated (cap > 0);
 * len counts everything, as snprintf's return value does. */
typedef struct {
    char *out;
    size_t cap, len;
} redact_sink_t;

static void sink_put(redact_sink_t *s, const char *p, size_t n) {
    if (s->cap > 0 && s->len < s->cap - 1) {
        size_t room = s->cap - 1 - s->len;
        memcpy(s->out + s->len, p, n < room ? n : room);
    }
    s->len += n;
}

/*
 * The userinfo to hide in the region p[r..): a region is a run without '/',
 * '?' or '#', so an authority is always all of one. The region is taken as
 * an authority when it starts the text (a bare "u:pw@host:6379") or follows
 * "//", and an entry of a comma list starts after each ','; the userinfo
 * ends at the region's last '@'. What is hidden is the password (after the
 * first ':') when the userinfo has one, else all of it: a lone userinfo is
 * often a token ("https://TOKEN@host"). Sets [*lo, *hi) to the bytes to
 * hide (empty when none).
 */
static void userinfo_span(const char *p, size_t n, size_t r, size_t *lo, size_t *hi) {
    size_t e = r, at = n;
    while (e < n && p[e] != '/' && p[e] != '?' && p[e] != '#') {
        if (p[e] == '@')
            at = e;
        e++;
    }
    *lo = *hi = 0;
    if (at == n)
        return;
    /* The first authority start at or before the '@': later ones could
     * only hide less (see the test of a comma inside a password). */
    size_t s = n;
    if (r == 0 || (r >= 2 && p[r - 1] == '/' && p[r - 2] == '/')) {
        s = r;
    } else {
        const char *comma = memchr(p + r, ',', at - r);
        if (comma)
            s = (size_t)(comma - p) + 1;
    }
    if (s > at)
        return;
    const char *colon = memchr(p + s, ':', at - s);
    *lo = colon ? (size_t)(colon - p) + 1 : s;
    *hi = at;
}

/* The part of the query component p[a..) (it ends at '&', ';', '#' or the
 * end of the text) to hide: a secret-named value, or a whole component
 * without '=' (a bare token). */
static void query_span(const char *p, size_t n, size_t a, size_t *lo, size_t *hi) {
    size_t e = a, eq = n;
    while (e < n && p[e] != '&' && p[e] != ';' && p[e] != '#') {
        if (p[e] == '=' && eq == n)
            eq = e;
        e++;
    }
    *lo = *hi = 0;
    if (eq == n) {
        *lo = a;
        *hi = e;
    } else if (eq + 1 < e && secret_name(p + a, eq - a)) {
        *lo = eq + 1;
        *hi = e;
    }
}

size_t source_url_redact(const char *text, size_t n, char *out, size_t outcap) {
    redact_sink_t s = {out, outcap, 0};
    const char *p = text ? text : "";
    if (!text)
        n = 0;
    bool reg_open = false, in_query = false, comp_open = false, hiding = false;
    size_t ui_lo = 0, ui_hi = 0, q_lo = 0, q_hi = 0;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        bool delim = c == '/' || c == '?' || c == '#';
        bool qdelim = in_query && (c == '&' || c == ';' || c == '#');
        if (!delim && !reg_open) {
            userinfo_span(p, n, i, &ui_lo, &ui_hi);
            reg_open = true;
        }
        if (in_query && !qdelim && !comp_open) {
            query_span(p, n, i, &q_lo, &q_hi);
            comp_open = true;
        }
        bool hide = (reg_open && i >= ui_lo && i < ui_hi) || (comp_open && i >= q_lo && i < q_hi);
        if (hide) {
            if (!hiding)
                sink_put(&s, "***", 3);
        } else {
            sink_put(&s, &c, 1);
        }
        hiding = hide;
        if (delim)
            reg_open = false;
        if (qdelim)
            comp_open = false;
        if (!in_query && (c == '?' || c == '#'))
            in_query = true;
    }
    if (outcap > 0)
        out[s.len < outcap ? s.len : outcap - 1] = '\0';
    return s.len;
}

const char *source_url_quote(char *buf, size_t buflen, const char *text, size_t n) {
    /* One byte past what kgs_quote() shows, so that it still says "...". */
    char tmp[KGS_QUOTE_MAX + 2];
    size_t len = source_url_redact(text, n, tmp, sizeof tmp);
    return kgs_quote(buf, buflen, tmp, len < sizeof tmp - 1 ? len : sizeof tmp - 1);
}
