/*
 * intake.c - hybrid samples in, as llvm-profgen 19's HybridPerfReader takes
 * them: addresses canonicalized (through the address map, any binary; else
 * the single base; anything that is not an instruction start becomes
 * ExternalAddr), the call stack turned into call-site addresses
 * (extractCallstack: external frames merged, the trailing one dropped, a
 * return address not preceded by a call truncates the stack), samples with
 * a prolog/epilog leaf dropped, the LBR canonicalized with
 * external->external entries dropped (extractLBRStack), the leaf replaced
 * by LBR[0]'s target, and identical samples aggregated with a repeat
 * count. With the frame repair: the caller the frame-pointer walk missed
 * put back from the LBR or the user stack (else a hole, or dropped),
 * signal restorers made signal frames (in the walk and as LBR targets), a
 * leaf entered asynchronously after LBR[0] given the interrupted code's
 * stack, and a walk that ends nowhere (no frame, an unmapped or invalid
 * return address) given an unknown bottom. Owns the aggregation table's
 * key encoding; not the unwinding itself (trie.c).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>

#include "unwind/uw_internal.h"
#include "util/hash.h"
#include "util/varint.h"
#include "util/zalloc.h"

/* ---- one address --------------------------------------------------------- */

/* The only place a recorded address becomes a link-time one: through the
 * per-process address map (perf.data: any of the binaries), else
 * llvm-profgen's single base (binary 0); then "code" = an instruction
 * start of that binary. *flags: its uw_ainfo flags (0: not code). */
static uint64_t canon(lp_unwinder *u, uint64_t rt, uint8_t *flags)
{
    uint64_t c = rt - u->base + u->preferred;
    const uw_ainfo *ai;
    int b;

    *flags = 0;
    if (u->o.map) {
        if ((b = lp_addrmap_resolve(u->o.map, u->pid, rt, &c)) < 0 ||
            (size_t)b >= u->nbins || !uw_va_fits(c))
            return UW_EXT;
        c = uw_enc((size_t)b, c);
    } else if (!uw_va_fits(c)) {
        return UW_EXT;
    } else {
        c = uw_enc(0, c);
    }
    if (c <= UW_EXT || !((ai = uw_addr(u, c))->flags & UW_AI_CODE))
        return UW_EXT;
    *flags = ai->flags;
    return c;
}

/* Through the cache: a sample's ~70 addresses are mostly ones seen
 * before (the address map's lookups were a quarter of the intake). The
 * slot of rt, or *tmp filled when there is no cache; valid until the
 * next call. */
static const uw_cslot *canon_slot(lp_unwinder *u, uint64_t rt, uw_cslot *tmp)
{
    uint32_t gen = (uint32_t)u->memo_gen + 1;
    uw_cslot *s;

    if (!u->canon &&
        !(u->canon = lp_zalloc_written(((size_t)1 << UW_CS_BITS) * sizeof *u->canon))) {
        tmp->c = canon(u, rt, &tmp->flags);
        return tmp;
    }
    s = &u->canon[uw_mix(rt, u->pid) & (((size_t)1 << UW_CS_BITS) - 1)];
    if (s->gen != gen || s->rt != rt || s->pid != u->pid) {
        uint8_t f;
        uint64_t c = canon(u, rt, &f);
        *s = (uw_cslot){rt, c, u->pid, gen ? gen : 1, f};
    }
    return s;
}

uint64_t uw_canon(lp_unwinder *u, uint64_t rt, bool *code)
{
    uw_cslot tmp;
    const uw_cslot *s = canon_slot(u, rt, &tmp);

    *code = s->c != UW_EXT;
    return s->c;
}

/* --kernel: the whole callchain without its markers, as perf script
 * prints it (kernel frames, then user ones, external to the kernel). */
static int without_markers(lp_unwinder *u, const lp_hybrid_sample *s, const uint64_t **st,
                           size_t *n)
{
    size_t i, k = 0;

    if (uw_grow((void **)&u->kst, &u->kst_cap, s->nstack + 1, sizeof *u->kst))
        return -1;
    for (i = 0; i < s->nstack; i++)
        if (s->stack[i] < LP_CONTEXT_MAX)
            u->kst[k++] = s->stack[i];
    *st = u->kst;
    *n = k;
    return 0;
}

/* The user part of a perf.data callchain: the entries after
 * PERF_CONTEXT_USER up to the next marker. Without markers, all. With
 * --kernel, every entry but the markers. -1 on OOM. */
static int user_part(lp_unwinder *u, const lp_hybrid_sample *s, const uint64_t **st,
                     size_t *n)
{
    size_t i, j;

    *st = s->stack;
    *n = s->nstack;
    if (!s->markers)
        return 0;
    if (u->o.kernel)
        return without_markers(u, s, st, n);
    for (i = 0; i < s->nstack && s->stack[i] != LP_CONTEXT_USER; i++)
        ;
    if (i == s->nstack) {
        for (j = 0; j < s->nstack && s->stack[j] < LP_CONTEXT_MAX; j++)
            ;
        *n = j == s->nstack ? s->nstack : 0; /* no marker at all: all */
        return 0;
    }
    for (j = i + 1; j < s->nstack && s->stack[j] < LP_CONTEXT_MAX; j++)
        ;
    *st = s->stack + i + 1;
    *n = j - i - 1;
    return 0;
}

/* With the repair, a return address that is a signal restorer: the frame
 * above it is a signal handler's, entered by the kernel; the frames below
 * are the interrupted code's minus the interrupted frame itself, a hole
 * filled in when the unwinding reaches the delivery (trie.c). */
static bool sig_frame(lp_unwinder *u, uint64_t rt, bool code, uint64_t a)
{
    if (!u->o.repair_frames || (code && uw_callsite(u, a) != 0))
        return false;
    return uw_is_restorer(u, rt);
}

/* extractCallstack. Fills u->cs (room for one more frame is kept for the
 * repair); returns the frame count, -1 on OOM. */
static long extract_stack(lp_unwinder *u, const uint64_t *st, size_t n,
                          bool *truncated)
{
    size_t i, k = 0;
    uint64_t a, c;
    bool code;

    if (uw_grow((void **)&u->cs, &u->cs_cap, 2 * n + 4, sizeof *u->cs))
        return -1;
    *truncated = false;
    for (i = 0; i < n; i++) {
        a = uw_canon(u, st[i], &code);
        if (k > 0 && sig_frame(u, st[i], code, a)) {
            u->cs[k++] = UW_SIG;
            u->cs[k++] = UW_HOLE;
            continue;
        }
        if (!code && k > 0 && u->o.repair_frames && !uw_is_mapped(u, st[i])) {
            /* no return address: the walk went astray, the callers from
             * here on are not known */
            u->cs[k++] = UW_LOST;
            break;
        }
        if (!code) {
            if (k == 0)
                u->st.leaf_external += u->calls;
            if (k == 0 || u->cs[k - 1] != UW_EXT)
                u->cs[k++] = UW_EXT;
            continue;
        }
        if (k > 0) {
            if (!(c = uw_callsite(u, a))) {
                if (uw_set_add(&u->invalid_ret, a))
                    return -1;
                *truncated = true;
                if (u->o.repair_frames)
                    u->cs[k++] = UW_LOST; /* the callers are not known */
                break;
            }
            a = c;
        }
        u->cs[k++] = a;
    }
    if (k > 1 && u->cs[k - 1] == UW_EXT)
        k--;
    if (n == 1 && k == 1 && u->o.repair_frames)
        u->cs[k++] = UW_LOST;   /* the walk found no frame at all (rbp 0 or
                                   garbage): nothing is known of the callers */
    return (long)k;
}

/* extractLBRStack: canonical entries, external -> external dropped. */
static long extract_lbr(lp_unwinder *u, const lp_branch_entry *br, size_t n)
{
    size_t i, k = 0;
    const uw_cslot *cs;
    uw_cslot tmp;
    bool sc, dc, ret;

    if (uw_grow((void **)&u->lbr, &u->lbr_cap, n + 1, sizeof *u->lbr))
        return -1;
    for (i = 0; i < n; i++) {
        cs = canon_slot(u, br[i].from, &tmp);
        u->lbr[k].src = cs->c;
        sc = cs->c != UW_EXT;
        ret = cs->flags & UW_AI_RET;
        u->lbr[k].dst = uw_canon(u, br[i].to, &dc);
        /* a handler returning to its restorer (only the repair asks) */
        if (sc && ret && u->o.repair_frames &&
            sig_frame(u, br[i].to, dc, u->lbr[k].dst))
            u->lbr[k].dst = UW_SIG;
        if (k == 0)
            u->lbr0_to = br[i].to;
        if (sc || dc)
            k++;
    }
    return (long)k;
}

static void warn_missing_mmap(lp_unwinder *u)
{
    if (u->missing_warned || (u->o.map ? !u->o.kernel || lp_addrmap_loaded(u->o.map, 0)
                                       : u->loaded_by_mmap))
        return;
    uw_warnf(u, "No relevant mmap event is matched for %s, will use preferred "
                "address (0x%" PRIx64 ") as the base loading address!",
             u->name, u->preferred);
    u->missing_warned = true;
}

/* A detailed-warning note from the intake: such an intake is not
 * memoized (its notes would have to be replayed too). */
/* A detailed-warning note: only kept when they are printed, so that
 * samples whose intake would add one can still be taken in once and
 * replayed (the memo does not remember intakes that added notes). */
static int intake_note(lp_unwinder *u, uw_note **set, uint64_t a, uint64_t b,
                       uint64_t n)
{
    if (!u->o.show_detailed_warning)
        return 0;
    u->intake_notes++;
    return uw_note_add(set, a, b, n);
}

/* ---- frame repair --------------------------------------------------------- */

/* Going back in time through the LBR from the sampled function, the call
 * that entered the current frame: nested call/return pairs are balanced
 * (a return seen going backwards enters a callee, the call that made it
 * leaves it again). A range that is no fall-through ends the search: the
 * code before it ran somewhere else (a signal handler entered by the
 * kernel has no call at all). Calls and returns are classified as the unwinder does:
 * a ret instruction or an external source landing right after a call is a
 * return; a call instruction or any other external source is a call. The
 * call must land on a function entry (an interrupt lands anywhere).
 * Returns its source (ExternalAddr for a call from outside the binary), 0
 * if the LBR does not show it. */
uint64_t uw_lbr_caller(lp_unwinder *u, const uw_lbr *lbr, size_t n)
{
    const lp_func_range *fr;
    size_t i, depth = 0;
    bool ret, call;

    for (i = 0; i < n; i++) {
        if (lbr[i].dst == UW_SIG ||
            (i > 0 && !uw_fallthrough(u, lbr[i].dst, lbr[i - 1].src)))
            return 0;           /* entered asynchronously: no proof */
        if (lbr[i].src == UW_EXT) {
            ret = uw_callsite(u, lbr[i].dst) != 0;
            call = !ret;
        } else {
            uw_ainfo *e = uw_addr(u, lbr[i].src);
            ret = e->flags & UW_AI_RET;
            call = e->flags & UW_AI_CALL;
        }
        if (ret) {
            depth++;
        } else if (call && depth > 0) {
            depth--;
        } else if (call) {
            fr = uw_func_range(u, lbr[i].dst);
            return fr && fr->is_entry && fr->start == uw_va(lbr[i].dst) ? lbr[i].src : 0;
        }
    }
    return 0;
}

enum keep { DROP = 0, KEEP = 1 };

typedef struct intake {         /* the sample being taken in */
    const lp_hybrid_sample *s;
    uint64_t ip;                /* its user IP as recorded */
    uint64_t n;                 /* its weight */
} intake;

/* The leaf's caller from the sample's user registers and stack: the
 * return address at [sp + k] (lp_leaf_repair_stack, k from the leaf's
 * state), as a frame address: a call site, ExternalAddr, or a signal frame
 * (the handler's restorer). 0 when the sample has no usable stack, the
 * leaf's caller is not missing, or the address is no return address. */
uint64_t uw_stack_caller(lp_unwinder *u, const lp_sample *ps, uint64_t ip,
                         uint64_t leaf)
{
    uint64_t chain[2] = {ip, 0}, a;
    lp_fpu_regs regs;
    lp_fpu_stack st;
    lp_leaf_info li;
    size_t n = 1;
    bool code;

    if (!ps || !ps->stack_user_size || !ps->stack_user ||
        lp_fpu_regs_from_perf(ps->regs_user_abi, ps->regs_user_mask,
                              ps->regs_user, &regs) ||
        regs.ip != ip || leaf <= UW_LAST_SENTINEL)
        return 0;
    st.base = regs.sp;
    st.data = ps->stack_user;
    st.size = ps->stack_user_dyn_size && ps->stack_user_dyn_size < ps->stack_user_size
                  ? ps->stack_user_dyn_size : ps->stack_user_size;
    if ((!u->leaves && !(u->leaves = lp_leaf_cache_new(NULL))) ||
        lp_binary_arch(uw_bin(u, leaf)) != LP_ARCH_X86_64 ||
        lp_leaf_classify_cached(u->leaves, uw_bin(u, leaf), uw_va(leaf), &li, NULL) < 0 ||
        lp_leaf_repair_stack(&li, &regs, &st, chain, &n, 2,
                             LP_LEAF_CHAIN_IS_FP_WALK, NULL) != 1)
        return 0;
    a = uw_canon(u, chain[1], &code);
    if (code)
        return uw_callsite(u, a);
    if (uw_is_restorer(u, chain[1]))
        return UW_SIG;
    return uw_is_mapped(u, chain[1]) ? UW_EXT : 0;
}

/* Insert frame(s) at cs[1]: a caller (or a hole), or a signal frame with
 * the hole for the interrupted frame. */
static void insert_caller(lp_unwinder *u, size_t *ncs, uint64_t caller)
{
    size_t k = caller == UW_SIG ? 2 : 1;

    memmove(u->cs + 1 + k, u->cs + 1, (*ncs - 1) * sizeof *u->cs);
    u->cs[1] = caller;
    if (k == 2)
        u->cs[2] = UW_HOLE;
    *ncs += k;
}

/* Whether function f has a direct call to itself. */
static bool calls_itself_directly(lp_binary *b, const lp_function *f)
{
    const lp_func_range *t;
    uint64_t a, next;
    lp_inst in;
    size_t i;

    for (i = 0; i < f->nranges; i++)
        for (a = f->ranges[i]->start; a < f->ranges[i]->end; a = next) {
            if (lp_binary_inst(b, a, &in, NULL) == 1 && in.kind == LP_INST_CALL &&
                !in.indirect && (t = lp_binary_func_range(b, in.target)) &&
                t->func == f)
                return true;
            if (lp_binary_next_inst(b, a, &next, NULL) != 1)
                break;
        }
    return false;
}

/* A chain not known to be a kernel frame-pointer walk (perf script text:
 * it may come from a DWARF or LBR call graph) whose frame 1 is a direct
 * call to the leaf's function: that is the caller, as llvm-profgen takes
 * it. A frame-pointer walk could only show such a site for a grandparent
 * that called the leaf's function too: recursion, so not when the
 * function calls itself directly. */
static bool chain_has_caller(lp_unwinder *u, size_t ncs, uint64_t leaf)
{
    const lp_func_range *fr = uw_func_range(u, leaf), *tr;
    uint64_t c = ncs > 1 ? u->cs[1] : 0;
    lp_binary *b;
    lp_inst in;

    if (!fr || c <= UW_LAST_SENTINEL || c == UW_EXT || uw_bin_of(c) != uw_bin_of(leaf))
        return false;
    b = uw_bin(u, c);
    if (lp_binary_inst(b, uw_va(c), &in, NULL) != 1 || in.kind != LP_INST_CALL ||
        in.indirect || !(tr = lp_binary_func_range(b, in.target)))
        return false;
    return tr->func == fr->func && tr->is_entry && tr->start == in.target &&
           !calls_itself_directly(b, fr->func);
}

/* A leaf whose caller the walk may lack and nothing shows (why: 0 not
 * known, 1 entry, 2 exit, 3 frameless). A hole the unwinding fills in if
 * it gets to the call (past a signal handler, say); what stays above it is
 * kept in contexts truncated there, or under a caller inferred from the
 * program's calls (collect.c, infer.c). A recorded kernel walk certainly
 * lacks the caller; a chain of unknown origin (text) may have it, so its
 * hole is optional (UW_OPT: spliced out when the call turns out to come
 * from frame 1). With drop_unknown, only a kernel walk keeps its hole, as
 * before; other samples are dropped and counted. */
static enum keep unknown_caller(lp_unwinder *u, size_t *ncs, uint64_t leaf,
                                uint64_t why, const intake *in)
{
    bool certain = in->s->fp_walk && why != 0;

    if (u->o.drop_unknown && !certain) {
        u->st.dropped_prolog += in->n;
        intake_note(u, &u->notes_dropped, leaf, why, in->n);
        return DROP;
    }
    insert_caller(u, ncs, certain ? UW_HOLE : UW_OPT);
    u->st.caller_hole += in->n;
    return KEEP;
}

/* With the repair, a leaf in external code (libc, say): code without a
 * frame pointer, as external code mostly is, leaves %rbp to its caller
 * in the binary, so the walk's frame 1 is that caller's caller, or, after
 * a tail call from the binary, the one before - unless the external code
 * did set up a frame. Frame 1 is kept below an optional hole (UW_OPT):
 * the call the LBR shows into the external code reveals it, or splices
 * it out when it came from frame 1 itself; a tail jump leaves it to the
 * inference (infer.c) or truncates there. llvm-profgen (and
 * --drop-unknown-callers) put the binary's code of such a frame under
 * frame 1: after a tail call, a context without the tail-calling
 * function's caller. */
static void external_leaf(lp_unwinder *u, size_t *ncs)
{
    if (u->o.repair_frames && !u->o.drop_unknown && *ncs >= 2 &&
        u->cs[1] > UW_LAST_SENTINEL && u->cs[1] != UW_EXT)
        insert_caller(u, ncs, UW_OPT);
}

/* Decide a sample whose leaf is code: llvm-profgen drops it when the leaf
 * is in its prolog/epilog set. With repair, a leaf where the frame-pointer
 * walk cannot have seen the caller gets the caller from the LBR (inserted
 * as frame 1 unless it is there already - which a recorded kernel walk
 * never has -, an external caller merged with an external frame 1), from
 * the user stack, or an unknown caller (unknown_caller); a leaf whose
 * frame is set up is kept even in that set. *ncs may grow by one. */
static enum keep decide(lp_unwinder *u, size_t *ncs, long nlbr,
                        const intake *in)
{
    uint64_t leaf = u->cs[0], caller, sc, n = in->n;
    bool fp_walk = in->s->fp_walk;
    enum lp_uw_leaf s;
    bool in_pe = uw_in_prolog_epilog(u, leaf);

    if (!u->o.repair_frames) {
        if (in_pe)
            u->st.dropped_prolog += n;
        return in_pe ? DROP : KEEP;
    }
    s = uw_leaf_state(u, leaf);
    if (s == LP_UW_LEAF_BODY || s == LP_UW_LEAF_UNKNOWN) {
        if (in_pe && s == LP_UW_LEAF_UNKNOWN)
            return unknown_caller(u, ncs, leaf, 0, in);
        if (in_pe)
            u->st.kept_intact += n;
        return KEEP;
    }
    caller = nlbr > 0 ? uw_lbr_caller(u, u->lbr, (size_t)nlbr) : 0;
    sc = uw_stack_caller(u, in->s->regs_stack, in->ip, leaf);
    if (caller && sc) {         /* both: the LBR has priority */
        if (caller == sc)
            u->st.stack_agree += n;
        else
            u->st.stack_disagree += n;
    } else if (sc) {
        caller = sc;
        u->st.repaired_stack += n;
        intake_note(u, &u->notes_repaired, leaf, caller, n);
        insert_caller(u, ncs, caller);
        return KEEP;
    }
    if (!caller && !fp_walk && chain_has_caller(u, *ncs, leaf)) {
        u->st.already_right += n;
        return KEEP;
    }
    if (!caller)
        return unknown_caller(u, ncs, leaf, (uint64_t)s - 1, in);
    if (*ncs > 1 && u->cs[1] == caller && (!fp_walk || caller == UW_EXT)) {
        u->st.already_right += n;
        return KEEP;
    }
    insert_caller(u, ncs, caller);
    u->st.repaired += n;
    intake_note(u, &u->notes_repaired, leaf, caller, n);
    return KEEP;
}

/* With the repair: whether the code from LBR[0]'s target can have run to
 * the sampled IP (cs[0]) without a taken branch. If not, something was
 * entered asynchronously after LBR[0]: a signal handler (cs[1] is then a
 * signal frame, the frames after its hole the interrupted code's), or
 * nothing the data shows. The stack is rebuilt for LBR[0]'s code: the
 * interrupted frame on the frames below the signal frame, or on an
 * unknown stack. Returns true if so (the leaf's own state then does not
 * matter). */
static bool async_leaf(lp_unwinder *u, size_t *ncs, const intake *in)
{
    uint64_t t = u->lbr[0].dst, head[2], n = in->n;
    size_t m;

    if (u->cs[0] == UW_EXT || uw_fallthrough(u, t, u->cs[0]))
        return false;
    if ((*ncs < 2 || u->cs[1] != UW_SIG) &&
        uw_stack_caller(u, in->s->regs_stack, in->ip, u->cs[0]) == UW_SIG)
        insert_caller(u, ncs, UW_SIG); /* a handler not set up yet */
    if (*ncs >= 3 && u->cs[1] == UW_SIG && u->cs[2] == UW_HOLE) {
        u->st.signal_frames += n;
        m = uw_interrupted(u, t, head);
        if (head[m - 1] == UW_LOST) {
            *ncs = 0;
        } else {
            memmove(u->cs + m, u->cs + 3, (*ncs - 3) * sizeof *u->cs);
            memcpy(u->cs, head, m * sizeof *head);
            *ncs = *ncs - 3 + m;
            return true;
        }
    } else {
        u->st.interrupted += n;
        intake_note(u, &u->notes_lost, UW_LOST_ASYNC, t, n);
    }
    u->cs[0] = t;
    u->cs[1] = UW_LOST;
    *ncs = 2;
    return true;
}

/* With the repair, a sample taken after a signal handler returned (LBR[0]
 * is its return to the restorer): in the restorer itself, whose call stack
 * is that of a handler's frame (a signal frame, a hole for the interrupted
 * frame, the interrupted code's frames), or in the code rt_sigreturn
 * resumed, whose own stack the sample has. The leaf stays the sampled
 * address; the unwinding puts the signal frame on it. */
static enum keep after_handler(lp_unwinder *u, size_t *ncs, const intake *in)
{
    uint64_t ip = in->ip;

    u->st.signal_frames += in->n;
    if (u->cs[0] == UW_EXT && (ip == u->lbr0_to || ip == u->lbr0_to + 7)) {
        memmove(u->cs + 2, u->cs + 1, (*ncs - 1) * sizeof *u->cs);
        u->cs[0] = UW_SIG;
        u->cs[1] = UW_HOLE;
        (*ncs)++;
        return KEEP;
    }
    if (u->cs[0] == UW_EXT)
        return KEEP;
    return decide(u, ncs, 0, in); /* LBR[0] shows no caller */
}

/* ---- aggregation ------------------------------------------------------------ */

/* Call stack and LBR as zig-zag varint deltas: a sample of 32 entries
 * takes ~150 bytes instead of 600. */
static size_t encode(lp_unwinder *u, size_t ncs, size_t nlbr)
{
    unsigned char *p = u->enc;
    uint64_t prev = 0;
    size_t i, o = 0;

    o += lp_put_uv(p + o, ncs);
    o += lp_put_uv(p + o, nlbr);
    for (i = 0; i < ncs; i++)
        o += lp_put_sv(p + o, u->cs[i], &prev);
    for (i = 0; i < nlbr; i++) {
        o += lp_put_sv(p + o, u->lbr[i].src, &prev);
        o += lp_put_sv(p + o, u->lbr[i].dst, &prev);
    }
    return o;
}

size_t uw_decode_lbr(const uw_agg *g, uw_lbr **lbr, size_t *cap)
{
    const unsigned char *p = g->key;
    uint64_t prev = 0;
    size_t ncs, n, i;

    ncs = lp_get_uv(&p);
    n = lp_get_uv(&p);
    if (uw_grow((void **)lbr, cap, n, sizeof **lbr))
        return (size_t)-1;
    for (i = 0; i < ncs; i++)
        (void)lp_get_sv(&p, &prev);
    for (i = 0; i < n; i++) {
        (*lbr)[i].src = lp_get_sv(&p, &prev);
        (*lbr)[i].dst = lp_get_sv(&p, &prev);
    }
    return n;
}

void uw_decode(lp_unwinder *u, const uw_agg *g, size_t *ncs, size_t *nlbr)
{
    const unsigned char *p = g->key;
    uint64_t prev = 0;
    size_t i;

    *ncs = lp_get_uv(&p);
    *nlbr = lp_get_uv(&p);
    /* the scratch vectors already hold the largest sample seen */
    for (i = 0; i < *ncs; i++)
        u->cs[i] = lp_get_sv(&p, &prev);
    for (i = 0; i < *nlbr; i++) {
        u->lbr[i].src = lp_get_sv(&p, &prev);
        u->lbr[i].dst = lp_get_sv(&p, &prev);
    }
}

/* PerfSample::getHashCode (DJB2 over the call stack, then each LBR
 * entry's source and target): llvm-profgen unwinds its aggregated samples
 * in the std::unordered_map order this hash gives (uw_flush). */
static uint64_t djb2(const uint64_t *cs, size_t ncs, const uw_lbr *lbr,
                     size_t nlbr)
{
    uint64_t h = 5381;
    size_t i;

    for (i = 0; i < ncs; i++)
        h = (h << 5) + h + cs[i];
    for (i = 0; i < nlbr; i++) {
        h = (h << 5) + h + lbr[i].src;
        h = (h << 5) + h + lbr[i].dst;
    }
    return h;
}

/* ---- the pending samples' table -------------------------------------------- */

uw_agg *uw_agg_find(const lp_unwinder *u, const unsigned char *key,
                    uint32_t len, uint32_t hash)
{
    uw_agg *g = u->agg_slots ? u->agg_slots[hash & u->agg_mask] : NULL;

    for (; g; g = g->chain)
        if (g->hash == hash && g->len == len && memcmp(g->key, key, len) == 0)
            return g;
    return NULL;
}

/* Twice the slots (1 K at first), every sample chained again: at most
 * two a slot on average. */
static int agg_grow(lp_unwinder *u)
{
    size_t n = u->agg_slots ? 2 * (u->agg_mask + 1) : 1024;
    uw_agg **v = calloc(n, sizeof *v), *g;

    if (!v)
        return -1;
    free(u->agg_slots);
    u->agg_slots = v;
    u->agg_mask = n - 1;
    for (g = u->agg; g; g = g->next) {
        g->chain = v[g->hash & u->agg_mask];
        v[g->hash & u->agg_mask] = g;
    }
    return 0;
}

int uw_agg_add(lp_unwinder *u, uw_agg *g)
{
    uw_agg **slot;

    g->next = g->chain = NULL;
    if ((!u->agg_slots || u->nagg >= 2 * (u->agg_mask + 1)) && agg_grow(u))
        return -1;
    /* the chain's head: a key seen again is mostly a recent one */
    slot = &u->agg_slots[g->hash & u->agg_mask];
    g->chain = *slot;
    *slot = g;
    if (u->agg_last)
        u->agg_last->next = g;
    else
        u->agg = g;
    u->agg_last = g;
    u->nagg++;
    return 0;
}

void uw_agg_clear(lp_unwinder *u)
{
    free(u->agg_slots);
    u->agg_slots = NULL;
    u->agg = u->agg_last = NULL;
    u->nagg = u->agg_mask = 0;
}

static int aggregate(lp_unwinder *u, size_t ncs, size_t nlbr, uint64_t n,
                     lp_error *err)
{
    size_t len;
    uint32_t h;
    uw_agg *g;

    if (uw_grow((void **)&u->enc, &u->enc_cap, 20 + 10 * (ncs + 2 * nlbr), 1))
        return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
    len = encode(u, ncs, nlbr);
    h = (uint32_t)lp_hash_bytes(u->enc, len);
    if (!(g = uw_agg_find(u, u->enc, (uint32_t)len, h))) {
        if (!(g = malloc(sizeof *g + len)))
            return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
        memset(g, 0, sizeof *g);
        g->replay = -1;
        g->len = (uint32_t)len;
        g->hash = h;
        g->djb = djb2(u->cs, ncs, u->lbr, nlbr);
        memcpy(g->key, u->enc, len);
        if (uw_agg_add(u, g)) {
            free(g);
            return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
        }
        u->agg_bytes += (sizeof *g + len + 7) & ~(size_t)7;
    }
    g->repeat += n;
    u->st.aggregated += n;
    u->last_agg = g;
    if (u->agg_bytes > u->o.max_pending_bytes)
        return uw_flush(u, err);
    return 0;
}

/* ---- the sample -------------------------------------------------------------- */

static int take(lp_unwinder *u, const lp_hybrid_sample *s, lp_error *err)
{
    uint64_t n = s->repeat ? s->repeat : 1;
    const uint64_t *st;
    size_t nst, ncs = 0;
    long k, nlbr = 0;
    bool truncated;
    intake in;
    int cfi;

    u->last_agg = NULL;
    u->calls = s->calls ? s->calls : 1;
    u->st.sample_calls += u->calls;
    u->st.samples += n;
    u->pid = s->pid;
    if (user_part(u, s, &st, &nst) < 0 || (cfi = uw_cfi_stack(u, s, st, nst, &ncs)) < 0)
        return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
    if (!cfi) {
        if ((k = extract_stack(u, st, nst, &truncated)) < 0)
            return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
        if (truncated)
            u->st.truncated += n;
        if (k == 0) {
            u->st.no_frame += n;
            return 0;
        }
        ncs = (size_t)k;
    }
    if (u->o.repair_frames && (nlbr = extract_lbr(u, s->br, s->nbr)) < 0)
        return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
    in.s = s;
    in.ip = nst ? st[0] : 0;
    in.n = n;
    if (cfi || (s->exact && u->o.repair_frames)) { /* exact: no repair */
        if (!cfi)
            u->st.exact_stacks += n;
        if (uw_cfi_leaf(u, &ncs, nlbr, n, !cfi))
            return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
    } else if (nlbr > 0 && u->lbr[0].dst == UW_SIG) {
        if (after_handler(u, &ncs, &in) == DROP)
            return 0;
    } else if (u->cs[0] == UW_EXT) {
        external_leaf(u, &ncs);
    } else if (!(u->o.repair_frames && nlbr > 0 && async_leaf(u, &ncs, &in)) &&
               decide(u, &ncs, nlbr, &in) == DROP) {
        return 0;
    }
    warn_missing_mmap(u);
    if (!u->o.repair_frames && (nlbr = extract_lbr(u, s->br, s->nbr)) < 0)
        return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
    if (nlbr == 0) {
        u->st.no_frame += n;
        return 0;
    }
    if (u->lbr[0].dst != UW_SIG)
        u->cs[0] = u->lbr[0].dst;
    return aggregate(u, ncs, (size_t)nlbr, n, err);
}

/* ---- samples seen before ------------------------------------------------ */

/* A sample equal to an earlier one - the same text block (dup_id, from the
 * perf script reader), or for perf.data the same process, call stack and
 * branches (a 128-bit digest of them) - is taken in as the earlier one
 * was: canonical addresses, call sites, prolog/epilog checks, repair,
 * encoding, hashing give the same result as long as nothing they depend
 * on changed (the memo generation: mmaps, address-map changes, flushes).
 * None of it depends on the sample's weight (repeat) or on how many input
 * samples it stands for (lp_sample.calls, the reader's folded samples):
 * each statistic the intake adds is a multiple of one of the two. The
 * memo keeps what it added per unit - per call for the unweighted
 * counters (uw_per_call), per unit of weight for the rest - and a replay
 * adds those times the sample's own calls and weight, and counts the same
 * aggregated sample. Not for samples with user stacks (their stack
 * decides the repair), nor intakes that added notes. */
#define UW_NSTATS (sizeof(lp_unwind_stats) / sizeof(uint64_t))
_Static_assert(sizeof(lp_unwind_stats) % sizeof(uint64_t) == 0 && UW_NSTATS < 256,
               "lp_unwind_stats must be uint64_t counters only");
#define UW_STAT(f) (offsetof(lp_unwind_stats, f) / sizeof(uint64_t))
_Static_assert(UW_NSTATS <= 64, "uw_per_call is a 64-bit mask");

/* The statistics an intake adds per input sample, unweighted (take); the
 * others it adds per unit of weight. */
static const uint64_t uw_per_call =
    (uint64_t)1 << UW_STAT(sample_calls) | (uint64_t)1 << UW_STAT(leaf_external);

typedef struct memo_key {
    uint64_t id, id2;
} memo_key;

/* The key of s, or {0, 0} when it has none: for perf.data, the stacks'
 * identity (computed ahead by the reader's thread, else here) with the
 * process and the stack's kind mixed in. */
static memo_key memo_key_of(lp_unwinder *u, const lp_hybrid_sample *s)
{
    lp_stacks_id d = s->stacks_id;
    uint64_t kind;

    if (s->regs_stack || u->o.no_memo)
        return (memo_key){0, 0};
    if (s->dup_id)
        return (memo_key){s->dup_id, 0};
    if (!u->o.map)
        return (memo_key){0, 0};
    if (!d.lo && !d.hi &&
        lp_stacks_id_of(s->stack, s->nstack, s->br, s->nbr, &u->dig, &u->dig_cap, &d))
        return (memo_key){0, 0};
    kind = (uint64_t)s->exact << 2 | (uint64_t)s->fp_walk << 1 | (uint64_t)s->markers;
    u->memo_kind = kind;
    return (memo_key){d.lo ^ uw_mix(kind, s->pid), d.hi | 1};  /* never {id, 0} */
}

/* The per-call deltas come first (m->nc of them), the per-weight ones
 * after; n and calls are at most UINT32_MAX: a delta times either fits. */
static void memo_replay(lp_unwinder *u, const uw_memo *m, uint64_t n, uint64_t calls)
{
    uint64_t *st = (uint64_t *)&u->st;
    size_t i;

    for (i = 0; i < m->nc; i++)
        st[m->field[i]] += m->delta[i] * calls;
    for (; i < m->nd; i++)
        st[m->field[i]] += m->delta[i] * n;
    if (m->g)
        m->g->repeat += n;
    u->pid = m->pid;
    u->st.intakes_reused++;
}

/* Remembers the intake of s (weight n, standing for calls samples) in m,
 * per call or per unit of weight; not when a delta is no multiple of its
 * unit (none is, short of a bug) or does not fit. */
static void memo_record(lp_unwinder *u, uw_memo *m, memo_key key,
                        const lp_hybrid_sample *s, uint64_t n, uint64_t calls,
                        const lp_unwind_stats *before)
{
    const uint64_t *a = (const uint64_t *)before, *b = (const uint64_t *)&u->st;
    uint64_t d, k;
    size_t i, j;
    bool c;

    m->id = m->id2 = 0;
    m->nd = m->nc = 0;
    for (i = 0; i < UW_NSTATS; i++) {
        if (a[i] == b[i])
            continue;
        c = uw_per_call >> i & 1;
        k = c ? calls : n;
        d = b[i] - a[i];
        if (k > 1 && d % k)
            return;             /* unusual: not memoized */
        d = k > 1 ? d / k : d;
        if (m->nd == UW_MEMO_DELTAS || d > UINT32_MAX)
            return;
        j = m->nd++;
        if (c) {                /* to the per-call ones in front */
            m->field[j] = m->field[m->nc];
            m->delta[j] = m->delta[m->nc];
            j = m->nc++;
        }
        m->field[j] = (uint8_t)i;
        m->delta[j] = (uint32_t)d;
    }
    m->id = key.id;
    m->id2 = key.id2;
    m->gen = u->memo_gen;
    u->memo_fill++;
    m->pid = s->pid;
    m->g = u->last_agg;
}

static bool memo_hit(const uw_memo *m, memo_key key, uint64_t gen, uint32_t pid)
{
    return m->id == key.id && m->id2 == key.id2 && m->gen == gen && m->pid == pid;
}

/* The memo's slots, zeroed by writing (lp_zalloc_written's reason), the
 * whole 2 MiB pages of them in transparent huge pages where the system
 * gives them (madvise mode): a sample's slot is a random access into 4.7
 * MB, a TLB miss and a page walk per sample with 4 KiB pages. Only the
 * whole ones: a huge page for the last 0.7 MB would add 1.3 MB to the
 * peak. Freed by free(). */
static uw_memo *memo_new(unsigned bits)
{
    size_t bytes = ((size_t)1 << bits) * sizeof(uw_memo), huge = (size_t)2 << 20;
    void *p;
    uw_memo *m;

    if (posix_memalign(&p, huge, bytes))        /* aligned_alloc wants a size */
        return NULL;                            /* the alignment divides */
    m = p;
    if (bytes >= huge)
        (void)madvise(m, bytes & ~(huge - 1), MADV_HUGEPAGE);
    __asm__ volatile("" : : "r"(m) : "memory");
    return memset(m, 0, bytes);
}

/* The set a key picks in a memo of 1 << bits slots. */
static uw_memo *set_of(uw_memo *memo, unsigned bits, uint64_t id)
{
    return &memo[id & (((uint64_t)1 << bits) - 2)];
}

static uw_memo *memo_set(lp_unwinder *u, memo_key key)
{
    return set_of(u->memo, u->memo_bits, key.id);
}

/* The memo made (at its smallest) or grown 4x, its entries kept in their
 * sets' order where they fit; 0, or -1 (no memory: the memo stays). */
static int memo_grow(lp_unwinder *u)
{
    unsigned bits = u->memo ? u->memo_bits + 2 : UW_MEMO_MIN_BITS;
    size_t i, n = u->memo ? (size_t)1 << u->memo_bits : 0;
    uw_memo *m = memo_new(bits), *s;

    if (!m)
        return -1;
    for (i = 0; i < n; i++) {
        const uw_memo *e = &u->memo[i];
        if ((!e->id && !e->id2) || e->gen != u->memo_gen)
            continue;           /* empty, or of an earlier generation */
        s = set_of(m, bits, e->id);
        if (!s->id && !s->id2)
            s[0] = *e;
        else if (!s[1].id && !s[1].id2)
            s[1] = *e;
    }
    free(u->memo);
    u->memo = m;
    u->memo_bits = bits;
    u->memo_fill = 0;
    return 0;
}

void lp_unwind_ahead(lp_unwinder *u, uint32_t pid, const uint64_t *stack, size_t nstack,
                     const lp_branch_entry *br, size_t nbr, lp_stacks_id *id)
{
    const char *m;

    if (!u->memo || !u->o.map || u->o.no_memo)
        return;
    if (!id->lo && !id->hi &&
        lp_stacks_id_of(stack, nstack, br, nbr, &u->dig, &u->dig_cap, id))
        *id = (lp_stacks_id){0, 0};
    if (!id->lo && !id->hi)
        return;
    m = (const char *)memo_set(u, (memo_key){id->lo ^ uw_mix(u->memo_kind, pid), 0});
    __builtin_prefetch(m);
    __builtin_prefetch(m + 64);
    __builtin_prefetch(m + 2 * sizeof(uw_memo) - 1);
}

/* The memo set of s, *key and *way (the way holding its intake, or -1),
 * after the generation follows the address map; NULL: s is not
 * memoized. */
static uw_memo *memo_find(lp_unwinder *u, const lp_hybrid_sample *s,
                          memo_key *key, int *way)
{
    uint64_t n = s->repeat ? s->repeat : 1, calls = s->calls ? s->calls : 1;
    uint64_t changes = u->o.map ? lp_addrmap_changes(u->o.map) : 0;
    uw_memo *m;

    *key = memo_key_of(u, s);
    if (changes != u->map_changes) {
        u->map_changes = changes;
        u->memo_gen++;          /* addresses may resolve differently */
    }
    if ((!key->id && !key->id2) || n > UINT32_MAX || calls > UINT32_MAX)
        return NULL;
    if ((!u->memo || (u->memo_bits < UW_MEMO_BITS &&
                      u->memo_fill > (size_t)1 << (u->memo_bits - 1))) &&
        memo_grow(u) && !u->memo)
        return NULL;
    m = memo_set(u, *key);
    *way = memo_hit(m, *key, u->memo_gen, s->pid) ? 0
           : memo_hit(m + 1, *key, u->memo_gen, s->pid) ? 1 : -1;
    return m;
}

int lp_unwind_replay(lp_unwinder *u, const lp_hybrid_sample *s)
{
    memo_key key;
    int way;
    uw_memo *m = memo_find(u, s, &key, &way);

    if (!m || way < 0)
        return 0;
    memo_replay(u, m + way, s->repeat ? s->repeat : 1, s->calls ? s->calls : 1);
    return 1;
}

int lp_unwind_sample(lp_unwinder *u, const lp_hybrid_sample *s, lp_error *err)
{
    uint64_t n = s->repeat ? s->repeat : 1, calls = s->calls ? s->calls : 1;
    uint64_t gen, notes;
    lp_unwind_stats before;
    memo_key key;
    int way;
    uw_memo *m = memo_find(u, s, &key, &way);

    if (!m)
        return take(u, s, err);
    if (way >= 0) {
        memo_replay(u, m + way, n, calls);
        return 0;
    }
    gen = u->memo_gen;
    m[1] = m[0];                /* the set's older entry goes, the new one first */
    before = u->st;
    notes = u->intake_notes;
    if (take(u, s, err))
        return -1;
    if (u->intake_notes == notes && u->memo_gen == gen)
        memo_record(u, m, key, s, n, calls, &before);
    return 0;
}
