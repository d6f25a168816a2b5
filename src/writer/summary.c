/*
 * summary.c - the profile summary LLVM stores in binary profiles and uses
 * for hot/cold thresholds (ProfileSummaryBuilder / SampleProfileSummary-
 * Builder): totals, maxima and the detailed summary for the 16 default
 * cutoffs, computed exactly like LLVM (128-bit DesiredCount, counts
 * visited in descending order, zero counts included). CS profiles are
 * flattened by function first, as LLVM's writers do; owns no I/O.
 */
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "lbr2prof/profile.h"
#include "util/job.h"
#include "util/zalloc.h"

static const uint32_t default_cutoffs[LP_NR_CUTOFFS] = {
    10000, 100000, 200000, 300000, 400000, 500000, 600000, 700000,
    800000, 900000, 950000, 990000, 999000, 999900, 999990, 999999};

typedef struct fcount {         /* one body count of one function */
    uint32_t id;
    lp_loc loc;
    uint64_t count;
} fcount;

/* Open addressing on (function id, location) summing the counts: the
 * summary needs the multiset of sums, in no order, so this replaces a sort
 * of every body record (a 24-byte record per record and qsort's temporary
 * copy) by one slot per distinct (function, location). */
typedef struct fsum_tab {
    fcount *v;                  /* id + 1 in v[i].id; 0: empty */
    size_t mask, n;
} fsum_tab;

static fcount *fsum_slot(const fsum_tab *t, uint32_t id, lp_loc loc)
{
    /* every key bit reaches the low bits (the old multiplicative hash left
     * the function id out of them: long probe runs) */
    uint64_t h = (((uint64_t)id << 32) | loc.line) * 0x9e3779b97f4a7c15ull ^
                 (uint64_t)loc.disc * 0xc2b2ae3d27d4eb4full;
    size_t i;

    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    i = (size_t)(h ^ (h >> 33)) & t->mask;

    while (t->v[i].id && (t->v[i].id != id + 1 || t->v[i].loc.line != loc.line ||
                          t->v[i].loc.disc != loc.disc))
        i = (i + 1) & t->mask;
    return &t->v[i];
}

static inline int fsum_add(fsum_tab *t, uint32_t id, lp_loc loc, uint64_t count)
{
    fcount *f;

    if ((t->n + 1) * 4 > (t->mask + 1) * 3) {   /* at most 3/4 full */
        fsum_tab g = {0};
        size_t i, n = t->v ? (t->mask + 1) * 2 : 4096;
        if (!(g.v = lp_zalloc_written(n * sizeof *g.v)))  /* probed first */
            return -1;
        g.mask = n - 1;
        g.n = t->n;
        for (i = 0; t->v && i <= t->mask; i++)
            if (t->v[i].id)
                *fsum_slot(&g, t->v[i].id - 1, t->v[i].loc) = t->v[i];
        free(t->v);
        *t = g;
    }
    f = fsum_slot(t, id, loc);
    if (!f->id) {
        *f = (fcount){id + 1, loc, 0};
        t->n++;
    }
    f->count = lp_sat_add(f->count, count);
    return 0;
}

/* Every count added, as LLVM's CountFrequencies map: each distinct count
 * (kept in loc: low and high halves, id 0) and how many times it came (in
 * count). The detailed summary walks the distinct counts in descending
 * order, so it sorts those (a few thousand), not every count. */
typedef fsum_tab count_vec;

static uint64_t count_of(const fcount *f)
{
    return (uint64_t)f->loc.disc << 32 | f->loc.line;
}

static int add_count(lp_summary *s, count_vec *cv, uint64_t c)
{
    s->total_count = lp_sat_add(s->total_count, c);
    if (c > s->max_count)
        s->max_count = c;
    s->num_counts++;
    return fsum_add(cv, 0, (lp_loc){(uint32_t)c, (uint32_t)(c >> 32)}, 1);
}

/* llvm SampleProfileSummaryBuilder::addRecord. The counts go in as they
 * are stored: their order does not matter (detailed() sorts them all, the
 * totals saturate the same in any order). */
static int add_record(lp_summary *s, count_vec *cv, const lp_fsamples *fs,
                      int is_callsite)
{
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
    nb = lp_fs_nr_body(fs);
    for (i = 0; i < nb && rc == 0; i++)
        rc = add_count(s, cv, lp_body_count(lp_fs_body_at(fs, i)));
    nc = lp_fs_sorted_callees(fs, &c);
    if (nc == (size_t)-1)
        return -1;
    for (i = 0; i < nc && rc == 0; i++)
        rc = add_record(s, cv, c[i].fs, 1);
    free(c);
    return rc;
}

static int desc_count(const void *a, const void *b)
{
    uint64_t x = count_of(a), y = count_of(b);

    return x > y ? -1 : x < y;
}

/* llvm ProfileSummaryBuilder::computeDetailedSummary (its map from count
 * to frequency, walked from the largest count). The slots are packed and
 * sorted in place. */
static void detailed(lp_summary *s, count_vec *cv)
{
    size_t i, j = 0, n = 0;
    uint64_t seen = 0, sum = 0, count = 0, desired;
    fcount *v = cv->v;

    for (i = 0; v && i <= cv->mask; i++)
        if (v[i].id)
            v[n++] = v[i];
    if (n > 1)
        qsort(v, n, sizeof *v, desc_count);
    for (i = 0; i < LP_NR_CUTOFFS; i++) {
        desired = (uint64_t)((unsigned __int128)s->total_count *
                             default_cutoffs[i] / 1000000u);
        for (; sum < desired && j < n; j++) {
            count = count_of(&v[j]);
            sum += count * v[j].count;  /* as that many additions, mod 2^64 */
            seen += v[j].count;
        }
        s->entries[i] = (lp_summary_entry){default_cutoffs[i], count, seen};
    }
}

/* One function's body counts summed by location: open addressing on
 * the location, reused from function to function without clearing (a
 * slot is the current function's iff its id is; others count as empty).
 * A function's few hundred locations stay in cache, where one table of
 * every (function, location) was MBs of random probes. */
typedef struct loc_tab {
    fcount *v;
    size_t mask;
    uint32_t *used;             /* the current function's slots */
    size_t nused;
} loc_tab;

static fcount *loc_slot(const loc_tab *t, uint32_t id, lp_loc loc)
{
    uint64_t h = ((uint64_t)loc.disc << 32 | loc.line) * 0x9e3779b97f4a7c15ull;
    size_t i = (size_t)(h ^ (h >> 29)) & t->mask;

    while (t->v[i].id == id && (t->v[i].loc.line != loc.line ||
                                t->v[i].loc.disc != loc.disc))
        i = (i + 1) & t->mask;
    return &t->v[i];
}

/* Room for n more locations of function id (the table at most half full). */
static int loc_reserve(loc_tab *t, size_t n)
{
    size_t size = t->v ? t->mask + 1 : 0, want = 256;
    void *u;

    while (want < 2 * n)
        want *= 2;
    if (want <= size)
        return 0;
    free(t->v);
    if (!(t->v = lp_zalloc_written(want * sizeof *t->v)) ||   /* probed first */
        !(u = realloc(t->used, want * sizeof *t->used)))
        return -1;
    t->used = u;
    t->mask = want - 1;
    return 0;
}

/* The sums of one function's profiles v[0..n) (function number id). */
static int add_function(lp_summary *s, count_vec *cv, loc_tab *t, uint32_t id,
                        lp_fsamples *const *v, size_t n, uint64_t *head)
{
    size_t i, j, nb, records = 0;
    fcount *f;
    int rc = 0;

    for (i = 0; i < n; i++) {
        if (i + 8 < n)
            __builtin_prefetch(v[i + 8]);
        records += lp_fs_nr_body(v[i]);
    }
    if (loc_reserve(t, records))
        return -1;
    t->nused = 0;
    for (i = 0; i < n; i++) {
        /* the bodies are scattered over the heap: ask for the next ones
         * while this one is summed (the walk waited on memory) */
        if (i + 2 < n && v[i + 2]->nr_body)
            __builtin_prefetch(lp_fs_body_at(v[i + 2], 0));
        *head = lp_sat_add(*head, v[i]->head);
        nb = lp_fs_nr_body(v[i]);
        for (j = 0; j < nb; j++) {
            const lp_body_rec *r = lp_fs_body_at(v[i], j);
            f = loc_slot(t, id + 1, lp_body_loc(r));
            if (f->id != id + 1) {
                *f = (fcount){id + 1, lp_body_loc(r), 0};
                t->used[t->nused++] = (uint32_t)(f - t->v);
            }
            f->count = lp_sat_add(f->count, lp_body_count(r));
        }
    }
    for (i = 0; i < t->nused && rc == 0; i++)
        rc = add_count(s, cv, t->v[t->used[i]].count);
    return rc;
}

/* v reordered by group (a counting sort); start[g] is group g's first. */
static lp_fsamples **by_group(lp_fsamples *const *v, size_t n,
                              const uint32_t *group, size_t ngroups,
                              size_t **start)
{
    lp_fsamples **o = malloc((n ? n : 1) * sizeof *o);
    size_t *at = calloc(ngroups + 1, sizeof *at), i;

    if (!o || !at) {
        free(o);
        free(at);
        return NULL;
    }
    for (i = 0; i < n; i++)
        at[group[i] + 1]++;
    for (i = 0; i < ngroups; i++)
        at[i + 1] += at[i];
    for (i = 0; i < n; i++)
        o[at[group[i]]++] = v[i];
    for (i = ngroups; i > 0; i--)   /* back to each group's first */
        at[i] = at[i - 1];
    at[0] = 0;
    *start = at;
    return o;
}

/* One thread's part of a grouped summary: groups [g0, g1) of o (group
 * g: o[start[g] .. start[g + 1])) summed into s and cv. */
typedef struct sum_part {
    lp_fsamples **o;
    const size_t *start;
    size_t g0, g1;
    lp_summary s;
    count_vec cv;
    int rc;
    lp_job job;
} sum_part;

static void *sum_groups(void *arg)
{
    sum_part *p = arg;
    loc_tab t = {0};
    uint64_t head;
    size_t g;

    for (g = p->g0; g < p->g1 && p->rc == 0; g++) {
        if (p->start[g] == p->start[g + 1])
            continue;
        head = 0;
        p->rc = add_function(&p->s, &p->cv, &t, (uint32_t)g, p->o + p->start[g],
                             p->start[g + 1] - p->start[g], &head);
        p->s.num_functions++;
        if (head > p->s.max_function_count)
            p->s.max_function_count = head;
    }
    free(t.v);
    free(t.used);
    return NULL;
}

/* b's sums added to a's: totals saturate and the counts are a multiset,
 * so any split of the groups adds up to the one-thread summary. */
static int sum_merge(sum_part *a, const sum_part *b)
{
    const fcount *v = b->cv.v;
    size_t i;

    a->s.total_count = lp_sat_add(a->s.total_count, b->s.total_count);
    if (b->s.max_count > a->s.max_count)
        a->s.max_count = b->s.max_count;
    if (b->s.max_function_count > a->s.max_function_count)
        a->s.max_function_count = b->s.max_function_count;
    a->s.num_counts += b->s.num_counts;
    a->s.num_functions += b->s.num_functions;
    for (i = 0; v && i <= b->cv.mask; i++)
        if (v[i].id && fsum_add(&a->cv, 0, v[i].loc, v[i].count))
            return -1;
    return 0;
}

/* Profiles from which the groups are summed on two threads (a large CS
 * profile's context-less summary: waited for by the pre-inliner, and
 * with the flat CS options by the whole post-processing) */
#define SUM_SPLIT_MIN 16384

int lp_summary_by_group(lp_fsamples *const *v, size_t n, const uint32_t *group,
                        size_t ngroups, lp_summary *s, lp_error *err)
{
    sum_part a = {0}, b = {0};
    size_t *start = NULL, g, mid;
    lp_fsamples **o;
    int rc;

    *s = (lp_summary){0};
    for (g = 0; g < n; g++) {
        if (g + 8 < n)
            __builtin_prefetch(v[g + 8]);
        if (lp_fs_nr_callsites(v[g]))
            return lp_error_set(err, LP_EUNSUPP, "profile summary: nested "
                                "profiles in a flattened summary");
    }
    if (!(o = by_group(v, n, group, ngroups, &start)))
        return lp_error_set(err, LP_ENOMEM, "profile summary: out of memory");
    /* the second half of the profiles (whole groups) on a second thread */
    for (mid = 0; n >= SUM_SPLIT_MIN && mid < ngroups && start[mid] < n / 2; mid++)
        ;
    if (n < SUM_SPLIT_MIN)
        mid = ngroups;
    a = (sum_part){o, start, 0, mid};
    b = (sum_part){o, start, mid, ngroups};
    if (mid < ngroups)
        lp_job_start(&b.job, sum_groups, &b);
    sum_groups(&a);
    if (mid < ngroups)
        lp_job_wait(&b.job);
    rc = a.rc || b.rc ? -1 : sum_merge(&a, &b);
    if (rc == 0) {
        detailed(&a.s, &a.cv);
        *s = a.s;
    }
    free(o);
    free(start);
    free(a.cv.v);
    free(b.cv.v);
    if (rc)
        return lp_error_set(err, LP_ENOMEM, "profile summary: out of memory");
    return 0;
}

/* ---- accumulated profile by profile --------------------------------------- */

typedef struct gcount {         /* a function's count at a location */
    const void *g;              /* the function; NULL: empty slot */
    lp_loc loc;
    uint64_t count;
} gcount;

typedef struct gtab {           /* open addressing on (g, loc), summing */
    gcount *v;
    size_t mask, n, limit;      /* limit: n that grows it (3/4 full) */
} gtab;

struct lp_sumacc {
    gtab c;                     /* body counts by (function, location) */
    gtab h;                     /* head samples by function (location 0) */
    int bad;                    /* no memory, or inlinees */
};

static inline gcount *gt_slot(gcount *v, size_t mask, const void *g, lp_loc loc)
{
    uint64_t h = ((uint64_t)(uintptr_t)g ^ ((uint64_t)loc.line << 32 | loc.disc)) *
                 0x9e3779b97f4a7c15ull;
    size_t i;

    h ^= (uint64_t)loc.disc * 0xc2b2ae3d27d4eb4full;
    i = (size_t)(h ^ (h >> 29)) & mask;
    while (v[i].g && (v[i].g != g || v[i].loc.line != loc.line ||
                      v[i].loc.disc != loc.disc))
        i = (i + 1) & mask;
    return &v[i];
}

/* The table grown (twice the slots, or the first `first`). */
static int gt_grow(gtab *t, size_t first)
{
    size_t n = t->v ? (t->mask + 1) * 2 : first, i;
    gcount *v;

    if (!(v = lp_zalloc_written(n * sizeof *v)))   /* probed first */
        return -1;
    for (i = 0; t->v && i <= t->mask; i++)
        if (t->v[i].g)
            *gt_slot(v, n - 1, t->v[i].g, t->v[i].loc) = t->v[i];
    free(t->v);
    t->v = v;
    t->mask = n - 1;
    t->limit = n / 4 * 3;
    return 0;
}

/* count added to (g, loc)'s sum, saturating (inlined: ~700k calls on
 * bench (c), one per body record) */
static inline int gt_add(gtab *t, size_t first, const void *g, lp_loc loc,
                         uint64_t count)
{
    gcount *c;

    if (t->n >= t->limit && gt_grow(t, first))
        return -1;
    c = gt_slot(t->v, t->mask, g, loc);
    if (!c->g) {
        *c = (gcount){g, loc, 0};
        t->n++;
    }
    if (__builtin_add_overflow(c->count, count, &c->count))
        c->count = UINT64_MAX;  /* saturates, as lp_sat_add */
    return 0;
}

/* Every slot of src added to dst. */
static int gt_merge(gtab *dst, size_t first, const gtab *src)
{
    size_t i;

    for (i = 0; src->v && i <= src->mask; i++)
        if (src->v[i].g && gt_add(dst, first, src->v[i].g, src->v[i].loc,
                                  src->v[i].count))
            return -1;
    return 0;
}

#define GT_COUNTS 16384         /* first slots: bench (c) has 9,444 counts */
#define GT_HEADS 1024           /* ... and 773 functions */

lp_sumacc *lp_sumacc_new(void)
{
    return calloc(1, sizeof(lp_sumacc));
}

void lp_sumacc_free(lp_sumacc *a)
{
    if (!a)
        return;
    free(a->c.v);
    free(a->h.v);
    free(a);
}

int lp_sumacc_add(lp_sumacc *a, const void *group, const lp_fsamples *fs)
{
    size_t nb = lp_fs_nr_body(fs), i;
    const lp_body_rec *r;

    if (!a->bad && (lp_fs_nr_callsites(fs) ||
                    gt_add(&a->h, GT_HEADS, group, (lp_loc){0, 0}, fs->head)))
        a->bad = 1;
    for (i = 0; i < nb && !a->bad; i++) {
        r = lp_fs_body_at(fs, i);
        if (gt_add(&a->c, GT_COUNTS, group, lp_body_loc(r), lp_body_count(r)))
            a->bad = 1;
    }
    return a->bad ? -1 : 0;
}

int lp_sumacc_merge(lp_sumacc *dst, lp_sumacc *src)
{
    if (src && (src->bad || gt_merge(&dst->c, GT_COUNTS, &src->c) ||
                gt_merge(&dst->h, GT_HEADS, &src->h)))
        dst->bad = 1;
    lp_sumacc_free(src);
    return dst->bad ? -1 : 0;
}

int lp_sumacc_finish(lp_sumacc *a, lp_summary *s, lp_error *err)
{
    count_vec cv = {0};
    size_t i;
    int rc = a->bad ? -1 : 0;

    *s = (lp_summary){0};
    for (i = 0; rc == 0 && a->h.v && i <= a->h.mask; i++)
        if (a->h.v[i].g) {
            s->num_functions++;
            if (a->h.v[i].count > s->max_function_count)
                s->max_function_count = a->h.v[i].count;
        }
    for (i = 0; rc == 0 && a->c.v && i <= a->c.mask; i++)
        if (a->c.v[i].g)
            rc = add_count(s, &cv, a->c.v[i].count);
    if (rc == 0)
        detailed(s, &cv);
    free(cv.v);
    lp_sumacc_free(a);
    if (rc)
        return lp_error_set(err, LP_ENOMEM, "profile summary: out of memory "
                            "or nested profiles");
    return 0;
}

typedef struct fgroup {         /* the profiles of one function */
    const char *name;
    uint32_t id;
    UT_hash_handle hh;
} fgroup;

static void free_groups(fgroup *g)
{
    fgroup *x, *t;

    HASH_ITER(hh, g, x, t) {
        HASH_DEL(g, x);
        free(x);
    }
}

int lp_summary_by_function(lp_fsamples *const *v, size_t n, lp_summary *s,
                           lp_error *err)
{
    fgroup *groups = NULL, *g;
    uint32_t *id = malloc((n ? n : 1) * sizeof *id), ids = 0;
    size_t i;
    int rc;

    for (i = 0; id && i < n; i++) {
        HASH_FIND_STR(groups, v[i]->name, g);
        if (!g && (g = calloc(1, sizeof *g))) {
            g->name = v[i]->name;
            g->id = ids++;
            HASH_ADD_KEYPTR(hh, groups, g->name, strlen(g->name), g);
        }
        if (!g)
            break;
        id[i] = g->id;
    }
    rc = id && i == n ? lp_summary_by_group(v, n, id, ids, s, err)
                      : lp_error_set(err, LP_ENOMEM, "profile summary: out of memory");
    free(id);
    free_groups(groups);
    return rc;
}

/* ProfileConverter::flattenProfile(..., ProfileIsCS = true): contexts
 * merged by function, as SampleProfileSummaryBuilder does for CS maps */
int lp_profile_summary(const lp_profile *p, lp_summary *s, lp_error *err)
{
    lp_fsamples **all = NULL;
    size_t n;
    int rc;

    if (!p->is_cs)
        return lp_profile_summary_unmerged(p, s, err);
    if ((n = lp_profile_all(p, &all)) == (size_t)-1)
        return lp_error_set(err, LP_ENOMEM, "profile summary: out of memory");
    rc = lp_summary_by_function(all, n, s, err);
    free(all);
    return rc;
}

int lp_profile_summary_unmerged(const lp_profile *p, lp_summary *s,
                                lp_error *err)
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
