/*
 * fleet.h - the serving side llm-fleet-sim plays: an LLM gateway's queue
 * in front of a Deployment of vLLM replicas.
 *
 * - The gateway holds every request in one FIFO queue (the endpoint
 *   picker's flow-control queue) and hands the head to the Ready replica
 *   with the least work (running + waiting), as long as that replica has
 *   fewer than queue_threshold requests waiting inside (the picker's
 *   saturation test); with no Ready replica everything waits at the
 *   gateway, which is what wakes the fleet from zero.
 * - A replica (a slot, 0..slots-1, each with its own /metrics port) is
 *   absent, starting (created, loading the model: not Ready, serves
 *   nothing) or Ready. It runs up to max_num_seqs requests at once and
 *   queues the rest (vLLM's waiting queue). A request takes prefill time
 *   (prompt tokens / prefill_tps) and then decode time (output tokens /
 *   decode_tps per sequence); its prompt tokens count when its prefill
 *   ends, its output tokens one by one as they are generated, and it
 *   counts as a success with finished_reason "length" (it hit max_tokens)
 *   or "stop" when its last token is out.
 * - Scaling to n replicas (what KEDA and the HPA write): new replicas take
 *   the lowest free slots and are Ready cold_start_s later. Removing
 *   replicas follows the ReplicaSet's order: starting before Ready, and
 *   within each the newest first. A removed replica's requests go back to
 *   the head of the gateway queue (the client retries them), and a
 *   replica created later in its slot starts with fresh counters, as a new
 *   pod does.
 *
 * Pure: no I/O, no clock (times are arguments: seconds of the simulation),
 * no allocation (fixed arrays; the bounds below). Caller-owned; one writer.
 */
#ifndef LFS_FLEET_H
#define LFS_FLEET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "load.h"

#define FLEET_MAX_SLOTS 16      /* vllmEndpoint takes at most 16 URLs */
#define FLEET_MAX_SEQS 64       /* max_num_seqs bound */
#define FLEET_MAX_WAITING 64    /* a replica's own queue bound (>= queue_threshold) */
#define FLEET_GATEWAY_MAX 16384 /* the gateway queue bound: beyond it requests are rejected */

typedef enum { FLEET_ABSENT = 0, FLEET_STARTING, FLEET_READY } fleet_slot_state_t;

typedef struct {
    load_request_t req;
    double start_s;       /* running since (prefill starts) */
    double prefill_end_s; /* prompt tokens count from here */
    double end_s;         /* last token out */
    unsigned output_done; /* output tokens counted so far */
    bool prompt_counted;
} fleet_running_t;

typedef struct {
    /* read-only for callers */
    fleet_slot_state_t state;
    double created_s;
    double ready_s; /* Ready from here (created + cold start) */
    fleet_running_t running[FLEET_MAX_SEQS];
    unsigned nrunning;
    load_request_t waiting[FLEET_MAX_WAITING]; /* FIFO: waiting[0] is next */
    unsigned nwaiting;
    /* vLLM's counters since this replica started (a new pod starts at 0) */
    double prompt_tokens_total;
    double generation_tokens_total;
    double success_stop, success_length, success_abort;
} fleet_slot_t;

typedef struct {
    unsigned slots;            /* 1..FLEET_MAX_SLOTS */
    double cold_start_s;       /* > 0: created -> Ready */
    unsigned max_num_seqs;     /* 1..FLEET_MAX_SEQS: requests one replica runs at once */
    unsigned queue_threshold;  /* 1..FLEET_MAX_WAITING: the gateway sends a replica more only
                                  while fewer than this wait inside it */
    double prefill_tps;        /* > 0: prompt tokens per second one replica prefills */
    double decode_tps;         /* > 0: output tokens per second per running sequence */
    double kv_capacity_tokens; /* > 0: KV-cache tokens of one replica (the usage gauge) */
} fleet_params_t;

typedef struct {
    /* read-only for callers */
    fleet_params_t p;
    fleet_slot_t slot[FLEET_MAX_SLOTS];
    unsigned replicas; /* the spec: starting + Ready */
    /* the gateway queue, a ring */
    load_request_t gateway[FLEET_GATEWAY_MAX];
    size_t gw_head, gw_len;
    uint64_t rejected; /* arrivals the full gateway queue refused */
    uint64_t requeued; /* requests a removed replica gave back */
    uint64_t completed;
    size_t max_queue;  /* the longest the gateway queue was (fleet_reset_stats clears) */
    double max_wait_s; /* the longest a request waited at the gateway before a replica took it */
} fleet_t;

/* What the fleet looks like now (sums over replicas). */
typedef struct {
    size_t queue;      /* at the gateway */
    unsigned waiting;  /* inside the Ready replicas (vllm:num_requests_waiting) */
    unsigned running;  /* vllm:num_requests_running, summed */
    unsigned replicas; /* spec */
    unsigned ready;
    unsigned starting;
} fleet_summary_t;

/* The demo's replica, in a real fleet's seconds: cold start 90 s (the
 * llm-d measurement of vLLM's defaults, ../shared/reference), 16 sequences
 * at once, the gateway's queue-depth threshold 5, prefill 8 000 tokens/s,
 * decode 30 tokens/s per sequence, 65 536 KV tokens; slots as given. */
void fleet_params_default(fleet_params_t *p, unsigned slots);

/* Checks p; 0, or KGS_EINVAL naming the field, its value and what is valid. */
int fleet_params_validate(const fleet_params_t *p, char *err, size_t errlen);

/* An empty fleet at 0 replicas. p must be valid (fleet_params_validate). */
void fleet_init(fleet_t *f, const fleet_params_t *p);

/* A request joins the gateway queue; false (and counted in rejected) when
 * the queue is full. */
bool fleet_arrive(fleet_t *f, const load_request_t *r);

/*
 * Sets the replica count at now_s (clamped to [0, slots]): creates or
 * removes replicas as described above. Returns the replicas now.
 */
unsigned fleet_scale(fleet_t *f, double now_s, unsigned replicas);

/*
 * Advances to now_s: replicas whose cold start is over become Ready,
 * requests finish (counters), replicas take waiting requests, the gateway
 * dispatches. Returns a bit per slot that became Ready in this call.
 */
uint32_t fleet_advance(fleet_t *f, double now_s);

void fleet_summary(const fleet_t *f, fleet_summary_t *out);

/* What one replica completes per second when it is kept full, for the
 * request mix of l: max_num_seqs over the mean time of a request (prefill of
 * the mean prompt, decode of the mean output after max_tokens). What an
 * operator measures with a benchmark and gives the scaler as
 * capacityPerReplica. */
double fleet_capacity_rps(const fleet_params_t *p, const load_t *l);

/* Clears completed, rejected, requeued, max_queue and max_wait_s (a new
 * burst's figures). */
void fleet_reset_stats(fleet_t *f);

/* vllm:kv_cache_usage_perc of a slot as of the last fleet_advance: the
 * tokens its running sequences hold (prompt + output so far) over the
 * capacity, at most 1; 0 for a slot out of range. */
double fleet_kv_usage(const fleet_t *f, unsigned slot);

#endif
