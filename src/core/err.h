/*
 * err.h - the project's error codes: 0 for success, a negative KGS_E* code
 * otherwise. Messages with context are written by the function that fails
 * into a caller-provided buffer (char *err, size_t errlen; err may be NULL).
 */
#ifndef KGS_CORE_ERR_H
#define KGS_CORE_ERR_H

#include <stddef.h>

#define KGS_ERRORS(X)                                                                              \
    X(OK, 0, "success")                                                                            \
    X(ENOMEM, -1, "out of memory")                                                                 \
    X(EINVAL, -2, "invalid argument")                                                              \
    X(ENOTFOUND, -3, "not found")                                                                  \
    X(EIO, -4, "input/output error")                                                               \
    X(ENVML, -5, "NVML error")                                                                     \
    X(ERANGE, -6, "value out of range")                                                            \
    X(EEXIST, -7, "already exists")                                                                \
    X(ESTATE, -8, "invalid state")                                                                 \
    X(EPROTO, -9, "protocol mismatch")                                                             \
    X(ENOPEER, -10, "no server at the address")                                                    \
    X(ETIMEDOUT, -11, "timed out")

typedef enum {
#define KGS_ERR_ENUM(name, value, msg) KGS_##name = (value),
    KGS_ERRORS(KGS_ERR_ENUM)
#undef KGS_ERR_ENUM
} kgs_err_t;

/* "EINVAL" etc.; "UNKNOWN" for a code not in the list. Static storage. */
const char *kgs_err_name(int code);
/* "invalid argument" etc. Static storage. */
const char *kgs_err_str(int code);

/* Writes a printf-style message into err (if err != NULL and errlen > 0)
 * and returns `code`, so callers can `return kgs_seterr(...)`. */
int kgs_seterr(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Outside input quoted for an error message: "..." with \" \\ \xNN escapes,
 * cut after KGS_QUOTE_MAX bytes with "..." after the closing quote. Writes
 * buf (KGS_QUOTE_BUF bytes hold any input) and returns it. */
#define KGS_QUOTE_MAX 48
#define KGS_QUOTE_BUF 256
const char *kgs_quote(char *buf, size_t buflen, const char *p, size_t n);

#endif
