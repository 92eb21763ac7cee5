/*
 * proc_info.h - what /proc says about the processes NVML lists on a GPU:
 * the command name (/proc/<pid>/comm) and, on a Kubernetes node, the pod
 * (/proc/<pid>/cgroup, through kube/proc_cgroup.h).
 *
 * NVML names processes by their id in the host's PID namespace. /proc
 * answers for the PID namespace it was mounted in, so the two agree only
 * when gpu-metrics runs in the host's (initial) PID namespace: on bare
 * metal, in a Slurm job, in a pod with hostPID. Elsewhere (a container
 * with its own PID namespace) the same number names another process or
 * none, so nothing is looked up and the reason says why.
 */
#ifndef KGS_CLI_PROC_INFO_H
#define KGS_CLI_PROC_INFO_H

#include <stdbool.h>
#include <stddef.h>

#include "core/snapshot.h"

/* The initial PID namespace's inode: PROC_PID_INIT_INO (0xEFFFFFFC) in
 * Linux's include/linux/proc_ns.h, fixed since namespaces got inodes in
 * 3.8 (and the same value as PID_NS_INIT_INO where newer kernels moved it). */
#define PROC_INFO_INIT_PIDNS_INO 4026531836ull

#define PROC_INFO_COMM_MAX 16 /* TASK_COMM_LEN: 15 bytes and the NUL */

/* One process record's lookups. A field is meaningful only with its _ok. */
typedef struct {
    bool comm_ok;
    char comm[PROC_INFO_COMM_MAX];                /* raw bytes, untrusted: sanitise to print */
    bool pod_ok;                                  /* the cgroup file was read and parsed */
    char pod_uid[SNAPSHOT_POD_UID_MAX];           /* "" = in no pod */
    char container_id[SNAPSHOT_CONTAINER_ID_MAX]; /* "" = none named */
} proc_info_t;

/*
 * The text of /proc/<pid>/comm (len bytes, not NUL-terminated) without its
 * final newline, into out[PROC_INFO_COMM_MAX]. Returns 0, or KGS_EINVAL
 * when it is empty, holds a NUL or is longer than a command name can be.
 */
int proc_info_parse_comm(const char *buf, size_t len, char out[PROC_INFO_COMM_MAX]);

/*
 * Reads a namespace link's text ("pid:[4026531836]"): true and *ino when it
 * is "pid:[<decimal>]", false otherwise.
 */
bool proc_info_parse_pidns(const char *link, unsigned long long *ino);

typedef struct {
    bool host_pidns; /* lookups are meaningful */
    char why[640];   /* when not: the reason, for the output's note */
    char root[256];  /* the /proc to read */
} proc_lookup_t;

/*
 * Decides whether `proc_root` (normally "/proc") answers for NVML's
 * process ids: reads <proc_root>/self/ns/pid and compares it with the
 * initial PID namespace. Never fails: *l says yes, or no and why.
 */
void proc_lookup_init(proc_lookup_t *l, const char *proc_root);

/*
 * Fills info[0..snap->proc_total) (parallel to snap->procs) from
 * <root>/<pid>/comm and <root>/<pid>/cgroup; everything not ok when the
 * lookup is off or a file cannot be read (the process exited). Borrowed:
 * l, snap; info is the caller's. File I/O on the calling thread.
 */
void proc_lookup_fill(const proc_lookup_t *l, const snapshot_t *snap, proc_info_t *info);

#endif
