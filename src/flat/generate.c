/*
 * generate.c - llvm-profgen 19's ProfileGenerator for flat (AutoFDO)
 * profiles: zero-filled function ranges, disjoint ranges, per-instruction
 * body samples through the binary's inline stacks (totals per byte, body
 * counts the max at a location times the duplication factor), call targets
 * and head samples from branches, then the count fix-ups and the
 * post-processing (summary thresholds, cold trimming, ambiguous-name
 * filtering, the density warning: for a large profile on two threads).
 * Owns no I/O.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "flat/flat_internal.h"
#include "util/job.h"
#include "util/sort.h"

void lp_flat_opts_default(lp_flat_opts *o)
{
    memset(o, 0, sizeof *o);
    o->hot_count = o->cold_count = -1;
    o->cutoff_hot = 990000;
    o->cutoff_cold = 999999;
    o->density_threshold = 50;
    o->density_cutoff_hot = 990000;
}

static int oom(lp_error *err)
{
    return lp_error_set(err, LP_ENOMEM, "profile generation: out of memory");
}

/* ---- disjoint ranges (findDisjointRanges) --------------------------------- */

typedef struct bevent {         /* a range's begin or end at an address */
    uint64_t addr, count;
    uint8_t end, zero;
} bevent;

static int bevent_cmp(const void *x, const void *y)
{
    const bevent *a = x, *b = y;

    return a->addr < b->addr ? -1 : a->addr > b->addr;
}

typedef struct djvec {
    lp_addr_pair_count *v;
    size_t n, cap;
} djvec;

/* DisjointRanges[{a, b}] = n (a std::map: a later write replaces) */
static int dj_set(djvec *d, uint64_t a, uint64_t b, uint64_t n)
{
    lp_addr_pair_count *nv;

    if (d->n && d->v[d->n - 1].a == a && d->v[d->n - 1].b == b) {
        d->v[d->n - 1].count = n;
        return 0;
    }
    if (d->n == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 64;
        if (!(nv = realloc(d->v, d->cap * sizeof *nv)))
            return -1;
        d->v = nv;
    }
    d->v[d->n++] = (lp_addr_pair_count){a, b, n};
    return 0;
}

typedef struct bpoint {         /* LLVM's BoundaryPoint of one address */
    uint64_t begin, end;        /* UINT64_MAX: none */
    bool zero_begin, zero_end;
} bpoint;

/* The boundary point of the events at e[i].addr; returns the next index. */
static size_t gather(const bevent *e, size_t i, size_t n, bpoint *p)
{
    uint64_t addr = e[i].addr, *c;

    *p = (bpoint){UINT64_MAX, UINT64_MAX, false, false};
    for (; i < n && e[i].addr == addr; i++) {
        c = e[i].end ? &p->end : &p->begin;
        *c = (*c == UINT64_MAX ? 0 : *c) + e[i].count;
        if (e[i].zero && e[i].end)
            p->zero_end = true;
        else if (e[i].zero)
            p->zero_begin = true;
    }
    return i;
}

/* The boundary sweep over events sorted by address. */
static int sweep(const bevent *e, size_t n, djvec *d)
{
    uint64_t begin = UINT64_MAX, count = 0, addr;
    int zdepth = 0, rc = 0;
    size_t i = 0;
    bpoint p;

    while (i < n && rc == 0) {
        addr = e[i].addr;
        i = gather(e, i, n, &p);
        if (p.begin != UINT64_MAX) {
            if (begin != UINT64_MAX)
                rc |= dj_set(d, begin, addr - 1, count);
            count += p.begin;
            begin = addr;
            zdepth += p.zero_begin;
        }
        if (p.end != UINT64_MAX) {
            rc |= dj_set(d, begin, addr, count);
            count -= p.end;
            begin = addr + 1;
            zdepth -= p.zero_end;
            if (count == 0 && zdepth == 0)
                begin = UINT64_MAX;
        }
    }
    return rc;
}

static int pair_cmp(const void *x, const void *y)
{
    const lp_addr_pair_count *p = x, *q = y;

    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return p->b < q->b ? -1 : p->b > q->b;
}

/* room for n items of `size` bytes in *v (capacity *cap), kept if there
 * is: the contents are not kept */
static int dj_room(void **v, size_t *cap, size_t n, size_t size)
{
    void *nv;

    if (n <= *cap)
        return 0;
    n = n < 64 ? 64 : n;
    if (!(nv = malloc(n * size)))
        return -1;
    free(*v);
    *v = nv;
    *cap = n;
    return 0;
}

long lp_flat_disjoint_ranges_in(const lp_addr_pair_count *r, size_t n,
                                lp_dj_scratch *s, const lp_addr_pair_count **out)
{
    djvec d;
    bevent *e;
    size_t i, k = 0;
    int rc;

    /* each address of an event ends at most two ranges: room for all of
     * them, so dj_set never reallocates */
    if (dj_room(&s->ev, &s->evcap, 2 * n, sizeof *e) ||
        dj_room((void **)&s->v, &s->cap, n ? 4 * n : 1, sizeof *s->v))
        return -1;
    e = s->ev;
    d = (djvec){s->v, 0, s->cap};
    for (i = 0; i < n; i++) {
        if (r[i].a > r[i].b)
            continue; /* not a range; LLVM asserts */
        e[k++] = (bevent){r[i].a, r[i].count, 0, r[i].count == 0};
        e[k++] = (bevent){r[i].b, r[i].count, 1, r[i].count == 0};
    }
    lp_sort(e, k, sizeof *e, bevent_cmp);
    rc = sweep(e, k, &d);
    s->v = d.v;                 /* (the same) */
    s->cap = d.cap;
    if (rc == 0 && d.n > 1)
        lp_sort(d.v, d.n, sizeof *d.v, pair_cmp);
    *out = d.v;
    return rc ? -1 : (long)d.n;
}

void lp_dj_scratch_free(lp_dj_scratch *s)
{
    free(s->ev);
    free(s->v);
    *s = (lp_dj_scratch){0};
}

long lp_flat_disjoint_ranges(const lp_addr_pair_count *r, size_t n,
                             lp_addr_pair_count **out)
{
    lp_dj_scratch s = {0};
    const lp_addr_pair_count *v;
    long nd = lp_flat_disjoint_ranges_in(r, n, &s, &v);

    free(s.ev);
    if (nd < 0)
        free(s.v);
    else
        *out = s.v;
    return nd;
}

typedef struct rvec {           /* ranges to cut */
    lp_addr_pair_count *v;
    size_t n, cap;
} rvec;

static int rv_add(rvec *r, uint64_t a, uint64_t b, uint64_t n)
{
    lp_addr_pair_count *nv;

    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 256;
        if (!(nv = realloc(r->v, r->cap * sizeof *nv)))
            return -1;
        r->v = nv;
    }
    r->v[r->n++] = (lp_addr_pair_count){a, b, n};
    return 0;
}

/* preprocessRangeCounter: add zero ranges for the functions touched (or all
 * functions), then cut into disjoint ranges. */
int flat_preprocess(lp_binary *bin, const lp_counters *c, bool all_funcs,
                    lp_addr_pair_count **out_v, size_t *out_n)
{
    lp_addr_pair_count *r = NULL;
    const lp_function *const *funcs;
    const lp_func_range *fr;
    rvec all = {0};
    long n = lp_counters_ranges(c, &r), i, nd;
    size_t nf, j, k;
    int rc = n < 0;

    for (i = 0; rc == 0 && i < n; i++)
        rc = rv_add(&all, r[i].a, r[i].b, r[i].count);
    if (all_funcs) {
        nf = lp_binary_functions(bin, &funcs);
        for (j = 0; rc == 0 && j < nf; j++)
            for (k = 0; rc == 0 && k < funcs[j]->nranges; k++)
                rc = rv_add(&all, funcs[j]->ranges[k]->start,
                            funcs[j]->ranges[k]->end - 1, 0);
    } else {
        for (i = 0; rc == 0 && i < n; i++) {
            if (!(fr = lp_binary_func_range(bin, r[i].a)))
                continue;
            for (k = 0; rc == 0 && k < fr->func->nranges; k++)
                rc = rv_add(&all, fr->func->ranges[k]->start,
                            fr->func->ranges[k]->end - 1, 0);
        }
    }
    free(r);
    *out_v = NULL;
    *out_n = 0;
    if (rc == 0) {
        nd = lp_flat_disjoint_ranges(all.v, all.n, out_v);
        rc = nd < 0;
        *out_n = nd < 0 ? 0 : (size_t)nd;
    }
    free(all.v);
    return rc ? -1 : 0;
}

/* ---- body samples ------------------------------------------------------------ */

typedef struct gen {
    lp_binary *bin;
    lp_profile *p;
    bool fs;                    /* flow-sensitive discriminators */
    lp_error *err;
    bool sum;                   /* --leading-ip-only */
} gen;

/* getLeafProfileAndAddTotalSamples */
static lp_fsamples *leaf_profile(gen *g, const lp_frame *fr, size_t n,
                                 uint64_t add)
{
    lp_fsamples *fs = lp_profile_get(g->p, fr[0].func, NULL);
    size_t i;

    if (!fs)
        return NULL;
    fs->total = lp_sat_add(fs->total, add);
    for (i = 1; i < n; i++) {
        lp_loc cs = {fr[i - 1].line_offset,
                     lp_disc_base(fr[i - 1].discriminator, g->fs)};
        if (!(fs = lp_fs_callee(fs, cs, fr[i].func)))
            return NULL;
        fs->total = lp_sat_add(fs->total, add);
    }
    return fs;
}

/* updateBodySamplesforFunctionProfile: keep the max at a location */
static int body_max(gen *g, lp_fsamples *fs, const lp_frame *leaf,
                    uint64_t count)
{
    lp_loc loc = {leaf->line_offset, lp_disc_base(leaf->discriminator, g->fs)};
    lp_body_rec *b;
    uint64_t c = count * lp_disc_dup_factor(leaf->discriminator, g->fs);

    if (!(b = lp_fs_body(fs, loc)))
        return -1;
    if (g->sum) {
        lp_body_add(b, count); /* --leading-ip-only: sum, no dup factor */
        return 0;
    }
    if (lp_body_count(b) <= c)
        lp_body_set_count(b, c);
    return 0;
}

static int body_range(gen *g, const lp_addr_pair_count *r)
{
    const lp_frame *fr;
    lp_fsamples *fs;
    uint64_t ip;
    lp_inst in;
    size_t n;
    int k;

    k = lp_binary_inst_at_or_after(g->bin, r->a, &ip, g->err);
    while (k == 1 && ip <= r->b) {
        if (lp_binary_symbolize(g->bin, ip, &fr, &n, g->err) ||
            (k = lp_binary_inst(g->bin, ip, &in, g->err)) < 0)
            return -1;
        if (n > 0 && k == 1) {
            if (!(fs = leaf_profile(g, fr, n, r->count * in.size)) ||
                body_max(g, fs, &fr[n - 1], r->count))
                return oom(g->err);
        }
        k = lp_binary_next_inst(g->bin, ip, &ip, g->err);
    }
    return k < 0 ? -1 : 0;
}

/* ---- boundary samples ------------------------------------------------------- */

static int boundary(gen *g, const lp_addr_pair_count *br)
{
    const char *callee = lp_binary_callee_name(g->bin, br->b);
    const lp_frame *fr;
    lp_fsamples *fs;
    lp_body_rec *b;
    size_t n;

    if (!callee)
        return 0;
    n = 0;
    if (br->a != LP_EXTERNAL_ADDR &&
        lp_binary_symbolize(g->bin, br->a, &fr, &n, g->err))
        return -1;
    if (n > 0) {
        lp_loc loc = {fr[n - 1].line_offset,
                      lp_disc_base(fr[n - 1].discriminator, g->fs)};
        if (!(fs = leaf_profile(g, fr, n, 0)) || !(b = lp_fs_body(fs, loc)) ||
            lp_body_add_target(b, callee, br->count))
            return oom(g->err);
    }
    if (!(fs = lp_profile_get(g->p, callee, NULL)))
        return oom(g->err);
    fs->head = lp_sat_add(fs->head, br->count);
    return 0;
}

int flat_finish_functions(lp_profile *p, bool update_total, lp_error *err)
{
    lp_fsamples **v;
    size_t n = lp_profile_all(p, &v), i;

    if (n == (size_t)-1)
        return oom(err);
    for (i = 0; i < n; i++) {
        lp_fs_update_callsite_samples(v[i]);
        if (update_total)
            lp_fs_update_total_samples(v[i]);
    }
    free(v);
    return 0;
}

int lp_flat_generate(lp_binary *bin, const lp_counters *c,
                     const lp_flat_opts *o, lp_profile *out, lp_error *err)
{
    gen g = {bin, out, lp_binary_fs_discriminator(bin), err,
             o->leading_ip_only};
    djvec d = {0};
    lp_addr_pair_count *br = NULL;
    long nb, i;
    size_t j;
    int rc;

    rc = flat_preprocess(bin, c, o->fill_zero_for_all_funcs, &d.v, &d.n)
             ? oom(err) : 0;
    for (j = 0; rc == 0 && j < d.n; j++)
        rc = body_range(&g, &d.v[j]);
    free(d.v);
    if (rc)
        return -1;
    if ((nb = lp_counters_branches(c, &br)) < 0)
        return oom(err);
    for (i = 0; rc == 0 && i < nb; i++)
        rc = boundary(&g, &br[i]);
    free(br);
    if (rc)
        return -1;
    return flat_finish_functions(out, o->update_total_samples, err);
}

/* ---- post-processing ---------------------------------------------------------- */

/* ProfileSummaryBuilder::getEntryForPercentile: first cutoff >= pct */
static uint64_t count_at(const lp_summary *s, uint32_t pct)
{
    int k;

    for (k = 0; k < LP_NR_CUTOFFS; k++)
        if (s->entries[k].cutoff >= pct)
            return s->entries[k].min_count;
    return s->entries[LP_NR_CUTOFFS - 1].min_count;
}

/* filterAmbiguousProfile's names */
static int ambiguous(const char *name)
{
    return strncmp(name, "__cxx_global_var_init", 21) == 0 ||
           strncmp(name, "__tls_init", 10) == 0;
}

/* The entries after v[i] brought into the caches: the blocks 16 ahead,
 * the names and body records of the one 8 ahead (each pass over ~10^5
 * entries was a cache miss per entry and per body, one at a time). */
static inline void prefetch_ahead(lp_fsamples *const *v, size_t i, size_t n)
{
    if (i + 16 < n)
        __builtin_prefetch(v[i + 16]);
    if (i + 8 < n) {
        __builtin_prefetch(v[i + 8]->name);
        __builtin_prefetch(v[i + 8]->body);
    }
}

/* fs's density item (its body samples per record, as bits ordered
 * like the value, descending) if it has records: 1, else 0. */
static int density_item(const lp_fsamples *fs, lp_radix_item *it,
                        uint64_t *total)
{
    uint64_t s = 0, sz = 0, k;
    double d;

    lp_fs_body_totals(fs, &s, &sz);
    if (sz == 0)
        return 0;
    d = (double)s / sz;
    memcpy(&k, &d, sizeof k);
    *it = (lp_radix_item){~k, s};
    *total += s;
    return 1;
}

#define DENSITY_BUCKET_BITS 12
#define DENSITY_BUCKETS (1u << DENSITY_BUCKET_BITS)

/* The bucket of key: keys from lo on, 1 << shift of them per bucket. */
static inline size_t density_bucket(uint64_t key, uint64_t lo, unsigned shift)
{
    return (size_t)((key - lo) >> shift);
}

/* calculateDensity's result on the m items of dl (room for 2m): the
 * density, by densities descending (a non-negative double's bits order
 * as its value: keys ascending), of the last one taken while the sum so
 * far is below lim (0 if none is). Equal densities in any order (LLVM:
 * the hash's) give the same result: the one taken last only depends on
 * what each density adds up to. The items are bucketed by key (the keys'
 * range cut in DENSITY_BUCKETS) and only the bucket where the sum gets
 * to lim (or the last one) is sorted: a radix sort of every density was
 * 8 passes over them. dl's order is lost. */
static double density_at(lp_radix_item *dl, size_t m, float lim)
{
    uint64_t sum[DENSITY_BUCKETS] = {0}, acc = 0, lo = UINT64_MAX, hi = 0, k;
    uint32_t cnt[DENSITY_BUCKETS] = {0};
    size_t i, b, last = 0, c = 0;
    unsigned shift = 0;
    double result = 0;
    lp_radix_item *r;

    if (m == 0 || !(acc < lim))
        return 0;
    for (i = 0; i < m; i++) {
        lo = dl[i].key < lo ? dl[i].key : lo;
        hi = dl[i].key > hi ? dl[i].key : hi;
    }
    while ((hi - lo) >> shift >= DENSITY_BUCKETS)
        shift++;
    for (i = 0; i < m; i++) {
        b = density_bucket(dl[i].key, lo, shift);
        sum[b] += dl[i].val;
        cnt[b]++;
    }
    for (b = 0; b < DENSITY_BUCKETS; b++) {
        if (!cnt[b])
            continue;
        last = b;
        if (!(acc + sum[b] < lim))
            break;
        acc += sum[b];
    }
    if (b == DENSITY_BUCKETS)       /* never got there: the last */
        acc -= sum[last];
    for (i = 0; i < m; i++)
        if (density_bucket(dl[i].key, lo, shift) == last)
            dl[c++] = dl[i];
    r = lp_radix_sort(dl, dl + m, c);
    for (i = 0; i < c && acc < lim; i++) {
        acc += r[i].val;
        k = ~r[i].key;
        memcpy(&result, &k, sizeof result);
    }
    return result;
}

/* showDensitySuggestion on the m items of dl (room for 2m). */
static void density_report(lp_radix_item *dl, size_t m, uint64_t total,
                           const lp_flat_opts *o)
{
    double result = density_at(dl, m, total * ((float)o->density_cutoff_hot) /
                                          1000000);

    if (result == 0.0)
        lp_warnf(o->warn, o->warn_ctx, "The output profile is empty or the "
                 "--profile-density-cutoff-hot option is set too low. Please "
                 "check your command.");
    else if (result < o->density_threshold)
        lp_warnf(o->warn, o->warn_ctx, "Sample PGO is estimated to optimize "
                 "better with %.1fx more samples. Please consider increasing "
                 "sampling rate or profiling for longer duration to get more "
                 "samples.", o->density_threshold / result);
    if (o->show_density && o->info)
        fprintf(o->info, "Functions with density >= %.1f account for %.2f%% "
                         "total sample counts.\n",
                result, (double)o->density_cutoff_hot / 10000);
}

/* A density pass is bound by memory (~22 MB of body records read on
 * the 73k-context bench (c), ~7 ms on one core): from DENSITY_SPLIT_MIN
 * entries a second thread takes the second half. Each half's items go
 * to the front of its own half of dl; the removals wait for the caller
 * (the profile's table is not shared). */
#define DENSITY_SPLIT_MIN 8192

typedef struct density_half {
    lp_fsamples *const *v;
    size_t a, b, m;             /* v[a .. b); items made (at dl + a) */
    bool filter;
    lp_radix_item *dl;
    uint8_t *gone;              /* filter: v[i] is ambiguous */
    uint64_t total;
} density_half;

static void *density_run(void *arg)
{
    density_half *h = arg;
    size_t i;

    for (i = h->a; i < h->b; i++) {
        prefetch_ahead(h->v, i, h->b);
        if (h->filter && (h->gone[i] = (uint8_t)ambiguous(h->v[i]->name)))
            continue;
        if (h->filter)
            lp_fs_drop_callees(h->v[i], ambiguous);
        h->m += (size_t)density_item(h->v[i], &h->dl[h->a + h->m], &h->total);
    }
    return NULL;
}

/* The density of p's entries, the ambiguous ones removed first (filter). */
static int density_pass(lp_profile *p, bool filter, const lp_flat_opts *o,
                        lp_error *err)
{
    lp_fsamples **v = NULL;
    size_t n = lp_profile_all(p, &v), i, half;
    density_half h[2];
    lp_job job;
    lp_radix_item *dl = n == (size_t)-1 ? NULL : malloc((n ? 2 * n : 1) * sizeof *dl);
    uint8_t *gone = filter && dl ? calloc(n ? n : 1, 1) : NULL;

    if (!dl || (filter && !gone)) {
        free(v);
        free(dl);
        return oom(err);
    }
    half = n >= DENSITY_SPLIT_MIN ? n / 2 : n;  /* else no second half */
    for (i = 0; i < 2; i++)
        h[i] = (density_half){v, i ? half : 0, i ? n : half, 0, filter, dl,
                              gone, 0};
    if (half < n)
        lp_job_start(&job, density_run, &h[1]);
    density_run(&h[0]);
    if (half < n)
        lp_job_wait(&job);
    for (i = 0; filter && i < n; i++)
        if (gone[i])
            lp_profile_remove(p, v[i]->context);
    memmove(dl + h[0].m, dl + h[1].a, h[1].m * sizeof *dl);
    density_report(dl, h[0].m + h[1].m, h[0].total + h[1].total, o);
    free(gone);
    free(v);
    free(dl);
    return 0;
}

/* calculateDensity + showDensitySuggestion */
int lp_flat_density(const lp_profile *p, const lp_flat_opts *o, lp_error *err)
{
    return density_pass((lp_profile *)p, false, o, err);
}

int lp_flat_filter_density(lp_profile *p, const lp_flat_opts *o, lp_error *err)
{
    return density_pass(p, true, o, err);
}

int lp_flat_postprocess(lp_profile *p, const lp_flat_opts *o, lp_error *err)
{
    lp_summary s;
    lp_fsamples **v;
    uint64_t cold;
    size_t n, i, k;

    if (lp_profile_summary(p, &s, err))
        return -1;
    cold = o->cold_count >= 0 ? (uint64_t)o->cold_count : count_at(&s, o->cutoff_cold);
    if ((n = lp_profile_all(p, &v)) == (size_t)-1)
        return oom(err);
    /* trimColdProfiles, then filterAmbiguousProfile; the survivors are
     * moved to the front of v, the rest removed (which frees them) */
    for (i = 0, k = 0; i < n; i++) {
        if ((o->trim_cold_profile && v[i]->total < cold) || ambiguous(v[i]->name))
            lp_profile_remove(p, v[i]->context);
        else
            v[k++] = v[i];
    }
    for (i = 0; i < k; i++)
        lp_fs_drop_callees(v[i], ambiguous);
    free(v);
    return lp_flat_density(p, o, err);
}
