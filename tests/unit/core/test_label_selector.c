/* test_label_selector.c - the string form of Kubernetes label selectors:
 * every operator, whitespace, the empty selector, every error and its
 * message, the canonical form, and matching truth tables. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/err.h"
#include "core/label_selector.h"

/* ---- helpers --------------------------------------------------------------- */

/* Parses s (NUL-terminated) and returns its canonical form in buf. */
static const char *canon(const char *s, char *buf, size_t buflen) {
    label_selector_t sel;
    char err[512] = "";
    memset(&sel, 0x5a, sizeof sel); /* sentinel */
    int rc = label_selector_parse(s, strlen(s), &sel, err, sizeof err);
    if (rc != 0)
        fail_msg("expected %s to parse, got %d: %s", s, rc, err);
    size_t n = label_selector_format(&sel, buf, buflen);
    assert_int_equal(n, strlen(buf));
    return buf;
}

#define CANON(in, want)                                                                            \
    do {                                                                                           \
        char buf_[LABEL_SELECTOR_MAX_LEN + 1];                                                     \
        assert_string_equal(canon(in, buf_, sizeof buf_), want);                                   \
    } while (0)

/* Expects s to be rejected with both needles (NULL: skip) in the message and
 * an empty selector left behind. */
static void expect_error(const char *s, size_t len, const char *needle1, const char *needle2) {
    label_selector_t sel;
    char err[512] = "";
    memset(&sel, 0x5a, sizeof sel);
    int rc = label_selector_parse(s, len, &sel, err, sizeof err);
    if (rc != KGS_EINVAL)
        fail_msg("expected KGS_EINVAL for \"%.*s\", got %d", (int)len, s, rc);
    if (needle1 && !strstr(err, needle1))
        fail_msg("\"%.*s\": error lacks \"%s\": %s", (int)len, s, needle1, err);
    if (needle2 && !strstr(err, needle2))
        fail_msg("\"%.*s\": error lacks \"%s\": %s", (int)len, s, needle2, err);
    assert_true(label_selector_is_empty(&sel));
    char out[8] = "x";
    assert_int_equal(label_selector_format(&sel, out, sizeof out), 0);
    assert_string_equal(out, "");
}

#define ERR(s, n1, n2) expect_error(s, strlen(s), n1, n2)

/* Labels for matching: "k=v" strings, NULL-terminated. */
typedef struct {
    const char *const *kv;
    int calls;
} labels_t;

static const char *lookup(void *ud, const char *key) {
    labels_t *l = ud;
    l->calls++;
    size_t kl = strlen(key);
    for (const char *const *p = l->kv; *p; p++)
        if (strncmp(*p, key, kl) == 0 && (*p)[kl] == '=')
            return *p + kl + 1;
    return NULL;
}

static bool matches(const char *selector, const char *const *kv) {
    label_selector_t sel;
    char err[512] = "";
    if (label_selector_parse(selector, strlen(selector), &sel, err, sizeof err) != 0)
        fail_msg("%s: %s", selector, err);
    labels_t l = {kv, 0};
    return label_selector_matches(&sel, lookup, &l);
}

#define LABELS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define NO_LABELS ((const char *const[]){NULL})

/* ---- parsing --------------------------------------------------------------- */

static void test_label_selector_empty_input_selects_everything(void **state) {
    (void)state;
    static const char *empties[] = {"", " ", "\t\r\n "};
    for (int i = 0; i < 3; i++) {
        label_selector_t sel;
        memset(&sel, 0x5a, sizeof sel);
        assert_int_equal(label_selector_parse(empties[i], strlen(empties[i]), &sel, NULL, 0), 0);
        assert_true(label_selector_is_empty(&sel));
        labels_t l = {NO_LABELS, 0};
        assert_true(label_selector_matches(&sel, lookup, &l));
        assert_int_equal(l.calls, 0);
        char out[4] = "x";
        assert_int_equal(label_selector_format(&sel, out, sizeof out), 0);
        assert_string_equal(out, "");
    }
    label_selector_t sel;
    assert_int_equal(label_selector_parse(NULL, 0, &sel, NULL, 0), 0);
    assert_true(label_selector_is_empty(&sel));
    assert_int_equal(label_selector_parse(NULL, 3, &sel, NULL, 0), KGS_EINVAL);
}

static void test_label_selector_parses_every_operator(void **state) {
    (void)state;
    CANON("app=web", "app=web");
    CANON("app==web", "app=web");
    CANON("app!=web", "app!=web");
    CANON("tier in (frontend,backend)", "tier in (backend,frontend)");
    CANON("tier notin (cache)", "tier notin (cache)");
    CANON("gpu", "gpu");
    CANON("!canary", "!canary");
    CANON("app=", "app=");
    CANON("app==", "app=");
    CANON("app!=", "app!=");
    label_selector_t sel;
    assert_int_equal(label_selector_parse("gpu", 3, &sel, NULL, 0), 0);
    assert_false(label_selector_is_empty(&sel));
}

static void test_label_selector_ignores_whitespace_around_tokens(void **state) {
    (void)state;
    CANON("  app = web ,\ttier  in(a , b)  ,! canary\n", "app=web,!canary,tier in (a,b)");
    CANON("a!= x", "a!=x");
    CANON("a notin(x)", "a notin (x)");
    CANON("a = , b", "a=,b");
    CANON("a in\t(\tx\t)", "a in (x)");
}

static void test_label_selector_canonical_form_is_sorted_and_deduplicated(void **state) {
    (void)state;
    CANON("z=1,a=2,m", "a=2,m,z=1");
    /* same key: operator order (=, !=, in, notin, exists, !exists), then values */
    CANON("!k,k,k notin (a),k in (a),k!=a,k=a", "k=a,k!=a,k in (a),k notin (a),k,!k");
    CANON("k=b,k=a", "k=a,k=b");
    CANON("k in (c,a,b,a,c)", "k in (a,b,c)");
    CANON("app=web,app==web,app=web", "app=web");
    CANON("k in (b,a),k in (a,b)", "k in (a,b)");
    CANON("k in (a),k in (a,b)", "k in (a),k in (a,b)");
    /* byte order: upper case before lower case, '-' before digits */
    CANON("b=1,B=1,a-b=1,a0=1", "B=1,a-b=1,a0=1,b=1");
}

static void test_label_selector_accepts_kubernetes_keys_and_values(void **state) {
    (void)state;
    CANON("app.kubernetes.io/name=vllm", "app.kubernetes.io/name=vllm");
    CANON("nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3",
          "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3");
    CANON("example.com/My_Key.v2=A.b-c_D", "example.com/My_Key.v2=A.b-c_D");
    CANON("a=1,b-c=x,d_e=y,f.g=z", "a=1,b-c=x,d_e=y,f.g=z");
    /* values that are keywords elsewhere */
    CANON("k=in,j=notin", "j=notin,k=in");
    CANON("k in (in,notin)", "k in (in,notin)");
    /* 63-character name and value, 253-character prefix */
    char buf[600];
    char name[64], prefix[254];
    memset(name, 'n', 63);
    name[63] = '\0';
    for (int i = 0; i < 253; i++)
        prefix[i] = i % 50 == 49 ? '.' : 'p';
    prefix[253] = '\0';
    snprintf(buf, sizeof buf, "%s/%s=%s", prefix, name, name);
    CANON(buf, buf);
}

static void test_label_selector_uses_the_length_not_a_nul_terminator(void **state) {
    (void)state;
    const char buf[] = "app=web,tier=x";
    label_selector_t sel;
    assert_int_equal(label_selector_parse(buf, 7, &sel, NULL, 0), 0);
    char out[64];
    label_selector_format(&sel, out, sizeof out);
    assert_string_equal(out, "app=web");
    /* a NUL inside the slice is an invalid byte, not the end */
    expect_error("app=w\0b", 7, "invalid value \"w\\x00b\"", NULL);
}

/* ---- errors ---------------------------------------------------------------- */

static void test_label_selector_rejects_invalid_keys_naming_the_rule(void **state) {
    (void)state;
    ERR("-app=web", "requirement \"-app=web\": invalid key \"-app\"", "1-63 characters");
    ERR("app-=web", "invalid key \"app-\"", "starting and ending with a letter or digit");
    ERR("a@b", "invalid key \"a@b\"", NULL);
    ERR("Example.com/app=x", "invalid key \"Example.com/app\": its prefix", "DNS subdomain");
    ERR("/app=x", "its prefix", NULL);
    ERR("a..b/app=x", "its prefix", NULL);
    ERR("-a.com/app=x", "its prefix", NULL);
    ERR("a.com/=x", "its name part \"\"", NULL);
    ERR("a.com/b/c=x", "its name part \"b/c\"", NULL);
    ERR("a.com/-b=x", "its name part \"-b\"", NULL);
    char key[80];
    memset(key, 'k', 64);
    strcpy(key + 64, "=v");
    ERR(key, "invalid key", "1-63 characters");
    char prefixed[300];
    memset(prefixed, 'p', 254);
    strcpy(prefixed + 254, "/k=v");
    ERR(prefixed, "its prefix", "at most 253 characters");
    ERR("in=x", "expected a label key, found the keyword \"in\"", NULL);
    ERR("notin in (x)", "keyword \"notin\"", NULL);
    ERR("!in", "keyword \"in\"", NULL);
}

static void test_label_selector_rejects_invalid_values_naming_the_rule(void **state) {
    (void)state;
    ERR("app=web!", "expected ',' or the end after the value, found \"!\"", NULL);
    ERR("app=-web", "invalid value \"-web\"", "empty or at most 63 characters");
    ERR("app!=we b", "expected ',' or the end after the value, found \"b\"", NULL);
    ERR("app=a/b", "invalid value \"a/b\"", NULL);
    ERR("app=caf\xc3\xa9", "invalid value \"caf\\xc3\\xa9\"", NULL);
    char v[80];
    strcpy(v, "k=");
    memset(v + 2, 'v', 64);
    v[66] = '\0';
    ERR(v, "invalid value", "at most 63 characters");
    ERR("k in (a,-b)", "invalid value \"-b\"", NULL);
    ERR("k=(x)", "expected a value after '=', found \"(\"", NULL);
    ERR("k==!x", "expected a value after '=='", NULL);
}

static void test_label_selector_rejects_bad_operators_and_structure(void **state) {
    (void)state;
    ERR("app web",
        "expected ',' or an operator (=, ==, !=, in, notin) after the key, found \"web\"", NULL);
    ERR("app IN (a)", "found \"IN\"", "operators are lowercase");
    ERR("app not in (a)", "the operator is written notin", NULL);
    ERR("replicas>1", "'>' and '<' are not supported", NULL);
    ERR("replicas<1", "'>' and '<' are not supported", NULL);
    ERR("a=b=c", "expected ',' or the end after the value, found \"=\"", NULL);
    ERR("a!b", "after the key, found \"!\"", NULL);
    ERR("a)", "after the key, found \")\"", NULL);
    ERR("=x", "expected a label key or '!key', found \"=\"", NULL);
    ERR("!=x", "expected a label key or '!key', found \"!=\"", NULL);
    ERR("(a)", "expected a label key or '!key', found \"(\"", NULL);
    ERR("!", "expected a label key after '!', found the end of the requirement", NULL);
    ERR("!!a", "expected a label key after '!', found \"!\"", NULL);
    ERR("!a=b", "expected ',' or the end after the key, found \"=\"", NULL);
    ERR("a,b=c,", "empty requirement at byte 6 of \"a,b=c,\"", "none at the end");
    ERR(",a", "empty requirement at byte 0", NULL);
    ERR("a,,b", "empty requirement at byte 2", NULL);
    ERR("a, ,b", "empty requirement at byte 3", NULL);
}

static void test_label_selector_rejects_bad_sets(void **state) {
    (void)state;
    ERR("k in a", "expected '(' after in, found \"a\"", NULL);
    ERR("k notin", "expected '(' after notin, found the end of the requirement", NULL);
    ERR("k in ()", "empty value in the in set", "non-empty values");
    ERR("k in (a,)", "requirement \"k in (a,)\": empty value in the in set", NULL);
    ERR("k notin (,a)", "empty value in the notin set", NULL);
    ERR("k in (a,,b)", "empty value", NULL);
    ERR("k in (a b)", "expected ',' or ')' in the in set, found \"b\"", NULL);
    ERR("k in (a", "expected ',' or ')' in the in set, found the end", NULL);
    ERR("k in (a,=)", "expected a value in the in set, found \"=\"", NULL);
    ERR("k in (a) x", "expected ',' or the end after ')', found \"x\"", NULL);
    /* the requirement in the message is the whole requirement, parentheses included */
    ERR("a=1, k in (a,b,-c), z", "requirement \"k in (a,b,-c)\"", NULL);
}

static void test_label_selector_enforces_its_limits(void **state) {
    (void)state;
    char buf[2 * LABEL_SELECTOR_MAX_LEN];
    /* 16 requirements fit, 17 do not */
    buf[0] = '\0';
    for (int i = 0; i < 17; i++) {
        char r[16];
        snprintf(r, sizeof r, "%sk%02d", i ? "," : "", i);
        strcat(buf, r);
    }
    ERR(buf, "more than 16 requirements", NULL);
    buf[strlen(buf) - 4] = '\0';
    CANON(buf, buf);
    /* 16 values fit, 17 do not (counted before duplicates are merged) */
    strcpy(buf, "k in (");
    for (int i = 0; i < 17; i++) {
        char v[8];
        snprintf(v, sizeof v, "%sv%02d", i ? "," : "", i);
        strcat(buf, v);
    }
    strcat(buf, ")");
    ERR(buf, "more than 16 values in the in set", NULL);
    strcpy(buf, "k in (");
    for (int i = 0; i < 16; i++)
        strcat(buf, i ? ",v" : "v");
    strcat(buf, ")");
    CANON(buf, "k in (v)");
    /* input length */
    memset(buf, ' ', LABEL_SELECTOR_MAX_LEN + 1);
    buf[LABEL_SELECTOR_MAX_LEN + 1] = '\0';
    ERR(buf, "label selector is 1025 bytes long: at most 1024", NULL);
    buf[LABEL_SELECTOR_MAX_LEN] = '\0';
    label_selector_t sel;
    assert_int_equal(label_selector_parse(buf, LABEL_SELECTOR_MAX_LEN, &sel, NULL, 0), 0);
}

static void test_label_selector_rejects_a_canonical_form_over_the_limit(void **state) {
    (void)state;
    /* "k<digits> in(v...)" gains a space per requirement once written
     * canonically. 16 requirements of 63 bytes plus commas, with one key a
     * byte longer, make 1024 input bytes and 1040 canonical ones; with
     * values one byte shorter, 1008 and exactly 1024. */
    static const char v48[] = "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv";
    for (int shorter = 0; shorter <= 1; shorter++) {
        char buf[LABEL_SELECTOR_MAX_LEN + 64] = "";
        for (int i = 0; i < 16; i++) {
            char r[80];
            snprintf(r, sizeof r, "%sk%0*d in(%s)", i ? "," : "", i == 0 ? 10 : 9, i,
                     v48 + shorter);
            strcat(buf, r);
        }
        label_selector_t sel;
        if (!shorter) {
            assert_int_equal(strlen(buf), LABEL_SELECTOR_MAX_LEN);
            ERR(buf, "1040 bytes long once written canonically", "at most 1024");
        } else {
            assert_int_equal(strlen(buf), LABEL_SELECTOR_MAX_LEN - 16);
            assert_int_equal(label_selector_parse(buf, strlen(buf), &sel, NULL, 0), 0);
            assert_int_equal(label_selector_format(&sel, NULL, 0), LABEL_SELECTOR_MAX_LEN);
        }
    }
}

static void test_label_selector_escapes_and_truncates_quoted_input(void **state) {
    (void)state;
    ERR("a\"b=c", "invalid key \"a\\\"b\"", NULL);
    ERR("a\x01=c", "invalid key \"a\\x01\"", NULL);
    char longreq[200];
    memset(longreq, 'x', 150);
    strcpy(longreq + 150, "@");
    ERR(longreq, "xxx\"...", NULL);
}

static void test_label_selector_accepts_null_and_tiny_error_buffers(void **state) {
    (void)state;
    label_selector_t sel;
    assert_int_equal(label_selector_parse("a=-", 3, &sel, NULL, 0), KGS_EINVAL);
    char tiny[8];
    assert_int_equal(label_selector_parse("a=-", 3, &sel, tiny, sizeof tiny), KGS_EINVAL);
    assert_true(strlen(tiny) < sizeof tiny);
}

/* ---- canonical form -------------------------------------------------------- */

static void test_label_selector_format_truncates_like_snprintf(void **state) {
    (void)state;
    label_selector_t sel;
    assert_int_equal(label_selector_parse("app=web,tier in (a,b)", 21, &sel, NULL, 0), 0);
    char out[8];
    assert_int_equal(label_selector_format(&sel, out, sizeof out), 21);
    assert_string_equal(out, "app=web");
    assert_int_equal(label_selector_format(&sel, NULL, 0), 21);
    char one[1] = {'x'};
    assert_int_equal(label_selector_format(&sel, one, 1), 21);
    assert_int_equal(one[0], '\0');
}

static void test_label_selector_same_canonical_form_gives_identical_bytes(void **state) {
    (void)state;
    static const char *const same[] = {
        "b in (y,x),a==1,!c",
        "!c , a=1, b in(x,y)",
        "a=1,a=1,b in (x,y,x),!c",
    };
    label_selector_t first, other;
    assert_int_equal(label_selector_parse(same[0], strlen(same[0]), &first, NULL, 0), 0);
    for (int i = 1; i < 3; i++) {
        memset(&other, 0x77, sizeof other);
        assert_int_equal(label_selector_parse(same[i], strlen(same[i]), &other, NULL, 0), 0);
        assert_memory_equal(&first, &other, sizeof first);
    }
}

static void test_label_selector_canonical_form_parses_to_itself(void **state) {
    (void)state;
    static const char *const inputs[] = {
        "a",
        "!a",
        "a=",
        "a!=",
        "a=b",
        "a in (x,y)",
        "a notin(x)",
        "k=v,!k2,k3 in (z,y)",
        "x.io/a==b,x.io/a!=c",
    };
    for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
        char c1[LABEL_SELECTOR_MAX_LEN + 1], c2[LABEL_SELECTOR_MAX_LEN + 1];
        canon(inputs[i], c1, sizeof c1);
        canon(c1, c2, sizeof c2);
        assert_string_equal(c1, c2);
    }
}

/* ---- matching -------------------------------------------------------------- */

static void test_label_selector_equality_truth_table(void **state) {
    (void)state;
    /* label absent / present with the value / present with another value */
    assert_false(matches("app=web", NO_LABELS));
    assert_true(matches("app=web", LABELS("app=web")));
    assert_false(matches("app=web", LABELS("app=db")));
    assert_true(matches("app==web", LABELS("app=web")));

    assert_true(matches("app!=web", NO_LABELS)); /* Kubernetes: absent satisfies != */
    assert_false(matches("app!=web", LABELS("app=web")));
    assert_true(matches("app!=web", LABELS("app=db")));

    /* the empty value */
    assert_false(matches("app=", NO_LABELS));
    assert_true(matches("app=", LABELS("app=")));
    assert_false(matches("app=", LABELS("app=web")));
    assert_true(matches("app!=", NO_LABELS));
    assert_false(matches("app!=", LABELS("app=")));
    assert_true(matches("app!=", LABELS("app=web")));

    /* values compare exactly: case and prefixes matter */
    assert_false(matches("app=web", LABELS("app=Web")));
    assert_false(matches("app=web", LABELS("app=web2")));
    assert_false(matches("app=web", LABELS("app=we")));
}

static void test_label_selector_set_truth_table(void **state) {
    (void)state;
    assert_false(matches("t in (a,b)", NO_LABELS));
    assert_true(matches("t in (a,b)", LABELS("t=a")));
    assert_true(matches("t in (a,b)", LABELS("t=b")));
    assert_false(matches("t in (a,b)", LABELS("t=c")));
    assert_false(matches("t in (a,b)", LABELS("t=")));

    assert_true(matches("t notin (a,b)", NO_LABELS)); /* absent satisfies notin */
    assert_false(matches("t notin (a,b)", LABELS("t=a")));
    assert_false(matches("t notin (a,b)", LABELS("t=b")));
    assert_true(matches("t notin (a,b)", LABELS("t=c")));
    assert_true(matches("t notin (a,b)", LABELS("t=")));
}

static void test_label_selector_existence_truth_table(void **state) {
    (void)state;
    assert_false(matches("gpu", NO_LABELS));
    assert_true(matches("gpu", LABELS("gpu=")));
    assert_true(matches("gpu", LABELS("gpu=true")));
    assert_false(matches("gpu", LABELS("gpus=true")));
    assert_true(matches("!gpu", NO_LABELS));
    assert_false(matches("!gpu", LABELS("gpu=")));
    assert_false(matches("!gpu", LABELS("gpu=false")));
    assert_true(matches("!gpu", LABELS("gpus=1")));
}

static void test_label_selector_requirements_are_anded(void **state) {
    (void)state;
    const char *sel = "app=web,tier in (frontend,edge),!canary,region";
    assert_true(matches(sel, LABELS("app=web", "tier=edge", "region=eu")));
    assert_false(matches(sel, LABELS("app=web", "tier=edge")));              /* no region */
    assert_false(matches(sel, LABELS("app=web", "tier=db", "region=eu")));   /* tier */
    assert_false(matches(sel, LABELS("app=api", "tier=edge", "region=eu"))); /* app */
    assert_false(matches(sel, LABELS("app=web", "tier=edge", "region=eu", "canary=1")));
    /* contradictory requirements match nothing */
    assert_false(matches("a=1,a=2", LABELS("a=1")));
    assert_false(matches("a,!a", LABELS("a=1")));
    assert_false(matches("a,!a", NO_LABELS));
}

static void test_label_selector_looks_up_prefixed_keys_verbatim(void **state) {
    (void)state;
    assert_true(matches("app.kubernetes.io/name=vllm", LABELS("app.kubernetes.io/name=vllm")));
    assert_false(matches("app.kubernetes.io/name=vllm", LABELS("name=vllm")));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_label_selector_empty_input_selects_everything),
        cmocka_unit_test(test_label_selector_parses_every_operator),
        cmocka_unit_test(test_label_selector_ignores_whitespace_around_tokens),
        cmocka_unit_test(test_label_selector_canonical_form_is_sorted_and_deduplicated),
        cmocka_unit_test(test_label_selector_accepts_kubernetes_keys_and_values),
        cmocka_unit_test(test_label_selector_uses_the_length_not_a_nul_terminator),
        cmocka_unit_test(test_label_selector_rejects_invalid_keys_naming_the_rule),
        cmocka_unit_test(test_label_selector_rejects_invalid_values_naming_the_rule),
        cmocka_unit_test(test_label_selector_rejects_bad_operators_and_structure),
        cmocka_unit_test(test_label_selector_rejects_bad_sets),
        cmocka_unit_test(test_label_selector_enforces_its_limits),
        cmocka_unit_test(test_label_selector_rejects_a_canonical_form_over_the_limit),
        cmocka_unit_test(test_label_selector_escapes_and_truncates_quoted_input),
        cmocka_unit_test(test_label_selector_accepts_null_and_tiny_error_buffers),
        cmocka_unit_test(test_label_selector_format_truncates_like_snprintf),
        cmocka_unit_test(test_label_selector_same_canonical_form_gives_identical_bytes),
        cmocka_unit_test(test_label_selector_canonical_form_parses_to_itself),
        cmocka_unit_test(test_label_selector_equality_truth_table),
        cmocka_unit_test(test_label_selector_set_truth_table),
        cmocka_unit_test(test_label_selector_existence_truth_table),
        cmocka_unit_test(test_label_selector_requirements_are_anded),
        cmocka_unit_test(test_label_selector_looks_up_prefixed_keys_verbatim),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
