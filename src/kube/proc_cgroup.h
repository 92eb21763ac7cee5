/*
 * proc_cgroup.h - which pod (and container) a process belongs to, from the
 * text of /proc/<pid>/cgroup.
 *
 * The kubelet puts every container in a cgroup under its pod's, and the
 * pod's cgroup is named after the pod UID: with the systemd driver
 * ".../kubepods-burstable-pod<uid with _ for ->.slice/cri-containerd-<id>.scope",
 * with the cgroupfs driver ".../kubepods/burstable/pod<uid>/<id>". This is
 * what lets the agent attribute a GPU process (an NVML pid) to a pod. The
 * parser is pure (text in, record out); proc_cgroup_read() is the I/O.
 */
#ifndef KGS_KUBE_PROC_CGROUP_H
#define KGS_KUBE_PROC_CGROUP_H

#include <stddef.h>
#include <stdint.h>

#include "core/snapshot.h"

#define CGROUP_POD_UID_MAX 40       /* 36 + NUL; static pods' 32-hex UIDs fit too */
#define CGROUP_CONTAINER_ID_MAX 129 /* 64 hex in practice; 128 allowed */
#define CGROUP_FILE_MAX (64u * 1024u)

typedef struct {
    char pod_uid[CGROUP_POD_UID_MAX];           /* canonical: with '-', lower-case */
    char container_id[CGROUP_CONTAINER_ID_MAX]; /* "" when the path names none */
    char runtime[16]; /* "containerd", "docker", "crio", "" (cgroupfs: not named) */
} cgroup_pod_t;

/*
 * Parses `len` bytes of /proc/<pid>/cgroup (cgroup v2 "0::<path>", v1
 * "<id>:<controllers>:<path>" lines, or both). The unified (v2) line wins,
 * then v1's name=systemd, then the other v1 lines. Paths may be relative to
 * the reader's cgroup namespace ("/../../kubepods-...").
 * Returns 0 and *out; KGS_ENOTFOUND when the process is in no pod's cgroup
 * (a host process); KGS_EINVAL when the text is not a cgroup file or its
 * lines name different pods (err says which).
 */
int cgroup_pod_parse(const char *text, size_t len, cgroup_pod_t *out, char *err, size_t errlen);

/*
 * Reads <proc_root>/<pid>/cgroup (proc_root "/proc" on a node; a test
 * tree otherwise) and parses it. As cgroup_pod_parse, plus KGS_EIO when the
 * file cannot be read (the process exited, or no host PID namespace).
 */
int proc_cgroup_read(const char *proc_root, uint32_t pid, cgroup_pod_t *out, char *err,
                     size_t errlen);

/*
 * Fills pod_uid and container_id of every process record of `s` (not yet
 * published, so still writable) from <proc_root>/<pid>/cgroup. A process
 * whose file cannot be read (it exited) or that is in no pod keeps "": it
 * belongs to no pod, which a share evaluation then leaves out. Sets
 * s->procs_attributed (also when there is no process). Returns the
 * number of records attributed to a pod. Sampler thread (file I/O).
 */
unsigned proc_cgroup_annotate(snapshot_t *s, const char *proc_root);

#endif
