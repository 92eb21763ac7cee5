/*
 * fuzz_prom_parse.c - prom_parse() on arbitrary bytes (the whole input is
 * one scrape; it may hold NULs and is never NUL-terminated), once as
 * Prometheus text and once as OpenMetrics.
 *
 * Checked, for each format:
 *   - failure: KGS_EINVAL (or KGS_ENOMEM) with a non-empty message that
 *     starts with "line ";
 *   - every sample, also those delivered before a failure: its name matches
 *     [a-zA-Z_:][a-zA-Z0-9_:]*, label_count <= PROM_MAX_LABELS, each label
 *     name matches [a-zA-Z_][a-zA-Z0-9_]* and is unique, each value is
 *     NUL-terminated, and prom_sample_label() finds it; a timestamp is
 *     finite;
 *   - success: OpenMetrics input contains "# EOF"; a second parse of the
 *     same bytes gives the same samples (count and a checksum); a callback
 *     that stops at the first sample stops the parse with its value after
 *     exactly one call;
 *   - text only: the input behind 5000 blanks (which text skips at the start
 *     of a line) gives the same result and samples. That first line is too
 *     long for the parser's stack buffer, so its heap path is fuzzed too,
 *     which libFuzzer's short inputs would otherwise never reach;
 *   - the incremental parser (prom_stream_*) fed the input in pieces whose
 *     sizes the input's own first bytes choose (1 to 64), and again in two
 *     pieces cut where they say, gives what the whole parse gave: the same
 *     return value, message and samples; and a stream whose line limit is
 *     below the longest line fails with "longer than" exactly when a line
 *     passes it.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "sources/prom_parse.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct {
    unsigned samples;
    uint64_t sum; /* a checksum over names, labels and values */
} tally_t;

static bool metric_name_ok(const char *s) {
    for (size_t i = 0; s[i]; i++) {
        unsigned char c = (unsigned char)s[i];
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
        if (!alpha && !(i > 0 && c >= '0' && c <= '9'))
            return false;
    }
    return s[0] != '\0';
}

static bool label_name_ok(const char *s) {
    return metric_name_ok(s) && strchr(s, ':') == NULL;
}

static uint64_t mix(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211u; /* FNV-1a */
    return h;
}

static int check_sample(void *ud, const prom_sample_t *s) {
    tally_t *t = ud;
    FUZZ_CHECK(s->name != NULL && metric_name_ok(s->name));
    FUZZ_CHECK(s->label_count <= PROM_MAX_LABELS);
    FUZZ_CHECK(s->label_count == 0 || s->labels != NULL);
    t->sum = mix(t->sum, s->name, strlen(s->name) + 1);
    for (unsigned i = 0; i < s->label_count; i++) {
        const prom_label_t *l = &s->labels[i];
        FUZZ_CHECK(l->name != NULL && l->value != NULL);
        FUZZ_CHECK(label_name_ok(l->name));
        for (unsigned k = 0; k < i; k++)
            FUZZ_CHECK(strcmp(s->labels[k].name, l->name) != 0);
        FUZZ_CHECK(prom_sample_label(s, l->name) == l->value);
        t->sum = mix(t->sum, l->name, strlen(l->name) + 1);
        t->sum = mix(t->sum, l->value, strlen(l->value) + 1);
    }
    FUZZ_CHECK(prom_sample_label(s, "not a label name") == NULL);
    if (s->has_timestamp)
        FUZZ_CHECK(isfinite(s->timestamp_s));
    if (!isnan(s->value)) /* NaN payloads need not compare equal */
        t->sum = mix(t->sum, &s->value, sizeof s->value);
    t->samples++;
    return 0;
}

static int stop_at_first(void *ud, const prom_sample_t *s) {
    (void)s;
    (*(unsigned *)ud)++;
    return 12345;
}

static bool contains(const uint8_t *data, size_t size, const char *needle) {
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= size; i++)
        if (memcmp(data + i, needle, n) == 0)
            return true;
    return false;
}

#define PAD 5000

/* Parses data behind PAD blanks as text; the caller compares. */
static int parse_padded(const uint8_t *data, size_t size, tally_t *t) {
    char *buf = malloc(PAD + size);
    FUZZ_CHECK(buf != NULL);
    memset(buf, ' ', PAD);
    if (size > 0)
        memcpy(buf + PAD, data, size);
    int rc = prom_parse(buf, PAD + size, PROM_FORMAT_TEXT, check_sample, t, NULL, 0);
    free(buf);
    return rc;
}

/* Feeds data to a stream in pieces: sizes cycle through the input's first
 * bytes (1 + byte % 64), or two pieces cut at `cut` when cycle is false. */
static int stream_parse(const uint8_t *data, size_t size, prom_format_t fmt, size_t max_line,
                        bool cycle, size_t cut, tally_t *t, char *err, size_t errlen) {
    prom_stream_t *st = prom_stream_new(fmt, max_line, check_sample, t);
    FUZZ_CHECK(st != NULL);
    int rc = 0;
    size_t o = 0, k = 0;
    while (o < size && rc == 0) {
        size_t n =
            cycle ? 1 + (size_t)data[k++ % (size < 8 ? size : 8)] % 64 : (o ? size - o : cut);
        if (n == 0 || n > size - o)
            n = size - o;
        rc = prom_stream_feed(st, (const char *)data + o, n, err, errlen);
        o += n;
    }
    if (rc == 0)
        rc = prom_stream_end(st, err, errlen);
    FUZZ_CHECK(prom_stream_held(st) <= 4096 + 3 * (max_line + 1) + 1024);
    prom_stream_free(st);
    return rc;
}

static size_t longest_line(const uint8_t *data, size_t size) {
    size_t most = 0, cur = 0;
    for (size_t i = 0; i < size; i++) {
        if (data[i] == '\n') {
            cur = 0;
            continue;
        }
        if (++cur > most)
            most = cur;
    }
    return most;
}

static void check_stream(const uint8_t *data, size_t size, prom_format_t fmt, int rc,
                         const char *err, const tally_t *whole) {
    size_t longest = longest_line(data, size);
    for (int way = 0; way < 2; way++) {
        tally_t t = {0, 14695981039346656037u};
        char e[512] = "";
        size_t cut = size ? (size_t)data[0] * 257 % size : 0;
        int got = stream_parse(data, size, fmt, longest + 1, way == 0, cut, &t, e, sizeof e);
        FUZZ_CHECK(got == rc);
        FUZZ_CHECK(strcmp(e, rc ? err : "") == 0);
        FUZZ_CHECK(t.samples == whole->samples && t.sum == whole->sum);
    }
    if (longest >= 2) {
        tally_t t = {0, 14695981039346656037u};
        char e[512] = "";
        int got = stream_parse(data, size, fmt, longest - 1, true, 0, &t, e, sizeof e);
        /* the long line fails, unless the whole parse failed before it */
        FUZZ_CHECK(got != 0);
        FUZZ_CHECK(strstr(e, "longer than") != NULL || got == rc || got == KGS_ENOMEM);
    }
}

static void run(const uint8_t *data, size_t size, prom_format_t fmt) {
    const char *text = (const char *)data;
    char err[512];
    memset(err, 'z', sizeof err);
    tally_t first = {0, 14695981039346656037u};
    int rc = prom_parse(text, size, fmt, check_sample, &first, err, sizeof err);
    if (fmt == PROM_FORMAT_TEXT) {
        tally_t padded = {0, 14695981039346656037u};
        FUZZ_CHECK(parse_padded(data, size, &padded) == rc);
        FUZZ_CHECK(padded.samples == first.samples && padded.sum == first.sum);
    }
    check_stream(data, size, fmt, rc, err, &first);
    if (rc != 0) {
        FUZZ_CHECK(rc == KGS_EINVAL || rc == KGS_ENOMEM);
        FUZZ_CHECK(memchr(err, '\0', sizeof err) != NULL);
        FUZZ_CHECK(err[0] != '\0' && strncmp(err, "line ", 5) == 0);
        /* Without a callback the verdict is the same. */
        FUZZ_CHECK(prom_parse(text, size, fmt, NULL, NULL, NULL, 0) == rc);
        return;
    }
    FUZZ_CHECK(err[0] == '\0');
    if (fmt == PROM_FORMAT_OPENMETRICS)
        FUZZ_CHECK(contains(data, size, "# EOF"));

    tally_t again = {0, 14695981039346656037u};
    FUZZ_CHECK(prom_parse(text, size, fmt, check_sample, &again, NULL, 0) == 0);
    FUZZ_CHECK(again.samples == first.samples);
    FUZZ_CHECK(again.sum == first.sum);

    unsigned calls = 0;
    rc = prom_parse(text, size, fmt, stop_at_first, &calls, NULL, 0);
    FUZZ_CHECK(rc == (first.samples ? 12345 : 0));
    FUZZ_CHECK(calls == (first.samples ? 1u : 0u));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    run(data, size, PROM_FORMAT_TEXT);
    run(data, size, PROM_FORMAT_OPENMETRICS);
    return 0;
}
