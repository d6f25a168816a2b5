/*
 * test_profile_read.c - unit tests for reading sample profiles back
 * (src/profile: read.c, binread.c, extread.c, textread.c's metadata,
 * merge.c, and the model's MD5 names and weighted merge): format
 * sniffing, round trips through every writer (CS, probe checksums,
 * attributes, MD5 names, compression, symbol lists, summaries), the
 * errors of malformed files (file, offset, section, what was expected),
 * and merging as llvm-profdata merges.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lbr2prof/profile.h"

static lp_profile *from_text(const char *text)
{
    lp_error e = {0};
    lp_profile *p = lp_profile_read_mem(text, strlen(text), "t.prof", NULL, &e);

    if (!p)
        fprintf(stderr, "%s\n", e.msg);
    assert_non_null(p);
    return p;
}

static char *write_mem(const lp_profile *p, const lp_write_opts *o, size_t *n)
{
    lp_error e = {0};
    char *buf = NULL;
    FILE *f = open_memstream(&buf, n);

    assert_int_equal(lp_profile_write(f, p, o, &e), 0);
    fclose(f);
    return buf;
}

static char *to_text(const lp_profile *p)
{
    lp_write_opts o = {.format = LP_PROF_TEXT};
    size_t n;

    return write_mem(p, &o, &n);
}

/* p written with o, read back: the same text */
static void round_trip(const char *text, const lp_write_opts *o,
                       lp_prof_info *info)
{
    lp_profile *p = from_text(text), *q;
    lp_error e = {0};
    size_t n;
    char *bin = write_mem(p, o, &n), *a, *b;

    q = lp_profile_read_mem(bin, n, "rt", info, &e);
    if (!q)
        fprintf(stderr, "%s\n", e.msg);
    assert_non_null(q);
    a = to_text(p);
    b = to_text(q);
    assert_string_equal(a, b);
    assert_int_equal(p->is_cs, q->is_cs);
    assert_int_equal(p->is_probe_based, q->is_probe_based);
    free(a);
    free(b);
    free(bin);
    lp_profile_free(p);
    lp_profile_free(q);
}

static const char *const FLAT =
    "main:1000:3\n"
    " 1: 3\n"
    " 2: 100 foo:60 bar:40\n"
    " 3.1: baz:500\n"
    "  1: 250\n"
    "  2: 250 qux:250\n"
    " 3.1: abc:7\n"
    "  9: 7\n"
    "foo:60:60\n"
    " 0: 60\n";

static const char *const CS =
    "[main:1 @ foo:3.2 @ bar]:120:10\n"
    " 1: 60\n"
    " 2: 60\n"
    " !Attributes: 2\n"
    "[main:1 @ foo]:50:5\n"
    " 2: 25 bar:10\n"
    " !Attributes: 1\n"
    "[main]:8:0\n"
    " 1: 8 foo:5\n";

static const char *const PROBE =
    "foo:75:0\n"
    " 1: 0\n"
    " 8: 15 bar:15\n"
    " 9: bar:30\n"
    "  1: 30\n"
    "  !CFGChecksum: 72617220756\n"
    " !CFGChecksum: 563088904013236\n"
    "bar:30:15\n"
    " 1: 15\n"
    " !CFGChecksum: 72617220756\n";

/* ---- names ------------------------------------------------------------------ */

static void test_md5_names(void **state)
{
    uint64_t v;
    (void)state;

    assert_int_equal(lp_name_md5("15822663052811949562", &v), 1);
    assert_true(v == 15822663052811949562ull);
    assert_int_equal(lp_name_md5("18446744073709551616", &v), 0); /* 2^64 */
    assert_int_equal(lp_name_md5("0123", &v), 0);
    assert_int_equal(lp_name_md5("0", &v), 0);
    assert_int_equal(lp_name_md5("main", &v), 0);
    assert_int_equal(lp_name_md5("12a", &v), 0);
    /* MD5Hash("main"): the name of main in an MD5 profile */
    assert_true(lp_name_hash("main") == 15822663052811949562ull);
    assert_true(lp_name_hash("123") == 123);
    /* FunctionId order: hashes numerically, before names; names strcmp */
    assert_true(lp_name_cmp("9", "10") < 0);
    assert_true(lp_name_cmp("10", "9") > 0);
    assert_true(lp_name_cmp("99", "a") < 0);
    assert_true(lp_name_cmp("a", "99") > 0);
    assert_true(lp_name_cmp("ab", "b") < 0);
    assert_int_equal(lp_name_cmp("77", "77"), 0);
    /* contexts with MD5 frames: numerically, and the sorted view agrees */
    assert_true(lp_context_cmp("9:1 @ 5", "10:1 @ 5") < 0);
    assert_true(lp_context_cmp("10:1 @ 5", "main:1 @ 5") < 0);
    assert_true(lp_context_cmp("7:1 @ 12", "7:1 @ 3") > 0);
}

static void test_md5_sorted_views(void **state)
{
    lp_profile *p = from_text("[10:1 @ 5]:7:0\n 1: 7\n[9:1 @ 5]:7:0\n 1: 7\n"
                              "[main:1 @ 5]:7:0\n 1: 7\n[20]:7:0\n 1: 2 30:1 4:1\n");
    lp_fsamples **v = NULL;
    lp_body_view *b = NULL;
    size_t n = lp_profile_sorted(p, &v), nb;
    (void)state;

    assert_int_equal(n, 4);
    assert_string_equal(v[0]->context, "9:1 @ 5");
    assert_string_equal(v[1]->context, "10:1 @ 5");
    assert_string_equal(v[2]->context, "20");
    assert_string_equal(v[3]->context, "main:1 @ 5");
    nb = lp_fs_sorted_body(v[2], &b);
    assert_int_equal(b[0].nr_targets, 2);
    assert_string_equal(b[0].targets[0].name, "4"); /* equal counts: 4 < 30 */
    lp_body_views_free(b, nb);
    free(v);
    lp_profile_free(p);
}

/* ---- sniffing and the text reader's metadata ------------------------------------------ */

static void test_sniff(void **state)
{
    /* ULEB128 of "SPROF42" and the format byte, then the version */
    static const unsigned char ext[] = {0x84, 0xe4, 0xd0, 0xb1, 0xf4, 0xc9,
                                        0x94, 0xa8, 0x53, 0x67};
    static const unsigned char bin[] = {0xff, 0xe5, 0xd0, 0xb1, 0xf4, 0xc9,
                                        0x94, 0xa8, 0x53, 0x67};
    static const unsigned char compact[] = {0x82, 0xe4, 0xd0, 0xb1, 0xf4,
                                            0xc9, 0x94, 0xa8, 0x53, 0x67};
    (void)state;

    assert_int_equal(lp_profile_sniff(ext, sizeof ext), LP_PROF_EXTBINARY);
    assert_int_equal(lp_profile_sniff(bin, sizeof bin), LP_PROF_BINARY);
    assert_int_equal(lp_profile_sniff(compact, sizeof compact), 0);
    assert_int_equal(lp_profile_sniff("# c\n\nmain:1:0\n", 14), LP_PROF_TEXT);
    assert_int_equal(lp_profile_sniff("[a:1 @ b]:3:0\n", 14), LP_PROF_TEXT);
    assert_int_equal(lp_profile_sniff(" 1: 3\n", 6), 0);
    assert_int_equal(lp_profile_sniff("3\n0-0:1\n", 8), 0); /* raw profile */
    assert_int_equal(lp_profile_sniff("", 0), 0);
}

static void test_text_metadata(void **state)
{
    lp_profile *p = from_text(PROBE), *q;
    lp_fsamples *foo = lp_profile_find(p, "foo");
    lp_error e = {0};
    char *t;
    (void)state;

    assert_true(p->is_probe_based);
    assert_true(foo->checksum == 563088904013236ull);
    assert_true(lp_fs_find_callee(foo, (lp_loc){9, 0}, "bar")->checksum ==
                72617220756ull);
    t = to_text(p);
    assert_string_equal(t, "foo:75:0\n 1: 0\n 8: 15 bar:15\n 9: bar:30\n  1: 30\n"
                           "  !CFGChecksum: 72617220756\n"
                           " !CFGChecksum: 563088904013236\nbar:30:15\n 1: 15\n"
                           " !CFGChecksum: 72617220756\n");
    free(t);
    lp_profile_free(p);
    /* canonical contexts, !Flat, pre-inlined from attributes */
    p = from_text("[main:1.0 @ foo:2.3 @ bar:9]:5:1\n 1: 5\n !Attributes: 2\n !Flat\n");
    assert_non_null(lp_profile_find(p, "main:1 @ foo:2.3 @ bar"));
    assert_true(p->is_preinlined);
    lp_profile_free(p);
    /* a callee twice on one line keeps its last count; two lines of one
     * location add up (LLVM's TargetCountMap, addCalledTargetSamples) */
    p = from_text("main:9:1\n 1: 5 a:2 b:3 a:7\n 1: 1 b:1\n");
    foo = lp_profile_find(p, "main");
    assert_true(lp_fs_target_count(foo, (lp_loc){1, 0}, "a") == 7);
    assert_true(lp_fs_target_count(foo, (lp_loc){1, 0}, "b") == 4);
    assert_true(lp_body_count(lp_fs_body_find(foo, (lp_loc){1, 0})) == 6);
    lp_profile_free(p);
    /* errors with their line */
    q = lp_profile_read_mem("main:1:1\n 1: 1\n !Attributes: 1\n 2: 3\n", 37,
                            "m.prof", NULL, &e);
    assert_null(q);
    assert_non_null(strstr(e.msg, "m.prof:4: a sample line after the metadata"));
    q = lp_profile_read_mem("main:1:1\n !Unknown: 1\n", 22, "m.prof", NULL, &e);
    assert_null(q);
    assert_non_null(strstr(e.msg, "m.prof:2: unknown metadata"));
    q = lp_profile_read_mem("main:1:1\n 70000: 1\n", 19, "m.prof", NULL, &e);
    assert_null(q);
    assert_non_null(strstr(e.msg, "m.prof:2: expected OFFSET"));
    q = lp_profile_read_mem("main:1:1\n[a:1 @ b]:1:1\n", 23, "m.prof", NULL, &e);
    assert_null(q);
    assert_non_null(strstr(e.msg, "m.prof:2: context-sensitive"));
    q = lp_profile_read_mem("[a:1 @ :2 @ b]:1:1\n", 19, "m.prof", NULL, &e);
    assert_null(q);
    assert_non_null(strstr(e.msg, "m.prof:1: a context frame without"));
}

/* ---- round trips -------------------------------------------------------------------- */

static void test_round_trips(void **state)
{
    static const char *const syms[] = {"zed", "main", "foo", "main"};
    lp_write_opts ext = {.format = LP_PROF_EXTBINARY};
    lp_write_opts md5z = {.format = LP_PROF_EXTBINARY, .use_md5 = 1, .compress = 1};
    lp_write_opts bin = {.format = LP_PROF_BINARY};
    lp_write_opts sy = {.format = LP_PROF_EXTBINARY, .symbol_list = syms,
                        .nr_symbols = 4, .compress = 1, .partial = 1};
    lp_prof_info info;
    (void)state;

    round_trip(FLAT, &ext, NULL);
    round_trip(FLAT, &bin, NULL);
    round_trip(CS, &ext, NULL);
    round_trip(CS, &(lp_write_opts){.format = LP_PROF_EXTBINARY, .compress = 1}, NULL);
    round_trip(PROBE, &ext, NULL);
    round_trip(PROBE, &(lp_write_opts){.format = LP_PROF_EXTBINARY, .compress = 1}, NULL);
    round_trip(FLAT, &sy, &info);
    assert_int_equal(info.format, LP_PROF_EXTBINARY);
    assert_int_equal(info.nr_symbols, 3); /* sorted, each once */
    assert_string_equal(info.symbols[0], "foo");
    assert_string_equal(info.symbols[2], "zed");
    assert_int_equal(info.partial, 1);
    assert_int_equal(info.nr_sections, 7);
    assert_true(info.sections[0].flags & 1); /* compressed */
    assert_int_equal(info.nr_cutoffs, 16);
    assert_true(info.num_functions == 2 && info.total_count == 670);
    lp_prof_info_free(&info);
    /* MD5: names become their hashes (decimal, as LLVM prints them) */
    {
        lp_profile *p = from_text(FLAT), *q;
        lp_error e = {0};
        size_t n;
        char *b = write_mem(p, &md5z, &n);

        q = lp_profile_read_mem(b, n, "md5", &info, &e);
        assert_non_null(q);
        assert_int_equal(info.md5, 1);
        assert_non_null(lp_profile_find(q, "15822663052811949562"));
        lp_prof_info_free(&info);
        lp_profile_free(q);
        free(b);
        lp_profile_free(p);
    }
}

/* Many names (the writer's name table grows its set several times),
 * each referenced many times (call targets, inlinees, top-level names),
 * MD5-like numeric names among them (FunctionId order: numerically,
 * first): flat, legacy binary and CS profiles read back the same. */
static void test_many_names(void **state)
{
    enum { N = 3000 };
    size_t cap = (size_t)N * 160, len = 0, clen = 0;
    char *flat = malloc(cap), *cs = malloc(cap), name[N][24];
    unsigned i;
    (void)state;

    assert_true(flat && cs);
    for (i = 0; i < N; i++) {
        if (i % 7 == 0)
            snprintf(name[i], sizeof name[i], "%u", 1000u + i * 7919u);
        else
            snprintf(name[i], sizeof name[i], "_Z%uf%u", i % 13, i);
    }
    for (i = 0; i < N; i++) {
        len += (size_t)snprintf(flat + len, cap - len,
                                "%s:%u:%u\n 1: %u %s:%u %s:%u\n 2.1: %s:5\n  1: 5 %s:5\n",
                                name[i], 100 + i, i % 3, 10 + i,
                                name[(i * 31 + 1) % N], 1 + i % 5,
                                name[(i * 17 + 3) % N], 2,
                                name[(i + 1) % N], name[(i + 2) % N]);
        clen += (size_t)snprintf(cs + clen, cap - clen,
                                 "[%s:1 @ %s]:%u:1\n 1: %u %s:3\n",
                                 name[(i * 7 + 5) % N], name[i], 20 + i, 4 + i,
                                 name[(i * 11 + 2) % N]);
        assert_true(len < cap && clen < cap);
    }
    round_trip(flat, &(lp_write_opts){.format = LP_PROF_EXTBINARY}, NULL);
    round_trip(flat, &(lp_write_opts){.format = LP_PROF_BINARY}, NULL);
    round_trip(cs, &(lp_write_opts){.format = LP_PROF_EXTBINARY}, NULL);
    free(flat);
    free(cs);
}

/* the text profile's summary is computed as LLVM's reader computes it */
static void test_text_summary(void **state)
{
    lp_profile *p;
    lp_prof_info info;
    lp_error e = {0};
    (void)state;

    p = lp_profile_read_mem(FLAT, strlen(FLAT), "f", &info, &e);
    assert_non_null(p);
    assert_int_equal(info.format, LP_PROF_TEXT);
    assert_int_equal(info.nr_cutoffs, 16);
    assert_true(info.num_functions == 2);
    assert_true(info.max_function_count == 60);
    assert_true(info.total_count == 3 + 100 + 250 + 250 + 7 + 60);
    assert_true(info.num_counts == 6);
    lp_prof_info_free(&info);
    lp_profile_free(p);
}

/* ---- malformed binaries ------------------------------------------------------------- */

static void expect_error(const void *d, size_t n, const char *want)
{
    lp_error e = {0};
    lp_profile *p = lp_profile_read_mem(d, n, "bad.prof", NULL, &e);

    assert_null(p);
    if (!strstr(e.msg, want))
        fprintf(stderr, "got: %s\nwant: %s\n", e.msg, want);
    assert_non_null(strstr(e.msg, want));
    assert_non_null(strstr(e.msg, "bad.prof"));
}

static void test_malformed(void **state)
{
    lp_profile *p = from_text(FLAT);
    lp_write_opts ext = {.format = LP_PROF_EXTBINARY};
    lp_write_opts bin = {.format = LP_PROF_BINARY};
    size_t n, i, nb;
    char *b = write_mem(p, &ext, &n), *lb = write_mem(p, &bin, &nb), *c;
    unsigned char v[64];
    (void)state;

    /* every truncation fails with an offset (a legacy binary profile has
     * no length: cut between two functions it is a shorter profile) */
    for (i = 1; i < n; i++)
        expect_error(b, i, "offset 0x");
    for (i = 1; i < nb; i++) {
        lp_error e = {0};
        lp_profile *q = lp_profile_read_mem(lb, i, "bad.prof", NULL, &e);
        if (q) {
            assert_true(q->nr_funcs < 2);
            lp_profile_free(q);
        } else {
            assert_non_null(strstr(e.msg, "bad.prof: offset 0x"));
        }
    }
    expect_error(b, 0, "empty file");
    expect_error("hello\n", 6, "no sample profile");
    expect_error("adcg\0\0\0\0", 8, "GCC (gcov)");
    /* version */
    memcpy(v, b, 9);
    v[9] = 104;
    expect_error(v, 10, "version 104, expected 103");
    /* compact binary magic */
    memcpy(v, b, 10);
    v[0] = 0x82;
    expect_error(v, 10, "compact binary");
    /* a section beyond the file: the first entry's size */
    c = malloc(n);
    memcpy(c, b, n);
    c[9 + 1 + 8 + 24 + 7] = 0x7f; /* magic, version, count; type, flags, offset */
    expect_error(c, n, "ends beyond the file");
    free(c);
    free(b);
    free(lb);
    lp_profile_free(p);
}

/* hand-made legacy binary profiles: one field wrong at a time */
static void test_malformed_fields(void **state)
{
    /* magic (SPF_Binary), version 103, summary (0 cutoffs), 1 name */
    static const unsigned char head[] = {
        0xff, 0xe5, 0xd0, 0xb1, 0xf4, 0xc9, 0x94, 0xa8, 0x53, 103,
        0, 0, 0, 0, 0, 0, 1, 'f', 0};
    unsigned char d[64];
    size_t h = sizeof head;
    (void)state;

    memcpy(d, head, h);
    /* head 1, name index 3 of 1 */
    d[h] = 1;
    d[h + 1] = 3;
    expect_error(d, h + 2, "name index 3 out of range (the name table has 1");
    /* a body line offset beyond 16 bits */
    memcpy(d + h, (unsigned char[]){1, 0, 5, 1, 0x80, 0x80, 0x04}, 7);
    expect_error(d, h + 7, "line offset 65536 beyond 16 bits");
    /* a ULEB128 longer than 64 bits */
    memcpy(d + h, (unsigned char[]){1, 0, 0xff, 0xff, 0xff, 0xff, 0xff,
                                    0xff, 0xff, 0xff, 0xff, 0x7f}, 12);
    expect_error(d, h + 12, "beyond 64 bits");
    /* a count that does not fit 32 bits */
    memcpy(d + h, (unsigned char[]){1, 0, 5, 0x80, 0x80, 0x80, 0x80, 0x10}, 8);
    expect_error(d, h + 8, "does not fit 32 bits");
    /* a name table claiming more names than bytes */
    memcpy(d, head, h);
    d[16] = 100;
    expect_error(d, h, "claims 100 entries");
    /* a well-formed one reads */
    memcpy(d, head, h);
    memcpy(d + h, (unsigned char[]){4, 0, 9, 1, 2, 0, 9, 0, 0}, 9);
    {
        lp_error e = {0};
        lp_profile *p = lp_profile_read_mem(d, h + 9, "ok", NULL, &e);
        lp_fsamples *f;

        assert_non_null(p);
        f = lp_profile_find(p, "f");
        assert_true(f->head == 4 && f->total == 9);
        assert_true(lp_body_count(lp_fs_body_find(f, (lp_loc){2, 0})) == 9);
        lp_profile_free(p);
    }
}

/* extbinary: unread bytes in a section, a compressed section that lies */
static void test_malformed_sections(void **state)
{
    lp_profile *p = from_text(CS);
    lp_write_opts z = {.format = LP_PROF_EXTBINARY, .compress = 1};
    size_t n, off;
    unsigned char *b = (unsigned char *)write_mem(p, &z, &n), *c;
    (void)state;

    /* the summary section: offset at entry 0 (after magic, version, count) */
    off = (size_t)b[9 + 1 + 8 + 16] | (size_t)b[9 + 1 + 8 + 17] << 8;
    c = malloc(n);
    memcpy(c, b, n);
    c[off] = (unsigned char)(c[off] + 1); /* inflated size one more */
    expect_error(c, n, "(ProfileSummarySection): zlib data does not inflate "
                       "to the");
    memcpy(c, b, n);
    c[off + 1] = 0x7f; /* compressed size beyond the section */
    expect_error(c, n, "compressed bytes announced");
    memcpy(c, b, n);
    c[off + 3] ^= 0xff; /* the deflate stream */
    expect_error(c, n, "does not inflate");
    free(c);
    free(b);
    lp_profile_free(p);
}


/* An extbinary file of the given sections (type, flags, bytes). */
typedef struct sec {
    uint64_t type, flags;
    const unsigned char *d;
    size_t n;
} sec;

static unsigned char *ext_file(const sec *s, size_t ns, size_t *len)
{
    static const unsigned char magic[] = {0x84, 0xe4, 0xd0, 0xb1, 0xf4, 0xc9,
                                          0x94, 0xa8, 0x53, 103};
    size_t off = sizeof magic + 8 + 32 * ns, i, k;
    unsigned char *b = calloc(1, 4096), *h;

    memcpy(b, magic, sizeof magic);
    b[sizeof magic] = (unsigned char)ns;
    for (i = 0; i < ns; i++) {
        uint64_t f[4] = {s[i].type, s[i].flags, off, s[i].n};
        h = b + sizeof magic + 8 + 32 * i;
        for (k = 0; k < 32; k++)
            h[k] = (unsigned char)(f[k / 8] >> (8 * (k % 8)));
        memcpy(b + off, s[i].d, s[i].n);
        off += s[i].n;
    }
    *len = off;
    return b;
}

/* MD5 name tables of both kinds: ULEB128 hashes (older writers) and
 * fixed 8-byte ones (LLVM 17+); a FuncMetadata section of a probe-based
 * nested profile; an unknown section skipped */
static void test_md5_table_kinds(void **state)
{
    /* names: 2 hashes, 300 and 5 */
    static const unsigned char uleb[] = {2, 0xac, 0x02, 5};
    static const unsigned char fixed[] = {2, 0x2c, 1, 0, 0, 0, 0, 0, 0,
                                          5, 0, 0, 0, 0, 0, 0, 0};
    /* head 4, name 0, total 9, 1 record (1: 9), 1 inlinee at 2 of name 1
     * (total 3, no body, no inlinee) */
    static const unsigned char lbr[] = {4, 0, 9, 1, 1, 0, 9, 0, 1,
                                        2, 0, 1, 3, 0, 0};
    /* name 0: checksum 77, 1 inlinee at 2.0 of name 1: checksum 66, 0 */
    static const unsigned char meta[] = {0, 77, 1, 2, 0, 1, 66, 0};
    static const unsigned char junk[] = {1, 2, 3};
    sec s[4] = {{2, 1ull << 32, uleb, sizeof uleb},
                {0x20, 0, lbr, sizeof lbr},
                {5, 1ull << 32, meta, sizeof meta},
                {99, 0, junk, sizeof junk}};
    lp_prof_info info;
    lp_error e = {0};
    lp_profile *p;
    lp_fsamples *f;
    unsigned char *b;
    size_t n;
    (void)state;

    b = ext_file(s, 4, &n);
    p = lp_profile_read_mem(b, n, "uleb", &info, &e);
    if (!p)
        fprintf(stderr, "%s\n", e.msg);
    assert_non_null(p);
    assert_int_equal(info.md5, 1);
    assert_true(p->is_probe_based);
    f = lp_profile_find(p, "300");
    assert_non_null(f);
    assert_true(f->head == 4 && f->total == 9 && f->checksum == 77);
    assert_true(lp_fs_find_callee(f, (lp_loc){2, 0}, "5")->checksum == 66);
    lp_prof_info_free(&info);
    lp_profile_free(p);
    free(b);
    s[0] = (sec){2, 3ull << 32, fixed, sizeof fixed};
    b = ext_file(s, 4, &n);
    p = lp_profile_read_mem(b, n, "fixed", NULL, &e);
    assert_non_null(p);
    assert_non_null(lp_profile_find(p, "300"));
    lp_profile_free(p);
    free(b);
    /* the metadata of a profile that is not there is read and dropped;
     * a section with bytes left over is an error */
    s[2] = (sec){5, 1ull << 32, (const unsigned char *)"\x01\x01\x00", 3};
    b = ext_file(s, 3, &n);
    p = lp_profile_read_mem(b, n, "x", NULL, &e);
    assert_non_null(p);
    lp_profile_free(p);
    free(b);
    s[1] = (sec){0x20, 0, lbr, sizeof lbr - 1};
    b = ext_file(s, 2, &n);
    expect_error(b, n, "truncated: expected the number of inlined call sites");
    free(b);
    s[1] = (sec){1, 0, (const unsigned char *)"\0\0\0\0\0\0\7", 7};
    b = ext_file(s, 2, &n);
    expect_error(b, n, "(ProfileSummarySection): 1 bytes left unread");
    free(b);
}

/* ---- merging ---------------------------------------------------------------------------- */

static void test_merge_weighted(void **state)
{
    lp_profile *a = from_text(FLAT), *b = from_text(FLAT), *out = lp_profile_new();
    lp_fsamples *m;
    lp_error e = {0};
    char *t;
    (void)state;

    assert_int_equal(lp_profile_merge(out, a, 2, 1, NULL, NULL, &e), 0);
    assert_int_equal(lp_profile_merge(out, b, 3, 0, NULL, NULL, &e), 0);
    m = lp_profile_find(out, "main");
    assert_true(m->total == 5000 && m->head == 15);
    assert_true(lp_fs_target_count(m, (lp_loc){2, 0}, "foo") == 300);
    assert_true(lp_fs_find_callee(m, (lp_loc){3, 1}, "baz")->total == 2500);
    t = to_text(out);
    assert_non_null(strstr(t, "  2: 1250 qux:1250\n"));
    free(t);
    lp_profile_free(out);
    lp_profile_free(a);
    lp_profile_free(b);
}

static unsigned last_status;
static void note(void *ctx, const char *context, unsigned st)
{
    (void)ctx;
    (void)context;
    last_status |= st;
}

static void test_merge_rules(void **state)
{
    lp_profile *probe = from_text(PROBE), *flat = from_text(FLAT);
    lp_profile *cs = from_text(CS), *out = lp_profile_new(), *big;
    lp_profile *other = from_text("foo:75:0\n 1: 4\n !CFGChecksum: 99\n");
    lp_error e = {0};
    (void)state;

    /* kinds do not mix */
    assert_int_equal(lp_profile_merge(out, flat, 1, 1, NULL, NULL, &e), 0);
    assert_int_equal(lp_profile_merge(out, probe, 1, 0, NULL, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "cannot merge probe-based profile"));
    assert_int_equal(lp_profile_merge(out, cs, 1, 0, NULL, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "cannot merge CS profile"));
    lp_profile_free(out);
    /* a checksum mismatch skips that profile, reported */
    out = lp_profile_new();
    last_status = 0;
    assert_int_equal(lp_profile_merge(out, probe, 1, 1, note, NULL, &e), 0);
    assert_int_equal(lp_profile_merge(out, other, 1, 0, note, NULL, &e), 0);
    assert_true(last_status & LP_MERGE_HASH_MISMATCH);
    assert_true(lp_profile_find(out, "foo")->total == 75);
    lp_profile_free(out);
    /* saturation is reported */
    out = lp_profile_new();
    last_status = 0;
    big = from_text("main:18446744073709551615:1\n 1: 5\n");
    assert_int_equal(lp_profile_merge(out, big, 2, 1, note, NULL, &e), 0);
    assert_true(last_status & LP_MERGE_OVERFLOW);
    assert_true(lp_profile_find(out, "main")->total == UINT64_MAX);
    /* a new CS context keeps its attributes */
    lp_profile_free(out);
    out = lp_profile_new();
    assert_int_equal(lp_profile_merge(out, cs, 1, 1, NULL, NULL, &e), 0);
    assert_int_equal(lp_profile_find(out, "main:1 @ foo:3.2 @ bar")->attrs, 2);
    assert_true(out->is_cs);
    lp_profile_free(out);
    lp_profile_free(big);
    lp_profile_free(other);
    lp_profile_free(probe);
    lp_profile_free(flat);
    lp_profile_free(cs);
}

static void test_md5_conversion(void **state)
{
    lp_profile *p = from_text(FLAT), *q, *c = from_text(CS), *d;
    lp_error e = {0};
    lp_fsamples *m;
    char h[24];
    (void)state;

    q = lp_profile_md5_names(p, &e);
    m = lp_profile_find(q, "15822663052811949562");
    assert_non_null(m);
    assert_true(m->total == 1000);
    snprintf(h, sizeof h, "%llu", (unsigned long long)lp_name_hash("foo"));
    assert_true(lp_fs_target_count(m, (lp_loc){2, 0}, h) == 60);
    snprintf(h, sizeof h, "%llu", (unsigned long long)lp_name_hash("baz"));
    assert_non_null(lp_fs_find_callee(m, (lp_loc){3, 1}, h));
    d = lp_profile_md5_names(c, &e);
    assert_true(d->is_cs);
    assert_int_equal(d->nr_funcs, 3);
    snprintf(h, sizeof h, "%llu:1", (unsigned long long)lp_name_hash("main"));
    {
        lp_fsamples **v = NULL;
        size_t n = lp_profile_all(d, &v), i, hits = 0;

        for (i = 0; i < n; i++)
            hits += !strncmp(v[i]->context, h, strlen(h));
        assert_int_equal(hits, 2);
        free(v);
    }
    lp_profile_free(d);
    lp_profile_free(c);
    lp_profile_free(q);
    lp_profile_free(p);
}


static void put_file(const char *path, const void *d, size_t n)
{
    FILE *f = fopen(path, "wb");

    assert_non_null(f);
    assert_int_equal(fwrite(d, 1, n, f), n);
    fclose(f);
}

static int nwarn;
static void count_warn(void *ctx, const char *msg)
{
    (void)ctx;
    (void)msg;
    nwarn++;
}

/* files: weights, failure modes, MD5 and string names merged by function,
 * symbol lists united */
static void test_merge_files(void **state)
{
    static const char *const syms[] = {"s1", "s2"};
    char dir[] = "/tmp/lbr2prof-merge.XXXXXX", a[64], b[64], bad[64];
    lp_write_opts md5 = {.format = LP_PROF_EXTBINARY, .use_md5 = 1,
                         .symbol_list = syms, .nr_symbols = 2};
    lp_profile *p = from_text(FLAT);
    lp_merge_opts o = {LP_MERGE_FAIL_ANY, 1, count_warn, NULL};
    lp_merge_input in[3];
    lp_merge_result r;
    lp_error e = {0};
    size_t n;
    char *bin;
    (void)state;

    assert_non_null(mkdtemp(dir));
    snprintf(a, sizeof a, "%s/a.txt", dir);
    snprintf(b, sizeof b, "%s/b.ext", dir);
    snprintf(bad, sizeof bad, "%s/bad", dir);
    put_file(a, FLAT, strlen(FLAT));
    bin = write_mem(p, &md5, &n);
    put_file(b, bin, n);
    put_file(bad, "junk\n", 5);
    in[0] = (lp_merge_input){a, 2};
    in[1] = (lp_merge_input){b, 1};
    in[2] = (lp_merge_input){bad, 1};
    assert_int_equal(lp_profile_merge_files(in, 2, &o, &r, &e), 0);
    /* one function, named by its hash: 2 x 1000 + 1000 */
    assert_int_equal(r.profile->nr_funcs, 2);
    assert_true(lp_profile_find(r.profile, "15822663052811949562")->total == 3000);
    assert_int_equal(r.nr_symbols, 2);
    lp_merge_result_free(&r);
    assert_int_equal(lp_profile_merge_files(in, 3, &o, &r, &e), -1);
    assert_non_null(strstr(e.msg, "bad: no sample profile"));
    assert_null(r.profile);
    o.fail_mode = LP_MERGE_FAIL_WARN;
    nwarn = 0;
    assert_int_equal(lp_profile_merge_files(in, 3, &o, &r, &e), 0);
    assert_int_equal(nwarn, 1);
    assert_true(r.merged == 2 && r.skipped == 1);
    lp_merge_result_free(&r);
    o.fail_mode = LP_MERGE_FAIL_ALL;
    assert_int_equal(lp_profile_merge_files(in + 2, 1, &o, &r, &e), -1);
    assert_non_null(strstr(e.msg, "no profile could be merged"));
    unlink(a);
    unlink(b);
    unlink(bad);
    rmdir(dir);
    free(bin);
    lp_profile_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_md5_names),
        cmocka_unit_test(test_md5_sorted_views),
        cmocka_unit_test(test_sniff),
        cmocka_unit_test(test_text_metadata),
        cmocka_unit_test(test_round_trips),
        cmocka_unit_test(test_many_names),
        cmocka_unit_test(test_text_summary),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_malformed_fields),
        cmocka_unit_test(test_malformed_sections),
        cmocka_unit_test(test_md5_table_kinds),
        cmocka_unit_test(test_merge_weighted),
        cmocka_unit_test(test_merge_rules),
        cmocka_unit_test(test_md5_conversion),
        cmocka_unit_test(test_merge_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
