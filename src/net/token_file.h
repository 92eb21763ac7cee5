/*
 * token_file.h - reading a bearer token from a file, and telling whether
 * the file changed since: the Kubernetes API client's --kube-token-file and
 * the --source-auth profiles' token-file. A projected service-account token
 * is rotated by the kubelet swapping a symlink, so a changed file is a new
 * device/inode, size or mtime as stat() (following links) sees it.
 *
 * Blocking system calls on a small local file (tmpfs in a pod); callers on
 * the event loop read it at most once a second, or once per request.
 */
#ifndef KGS_NET_TOKEN_FILE_H
#define KGS_NET_TOKEN_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <time.h>

/* Which file a token was read from. */
typedef struct {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
} token_file_id_t;

/*
 * Reads path into buf (cap bytes: a token of at most cap - 1 bytes, NUL-
 * terminated) as core/bearer_token.h checks it. Returns 0 with *len and
 * *id (may be NULL), or KGS_EIO (cannot be opened or read, not a regular
 * file) / KGS_EINVAL (not a bearer token) with "token file PATH: why" (never
 * the file's bytes); buf is then wiped.
 */
int token_file_read(const char *path, char *buf, size_t cap, size_t *len, token_file_id_t *id,
                    char *err, size_t errlen);

/* Whether path is still the file id describes (false when it cannot be
 * stat'ed: the caller reads it again and reports why). */
bool token_file_unchanged(const char *path, const token_file_id_t *id);

#endif
