/*
 * snapshot_codec.h - a node snapshot (plus the node's pod attribution) to and
 * from the wire message kgs.cluster.v1.NodeSnapshot (proto/cluster.proto).
 * Pure: no I/O, no clock reads (times are arguments). Any thread.
 *
 * Values: each GPU and MIG instance carries one double per gpu_field_t, in
 * enum order, with the validity bits and per-field NVML codes beside them,
 * so an absent field stays absent across the trip. Integer fields convert
 * exactly up to 2^53 (9.0e15: bytes up to 8 PiB, energy up to 9e12 J);
 * beyond that a uint64 is rounded to the nearest double (relative error
 * below 2^-53) and decodes to that rounded value (2^64 decodes as
 * UINT64_MAX). Absent fields travel as 0 and decode as 0.
 *
 * Time: the message carries the snapshot's age at encode time (age_ms),
 * never a monotonic timestamp, so the receiver rebuilds taken_mono on its
 * own clock (recv_now - age) and needs no clock synchronisation. Transit
 * time is not counted (the snapshot looks up to one network delay younger
 * than it is), and ages are whole milliseconds.
 */
#ifndef KGS_CLUSTER_SNAPSHOT_CODEC_H
#define KGS_CLUSTER_SNAPSHOT_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "cluster/node_pods.h"
#include "core/clock.h"
#include "core/snapshot.h"

#define SNAPSHOT_CODEC_PROTOCOL_VERSION 1u
/* The encoder refuses messages larger than gRPC's default receive cap. */
#define SNAPSHOT_CODEC_MAX_BYTES (4u * 1024u * 1024u)
/* Fields a MIG instance carries (other valid bits are not sent). */
#define SNAPSHOT_CODEC_MIG_FIELDS                                                                  \
    ((1u << GPU_F_MEM_USED) | (1u << GPU_F_MEM_TOTAL) | (1u << GPU_F_SM_ACTIVE) |                  \
     (1u << GPU_F_SM_OCCUPANCY) | (1u << GPU_F_DRAM_BW_UTIL))

/*
 * Packs `s` (borrowed) and `pods` (borrowed; NULL = pods_known false with no
 * reason) into a NodeSnapshot with age_ms = (now - s->taken_mono) in whole
 * milliseconds (0 when taken_mono is in the future). GPU fields mig_first /
 * mig_count are not sent: the MIG records travel in s->mig[] order with
 * their parent_index. Returns 0 with *out (returned: free()) and *len, or
 * KGS_ERANGE ("encode NodeSnapshot: 5000000 bytes, at most 4194304") or
 * KGS_ENOMEM. *out is NULL on failure.
 */
int snapshot_codec_encode(const snapshot_t *s, const node_pods_t *pods, mono_ns_t now,
                          uint32_t sample_interval_ms, uint8_t **out, size_t *len, char *err,
                          size_t errlen);

/*
 * Unpacks and validates buf[0..len) (borrowed). Every violation is refused,
 * nothing is repaired: protocol_version must be 1; at most 4096 GPUs and
 * 32768 MIG instances (snapshot_new's limits); GPU indexes unique; each MIG
 * instance's parent exists, has MIG enabled, and its instances are adjacent
 * in the list; every string fits its snapshot_t / node_pods field; at most
 * 32 values and field codes per record, a value for every valid bit, codes
 * within int16; valid values finite, and integer fields integral and in
 * range; MIG valid bits within SNAPSHOT_CODEC_MIG_FIELDS; health a known
 * enum value; each pod entry's DRA devices at most NODE_PODS_MAX_DRA, with
 * a driver and a device name. Valid bits of fields this build does not know
 * (an agent may append fields to gpu_field_t) are dropped, with their
 * values. DRA devices decode unresolved (uuid ""): the wire carries only
 * the kubelet's names, and the aggregator resolves them itself.
 *
 * On success returns 0, *out a snapshot (returned, refcount 1: release with
 * snapshot_unref) whose taken_mono = recv_now - age_ms (0 when the age
 * exceeds recv_now) and sample_duration_ns 0 (not sent), and, when `pods`
 * is not NULL, *pods a node_pods_t (returned: node_pods_free), unknown when
 * pods_known is false. Failure: KGS_EINVAL with a message such as
 * "decode NodeSnapshot: gpus[1] (GPU-ab12): memory_used: not finite", or
 * KGS_ENOMEM; *out and *pods are NULL.
 */
int snapshot_codec_decode(const uint8_t *buf, size_t len, mono_ns_t recv_now, snapshot_t **out,
                          node_pods_t **pods, char *err, size_t errlen);

#endif
