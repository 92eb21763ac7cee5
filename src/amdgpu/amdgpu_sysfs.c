/*
 * amdgpu_sysfs.c - the amdgpu sysfs and fdinfo reader (a GPU backend).
 *
 * DESIGN
 * A sweep lists the cards (<sys>/class/drm/cardN whose device/uevent says
 * DRIVER=amdgpu, in PCI-address order, as NVML numbers its GPUs), samples
 * each card from its sysfs files, then walks <proc>/PID/fd once for file
 * descriptors on /dev/dri and parses their fdinfo. All parsing is in
 * amdgpu_parse.c; this file only opens, reads and assembles.
 *
 * Units: the percent files are whole percent; VRAM in bytes; hwmon power in
 * microwatts, temperature in millidegrees Celsius, frequency in Hz
 * (Documentation/hwmon/sysfs-interface.rst). A read that fails leaves the
 * field unknown and records why in field_error with NVML's code names, so
 * every consumer already knows how to show it: ENOENT is NOT_SUPPORTED (the
 * ASIC has no such file), EACCES NO_PERMISSION, ENODEV GPU_IS_LOST (the
 * device left the bus; the card's health says so), anything else UNKNOWN.
 *
 * Per-process utilisation: drm-engine-<name> counts the nanoseconds the
 * engine was busy for a client since it opened the device, so a process's
 * share is the growth of gfx + compute time between two sweeps over the
 * wall time between them. amdgpu prints only engines with nonzero time
 * (amdgpu_fdinfo.c), so a missing engine line is 0 ns, not unknown. A count
 * that goes backwards keeps the larger previous value (drm-usage-stats.rst).
 */
#include "amdgpu/amdgpu_sysfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "amdgpu/amdgpu_parse.h"
#include "core/err.h"
#include "core/nvml_codes.h"

enum { CODE_NOT_SUPPORTED = 3, CODE_NO_PERMISSION = 4, CODE_GPU_IS_LOST = 15, CODE_UNKNOWN = 999 };

#define ROOT_MAX 512
#define CARD_PATH_MAX (ROOT_MAX + 64)
#define CLIENTS_PER_PROC 8

typedef struct {
    unsigned drm_minor;         /* N of cardN */
    char device[CARD_PATH_MAX]; /* <sys>/class/drm/cardN/device */
    char hwmon[CARD_PATH_MAX];  /* device/hwmon/hwmonM, "" when none */
    char bdf[AMDGPU_BDF_MAX];   /* from uevent PCI_SLOT_NAME, "" when absent */
} card_t;

/* One process's use of one card in this sweep. */
typedef struct {
    unsigned gpu;
    uint32_t pid;
    uint64_t vram_bytes;
    bool has_vram;
    uint64_t engine_ns;
    uint64_t clients[CLIENTS_PER_PROC];
    unsigned nclients;
} use_t;

struct amdgpu_sysfs {
    char sys_root[ROOT_MAX];
    char proc_root[ROOT_MAX];
    char node_name[256];
    const logger_t *log;
    uint64_t seq;
    bool wants_second;

    card_t cards[AMDGPU_SYSFS_MAX_GPUS];
    unsigned ncards;

    use_t *use; /* this sweep's */
    unsigned nuse, use_cap;
    use_t *prev; /* the previous sweep's, for engine-time rates */
    unsigned nprev, prev_cap;
    mono_ns_t prev_at; /* 0: no previous sweep */
    /* Which card (by PCI address) the previous sweep's gpu indexes meant. */
    char prev_bdf[AMDGPU_SYSFS_MAX_GPUS][AMDGPU_BDF_MAX];
    unsigned prev_ncards;
};

/* ---- file reading ---------------------------------------------------------- */

/* Reads up to cap-1 bytes of a small file (sysfs values, uevent, fdinfo).
 * Returns the length, or -errno. */
static ssize_t read_small(const char *path, char *buf, size_t cap) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t got = 0;
    while (got + 1 < cap) {
        ssize_t n = read(fd, buf + got, cap - 1 - got);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            close(fd);
            return -e;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    buf[got] = '\0';
    return (ssize_t)got;
}

static int16_t code_of_errno(int e) {
    switch (e) {
    case ENOENT:
        return CODE_NOT_SUPPORTED;
    case EACCES:
    case EPERM:
        return CODE_NO_PERMISSION;
    case ENODEV:
    case ENXIO:
        return CODE_GPU_IS_LOST;
    default:
        return CODE_UNKNOWN;
    }
}

/* Reads dir/name as a number; 0 and *out, or the NVML-style code of why
 * not (an unparsable value is UNKNOWN). */
static int16_t read_u64(const char *dir, const char *name, uint64_t *out) {
    char path[CARD_PATH_MAX + 64], buf[64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    ssize_t n = read_small(path, buf, sizeof buf);
    if (n < 0)
        return code_of_errno((int)-n);
    return amdgpu_parse_u64(buf, (size_t)n, out) == 0 ? 0 : CODE_UNKNOWN;
}

static int16_t read_i64(const char *dir, const char *name, int64_t *out) {
    char path[CARD_PATH_MAX + 64], buf[64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    ssize_t n = read_small(path, buf, sizeof buf);
    if (n < 0)
        return code_of_errno((int)-n);
    return amdgpu_parse_i64(buf, (size_t)n, out) == 0 ? 0 : CODE_UNKNOWN;
}

/* ---- lifecycle ------------------------------------------------------------- */

int amdgpu_sysfs_new(const amdgpu_sysfs_opts_t *opts, const logger_t *log, const char *node_name,
                     amdgpu_sysfs_t **out) {
    const char *sys = opts && opts->sys_root ? opts->sys_root : "/sys";
    const char *proc = opts && opts->proc_root ? opts->proc_root : "/proc";
    if (strlen(sys) >= ROOT_MAX || strlen(proc) >= ROOT_MAX)
        return KGS_EINVAL;
    amdgpu_sysfs_t *r = calloc(1, sizeof *r);
    if (!r)
        return KGS_ENOMEM;
    snprintf(r->sys_root, sizeof r->sys_root, "%s", sys);
    snprintf(r->proc_root, sizeof r->proc_root, "%s", proc);
    snprintf(r->node_name, sizeof r->node_name, "%s", node_name ? node_name : "");
    r->log = log;
    *out = r;
    return 0;
}

void amdgpu_sysfs_free(amdgpu_sysfs_t *r) {
    if (!r)
        return;
    free(r->use);
    free(r->prev);
    free(r);
}

/* ---- listing cards ----------------------------------------------------------- */

/* "card" followed by digits only (not the connectors "card0-DP-1"). */
static bool card_minor(const char *name, unsigned *minor) {
    if (strncmp(name, "card", 4) != 0 || !name[4])
        return false;
    unsigned v = 0;
    for (const char *p = name + 4; *p; p++) {
        if (*p < '0' || *p > '9' || v > 100000)
            return false;
        v = v * 10 + (unsigned)(*p - '0');
    }
    *minor = v;
    return true;
}

/* The first hwmonM folder under device/hwmon, or "". */
static void find_hwmon(const char *device, char *out, size_t outlen) {
    char path[CARD_PATH_MAX + 16];
    out[0] = '\0';
    snprintf(path, sizeof path, "%s/hwmon", device);
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "hwmon", 5) == 0 && e->d_name[5]) {
            snprintf(out, outlen, "%.*s/%.32s", (int)(outlen - 40), path, e->d_name);
            break;
        }
    }
    closedir(d);
}

static int card_cmp(const void *a, const void *b) {
    const card_t *x = a, *y = b;
    int c = strcmp(x->bdf, y->bdf);
    if (c)
        return c;
    return x->drm_minor < y->drm_minor ? -1 : x->drm_minor > y->drm_minor;
}

/* Fills cards[] (at most max) with the amdgpu cards under sys_root; returns
 * how many, or -errno when class/drm cannot be opened. */
static int list_cards(const char *sys_root, card_t *cards, unsigned max) {
    char path[ROOT_MAX + 16];
    snprintf(path, sizeof path, "%s/class/drm", sys_root);
    DIR *d = opendir(path);
    if (!d)
        return -errno;
    unsigned n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        unsigned minor;
        if (!card_minor(e->d_name, &minor))
            continue;
        card_t *c = &cards[n];
        memset(c, 0, sizeof *c);
        c->drm_minor = minor;
        snprintf(c->device, sizeof c->device, "%s/%.32s/device", path, e->d_name);
        char upath[CARD_PATH_MAX + 16], buf[1024];
        snprintf(upath, sizeof upath, "%s/uevent", c->device);
        ssize_t len = read_small(upath, buf, sizeof buf);
        if (len < 0 || !amdgpu_uevent_parse(buf, (size_t)len, c->bdf))
            continue;
        find_hwmon(c->device, c->hwmon, sizeof c->hwmon);
        n++;
    }
    closedir(d);
    qsort(cards, n, sizeof *cards, card_cmp);
    return (int)n;
}

unsigned amdgpu_sysfs_count_cards(const char *sys_root) {
    card_t *cards = calloc(AMDGPU_SYSFS_MAX_GPUS, sizeof *cards);
    if (!cards)
        return 0;
    int n = list_cards(sys_root ? sys_root : "/sys", cards, AMDGPU_SYSFS_MAX_GPUS);
    free(cards);
    return n > 0 ? (unsigned)n : 0;
}

/* ---- one device -------------------------------------------------------------- */

/* Records a field's outcome: value present, or absent with why. */
static void field_result(gpu_record_t *g, gpu_field_t f, int16_t code) {
    if (code == 0) {
        g->valid |= 1u << f;
        g->field_error[f] = 0;
    } else {
        g->field_error[f] = code;
        if (code == CODE_GPU_IS_LOST && g->health == GPU_HEALTH_OK) {
            g->health = GPU_HEALTH_LOST;
            g->health_nvml_code = CODE_GPU_IS_LOST;
        }
    }
}

/* A short text file (product_name, unique_id) into out, trimmed; "" when
 * absent or empty. */
static void read_text(const char *dir, const char *name, char *out, size_t outlen) {
    char path[CARD_PATH_MAX + 64], buf[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    out[0] = '\0';
    ssize_t n = read_small(path, buf, sizeof buf);
    if (n <= 0)
        return;
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ' || buf[n - 1] == '\t'))
        n--;
    snprintf(out, outlen, "%.*s", (int)n, buf);
}

/* device/gpu_metrics, parsed; false when absent or of a revision we do
 * not read. */
static bool read_gpu_metrics(const char *device, amdgpu_gpu_metrics_t *gm) {
    char path[CARD_PATH_MAX + 32];
    char buf[4096];
    snprintf(path, sizeof path, "%s/gpu_metrics", device);
    ssize_t n = read_small(path, buf, sizeof buf);
    return n > 0 && amdgpu_gpu_metrics_parse(buf, (size_t)n, gm) == 0;
}

static void sample_hwmon(const card_t *c, gpu_record_t *g) {
    uint64_t v;
    /* power1_average on older SMUs, power1_input on newer ones. */
    int16_t code = read_u64(c->hwmon, "power1_average", &v);
    if (code == CODE_NOT_SUPPORTED)
        code = read_u64(c->hwmon, "power1_input", &v);
    g->power_w = (double)v / 1e6;
    field_result(g, GPU_F_POWER, code);
    code = read_u64(c->hwmon, "power1_cap", &v);
    g->power_limit_w = (double)v / 1e6;
    field_result(g, GPU_F_POWER_LIMIT, code);
    /* temp1 is the edge sensor; MI200/MI300 have none and show junction as
     * temp2. */
    int64_t mc;
    code = read_i64(c->hwmon, "temp1_input", &mc);
    if (code == CODE_NOT_SUPPORTED)
        code = read_i64(c->hwmon, "temp2_input", &mc);
    g->temperature_c = (int)(mc / 1000);
    field_result(g, GPU_F_TEMPERATURE, code);
    code = read_u64(c->hwmon, "freq1_input", &v);
    g->sm_clock_mhz = (unsigned)(v / 1000000u);
    field_result(g, GPU_F_SM_CLOCK, code);
}

static void sample_card(const card_t *c, unsigned index, gpu_record_t *g) {
    memset(g, 0, sizeof *g);
    g->index = index;
    g->vendor = GPU_VENDOR_AMD;
    snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "%s", c->bdf);
    read_text(c->device, "product_name", g->name, sizeof g->name);
    read_text(c->device, "unique_id", g->uuid, sizeof g->uuid);

    uint64_t v;
    int16_t code = read_u64(c->device, "gpu_busy_percent", &v);
    if (code == 0 && v > 100)
        code = CODE_UNKNOWN;
    g->gpu_util_pct = (unsigned)v;
    field_result(g, GPU_F_GPU_UTIL, code);
    code = read_u64(c->device, "mem_busy_percent", &v);
    if (code == 0 && v > 100)
        code = CODE_UNKNOWN;
    g->mem_util_pct = (unsigned)v;
    field_result(g, GPU_F_MEM_UTIL, code);
    field_result(g, GPU_F_MEM_USED,
                 read_u64(c->device, "mem_info_vram_used", &g->memory_used_bytes));
    field_result(g, GPU_F_MEM_TOTAL,
                 read_u64(c->device, "mem_info_vram_total", &g->memory_total_bytes));

    /* NVML-only fields: say "not supported" so they show as null, not as an
     * error. */
    static const gpu_field_t nvidia_only[] = {
        GPU_F_MEM_RESERVED, GPU_F_PCIE_TX,      GPU_F_PCIE_RX,
        GPU_F_NVLINK_TX,    GPU_F_NVLINK_RX,    GPU_F_SM_ACTIVE,
        GPU_F_SM_OCCUPANCY, GPU_F_DRAM_BW_UTIL, GPU_F_CLOCK_EVENT_REASONS,
    };
    for (size_t i = 0; i < sizeof nvidia_only / sizeof nvidia_only[0]; i++)
        g->field_error[nvidia_only[i]] = CODE_NOT_SUPPORTED;

    if (c->hwmon[0]) {
        sample_hwmon(c, g);
    } else {
        field_result(g, GPU_F_POWER, CODE_NOT_SUPPORTED);
        field_result(g, GPU_F_POWER_LIMIT, CODE_NOT_SUPPORTED);
        field_result(g, GPU_F_TEMPERATURE, CODE_NOT_SUPPORTED);
        field_result(g, GPU_F_SM_CLOCK, CODE_NOT_SUPPORTED);
    }

    /* The binary metrics table: the energy counter (v1_4+), and power and
     * the hotspot temperature where hwmon has none. */
    amdgpu_gpu_metrics_t gm;
    bool have_gm = read_gpu_metrics(c->device, &gm);
    if (have_gm && gm.has_energy) {
        g->energy_mj = gm.energy_mj;
        field_result(g, GPU_F_ENERGY, 0);
    } else {
        g->field_error[GPU_F_ENERGY] = CODE_NOT_SUPPORTED;
    }
    if (have_gm && !gpu_has(g, GPU_F_POWER) && gm.has_socket_power) {
        g->power_w = gm.socket_power_w;
        field_result(g, GPU_F_POWER, 0);
    }
    if (have_gm && !gpu_has(g, GPU_F_TEMPERATURE) && gm.has_hotspot) {
        g->temperature_c = (int)gm.hotspot_c;
        field_result(g, GPU_F_TEMPERATURE, 0);
    }
}

/* ---- processes ----------------------------------------------------------------- */

static use_t *use_slot(amdgpu_sysfs_t *r, unsigned gpu, uint32_t pid) {
    for (unsigned i = r->nuse; i-- > 0;)
        if (r->use[i].gpu == gpu && r->use[i].pid == pid)
            return &r->use[i];
    if (r->nuse == r->use_cap) {
        unsigned cap = r->use_cap ? r->use_cap * 2 : 64;
        if (cap > AMDGPU_SYSFS_MAX_GPUS * AMDGPU_SYSFS_MAX_PROCS_PER_GPU * 2u)
            return NULL;
        use_t *p = realloc(r->use, cap * sizeof *p);
        if (!p)
            return NULL;
        r->use = p;
        r->use_cap = cap;
    }
    use_t *u = &r->use[r->nuse++];
    memset(u, 0, sizeof *u);
    u->gpu = gpu;
    u->pid = pid;
    return u;
}

static int card_by_bdf(const amdgpu_sysfs_t *r, const char *bdf) {
    for (unsigned i = 0; i < r->ncards; i++)
        if (strcmp(r->cards[i].bdf, bdf) == 0)
            return (int)i;
    return -1;
}

/* Adds one fdinfo's numbers to its process's use of its card, once per
 * DRM client (dup()ed descriptors share one client id). */
static void add_fdinfo(amdgpu_sysfs_t *r, uint32_t pid, const amdgpu_fdinfo_t *fi) {
    if (strcmp(fi->driver, "amdgpu") != 0 || !fi->has_pdev)
        return;
    int gpu = card_by_bdf(r, fi->pdev);
    if (gpu < 0)
        return;
    use_t *u = use_slot(r, (unsigned)gpu, pid);
    if (!u)
        return;
    if (fi->has_client_id) {
        for (unsigned i = 0; i < u->nclients; i++)
            if (u->clients[i] == fi->client_id)
                return;
        if (u->nclients < CLIENTS_PER_PROC)
            u->clients[u->nclients++] = fi->client_id;
    }
    if (fi->has_vram) {
        u->has_vram = true;
        u->vram_bytes += fi->vram_bytes;
    }
    u->engine_ns += fi->engine_gfx_ns + fi->engine_compute_ns;
}

static bool all_digits(const char *s) {
    if (!*s)
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

/* One process: its descriptors that are DRM devices. */
static void scan_pid(amdgpu_sysfs_t *r, const char *pid_name) {
    char fd_dir[ROOT_MAX + 32];
    snprintf(fd_dir, sizeof fd_dir, "%s/%s/fd", r->proc_root, pid_name);
    DIR *d = opendir(fd_dir);
    if (!d)
        return; /* gone, or not ours to read */
    uint32_t pid = (uint32_t)strtoul(pid_name, NULL, 10);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!all_digits(e->d_name))
            continue;
        char link[ROOT_MAX + 64], target[256];
        snprintf(link, sizeof link, "%s/%.16s", fd_dir, e->d_name);
        ssize_t n = readlink(link, target, sizeof target - 1);
        /* Only descriptors on a DRM device have DRM fdinfo; a readlink is
         * far cheaper than reading every descriptor's fdinfo. */
        if (n <= 0 || (size_t)n < 9 || memcmp(target, "/dev/dri/", 9) != 0)
            continue;
        char info_path[ROOT_MAX + 64], buf[4096];
        snprintf(info_path, sizeof info_path, "%s/%s/fdinfo/%.16s", r->proc_root, pid_name,
                 e->d_name);
        ssize_t len = read_small(info_path, buf, sizeof buf);
        amdgpu_fdinfo_t fi;
        if (len > 0 && amdgpu_fdinfo_parse(buf, (size_t)len, &fi) == 0)
            add_fdinfo(r, pid, &fi);
    }
    closedir(d);
}

/* Walks <proc>; returns false when it cannot be read at all. */
static bool scan_processes(amdgpu_sysfs_t *r) {
    r->nuse = 0;
    DIR *d = opendir(r->proc_root);
    if (!d)
        return false;
    struct dirent *e;
    while ((e = readdir(d)))
        if (all_digits(e->d_name) && strlen(e->d_name) < 12)
            scan_pid(r, e->d_name);
    closedir(d);
    return true;
}

static int use_cmp(const void *a, const void *b) {
    const use_t *x = a, *y = b;
    if (x->gpu != y->gpu)
        return x->gpu < y->gpu ? -1 : 1;
    return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* This process's engine time at the previous sweep, on the same card (by
 * address: indexes move when a card appears or leaves). */
static const use_t *prev_use(const amdgpu_sysfs_t *r, const char *bdf, uint32_t pid) {
    for (unsigned i = 0; i < r->nprev; i++) {
        const use_t *p = &r->prev[i];
        if (p->pid == pid && p->gpu < r->prev_ncards && strcmp(r->prev_bdf[p->gpu], bdf) == 0)
            return p;
    }
    return NULL;
}

/* Keeps this sweep's engine times (the larger of this and the previous for
 * a count that went backwards) for the next sweep's rates. */
static void remember(amdgpu_sysfs_t *r, mono_ns_t now) {
    for (unsigned i = 0; i < r->nuse; i++) {
        const use_t *p = prev_use(r, r->cards[r->use[i].gpu].bdf, r->use[i].pid);
        if (p && p->engine_ns > r->use[i].engine_ns)
            r->use[i].engine_ns = p->engine_ns;
    }
    use_t *t = r->prev;
    unsigned tc = r->prev_cap;
    r->prev = r->use;
    r->prev_cap = r->use_cap;
    r->nprev = r->nuse;
    r->use = t;
    r->use_cap = tc;
    r->nuse = 0;
    r->prev_at = now;
    r->prev_ncards = r->ncards;
    for (unsigned i = 0; i < r->ncards; i++)
        memcpy(r->prev_bdf[i], r->cards[i].bdf, AMDGPU_BDF_MAX);
}

/* ---- the sweep ------------------------------------------------------------------ */

static void stamp(amdgpu_sysfs_t *r, snapshot_t *s, mono_ns_t t0) {
    snprintf(s->node_name, sizeof s->node_name, "%s", r->node_name);
    s->seq = ++r->seq;
    s->taken_mono = clock_mono_now();
    s->taken_wall_ms = clock_wall_ms();
    s->sample_duration_ns = s->taken_mono - t0;
}

int amdgpu_sysfs_sample(amdgpu_sysfs_t *r, mono_ns_t now, snapshot_t **out) {
    mono_ns_t t0 = clock_mono_now();
    *out = NULL;
    r->wants_second = false;
    int n = list_cards(r->sys_root, r->cards, AMDGPU_SYSFS_MAX_GPUS);
    if (n <= 0) {
        r->ncards = 0;
        snapshot_t *s = snapshot_new(0, 0);
        if (!s)
            return KGS_ENOMEM;
        s->status = SNAPSHOT_NVML_DOWN;
        s->nvml_code = 9; /* DRIVER_NOT_LOADED: no amdgpu device */
        if (n < 0)
            snprintf(s->error, sizeof s->error, "amdgpu sysfs: open %.200s/class/drm: %s",
                     r->sys_root, strerror(-n));
        else
            snprintf(s->error, sizeof s->error,
                     "amdgpu sysfs: no amdgpu card under %.200s/class/drm", r->sys_root);
        stamp(r, s, t0);
        *out = s;
        return 0;
    }
    r->ncards = (unsigned)n;
    bool procs_ok = scan_processes(r);
    if (procs_ok && r->nuse > 0) /* no process: r->use may be NULL, and qsort's base must not */
        qsort(r->use, r->nuse, sizeof *r->use, use_cmp);

    /* Kept per card, at most AMDGPU_SYSFS_MAX_PROCS_PER_GPU each. */
    unsigned kept = 0, per_gpu[AMDGPU_SYSFS_MAX_GPUS] = {0};
    for (unsigned i = 0; i < r->nuse; i++)
        if (per_gpu[r->use[i].gpu] < AMDGPU_SYSFS_MAX_PROCS_PER_GPU) {
            per_gpu[r->use[i].gpu]++;
            kept++;
        }
    snapshot_t *s = snapshot_new_with_procs(r->ncards, 0, kept);
    if (!s)
        return KGS_ENOMEM;
    double window_ns = r->prev_at && now > r->prev_at ? (double)(now - r->prev_at) : 0.0;
    unsigned next = 0, ui = 0;
    for (unsigned gi = 0; gi < r->ncards; gi++) {
        gpu_record_t *g = &s->gpus[gi];
        sample_card(&r->cards[gi], gi, g);
        proc_list_t *pl = &g->procs;
        pl->list_ok = procs_ok;
        pl->list_code = procs_ok ? 0 : CODE_NO_PERMISSION;
        pl->util_ok = procs_ok && window_ns > 0;
        pl->util_code = pl->util_ok ? 0 : CODE_NOT_SUPPORTED;
        pl->first = next;
        for (; ui < r->nuse && r->use[ui].gpu == gi; ui++) {
            const use_t *u = &r->use[ui];
            if (pl->count == AMDGPU_SYSFS_MAX_PROCS_PER_GPU) {
                pl->dropped++;
                continue;
            }
            proc_record_t *p = &s->procs[next++];
            pl->count++;
            p->pid = u->pid;
            if (u->has_vram) {
                p->used_memory_bytes = u->vram_bytes;
                p->valid |= 1u << PROC_F_USED_MEMORY;
            }
            const use_t *before = prev_use(r, r->cards[gi].bdf, u->pid);
            if (window_ns > 0 && before) {
                uint64_t d =
                    u->engine_ns > before->engine_ns ? u->engine_ns - before->engine_ns : 0;
                double pct = (double)d / window_ns * 100.0;
                p->sm_util_pct = pct > 100.0 ? 100.0 : pct;
                p->valid |= 1u << PROC_F_SM_UTIL;
            } else if (!r->prev_at) {
                r->wants_second = true;
            }
        }
    }
    if (procs_ok)
        remember(r, now);
    stamp(r, s, t0);
    *out = s;
    return 0;
}

/* ---- the GPU backend table --------------------------------------------------------- */

static int backend_sample(void *self, mono_ns_t now, snapshot_t **out) {
    return amdgpu_sysfs_sample(self, now, out);
}

static bool backend_wants_second_sample(const void *self) {
    return ((const amdgpu_sysfs_t *)self)->wants_second;
}

static void backend_free(void *self) {
    amdgpu_sysfs_free(self);
}

static const gpu_backend_ops_t amdgpu_sysfs_ops = {
    .name = "amdgpu-sysfs",
    .sample = backend_sample,
    .wants_second_sample = backend_wants_second_sample,
    .free = backend_free,
};

gpu_backend_t amdgpu_sysfs_backend(amdgpu_sysfs_t *r) {
    return (gpu_backend_t){.ops = &amdgpu_sysfs_ops, .self = r};
}
