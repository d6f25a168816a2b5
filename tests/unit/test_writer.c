/*
 * test_writer.c - unit tests for src/writer: MD5, the profile summary
 * (LLVM's detailed cutoffs), the text format and the extbinary/binary
 * layouts (magic, section table, ULEB128 encodings).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/profile.h"

static void hex(const uint8_t *d, size_t n, char *out)
{
    size_t i;

    for (i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", d[i]);
}

static void test_md5_vectors(void **state)
{
    static const struct { const char *in, *md5; } v[] = {
        {"", "d41d8cd98f00b204e9800998ecf8427e"},
        {"abc", "900150983cd24fb0d6963f7d28e17f72"},
        {"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
        {"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
         "57edf4a22be3c955ac49da2e2107b67a"},
        /* 56 and 64 bytes: the padding boundaries */
        {"abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcd",
         "31fcfb5165169eb55898e7e4cf34d19a"},
        {"abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl",
         "a2eaf6295c32adc403865fd96a2f182b"},
    };
    uint8_t d[16];
    char h[33];
    size_t i;
    (void)state;

    for (i = 0; i < sizeof v / sizeof *v; i++) {
        lp_md5(v[i].in, strlen(v[i].in), d);
        hex(d, 16, h);
        assert_string_equal(h, v[i].md5);
    }
    /* LLVM MD5Hash(): the first 8 digest bytes, little-endian */
    assert_true(lp_md5_hash64("", 0) == 0x04b2008fd98c1dd4ull);
}

static lp_profile *small_profile(void)
{
    lp_profile *p = lp_profile_new();
    lp_fsamples *foo = lp_profile_get(p, "foo", NULL);
    lp_fsamples *bar = lp_profile_get(p, "bar", NULL), *in;

    foo->total = 1241;
    lp_body_add(lp_fs_body(foo, (lp_loc){0, 0}), 0);
    lp_body_add(lp_fs_body(foo, (lp_loc){2, 0}), 19);
    lp_body_add(lp_fs_body(foo, (lp_loc){3, 0}), 21);
    lp_body_add_target(lp_fs_body(foo, (lp_loc){3, 0}), "bar", 21);
    in = lp_fs_callee(foo, (lp_loc){4, 2}, "baz");
    in->total = 30;
    lp_body_add(lp_fs_body(in, (lp_loc){65533, 0}), 10);
    bar->total = 926;
    bar->head = 21;
    lp_body_add(lp_fs_body(bar, (lp_loc){0, 0}), 20);
    lp_body_add(lp_fs_body(bar, (lp_loc){1, 3}), 13);
    return p;
}

static char *write_to_string(const lp_profile *p, lp_prof_format fmt,
                             int md5, size_t *len)
{
    lp_write_opts o = {0};
    lp_error e = {0};
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);

    o.format = fmt;
    o.use_md5 = md5;
    assert_int_equal(lp_profile_write(f, p, &o, &e), 0);
    fclose(f);
    return buf;
}

static void test_text_format(void **state)
{
    lp_profile *p = small_profile();
    size_t len;
    char *s = write_to_string(p, LP_PROF_TEXT, 0, &len);
    (void)state;

    assert_string_equal(s, "foo:1241:0\n"
                           " 0: 0\n"
                           " 2: 19\n"
                           " 3: 21 bar:21\n"
                           " 4.2: baz:30\n"
                           "  65533: 10\n"
                           "bar:926:21\n"
                           " 0: 20\n"
                           " 1.3: 13\n");
    free(s);
    lp_profile_free(p);
}

static void test_summary_cutoffs(void **state)
{
    lp_profile *p = small_profile();
    lp_summary s;
    lp_error e = {0};
    (void)state;

    assert_int_equal(lp_profile_summary(p, &s, &e), 0);
    /* counts: 0 19 21 | 10 (inlinee) | 20 13 */
    assert_true(s.total_count == 83);
    assert_true(s.max_count == 21);
    assert_true(s.max_function_count == 21);
    assert_true(s.num_counts == 6);
    assert_true(s.num_functions == 2);
    /* 1%: desired 0 -> nothing consumed yet */
    assert_true(s.entries[0].cutoff == 10000 && s.entries[0].min_count == 0 &&
                s.entries[0].num_counts == 0);
    /* 10%: desired 8 -> 21 */
    assert_true(s.entries[1].min_count == 21 && s.entries[1].num_counts == 1);
    /* 50%: desired 41 -> 21+20 */
    assert_true(s.entries[5].min_count == 20 && s.entries[5].num_counts == 2);
    /* 99.9999%: desired 82 -> down to 10 (21+20+19+13+10 = 83) */
    assert_true(s.entries[15].min_count == 10 && s.entries[15].num_counts == 5);
    assert_true(lp_summary_count_for_cutoff(&s, 500000) == 20);
    lp_profile_free(p);
}

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    int i;

    for (i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void test_extbinary_layout(void **state)
{
    static const uint64_t types[7] = {1, 2, 6, 4, 0x20, 3, 5};
    lp_profile *p = small_profile();
    size_t len, k;
    uint8_t *b = (uint8_t *)write_to_string(p, LP_PROF_EXTBINARY, 0, &len);
    uint8_t *m;
    uint64_t end = 0, off, size;
    (void)state;

    /* ULEB128 of "SPROF42\x04" then version 103 */
    assert_true(len > 10 + 8 + 7 * 32);
    assert_int_equal(b[0], 0x84);
    assert_int_equal(b[9], 103);
    assert_true(le64(b + 10) == 7);
    for (k = 0; k < 7; k++) {
        assert_true(le64(b + 18 + 32 * k) == types[k]);
        assert_true(le64(b + 18 + 32 * k + 8) == 0); /* no flags */
        off = le64(b + 18 + 32 * k + 16);
        size = le64(b + 18 + 32 * k + 24);
        assert_true(off + size <= len);
        if (off + size > end)
            end = off + size;
    }
    assert_true(end == len);
    /* the name table section: 3 names sorted, NUL-terminated */
    off = le64(b + 18 + 32 * 1 + 16);
    assert_int_equal(b[off], 3);
    assert_memory_equal(b + off + 1, "bar\0baz\0foo\0", 12);
    free(b);

    m = (uint8_t *)write_to_string(p, LP_PROF_EXTBINARY, 1, &len);
    assert_true(le64(m + 18 + 32 + 8) == (3ull << 32)); /* MD5 + fixed length */
    off = le64(m + 18 + 32 + 16);
    assert_int_equal(m[off], 3);
    assert_true(le64(m + off + 1) == lp_md5_hash64("bar", 3));
    free(m);
    lp_profile_free(p);
}

static void test_legacy_binary(void **state)
{
    lp_profile *p = small_profile();
    size_t len;
    uint8_t *b = (uint8_t *)write_to_string(p, LP_PROF_BINARY, 0, &len);
    (void)state;

    /* 'S' 'P' 'R' 'O' 'F' '4' '2' 0xff as ULEB128: first byte 0xff */
    assert_int_equal(b[0], 0xff);
    assert_int_equal(b[9], 103);
    /* summary: total 83 */
    assert_int_equal(b[10], 83);
    free(b);
    lp_profile_free(p);
}

static void test_text_round_trip(void **state)
{
    lp_profile *p = small_profile(), *q;
    size_t len, len2;
    char *s = write_to_string(p, LP_PROF_TEXT, 0, &len), *s2;
    FILE *f = fmemopen(s, len, "r");
    lp_error e = {0};
    (void)state;

    q = lp_profile_read_text(f, "mem", &e);
    fclose(f);
    assert_non_null(q);
    s2 = write_to_string(q, LP_PROF_TEXT, 0, &len2);
    assert_string_equal(s, s2);
    free(s);
    free(s2);
    lp_profile_free(p);
    lp_profile_free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_md5_vectors),
        cmocka_unit_test(test_text_format),
        cmocka_unit_test(test_summary_cutoffs),
        cmocka_unit_test(test_extbinary_layout),
        cmocka_unit_test(test_legacy_binary),
        cmocka_unit_test(test_text_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
