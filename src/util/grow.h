/*
 * util/grow.h - growing a buffer by doubling: the one reserve step the
 * project's append buffers share (context keys, the trie's emitted
 * context, the binary writers' lp_buf) and its arrays of elements (the
 * cross-reference hits, the tail-call walks' vectors, the PT return stack,
 * merge's inputs). Owns no buffer type of its own.
 */
#ifndef LBR2PROF_UTIL_GROW_H
#define LBR2PROF_UTIL_GROW_H

#include <stdint.h>
#include <stdlib.h>

/* Make *buf (capacity *cap bytes) hold at least `need` bytes: doubled from
 * *cap, or from `first` when empty. Contents are kept. 0, or -1 on no
 * memory (*buf unchanged). */
static inline int lp_grow_bytes(void **buf, size_t *cap, size_t need,
                                size_t first)
{
    size_t nc;
    void *nb;

    if (need <= *cap)
        return 0;
    for (nc = *cap ? *cap * 2 : first; nc < need; nc *= 2)
        ;
    if (!(nb = realloc(*buf, nc)))
        return -1;
    *buf = nb;
    *cap = nc;
    return 0;
}

/* The same for an array of `elem`-byte elements: *v holds *cap of them
 * and must hold at least `need`. 0, or -1 on no memory or a size that
 * does not fit (*v and *cap unchanged). */
static inline int lp_grow_array(void *v, size_t *cap, size_t need,
                                size_t elem, size_t first)
{
    size_t nc;
    void *nb, **pv = (void **)v;

    if (need <= *cap)
        return 0;
    for (nc = *cap ? *cap * 2 : first; nc < need; nc *= 2)
        ;
    if (nc > SIZE_MAX / elem || !(nb = realloc(*pv, nc * elem)))
        return -1;
    *pv = nb;
    *cap = nc;
    return 0;
}

#endif
