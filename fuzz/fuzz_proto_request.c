/*
 * fuzz_proto_request.c - the request messages KEDA and health probes send,
 * decoded with protobuf-c from arbitrary bytes, then taken as far as the
 * server takes them: the metadata map into the trigger configuration parser.
 *
 * The first byte picks the message (ScaledObjectRef, GetMetricsRequest,
 * HealthCheckRequest); the rest is the wire bytes.
 *
 * The server counts the metadata on the wire before decoding
 * (metadata_wire_count), to refuse millions of entries before protobuf-c
 * allocates them: whatever the decoder accepts, the count must accept too
 * (or a message could slip past the limits) and must count at least the
 * entries the decoder built.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/metadata.h"
#include "core/trigger_config.h"
#include "proto/externalscaler.pb-c.h"
#include "proto/health.pb-c.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The wire count against what the decoder built from the same bytes. */
static void check_count(const uint8_t *msg, size_t len, bool get_metrics,
                        const Externalscaler__ScaledObjectRef *r) {
    metadata_wire_count_t c;
    int rc = metadata_wire_count(msg, len, get_metrics, &c);
    FUZZ_CHECK(rc == 0); /* decoded, so well-formed */
    size_t n = r ? r->n_scalermetadata : 0, bytes = 0;
    for (size_t i = 0; i < n; i++)
        bytes += strlen(r->scalermetadata[i]->key) + strlen(r->scalermetadata[i]->value);
    FUZZ_CHECK(c.entries >= n);
    FUZZ_CHECK(c.bytes >= bytes);
    FUZZ_CHECK(c.bytes <= len);
}

static void parse_ref(const Externalscaler__ScaledObjectRef *r) {
    if (!r)
        return;
    FUZZ_CHECK(r->name && r->namespace_); /* proto3: unset strings are "" */
    size_t n = r->n_scalermetadata;
    metadata_pair_t *pairs = calloc(n ? n : 1, sizeof *pairs);
    if (!pairs)
        return;
    for (size_t i = 0; i < n; i++) {
        const Externalscaler__ScaledObjectRef__ScalerMetadataEntry *e = r->scalermetadata[i];
        FUZZ_CHECK(e && e->key && e->value);
        pairs[i] = (metadata_pair_t){e->key, strlen(e->key), e->value, strlen(e->value)};
    }
    trigger_config_t cfg;
    char err[512];
    if (trigger_config_parse(pairs, n, &cfg, err, sizeof err) == 0)
        FUZZ_CHECK(cfg.target_value > 0 && cfg.poll_interval_s >= 1);
    free(pairs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    const uint8_t *msg = data + 1;
    size_t len = size - 1;
    switch (data[0] % 3) {
    case 0: {
        Externalscaler__ScaledObjectRef *r =
            externalscaler__scaled_object_ref__unpack(NULL, len, msg);
        parse_ref(r);
        if (r) {
            check_count(msg, len, false, r);
            externalscaler__scaled_object_ref__free_unpacked(r, NULL);
        }
        break;
    }
    case 1: {
        Externalscaler__GetMetricsRequest *r =
            externalscaler__get_metrics_request__unpack(NULL, len, msg);
        if (r) {
            FUZZ_CHECK(r->metricname);
            parse_ref(r->scaledobjectref);
            check_count(msg, len, true, r->scaledobjectref);
            externalscaler__get_metrics_request__free_unpacked(r, NULL);
        }
        break;
    }
    default: {
        Grpc__Health__V1__HealthCheckRequest *r =
            grpc__health__v1__health_check_request__unpack(NULL, len, msg);
        if (r) {
            FUZZ_CHECK(r->service);
            grpc__health__v1__health_check_request__free_unpacked(r, NULL);
        }
        break;
    }
    }
    return 0;
}
