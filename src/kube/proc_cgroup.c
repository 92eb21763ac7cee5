/*
 * proc_cgroup.c - pod UID and container id from /proc/<pid>/cgroup.
 *
 * DESIGN
 * A path is split into components and scanned for the pod's cgroup:
 *   systemd driver:  kubepods[-<qos>]-pod<uid, '_' for '-'>.slice
 *   cgroupfs driver: pod<uid>
 * The container's cgroup is the component after it:
 *   cri-containerd-<id>.scope, docker-<id>.scope, crio-<id>.scope (systemd),
 *   or a bare hex id (cgroupfs). crio-conmon-<id>.scope is CRI-O's monitor,
 *   not the container: the pod is known, the container is not.
 * Scanning components (not matching a whole path) is what makes a path
 * relative to another cgroup namespace ("/../../kubepods-...") work, which
 * is what a containerised agent sees under cgroup v2.
 */
#include "kube/proc_cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/err.h"

static bool is_hex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static char lower(char c) {
    return (c >= 'A' && c <= 'F') ? (char)(c - 'A' + 'a') : c;
}

/* A pod UID: 8-4-4-4-12 hex with '-' (or '_' under systemd), or 32 hex (a
 * static pod's UID is a hash). Writes the canonical form. */
static bool uid_parse(const char *s, size_t n, char sep, char out[CGROUP_POD_UID_MAX]) {
    if (n == 32) {
        for (size_t i = 0; i < n; i++) {
            if (!is_hex(s[i]))
                return false;
            out[i] = lower(s[i]);
        }
        out[n] = '\0';
        return true;
    }
    if (n != 36)
        return false;
    for (size_t i = 0; i < n; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != sep : !is_hex(s[i]))
            return false;
        out[i] = dash ? '-' : lower(s[i]);
    }
    out[n] = '\0';
    return true;
}

static bool has_prefix(const char *s, size_t n, const char *p) {
    size_t pn = strlen(p);
    return n >= pn && memcmp(s, p, pn) == 0;
}

static bool has_suffix(const char *s, size_t n, const char *x) {
    size_t xn = strlen(x);
    return n >= xn && memcmp(s + n - xn, x, xn) == 0;
}

/* The pod UID a path component names, if any. */
static bool component_pod(const char *c, size_t n, char uid[CGROUP_POD_UID_MAX]) {
    if (has_prefix(c, n, "kubepods") && has_suffix(c, n, ".slice")) {
        /* kubepods-pod<uid>.slice, kubepods-burstable-pod<uid>.slice */
        size_t body = n - 6;
        for (size_t i = 8; i + 4 <= body; i++) {
            if (c[i] == '-' && memcmp(c + i + 1, "pod", 3) == 0)
                return uid_parse(c + i + 4, body - (i + 4), '_', uid);
        }
        return false;
    }
    if (has_prefix(c, n, "pod"))
        return uid_parse(c + 3, n - 3, '-', uid);
    return false;
}

static bool hex_id(const char *s, size_t n) {
    if (n < 12 || n >= CGROUP_CONTAINER_ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!is_hex(s[i]))
            return false;
    return true;
}

/* The container a component names (after the pod's). */
static void component_container(const char *c, size_t n, cgroup_pod_t *out) {
    static const struct {
        const char *prefix, *runtime;
    } scopes[] = {{"cri-containerd-", "containerd"}, {"docker-", "docker"}, {"crio-", "crio"}};
    if (has_suffix(c, n, ".scope")) {
        for (size_t i = 0; i < sizeof scopes / sizeof scopes[0]; i++) {
            size_t pn = strlen(scopes[i].prefix);
            if (!has_prefix(c, n, scopes[i].prefix))
                continue;
            if (n < pn + 6)
                return;
            const char *id = c + pn;
            size_t idn = n - pn - 6;
            if (!hex_id(id, idn))
                return; /* crio-conmon-<id>.scope and the like: not the container */
            for (size_t k = 0; k < idn; k++)
                out->container_id[k] = lower(id[k]);
            out->container_id[idn] = '\0';
            snprintf(out->runtime, sizeof out->runtime, "%s", scopes[i].runtime);
            return;
        }
        return;
    }
    if (hex_id(c, n)) { /* cgroupfs driver: the id itself */
        for (size_t k = 0; k < n; k++)
            out->container_id[k] = lower(c[k]);
        out->container_id[n] = '\0';
    }
}

/* Scans one cgroup path; true when it names a pod. */
static bool path_pod(const char *p, size_t n, cgroup_pod_t *out) {
    memset(out, 0, sizeof *out);
    bool found = false;
    size_t i = 0;
    while (i < n) {
        while (i < n && p[i] == '/')
            i++;
        size_t start = i;
        while (i < n && p[i] != '/')
            i++;
        size_t len = i - start;
        if (len == 0)
            break;
        char uid[CGROUP_POD_UID_MAX] = {0}; /* copied whole: no stack bytes leak out */
        if (component_pod(p + start, len, uid)) {
            memset(out, 0, sizeof *out); /* the innermost pod cgroup wins */
            memcpy(out->pod_uid, uid, sizeof uid);
            found = true;
        } else if (found && !out->container_id[0]) {
            component_container(p + start, len, out);
        }
    }
    return found;
}

int cgroup_pod_parse(const char *text, size_t len, cgroup_pod_t *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (len > CGROUP_FILE_MAX)
        return kgs_seterr(err, errlen, KGS_EINVAL, "cgroup file of %zu bytes: more than %u", len,
                          CGROUP_FILE_MAX);
    /* rank: 3 unified (v2), 2 v1 name=systemd, 1 other v1 */
    int best_rank = 0;
    cgroup_pod_t best;
    memset(&best, 0, sizeof best);
    size_t lineno = 0;
    size_t i = 0;
    while (i < len) {
        size_t start = i;
        while (i < len && text[i] != '\n')
            i++;
        const char *line = text + start;
        size_t n = i - start;
        i++; /* past '\n' */
        lineno++;
        if (n == 0)
            continue;
        const char *c1 = memchr(line, ':', n);
        const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(line + n - c1 - 1)) : NULL;
        if (!c1 || !c2 || c1 == line)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "cgroup line %zu is not <id>:<controllers>:<path>", lineno);
        for (const char *d = line; d < c1; d++)
            if (*d < '0' || *d > '9')
                return kgs_seterr(err, errlen, KGS_EINVAL,
                                  "cgroup line %zu: hierarchy id \"%.*s\" is not a number", lineno,
                                  (int)(c1 - line), line);
        const char *ctl = c1 + 1;
        size_t ctln = (size_t)(c2 - ctl);
        const char *path = c2 + 1;
        size_t pathn = (size_t)(line + n - path);
        int rank = (c1 - line == 1 && line[0] == '0' && ctln == 0)        ? 3
                   : (ctln == 12 && memcmp(ctl, "name=systemd", 12) == 0) ? 2
                                                                          : 1;
        cgroup_pod_t cur;
        if (!path_pod(path, pathn, &cur))
            continue;
        if (best_rank && strcmp(cur.pod_uid, best.pod_uid) != 0)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "cgroup lines name two pods: %s and %s (line %zu)", best.pod_uid,
                              cur.pod_uid, lineno);
        if (rank > best_rank || (!best.container_id[0] && cur.container_id[0])) {
            if (rank < best_rank) /* a lower line only completes the container id */
                memcpy(best.container_id, cur.container_id, sizeof cur.container_id);
            else
                best = cur;
            best_rank = rank > best_rank ? rank : best_rank;
        }
    }
    if (lineno == 0)
        return kgs_seterr(err, errlen, KGS_EINVAL, "cgroup file is empty");
    if (!best_rank)
        return kgs_seterr(err, errlen, KGS_ENOTFOUND, "process is in no Kubernetes pod's cgroup");
    *out = best;
    return 0;
}

int proc_cgroup_read(const char *proc_root, uint32_t pid, cgroup_pod_t *out, char *err,
                     size_t errlen) {
    memset(out, 0, sizeof *out);
    char path[4096];
    snprintf(path, sizeof path, "%s/%u/cgroup", proc_root, (unsigned)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return kgs_seterr(err, errlen, KGS_EIO, "read %s: %s", path, strerror(errno));
    static _Thread_local char buf[CGROUP_FILE_MAX + 1];
    size_t got = 0;
    while (got < sizeof buf) {
        ssize_t r = read(fd, buf + got, sizeof buf - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            return kgs_seterr(err, errlen, KGS_EIO, "read %s: %s", path, strerror(e));
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    return cgroup_pod_parse(buf, got, out, err, errlen);
}

unsigned proc_cgroup_annotate(snapshot_t *s, const char *proc_root) {
    unsigned n = 0;
    s->procs_attributed = true;
    for (unsigned i = 0; i < s->proc_total; i++) {
        proc_record_t *r = &s->procs[i];
        cgroup_pod_t p;
        r->pod_uid[0] = '\0';
        r->container_id[0] = '\0';
        if (proc_cgroup_read(proc_root, r->pid, &p, NULL, 0) != 0)
            continue;
        snprintf(r->pod_uid, sizeof r->pod_uid, "%s", p.pod_uid);
        size_t idlen = strlen(p.container_id);
        if (idlen < sizeof r->container_id) /* a longer id is not kept cut */
            memcpy(r->container_id, p.container_id, idlen + 1);
        n++;
    }
    return n;
}
