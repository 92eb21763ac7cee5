/*
 * tls_reload.c - the server's TLS files: the serving context made from
 * --tls-cert, --tls-key and --tls-client-ca, and the check every
 * TLS_RELOAD_CHECK_NS that reloads it, and the aggregator's context for
 * its agents (--agents-tls-*), when their files change.
 *
 * DESIGN
 * A rotated Secret is picked up without a restart: new handshakes use the
 * new files, connections already open keep theirs. A reload that fails
 * keeps the previous context serving and is logged once, then again every
 * TLS_RELOAD_WARN_NS with how often it failed meanwhile.
 */
#include <stdio.h>
#include <string.h>

#include "server/server.h"

/* A failed reload's WARN: at once when the failure is new, then again
 * after TLS_RELOAD_WARN_NS with the count of checks it failed meanwhile
 * (the check runs every 2 s; a broken file would log 30 lines a minute). */
static void reload_failed(server_t *sv, tls_warn_t *w, const char *what, const char *err) {
    mono_ns_t now = loop_now(sv->loop);
    if (strcmp(w->last, err) == 0 && now - w->at < TLS_RELOAD_WARN_NS) {
        w->since++;
        return;
    }
    if (strcmp(w->last, err) == 0)
        LOG_WARN(&sv->log, "%s: %s (still, %u more checks since the last report)", what, err,
                 w->since);
    else
        LOG_WARN(&sv->log, "%s: %s", what, err);
    snprintf(w->last, sizeof w->last, "%s", err);
    w->at = now;
    w->since = 0;
}

void server_tls_check(loop_t *loop, loop_timer_t *t, void *ud) {
    server_t *sv = ud;
    bool reloaded = false;
    char err[512];
    if (sv->tls && tls_server_reload_if_changed(sv->tls, &reloaded, err, sizeof err) != 0) {
        reload_failed(sv, &sv->tls_warn,
                      "TLS reload failed, still serving the previous certificate", err);
    } else {
        sv->tls_warn.last[0] = '\0';
        if (reloaded)
            LOG_INFO(&sv->log, "TLS certificate reloaded from %s; new handshakes use it",
                     sv->o.tls_cert);
    }
    reloaded = false;
    if (sv->agents_tls &&
        tls_client_reload_if_changed(sv->agents_tls, &reloaded, err, sizeof err) != 0) {
        reload_failed(sv, &sv->agents_tls_warn,
                      "agents TLS reload failed, still dialling with the previous files", err);
    } else {
        sv->agents_tls_warn.last[0] = '\0';
        if (reloaded) {
            agent_pool_set_tls(sv->pool, tls_client_ctx(sv->agents_tls));
            LOG_INFO(&sv->log, "agents TLS reloaded from %s%s%s; new connections to agents use it",
                     sv->o.agents_tls_ca, sv->o.agents_tls_cert ? " and " : "",
                     sv->o.agents_tls_cert ? sv->o.agents_tls_cert : "");
        }
    }
    loop_timer_start(loop, t, clock_add_sat(loop_now(loop), TLS_RELOAD_CHECK_NS));
}

int server_tls_start(server_t *sv) {
    if (sv->o.tls_cert) {
        char err[1024];
        if (tls_server_new(sv->o.tls_cert, sv->o.tls_key, sv->o.tls_client_ca, &sv->tls, err,
                           sizeof err) != 0) {
            LOG_ERROR(&sv->log, "%s", err);
            return 1;
        }
    }
    if (sv->tls || sv->agents_tls)
        loop_timer_start(sv->loop, &sv->tls_timer,
                         clock_add_sat(loop_now(sv->loop), TLS_RELOAD_CHECK_NS));
    return 0;
}
