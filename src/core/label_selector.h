/*
 * label_selector.h - Kubernetes label selectors in their string form (what
 * `kubectl -l` accepts), parsed into a fixed-size struct and matched against
 * a set of labels.
 *
 * Grammar (comma-separated requirements, all of which must hold):
 *   key=value  key==value  key!=value  key in (v1,v2)  key notin (v1,v2)
 *   key        (the label exists)       !key           (it does not)
 * Whitespace (space, tab, CR, LF) may surround any token. Keys are
 * [prefix/]name: prefix a DNS subdomain (lowercase, <= 253), name <= 63 of
 * [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?. Values use the name charset and
 * length; only '=', '==' and '!=' take an empty value. docs/configuration.md
 * has the user-facing description.
 *
 * Pure: no I/O, no allocation, no globals. Any thread may call any function;
 * a selector is immutable once parsed and may be shared read-only.
 */
#ifndef KGS_CORE_LABEL_SELECTOR_H
#define KGS_CORE_LABEL_SELECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LABEL_SELECTOR_MAX_LEN 1024  /* bytes of input, and of the canonical form */
#define LABEL_SELECTOR_MAX_REQS 16   /* requirements */
#define LABEL_SELECTOR_MAX_VALUES 16 /* values in one in/notin set */

typedef enum {
    LABEL_OP_EQ,         /* key=value, key==value */
    LABEL_OP_NE,         /* key!=value: also true when the label is absent */
    LABEL_OP_IN,         /* key in (...) */
    LABEL_OP_NOTIN,      /* key notin (...): also true when the label is absent */
    LABEL_OP_EXISTS,     /* key */
    LABEL_OP_NOT_EXISTS, /* !key */
} label_op_t;

/* Private: read it through the functions below. */
typedef struct {
    uint8_t _op;                                 /* label_op_t */
    uint8_t _nvalues;                            /* 0 for EXISTS/NOT_EXISTS, 1 for EQ/NE */
    uint16_t _key;                               /* offset of a NUL-terminated key in _text */
    uint16_t _values[LABEL_SELECTOR_MAX_VALUES]; /* offsets in _text, sorted */
} label_requirement_t;

/*
 * A parsed selector. All fields are private. The storage is the caller's
 * (embed it, or put it on the stack); there is nothing to release. Two
 * selectors with the same canonical form are byte-for-byte equal, so memcmp
 * compares them.
 */
typedef struct label_selector {
    uint32_t _nreqs;                                    /* 0: selects everything */
    label_requirement_t _reqs[LABEL_SELECTOR_MAX_REQS]; /* sorted canonically */
    char _text[LABEL_SELECTOR_MAX_LEN + 1];             /* keys and values, NUL-separated */
} label_selector_t;

/*
 * Parses the slice (s, len) into *out (fully overwritten, also on error;
 * left empty on error). s need not be NUL-terminated and may be NULL when
 * len is 0. Empty or whitespace-only input is the empty selector.
 * Requirements are sorted by key, operator and values; repeated values in a
 * set and repeated requirements are merged.
 *
 * Returns 0, or KGS_EINVAL with a message in err (NULL allowed) naming the
 * bad requirement, the bad part and what would be valid.
 */
int label_selector_parse(const char *s, size_t len, label_selector_t *out, char *err,
                         size_t errlen);

/* The label's value (borrowed; valid at least until the matcher returns), or
 * NULL when the object has no such label. key is NUL-terminated. */
typedef const char *(*label_lookup_fn)(void *ud, const char *key);

/* true when every requirement holds for the labels that lookup reports.
 * The empty selector matches everything (lookup is not called). */
bool label_selector_matches(const label_selector_t *sel, label_lookup_fn lookup, void *ud);

/* true for the empty selector (it selects everything). */
bool label_selector_is_empty(const label_selector_t *sel);

/*
 * Writes the canonical form ("a=b,!c,d in (x,y)" sorted as above, '=='
 * written '=', one space around in/notin) into out, NUL-terminated and cut
 * to outlen - 1 bytes if needed; out may be NULL when outlen is 0. Parsing
 * the canonical form gives the same selector. Returns the full length (like
 * snprintf); it is at most LABEL_SELECTOR_MAX_LEN.
 */
size_t label_selector_format(const label_selector_t *sel, char *out, size_t outlen);

#endif
