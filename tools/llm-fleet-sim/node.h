/*
 * node.h - the GPU node under the fleet, as a scenario for the NVML
 * stand-in (sim/README.md's format): one H100 80GB per replica slot, its
 * readings following the replica on it, rewritten as the fleet changes
 * (the stand-in re-reads a scenario whose file changed), so the scaler's
 * own NVML view of the node tells the same story as the engines:
 *
 *   no replica   nothing on the GPU: 0 %, no memory in use, idle power;
 *   starting     the weights load (16 GiB for an 8B model in bf16, rising
 *                with the cold start) with the GPU idle (loading is mostly
 *                host work): utilisation 0 while requests already queue;
 *   Ready        vLLM holds gpu_memory_utilization 0.9 of the memory from
 *                the start (weights + preallocated KV cache), busy or not;
 *                utilisation is 97 % as soon as one request runs (a kernel
 *                runs most of the time at any batch size) and 0 without;
 *                SM activity grows with the batch.
 * With no replica the text is sim/scenarios/llm-fleet-8xh100.json's.
 *
 * Pure: text into the caller's buffer.
 */
#ifndef LFS_NODE_H
#define LFS_NODE_H

#include <stddef.h>

#include "fleet.h"

/* The scenario for fleet f at now_s into buf (n bytes). Returns the length
 * (NUL excluded), or 0 when it does not fit. */
size_t node_scenario(char *buf, size_t n, const fleet_t *f, double now_s);

#endif
