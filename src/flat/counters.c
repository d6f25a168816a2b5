/*
 * counters.c - llvm-profgen's SampleCounter for one (empty) context: LBR
 * fall-through range counts and branch counts keyed by canonical
 * addresses, with sorted views (std::map order) for the writers and the
 * generator. Owns the hash tables; not where the counts come from.
 */
#include <stdlib.h>
#include <uthash.h>

#include "lbr2prof/flat.h"

typedef struct pair_key {
    uint64_t a, b;
} pair_key;

typedef struct pair_ent {
    pair_key k;
    uint64_t count;
    UT_hash_handle hh;
} pair_ent;

struct lp_counters {
    pair_ent *ranges;
    pair_ent *branches;
};

lp_counters *lp_counters_new(void)
{
    return calloc(1, sizeof(lp_counters));
}

static void free_table(pair_ent **head)
{
    pair_ent *e, *t;

    HASH_ITER(hh, *head, e, t) {
        HASH_DEL(*head, e);
        free(e);
    }
}

void lp_counters_free(lp_counters *c)
{
    if (!c)
        return;
    free_table(&c->ranges);
    free_table(&c->branches);
    free(c);
}

static int add(pair_ent **head, uint64_t a, uint64_t b, uint64_t n)
{
    pair_key k = {a, b};
    pair_ent *e;

    HASH_FIND(hh, *head, &k, sizeof k, e);
    if (!e) {
        e = calloc(1, sizeof *e);
        if (!e)
            return -1;
        e->k = k;
        HASH_ADD(hh, *head, k, sizeof k, e);
    }
    e->count = lp_sat_add(e->count, n);
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

static int pair_cmp(const void *x, const void *y)
{
    const lp_addr_pair_count *p = x, *q = y;

    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    if (p->b != q->b)
        return p->b < q->b ? -1 : 1;
    return 0;
}

static long sorted(const pair_ent *head, lp_addr_pair_count **out)
{
    size_t n = HASH_COUNT(head), i = 0;
    lp_addr_pair_count *v = calloc(n ? n : 1, sizeof *v);
    const pair_ent *e;

    if (!v)
        return -1;
    for (e = head; e; e = e->hh.next)
        v[i++] = (lp_addr_pair_count){e->k.a, e->k.b, e->count};
    qsort(v, n, sizeof *v, pair_cmp);
    *out = v;
    return (long)n;
}

long lp_counters_ranges(const lp_counters *c, lp_addr_pair_count **out)
{
    return sorted(c->ranges, out);
}

long lp_counters_branches(const lp_counters *c, lp_addr_pair_count **out)
{
    return sorted(c->branches, out);
}
