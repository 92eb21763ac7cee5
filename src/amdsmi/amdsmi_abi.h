/*
 * amdsmi_abi.h - our own declarations of the part of AMD's amd-smi C library
 * (libamd_smi.so) that the amdsmi backend and its stand-in use. Not AMD's
 * header: only the functions, enum values, struct layouts and status codes
 * we need, written from ROCm/amdsmi include/amd_smi/amdsmi.h at tag
 * rocm-6.2.2 (library 24.6). Where a later layout is used it says so:
 * amdsmi_get_gpu_kfd_info and amdsmi_kfd_info_t.current_partition_id first
 * appear on ROCm/amdsmi amd-staging at 0ceca28 (2024-10-23, library 24.7,
 * the ROCm 6.3 line); the backend binds that symbol optionally. The
 * per-partition (XCP) block of the metrics table, amdsmi_gpu_metrics_t's
 * xcp_stats, is read from the same commit's layout, and only from a library
 * that says it is 24.7 (amdsmi_get_lib_version): that struct grows between
 * releases, so its offsets are pinned to the one version they were read
 * from (sizes and offsets computed with offsetof against that header).
 *
 * Every struct here is one the library fills through a caller's pointer,
 * so its size must be the library's; the static asserts at the end pin the
 * sizes we computed from the header, and the stand-in is built from these
 * declarations, so the two cannot drift apart silently.
 *
 * Units (from the header's comments and src/amd_smi/amd_smi.cc at the same
 * tag): activity in percent (0xFFFF: the metrics table did not fill it),
 * VRAM in MiB, socket power in W (0xFFFF: not available), power_limit as
 * hwmon's power1_cap (µW; see amdsmi_decode.h), temperature in °C (the
 * library divides hwmon's m°C by 1000), clocks in MHz, per-process memory in
 * bytes, engine time in ns.
 */
#ifndef KGS_AMDSMI_AMDSMI_ABI_H
#define KGS_AMDSMI_AMDSMI_ABI_H

#include <stdint.h>

typedef void *amdsmi_socket_handle;
typedef void *amdsmi_processor_handle;

/* amdsmi_init_flags_t */
#define AMDSMI_INIT_AMD_GPUS (1ull << 1)

/*
 * amdsmi_status_t. AMD declares it an enum whose last two values exceed
 * INT_MAX, which makes it a 32-bit unsigned type to the compilers ROCm
 * supports; ISO C11 allows no such enumerator, so the type is uint32_t here
 * (same size and register) and the values are named below.
 */
typedef uint32_t amdsmi_status_t;
enum {
    AMDSMI_STATUS_SUCCESS = 0,
    AMDSMI_STATUS_INVAL = 1,
    AMDSMI_STATUS_NOT_SUPPORTED = 2,
    AMDSMI_STATUS_NOT_YET_IMPLEMENTED = 3,
    AMDSMI_STATUS_FAIL_LOAD_MODULE = 4,
    AMDSMI_STATUS_FAIL_LOAD_SYMBOL = 5,
    AMDSMI_STATUS_DRM_ERROR = 6,
    AMDSMI_STATUS_API_FAILED = 7,
    AMDSMI_STATUS_TIMEOUT = 8,
    AMDSMI_STATUS_RETRY = 9,
    AMDSMI_STATUS_NO_PERM = 10,
    AMDSMI_STATUS_INTERRUPT = 11,
    AMDSMI_STATUS_IO = 12,
    AMDSMI_STATUS_ADDRESS_FAULT = 13,
    AMDSMI_STATUS_FILE_ERROR = 14,
    AMDSMI_STATUS_OUT_OF_RESOURCES = 15,
    AMDSMI_STATUS_INTERNAL_EXCEPTION = 16,
    AMDSMI_STATUS_INPUT_OUT_OF_BOUNDS = 17,
    AMDSMI_STATUS_INIT_ERROR = 18,
    AMDSMI_STATUS_REFCOUNT_OVERFLOW = 19,
    AMDSMI_STATUS_BUSY = 30,
    AMDSMI_STATUS_NOT_FOUND = 31,
    AMDSMI_STATUS_NOT_INIT = 32,
    AMDSMI_STATUS_NO_SLOT = 33,
    AMDSMI_STATUS_DRIVER_NOT_LOADED = 34,
    AMDSMI_STATUS_NO_DATA = 40,
    AMDSMI_STATUS_INSUFFICIENT_SIZE = 41,
    AMDSMI_STATUS_UNEXPECTED_SIZE = 42,
    AMDSMI_STATUS_UNEXPECTED_DATA = 43,
    AMDSMI_STATUS_FILE_NOT_FOUND = 52,
    AMDSMI_STATUS_ARG_PTR_NULL = 53,
    AMDSMI_STATUS_AMDGPU_RESTART_ERR = 54,
    AMDSMI_STATUS_SETTING_UNAVAILABLE = 55,
};
#define AMDSMI_STATUS_MAP_ERROR 0xFFFFFFFEu
#define AMDSMI_STATUS_UNKNOWN_ERROR 0xFFFFFFFFu

/* amdsmi_temperature_type_t, amdsmi_temperature_metric_t, amdsmi_clk_type_t */
#define AMDSMI_TEMPERATURE_TYPE_EDGE 0
#define AMDSMI_TEMPERATURE_TYPE_HOTSPOT 1 /* = JUNCTION */
#define AMDSMI_TEMP_CURRENT 0
#define AMDSMI_CLK_TYPE_GFX 0

#define AMDSMI_GPU_UUID_SIZE 38
#define AMDSMI_256_LENGTH 256
#define AMDSMI_MAX_STRING_LENGTH 64
#define AMDSMI_NORMAL_STRING_LENGTH 32

typedef union {
    struct {
        uint64_t function_number : 3;
        uint64_t device_number : 5;
        uint64_t bus_number : 8;
        uint64_t domain_number : 48;
    } fields; /* anonymous in AMD's header; named here for C11 -Wpedantic */
    uint64_t as_uint;
} amdsmi_bdf_t;

typedef struct {
    uint32_t gfx_activity;
    uint32_t umc_activity;
    uint32_t mm_activity;
    uint32_t reserved[13];
} amdsmi_engine_usage_t;

typedef struct {
    uint32_t vram_total; /* MiB */
    uint32_t vram_used;  /* MiB */
    uint32_t reserved[2];
} amdsmi_vram_usage_t;

typedef struct {
    uint32_t current_socket_power; /* W; 0xFFFF n/a */
    uint32_t average_socket_power; /* W; 0xFFFF n/a */
    uint32_t gfx_voltage;
    uint32_t soc_voltage;
    uint32_t mem_voltage;
    uint32_t power_limit; /* hwmon power1_cap as read: µW; 0xFFFF n/a */
    uint32_t reserved[11];
} amdsmi_power_info_t;

typedef struct {
    uint32_t clk; /* MHz */
    uint32_t min_clk;
    uint32_t max_clk;
    uint8_t clk_locked;
    uint8_t clk_deep_sleep;
    uint32_t reserved[4];
} amdsmi_clk_info_t;

typedef struct {
    char market_name[AMDSMI_256_LENGTH];
    uint32_t vendor_id;
    char vendor_name[AMDSMI_MAX_STRING_LENGTH];
    uint32_t subvendor_id;
    uint64_t device_id;
    uint32_t rev_id;
    char asic_serial[AMDSMI_NORMAL_STRING_LENGTH];
    uint32_t oam_id;
    uint32_t reserved[18];
} amdsmi_asic_info_t;

typedef struct {
    char driver_version[AMDSMI_MAX_STRING_LENGTH];
    char driver_date[AMDSMI_MAX_STRING_LENGTH];
    char driver_name[AMDSMI_MAX_STRING_LENGTH];
} amdsmi_driver_info_t;

/* amd-staging 0ceca28 (library 24.7); absent before. */
typedef struct {
    uint64_t kfd_id;
    uint32_t node_id;
    uint32_t current_partition_id; /* 0xFFFFFFFF: not supported */
    uint32_t reserved[12];
} amdsmi_kfd_info_t;

typedef struct {
    uint32_t year; /* last two digits: 24 */
    uint32_t major;
    uint32_t minor;
    uint32_t release;
    const char *build;
} amdsmi_version_t;

#define AMDSMI_MAX_NUM_XCC 8
#define AMDSMI_MAX_NUM_XCP 8
#define AMDSMI_MAX_NUM_JPEG 32
#define AMDSMI_MAX_NUM_VCN 4

/* struct amdsmi_gpu_xcp_metrics_t (24.7): one partition's engines. */
typedef struct {
    uint32_t gfx_busy_inst[AMDSMI_MAX_NUM_XCC]; /* % per XCC; UINT32_MAX: not filled */
    uint16_t jpeg_busy[AMDSMI_MAX_NUM_JPEG];
    uint16_t vcn_busy[AMDSMI_MAX_NUM_VCN];
    uint64_t gfx_busy_acc[AMDSMI_MAX_NUM_XCC];
} amdsmi_gpu_xcp_metrics_t;

/* amdsmi_gpu_metrics_t of library 24.7, handled as bytes: its size and the
 * offsets of num_partition (uint16_t) and xcp_stats[AMDSMI_MAX_NUM_XCP]. */
#define AMDSMI_GPU_METRICS_24_7_SIZE 1832
#define AMDSMI_GPU_METRICS_24_7_NUM_PARTITION_OFFSET 472
#define AMDSMI_GPU_METRICS_24_7_XCP_STATS_OFFSET 480

typedef uint32_t amdsmi_process_handle_t;

typedef struct {
    char name[AMDSMI_NORMAL_STRING_LENGTH];
    amdsmi_process_handle_t pid;
    uint64_t mem; /* bytes */
    struct {
        uint64_t gfx; /* ns */
        uint64_t enc;
        uint32_t reserved[12];
    } engine_usage;
    struct {
        uint64_t gtt_mem;
        uint64_t cpu_mem;
        uint64_t vram_mem; /* bytes */
        uint32_t reserved[10];
    } memory_usage;
    char container_name[AMDSMI_NORMAL_STRING_LENGTH];
    uint32_t reserved[4];
} amdsmi_proc_info_t;

/*
 * X(name, required, params): every symbol the backend binds, each on its
 * own. `required` 1: without it nothing can be enumerated, so the loader
 * refuses the library and names the symbol. Every other missing symbol
 * leaves its fields unknown.
 */
#define AMDSMI_SYMBOLS(X)                                                                          \
    X(amdsmi_init, 1, (uint64_t init_flags))                                                       \
    X(amdsmi_shut_down, 1, (void))                                                                 \
    X(amdsmi_get_socket_handles, 1, (uint32_t * socket_count, amdsmi_socket_handle * handles))     \
    X(amdsmi_get_processor_handles, 1,                                                             \
      (amdsmi_socket_handle socket, uint32_t * processor_count,                                    \
       amdsmi_processor_handle * processor_handles))                                               \
    X(amdsmi_get_gpu_device_bdf, 0, (amdsmi_processor_handle h, amdsmi_bdf_t * bdf))               \
    X(amdsmi_get_gpu_device_uuid, 0,                                                               \
      (amdsmi_processor_handle h, unsigned int *uuid_length, char *uuid))                          \
    X(amdsmi_get_gpu_asic_info, 0, (amdsmi_processor_handle h, amdsmi_asic_info_t * info))         \
    X(amdsmi_get_gpu_driver_info, 0, (amdsmi_processor_handle h, amdsmi_driver_info_t * info))     \
    X(amdsmi_get_gpu_activity, 0, (amdsmi_processor_handle h, amdsmi_engine_usage_t * info))       \
    X(amdsmi_get_gpu_vram_usage, 0, (amdsmi_processor_handle h, amdsmi_vram_usage_t * info))       \
    X(amdsmi_get_power_info, 0, (amdsmi_processor_handle h, amdsmi_power_info_t * info))           \
    X(amdsmi_get_temp_metric, 0,                                                                   \
      (amdsmi_processor_handle h, int sensor_type, int metric, int64_t *temperature))              \
    X(amdsmi_get_clock_info, 0,                                                                    \
      (amdsmi_processor_handle h, int clk_type, amdsmi_clk_info_t *info))                          \
    X(amdsmi_get_gpu_process_list, 0,                                                              \
      (amdsmi_processor_handle h, uint32_t * max_processes, amdsmi_proc_info_t * list))            \
    X(amdsmi_get_gpu_compute_partition, 0,                                                         \
      (amdsmi_processor_handle h, char *compute_partition, uint32_t len))                          \
    X(amdsmi_get_gpu_memory_partition, 0,                                                          \
      (amdsmi_processor_handle h, char *memory_partition, uint32_t len))                           \
    X(amdsmi_get_gpu_kfd_info, 0, (amdsmi_processor_handle h, amdsmi_kfd_info_t * info))           \
    X(amdsmi_get_lib_version, 0, (amdsmi_version_t * version))                                     \
    X(amdsmi_get_gpu_metrics_info, 0, (amdsmi_processor_handle h, void *metrics))

/* Sizes computed from the rocm-6.2.2 header on LP64 (x86-64, aarch64). */
_Static_assert(sizeof(amdsmi_bdf_t) == 8, "amdsmi_bdf_t");
_Static_assert(sizeof(amdsmi_engine_usage_t) == 64, "amdsmi_engine_usage_t");
_Static_assert(sizeof(amdsmi_vram_usage_t) == 16, "amdsmi_vram_usage_t");
_Static_assert(sizeof(amdsmi_power_info_t) == 68, "amdsmi_power_info_t");
_Static_assert(sizeof(amdsmi_clk_info_t) == 32, "amdsmi_clk_info_t");
_Static_assert(sizeof(amdsmi_driver_info_t) == 192, "amdsmi_driver_info_t");
_Static_assert(sizeof(amdsmi_asic_info_t) == 448, "amdsmi_asic_info_t");
_Static_assert(sizeof(amdsmi_proc_info_t) == 224, "amdsmi_proc_info_t");
_Static_assert(sizeof(amdsmi_kfd_info_t) == 64, "amdsmi_kfd_info_t");
_Static_assert(sizeof(amdsmi_gpu_xcp_metrics_t) == 168, "amdsmi_gpu_xcp_metrics_t");
_Static_assert(AMDSMI_GPU_METRICS_24_7_XCP_STATS_OFFSET +
                       AMDSMI_MAX_NUM_XCP * sizeof(amdsmi_gpu_xcp_metrics_t) <=
                   AMDSMI_GPU_METRICS_24_7_SIZE,
               "xcp_stats inside amdsmi_gpu_metrics_t");

#endif
