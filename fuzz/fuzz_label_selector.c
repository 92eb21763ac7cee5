/*
 * fuzz_label_selector.c - label_selector_parse(), _format() and _matches()
 * on arbitrary bytes (the whole input is one selector; it may hold NULs and
 * is never NUL-terminated).
 *
 * Checked:
 *   - failure: KGS_EINVAL, a non-empty message, an empty selector left
 *     behind;
 *   - success: the canonical form fits LABEL_SELECTOR_MAX_LEN, parses again
 *     to the same canonical form and to identical bytes; a truncated format
 *     is a prefix of the full one;
 *   - matching never crashes, the empty selector matches everything without
 *     a lookup, and with no labels at all a selector matches exactly when it
 *     has only !=, notin and !key requirements (read from the private
 *     fields: this is a test).
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/err.h"
#include "core/label_selector.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct {
    const uint8_t *data;
    size_t size;
    unsigned calls;
} lookup_ctx_t;

static const char *no_labels(void *ud, const char *key) {
    (void)key;
    ((lookup_ctx_t *)ud)->calls++;
    return NULL;
}

static const char *empty_values(void *ud, const char *key) {
    (void)key;
    ((lookup_ctx_t *)ud)->calls++;
    return "";
}

/* The key itself as the value, or absent, chosen by the key's first byte and
 * the input: a mix of present, absent, equal and different values. */
static const char *mixed_labels(void *ud, const char *key) {
    lookup_ctx_t *c = ud;
    c->calls++;
    unsigned char k = (unsigned char)key[0];
    unsigned char d = c->size ? c->data[k % c->size] : 0;
    switch ((k ^ d) % 4) {
    case 0:
        return NULL;
    case 1:
        return key;
    case 2:
        return "";
    default:
        return "x";
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static label_selector_t sel, again; /* a few KiB: keep them off the stack */
    static char canon[LABEL_SELECTOR_MAX_LEN + 1], canon2[LABEL_SELECTOR_MAX_LEN + 1];
    char err[512];

    int rc = label_selector_parse((const char *)data, size, &sel, err, sizeof err);
    if (rc != 0) {
        FUZZ_CHECK(rc == KGS_EINVAL);
        FUZZ_CHECK(err[0] != '\0');
        FUZZ_CHECK(label_selector_is_empty(&sel));
        return 0;
    }

    size_t n = label_selector_format(&sel, canon, sizeof canon);
    FUZZ_CHECK(n <= LABEL_SELECTOR_MAX_LEN);
    FUZZ_CHECK(strlen(canon) == n);
    FUZZ_CHECK((n == 0) == label_selector_is_empty(&sel));

    rc = label_selector_parse(canon, n, &again, err, sizeof err);
    FUZZ_CHECK(rc == 0);
    FUZZ_CHECK(label_selector_format(&again, canon2, sizeof canon2) == n);
    FUZZ_CHECK(strcmp(canon, canon2) == 0);
    FUZZ_CHECK(memcmp(&sel, &again, sizeof sel) == 0);

    char small[7];
    size_t m = label_selector_format(&sel, small, sizeof small);
    FUZZ_CHECK(m == n);
    FUZZ_CHECK(strncmp(small, canon, sizeof small - 1) == 0 && strlen(small) < sizeof small);

    lookup_ctx_t ctx = {data, size, 0};
    bool only_negative = true;
    for (unsigned i = 0; i < sel._nreqs; i++) {
        label_op_t op = (label_op_t)sel._reqs[i]._op;
        if (op == LABEL_OP_EQ || op == LABEL_OP_IN || op == LABEL_OP_EXISTS)
            only_negative = false;
    }
    FUZZ_CHECK(label_selector_matches(&sel, no_labels, &ctx) == only_negative);
    (void)label_selector_matches(&sel, empty_values, &ctx);
    (void)label_selector_matches(&sel, mixed_labels, &ctx);
    if (label_selector_is_empty(&sel)) {
        FUZZ_CHECK(ctx.calls == 0);
    }
    FUZZ_CHECK(ctx.calls <= 3 * sel._nreqs);
    return 0;
}
