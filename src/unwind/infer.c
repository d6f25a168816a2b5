/*
 * infer.c - the caller the sample does not show, inferred from the calls
 * the LBR shows across the whole trace. A hole of the frame repair (a
 * caller frame of unknown address: the frame-pointer walk missed it and no
 * LBR entry of the sample shows its call, e.g. after a chain of tail calls
 * longer than the LBR) is filled in with the one sampled call site that
 * leads to the frame above it - directly or through tail calls - from the
 * function the frame below called (src/tailcall, lp_tailcall_find_caller),
 * among the binary's direct calls and tail jumps and the indirect ones the
 * LBR shows.
 * Several such sites, none, or a site in code without a frame (a frame-
 * pointer walk would then have lost more than one frame): no answer, and
 * the context stays truncated at the hole. Never a guess.
 *
 * Owns the per-binary call graphs (filled from every pending distinct
 * sample's LBR when the first question of a flush comes) and the cache of
 * answers. Not the trie (trie.c) nor the contexts (collect.c), which asks.
 */
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/tailcall.h"
#include "unwind/uw_internal.h"

#define UW_INFER_NONE 1         /* cached "no answer" (no site is 1) */

/* Every direct call and jump (conditional or not) to f's entries goes
 * into the graph, and so, in turn, do those to each function reaching f
 * by tail calls: a frame can be lost above a call no LBR ever showed (it
 * was made longer ago than the LBR reaches), so every static site is a
 * candidate too, and two of them make an answer ambiguous. Indirect sites
 * only with the targets the LBR showed. Done once per function. */
/* (the `enriched` map: key (f, 0) for this, (f, 1) for enrich_forward) */
static int enrich(lp_unwinder *u, size_t k, const lp_function *f,
                  lp_error *err)
{
    lp_tailcall *tc = u->tcs[k];
    const lp_function *const *tails;
    const lp_func_range *g;
    const lp_xref *x;
    size_t i, top = 0;
    long n, j;

    if (uw_map_get(&u->enriched, (uint64_t)(uintptr_t)f, 0))
        return 0;
    if (uw_grow((void **)&u->enrich_stack, &u->enrich_cap, 1, sizeof *u->enrich_stack))
        return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
    u->enrich_stack[top++] = f;
    if (uw_map_put(&u->enriched, (uint64_t)(uintptr_t)f, 0, 1))
        return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
    while (top > 0) {
        f = u->enrich_stack[--top];
        for (i = 0; i < f->nranges; i++) {
            if (!f->ranges[i]->is_entry)
                continue;
            if ((n = lp_binary_refs_to(u->bins[k], f->ranges[i]->start, &x, err)) < 0)
                return -1;
            for (j = 0; j < n; j++) {
                if (x[j].kind == LP_INST_CALL) {
                    if (lp_tailcall_add_call(tc, x[j].site, f, err))
                        return -1;
                } else if ((g = lp_binary_func_range(u->bins[k], x[j].site)) &&
                           g->func != f &&
                           lp_tailcall_add_tail(tc, x[j].site, g->func, f, err)) {
                    return -1;
                }
            }
        }
        if ((n = lp_tailcall_tail_callers(tc, f, &tails)) < 0)
            return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
        for (j = 0; j < n; j++) {
            if (uw_map_get(&u->enriched, (uint64_t)(uintptr_t)tails[j], 0))
                continue;
            if (uw_map_put(&u->enriched, (uint64_t)(uintptr_t)tails[j], 0, 1) ||
                uw_grow((void **)&u->enrich_stack, &u->enrich_cap, top + 1,
                        sizeof *u->enrich_stack))
                return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
            u->enrich_stack[top++] = tails[j];
        }
    }
    return 0;
}

/* The direct jumps (tail calls) from f's code to other functions' entries
 * go into the graph, and so, in turn, do those of every function f
 * reaches by tail calls (the LBR's included): what the frame below a hole
 * called may have tail-called the function the hole's frame runs. Done
 * once per function. */
static int jumps_of(lp_unwinder *u, size_t k, const lp_function *f,
                    lp_error *err)
{
    const lp_func_range *t;
    uint64_t a, next;
    lp_inst in;
    size_t i;
    int r;

    for (i = 0; i < f->nranges; i++)
        for (a = f->ranges[i]->start; a < f->ranges[i]->end; a = next) {
            if ((r = lp_binary_inst(u->bins[k], a, &in, err)) < 0)
                return -1;
            if (r == 1 && !in.indirect && in.target &&
                (in.kind == LP_INST_UNCOND_BR || in.kind == LP_INST_COND_BR) &&
                (t = lp_binary_func_range(u->bins[k], in.target)) &&
                t->is_entry && t->start == in.target && t->func != f &&
                lp_tailcall_add_tail(u->tcs[k], a, f, t->func, err))
                return -1;
            if ((r = lp_binary_next_inst(u->bins[k], a, &next, err)) < 0)
                return -1;
            if (r == 0)
                break;
        }
    return 0;
}

static int enrich_forward(lp_unwinder *u, size_t k, const lp_function *f,
                          lp_error *err)
{
    const lp_function *const *to;
    size_t top = 0;
    long n, j;

    if (uw_map_get(&u->enriched, (uint64_t)(uintptr_t)f, 1))
        return 0;
    if (uw_map_put(&u->enriched, (uint64_t)(uintptr_t)f, 1, 1) ||
        uw_grow((void **)&u->enrich_stack, &u->enrich_cap, 1, sizeof *u->enrich_stack))
        return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
    u->enrich_stack[top++] = f;
    while (top > 0) {
        f = u->enrich_stack[--top];
        if (jumps_of(u, k, f, err))
            return -1;
        if ((n = lp_tailcall_tail_callees(u->tcs[k], f, &to)) < 0)
            return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
        for (j = 0; j < n; j++) {
            if (uw_map_get(&u->enriched, (uint64_t)(uintptr_t)to[j], 1))
                continue;
            if (uw_map_put(&u->enriched, (uint64_t)(uintptr_t)to[j], 1, 1) ||
                uw_grow((void **)&u->enrich_stack, &u->enrich_cap, top + 1,
                        sizeof *u->enrich_stack))
                return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
            u->enrich_stack[top++] = to[j];
        }
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

/* Add the branches of every pending distinct sample to the graphs. */
static int add_pending(lp_unwinder *u, lp_error *err)
{
    uw_agg *g, *t;
    size_t i, n;

    if (!u->tcs && !(u->tcs = calloc(u->nbins, sizeof *u->tcs)))
        return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
    HASH_ITER(hh, u->agg, g, t) {
        n = uw_decode_lbr(g, &u->infer_lbr, &u->infer_lbr_cap);
        if (n == (size_t)-1)
            return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
        for (i = 0; i < n; i++) {
            uint64_t a = u->infer_lbr[i].src, b = u->infer_lbr[i].dst;
            size_t k = uw_bin_of(a);
            if (a <= UW_LAST_SENTINEL || b <= UW_LAST_SENTINEL || k != uw_bin_of(b) ||
                k >= u->nbins || (uw_addr(u, a)->flags & UW_AI_RET))
                continue;
            if (!graph_of(u, k, err) ||
                lp_tailcall_add_branch(u->tcs[k], uw_va(a), uw_va(b), err))
                return -1;
        }
    }
    free(u->infer_cache.s);     /* answers may change with the new edges */
    memset(&u->infer_cache, 0, sizeof u->infer_cache);
    u->infer_pending = false;
    return 0;
}

/* A call site where a frame-pointer walk may have skipped more than one
 * frame: the call is made without a frame set up. */
static bool no_frame_at(void *ctx, uint64_t site)
{
    const uw_infer_ctx *c = ctx;

    return uw_leaf_state(c->u, uw_enc(c->bin, site)) != LP_UW_LEAF_BODY;
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

uint64_t uw_infer_caller(lp_unwinder *u, uint64_t below, uint64_t above,
                         bool optional, lp_error *err)
{
    const lp_func_range *ar = uw_func_range(u, above);
    size_t k = uw_bin_of(above);
    const lp_function *bf;
    uw_infer_ctx c = {u, k};
    uint64_t v, site;
    bool ok;

    if (!ar)
        return 0;
    bf = below_fn(u, below, k, &ok);
    if (!ok)
        return 0;
    if (u->infer_pending && add_pending(u, err))
        return UINT64_MAX;
    if (!graph_of(u, k, err) || (bf && enrich_forward(u, k, bf, err)) ||
        enrich(u, k, ar->func, err))
        return UINT64_MAX;
    /* a hole that may not be there: only when the frame below cannot
     * have called the frame above itself */
    if (optional && (!bf || lp_tailcall_reaches(u->tcs[k], bf, ar->func) != 0))
        return 0;
    if ((v = uw_map_get(&u->infer_cache, (uint64_t)(uintptr_t)bf,
                        (uint64_t)(uintptr_t)ar->func)))
        return v == UW_INFER_NONE ? 0 : v;
    if (lp_tailcall_find_caller(u->tcs[k], bf, ar->func, no_frame_at, &c,
                                &site) != LP_TC_UNIQUE)
        site = 0;
    v = site ? uw_enc(k, site) : UW_INFER_NONE;
    if (uw_map_put(&u->infer_cache, (uint64_t)(uintptr_t)bf,
                   (uint64_t)(uintptr_t)ar->func, v))
        return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory"),
               UINT64_MAX;
    return site ? v : 0;
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
    free(u->enrich_stack);
}
