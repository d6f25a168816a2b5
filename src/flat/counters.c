/*
 * counters.c - llvm-profgen's SampleCounter for one context: LBR
 * fall-through range counts and branch counts keyed by canonical
 * addresses, with sorted views (std::map order) for the writers and the
 * generators. Compact: the pairs live in one array per table, found
 * through an open-addressing index of 32-bit slots (a CS profile holds
 * ~10^5 of these tables and ~10^6 pairs). Owns the tables; not where the
 * counts come from.
 */
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/flat.h"
#include "util/sort.h"

typedef struct pair_tab {
    uint32_t *slot;             /* one block: the index, then the pairs */
    lp_addr_pair_count *v;      /* the pairs, in insertion order until a
                                   sorted view is asked for */
    uint32_t n;
    uint32_t mask;              /* slots - 1 (a power of two), 0: none;
                                   the block has room for (mask + 1) / 2
                                   pairs, as many as the index may hold */
    bool sorted;                /* v is in (a, b) order: views copy it
                                   without sorting again */
} pair_tab;

struct lp_counters {
    pair_tab ranges;
    pair_tab branches;
};

lp_counters *lp_counters_new(void)
{
    return calloc(1, sizeof(lp_counters));
}

static void tab_free(pair_tab *t)
{
    free(t->slot);
}

void lp_counters_free(lp_counters *c)
{
    if (!c)
        return;
    tab_free(&c->ranges);
    tab_free(&c->branches);
    free(c);
}

static uint32_t hash_pair(uint64_t a, uint64_t b)
{
    uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull) * 0xc2b2ae3d27d4eb4full;

    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ull;
    return (uint32_t)(h ^ (h >> 32));
}

/* the slot holding (a, b), or the empty slot where it goes */
static uint32_t *find_slot(const pair_tab *t, uint64_t a, uint64_t b)
{
    uint32_t i = hash_pair(a, b) & t->mask, *s;

    for (;; i = (i + 1) & t->mask) {
        s = &t->slot[i];
        if (!*s || (t->v[*s - 1].a == a && t->v[*s - 1].b == b))
            return s;
    }
}

static void reindex(pair_tab *t)
{
    uint32_t i;

    memset(t->slot, 0, ((size_t)t->mask + 1) * sizeof *t->slot);
    for (i = 0; i < t->n; i++)
        *find_slot(t, t->v[i].a, t->v[i].b) = i + 1;
}

/* Twice the slots and the room for pairs, in one new block (one
 * allocation per growth: a CS profile has ~10^5 of these tables). */
static int grow(pair_tab *t)
{
    size_t nslots = t->mask ? ((size_t)t->mask + 1) * 2 : 8;
    uint32_t *blk = malloc(nslots * sizeof *blk +
                           nslots / 2 * sizeof(lp_addr_pair_count));
    lp_addr_pair_count *nv;

    if (!blk || nslots - 1 > UINT32_MAX) {
        free(blk);
        return -1;
    }
    nv = (lp_addr_pair_count *)(blk + nslots);
    if (t->n)
        memcpy(nv, t->v, t->n * sizeof *nv);
    free(t->slot);
    t->slot = blk;
    t->v = nv;
    t->mask = (uint32_t)(nslots - 1);
    reindex(t);
    return 0;
}

static int add(pair_tab *t, uint64_t a, uint64_t b, uint64_t n)
{
    uint32_t *s;

    if ((t->n + 1) * 2 > t->mask + 1 && grow(t))
        return -1;
    s = find_slot(t, a, b);
    if (*s) {
        t->v[*s - 1].count = lp_sat_add(t->v[*s - 1].count, n);
        return 0;
    }
    t->v[t->n] = (lp_addr_pair_count){a, b, n};
    *s = ++t->n;
    t->sorted = false;
    return 0;
}

int lp_counters_add_range(lp_counters *c, uint64_t s, uint64_t e, uint64_t n)
{
    return add(&c->ranges, s, e, n);
}

int lp_counters_add_branch(lp_counters *c, uint64_t s, uint64_t d, uint64_t n)
{
    return add(&c->branches, s, d, n);
}

static int merge_tab(pair_tab *dst, const pair_tab *src)
{
    uint32_t i;

    for (i = 0; i < src->n; i++)
        if (add(dst, src->v[i].a, src->v[i].b, src->v[i].count))
            return -1;
    return 0;
}

int lp_counters_merge(lp_counters *dst, const lp_counters *src)
{
    return merge_tab(&dst->ranges, &src->ranges) ||
           merge_tab(&dst->branches, &src->branches) ? -1 : 0;
}

static int pair_cmp(const void *x, const void *y)
{
    const lp_addr_pair_count *p = x, *q = y;

    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    if (p->b != q->b)
        return p->b < q->b ? -1 : 1;
    return 0;
}

/* Sort the pairs in place, once (the generators ask for the same view
 * more than once), and re-point the index at them. */
static void sort_in_place(pair_tab *t)
{
    if (t->sorted)
        return;
    if (t->n > 1 && lp_sort(t->v, t->n, sizeof *t->v, pair_cmp))
        reindex(t);
    t->sorted = true;
}

static long sorted(const pair_tab *t, lp_addr_pair_count **out)
{
    lp_addr_pair_count *v = malloc((t->n ? t->n : 1) * sizeof *v);

    if (!v)
        return -1;
    sort_in_place((pair_tab *)t); /* the same pairs: logically const */
    if (t->n)
        memcpy(v, t->v, t->n * sizeof *v);
    *out = v;
    return (long)t->n;
}

static long view(const pair_tab *t, const lp_addr_pair_count **out)
{
    sort_in_place((pair_tab *)t);
    *out = t->v;
    return (long)t->n;
}

long lp_counters_ranges_view(const lp_counters *c,
                             const lp_addr_pair_count **out)
{
    return view(&c->ranges, out);
}

long lp_counters_branches_view(const lp_counters *c,
                               const lp_addr_pair_count **out)
{
    return view(&c->branches, out);
}

long lp_counters_ranges(const lp_counters *c, lp_addr_pair_count **out)
{
    return sorted(&c->ranges, out);
}

long lp_counters_branches(const lp_counters *c, lp_addr_pair_count **out)
{
    return sorted(&c->branches, out);
}
