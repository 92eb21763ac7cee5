/*
 * egress.c - parsing and matching the sources' egress allow-list (see the
 * header). Linear scans: at most 64 entries each, once per poll.
 */
#include "core/egress.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "core/err.h"

/* The comma-separated entry starting at s, spaces trimmed: [*b, *e).
 * Returns where the next entry starts, or NULL after the last. */
static const char *entry(const char *s, const char **b, const char **e) {
    const char *comma = strchr(s, ',');
    const char *end = comma ? comma : s + strlen(s);
    while (s < end && (*s == ' ' || *s == '\t'))
        s++;
    while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    *b = s;
    *e = end;
    return comma ? comma + 1 : NULL;
}

static bool blank(const char *text) {
    for (; *text; text++)
        if (*text != ' ' && *text != '\t')
            return false;
    return true;
}

/* A decimal number of at most `digits` digits in [b, e), or -1. */
static long decimal(const char *b, const char *e, unsigned digits) {
    if (b == e || (size_t)(e - b) > digits)
        return -1;
    long v = 0;
    for (; b < e; b++) {
        if (*b < '0' || *b > '9')
            return -1;
        v = v * 10 + (*b - '0');
    }
    return v;
}

int egress_cidr_parse(const char *text, size_t len, egress_cidr_t *out, char *err, size_t errlen) {
    const char *b = text, *e = text + len;
    int n = len > 80 ? 80 : (int)len;
    char a[64];
    const char *slash = memchr(b, '/', len);
    const char *aend = slash ? slash : e;
    if ((size_t)(aend - b) >= sizeof a)
        return kgs_seterr(err, errlen, KGS_EINVAL, "\"%.*s\": not an IPv4 or IPv6 address", n, b);
    memcpy(a, b, (size_t)(aend - b));
    a[aend - b] = '\0';
    egress_cidr_t c;
    memset(&c, 0, sizeof c);
    unsigned max;
    if (inet_pton(AF_INET, a, c.addr) == 1) {
        c.family = AF_INET;
        max = 32;
    } else if (strchr(a, ':') && inet_pton(AF_INET6, a, c.addr) == 1) {
        c.family = AF_INET6;
        max = 128;
    } else {
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "\"%.*s\": not an IPv4 (a.b.c.d) or IPv6 address", n, b);
    }
    long pre = max;
    if (slash) {
        pre = decimal(slash + 1, e, 3);
        if (pre < 0 || pre > (long)max)
            return kgs_seterr(err, errlen, KGS_EINVAL, "\"%.*s\": prefix length must be 0-%u", n, b,
                              max);
    }
    c.prefix = (uint8_t)pre;
    for (unsigned bit = (unsigned)pre; bit < max; bit++)
        if (c.addr[bit / 8] & (0x80u >> (bit % 8))) {
            uint8_t net[16];
            memcpy(net, c.addr, sizeof net);
            for (unsigned k = (unsigned)pre; k < max; k++)
                net[k / 8] &= (uint8_t) ~(0x80u >> (k % 8));
            char ns[INET6_ADDRSTRLEN];
            inet_ntop(c.family, net, ns, sizeof ns);
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "\"%.*s\": host bits set (did you mean %s/%ld?)", n, b, ns, pre);
        }
    *out = c;
    return 0;
}

int egress_parse_cidrs(const char *text, egress_policy_t *p, char *err, size_t errlen) {
    egress_cidr_t out[EGRESS_MAX_CIDRS];
    unsigned n = 0;
    if (!text || blank(text)) {
        p->ncidrs = 0;
        return 0;
    }
    const char *b, *e;
    for (const char *at = text; at;) {
        at = entry(at, &b, &e);
        if (e == b)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "--source-allow-cidrs: empty entry (expected CIDRs such as "
                              "10.0.0.0/8,fd00::/8, separated by commas)");
        if (n == EGRESS_MAX_CIDRS)
            return kgs_seterr(err, errlen, KGS_EINVAL, "--source-allow-cidrs: more than %d entries",
                              EGRESS_MAX_CIDRS);
        char why[200];
        if (egress_cidr_parse(b, (size_t)(e - b), &out[n], why, sizeof why) != 0)
            return kgs_seterr(err, errlen, KGS_EINVAL, "--source-allow-cidrs: %s", why);
        n++;
    }
    memcpy(p->cidrs, out, n * sizeof out[0]);
    p->ncidrs = n;
    return 0;
}

int egress_parse_ports(const char *text, egress_policy_t *p, char *err, size_t errlen) {
    egress_ports_t out[EGRESS_MAX_PORT_RANGES];
    unsigned n = 0;
    if (!text || blank(text)) {
        p->nports = 0;
        return 0;
    }
    const char *b, *e;
    for (const char *at = text; at;) {
        at = entry(at, &b, &e);
        int len = (int)(e - b);
        if (len == 0)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "--source-allow-ports: empty entry (expected ports and ranges "
                              "such as 80,443,8000-8999)");
        if (n == EGRESS_MAX_PORT_RANGES)
            return kgs_seterr(err, errlen, KGS_EINVAL, "--source-allow-ports: more than %d entries",
                              EGRESS_MAX_PORT_RANGES);
        const char *dash = memchr(b, '-', (size_t)(e - b));
        long lo = decimal(b, dash ? dash : e, 5);
        long hi = dash ? decimal(dash + 1, e, 5) : lo;
        if (lo < 1 || lo > 65535 || hi < 1 || hi > 65535)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "--source-allow-ports: \"%.*s\": expected a port 1-65535 or a "
                              "range LOW-HIGH",
                              len > 80 ? 80 : len, b);
        if (lo > hi)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "--source-allow-ports: \"%.*s\": the range ends below its start",
                              len > 80 ? 80 : len, b);
        out[n++] = (egress_ports_t){(uint16_t)lo, (uint16_t)hi};
    }
    memcpy(p->ports, out, n * sizeof out[0]);
    p->nports = n;
    return 0;
}

/* sa as (family, 16 address bytes, port); an IPv4-mapped IPv6 address
 * becomes IPv4. False for anything else. */
static bool unpack(const struct sockaddr *sa, socklen_t len, int *fam, uint8_t a[16],
                   uint16_t *port) {
    memset(a, 0, 16);
    if (!sa)
        return false;
    if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *v4 = (const struct sockaddr_in *)(const void *)sa;
        memcpy(a, &v4->sin_addr, 4);
        *port = ntohs(v4->sin_port);
        *fam = AF_INET;
        return true;
    }
    if (sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)(const void *)sa;
        static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        *port = ntohs(v6->sin6_port);
        if (memcmp(v6->sin6_addr.s6_addr, mapped, 12) == 0) {
            memcpy(a, v6->sin6_addr.s6_addr + 12, 4);
            *fam = AF_INET;
        } else {
            memcpy(a, v6->sin6_addr.s6_addr, 16);
            *fam = AF_INET6;
        }
        return true;
    }
    return false;
}

static bool in_prefix(const uint8_t *a, const uint8_t *net, unsigned prefix) {
    unsigned full = prefix / 8, rest = prefix % 8;
    if (memcmp(a, net, full) != 0)
        return false;
    if (!rest)
        return true;
    uint8_t mask = (uint8_t)(0xffu << (8 - rest));
    return (a[full] & mask) == (net[full] & mask);
}

const char *egress_addr_class(const struct sockaddr *sa, socklen_t len) {
    int fam;
    uint8_t a[16];
    uint16_t port;
    if (!unpack(sa, len, &fam, a, &port))
        return "not an IP address";
    if (fam == AF_INET) {
        static const struct {
            uint8_t net[4];
            unsigned prefix;
            const char *name;
        } v4[] = {
            {{127, 0, 0, 0}, 8, "loopback"},
            {{10, 0, 0, 0}, 8, "private, RFC 1918"},
            {{172, 16, 0, 0}, 12, "private, RFC 1918"},
            {{192, 168, 0, 0}, 16, "private, RFC 1918"},
            {{100, 64, 0, 0}, 10, "shared address space (CGNAT), RFC 6598"},
            {{169, 254, 0, 0}, 16, "link-local"},
            {{0, 0, 0, 0}, 8, "\"this network\""},
            {{224, 0, 0, 0}, 4, "multicast"},
            {{240, 0, 0, 0}, 4, "reserved (240.0.0.0/4)"},
        };
        for (size_t i = 0; i < sizeof v4 / sizeof v4[0]; i++)
            if (in_prefix(a, v4[i].net, v4[i].prefix))
                return v4[i].name;
        return "public";
    }
    static const uint8_t loop6[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    if (memcmp(a, loop6, 16) == 0)
        return "loopback";
    if ((a[0] & 0xfe) == 0xfc)
        return "unique local (IPv6 ULA)";
    if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
        return "link-local";
    if (a[0] == 0xff)
        return "multicast";
    return "public";
}

bool egress_cidr_match(const egress_cidr_t *cidrs, unsigned n, const struct sockaddr *sa,
                       socklen_t len) {
    int fam;
    uint8_t a[16];
    uint16_t port;
    if (!unpack(sa, len, &fam, a, &port))
        return false;
    for (unsigned i = 0; i < n; i++)
        if (cidrs[i].family == fam && in_prefix(a, cidrs[i].addr, cidrs[i].prefix))
            return true;
    return false;
}

const char *egress_check(const egress_policy_t *p, const struct sockaddr *sa, socklen_t len,
                         char *why, size_t whylen) {
    int fam;
    uint8_t a[16];
    uint16_t port;
    char ip[INET6_ADDRSTRLEN] = "?";
    if (!unpack(sa, len, &fam, a, &port)) {
        if (why && whylen)
            snprintf(why, whylen, "not an IPv4 or IPv6 address (--source-allow-cidrs)");
        return "--source-allow-cidrs";
    }
    inet_ntop(fam, a, ip, sizeof ip);
    bool v6 = fam == AF_INET6;
    if (p->ncidrs) {
        if (!egress_cidr_match(p->cidrs, p->ncidrs, sa, len)) {
            if (why && whylen)
                snprintf(why, whylen, "%s%s%s:%u (%s) is not in --source-allow-cidrs",
                         v6 ? "[" : "", ip, v6 ? "]" : "", (unsigned)port,
                         egress_addr_class(sa, len));
            return "--source-allow-cidrs";
        }
    }
    if (p->nports) {
        bool ok = false;
        for (unsigned i = 0; i < p->nports && !ok; i++)
            ok = port >= p->ports[i].lo && port <= p->ports[i].hi;
        if (!ok) {
            if (why && whylen)
                snprintf(why, whylen, "%s%s%s:%u (%s): port %u is not in --source-allow-ports",
                         v6 ? "[" : "", ip, v6 ? "]" : "", (unsigned)port,
                         egress_addr_class(sa, len), (unsigned)port);
            return "--source-allow-ports";
        }
    }
    return NULL;
}
