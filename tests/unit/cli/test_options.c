/* test_options.c - gpu-metrics flags: every usage error names the bad text
 * and, when one is close, the flag or value that was meant. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cli/options.h"
#include "core/err.h"

static char errbuf[512];

/* Parses a NULL-terminated argument list (program name added). */
static int parse(cli_options_t *o, ...) {
    char *argv[32];
    int argc = 0;
    argv[argc++] = "gpu-metrics";
    va_list ap;
    va_start(ap, o);
    for (char *a; (a = va_arg(ap, char *)) != NULL;)
        argv[argc++] = a;
    va_end(ap);
    strcpy(errbuf, "untouched");
    return cli_options_parse(argc, argv, o, errbuf, sizeof errbuf);
}

#define PARSE(o, ...) parse(o, __VA_ARGS__, (char *)NULL)

static void expect_error(int rc, const char *msg) {
    assert_int_equal(rc, KGS_EINVAL);
    assert_string_equal(errbuf, msg);
}

static void test_options_mistyped_flag_gets_did_you_mean(void **state) {
    (void)state;
    cli_options_t o;
    expect_error(PARSE(&o, "--formt", "json"),
                 "unknown flag --formt (did you mean --format?); see --help");
    expect_error(PARSE(&o, "--formt=json"),
                 "unknown flag --formt (did you mean --format?); see --help");
    expect_error(PARSE(&o, "-intervl", "1s"),
                 "unknown flag -intervl (did you mean --interval?); see --help");
    expect_error(PARSE(&o, "--dryrun"),
                 "unknown flag --dryrun (did you mean --dry-run?); see --help");
    expect_error(PARSE(&o, "--colour"), "unknown flag --colour; see --help");
    /* a flag's name without its dashes */
    expect_error(PARSE(&o, "formt"), "unexpected argument \"formt\" (did you mean --format?); "
                                     "see --help");
    expect_error(PARSE(&o, "extra"), "unexpected argument \"extra\"; see --help");
}

static void test_options_mistyped_values_get_did_you_mean_once_prefixed(void **state) {
    (void)state;
    cli_options_t o;
    expect_error(PARSE(&o, "--format", "jsn"),
                 "parse --format 'jsn': unknown format; valid: table, json, jsonl, csv; did you "
                 "mean 'json'?");
    expect_error(PARSE(&o, "--env", "slrum"),
                 "--env \"slrum\": unknown environment (valid: auto, k8s, kubernetes, slurm, "
                 "flux, standalone); did you mean \"slurm\"?");
    expect_error(PARSE(&o, "--env", "pbs"),
                 "--env \"pbs\": unknown environment (valid: auto, k8s, kubernetes, slurm, flux, "
                 "standalone)");
}

static void test_options_good_flags_still_parse(void **state) {
    (void)state;
    cli_options_t o;
    assert_int_equal(PARSE(&o, "--format=csv", "-env", "slurm", "--dry-run"), 0);
    assert_int_equal(o.format, OUTPUT_CSV);
    assert_int_equal(o.env, ENV_SLURM);
    assert_true(o.dry_run);
}

static void test_options_processes_is_a_boolean_flag(void **state) {
    (void)state;
    cli_options_t o;
    assert_int_equal(PARSE(&o, "--format", "csv"), 0);
    assert_false(o.processes);
    assert_int_equal(PARSE(&o, "--processes"), 0);
    assert_true(o.processes);
    assert_int_equal(PARSE(&o, "--processes=false"), 0);
    assert_false(o.processes);
    expect_error(PARSE(&o, "--processes=yes"),
                 "invalid value \"yes\" for --processes: must be true or false");
    expect_error(PARSE(&o, "--proceses"),
                 "unknown flag --proceses (did you mean --processes?); see --help");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_options_mistyped_flag_gets_did_you_mean),
        cmocka_unit_test(test_options_mistyped_values_get_did_you_mean_once_prefixed),
        cmocka_unit_test(test_options_good_flags_still_parse),
        cmocka_unit_test(test_options_processes_is_a_boolean_flag),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
