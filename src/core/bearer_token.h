/*
 * bearer_token.h - a token file's bytes as an HTTP bearer token: what the
 * Kubernetes API client (--kube-token-file) and authenticated scrapes
 * (--source-auth token-file) both send as "Authorization: Bearer <token>".
 *
 * Pure: no I/O, no allocation, no globals. Any thread. (net/token_file.h
 * reads the file.)
 */
#ifndef KGS_CORE_BEARER_TOKEN_H
#define KGS_CORE_BEARER_TOKEN_H

#include <stddef.h>

/*
 * buf[0..len) as a bearer token of at most max bytes: trailing whitespace
 * (the newline an editor or `kubectl create token > file` leaves) is cut
 * and *tlen is what remains. Refused with KGS_EINVAL (the message never
 * quotes the token): empty, longer than max, or a byte outside printable
 * ASCII without spaces (0x21-0x7e), which could not go in an HTTP header
 * unchanged (a CR or LF would split it).
 */
int bearer_token_check(const char *buf, size_t len, size_t max, size_t *tlen, char *err,
                       size_t errlen);

#endif
