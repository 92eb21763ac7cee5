/* test_strbuf.c - the growable string: long text arrives whole. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/strbuf.h"

static void test_empty_is_an_empty_string(void **state) {
    (void)state;
    strbuf_t b;
    strbuf_init(&b);
    assert_string_equal(b.s, "");
    strbuf_clear(&b);
    assert_string_equal(b.s, "");
    strbuf_free(&b);
    assert_string_equal(b.s, "");
}

static void test_long_text_arrives_whole(void **state) {
    (void)state;
    strbuf_t b;
    strbuf_init(&b);
    for (int i = 0; i < 1000; i++)
        strbuf_printf(&b, "%s%d", i ? ", " : "", i);
    assert_false(b.failed);
    assert_int_equal(b.len, strlen(b.s));
    assert_int_equal(b.len, 10 + 90 * 2 + 900 * 3 + 999 * 2);
    assert_memory_equal(b.s + b.len - 8, "998, 999", 8);
    strbuf_clear(&b);
    strbuf_append(&b, "abc", 2);
    assert_string_equal(b.s, "ab");
    strbuf_free(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_is_an_empty_string),
        cmocka_unit_test(test_long_text_arrives_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
