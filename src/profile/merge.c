/*
 * merge.c - merging whole sample profiles as `llvm-profdata merge
 * --sample` does: each input's top-level profiles merged into the output
 * by context with the input's weight (FunctionSamples::merge), the
 * profile kinds checked (probe-based with probe-based, CS with CS), the
 * conversion of a profile's names to MD5 names when inputs mix both, and
 * the merge of a list of files (failure modes, symbol lists, warnings).
 * Owns the profile-level rules; counting is model.c's.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/profile.h"
#include "lbr2prof/warn.h"

int lp_profile_merge(lp_profile *dst, const lp_profile *src, uint64_t weight,
                     int first, lp_merge_warn_fn warn, void *ctx,
                     lp_error *err)
{
    lp_fsamples **v = NULL, *d;
    size_t n, i;
    unsigned st;
    int fresh;

    if (!first && dst->is_probe_based != src->is_probe_based)
        return lp_error_set(err, LP_EUNSUPP, "cannot merge probe-based profile "
                            "with non-probe-based profile");
    if (!first && dst->is_cs != src->is_cs)
        return lp_error_set(err, LP_EUNSUPP, "cannot merge CS profile with "
                            "non-CS profile");
    dst->is_probe_based = src->is_probe_based;
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
    q->is_probe_based = p->is_probe_based;
    q->is_fs = p->is_fs;
    return q;
}

/* ---- merging files ----------------------------------------------------------------- */

typedef struct merge_state {
    lp_merge_result *res;
    int out_md5;                /* the output's names are MD5 names */
    lp_warn_fn warn;
    void *ctx;
    const char *path;           /* the input being merged (warnings) */
} merge_state;

static void context_warn(void *ctx, const char *context, unsigned st)
{
    merge_state *m = ctx;

    if (st & LP_MERGE_HASH_MISMATCH)
        lp_warnf(m->warn, m->ctx, "%s: %s: function hash mismatch (CFG "
                 "checksums differ): not merged", m->path, context);
    if (st & LP_MERGE_OVERFLOW)
        lp_warnf(m->warn, m->ctx, "%s: %s: counter overflow (saturated)",
                 m->path, context);
}

static int add_symbols(lp_merge_result *r, const lp_prof_info *info)
{
    char **nv;
    size_t i;

    for (i = 0; i < info->nr_symbols; i++) {
        if (!(nv = realloc(r->symbols, (r->nr_symbols + 1) * sizeof *nv)))
            return -1;
        r->symbols = nv;
        if (!(nv[r->nr_symbols] = strdup(info->symbols[i])))
            return -1;
        r->nr_symbols++;
    }
    return 0;
}

/* *p replaced by its copy with MD5 names */
static int to_md5(lp_profile **p, lp_error *err)
{
    lp_profile *q = lp_profile_md5_names(*p, err);

    if (!q)
        return -1;
    lp_profile_free(*p);
    *p = q;
    return 0;
}

/* One input into the result; 1 if it could not be read (err says why). */
static int merge_file(merge_state *m, const lp_merge_input *in, int keep_syms,
                      lp_error *err)
{
    lp_merge_result *r = m->res;
    int first = r->merged == 0, rc = 0;
    lp_prof_info info;
    lp_profile *p = lp_profile_read(in->path, &info, err);

    if (!p)
        return err->code == LP_ENOMEM ? -1 : 1;
    if (first)
        m->out_md5 = info.md5;
    else if (m->out_md5 && !info.md5)
        rc = to_md5(&p, err);
    else if (!m->out_md5 && info.md5 && (rc = to_md5(&r->profile, err)) == 0)
        m->out_md5 = 1;
    m->path = in->path;
    if (rc == 0 && lp_profile_merge(r->profile, p, in->weight, first,
                                    context_warn, m, err))
        rc = lp_error_prefix(err, "%s", in->path);
    if (rc == 0 && keep_syms && add_symbols(r, &info))
        rc = lp_error_set(err, LP_ENOMEM, "merge: out of memory");
    r->merged += rc == 0;
    lp_prof_info_free(&info);
    lp_profile_free(p);
    return rc;
}

int lp_profile_merge_files(const lp_merge_input *in, size_t n,
                           const lp_merge_opts *o, lp_merge_result *res,
                           lp_error *err)
{
    merge_state m = {res, 0, o->warn, o->ctx, NULL};
    size_t i;
    int rc = 0;

    memset(res, 0, sizeof *res);
    if (!(res->profile = lp_profile_new()))
        return lp_error_set(err, LP_ENOMEM, "merge: out of memory");
    for (i = 0; rc == 0 && i < n; i++) {
        rc = merge_file(&m, &in[i], o->keep_symbols, err);
        if (rc == 1 && o->fail_mode != LP_MERGE_FAIL_ANY) {
            lp_warnf(o->warn, o->ctx, "%s (skipped)", err->msg);
            lp_error_clear(err);
            res->skipped++;
            rc = 0;
        }
    }
    if (rc == 0 && res->merged == 0)
        rc = lp_error_set(err, LP_EFORMAT, "no profile could be merged");
    if (rc) {
        lp_merge_result_free(res);
        return -1;
    }
    return 0;
}

void lp_merge_result_free(lp_merge_result *r)
{
    size_t i;

    lp_profile_free(r->profile);
    for (i = 0; i < r->nr_symbols; i++)
        free(r->symbols[i]);
    free(r->symbols);
    memset(r, 0, sizeof *r);
}
