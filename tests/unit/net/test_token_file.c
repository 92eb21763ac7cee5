/* test_token_file.c - token files as the Kubernetes API client and the
 * --source-auth profiles read them: trimmed, checked, never quoted in a
 * message; a file renamed over (a kubelet rotation) is seen as changed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/err.h"
#include "net/token_file.h"

static char dir[64];

static const char *put(const char *name, const char *bytes, size_t n) {
    static char path[128];
    char tmp[160];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.new", path);
    FILE *f = fopen(tmp, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, n, f), n);
    fclose(f);
    assert_int_equal(rename(tmp, path), 0); /* as the kubelet swaps the file */
    return path;
}

static int setup(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/kgs-token-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_read_trims_and_follows_rotation(void **state) {
    (void)state;
    char buf[65], err[300];
    size_t n = 0;
    token_file_id_t id;
    const char *p = put("token", "eyJhbGciOi.abc\n", 15);
    assert_int_equal(token_file_read(p, buf, sizeof buf, &n, &id, err, sizeof err), 0);
    assert_int_equal(n, 14);
    assert_string_equal(buf, "eyJhbGciOi.abc");
    assert_true(token_file_unchanged(p, &id));
    put("token", "second-token-1234", 17);
    assert_false(token_file_unchanged(p, &id));
    assert_int_equal(token_file_read(p, buf, sizeof buf, &n, &id, err, sizeof err), 0);
    assert_string_equal(buf, "second-token-1234");
    assert_true(token_file_unchanged(p, &id));
    char gone[128];
    snprintf(gone, sizeof gone, "%s/missing", dir);
    assert_false(token_file_unchanged(gone, &id));
}

static void test_refusals_name_the_file_not_the_bytes(void **state) {
    (void)state;
    char buf[65], err[300];
    size_t n = 0;
    const char *p = put("crlf", "secret-part\r\nX-Injected: 1\n", 27);
    assert_int_equal(token_file_read(p, buf, sizeof buf, &n, NULL, err, sizeof err), KGS_EINVAL);
    assert_non_null(strstr(err, "/crlf: byte 11 of the token is 0x0d"));
    assert_null(strstr(err, "secret"));
    assert_null(strstr(buf, "secret")); /* wiped */
    /* exactly the largest token, with a newline: accepted; one byte more: refused */
    char big[80];
    memset(big, 'a', sizeof big);
    big[64] = '\n';
    p = put("max", big, 65);
    assert_int_equal(token_file_read(p, buf, sizeof buf, &n, NULL, err, sizeof err), 0);
    assert_int_equal(n, 64);
    p = put("long", big, 66);
    assert_int_equal(token_file_read(p, buf, sizeof buf, &n, NULL, err, sizeof err), KGS_EINVAL);
    assert_non_null(strstr(err, "larger than 65 bytes"));
    big[64] = 'a';
    p = put("long2", big, 65);
    assert_int_equal(token_file_read(p, buf, sizeof buf, &n, NULL, err, sizeof err), KGS_EINVAL);
    assert_non_null(strstr(err, "the limit is 64"));
    p = put("empty", "\n", 1);
    assert_int_equal(token_file_read(p, buf, sizeof buf, &n, NULL, err, sizeof err), KGS_EINVAL);
    assert_non_null(strstr(err, "empty"));
    assert_int_equal(token_file_read(dir, buf, sizeof buf, &n, NULL, err, sizeof err), KGS_EIO);
    assert_non_null(strstr(err, "is not a regular file"));
    char gone[128];
    snprintf(gone, sizeof gone, "%s/missing", dir);
    assert_int_equal(token_file_read(gone, buf, sizeof buf, &n, NULL, err, sizeof err), KGS_EIO);
    assert_non_null(strstr(err, "/missing: No such file or directory"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_trims_and_follows_rotation),
        cmocka_unit_test(test_refusals_name_the_file_not_the_bytes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
