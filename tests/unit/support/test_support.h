/*
 * test_support.h - builders the unit tests share: metadata maps, parsed
 * trigger configs and small snapshots, so a test states its inputs in a line
 * and the building is written (and fixed) once.
 *
 * Every helper fails the running cmocka test (fail_msg) on a bad input
 * instead of returning an error: a builder that cannot build is a broken
 * test, never a case under test. Include after <cmocka.h>. Linked into every
 * unit test by kgs_unit_test() (cmake/testing.cmake).
 */
#ifndef KGS_TEST_SUPPORT_H
#define KGS_TEST_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

#include "core/clock.h"
#include "core/metadata.h"
#include "core/snapshot.h"
#include "core/trigger_config.h"

/* Room for every key the trigger config knows, and more. */
#define TS_MAX_PAIRS 64

/* A metadata map by value: pairs[0..n) borrow the strings it was built from. */
typedef struct {
    metadata_pair_t p[TS_MAX_PAIRS];
    size_t n;
} ts_map_t;

/* kv: NULL-terminated alternating key, value. Fills pairs[0..) with slices of
 * kv's strings (borrowed: they must outlive the pairs) and returns how many;
 * fails the test when there are more than cap. */
size_t ts_pairs(const char *const *kv, metadata_pair_t *pairs, size_t cap);

/* The map of kv (see ts_pairs), at most TS_MAX_PAIRS pairs. */
ts_map_t ts_map(const char *const *kv);

/* kv parsed by trigger_config_parse; fails the test with the parser's
 * message when the map is rejected. */
trigger_config_t ts_config(const char *const *kv);

/* The bytes of tests/fixtures/engines/<name> (KGS_SOURCE_DIR must name the
 * source tree), NUL-terminated; *len without the NUL. Caller frees. */
char *ts_engine_fixture(const char *name, size_t *len);

#define MAP(...) ts_map((const char *const[]){__VA_ARGS__, NULL})
#define CFG(...) ts_config((const char *const[]){__VA_ARGS__, NULL})
#define CFG0() ts_config((const char *const[]){NULL})

/* Marks field f of g present. */
static inline void ts_set_field(gpu_record_t *g, gpu_field_t f) {
    g->valid |= 1u << f;
}

/* A snapshot of node with one GPU (index 0, uuid) whose only field is
 * gpu_util = seq: the shape the agent stream tests publish. The caller owns
 * the reference. */
snapshot_t *ts_one_gpu_snapshot(const char *node, const char *uuid, uint64_t seq, mono_ns_t taken);

#endif
