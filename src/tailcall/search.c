/*
 * search.c - the queries on the tail-call graph: is a callee reached
 * from a call site's targets through tail calls, and by which path.
 *
 * LP_TC_LLVM is llvm-profgen 22's MissingFrameInferrer search, step for
 * step: a direct call ends the search; a callee no tail call reaches has
 * no path; else a depth-first search from each target of the call over
 * the functions' tail-call sites, where a function already on the search
 * stack counts no path (cycles are cut), the search stops at max_depth
 * functions and after a second path, and every (function, callee) result
 * computed is cached for later queries - unique paths with their sites,
 * others with their count - including results a cut cycle or the depth
 * limit made smaller than the graph's.
 *
 * LP_TC_STRICT counts the paths of tail calls from every target of the
 * call to the callee that visit no function twice (llvm-profgen's cut
 * cycles: mutual tail recursion is one path, as recursion compression
 * folds it), exactly and capped at 2, a direct call being one more path.
 * Counts of functions on no cycle are cached; they hold for any search
 * stack, so no answer depends on the queries before.
 */
#include <stdlib.h>
#include <string.h>

#include "tailcall/tc_internal.h"

const char *lp_tailcall_answer_name(lp_tailcall_answer a)
{
    static const char *const names[LP_TC_NANSWERS] = {
        "unknown", "direct", "unique", "none", "ambiguous", "too-deep"};
    return (unsigned)a < LP_TC_NANSWERS ? names[a] : "?";
}

/* ---- cached answers per (function, callee) ------------------------------ */

#define PAIR_KEYLEN (2 * sizeof(const lp_function *))

tc_pair *tc_pair_find(lp_tailcall *tc, const lp_function *from,
                      const lp_function *to)
{
    tc_pair key, *p;

    memset(&key, 0, sizeof key);
    key.from = from;
    key.to = to;
    HASH_FIND(hh, tc->pairs, &key.from, PAIR_KEYLEN, p);
    return p;
}

/* Cache an answer (a copy of path[0..n)); NULL if out of memory, which
 * only costs the cache. */
tc_pair *tc_pair_put(lp_tailcall *tc, const lp_function *from,
                     const lp_function *to, uint64_t count,
                     const uint64_t *path, size_t n)
{
    tc_pair *p = calloc(1, sizeof *p);

    if (!p)
        return NULL;
    if (n && !(p->path = malloc(n * sizeof *path))) {
        free(p);
        return NULL;
    }
    if (n)
        memcpy(p->path, path, n * sizeof *path);
    p->from = from;
    p->to = to;
    p->count = count;
    p->n = n;
    HASH_ADD(hh, tc->pairs, from, PAIR_KEYLEN, p);
    return p;
}

void tc_drop_pairs(lp_tailcall *tc)
{
    tc_pair *p, *tmp;

    HASH_ITER(hh, tc->pairs, p, tmp) {
        HASH_DEL(tc->pairs, p);
        free(p->path);
        free(p);
    }
}

static void push(lp_tailcall *tc, uint64_t a)
{
    if (tc_vec_push(&tc->path, a))
        tc->oom = true;
}

/* ---- LP_TC_LLVM: computeUniqueTailCallPath ------------------------------ */

static uint64_t llvm_fn(lp_tailcall *tc, const lp_function *from,
                        const lp_function *to);

/* Paths through one tail-call site: its address, then a path from one of
 * the functions it reaches. */
static uint64_t llvm_site(lp_tailcall *tc, const tc_site *s,
                          const lp_function *to)
{
    size_t pos = tc->path.n;
    uint64_t n = 0;

    if (!s->ntargets)
        return 0;
    push(tc, s->addr);
    for (size_t i = 0; i < s->ntargets && n <= 1; i++)
        n += llvm_fn(tc, s->targets[i], to);
    if (n != 1)
        tc->path.n = pos;
    return n;
}

static uint64_t llvm_fn(lp_tailcall *tc, const lp_function *from,
                        const lp_function *to)
{
    tc_fn *f = tc_fn_get(tc, from, false);
    size_t pos = tc->path.n;
    uint64_t n = 0;
    tc_pair *c;

    if (from == to)
        return 1;
    if (!f || f->visiting)
        return 0;
    if ((c = tc_pair_find(tc, from, to))) {
        for (size_t i = 0; c->count == 1 && i < c->n; i++)
            push(tc, c->path[i]);
        return c->count;
    }
    if (tc->depth == tc->opts.max_depth || !f->nsites)
        return 0;
    tc->depth++;
    f->visiting = true;
    for (size_t i = 0; i < f->nsites && n <= 1; i++)
        n += llvm_site(tc, f->sites[i], to);
    tc->depth--;
    f->visiting = false;
    if (n != 1)
        tc->path.n = pos;
    tc_pair_put(tc, from, to, n, n == 1 ? tc->path.v + pos : NULL,
                n == 1 ? tc->path.n - pos : 0);
    return n;
}

static lp_tailcall_answer llvm_find(lp_tailcall *tc, const tc_site *call,
                                    const lp_function *to)
{
    const tc_fn *t = tc_fn_get(tc, to, false);
    uint64_t n = 0;

    for (size_t i = 0; i < call->ntargets; i++)
        if (call->targets[i] == to)
            return LP_TC_DIRECT;
    if (!t || !t->tail_target)
        return LP_TC_NONE;
    tc->depth = 0;
    for (size_t i = 0; i < call->ntargets && n <= 1; i++)
        n += llvm_fn(tc, call->targets[i], to);
    if (n != 1)
        tc->path.n = 0;
    return n == 0 ? LP_TC_NONE : n == 1 ? LP_TC_UNIQUE : LP_TC_AMBIGUOUS;
}

/* ---- LP_TC_STRICT: simple paths, counted exactly ------------------------ */

/* Edges one strict query may follow; past it the answer is ambiguous. */
#define TC_STRICT_BUDGET 100000

/* Paths from f to the callee that visit no function twice and none on the
 * search stack, capped at 2. A function on no cycle reaches no function
 * on the stack (those reach it), so its count holds for any stack and is
 * cached; one on a cycle is searched again each time. */
static uint64_t strict_walks(lp_tailcall *tc, const lp_function *f,
                             const lp_function *to)
{
    tc_fn *n = tc_fn_get(tc, f, false);
    uint64_t c = 0;
    tc_pair *memo;

    if (f == to || !n)
        return f == to;
    if (n->visiting)
        return 0;
    if (!n->cyclic && (memo = tc_pair_find(tc, f, to)))
        return memo->count;
    n->visiting = true;
    for (size_t i = 0; i < n->nsites && c < 2; i++)
        for (size_t j = 0; j < n->sites[i]->ntargets && c < 2; j++) {
            if (tc->budget == 0) {
                c = 2;      /* too many to look at: not provably one */
                break;
            }
            tc->budget--;
            c += strict_walks(tc, n->sites[i]->targets[j], to);
        }
    n->visiting = false;
    if (c > 2)
        c = 2;
    if (!n->cyclic && tc->budget)
        tc_pair_put(tc, f, to, c, NULL, 0);
    return c;
}

/* The one path from f (a count of 1) to the callee: at each function the
 * single edge with a path, the functions passed kept on the stack. */
static void strict_path(lp_tailcall *tc, const lp_function *f,
                        const lp_function *to)
{
    tc_fn *n;

    while (f != to && (n = tc_fn_get(tc, f, false)) && !tc->oom) {
        const lp_function *next = NULL;
        n->visiting = true;
        for (size_t i = 0; !next && i < n->nsites; i++)
            for (size_t j = 0; !next && j < n->sites[i]->ntargets; j++)
                if (strict_walks(tc, n->sites[i]->targets[j], to) == 1) {
                    next = n->sites[i]->targets[j];
                    push(tc, n->sites[i]->addr);
                }
        if (!next)
            break;  /* cannot happen after a count of 1 */
        f = next;
    }
}

static void strict_unmark(lp_tailcall *tc)
{
    tc_fn *f, *tmp;

    HASH_ITER(hh, tc->fns, f, tmp)
        f->visiting = false;
}

static lp_tailcall_answer strict_find(lp_tailcall *tc, const tc_site *call,
                                      const lp_function *to)
{
    uint64_t total = 0;
    const lp_function *one = NULL;

    tc->budget = TC_STRICT_BUDGET;
    for (size_t i = 0; i < call->ntargets && total < 2; i++) {
        uint64_t c = strict_walks(tc, call->targets[i], to);
        if (c)
            one = call->targets[i];
        total += c;
    }
    if (total != 1)
        return total ? LP_TC_AMBIGUOUS : LP_TC_NONE;
    if (one == to)
        return LP_TC_DIRECT;
    tc->budget = TC_STRICT_BUDGET;
    strict_path(tc, one, to);
    strict_unmark(tc);
    if (tc->path.n <= tc->opts.max_depth)
        return LP_TC_UNIQUE;
    tc->path.n = 0;
    return LP_TC_TOO_DEEP;
}

/* ---- the graph walked backwards and forwards (frame repair) ------------- */

/* Whether f reaches `to` (itself, or by tail calls); 2 when the budget
 * ran out (not known). */
static int strict_reaches(lp_tailcall *tc, const lp_function *f,
                          const lp_function *to)
{
    uint64_t c;

    tc->budget = TC_STRICT_BUDGET;
    c = strict_walks(tc, f, to);
    strict_unmark(tc);
    return tc->budget == 0 ? 2 : c > 0;
}

/* Append fn to the answer vector unless it is there. 0 or -1. */
static int answer_fn(lp_tailcall *tc, size_t *n, const lp_function *fn)
{
    for (size_t i = 0; i < *n; i++)
        if (tc->callers[i] == fn)
            return 0;
    if (*n == tc->callers_cap) {
        size_t nc = *n ? 2 * *n : 16;
        const lp_function **p = realloc(tc->callers, nc * sizeof *p);
        if (!p)
            return -1;
        tc->callers = p;
        tc->callers_cap = nc;
    }
    tc->callers[(*n)++] = fn;
    return 0;
}

long lp_tailcall_call_sites(lp_tailcall *tc, const lp_function *f,
                            const uint64_t **out)
{
    tc_site *s, *tmp;
    int rc = 0;

    tc->sites_out.n = 0;
    HASH_ITER(hh, tc->sites, s, tmp) {
        if (s->tail)
            continue;
        for (size_t j = 0; j < s->ntargets && rc == 0; j++)
            if (s->targets[j] == f) {
                rc = tc_vec_push(&tc->sites_out, s->addr);
                break;
            }
    }
    *out = tc->sites_out.v;
    return rc ? -1 : (long)tc->sites_out.n;
}

long lp_tailcall_tail_callers(lp_tailcall *tc, const lp_function *f,
                              const lp_function *const **out)
{
    tc_fn *g, *tmp;
    size_t n = 0;

    HASH_ITER(hh, tc->fns, g, tmp) {
        bool hit = false;
        for (size_t i = 0; i < g->nsites && !hit; i++)
            for (size_t j = 0; j < g->sites[i]->ntargets && !hit; j++)
                hit = g->sites[i]->targets[j] == f;
        if (hit && g->fn != f && answer_fn(tc, &n, g->fn))
            return -1;
    }
    *out = tc->callers;
    return (long)n;
}

long lp_tailcall_tail_callees(lp_tailcall *tc, const lp_function *f,
                              const lp_function *const **out)
{
    const tc_fn *g = tc_fn_get(tc, f, false);
    size_t n = 0;

    for (size_t i = 0; g && i < g->nsites; i++)
        for (size_t j = 0; j < g->sites[i]->ntargets; j++)
            if (g->sites[i]->targets[j] != f &&
                answer_fn(tc, &n, g->sites[i]->targets[j]))
                return -1;
    *out = tc->callers;
    return (long)n;
}

int lp_tailcall_reaches(lp_tailcall *tc, const lp_function *from,
                        const lp_function *to)
{
    int r;

    if (!tc->sealed && tc_seal(tc))
        tc->oom = true;
    if (tc->oom)
        return -1;
    r = strict_reaches(tc, from, to);
    return r == 2 ? -1 : r;
}

/* ---- queries -------------------------------------------------------------- */

static lp_tailcall_answer answer(lp_tailcall *tc, lp_tailcall_answer a,
                                 const uint64_t **path, size_t *n)
{
    if (tc->oom) {  /* what was cached while memory ran out may be wrong */
        tc_drop_pairs(tc);
        tc->oom = false;
        tc->path.n = 0;
        a = LP_TC_UNKNOWN;
    }
    if (a != LP_TC_UNIQUE)
        tc->path.n = 0;
    tc->stats.queries[a]++;
    if (tc->path.n > tc->stats.longest_path)
        tc->stats.longest_path = tc->path.n;
    if (path)
        *path = tc->path.v;
    if (n)
        *n = tc->path.n;
    return a;
}

lp_tailcall_answer lp_tailcall_find_fn(lp_tailcall *tc, uint64_t call_site,
                                       const lp_function *callee,
                                       const uint64_t **path, size_t *n)
{
    const tc_site *call;

    tc->path.n = 0;
    if (!tc->sealed && tc_seal(tc))
        tc->oom = true;
    call = tc_site_get(tc, call_site);
    if (tc->oom || !callee || !call || call->tail || !call->ntargets)
        return answer(tc, LP_TC_UNKNOWN, path, n);
    if (tc->opts.mode == LP_TC_STRICT)
        return answer(tc, strict_find(tc, call, callee), path, n);
    return answer(tc, llvm_find(tc, call, callee), path, n);
}

lp_tailcall_answer lp_tailcall_find(lp_tailcall *tc, uint64_t call_site,
                                    uint64_t callee, const uint64_t **path,
                                    size_t *n)
{
    const lp_func_range *r = tc->bin ? lp_binary_func_range(tc->bin, callee)
                                     : NULL;

    return lp_tailcall_find_fn(tc, call_site, r ? r->func : NULL, path, n);
}

long lp_tailcall_infer_context(lp_tailcall *tc, const uint64_t *ctx,
                               size_t n, uint64_t **out, size_t *cap)
{
    tc_vec v = {*out, 0, *cap};
    long rc = 0;

    for (size_t i = 0; i < n && rc == 0; i++) {
        const uint64_t *p = NULL;
        size_t k = 0;
        rc = tc_vec_push(&v, ctx[i]);
        if (i + 1 < n &&
            lp_tailcall_find(tc, ctx[i], ctx[i + 1], &p, &k) == LP_TC_UNIQUE)
            for (size_t j = 0; j < k && rc == 0; j++)
                rc = tc_vec_push(&v, p[j]);
    }
    *out = v.v;
    *cap = v.cap;
    return rc ? -1 : (long)v.n;
}
