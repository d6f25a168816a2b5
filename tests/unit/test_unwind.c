/*
 * test_unwind.c - unit tests for src/unwind, the virtual unwinder: the
 * seed 001 scenarios (T001-0..5: external code between frames, callbacks,
 * interrupts, returns to no call site, depth and recursion), the seed 003
 * frame repair (entry/exit leaves, CET prologues, shrink-wrapping,
 * recursion) with contexts worked out by hand, the leaf classifier, and
 * the pieces that must match llvm-profgen 19 exactly (recursion
 * compression, std::unordered_map iteration order, checked against g++).
 *
 * The scenarios run on tests/unit/fixtures/unwind_fixture.c, built here
 * with clang-19 at a fixed address (the test is skipped only when clang-19
 * is missing); expected outputs are the CS unsymbolized profile with
 * absolute addresses (base 0, the external address prints as 1). Every
 * address of the fixture symbolizes to line offset 1.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lbr2prof/unwind.h"
#include "unwind/uw_internal.h"

#define IN "tests/data/llvm-profgen-inputs/"
#define EXT 0x7f0000001000ull /* any address outside the fixture */

static char dir[64];
static char fixture[128];
static char restorer[128];      /* a file with rt_sigreturn at RESTORER_OFF */
static bool have_fixture;

#define RESTORER_MAP 0x7f0000200000ull  /* where the test maps it */
#define RESTORER_OFF 0x100
#define RESTORER (RESTORER_MAP + RESTORER_OFF)

static bool have_tool(const char *t)
{
    char cmd[256];

    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", t);
    return system(cmd) == 0;
}

static int setup(void **state)
{
    char cmd[1024];

    (void)state;
    strcpy(dir, "/tmp/lbr2prof-unwind-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(fixture, sizeof fixture, "%s/fixture", dir);
    snprintf(restorer, sizeof restorer, "%s/restorer", dir);
    {
        /* mov $0xf,%rax; syscall - glibc's __restore_rt */
        static const unsigned char code[9] = {0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f, 0x05};
        unsigned char page[0x1000] = {0};
        FILE *f = fopen(restorer, "wb");

        memcpy(page + RESTORER_OFF, code, sizeof code);
        if (!f || fwrite(page, 1, sizeof page, f) != sizeof page || fclose(f))
            return -1;
    }
    if (!have_tool("clang-19"))
        return 0;
    snprintf(cmd, sizeof cmd,
             "clang-19 -g -O0 -ffunction-sections -fno-asynchronous-unwind-tables "
             "-nostdlib -static -Wl,-Ttext=0x401000 -Wl,-e,main "
             "-Wl,--build-id=none -o %s tests/unit/fixtures/unwind_fixture.c",
             fixture);
    if (system(cmd) != 0)
        return -1;          /* the compiler is there: a failed build fails */
    have_fixture = true;
    return 0;
}

static int teardown(void **state)
{
    char cmd[128];

    (void)state;
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* ---- running samples ------------------------------------------------------- */

typedef struct smp {
    uint64_t stack[8];
    uint64_t br[8][2];          /* newest first; {0, 0} ends */
    uint64_t repeat;
} smp;

typedef struct run_opts {
    bool repair;
    bool fp_walk;
    int depth, compress;
    bool drop;                  /* --drop-unknown-callers */
} run_opts;

static const run_opts NOREPAIR = {false, false, -1, -1, false};
static const run_opts REPAIR = {true, false, -1, -1, false};
static const run_opts REPAIR_FP = {true, true, -1, -1, false};
static const run_opts REPAIR_DROP = {true, false, -1, -1, true};
static const run_opts REPAIR_FP_DROP = {true, true, -1, -1, true};

static lp_binary *open_bin(const char *path)
{
    lp_error e = {0};
    lp_binary *b = lp_binary_open(path, NULL, &e);

    if (!b)
        fail_msg("%s", e.msg);
    return b;
}

static char *raw_string(const lp_ctxcount *cc, uint64_t base)
{
    char *buf = NULL;
    size_t len;
    lp_error e = {0};
    FILE *f = open_memstream(&buf, &len);

    assert_int_equal(lp_ctxcount_write_raw(f, cc, 0, base, &e), 0);
    fclose(f);
    return buf;
}

/* The contexts in the table's order (what generation walks), each with
 * its was_leaf_inlined: what raw_string, sorted, does not show. */
static char *order_string(const lp_ctxcount *cc)
{
    lp_ctx_entry **v;
    char *buf = NULL;
    size_t len;
    long n = lp_ctxcount_all(cc, &v), i;
    FILE *f = open_memstream(&buf, &len);

    assert_true(n >= 0);
    for (i = 0; i < n; i++)
        fprintf(f, "%d [%s] %d\n", v[i]->bin, v[i]->key, v[i]->was_leaf_inlined);
    fclose(f);
    free(v);
    return buf;
}

/* Unwind samples on the fixture after the mmap events maps[0..nmaps); the
 * raw profile, and the stats in *st. */
static char *run_maps(const smp *v, size_t n, run_opts ro, lp_unwind_stats *st,
                      const lp_mmap_event *maps, size_t nmaps)
{
    lp_binary *b = open_bin(fixture);
    lp_unwind_opts o;
    lp_error e = {0};
    lp_unwinder *u;
    lp_ctxcount *cc;
    lp_branch_entry br[8];
    size_t i, k, ns;
    char *out;

    lp_unwind_opts_default(&o);
    o.repair_frames = ro.repair;
    o.drop_unknown = ro.drop;
    o.max_context_depth = ro.depth;
    o.compress_recursion = ro.compress;
    u = lp_unwind_new(&b, 1, &o, &e);
    assert_non_null(u);
    for (i = 0; i < nmaps; i++)
        assert_int_equal(lp_unwind_mmap(u, &maps[i], &e), 0);
    for (i = 0; i < n; i++) {
        lp_hybrid_sample h = {0};
        for (ns = 0; ns < 8 && v[i].stack[ns]; ns++)
            ;
        for (k = 0; k < 8 && v[i].br[k][0]; k++) {
            br[k].from = v[i].br[k][0];
            br[k].to = v[i].br[k][1];
            br[k].flags = 0;
        }
        h.stack = v[i].stack;
        h.nstack = ns;
        h.fp_walk = ro.fp_walk;
        h.br = br;
        h.nbr = k;
        h.repeat = v[i].repeat;
        assert_int_equal(lp_unwind_sample(u, &h, &e), 0);
    }
    cc = lp_unwind_finish(u, &e);
    assert_non_null(cc);
    out = raw_string(cc, 0);
    if (st)
        *st = *lp_unwind_stats_get(u);
    lp_ctxcount_free(cc);
    lp_unwind_free(u);
    lp_binary_close(b);
    return out;
}

static char *run(const smp *v, size_t n, run_opts ro, lp_unwind_stats *st)
{
    return run_maps(v, n, ro, st, NULL, 0);
}

static void expect(const char *got, const char *want)
{
    if (strcmp(got, want) != 0)
        fail_msg("got:\n%s\nexpected:\n%s", got, want);
}

#define NEED_FIXTURE()          \
    do {                        \
        (void)state;            \
        if (!have_fixture)      \
            skip();             \
    } while (0)

/* ---- T001: seed 001, unwinding through external code ----------------------- */

/* T001-0: getCallAddrFromFrameAddr */
/* uw_map: narrow while keys and values fit 32 bits, wide from the first
 * that does not (value, key, or a sum past 32 bits), same answers. */
static void test_map_narrow(void **state)
{
    uw_map m = {0}, w = {0}, all = {0};
    uw_slot3 *v;
    uint64_t i;
    (void)state;

    for (i = 1; i <= 3000; i++)
        assert_int_equal(uw_map_put(&m, i * 0x1000, i, i), 0);
    assert_true(m.narrow);
    assert_int_equal(uw_map_get(&m, 7 * 0x1000, 7), 7);
    assert_int_equal(uw_map_get(&m, 7 * 0x1000, (uint64_t)7 << 32), 0);
    assert_int_equal(uw_map_add(&m, 5 * 0x1000, 5, 1), 0);
    assert_int_equal(uw_map_get(&m, 5 * 0x1000, 5), 6);
    assert_int_equal(uw_map_add(&m, 5 * 0x1000, 5, UINT32_MAX), 0);
    assert_false(m.narrow);
    assert_int_equal(uw_map_get(&m, 5 * 0x1000, 5), (uint64_t)UINT32_MAX + 6);
    assert_int_equal(uw_map_get(&m, 2999 * 0x1000, 2999), 2999);

    w.wide_only = true;
    assert_int_equal(uw_map_put(&w, 1, 2, 3), 0);
    assert_false(w.narrow);
    assert_int_equal(uw_map_put(&all, 9, 9, 1), 0);
    assert_int_equal(uw_map_put(&all, 1, (uint64_t)1 << 40, 2), 0);
    assert_false(all.narrow);
    assert_int_equal(uw_map_get(&all, 9, 9), 1);
    assert_int_equal(uw_map_add_all(&all, &m), 0);
    assert_int_equal(all.count, 3002);
    assert_non_null(v = uw_map_list(&all, true));
    assert_int_equal(v[0].k1, 1);
    assert_int_equal(v[0].k2, (uint64_t)1 << 40);
    assert_int_equal(v[1].k1, 9);
    assert_int_equal(v[2].k1, 0x1000);
    free(v);
    /* unsorted: every entry once, with its value */
    assert_non_null(v = uw_map_list(&all, false));
    for (i = 0; i < all.count; i++) {
        assert_int_equal(uw_map_get(&all, v[i].k1, v[i].k2), v[i].v);
        assert_true(i == 0 || v[i].k1 != v[i - 1].k1 || v[i].k2 != v[i - 1].k2);
    }
    free(v);
    free(m.s);
    free(w.s);
    free(all.s);
}

static void test_t001_0_call_sites(void **state)
{
    static const uint64_t ret[] = {0x401052, 0x401095, 0x401025, 0x401080};
    static const uint64_t want[] = {0x401050, 0x401090, 0x401020, 0};
    lp_binary *b;
    uint64_t cs;
    size_t i;

    NEED_FIXTURE();
    b = open_bin(fixture);
    for (i = 0; i < 4; i++) {
        cs = 0;
        int r = lp_binary_call_site(b, ret[i], &cs, NULL);
        assert_int_equal(r, want[i] ? 1 : 0);
        if (want[i])
            assert_int_equal(cs, want[i]);
    }
    lp_binary_close(b);
}

/* T001-1: [ext, call, cb1] [cb1, return, ext] [ext, call, bar]. The seed's
 * first callback is foo, whose body 0x401040-0x40107f crosses its own call
 * at 0x401050 - a fall-through range llvm-profgen rejects - so the
 * straight-line qux plays that part. cb1 must never be a caller of bar. */
static const smp t001_1 = {
    {0x40108a, EXT + 0x235, 0x401012, EXT + 0xf0000},
    {{0x401084, 0x401088}, {EXT + 0x230, 0x401080}, {0x4010ff, EXT + 0x220},
     {EXT + 0x210, 0x4010e0}, {0x401010, EXT}},
    1};

static void test_t001_1_sequential_callbacks(void **state)
{
    lp_unwind_stats st;
    char *got;

    NEED_FIXTURE();
    got = run(&t001_1, 1, NOREPAIR, &st);
    expect(got, "[]\n  0\n  2\n  1->401080:1\n  1->4010e0:1\n"
                "[bar]\n  1\n  401080-401084:1\n  1\n  401084->401088:1\n"
                "[qux]\n  1\n  4010e0-4010ff:1\n  0\n");
    assert_int_equal(st.paired_ext, 2);
    free(got);
    got = run(&t001_1, 1, REPAIR, NULL);    /* leaf in a body: no change */
    expect(got, "[]\n  0\n  2\n  1->401080:1\n  1->4010e0:1\n"
                "[bar]\n  1\n  401080-401084:1\n  1\n  401084->401088:1\n"
                "[qux]\n  1\n  4010e0-4010ff:1\n  0\n");
    free(got);
}

/* T001-2: {main -> foo} [foo, call, ext] [ext, call, qux] [qux, return,
 * ext] [ext, return, foo]: foo's ranges before and after the callback in
 * one context, qux truncated. */
static void test_t001_2_callback_returns(void **state)
{
    static const smp s = {
        {0x401064, 0x401025, EXT + 0xf0000},
        {{0x401058, 0x401060}, {EXT + 0x1100, 0x401052}, {0x4010ff, EXT + 0x10f0},
         {EXT + 0x10e0, 0x4010e0}, {0x401050, EXT + 0x1000}, {0x401020, 0x401040}},
        1};
    lp_unwind_stats st;
    char *got;

    NEED_FIXTURE();
    got = run(&s, 1, REPAIR, &st);
    expect(got, "[]\n  0\n  2\n  1->401052:1\n  1->4010e0:1\n"
                "[main]\n  0\n  1\n  401020->401040:1\n"
                "[main:1 @ foo]\n  2\n  401040-401050:1\n  401052-401058:1\n"
                "  1\n  401058->401060:1\n"
                "[qux]\n  1\n  4010e0-4010ff:1\n  0\n");
    assert_int_equal(st.unpaired_ext, 0);
    assert_int_equal(st.contextless, 0);
    free(got);
}

/* T001-3: sampled in external code; bar called back from it calls baz. */
static void test_t001_3_sample_in_external(void **state)
{
    static const smp s = {
        {EXT + 0x1050, 0x401052, 0x401025, EXT + 0xf0000},
        {{0x4010bf, EXT + 0x1040}, {0x4010df, 0x401095}, {0x401090, 0x4010c0},
         {EXT + 0x1030, 0x401080}, {0x401050, EXT + 0x1000}, {0x401020, 0x401040}},
        1};
    lp_unwind_stats st;
    char *got;

    NEED_FIXTURE();
    got = run(&s, 1, REPAIR, &st);
    expect(got, "[]\n  0\n  1\n  1->401080:1\n"
                "[bar]\n  2\n  401080-401090:1\n  401095-4010bf:1\n"
                "  1\n  401090->4010c0:1\n"
                "[bar:1 @ baz]\n  1\n  4010c0-4010df:1\n  1\n  4010df->401095:1\n"
                "[main]\n  0\n  1\n  401020->401040:1\n"
                "[main:1 @ foo]\n  1\n  401040-401050:1\n  0\n");
    assert_int_equal(st.leaf_external, 1);
    free(got);
}

/* T001-4a: an incoming external transition with nothing to pair it
 * (interrupt): what is older is never counted in a context made from the
 * sampled stack. llvm-profgen counts it without context ([foo], [main]
 * restart at the root); the repair does not know the frames it ran in and
 * drops it (counted). */
static void test_t001_4a_unpaired_external(void **state)
{
    smp s = t001_1;
    lp_unwind_stats st;
    char *got;
    static const char *newer = "[]\n  0\n  1\n  1->401080:1\n"
                               "[bar]\n  1\n  401080-401084:1\n  1\n  401084->401088:1\n";
    char want[512];

    NEED_FIXTURE();
    memset(s.br, 0, sizeof s.br);
    s.br[0][0] = 0x401084, s.br[0][1] = 0x401088;
    s.br[1][0] = EXT + 0x230, s.br[1][1] = 0x401080;
    s.br[2][0] = 0x401058, s.br[2][1] = 0x401060;
    s.br[3][0] = 0x401020, s.br[3][1] = 0x401040;
    got = run(&s, 1, NOREPAIR, &st);
    snprintf(want, sizeof want, "%s%s", newer,
             "[foo]\n  0\n  1\n  401058->401060:1\n"
             "[main]\n  0\n  1\n  401020->401040:1\n");
    expect(got, want);
    assert_int_equal(st.unpaired_ext, 1);
    assert_int_equal(st.contextless, 1);
    free(got);
    got = run(&s, 1, REPAIR_DROP, &st);
    expect(got, newer);
    assert_int_equal(st.unpaired_ext, 1);
    assert_int_equal(st.interrupted, 1);
    assert_int_equal(st.lost, 1);
    /* 401058->401060 and 401020->401040 (401040-401058 crosses foo's call:
     * no fall-through either) */
    assert_int_equal(st.lost_records, 2);
    free(got);
    /* by default the same two are kept: main's call is truncated at
     * main's unknown caller (llvm-profgen: context-less); foo's caller is
     * not in the sample either, but the only call to foo the LBR shows
     * is main's at 0x401020: it is inferred (llvm-profgen: [foo]) */
    got = run(&s, 1, REPAIR, &st);
    snprintf(want, sizeof want, "%s%s", newer,
             "[main]\n  0\n  1\n  401020->401040:1\n"
             "[main:1 @ foo]\n  0\n  1\n  401058->401060:1\n");
    expect(got, want);
    assert_int_equal(st.lost, 1);
    assert_int_equal(st.lost_records, 2); /* both still below main's unknown caller */
    assert_int_equal(st.inferred, 1);
    free(got);
}

/* T001-4a on held, foo's twin whose address is in data: the only call
 * to held the LBR shows and the only direct call to it are caller2's at
 * 0x401230, but an indirect call may have entered it too (SQLite's
 * pcache1Destroy: one direct call in pcache1Create, the others through
 * the methods table). Nothing is inferred: held's code is kept in a
 * context truncated at its unknown caller. */
static void test_t001_4a_no_inference_into_address_taken(void **state)
{
    smp s = t001_1;
    lp_unwind_stats st;
    char *got;

    NEED_FIXTURE();
    memset(s.br, 0, sizeof s.br);
    s.br[0][0] = 0x401084, s.br[0][1] = 0x401088;
    s.br[1][0] = EXT + 0x230, s.br[1][1] = 0x401080;
    s.br[2][0] = 0x401278, s.br[2][1] = 0x401280;
    s.br[3][0] = 0x401230, s.br[3][1] = 0x401260;
    got = run(&s, 1, REPAIR, &st);
    expect(got, "[]\n  0\n  1\n  1->401080:1\n"
                "[bar]\n  1\n  401080-401084:1\n  1\n  401084->401088:1\n"
                "[caller2]\n  0\n  1\n  401230->401260:1\n"
                "[held]\n  0\n  1\n  401278->401280:1\n");
    assert_int_equal(st.inferred, 0);
    assert_int_equal(st.lost, 1);
    assert_int_equal(st.lost_records, 2);
    free(got);
}

/* T001-4b: qux "returns" to 0x401054, which follows no call: llvm-profgen
 * 19 switches to a frame at address 0 (PR #211381 added a guard later);
 * its collection treats it as the root and pops one frame too many, so the
 * siblings visited after it (std::unordered_map order: the 0 frame comes
 * first) lose main. No crash, and the same contexts as llvm-profgen. */
static void test_t001_4b_return_to_no_call(void **state)
{
    static const smp s = {
        {0x401064, 0x401025},
        {{0x401058, 0x401060}, {0x4010ff, 0x401054}, {0x401050, 0x4010e0},
         {0x401020, 0x401040}},
        1};
    lp_unwind_stats st;
    char *got;

    NEED_FIXTURE();
    got = run(&s, 1, NOREPAIR, &st);
    expect(got, "[foo]\n  1\n  401054-401058:1\n  1\n  401058->401060:1\n"
                "[main:1 @ foo]\n  1\n  401040-401050:1\n  1\n  401050->4010e0:1\n"
                "[main:1 @ main]\n  0\n  1\n  401020->401040:1\n"
                "[main:1 @ qux]\n  1\n  4010e0-4010ff:1\n  1\n  4010ff->401054:1\n");
    assert_int_equal(st.mismatched_proepi, 2);
    free(got);
    /* the repair: qux's caller is not known, nothing older is counted */
    got = run(&s, 1, REPAIR_DROP, &st);
    expect(got, "[main:1 @ foo]\n  1\n  401054-401058:1\n  1\n  401058->401060:1\n");
    assert_int_equal(st.lost, 1);
    assert_int_equal(st.lost_records, 5);
    assert_int_equal(st.mismatched_proepi, 0);
    free(got);
    /* by default: qux on an unknown stack, its call from foo and foo's
     * from main reveal two frames; main's caller stays unknown, so the
     * contexts are truncated there (and merge with main's own) */
    got = run(&s, 1, REPAIR, &st);
    expect(got, "[main]\n  0\n  1\n  401020->401040:1\n"
                "[main:1 @ foo]\n  2\n  401040-401050:1\n  401054-401058:1\n"
                "  2\n  401050->4010e0:1\n  401058->401060:1\n"
                "[main:1 @ foo:1 @ qux]\n  1\n  4010e0-4010ff:1\n  1\n"
                "  4010ff->401054:1\n");
    assert_int_equal(st.lost, 1);
    assert_int_equal(st.lost_records, 5);
    free(got);
}

/* T001-4c: leaf at foo's push %rbp (prolog): llvm-profgen drops it; with
 * the repair, LBR[0] (main's call) proves the caller. */
static void test_t001_4c_prolog_leaf(void **state)
{
    static const smp s = {
        {0x401040, EXT + 0xf0000},
        {{0x401020, 0x401040}, {0x401001, 0x401012}},
        1};
    lp_unwind_stats st;
    char *got;

    NEED_FIXTURE();
    got = run(&s, 1, NOREPAIR, &st);
    expect(got, "");
    assert_int_equal(st.dropped_prolog, 1);
    free(got);
    got = run(&s, 1, REPAIR_FP, &st);
    expect(got, "[main]\n  1\n  401012-401020:1\n  2\n  401001->401012:1\n"
                "  401020->401040:1\n");
    assert_int_equal(st.repaired, 1);
    assert_int_equal(st.dropped_prolog, 0);
    free(got);
}

/* T001-5: depth counts caller frames (llvm-profgen's
 * --csprof-max-context-depth: at most depth + 1 frames); recursion is
 * compressed in the callers only. */
static void test_t001_5_depth_and_recursion(void **state)
{
    static const smp deep = {
        {0x4010c8, 0x401095, 0x401052, 0x401025},
        {{0x4010c6, 0x4010c8}, {0x4010c1, 0x4010c4}},
        1};
    static const smp rec = {
        {0x401108, 0x401135, 0x401135, 0x401155, 0x401035},
        {{0x401106, 0x401108}},
        1};
    static const char *body = "  1\n  4010c4-4010c6:1\n  2\n  4010c1->4010c4:1\n"
                              "  4010c6->4010c8:1\n";
    static const char *ctx[] = {"[main:1 @ foo:1 @ bar:1 @ baz]\n",
                                "[baz]\n", "[bar:1 @ baz]\n",
                                "[foo:1 @ bar:1 @ baz]\n"};
    run_opts o = NOREPAIR;
    char want[256], *got;
    int d;

    NEED_FIXTURE();
    for (d = -1; d <= 2; d++) {
        o.depth = d;
        got = run(&deep, 1, o, NULL);
        snprintf(want, sizeof want, "%s%s", ctx[d + 1], body);
        expect(got, want);
        free(got);
    }
    o.depth = -1;
    got = run(&rec, 1, o, NULL);
    expect(got, "[main:1 @ fib27:1 @ fib:1 @ fib]\n  0\n  1\n  401106->401108:1\n");
    free(got);
    o.compress = 0;
    got = run(&rec, 1, o, NULL);
    expect(got, "[main:1 @ fib27:1 @ fib:1 @ fib:1 @ fib]\n  0\n  1\n"
                "  401106->401108:1\n");
    free(got);
}

/* ---- seed 003: the frame repair ------------------------------------------------ */

static void test_leaf_states(void **state)
{
    static const struct { uint64_t a; enum lp_uw_leaf s; } v[] = {
        {0x401100, LP_UW_LEAF_ENTRY}, {0x401101, LP_UW_LEAF_ENTRY},
        {0x401104, LP_UW_LEAF_BODY}, {0x40113e, LP_UW_LEAF_BODY},
        {0x40113f, LP_UW_LEAF_EXIT},
        /* 003-7: endbr64, push, mov all run on the caller's rbp */
        {0x401180, LP_UW_LEAF_ENTRY}, {0x401184, LP_UW_LEAF_ENTRY},
        {0x401185, LP_UW_LEAF_ENTRY}, {0x401188, LP_UW_LEAF_BODY},
        {0x4011be, LP_UW_LEAF_BODY}, {0x4011bf, LP_UW_LEAF_EXIT},
        /* frameless: the walk never sees this function's caller */
        {0x4011c0, LP_UW_LEAF_FRAMELESS}, {0x4011df, LP_UW_LEAF_FRAMELESS},
        /* shrink-wrapped: frameless start, frame, frameless early exit */
        {0x4011e0, LP_UW_LEAF_ENTRY}, {0x4011e2, LP_UW_LEAF_ENTRY},
        {0x4011e4, LP_UW_LEAF_ENTRY}, {0x4011e5, LP_UW_LEAF_ENTRY},
        {0x4011e8, LP_UW_LEAF_BODY}, {0x40120e, LP_UW_LEAF_BODY},
        {0x40120f, LP_UW_LEAF_EXIT},
        /* the early exit path never has a frame (NOFRAME) */
        {0x401210, LP_UW_LEAF_ENTRY}, {0x401212, LP_UW_LEAF_ENTRY},
        /* pop + tail jmp at 0x401214 is unreachable in the fixture: the
         * forward analysis says nothing (X0 tail jumps: test_fpunwind) */
        {0x401214, LP_UW_LEAF_UNKNOWN}, {0x401215, LP_UW_LEAF_UNKNOWN},
    };
    lp_binary *b;
    size_t i;

    NEED_FIXTURE();
    b = open_bin(fixture);
    for (i = 0; i < sizeof v / sizeof *v; i++)
        if (lp_unwind_leaf_state(b, v[i].a) != v[i].s)
            fail_msg("0x%" PRIx64 ": state %d, expected %d", v[i].a,
                     lp_unwind_leaf_state(b, v[i].a), v[i].s);
    /* what llvm-profgen's two-instruction heuristic gets wrong */
    assert_false(lp_binary_in_prolog_epilog(b, 0x401185));
    assert_true(lp_binary_in_prolog_epilog(b, 0x4011be));
    assert_false(lp_binary_in_prolog_epilog(b, 0x4011e4));
    lp_binary_close(b);
}

/* 003-6: fib's entry sampled, the walk skipped fib27; LBR[0] is the call. */
static const smp s003_6 = {
    {0x401100, 0x401035},
    {{0x401150, 0x401100}, {0x401148, 0x40114c}},
    1};
static const char *want003_6 =
    "[main:1 @ fib27]\n  1\n  40114c-401150:1\n  2\n  401148->40114c:1\n"
    "  401150->401100:1\n";

static void test_003_6_entry_from_lbr(void **state)
{
    lp_unwind_stats st;
    char *got;

    NEED_FIXTURE();
    got = run(&s003_6, 1, REPAIR_FP, &st);
    expect(got, want003_6);
    assert_int_equal(st.repaired, 1);
    assert_int_equal(st.mismatched_proepi, 0);
    free(got);
    got = run(&s003_6, 1, NOREPAIR, &st);
    expect(got, "");
    assert_int_equal(st.dropped_prolog, 1);
    free(got);
}

/* 003-5: a chain that already has the caller (e.g. unwound with DWARF) is
 * left alone when it does not come from a recorded kernel walk. */
static void test_003_5_already_right(void **state)
{
    smp s = s003_6;
    lp_unwind_stats st;
    char *got;

    NEED_FIXTURE();
    s.stack[1] = 0x401155;
    s.stack[2] = 0x401035;
    got = run(&s, 1, REPAIR, &st);
    expect(got, want003_6);
    assert_int_equal(st.already_right, 1);
    assert_int_equal(st.repaired, 0);
    free(got);
}

/* Recursion: fib entered from fib's own call site looks already right to
 * the frame-1 rule; a kernel walk (perf.data) misses that frame for sure. */
static void test_003_recursive_entry(void **state)
{
    static const smp s = {
        {0x401100, 0x401135, 0x401155, 0x401035},
        {{0x401130, 0x401100}, {0x401128, 0x40112c}},
        1};
    run_opts o = REPAIR;
    lp_unwind_stats st;
    char *got;

    NEED_FIXTURE();
    o.compress = 0;
    got = run(&s, 1, o, &st);
    expect(got, "[main:1 @ fib27:1 @ fib]\n  1\n  40112c-401130:1\n  2\n"
                "  401128->40112c:1\n  401130->401100:1\n");
    assert_int_equal(st.already_right, 1);
    free(got);
    o.fp_walk = true;
    got = run(&s, 1, o, &st);
    expect(got, "[main:1 @ fib27:1 @ fib:1 @ fib]\n  1\n  40112c-401130:1\n  2\n"
                "  401128->40112c:1\n  401130->401100:1\n");
    assert_int_equal(st.repaired, 1);
    free(got);
}

/* An exit leaf (bar's ret): the LBR is scanned back to the call into bar,
 * over baz's balanced call and return. Unrepaired, bar's ranges would be
 * counted under main:1 @ bar. */
static void test_003_exit_balanced(void **state)
{
    static const smp s = {
        {0x4010bf, 0x401025},
        {{0x4010b0, 0x4010be}, {0x4010df, 0x401095}, {0x401090, 0x4010c0},
         {0x401050, 0x401080}},
        1};
    lp_unwind_stats st;
    char *got;

    NEED_FIXTURE();
    got = run(&s, 1, REPAIR_FP, &st);
    expect(got, "[main:1 @ foo]\n  0\n  1\n  401050->401080:1\n"
                "[main:1 @ foo:1 @ bar]\n  2\n  401080-401090:1\n  401095-4010b0:1\n"
                "  2\n  401090->4010c0:1\n  4010b0->4010be:1\n"
                "[main:1 @ foo:1 @ bar:1 @ baz]\n  1\n  4010c0-4010df:1\n  1\n"
                "  4010df->401095:1\n");
    assert_int_equal(st.repaired, 1);
    free(got);
    got = run(&s, 1, NOREPAIR, &st);
    expect(got, "");
    free(got);
}

/* No proof in the LBR (the call is too old): a hole for the caller, and
 * the code kept in contexts truncated there (from text too). With
 * --drop-unknown-callers: dropped and counted from text; from a recorded
 * kernel walk kept with an unknown caller frame whose code counts
 * nowhere. */
static void test_003_unprovable_dropped(void **state)
{
    static const smp s = {
        {0x4010bf, 0x401025},
        {{0x4010b0, 0x4010be}, {0x4010df, 0x401095}},
        1};
    lp_unwind_stats st;
    char *got;

    NEED_FIXTURE();
    got = run(&s, 1, REPAIR_DROP, &st);
    expect(got, "");
    assert_int_equal(st.dropped_prolog, 1);
    free(got);
    got = run(&s, 1, REPAIR_FP_DROP, &st);
    expect(got, "");
    assert_int_equal(st.dropped_prolog, 0);
    assert_int_equal(st.caller_hole, 1);
    assert_int_equal(st.lost, 1);
    free(got);
    /* by default kept, truncated at the unknown caller of bar */
    got = run(&s, 1, REPAIR, &st);
    expect(got, "[bar]\n  1\n  401095-4010b0:1\n  1\n  4010b0->4010be:1\n"
                "[bar:1 @ baz]\n  0\n  1\n  4010df->401095:1\n");
    assert_int_equal(st.dropped_prolog, 0);
    assert_int_equal(st.caller_hole, 1);
    assert_int_equal(st.lost, 1);
    assert_int_equal(st.lost_records, 3);
    free(got);
}

/* Perf script text, no proof in the LBR: a frame 1 that is a direct call
 * to the leaf's function is its caller (the chain may come from a DWARF
 * unwinder; a frame-pointer walk could show such a site only for a
 * recursive grandparent). foo's ret, main's call to foo: kept as is. fib's
 * ret, fib27's call to fib: fib calls itself, so the grandparent is as
 * likely - a hole, the context truncated at it. */
static void test_003_text_chain_caller(void **state)
{
    static const smp foo_exit = {
        {0x40107f, 0x401025}, {{0x401058, 0x401060}}, 1};
    static const smp fib_exit = {
        {0x40113f, 0x401155}, {{0x40113f, 0x401135}}, 1};
    lp_unwind_stats st;
    char *got;

    NEED_FIXTURE();
    got = run(&foo_exit, 1, REPAIR, &st);
    expect(got, "[main:1 @ foo]\n  0\n  1\n  401058->401060:1\n");
    assert_int_equal(st.already_right, 1);
    assert_int_equal(st.caller_hole, 0);
    free(got);
    got = run(&fib_exit, 1, REPAIR, &st);
    expect(got, "[fib:1 @ fib]\n  0\n  1\n  40113f->401135:1\n");
    assert_int_equal(st.already_right, 0);
    assert_int_equal(st.caller_hole, 1);
    free(got);
    /* a recorded kernel walk certainly lacks the caller: a hole for foo */
    got = run(&foo_exit, 1, REPAIR_FP, &st);
    expect(got, "[foo]\n  0\n  1\n  401058->401060:1\n");
    assert_int_equal(st.caller_hole, 1);
    free(got);
}

/* CET: `mov %rsp,%rbp` after endbr64 + push is not in llvm-profgen's set, so
 * it keeps the sample and its unwinder fills the caller on the call
 * (counted as a prolog/epilog mismatch); the repair gives the same
 * contexts without the mismatch. */
static void test_003_7_cet_mov(void **state)
{
    static const smp s = {
        {0x401185, 0x401025},
        {{0x401050, 0x401180}, {0x401041, 0x401048}},
        1};
    static const char *want = "[main:1 @ foo]\n  1\n  401048-401050:1\n  2\n"
                              "  401041->401048:1\n  401050->401180:1\n";
    lp_unwind_stats st;
    char *got;

    NEED_FIXTURE();
    got = run(&s, 1, NOREPAIR, &st);
    expect(got, want);
    assert_int_equal(st.mismatched_proepi, 1);
    free(got);
    got = run(&s, 1, REPAIR_FP, &st);
    expect(got, want);
    assert_int_equal(st.mismatched_proepi, 0);
    assert_int_equal(st.repaired, 1);
    free(got);
}

/* The brief's case: noinline-cs-noprobe.perfscript's second sample (leaf at
 * bar's first instruction, LBR[0] foo's call) is dropped by llvm-profgen;
 * repaired it adds, by hand: main:1 @ foo 5ff-62f, 634-637, 645-645 x3,
 * 62f->5b0 x4, 637->645 x3, 645->5ff x3; main:1 @ foo:3 @ bar 5b0-5c8 x1,
 * 5b0-5d7 x2, 5dc-5e9 x1, 5e5-5e9 x2, 5c8->5dc x1, 5d7->5e5 x2, 5e9->634 x3
 * (on top of the first sample's, Example C of the reference). */
/* The warnings of a run, one after the other (detailed ones included). */
static void keep_warning(void *ctx, const char *msg)
{
    char **all = ctx;
    size_t n = *all ? strlen(*all) : 0;

    *all = realloc(*all, n + strlen(msg) + 2);
    assert_non_null(*all);
    sprintf(*all + n, "%s\n", msg);
}

/* With warm > 0, lp_unwind_warm_next is called up to `warm` times after
 * each sample, as the reader's idle hook would; *st gets the statistics.
 * Each sample is taken `times` times, the warming after the first: what
 * the warming recorded is replayed with a larger count. */
static char *run_script_par(const char *script, const char *bin, bool repair,
                            int warm, int times, lp_unwind_stats *st,
                            size_t *warmed, char **warnings, size_t par_min,
                            char **order)
{
    lp_binary *b = open_bin(bin);
    lp_reader_opts ro = {0};
    lp_unwind_opts o;
    lp_error e = {0};
    const lp_event *ev;
    lp_reader *r;
    lp_unwinder *u;
    lp_ctxcount *cc;
    char *out;
    int k;

    lp_unwind_opts_default(&o);
    o.repair_frames = repair;
    o.parallel_min = par_min;
    if (warnings) {
        o.warn = keep_warning;
        o.warn_ctx = warnings;
        o.show_detailed_warning = true;
    }
    ro.force_text = 1;
    assert_non_null(u = lp_unwind_new(&b, 1, &o, &e));
    assert_non_null(r = lp_reader_open(script, &ro, &e));
    while ((k = lp_reader_next(r, &ev, &e)) == 1) {
        if (ev->kind == LP_EV_MMAP)
            assert_int_equal(lp_unwind_mmap(u, &ev->u.mmap, &e), 0);
        else if (ev->kind == LP_EV_SAMPLE) {
            const lp_sample *s = &ev->u.sample;
            lp_hybrid_sample h = {.stack = s->callchain,
                                  .nstack = s->callchain_nr,
                                  .br = s->branches, .nbr = s->branch_nr,
                                  .repeat = s->repeat};
            assert_int_equal(lp_unwind_sample(u, &h, &e), 0);
            for (int w = 0; w < warm && lp_unwind_warm_next(u); w++)
                ++*warmed;
            for (int t = 1; t < times; t++)
                assert_int_equal(lp_unwind_sample(u, &h, &e), 0);
        }
    }
    assert_int_equal(k, 0);
    lp_reader_close(r);
    assert_non_null(cc = lp_unwind_finish(u, &e));
    assert_int_equal(lp_unwind_warm_next(u), 0); /* finished: nothing */
    out = raw_string(cc, lp_binary_preferred_base(b));
    if (order)
        *order = order_string(cc);
    if (st)
        *st = *lp_unwind_stats_get(u);
    lp_ctxcount_free(cc);
    lp_unwind_free(u);
    lp_binary_close(b);
    return out;
}

static char *run_script_warm(const char *script, const char *bin, bool repair,
                             int warm, int times, lp_unwind_stats *st,
                             size_t *warmed, char **warnings)
{
    return run_script_par(script, bin, repair, warm, times, st, warmed,
                          warnings, SIZE_MAX, NULL);
}

static char *run_script(const char *script, const char *bin, bool repair)
{
    size_t warmed = 0;

    return run_script_warm(script, bin, repair, 0, 1, NULL, &warmed, NULL);
}

/* lp_unwind_warm_next (the consumer's idle work: an unwinding recorded
 * ahead and replayed with the final count) changes no context, count,
 * note or statistic but `replayed` (which counts it: at most one per
 * distinct sample warmed, none without), with or without the repair,
 * whether it keeps up with the samples (8 per sample) or lags behind
 * them (1 per sample), with each sample taken once or three times. */
static void test_warm_next_same(void **state)
{
    static const char *const names[][2] = {
        {"noinline-cs-noprobe", NULL}, {"inline-cs-noprobe", NULL},
        {"callback-external-addr", NULL},
        {"recursion-compression-noprobe", NULL}, {"cs-preinline-cost", NULL},
        {"func-split", NULL}, {"multi-load-segs", NULL},
        {"unique-linkage-name-dwarf", NULL},
        {"cs-interrupt", "noinline-cs-noprobe"},
        {"cs-invalid-ret-addr", "noinline-cs-noprobe"},
        {"external-address", "inline-cs-noprobe"},
        {"invalid-range", "noinline-cs-pseudoprobe"},
        {"artificial-branch", "noinline-cs-noprobe"},
    };
    char script[256], bin[256];
    size_t i, nonempty = 0, warmed = 0, notes = 0, replayed = 0;
    int rep, w;

    (void)state;
    for (i = 0; i < sizeof names / sizeof *names; i++)
        for (rep = 0; rep < 2; rep++)
            for (w = 1; w <= 8; w += 7) {
                lp_unwind_stats s0, s1;
                char *cold, *warm, *w0 = NULL, *w1 = NULL;
                size_t n = 0;
                int times = w == 8 ? 3 : 1;
                snprintf(script, sizeof script, IN "%s.perfscript", names[i][0]);
                snprintf(bin, sizeof bin, IN "%s.perfbin",
                         names[i][1] ? names[i][1] : names[i][0]);
                cold = run_script_warm(script, bin, rep, 0, times, &s0, &n, &w0);
                assert_int_equal(n, 0);
                warm = run_script_warm(script, bin, rep, w, times, &s1, &n, &w1);
                assert_string_equal(warm, cold);
                assert_string_equal(w1 ? w1 : "", w0 ? w0 : "");
                notes += w0 && strstr(w0, " samples)");
                free(w0);
                free(w1);
                assert_int_equal(s0.replayed, 0);
                assert_true(s1.replayed <= n);
                replayed += s1.replayed;
                s1.replayed = 0;
                assert_memory_equal(&s0, &s1, sizeof s0);
                if (w == 8)     /* kept up: every distinct sample warmed */
                    assert_int_equal(n, s1.distinct);
                warmed += n;
                nonempty += cold[0] != 0;
                free(cold);
                free(warm);
            }
    assert_true(nonempty >= 20); /* the repair drops some inputs' only sample */
    assert_true(warmed >= 40);   /* and the warming did happen */
    assert_true(replayed >= 40); /* and replayed, counted (76 of 130) */
    assert_true(notes >= 4);     /* counted notes were compared too */
}

/* Two distinct samples of recursion-compression-noprobe give the context
 * [main:1 @ foo:3 @ fa:2 @ fb:2 @ fa] leaves of their own: A (the
 * sample's two newest LBR entries) an inlined one, B (all but the newest)
 * one not. llvm-profgen unwinds its AggregatedSamples (unordered_map) in
 * the reverse order of these two insertions, and the context keeps the
 * first unwound leaf: B's when A comes first in the trace (no
 * ContextWasInlined, as llvm-profgen-22 writes it), A's the other way.
 * Recorded ahead (lp_unwind_warm_next, in insertion order), the context
 * was created by the first sample inserted and kept its leaf. */
static void write_ab(const char *path, bool a_first)
{
    char line[4][2048], *lbr[16], *p;
    FILE *in = fopen(IN "recursion-compression-noprobe.perfscript", "r");
    FILE *out = fopen(path, "w");
    int i, n = 0;

    assert_non_null(in);
    assert_non_null(out);
    for (i = 0; i < 4; i++)
        assert_non_null(fgets(line[i], sizeof line[i], in));
    fclose(in);
    for (p = strtok(line[3], " \n"); p && n < 16; p = strtok(NULL, " \n"))
        lbr[n++] = p;
    assert_int_equal(n, 16);
    fprintf(out, "%s\n", line[0]);
    for (i = 0; i < 2; i++) {
        bool a = (i == 0) == a_first;
        fprintf(out, "%s", line[2]);
        for (int k = a ? 0 : 1; k < (a ? 2 : 16); k++)
            fprintf(out, " %s ", lbr[k]);
        fprintf(out, "\n\n");
    }
    fclose(out);
}

static void test_first_leaf_in_unwinding_order(void **state)
{
    char script[512], bin[256], *order, *raw, want[128];
    size_t warmed = 0;
    int a_first, warm;

    (void)state;
    snprintf(script, sizeof script, "%s/ab.perfscript", dir);
    snprintf(bin, sizeof bin, IN "recursion-compression-noprobe.perfbin");
    for (a_first = 0; a_first < 4; a_first++)      /* bit 1: two threads */
        for (warm = 0; warm <= 8; warm += 8) {
            write_ab(script, a_first & 1);
            raw = run_script_par(script, bin, false, warm, 1, NULL, &warmed,
                                 NULL, a_first & 2 ? 2 : SIZE_MAX, &order);
            snprintf(want, sizeof want,
                     "0 [main:1 @ foo:3 @ fa:2 @ fb:2 @ fa] %d\n", !(a_first & 1));
            if (!strstr(order, want))
                fail_msg("warm %d, A %s, threads %d: no '%s' in\n%s", warm,
                         a_first & 1 ? "first" : "second", a_first & 2 ? 2 : 1,
                         want, order);
            free(raw);
            free(order);
        }
    assert_int_equal(warmed, 8);        /* both samples recorded, 4 times */
}

static int cpus(void)
{
    cpu_set_t set;

    return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
}

/* The flush on two threads (parallel.c, forced from the second distinct
 * sample on) gives what one thread gives: the contexts in the same order
 * with the same was_leaf_inlined, the same counts, warnings (counted
 * notes included) and statistics - with and without the repair, with
 * samples recorded ahead and replayed (warm 8, each sample taken three
 * times) and without. */
static void test_parallel_flush_same(void **state)
{
    static const char *const names[][2] = {
        {"noinline-cs-noprobe", NULL}, {"inline-cs-noprobe", NULL},
        {"callback-external-addr", NULL},
        {"recursion-compression-noprobe", NULL}, {"cs-preinline-cost", NULL},
        {"func-split", NULL}, {"unique-linkage-name-dwarf", NULL},
        {"cs-interrupt", "noinline-cs-noprobe"},
        {"cs-invalid-ret-addr", "noinline-cs-noprobe"},
        {"external-address", "inline-cs-noprobe"},
        {"artificial-branch", "noinline-cs-noprobe"},
    };
    char script[256], bin[256];
    size_t i, parallel = 0, n = 0;
    int rep, w;

    (void)state;
    for (i = 0; i < sizeof names / sizeof *names; i++)
        for (rep = 0; rep < 2; rep++)
            for (w = 0; w <= 8; w += 8) {
                lp_unwind_stats s0, s1;
                char *one, *two, *w0 = NULL, *w1 = NULL, *o0 = NULL, *o1 = NULL;
                int times = w ? 3 : 1;
                snprintf(script, sizeof script, IN "%s.perfscript", names[i][0]);
                snprintf(bin, sizeof bin, IN "%s.perfbin",
                         names[i][1] ? names[i][1] : names[i][0]);
                one = run_script_par(script, bin, rep, w, times, &s0, &n, &w0,
                                     SIZE_MAX, &o0);
                two = run_script_par(script, bin, rep, w, times, &s1, &n, &w1,
                                     2, &o1);
                assert_string_equal(two, one);
                assert_string_equal(o1, o0);
                assert_string_equal(w1 ? w1 : "", w0 ? w0 : "");
                assert_int_equal(s0.parallel, 0);
                parallel += s1.parallel;
                s1.parallel = 0;
                assert_memory_equal(&s0, &s1, sizeof s0);
                free(one), free(two), free(w0), free(w1), free(o0), free(o1);
            }
    if (cpus() >= 2)
        assert_true(parallel >= 10);    /* the second thread did work */
}

static void test_repair_noinline_cs(void **state)
{
    char *got;

    (void)state;
    got = run_script(IN "noinline-cs-noprobe.perfscript",
                     IN "noinline-cs-noprobe.perfbin", true);
    expect(got, "[main:1 @ foo]\n  3\n  5ff-62f:6\n  634-637:6\n  645-645:6\n"
                "  3\n  62f->5b0:7\n  637->645:6\n  645->5ff:6\n"
                "[main:1 @ foo:3 @ bar]\n  4\n  5b0-5c8:2\n  5b0-5d7:4\n"
                "  5dc-5e9:2\n  5e5-5e9:4\n  3\n  5c8->5dc:3\n  5d7->5e5:4\n"
                "  5e9->634:6\n");
    free(got);
    got = run_script(IN "noinline-cs-noprobe.perfscript",
                     IN "noinline-cs-noprobe.perfbin", false);
    expect(got, "[main:1 @ foo]\n  3\n  5ff-62f:3\n  634-637:3\n  645-645:3\n"
                "  3\n  62f->5b0:3\n  637->645:3\n  645->5ff:3\n"
                "[main:1 @ foo:3 @ bar]\n  4\n  5b0-5c8:1\n  5b0-5d7:2\n"
                "  5dc-5e9:1\n  5e5-5e9:2\n  3\n  5c8->5dc:2\n  5d7->5e5:2\n"
                "  5e9->634:3\n");
    free(got);
}

/* ---- signals and non-local exits -------------------------------------------- */

/* The file with the restorer, and "libc" around EXT (every address the
 * walks give must be mapped once the trace shows more than the binary). */
static const lp_mmap_event *restorer_map(void)
{
    static lp_mmap_event m[2];

    m[0].start = RESTORER_MAP;
    m[0].len = 0x1000;
    m[0].filename = restorer;
    m[1].start = EXT & ~0xfffffull;
    m[1].len = 0x100000;
    m[1].filename = "/lib/libc-test.so";
    return m;
}

/* A handler (bar) sampled in its body; the kernel entered it while foo ran
 * at 0x401060 (after its jmp, after an external call): the walk gives
 * [bar, restorer, main's return address] (foo's own frame is where the
 * handler's rbp points). The range across the delivery (0x401060 .. bar's
 * jne) is no code that ran; the older entries ran in foo called from
 * main. llvm-profgen counts them without context; the repair puts them on
 * the interrupted stack. foo may have been interrupted in its body (the
 * walk has main) or at its ret (the walk has main's caller): main's direct
 * call to foo decides, main calls foo and not itself. */
static const smp sig_body = {
    {0x40108a, RESTORER, 0x401025, EXT + 0xf0000},
    {{0x401084, 0x401088}, {0x401058, 0x401060}, {EXT + 0x500, 0x401052},
     {0x401050, EXT + 0x400}, {0x401020, 0x401040}},
    1};

static void test_signal_handler_sampled(void **state)
{
    lp_unwind_stats st;
    char *got;

    NEED_FIXTURE();
    got = run_maps(&sig_body, 1, NOREPAIR, &st, restorer_map(), 2);
    expect(got, "[]\n  0\n  1\n  1->401052:1\n"
                "[bar]\n  0\n  1\n  401084->401088:1\n"
                "[foo]\n  2\n  401040-401050:1\n  401052-401058:1\n"
                "  1\n  401058->401060:1\n"
                "[main]\n  0\n  1\n  401020->401040:1\n");
    assert_int_equal(st.contextless, 1);
    free(got);
    got = run_maps(&sig_body, 1, REPAIR_FP, &st, restorer_map(), 2);
    expect(got, "[]\n  0\n  1\n  1->401052:1\n"
                "[bar]\n  0\n  1\n  401084->401088:1\n"
                "[main]\n  0\n  1\n  401020->401040:1\n"
                "[main:1 @ foo]\n  2\n  401040-401050:1\n  401052-401058:1\n"
                "  1\n  401058->401060:1\n");
    assert_int_equal(st.signal_frames, 1);
    assert_int_equal(st.lost, 0);
    free(got);
    /* without the restorer's mapping nothing proves the signal frame: the
     * older part is dropped, not guessed */
    got = run_maps(&sig_body, 1, REPAIR_FP_DROP, &st, NULL, 0);
    expect(got, "[]\n  0\n  1\n  1->401052:1\n"
                "[bar]\n  0\n  1\n  401084->401088:1\n");
    assert_int_equal(st.signal_frames, 0);
    assert_int_equal(st.lost, 1);
    free(got);
    /* by default kept, truncated where the callers are unknown: the
     * calls older than the delivery reveal main and foo */
    got = run_maps(&sig_body, 1, REPAIR_FP, &st, NULL, 0);
    expect(got, "[]\n  0\n  1\n  1->401052:1\n"
                "[bar]\n  0\n  1\n  401084->401088:1\n"
                "[main]\n  0\n  1\n  401020->401040:1\n"
                "[main:1 @ foo]\n  2\n  401040-401050:1\n  401052-401058:1\n"
                "  1\n  401058->401060:1\n");
    assert_int_equal(st.signal_frames, 0);
    assert_int_equal(st.lost, 1);
    free(got);
}

/* The same delivery while the frameless function (called by foo at
 * 0x401050) ran: its frame and foo's are both missing from the walk; foo
 * is a hole under main that foo's call fills in. */
static void test_signal_in_frameless(void **state)
{
    static const smp s = {
        {0x40108a, RESTORER, 0x401025, EXT + 0xf0000},
        {{0x401084, 0x401088}, {0x401050, 0x4011c0}, {0x401020, 0x401040}},
        1};
    lp_unwind_stats st;
    char *got;

    NEED_FIXTURE();
    got = run_maps(&s, 1, REPAIR_FP, &st, restorer_map(), 2);
    expect(got, "[bar]\n  0\n  1\n  401084->401088:1\n"
                "[main]\n  0\n  1\n  401020->401040:1\n"
                "[main:1 @ foo]\n  1\n  401040-401050:1\n  1\n  401050->4011c0:1\n");
    assert_int_equal(st.signal_frames, 1);
    assert_int_equal(st.lost, 0);
    free(got);
}

/* rt_sigreturn: a signal interrupted bar (called by foo, called by main)
 * after its jne; the handler, qux, returned to the restorer, bar went on
 * and called baz, where the sample is. The range from the restorer to
 * bar's call did not run; the handler ran on a signal frame above bar, and
 * the range across the delivery ends it. llvm-profgen counts everything
 * older than the restorer without context. */
static void test_sigreturn(void **state)
{
    static const smp s = {
        {0x4010c8, 0x401095, 0x401052, 0x401025, EXT + 0xf0000},
        {{0x401090, 0x4010c0}, {0x4010ff, RESTORER}, {0x401084, 0x401088},
         {0x401050, 0x401080}, {0x401020, 0x401040}},
        1};
    lp_unwind_stats st;
    char *got;

    NEED_FIXTURE();
    got = run_maps(&s, 1, REPAIR_FP, &st, restorer_map(), 2);
    expect(got, "[main]\n  0\n  1\n  401020->401040:1\n"
                "[main:1 @ foo]\n  1\n  401040-401050:1\n  1\n  401050->401080:1\n"
                "[main:1 @ foo:1 @ bar]\n  1\n  401080-401084:1\n  2\n"
                "  401084->401088:1\n  401090->4010c0:1\n");
    assert_int_equal(st.signal_frames, 1);
    assert_int_equal(st.lost, 0);
    free(got);
    got = run_maps(&s, 1, NOREPAIR, &st, restorer_map(), 2);
    expect(got, "[bar]\n  1\n  401080-401084:1\n  1\n  401084->401088:1\n"
                "[foo]\n  1\n  401040-401050:1\n  1\n  401050->401080:1\n"
                "[main]\n  0\n  1\n  401020->401040:1\n"
                "[main:1 @ foo:1 @ bar]\n  0\n  1\n  401090->4010c0:1\n");
    assert_int_equal(st.contextless, 1);
    free(got);
}

/* longjmp: main called "setjmp" at 0x401010 (external); the jump lands
 * after that call, which looks like setjmp returning. The call before it
 * came from foo (0x401050, "longjmp"), not from 0x401010: the frames the
 * jump left are not on the sampled stack, and what ran in them is kept in
 * contexts truncated at the unknown frame (dropped with
 * --drop-unknown-callers), not put under main's call to setjmp. */
static void test_longjmp(void **state)
{
    static const smp s = {
        {0x40101c, EXT + 0xf0000},
        {{EXT + 0x300, 0x401012}, {0x401050, EXT + 0x400}, {0x401020, 0x401040}},
        1};
    lp_unwind_stats st;
    char *got;

    NEED_FIXTURE();
    got = run(&s, 1, REPAIR_FP_DROP, &st);
    expect(got, "[]\n  0\n  1\n  1->401012:1\n");
    assert_int_equal(st.nonlocal, 1);
    assert_int_equal(st.lost, 1);
    assert_int_equal(st.lost_records, 2); /* 401040-401050, 401020->401040 */
    free(got);
    /* by default kept in the frames the calls reveal, truncated at main's
     * unknown caller, not put under main's call to setjmp */
    got = run(&s, 1, REPAIR_FP, &st);
    expect(got, "[]\n  0\n  1\n  1->401012:1\n"
                "[main]\n  0\n  1\n  401020->401040:1\n"
                "[main:1 @ foo]\n  1\n  401040-401050:1\n  0\n");
    assert_int_equal(st.lost, 1);
    assert_int_equal(st.lost_records, 2);
    free(got);
    /* llvm-profgen: foo's call replaces main's frame at setjmp's call,
     * main's call to foo then lands on main: [main:1 @ main] */
    got = run(&s, 1, NOREPAIR, &st);
    expect(got, "[]\n  0\n  1\n  1->401012:1\n"
                "[main:1 @ foo]\n  1\n  401040-401050:1\n  0\n"
                "[main:1 @ main]\n  0\n  1\n  401020->401040:1\n");
    assert_int_equal(st.mismatched_proepi, 2);
    free(got);
}

/* ---- user stacks ------------------------------------------------------------ */

/* shrink's frameless exit (0x401210 .. ret at 0x401212), reached by its
 * je at 0x4011e2; foo called it at 0x401050 (return address 0x401052),
 * main called foo. The walk has [ip, foo's return address]; the stack
 * dump at sp holds shrink's return address. `ret` is what the dump says,
 * `call` (if not 0) an older LBR entry showing the call. */
static char *run_user_stack(uint64_t ret, uint64_t call, lp_unwind_stats *st)
{
    static const uint64_t stack[] = {0x401212, 0x401025, EXT + 0xf0000};
    uint64_t regs[3] = {0x7ffc0000f000, 0x7ffc0000e000, 0x401212}; /* bp, sp, ip */
    uint64_t dump[2] = {ret, 0};
    lp_branch_entry br[2] = {{0x4011e2, 0x401210, 0}, {0x401050, 0x4011e0, 0}};
    lp_sample ps = {0};
    lp_hybrid_sample h = {0};
    lp_binary *b = open_bin(fixture);
    lp_unwind_opts o;
    lp_error e = {0};
    lp_unwinder *u;
    lp_ctxcount *cc;
    char *out;

    ps.regs_user_abi = 2;
    ps.regs_user_mask = (1u << 6) | (1u << 7) | (1u << 8);
    ps.regs_user = regs;
    ps.stack_user = (const uint8_t *)dump;
    ps.stack_user_size = ps.stack_user_dyn_size = sizeof dump;
    lp_unwind_opts_default(&o);
    assert_non_null(u = lp_unwind_new(&b, 1, &o, &e));
    h.stack = stack;
    h.nstack = 3;
    h.fp_walk = true;
    h.br = br;
    h.nbr = call ? 2 : 1;
    h.regs_stack = ret ? &ps : NULL;
    assert_int_equal(lp_unwind_sample(u, &h, &e), 0);
    assert_non_null(cc = lp_unwind_finish(u, &e));
    out = raw_string(cc, 0);
    *st = *lp_unwind_stats_get(u);
    lp_ctxcount_free(cc);
    lp_unwind_free(u);
    lp_binary_close(b);
    return out;
}

static void test_user_stack(void **state)
{
    static const char *want = "[main:1 @ foo:1 @ shrink]\n  0\n  1\n  4011e2->401210:1\n";
    lp_unwind_stats st;
    char *got;

    NEED_FIXTURE();
    /* no stack, no call in the LBR: the caller is unknown, the context
     * truncated there */
    got = run_user_stack(0, 0, &st);
    expect(got, "[shrink]\n  0\n  1\n  4011e2->401210:1\n");
    assert_int_equal(st.caller_hole, 1);
    assert_int_equal(st.lost, 1);
    free(got);
    /* the stack shows it */
    got = run_user_stack(0x401052, 0, &st);
    expect(got, want);
    assert_int_equal(st.repaired_stack, 1);
    assert_int_equal(st.lost, 0);
    free(got);
    /* both show it, the same: counted as agreeing */
    got = run_user_stack(0x401052, 1, &st);
    expect(got, "[main:1 @ foo]\n  0\n  1\n  401050->4011e0:1\n"
                "[main:1 @ foo:1 @ shrink]\n  1\n  4011e0-4011e2:1\n  1\n"
                "  4011e2->401210:1\n");
    assert_int_equal(st.repaired, 1);
    assert_int_equal(st.stack_agree, 1);
    assert_int_equal(st.stack_disagree, 0);
    free(got);
    /* they disagree (main's return address after fib27 on the stack): the
     * LBR wins */
    got = run_user_stack(0x401035, 1, &st);
    assert_int_equal(st.stack_disagree, 1);
    assert_int_equal(st.repaired, 1);
    assert_non_null(strstr(got, "[main:1 @ foo:1 @ shrink]"));
    free(got);
}

/* ---- robustness ----------------------------------------------------------------- */

/* Random stacks and LBRs over the fixture's interesting addresses (entries,
 * exits, calls, returns, external code, the restorer, addresses after no
 * call): the unwinder, repair on and off, never fails or misbehaves (the
 * ASan build runs this too). */
/* 3000 random samples over the fixture's addresses (and external code,
 * a restorer, unmapped addresses): one pass of options; the raw profile,
 * the context order and the statistics. Each run draws the same samples.
 * st NULL: the unwinder is freed with its samples pending (an input that
 * fails half-way), NULL returned. */
static char *random_run(lp_binary *b, int pass, size_t par_min,
                        lp_unwind_stats *st, char **order)
{
    static const uint64_t pool[] = {
        0x401000, 0x401010, 0x401012, 0x401020, 0x401025, 0x401030, 0x401035,
        0x401040, 0x401050, 0x401052, 0x401054, 0x401058, 0x401060, 0x401064,
        0x40107e, 0x40107f, 0x401080, 0x401084, 0x401088, 0x40108a, 0x401090,
        0x401095, 0x4010bf, 0x4010c0, 0x4010df, 0x4010e0, 0x4010ff, 0x401100,
        0x401130, 0x401135, 0x401150, 0x401155, 0x401180, 0x401185, 0x4011c0,
        0x4011df, 0x4011e0, 0x4011e2, 0x401210, 0x401212, 0x401215,
        EXT, EXT + 0x100, RESTORER, RESTORER + 7, 0x7e0000000000, 0};
    const size_t np = sizeof pool / sizeof *pool;
    uint64_t seed = 12345, stack[8];
    lp_branch_entry br[12];
    lp_unwind_opts o;
    lp_error e = {0};
    lp_unwinder *u;
    lp_ctxcount *cc;
    size_t k, ns, nb;
    char *out;
    int i;

#define RND() (seed = seed * 6364136223846793005ull + 1442695040888963407ull, seed >> 33)
    lp_unwind_opts_default(&o);
    o.repair_frames = pass < 3;
    o.compress_recursion = pass == 1 ? 0 : -1;
    o.parallel_min = par_min;
    assert_non_null(u = lp_unwind_new(&b, 1, &o, &e));
    for (k = 0; k < 2; k++)
        assert_int_equal(lp_unwind_mmap(u, &restorer_map()[k], &e), 0);
    for (i = 0; i < 3000; i++) {
        lp_hybrid_sample h = {0};
        ns = 1 + RND() % 7;
        nb = RND() % 12;
        for (k = 0; k < ns; k++)
            stack[k] = pool[RND() % np];
        for (k = 0; k < nb; k++) {
            br[k].from = pool[RND() % np];
            br[k].to = pool[RND() % np];
            br[k].flags = 0;
        }
        h.stack = stack;
        h.nstack = ns;
        h.fp_walk = RND() & 1;
        h.br = br;
        h.nbr = nb;
        h.repeat = 1 + RND() % 3;
        assert_int_equal(lp_unwind_sample(u, &h, &e), 0);
    }
#undef RND
    if (!st) {
        lp_unwind_free(u);
        return NULL;
    }
    assert_non_null(cc = lp_unwind_finish(u, &e));
    out = raw_string(cc, 0);
    *order = order_string(cc);
    *st = *lp_unwind_stats_get(u);
    lp_ctxcount_free(cc);
    lp_unwind_free(u);
    return out;
}

/* Random samples unwind without a crash under every option set, and the
 * flush on two threads gives one thread's result on them (contexts, their
 * order and was_leaf_inlined, counts, statistics). */
static void test_random_samples(void **state)
{
    lp_binary *b;
    size_t parallel = 0;
    int pass;

    NEED_FIXTURE();
    b = open_bin(fixture);
    for (pass = 0; pass < 4; pass++) {
        lp_unwind_stats s0, s1;
        char *o0, *o1, *one = random_run(b, pass, SIZE_MAX, &s0, &o0);
        char *two = random_run(b, pass, 2, &s1, &o1);
        assert_string_equal(two, one);
        assert_string_equal(o1, o0);
        parallel += s1.parallel;
        s1.parallel = 0;
        assert_memory_equal(&s0, &s1, sizeof s0);
        free(one), free(two), free(o0), free(o1);
        assert_null(random_run(b, pass, 2, NULL, NULL)); /* ASan: no leak,
                                                            no use after free */
    }
    if (cpus() >= 2)
        assert_true(parallel > 1000);
    lp_binary_close(b);
}

/* Samples given a dup_id (text samples the reader saw before), or equal
 * to an earlier one by digest (perf.data, with the address map), are taken
 * in once and replayed: the profile and every statistic equal those of
 * the same samples without ids - with and without the repair, across
 * flushes (a tiny budget) and mmap events (which start a new memo). */
typedef struct dup_smp {
    uint64_t stack[8];
    lp_branch_entry br[12];
    size_t ns, nb;
    bool fp_walk;
} dup_smp;

/* The fixture mapped at its link address (the address-map route:
 * perf.data samples, keyed by digest). */
static void map_fixture(lp_addrmap *m, uint32_t pid)
{
    lp_event ev = {0};
    lp_error e = {0};

    ev.kind = LP_EV_MMAP;
    ev.u.mmap = (lp_mmap_event){.pid = pid, .tid = pid, .start = 0x400000,
                                .len = 0x10000, .pgoff = 0,
                                .filename = fixture};
    assert_int_equal(lp_addrmap_event(m, &ev, &e), 0);
}

/* pass 0: repair; 1: no repair; 2: repair, frequent flushes; 3: no repair,
 * the address map (perf.data: no ids, a digest); 4: the same, but only the
 * address map learns of the mmaps, and process 1's comes half-way (its
 * earlier samples are external code): the memo must see the map change by
 * itself; 5: as 3, with every other sample's stacks_id computed ahead
 * (the reader's thread does so for some batches, not others: the keys
 * must be the same), and every sixth one's by lp_unwind_ahead; 6 and 7:
 * as 1 and 2, each sample first offered without its stack and branches
 * to lp_unwind_replay, and given whole to lp_unwind_sample only when that
 * did not take it (lp_reader_defer_arrays' consumer). `memo` false: every
 * intake from scratch. */
/* The run's profile as a string and its statistics; u is freed. */
static char *finish_string(lp_unwinder *u, lp_unwind_stats *st)
{
    lp_error e = {0};
    lp_ctxcount *cc;
    char *out;

    assert_non_null(cc = lp_unwind_finish(u, &e));
    out = raw_string(cc, 0);
    *st = *lp_unwind_stats_get(u);
    lp_ctxcount_free(cc);
    lp_unwind_free(u);
    return out;
}

static char *run_dups(lp_binary *b, const dup_smp *pool, const uint32_t *pick,
                      const uint64_t *rep, const uint64_t *calls, size_t n,
                      bool memo, int pass, lp_unwind_stats *st)
{
    lp_unwind_opts o;
    lp_error e = {0};
    lp_unwinder *u;
    lp_addrmap *m = NULL;
    uint64_t *idw = NULL;
    size_t i, idw_cap = 0;
    bool deferred = pass >= 6;
    char *out;

    pass = deferred ? pass - 5 : pass;
    lp_unwind_opts_default(&o);
    o.repair_frames = pass != 1 && pass < 3;
    o.no_memo = !memo;
    if (pass == 2)
        o.max_pending_bytes = 16384;
    if (pass >= 3)
        assert_non_null(o.map = m = lp_addrmap_new(&b, 1, NULL, &e));
    assert_non_null(u = lp_unwind_new(&b, 1, &o, &e));
    for (i = 0; i < n; i++) {
        const dup_smp *d = &pool[pick[i]];
        lp_hybrid_sample h = {0};
        if (pass == 4 && (i == 0 || i == n / 2))
            map_fixture(m, i ? 1 : 0);
        if ((pass == 3 || pass == 5) && i % 1000 == 0)
            map_fixture(m, (uint32_t)(i / 1000) % 2);
        if (pass != 4 && i % 1000 == 0)
            assert_int_equal(lp_unwind_mmap(u, &restorer_map()[(i / 1000) % 2], &e), 0);
        h.stack = d->stack;
        h.nstack = d->ns;
        h.fp_walk = d->fp_walk;
        h.br = d->br;
        h.nbr = d->nb;
        h.repeat = rep[i];
        h.calls = calls ? calls[i] : 0;
        h.pid = m ? (uint32_t)(i % 2) : 0;
        h.dup_id = m ? 0 : pick[i] + 1;
        if (pass == 5 && i % 2)
            assert_int_equal(lp_stacks_id_of(h.stack, h.nstack, h.br, h.nbr, &idw,
                                              &idw_cap, &h.stacks_id), 0);
        else if (pass == 5 && i % 3 == 0)   /* the reader's look-ahead's */
            lp_unwind_ahead(u, h.pid, h.stack, h.nstack, h.br, h.nbr, &h.stacks_id);
        if (deferred) {
            lp_hybrid_sample bare = h;
            bare.stack = NULL;
            bare.br = NULL;
            if (lp_unwind_replay(u, &bare))
                continue;
        }
        assert_int_equal(lp_unwind_sample(u, &h, &e), 0);
    }
    out = finish_string(u, st);
    lp_addrmap_free(m);
    free(idw);
    return out;
}

static void test_dup_id_memo(void **state)
{
    static const uint64_t addrs[] = {
        0x401000, 0x401010, 0x401012, 0x401020, 0x401025, 0x401030, 0x401035,
        0x401040, 0x401050, 0x401054, 0x401060, 0x40107e, 0x401080, 0x401088,
        0x401095, 0x4010bf, 0x4010c0, 0x4010df, 0x4010e0, 0x401100, 0x401130,
        0x401135, 0x401150, 0x401155, 0x401180, 0x401185, 0x4011e0, 0x401210,
        EXT, EXT + 0x100, RESTORER, RESTORER + 7, 0};
    const size_t na = sizeof addrs / sizeof *addrs, npool = 200, n = 4000;
    dup_smp *pool = calloc(npool, sizeof *pool);
    uint32_t *pick = malloc(n * sizeof *pick);
    uint64_t *rep = malloc(n * sizeof *rep), seed = 777;
    uint64_t *frep = malloc(n * sizeof *frep), *calls = malloc(n * sizeof *calls);
    lp_unwind_stats with, without;
    lp_binary *b;
    size_t i, k;
    int pass;

    NEED_FIXTURE();
    assert_non_null(pool);
#define RND() (seed = seed * 6364136223846793005ull + 1442695040888963407ull, seed >> 33)
    for (i = 0; i < npool; i++) {
        pool[i].ns = 1 + RND() % 7;
        pool[i].nb = RND() % 12;
        for (k = 0; k < pool[i].ns; k++)
            pool[i].stack[k] = addrs[RND() % na];
        for (k = 0; k < pool[i].nb; k++)
            pool[i].br[k] = (lp_branch_entry){addrs[RND() % na], addrs[RND() % na], 0};
        pool[i].fp_walk = RND() & 1;
        if (i % 2) {            /* the same stack as the one before, other */
            pool[i].ns = pool[i - 1].ns; /* branches (targets only, 1 in 2) */
            memcpy(pool[i].stack, pool[i - 1].stack, sizeof pool[i].stack);
            pool[i].nb = pool[i - 1].nb;
            for (k = 0; i % 4 == 3 && k < pool[i].nb; k++)
                pool[i].br[k].from = pool[i - 1].br[k].from;
        }
    }
    for (i = 0; i < n; i++) {
        pick[i] = (uint32_t)(RND() % npool);
        rep[i] = 1 + RND() % 2;
        calls[i] = 1 + RND() % 3;       /* folded: standing for 1-3 samples */
        frep[i] = calls[i] + RND() % 3;
    }
#undef RND
    b = open_bin(fixture);
    /* passes 8-15: 0-7 with folded samples (lp_hybrid_sample.calls, the
     * readers' tails), replayed from the memo too: each statistic counts
     * as many input samples (sample_calls, leaf_external) or as much
     * weight as without it, whatever the sample it was recorded from */
    for (pass = 0; pass < 16; pass++) {
        bool folded = pass >= 8;
        char *a = run_dups(b, pool, pick, folded ? frep : rep, folded ? calls : NULL,
                           n, true, pass % 8, &with);
        char *c = run_dups(b, pool, pick, folded ? frep : rep, folded ? calls : NULL,
                           n, false, pass % 8, &without);
        expect(a, c);
        int base = pass % 8 >= 6 ? pass % 8 - 5 : pass % 8;
        assert_true(with.intakes_reused > (base % 2 ? n / 4 : n / 40));
        assert_int_equal(without.intakes_reused, 0);
        assert_true(with.sample_calls > (folded ? n : n - 1));
        with.intakes_reused = 0;
        assert_memory_equal(&with, &without, sizeof with);
        assert_true(with.aggregated > 0);
        free(a);
        free(c);
    }
    lp_binary_close(b);
    free(pool);
    free(pick);
    free(rep);
    free(frep);
    free(calls);
}

/* The memo starts small and grows (4 K slots, then 16 K, then 64 K): the
 * entries recorded before a growth are still there after it. 12,000
 * distinct dup_ids, each taken in once (two growths on the way), then
 * each again: every second intake is a replay, and the output is the one
 * without a memo. */
static char *run_twice(lp_binary *b, const dup_smp *pool, size_t npool, bool memo,
                       lp_unwind_stats *st)
{
    lp_unwind_opts o;
    lp_error e = {0};
    lp_unwinder *u;
    size_t i;

    lp_unwind_opts_default(&o);
    o.repair_frames = false;
    o.no_memo = !memo;
    assert_non_null(u = lp_unwind_new(&b, 1, &o, &e));
    for (i = 0; i < 2 * npool; i++) {
        const dup_smp *d = &pool[i % npool];
        lp_hybrid_sample h = {0};
        h.stack = d->stack;
        h.nstack = d->ns;
        h.fp_walk = d->fp_walk;
        h.br = d->br;
        h.nbr = d->nb;
        h.dup_id = i % npool + 1;
        assert_int_equal(lp_unwind_sample(u, &h, &e), 0);
    }
    return finish_string(u, st);
}

static void test_memo_grows(void **state)
{
    static const uint64_t addrs[] = {
        0x401000, 0x401010, 0x401020, 0x401030, 0x401040, 0x401050, 0x401060,
        0x401080, 0x4010c0, 0x4010e0, 0x401100, 0x401130, 0x401150, 0x401180,
        EXT, 0};
    const size_t na = sizeof addrs / sizeof *addrs, npool = 12000;
    dup_smp *pool = calloc(npool, sizeof *pool);
    uint64_t seed = 4242;
    lp_unwind_stats with, without;
    lp_binary *b;
    char *a, *c;
    size_t i, k;

    NEED_FIXTURE();
    assert_non_null(pool);
#define RND() (seed = seed * 6364136223846793005ull + 1442695040888963407ull, seed >> 33)
    for (i = 0; i < npool; i++) {
        pool[i].ns = 1 + RND() % 7;
        pool[i].nb = 1 + RND() % 11;
        for (k = 0; k < pool[i].ns; k++)
            pool[i].stack[k] = addrs[RND() % na];
        for (k = 0; k < pool[i].nb; k++)
            pool[i].br[k] = (lp_branch_entry){addrs[RND() % na], addrs[RND() % na], 0};
    }
#undef RND
    b = open_bin(fixture);
    a = run_twice(b, pool, npool, true, &with);
    c = run_twice(b, pool, npool, false, &without);
    expect(a, c);
    assert_int_equal(with.intakes_reused, npool);
    assert_int_equal(without.intakes_reused, 0);
    with.intakes_reused = 0;
    assert_memory_equal(&with, &without, sizeof with);
    free(a);
    free(c);
    lp_binary_close(b);
    free(pool);
}

/* ---- aggregation and batches ------------------------------------------------------ */

/* Identical samples are stored once; unwinding in batches (a tiny budget
 * flushes after every new sample) changes nothing in the output. */
static void test_batches_same_output(void **state)
{
    smp v[6];
    lp_binary *b;
    lp_unwind_opts o;
    lp_error e = {0};
    lp_unwinder *u;
    lp_ctxcount *cc;
    lp_branch_entry br[8];
    char *one, *many;
    size_t i, k, ns;
    int pass;

    NEED_FIXTURE();
    v[0] = t001_1;
    v[1] = s003_6;
    v[2] = t001_1;
    v[3] = s003_6;
    v[4] = t001_1;
    v[5] = t001_1;
    v[5].repeat = 3;
    one = run(v, 6, REPAIR, NULL);
    for (pass = 0; pass < 1; pass++) {
        b = open_bin(fixture);
        lp_unwind_opts_default(&o);
        o.max_pending_bytes = 1;
        assert_non_null(u = lp_unwind_new(&b, 1, &o, &e));
        for (i = 0; i < 6; i++) {
            lp_hybrid_sample h = {0};
            for (ns = 0; ns < 8 && v[i].stack[ns]; ns++)
                ;
            for (k = 0; k < 8 && v[i].br[k][0]; k++)
                br[k] = (lp_branch_entry){v[i].br[k][0], v[i].br[k][1], 0};
            h.stack = v[i].stack, h.nstack = ns, h.br = br, h.nbr = k;
            h.repeat = v[i].repeat;
            assert_int_equal(lp_unwind_sample(u, &h, &e), 0);
        }
        assert_non_null(cc = lp_unwind_finish(u, &e));
        assert_int_equal(lp_unwind_stats_get(u)->distinct, 6);
        many = raw_string(cc, 0);
        expect(many, one);
        free(many);
        lp_ctxcount_free(cc);
        lp_unwind_free(u);
        lp_binary_close(b);
    }
    free(one);
    /* without a budget: two distinct samples, repeats summed */
    {
        lp_unwind_stats st;
        free(run(v, 6, REPAIR, &st));
        assert_int_equal(st.distinct, 2);
        assert_int_equal(st.aggregated, 8);
    }
}

/* ---- exact pieces of llvm-profgen ------------------------------------------------------ */

static size_t ctx_of(const char *s, lp_ctx_frame *f)
{
    size_t n = 0;

    for (; *s; s++, n++) {
        f[n].func = *s == 'a' ? "a" : *s == 'b' ? "b" : *s == 'c' ? "c" : "m";
        f[n].loc.line = 1;
        f[n].loc.disc = 0;
    }
    return n;
}

static void check_compress(const char *in, int k, const char *want)
{
    lp_ctx_frame f[32];
    char got[33];
    size_t n = ctx_of(in, f), i;

    n = lp_ctx_compress_recursion(f, n, k);
    for (i = 0; i < n; i++)
        got[i] = f[i].func[0];
    got[n] = 0;
    if (strcmp(got, want))
        fail_msg("compress(%s, %d) = %s, expected %s", in, k, got, want);
}

static void test_compress_recursion(void **state)
{
    lp_ctx_frame f[8];
    size_t n;

    (void)state;
    check_compress("maaa", -1, "ma");
    check_compress("mababab", -1, "mab");
    check_compress("mababab", 1, "mababab");
    check_compress("mababab", 0, "mababab");
    check_compress("mabcabc", -1, "mabc");
    check_compress("mabcabc", 2, "mabcabc");
    check_compress("aabbaabb", -1, "ab");
    check_compress("abab", -1, "ab");
    /* recursion-compression-noprobe: main foo fa fb fa fb -> main foo fa fb */
    check_compress("mcabab", -1, "mcab");
    n = ctx_of("mabc", f);
    assert_int_equal(lp_ctx_trim(f, n, 2), 2);
    assert_string_equal(f[0].func, "b");
    assert_int_equal(lp_ctx_trim(f, 2, -1), 2);
    assert_int_equal(lp_ctx_trim(f, 2, 0), 0);
}

/* std::unordered_map<uint64_t, ...> iteration order (libstdc++), which
 * decides llvm-profgen 19's trie walk: against g++ itself, for every size
 * of the first table (13 buckets: uw_umap_order's shortcut) and sizes that
 * cross the first four rehashes. */
static void test_unordered_map_order(void **state)
{
    char src[160], exe[160], cmd[512], line[64];
    uint64_t keys[200];
    int32_t order[200];
    size_t n, i;
    FILE *f;

    (void)state;
    if (!have_tool("g++"))
        skip();
    snprintf(src, sizeof src, "%s/um.cc", dir);
    snprintf(exe, sizeof exe, "%s/um", dir);
    f = fopen(src, "w");
    assert_non_null(f);
    fputs("#include <unordered_map>\n#include <cstdio>\n#include <cstdlib>\n"
          "#include <cstdint>\n"
          "int main(int c, char **v) { std::unordered_map<uint64_t, int> m;\n"
          "  for (int i = 2; i < c; i++) m.emplace(strtoull(v[i], 0, 16), i - 2);\n"
          "  for (auto &p : m) printf(\"%d\\n\", p.second); }\n", f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "g++ -O1 -o %s %s", exe, src);
    assert_int_equal(system(cmd), 0);
    for (n = 1; n <= 130; n += n < 14 ? 1 : 16) {
        char *args = malloc(n * 20 + 64), *p;
        p = args + sprintf(args, "%s x", exe);
        for (i = 0; i < n; i++) {
            /* code addresses: clustered, with bucket collisions */
            keys[i] = 0x401000 + (i * 37 % 97) * 13 + (i % 5) * 0x1000;
            p += sprintf(p, " %" PRIx64, keys[i]);
        }
        assert_int_equal(uw_umap_order(keys, n, order), 0);
        f = popen(args, "r");
        assert_non_null(f);
        for (i = 0; i < n && fgets(line, sizeof line, f); i++)
            if (atoi(line) != order[i])
                fail_msg("n=%zu: position %zu is key %d, emulated %d", n, i,
                         atoi(line), order[i]);
        assert_int_equal(i, n);
        pclose(f);
        free(args);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_map_narrow),
        cmocka_unit_test(test_t001_0_call_sites),
        cmocka_unit_test(test_t001_1_sequential_callbacks),
        cmocka_unit_test(test_t001_2_callback_returns),
        cmocka_unit_test(test_t001_3_sample_in_external),
        cmocka_unit_test(test_t001_4a_unpaired_external),
        cmocka_unit_test(test_t001_4a_no_inference_into_address_taken),
        cmocka_unit_test(test_t001_4b_return_to_no_call),
        cmocka_unit_test(test_t001_4c_prolog_leaf),
        cmocka_unit_test(test_t001_5_depth_and_recursion),
        cmocka_unit_test(test_leaf_states),
        cmocka_unit_test(test_003_6_entry_from_lbr),
        cmocka_unit_test(test_003_5_already_right),
        cmocka_unit_test(test_003_recursive_entry),
        cmocka_unit_test(test_003_exit_balanced),
        cmocka_unit_test(test_003_unprovable_dropped),
        cmocka_unit_test(test_003_text_chain_caller),
        cmocka_unit_test(test_003_7_cet_mov),
        cmocka_unit_test(test_warm_next_same),
        cmocka_unit_test(test_parallel_flush_same),
        cmocka_unit_test(test_first_leaf_in_unwinding_order),
        cmocka_unit_test(test_repair_noinline_cs),
        cmocka_unit_test(test_signal_handler_sampled),
        cmocka_unit_test(test_signal_in_frameless),
        cmocka_unit_test(test_sigreturn),
        cmocka_unit_test(test_longjmp),
        cmocka_unit_test(test_user_stack),
        cmocka_unit_test(test_random_samples),
        cmocka_unit_test(test_dup_id_memo),
        cmocka_unit_test(test_memo_grows),
        cmocka_unit_test(test_batches_same_output),
        cmocka_unit_test(test_compress_recursion),
        cmocka_unit_test(test_unordered_map_order),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
