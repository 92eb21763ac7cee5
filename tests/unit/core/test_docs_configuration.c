/*
 * docs/configuration.md against the code: every profile and metric type the
 * code knows has its row with the same values, and every key the document
 * lists is one the parser accepts (not "unknown metadata key").
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/profiles.h"
#include "core/trigger_config.h"

static char *doc;

static int load_doc(void **state) {
    (void)state;
    char path[4096];
    const char *src = getenv("KGS_SOURCE_DIR");
    assert_non_null(src);
    snprintf(path, sizeof path, "%s/docs/configuration.md", src);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    doc = calloc(1, (size_t)n + 1);
    assert_int_equal(fread(doc, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return 0;
}

static int free_doc(void **state) {
    (void)state;
    free(doc);
    return 0;
}

/* The table row that starts with "| `name`", as its own string. */
static char *row_for(const char *name) {
    char needle[160];
    snprintf(needle, sizeof needle, "\n| `%s`", name);
    const char *p = strstr(doc, needle);
    if (!p)
        return NULL;
    p++;
    const char *e = strchr(p, '\n');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    char *row = malloc(len + 1);
    memcpy(row, p, len);
    row[len] = '\0';
    return row;
}

static void test_docs_list_every_profile_with_its_values(void **state) {
    (void)state;
    for (size_t i = 0; i < profile_count(); i++) {
        const profile_t *p = profile_at(i);
        char *row = row_for(p->name);
        if (!row)
            fail_msg("docs/configuration.md has no row for profile %s", p->name);
        char want[64];
        assert_non_null(strstr(row, p->metric_name));
        const char *type = p->engine_metric ? p->engine_metric : metric_type_name(p->metric_type);
        snprintf(want, sizeof want, "`%s`", type);
        if (!strstr(row, want))
            fail_msg("profile %s: row lacks metric type %s: %s", p->name, type, row);
        snprintf(want, sizeof want, "| %g |", p->target);
        if (!strstr(row, want))
            fail_msg("profile %s: row lacks target %g: %s", p->name, p->target, row);
        snprintf(want, sizeof want, "| %g |", p->activation);
        if (!strstr(row, want))
            fail_msg("profile %s: row lacks activation %g: %s", p->name, p->activation, row);
        free(row);
    }
}

static void test_docs_list_every_metric_type(void **state) {
    (void)state;
    for (int t = 0; t < METRIC_TYPE_COUNT; t++) {
        char want[80];
        snprintf(want, sizeof want, "`%s`", metric_type_name((metric_type_t)t));
        if (!strstr(doc, want))
            fail_msg("docs/configuration.md never names metric type %s", want);
    }
}

static void test_every_demand_metric_type_is_documented(void **state) {
    (void)state;
    for (int t = 1; t < DEMAND_TYPE_COUNT; t++) {
        char want[80];
        snprintf(want, sizeof want, "`%s`", demand_type_name((demand_type_t)t));
        if (!strstr(doc, want))
            fail_msg("docs/configuration.md never names metric type %s", want);
    }
}

/* The other direction: every key of the parser's table has its own row in
 * the key table, with the row's type and default (or is one of KEDA's own
 * keys, listed together). */
static void test_every_parser_key_is_documented(void **state) {
    (void)state;
    const char *table = strstr(doc, "| Key |");
    assert_non_null(table);
    const char *end = strstr(table, "\n\n");
    assert_non_null(end);
    trigger_key_doc_t k;
    for (size_t i = 0; trigger_config_key_doc(i, &k); i++) {
        char row[512], kedas[96];
        snprintf(row, sizeof row, "\n| `%s` | %s | %s |", k.name, k.type, k.def);
        snprintf(kedas, sizeof kedas, "`%s`", k.name);
        const char *hit = k.kedas ? strstr(table, kedas) : strstr(table, row);
        if (!hit || hit > end) {
            char *actual = row_for(k.name);
            fail_msg("key %s: the docs/configuration.md key table lacks the row \"%s\" (the "
                     "parser's table says type \"%s\", default \"%s\"); it has: %s",
                     k.name, row + 1, k.type, k.def, actual ? actual : "no row");
        }
    }
    assert_null(trigger_config_key_name(trigger_config_key_count()));
}

static void test_every_documented_key_is_known_to_the_parser(void **state) {
    (void)state;
    const char *table = strstr(doc, "| Key |");
    assert_non_null(table);
    const char *end = strstr(table, "\n\n");
    int keys = 0;
    for (const char *p = strstr(table, "\n| `"); p && (!end || p < end);
         p = strstr(p + 1, "\n| `")) {
        const char *k = p + 4;
        const char *q = strchr(k, '`');
        if (!trigger_config_key_known(k, (size_t)(q - k)))
            fail_msg("documented key %.*s is not in the parser's key table", (int)(q - k), k);
        keys++;
    }
    assert_true(keys >= 14);
}

/* The "default port" column of the Serving engines table is the port the
 * parser gives a podSelector trigger of each engine (tests/deploy/egress
 * checks the chart's egress policy against this column). */
static void test_engine_table_default_ports_are_the_parsers(void **state) {
    (void)state;
    const char *table = strstr(doc, "### Serving engines");
    assert_non_null(table);
    static trigger_config_t c; /* large: off the stack */
    int rows = 0;
    for (int e = ENGINE_VLLM; e <= ENGINE_EPP; e++) {
        char row[32];
        snprintf(row, sizeof row, "\n| `%s` |", engine_name((engine_t)e));
        const char *p = strstr(table, row);
        if (!p) {
            fail_msg("no row for engine %s in the Serving engines table", engine_name((engine_t)e));
            return;
        }
        const char *end = strchr(p + 1, '\n');
        const char *last = end;
        while (last > p && last[-1] != '|')
            last--;
        const char *cell = last - 1;
        while (cell > p && cell[-1] != '|')
            cell--;
        unsigned port = (unsigned)strtoul(cell, NULL, 10);
        const metadata_pair_t pairs[] = {
            {"metricType", 10, "engine_queue", 12},
            {"engine", 6, engine_name((engine_t)e), strlen(engine_name((engine_t)e))},
            {"podSelector", 11, "app=x", 5},
            {"targetValue", 11, "1", 1}};
        char err[4096];
        if (trigger_config_parse(pairs, 4, &c, err, sizeof err) != 0)
            fail_msg("%s: %s", engine_name((engine_t)e), err);
        if (c.demand.engine_port != port)
            fail_msg("engine %s: the table says default port %u, the parser uses %u",
                     engine_name((engine_t)e), port, (unsigned)c.demand.engine_port);
        rows++;
    }
    assert_int_equal(rows, 5);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_docs_list_every_profile_with_its_values),
        cmocka_unit_test(test_docs_list_every_metric_type),
        cmocka_unit_test(test_every_documented_key_is_known_to_the_parser),
        cmocka_unit_test(test_every_demand_metric_type_is_documented),
        cmocka_unit_test(test_every_parser_key_is_documented),
        cmocka_unit_test(test_engine_table_default_ports_are_the_parsers),
    };
    return cmocka_run_group_tests(tests, load_doc, free_doc);
}
