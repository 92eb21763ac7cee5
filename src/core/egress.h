/*
 * egress.h - the demand sources' egress allow-list: which addresses and
 * ports a source may connect to (--source-allow-cidrs, --source-allow-ports).
 *
 * It narrows what the SSRF guard (source_url.h, source_guard_addr) already
 * allows; it never widens it: an address must pass both. An empty list
 * allows everything (the default: every address the SSRF guard allows, on
 * every port), so a cluster that does not set the flags behaves as before.
 *
 * Pure: no I/O, no allocation, no globals. Any thread may call any function.
 */
#ifndef KGS_CORE_EGRESS_H
#define KGS_CORE_EGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define EGRESS_MAX_CIDRS 64
#define EGRESS_MAX_PORT_RANGES 64

typedef struct {
    uint8_t addr[16]; /* network order; IPv4 in addr[0..4) */
    uint8_t family;   /* AF_INET or AF_INET6 */
    uint8_t prefix;   /* 0-32 or 0-128; host bits are zero */
} egress_cidr_t;

typedef struct {
    uint16_t lo, hi; /* inclusive */
} egress_ports_t;

/* Caller-owned storage; all zero = allow everything. */
typedef struct {
    egress_cidr_t cidrs[EGRESS_MAX_CIDRS];
    unsigned ncidrs; /* 0: any address (that the SSRF guard allows) */
    egress_ports_t ports[EGRESS_MAX_PORT_RANGES];
    unsigned nports; /* 0: any port */
} egress_policy_t;

/*
 * Parses a comma-separated list of CIDRs ("10.0.0.0/8,fd00::/8,192.168.1.7"
 * — a bare address is a /32 or /128) into p->cidrs, replacing what was
 * there. Spaces around entries are allowed; an empty text means "any".
 * Refused with KGS_EINVAL and a message naming the entry and what would be
 * valid: an address inet_pton does not read (IPv4 only as a.b.c.d), a
 * prefix that is not 0-32 / 0-128 decimal, host bits set ("10.0.0.1/8":
 * did you mean 10.0.0.0/8), an empty entry, more than EGRESS_MAX_CIDRS.
 * p is left unchanged on failure.
 */
int egress_parse_cidrs(const char *text, egress_policy_t *p, char *err, size_t errlen);

/*
 * Parses one CIDR, text[0..len) (not NUL-terminated; no spaces), into *out:
 * "10.0.0.0/8", "fd00::/8", or a bare address (a /32 or /128). Refused with
 * KGS_EINVAL and a message quoting the entry (without a flag name: the
 * caller prefixes its own): not an address, a bad prefix, host bits set
 * (with the network meant). *out is written only on success.
 */
int egress_cidr_parse(const char *text, size_t len, egress_cidr_t *out, char *err, size_t errlen);

/* Whether sa (borrowed) lies in one of cidrs[0..n); an IPv4-mapped IPv6
 * address matches as its IPv4 address. False for anything not AF_INET /
 * AF_INET6. */
bool egress_cidr_match(const egress_cidr_t *cidrs, unsigned n, const struct sockaddr *sa,
                       socklen_t len);

/*
 * Parses a comma-separated list of ports and ranges ("80,443,8000-8999")
 * into p->ports, replacing what was there; an empty text means "any".
 * Refused with KGS_EINVAL: a port that is not 1-65535 decimal, a range
 * whose low end exceeds its high end, an empty entry, more than
 * EGRESS_MAX_PORT_RANGES. p is left unchanged on failure.
 */
int egress_parse_ports(const char *text, egress_policy_t *p, char *err, size_t errlen);

/*
 * Whether sa (AF_INET / AF_INET6, borrowed) may be connected to. Returns
 * NULL when allowed, else writes a message to why (NULL allowed) and
 * returns the flag that refused it ("--source-allow-cidrs" or
 * "--source-allow-ports"). The message names the address, its class
 * (egress_addr_class) and the flag: "10.1.2.3:8080 (private, RFC 1918) is
 * not in --source-allow-cidrs". An IPv4-mapped IPv6 address (::ffff:a.b.c.d)
 * is matched as the IPv4 address.
 */
const char *egress_check(const egress_policy_t *p, const struct sockaddr *sa, socklen_t len,
                         char *why, size_t whylen);

/* A short static name of sa's address class: "loopback", "private, RFC 1918",
 * "shared address space (CGNAT), RFC 6598", "link-local", "unique local
 * (IPv6 ULA)", "multicast", "public", ... */
const char *egress_addr_class(const struct sockaddr *sa, socklen_t len);

#endif
