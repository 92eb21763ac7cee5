/*
 * validate.c - `keda-gpu-scaler validate` (see the header).
 *
 * libyaml's document API loads each document into a node table; aliases
 * stay references, and only fixed paths are walked (kind, metadata,
 * spec.triggers[*]), so an alias bomb costs nothing. Implicit typing of
 * plain scalars follows YAML 1.1 as Kubernetes' YAML reader (go-yaml v2)
 * does: `on`, `yes` and `5` are not strings there.
 */
#include "server/validate.h"

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "core/err.h"
#include "core/metadata.h"
#include "core/roles.h"
#include "core/source_url.h"
#include "core/tenant.h"
#include "core/trigger_config.h"

#define MAX_FILE_BYTES (16u * 1024 * 1024)
#define MAX_PAIRS 128

const char validate_usage_text[] =
    "Usage: keda-gpu-scaler validate [--role aggregator|standalone] [--strict]\n"
    "                                [--scaler-address PATTERN... | --all] FILE...\n"
    "\n"
    "Reads Kubernetes YAML (one or more documents per file; - for standard input), finds\n"
    "the ScaledObjects and ScaledJobs, and checks every external / external-push trigger\n"
    "meant for keda-gpu-scaler exactly as the server would: each problem is printed as\n"
    "FILE:LINE: ScaledObject NAMESPACE/NAME trigger #N (TYPE): MESSAGE, with the message\n"
    "the server would answer with INVALID_ARGUMENT.\n"
    "\n"
    "Flags:\n"
    "  --role ROLE     the role that will answer KEDA: aggregator (default; podSelector\n"
    "                  and nodeSelector allowed) or standalone (they are refused)\n"
    "  --scaler-address PATTERN\n"
    "                  a trigger is ours when its scalerAddress matches the shell\n"
    "                  pattern (repeatable; default " VALIDATE_DEFAULT_ADDRESS ", the documented\n"
    "                  service names: with fullnameOverride, give yours, e.g.\n"
    "                  'gpu-scaler.*'); other external triggers are skipped and their\n"
    "                  addresses listed\n"
    "  --match TEXT    the same as --scaler-address '*TEXT*'\n"
    "  --all           check every external trigger, whatever its scalerAddress\n"
    "  --strict        warnings fail too (exit status 1)\n"
    "  --allow-cross-namespace PAIRS\n"
    "                  the server's --allow-cross-namespace (default: none, as the\n"
    "                  server's): a trigger's namespace other than its ScaledObject's\n"
    "                  is a problem unless a SRC:DST pair allows it\n"
    "  --source-auth PROFILES\n"
    "                  the server's --source-auth: sourceAuth is checked against the\n"
    "                  profile's namespaces and destinations (without it, only that\n"
    "                  sourceAuth never goes with another namespace's pods)\n"
    "  --help          this text\n"
    "\n"
    "Also checked: every external trigger has a scalerAddress (KEDA needs one), metadata\n"
    "values are strings (Kubernetes refuses an unquoted number or bool there), and the\n"
    "trigger's metricType is AverageValue or Value. An input with no YAML document is an\n"
    "error, not a pass. Every problem of a trigger is a line of its own.\n"
    "\n"
    "Warnings (FILE:LINE: ... warning: MESSAGE; they fail only with --strict): a\n"
    "ScaledObject or ScaledJob that may be at zero (minReplicaCount 0, KEDA's default, or\n"
    "idleReplicaCount 0) with no trigger that can wake it (each of ours that reads only\n"
    "engines, latency or GPU metrics, which do not exist at zero, says what to add), and,\n"
    "with --role standalone, metricType demand on the queueing model, which cannot see\n"
    "replicas starting there.\n"
    "\n"
    "Exit status: 0 every trigger valid (warnings or not), 1 problems found (or, with\n"
    "--strict, warnings), 2 usage, an unreadable file or YAML that does not parse.\n"
    "\n"
    "Examples (in CI):\n"
    "  keda-gpu-scaler validate k8s/*.yaml\n"
    "  keda-gpu-scaler validate deploy/examples/*.yaml   # this repository's examples\n";

/* ---- YAML helpers ------------------------------------------------------------ */

static yaml_node_t *map_get(yaml_document_t *d, yaml_node_t *m, const char *key) {
    if (!m || m->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(d, p->key);
        if (k && k->type == YAML_SCALAR_NODE && k->data.scalar.length == strlen(key) &&
            memcmp(k->data.scalar.value, key, k->data.scalar.length) == 0)
            return yaml_document_get_node(d, p->value);
    }
    return NULL;
}

/* The scalar's text copied into buf ("" when not a scalar). */
static const char *scalar(yaml_node_t *n, char *buf, size_t cap) {
    buf[0] = '\0';
    if (n && n->type == YAML_SCALAR_NODE) {
        size_t l = n->data.scalar.length < cap - 1 ? n->data.scalar.length : cap - 1;
        memcpy(buf, n->data.scalar.value, l);
        buf[l] = '\0';
    }
    return buf;
}

static bool all_digits(const char *s, const char *set) {
    if (!*s)
        return false;
    for (; *s; s++)
        if (!strchr(set, *s))
            return false;
    return true;
}

/* What a plain (unquoted) scalar is in YAML 1.1, as go-yaml v2 resolves it:
 * NULL when a string, else "a number", "a bool" or "null". */
static const char *implicit_type(const yaml_node_t *n) {
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return NULL;
    char v[64];
    if (n->data.scalar.length >= sizeof v)
        return NULL;
    memcpy(v, n->data.scalar.value, n->data.scalar.length);
    v[n->data.scalar.length] = '\0';
    static const char *const bools[] = {
        "y",    "Y",    "yes",   "Yes",   "YES",   "n",  "N",  "no", "No",  "NO",  "true",
        "True", "TRUE", "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF"};
    for (size_t i = 0; i < sizeof bools / sizeof *bools; i++)
        if (strcmp(v, bools[i]) == 0)
            return "a bool";
    if (!v[0] || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 || strcmp(v, "Null") == 0 ||
        strcmp(v, "NULL") == 0)
        return "null";
    const char *p = v + (v[0] == '+' || v[0] == '-');
    if (all_digits(p, "0123456789_") || (p[0] == '0' && (p[1] == 'x' || p[1] == 'b') &&
                                         all_digits(p + 2, "0123456789abcdefABCDEF_")))
        return "a number";
    if (strcmp(p, ".inf") == 0 || strcmp(p, ".Inf") == 0 || strcmp(p, ".INF") == 0 ||
        strcmp(v, ".nan") == 0 || strcmp(v, ".NaN") == 0 || strcmp(v, ".NAN") == 0)
        return "a number";
    /* [0-9][0-9_]*)?\.[0-9.]*([eE][-+][0-9]+)? and friends */
    size_t i = 0, digits = 0;
    while (isdigit((unsigned char)p[i]) || p[i] == '_')
        digits += isdigit((unsigned char)p[i++]) != 0;
    if (p[i] == '.') {
        i++;
        while (isdigit((unsigned char)p[i]) || p[i] == '_')
            digits += isdigit((unsigned char)p[i++]) != 0;
    }
    if (digits && (p[i] == 'e' || p[i] == 'E')) {
        i++;
        if (p[i] == '+' || p[i] == '-')
            i++;
        size_t ed = 0;
        while (isdigit((unsigned char)p[i]))
            i++, ed++;
        if (!ed)
            return NULL;
    }
    return digits && p[i] == '\0' ? "a number" : NULL;
}

/* ---- what can wake ------------------------------------------------------------ */

validate_wake_t validate_trigger_wake(const trigger_config_t *c) {
    const demand_config_t *d = &c->demand;
    if (d->queue != QUEUE_NONE)
        return VALIDATE_WAKES;
    /* The EPP runs in front of the model servers, also while they are at
     * zero, and its flow-control queue holds the requests that wait for
     * them; its pool gauges (running, KV cache) are the servers'. */
    if (d->engine == ENGINE_EPP &&
        (d->type == DEMAND_ENGINE_QUEUE || (d->type == DEMAND_COMPOSITE && d->target_queue > 0)))
        return VALIDATE_WAKES;
    if (d->type == DEMAND_SLO)
        return VALIDATE_SLEEPS_SLO;
    if (d->engine != ENGINE_NONE)
        return VALIDATE_SLEEPS_ENGINE;
    return VALIDATE_SLEEPS_GPU;
}

/* ---- one trigger ------------------------------------------------------------- */

/* A trigger of the object being read, for the what-can-wake check. */
typedef enum {
    TRIG_MAY_WAKE,   /* another scaler's, KEDA's own (not cpu/memory), or ours with problems */
    TRIG_CPU_MEMORY, /* KEDA's cpu and memory scalers: never from zero */
    TRIG_OURS,       /* ours and valid: wake says what it reads at zero */
} trig_kind_t;

#define MAX_TRIGGERS 64

typedef struct {
    trig_kind_t kind;
    validate_wake_t wake;
    const yaml_node_t *at; /* the trigger's metadata */
    unsigned idx;
    const char *type; /* "external" or "external-push" (static) */
    char what[200];   /* VALIDATE_SLEEPS_ENGINE: the engine and where it is read */
} trig_t;

typedef struct {
    const char *file;
    const validate_opts_t *o;
    FILE *out;
    validate_counts_t *c;
    char kind[32], ns[128], name[256];
    trig_t trig[MAX_TRIGGERS];
    unsigned ntrig; /* of the object being read; past MAX_TRIGGERS it is not judged */
} ctx_t;

/* One line: "FILE:LINE: KIND NS/NAME trigger #I (TYPE): [warning: ]MESSAGE",
 * written straight to out, so no buffer can cut the message. */
static void line(ctx_t *x, const yaml_node_t *at, unsigned idx, const char *type, bool warning,
                 const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void line(ctx_t *x, const yaml_node_t *at, unsigned idx, const char *type, bool warning,
                 const char *fmt, ...) {
    va_list ap;
    /* Without a namespace the object goes wherever it is applied: name only. */
    fprintf(x->out, "%s:%lu: %s %s%s%s trigger #%u (%s): %s", x->file,
            (unsigned long)at->start_mark.line + 1, x->kind, x->ns, x->ns[0] ? "/" : "",
            x->name[0] ? x->name : "?", idx, type, warning ? "warning: " : "");
    va_start(ap, fmt);
    vfprintf(x->out, fmt, ap);
    va_end(ap);
    fputc('\n', x->out);
    if (warning)
        x->c->warnings++;
    else
        x->c->problems++;
}

#define report(x, at, idx, type, ...) line(x, at, idx, type, false, __VA_ARGS__)
#define warn(x, at, idx, type, ...) line(x, at, idx, type, true, __VA_ARGS__)

static bool address_is_ours(const validate_opts_t *o, const char *addr) {
    if (o->match)
        return strstr(addr, o->match) != NULL;
    if (o->npatterns == 0)
        return fnmatch(VALIDATE_DEFAULT_ADDRESS, addr, 0) == 0;
    for (unsigned i = 0; i < o->npatterns; i++)
        if (fnmatch(o->patterns[i], addr, 0) == 0)
            return true;
    return false;
}

/* The node of the metadata key that message names first (as a whole word),
 * so the line points at it; md itself when it names none. */
static const yaml_node_t *named_key(yaml_document_t *d, yaml_node_t *md, const char *message) {
    const yaml_node_t *best = md;
    const char *best_at = NULL;
    for (yaml_node_pair_t *p = md->data.mapping.pairs.start; p < md->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(d, p->key);
        if (!k || k->type != YAML_SCALAR_NODE || k->data.scalar.length == 0)
            continue;
        size_t n = k->data.scalar.length;
        for (const char *at = message; (at = strstr(at, (const char *)k->data.scalar.value));
             at++) {
            /* strstr on the NUL-terminated scalar: libyaml terminates it */
            bool start = at == message || !(isalnum((unsigned char)at[-1]) || at[-1] == '_');
            bool end = !(isalnum((unsigned char)at[n]) || at[n] == '_');
            if (start && end) {
                if (!best_at || at < best_at) {
                    best_at = at;
                    best = k;
                }
                break;
            }
        }
    }
    return best;
}

/* The metadata map as pairs; reports the keys and values that are not
 * strings. *pairs_ok false: a key or value was not a scalar, so the map
 * cannot be parsed as the server would see it. A value YAML reads as a
 * number or bool is reported and passed on as its text (what quoting it
 * gives), so it hides nothing else. */
static size_t collect_pairs(ctx_t *x, yaml_document_t *d, yaml_node_t *md, unsigned idx,
                            const char *type, metadata_pair_t *pairs, bool *pairs_ok) {
    size_t n = 0;
    *pairs_ok = true;
    for (yaml_node_pair_t *p = md->data.mapping.pairs.start; p < md->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(d, p->key);
        yaml_node_t *v = yaml_document_get_node(d, p->value);
        if (!k || k->type != YAML_SCALAR_NODE) {
            report(x, md, idx, type, "a metadata key that is not a plain string");
            *pairs_ok = false;
            continue;
        }
        const char *key = (const char *)k->data.scalar.value;
        if (!v || v->type != YAML_SCALAR_NODE) {
            report(x, k, idx, type,
                   "metadata %s is a %s, not a string: KEDA's metadata is a map of strings", key,
                   v && v->type == YAML_MAPPING_NODE ? "map" : "list");
            *pairs_ok = false;
            continue;
        }
        const char *it = implicit_type(v);
        if (it)
            report(x, v, idx, type,
                   "metadata %s: %s is %s in YAML, and KEDA's metadata is a map of strings "
                   "(Kubernetes rejects it): quote it, %s: \"%s\"",
                   key, (const char *)v->data.scalar.value, it, key,
                   (const char *)v->data.scalar.value);
        if (n == MAX_PAIRS) {
            report(x, md, idx, type, "more than %d metadata keys", MAX_PAIRS);
            *pairs_ok = false;
            return n;
        }
        pairs[n].key = key;
        pairs[n].key_len = k->data.scalar.length;
        pairs[n].value = (const char *)v->data.scalar.value;
        pairs[n].value_len = v->data.scalar.length;
        n++;
    }
    return n;
}

/* The engine and where it is read, for the warnings. */
static void engine_what(const trigger_config_t *c, char *buf, size_t len) {
    const demand_config_t *d = &c->demand;
    const char *key = d->engine == ENGINE_VLLM     ? "vllmEndpoint"
                      : d->engine == ENGINE_TRITON ? "tritonEndpoint"
                                                   : "engineEndpoint";
    if (d->endpoint_count)
        snprintf(buf, len, "%s engine metrics from %s, which does not answer",
                 engine_name(d->engine), key);
    else
        snprintf(buf, len, "%s engine metrics from podSelector's pods, which do not exist",
                 engine_name(d->engine));
}

/* The standalone role sees no pods (DESIGN.md: its evaluator gets no pod
 * list), so the queueing model cannot tell replicas that are starting. */
static void warn_standalone_model(ctx_t *x, const trigger_config_t *cfg, const yaml_node_t *at,
                                  unsigned idx, const char *type) {
    if (x->o->role != VALIDATE_ROLE_STANDALONE || cfg->demand.type != DEMAND_COMPOSITE ||
        cfg->demand.sizing != DEMAND_MODEL_QUEUEING)
        return;
    warn(x, at, idx, type,
         "in the standalone role the scaler sees no pods: the queueing model (metricType demand "
         "without per-signal targets) counts the replicas it asked for as starting until their "
         "engines answer, so it does not see pods that fail to start or that something else "
         "added; a Service URL shows one replica a poll, so its gauges are one replica's and, once "
         "its replicas are seen taking turns, its counters teach no rate (set capacityPerReplica "
         "and coldStartSeconds, docs/recipe-vllm-standalone.md); the aggregator role with "
         "podSelector sees the pods themselves");
}

/* Who may claim what (core/tenant.h), as the server checks it for the
 * ScaledObject's namespace: the namespace key against --allow-cross-namespace,
 * and with --source-auth the profile's namespaces and destinations. An object
 * without a namespace goes wherever it is applied: only a warning then. */
static void check_tenant(ctx_t *x, const trigger_config_t *cfg, yaml_document_t *d, yaml_node_t *md,
                         unsigned idx, const char *type) {
    if (!x->ns[0]) {
        if (cfg->has_namespace)
            warn(x, named_key(d, md, "namespace"), idx, type,
                 "the %s names no namespace (it gets the one it is applied in): namespace %s is "
                 "served only there, unless the server's --allow-cross-namespace allows it",
                 x->kind, cfg->pod_namespace);
        return;
    }
    tenant_policy_t p = {.auth = x->o->auth, .cross = x->o->cross};
    char err[1024];
    if (tenant_check_trigger(&p, cfg, x->ns, err, sizeof err) != 0)
        report(x, named_key(d, md, err), idx, type, "%s", err);
}

static void check_trigger(ctx_t *x, yaml_document_t *d, yaml_node_t *t, unsigned idx) {
    char type[64];
    scalar(map_get(d, t, "type"), type, sizeof type);
    trig_t *tr = x->ntrig < MAX_TRIGGERS ? &x->trig[x->ntrig] : NULL;
    x->ntrig++;
    if (tr)
        *tr = (trig_t){.kind = TRIG_MAY_WAKE, .idx = idx};
    if (strcmp(type, "external") != 0 && strcmp(type, "external-push") != 0) {
        if (tr && (strcmp(type, "cpu") == 0 || strcmp(type, "memory") == 0))
            tr->kind = TRIG_CPU_MEMORY;
        return;
    }
    yaml_node_t *md = map_get(d, t, "metadata");
    yaml_node_t *an = map_get(d, md, "scalerAddress");
    const char *addr =
        an && an->type == YAML_SCALAR_NODE ? (const char *)an->data.scalar.value : "";
    if (!addr[0]) {
        /* whose it is cannot be told, and KEDA refuses it anyway */
        x->c->triggers++;
        report(x, md ? md : t, idx, type,
               "no scalerAddress: KEDA needs it to reach an external scaler (for keda-gpu-scaler "
               "the service, e.g. keda-gpu-scaler.keda-gpu-scaler.svc:6000)");
        return;
    }
    if (!x->o->all && !address_is_ours(x->o, addr)) {
        x->c->skipped++;
        /* shown on stderr: another scaler's address may carry a password */
        char shown[sizeof x->c->skipped_addr[0]] = ""; /* zeroed whole: the counts are compared */
        source_url_redact(addr, strlen(addr), shown, sizeof shown);
        bool seen = false;
        for (unsigned i = 0; i < x->c->nskipped_addr; i++)
            seen |= strcmp(x->c->skipped_addr[i], shown) == 0;
        if (!seen && x->c->nskipped_addr < 4)
            memcpy(x->c->skipped_addr[x->c->nskipped_addr++], shown, sizeof shown);
        return;
    }
    x->c->triggers++;
    if (!md || md->type != YAML_MAPPING_NODE) {
        report(x, t, idx, type, "no metadata map: the trigger needs scalerAddress and its keys");
        return;
    }
    yaml_node_t *mt = map_get(d, t, "metricType");
    if (mt && mt->type == YAML_SCALAR_NODE) {
        const char *v = (const char *)mt->data.scalar.value;
        if (strcmp(v, "AverageValue") != 0 && strcmp(v, "Value") != 0)
            report(x, mt, idx, type,
                   "the trigger's metricType %s: KEDA accepts AverageValue (the default) or "
                   "Value for external scalers",
                   v);
    }
    metadata_pair_t pairs[MAX_PAIRS];
    bool pairs_ok;
    size_t n = collect_pairs(x, d, md, idx, type, pairs, &pairs_ok);
    if (!pairs_ok)
        return;
    static trigger_config_t cfg;        /* ~25 KiB: off the stack */
    static trigger_problems_t problems; /* likewise */
    if (trigger_config_parse_problems(pairs, n, &cfg, &problems) != 0) {
        static char msg[16384]; /* holds any problem whole (trigger_problems_t.text) */
        for (unsigned i = 0; i < problems.stored; i++) {
            trigger_problems_format_one(&problems, i, msg, sizeof msg);
            report(x, named_key(d, md, msg), idx, type, "%s", msg);
        }
        if (problems.count > problems.stored)
            report(x, md, idx, type, "and %u more problem(s) not listed",
                   problems.count - problems.stored);
        return;
    }
    /* The server's own rules (core/roles.h), so validate and the server agree. */
    char err[1024];
    const role_caps_t *caps = role_caps(
        x->o->role == VALIDATE_ROLE_STANDALONE ? KGS_ROLE_STANDALONE : KGS_ROLE_AGGREGATOR);
    if (role_check_trigger(caps, &cfg, true, err, sizeof err) != ROLE_CHECK_OK) {
        report(x, named_key(d, md, err), idx, type, "%s", err);
        return;
    }
    check_tenant(x, &cfg, d, md, idx, type);
    warn_standalone_model(x, &cfg, md, idx, type);
    if (tr) {
        tr->kind = TRIG_OURS;
        tr->wake = validate_trigger_wake(&cfg);
        tr->at = md;
        tr->type = strcmp(type, "external-push") == 0 ? "external-push" : "external";
        if (tr->wake == VALIDATE_SLEEPS_ENGINE)
            engine_what(&cfg, tr->what, sizeof tr->what);
    }
}

/* ---- documents --------------------------------------------------------------- */

/* minReplicaCount and idleReplicaCount as KEDA reads them: true when the
 * object may have no replica (min 0, KEDA's default, or idle 0); *why is
 * what says so. */
static bool may_be_at_zero(yaml_document_t *d, yaml_node_t *spec, const char **why) {
    char v[32];
    yaml_node_t *idle = map_get(d, spec, "idleReplicaCount");
    if (idle && strcmp(scalar(idle, v, sizeof v), "0") == 0) {
        *why = "idleReplicaCount is 0";
        return true;
    }
    yaml_node_t *min = map_get(d, spec, "minReplicaCount");
    if (!min) {
        *why = "minReplicaCount is 0 (KEDA's default)";
        return true;
    }
    *why = "minReplicaCount is 0";
    return strcmp(scalar(min, v, sizeof v), "0") == 0;
}

/* Warns each of our triggers that cannot wake the object from zero, when
 * no trigger of the object can (KEDA activates an object when any trigger
 * is active; cpu and memory never scale from zero). */
static void check_wake(ctx_t *x, yaml_document_t *d, yaml_node_t *spec) {
    const char *why;
    if (!may_be_at_zero(d, spec, &why))
        return;
    bool job = strcmp(x->kind, "ScaledJob") == 0;
    for (unsigned i = 0; i < x->ntrig; i++)
        if (x->trig[i].kind == TRIG_MAY_WAKE ||
            (x->trig[i].kind == TRIG_OURS && x->trig[i].wake == VALIDATE_WAKES))
            return;
    static const char add[] =
        "add a signal that exists at zero, in this trigger (metricType demand or queue_length "
        "with redisAddress and redisListName or redisStream, or demandEndpoint and demandMetric "
        "for a gateway or router queue, or engine: epp for the inference gateway's flow-control "
        "queue) or in another trigger of it, or set minReplicaCount: 1";
    for (unsigned i = 0; i < x->ntrig; i++) {
        const trig_t *t = &x->trig[i];
        if (t->kind != TRIG_OURS)
            continue;
        const char *reads = t->wake == VALIDATE_SLEEPS_SLO
                                ? "latency, which is observed only while replicas serve requests"
                            : t->wake == VALIDATE_SLEEPS_GPU
                                ? "GPU metrics, which read 0 while no pod runs"
                                : t->what;
        warn(x, t->at, t->idx, t->type,
             "%s and no trigger of this %s can %s: this one reads %s%s; %s", why, x->kind,
             job ? "start a Job" : "wake it from zero", reads,
             t->wake == VALIDATE_SLEEPS_ENGINE ? " while no replica runs" : "", add);
    }
}

static void check_document(ctx_t *x, yaml_document_t *d) {
    yaml_node_t *root = yaml_document_get_root_node(d);
    if (!root || root->type != YAML_MAPPING_NODE)
        return;
    char api[128];
    scalar(map_get(d, root, "kind"), x->kind, sizeof x->kind);
    scalar(map_get(d, root, "apiVersion"), api, sizeof api);
    if ((strcmp(x->kind, "ScaledObject") != 0 && strcmp(x->kind, "ScaledJob") != 0) ||
        strncmp(api, "keda.sh/", 8) != 0)
        return;
    x->c->objects++;
    yaml_node_t *meta = map_get(d, root, "metadata");
    scalar(map_get(d, meta, "namespace"), x->ns, sizeof x->ns);
    scalar(map_get(d, meta, "name"), x->name, sizeof x->name);
    yaml_node_t *spec = map_get(d, root, "spec");
    yaml_node_t *triggers = map_get(d, spec, "triggers");
    if (!triggers || triggers->type != YAML_SEQUENCE_NODE)
        return;
    unsigned idx = 0;
    x->ntrig = 0;
    for (yaml_node_item_t *it = triggers->data.sequence.items.start;
         it < triggers->data.sequence.items.top; it++) {
        yaml_node_t *t = yaml_document_get_node(d, *it);
        if (t && t->type == YAML_MAPPING_NODE)
            check_trigger(x, d, t, idx);
        idx++;
    }
    if (x->ntrig <= MAX_TRIGGERS) /* past that, not judged */
        check_wake(x, d, spec);
}

int validate_text(const char *name, const char *text, size_t len, const validate_opts_t *opts,
                  FILE *out, validate_counts_t *counts, char *err, size_t errlen) {
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return kgs_seterr(err, errlen, KGS_ENOMEM, "out of memory");
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    ctx_t x = {.file = name, .o = opts, .out = out, .c = counts};
    int rc = 0;
    unsigned docs = 0;
    for (;;) {
        yaml_document_t doc;
        if (!yaml_parser_load(&parser, &doc)) {
            rc = kgs_seterr(err, errlen, KGS_EINVAL, "%s:%lu:%lu: YAML: %s%s%s", name,
                            (unsigned long)parser.problem_mark.line + 1,
                            (unsigned long)parser.problem_mark.column + 1,
                            parser.problem ? parser.problem : "syntax error",
                            parser.context ? " " : "", parser.context ? parser.context : "");
            break;
        }
        if (!yaml_document_get_root_node(&doc)) { /* end of the stream */
            yaml_document_delete(&doc);
            break;
        }
        counts->documents++;
        docs++;
        check_document(&x, &doc);
        yaml_document_delete(&doc);
    }
    yaml_parser_delete(&parser);
    if (rc == 0 && docs == 0)
        rc = kgs_seterr(err, errlen, KGS_EINVAL,
                        "%s: empty input: no YAML document (a CI gate that checks nothing "
                        "passes nothing)",
                        name);
    return rc;
}

/* ---- the command --------------------------------------------------------------- */

static char *read_all(const char *path, size_t *len, char *err, size_t errlen) {
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) {
        kgs_seterr(err, errlen, KGS_EIO, "%s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
        if (n == cap) {
            if (cap >= MAX_FILE_BYTES) {
                kgs_seterr(err, errlen, KGS_ERANGE, "%s: larger than %u bytes", path,
                           MAX_FILE_BYTES);
                free(buf);
                buf = NULL;
                break;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    if (buf && ferror(f)) {
        kgs_seterr(err, errlen, KGS_EIO, "%s: %s", path, strerror(errno));
        free(buf);
        buf = NULL;
    } else if (!buf && (!err || !err[0])) {
        kgs_seterr(err, errlen, KGS_ENOMEM, "%s: out of memory", path);
    }
    if (f != stdin)
        fclose(f);
    *len = n;
    return buf;
}

int validate_main(int argc, char **argv) {
    validate_opts_t o = {.role = VALIDATE_ROLE_AGGREGATOR};
    int first = argc;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(validate_usage_text, stdout);
            return 0;
        } else if (strcmp(a, "--role") == 0 && i + 1 < argc) {
            const char *r = argv[++i];
            if (strcmp(r, "aggregator") == 0)
                o.role = VALIDATE_ROLE_AGGREGATOR;
            else if (strcmp(r, "standalone") == 0)
                o.role = VALIDATE_ROLE_STANDALONE;
            else {
                fprintf(stderr,
                        "validate: invalid --role \"%s\": must be aggregator or standalone (the "
                        "agent role does not answer KEDA)\n",
                        r);
                return 2;
            }
        } else if (strcmp(a, "--match") == 0 && i + 1 < argc) {
            o.match = argv[++i];
        } else if (strcmp(a, "--scaler-address") == 0 && i + 1 < argc) {
            if (o.npatterns == sizeof o.patterns / sizeof o.patterns[0]) {
                fprintf(stderr, "validate: at most %zu --scaler-address patterns\n",
                        sizeof o.patterns / sizeof o.patterns[0]);
                return 2;
            }
            o.patterns[o.npatterns++] = argv[++i];
        } else if (strcmp(a, "--source-auth") == 0 && i + 1 < argc) {
            static source_auth_set_t auth; /* ~60 KiB: off the stack */
            char why[600];
            if (source_auth_parse(argv[++i], &auth, why, sizeof why) != 0) {
                fprintf(stderr, "validate: --source-auth: %s\n", why);
                return 2;
            }
            o.auth = &auth;
        } else if (strcmp(a, "--allow-cross-namespace") == 0 && i + 1 < argc) {
            static tenant_cross_ns_t cross;
            char why[400];
            if (tenant_cross_ns_parse(argv[++i], &cross, why, sizeof why) != 0) {
                fprintf(stderr, "validate: %s\n", why);
                return 2;
            }
            o.cross = &cross;
        } else if (strcmp(a, "--all") == 0) {
            o.all = true;
        } else if (strcmp(a, "--strict") == 0) {
            o.strict = true;
        } else if (strcmp(a, "--") == 0) {
            first = i + 1;
            break;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "validate: unknown flag %s (keda-gpu-scaler validate --help)\n", a);
            return 2;
        } else {
            first = i;
            break;
        }
    }
    if (first >= argc) {
        fprintf(stderr, "validate: no FILE given (keda-gpu-scaler validate --help)\n");
        return 2;
    }
    if (o.all && (o.match || o.npatterns)) {
        fprintf(stderr, "validate: --all and %s exclude each other\n",
                o.match ? "--match" : "--scaler-address");
        return 2;
    }
    if (o.match && o.npatterns) {
        fprintf(stderr, "validate: --match TEXT is --scaler-address '*TEXT*': give one of them\n");
        return 2;
    }
    validate_counts_t c = {0};
    int status = 0;
    for (int i = first; i < argc; i++) {
        char err[8192] = ""; /* a message naming the file: room for any path */
        size_t len;
        char *text = read_all(argv[i], &len, err, sizeof err);
        if (!text) {
            fprintf(stderr, "validate: %s\n", err);
            status = 2;
            continue;
        }
        if (validate_text(argv[i], text, len, &o, stdout, &c, err, sizeof err) != 0) {
            fprintf(stderr, "validate: %s\n", err);
            status = 2;
        }
        free(text);
    }
    fprintf(stderr,
            "validate: %d file(s), %u ScaledObject/ScaledJob(s), %u trigger(s) checked, %u "
            "problem(s), %u warning(s)%s",
            argc - first, c.objects, c.triggers, c.problems, c.warnings, c.skipped ? "" : "\n");
    if (c.skipped) {
        fprintf(stderr, "; %u external trigger(s) for other scalers skipped (scalerAddress ",
                c.skipped);
        for (unsigned i = 0; i < c.nskipped_addr; i++)
            fprintf(stderr, "%s%s", i ? ", " : "", c.skipped_addr[i]);
        fprintf(stderr, "%s; ours are %s%s: --scaler-address PATTERN or --all checks them)\n",
                c.skipped > c.nskipped_addr ? ", ..." : "", o.match ? "*" : "",
                o.match       ? o.match
                : o.npatterns ? o.patterns[0]
                              : VALIDATE_DEFAULT_ADDRESS);
    }
    if (status == 0 && (c.problems || (o.strict && c.warnings)))
        status = 1;
    return status;
}
