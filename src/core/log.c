#include "core/log.h"

#include <stdarg.h>
#include <string.h>
#include <time.h>

#include "core/err.h"

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

void log_write(const logger_t *lg, log_level_t level, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);

    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    const char *name = (unsigned)level < LOG_OFF ? level_names[level] : "?";
    /* One fprintf per line so concurrent writers do not interleave. */
    fprintf(lg->out, "%s.%03ldZ %-5s %s\n", stamp, ts.tv_nsec / 1000000L, name, msg);
    fflush(lg->out);
}
