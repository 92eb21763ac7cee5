/* test_options.c - keda-gpu-scaler flags and KEDA_GPU_SCALER_* variables. */
#include <ctype.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/err.h"
#include "server/options.h"

#define MS UINT64_C(1000000)
#define SEC UINT64_C(1000000000)

/* A fake environment: NULL-terminated name/value pairs. */
static const char *table_get(const char *name, void *ud) {
    const char *const *kv = ud;
    for (; kv && kv[0]; kv += 2)
        if (strcmp(kv[0], name) == 0)
            return kv[1];
    return NULL;
}

static char errbuf[512];

/* Parses a NULL-terminated argument list (program name added). */
static int parse_env(server_options_t *o, const char *const *env, ...) {
    char *argv[64];
    int argc = 0;
    argv[argc++] = "keda-gpu-scaler";
    va_list ap;
    va_start(ap, env);
    for (char *a; (a = va_arg(ap, char *)) != NULL;)
        argv[argc++] = a;
    va_end(ap);
    memset(o, 0xA5, sizeof *o); /* sentinel: every field must be written */
    strcpy(errbuf, "untouched");
    return server_options_parse(argc, argv, table_get, (void *)env, o, errbuf, sizeof errbuf);
}

#define PARSE(o, ...) parse_env(o, NULL, __VA_ARGS__, (char *)NULL)
#define PARSE_ENV(o, env, ...) parse_env(o, env, __VA_ARGS__, (char *)NULL)

static void expect_error(int rc, const char *msg) {
    assert_int_equal(rc, KGS_EINVAL);
    assert_string_equal(errbuf, msg);
}

static void test_options_defaults_match_the_go_server(void **state) {
    (void)state;
    server_options_t o;
    assert_int_equal(parse_env(&o, NULL, (char *)NULL), 0);
    assert_int_equal(o.role, SERVER_ROLE_STANDALONE);
    assert_string_equal(o.listen_address, "0.0.0.0");
    assert_int_equal(o.port, 6000);
    assert_int_equal(o.metrics_port, 9090);
    assert_int_equal(o.probe_port, 8081);
    assert_true(o.sample_interval_ns == SEC);
    assert_true(o.stale_after_ns == 3 * SEC);
    assert_true(o.health_check_interval_ns == 30 * SEC);
    assert_null(o.nvml_library);
    assert_null(o.node_name);
    assert_null(o.tls_cert);
    assert_null(o.tls_key);
    assert_null(o.tls_client_ca);
    assert_int_equal(o.log_level, LOG_INFO);
    assert_int_equal(o.log_format, LOG_FORMAT_TEXT);
    assert_int_equal(o.max_connections, 1024);
    assert_true(o.idle_timeout_ns == 600 * SEC);
    assert_true(o.shutdown_grace_ns == 5 * SEC);
    assert_false(o.version);
    assert_false(o.help);
}

static void test_options_budgets_have_defaults_flags_and_ranges(void **state) {
    (void)state;
    server_options_t o;
    assert_int_equal(parse_env(&o, NULL, (char *)NULL), 0);
    assert_int_equal(o.max_request_bytes, 65536);
    assert_int_equal(o.max_metadata_entries, 256);
    assert_int_equal(o.max_metadata_bytes, 32768);
    assert_int_equal(o.config_cache_bytes, 32 * 1024 * 1024);
    assert_int_equal(o.max_stream_bytes, 32 * 1024 * 1024);
    assert_int_equal(PARSE(&o, "--max-request-bytes", "4194304", "--max-metadata-entries=1",
                           "--max-metadata-bytes", "256", "--config-cache-bytes", "1048576",
                           "--max-stream-bytes", "65536"),
                     0);
    assert_int_equal(o.max_request_bytes, 4194304);
    assert_int_equal(o.max_metadata_entries, 1);
    assert_int_equal(o.max_metadata_bytes, 256);
    assert_int_equal(o.config_cache_bytes, 1048576);
    assert_int_equal(o.max_stream_bytes, 65536);
    const char *const env[] = {"KEDA_GPU_SCALER_MAX_METADATA_ENTRIES", "512", NULL};
    assert_int_equal(PARSE_ENV(&o, env, "--port", "6000"), 0);
    assert_int_equal(o.max_metadata_entries, 512);
    expect_error(PARSE(&o, "--max-request-bytes", "4194305"),
                 "--max-request-bytes: invalid byte count \"4194305\": must be a whole number "
                 "from 1024 to 4194304");
    expect_error(PARSE(&o, "--max-metadata-entries", "0"),
                 "--max-metadata-entries: invalid entry count \"0\": must be a whole number from "
                 "1 to 100000");
    expect_error(PARSE(&o, "--max-metadata-bytes", "-1"),
                 "--max-metadata-bytes: invalid byte count \"-1\": must be a whole number from "
                 "256 to 4194304");
    assert_int_equal(PARSE(&o, "--config-cache-bytes", "1048575"), KGS_EINVAL);
    assert_int_equal(PARSE(&o, "--config-cache-bytes", " 2097152"), KGS_EINVAL);
    assert_int_equal(PARSE(&o, "--max-stream-bytes", "64Ki"), KGS_EINVAL);
}

static void test_options_source_budgets_and_allow_lists(void **state) {
    (void)state;
    server_options_t o;
    assert_int_equal(parse_env(&o, NULL, (char *)NULL), 0);
    assert_int_equal(o.max_sources, 1024);
    assert_int_equal(o.max_sources_per_ns, 512);
    assert_true(o.source_create_rate == 100.0);
    assert_int_equal(o.source_create_burst, 512);
    assert_int_equal(o.egress.ncidrs, 0);
    assert_int_equal(o.egress.nports, 0);
    assert_int_equal(PARSE(&o, "--max-sources", "10", "--max-sources-per-namespace", "5",
                           "--source-create-rate", "0.5/s,3", "--source-allow-cidrs",
                           "10.0.0.0/8,fd00::/8", "--source-allow-ports", "80,8000-8999"),
                     0);
    assert_int_equal(o.max_sources, 10);
    assert_int_equal(o.max_sources_per_ns, 5);
    assert_true(o.source_create_rate == 0.5);
    assert_int_equal(o.source_create_burst, 3);
    assert_int_equal(o.egress.ncidrs, 2);
    assert_int_equal(o.egress.nports, 2);
    assert_int_equal(PARSE(&o, "--source-create-rate", "7"), 0);
    assert_true(o.source_create_rate == 7.0);
    assert_int_equal(o.source_create_burst, 512);
    expect_error(PARSE(&o, "--source-allow-cidrs", "10.0.0.1/8"),
                 "--source-allow-cidrs: \"10.0.0.1/8\": host bits set (did you mean "
                 "10.0.0.0/8?)");
    const char *const env[] = {"KEDA_GPU_SCALER_SOURCE_ALLOW_PORTS", "0", NULL};
    expect_error(PARSE_ENV(&o, env, "--port", "6000"),
                 "KEDA_GPU_SCALER_SOURCE_ALLOW_PORTS: --source-allow-ports: \"0\": expected a "
                 "port 1-65535 or a range LOW-HIGH");
    assert_int_equal(PARSE(&o, "--source-create-rate", "0"), KGS_EINVAL);
    assert_int_equal(PARSE(&o, "--source-create-rate", "5,0"), KGS_EINVAL);
    assert_int_equal(PARSE(&o, "--source-create-rate", "5,"), KGS_EINVAL);
    assert_int_equal(PARSE(&o, "--max-sources", "0"), KGS_EINVAL);
}

/* Issue 28's budgets shared between tenants: defaults, values, refusals
 * that name the flag and the range. */
static void test_options_tenant_budgets(void **state) {
    (void)state;
    server_options_t o;
    assert_int_equal(parse_env(&o, NULL, (char *)NULL), 0);
    assert_int_equal(o.source_read_bytes, 32u << 20);
    assert_int_equal(o.source_read_rate, 64u << 20);
    assert_int_equal(o.subscription_bytes, 16u << 20);
    assert_true(o.source_idle_ns == 600 * NS_PER_SEC);
    assert_int_equal(PARSE(&o, "--source-read-bytes", "1048576", "--source-read-rate", "65536",
                           "--subscription-bytes", "2097152", "--source-idle", "90s"),
                     0);
    assert_int_equal(o.source_read_bytes, 1048576);
    assert_int_equal(o.source_read_rate, 65536);
    assert_int_equal(o.subscription_bytes, 2097152);
    assert_true(o.source_idle_ns == 90 * NS_PER_SEC);
    assert_int_equal(PARSE(&o, "--source-read-bytes", "1000"), KGS_EINVAL);
    assert_non_null(strstr(errbuf, "--source-read-bytes: invalid byte count \"1000\": must be a "
                                   "whole number from 1048576 to "));
    assert_int_equal(PARSE(&o, "--source-read-rate", "65535"), KGS_EINVAL);
    assert_int_equal(PARSE(&o, "--subscription-bytes", "1M"), KGS_EINVAL);
    expect_error(PARSE(&o, "--source-idle", "500ms"),
                 "--source-idle: 500ms is out of range: 1s to 24h (default 10m)");
    assert_int_equal(PARSE(&o, "--source-idle", "25h"), KGS_EINVAL);
}

static void test_options_source_auth_profiles(void **state) {
    (void)state;
    server_options_t o;
    assert_int_equal(parse_env(&o, NULL, (char *)NULL), 0);
    assert_int_equal(o.source_auth.n, 0);
    assert_int_equal(PARSE(&o, "--source-auth",
                           "epp:token-file=/var/run/secrets/kgs/token,namespaces=llm|chat,"
                           "hosts=epp.llm.svc"),
                     0);
    assert_int_equal(o.source_auth.n, 1);
    assert_string_equal(o.source_auth.p[0].name, "epp");
    assert_string_equal(o.source_auth.p[0].token_file, "/var/run/secrets/kgs/token");
    assert_string_equal(o.source_auth.p[0].hosts[0], "epp.llm.svc");
    const char *const env[] = {"KEDA_GPU_SCALER_SOURCE_AUTH", "a:ca-file=/ca,namespaces", NULL};
    expect_error(PARSE_ENV(&o, env, "--port", "6000"),
                 "KEDA_GPU_SCALER_SOURCE_AUTH: profile a: \"namespaces\" is not key=value with a "
                 "key of token-file, ca-file, cert-file, key-file, namespaces, hosts, cidrs, pods, "
                 "http; see --help and docs/configuration.md, \"Authenticated scrapes\"");
    /* a token bound to nowhere: what was valid before this release is refused at start,
     * saying what to add */
    expect_error(PARSE(&o, "--source-auth", "epp:token-file=/t,namespaces=llm"),
                 "--source-auth: profile epp: where may its token go? A credential is bound to "
                 "destinations: add hosts=NAME|*.SUFFIX (the URLs' host names), cidrs=NETWORK "
                 "(IP-literal URLs) or pods=own-namespace (podSelector pods of the ScaledObject's "
                 "namespace); see --help and docs/configuration.md, \"Authenticated scrapes\"");
    expect_error(PARSE(&o, "--role", "agent", "--source-auth", "a:ca-file=/ca,namespaces=*"),
                 "--source-auth is for --role standalone and aggregator: an agent reads no engine "
                 "or queue sources");
}

static void test_options_allow_cross_namespace(void **state) {
    (void)state;
    server_options_t o;
    assert_int_equal(parse_env(&o, NULL, (char *)NULL), 0);
    assert_int_equal(o.cross_ns.n, 0); /* default: no namespace reads another's pods */
    assert_int_equal(PARSE(&o, "--role", "aggregator", "--agents", "a:1", "--allow-cross-namespace",
                           "monitoring:llm, ops:*"),
                     0);
    assert_int_equal(o.cross_ns.n, 2);
    assert_true(tenant_cross_ns_allows(&o.cross_ns, "monitoring", "llm"));
    assert_false(tenant_cross_ns_allows(&o.cross_ns, "llm", "monitoring"));
    assert_true(tenant_cross_ns_allows(&o.cross_ns, "ops", "anything"));
    expect_error(PARSE(&o, "--role", "aggregator", "--agents", "a:1", "--allow-cross-namespace",
                       "monitoring"),
                 "--allow-cross-namespace: \"monitoring\" is not SRC:DST (the namespace of the "
                 "ScaledObjects, then the namespace whose pods they may select, e.g. "
                 "monitoring:llm)");
    const char *const env[] = {"KEDA_GPU_SCALER_ALLOW_CROSS_NAMESPACE", "Team:llm", NULL};
    expect_error(PARSE_ENV(&o, env, "--role", "aggregator", "--agents", "a:1"),
                 "KEDA_GPU_SCALER_ALLOW_CROSS_NAMESPACE: --allow-cross-namespace: \"Team:llm\": "
                 "SRC is not a namespace name (lower-case letters, digits and '-', at most 63) "
                 "or *");
    expect_error(PARSE(&o, "--allow-cross-namespace", "a:b"),
                 "--allow-cross-namespace is for --role aggregator: only it selects pods "
                 "(podSelector)");
}

static void test_options_buffered_bytes_budgets_hold_at_least_one_request(void **state) {
    (void)state;
    server_options_t o;
    assert_int_equal(parse_env(&o, NULL, (char *)NULL), 0);
    assert_int_equal(o.max_buffered_bytes_per_connection, 1024 * 1024);
    assert_int_equal(o.max_buffered_bytes, 16 * 1024 * 1024);
    /* The defaults grow with the request cap. */
    assert_int_equal(PARSE(&o, "--max-request-bytes", "4194304"), 0);
    assert_int_equal(o.max_buffered_bytes_per_connection, 4194309);
    assert_int_equal(o.max_buffered_bytes, 16 * 1024 * 1024);
    assert_int_equal(PARSE(&o, "--max-buffered-bytes-per-connection", "65536",
                           "--max-buffered-bytes", "65536", "--max-request-bytes", "1024"),
                     0);
    assert_int_equal(o.max_buffered_bytes_per_connection, 65536);
    assert_int_equal(o.max_buffered_bytes, 65536);
    assert_int_equal(PARSE(&o, "--max-buffered-bytes-per-connection", "33554432"), 0);
    assert_int_equal(o.max_buffered_bytes, 33554432);
    expect_error(
        PARSE(&o, "--max-buffered-bytes-per-connection", "65536", "--max-request-bytes", "65536"),
        "--max-buffered-bytes-per-connection 65536 is less than one request message: at "
        "least 65541 (--max-request-bytes 65536 + 5 bytes of gRPC framing)");
    expect_error(PARSE(&o, "--max-buffered-bytes", "1000000"),
                 "--max-buffered-bytes 1000000 is less than the per-connection budget 1048576: "
                 "at least that");
    expect_error(PARSE(&o, "--max-buffered-bytes-per-connection", "65535"),
                 "--max-buffered-bytes-per-connection: invalid byte count \"65535\": must be a "
                 "whole number from 65536 to 2147483647");
}

static void test_options_every_flag_in_every_spelling(void **state) {
    (void)state;
    server_options_t o;
    assert_int_equal(PARSE(&o, "--role", "standalone", "--listen-address=127.0.0.1", "-port",
                           "7000", "-metrics-port=0", "--probe-port", "0", "--sample-interval",
                           "250ms", "--stale-after=2s", "--health-check-interval", "10s",
                           "--nvml-library", "/opt/libnvml-sim.so", "--node-name", "gpu-node-7",
                           "--tls-cert", "c.pem", "--tls-key", "k.pem", "--tls-client-ca", "ca.pem",
                           "--log-level=debug", "--log-format", "json", "--max-connections", "50",
                           "--idle-timeout", "0", "--shutdown-grace", "1500ms"),
                     0);
    assert_string_equal(o.listen_address, "127.0.0.1");
    assert_int_equal(o.port, 7000);
    assert_int_equal(o.metrics_port, 0);
    assert_int_equal(o.probe_port, 0);
    assert_true(o.sample_interval_ns == 250 * MS);
    assert_true(o.stale_after_ns == 2 * SEC);
    assert_true(o.health_check_interval_ns == 10 * SEC);
    assert_string_equal(o.nvml_library, "/opt/libnvml-sim.so");
    assert_string_equal(o.node_name, "gpu-node-7");
    assert_string_equal(o.tls_cert, "c.pem");
    assert_string_equal(o.tls_key, "k.pem");
    assert_string_equal(o.tls_client_ca, "ca.pem");
    assert_int_equal(o.log_level, LOG_DEBUG);
    assert_int_equal(o.log_format, LOG_FORMAT_JSON);
    assert_int_equal(o.max_connections, 50);
    assert_true(o.idle_timeout_ns == 0);
    assert_true(o.shutdown_grace_ns == 1500 * MS);
}

static void test_options_last_flag_wins(void **state) {
    (void)state;
    server_options_t o;
    assert_int_equal(PARSE(&o, "--port", "1", "--port=2"), 0);
    assert_int_equal(o.port, 2);
}

static void test_options_version_and_help(void **state) {
    (void)state;
    server_options_t o;
    assert_int_equal(PARSE(&o, "--version"), 0);
    assert_true(o.version);
    assert_int_equal(PARSE(&o, "version"), 0); /* the Go server's form */
    assert_true(o.version);
    assert_int_equal(PARSE(&o, "-version=true"), 0);
    assert_true(o.version);
    assert_int_equal(PARSE(&o, "--help"), 0);
    assert_true(o.help);
    assert_int_equal(PARSE(&o, "-h"), 0);
    assert_true(o.help);
    /* With --help, other mistakes do not hide the help text. */
    assert_int_equal(PARSE(&o, "--port", "x", "--bogus", "--help"), 0);
    assert_true(o.help);
    expect_error(PARSE(&o, "--version=maybe"),
                 "--version: invalid value \"maybe\": must be true or false");
}

static void test_options_port_zero_means_pick_one_for_grpc(void **state) {
    (void)state;
    server_options_t o;
    assert_int_equal(PARSE(&o, "--port", "0"), 0);
    assert_int_equal(o.port, 0);
    assert_int_equal(PARSE(&o, "--port", "65535"), 0);
    assert_int_equal(o.port, 65535);
}

static void test_options_rejects_bad_ports(void **state) {
    (void)state;
    server_options_t o;
    expect_error(PARSE(&o, "--port", "65536"), "--port: invalid port \"65536\": must be 0..65535");
    expect_error(PARSE(&o, "--metrics-port", "-1"),
                 "--metrics-port: invalid port \"-1\": must be 0..65535");
    expect_error(PARSE(&o, "--probe-port", " 80"),
                 "--probe-port: invalid port \" 80\": must be 0..65535");
    expect_error(PARSE(&o, "--port", "0x10"), "--port: invalid port \"0x10\": must be 0..65535");
    expect_error(PARSE(&o, "--port="), "--port: invalid port \"\": must be 0..65535");
    expect_error(PARSE(&o, "--port", "99999999999999"),
                 "--port: invalid port \"99999999999999\": must be 0..65535");
}

static void test_options_rejects_clashing_ports(void **state) {
    (void)state;
    server_options_t o;
    expect_error(PARSE(&o, "--metrics-port", "8081"),
                 "--metrics-port and --probe-port are both 8081: use different ports (0 disables "
                 "--metrics-port or --probe-port)");
    expect_error(PARSE(&o, "--port", "9090"),
                 "--port and --metrics-port are both 9090: use different ports (0 disables "
                 "--metrics-port or --probe-port)");
    /* Disabled ports never clash. */
    assert_int_equal(PARSE(&o, "--metrics-port", "0", "--probe-port", "0"), 0);
    assert_int_equal(PARSE(&o, "--port", "0", "--metrics-port", "0", "--probe-port", "0"), 0);
}

static void test_options_role(void **state) {
    (void)state;
    server_options_t o;
    assert_int_equal(PARSE(&o, "--role", "agent"), 0);
    assert_int_equal(o.role, SERVER_ROLE_AGENT);
    assert_string_equal(o.kubelet_socket, "/var/lib/kubelet/pod-resources/kubelet.sock");
    assert_int_equal(PARSE(&o, "--role", "agent", "--kubelet-socket", "none"), 0);
    assert_null(o.kubelet_socket);
    expect_error(PARSE(&o, "--kubelet-socket", "kubelet.sock"),
                 "--kubelet-socket: invalid kubelet socket \"kubelet.sock\": must be an absolute "
                 "path or none");
    expect_error(PARSE(&o, "--role=aggregator"),
                 "--role aggregator needs --agents HOST:PORT,... or --agents-dns NAME:PORT (the "
                 "agents' headless Service)");
    assert_int_equal(PARSE(&o, "--role=aggregator", "--agents", "10.0.0.1:6000,10.0.0.2:6000"), 0);
    assert_int_equal(o.role, SERVER_ROLE_AGGREGATOR);
    assert_string_equal(o.agents, "10.0.0.1:6000,10.0.0.2:6000");
    expect_error(PARSE(&o, "--agents", "10.0.0.1:6000"),
                 "--agents, --agents-dns and --kube-api are for --role aggregator");
    expect_error(PARSE(&o, "--role", "server"),
                 "--role: invalid role \"server\": must be standalone, agent or aggregator");
}

static void test_options_listen_address(void **state) {
    (void)state;
    server_options_t o;
    assert_int_equal(PARSE(&o, "--listen-address", "::"), 0);
    assert_string_equal(o.listen_address, "::");
    assert_int_equal(PARSE(&o, "--listen-address", "[::1]"), 0);
    assert_string_equal(o.listen_address, "[::1]");
    expect_error(PARSE(&o, "--listen-address", "localhost"),
                 "--listen-address: invalid address \"localhost\": must be a numeric IPv4 or IPv6 "
                 "address such as 0.0.0.0, 127.0.0.1 or ::");
    expect_error(PARSE(&o, "--listen-address", "0.0.0.0:80"),
                 "--listen-address: invalid address \"0.0.0.0:80\": must be a numeric IPv4 or "
                 "IPv6 address such as 0.0.0.0, 127.0.0.1 or ::");
}

static void test_options_sample_interval_and_staleness(void **state) {
    (void)state;
    server_options_t o;
    assert_int_equal(PARSE(&o, "--sample-interval", "100ms"), 0);
    assert_true(o.sample_interval_ns == 100 * MS);
    assert_true(o.stale_after_ns == 300 * MS); /* derived */
    assert_int_equal(PARSE(&o, "--sample-interval", "2s", "--stale-after", "0"), 0);
    assert_true(o.stale_after_ns == 6 * SEC); /* 0 = the default */
    expect_error(PARSE(&o, "--sample-interval", "50ms"),
                 "--sample-interval: 50ms is too short: the minimum is 100ms");
    expect_error(PARSE(&o, "--sample-interval", "fast"),
                 "--sample-interval: duration \"fast\": expected a number at \"fast\"; use a "
                 "number and a unit (ns, us, ms, s, m, h), e.g. \"500ms\" or \"1h30m\"");
    expect_error(PARSE(&o, "--stale-after", "1s"),
                 "--stale-after 1s must be longer than --sample-interval 1s: a snapshot is that "
                 "old just before the next one");
    expect_error(PARSE(&o, "--sample-interval", "5s", "--stale-after", "2s"),
                 "--stale-after 2s must be longer than --sample-interval 5s: a snapshot is that "
                 "old just before the next one");
}

static void test_options_health_check_interval(void **state) {
    (void)state;
    server_options_t o;
    assert_int_equal(PARSE(&o, "--health-check-interval", "0"), 0);
    assert_true(o.health_check_interval_ns == 30 * SEC); /* as in Go: 0 means 30s */
    expect_error(PARSE(&o, "--health-check-interval", "10ms"),
                 "--health-check-interval: 10ms is too short: the minimum is 100ms (0 means 30s)");
}

static void test_options_log_level_and_format(void **state) {
    (void)state;
    server_options_t o;
    const char *levels[] = {"debug", "info", "warn", "error"};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(PARSE(&o, "--log-level", levels[i]), 0);
        assert_int_equal(o.log_level, (log_level_t)i);
    }
    /* The Go server silently used info for these. */
    expect_error(PARSE(&o, "--log-level", "warning"),
                 "--log-level: invalid log level \"warning\": must be debug, info, warn or error");
    expect_error(PARSE(&o, "--log-level", "off"),
                 "--log-level: invalid log level \"off\": must be debug, info, warn or error");
    expect_error(PARSE(&o, "--log-format", "logfmt"),
                 "--log-format: invalid log format \"logfmt\": must be text or json");
}

static void test_options_tls_files_come_in_pairs(void **state) {
    (void)state;
    server_options_t o;
    expect_error(PARSE(&o, "--tls-cert", "c.pem"),
                 "--tls-cert needs --tls-key: give both or neither");
    expect_error(PARSE(&o, "--tls-key", "k.pem"),
                 "--tls-key needs --tls-cert: give both or neither");
    expect_error(PARSE(&o, "--tls-client-ca", "ca.pem"),
                 "--tls-client-ca needs --tls-cert and --tls-key: client certificates are checked "
                 "only on a TLS listener");
    expect_error(PARSE(&o, "--tls-cert", ""),
                 "--tls-cert: needs a certificate file, got an empty value");
    expect_error(PARSE(&o, "--tls-key="), "--tls-key: needs a key file, got an empty value");
    expect_error(PARSE(&o, "--tls-client-ca="),
                 "--tls-client-ca: needs a CA file, got an empty value");
    expect_error(PARSE(&o, "--nvml-library="),
                 "--nvml-library: needs a library path, got an empty value");
    assert_int_equal(PARSE(&o, "--tls-cert", "c", "--tls-key", "k"), 0);
    assert_null(o.tls_client_ca);
}

static void test_options_agent_link_tls(void **state) {
    (void)state;
    server_options_t o;
    /* The agent: TLS without client certificates would let anyone Watch. */
    expect_error(PARSE(&o, "--role", "agent", "--tls-cert", "c", "--tls-key", "k"),
                 "--role agent with --tls-cert needs --tls-client-ca: an agent's Watch gives "
                 "every pod's name on the node to whoever calls it, so with TLS the aggregators "
                 "must prove themselves with client certificates (--agents-tls-cert on the "
                 "aggregator)");
    assert_int_equal(
        PARSE(&o, "--role", "agent", "--tls-cert", "c", "--tls-key", "k", "--tls-client-ca", "ca"),
        0);
    /* The aggregator dials with TLS only given the agents' CA. */
    assert_int_equal(PARSE(&o, "--role", "aggregator", "--agents", "10.0.0.1:6000",
                           "--agents-tls-ca", "ca", "--agents-tls-cert", "c", "--agents-tls-key",
                           "k", "--agents-tls-server-name", "kgs-agents.keda.svc"),
                     0);
    assert_string_equal(o.agents_tls_ca, "ca");
    assert_string_equal(o.agents_tls_cert, "c");
    assert_string_equal(o.agents_tls_key, "k");
    assert_string_equal(o.agents_tls_server_name, "kgs-agents.keda.svc");
    assert_int_equal(PARSE(&o, "--role", "aggregator", "--agents", "10.0.0.1:6000"), 0);
    assert_null(o.agents_tls_ca);
    assert_null(o.agents_tls_server_name);
    expect_error(PARSE(&o, "--role", "aggregator", "--agents", "10.0.0.1:6000", "--agents-tls-ca",
                       "ca", "--agents-tls-cert", "c"),
                 "--agents-tls-cert needs --agents-tls-key: give both or neither");
    expect_error(PARSE(&o, "--role", "aggregator", "--agents", "10.0.0.1:6000", "--agents-tls-ca",
                       "ca", "--agents-tls-key", "k"),
                 "--agents-tls-key needs --agents-tls-cert: give both or neither");
    expect_error(PARSE(&o, "--role", "aggregator", "--agents", "10.0.0.1:6000", "--agents-tls-cert",
                       "c", "--agents-tls-key", "k"),
                 "--agents-tls-cert needs --agents-tls-ca: TLS to the agents is on only with the "
                 "CA that signed the agents' certificates");
    expect_error(PARSE(&o, "--role", "aggregator", "--agents", "10.0.0.1:6000", "--agents-tls-ca",
                       "ca", "--agents-tls-server-name", "a b"),
                 "--agents-tls-server-name: invalid name \"a b\": must be the DNS name (or IP) "
                 "on the agents' certificate, e.g. keda-gpu-scaler-agents.keda.svc");
    expect_error(PARSE(&o, "--role", "agent", "--agents-tls-ca", "ca"),
                 "--agents-tls-ca is for --role aggregator (how it dials the agents); an agent "
                 "takes --tls-cert, --tls-key and --tls-client-ca");
    expect_error(PARSE(&o, "--agents-tls-ca="),
                 "--agents-tls-ca: needs a CA file, got an empty value");
}

static void test_options_node_name(void **state) {
    (void)state;
    server_options_t o;
    expect_error(PARSE(&o, "--node-name="),
                 "--node-name: invalid node name (0 bytes): must be 1 to 253 bytes");
    expect_error(PARSE(&o, "--node-name", "a\nb"),
                 "--node-name: invalid node name: control character at byte 1");
    char long_name[300];
    memset(long_name, 'n', 254);
    long_name[254] = '\0';
    expect_error(PARSE(&o, "--node-name", long_name),
                 "--node-name: invalid node name (254 bytes): must be 1 to 253 bytes");
}

static void test_options_connections_and_timeouts(void **state) {
    (void)state;
    server_options_t o;
    expect_error(PARSE(&o, "--max-connections", "0"),
                 "--max-connections: invalid connection limit \"0\": must be 1..100000");
    expect_error(PARSE(&o, "--max-connections", "100001"),
                 "--max-connections: invalid connection limit \"100001\": must be 1..100000");
    expect_error(PARSE(&o, "--idle-timeout", "-1s"),
                 "--idle-timeout: duration \"-1s\": negative; use a number and a unit (ns, us, "
                 "ms, s, m, h), e.g. \"500ms\" or \"1h30m\"");
    assert_int_equal(PARSE(&o, "--shutdown-grace", "0"), 0);
    assert_true(o.shutdown_grace_ns == 0);
}

static void test_options_rejects_unknown_flags_with_a_suggestion(void **state) {
    (void)state;
    server_options_t o;
    expect_error(PARSE(&o, "--prot", "6000"),
                 "unknown flag --prot (did you mean --port?); see --help");
    expect_error(PARSE(&o, "--metric-port=9"),
                 "unknown flag --metric-port (did you mean --metrics-port?); see --help");
    expect_error(PARSE(&o, "-verison"),
                 "unknown flag -verison (did you mean --version?); see --help");
    expect_error(PARSE(&o, "--Port", "6000"),
                 "unknown flag --Port (did you mean --port?); see --help");
    expect_error(PARSE(&o, "--completely-different"),
                 "unknown flag --completely-different; see --help");
    expect_error(PARSE(&o, "serve"),
                 "unexpected argument \"serve\": this program takes only flags; see --help");
    expect_error(PARSE(&o, "--port"), "flag --port needs a value");
}

static void test_options_environment_sets_every_option(void **state) {
    (void)state;
    const char *env[] = {"KEDA_GPU_SCALER_ROLE",
                         "standalone",
                         "KEDA_GPU_SCALER_LISTEN_ADDRESS",
                         "::",
                         "KEDA_GPU_SCALER_PORT",
                         "7001",
                         "KEDA_GPU_SCALER_METRICS_PORT",
                         "0",
                         "KEDA_GPU_SCALER_PROBE_PORT",
                         "18081",
                         "KEDA_GPU_SCALER_SAMPLE_INTERVAL",
                         "500ms",
                         "KEDA_GPU_SCALER_STALE_AFTER",
                         "4s",
                         "KEDA_GPU_SCALER_HEALTH_CHECK_INTERVAL",
                         "1m",
                         "KEDA_GPU_SCALER_NVML_LIBRARY",
                         "libsim.so",
                         "KEDA_GPU_SCALER_NODE_NAME",
                         "n1",
                         "KEDA_GPU_SCALER_TLS_CERT",
                         "c",
                         "KEDA_GPU_SCALER_TLS_KEY",
                         "k",
                         "KEDA_GPU_SCALER_TLS_CLIENT_CA",
                         "ca",
                         "KEDA_GPU_SCALER_LOG_LEVEL",
                         "warn",
                         "KEDA_GPU_SCALER_LOG_FORMAT",
                         "json",
                         "KEDA_GPU_SCALER_MAX_CONNECTIONS",
                         "7",
                         "KEDA_GPU_SCALER_IDLE_TIMEOUT",
                         "1h",
                         "KEDA_GPU_SCALER_SHUTDOWN_GRACE",
                         "2s",
                         NULL};
    server_options_t o;
    assert_int_equal(parse_env(&o, env, (char *)NULL), 0);
    assert_string_equal(o.listen_address, "::");
    assert_int_equal(o.port, 7001);
    assert_int_equal(o.metrics_port, 0);
    assert_int_equal(o.probe_port, 18081);
    assert_true(o.sample_interval_ns == 500 * MS);
    assert_true(o.stale_after_ns == 4 * SEC);
    assert_true(o.health_check_interval_ns == 60 * SEC);
    assert_string_equal(o.nvml_library, "libsim.so");
    assert_string_equal(o.node_name, "n1");
    assert_string_equal(o.tls_cert, "c");
    assert_string_equal(o.tls_key, "k");
    assert_string_equal(o.tls_client_ca, "ca");
    assert_int_equal(o.log_level, LOG_WARN);
    assert_int_equal(o.log_format, LOG_FORMAT_JSON);
    assert_int_equal(o.max_connections, 7);
    assert_true(o.idle_timeout_ns == 3600 * SEC);
    assert_true(o.shutdown_grace_ns == 2 * SEC);
}

static void test_options_flag_beats_its_variable(void **state) {
    (void)state;
    const char *env[] = {"KEDA_GPU_SCALER_METRICS_PORT", "0", "KEDA_GPU_SCALER_LOG_LEVEL", "debug",
                         NULL};
    server_options_t o;
    assert_int_equal(PARSE_ENV(&o, env, "--metrics-port", "9191"), 0);
    assert_int_equal(o.metrics_port, 9191);
    assert_int_equal(o.log_level, LOG_DEBUG);
}

static void test_options_flag_hides_an_invalid_variable(void **state) {
    (void)state;
    const char *env[] = {"KEDA_GPU_SCALER_PORT", "not-a-port", NULL};
    server_options_t o;
    assert_int_equal(PARSE_ENV(&o, env, "--port", "6001"), 0);
    assert_int_equal(o.port, 6001);
}

static void test_options_invalid_variable_is_named(void **state) {
    (void)state;
    server_options_t o;
    const char *e1[] = {"KEDA_GPU_SCALER_METRICS_PORT", "x", NULL};
    expect_error(parse_env(&o, e1, (char *)NULL),
                 "KEDA_GPU_SCALER_METRICS_PORT: invalid port \"x\": must be 0..65535");
    const char *e2[] = {"KEDA_GPU_SCALER_LOG_LEVEL", "verbose", NULL};
    expect_error(parse_env(&o, e2, (char *)NULL),
                 "KEDA_GPU_SCALER_LOG_LEVEL: invalid log level \"verbose\": must be debug, info, "
                 "warn or error");
    const char *e3[] = {"KEDA_GPU_SCALER_ROLE", "worker", NULL};
    expect_error(parse_env(&o, e3, (char *)NULL),
                 "KEDA_GPU_SCALER_ROLE: invalid role \"worker\": must be standalone, agent or "
                 "aggregator");
    const char *e4[] = {"KEDA_GPU_SCALER_STALE_AFTER", "500ms", NULL};
    expect_error(parse_env(&o, e4, (char *)NULL),
                 "KEDA_GPU_SCALER_STALE_AFTER 500ms must be longer than --sample-interval 1s: a "
                 "snapshot is that old just before the next one");
    const char *e5[] = {"KEDA_GPU_SCALER_TLS_CERT", "c", NULL};
    expect_error(parse_env(&o, e5, (char *)NULL),
                 "KEDA_GPU_SCALER_TLS_CERT needs --tls-key: give both or neither");
    const char *e6[] = {"KEDA_GPU_SCALER_PROBE_PORT", "6000", NULL};
    expect_error(parse_env(&o, e6, (char *)NULL),
                 "--port and KEDA_GPU_SCALER_PROBE_PORT are both 6000: use different ports (0 "
                 "disables --metrics-port or --probe-port)");
}

static void test_options_empty_variable_counts_as_unset(void **state) {
    (void)state;
    const char *env[] = {"KEDA_GPU_SCALER_PORT", "", "KEDA_GPU_SCALER_TLS_CERT", "", NULL};
    server_options_t o;
    assert_int_equal(parse_env(&o, env, (char *)NULL), 0);
    assert_int_equal(o.port, 6000);
    assert_null(o.tls_cert);
}

static void test_options_null_getter_reads_no_environment(void **state) {
    (void)state;
    char *argv[] = {"keda-gpu-scaler", "--port", "6002"};
    server_options_t o;
    assert_int_equal(server_options_parse(3, argv, NULL, NULL, &o, NULL, 0), 0);
    assert_int_equal(o.port, 6002);
    char *bad[] = {"keda-gpu-scaler", "--port", "x"};
    assert_int_equal(server_options_parse(3, bad, NULL, NULL, &o, NULL, 0), KGS_EINVAL);
}

static void test_options_usage_teaches_flags_variables_and_examples(void **state) {
    (void)state;
    const char *flags[] = {"--role",
                           "--port",
                           "--metrics-port",
                           "--probe-port",
                           "--listen-address",
                           "--sample-interval",
                           "--stale-after",
                           "--health-check-interval",
                           "--nvml-library",
                           "--node-name",
                           "--tls-cert",
                           "--tls-key",
                           "--tls-client-ca",
                           "--log-level",
                           "--log-format",
                           "--max-connections",
                           "--idle-timeout",
                           "--shutdown-grace",
                           "--version",
                           "--help",
                           "--max-request-bytes",
                           "--max-metadata-entries",
                           "--max-metadata-bytes",
                           "--config-cache-bytes",
                           "--max-stream-bytes",
                           "--agents-tls-ca",
                           "--agents-tls-cert",
                           "--agents-tls-key",
                           "--agents-tls-server-name",
                           "--max-sources",
                           "--max-sources-per-namespace",
                           "--source-create-rate",
                           "--source-allow-cidrs",
                           "--source-allow-ports",
                           "--max-connections-per-peer",
                           "--max-buffered-bytes-per-connection",
                           "--max-buffered-bytes",
                           "--source-read-bytes",
                           "--source-read-rate",
                           "--subscription-bytes",
                           "--source-idle",
                           "KEDA_GPU_SCALER_",
                           "Examples:"};
    char usage[16384];
    snprintf(usage, sizeof usage, "%s%s%s%s%s", server_usage_text, server_usage_text_more,
             server_usage_text_end, server_usage_text_budgets, server_usage_text_tenants);
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if (!strstr(usage, flags[i]))
            fail_msg("usage lacks %s", flags[i]);
    /* Fits an 80-column terminal. */
    for (const char *p = usage; *p;) {
        size_t n = strcspn(p, "\n");
        assert_true(n <= 80);
        p += n + (p[n] == '\n');
    }
}

/* The aggregator reads no NVML: its start-up line must not claim to sample
 * it, nor name a sampling interval for GPUs it does not read. */
/* Every flag in the table appears in --help, and every --flag that --help
 * names is in the table, so the hand-written text and the table cannot
 * drift apart. --help and --version take no value and are not rows;
 * --address and --metadata belong to the query subcommand's synopsis. */
static void test_options_usage_and_flag_table_name_the_same_flags(void **state) {
    (void)state;
    static const char *const not_rows[] = {"help", "version", "address", "metadata"};
    char usage[16384];
    snprintf(usage, sizeof usage, "%s%s%s%s%s", server_usage_text, server_usage_text_more,
             server_usage_text_end, server_usage_text_budgets, server_usage_text_tenants);
    assert_true(strlen(usage) < sizeof usage - 1);

    size_t rows = 0;
    for (const char *name; (name = server_options_flag_name(rows)) != NULL; rows++) {
        bool found = false;
        size_t n = strlen(name);
        for (const char *p = usage; !found && (p = strstr(p, "--")) != NULL; p += 2)
            found = strncmp(p + 2, name, n) == 0 &&
                    !(p[2 + n] == '-' || islower((unsigned char)p[2 + n]));
        if (!found)
            fail_msg("--%s is a flag but --help does not name it", name);
    }
    assert_true(rows > 40);

    size_t named = 0;
    for (const char *p = usage; (p = strstr(p, "--")) != NULL; p += 2) {
        const char *name = p + 2;
        size_t n = strspn(name, "abcdefghijklmnopqrstuvwxyz-");
        if (n == 0)
            continue;
        bool known = false;
        for (size_t i = 0; !known && i < sizeof not_rows / sizeof not_rows[0]; i++)
            known = strlen(not_rows[i]) == n && strncmp(not_rows[i], name, n) == 0;
        for (size_t i = 0; !known && server_options_flag_name(i); i++)
            known = strlen(server_options_flag_name(i)) == n &&
                    strncmp(server_options_flag_name(i), name, n) == 0;
        if (!known)
            fail_msg("--help names --%.*s, which is not a flag", (int)n, name);
        named++;
    }
    assert_true(named >= rows);
}

static void test_options_start_line_says_what_the_role_reads(void **state) {
    (void)state;
    server_options_t o;
    char line[512];
    assert_int_equal(PARSE(&o, "--sample-interval", "500ms", "--port", "7000"), 0);
    server_options_start_line(&o, "1.2.3", "node-a", 7000, false, line, sizeof line);
    assert_string_equal(line, "keda-gpu-scaler 1.2.3 (standalone): gRPC (h2c) on 0.0.0.0:7000, "
                              "node node-a, sampling NVML every 500 ms");
    assert_int_equal(PARSE(&o, "--role", "agent"), 0);
    server_options_start_line(&o, "1.2.3", "node-a", 6000, true, line, sizeof line);
    assert_string_equal(line, "keda-gpu-scaler 1.2.3 (agent): gRPC (TLS) on 0.0.0.0:6000, "
                              "node node-a, sampling NVML every 1000 ms");
    assert_int_equal(PARSE(&o, "--role", "aggregator", "--agents", "127.0.0.1:1"), 0);
    server_options_start_line(&o, "1.2.3", "node-a", 6000, false, line, sizeof line);
    assert_string_equal(line, "keda-gpu-scaler 1.2.3 (aggregator): gRPC (h2c) on 0.0.0.0:6000, "
                              "reading the agents' snapshots (no NVML here; stale after 3000 ms)");
    assert_null(strstr(line, "sampling"));
    /* a line cut short stays a string */
    server_options_start_line(&o, "1.2.3", "node-a", 6000, false, line, 10);
    assert_string_equal(line, "keda-gpu-");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_options_defaults_match_the_go_server),
        cmocka_unit_test(test_options_budgets_have_defaults_flags_and_ranges),
        cmocka_unit_test(test_options_source_budgets_and_allow_lists),
        cmocka_unit_test(test_options_tenant_budgets),
        cmocka_unit_test(test_options_source_auth_profiles),
        cmocka_unit_test(test_options_allow_cross_namespace),
        cmocka_unit_test(test_options_buffered_bytes_budgets_hold_at_least_one_request),
        cmocka_unit_test(test_options_every_flag_in_every_spelling),
        cmocka_unit_test(test_options_last_flag_wins),
        cmocka_unit_test(test_options_version_and_help),
        cmocka_unit_test(test_options_port_zero_means_pick_one_for_grpc),
        cmocka_unit_test(test_options_rejects_bad_ports),
        cmocka_unit_test(test_options_rejects_clashing_ports),
        cmocka_unit_test(test_options_role),
        cmocka_unit_test(test_options_listen_address),
        cmocka_unit_test(test_options_sample_interval_and_staleness),
        cmocka_unit_test(test_options_health_check_interval),
        cmocka_unit_test(test_options_log_level_and_format),
        cmocka_unit_test(test_options_tls_files_come_in_pairs),
        cmocka_unit_test(test_options_agent_link_tls),
        cmocka_unit_test(test_options_node_name),
        cmocka_unit_test(test_options_connections_and_timeouts),
        cmocka_unit_test(test_options_rejects_unknown_flags_with_a_suggestion),
        cmocka_unit_test(test_options_environment_sets_every_option),
        cmocka_unit_test(test_options_flag_beats_its_variable),
        cmocka_unit_test(test_options_flag_hides_an_invalid_variable),
        cmocka_unit_test(test_options_invalid_variable_is_named),
        cmocka_unit_test(test_options_empty_variable_counts_as_unset),
        cmocka_unit_test(test_options_null_getter_reads_no_environment),
        cmocka_unit_test(test_options_usage_teaches_flags_variables_and_examples),
        cmocka_unit_test(test_options_usage_and_flag_table_name_the_same_flags),
        cmocka_unit_test(test_options_start_line_says_what_the_role_reads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
