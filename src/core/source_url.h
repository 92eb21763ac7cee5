/*
 * source_url.h - strict parsing of the engine URLs and Redis addresses that
 * users put in trigger metadata, and the SSRF guard applied to them.
 *
 * The scaler runs with access to the cluster network and is told where to
 * connect by whoever can write a ScaledObject. So a user-supplied endpoint
 * must never reach a cloud metadata service (instance credentials), and
 * must mean exactly one thing: anything a lenient parser, the resolver or
 * an HTTP server could read differently is refused rather than guessed.
 * The Go scaler we replace checked only IP literals, never resolved names
 * and followed redirects (anchor section 1.9). The defence here has three
 * layers, and callers own the last two:
 *   1. parse time: source_url_parse() / source_addr_parse() refuse guarded
 *      names (source_guard_name) and guarded IP literals (source_guard_addr);
 *   2. connect time: every address getaddrinfo() returns goes through
 *      source_guard_addr() right before connect(), so a name that resolves
 *      (or is rebound) to a metadata address is still refused;
 *   3. redirects are never followed.
 *
 * Refused addresses (source_guard_addr), with where each comes from:
 *   0.0.0.0/8            "this network"; 0.0.0.0 reaches local listeners (RFC 1122 3.2.1.3)
 *   169.254.0.0/16       link-local (RFC 3927): IMDS of AWS, GCP, Azure and Oracle OCI at
 *                        169.254.169.254 (docs.aws.amazon.com IMDS, cloud.google.com metadata,
 *                        learn.microsoft.com instance-metadata-service, docs.oracle.com
 *                        gettingmetadata.htm), AWS ECS task metadata 169.254.170.2, EKS Pod
 *                        Identity agent 169.254.170.23 (docs.aws.amazon.com pod-id-agent-setup)
 *   100.100.100.200      Alibaba Cloud ECS metadata (alibabacloud.com view-instance-metadata)
 *   192.0.0.192          Oracle Cloud Classic metadata (legacy; SSRF block lists, no vendor
 *                        page found); 192.0.0.0/24 holds no ordinary hosts (RFC 6890)
 *   168.63.129.16        Azure WireServer, the host-node platform endpoint (learn.microsoft.com
 *                        what-is-ip-address-168-63-129-16)
 *   224.0.0.0/4          multicast; 255.255.255.255 broadcast
 *   ::                   unspecified
 *   fe80::/10            link-local; ff00::/8 multicast
 *   fd00:ec2::254        AWS IMDS over IPv6 (AWS SDK EndpointMode IpV6)
 *   fd00:ec2::23         Amazon EKS Pod Identity agent over IPv6 (pod-id-agent-setup)
 *   fd20:ce::254         GCE metadata server over IPv6 (secondary source only)
 *   fd00:c1::a9fe:a9fe   Oracle OCI IMDS over IPv6 (secondary source only)
 *   and every refused IPv4 address in an IPv6 spelling: IPv4-mapped ::ffff:a.b.c.d,
 *   IPv4-translated ::ffff:0:a.b.c.d, IPv4-compatible ::a.b.c.d (but ::1 is loopback), NAT64
 *   64:ff9b::/96 and the local-use 64:ff9b:1::/48 (RFC 6052/8215; there every prefix length
 *   is tried, and 0.0.0.0/8 is not refused because zero octets read as it), and 6to4 2002::/16.
 * Allowed: loopback 127.0.0.0/8 and ::1 (a sidecar engine in the same pod), RFC 1918, CGNAT,
 * 240.0.0.0/4 (GKE can use it for pods), ULA fc00::/7 apart from the addresses above, public.
 * Refused names (source_guard_name): see below.
 *
 * Pure: no I/O, no allocation, no globals. Any thread may call any function.
 */
#ifndef KGS_CORE_SOURCE_URL_H
#define KGS_CORE_SOURCE_URL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define SOURCE_HOST_MAX 253
#define SOURCE_PATH_MAX 1024

typedef enum {
    SOURCE_SCHEME_HTTP,
    SOURCE_SCHEME_HTTPS,
    SOURCE_SCHEME_REDIS,
    SOURCE_SCHEME_REDISS,
} source_scheme_t;

/* A parsed endpoint. All fields are public and read-only; the storage is
 * the caller's and holds no pointers. Parsing zeroes it first, so two
 * parses of equivalent input compare equal with memcmp. */
typedef struct {
    source_scheme_t scheme;
    char host[SOURCE_HOST_MAX + 1]; /* lower-cased name (a trailing dot kept), or IP literal
                                       without brackets; IPv6 in inet_ntop's canonical form */
    bool host_is_ip;                /* IPv4 dotted quad or IPv6 literal */
    int family;                     /* AF_INET/AF_INET6 when host_is_ip, else AF_UNSPEC */
    uint16_t port;                  /* explicit, or the scheme's default: 80, 443, 6379, 6379 */
    char path[SOURCE_PATH_MAX + 1]; /* HTTP(S): path + "?query" as given, "/" when empty;
                                       redis: "" */
    char host_header[SOURCE_HOST_MAX + 10]; /* "host:port" / "[v6]:port": what goes in Host: */
} source_url_t;

/*
 * The same parse in compact form, for storage that many copies hold (the
 * trigger config keeps 17 of these): where host and path lie in the text it
 * was parsed from, and what parsing found. The text itself is not copied:
 * the holder keeps it beside the ref (any copy of the same bytes will do)
 * and source_url_expand() gives the full source_url_t from the two, without
 * parsing or checking anything again. 28 bytes and no pointers, so a struct
 * holding text and ref can be copied with `=`. Parsing zeroes it first (two
 * parses of the same text compare equal with memcmp). A zero ref (host_len
 * 0: no parse ever gives that) expands to the zero source_url_t.
 */
typedef struct {
    uint8_t addr[16];  /* family AF_INET: the address in addr[0..4), AF_INET6: addr[0..16),
                          network order (SSRF-checked: connect to it as it is) */
    uint16_t host_off; /* the host as written: text[host_off .. +host_len), no brackets */
    uint16_t path_off; /* http(s): path and query as given, text[path_off .. +path_len) */
    uint16_t path_len;
    uint16_t port;      /* explicit, or the scheme's default */
    uint8_t host_len;   /* at most SOURCE_HOST_MAX; IPv6 literals at most 45 */
    uint8_t scheme;     /* source_scheme_t */
    uint8_t family;     /* AF_UNSPEC (a name), AF_INET or AF_INET6 */
    uint8_t path_slash; /* http(s): a "/" goes first (the path is empty or starts with '?') */
} source_url_ref_t;

/*
 * Parses an absolute URL "scheme://host[:port][/path][?query]". `allowed` is
 * a bitmask of (1u << scheme) naming the schemes the caller accepts; scheme
 * names match case-insensitively. For http(s) the path and query are kept
 * as given. For redis(s) the path may only be empty, "/" or a database
 * "/0".."/15" (validated, not stored: source_addr_parse() reports it) and a
 * query is refused.
 *
 * Returns 0, or KGS_EINVAL with a message in err (NULL allowed) naming the
 * problem but not the trigger key (the caller prefixes it). The message
 * never repeats credentials. Refused:
 *   - NULL or empty input; bytes that are spaces, control or non-ASCII,
 *     anywhere (offset given);
 *   - a missing "://", a scheme outside `allowed` (the message lists the
 *     accepted ones);
 *   - userinfo ("user:pass@": credentials belong in a Secret), a fragment;
 *   - an empty host, percent-encoding in the host, a host that is neither a
 *     DNS name (labels of a-z 0-9 '-' '_', 1-63 bytes, starting and ending
 *     with a letter or digit, 253 bytes in all) nor an IP literal;
 *   - IPv4 literals in any form but a.b.c.d with decimal parts 0-255 and no
 *     leading zeros: a host whose last label is numeric ("127.1", "0x7f.1",
 *     "017.0.0.1", "2130706433") is refused, since inet_aton and therefore
 *     getaddrinfo would read it as some address;
 *   - IPv6 outside brackets, zone ids ("[fe80::1%eth0]"), brackets around
 *     anything but an IPv6 address;
 *   - a port that is empty, not decimal digits, 0 or > 65535;
 *   - in the path or query: '%' not followed by two hex digits, and bytes
 *     RFC 3986 does not allow unencoded (" < > [ \ ] ^ ` { | }: the
 *     message gives the %XX form); a path over SOURCE_PATH_MAX bytes;
 *   - names refused by source_guard_name(), IP literals refused by
 *     source_guard_addr() (the reason is in the message).
 * *out (required) is filled on success and zeroed on failure.
 */
int source_url_parse(const char *url, unsigned allowed, source_url_t *out, char *err,
                     size_t errlen);

/*
 * Parses a Redis address: "host:port", "[v6]:port", "host", "[v6]" (port
 * 6379), or a "redis://" / "rediss://" URL (source_url_parse() rules).
 * Host and port rules are source_url_parse()'s; a bare address takes no path
 * and an unbracketed IPv6 address is refused as ambiguous. For the URL forms
 * *tls is set (true for rediss, false for redis) and a path "/N" sets *db =
 * N (0..15; the message says so for other numbers); a bare address leaves
 * *tls and *db untouched, as does a URL without a database. tls and db may
 * be NULL. out->scheme is SOURCE_SCHEME_REDIS or _REDISS, out->path "".
 * Returns 0 or KGS_EINVAL with a message; *out as for source_url_parse().
 */
int source_addr_parse(const char *addr, source_url_t *out, bool *tls, int *db, char *err,
                      size_t errlen);

/*
 * source_url_parse() and source_addr_parse() with the compact result: the
 * same rules, messages, *tls and *db. *out refers into `url` / `addr`, which
 * the caller keeps (or an identical copy) for source_url_expand(); text
 * longer than 65535 bytes is refused (the offsets are 16 bits). *out
 * (required) is zeroed on failure.
 */
int source_url_parse_ref(const char *url, unsigned allowed, source_url_ref_t *out, char *err,
                         size_t errlen);
int source_addr_parse_ref(const char *addr, source_url_ref_t *out, bool *tls, int *db, char *err,
                          size_t errlen);

/*
 * The full form of a compact parse: *out becomes, byte for byte, what
 * source_url_parse() / source_addr_parse() gave for `text` (the string ref
 * was parsed from, or a copy). Cannot fail and checks nothing: ref must come
 * from a successful *_parse_ref() of exactly this text, or be all zero (then
 * text is not read and *out is all zero). Both borrowed.
 */
void source_url_expand(const char *text, const source_url_ref_t *ref, source_url_t *out);

/*
 * SSRF guard on a host name before resolution. Returns NULL when allowed,
 * else a static reason. Refuses, case-insensitively and with or without one
 * trailing dot: "metadata.google.internal" and anything ending in
 * ".metadata.google.internal", "metadata.goog", "metadata" (GCE resolves it
 * through its search domain; a Service of that name is reached by its full
 * name, e.g. metadata.<namespace>.svc), "instance-data" and
 * "instance-data.ec2.internal" (AWS). NULL or "" is refused too.
 */
const char *source_guard_name(const char *host);

/*
 * SSRF guard on a literal or resolved address: call it on every address
 * right before connect(), so DNS rebinding cannot get around it. Returns
 * NULL when allowed, else a static reason such as "link-local address
 * (169.254.0.0/16), where cloud metadata services live". Refuses the
 * addresses listed at the top of this file; anything that is not a complete
 * AF_INET or AF_INET6 address (sa NULL, len too short, another family) is
 * refused as well. sa is borrowed for the call.
 */
const char *source_guard_addr(const struct sockaddr *sa, socklen_t len);

/*
 * A URL, Redis address or comma list of them with its secrets replaced by
 * "***", for every place that shows one (messages, logs, source names):
 *   - userinfo: the password goes, the user stays ("redis://u:***@host:6379",
 *     "redis://:***@host"); a userinfo without ':' goes whole ("TOKEN@host" becomes
 *     "***@host"), since a lone userinfo is often a token. The userinfo is what comes before
 *     the last '@' of an authority: the part after "//" or at the start of the
 *     text or of a comma-separated entry, up to the first '/', '?' or '#'
 *     (so an '@' in a path or query is not one). Percent-encoding is kept as
 *     it is (masked with the rest);
 *   - query and fragment: the value of a parameter whose name holds token,
 *     key, secret, pass, pwd, auth, sig, cred, jwt, session or bearer
 *     (any case, after percent-decoding: access_token, api_key,
 *     X-Amz-Signature, ...), and any component without '=' (a bare token).
 *     Other parameters stay, so "?pod=0" still tells two endpoints apart.
 * text[0..n) is borrowed and may be any bytes (NULL when n is 0). Writes at
 * most outcap - 1 bytes and a NUL to out (when outcap > 0) and returns the
 * length of the whole result, as snprintf does; it is at most 3 * n.
 * Linear in n; no allocation.
 */
size_t source_url_redact(const char *text, size_t n, char *out, size_t outcap);

/* kgs_quote() of source_url_redact(text, n): what a message quoting a URL
 * or address uses. Writes buf (KGS_QUOTE_BUF bytes hold any input) and
 * returns it. */
const char *source_url_quote(char *buf, size_t buflen, const char *text, size_t n);

#endif
