/*
 * token_file.c - see the header.
 */
#include "net/token_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/bearer_token.h"
#include "core/err.h"

static void id_of(const struct stat *st, token_file_id_t *id) {
    id->dev = st->st_dev;
    id->ino = st->st_ino;
    id->size = st->st_size;
    id->mtime = st->st_mtim;
}

int token_file_read(const char *path, char *buf, size_t cap, size_t *len, token_file_id_t *id,
                    char *err, size_t errlen) {
    int rc = 0;
    char why[200];
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return kgs_seterr(err, errlen, KGS_EIO, "token file %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return kgs_seterr(err, errlen, KGS_EIO, "token file %s is not a regular file", path);
    }
    /* up to cap bytes: one more than the largest token, so a longer token
     * is seen as one (trailing whitespace may still bring it within) */
    size_t n = 0;
    while (n < cap) {
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = kgs_seterr(err, errlen, KGS_EIO, "token file %s: %s", path, strerror(errno));
            break;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    char more;
    if (rc == 0 && n == cap && read(fd, &more, 1) > 0) /* beyond what buf holds at all */
        rc = kgs_seterr(err, errlen, KGS_EINVAL, "token file %s: larger than %zu bytes", path, cap);
    close(fd);
    size_t tlen = 0;
    if (rc == 0 && bearer_token_check(buf, n, cap - 1, &tlen, why, sizeof why) != 0)
        rc = kgs_seterr(err, errlen, KGS_EINVAL, "token file %s: %s", path, why);
    if (rc != 0) {
        explicit_bzero(buf, cap);
        return rc;
    }
    explicit_bzero(buf + tlen, cap - tlen); /* the cut whitespace, and what a longer read left */
    *len = tlen;
    if (id)
        id_of(&st, id);
    return 0;
}

bool token_file_unchanged(const char *path, const token_file_id_t *id) {
    struct stat st;
    return stat(path, &st) == 0 && st.st_dev == id->dev && st.st_ino == id->ino &&
           st.st_size == id->size && st.st_mtim.tv_sec == id->mtime.tv_sec &&
           st.st_mtim.tv_nsec == id->mtime.tv_nsec;
}
