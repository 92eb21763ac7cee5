#include "core/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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

const char *kgs_quote(char *buf, size_t buflen, const char *p, size_t n) {
    size_t o = 0;
    buf[o++] = '"';
    size_t shown = n < KGS_QUOTE_MAX ? n : KGS_QUOTE_MAX;
    for (size_t i = 0; i < shown && o + 6 < buflen; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '"' || c == '\\') {
            buf[o++] = '\\';
            buf[o++] = (char)c;
        } else if (c < 0x20 || c >= 0x7f) {
            o += (size_t)snprintf(buf + o, buflen - o, "\\x%02x", c);
        } else {
            buf[o++] = (char)c;
        }
    }
    buf[o++] = '"';
    if (shown < n && o + 4 < buflen) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o] = '\0';
    return buf;
}
