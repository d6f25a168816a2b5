/*
 * zalloc.h - lp_zalloc_written(): zeroed memory for a large table that is
 * read before it is written (a hash table's probes), zeroed by writing.
 * calloc leaves fresh pages untouched: the kernel maps them to the shared
 * zero page on the first read, and the first write into each then needs
 * a TLB shoot-down on every core the process runs on - an interrupt of
 * the other thread per page while the perf script parser runs (~370 per
 * run on bench (a) for the unwinder's address table alone). Owns nothing
 * else.
 */
#ifndef LBR2PROF_UTIL_ZALLOC_H
#define LBR2PROF_UTIL_ZALLOC_H

#include <stdlib.h>
#include <string.h>

static inline void *lp_zalloc_written(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);

    if (!p)
        return NULL;
    /* GCC turns malloc + memset(0) into calloc; the empty asm, which may
     * read the memory, keeps the two calls apart */
    __asm__ volatile("" : : "r"(p) : "memory");
    return memset(p, 0, bytes);
}

#endif
