/*
 * fuzz_source_auth.c - source_auth_parse() (the --source-auth text) and
 * bearer_token_check() (a token file's bytes, at the profiles' limit) on arbitrary bytes.
 *
 * The input, cut at its first NUL, is parsed as profiles. On success every
 * profile must be well formed: a valid name given once, absolute paths
 * without control characters, cert and key together, some credential,
 * namespaces (or *) that source_auth_allows() then admits,
 * source_auth_find() finding each, and a credential bound to some
 * destination, each host of which source_auth_host_allowed() admits. On
 * failure the code must be EINVAL and the set unchanged. The input is
 * also parsed as --allow-cross-namespace (core/tenant.h): accepted, every
 * pair is allowed and no namespace is ever refused its own pods; refused,
 * EINVAL and the set unchanged. The whole input is also checked as a token: accepted,
 * it is printable ASCII without spaces, within the limit; refused, the
 * message quotes none of it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/bearer_token.h"
#include "core/err.h"
#include "core/source_auth.h"
#include "core/tenant.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool clean_path(const char *p) {
    if (!p[0])
        return true;
    if (p[0] != '/')
        return false;
    for (; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return false;
    return true;
}

static source_auth_set_t set;
static tenant_cross_ns_t cross;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    memset(&set, 0, sizeof set);
    set.n = 1; /* a marker: unchanged on failure */
    char err[512] = "";
    int rc = source_auth_parse(s, &set, err, sizeof err);
    if (rc == 0) {
        FUZZ_CHECK(set.n <= SOURCE_AUTH_MAX_PROFILES);
        for (unsigned i = 0; i < set.n; i++) {
            const source_auth_profile_t *p = &set.p[i];
            FUZZ_CHECK(source_auth_name_valid(p->name, strlen(p->name)));
            FUZZ_CHECK(source_auth_find(&set, p->name) == p);
            FUZZ_CHECK(clean_path(p->token_file) && clean_path(p->ca_file) &&
                       clean_path(p->cert_file) && clean_path(p->key_file));
            FUZZ_CHECK(!p->cert_file[0] == !p->key_file[0]);
            FUZZ_CHECK(p->token_file[0] || p->ca_file[0] || p->cert_file[0]);
            FUZZ_CHECK(p->all_namespaces || (p->nns > 0 && p->nns <= SOURCE_AUTH_MAX_NAMESPACES));
            for (unsigned k = 0; k < p->nns; k++)
                FUZZ_CHECK(source_auth_allows(p, p->ns[k]));
            FUZZ_CHECK(!source_auth_has_credential(p) || p->nhosts || p->ncidrs ||
                       p->pods_own_namespace);
            FUZZ_CHECK(p->nhosts <= SOURCE_AUTH_MAX_HOSTS && p->ncidrs <= SOURCE_AUTH_MAX_CIDRS);
            for (unsigned k = 0; k < p->nhosts; k++)
                if (p->hosts[k][0] != '*')
                    FUZZ_CHECK(source_auth_host_allowed(p, p->hosts[k]));
        }
    } else {
        FUZZ_CHECK(rc == KGS_EINVAL);
        FUZZ_CHECK(set.n == 1);
        FUZZ_CHECK(err[0] != '\0');
    }
    memset(&cross, 0, sizeof cross);
    cross.n = 1; /* a marker: unchanged on failure */
    err[0] = '\0';
    rc = tenant_cross_ns_parse(s, &cross, err, sizeof err);
    if (rc == 0) {
        FUZZ_CHECK(cross.n <= TENANT_MAX_CROSS);
        for (unsigned i = 0; i < cross.n; i++) {
            FUZZ_CHECK(tenant_cross_ns_allows(&cross, cross.pair[i].src, cross.pair[i].dst));
            FUZZ_CHECK(tenant_cross_ns_allows(&cross, cross.pair[i].dst, cross.pair[i].dst));
        }
    } else {
        FUZZ_CHECK(rc == KGS_EINVAL && cross.n == 1 && err[0] != '\0');
    }
    size_t tlen = 0;
    err[0] = '\0';
    rc =
        bearer_token_check((const char *)data, size, SOURCE_AUTH_TOKEN_MAX, &tlen, err, sizeof err);
    if (rc == 0) {
        FUZZ_CHECK(tlen > 0 && tlen <= size && tlen <= SOURCE_AUTH_TOKEN_MAX);
        for (size_t i = 0; i < tlen; i++)
            FUZZ_CHECK(data[i] >= 0x21 && data[i] <= 0x7e);
    } else {
        FUZZ_CHECK(rc == KGS_EINVAL);
        /* the token's bytes are never quoted: a long printable input is not in the message */
        if (size >= 16) {
            char head[17];
            memcpy(head, data, 16);
            head[16] = '\0';
            bool printable = true;
            for (int i = 0; i < 16; i++)
                printable &= head[i] >= 0x21 && head[i] <= 0x7e;
            if (printable)
                FUZZ_CHECK(strstr(err, head) == NULL);
        }
    }
    free(s);
    return 0;
}
