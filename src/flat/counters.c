/*
 * counters.c - llvm-profgen's SampleCounter for one context: LBR
 * fall-through range counts and branch counts keyed by canonical
 * addresses, with sorted views (std::map order) for the writers and the
 * generators. Compact: the pairs live in one array per table, found by
 * a linear scan while there are few, then through an open-addressing
 * index of 32-bit slots after them (a CS profile holds ~10^5 of these
 * tables and ~10^6 pairs). Owns the tables; not where the counts come
 * from.
 */
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/flat.h"
#include "util/sort.h"

/* A table of at most UW_SMALL pairs is the pairs alone, found by a
 * linear scan: most contexts of a CS profile have one to four ranges and
 * branches (SQLite: ~40 K contexts, half with one range), and an index
 * of 8 slots with room for 4 pairs (144 bytes from malloc) was most of
 * the unwinder's counter memory. A larger table has its index after the
 * pairs, in the same block. */
#define SMALL 8

typedef struct pair_tab {
    lp_addr_pair_count *v;      /* cap pairs, in insertion order until a
                                   sorted view is asked for; if cap >
                                   SMALL, then 2 * cap 32-bit index slots
                                   (at most half full: 0 empty, else the
                                   pair's position + 1) */
    uint32_t n;
    uint32_t cap : 31;          /* a power of two, 0: nothing allocated */
    uint32_t sorted : 1;        /* v is in (a, b) order: views copy it
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
    free(t->v);
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

static bool indexed(const pair_tab *t)
{
    return t->cap > SMALL;
}

/* the index slot holding (a, b), or the empty slot where it goes */
static uint32_t *find_slot(const pair_tab *t, uint64_t a, uint64_t b)
{
    uint32_t mask = 2 * t->cap - 1, i = hash_pair(a, b) & mask, *s;
    uint32_t *slot = (uint32_t *)(t->v + t->cap);

    for (;; i = (i + 1) & mask) {
        s = &slot[i];
        if (!*s || (t->v[*s - 1].a == a && t->v[*s - 1].b == b))
            return s;
    }
}

static void reindex(pair_tab *t)
{
    uint32_t i;

    memset(t->v + t->cap, 0, 2 * (size_t)t->cap * sizeof(uint32_t));
    for (i = 0; i < t->n; i++)
        *find_slot(t, t->v[i].a, t->v[i].b) = i + 1;
}

/* More room for pairs (and, beyond SMALL, the index), in one block: one
 * allocation per growth, as a CS profile has ~10^5 of these tables. Room
 * for one pair first (the most common table), then four (one realloc
 * less for each table of two to four pairs: the reallocs were the cost),
 * then twice as much each time. */
static int grow(pair_tab *t)
{
    size_t cap = t->cap ? (t->cap == 1 ? 4 : (size_t)t->cap * 2) : 1;
    size_t bytes = cap * sizeof *t->v + (cap > SMALL ? 2 * cap * sizeof(uint32_t) : 0);
    lp_addr_pair_count *nv;

    if (cap > UINT32_MAX / 4 || !(nv = realloc(t->v, bytes)))
        return -1;
    t->v = nv;
    t->cap = (uint32_t)cap;
    if (indexed(t))
        reindex(t);
    return 0;
}

/* the pair (a, b) of a table without index, or NULL */
static lp_addr_pair_count *scan(const pair_tab *t, uint64_t a, uint64_t b)
{
    uint32_t i;

    for (i = 0; i < t->n; i++)
        if (t->v[i].a == a && t->v[i].b == b)
            return &t->v[i];
    return NULL;
}

static int add(pair_tab *t, uint64_t a, uint64_t b, uint64_t n)
{
    lp_addr_pair_count *p;
    uint32_t *s = NULL;

    if (!indexed(t)) {
        if ((p = scan(t, a, b))) {
            p->count = lp_sat_add(p->count, n);
            return 0;
        }
    } else if (*(s = find_slot(t, a, b))) {
        p = &t->v[*s - 1];
        p->count = lp_sat_add(p->count, n);
        return 0;
    }
    if (t->n == t->cap) {
        if (grow(t))
            return -1;
        s = indexed(t) ? find_slot(t, a, b) : NULL;
    }
    t->v[t->n++] = (lp_addr_pair_count){a, b, n};
    if (s)
        *s = t->n;
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
    if (t->n > 1 && lp_sort(t->v, t->n, sizeof *t->v, pair_cmp) && indexed(t))
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
