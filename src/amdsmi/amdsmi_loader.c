/* amdsmi_loader.c - dlopen of amd-smi and per-symbol binding. */
#include "amdsmi/amdsmi_loader.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"

struct amdsmi_loader {
    void *dl;
    char path[4096];
    amdsmi_api_t api;
};

/* See nvml/loader.c: dlsym's void * reaches a function pointer by memcpy. */
static void bind_symbol(void *dl, const char *name, void *slot, size_t slot_size) {
    void *sym = dlsym(dl, name);
    memcpy(slot, &sym, slot_size);
}

int amdsmi_loader_open(const char *path, amdsmi_loader_t **out, char *err, size_t errlen) {
    static const char *const names[] = AMDSMI_LIBRARY_NAMES;
    amdsmi_loader_t *l = calloc(1, sizeof *l);
    if (!l)
        return kgs_seterr(err, errlen, KGS_ENOMEM, "load amd-smi: out of memory");
    char why[1024] = "";
    size_t used = 0;
    size_t tries = path ? 1 : sizeof names / sizeof names[0];
    for (size_t i = 0; i < tries && !l->dl; i++) {
        const char *lib = path ? path : names[i];
        /* RTLD_LOCAL: amd-smi's symbols stay out of the global namespace. */
        l->dl = dlopen(lib, RTLD_LAZY | RTLD_LOCAL);
        if (l->dl) {
            snprintf(l->path, sizeof l->path, "%s", lib);
        } else if (used < sizeof why) {
            const char *e = dlerror();
            int w = snprintf(why + used, sizeof why - used, "%s%s", used ? "; " : "", e ? e : lib);
            used += w > 0 ? (size_t)w : 0;
        }
    }
    if (!l->dl) {
        free(l);
        return kgs_seterr(err, errlen, KGS_ENOTFOUND, "load amd-smi: %s", why);
    }
#define AMDSMI_BIND(name, required, params)                                                        \
    bind_symbol(l->dl, #name, &l->api.name, sizeof l->api.name);
    AMDSMI_SYMBOLS(AMDSMI_BIND)
#undef AMDSMI_BIND
    const char *missing = NULL;
#define AMDSMI_REQUIRED(name, required, params)                                                    \
    if (required && !l->api.name && !missing)                                                      \
        missing = #name;
    AMDSMI_SYMBOLS(AMDSMI_REQUIRED)
#undef AMDSMI_REQUIRED
    if (missing) {
        kgs_seterr(err, errlen, KGS_ENVML, "load amd-smi %s: required symbol %s is missing",
                   l->path, missing);
        dlclose(l->dl);
        free(l);
        return KGS_ENVML;
    }
    *out = l;
    return 0;
}

const amdsmi_api_t *amdsmi_loader_api(const amdsmi_loader_t *l) {
    return &l->api;
}

const char *amdsmi_loader_path(const amdsmi_loader_t *l) {
    return l->path;
}

int amdsmi_loader_missing(const amdsmi_loader_t *l, char *buf, size_t buflen) {
    int n = 0;
    size_t used = 0;
    if (buflen)
        buf[0] = '\0';
#define AMDSMI_MISSING(name, required, params)                                                     \
    if (!l->api.name) {                                                                            \
        if (used < buflen) {                                                                       \
            int w = snprintf(buf + used, buflen - used, "%s%s", n ? ", " : "", #name);             \
            used += w > 0 ? (size_t)w : 0;                                                         \
        }                                                                                          \
        n++;                                                                                       \
    }
    AMDSMI_SYMBOLS(AMDSMI_MISSING)
#undef AMDSMI_MISSING
    return n;
}

void amdsmi_loader_free(amdsmi_loader_t *l) {
    if (!l)
        return;
    if (l->dl)
        dlclose(l->dl);
    free(l);
}
