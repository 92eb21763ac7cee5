/*
 * source_auth.h - named credential profiles for authenticated scrapes
 * (--source-auth), and the checks on what they hold.
 *
 * A trigger never carries a credential: ScaledObject metadata is readable
 * by whoever can read the ScaledObject, and KEDA does not forward
 * TriggerAuthentication parameters to external scalers. The operator names
 * profiles on the server instead, each with the files it reads and the
 * namespaces whose triggers may use it, and a trigger picks one by name
 * (`sourceAuth: epp`). A profile used from a namespace it does not list is
 * refused, so one tenant cannot scrape with another's token.
 *
 * Text form, profiles separated by ';', each NAME:key=value[,key=value...]:
 *   epp:token-file=/var/run/secrets/kgs/epp/token,namespaces=llm|chat;
 *   vault:ca-file=/etc/kgs/ca.pem,cert-file=/etc/kgs/tls.crt,key-file=/etc/kgs/tls.key,namespaces=*
 * Keys:
 *   token-file  a bearer token (Authorization: Bearer), re-read when the
 *               file changes (projected service-account tokens rotate)
 *   ca-file     verify the server against this CA instead of
 *               --source-ca-file or the system's roots
 *   cert-file, key-file   a client certificate (mTLS); both or neither
 *   namespaces  '|'-separated namespaces whose triggers may use it, or *
 *               for every namespace; required (nothing is shared silently)
 * A profile needs at least one of token-file, ca-file and cert-file.
 *
 * Pure: no I/O, no allocation, no globals. Any thread may call any function.
 * (A token file's bytes are checked by core/bearer_token.h.)
 */
#ifndef KGS_CORE_SOURCE_AUTH_H
#define KGS_CORE_SOURCE_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#define SOURCE_AUTH_MAX_PROFILES 8
#define SOURCE_AUTH_NAME_MAX 63 /* a DNS label: [a-z0-9-], starting and ending alphanumeric */
#define SOURCE_AUTH_PATH_MAX 511
#define SOURCE_AUTH_MAX_NAMESPACES 16
#define SOURCE_AUTH_NS_MAX 63
/* The largest bearer token read from a file, in bytes. A projected
 * service-account token is a JWT of about 1 KiB. */
#define SOURCE_AUTH_TOKEN_MAX 16384

typedef struct {
    char name[SOURCE_AUTH_NAME_MAX + 1];
    char token_file[SOURCE_AUTH_PATH_MAX + 1]; /* "" = no bearer token */
    char ca_file[SOURCE_AUTH_PATH_MAX + 1];    /* "" = --source-ca-file or the system's roots */
    char cert_file[SOURCE_AUTH_PATH_MAX + 1];  /* "" = no client certificate */
    char key_file[SOURCE_AUTH_PATH_MAX + 1];
    bool all_namespaces; /* namespaces=* */
    unsigned nns;
    char ns[SOURCE_AUTH_MAX_NAMESPACES][SOURCE_AUTH_NS_MAX + 1];
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
 * too many profiles or namespaces. *out is left unchanged on failure.
 */
int source_auth_parse(const char *text, source_auth_set_t *out, char *err, size_t errlen);

/* The profile called name, or NULL. */
const source_auth_profile_t *source_auth_find(const source_auth_set_t *set, const char *name);

/* Whether triggers in namespace ns may use p. */
bool source_auth_allows(const source_auth_profile_t *p, const char *ns);

/* Whether name is a valid profile name (a DNS label of at most
 * SOURCE_AUTH_NAME_MAX bytes), for the trigger key that names one. */
bool source_auth_name_valid(const char *name, size_t len);

#endif
