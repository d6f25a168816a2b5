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
#include "util/heaphome.h"
#include "util/sort.h"

/* A table of at most SMALL pairs is the pairs alone, found by a linear
 * scan: most contexts of a CS profile have one to four ranges and
 * branches (SQLite: ~40 K contexts, half with one range), and an index
 * of 8 slots with room for 4 pairs (144 bytes from malloc) was most of
 * the unwinder's counter memory. A larger table has its index after the
 * pairs, in the same block. */
#define SMALL 8
#define SORTED (UINT32_C(1) << 31)

/* The two tables' arrays and counts side by side: 24 bytes, a 32-byte
 * block from malloc (two 16-byte tables took a 48-byte one, for each of
 * the ~40 K contexts alive at the unwinder's flush's end). A table's
 * capacity follows from its count, as it only grows when full (see
 * grow): nothing to store. */
struct lp_counters {
    lp_addr_pair_count *v[2];   /* ranges, branches: cap_of(count) pairs,
                                   in insertion order until a sorted view
                                   is asked for; if the capacity is above
                                   SMALL, then 2 * capacity 32-bit index
                                   slots (at most half full: 0 empty, else
                                   the pair's position + 1) */
    uint32_t n[2];              /* their counts, | SORTED: v is in (a, b)
                                   order (views copy it without sorting
                                   again) */
};

typedef struct pair_tab {       /* one table of a lp_counters, in place */
    lp_addr_pair_count **pv;
    uint32_t *pn;
} pair_tab;

enum { RANGES, BRANCHES };

static pair_tab tab_of(const lp_counters *c, int k)
{
    lp_counters *m = (lp_counters *)c;  /* sorting in place is logically
                                           const (the same pairs) */
    return (pair_tab){&m->v[k], &m->n[k]};
}

static uint32_t count_of(pair_tab t)
{
    return *t.pn & ~SORTED;
}

/* What grow gave a table of n pairs: room for one pair first (the most
 * common table), then four (one realloc less for each table of two to
 * four pairs: the reallocs were the cost), then twice as much each
 * time. */
static uint32_t cap_of(uint32_t n)
{
    if (n <= 1)
        return n;
    if (n <= 4)
        return 4;
    return n <= SMALL ? SMALL : (uint32_t)1 << (64 - __builtin_clzll((uint64_t)n - 1));
}

lp_counters *lp_counters_new(void)
{
    return calloc(1, sizeof(lp_counters));
}

size_t lp_counters_bytes(void)
{
    return sizeof(lp_counters);
}

lp_counters *lp_counters_init(void *mem)
{
    return memset(mem, 0, sizeof(lp_counters));
}

void lp_counters_fini_with(lp_counters *c, void (*drop)(void *, void *), void *arg)
{
    if (c->v[RANGES])
        drop(c->v[RANGES], arg);
    if (c->v[BRANCHES])
        drop(c->v[BRANCHES], arg);
}

void lp_counters_fini(lp_counters *c)
{
    lp_counters_fini_with(c, lp_free_drop, NULL);
}

void lp_counters_free(lp_counters *c)
{
    if (!c)
        return;
    lp_counters_fini(c);
    free(c);
}

static uint32_t hash_pair(uint64_t a, uint64_t b)
{
    uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull) * 0xc2b2ae3d27d4eb4full;

    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ull;
    return (uint32_t)(h ^ (h >> 32));
}

static bool indexed(uint32_t cap)
{
    return cap > SMALL;
}

/* the index slot holding (a, b), or the empty slot where it goes */
static uint32_t *find_slot(const lp_addr_pair_count *v, uint32_t cap,
                           uint64_t a, uint64_t b)
{
    uint32_t mask = 2 * cap - 1, i = hash_pair(a, b) & mask, *s;
    uint32_t *slot = (uint32_t *)(v + cap);

    for (;; i = (i + 1) & mask) {
        s = &slot[i];
        if (!*s || (v[*s - 1].a == a && v[*s - 1].b == b))
            return s;
    }
}

static void reindex(lp_addr_pair_count *v, uint32_t n, uint32_t cap)
{
    uint32_t i;

    memset(v + cap, 0, 2 * (size_t)cap * sizeof(uint32_t));
    for (i = 0; i < n; i++)
        *find_slot(v, cap, v[i].a, v[i].b) = i + 1;
}

/* A small table's new block: malloc, copy, free rather than realloc,
 * which takes the arena's lock and a new chunk from the bins every time,
 * where malloc and free find glibc's per-thread cache first (the chunks
 * a growth frees are those the next growth of another table takes): a
 * CS profile's tables grow ~4.5 times a context, the unwinding's most
 * frequent allocation. Larger tables keep realloc (in place, or mremap
 * for the flat profile's one large table: no second copy alive). */
static lp_addr_pair_count *renew_small(lp_addr_pair_count *v, uint32_t n,
                                       size_t bytes)
{
    lp_addr_pair_count *nv = malloc(bytes);

    if (!nv)
        return NULL;
    if (n)
        memcpy(nv, v, n * sizeof *v);
    free(v);
    return nv;
}

/* More room for pairs (and, beyond SMALL, the index), in one block: one
 * allocation per growth, as a CS profile has ~10^5 of these tables. The
 * table is full (n == cap_of(n)). */
static int grow(pair_tab t)
{
    uint32_t n = count_of(t);
    size_t cap = cap_of(n + 1);
    size_t bytes = cap * sizeof **t.pv + (indexed(cap) ? 2 * cap * sizeof(uint32_t) : 0);
    lp_addr_pair_count *nv;

    if (cap > UINT32_MAX / 4)
        return -1;
    nv = indexed(cap) ? realloc(*t.pv, bytes) : renew_small(*t.pv, n, bytes);
    if (!nv)
        return -1;
    *t.pv = nv;
    if (indexed(cap))
        reindex(nv, n, (uint32_t)cap);
    return 0;
}

/* the pair (a, b) of a table without index, or NULL */
static lp_addr_pair_count *scan(lp_addr_pair_count *v, uint32_t n,
                                uint64_t a, uint64_t b)
{
    uint32_t i;

    for (i = 0; i < n; i++)
        if (v[i].a == a && v[i].b == b)
            return &v[i];
    return NULL;
}

static int add(pair_tab t, uint64_t a, uint64_t b, uint64_t cnt)
{
    uint32_t n = count_of(t), cap = cap_of(n), *s = NULL;
    lp_addr_pair_count *p;

    if (!indexed(cap)) {
        if ((p = scan(*t.pv, n, a, b))) {
            p->count = lp_sat_add(p->count, cnt);
            return 0;
        }
    } else if (*(s = find_slot(*t.pv, cap, a, b))) {
        p = &(*t.pv)[*s - 1];
        p->count = lp_sat_add(p->count, cnt);
        return 0;
    }
    if (n == cap) {
        if (n == UINT32_MAX >> 1 || grow(t))
            return -1;
        cap = cap_of(n + 1);
        s = indexed(cap) ? find_slot(*t.pv, cap, a, b) : NULL;
    }
    (*t.pv)[n] = (lp_addr_pair_count){a, b, cnt};
    if (s)
        *s = n + 1;
    *t.pn = n + 1;              /* no longer sorted */
    return 0;
}

int lp_counters_add_range(lp_counters *c, uint64_t s, uint64_t e, uint64_t n)
{
    return add(tab_of(c, RANGES), s, e, n);
}

int lp_counters_add_branch(lp_counters *c, uint64_t s, uint64_t d, uint64_t n)
{
    return add(tab_of(c, BRANCHES), s, d, n);
}

static int merge_tab(pair_tab dst, pair_tab src)
{
    uint32_t i, n = count_of(src);
    const lp_addr_pair_count *v = *src.pv;

    for (i = 0; i < n; i++)
        if (add(dst, v[i].a, v[i].b, v[i].count))
            return -1;
    return 0;
}

int lp_counters_merge(lp_counters *dst, const lp_counters *src)
{
    return merge_tab(tab_of(dst, RANGES), tab_of(src, RANGES)) ||
           merge_tab(tab_of(dst, BRANCHES), tab_of(src, BRANCHES)) ? -1 : 0;
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
static void sort_in_place(pair_tab t)
{
    uint32_t n = count_of(t);

    if (*t.pn & SORTED)
        return;
    if (n > 1 && lp_sort(*t.pv, n, sizeof **t.pv, pair_cmp) && indexed(cap_of(n)))
        reindex(*t.pv, n, cap_of(n));
    *t.pn |= SORTED;
}

static long sorted(pair_tab t, lp_addr_pair_count **out)
{
    uint32_t n = count_of(t);
    lp_addr_pair_count *v = malloc((n ? n : 1) * sizeof *v);

    if (!v)
        return -1;
    sort_in_place(t);
    if (n)
        memcpy(v, *t.pv, n * sizeof *v);
    *out = v;
    return (long)n;
}

static long any(pair_tab t, const lp_addr_pair_count **out);

static long view(pair_tab t, const lp_addr_pair_count **out)
{
    sort_in_place(t);
    return any(t, out);
}

long lp_counters_ranges_view(const lp_counters *c,
                             const lp_addr_pair_count **out)
{
    return view(tab_of(c, RANGES), out);
}

long lp_counters_branches_view(const lp_counters *c,
                               const lp_addr_pair_count **out)
{
    return view(tab_of(c, BRANCHES), out);
}

static long any(pair_tab t, const lp_addr_pair_count **out)
{
    *out = *t.pv;
    return (long)count_of(t);
}

long lp_counters_ranges_any(const lp_counters *c, const lp_addr_pair_count **out)
{
    return any(tab_of(c, RANGES), out);
}

long lp_counters_branches_any(const lp_counters *c, const lp_addr_pair_count **out)
{
    return any(tab_of(c, BRANCHES), out);
}

long lp_counters_ranges(const lp_counters *c, lp_addr_pair_count **out)
{
    return sorted(tab_of(c, RANGES), out);
}

long lp_counters_branches(const lp_counters *c, lp_addr_pair_count **out)
{
    return sorted(tab_of(c, BRANCHES), out);
}
