/*
 * suggest.h - "did you mean": the closest known name to a mistyped one, for
 * every place that rejects a name (server flags, trigger metadata keys, enum
 * values, the CLI's --format). One set of rules, so a typo gets the same
 * help wherever it is made.
 *
 * Pure: no I/O, no allocation, no globals. Any thread may call any function.
 */
#ifndef KGS_CORE_SUGGEST_H
#define KGS_CORE_SUGGEST_H

#include <stddef.h>

/* Longest input or candidate considered, in bytes; longer ones get no
 * suggestion (the distance table is on the stack). */
#define SUGGEST_MAX_LEN 64

/* A word people write for a value, and the value they mean ("mean" -> "avg"). */
typedef struct {
    const char *word;
    const char *means;
} suggest_synonym_t;

/* Case-insensitive (ASCII) Levenshtein distance between (a, an) and (b, bn);
 * (size_t)-1 when either is longer than SUGGEST_MAX_LEN. */
size_t suggest_distance(const char *a, size_t an, const char *b, size_t bn);

/* suggest_distance() when it is at most max, else max + 1 (also (size_t)-1
 * for inputs over SUGGEST_MAX_LEN), in O(min(an, bn) * (2 max + 1)) time
 * and at once when the lengths differ by more than max. */
size_t suggest_distance_within(const char *a, size_t an, const char *b, size_t bn, size_t max);

/*
 * The name (a key or a flag) in names[0 .. count) closest to (p, n), or NULL
 * when none is close: the same letters in another case, an edit distance of
 * at most 2 (3 for inputs over 8 bytes), or (p, n) being a case-insensitive
 * prefix of the name of at least 5 bytes ("pollInterval"). The smallest
 * distance wins, the earlier name on a tie. Returns one of names (borrowed);
 * NULL entries in names are skipped.
 */
const char *suggest_name(const char *p, size_t n, const char *const *names, size_t count);

/*
 * The value in values[0 .. count) closest to (p, n), or NULL: a synonym whose
 * word is (p, n) (case-insensitive) and whose meaning is one of values, else
 * the same letters in another case, at most 1 edit (2 for values of 5+
 * bytes), or either being a case-insensitive prefix of the other (3+ bytes
 * typed: "ign" -> "ignore", "maximum" -> "max"). synonyms may be NULL when
 * nsyn is 0. Returns one of values (borrowed).
 */
const char *suggest_value(const char *p, size_t n, const char *const *values, size_t count,
                          const suggest_synonym_t *synonyms, size_t nsyn);

#endif
