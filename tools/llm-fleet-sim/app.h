/*
 * app.h - llm-fleet-sim's program state, shared by main.c (options, the
 * /metrics servers, the clock, the screen) and keda.c (KEDA and the HPA,
 * playing against the scaler over gRPC). Not a library: one app_t, created
 * by main(), loop thread only.
 */
#ifndef LFS_APP_H
#define LFS_APP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hpa.h" /* tools/scalesim: KEDA and the HPA arithmetic */
#include "fleet.h"
#include "load.h"
#include "net/grpc_client.h"
#include "net/http_server.h"
#include "net/loop.h"
#include "proto/externalscaler.pb-c.h"

#define LFS_MAX_METADATA 32

/* The Kubernetes and KEDA figures the demo plays, in a real cluster's
 * seconds (the time scale divides them like everything else). */
#define LFS_KEDA_POLLING_S 30.0   /* pollingInterval, KEDA's default */
#define LFS_KEDA_COOLDOWN_S 300.0 /* cooldownPeriod, KEDA's default */
#define LFS_HPA_SYNC_S 15.0       /* the HPA controller's sync period */
#define LFS_HPA_DOWN_WINDOW_S                                                                      \
    120.0                          /* scale-down stabilisation: docs/configuration.md's            \
                                      recommendation for the queueing model */
#define LFS_REAL_COLD_START_S 90.0 /* vLLM's defaults, Qwen3-32B on an H100 (llm-d): 90.65 s */

typedef struct {
    const char *scaler;   /* host:port */
    const char *listen;   /* the address the pages listen on */
    unsigned engine_port; /* slot i serves on engine_port + i */
    unsigned gateway_port;
    const char *node_file; /* NULL = none; else the NVML stand-in's scenario to keep current */
    unsigned slots;
    double time_scale; /* > 0: 6 = six times faster than a real fleet */
    unsigned cycles;   /* 0 = until stopped */
    double max_wall_s; /* 0 = no bound */
    uint64_t seed;
    const char *meta_keys[LFS_MAX_METADATA], *meta_values[LFS_MAX_METADATA];
    size_t nmeta; /* extra trigger metadata (--metadata) */
    bool help;
} lfs_opts_t;

/* One slot's /metrics server context. */
typedef struct app app_t;
typedef struct {
    app_t *app;
    int slot; /* -1: the gateway */
} lfs_page_ctx_t;

typedef enum { ROUND_NONE = 0, ROUND_POLL, ROUND_HPA } lfs_round_kind_t;

typedef struct {
    /* the gRPC client KEDA's operator and metrics server use, one here */
    grpc_client_t *client;
    grpc_client_opts_t co;
    bool may_reconnect;
    /* the trigger: metadata keys and values (owned by app_t's storage) */
    const char *keys[LFS_MAX_METADATA + 8], *values[LFS_MAX_METADATA + 8];
    size_t nmeta;
    /* a GPU-utilisation trigger on the same node, asked beside it for the
     * screen's gpu column (what scaling on GPU utilisation would see) */
    const char *gpu_keys[2], *gpu_values[2];
    double gpu_value;
    bool have_gpu;
    char metric_name[128];
    /* KEDA's scale loop and the HPA (tools/scalesim/hpa.h), model seconds */
    hpa_keda_t keda;
    hpa_t hpa;
    loop_timer_t poll_timer, hpa_timer, stream_timer;
    bool poll_due, hpa_due; /* a round is owed once the current one ends */
    /* the round in flight: GetMetricSpec -> GetMetrics -> IsActive -> Explain */
    lfs_round_kind_t round;
    bool have_spec, have_value, have_active;
    double target, value;
    bool active;
    char explain[1024];
    char error[512];
    /* what the last round that succeeded said (the screen's columns) */
    int last_active;   /* -1 before the first answer */
    double last_value; /* NaN before the first answer */
    double last_gpu;   /* NaN: unknown (no answer, or an error) */
    char last_explain[1024];
    /* StreamIsActive, reopened as KEDA does: 2 s doubling to 60 s, 2 s after OK */
    bool stream_open;
    unsigned stream_backoff_s;
} lfs_keda_t;

struct app {
    lfs_opts_t o;
    loop_t *loop;
    fleet_t *fleet; /* heap: about 1 MiB */
    load_t load;
    mono_ns_t t0;
    double now_s; /* model seconds since start */
    loop_timer_t tick;
    http_server_t *slot_srv[FLEET_MAX_SLOTS];
    http_server_t *gateway_srv;
    lfs_page_ctx_t slot_ctx[FLEET_MAX_SLOTS], gateway_ctx;
    char page[16384];
    char node_text[2][16384]; /* the node scenario: [0] being built, [1] last written */
    char endpoints[FLEET_MAX_SLOTS * 48 + 64]; /* vllmEndpoint */
    char gateway_url[64], cold_start[24], capacity[32];
    char keybuf[LFS_MAX_METADATA][128]; /* --metadata keys, cut at '=' */
    lfs_keda_t k;
    /* the screen: the last line printed, without its time */
    char last_line[2048];
    unsigned lines;
    /* the story so far */
    unsigned cycle;       /* cycles completed */
    double cycle_start_s; /* model time of this cycle's burst */
    double woke_s;        /* -1 until the fleet left 0 in this cycle */
    unsigned peak;        /* the most replicas in this cycle */
    bool quitting;
    int exit_code;
};

/* keda.c: connects and starts KEDA's loop, the HPA and the stream (0, or
 * the connect error); stops them (harmless when never started). */
int lfs_keda_start(app_t *a, char *err, size_t errlen);
void lfs_keda_stop(app_t *a);

/* main.c: the fleet's replica count changed to n (KEDA or the HPA wrote it)
 * because of `why`; applies it, prints the line. */
void lfs_set_replicas(app_t *a, unsigned n, const char *why);
/* main.c: one line on the screen with the fleet's state and `decision`. */
void lfs_print(app_t *a, const char *decision);
/* main.c: model seconds now. */
double lfs_now(app_t *a);

#endif
