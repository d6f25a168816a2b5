/*
 * test_accuracy.c - unit tests for src/accuracy: the truth reader, the
 * ideal CS profile of hand-made truth files on llvm-profgen's own test
 * binaries (expected: the reference's Examples C and D, where
 * llvm-profgen's unwinding is right), the comparison numbers and the
 * llvm-profdata overlap measure on hand-made profiles (computed by hand).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lbr2prof/accuracy.h"

#define IN "tests/data/llvm-profgen-inputs/"

/* ---- helpers --------------------------------------------------------------- */

static char *write_tmp(const char *text)
{
    char *path = strdup("/tmp/lbr2prof-acc-XXXXXX");
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");

    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static lp_profile *profile_of(const char *text)
{
    FILE *f = fmemopen((void *)text, strlen(text), "r");
    lp_error err = {0};
    lp_profile *p = lp_profile_read_text(f, "mem", &err);

    fclose(f);
    assert_non_null(p);
    return p;
}

static char *text_of(const lp_profile *p)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    lp_write_opts wo = {.format = LP_PROF_TEXT};
    lp_error err = {0};

    assert_int_equal(lp_profile_write(f, p, &wo, &err), 0);
    fclose(f);
    return buf;
}

/* The truth of one sample: LBR entries "0xFROM/0xTO/NODE ...", most recent
 * first, and a stack node table. */
static char *truth_json(const char *path, const char *lbr, unsigned node,
                        const char *nodes)
{
    char *out, *p, *q, from[32], to[32];
    size_t cap = 8192, o = 0;
    unsigned n;
    int first = 1, used;

    out = malloc(cap);
    o += (size_t)sprintf(out, "{\"format\": \"lbr2prof-truth\", \"version\": 2,"
                         " \"samples\": [{\"time\": 5, \"tid\": 7, \"pid\": 7, "
                         "\"period\": 1, \"stack\": [], \"fp_chain\": [], "
                         "\"node\": %u, \"lbr\": [", node);
    q = strdup(lbr);
    for (p = strtok(q, " "); p; p = strtok(NULL, " ")) {
        assert_int_equal(sscanf(p, "%31[^/]/%31[^/]/%u%n", from, to, &n, &used), 3);
        o += (size_t)sprintf(out + o, "%s[\"%s\", \"%s\", %u]", first ? "" : ", ",
                             from, to, n);
        first = 0;
    }
    free(q);
    sprintf(out + o, "]}], \"mappings\": [{\"time\": 0, \"pid\": 7, \"start\": "
            "\"0x400000\", \"end\": \"0x401000\", \"pgoff\": \"0x0\", \"path\": "
            "\"/home/%s\"}], \"stack_nodes\": [%s]}", path, nodes);
    return out;
}

/* Ideal CS profile text of a truth (JSON text) for binary IN/bin. */
static char *ideal_of(const char *json, const char *bin, lp_ideal_stats *st)
{
    char *path = write_tmp(json), *txt;
    lp_error err = {0};
    lp_truth *t = lp_truth_read(path, &err);
    lp_binary *b;
    lp_ideal id;
    lp_profile *p = NULL;

    if (!t)
        fail_msg("%s", err.msg);
    b = lp_binary_open(bin, NULL, &err);
    assert_non_null(b);
    if (lp_ideal_build(t, b, &id, &err) ||
        !(p = lp_ideal_profile(b, &id, true, &err)))
        fail_msg("%s", err.msg);
    if (st)
        *st = id.st;
    txt = text_of(p);
    lp_profile_free(p);
    lp_ideal_free(&id);
    lp_binary_close(b);
    lp_truth_free(t);
    unlink(path);
    free(path);
    return txt;
}

/* ---- the truth reader ------------------------------------------------------- */

static void expect_bad(const char *json, const char *msg_part)
{
    char *path = write_tmp(json);
    lp_error err = {0};

    assert_null(lp_truth_read(path, &err));
    if (!strstr(err.msg, msg_part))
        fail_msg("message '%s' lacks '%s'", err.msg, msg_part);
    assert_non_null(strstr(err.msg, path));
    unlink(path);
    free(path);
}

static void test_truth_reader(void **state)
{
    char *json = truth_json("x", "0x400010/0x400020/2 0x400008/0x400000/1", 2,
                            "[1, 0, \"0x7f0000001000\"], [2, 1, \"0x400105\"]");
    char *path = write_tmp(json);
    lp_error err = {0};
    lp_truth *t;
    (void)state;

    t = lp_truth_read(path, &err);
    assert_non_null(t);
    assert_int_equal(t->nsamples, 1);
    assert_int_equal(t->samples[0].nlbr, 2);
    assert_int_equal(t->samples[0].lbr[0].from, 0x400010);
    assert_int_equal(t->samples[0].lbr[1].node, 1);
    assert_int_equal(t->samples[0].node, 2);
    assert_int_equal(t->nnodes, 3);
    assert_int_equal(t->node_parent[2], 1);
    assert_int_equal(t->node_ret[2], 0x400105);
    assert_int_equal(t->nmaps, 1);
    assert_string_equal(t->maps[0].path, "/home/x");
    lp_truth_free(t);
    unlink(path);
    free(path);
    free(json);

    expect_bad("{\"format\": \"lbr2prof-truth\", \"version\": 1, \"samples\": []}",
               "version 1 has no LBR stacks");
    expect_bad("{\"format\": \"other\"}", "not an lbr2prof truth file");
    expect_bad("{\"format\": \"lbr2prof-truth\", \"version\": 2, \"samples\": [],"
               " \"mappings\": [], \"stack_nodes\": [[2, 3, \"0x1\"]]}",
               "stack_nodes[0]: parent must be");
    json = truth_json("x", "0x400010/0x400020/9", 0, "");
    expect_bad(json, "samples[0]: lbr entry names a stack node");
    free(json);
    expect_bad("{\"format\": \"lbr2prof-truth\", \"version\": 2, \"samples\": [{\"time\"",
               ":1:");
}

/* ---- the ideal profile --------------------------------------------------------- */

/* A pseudo-probe ideal (noinline-tailcall-probe: main calls go, go's jmp
 * goes to foo): address contexts through the probe generator, completed
 * with go's frame from the run's branch_counts; the machine's contexts
 * lack it; without branch_counts the ideal cannot know it either. */
static void test_ideal_probes(void **state)
{
    static const char lbr[] = "0x40061b/0x4005f0/2 0x4005e1/0x4005fe/2 "
                              "0x400645/0x4005d0/2 0x400660/0x400640/1";
    static const char nodes[] = "[1, 0, \"0x7f0000001000\"], [2, 1, \"0x400665\"]";
    char *json = truth_json("noinline-tailcall-probe.perfbin", lbr, 2, nodes), *path;
    size_t n = strlen(json);
    lp_error err = {0};
    lp_probes *pr;
    lp_binary *b;
    lp_truth *t;
    lp_ideal id;
    lp_profile *p, *m;
    char *txt, *mt;
    (void)state;

    /* the run's calls and tail calls */
    json = realloc(json, n + 200);
    snprintf(json + n - 1, 200, ", \"branch_counts\": [[\"0x400660\", \"0x400640\", 4000],"
             " [\"0x400645\", \"0x4005d0\", 4000]]}");
    path = write_tmp(json);
    assert_non_null(t = lp_truth_read(path, &err));
    assert_int_equal(t->nedges, 2);
    assert_int_equal(t->edges[1].from, 0x400645);
    assert_int_equal(t->edges[1].count, 4000);
    assert_non_null(b = lp_binary_open(IN "noinline-tailcall-probe.perfbin", NULL, &err));
    assert_non_null(pr = lp_probes_open(IN "noinline-tailcall-probe.perfbin", &err));
    assert_int_equal(lp_ideal_build_probes(t, b, pr, &id, &err), 0);
    assert_non_null(p = lp_ideal_profile(b, &id, true, &err));
    assert_non_null(m = lp_ideal_profile_machine(b, &id, &err));
    txt = text_of(p);
    mt = text_of(m);
    assert_non_null(strstr(txt, "[main:5 @ go:2 @ foo]:"));
    assert_non_null(strstr(txt, "[main:5 @ go]:"));
    assert_null(strstr(txt, "[main:5 @ foo]:"));
    assert_non_null(strstr(txt, "!CFGChecksum"));
    assert_non_null(strstr(mt, "[main:5 @ foo]:"));
    free(txt);
    free(mt);
    lp_profile_free(p);
    lp_profile_free(m);
    lp_ideal_free(&id);
    t->nedges = 0;                      /* no branch_counts: not known */
    assert_int_equal(lp_ideal_build_probes(t, b, pr, &id, &err), 0);
    assert_non_null(p = lp_ideal_profile(b, &id, true, &err));
    txt = text_of(p);
    assert_non_null(strstr(txt, "[main:5 @ foo]:"));
    free(txt);
    lp_profile_free(p);
    lp_ideal_free(&id);
    lp_probes_free(pr);
    lp_binary_close(b);
    lp_truth_free(t);
    unlink(path);
    free(path);
    free(json);
}


/* Example C of the reference (noinline-cs-noprobe): the first sample of
 * the perf script, whose frame-pointer stack is right, so llvm-profgen's
 * profile is the ideal one. Stack nodes: 1 = main's return into libc,
 * 2 = foo's into main (0x400684), 3 = bar's into foo (0x400634); each LBR
 * entry carries the stack at its source. */
static void test_ideal_example_c(void **state)
{
    char *json = truth_json(
        "noinline-cs-noprobe.perfbin",
        "0x4005c8/0x4005dc/3 0x40062f/0x4005b0/2 0x400645/0x4005ff/2 "
        "0x400637/0x400645/2 0x4005e9/0x400634/3 0x4005d7/0x4005e5/3 "
        "0x40062f/0x4005b0/2 0x400645/0x4005ff/2 0x400637/0x400645/2 "
        "0x4005e9/0x400634/3 0x4005d7/0x4005e5/3 0x40062f/0x4005b0/2 "
        "0x400645/0x4005ff/2 0x400637/0x400645/2 0x4005e9/0x400634/3 "
        "0x4005c8/0x4005dc/3", 3,
        "[1, 0, \"0x7f68c5788793\"], [2, 1, \"0x400684\"], [3, 2, \"0x400634\"]");
    lp_ideal_stats st;
    char *txt = ideal_of(json, IN "noinline-cs-noprobe.perfbin", &st);
    (void)state;

    assert_string_equal(txt,
                        "[main:1 @ foo]:54:0\n 2: 3\n 3: 3 bar:3\n"
                        "[main:1 @ foo:3 @ bar]:50:3\n 0: 3\n 1: 3\n 2: 2\n 4: 1\n 5: 3\n"
                        "[main]:3:0\n 1: 3 foo:3\n");
    assert_int_equal(st.samples, 1);
    assert_int_equal(st.ranges, 15);
    assert_int_equal(st.ranges_counted, 15);
    assert_int_equal(st.branches_counted, 16);
    free(txt);
    free(json);
}

/* Part of the same sample with a truth saying that bar runs under a frame
 * outside the binary (node 3): bar's context is cut there. */
static void test_ideal_cut_at_external(void **state)
{
    char *json = truth_json(
        "noinline-cs-noprobe.perfbin",
        "0x4005c8/0x4005dc/4 0x40062f/0x4005b0/2 0x400645/0x4005ff/2 "
        "0x400637/0x400645/2 0x4005e9/0x400634/4", 4,
        "[1, 0, \"0x7f68c5788793\"], [2, 1, \"0x400684\"], "
        "[3, 2, \"0x7f0000000100\"], [4, 3, \"0x400634\"]");
    char *txt = ideal_of(json, IN "noinline-cs-noprobe.perfbin", NULL);
    (void)state;

    /* ranges 2..4 are in foo (node 2); range 1 is in bar under node 4,
     * whose stack has an external frame: [foo:3 @ bar], without head
     * samples, so its call count is inferred into [foo]; the call branch
     * from foo (node 2) still gives [main:1 @ foo:3 @ bar] its head */
    assert_string_equal(txt, "[main:1 @ foo]:18:0\n 2: 1\n 3: 1 bar:1\n"
                             "[foo:3 @ bar]:10:0\n 0: 1\n 1: 1\n"
                             "[foo]:1:0\n 3: 1 bar:1\n"
                             "[main]:1:0\n 1: 1 foo:1\n"
                             "[main:1 @ foo:3 @ bar]:0:1\n");
    free(txt);
    free(json);
}

/* Example D (inline-cs-noprobe): ranges split by inline context; bar is
 * inlined into foo, foo into main. */
static void test_ideal_example_d(void **state)
{
    char lbr[2048] = "";
    char *json, *txt;
    int i;
    (void)state;

    for (i = 0; i < 16; i++)
        strcat(lbr, i == 12 ? "0x40069b/0x400670/1 " : "0x4006c8/0x40067e/1 ");
    json = truth_json("inline-cs-noprobe.perfbin", lbr, 1,
                      "[1, 0, \"0x7f68c5788793\"]");
    txt = ideal_of(json, IN "inline-cs-noprobe.perfbin", NULL);
    assert_string_equal(txt,
                        "[main:1 @ foo]:309:0\n 2.1: 14\n 3: 15\n 3.1: 14 bar:14\n"
                        " 3.2: 1\n 65526: 14\n !Attributes: 1\n"
                        "[main:1 @ foo:3.1 @ bar]:84:0\n 1: 14\n !Attributes: 1\n"
                        "[main]:14:0\n 1: 14 foo:14\n");
    free(txt);
    free(json);
}

/* Ranges with an end outside the binary, or after an asynchronous entry
 * (lbr_cut), are not attributed. */
static void test_ideal_skips(void **state)
{
    const char *json =
        "{\"format\": \"lbr2prof-truth\", \"version\": 2, \"samples\": [{"
        "\"time\": 5, \"tid\": 7, \"pid\": 7, \"node\": 3, \"lbr\": ["
        "[\"0x4005c8\", \"0x4005dc\", 3], [\"0x40062f\", \"0x4005b0\", 2], "
        "[\"0x7f0000000010\", \"0x4005ff\", 2], [\"0x400637\", \"0x7f0000000000\", 2]], "
        "\"lbr_cut\": [0]}], \"mappings\": [{\"time\": 0, \"pid\": 7, \"start\": "
        "\"0x400000\", \"end\": \"0x401000\", \"pgoff\": \"0x0\", \"path\": "
        "\"noinline-cs-noprobe.perfbin\"}], \"stack_nodes\": "
        "[[1, 0, \"0x7f68c5788793\"], [2, 1, \"0x400684\"], [3, 2, \"0x400634\"]]}";
    lp_ideal_stats st;
    char *txt = ideal_of(json, IN "noinline-cs-noprobe.perfbin", &st);
    (void)state;

    assert_int_equal(st.ranges, 3);
    assert_int_equal(st.ranges_cut, 1);      /* 4005b0..4005c8: cut */
    assert_int_equal(st.ranges_counted, 1);  /* 4005ff..40062f */
    assert_int_equal(st.ranges_external, 1); /* ext..7f...010 */
    assert_int_equal(st.branches_counted, 3);
    /* the branch from outside into foo's body is no call: no head sample */
    /* one run of 5ff..62f: 15 instructions */
    assert_string_equal(txt, "[main:1 @ foo]:15:0\n 2: 1\n 3: 1 bar:1\n"
                             "[main]:1:0\n 1: 1 foo:1\n[main:1 @ foo:3 @ bar]:0:1\n");
    free(txt);
}

/* ---- comparison and overlap ------------------------------------------------------ */

static const char ideal_txt[] =
    "[main]:30:0\n 1: 10\n 2: 20\n"
    "[main:2 @ foo]:10:5\n 1: 10\n";
static const char prof_txt[] =
    "[main]:25:0\n 1: 10\n 2: 15\n"
    "[foo]:10:5\n 1: 10\n";

/* Truncated is a proper suffix at a frame boundary; anything else only
 * the profile has is wrong. */
static void test_truncated_or_wrong(void **state)
{
    lp_profile *i = profile_of("[main:2 @ foo:1 @ bar]:10:0\n 1: 10\n");
    lp_profile *p = profile_of("[foo:1 @ bar]:4:0\n 1: 4\n"
                               "[bar]:3:0\n 1: 3\n"
                               "[oo:1 @ bar]:2:0\n 1: 2\n"
                               "[main:2 @ bar]:1:0\n 1: 1\n");
    lp_accuracy a;
    lp_error err = {0};
    size_t k;
    (void)state;

    assert_int_equal(lp_accuracy_compare(i, p, &a, &err), 0);
    assert_int_equal(a.missing, 1);
    assert_int_equal(a.truncated, 2);
    assert_int_equal(a.truncated_counts, 7);
    assert_int_equal(a.wrong, 2);
    assert_int_equal(a.wrong_counts, 3);
    assert_int_equal(a.matched, 0);
    for (k = 0; k < a.nctx; k++)
        if (!strcmp(a.ctx[k].key, "oo:1 @ bar"))
            assert_int_equal(a.ctx[k].status, LP_CTX_WRONG);
    lp_accuracy_free(&a);
    lp_profile_free(i);
    lp_profile_free(p);
}

static void test_compare_numbers(void **state)
{
    lp_profile *i = profile_of(ideal_txt), *p = profile_of(prof_txt);
    lp_accuracy a;
    lp_error err = {0};
    double fs;
    (void)state;

    assert_int_equal(lp_accuracy_compare(i, p, &a, &err), 0);
    assert_true(a.cs);
    assert_int_equal(a.ideal, 40);
    assert_int_equal(a.actual, 35);
    assert_int_equal(a.matched, 25);    /* [main] 10 + 15 */
    assert_int_equal(a.matched_fn, 35); /* foo's 10 too, in another context */
    assert_int_equal(a.right, 1);
    assert_int_equal(a.missing, 1);
    /* [foo] is [main:2 @ foo] with its caller cut off */
    assert_int_equal(a.truncated, 1);
    assert_int_equal(a.truncated_counts, 10);
    assert_int_equal(a.wrong, 0);
    assert_int_equal(a.wrong_counts, 0);
    /* [main]: Diff = |10/30 - 10/25| + |20/30 - 15/25| = 2/15, FIS = 14/15,
     * FS = FIS * (1 - |30/40 - 25/35|) = 0.9, weight (30/40 + 25/35) / 2 */
    fs = 14.0 / 15 * (1 - fabs(30.0 / 40 - 25.0 / 35));
    assert_true(fabs(fs - 0.9) < 1e-12);
    assert_true(fabs(a.similarity - fs * (30.0 / 80 + 25.0 / 70)) < 1e-12);
    /* context-less: main {10, 20} vs {10, 15}, foo {10} vs {10} */
    assert_true(fabs(a.similarity_fn -
                     (14.0 / 15 * (1 - fabs(30.0 / 40 - 25.0 / 35)) *
                          (30.0 / 80 + 25.0 / 70) +
                      1.0 * (1 - fabs(10.0 / 40 - 10.0 / 35)) *
                          (10.0 / 80 + 10.0 / 70))) < 1e-12);
    assert_int_equal(a.nctx, 3);
    assert_string_equal(a.ctx[0].key, "main");
    assert_int_equal(a.ctx[0].matched, 25);
    assert_int_equal(a.ctx[1].status, LP_CTX_MISSING);
    assert_string_equal(a.ctx[1].key, "main:2 @ foo");
    assert_int_equal(a.ctx[2].status, LP_CTX_TRUNCATED);
    assert_int_equal(a.nfn, 2);
    assert_string_equal(a.fn[0].name, "main");
    assert_string_equal(a.fn[1].name, "foo");
    assert_int_equal(a.fn[1].matched, 0);
    assert_int_equal(a.fn[1].matched_fn, 10);
    lp_accuracy_free(&a);

    assert_int_equal(lp_accuracy_compare(i, i, &a, &err), 0);
    assert_int_equal(a.matched, 40);
    assert_true(a.similarity == 1.0);
    lp_accuracy_free(&a);
    lp_profile_free(i);
    lp_profile_free(p);
}

/* Flat profiles with inlinees: units are matched through call sites. */
static void test_overlap_inlinees(void **state)
{
    lp_profile *b = profile_of("f:100:0\n 1: 6\n 2: foo:50\n  1: 4\n");
    lp_profile *t = profile_of("f:100:0\n 1: 6\n 2: foo:50\n  1: 2\n 3: bar:9\n  1: 2\n");
    lp_overlap o;
    lp_accuracy a;
    lp_error err = {0};
    double diff, fis, w;
    (void)state;

    assert_int_equal(lp_overlap_sample(b, t, &o, &err), 0);
    assert_int_equal(o.base_sample, 10);
    assert_int_equal(o.test_sample, 10);
    assert_int_equal(o.overlap_sample, 8);  /* 6 + 2 + 0 */
    assert_int_equal(o.union_sample, 12);   /* 6 + 4 + 2 */
    diff = fabs(6.0 / 10 - 6.0 / 10) + fabs(4.0 / 10 - 2.0 / 10) + 2.0 / 10;
    fis = (2 - diff) / 2;
    w = 1 - fabs(10.0 / 10 - 10.0 / 10);
    assert_true(fabs(o.similarity - fis * w * 1.0) < 1e-12);
    assert_int_equal(lp_accuracy_compare(b, t, &a, &err), 0);
    assert_false(a.cs);
    assert_int_equal(a.matched, 8);
    assert_int_equal(a.right, 1);
    lp_accuracy_free(&a);
    lp_profile_free(b);
    lp_profile_free(t);
}

static void test_collapse(void **state)
{
    lp_profile *p = profile_of("[a:1 @ c]:5:2\n 1: 3 d:3\n[b:2 @ c]:4:1\n 1: 1\n 2: 4\n");
    lp_profile *c;
    lp_error err = {0};
    char *txt;
    (void)state;

    c = lp_profile_collapse_contexts(p, &err);
    assert_non_null(c);
    txt = text_of(c);
    assert_string_equal(txt, "c:9:3\n 1: 4 d:3\n 2: 4\n");
    free(txt);
    lp_profile_free(c);
    lp_profile_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_truth_reader),
        cmocka_unit_test(test_ideal_probes),
        cmocka_unit_test(test_ideal_example_c),
        cmocka_unit_test(test_ideal_cut_at_external),
        cmocka_unit_test(test_ideal_example_d),
        cmocka_unit_test(test_ideal_skips),
        cmocka_unit_test(test_compare_numbers),
        cmocka_unit_test(test_truncated_or_wrong),
        cmocka_unit_test(test_overlap_inlinees),
        cmocka_unit_test(test_collapse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
