/*
 * bearer_token.c - see the header.
 */
#include "core/bearer_token.h"

#include "core/err.h"

int bearer_token_check(const char *buf, size_t len, size_t max, size_t *tlen, char *err,
                       size_t errlen) {
    while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r' || buf[len - 1] == ' ' ||
                   buf[len - 1] == '\t'))
        len--;
    if (len == 0)
        return kgs_seterr(err, errlen, KGS_EINVAL, "empty (no token)");
    if (len > max)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          "the token is %zu bytes; the limit is %zu (is it the token file?)", len,
                          max);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)buf[i];
        if (c < 0x21 || c > 0x7e)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              "byte %zu of the token is 0x%02x: a bearer token is printable "
                              "ASCII without spaces (is it the token file?)",
                              i, c);
    }
    *tlen = len;
    return 0;
}
