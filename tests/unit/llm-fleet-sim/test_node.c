/* test_node.c - the GPU node under the simulated fleet is a scenario the
 * NVML stand-in accepts, at rest it is sim/scenarios/llm-fleet-8xh100.json,
 * and its GPUs follow the replicas on them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fleet.h"
#include "node.h"
#include "scenario.h"

static void test_node_at_rest_is_the_bundled_scenario(void **state) {
    (void)state;
    const char *src = getenv("KGS_SOURCE_DIR");
    if (!src)
        skip();
    fleet_t *f = malloc(sizeof *f);
    assert_non_null(f);
    fleet_params_t p;
    fleet_params_default(&p, 8);
    fleet_init(f, &p);
    static char text[16384], file[16384];
    size_t n = node_scenario(text, sizeof text, f, 0);
    assert_true(n > 0);
    char path[4096];
    snprintf(path, sizeof path, "%s/sim/scenarios/llm-fleet-8xh100.json", src);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    size_t got = fread(file, 1, sizeof file - 1, fp);
    fclose(fp);
    file[got] = '\0';
    assert_string_equal(text, file);
    free(f);
}

static void test_node_gpus_follow_the_replicas(void **state) {
    (void)state;
    fleet_t *f = malloc(sizeof *f);
    assert_non_null(f);
    fleet_params_t p;
    fleet_params_default(&p, 8);
    fleet_init(f, &p);
    fleet_scale(f, 0, 2); /* slots 0, 1 Ready at 90 */
    fleet_advance(f, 90);
    fleet_arrive(f, &(load_request_t){90, 400, 300, false});
    fleet_advance(f, 90);  /* slot 0 runs it */
    fleet_scale(f, 90, 3); /* slot 2 starting */
    static char text[16384];
    size_t n = node_scenario(text, sizeof text, f, 135); /* slot 2 half loaded */
    assert_true(n > 0);
    scenario_t *sc = NULL;
    char err[512] = "";
    if (scenario_parse(text, n, &sc, err, sizeof err) != 0)
        fail_msg("%s", err);
    assert_int_equal(sc->device_count, 8);
    scenario_values_t v[4];
    for (int i = 0; i < 4; i++)
        scenario_device_values_at(sc, &sc->devices[i], 0, &v[i]);
    /* busy: utilisation 97 % however small the batch; idle Ready: 0 %, but
     * vLLM holds 90 % of the memory either way; starting: weights loading */
    assert_true(v[0].v[SCENARIO_V_GPU_UTIL] == 97);
    assert_true(v[1].v[SCENARIO_V_GPU_UTIL] == 0);
    assert_true(v[1].v[SCENARIO_V_MEMORY_USED_BYTES] > 0.89 * 85520809984.0);
    assert_true(v[0].v[SCENARIO_V_MEMORY_USED_BYTES] == v[1].v[SCENARIO_V_MEMORY_USED_BYTES]);
    assert_true(v[2].v[SCENARIO_V_GPU_UTIL] == 0);
    assert_true(v[2].v[SCENARIO_V_MEMORY_USED_BYTES] > 8e9 &&
                v[2].v[SCENARIO_V_MEMORY_USED_BYTES] < 9e9); /* half of 16 GiB */
    assert_true(v[3].v[SCENARIO_V_MEMORY_USED_BYTES] == 0);
    scenario_free(sc);
    free(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_at_rest_is_the_bundled_scenario),
        cmocka_unit_test(test_node_gpus_follow_the_replicas),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
