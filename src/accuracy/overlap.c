/*
 * overlap.c - the similarity measure of `llvm-profdata overlap --sample`
 * (LLVM 19 SampleOverlapAggregator), computed on lp_profile:
 *
 *   per top-level profile F (a context, or a function of a flat profile),
 *   SB/ST = Σ of its body counts (inlinees included) in base/test,
 *   PB/PT = Σ of all SB/ST;
 *   Diff(F) = Σ over body records at every inline level, matched by
 *             location (and inlinees by call site and name), of
 *             |b/SB - t/ST| (a record or inlinee on one side only counts
 *             with 0 on the other; an unmatched inlinee as one unit);
 *   FIS(F) = (2 - Diff) / 2, FS(F) = FIS × (1 - |SB/PB - ST/PT|);
 *   similarity = Σ over F in both of FS(F) × (SB/PB + ST/PT) / 2,
 *   rounded to 0 / 1 within 5e-6 as llvm-profdata does.
 *
 * Only body counts matter: call targets, totals and head samples do not.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "accuracy/acc_internal.h"

#define EPSILON 0.000005

typedef struct ovl {
    double sb, st;              /* this function's SB, ST */
    double diff;
    uint64_t overlap, uni;      /* Σ min, Σ max over units */
    int oom;
} ovl;

uint64_t lp_fs_body_sum(const lp_fsamples *fs)
{
    lp_body_view *b = NULL;
    lp_callee_view *c = NULL;
    size_t nb, nc, i;
    uint64_t s = 0;

    if (!fs)
        return 0;
    nb = lp_fs_sorted_body(fs, &b);
    for (i = 0; nb != (size_t)-1 && i < nb; i++)
        s = lp_sat_add(s, b[i].count);
    if (nb != (size_t)-1)
        lp_body_views_free(b, nb);
    nc = lp_fs_sorted_callees(fs, &c);
    for (i = 0; nc != (size_t)-1 && i < nc; i++)
        s = lp_sat_add(s, lp_fs_body_sum(c[i].fs));
    free(c);
    return s;
}

static int loc_cmp(lp_loc a, lp_loc b)
{
    if (a.line != b.line)
        return a.line < b.line ? -1 : 1;
    return a.disc < b.disc ? -1 : a.disc > b.disc;
}

/* One unit with counts b (base) and t (test). */
static void unit(ovl *o, uint64_t b, uint64_t t)
{
    double bf = o->sb > 0 ? (double)b / o->sb : 0.0;
    double tf = o->st > 0 ? (double)t / o->st : 0.0;

    o->diff += fabs(bf - tf);
    o->overlap += b < t ? b : t;
    o->uni += b > t ? b : t;
}

static void walk(ovl *o, const lp_fsamples *b, const lp_fsamples *t);

static void bodies(ovl *o, const lp_fsamples *b, const lp_fsamples *t)
{
    lp_body_view *vb = NULL, *vt = NULL;
    size_t nb = lp_fs_sorted_body(b, &vb), nt = lp_fs_sorted_body(t, &vt);
    size_t i = 0, j = 0;
    int c;

    if (nb == (size_t)-1 || nt == (size_t)-1) {
        o->oom = 1;
        nb = nb == (size_t)-1 ? 0 : nb;
        nt = nt == (size_t)-1 ? 0 : nt;
    }
    while (!o->oom && (i < nb || j < nt)) {
        c = i == nb ? 1 : j == nt ? -1 : loc_cmp(vb[i].loc, vt[j].loc);
        if (c < 0)
            unit(o, vb[i++].count, 0);
        else if (c > 0)
            unit(o, 0, vt[j++].count);
        else {
            unit(o, vb[i].count, vt[j].count);
            i++;
            j++;
        }
    }
    lp_body_views_free(vb, nb);
    lp_body_views_free(vt, nt);
}

static void callees(ovl *o, const lp_fsamples *b, const lp_fsamples *t)
{
    lp_callee_view *cb = NULL, *ct = NULL;
    size_t nb = lp_fs_sorted_callees(b, &cb), nt = lp_fs_sorted_callees(t, &ct);
    size_t i = 0, j = 0;
    int c;

    if (nb == (size_t)-1 || nt == (size_t)-1) {
        o->oom = 1;
        nb = nt = 0;
    }
    while (i < nb || j < nt) {
        c = i == nb ? 1 : j == nt ? -1 : loc_cmp(cb[i].loc, ct[j].loc);
        if (c == 0)
            c = strcmp(cb[i].fs->name, ct[j].fs->name);
        if (c < 0)
            unit(o, lp_fs_body_sum(cb[i++].fs), 0);
        else if (c > 0)
            unit(o, 0, lp_fs_body_sum(ct[j++].fs));
        else
            walk(o, cb[i++].fs, ct[j++].fs);
    }
    free(cb);
    free(ct);
}

static void walk(ovl *o, const lp_fsamples *b, const lp_fsamples *t)
{
    bodies(o, b, t);
    callees(o, b, t);
}

static double func_sim(ovl *o, const lp_fsamples *b, const lp_fsamples *t,
                       uint64_t pb, uint64_t pt)
{
    double fis, bw, tw;

    o->sb = (double)lp_fs_body_sum(b);
    o->st = (double)lp_fs_body_sum(t);
    if (b && t) {
        walk(o, b, t);
        fis = (2.0 - o->diff) / 2;
        if (fabs(fis) < EPSILON)
            fis = 0;
    } else {
        fis = 0;
    }
    bw = pb ? o->sb / (double)pb : 0.0;
    tw = pt ? o->st / (double)pt : 0.0;
    return fis * (1 - fabs(bw - tw));
}

double lp_overlap_func(const lp_fsamples *base, const lp_fsamples *test,
                       uint64_t base_total, uint64_t test_total)
{
    ovl o;

    memset(&o, 0, sizeof o);
    return func_sim(&o, base, test, base_total, test_total);
}

static uint64_t profile_sum(lp_fsamples **v, size_t n)
{
    uint64_t s = 0;
    size_t i;

    for (i = 0; i < n; i++)
        s = lp_sat_add(s, lp_fs_body_sum(v[i]));
    return s;
}

int lp_overlap_sample(const lp_profile *base, const lp_profile *test,
                      lp_overlap *out, lp_error *err)
{
    lp_fsamples **vb = NULL, **vt = NULL;
    size_t nb = lp_profile_all(base, &vb), nt, i;
    double sim = 0, fs, bw, tw;
    ovl o;

    memset(out, 0, sizeof *out);
    memset(&o, 0, sizeof o);
    nt = lp_profile_all(test, &vt);
    if (nb == (size_t)-1 || nt == (size_t)-1) {
        free(nb == (size_t)-1 ? NULL : vb);
        free(nt == (size_t)-1 ? NULL : vt);
        return lp_error_set(err, LP_ENOMEM, "overlap: out of memory");
    }
    out->base_sample = profile_sum(vb, nb);
    out->test_sample = profile_sum(vt, nt);
    for (i = 0; i < nt; i++) {
        const lp_fsamples *b = lp_profile_find(base, vt[i]->context);
        memset(&o, 0, sizeof o);
        if (!b) {
            out->test_unique_funcs++;
            out->union_sample += lp_fs_body_sum(vt[i]);
            continue;
        }
        out->overlap_funcs++;
        fs = func_sim(&o, b, vt[i], out->base_sample, out->test_sample);
        bw = out->base_sample ? o.sb / (double)out->base_sample / 2 : 0.0;
        tw = out->test_sample ? o.st / (double)out->test_sample / 2 : 0.0;
        sim += fs * (bw + tw);
        out->overlap_sample += o.overlap;
        out->union_sample += o.uni;
        if (o.oom)
            break;
    }
    for (i = 0; i < nb; i++)
        if (!lp_profile_find(test, vb[i]->context)) {
            out->base_unique_funcs++;
            out->union_sample += lp_fs_body_sum(vb[i]);
        }
    free(vb);
    free(vt);
    if (o.oom)
        return lp_error_set(err, LP_ENOMEM, "overlap: out of memory");
    out->similarity = fabs(sim - 1) < EPSILON ? 1 : sim;
    return 0;
}

uint64_t acc_min_sum(const lp_fsamples *a, const lp_fsamples *b)
{
    ovl o;

    memset(&o, 0, sizeof o);
    if (!a || !b)
        return 0;
    walk(&o, a, b);
    return o.overlap;
}
