/*
 * test_tailcall.c - unit tests for src/tailcall (missing tail-call frames):
 * hand-built graphs (one path, two paths, a direct call beside a path,
 * mutual tail recursion, a self tail call, the depth limit, llvm-profgen's
 * history-dependent cache against the strict search), and the real
 * noinline-tailcall-probe binary of llvm-profgen's tests, whose LBR shows
 * main -> go -(tail)-> foo: the frames llvm-profgen 22 infers there
 * ([main:5 @ go:2 @ foo]) and what it leaves alone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/profgen.h"
#include "lbr2prof/tailcall.h"

#define IN "tests/data/llvm-profgen-inputs/"

/* Functions of hand-built graphs: no ranges, ordered by name. */
static lp_function F[8] = {{"A"}, {"B"}, {"C"}, {"D"}, {"E"}, {"O"}, {"X"},
                           {"Z"}};
#define A (&F[0])
#define B (&F[1])
#define C (&F[2])
#define D (&F[3])
#define E (&F[4])
#define O (&F[5])
#define X (&F[6])

static lp_tailcall *mk(lp_tailcall_mode mode, uint32_t depth)
{
    lp_tailcall_opts o;
    lp_tailcall *tc;

    lp_tailcall_opts_default(&o);
    o.mode = mode;
    o.max_depth = depth;
    assert_non_null(tc = lp_tailcall_new(NULL, &o, NULL));
    return tc;
}

static void call(lp_tailcall *tc, uint64_t site, const lp_function *f)
{
    assert_int_equal(lp_tailcall_add_call(tc, site, f, NULL), 0);
}

static void tail(lp_tailcall *tc, uint64_t site, const lp_function *from,
                 const lp_function *to)
{
    assert_int_equal(lp_tailcall_add_tail(tc, site, from, to, NULL), 0);
}

/* Ask, check the answer and, for a unique one, the path (0-terminated). */
static void expect(lp_tailcall *tc, uint64_t site, const lp_function *to,
                   lp_tailcall_answer want, const uint64_t *want_path)
{
    const uint64_t *p;
    size_t n, k = 0;
    lp_tailcall_answer a = lp_tailcall_find_fn(tc, site, to, &p, &n);

    if (a != want)
        fail_msg("site 0x%llx -> %s: %s, expected %s",
                 (unsigned long long)site, to ? to->name : "NULL",
                 lp_tailcall_answer_name(a), lp_tailcall_answer_name(want));
    while (want_path && want_path[k])
        k++;
    assert_int_equal(n, k);
    for (size_t i = 0; i < k; i++)
        assert_int_equal(p[i], want_path[i]);
}

#define MODES for (int m = LP_TC_LLVM; m <= LP_TC_STRICT; m++)

/* S(0x100) calls A; A tail-calls B at 0x10, B tail-calls C at 0x20. */
static void test_unique_chain(void **state)
{
    (void)state;
    MODES {
        lp_tailcall *tc = mk(m, LP_TC_DEFAULT_MAX_DEPTH);
        call(tc, 0x100, A);
        tail(tc, 0x10, A, B);
        tail(tc, 0x20, B, C);
        expect(tc, 0x100, C, LP_TC_UNIQUE, (uint64_t[]){0x10, 0x20, 0});
        expect(tc, 0x100, B, LP_TC_UNIQUE, (uint64_t[]){0x10, 0});
        expect(tc, 0x100, A, LP_TC_DIRECT, NULL);
        expect(tc, 0x100, D, LP_TC_NONE, NULL);     /* not in the graph */
        expect(tc, 0x200, C, LP_TC_UNKNOWN, NULL);  /* no such call site */
        expect(tc, 0x10, C, LP_TC_UNKNOWN, NULL);   /* a tail-call site */
        expect(tc, 0x100, NULL, LP_TC_UNKNOWN, NULL);
        lp_tailcall_stats s;
        lp_tailcall_stats_get(tc, &s);
        assert_int_equal(s.call_sites, 1);
        assert_int_equal(s.tail_sites, 2);
        assert_int_equal(s.tail_funcs, 2);
        assert_int_equal(s.queries[LP_TC_UNIQUE], 2);
        assert_int_equal(s.queries[LP_TC_UNKNOWN], 3);
        assert_int_equal(s.longest_path, 2);
        lp_tailcall_free(tc);
    }
}

/* Two ways to one callee: a diamond, two sites, two targets of an
 * indirect call. */
static void test_two_paths(void **state)
{
    (void)state;
    MODES {
        lp_tailcall *tc = mk(m, LP_TC_DEFAULT_MAX_DEPTH);
        call(tc, 0x100, A);
        tail(tc, 0x10, A, B);
        tail(tc, 0x11, A, C);
        tail(tc, 0x20, B, D);
        tail(tc, 0x30, C, D);
        expect(tc, 0x100, D, LP_TC_AMBIGUOUS, NULL);
        expect(tc, 0x100, B, LP_TC_UNIQUE, (uint64_t[]){0x10, 0});
        call(tc, 0x200, B);         /* from B alone D is one path */
        expect(tc, 0x200, D, LP_TC_UNIQUE, (uint64_t[]){0x20, 0});
        tail(tc, 0x21, B, D);       /* a second site of B to D */
        expect(tc, 0x200, D, LP_TC_AMBIGUOUS, NULL);
        call(tc, 0x300, B);         /* an indirect call to B and C */
        call(tc, 0x300, C);
        tail(tc, 0x31, C, X);
        tail(tc, 0x22, B, X);
        expect(tc, 0x300, X, LP_TC_AMBIGUOUS, NULL);
        lp_tailcall_free(tc);
    }
}

/* A call that reaches the callee directly and through a tail call: llvm-
 * profgen takes the direct call; the strict search sees two ways. */
static void test_direct_beside_path(void **state)
{
    lp_tailcall *tc;

    (void)state;
    MODES {
        tc = mk(m, LP_TC_DEFAULT_MAX_DEPTH);
        call(tc, 0x100, A);
        call(tc, 0x100, C);
        tail(tc, 0x10, A, C);
        expect(tc, 0x100, C, m == LP_TC_LLVM ? LP_TC_DIRECT : LP_TC_AMBIGUOUS,
               NULL);
        expect(tc, 0x100, A, LP_TC_DIRECT, NULL);
        lp_tailcall_free(tc);
    }
}

/* main calls E; E and O tail-call each other (is_even / is_odd), O also
 * tail-calls X; A tail-calls itself (from its cold part). Cycles are cut:
 * each function once on a path. */
static void test_mutual_recursion(void **state)
{
    (void)state;
    MODES {
        lp_tailcall *tc = mk(m, LP_TC_DEFAULT_MAX_DEPTH);
        call(tc, 0x100, E);
        tail(tc, 0x40, E, O);
        tail(tc, 0x50, O, E);
        tail(tc, 0x51, O, X);
        expect(tc, 0x100, O, LP_TC_UNIQUE, (uint64_t[]){0x40, 0});
        expect(tc, 0x100, E, LP_TC_DIRECT, NULL);
        expect(tc, 0x100, X, LP_TC_UNIQUE, (uint64_t[]){0x40, 0x51, 0});
        expect(tc, 0x100, D, LP_TC_NONE, NULL);
        call(tc, 0x200, A);
        tail(tc, 0x60, A, A);
        tail(tc, 0x61, A, B);
        expect(tc, 0x200, B, LP_TC_UNIQUE, (uint64_t[]){0x61, 0});
        expect(tc, 0x200, A, LP_TC_DIRECT, NULL);
        /* a second way into the cycle: E also reached through A */
        tail(tc, 0x62, A, E);
        call(tc, 0x300, A);
        expect(tc, 0x300, X, LP_TC_UNIQUE, (uint64_t[]){0x62, 0x40, 0x51, 0});
        tail(tc, 0x63, A, O);       /* now A -> O -> X and A -> E -> O -> X */
        expect(tc, 0x300, X, LP_TC_AMBIGUOUS, NULL);
        lp_tailcall_free(tc);
    }
}

/* llvm-profgen caches what a cut cycle made of a search: A -> B -> A and
 * A -> D, with S1 calling A and S2 calling B. Asked about S1 first, (B, D)
 * is cached as no path while A was on the stack, and S2 then finds none;
 * asked about S2 first, it finds B -> A -> D. The strict search answers
 * the graph either way. Adding an edge drops the caches. */
static void test_llvm_cache_history(void **state)
{
    static const uint64_t s2_path[] = {0x30, 0x20, 0};
    lp_tailcall *tc;

    (void)state;
    MODES {
        for (int first_s1 = 0; first_s1 <= 1; first_s1++) {
            tc = mk(m, LP_TC_DEFAULT_MAX_DEPTH);
            call(tc, 0x100, A);
            call(tc, 0x200, B);
            tail(tc, 0x10, A, B);
            tail(tc, 0x20, A, D);
            tail(tc, 0x30, B, A);
            if (first_s1)
                expect(tc, 0x100, D, LP_TC_UNIQUE, (uint64_t[]){0x20, 0});
            if (first_s1 && m == LP_TC_LLVM)
                expect(tc, 0x200, D, LP_TC_NONE, NULL);
            else
                expect(tc, 0x200, D, LP_TC_UNIQUE, s2_path);
            expect(tc, 0x100, D, LP_TC_UNIQUE, (uint64_t[]){0x20, 0});
            call(tc, 0x300, C);     /* any new edge: caches dropped */
            expect(tc, 0x200, D, LP_TC_UNIQUE, s2_path);
            lp_tailcall_free(tc);
        }
    }
}

/* S calls A; A -> B -> C -> D by tail calls; S2 calls B. */
static lp_tailcall *chain(int mode, uint32_t depth)
{
    lp_tailcall *tc = mk(mode, depth);

    call(tc, 0x100, A);
    call(tc, 0x200, B);
    tail(tc, 0x10, A, B);
    tail(tc, 0x20, B, C);
    tail(tc, 0x30, C, D);
    return tc;
}

static void test_depth_limit(void **state)
{
    lp_tailcall *tc;

    (void)state;
    MODES {
        lp_tailcall_answer cut = m == LP_TC_LLVM ? LP_TC_NONE : LP_TC_TOO_DEEP;
        tc = chain(m, 0);
        expect(tc, 0x100, A, LP_TC_DIRECT, NULL);
        expect(tc, 0x100, B, cut, NULL);
        lp_tailcall_free(tc);
        tc = chain(m, 1);
        expect(tc, 0x100, B, LP_TC_UNIQUE, (uint64_t[]){0x10, 0});
        expect(tc, 0x100, C, cut, NULL);
        expect(tc, 0x200, C, LP_TC_UNIQUE, (uint64_t[]){0x20, 0});
        lp_tailcall_free(tc);
        tc = chain(m, 3);
        expect(tc, 0x100, D, LP_TC_UNIQUE, (uint64_t[]){0x10, 0x20, 0x30, 0});
        lp_tailcall_free(tc);
        /* llvm-profgen caches a search the limit cut: with depth 2, (S, D)
         * caches B -> D as no path (reached one level deep), and S2, for
         * which two levels would do, then finds none. */
        tc = chain(m, 2);
        expect(tc, 0x100, D, cut, NULL);
        if (m == LP_TC_LLVM)
            expect(tc, 0x200, D, LP_TC_NONE, NULL);
        else
            expect(tc, 0x200, D, LP_TC_UNIQUE, (uint64_t[]){0x20, 0x30, 0});
        lp_tailcall_free(tc);
        tc = chain(m, 2);
        expect(tc, 0x200, D, LP_TC_UNIQUE, (uint64_t[]){0x20, 0x30, 0});
        lp_tailcall_free(tc);
    }
}

static void test_misuse(void **state)
{
    lp_tailcall *tc = mk(LP_TC_LLVM, 5);
    lp_error err = {0};

    (void)state;
    tail(tc, 0x10, A, B);
    assert_int_equal(lp_tailcall_add_call(tc, 0x10, C, &err), -1);
    assert_non_null(strstr(err.msg, "0x10"));
    assert_int_equal(lp_tailcall_add_branch(tc, 1, 2, &err), -1);
    assert_non_null(strstr(err.msg, "no binary"));
    assert_int_equal(lp_tailcall_find(tc, 0x10, 0x20, NULL, NULL),
                     LP_TC_UNKNOWN);
    assert_string_equal(lp_tailcall_answer_name(LP_TC_TOO_DEEP), "too-deep");
    lp_tailcall_free(tc);
}

/* ---- the real binary ------------------------------------------------------ */

/* noinline-tailcall-probe.perfbin: main calls go at 0x400660; go tail-calls
 * foo at 0x400645 (`jmp foo`); foo calls bar at 0x400621 and jumps within
 * itself at 0x4005e1. */
#define MAIN_CALL_GO 0x400660
#define GO_JMP_FOO 0x400645
#define FOO_CALL_BAR 0x400621
#define FOO_BODY 0x4005fe
#define GO_ENTRY 0x400640
#define BAR_BODY 0x4005c0

static lp_tailcall *from_trace(lp_profgen_result *r, int mode, uint32_t depth)
{
    static const char *bins[] = {IN "noinline-tailcall-probe.perfbin"};
    lp_profgen_opts o;
    lp_tailcall_opts to;
    lp_error err = {0};
    lp_tailcall *tc;

    lp_profgen_opts_default(&o);
    o.perfscript = IN "noinline-tailcall-probe.perfscript";
    o.binaries = bins;
    o.nbinaries = 1;
    o.use_dwarf_correlation = true;
    o.skip_symbolization = true;
    o.no_repair_frames = true;
    if (lp_profgen_run(&o, r, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(r->kind, LP_PROFGEN_RAW_CS);
    lp_tailcall_opts_default(&to);
    to.mode = mode;
    to.max_depth = depth;
    assert_non_null(tc = lp_tailcall_new(r->bins[0], &to, &err));
    if (lp_tailcall_add_ctxcount(tc, r->raw_cs, 0, &err))
        fail_msg("%s", err.msg);
    return tc;
}

static void test_probe_binary(void **state)
{
    lp_profgen_result r;
    const uint64_t *p;
    size_t n;

    (void)state;
    MODES {
        lp_tailcall *tc = from_trace(&r, m, LP_TC_DEFAULT_MAX_DEPTH);
        assert_int_equal(lp_tailcall_find(tc, MAIN_CALL_GO, FOO_BODY, &p, &n),
                         LP_TC_UNIQUE);
        assert_int_equal(n, 1);
        assert_int_equal(p[0], GO_JMP_FOO);
        assert_int_equal(lp_tailcall_find(tc, MAIN_CALL_GO, GO_ENTRY, NULL,
                                          NULL), LP_TC_DIRECT);
        assert_int_equal(lp_tailcall_find(tc, FOO_CALL_BAR, BAR_BODY, NULL,
                                          NULL), LP_TC_DIRECT);
        /* main is reached by no tail call */
        assert_int_equal(lp_tailcall_find(tc, FOO_CALL_BAR, 0x400665, NULL,
                                          NULL), LP_TC_NONE);
        /* a jump inside foo and a tail call are no call sites */
        assert_int_equal(lp_tailcall_find(tc, 0x4005e1, FOO_BODY, NULL, NULL),
                         LP_TC_UNKNOWN);
        assert_int_equal(lp_tailcall_find(tc, GO_JMP_FOO, FOO_BODY, NULL,
                                          NULL), LP_TC_UNKNOWN);
        assert_int_equal(lp_tailcall_find(tc, MAIN_CALL_GO, LP_EXTERNAL_ADDR,
                                          NULL, NULL), LP_TC_UNKNOWN);
        lp_tailcall_stats s;
        lp_tailcall_stats_get(tc, &s);
        assert_int_equal(s.tail_sites, 1);      /* only go's jmp */
        assert_int_equal(s.tail_funcs, 1);
        assert_int_equal(s.call_sites, 2);      /* main -> go, foo -> bar */
        lp_tailcall_free(tc);
        lp_profgen_result_free(&r);
    }
}

/* llvm-profgen's context [main:5 @ foo:8 @ bar] (main's call of go, foo's
 * call of bar, the leaf in bar) becomes [main:5 @ go:2 @ foo:8 @ bar];
 * with --max-search-depth=0 nothing is inserted. */
static void test_probe_context(void **state)
{
    static const uint64_t ctx[] = {MAIN_CALL_GO, FOO_CALL_BAR, BAR_BODY};
    static const uint64_t want[] = {MAIN_CALL_GO, GO_JMP_FOO, FOO_CALL_BAR,
                                    BAR_BODY};
    lp_profgen_result r;
    uint64_t *out = NULL;
    size_t cap = 0;
    long n;

    (void)state;
    lp_tailcall *tc = from_trace(&r, LP_TC_LLVM, LP_TC_DEFAULT_MAX_DEPTH);
    n = lp_tailcall_infer_context(tc, ctx, 3, &out, &cap);
    assert_int_equal(n, 4);
    assert_memory_equal(out, want, sizeof want);
    n = lp_tailcall_infer_context(tc, ctx, 1, &out, &cap);
    assert_int_equal(n, 1);
    assert_int_equal(out[0], MAIN_CALL_GO);
    lp_tailcall_free(tc);
    lp_profgen_result_free(&r);

    tc = from_trace(&r, LP_TC_LLVM, 0);
    n = lp_tailcall_infer_context(tc, ctx, 3, &out, &cap);
    assert_int_equal(n, 3);
    assert_memory_equal(out, ctx, sizeof ctx);
    lp_tailcall_free(tc);
    lp_profgen_result_free(&r);
    free(out);
}

/* The classification of single branches. */
static void test_add_branch(void **state)
{
    lp_binary *b;
    lp_error err = {0};
    lp_tailcall *tc;
    const uint64_t *p;
    size_t n;

    (void)state;
    assert_non_null(b = lp_binary_open(IN "noinline-tailcall-probe.perfbin",
                                       NULL, &err));
    assert_non_null(tc = lp_tailcall_new(b, NULL, &err));
    assert_int_equal(lp_tailcall_add_branch(tc, MAIN_CALL_GO, GO_ENTRY, &err),
                     0);
    /* the LBR has not shown go's jump yet: no path */
    assert_int_equal(lp_tailcall_find(tc, MAIN_CALL_GO, FOO_BODY, &p, &n),
                     LP_TC_NONE);
    assert_int_equal(lp_tailcall_add_branch(tc, GO_JMP_FOO, 0x4005d0, &err),
                     0);
    assert_int_equal(lp_tailcall_find(tc, MAIN_CALL_GO, FOO_BODY, &p, &n),
                     LP_TC_UNIQUE);
    assert_int_equal(p[0], GO_JMP_FOO);
    /* foo's jump to its own code, a return, a non-instruction: ignored */
    assert_int_equal(lp_tailcall_add_branch(tc, 0x4005e1, FOO_BODY, &err), 0);
    assert_int_equal(lp_tailcall_add_branch(tc, 0x40063f, 0x400665, &err), 0);
    assert_int_equal(lp_tailcall_add_branch(tc, 0x400661, GO_ENTRY, &err), 0);
    lp_tailcall_stats s;
    lp_tailcall_find(tc, MAIN_CALL_GO, GO_ENTRY, NULL, NULL);
    lp_tailcall_stats_get(tc, &s);
    assert_int_equal(s.call_sites, 1);
    assert_int_equal(s.tail_sites, 1);
    lp_tailcall_free(tc);
    lp_binary_close(b);
}

/* The graph walked backwards and forwards, as the frame repair's
 * inference walks it (src/unwind/infer.c): the call sites that reach a
 * function, the functions that tail-call it and that it tail-calls, and
 * reachability through a cycle of tail calls. */
static void test_walks(void **state)
{
    lp_tailcall *tc = mk(LP_TC_LLVM, LP_TC_DEFAULT_MAX_DEPTH);
    const lp_function *const *fs;
    const uint64_t *sites;
    (void)state;

    call(tc, 0x100, A);         /* O's call to A */
    call(tc, 0x200, A);         /* X's call to A */
    call(tc, 0x300, C);
    tail(tc, 0x10, A, B);       /* A -> B -> A: mutual tail recursion */
    tail(tc, 0x20, B, A);
    tail(tc, 0x30, B, D);
    assert_int_equal(lp_tailcall_call_sites(tc, A, &sites), 2);
    assert_true((sites[0] == 0x100 && sites[1] == 0x200) ||
                (sites[0] == 0x200 && sites[1] == 0x100));
    assert_int_equal(lp_tailcall_call_sites(tc, B, &sites), 0);
    assert_int_equal(lp_tailcall_tail_callers(tc, A, &fs), 1);
    assert_ptr_equal(fs[0], B);
    assert_int_equal(lp_tailcall_tail_callees(tc, B, &fs), 2);
    assert_int_equal(lp_tailcall_tail_callers(tc, C, &fs), 0);
    assert_int_equal(lp_tailcall_reaches(tc, A, D), 1);
    assert_int_equal(lp_tailcall_reaches(tc, B, B), 1);
    assert_int_equal(lp_tailcall_reaches(tc, C, B), 0);
    assert_int_equal(lp_tailcall_reaches(tc, D, A), 0);
    lp_tailcall_free(tc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_walks),
        cmocka_unit_test(test_unique_chain),
        cmocka_unit_test(test_two_paths),
        cmocka_unit_test(test_direct_beside_path),
        cmocka_unit_test(test_mutual_recursion),
        cmocka_unit_test(test_llvm_cache_history),
        cmocka_unit_test(test_depth_limit),
        cmocka_unit_test(test_misuse),
        cmocka_unit_test(test_probe_binary),
        cmocka_unit_test(test_probe_context),
        cmocka_unit_test(test_add_branch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
