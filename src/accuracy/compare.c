/*
 * compare.c - a profile against the ideal one (docs/accuracy.md):
 *
 *   unit     = (top-level key: context or function, inline call-site path,
 *               location) with its body count;
 *   matched  = Σ over units of min(ideal, profile): counts in the right
 *              context at the right location;
 *   accuracy = matched / Σ ideal;
 *   matched_fn = the same after summing the contexts of each leaf
 *              function (right function and line, any context);
 *   a context is right when both have body counts in it, missing when
 *   only the ideal has, truncated when only the profile has and it is a
 *   proper suffix of a true context (callers cut at an unknown frame) or,
 *   for pseudo-probe profiles, a true context as the machine's stack has
 *   it (tail-call frames left out) or a suffix of one, wrong when only
 *   the profile has and it is none of these.
 *
 * Plus llvm-profdata's overlap similarity of the pair and of the context-
 * less pair. Printing is report.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "accuracy/acc_internal.h"

typedef struct fn_ent {
    lp_acc_func f;
    UT_hash_handle hh;
} fn_ent;

typedef struct suffix_ent {     /* a proper suffix of a true context */
    const char *key;
    UT_hash_handle hh;
} suffix_ent;

/* ---- collapsing contexts ---------------------------------------------------- */

lp_profile *lp_profile_collapse_contexts(const lp_profile *cs, lp_error *err)
{
    lp_profile *out = lp_profile_new();
    lp_fsamples **v = NULL, *d;
    size_t n, i;
    int rc = 0;

    if (!out || (n = lp_profile_all(cs, &v)) == (size_t)-1) {
        lp_profile_free(out);
        lp_error_set(err, LP_ENOMEM, "out of memory");
        return NULL;
    }
    for (i = 0; i < n && rc == 0; i++) {
        d = lp_profile_get(out, v[i]->name, NULL);
        rc = d ? lp_fs_merge(d, v[i]) : -1;
    }
    free(v);
    if (rc) {
        lp_profile_free(out);
        lp_error_set(err, LP_ENOMEM, "out of memory");
        return NULL;
    }
    return out;
}

/* ---- contexts ------------------------------------------------------------ */

/* Does the context repeat a function (recursion)? -1 on no memory. */
static int has_repeat(const char *key)
{
    size_t n = lp_context_split(key, NULL, 0), i, j;
    lp_context_frame *f = malloc((n + 1) * sizeof *f);
    int rep = 0;

    if (!f)
        return -1;
    lp_context_split(key, f, n);
    for (i = 0; i < n && !rep; i++)
        for (j = i + 1; j < n && !rep; j++)
            rep = f[i].len == f[j].len && !memcmp(f[i].name, f[j].name, f[i].len);
    free(f);
    return rep;
}

static int ctx_order(const void *x, const void *y)
{
    const lp_acc_ctx *a = x, *b = y;

    if (a->ideal != b->ideal)
        return a->ideal > b->ideal ? -1 : 1;
    if (a->actual != b->actual)
        return a->actual > b->actual ? -1 : 1;
    return strcmp(a->key, b->key);
}

static int fn_order(const void *x, const void *y)
{
    const lp_acc_func *a = x, *b = y;

    if (a->ideal != b->ideal)
        return a->ideal > b->ideal ? -1 : 1;
    if (a->actual != b->actual)
        return a->actual > b->actual ? -1 : 1;
    return strcmp(a->name, b->name);
}

static int add_key(suffix_ent **set, const char *p)
{
    suffix_ent *e;

    HASH_FIND_STR(*set, p, e);
    if (e)
        return 0;
    if (!(e = malloc(sizeof *e)))
        return -1;
    e->key = p;
    HASH_ADD_KEYPTR(hh, *set, e->key, strlen(e->key), e);
    return 0;
}

/* The proper suffixes of the contexts of v (the text after each " @ "),
 * and with `whole` the contexts themselves, pointing into the keys. 0, or
 * -1 on no memory. */
static int add_suffixes(suffix_ent **set, lp_fsamples *const *v, size_t n,
                        bool whole)
{
    const char *p;
    size_t k;

    for (k = 0; k < n; k++) {
        if (whole && v[k]->context && add_key(set, v[k]->context))
            return -1;
        for (p = v[k]->context; p && (p = strstr(p, " @ ")); ) {
            p += 3;
            if (add_key(set, p))
                return -1;
        }
    }
    return 0;
}

static void free_suffixes(suffix_ent **set)
{
    suffix_ent *e, *t;

    HASH_ITER(hh, *set, e, t) {
        HASH_DEL(*set, e);
        free(e);
    }
}

static void count_status(lp_accuracy *a, const lp_acc_ctx *c, int rep)
{
    if (c->status == LP_CTX_RIGHT)
        a->right++;
    else if (c->status == LP_CTX_MISSING) {
        a->missing++;
        a->recursive_missing += (size_t)rep;
    } else if (c->status == LP_CTX_TRUNCATED) {
        a->truncated++;
        a->truncated_counts += c->actual;
    } else {
        a->wrong++;
        a->wrong_counts += c->actual;
    }
}

/* One context (either profile may lack it; `cut`: the profile's is a
 * truncated true one). 0: listed, 1: both empty, -1: no memory. */
static int one_ctx(lp_accuracy *a, const lp_fsamples *i, const lp_fsamples *p,
                   uint64_t pi, uint64_t pp, bool cut, lp_acc_ctx *c)
{
    const lp_fsamples *any = i ? i : p;
    int rep;

    c->key = any->context;
    c->func = any->name;
    c->ideal = lp_fs_body_sum(i);
    c->actual = lp_fs_body_sum(p);
    if (!c->ideal && !c->actual)
        return 1;
    if ((rep = has_repeat(c->key)) < 0)
        return -1;
    c->matched = acc_min_sum(i, p);
    c->similarity = lp_overlap_func(i, p, pi, pp);
    c->status = c->ideal ? (c->actual ? LP_CTX_RIGHT : LP_CTX_MISSING)
                         : cut ? LP_CTX_TRUNCATED : LP_CTX_WRONG;
    a->ideal += c->ideal;
    a->actual += c->actual;
    a->matched += c->matched;
    count_status(a, c, rep);
    if (c->actual && rep)
        a->recursive_in_profile++;
    return 0;
}

static int build_ctx(lp_accuracy *a, const lp_profile *ideal,
                     const lp_profile *alt, const lp_profile *prof)
{
    lp_fsamples **vi = NULL, **vp = NULL, **va = NULL;
    size_t ni = lp_profile_all(ideal, &vi), np = lp_profile_all(prof, &vp), k;
    size_t na = alt ? lp_profile_all(alt, &va) : 0;
    uint64_t pi = 0, pp = 0;
    suffix_ent *cut = NULL, *e;
    int r = 0;

    if (ni == (size_t)-1 || np == (size_t)-1 || na == (size_t)-1 ||
        !(a->ctx = calloc(ni + np + 1, sizeof *a->ctx)) ||
        add_suffixes(&cut, vi, ni, false) || add_suffixes(&cut, va, na, true)) {
        free(ni == (size_t)-1 ? NULL : vi);
        free(np == (size_t)-1 ? NULL : vp);
        free(na == (size_t)-1 ? NULL : va);
        free_suffixes(&cut);
        return -1;
    }
    for (k = 0; k < ni; k++)
        pi += lp_fs_body_sum(vi[k]);
    for (k = 0; k < np; k++)
        pp += lp_fs_body_sum(vp[k]);
    for (k = 0; k < ni && r >= 0; k++)
        if (!(r = one_ctx(a, vi[k], lp_profile_find(prof, vi[k]->context), pi,
                          pp, false, &a->ctx[a->nctx])))
            a->nctx++;
    for (k = 0; k < np && r >= 0; k++) {
        if (lp_profile_find(ideal, vp[k]->context))
            continue;
        e = NULL;
        if (vp[k]->context)
            HASH_FIND_STR(cut, vp[k]->context, e);
        if (!(r = one_ctx(a, NULL, vp[k], pi, pp, e != NULL, &a->ctx[a->nctx])))
            a->nctx++;
    }
    free_suffixes(&cut);
    free(vi);
    free(vp);
    free(va);
    qsort(a->ctx, a->nctx, sizeof *a->ctx, ctx_order);
    return r < 0 ? -1 : 0;
}

/* ---- functions ------------------------------------------------------------- */

static int build_fn(lp_accuracy *a, const lp_profile *ci, const lp_profile *cp)
{
    fn_ent *h = NULL, *e, *t;
    uint64_t ti = a->ideal, tp = a->actual;
    size_t k;
    int rc = 0;

    for (k = 0; k < a->nctx && rc == 0; k++) {
        const lp_acc_ctx *c = &a->ctx[k];
        HASH_FIND_STR(h, c->func, e);
        if (!e) {
            if (!(e = calloc(1, sizeof *e))) {
                rc = -1;
                break;
            }
            e->f.name = c->func;
            HASH_ADD_KEYPTR(hh, h, e->f.name, strlen(e->f.name), e);
        }
        e->f.ideal += c->ideal;
        e->f.actual += c->actual;
        e->f.matched += c->matched;
        e->f.right += c->status == LP_CTX_RIGHT;
        e->f.missing += c->status == LP_CTX_MISSING;
        e->f.wrong += c->status == LP_CTX_WRONG;
        e->f.truncated += c->status == LP_CTX_TRUNCATED;
    }
    if (rc == 0 && !(a->fn = calloc(HASH_COUNT(h) + 1, sizeof *a->fn)))
        rc = -1;
    HASH_ITER(hh, h, e, t) {
        if (rc == 0) {
            const lp_fsamples *i = lp_profile_find(ci, e->f.name);
            const lp_fsamples *p = lp_profile_find(cp, e->f.name);
            e->f.matched_fn = acc_min_sum(i, p);
            e->f.similarity = lp_overlap_func(i, p, ti, tp);
            a->matched_fn += e->f.matched_fn;
            a->fn[a->nfn++] = e->f;
        }
        HASH_DEL(h, e);
        free(e);
    }
    if (rc == 0)
        qsort(a->fn, a->nfn, sizeof *a->fn, fn_order);
    return rc;
}

int lp_accuracy_compare(const lp_profile *ideal, const lp_profile *prof,
                        lp_accuracy *out, lp_error *err)
{
    return lp_accuracy_compare_alt(ideal, NULL, prof, out, err);
}

int lp_accuracy_compare_alt(const lp_profile *ideal, const lp_profile *alt,
                            const lp_profile *prof, lp_accuracy *out,
                            lp_error *err)
{
    lp_profile *ci = NULL, *cp = NULL;
    lp_overlap ov;
    int rc = 0;

    memset(out, 0, sizeof *out);
    if (!!ideal->is_cs != !!prof->is_cs)
        return lp_error_set(err, LP_EUSAGE, "cannot compare a %s profile with "
                            "a %s ideal profile", prof->is_cs ? "CS" : "flat",
                            ideal->is_cs ? "CS" : "flat");
    out->cs = prof->is_cs;
    if (build_ctx(out, ideal, alt, prof) ||
        lp_overlap_sample(ideal, prof, &ov, err))
        goto fail;
    out->similarity = ov.similarity;
    if (out->cs) {
        if (!(ci = lp_profile_collapse_contexts(ideal, err)) ||
            !(cp = lp_profile_collapse_contexts(prof, err)) ||
            lp_overlap_sample(ci, cp, &ov, err))
            goto fail;
        out->similarity_fn = ov.similarity;
    } else {
        out->similarity_fn = out->similarity;
    }
    if (build_fn(out, ci ? ci : ideal, cp ? cp : prof))
        goto fail;
    lp_profile_free(ci);
    lp_profile_free(cp);
    return 0;
fail:
    if (!err || !err->code)
        lp_error_set(err, LP_ENOMEM, "accuracy: out of memory");
    lp_profile_free(ci);
    lp_profile_free(cp);
    lp_accuracy_free(out);
    rc = -1;
    return rc;
}

void lp_accuracy_free(lp_accuracy *a)
{
    free(a->ctx);
    free(a->fn);
    a->ctx = NULL;
    a->fn = NULL;
    a->nctx = a->nfn = 0;
}

/* ---- comparability ----------------------------------------------------------- */

int lp_accuracy_profile_flags(const char *path, const lp_profile *p,
                              lp_error *err)
{
    FILE *f = fopen(path, "re");
    char line[512];
    unsigned long attrs;
    lp_fsamples **v = NULL;
    lp_callee_view *c = NULL;
    size_t n, i, nc;
    int flags = p->is_cs ? 0 : LP_ACC_NOT_CS;

    if (!f)
        return lp_error_set(err, LP_EIO, "%s: %s", path, strerror(errno));
    while (fgets(line, sizeof line, f))
        if (sscanf(line, " !Attributes: %lu", &attrs) == 1 && (attrs & 2))
            flags |= LP_ACC_PREINLINED;
    fclose(f);
    if (!p->is_cs)
        return flags;
    if ((n = lp_profile_all(p, &v)) == (size_t)-1)
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    for (i = 0; i < n && !(flags & LP_ACC_NESTED); i++) {
        nc = lp_fs_sorted_callees(v[i], &c);
        if (nc && nc != (size_t)-1)
            flags |= LP_ACC_NESTED;
        free(nc == (size_t)-1 ? NULL : c);
        c = NULL;
    }
    free(v);
    return flags;
}
