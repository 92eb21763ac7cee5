/*
 * amdsmi_loader.h - amd-smi (libamd_smi.so) by dlopen: a table of function
 * pointers, one per symbol of AMDSMI_SYMBOLS, each bound on its own.
 *
 * A missing optional symbol leaves its pointer NULL and the backend reports
 * the fields it would give as unknown; a missing required one (init, shut
 * down, socket and processor handles) refuses the library with a message
 * naming it. As src/nvml/loader.h, and for the same reason: one binary on
 * every ROCm release.
 */
#ifndef KGS_AMDSMI_AMDSMI_LOADER_H
#define KGS_AMDSMI_AMDSMI_LOADER_H

#include <stddef.h>

#include "amdsmi/amdsmi_abi.h"

typedef struct {
#define AMDSMI_API_FIELD(name, required, params) amdsmi_status_t(*name) params;
    AMDSMI_SYMBOLS(AMDSMI_API_FIELD)
#undef AMDSMI_API_FIELD
} amdsmi_api_t;

typedef struct amdsmi_loader amdsmi_loader_t;

/*
 * The names tried, in order, when no path is given: the development link
 * (present where ROCm's -dev package or a container image ships it), then
 * the runtime soname. libamd_smi.so.24 is what ROCm 6.1 to 6.4 install
 * (SOVERSION is the package's major version, 24.x; ROCm/amdsmi
 * CMakeLists.txt at rocm-6.2.2). ROCm 6.0's .so.23 is not tried: its
 * amdsmi_get_gpu_process_list has another signature (a list of pids).
 */
#define AMDSMI_LIBRARY_NAMES                                                                       \
    { "libamd_smi.so", "libamd_smi.so.24" }

/*
 * dlopen()s `path`, or with NULL the names of AMDSMI_LIBRARY_NAMES in order,
 * and binds every symbol. Returns 0 and *out (returned: free with
 * amdsmi_loader_free), or:
 *   KGS_ENOTFOUND  no library could be loaded (message has each dlerror());
 *   KGS_ENVML      a required symbol is missing (message names it);
 *   KGS_ENOMEM.
 */
int amdsmi_loader_open(const char *path, amdsmi_loader_t **out, char *err, size_t errlen);

/* The bound table; borrowed, valid until amdsmi_loader_free(). */
const amdsmi_api_t *amdsmi_loader_api(const amdsmi_loader_t *l);

/* The name that was opened; borrowed. */
const char *amdsmi_loader_path(const amdsmi_loader_t *l);

/* Comma-separated list of the AMDSMI_SYMBOLS that are missing ("" when
 * none) into buf; returns how many. */
int amdsmi_loader_missing(const amdsmi_loader_t *l, char *buf, size_t buflen);

/* dlclose()s. NULL does nothing. The backend shuts amd-smi down first. */
void amdsmi_loader_free(amdsmi_loader_t *l);

#endif
