/*
 * preinline.c - llvm-profgen 19's CSPreInliner: a top-down order of the
 * profiled call graph (LLVM's ProfiledCallGraph built from the context
 * trie, cold edges trimmed, Tarjan SCCs reversed, SCC members ordered by a
 * maximum spanning tree), then per function: promote and merge its
 * not-inlined contexts into the base profile (SampleContextTracker::
 * getBaseSamplesFor), and inline the hottest child contexts while the size
 * budget lasts (std::priority_queue semantics replicated, so equal
 * candidates come out in the same order). Contexts left neither top-level
 * nor inlined are dropped at the end. Owns only this algorithm's scratch.
 */
#include <stdlib.h>
#include <string.h>

#include "context/cs_internal.h"

/* ---- profiled call graph ------------------------------------------------------- */

typedef struct pcg_node pcg_node;

typedef struct pcg_edge {
    pcg_node *src, *dst;
    uint64_t weight;
    bool mst;
} pcg_edge;

struct pcg_node {
    const cs_name *name;        /* NULL for the synthetic root */
    pcg_edge *edges;            /* sorted by target name */
    size_t nedges, cap;
    unsigned visit;             /* Tarjan visit number, ~0U when done */
    pcg_node *group;            /* union-find (member ordering) */
    uint32_t rank;
    uint32_t name_rank;         /* position in name order among the nodes */
    bool in_scc, queued;
    size_t incoming;            /* incoming MST edges not yet walked */
    UT_hash_handle hh;          /* by name pointer */
};

typedef struct pcg {
    pcg_node root;
    pcg_node *nodes;            /* uthash by name pointer */
} pcg;

typedef struct pre {            /* the pre-inliner's state */
    cs_trie *t, *sizes;
    const lp_cs_opts *o;
    uint64_t cold, norm_upper;  /* thresholds from the summary */
    cs_summary_job *sj;         /* the summary, computed alongside */
    bool no_summary;            /* it or the sizes failed (err set) */
    lp_error *err;
    int oom;
    struct ctx_list *lists;     /* FuncToCtxtProfiles */
    cs_mergeq *mq;              /* the promotions' profile merges */
    uint64_t serial;            /* creation number of node copies */
    uint64_t steps, max_steps;  /* promotion steps; the budget */
    bool bounded;               /* budget spent: walks skip new children */
    size_t nodes;               /* trie nodes at the start */
    int lists_rc;               /* populate_lists' */
} pre;

typedef struct ctx_list {
    const cs_name *name;
    cs_prof **v;
    size_t n, cap;
    UT_hash_handle hh;
} ctx_list;

static int name_cmp(const cs_name *a, const cs_name *b)
{
    size_t m = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->s, b->s, m);

    if (c)
        return c;
    return a->len < b->len ? -1 : a->len > b->len;
}

/* The name's scratch slots (cs_name.pre_node, .pre_ctxs): the
 * pre-inliner's own, on names it does not otherwise change. */
static cs_name *scratch(const cs_name *name)
{
    return (cs_name *)name;
}

static pcg_node *pcg_func(pcg *g, const cs_name *name)
{
    pcg_node *n = name->pre_node;

    if (n)
        return n;
    if (!(n = calloc(1, sizeof *n)))
        return NULL;
    n->name = name;
    HASH_ADD_PTR(g->nodes, name, n);   /* iterated in insertion order */
    scratch(name)->pre_node = n;
    return n;
}

static int add_edge(pcg_node *s, pcg_node *d, uint64_t w)
{
    pcg_edge *ne;

    if (s->nedges == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 4;
        if (!(ne = realloc(s->edges, s->cap * sizeof *ne)))
            return -1;
        s->edges = ne;
    }
    s->edges[s->nedges++] = (pcg_edge){s, d, w, false};
    return 0;
}

static int edge_cmp(const void *x, const void *y)
{
    const pcg_edge *a = x, *b = y;

    return name_cmp(a->dst->name, b->dst->name);
}

/* edge_cmp through the targets' name ranks (one node per name: equal
 * ranks are equal names) */
static int edge_rank_cmp(const void *x, const void *y)
{
    const pcg_edge *a = x, *b = y;

    return (a->dst->name_rank > b->dst->name_rank) -
           (a->dst->name_rank < b->dst->name_rank);
}

/* Fold a node's repeated targets (the weights add, or the largest
 * stays: either in any order) and sort the distinct ones by target (name
 * ranks set); then drop edges of weight <= threshold. at: one slot per
 * name rank, all ~0 (left so). */
static void finish_edges(pcg_node *n, uint32_t *at, uint64_t threshold,
                         bool sum, bool trim)
{
    size_t i, k = 0;

    for (i = 0; i < n->nedges; i++) {
        uint32_t r = n->edges[i].dst->name_rank;
        if (at[r] != UINT32_MAX) {
            pcg_edge *e = &n->edges[at[r]];
            e->weight = sum ? lp_sat_add(e->weight, n->edges[i].weight)
                            : (e->weight > n->edges[i].weight ? e->weight
                                                              : n->edges[i].weight);
        } else {
            at[r] = (uint32_t)k;
            n->edges[k++] = n->edges[i];
        }
    }
    for (i = 0; i < k; i++)
        at[n->edges[i].dst->name_rank] = UINT32_MAX;
    n->nedges = k;
    if (k > 1)  /* distinct ranks: no ties, any sort gives this order */
        qsort(n->edges, k, sizeof *n->edges, edge_rank_cmp);
    if (!trim || !threshold)
        return;
    for (i = 0, k = 0; i < n->nedges; i++)
        if (n->edges[i].weight > threshold)
            n->edges[k++] = n->edges[i];
    n->nedges = k;
}

uint64_t cs_edge_weight(const cs_node *caller, const cs_node *callee)
{
    uint64_t entry, site;

    if (!callee->prof || !caller->prof)
        return 0;
    entry = lp_fs_head_estimate(&callee->prof->fs, 1);
    site = lp_fs_target_count(&caller->prof->fs, callee->callsite,
                              callee->prof->fs.name);
    return site > entry ? site : entry;
}

/* The summary's thresholds, once the summary is there. */
static int thresholds(pre *P)
{
    const lp_summary *s = cs_summary_wait(P->sj, P->err);

    if (!s) {
        P->no_summary = true;
        return -1;
    }
    P->cold = P->o->cold_count >= 0 ? (uint64_t)P->o->cold_count
                                    : cs_percentile_count(s, P->o->cutoff_cold);
    P->norm_upper = cs_percentile_count(s, 100000);
    return 0;
}

/* ProfiledCallGraph(ContextTracker, ColdThreshold): the edges are
 * collected before the cold threshold is known (the summary may still be
 * being computed), and trimmed after. */
static int pcg_build(pcg *g, pre *P)
{
    cs_node **q, *c;
    pcg_node *s, *d, *n, *tmp;
    size_t cnt, i;
    uint32_t k, *at;

    /* any order of the nodes gives the same graph (edges folded and
     * sorted, nodes ranked by name) */
    if (!(q = cs_bfs(P->t, &cnt)))
        return -1;
    for (i = 0; i < cnt; i++) {
        s = q[i] == &P->t->root ? NULL : pcg_func(g, q[i]->func);
        if (q[i] != &P->t->root && !s)
            goto oom;
        for (k = 0; k < q[i]->nkids; k++) {
            c = q[i]->kids[k].n;
            if (!(d = pcg_func(g, c->func)))
                goto oom;
            if (s && add_edge(s, d, P->t->weights ? c->weight
                                                  : cs_edge_weight(q[i], c)))
                goto oom;
        }
    }
    free(q);
    P->t->weights = false;      /* the pre-inliner changes the profiles */
    /* the root's edges (one per node) sorted by name give the name ranks
     * the other edges are sorted by */
    HASH_ITER(hh, g->nodes, n, tmp)
        if (add_edge(&g->root, n, 0))
            return -1;
    if (g->root.nedges > 1)
        qsort(g->root.edges, g->root.nedges, sizeof *g->root.edges, edge_cmp);
    for (i = 0; i < g->root.nedges; i++)
        g->root.edges[i].dst->name_rank = (uint32_t)i;
    if (thresholds(P) ||
        !(at = malloc((g->root.nedges ? g->root.nedges : 1) * sizeof *at)))
        return -1;
    memset(at, 0xff, (g->root.nedges ? g->root.nedges : 1) * sizeof *at);
    HASH_ITER(hh, g->nodes, n, tmp)
        finish_edges(n, at, P->cold, P->o->edge_weight_sum, true);
    free(at);
    return 0;
oom:
    free(q);
    return -1;
}

static void pcg_free(pcg *g)
{
    pcg_node *n, *tmp;

    HASH_ITER(hh, g->nodes, n, tmp) {
        HASH_DEL(g->nodes, n);
        scratch(n->name)->pre_node = NULL;
        free(n->edges);
        free(n);
    }
    free(g->root.edges);
}

/* ---- Tarjan's SCCs, as llvm::scc_iterator walks them ------------------------------ */

typedef struct visit_elem {
    pcg_node *node;
    size_t next;
    unsigned min;
} visit_elem;

typedef struct node_vec {
    pcg_node **v;
    size_t n, cap;
} node_vec;

static int vec_push(node_vec *v, pcg_node *n)
{
    pcg_node **nv;

    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 64;
        if (!(nv = realloc(v->v, v->cap * sizeof *nv)))
            return -1;
        v->v = nv;
    }
    v->v[v->n++] = n;
    return 0;
}

typedef struct tarjan {
    unsigned visit_num;
    node_vec scc_stack;
    visit_elem *vs;
    size_t nvs, cap;
} tarjan;

static int visit_one(tarjan *T, pcg_node *n)
{
    visit_elem *nv;

    n->visit = ++T->visit_num;
    if (vec_push(&T->scc_stack, n))
        return -1;
    if (T->nvs == T->cap) {
        T->cap = T->cap ? T->cap * 2 : 64;
        if (!(nv = realloc(T->vs, T->cap * sizeof *nv)))
            return -1;
        T->vs = nv;
    }
    T->vs[T->nvs++] = (visit_elem){n, 0, n->visit};
    return 0;
}

/* GetNextSCC: the next SCC into *scc (empty at the end) */
static int next_scc(tarjan *T, node_vec *scc)
{
    scc->n = 0;
    while (T->nvs) {
        visit_elem *top = &T->vs[T->nvs - 1];
        while (top->next < top->node->nedges) {
            pcg_node *c = top->node->edges[top->next++].dst;
            if (!c->visit) {
                if (visit_one(T, c))
                    return -1;
                top = &T->vs[T->nvs - 1];
                continue;
            }
            if (top->min > c->visit)
                top->min = c->visit;
        }
        pcg_node *vn = top->node;
        unsigned min = top->min;
        T->nvs--;
        if (T->nvs && T->vs[T->nvs - 1].min > min)
            T->vs[T->nvs - 1].min = min;
        if (min != vn->visit)
            continue;
        do {
            pcg_node *x = T->scc_stack.v[--T->scc_stack.n];
            if (vec_push(scc, x))
                return -1;
            x->visit = ~0U;
        } while (scc->v[scc->n - 1] != vn);
        return 0;
    }
    return 0;
}

/* ---- scc_member_iterator: maximum spanning tree, then Kahn's walk ------------------ */

static pcg_node *uf_find(pcg_node *n)
{
    if (n->group != n)
        n->group = uf_find(n->group);
    return n->group;
}

static bool uf_union(pcg_edge *e)
{
    pcg_node *a = uf_find(e->src), *b = uf_find(e->dst);

    if (a == b)
        return false;
    if (a->rank < b->rank) {
        a->group = b;
    } else {
        b->group = a;
        if (a->rank == b->rank)
            a->rank++;
    }
    return true;
}

typedef struct ranked_edge {    /* an SCC edge and its insertion rank */
    pcg_edge *e;
    size_t pos;
} ranked_edge;

/* std::multiset by weight descending: equal weights keep insertion order */
static int ranked_cmp(const void *x, const void *y)
{
    const ranked_edge *a = x, *b = y;

    if (a->e->weight != b->e->weight)
        return a->e->weight > b->e->weight ? -1 : 1;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}

/* The SCC's edges in SortedEdges order; *n set. NULL with *n = 0 if none
 * (or no memory: *oom). */
static ranked_edge *sorted_scc_edges(node_vec *scc, size_t *n, int *oom)
{
    ranked_edge *se = NULL, *ne;
    size_t cap = 0, i, j;

    *n = 0;
    for (i = 0; i < scc->n; i++)
        for (j = 0; j < scc->v[i]->nedges; j++) {
            pcg_edge *e = &scc->v[i]->edges[j];
            e->mst = false;
            if (!e->dst->in_scc)
                continue;
            if (*n == cap) {
                cap = cap ? cap * 2 : 16;
                if (!(ne = realloc(se, cap * sizeof *ne))) {
                    *oom = 1;
                    free(se);
                    *n = 0;
                    return NULL;
                }
                se = ne;
            }
            se[*n] = (ranked_edge){e, *n};
            (*n)++;
        }
    if (*n)
        qsort(se, *n, sizeof *se, ranked_cmp);
    return se;
}

/* Kruskal's maximum spanning forest, then Kahn's walk from its roots;
 * the SCC becomes the reverse of that walk. */
static int member_order(node_vec *scc)
{
    node_vec out = {0}, queue = {0};
    ranked_edge *se;
    size_t ns, i, j, head = 0;
    int rc = 0;

    for (i = 0; i < scc->n; i++) {
        pcg_node *n = scc->v[i];
        n->group = n;
        n->rank = 0;
        n->in_scc = true;
        n->queued = false;
        n->incoming = 0;
    }
    se = sorted_scc_edges(scc, &ns, &rc);
    for (i = 0; i < ns; i++)
        if (uf_union(se[i].e)) {
            se[i].e->mst = true;
            se[i].e->dst->incoming++;
        }
    for (i = 0; i < ns && rc == 0; i++) {
        pcg_node *src = se[i].e->src;
        if (!src->queued && src->incoming == 0) {
            src->queued = true;
            rc = vec_push(&queue, src);
        }
    }
    while (rc == 0 && head < queue.n) {
        pcg_node *n = queue.v[head++];
        rc = vec_push(&out, n);
        for (j = 0; j < n->nedges && rc == 0; j++) {
            pcg_edge *e = &n->edges[j];
            if (e->mst && --e->dst->incoming == 0)
                rc = vec_push(&queue, e->dst);
        }
    }
    for (i = 0; i < scc->n; i++)
        scc->v[i]->in_scc = false;
    if (rc == 0 && out.n == scc->n)
        for (i = 0; i < out.n; i++)
            scc->v[i] = out.v[out.n - 1 - i];
    free(out.v);
    free(queue.v);
    free(se);
    return rc;
}

typedef struct name_vec {
    const cs_name **v;
    size_t n, cap;
} name_vec;

static int name_push(name_vec *v, const cs_name *n)
{
    const cs_name **nv;

    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 64;
        if (!(nv = realloc(v->v, v->cap * sizeof *nv)))
            return -1;
        v->v = nv;
    }
    v->v[v->n++] = n;
    return 0;
}

/* buildTopDownOrder */
static int top_down_order(pre *P, name_vec *order)
{
    pcg g = {0};
    tarjan T = {0};
    node_vec scc = {0};
    size_t i;
    int rc = pcg_build(&g, P);

    if (rc == 0)
        rc = visit_one(&T, &g.root);
    while (rc == 0) {
        if ((rc = next_scc(&T, &scc)) || scc.n == 0)
            break;
        if (P->o->sort_scc_members && scc.n > 1)
            rc = member_order(&scc);
        for (i = 0; i < scc.n && rc == 0; i++)
            if (scc.v[i] != &g.root)
                rc = name_push(order, scc.v[i]->name);
    }
    /* names, reversed */
    for (i = 0; rc == 0 && i < order->n / 2; i++) {
        const cs_name *x = order->v[i];
        order->v[i] = order->v[order->n - 1 - i];
        order->v[order->n - 1 - i] = x;
    }
    free(scc.v);
    free(T.scc_stack.v);
    free(T.vs);
    pcg_free(&g);
    return rc;
}

/* ---- contexts of a function and their promotion (SampleContextTracker) ---------- */

static ctx_list *ctx_list_of(pre *P, const cs_name *name, bool create)
{
    ctx_list *l = name->pre_ctxs;

    if (l || !create)
        return l;
    if (!(l = calloc(1, sizeof *l)))
        return NULL;
    l->name = name;
    HASH_ADD_PTR(P->lists, name, l);
    scratch(name)->pre_ctxs = l;
    return l;
}

/* populateFuncToCtxtMap. Each profile's node is already the one it
 * is at (cs_prof_get's), and its RawContext state is not written
 * (nothing reads it): no profile is read here. */
static int populate_lists(pre *P)
{
    cs_node **q;
    cs_prof **nv;
    ctx_list *l;
    size_t n, i;

    if (!(q = cs_bfs(P->t, &n)))
        return -1;
    P->nodes = n;
    for (i = 0; i < n; i++) {
        q[i]->pre_owns = q[i]->prof != NULL;
        if (!q[i]->prof)
            continue;
        if (!(l = ctx_list_of(P, q[i]->func, true)))
            break;
        if (l->n == l->cap) {
            l->cap = l->cap ? l->cap * 2 : 4;
            if (!(nv = realloc(l->v, l->cap * sizeof *nv)))
                break;
            l->v = nv;
        }
        l->v[l->n++] = q[i]->prof;
    }
    free(q);
    return i == n ? 0 : -1;
}

/* populate_lists as a job: beside the call graph's making (which reads
 * neither the lists nor the nodes' pre_owns, nor the names' pre_ctxs) */
static void *populate_job(void *arg)
{
    pre *P = arg;

    P->lists_rc = populate_lists(P);
    return NULL;
}

static void free_lists(pre *P)
{
    ctx_list *l, *tmp;

    HASH_ITER(hh, P->lists, l, tmp) {
        HASH_DEL(P->lists, l);
        scratch(l->name)->pre_ctxs = NULL;
        free(l->v);
        free(l);
    }
}

/* n becomes its profile's node (getContextNodeForProfile); the node
 * that was loses it */
static void own_prof(cs_node *n)
{
    if (n->prof->node)
        n->prof->node->pre_owns = false;
    n->prof->node = n;
    n->pre_owns = true;
}

/* moveContextSamples' walk: new owner nodes (a moved subtree's own their
 * profiles already: those are not read) and no serial (a copy's nodes
 * have none). The SyntheticContext state it gives the profiles is not
 * written: nothing reads it. The parents are right already (cs_attach,
 * cs_node_copy). */
static void mark_moved(cs_node *n)
{
    uint32_t i;

    n->serial = 0;
    if (n->prof && !n->pre_owns)
        own_prof(n);
    for (i = 0; i < n->nkids; i++)
        mark_moved(n->kids[i].n);
}

/* moveContextSamples: a copy of the subtree goes under to_parent at loc;
 * the original stays where it is until its caller destroys it, and
 * profiles merged into it meanwhile still reach the copy (shared). */
static cs_node *move_copy(pre *P, cs_node *to_parent, lp_loc loc, cs_node *from)
{
    cs_node *c = cs_node_copy(P->t, from);

    if (!c) {
        P->oom = 1;
        return NULL;
    }
    c->func = from->func;
    if (cs_attach(to_parent, c, loc)) {
        cs_node_free(P->t, c);
        P->oom = 1;
        return NULL;
    }
    mark_moved(c);
    return c;
}

/* moveContextSamples to the root of a context with a caller: the copy
 * would replace the original at once (promote frees it right after), so
 * the subtree itself moves, its nodes as a copy's would be (~12% of the
 * pre-inliner's instructions were those copies and frees). */
static cs_node *move_to_root(pre *P, cs_node *from)
{
    cs_detach(from);
    if (cs_attach(&P->t->root, from, (lp_loc){0, 0})) {
        P->oom = 1;
        return NULL;
    }
    mark_moved(from);
    return from;
}

/* moveContextSamples' copy made by moving the subtree itself, when its
 * original would be freed unread: from is a child of a node being
 * merged (freed with the merged node's children once they are
 * promoted), and nothing promoted meanwhile reaches it (the source's
 * and the destination's subtrees are apart: see promote). */
static cs_node *move_under(pre *P, cs_node *to_parent, cs_node *from)
{
    cs_detach(from);
    if (cs_attach(to_parent, from, from->callsite)) {
        P->oom = 1;
        return NULL;
    }
    mark_moved(from);
    return from;
}

/* A promotion to the root's walk: its source, the base profile's node
 * it merges into, and whether the source is outside that node's
 * subtree (1, 0, or -1: not known yet). */
typedef struct walk {
    const cs_node *from, *to;
    int apart;
} walk;

/* The walk's source is not in its destination's subtree: found the
 * first time it is asked (the source's ancestors do not change during
 * the walk: only its descendants move). */
static bool walk_apart(walk *w)
{
    const cs_node *n;

    if (w->apart < 0) {
        for (n = w->from->parent; n && n != w->to; n = n->parent)
            ;
        w->apart = n == NULL;
    }
    return w->apart;
}

/* mergeContextNode. The source node keeps its profile pointer, as in
 * LLVM: merging into it later reaches that profile again. The profiles'
 * merge is queued (mergeq.c: read once drained); the destination's
 * SyntheticContext state, which nothing reads, is not written (its
 * profile stays out of this thread's cache). */
static void merge_nodes(pre *P, cs_node *from, cs_node *to)
{
    cs_prof *fp = from->prof, *tp = to->prof;

    if (fp && tp) {
        cs_mergeq_push(P->mq, tp, fp);
        fp->state |= CS_MERGED;
    } else if (fp) {
        to->prof = fp;
        own_prof(to);
    }
}

/* The walk over n's children is at child `at`: the next ones' nodes and
 * the one after's profile, which the walk reads first (merge_nodes),
 * prefetched. */
static void prefetch_next(const cs_node *n, uint32_t at)
{
    if (at + 2 < n->nkids)
        __builtin_prefetch(n->kids[at + 2].n);
    if (at + 1 < n->nkids)
        __builtin_prefetch(n->kids[at + 1].n->prof);
}

/* promoteMergeContextSamplesTree(FromNode, ToNodeParent), with LLVM's
 * value semantics: the source stays linked while its children are
 * promoted (a recursive context can be merged into its own ancestors),
 * its children are walked in key order including children inserted
 * meanwhile, moved subtrees are copies. llvm-profgen can loop forever
 * there; after a budget of steps, children inserted during a walk are no
 * longer visited. When the walk's source (w, made here for a promotion
 * to the root) is not in the destination's subtree, no promotion of this
 * walk reaches a source node: a child's subtree copied there is moved
 * instead (its original would be freed with the source's children,
 * never read again; ~5% of the pre-inliner's instructions on bench (c)
 * were those copies and frees). */
static cs_node *promote(pre *P, cs_node *from, cs_node *to_parent, walk *w)
{
    bool to_root = to_parent == &P->t->root, first = true;
    lp_loc loc = to_root ? (lp_loc){0, 0} : from->callsite;
    cs_node *from_parent = from->parent, *to, *c;
    uint64_t cur = 0, serial = P->serial;
    uint32_t at = 0;
    walk own;

    __builtin_prefetch(from->prof);     /* merge_nodes', after the search */
    __builtin_prefetch(from->kids);
    if (++P->steps > P->max_steps)
        P->bounded = true;
    if (P->o->fold_recursion && to_root)
        cs_detach(from); /* never merged into its own ancestors */
    if (!(to = cs_child(to_parent, loc, from->func))) {
        if (!(to = to_root && from_parent ? move_to_root(P, from)
                   : !to_root && walk_apart(w) ? move_under(P, to_parent, from)
                                       : move_copy(P, to_parent, loc, from)))
            return NULL;
        to->serial = ++P->serial;
        if (to == from)
            return to;  /* moved: no original left to free */
    } else {
        if (to_root) {
            own = (walk){from, to, -1};
            w = &own;
        }
        merge_nodes(P, from, to);
        while ((c = cs_kid_after(from, cur, first, &at))) {
            prefetch_next(from, at);
            first = false;
            cur = c->key;
            if (P->bounded && c->serial > serial)
                continue;
            promote(P, c, to, w);
        }
        cs_node_free_kids(P->t, from);
    }
    if (to_root && from_parent) {
        cs_detach(from);
        cs_node_free(P->t, from);
    }
    return to;
}

/* getBaseSamplesFor(Name, MergeContext = true) */
static cs_prof *base_samples(pre *P, const cs_name *name)
{
    cs_node *node = cs_child(&P->t->root, (lp_loc){0, 0}, name);
    ctx_list *l = ctx_list_of(P, name, false);
    size_t i;

    for (i = 0; l && i < l->n; i++) {
        cs_prof *p = l->v[i];
        if ((p->state & (CS_INLINED | CS_MERGED)) || !p->node || p->node == node)
            continue;
        node = promote(P, p->node, &P->t->root, NULL);
    }
    return node ? node->prof : NULL;
}

/* ---- inline candidates: std::priority_queue<..., ProfiledCandidateComparer> ---- */

typedef struct cand {
    cs_prof *prof;
    uint64_t count, size, guid;
} cand;

typedef struct cand_heap {
    cand *v;
    size_t n, cap;
} cand_heap;

/* ProfiledCandidateComparer: true if a has lower priority than b */
static bool cand_less(const cand *a, const cand *b)
{
    if ((a->size == 0 || b->size == 0) && a->size != b->size)
        return b->size == 0;
    if (a->count != b->count)
        return a->count < b->count;
    if (a->size != b->size)
        return a->size > b->size;
    return a->guid < b->guid;
}

/* libstdc++ __push_heap */
static void sift_up(cand *v, size_t hole, size_t top, cand val)
{
    size_t parent = (hole - 1) / 2;

    while (hole > top && cand_less(&v[parent], &val)) {
        v[hole] = v[parent];
        hole = parent;
        parent = (hole - 1) / 2;
    }
    v[hole] = val;
}

static int heap_push(cand_heap *h, cand c)
{
    cand *nv;

    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 16;
        if (!(nv = realloc(h->v, h->cap * sizeof *nv)))
            return -1;
        h->v = nv;
    }
    h->v[h->n++] = c;
    sift_up(h->v, h->n - 1, 0, c);
    return 0;
}

/* libstdc++ pop_heap (__adjust_heap) then pop_back */
static cand heap_pop(cand_heap *h)
{
    cand top = h->v[0], val = h->v[h->n - 1];
    size_t len = h->n - 1, hole = 0, child = 0;

    h->v[h->n - 1] = top;
    while (len > 0 && child < (len - 1) / 2) {
        child = 2 * (child + 1);
        if (cand_less(&h->v[child], &h->v[child - 1]))
            child--;
        h->v[hole] = h->v[child];
        hole = child;
    }
    if (len > 0 && (len & 1) == 0 && child == (len - 2) / 2) {
        child = 2 * (child + 1);
        h->v[hole] = h->v[child - 1];
        hole = child - 1;
    }
    if (len > 0)
        sift_up(h->v, hole, 0, val);
    h->n--;
    return top;
}

static uint64_t func_size(pre *P, const cs_node *n)
{
    if (P->o->use_context_cost)
        return cs_size_for(P->sizes, n);
    return lp_fs_nr_body(&n->prof->fs);
}

/* getInlineCandidates */
static int candidates(pre *P, cand_heap *h, cs_prof *caller)
{
    cs_node *cn = caller->node, *c;
    uint64_t entry, site;
    uint32_t i;

    for (i = 0; i < cn->nkids; i++) {
        c = cn->kids[i].n;
        if (!c->prof)
            continue;
        entry = lp_fs_head_estimate(&c->prof->fs, 1);
        site = lp_fs_target_count(&caller->fs, c->callsite, c->prof->fs.name);
        if (heap_push(h, (cand){c->prof, site > entry ? site : entry,
                                func_size(P, c), c->func->md5}))
            return -1;
    }
    return 0;
}

/* double -> unsigned int as x86-64 code does it (cvttsd2si, low half) */
static uint32_t to_unsigned(double d)
{
    if (!(d > -9223372036854775808.0 && d < 9223372036854775808.0))
        return 0;
    return (uint32_t)(uint64_t)(int64_t)d;
}

/* shouldInline (v19: the hot threshold gets +1 and the size must be
 * below it, so a zero-size cold candidate is not inlined) */
static bool should_inline(pre *P, const cand *c)
{
    const lp_cs_opts *o = P->o;
    bool was = c->prof->fs.attrs & CS_WAS_INLINED;
    uint32_t thr = (uint32_t)o->cold_inline_threshold;
    double lower, hot;

    if (o->replay_preinline)
        return was;
    if (c->count > P->cold) {
        lower = (double)P->cold;
        hot = ((double)c->count - lower) / ((double)P->norm_upper - lower);
        if (hot > 1.0)
            hot = 1.0;
        thr = to_unsigned((double)o->hot_inline_threshold * hot * 100 +
                          o->cold_inline_threshold + 1);
        if (was)
            thr *= (uint32_t)o->preinl_multiplier;
    }
    return c->size < thr;
}

/* processFunction */
static int process_function(pre *P, const cs_name *name)
{
    cs_prof *fs = base_samples(P, name);
    cand_heap h = {0};
    uint32_t size, final, limit;
    int rc = 0;

    if (!fs)
        return P->oom ? -1 : 0;
    if (cs_mergeq_drain(P->mq))
        return -1;
    size = (uint32_t)func_size(P, fs->node);
    final = size;
    limit = size * (uint32_t)P->o->inline_growth_limit;
    if (limit > (uint32_t)P->o->inline_limit_max)
        limit = (uint32_t)P->o->inline_limit_max;
    if (limit < (uint32_t)P->o->inline_limit_min)
        limit = (uint32_t)P->o->inline_limit_min;
    rc = candidates(P, &h, fs);
    while (rc == 0 && h.n && final < limit) {
        cand c = heap_pop(&h);
        if (!should_inline(P, &c))
            continue;
        c.prof->state |= CS_INLINED;
        c.prof->fs.attrs |= CS_SHOULD_INLINE;
        final += (uint32_t)c.size;
        rc = candidates(P, &h, c.prof);
    }
    free(h.v);
    return rc || P->oom ? -1 : 0;
}

/* Not inlined, not top-level: merged into its base (or dropped). */
static int drop_outlined(cs_trie *t)
{
    cs_node **q;
    size_t n, i;

    if (!(q = cs_bfs(t, &n)))
        return -1;
    for (i = 0; i < n; i++) {
        cs_prof *p = q[i]->prof;
        if (p && q[i]->parent != &t->root && q[i] != &t->root &&
            !(p->state & CS_INLINED)) {
            p->node = NULL;
            q[i]->prof = NULL;
        }
    }
    free(q);
    return 0;
}

int cs_preinline(cs_trie *t, const cs_sizes_req *sizes, cs_summary_job *sj,
                 const lp_cs_opts *o, lp_error *err)
{
    pre P = {t, NULL, o, 0, 0, sj, false, err, 0, NULL, NULL, 0, 0, 0, false, 0, 0};
    name_vec order = {0};
    lp_job lists;
    size_t i;
    int rc;

    if (!(P.mq = cs_mergeq_new(lp_cpus() >= 2)))
        return cs_oom(err);
    lp_job_start(&lists, populate_job, &P);
    rc = top_down_order(&P, &order);
    lp_job_wait(&lists);
    if (P.lists_rc)
        rc = -1;
    P.max_steps = 1000000 + 100 * (uint64_t)P.nodes;
    if (rc == 0 && sizes->funcs &&
        !(P.sizes = cs_sizes_get(sizes->own, sizes->bins, sizes->funcs, o, err))) {
        rc = -1;
        P.no_summary = true;    /* err is set */
    }
    for (i = 0; i < order.n && rc == 0; i++)
        rc = process_function(&P, order.v[i]);
    if (cs_mergeq_free(P.mq) && rc == 0)
        rc = -1;
    if (rc == 0)
        rc = drop_outlined(t);
    free(order.v);
    free_lists(&P);
    return rc ? P.no_summary ? -1 : cs_oom(err) : 0;
}
