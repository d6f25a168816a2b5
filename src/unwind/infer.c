/*
 * infer.c - the caller the sample does not show, inferred from the
 * program's calls. A hole of the frame repair (a caller frame of unknown
 * address: the frame-pointer walk missed it and no LBR entry of the
 * sample shows its call, e.g. after a chain of tail calls longer than the
 * LBR) is filled in with the one call site that leads to the frame above
 * it - directly or through tail calls - and lies in the function the
 * frame below called (or one that function reaches by tail calls). The
 * candidates: every direct call of the binary (lp_binary_ref_candidates,
 * checked by decoding only when they matter) and the calls the LBR shows
 * across the trace (indirect ones only so); tail calls likewise (src/
 * tailcall holds the graph). Several candidates, none, or one made without
 * a frame (a frame-pointer walk would then have lost more than one
 * frame): no answer, and the context stays truncated at the hole. Never a
 * guess.
 *
 * Owns the per-binary graphs (filled from every pending distinct sample's
 * LBR when the first question of a flush comes, and with the static tail
 * calls around the functions asked about) and the cache of answers. Not
 * the trie (trie.c) nor the contexts (collect.c), which asks.
 */
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/tailcall.h"
#include "unwind/uw_internal.h"
#include "util/zalloc.h"

#define UW_INFER_NONE 1         /* cached "no answer" (no site is 1) */

/* f onto the closure being built, unless it is there. */
static int push_closure(lp_unwinder *u, const lp_function *f, lp_error *err)
{
    size_t i;

    for (i = 0; i < u->nclosure; i++)
        if (u->closure[i] == f)
            return 0;
    if (uw_grow((void **)&u->closure, &u->closure_cap, u->nclosure + 1,
                sizeof *u->closure))
        return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
    u->closure[u->nclosure++] = f;
    return 0;
}

/* The direct jumps from another function to one of f's entries (each
 * checked by decoding) into the graph. */
static int static_tails_into(lp_unwinder *u, size_t k, const lp_function *f,
                             lp_error *err)
{
    const lp_func_range *g;
    const lp_xref *x;
    size_t i;
    long n, j;
    int r;

    for (i = 0; i < f->nranges; i++) {
        uint64_t e = f->ranges[i]->start;
        if (!f->ranges[i]->is_entry)
            continue;
        if ((n = lp_binary_ref_candidates(u->bins[k], e, &x, err)) < 0)
            return -1;
        for (j = 0; j < n; j++) {
            if (x[j].kind == LP_INST_CALL ||
                !(g = lp_binary_func_range(u->bins[k], x[j].site)) || g->func == f)
                continue;
            if ((r = lp_binary_ref_check(u->bins[k], x[j].site, e, err)) < 0)
                return -1;
            if (r == 1 && lp_tailcall_add_tail(u->tcs[k], x[j].site, g->func, f, err))
                return -1;
        }
    }
    return 0;
}

/* fn(ctx, instruction) for every instruction of f's code, in order, until
 * fn returns nonzero (returned). 0, or -1 (err). */
static int each_inst(lp_unwinder *u, size_t k, const lp_function *f,
                     int (*fn)(void *ctx, const lp_inst *in), void *ctx,
                     lp_error *err)
{
    uint64_t a, next;
    lp_inst in;
    size_t i;
    int r;

    for (i = 0; i < f->nranges; i++)
        for (a = f->ranges[i]->start; a < f->ranges[i]->end; a = next) {
            if ((r = lp_binary_inst(u->bins[k], a, &in, err)) < 0)
                return -1;
            if (r == 1 && (r = fn(ctx, &in)) != 0)
                return r;
            if ((r = lp_binary_next_inst(u->bins[k], a, &next, err)) < 0)
                return -1;
            if (r == 0)
                break;
        }
    return 0;
}

typedef struct jumps_ctx {
    lp_unwinder *u;
    size_t k;
    const lp_function *f;
    lp_error *err;
} jumps_ctx;

static int add_jump(void *ctx, const lp_inst *in)
{
    jumps_ctx *c = ctx;
    const lp_func_range *t;

    if (!in->indirect && in->target &&
        (in->kind == LP_INST_UNCOND_BR || in->kind == LP_INST_COND_BR) &&
        (t = lp_binary_func_range(c->u->bins[c->k], in->target)) &&
        t->is_entry && t->start == in->target && t->func != c->f &&
        lp_tailcall_add_tail(c->u->tcs[c->k], in->addr, c->f, t->func, c->err))
        return -1;
    return 0;
}

/* The direct jumps (tail calls) from f's code to other functions'
 * entries into the graph: what the frame below a hole called may have
 * tail-called the function the hole's frame runs. */
static int jumps_of(lp_unwinder *u, size_t k, const lp_function *f,
                    lp_error *err)
{
    jumps_ctx c = {u, k, f, err};

    return each_inst(u, k, f, add_jump, &c, err);
}

/* The functions f reaches by tail calls (forward) or that reach f
 * (backward), f first, into u->closure. On the way the static tail calls
 * out of (forward: jumps_of) or into (backward: static_tails_into) each
 * go into the graph, once per function and direction (the `enriched`
 * map, keyed (function, forward)); the LBR's are there already. */
static int tail_closure(lp_unwinder *u, size_t k, const lp_function *f,
                        bool forward, lp_error *err)
{
    const lp_function *const *next_fs;
    size_t next = 0;
    long n, j;

    u->nclosure = 0;
    if (push_closure(u, f, err))
        return -1;
    while (next < u->nclosure) {
        f = u->closure[next++];
        if (!uw_map_get(&u->enriched, (uint64_t)(uintptr_t)f, forward)) {
            if (uw_map_put(&u->enriched, (uint64_t)(uintptr_t)f, forward, 1))
                return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
            if (forward ? jumps_of(u, k, f, err) : static_tails_into(u, k, f, err))
                return -1;
        }
        n = forward ? lp_tailcall_tail_callees(u->tcs[k], f, &next_fs)
                    : lp_tailcall_tail_callers(u->tcs[k], f, &next_fs);
        if (n < 0)
            return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
        for (j = 0; j < n; j++)
            if (push_closure(u, next_fs[j], err))
                return -1;
    }
    return 0;
}

/* The graph of binary k. */
static lp_tailcall *graph_of(lp_unwinder *u, size_t k, lp_error *err)
{
    if (!u->tcs[k])
        u->tcs[k] = lp_tailcall_new(u->bins[k], NULL, err);
    return u->tcs[k];
}

/* Pairs already given to the graphs in this pass, direct-mapped: adding a
 * (from, to) again changes nothing (its class is memoized, its site and
 * target exist, the graph is already unsealed by the first add), and the
 * distinct samples repeat most of their branches (SQLite: 2.1 M branches,
 * ~5% distinct). A collision only means the pair is added again. */
#define UW_SEEN_BITS 16

typedef struct uw_pair {
    uint64_t a, b;
} uw_pair;

static bool seen_before(uw_pair *seen, uint64_t a, uint64_t b)
{
    uw_pair *p;

    if (!seen)
        return false;
    p = &seen[uw_mix(a, b) & (((size_t)1 << UW_SEEN_BITS) - 1)];
    if (p->a == a && p->b == b)
        return true;
    *p = (uw_pair){a, b};
    return false;
}

/* Branch a -> b of a pending sample into binary k's graph, unless it is
 * of no graph (sentinels, two binaries, a return). */
static int add_one(lp_unwinder *u, uint64_t a, uint64_t b, lp_error *err)
{
    size_t k = uw_bin_of(a);

    if (a <= UW_LAST_SENTINEL || b <= UW_LAST_SENTINEL || k != uw_bin_of(b) ||
        k >= u->nbins || (uw_addr(u->infer_cu, a)->flags & UW_AI_RET))
        return 0;
    if (!graph_of(u, k, err) ||
        lp_tailcall_add_branch(u->tcs[k], uw_va(a), uw_va(b), err))
        return -1;
    return 0;
}

/* Add the branches of every distinct sample of the flush to the graphs
 * (none is freed before: uw_agg_done). */
static int add_pending(lp_unwinder *u, lp_error *err)
{
    uw_pair *seen = lp_zalloc_written(((size_t)1 << UW_SEEN_BITS) * sizeof *seen); /* NULL: no skipping */
    uw_agg *g;
    size_t i, j, n;
    int rc = 0;

    if (!u->tcs && !(u->tcs = calloc(u->nbins, sizeof *u->tcs))) {
        free(seen);
        return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
    }
    for (j = 0; j < u->flush_n; j++) {
        g = u->flush_ins[j];
        n = uw_decode_lbr(g, &u->infer_lbr, &u->infer_lbr_cap);
        if (n == (size_t)-1) {
            rc = lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
            break;
        }
        for (i = 0; i < n && !rc; i++) {
            uint64_t a = u->infer_lbr[i].src, b = u->infer_lbr[i].dst;
            if (!seen_before(seen, a, b))
                rc = add_one(u, a, b, err);
        }
        if (rc)
            break;
    }
    free(seen);
    if (rc)
        return -1;
    free(u->infer_cache.s);     /* answers may change with the new edges */
    memset(&u->infer_cache, 0, sizeof u->infer_cache);
    /* released: a thread that reads false (uw_agg_done) may free the
     * samples read above */
    __atomic_store_n(&u->infer_pending, false, __ATOMIC_RELEASE);
    return 0;
}

/* The function the call at `below` enters when it is a direct call of
 * binary k; NULL otherwise (*ok false: nothing may be inferred). */
static const lp_function *below_fn(lp_unwinder *u, uint64_t below, size_t k,
                                   bool *ok)
{
    const lp_func_range *r;
    lp_inst in;

    *ok = true;
    if (below == 0)
        return NULL;            /* nothing known below: any function */
    *ok = false;
    if (below <= UW_LAST_SENTINEL || uw_bin_of(below) != k ||
        lp_binary_inst(u->bins[k], uw_va(below), &in, NULL) != 1 ||
        in.kind != LP_INST_CALL || in.indirect ||
        !(r = lp_binary_func_range(u->bins[k], in.target)))
        return NULL;
    *ok = true;
    return r->func;
}

/* The search's state: the one candidate found so far. */
typedef struct search {
    lp_unwinder *u;
    size_t k;
    const lp_function *bf;      /* what the frame below called, or NULL */
    uint64_t found;             /* 0: none yet */
    bool ambiguous;
    bool indirect;              /* an indirect call may enter the closure */
    lp_error *err;
} search;

/* One candidate call site into the closure's function at `entry` (a
 * sampled one, or one the code has, which decoding must confirm). The
 * site must lie in bf or a function bf reaches by tail calls; a second
 * one, or one made without a frame, ends the search. 0, or -1 (err). */
static int candidate(search *q, uint64_t site, uint64_t entry, bool sampled,
                     lp_error *err)
{
    lp_unwinder *u = q->u;
    const lp_func_range *g = lp_binary_func_range(u->bins[q->k], site);
    int r;

    if (site == q->found)
        return 0;
    if (!g) {                   /* code of no function: who knows */
        q->ambiguous = true;
        return 0;
    }
    if (q->bf && (r = lp_tailcall_reaches(u->tcs[q->k], q->bf, g->func)) != 1) {
        q->ambiguous = r < 0;
        return 0;
    }
    if (!sampled && (r = lp_binary_ref_check(u->bins[q->k], site, entry, err)) != 1)
        return r;
    if (q->found ||
        uw_leaf_state(u->infer_cu, uw_enc(q->k, site)) != LP_UW_LEAF_BODY)
        q->ambiguous = true;
    q->found = site;
    return 0;
}

/* Whether an indirect call or jump may enter f: its address is held
 * (lp_binary_addr_taken) or the LBR shows an indirect call into it. Then
 * the calls known are not all of f's callers: any indirect call may be one
 * (of this binary or, the address passed on, of another). 1, 0, or -1
 * (err). */
static int indirectly_entered(search *q, const lp_function *f,
                              const uint64_t *sites, long n, lp_error *err)
{
    lp_inst in;
    size_t i;
    long j;
    int r;

    for (i = 0; i < f->nranges; i++)
        if (f->ranges[i]->is_entry &&
            (r = lp_binary_addr_taken(q->u->bins[q->k], f->ranges[i]->start,
                                      err)) != 0)
            return r;
    for (j = 0; j < n; j++)
        if (lp_binary_inst(q->u->bins[q->k], sites[j], &in, NULL) != 1 ||
            in.indirect)
            return 1;
    return 0;
}

/* Every candidate into one function of the closure. */
static int candidates_into(search *q, const lp_function *f, lp_error *err)
{
    const uint64_t *sites;
    const lp_xref *x;
    size_t i;
    long n, j;
    int r;

    if ((n = lp_tailcall_call_sites(q->u->tcs[q->k], f, &sites)) < 0)
        return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
    if ((r = indirectly_entered(q, f, sites, n, err)) < 0)
        return -1;
    if (r) {                    /* from anywhere when nothing is below */
        q->indirect = true;
        q->ambiguous = !q->bf;
    }
    for (j = 0; j < n && !q->ambiguous; j++)
        if (candidate(q, sites[j], 0, true, err))
            return -1;
    for (i = 0; i < f->nranges && !q->ambiguous; i++) {
        if (!f->ranges[i]->is_entry)
            continue;
        if ((n = lp_binary_ref_candidates(q->u->bins[q->k], f->ranges[i]->start,
                                          &x, err)) < 0)
            return -1;
        for (j = 0; j < n && !q->ambiguous; j++)
            if (x[j].kind == LP_INST_CALL &&
                candidate(q, x[j].site, f->ranges[i]->start, false, err))
                return -1;
    }
    return 0;
}

static int indirect_candidate(void *ctx, const lp_inst *in)
{
    search *q = ctx;

    if (in->kind != LP_INST_CALL || !in->indirect)
        return 0;
    if (candidate(q, in->addr, 0, true, q->err))
        return -1;
    return q->ambiguous;        /* 1: stop, nothing more to learn */
}

/* The indirect calls of bf and the functions it reaches by tail calls as
 * candidates: when an indirect call may enter the closure, the hole's
 * call (made in one of them) may be any of those. 0, or -1 (err). */
static int indirect_candidates(search *q, lp_error *err)
{
    lp_unwinder *u = q->u;
    size_t c;

    if (tail_closure(u, q->k, q->bf, true, err))
        return -1;
    for (c = 0; c < u->nclosure && !q->ambiguous; c++)
        if (each_inst(u, q->k, u->closure[c], indirect_candidate, q, err) < 0)
            return -1;
    return 0;
}

/* The one call site above `bf` that leads to `callee`, or 0. */
static int find_site(lp_unwinder *u, size_t k, const lp_function *bf,
                     const lp_function *callee, uint64_t *site, lp_error *err)
{
    search q = {u, k, bf, 0, false, false, err};
    size_t i;

    *site = 0;
    if (tail_closure(u, k, callee, false, err))
        return -1;
    for (i = 0; i < u->nclosure && !q.ambiguous; i++)
        if (candidates_into(&q, u->closure[i], err))
            return -1;
    if (q.indirect && !q.ambiguous && indirect_candidates(&q, err))
        return -1;
    if (!q.ambiguous)
        *site = q.found;
    return 0;
}

/* u: the unwinder whose inference state is used (a worker's owner); its
 * infer_cu: the unwinder whose address caches are used (the worker). */
static uint64_t infer_caller(lp_unwinder *u, uint64_t below, uint64_t above,
                             bool optional, lp_error *err)
{
    const lp_func_range *ar = uw_func_range(u, above);
    size_t k = uw_bin_of(above);
    const lp_function *bf;
    uint64_t v, site;
    bool ok;

    if (!ar)
        return 0;
    bf = below_fn(u, below, k, &ok);
    if (!ok)
        return 0;
    if (u->infer_pending && add_pending(u, err))
        return UINT64_MAX;
    if (!graph_of(u, k, err) || (bf && tail_closure(u, k, bf, true, err)))
        return UINT64_MAX;
    if ((v = uw_map_get(&u->infer_cache, (uint64_t)(uintptr_t)bf,
                        (uint64_t)(uintptr_t)ar->func)) == 0) {
        if (find_site(u, k, bf, ar->func, &site, err))
            return UINT64_MAX;
        v = site ? uw_enc(k, site) : UW_INFER_NONE;
        if (uw_map_put(&u->infer_cache, (uint64_t)(uintptr_t)bf,
                       (uint64_t)(uintptr_t)ar->func, v))
            return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory"),
                   UINT64_MAX;
    }
    /* a hole that may not be there: only when the frame below cannot
     * have called the frame above itself */
    if (v == UW_INFER_NONE ||
        (optional && (!bf || lp_tailcall_reaches(u->tcs[k], bf, ar->func) != 0)))
        return 0;
    return v;
}

uint64_t uw_infer_caller(lp_unwinder *u, uint64_t below, uint64_t above,
                         bool optional, lp_error *err)
{
    lp_unwinder *o = uw_owner(u);

    o->infer_cu = u;
    return infer_caller(o, below, above, optional, err);
}

void uw_infer_free(lp_unwinder *u)
{
    size_t i;

    for (i = 0; u->tcs && i < u->nbins; i++)
        lp_tailcall_free(u->tcs[i]);
    free(u->tcs);
    free(u->infer_cache.s);
    free(u->infer_lbr);
    free(u->enriched.s);
    free(u->closure);
}
