/* test_grpc_frame.c - gRPC framing, grpc-timeout, percent-encoding, content type. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/err.h"
#include "net/grpc_frame.h"

#define SENTINEL_SIZE ((size_t)0xdeadbeef)
static const uint8_t sentinel_byte = 0x5a;

typedef struct {
    int rc;
    const uint8_t *msg;
    size_t msg_len;
    size_t consumed;
} decoded_t;

static decoded_t decode(const uint8_t *buf, size_t len, size_t max_len) {
    decoded_t d = {0, &sentinel_byte, SENTINEL_SIZE, SENTINEL_SIZE};
    d.rc = grpc_frame_decode(buf, len, max_len, &d.msg, &d.msg_len, &d.consumed);
    return d;
}

/* ---- status names ---- */

static void test_grpc_status_name_covers_every_code_and_flags_others(void **state) {
    (void)state;
    assert_string_equal(grpc_status_name(GRPC_OK), "OK");
    assert_string_equal(grpc_status_name(GRPC_INVALID_ARGUMENT), "INVALID_ARGUMENT");
    assert_string_equal(grpc_status_name(GRPC_RESOURCE_EXHAUSTED), "RESOURCE_EXHAUSTED");
    assert_string_equal(grpc_status_name(GRPC_UNIMPLEMENTED), "UNIMPLEMENTED");
    assert_string_equal(grpc_status_name(GRPC_UNAUTHENTICATED), "UNAUTHENTICATED");
    for (int c = 0; c <= 16; c++)
        assert_string_not_equal(grpc_status_name(c), "UNKNOWN_STATUS");
    assert_string_equal(grpc_status_name(17), "UNKNOWN_STATUS");
    assert_string_equal(grpc_status_name(-1), "UNKNOWN_STATUS");
}

/* ---- framing ---- */

static void test_grpc_frame_prefix_is_flag_zero_and_big_endian_length(void **state) {
    (void)state;
    uint8_t p[5];
    grpc_frame_prefix(p, 0x01020304u);
    const uint8_t want[5] = {0, 1, 2, 3, 4};
    assert_memory_equal(p, want, 5);
    grpc_frame_prefix(p, UINT32_MAX);
    const uint8_t want_max[5] = {0, 0xff, 0xff, 0xff, 0xff};
    assert_memory_equal(p, want_max, 5);
}

static void test_grpc_frame_declared_length_reads_any_flag_byte(void **state) {
    (void)state;
    uint8_t p[5];
    grpc_frame_prefix(p, 0x01020304u);
    assert_int_equal(grpc_frame_declared_length(p), 0x01020304u);
    p[0] = 1; /* compressed: the length is still what a server weighs */
    assert_int_equal(grpc_frame_declared_length(p), 0x01020304u);
    const uint8_t max[5] = {0xff, 0xff, 0xff, 0xff, 0xff};
    assert_int_equal(grpc_frame_declared_length(max), UINT32_MAX);
}

static void test_grpc_frame_decode_is_incomplete_at_every_split_point_then_complete(void **state) {
    (void)state;
    uint8_t buf[5 + 11];
    grpc_frame_prefix(buf, 11);
    memcpy(buf + 5, "hello world", 11);
    for (size_t k = 0; k < sizeof buf; k++) {
        decoded_t d = decode(buf, k, GRPC_MAX_MESSAGE_BYTES);
        if (d.rc != GRPC_FRAME_INCOMPLETE)
            fail_msg("split at %zu: rc %d", k, d.rc);
        assert_null(d.msg);
        assert_int_equal(d.msg_len, 0);
        assert_int_equal(d.consumed, 0);
    }
    decoded_t d = decode(buf, sizeof buf, GRPC_MAX_MESSAGE_BYTES);
    assert_int_equal(d.rc, GRPC_FRAME_COMPLETE);
    assert_ptr_equal(d.msg, buf + 5);
    assert_int_equal(d.msg_len, 11);
    assert_int_equal(d.consumed, sizeof buf);
}

static void test_grpc_frame_decode_accepts_an_empty_buffer_pointer_as_incomplete(void **state) {
    (void)state;
    decoded_t d = decode(NULL, 0, GRPC_MAX_MESSAGE_BYTES);
    assert_int_equal(d.rc, GRPC_FRAME_INCOMPLETE);
}

static void test_grpc_frame_decode_returns_a_zero_length_message(void **state) {
    (void)state;
    uint8_t buf[5];
    grpc_frame_prefix(buf, 0);
    decoded_t d = decode(buf, 5, GRPC_MAX_MESSAGE_BYTES);
    assert_int_equal(d.rc, GRPC_FRAME_COMPLETE);
    assert_ptr_equal(d.msg, buf + 5);
    assert_int_equal(d.msg_len, 0);
    assert_int_equal(d.consumed, 5);
}

static void test_grpc_frame_decode_accepts_exactly_the_maximum(void **state) {
    (void)state;
    size_t n = GRPC_MAX_MESSAGE_BYTES;
    uint8_t *buf = calloc(1, 5 + n + 3);
    assert_non_null(buf);
    grpc_frame_prefix(buf, (uint32_t)n);
    assert_int_equal(decode(buf, 5, n).rc, GRPC_FRAME_INCOMPLETE);
    assert_int_equal(decode(buf, 5 + n - 1, n).rc, GRPC_FRAME_INCOMPLETE);
    decoded_t d = decode(buf, 5 + n + 3, n);
    assert_int_equal(d.rc, GRPC_FRAME_COMPLETE);
    assert_int_equal(d.msg_len, n);
    assert_int_equal(d.consumed, 5 + n);
    free(buf);
}

static void test_grpc_frame_decode_reports_max_plus_one_from_the_prefix_alone(void **state) {
    (void)state;
    uint8_t buf[5];
    grpc_frame_prefix(buf, GRPC_MAX_MESSAGE_BYTES + 1);
    for (size_t k = 0; k < 5; k++)
        assert_int_equal(decode(buf, k, GRPC_MAX_MESSAGE_BYTES).rc, GRPC_FRAME_INCOMPLETE);
    decoded_t d = decode(buf, 5, GRPC_MAX_MESSAGE_BYTES);
    assert_int_equal(d.rc, GRPC_FRAME_TOO_LARGE);
    assert_int_equal(d.msg_len, GRPC_MAX_MESSAGE_BYTES + 1);
    assert_null(d.msg);
    assert_int_equal(d.consumed, 0);

    grpc_frame_prefix(buf, UINT32_MAX);
    assert_int_equal(decode(buf, 5, GRPC_MAX_MESSAGE_BYTES).rc, GRPC_FRAME_TOO_LARGE);
    /* With no practical limit the largest length is simply incomplete. */
    assert_int_equal(decode(buf, 5, SIZE_MAX).rc, GRPC_FRAME_INCOMPLETE);
}

static void test_grpc_frame_decode_judges_the_flag_byte_as_soon_as_it_arrives(void **state) {
    (void)state;
    static const struct {
        uint8_t flag;
        int rc;
    } cases[] = {
        {1, GRPC_FRAME_COMPRESSED},
        {2, GRPC_FRAME_MALFORMED},
        {0x80, GRPC_FRAME_MALFORMED},
        {0xff, GRPC_FRAME_MALFORMED},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t buf[8];
        grpc_frame_prefix(buf, 3);
        buf[0] = cases[i].flag;
        memcpy(buf + 5, "abc", 3);
        for (size_t k = 1; k <= sizeof buf; k++) {
            decoded_t d = decode(buf, k, GRPC_MAX_MESSAGE_BYTES);
            if (d.rc != cases[i].rc)
                fail_msg("flag %u, %zu bytes: rc %d", cases[i].flag, k, d.rc);
            assert_null(d.msg);
            assert_int_equal(d.consumed, 0);
        }
    }
    /* The flag is checked before the length. */
    uint8_t big[5];
    grpc_frame_prefix(big, UINT32_MAX);
    big[0] = 1;
    assert_int_equal(decode(big, 5, 16).rc, GRPC_FRAME_COMPRESSED);
}

static void test_grpc_frame_decode_walks_messages_back_to_back(void **state) {
    (void)state;
    const char *msgs[] = {"first", "", "third message", "x"};
    uint8_t buf[128];
    size_t len = 0;
    for (size_t i = 0; i < 4; i++) {
        size_t n = strlen(msgs[i]);
        grpc_frame_prefix(buf + len, (uint32_t)n);
        memcpy(buf + len + 5, msgs[i], n);
        len += 5 + n;
    }
    size_t off = 0;
    for (size_t i = 0; i < 4; i++) {
        decoded_t d = decode(buf + off, len - off, GRPC_MAX_MESSAGE_BYTES);
        assert_int_equal(d.rc, GRPC_FRAME_COMPLETE);
        assert_int_equal(d.msg_len, strlen(msgs[i]));
        assert_memory_equal(d.msg, msgs[i], d.msg_len);
        off += d.consumed;
    }
    assert_int_equal(off, len);
    assert_int_equal(decode(buf + off, 0, GRPC_MAX_MESSAGE_BYTES).rc, GRPC_FRAME_INCOMPLETE);
}

/* ---- grpc-timeout ---- */

static int tparse(const char *s, uint64_t *ns) {
    *ns = UINT64_C(0xdeadbeef);
    return grpc_timeout_parse(s, strlen(s), ns);
}

static void test_grpc_timeout_parses_every_unit(void **state) {
    (void)state;
    static const struct {
        const char *s;
        uint64_t ns;
    } cases[] = {
        {"1H", UINT64_C(3600000000000)},
        {"2M", UINT64_C(120000000000)},
        {"3S", UINT64_C(3000000000)},
        {"4m", UINT64_C(4000000)},
        {"5u", UINT64_C(5000)},
        {"6n", UINT64_C(6)},
        {"0S", 0},
        {"00000001n", 1},
        {"99999999S", UINT64_C(99999999000000000)},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t ns;
        int rc = tparse(cases[i].s, &ns);
        if (rc != 0 || ns != cases[i].ns)
            fail_msg("\"%s\": rc %d, ns %llu", cases[i].s, rc, (unsigned long long)ns);
    }
}

static void test_grpc_timeout_rejects_malformed_values(void **state) {
    (void)state;
    static const char *const bad[] = {"",     "S",    "10",   "123456789S", "10s",   "10x",  "10 S",
                                      " 10S", "10S ", "-1S",  "+1S",        "1.5S",  "1e3S", "SS",
                                      "10SS", "0x1S", "1\0S", "10MS",       "10\xff"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t ns;
        size_t len = strlen(bad[i]);
        if (i == 16)
            len = 3; /* an embedded NUL */
        ns = 7;
        int rc = grpc_timeout_parse(bad[i], len, &ns);
        if (rc != KGS_EINVAL || ns != 0)
            fail_msg("case %zu \"%s\": rc %d, ns %llu", i, bad[i], rc, (unsigned long long)ns);
    }
}

static void test_grpc_timeout_reads_only_len_bytes(void **state) {
    (void)state;
    uint64_t ns = 0;
    assert_int_equal(grpc_timeout_parse("15S99", 3, &ns), 0);
    assert_true(ns == UINT64_C(15000000000));
}

static void test_grpc_timeout_saturates_hours_that_overflow(void **state) {
    (void)state;
    uint64_t ns;
    assert_int_equal(tparse("5124095H", &ns), 0);
    assert_true(ns == UINT64_C(5124095) * UINT64_C(3600000000000));
    assert_int_equal(tparse("5124096H", &ns), 0);
    assert_true(ns == UINT64_MAX);
    assert_int_equal(tparse("99999999H", &ns), 0);
    assert_true(ns == UINT64_MAX);
    assert_int_equal(tparse("99999999M", &ns), 0);
    assert_true(ns == UINT64_C(99999999) * UINT64_C(60000000000));
}

static void test_grpc_timeout_format_picks_the_shortest_exact_form(void **state) {
    (void)state;
    static const struct {
        uint64_t ns;
        const char *s;
    } cases[] = {
        {0, "0n"},
        {1, "1n"},
        {999, "999n"},
        {1000, "1u"},
        {UINT64_C(1000000), "1m"},
        {UINT64_C(1000000000), "1S"},
        {UINT64_C(1500000000), "1500m"},
        {UINT64_C(90000000000), "90S"},
        {UINT64_C(60000000000), "1M"},
        {UINT64_C(120000000000), "2M"},
        {UINT64_C(3600000000000), "1H"},
        {UINT64_C(99999999), "99999999n"},
        {UINT64_C(100000000), "100m"},
        /* Not exact in 8 digits anywhere: round up in the finest unit that fits. */
        {UINT64_C(100000001), "100001u"},
        {UINT64_C(123456789123), "123457m"},
        {UINT64_MAX, "5124096H"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[16];
        memset(out, 'X', sizeof out);
        size_t n = grpc_timeout_format(cases[i].ns, out, sizeof out);
        if (strcmp(out, cases[i].s) != 0 || n != strlen(cases[i].s))
            fail_msg("%llu: got \"%s\" (%zu), want \"%s\"", (unsigned long long)cases[i].ns, out, n,
                     cases[i].s);
    }
}

static void test_grpc_timeout_format_truncates_like_snprintf(void **state) {
    (void)state;
    char out[4] = "XXX";
    assert_int_equal(grpc_timeout_format(UINT64_C(1500000000), out, sizeof out), 5);
    assert_string_equal(out, "150");
    assert_int_equal(grpc_timeout_format(1, NULL, 0), 2);
}

static uint64_t xorshift(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void check_round_trip(uint64_t x) {
    char out[16];
    size_t n = grpc_timeout_format(x, out, sizeof out);
    assert_true(n >= 2 && n <= 9);
    uint64_t back;
    if (grpc_timeout_parse(out, n, &back) != 0)
        fail_msg("%llu formats as unparsable \"%s\"", (unsigned long long)x, out);
    if (back < x || back - x > x / 100000)
        fail_msg("%llu -> \"%s\" -> %llu", (unsigned long long)x, out, (unsigned long long)back);
}

static void test_grpc_timeout_format_round_trips_up_and_close(void **state) {
    (void)state;
    static const uint64_t edges[] = {0,
                                     1,
                                     99999999,
                                     100000000,
                                     100000001,
                                     UINT64_C(99999999999),
                                     UINT64_C(3600000000001),
                                     UINT64_C(5124095) * UINT64_C(3600000000000),
                                     UINT64_MAX - 1,
                                     UINT64_MAX};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
        check_round_trip(edges[i]);
    uint64_t s = UINT64_C(0x9e3779b97f4a7c15);
    for (int i = 0; i < 200000; i++) {
        uint64_t r = xorshift(&s);
        check_round_trip(r >> (r % 64)); /* spread over every magnitude */
    }
}

/* ---- percent-encoding ---- */

static void test_grpc_percent_round_trips_every_byte(void **state) {
    (void)state;
    char all[256];
    for (int c = 0; c < 256; c++) {
        char in[1] = {(char)c}, enc[8], dec[8];
        size_t n = grpc_percent_encode(in, 1, enc, sizeof enc);
        bool plain = c >= 0x20 && c <= 0x7e && c != '%';
        assert_int_equal(n, plain ? 1 : 3);
        assert_int_equal(strlen(enc), n);
        assert_int_equal(grpc_percent_decode(enc, n, dec, sizeof dec), 1);
        assert_int_equal((unsigned char)dec[0], c);
        all[c] = (char)c;
    }
    char enc[1024], dec[512];
    size_t n = grpc_percent_encode(all, sizeof all, enc, sizeof enc);
    assert_int_equal(n, 95 - 1 + 3 * (256 - 94));
    assert_int_equal(grpc_percent_decode(enc, n, dec, sizeof dec), 256);
    assert_memory_equal(dec, all, 256);
}

/* Examples from the spec text and from grpc-go's encode/decode tables. */
static void test_grpc_percent_encodes_the_spec_examples(void **state) {
    (void)state;
    static const struct {
        const char *in;
        const char *out;
    } cases[] = {
        {"", ""},
        {"Hello", "Hello"},
        {"%", "%25"},
        {"100% sure", "100%25 sure"},
        {"line\nbreak\ttab", "line%0Abreak%09tab"},
        {"\x7f~ ", "%7F~ "},
        {"\xe7\xb3\xbb\xe7\xbb\x9f", "%E7%B3%BB%E7%BB%9F"},
        {"caf\xc3\xa9", "caf%C3%A9"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[64];
        size_t n = grpc_percent_encode(cases[i].in, strlen(cases[i].in), out, sizeof out);
        assert_string_equal(out, cases[i].out);
        assert_int_equal(n, strlen(cases[i].out));
    }
    char out[8];
    assert_int_equal(grpc_percent_encode("\0x", 2, out, sizeof out), 4);
    assert_string_equal(out, "%00x");
}

static void test_grpc_percent_decode_keeps_malformed_sequences_verbatim(void **state) {
    (void)state;
    static const struct {
        const char *in;
        const char *out;
    } cases[] = {
        {"%", "%"},
        {"%G1", "%G1"},
        {"%4", "%4"},
        {"H%6", "H%6"},
        {"%G0", "%G0"},
        {"%4g", "%4g"},
        {"H%61o", "Hao"},
        {"%%41", "%A"},
        {"%41%", "A%"},
        {"%e7%B3%bB", "\xe7\xb3\xbb"},
        {"%E7%B3%BB%E7%BB%9F", "\xe7\xb3\xbb\xe7\xbb\x9f"},
        {"a%20b", "a b"},
        {"%%", "%%"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[64];
        size_t n = grpc_percent_decode(cases[i].in, strlen(cases[i].in), out, sizeof out);
        assert_string_equal(out, cases[i].out);
        assert_int_equal(n, strlen(cases[i].out));
    }
    char out[4];
    assert_int_equal(grpc_percent_decode("%00%00", 6, out, sizeof out), 2);
    assert_memory_equal(out, "\0\0\0", 3);
}

static void test_grpc_percent_truncates_like_snprintf(void **state) {
    (void)state;
    char out[4] = "XXX";
    assert_int_equal(grpc_percent_encode("a%b", 3, out, sizeof out), 5);
    assert_string_equal(out, "a%2");
    assert_int_equal(grpc_percent_encode("a%b", 3, NULL, 0), 5);
    memcpy(out, "XXX", 4);
    assert_int_equal(grpc_percent_decode("abcdef", 6, out, sizeof out), 6);
    assert_string_equal(out, "abc");
    assert_int_equal(grpc_percent_decode("abcdef", 6, NULL, 0), 6);
    char one[1] = {'X'};
    assert_int_equal(grpc_percent_encode("abc", 3, one, 1), 3);
    assert_int_equal(one[0], '\0');
}

/* ---- content type ---- */

static void test_grpc_content_type_accepts_grpc_and_grpc_proto_with_parameters(void **state) {
    (void)state;
    static const char *const ok[] = {
        "application/grpc",       "application/grpc+proto",     "Application/GRPC",
        "APPLICATION/GRPC+PROTO", "application/grpc;charset=x", "application/grpc+proto; a=b",
        "application/grpc ;a=b",  "application/grpc\t",         "application/grpc;",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (!grpc_content_type_ok(ok[i], strlen(ok[i])))
            fail_msg("rejected \"%s\"", ok[i]);
}

static void test_grpc_content_type_rejects_everything_else(void **state) {
    (void)state;
    static const char *const bad[] = {
        "",
        "application/grp",
        "application/grpcx",
        "application/grpc+json",
        "application/grpc+protobuf",
        "application/grpc+",
        "application/grpc-web",
        " application/grpc",
        "text/plain",
        "application/json",
        "application/grpc x",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (grpc_content_type_ok(bad[i], strlen(bad[i])))
            fail_msg("accepted \"%s\"", bad[i]);
    /* Only len bytes count. */
    assert_true(grpc_content_type_ok("application/grpcXYZ", 16));
    assert_false(grpc_content_type_ok("application/grpc", 15));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grpc_status_name_covers_every_code_and_flags_others),
        cmocka_unit_test(test_grpc_frame_prefix_is_flag_zero_and_big_endian_length),
        cmocka_unit_test(test_grpc_frame_declared_length_reads_any_flag_byte),
        cmocka_unit_test(test_grpc_frame_decode_is_incomplete_at_every_split_point_then_complete),
        cmocka_unit_test(test_grpc_frame_decode_accepts_an_empty_buffer_pointer_as_incomplete),
        cmocka_unit_test(test_grpc_frame_decode_returns_a_zero_length_message),
        cmocka_unit_test(test_grpc_frame_decode_accepts_exactly_the_maximum),
        cmocka_unit_test(test_grpc_frame_decode_reports_max_plus_one_from_the_prefix_alone),
        cmocka_unit_test(test_grpc_frame_decode_judges_the_flag_byte_as_soon_as_it_arrives),
        cmocka_unit_test(test_grpc_frame_decode_walks_messages_back_to_back),
        cmocka_unit_test(test_grpc_timeout_parses_every_unit),
        cmocka_unit_test(test_grpc_timeout_rejects_malformed_values),
        cmocka_unit_test(test_grpc_timeout_reads_only_len_bytes),
        cmocka_unit_test(test_grpc_timeout_saturates_hours_that_overflow),
        cmocka_unit_test(test_grpc_timeout_format_picks_the_shortest_exact_form),
        cmocka_unit_test(test_grpc_timeout_format_truncates_like_snprintf),
        cmocka_unit_test(test_grpc_timeout_format_round_trips_up_and_close),
        cmocka_unit_test(test_grpc_percent_round_trips_every_byte),
        cmocka_unit_test(test_grpc_percent_encodes_the_spec_examples),
        cmocka_unit_test(test_grpc_percent_decode_keeps_malformed_sequences_verbatim),
        cmocka_unit_test(test_grpc_percent_truncates_like_snprintf),
        cmocka_unit_test(test_grpc_content_type_accepts_grpc_and_grpc_proto_with_parameters),
        cmocka_unit_test(test_grpc_content_type_rejects_everything_else),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
