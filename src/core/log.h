/*
 * log.h - one logger object with levels. The level is checked in the macro
 * before any argument is evaluated, so disabled debug lines cost a compare.
 *
 * Lines go to the logger's stream, one per call, in the logger's format:
 *   text: 2026-11-29T17:40:01.123Z info  msg
 *   json: {"ts":"2026-11-29T17:40:01.123Z","level":"info","msg":"msg"}
 * (JSON strings are escaped; bytes that are not valid UTF-8 become U+FFFD,
 * so every line is valid JSON whatever the message holds.)
 * A logger is owned by main and passed down; log_write() is thread-safe
 * (one fwrite per line on a stream, which stdio locks).
 *
 * log_ratelimit_t keeps a repeated error from flooding the log: the first
 * line for a key passes, then at most one per interval, carrying the count
 * of lines suppressed in between.
 */
#ifndef KGS_CORE_LOG_H
#define KGS_CORE_LOG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/clock.h"

typedef enum { LOG_DEBUG = 0, LOG_INFO = 1, LOG_WARN = 2, LOG_ERROR = 3, LOG_OFF = 4 } log_level_t;

typedef enum { LOG_FORMAT_TEXT = 0, LOG_FORMAT_JSON = 1 } log_format_t;

typedef struct {
    log_level_t level;   /* public: lines below this level are dropped */
    FILE *out;           /* public: borrowed; NULL drops everything */
    log_format_t format; /* public: TEXT (the zero value) or JSON */
} logger_t;

/* Parses "debug", "info", "warn", "error", "off". Returns 0 or KGS_EINVAL
 * with a message naming the valid values. */
int log_level_parse(const char *s, log_level_t *out, char *err, size_t errlen);

/* "debug", "info", "warn", "error", "off"; "?" out of range. Static. */
const char *log_level_name(log_level_t level);

/* Parses "text" or "json". Returns 0 or KGS_EINVAL with a message naming
 * the valid values. */
int log_format_parse(const char *s, log_format_t *out, char *err, size_t errlen);

/* "text" or "json". Static. */
const char *log_format_name(log_format_t f);

/*
 * Formats one complete line (newline included) into out[0..outlen), NUL
 * terminated, for a message taken at wall time `wall_ms` (Unix ms, UTC).
 * Pure. A line that does not fit is cut short, and a JSON line is cut
 * inside the message so that it stays valid JSON. Returns the length
 * written (excluding the NUL); 0 when outlen < 2.
 */
size_t log_format_line(char *out, size_t outlen, log_format_t format, int64_t wall_ms,
                       log_level_t level, const char *msg);

void log_write(const logger_t *lg, log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define LOG_AT(lg, lvl, ...)                                                                       \
    do {                                                                                           \
        const logger_t *log__lg = (lg);                                                            \
        if (log__lg && log__lg->out && (lvl) >= log__lg->level)                                    \
            log_write(log__lg, (lvl), __VA_ARGS__);                                                \
    } while (0)
#define LOG_DEBUG(lg, ...) LOG_AT(lg, LOG_DEBUG, __VA_ARGS__)
#define LOG_INFO(lg, ...) LOG_AT(lg, LOG_INFO, __VA_ARGS__)
#define LOG_WARN(lg, ...) LOG_AT(lg, LOG_WARN, __VA_ARGS__)
#define LOG_ERROR(lg, ...) LOG_AT(lg, LOG_ERROR, __VA_ARGS__)

/* ---- rate limiting ------------------------------------------------------ */

#define LOG_RATELIMIT_SLOTS 64
#define LOG_RATELIMIT_KEY_MAX 120

/* Private: one key's state. */
typedef struct {
    uint64_t _hash; /* FNV-1a of the whole key; 0 = free slot */
    char _key[LOG_RATELIMIT_KEY_MAX];
    mono_ns_t _last_emit;
    mono_ns_t _last_seen;
    uint64_t _suppressed;
} log_ratelimit_slot_t;

/*
 * Caller-owned storage (embed it). Tracks up to LOG_RATELIMIT_SLOTS keys;
 * beyond that the key seen least recently is forgotten (its suppressed
 * count is lost, and its next line passes as a first one). Not thread-safe:
 * one owner thread (the loop).
 */
typedef struct {
    uint64_t interval_ns; /* public: at most one line per key per interval */
    log_ratelimit_slot_t _slots[LOG_RATELIMIT_SLOTS];
} log_ratelimit_t;

void log_ratelimit_init(log_ratelimit_t *rl, uint64_t interval_ns);

/* A hash of what message says, for a rate-limit key: the same for messages
 * that differ only in their numbers ("last poll 3.2 s ago", "... 14 s
 * ago"), different for different problems (two different typos), so each
 * distinct problem gets its own line and a changing figure no flood. */
uint64_t log_message_shape(const char *message);

/*
 * Pure decision for one line with `key` (borrowed for the call; keys are
 * compared in full) at monotonic time `now`. Returns true when the line
 * should be written: the first time a key is seen, or when `interval_ns`
 * has passed since the last line written for it. Then *suppressed (may be
 * NULL) gets the number of lines refused since that last one, and the
 * count restarts. Returns false (and counts the line) otherwise.
 */
bool log_ratelimit_allow(log_ratelimit_t *rl, const char *key, mono_ns_t now, uint64_t *suppressed);

/*
 * log_write() behind log_ratelimit_allow(): writes the line if the limiter
 * allows it, appending " (N similar messages suppressed)" when N > 0.
 * Use through LOG_RATELIMITED so a disabled level costs a compare and does
 * not count.
 */
void log_write_ratelimited(const logger_t *lg, log_ratelimit_t *rl, const char *key, mono_ns_t now,
                           log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

#define LOG_RATELIMITED(lg, rl, key, now, lvl, ...)                                                \
    do {                                                                                           \
        const logger_t *log__lg = (lg);                                                            \
        if (log__lg && log__lg->out && (lvl) >= log__lg->level)                                    \
            log_write_ratelimited(log__lg, (rl), (key), (now), (lvl), __VA_ARGS__);                \
    } while (0)

#endif
