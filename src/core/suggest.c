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
        size_t d = suggest_distance(p, n, names[k], strlen(names[k]));
        if (d > limit && !(n >= 5 && is_ci_prefix(p, n, names[k])))
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
        if (sl == n && suggest_distance(p, n, synonyms[i].word, sl) == 0)
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
        size_t d = suggest_distance(p, n, values[k], nl);
        size_t limit = nl >= 5 ? 2 : 1;
        bool prefix = n >= 3 && (is_ci_prefix(p, n, values[k]) ||
                                 (nl <= n && is_ci_prefix(p, nl, values[k])));
        if (d > limit && !prefix)
            continue;
        if (d < best_d) {
            best_d = d;
            best = values[k];
        }
    }
    return best;
}
