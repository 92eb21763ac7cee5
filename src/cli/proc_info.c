/*
 * proc_info.c - command names and pods of GPU processes, from /proc, only
 * where /proc and NVML count process ids the same way (proc_info.h).
 *
 * A process id can be reused between NVML's list and the read of its comm;
 * the window is the few milliseconds between the sample and the write, and
 * a name read then belongs to whichever process holds the id. The output
 * documents this; nothing here can close it (NVML gives no start time).
 */
#include "cli/proc_info.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/err.h"
#include "kube/proc_cgroup.h"

int proc_info_parse_comm(const char *buf, size_t len, char out[PROC_INFO_COMM_MAX]) {
    out[0] = '\0';
    if (len && buf[len - 1] == '\n')
        len--;
    if (len == 0 || len >= PROC_INFO_COMM_MAX || memchr(buf, '\0', len))
        return KGS_EINVAL;
    memcpy(out, buf, len);
    out[len] = '\0';
    return 0;
}

bool proc_info_parse_pidns(const char *link, unsigned long long *ino) {
    if (!link || strncmp(link, "pid:[", 5) != 0)
        return false;
    const char *p = link + 5;
    unsigned long long v = 0;
    int digits = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (++digits > 19)
            return false;
        v = v * 10 + (unsigned long long)(*p - '0');
    }
    if (!digits || p[0] != ']' || p[1] != '\0')
        return false;
    *ino = v;
    return true;
}

void proc_lookup_init(proc_lookup_t *l, const char *proc_root) {
    memset(l, 0, sizeof *l);
    snprintf(l->root, sizeof l->root, "%s", proc_root ? proc_root : "/proc");
    char path[320], link[64];
    snprintf(path, sizeof path, "%s/self/ns/pid", l->root);
    ssize_t n = readlink(path, link, sizeof link - 1);
    if (n < 0) {
        snprintf(l->why, sizeof l->why,
                 "cannot read %s (%s), so whether /proc here counts process ids as NVML "
                 "does (the host's) is unknown",
                 path, strerror(errno));
        return;
    }
    link[n] = '\0';
    unsigned long long ino = 0;
    if (!proc_info_parse_pidns(link, &ino) || ino != PROC_INFO_INIT_PIDNS_INO) {
        snprintf(l->why, sizeof l->why,
                 "gpu-metrics runs in PID namespace %.40s, not the host's: NVML lists the "
                 "host's process ids, which /proc here does not know (in a pod, hostPID: true "
                 "fixes it)",
                 link);
        return;
    }
    l->host_pidns = true;
}

/* Reads <root>/<pid>/comm into info->comm. */
static void proc_read_comm(const proc_lookup_t *l, uint32_t pid, proc_info_t *info) {
    char path[320], buf[64];
    snprintf(path, sizeof path, "%s/%u/comm", l->root, (unsigned)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n;
    do {
        n = read(fd, buf, sizeof buf);
    } while (n < 0 && errno == EINTR);
    close(fd);
    if (n > 0 && proc_info_parse_comm(buf, (size_t)n, info->comm) == 0)
        info->comm_ok = true;
}

void proc_lookup_fill(const proc_lookup_t *l, const snapshot_t *snap, proc_info_t *info) {
    for (unsigned i = 0; i < snap->proc_total; i++) {
        proc_info_t *x = &info[i];
        memset(x, 0, sizeof *x);
        if (!l->host_pidns)
            continue;
        uint32_t pid = snap->procs[i].pid;
        proc_read_comm(l, pid, x);
        cgroup_pod_t pod;
        int rc = proc_cgroup_read(l->root, pid, &pod, NULL, 0);
        if (rc == 0 || rc == KGS_ENOTFOUND) {
            x->pod_ok = true;
            if (rc == 0) {
                snprintf(x->pod_uid, sizeof x->pod_uid, "%s", pod.pod_uid);
                size_t n = strlen(pod.container_id);
                if (n < sizeof x->container_id) /* a longer id is not kept cut */
                    memcpy(x->container_id, pod.container_id, n + 1);
            }
        }
    }
}
