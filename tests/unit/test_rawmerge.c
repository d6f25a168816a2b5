/*
 * test_rawmerge.c - unit tests for src/rawmerge: the mergeable raw
 * profile's header (round trip, errors with line numbers, version), the
 * checks between headers (build-id, file name, base, options), and
 * lp_rawmerge on small hand-written profiles: every order and grouping of
 * three inputs gives the same bytes, attributes combine (mixed), an input
 * that used no sample is neutral, weights multiply and overflow is an
 * error; address contexts (kind "probe", two binaries) round trip and sum,
 * and do not mix with line contexts.
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

#include "lbr2prof/rawmerge.h"

static char dir[] = "/tmp/lbr2prof-test-rawmerge.XXXXXX";

static const char *path_of(const char *name)
{
    static char p[4][256];
    static int k;

    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
    return p[k];
}

static void put(const char *name, const char *text)
{
    FILE *f = fopen(path_of(name), "w");

    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* The whole file (malloc'ed). */
static char *slurp(const char *name)
{
    FILE *f = fopen(path_of(name), "r");
    char *s = calloc(1, 1 << 16);
    size_t n;

    assert_non_null(f);
    n = fread(s, 1, (1 << 16) - 1, f);
    s[n] = 0;
    fclose(f);
    return s;
}

#define HDR(kind, used)                                                        \
    "#lbr2prof-raw 1 " kind "\n#base preferred\n#options trace=perf.data x=1\n" \
    "#binary 0 00112233445566778899aabbccddeeff00112233 0x1000 /bin/prog\n"     \
    "#stats traces=1 samples=10 used=" #used "\n"

static const char *shard_a = HDR("cs", 5)
    "#section 0\n"
    "[main:1 @ foo]\n  1\n  10-20:3\n  1\n  20->30:2\n"
    "#leaf-inlined 1\n[main:2 @ bar]\n  1\n  40-50:1\n  0\n";
static const char *shard_b = HDR("cs", 7)
    "#section 0\n"
    "[main:1 @ foo]\n  2\n  10-20:4\n  60-70:1\n  0\n"
    "[main:2 @ bar]\n  1\n  40-50:5\n  1\n  50->10:1\n";
static const char *shard_c = HDR("cs", 3)
    "#section 0\n"
    "[]\n  0\n  1\n  fffffffffffff001->10:7\n"
    "[main:1 @ foo]\n  1\n  10-20:1\n  1\n  20->30:1\n";

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir))
        return -1;
    put("a.raw", shard_a);
    put("b.raw", shard_b);
    put("c.raw", shard_c);
    return 0;
}

static int teardown(void **state)
{
    char cmd[300];
    (void)state;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Merge names[] into out; 0 or -1 (message in err). */
static int merge(const char *out, const char *const *names, size_t n,
                 const uint64_t *w, lp_error *err)
{
    lp_rawmerge *m = lp_rawmerge_new(err);
    size_t i;
    int rc = m ? 0 : -1;

    for (i = 0; i < n && rc == 0; i++)
        rc = lp_rawmerge_add(m, path_of(names[i]), w ? w[i] : 1, err);
    if (rc == 0)
        rc = lp_rawmerge_write(m, path_of(out), err);
    lp_rawmerge_free(m);
    return rc;
}

static void test_header_round_trip(void **state)
{
    lp_rawhdr h = {0}, g = {0};
    lp_error err = {0};
    unsigned long lines;
    uint8_t id[3] = {1, 2, 0xab};
    FILE *f;
    char *s;
    (void)state;

    h.cs = true;
    h.base = LP_RAW_BASE_FIRST_LOADABLE;
    h.options = strdup("a=1 b=2");
    h.stats.samples = 42;
    h.stats.contextless = 7;
    assert_int_equal(lp_rawhdr_add_binary(&h, "/p/prog", id, 3, 0x400000, &err), 0);
    assert_int_equal(lp_rawhdr_add_binary(&h, "/p/lib x.so", NULL, 0, 0, &err), 0);
    f = fopen(path_of("h.raw"), "w+");
    assert_int_equal(lp_rawhdr_write(f, &h, &err), 0);
    fputs("[]\n  0\n  0\n", f);
    rewind(f);
    assert_int_equal(lp_rawhdr_read(f, "h.raw", &g, &lines, &err), 1);
    assert_int_equal(lines, 6);
    assert_true(g.cs);
    assert_int_equal(g.base, LP_RAW_BASE_FIRST_LOADABLE);
    assert_string_equal(g.options, "a=1 b=2");
    assert_int_equal(g.nbins, 2);
    assert_string_equal(g.bins[1].path, "/p/lib x.so");
    assert_int_equal(g.bins[0].build_id_size, 3);
    assert_int_equal(g.bins[0].build_id[2], 0xab);
    assert_int_equal(g.bins[0].base, 0x400000);
    assert_int_equal(g.bins[1].build_id_size, 0);
    assert_int_equal(g.stats.samples, 42);
    assert_int_equal(g.stats.contextless, 7);
    s = calloc(1, 64);
    assert_non_null(fgets(s, 64, f));
    assert_string_equal(s, "[]\n");      /* left at the body */
    free(s);
    fclose(f);
    assert_int_equal(lp_rawhdr_check(&h, "h", &g, "g", &err), 0);
    lp_rawhdr_free(&g);
    lp_rawhdr_free(&h);
    /* not a header: 0, file rewound */
    put("plain.raw", "1\n10-20:3\n0\n");
    f = fopen(path_of("plain.raw"), "r");
    assert_int_equal(lp_rawhdr_read(f, "plain.raw", &g, &lines, &err), 0);
    assert_int_equal(fgetc(f), '1');
    fclose(f);
    assert_int_equal(lp_rawmerge_sniff(path_of("plain.raw"), &err), 0);
    assert_int_equal(lp_rawmerge_sniff(path_of("a.raw"), &err), 1);
}

/* Header errors name the file and line. */
static void test_header_errors(void **state)
{
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"#lbr2prof-raw 2 cs\n", "version 2"},
        {"#lbr2prof-raw 1 xx\n", "line 1"},
        {"#lbr2prof-raw 1 cs probe\n", "line 1"},
        {"#lbr2prof-raw 1 probes\n", "line 1"},
        {"#lbr2prof-raw 1 cs\n#base left\n", "line 2"},
        {"#lbr2prof-raw 1 cs\n#base none\n#options\n#binary 1 - 0x0 /p\n", "line 4"},
        {"#lbr2prof-raw 1 cs\n#base none\n#options\n#binary 0 abc 0x0 /p\n", "line 4"},
        {"#lbr2prof-raw 1 cs\n#base none\n#options\n#binary 0 - 10 /p\n", "line 4"},
        {"#lbr2prof-raw 1 cs\n#base none\n#options\n#binary 0 - 0x0 /p\n#stats x=1\n", "line 5"},
        {"#lbr2prof-raw 1 cs\n#base none\n#options\n#binary 0 - 0x0 /p\n#what\n", "line 5"},
        {"#lbr2prof-raw 1 cs\n#base none\n#binary 0 - 0x0 /p\n[]\n", "lacks"},
    };
    lp_rawmerge *m;
    lp_error err;
    size_t i;
    (void)state;

    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memset(&err, 0, sizeof err);
        put("bad.raw", cases[i].text);
        m = lp_rawmerge_new(&err);
        assert_int_equal(lp_rawmerge_add(m, path_of("bad.raw"), 1, &err), -1);
        if (!strstr(err.msg, cases[i].want) || !strstr(err.msg, "bad.raw"))
            fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, cases[i].want);
        lp_rawmerge_free(m);
    }
    /* the body: a bad section, an attribute with no context after it */
    put("bad.raw", HDR("cs", 1) "#section 1\n");
    m = lp_rawmerge_new(&err);
    assert_int_equal(lp_rawmerge_add(m, path_of("bad.raw"), 1, &err), -1);
    assert_non_null(strstr(err.msg, "line 6"));
    lp_rawmerge_free(m);
    put("bad.raw", HDR("cs", 1) "#section 0\n#leaf-inlined 1\n");
    m = lp_rawmerge_new(&err);
    assert_int_equal(lp_rawmerge_add(m, path_of("bad.raw"), 1, &err), -1);
    lp_rawmerge_free(m);
}

/* Every order and grouping of a, b, c: the same bytes; and the sums. */
static void test_associative_commutative(void **state)
{
    static const char *const orders[6][3] = {
        {"a.raw", "b.raw", "c.raw"}, {"a.raw", "c.raw", "b.raw"},
        {"b.raw", "a.raw", "c.raw"}, {"b.raw", "c.raw", "a.raw"},
        {"c.raw", "a.raw", "b.raw"}, {"c.raw", "b.raw", "a.raw"},
    };
    const char *pair[2];
    lp_error err = {0};
    char *ref, *s, name[32];
    size_t i;
    (void)state;

    assert_int_equal(merge("ref.raw", orders[0], 3, NULL, &err), 0);
    ref = slurp("ref.raw");
    for (i = 0; i < 6; i++) {
        assert_int_equal(merge("o.raw", orders[i], 3, NULL, &err), 0);
        s = slurp("o.raw");
        assert_string_equal(s, ref);
        free(s);
        /* (x y) z */
        pair[0] = orders[i][0];
        pair[1] = orders[i][1];
        assert_int_equal(merge("p.raw", pair, 2, NULL, &err), 0);
        snprintf(name, sizeof name, "p.raw");
        pair[0] = name;
        pair[1] = orders[i][2];
        assert_int_equal(merge("t.raw", pair, 2, NULL, &err), 0);
        s = slurp("t.raw");
        assert_string_equal(s, ref);
        free(s);
    }
    assert_non_null(strstr(ref, "#stats traces=3 samples=30 used=15 "));
    assert_non_null(strstr(ref, "[main:1 @ foo]\n  2\n  10-20:8\n  60-70:1\n"
                                "  1\n  20->30:3\n"));
    assert_non_null(strstr(ref, "[]\n  0\n  1\n  fffffffffffff001->10:7\n"));
    free(ref);
}

/* Attributes: a says bar's leaf was inlined, b does not: mixed, inlined. */
static void test_attributes(void **state)
{
    const char *ab[2] = {"a.raw", "b.raw"}, *aa[2] = {"a.raw", "a.raw"};
    lp_rawmerge *m;
    lp_error err = {0};
    char *s;
    (void)state;

    m = lp_rawmerge_new(&err);
    assert_int_equal(lp_rawmerge_add(m, path_of("a.raw"), 1, &err), 0);
    assert_int_equal(lp_rawmerge_mixed(m), 0);
    assert_int_equal(lp_rawmerge_add(m, path_of("b.raw"), 1, &err), 0);
    assert_int_equal(lp_rawmerge_mixed(m), 1);
    lp_rawmerge_free(m);
    assert_int_equal(merge("ab.raw", ab, 2, NULL, &err), 0);
    s = slurp("ab.raw");
    assert_non_null(strstr(s, "#leaf-inlined 1 mixed\n[main:2 @ bar]\n"));
    assert_null(strstr(s, "#leaf-inlined 1\n"));
    free(s);
    assert_int_equal(merge("aa.raw", aa, 2, NULL, &err), 0);
    s = slurp("aa.raw");
    assert_non_null(strstr(s, "#leaf-inlined 1\n[main:2 @ bar]\n  1\n  40-50:2\n"));
    assert_null(strstr(s, "mixed"));
    free(s);
}

/* A profile that used no sample fits either kind and adds no context;
 * one with counts that says it used none is refused. Flat with CS is. */
static void test_unused_and_kinds(void **state)
{
    const char *an[2] = {"a.raw", "n.raw"}, *af[2] = {"a.raw", "f.raw"};
    lp_error err = {0};
    char *s, *ref;
    (void)state;

    put("n.raw", HDR("flat", 0) "#section 0\n0\n0\n");
    assert_int_equal(merge("an.raw", an, 2, NULL, &err), 0);
    assert_int_equal(merge("a1.raw", an, 1, NULL, &err), 0);
    s = slurp("an.raw");
    ref = slurp("a1.raw");
    assert_non_null(strstr(s, "#lbr2prof-raw 1 cs\n"));
    assert_null(strstr(s, "[]"));
    assert_non_null(strstr(s, "traces=2 samples=20 "));
    assert_string_equal(strstr(s, "#section"), strstr(ref, "#section"));
    free(s);
    free(ref);
    put("n.raw", HDR("flat", 0) "#section 0\n1\n10-20:1\n0\n");
    assert_int_equal(merge("an.raw", an, 2, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "no sample was used"));
    put("f.raw", HDR("flat", 4) "#section 0\n1\n10-20:1\n0\n");
    assert_int_equal(merge("af.raw", af, 2, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "flat"));
    assert_non_null(strstr(err.msg, "f.raw"));
}

#define PHDR(kind, used)                                                       \
    "#lbr2prof-raw 1 " kind "\n#base preferred\n#options trace=perf.data x=1\n" \
    "#binary 0 00112233445566778899aabbccddeeff00112233 0x1000 /bin/prog\n"     \
    "#binary 1 - 0x0 /lib/libp.so\n"                                            \
    "#stats traces=1 samples=10 used=" #used "\n"

/* Address contexts (pseudo-probe binaries, kind "probe"): read as
 * addresses, relative to their section's base, another binary's as
 * LP_CTX_XBIN; summed; printed back unchanged whatever the order. Not
 * merged with line contexts; an unknown binary or a frame is an error. */
static void test_probe_kind(void **state)
{
    const char *pq[2] = {"p.raw", "q.raw"}, *qp[2] = {"q.raw", "p.raw"};
    const char *pl[2] = {"p.raw", "l.raw"}, *np[2] = {"n.raw", "p.raw"};
    const char *x[1] = {"x.raw"};
    lp_error err = {0};
    char *s, *t;
    (void)state;

    put("p.raw", PHDR("probe", 4)
        "#section 0\n[]\n  1\n  10-20:1\n  0\n"
        "[0x193 @ 0x8001000000001269]\n  1\n  30-40:2\n  1\n  40->8001000000001270:1\n"
        "#section 1\n[0x8000000000001193 @ 0x2f8]\n  1\n  300-310:3\n  0\n");
    put("q.raw", PHDR("probe", 6)
        "#section 0\n[0x193 @ 0x8001000000001269]\n  1\n  30-40:5\n  0\n"
        "[0x1a0]\n  0\n  1\n  1a0->10:4\n"
        "#section 1\n[0x8000000000001193 @ 0x2f8]\n  1\n  300-310:1\n  0\n");
    assert_int_equal(merge("pq.raw", pq, 2, NULL, &err), 0);
    assert_int_equal(merge("qp.raw", qp, 2, NULL, &err), 0);
    s = slurp("pq.raw");
    t = slurp("qp.raw");
    assert_string_equal(s, t);
    assert_non_null(strstr(s, "#lbr2prof-raw 1 probe\n"));
    assert_non_null(strstr(s, "[0x193 @ 0x8001000000001269]\n  1\n  30-40:7\n"
                              "  1\n  40->8001000000001270:1\n[0x1a0]\n"));
    assert_non_null(strstr(s, "#section 1\n[0x8000000000001193 @ 0x2f8]\n  1\n"
                              "  300-310:4\n"));
    free(s);
    free(t);
    /* with line contexts: refused, both named */
    put("l.raw", PHDR("cs", 2) "#section 0\n[main:1 @ foo]\n  1\n  10-20:3\n  0\n");
    assert_int_equal(merge("x.raw", pl, 2, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "p.raw is a context-sensitive pseudo-probe"));
    assert_non_null(strstr(err.msg, "l.raw a context-sensitive (line"));
    assert_non_null(strstr(err.msg, "address contexts"));
    assert_non_null(strstr(err.msg, "line contexts"));
    /* an input that used no sample fits: the sum is probe */
    put("n.raw", PHDR("cs", 0) "#section 0\n#section 1\n");
    assert_int_equal(merge("np.raw", np, 2, NULL, &err), 0);
    s = slurp("np.raw");
    assert_non_null(strstr(s, "#lbr2prof-raw 1 probe\n"));
    free(s);
    /* binary 2 of two; a frame context in a probe profile */
    put("x.raw", PHDR("probe", 1) "#section 0\n[0x8002000000001000]\n  0\n  0\n");
    assert_int_equal(merge("y.raw", x, 1, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "at line 8: [0x8002000000001000]"));
    put("x.raw", PHDR("probe", 1) "#section 0\n[main:1 @ foo]\n  0\n  0\n");
    assert_int_equal(merge("y.raw", x, 1, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "x.raw: Invalid raw profile at line 8"));
}

/* Same binaries: by build-id whatever the path; by name without ids. */
static void test_checks(void **state)
{
    const char *two[2] = {"a.raw", "x.raw"};
    lp_error err = {0};
    char *s;
    (void)state;

    put("x.raw", "#lbr2prof-raw 1 cs\n#base preferred\n#options trace=perf.data x=1\n"
                 "#binary 0 00112233445566778899aabbccddeeff00112233 0x1000 /a/renamed\n"
                 "#section 0\n");
    assert_int_equal(merge("ax.raw", two, 2, NULL, &err), 0);
    s = slurp("ax.raw");
    assert_non_null(strstr(s, " 0x1000 /a/renamed\n"));   /* the least path */
    free(s);
    put("x.raw", "#lbr2prof-raw 1 cs\n#base preferred\n#options trace=perf.data x=1\n"
                 "#binary 0 ffff2233445566778899aabbccddeeff00112233 0x1000 /other/prog\n");
    assert_int_equal(merge("ax.raw", two, 2, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "mismatched binaries"));
    assert_non_null(strstr(err.msg, "ffff2233"));
    assert_non_null(strstr(err.msg, "/bin/prog"));
    put("x.raw", "#lbr2prof-raw 1 cs\n#base none\n#options trace=perf.data x=1\n"
                 "#binary 0 00112233445566778899aabbccddeeff00112233 0x0 /bin/prog\n");
    assert_int_equal(merge("ax.raw", two, 2, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "base"));
    put("x.raw", "#lbr2prof-raw 1 cs\n#base preferred\n#options trace=perf.data x=2\n"
                 "#binary 0 00112233445566778899aabbccddeeff00112233 0x1000 /bin/prog\n");
    assert_int_equal(merge("ax.raw", two, 2, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "x=2"));
    put("x.raw", "#lbr2prof-raw 1 cs\n#base preferred\n#options trace=perf.data x=1\n"
                 "#binary 0 00112233445566778899aabbccddeeff00112233 0x1000 /bin/prog\n"
                 "#binary 1 - 0x0 /lib/libz.so\n");
    assert_int_equal(merge("ax.raw", two, 2, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "--binary list"));
}

static void test_weights(void **state)
{
    const char *a[1] = {"a.raw"};
    uint64_t w = 5, big = UINT64_MAX / 2;
    lp_error err = {0};
    char *s;
    (void)state;

    assert_int_equal(merge("w.raw", a, 1, &w, &err), 0);
    s = slurp("w.raw");
    assert_non_null(strstr(s, "  10-20:15\n"));
    assert_non_null(strstr(s, "samples=50 used=25 "));
    free(s);
    assert_int_equal(merge("w.raw", a, 1, &big, &err), -1);
    assert_non_null(strstr(err.msg, "overflow"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_round_trip),
        cmocka_unit_test(test_header_errors),
        cmocka_unit_test(test_associative_commutative),
        cmocka_unit_test(test_attributes),
        cmocka_unit_test(test_unused_and_kinds),
        cmocka_unit_test(test_probe_kind),
        cmocka_unit_test(test_checks),
        cmocka_unit_test(test_weights),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
