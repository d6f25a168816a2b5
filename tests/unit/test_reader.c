/*
 * test_reader.c - unit tests for src/reader (perf.data): every record type
 * and sample layout, built as synthetic byte buffers with helpers/pdwriter,
 * in both byte orders; pipe mode with unaligned records; zstd blocks split
 * inside a record; perf's ordering rules; sample-id lookup; feature
 * sections; directory format; and error messages for malformed input.
 * Real files are checked against perf in tests/e2e/test_reader_vs_perf.sh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "helpers/pdwriter.h"
#include "lbr2prof/reader.h"

#define ST_BASIC (LP_SAMPLE_IP | LP_SAMPLE_TID | LP_SAMPLE_TIME | LP_SAMPLE_PERIOD)

/* ---- helpers -------------------------------------------------------------- */

typedef struct got {
    lp_reader *r;
    lp_error err;
    int rc;
} got;

static lp_reader *open_buf(const pw *w, lp_order order, lp_error *err)
{
    lp_reader_opts o = { 0 };
    o.order = order;
    return lp_reader_open_mem(w->b, w->len, "t.data", &o, err);
}

/* With opts.strict: a cut-off input is an error (expect_error's inputs). */
static lp_reader *open_strict(const pw *w, lp_error *err)
{
    lp_reader_opts o = { 0 };
    o.strict = 1;
    return lp_reader_open_mem(w->b, w->len, "t.data", &o, err);
}

/* Next event, asserting there is one. */
static const lp_event *next_ev(lp_reader *r)
{
    const lp_event *ev = NULL;
    lp_error err;
    int rc = lp_reader_next(r, &ev, &err);
    if (rc != 1)
        fail_msg("expected an event, got %d: %s", rc, rc < 0 ? err.msg : "");
    return ev;
}

/* Next event of a kind, skipping others. */
static const lp_event *next_kind(lp_reader *r, lp_event_kind k)
{
    for (;;) {
        const lp_event *ev = next_ev(r);
        if (ev->kind == k)
            return ev;
    }
}

static void expect_end(lp_reader *r)
{
    const lp_event *ev;
    lp_error err;
    int rc;
    while ((rc = lp_reader_next(r, &ev, &err)) == 1)
        assert_true(ev->kind != LP_EV_SAMPLE);
    if (rc < 0)
        fail_msg("error at end: %s", err.msg);
}

/* Walk to the end; return the error (rc -1) or 0. */
static int walk_all(lp_reader *r, lp_error *err)
{
    const lp_event *ev;
    int rc;
    while ((rc = lp_reader_next(r, &ev, err)) == 1)
        ;
    return rc;
}

static void w_mmap(pw *d, uint32_t pid, uint64_t start, const char *fn,
                   uint64_t t)
{
    pw_mmap(d, pid, start, fn, t, 0); /* trailer: TID, TIME (ST_BASIC) */
}

static void w_sample(pw *d, uint64_t ip, uint32_t pid, uint64_t t)
{
    size_t s = pw_rec_begin(d, 9, 2);
    pw_u64(d, ip);
    pw_u32(d, pid);
    pw_u32(d, pid + 1);
    pw_u64(d, t);
    pw_u64(d, 1000);
    pw_rec_end(d, s);
}

static void w_round(pw *d)
{
    pw_rec_end(d, pw_rec_begin(d, 68, 0));
}

static pw_attr basic_attr(uint64_t st)
{
    pw_attr a = { 0 };
    a.type = 1;
    a.sample_period = 4000;
    a.sample_type = st;
    a.flags = PW_FLAG_SAMPLE_ID_ALL;
    return a;
}

/* ---- file mode and every attr size ------------------------------------ */

static void test_attr_sizes(void **state)
{
    static const uint32_t sizes[] = { 0, 72, 80, 96, 104, 112, 120, 128,
                                      136, 144, 176 };
    (void)state;
    for (int swap = 0; swap < 2; swap++)
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            pw d, f;
            lp_error err;
            pw_attr a = basic_attr(ST_BASIC | LP_SAMPLE_BRANCH_STACK);
            a.branch_sample_type = LP_BRANCH_ANY;
            a.sample_regs_intr = 0xf;
            pw_init(&d, swap);
            w_mmap(&d, 42, 0x400000, "/bin/prog", 0);
            size_t s = pw_rec_begin(&d, 9, 2);
            pw_u64(&d, 0x401000);
            pw_u32(&d, 42);
            pw_u32(&d, 43);
            pw_u64(&d, 777);
            pw_u64(&d, 5);
            pw_u64(&d, 1); /* one branch */
            pw_u64(&d, 0x401100);
            pw_u64(&d, 0x401000);
            pw_brflags(&d, 0x2 | (7u << 4) | (4u << 20) | (2u << 24));
            pw_rec_end(&d, s);
            pw_file(&f, swap, &a, 1, sizes[k], &d, NULL, 0);
            lp_reader *r = open_buf(&f, LP_ORDER_TIME, &err);
            if (!r)
                fail_msg("size %u swap %d: %s", sizes[k], swap, err.msg);
            const lp_file_info *in = lp_reader_info(r);
            assert_int_equal(in->format, LP_FMT_PERF_FILE);
            assert_int_equal(in->byte_swapped, swap);
            assert_int_equal(in->nr_attrs, 1);
            assert_int_equal(in->attrs[0].size, sizes[k]);
            assert_int_equal(in->attrs[0].sample_period, 4000);
            assert_int_equal(in->attrs[0].sample_id_all, 1);
            assert_int_equal(in->attrs[0].sample_regs_intr,
                             sizes[k] >= 104 ? 0xf : 0);
            const lp_event *ev = next_ev(r);
            assert_int_equal(ev->kind, LP_EV_MMAP);
            assert_int_equal(ev->u.mmap.pid, 42);
            assert_int_equal(ev->u.mmap.start, 0x400000);
            assert_string_equal(ev->u.mmap.filename, "/bin/prog");
            assert_true(ev->sid.present);
            ev = next_ev(r);
            assert_int_equal(ev->kind, LP_EV_SAMPLE);
            const lp_sample *sp = &ev->u.sample;
            assert_int_equal(sp->ip, 0x401000);
            assert_int_equal(sp->pid, 42);
            assert_int_equal(sp->tid, 43);
            assert_int_equal(sp->time, 777);
            assert_int_equal(sp->period, 5);
            assert_int_equal(sp->branch_nr, 1);
            assert_int_equal(sp->has_hw_idx, 0);
            assert_int_equal(sp->branches[0].from, 0x401100);
            assert_int_equal(LP_BR_PREDICTED(sp->branches[0].flags), 1);
            assert_int_equal(LP_BR_MISPRED(sp->branches[0].flags), 0);
            assert_int_equal(LP_BR_CYCLES(sp->branches[0].flags), 7);
            assert_int_equal(LP_BR_TYPE(sp->branches[0].flags), 4);
            assert_int_equal(LP_BR_SPEC(sp->branches[0].flags), 2);
            expect_end(r);
            lp_reader_close(r);
            pw_free(&d);
            pw_free(&f);
        }
}

/* ---- every sample_type field ------------------------------------------------ */

#define ST_ALL                                                              \
    (LP_SAMPLE_IDENTIFIER | LP_SAMPLE_IP | LP_SAMPLE_TID | LP_SAMPLE_TIME | \
     LP_SAMPLE_ADDR | LP_SAMPLE_ID | LP_SAMPLE_STREAM_ID | LP_SAMPLE_CPU |  \
     LP_SAMPLE_PERIOD | LP_SAMPLE_READ | LP_SAMPLE_CALLCHAIN |             \
     LP_SAMPLE_RAW | LP_SAMPLE_BRANCH_STACK | LP_SAMPLE_REGS_USER |        \
     LP_SAMPLE_STACK_USER | LP_SAMPLE_WEIGHT | LP_SAMPLE_DATA_SRC |        \
     LP_SAMPLE_TRANSACTION | LP_SAMPLE_REGS_INTR | LP_SAMPLE_PHYS_ADDR |   \
     LP_SAMPLE_CGROUP | LP_SAMPLE_DATA_PAGE_SIZE |                         \
     LP_SAMPLE_CODE_PAGE_SIZE | LP_SAMPLE_AUX)

static void write_all_fields(pw *d, int group, int hw_idx)
{
    size_t s = pw_rec_begin(d, 9, 2);
    pw_u64(d, 77);        /* IDENTIFIER */
    pw_u64(d, 0xabc);     /* IP */
    pw_u32(d, 10);        /* pid */
    pw_u32(d, 11);        /* tid */
    pw_u64(d, 5000);      /* TIME */
    pw_u64(d, 0xadd);     /* ADDR */
    pw_u64(d, 77);        /* ID */
    pw_u64(d, 88);        /* STREAM_ID */
    pw_u32(d, 3);         /* cpu */
    pw_u32(d, 0);
    pw_u64(d, 12345);     /* PERIOD */
    if (group) {          /* READ, read_format GROUP|ENABLED|RUNNING|ID|LOST */
        pw_u64(d, 2);
        pw_u64(d, 100);
        pw_u64(d, 90);
        for (int i = 0; i < 2; i++) {
            pw_u64(d, 7);
            pw_u64(d, 77);
            pw_u64(d, 0);
        }
    } else {              /* value, enabled, running, id, lost */
        for (int i = 0; i < 5; i++)
            pw_u64(d, (uint64_t)i);
    }
    pw_u64(d, 4);         /* CALLCHAIN */
    pw_u64(d, LP_CONTEXT_KERNEL);
    pw_u64(d, 0xffffffff81000000ull);
    pw_u64(d, LP_CONTEXT_USER);
    pw_u64(d, 0xabc);
    pw_u32(d, 12);        /* RAW: u32 size + 12 bytes = 16 */
    pw_bytes(d, "raw-payload!", 12);
    pw_u64(d, 2);         /* BRANCH_STACK */
    if (hw_idx)
        pw_u64(d, (uint64_t)-1);
    pw_u64(d, 0x1);
    pw_u64(d, 0x2);
    pw_brflags(d, 0x1 | (3u << 30));
    pw_u64(d, 0x3);
    pw_u64(d, 0x4);
    pw_brflags(d, 0x2 | (0xffffu << 4));
    pw_u64(d, 9);         /* branch counters (COUNTERS) */
    pw_u64(d, 8);
    pw_u64(d, 1);         /* REGS_USER abi */
    pw_u64(d, 0x1111);
    pw_u64(d, 0x2222);
    pw_u64(d, 8);         /* STACK_USER size */
    pw_bytes(d, "STACKSTK", 8);
    pw_u64(d, 6);         /* dyn_size */
    pw_u64(d, 250);       /* WEIGHT */
    pw_u64(d, 0xd5);      /* DATA_SRC */
    pw_u64(d, 0x77);      /* TRANSACTION */
    pw_u64(d, 0);         /* REGS_INTR abi 0: no registers */
    pw_u64(d, 0x9999);    /* PHYS_ADDR */
    pw_u64(d, 1);         /* CGROUP */
    pw_u64(d, 4096);      /* DATA_PAGE_SIZE */
    pw_u64(d, 4096);      /* CODE_PAGE_SIZE */
    pw_u64(d, 5);         /* AUX size */
    pw_bytes(d, "aux!!\0\0\0", 8);
    pw_rec_end(d, s);
}

static void check_all_fields(const lp_event *ev, int hw_idx)
{
    const lp_sample *s = &ev->u.sample;
    assert_int_equal(ev->kind, LP_EV_SAMPLE);
    assert_int_equal(s->id, 77);
    assert_int_equal(s->ip, 0xabc);
    assert_int_equal(s->pid, 10);
    assert_int_equal(s->tid, 11);
    assert_int_equal(s->time, 5000);
    assert_int_equal(ev->time, 5000);
    assert_int_equal(s->addr, 0xadd);
    assert_int_equal(s->stream_id, 88);
    assert_int_equal(s->cpu, 3);
    assert_int_equal(s->period, 12345);
    assert_int_equal(s->callchain_nr, 4);
    assert_true(s->callchain[0] == LP_CONTEXT_KERNEL);
    assert_true(s->callchain[2] == LP_CONTEXT_USER);
    assert_int_equal(s->callchain[3], 0xabc);
    assert_int_equal(s->branch_nr, 2);
    assert_int_equal(s->has_hw_idx, hw_idx);
    if (hw_idx)
        assert_true(s->hw_idx == (uint64_t)-1);
    assert_int_equal(s->branches[0].from, 1);
    assert_int_equal(s->branches[0].to, 2);
    assert_int_equal(LP_BR_MISPRED(s->branches[0].flags), 1);
    assert_int_equal(LP_BR_PRIV(s->branches[0].flags), 3);
    assert_int_equal(s->branches[1].from, 3);
    assert_int_equal(LP_BR_CYCLES(s->branches[1].flags), 0xffff);
    assert_int_equal(LP_BR_PREDICTED(s->branches[1].flags), 1);
    assert_non_null(s->branch_counters);
    assert_int_equal(s->branch_counters[0], 9);
    assert_int_equal(s->branch_counters[1], 8);
    assert_int_equal(s->regs_user_abi, 1);
    assert_int_equal(s->regs_user_mask, 0x5);
    assert_int_equal(s->regs_user[0], 0x1111);
    assert_int_equal(s->regs_user[1], 0x2222);
    assert_int_equal(s->stack_user_size, 8);
    assert_memory_equal(s->stack_user, "STACKSTK", 8);
    assert_int_equal(s->stack_user_dyn_size, 6);
    assert_int_equal(s->weight, 250);
    assert_int_equal(s->repeat, 1);
}

static void run_all_fields(int swap, int group, int hw_idx, int pipe)
{
    pw d, f;
    lp_error err;
    uint64_t ids[] = { 77 };
    pw_attr a = basic_attr(ST_ALL);
    a.read_format = group ? (1 | 2 | 4 | 8 | 16) : (1 | 2 | 4 | 16);
    a.branch_sample_type = LP_BRANCH_ANY | LP_BRANCH_COUNTERS |
                           (hw_idx ? LP_BRANCH_HW_INDEX : 0);
    a.sample_regs_user = 0x5;
    a.sample_regs_intr = 0x3;
    a.ids = ids;
    a.nr_ids = 1;
    pw_init(&d, swap);
    if (pipe) {
        pw_pipe_header(&d);
        pw_header_attr(&d, &a, 136);
    }
    write_all_fields(&d, group, hw_idx);
    if (pipe)
        f = d;
    else
        pw_file(&f, swap, &a, 1, 128, &d, NULL, 0);
    lp_reader *r = open_buf(&f, LP_ORDER_TIME, &err);
    if (!r)
        fail_msg("%s", err.msg);
    check_all_fields(next_kind(r, LP_EV_SAMPLE), hw_idx);
    expect_end(r);
    lp_reader_close(r);
    if (!pipe)
        pw_free(&f);
    pw_free(&d);
}

static void test_all_sample_fields(void **state)
{
    (void)state;
    for (int swap = 0; swap < 2; swap++)
        for (int group = 0; group < 2; group++)
            for (int hw = 0; hw < 2; hw++)
                for (int pipe = 0; pipe < 2; pipe++)
                    run_all_fields(swap, group, hw, pipe);
}

/* Two events carry the same content (pointers followed). */
static void same_event(const lp_event *x, const lp_event *y)
{
    const lp_sample *a = &x->u.sample, *b = &y->u.sample;

    assert_int_equal(x->kind, y->kind);
    assert_int_equal(x->type, y->type);
    assert_int_equal(x->offset, y->offset);
    assert_int_equal(x->time, y->time);
    assert_int_equal(x->body_size, y->body_size);
    assert_memory_equal(x->body, y->body, x->body_size);
    if (x->kind == LP_EV_MMAP)
        assert_string_equal(x->u.mmap.filename, y->u.mmap.filename);
    if (x->kind != LP_EV_SAMPLE)
        return;
    assert_int_equal(a->ip, b->ip);
    assert_int_equal(a->time, b->time);
    assert_int_equal(a->callchain_nr, b->callchain_nr);
    assert_memory_equal(a->callchain, b->callchain, a->callchain_nr * 8);
    assert_int_equal(a->branch_nr, b->branch_nr);
    if (a->branch_nr)
        assert_memory_equal(a->branches, b->branches, a->branch_nr * sizeof *a->branches);
    assert_int_equal(a->stack_user_size, b->stack_user_size);
    if (a->stack_user_size)
        assert_memory_equal(a->stack_user, b->stack_user, a->stack_user_size);
    assert_int_equal(a->regs_user_mask, b->regs_user_mask);
}

/* 3000 samples out of time order, six rounds, an mmap after each. */
static void rounds_data(pw *d, int swap)
{
    int n;

    pw_init(d, swap);
    w_mmap(d, 1, 0x1000, "/main", 0);
    for (n = 0; n < 3000; n++) {
        w_sample(d, 0x1000 + (uint64_t)n % 97, 1, 100 + (uint64_t)(n * 7919 % 5003));
        if (n % 500 == 499) {
            w_round(d);
            w_mmap(d, 1, 0x2000 + (uint64_t)n, "/lib", 100);
        }
    }
}

/* A file-mode perf.data is read on the prefetcher's thread: the events,
 * their order and contents, the statistics and the position at the end
 * are those of the walk in the caller's thread (no_thread), over many
 * batches (rounds, mmaps, byte-swapped records decoded out of place, and
 * samples with every field). */
static void test_thread_same_events(void **state)
{
    pw d, f;
    lp_error e1, e2;
    pw_attr a = basic_attr(ST_BASIC);
    lp_reader_opts o1 = {0}, o2 = {0};
    const lp_event *x, *y;
    uint64_t d1, t1, d2, t2;
    int swap, k1, k2, n;
    (void)state;

    for (swap = 0; swap < 2; swap++) {
        rounds_data(&d, swap);
        pw_file(&f, swap, &a, 1, 128, &d, NULL, 0);
        o2.no_thread = 1;
        lp_reader *r1 = lp_reader_open_mem(f.b, f.len, "t.data", &o1, &e1);
        lp_reader *r2 = lp_reader_open_mem(f.b, f.len, "t.data", &o2, &e2);
        assert_non_null(r1);
        assert_non_null(r2);
        for (n = 0;; n++) {
            k1 = lp_reader_next(r1, &x, &e1);
            k2 = lp_reader_next(r2, &y, &e2);
            assert_int_equal(k1, k2);
            if (k1 != 1)
                break;
            same_event(x, y);
        }
        assert_true(n > 3000);
        assert_memory_equal(lp_reader_stats_get(r1), lp_reader_stats_get(r2),
                            sizeof(lp_reader_stats));
        lp_reader_progress(r1, &d1, &t1);
        lp_reader_progress(r2, &d2, &t2);
        assert_int_equal(d1, d2);
        assert_int_equal(t1, t2);
        assert_int_equal(d1, t1);
        lp_reader_close(r1);
        lp_reader_close(r2);
        pw_free(&f);
        pw_free(&d);
    }
    for (swap = 0; swap < 2; swap++) /* every field, through the thread */
        run_all_fields(swap, 1, 1, 0);
}

/* lp_reader_set_ahead: the look-ahead function sees every sample once,
 * before lp_reader_next returns it, and what it sets in stacks_id is in
 * the sample returned; never called without the thread. */
typedef struct ahead_log {
    uint64_t calls;
} ahead_log;

static void log_ahead(void *ctx, lp_sample *s)
{
    ahead_log *l = ctx;

    assert_true(s->stacks_id.lo == 0 && s->stacks_id.hi == 0);
    s->stacks_id = (lp_stacks_id){++l->calls, s->time};
}

static void test_ahead(void **state)
{
    pw d, f;
    lp_error err;
    pw_attr a = basic_attr(ST_BASIC);
    lp_reader_opts o = {0};
    const lp_event *ev;
    uint64_t samples, last;
    int thread;
    (void)state;

    rounds_data(&d, 0);
    pw_file(&f, 0, &a, 1, 128, &d, NULL, 0);
    for (thread = 0; thread < 2; thread++) {
        ahead_log l = {0};
        o.no_thread = !thread;
        lp_reader *r = lp_reader_open_mem(f.b, f.len, "t.data", &o, &err);
        assert_non_null(r);
        lp_reader_set_ahead(r, log_ahead, &l);
        samples = last = 0;
        while (lp_reader_next(r, &ev, &err) == 1) {
            const lp_sample *s = &ev->u.sample;
            if (ev->kind != LP_EV_SAMPLE)
                continue;
            samples++;
            if (!thread) {
                assert_int_equal(s->stacks_id.lo, 0);
                continue;
            }
            /* set by its own call, made before, in delivery order */
            assert_int_equal(s->stacks_id.hi, s->time);
            assert_int_equal(s->stacks_id.lo, last + 1);
            assert_true(s->stacks_id.lo <= l.calls);
            last = s->stacks_id.lo;
        }
        assert_int_equal(samples, 3000);
        assert_int_equal(l.calls, thread ? 3000 : 0);
        lp_reader_close(r);
    }
    pw_free(&f);
    pw_free(&d);
}

/* skip_payloads stops after the branch stack. */
static void test_skip_payloads(void **state)
{
    pw d, f;
    lp_error err;
    lp_reader_opts o = { 0 };
    pw_attr a = basic_attr(ST_ALL);
    (void)state;
    a.branch_sample_type = LP_BRANCH_ANY | LP_BRANCH_COUNTERS;
    a.sample_regs_user = 0x5;
    a.read_format = 1 | 2 | 4 | 16;
    pw_init(&d, 0);
    write_all_fields(&d, 0, 0);
    pw_file(&f, 0, &a, 1, 128, &d, NULL, 0);
    o.skip_payloads = 1;
    lp_reader *r = lp_reader_open_mem(f.b, f.len, "t", &o, &err);
    assert_non_null(r);
    const lp_event *ev = next_kind(r, LP_EV_SAMPLE);
    assert_int_equal(ev->u.sample.branch_nr, 2);
    assert_int_equal(ev->u.sample.regs_user_abi, 0);
    assert_null(ev->u.sample.stack_user);
    lp_reader_close(r);
    pw_free(&d);
    pw_free(&f);
}

/* ---- other record types -------------------------------------------------- */

static void test_record_types(void **state)
{
    (void)state;
    for (int swap = 0; swap < 2; swap++) {
        pw d, f;
        lp_error err;
        pw_attr a = basic_attr(ST_BASIC);
        pw_init(&d, swap);
        size_t s = pw_rec_begin(&d, 10, 2); /* MMAP2 with maj/min */
        pw_u32(&d, 5); pw_u32(&d, 6);
        pw_u64(&d, 0x1000); pw_u64(&d, 0x2000); pw_u64(&d, 0x300);
        pw_u32(&d, 8); pw_u32(&d, 1);
        pw_u64(&d, 1234); pw_u64(&d, 99);
        pw_u32(&d, 5); pw_u32(&d, 0x1802);
        pw_str(&d, "/lib/x.so");
        pw_u32(&d, 5); pw_u32(&d, 6); pw_u64(&d, 0);
        pw_rec_end(&d, s);
        s = pw_rec_begin(&d, 10, 1 | LP_MISC_MMAP_BUILD_ID); /* build-id MMAP2 */
        pw_u32(&d, (uint32_t)-1); pw_u32(&d, 0);
        pw_u64(&d, 0xffffffff81000000ull); pw_u64(&d, 0x100); pw_u64(&d, 0);
        pw_u8(&d, 20); pw_u8(&d, 0); pw_u16(&d, 0);
        pw_bytes(&d, "0123456789abcdefghij", 20);
        pw_u32(&d, 5); pw_u32(&d, 0);
        pw_str(&d, "[kernel.kallsyms]_text");
        pw_u32(&d, 0); pw_u32(&d, 0); pw_u64(&d, 0);
        pw_rec_end(&d, s);
        s = pw_rec_begin(&d, 3, LP_MISC_COMM_EXEC); /* COMM exec */
        pw_u32(&d, 5); pw_u32(&d, 6);
        pw_str(&d, "prog");
        pw_u32(&d, 5); pw_u32(&d, 6); pw_u64(&d, 0);
        pw_rec_end(&d, s);
        for (uint32_t t = 7; t >= 4; t -= 3) { /* FORK, EXIT */
            s = pw_rec_begin(&d, t, 0);
            pw_u32(&d, 5); pw_u32(&d, 4); pw_u32(&d, 6); pw_u32(&d, 4);
            pw_u64(&d, 31);
            pw_u32(&d, 5); pw_u32(&d, 6); pw_u64(&d, 0);
            pw_rec_end(&d, s);
        }
        s = pw_rec_begin(&d, 2, 0); /* LOST */
        pw_u64(&d, 1); pw_u64(&d, 17);
        pw_u32(&d, 0); pw_u32(&d, 0); pw_u64(&d, 0);
        pw_rec_end(&d, s);
        s = pw_rec_begin(&d, 13, 0); /* LOST_SAMPLES */
        pw_u64(&d, 3);
        pw_u32(&d, 0); pw_u32(&d, 0); pw_u64(&d, 0);
        pw_rec_end(&d, s);
        for (uint32_t t = 5; t <= 6; t++) { /* THROTTLE, UNTHROTTLE */
            s = pw_rec_begin(&d, t, 0);
            pw_u64(&d, 40); pw_u64(&d, 1); pw_u64(&d, 2);
            pw_u32(&d, 0); pw_u32(&d, 0); pw_u64(&d, 0);
            pw_rec_end(&d, s);
        }
        s = pw_rec_begin(&d, 66, 0); /* TRACING_DATA + 5 bytes (pad 8) */
        pw_u32(&d, 5); pw_u32(&d, 0);
        pw_rec_end(&d, s);
        pw_bytes(&d, "\x09\x09\x09\x09\x09\x09\x09\x09", 8);
        s = pw_rec_begin(&d, 71, 0); /* AUXTRACE + 16 payload bytes */
        pw_u64(&d, 16); pw_u64(&d, 0); pw_u64(&d, 0);
        pw_u32(&d, 0); pw_u32(&d, 0); pw_u32(&d, 0); pw_u32(&d, 0);
        pw_rec_end(&d, s);
        pw_zeros(&d, 16);
        s = pw_rec_begin(&d, 999, 0); /* unknown user type */
        pw_u64(&d, 0);
        pw_rec_end(&d, s);
        pw_rec_end(&d, pw_rec_begin(&d, 82, 0)); /* FINISHED_INIT */
        w_sample(&d, 0x55, 5, 0);
        pw_file(&f, swap, &a, 1, 128, &d, NULL, 0);
        lp_reader *r = open_buf(&f, LP_ORDER_TIME, &err);
        if (!r)
            fail_msg("%s", err.msg);
        const lp_event *ev = next_ev(r);
        assert_int_equal(ev->kind, LP_EV_MMAP);
        assert_int_equal(ev->u.mmap.is_mmap2, 1);
        assert_int_equal(ev->u.mmap.maj, 8);
        assert_int_equal(ev->u.mmap.ino, 1234);
        assert_int_equal(ev->u.mmap.prot, 5);
        assert_int_equal(ev->u.mmap.flags, 0x1802);
        assert_int_equal(ev->u.mmap.build_id_size, 0);
        assert_string_equal(ev->u.mmap.filename, "/lib/x.so");
        ev = next_ev(r);
        assert_int_equal(ev->u.mmap.build_id_size, 20);
        assert_memory_equal(ev->u.mmap.build_id, "0123456789abcdefghij", 20);
        assert_string_equal(ev->u.mmap.filename, "[kernel.kallsyms]_text");
        ev = next_ev(r);
        assert_int_equal(ev->kind, LP_EV_COMM);
        assert_int_equal(ev->u.comm.exec, 1);
        assert_string_equal(ev->u.comm.comm, "prog");
        ev = next_ev(r);
        assert_int_equal(ev->kind, LP_EV_FORK);
        assert_int_equal(ev->u.task.ppid, 4);
        assert_int_equal(ev->u.task.time, 31);
        ev = next_ev(r);
        assert_int_equal(ev->kind, LP_EV_EXIT);
        ev = next_ev(r);
        assert_int_equal(ev->kind, LP_EV_LOST);
        assert_int_equal(ev->u.lost.lost, 17);
        ev = next_ev(r);
        assert_int_equal(ev->kind, LP_EV_LOST_SAMPLES);
        assert_int_equal(ev->u.lost.lost, 3);
        ev = next_ev(r);
        assert_int_equal(ev->kind, LP_EV_THROTTLE);
        assert_int_equal(ev->u.throttle.time, 40);
        assert_int_equal(next_ev(r)->kind, LP_EV_UNTHROTTLE);
        ev = next_ev(r);
        assert_int_equal(ev->kind, LP_EV_OTHER);
        assert_int_equal(ev->type, 66);
        assert_int_equal(next_ev(r)->type, 71);
        assert_int_equal(next_ev(r)->type, 999);
        assert_int_equal(next_ev(r)->kind, LP_EV_FINISHED_INIT);
        ev = next_ev(r);
        assert_int_equal(ev->kind, LP_EV_SAMPLE);
        assert_int_equal(ev->u.sample.ip, 0x55);
        expect_end(r);
        const lp_reader_stats *st = lp_reader_stats_get(r);
        assert_int_equal(st->mmaps, 2);
        assert_int_equal(st->lost_events, 17);
        assert_int_equal(st->lost_samples, 3);
        lp_reader_close(r);
        pw_free(&d);
        pw_free(&f);
    }
}

/* ---- pipe mode: unaligned records after an odd HEADER_FEATURE ----------- */

static void test_pipe_unaligned(void **state)
{
    (void)state;
    for (int swap = 0; swap < 2; swap++) {
        pw d;
        lp_error err;
        uint64_t ids[] = { 5 };
        pw_attr a = basic_attr(ST_BASIC | LP_SAMPLE_ID | LP_SAMPLE_CALLCHAIN);
        a.ids = ids;
        a.nr_ids = 1;
        pw_init(&d, swap);
        pw_pipe_header(&d);
        pw_header_attr(&d, &a, 128);
        size_t s = pw_rec_begin(&d, 80, 0); /* HOSTNAME, odd size */
        pw_u64(&d, 3);
        pw_u32(&d, 5);
        pw_bytes(&d, "host", 5);
        pw_rec_end(&d, s);
        assert_int_equal(d.len % 8, 1); /* every later record is misaligned */
        s = pw_rec_begin(&d, 9, 2);
        pw_u64(&d, 0x1234);
        pw_u32(&d, 1); pw_u32(&d, 2);
        pw_u64(&d, 100);
        pw_u64(&d, 5);   /* ID */
        pw_u64(&d, 9);   /* PERIOD */
        pw_u64(&d, 2);
        pw_u64(&d, LP_CONTEXT_USER);
        pw_u64(&d, 0x1234);
        pw_rec_end(&d, s);
        s = pw_rec_begin(&d, 80, 0); /* end-of-features marker */
        pw_u64(&d, 32);
        pw_rec_end(&d, s);
        s = pw_rec_begin(&d, 66, 0); /* TRACING_DATA + 13 bytes (pad 16) */
        pw_u32(&d, 13); pw_u32(&d, 0);
        pw_rec_end(&d, s);
        pw_zeros(&d, 16);
        s = pw_rec_begin(&d, 71, 0); /* AUXTRACE + 24 payload bytes */
        pw_u64(&d, 24); pw_u64(&d, 0); pw_u64(&d, 0);
        pw_u32(&d, 0); pw_u32(&d, 0); pw_u32(&d, 0); pw_u32(&d, 0);
        pw_rec_end(&d, s);
        pw_bytes(&d, "\x09\x00\x00\x00\x00\x00\xff\xff", 8); /* looks bad */
        pw_zeros(&d, 16);
        s = pw_rec_begin(&d, 9, 2); /* a second sample after the payloads */
        pw_u64(&d, 0x5678);
        pw_u32(&d, 1); pw_u32(&d, 2);
        pw_u64(&d, 200);
        pw_u64(&d, 5);
        pw_u64(&d, 9);
        pw_u64(&d, 0);
        pw_rec_end(&d, s);
        lp_reader *r = open_buf(&d, LP_ORDER_TIME, &err);
        if (!r)
            fail_msg("%s", err.msg);
        const lp_event *ev = next_kind(r, LP_EV_SAMPLE);
        assert_int_equal(ev->u.sample.ip, 0x1234);
        assert_int_equal(ev->u.sample.period, 9);
        assert_int_equal(ev->u.sample.callchain_nr, 2);
        assert_int_equal(ev->u.sample.callchain[1], 0x1234);
        assert_int_equal((uintptr_t)ev->u.sample.callchain % 8, 0);
        assert_int_equal(ev->offset % 8, 1);
        assert_int_equal(next_kind(r, LP_EV_SAMPLE)->u.sample.ip, 0x5678);
        expect_end(r);
        const lp_file_info *in = lp_reader_info(r);
        assert_int_equal(in->format, LP_FMT_PERF_PIPE);
        assert_string_equal(in->hostname, "host");
        assert_int_equal(in->nr_attrs, 1);
        lp_reader_close(r);

        /* The same bytes through a FILE stream (no seeking). */
        FILE *fs = fmemopen(d.b, d.len, "r");
        r = lp_reader_open_stream(fs, "pipe", NULL, &err);
        assert_non_null(r);
        /* user records at once, the timed samples at the end */
        static const uint32_t types[] = { 64, 80, 80, 66, 71, 9, 9 };
        for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
            ev = next_ev(r);
            assert_int_equal(ev->type, types[k]);
        }
        assert_int_equal(ev->u.sample.ip, 0x5678);
        expect_end(r);
        lp_reader_close(r);
        fclose(fs);
        pw_free(&d);
    }
}

/* ---- compressed records, a record split across two blocks ------------- */

static void add_compressed(pw *out, const uint8_t *p, size_t n, int v2)
{
    size_t cap = ZSTD_compressBound(n);
    uint8_t *z = malloc(cap);
    size_t zn = ZSTD_compress(z, cap, p, n, 3);
    assert_false(ZSTD_isError(zn));
    size_t s = pw_rec_begin(out, v2 ? 83 : 81, 0);
    if (v2)
        pw_u64(out, zn);
    pw_bytes(out, z, zn);
    if (v2)
        pw_zeros(out, (8 - (out->len - s) % 8) % 8);
    pw_rec_end(out, s);
    free(z);
}

static void test_zstd_split_record(void **state)
{
    (void)state;
    for (int v2 = 0; v2 < 2; v2++)
        for (int swap = 0; swap < 2; swap++) {
            pw inner, d;
            lp_error err;
            pw_attr a = basic_attr(ST_BASIC);
            pw_init(&inner, swap);
            w_mmap(&inner, 9, 0x400000, "/bin/zz", 0);
            for (int i = 0; i < 4; i++)
                w_sample(&inner, 0x400100 + (uint64_t)i, 9, 10 + (uint64_t)i);
            pw_init(&d, swap);
            pw_pipe_header(&d);
            pw_header_attr(&d, &a, 128);
            size_t cut = 8 + 20; /* inside the MMAP record */
            size_t cut2 = inner.len - 13; /* inside the last sample */
            add_compressed(&d, inner.b, cut, v2);
            add_compressed(&d, inner.b + cut, cut2 - cut, v2);
            w_round(&d); /* plain record between blocks */
            add_compressed(&d, inner.b + cut2, inner.len - cut2, v2);
            lp_reader *r = open_buf(&d, LP_ORDER_TIME, &err);
            if (!r)
                fail_msg("%s", err.msg);
            const lp_event *ev = next_kind(r, LP_EV_MMAP);
            assert_string_equal(ev->u.mmap.filename, "/bin/zz");
            assert_int_equal(ev->compressed, 1);
            for (int i = 0; i < 4; i++) {
                ev = next_kind(r, LP_EV_SAMPLE);
                assert_int_equal(ev->u.sample.ip, 0x400100 + (uint64_t)i);
            }
            expect_end(r);
            assert_int_equal(lp_reader_stats_get(r)->compressed_blocks, 3);
            lp_reader_close(r);

            pw_free(&inner);
            pw_free(&d);
        }
}

static void test_zstd_truncated_stream(void **state)
{
    pw inner, d;
    lp_error err;
    pw_attr a = basic_attr(ST_BASIC);
    (void)state;
    pw_init(&inner, 0);
    w_sample(&inner, 1, 1, 1);
    w_sample(&inner, 2, 1, 2);
    pw_init(&d, 0);
    pw_pipe_header(&d);
    pw_header_attr(&d, &a, 128);
    add_compressed(&d, inner.b, inner.len - 8, 0);
    lp_reader *r = open_strict(&d, &err);
    assert_non_null(r);
    assert_int_equal(walk_all(r, &err), -1);
    assert_int_equal(err.code, LP_EFORMAT);
    assert_non_null(strstr(err.msg, "compressed data ends inside a record"));
    lp_reader_close(r);
    /* not strict: the first sample, complete, is read (test_cut_off) */
    r = open_buf(&d, LP_ORDER_TIME, &err);
    assert_int_equal(next_kind(r, LP_EV_SAMPLE)->u.sample.ip, 1);
    expect_end(r);
    assert_int_equal(lp_reader_stats_get(r)->cut_off, 1);
    lp_reader_close(r);
    pw_free(&inner);
    pw_free(&d);
}

/* A small COMPRESSED record that expands past the bound is an error. */
static void test_zstd_bomb(void **state)
{
    pw inner, d;
    lp_error err;
    pw_attr a = basic_attr(ST_BASIC);
    (void)state;
    pw_init(&inner, 0);
    for (int i = 0; i < 1100; i++) { /* 1100 x 64 KiB unknown user records */
        size_t s = pw_rec_begin(&inner, 90, 0);
        pw_zeros(&inner, 65528 - 8);
        pw_rec_end(&inner, s);
    }
    pw_init(&d, 0);
    pw_pipe_header(&d);
    pw_header_attr(&d, &a, 128);
    add_compressed(&d, inner.b, inner.len, 0);
    assert_true(d.len < 65536);
    lp_reader *r = open_buf(&d, LP_ORDER_TIME, &err);
    assert_non_null(r);
    assert_int_equal(walk_all(r, &err), -1);
    assert_non_null(strstr(err.msg, "decompression bomb"));
    lp_reader_close(r);
    pw_free(&inner);
    pw_free(&d);
}

/* ---- ordering --------------------------------------------------------------- */

static void test_time_order_rounds(void **state)
{
    pw d, f;
    lp_error err;
    pw_attr a = basic_attr(ST_BASIC);
    (void)state;
    pw_init(&d, 0);
    w_sample(&d, 1, 1, 10);
    w_sample(&d, 2, 1, 30);
    w_sample(&d, 3, 1, 20);
    w_mmap(&d, 1, 0x1000, "/zero-time", 0); /* delivered at once */
    w_round(&d);
    w_sample(&d, 4, 1, 15);
    w_sample(&d, 5, 1, 40);
    w_sample(&d, 6, 1, 30); /* equal to ip 2: after it (stable) */
    w_round(&d);
    w_sample(&d, 7, 1, 35);
    w_sample(&d, 8, 1, 5); /* older than the last flush: still queued */
    pw_file(&f, 0, &a, 1, 128, &d, NULL, 0);

    /* round 1 flushes nothing (limit 0); round 2 flushes <= 30; end: rest */
    static const int want[] = { -1 /* mmap */, 0 /* round */, 1, 4, 3, 2, 6,
                                0, 8, 7, 5 };
    lp_reader *r = open_buf(&f, LP_ORDER_TIME, &err);
    assert_non_null(r);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const lp_event *ev = next_ev(r);
        if (want[i] == -1)
            assert_int_equal(ev->kind, LP_EV_MMAP);
        else if (want[i] == 0)
            assert_int_equal(ev->kind, LP_EV_FINISHED_ROUND);
        else {
            assert_int_equal(ev->kind, LP_EV_SAMPLE);
            assert_int_equal(ev->u.sample.ip, want[i]);
        }
    }
    expect_end(r);
    assert_int_equal(lp_reader_stats_get(r)->out_of_order, 1);
    lp_reader_close(r);

    /* File order leaves everything as written. */
    r = open_buf(&f, LP_ORDER_FILE, &err);
    for (uint64_t ip = 1; ip <= 8; ip++)
        assert_int_equal(next_kind(r, LP_EV_SAMPLE)->u.sample.ip, ip);
    lp_reader_close(r);
    pw_free(&d);
    pw_free(&f);
}

/* The same order when the records come through the arena (pipe stream). */
static void test_time_order_stream(void **state)
{
    pw d;
    lp_error err;
    pw_attr a = basic_attr(ST_BASIC);
    (void)state;
    pw_init(&d, 0);
    pw_pipe_header(&d);
    pw_header_attr(&d, &a, 128);
    for (int round = 0; round < 50; round++) {
        for (int i = 0; i < 100; i++) /* descending inside a round */
            w_sample(&d, (uint64_t)(round * 100 + i),
                     1, (uint64_t)(round * 100 + 200 - i));
        w_round(&d);
    }
    FILE *fs = fmemopen(d.b, d.len, "r");
    lp_reader *r = lp_reader_open_stream(fs, "s", NULL, &err);
    assert_non_null(r);
    uint64_t last = 0, n = 0;
    const lp_event *ev;
    while (lp_reader_next(r, &ev, &err) == 1) {
        if (ev->kind != LP_EV_SAMPLE)
            continue;
        assert_true(ev->u.sample.time >= last);
        last = ev->u.sample.time;
        n++;
    }
    assert_int_equal(n, 5000);
    lp_reader_close(r);
    fclose(fs);
    pw_free(&d);
}

/* ---- several events: IDENTIFIER, ID, id 0, unknown ids ------------------- */

static void test_multi_event_ids(void **state)
{
    (void)state;
    for (int ident = 0; ident < 2; ident++) {
        pw d, f;
        lp_error err;
        uint64_t ida[] = { 100, 101 }, idb[] = { 200 };
        uint64_t st = ST_BASIC | (ident ? LP_SAMPLE_IDENTIFIER : LP_SAMPLE_ID) |
                      LP_SAMPLE_CPU;
        pw_attr a[2] = { basic_attr(st), basic_attr(st) };
        a[0].ids = ida;
        a[0].nr_ids = 2;
        a[1].ids = idb;
        a[1].nr_ids = 1;
        a[1].sample_period = 1;
        pw_init(&d, 0);
        uint64_t sids[] = { 101, 200, 0, 999 };
        for (int k = 0; k < 4; k++) {
            size_t s = pw_rec_begin(&d, 9, 2);
            if (ident)
                pw_u64(&d, sids[k]);
            pw_u64(&d, 0x10 + (uint64_t)k);
            pw_u32(&d, 1); pw_u32(&d, 1);
            pw_u64(&d, 100 + (uint64_t)k);
            if (!ident)
                pw_u64(&d, sids[k]);
            pw_u32(&d, 2); pw_u32(&d, 0);
            pw_u64(&d, 7);
            pw_rec_end(&d, s);
        }
        /* COMM whose trailer names event b (is_pos from the end). */
        size_t s = pw_rec_begin(&d, 3, 0);
        pw_u32(&d, 1); pw_u32(&d, 1);
        pw_str(&d, "c");
        pw_u32(&d, 1); pw_u32(&d, 1); pw_u64(&d, 0);
        if (!ident)
            pw_u64(&d, 200);
        pw_u32(&d, 2); pw_u32(&d, 0);
        if (ident)
            pw_u64(&d, 200);
        pw_rec_end(&d, s);
        pw_file(&f, 0, a, 2, 128, &d, NULL, 0);
        lp_reader *r = open_buf(&f, LP_ORDER_FILE, &err);
        assert_non_null(r);
        const lp_file_info *in = lp_reader_info(r);
        const lp_event *ev = next_ev(r);
        assert_ptr_equal(ev->u.sample.attr, &in->attrs[0]);
        assert_int_equal(ev->u.sample.cpu, 2);
        ev = next_ev(r);
        assert_ptr_equal(ev->u.sample.attr, &in->attrs[1]);
        ev = next_ev(r); /* id 0: first attr */
        assert_ptr_equal(ev->u.sample.attr, &in->attrs[0]);
        ev = next_ev(r); /* 999 dropped; next is the COMM */
        assert_int_equal(ev->kind, LP_EV_COMM);
        assert_int_equal(ev->sid.id, 200);
        assert_int_equal(ev->sid.cpu, 2);
        assert_ptr_equal(lp_reader_attr_by_id(r, 200), &in->attrs[1]);
        assert_null(lp_reader_attr_by_id(r, 999));
        expect_end(r);
        assert_int_equal(lp_reader_stats_get(r)->unknown_id, 1);
        lp_reader_close(r);
        pw_free(&d);
        pw_free(&f);
    }
}

/* ---- feature sections ------------------------------------------------------- */

static void bid_entry(pw *p, uint16_t misc, const char *id, uint8_t size,
                      const char *fn)
{
    size_t s = pw_rec_begin(p, 67, misc);
    pw_u32(p, (uint32_t)-1);
    pw_bytes(p, id, 20);
    pw_u8(p, size);
    pw_zeros(p, 3);
    pw_str(p, fn);
    pw_rec_end(p, s);
}

static void test_features(void **state)
{
    (void)state;
    for (int swap = 0; swap < 2; swap++) {
        pw d, f, bid, host, cmd, desc;
        lp_error err;
        uint64_t ids[] = { 3 };
        pw_attr a = basic_attr(ST_BASIC);
        a.ids = ids;
        a.nr_ids = 1;
        pw_init(&d, swap);
        w_sample(&d, 1, 1, 1);
        pw_init(&bid, swap);
        bid_entry(&bid, 2, "\x57\x2a\xc7\x24\x87\xae\x19\x66"
                           "\0\0\0\0\0\0\0\0\0\0\0\0", 0, "/bin/short");
        bid_entry(&bid, 0x8001, "abcdefghijklmnopqrst", 20, "[kernel]");
        bid_entry(&bid, 0x8002, "0123456789\0\0\0\0\0\0\0\0\0\0", 10, "/x");
        bid_entry(&bid, 2, "abcdefghijklmnopqrs\0", 0, "/sha1-ending-in-00");
        bid_entry(&bid, 2, "1234567\0\0\0\0\0\0\0\0\0\0\0\0\0", 0, "/x7");
        pw_init(&host, swap);
        pw_hstring(&host, "myhost");
        pw_init(&cmd, swap);
        pw_u32(&cmd, 3);
        pw_hstring(&cmd, "perf");
        pw_hstring(&cmd, "record");
        pw_hstring(&cmd, "-b");
        pw_init(&desc, swap);
        pw_u32(&desc, 1);
        pw_u32(&desc, 128);
        pw_attr_bytes(&desc, &a, 128);
        pw_u32(&desc, 1);
        pw_hstring(&desc, "cycles:u");
        pw_u64(&desc, 3);
        pw_feat feats[] = { { 2, &bid }, { 3, &host }, { 11, &cmd },
                            { 12, &desc } };
        pw_file(&f, swap, &a, 1, 128, &d, feats, 4);
        lp_reader *r = open_buf(&f, LP_ORDER_TIME, &err);
        if (!r)
            fail_msg("%s", err.msg);
        const lp_file_info *in = lp_reader_info(r);
        assert_int_equal(in->nr_build_ids, 5);
        assert_int_equal(in->build_ids[0].size, 8);
        assert_int_equal(in->build_ids[0].id[0], 0x57);
        assert_string_equal(in->build_ids[0].filename, "/bin/short");
        assert_int_equal(in->build_ids[1].size, 20);
        assert_int_equal(in->build_ids[1].pid, -1);
        assert_int_equal(in->build_ids[2].size, 10);
        assert_int_equal(in->build_ids[3].size, 20);
        assert_int_equal(in->build_ids[4].size, 8);
        assert_string_equal(in->hostname, "myhost");
        assert_int_equal(in->cmdline_argc, 3);
        assert_string_equal(in->cmdline[2], "-b");
        assert_string_equal(in->attrs[0].name, "cycles:u");
        assert_true(in->features[0] & (1u << 12));
        next_kind(r, LP_EV_SAMPLE);
        lp_reader_close(r);
        pw_free(&d); pw_free(&f); pw_free(&bid); pw_free(&host);
        pw_free(&cmd); pw_free(&desc);
    }
}

/* ---- directory format ----------------------------------------------------- */

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    fclose(f);
}

static void test_directory(void **state)
{
    char dir[] = "/tmp/lp-rd-XXXXXX", path[300];
    pw d, f, d0, d1, ver;
    lp_error err;
    pw_attr a = basic_attr(ST_BASIC);
    (void)state;
    assert_non_null(mkdtemp(dir));
    pw_init(&d, 0);
    w_mmap(&d, 1, 0x1000, "/main", 0);
    w_sample(&d, 1, 1, 50);
    pw_init(&ver, 0);
    pw_u64(&ver, 1);
    pw_feat feats[] = { { 24, &ver } };
    pw_file(&f, 0, &a, 1, 128, &d, feats, 1);
    pw_init(&d0, 0);
    w_sample(&d0, 2, 1, 20);
    w_sample(&d0, 3, 1, 60);
    pw_init(&d1, 0);
    w_sample(&d1, 4, 1, 10);
    w_sample(&d1, 5, 1, 50);
    snprintf(path, sizeof path, "%s/data", dir);
    write_file(path, f.b, f.len);
    snprintf(path, sizeof path, "%s/data.0", dir);
    write_file(path, d0.b, d0.len);
    snprintf(path, sizeof path, "%s/data.1", dir);
    write_file(path, d1.b, d1.len);
    lp_reader *r = lp_reader_open(dir, NULL, &err);
    if (!r)
        fail_msg("%s", err.msg);
    assert_int_equal(lp_reader_info(r)->format, LP_FMT_PERF_DIR);
    uint64_t done, total;
    lp_reader_progress(r, &done, &total);
    assert_true(total >= d.len + d0.len + d1.len);  /* every file's records */
    assert_true(done < total);
    assert_int_equal(next_ev(r)->kind, LP_EV_MMAP);
    static const uint64_t want[] = { 4, 2, 1, 5, 3 };
    for (int i = 0; i < 5; i++)
        assert_int_equal(next_kind(r, LP_EV_SAMPLE)->u.sample.ip, want[i]);
    expect_end(r);
    lp_reader_progress(r, &done, &total);
    assert_int_equal(done, total);
    lp_reader_close(r);
    for (const char *n = "data.1"; n; n = !strcmp(n, "data.1") ? "data.0"
                                          : !strcmp(n, "data.0") ? "data" : NULL) {
        snprintf(path, sizeof path, "%s/%s", dir, n);
        unlink(path);
    }
    rmdir(dir);
    pw_free(&d); pw_free(&f); pw_free(&d0); pw_free(&d1); pw_free(&ver);
}

/* ---- cut-off files ------------------------------------------------------------ */

typedef struct warns {
    char text[4096];
    int n;
} warns;

static void keep_warning(void *ctx, const char *msg)
{
    warns *w = ctx;
    w->n++;
    snprintf(w->text, sizeof w->text, "%s", msg);
}

/* Samples delivered (every event walked), or -1 on an error. */
static int count_samples(const void *b, size_t len, int strict, warns *w, lp_error *err)
{
    lp_reader_opts o = { 0 };
    const lp_event *ev;
    int n = 0, rc;

    o.strict = strict;
    o.warn = keep_warning;
    o.warn_ctx = w;
    lp_reader *r = lp_reader_open_mem(b, len, "t.data", &o, err);
    if (!r)
        return -1;
    while ((rc = lp_reader_next(r, &ev, err)) == 1)
        n += ev->kind == LP_EV_SAMPLE;
    lp_reader_close(r);
    return rc < 0 ? -1 : n;
}

/* A file cut at every byte of its data and features: every record that is
 * whole before the cut is read, and a warning names the file, the offset
 * of the first record lost and the records read; with strict, an error.
 * Cut inside the header or attrs: an error, strict or not. */
static void test_cut_off(void **state)
{
    pw d, f, host;
    pw_attr a = basic_attr(ST_BASIC);
    size_t ends[8], i, cut, data0 = 104 + 144;
    char want[128];
    (void)state;
    pw_init(&d, 0);
    w_mmap(&d, 9, 0x400000, "/bin/cut", 0);
    for (i = 0; i < 5; i++) {
        ends[i] = data0 + d.len;    /* where sample i starts */
        w_sample(&d, 0x400100 + i, 9, 10 + i);
    }
    ends[5] = data0 + d.len;
    pw_init(&host, 0);
    pw_hstring(&host, "myhost");
    pw_feat feats[] = { { 3, &host } };
    pw_file(&f, 0, &a, 1, 128, &d, feats, 1);
    for (cut = 0; cut <= f.len; cut++) {
        warns w = { "", 0 };
        lp_error err = { 0 };
        int n = count_samples(f.b, cut, 0, &w, &err), whole = 0;
        while (whole < 5 && ends[whole + 1] <= cut)
            whole++;
        if (cut < data0) { /* nothing but the header: an error */
            if (n != -1 || !strstr(err.msg, "t.data"))
                fail_msg("cut at %zu (header): %d samples, '%s'", cut, n, err.msg);
            continue;
        }
        if (n != whole || (cut < f.len) != (w.n == 1))
            fail_msg("cut at %zu: %d samples (%d whole), %d warnings: %s", cut, n, whole,
                     w.n, w.text);
        if (cut < ends[5]) {
            snprintf(want, sizeof want, "t.data: offset 0x%zx: ",
                     cut < ends[0] ? data0 : ends[whole]);
            if (!strstr(w.text, want) || !strstr(w.text, "complete records"))
                fail_msg("cut at %zu: warning '%s' lacks '%s'", cut, w.text, want);
            snprintf(want, sizeof want, "the %d complete records", whole + (cut >= ends[0]));
            if (!strstr(w.text, want))
                fail_msg("cut at %zu: warning '%s' lacks '%s'", cut, w.text, want);
        } else if (cut < f.len && !strstr(w.text, "cut off after its data section")) {
            fail_msg("cut at %zu (features): '%s'", cut, w.text);
        }
        if (cut < f.len && count_samples(f.b, cut, 1, &w, &err) != -1)
            fail_msg("cut at %zu: no error with strict", cut);
    }
    /* A killed recording: the header still says data size 0, no features;
     * the last record is cut. */
    uint64_t zero = 0;
    memcpy(f.b + 48, &zero, 8);
    memset(f.b + 72, 0, 32);
    {
        warns w = { "", 0 };
        lp_error err = { 0 };
        assert_int_equal(count_samples(f.b, ends[4] + 9, 0, &w, &err), 4);
        snprintf(want, sizeof want, "t.data: offset 0x%zx: record (type 9", ends[4]);
        assert_non_null(strstr(w.text, want));
        assert_non_null(strstr(w.text, "the 5 complete records"));
        assert_int_equal(count_samples(f.b, ends[4] + 9, 1, &w, &err), -1);
        assert_non_null(strstr(err.msg, "runs past the end"));
    }
    pw_free(&f);
    /* Not a cut: a record that runs past the end of a data section the
     * features follow is an error either way. */
    pw_file(&f, 0, &a, 1, 128, &d, feats, 1);
    {
        uint16_t big = 200;
        warns w = { "", 0 };
        lp_error err = { 0 };
        memcpy(f.b + ends[4] + 6, &big, 2);
        assert_int_equal(count_samples(f.b, f.len, 0, &w, &err), -1);
        assert_non_null(strstr(err.msg, "runs past the end"));
    }
    pw_free(&f);
    pw_free(&d);
    pw_free(&host);
}

/* A pipe (read as a stream, never seeking) that ends inside a record. */
static void test_cut_off_stream(void **state)
{
    pw d;
    pw_attr a = basic_attr(ST_BASIC);
    warns w = { "", 0 };
    lp_reader_opts o = { 0 };
    const lp_event *ev;
    lp_error err;
    int n = 0, rc;
    (void)state;
    pw_init(&d, 0);
    pw_pipe_header(&d);
    pw_header_attr(&d, &a, 128);
    for (int i = 0; i < 3; i++)
        w_sample(&d, 0x400100 + (uint64_t)i, 9, 10 + (uint64_t)i);
    FILE *s = fmemopen(d.b, d.len - 5, "r");
    o.warn = keep_warning;
    o.warn_ctx = &w;
    lp_reader *r = lp_reader_open_stream(s, "pipe", &o, &err);
    assert_non_null(r);
    while ((rc = lp_reader_next(r, &ev, &err)) == 1)
        n += ev->kind == LP_EV_SAMPLE;
    assert_int_equal(rc, 0);
    assert_int_equal(n, 2);
    assert_int_equal(w.n, 1);
    assert_non_null(strstr(w.text, "pipe: offset 0x"));
    assert_non_null(strstr(w.text, "input ends inside a record (type 9"));
    assert_non_null(strstr(w.text, "the 3 complete records")); /* HEADER_ATTR + 2 */
    lp_reader_close(r);
    fclose(s);
    pw_free(&d);
}

/* ---- errors ------------------------------------------------------------------ */

static void expect_error(const pw *w, const char *needle)
{
    lp_error err = { 0 };
    lp_reader *r = open_strict(w, &err);
    if (r) {
        int rc = walk_all(r, &err);
        lp_reader_close(r);
        if (rc != -1)
            fail_msg("expected an error containing '%s'", needle);
    }
    assert_int_equal(err.code, LP_EFORMAT);
    if (!strstr(err.msg, needle))
        fail_msg("error '%s' lacks '%s'", err.msg, needle);
}

static void test_errors(void **state)
{
    pw d, f;
    pw_attr a = basic_attr(ST_BASIC | LP_SAMPLE_CALLCHAIN);
    (void)state;

    /* size-0 record: message with its offset */
    pw_init(&d, 0);
    size_t s = pw_rec_begin(&d, 3, 0);
    pw_u32(&d, 1); pw_u32(&d, 1); pw_str(&d, "x");
    pw_u32(&d, 1); pw_u32(&d, 1); pw_u64(&d, 0);
    pw_rec_end(&d, s);
    size_t zero_at = d.len;
    pw_u32(&d, 9); pw_u16(&d, 0); pw_u16(&d, 0);
    pw_zeros(&d, 32);
    pw_file(&f, 0, &a, 1, 128, &d, NULL, 0);
    char want[64];
    snprintf(want, sizeof want, "offset 0x%zx: record (type 9) has size 0",
             zero_at + 104 + 144);
    expect_error(&f, want);
    pw_free(&f);

    /* truncated header */
    pw_file(&f, 0, &a, 1, 128, &d, NULL, 0);
    f.len = 50;
    expect_error(&f, "file ends after");
    /* truncated data section */
    pw_free(&f);
    pw_file(&f, 0, &a, 1, 128, &d, NULL, 0);
    f.len -= 20;
    expect_error(&f, "truncated file?");
    pw_free(&f);
    pw_free(&d);

    /* attr count overflow: attrs.size claims many more attrs than exist */
    pw_init(&d, 0);
    pw_file(&f, 0, &a, 1, 128, &d, NULL, 0);
    uint64_t huge = 144ull * 1000000;
    memcpy(f.b + 32, &huge, 8);
    expect_error(&f, "attr section");
    pw_free(&f);

    /* callchain count overflowing the record */
    s = pw_rec_begin(&d, 9, 2);
    pw_u64(&d, 1); pw_u32(&d, 1); pw_u32(&d, 1); pw_u64(&d, 5); pw_u64(&d, 1);
    pw_u64(&d, 1000000); /* nr */
    pw_u64(&d, 0);
    pw_rec_end(&d, s);
    pw_file(&f, 0, &a, 1, 128, &d, NULL, 0);
    expect_error(&f, "callchain of entries 1000000 overflows the record");
    pw_free(&f);
    pw_free(&d);

    /* record running past the end of the data section */
    pw_init(&d, 0);
    w_sample(&d, 1, 1, 1);
    pw_u32(&d, 9); pw_u16(&d, 0); pw_u16(&d, 200);
    pw_file(&f, 0, &a, 1, 128, &d, NULL, 0);
    expect_error(&f, "runs past the end");
    pw_free(&f);
    pw_free(&d);

    /* record shorter than its sample_id trailer */
    pw_init(&d, 0);
    s = pw_rec_begin(&d, 4, 0);
    pw_u64(&d, 0);
    pw_rec_end(&d, s);
    pw_file(&f, 0, &a, 1, 128, &d, NULL, 0);
    expect_error(&f, "too short for its 16-byte sample_id trailer");
    pw_free(&f);
    pw_free(&d);
    pw_init(&d, 0);
    s = pw_rec_begin(&d, 4, 0);
    pw_u64(&d, 0);
    pw_u64(&d, 0);
    pw_rec_end(&d, s);
    pw_file(&f, 0, &a, 1, 128, &d, NULL, 0);
    expect_error(&f, "EXIT record of 24 bytes");
    pw_free(&f);
    pw_free(&d);

    /* bad attr size, bad header size */
    pw_init(&d, 0);
    pw_file(&f, 0, &a, 1, 128, &d, NULL, 0);
    uint32_t bad = 40;
    memcpy(f.b + 104 + 4, &bad, 4); /* attr.size of attr 0 */
    expect_error(&f, "perf_event_attr size 40");
    uint64_t hs = 99;
    memcpy(f.b + 8, &hs, 8);
    expect_error(&f, "header size 99");
    pw_free(&f);
    pw_free(&d);

    /* a sample before any HEADER_ATTR in a pipe */
    pw_init(&d, 0);
    pw_pipe_header(&d);
    w_sample(&d, 1, 1, 1);
    expect_error(&d, "offset 0x10: record (type 9) before any event attribute");
    pw_free(&d);

    /* attr_size that does not divide the attr section (a flipped bit) */
    pw_init(&d, 0);
    pw_file(&f, 0, &a, 1, 128, &d, NULL, 0);
    f.b[18] ^= 2;
    expect_error(&f, "is not a multiple of attr_size");
    /* no attrs at all */
    memset(f.b + 32, 0, 8);
    f.b[18] ^= 2;
    expect_error(&f, "no event attributes");
    pw_free(&f);
    pw_free(&d);
}

static void test_not_perf(void **state)
{
    lp_error err;
    (void)state;
    lp_reader *r = lp_reader_open_mem("PERFFILE........", 16, "v1", NULL, &err);
    assert_null(r);
    assert_int_equal(err.code, LP_EUNSUPP);
    assert_non_null(strstr(err.msg, "v1"));
    r = lp_reader_open_mem("", 0, "empty", NULL, &err);
    assert_null(r);
    r = lp_reader_open("/nonexistent/perf.data", NULL, &err);
    assert_null(r);
    assert_int_equal(err.code, LP_EIO);
}

/* The stacks' identity: the branches' flags (cycles, prediction) do not
 * count, their addresses, the call chain and the lengths do; never {0, 0}
 * ("not computed"). */
static void test_stacks_id(void **state)
{
    uint64_t chain[3] = {0x401000, 0x402000, 0x403000}, *w = NULL;
    lp_branch_entry br[2] = {{0x401010, 0x401020, 5}, {0x402010, 0x402020, 9}};
    lp_stacks_id a, b;
    size_t cap = 0;

    (void)state;
    assert_int_equal(lp_stacks_id_of(chain, 3, br, 2, &w, &cap, &a), 0);
    assert_true(a.lo || a.hi);
    br[0].flags = 1234;         /* other cycles: the same identity */
    assert_int_equal(lp_stacks_id_of(chain, 3, br, 2, &w, &cap, &b), 0);
    assert_memory_equal(&a, &b, sizeof a);
    br[1].to++;                 /* another target */
    assert_int_equal(lp_stacks_id_of(chain, 3, br, 2, &w, &cap, &b), 0);
    assert_memory_not_equal(&a, &b, sizeof a);
    br[1].to--;
    assert_int_equal(lp_stacks_id_of(chain, 2, br, 2, &w, &cap, &b), 0);
    assert_memory_not_equal(&a, &b, sizeof a);  /* a shorter chain */
    /* the same words, split otherwise between chain and branches */
    assert_int_equal(lp_stacks_id_of(chain, 0, NULL, 0, &w, &cap, &b), 0);
    assert_true(b.lo || b.hi);
    assert_memory_not_equal(&a, &b, sizeof a);
    free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attr_sizes),
        cmocka_unit_test(test_all_sample_fields),
        cmocka_unit_test(test_thread_same_events),
        cmocka_unit_test(test_ahead),
        cmocka_unit_test(test_skip_payloads),
        cmocka_unit_test(test_record_types),
        cmocka_unit_test(test_pipe_unaligned),
        cmocka_unit_test(test_zstd_split_record),
        cmocka_unit_test(test_zstd_truncated_stream),
        cmocka_unit_test(test_zstd_bomb),
        cmocka_unit_test(test_time_order_rounds),
        cmocka_unit_test(test_time_order_stream),
        cmocka_unit_test(test_multi_event_ids),
        cmocka_unit_test(test_features),
        cmocka_unit_test(test_directory),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_cut_off),
        cmocka_unit_test(test_cut_off_stream),
        cmocka_unit_test(test_not_perf),
        cmocka_unit_test(test_stacks_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
