/*
 * log.h - one logger object with levels. The level is checked in the macro
 * before any argument is evaluated, so disabled debug lines cost a compare.
 *
 * Lines go to the logger's stream as: 2026-11-29T17:40:01.123Z level msg
 * A logger is owned by main and passed down; log_write() is thread-safe
 * (one fprintf per line on a stream, which stdio locks).
 */
#ifndef KGS_LOG_H
#define KGS_LOG_H

#include <stdio.h>

typedef enum { LOG_DEBUG = 0, LOG_INFO = 1, LOG_WARN = 2, LOG_ERROR = 3, LOG_OFF = 4 } log_level_t;

typedef struct {
    log_level_t level; /* public: lines below this level are dropped */
    FILE *out;         /* public: borrowed; NULL drops everything */
} logger_t;

/* Parses "debug", "info", "warn", "error", "off". Returns 0 or KGS_EINVAL
 * with a message naming the valid values. */
int log_level_parse(const char *s, log_level_t *out, char *err, size_t errlen);

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

#endif
