/*
 * fuzz_source_url.c - source_url_parse(), source_addr_parse() and the SSRF
 * guard on arbitrary bytes. The input, cut at its first NUL, is parsed as a
 * URL (all schemes, and http(s) only) and as a Redis address; its first 4
 * and 16 bytes are also used as raw IPv4 and IPv6 addresses.
 *
 * Checked:
 *   - failure: KGS_EINVAL, a non-empty message, the struct zeroed;
 *   - success: host non-empty, lower-case, within SOURCE_HOST_MAX; port != 0;
 *     host_is_ip agrees with family; host_header is host:port ([v6]:port);
 *     an http(s) path starts with '/' and fits SOURCE_PATH_MAX, a redis path
 *     is empty; the guard passes the host (name or literal); a URL rebuilt
 *     from the parts parses to identical bytes;
 *   - accepting fewer schemes never changes a successful result;
 *   - a Redis address: the scheme is redis(s), *tls and *db are written only
 *     for URLs (db 0..15), and "host:port" rebuilt parses to identical bytes;
 *   - the parser and the guard agree: a raw address is accepted as a literal
 *     exactly when source_guard_addr() allows it;
 *   - source_url_redact() reports the length it writes (at most 3 per input
 *     byte), gives a smaller buffer a prefix of it, and its quote is bounded.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "core/err.h"
#include "core/source_url.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ALL_SCHEMES 0xfu
#define HTTP_ONLY ((1u << SOURCE_SCHEME_HTTP) | (1u << SOURCE_SCHEME_HTTPS))
#define INPUT_MAX 4096

static const char *const scheme_names[] = {"http", "https", "redis", "rediss"};
static const source_url_t zero_url;

static void check_failure(int rc, const char *err, const source_url_t *u) {
    FUZZ_CHECK(rc == KGS_EINVAL);
    FUZZ_CHECK(err[0] != '\0');
    FUZZ_CHECK(memcmp(u, &zero_url, sizeof *u) == 0);
}

static void check_host_header(const source_url_t *u) {
    char want[sizeof u->host_header + 8];
    snprintf(want, sizeof want, u->family == AF_INET6 ? "[%s]:%u" : "%s:%u", u->host,
             (unsigned)u->port);
    FUZZ_CHECK(strcmp(want, u->host_header) == 0);
}

static void check_guard_passes(const source_url_t *u) {
    if (!u->host_is_ip) {
        FUZZ_CHECK(source_guard_name(u->host) == NULL);
        return;
    }
    if (u->family == AF_INET) {
        struct sockaddr_in in;
        memset(&in, 0, sizeof in);
        in.sin_family = AF_INET;
        FUZZ_CHECK(inet_pton(AF_INET, u->host, &in.sin_addr) == 1);
        FUZZ_CHECK(source_guard_addr((const struct sockaddr *)&in, sizeof in) == NULL);
    } else {
        struct sockaddr_in6 in6;
        memset(&in6, 0, sizeof in6);
        in6.sin6_family = AF_INET6;
        FUZZ_CHECK(inet_pton(AF_INET6, u->host, &in6.sin6_addr) == 1);
        FUZZ_CHECK(source_guard_addr((const struct sockaddr *)&in6, sizeof in6) == NULL);
    }
}

static void check_parts(const source_url_t *u) {
    size_t hl = strnlen(u->host, sizeof u->host);
    FUZZ_CHECK(hl > 0 && hl <= SOURCE_HOST_MAX);
    for (size_t i = 0; i < hl; i++)
        FUZZ_CHECK(!(u->host[i] >= 'A' && u->host[i] <= 'Z'));
    FUZZ_CHECK(u->port != 0);
    FUZZ_CHECK(u->host_is_ip == (u->family != AF_UNSPEC));
    FUZZ_CHECK(u->family == AF_UNSPEC || u->family == AF_INET || u->family == AF_INET6);
    size_t pl = strnlen(u->path, sizeof u->path);
    FUZZ_CHECK(pl <= SOURCE_PATH_MAX);
    if (u->scheme == SOURCE_SCHEME_HTTP || u->scheme == SOURCE_SCHEME_HTTPS)
        FUZZ_CHECK(u->path[0] == '/');
    else
        FUZZ_CHECK(u->scheme <= SOURCE_SCHEME_REDISS && pl == 0);
    check_host_header(u);
    check_guard_passes(u);
}

/* "scheme://host:port/path" from the parts, parsed again. */
static void check_rebuilt_url(const source_url_t *u) {
    static char rebuilt[SOURCE_HOST_MAX + SOURCE_PATH_MAX + 64];
    static source_url_t again;
    char err[512];
    snprintf(rebuilt, sizeof rebuilt, u->family == AF_INET6 ? "%s://[%s]:%u%s" : "%s://%s:%u%s",
             scheme_names[u->scheme], u->host, (unsigned)u->port, u->path);
    int rc = source_url_parse(rebuilt, ALL_SCHEMES, &again, err, sizeof err);
    FUZZ_CHECK(rc == 0);
    FUZZ_CHECK(memcmp(u, &again, sizeof *u) == 0);
}

/* The compact parse (rc, err: the full parse's outcome; full: its result)
 * agrees, and its ref expanded gives the full parse's bytes. */
static void check_ref(const char *s, bool addr, int rc, const char *err, const source_url_t *full) {
    static source_url_t expanded;
    source_url_ref_t r;
    char rerr[512] = "";
    bool tls = true;
    int db = -7;
    int rrc = addr ? source_addr_parse_ref(s, &r, &tls, &db, rerr, sizeof rerr)
                   : source_url_parse_ref(s, ALL_SCHEMES, &r, rerr, sizeof rerr);
    if (strlen(s) > UINT16_MAX) {
        FUZZ_CHECK(rrc != 0);
        return;
    }
    FUZZ_CHECK(rrc == rc && strcmp(rerr, err) == 0);
    if (rc != 0)
        return;
    source_url_expand(s, &r, &expanded);
    FUZZ_CHECK(memcmp(&expanded, full, sizeof expanded) == 0);
}

static void fuzz_url(const char *s) {
    static source_url_t u, narrow;
    char err[512] = "", err2[512] = "";
    int rc = source_url_parse(s, ALL_SCHEMES, &u, err, sizeof err);
    int rc2 = source_url_parse(s, HTTP_ONLY, &narrow, err2, sizeof err2);
    check_ref(s, false, rc, err, &u);
    if (rc2 == 0) {
        FUZZ_CHECK(rc == 0);
        FUZZ_CHECK(memcmp(&u, &narrow, sizeof u) == 0);
    } else {
        check_failure(rc2, err2, &narrow);
    }
    if (rc != 0) {
        check_failure(rc, err, &u);
        return;
    }
    if (u.scheme == SOURCE_SCHEME_HTTP || u.scheme == SOURCE_SCHEME_HTTPS)
        FUZZ_CHECK(rc2 == 0);
    check_parts(&u);
    check_rebuilt_url(&u);
}

static void fuzz_addr(const char *s) {
    static source_url_t u, again;
    char err[512] = "";
    bool tls = true;
    int db = -7;
    int rc = source_addr_parse(s, &u, &tls, &db, err, sizeof err);
    check_ref(s, true, rc, err, &u);
    if (rc != 0) {
        check_failure(rc, err, &u);
        FUZZ_CHECK(tls && db == -7);
        return;
    }
    FUZZ_CHECK(u.scheme == SOURCE_SCHEME_REDIS || u.scheme == SOURCE_SCHEME_REDISS);
    check_parts(&u);
    bool is_url = strstr(s, "://") != NULL;
    if (is_url) {
        FUZZ_CHECK(tls == (u.scheme == SOURCE_SCHEME_REDISS));
        FUZZ_CHECK(db == -7 || (db >= 0 && db <= 15));
    } else {
        FUZZ_CHECK(u.scheme == SOURCE_SCHEME_REDIS && tls && db == -7);
    }
    /* the bare form of the same address */
    FUZZ_CHECK(source_addr_parse(u.host_header, &again, NULL, NULL, err, sizeof err) == 0);
    again.scheme = u.scheme;
    FUZZ_CHECK(memcmp(&u, &again, sizeof u) == 0);
    check_rebuilt_url(&u);
}

/* A raw address is a valid URL host exactly when the guard allows it. */
static void fuzz_guard(const uint8_t *data, size_t size) {
    char text[INET6_ADDRSTRLEN], url[INET6_ADDRSTRLEN + 16], err[512];
    static source_url_t u;
    if (size >= 4) {
        struct sockaddr_in in;
        memset(&in, 0, sizeof in);
        in.sin_family = AF_INET;
        memcpy(&in.sin_addr, data, 4);
        const char *why = source_guard_addr((const struct sockaddr *)&in, sizeof in);
        FUZZ_CHECK(inet_ntop(AF_INET, &in.sin_addr, text, sizeof text) != NULL);
        snprintf(url, sizeof url, "http://%s/", text);
        int rc = source_url_parse(url, HTTP_ONLY, &u, err, sizeof err);
        FUZZ_CHECK((rc == 0) == (why == NULL));
        if (why)
            FUZZ_CHECK(strstr(err, why) != NULL);
    }
    if (size >= 16) {
        struct sockaddr_in6 in6;
        memset(&in6, 0, sizeof in6);
        in6.sin6_family = AF_INET6;
        memcpy(&in6.sin6_addr, data, 16);
        const char *why = source_guard_addr((const struct sockaddr *)&in6, sizeof in6);
        FUZZ_CHECK(inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof text) != NULL);
        snprintf(url, sizeof url, "http://[%s]/", text);
        int rc = source_url_parse(url, HTTP_ONLY, &u, err, sizeof err);
        FUZZ_CHECK((rc == 0) == (why == NULL));
        if (why)
            FUZZ_CHECK(strstr(err, why) != NULL);
        else
            FUZZ_CHECK(memcmp(u.host, text, strlen(text) + 1) == 0);
    }
}

/* The masking of secrets, on any bytes (NULs included): the length it
 * reports is what it writes when there is room, at most 3 bytes for each
 * one in; a smaller buffer gets a prefix of the same text, NUL-terminated;
 * and the quote form is bounded. */
static void fuzz_redact(const uint8_t *data, size_t size) {
    static char full[3 * INPUT_MAX + 1];
    char small[40];
    size_t n = size < INPUT_MAX ? size : INPUT_MAX;
    const char *in = (const char *)data;
    size_t len = source_url_redact(in, n, full, sizeof full);
    FUZZ_CHECK(len <= 3 * n);
    FUZZ_CHECK(full[len] == '\0');
    size_t slen = source_url_redact(in, n, small, sizeof small);
    FUZZ_CHECK(slen == len);
    size_t shown = len < sizeof small - 1 ? len : sizeof small - 1;
    FUZZ_CHECK(small[shown] == '\0' && memcmp(small, full, shown) == 0);
    char q[KGS_QUOTE_BUF];
    source_url_quote(q, sizeof q, in, n);
    FUZZ_CHECK(strlen(q) < sizeof q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char s[INPUT_MAX + 1];
    size_t n = size < INPUT_MAX ? size : INPUT_MAX;
    memcpy(s, data, n);
    s[n] = '\0';

    fuzz_url(s);
    fuzz_addr(s);
    (void)source_guard_name(s);
    fuzz_guard(data, size);
    fuzz_redact(data, size);
    return 0;
}
