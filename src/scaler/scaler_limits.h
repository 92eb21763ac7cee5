/*
 * scaler_limits.h - the scaler's default budgets, apart from scaler.h so
 * that code which only defaults the flags (server/options.c) needs neither
 * the gRPC server nor the sources.
 */
#ifndef KGS_SCALER_SCALER_LIMITS_H
#define KGS_SCALER_SCALER_LIMITS_H

#define SCALER_DEFAULT_MAX_METADATA_ENTRIES 256u
#define SCALER_DEFAULT_MAX_METADATA_BYTES (32u * 1024)
#define SCALER_DEFAULT_CONFIG_CACHE_BYTES (32u * 1024 * 1024)
/* Shared fairly by namespace (core/fair_share.h): one namespace alone may
 * pin half of it, about 580 distinct triggers. */
#define SCALER_DEFAULT_MAX_STREAM_BYTES (32u * 1024 * 1024)

#endif
