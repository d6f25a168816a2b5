/*
 * maptable.c - per-process tables of non-overlapping mappings sorted by
 * start (see maptable.h): lookup, perf's overlap fix-up on insertion
 * (maps__fixup_overlappings: the old mappings a new one overlaps are cut
 * back, or split in two around it), copies for fork. Owns the arrays and
 * the pid hash; not what the mappings are of (machine.c, addrmap.c).
 */
#include <stdlib.h>
#include <string.h>

#include "machine/maptable.h"

/* The three leading fields of an element, read and written by offset
 * (elements are of the callers' types). */
enum { F_START = 0, F_END = 8, F_PGOFF = 16 };

static uint64_t get(const void *e, size_t off)
{
    uint64_t v;

    memcpy(&v, (const unsigned char *)e + off, sizeof v);
    return v;
}

static void set(void *e, size_t off, uint64_t v)
{
    memcpy((unsigned char *)e + off, &v, sizeof v);
}

/* Index of the first element whose end is > addr. */
static size_t first_ending_after(const mt_table *t, uint64_t addr)
{
    size_t lo = 0, hi = t->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (get(mt_at(t, mid), F_END) <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int reserve(mt_table *t, size_t need)
{
    size_t cap = t->cap ? t->cap : 8;
    unsigned char *v;

    if (need <= t->cap)
        return 0;
    while (cap < need)
        cap *= 2;
    if (!(v = realloc(t->v, cap * t->size)))
        return -1;
    t->v = v;
    t->cap = cap;
    return 0;
}

void *mt_find(const mt_table *t, uint64_t addr)
{
    size_t i = first_ending_after(t, addr);

    if (i < t->n && get(mt_at(t, i), F_START) <= addr)
        return mt_at(t, i);
    return NULL;
}

/* Elements [i, j) overlap [start, end): what is left of the first one
 * before start goes to *left, of the last one after end to *right. */
static void cut_ends(const mt_table *t, size_t i, size_t j, uint64_t start,
                     uint64_t end, void *left, bool *keep_left, void *right,
                     bool *keep_right)
{
    *keep_left = i < j && get(mt_at(t, i), F_START) < start;
    *keep_right = i < j && get(mt_at(t, j - 1), F_END) > end;
    if (*keep_left) {
        memcpy(left, mt_at(t, i), t->size);
        set(left, F_END, start);
    }
    if (*keep_right) {
        memcpy(right, mt_at(t, j - 1), t->size);
        set(right, F_PGOFF, get(right, F_PGOFF) + end - get(right, F_START));
        set(right, F_START, end);
    }
}

int mt_place(mt_table *t, const void *e, bool store)
{
    uint64_t start = get(e, F_START), end = get(e, F_END);
    unsigned char left[MT_MAX_ELEM], right[MT_MAX_ELEM];
    bool keep_left, keep_right;
    size_t i, j, add;

    if (end <= start)
        return 0;
    if (reserve(t, t->n + 3) < 0)
        return -1;
    i = first_ending_after(t, start);
    for (j = i; j < t->n && get(mt_at(t, j), F_START) < end; j++)
        ;
    cut_ends(t, i, j, start, end, left, &keep_left, right, &keep_right);
    add = keep_left + store + keep_right;
    memmove(mt_at(t, i + add), mt_at(t, j), (t->n - j) * t->size);
    t->n = t->n - (j - i) + add;
    if (keep_left)
        memcpy(mt_at(t, i++), left, t->size);
    if (store)
        memcpy(mt_at(t, i++), e, t->size);
    if (keep_right)
        memcpy(mt_at(t, i), right, t->size);
    return 0;
}

int mt_copy(mt_table *t, const mt_table *from)
{
    t->n = 0;
    if (reserve(t, from->n) < 0)
        return -1;
    memcpy(t->v, from->v, from->n * t->size);
    t->n = from->n;
    return 0;
}

/* ---- the processes ------------------------------------------------------------ */

mt_proc *mt_proc_find(mt_proc *procs, uint32_t pid)
{
    mt_proc *p;

    HASH_FIND(hh, procs, &pid, sizeof pid, p);
    return p;
}

mt_proc *mt_proc_findnew(mt_proc **procs, uint32_t pid, size_t size)
{
    mt_proc *p = mt_proc_find(*procs, pid);

    if (p)
        return p;
    if (!(p = calloc(1, sizeof *p)))
        return NULL;
    p->pid = pid;
    p->maps.size = size;
    HASH_ADD(hh, *procs, pid, sizeof p->pid, p);
    return p;
}

void mt_proc_free_all(mt_proc **procs)
{
    mt_proc *p, *tp;

    HASH_ITER(hh, *procs, p, tp) {
        HASH_DEL(*procs, p);
        free(p->maps.v);
        free(p);
    }
}
