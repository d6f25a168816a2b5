/*
 * csgen.c - llvm-profgen 19's CSProfileGenerator::generateLineNumBasedProfile:
 * per context, body samples from that context's own disjoint ranges (zero
 * pieces skipped; the leaf location of each instruction keeps the maximum
 * of count x duplication factor; the total grows by the count per
 * instruction), call targets at the branch source's leaf location and head
 * samples on the callee's child node (base profiles for the empty
 * context), then inferred call sites for profiles without head samples
 * (post-order), the call-site fix-up and --update-total-samples; the trie
 * is written out as a flat CS profile. Also the lp_cs_* entry points that
 * chain generation and post-processing. Owns no I/O.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "context/cs_internal.h"
#include "util/cpus.h"

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

typedef struct gen {
    cs_trie *t;
    lp_binary *bin;
    lp_binary *const *bins;     /* all of them (branch targets in others) */
    size_t nbins;
    cs_insts *it;               /* the binary's instruction tables */
    bool fs;                    /* flow-sensitive discriminators */
    lp_error *err;
    const lp_func_range *last;  /* the last function range found */
    cs_pmemo *memo;             /* interned names by address (binaries') */
    pthread_mutex_t *lock;      /* the binaries' lazy caches, while a
                                   second thread computes bodies; or NULL */
    bool disc_set;              /* the last raw discriminator decoded */
    uint32_t disc, disc_base;   /* (a context's runs mostly repeat one) */
    uint64_t disc_dup;
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
        if (!(x = cs_insts_table(g->it, fr, g->err)))
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

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
    return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

/* updateBodySamplesforFunctionProfile + addTotalSamples for `ninst`
 * instructions at one leaf location (raw discriminator in loc) */
static int body_run(gen *g, lp_fsamples *fs, lp_loc loc, uint64_t count,
                    uint64_t ninst)
{
    lp_loc key;
    uint64_t c;
    lp_body_rec *b;

    if (!g->disc_set || g->disc != loc.disc) {
        g->disc_set = true;
        g->disc = loc.disc;
        g->disc_base = lp_disc_base(loc.disc, g->fs);
        g->disc_dup = lp_disc_dup_factor(loc.disc, g->fs);
    }
    key = (lp_loc){loc.line, g->disc_base};
    c = count * g->disc_dup;
    b = lp_fs_body(fs, key);

    if (!b)
        return cs_oom(g->err);
    if (lp_body_count(b) <= c)
        lp_body_set_count(b, c);
    fs->total = lp_sat_add(fs->total, sat_mul(count, ninst));
    return 0;
}

/* The instructions of [*addr, end] inside function range fr, by runs;
 * *addr moves past the range. Returns 1 when the piece is done. */
static int piece_in_range(gen *g, lp_fsamples *fs, const lp_func_range *fr,
                          uint64_t *addr, uint64_t end, uint64_t count)
{
    cs_itab *x = cs_insts_table(g->it, fr, g->err);
    size_t lo, hi, r;

    if (!x)
        return -1;
    lo = cs_itab_lower(x, *addr);
    hi = end >= fr->end - 1 ? x->n : cs_itab_lower(x, end + 1);
    for (r = lo < hi ? cs_itab_run_of(x, lo) : x->nruns; r < x->nruns && x->runs[r].lo < hi; r++) {
        const cs_irun *run = &x->runs[r];
        size_t a = run->lo > lo ? run->lo : lo, b = run->hi < hi ? run->hi : hi;
        if (run->has && body_run(g, fs, run->loc, count, b - a))
            return -1;
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

/* populateBodySamplesForFunction */
static int body(gen *g, lp_fsamples *fs, const lp_counters *c)
{
    const lp_addr_pair_count *r = NULL;
    lp_addr_pair_count *d = NULL;
    long nr = lp_counters_ranges_view(c, &r), nd, i;
    int rc = 0;

    if ((nd = lp_flat_disjoint_ranges(r, (size_t)nr, &d)) < 0)
        return cs_oom(g->err);
    for (i = 0; i < nd && rc == 0; i++)
        if (d[i].count)
            rc = body_piece(g, fs, &d[i]);
    free(d);
    return rc;
}

/* populateBoundarySamplesForFunction for one branch */
static int boundary_one(gen *g, cs_node *node, const lp_addr_pair_count *br)
{
    const char *callee =
        !LP_CTX_IS_XBIN(br->b) ? lp_binary_callee_name(g->bin, br->b)
        : LP_CTX_XBIN_BIN(br->b) < g->nbins && g->bins[LP_CTX_XBIN_BIN(br->b)]
            ? lp_binary_callee_name(g->bins[LP_CTX_XBIN_BIN(br->b)],
                                    LP_CTX_XBIN_VADDR(br->b))
            : NULL;
    const cs_name *cn;
    lp_loc site = {0, 0}, leaf;
    lp_body_rec *b;
    cs_node *child;
    cs_prof *p;
    bool has;

    if (!callee)
        return 0;
    if (node != &g->t->root) {
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
    long n = lp_counters_branches_view(c, &br), i;
    int rc = 0;

    for (i = 0; i < n && rc == 0; i++)
        rc = boundary_one(g, node, &br[i]);
    return rc;
}

/* ---- bodies computed ahead ------------------------------------------------ */

/* A second thread computes the entries' body samples from the last entry
 * down, each into a profile of its own, while generation goes through
 * them in order from the first: where they meet, each entry has been
 * claimed by one of them (so on a busy machine, where the helper gets
 * little CPU, generation simply does nearly all itself). An entry's body
 * only goes to its own node's profile, which nothing else has touched
 * before that entry comes (only entries of the same context do: then it
 * is computed again in place), so taking the helper's body over is what
 * computing it in place would have made. */
enum { AH_FREE, AH_HELPER, AH_DONE, AH_MINE };

typedef struct ahead {
    lp_ctx_entry *const *v;
    size_t n;
    lp_binary *const *bins;
    size_t nbins;
    cs_insts **its;             /* the helper's instruction tables */
    cs_funcs *funcs;            /* the profiled functions of its entries,
                                   or NULL (not asked for) */
    lp_fsamples *fs;            /* per entry: the body computed ahead */
    unsigned char *state;       /* per entry: AH_* */
    pthread_mutex_t lock;       /* the binaries' lazy caches */
    pthread_t th;
    lp_error err;
    int rc;
} ahead;

static void *ahead_run(void *arg)
{
    ahead *h = arg;
    size_t i = h->n;
    unsigned char st;

    while (i-- > 0 && h->rc == 0) {
        const lp_ctx_entry *e = h->v[i];
        st = AH_FREE;
        if (!__atomic_compare_exchange_n(&h->state[i], &st, AH_HELPER, false,
                                         __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            break;
        if (h->funcs)
            cs_funcs_add_entry(h->funcs, h->bins, h->nbins, e);
        if (e->nframes && e->bin >= 0 && (size_t)e->bin < h->nbins && h->bins[e->bin]) {
            lp_binary *b = h->bins[e->bin];
            gen g = {NULL, b, h->bins, h->nbins, h->its[e->bin],
                     lp_binary_fs_discriminator(b), &h->err, NULL, NULL, &h->lock};
            if (!g.it && !(g.it = h->its[e->bin] = cs_insts_new(b, &h->lock)))
                h->rc = cs_oom(&h->err);
            else
                h->rc = body(&g, &h->fs[i], e->counters);
        }
        __atomic_store_n(&h->state[i], AH_DONE, __ATOMIC_RELEASE);
    }
    return NULL;
}

/* The helper started on v[0..n), or NULL (not worth it, or it could not
 * start: generation then does every body itself). */
static ahead *ahead_start(lp_binary *const *bins, size_t nbins,
                          lp_ctx_entry *const *v, size_t n, bool funcs,
                          const lp_cs_opts *o)
{
    size_t min = o->parallel_min ? o->parallel_min : 4096;
    ahead *h;

    if (n < min || min == SIZE_MAX || lp_cpus() < 2 || !(h = calloc(1, sizeof *h)))
        return NULL;
    *h = (ahead){v, n, bins, nbins, calloc(nbins ? nbins : 1, sizeof *h->its),
                 funcs ? cs_funcs_new() : NULL, calloc(n, sizeof *h->fs),
                 calloc(n, 1)};
    if (h->its && (h->funcs || !funcs) && h->fs && h->state &&
        pthread_mutex_init(&h->lock, NULL) == 0) {
        if (pthread_create(&h->th, NULL, ahead_run, h) == 0)
            return h;
        pthread_mutex_destroy(&h->lock);
    }
    free(h->its);
    cs_funcs_free(h->funcs);
    free(h->fs);
    free(h->state);
    free(h);
    return NULL;
}

/* Entry i claimed by generation (0), or by the helper (1: once it is
 * done with it). */
static int ahead_claim(ahead *h, size_t i)
{
    unsigned char st = AH_FREE;

    if (!h || __atomic_compare_exchange_n(&h->state[i], &st, AH_MINE, false,
                                          __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return 0;
    while (__atomic_load_n(&h->state[i], __ATOMIC_ACQUIRE) != AH_DONE)
        sched_yield();      /* the one entry it is on */
    return 1;
}

/* The helper's body of entry i into fs: 1 when taken over, 0 when it is
 * generation's to compute (another entry's body is there already). */
static int ahead_adopt(ahead *h, size_t i, lp_fsamples *fs)
{
    lp_fsamples *a = &h->fs[i];

    if (fs->nr_body || fs->total) {
        lp_fs_clear(a);
        return 0;
    }
    fs->body = a->body;
    fs->nr_body = a->nr_body;
    fs->body_cap = a->body_cap;
    fs->total = a->total;
    *a = (lp_fsamples){0};
    return 1;
}

/* Stop the helper (generation stopped at entry `from`: the entries it has
 * not claimed yet are taken away), wait for it and free it; its error if
 * it had one. */
static int ahead_end(ahead *h, size_t from, size_t nbins, cs_funcs *funcs,
                     lp_error *err)
{
    unsigned char st;
    size_t k;
    int rc;

    if (!h)
        return 0;
    for (k = from; k < h->n; k++) {
        st = AH_FREE;
        if (!__atomic_compare_exchange_n(&h->state[k], &st, AH_MINE, false,
                                         __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            break;
    }
    pthread_join(h->th, NULL);
    pthread_mutex_destroy(&h->lock);
    if ((rc = h->rc ? -1 : 0) && err)
        *err = h->err;
    if (funcs && cs_funcs_merge(funcs, h->funcs) && rc == 0)
        rc = cs_oom(err);
    else if (!funcs)
        cs_funcs_free(h->funcs);
    for (k = 0; k < nbins; k++)
        cs_insts_free(h->its[k]);
    for (k = 0; k < h->n; k++)
        lp_fs_clear(&h->fs[k]);
    free(h->its);
    free(h->fs);
    free(h->state);
    free(h);
    return rc;
}

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

static int add_entry(cs_trie *t, lp_binary *const *bins, size_t nbins,
                     cs_insts **its, cs_pmemo *memo, cs_pathmemo *pm,
                     const lp_ctx_entry *e, ahead *h, size_t i,
                     cs_funcs *funcs, lp_error *err)
{
    gen g = {t, NULL, bins, nbins, NULL, false, err, NULL, memo,
             h ? &h->lock : NULL};
    cs_node *node = &t->root;
    bool helped = ahead_claim(h, i);
    cs_prof *p;

    if (funcs && !helped)
        cs_funcs_add_entry(funcs, bins, nbins, e);

    if (e->bin < 0 || (size_t)e->bin >= nbins || !bins[e->bin])
        return bad_binary(e, nbins, err);
    g.bin = bins[e->bin];
    g.fs = lp_binary_fs_discriminator(g.bin);
    if (!its[e->bin] && !(its[e->bin] = cs_insts_new(g.bin, g.lock)))
        return cs_oom(err);
    g.it = its[e->bin];
    if (e->nframes) {
        if (!(node = cs_path(t, e->frames, e->nframes, memo, pm)) ||
            !(p = cs_prof_get(t, node)))
            return cs_oom(err);
        if (e->was_leaf_inlined)
            p->fs.attrs |= CS_WAS_INLINED;
        if (!(helped && ahead_adopt(h, i, &p->fs)) && body(&g, &p->fs, e->counters))
            return -1;
    }
    return boundary(&g, node, e->counters);
}

/* populateInferredFunctionSamples, post-order */
static int infer(cs_trie *t, cs_node *n, lp_error *err)
{
    cs_prof *caller;
    lp_fsamples *fs;
    lp_body_rec *b;
    uint64_t est;
    uint32_t i;

    for (i = 0; i < n->nkids; i++)
        if (infer(t, n->kids[i].n, err))
            return -1;
    if (!n->prof || n->prof->fs.head || !n->parent || n->parent == &t->root)
        return 0;
    fs = &n->prof->fs;
    if (!(caller = cs_prof_get(t, n->parent)))
        return cs_oom(err);
    est = lp_fs_head_estimate(fs, 1);
    if (!est && !lp_fs_nr_body(fs))
        est = 1;
    if (!(b = lp_fs_body(&caller->fs, n->callsite)) ||
        lp_body_add_target(b, n->func->s, est))
        return cs_oom(err);
    lp_body_add(b, est);
    caller->fs.total = lp_sat_add(caller->fs.total, est);
    return 0;
}

/* updateFunctionSamples */
static int update(cs_trie *t, bool update_total, lp_error *err)
{
    cs_node **q;
    size_t n, i;

    if (!(q = cs_bfs(t, &n)))
        return cs_oom(err);
    for (i = 0; i < n; i++) {
        if (!q[i]->prof)
            continue;
        if (update_total)
            lp_fs_update_total_samples(&q[i]->prof->fs);
        lp_fs_update_callsite_samples(&q[i]->prof->fs);
        lp_fs_shrink(&q[i]->prof->fs);
    }
    free(q);
    return 0;
}

int cs_generate_trie(cs_trie *t, lp_binary *const *bins, size_t nbins,
                     lp_ctxcount *cc, bool consume, const lp_cs_opts *o,
                     cs_funcs *funcs, lp_error *err)
{
    lp_ctx_entry **v = NULL;
    long n = lp_ctxcount_entries(cc, &v), i;
    cs_insts **its = calloc(nbins ? nbins : 1, sizeof *its);
    /* every name given to it stays put until the loop ends: the entries'
     * (freed after it) and the binaries' */
    cs_pmemo *memo = calloc((size_t)1 << CS_PMEMO_BITS, sizeof *memo);
    cs_pathmemo pm = {0};
    int rc = n < 0 || !its || !memo ? cs_oom(err) : 0, rc2;
    ahead *h = rc ? NULL : ahead_start(bins, nbins, v, (size_t)n, funcs != NULL, o);
    size_t k;

    for (i = 0; i < n && rc == 0; i++) {
        rc = add_entry(t, bins, nbins, its, memo, &pm, v[i], h, (size_t)i, funcs,
                       err);
        if (consume) {
            lp_counters_free(v[i]->counters);
            v[i]->counters = NULL;
        }
    }
    if ((rc2 = ahead_end(h, (size_t)i, nbins, funcs, rc ? NULL : err)) && rc == 0)
        rc = rc2;
    if (rc == 0 && funcs && cs_funcs_merge(funcs, NULL))
        rc = cs_oom(err);
    for (k = 0; its && k < nbins; k++)
        cs_insts_free(its[k]);
    free(its);
    free(memo);
    cs_pathmemo_free(&pm);
    free(v);
    if (consume)
        lp_ctxcount_clear(cc); /* the keys and frames too: the trie has its own */
    if (rc == 0)
        rc = infer(t, &t->root, err);
    if (rc == 0)
        rc = update(t, o->update_total_samples, err);
    return rc;
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
    /* the profiled functions, while the counters are there (line-based:
     * collected by generation, entry by entry) */
    if (o->preinliner && o->use_context_cost &&
        !(funcs = o->probes ? cs_probes_prepare(bins, nbins, o->probes, cc, err)
                            : cs_funcs_new()))
        rc = o->probes ? -1 : cs_oom(err);
    if (rc == 0)
        lock = sizes_alongside(bins, nbins, cc, funcs, o, &rc, err);
    if (rc == 0)
        rc = o->probes ? cs_generate_probe_trie(&t, bins, nbins, cc, consume, o,
                                                lock, err)
                       : cs_generate_trie(&t, bins, nbins, cc, consume, o, funcs, err);
    out->is_probe_based = o->probes != NULL;
    if (rc == 0)
        rc = cs_postprocess_trie(&t, bins, nbins, funcs, o, out, err);
    cs_funcs_free(funcs);
    cs_trie_free(&t);
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
