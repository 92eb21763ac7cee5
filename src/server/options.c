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
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "core/duration.h"
#include "core/err.h"
#include "core/flags.h"
#include "core/roles.h"
#include "core/suggest.h"
#include "nvml/sampler.h"
#include "scaler/scaler.h"

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

typedef enum {
    O_ROLE,
    O_LISTEN_ADDRESS,
    O_PORT,
    O_METRICS_PORT,
    O_PROBE_PORT,
    O_SAMPLE_INTERVAL,
    O_STALE_AFTER,
    O_HEALTH_CHECK_INTERVAL,
    O_NVML_LIBRARY,
    O_NODE_NAME,
    O_TLS_CERT,
    O_TLS_KEY,
    O_TLS_CLIENT_CA,
    O_LOG_LEVEL,
    O_LOG_FORMAT,
    O_MAX_CONNECTIONS,
    O_MAX_CONNECTIONS_PER_PEER,
    O_IDLE_TIMEOUT,
    O_SHUTDOWN_GRACE,
    O_HANDSHAKE_TIMEOUT,
    O_KUBELET_SOCKET,
    O_PROC_ROOT,
    O_AGENTS,
    O_AGENTS_DNS,
    O_AGENTS_TLS_CA,
    O_AGENTS_TLS_CERT,
    O_AGENTS_TLS_KEY,
    O_AGENTS_TLS_SERVER_NAME,
    O_KUBE_API,
    O_KUBE_TOKEN_FILE,
    O_KUBE_CA_FILE,
    O_SOURCE_CA_FILE,
    O_SOURCE_MAX_BYTES,
    O_SOURCE_AUTH,
    O_MAX_REQUEST_BYTES,
    O_MAX_METADATA_ENTRIES,
    O_MAX_METADATA_BYTES,
    O_CONFIG_CACHE_BYTES,
    O_MAX_STREAM_BYTES,
    O_MAX_SOURCES,
    O_MAX_SOURCES_PER_NS,
    O_SOURCE_CREATE_RATE,
    O_SOURCE_ALLOW_CIDRS,
    O_SOURCE_ALLOW_PORTS,
    O_ALLOW_CROSS_NAMESPACE,
    O_MAX_BUFFERED_BYTES_PER_CONNECTION,
    O_MAX_BUFFERED_BYTES,
    /* issue 28: budgets shared between tenants */
    O_SOURCE_READ_BYTES,
    O_SOURCE_READ_RATE,
    O_SUBSCRIPTION_BYTES,
    O_SOURCE_IDLE,
    O_COUNT
} opt_id_t;

/* Flag names, in opt_id_t order; the variable is derived from the name. */
static const char *const opt_names[O_COUNT] = {
    "role",
    "listen-address",
    "port",
    "metrics-port",
    "probe-port",
    "sample-interval",
    "stale-after",
    "health-check-interval",
    "nvml-library",
    "node-name",
    "tls-cert",
    "tls-key",
    "tls-client-ca",
    "log-level",
    "log-format",
    "max-connections",
    "max-connections-per-peer",
    "idle-timeout",
    "shutdown-grace",
    "handshake-timeout",
    "kubelet-socket",
    "proc-root",
    "agents",
    "agents-dns",
    "agents-tls-ca",
    "agents-tls-cert",
    "agents-tls-key",
    "agents-tls-server-name",
    "kube-api",
    "kube-token-file",
    "kube-ca-file",
    "source-ca-file",
    "source-max-bytes",
    "source-auth",
    "max-request-bytes",
    "max-metadata-entries",
    "max-metadata-bytes",
    "config-cache-bytes",
    "max-stream-bytes",
    "max-sources",
    "max-sources-per-namespace",
    "source-create-rate",
    "source-allow-cidrs",
    "source-allow-ports",
    "allow-cross-namespace",
    "max-buffered-bytes-per-connection",
    "max-buffered-bytes",
    "source-read-bytes",
    "source-read-rate",
    "subscription-bytes",
    "source-idle",
};

#define DEFAULT_HEALTH_CHECK_INTERVAL_NS (30 * NS_PER_SEC)
#define DEFAULT_IDLE_TIMEOUT_NS (600 * NS_PER_SEC)
#define DEFAULT_SHUTDOWN_GRACE_NS (5 * NS_PER_SEC)
#define MIN_HEALTH_CHECK_INTERVAL_NS (100 * NS_PER_MS)

/* Where one option's text came from: "--port" or "KEDA_GPU_SCALER_PORT". */
typedef struct {
    const char *text; /* NULL = not given */
    char source[64];
} raw_t;

static int unknown_flag(const char *arg, char *err, size_t errlen) {
    const char *name = arg + (arg[1] == '-' ? 2 : 1);
    size_t len = strcspn(name, "=");
    const char *names[O_COUNT + 2];
    for (int i = 0; i < O_COUNT; i++)
        names[i] = opt_names[i];
    names[O_COUNT] = "version"; /* the flags that take no value */
    names[O_COUNT + 1] = "help";
    const char *best = suggest_name(name, len, names, O_COUNT + 2);
    if (best)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "unknown flag %.*s (did you mean --%s?); see --help",
                          (int)(len + (size_t)(name - arg)), arg, best);
    return kgs_seterr(err, errlen, KGS_EINVAL, "unknown flag %.*s; see --help",
                      (int)(len + (size_t)(name - arg)), arg);
}

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

static int parse_node_name(const raw_t *r, const char **out, char *err, size_t errlen) {
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
    *out = r->text;
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

static int apply(opt_id_t id, const raw_t *r, server_options_t *o, char *err, size_t errlen) {
    char sub[192];
    unsigned long v;
    switch (id) {
    case O_ROLE:
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
                          "%s: invalid role \"%s\": must be standalone, agent or aggregator",
                          r->source, r->text);
    case O_LISTEN_ADDRESS:
        return parse_address(r, &o->listen_address, err, errlen);
    case O_PORT:
        return parse_port(r, &o->port, err, errlen);
    case O_METRICS_PORT:
        return parse_port(r, &o->metrics_port, err, errlen);
    case O_PROBE_PORT:
        return parse_port(r, &o->probe_port, err, errlen);
    case O_SAMPLE_INTERVAL:
        if (parse_duration(r, &o->sample_interval_ns, err, errlen))
            return KGS_EINVAL;
        if (o->sample_interval_ns < SAMPLER_MIN_INTERVAL_NS)
            return kgs_seterr(err, errlen, KGS_EINVAL, "%s: %s is too short: the minimum is %s",
                              r->source, r->text,
                              duration_format(SAMPLER_MIN_INTERVAL_NS, sub, sizeof sub));
        return 0;
    case O_STALE_AFTER:
        return parse_duration(r, &o->stale_after_ns, err, errlen);
    case O_HEALTH_CHECK_INTERVAL:
        if (parse_duration(r, &o->health_check_interval_ns, err, errlen))
            return KGS_EINVAL;
        if (o->health_check_interval_ns == 0) /* as the Go server: 0 means 30s */
            o->health_check_interval_ns = DEFAULT_HEALTH_CHECK_INTERVAL_NS;
        if (o->health_check_interval_ns < MIN_HEALTH_CHECK_INTERVAL_NS)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "%s: %s is too short: the minimum is 100ms (0 means 30s)", r->source,
                              r->text);
        return 0;
    case O_NVML_LIBRARY:
        return parse_nonempty(r, &o->nvml_library, "library path", err, errlen);
    case O_NODE_NAME:
        return parse_node_name(r, &o->node_name, err, errlen);
    case O_TLS_CERT:
        return parse_nonempty(r, &o->tls_cert, "certificate file", err, errlen);
    case O_TLS_KEY:
        return parse_nonempty(r, &o->tls_key, "key file", err, errlen);
    case O_TLS_CLIENT_CA:
        return parse_nonempty(r, &o->tls_client_ca, "CA file", err, errlen);
    case O_LOG_LEVEL:
        /* The Go server silently took anything unknown as info. */
        if (strcmp(r->text, "off") == 0 || log_level_parse(r->text, &o->log_level, NULL, 0))
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "%s: invalid log level \"%s\": must be debug, info, warn or error",
                              r->source, r->text);
        return 0;
    case O_LOG_FORMAT:
        if (log_format_parse(r->text, &o->log_format, sub, sizeof sub))
            return kgs_seterr(err, errlen, KGS_EINVAL, "%s: %s", r->source, sub);
        return 0;
    case O_MAX_CONNECTIONS:
        if (!parse_uint(r->text, SERVER_MAX_MAX_CONNECTIONS, &v) || v == 0)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "%s: invalid connection limit \"%s\": must be 1..%u", r->source,
                              r->text, SERVER_MAX_MAX_CONNECTIONS);
        o->max_connections = (unsigned)v;
        return 0;
    case O_MAX_CONNECTIONS_PER_PEER:
        if (!parse_uint(r->text, SERVER_MAX_MAX_CONNECTIONS, &v) || v == 0)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "%s: invalid connection limit \"%s\": must be 1..%u (default: "
                              "half of --max-connections)",
                              r->source, r->text, SERVER_MAX_MAX_CONNECTIONS);
        o->max_connections_per_peer = (unsigned)v;
        return 0;
    case O_IDLE_TIMEOUT:
        return parse_duration(r, &o->idle_timeout_ns, err, errlen);
    case O_SHUTDOWN_GRACE:
        return parse_duration(r, &o->shutdown_grace_ns, err, errlen);
    case O_HANDSHAKE_TIMEOUT:
        if (parse_duration(r, &o->handshake_timeout_ns, err, errlen) != 0)
            return KGS_EINVAL;
        if (o->handshake_timeout_ns < 100 * NS_PER_MS)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "%s: %s is too short: a TLS handshake and the first request need "
                              "at least 100ms (default 10s)",
                              r->source, r->text);
        return 0;
    case O_KUBELET_SOCKET:
        if (!r->text[0] || (strcmp(r->text, "none") != 0 && r->text[0] != '/'))
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "%s: invalid kubelet socket \"%s\": must be an absolute path or "
                              "none",
                              r->source, r->text);
        o->kubelet_socket = strcmp(r->text, "none") == 0 ? NULL : r->text;
        return 0;
    case O_PROC_ROOT:
        if (!r->text[0] || (strcmp(r->text, "none") != 0 && r->text[0] != '/'))
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "%s: invalid proc root \"%s\": must be an absolute path (/proc "
                              "with hostPID) or none",
                              r->source, r->text);
        o->proc_root = strcmp(r->text, "none") == 0 ? NULL : r->text;
        return 0;
    case O_AGENTS:
        if (!r->text[0])
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "%s: needs a comma-separated list of HOST:PORT", r->source);
        o->agents = r->text;
        return 0;
    case O_AGENTS_DNS:
        if (!strchr(r->text, ':'))
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "%s: invalid \"%s\": expected NAME:PORT (e.g. "
                              "keda-gpu-scaler-agents.keda.svc:6000)",
                              r->source, r->text);
        o->agents_dns = r->text;
        return 0;
    case O_AGENTS_TLS_CA:
        return parse_nonempty(r, &o->agents_tls_ca, "CA file", err, errlen);
    case O_AGENTS_TLS_CERT:
        return parse_nonempty(r, &o->agents_tls_cert, "certificate file", err, errlen);
    case O_AGENTS_TLS_KEY:
        return parse_nonempty(r, &o->agents_tls_key, "key file", err, errlen);
    case O_AGENTS_TLS_SERVER_NAME: {
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
    case O_KUBE_API:
        o->kube_api = r->text;
        return 0;
    case O_KUBE_TOKEN_FILE:
        o->kube_token_file = r->text;
        return 0;
    case O_KUBE_CA_FILE:
        o->kube_ca_file = r->text;
        return 0;
    case O_SOURCE_CA_FILE:
        return parse_nonempty(r, &o->source_ca_file, "CA file", err, errlen);
    case O_SOURCE_MAX_BYTES: {
        char *end = NULL;
        errno = 0;
        unsigned long long bytes = strtoull(r->text, &end, 10);
        if (!r->text[0] || *end || errno || r->text[0] == '-' || bytes < 4096 ||
            bytes > 268435456ull)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "%s: invalid byte count \"%s\": must be a whole number from 4096 "
                              "to 268435456 (256 MiB)",
                              r->source, r->text);
        o->source_max_bytes = (size_t)bytes;
        return 0;
    }
    case O_MAX_REQUEST_BYTES:
        return parse_count(r, 1024, 4194304, "byte count", &o->max_request_bytes, err, errlen);
    case O_MAX_METADATA_ENTRIES:
        return parse_count(r, 1, 100000, "entry count", &o->max_metadata_entries, err, errlen);
    case O_MAX_METADATA_BYTES:
        return parse_count(r, 256, 4194304, "byte count", &o->max_metadata_bytes, err, errlen);
    case O_CONFIG_CACHE_BYTES:
        return parse_count(r, 1048576, (unsigned long long)SIZE_MAX / 2, "byte count",
                           &o->config_cache_bytes, err, errlen);
    case O_MAX_STREAM_BYTES:
        return parse_count(r, 65536, (unsigned long long)SIZE_MAX / 2, "byte count",
                           &o->max_stream_bytes, err, errlen);
    case O_MAX_SOURCES:
        return parse_count(r, 1, 100000, "source count", &o->max_sources, err, errlen);
    case O_MAX_SOURCES_PER_NS:
        return parse_count(r, 1, 100000, "source count", &o->max_sources_per_ns, err, errlen);
    case O_SOURCE_CREATE_RATE: {
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
    case O_SOURCE_AUTH: {
        char why[400];
        if (source_auth_parse(r->text, &o->source_auth, why, sizeof why) != 0)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "%s: %s; see --help and docs/configuration.md, \"Authenticated "
                              "scrapes\"",
                              r->source, why);
        return 0;
    }
    case O_ALLOW_CROSS_NAMESPACE: {
        char why[400];
        if (tenant_cross_ns_parse(r->text, &o->cross_ns, why, sizeof why) != 0)
            /* why names the flag; an environment variable is named too */
            return r->source[0] == '-'
                       ? kgs_seterr(err, errlen, KGS_EINVAL, "%s", why)
                       : kgs_seterr(err, errlen, KGS_EINVAL, "%s: %s", r->source, why);
        return 0;
    }
    case O_SOURCE_ALLOW_CIDRS: {
        char why[300];
        if (egress_parse_cidrs(r->text, &o->egress, why, sizeof why) != 0)
            /* why names the flag; an environment variable is named too */
            return r->source[0] == '-'
                       ? kgs_seterr(err, errlen, KGS_EINVAL, "%s", why)
                       : kgs_seterr(err, errlen, KGS_EINVAL, "%s: %s", r->source, why);
        return 0;
    }
    case O_SOURCE_ALLOW_PORTS: {
        char why[300];
        if (egress_parse_ports(r->text, &o->egress, why, sizeof why) != 0)
            /* why names the flag; an environment variable is named too */
            return r->source[0] == '-'
                       ? kgs_seterr(err, errlen, KGS_EINVAL, "%s", why)
                       : kgs_seterr(err, errlen, KGS_EINVAL, "%s: %s", r->source, why);
        return 0;
    }
    case O_MAX_BUFFERED_BYTES_PER_CONNECTION:
        return parse_count(r, 65536, 2147483647, "byte count",
                           &o->max_buffered_bytes_per_connection, err, errlen);
    case O_MAX_BUFFERED_BYTES:
        return parse_count(r, 65536, (unsigned long long)SIZE_MAX / 2, "byte count",
                           &o->max_buffered_bytes, err, errlen);
    case O_SOURCE_READ_BYTES:
        return parse_count(r, 1048576, (unsigned long long)SIZE_MAX / 2, "byte count",
                           &o->source_read_bytes, err, errlen);
    case O_SOURCE_READ_RATE:
        return parse_count(r, 65536, (unsigned long long)SIZE_MAX / 2, "bytes-per-second count",
                           &o->source_read_rate, err, errlen);
    case O_SUBSCRIPTION_BYTES:
        return parse_count(r, 1048576, (unsigned long long)SIZE_MAX / 2, "byte count",
                           &o->subscription_bytes, err, errlen);
    case O_SOURCE_IDLE:
        if (parse_duration(r, &o->source_idle_ns, err, errlen) != 0)
            return KGS_EINVAL;
        if (o->source_idle_ns < NS_PER_SEC || o->source_idle_ns > 86400 * NS_PER_SEC)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "%s: %s is out of range: 1s to 24h (default 10m)", r->source,
                              r->text);
        return 0;
    case O_COUNT:
        break;
    }
    return 0;
}

static void set_defaults(server_options_t *o) {
    memset(o, 0, sizeof *o);
    o->role = SERVER_ROLE_STANDALONE;
    o->kubelet_socket = "/var/lib/kubelet/pod-resources/kubelet.sock";
    o->listen_address = "0.0.0.0";
    o->port = SERVER_DEFAULT_PORT;
    o->metrics_port = SERVER_DEFAULT_METRICS_PORT;
    o->probe_port = SERVER_DEFAULT_PROBE_PORT;
    o->sample_interval_ns = SAMPLER_DEFAULT_INTERVAL_NS;
    o->stale_after_ns = 0;
    o->health_check_interval_ns = DEFAULT_HEALTH_CHECK_INTERVAL_NS;
    o->log_level = LOG_INFO;
    o->log_format = LOG_FORMAT_TEXT;
    o->max_connections = SERVER_DEFAULT_MAX_CONNECTIONS;
    o->idle_timeout_ns = DEFAULT_IDLE_TIMEOUT_NS;
    o->shutdown_grace_ns = DEFAULT_SHUTDOWN_GRACE_NS;
    o->handshake_timeout_ns = 10 * NS_PER_SEC;
    o->source_max_bytes = 8u * 1024 * 1024;
    o->max_request_bytes = SERVER_DEFAULT_MAX_REQUEST_BYTES;
    o->max_metadata_entries = SCALER_DEFAULT_MAX_METADATA_ENTRIES;
    o->max_metadata_bytes = SCALER_DEFAULT_MAX_METADATA_BYTES;
    o->config_cache_bytes = SCALER_DEFAULT_CONFIG_CACHE_BYTES;
    o->max_stream_bytes = SCALER_DEFAULT_MAX_STREAM_BYTES;
    o->max_sources = 1024;
    o->max_sources_per_ns = 512;
    o->source_create_rate = 100;
    o->source_create_burst = 512;
    o->source_read_bytes = 32u * 1024 * 1024;
    o->source_read_rate = 64u * 1024 * 1024;
    o->subscription_bytes = 16u * 1024 * 1024;
    o->source_idle_ns = 600 * NS_PER_SEC;
}

static void env_name(const char *flag, char *out, size_t outlen) {
    size_t n = (size_t)snprintf(out, outlen, "%s", SERVER_ENV_PREFIX);
    for (const char *p = flag; *p && n + 1 < outlen; p++)
        out[n++] = *p == '-' ? '_' : (char)(*p - (*p >= 'a' && *p <= 'z' ? 'a' - 'A' : 0));
    out[n] = '\0';
}

static const char *src_or_flag(const raw_t *raw, opt_id_t id, char *buf, size_t buflen) {
    if (raw[id].text)
        return raw[id].source;
    snprintf(buf, buflen, "--%s", opt_names[id]);
    return buf;
}

/* Two ports that are both enabled must differ, or the second bind fails
 * later with a less helpful message. */
static int check_ports(const server_options_t *o, const raw_t *raw, char *err, size_t errlen) {
    static const opt_id_t ids[] = {O_PORT, O_METRICS_PORT, O_PROBE_PORT};
    const uint16_t vals[] = {o->port, o->metrics_port, o->probe_port};
    char b1[64], b2[64];
    for (size_t i = 0; i < 3; i++)
        for (size_t j = i + 1; j < 3; j++)
            if (vals[i] != 0 && vals[i] == vals[j])
                return kgs_seterr(err, errlen, KGS_EINVAL,
                                  "%s and %s are both %u: use different ports (0 disables "
                                  "--metrics-port or --probe-port)",
                                  src_or_flag(raw, ids[i], b1, sizeof b1),
                                  src_or_flag(raw, ids[j], b2, sizeof b2), (unsigned)vals[i]);
    return 0;
}

int server_options_parse(int argc, char **argv, env_getter_fn get, void *ud, server_options_t *o,
                         char *err, size_t errlen) {
    set_defaults(o);
    raw_t raw[O_COUNT];
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
        for (int k = 0; !matched && k < O_COUNT; k++) {
            if (!flag_match(a, opt_names[k], &iv))
                continue;
            matched = true;
            if (!iv) {
                if (i + 1 >= argc) {
                    rc = kgs_seterr(first_msg, sizeof first_msg, KGS_EINVAL,
                                    "flag --%s needs a value", opt_names[k]);
                    break;
                }
                iv = argv[++i];
            }
            raw[k].text = iv;
            snprintf(raw[k].source, sizeof raw[k].source, "--%s", opt_names[k]);
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
    for (int k = 0; k < O_COUNT; k++) {
        if (!raw[k].text && get) {
            char name[64];
            env_name(opt_names[k], name, sizeof name);
            const char *v = get(name, ud);
            if (v && v[0]) {
                raw[k].text = v;
                snprintf(raw[k].source, sizeof raw[k].source, "%s", name);
            }
        }
        if (raw[k].text) {
            int rc = apply((opt_id_t)k, &raw[k], o, err, errlen);
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
                          src_or_flag(raw, O_STALE_AFTER, b1, sizeof b1),
                          duration_format(o->stale_after_ns, d1, sizeof d1),
                          src_or_flag(raw, O_SAMPLE_INTERVAL, b2, sizeof b2),
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
                          src_or_flag(raw, O_MAX_BUFFERED_BYTES_PER_CONNECTION, b1, sizeof b1),
                          o->max_buffered_bytes_per_connection, one, o->max_request_bytes);
    if (!o->max_buffered_bytes)
        o->max_buffered_bytes = o->max_buffered_bytes_per_connection > SERVER_DEFAULT_MAX_BUFFERED
                                    ? o->max_buffered_bytes_per_connection
                                    : SERVER_DEFAULT_MAX_BUFFERED;
    else if (o->max_buffered_bytes < o->max_buffered_bytes_per_connection)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s %zu is less than the per-connection budget %zu: at least that",
                          src_or_flag(raw, O_MAX_BUFFERED_BYTES, b1, sizeof b1),
                          o->max_buffered_bytes, o->max_buffered_bytes_per_connection);
    if (o->tls_cert && !o->tls_key)
        return kgs_seterr(err, errlen, KGS_EINVAL, "%s needs --tls-key: give both or neither",
                          src_or_flag(raw, O_TLS_CERT, b1, sizeof b1));
    if (o->tls_key && !o->tls_cert)
        return kgs_seterr(err, errlen, KGS_EINVAL, "%s needs --tls-cert: give both or neither",
                          src_or_flag(raw, O_TLS_KEY, b1, sizeof b1));
    if (o->tls_client_ca && !o->tls_cert)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s needs --tls-cert and --tls-key: client certificates are checked "
                          "only on a TLS listener",
                          src_or_flag(raw, O_TLS_CLIENT_CA, b1, sizeof b1));
    if (o->role == SERVER_ROLE_AGENT && o->tls_cert && !o->tls_client_ca)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "--role agent with %s needs --tls-client-ca: an agent's Watch gives "
                          "every pod's name on the node to whoever calls it, so with TLS the "
                          "aggregators must prove themselves with client certificates "
                          "(--agents-tls-cert on the aggregator)",
                          src_or_flag(raw, O_TLS_CERT, b1, sizeof b1));
    if (o->agents_tls_cert && !o->agents_tls_key)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s needs --agents-tls-key: give both or neither",
                          src_or_flag(raw, O_AGENTS_TLS_CERT, b1, sizeof b1));
    if (o->agents_tls_key && !o->agents_tls_cert)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s needs --agents-tls-cert: give both or neither",
                          src_or_flag(raw, O_AGENTS_TLS_KEY, b1, sizeof b1));
    if (!o->agents_tls_ca && (o->agents_tls_cert || o->agents_tls_server_name))
        return kgs_seterr(
            err, errlen, KGS_EINVAL,
            "%s needs --agents-tls-ca: TLS to the agents is on only with the CA "
            "that signed the agents' certificates",
            src_or_flag(raw, o->agents_tls_cert ? O_AGENTS_TLS_CERT : O_AGENTS_TLS_SERVER_NAME, b1,
                        sizeof b1));
    if (o->role == SERVER_ROLE_AGGREGATOR && !o->agents && !o->agents_dns)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "--role aggregator needs --agents HOST:PORT,... or --agents-dns "
                          "NAME:PORT (the agents' headless Service)");
    if (o->role == SERVER_ROLE_AGENT && o->source_auth.n)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s is for --role standalone and aggregator: an agent reads no engine "
                          "or queue sources",
                          src_or_flag(raw, O_SOURCE_AUTH, b1, sizeof b1));
    if (o->role != SERVER_ROLE_AGGREGATOR && o->cross_ns.n)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s is for --role aggregator: only it selects pods (podSelector)",
                          src_or_flag(raw, O_ALLOW_CROSS_NAMESPACE, b1, sizeof b1));
    if (o->role != SERVER_ROLE_AGGREGATOR && (o->agents || o->agents_dns || o->kube_api))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "--agents, --agents-dns and --kube-api are for --role aggregator");
    if (o->role != SERVER_ROLE_AGGREGATOR && o->agents_tls_ca)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "%s is for --role aggregator (how it dials the agents); an agent "
                          "takes --tls-cert, --tls-key and --tls-client-ca",
                          src_or_flag(raw, O_AGENTS_TLS_CA, b1, sizeof b1));
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
