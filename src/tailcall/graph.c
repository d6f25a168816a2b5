/*
 * graph.c - the tail-call graph: the object, its edges and sealing.
 *
 * Edges come from LBR branches classified against the binary the way
 * llvm-profgen 22 builds MissingFrameInferrer's graph: a static site
 * (found while disassembling, in code whose symbol starts inside a DWARF
 * function) is a call (any call instruction) or a tail call (a direct
 * unconditional jump to another function, or an indirect jump); the
 * branches the LBR recorded from such sites then replace the static
 * targets - a call edge per sampled target, a tail-call edge per sampled
 * target in another function range than the jump. Sealing sorts every
 * list (searches try edges in address order) and finds the strongly
 * connected components (the strict search's cycles). Owns no search.
 */
#include <stdlib.h>
#include <string.h>

#include "tailcall/tc_internal.h"
#include "util/grow.h"

void lp_tailcall_opts_default(lp_tailcall_opts *o)
{
    o->mode = LP_TC_LLVM;
    o->max_depth = LP_TC_DEFAULT_MAX_DEPTH;
}

lp_tailcall *lp_tailcall_new(lp_binary *bin, const lp_tailcall_opts *opts,
                             lp_error *err)
{
    lp_tailcall *tc = calloc(1, sizeof *tc);

    if (!tc)
        return lp_error_set(err, LP_ENOMEM, "out of memory"), NULL;
    tc->bin = bin;
    if (opts)
        tc->opts = *opts;
    else
        lp_tailcall_opts_default(&tc->opts);
    return tc;
}

void lp_tailcall_free(lp_tailcall *tc)
{
    tc_site *s, *st;
    tc_fn *f, *ft;
    tc_class_memo *m, *mt;

    if (!tc)
        return;
    free(tc->callers);
    free(tc->sites_out.v);
    tc_drop_pairs(tc);
    HASH_ITER(hh, tc->sites, s, st) {
        HASH_DEL(tc->sites, s);
        free(s->targets);
        free(s);
    }
    HASH_ITER(hh, tc->fns, f, ft) {
        HASH_DEL(tc->fns, f);
        free(f->sites);
        free(f);
    }
    HASH_ITER(hh, tc->classes, m, mt) {
        HASH_DEL(tc->classes, m);
        free(m);
    }
    free(tc->path.v);
    free(tc);
}

int tc_vec_push(tc_vec *p, uint64_t a)
{
    if (lp_grow_array(&p->v, &p->cap, p->n + 1, sizeof *p->v, 16))
        return -1;
    p->v[p->n++] = a;
    return 0;
}

/* Append x to a pointer vector unless it is there already. 0 or -1. */
static int add_unique(void ***v, size_t *n, size_t *cap, void *x)
{
    for (size_t i = 0; i < *n; i++)
        if ((*v)[i] == x)
            return 0;
    if (lp_grow_array(v, cap, *n + 1, sizeof **v, 4))
        return -1;
    (*v)[(*n)++] = x;
    return 0;
}

tc_fn *tc_fn_get(lp_tailcall *tc, const lp_function *fn, bool create)
{
    tc_fn *f;

    HASH_FIND_PTR(tc->fns, &fn, f);
    if (f || !create)
        return f;
    if (!(f = calloc(1, sizeof *f)))
        return NULL;
    f->fn = fn;
    HASH_ADD_PTR(tc->fns, fn, f);
    return f;
}

tc_site *tc_site_get(lp_tailcall *tc, uint64_t addr)
{
    tc_site *s;

    HASH_FIND(hh, tc->sites, &addr, sizeof addr, s);
    return s;
}

/* The site at addr, created with kind `tail`; NULL if it exists with the
 * other kind (err) or on no memory. *fresh: it was created now. */
static tc_site *site_make(lp_tailcall *tc, uint64_t addr, bool tail,
                          bool *fresh, lp_error *err)
{
    tc_site *s = tc_site_get(tc, addr);

    *fresh = false;
    if (s) {
        if (s->tail != tail)
            return lp_error_set(err, LP_EUSAGE, "tail-call graph: site 0x%llx"
                                " given as both a call and a tail call",
                                (unsigned long long)addr), NULL;
        return s;
    }
    if (!(s = calloc(1, sizeof *s)))
        return lp_error_set(err, LP_ENOMEM, "out of memory"), NULL;
    s->addr = addr;
    s->tail = tail;
    HASH_ADD(hh, tc->sites, addr, sizeof s->addr, s);
    *fresh = true;
    return s;
}

static int add_target(tc_site *s, const lp_function *callee, lp_error *err)
{
    if (add_unique((void ***)&s->targets, &s->ntargets, &s->cap,
                   (void *)(uintptr_t)callee))
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    return 0;
}

int lp_tailcall_add_call(lp_tailcall *tc, uint64_t site,
                         const lp_function *callee, lp_error *err)
{
    bool fresh;
    tc_site *s = site_make(tc, site, false, &fresh, err);

    if (!s)
        return -1;
    tc->sealed = false;
    return add_target(s, callee, err);
}

int lp_tailcall_add_tail(lp_tailcall *tc, uint64_t site,
                         const lp_function *from, const lp_function *callee,
                         lp_error *err)
{
    bool fresh;
    tc_site *s = site_make(tc, site, true, &fresh, err);
    tc_fn *t, *f;

    if (!s || add_target(s, callee, err))
        return -1;
    tc->sealed = false;
    if (!(t = tc_fn_get(tc, callee, true)))
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    t->tail_target = true;
    if (!fresh || !from)
        return 0;   /* a site belongs to the function it was first given */
    if (!(f = tc_fn_get(tc, from, true)) ||
        add_unique((void ***)&f->sites, &f->nsites, &f->cap, s))
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    return 0;
}

/* ---- classification against the binary ---------------------------------- */

/* The function whose range holds the start of the disassembly unit of
 * addr: llvm-profgen records edges only for code of a symbol that starts
 * in a function, and compares jump targets with that function. */
static const lp_function *unit_function(lp_binary *b, uint64_t addr)
{
    uint64_t start, end;
    const lp_func_range *r;

    if (lp_binary_code_unit(b, addr, &start, &end) != 1)
        return NULL;
    r = lp_binary_func_range(b, start);
    return r ? r->func : NULL;
}

static int classify_now(lp_binary *b, uint64_t from, enum tc_class *cls,
                        lp_error *err)
{
    lp_inst in;
    const lp_function *f;
    const lp_func_range *t;
    int r = lp_binary_inst(b, from, &in, err);

    *cls = TC_OTHER;
    if (r <= 0)
        return r;
    if ((in.kind != LP_INST_CALL && in.kind != LP_INST_UNCOND_BR) ||
        !(f = unit_function(b, from)))
        return 0;
    if (in.kind == LP_INST_CALL || in.indirect)
        *cls = in.kind == LP_INST_CALL ? TC_CALL : TC_TAIL;
    else if ((t = lp_binary_func_range(b, in.target)) && t->func != f)
        *cls = TC_TAIL;
    return 0;
}

/* What the instruction at `from` is, decided once per address. */
static int classify(lp_tailcall *tc, uint64_t from, enum tc_class *cls,
                    lp_error *err)
{
    tc_class_memo *m;

    HASH_FIND(hh, tc->classes, &from, sizeof from, m);
    if (m) {
        *cls = m->cls;
        return 0;
    }
    if (classify_now(tc->bin, from, cls, err) < 0)
        return -1;
    if (!(m = malloc(sizeof *m)))
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    m->addr = from;
    m->cls = *cls;
    HASH_ADD(hh, tc->classes, addr, sizeof m->addr, m);
    return 0;
}

int lp_tailcall_add_branch(lp_tailcall *tc, uint64_t from, uint64_t to,
                           lp_error *err)
{
    enum tc_class cls;
    const lp_func_range *tr, *fr;

    if (!tc->bin)
        return lp_error_set(err, LP_EUSAGE, "tail-call graph: no binary to"
                            " classify branches with");
    if (classify(tc, from, &cls, err))
        return -1;
    if (cls == TC_OTHER || !(tr = lp_binary_func_range(tc->bin, to)))
        return 0;
    if (cls == TC_CALL)
        return lp_tailcall_add_call(tc, from, tr->func, err);
    fr = lp_binary_func_range(tc->bin, from);
    if (fr == tr)   /* a jump within one range is no tail call */
        return 0;
    return lp_tailcall_add_tail(tc, from, fr ? fr->func : NULL, tr->func,
                                err);
}

int lp_tailcall_add_counters(lp_tailcall *tc, const lp_counters *c,
                             lp_error *err)
{
    const lp_addr_pair_count *br;
    long n = lp_counters_branches_view(c, &br);

    for (long i = 0; i < n; i++)
        if (!LP_CTX_IS_XBIN(br[i].b) &&
            lp_tailcall_add_branch(tc, br[i].a, br[i].b, err))
            return -1;
    return 0;
}

int lp_tailcall_add_ctxcount(lp_tailcall *tc, const lp_ctxcount *cc,
                             int bin_index, lp_error *err)
{
    lp_ctx_entry **all;
    long n = lp_ctxcount_all(cc, &all);
    int rc = 0;

    if (n < 0)
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    for (long i = 0; i < n && rc == 0; i++)
        if (all[i]->bin == bin_index)
            rc = lp_tailcall_add_counters(tc, all[i]->counters, err);
    free(all);
    return rc;
}

/* ---- sealing -------------------------------------------------------------- */

int tc_fn_cmp(const lp_function *a, const lp_function *b)
{
    if (a->nranges && b->nranges && a->ranges[0]->start != b->ranges[0]->start)
        return a->ranges[0]->start < b->ranges[0]->start ? -1 : 1;
    int c = strcmp(a->name ? a->name : "", b->name ? b->name : "");
    if (c)
        return c;
    return (a > b) - (a < b);
}

static int fn_ptr_cmp(const void *x, const void *y)
{
    return tc_fn_cmp(*(const lp_function *const *)x,
                     *(const lp_function *const *)y);
}

static int site_ptr_cmp(const void *x, const void *y)
{
    uint64_t a = (*(tc_site *const *)x)->addr, b = (*(tc_site *const *)y)->addr;
    return (a > b) - (a < b);
}

/* Tarjan's strongly connected components, without recursion: a frame per
 * function on the DFS path, resuming at its (site, target) edge. */
typedef struct scc_frame {
    tc_fn *f;
    size_t si, ti;
} scc_frame;

typedef struct scc_state {
    scc_frame *path;            /* DFS path */
    tc_fn **stack;              /* Tarjan's stack */
    size_t npath, nstack, next_index, next_scc;
} scc_state;

/* The next function an edge of fr leads to, advancing fr; NULL at end. */
static tc_fn *next_edge(lp_tailcall *tc, scc_frame *fr)
{
    while (fr->si < fr->f->nsites) {
        tc_site *s = fr->f->sites[fr->si];
        if (fr->ti < s->ntargets) {
            tc_fn *g = tc_fn_get(tc, s->targets[fr->ti++], false);
            if (g)
                return g;
            continue;
        }
        fr->si++;
        fr->ti = 0;
    }
    return NULL;
}

static void scc_enter(scc_state *st, tc_fn *f)
{
    f->index = f->low = ++st->next_index;
    f->on_stack = true;
    st->stack[st->nstack++] = f;
    st->path[st->npath++] = (scc_frame){f, 0, 0};
}

/* f finished and is a component's root: pop the component. */
static void scc_pop(scc_state *st, tc_fn *f)
{
    size_t first = st->nstack, id = st->next_scc++;

    while (st->stack[first - 1] != f)
        first--;
    first--;
    for (size_t i = first; i < st->nstack; i++) {
        st->stack[i]->on_stack = false;
        st->stack[i]->scc = id;
        st->stack[i]->cyclic = st->nstack - first > 1;
    }
    st->nstack = first;
}

static void scc_from(lp_tailcall *tc, scc_state *st, tc_fn *root)
{
    scc_enter(st, root);
    while (st->npath) {
        scc_frame *fr = &st->path[st->npath - 1];
        tc_fn *g = next_edge(tc, fr);
        if (g == fr->f)
            fr->f->cyclic = true;   /* a self tail call; kept by scc_pop */
        if (g && !g->index) {
            scc_enter(st, g);
        } else if (g) {
            if (g->on_stack && g->index < fr->f->low)
                fr->f->low = g->index;
        } else {
            tc_fn *f = fr->f;
            bool self = f->cyclic;
            st->npath--;
            if (f->low == f->index) {
                scc_pop(st, f);
                f->cyclic = f->cyclic || self;
            }
            if (st->npath && f->low < st->path[st->npath - 1].f->low)
                st->path[st->npath - 1].f->low = f->low;
        }
    }
}

static int find_sccs(lp_tailcall *tc)
{
    size_t n = HASH_COUNT(tc->fns);
    scc_state st = {0};
    tc_fn *f, *tmp;

    st.path = malloc((n ? n : 1) * sizeof *st.path);
    st.stack = malloc((n ? n : 1) * sizeof *st.stack);
    if (!st.path || !st.stack) {
        free(st.path);
        free(st.stack);
        return -1;
    }
    HASH_ITER(hh, tc->fns, f, tmp) {
        f->index = f->low = 0;
        f->on_stack = f->cyclic = false;
    }
    HASH_ITER(hh, tc->fns, f, tmp)
        if (!f->index)
            scc_from(tc, &st, f);
    free(st.path);
    free(st.stack);
    return 0;
}

int tc_seal(lp_tailcall *tc)
{
    tc_site *s, *stmp;
    tc_fn *f, *ftmp;

    tc_drop_pairs(tc);
    memset(&tc->stats, 0, sizeof tc->stats);
    HASH_ITER(hh, tc->sites, s, stmp) {
        if (s->ntargets > 1)
            qsort(s->targets, s->ntargets, sizeof *s->targets, fn_ptr_cmp);
        tc->stats.call_sites += !s->tail;
        tc->stats.tail_sites += s->tail;
    }
    HASH_ITER(hh, tc->fns, f, ftmp) {
        if (f->nsites > 1)
            qsort(f->sites, f->nsites, sizeof *f->sites, site_ptr_cmp);
        tc->stats.tail_funcs += f->nsites > 0;
    }
    if (find_sccs(tc))
        return -1;
    tc->sealed = true;
    return 0;
}

void lp_tailcall_stats_get(const lp_tailcall *tc, lp_tailcall_stats *s)
{
    *s = tc->stats;
}
