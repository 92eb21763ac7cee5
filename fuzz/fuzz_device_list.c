/*
 * fuzz_device_list.c - device_selection_resolve() on arbitrary bytes.
 *
 * The input, cut at its first NUL, is resolved against a fixed node of four
 * GPUs (index 2 with two MIG instances). On success the selection must be
 * internally consistent: every listed GPU index exists in the snapshot,
 * every MIG slot is in range, counts fit the arrays, there are no
 * duplicates, and "all" comes with empty lists. On failure nothing may be
 * selected (never a fallback to all GPUs) and the message must be set.
 *
 * The same bytes as CUDA_VISIBLE_DEVICES then go through
 * cuda_index_map_build() under both device orders and on both sides of
 * driver R570: the known ordinals are distinct and number 0..k-1 without a
 * gap, a list never makes a device "visible without an ordinal", and a
 * device is left unknown only with a note that says why.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/snapshot.h"
#include "env/cuda_index.h"
#include "env/env.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static snapshot_t *fuzz_node(void) {
    static const char *const gpu[4] = {
        "GPU-aa110000-0000-0000-0000-000000000000", "GPU-aa220000-0000-0000-0000-000000000000",
        "GPU-bb330000-0000-0000-0000-000000000000", "GPU-cc440000-0000-0000-0000-000000000000"};
    static const char *const mig[2] = {"MIG-1f000000-0000-0000-0000-000000000000",
                                       "MIG-1e000000-0000-0000-0000-000000000000"};
    snapshot_t *s = snapshot_new(4, 2);
    if (!s)
        abort();
    for (unsigned i = 0; i < 4; i++) {
        s->gpus[i].index = i;
        snprintf(s->gpus[i].uuid, sizeof s->gpus[i].uuid, "%s", gpu[i]);
        /* PCI order is the reverse of NVML's: 3, 2, 1, 0 */
        snprintf(s->gpus[i].pci_bus_id, sizeof s->gpus[i].pci_bus_id, "00000000:%02X:00.0",
                 0x90 - 0x10 * i);
    }
    s->gpus[2].mig_enabled = true;
    s->gpus[2].mig_count = 2;
    for (unsigned m = 0; m < 2; m++) {
        s->mig[m].parent_index = 2;
        snprintf(s->mig[m].uuid, sizeof s->mig[m].uuid, "%s", mig[m]);
        s->mig[m].gpu_instance_id = 1 + m;
        s->mig[m].ids_valid = true;
    }
    return s;
}

static void fuzz_check_cuda_map(const char *list, snapshot_t *s) {
    static const char *const orders[2] = {"PCI_BUS_ID", "FASTEST_FIRST"};
    static const char *const drivers[2] = {"560.35.03", "570.86.15"};
    if (strlen(list) >= sizeof(((env_info_t *)0)->cuda_visible))
        return;
    for (int k = 0; k < 6; k++) {
        s->gpus[2].mig_enabled = k < 4; /* then a node without MIG: integers resolve */
        env_info_t e;
        memset(&e, 0, sizeof e);
        e.cuda_visible_set = true;
        strcpy(e.cuda_visible, list);
        e.cuda_order_set = true;
        strcpy(e.cuda_order, orders[k & 1]);
        snprintf(s->driver_version, sizeof s->driver_version, "%s", drivers[(k >> 1) & 1]);
        cuda_index_map_t m;
        if (cuda_index_map_build(&e, s, &m) != 0)
            abort(); /* no allocation fails here */
        unsigned seen[4 + 2] = {0}, known = 0, total = m.gpu_count + m.mig_count;
        bool unknown = false;
        for (unsigned i = 0; i < total; i++) {
            const cuda_index_t *x = i < m.gpu_count ? &m.gpu[i] : &m.mig[i - m.gpu_count];
            FUZZ_CHECK(x->state != CUDA_INDEX_VISIBLE);
            unknown |= x->state == CUDA_INDEX_UNKNOWN;
            if (x->state != CUDA_INDEX_KNOWN)
                continue;
            FUZZ_CHECK(x->index < total && seen[x->index] == 0);
            seen[x->index] = 1;
            known++;
        }
        for (unsigned i = 0; i < known; i++)
            FUZZ_CHECK(seen[i] == 1);
        FUZZ_CHECK(!unknown || m.note[0] != '\0');
        FUZZ_CHECK(strlen(m.note) < sizeof m.note);
        cuda_index_map_deinit(&m);
    }
    s->gpus[2].mig_enabled = true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *list = malloc(size + 1);
    if (!list)
        return 0;
    memcpy(list, data, size);
    list[size] = '\0';
    snapshot_t *s = fuzz_node();

    device_selection_t sel;
    char err[512];
    err[0] = '\0';
    int rc = device_selection_resolve("FUZZ", list, s, &sel, err, sizeof err);
    if (rc == 0) {
        FUZZ_CHECK(sel.gpu_count <= s->gpu_count);
        FUZZ_CHECK(sel.mig_count <= s->mig_total);
        if (sel.all_gpus)
            FUZZ_CHECK(sel.gpu_count == 0 && sel.mig_count == 0);
        for (unsigned i = 0; i < sel.gpu_count; i++) {
            FUZZ_CHECK(snapshot_gpu_by_index(s, sel.gpu_index[i]) != NULL);
            for (unsigned j = 0; j < i; j++)
                FUZZ_CHECK(sel.gpu_index[j] != sel.gpu_index[i]);
        }
        for (unsigned i = 0; i < sel.mig_count; i++) {
            FUZZ_CHECK(sel.mig_slot[i] < s->mig_total);
            FUZZ_CHECK(device_selection_has_mig(&sel, s, sel.mig_slot[i]));
            for (unsigned j = 0; j < i; j++)
                FUZZ_CHECK(sel.mig_slot[j] != sel.mig_slot[i]);
        }
        for (unsigned i = 0; i < s->gpu_count; i++) {
            if (device_selection_has_gpu(&sel, &s->gpus[i]) && !sel.all_gpus) {
                bool listed = false;
                for (unsigned j = 0; j < sel.gpu_count; j++)
                    listed |= sel.gpu_index[j] == s->gpus[i].index;
                FUZZ_CHECK(listed);
            }
        }
    } else {
        FUZZ_CHECK(rc < 0);
        FUZZ_CHECK(!sel.all_gpus && sel.gpu_count == 0 && sel.mig_count == 0);
        FUZZ_CHECK(err[0] != '\0');
        FUZZ_CHECK(strlen(err) < sizeof err);
    }

    /* CUDA's reading: never an error for what it reads past, never more
     * than the list names, and the strict reading's answer when that has one. */
    device_selection_t cuda;
    char note[768];
    int crc = device_selection_resolve_cuda(list, s, &cuda, note, sizeof note, err, sizeof err);
    FUZZ_CHECK(crc == 0 || crc == KGS_ERANGE);
    FUZZ_CHECK(strlen(note) < sizeof note);
    if (crc == 0) {
        FUZZ_CHECK(cuda.gpu_count <= s->gpu_count && cuda.mig_count <= s->mig_total);
        for (unsigned i = 0; i < cuda.gpu_count; i++)
            FUZZ_CHECK(snapshot_gpu_by_index(s, cuda.gpu_index[i]) != NULL);
        for (unsigned i = 0; i < cuda.mig_count; i++)
            FUZZ_CHECK(cuda.mig_slot[i] < s->mig_total);
    }
    if (rc == 0) {
        FUZZ_CHECK(crc == 0 && note[0] == '\0');
        FUZZ_CHECK(memcmp(&cuda, &sel, sizeof sel) == 0);
    }

    fuzz_check_cuda_map(list, s);
    snapshot_unref(s);
    free(list);
    return 0;
}
