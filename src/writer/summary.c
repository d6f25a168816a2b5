/*
 * summary.c - the profile summary LLVM stores in binary profiles and uses
 * for hot/cold thresholds (ProfileSummaryBuilder / SampleProfileSummary-
 * Builder): totals, maxima and the detailed summary for the 16 default
 * cutoffs, computed exactly like LLVM (128-bit DesiredCount, counts
 * visited in descending order, zero counts included). CS profiles are
 * flattened by function first, as LLVM's writers do; owns no I/O.
 */
#include <stdlib.h>

#include "lbr2prof/profile.h"

static const uint32_t default_cutoffs[LP_NR_CUTOFFS] = {
    10000, 100000, 200000, 300000, 400000, 500000, 600000, 700000,
    800000, 900000, 950000, 990000, 999000, 999900, 999990, 999999};

typedef struct count_vec {      /* every count added, for the cutoffs */
    uint64_t *v;
    size_t n, cap;
} count_vec;

static int add_count(lp_summary *s, count_vec *cv, uint64_t c)
{
    uint64_t *nv;

    s->total_count = lp_sat_add(s->total_count, c);
    if (c > s->max_count)
        s->max_count = c;
    s->num_counts++;
    if (cv->n == cv->cap) {
        cv->cap = cv->cap ? cv->cap * 2 : 256;
        nv = realloc(cv->v, cv->cap * sizeof *nv);
        if (!nv)
            return -1;
        cv->v = nv;
    }
    cv->v[cv->n++] = c;
    return 0;
}

/* llvm SampleProfileSummaryBuilder::addRecord */
static int add_record(lp_summary *s, count_vec *cv, const lp_fsamples *fs,
                      int is_callsite)
{
    lp_body_view *b = NULL;
    lp_callee_view *c = NULL;
    size_t nb, nc, i;
    int rc = 0;

    if (!is_callsite) {
        s->num_functions++;
        if (fs->head > s->max_function_count)
            s->max_function_count = fs->head;
    } else if (fs->attrs & 4) {
        return 0; /* ContextDuplicatedIntoBase */
    }
    nb = lp_fs_sorted_body(fs, &b);
    if (nb == (size_t)-1)
        return -1;
    for (i = 0; i < nb && rc == 0; i++)
        rc = add_count(s, cv, b[i].count);
    lp_body_views_free(b, nb);
    nc = lp_fs_sorted_callees(fs, &c);
    if (nc == (size_t)-1)
        return -1;
    for (i = 0; i < nc && rc == 0; i++)
        rc = add_record(s, cv, c[i].fs, 1);
    free(c);
    return rc;
}

static int desc_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x > y ? -1 : x < y;
}

/* llvm ProfileSummaryBuilder::computeDetailedSummary */
static void detailed(lp_summary *s, count_vec *cv)
{
    size_t i = 0, k;
    uint64_t seen = 0, sum = 0, count = 0, desired;
    uint64_t c;

    if (cv->n)
        qsort(cv->v, cv->n, sizeof *cv->v, desc_u64);
    for (k = 0; k < LP_NR_CUTOFFS; k++) {
        desired = (uint64_t)((unsigned __int128)s->total_count *
                             default_cutoffs[k] / 1000000u);
        while (sum < desired && i < cv->n) {
            c = cv->v[i];
            count = c;
            /* one map entry per distinct count: add all its copies */
            while (i < cv->n && cv->v[i] == c) {
                sum += c;
                seen++;
                i++;
            }
        }
        s->entries[k] = (lp_summary_entry){default_cutoffs[k], count, seen};
    }
}

static int summary_of(const lp_profile *p, lp_summary *s, lp_error *err);

/* ProfileConverter::flattenProfile(..., ProfileIsCS = true): contexts
 * merged by function, as SampleProfileSummaryBuilder does for CS maps */
int lp_profile_summary(const lp_profile *p, lp_summary *s, lp_error *err)
{
    lp_profile *flat;
    lp_fsamples **all = NULL, *e;
    size_t n, i;
    int rc = 0;

    if (!p->is_cs)
        return summary_of(p, s, err);
    if (!(flat = lp_profile_new()) || (n = lp_profile_all(p, &all)) == (size_t)-1) {
        lp_profile_free(flat);
        return lp_error_set(err, LP_ENOMEM, "profile summary: out of memory");
    }
    for (i = 0; i < n && rc == 0; i++)
        if (!(e = lp_profile_get(flat, all[i]->name, NULL)) || lp_fs_merge(e, all[i]))
            rc = lp_error_set(err, LP_ENOMEM, "profile summary: out of memory");
    free(all);
    if (rc == 0)
        rc = summary_of(flat, s, err);
    lp_profile_free(flat);
    return rc;
}

static int summary_of(const lp_profile *p, lp_summary *s, lp_error *err)
{
    count_vec cv = {0};
    lp_fsamples **all = NULL;
    size_t n, i;
    int rc = 0;

    *s = (lp_summary){0};
    n = lp_profile_all(p, &all);
    if (n == (size_t)-1)
        return lp_error_set(err, LP_ENOMEM, "profile summary: out of memory");
    for (i = 0; i < n && rc == 0; i++)
        rc = add_record(s, &cv, all[i], 0);
    free(all);
    if (rc == 0)
        detailed(s, &cv);
    free(cv.v);
    if (rc)
        return lp_error_set(err, LP_ENOMEM, "profile summary: out of memory");
    return 0;
}

uint64_t lp_summary_count_for_cutoff(const lp_summary *s, uint32_t cutoff)
{
    int k;

    for (k = 0; k < LP_NR_CUTOFFS; k++)
        if (s->entries[k].cutoff == cutoff)
            return s->entries[k].min_count;
    return 0;
}
