/*
 * csprof.c - a CS profile from counters per context, by the rules of
 * llvm-profgen 19's CSProfileGenerator::generateLineNumBasedProfile
 * (reference §4.2): per context the body counts of its ranges (per
 * instruction Σ of the ranges covering it; per location the max of
 * count × duplication factor; total += count), call targets and head
 * samples from branches into function entries, inferred call-site samples
 * for contexts without head samples (post-order), then body := max(body,
 * Σ call targets). No pre-inliner, cold merging, compression or nesting.
 * Used to make the ideal profile from the truth; kept independent of the
 * CS generator under test so that each checks the other.
 */
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/accuracy.h"

typedef struct gen {
    lp_binary *bin;
    lp_profile *p;
    lp_error *err;
    bool fs;
} gen;

typedef struct point {
    uint64_t addr;
    int64_t delta;
} point;

static int by_addr(const void *x, const void *y)
{
    const point *a = x, *b = y;
    return a->addr < b->addr ? -1 : a->addr > b->addr;
}

static int oom(gen *g)
{
    return lp_error_set(g->err, LP_ENOMEM, "CS profile: out of memory");
}

/* ---- body samples ---------------------------------------------------------- */

/* One instruction executed `count` times in this context. */
static int body_inst(gen *g, lp_fsamples *fs, uint64_t a, uint64_t count)
{
    const lp_frame *fr;
    size_t n;
    lp_body_rec *b;
    lp_loc loc;
    uint64_t c;
    uint32_t d;

    if (lp_binary_symbolize(g->bin, a, &fr, &n, g->err))
        return -1;
    if (n == 0)
        return 0;
    d = fr[n - 1].discriminator;
    loc.line = fr[n - 1].line_offset;
    loc.disc = lp_disc_base(d, g->fs);
    c = count * lp_disc_dup_factor(d, g->fs);
    if (!(b = lp_fs_body(fs, loc)))
        return oom(g);
    if (lp_body_count(b) <= c)
        lp_body_set_count(b, c);
    fs->total = lp_sat_add(fs->total, count);
    return 0;
}

/* Per instruction the sum of the ranges covering it (findDisjointRanges),
 * zero-count gaps skipped. */
static int body_samples(gen *g, lp_fsamples *fs, const lp_counters *cnt)
{
    lp_addr_pair_count *r = NULL;
    long nr = lp_counters_ranges(cnt, &r), i;
    point *pt;
    int64_t cur = 0;
    uint64_t a, end;
    int rc = 0, k;

    if (nr < 0)
        return oom(g);
    if (!(pt = malloc((size_t)(2 * nr + 1) * sizeof *pt))) {
        free(r);
        return oom(g);
    }
    for (i = 0; i < nr; i++) {
        pt[2 * i] = (point){r[i].a, (int64_t)r[i].count};
        pt[2 * i + 1] = (point){r[i].b + 1, -(int64_t)r[i].count};
    }
    qsort(pt, (size_t)(2 * nr), sizeof *pt, by_addr);
    for (i = 0; i < 2 * nr && rc == 0; i++) {
        cur += pt[i].delta;
        if (i + 1 == 2 * nr || pt[i + 1].addr == pt[i].addr || cur <= 0)
            continue;
        end = pt[i + 1].addr; /* exclusive */
        k = lp_binary_inst_at_or_after(g->bin, pt[i].addr, &a, g->err);
        while (k > 0 && a < end && rc == 0) {
            rc = body_inst(g, fs, a, (uint64_t)cur);
            if (rc == 0)
                k = lp_binary_next_inst(g->bin, a, &a, g->err);
        }
        if (k < 0)
            rc = -1;
    }
    free(pt);
    free(r);
    return rc;
}

/* ---- boundary samples -------------------------------------------------------- */

/* The profile of context frames[0..n) (created empty if absent). */
static lp_fsamples *ctx_profile(gen *g, const lp_ctx_frame *f, size_t n)
{
    char *key = lp_ctx_key(f, n);
    lp_fsamples *fs = key ? lp_profile_get(g->p, key, f[n - 1].func) : NULL;

    free(key);
    if (!fs)
        oom(g);
    return fs;
}

static int boundary_one(gen *g, const lp_ctx_entry *e, lp_fsamples *fs,
                        const lp_addr_pair_count *br)
{
    const char *callee = lp_binary_callee_name(g->bin, br->b);
    const lp_frame *fr;
    lp_ctx_frame *f;
    lp_fsamples *child;
    lp_body_rec *b;
    size_t n = 0;
    lp_loc loc;

    if (!callee)
        return 0;
    if (e->nframes > 0) {
        if (lp_binary_symbolize(g->bin, br->a, &fr, &n, g->err))
            return -1;
    }
    if (!(f = malloc((e->nframes + 1) * sizeof *f)))
        return oom(g);
    if (e->nframes)
        memcpy(f, e->frames, e->nframes * sizeof *f);
    if (n > 0) { /* target at the source's leaf location (base disc.) */
        loc.line = fr[n - 1].line_offset;
        loc.disc = lp_disc_base(fr[n - 1].discriminator, g->fs);
        if (!(b = lp_fs_body(fs, loc)) ||
            lp_body_add_target(b, callee, br->count)) {
            free(f);
            return oom(g);
        }
        /* the callee's node keeps the raw discriminator */
        f[e->nframes - 1].loc.line = fr[n - 1].line_offset;
        f[e->nframes - 1].loc.disc = fr[n - 1].discriminator;
    } else if (e->nframes > 0) {
        f[e->nframes - 1].loc = (lp_loc){0, 0};
    }
    f[e->nframes].func = callee;
    f[e->nframes].loc = (lp_loc){0, 0};
    child = ctx_profile(g, f, e->nframes + 1);
    free(f);
    if (!child)
        return -1;
    child->head = lp_sat_add(child->head, br->count);
    return 0;
}

static int boundary_samples(gen *g, const lp_ctx_entry *e, lp_fsamples *fs)
{
    lp_addr_pair_count *br = NULL;
    long nb = lp_counters_branches(e->counters, &br), i;
    int rc = 0;

    if (nb < 0)
        return oom(g);
    for (i = 0; i < nb && rc == 0; i++)
        rc = boundary_one(g, e, fs, &br[i]);
    free(br);
    return rc;
}

/* ---- inferred call-site samples ------------------------------------------- */

static size_t depth_of(const char *key)
{
    size_t d = 1;
    for (; (key = strstr(key, " @ ")); key += 3)
        d++;
    return d;
}

/* getHeadSamplesEstimate of a flat CS profile without head samples: the
 * body count at the smallest location, at least 1 if the total is > 0. */
static uint64_t head_estimate(const lp_fsamples *fs, int *err)
{
    lp_body_view *v = NULL;
    size_t n = lp_fs_sorted_body(fs, &v);
    uint64_t c = 0;

    if (n == (size_t)-1) {
        *err = 1;
        return 0;
    }
    if (n > 0)
        c = v[0].count;
    lp_body_views_free(v, n);
    return c ? c : fs->total > 0;
}

/* Add the estimated call count of `fs` (depth >= 2, no head samples) at
 * its call site in the parent context. */
static int infer_one(gen *g, lp_fsamples *fs)
{
    lp_ctx_frame *f = NULL;
    char *buf = NULL;
    size_t n = 0;
    lp_fsamples *parent;
    lp_body_rec *b;
    lp_loc site;
    uint64_t est;
    int e = 0;

    if (lp_ctx_parse_key(fs->context, &f, &n, &buf) || n < 2) {
        free(f);
        free(buf);
        return n < 2 ? 0 : oom(g);
    }
    site = f[n - 2].loc;
    f[n - 2].loc = (lp_loc){0, 0};
    est = head_estimate(fs, &e);
    if (!est && !fs->body)
        est = 1;
    parent = e ? NULL : ctx_profile(g, f, n - 1);
    free(f);
    free(buf);
    if (!parent || !(b = lp_fs_body(parent, site)) ||
        lp_body_add_target(b, fs->name, est))
        return oom(g);
    lp_body_add(b, est);
    parent->total = lp_sat_add(parent->total, est);
    return 0;
}

/* populateInferredFunctionSamples: children before parents, i.e. deepest
 * contexts first (a node only changes its parent). */
static int infer_all(gen *g)
{
    lp_fsamples **all = NULL;
    size_t n, i, d, maxd = 0;
    int rc = 0;

    n = lp_profile_all(g->p, &all);
    if (n == (size_t)-1)
        return oom(g);
    for (i = 0; i < n; i++)
        if (depth_of(all[i]->context) > maxd)
            maxd = depth_of(all[i]->context);
    free(all);
    for (d = maxd; d >= 2 && rc == 0; d--) {
        n = lp_profile_all(g->p, &all); /* parents may have been added */
        if (n == (size_t)-1)
            return oom(g);
        for (i = 0; i < n && rc == 0; i++)
            if (depth_of(all[i]->context) == d && all[i]->head == 0)
                rc = infer_one(g, all[i]);
        free(all);
    }
    return rc;
}

/* ---- driver ------------------------------------------------------------------ */

int lp_accuracy_cs_profile(lp_binary *bin, const lp_ctxcount *cc, int binidx,
                           lp_profile *out, lp_error *err)
{
    gen g = {bin, out, err, lp_binary_fs_discriminator(bin)};
    lp_ctx_entry **v = NULL;
    lp_fsamples **all = NULL;
    long n = lp_ctxcount_sorted(cc, &v), i;
    size_t na, k;
    int rc = 0;

    if (n < 0)
        return oom(&g);
    out->is_cs = 1;
    for (i = 0; i < n && rc == 0; i++) {
        lp_fsamples *fs = NULL;
        if (v[i]->bin != binidx)
            continue;
        if (v[i]->nframes > 0) {
            if (!(fs = ctx_profile(&g, v[i]->frames, v[i]->nframes)))
                rc = -1;
            else if (v[i]->was_leaf_inlined)
                fs->attrs |= 1; /* ContextWasInlined */
            if (rc == 0)
                rc = body_samples(&g, fs, v[i]->counters);
        }
        if (rc == 0)
            rc = boundary_samples(&g, v[i], fs);
    }
    free(v);
    if (rc == 0)
        rc = infer_all(&g);
    if (rc == 0) {
        na = lp_profile_all(out, &all);
        if (na == (size_t)-1)
            return oom(&g);
        for (k = 0; k < na; k++)
            lp_fs_update_callsite_samples(all[k]);
        free(all);
    }
    return rc;
}
