/*
 * merge.c - merging whole sample profiles as `llvm-profdata merge
 * --sample` does: each input's top-level profiles merged into the output
 * by context with the input's weight (FunctionSamples::merge), the
 * profile kinds checked (probe-based with probe-based, CS with CS), and
 * the conversion of a profile's names to MD5 names when inputs mix both.
 * Owns the profile-level rules; counting is model.c's.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/profile.h"

int lp_profile_merge(lp_profile *dst, const lp_profile *src, uint64_t weight,
                     int first, lp_merge_warn_fn warn, void *ctx,
                     lp_error *err)
{
    lp_fsamples **v = NULL, *d;
    size_t n, i;
    unsigned st;
    int fresh;

    if (!first && dst->is_probe != src->is_probe)
        return lp_error_set(err, LP_EUNSUPP, "cannot merge probe-based profile "
                            "with non-probe-based profile");
    if (!first && dst->is_cs != src->is_cs)
        return lp_error_set(err, LP_EUNSUPP, "cannot merge CS profile with "
                            "non-CS profile");
    dst->is_probe = src->is_probe;
    dst->is_cs = src->is_cs;
    dst->is_preinlined |= src->is_preinlined;
    dst->is_fs |= src->is_fs;
    if ((n = lp_profile_sorted(src, &v)) == (size_t)-1)
        return lp_error_set(err, LP_ENOMEM, "merge: out of memory");
    for (i = 0; i < n; i++) {
        fresh = !lp_profile_find(dst, v[i]->context);
        if (!(d = lp_profile_get(dst, v[i]->context,
                                 src->is_cs ? v[i]->name : NULL)))
            break;
        if (fresh)
            d->attrs = v[i]->attrs; /* the new profile takes the context */
        st = 0;
        if (lp_fs_merge_weighted(d, v[i], weight, &st))
            break;
        if (st && warn)
            warn(ctx, v[i]->context, st);
    }
    free(v);
    if (i < n)
        return lp_error_set(err, LP_ENOMEM, "merge: out of memory");
    return 0;
}

/* ---- MD5 names ------------------------------------------------------------------ */

/* the MD5 name of `name` (itself if it is one) into b */
static const char *md5_of(const char *name, char b[24])
{
    snprintf(b, 24, "%" PRIu64, lp_name_hash(name));
    return b;
}

/* a printed context with every frame's name replaced by its MD5 name */
static char *md5_context(const char *ctx)
{
    size_t n = lp_context_split(ctx, NULL, 0), i, len = 0;
    lp_context_frame *f = malloc((n ? n : 1) * sizeof *f);
    char *out = NULL, *o, *name, b[24];

    if (!f || !(out = o = malloc(n * 50 + 1))) {
        free(f);
        return NULL;
    }
    lp_context_split(ctx, f, n);
    for (i = 0; i < n && (name = strndup(f[i].name, f[i].len)); i++) {
        o += sprintf(o, "%s%s", i ? " @ " : "", md5_of(name, b));
        if (i + 1 < n)
            o += sprintf(o, f[i].loc.disc ? ":%u.%u" : ":%u", f[i].loc.line,
                         f[i].loc.disc);
        free(name);
        len++;
    }
    free(f);
    if (len < n) {
        free(out);
        return NULL;
    }
    *o = 0;
    return out;
}

/* body, inlinees and metadata of src into dst, names as MD5 names */
static int copy_md5(lp_fsamples *dst, const lp_fsamples *src)
{
    lp_body_view *b = NULL;
    lp_callee_view *c = NULL;
    size_t nb = lp_fs_sorted_body(src, &b), nc, i, j;
    lp_body_rec *r;
    lp_fsamples *e;
    char h[24];
    int rc = 0;

    if (nb == (size_t)-1)
        return -1;
    /* added, not set: a name and its MD5 name meet (as in LLVM's map) */
    dst->total = lp_sat_add(dst->total, src->total);
    dst->head = lp_sat_add(dst->head, src->head);
    dst->attrs = dst->attrs ? dst->attrs : src->attrs;
    dst->checksum = dst->checksum ? dst->checksum : src->checksum;
    for (i = 0; i < nb && rc == 0; i++) {
        if (!(r = lp_fs_body(dst, b[i].loc)))
            rc = -1;
        else
            lp_body_add(r, b[i].count);
        for (j = 0; rc == 0 && j < b[i].nr_targets; j++)
            rc = lp_body_add_target(r, md5_of(b[i].targets[j].name, h),
                                    b[i].targets[j].count);
    }
    lp_body_views_free(b, nb);
    if (rc || (nc = lp_fs_sorted_callees(src, &c)) == (size_t)-1)
        return -1;
    for (i = 0; i < nc && rc == 0; i++)
        rc = (e = lp_fs_callee(dst, c[i].loc, md5_of(c[i].fs->name, h)))
                 ? copy_md5(e, c[i].fs) : -1;
    free(c);
    return rc;
}

lp_profile *lp_profile_md5_names(const lp_profile *p, lp_error *err)
{
    lp_profile *q = lp_profile_new();
    lp_fsamples **v = NULL, *d;
    size_t n = q ? lp_profile_sorted(p, &v) : (size_t)-1, i;
    char *ctx = NULL, h[24];
    int rc = n == (size_t)-1 ? -1 : 0;

    for (i = 0; rc == 0 && i < n; i++) {
        if (p->is_cs && !(ctx = md5_context(v[i]->context)))
            rc = -1;
        else if (!(d = lp_profile_get(q, p->is_cs ? ctx : md5_of(v[i]->name, h),
                                      p->is_cs ? md5_of(v[i]->name, h) : NULL)))
            rc = -1;
        else
            rc = copy_md5(d, v[i]);
        free(ctx);
        ctx = NULL;
    }
    free(v);
    if (rc) {
        lp_profile_free(q);
        lp_error_set(err, LP_ENOMEM, "merge: out of memory");
        return NULL;
    }
    q->is_cs = p->is_cs;
    q->is_preinlined = p->is_preinlined;
    q->is_probe = p->is_probe;
    q->is_fs = p->is_fs;
    return q;
}
