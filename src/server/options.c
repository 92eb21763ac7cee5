/*
 * options.c - server flags and their KEDA_GPU_SCALER_* variables.
 *
 * DESIGN
 * Parsing runs in two passes. The first walks argv and only records the raw
 * text of each flag (the last one wins, as with Go's flag package). The
 * second takes, for each option, the flag's text or else its variable's,
 * and validates it once, naming where the text came from. So a flag that
 * overrides a broken variable hides it completely, and each message names
 * exactly what the operator has to fix.
 */
#include "server/options.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "core/clock.h"
#include "core/duration.h"
#include "core/err.h"
#include "core/flags.h"
#include "core/roles.h"
#include "core/suggest.h"
#include "gpu/backend_kind.h"
#include "gpu/sampler_limits.h"
#include "scaler/scaler_limits.h"

const char server_usage_text[] =
    "Usage: keda-gpu-scaler [flags]\n"
    "       keda-gpu-scaler query --address HOST:PORT --metadata KEY=VALUE... [flags]\n"
    "       keda-gpu-scaler validate [flags] FILE...\n"
    "\n"
    "A KEDA external scaler that reads GPU metrics (from NVML on this node, or\n"
    "as the aggregator from every agent) and answers KEDA over gRPC\n"
    "(externalscaler.ExternalScaler and grpc.health.v1).\n"
    "Prometheus metrics are served on /metrics and probes on /healthz, /readyz.\n"
    "\n"
    "Subcommands (each with its own --help):\n"
    "  query      call a scaler exactly as KEDA does and print the metric, its\n"
    "             target, activity, the replicas KEDA and the HPA would choose, and\n"
    "             for metricType demand the queueing model's inputs\n"
    "  validate   check the triggers of ScaledObject / ScaledJob YAML as the server\n"
    "             would, with file and line (a CI gate)\n"
    "\n"
    "Flags (each can also be set as KEDA_GPU_SCALER_<FLAG>, e.g.\n"
    "KEDA_GPU_SCALER_METRICS_PORT=0; a flag beats its variable):\n"
    "  --role standalone|agent|aggregator\n"
    "                                what this process does (default standalone:\n"
    "                                sample this node and serve KEDA; agent: also\n"
    "                                stream node snapshots with the GPU-to-pod map\n"
    "                                to aggregators; aggregator: answer KEDA for\n"
    "                                workloads across every agent's node)\n"
    "  --agents HOST:PORT,...        aggregator: the agents to subscribe to\n"
    "  --agents-dns NAME:PORT        aggregator: every address of this name (a\n"
    "                                headless Service), re-resolved every 10s\n"
    "  --kube-api URL|none           aggregator: the Kubernetes API for pods\n"
    "                                (default: in-cluster when\n"
    "                                KUBERNETES_SERVICE_HOST is set, else none)\n"
    "  --kube-token-file FILE        aggregator: bearer token (default: the pod's\n"
    "                                service account token)\n"
    "  --kube-ca-file FILE           aggregator: CA for an https API\n"
    "  --kubelet-socket PATH|none    agent: the kubelet pod-resources socket\n"
    "                                (default /var/lib/kubelet/pod-resources/\n"
    "                                kubelet.sock; none = no pod attribution)\n"
    "  --port N                      gRPC port (default 6000; 0 picks a free port,\n"
    "                                which is logged)\n"
    "  --metrics-port N              Prometheus /metrics port (default 9090;\n"
    "                                0 disables it)\n"
    "  --probe-port N                /healthz and /readyz port (default 8081;\n"
    "                                0 disables it)\n"
    "  --listen-address ADDR         numeric IPv4 or IPv6 address for all three\n"
    "                                ports (default 0.0.0.0; :: for IPv6)\n"
    "  --sample-interval DURATION    standalone, agent: how often NVML is sampled\n"
    "                                (default 1s; at least 100ms); aggregator\n"
    "                                (no NVML): the agents' interval, which sets\n"
    "                                the --stale-after default and how often the\n"
    "                                cluster view is re-checked\n"
    "  --stale-after DURATION        a snapshot older than this makes RPCs fail\n"
    "                                with UNAVAILABLE and /readyz answer 503\n"
    "                                (default 3 x --sample-interval; 0 = default;\n"
    "                                must exceed --sample-interval)\n"
    "  --health-check-interval DURATION\n"
    "                                how often the gRPC health status is\n"
    "                                re-evaluated for Watch (default 30s; 0 = 30s);\n"
    "                                readiness changes are also pushed at once\n"
    "  --nvml-library PATH           standalone, agent: NVML library to load\n"
    "                                (default libnvidia-ml.so.1 from the library\n"
    "                                path)\n"
    "  --node-name NAME              node label on metrics (default $NODE_NAME,\n"
    "                                else the host name)\n"
    "";

/* Split in three: ISO C caps one string literal at 4095 bytes. */
const char server_usage_text_more[] =
    "  --proc-root DIR|none          agent: read DIR/<pid>/cgroup to attribute\n"
    "                                GPU processes to pods on shared GPUs (DIR\n"
    "                                /proc needs the host PID namespace; default\n"
    "                                none = no per-process attribution)\n"
    "  --gpu-backend auto|nvml|amdsmi|amdgpu-sysfs|nvml+amdsmi|nvml+amdgpu-sysfs\n"
    "                                standalone, agent: how GPUs are read (default\n"
    "                                auto: NVML if it loads, else amd-smi if\n"
    "                                libamd_smi.so loads and lists GPUs, else\n"
    "                                amdgpu sysfs if an amdgpu card is there;\n"
    "                                NVML and an AMD one both on a node with\n"
    "                                both vendors; docs/amd.md); the\n"
    "                                amdgpu reader takes per-process use from\n"
    "                                --proc-root (default /proc)\n"
    "  --sys-root DIR                amdgpu-sysfs: where class/drm is (default /sys)\n"
    "  --tls-cert FILE               serve gRPC over TLS with this certificate\n"
    "                                chain (PEM); needs --tls-key\n"
    "  --tls-key FILE                the certificate's private key (PEM)\n"
    "  --tls-client-ca FILE          require client certificates signed by this\n"
    "                                CA (mutual TLS); needs --tls-cert, --tls-key;\n"
    "                                an agent with --tls-cert needs it (its Watch\n"
    "                                is for aggregators only)\n"
    "  --log-level LEVEL             debug, info, warn or error (default info)\n"
    "  --log-format FORMAT           text or json (default text)\n"
    "  --max-connections N           gRPC connection cap (default 1024; lowered,\n"
    "                                with a warning, to the descriptor limit\n"
    "                                less 256 kept for probes, sources, agents\n"
    "                                and files)\n"
    "  --max-connections-per-peer N  gRPC connections one client address may\n"
    "                                hold (default: half of --max-connections,\n"
    "                                so one client never locks KEDA out)\n"
    "  --idle-timeout DURATION       close gRPC connections idle this long\n"
    "                                (default 10m; 0 = never)\n"
    "  --shutdown-grace DURATION     on SIGTERM, how long open RPCs may finish\n"
    "                                (default 5s)\n"
    "  --handshake-timeout DURATION  a gRPC connection must finish TLS and the\n"
    "                                HTTP/2 preface, and each request its headers\n"
    "                                and message, within this; slower ones are\n"
    "                                closed (default 10s, at least 100ms)\n"
    "  --version                     print the version and exit\n"
    "  --help                        this text\n"
    "";

/* Split in parts: ISO C caps one string literal at 4095 bytes. */
const char server_usage_text_end[] =
    "\n"
    "Engine and queue sources (standalone, aggregator):\n"
    "  --source-ca-file FILE         CA bundle for https engine endpoints and\n"
    "                                rediss queues (default: the system's roots)\n"
    "  --source-max-bytes N          largest engine/queue response read, in bytes\n"
    "                                (default 8388608 = 8 MiB; 4096 to 268435456)\n"
    "  --source-auth PROFILES        credentials for engine and demandEndpoint\n"
    "                                scrapes, named so that triggers pick one with\n"
    "                                sourceAuth: NAME (default: none). PROFILES is\n"
    "                                NAME:key=value,...[;NAME:...] with keys\n"
    "                                token-file (a bearer token, re-read when it\n"
    "                                changes), ca-file, cert-file + key-file (mTLS)\n"
    "                                and namespaces=a|b or * (required: which\n"
    "                                namespaces' triggers may use it); with a\n"
    "                                token or certificate, where it may go:\n"
    "                                hosts=NAME|*.SUFFIX, cidrs=NET|NET and/or\n"
    "                                pods=own-namespace (podSelector pods of the\n"
    "                                ScaledObject's namespace); http=allow lets\n"
    "                                a token go over plain http (default: https\n"
    "                                only), e.g. epp:token-file=/var/run/secrets/\n"
    "                                kgs/token,namespaces=llm,hosts=epp.llm.svc\n"
    "  --allow-cross-namespace PAIRS aggregator: ScaledObjects of namespace SRC\n"
    "                                may select pods of namespace DST with the\n"
    "                                trigger key namespace: DST; PAIRS is\n"
    "                                SRC:DST,... (* for any; default: none, a\n"
    "                                trigger selects its own namespace's pods\n"
    "                                only), e.g. monitoring:llm,ops:*\n"
    "\n"
    "The aggregator's link to the agents (docs/operations.md, \"Security\"):\n"
    "  --agents-tls-ca FILE          dial the agents over TLS and\n"
    "                                verify them against this CA (default: h2c)\n"
    "  --agents-tls-cert FILE        client certificate shown to the\n"
    "                                agents (mTLS; their --tls-client-ca signs it)\n"
    "  --agents-tls-key FILE         its private key\n"
    "  --agents-tls-server-name NAME the name the agents' certificate\n"
    "                                must carry (default: each agent's pod IP)\n"
    "\n";

const char server_usage_text_budgets[] =
    "Budgets against hostile callers (RESOURCE_EXHAUSTED beyond them):\n"
    "  --max-request-bytes N         largest gRPC request message (default 65536;\n"
    "                                1024 to 4194304)\n"
    "  --max-metadata-entries N      scalerMetadata entries a request may carry\n"
    "                                (default 256; 1 to 100000)\n"
    "  --max-metadata-bytes N        scalerMetadata key and value bytes a request\n"
    "                                may carry (default 32768; 256 to 4194304)\n"
    "  --config-cache-bytes N        parsed trigger configurations kept, and what\n"
    "                                open streams may pin in all (default\n"
    "                                33554432 = 32 MiB; at least 1048576)\n"
    "  --max-stream-bytes N          what one connection's open StreamIsActive\n"
    "                                may pin, shared fairly by namespace: one\n"
    "                                alone gets half (default 33554432 = 32 MiB,\n"
    "                                ~580 distinct triggers; at least 65536)\n"
    "  --max-sources N               demand sources (engine endpoints, queues)\n"
    "                                polled at once (default 1024; 1 to 100000)\n"
    "  --max-sources-per-namespace N of them created for one namespace's\n"
    "                                ScaledObjects (default 512; 1 to 100000)\n"
    "  --source-create-rate R[,B]    new demand sources per second, with bursts\n"
    "                                of B (default 100,512; R 0.1 to 100000)\n"
    "  --source-allow-cidrs LIST     the only addresses demand sources may connect\n"
    "                                to, e.g. 10.0.0.0/8,fd00::/8 (default: any\n"
    "                                address the SSRF guard allows)\n"
    "  --source-allow-ports LIST     the only ports, e.g. 80,443,8000-8999\n"
    "                                (default: any)\n"
    "  --max-buffered-bytes-per-connection N\n"
    "                                request bytes one gRPC connection may have\n"
    "                                in flight before its messages are complete;\n"
    "                                also its HTTP/2 window (default 1048576 =\n"
    "                                1 MiB, at least one request: 65536 and\n"
    "                                --max-request-bytes + 5)\n"
    "  --max-buffered-bytes N        the same for all connections together\n"
    "                                (default 16777216 = 16 MiB, at least the\n"
    "                                per-connection budget); a connection holding\n"
    "                                under 16 KiB is never refused by it\n";

const char server_usage_text_tenants[] =
    "  --source-read-bytes N         what the replies of all polls in flight may\n"
    "                                hold (heads, partial lines, Redis replies;\n"
    "                                bodies are parsed as they arrive), shared\n"
    "                                fairly by namespace: one alone gets half\n"
    "                                (default 33554432 = 32 MiB; at least 1 MiB)\n"
    "  --source-read-rate N          response bytes a second the sources of one\n"
    "                                namespace may read before their next polls\n"
    "                                wait (default 67108864 = 64 MiB/s; at least\n"
    "                                65536)\n"
    "  --subscription-bytes N        what demand triggers' state (forecast,\n"
    "                                model, latency windows) may cost, shared\n"
    "                                fairly by namespace: one alone gets half\n"
    "                                (default 16777216 = 16 MiB; at least 1 MiB)\n"
    "  --source-idle D               a source or trigger state unused this long\n"
    "                                is freed (default 10m; 1s to 24h)\n"
    "\n"
    "Durations: 500ms, 5s, 1m30s, 2h. An invalid value, flag or variable is an\n"
    "error (exit status 2), never a silent default. A variable set to \"\" counts\n"
    "as unset.\n"
    "\n"
    "Examples:\n"
    "  keda-gpu-scaler\n"
    "  keda-gpu-scaler --port 6000 --metrics-port 0 --log-format json\n"
    "  keda-gpu-scaler --sample-interval 500ms --stale-after 5s --log-level debug\n"
    "  keda-gpu-scaler --tls-cert /tls/tls.crt --tls-key /tls/tls.key \\\n"
    "                  --tls-client-ca /tls/ca.crt\n"
    "  KEDA_GPU_SCALER_LOG_LEVEL=debug KEDA_GPU_SCALER_PROBE_PORT=0 keda-gpu-scaler\n"
    "  NVML_SIM_SCENARIO=sim/scenarios/idle-4xh100.json keda-gpu-scaler \\\n"
    "      --nvml-library build/release/sim/libnvml-sim.so   # no GPU needed\n"
    "      # installed: PREFIX/lib/keda-gpu-scaler/libnvml-sim.so, its scenarios\n"
    "      # in PREFIX/share/keda-gpu-scaler/scenarios/\n"
    "\n"
    "Certificates are re-read when their files change; new handshakes use them.\n"
    "\n"
    "Client: keda-gpu-scaler query --address HOST:PORT --metadata KEY=VALUE...\n"
    "calls a scaler as KEDA does and shows the replicas KEDA would choose\n"
    "(keda-gpu-scaler query --help).\n";

#define DEFAULT_HEALTH_CHECK_INTERVAL_NS (30 * NS_PER_SEC)
#define MIN_HEALTH_CHECK_INTERVAL_NS (100 * NS_PER_MS)

/* Where one option's text came from: "--port" or "KEDA_GPU_SCALER_PORT". */
typedef struct {
    const char *text; /* NULL = not given */
    char source[64];
} raw_t;

/*
 * What kind of value a flag takes, which says how its text is checked and
 * what type its field in server_options_t has (the row's offset points at
 * it). The few flags with rules of their own are OPT_CUSTOM.
 */
typedef enum {
    OPT_PORT,         /* uint16_t, 0..65535 */
    OPT_DURATION,     /* uint64_t ns, from min to max (0 = no max); hint tells the range */
    OPT_UINT,         /* unsigned, from min to max; noun names it, hint ends the message */
    OPT_COUNT,        /* size_t, from min to max; noun names the unit */
    OPT_PATH,         /* const char *, not empty; noun names what the path is */
    OPT_STRING,       /* const char *, taken as given */
    OPT_ADDRESS,      /* const char *, a numeric IPv4 or IPv6 address */
    OPT_PATH_OR_NONE, /* const char *, an absolute path, or "none" stored as NULL */
    OPT_CUSTOM        /* parse() checks and stores it */
} opt_kind_t;

typedef int (*opt_parse_fn)(const raw_t *r, server_options_t *o, char *err, size_t errlen);

/*
 * One flag, in the spirit of Redis's standardConfig table (config.c): its
 * name (the variable is derived from it), kind, field and default, and what
 * its kind needs to check it and to word the error.
 */
typedef struct {
    const char *name;
    opt_kind_t kind;
    size_t off;                  /* offsetof(server_options_t, field) */
    unsigned long long def;      /* numeric kinds: the default (0 when absent) */
    const char *def_text;        /* string kinds: the default; OPT_CUSTOM: text parse() takes */
    unsigned long long min, max; /* OPT_DURATION (ns), OPT_UINT, OPT_COUNT */
    const char *noun;            /* the value in messages: "byte count", "CA file" */
    const char *hint;            /* the end of a range message (see the kinds) */
    opt_parse_fn parse;          /* OPT_CUSTOM only */
} opt_def_t;

static int parse_bool(const char *v, const char *flag, bool *out, char *err, size_t errlen) {
    if (!v || strcmp(v, "true") == 0 || strcmp(v, "1") == 0) {
        *out = true;
        return 0;
    }
    if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0) {
        *out = false;
        return 0;
    }
    return kgs_seterr(err, errlen, KGS_EINVAL, "--%s: invalid value \"%s\": must be true or false",
                      flag, v);
}

/* Decimal digits only: no sign, no spaces, no hex (strtoul would take
 * " 12", "+12" and "0x1f"). */
static bool parse_uint(const char *s, unsigned long max, unsigned long *out) {
    if (!*s || strlen(s) > 10)
        return false;
    unsigned long v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        v = v * 10 + (unsigned long)(*p - '0');
    }
    if (v > max)
        return false;
    *out = v;
    return true;
}

static int parse_port(const raw_t *r, uint16_t *out, char *err, size_t errlen) {
    unsigned long v;
    if (!parse_uint(r->text, 65535, &v))
        return kgs_seterr(err, errlen, KGS_EINVAL, "%s: invalid port \"%s\": must be 0..65535",
                          r->source, r->text);
    *out = (uint16_t)v;
    return 0;
}

static int parse_duration(const raw_t *r, uint64_t *out, char *err, size_t errlen) {
    char sub[192];
    if (duration_parse_ns(r->text, out, sub, sizeof sub))
        return kgs_seterr(err, errlen, KGS_EINVAL, "%s: %s", r->source, sub);
    return 0;
}

/* A duration from d->min to d->max (0 = no max). Out of range, the message
 * ends in d->hint, or without one names the minimum. */
static int parse_duration_in(const opt_def_t *d, const raw_t *r, uint64_t *out, char *err,
                             size_t errlen) {
    char sub[192];
    if (parse_duration(r, out, err, errlen))
        return KGS_EINVAL;
    if (*out >= d->min && (!d->max || *out <= d->max))
        return 0;
    if (d->hint)
        return kgs_seterr(err, errlen, KGS_EINVAL, "%s: %s %s", r->source, r->text, d->hint);
    return kgs_seterr(err, errlen, KGS_EINVAL, "%s: %s is too short: the minimum is %s", r->source,
                      r->text, duration_format(d->min, sub, sizeof sub));
}

static int parse_nonempty(const raw_t *r, const char **out, const char *what, char *err,
                          size_t errlen) {
    if (!r->text[0])
        return kgs_seterr(err, errlen, KGS_EINVAL, "%s: needs a %s, got an empty value", r->source,
                          what);
    *out = r->text;
    return 0;
}

static int parse_address(const raw_t *r, const char **out, char *err, size_t errlen) {
    const char *s = r->text;
    char buf[64];
    size_t n = strlen(s);
    if (n >= 2 && s[0] == '[' && s[n - 1] == ']' && n - 2 < sizeof buf) {
        memcpy(buf, s + 1, n - 2); /* "[::]" as in URLs */
        buf[n - 2] = '\0';
        s = buf;
    }
    unsigned char addr[16];
    if (inet_pton(AF_INET, s, addr) != 1 && inet_pton(AF_INET6, s, addr) != 1)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s: invalid address \"%s\": must be a numeric IPv4 or IPv6 address "
                          "such as 0.0.0.0, 127.0.0.1 or ::",
                          r->source, r->text);
    *out = r->text;
    return 0;
}

static int parse_path_or_none(const opt_def_t *d, const raw_t *r, const char **out, char *err,
                              size_t errlen) {
    if (!r->text[0] || (strcmp(r->text, "none") != 0 && r->text[0] != '/'))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s: invalid %s \"%s\": must be an absolute path%s or none", r->source,
                          d->noun, r->text, d->hint ? d->hint : "");
    *out = strcmp(r->text, "none") == 0 ? NULL : r->text;
    return 0;
}

/* A whole number from min to max, with no sign and no spaces; the
 * message ends in d->hint. */
static int parse_unsigned(const opt_def_t *d, const raw_t *r, unsigned *out, char *err,
                          size_t errlen) {
    unsigned long v;
    if (!parse_uint(r->text, (unsigned long)d->max, &v) || v < d->min)
        return kgs_seterr(err, errlen, KGS_EINVAL, "%s: invalid %s \"%s\": must be %llu..%llu%s",
                          r->source, d->noun, r->text, d->min, d->max, d->hint ? d->hint : "");
    *out = (unsigned)v;
    return 0;
}

/* A whole number from min to max ("bytes" or "entries" names the unit in
 * the message). */
static int parse_count(const raw_t *r, unsigned long long min, unsigned long long max,
                       const char *unit, size_t *out, char *err, size_t errlen) {
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(r->text, &end, 10);
    if (!r->text[0] || *end || errno || r->text[0] < '0' || r->text[0] > '9' || v < min || v > max)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s: invalid %s \"%s\": must be a whole number from %llu to %llu",
                          r->source, unit, r->text, min, max);
    *out = (size_t)v;
    return 0;
}

/* The custom rows. */

static int parse_role(const raw_t *r, server_options_t *o, char *err, size_t errlen) {
    if (strcmp(r->text, "standalone") == 0) {
        o->role = SERVER_ROLE_STANDALONE;
        return 0;
    }
    if (strcmp(r->text, "agent") == 0) {
        o->role = SERVER_ROLE_AGENT;
        return 0;
    }
    if (strcmp(r->text, "aggregator") == 0) {
        o->role = SERVER_ROLE_AGGREGATOR;
        return 0;
    }
    return kgs_seterr(err, errlen, KGS_EINVAL,
                      "%s: invalid role \"%s\": must be standalone, agent or aggregator", r->source,
                      r->text);
}

static int parse_health_check_interval(const raw_t *r, server_options_t *o, char *err,
                                       size_t errlen) {
    if (parse_duration(r, &o->health_check_interval_ns, err, errlen))
        return KGS_EINVAL;
    if (o->health_check_interval_ns == 0) /* as the Go server: 0 means 30s */
        o->health_check_interval_ns = DEFAULT_HEALTH_CHECK_INTERVAL_NS;
    if (o->health_check_interval_ns < MIN_HEALTH_CHECK_INTERVAL_NS)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s: %s is too short: the minimum is 100ms (0 means 30s)", r->source,
                          r->text);
    return 0;
}

static int parse_node_name(const raw_t *r, server_options_t *o, char *err, size_t errlen) {
    size_t n = strlen(r->text);
    if (n == 0 || n > 253)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s: invalid node name (%zu bytes): must be 1 to 253 bytes", r->source,
                          n);
    for (const unsigned char *p = (const unsigned char *)r->text; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "%s: invalid node name: control character at byte %zu", r->source,
                              (size_t)(p - (const unsigned char *)r->text));
    o->node_name = r->text;
    return 0;
}

static int parse_log_level(const raw_t *r, server_options_t *o, char *err, size_t errlen) {
    /* The Go server silently took anything unknown as info. */
    if (strcmp(r->text, "off") == 0 || log_level_parse(r->text, &o->log_level, NULL, 0))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s: invalid log level \"%s\": must be debug, info, warn or error",
                          r->source, r->text);
    return 0;
}

static int parse_log_format(const raw_t *r, server_options_t *o, char *err, size_t errlen) {
    char sub[192];
    if (log_format_parse(r->text, &o->log_format, sub, sizeof sub))
        return kgs_seterr(err, errlen, KGS_EINVAL, "%s: %s", r->source, sub);
    return 0;
}

static int parse_gpu_backend(const raw_t *r, server_options_t *o, char *err, size_t errlen) {
    char sub[192];
    if (gpu_backend_kind_parse(r->text, &o->gpu_backend, sub, sizeof sub))
        return kgs_seterr(err, errlen, KGS_EINVAL, "%s: %s", r->source, sub);
    return 0;
}

static int parse_agents(const raw_t *r, server_options_t *o, char *err, size_t errlen) {
    if (!r->text[0])
        return kgs_seterr(err, errlen, KGS_EINVAL, "%s: needs a comma-separated list of HOST:PORT",
                          r->source);
    o->agents = r->text;
    return 0;
}

static int parse_agents_dns(const raw_t *r, server_options_t *o, char *err, size_t errlen) {
    if (!strchr(r->text, ':'))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s: invalid \"%s\": expected NAME:PORT (e.g. "
                          "keda-gpu-scaler-agents.keda.svc:6000)",
                          r->source, r->text);
    o->agents_dns = r->text;
    return 0;
}

static int parse_agents_tls_server_name(const raw_t *r, server_options_t *o, char *err,
                                        size_t errlen) {
    size_t n = strlen(r->text);
    bool ok = n > 0 && n <= 253;
    for (const char *c = r->text; ok && *c; c++)
        ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
             *c == '-' || *c == '.' || *c == ':' || *c == '*';
    if (!ok)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s: invalid name \"%s\": must be the DNS name (or IP) on the "
                          "agents' certificate, e.g. keda-gpu-scaler-agents.keda.svc",
                          r->source, r->text);
    o->agents_tls_server_name = r->text;
    return 0;
}

/* Not OPT_COUNT: strtoull's leading spaces and '+' were always taken here,
 * and the message names 256 MiB. */
static int parse_source_max_bytes(const raw_t *r, server_options_t *o, char *err, size_t errlen) {
    char *end = NULL;
    errno = 0;
    unsigned long long bytes = strtoull(r->text, &end, 10);
    if (!r->text[0] || *end || errno || r->text[0] == '-' || bytes < 4096 || bytes > 268435456ull)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s: invalid byte count \"%s\": must be a whole number from 4096 "
                          "to 268435456 (256 MiB)",
                          r->source, r->text);
    o->source_max_bytes = (size_t)bytes;
    return 0;
}

static int parse_source_create_rate(const raw_t *r, server_options_t *o, char *err, size_t errlen) {
    char *end = NULL;
    errno = 0;
    double rate = strtod(r->text, &end);
    unsigned long long burst = o->source_create_burst;
    bool ok = end != r->text && !errno && rate >= 0.1 && rate <= 100000;
    if (ok && strncmp(end, "/s", 2) == 0)
        end += 2;
    if (ok && *end == ',') {
        char *bend = NULL;
        burst = strtoull(end + 1, &bend, 10);
        ok = bend != end + 1 && !*bend && end[1] >= '0' && end[1] <= '9' && burst >= 1 &&
             burst <= 100000;
    } else if (ok) {
        ok = !*end;
    }
    if (!ok)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s: invalid rate \"%s\": expected RATE[/s][,BURST], RATE 0.1 to "
                          "100000 sources per second, BURST 1 to 100000 (e.g. 20/s,50)",
                          r->source, r->text);
    o->source_create_rate = rate;
    o->source_create_burst = (size_t)burst;
    return 0;
}

static int parse_source_auth(const raw_t *r, server_options_t *o, char *err, size_t errlen) {
    char why[400];
    if (source_auth_parse(r->text, &o->source_auth, why, sizeof why) != 0)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s: %s; see --help and docs/configuration.md, \"Authenticated "
                          "scrapes\"",
                          r->source, why);
    return 0;
}

/* The parsers of these lists name the flag in their message already; an
 * environment variable is named in front of it. */
static int why_names_flag(const raw_t *r, const char *why, char *err, size_t errlen) {
    return r->source[0] == '-' ? kgs_seterr(err, errlen, KGS_EINVAL, "%s", why)
                               : kgs_seterr(err, errlen, KGS_EINVAL, "%s: %s", r->source, why);
}

static int parse_cross_ns(const raw_t *r, server_options_t *o, char *err, size_t errlen) {
    char why[400];
    if (tenant_cross_ns_parse(r->text, &o->cross_ns, why, sizeof why) != 0)
        return why_names_flag(r, why, err, errlen);
    return 0;
}

static int parse_allow_cidrs(const raw_t *r, server_options_t *o, char *err, size_t errlen) {
    char why[300];
    if (egress_parse_cidrs(r->text, &o->egress, why, sizeof why) != 0)
        return why_names_flag(r, why, err, errlen);
    return 0;
}

static int parse_allow_ports(const raw_t *r, server_options_t *o, char *err, size_t errlen) {
    char why[300];
    if (egress_parse_ports(r->text, &o->egress, why, sizeof why) != 0)
        return why_names_flag(r, why, err, errlen);
    return 0;
}

#define F(field) offsetof(server_options_t, field)
#define BIG ((unsigned long long)SIZE_MAX / 2)
#define MIB (1024u * 1024)

/*
 * Every flag, in the order the flags and variables are applied (and so in
 * which their errors are reported). The --help text is prose and written
 * by hand; a unit test keeps it and this table naming the same flags.
 * --version and --help take no value and are matched before the table.
 */
static const opt_def_t opt_table[] = {
    {"role", OPT_CUSTOM, F(role), .def_text = "standalone", .parse = parse_role},
    {"listen-address", OPT_ADDRESS, F(listen_address), .def_text = "0.0.0.0"},
    {"port", OPT_PORT, F(port), .def = SERVER_DEFAULT_PORT},
    {"metrics-port", OPT_PORT, F(metrics_port), .def = SERVER_DEFAULT_METRICS_PORT},
    {"probe-port", OPT_PORT, F(probe_port), .def = SERVER_DEFAULT_PROBE_PORT},
    {"sample-interval", OPT_DURATION, F(sample_interval_ns), .def = SAMPLER_DEFAULT_INTERVAL_NS,
     .min = SAMPLER_MIN_INTERVAL_NS},
    {"stale-after", OPT_DURATION, F(stale_after_ns)}, /* 0: 3 x --sample-interval */
    {"health-check-interval", OPT_CUSTOM, F(health_check_interval_ns), .def_text = "30s",
     .parse = parse_health_check_interval},
    {"nvml-library", OPT_PATH, F(nvml_library), .noun = "library path"},
    {"node-name", OPT_CUSTOM, F(node_name), .parse = parse_node_name},
    {"tls-cert", OPT_PATH, F(tls_cert), .noun = "certificate file"},
    {"tls-key", OPT_PATH, F(tls_key), .noun = "key file"},
    {"tls-client-ca", OPT_PATH, F(tls_client_ca), .noun = "CA file"},
    {"log-level", OPT_CUSTOM, F(log_level), .def_text = "info", .parse = parse_log_level},
    {"log-format", OPT_CUSTOM, F(log_format), .def_text = "text", .parse = parse_log_format},
    {"max-connections", OPT_UINT, F(max_connections), .def = SERVER_DEFAULT_MAX_CONNECTIONS,
     .min = 1, .max = SERVER_MAX_MAX_CONNECTIONS, .noun = "connection limit"},
    {"max-connections-per-peer", OPT_UINT, F(max_connections_per_peer), /* 0: half the cap */
     .min = 1, .max = SERVER_MAX_MAX_CONNECTIONS, .noun = "connection limit",
     .hint = " (default: half of --max-connections)"},
    {"idle-timeout", OPT_DURATION, F(idle_timeout_ns), .def = 600 * NS_PER_SEC},
    {"shutdown-grace", OPT_DURATION, F(shutdown_grace_ns), .def = 5 * NS_PER_SEC},
    {"handshake-timeout", OPT_DURATION, F(handshake_timeout_ns), .def = 10 * NS_PER_SEC,
     .min = 100 * NS_PER_MS,
     .hint = "is too short: a TLS handshake and the first request need at least 100ms "
             "(default 10s)"},
    {"kubelet-socket", OPT_PATH_OR_NONE, F(kubelet_socket),
     .def_text = "/var/lib/kubelet/pod-resources/kubelet.sock", .noun = "kubelet socket"},
    {"proc-root", OPT_PATH_OR_NONE, F(proc_root), .noun = "proc root",
     .hint = " (/proc with hostPID)"},
    {"gpu-backend", OPT_CUSTOM, F(gpu_backend), .def_text = "auto", .parse = parse_gpu_backend},
    {"sys-root", OPT_PATH, F(sys_root), .noun = "sysfs root"},
    {"agents", OPT_CUSTOM, F(agents), .parse = parse_agents},
    {"agents-dns", OPT_CUSTOM, F(agents_dns), .parse = parse_agents_dns},
    {"agents-tls-ca", OPT_PATH, F(agents_tls_ca), .noun = "CA file"},
    {"agents-tls-cert", OPT_PATH, F(agents_tls_cert), .noun = "certificate file"},
    {"agents-tls-key", OPT_PATH, F(agents_tls_key), .noun = "key file"},
    {"agents-tls-server-name", OPT_CUSTOM, F(agents_tls_server_name),
     .parse = parse_agents_tls_server_name},
    {"kube-api", OPT_STRING, F(kube_api)},
    {"kube-token-file", OPT_STRING, F(kube_token_file)},
    {"kube-ca-file", OPT_STRING, F(kube_ca_file)},
    {"source-ca-file", OPT_PATH, F(source_ca_file), .noun = "CA file"},
    {"source-max-bytes", OPT_CUSTOM, F(source_max_bytes), .def_text = "8388608",
     .parse = parse_source_max_bytes},
    {"source-auth", OPT_CUSTOM, F(source_auth), .parse = parse_source_auth},
    {"max-request-bytes", OPT_COUNT, F(max_request_bytes), .def = SERVER_DEFAULT_MAX_REQUEST_BYTES,
     .min = 1024, .max = 4194304, .noun = "byte count"},
    {"max-metadata-entries", OPT_COUNT, F(max_metadata_entries),
     .def = SCALER_DEFAULT_MAX_METADATA_ENTRIES, .min = 1, .max = 100000, .noun = "entry count"},
    {"max-metadata-bytes", OPT_COUNT, F(max_metadata_bytes),
     .def = SCALER_DEFAULT_MAX_METADATA_BYTES, .min = 256, .max = 4194304, .noun = "byte count"},
    {"config-cache-bytes", OPT_COUNT, F(config_cache_bytes),
     .def = SCALER_DEFAULT_CONFIG_CACHE_BYTES, .min = MIB, .max = BIG, .noun = "byte count"},
    {"max-stream-bytes", OPT_COUNT, F(max_stream_bytes), .def = SCALER_DEFAULT_MAX_STREAM_BYTES,
     .min = 65536, .max = BIG, .noun = "byte count"},
    {"max-sources", OPT_COUNT, F(max_sources), .def = 1024, .min = 1, .max = 100000,
     .noun = "source count"},
    {"max-sources-per-namespace", OPT_COUNT, F(max_sources_per_ns), .def = 512, .min = 1,
     .max = 100000, .noun = "source count"},
    {"source-create-rate", OPT_CUSTOM, F(source_create_rate), .def_text = "100/s,512",
     .parse = parse_source_create_rate}, /* and source_create_burst */
    {"source-allow-cidrs", OPT_CUSTOM, F(egress), .parse = parse_allow_cidrs},
    {"source-allow-ports", OPT_CUSTOM, F(egress), .parse = parse_allow_ports},
    {"allow-cross-namespace", OPT_CUSTOM, F(cross_ns), .parse = parse_cross_ns},
    /* 0: derived from --max-request-bytes after all are parsed */
    {"max-buffered-bytes-per-connection", OPT_COUNT, F(max_buffered_bytes_per_connection),
     .min = 65536, .max = 2147483647, .noun = "byte count"},
    {"max-buffered-bytes", OPT_COUNT, F(max_buffered_bytes), .min = 65536, .max = BIG,
     .noun = "byte count"},
    /* issue 28: budgets shared between tenants */
    {"source-read-bytes", OPT_COUNT, F(source_read_bytes), .def = 32 * MIB, .min = MIB, .max = BIG,
     .noun = "byte count"},
    {"source-read-rate", OPT_COUNT, F(source_read_rate), .def = 64 * MIB, .min = 65536, .max = BIG,
     .noun = "bytes-per-second count"},
    {"subscription-bytes", OPT_COUNT, F(subscription_bytes), .def = 16 * MIB, .min = MIB,
     .max = BIG, .noun = "byte count"},
    {"source-idle", OPT_DURATION, F(source_idle_ns), .def = 600 * NS_PER_SEC, .min = NS_PER_SEC,
     .max = 86400 * NS_PER_SEC, .hint = "is out of range: 1s to 24h (default 10m)"},
};

#undef F
#undef BIG
#undef MIB

#define OPT_N (sizeof opt_table / sizeof opt_table[0])

const char *server_options_flag_name(size_t i) {
    return i < OPT_N ? opt_table[i].name : NULL;
}

static int unknown_flag(const char *arg, char *err, size_t errlen) {
    const char *name = arg + (arg[1] == '-' ? 2 : 1);
    size_t len = strcspn(name, "=");
    const char *names[OPT_N + 2];
    for (size_t i = 0; i < OPT_N; i++)
        names[i] = opt_table[i].name;
    names[OPT_N] = "version"; /* the flags that take no value */
    names[OPT_N + 1] = "help";
    const char *best = suggest_name(name, len, names, OPT_N + 2);
    if (best)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "unknown flag %.*s (did you mean --%s?); see --help",
                          (int)(len + (size_t)(name - arg)), arg, best);
    return kgs_seterr(err, errlen, KGS_EINVAL, "unknown flag %.*s; see --help",
                      (int)(len + (size_t)(name - arg)), arg);
}

/* Checks r's text as row d says and stores it in its field of *o. */
static int apply(const opt_def_t *d, const raw_t *r, server_options_t *o, char *err,
                 size_t errlen) {
    void *field = (char *)o + d->off;
    switch (d->kind) {
    case OPT_PORT:
        return parse_port(r, field, err, errlen);
    case OPT_DURATION:
        return parse_duration_in(d, r, field, err, errlen);
    case OPT_UINT:
        return parse_unsigned(d, r, field, err, errlen);
    case OPT_COUNT:
        return parse_count(r, d->min, d->max, d->noun, field, err, errlen);
    case OPT_PATH:
        return parse_nonempty(r, field, d->noun, err, errlen);
    case OPT_STRING:
        *(const char **)field = r->text;
        return 0;
    case OPT_ADDRESS:
        return parse_address(r, field, err, errlen);
    case OPT_PATH_OR_NONE:
        return parse_path_or_none(d, r, field, err, errlen);
    case OPT_CUSTOM:
        return d->parse(r, o, err, errlen);
    }
    return 0;
}

static void set_defaults(server_options_t *o) {
    memset(o, 0, sizeof *o);
    for (size_t i = 0; i < OPT_N; i++) {
        const opt_def_t *d = &opt_table[i];
        void *field = (char *)o + d->off;
        switch (d->kind) {
        case OPT_PORT:
            *(uint16_t *)field = (uint16_t)d->def;
            break;
        case OPT_DURATION:
            *(uint64_t *)field = (uint64_t)d->def;
            break;
        case OPT_UINT:
            *(unsigned *)field = (unsigned)d->def;
            break;
        case OPT_COUNT:
            *(size_t *)field = (size_t)d->def;
            break;
        case OPT_PATH:
        case OPT_STRING:
        case OPT_ADDRESS:
        case OPT_PATH_OR_NONE:
            *(const char **)field = d->def_text;
            break;
        case OPT_CUSTOM:
            /* The default is text the row's own parser takes, so it is
             * checked like a flag's; failing would be a bug in the table. */
            if (d->def_text) {
                raw_t r = {.text = d->def_text, .source = "default"};
                int rc = d->parse(&r, o, NULL, 0);
                assert(rc == 0);
                (void)rc;
            }
            break;
        }
    }
}

static void env_name(const char *flag, char *out, size_t outlen) {
    size_t n = (size_t)snprintf(out, outlen, "%s", SERVER_ENV_PREFIX);
    for (const char *p = flag; *p && n + 1 < outlen; p++)
        out[n++] = *p == '-' ? '_' : (char)(*p - (*p >= 'a' && *p <= 'z' ? 'a' - 'A' : 0));
    out[n] = '\0';
}

/* The name an error should give for the flag `name`: where its text came
 * from ("--port" or "KEDA_GPU_SCALER_PORT"), or "--NAME" when not given. */
static const char *src_or_flag(const raw_t *raw, const char *name, char *buf, size_t buflen) {
    for (size_t k = 0; k < OPT_N; k++)
        if (raw[k].text && strcmp(opt_table[k].name, name) == 0)
            return raw[k].source;
    snprintf(buf, buflen, "--%s", name);
    return buf;
}

/* Two ports that are both enabled must differ, or the second bind fails
 * later with a less helpful message. */
static int check_ports(const server_options_t *o, const raw_t *raw, char *err, size_t errlen) {
    static const char *const names[] = {"port", "metrics-port", "probe-port"};
    const uint16_t vals[] = {o->port, o->metrics_port, o->probe_port};
    char b1[64], b2[64];
    for (size_t i = 0; i < 3; i++)
        for (size_t j = i + 1; j < 3; j++)
            if (vals[i] != 0 && vals[i] == vals[j])
                return kgs_seterr(err, errlen, KGS_EINVAL,
                                  "%s and %s are both %u: use different ports (0 disables "
                                  "--metrics-port or --probe-port)",
                                  src_or_flag(raw, names[i], b1, sizeof b1),
                                  src_or_flag(raw, names[j], b2, sizeof b2), (unsigned)vals[i]);
    return 0;
}

int server_options_parse(int argc, char **argv, env_getter_fn get, void *ud, server_options_t *o,
                         char *err, size_t errlen) {
    set_defaults(o);
    raw_t raw[OPT_N];
    memset(raw, 0, sizeof raw);
    int first_err = 0;
    char first_msg[512] = "", first_text[512] = "";

    /* Pass 1: argv. */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *iv = NULL;
        int rc = 0;
        bool matched = false;
        if (strcmp(a, "version") == 0 && argc == 2) {
            o->version = true; /* the Go server's bare "version" argument */
            continue;
        }
        if (strcmp(a, "-h") == 0) {
            o->help = true;
            continue;
        }
        if (flag_match(a, "version", &iv)) {
            rc = parse_bool(iv, "version", &o->version, first_msg, sizeof first_msg);
            matched = true;
        } else if (flag_match(a, "help", &iv)) {
            rc = parse_bool(iv, "help", &o->help, first_msg, sizeof first_msg);
            matched = true;
        }
        for (size_t k = 0; !matched && k < OPT_N; k++) {
            if (!flag_match(a, opt_table[k].name, &iv))
                continue;
            matched = true;
            if (!iv) {
                if (i + 1 >= argc) {
                    rc = kgs_seterr(first_msg, sizeof first_msg, KGS_EINVAL,
                                    "flag --%s needs a value", opt_table[k].name);
                    break;
                }
                iv = argv[++i];
            }
            raw[k].text = iv;
            snprintf(raw[k].source, sizeof raw[k].source, "--%s", opt_table[k].name);
        }
        if (!matched) {
            if (a[0] == '-' && a[1] != '\0')
                rc = unknown_flag(a, first_msg, sizeof first_msg);
            else
                rc = kgs_seterr(first_msg, sizeof first_msg, KGS_EINVAL,
                                "unexpected argument \"%s\": this program takes only flags; see "
                                "--help",
                                a);
        }
        /* Keep scanning after an error: a later --help still wins. */
        if (rc && !first_err) {
            first_err = rc;
            snprintf(first_text, sizeof first_text, "%s", first_msg);
        }
    }
    if (o->help || o->version)
        return 0;
    if (first_err)
        return kgs_seterr(err, errlen, first_err, "%s", first_text);

    /* Pass 2: variables fill what no flag gave, then everything is checked. */
    for (size_t k = 0; k < OPT_N; k++) {
        if (!raw[k].text && get) {
            char name[64];
            env_name(opt_table[k].name, name, sizeof name);
            const char *v = get(name, ud);
            if (v && v[0]) {
                raw[k].text = v;
                snprintf(raw[k].source, sizeof raw[k].source, "%s", name);
            }
        }
        if (raw[k].text) {
            int rc = apply(&opt_table[k], &raw[k], o, err, errlen);
            if (rc)
                return rc;
        }
    }

    char b1[64], b2[64];
    if (o->stale_after_ns == 0) {
        o->stale_after_ns =
            o->sample_interval_ns > UINT64_MAX / 3 ? UINT64_MAX : 3 * o->sample_interval_ns;
    } else if (o->stale_after_ns <= o->sample_interval_ns) {
        char d1[32], d2[32];
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s %s must be longer than %s %s: a snapshot is that old "
                          "just before the next one",
                          src_or_flag(raw, "stale-after", b1, sizeof b1),
                          duration_format(o->stale_after_ns, d1, sizeof d1),
                          src_or_flag(raw, "sample-interval", b2, sizeof b2),
                          duration_format(o->sample_interval_ns, d2, sizeof d2));
    }
    /* The buffered-bytes budgets hold at least one request: defaults grow
     * with --max-request-bytes, a value given too small is an error. */
    size_t one = o->max_request_bytes + 5;
    if (!o->max_buffered_bytes_per_connection)
        o->max_buffered_bytes_per_connection = one > SERVER_DEFAULT_MAX_BUFFERED_PER_CONNECTION
                                                   ? one
                                                   : SERVER_DEFAULT_MAX_BUFFERED_PER_CONNECTION;
    else if (o->max_buffered_bytes_per_connection < one)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s %zu is less than one request message: at least %zu "
                          "(--max-request-bytes %zu + 5 bytes of gRPC framing)",
                          src_or_flag(raw, "max-buffered-bytes-per-connection", b1, sizeof b1),
                          o->max_buffered_bytes_per_connection, one, o->max_request_bytes);
    if (!o->max_buffered_bytes)
        o->max_buffered_bytes = o->max_buffered_bytes_per_connection > SERVER_DEFAULT_MAX_BUFFERED
                                    ? o->max_buffered_bytes_per_connection
                                    : SERVER_DEFAULT_MAX_BUFFERED;
    else if (o->max_buffered_bytes < o->max_buffered_bytes_per_connection)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s %zu is less than the per-connection budget %zu: at least that",
                          src_or_flag(raw, "max-buffered-bytes", b1, sizeof b1),
                          o->max_buffered_bytes, o->max_buffered_bytes_per_connection);
    if (o->tls_cert && !o->tls_key)
        return kgs_seterr(err, errlen, KGS_EINVAL, "%s needs --tls-key: give both or neither",
                          src_or_flag(raw, "tls-cert", b1, sizeof b1));
    if (o->tls_key && !o->tls_cert)
        return kgs_seterr(err, errlen, KGS_EINVAL, "%s needs --tls-cert: give both or neither",
                          src_or_flag(raw, "tls-key", b1, sizeof b1));
    if (o->tls_client_ca && !o->tls_cert)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s needs --tls-cert and --tls-key: client certificates are checked "
                          "only on a TLS listener",
                          src_or_flag(raw, "tls-client-ca", b1, sizeof b1));
    if (o->role == SERVER_ROLE_AGENT && o->tls_cert && !o->tls_client_ca)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "--role agent with %s needs --tls-client-ca: an agent's Watch gives "
                          "every pod's name on the node to whoever calls it, so with TLS the "
                          "aggregators must prove themselves with client certificates "
                          "(--agents-tls-cert on the aggregator)",
                          src_or_flag(raw, "tls-cert", b1, sizeof b1));
    if (o->agents_tls_cert && !o->agents_tls_key)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s needs --agents-tls-key: give both or neither",
                          src_or_flag(raw, "agents-tls-cert", b1, sizeof b1));
    if (o->agents_tls_key && !o->agents_tls_cert)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s needs --agents-tls-cert: give both or neither",
                          src_or_flag(raw, "agents-tls-key", b1, sizeof b1));
    if (!o->agents_tls_ca && (o->agents_tls_cert || o->agents_tls_server_name))
        return kgs_seterr(
            err, errlen, KGS_EINVAL,
            "%s needs --agents-tls-ca: TLS to the agents is on only with the CA "
            "that signed the agents' certificates",
            src_or_flag(raw, o->agents_tls_cert ? "agents-tls-cert" : "agents-tls-server-name", b1,
                        sizeof b1));
    if (o->role == SERVER_ROLE_AGGREGATOR && !o->agents && !o->agents_dns)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "--role aggregator needs --agents HOST:PORT,... or --agents-dns "
                          "NAME:PORT (the agents' headless Service)");
    if (o->role == SERVER_ROLE_AGENT && o->source_auth.n)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s is for --role standalone and aggregator: an agent reads no engine "
                          "or queue sources",
                          src_or_flag(raw, "source-auth", b1, sizeof b1));
    if (o->role != SERVER_ROLE_AGGREGATOR && o->cross_ns.n)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s is for --role aggregator: only it selects pods (podSelector)",
                          src_or_flag(raw, "allow-cross-namespace", b1, sizeof b1));
    if (o->role != SERVER_ROLE_AGGREGATOR && (o->agents || o->agents_dns || o->kube_api))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "--agents, --agents-dns and --kube-api are for --role aggregator");
    if (o->role != SERVER_ROLE_AGGREGATOR && o->agents_tls_ca)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s is for --role aggregator (how it dials the agents); an agent "
                          "takes --tls-cert, --tls-key and --tls-client-ca",
                          src_or_flag(raw, "agents-tls-ca", b1, sizeof b1));
    return check_ports(o, raw, err, errlen);
}

void server_options_start_line(const server_options_t *o, const char *version, const char *node,
                               unsigned port, bool tls, char *buf, size_t len) {
    const role_caps_t *caps = role_caps(o->role == SERVER_ROLE_AGENT        ? KGS_ROLE_AGENT
                                        : o->role == SERVER_ROLE_AGGREGATOR ? KGS_ROLE_AGGREGATOR
                                                                            : KGS_ROLE_STANDALONE);
    int n = snprintf(buf, len, "keda-gpu-scaler %s (%s): gRPC (%s%s) on %s:%u, ", version,
                     caps->name, tls ? "TLS" : "h2c",
                     o->tls_client_ca ? ", client certificates" : "", o->listen_address, port);
    if (n < 0 || (size_t)n >= len)
        return;
    if (caps->reads_nvml)
        snprintf(buf + n, len - (size_t)n, "node %s, sampling NVML every %.0f ms", node,
                 (double)o->sample_interval_ns / 1e6);
    else
        snprintf(buf + n, len - (size_t)n,
                 "reading the agents' snapshots%s (no NVML here; stale after %.0f ms)",
                 !o->agents_tls_ca    ? ""
                 : o->agents_tls_cert ? " over TLS with a client certificate"
                                      : " over TLS",
                 (double)o->stale_after_ns / 1e6);
}
