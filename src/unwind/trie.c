/*
 * trie.c - llvm-profgen 19's VirtualUnwinder for one distinct sample: the
 * call stack becomes a path in a frame trie, then the LBR is replayed from
 * the newest entry to the oldest. Each entry is a call (leave the callee:
 * pop the frame, or replace the leaf when the stack lacked it), a return
 * (enter the callee: the caller is identified by its call site, the callee
 * frame is pushed at the ret), a plain branch (the leaf moves within its
 * function) or, once the state is invalid, a restart without context. The
 * fall-through range between two entries is recorded on the leaf, cut into
 * pieces by inline context (each piece on a sibling frame at an address
 * inside it). The cut of each distinct range is cached. Owns the trie and
 * the four operations; what the trie becomes is collect.c's.
 *
 * With the frame repair (never with --no-repair-frames) the trie also has
 * holes - frames of unknown address, filled in by the call that leaves
 * them - and signal frames: a range that is no fall-through below a signal
 * frame is the signal's delivery (the older code ran in the interrupted
 * frame), a handler's return to its restorer puts a signal frame on the
 * frame rt_sigreturn resumed; a frame entered by a return but left by a
 * call from elsewhere (longjmp), an external landing inside a function, a
 * return to no call site or an unexplained broken range continue on an
 * unknown stack instead of the invalid state.
 *
 * Quirks kept on purpose: a return whose target does not follow a call
 * makes a frame at address 0, which the collection treats like the trie
 * root (llvm-profgen 19 does the same in release builds).
 */
#include <stdlib.h>
#include <string.h>

#include "unwind/uw_internal.h"

typedef struct uw_state {
    int32_t leaf;
    uint64_t ip;
    bool invalid;               /* --no-repair-frames only */
    size_t left;                /* LBR entries not unwound yet */
    uint64_t repeat;
    unsigned *flags;            /* UW_SF_*: what this sample went through */
} uw_state;

enum { UW_SF_SIGNAL = 1, UW_SF_NONLOCAL = 2, UW_SF_INTERRUPTED = 4 };

static int oom(lp_error *err)
{
    return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
}

/* ---- nodes and records -------------------------------------------------- */

static inline __attribute__((always_inline)) int32_t
new_node(lp_unwinder *u, uint64_t addr, int32_t parent)
{
    uw_node *n;

    if (uw_grow((void **)&u->nodes, &u->nodes_cap, u->nnodes + 1,
                sizeof *u->nodes))
        return -1;
    n = &u->nodes[u->nnodes];
    n->addr = addr;
    n->parent = parent;
    n->child = n->sib = n->last_child = -1;
    n->rec = n->rec_last = -1;
    n->sig = 0;
    n->flags = 0;
    return (int32_t)u->nnodes++;
}

static void link_child(lp_unwinder *u, int32_t p, int32_t c)
{
    u->nodes[c].parent = p;
    u->nodes[c].sib = -1;
    if (u->nodes[p].last_child >= 0)
        u->nodes[u->nodes[p].last_child].sib = c;
    else
        u->nodes[p].child = c;
    u->nodes[p].last_child = c;
}

static void unlink_child(lp_unwinder *u, int32_t c)
{
    int32_t p = u->nodes[c].parent, *l = &u->nodes[p].child, prev = -1;

    u->kids_on = false;         /* child()'s index: the lists answer */

    while (*l != c) {
        prev = *l;
        l = &u->nodes[*l].sib;
    }
    *l = u->nodes[c].sib;
    if (u->nodes[p].last_child == c)
        u->nodes[p].last_child = prev;
}

/* A new frame of unknown address under p (opt: that may not exist). */
static int32_t hole(lp_unwinder *u, int32_t p, bool opt)
{
    int32_t c = new_node(u, UW_HOLE, p);

    if (c < 0)
        return -1;
    u->nodes[c].flags = UW_NF_HOLE | (opt ? UW_NF_OPT : 0);
    link_child(u, p, c);
    return c;
}

/* A call stack nothing is known of: `depth` holes under the root (each
 * LBR entry can reveal at most one). Returns the innermost. */
static int32_t lost_stack(lp_unwinder *u, size_t depth)
{
    int32_t c = 0;

    while (depth-- > 0 && c >= 0)
        c = hole(u, c, false);
    return c;
}

/* Remove hole h: its children move to its parent. */
static void splice(lp_unwinder *u, int32_t h)
{
    int32_t p = u->nodes[h].parent, c, next;

    unlink_child(u, h);
    for (c = u->nodes[h].child; c >= 0; c = next) {
        next = u->nodes[c].sib;
        link_child(u, p, c);
    }
    u->nodes[h].child = u->nodes[h].last_child = -1;
}

/* Whether the call at cs may call the function it is in (an indirect call,
 * or a direct one to that function). */
static bool calls_itself(lp_unwinder *u, uint64_t cs)
{
    const lp_func_range *a, *b;
    lp_inst in;
    int k;

    uw_lock(u);
    k = lp_binary_inst(uw_bin(u, cs), uw_va(cs), &in, NULL);
    uw_unlock(u);
    if (k != 1 || in.indirect || !in.target)
        return true;
    a = uw_func_range(u, cs);
    b = lp_binary_func_range(uw_bin(u, cs), in.target);
    return !a || !b || a->func == b->func;
}

static void reveal(lp_unwinder *u, int32_t h, uint64_t addr)
{
    u->kids_on = false;         /* child()'s index: the lists answer */
    u->nodes[h].addr = addr;
    u->nodes[h].sig = 0;
    u->nodes[h].flags &= (uint8_t)~(UW_NF_HOLE | UW_NF_OPT);
}

/* ---- child()'s index: (parent, address) -> node ------------------------------
 * A frame's leaf moves from address to address within its function, each
 * a sibling (switch_to): the sibling lists grow to tens of frames, and
 * scanning them was 14% of sqlite-line's unwinding. The index holds the
 * nodes child() made, the first of their (parent, address) in the lists
 * as long as nothing is moved (unlink_child, reveal: then it is off for
 * the rest of the sample and the lists answer); holes are not in it. */

#define UW_KIDS_MIN_BITS 8

static inline __attribute__((always_inline)) struct uw_kid *
kid_find(const lp_unwinder *u, int32_t p, uint64_t addr)
{
    size_t mask = ((size_t)1 << u->kids_bits) - 1, i;
    struct uw_kid *e;

    i = (size_t)(((addr ^ ((uint64_t)(uint32_t)p << 40)) *
                  0x9E3779B97F4A7C15ULL) >> (64 - u->kids_bits));
    for (;; i = (i + 1) & mask) {
        e = &u->kids[i];
        if (e->gen != u->kids_gen ||
            (u->nodes[e->node].addr == addr && u->nodes[e->node].parent == p))
            return e;
    }
}

/* A table with room for the sample's nodes at half its slots at most,
 * holding them (all child()'s while the index is on). */
static int kids_room(lp_unwinder *u)
{
    unsigned bits = u->kids_bits ? u->kids_bits : UW_KIDS_MIN_BITS;
    struct uw_kid *e;
    size_t i;

    while (u->nnodes * 2 > (size_t)1 << bits)
        bits++;
    free(u->kids);
    if (!(u->kids = calloc((size_t)1 << bits, sizeof *u->kids))) {
        u->kids_bits = 0;
        return -1;
    }
    u->kids_bits = bits;
    for (i = 1; i < u->nnodes; i++)
        if (!(u->nodes[i].flags & UW_NF_HOLE) &&
            (e = kid_find(u, u->nodes[i].parent, u->nodes[i].addr))->gen !=
                u->kids_gen)
            *e = (struct uw_kid){(int32_t)i, u->kids_gen};
    return 0;
}

/* A new sample: its trie starts empty, the index on. */
static void kids_reset(lp_unwinder *u)
{
    if (++u->kids_gen == 0) {
        if (u->kids)
            memset(u->kids, 0, sizeof *u->kids << u->kids_bits);
        u->kids_gen = 1;
    }
    u->kids_on = true;
}

/* getOrCreateChildFrame */
static inline __attribute__((always_inline)) int32_t
child(lp_unwinder *u, int32_t p, uint64_t addr)
{
    struct uw_kid *e = NULL;
    int32_t c;

    if (u->kids && u->kids_on && addr != UW_HOLE) {
        if ((e = kid_find(u, p, addr))->gen == u->kids_gen)
            return e->node;
    } else {
        for (c = u->nodes[p].child; c >= 0; c = u->nodes[c].sib)
            if (u->nodes[c].addr == addr)
                return c;
    }
    if ((c = new_node(u, addr, p)) < 0)
        return -1;
    link_child(u, p, c);
    if (!u->kids_on || addr == UW_HOLE)
        return c;
    if (!e || (u->nnodes * 2 > (size_t)1 << u->kids_bits)) {
        if (kids_room(u))       /* c is in the new table */
            return -1;
    } else {
        *e = (struct uw_kid){c, u->kids_gen};
    }
    return c;
}

static inline __attribute__((always_inline)) int
record(lp_unwinder *u, int32_t node, uint64_t a, uint64_t b, bool branch)
{
    uw_rec *r;
    int32_t i;

    if (!branch && a > b)
        return 0;
    if (uw_grow((void **)&u->recs, &u->recs_cap, u->nrecs + 1, sizeof *u->recs))
        return -1;
    i = (int32_t)u->nrecs++;
    r = &u->recs[i];
    r->a = a;
    r->b = b;
    r->branch = branch;
    r->next = -1;
    if (u->nodes[node].rec_last >= 0)
        u->recs[u->nodes[node].rec_last].next = i;
    else
        u->nodes[node].rec = i;
    u->nodes[node].rec_last = i;
    return 0;
}

/* switchToFrame: the leaf becomes its sibling at addr (the same frame at
 * another address: its link to the parent is as certain as before). */
static inline __attribute__((always_inline)) int
switch_to(lp_unwinder *u, uw_state *st, uint64_t addr)
{
    uint8_t proven = u->nodes[st->leaf].flags & UW_NF_PROVEN;
    int32_t c;

    if (u->nodes[st->leaf].addr == addr)
        return 0;
    if ((c = child(u, u->nodes[st->leaf].parent, addr)) < 0)
        return -1;
    u->nodes[c].flags |= proven;
    st->leaf = c;
    return 0;
}

static int push(lp_unwinder *u, uw_state *st, uint64_t addr, uint8_t flags)
{
    int32_t c = child(u, st->leaf, addr);

    if (c < 0)
        return -1;
    u->nodes[c].flags |= flags;
    st->leaf = c;
    return 0;
}

/* A note that grows with the count: recorded instead while recording. */
static int note(lp_unwinder *u, uw_note **set, uint32_t kind, uint64_t a,
                uint64_t b, uint64_t n)
{
    return u->rec ? uw_eff_add(u, kind, NULL, a, b) : uw_note_add(set, a, b, n);
}

/* A statistic that grows with the count, likewise (uw_replay has the
 * lp_unwind_stats field of the same name, per unit of count). */
#define PER_COUNT(u, field, n)                                              \
    do {                                                                    \
        if ((u)->rec)                                                       \
            (u)->rec->field++;                                              \
        else                                                                \
            (u)->st.field += (n);                                           \
    } while (0)

/* The code before this point ran in frames nothing shows the callers of:
 * the leaf becomes a frame at addr on an unknown stack. */
static int lose(lp_unwinder *u, uw_state *st, uint64_t addr, int kind,
                uint64_t where)
{
    int32_t h = lost_stack(u, st->left + 1);

    if (h < 0 || note(u, &u->notes_lost, UW_EFF_NOTE_LOST, (uint64_t)kind,
                      where, st->repeat))
        return -1;
    st->leaf = h;
    return push(u, st, addr, 0);
}

/* ---- cutting a range by inline context ------------------------------------- */

/* inlineContextEqual: same inline stack apart from the leaf's location. */
static bool inline_equal(const lp_frame *f1, size_t n1, const lp_frame *f2,
                         size_t n2)
{
    size_t i;

    if (n1 != n2 || n1 == 0)
        return false;
    for (i = 0; i + 1 < n1; i++)
        if (f1[i].line_offset != f2[i].line_offset ||
            f1[i].discriminator != f2[i].discriminator ||
            (f1[i].func != f2[i].func && strcmp(f1[i].func, f2[i].func)))
            return false;
    return true;
}

static int symbolize(lp_unwinder *u, uint64_t a, const lp_frame **f, size_t *n,
                     lp_error *err)
{
    return lp_binary_symbolize(uw_bin(u, a), uw_va(a), f, n, err);
}

/* Each piece's leaf signature, which the collection needs for the frame
 * its range is counted on: found here once per distinct range instead of
 * once per sample (an error leaves it unknown, found and reported there). */
static uint32_t piece_sig(lp_unwinder *u, uw_piece *p)
{
    uint32_t *sig = &p->sig[uw_role(u)];
    lp_error err;
    uint64_t id;

    if (!*sig && (id = uw_leaf_sig(u, p->frame, &err)) <= UINT32_MAX)
        *sig = (uint32_t)id;
    return *sig;
}

static void piece_sigs(lp_unwinder *u, uw_piece *p, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        (void)piece_sig(u, &p[i]);
}

/* unwindLinear's walk from end back to target; an invalid range
 * (isValidFallThroughRange false) gets no piece. Each address is
 * symbolized once (the binary's cache keeps the frames). A worker's
 * splits are in the unwinder's arena: the unwinder may take them
 * (peer_splits) and outlives the worker. */
static uw_split *split_unlocked(lp_unwinder *u, uint64_t target,
                                uint64_t end, lp_error *err)
{
    lp_arena *arena = u->owner ? &u->owner->cache_arena : &u->cache_arena;
    uint64_t p = end, e = end, prev;
    const lp_frame *fp = NULL, *fq;
    size_t n = 0, np = 0, nq;
    uw_split *s;
    int v;

    v = uw_bin_of(target) == uw_bin_of(end)
            ? lp_binary_valid_fallthrough(uw_bin(u, end), uw_va(target), uw_va(end), err)
            : 0;
    if (v < 0)
        return NULL;
    if (v && p > target && symbolize(u, p, &fp, &np, err))
        return NULL;
    while (v && p > target) {
        if (lp_binary_prev_inst(uw_bin(u, p), uw_va(p), &prev, err) != 1)
            prev = 0;
        else
            prev = uw_enc(uw_bin_of(p), prev);
        if (symbolize(u, prev, &fq, &nq, err))
            return NULL;
        if (!inline_equal(fp, np, fq, nq)) {
            if (uw_grow((void **)&u->pieces, &u->pieces_cap, n + 2,
                        sizeof *u->pieces))
                goto oom;
            u->pieces[n++] = (uw_piece){p, p, e};
            e = prev;
        }
        p = prev;
        fp = fq;
        np = nq;
    }
    if (uw_grow((void **)&u->pieces, &u->pieces_cap, n + 1, sizeof *u->pieces))
        goto oom;
    if (v)
        u->pieces[n++] = (uw_piece){p, p, e};
    piece_sigs(u, u->pieces, n);
    if (!(s = lp_arena_alloc(arena, sizeof *s + n * sizeof(uw_piece))))
        goto oom;
    memset(s, 0, sizeof *s);
    s->npieces = (uint32_t)n;
    memcpy(s->pieces, u->pieces, n * sizeof(uw_piece));
    if (uw_map_put(&u->splits, target, end, (uint64_t)(uintptr_t)s))
        goto oom;
    return s;
oom:
    lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
    return NULL;
}

/* The split of a range not in u->splits: the other thread's, or made.
 * u->splits is written under the lock only (the other thread reads it). */
static uw_split *make_split(lp_unwinder *u, uint64_t target, uint64_t end,
                            lp_error *err)
{
    uw_split *s = NULL;

    uw_lock(u);
    if (u->peer_splits &&
        (s = (uw_split *)(uintptr_t)uw_map_get(u->peer_splits, target, end)) &&
        uw_map_put(&u->splits, target, end, (uint64_t)(uintptr_t)s)) {
        lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
        s = NULL;
    } else if (!s) {
        s = split_unlocked(u, target, end, err);
    }
    uw_unlock(u);
    return s;
}

/* For lp_unwind_warm_next: what unwinding this sample will look up - the
 * pieces of each range between two LBR entries (unwind_linear), each
 * address of them symbolized on the way, and the call stack's frames.
 * Results are what the unwinding would compute; errors are ignored here
 * and met again there. */
void uw_warm(lp_unwinder *u, const uint64_t *cs, size_t ncs,
             const uw_lbr *lbr, size_t nlbr)
{
    const lp_frame *f;
    lp_error err;
    size_t i, n;

    for (i = 1; i < nlbr && !u->o.addr_contexts; i++) {
        uint64_t t = lbr[i].dst, e = lbr[i - 1].src;
        if (t > UW_LAST_SENTINEL && e > UW_LAST_SENTINEL && t != UW_EXT &&
            e != UW_EXT && !uw_map_get(&u->splits, t, e))
            (void)make_split(u, t, e, &err);
    }
    for (i = 0; i < ncs && !u->o.addr_contexts; i++)
        if (cs[i] > UW_LAST_SENTINEL && cs[i] != UW_EXT &&
            uw_bin_of(cs[i]) < u->nbins)
            (void)symbolize(u, cs[i], &f, &n, &err);
}

/* ---- the four operations ---------------------------------------------------- */

/* With the repair, a range that is no fall-through: code entered
 * asynchronously. Below a signal frame it is the signal's delivery: the
 * code before it ran in the interrupted frame - the frame the handler
 * returned into (the signal frame's parent), or the hole below the signal
 * frame of a sampled stack, now known to be at target (with a hole for
 * its caller when the frame-pointer walk missed that too). Otherwise
 * nothing says where it ran. */
static int async_range(lp_unwinder *u, uw_state *st, uint64_t target)
{
    int32_t s = u->nodes[st->leaf].parent, i, p, h;
    uint64_t head[2];

    st->ip = target;
    if (s <= 0 || u->nodes[s].addr != UW_SIG || u->nodes[s].parent <= 0) {
        *st->flags |= UW_SF_INTERRUPTED;
        return lose(u, st, target, UW_LOST_ASYNC, target);
    }
    *st->flags |= UW_SF_SIGNAL;
    i = u->nodes[s].parent;
    if (!(u->nodes[i].flags & UW_NF_HOLE)) {
        st->leaf = i;           /* the frame the handler returned into */
        return switch_to(u, st, target);
    }
    if (uw_interrupted(u, target, head) == 2) {
        p = u->nodes[i].parent;
        unlink_child(u, i);
        h = head[1] == UW_LOST ? lost_stack(u, st->left + 1)
                               : hole(u, p, head[1] == UW_OPT);
        if (h < 0)
            return -1;
        link_child(u, h, i);
    }
    reveal(u, i, target);
    st->leaf = i;
    return 0;
}

/* The frame the code of the leaf is counted on: the leaf itself. (With
 * address contexts its records get the context of its callers, the
 * frames below it, when they are collected: whatever those turn out to
 * be by then - a hole filled in or inferred, or truncated.) */
static int32_t count_frame(const lp_unwinder *u, const uw_state *st)
{
    (void)u;
    return st->leaf;
}

/* unwindLinear with pseudo probes: the whole range, unsplit, on the
 * caller's frame (an invalid fall-through as without probes). */
static int probe_linear(lp_unwinder *u, uw_state *st, uint64_t target,
                        uint64_t end, lp_error *err)
{
    int v = 0;

    if (uw_bin_of(target) == uw_bin_of(end))
        v = uw_valid_range(u, target, end, err);

    if (v < 0)
        return -1;
    if (!v) {
        if (u->o.repair_frames)
            return async_range(u, st, target) ? oom(err) : 0;
        st->invalid = true;
        return 0;
    }
    if (record(u, count_frame(u, st), target, end, false))
        return oom(err);
    st->ip = target;
    return 0;
}

static int unwind_linear(lp_unwinder *u, uw_state *st, uint64_t target,
                         lp_error *err)
{
    uint64_t end = st->ip;
    bool repair = u->o.repair_frames;
    uw_split *s;
    uint32_t i, sig;

    if (target == UW_SIG) {
        /* rt_sigreturn resumed the newer code: no range */
        st->ip = target;
        return 0;
    }
    if (end == UW_EXT && target == UW_EXT) {
        u->st.paired_ext++;
        return 0;
    }
    if (end == UW_EXT || target == UW_EXT) {
        u->st.unpaired_ext++;
        if (repair)
            return async_range(u, st, target) ? oom(err) : 0;
        st->invalid = true;
        return 0;
    }
    if (u->o.addr_contexts)
        return probe_linear(u, st, target, end, err);
    s = (uw_split *)(uintptr_t)uw_map_get(&u->splits, target, end);
    if (!s && !(s = make_split(u, target, end, err)))
        return -1;
    if (s->npieces == 0) {
        if (repair)
            return async_range(u, st, target) ? oom(err) : 0;
        st->invalid = true;
        return 0;
    }
    for (i = 0; i < s->npieces; i++) {
        if (switch_to(u, st, s->pieces[i].frame) ||
            record(u, st->leaf, s->pieces[i].start, s->pieces[i].end, false))
            return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
        if ((sig = piece_sig(u, &s->pieces[i])))  /* the leaf is at its frame */
            u->nodes[st->leaf].sig = sig;
    }
    st->ip = target;
    return 0;
}

static int unwind_call(lp_unwinder *u, uw_state *st, uint64_t src)
{
    int32_t parent = u->nodes[st->leaf].parent;

    st->ip = src;
    if (parent > 0 && (u->nodes[parent].flags & UW_NF_HOLE)) {
        int32_t pp = u->nodes[parent].parent;
        if ((u->nodes[parent].flags & UW_NF_OPT) && pp > 0 &&
            u->nodes[pp].addr == src) {
            if (!calls_itself(u, src)) {
                /* the walk had the caller: there is no frame between */
                splice(u, parent);
                st->leaf = pp;
                return 0;
            }
            /* the frame below may be the caller, or the caller's caller
             * calling from the same site (recursion): not known */
            *st->flags |= UW_SF_INTERRUPTED;
            return lose(u, st, src, UW_LOST_ASYNC, src);
        }
        reveal(u, parent, src); /* the caller the stack did not show */
        st->leaf = parent;
        return 0;
    }
    if (u->o.repair_frames && (parent == 0 || u->nodes[parent].addr != src) &&
        (u->nodes[st->leaf].flags & UW_NF_PROVEN) && src != UW_EXT) {
        /* a return entered this frame from another call site: the frames
         * this call came from were left without returns (longjmp) */
        *st->flags |= UW_SF_NONLOCAL;
        return lose(u, st, src, UW_LOST_NONLOCAL, src);
    }
    if (parent == 0 || u->nodes[parent].addr != src) {
        if (parent != 0) {
            if (src == UW_EXT)
                u->st.mismatched_ext_call++;
            else
                u->st.mismatched_proepi++;
        }
        return switch_to(u, st, src);
    }
    st->leaf = parent;
    return 0;
}

static int unwind_return(lp_unwinder *u, uw_state *st, const uw_lbr *e)
{
    uint64_t cs;

    st->ip = e->src;
    if (e->dst == UW_SIG) {
        /* a handler returned to its restorer: the signal frame sits on
         * the frame the newer code resumed in (unless the sample was taken
         * in the restorer: then the leaf is the signal frame) */
        if (u->nodes[st->leaf].addr != UW_SIG && push(u, st, UW_SIG, 0))
            return -1;
        return push(u, st, e->src, UW_NF_PROVEN);
    }
    cs = uw_callsite(u, e->dst);
    if (cs == 0 && u->o.repair_frames) /* the caller is not known */
        return lose(u, st, e->src, UW_LOST_NORET, e->src);
    if (switch_to(u, st, cs))
        return -1;
    return push(u, st, e->src, UW_NF_PROVEN);
}

/* With the repair: an entry from external code that lands neither after a
 * call nor on a function's entry but inside a known function (an
 * exception's landing pad, longjmp to some other place): the code before
 * it ran in frames that are gone. */
static bool nonlocal_landing(lp_unwinder *u, const uw_lbr *e)
{
    const lp_func_range *fr;
    uint64_t start;

    if (!u->o.repair_frames || e->src != UW_EXT || e->dst <= UW_LAST_SENTINEL ||
        uw_callsite(u, e->dst) != 0)
        return false;
    if ((fr = uw_func_range(u, e->dst)))
        return !(fr->is_entry && fr->start == uw_va(e->dst));
    return lp_binary_symbol_name(uw_bin(u, e->dst), uw_va(e->dst), &start) &&
           start != uw_va(e->dst);
}

/* ---- one sample ----------------------------------------------------------------- */

/* The entry's kind as llvm-profgen's isCallState / isReturnState see it:
 * UW_AI_CALL, UW_AI_RET or neither; the source's facts looked up once
 * for both questions (a lookup per LBR entry less). */
static unsigned entry_kind(lp_unwinder *u, const uw_lbr *e)
{
    if (e->src == UW_EXT)
        return uw_callsite(u, e->dst) == 0 ? UW_AI_CALL : UW_AI_RET;
    return uw_addr(u, e->src)->flags & (UW_AI_CALL | UW_AI_RET);
}

static int step(lp_unwinder *u, uw_state *st, const uw_lbr *e)
{
    unsigned kind;

    if (nonlocal_landing(u, e)) {
        *st->flags |= UW_SF_NONLOCAL;
        st->ip = UW_EXT;
        return lose(u, st, UW_EXT, UW_LOST_LANDING, e->dst);
    }
    kind = st->invalid ? 0 : entry_kind(u, e);
    if (kind & UW_AI_CALL)
        return unwind_call(u, st, e->src);
    if (kind & UW_AI_RET)
        return unwind_return(u, st, e);
    if (!st->invalid) {
        st->ip = e->src;
        return switch_to(u, st, e->src);
    }
    /* the rest of the trace without context, rooted at the source */
    st->ip = e->src;
    st->leaf = 0;
    return push(u, st, e->src, 0);
}

/* recordBranchCount */
/* recordBranchCount. A branch into another binary (a callback, a call
 * through the GOT) stays in its source's context; collect.c marks its
 * target (LP_CTX_XBIN). */
static int record_branch(lp_unwinder *u, const uw_state *st, const uw_lbr *e)
{
    if (e->dst == UW_EXT || e->dst == UW_SIG)
        return 0;
    return record(u, e->src == UW_EXT ? 0 : count_frame(u, st), e->src, e->dst,
                  true);
}

/* The sampled stack as a path; UW_HOLE makes an unknown frame, UW_LOST
 * (at the bottom) an unknown stack. */
static int init_trie(lp_unwinder *u, uw_state *st, const uint64_t *cs,
                     size_t ncs, size_t nlbr)
{
    int32_t cur;
    size_t i;

    u->nnodes = 0;
    u->nrecs = 0;
    kids_reset(u);
    if ((cur = new_node(u, 0, -1)) < 0)
        return -1;
    for (i = ncs; i-- > 0 && cur >= 0;)
        cur = cs[i] == UW_LOST ? lost_stack(u, nlbr + 1)
            : cs[i] == UW_HOLE || cs[i] == UW_OPT ? hole(u, cur, cs[i] == UW_OPT)
            : child(u, cur, cs[i]);
    if (cur < 0)
        return -1;
    st->leaf = cur;
    st->ip = cs[0];
    st->invalid = false;
    return 0;
}

int uw_unwind_one(lp_unwinder *u, const uint64_t *cs, size_t ncs,
                  const uw_lbr *lbr, size_t nlbr, uint64_t repeat,
                  lp_error *err)
{
    uw_state st;
    size_t i;
    bool was_invalid;
    unsigned flags = 0;

    st.flags = &flags;
    st.repeat = repeat;
    if (init_trie(u, &st, cs, ncs, nlbr))
        return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
    u->st.total_branches += nlbr;
    for (i = 0; i < nlbr; i++) {
        st.left = nlbr - i;
        was_invalid = st.invalid;
        if (i > 0 && unwind_linear(u, &st, lbr[i].dst, err))
            return -1;
        if (st.invalid && !was_invalid) {
            PER_COUNT(u, contextless, repeat);
            if (note(u, &u->notes_contextless, UW_EFF_NOTE_CTXLESS,
                     lbr[i].dst, lbr[i - 1].src, repeat))
                return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
        }
        if (step(u, &st, &lbr[i]) || record_branch(u, &st, &lbr[i]))
            return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
    }
    if (flags & UW_SF_SIGNAL)
        PER_COUNT(u, signal_frames, repeat);
    if (flags & UW_SF_NONLOCAL)
        PER_COUNT(u, nonlocal, repeat);
    if (flags & UW_SF_INTERRUPTED)
        PER_COUNT(u, interrupted, repeat);
    return uw_collect(u, repeat, err);
}
