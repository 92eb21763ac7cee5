/*
 * nvml_abi.h - our own declaration of the subset of NVML's C ABI that we call.
 *
 * Written from NVIDIA's documented API (see ../shared/reference/nvml-abi.md for
 * the sizes, offsets and "since" facts); NVIDIA's header is not vendored. Both
 * the dlopen loader (src/nvml/loader.c) and the stand-in library
 * (sim/nvml_sim.c) include this file, so they share one ABI by construction,
 * and tests/unit/nvml/test_nvml_abi.c pins every size and offset that the
 * reference sheet verified against NVIDIA's header.
 *
 * Target: x86-64 / aarch64 Linux, LP64. Every NVML enum is a 4-byte int.
 */
#ifndef KGS_NVML_NVML_ABI_H
#define KGS_NVML_NVML_ABI_H

#include <limits.h>

#include "core/nvml_codes.h"

typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlGpmSample_st *nvmlGpmSample_t;

typedef enum nvmlReturn_enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_ALREADY_INITIALIZED = 5,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_INSUFFICIENT_POWER = 8,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_IRQ_ISSUE = 11,
    NVML_ERROR_LIBRARY_NOT_FOUND = 12,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_CORRUPTED_INFOROM = 14,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_RESET_REQUIRED = 16,
    NVML_ERROR_OPERATING_SYSTEM = 17,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
    NVML_ERROR_IN_USE = 19,
    NVML_ERROR_MEMORY = 20,
    NVML_ERROR_NO_DATA = 21,
    NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
    NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
    NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_DEPRECATED = 26,
    NVML_ERROR_NOT_READY = 27,
    NVML_ERROR_GPU_NOT_FOUND = 28,
    NVML_ERROR_INVALID_STATE = 29,
    NVML_ERROR_RESET_TYPE_NOT_SUPPORTED = 30,
    NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

/* NVML_RETURN_CODES(X), the same codes as data (value, name without the
 * NVML_ERROR_ prefix), is in core/nvml_codes.h, which this file includes:
 * src/core names codes without depending on src/nvml. */

/* Versioned structs carry (version << 24) | sizeof(struct) in their first word. */
#define NVML_STRUCT_VERSION(data, ver)                                                             \
    (unsigned int)(sizeof(nvml##data##_v##ver##_t) | ((unsigned int)(ver) << 24U))

#define NVML_INIT_FLAG_NO_GPUS 1u

/* Buffer sizes, each including the terminating NUL. */
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80

typedef struct nvmlPciInfo_st { /* 68 bytes: the _v3 layout */
    char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfo_t;

typedef struct nvmlUtilization_st {
    unsigned int gpu;    /* percent of the last sample period */
    unsigned int memory; /* memory-controller busy percent */
} nvmlUtilization_t;

typedef struct nvmlMemory_st { /* 24 bytes; v1: used = reserved + allocated */
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

typedef struct nvmlMemory_v2_st { /* 40 bytes; version = nvmlMemory_v2 = 0x02000028 */
    unsigned int version;
    unsigned long long total;
    unsigned long long reserved;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_v2_t;
#define nvmlMemory_v2 NVML_STRUCT_VERSION(Memory, 2)

typedef enum { NVML_TEMPERATURE_GPU = 0 } nvmlTemperatureSensors_t;
typedef struct nvmlTemperature_v1_st { /* 12 bytes; version = 0x0100000C */
    unsigned int version;
    nvmlTemperatureSensors_t sensorType;
    int temperature;
} nvmlTemperature_v1_t;
typedef nvmlTemperature_v1_t nvmlTemperature_t;
#define nvmlTemperature_v1 NVML_STRUCT_VERSION(Temperature, 1)

typedef enum { NVML_PCIE_UTIL_TX_BYTES = 0, NVML_PCIE_UTIL_RX_BYTES = 1 } nvmlPcieUtilCounter_t;
typedef enum {
    NVML_CLOCK_GRAPHICS = 0,
    NVML_CLOCK_SM = 1,
    NVML_CLOCK_MEM = 2,
    NVML_CLOCK_VIDEO = 3
} nvmlClockType_t;

/* Field values (NVLink throughput counters). */
typedef enum {
    NVML_VALUE_TYPE_DOUBLE = 0,
    NVML_VALUE_TYPE_UNSIGNED_INT = 1,
    NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
    NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
    NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
    NVML_VALUE_TYPE_SIGNED_INT = 5,
    NVML_VALUE_TYPE_UNSIGNED_SHORT = 6
} nvmlValueType_t;
typedef union nvmlValue_st { /* 8 bytes */
    double dVal;
    int siVal;
    unsigned int uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    signed long long sllVal;
    unsigned short usVal;
} nvmlValue_t;
typedef struct nvmlFieldValue_st { /* 40 bytes */
    unsigned int fieldId;          /* in */
    unsigned int scopeId;          /* in: NVLink link index, UINT_MAX = all links */
    long long timestamp;           /* out: CPU microseconds since 1970 */
    long long latencyUsec;         /* out */
    nvmlValueType_t valueType;     /* out */
    nvmlReturn_t nvmlReturn;       /* out: per-field status */
    nvmlValue_t value;             /* out: valid only when nvmlReturn == 0 */
} nvmlFieldValue_t;
#define NVML_FI_DEV_NVLINK_LINK_COUNT 91
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX 138 /* KiB, cumulative, payload only */
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX 139
#define NVML_FI_SCOPE_ALL_LINKS UINT_MAX

/* MIG */
#define NVML_DEVICE_MIG_DISABLE 0x0
#define NVML_DEVICE_MIG_ENABLE 0x1
typedef struct nvmlDeviceAttributes_st { /* 40 bytes: the _v2 layout */
    unsigned int multiprocessorCount;
    unsigned int sharedCopyEngineCount;
    unsigned int sharedDecoderCount;
    unsigned int sharedEncoderCount;
    unsigned int sharedJpegCount;
    unsigned int sharedOfaCount;
    unsigned int gpuInstanceSliceCount;
    unsigned int computeInstanceSliceCount;
    unsigned long long memorySizeMB; /* MiB */
} nvmlDeviceAttributes_t;

/* GPM (Hopper and newer). GPM structs use raw small version numbers. */
#define NVML_GPM_METRICS_GET_VERSION 1
#define NVML_GPM_SUPPORT_VERSION 1
#define NVML_GPM_METRIC_MAX 333 /* a superset: the array grew 98 -> 210 -> 333 */
typedef enum {
    NVML_GPM_METRIC_SM_UTIL = 2,
    NVML_GPM_METRIC_SM_OCCUPANCY = 3,
    NVML_GPM_METRIC_DRAM_BW_UTIL = 10
} nvmlGpmMetricId_t;
typedef struct nvmlGpmMetric_st { /* 40 bytes */
    unsigned int metricId;        /* in */
    nvmlReturn_t nvmlReturn;      /* out, per metric */
    double value;                 /* out */
    struct {
        char *shortName;
        char *longName;
        char *unit;
    } metricInfo;
} nvmlGpmMetric_t;
typedef struct nvmlGpmMetricsGet_st {
    unsigned int version; /* NVML_GPM_METRICS_GET_VERSION */
    unsigned int numMetrics;
    nvmlGpmSample_t sample1;
    nvmlGpmSample_t sample2;
    nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;
typedef struct nvmlGpmSupport_st {
    unsigned int version; /* NVML_GPM_SUPPORT_VERSION */
    unsigned int isSupportedDevice;
} nvmlGpmSupport_t;

/* Per-process data (section 4.3 of the reference sheet). */
typedef struct nvmlProcessUtilizationSample_st { /* 32 bytes */
    unsigned int pid;                            /*  0 */
    unsigned long long timeStamp;                /*  8: CPU microseconds */
    unsigned int smUtil;                         /* 16: percent */
    unsigned int memUtil;                        /* 20: percent */
    unsigned int encUtil;                        /* 24 */
    unsigned int decUtil;                        /* 28 */
} nvmlProcessUtilizationSample_t;

/* The element of the unversioned Get*RunningProcesses calls: 16 bytes. */
typedef struct nvmlProcessInfo_v1_st {
    unsigned int pid;
    unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

/* The element of the _v2 and _v3 calls: 24 bytes. (Drivers 535.43-535.86
 * wrote 32-byte elements from _v3; the collector prefers _v2 there.) */
typedef struct nvmlProcessInfo_v2_st {
    unsigned int pid;                 /*  0 */
    unsigned long long usedGpuMemory; /*  8: bytes; NVML_VALUE_NOT_AVAILABLE_ULL if unknown */
    unsigned int gpuInstanceId;       /* 16: 0xFFFFFFFF when MIG is off */
    unsigned int computeInstanceId;   /* 20: 0xFFFFFFFF when MIG is off */
} nvmlProcessInfo_v2_t;
typedef nvmlProcessInfo_v2_t nvmlProcessInfo_t;
#define NVML_VALUE_NOT_AVAILABLE_ULL (~0ULL)
#define NVML_INSTANCE_ID_NONE 0xFFFFFFFFu

/*
 * Every symbol we may bind: X(name, parameter list). All return nvmlReturn_t
 * except nvmlErrorString, declared separately. The loader generates its table
 * of pointers from this list, the stand-in implements each one, and the
 * prototypes below let the compiler check the stand-in against the list.
 */
#define NVML_SYMBOLS(X)                                                                            \
    X(nvmlInit_v2, (void))                                                                         \
    X(nvmlInit, (void))                                                                            \
    X(nvmlInitWithFlags, (unsigned int flags))                                                     \
    X(nvmlShutdown, (void))                                                                        \
    X(nvmlSystemGetDriverVersion, (char *version, unsigned int length))                            \
    X(nvmlSystemGetCudaDriverVersion_v2, (int *cudaDriverVersion))                                 \
    X(nvmlSystemGetCudaDriverVersion, (int *cudaDriverVersion))                                    \
    X(nvmlDeviceGetCount_v2, (unsigned int *deviceCount))                                          \
    X(nvmlDeviceGetCount, (unsigned int *deviceCount))                                             \
    X(nvmlDeviceGetHandleByIndex_v2, (unsigned int index, nvmlDevice_t *device))                   \
    X(nvmlDeviceGetHandleByIndex, (unsigned int index, nvmlDevice_t *device))                      \
    X(nvmlDeviceGetName, (nvmlDevice_t device, char *name, unsigned int length))                   \
    X(nvmlDeviceGetUUID, (nvmlDevice_t device, char *uuid, unsigned int length))                   \
    X(nvmlDeviceGetPciInfo_v3, (nvmlDevice_t device, nvmlPciInfo_t * pci))                         \
    X(nvmlDeviceGetPciInfo_v2, (nvmlDevice_t device, nvmlPciInfo_t * pci))                         \
    X(nvmlDeviceGetPciInfo, (nvmlDevice_t device, nvmlPciInfo_t * pci))                            \
    X(nvmlDeviceGetUtilizationRates, (nvmlDevice_t device, nvmlUtilization_t * utilization))       \
    X(nvmlDeviceGetMemoryInfo_v2, (nvmlDevice_t device, nvmlMemory_v2_t * memory))                 \
    X(nvmlDeviceGetMemoryInfo, (nvmlDevice_t device, nvmlMemory_t * memory))                       \
    X(nvmlDeviceGetTemperatureV, (nvmlDevice_t device, nvmlTemperature_t * temperature))           \
    X(nvmlDeviceGetTemperature,                                                                    \
      (nvmlDevice_t device, nvmlTemperatureSensors_t sensorType, unsigned int *temp))              \
    X(nvmlDeviceGetPowerUsage, (nvmlDevice_t device, unsigned int *power))                         \
    X(nvmlDeviceGetEnforcedPowerLimit, (nvmlDevice_t device, unsigned int *limit))                 \
    X(nvmlDeviceGetPowerManagementLimit, (nvmlDevice_t device, unsigned int *limit))               \
    X(nvmlDeviceGetTotalEnergyConsumption, (nvmlDevice_t device, unsigned long long *energy))      \
    X(nvmlDeviceGetPcieThroughput,                                                                 \
      (nvmlDevice_t device, nvmlPcieUtilCounter_t counter, unsigned int *value))                   \
    X(nvmlDeviceGetClockInfo, (nvmlDevice_t device, nvmlClockType_t type, unsigned int *clock))    \
    X(nvmlDeviceGetCurrentClocksEventReasons,                                                      \
      (nvmlDevice_t device, unsigned long long *clocksEventReasons))                               \
    X(nvmlDeviceGetCurrentClocksThrottleReasons,                                                   \
      (nvmlDevice_t device, unsigned long long *clocksThrottleReasons))                            \
    X(nvmlDeviceGetFieldValues, (nvmlDevice_t device, int valuesCount, nvmlFieldValue_t *values))  \
    X(nvmlDeviceGetMigMode,                                                                        \
      (nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode))                 \
    X(nvmlDeviceGetMaxMigDeviceCount, (nvmlDevice_t device, unsigned int *count))                  \
    X(nvmlDeviceGetMigDeviceHandleByIndex,                                                         \
      (nvmlDevice_t device, unsigned int index, nvmlDevice_t *migDevice))                          \
    X(nvmlDeviceGetGpuInstanceId, (nvmlDevice_t device, unsigned int *id))                         \
    X(nvmlDeviceGetComputeInstanceId, (nvmlDevice_t device, unsigned int *id))                     \
    X(nvmlDeviceGetAttributes_v2, (nvmlDevice_t device, nvmlDeviceAttributes_t * attributes))      \
    X(nvmlGpmQueryDeviceSupport, (nvmlDevice_t device, nvmlGpmSupport_t * gpmSupport))             \
    X(nvmlGpmSampleAlloc, (nvmlGpmSample_t * gpmSample))                                           \
    X(nvmlGpmSampleFree, (nvmlGpmSample_t gpmSample))                                              \
    X(nvmlGpmSampleGet, (nvmlDevice_t device, nvmlGpmSample_t gpmSample))                          \
    X(nvmlGpmMigSampleGet,                                                                         \
      (nvmlDevice_t device, unsigned int gpuInstanceId, nvmlGpmSample_t gpmSample))                \
    X(nvmlGpmMetricsGet, (nvmlGpmMetricsGet_t * metricsGet))                                       \
    X(nvmlDeviceGetProcessUtilization,                                                             \
      (nvmlDevice_t device, nvmlProcessUtilizationSample_t * utilization,                          \
       unsigned int *processSamplesCount, unsigned long long lastSeenTimeStamp))                   \
    X(nvmlDeviceGetComputeRunningProcesses_v3,                                                     \
      (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_v2_t *infos))                 \
    X(nvmlDeviceGetComputeRunningProcesses_v2,                                                     \
      (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_v2_t *infos))                 \
    X(nvmlDeviceGetComputeRunningProcesses,                                                        \
      (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_v1_t *infos))                 \
    X(nvmlDeviceGetGraphicsRunningProcesses_v3,                                                    \
      (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_v2_t *infos))                 \
    X(nvmlDeviceGetGraphicsRunningProcesses_v2,                                                    \
      (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_v2_t *infos))                 \
    X(nvmlDeviceGetGraphicsRunningProcesses,                                                       \
      (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_v1_t *infos))                 \
    X(nvmlDeviceGetMPSComputeRunningProcesses_v3,                                                  \
      (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_v2_t *infos))                 \
    X(nvmlDeviceGetMPSComputeRunningProcesses_v2,                                                  \
      (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_v2_t *infos))

#define NVML_ABI_DECLARE(name, params) nvmlReturn_t name params;
NVML_SYMBOLS(NVML_ABI_DECLARE)
#undef NVML_ABI_DECLARE
const char *nvmlErrorString(nvmlReturn_t result);

#endif
