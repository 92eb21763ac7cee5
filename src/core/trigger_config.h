/*
 * trigger_config.h - one ScaledObject trigger's metadata, validated and
 * resolved (defaults -> profile -> explicit keys) into a plain struct.
 *
 * Pure: no I/O, no globals except constant tables. docs/configuration.md is
 * the user-facing reference for every key, default and error.
 */
#ifndef KGS_CORE_TRIGGER_CONFIG_H
#define KGS_CORE_TRIGGER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/label_selector.h"
#include "core/metadata.h"
#include "core/source_url.h"

/* What is measured. Units are in docs/configuration.md. */
typedef enum {
    METRIC_GPU_UTILIZATION,     /* %  */
    METRIC_MEMORY_UTILIZATION,  /* %  (memory controller busy time) */
    METRIC_MEMORY_USED_MIB,     /* MiB */
    METRIC_MEMORY_USED_PERCENT, /* %  of total */
    METRIC_TEMPERATURE,         /* degrees C */
    METRIC_POWER_DRAW,          /* W */
    METRIC_PCIE_TX_KBPS,        /* KiB/s */
    METRIC_PCIE_RX_KBPS,        /* KiB/s */
    METRIC_NVLINK_TX_MBPS,      /* MiB/s */
    METRIC_NVLINK_RX_MBPS,      /* MiB/s */
    METRIC_SM_ACTIVE,           /* %  (GPM, Hopper+) */
    METRIC_SM_OCCUPANCY,        /* %  (GPM) */
    METRIC_DRAM_BANDWIDTH,      /* %  (GPM) */
    METRIC_TYPE_COUNT
} metric_type_t;

/* "gpu_utilization", ..., "dram_bandwidth"; "?" when out of range. */
const char *metric_type_name(metric_type_t t);

typedef enum { AGG_SUM, AGG_MAX, AGG_MIN, AGG_AVG, AGG_P95, AGG_P99 } aggregation_t;

/* "sum", "max", "min", "avg", "p95", "p99"; "?" when out of range. */
const char *aggregation_name(aggregation_t a);

/* podAggregation: how one pod's GPUs combine into the pod's value. */
typedef enum { POD_AGG_AVG, POD_AGG_SUM, POD_AGG_MAX, POD_AGG_MIN } pod_aggregation_t;

/* "avg", "sum", "max", "min"; "?" when out of range. */
const char *pod_aggregation_name(pod_aggregation_t a);

/* partialData: what a node with a stale snapshot does to the answer. */
typedef enum {
    PARTIAL_DATA_ERROR, /* UNAVAILABLE, naming the node */
    PARTIAL_DATA_IGNORE /* computed from the nodes with fresh data */
} partial_data_t;

/* "error", "ignore"; "?" when out of range. */
const char *partial_data_name(partial_data_t p);

/*
 * gpuSharing: what a pod's value on a GPU is when the GPU is shared
 * (time-slicing "GPU-<uuid>::N" ids, MPS, several pods on one device).
 * WHOLE: the device's value, as if the pod had it alone. SHARE: the pod's
 * own share, from the processes NVML lists on the device that belong to the
 * pod (utilisation: their smUtil / memUtil; memory: their used memory);
 * missing per-process data is a gap, never a made-up split. AUTO: SHARE on
 * a device that is shared and has per-process data, else WHOLE. Only the
 * metrics gpu_sharing_metric_per_process() accepts have a share.
 */
typedef enum { GPU_SHARING_AUTO, GPU_SHARING_WHOLE, GPU_SHARING_SHARE } gpu_sharing_t;

/* "auto", "whole", "share"; "?" when out of range. */
const char *gpu_sharing_name(gpu_sharing_t g);

/* Whether metric t has a per-process share: gpu_utilization (smUtil),
 * memory_utilization (memUtil), memory_used_mib and memory_used_percent
 * (used memory). Temperature, power, clocks, PCIe, NVLink and the GPM
 * metrics are whole-GPU only. */
bool gpu_sharing_metric_per_process(metric_type_t t);

/* nodeSelector: which nodes count when no podSelector is given. */
typedef enum {
    NODE_SCOPE_ALL,     /* no nodeSelector */
    NODE_SCOPE_NAMES,   /* node_names[0 .. node_name_count) */
    NODE_SCOPE_SELECTOR /* node_selector, on the nodes' labels */
} node_scope_t;

#define TRIGGER_MAX_UUIDS 16
#define TRIGGER_MAX_NODES 16

/* Demand signals (docs/configuration.md, "Demand signals"): what the
 * trigger reports when it is not a GPU metric. DEMAND_NONE reports
 * metric_type over the selected GPUs, as before. */
typedef enum {
    DEMAND_NONE = 0,
    DEMAND_VLLM_QUEUE_DEPTH,     /* vllm_queue_depth: requests waiting, summed */
    DEMAND_VLLM_KV_CACHE_USAGE,  /* vllm_kv_cache_usage: %, summed over engines and pods */
    DEMAND_TRITON_QUEUE_WAIT_MS, /* triton_queue_wait_ms: mean queue wait over windowSeconds */
    DEMAND_TRITON_REQUEST_RATE,  /* triton_request_rate: requests/s over windowSeconds, summed */
    DEMAND_ENGINE_QUEUE,         /* engine_queue: requests waiting, any engine */
    DEMAND_ENGINE_RUNNING,       /* engine_running: requests in flight */
    DEMAND_ENGINE_KV_CACHE,      /* engine_kv_cache: KV-cache usage %, summed */
    DEMAND_QUEUE_LENGTH,         /* queue_length: a Redis or Prometheus queue */
    DEMAND_COMPOSITE,            /* demand: max over signals of need/target, x100 */
    DEMAND_SLO,                  /* slo: replicas that bring latency to its targets, x100 */
    DEMAND_ENGINE_PROMPT_TOKENS_RATE,     /* engine_prompt_tokens_rate: tokens/s, summed */
    DEMAND_ENGINE_GENERATION_TOKENS_RATE, /* engine_generation_tokens_rate: tokens/s, summed */
    DEMAND_VLLM_LORA_WAITING_ENGINES,     /* vllm_lora_waiting_engines: engines with the
                                             loraAdapter's requests waiting */
    DEMAND_TYPE_COUNT
} demand_type_t;

/* "vllm_queue_depth", ..., "demand"; "" for DEMAND_NONE, "?" out of range. */
const char *demand_type_name(demand_type_t t);

/* demandModel: how metricType demand turns signals into replicas. */
typedef enum {
    DEMAND_MODEL_QUEUEING, /* core/queue_model.h: learned arrival rate, capacity, cold start */
    DEMAND_MODEL_COMPOSITE /* max over signals of signal / per-replica target */
} demand_model_t;

/* "queueing", "composite"; "?" out of range. */
const char *demand_model_name(demand_model_t m);

/* ENGINE_EPP is not a serving engine but the Gateway API Inference
 * Extension's endpoint picker in front of one: it reads the EPP's
 * flow-control queue and its InferencePool gauges (docs/configuration.md,
 * "Inference gateway (EPP)"). */
typedef enum {
    ENGINE_NONE = 0,
    ENGINE_VLLM,
    ENGINE_TRITON,
    ENGINE_TGI,
    ENGINE_SGLANG,
    ENGINE_EPP
} engine_t;

/* "vllm", "triton", "tgi", "sglang", "epp"; "" for ENGINE_NONE. */
const char *engine_name(engine_t e);

typedef enum {
    QUEUE_NONE = 0,
    QUEUE_REDIS_LIST,   /* LLEN redisListName */
    QUEUE_REDIS_STREAM, /* XLEN, or XINFO GROUPS lag/pending of redisConsumerGroup */
    QUEUE_PROMETHEUS    /* demandEndpoint + demandMetric + demandLabels */
} queue_kind_t;

typedef enum { STREAM_MEASURE_LAG, STREAM_MEASURE_PENDING, STREAM_MEASURE_LENGTH } stream_measure_t;

#define TRIGGER_MAX_ENDPOINTS 16
#define TRIGGER_URL_MAX 512
#define TRIGGER_MAX_MATCHERS 8
/* Latency objectives: five signals (slo_signal_t) x three quantiles. */
#define TRIGGER_SLO_SIGNALS 5
#define TRIGGER_SLO_QUANTILES 3

typedef struct {
    demand_type_t type; /* DEMAND_NONE: a GPU trigger */

    /* Serving engine: explicit URLs (vllmEndpoint/tritonEndpoint/
     * engineEndpoint), else the pods of podSelector at enginePort. */
    engine_t engine;
    unsigned endpoint_count;
    char endpoints[TRIGGER_MAX_ENDPOINTS][TRIGGER_URL_MAX];
    /* endpoints[i], parsed and SSRF-checked (parse time) once, here, in
     * compact form (offsets into endpoints[i]): the sources expand it
     * (demand_endpoint_url) instead of parsing again. */
    source_url_ref_t endpoint_urls[TRIGGER_MAX_ENDPOINTS];
    uint16_t engine_port;  /* default per engine: vLLM 8000, Triton 8002, TGI 80, SGLang 30000,
                              EPP 9090 */
    char engine_path[256]; /* default "/metrics" */
    bool engine_https;     /* engineScheme: https */
    char model[256];       /* "" = every model */
    unsigned window_s;     /* Triton and token rates: windowSeconds, default 30 */

    /* A queue that exists while no pod runs. */
    queue_kind_t queue;
    /* The queue's address as given. A trigger reads one queue (the parser
     * refuses a Redis and a Prometheus queue together), so the two share
     * storage: read the one `queue` names. */
    union {
        char redis_address[TRIGGER_URL_MAX];   /* QUEUE_REDIS_* */
        char demand_endpoint[TRIGGER_URL_MAX]; /* QUEUE_PROMETHEUS */
    };
    char redis_key[512];   /* the list or stream */
    char redis_group[256]; /* redisConsumerGroup; "" = none */
    stream_measure_t stream_measure;
    int redis_db; /* 0..15 */
    bool redis_tls;
    char redis_username[256];
    char redis_password[512]; /* secret: never logged, never echoed in errors */
    /* The queue's address parsed and SSRF-checked once, here, in compact form
     * (offsets into the address above): redis_address (source_addr_parse_ref)
     * for QUEUE_REDIS_*, demand_endpoint for QUEUE_PROMETHEUS; zero for
     * QUEUE_NONE. demand_queue_url() expands it. */
    source_url_ref_t queue_url;
    char demand_metric[256];
    unsigned matcher_count; /* demandLabels: name="v" / name!="v", all must hold */
    struct {
        char name[128];
        char value[256];
        bool negate;
    } matchers[TRIGGER_MAX_MATCHERS];

    /* metricType demand: DEMAND_MODEL_QUEUEING unless demandModel says
     * composite or a per-signal target below is set. */
    demand_model_t sizing;
    /* The queueing model's parameters (core/queue_model.h); 0 = learn. */
    double target_utilization; /* targetUtilization, (0, 1], default 0.7 */
    unsigned drain_s;          /* drainSeconds, 1..600, default 10 */
    double capacity_rps;       /* capacityPerReplica: requests/s per replica; 0 = learn */

    /* demand (composite): per-signal targets, 0 = signal not used. */
    double target_queue;     /* targetQueuePerReplica */
    double target_running;   /* targetRunningPerReplica */
    double target_kv;        /* targetKvCache (%) */
    double target_gpu;       /* targetGpu, in units of metric_type */
    double activation_queue; /* activationQueue, default 0 */
    double activation_gpu;   /* activationGpu, default 0 */

    /* Proactive scaling: with forecast: trend the value reported is the
     * demand expected coldStartSeconds ahead (Holt's linear smoothing, never
     * below the demand now); activity stays on the demand now. */
    bool forecast_trend;   /* forecast: trend (default none); composite and single signals */
    unsigned cold_start_s; /* coldStartSeconds, 1..3600: forecast: trend's horizon (required
                              there), or the queueing model's cold start (0 = learn) */

    /* Latency objectives (metricType slo, or the same keys on demand):
     * slo_target_s[signal][quantile] in seconds, 0 = not set. Signals in
     * slo_signal_t order (core/demand_eval.h: TTFT, TPOT, E2E, QUEUE, ITL),
     * quantiles p50, p90, p99. slo_mask: bit s set when signal s has a
     * target (the sources read only those histograms). */
    double slo_target_s[TRIGGER_SLO_SIGNALS][TRIGGER_SLO_QUANTILES];
    unsigned slo_mask;
    unsigned slo_min_requests; /* sloMinRequests, default 10 */
    double slo_max_step;       /* sloMaxStep: a factor > 1, default 2 */
    double slo_tolerance;      /* sloTolerance: the dead band around 1, default 0.1 */

    uint64_t interval_ns; /* sourceInterval: default 1 s, 100 ms .. 60 s */
    uint64_t timeout_ns;  /* sourceTimeout: default 2 s, 100 ms .. 30 s */

    /* demand (composite): token-rate targets, tokens/s per replica; 0 = not used. */
    double target_prompt_tokens;     /* targetPromptTokensPerReplica */
    double target_generation_tokens; /* targetGenerationTokensPerReplica */
    /* targetSaturation (engine epp): the pool saturation to hold, where 1.0
     * is the endpoint picker's gating set point; 0 = not used. */
    double target_saturation;
    /* loraAdapter (vllm_lora_waiting_engines): the vLLM LoRA adapter's name. */
    char lora_adapter[256];
    /* sourceAuth: the --source-auth profile (core/source_auth.h) every HTTP
     * source of the trigger scrapes with (engine URLs, podSelector pods,
     * demandEndpoint); "" = none. Only the name: credentials stay on the
     * server, and the source hub checks the namespace may use it. */
    char source_auth[64];
} demand_config_t;

typedef struct {
    char metric_name[128]; /* validated [a-z0-9_-]+, <= 127 bytes; default "keda_gpu_metric"
                              (or the profile's) */
    char profile[64];      /* "" when none */
    metric_type_t metric_type;
    double target_value;         /* finite, 0.001 <= t <= 1e12 (KEDA milli resolution) */
    double activation_threshold; /* finite, >= 0 */
    aggregation_t aggregation;   /* default AGG_SUM */
    int gpu_index;               /* -1 = no index restriction */
    unsigned gpu_uuid_count;
    char gpu_uuids[TRIGGER_MAX_UUIDS][96]; /* gpuUUID, comma list */
    unsigned mig_uuid_count;
    char mig_uuids[TRIGGER_MAX_UUIDS][96]; /* migUUID, comma list */
    unsigned mig_profile_count;
    char mig_profiles[TRIGGER_MAX_UUIDS][32]; /* migProfile, comma list e.g. "3g.40gb" */
    unsigned poll_interval_s;                 /* >= 1, default 10 */

    /* Workload scope, used by the aggregator role (docs/configuration.md,
     * "Workload scope"). The parser only validates; the standalone server
     * rejects podSelector and nodeSelector itself. */
    bool has_pod_selector;         /* podSelector given (an empty one selects every pod) */
    label_selector_t pod_selector; /* empty unless has_pod_selector */
    bool has_namespace;            /* false: the ScaledObject's namespace (the server's call) */
    char pod_namespace[64];        /* a DNS label; "" unless has_namespace */
    node_scope_t node_scope;       /* NODE_SCOPE_ALL unless nodeSelector; never with podSelector */
    unsigned node_name_count;      /* NODE_SCOPE_NAMES: 1..TRIGGER_MAX_NODES */
    char node_names[TRIGGER_MAX_NODES][254]; /* DNS subdomains, in the order given */
    label_selector_t node_selector;          /* NODE_SCOPE_SELECTOR; otherwise empty */
    pod_aggregation_t pod_aggregation;       /* default POD_AGG_AVG; set only with podSelector */
    partial_data_t partial_data;             /* default PARTIAL_DATA_ERROR */
    gpu_sharing_t gpu_sharing;               /* default GPU_SHARING_AUTO; only with podSelector */

    /* Engine and queue signals; demand.type == DEMAND_NONE for GPU triggers.
     * For DEMAND_COMPOSITE, metric_type is the GPU metric of targetGpu. */
    demand_config_t demand;
} trigger_config_t;

/* The metadata keys the parser accepts, in its table order: i <
 * trigger_config_key_count(); NULL past the end. Static storage. (The docs
 * test checks each one is documented.) */
size_t trigger_config_key_count(void);
const char *trigger_config_key_name(size_t i);

/* One key as the reference (docs/configuration.md, the key table) must
 * show it: all strings static. */
typedef struct {
    const char *name;
    const char *type; /* the Type column: "name", "number", "URL list", ... */
    const char *def;  /* the Default column, verbatim ("—" for none) */
    bool kedas;       /* one of KEDA's own keys (accepted and ignored), listed together */
} trigger_key_doc_t;

/* Fills *out for key i < trigger_config_key_count(); false past the end. */
bool trigger_config_key_doc(size_t i, trigger_key_doc_t *out);

/* (p, n) is a key the parser accepts (exact, case-sensitive). */
bool trigger_config_key_known(const char *p, size_t n);

/* When url is one of d->endpoints (compared as strings): fills *out with
 * its parsed form (from d->endpoint_urls, nothing parsed again) and returns
 * true; else false, *out untouched. Both borrowed. */
bool demand_endpoint_url(const demand_config_t *d, const char *url, source_url_t *out);

/* The parsed queue address (d->queue_url expanded; all zero for
 * QUEUE_NONE) into *out. */
void demand_queue_url(const demand_config_t *d, source_url_t *out);

/* The trigger reads engine metrics (from URLs or pods). */
bool trigger_uses_engine(const trigger_config_t *c);
/* The trigger reads token rates: engine_prompt_tokens_rate,
 * engine_generation_tokens_rate, or demand with a token-rate target. */
bool demand_uses_token_rates(const demand_config_t *d);
/* The trigger reads the GPUs (a GPU metric, or demand with targetGpu). */
bool trigger_uses_gpu(const trigger_config_t *c);

/*
 * Every independent problem of one trigger, each a whole message naming the
 * key, the bad value and what would be valid, in a fixed order (unknown
 * keys, duplicates, then the resolution's steps). Messages are never cut:
 * one that no longer fits in text, or past TRIGGER_MAX_PROBLEMS, is counted
 * in count but not stored. Checks that depend on a failed one (the keys of
 * a metricType that is unknown) are skipped: note then says which, and
 * note_on is the problem they depend on (-1: no note).
 */
#define TRIGGER_MAX_PROBLEMS 24
typedef struct {
    unsigned count;                        /* problems found */
    unsigned stored;                       /* msg[0 .. stored): min(count, what fitted) */
    const char *msg[TRIGGER_MAX_PROBLEMS]; /* into text */
    int note_on;
    const char *note; /* static storage; NULL when nothing was skipped */
    /* private */
    size_t _used;   /* bytes of text in use */
    size_t _start;  /* where the message being built (tc_msg_*) starts */
    bool _overflow; /* it did not fit */
    char text[12288];
} trigger_problems_t;

/*
 * Parses n metadata pairs into *out (fully overwritten, also on error) and
 * fills *problems (borrowed; overwritten). Returns 0 (problems->count 0) or
 * KGS_EINVAL. Pure and cheap: no allocation.
 */
int trigger_config_parse_problems(const metadata_pair_t *pairs, size_t n, trigger_config_t *out,
                                  trigger_problems_t *problems);

/*
 * The problems as one message, as the RPCs answer INVALID_ARGUMENT: one
 * problem alone is its message; several are "N problems: 1) ...; 2) ...".
 * The note follows the problem it belongs to, in parentheses, and problems
 * not stored end it as "; and N more". Writes what fits in buf (len bytes
 * with the NUL; buf may be NULL when len is 0), never part of a problem: a
 * buffer too small for the whole ends after the last whole problem with
 * "; and N more (M bytes in all)", or, with room for none of them, is
 * "N problem(s) (M bytes of messages: too long to show here)" (or "" with
 * room for not even that). Returns the length of the whole message: size a
 * buffer with trigger_problems_format(p, NULL, 0) + 1.
 */
size_t trigger_problems_format(const trigger_problems_t *p, char *buf, size_t len);

/* Problem i < p->stored with its note, as validate prints it, into buf
 * ("" when it does not fit whole); returns its whole length. */
size_t trigger_problems_format_one(const trigger_problems_t *p, unsigned i, char *buf, size_t len);

/*
 * Parses n metadata pairs into *out (fully overwritten, also on error).
 * Returns 0, or KGS_EINVAL with every problem in err
 * (trigger_problems_format). err may be NULL.
 */
int trigger_config_parse(const metadata_pair_t *pairs, size_t n, trigger_config_t *out, char *err,
                         size_t errlen);

#endif
