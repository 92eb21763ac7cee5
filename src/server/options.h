/*
 * options.h - keda-gpu-scaler flags, each also settable through an
 * environment variable, parsed without side effects so the parser is
 * unit-testable.
 *
 * Flags accept "--name value", "--name=value" and the single-dash forms Go's
 * flag package accepted ("-port=6000"). The variable for --metrics-port is
 * KEDA_GPU_SCALER_METRICS_PORT (upper case, dashes as underscores). A flag
 * beats its variable, and then the variable is not even validated. A
 * variable set to "" counts as unset (templated manifests often render
 * empty values). Every value is validated here, once.
 */
#ifndef KGS_SERVER_OPTIONS_H
#define KGS_SERVER_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/egress.h"
#include "core/source_auth.h"
#include "core/tenant.h"
#include "core/log.h"
#include "env/env.h"
#include "gpu/backend_kind.h"

#define SERVER_ENV_PREFIX "KEDA_GPU_SCALER_"

typedef enum {
    SERVER_ROLE_STANDALONE = 0, /* sample this node, serve KEDA */
    SERVER_ROLE_AGENT,          /* also serve Agent/Watch (node snapshots + pod attribution) */
    SERVER_ROLE_AGGREGATOR      /* subscribe to agents, answer KEDA for workloads cluster-wide */
} server_role_t;

/* After a successful parse every field holds its final value (defaults and
 * derived values filled in). String pointers are borrowed from argv, from
 * the getter's results, or are static defaults; NULL means "not given". */
typedef struct {
    server_role_t role;          /* --role standalone */
    const char *listen_address;  /* --listen-address, default "0.0.0.0"; for all three ports */
    uint16_t port;               /* --port gRPC, default 6000; 0 = pick a free port */
    uint16_t metrics_port;       /* --metrics-port, default 9090; 0 = disabled */
    uint16_t probe_port;         /* --probe-port, default 8081; 0 = disabled */
    uint64_t sample_interval_ns; /* --sample-interval, default 1s, >= 100ms */
    uint64_t stale_after_ns;     /* --stale-after, default 3 x sample interval */
    uint64_t health_check_interval_ns; /* --health-check-interval, default 30s */
    const char *nvml_library;          /* --nvml-library, NULL = libnvidia-ml.so.1 */
    const char *node_name;             /* --node-name, NULL = main resolves NODE_NAME/hostname */
    const char *tls_cert;              /* --tls-cert, NULL = plaintext gRPC */
    const char *tls_key;               /* --tls-key */
    const char *tls_client_ca;         /* --tls-client-ca, NULL = no client certificates */
    log_level_t log_level;             /* --log-level, default info */
    log_format_t log_format;           /* --log-format, default text */
    unsigned max_connections;          /* --max-connections, default 1024 (gRPC) */
    unsigned max_connections_per_peer; /* --max-connections-per-peer; 0 = half the cap */
    uint64_t idle_timeout_ns;          /* --idle-timeout, default 10m; 0 = never */
    uint64_t shutdown_grace_ns;        /* --shutdown-grace, default 5s */
    uint64_t handshake_timeout_ns;     /* --handshake-timeout, default 10s */
    const char *kubelet_socket; /* --kubelet-socket (agent), NULL = no pod attribution ("none") */
    const char *proc_root;      /* --proc-root (agent), NULL = no per-process pods ("none") */
    gpu_backend_kind_t gpu_backend; /* --gpu-backend, default auto */
    const char *sys_root;           /* --sys-root, NULL = /sys (amdgpu-sysfs) */
    const char *agents;             /* --agents HOST:PORT,... (aggregator) */
    const char *agents_dns;         /* --agents-dns NAME:PORT (aggregator) */
    const char *agents_tls_ca;   /* --agents-tls-ca (aggregator): TLS to the agents; NULL = h2c */
    const char *agents_tls_cert; /* --agents-tls-cert: the client certificate shown to agents */
    const char *agents_tls_key;  /* --agents-tls-key */
    const char *agents_tls_server_name; /* --agents-tls-server-name, NULL = each agent's IP */
    const char *kube_api;          /* --kube-api URL or "none"; NULL = in-cluster if available */
    const char *kube_token_file;   /* --kube-token-file */
    const char *kube_ca_file;      /* --kube-ca-file */
    const char *source_ca_file;    /* --source-ca-file, NULL = system roots */
    size_t source_max_bytes;       /* --source-max-bytes, default 8 MiB */
    source_auth_set_t source_auth; /* --source-auth: named scrape credentials; none by default */
    tenant_cross_ns_t cross_ns;    /* --allow-cross-namespace SRC:DST,...; none by default */
    /* Budgets against hostile callers (docs/operations.md, "Limits"). */
    size_t max_request_bytes;    /* --max-request-bytes, default 64 KiB: one gRPC request */
    size_t max_metadata_entries; /* --max-metadata-entries, default 256 per map */
    size_t max_metadata_bytes;   /* --max-metadata-bytes, default 32 KiB of keys + values */
    size_t config_cache_bytes;   /* --config-cache-bytes, default 32 MiB */
    size_t max_stream_bytes;     /* --max-stream-bytes, default 16 MiB per connection */
    size_t max_sources;          /* --max-sources, default 1024 live demand sources */
    size_t max_sources_per_ns;   /* --max-sources-per-namespace, default 512 */
    double source_create_rate;   /* --source-create-rate R[/s][,BURST], default 100/s */
    size_t source_create_burst;  /* its burst, default 512 */
    egress_policy_t egress;      /* --source-allow-cidrs, --source-allow-ports; empty = any */
    /* --max-buffered-bytes-per-connection, default 1 MiB (at least one
     * request); --max-buffered-bytes, default 16 MiB (at least that). */
    size_t max_buffered_bytes_per_connection;
    size_t max_buffered_bytes;
    /* Budgets shared between tenants (issue 28; docs/operations.md, "Limits"). */
    size_t source_read_bytes;  /* --source-read-bytes, default 32 MiB, fair per namespace */
    size_t source_read_rate;   /* --source-read-rate, bytes/s per namespace, default 64 MiB */
    size_t subscription_bytes; /* --subscription-bytes, default 16 MiB, fair per namespace */
    uint64_t source_idle_ns;   /* --source-idle, default 10 min */
    bool version;              /* --version or a bare "version" argument */
    bool help;                 /* --help or -h */
} server_options_t;

#define SERVER_DEFAULT_PORT 6000
#define SERVER_DEFAULT_METRICS_PORT 9090
#define SERVER_DEFAULT_PROBE_PORT 8081
#define SERVER_DEFAULT_MAX_CONNECTIONS 1024u
#define SERVER_MAX_MAX_CONNECTIONS 100000u
#define SERVER_DEFAULT_MAX_REQUEST_BYTES (64u * 1024)
#define SERVER_DEFAULT_MAX_BUFFERED_PER_CONNECTION (1024u * 1024)
#define SERVER_DEFAULT_MAX_BUFFERED (16u * 1024 * 1024)

/*
 * Parses argv[1..argc-1] and the KEDA_GPU_SCALER_* variables read through
 * `get` (called with `ud`; pass env_getter_process for the real
 * environment) into *o. Returns 0, or KGS_EINVAL with a message that names
 * the flag or the variable and says what is valid, e.g.
 * "--sample-interval: 50ms is too short: the minimum is 100ms" or
 * "KEDA_GPU_SCALER_METRICS_PORT: invalid port \"x\": must be 0..65535".
 * With --help or --version the rest is still parsed, but errors in it are
 * not reported (the caller prints the text and exits).
 */
int server_options_parse(int argc, char **argv, env_getter_fn get, void *ud, server_options_t *o,
                         char *err, size_t errlen);

/*
 * The start-up line, "keda-gpu-scaler VERSION (ROLE): gRPC (h2c|TLS[, client
 * certificates]) on ADDR:PORT, ..." ending in what the role reads: NVML on
 * `node` every --sample-interval, or (aggregator, which reads no NVML) the
 * agents' snapshots and when they go stale. `port` is the bound gRPC port.
 * Pure; writes a NUL-terminated line into buf.
 */
void server_options_start_line(const server_options_t *o, const char *version, const char *node,
                               unsigned port, bool tls, char *buf, size_t len);

/* The name of the i-th flag that takes a value ("metrics-port", no dashes),
 * in the order they are applied; NULL past the last. For tests that check
 * the --help text against the flags. */
const char *server_options_flag_name(size_t i);

/* The --help text, in parts (print all, in this order). */
extern const char server_usage_text[];
extern const char server_usage_text_more[];
extern const char server_usage_text_end[];
extern const char server_usage_text_budgets[];
extern const char server_usage_text_tenants[]; /* the budgets shared between tenants, and the end */

#endif
