/*
 * grpc_frame.c - gRPC message framing, grpc-timeout, grpc-message
 * percent-encoding and the content-type check.
 *
 * Source: the gRPC over HTTP/2 protocol description (PROTOCOL-HTTP2.md).
 * Everything here is a function of its arguments; errors are reported as
 * early as the bytes allow, and a result never changes once reported, so a
 * caller may feed bytes in any split.
 */
#include "net/grpc_frame.h"

#include <stdio.h>
#include <string.h>

#include "core/err.h"

static const char *const status_names[] = {
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
};

const char *grpc_status_name(int code) {
    if (code < 0 || (size_t)code >= sizeof status_names / sizeof status_names[0])
        return "UNKNOWN_STATUS";
    return status_names[code];
}

/*
 * The checks follow the order in which bytes arrive: the flag byte is
 * judged as soon as it is in, the length as soon as all four length bytes
 * are in. So the answer for a prefix is INCOMPLETE or the final answer, and
 * an oversized message is refused before any of its body is buffered.
 */
uint32_t grpc_frame_declared_length(const uint8_t prefix[5]) {
    return (uint32_t)prefix[1] << 24 | (uint32_t)prefix[2] << 16 | (uint32_t)prefix[3] << 8 |
           (uint32_t)prefix[4];
}

int grpc_frame_decode(const uint8_t *buf, size_t len, size_t max_len, const uint8_t **msg,
                      size_t *msg_len, size_t *consumed) {
    *msg = NULL;
    *msg_len = 0;
    *consumed = 0;
    if (len < 1)
        return GRPC_FRAME_INCOMPLETE;
    if (buf[0] > 1)
        return GRPC_FRAME_MALFORMED;
    if (buf[0] == 1)
        return GRPC_FRAME_COMPRESSED;
    if (len < 5)
        return GRPC_FRAME_INCOMPLETE;
    uint32_t n = grpc_frame_declared_length(buf);
    if (n > max_len) {
        *msg_len = n;
        return GRPC_FRAME_TOO_LARGE;
    }
    /* n <= max_len fits size_t, and len >= 5, so comparing len - 5 is safe. */
    if (len - 5 < n)
        return GRPC_FRAME_INCOMPLETE;
    *msg = buf + 5;
    *msg_len = n;
    *consumed = 5 + (size_t)n;
    return GRPC_FRAME_COMPLETE;
}

void grpc_frame_prefix(uint8_t out[5], uint32_t msg_len) {
    out[0] = 0;
    out[1] = (uint8_t)(msg_len >> 24);
    out[2] = (uint8_t)(msg_len >> 16);
    out[3] = (uint8_t)(msg_len >> 8);
    out[4] = (uint8_t)msg_len;
}

/* grpc-timeout units, finest first; the formatter relies on that order. */
static const struct {
    char unit;
    uint64_t ns;
} timeout_units[] = {
    {'n', 1u},
    {'u', 1000u},
    {'m', 1000000u},
    {'S', UINT64_C(1000000000)},
    {'M', UINT64_C(60000000000)},
    {'H', UINT64_C(3600000000000)},
};
#define TIMEOUT_NUNITS (sizeof timeout_units / sizeof timeout_units[0])
#define TIMEOUT_MAX_VALUE UINT64_C(99999999) /* 8 digits */

int grpc_timeout_parse(const char *v, size_t len, uint64_t *out_ns) {
    *out_ns = 0;
    /* TimeoutValue is 1 to 8 digits; one more byte for the unit. */
    if (len < 2 || len > 9)
        return KGS_EINVAL;
    uint64_t value = 0;
    for (size_t i = 0; i + 1 < len; i++) {
        if (v[i] < '0' || v[i] > '9')
            return KGS_EINVAL;
        value = value * 10 + (uint64_t)(v[i] - '0');
    }
    for (size_t u = 0; u < TIMEOUT_NUNITS; u++) {
        if (v[len - 1] != timeout_units[u].unit)
            continue;
        /* 99999999 H is about 3.6e20 ns, past UINT64_MAX: saturate. */
        if (value > UINT64_MAX / timeout_units[u].ns)
            *out_ns = UINT64_MAX;
        else
            *out_ns = value * timeout_units[u].ns;
        return 0;
    }
    return KGS_EINVAL;
}

/*
 * First the coarsest unit that holds ns exactly in at most 8 digits (the
 * fewest digits for an exact value). Failing that, the finest unit whose
 * rounded-up value fits: a coarser unit would round up further. The chosen
 * unit's value is then above 99999999 / 1000 of the next finer unit's
 * (unit ratios are at most 1000), so the rounding adds less than 1e-5.
 * UINT64_MAX ns is about 5124096 H, so some unit always fits.
 */
size_t grpc_timeout_format(uint64_t ns, char *out, size_t outlen) {
    uint64_t value = 0;
    char unit = 'n';
    bool found = ns == 0; /* "0n" rather than the equally valid "0H" */
    for (size_t u = TIMEOUT_NUNITS; u-- > 0 && !found;) {
        uint64_t d = timeout_units[u].ns;
        if (ns % d == 0 && ns / d <= TIMEOUT_MAX_VALUE) {
            value = ns / d;
            unit = timeout_units[u].unit;
            found = true;
        }
    }
    for (size_t u = 0; u < TIMEOUT_NUNITS && !found; u++) {
        uint64_t d = timeout_units[u].ns;
        uint64_t up = ns / d + (ns % d != 0);
        if (up <= TIMEOUT_MAX_VALUE) {
            value = up;
            unit = timeout_units[u].unit;
            found = true;
        }
    }
    char tmp[24];
    int n = snprintf(tmp, sizeof tmp, "%llu%c", (unsigned long long)value, unit);
    size_t total = n > 0 ? (size_t)n : 0;
    if (outlen > 0) {
        size_t w = total < outlen - 1 ? total : outlen - 1;
        memcpy(out, tmp, w);
        out[w] = '\0';
    }
    return total;
}

static const char hex_upper[] = "0123456789ABCDEF";

size_t grpc_percent_encode(const char *in, size_t len, char *out, size_t outlen) {
    size_t n = 0; /* full encoded length so far */
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)in[i];
        char enc[3];
        size_t k;
        if (c < 0x20 || c > 0x7e || c == '%') {
            enc[0] = '%';
            enc[1] = hex_upper[c >> 4];
            enc[2] = hex_upper[c & 0xf];
            k = 3;
        } else {
            enc[0] = (char)c;
            k = 1;
        }
        for (size_t j = 0; j < k; j++, n++)
            if (outlen > 0 && n < outlen - 1)
                out[n] = enc[j];
    }
    if (outlen > 0)
        out[n < outlen - 1 ? n : outlen - 1] = '\0';
    return n;
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

size_t grpc_percent_decode(const char *in, size_t len, char *out, size_t outlen) {
    size_t n = 0;
    for (size_t i = 0; i < len; i++, n++) {
        char c = in[i];
        if (c == '%' && len - i >= 3) {
            int hi = hex_value(in[i + 1]), lo = hex_value(in[i + 2]);
            if (hi >= 0 && lo >= 0) {
                c = (char)(unsigned char)(hi << 4 | lo);
                i += 2;
            }
        }
        if (outlen > 0 && n < outlen - 1)
            out[n] = c;
    }
    if (outlen > 0)
        out[n < outlen - 1 ? n : outlen - 1] = '\0';
    return n;
}

static bool ascii_prefix_icase(const char *v, size_t len, const char *lit, size_t litlen) {
    if (len < litlen)
        return false;
    for (size_t i = 0; i < litlen; i++) {
        char c = v[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != lit[i])
            return false;
    }
    return true;
}

bool grpc_content_type_ok(const char *v, size_t len) {
    static const char base[] = "application/grpc";
    static const char proto[] = "+proto";
    size_t i = sizeof base - 1;
    if (!ascii_prefix_icase(v, len, base, i))
        return false;
    if (ascii_prefix_icase(v + i, len - i, proto, sizeof proto - 1))
        i += sizeof proto - 1;
    while (i < len && (v[i] == ' ' || v[i] == '\t'))
        i++;
    return i == len || v[i] == ';';
}
