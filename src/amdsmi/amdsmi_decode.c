/* amdsmi_decode.c - see amdsmi_decode.h. */
#include "amdsmi/amdsmi_decode.h"

#include <stdio.h>
#include <string.h>

#include "amdsmi/amdsmi_abi.h"
#include "core/err.h"

enum {
    NV_SUCCESS = 0,
    NV_UNINITIALIZED = 1,
    NV_NOT_SUPPORTED = 3,
    NV_NO_PERMISSION = 4,
    NV_INSUFFICIENT_SIZE = 7,
    NV_DRIVER_NOT_LOADED = 9,
    NV_TIMEOUT = 10,
    NV_GPU_IS_LOST = 15,
    NV_UNKNOWN = 999,
};

int amdsmi_status_to_nvml_code(uint32_t status) {
    switch (status) {
    case AMDSMI_STATUS_SUCCESS:
        return NV_SUCCESS;
    case AMDSMI_STATUS_NOT_SUPPORTED:
    case AMDSMI_STATUS_NOT_YET_IMPLEMENTED:
    case AMDSMI_STATUS_NO_DATA:
    case AMDSMI_STATUS_FILE_NOT_FOUND:
    case AMDSMI_STATUS_SETTING_UNAVAILABLE:
        return NV_NOT_SUPPORTED;
    case AMDSMI_STATUS_NO_PERM:
        return NV_NO_PERMISSION;
    case AMDSMI_STATUS_NOT_FOUND:
    case AMDSMI_STATUS_AMDGPU_RESTART_ERR:
        return NV_GPU_IS_LOST;
    case AMDSMI_STATUS_TIMEOUT:
        return NV_TIMEOUT;
    case AMDSMI_STATUS_DRIVER_NOT_LOADED:
        return NV_DRIVER_NOT_LOADED;
    case AMDSMI_STATUS_NOT_INIT:
    case AMDSMI_STATUS_INIT_ERROR:
        return NV_UNINITIALIZED;
    case AMDSMI_STATUS_INSUFFICIENT_SIZE:
    case AMDSMI_STATUS_OUT_OF_RESOURCES:
        return NV_INSUFFICIENT_SIZE;
    default:
        return NV_UNKNOWN;
    }
}

#define STATUS_NAMES(X)                                                                            \
    X(SUCCESS)                                                                                     \
    X(INVAL)                                                                                       \
    X(NOT_SUPPORTED)                                                                               \
    X(NOT_YET_IMPLEMENTED)                                                                         \
    X(FAIL_LOAD_MODULE)                                                                            \
    X(FAIL_LOAD_SYMBOL)                                                                            \
    X(DRM_ERROR)                                                                                   \
    X(API_FAILED)                                                                                  \
    X(TIMEOUT)                                                                                     \
    X(RETRY)                                                                                       \
    X(NO_PERM)                                                                                     \
    X(INTERRUPT)                                                                                   \
    X(IO)                                                                                          \
    X(ADDRESS_FAULT)                                                                               \
    X(FILE_ERROR)                                                                                  \
    X(OUT_OF_RESOURCES)                                                                            \
    X(INTERNAL_EXCEPTION)                                                                          \
    X(INPUT_OUT_OF_BOUNDS)                                                                         \
    X(INIT_ERROR)                                                                                  \
    X(REFCOUNT_OVERFLOW)                                                                           \
    X(BUSY)                                                                                        \
    X(NOT_FOUND)                                                                                   \
    X(NOT_INIT)                                                                                    \
    X(NO_SLOT)                                                                                     \
    X(DRIVER_NOT_LOADED)                                                                           \
    X(NO_DATA)                                                                                     \
    X(INSUFFICIENT_SIZE)                                                                           \
    X(UNEXPECTED_SIZE)                                                                             \
    X(UNEXPECTED_DATA)                                                                             \
    X(FILE_NOT_FOUND)                                                                              \
    X(ARG_PTR_NULL)                                                                                \
    X(AMDGPU_RESTART_ERR)                                                                          \
    X(SETTING_UNAVAILABLE)                                                                         \
    X(MAP_ERROR)                                                                                   \
    X(UNKNOWN_ERROR)

const char *amdsmi_status_name(uint32_t status) {
    switch (status) {
#define STATUS_CASE(n)                                                                             \
    case AMDSMI_STATUS_##n:                                                                        \
        return #n;
        STATUS_NAMES(STATUS_CASE)
#undef STATUS_CASE
    default:
        return "UNKNOWN_CODE";
    }
}

void amdsmi_bdf_format(uint64_t as_uint, char out[AMDSMI_BDF_MAX]) {
    unsigned function = (unsigned)(as_uint & 0x7u);
    unsigned device = (unsigned)((as_uint >> 3) & 0x1fu);
    unsigned bus = (unsigned)((as_uint >> 8) & 0xffu);
    unsigned long long domain = (unsigned long long)(as_uint >> 16);
    snprintf(out, AMDSMI_BDF_MAX, "%04llx:%02x:%02x.%x", domain, bus, device, function);
}

/* Compares text (len bytes, trailing blanks ignored) with a lower-case
 * name, case-insensitively. */
static bool text_is(const char *text, size_t len, const char *name) {
    while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == ' ' || text[len - 1] == '\t' ||
                       text[len - 1] == '\0'))
        len--;
    size_t n = strlen(name);
    if (len != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = text[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != name[i])
            return false;
    }
    return true;
}

static const char *const cp_names[] = {"", "spx", "dpx", "tpx", "qpx", "cpx"};
static const char *const mp_names[] = {"", "nps1", "nps2", "nps4", "nps8"};

int amdsmi_compute_partition_parse(const char *text, size_t len, amdsmi_compute_partition_t *out) {
    *out = AMDSMI_CP_UNKNOWN;
    for (size_t i = 1; text && i < sizeof cp_names / sizeof cp_names[0]; i++)
        if (text_is(text, len, cp_names[i])) {
            *out = (amdsmi_compute_partition_t)i;
            return 0;
        }
    return KGS_EINVAL;
}

int amdsmi_memory_partition_parse(const char *text, size_t len, amdsmi_memory_partition_t *out) {
    *out = AMDSMI_NPS_UNKNOWN;
    for (size_t i = 1; text && i < sizeof mp_names / sizeof mp_names[0]; i++)
        if (text_is(text, len, mp_names[i])) {
            *out = (amdsmi_memory_partition_t)i;
            return 0;
        }
    return KGS_EINVAL;
}

const char *amdsmi_compute_partition_name(amdsmi_compute_partition_t p) {
    return (unsigned)p < sizeof cp_names / sizeof cp_names[0] ? cp_names[p] : "";
}

const char *amdsmi_memory_partition_name(amdsmi_memory_partition_t p) {
    return (unsigned)p < sizeof mp_names / sizeof mp_names[0] ? mp_names[p] : "";
}

void amdsmi_partition_profile(amdsmi_compute_partition_t cp, amdsmi_memory_partition_t mp,
                              char *out, size_t outlen) {
    const char *c = amdsmi_compute_partition_name(cp), *m = amdsmi_memory_partition_name(mp);
    if (!*c)
        snprintf(out, outlen, "%s", "");
    else if (!*m)
        snprintf(out, outlen, "%s", c);
    else
        snprintf(out, outlen, "%s_%s", c, m);
}

bool amdsmi_percent(uint32_t raw, unsigned *pct) {
    if (raw > 100)
        return false;
    *pct = raw;
    return true;
}

bool amdsmi_power_w(uint32_t raw, double *watts) {
    if (raw == 0xFFFFu || raw == 0xFFFFFFFFu)
        return false;
    *watts = (double)raw;
    return true;
}

bool amdsmi_power_limit_w(uint32_t raw, double *watts) {
    if (raw == 0 || raw == 0xFFFFu || raw == 0xFFFFFFFFu)
        return false;
    *watts = raw < 100000u ? (double)raw : (double)raw / 1e6;
    return true;
}

bool amdsmi_xcp_busy(uint32_t year, uint32_t major, const void *table, size_t len, uint32_t xcp,
                     unsigned *pct) {
    if (year != 24 || major != 7 || !table || len < AMDSMI_GPU_METRICS_24_7_SIZE ||
        xcp >= AMDSMI_MAX_NUM_XCP)
        return false;
    const unsigned char *t = table;
    uint16_t nparts;
    memcpy(&nparts, t + AMDSMI_GPU_METRICS_24_7_NUM_PARTITION_OFFSET, sizeof nparts);
    if (xcp >= nparts)
        return false;
    amdsmi_gpu_xcp_metrics_t x;
    memcpy(&x, t + AMDSMI_GPU_METRICS_24_7_XCP_STATS_OFFSET + xcp * sizeof x, sizeof x);
    unsigned sum = 0, n = 0;
    for (unsigned i = 0; i < AMDSMI_MAX_NUM_XCC; i++) {
        uint32_t v = x.gfx_busy_inst[i];
        if (v == UINT32_MAX || v == 0xFFFFu)
            continue; /* not filled: this partition has fewer XCCs */
        if (v > 100)
            return false;
        sum += v;
        n++;
    }
    if (n == 0)
        return false;
    *pct = (sum + n / 2) / n;
    return true;
}

bool amdsmi_activity_is_own(amdsmi_compute_partition_t cp, bool partition_id_known,
                            uint32_t partition_id) {
    if (cp == AMDSMI_CP_SPX)
        return true;
    if (cp == AMDSMI_CP_UNKNOWN && !partition_id_known)
        return true; /* the library cannot partition this GPU: it is one device */
    return partition_id_known && partition_id == 0;
}
