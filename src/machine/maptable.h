/*
 * maptable.h - per-process tables of mappings, shared by machine.c
 * (lp_map, every mmap) and addrmap.c (the mmaps of known binaries).
 *
 * A table is a growable array of non-overlapping address ranges sorted by
 * start. Its elements are `size` bytes and begin with three uint64_t:
 * start, end (exclusive) and pgoff (the file offset of start), and are at
 * most MT_MAX_ELEM bytes; MT_CHECK asserts that of an element type. Owns the arrays, perf's overlap rule
 * (maps__fixup_overlappings) and the pid -> table hash; not what an
 * element says beyond its range. Not installed.
 */
#ifndef LBR2PROF_MAPTABLE_H
#define LBR2PROF_MAPTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uthash.h>

#define MT_MAX_ELEM 128
#define MT_CHECK(type)                                                       \
    _Static_assert(offsetof(type, start) == 0 && offsetof(type, end) == 8 && \
                   offsetof(type, pgoff) == 16 && sizeof(type) <= MT_MAX_ELEM, \
                   #type " is not a map table element")

typedef struct mt_table {
    unsigned char *v;
    size_t n, cap, size;
} mt_table;

/* The mappings of one process. */
typedef struct mt_proc {
    uint32_t pid;
    mt_table maps;
    UT_hash_handle hh;
} mt_proc;

static inline void *mt_at(const mt_table *t, size_t i)
{
    return t->v + i * t->size;
}

/* The element holding addr, or NULL. */
void *mt_find(const mt_table *t, uint64_t addr);
/* Put element e in: the elements it overlaps are cut back or split; e
 * itself is stored only if `store`. 0, or -1 (out of memory). */
int mt_place(mt_table *t, const void *e, bool store);
/* t = a copy of from (same element size). 0 or -1. */
int mt_copy(mt_table *t, const mt_table *from);

mt_proc *mt_proc_find(mt_proc *procs, uint32_t pid);
/* The process's table, created empty (elements of `size` bytes) if new;
 * NULL on OOM. */
mt_proc *mt_proc_findnew(mt_proc **procs, uint32_t pid, size_t size);
void mt_proc_free_all(mt_proc **procs);

#endif
