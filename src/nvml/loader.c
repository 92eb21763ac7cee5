/*
 * loader.c - dlopen of NVML and per-symbol binding.
 *
 * Why every symbol on its own: drivers from 2016 to today export different
 * subsets (nvmlDeviceGetMemoryInfo_v2 since R510, GPM since R520,
 * nvmlDeviceGetTemperatureV since R565). Binding all we know and letting the
 * collector choose the newest bound variant keeps one binary working on all
 * of them, and the fields an old driver cannot give are reported absent.
 */
#include "nvml/loader.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"

struct nvml_loader {
    void *dl;
    char path[4096];
    nvml_api_t api;
};

/* dlsym() returns void *; converting it to a function pointer is what POSIX
 * requires to work, but ISO C does not define it, so go through memcpy. */
static void bind_symbol(void *dl, const char *name, void *slot, size_t slot_size) {
    void *sym = dlsym(dl, name);
    memcpy(slot, &sym, slot_size);
}

int nvml_loader_open(const char *path, nvml_loader_t **out, char *err, size_t errlen) {
    const char *lib = path ? path : NVML_DEFAULT_LIBRARY;
    nvml_loader_t *l = calloc(1, sizeof *l);
    if (!l)
        return kgs_seterr(err, errlen, KGS_ENOMEM, "load NVML: out of memory");
    snprintf(l->path, sizeof l->path, "%s", lib);

    /* RTLD_LOCAL: NVML's symbols must not leak into the global namespace. */
    l->dl = dlopen(lib, RTLD_LAZY | RTLD_LOCAL);
    if (!l->dl) {
        const char *why = dlerror();
        kgs_seterr(err, errlen, KGS_ENOTFOUND, "load NVML %s: %s", lib, why ? why : "unknown");
        free(l);
        return KGS_ENOTFOUND;
    }

#define NVML_BIND(name, params) bind_symbol(l->dl, #name, &l->api.name, sizeof l->api.name);
    NVML_SYMBOLS(NVML_BIND)
#undef NVML_BIND
    bind_symbol(l->dl, "nvmlErrorString", &l->api.nvmlErrorString, sizeof l->api.nvmlErrorString);

    const nvml_api_t *a = &l->api;
    const char *missing = NULL;
    if (!a->nvmlInitWithFlags && !a->nvmlInit_v2 && !a->nvmlInit)
        missing = "nvmlInit_v2 (or nvmlInitWithFlags, nvmlInit)";
    else if (!a->nvmlShutdown)
        missing = "nvmlShutdown";
    else if (!a->nvmlDeviceGetCount_v2 && !a->nvmlDeviceGetCount)
        missing = "nvmlDeviceGetCount_v2 (or nvmlDeviceGetCount)";
    else if (!a->nvmlDeviceGetHandleByIndex_v2 && !a->nvmlDeviceGetHandleByIndex)
        missing = "nvmlDeviceGetHandleByIndex_v2 (or nvmlDeviceGetHandleByIndex)";
    if (missing) {
        kgs_seterr(err, errlen, KGS_ENVML, "load NVML %s: required symbol %s is missing", lib,
                   missing);
        dlclose(l->dl);
        free(l);
        return KGS_ENVML;
    }
    *out = l;
    return 0;
}

const nvml_api_t *nvml_loader_api(const nvml_loader_t *l) {
    return &l->api;
}

const char *nvml_loader_path(const nvml_loader_t *l) {
    return l->path;
}

int nvml_loader_missing(const nvml_loader_t *l, char *buf, size_t buflen) {
    int n = 0;
    size_t used = 0;
    if (buflen)
        buf[0] = '\0';
#define NVML_MISSING(name, params)                                                                 \
    if (!l->api.name) {                                                                            \
        if (used < buflen) {                                                                       \
            int w = snprintf(buf + used, buflen - used, "%s%s", n ? ", " : "", #name);             \
            used += w > 0 ? (size_t)w : 0;                                                         \
        }                                                                                          \
        n++;                                                                                       \
    }
    NVML_SYMBOLS(NVML_MISSING)
#undef NVML_MISSING
    return n;
}

void nvml_loader_free(nvml_loader_t *l) {
    if (!l)
        return;
    if (l->dl)
        dlclose(l->dl);
    free(l);
}
