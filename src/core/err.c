#include "core/err.h"

#include <stdarg.h>
#include <stdio.h>

const char *kgs_err_name(int code) {
    switch (code) {
#define KGS_ERR_NAME(name, value, msg)                                                             \
    case (value):                                                                                  \
        return #name;
        KGS_ERRORS(KGS_ERR_NAME)
#undef KGS_ERR_NAME
    }
    return "UNKNOWN";
}

const char *kgs_err_str(int code) {
    switch (code) {
#define KGS_ERR_STR(name, value, msg)                                                              \
    case (value):                                                                                  \
        return msg;
        KGS_ERRORS(KGS_ERR_STR)
#undef KGS_ERR_STR
    }
    return "unknown error";
}

int kgs_seterr(char *err, size_t errlen, int code, const char *fmt, ...) {
    if (err && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}
