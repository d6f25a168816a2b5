/*
 * test_prefetch.c - unit tests for src/reader/prefetch.c (the text parser
 * on its own thread): events through the prefetcher, from a file,
 * equal those of the parser called directly on the same bytes through a
 * memory stream - contents, order, offsets, the samples-seen count at each
 * event, and the error at the end - across batch boundaries, arena
 * overflow, an event larger than a whole arena, and cached samples the
 * consumer makes from references; stopping early joins; the consumer's
 * idle function runs while it waits, and LBR2PROF_IDLE forces it
 * (before every event, the first N, never).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "reader/prefetch.h"

typedef struct text {
    char *s;
    size_t len, cap;
} text;

static void put(text *t, const char *fmt, ...)
{
    va_list ap;
    int n;

    for (;;) {
        va_start(ap, fmt);
        n = vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        assert_true(n >= 0);
        if ((size_t)n < t->cap - t->len)
            break;
        t->cap = t->cap * 2 + (size_t)n + 1;
        t->s = realloc(t->s, t->cap);
        assert_non_null(t->s);
    }
    t->len += (size_t)n;
}

/* One hybrid sample: 3 frames, nbr LBR entries, all from `seed`. */
static void sample(text *t, unsigned seed, unsigned nbr)
{
    unsigned i;

    put(t, "\t%x\n\t%x\n\t%x\n", 0x401000 + seed, 0x402000 + seed % 7,
        0x403000);
    for (i = 0; i < nbr; i++)
        put(t, " 0x%x/0x%x/%s/-/-/%u", 0x401000 + (seed * 31 + i) % 4096,
            0x402000 + (seed + i) % 512, i % 3 ? "P" : "M", i % 5);
    put(t, "\n");
}

/* Samples (some repeated, some aggregated, some with long LBR lines, one
 * longer than a batch arena), MMAP lines in between, then a hybrid sample
 * cut short: an error after everything else. */
static text make_input(void)
{
    text t = {malloc(1 << 16), 0, 1 << 16};
    unsigned i;

    assert_non_null(t.s);
    for (i = 0; i < 3000; i++) {
        if (i % 700 == 0)
            put(&t, "PERF_RECORD_MMAP2 %u/%u: [0x400000(0x%x) @ 0 08:01 %u 0]:"
                    " r-xp /usr/bin/prog%u\n", 10 + i, 10 + i, 0x1000 + i,
                i, i);
        if (i % 11 == 0)
            put(&t, "%u\n", 2 + i % 4);
        sample(&t, i % 50 == 7 ? 7 : i,
               i == 1500 ? 20000 : i % 97 == 3 ? 2000 : 16 + i % 17);
    }
    put(&t, "\t4005dc\n\t400634\n");
    return t;
}

static int expect_same(const lp_event *a, const lp_event *b)
{
    const lp_sample *x = &a->u.sample, *y = &b->u.sample;

    assert_int_equal(a->kind, b->kind);
    assert_int_equal(a->type, b->type);
    assert_int_equal(a->offset, b->offset);
    assert_string_equal(a->source, b->source);
    if (a->kind == LP_EV_MMAP) {
        assert_string_equal(a->u.mmap.filename, b->u.mmap.filename);
        assert_int_equal(a->u.mmap.len, b->u.mmap.len);
        assert_int_equal(a->u.mmap.ino, b->u.mmap.ino);
        return 0;
    }
    assert_int_equal(x->repeat, y->repeat);
    assert_int_equal(x->dup_id, y->dup_id);
    assert_true((x->attr == NULL) == (y->attr == NULL));
    if (x->attr)
        assert_int_equal(x->attr->branch_sample_type,
                         y->attr->branch_sample_type);
    assert_int_equal(x->ip, y->ip);
    assert_int_equal(x->sample_type, y->sample_type);
    assert_int_equal(x->callchain_nr, y->callchain_nr);
    assert_int_equal(x->branch_nr, y->branch_nr);
    assert_memory_equal(x->callchain, y->callchain,
                        x->callchain_nr * sizeof *x->callchain);
    assert_memory_equal(x->branches, y->branches,
                        x->branch_nr * sizeof *x->branches);
    return (int)x->branch_nr;
}

static char *write_tmp(const text *t)
{
    char *path = strdup("/tmp/lbr2prof-prefetch-XXXXXX");
    int fd;

    assert_non_null(path);
    fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, t->s, t->len), (ssize_t)t->len);
    close(fd);
    return path;
}

static void test_same_events(void **state)
{
    text t = make_input();
    char *path = write_tmp(&t);
    FILE *mf = fmemopen(t.s, t.len, "r"), *ff = fopen(path, "r");
    lp_error e1, e2;
    lp_pscript *direct = lp_pscript_open(mf, NULL, 0, "x.txt", &e1);
    lp_pscript *fromfile = lp_pscript_open(ff, NULL, 0, "x.txt", &e2);
    lp_pfetch *pf = lp_pfetch_new(fromfile, &e2);
    const lp_event *a, *b;
    uint64_t seen, n = 0, mmaps = 0, maxbr = 0, cached = 0;
    int r1, r2;
    (void)state;

    assert_non_null(direct);
    assert_non_null(pf);
    for (;;) {
        r1 = lp_pscript_next(direct, &a, &e1);
        r2 = lp_pfetch_next(pf, &b, &seen, &e2);
        assert_int_equal(r1, r2);
        if (r1 <= 0)
            break;
        int br = expect_same(a, b);
        maxbr = (uint64_t)br > maxbr ? (uint64_t)br : maxbr;
        mmaps += a->kind == LP_EV_MMAP;
        cached += a->kind == LP_EV_SAMPLE && a->u.sample.dup_id != 0 &&
                  n > 100; /* later repeats: references */
        assert_int_equal(seen, lp_pscript_stats_get(direct)->samples_seen);
        n++;
    }
    assert_int_equal(r1, -1);
    assert_string_equal(e1.msg, e2.msg);
    assert_non_null(strstr(e2.msg, "hybrid sample is corrupted"));
    assert_int_equal(seen, lp_pscript_stats_get(direct)->samples_seen);
    /* the input really crossed many batches and overflowed an arena */
    assert_int_equal(n, 3000 + 5);
    assert_int_equal(mmaps, 5);
    assert_int_equal(maxbr, 20000);
    assert_true(cached >= 50);
    /* the end is sticky */
    assert_int_equal(lp_pfetch_next(pf, &b, &seen, &e2), -1);
    lp_pfetch_free(pf);
    assert_int_equal(lp_pscript_stats_get(fromfile)->samples,
                     lp_pscript_stats_get(direct)->samples);
    lp_pscript_close(direct);
    lp_pscript_close(fromfile);
    fclose(mf);
    fclose(ff);
    unlink(path);
    free(path);
    free(t.s);
}

/* A consumer that stops early: freeing stops and joins the thread while
 * it waits for a free batch (nothing leaks under ASan, nothing hangs). */
static void test_early_stop(void **state)
{
    text t = make_input();
    FILE *mf = fmemopen(t.s, t.len, "r");
    lp_error e;
    lp_pscript *p = lp_pscript_open(mf, NULL, 0, "x.txt", &e);
    lp_pfetch *pf = lp_pfetch_new(p, &e);
    const lp_event *ev;
    uint64_t seen;
    int i;
    (void)state;

    assert_non_null(pf);
    for (i = 0; i < 10; i++)
        assert_int_equal(lp_pfetch_next(pf, &ev, &seen, &e), 1);
    usleep(20000);              /* let the producer fill every batch */
    lp_pfetch_free(pf);
    lp_pscript_close(p);
    fclose(mf);
    free(t.s);
}

/* The public reader on a file path goes through the prefetcher and gives
 * the same sample count and text_sample_starts as the parser. */
static void test_via_reader_file(void **state)
{
    text t = make_input();
    char *path = write_tmp(&t);
    lp_error e;
    lp_reader *r = lp_reader_open(path, NULL, &e);
    const lp_event *ev;
    uint64_t samples = 0;
    int rc;
    (void)state;

    assert_non_null(r);
    while ((rc = lp_reader_next(r, &ev, &e)) == 1)
        samples += ev->kind == LP_EV_SAMPLE;
    assert_int_equal(rc, -1);
    assert_int_equal(samples, 3000);
    assert_int_equal(lp_reader_stats_get(r)->text_sample_starts, 3001);
    /* progress: the file's size, and how far the parser got */
    uint64_t done, total;
    lp_reader_progress(r, &done, &total);
    assert_int_equal(total, t.len);
    assert_true(done > t.len / 2 && done <= t.len);
    lp_reader_close(r);
    unlink(path);
    free(path);
    free(t.s);
}

/* With lp_reader_defer_arrays, cached samples come without their arrays
 * (NULL, the counts and dup_id set) and lp_reader_arrays makes them: then
 * the same event as the parser's. Made for some deferred samples only
 * (a consumer needs them for few); a sample that came with its arrays is
 * left as it is. */
static void test_deferred_arrays(void **state)
{
    text t = make_input();
    char *path = write_tmp(&t);
    FILE *mf = fmemopen(t.s, t.len, "r");
    lp_error e1, e2;
    lp_pscript *direct = lp_pscript_open(mf, NULL, 0, path, &e1);
    lp_reader *r = lp_reader_open(path, NULL, &e2);
    const lp_event *a, *b;
    uint64_t n = 0, deferred = 0, whole = 0;
    int r1, r2;
    (void)state;

    assert_non_null(direct);
    assert_non_null(r);
    lp_reader_defer_arrays(r);
    while ((r1 = lp_pscript_next(direct, &a, &e1)) == 1) {
        assert_int_equal(r2 = lp_reader_next(r, &b, &e2), 1);
        const lp_sample *y = &b->u.sample;
        if (b->kind == LP_EV_SAMPLE && y->arrays_deferred) {
            assert_null(y->callchain);
            assert_null(y->branches);
            assert_int_equal(y->callchain_nr, a->u.sample.callchain_nr);
            assert_int_equal(y->dup_id, a->u.sample.dup_id);
            assert_int_equal(y->repeat, a->u.sample.repeat);
            if (deferred++ % 3)
                continue;
            assert_int_equal(lp_reader_arrays(r, y, &e2), 0);
            assert_int_equal(y->arrays_deferred, 0);
        } else if (b->kind == LP_EV_SAMPLE) {
            const uint64_t *cc = y->callchain;
            assert_int_equal(lp_reader_arrays(r, y, &e2), 0);
            assert_ptr_equal(y->callchain, cc);
            whole++;
        }
        expect_same(a, b);
        n++;
    }
    assert_int_equal(r1, -1);
    assert_int_equal(lp_reader_next(r, &b, &e2), -1);
    assert_true(deferred >= 40);        /* the repeats of seed 7 */
    assert_true(whole >= 2000);         /* the others, parsed */
    assert_true(n > 1000);
    lp_reader_close(r);
    lp_pscript_close(direct);
    fclose(mf);
    unlink(path);
    free(path);
    free(t.s);
}

/* The idle function runs on the consumer's thread while no batch is
 * ready: the parser reads a pipe that a writer thread fills only once the
 * idle function has run, so the first event cannot come before it (the
 * writer gives up waiting after 5 s, and the test then fails instead of
 * hanging). */
typedef struct idle_ctx {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int fd, calls, go;
    text t;
} idle_ctx;

static int on_idle(void *arg)
{
    idle_ctx *c = arg;

    pthread_mutex_lock(&c->mu);
    c->calls++;
    c->go = 1;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    return c->calls < 3;        /* a few calls, then "nothing left" */
}

static void *writer(void *arg)
{
    idle_ctx *c = arg;
    struct timespec until;
    size_t off = 0;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    pthread_mutex_lock(&c->mu);
    while (!c->go &&
           pthread_cond_timedwait(&c->cv, &c->mu, &until) == 0)
        ;
    pthread_mutex_unlock(&c->mu);
    while (off < c->t.len) {
        ssize_t w = write(c->fd, c->t.s + off, c->t.len - off);
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    close(c->fd);
    return NULL;
}

static void test_idle_runs_while_waiting(void **state)
{
    idle_ctx c = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, -1, 0,
                  0, make_input()};
    int fds[2], calls;
    pthread_t wr;
    FILE *rf;
    lp_error e;
    lp_pscript *p;
    lp_pfetch *pf;
    const lp_event *ev;
    uint64_t seen, n = 0;
    int rc;
    (void)state;

    assert_int_equal(pipe(fds), 0);
    c.fd = fds[1];
    assert_non_null(rf = fdopen(fds[0], "r"));
    assert_non_null(p = lp_pscript_open(rf, NULL, 0, "pipe", &e));
    assert_non_null(pf = lp_pfetch_new(p, &e));
    lp_pfetch_set_idle(pf, on_idle, &c);
    assert_int_equal(pthread_create(&wr, NULL, writer, &c), 0);
    while ((rc = lp_pfetch_next(pf, &ev, &seen, &e)) == 1)
        n++;
    pthread_join(wr, NULL);
    pthread_mutex_lock(&c.mu);
    calls = c.calls;
    pthread_mutex_unlock(&c.mu);
    assert_int_equal(rc, -1);   /* make_input ends with a broken sample */
    assert_int_equal(n, 3000 + 5);
    assert_true(calls >= 1);
    lp_pfetch_free(pf);
    lp_pscript_close(p);
    fclose(rf);
    free(c.t.s);
}

/* LBR2PROF_IDLE's idle work: one unit per event handed over so far,
 * as the unwinder's (one per distinct sample so far). */
typedef struct units {
    uint64_t seen, done, calls;
} units;

static int unit_of_work(void *arg)
{
    units *u = arg;

    u->calls++;
    if (u->done == u->seen)
        return 0;
    u->done++;
    return 1;
}

/* Every event of make_input through a prefetcher made with LBR2PROF_IDLE
 * set to `mode`; *ok: every event came with the work up to the one
 * before done (mode "always"). */
static units run_idle(const char *mode, bool *ok)
{
    text t = make_input();
    FILE *mf = fmemopen(t.s, t.len, "r");
    lp_error e;
    lp_pscript *p = lp_pscript_open(mf, NULL, 0, "x.txt", &e);
    lp_pfetch *pf;
    const lp_event *ev;
    units u = {0, 0, 0};
    uint64_t seen;

    assert_non_null(p);
    setenv("LBR2PROF_IDLE", mode, 1);
    pf = lp_pfetch_new(p, &e);
    unsetenv("LBR2PROF_IDLE");  /* read when the ring is made */
    assert_non_null(pf);
    lp_pfetch_set_idle(pf, unit_of_work, &u);
    *ok = true;
    while (lp_pfetch_next(pf, &ev, &seen, &e) == 1)
        *ok &= u.done == u.seen++;
    lp_pfetch_free(pf);
    lp_pscript_close(p);
    fclose(mf);
    free(t.s);
    return u;
}

/* LBR2PROF_IDLE=always: the work is done up to the last event before
 * each one is handed over (and before the end); =5: before the first
 * five only (the work of 4 events); =never: the function is never
 * called, though a consumer that starts before the producer waits. */
static void test_idle_forced(void **state)
{
    units u;
    bool ok;
    (void)state;

    u = run_idle("always", &ok);
    assert_true(ok);
    assert_int_equal(u.seen, 3000 + 5);
    assert_int_equal(u.done, 3000 + 5);
    u = run_idle("5", &ok);
    assert_int_equal(u.done, 4);
    assert_int_equal(u.calls, 4 + 5);   /* each time, one more that finds none */
    u = run_idle("never", &ok);
    assert_int_equal(u.calls, 0);
    assert_int_equal(u.seen, 3000 + 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_events),
        cmocka_unit_test(test_early_stop),
        cmocka_unit_test(test_via_reader_file),
        cmocka_unit_test(test_deferred_arrays),
        cmocka_unit_test(test_idle_runs_while_waiting),
        cmocka_unit_test(test_idle_forced),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
