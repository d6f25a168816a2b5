/*
 * test_pstail.c - unit tests for the tail of perf script text counted on
 * a second thread (src/reader/pstail.c, and its use in perfscript.c):
 * the text parsed with the tail forced at every offset of small files
 * (LBR2PROF_TEXT_SPLIT=OFFSET) must give what the sequential parse gives:
 * the same MMAP events in the same places, between two of them the same
 * samples with the same total repeat and number of input samples
 * (lp_sample.calls), first seen in the same order, the same statistics
 * and the same error (line numbers included). Inputs: hybrid and LBR-only
 * text with MMAP lines, count lines, comments, broken LBR tokens and
 * frame lines, event names, and a file that ends in a broken sample.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader/perfscript.h"

/* One distinct sample of an epoch (the samples between two MMAPs). */
typedef struct agg {
    char *key;
    uint64_t repeat, calls;
} agg;

typedef struct view {
    char *out;          /* the epochs, serialized */
    size_t len, cap;
    agg *a;
    size_t na, cap_a;
    lp_pscript_stats st;
    int rc;
    char err[LP_ERRMSG_MAX];
} view;

static void put(view *v, const char *s)
{
    size_t n = strlen(s);

    if (v->len + n + 1 > v->cap) {
        v->cap = (v->len + n + 1) * 2;
        v->out = realloc(v->out, v->cap);
        assert_non_null(v->out);
    }
    memcpy(v->out + v->len, s, n + 1);
    v->len += n;
}

/* The samples of the epoch so far, in first-occurrence order. */
static void flush_epoch(view *v)
{
    char line[64];
    size_t i;

    for (i = 0; i < v->na; i++) {
        put(v, v->a[i].key);
        snprintf(line, sizeof line, " r=%" PRIu64 " c=%" PRIu64 "\n",
                 v->a[i].repeat, v->a[i].calls);
        put(v, line);
        free(v->a[i].key);
    }
    v->na = 0;
}

static void add_sample(view *v, const lp_sample *s)
{
    char key[4096];
    size_t i, n;

    n = (size_t)snprintf(key, sizeof key, "S %s %" PRIx64 " %" PRIx64 " f",
                         s->attr && s->attr->name ? s->attr->name : "-",
                         s->sample_type, s->ip);
    for (i = 0; i < s->callchain_nr && n < sizeof key - 64; i++)
        n += (size_t)snprintf(key + n, sizeof key - n, " %" PRIx64, s->callchain[i]);
    n += (size_t)snprintf(key + n, sizeof key - n, " b");
    for (i = 0; i < s->branch_nr && n < sizeof key - 64; i++)
        n += (size_t)snprintf(key + n, sizeof key - n, " %" PRIx64 "/%" PRIx64 "/%" PRIx64,
                              s->branches[i].from, s->branches[i].to,
                              s->branches[i].flags);
    for (i = 0; i < v->na && strcmp(v->a[i].key, key); i++)
        ;
    if (i == v->na) {
        if (v->na == v->cap_a) {
            v->cap_a = v->cap_a ? v->cap_a * 2 : 16;
            v->a = realloc(v->a, v->cap_a * sizeof *v->a);
            assert_non_null(v->a);
        }
        v->a[v->na++] = (agg){strdup(key), 0, 0};
    }
    v->a[i].repeat += s->repeat;
    v->a[i].calls += s->calls ? s->calls : 1;
}

static void add_event(view *v, const lp_event *ev)
{
    char line[512];

    if (ev->kind == LP_EV_SAMPLE) {
        add_sample(v, &ev->u.sample);
        return;
    }
    flush_epoch(v);
    snprintf(line, sizeof line, "M %" PRIx64 " %" PRIx64 " %" PRIx64 " %s\n",
             ev->u.mmap.start, ev->u.mmap.len, ev->u.mmap.pgoff,
             ev->u.mmap.filename);
    put(v, line);
}

/* Parse `f` from its start: the tail at `split` (NULL: none), refs: the
 * cached samples as references (lp_pscript_next_ref). */
static void parse(FILE *f, const char *split, int refs, view *v)
{
    lp_pscript_arrays arr = {0};
    lp_pscript *p;
    lp_error e;
    lp_event made;

    memset(v, 0, sizeof *v);
    rewind(f);
    setenv("LBR2PROF_TEXT_SPLIT", split ? split : "off", 1);
    p = lp_pscript_open(f, NULL, 0, "t.txt", &e);
    unsetenv("LBR2PROF_TEXT_SPLIT");    /* read when the reader opens */
    assert_non_null(p);
    lp_pscript_allow_repeats(p);
    for (;;) {
        const lp_event *ev;
        lp_pscript_ref ref;
        int r = refs ? lp_pscript_next_ref(p, &ev, &ref, &e)
                     : lp_pscript_next(p, &ev, &e);
        if (r == 2) {
            assert_int_equal(lp_pscript_event_of(p, &ref, &made, &arr), 0);
            ev = &made;
        }
        if (r <= 0) {
            v->rc = r;
            if (r < 0)
                snprintf(v->err, sizeof v->err, "%s", e.msg);
            break;
        }
        add_event(v, ev);
    }
    flush_epoch(v);
    v->st = *lp_pscript_stats_get(p);
    lp_pscript_close(p);
    free(arr.frames);
    free(arr.br);
    free(v->a);
}

static void same(const view *a, const view *b, size_t off)
{
    if (strcmp(a->out, b->out) || a->rc != b->rc || strcmp(a->err, b->err))
        fprintf(stderr, "split at %zu:\n--- sequential\n%s%s\n--- split\n%s%s\n",
                off, a->out, a->err, b->out, b->err);
    assert_string_equal(a->out, b->out);
    assert_int_equal(a->rc, b->rc);
    assert_string_equal(a->err, b->err);
    assert_int_equal(a->st.samples_seen, b->st.samples_seen);
    assert_int_equal(a->st.samples, b->st.samples);
    assert_int_equal(a->st.mmaps, b->st.mmaps);
    assert_int_equal(a->st.skipped_lines, b->st.skipped_lines);
    assert_int_equal(a->st.bad_lbr_lines, b->st.bad_lbr_lines);
    assert_int_equal(a->st.bad_mmap_lines, b->st.bad_mmap_lines);
}

static FILE *text_file(const char *text)
{
    FILE *f = tmpfile();

    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    fflush(f);
    return f;
}

/* Whether the tail is tried from `off`: near a line's start or end (where
 * the cases differ), and every third byte in between. */
static int tried(const char *text, size_t n, size_t off)
{
    size_t i;

    for (i = off > 2 ? off - 2 : 0; i <= off + 2 && i < n; i++)
        if (text[i] == '\n')
            return 1;
    return off % 3 == 0;
}

/* The tail forced from (nearly) every offset of `text`, in turn waited
 * for with events and with references (lp_pscript_next_ref), and stopped
 * where the head gets to it, new tails after it ("OFFSET+"): the same as
 * without it. Returns the units the tails counted, summed. */
static uint64_t every_offset(const char *text)
{
    FILE *f = text_file(text);
    size_t n = strlen(text), off;
    uint64_t units = 0;
    view seq, seq_refs, v;
    unsigned k = 0;

    parse(f, NULL, 0, &seq);
    parse(f, NULL, 1, &seq_refs);
    same(&seq, &seq_refs, 0);
    assert_int_equal(seq.st.tail_units, 0);
    for (off = 0; off <= n; off++) {
        char at[32];
        if (!tried(text, n, off))
            continue;
        snprintf(at, sizeof at, k % 3 == 2 ? "%zu+" : "%zu", off);
        parse(f, at, k % 3 != 0, &v);
        same(&seq, &v, off);
        units += v.st.tail_units;
        free(v.out);
        k++;
    }
    free(seq.out);
    free(seq_refs.out);
    fclose(f);
    return units;
}

#define MMAP1 "PERF_RECORD_MMAP2 1/1: [0x400000(0x1000) @ 0 08:01 1 0]: r-xp /bin/a\n"
#define MMAP2 "PERF_RECORD_MMAP2 1/1: [0x500000(0x1000) @ 0x1000 08:01 1 0]: r-xp /bin/a\n"
#define BLK_A "\n\t4005dc\n\t  400600\n 0x4005b0/0x4005c0/P/-/-/0 0x4005c8/0x4005d0/P/-/-/3\n"
#define BLK_B "\n\t4005e0\n 0x4005b4/0x4005c4/M/-/-/0  0x4005cc/0x4005d4/P/-/-/0/COND\n"
#define BLK_C "\n    7f0000001000\n 0x1/0x2/-/-/-/0 0x3/0x4\n"
/* a broken token: the entries before it count, bad_lbr_lines too */
#define BLK_BAD "\n\t4005dc\n 0x4005b0/0x4005c0/P/-/-/0 0xzz/0x1\n"

/* Plain hybrid text: the tail counts most of it, from any offset (the
 * middle of a block: from the next sample on). */
static void test_hybrid_plain(void **state)
{
    (void)state;
    assert_true(every_offset(MMAP1 BLK_A BLK_B BLK_A BLK_A BLK_C BLK_B BLK_A
                             BLK_C BLK_C BLK_A BLK_B "\n") > 0);
}

/* MMAP lines after the split point end the tail's region before them;
 * the head parses them in place and goes on. */
static void test_hybrid_mmap_after_split(void **state)
{
    (void)state;
    assert_true(every_offset(MMAP1 BLK_A BLK_B BLK_A MMAP2 BLK_A BLK_C BLK_B
                             MMAP1 BLK_B BLK_A BLK_C BLK_C "\n") > 0);
}

/* Count lines, comments, broken LBR tokens, broken frame lines, an LBR
 * line without frames, blank line runs, samples without a blank line
 * between them and unparsable MMAP lines in the tail. */
static void test_hybrid_broken_lines(void **state)
{
    (void)state;
    assert_true(every_offset(
        MMAP1 BLK_A BLK_BAD BLK_B BLK_BAD
        "\n3\n\t4005dc\n 0x1/0x2 0x3/0x4\n"             /* a count */
        "\n# a comment\n" BLK_A
        "\n\t4005zz\n 0x1/0x2 0x3/0x4\n" BLK_C          /* not a frame */
        "\n 0x5/0x6 0x7/0x8\n" BLK_A                     /* no frames */
        "\n\n\n" BLK_B
        "\t4005dc\n 0x1/0x2 0x3/0x4\n"                  /* no blank line */
        "\t4005dc\n 0x1/0x2 0x3/0x4\n" BLK_A
        "\n\t12345\n 0x1/0x2 0x3/0x4\n"                  /* decimal frame */
        "PERF_RECORD_MMAP2 1/1: [0x400000(0x1000) @ zz]: r-xp /bin/a\n"
        BLK_BAD BLK_C BLK_A "\n" BLK_A BLK_A) > 0);
}

/* A count line right before a blank line takes it: the head's step never
 * starts at that blank line, so a tail found there is dropped. */
static void test_hybrid_count_before_blank(void **state)
{
    (void)state;
    every_offset(MMAP1 BLK_A "\n7" BLK_B BLK_A BLK_C BLK_A);
}

/* An error after the region: the same message, line number included. */
static void test_hybrid_error_line(void **state)
{
    (void)state;
    every_offset(MMAP1 BLK_A BLK_B BLK_A BLK_C BLK_A "\n\t4005dc\n\t4005dc\n");
}

/* LBR-only text: lines with and without a leading IP, event names, count
 * lines, MMAP lines, blank lines and broken tokens. */
static void test_lbr_only(void **state)
{
    (void)state;
    assert_true(every_offset(
        MMAP1
        "  40065d 0x40068f/0x400650/M/-/-/1 0x1/0x2\n"
        " 0x40068f/0x400650/P/-/-/1 0x3/0x4 0x5/0x6\n"
        "  40065d 0x40068f/0x400650/M/-/-/1 0x1/0x2\n"
        "cycles:  40065d 0x7/0x8 0x9/0xa\n"
        "  40065d 0x40068f/0x400650/M/-/-/1 0x1/0x2\n"
        "5\n"
        " 0x40068f/0x400650/P/-/-/1 0x3/0x4 0x5/0x6\n"
        "\n"
        "  400 0x10/0x20 0x30/0x40 zz 0x50/0x60\n"
        MMAP2
        "  40065d 0x40068f/0x400650/M/-/-/1 0x1/0x2\n"
        "cycles:  40065d 0x7/0x8 0x9/0xa\n"
        "  400 0x10/0x20 0x30/0x40 zz 0x50/0x60\n"
        "  nothex 0x10/0x20 0x30/0x40\n"
        "  40065d 0x40068f/0x400650/M/-/-/1 0x1/0x2\n"
        "cycles:  40065d 0x7/0x8 0x9/0xa\n"
        "  40065d 0x40068f/0x400650/M/-/-/1 0x1/0x2") > 0);
}

/* The cap: with at most two distinct samples the region ends at the
 * third; the head parses the rest. */
static void test_cap(void **state)
{
    static const char text[] = MMAP1 BLK_A BLK_B BLK_A BLK_B BLK_A BLK_C
                               BLK_A BLK_B BLK_C "\n";
    FILE *f = text_file(text);
    view seq, v;
    (void)state;

    parse(f, NULL, 0, &seq);
    setenv("LBR2PROF_TEXT_SPLIT_CAP", "2", 1);
    parse(f, "1", 0, &v);
    unsetenv("LBR2PROF_TEXT_SPLIT_CAP");
    same(&seq, &v, 1);
    assert_int_equal(v.st.tail_units, 5);       /* A B A B A, not C */
    assert_int_equal(v.st.tail_blocks, 2);
    free(v.out);
    setenv("LBR2PROF_TEXT_SPLIT_CAP", "1", 1);
    assert_true(every_offset(text) > 0);
    unsetenv("LBR2PROF_TEXT_SPLIT_CAP");
    free(seq.out);
    fclose(f);
}

/* What the tail hands on: each distinct sample once, its repeat and calls
 * the number of its occurrences, in first-occurrence order. */
static void test_handed_on(void **state)
{
    FILE *f = text_file(MMAP1 BLK_A BLK_B BLK_C BLK_B BLK_B BLK_C "\n");
    lp_pscript *p;
    const lp_event *ev;
    lp_error e;
    (void)state;

    setenv("LBR2PROF_TEXT_SPLIT", "1", 1);  /* from the first sample on */
    rewind(f);
    p = lp_pscript_open(f, NULL, 0, "t.txt", &e);
    unsetenv("LBR2PROF_TEXT_SPLIT");
    lp_pscript_allow_repeats(p);
    assert_int_equal(lp_pscript_next(p, &ev, &e), 1);
    assert_int_equal(ev->kind, LP_EV_MMAP);
    assert_int_equal(lp_pscript_next(p, &ev, &e), 1);
    assert_int_equal(ev->u.sample.callchain[0], 0x4005dc);
    assert_int_equal(ev->u.sample.repeat, 1);
    assert_int_equal(lp_pscript_next(p, &ev, &e), 1);
    assert_int_equal(ev->u.sample.callchain[0], 0x4005e0);
    assert_int_equal(ev->u.sample.repeat, 3);
    assert_int_equal(ev->u.sample.calls, 3);
    assert_int_equal(lp_pscript_next(p, &ev, &e), 1);
    assert_int_equal(ev->u.sample.callchain[0], 0x7f0000001000);
    assert_int_equal(ev->u.sample.repeat, 2);
    assert_int_equal(lp_pscript_next(p, &ev, &e), 0);
    assert_int_equal(lp_pscript_stats_get(p)->tail_units, 6);
    assert_int_equal(lp_pscript_stats_get(p)->samples, 6);
    assert_int_equal(lp_pscript_stats_get(p)->samples_seen, 13);
    lp_pscript_close(p);
    fclose(f);
}

/* The units the tail counted when `f`, at `pos`, is parsed with `prefix`
 * (n bytes) taken from it before, the tail forced from the first byte. */
static uint64_t tail_units(FILE *f, long pos, const char *prefix, size_t n,
                           int allow)
{
    const lp_event *ev;
    lp_pscript *p;
    lp_error e;
    uint64_t u;

    setenv("LBR2PROF_TEXT_SPLIT", "1", 1);
    fseek(f, pos, SEEK_SET);
    p = lp_pscript_open(f, prefix, n, "t.txt", &e);
    unsetenv("LBR2PROF_TEXT_SPLIT");
    assert_non_null(p);
    if (allow)
        lp_pscript_allow_repeats(p);
    while (lp_pscript_next(p, &ev, &e) == 1)
        assert_true(allow || ev->kind != LP_EV_SAMPLE || ev->u.sample.repeat == 1);
    u = lp_pscript_stats_get(p)->tail_units;
    lp_pscript_close(p);
    return u;
}

/* Without lp_pscript_allow_repeats, or from a stream that is not a
 * regular file read from its start, there is no tail. */
static void test_not_allowed(void **state)
{
    static const char text[] = MMAP1 BLK_A BLK_B BLK_A BLK_B "\n";
    FILE *f = text_file(text);
    (void)state;

    assert_int_equal(tail_units(f, 0, NULL, 0, 1), 4);
    assert_int_equal(tail_units(f, 0, NULL, 0, 0), 0);  /* not allowed */
    assert_int_equal(tail_units(f, 3, text, 3, 1), 4);  /* sniffed bytes */
    assert_int_equal(tail_units(f, 5, text, 3, 1), 0);  /* they disagree */
    fclose(f);
}

/* Samples that seldom repeat: the tail ends once more than PT_DISTINCT_MIN
 * (4096) of them are distinct and they are more than half of its units;
 * the head parses the rest. */
static void test_mostly_distinct(void **state)
{
    size_t cap = 1 << 20, n = 0, k;
    char *text = malloc(cap);
    FILE *f;
    view seq, v;
    (void)state;

    assert_non_null(text);
    n += (size_t)sprintf(text, MMAP1);
    for (k = 0; k < 12000; k++)
        n += (size_t)sprintf(text + n, "\n\t%zx\n 0x1/0x2 0x3/0x%zx\n",
                             0x400000 + k % 10000, k % 7);
    f = text_file(text);
    parse(f, NULL, 0, &seq);
    parse(f, "1", 1, &v);
    same(&seq, &v, 1);
    assert_int_equal(v.st.tail_units, 4097);    /* all distinct so far */
    assert_int_equal(v.st.tail_blocks, 4097);
    free(v.out);
    free(seq.out);
    free(text);
    fclose(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hybrid_plain),
        cmocka_unit_test(test_hybrid_mmap_after_split),
        cmocka_unit_test(test_hybrid_broken_lines),
        cmocka_unit_test(test_hybrid_count_before_blank),
        cmocka_unit_test(test_hybrid_error_line),
        cmocka_unit_test(test_lbr_only),
        cmocka_unit_test(test_cap),
        cmocka_unit_test(test_handed_on),
        cmocka_unit_test(test_not_allowed),
        cmocka_unit_test(test_mostly_distinct),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
