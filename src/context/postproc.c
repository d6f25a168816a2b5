/*
 * postproc.c - llvm-profgen 19's CSProfileGenerator::postProcessProfiles,
 * in its order: the context-less summary and thresholds, the CS
 * pre-inliner (with byte-size costs per inline context), conversion of the
 * trie to the profile map, cold context trimming and merging
 * (SampleContextTrimmer), the nested conversion (ProfileConverter, which
 * moves every child context into its parent as an inlinee), ambiguous-name
 * filtering and the density warning. Owns the order of these steps and the
 * two profile-map transformations; the trie, sizes and pre-inliner are in
 * their own files.
 */
#include <stdlib.h>
#include <string.h>

#include "context/cs_internal.h"
#include "lbr2prof/phases.h"
#include "util/grow.h"
#include "util/sort.h"

/* ---- cold context trimming and merging ---------------------------------------- */

/* The printed context of the last k frames of ctx. */
static const char *last_frames(const char *ctx, uint32_t k)
{
    const char *p = ctx, *q;
    size_t n = 1, skip;

    for (q = ctx; (q = strstr(q, " @ ")); q += 3)
        n++;
    if (k >= n)
        return ctx;
    for (skip = n - k; skip; skip--)
        p = strstr(p, " @ ") + 3;
    return p;
}

/* SampleContextTrimmer::trimAndMergeColdContextProfiles, first pass: a
 * cold context (total below the threshold; with base_only, of one frame
 * only) is merged into c->merged under its last c->depth frames (when
 * merging) and dropped. Called by the trie's conversion (trie.c) for
 * each context before it gets its printed key in the profile map: the
 * cold ones, most of them, never do. Returns 1 for a cold context, which
 * the caller drops (fs's owner frees it: a trie profile's name is in
 * its own block), 0 for a hot one, -1 on error. */
int cs_cold_take(cs_cold *c, const char *ctx, bool is_base, lp_fsamples *fs)
{
    lp_fsamples *m;

    if (fs->total >= c->thr || (c->base_only && !is_base))
        return 0;
    if (c->merge) {
        m = lp_profile_get(c->merged, last_frames(ctx, c->depth), fs->name);
        if (!m || lp_fs_merge(m, fs))
            return -1;
    }
    return 1;
}

/* ... and its second pass: the merged cold profiles back into p, merged
 * into the context of their key if p has it, else added (when trimming,
 * only if no longer cold). */
static int cold_merge_back(lp_profile *p, const cs_cold *c, bool trim)
{
    lp_fsamples **v, *e;
    size_t n, i;
    int rc = 0;

    if ((n = lp_profile_all(c->merged, &v)) == (size_t)-1)
        return -1;
    for (i = 0; rc == 0 && i < n; i++) {
        e = lp_profile_find(p, v[i]->context);
        if (trim && v[i]->total < c->thr && !e)
            continue;
        if (e)
            rc = lp_fs_merge(e, v[i]);
        else if ((e = lp_profile_get(p, v[i]->context, v[i]->name)))
            lp_fs_move(e, v[i]);
        else
            rc = -1;
    }
    free(v);
    return rc;
}

/* The trimmer's settings, or NULL when it does nothing (its threshold,
 * the hot count, is set once the summary is there). -1 on no memory. */
static int cold_setup(cs_cold *c, const lp_cs_opts *o, bool merge,
                      cs_cold **out)
{
    memset(c, 0, sizeof *c);
    *out = NULL;
    if (!o->trim_cold_profile && !merge)
        return 0;
    c->merge = merge;
    c->base_only = !merge && o->preinliner;
    /* depth 0: llvm-profgen would build an empty context */
    c->depth = o->max_cold_context_depth ? o->max_cold_context_depth : 1;
    if (merge && !(c->merged = lp_profile_new()))
        return -1;
    *out = c;
    return 0;
}

/* ---- nested conversion (ProfileConverter::convertCSProfiles) --------------------- */

/* out[name].merge(child), copying the child into a new entry */
static int merge_into_base(lp_profile *out, const cs_node *c, lp_fsamples *child,
                           bool copy)
{
    lp_fsamples *e = lp_profile_find(out, c->func->s);

    if (e)
        return lp_fs_merge(e, child);
    if (!(e = lp_profile_get(out, c->func->s, NULL)))
        return -1;
    if (!copy) {
        lp_fs_move(e, child);
        return 0;
    }
    e->attrs = child->attrs;
    return lp_fs_merge(e, child);
}

static int convert(cs_node *n, lp_profile *out, bool merged_base)
{
    lp_fsamples *np = n->prof ? &n->prof->fs : NULL, *cp, *in;
    uint64_t cnt;
    uint32_t i;
    cs_node *c;

    for (i = 0; i < n->nkids; i++) {
        c = n->kids[i].n;
        if (convert(c, out, merged_base))
            return -1;
        if (!c->prof)
            continue;
        cp = &c->prof->fs;
        if (!np) {
            if (merge_into_base(out, c, cp, false))
                return -1;
            continue;
        }
        if (merged_base && merge_into_base(out, c, cp, true))
            return -1;
        if (!(in = lp_fs_callee(np, c->callsite, c->func->s)))
            return -1;
        lp_fs_move(in, cp);
        if (merged_base)
            in->attrs |= CS_DUP_INTO_BASE;
        np->total = lp_sat_add(np->total, in->total);
        cnt = lp_fs_remove_call(np, c->callsite, c->func->s);
        np->total = np->total < cnt ? 0 : np->total - cnt;
    }
    return 0;
}

/* Swap the entries of two profiles (flags stay). */
static void swap_entries(lp_profile *a, lp_profile *b)
{
    void *f = a->funcs;
    size_t n = a->nr_funcs;

    a->funcs = b->funcs;
    a->nr_funcs = b->nr_funcs;
    b->funcs = f;
    b->nr_funcs = n;
}

/* convertCSProfiles straight from the trie (no context keys made): the
 * same frame trie ProfileConverter would build from them */
static int nest_trie(cs_trie *t, lp_profile *p, bool merged_base)
{
    lp_profile *out = lp_profile_new();
    int rc = out ? convert(&t->root, out, merged_base) : -1;

    if (rc == 0) {
        swap_entries(p, out);
        p->is_cs = 0;
    }
    lp_profile_free(out);
    return rc;
}

static int nest(lp_profile *p, bool merged_base)
{
    lp_profile *out = lp_profile_new();
    cs_trie t;
    int rc = out ? 0 : -1;

    cs_trie_init(&t);
    if (rc == 0)
        rc = cs_trie_from_profile(&t, p);
    if (rc == 0)
        rc = convert(&t.root, out, merged_base);
    if (rc == 0) {
        swap_entries(p, out);
        p->is_cs = 0;
    }
    cs_trie_free(&t);
    lp_profile_free(out);
    return rc;
}

/* ---- the flat CS profile's order ------------------------------------------------ */

/* LLVM writes a CS profile's contexts by total, then in SampleContext
 * order: frame by frame the function (FunctionId order), then the call
 * site; a context before its extensions. Over the trie that is a preorder
 * walk, each node before its children and the children by call site,
 * then function. The conversion (cs_trie_to_profile_ranked, trie.c)
 * numbers every node as it walks the trie (its serial: the pre-
 * inliner's, which is done by then) and gives each node's profile the
 * even rank 2 * serial in fs.order, which it moves into the profile map: no context is printed, parsed or compared to sort the
 * profile (the printed contexts' sort was ~200 M instructions on 84k
 * contexts). */
static int64_t ranks_fit(uint64_t nodes)
{
    return nodes < UINT32_MAX / 2 - 1 ? (int64_t)nodes : 0;
}

/* The serial after n's subtree (nodes of the trie: nr). */
static uint64_t subtree_end(const cs_node *n, uint64_t nr)
{
    const cs_node *x = n, *m;
    uint32_t i;

    if (!n->func)
        return nr + 1;
    while (x->nkids) {
        for (m = x->kids[0].n, i = 1; i < x->nkids; i++)
            if (x->kids[i].n->serial > m->serial)
                m = x->kids[i].n;
        x = m;
    }
    return x->serial + 1;
}

/* The rank of a context no trie node's profile gave its entry (a cold
 * context merged under its last frames): its node's if the trie has the
 * path, else the odd rank just before the first node that follows it
 * (contexts of one odd rank: in lp_context_cmp's order). 0: no memory. */
static uint64_t rank_of(const cs_node *root, const char *ctx, uint64_t nr)
{
    size_t n = lp_context_split(ctx, NULL, 0), i;
    lp_context_frame *f = malloc((n ? n : 1) * sizeof *f);
    char *name = malloc(strlen(ctx) + 1);
    const cs_node *cur = root, *next, *after, *c;
    lp_loc in = {0, 0};
    uint64_t r = 0;
    uint32_t k;
    int d;

    if (!f || !name)
        goto out;
    lp_context_split(ctx, f, n);
    for (i = 0; i < n; i++) {
        memcpy(name, f[i].name, f[i].len);
        name[f[i].len] = 0;
        for (next = after = NULL, k = 0; k < cur->nkids; k++) {
            c = cur->kids[k].n;
            if ((d = cs_rank_cmp(c, in, name)) == 0)
                next = c;
            else if (d > 0 && (!after || c->serial < after->serial))
                after = c;
        }
        if (!next) {
            r = 2 * (after ? after->serial : subtree_end(cur, nr)) - 1;
            goto out;
        }
        cur = next;
        in = f[i].loc;
    }
    r = 2 * cur->serial;
out:
    free(f);
    free(name);
    return r;
}

static int item_ctx_cmp(const void *a, const void *b)
{
    return lp_context_cmp(
        ((const lp_fsamples *)(uintptr_t)((const lp_radix_item *)a)->val)->context,
        ((const lp_fsamples *)(uintptr_t)((const lp_radix_item *)b)->val)->context);
}

/* The entries in rank order (x: each entry, keyed by its total, a
 * radix sort's result, r the same items by rank), each run of one rank
 * (odd ranks can repeat) by context, then numbered 1..n. */
static void number_ranked(lp_radix_item *x, const lp_radix_item *r, size_t n)
{
    size_t i, j;

    for (i = 0; i < n; i = j) {
        for (j = i + 1; j < n && r[j].key == r[i].key; j++)
            ;
        if (j - i > 1)
            qsort(x + i, j - i, sizeof *x, item_ctx_cmp);
    }
    for (i = 0; i < n; i++) {
        if (i + 16 < n)     /* a cache miss per entry, one at a time */
            __builtin_prefetch((void *)(uintptr_t)x[i + 16].val, 1);
        ((lp_fsamples *)(uintptr_t)x[i].val)->order = (uint32_t)(i + 1);
    }
}

/* Every entry of p its final order: the ranks (the trie's, or rank_of's)
 * made distinct and dense (1..n); p->ordered set, and the written order
 * (by total, stably) kept in p (lp_profile_keep_sorted): the totals are
 * read with the ranks, and the writer's sort reads no entry. -1 on no
 * memory. */
static int rank_entries(lp_profile *p, const cs_trie *t, uint64_t nr)
{
    lp_fsamples **v = NULL;
    lp_radix_item *a = NULL, *r, *x;
    uint64_t *tot = NULL;           /* by v's index */
    size_t n = lp_profile_all(p, &v), i;
    int rc = -1;

    if (n == (size_t)-1 || !(a = malloc((n ? 2 * n : 1) * sizeof *a)) ||
        !(tot = malloc((n ? n : 1) * sizeof *tot)))
        goto out;
    for (i = 0; i < n; i++) {
        if (i + 16 < n)
            __builtin_prefetch(v[i + 16]);
        a[i] = (lp_radix_item){v[i]->order, i};
        tot[i] = v[i]->total;
        if (!a[i].key && !(a[i].key = rank_of(&t->root, v[i]->context, nr)))
            goto out;
    }
    r = lp_radix_sort(a, a + n, n);
    x = r == a ? a + n : a;         /* the other half */
    for (i = 0; i < n; i++)
        x[i] = (lp_radix_item){~tot[r[i].val], (uintptr_t)v[r[i].val]};
    number_ranked(x, r, n);
    x = lp_radix_sort(x, r, n);
    for (i = 0; i < n; i++)
        v[i] = (lp_fsamples *)(uintptr_t)x[i].val;
    p->ordered = 1;
    lp_profile_keep_sorted(p, v, n);
    v = NULL;
    rc = 0;
out:
    free(tot);
    free(a);
    free(v);
    return rc;
}

/* ---- the whole post-processing ---------------------------------------------------- */

/* Ambiguous names filtered, then the density warning (one pass). */
static int filter_density(lp_profile *p, const lp_cs_opts *o, lp_error *err)
{
    lp_flat_opts fo;

    lp_flat_opts_default(&fo);
    fo.density_threshold = o->density_threshold;
    fo.density_cutoff_hot = o->density_cutoff_hot;
    fo.show_density = o->show_density;
    fo.warn = o->warn;
    fo.warn_ctx = o->warn_ctx;
    fo.info = o->info;
    return lp_flat_filter_density(p, &fo, err);
}

/* The trie to p, its cold contexts to cold; when *ranked (a flat CS
 * profile), its nodes numbered on the way, on two threads
 * (cs_trie_to_profile_ranked; *ranked then ranks_fit's). 0 or -1. */
static int to_profile(cs_trie *t, lp_profile *p, cs_cold *cold,
                      int64_t *ranked)
{
    int64_t n;

    if (!*ranked)
        return cs_trie_to_profile_hot(t, p, cold);
    if ((n = cs_trie_to_profile_ranked(t, p, cold)) < 0)
        return -1;
    *ranked = ranks_fit((uint64_t)n);
    return 0;
}

/* Summary, thresholds, pre-inliner; the trie back to p (unless direct:
 * then the trie is left for nest_trie), its nodes numbered first if
 * *ranked (a flat CS profile: *ranked becomes the number of nodes, 0 if
 * not numbered). The summary is computed on a second thread while the
 * context sizes and the pre-inliner's call graph are built. */
static int trie_stage(cs_trie *t, lp_binary *const *bins, size_t nbins,
                      cs_funcs *funcs, const lp_cs_opts *o, lp_profile *p,
                      cs_cold *cold, bool direct, int64_t *ranked,
                      lp_error *err)
{
    uint64_t hot = 0;
    cs_funcs *own = NULL;
    cs_trie own_st;
    cs_sizes_req sr = {&own_st, bins, NULL};
    const lp_summary *s;
    cs_summary_job sj;
    int rc = 0;

    cs_trie_init(&own_st);
    lp_phases_enter(o->phases, LP_PHASE_POSTPROCESS);
    cs_summary_start(&sj, t);
    if (o->preinliner && o->use_context_cost) {
        lp_phases_enter(o->phases, LP_PHASE_PREINLINE);
        if (!funcs && !(funcs = own = cs_funcs_collect(bins, nbins, NULL, t, err)))
            rc = -1;
        sr.funcs = funcs;
    }
    if (rc == 0 && o->preinliner) {
        lp_phases_enter(o->phases, LP_PHASE_PREINLINE);
        rc = cs_preinline(t, &sr, &sj, o, err);
        p->is_preinlined = 1;
    }
    lp_phases_enter(o->phases, LP_PHASE_POSTPROCESS);
    /* waited for on every path: the thread reads the trie */
    s = cs_summary_wait(&sj, rc ? NULL : err);
    if (rc == 0 && !s)
        rc = -1;
    if (rc == 0)
        hot = o->hot_count >= 0 ? (uint64_t)o->hot_count
                                : cs_percentile_count(s, o->cutoff_hot);
    /* threshold 0: nothing is cold */
    if (cold && hot == 0)
        cold = NULL;
    if (cold)
        cold->thr = hot;
    if (rc == 0 && !direct && to_profile(t, p, cold, ranked))
        rc = cs_oom(err);
    cs_funcs_free(own);
    cs_trie_free(&own_st);
    return rc;
}

int cs_postprocess_trie(cs_trie *t, lp_binary *const *bins, size_t nbins,
                        cs_funcs *funcs, const lp_cs_opts *o, lp_profile *p,
                        lp_error *err)
{
    bool merge = o->merge_cold_context != 0, direct;
    cs_cold cold, *cp;
    int64_t ranked;
    int rc = 0;

    if (o->preinliner && o->merge_cold_context < 0)
        merge = false;
    /* nothing between the trie and the nesting: nest the trie itself */
    direct = o->gen_nested && !merge && !o->trim_cold_profile;
    ranked = !o->gen_nested;    /* the profile stays flat: keep its order */
    if (cold_setup(&cold, o, merge, &cp))
        return cs_oom(err);
    if (trie_stage(t, bins, nbins, funcs, o, p, direct ? NULL : cp, direct,
                   &ranked, err))
        rc = -1;
    else if (direct && nest_trie(t, p, o->merged_base_profiles))
        rc = cs_oom(err);
    if (rc == 0 && !direct && cold.merged && cold.thr &&
        cold_merge_back(p, &cold, o->trim_cold_profile))
        rc = cs_oom(err);
    if (rc == 0 && ranked > 0 && rank_entries(p, t, (uint64_t)ranked))
        rc = cs_oom(err);
    if (rc == 0) {
        /* what is left of the trie (its nodes, the profiles merged away
         * and the emptied ones) is freed beside the rest, or left to the
         * kernel when the process exits after writing */
        if (o->exiting)
            cs_trie_init(t);
        else
            cs_trie_free_later(t, p);
        if (!direct && o->gen_nested && nest(p, o->merged_base_profiles))
            rc = cs_oom(err);
    }
    lp_profile_free(cold.merged);
    if (rc)
        return -1;
    return filter_density(p, o, err);
}

int lp_cs_postprocess(lp_binary *const *bins, size_t nbins,
                      const lp_ctxcount *cc, const lp_cs_opts *o,
                      lp_profile *p, lp_error *err)
{
    cs_funcs *funcs = NULL;
    cs_trie t;
    int rc = 0;

    cs_trie_init(&t);
    if (cc && o->preinliner && o->use_context_cost &&
        !(funcs = cs_funcs_collect(bins, nbins, cc, NULL, err)))
        rc = -1;
    if (rc == 0 && cs_trie_from_profile(&t, p))
        rc = cs_oom(err);
    if (rc == 0)
        rc = cs_postprocess_trie(&t, bins, nbins, funcs, o, p, err);
    cs_funcs_free(funcs);
    cs_trie_free(&t);
    return rc;
}
