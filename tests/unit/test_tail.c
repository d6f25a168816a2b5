/*
 * test_tail.c - src/reader/tail.c: the back part of a mapped perf.data
 * read on a second thread and its samples delivered folded (each distinct
 * sample once, with its count). Each case reads the same file twice: with
 * lp_reader_opts.fold_repeats and LBR2PROF_DATA_SPLIT forcing the split at a
 * given byte, and as it always was. Both must give the same events once
 * samples are folded the way a consumer folds them (consecutive samples
 * between two other events: counts per distinct sample, in the order of
 * first occurrence; FINISHED_ROUNDs left out), the same statistics, the
 * same end (error text, warnings) and position; and the split must have
 * happened, or not, as the case expects.
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
#include <unistd.h>

#include "helpers/pdwriter.h"
#include "lbr2prof/reader.h"

#define ST_BASIC (LP_SAMPLE_IP | LP_SAMPLE_TID | LP_SAMPLE_TIME | LP_SAMPLE_PERIOD)
#define ST_CPU (ST_BASIC | LP_SAMPLE_CPU)

/* ---- writing ------------------------------------------------------------- */

static void w_trailer(pw *d, uint32_t pid, uint64_t t, uint64_t st)
{
    pw_u32(d, pid);
    pw_u32(d, pid);
    pw_u64(d, t);
    if (st & LP_SAMPLE_CPU) {
        pw_u32(d, 0);
        pw_u32(d, 0);
    }
}

static void w_sample(pw *d, uint64_t st, uint64_t ip, uint32_t pid, uint64_t t)
{
    size_t s = pw_rec_begin(d, 9, 2);
    pw_u64(d, ip);
    pw_u32(d, pid);
    pw_u32(d, pid);
    pw_u64(d, t);
    if (st & LP_SAMPLE_CPU) {
        pw_u32(d, (uint32_t)(t % 3)); /* differs between equal samples */
        pw_u32(d, 0);
    }
    pw_u64(d, 1000);
    pw_rec_end(d, s);
}

static void w_round(pw *d)
{
    pw_rec_end(d, pw_rec_begin(d, 68, 0));
}

static void w_mmap(pw *d, uint64_t st, uint32_t pid, uint64_t start, uint64_t t)
{
    pw_mmap(d, pid, start, "/lib", t, (st & LP_SAMPLE_CPU) != 0);
}

static void w_comm(pw *d, uint64_t st, uint32_t pid, uint64_t t)
{
    size_t s = pw_rec_begin(d, 3, 1u << 13);
    pw_u32(d, pid);
    pw_u32(d, pid);
    pw_str(d, "prog");
    w_trailer(d, pid, t, st);
    pw_rec_end(d, s);
}

static void w_fork(pw *d, uint64_t st, uint32_t pid, uint32_t ppid, uint64_t t)
{
    size_t s = pw_rec_begin(d, 7, 0);
    pw_u32(d, pid);
    pw_u32(d, ppid);
    pw_u32(d, pid);
    pw_u32(d, ppid);
    pw_u64(d, t);
    w_trailer(d, pid, t, st);
    pw_rec_end(d, s);
}

/* What a case puts where. */
typedef struct plan {
    uint64_t st;
    int n;             /* samples */
    int round;         /* a FINISHED_ROUND every `round` samples */
    int side_at;       /* MMAP, COMM and FORK before sample side_at (0: none) */
    int back_at;       /* from sample back_at on, times go back (0: none) */
    int back_by;       /* ... by this much (0: 500; rounds are 500 apart) */
    int fake_at;       /* before sample fake_at, a record whose body looks
                          like samples (0: none) */
    int distinct;      /* ips */
    int mark;          /* write_data's *at: sample mark's record */
} plan;

static uint64_t sample_time(const plan *p, int i)
{
    uint64_t t = 1000 + 10 * (uint64_t)i;
    return p->back_at && i >= p->back_at ? t - (p->back_by ? (uint64_t)p->back_by : 500) : t;
}

/* A record of type 20 (unknown to the reader: delivered as OTHER) whose
 * body is 40 samples and then the trailer: a resync inside it finds a
 * chain of plausible samples that the main walk never lands on. */
static void w_fake(pw *d, const plan *p, uint64_t t, size_t *inside)
{
    size_t s = pw_rec_begin(d, 20, 0);
    *inside = d->len;
    for (int i = 0; i < 40; i++)
        w_sample(d, p->st, 0x9000, 1, t);
    w_trailer(d, 1, t, p->st);
    pw_rec_end(d, s);
}

/* The data section; *at: a byte offset of interest (the fake record's
 * inside). */
static void write_data(pw *d, const plan *p, size_t *at)
{
    pw_init(d, 0);
    w_mmap(d, p->st, 1, 0x1000, 1);
    for (int i = 0; i < p->n; i++) {
        uint64_t t = sample_time(p, i);
        if (p->side_at && i == p->side_at) {
            w_mmap(d, p->st, 1, 0x5000, t);
            w_comm(d, p->st, 1, t);
            w_fork(d, p->st, 2, 1, t);
        }
        if (p->fake_at && i == p->fake_at)
            w_fake(d, p, t, at);
        else if (p->mark && i == p->mark)
            *at = d->len;
        w_sample(d, p->st, 0x1000 + (uint64_t)(i * 7 % p->distinct), i % 5 == 0 ? 2 : 1,
                 t);
        if (i % p->round == p->round - 1)
            w_round(d);
    }
}

static char *write_file(const plan *p, size_t *at, size_t *doff, size_t cut)
{
    static int seq;
    pw d, f;
    pw_attr a = {.type = 1, .sample_period = 4000, .sample_type = p->st,
                 .flags = PW_FLAG_SAMPLE_ID_ALL};
    char *path = malloc(64);

    write_data(&d, p, at);
    pw_file(&f, 0, &a, 1, 128, &d, NULL, 0);
    /* the data section is the last part of the file before the features:
     * find it by its bytes */
    *doff = 0;
    for (size_t i = 0; i + d.len <= f.len; i += 8)
        if (!memcmp(f.b + i, d.b, d.len)) {
            *doff = i;
            break;
        }
    assert_true(*doff > 0);
    snprintf(path, 64, "/tmp/test_tail.%d.%d.data", (int)getpid(), seq++);
    FILE *o = fopen(path, "wb");
    assert_non_null(o);
    size_t len = cut ? *doff + cut : f.len;
    assert_int_equal(fwrite(f.b, 1, len, o), len);
    fclose(o);
    pw_free(&d);
    pw_free(&f);
    return path;
}

/* The file cut 1000 bytes before the end of its data (inside a record of
 * the last rounds). */
static char *write_cut_file(const plan *p)
{
    size_t at = 0, doff;
    pw d;

    write_data(&d, p, &at);
    size_t cut = d.len - 1000;
    pw_free(&d);
    return write_file(p, &at, &doff, cut);
}

/* ---- reading and folding ----------------------------------------------- */

typedef struct run_item {
    uint64_t ip, count;
    uint32_t pid;
} run_item;

typedef struct folded {
    char *text;        /* the folded events, one line each */
    size_t len, cap;
    run_item *run;     /* the samples since the last other event */
    size_t nrun;
    uint64_t sample_events;
    char warn[1100];
    int rc;
    char err[1100];
    lp_reader_stats stats;
    uint64_t done, total;
} folded;

static void put(folded *f, const char *fmt, ...)
{
    char line[256];
    va_list ap;

    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (f->len + (size_t)n + 1 > f->cap) {
        f->cap = (f->len + (size_t)n + 1) * 2;
        f->text = realloc(f->text, f->cap);
        assert_non_null(f->text);
    }
    memcpy(f->text + f->len, line, (size_t)n + 1);
    f->len += (size_t)n;
}

static void end_run(folded *f)
{
    for (size_t i = 0; i < f->nrun; i++)
        put(f, "S %u %" PRIx64 " x%" PRIu64 "\n", f->run[i].pid, f->run[i].ip,
            f->run[i].count);
    f->nrun = 0;
}

static void fold_sample(folded *f, const lp_sample *s)
{
    uint64_t n = s->repeat ? s->repeat : 1;

    for (size_t i = 0; i < f->nrun; i++)
        if (f->run[i].ip == s->ip && f->run[i].pid == s->pid) {
            f->run[i].count += n;
            return;
        }
    f->run = realloc(f->run, (f->nrun + 1) * sizeof *f->run);
    assert_non_null(f->run);
    f->run[f->nrun++] = (run_item){s->ip, n, s->pid};
}

/* Done with an input: removed, or with LBR2PROF_TAIL_SEEDS=DIR kept there
 * as a seed for tests/fuzz/fuzz_tail.c (scripts/fuzz-tail.sh). */
static void drop(const char *path)
{
    const char *dir = getenv("LBR2PROF_TAIL_SEEDS");
    char to[256], buf[65536];
    size_t n;

    if (dir && *dir) {
        snprintf(to, sizeof to, "%s/%s", dir, strrchr(path, '/') + 1);
        FILE *in = fopen(path, "rb"), *out = fopen(to, "wb");
        assert_non_null(in);
        assert_non_null(out);
        while ((n = fread(buf, 1, sizeof buf, in)) > 0)
            assert_int_equal(fwrite(buf, 1, n, out), n);
        fclose(in);
        assert_int_equal(fclose(out), 0);
    }
    unlink(path);
}

static void keep_warning(void *ctx, const char *msg)
{
    folded *f = ctx;
    snprintf(f->warn, sizeof f->warn, "%s", msg);
}

static void read_folded(const char *path, int split, const char *env,
                        lp_order order, folded *f)
{
    lp_reader_opts o = {.order = order, .fold_repeats = split,
                        .warn = keep_warning, .warn_ctx = f};
    const lp_event *ev;
    lp_error err;

    memset(f, 0, sizeof *f);
    if (split)
        setenv("LBR2PROF_DATA_SPLIT", env, 1);
    lp_reader *r = lp_reader_open(path, &o, &err);
    unsetenv("LBR2PROF_DATA_SPLIT");
    assert_non_null(r);
    while ((f->rc = lp_reader_next(r, &ev, &err)) == 1) {
        if (ev->kind == LP_EV_SAMPLE) {
            f->sample_events++;
            fold_sample(f, &ev->u.sample);
        } else if (ev->kind != LP_EV_FINISHED_ROUND) {
            end_run(f);
            put(f, "%s %" PRIu64 " @%" PRIu64 "\n", lp_event_kind_name(ev->kind),
                ev->time, ev->offset);
        }
    }
    end_run(f);
    if (f->rc < 0)
        snprintf(f->err, sizeof f->err, "%s", err.msg);
    f->stats = *lp_reader_stats_get(r);
    lp_reader_progress(r, &f->done, &f->total);
    lp_reader_close(r);
}

static void folded_free(folded *f)
{
    free(f->text);
    free(f->run);
}

/* Reads `path` both ways; split: whether the split must have happened. */
static void compare(const char *path, const char *env, lp_order order, int split)
{
    folded a, b;

    read_folded(path, 0, NULL, order, &a);
    read_folded(path, 1, env, order, &b);
    assert_string_equal(a.text ? a.text : "", b.text ? b.text : "");
    assert_memory_equal(&a.stats, &b.stats, sizeof a.stats);
    assert_int_equal(a.rc, b.rc);
    assert_string_equal(a.err, b.err);
    assert_string_equal(a.warn, b.warn);
    assert_int_equal(a.done, b.done);
    assert_int_equal(a.total, b.total);
    assert_int_equal(a.sample_events, a.stats.samples);
    if (split)
        assert_true(b.sample_events + 500 < a.sample_events);
    else
        assert_int_equal(b.sample_events, a.sample_events);
    folded_free(&a);
    folded_free(&b);
}

static const plan BASE = {.st = ST_BASIC, .n = 3000, .round = 50, .distinct = 37};

/* env "@" splits inside sample p->mark's record (at its second word). */
static void check(const plan *p, const char *env, lp_order order, int split)
{
    size_t at = 0, doff;
    char *path = write_file(p, &at, &doff, 0);
    char buf[64];

    if (!strcmp(env, "@")) {
        snprintf(buf, sizeof buf, "%zu", at + 8);
        env = buf;
    }
    compare(path, env, order, split);
    drop(path);
    free(path);
}

/* ---- cases ------------------------------------------------------------- */

/* Only samples after the split: folded, same events, both orders, with and
 * without CPU in the samples (a field left out of the key); a split point
 * inside a record resyncs to the next boundary. */
static void test_plain(void **state)
{
    plan p = BASE;
    (void)state;

    check(&p, "40%", LP_ORDER_TIME, 1);
    check(&p, "40%", LP_ORDER_FILE, 1);
    check(&p, "12345", LP_ORDER_TIME, 1);
    p.st = ST_CPU;
    check(&p, "55%", LP_ORDER_TIME, 1);
}

/* MMAP, COMM and FORK after the split point: the region ends before them
 * and the walk reads them itself. */
static void test_side_band(void **state)
{
    plan p = BASE;
    (void)state;

    p.side_at = 2000;
    check(&p, "30%", LP_ORDER_TIME, 1);
    check(&p, "30%", LP_ORDER_FILE, 1);
    p.side_at = 1300; /* less than two rounds after the split point */
    p.mark = 1260;
    check(&p, "@", LP_ORDER_TIME, 0);
}

/* Timestamps going back: after the split point (the region ends there),
 * and across it (the head queued later times than the region's first:
 * discarded). */
static void test_out_of_order(void **state)
{
    plan p = BASE;
    (void)state;

    p.back_at = 2200;
    check(&p, "30%", LP_ORDER_TIME, 1);
    check(&p, "30%", LP_ORDER_FILE, 1);
    /* back below the region's last round: queued below the last flush
     * (stats.out_of_order), as walking the region leaves it */
    p.back_by = 700;
    check(&p, "30%", LP_ORDER_TIME, 1);
    p.back_by = 1200;
    check(&p, "30%", LP_ORDER_TIME, 1);
    p.back_by = 0;
    p.back_at = 1190;   /* the head's last times are later than the
                           region's first */
    p.mark = 1200;
    check(&p, "@", LP_ORDER_TIME, 0);
    check(&p, "@", LP_ORDER_FILE, 1); /* file order: no queue to mind */
}

/* A resync candidate inside a record (a chain of sample-like bytes): the
 * main walk steps over it, the speculation is dropped. */
static void test_wrong_boundary(void **state)
{
    plan p = BASE;
    size_t at = 0, doff;
    char env[64];
    (void)state;

    p.fake_at = 1500;
    char *path = write_file(&p, &at, &doff, 0);
    snprintf(env, sizeof env, "%zu", at - 8); /* the fake record's header */
    compare(path, env, LP_ORDER_TIME, 0);
    drop(path);
    free(path);
}

/* The table's cap: the region ends where it is reached. */
static void test_cap(void **state)
{
    plan p = BASE;
    (void)state;

    p.distinct = 3000; /* every sample its own */
    check(&p, "40%,500", LP_ORDER_TIME, 0);
    folded a;
    size_t at, doff;
    char *path = write_file(&p, &at, &doff, 0);
    read_folded(path, 1, "40%,500", LP_ORDER_TIME, &a);
    /* all distinct: the region held < 500 samples, the rest walked */
    assert_true(a.sample_events == 3000);
    folded_free(&a);
    p.distinct = 37;
    drop(path);
    free(path);
    check(&p, "40%,10", LP_ORDER_TIME, 0); /* < one round: nothing */
    check(&p, "40%,200", LP_ORDER_TIME, 1);
}

/* A file cut inside a record of the tail, and a corrupt record there:
 * the same warning or error, at the same offset, as reading it whole. */
static void test_cut_and_corrupt(void **state)
{
    plan p = BASE;
    size_t at, doff;
    folded a;
    (void)state;

    /* cut: the region ends two rounds before; the walk reports the cut */
    char *path;
    {
        path = write_cut_file(&p);
        compare(path, "40%", LP_ORDER_TIME, 1);
        read_folded(path, 1, "40%", LP_ORDER_TIME, &a);
        assert_non_null(strstr(a.warn, "cut off"));
        folded_free(&a);
        drop(path);
        free(path);
    }
    /* corrupt: a record size of 4 at sample 2500 */
    path = write_file(&p, &at, &doff, 0);
    {
        pw d;
        write_data(&d, &p, &at);
        /* find sample 2500's record: the 2500th header of type 9 */
        size_t off = 0;
        int k = -1;
        while (off < d.len) {
            uint32_t type;
            uint16_t size;
            memcpy(&type, d.b + off, 4);
            memcpy(&size, d.b + off + 6, 2);
            if (type == 9 && ++k == 2500)
                break;
            off += size;
        }
        FILE *o = fopen(path, "r+b");
        uint16_t bad = 4;
        assert_non_null(o);
        fseek(o, (long)(doff + off + 6), SEEK_SET);
        fwrite(&bad, 2, 1, o);
        fclose(o);
        pw_free(&d);
    }
    compare(path, "40%", LP_ORDER_TIME, 1);
    read_folded(path, 1, "40%", LP_ORDER_TIME, &a);
    assert_int_equal(a.rc, -1);
    assert_non_null(strstr(a.err, "size 4"));
    folded_free(&a);
    drop(path);
    free(path);
}

/* The region in pieces ("/K": a piece every K rounds, each delivered
 * while the tail walks on): the same folded events as walking it, with
 * side-band records, times going back, the cap per piece, a cut file;
 * and the pieces happened (a sample repeated across pieces is delivered
 * once per piece). */
static void test_pieces(void **state)
{
    plan p = BASE;
    size_t at, doff;
    folded one, many;
    (void)state;

    p.distinct = 10;    /* a piece a round: folded enough to tell */
    check(&p, "40%/1", LP_ORDER_TIME, 1);
    p.distinct = 37;
    check(&p, "40%/3", LP_ORDER_TIME, 1);
    check(&p, "40%/3", LP_ORDER_FILE, 1);
    /* the cap per piece: a commit needs room for its round's 50 samples
     * beside the piece's distinct ones */
    check(&p, "40%,120/2", LP_ORDER_TIME, 1);
    check(&p, "40%,45/2", LP_ORDER_TIME, 0);
    char *path = write_file(&p, &at, &doff, 0);
    read_folded(path, 1, "40%", LP_ORDER_TIME, &one);
    read_folded(path, 1, "40%/2", LP_ORDER_TIME, &many);
    assert_true(many.sample_events > one.sample_events + 37 * 10);
    folded_free(&one);
    folded_free(&many);
    drop(path);
    free(path);
    p.side_at = 2000;
    check(&p, "30%/4", LP_ORDER_TIME, 1);
    p.side_at = 0;
    p.back_at = 2200;
    p.back_by = 700;
    check(&p, "30%/4", LP_ORDER_TIME, 1);
    p.back_at = 0;
    p.back_by = 0;
    path = write_cut_file(&p);
    compare(path, "40%/2", LP_ORDER_TIME, 1);
    drop(path);
    free(path);
}

/* Without fold_repeats, or with LBR2PROF_DATA_SPLIT=0, nothing is folded. */
static void test_off(void **state)
{
    plan p = BASE;
    size_t at, doff;
    folded a;
    (void)state;

    char *path = write_file(&p, &at, &doff, 0);
    check(&p, "0", LP_ORDER_TIME, 0);
    read_folded(path, 0, NULL, LP_ORDER_TIME, &a);
    assert_int_equal(a.sample_events, 3000);
    folded_free(&a);
    drop(path);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain),
        cmocka_unit_test(test_side_band),
        cmocka_unit_test(test_out_of_order),
        cmocka_unit_test(test_wrong_boundary),
        cmocka_unit_test(test_cap),
        cmocka_unit_test(test_cut_and_corrupt),
        cmocka_unit_test(test_off),
        cmocka_unit_test(test_pieces),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
