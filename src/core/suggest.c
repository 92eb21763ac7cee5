/*
 * suggest.c - the program's one "did you mean". Names (keys, flags) allow a
 * little more distance than enum values, because they are longer and typed
 * from memory; values are short, so one edit already changes a lot ("min"
 * and "max" are two apart), and a synonym table catches the words people
 * reach for instead ("average").
 */
#include "core/suggest.h"

#include <stdbool.h>
#include <string.h>

static int lower(int c) {
    return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

size_t suggest_distance(const char *a, size_t an, const char *b, size_t bn) {
    size_t row[SUGGEST_MAX_LEN + 1];
    if (an > SUGGEST_MAX_LEN || bn > SUGGEST_MAX_LEN)
        return (size_t)-1;
    for (size_t j = 0; j <= bn; j++)
        row[j] = j;
    for (size_t i = 1; i <= an; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= bn; j++) {
            size_t up = row[j];
            size_t cost = lower((unsigned char)a[i - 1]) == lower((unsigned char)b[j - 1]) ? 0 : 1;
            size_t best = diag + cost;
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[bn];
}

/*
 * Ukkonen's cut-off: only the cells within `max` of the diagonal can lead
 * to a distance of at most max, and once a whole row exceeds max the
 * answer does. A rejected key is compared with every known key on each
 * parse that meets it, so this is what the fuzzer and a caller sending
 * junk keys pay: O(n * (2 max + 1)) instead of O(n * m), and usually a
 * length check or two rows.
 */
size_t suggest_distance_within(const char *a, size_t an, const char *b, size_t bn, size_t max) {
    if (an > SUGGEST_MAX_LEN || bn > SUGGEST_MAX_LEN)
        return (size_t)-1;
    if (max >= SUGGEST_MAX_LEN)
        return suggest_distance(a, an, b, bn);
    size_t over = max + 1;
    if ((an > bn ? an - bn : bn - an) > max)
        return over;
    size_t row[SUGGEST_MAX_LEN + 1];
    for (size_t j = 0; j <= bn; j++)
        row[j] = j <= max ? j : over; /* cells right of the band stay `over` until reached */
    for (size_t i = 1; i <= an; i++) {
        size_t lo = i > max ? i - max : 1;
        size_t hi = i + max < bn ? i + max : bn;
        size_t diag = row[lo - 1];
        row[lo - 1] = lo == 1 && i <= max ? i : over; /* left of the band */
        size_t row_min = row[lo - 1];
        for (size_t j = lo; j <= hi; j++) {
            size_t up = row[j];
            size_t cost = lower((unsigned char)a[i - 1]) == lower((unsigned char)b[j - 1]) ? 0 : 1;
            size_t best = diag + cost;
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            if (best > over)
                best = over;
            row[j] = best;
            diag = up;
            if (best < row_min)
                row_min = best;
        }
        if (row_min > max)
            return over;
    }
    return row[bn] < over ? row[bn] : over;
}

/* (p, n) is a case-insensitive prefix of s. */
static bool is_ci_prefix(const char *p, size_t n, const char *s) {
    size_t sl = strlen(s);
    if (n > sl)
        return false;
    for (size_t i = 0; i < n; i++)
        if (lower((unsigned char)p[i]) != lower((unsigned char)s[i]))
            return false;
    return true;
}

const char *suggest_name(const char *p, size_t n, const char *const *names, size_t count) {
    if (!p || n == 0 || n > SUGGEST_MAX_LEN)
        return NULL;
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    size_t limit = n <= 8 ? 2 : 3;
    for (size_t k = 0; k < count; k++) {
        if (!names[k])
            continue;
        size_t nl = strlen(names[k]);
        /* a prefix's distance is the letters it lacks; anything else must
         * be within the limit */
        bool prefix = n >= 5 && is_ci_prefix(p, n, names[k]);
        size_t d = prefix ? nl - n : suggest_distance_within(p, n, names[k], nl, limit);
        if (d > limit && !prefix)
            continue;
        if (d < best_d) {
            best_d = d;
            best = names[k];
        }
    }
    return best;
}

const char *suggest_value(const char *p, size_t n, const char *const *values, size_t count,
                          const suggest_synonym_t *synonyms, size_t nsyn) {
    if (!p || n == 0 || n > SUGGEST_MAX_LEN)
        return NULL;
    for (size_t i = 0; i < nsyn; i++) {
        size_t sl = strlen(synonyms[i].word);
        if (sl == n && suggest_distance_within(p, n, synonyms[i].word, sl, 0) == 0)
            for (size_t k = 0; k < count; k++)
                if (values[k] && strcmp(values[k], synonyms[i].means) == 0)
                    return values[k];
    }
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    for (size_t k = 0; k < count; k++) {
        if (!values[k])
            continue;
        size_t nl = strlen(values[k]);
        size_t limit = nl >= 5 ? 2 : 1;
        bool typed_prefix = n >= 3 && is_ci_prefix(p, n, values[k]);
        bool value_prefix = n >= 3 && nl <= n && is_ci_prefix(p, nl, values[k]);
        size_t d = typed_prefix   ? nl - n
                   : value_prefix ? n - nl
                                  : suggest_distance_within(p, n, values[k], nl, limit);
        if (d > limit && !typed_prefix && !value_prefix)
            continue;
        if (d < best_d) {
            best_d = d;
            best = values[k];
        }
    }
    return best;
}
