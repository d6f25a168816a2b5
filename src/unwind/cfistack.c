/*
 * cfistack.c - with the frame repair, the call stack of a sample that
 * carries user registers and stack, where its frame-pointer walk is not
 * provably right (code built without frame pointers, a frameless function
 * in the middle of the chain, libc between two frames, or no walk at all:
 * perf record --call-graph dwarf), unwound with the CFI of the program and
 * its libraries (src/cfiunwind): every mapped file's .eh_frame or
 * .debug_frame, opened once by path; the frame-pointer rule where no CFI
 * covers the code and the leaf classifier says the frame is set up.
 *
 * A walk is proven right, and kept, when it is the copy's rbp chain and
 * ends at a saved rbp of 0 (the ABI's end), the leaf's frame is set up (or
 * its missing caller, which the repair inserts from the stack, has its
 * frame set up) and every return address follows a call made with the
 * caller's frame set up, down to the first frame outside the binaries.
 *
 * Owns the choice between the two walks, the CFI stack's frame addresses
 * (call sites, ExternalAddr, signal frames followed by the interrupted
 * instruction, an unknown bottom when the walk ended early) and its leaf
 * against LBR[0]. Not the repair of frame-pointer walks (intake.c) nor the
 * unwinding (trie.c).
 */
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "lbr2prof/cfiunwind.h"
#include "unwind/uw_internal.h"
#include "util/hash.h"

typedef struct uw_cfifile {     /* a file's CFI, by path; NULL: unreadable */
    UT_hash_handle hh;
    lp_cfi *cfi;
    char path[];
} uw_cfifile;

/* find()'s answer for one page of code of one process, valid while the
 * unwinder's memo generation (bumped by every mmap and address-map
 * change) is the same */
typedef struct uw_where {
    uint64_t page, gen, bias;
    lp_cfi *cfi;
    uint32_t pid;
    int8_t rc;                  /* find()'s return; 1: empty slot */
} uw_where;

#define UW_WHERE_BITS 8

typedef struct uw_cfi {
    uw_cfifile *files;
    uw_where where[1u << UW_WHERE_BITS];
    lp_cfi_frame frames[LP_CFI_MAX_FRAMES];
} uw_cfi;

static uw_cfi *new_cfi(void)
{
    uw_cfi *c = calloc(1, sizeof *c);
    size_t i;

    for (i = 0; c && i < (1u << UW_WHERE_BITS); i++)
        c->where[i].rc = 1;
    return c;
}

void uw_cfi_free(lp_unwinder *u)
{
    uw_cfifile *f, *t;

    if (!u->cfi)
        return;
    HASH_ITER(hh, u->cfi->files, f, t) {
        HASH_DEL(u->cfi->files, f);
        lp_cfi_close(f->cfi);
        free(f);
    }
    free(u->cfi);
    u->cfi = NULL;
}

/* ---- where code is: a file's CFI and its load bias ---------------------- */

/* The CFI of path, opened at first use; a file that cannot give one is
 * remembered as such, with one warning. */
static lp_cfi *file_cfi(lp_unwinder *u, const char *path)
{
    uw_cfifile *f;
    size_t n = strlen(path) + 1;
    lp_error err;

    HASH_FIND(hh, u->cfi->files, path, n - 1, f);
    if (f)
        return f->cfi;
    if (!(f = calloc(1, sizeof *f + n)))
        return NULL;
    memcpy(f->path, path, n);
    if (!(f->cfi = lp_cfi_open(path, &err)))
        uw_warnf(u, "no CFI unwinding through %s: %s", path, err.msg);
    HASH_ADD(hh, u->cfi->files, path, n - 1, f);
    return f->cfi;
}

/* Where pc is: a profiled binary through the address map, else any
 * mapping of the trace (libc, ld.so, other libraries) by its path. */
static int locate(lp_unwinder *u, uint64_t pc, lp_cfi **cfi, uint64_t *bias)
{
    const uw_mmap *m;
    uint64_t va;
    int b;

    *cfi = NULL;
    *bias = 0;
    if (u->o.map && (b = lp_addrmap_resolve(u->o.map, u->pid, pc, &va)) >= 0 &&
        (size_t)b < u->nbins) {
        *cfi = file_cfi(u, lp_binary_path(u->bins[b]));
        *bias = pc - va;
        return 0;
    }
    if (!(m = uw_find_map(u, pc)))
        return -1;
    if (m->path[0] == '/' && (*cfi = file_cfi(u, m->path)) &&
        lp_cfi_vaddr_of_offset(*cfi, pc - m->start + m->pgoff, &va) == 0)
        *bias = pc - va;
    else
        *cfi = NULL;
    return 0;
}

/* lp_cfi_find_fn: locate(), cached per page. */
static int find(void *ctx, uint64_t pc, lp_cfi **cfi, uint64_t *bias)
{
    lp_unwinder *u = ctx;
    uint64_t page = pc >> 12;
    uw_where *w = &u->cfi->where[lp_hash_fib(page, UW_WHERE_BITS)];

    if (w->rc == 1 || w->page != page || w->pid != u->pid || w->gen != u->memo_gen) {
        w->rc = (int8_t)locate(u, pc, &w->cfi, &w->bias);
        w->page = page;
        w->pid = u->pid;
        w->gen = u->memo_gen;
    }
    *cfi = w->cfi;
    *bias = w->bias;
    return w->rc;
}

/* lp_cfi_fp_fn: code of a profiled binary whose frame is set up there
 * (for a return address: at its call). */
static bool fp_ok(void *ctx, uint64_t pc, bool exact)
{
    lp_unwinder *u = ctx;
    bool code;
    uint64_t a = uw_canon(u, pc, &code);

    if (code && !exact)
        a = uw_callsite(u, a);
    return code && a && uw_leaf_state(u, a) == LP_UW_LEAF_BODY;
}

/* ---- is the frame-pointer walk right? ------------------------------------ */

/* The frame at a return address: its function had its frame set up at
 * the call. */
static bool framed_call(lp_unwinder *u, uint64_t callsite)
{
    return callsite > UW_LAST_SENTINEL &&
           uw_leaf_state(u, callsite) == LP_UW_LEAF_BODY;
}

/* Whether the recorded walk st is the rbp chain of the copy and ends
 * where the stack does: its last frame record holds a saved rbp of 0, the
 * ABI's end of the chain (what _start leaves). A walk that stopped at a
 * broken record (code that uses rbp for data) ends elsewhere. */
static bool walk_ends(const lp_fpu_stack *stk, uint64_t fp, const uint64_t *st,
                      size_t nst)
{
    uint64_t ret, next;
    size_t i;

    for (i = 1; i < nst; i++) {
        if (lp_fpu_stack_read(stk, fp, &next) ||
            lp_fpu_stack_read(stk, fp + 8, &ret) || ret != st[i])
            return false;
        if (i + 1 == nst)
            return next == 0;
        if (next <= fp)
            return false;
        fp = next;
    }
    return false;                       /* no frame at all */
}

/* Whether the walk st (raw, leaf first) is right: it ends where the stack
 * does, the leaf's frame is set up (or its missing caller, which the
 * repair inserts from the stack, had its frame set up at the call), and
 * so had every caller in the binaries, down to the first frame outside
 * them, below which nothing of them may follow. */
static bool fp_walk_right(lp_unwinder *u, const lp_sample *ps,
                          const lp_cfi_regs *regs, const lp_fpu_stack *stk,
                          const uint64_t *st, size_t nst)
{
    uint64_t leaf, a;
    enum lp_uw_leaf s;
    bool code;
    size_t i;

    if (!(regs->known & (1u << LP_CFI_RBP)) ||
        !walk_ends(stk, regs->r[LP_CFI_RBP], st, nst) ||
        (leaf = uw_canon(u, st[0], &code), !code))
        return false;
    s = uw_leaf_state(u, leaf);
    if (s == LP_UW_LEAF_UNKNOWN ||
        (s != LP_UW_LEAF_BODY && !framed_call(u, uw_stack_caller(u, ps, st[0], leaf))))
        return false;
    for (i = 1; i < nst; i++) {
        a = uw_canon(u, st[i], &code);
        if (!code)
            break;
        if (!framed_call(u, uw_callsite(u, a)))
            return false;
    }
    for (; i < nst; i++)
        if (uw_canon(u, st[i], &code), code)
            return false;
    return true;
}

/* ---- the CFI stack as frame addresses -------------------------------------- */

/* One return address (frame i > 0): a call site, a signal frame (its
 * restorer), or ExternalAddr (also for a call site without debug info);
 * 0 for code that follows no call (the walk went wrong). */
static uint64_t ret_frame(lp_unwinder *u, uint64_t pc)
{
    bool code;
    uint64_t a = uw_canon(u, pc, &code), c = code ? uw_callsite(u, a) : 0;
    const lp_frame *f;
    size_t n;

    if (c)  /* code without debug info (a static binary's libc) has no
               place in a context: as external code, it starts one */
        return lp_binary_symbolize(uw_bin(u, c), uw_va(c), &f, &n, NULL) == 0 &&
                       n == 0 ? UW_EXT : c;
    if (uw_is_restorer(u, pc))  /* libc's, or a static binary's */
        return UW_SIG;
    return code ? 0 : UW_EXT;
}

/* u->cs from the walk's frames: returns the count; *cut when a return
 * address follows no call (the stack then ends unknown there). */
static size_t cfi_frames(lp_unwinder *u, const lp_cfi_frame *f, size_t n,
                         bool *cut)
{
    uint64_t a;
    size_t i, k = 0;
    bool code;

    *cut = false;
    for (i = 0; i < n; i++) {
        if (i == 0 || f[i].exact) {
            /* the sampled pc, or the pc a signal interrupted: the frame
             * below is then the signal trampoline's */
            a = uw_canon(u, f[i].pc, &code);
            if (i == 0 && !code)
                u->st.leaf_external += u->calls;
            if (i > 0 && u->cs[k - 1] > UW_LAST_SENTINEL)
                u->cs[k++] = UW_SIG;
            else if (i > 0)
                u->cs[k - 1] = UW_SIG;  /* the trampoline's frame */
            else if (!code && uw_is_restorer(u, f[i].pc))
                a = UW_SIG;
            u->cs[k++] = a;
        } else if (!(a = ret_frame(u, f[i].pc))) {
            *cut = true;
            return k;
        } else if (a != UW_EXT || u->cs[k - 1] != UW_EXT) {
            u->cs[k++] = a;
        }
    }
    return k;
}

/* The recorded walk's frames st[i..] below the CFI stack's k frames,
 * while provably right (as fp_walk_right); returns the count. *cut: the
 * stack ends unknown. */
static size_t fp_tail(lp_unwinder *u, const uint64_t *st, size_t nst,
                      size_t i, size_t k, bool *cut)
{
    bool code, ext = false;
    uint64_t a;

    for (*cut = false; i < nst; i++) {
        a = uw_canon(u, st[i], &code);
        if (code && (ext || !framed_call(u, (a = uw_callsite(u, a))))) {
            *cut = true;
            return k;
        }
        ext = !code;
        if (code || u->cs[k - 1] != UW_EXT)
            u->cs[k++] = a;
    }
    return k;
}

/* Where the recorded walk goes on below a CFI walk that ran out of the
 * stack copy: the last frame has its frame set up and its rbp is the k-th
 * frame pointer the recorded walk followed (fp_1 the sampled rbp, fp_i+1
 * = [fp_i] while inside the copy; st[k] = [fp_k + 8]). k, or 0. */
static size_t splice_at(lp_unwinder *u, const lp_cfi_result *r,
                        const lp_cfi_frame *last, const lp_cfi_regs *regs,
                        const lp_fpu_stack *stk, size_t nst)
{
    uint64_t fp = regs->r[LP_CFI_RBP], next;
    size_t k;

    if (r->stop != LP_CFI_STOP_STACK || !(r->last.known & (1u << LP_CFI_RBP)) ||
        !(regs->known & (1u << LP_CFI_RBP)) || !fp_ok(u, last->pc, last->exact))
        return 0;
    for (k = 1; k < nst; k++) {
        if (fp == r->last.r[LP_CFI_RBP])
            return k;
        if (lp_fpu_stack_read(stk, fp, &next) || next <= fp)
            return 0;
        fp = next;
    }
    return 0;
}

static void count(lp_unwinder *u, const lp_cfi_result *r, const uint64_t *st,
                  size_t nst, size_t from, bool unknown, uint64_t n)
{
    const lp_cfi_frame *f = u->cfi->frames;
    size_t i;
    bool same = true;           /* no frame of the recorded walk differs */

    u->st.cfi_stacks += n;
    for (i = 1; i < r->frames; i++) {
        if (f[i].how == LP_CFI_HOW_CFI)
            u->st.cfi_frames += n;
        else
            u->st.cfi_fp_frames += n;
        same = same && (i >= nst || st[i] == f[i].pc);
    }
    if (from)
        u->st.cfi_fp_frames += (nst - from) * n;
    if (!same)
        u->st.cfi_changed += n;
    if (unknown)
        u->st.cfi_partial += n;
}

/* The call stack from the walk's frames and, below them, from the
 * recorded walk or nothing known. */
static size_t to_frames(lp_unwinder *u, const lp_cfi_result *r,
                        const lp_cfi_regs *regs, const lp_fpu_stack *stk,
                        const uint64_t *st, size_t nst, uint64_t n)
{
    const lp_cfi_frame *f = u->cfi->frames;
    size_t from = 0, k;
    bool cut;

    if (r->frames > 0)
        from = splice_at(u, r, &f[r->frames - 1], regs, stk, nst);
    k = cfi_frames(u, f, r->frames, &cut);
    if (!cut && from)
        k = fp_tail(u, st, nst, from, k, &cut);
    else if (!cut && r->stop != LP_CFI_STOP_END)
        cut = true;
    /* below external code only what the LBR may show matters: contexts
     * start after it */
    count(u, r, st, nst, cut ? 0 : from, cut && k > 0 && u->cs[k - 1] != UW_EXT, n);
    if (cut)
        u->cs[k++] = UW_LOST;           /* the callers below are not known */
    else if (k > 1 && u->cs[k - 1] == UW_EXT)
        k--;                            /* as extractCallstack */
    return k;
}

int uw_cfi_stack(lp_unwinder *u, const lp_hybrid_sample *s, const uint64_t *st,
                 size_t nst, size_t *ncs)
{
    const lp_sample *ps = s->regs_stack;
    lp_cfi_walker w = {find, fp_ok, u};
    uint64_t n = s->repeat ? s->repeat : 1;
    lp_cfi_result r;
    lp_cfi_regs regs;
    lp_fpu_stack stk;

    if (!u->o.repair_frames || !ps || !ps->stack_user || !ps->stack_user_size ||
        lp_cfi_regs_from_perf(ps->regs_user_abi, ps->regs_user_mask,
                              ps->regs_user, &regs) ||
        (nst > 0 && st[0] != regs.r[LP_CFI_RA]))
        return 0;
    stk.base = regs.r[LP_CFI_RSP];
    stk.data = ps->stack_user;
    stk.size = ps->stack_user_dyn_size && ps->stack_user_dyn_size < ps->stack_user_size
                   ? ps->stack_user_dyn_size : ps->stack_user_size;
    if (fp_walk_right(u, ps, &regs, &stk, st, nst))
        return 0;
    if (!u->cfi && !(u->cfi = new_cfi()))
        return -1;
    r = lp_cfi_unwind(&w, &regs, &stk, u->cfi->frames, LP_CFI_MAX_FRAMES);
    if (r.frames < 2 && r.stop != LP_CFI_STOP_END &&
        !splice_at(u, &r, &u->cfi->frames[0], &regs, &stk, nst)) {
        u->st.cfi_failed += n;
        return 0;
    }
    if (uw_grow((void **)&u->cs, &u->cs_cap, 2 * r.frames + nst + 2, sizeof *u->cs))
        return -1;
    *ncs = to_frames(u, &r, &regs, &stk, st, nst, n);
    return 1;
}

/* ---- the leaf against LBR[0] ------------------------------------------------ */

/* The exact stack's caller of a leaf whose caller frame-pointer walks
 * miss against the LBR's, where it shows one: a check of both. */
static void check_caller(lp_unwinder *u, size_t ncs, long nlbr, uint64_t n,
                         bool exact)
{
    enum lp_uw_leaf s;
    uint64_t c;

    if (ncs < 2 || u->cs[0] <= UW_LAST_SENTINEL || u->cs[1] == UW_LOST)
        return;
    s = uw_leaf_state(u, u->cs[0]);
    if (s != LP_UW_LEAF_ENTRY && s != LP_UW_LEAF_EXIT && s != LP_UW_LEAF_FRAMELESS)
        return;
    if ((c = uw_lbr_caller(u, u->lbr, (size_t)nlbr)) == 0)
        return;
    if (c == u->cs[1])
        *(exact ? &u->st.exact_lbr_agree : &u->st.cfi_lbr_agree) += n;
    else
        *(exact ? &u->st.exact_lbr_disagree : &u->st.cfi_lbr_disagree) += n;
}

int uw_cfi_leaf(lp_unwinder *u, size_t *ncs, long nlbr, uint64_t n, bool exact)
{
    uint64_t t;

    if (nlbr <= 0)
        return 0;
    if ((t = u->lbr[0].dst) == UW_SIG) {
        u->st.signal_frames += n;       /* the unwinding puts it on */
        return 0;
    }
    if (u->cs[0] == UW_EXT || (u->cs[0] != UW_SIG && uw_fallthrough(u, t, u->cs[0]))) {
        check_caller(u, *ncs, nlbr, n, exact);
        return 0;
    }
    if (*ncs >= 3 && u->cs[1] == UW_SIG && u->cs[0] != UW_SIG) {
        /* a handler sampled before its first branch: LBR[0]'s code ran in
         * the interrupted frame, which the stack shows */
        u->st.signal_frames += n;
        memmove(u->cs, u->cs + 2, (*ncs - 2) * sizeof *u->cs);
        *ncs -= 2;
        return 0;
    }
    u->st.interrupted += n;
    u->cs[0] = t;
    u->cs[1] = UW_LOST;
    *ncs = 2;
    return uw_note_add(&u->notes_lost, UW_LOST_ASYNC, t, n);
}
