/* test_fair_share.c - a tenant may hold at most half of what the others
 * leave free: alone half, and a newcomer always finds room. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/fair_share.h"

static void test_fair_share_alone_takes_half(void **state) {
    (void)state;
    assert_int_equal(fair_share_cap(0, 0, 1000), 500);
    assert_true(fair_share_admits(0, 0, 500, 1000));
    assert_false(fair_share_admits(0, 0, 501, 1000));
    assert_true(fair_share_admits(499, 499, 1, 1000));
    assert_false(fair_share_admits(500, 500, 1, 1000));
}

/* One tenant fills its share a unit at a time; a second then still gets a
 * quarter, a third an eighth: none is ever locked out by the ones before. */
static void test_fair_share_leaves_room_for_every_newcomer(void **state) {
    (void)state;
    size_t limit = 1 << 20, total = 0, held[5] = {0};
    for (int t = 0; t < 5; t++) {
        unsigned steps = 0;
        while (fair_share_admits(held[t], total, 1, limit) && steps++ < (1u << 21)) {
            held[t]++;
            total++;
        }
        assert_int_equal(held[t], limit >> (t + 1));
        assert_true(total <= limit);
    }
}

static void test_fair_share_refuses_what_the_budget_cannot_hold(void **state) {
    (void)state;
    assert_false(fair_share_admits(0, 0, 2000, 1000));
    assert_false(fair_share_admits(0, 1000, 1, 1000));
    assert_int_equal(fair_share_cap(0, 1000, 1000), 0);
    assert_int_equal(fair_share_cap(0, 5000, 1000), 0);
    assert_false(fair_share_admits(0, 0, SIZE_MAX, 1000));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fair_share_alone_takes_half),
        cmocka_unit_test(test_fair_share_leaves_room_for_every_newcomer),
        cmocka_unit_test(test_fair_share_refuses_what_the_budget_cannot_hold),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
