/*
 * test_aggregate.c - unit tests for src/flat on llvm-profgen's noprobe
 * test binary: LBR aggregation (ranges, branches, external addresses,
 * bogus ranges and their warnings, mmap base, hybrid samples with a
 * prolog leaf), the unsymbolized profile format, profile generation
 * (Example A of the llvm-profgen reference) and the disjoint ranges.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/flat.h"

#define BIN "tests/data/llvm-profgen-inputs/noprobe.perfbin"

typedef struct warns {
    char buf[4096];
} warns;

static void collect(void *ctx, const char *msg)
{
    warns *w = ctx;

    strncat(w->buf, msg, sizeof w->buf - strlen(w->buf) - 2);
    strcat(w->buf, "\n");
}

static lp_binary *open_bin(void)
{
    lp_error e = {0};
    lp_binary *b = lp_binary_open(BIN, NULL, &e);

    if (!b)
        fail_msg("%s", e.msg);
    return b;
}

static char *raw_string(const lp_counters *c, uint64_t base)
{
    char *buf = NULL;
    size_t len;
    lp_error e = {0};
    FILE *f = open_memstream(&buf, &len);

    assert_int_equal(lp_rawprof_write(f, c, base, &e), 0);
    fclose(f);
    return buf;
}

/* the first five entries of the first sample of noprobe.perfscript */
static const lp_branch_entry sample1[] = {
    {0x40062f, 0x4005b0, 0}, {0x400645, 0x4005ff, 0}, {0x400637, 0x400645, 0},
    {0x4005e9, 0x400634, 0}, {0x4005d7, 0x4005e5, 0},
};

static void test_ranges_and_branches(void **state)
{
    lp_binary *b = open_bin();
    warns w = {{0}};
    lp_lbr_agg_opts o = {collect, &w, false, -1};
    lp_error e = {0};
    lp_lbr_agg *a = lp_lbr_agg_new(b, &o, &e);
    lp_counters *c;
    char *s;
    (void)state;

    assert_int_equal(lp_lbr_agg_sample(a, sample1, 5, 2, &e), 0);
    c = lp_lbr_agg_finish(a, &e);
    assert_non_null(c);
    s = raw_string(c, 0x400000);
    /* N entries give N-1 ranges; the leading IP is not used */
    assert_string_equal(s, "4\n5e5-5e9:2\n5ff-62f:2\n634-637:2\n645-645:2\n"
                           "5\n5d7->5e5:2\n5e9->634:2\n62f->5b0:2\n637->645:2\n"
                           "645->5ff:2\n");
    free(s);
    assert_non_null(strstr(w.buf, "No relevant mmap event is matched for "
                                  "noprobe.perfbin, will use preferred address "
                                  "(0x400000)"));
    assert_null(strstr(w.buf, "of samples are from ranges"));
    lp_lbr_agg_free(a);
    lp_binary_close(b);
}

static void test_external_and_bogus(void **state)
{
    static const lp_branch_entry br[] = {
        {0x7f0000001000, 0x4005b0, 0}, /* external source: head sample only */
        {0x7f0000002000, 0x7f0000003000, 0}, /* external -> external: dropped */
        {0x4005d7, 0x400645, 0},       /* range [645, ext]: none */
        {0x400645, 0x4005ff, 0},       /* range [5ff, 5d7]: start after end */
        {0x40062f, 0x4005ff, 0},       /* [5ff, 645] crosses the call at 62f */
    };
    lp_binary *b = open_bin();
    warns w = {{0}};
    lp_lbr_agg_opts o = {collect, &w, true, -1};
    lp_error e = {0};
    lp_lbr_agg *a = lp_lbr_agg_new(b, &o, &e);
    lp_counters *c;
    char *s;
    (void)state;

    assert_int_equal(lp_lbr_agg_sample(a, br, 5, 1, &e), 0);
    c = lp_lbr_agg_finish(a, &e);
    s = raw_string(c, 0x400000);
    assert_string_equal(s, "0\n4\nffffffffffc00001->5b0:1\n5d7->645:1\n"
                           "62f->5ff:1\n645->5ff:1\n");
    free(s);
    /* [645,1], [5ff,5d7], [5ff,645] were seen: two of three are bogus, one
     * ends outside the code */
    assert_non_null(strstr(w.buf, "66.67%(2/3) of samples are from ranges that "
                                  "have range start after or too far from range "
                                  "end acrossing the unconditinal jmp."));
    assert_non_null(strstr(w.buf, "[  4005ff,  4005d7]: Range start is after"));
    assert_non_null(strstr(w.buf, "33.33%(1/3) of samples are from ranges that "
                                  "are not on instruction boundary."));
    lp_lbr_agg_free(a);
    lp_binary_close(b);
}

static void test_mmap_moves_base(void **state)
{
    lp_binary *b = open_bin();
    lp_lbr_agg_opts o = {NULL, NULL, false, -1};
    lp_error e = {0};
    lp_lbr_agg *a = lp_lbr_agg_new(b, &o, &e);
    lp_mmap_event m = {0};
    lp_branch_entry br[5];
    char *s;
    size_t i;
    (void)state;

    m.pid = 7;
    m.start = 0x10000000;
    m.len = 0x1000;
    m.filename = "/somewhere/else/noprobe.perfbin";
    assert_int_equal(lp_lbr_agg_mmap(a, &m, &e), 0);
    assert_true(lp_lbr_agg_loaded_by_mmap(a));
    for (i = 0; i < 5; i++) {
        br[i].from = sample1[i].from - 0x400000 + 0x10000000;
        br[i].to = sample1[i].to - 0x400000 + 0x10000000;
    }
    assert_int_equal(lp_lbr_agg_sample(a, br, 5, 1, &e), 0);
    s = raw_string(lp_lbr_agg_finish(a, &e), 0x400000);
    assert_non_null(strstr(s, "4\n5e5-5e9:1\n"));
    free(s);
    /* another file name is ignored; a foreign offset is fatal */
    m.filename = "/bin/true";
    assert_int_equal(lp_lbr_agg_mmap(a, &m, &e), 0);
    m.filename = "noprobe.perfbin";
    m.start = 0x20000000;
    m.pgoff = 0x5000;
    assert_int_equal(lp_lbr_agg_mmap(a, &m, &e), -1);
    assert_int_equal(e.code, LP_EFORMAT);
    lp_lbr_agg_free(a);
    lp_binary_close(b);
}

/* Identical samples wait and are counted once; an mmap counts the waiting
 * ones with the base they were taken under first; identical addresses in
 * two processes of a caller's per-process map are not merged. */
static void test_waiting_samples(void **state)
{
    lp_binary *b = open_bin();
    lp_lbr_agg_opts o = {NULL, NULL, false, -1};
    lp_error e = {0};
    lp_lbr_agg *a = lp_lbr_agg_new(b, &o, &e);
    lp_addrmap *map = lp_addrmap_new(&b, 1, NULL, &e);
    lp_mmap_event m = {0};
    lp_event ev;
    char *s;
    (void)state;

    /* own single-base map: 2 samples at the preferred base, then the
     * binary moves away, then the same raw addresses are external */
    assert_int_equal(lp_lbr_agg_sample(a, sample1, 5, 1, &e), 0);
    assert_int_equal(lp_lbr_agg_sample(a, sample1, 5, 1, &e), 0);
    m.pid = 7;
    m.start = 0x10000000;
    m.len = 0x1000;
    m.filename = "noprobe.perfbin";
    assert_int_equal(lp_lbr_agg_mmap(a, &m, &e), 0);
    assert_int_equal(lp_lbr_agg_sample(a, sample1, 5, 1, &e), 0);
    s = raw_string(lp_lbr_agg_finish(a, &e), 0x400000);
    assert_non_null(strstr(s, "4\n5e5-5e9:2\n"));
    assert_true(lp_lbr_agg_nr_samples(a) == 2);
    free(s);
    lp_lbr_agg_free(a);

    /* per-process map: pid 1 has the binary at its link address, pid 2
     * does not: only pid 1's samples count */
    o.map = map;
    a = lp_lbr_agg_new(b, &o, &e);
    memset(&ev, 0, sizeof ev);
    ev.kind = LP_EV_MMAP;
    ev.misc = LP_CPUMODE_USER;
    ev.u.mmap.pid = 1;
    ev.u.mmap.start = 0x400000;
    ev.u.mmap.len = 0x1000;
    ev.u.mmap.filename = "noprobe.perfbin";
    assert_int_equal(lp_addrmap_event(map, &ev, &e), 0);
    lp_lbr_agg_set_pid(a, 2);
    assert_int_equal(lp_lbr_agg_sample(a, sample1, 5, 4, &e), 0);
    lp_lbr_agg_set_pid(a, 1);
    assert_int_equal(lp_lbr_agg_sample(a, sample1, 5, 3, &e), 0);
    s = raw_string(lp_lbr_agg_finish(a, &e), 0x400000);
    assert_non_null(strstr(s, "4\n5e5-5e9:3\n"));
    free(s);
    lp_lbr_agg_free(a);
    lp_addrmap_free(map);
    lp_binary_close(b);
}

/* Waiting samples are found again after flushes that emptied a large
 * table (3000 entries of external-only samples, which count nothing), and
 * a caller's id (lp_lbr_agg_set_id) is what identifies a sample. */
static void test_waiting_across_flushes(void **state)
{
    lp_binary *b = open_bin();
    lp_lbr_agg_opts o = {NULL, NULL, false, -1};
    lp_error e = {0};
    lp_lbr_agg *a = lp_lbr_agg_new(b, &o, &e);
    lp_branch_entry ext;
    uint64_t i;
    char *s;
    (void)state;

    for (i = 0; i < 3000; i++) {
        ext = (lp_branch_entry){0x100 + i, 0x200 + i, 0};
        assert_int_equal(lp_lbr_agg_sample(a, &ext, 1, 1, &e), 0);
    }
    assert_int_equal(lp_lbr_agg_flush(a, &e), 0);
    for (i = 0; i < 3; i++) {
        assert_int_equal(lp_lbr_agg_sample(a, sample1, 5, 1, &e), 0);
        assert_int_equal(lp_lbr_agg_sample(a, sample1, 5, 1, &e), 0);
        assert_int_equal(lp_lbr_agg_flush(a, &e), 0);
    }
    s = raw_string(lp_lbr_agg_finish(a, &e), 0x400000);
    assert_non_null(strstr(s, "4\n5e5-5e9:6\n"));
    assert_true(lp_lbr_agg_nr_samples(a) == 6);
    free(s);
    lp_lbr_agg_free(a);

    /* two samples given the same id are one: the second's branches are
     * never read */
    a = lp_lbr_agg_new(b, &o, &e);
    lp_lbr_agg_set_id(a, (lp_stacks_id){42, 43});
    assert_int_equal(lp_lbr_agg_sample(a, sample1, 5, 1, &e), 0);
    lp_lbr_agg_set_id(a, (lp_stacks_id){42, 43});
    assert_int_equal(lp_lbr_agg_sample(a, sample1 + 2, 3, 2, &e), 0);
    s = raw_string(lp_lbr_agg_finish(a, &e), 0x400000);
    assert_string_equal(s, "4\n5e5-5e9:3\n5ff-62f:3\n634-637:3\n645-645:3\n"
                           "5\n5d7->5e5:3\n5e9->634:3\n62f->5b0:3\n637->645:3\n"
                           "645->5ff:3\n");
    free(s);
    lp_lbr_agg_free(a);
    lp_binary_close(b);
}

static void test_stack_sample_prolog_leaf(void **state)
{
    /* leaf at bar's entry (prolog): dropped; leaf inside bar: kept */
    static const uint64_t in_prolog[] = {LP_CONTEXT_USER, 0x4005b0, 0x400684};
    static const uint64_t inside[] = {0x4005dc, 0x400634};
    lp_binary *b = open_bin();
    lp_lbr_agg_opts o = {NULL, NULL, false, -1};
    lp_error e = {0};
    lp_lbr_agg *a = lp_lbr_agg_new(b, &o, &e);
    char *s;
    (void)state;

    assert_int_equal(lp_lbr_agg_stack_sample(a, in_prolog, 3, sample1, 5, 1, &e), 0);
    assert_int_equal(lp_lbr_agg_flush(a, &e), 0);
    assert_true(lp_lbr_agg_nr_samples(a) == 0);
    assert_int_equal(lp_lbr_agg_stack_sample(a, inside, 2, sample1, 5, 3, &e), 0);
    assert_int_equal(lp_lbr_agg_stack_sample(a, inside, 2, sample1, 5, 2, &e), 0);
    s = raw_string(lp_lbr_agg_finish(a, &e), 0x400000);
    assert_true(lp_lbr_agg_nr_samples(a) == 5);
    assert_non_null(strstr(s, "4\n5e5-5e9:5\n"));
    free(s);
    lp_lbr_agg_free(a);
    lp_binary_close(b);
}

static const char example_a_raw[] =
    "7\n5b0-5c8:7\n5b0-5d7:13\n5dc-5e9:6\n5e5-5e9:12\n5ff-62f:19\n634-637:18\n"
    "645-645:18\n6\n5c8->5dc:7\n5d7->5e5:13\n5e9->634:18\n62f->5b0:21\n"
    "637->645:18\n645->5ff:19\n";

static lp_counters *read_raw(const char *text)
{
    lp_counters *c = lp_counters_new();
    FILE *f = fmemopen((void *)text, strlen(text), "r");
    lp_error e = {0};

    assert_int_equal(lp_rawprof_read(f, "mem", 0x400000, c, &e), 0);
    fclose(f);
    return c;
}

static void test_rawprof_round_trip_and_errors(void **state)
{
    static const char *bad[] = {"1\n", "1\n5b0-5c8\n0\n", "1\n5b0:5c8:1\n0\n",
                                "0\n1\n5c8-5dc:7\n", "x\n", "[main]\n 0\n 0\n"};
    lp_counters *c = read_raw(example_a_raw);
    char *s = raw_string(c, 0x400000);
    size_t i;
    (void)state;

    assert_string_equal(s, example_a_raw);
    free(s);
    lp_counters_free(c);
    for (i = 0; i < sizeof bad / sizeof *bad; i++) {
        lp_counters *d = lp_counters_new();
        FILE *f = fmemopen((void *)bad[i], strlen(bad[i]), "r");
        lp_error e = {0};

        assert_int_equal(lp_rawprof_read(f, "bad.raw", 0, d, &e), -1);
        assert_non_null(strstr(e.msg, "bad.raw"));
        fclose(f);
        lp_counters_free(d);
    }
}

static void test_generate_example_a(void **state)
{
    lp_binary *b = open_bin();
    lp_counters *c = read_raw(example_a_raw);
    lp_profile *p = lp_profile_new();
    lp_flat_opts o;
    lp_write_opts wo = {LP_PROF_TEXT, 0, 0, NULL, 0};
    lp_error e = {0};
    char *buf = NULL;
    size_t len;
    FILE *f;
    (void)state;

    lp_flat_opts_default(&o);
    assert_int_equal(lp_flat_generate(b, c, &o, p, &e), 0);
    assert_int_equal(lp_flat_postprocess(p, &o, &e), 0);
    f = open_memstream(&buf, &len);
    assert_int_equal(lp_profile_write(f, p, &wo, &e), 0);
    fclose(f);
    assert_string_equal(buf, "foo:1241:0\n 0: 0\n 1: 0\n 2: 19\n 3: 21 bar:21\n"
                             " 4: 0\n 5: 0\nbar:926:21\n 0: 20\n 1: 20\n 2: 13\n"
                             " 4: 6\n 5: 18\n");
    free(buf);
    lp_profile_free(p);

    /* --update-total-samples: totals become sums of body counts */
    p = lp_profile_new();
    o.update_total_samples = true;
    assert_int_equal(lp_flat_generate(b, c, &o, p, &e), 0);
    assert_true(lp_profile_find(p, "foo")->total == 40);
    assert_true(lp_profile_find(p, "bar")->total == 77);
    lp_profile_free(p);
    lp_counters_free(c);
    lp_binary_close(b);
}

/* filterAmbiguousProfile and the density warning in one pass (two
 * halves on two threads from 8192 entries): the ambiguous entries and
 * inlinees go, in either half, and the density is that of what is left
 * (entries of one body record each: density = count; the one at the 99%
 * cutoff decides). */
static void filter_density_of(int n)
{
    lp_profile *p = lp_profile_new();
    lp_fsamples *fs;
    lp_flat_opts o;
    lp_error e = {0};
    warns w = {{0}};
    char key[32];
    int i;

    for (i = 0; i < n; i++) {
        snprintf(key, sizeof key, i % 10 == 3 ? "__tls_init.%d" : "f%d", i);
        assert_non_null(fs = lp_profile_get(p, key, NULL));
        /* the ambiguous ones would make the density 1 */
        lp_body_add(lp_fs_body(fs, (lp_loc){1, 0}), i % 10 == 3 ? 1 : 2);
        fs->total = 2;
        if (i == 5 || i == n - 5)
            lp_body_add(lp_fs_body(lp_fs_callee(fs, (lp_loc){2, 0},
                                                "__cxx_global_var_init.1"),
                                   (lp_loc){1, 0}), 5);
    }
    lp_flat_opts_default(&o);
    o.warn = collect;
    o.warn_ctx = &w;
    assert_int_equal(lp_flat_filter_density(p, &o, &e), 0);
    assert_int_equal(p->nr_funcs, n - n / 10);
    assert_null(lp_profile_find(p, "__tls_init.13"));
    snprintf(key, sizeof key, "__tls_init.%d", n - 7);
    assert_null(lp_profile_find(p, key));
    for (i = 5; i < n; i += n - 10) {
        snprintf(key, sizeof key, "f%d", i);
        assert_null(lp_fs_find_callee(lp_profile_find(p, key), (lp_loc){2, 0},
                                      "__cxx_global_var_init.1"));
    }
    assert_non_null(strstr(w.buf, "with 25.0x more samples"));
    lp_profile_free(p);
}

static void test_filter_density(void **state)
{
    (void)state;
    filter_density_of(40);
    filter_density_of(20000);
}

typedef struct dens {
    double d;
    uint64_t s;
} dens;

static int dens_desc(const void *a, const void *b)
{
    double x = ((const dens *)a)->d, y = ((const dens *)b)->d;

    return x > y ? -1 : x < y;
}

/* calculateDensity's loop on every density sorted (the test's own) */
static double density_brute(dens *v, size_t n, uint64_t total, uint32_t cutoff)
{
    uint64_t acc = 0;
    double r = 0;
    size_t i;

    qsort(v, n, sizeof *v, dens_desc);
    for (i = 0; i < n && acc < total * ((float)cutoff) / 1000000; i++) {
        acc += v[i].s;
        r = v[i].d;
    }
    return r;
}

/* The density (--show-density's line) of many profiles of distinct
 * densities and some equal ones, at several cutoffs: the one found by
 * sorting every density. */
static void test_density_cutoffs(void **state)
{
    static const uint32_t cut[] = {990000, 500000, 1000000, 1, 999999};
    enum { N = 20000 };
    lp_profile *p = lp_profile_new();
    dens *v = malloc(N * sizeof *v);
    uint64_t total = 0, x = 88172645463325252ull, c;
    lp_fsamples *fs;
    lp_flat_opts o;
    lp_error e = {0};
    char key[32], want[128], *got = NULL;
    size_t len, k;
    uint32_t j, nr;
    FILE *f;
    int i;
    (void)state;

    for (i = 0; i < N; i++) {
        snprintf(key, sizeof key, "f%d", i);
        assert_non_null(fs = lp_profile_get(p, key, NULL));
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        nr = 1 + (uint32_t)(x % 7);
        c = i % 50 ? x % 100000 : 7;            /* some equal densities */
        for (j = 0; j < nr; j++)
            lp_body_add(lp_fs_body(fs, (lp_loc){j, 0}), c);
        v[i] = (dens){(double)(c * nr) / nr, c * nr};
        total += c * nr;
    }
    for (k = 0; k < sizeof cut / sizeof *cut; k++) {
        dens *w = malloc(N * sizeof *w);

        memcpy(w, v, N * sizeof *w);
        snprintf(want, sizeof want, "Functions with density >= %.1f account "
                 "for %.2f%% total sample counts.\n",
                 density_brute(w, N, total, cut[k]), (double)cut[k] / 10000);
        free(w);
        lp_flat_opts_default(&o);
        o.density_cutoff_hot = cut[k];
        o.show_density = true;
        o.info = f = open_memstream(&got, &len);
        assert_int_equal(lp_flat_density(p, &o, &e), 0);
        fclose(f);
        assert_string_equal(got, want);
        free(got);
        got = NULL;
    }
    free(v);
    lp_profile_free(p);
}

/* The flat probe profile of noinline-cs-pseudoprobe's LBR (llvm-profgen-22
 * --ignore-stack-samples, to the byte): bodies by probe id with zero
 * records for the probes of touched functions, bar's head from its entry
 * probe, the call target at foo's call probe 8, checksums. */
static void test_generate_probes(void **state)
{
    static const char raw[] = "3\n760-77f:15\n79e-7bf:15\n7c4-7cf:15\n"
                              "3\n77f->7c4:17\n7bf->760:15\n7cf->79e:16\n";
    const char *bin = "tests/data/llvm-profgen-inputs/noinline-cs-pseudoprobe.perfbin";
    lp_binary *b = lp_binary_open(bin, NULL, NULL);
    lp_probes *pr = lp_probes_open(bin, NULL);
    lp_counters *c = lp_counters_new();
    lp_profile *p = lp_profile_new();
    lp_write_opts wo = {LP_PROF_TEXT, 0, 0, NULL, 0};
    FILE *f = fmemopen((void *)raw, sizeof raw - 1, "r");
    lp_error e = {0};
    lp_flat_opts o;
    char *buf = NULL;
    size_t len;
    (void)state;

    assert_non_null(b);
    assert_non_null(pr);
    assert_int_equal(lp_rawprof_read(f, "raw", 0x201000, c, &e), 0);
    fclose(f);
    lp_flat_opts_default(&o);
    o.cold_count = 0;
    assert_int_equal(lp_flat_generate_probes(b, pr, c, &o, p, &e), 0);
    assert_int_equal(lp_flat_postprocess(p, &o, &e), 0);
    assert_true(p->is_probe_based);
    f = open_memstream(&buf, &len);
    assert_int_equal(lp_profile_write(f, p, &wo, &e), 0);
    fclose(f);
    assert_string_equal(buf, "foo:75:0\n 1: 0\n 2: 15\n 3: 15\n 4: 15\n 5: 0\n"
                             " 6: 15\n 7: 0\n 8: 15 bar:15\n 9: 0\n"
                             " !CFGChecksum: 563088904013236\n"
                             "bar:30:15\n 1: 15\n 4: 15\n"
                             " !CFGChecksum: 72617220756\n");
    free(buf);
    lp_profile_free(p);
    lp_counters_free(c);
    lp_probes_free(pr);
    lp_binary_close(b);
}

/* A table of counters through every size (the linear scan of a few
 * pairs, the indexed table after): each pair counted once however often
 * it comes, in insertion order until a view sorts it, the sorted copy and
 * the view equal, and the merge of two tables the sum of both. */
static void check_table(const lp_counters *c, uint64_t npairs, uint64_t scale)
{
    const lp_addr_pair_count *v;
    lp_addr_pair_count *copy;
    uint64_t i;

    assert_int_equal(lp_counters_ranges_view(c, &v), (long)npairs);
    assert_int_equal(lp_counters_ranges(c, &copy), (long)npairs);
    for (i = 0; i < npairs; i++) {
        assert_int_equal(v[i].a, 0x1000 + i);
        assert_int_equal(v[i].b, 0x2000 + 3 * i);
        assert_int_equal(v[i].count, scale * (i + 1) * (i % 3 + 1));
        assert_memory_equal(&copy[i], &v[i], sizeof *v);
    }
    free(copy);
    assert_int_equal(lp_counters_branches_view(c, &v), 1);
    assert_int_equal(v[0].count, scale * npairs);
}

static void test_counters_every_size(void **state)
{
    static const uint64_t sizes[] = {1, 2, 3, 4, 5, 8, 9, 16, 17, 300};
    const lp_addr_pair_count *v;
    size_t k;
    uint64_t i, r, n;

    (void)state;
    for (k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        lp_counters *c = lp_counters_new(), *d = lp_counters_new();
        n = sizes[k];
        /* pairs in descending order, each i + 1 times per round, i % 3 + 1 rounds */
        for (r = 0; r < 3; r++)
            for (i = n; i-- > 0;)
                if (r <= i % 3) {
                    assert_int_equal(lp_counters_add_range(c, 0x1000 + i, 0x2000 + 3 * i, i + 1), 0);
                    if (r == 0)
                        assert_int_equal(lp_counters_add_branch(c, 7, 9, 1), 0);
                }
        if (n > 1) {            /* insertion order: the first pair added first */
            lp_addr_pair_count *raw;
            assert_int_equal(lp_counters_ranges(c, &raw), (long)n);
            free(raw);
        }
        check_table(c, n, 1);
        assert_int_equal(lp_counters_add_range(c, 0x1000, 0x2000, 0), 0); /* found after sorting */
        assert_int_equal(lp_counters_ranges_view(c, &v), (long)n);
        assert_int_equal(lp_counters_merge(d, c), 0);
        assert_int_equal(lp_counters_merge(d, c), 0);
        check_table(d, n, 2);
        lp_counters_free(c);
        lp_counters_free(d);
    }
}

/* Counters inside another block (lp_counters_init on dirty memory: made
 * empty), grown past the linear tables, then emptied by fini and init
 * again in the same memory. */
static void test_counters_in_place(void **state)
{
    void *mem = malloc(lp_counters_bytes() + 8);
    const lp_addr_pair_count *v;
    lp_counters *c;
    int round;
    uint64_t i;

    (void)state;
    assert_non_null(mem);
    memset(mem, 0xa5, lp_counters_bytes() + 8);
    for (round = 0; round < 2; round++) {
        assert_ptr_equal(c = lp_counters_init(mem), mem);
        assert_int_equal(lp_counters_ranges_view(c, &v), 0);
        assert_int_equal(lp_counters_branches_view(c, &v), 0);
        for (i = 0; i < 20; i++)
            assert_int_equal(lp_counters_add_range(c, 20 - i, 40, i), 0);
        assert_int_equal(lp_counters_add_branch(c, 1, 2, 3), 0);
        assert_int_equal(lp_counters_ranges_view(c, &v), 20);
        assert_int_equal(v[0].a, 1);
        assert_int_equal(v[0].count, 19);
        assert_int_equal(lp_counters_branches_view(c, &v), 1);
        lp_counters_fini(c);
    }
    assert_int_equal(((unsigned char *)mem)[lp_counters_bytes()], 0xa5);
    free(mem);
}

/* findDisjointRanges: overlapping ranges cut where any begins or ends,
 * each piece with the counts over it (a zero range kept as a zero piece,
 * a > b skipped), sorted; the same into a reused scratch, whose earlier
 * result does not leak into a smaller next one. */
static void test_disjoint_ranges_scratch(void **state)
{
    static const lp_addr_pair_count r[] = {
        {0x30, 0x3f, 0}, {0x10, 0x1f, 5}, {0x18, 0x27, 2}, {0x50, 0x40, 9}};
    static const lp_addr_pair_count want[] = {
        {0x10, 0x17, 5}, {0x18, 0x1f, 7}, {0x20, 0x27, 2}, {0x30, 0x3f, 0}};
    lp_addr_pair_count *d = NULL, big[200];
    const lp_addr_pair_count *v;
    lp_dj_scratch s = {0};
    long n, i;

    (void)state;
    assert_int_equal(n = lp_flat_disjoint_ranges(r, 4, &d), 4);
    for (i = 0; i < n; i++) {
        assert_int_equal(d[i].a, want[i].a);
        assert_int_equal(d[i].b, want[i].b);
        assert_int_equal(d[i].count, want[i].count);
    }
    free(d);
    for (i = 0; i < 200; i++)   /* more than the scratch's first room */
        big[i] = (lp_addr_pair_count){(uint64_t)i * 16, (uint64_t)i * 16 + 7, 1};
    assert_int_equal(lp_flat_disjoint_ranges_in(big, 200, &s, &v), 200);
    assert_int_equal(v[199].a, 199 * 16);
    assert_int_equal(lp_flat_disjoint_ranges_in(r, 4, &s, &v), 4);
    for (i = 0; i < 4; i++) {
        assert_int_equal(v[i].a, want[i].a);
        assert_int_equal(v[i].b, want[i].b);
        assert_int_equal(v[i].count, want[i].count);
    }
    assert_int_equal(lp_flat_disjoint_ranges_in(r, 0, &s, &v), 0);
    lp_dj_scratch_free(&s);
    assert_null(s.v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ranges_and_branches),
        cmocka_unit_test(test_external_and_bogus),
        cmocka_unit_test(test_mmap_moves_base),
        cmocka_unit_test(test_waiting_samples),
        cmocka_unit_test(test_waiting_across_flushes),
        cmocka_unit_test(test_stack_sample_prolog_leaf),
        cmocka_unit_test(test_rawprof_round_trip_and_errors),
        cmocka_unit_test(test_generate_example_a),
        cmocka_unit_test(test_generate_probes),
        cmocka_unit_test(test_counters_every_size),
        cmocka_unit_test(test_counters_in_place),
        cmocka_unit_test(test_disjoint_ranges_scratch),
        cmocka_unit_test(test_filter_density),
        cmocka_unit_test(test_density_cutoffs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
