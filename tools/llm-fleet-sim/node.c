/*
 * node.c - see node.h.
 */
#include "node.h"

#include <stdio.h>

#define H100_MEMORY_BYTES 85520809984ULL /* "NVIDIA H100 80GB HBM3", as NVML reports it */
#define WEIGHTS_BYTES 17179869184ULL     /* 16 GiB: Llama-3.1-8B in bf16 */
#define RESERVED_BYTES 536870912ULL      /* the driver's own, on every GPU */

/* The PCI buses of an 8-GPU HGX H100 board. */
static const unsigned bus[FLEET_MAX_SLOTS] = {0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb,
                                              0x19, 0x2b, 0x3b, 0x5e, 0x9b, 0xac, 0xbb, 0xdc};

typedef struct {
    unsigned util, mem_util, temp_c, sm_mhz;
    unsigned long long used;
    unsigned long power_mw;
    double sm_active;
} gpu_reading_t;

static void reading_of(const fleet_t *f, unsigned i, double now_s, gpu_reading_t *g) {
    const fleet_slot_t *s = &f->slot[i];
    *g = (gpu_reading_t){0, 0, 34, 345, 0, 70000, 0};
    if (s->state == FLEET_STARTING) {
        double p = (now_s - s->created_s) / f->p.cold_start_s;
        p = p < 0 ? 0 : p > 1 ? 1 : p;
        g->used = (unsigned long long)(p * (double)WEIGHTS_BYTES);
        g->power_mw = 90000;
        g->temp_c = 36;
        return;
    }
    if (s->state != FLEET_READY)
        return;
    g->used = (unsigned long long)(0.9 * (double)H100_MEMORY_BYTES);
    g->sm_mhz = 1980;
    if (s->nrunning == 0) {
        g->power_mw = 120000;
        g->temp_c = 40;
        return;
    }
    double batch = (double)s->nrunning / f->p.max_num_seqs;
    g->util = 97;
    g->mem_util = (unsigned)(20 + 50 * batch);
    g->sm_active = 25 + 55 * batch;
    g->power_mw = (unsigned long)(380000 + 280000 * batch);
    g->temp_c = (unsigned)(55 + 15 * batch);
}

size_t node_scenario(char *buf, size_t n, const fleet_t *f, double now_s) {
    size_t len = 0;
    int w = snprintf(buf, n,
                     "{\n  \"driver_version\": \"560.35.03\",\n"
                     "  \"cuda_driver_version\": 12060,\n  \"devices\": [");
    if (w < 0 || (size_t)w >= n)
        return 0;
    len = (size_t)w;
    for (unsigned i = 0; i < f->p.slots; i++) {
        gpu_reading_t g;
        reading_of(f, i, now_s, &g);
        w = snprintf(
            buf + len, n - len,
            "%s\n    {\"uuid\": \"GPU-6c1d8e20-7a4b-4f0e-9d3c-5b2a1e0f%04x\", "
            "\"name\": \"NVIDIA H100 80GB HBM3\", \"pci_bus_id\": \"00000000:%02X:00.0\",\n"
            "     \"memory_total_bytes\": %llu, \"power_limit_mw\": 700000, "
            "\"gpm_supported\": true,\n"
            "     \"values\": {\"gpu_util\": %u, \"mem_util\": %u, \"memory_used_bytes\": %llu, "
            "\"memory_reserved_bytes\": %llu, \"temperature_c\": %u, \"power_mw\": %lu, "
            "\"sm_clock_mhz\": %u, \"sm_active\": %.1f, \"sm_occupancy\": %.1f, "
            "\"dram_bw_util\": %u}}",
            i ? "," : "", i, bus[i], (unsigned long long)H100_MEMORY_BYTES, g.util, g.mem_util,
            g.used, (unsigned long long)RESERVED_BYTES, g.temp_c, g.power_mw, g.sm_mhz, g.sm_active,
            g.sm_active / 2, g.mem_util);
        if (w < 0 || (size_t)w >= n - len)
            return 0;
        len += (size_t)w;
    }
    w = snprintf(buf + len, n - len, "\n  ]\n}\n");
    if (w < 0 || (size_t)w >= n - len)
        return 0;
    return len + (size_t)w;
}
