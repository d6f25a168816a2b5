/*
 * sort.h - qsort for the small arrays the per-context stages sort ~10^5
 * times (a context's ranges and branches, its disjoint ranges): input
 * already in order costs one pass of comparisons, a short one an insertion
 * sort in place, a longer one qsort. All three are stable, as glibc's
 * qsort (a merge sort) is, so the result is qsort's on every input, ties
 * included. And lp_radix_sort, for the large arrays sorted by one integer
 * key (a profile's ~10^5 contexts by total, their densities). Owns only
 * the choice of algorithm.
 */
#ifndef LP_UTIL_SORT_H
#define LP_UTIL_SORT_H

#include <stdint.h>
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

/* An item of lp_radix_sort: its key and a value that goes with it. */
typedef struct lp_radix_item {
    uint64_t key;
    uint64_t val;
} lp_radix_item;

/* v[0..n) by key, ascending and stably: an LSD radix sort over the bytes
 * in which the keys differ (no comparison calls: ~10x fewer instructions
 * than qsort on 84k items). tmp has room for n; the result is in the
 * returned one of the two. */
static inline lp_radix_item *lp_radix_sort(lp_radix_item *v, lp_radix_item *tmp,
                                           size_t n)
{
    uint64_t any = 0, all = UINT64_MAX;
    size_t cnt[256], i, at, c;
    lp_radix_item *x;
    unsigned sh;

    for (i = 0; i < n; i++) {
        any |= v[i].key;
        all &= v[i].key;
    }
    for (sh = 0; sh < 64; sh += 8) {
        if (!(((any ^ all) >> sh) & 0xff))
            continue;           /* the same byte in every key */
        memset(cnt, 0, sizeof cnt);
        for (i = 0; i < n; i++)
            cnt[(v[i].key >> sh) & 0xff]++;
        for (i = 0, at = 0; i < 256; i++) {
            c = cnt[i];
            cnt[i] = at;
            at += c;
        }
        for (i = 0; i < n; i++)
            tmp[cnt[(v[i].key >> sh) & 0xff]++] = v[i];
        x = v;
        v = tmp;
        tmp = x;
    }
    return v;
}

#endif
