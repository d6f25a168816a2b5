/*
 * csgen.c - llvm-profgen 19's CSProfileGenerator::generateLineNumBasedProfile:
 * per context, body samples from that context's own disjoint ranges (zero
 * pieces skipped; the leaf location of each instruction keeps the maximum
 * of count x duplication factor; the total grows by the count per
 * instruction), call targets at the branch source's leaf location and head
 * samples on the callee's child node (base profiles for the empty
 * context), then inferred call sites for profiles without head samples
 * (post-order), the call-site fix-up and --update-total-samples, on two
 * threads by subtrees of the trie when there are many contexts; the trie
 * is written out as a flat CS profile. Also the lp_cs_* entry points that
 * chain generation and post-processing. Owns no I/O.
 */
#include <stdlib.h>
#include <string.h>

#include "context/cs_internal.h"
#include "util/cpus.h"
#include "util/grow.h"
#include "util/heaphome.h"
#include "util/zalloc.h"

void lp_cs_opts_default(lp_cs_opts *o)
{
    memset(o, 0, sizeof *o);
    o->merge_cold_context = -1;
    o->max_cold_context_depth = 1;
    o->gen_nested = true;
    o->preinliner = true;
    o->use_context_cost = true;
    o->preinl_multiplier = 100;
    o->hot_inline_threshold = 1500;
    o->cold_inline_threshold = 0;
    o->inline_limit_max = 50000;
    o->inline_limit_min = 100;
    o->inline_growth_limit = 12;
    o->sort_scc_members = true;
    o->edge_weight_sum = true;
    o->hot_count = o->cold_count = -1;
    o->cutoff_hot = 990000;
    o->cutoff_cold = 999999;
    o->density_threshold = 50;
    o->density_cutoff_hot = 990000;
    o->compress_recursion = o->max_context_depth = -1;
}

/* A context's body updates (location, count x duplication factor), kept
 * until its pieces are walked and then applied to the profile at once,
 * sorted: one merge instead of a binary search and an insertion per
 * run (~12 runs a context). */
typedef struct cs_bacc {
    lp_loc_count *v;
    size_t n, cap;
} cs_bacc;

typedef struct gen {
    cs_trie *t;
    lp_binary *bin;
    lp_binary *const *bins;     /* all of them (branch targets in others) */
    size_t nbins;
    cs_insts *it;               /* the binary's instruction tables */
    cs_icache *ic;              /* ... this thread's recent ones */
    bool fs;                    /* flow-sensitive discriminators */
    lp_error *err;
    const lp_func_range *last;  /* the last function range found */
    cs_pmemo *memo;             /* interned names by address (binaries') */
    pthread_mutex_t *lock;      /* the binaries' lazy caches, while two
                                   threads generate; or NULL */
    bool disc_set;              /* the last raw discriminator decoded */
    uint32_t disc, disc_base;   /* (a context's runs mostly repeat one) */
    uint64_t disc_dup;
    cs_bacc *acc;               /* the context's body updates */
    struct cs_cmemo *callees;   /* callee names by branch target */
    lp_dj_scratch *dj;          /* the context's disjoint ranges */
} gen;

static void bin_lock(gen *g)
{
    if (g->lock)
        pthread_mutex_lock(g->lock);
}

static void bin_unlock(gen *g)
{
    if (g->lock)
        pthread_mutex_unlock(g->lock);
}

/* findFuncRange, remembering the last range (pieces and branches of one
 * context mostly stay in one function) */
static const lp_func_range *func_range(gen *g, uint64_t addr)
{
    if (g->last && addr >= g->last->start && addr < g->last->end)
        return g->last;
    return g->last = lp_binary_func_range(g->bin, addr);
}

/* getInlineLeafFrameLoc: the leaf location of addr; *has = 0 without
 * debug info. From the range tables when addr is an instruction start of
 * a function range, else symbolized directly (as llvm-profgen does for
 * any address). */
static int leaf_loc(gen *g, uint64_t addr, lp_loc *loc, bool *has)
{
    const lp_func_range *fr = func_range(g, addr);
    const cs_irun *run;
    const lp_frame *f;
    cs_itab *x;
    size_t n = 0;

    if (fr) {
        if (!(x = cs_insts_table(g->it, g->ic, fr, g->err)))
            return -1;
        if ((run = cs_itab_leaf(x, addr))) {
            *loc = run->loc;
            *has = run->has;
            return 0;
        }
    }
    bin_lock(g);
    if (addr != LP_EXTERNAL_ADDR && lp_binary_symbolize(g->bin, addr, &f, &n, g->err)) {
        bin_unlock(g);
        return -1;
    }
    *has = n > 0;
    if (n)
        *loc = (lp_loc){f[n - 1].line_offset, f[n - 1].discriminator};
    bin_unlock(g);
    return 0;
}

/* a * b + c, saturating (no division: ~10^6 calls on a large profile) */
static inline uint64_t sat_mul_add(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t m, r;

    if (__builtin_mul_overflow(a, b, &m) || __builtin_add_overflow(m, c, &r))
        return UINT64_MAX;
    return r;
}

/* updateBodySamplesforFunctionProfile + addTotalSamples for `ninst`
 * instructions at one leaf location (raw discriminator in loc); inlined
 * into the walk of a piece's runs (~10^6 calls on a large profile, much
 * of their cost was the call itself) */
static inline __attribute__((always_inline)) int
body_run(gen *g, lp_fsamples *fs, lp_loc loc, uint64_t count, uint64_t ninst)
{
    cs_bacc *a = g->acc;

    if (!g->disc_set || g->disc != loc.disc) {
        g->disc_set = true;
        g->disc = loc.disc;
        g->disc_base = lp_disc_base(loc.disc, g->fs);
        g->disc_dup = lp_disc_dup_factor(loc.disc, g->fs);
    }
    if (a->n == a->cap && lp_grow_array(&a->v, &a->cap, a->n + 1, sizeof *a->v, 64))
        return cs_oom(g->err);
    a->v[a->n++] = (lp_loc_count){{loc.line, g->disc_base}, count * g->disc_dup};
    fs->total = sat_mul_add(count, ninst, fs->total);
    return 0;
}

/* The instructions of [*addr, end] inside function range fr, by runs;
 * *addr moves past the range. Returns 1 when the piece is done. */
static int piece_in_range(gen *g, lp_fsamples *fs, const lp_func_range *fr,
                          uint64_t *addr, uint64_t end, uint64_t count)
{
    cs_itab *x = cs_insts_table(g->it, g->ic, fr, g->err);
    size_t r, a, b;

    if (!x)
        return -1;
    /* the instructions at or after *addr and at or before end (every
     * instruction of fr is before its end), run by run: searched only
     * inside the first and the last run */
    for (r = cs_itab_run_at(x, *addr); r < x->nruns; r++) {
        const cs_irun *run = &x->runs[r];
        a = x->addr[run->lo] >= *addr ? run->lo
                                      : cs_itab_lower_in(x, run->lo, run->hi, *addr);
        if (x->addr[a] > end)
            break;
        b = x->addr[run->hi - 1] <= end ? run->hi
                                        : cs_itab_lower_in(x, a, run->hi, end + 1);
        if (run->has && body_run(g, fs, run->loc, count, b - a))
            return -1;
        if (b < run->hi)
            break;
    }
    if (end < fr->end)
        return 1;
    *addr = fr->end;
    return 0;
}

/* One instruction outside every function range; *addr moves to the next
 * one. Returns 1 when the piece is done. */
static int piece_outside(gen *g, lp_fsamples *fs, uint64_t *addr, uint64_t end,
                         uint64_t count)
{
    uint64_t ip;
    lp_loc loc;
    bool has;
    int k;

    bin_lock(g);
    k = lp_binary_inst_at_or_after(g->bin, *addr, &ip, g->err);
    bin_unlock(g);
    if (k <= 0 || ip > end)
        return k < 0 ? -1 : 1;
    if (func_range(g, ip)) {
        *addr = ip;
        return 0;
    }
    if (leaf_loc(g, ip, &loc, &has) || (has && body_run(g, fs, loc, count, 1)))
        return -1;
    bin_lock(g);
    k = lp_binary_next_inst(g->bin, ip, addr, g->err);
    bin_unlock(g);
    return k < 0 ? -1 : k == 0;
}

/* every instruction of [r->a, r->b], as llvm-profgen walks them */
static int body_piece(gen *g, lp_fsamples *fs, const lp_addr_pair_count *r)
{
    uint64_t addr = r->a;
    const lp_func_range *fr;
    int k;

    do {
        fr = func_range(g, addr);
        k = fr ? piece_in_range(g, fs, fr, &addr, r->b, r->count)
               : piece_outside(g, fs, &addr, r->b, r->count);
    } while (k == 0 && addr <= r->b);
    return k < 0 ? -1 : 0;
}

/* a location as one number in location order (line, then discriminator) */
static inline uint64_t loc_key(lp_loc l)
{
    return (uint64_t)l.line << 32 | l.disc;
}

static int loc_count_cmp(const void *x, const void *y)
{
    uint64_t a = loc_key(((const lp_loc_count *)x)->loc),
             b = loc_key(((const lp_loc_count *)y)->loc);

    return a < b ? -1 : a > b;
}

/* v[0..n) by location: an insertion sort (a context's runs mostly come in
 * line order), qsort once one has moved too far */
static void loc_count_sort(lp_loc_count *v, size_t n)
{
    size_t i, j, moved = 0;
    lp_loc_count x;

    for (i = 1; i < n; i++) {
        if (loc_key(v[i - 1].loc) <= loc_key(v[i].loc))
            continue;
        x = v[i];
        for (j = i; j > 0 && loc_key(v[j - 1].loc) > loc_key(x.loc); j--)
            v[j] = v[j - 1];
        v[j] = x;
        if ((moved += i - j) > 4 * n) {
            qsort(v, n, sizeof *v, loc_count_cmp);
            return;
        }
    }
}

/* The context's body updates into fs: each location's maximum (what a
 * record updated run by run keeps), in location order. */
static int body_apply(gen *g, lp_fsamples *fs)
{
    cs_bacc *a = g->acc;
    size_t i, k = 0;

    loc_count_sort(a->v, a->n);
    for (i = 0; i < a->n; i++) {
        if (k && loc_key(a->v[k - 1].loc) == loc_key(a->v[i].loc)) {
            if (a->v[k - 1].count < a->v[i].count)
                a->v[k - 1].count = a->v[i].count;
        } else
            a->v[k++] = a->v[i];
    }
    a->n = 0;
    return lp_fs_body_max(fs, a->v, k) ? cs_oom(g->err) : 0;
}

/* populateBodySamplesForFunction */
static int body(gen *g, lp_fsamples *fs, const lp_counters *c)
{
    const lp_addr_pair_count *r = NULL, *d;
    long nr = lp_counters_ranges_any(c, &r), nd, i;    /* cut in order */
    int rc = 0;

    if ((nd = lp_flat_disjoint_ranges_in(r, (size_t)nr, g->dj, &d)) < 0)
        return cs_oom(g->err);
    g->acc->n = 0;
    for (i = 0; i < nd && rc == 0; i++)
        if (d[i].count)
            rc = body_piece(g, fs, &d[i]);
    return rc ? rc : body_apply(g, fs);
}

/* getCalleeNameForAddress of branch targets, direct-mapped by address
 * (a large profile looks up ~300k targets, most of them many times;
 * each lookup is a binary search of the function ranges) */
#define CMEMO_SLOTS 4096
typedef struct cs_cmemo {
    uint64_t addr;              /* + 1: 0 is an empty slot */
    const lp_binary *bin;
    const char *name;
} cs_cmemo;

static const char *callee_name(gen *g, const lp_binary *bin, uint64_t addr)
{
    cs_cmemo *m = &g->callees[(addr ^ addr >> 12) % CMEMO_SLOTS];

    if (m->addr != addr + 1 || m->bin != bin)
        *m = (cs_cmemo){addr + 1, bin, lp_binary_callee_name(bin, addr)};
    return m->name;
}

/* populateBoundarySamplesForFunction for one branch */
static int boundary_one(gen *g, cs_node *node, const lp_addr_pair_count *br)
{
    const char *callee =
        !LP_CTX_IS_XBIN(br->b) ? callee_name(g, g->bin, br->b)
        : LP_CTX_XBIN_BIN(br->b) < g->nbins && g->bins[LP_CTX_XBIN_BIN(br->b)]
            ? callee_name(g, g->bins[LP_CTX_XBIN_BIN(br->b)], LP_CTX_XBIN_VADDR(br->b))
            : NULL;
    const cs_name *cn;
    lp_loc site = {0, 0}, leaf;
    lp_body_rec *b;
    cs_node *child;
    cs_prof *p;
    bool has;

    if (!callee)
        return 0;
    if (node != cs_root(g->t)) {
        if (leaf_loc(g, br->a, &leaf, &has))
            return -1;
        if (has) {
            lp_loc loc = {leaf.line, lp_disc_base(leaf.disc, g->fs)};
            if (!(b = lp_fs_body(&node->prof->fs, loc)) ||
                lp_body_add_target(b, callee, br->count))
                return cs_oom(g->err);
            /* the child is keyed by the raw discriminator */
            site = leaf;
        }
    }
    if (!(cn = cs_intern_at(g->t, g->memo, callee)) ||
        !(child = cs_child_get(g->t, node, site, cn)) || !(p = cs_prof_get(g->t, child)))
        return cs_oom(g->err);
    p->fs.head = lp_sat_add(p->fs.head, br->count);
    return 0;
}

static int boundary(gen *g, cs_node *node, const lp_counters *c)
{
    const lp_addr_pair_count *br = NULL;
    long n = lp_counters_branches_any(c, &br), i;  /* sums: any order */
    int rc = 0;

    for (i = 0; i < n && rc == 0; i++)
        rc = boundary_one(g, node, &br[i]);
    return rc;
}

/* ---- one entry -------------------------------------------------------------- */

/* An entry naming no binary of the run (its key printed now: generation
 * lists the entries without their keys). */
static int bad_binary(const lp_ctx_entry *e, size_t nbins, lp_error *err)
{
    char *k = e->key ? NULL : lp_ctx_key(e->frames, e->nframes);
    int rc = lp_error_set(err, LP_EUSAGE, "CS profile generation: context "
                          "\"%s\" names binary %d of %zu",
                          e->key ? e->key : k ? k : "?", e->bin, nbins);

    free(k);
    return rc;
}

static bool bin_ok(const lp_ctx_entry *e, lp_binary *const *bins, size_t nbins)
{
    return e->bin >= 0 && (size_t)e->bin < nbins && bins[e->bin];
}

/* One thread's generation: where its nodes and profiles are made (the
 * trie, or a worker's trie that grows it: cs_trie.of), its instruction
 * tables, memos and profiled functions. */
typedef struct genth {
    cs_trie *t;
    lp_binary *const *bins;
    size_t nbins;
    cs_insts **its;             /* per binary, made on first use (or
                                   before two threads share them) */
    bool its_own;               /* its is this thread's (else shared) */
    cs_icache *ic;              /* this thread's recent tables */
    cs_pmemo *memo;             /* interned names by address */
    cs_pathmemo pm;             /* the last context's path */
    cs_funcs *funcs;            /* the profiled functions, or NULL */
    pthread_mutex_t *lock;      /* the binaries' lazy caches while two
                                   threads generate, or NULL */
    lp_error *err;
    cs_bacc acc;                /* a context's body updates */
    lp_dj_scratch dj;           /* a context's disjoint ranges */
    cs_cmemo *callees;          /* callee names by branch target */
    lp_sumacc *sum;             /* the summary of the final profiles
                                   (t->want_summary), or NULL */
    const lp_func_range *last;  /* the last function range found, in */
    int last_bin;               /* binary last_bin (contexts come sorted:
                                   the next one mostly starts there) */
    struct cs_frees *frees;     /* consumed entries' blocks, by the thread
                                   that frees them; or NULL: freed here */
    int who;                    /* this thread in frees: 0 main, 1 worker */
} genth;

/* its: the instruction tables shared with another thread, or NULL */
static int genth_init(genth *th, cs_trie *t, lp_binary *const *bins,
                      size_t nbins, cs_insts **its, cs_funcs *funcs,
                      pthread_mutex_t *lock, lp_error *err)
{
    *th = (genth){.t = t, .bins = bins, .nbins = nbins,
                  .its = its ? its : calloc(nbins ? nbins : 1, sizeof *th->its),
                  .its_own = !its,
                  /* the memos are probed first: zeroed by writing */
                  .ic = lp_zalloc_written(sizeof *th->ic),
                  .memo = lp_zalloc_written(((size_t)1 << CS_PMEMO_BITS) *
                                            sizeof *th->memo),
                  .funcs = funcs, .lock = lock, .err = err,
                  .callees = lp_zalloc_written(CMEMO_SLOTS * sizeof *th->callees),
                  .sum = (t->of ? t->of : t)->want_summary ? lp_sumacc_new() : NULL,
                  .last_bin = -1};
    /* no accumulator (no memory): the summary is computed later */
    return th->its && th->ic && th->memo && th->callees ? 0 : cs_oom(err);
}

static void genth_free(genth *th)
{
    size_t k;

    for (k = 0; th->its_own && th->its && k < th->nbins; k++)
        cs_insts_free(th->its[k]);
    if (th->its_own)
        free(th->its);
    free(th->ic);
    free(th->memo);
    free(th->acc.v);
    lp_dj_scratch_free(&th->dj);
    free(th->callees);
    cs_pathmemo_free(&th->pm);
    lp_sumacc_free(th->sum);
}

/* An entry's body and boundary samples (its binary checked); its
 * profiled functions too unless `funcs_done` */
static int add_entry(genth *th, const lp_ctx_entry *e, bool funcs_done)
{
    gen g = {th->t, th->bins[e->bin], th->bins, th->nbins, NULL, NULL, false,
             th->err, th->last_bin == e->bin ? th->last : NULL, th->memo,
             th->lock, false, 0, 0, 0, &th->acc, th->callees, &th->dj};
    cs_node *node = cs_root(th->t);
    cs_prof *p;
    int rc;

    if (th->funcs && !funcs_done)
        cs_funcs_add_entry(th->funcs, th->bins, th->nbins, e);
    g.fs = lp_binary_fs_discriminator(g.bin);
    if (!th->its[e->bin] && !(th->its[e->bin] = cs_insts_new(g.bin, th->lock)))
        return cs_oom(th->err);
    g.it = th->its[e->bin];
    g.ic = th->ic;
    if (e->nframes) {
        if (!(node = cs_path(th->t, e->frames, e->nframes, th->memo, &th->pm)) ||
            !(p = cs_prof_get(th->t, node)))
            return cs_oom(th->err);
        if (e->was_leaf_inlined)
            p->fs.attrs |= CS_WAS_INLINED;
        if (body(&g, &p->fs, e->counters))
            return -1;
    }
    rc = boundary(&g, node, e->counters);
    th->last = g.last;
    th->last_bin = e->bin;
    return rc;
}

/* Entry i of cc generated: freed now, counters, frames and all, when
 * generation consumes the table (cc; NULL: it is kept). Safe for the
 * name and path memos: no entry is made meanwhile, so no live entry's
 * name can come to the address of a freed one. */
static void entry_done(lp_ctxcount *cc, size_t i)
{
    if (cc)
        lp_ctxcount_release(cc, i);
}

/* populateInferredFunctionSamples for n alone (its children done) */
static int infer_one(genth *th, cs_node *n)
{
    cs_prof *caller;
    lp_fsamples *fs;
    lp_body_rec *b;
    uint64_t est;

    if (!n->prof || n->prof->fs.head || !n->parent || n->parent == cs_root(th->t))
        return 0;
    fs = &n->prof->fs;
    if (!(caller = cs_prof_get(th->t, n->parent)))
        return cs_oom(th->err);
    est = lp_fs_head_estimate(fs, 1);
    if (!est && !lp_fs_nr_body(fs))
        est = 1;
    if (!(b = lp_fs_body(&caller->fs, n->callsite)) ||
        lp_body_add_target(b, n->func->s, est))
        return cs_oom(th->err);
    lp_body_add(b, est);
    caller->fs.total = lp_sat_add(caller->fs.total, est);
    return 0;
}

/* populateInferredFunctionSamples, post-order, on n's subtree; `top`:
 * generation's split is done, the groups' subtrees below their nodes
 * too (the nodes' serial marks them) */
static int infer(genth *th, cs_node *n, bool top)
{
    cs_node *c;
    uint32_t i;

    for (i = 0; i < n->nkids; i++) {
        c = n->kids[i].n;
        if (top && c->serial ? infer_one(th, c) : infer(th, c, top))
            return -1;
    }
    return infer_one(th, n);
}

/* updateFunctionSamples of one node; the profile is final then: into
 * the summary (sum, or NULL), while in cache */
static void update_one(cs_node *n, bool update_total, lp_sumacc *sum)
{
    if (!n->prof)
        return;
    if (update_total)
        lp_fs_update_total_samples(&n->prof->fs);
    lp_fs_update_callsite_samples(&n->prof->fs);
    lp_fs_shrink(&n->prof->fs);
    if (sum)
        lp_sumacc_add(sum, n->func, &n->prof->fs);  /* fails: spoiled */
}

/* ... on the nodes below n (`top` as for infer), each with the call
 * graph's weight of the edge from its parent (its parent's call targets
 * and its own profile are final then, and in cache) */
static void update_kids(cs_node *n, bool top, bool update_total,
                        lp_sumacc *sum)
{
    cs_node *c;
    uint32_t i;

    for (i = 0; i < n->nkids; i++) {
        c = n->kids[i].n;
        update_one(c, update_total, sum);
        c->weight = cs_edge_weight(n, c);
        if (!(top && c->serial))
            update_kids(c, top, update_total, sum);
    }
}

/* ---- generation on two threads, by subtrees ---------------------------------- */

/* The entries with at least D frames are grouped by their node at depth
 * D (root = 0): the entries of a group make and change only that node's
 * subtree, and only the inferred call site of the group node itself
 * reaches above it (its parent's profile). The entries with fewer frames
 * come first, on one thread, with the groups' nodes (their boundary
 * heads may reach them). Then both threads take groups, the largest
 * first, each making nodes and profiles in a trie of its own (the
 * worker's trie grows the trie's nodes and interns names in its table,
 * under a lock), and infer and update each group's profiles below its
 * node; at the end the worker's trie is adopted and the levels down to
 * D are inferred and updated. Nothing depends on who took which group:
 * nodes are kept in key order, and every profile's values are sums,
 * maxima and sorted insertions, which any order of the entries gives
 * the same. The worker starts before the groups are planned (a walk of
 * every entry's first frames, ~10 ms on one thread for 84k contexts)
 * and meanwhile collects the profiled functions of the entries from
 * the first on (a set: any thread, any order), which the groups then
 * skip for those. */
#define SPLIT_MAX_EXPAND 256     /* groups split at most */

enum {
    STAGE_PLAN,                 /* the worker collects functions */
    STAGE_STOP,                 /* ... asked to stop */
    STAGE_STOPPED,              /* ... stopped (funcs_upto set) */
    STAGE_GO,                   /* the groups are ready: take them */
    STAGE_END                   /* no groups for the worker: return */
};

/* The consumed entries were made by the unwinding threads, so under
 * glibc they live in two arenas: the main one and the unwinding
 * worker's, which the generation worker gets again (glibc hands a new
 * thread the arena of a finished one). A thread that frees a block of
 * the other's arena locks it while the other mallocs there (profiles,
 * bodies, nodes): both wait on futexes. So each block is freed by the
 * thread whose arena holds it (util/heaphome.h): at once when it is the
 * releasing thread, else put in that thread's box, which it drains
 * before each entry (memory comes back about as soon as before: the
 * peak does not move; a full box is not waited for). Whenever a home
 * is unknown (another allocator, arenas shared) the block is freed at
 * once, as before; a wrong guess only costs a lock. */
typedef struct cs_frees {
    lp_heapinfo heap;
    int home[2];                /* main's and the worker's heap home
                                   (atomic: the worker's is set by the
                                   worker; LP_HOME_ANY until known) */
    lp_freebox box[2];          /* by home: blocks for its thread */
} cs_frees;

static void frees_init(cs_frees *f)
{
    lp_heapinfo_get(&f->heap);
    f->home[0] = lp_heap_home_self(&f->heap);
    f->home[1] = LP_HOME_ANY;
    f->box[0] = f->box[1] = (lp_freebox){0};
}

/* drop callback of lp_ctxcount_release_with: arg the releasing genth */
static void frees_drop(void *p, void *arg)
{
    const genth *th = arg;
    cs_frees *f = th->frees;
    int h = lp_heap_home(&f->heap, p),
        other = __atomic_load_n(&f->home[!th->who], __ATOMIC_RELAXED);

    if (h == LP_HOME_ANY || h == f->home[th->who] || h != other ||
        !lp_freebox_put(&f->box[h], p))
        free(p);
}

/* The blocks handed to this thread so far, freed. */
static void frees_take(genth *th)
{
    int h = th->frees ? th->frees->home[th->who] : LP_HOME_ANY;

    if (h != LP_HOME_ANY)
        lp_freebox_drain(&th->frees->box[h]);
}

/* Entry i generated by th (see entry_done). */
static void group_entry_done(genth *th, lp_ctxcount *cc, size_t i)
{
    if (cc && th->frees)
        lp_ctxcount_release_with(cc, i, frees_drop, th);
    else
        entry_done(cc, i);
}

typedef struct split {
    lp_ctx_entry *const *v;
    size_t n;
    lp_ctxcount *consume;       /* entries freed as generated, or NULL */
    bool update_total;
    cs_node **gnode;            /* per entry: its group's node (NULL:
                                   shallow) */
    unsigned *gdepth;           /* ... and that node's depth */
    const lp_ctx_frame **fr;    /* per entry: its frames and their */
    unsigned *nfr;              /* number, copied out of the entries
                                   (scattered over the heap: every
                                   expansion read them, each a cache
                                   miss) */
    cs_node **group;            /* per group: its node */
    size_t *order;              /* the deep entries, grouped */
    size_t *start;              /* group g: order[start[g] .. start[g + 1]) */
    size_t *by_size;            /* the groups, largest first */
    size_t ngroups;
    size_t next;                /* by_size's next group to take (atomic) */
    int failed;                 /* a thread failed: stop (atomic) */
    /* The worker starts while this thread plans the groups and collects
     * the profiled functions of the entries from the first on, until
     * asked to stop (before any entry is freed): then the functions of
     * entries [0, funcs_upto) are in its set, and the groups' entries
     * skip that step. Then it waits for the groups (or for the end). */
    int stage;                  /* under stage_lock: a STAGE_ */
    size_t funcs_upto;          /* set by the worker when it stops */
    pthread_mutex_t stage_lock;
    pthread_cond_t stage_cond;
    pthread_mutex_t bins_lock, names_lock;
    cs_frees frees;
} split;

/* Count the entries of each group node in its serial (zeroed first);
 * the largest group's node and size in *big, *nbig. */
static void group_sizes(split *s, cs_node **big, size_t *nbig)
{
    size_t i;
    cs_node *nd;

    for (i = 0; i < s->n; i++)
        if (s->gnode[i])
            s->gnode[i]->serial = 0;
    *big = NULL;
    *nbig = 0;
    for (i = 0; i < s->n; i++)
        if ((nd = s->gnode[i]) && ++nd->serial > *nbig) {
            *nbig = nd->serial;
            *big = nd;
        }
}

/* Entries ahead whose frames an expansion asks the memory for */
#define EXPAND_AHEAD 8

/* Split group x into its children's groups: its entries one frame
 * deeper, those that end at x shallow. -1: no memory. */
static int expand(split *s, genth *th, cs_node *x, size_t *shallow)
{
    size_t i, j;
    unsigned d;

    if (x)
        x->serial = 0;  /* not a group's any more */
    for (i = 0; i < s->n; i++) {
        j = i + EXPAND_AHEAD;
        if (j < s->n && s->gnode[j] == x && s->gdepth[j] < s->nfr[j]) {
            __builtin_prefetch(s->fr[j]);
            __builtin_prefetch(s->fr[j] + s->gdepth[j]);
        }
        if (s->gnode[i] != x)
            continue;
        d = ++s->gdepth[i];
        if (s->nfr[i] < d) {
            s->gnode[i] = NULL;
            ++*shallow;
        } else if (!(s->gnode[i] = cs_path(th->t, s->fr[i], d, th->memo, &th->pm)))
            return -1;
    }
    return 0;
}

static int by_size_cmp(const void *x, const void *y, void *arg)
{
    const size_t *start = arg, a = *(const size_t *)x, b = *(const size_t *)y;
    size_t na = start[a + 1] - start[a], nb = start[b + 1] - start[b];

    return na != nb ? (na < nb) - (na > nb) : (a > b) - (a < b);
}

/* Number the groups (their nodes' serial: 1 + the group) in the order
 * their first entries come, their entries grouped, the groups by size. */
static void plan_groups(split *s, size_t *cnt)
{
    size_t i, g, at = 0;
    cs_node *nd;

    for (i = 0; i < s->n; i++)
        if (s->gnode[i])
            s->gnode[i]->serial = 0;
    s->ngroups = 0;
    for (i = 0; i < s->n; i++) {
        if (!(nd = s->gnode[i]))
            continue;
        if (!nd->serial) {
            s->group[s->ngroups] = nd;
            cnt[s->ngroups] = 0;
            nd->serial = ++s->ngroups;
        }
        cnt[nd->serial - 1]++;
    }
    for (g = 0; g < s->ngroups; g++) {
        s->start[g] = at;
        at += cnt[g];
        cnt[g] = s->start[g];
        s->by_size[g] = g;
    }
    s->start[s->ngroups] = at;
    for (i = 0; i < s->n; i++)
        if (s->gnode[i])
            s->order[cnt[s->gnode[i]->serial - 1]++] = i;
    qsort_r(s->by_size, s->ngroups, sizeof *s->by_size, by_size_cmp, s->start);
}

/* The groups: from the root's children down, the largest group split
 * into its children's while it holds more than 1/16 of the entries and
 * at most 1/4 of them have become shallow. -1: no memory. */
static int plan(split *s, genth *th)
{
    size_t *cnt = malloc(s->n * sizeof *cnt), shallow = 0, nbig, k;
    cs_node *big;
    int rc = cnt ? 0 : cs_oom(th->err);

    s->ngroups = 0;
    for (k = 0; k < s->n && rc == 0; k++) {
        if (k + 16 < s->n)
            __builtin_prefetch(s->v[k + 16]);
        s->gnode[k] = NULL;
        s->gdepth[k] = 0;
        s->fr[k] = s->v[k]->frames;
        s->nfr[k] = (unsigned)s->v[k]->nframes;
    }
    if (rc == 0)
        rc = expand(s, th, NULL, &shallow);    /* the root's group */
    for (k = 0; rc == 0 && k < SPLIT_MAX_EXPAND; k++) {
        group_sizes(s, &big, &nbig);
        if (nbig <= s->n / 16 || shallow > s->n / 4)
            break;
        if (expand(s, th, big, &shallow))
            rc = cs_oom(th->err);
    }
    if (rc == 0)
        plan_groups(s, cnt);
    free(cnt);
    return rc;
}

/* The serials generation used (zero again: the pre-inliner's). */
static void serials_clear(split *s)
{
    size_t g;

    for (g = 0; g < s->ngroups; g++)
        s->group[g]->serial = 0;
}

/* Take groups until none is left: their entries, then the inferred call
 * sites and the updates below each group's node. */
static int take_groups(split *s, genth *th)
{
    size_t k, j, g;
    cs_node *nd;
    int rc = 0;

    while (rc == 0 && !__atomic_load_n(&s->failed, __ATOMIC_RELAXED) &&
           (k = __atomic_fetch_add(&s->next, 1, __ATOMIC_RELAXED)) < s->ngroups) {
        g = s->by_size[k];
        for (j = s->start[g]; j < s->start[g + 1] && rc == 0; j++) {
            frees_take(th);
            rc = add_entry(th, s->v[s->order[j]], s->order[j] < s->funcs_upto);
            group_entry_done(th, s->consume, s->order[j]);
        }
        nd = s->group[g];
        for (j = 0; j < nd->nkids && rc == 0; j++)
            rc = infer(th, nd->kids[j].n, false);
        if (rc == 0)
            update_kids(nd, false, s->update_total, th->sum);
    }
    if (rc)
        __atomic_store_n(&s->failed, 1, __ATOMIC_RELAXED);
    return rc;
}

/* The stage set (by either thread) and the other told. */
static void stage_set(split *s, int stage)
{
    pthread_mutex_lock(&s->stage_lock);
    __atomic_store_n(&s->stage, stage, __ATOMIC_RELAXED);  /* polled */
    pthread_cond_broadcast(&s->stage_cond);
    pthread_mutex_unlock(&s->stage_lock);
}

/* Wait until the stage is at least `stage`; the stage then. */
static int stage_wait(split *s, int stage)
{
    int now;

    pthread_mutex_lock(&s->stage_lock);
    while (s->stage < stage)
        pthread_cond_wait(&s->stage_cond, &s->stage_lock);
    now = s->stage;
    pthread_mutex_unlock(&s->stage_lock);
    return now;
}

/* The calling thread's: the worker asked to stop collecting functions
 * and waited for (no entry may be freed before: it reads them), when
 * there is a worker. */
static void stage_stop(split *s, bool worker)
{
    if (!worker)
        return;
    stage_set(s, STAGE_STOP);
    stage_wait(s, STAGE_STOPPED);
}

typedef struct worker {
    split *s;
    genth th;
    cs_trie t;                  /* grows the trie (cs_trie.of) */
    lp_error err;
    int rc;
    pthread_t id;
} worker;

/* The worker's profiled functions of the entries from the first on,
 * until the calling thread asks it to stop; then the groups. */
static void worker_funcs(worker *w)
{
    split *s = w->s;
    size_t i = 0;

    for (; w->th.funcs && i < s->n; i++) {
        if (i % 16 == 0 && __atomic_load_n(&s->stage, __ATOMIC_RELAXED) != STAGE_PLAN)
            break;
        if (i + 4 < s->n)
            __builtin_prefetch(s->v[i + 4]->counters);
        cs_funcs_add_entry(w->th.funcs, w->th.bins, w->th.nbins, s->v[i]);
    }
    pthread_mutex_lock(&s->stage_lock);
    while (s->stage == STAGE_PLAN)  /* all collected: wait for the ask */
        pthread_cond_wait(&s->stage_cond, &s->stage_lock);
    s->funcs_upto = i;
    __atomic_store_n(&s->stage, STAGE_STOPPED, __ATOMIC_RELAXED);
    pthread_cond_broadcast(&s->stage_cond);
    pthread_mutex_unlock(&s->stage_lock);
}

static void *worker_run(void *arg)
{
    worker *w = arg;

    worker_funcs(w);
    if (stage_wait(w->s, STAGE_GO) != STAGE_GO)
        return NULL;
    if (w->th.frees)
        __atomic_store_n(&w->th.frees->home[1], lp_heap_home_self(&w->th.frees->heap),
                         __ATOMIC_RELAXED);
    w->rc = take_groups(w->s, &w->th);
    frees_take(&w->th);
    return NULL;
}

/* The worker's thread started (true), its frees routed like the main's. */
static bool worker_spawn(worker *w, split *s)
{
    w->th.frees = s->consume ? &s->frees : NULL;
    w->th.who = 1;
    return pthread_create(&w->id, NULL, worker_run, w) == 0;
}

/* A worker started on s (its profiled functions collected if funcs,
 * the instruction tables its shared), or NULL: the calling thread takes
 * every group. It collects functions until stage_stop, then waits for
 * STAGE_GO or STAGE_END; its tables are made before STAGE_GO. */
static worker *worker_start(split *s, cs_trie *t, lp_binary *const *bins,
                            size_t nbins, cs_insts **its, bool funcs)
{
    worker *w = calloc(1, sizeof *w);

    if (!w)
        return NULL;
    cs_trie_init(&w->t);
    w->t.of = t;
    w->s = s;
    if (genth_init(&w->th, &w->t, bins, nbins, its, funcs ? cs_funcs_new() : NULL,
                   &s->bins_lock, &w->err) == 0 && (w->th.funcs || !funcs) &&
        worker_spawn(w, s))
        return w;
    cs_funcs_free(w->th.funcs);
    genth_free(&w->th);
    free(w);
    return NULL;
}

/* Wait for the worker, adopt its trie and functions; its error if any. */
static int worker_end(worker *w, cs_trie *t, cs_funcs *funcs, lp_sumacc **sum,
                      lp_error *err)
{
    int rc;

    if (!w)
        return 0;
    pthread_join(w->id, NULL);
    cs_trie_adopt(t, &w->t);
    if ((rc = w->rc) && err)
        *err = w->err;
    if (funcs && cs_funcs_merge(funcs, w->th.funcs) && rc == 0)
        rc = cs_oom(err);
    else if (!funcs)
        cs_funcs_free(w->th.funcs);
    if (*sum && w->th.sum) {    /* spoiled on no memory: computed later */
        lp_sumacc_merge(*sum, w->th.sum);
    } else {                    /* one had no memory for it */
        lp_sumacc_free(*sum);
        lp_sumacc_free(w->th.sum);
        *sum = NULL;
    }
    w->th.sum = NULL;
    genth_free(&w->th);
    free(w);
    return rc;
}

static void split_free(split *s)
{
    free(s->gnode);
    free(s->gdepth);
    free(s->fr);
    free(s->nfr);
    free(s->group);
    free(s->order);
    free(s->start);
    free(s->by_size);
    pthread_mutex_destroy(&s->bins_lock);
    pthread_mutex_destroy(&s->stage_lock);
    pthread_cond_destroy(&s->stage_cond);
    pthread_mutex_destroy(&s->names_lock);
}

/* Generation on two threads when the entries group well (see above):
 * 1 when done, 0 when not tried (the caller generates on one thread),
 * -1 on error. */
static int generate_split(cs_trie *t, genth *th, lp_ctx_entry *const *v,
                          size_t n, lp_ctxcount *consume, const lp_cs_opts *o)
{
    size_t min = o->parallel_min ? o->parallel_min : 4096, i;
    split s = {.v = v, .n = n, .consume = consume,
               .update_total = o->update_total_samples,
               .stage_lock = PTHREAD_MUTEX_INITIALIZER,
               .stage_cond = PTHREAD_COND_INITIALIZER,
               .bins_lock = PTHREAD_MUTEX_INITIALIZER,
               .names_lock = PTHREAD_MUTEX_INITIALIZER};
    worker *w = NULL;
    int rc = 0;

    if (n < min || min == SIZE_MAX || lp_cpus() < 2)
        return 0;
    if (!(s.gnode = malloc(n * sizeof *s.gnode)) ||
        !(s.gdepth = malloc(n * sizeof *s.gdepth)) ||
        !(s.fr = malloc(n * sizeof *s.fr)) || !(s.nfr = malloc(n * sizeof *s.nfr)) ||
        !(s.group = malloc(n * sizeof *s.group)) ||
        !(s.order = malloc(n * sizeof *s.order)) ||
        !(s.start = malloc((n + 1) * sizeof *s.start)) ||
        !(s.by_size = malloc(n * sizeof *s.by_size)))
        rc = cs_oom(th->err);
    if (rc == 0)    /* its instruction tables are made before it takes groups */
        w = worker_start(&s, t, th->bins, th->nbins, th->its, th->funcs != NULL);
    if (rc == 0)
        rc = plan(&s, th);
    stage_stop(&s, w != NULL);
    if (rc || s.ngroups < 2) {
        stage_set(&s, STAGE_END);
        if (worker_end(w, t, th->funcs, &th->sum, NULL) && rc == 0)
            rc = cs_oom(th->err);
        serials_clear(&s);
        split_free(&s);
        return rc ? -1 : 0;
    }
    th->lock = &s.bins_lock;    /* before any instruction table is made */
    t->names_lock = &s.names_lock;
    for (i = 0; i < n && rc == 0; i++)  /* the shallow entries */
        if (!s.gnode[i]) {
            rc = add_entry(th, v[i], i < s.funcs_upto);
            entry_done(consume, i);
        }
    if (consume) {
        frees_init(&s.frees);
        th->frees = &s.frees;
    }
    for (i = 0; i < th->nbins && rc == 0; i++)    /* shared from now */
        if (th->bins[i] && !th->its[i] &&
            !(th->its[i] = cs_insts_new(th->bins[i], th->lock)))
            rc = cs_oom(th->err);
    stage_set(&s, rc ? STAGE_END : STAGE_GO);
    if (rc == 0)
        rc = take_groups(&s, th);
    if (worker_end(w, t, th->funcs, &th->sum, rc ? NULL : th->err) && rc == 0)
        rc = -1;
    if (consume) {              /* whatever was handed over late */
        lp_freebox_drain(&s.frees.box[0]);
        lp_freebox_drain(&s.frees.box[1]);
        th->frees = NULL;
    }
    th->lock = NULL;
    t->names_lock = NULL;
    if (rc == 0)    /* the levels down to the groups' nodes */
        rc = infer(th, &t->root, true);
    if (rc == 0) {
        update_one(&t->root, o->update_total_samples, th->sum);
        update_kids(&t->root, true, o->update_total_samples, th->sum);
    }
    serials_clear(&s);
    split_free(&s);
    return rc ? -1 : 1;
}

int cs_generate_trie(cs_trie *t, lp_binary *const *bins, size_t nbins,
                     lp_ctxcount *cc, bool consume, const lp_cs_opts *o,
                     cs_funcs *funcs, lp_error *err)
{
    lp_ctx_entry **v = NULL;
    long n = lp_ctxcount_entries(cc, &v), i;
    genth th;
    int rc = n < 0 ? cs_oom(err)
                   : genth_init(&th, t, bins, nbins, NULL, funcs, NULL, err);

    for (i = 0; i < n && rc == 0; i++) {
        if (i + 16 < n)     /* scattered over the heap */
            __builtin_prefetch(v[i + 16]);
        if (!bin_ok(v[i], bins, nbins))
            rc = bad_binary(v[i], nbins, err);
    }
    if (rc == 0 && (rc = generate_split(t, &th, v, (size_t)n,
                                        consume ? cc : NULL, o)) == 1)
        rc = 0;
    else if (rc == 0) {
        for (i = 0; i < n && rc == 0; i++) {
            rc = add_entry(&th, v[i], false);
            entry_done(consume ? cc : NULL, (size_t)i);
        }
        if (rc == 0)
            rc = infer(&th, &t->root, false);
        if (rc == 0) {
            update_one(&t->root, o->update_total_samples, th.sum);
            update_kids(&t->root, false, o->update_total_samples, th.sum);
        }
    }
    if (rc == 0 && funcs && cs_funcs_merge(funcs, NULL))
        rc = cs_oom(err);
    if (rc == 0 && n >= 0 && th.sum) {    /* else cs_trie_summary's thread */
        t->has_summary = lp_sumacc_finish(th.sum, &t->summary, NULL) == 0;
        th.sum = NULL;  /* freed */
    }
    if (n >= 0)
        genth_free(&th);
    free(v);
    if (consume)
        lp_ctxcount_clear(cc); /* the keys and frames too: the trie has its own */
    t->weights = rc == 0;
    return rc < 0 ? -1 : 0;
}

int lp_cs_generate(lp_binary *const *bins, size_t nbins, const lp_ctxcount *cc,
                   const lp_cs_opts *o, lp_profile *out, lp_error *err)
{
    cs_trie t;
    int rc;

    cs_trie_init(&t);
    rc = o->probes ? cs_generate_probe_trie(&t, bins, nbins, (lp_ctxcount *)cc,
                                            false, o, NULL, err)
                   : cs_generate_trie(&t, bins, nbins, (lp_ctxcount *)cc, false,
                                      o, NULL, err);
    out->is_probe_based = o->probes != NULL;
    if (rc == 0 && cs_trie_to_profile(&t, out))
        rc = cs_oom(err);
    cs_trie_free(&t);
    return rc;
}

/* With pseudo probes, the pre-inliner's context sizes are built on a
 * second thread while the profile is generated (the probe tables decoded
 * first: then neither changes them): the lock the generation takes
 * around its calls into the binaries (and the missing-frame hook), or
 * NULL (one thread). */
static pthread_mutex_t *sizes_alongside(lp_binary *const *bins, size_t nbins,
                                        const lp_ctxcount *cc, cs_funcs *funcs,
                                        const lp_cs_opts *o, int *rc,
                                        lp_error *err)
{
    if (!funcs || !o->probes)
        return NULL;
    if ((*rc = cs_probes_decode(bins, nbins, o->probes, cc, err)))
        return NULL;
    return cs_sizes_start(funcs, bins, o);
}

static int profile(lp_binary *const *bins, size_t nbins, lp_ctxcount *cc,
                   bool consume, const lp_cs_opts *o, lp_profile *out,
                   lp_error *err)
{
    cs_funcs *funcs = NULL;
    pthread_mutex_t *lock = NULL;
    cs_trie t;
    int rc = 0;

    cs_trie_init(&t);
    t.want_summary = true;      /* post-processing starts with it */
    /* the profiled functions, while the counters are there (line-based:
     * collected by generation, entry by entry) */
    if (o->preinliner && o->use_context_cost &&
        !(funcs = o->probes ? cs_probes_prepare(bins, nbins, o, cc, err)
                            : cs_funcs_new()))
        rc = o->probes ? -1 : cs_oom(err);
    if (rc == 0)
        lock = sizes_alongside(bins, nbins, cc, funcs, o, &rc, err);
    if (rc == 0)
        rc = o->probes ? cs_generate_probe_trie(&t, bins, nbins, cc, consume, o,
                                                lock, err)
                       : cs_generate_trie(&t, bins, nbins, cc, consume, o, funcs, err);
    /* line-based: the sizes on a second thread from now (nothing else
     * calls into the binaries until the pre-inliner gets them) */
    if (rc == 0 && funcs && !o->probes && o->preinliner)
        cs_sizes_start(funcs, bins, o);
    out->is_probe_based = o->probes != NULL;
    if (rc == 0)
        rc = cs_postprocess_trie(&t, bins, nbins, funcs, o, out, err);
    cs_funcs_free(funcs);
    cs_trie_free(&t);   /* empty unless post-processing failed */
    return rc;
}

int lp_cs_profile(lp_binary *const *bins, size_t nbins, const lp_ctxcount *cc,
                  const lp_cs_opts *o, lp_profile *out, lp_error *err)
{
    return profile(bins, nbins, (lp_ctxcount *)cc, false, o, out, err);
}

int lp_cs_profile_consume(lp_binary *const *bins, size_t nbins,
                          lp_ctxcount *cc, const lp_cs_opts *o,
                          lp_profile *out, lp_error *err)
{
    return profile(bins, nbins, cc, true, o, out, err);
}
