/*
 * test_csprofile.c - unit tests for the CS profile generator (src/context):
 * hand-made per-context counters on the real noinline-cs-noprobe.perfbin
 * (llvm-profgen-reference.md §8 Example C: main calls foo at line offset
 * 1, foo calls bar at 3; 0x4005b0 is bar's entry, 0x40062f the call to
 * bar, 0x4005e9 bar's ret), checked number by number against the worked
 * examples: body samples, totals per instruction, head samples, inferred
 * call sites, the pre-inliner and nesting, cold merging and trimming,
 * the unsymbolized reader, the context order and the extbinary flags.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/csprofile.h"
#include "context/cs_internal.h"

#define BIN "tests/data/llvm-profgen-inputs/noinline-cs-noprobe.perfbin"
#define BASE 0x400000u

typedef struct rng {
    uint64_t a, b, n;
} rng;

/* Add ranges and branches (offsets from BASE) to a context. */
static void add_ctx(lp_ctxcount *cc, const lp_ctx_frame *f, size_t nf,
                    const rng *r, size_t nr, const rng *br, size_t nb)
{
    lp_ctx_entry *e = lp_ctxcount_get(cc, 0, f, nf, false, NULL);
    size_t i;

    assert_non_null(e);
    for (i = 0; i < nr; i++)
        assert_int_equal(lp_counters_add_range(e->counters, BASE + r[i].a,
                                               BASE + r[i].b, r[i].n), 0);
    for (i = 0; i < nb; i++)
        assert_int_equal(lp_counters_add_branch(e->counters,
                                                br[i].a == 1 ? 1 : BASE + br[i].a,
                                                BASE + br[i].b, br[i].n), 0);
}

/* Example C's ranges and branches of foo and bar */
static const rng foo_r[] = {{0x5ff, 0x62f, 3}, {0x634, 0x637, 3}, {0x645, 0x645, 3}};
static const rng foo_b[] = {{0x62f, 0x5b0, 3}, {0x637, 0x645, 3}, {0x645, 0x5ff, 3}};
static const rng bar_r[] = {{0x5b0, 0x5c8, 1}, {0x5b0, 0x5d7, 2},
                            {0x5dc, 0x5e9, 1}, {0x5e5, 0x5e9, 2}};
static const rng bar_b[] = {{0x5c8, 0x5dc, 2}, {0x5d7, 0x5e5, 2}, {0x5e9, 0x634, 3}};

/* Example C's unwinder output */
static lp_ctxcount *example_c(void)
{
    static const lp_ctx_frame foo[2] = {{"main", {1, 0}}, {"foo", {0, 0}}};
    static const lp_ctx_frame bar[3] = {{"main", {1, 0}}, {"foo", {3, 0}},
                                        {"bar", {0, 0}}};
    lp_ctxcount *cc = lp_ctxcount_new();

    assert_non_null(cc);
    add_ctx(cc, foo, 2, foo_r, 3, foo_b, 3);
    add_ctx(cc, bar, 3, bar_r, 4, bar_b, 3);
    return cc;
}

static char *text_of(const lp_profile *p)
{
    lp_write_opts wo = {LP_PROF_TEXT, 0, 0, NULL, 0};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    assert_non_null(f);
    assert_int_equal(lp_profile_write(f, p, &wo, NULL), 0);
    fclose(f);
    return buf;
}

static lp_binary *open_bin(void)
{
    lp_binary *b = lp_binary_open(BIN, NULL, NULL);

    assert_non_null(b);
    return b;
}

static void check_text(const lp_profile *p, const char *want)
{
    char *got = text_of(p);

    assert_string_equal(got, want);
    free(got);
}

/* Example C, flat CS: 54 = 18 instructions x 3 in foo (per instruction,
 * not per byte), bar's head 3 from the call branch, [main] inferred from
 * foo's first body line. */
static void test_example_c_flat(void **state)
{
    lp_binary *b = open_bin();
    lp_ctxcount *cc = example_c();
    lp_profile *p = lp_profile_new();
    lp_cs_opts o;
    lp_fsamples *fs;
    (void)state;

    lp_cs_opts_default(&o);
    assert_int_equal(lp_cs_generate(&b, 1, cc, &o, p, NULL), 0);
    assert_int_equal(p->is_cs, 1);
    fs = lp_profile_find(p, "main:1 @ foo:3 @ bar");
    assert_non_null(fs);
    assert_string_equal(fs->name, "bar");
    assert_int_equal(fs->total, 50);
    assert_int_equal(fs->head, 3);
    check_text(p, "[main:1 @ foo]:54:0\n 2: 3\n 3: 3 bar:3\n"
                  "[main:1 @ foo:3 @ bar]:50:3\n 0: 3\n 1: 3\n 2: 2\n 4: 1\n 5: 3\n"
                  "[main]:3:0\n 1: 3 foo:3\n");
    lp_profile_free(p);
    lp_ctxcount_free(cc);
    lp_binary_close(b);
}

/* The v19 default: pre-inlined (attribute 2) and nested:
 * foo = 54 + 50 - 3, main = 3 + 101 - 3. */
static void test_example_c_default(void **state)
{
    lp_binary *b = open_bin();
    lp_ctxcount *cc = example_c();
    lp_profile *p = lp_profile_new();
    lp_cs_opts o;
    (void)state;

    lp_cs_opts_default(&o);
    assert_int_equal(lp_cs_profile(&b, 1, cc, &o, p, NULL), 0);
    assert_int_equal(p->is_cs, 0);
    assert_int_equal(p->is_preinlined, 1);
    check_text(p, "main:101:0\n 1: foo:101\n  2: 3\n  3: bar:50\n   0: 3\n"
                  "   1: 3\n   2: 2\n   4: 1\n   5: 3\n   !Attributes: 2\n"
                  "  !Attributes: 2\n");
    lp_profile_free(p);
    lp_ctxcount_free(cc);
    lp_binary_close(b);
}

/* Without the pre-inliner, nesting keeps every context: the same totals
 * with no attributes; --csprof-merge-cold-context is on by default then,
 * but a hot threshold of 0 merges nothing. */
static void test_nested_no_preinliner(void **state)
{
    lp_binary *b = open_bin();
    lp_ctxcount *cc = example_c();
    lp_profile *p = lp_profile_new();
    lp_cs_opts o;
    (void)state;

    lp_cs_opts_default(&o);
    o.preinliner = false;
    o.hot_count = 0;
    assert_int_equal(lp_cs_profile(&b, 1, cc, &o, p, NULL), 0);
    assert_int_equal(p->is_preinlined, 0);
    check_text(p, "main:101:0\n 1: foo:101\n  2: 3\n  3: bar:50\n   0: 3\n"
                  "   1: 3\n   2: 2\n   4: 1\n   5: 3\n");
    lp_profile_free(p);
    lp_ctxcount_free(cc);
    lp_binary_close(b);
}

/* Cold contexts (total < hot threshold 51) merge into their base
 * profiles: [main:1 @ foo:3 @ bar] (50) into [bar]; [main] (3) is a base
 * profile already and stays; [main:1 @ foo] (54) is not cold. */
static void test_cold_merge(void **state)
{
    lp_binary *b = open_bin();
    lp_ctxcount *cc = example_c();
    lp_profile *p = lp_profile_new();
    lp_cs_opts o;
    (void)state;

    lp_cs_opts_default(&o);
    o.preinliner = false;
    o.gen_nested = false;
    o.hot_count = 51;
    assert_int_equal(lp_cs_profile(&b, 1, cc, &o, p, NULL), 0);
    check_text(p, "[main:1 @ foo]:54:0\n 2: 3\n 3: 3 bar:3\n"
                  "[bar]:50:3\n 0: 3\n 1: 3\n 2: 2\n 4: 1\n 5: 3\n"
                  "[main]:3:0\n 1: 3 foo:3\n");
    lp_profile_free(p);
    /* with trimming too, merged profiles still below 51 are dropped */
    p = lp_profile_new();
    o.trim_cold_profile = true;
    o.hot_count = 53;
    assert_int_equal(lp_cs_profile(&b, 1, cc, &o, p, NULL), 0);
    check_text(p, "[main:1 @ foo]:54:0\n 2: 3\n 3: 3 bar:3\n");
    lp_profile_free(p);
    lp_ctxcount_free(cc);
    lp_binary_close(b);
}

/* Inferred call sites: a bar context with ranges but no call branch
 * gives [main:1 @ foo] a call-site record from bar's first body line
 * (3), which in turn gives [main] one from foo's first line. */
static void test_inferred_call_sites(void **state)
{
    static const lp_ctx_frame bar[3] = {{"main", {1, 0}}, {"foo", {3, 0}},
                                        {"bar", {0, 0}}};
    static const rng bar_r[] = {{0x5b0, 0x5c8, 4}};
    lp_binary *b = open_bin();
    lp_ctxcount *cc = lp_ctxcount_new();
    lp_profile *p = lp_profile_new();
    lp_cs_opts o;
    (void)state;

    add_ctx(cc, bar, 3, bar_r, 1, NULL, 0);
    lp_cs_opts_default(&o);
    assert_int_equal(lp_cs_generate(&b, 1, cc, &o, p, NULL), 0);
    /* equal totals: [main] before [main:1 @ foo] (SampleContext order) */
    check_text(p, "[main:1 @ foo:3 @ bar]:40:0\n 0: 4\n 1: 4\n"
                  "[main]:4:0\n 1: 4 foo:4\n"
                  "[main:1 @ foo]:4:0\n 3: 4 bar:4\n");
    lp_profile_free(p);
    lp_ctxcount_free(cc);
    lp_binary_close(b);
}

/* The empty context: branches from external code become head samples of
 * base profiles; ranges there are ignored. A branch whose target is not
 * a function entry adds nothing. */
static void test_empty_context_heads(void **state)
{
    static const rng r[] = {{0x5b0, 0x5c8, 9}};
    static const rng br[] = {{1, 0x5b0, 7}, {1, 0x5c8, 5}};
    lp_binary *b = open_bin();
    lp_ctxcount *cc = lp_ctxcount_new();
    lp_profile *p = lp_profile_new();
    lp_cs_opts o;
    (void)state;

    add_ctx(cc, NULL, 0, r, 1, br, 2);
    lp_cs_opts_default(&o);
    assert_int_equal(lp_cs_generate(&b, 1, cc, &o, p, NULL), 0);
    check_text(p, "[bar]:0:7\n");
    lp_profile_free(p);
    lp_ctxcount_free(cc);
    lp_binary_close(b);
}

/* --update-total-samples: totals become the sum of the body counts
 * (before they are raised to the call-target sums). */
static void test_update_total(void **state)
{
    lp_binary *b = open_bin();
    lp_ctxcount *cc = example_c();
    lp_profile *p = lp_profile_new();
    lp_cs_opts o;
    (void)state;

    lp_cs_opts_default(&o);
    o.update_total_samples = true;
    assert_int_equal(lp_cs_generate(&b, 1, cc, &o, p, NULL), 0);
    assert_int_equal(lp_profile_find(p, "main:1 @ foo")->total, 6);
    assert_int_equal(lp_profile_find(p, "main:1 @ foo:3 @ bar")->total, 12);
    assert_int_equal(lp_profile_find(p, "main")->total, 3);
    lp_profile_free(p);
    lp_ctxcount_free(cc);
    lp_binary_close(b);
}

static lp_ctxcount *read_raw(const char *text, bool *is_cs, lp_error *err)
{
    FILE *f = fmemopen((void *)text, strlen(text), "r");
    lp_ctxcount *cc = lp_ctxcount_new();
    int rc;

    assert_non_null(f);
    rc = lp_cs_raw_read(f, "t.raw", 0, BASE, cc, is_cs, err);
    fclose(f);
    if (rc) {
        lp_ctxcount_free(cc);
        return NULL;
    }
    return cc;
}

/* The unsymbolized reader gives the same profile as the counters above,
 * and rejects what llvm-profgen rejects, naming the line. */
static void test_raw_reader(void **state)
{
    static const char raw[] =
        "[main:1 @ foo]\n  3\n  5ff-62f:3\n  634-637:3\n  645-645:3\n  3\n"
        "  62f->5b0:3\n  637->645:3\n  645->5ff:3\n"
        "[main:1 @ foo:3 @ bar]\n  4\n  5b0-5c8:1\n  5b0-5d7:2\n  5dc-5e9:1\n"
        "  5e5-5e9:2\n  3\n  5c8->5dc:2\n  5d7->5e5:2\n  5e9->634:3\n";
    lp_binary *b = open_bin();
    lp_profile *p = lp_profile_new();
    lp_error err = {0};
    lp_ctxcount *cc;
    lp_cs_opts o;
    bool cs;
    (void)state;

    cc = read_raw(raw, &cs, &err);
    assert_non_null(cc);
    assert_true(cs);
    assert_int_equal(lp_ctxcount_size(cc), 2);
    lp_cs_opts_default(&o);
    assert_int_equal(lp_cs_generate(&b, 1, cc, &o, p, NULL), 0);
    check_text(p, "[main:1 @ foo]:54:0\n 2: 3\n 3: 3 bar:3\n"
                  "[main:1 @ foo:3 @ bar]:50:3\n 0: 3\n 1: 3\n 2: 2\n 4: 1\n 5: 3\n"
                  "[main]:3:0\n 1: 3 foo:3\n");
    lp_ctxcount_free(cc);
    /* errors */
    assert_null(read_raw("[main]\n  1\n  5ff-62f\n  0\n", &cs, &err));
    assert_non_null(strstr(err.msg, "Invalid raw profile at line 3:   5ff-62f"));
    assert_null(read_raw("[main]\n  1\n  5ff->62f:1\n  0\n", &cs, &err));
    assert_non_null(strstr(err.msg, "at line 3"));
    assert_null(read_raw("[main]\n  x\n", &cs, &err));
    assert_non_null(strstr(err.msg, "at line 2"));
    assert_null(read_raw("[main]\n  1\n", &cs, &err));
    assert_non_null(strstr(err.msg, "Invalid raw profile!"));
    assert_null(read_raw("\n", &cs, &err));
    assert_non_null(strstr(err.msg, "at line 1"));
    /* a block without a header is the empty context; "[]" too */
    cc = read_raw("0\n0\n[]\n  0\n  1\n  1->5b0:2\n", &cs, &err);
    assert_non_null(cc);
    assert_true(cs);
    assert_int_equal(lp_ctxcount_size(cc), 1);
    assert_non_null(lp_ctxcount_find(cc, 0, ""));
    lp_ctxcount_free(cc);
    lp_profile_free(p);
    lp_binary_close(b);
}

/* SampleContext order: names as strings, then locations numerically,
 * the shorter context first. */
static void test_context_order(void **state)
{
    (void)state;
    assert_true(lp_context_cmp("main:1 @ foo", "main:2 @ foo") < 0);
    assert_true(lp_context_cmp("main:2 @ foo", "main:10 @ foo") < 0);
    assert_true(lp_context_cmp("main:3 @ foo", "main:3.1 @ foo") < 0);
    assert_true(lp_context_cmp("foo", "foo.bar") < 0);
    assert_true(lp_context_cmp("foo:1 @ x", "foo.bar:1 @ x") < 0);
    assert_true(lp_context_cmp("main:1 @ foo", "main:1 @ foo:3 @ bar") < 0);
    assert_true(lp_context_cmp("main", "main:1 @ foo") < 0);
    assert_int_equal(lp_context_cmp("a:1 @ b", "a:1 @ b"), 0);
    /* a long common prefix that ends inside a frame: still numeric */
    assert_true(lp_context_cmp("main:1 @ foo:2 @ bar", "main:1 @ foo:10 @ bar") < 0);
    assert_true(lp_context_cmp("main:1 @ foo:10 @ bar", "main:1 @ foo:2 @ bar") > 0);
    assert_true(lp_context_cmp("main:1 @ foo:7.2 @ x", "main:1 @ foo:7.10 @ x") < 0);
    assert_true(lp_context_cmp("main:1 @ fo:1 @ x", "main:1 @ foo:1 @ x") < 0);
    assert_true(lp_context_cmp("main:1 @ foo:1 @ x", "main:1 @ foo") > 0);
}

/* A flat CS profile sorted by the trie's ranks (lp_profile.ordered) comes
 * out in the order of the printed contexts' sort: random contexts with
 * few totals (many ties), names whose hash order is not their string
 * order (an MD5 name among them), call sites at 0.0, and cold contexts
 * merged under their leaf functions, which the trie mostly lacks at
 * its root (ranks between nodes, several at one place). */
static void rank_order(uint32_t depth)
{
    static const char *names[] = {"main", "a", "b", "a.b", "zeta", "_Z3foov",
                                  "12345", "c"};
    static const uint64_t totals[] = {1, 2, 3, 5, 8, 100};
    lp_profile *p = lp_profile_new();
    lp_fsamples **v1, **v2, *fs;
    uint64_t x = 88172645463325252ull;
    char key[256];
    size_t n1, n2, i, len;
    int d, k;
    lp_cs_opts o;

    for (i = 0; i < 600; i++) {
        len = 0;
        for (d = 0, k = 1 + (int)(x % 4); d < k; d++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            len += (size_t)sprintf(key + len, "%s%s", d ? " @ " : "",
                                   names[d == 0 ? x % 2 : x % 8]);
            if (d + 1 < k)
                len += (size_t)sprintf(key + len, ":%u", (unsigned)(x >> 8) % 4);
            if (d + 1 < k && (x >> 16) % 3 == 0)
                len += (size_t)sprintf(key + len, ".%u", (unsigned)(x >> 20) % 3);
        }
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        assert_non_null(fs = lp_profile_get(p, key, strrchr(key, '@') ?
                                            strrchr(key, '@') + 2 : key));
        if (!fs->total) {
            fs->total = totals[x % 6];
            lp_body_add(lp_fs_body(fs, (lp_loc){1, 0}), fs->total);
        }
    }
    p->is_cs = 1;
    lp_cs_opts_default(&o);
    o.preinliner = false;
    o.gen_nested = false;
    o.hot_count = 4;
    o.max_cold_context_depth = depth;
    o.density_threshold = 0;
    assert_int_equal(lp_cs_postprocess(NULL, 0, NULL, &o, p, NULL), 0);
    assert_int_equal(p->ordered, 1);
    n1 = lp_profile_sorted(p, &v1);
    p->ordered = 0;     /* the printed contexts' sort */
    n2 = lp_profile_sorted(p, &v2);
    assert_true(n1 > 100);
    assert_int_equal(n1, n2);
    for (i = 0; i < n1; i++)
        assert_string_equal(v1[i]->context, v2[i]->context);
    /* the ranks alone are the contexts' order, whatever the totals */
    for (i = 0; i < n1; i++) {
        assert_in_range(v1[i]->order, 1, n1);
        v2[v1[i]->order - 1] = v1[i];
    }
    for (i = 1; i < n1; i++)
        assert_true(lp_context_cmp(v2[i - 1]->context, v2[i]->context) < 0);
    free(v1);
    free(v2);
    lp_profile_free(p);
}

static void test_rank_order(void **state)
{
    (void)state;
    rank_order(1);
    rank_order(2);      /* merged under two frames: ranks below the root */
    rank_order(3);
}

static size_t write_ext(const lp_profile *p, uint8_t **buf)
{
    lp_write_opts wo = {LP_PROF_EXTBINARY, 0, 0, NULL, 0};
    size_t len = 0;
    FILE *f = open_memstream((char **)buf, &len);

    assert_non_null(f);
    assert_int_equal(lp_profile_write(f, p, &wo, NULL), 0);
    fclose(f);
    return len;
}

/* extbinary header: the summary section flags {context} for flat CS,
 * {preInlined} after the pre-inliner; the legacy binary format refuses
 * flat CS. */
static void test_extbinary_flags(void **state)
{
    lp_binary *b = open_bin();
    lp_ctxcount *cc = example_c();
    lp_profile *p = lp_profile_new();
    lp_write_opts wo = {LP_PROF_BINARY, 0, 0, NULL, 0};
    lp_error err = {0};
    uint8_t *buf = NULL;
    lp_cs_opts o;
    size_t len;
    (void)state;

    lp_cs_opts_default(&o);
    o.gen_nested = false;
    assert_int_equal(lp_cs_profile(&b, 1, cc, &o, p, NULL), 0);
    len = write_ext(p, &buf);
    /* magic (9-byte ULEB), version 103 (1 byte), section count (8),
     * then the first header entry: type 1 (summary), flags */
    assert_true(len > 34);
    assert_int_equal(buf[10], 7);
    assert_int_equal(buf[18], 1);
    assert_int_equal(buf[26 + 4], 0x12); /* FullContext | IsPreInlined */
    free(buf);
    assert_int_equal(lp_profile_write(stdout, p, &wo, &err), -1);
    assert_non_null(strstr(err.msg, "unsupported for writing"));
    lp_profile_free(p);
    lp_ctxcount_free(cc);
    lp_binary_close(b);
}

/* ---- pseudo probes (noinline-cs-pseudoprobe.perfbin: main calls foo at
 * probe 2, foo calls bar at probe 8; preferred base 0x201000) ---------- */

#define PROBE_BIN "tests/data/llvm-profgen-inputs/noinline-cs-pseudoprobe.perfbin"

/* llvm-profgen-22's unsymbolized profile of noinline-cs-pseudoprobe */
static const char probe_raw[] =
    "[0x7f4]\n  2\n  79e-7bf:15\n  7c4-7cf:15\n  2\n  7bf->760:15\n  7cf->79e:16\n"
    "[0x7f4 @ 0x7bf]\n  1\n  760-77f:15\n  1\n  77f->7c4:17\n";

static lp_ctxcount *probe_counters(void)
{
    FILE *f = fmemopen((void *)probe_raw, sizeof probe_raw - 1, "r");
    lp_ctxcount *cc = lp_ctxcount_new();
    lp_error err = {0};
    bool is_cs = false;

    assert_non_null(f);
    assert_int_equal(lp_cs_raw_read_addrs(f, "raw", 0, 0x201000, cc, &is_cs,
                                          &err), 0);
    fclose(f);
    assert_true(is_cs);
    assert_int_equal(lp_ctxcount_size(cc), 2);
    return cc;
}

/* The flat CS probe profile is llvm-profgen-22's, to the byte: body
 * counts per probe id with zero records for unsampled probes, bar's head
 * from its entry probe, checksums; the unsymbolized writer gives the
 * input back. */
static void test_probe_profile(void **state)
{
    lp_binary *b = lp_binary_open(PROBE_BIN, NULL, NULL);
    lp_probes *pr = lp_probes_open(PROBE_BIN, NULL);
    lp_ctxcount *cc = probe_counters();
    lp_profile *p = lp_profile_new();
    char *buf = NULL;
    size_t len = 0;
    FILE *f;
    lp_cs_opts o;
    (void)state;

    assert_non_null(b);
    assert_non_null(pr);
    f = open_memstream(&buf, &len);
    assert_int_equal(lp_ctxcount_write_raw(f, cc, 0, 0x201000, NULL), 0);
    fclose(f);
    assert_string_equal(buf, probe_raw);
    free(buf);
    lp_cs_opts_default(&o);
    o.probes = &pr;
    o.preinliner = false;
    o.gen_nested = false;
    o.cold_count = 0;
    assert_int_equal(lp_cs_profile(&b, 1, cc, &o, p, NULL), 0);
    assert_true(p->is_probe_based);
    check_text(p, "[main:2 @ foo]:75:0\n 1: 0\n 2: 15\n 3: 15\n 4: 15\n 5: 0\n"
                  " 6: 15\n 7: 0\n 8: 15 bar:15\n 9: 0\n !CFGChecksum: 563088904013236\n"
                  "[main:2 @ foo:8 @ bar]:30:15\n 1: 15\n 4: 15\n"
                  " !CFGChecksum: 72617220756\n");
    lp_profile_free(p);
    /* nested: bar folded into foo at probe 8 */
    p = lp_profile_new();
    o.gen_nested = true;
    assert_int_equal(lp_cs_profile(&b, 1, cc, &o, p, NULL), 0);
    check_text(p, "foo:90:0\n 1: 0\n 2: 15\n 3: 15\n 4: 15\n 5: 0\n 6: 15\n"
                  " 7: 0\n 9: 0\n 8: bar:30\n  1: 15\n  4: 15\n"
                  "  !CFGChecksum: 72617220756\n !CFGChecksum: 563088904013236\n");
    lp_profile_free(p);
    lp_ctxcount_free(cc);
    lp_probes_free(pr);
    lp_binary_close(b);
}

/* A context with branches and no range counts no probe (nothing to sort:
 * UBSan once caught qsort given NULL there, in the ASan build's run of
 * test_probe_conformance on one recording in three). */
static void test_probe_branches_only(void **state)
{
    static const char raw[] = "[0x7f4]\n  0\n  1\n  7bf->760:5\n";
    lp_binary *b = lp_binary_open(PROBE_BIN, NULL, NULL);
    lp_probes *pr = lp_probes_open(PROBE_BIN, NULL);
    FILE *f = fmemopen((void *)raw, sizeof raw - 1, "r");
    lp_ctxcount *cc = lp_ctxcount_new();
    lp_profile *p = lp_profile_new();
    bool is_cs = false;
    lp_cs_opts o;
    (void)state;

    assert_non_null(b);
    assert_non_null(pr);
    assert_int_equal(lp_cs_raw_read_addrs(f, "raw", 0, 0x201000, cc, &is_cs, NULL), 0);
    fclose(f);
    lp_cs_opts_default(&o);
    o.probes = &pr;
    o.preinliner = false;
    o.gen_nested = false;
    o.cold_count = 0;
    assert_int_equal(lp_cs_profile(&b, 1, cc, &o, p, NULL), 0);
    assert_true(p->is_probe_based);
    assert_non_null(lp_profile_find(p, "main:2 @ foo"));
    lp_profile_free(p);
    lp_ctxcount_free(cc);
    lp_probes_free(pr);
    lp_binary_close(b);
}

/* Two binaries with a main each, their CFG checksums differ
 * (noinline-cs-pseudoprobe, main at 0x2017f0, and noinline-tailcall-probe,
 * main at 0x400650): main's profile has both counts and binary 0's checksum whichever
 * binary's context was counted first (the last writer won, so the order
 * of the traces changed the profile), and one warning counts it. */
#define PROBE_BIN2 "tests/data/llvm-profgen-inputs/noinline-tailcall-probe.perfbin"

static void count_warning(void *ctx, const char *msg)
{
    if (strstr(msg, "several binaries with different CFG checksums"))
        (*(int *)ctx)++;
}

static char *two_mains(lp_binary **b, lp_probes **pr, int first, int *warned,
                       uint64_t *checksum)
{
    static const char *const raw[2] = {"[]\n  1\n  7f0-7fc:5\n  0\n",
                                       "[]\n  1\n  650-65b:7\n  0\n"};
    static const uint64_t base[2] = {0x201000, 0x400000};
    lp_ctxcount *cc = lp_ctxcount_new();
    lp_profile *p = lp_profile_new();
    lp_fsamples *m;
    bool is_cs = false;
    lp_cs_opts o;
    char *text;
    int i;

    for (i = 0; i < 2; i++) {
        int k = i ? !first : first;
        FILE *f = fmemopen((void *)raw[k], strlen(raw[k]), "r");

        assert_int_equal(lp_cs_raw_read_addrs(f, "raw", k, base[k], cc, &is_cs,
                                              NULL), 0);
        fclose(f);
    }
    lp_cs_opts_default(&o);
    o.probes = pr;
    o.preinliner = false;
    o.gen_nested = false;
    o.cold_count = 0;
    o.warn = count_warning;
    o.warn_ctx = warned;
    assert_int_equal(lp_cs_profile(b, 2, cc, &o, p, NULL), 0);
    assert_non_null(m = lp_profile_find(p, "main"));
    assert_int_equal(m->total, 19);   /* 5 + 7 at both entry probes, 7 at probe 2 */
    *checksum = m->checksum;
    text = text_of(p);
    lp_profile_free(p);
    lp_ctxcount_free(cc);
    return text;
}

static void test_probe_two_mains(void **state)
{
    lp_binary *b[2] = {lp_binary_open(PROBE_BIN, NULL, NULL),
                       lp_binary_open(PROBE_BIN2, NULL, NULL)};
    lp_probes *pr[2] = {lp_probes_open(PROBE_BIN, NULL), lp_probes_open(PROBE_BIN2, NULL)};
    const lp_probe_desc *d0, *d1;
    uint64_t c0, c1;
    char *t0, *t1;
    int warned = 0;
    (void)state;

    assert_non_null(b[0]);
    assert_non_null(b[1]);
    assert_non_null(pr[0]);
    assert_non_null(pr[1]);
    assert_non_null(d0 = lp_probes_desc(pr[0], lp_probe_guid("main")));
    assert_non_null(d1 = lp_probes_desc(pr[1], lp_probe_guid("main")));
    assert_true(d0->hash != d1->hash);
    t0 = two_mains(b, pr, 0, &warned, &c0);
    assert_int_equal(warned, 1);
    t1 = two_mains(b, pr, 1, &warned, &c1);
    assert_int_equal(warned, 2);
    assert_string_equal(t0, t1);
    assert_true(c0 == d0->hash);
    assert_true(c1 == d0->hash);
    free(t0);
    free(t1);
    lp_probes_free(pr[0]);
    lp_probes_free(pr[1]);
    lp_binary_close(b[0]);
    lp_binary_close(b[1]);
}

/* Address contexts need probe tables, and probe tables address contexts. */
static void test_probe_mismatch(void **state)
{
    lp_binary *b = lp_binary_open(PROBE_BIN, NULL, NULL);
    lp_probes *pr = lp_probes_open(PROBE_BIN, NULL);
    lp_probes *none = NULL;
    lp_ctxcount *cc = probe_counters();
    lp_profile *p = lp_profile_new();
    lp_error err = {0};
    lp_cs_opts o;
    (void)state;

    lp_cs_opts_default(&o);
    o.probes = &none;
    assert_int_equal(lp_cs_generate(&b, 1, cc, &o, p, &err), -1);
    assert_non_null(strstr(err.msg, "no pseudo probes"));
    lp_profile_free(p);
    lp_ctxcount_free(cc);
    cc = example_c();                   /* frame contexts */
    p = lp_profile_new();
    o.probes = &pr;
    assert_int_equal(lp_cs_generate(&b, 1, cc, &o, p, &err), -1);
    assert_non_null(strstr(err.msg, "not an address context"));
    lp_profile_free(p);
    lp_ctxcount_free(cc);
    lp_probes_free(pr);
    lp_binary_close(b);
}

/* A context naming a binary that was not given is an error. */
static void test_bad_binary_index(void **state)
{
    static const lp_ctx_frame f[1] = {{"bar", {0, 0}}};
    lp_binary *b = open_bin();
    lp_ctxcount *cc = lp_ctxcount_new();
    lp_profile *p = lp_profile_new();
    lp_error err = {0};
    lp_cs_opts o;
    (void)state;

    assert_non_null(lp_ctxcount_get(cc, 3, f, 1, false, NULL));
    lp_cs_opts_default(&o);
    assert_int_equal(lp_cs_generate(&b, 1, cc, &o, p, &err), -1);
    assert_non_null(strstr(err.msg, "binary 3"));
    assert_non_null(strstr(err.msg, "\"bar\""));
    /* a table that borrows names: generation lists it without keys, the
     * message prints the context's */
    lp_ctxcount_clear(cc);
    lp_ctxcount_borrow_names(cc);
    assert_null(lp_ctxcount_get(cc, 3, f, 1, false, NULL)->key);
    assert_int_equal(lp_cs_generate(&b, 1, cc, &o, p, &err), -1);
    assert_non_null(strstr(err.msg, "context \"bar\" names binary 3"));
    lp_profile_free(p);
    lp_ctxcount_free(cc);
    lp_binary_close(b);
}

/* cs_intern_at: by address through the memo, the same interned names as
 * cs_intern (equal texts at different addresses share one; many more
 * addresses than slots, so slots are reused) */
static void test_intern_memo(void **state)
{
    enum { N = 3 * (1 << CS_PMEMO_BITS) };
    cs_pmemo *memo = calloc((size_t)1 << CS_PMEMO_BITS, sizeof *memo);
    char (*s)[16] = calloc(N, sizeof *s);
    const cs_name *n;
    cs_trie t;
    int i, round;
    (void)state;

    cs_trie_init(&t);
    for (i = 0; i < N; i++)
        snprintf(s[i], sizeof s[i], "f%d", i % (N / 2));
    for (round = 0; round < 2; round++)
        for (i = 0; i < N; i++) {
            n = cs_intern_at(&t, memo, s[i]);
            assert_non_null(n);
            assert_string_equal(n->s, s[i]);
            assert_ptr_equal(n, cs_intern(&t, s[i], strlen(s[i])));
            assert_ptr_equal(n, cs_intern_at(&t, NULL, s[(i + N / 2) % N]));
        }
    cs_trie_free(&t);
    free(s);
    free(memo);
}

/* Flat CS profiles through the trie and back: the contexts printed
 * frame by frame on the way down are the keys they came from (call-site
 * lines and discriminators, siblings, a context and its callers') */
static void test_trie_round_trip(void **state)
{
    static const char *ctx[] = {
        "main", "main:3 @ foo", "main:3.2 @ foo", "main:3.2 @ foo:1 @ bar",
        "main:12 @ foo:7.11 @ bar", "main:3 @ baz", "other:65535 @ x",
    };
    size_t n = sizeof ctx / sizeof *ctx, i;
    lp_profile *p = lp_profile_new(), *q = lp_profile_new();
    cs_trie t;
    (void)state;

    for (i = 0; i < n; i++)
        lp_profile_get(p, ctx[i], NULL)->total = 10 + i;
    cs_trie_init(&t);
    assert_int_equal(cs_trie_from_profile(&t, p), 0);
    assert_int_equal(p->nr_funcs, 0);
    assert_int_equal(cs_trie_to_profile(&t, q), 0);
    assert_int_equal(q->nr_funcs, n);
    for (i = 0; i < n; i++) {
        lp_fsamples *fs = lp_profile_find(q, ctx[i]);
        if (!fs)
            fail_msg("context '%s' lost", ctx[i]);
        assert_int_equal(fs->total, 10 + i);
    }
    cs_trie_free(&t);
    lp_profile_free(p);
    lp_profile_free(q);
}

/* A trie of 4 x 6 x 6 x 4 contexts under main (totals 1 .. 4 by a hash
 * of the path, body counts of their own) from a flat CS profile. */
static void split_trie_of(cs_trie *t)
{
    lp_profile *p = lp_profile_new();
    lp_fsamples *fs;
    char key[96];
    int a, b, c, d, n = 0;

    for (a = 0; a < 4; a++)
        for (b = 0; b < 6; b++)
            for (c = 0; c < 6; c++)
                for (d = 0; d < 4; d++, n++) {
                    if (c == 5)   /* one frame less */
                        snprintf(key, sizeof key, "main:%d @ f%d:%d @ g%d",
                                 a, b, d + 1, d);
                    else
                        snprintf(key, sizeof key,
                                 "main:%d @ f%d:%d @ g%d:%d.%d @ h%d", a, b,
                                 c + 1, c, d, b, (a + d) % 3);
                    assert_non_null(fs = lp_profile_get(p, key, NULL));
                    fs->total = 1 + (uint64_t)(n * 7919) % 4;
                    lp_body_add(lp_fs_body(fs, (lp_loc){(uint32_t)d, 0}), fs->total);
                }
    lp_profile_get(p, "main", NULL)->total = 9;
    lp_profile_get(p, "main:9 @ x:1 @ y", NULL)->total = 1;   /* cold */
    cs_trie_init(t);
    assert_int_equal(cs_trie_from_profile(t, p), 0);
    lp_profile_free(p);
}

/* A trie of the n contexts keys, each with a total and one record */
static void small_trie_of(cs_trie *t, const char *const *keys, size_t n)
{
    lp_profile *p = lp_profile_new();
    lp_fsamples *fs;
    size_t i;

    for (i = 0; i < n; i++) {
        assert_non_null(fs = lp_profile_get(p, keys[i], NULL));
        fs->total = 3 + i;
        lp_body_add(lp_fs_body(fs, (lp_loc){1, 0}), fs->total);
    }
    cs_trie_init(t);
    assert_int_equal(cs_trie_from_profile(t, p), 0);
    lp_profile_free(p);
}

/* The same entries in both (totals, bodies, names), whatever their order */
static void assert_same_entries(lp_profile *a, lp_profile *b)
{
    lp_fsamples **v, *y;
    size_t n = lp_profile_all(a, &v), i;

    assert_int_equal(n, b->nr_funcs);
    for (i = 0; i < n; i++) {
        if (!(y = lp_profile_find(b, v[i]->context)))
            fail_msg("context '%s' lost", v[i]->context);
        assert_string_equal(y->name, v[i]->name);
        assert_int_equal(y->total, v[i]->total);
        assert_int_equal(lp_fs_nr_body(y), lp_fs_nr_body(v[i]));
        if (lp_fs_nr_body(y))
            assert_int_equal(lp_body_count(lp_fs_body_at(y, 0)),
                             lp_body_count(lp_fs_body_at(v[i], 0)));
    }
    free(v);
}

static int order_cmp(const void *a, const void *b)
{
    uint32_t x = (*(lp_fsamples *const *)a)->order;
    uint32_t y = (*(lp_fsamples *const *)b)->order;

    return x < y ? -1 : x > y;
}

/* The entries by their orders: distinct, even, in lp_context_cmp's order
 * of their contexts (LLVM's). */
static void assert_ranked(lp_profile *p)
{
    lp_fsamples **v;
    size_t n = lp_profile_all(p, &v), i;

    qsort(v, n, sizeof *v, order_cmp);
    for (i = 0; i < n; i++) {
        assert_int_equal(v[i]->order % 2, 0);
        assert_true(v[i]->order > 0);
        if (i && lp_context_cmp(v[i - 1]->context, v[i]->context) >= 0)
            fail_msg("'%s' ranked before '%s'", v[i - 1]->context, v[i]->context);
    }
    free(v);
}

/* Tries too small to split into subtrees (every ranked trie takes
 * cs_trie_to_profile_ranked): the entries the one-thread conversion
 * gives, every node numbered, in LLVM's order - also for no context */
static void test_trie_ranked_small(void **state)
{
    static const char *const keys[] = {"main:2 @ f", "main", "b", "main:1 @ f",
                                       "main:1 @ f:3 @ g", "a:1 @ b"};
    size_t k, nodes;
    lp_profile *p1, *p2;
    cs_trie t1, t2;
    cs_node **q;
    (void)state;

    for (k = 0; k <= sizeof keys / sizeof *keys; k++) {
        p1 = lp_profile_new();
        p2 = lp_profile_new();
        small_trie_of(&t1, keys, k);
        small_trie_of(&t2, keys, k);
        assert_non_null(q = cs_bfs(&t2, &nodes));
        free(q);
        assert_int_equal(cs_trie_to_profile_hot(&t1, p1, NULL), 0);
        assert_int_equal(cs_trie_to_profile_ranked(&t2, p2, NULL), nodes - 1);
        assert_int_equal(p2->nr_funcs, k);
        assert_same_entries(p1, p2);
        assert_ranked(p2);
        cs_trie_free(&t1);
        cs_trie_free(&t2);
        lp_profile_free(p1);
        lp_profile_free(p2);
    }
}

/* The trie converted and ranked on two threads, by subtrees, gives the
 * entries and the merged cold contexts one thread gives (and the ones
 * cold=NULL keeps), every node numbered, the profiles in LLVM's order */
static void test_trie_split(void **state)
{
    cs_cold c1 = {2, 2, true, false, lp_profile_new()}, c2 = c1;
    lp_profile *p1, *p2;
    cs_trie t1, t2;
    cs_node **q;
    size_t nodes;
    int round;
    (void)state;

    c2.merged = lp_profile_new();
    for (round = 0; round < 2; round++) {
        p1 = lp_profile_new();
        p2 = lp_profile_new();
        split_trie_of(&t1);
        split_trie_of(&t2);
        assert_non_null(q = cs_bfs(&t2, &nodes));
        free(q);
        assert_int_equal(cs_trie_to_profile_hot(&t1, p1, round ? &c1 : NULL), 0);
        assert_int_equal(cs_trie_to_profile_ranked(&t2, p2, round ? &c2 : NULL),
                         nodes - 1);
        assert_true(p2->is_cs);
        assert_true(p1->nr_funcs > 100);
        assert_same_entries(p1, p2);
        assert_ranked(p2);
        assert_int_equal(lp_profile_find(p2, "main:9 @ x:1 @ y") == NULL, round);
        cs_trie_free(&t1);
        cs_trie_free(&t2);
        lp_profile_free(p1);
        lp_profile_free(p2);
    }
    assert_true(c1.merged->nr_funcs > 10);
    assert_same_entries(c1.merged, c2.merged);
    assert_non_null(lp_profile_find(c2.merged, "x:1 @ y"));
    lp_profile_free(c1.merged);
    lp_profile_free(c2.merged);
}

/* Many contexts (some of them the same path under a second binary, whose
 * profile two entries share): generation on two threads, by subtrees,
 * makes the profile one thread makes. */
static char *many_contexts_text(lp_binary **b, size_t parallel_min, bool flat)
{
    lp_ctxcount *cc = lp_ctxcount_new();
    lp_profile *p = lp_profile_new();
    lp_cs_opts o;
    char *text;
    uint32_t k;

    assert_non_null(cc);
    for (k = 1; k <= 300; k++) {
        lp_ctx_frame foo[2] = {{"main", {k, 0}}, {"foo", {0, 0}}};
        lp_ctx_frame bar[3] = {{"main", {k, k % 3}}, {"foo", {3, 0}}, {"bar", {0, 0}}};
        rng r[3], rb[4];
        size_t i;
        for (i = 0; i < 3; i++)
            r[i] = (rng){foo_r[i].a, foo_r[i].b, foo_r[i].n * k};
        for (i = 0; i < 4; i++)
            rb[i] = (rng){bar_r[i].a, bar_r[i].b, bar_r[i].n + k % 7};
        add_ctx(cc, foo, 2, r, 3, foo_b, 3);
        add_ctx(cc, bar, 3, rb, 4, bar_b, 3);
        if (k % 10 == 0) {  /* the same path under binary 1 */
            lp_ctx_entry *e = lp_ctxcount_get(cc, 1, bar, 3, false, NULL);
            assert_non_null(e);
            assert_int_equal(lp_counters_add_range(e->counters, BASE + 0x5b0,
                                                   BASE + 0x5e9, k), 0);
        }
    }
    /* contexts that end above the groups (their heads reach group nodes),
     * the empty one, and a chain deeper than the others that holds more
     * than 1/16 of the entries (split again, twice) */
    add_ctx(cc, (lp_ctx_frame[]){{"main", {0, 0}}}, 1, foo_r, 3, foo_b, 3);
    add_ctx(cc, NULL, 0, NULL, 0, foo_b, 3);
    add_ctx(cc, (lp_ctx_frame[]){{"main", {1, 0}}, {"foo", {0, 0}}}, 2, foo_r, 3,
            foo_b, 3);
    for (k = 1; k <= 100; k++) {
        lp_ctx_frame deep[4] = {{"main", {1, 0}}, {"foo", {3, 0}}, {"bar", {k, 0}},
                                {"foo", {0, 0}}};
        rng r[3];
        size_t i;
        for (i = 0; i < 3; i++)
            r[i] = (rng){foo_r[i].a, foo_r[i].b, foo_r[i].n + k};
        add_ctx(cc, deep, 4, r, 3, foo_b, 3);
    }
    lp_cs_opts_default(&o);
    o.preinliner = o.gen_nested = !flat;   /* with the pre-inliner: the
                                              profiled functions' sizes */
    o.parallel_min = parallel_min;
    assert_int_equal(lp_cs_profile(b, 2, cc, &o, p, NULL), 0);
    assert_non_null(lp_profile_find(p, flat ? "main:300 @ foo" : "main"));
    text = text_of(p);
    lp_profile_free(p);
    lp_ctxcount_free(cc);
    return text;
}

static void test_parallel_bodies(void **state)
{
    lp_binary *b[2] = {open_bin(), open_bin()};
    char *one, *two;
    int flat;
    (void)state;

    for (flat = 0; flat < 2; flat++) {
        one = many_contexts_text(b, SIZE_MAX, flat);
        two = many_contexts_text(b, 1, flat);
        assert_true(strlen(one) > (flat ? 10000 : 1000));
        assert_string_equal(one, two);
        free(one);
        free(two);
    }
    lp_binary_close(b[0]);
    lp_binary_close(b[1]);
}

/* A profile of the merge tests: records at a few of 8 lines, some with
 * call targets, counts from seed */
static void fill_prof(lp_fsamples *fs, unsigned seed)
{
    unsigned k;

    fs->total = 100 + seed;
    fs->head = seed % 3;
    for (k = 0; k < 8; k++) {
        lp_body_rec *b;
        if ((seed >> k) & 1)
            continue;
        assert_non_null(b = lp_fs_body(fs, (lp_loc){k * 2, k % 2}));
        lp_body_add(b, seed * 7 + k);
        if (k % 3 == 0)
            assert_int_equal(lp_body_add_target(b, k % 2 ? "callee_a" : "callee_b",
                                                seed + k), 0);
    }
}

static void assert_prof_equal(const lp_fsamples *a, const lp_fsamples *b)
{
    size_t i;

    assert_int_equal(a->total, b->total);
    assert_int_equal(a->head, b->head);
    assert_int_equal(a->attrs, b->attrs);
    assert_int_equal(lp_fs_nr_body(a), lp_fs_nr_body(b));
    for (i = 0; i < lp_fs_nr_body(a); i++) {
        const lp_body_rec *x = lp_fs_body_at(a, i), *y = lp_fs_body_at(b, i);
        assert_int_equal(lp_body_loc(x).line, lp_body_loc(y).line);
        assert_int_equal(lp_body_loc(x).disc, lp_body_loc(y).disc);
        assert_int_equal(lp_body_count(x), lp_body_count(y));
        assert_int_equal(lp_body_target_sum(x), lp_body_target_sum(y));
    }
}

/* The pre-inliner's deferred merges (mergeq.c), on one thread and on
 * two: sources merged once (as the promotions' are), chains (a profile
 * merged into, then merged on: ~30, the counts do not saturate), merges
 * of a profile into itself, ShouldBeInlined carried, more merges than
 * the queue holds, drained midway: each profile as merging at once in
 * push order makes it. */
static void test_merge_queue(void **state)
{
    enum { ND = 48, NOPS = 10000 };
    cs_prof *q[ND], *ref[ND], *qs, *rs;
    cs_trie t;
    uint64_t x = 12345;
    int thread, i, k, a, b;
    (void)state;

    for (thread = 0; thread < 2; thread++) {
        cs_mergeq *mq = cs_mergeq_new(thread);
        assert_non_null(mq);
        cs_trie_init(&t);
        for (i = 0; i < ND; i++) {
            assert_non_null(q[i] = cs_prof_new(&t, "f"));
            assert_non_null(ref[i] = cs_prof_new(&t, "f"));
            fill_prof(&q[i]->fs, (unsigned)i * 37);
            fill_prof(&ref[i]->fs, (unsigned)i * 37);
        }
        for (k = 0; k < NOPS; k++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            a = (int)(x >> 33) % ND;
            b = (int)(x >> 45) % ND;
            if (k % 333 == 0) {             /* a chain */
                qs = q[b];
                rs = ref[b];
            } else if (k % 97 == 0) {       /* a profile into itself */
                qs = q[a];
                rs = ref[a];
            } else {                        /* a source merged once */
                assert_non_null(qs = cs_prof_new(&t, "f"));
                assert_non_null(rs = cs_prof_new(&t, "f"));
                fill_prof(&qs->fs, (unsigned)k);
                fill_prof(&rs->fs, (unsigned)k);
                if (k % 7 == 0)
                    qs->fs.attrs = rs->fs.attrs = CS_SHOULD_INLINE;
            }
            cs_mergeq_push(mq, q[a], qs);
            if (rs != ref[a])
                assert_int_equal(lp_fs_merge(&ref[a]->fs, &rs->fs), 0);
            if (rs->fs.attrs & CS_SHOULD_INLINE)
                ref[a]->fs.attrs |= CS_SHOULD_INLINE;
            if (k == NOPS / 3) {
                assert_int_equal(cs_mergeq_drain(mq), 0);
                for (i = 0; i < ND; i++)
                    assert_prof_equal(&q[i]->fs, &ref[i]->fs);
            }
        }
        assert_int_equal(cs_mergeq_free(mq), 0);
        for (i = 0; i < ND; i++) {
            assert_true(ref[i]->fs.total < UINT64_MAX / 2);
            assert_prof_equal(&q[i]->fs, &ref[i]->fs);
        }
        cs_trie_free(&t);
    }
}

/* cs_kid_after's walk over a node's children in key order while
 * children are inserted into it (shifting the one the hint points at):
 * each step is the child with the smallest key above the last one's
 * among those there at that step (std::map's iteration) */
static void test_kid_walk(void **state)
{
    static const char *names[] = {"a", "b", "c", "d", "e", "f", "g", "h",
                                  "i", "j", "k", "l"};
    enum { N = sizeof names / sizeof *names, FIRST = 4 };
    cs_node *c, *all[N];
    bool present[N] = {0};
    uint64_t cur = 0;
    uint32_t at = 0;
    size_t steps = 0;
    bool first = true;
    cs_trie t;
    int i, added = FIRST, want;
    (void)state;

    cs_trie_init(&t);
    for (i = 0; i < N; i++)     /* every node made now, attached later */
        assert_non_null(all[i] = cs_child_get(&t, &t.root, (lp_loc){1, 0},
                                              cs_intern(&t, names[i], 1)));
    for (i = FIRST; i < N; i++)
        cs_detach(all[i]);
    for (i = 0; i < FIRST; i++)
        present[i] = true;
    for (;;) {
        for (want = -1, i = 0; i < N; i++)  /* the model's next */
            if (present[i] && (first || all[i]->key > cur) &&
                (want < 0 || all[i]->key < all[want]->key))
                want = i;
        c = cs_kid_after(&t.root, cur, first, &at);
        if (want < 0) {
            assert_null(c);
            break;
        }
        assert_ptr_equal(c, all[want]);
        assert_ptr_equal(t.root.kids[at].n, c);
        first = false;
        cur = c->key;
        steps++;
        if (added < N) {        /* one more child, above or below this one */
            assert_int_equal(cs_attach(&t.root, all[added], (lp_loc){1, 0}), 0);
            present[added++] = true;
        }
    }
    assert_true(steps >= FIRST);
    cs_trie_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_example_c_flat),
        cmocka_unit_test(test_example_c_default),
        cmocka_unit_test(test_nested_no_preinliner),
        cmocka_unit_test(test_cold_merge),
        cmocka_unit_test(test_inferred_call_sites),
        cmocka_unit_test(test_empty_context_heads),
        cmocka_unit_test(test_update_total),
        cmocka_unit_test(test_raw_reader),
        cmocka_unit_test(test_context_order),
        cmocka_unit_test(test_rank_order),
        cmocka_unit_test(test_extbinary_flags),
        cmocka_unit_test(test_bad_binary_index),
        cmocka_unit_test(test_intern_memo),
        cmocka_unit_test(test_trie_round_trip),
        cmocka_unit_test(test_trie_split),
        cmocka_unit_test(test_trie_ranked_small),
        cmocka_unit_test(test_probe_profile),
        cmocka_unit_test(test_probe_branches_only),
        cmocka_unit_test(test_probe_two_mains),
        cmocka_unit_test(test_probe_mismatch),
        cmocka_unit_test(test_parallel_bodies),
        cmocka_unit_test(test_merge_queue),
        cmocka_unit_test(test_kid_walk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
