/*
 * fuzz_egress.c - egress_parse_cidrs() and egress_parse_ports() on
 * arbitrary bytes (the --source-allow-cidrs / --source-allow-ports text).
 *
 * The input, cut at its first NUL, is parsed as both lists. On success
 * every entry must be well formed (prefix within its family, no host bits,
 * lo <= hi, ports 1-65535) and a check of a fixed address must not crash;
 * on failure the code must be EINVAL with a message naming the flag, and
 * the policy must be unchanged.
 */
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/egress.h"
#include "core/err.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    egress_policy_t p;
    memset(&p, 0, sizeof p);
    char err[512] = "";
    int rc = egress_parse_cidrs(s, &p, err, sizeof err);
    if (rc == 0) {
        FUZZ_CHECK(p.ncidrs <= EGRESS_MAX_CIDRS);
        for (unsigned i = 0; i < p.ncidrs; i++) {
            const egress_cidr_t *c = &p.cidrs[i];
            unsigned max = c->family == AF_INET ? 32 : 128;
            FUZZ_CHECK(c->family == AF_INET || c->family == AF_INET6);
            FUZZ_CHECK(c->prefix <= max);
            for (unsigned b = c->prefix; b < max; b++)
                FUZZ_CHECK(!(c->addr[b / 8] & (0x80u >> (b % 8))));
        }
    } else {
        FUZZ_CHECK(rc == KGS_EINVAL);
        FUZZ_CHECK(p.ncidrs == 0);
        FUZZ_CHECK(strstr(err, "--source-allow-cidrs") != NULL);
    }
    err[0] = '\0';
    rc = egress_parse_ports(s, &p, err, sizeof err);
    if (rc == 0) {
        FUZZ_CHECK(p.nports <= EGRESS_MAX_PORT_RANGES);
        for (unsigned i = 0; i < p.nports; i++)
            FUZZ_CHECK(p.ports[i].lo >= 1 && p.ports[i].lo <= p.ports[i].hi);
    } else {
        FUZZ_CHECK(rc == KGS_EINVAL);
        FUZZ_CHECK(p.nports == 0);
        FUZZ_CHECK(strstr(err, "--source-allow-ports") != NULL);
    }
    struct sockaddr_in v4;
    memset(&v4, 0, sizeof v4);
    v4.sin_family = AF_INET;
    v4.sin_port = htons(8080);
    v4.sin_addr.s_addr = htonl(0x0a000001);
    char why[256];
    (void)egress_check(&p, (struct sockaddr *)&v4, sizeof v4, why, sizeof why);
    free(s);
    return 0;
}
