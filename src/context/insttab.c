/*
 * insttab.c - the instructions of each touched function range, symbolized
 * once and cut into runs of consecutive instructions with the same leaf
 * location (line offset, raw discriminator): what the CS generator needs
 * from every instruction of a range piece (llvm-profgen walks them one by
 * one; the result only depends on the runs: one body update per run, the
 * total grows by count x instructions). Owns these per-range tables,
 * shared by the generation threads (each built once, by whichever thread
 * needs it first), and each thread's cache of them; the symbolization
 * itself is the binary loader's.
 */
#include <stdlib.h>
#include <string.h>

#include "context/cs_internal.h"

#define RECENT_SLOT(fr) (((uintptr_t)(fr) / sizeof(lp_func_range)) % CS_ICACHE_SLOTS)

struct cs_insts {
    lp_binary *bin;
    pthread_mutex_t *lock;      /* the binary's, when shared; or NULL:
                                   held to search or grow tabs (a table,
                                   once built, never changes) */
    cs_itab *tabs;
};

cs_insts *cs_insts_new(lp_binary *bin, pthread_mutex_t *lock)
{
    cs_insts *t = calloc(1, sizeof *t);

    if (t) {
        t->bin = bin;
        t->lock = lock;
    }
    return t;
}

void cs_insts_free(cs_insts *t)
{
    cs_itab *x, *tmp;

    if (!t)
        return;
    HASH_ITER(hh, t->tabs, x, tmp) {
        HASH_DEL(t->tabs, x);
        free(x->addr);
        free(x->runs);
        free(x);
    }
    free(t);
}

static int push_addr(cs_itab *x, size_t *cap, uint64_t a)
{
    uint64_t *nv;

    if (x->n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        if (!(nv = realloc(x->addr, *cap * sizeof *nv)))
            return -1;
        x->addr = nv;
    }
    x->addr[x->n++] = a;
    return 0;
}

static int push_run(cs_itab *x, size_t *cap, uint32_t i, lp_loc loc, bool has)
{
    cs_irun *nv, *last = x->nruns ? &x->runs[x->nruns - 1] : NULL;

    if (last && last->has == has && last->loc.line == loc.line &&
        last->loc.disc == loc.disc) {
        last->hi = i + 1;
        return 0;
    }
    if (x->nruns == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        if (!(nv = realloc(x->runs, *cap * sizeof *nv)))
            return -1;
        x->runs = nv;
    }
    x->runs[x->nruns++] = (cs_irun){i, i + 1, loc, has};
    return 0;
}

/* Symbolize every instruction of the range once. */
static int build(cs_insts *t, cs_itab *x, lp_error *err)
{
    const lp_frame *fr;
    size_t acap = 0, rcap = 0, n;
    uint64_t ip;
    int k = lp_binary_inst_at_or_after(t->bin, x->fr->start, &ip, err);

    while (k == 1 && ip < x->fr->end) {
        if (lp_binary_symbolize(t->bin, ip, &fr, &n, err))
            return -1;
        lp_loc loc = n ? (lp_loc){fr[n - 1].line_offset, fr[n - 1].discriminator}
                       : (lp_loc){0, 0};
        if (push_addr(x, &acap, ip) || push_run(x, &rcap, (uint32_t)(x->n - 1), loc, n > 0))
            return cs_oom(err);
        k = lp_binary_next_inst(t->bin, ip, &ip, err);
    }
    return k < 0 ? -1 : 0;
}

/* The table of fr from t's set, built and added if absent (t's lock
 * held when shared). */
static cs_itab *find_or_build(cs_insts *t, const lp_func_range *fr, lp_error *err)
{
    cs_itab *x;

    HASH_FIND_PTR(t->tabs, &fr, x);
    if (x)
        return x;
    if (!(x = calloc(1, sizeof *x)))
        return cs_oom(err), NULL;
    x->fr = fr;
    if (build(t, x, err)) {
        free(x->addr);
        free(x->runs);
        free(x);
        return NULL;
    }
    HASH_ADD_PTR(t->tabs, fr, x);
    return x;
}

cs_itab *cs_insts_table(cs_insts *t, cs_icache *c, const lp_func_range *fr,
                        lp_error *err)
{
    cs_itab *x;

    if (c->last && c->last->fr == fr)
        return c->last;
    if ((x = c->recent[RECENT_SLOT(fr)]) && x->fr == fr)
        return c->last = x;
    if (t->lock)
        pthread_mutex_lock(t->lock);
    x = find_or_build(t, fr, err);
    if (t->lock)
        pthread_mutex_unlock(t->lock);
    if (x)
        c->last = c->recent[RECENT_SLOT(fr)] = x;
    return x;
}

/* first index in [lo, hi) with addr >= a (hi if none) */
size_t cs_itab_lower_in(const cs_itab *x, size_t lo, size_t hi, uint64_t a)
{
    size_t mid;

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (x->addr[mid] < a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

size_t cs_itab_lower(const cs_itab *x, uint64_t a)
{
    return cs_itab_lower_in(x, 0, x->n, a);
}

size_t cs_itab_run_at(const cs_itab *x, uint64_t a)
{
    size_t lo = 0, hi = x->nruns, mid;

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (x->addr[x->runs[mid].hi - 1] < a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

size_t cs_itab_run_of(const cs_itab *x, size_t i)
{
    size_t lo = 0, hi = x->nruns, mid;

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (x->runs[mid].hi <= i)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

const cs_irun *cs_itab_leaf(const cs_itab *x, uint64_t a)
{
    size_t i = cs_itab_lower(x, a);

    if (i >= x->n || x->addr[i] != a)
        return NULL;
    return &x->runs[cs_itab_run_of(x, i)];
}
