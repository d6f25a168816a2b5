/*
 * util/varint.h - LEB128 varints and zig-zag deltas: the packing of
 * address lists (call stacks, LBR entries) where consecutive addresses
 * are close. Owns only the byte format; the lists' layouts live with
 * their users (the perf script block cache, src/reader/perfscript.c).
 */
#ifndef LBR2PROF_UTIL_VARINT_H
#define LBR2PROF_UTIL_VARINT_H

#include <stddef.h>
#include <stdint.h>

#define LP_VARINT_MAX 10        /* bytes of the longest (a u64) */

static inline size_t lp_put_uv(unsigned char *p, uint64_t v)
{
    size_t n = 0;

    while (v >= 0x80) {
        p[n++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (unsigned char)v;
    return n;
}

/* v as the zig-zag difference from *prev, which becomes v. */
static inline size_t lp_put_sv(unsigned char *p, uint64_t v, uint64_t *prev)
{
    int64_t d = (int64_t)(v - *prev);

    *prev = v;
    return lp_put_uv(p, ((uint64_t)d << 1) ^ (uint64_t)(d >> 63));
}

static inline uint64_t lp_get_uv(const unsigned char **p)
{
    uint64_t v = 0;
    unsigned sh = 0;

    while (**p & 0x80) {
        v |= (uint64_t)(**p & 0x7f) << sh;
        sh += 7;
        (*p)++;
    }
    v |= (uint64_t)**p << sh;
    (*p)++;
    return v;
}

static inline uint64_t lp_get_sv(const unsigned char **p, uint64_t *prev)
{
    uint64_t z = lp_get_uv(p);

    *prev += (z >> 1) ^ (uint64_t)-(int64_t)(z & 1);
    return *prev;
}

#endif
