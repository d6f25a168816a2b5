/*
 * test_writer.c - unit tests for src/writer: MD5, the profile summary
 * (LLVM's detailed cutoffs), the text format and the extbinary/binary
 * layouts (magic, section table, ULEB128 encodings, zlib-compressed
 * sections, CFG checksums), and `show` (llvm-profdata show --sample's
 * output, compared with what llvm-profdata-22 printed for the profile).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

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

/* A profile large enough for the text writer's two threads (from 8192
 * profiles, batches of 1024 alternately formatted by the caller and by a
 * helper into memory): the text is the one-thread text, every batch in
 * its place (totals descending, each profile whole). */
static void test_text_two_threads(void **state)
{
    enum { N = 20000 };
    lp_profile *p = lp_profile_new();
    char name[16], *want = malloc(N * 64), *got;
    lp_fsamples *fs;
    lp_body_rec *b;
    size_t len, o = 0;
    int i;
    (void)state;

    assert_non_null(want);
    for (i = 0; i < N; i++) {
        snprintf(name, sizeof name, "f%05d", i);
        assert_non_null(fs = lp_profile_get(p, name, NULL));
        fs->total = (uint64_t)i + 1;
        assert_non_null(b = lp_fs_body(fs, (lp_loc){1, (uint32_t)i % 3}));
        lp_body_add(b, (uint64_t)i);
        if (i % 5 == 0)
            assert_int_equal(lp_body_add_target(b, "g", 7), 0);
    }
    for (i = N - 1; i >= 0; i--) {
        o += (size_t)sprintf(want + o, "f%05d:%d:0\n 1", i, i + 1);
        if (i % 3)
            o += (size_t)sprintf(want + o, ".%d", i % 3);
        o += (size_t)sprintf(want + o, ": %d%s\n", i, i % 5 ? "" : " g:7");
    }
    got = write_to_string(p, LP_PROF_TEXT, 0, &len);
    assert_int_equal(len, o);
    assert_memory_equal(got, want, o);
    free(got);
    free(want);
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

/* The context-less summary of CS profiles: contexts of one function
 * summed by location first, whether the functions are found by name or
 * numbered by the caller (the context trie numbers its interned names). */
static void test_summary_by_function(void **state)
{
    static const struct { const char *ctx, *name; uint32_t line; uint64_t n, head; } r[] = {
        {"main:1 @ f", "f", 1, 5, 3}, {"main:1 @ f", "f", 2, 7, 3},
        {"main:2 @ f", "f", 1, 6, 4}, {"g", "g", 1, 5, 9},
        {"main:3 @ g", "g", 3, 0, 1}, {"main", "main", 1, 40, 0},
    };
    lp_profile *p = lp_profile_new();
    lp_fsamples *v[5];
    uint32_t group[5] = {0, 0, 1, 1, 2};
    lp_summary a, b;
    lp_error e = {0};
    size_t i, n = 0;
    (void)state;

    for (i = 0; i < sizeof r / sizeof r[0]; i++) {
        lp_fsamples *fs = lp_profile_get(p, r[i].ctx, r[i].name);
        assert_non_null(fs);
        if (n == 0 || v[n - 1] != fs)
            v[n++] = fs;
        fs->head = r[i].head;
        lp_body_add(lp_fs_body(fs, (lp_loc){r[i].line, 0}), r[i].n);
    }
    assert_int_equal(n, 5);
    assert_int_equal(lp_summary_by_function(v, n, &a, &e), 0);
    assert_int_equal(lp_summary_by_group(v, n, group, 3, &b, &e), 0);
    /* f:1 11, f:2 7, g:1 5, g:3 0, main:1 40 */
    assert_true(a.total_count == 63 && a.max_count == 40);
    assert_true(a.num_counts == 5 && a.num_functions == 3);
    assert_true(a.max_function_count == 10);   /* g: 9 + 1 */
    assert_true(a.entries[5].min_count == 40 && a.entries[5].num_counts == 1);
    assert_true(a.entries[15].min_count == 5 && a.entries[15].num_counts == 4);
    assert_true(b.total_count == a.total_count && b.max_count == a.max_count &&
                b.max_function_count == a.max_function_count &&
                b.num_counts == a.num_counts && b.num_functions == a.num_functions);
    for (i = 0; i < LP_NR_CUTOFFS; i++)
        assert_true(b.entries[i].cutoff == a.entries[i].cutoff &&
                    b.entries[i].min_count == a.entries[i].min_count &&
                    b.entries[i].num_counts == a.entries[i].num_counts);
    lp_profile_free(p);
}

/* A summary of enough profiles to be summed on two threads (whole
 * groups each): the parts' counts and totals must add up. 20000 profiles
 * of 100 functions; function g's location 1 sums to 200, its location
 * 2 + g to 200 g. */
static void test_summary_by_group_split(void **state)
{
    enum { N = 20000, F = 100 };
    lp_fsamples *fs = calloc(N, sizeof *fs), **v = calloc(N, sizeof *v);
    uint32_t *group = calloc(N, sizeof *group);
    lp_summary s;
    lp_error e = {0};
    size_t i;
    (void)state;

    assert_true(fs && v && group);
    for (i = 0; i < N; i++) {
        assert_int_equal(lp_fs_init(&fs[i], "f"), 0);
        fs[i].head = 1;
        lp_body_add(lp_fs_body(&fs[i], (lp_loc){1, 0}), 1);
        lp_body_add(lp_fs_body(&fs[i], (lp_loc){2 + (uint32_t)(i % F), 0}), i % F);
        v[i] = &fs[i];
        group[i] = (uint32_t)(i % F);
    }
    assert_int_equal(lp_summary_by_group(v, N, group, F, &s, &e), 0);
    assert_true(s.num_functions == F && s.num_counts == 2 * F);
    assert_true(s.total_count == 200 * F + 200 * (F * (F - 1) / 2));
    assert_true(s.max_count == 200 * (F - 1) && s.max_function_count == 200);
    /* 1%: the largest count alone; 99.9999%: down to the zero count */
    assert_true(s.entries[0].min_count == 200 * (F - 1) && s.entries[0].num_counts == 1);
    assert_true(s.entries[15].min_count == 200 && s.entries[15].num_counts == 2 * F - 1);
    for (i = 0; i < N; i++)
        lp_fs_clear(&fs[i]);
    free(fs);
    free(v);
    free(group);
}

/* The summary accumulated profile by profile in two accumulators (two
 * threads' parts, interleaved), merged, equals lp_summary_by_group's;
 * a nested profile spoils it. */
static void test_summary_accumulated(void **state)
{
    enum { N = 3000, F = 37 };
    lp_fsamples *fs = calloc(N, sizeof *fs), **v = calloc(N, sizeof *v), nested;
    uint32_t *group = calloc(N, sizeof *group);
    static char names[F];       /* one address per function */
    lp_sumacc *a = lp_sumacc_new(), *b = lp_sumacc_new(), *c = lp_sumacc_new();
    lp_summary want, got;
    lp_error e = {0};
    size_t i, k;
    (void)state;

    assert_true(fs && v && group && a && b && c);
    for (i = 0; i < N; i++) {
        assert_int_equal(lp_fs_init(&fs[i], "f"), 0);
        fs[i].head = i % 7;
        for (k = 0; k < 1 + i % 5; k++)
            lp_body_add(lp_fs_body(&fs[i], (lp_loc){(uint32_t)(k * 3 + i % 4),
                                                    (uint32_t)(k & 1)}),
                        (i * 2654435761u + k) % 1000);
        v[i] = &fs[i];
        group[i] = (uint32_t)(i * 7 % F);
        assert_int_equal(lp_sumacc_add(i % 3 ? a : b, &names[group[i]], &fs[i]), 0);
    }
    assert_int_equal(lp_summary_by_group(v, N, group, F, &want, &e), 0);
    assert_int_equal(lp_sumacc_merge(a, b), 0);
    assert_int_equal(lp_sumacc_finish(a, &got, &e), 0);
    assert_true(want.num_functions == F);
    assert_memory_equal(&got, &want, sizeof got);
    /* inlinees are not summed flat: an error, as by group */
    assert_int_equal(lp_fs_init(&nested, "g"), 0);
    assert_non_null(lp_fs_callee(&nested, (lp_loc){1, 0}, "h"));
    assert_int_equal(lp_sumacc_add(c, &names[0], &nested), -1);
    assert_int_equal(lp_sumacc_add(c, &names[0], &fs[0]), -1);
    assert_int_equal(lp_sumacc_finish(c, &got, &e), -1);
    lp_fs_clear(&nested);
    for (i = 0; i < N; i++)
        lp_fs_clear(&fs[i]);
    free(fs);
    free(v);
    free(group);
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


static char *show_to_string(const lp_profile *p, const lp_show_opts *o)
{
    lp_prof_info info;
    lp_error e = {0};
    char *buf = NULL, *t;
    size_t len, tl;
    FILE *f;
    lp_profile *q;
    int missing;

    /* read back from text: the summary is the reader's, as in show */
    t = write_to_string(p, LP_PROF_TEXT, 0, &tl);
    q = lp_profile_read_mem(t, tl, "mem", &info, &e);
    assert_non_null(q);
    f = open_memstream(&buf, &len);
    assert_int_equal(lp_profile_show(f, q, &info, o, &missing, &e), 0);
    fclose(f);
    lp_prof_info_free(&info);
    lp_profile_free(q);
    free(t);
    return buf;
}

/* what llvm-profdata-22 show --sample prints for the same profile */
static void test_show_format(void **state)
{
    lp_profile *p = small_profile();
    lp_show_opts o = {0};
    char *s;
    (void)state;

    s = show_to_string(p, &o);
    assert_string_equal(s,
        "Function: foo: 1241, 0, 3 sampled lines\n"
        "Samples collected in the function's body {\n"
        "  0: 0\n"
        "  2: 19\n"
        "  3: 21, calls: bar:21\n"
        "}\n"
        "Samples collected in inlined callsites {\n"
        "  4.2: inlined callee: baz: 30, 0, 1 sampled lines\n"
        "    Samples collected in the function's body {\n"
        "      65533: 10\n"
        "    }\n"
        "    No inlined callsites in this function\n"
        "}\n"
        "Function: bar: 926, 21, 2 sampled lines\n"
        "Samples collected in the function's body {\n"
        "  0: 20\n"
        "  1.3: 13\n"
        "}\n"
        "No inlined callsites in this function\n");
    free(s);
    o = (lp_show_opts){"bar", 0, 1, 0, 1, 0};
    s = show_to_string(p, &o);
    assert_string_equal(s,
        "Function: bar: 926, 21, 2 sampled lines\n"
        "Samples collected in the function's body {\n"
        "  0: 20\n"
        "  1.3: 13\n"
        "}\n"
        "No inlined callsites in this function\n"
        "Total functions: 2\n"
        "Maximum function count: 21\n"
        "Maximum internal block count: 0\n"
        "Total number of blocks: 6\n"
        "Total count: 83\n"
        "Detailed summary:\n"
        "0 blocks (0.00%) with count >= 0 account for 1% of the total counts.\n"
        "1 blocks (16.67%) with count >= 21 account for 10% of the total counts.\n"
        "1 blocks (16.67%) with count >= 21 account for 20% of the total counts.\n"
        "2 blocks (33.33%) with count >= 20 account for 30% of the total counts.\n"
        "2 blocks (33.33%) with count >= 20 account for 40% of the total counts.\n"
        "2 blocks (33.33%) with count >= 20 account for 50% of the total counts.\n"
        "3 blocks (50.00%) with count >= 19 account for 60% of the total counts.\n"
        "3 blocks (50.00%) with count >= 19 account for 70% of the total counts.\n"
        "4 blocks (66.67%) with count >= 13 account for 80% of the total counts.\n"
        "5 blocks (83.33%) with count >= 10 account for 90% of the total counts.\n"
        "5 blocks (83.33%) with count >= 10 account for 95% of the total counts.\n"
        "5 blocks (83.33%) with count >= 10 account for 99% of the total counts.\n"
        "5 blocks (83.33%) with count >= 10 account for 99.9% of the total counts.\n"
        "5 blocks (83.33%) with count >= 10 account for 99.99% of the total counts.\n"
        "5 blocks (83.33%) with count >= 10 account for 99.999% of the total counts.\n"
        "5 blocks (83.33%) with count >= 10 account for 99.9999% of the total counts.\n"
        "2 out of 2 functions with profile (100.00%) are considered hot functions (max sample >= 10).\n"
        "2167 out of 2167 profile counts (100.00%) are from hot functions.\n"
        " Total sample (%)       Max sample        Entry sample    Function name\n"
        " 1241 (57.27%)          21                1               foo\n");
    free(s);
    /* a function that is not there: LLVM's empty profile */
    o = (lp_show_opts){"nosuch", 0, 0, 0, 0, 0};
    s = show_to_string(p, &o);
    assert_string_equal(s, "Function: : 0, 0, 0 sampled lines\n"
                           "No samples collected in the function's body\n"
                           "No inlined callsites in this function\n");
    free(s);
    lp_profile_free(p);
}

/* --show-sec-info-only of an extbinary profile, read back */
static void test_show_sections(void **state)
{
    lp_profile *p = small_profile(), *q;
    lp_write_opts wo = {.format = LP_PROF_EXTBINARY, .compress = 1};
    lp_prof_info info;
    lp_error e = {0};
    size_t len, n;
    char *b, *s = NULL;
    FILE *f;
    (void)state;

    f = open_memstream(&b, &len);
    assert_int_equal(lp_profile_write(f, p, &wo, &e), 0);
    fclose(f);
    q = lp_profile_read_mem(b, len, "z", &info, &e);
    assert_non_null(q);
    f = open_memstream(&s, &n);
    lp_profile_show_sections(f, &info);
    fclose(f);
    assert_non_null(strstr(s, "ProfileSummarySection - Offset: 242, Size: "));
    assert_non_null(strstr(s, ", Flags: {compressed}\nNameTableSection"));
    assert_non_null(strstr(s, "ProfileSymbolListSection - Offset: "));
    assert_non_null(strstr(s, ", Size: 0, Flags: {compressed}\n"));
    assert_non_null(strstr(s, "Header Size: 242\n"));
    free(s);
    lp_prof_info_free(&info);
    lp_profile_free(q);
    free(b);
    lp_profile_free(p);
}

/* compressed sections: ULEB128 sizes then zlib data that inflates to the
 * section written without compression */
static void test_compressed_sections(void **state)
{
    lp_profile *p = small_profile();
    lp_write_opts plain = {.format = LP_PROF_EXTBINARY};
    lp_write_opts z = {.format = LP_PROF_EXTBINARY, .compress = 1};
    lp_error e = {0};
    size_t n1, n2;
    uint8_t *a, *b, *out;
    uint64_t aoff, asz, boff, bsz;
    FILE *f;
    uLongf got;
    (void)state;

    f = open_memstream((char **)&a, &n1);
    assert_int_equal(lp_profile_write(f, p, &plain, &e), 0);
    fclose(f);
    f = open_memstream((char **)&b, &n2);
    assert_int_equal(lp_profile_write(f, p, &z, &e), 0);
    fclose(f);
    /* the LBR profile section: the 5th entry of the table */
    aoff = le64(a + 18 + 32 * 4 + 16);
    asz = le64(a + 18 + 32 * 4 + 24);
    boff = le64(b + 18 + 32 * 4 + 16);
    bsz = le64(b + 18 + 32 * 4 + 24);
    assert_true(le64(b + 18 + 32 * 4 + 8) == 1); /* SecFlagCompress */
    assert_int_equal(b[boff], asz);              /* inflated size */
    assert_true(b[boff + 1] == bsz - 2);         /* compressed size */
    out = malloc(asz);
    got = (uLongf)asz;
    assert_int_equal(uncompress(out, &got, b + boff + 2, (uLong)bsz - 2), Z_OK);
    assert_true(got == asz);
    assert_memory_equal(out, a + aoff, asz);
    free(out);
    free(a);
    free(b);
    lp_profile_free(p);
}

/* probe-based profiles: checksums in text and in FuncMetadata */
static void test_probe_checksums(void **state)
{
    lp_profile *p = small_profile();
    size_t len;
    uint8_t *b;
    char *s;
    uint64_t off;
    (void)state;

    p->is_probe_based = 1;
    lp_profile_find(p, "foo")->checksum = 300;
    lp_fs_find_callee(lp_profile_find(p, "foo"), (lp_loc){4, 2}, "baz")->checksum = 7;
    s = write_to_string(p, LP_PROF_TEXT, 0, &len);
    assert_non_null(strstr(s, "  65533: 10\n  !CFGChecksum: 7\n !CFGChecksum: 300\n"
                              "bar:926:21\n 0: 20\n 1.3: 13\n !CFGChecksum: 0\n"));
    free(s);
    b = (uint8_t *)write_to_string(p, LP_PROF_EXTBINARY, 0, &len);
    assert_true(le64(b + 18 + 32 * 6 + 8) == (1ull << 32)); /* probe */
    off = le64(b + 18 + 32 * 6 + 16);
    /* foo (name 2): checksum 300, 1 inlinee at 4.2: baz (1), checksum 7 */
    assert_memory_equal(b + off, "\x02\xac\x02\x01\x04\x02\x01\x07\x00", 9);
    free(b);
    /* LLVM writes no probe-based profile in the binary format */
    {
        lp_write_opts o = {.format = LP_PROF_BINARY};
        lp_error e = {0};
        FILE *f = fopen("/dev/null", "w");

        assert_int_equal(lp_profile_write(f, p, &o, &e), -1);
        assert_non_null(strstr(e.msg, "probe-based"));
        fclose(f);
    }
    lp_profile_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_md5_vectors),
        cmocka_unit_test(test_text_format),
        cmocka_unit_test(test_text_two_threads),
        cmocka_unit_test(test_summary_cutoffs),
        cmocka_unit_test(test_summary_by_function),
        cmocka_unit_test(test_summary_by_group_split),
        cmocka_unit_test(test_summary_accumulated),
        cmocka_unit_test(test_extbinary_layout),
        cmocka_unit_test(test_legacy_binary),
        cmocka_unit_test(test_text_round_trip),
        cmocka_unit_test(test_show_format),
        cmocka_unit_test(test_show_sections),
        cmocka_unit_test(test_compressed_sections),
        cmocka_unit_test(test_probe_checksums),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
