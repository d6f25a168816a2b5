/*
 * test_perfscript.c - unit tests for the perf script text backend
 * (src/reader/perfscript.c): every llvm-profgen test input, checked against
 * counts an awk script computes from the same file at test time, plus
 * crafted inputs for flags, MMAP lines, aggregation and errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <glob.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader/perfscript.h"
#include "util/hash.h"

typedef struct counts {
    uint64_t samples, mmaps, branches, frames, repeat;
} counts;

/* Read everything; returns lp_pscript_next's last status. */
static int count_events(lp_pscript *p, counts *c, lp_error *e)
{
    const lp_event *ev;
    int r;

    memset(c, 0, sizeof *c);
    while ((r = lp_pscript_next(p, &ev, e)) == 1) {
        if (ev->kind == LP_EV_SAMPLE) {
            c->samples++;
            c->branches += ev->u.sample.branch_nr;
            c->frames += ev->u.sample.callchain_nr;
            c->repeat += ev->u.sample.repeat;
        } else if (ev->kind == LP_EV_MMAP) {
            c->mmaps++;
        }
    }
    return r;
}

/* The oracle: the same rules written independently in awk. */
static const char *awk_oracle =
    "awk '"
    "function isframe(s) { return s ~ /^[ \\t]+[0-9a-fA-F]+$/ }"
    "function isdec(s) { return s ~ /^[0-9]+$/ }"
    "function ismmap(s) { return length(s) >= 50 && s !~ /^[0-9]/ &&"
    "  s ~ /PERF_RECORD_MMAP2? -?[0-9]+\\/[0-9]+: \\[0x[0-9a-f]+\\(0x[0-9a-f]+\\) @ (0x[0-9a-f]+|0)[] ]/ }"
    "function entries(s,   n, t, i, k) { n = split(s, t, / +/); k = 0; i = 1;"
    "  if (t[i] == \"\") i++; if (t[i] ~ /:$/) i++;"
    "  if (t[i] !~ /\\//) { if (t[i] !~ /^[0-9a-fA-F]+$/) return 0; i++ }"
    "  for (; i <= n; i++) { if (t[i] !~ /^..[0-9a-fA-F]+\\/..[0-9a-fA-F]+(\\/|$)/) break; k++ }"
    "  return k }"
    "{ L[NR] = $0 }"
    "END { hybrid = 0;"
    "  for (i = 1; i <= NR; i++) { s = L[i]; if (ismmap(s)) continue;"
    "    x = s; sub(/^[ \\t]+/, \"\", x); n = split(x, t, / +/); j = (t[1] ~ /:$/) ? 2 : 1;"
    "    if (n > j && t[j+1] ~ /^0x/ && t[j+1] ~ /\\//) { hybrid = isframe(L[i-1]); break } }"
    "  for (i = 1; i <= NR; i++) { s = L[i];"
    "    if (ismmap(s)) { if (!isdec(L[i-1])) mm++; continue }"
    "    if (hybrid) { if (s !~ /^ 0x/ || !isframe(L[i-1])) continue;"
    "      k = i - 1; while (k >= 1 && isframe(L[k])) k--;"
    "      e = entries(s); if (!e) continue; ns++; nb += e; nf += i - 1 - k;"
    "      rp += isdec(L[k]) ? L[k] : 1 }"
    "    else { if (isdec(s)) continue; e = entries(s); if (!e) continue;"
    "      ns++; nb += e; rp += isdec(L[i-1]) ? L[i-1] : 1 } }"
    "  printf \"%d %d %d %d %d\\n\", ns, mm, nb, nf, rp }' ";

static void check_file(const char *path)
{
    char cmd[4096];
    counts want, got;
    FILE *pipe, *f;
    lp_error e;
    lp_pscript *p;
    unsigned long long w[5];

    snprintf(cmd, sizeof cmd, "%s '%s'", awk_oracle, path);
    pipe = popen(cmd, "r");
    assert_non_null(pipe);
    assert_int_equal(fscanf(pipe, "%llu %llu %llu %llu %llu", &w[0], &w[1],
                            &w[2], &w[3], &w[4]),
                     5);
    pclose(pipe);
    want = (counts){w[0], w[1], w[2], w[3], w[4]};
    f = fopen(path, "r");
    assert_non_null(f);
    p = lp_pscript_open(f, NULL, 0, path, &e);
    assert_non_null(p);
    assert_int_equal(count_events(p, &got, &e), 0);
    print_message("%s: %" PRIu64 " samples, %" PRIu64 " mmaps, %" PRIu64
                  " branches, %" PRIu64 " frames, repeat %" PRIu64 "\n",
                  path, got.samples, got.mmaps, got.branches, got.frames,
                  got.repeat);
    assert_true(want.samples > 0);
    assert_int_equal(got.samples, want.samples);
    assert_int_equal(got.mmaps, want.mmaps);
    assert_int_equal(got.branches, want.branches);
    assert_int_equal(got.frames, want.frames);
    assert_int_equal(got.repeat, want.repeat);
    lp_pscript_close(p);
    fclose(f);
}

static void test_llvm_profgen_inputs(void **state)
{
    const char *top = getenv("TOP");
    char pat[1024];
    glob_t g;
    size_t i, n = 0;
    const char *ext[] = {"perfscript", "aggperfscript"};
    (void)state;

    for (i = 0; i < 2; i++) {
        snprintf(pat, sizeof pat, "%s/tests/data/llvm-profgen-inputs/*.%s",
                 top ? top : ".", ext[i]);
        assert_int_equal(glob(pat, 0, NULL, &g), 0);
        for (size_t k = 0; k < g.gl_pathc; k++, n++)
            check_file(g.gl_pathv[k]);
        globfree(&g);
    }
    assert_true(n >= 30);
}

/* ---- crafted inputs ------------------------------------------------------ */

typedef struct mem_input {
    FILE *f;
    lp_pscript *p;
} mem_input;

static mem_input open_text(const char *text)
{
    mem_input m;
    lp_error e;

    m.f = fmemopen((void *)text, strlen(text), "r");
    assert_non_null(m.f);
    m.p = lp_pscript_open(m.f, NULL, 0, "crafted.txt", &e);
    assert_non_null(m.p);
    return m;
}

static void close_text(mem_input *m)
{
    lp_pscript_close(m->p);
    fclose(m->f);
}

static void test_lbr_flags(void **state)
{
    mem_input m = open_text(
        "  br_inst_retired.near_taken:upp:   400 0x10/0x20/M/X/A/17/CALL  "
        "0x30/0x40/P/-/-/0//-  0xAb/0xcd\n");
    const lp_event *ev;
    lp_error e;
    const lp_sample *s;
    (void)state;

    assert_int_equal(lp_pscript_next(m.p, &ev, &e), 1);
    assert_int_equal(ev->kind, LP_EV_SAMPLE);
    s = &ev->u.sample;
    assert_int_equal(s->ip, 0x400);
    assert_true(s->sample_type & LP_SAMPLE_IP);
    assert_string_equal(s->attr->name, "br_inst_retired.near_taken:upp");
    assert_int_equal(s->branch_nr, 3);
    assert_int_equal(s->branches[0].from, 0x10);
    assert_int_equal(s->branches[0].to, 0x20);
    assert_int_equal(LP_BR_MISPRED(s->branches[0].flags), 1);
    assert_int_equal(LP_BR_PREDICTED(s->branches[0].flags), 0);
    assert_int_equal(LP_BR_IN_TX(s->branches[0].flags), 1);
    assert_int_equal(LP_BR_ABORT(s->branches[0].flags), 1);
    assert_int_equal(LP_BR_CYCLES(s->branches[0].flags), 17);
    assert_int_equal(LP_BR_TYPE(s->branches[0].flags), 4); /* CALL */
    assert_int_equal(s->branches[1].flags, 2);             /* P only */
    assert_int_equal(s->branches[2].from, 0xab);
    assert_int_equal(s->branches[2].flags, 0);
    assert_int_equal(s->repeat, 1);
    assert_int_equal(lp_pscript_next(m.p, &ev, &e), 0);
    assert_false(lp_pscript_is_hybrid(m.p));
    close_text(&m);
}

static void test_mmap_lines(void **state)
{
    mem_input m = open_text(
        "PERF_RECORD_MMAP2 2854748/2854749: [0x400000(0x1000) @ 0 00:1d "
        "123291722 526021]: r-xp /home/a b.perfbin\n"
        "  perf 1/1 0.0: PERF_RECORD_MMAP -1/0: [0xffffffff81000000(0x1000) "
        "@ 0xffffffff81000000]: x [kernel.kallsyms]_text\n"
        "PERF_RECORD_MMAP2 1/1: [0x400000(0x1000) @ 0 00:1d 1 2]: r-xp\n"
        "PERF_RECORD_MMAP2 1/1: [0X400000(0x1000) @ 0 00:1d 1 2]: r-xp /x\n"
        "  40 0x10/0x20 0x30/0x40\n");
    const lp_event *ev;
    lp_error e;
    (void)state;

    assert_int_equal(lp_pscript_next(m.p, &ev, &e), 1);
    assert_int_equal(ev->kind, LP_EV_MMAP);
    assert_int_equal(ev->u.mmap.is_mmap2, 1);
    assert_int_equal(ev->u.mmap.pid, 2854748);
    assert_int_equal(ev->u.mmap.tid, 2854749);
    assert_int_equal(ev->u.mmap.start, 0x400000);
    assert_int_equal(ev->u.mmap.len, 0x1000);
    assert_int_equal(ev->u.mmap.pgoff, 0);
    assert_int_equal(ev->u.mmap.maj, 0);
    assert_int_equal(ev->u.mmap.min, 0x1d);
    assert_int_equal(ev->u.mmap.ino, 123291722);
    assert_int_equal(ev->u.mmap.prot, 5);
    assert_string_equal(ev->u.mmap.filename, "/home/a b.perfbin");
    assert_int_equal(ev->offset, 0);
    assert_int_equal(lp_pscript_next(m.p, &ev, &e), 1);
    assert_int_equal(ev->kind, LP_EV_MMAP);
    assert_int_equal(ev->u.mmap.is_mmap2, 0);
    assert_int_equal(ev->u.mmap.pid, (uint32_t)-1);
    assert_int_equal(ev->u.mmap.pgoff, 0xffffffff81000000ull);
    assert_string_equal(ev->u.mmap.filename, "[kernel.kallsyms]_text");
    /* Line 3 (no path: shorter than 50? no, but no " PATH") and line 4
     * (uppercase 0X) are skipped like llvm-profgen's "Cannot parse". */
    assert_int_equal(lp_pscript_next(m.p, &ev, &e), 1);
    assert_int_equal(ev->kind, LP_EV_SAMPLE);
    assert_int_equal(lp_pscript_stats_get(m.p)->bad_mmap_lines, 2);
    assert_int_equal(lp_pscript_next(m.p, &ev, &e), 0);
    close_text(&m);
}

static void test_hybrid_and_counts(void **state)
{
    mem_input m = open_text(
        "// comment\n"
        "3\n"
        "\t          4005dc\n"
        "\t          400634\n"
        " 0x4005c8/0x4005dc/P/-/-/0  0x40062f/0x4005b0/P/-/-/0\n"
        "\n"
        " 0x1/0x2/P/-/-/0  0x3/0x4/P/-/-/0\n" /* no stack: dropped */
        "\t4005dc\n"
        "; aborts the sample\n"
        " 0x5/0x6/P/-/-/0  0x7/0x8/P/-/-/0\n" /* skipped with it */
        "\t5541f689495641d7\n"
        " 0x9/0xa 0xb/0xc\n");
    const lp_event *ev;
    lp_error e;
    (void)state;

    assert_int_equal(lp_pscript_next(m.p, &ev, &e), 1);
    assert_true(lp_pscript_is_hybrid(m.p));
    assert_int_equal(ev->u.sample.repeat, 3);
    assert_int_equal(ev->u.sample.callchain_nr, 2);
    assert_int_equal(ev->u.sample.callchain[0], 0x4005dc);
    assert_int_equal(ev->u.sample.callchain[1], 0x400634);
    assert_int_equal(ev->u.sample.ip, 0x4005dc);
    assert_int_equal(ev->u.sample.branch_nr, 2);
    assert_int_equal(ev->offset, strlen("// comment\n"));
    assert_int_equal(lp_pscript_next(m.p, &ev, &e), 1);
    assert_int_equal(ev->u.sample.repeat, 1);
    assert_int_equal(ev->u.sample.callchain[0], 0x5541f689495641d7ull);
    assert_int_equal(ev->u.sample.branches[1].to, 0xc);
    assert_int_equal(lp_pscript_next(m.p, &ev, &e), 0);
    close_text(&m);
}

/* Repeated sample blocks come from the block cache: the same events,
 * statistics and line numbers as parsing each; a block with a broken LBR
 * token is never cached (its warning counts every time). */
#define BLK_A "\t4005dc\n\t400634\n 0x4005c8/0x4005dc/P/-/-/0  0x40062f/0x4005b0/P/-/-/0\n"
#define BLK_B "\t4005dc\n 0x1/0x2 0xZZ/0x4\n"
static void test_block_cache(void **state)
{
    mem_input m = open_text(BLK_A "\n" BLK_A "5\n" BLK_A BLK_B BLK_B BLK_A
                            "\t4005dc\n");
    const lp_event *ev;
    const lp_pscript_stats *st;
    uint64_t reps[4] = {1, 1, 5, 1}, id = 0;
    int i, a = 0;
    lp_error e;
    (void)state;

    for (i = 0; i < 6; i++) {
        assert_int_equal(lp_pscript_next(m.p, &ev, &e), 1);
        if (i == 3 || i == 4) {
            assert_int_equal(ev->u.sample.branch_nr, 1);
            assert_int_equal(ev->u.sample.callchain_nr, 1);
            assert_int_equal(ev->u.sample.dup_id, 0); /* not clean: not cached */
            continue;
        }
        /* the same text, the same nonzero id (the repeat count may differ) */
        if (i == 0)
            id = ev->u.sample.dup_id;
        assert_int_not_equal(id, 0);
        assert_int_equal(ev->u.sample.dup_id, id);
        assert_int_equal(ev->u.sample.repeat, reps[a++]);
        assert_int_equal(ev->u.sample.callchain_nr, 2);
        assert_int_equal(ev->u.sample.callchain[1], 0x400634);
        assert_int_equal(ev->u.sample.ip, 0x4005dc);
        assert_int_equal(ev->u.sample.branch_nr, 2);
        assert_int_equal(ev->u.sample.branches[1].from, 0x40062f);
        assert_int_equal(ev->u.sample.branches[1].to, 0x4005b0);
        assert_int_equal(ev->u.sample.branches[0].flags, 2);
    }
    assert_int_equal(lp_pscript_next(m.p, &ev, &e), -1);
    assert_non_null(strstr(e.msg, "line 20:"));
    st = lp_pscript_stats_get(m.p);
    assert_int_equal(st->samples, 6);
    assert_int_equal(st->bad_lbr_lines, 2);
    assert_int_equal(st->skipped_lines, 1);
    close_text(&m);
}

/* One block of test_block_cache_full: distinct per k, 64 LBR entries. */
static size_t full_block(char *out, unsigned k)
{
    size_t n = (size_t)sprintf(out, "\t%x\n", 0x500000 + k);
    unsigned i;

    for (i = 0; i < 64; i++)
        n += (size_t)sprintf(out + n, " 0x%x/0x%x/P/-/-/0", 0x400000 + k,
                             0x410000 + i);
    out[n++] = '\n';
    return n;
}

static void check_full_block(const lp_event *ev, unsigned k)
{
    assert_int_equal(ev->u.sample.callchain_nr, 1);
    assert_int_equal(ev->u.sample.callchain[0], 0x500000 + k);
    assert_int_equal(ev->u.sample.branch_nr, 64);
    assert_int_equal(ev->u.sample.branches[0].from, 0x400000 + k);
    assert_int_equal(ev->u.sample.branches[63].to, 0x410000 + 63);
}

/* More distinct blocks than the cache's store holds (8 MB of results, a
 * block of 64 entries is ~0.5 KB packed): the blocks cached first stay
 * cached (block 0 again has its id, and its arrays unpack right), later
 * ones are parsed each time, right, and carry no id. */
#define FULL_N 24000u
static void test_block_cache_full(void **state)
{
    char *text = malloc((FULL_N + 2) * 2048), *t = text;
    const lp_event *ev;
    uint64_t id0 = 0;
    mem_input m;
    unsigned k;
    lp_error e;
    (void)state;

    assert_non_null(text);
    for (k = 0; k < FULL_N; k++)
        t += full_block(t, k);
    t += full_block(t, 0);
    t += full_block(t, FULL_N - 1);
    *t = 0;
    m = open_text(text);
    for (k = 0; k < FULL_N; k++) {
        assert_int_equal(lp_pscript_next(m.p, &ev, &e), 1);
        check_full_block(ev, k);
        if (k == 0)
            id0 = ev->u.sample.dup_id;
    }
    assert_int_not_equal(id0, 0);
    assert_int_equal(ev->u.sample.dup_id, 0);   /* the last: no room */
    assert_int_equal(lp_pscript_next(m.p, &ev, &e), 1);
    check_full_block(ev, 0);
    assert_int_equal(ev->u.sample.dup_id, id0);
    assert_int_equal(lp_pscript_next(m.p, &ev, &e), 1);
    check_full_block(ev, FULL_N - 1);
    assert_int_equal(ev->u.sample.dup_id, 0);
    assert_int_equal(lp_pscript_next(m.p, &ev, &e), 0);
    close_text(&m);
    free(text);
}

/* A small block for test_block_cache_two_ways: distinct per k (two
 * entries: a one-entry line does not count as an LBR sample). */
static size_t small_block(char *out, unsigned k)
{
    return (size_t)sprintf(out, "\t%x\n 0x%x/0x%x/P/-/-/0 0x1/0x2/P/-/-/0\n",
                           0x500000 + k, 0x400000 + k, 0x410000 + k);
}

/* Two blocks whose digests agree in their low 16 bits - one slot, had the
 * cache one way per set (it had: each then took the slot from the other,
 * and every sample was parsed anew); in the same set now - both stay
 * cached, each keeping its id, when they alternate. */
static void test_block_cache_two_ways(void **state)
{
    char a[128], b[128], text[1024], *t = text;
    size_t na = small_block(a, 0), nb = 0;
    uint64_t lo = lp_digest_bytes(a, na - 1).lo & 0xffff, ida, idb;
    const lp_event *ev;
    mem_input m;
    unsigned k;
    lp_error e;
    (void)state;

    for (k = 1; k < 2000000; k++) {     /* one in 64 Ki */
        nb = small_block(b, k);
        if ((lp_digest_bytes(b, nb - 1).lo & 0xffff) == lo)
            break;
    }
    assert_true(k < 2000000);
    memcpy(t, a, na), t += na;
    memcpy(t, b, nb), t += nb;
    memcpy(t, a, na), t += na;
    memcpy(t, b, nb), t += nb;
    *t = 0;
    m = open_text(text);
    assert_int_equal(lp_pscript_next(m.p, &ev, &e), 1);
    assert_int_equal(ev->u.sample.callchain[0], 0x500000);
    ida = ev->u.sample.dup_id;
    assert_int_equal(lp_pscript_next(m.p, &ev, &e), 1);
    assert_int_equal(ev->u.sample.callchain[0], 0x500000 + k);
    idb = ev->u.sample.dup_id;
    assert_int_not_equal(ida, 0);
    assert_int_not_equal(idb, 0);
    assert_int_not_equal(ida, idb);
    assert_int_equal(lp_pscript_next(m.p, &ev, &e), 1);
    assert_int_equal(ev->u.sample.callchain[0], 0x500000);
    assert_int_equal(ev->u.sample.branches[0].to, 0x410000);
    assert_int_equal(ev->u.sample.dup_id, ida);
    assert_int_equal(lp_pscript_next(m.p, &ev, &e), 1);
    assert_int_equal(ev->u.sample.callchain[0], 0x500000 + k);
    assert_int_equal(ev->u.sample.branches[0].to, 0x410000 + k);
    assert_int_equal(ev->u.sample.dup_id, idb);
    assert_int_equal(lp_pscript_next(m.p, &ev, &e), 0);
    close_text(&m);
}

/* llvm-profgen quirks: substr(2) on addresses, stop at a broken token,
 * a decimal frame line at column 0 is a count, count 0 is kept. */
static void test_quirks(void **state)
{
    mem_input m = open_text("  40065d 40065d/0x40068f/M/-/-/1 0x1/0x2\n"
                            "  400 0x10/0x20 0x30/0x40 zz 0x50/0x60\n"
                            "0\n"
                            "  400 0x10/0x20 0x30/0x40\n"
                            "  nothex 0x10/0x20 0x30/0x40\n");
    const lp_event *ev;
    lp_error e;
    (void)state;

    assert_int_equal(lp_pscript_next(m.p, &ev, &e), 1);
    assert_int_equal(ev->u.sample.branch_nr, 2);
    assert_int_equal(ev->u.sample.branches[0].from, 0x65d);
    assert_int_equal(lp_pscript_next(m.p, &ev, &e), 1);
    assert_int_equal(ev->u.sample.branch_nr, 2);
    assert_int_equal(lp_pscript_next(m.p, &ev, &e), 1);
    assert_int_equal(ev->u.sample.repeat, 0);
    assert_int_equal(lp_pscript_next(m.p, &ev, &e), 0);
    assert_int_equal(lp_pscript_stats_get(m.p)->bad_lbr_lines, 2);
    close_text(&m);
}

/* Hex addresses (the leading IP, and a branch's from and to past their two
 * dropped characters) hold 64 bits: 16 significant digits are read, a 17th
 * is an overflow, leading zeros do not count, and no digits is an error.
 * A bad leading IP drops the line; a bad branch token ends the entries. */
static void test_hex_widths(void **state)
{
    mem_input m = open_text(
        "  ffffffffffffffff 0xfedcba9876543210/0x0000000000000000000000020\n"
        "  1ffffffffffffffff 0x10/0x20\n"
        "  00001234567890abcdef 0x10/0x20 0x1ffffffffffffffff/0x40 0x5/0x6\n"
        "  400 0x10/0x20 0x/0x40\n"
        "  400 0x10/0x20 0x30/0x\n"
        "  400 0x10/0x20 0x30/0x10000000000000000\n");
    const lp_event *ev;
    lp_error e;
    (void)state;

    assert_int_equal(lp_pscript_next(m.p, &ev, &e), 1);
    assert_true(ev->u.sample.ip == UINT64_MAX);
    assert_int_equal(ev->u.sample.branch_nr, 1);
    assert_true(ev->u.sample.branches[0].from == 0xfedcba9876543210u);
    assert_int_equal(ev->u.sample.branches[0].to, 0x20);
    assert_int_equal(lp_pscript_next(m.p, &ev, &e), 1); /* line 2 dropped */
    assert_true(ev->u.sample.ip == 0x1234567890abcdefu);
    assert_int_equal(ev->u.sample.branch_nr, 1);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(lp_pscript_next(m.p, &ev, &e), 1);
        assert_int_equal(ev->u.sample.ip, 0x400);
        assert_int_equal(ev->u.sample.branch_nr, 1);
    }
    assert_int_equal(lp_pscript_next(m.p, &ev, &e), 0);
    assert_int_equal(lp_pscript_stats_get(m.p)->bad_lbr_lines, 5);
    close_text(&m);
}

static void test_error_no_lbr_line(void **state)
{
    /* One entry without a leading IP is not an LBR line for detection. */
    mem_input m = open_text("// nothing\n\n 0x10/0x20\n");
    const lp_event *ev;
    lp_error e;
    (void)state;

    assert_int_equal(lp_pscript_next(m.p, &ev, &e), -1);
    assert_int_equal(e.code, LP_EFORMAT);
    assert_non_null(strstr(e.msg, "crafted.txt: offset 0x17: line 3: no LBR sample line"));
    assert_int_equal(lp_pscript_next(m.p, &ev, &e), -1); /* sticky */
    close_text(&m);
}

static void test_error_hybrid_eof(void **state)
{
    mem_input m = open_text("\t4005dc\n 0x1/0x2 0x3/0x4\n\t4005dc\n\t400634\n");
    const lp_event *ev;
    lp_error e;
    (void)state;

    assert_int_equal(lp_pscript_next(m.p, &ev, &e), 1);
    assert_int_equal(lp_pscript_next(m.p, &ev, &e), -1);
    assert_non_null(strstr(e.msg, "crafted.txt: offset 0x29: line 5: hybrid sample is "
                                  "corrupted"));
    close_text(&m);
}

static void test_binary_input(void **state)
{
    static const char bin[] = "PERFILE3\x68\0\0\0 0x10/0x20 0x30/0x40\n";
    FILE *f = fmemopen((void *)(bin + 4), sizeof bin - 5, "r");
    lp_pscript *p;
    const lp_event *ev;
    lp_error e;
    (void)state;

    assert_non_null(f);
    p = lp_pscript_open(f, bin, 4, "bin.data", &e);
    assert_non_null(p);
    assert_int_equal(lp_pscript_next(p, &ev, &e), -1);
    assert_non_null(strstr(e.msg, "bin.data: offset 0x9: byte 0x00: not a "
                                  "perf.data file"));
    lp_pscript_close(p);
    fclose(f);
}

static void test_empty_input(void **state)
{
    mem_input m = open_text("");
    const lp_event *ev;
    lp_error e;
    (void)state;

    assert_int_equal(lp_pscript_next(m.p, &ev, &e), -1);
    assert_non_null(strstr(e.msg, "no LBR sample line"));
    close_text(&m);
}

/* The caller's sniffed prefix is parsed before the stream; a long input
 * streams through without memory growing with the number of samples. */
static void test_prefix_and_streaming(void **state)
{
    const char *line = "  400 0x10/0x20/P/-/-/0 0x30/0x40/P/-/-/0\n";
    size_t n = 200000, ll = strlen(line), i;
    char *big = malloc(n * ll + 1);
    FILE *f;
    lp_pscript *p;
    lp_error e;
    counts c;
    (void)state;

    assert_non_null(big);
    for (i = 0; i < n; i++)
        memcpy(big + i * ll, line, ll);
    f = fmemopen(big + 10, n * ll - 10, "r");
    assert_non_null(f);
    p = lp_pscript_open(f, big, 10, "big", &e);
    assert_non_null(p);
    assert_int_equal(count_events(p, &c, &e), 0);
    assert_int_equal(c.samples, n);
    assert_int_equal(c.branches, 2 * n);
    lp_pscript_close(p);
    fclose(f);
    free(big);
}

/* Through the public reader: text is routed to this backend. */
static void test_via_reader(void **state)
{
    static const char text[] =
        "PERF_RECORD_MMAP2 7/7: [0x400000(0x1000) @ 0 00:1d 1 2]: r-xp /bin/x\n"
        "2\n"
        "  400 0x10/0x20/M/-/-/3 0x30/0x40\n";
    const lp_event *ev;
    lp_error e;
    lp_reader *r = lp_reader_open_mem(text, sizeof text - 1, "mem.txt", NULL, &e);
    (void)state;

    assert_non_null(r);
    assert_int_equal(lp_reader_next(r, &ev, &e), 1);
    assert_int_equal(ev->kind, LP_EV_MMAP);
    assert_string_equal(ev->u.mmap.filename, "/bin/x");
    assert_int_equal(lp_reader_next(r, &ev, &e), 1);
    assert_int_equal(ev->kind, LP_EV_SAMPLE);
    assert_int_equal(ev->u.sample.repeat, 2);
    assert_int_equal(ev->u.sample.branch_nr, 2);
    assert_int_equal(LP_BR_CYCLES(ev->u.sample.branches[0].flags), 3);
    assert_int_equal(lp_reader_next(r, &ev, &e), 0);
    assert_int_equal(lp_reader_info(r)->format, LP_FMT_PERF_SCRIPT);
    lp_reader_close(r);
}

static void test_sniff(void **state)
{
    (void)state;
    assert_true(lp_pscript_sniff("  400 0x10/0x20\n", 16));
    assert_false(lp_pscript_sniff("PERFILE2\0\0\0\0", 12));
    assert_false(lp_pscript_sniff("", 0));
}

/* ---- the fast LBR-token code against the general code ------------------ */

/* A deterministic generator for the differential tests. */
static uint64_t rnd(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* The text in a buffer of exactly its size (ASan sees any read past it). */
static char *exact_copy(const char *text, size_t n)
{
    char *b = malloc(n ? n : 1);

    assert_non_null(b);
    memcpy(b, text, n);
    return b;
}

/* hex_run as the parser runs it (0) and word at a time (2) against the
 * byte-at-a-time code (1) on [s, s+n): same stop, same value. */
static void check_hex(const char *text, size_t n)
{
    char *b = exact_copy(text, n);
    uint64_t v[3] = {1, 2, 3};
    const char *r[3];

    for (int impl = 0; impl < 3; impl++)
        r[impl] = lp_pscript_hex_run(b, b + n, impl, &v[impl]);
    assert_ptr_equal(r[0], r[1]);
    assert_ptr_equal(r[2], r[1]);
    if (r[1]) {
        assert_true(v[0] == v[1]);
        assert_true(v[2] == v[1]);
    }
    free(b);
}

/* Runs of 0..20 digits of every case, with leading zeros or not, stopped
 * by each kind of byte or by the buffer's end, with more text behind. */
static void test_hex_run_fast(void **state)
{
    static const char digits[] = "0123456789abcdefABCDEF";
    static const char stops[] = "/ gG:@`\xff\x80\t\0";
    char buf[64];
    uint64_t x = 88172645463325252u;
    (void)state;

    for (size_t len = 0; len <= 20; len++) {
        for (int round = 0; round < 200; round++) {
            for (size_t i = 0; i < len; i++)
                buf[i] = digits[rnd(&x) % (sizeof digits - 1)];
            if (round % 4 == 1)                 /* leading zeros */
                memset(buf, '0', len > 4 ? len - 4 : len);
            if (round % 4 == 2 && len)          /* all zeros but one */
                memset(buf, '0', len - 1);
            for (size_t k = 0; k < sizeof stops; k++) {
                buf[len] = stops[k];
                for (size_t t = len + 1; t < sizeof buf; t++)
                    buf[t] = digits[rnd(&x) % (sizeof digits - 1)];
                check_hex(buf, len);            /* ends at the buffer end */
                check_hex(buf, len + 1);
                check_hex(buf, len + 1 + rnd(&x) % 30);
            }
        }
    }
    /* every byte value at every place of a 16-byte window */
    for (int c = 0; c < 256; c++)
        for (size_t at = 0; at < 18; at++) {
            memset(buf, '7', sizeof buf);
            buf[at] = (char)c;
            check_hex(buf, 18);
            check_hex(buf, at + 1);
            check_hex(buf, sizeof buf);
        }
}

/* A token through the fast and the general code: same result, end and
 * entry. Returns the fast code's result. */
static int check_token(const char *text, size_t n, lp_branch_entry *out)
{
    char *b = exact_copy(text, n);
    lp_branch_entry e[2];
    const char *end[2] = {NULL, NULL};
    int r[2];

    memset(e, 0xa5, sizeof e);
    for (int g = 0; g < 2; g++)
        r[g] = lp_pscript_br_token(b, b + n, g, &e[g], &end[g]);
    assert_int_equal(r[0], r[1]);
    if (r[0] == 0) {
        assert_ptr_equal(end[0], end[1]);
        assert_true(e[0].from == e[1].from);
        assert_true(e[0].to == e[1].to);
        assert_true(e[0].flags == e[1].flags);
        if (out)
            *out = e[0];
    }
    free(b);
    return r[0];
}

static int token(const char *text, lp_branch_entry *out)
{
    return check_token(text, strlen(text), out);
}

/* Tokens with known results: the fast code and the general code agree on
 * each, and on the values llvm-profgen's rules give. */
static void test_br_token_fixed(void **state)
{
    lp_branch_entry b;
    (void)state;

    assert_int_equal(token("0x55d8f2a1b2c3/0x55d8f2a1b300/P/-/-/0", &b), 0);
    assert_true(b.from == 0x55d8f2a1b2c3u && b.to == 0x55d8f2a1b300u);
    assert_true(b.flags == 2);
    assert_int_equal(token("0x10/0x20/M/X/A/65536/COND", &b), 0);
    assert_true(b.flags == (1 | 4 | 8 | 0xffffu << 4 | 1u << 20));
    assert_int_equal(token("0x10/0x20/M/X/A/1234567890/RET/x", &b), 0);
    assert_true(b.flags == (1 | 4 | 8 | 0xffffu << 4 | 6u << 20));
    assert_int_equal(token("0x10/0x20/-/-/-/99999999999999999999", &b), 0);
    assert_true(b.flags == 0);                  /* cycles overflow: none */
    assert_int_equal(token("0x10/0x20/P/-/-/7 0x30/0x40", &b), 0);
    assert_true(b.flags == (2 | 7u << 4));
    assert_int_equal(token("0x10/0x20/P/-/-/", &b), 0);
    assert_true(b.flags == 2);
    assert_int_equal(token("0x10/0x20/P/-/", &b), 0);
    assert_true(b.flags == 2);
    assert_int_equal(token("0x10/0x20/PP/X/A/3", &b), 0);
    assert_true(b.flags == (4 | 8 | 3u << 4));
    assert_int_equal(token("0x10/0x20//X/A/3", &b), 0);
    assert_true(b.flags == (4 | 8 | 3u << 4));  /* an empty first field */
    assert_int_equal(token("0x10/0x20/M/X/A/3x/CALL", &b), 0);
    assert_true(b.flags == (1 | 4 | 8 | 4u << 20));
    assert_int_equal(token("0x10/0x20/M/X/A/\t3", &b), 0);
    assert_true(b.flags == (1 | 4 | 8));
    assert_int_equal(token("zz00000000000000000000abc/ZZdef", &b), 0);
    assert_true(b.from == 0xabc && b.to == 0xdef && b.flags == 0);
    assert_int_equal(token("0x1ffffffffffffffff/0x1", NULL), -1);
    assert_int_equal(token("0x10/0x2g/P/-/-/0", NULL), -1);
    assert_int_equal(token("0x10/0x\t2/P", NULL), -1);
    assert_int_equal(token("0x10/0x", NULL), -1);
    assert_int_equal(token("0x10", NULL), -1);
}

/* Tokens built from pieces of the usual shape, then mutated: a byte
 * replaced, inserted or dropped, or the text cut short. */
static size_t make_token(char *t, uint64_t *x)
{
    static const char *const flags[] = {
        "P", "M", "-", "X", "A", "", "PM", "/", " ", "\t", "0",
    };
    static const char *const types[] = {
        "", "COND", "CALL", "RET", "IND_CALL", "NO_TX", "SERROR", "CONDX",
        "x", "//",
    };
    static const char alphabet[] = "0123456789abcdefxX/ -PMXA\t:gG\xff";
    size_t n = 0, k;

    n += (size_t)sprintf(t + n, "0x%.*llx", (int)(rnd(x) % 20),
                         (unsigned long long)rnd(x));
    n += (size_t)sprintf(t + n, "/0X%llX", (unsigned long long)(rnd(x) >> rnd(x) % 64));
    if (rnd(x) % 4) {
        for (k = 0; k < 3; k++)
            n += (size_t)sprintf(t + n, "/%s", flags[rnd(x) % 11 < 6 ? k + (rnd(x) % 2) * 2 % 3 : rnd(x) % 11]);
        if (rnd(x) % 5)
            n += (size_t)sprintf(t + n, "/%llu", (unsigned long long)(rnd(x) >> rnd(x) % 64));
        if (rnd(x) % 2)
            n += (size_t)sprintf(t + n, "/%s", types[rnd(x) % 10]);
    }
    if (rnd(x) % 2)
        n += (size_t)sprintf(t + n, "  0x1/0x2/P/-/-/0");
    for (k = rnd(x) % 4; k > 0 && n > 0; k--) {
        size_t at = rnd(x) % n;
        char c = alphabet[rnd(x) % (sizeof alphabet - 1)];
        switch (rnd(x) % 4) {
        case 0: t[at] = c; break;
        case 1: memmove(t + at + 1, t + at, n++ - at); t[at] = c; break;
        case 2: memmove(t + at, t + at + 1, --n - at); break;
        default: n = at; break;
        }
    }
    return n;
}

static void test_br_token_differential(void **state)
{
    char t[512];
    uint64_t x = 0x9e3779b97f4a7c15u;
    unsigned ok = 0;
    (void)state;

    for (int i = 0; i < 300000; i++) {
        size_t n = make_token(t, &x);
        if (n == 0 || t[0] == ' ')
            continue;                           /* tokens start at no space */
        ok += check_token(t, n, NULL) == 0;
    }
    assert_true(ok > 100000);                   /* most tokens parse */
}

/* llvm-profgen's count of sample starts (the denominator of its
 * leaf-external warning) around perf script's blank lines: a blank line
 * starts a sample whose call stack ends at once, and an LBR line right
 * after it (a sample without call-stack lines) goes with it; a blank line
 * before a call-stack line is a start of its own. */
static void test_blank_line_sample_starts(void **state)
{
    static const char text[] =
        "\t4005dc\n 0x4005b0/0x4005c0/P/-/-/0 0x4005c8/0x4005d0/P/-/-/0\n"
        "\n"
        " 0x1/0x2/P/-/-/0 0x3/0x4/P/-/-/0\n"
        "\n"
        "\t4005dc\n 0x4005b0/0x4005c0/P/-/-/0 0x4005c8/0x4005d0/P/-/-/0\n"
        "\n";
    mem_input m = open_text(text);
    const lp_pscript_stats *st;
    const lp_event *ev;
    lp_error e;
    int n = 0;
    (void)state;

    while (lp_pscript_next(m.p, &ev, &e) == 1)
        n++;
    st = lp_pscript_stats_get(m.p);
    assert_int_equal(n, 2);
    assert_int_equal(st->samples_seen, 5);
    assert_int_equal(st->skipped_lines, 4);
    close_text(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llvm_profgen_inputs),
        cmocka_unit_test(test_lbr_flags),
        cmocka_unit_test(test_mmap_lines),
        cmocka_unit_test(test_hybrid_and_counts),
        cmocka_unit_test(test_block_cache),
        cmocka_unit_test(test_block_cache_full),
        cmocka_unit_test(test_block_cache_two_ways),
        cmocka_unit_test(test_blank_line_sample_starts),
        cmocka_unit_test(test_quirks),
        cmocka_unit_test(test_hex_widths),
        cmocka_unit_test(test_error_no_lbr_line),
        cmocka_unit_test(test_error_hybrid_eof),
        cmocka_unit_test(test_empty_input),
        cmocka_unit_test(test_binary_input),
        cmocka_unit_test(test_prefix_and_streaming),
        cmocka_unit_test(test_via_reader),
        cmocka_unit_test(test_sniff),
        cmocka_unit_test(test_hex_run_fast),
        cmocka_unit_test(test_br_token_fixed),
        cmocka_unit_test(test_br_token_differential),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
