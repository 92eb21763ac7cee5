/*
 * loader.h - NVML by dlopen: a table of function pointers, one per symbol.
 *
 * Each symbol is resolved on its own. A missing symbol leaves its pointer
 * NULL and the collector treats the fields it would provide as absent; only
 * the handful of symbols without which nothing can be enumerated are
 * required. Tests build an nvml_api_t of fakes by hand and never dlopen.
 */
#ifndef KGS_NVML_LOADER_H
#define KGS_NVML_LOADER_H

#include <stddef.h>

#include "nvml/nvml_abi.h"

/* The bound API. Every pointer may be NULL (missing in this driver). */
typedef struct {
#define NVML_API_FIELD(name, params) nvmlReturn_t(*name) params;
    NVML_SYMBOLS(NVML_API_FIELD)
#undef NVML_API_FIELD
    const char *(*nvmlErrorString)(nvmlReturn_t result);
} nvml_api_t;

typedef struct nvml_loader nvml_loader_t;

#define NVML_DEFAULT_LIBRARY "libnvidia-ml.so.1"

/*
 * dlopen()s `path` (NULL: NVML_DEFAULT_LIBRARY through the usual search
 * path) and binds every symbol of NVML_SYMBOLS. Returns 0 and a loader in
 * *out (returned: free with nvml_loader_free), or:
 *   KGS_ENOTFOUND  the library could not be loaded (message has dlerror());
 *   KGS_ENVML      a required symbol is missing (message names it);
 *   KGS_ENOMEM.
 */
int nvml_loader_open(const char *path, nvml_loader_t **out, char *err, size_t errlen);

/* The bound table; borrowed, valid until nvml_loader_free(). */
const nvml_api_t *nvml_loader_api(const nvml_loader_t *l);

/* The path that was opened; borrowed. */
const char *nvml_loader_path(const nvml_loader_t *l);

/* Writes a comma-separated list of the NVML_SYMBOLS that are missing (or ""
 * when none) into buf. Returns the number missing. */
int nvml_loader_missing(const nvml_loader_t *l, char *buf, size_t buflen);

/* dlclose()s. NULL does nothing. The caller shuts NVML down first. */
void nvml_loader_free(nvml_loader_t *l);

#endif
