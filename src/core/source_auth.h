/*
 * source_auth.h - named credential profiles for authenticated scrapes
 * (--source-auth), and the checks on what they hold.
 *
 * A trigger never carries a credential: ScaledObject metadata is readable
 * by whoever can read the ScaledObject, and KEDA does not forward
 * TriggerAuthentication parameters to external scalers. The operator names
 * profiles on the server instead, each with the files it reads and the
 * namespaces whose triggers may use it and the destinations its credential
 * may go to, and a trigger picks one by name (`sourceAuth: epp`). A profile
 * used from a namespace it does not list, or for a URL outside its
 * destinations, is refused before any request leaves, so one tenant cannot
 * scrape with another's token, nor send a token to a server of its own.
 *
 * Text form, profiles separated by ';', each NAME:key=value[,key=value...]:
 *   epp:token-file=/var/run/secrets/kgs/epp/token,namespaces=llm|chat,hosts=epp.llm.svc;
 *   vault:ca-file=/etc/kgs/ca.pem,cert-file=/etc/kgs/tls.crt,key-file=/etc/kgs/tls.key,
 *         namespaces=*,cidrs=10.20.0.0/16
 * Keys:
 *   token-file  a bearer token (Authorization: Bearer), re-read when the
 *               file changes (projected service-account tokens rotate)
 *   ca-file     verify the server against this CA instead of
 *               --source-ca-file or the system's roots
 *   cert-file, key-file   a client certificate (mTLS); both or neither
 *   namespaces  '|'-separated namespaces whose triggers may use it, or *
 *               for every namespace; required (nothing is shared silently)
 *   hosts       '|'-separated host names its credential may go to: exact
 *               ("epp.llm.svc"), or "*.llm.svc" for any name below it
 *   cidrs       '|'-separated networks an IP-literal URL may name
 *               ("10.20.0.0/16", "fd00::/8", a bare address)
 *   pods        own-namespace: the pods a podSelector selects in the
 *               ScaledObject's own namespace (checked again at every poll:
 *               the pod must still hold the address)
 *   http        allow: plain http too (the credential crosses the network
 *               in clear); without it only https (the default)
 * A profile needs at least one of token-file, ca-file and cert-file; one
 * with a credential (token-file, cert-file) needs at least one destination
 * (hosts, cidrs or pods). A ca-file alone is no credential: it may be used
 * for any https URL.
 *
 * Pure: no I/O, no allocation, no globals. Any thread may call any function.
 * (A token file's bytes are checked by core/bearer_token.h.)
 */
#ifndef KGS_CORE_SOURCE_AUTH_H
#define KGS_CORE_SOURCE_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#include "core/egress.h"
#include "core/source_url.h"

#define SOURCE_AUTH_MAX_PROFILES 8
#define SOURCE_AUTH_NAME_MAX 63 /* a DNS label: [a-z0-9-], starting and ending alphanumeric */
#define SOURCE_AUTH_PATH_MAX 511
#define SOURCE_AUTH_MAX_NAMESPACES 16
#define SOURCE_AUTH_NS_MAX 63
/* The largest bearer token read from a file, in bytes. A projected
 * service-account token is a JWT of about 1 KiB. */
#define SOURCE_AUTH_TOKEN_MAX 16384
#define SOURCE_AUTH_MAX_HOSTS 16
#define SOURCE_AUTH_HOST_MAX 253 /* a DNS name (SOURCE_HOST_MAX) */
#define SOURCE_AUTH_MAX_CIDRS 16

typedef struct {
    char name[SOURCE_AUTH_NAME_MAX + 1];
    char token_file[SOURCE_AUTH_PATH_MAX + 1]; /* "" = no bearer token */
    char ca_file[SOURCE_AUTH_PATH_MAX + 1];    /* "" = --source-ca-file or the system's roots */
    char cert_file[SOURCE_AUTH_PATH_MAX + 1];  /* "" = no client certificate */
    char key_file[SOURCE_AUTH_PATH_MAX + 1];
    bool all_namespaces; /* namespaces=* */
    unsigned nns;
    char ns[SOURCE_AUTH_MAX_NAMESPACES][SOURCE_AUTH_NS_MAX + 1];
    /* destinations (a credential goes nowhere else) */
    unsigned nhosts;
    /* lower case; "*.x" wildcard: the name (up to SOURCE_AUTH_HOST_MAX) after "*." */
    char hosts[SOURCE_AUTH_MAX_HOSTS][SOURCE_AUTH_HOST_MAX + 3];
    unsigned ncidrs;
    egress_cidr_t cidrs[SOURCE_AUTH_MAX_CIDRS];
    bool pods_own_namespace; /* pods=own-namespace */
    bool allow_http;         /* http=allow */
} source_auth_profile_t;

/* Caller-owned storage; all zero = no profiles. */
typedef struct {
    unsigned n;
    source_auth_profile_t p[SOURCE_AUTH_MAX_PROFILES];
} source_auth_set_t;

/*
 * Parses the text form (above) into *out, replacing what was there; "" =
 * no profiles. Refused with KGS_EINVAL and a message naming the profile
 * and the bad part: a name that is not a DNS label, a name given twice, an
 * unknown key (with the valid ones), a key given twice, a path that is not
 * absolute or too long, cert-file without key-file (or the reverse), a
 * profile with no credential, namespaces missing, empty or not DNS labels,
 * too many profiles or namespaces, a host that is not a DNS name (an IP
 * address: use cidrs), a CIDR egress_cidr_parse() refuses, a pods or http
 * value other than own-namespace / allow, and a profile with a credential
 * but no destination (the message says what to add). *out is left
 * unchanged on failure.
 */
int source_auth_parse(const char *text, source_auth_set_t *out, char *err, size_t errlen);

/* The profile called name, or NULL. */
const source_auth_profile_t *source_auth_find(const source_auth_set_t *set, const char *name);

/* Whether triggers in namespace ns may use p. */
bool source_auth_allows(const source_auth_profile_t *p, const char *ns);

/* Whether p holds a credential (a bearer token or a client certificate),
 * which is what destinations bind; a ca-file alone is not one. */
bool source_auth_has_credential(const source_auth_profile_t *p);

/*
 * Whether trigger URLs may use profile p: u (borrowed) is an http(s) URL a
 * trigger names (an engine endpoint, a demandEndpoint). Returns 0, or
 * KGS_EINVAL with a message naming the profile, the URL's host and what
 * would make it valid: plain http without http=allow (or with a
 * certificate or ca-file, which only TLS uses), a host name not in hosts,
 * an IP literal not in cidrs. A profile without a credential allows any
 * https URL.
 */
int source_auth_check_url(const source_auth_profile_t *p, const source_url_t *u, char *err,
                          size_t errlen);

/*
 * Whether a podSelector trigger may use profile p for its pods (https:
 * engineScheme https). Returns 0, or KGS_EINVAL: the profile lacks
 * pods=own-namespace, or http as above. (That the pods are the
 * ScaledObject's own namespace's is the caller's check.)
 */
int source_auth_check_pods(const source_auth_profile_t *p, bool https, char *err, size_t errlen);

/* Whether host (lower case, a trailing dot ignored) is one of p's hosts:
 * an exact name, or below a "*.suffix" entry by at least one label. */
bool source_auth_host_allowed(const source_auth_profile_t *p, const char *host);

/* Whether name is a valid profile name (a DNS label of at most
 * SOURCE_AUTH_NAME_MAX bytes), for the trigger key that names one. */
bool source_auth_name_valid(const char *name, size_t len);

#endif
