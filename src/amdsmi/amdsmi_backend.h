/*
 * amdsmi_backend.h - AMD GPUs through amd-smi (libamd_smi.so), a GPU backend
 * ("amdsmi", gpu/backend.h).
 *
 * Every processor handle amd-smi lists under its sockets is a device: in
 * SPX mode a whole GPU, in DPX/QPX/CPX each compute partition (an MI300X in
 * CPX is eight devices), as a MIG instance is NVIDIA's. Per device:
 * activity (gfx -> gpu_utilization, umc -> memory_utilization), VRAM used
 * and total, socket power and its cap, temperature (edge, else hotspot),
 * the gfx clock, BDF, UUID, market name, and the process list with each
 * process's VRAM and, from the second sweep on, its share of the gfx
 * engine. A partition whose activity the library cannot tell apart
 * from partition 0's has it unknown (amdsmi_decode.h,
 * amdsmi_activity_is_own). Errors become the NVML codes every consumer
 * shows (amdsmi_status_to_nvml_code): a device that is gone (NOT_FOUND) is
 * health "lost", a field the device does not have is null.
 *
 * Not thread-safe: one thread (the sampler) owns a backend.
 */
#ifndef KGS_AMDSMI_AMDSMI_BACKEND_H
#define KGS_AMDSMI_AMDSMI_BACKEND_H

#include "amdsmi/amdsmi_loader.h"
#include "core/log.h"
#include "gpu/backend.h"

#define AMDSMI_MAX_DEVICES 256 /* 32 sockets x 8 partitions */
#define AMDSMI_MAX_PROCS_PER_GPU 64

typedef struct amdsmi_backend amdsmi_backend_t;

/*
 * A backend over a bound API (`api` borrowed: it must outlive the backend;
 * tests pass a table of fakes). `log` borrowed, may be NULL; `node_name`
 * copied. amd-smi is initialised at the first sweep and again after a
 * failed one. Returns 0 and *out (free with amdsmi_backend_free), or
 * KGS_ENOMEM.
 */
int amdsmi_backend_new(const amdsmi_api_t *api, const logger_t *log, const char *node_name,
                       amdsmi_backend_t **out);

/*
 * Initialises amd-smi and counts its GPU devices, for --gpu-backend auto
 * ("amd-smi if its library loads and finds GPUs"). Returns the count (0 when
 * none), or -1 with the reason in err when amdsmi_init or the enumeration
 * fails. The backend stays initialised for its first sweep.
 */
int amdsmi_backend_probe(amdsmi_backend_t *b, char *err, size_t errlen);

/* One sweep into a new snapshot (one reference, the caller's). When
 * amd-smi cannot be initialised or enumerated the snapshot has status
 * SNAPSHOT_NVML_DOWN and the reason in ->error. Returns 0 or KGS_ENOMEM. */
int amdsmi_backend_sample(amdsmi_backend_t *b, mono_ns_t now, snapshot_t **out);

/* The backend as a GPU backend table; takes `b` (gpu_backend_deinit frees
 * it, and shuts amd-smi down). */
gpu_backend_t amdsmi_backend_as_gpu_backend(amdsmi_backend_t *b);

/* Shuts amd-smi down if initialised and frees. NULL does nothing. */
void amdsmi_backend_free(amdsmi_backend_t *b);

#endif
