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
    bool invalid;
} uw_state;

/* ---- nodes and records -------------------------------------------------- */

static int32_t new_node(lp_unwinder *u, uint64_t addr, int32_t parent)
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
    return (int32_t)u->nnodes++;
}

/* getOrCreateChildFrame */
static int32_t child(lp_unwinder *u, int32_t p, uint64_t addr)
{
    int32_t c;

    for (c = u->nodes[p].child; c >= 0; c = u->nodes[c].sib)
        if (u->nodes[c].addr == addr)
            return c;
    if ((c = new_node(u, addr, p)) < 0)
        return -1;
    if (u->nodes[p].last_child >= 0)
        u->nodes[u->nodes[p].last_child].sib = c;
    else
        u->nodes[p].child = c;
    u->nodes[p].last_child = c;
    return c;
}

static int record(lp_unwinder *u, int32_t node, uint64_t a, uint64_t b,
                  bool branch)
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

/* switchToFrame: the leaf becomes its sibling at addr. */
static int switch_to(lp_unwinder *u, uw_state *st, uint64_t addr)
{
    int32_t c;

    if (u->nodes[st->leaf].addr == addr)
        return 0;
    if ((c = child(u, u->nodes[st->leaf].parent, addr)) < 0)
        return -1;
    st->leaf = c;
    return 0;
}

static int push(lp_unwinder *u, uw_state *st, uint64_t addr)
{
    int32_t c = child(u, st->leaf, addr);

    if (c < 0)
        return -1;
    st->leaf = c;
    return 0;
}

/* ---- cutting a range by inline context ------------------------------------- */

/* inlineContextEqual: same inline stack apart from the leaf's location. */
static int inline_equal(lp_unwinder *u, uint64_t a1, uint64_t a2,
                        lp_error *err)
{
    const lp_frame *f1, *f2;
    size_t n1, n2, i;

    if (lp_binary_symbolize(u->bin, a1, &f1, &n1, err) ||
        lp_binary_symbolize(u->bin, a2, &f2, &n2, err))
        return -1;
    if (n1 != n2 || n1 == 0)
        return 0;
    for (i = 0; i + 1 < n1; i++)
        if (f1[i].line_offset != f2[i].line_offset ||
            f1[i].discriminator != f2[i].discriminator ||
            (f1[i].func != f2[i].func && strcmp(f1[i].func, f2[i].func)))
            return 0;
    return 1;
}

/* unwindLinear's walk from end back to target; an invalid range
 * (isValidFallThroughRange false) gets no piece. */
static const uw_split *make_split(lp_unwinder *u, uint64_t target,
                                  uint64_t end, lp_error *err)
{
    uint64_t p = end, e = end, prev;
    size_t n = 0;
    uw_split *s;
    int eq, v;

    if ((v = lp_binary_valid_fallthrough(u->bin, target, end, err)) < 0)
        return NULL;
    while (v && p > target) {
        if (lp_binary_prev_inst(u->bin, p, &prev, err) != 1)
            prev = 0;
        if ((eq = inline_equal(u, p, prev, err)) < 0)
            return NULL;
        if (!eq) {
            if (uw_grow((void **)&u->pieces, &u->pieces_cap, n + 2,
                        sizeof *u->pieces))
                goto oom;
            u->pieces[n++] = (uw_piece){p, p, e};
            e = prev;
        }
        p = prev;
    }
    if (uw_grow((void **)&u->pieces, &u->pieces_cap, n + 1, sizeof *u->pieces))
        goto oom;
    if (v)
        u->pieces[n++] = (uw_piece){p, p, e};
    if (!(s = uw_arena_alloc(&u->cache_arena, sizeof *s + n * sizeof(uw_piece))))
        goto oom;
    memset(s, 0, sizeof *s);
    s->key[0] = target;
    s->key[1] = end;
    s->npieces = (uint32_t)n;
    memcpy(s->pieces, u->pieces, n * sizeof(uw_piece));
    HASH_ADD(hh, u->splits, key, sizeof s->key, s);
    return s;
oom:
    lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
    return NULL;
}

/* ---- the four operations ---------------------------------------------------- */

static int unwind_linear(lp_unwinder *u, uw_state *st, uint64_t target,
                         lp_error *err)
{
    uint64_t end = st->ip, k[2] = {target, end};
    const uw_split *s;
    uint32_t i;

    if (end == UW_EXT && target == UW_EXT) {
        u->st.paired_ext++;
        return 0;
    }
    if (end == UW_EXT || target == UW_EXT) {
        u->st.unpaired_ext++;
        st->invalid = true;
        return 0;
    }
    HASH_FIND(hh, u->splits, k, sizeof k, s);
    if (!s && !(s = make_split(u, target, end, err)))
        return -1;
    if (s->npieces == 0) {
        st->invalid = true;
        return 0;
    }
    for (i = 0; i < s->npieces; i++)
        if (switch_to(u, st, s->pieces[i].frame) ||
            record(u, st->leaf, s->pieces[i].start, s->pieces[i].end, false))
            return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
    st->ip = target;
    return 0;
}

static int unwind_call(lp_unwinder *u, uw_state *st, uint64_t src)
{
    int32_t parent = u->nodes[st->leaf].parent;

    st->ip = src;
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
    st->ip = e->src;
    if (switch_to(u, st, uw_callsite(u, e->dst)))
        return -1;
    return push(u, st, e->src);
}

/* ---- one sample ----------------------------------------------------------------- */

static bool is_call_state(lp_unwinder *u, const uw_lbr *e)
{
    if (e->src == UW_EXT)
        return uw_callsite(u, e->dst) == 0;
    return uw_addr(u, e->src)->flags & UW_AI_CALL;
}

static bool is_return_state(lp_unwinder *u, const uw_lbr *e)
{
    if (e->src == UW_EXT)
        return uw_callsite(u, e->dst) != 0;
    return uw_addr(u, e->src)->flags & UW_AI_RET;
}

static int step(lp_unwinder *u, uw_state *st, const uw_lbr *e)
{
    if (!st->invalid && is_call_state(u, e))
        return unwind_call(u, st, e->src);
    if (!st->invalid && is_return_state(u, e))
        return unwind_return(u, st, e);
    if (!st->invalid) {
        st->ip = e->src;
        return switch_to(u, st, e->src);
    }
    /* the rest of the trace without context, rooted at the source */
    st->ip = e->src;
    st->leaf = 0;
    return push(u, st, e->src);
}

/* recordBranchCount */
static int record_branch(lp_unwinder *u, const uw_state *st, const uw_lbr *e)
{
    if (e->dst == UW_EXT)
        return 0;
    return record(u, e->src == UW_EXT ? 0 : st->leaf, e->src, e->dst, true);
}

static int init_trie(lp_unwinder *u, uw_state *st, const uint64_t *cs,
                     size_t ncs)
{
    int32_t cur;
    size_t i;

    u->nnodes = 0;
    u->nrecs = 0;
    if ((cur = new_node(u, 0, -1)) < 0)
        return -1;
    for (i = ncs; i-- > 0;)
        if ((cur = child(u, cur, cs[i])) < 0)
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

    if (init_trie(u, &st, cs, ncs))
        return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
    u->st.total_branches += nlbr;
    for (i = 0; i < nlbr; i++) {
        was_invalid = st.invalid;
        if (i > 0 && unwind_linear(u, &st, lbr[i].dst, err))
            return -1;
        if (st.invalid && !was_invalid) {
            u->st.contextless += repeat;
            if (uw_note_add(&u->notes_contextless, lbr[i].dst, lbr[i - 1].src,
                        repeat))
                return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
        }
        if (step(u, &st, &lbr[i]) || record_branch(u, &st, &lbr[i]))
            return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
    }
    return uw_collect(u, repeat, err);
}
