/*
 * log.c - line formatting (text and JSON), writing, and the rate limiter.
 *
 * DESIGN
 * A line is built completely in a stack buffer by the pure
 * log_format_line() and written with one fwrite, so lines from the loop and
 * the sampler thread never interleave. Messages may carry outside bytes (a
 * GPU name, a client's metadata value), so both formats neutralise control
 * characters: a newline inside a message can never forge a second line.
 * JSON output is always valid UTF-8 (invalid bytes become U+FFFD), because
 * one bad line can make a log pipeline drop a whole batch.
 */
#include "core/hash.h"
#include "core/log.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/err.h"
#include "core/strbuf.h"

static const char *const level_names[] = {"debug", "info", "warn", "error", "off"};

int log_level_parse(const char *s, log_level_t *out, char *err, size_t errlen) {
    for (int i = 0; i <= LOG_OFF; i++) {
        if (strcmp(s, level_names[i]) == 0) {
            *out = (log_level_t)i;
            return 0;
        }
    }
    return kgs_seterr(err, errlen, KGS_EINVAL,
                      "invalid log level \"%s\": must be debug, info, warn, error or off", s);
}

const char *log_level_name(log_level_t level) {
    return (unsigned)level <= LOG_OFF ? level_names[level] : "?";
}

int log_format_parse(const char *s, log_format_t *out, char *err, size_t errlen) {
    if (strcmp(s, "text") == 0) {
        *out = LOG_FORMAT_TEXT;
        return 0;
    }
    if (strcmp(s, "json") == 0) {
        *out = LOG_FORMAT_JSON;
        return 0;
    }
    return kgs_seterr(err, errlen, KGS_EINVAL, "invalid log format \"%s\": must be text or json",
                      s);
}

const char *log_format_name(log_format_t f) {
    return f == LOG_FORMAT_JSON ? "json" : "text";
}

/* ---- line formatting ------------------------------------------------------ */

/* A bounded appender: `limit` is the last usable offset (room is kept after
 * it for the line's fixed ending). A piece that does not fit whole is
 * dropped and everything after it too. */
typedef struct {
    char *p;
    size_t len, limit;
    bool full;
} line_t;

static void put(line_t *l, const char *s, size_t n) {
    if (l->full || n > l->limit - l->len) {
        l->full = true;
        return;
    }
    memcpy(l->p + l->len, s, n);
    l->len += n;
}

static void puts_(line_t *l, const char *s) {
    put(l, s, strlen(s));
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if s starts an
 * invalid one (overlong, surrogate, beyond U+10FFFF, truncated). */
static size_t utf8_valid_len(const unsigned char *s) {
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F; /* no UTF-16 surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0; /* also stops at the NUL of a truncated sequence */
    return n;
}

/* Appends msg, escaped for a JSON string (json) or with control characters
 * made visible (text). */
static void put_escaped(line_t *l, const char *msg, bool json) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)msg;
    while (*s && !l->full) {
        unsigned char c = *s;
        char esc[8];
        if (c == '\n' || c == '\r' || c == '\t') {
            esc[0] = '\\';
            esc[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
            if (!json && c == '\t')
                put(l, "\t", 1);
            else
                put(l, esc, 2);
            s++;
        } else if (c < 0x20 || c == 0x7f) {
            if (json)
                memcpy(esc, "\\u00", 4), esc[4] = hex[c >> 4], esc[5] = hex[c & 15];
            else
                memcpy(esc, "\\x", 2), esc[2] = hex[c >> 4], esc[3] = hex[c & 15];
            put(l, esc, json ? 6 : 4);
            s++;
        } else if (json && (c == '"' || c == '\\')) {
            esc[0] = '\\';
            esc[1] = (char)c;
            put(l, esc, 2);
            s++;
        } else if (c < 0x80 || !json) {
            put(l, (const char *)s, 1);
            s++;
        } else {
            size_t n = utf8_valid_len(s);
            if (n == 0) {
                put(l, "\\ufffd", 6);
                s++;
            } else {
                put(l, (const char *)s, n);
                s += n;
            }
        }
    }
}

size_t log_format_line(char *out, size_t outlen, log_format_t format, int64_t wall_ms,
                       log_level_t level, const char *msg) {
    if (!out || outlen < 2)
        return 0;
    if (wall_ms < 0)
        wall_ms = 0;
    time_t secs = (time_t)(wall_ms / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    char stamp[48];
    size_t sl = strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(stamp + sl, sizeof stamp - sl, ".%03dZ", (int)(wall_ms % 1000));

    bool json = format == LOG_FORMAT_JSON;
    const char *ending = json ? "\"}\n" : "\n";
    size_t endlen = strlen(ending);
    if (outlen < endlen + 1) {
        out[0] = '\0';
        return 0;
    }
    line_t l = {.p = out, .len = 0, .limit = outlen - 1 - endlen};
    const char *name = log_level_name(level);
    if (json) {
        puts_(&l, "{\"ts\":\"");
        puts_(&l, stamp);
        puts_(&l, "\",\"level\":\"");
        puts_(&l, name);
        puts_(&l, "\",\"msg\":\"");
    } else {
        char head[80];
        int n = snprintf(head, sizeof head, "%s %-5s ", stamp, name);
        put(&l, head, (size_t)n);
    }
    if (l.full) {
        /* Not even the prefix fits: give up on the line. */
        out[0] = '\0';
        return 0;
    }
    put_escaped(&l, msg ? msg : "", json);
    memcpy(out + l.len, ending, endlen);
    l.len += endlen;
    out[l.len] = '\0';
    return l.len;
}

/* A message longer than this is summarised (its head, then how many bytes
 * were left out), never cut without saying so. Inputs from outside are
 * quoted short already (kgs_quote); this bounds a line, not a message. */
#define LOG_MSG_MAX 16384

/* A message longer than this is summarised (its head, then how many bytes
 * were left out), never cut without saying so. Inputs from outside are
 * quoted short already (kgs_quote); this bounds a line, not a message. */
#define LOG_MSG_MAX 16384

/* Formats the message, appends `suffix` (may be NULL), writes the line. */
static void write_line(const logger_t *lg, log_level_t level, const char *suffix, const char *fmt,
                       va_list ap) __attribute__((format(printf, 4, 0)));
static void write_line(const logger_t *lg, log_level_t level, const char *suffix, const char *fmt,
                       va_list ap) {
    char small[1024];
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    strbuf_t m;
    strbuf_init(&m);
    if (n >= 0 && (size_t)n < sizeof small) {
        strbuf_append(&m, small, (size_t)n);
    } else if (n >= 0) {
        char *full = malloc((size_t)n + 1);
        if (full) {
            vsnprintf(full, (size_t)n + 1, fmt, again);
            size_t keep = (size_t)n > LOG_MSG_MAX ? LOG_MSG_MAX : (size_t)n;
            strbuf_append(&m, full, keep);
            if ((size_t)n > keep)
                strbuf_printf(&m, "... (%zu more bytes)", (size_t)n - keep);
            free(full);
        } else {
            strbuf_printf(&m, "%s... (out of memory for the rest)", small);
        }
    }
    va_end(again);
    if (suffix)
        strbuf_printf(&m, "%s", suffix);
    const char *msg = m.failed ? small : m.s;
    /* Escaping can grow a message up to six times (\u00XX). */
    char stack_line[8192], *line = stack_line;
    size_t linecap = 6 * strlen(msg) + 128;
    if (linecap <= sizeof stack_line || !(line = malloc(linecap))) {
        line = stack_line;
        linecap = sizeof stack_line;
    }
    size_t len = log_format_line(line, linecap, lg->format, clock_wall_ms(), level, msg);
    /* One fwrite per line so concurrent writers do not interleave. */
    fwrite(line, 1, len, lg->out);
    fflush(lg->out);
    if (line != stack_line)
        free(line);
    strbuf_free(&m);
}

void log_write(const logger_t *lg, log_level_t level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    write_line(lg, level, NULL, fmt, ap);
    va_end(ap);
}

/* ---- rate limiting ------------------------------------------------------- */

static uint64_t key_hash(const char *key) {
    uint64_t h = kgs_fnv1a(key);
    return h ? h : 1; /* 0 marks a free slot */
}

uint64_t log_message_shape(const char *m) {
    uint64_t h = KGS_FNV_OFFSET; /* FNV-1a, a run of digits and dots as one '#' */
    bool in_number = false;
    for (; m && *m; m++) {
        bool digit = (*m >= '0' && *m <= '9') || (in_number && *m == '.');
        if (digit && in_number)
            continue;
        in_number = digit;
        h = (h ^ (unsigned char)(digit ? '#' : *m)) * KGS_FNV_PRIME;
    }
    return h;
}

void log_ratelimit_init(log_ratelimit_t *rl, uint64_t interval_ns) {
    memset(rl, 0, sizeof *rl);
    rl->interval_ns = interval_ns;
}

bool log_ratelimit_allow(log_ratelimit_t *rl, const char *key, mono_ns_t now,
                         uint64_t *suppressed) {
    uint64_t h = key_hash(key);
    log_ratelimit_slot_t *slot = NULL, *victim = NULL;
    for (size_t i = 0; i < LOG_RATELIMIT_SLOTS; i++) {
        log_ratelimit_slot_t *s = &rl->_slots[i];
        /* The stored key is a prefix; the hash covers the whole key. */
        if (s->_hash == h && strncmp(s->_key, key, sizeof s->_key - 1) == 0) {
            slot = s;
            break;
        }
        if (!victim ||
            (victim->_hash != 0 && (s->_hash == 0 || s->_last_seen < victim->_last_seen)))
            victim = s;
    }
    if (!slot) {
        slot = victim;
        slot->_hash = h;
        snprintf(slot->_key, sizeof slot->_key, "%s", key);
        slot->_last_emit = now;
        slot->_last_seen = now;
        slot->_suppressed = 0;
        if (suppressed)
            *suppressed = 0;
        return true;
    }
    slot->_last_seen = now;
    /* now < _last_emit cannot happen on one monotonic clock; treat it as
     * "not yet" rather than wrapping. */
    if (now >= slot->_last_emit && now - slot->_last_emit >= rl->interval_ns) {
        if (suppressed)
            *suppressed = slot->_suppressed;
        slot->_suppressed = 0;
        slot->_last_emit = now;
        return true;
    }
    slot->_suppressed++;
    return false;
}

void log_write_ratelimited(const logger_t *lg, log_ratelimit_t *rl, const char *key, mono_ns_t now,
                           log_level_t level, const char *fmt, ...) {
    uint64_t n = 0;
    if (!log_ratelimit_allow(rl, key, now, &n))
        return;
    char suffix[64];
    if (n > 0)
        snprintf(suffix, sizeof suffix, " (%llu similar message%s suppressed)",
                 (unsigned long long)n, n == 1 ? "" : "s");
    va_list ap;
    va_start(ap, fmt);
    write_line(lg, level, n > 0 ? suffix : NULL, fmt, ap);
    va_end(ap);
}
