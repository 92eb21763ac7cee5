/*
 * validate.h - `keda-gpu-scaler validate FILE...`: reads ScaledObject and
 * ScaledJob YAML (libyaml), finds the triggers meant for this scaler, and
 * reports each metadata problem with the exact message the server would
 * answer (INVALID_ARGUMENT), so a CI job catches a bad trigger before KEDA
 * does.
 *
 * What is checked per trigger of type external / external-push:
 *   - the metadata is a map of strings (Kubernetes rejects a YAML number
 *     or bool there: KEDA's CRD types it map[string]string);
 *   - trigger_config_parse() accepts it;
 *   - in the standalone role, no podSelector / nodeSelector (the server
 *     refuses them there);
 *   - the trigger's own metricType is AverageValue or Value (KEDA refuses
 *     Utilization for external scalers);
 *   - who may claim what (core/tenant.h) for the object's namespace: a
 *     namespace key other than it (unless cross allows it), and sourceAuth
 *     against the profiles when auth is given.
 * Every problem of a trigger is reported, one line each (a value YAML reads
 * as a number no longer hides the next problem).
 *
 * Warnings (they fail validate only with strict): a ScaledObject or
 * ScaledJob that can be at zero (minReplicaCount 0, KEDA's default, or
 * idleReplicaCount 0) whose triggers have no signal that exists while
 * nothing runs (validate_trigger_wake), and, in the standalone role, a
 * metricType demand trigger on the queueing model, which cannot see
 * replicas starting there.
 */
#ifndef KGS_SERVER_VALIDATE_H
#define KGS_SERVER_VALIDATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "core/tenant.h"
#include "core/trigger_config.h"

typedef enum { VALIDATE_ROLE_AGGREGATOR, VALIDATE_ROLE_STANDALONE } validate_role_t;

/* The documented service names (the chart's and the manifests'
 * "keda-gpu-scaler.<namespace>.svc:6000", or a plain "keda-gpu-scaler:6000"). */
#define VALIDATE_DEFAULT_ADDRESS "keda-gpu-scaler*"

typedef struct {
    validate_role_t role;
    /* Which external triggers are ours: scalerAddress matches one of these
     * shell patterns (fnmatch; none given: VALIDATE_DEFAULT_ADDRESS); all =
     * every external trigger. match (--match TEXT) is the older spelling
     * of the pattern *TEXT*. */
    const char *patterns[8];
    unsigned npatterns;
    const char *match;
    bool all;
    bool strict; /* --strict: warnings count as problems (exit status 1) */
    /* The server's --source-auth (NULL: not known, the profile checks are
     * skipped) and --allow-cross-namespace (NULL: none, the server's
     * default); both borrowed. */
    const source_auth_set_t *auth;
    const tenant_cross_ns_t *cross;
} validate_opts_t;

typedef struct {
    unsigned documents; /* YAML documents read */
    unsigned objects;   /* ScaledObjects and ScaledJobs */
    unsigned triggers;  /* triggers checked */
    unsigned skipped;   /* external triggers for another scaler */
    unsigned problems;  /* problem lines reported */
    unsigned warnings;  /* warning lines reported */
    /* the distinct scalerAddress values skipped, for the summary (first 4) */
    char skipped_addr[4][128];
    unsigned nskipped_addr;
} validate_counts_t;

/* What one of our triggers (c, borrowed, valid) reads while no replica of
 * its workload runs. */
typedef enum {
    VALIDATE_WAKES,         /* a signal that exists at zero: a queue, the EPP's queue */
    VALIDATE_SLEEPS_ENGINE, /* serving engines only: podSelector's pods or URLs, gone at zero */
    VALIDATE_SLEEPS_SLO,    /* latency: observed only while replicas serve */
    VALIDATE_SLEEPS_GPU,    /* GPU metrics: 0 while no pod runs */
} validate_wake_t;

validate_wake_t validate_trigger_wake(const trigger_config_t *c);

/*
 * Checks text[0..len) (borrowed; any bytes), a YAML stream named `name`
 * (for messages). Writes one line per problem to out:
 *   "NAME:LINE: ScaledObject NS/NAME trigger #I (TYPE): MESSAGE"
 * and one per warning:
 *   "NAME:LINE: ScaledObject NS/NAME trigger #I (TYPE): warning: MESSAGE"
 * (NAME alone when the object has no namespace), messages whole,
 * and adds to *counts. The line is the metadata key a message names, else
 * the trigger's metadata. Returns 0 (problems or not), or KGS_EINVAL when
 * the text is not YAML (message "NAME:LINE:COL: ...") or holds no YAML
 * document at all ("NAME: empty input ...").
 */
int validate_text(const char *name, const char *text, size_t len, const validate_opts_t *opts,
                  FILE *out, validate_counts_t *counts, char *err, size_t errlen);

/* argv[0] is "validate". Exit status: 0 all valid (warnings or not), 1
 * problems found (or, with --strict, warnings), 2 usage, unreadable file or
 * YAML syntax error. */
int validate_main(int argc, char **argv);

extern const char validate_usage_text[];

#endif
