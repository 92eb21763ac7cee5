/*
 * roles.c - the role table (see the header). Adding a role or a
 * capability is one row here and one rule in role_check_trigger().
 */
#include "core/roles.h"

#include <stdio.h>

static const role_caps_t ROLES[KGS_ROLE_COUNT] = {
    [KGS_ROLE_STANDALONE] = {.name = "standalone",
                             .sees_cluster = false,
                             .polls_sources = true,
                             .reads_nvml = true},
    [KGS_ROLE_AGENT] = {.name = "agent",
                        .sees_cluster = false,
                        .polls_sources = false,
                        .reads_nvml = true},
    [KGS_ROLE_AGGREGATOR] = {.name = "aggregator",
                             .sees_cluster = true,
                             .polls_sources = true,
                             .reads_nvml = false},
};

const role_caps_t *role_caps(kgs_role_t r) {
    return (unsigned)r < KGS_ROLE_COUNT ? &ROLES[r] : NULL;
}

static const char *endpoint_key(engine_t e) {
    return e == ENGINE_VLLM     ? "vllmEndpoint"
           : e == ENGINE_TRITON ? "tritonEndpoint"
                                : "engineEndpoint";
}

role_check_t role_check_trigger(const role_caps_t *caps, const trigger_config_t *c,
                                bool check_selectors, char *msg, size_t msglen) {
    const demand_config_t *d = &c->demand;
    char none[1];
    if (!msg || !msglen) {
        msg = none;
        msglen = sizeof none;
    }
    msg[0] = '\0';
    if (check_selectors && !caps->sees_cluster &&
        (c->has_pod_selector || c->node_scope != NODE_SCOPE_ALL)) {
        snprintf(msg, msglen,
                 "podSelector and nodeSelector need the aggregator role: this server sees only "
                 "its own node's GPUs and no pods");
        return ROLE_CHECK_BAD_CONFIG;
    }
    if (d->type != DEMAND_NONE && !caps->polls_sources) {
        snprintf(msg, msglen,
                 "metricType %s reads engine or queue sources, which this role does not poll; "
                 "ask the standalone or aggregator role",
                 demand_type_name(d->type));
        return ROLE_CHECK_PRECONDITION;
    }
    if (d->type != DEMAND_NONE && d->engine != ENGINE_NONE && d->endpoint_count == 0 &&
        !caps->sees_cluster) {
        snprintf(msg, msglen,
                 "metricType %s with podSelector needs the aggregator role (it scrapes the "
                 "selected pods); in standalone mode give %s",
                 demand_type_name(d->type), endpoint_key(d->engine));
        return ROLE_CHECK_PRECONDITION;
    }
    return ROLE_CHECK_OK;
}

eval_status_t role_check_eval_status(role_check_t rc) {
    return rc == ROLE_CHECK_OK ? EVAL_OK : EVAL_FAILED_PRECONDITION;
}
