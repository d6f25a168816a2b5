/*
 * sort.h - qsort for the small arrays the per-context stages sort ~10^5
 * times (a context's ranges and branches, its disjoint ranges): input
 * already in order costs one pass of comparisons, a short one an insertion
 * sort in place, a longer one qsort. All three are stable, as glibc's
 * qsort (a merge sort) is, so the result is qsort's on every input, ties
 * included. Owns only the choice of algorithm.
 */
#ifndef LP_UTIL_SORT_H
#define LP_UTIL_SORT_H

#include <stdlib.h>
#include <string.h>

#define LP_SORT_SMALL 24
#define LP_SORT_MAX_ELEM 64

/* Returns whether anything moved (0: the input was in order). */
static inline int lp_sort(void *base, size_t n, size_t size,
                          int (*cmp)(const void *, const void *))
{
    unsigned char *v = base, tmp[LP_SORT_MAX_ELEM];
    size_t i, j;

    for (i = 1; i < n && cmp(v + (i - 1) * size, v + i * size) <= 0; i++)
        ;
    if (i >= n)
        return 0;
    if (n > LP_SORT_SMALL || size > LP_SORT_MAX_ELEM) {
        qsort(base, n, size, cmp);
        return 1;
    }
    for (; i < n; i++) {        /* v[0 .. i) is in order */
        if (cmp(v + (i - 1) * size, v + i * size) <= 0)
            continue;
        memcpy(tmp, v + i * size, size);
        for (j = i; j > 0 && cmp(v + (j - 1) * size, tmp) > 0; j--)
            ;
        memmove(v + (j + 1) * size, v + j * size, (i - j) * size);
        memcpy(v + j * size, tmp, size);
    }
    return 1;
}

#endif
