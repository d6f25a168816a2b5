/*
 * fuzz_unwind_warm.c - differential libFuzzer target for the unwinder's
 * work ahead (lp_unwind_warm_next: an unwinding recorded in idle time and
 * replayed with the final count at the flush). The input (after one
 * option byte) is perf script text; every event goes to two unwinders on
 * noinline-cs-noprobe's binary, one of which is also given warm-ahead
 * calls after each sample (as the reader's idle function would call it,
 * in the amount the option byte says) and may see each sample again. The
 * two must agree on everything they hand over: the unsymbolized profile,
 * every statistic, the warnings (detailed ones included) and any error;
 * a difference aborts. The option byte also picks frame repair. Run from
 * the project root; seed with tests/data/llvm-profgen-inputs/
 * *.perfscript.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/binary.h"
#include "lbr2prof/ctxcount.h"
#include "lbr2prof/reader.h"
#include "lbr2prof/unwind.h"

#define BIN "tests/data/llvm-profgen-inputs/noinline-cs-noprobe.perfbin"

/* One unwinder and what it reported. */
typedef struct side {
    lp_unwinder *u;
    FILE *warn;                 /* its warnings, one per line */
    char *warn_buf;
    size_t warn_len;
    int failed;                 /* an error was returned */
} side;

static void keep(void *ctx, const char *msg)
{
    fprintf(((side *)ctx)->warn, "%s\n", msg);
}

static int open_side(side *s, lp_binary **b, bool repair)
{
    lp_unwind_opts o;
    lp_error e;

    memset(s, 0, sizeof *s);
    if (!(s->warn = open_memstream(&s->warn_buf, &s->warn_len)))
        return -1;
    lp_unwind_opts_default(&o);
    o.repair_frames = repair;
    o.warn = keep;
    o.warn_ctx = s;
    o.show_detailed_warning = true;
    return (s->u = lp_unwind_new(b, 1, &o, &e)) ? 0 : -1;
}

static void feed(side *s, const lp_event *ev, int warm, int times)
{
    const lp_sample *x = &ev->u.sample;
    lp_hybrid_sample h = {.stack = x->callchain, .nstack = x->callchain_nr,
                          .br = x->branches, .nbr = x->branch_nr,
                          .repeat = x->repeat};
    lp_error e;
    int t, w;

    if (s->failed)
        return;
    if (ev->kind == LP_EV_MMAP) {
        s->failed = lp_unwind_mmap(s->u, &ev->u.mmap, &e) != 0;
        return;
    }
    if (ev->kind != LP_EV_SAMPLE || x->callchain_nr == 0)
        return;
    for (t = 0; t < times && !s->failed; t++) {
        s->failed = lp_unwind_sample(s->u, &h, &e) != 0;
        for (w = 0; t == 0 && w < warm && lp_unwind_warm_next(s->u); w++)
            ;
    }
}

/* The raw profile after finishing, or NULL on error (then s->failed). */
static char *finish(side *s, uint64_t base)
{
    lp_ctxcount *cc = s->failed ? NULL : lp_unwind_finish(s->u, &(lp_error){0});
    char *buf = NULL;
    size_t len;
    FILE *f;

    if (!cc) {
        s->failed = 1;
        return NULL;
    }
    if ((f = open_memstream(&buf, &len))) {
        if (lp_ctxcount_write_raw(f, cc, 0, base, &(lp_error){0}))
            s->failed = 1;
        fclose(f);
    }
    lp_ctxcount_free(cc);
    return buf;
}

/* The statistics but `replayed`, the one the warming changes by design
 * (samples replayed from their recording ahead). */
static lp_unwind_stats stats_compared(const side *s)
{
    lp_unwind_stats st = *lp_unwind_stats_get(s->u);

    st.replayed = 0;
    return st;
}

static void same_or_abort(side *a, side *b, char *pa, char *pb)
{
    lp_unwind_stats sa = stats_compared(a), sb = stats_compared(b);

    fflush(a->warn);
    fflush(b->warn);
    if (a->failed != b->failed || (pa && pb && strcmp(pa, pb) != 0) ||
        (!a->failed && memcmp(&sa, &sb, sizeof sa) != 0) ||
        a->warn_len != b->warn_len ||
        memcmp(a->warn_buf, b->warn_buf, a->warn_len) != 0) {
        fprintf(stderr, "warm-ahead unwinding differs\n--- cold\n%s%s\n"
                "--- warm\n%s%s\n", pa ? pa : "(failed)\n", a->warn_buf,
                pb ? pb : "(failed)\n", b->warn_buf);
        abort();
    }
}

static void close_side(side *s)
{
    lp_unwind_free(s->u);
    if (s->warn)
        fclose(s->warn);
    free(s->warn_buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static lp_binary *bin;
    lp_reader_opts ro = {.force_text = 1};
    const lp_event *ev;
    lp_reader *r;
    lp_error e;
    side cold, warm;
    char *pc, *pw;
    int warm_calls, times;

    if (size < 2 || (!bin && !(bin = lp_binary_open(BIN, NULL, &e))))
        return 0;
    memset(&cold, 0, sizeof cold);
    memset(&warm, 0, sizeof warm);
    warm_calls = data[0] & 2 ? 8 : 1;
    times = data[0] & 4 ? 3 : 1;
    if (open_side(&cold, &bin, data[0] & 1) ||
        open_side(&warm, &bin, data[0] & 1) ||
        !(r = lp_reader_open_mem(data + 1, size - 1, "fuzz", &ro, &e))) {
        close_side(&cold);
        close_side(&warm);
        return 0;
    }
    while (lp_reader_next(r, &ev, &e) == 1) {
        feed(&cold, ev, 0, times);
        feed(&warm, ev, warm_calls, times);
    }
    lp_reader_close(r);
    pc = finish(&cold, lp_binary_preferred_base(bin));
    pw = finish(&warm, lp_binary_preferred_base(bin));
    same_or_abort(&cold, &warm, pc, pw);
    free(pc);
    free(pw);
    close_side(&cold);
    close_side(&warm);
    return 0;
}
