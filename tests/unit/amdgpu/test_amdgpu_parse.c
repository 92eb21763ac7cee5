/* The amdgpu reader's pure parsers on hand-written inputs: sysfs values as
 * the kernel prints them, PCI addresses in every spelling we meet, and
 * fdinfo text as amdgpu_fdinfo.c and drm-usage-stats.rst define it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "amdgpu/amdgpu_parse.h"
#include "core/err.h"

#define S(lit) lit, sizeof(lit) - 1

static void test_amdgpu_parse_u64_reads_sysfs_values_and_rejects_junk(void **state) {
    (void)state;
    uint64_t v = 123; /* sentinel */
    assert_int_equal(amdgpu_parse_u64(S("37\n"), &v), 0);
    assert_int_equal(v, 37);
    assert_int_equal(amdgpu_parse_u64(S("206158430208\n"), &v), 0);
    assert_int_equal(v, 206158430208ull);
    assert_int_equal(amdgpu_parse_u64(S("18446744073709551615"), &v), 0);
    assert_true(v == UINT64_MAX);
    v = 123;
    assert_int_equal(amdgpu_parse_u64(S("18446744073709551616"), &v), KGS_ERANGE);
    assert_int_equal(amdgpu_parse_u64(S(""), &v), KGS_EINVAL);
    assert_int_equal(amdgpu_parse_u64(S("\n"), &v), KGS_EINVAL);
    assert_int_equal(amdgpu_parse_u64(S("-1\n"), &v), KGS_EINVAL);
    assert_int_equal(amdgpu_parse_u64(S("12 34"), &v), KGS_EINVAL);
    assert_int_equal(amdgpu_parse_u64(S("0x10"), &v), KGS_EINVAL);
    assert_int_equal(v, 123); /* untouched on failure */
    /* Not NUL-terminated: the length bounds the read. */
    assert_int_equal(amdgpu_parse_u64("4299", 2, &v), 0);
    assert_int_equal(v, 42);
}

static void test_amdgpu_parse_i64_reads_negative_temperatures(void **state) {
    (void)state;
    int64_t v = 7;
    assert_int_equal(amdgpu_parse_i64(S("51000\n"), &v), 0);
    assert_int_equal(v, 51000);
    assert_int_equal(amdgpu_parse_i64(S("-5000\n"), &v), 0);
    assert_int_equal(v, -5000);
    assert_int_equal(amdgpu_parse_i64(S("-9223372036854775808"), &v), 0);
    assert_true(v == INT64_MIN);
    assert_int_equal(amdgpu_parse_i64(S("9223372036854775808"), &v), KGS_ERANGE);
    assert_int_equal(amdgpu_parse_i64(S("-"), &v), KGS_EINVAL);
    assert_int_equal(amdgpu_parse_i64(S("+5"), &v), KGS_EINVAL);
}

static void test_amdgpu_bdf_normalise_accepts_kernel_nvml_and_short_forms(void **state) {
    (void)state;
    char out[AMDGPU_BDF_MAX];
    assert_int_equal(amdgpu_bdf_normalise(S("0000:19:00.0"), out), 0);
    assert_string_equal(out, "0000:19:00.0");
    assert_int_equal(amdgpu_bdf_normalise(S("0000:C1:00.0\n"), out), 0);
    assert_string_equal(out, "0000:c1:00.0");
    assert_int_equal(amdgpu_bdf_normalise(S("00000000:19:00.0"), out), 0); /* NVML */
    assert_string_equal(out, "0000:19:00.0");
    assert_int_equal(amdgpu_bdf_normalise(S("19:00.0"), out), 0);
    assert_string_equal(out, "0000:19:00.0");
    assert_int_equal(amdgpu_bdf_normalise(S("10000:e3:1f.7"), out), 0); /* a VMD domain */
    assert_string_equal(out, "10000:e3:1f.7");
    assert_int_equal(amdgpu_bdf_normalise(S("1:2:3.4"), out), 0);
    assert_string_equal(out, "0001:02:03.4");
}

static void test_amdgpu_bdf_normalise_rejects_out_of_range_and_malformed(void **state) {
    (void)state;
    char out[AMDGPU_BDF_MAX];
    const char *bad[] = {"",
                         "0000:19:00",
                         "0000:19:20.0",
                         "0000:19:00.8",
                         "0000:100:00.0",
                         "0000:19.00.0",
                         "0:0:19:00.0",
                         "0000:19:00.0.1",
                         "0000:19:00.a",
                         "0000:1g:00.0",
                         ":19:00.0",
                         "0000::00.0",
                         "000000000:19:00.0",
                         "0000:19:00.00"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        strcpy(out, "sentinel");
        assert_int_equal(amdgpu_bdf_normalise(bad[i], strlen(bad[i]), out), KGS_EINVAL);
    }
}

/* amdgpu_show_fdinfo's output, including its "drm-memory-gtt: \t" spacing
 * and amd-* keys; a dup'd descriptor shows the same text. */
static const char amdgpu_fdinfo_text[] = "pos:\t0\n"
                                         "flags:\t02100002\n"
                                         "mnt_id:\t25\n"
                                         "ino:\t1063\n"
                                         "pasid:\t32770\n"
                                         "drm-driver:\tamdgpu\n"
                                         "drm-pdev:\t0000:19:00.0\n"
                                         "drm-client-id:\t17\n"
                                         "drm-memory-vram:\t20971520 KiB\n"
                                         "drm-memory-gtt: \t2048 KiB\n"
                                         "drm-memory-cpu: \t0 KiB\n"
                                         "amd-memory-visible-vram:\t0 KiB\n"
                                         "amd-requested-vram:\t20971520 KiB\n"
                                         "drm-engine-gfx:\t5000000000 ns\n"
                                         "drm-engine-compute:\t250000000 ns\n";

static void test_amdgpu_fdinfo_parse_reads_amdgpu_keys(void **state) {
    (void)state;
    amdgpu_fdinfo_t fi;
    assert_int_equal(amdgpu_fdinfo_parse(S(amdgpu_fdinfo_text), &fi), 0);
    assert_string_equal(fi.driver, "amdgpu");
    assert_true(fi.has_pdev);
    assert_string_equal(fi.pdev, "0000:19:00.0");
    assert_true(fi.has_client_id);
    assert_int_equal(fi.client_id, 17);
    assert_true(fi.has_vram);
    assert_int_equal(fi.vram_bytes, 20971520ull * 1024); /* 20 GiB */
    assert_true(fi.has_engine_gfx);
    assert_int_equal(fi.engine_gfx_ns, 5000000000ull);
    assert_true(fi.has_engine_compute);
    assert_int_equal(fi.engine_compute_ns, 250000000ull);
}

static void test_amdgpu_fdinfo_parse_units_and_resident_fallback(void **state) {
    (void)state;
    amdgpu_fdinfo_t fi;
    /* Bytes by default, MiB, and drm_print_memory_stats()'s resident key. */
    assert_int_equal(amdgpu_fdinfo_parse(S("drm-driver: amdgpu\ndrm-memory-vram: 4096\n"), &fi), 0);
    assert_int_equal(fi.vram_bytes, 4096);
    assert_int_equal(amdgpu_fdinfo_parse(S("drm-driver: amdgpu\ndrm-memory-vram: 3 MiB\n"), &fi),
                     0);
    assert_int_equal(fi.vram_bytes, 3ull << 20);
    assert_int_equal(amdgpu_fdinfo_parse(S("drm-driver:\tamdgpu\ndrm-total-vram:\t786432 KiB\n"
                                           "drm-resident-vram:\t524288 KiB\n"),
                                         &fi),
                     0);
    assert_true(fi.has_vram);
    assert_int_equal(fi.vram_bytes, 536870912ull);
    /* drm-memory-vram wins over resident when both are there. */
    assert_int_equal(amdgpu_fdinfo_parse(S("drm-resident-vram: 1 KiB\ndrm-driver: amdgpu\n"
                                           "drm-memory-vram: 2 KiB\n"),
                                         &fi),
                     0);
    assert_int_equal(fi.vram_bytes, 2048);
    /* No engine line: amdgpu omits engines with no time; the parser says so. */
    assert_false(fi.has_engine_gfx);
    assert_false(fi.has_client_id);
}

static void test_amdgpu_fdinfo_parse_skips_malformed_values_keeps_the_rest(void **state) {
    (void)state;
    amdgpu_fdinfo_t fi;
    assert_int_equal(amdgpu_fdinfo_parse(S("drm-driver: amdgpu\n"
                                           "drm-memory-vram: 12 GiB\n"  /* unknown unit */
                                           "drm-engine-gfx: 100 ms\n"   /* not ns */
                                           "drm-client-id: -4\n"        /* not a uint */
                                           "drm-pdev: 0000:19:00\n"     /* no function */
                                           "drm-engine-compute: 7 ns\n" /* fine */
                                           "garbage without colon\n"),
                                         &fi),
                     0);
    assert_false(fi.has_vram);
    assert_false(fi.has_engine_gfx);
    assert_false(fi.has_client_id);
    assert_false(fi.has_pdev);
    assert_true(fi.has_engine_compute);
    assert_int_equal(fi.engine_compute_ns, 7);
    /* "12KiB" with no space before the unit is not the spec's form. */
    assert_int_equal(amdgpu_fdinfo_parse(S("drm-driver: amdgpu\ndrm-memory-vram: 12KiB"), &fi), 0);
    assert_false(fi.has_vram);
}

static void test_amdgpu_fdinfo_parse_tells_non_drm_and_other_drivers(void **state) {
    (void)state;
    amdgpu_fdinfo_t fi;
    assert_int_equal(amdgpu_fdinfo_parse(S("pos:\t0\nflags:\t0100002\nmnt_id:\t25\n"), &fi),
                     KGS_ENOTFOUND);
    assert_int_equal(amdgpu_fdinfo_parse(S(""), &fi), KGS_ENOTFOUND);
    assert_int_equal(amdgpu_fdinfo_parse(S("drm-driver:\ti915\ndrm-engine-render:\t900 ns\n"), &fi),
                     0);
    assert_string_equal(fi.driver, "i915");
    /* A driver name with whitespace inside is not one (found by the fuzz
     * target: "drm-driver:PCI_SLOT_NAME=\tamdgpu" was taken whole). */
    assert_int_equal(amdgpu_fdinfo_parse(S("drm-driver:PCI_SLOT_NAME=\tamdgpu\n"), &fi),
                     KGS_ENOTFOUND);
    /* Nor one of NUL bytes (the fuzz target again: an empty driver name). */
    assert_int_equal(amdgpu_fdinfo_parse(S("drm-driver:\0\0\0\0\n"), &fi), KGS_ENOTFOUND);
    /* Cut mid-line (a 4 KiB read): what came before still counts. */
    assert_int_equal(amdgpu_fdinfo_parse(amdgpu_fdinfo_text, 150, &fi), 0);
    assert_string_equal(fi.driver, "amdgpu");
}

static void test_amdgpu_uevent_parse_finds_driver_and_slot(void **state) {
    (void)state;
    char slot[AMDGPU_BDF_MAX];
    assert_true(amdgpu_uevent_parse(S("DRIVER=amdgpu\nPCI_CLASS=120000\nPCI_ID=1002:74A1\n"
                                      "PCI_SLOT_NAME=0000:C1:00.0\nMODALIAS=pci:v00001002\n"),
                                    slot));
    assert_string_equal(slot, "0000:c1:00.0");
    assert_true(amdgpu_uevent_parse(S("PCI_SLOT_NAME=bogus\nDRIVER=amdgpu"), slot));
    assert_string_equal(slot, "");
    assert_false(amdgpu_uevent_parse(S("DRIVER=i915\nPCI_SLOT_NAME=0000:00:02.0\n"), slot));
    assert_string_equal(slot, "");
    assert_false(amdgpu_uevent_parse(S("DRIVER=amdgpu2\n"), slot));
}

/* A table as the SMU driver starts one (all ones: not supported), with
 * its header; fields are put at offsets computed by hand from
 * kgd_pp_interface.h (NUM_VCN 4, NUM_JPEG_ENG 32, natural alignment). */
static void gm_init(unsigned char *b, size_t size, unsigned content) {
    memset(b, 0xff, size);
    b[0] = (unsigned char)(size & 0xff);
    b[1] = (unsigned char)(size >> 8);
    b[2] = 1;
    b[3] = (unsigned char)content;
}

static void put16(unsigned char *b, size_t off, uint16_t v) {
    memcpy(b + off, &v, sizeof v);
}

static void put64(unsigned char *b, size_t off, uint64_t v) {
    memcpy(b + off, &v, sizeof v);
}

static void test_amdgpu_gpu_metrics_v1_3_reads_activity_power_and_hotspot(void **state) {
    (void)state;
    unsigned char b[128];
    gm_init(b, 128, 3);
    put16(b, 6, 66);   /* temperature_hotspot: after the header and edge */
    put16(b, 16, 87);  /* average_gfx_activity: header 4 + six temperatures */
    put16(b, 18, 40);  /* average_umc_activity */
    put16(b, 22, 290); /* average_socket_power */
    put64(b, 24, 1);   /* energy_accumulator: no documented unit before v1_4 */
    amdgpu_gpu_metrics_t m;
    assert_int_equal(amdgpu_gpu_metrics_parse(b, sizeof b, &m), 0);
    assert_int_equal(m.content_revision, 3);
    assert_true(m.has_gfx_activity);
    assert_int_equal(m.gfx_activity_pct, 87);
    assert_int_equal(m.umc_activity_pct, 40);
    assert_int_equal(m.socket_power_w, 290);
    assert_int_equal(m.hotspot_c, 66);
    assert_false(m.has_energy);
}

static void test_amdgpu_gpu_metrics_v1_4_and_v1_5_place_energy_apart(void **state) {
    (void)state;
    unsigned char b[360];
    amdgpu_gpu_metrics_t m;
    /* v1_4: vcn_activity[4] at 16, energy at 24. */
    gm_init(b, 200, 4);
    put16(b, 4, 70);                              /* temperature_hotspot */
    put16(b, 10, 650);                            /* curr_socket_power */
    put16(b, 12, 99);                             /* average_gfx_activity */
    put64(b, 24, (uint64_t)65536 * 1000 + 32768); /* 1000.5 J */
    assert_int_equal(amdgpu_gpu_metrics_parse(b, 200, &m), 0);
    assert_int_equal(m.hotspot_c, 70);
    assert_int_equal(m.socket_power_w, 650);
    assert_int_equal(m.gfx_activity_pct, 99);
    assert_false(m.has_umc_activity); /* all ones: not supported */
    assert_true(m.has_energy);
    assert_int_equal(m.energy_mj, 1000500);
    /* v1_5: jpeg_activity[32] after vcn, so energy at 88. */
    gm_init(b, 360, 5);
    put64(b, 24, 7); /* inside jpeg_activity now: not the counter */
    put64(b, 88, (uint64_t)65536 * 123456);
    assert_int_equal(amdgpu_gpu_metrics_parse(b, 360, &m), 0);
    assert_int_equal(m.energy_mj, 123456000ull);
    assert_false(m.has_gfx_activity);
    /* The counter all ones: unknown. */
    put64(b, 88, UINT64_MAX);
    assert_int_equal(amdgpu_gpu_metrics_parse(b, 360, &m), 0);
    assert_false(m.has_energy);
}

static void test_amdgpu_gpu_metrics_refuses_short_and_unknown_tables(void **state) {
    (void)state;
    unsigned char b[360];
    amdgpu_gpu_metrics_t m;
    gm_init(b, 360, 5);
    assert_int_equal(amdgpu_gpu_metrics_parse(b, 359, &m), KGS_EINVAL); /* says 360 */
    assert_int_equal(amdgpu_gpu_metrics_parse(b, 3, &m), KGS_EINVAL);
    gm_init(b, 90, 5); /* too short for the energy counter at 88 */
    assert_int_equal(amdgpu_gpu_metrics_parse(b, 360, &m), KGS_EINVAL);
    gm_init(b, 2, 5); /* shorter than its own header */
    assert_int_equal(amdgpu_gpu_metrics_parse(b, 360, &m), KGS_EINVAL);
    gm_init(b, 360, 7); /* a revision we have not read the layout of */
    assert_int_equal(amdgpu_gpu_metrics_parse(b, 360, &m), KGS_ENOTFOUND);
    gm_init(b, 360, 1);
    b[2] = 2; /* an APU table (v2_x) */
    assert_int_equal(amdgpu_gpu_metrics_parse(b, 360, &m), KGS_ENOTFOUND);
    /* An activity above 100 % is not one. */
    gm_init(b, 128, 3);
    put16(b, 16, 101);
    assert_int_equal(amdgpu_gpu_metrics_parse(b, 128, &m), 0);
    assert_false(m.has_gfx_activity);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_amdgpu_parse_u64_reads_sysfs_values_and_rejects_junk),
        cmocka_unit_test(test_amdgpu_parse_i64_reads_negative_temperatures),
        cmocka_unit_test(test_amdgpu_bdf_normalise_accepts_kernel_nvml_and_short_forms),
        cmocka_unit_test(test_amdgpu_bdf_normalise_rejects_out_of_range_and_malformed),
        cmocka_unit_test(test_amdgpu_fdinfo_parse_reads_amdgpu_keys),
        cmocka_unit_test(test_amdgpu_fdinfo_parse_units_and_resident_fallback),
        cmocka_unit_test(test_amdgpu_fdinfo_parse_skips_malformed_values_keeps_the_rest),
        cmocka_unit_test(test_amdgpu_fdinfo_parse_tells_non_drm_and_other_drivers),
        cmocka_unit_test(test_amdgpu_uevent_parse_finds_driver_and_slot),
        cmocka_unit_test(test_amdgpu_gpu_metrics_v1_3_reads_activity_power_and_hotspot),
        cmocka_unit_test(test_amdgpu_gpu_metrics_v1_4_and_v1_5_place_energy_apart),
        cmocka_unit_test(test_amdgpu_gpu_metrics_refuses_short_and_unknown_tables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
