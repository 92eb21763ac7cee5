/* test_metadata.c - counting a request's scalerMetadata on the wire, before
 * protobuf-c builds it: the counts agree with the decoder's on well-formed
 * messages, and truncated or malformed bytes are reported, not guessed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/err.h"
#include "core/metadata.h"
#include "proto/externalscaler.pb-c.h"

/* A ScaledObjectRef with n entries key_i = value (or a GetMetricsRequest
 * around it), packed by protobuf-c into a malloc'd buffer. */
static uint8_t *pack(size_t n, const char *value, bool get_metrics, size_t *len) {
    Externalscaler__ScaledObjectRef__ScalerMetadataEntry *e = calloc(n + 1, sizeof *e);
    Externalscaler__ScaledObjectRef__ScalerMetadataEntry **p = calloc(n + 1, sizeof *p);
    char(*keys)[24] = calloc(n + 1, sizeof *keys);
    assert_true(e && p && keys);
    for (size_t i = 0; i < n; i++) {
        Externalscaler__ScaledObjectRef__ScalerMetadataEntry init =
            EXTERNALSCALER__SCALED_OBJECT_REF__SCALER_METADATA_ENTRY__INIT;
        e[i] = init;
        snprintf(keys[i], sizeof keys[i], "k%zu", i);
        e[i].key = keys[i];
        e[i].value = (char *)value;
        p[i] = &e[i];
    }
    Externalscaler__ScaledObjectRef ref = EXTERNALSCALER__SCALED_OBJECT_REF__INIT;
    ref.name = "so";
    ref.namespace_ = "ml";
    ref.n_scalermetadata = n;
    ref.scalermetadata = p;
    Externalscaler__GetMetricsRequest gm = EXTERNALSCALER__GET_METRICS_REQUEST__INIT;
    gm.scaledobjectref = &ref;
    gm.metricname = "gpu";
    const ProtobufCMessage *m = get_metrics ? &gm.base : &ref.base;
    *len = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = malloc(*len + 1);
    assert_non_null(buf);
    protobuf_c_message_pack(m, buf);
    free(e);
    free(p);
    free(keys);
    return buf;
}

static void test_metadata_wire_count_agrees_with_the_decoder(void **state) {
    (void)state;
    const size_t sizes[] = {0, 1, 3, 300};
    for (size_t k = 0; k < 4; k++) {
        for (int gm = 0; gm < 2; gm++) {
            size_t len;
            uint8_t *buf = pack(sizes[k], "value", gm, &len);
            metadata_wire_count_t c;
            assert_int_equal(metadata_wire_count(buf, len, gm, &c), 0);
            assert_int_equal(c.entries, sizes[k]);
            size_t want = 0;
            for (size_t i = 0; i < sizes[k]; i++) {
                char key[24];
                want += (size_t)snprintf(key, sizeof key, "k%zu", i) + 5;
            }
            assert_int_equal(c.bytes, want);
            free(buf);
        }
    }
}

static void test_metadata_wire_count_counts_empty_entries(void **state) {
    (void)state;
    /* the attack of issue 16: field 3 with an empty payload, over and over */
    size_t n = 100000;
    uint8_t *ref = malloc(2 * n);
    assert_non_null(ref);
    for (size_t i = 0; i < n; i++) {
        ref[2 * i] = 0x1a;
        ref[2 * i + 1] = 0;
    }
    metadata_wire_count_t c;
    assert_int_equal(metadata_wire_count(ref, 2 * n, false, &c), 0);
    assert_int_equal(c.entries, n);
    assert_int_equal(c.bytes, 0);
    /* the same inside GetMetricsRequest field 1, split in two occurrences
     * (protobuf merges them: both count) */
    size_t half = n; /* bytes */
    uint8_t *gm = malloc(2 * n + 16);
    assert_non_null(gm);
    size_t o = 0;
    for (int part = 0; part < 2; part++) {
        gm[o++] = 0x0a;
        size_t l = half; /* varint of 100000: 0xa0 0x8d 0x06 */
        while (l >= 0x80) {
            gm[o++] = (uint8_t)(l | 0x80);
            l >>= 7;
        }
        gm[o++] = (uint8_t)l;
        memcpy(gm + o, ref + part * half, half);
        o += half;
    }
    assert_int_equal(metadata_wire_count(gm, o, true, &c), 0);
    assert_int_equal(c.entries, n);
    free(gm);
    free(ref);
}

static void test_metadata_wire_count_skips_other_fields(void **state) {
    (void)state;
    /* name, namespace, an unknown varint, fixed64 and fixed32 field, then
     * one entry with a duplicated key field: the bytes are an upper bound */
    const uint8_t msg[] = {0x0a, 2,    's',  'o', 0x12, 1,    'n', 0xf8, 0x06, 0x96,
                           0x01, 0xf9, 0x06, 1,   2,    3,    4,   5,    6,    7,
                           8,    0xfd, 0x06, 1,   2,    3,    4,   0x1a, 9,    0x0a,
                           1,    'a',  0x0a, 1,   'b',  0x12, 1,   'c'};
    metadata_wire_count_t c;
    assert_int_equal(metadata_wire_count(msg, sizeof msg, false, &c), 0);
    assert_int_equal(c.entries, 1);
    assert_int_equal(c.bytes, 3);
}

static void test_metadata_wire_count_reports_malformed_bytes(void **state) {
    (void)state;
    metadata_wire_count_t c;
    const uint8_t truncated_len[] = {0x1a, 5, 0x0a};
    assert_int_equal(metadata_wire_count(truncated_len, sizeof truncated_len, false, &c),
                     KGS_EINVAL);
    const uint8_t truncated_varint[] = {0x08, 0xff};
    assert_int_equal(metadata_wire_count(truncated_varint, 2, false, &c), KGS_EINVAL);
    const uint8_t group[] = {0x0b, 0x0c};
    assert_int_equal(metadata_wire_count(group, 2, false, &c), KGS_EINVAL);
    const uint8_t bad_entry[] = {0x1a, 2, 0x0a, 7}; /* a key that runs past its entry */
    assert_int_equal(metadata_wire_count(bad_entry, sizeof bad_entry, false, &c), KGS_EINVAL);
    const uint8_t huge_len[] = {0x1a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
    assert_int_equal(metadata_wire_count(huge_len, sizeof huge_len, false, &c), KGS_EINVAL);
    const uint8_t long_varint[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0};
    assert_int_equal(metadata_wire_count(long_varint, sizeof long_varint, false, &c), KGS_EINVAL);
    assert_int_equal(metadata_wire_count(NULL, 0, true, &c), 0);
    assert_int_equal(c.entries, 0);
    assert_int_equal(metadata_wire_count(NULL, 3, true, &c), KGS_EINVAL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metadata_wire_count_agrees_with_the_decoder),
        cmocka_unit_test(test_metadata_wire_count_counts_empty_entries),
        cmocka_unit_test(test_metadata_wire_count_skips_other_fields),
        cmocka_unit_test(test_metadata_wire_count_reports_malformed_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
