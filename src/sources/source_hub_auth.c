/*
 * source_hub_auth.c - the --source-auth profiles at run time: each one's
 * bearer token as last read (net/token_file.h) and its TLS context, both
 * re-read when their files change, and whether a trigger may use a profile
 * from its namespace (core/tenant.h). What a profile may hold and where its
 * credential may go is core/source_auth.h's (files of the hub:
 * source_hub_internal.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/source_auth.h"
#include "core/tenant.h"
#include "net/tls.h"
#include "net/token_file.h"
#include "sources/source_hub_internal.h"
/* A profile's files are looked at (stat) at most this often, from the polls
 * that use it: a rotated token or certificate is in use about a second later. */
#define AUTH_CHECK_NS 1000000000ull

/* ---- credentials (--source-auth) ------------------------------------------------ */

/* Reads a's token file into a->token unless it is the file read last
 * (net/token_file.h). 0, or -1 with a->error set and a->token wiped: a
 * token file that vanished or went bad is not quietly replaced by its old
 * content. The message names the file, never its bytes. */
static int auth_read_token(auth_rt_t *a) {
    if (a->token_len && token_file_unchanged(a->p->token_file, &a->id))
        return 0;
    char why[700];
    if (token_file_read(a->p->token_file, a->token, SOURCE_AUTH_TOKEN_MAX + 1, &a->token_len,
                        &a->id, why, sizeof why) != 0) {
        a->token_len = 0;
        snprintf(a->error, sizeof a->error, "sourceAuth %s: %s", a->p->name, why);
        return -1;
    }
    a->error[0] = '\0';
    return 0;
}

/* Before a poll with profile a: at most once per AUTH_CHECK_NS, the token
 * re-read if its file changed and the certificates reloaded if theirs did
 * (a failed reload keeps the previous context, as the server's do). */
void hub_auth_refresh(source_hub_t *h, auth_rt_t *a, mono_ns_t now) {
    if (a->checked && now - a->checked < AUTH_CHECK_NS)
        return;
    a->checked = now;
    bool was_bad = a->error[0] != '\0';
    if (a->p->token_file[0] && auth_read_token(a) != 0) {
        if (!was_bad)
            LOG_WARN(h->o.log, "%s", a->error);
        return;
    }
    a->error[0] = '\0';
    if (a->tls) {
        bool reloaded = false;
        char why[400];
        if (tls_client_reload_if_changed(a->tls, &reloaded, why, sizeof why) != 0)
            LOG_WARN(h->o.log,
                     "sourceAuth %s: TLS reload failed, still using the previous files: %s",
                     a->p->name, why);
        else if (reloaded)
            LOG_INFO(h->o.log, "sourceAuth %s: TLS files reloaded; new scrapes use them",
                     a->p->name);
    }
    if (was_bad)
        LOG_INFO(h->o.log, "sourceAuth %s: usable again", a->p->name);
}

/* The run-time state of every profile, at start: a token or certificate
 * that cannot be read fails the start, naming the profile and the file. */
int hub_auth_init(source_hub_t *h, char *err, size_t errlen) {
    const source_auth_set_t *set = h->o.auth;
    if (!set || !set->n)
        return 0;
    h->auth = calloc(set->n, sizeof *h->auth);
    if (!h->auth)
        return kgs_seterr(err, errlen, KGS_ENOMEM, "out of memory");
    h->nauth = set->n;
    for (unsigned i = 0; i < set->n; i++) {
        auth_rt_t *a = &h->auth[i];
        a->p = &set->p[i];
        if (a->p->token_file[0]) {
            if (!(a->token = calloc(1, SOURCE_AUTH_TOKEN_MAX + 1)))
                return kgs_seterr(err, errlen, KGS_ENOMEM, "out of memory");
            if (auth_read_token(a) != 0)
                return kgs_seterr(err, errlen, KGS_EIO, "--source-auth: %s", a->error);
        }
        if (a->p->ca_file[0] || a->p->cert_file[0]) {
            const char *ca = a->p->ca_file[0]                  ? a->p->ca_file
                             : h->o.ca_file && h->o.ca_file[0] ? h->o.ca_file
                                                               : NULL;
            char why[400];
            int rc =
                tls_client_new(ca, a->p->cert_file[0] ? a->p->cert_file : NULL,
                               a->p->key_file[0] ? a->p->key_file : NULL, &a->tls, why, sizeof why);
            if (rc != 0)
                return kgs_seterr(err, errlen, rc, "--source-auth %s: %s", a->p->name, why);
        }
    }
    return 0;
}

void hub_auth_free(source_hub_t *h) {
    for (unsigned i = 0; i < h->nauth; i++) {
        if (h->auth[i].token)
            explicit_bzero(h->auth[i].token, SOURCE_AUTH_TOKEN_MAX + 1);
        free(h->auth[i].token);
        tls_client_free(h->auth[i].tls);
    }
    free(h->auth);
    h->auth = NULL;
    h->nauth = 0;
}

/* Whether trigger c may scrape with its sourceAuth from namespace ns: 0
 * with *index (-1: it names none), or KGS_EINVAL with the message. */
int hub_auth_admit(const source_hub_t *h, const trigger_config_t *c, const char *ns, int *index,
                   char *err, size_t errlen) {
    static const source_auth_set_t none;
    *index = -1;
    if (!c->demand.source_auth[0])
        return 0;
    const source_auth_set_t *set = h->o.auth ? h->o.auth : &none;
    const source_auth_profile_t *p;
    int rc = tenant_profile_admit(set, c->demand.source_auth, ns, &p, err, errlen);
    if (rc == 0)
        *index = (int)(p - set->p); /* h->auth[i] is set->p[i]'s (auth_init) */
    return rc;
}
