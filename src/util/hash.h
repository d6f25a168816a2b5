/*
 * hash.h - one 64-bit hash of a byte string for the project's own tables
 * (sample-block cache, context table, aggregated samples). Owns only the
 * mixing; the tables, and any order a reference tool's hash decides
 * (llvm-profgen's DJB2, libstdc++ buckets), live with their users.
 */
#ifndef LP_UTIL_HASH_H
#define LP_UTIL_HASH_H

#include <stdint.h>
#include <string.h>

/* Word-at-a-time multiply-xorshift; not for adversarial keys. */
static inline uint64_t lp_hash_bytes(const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n, w;
    size_t i;

    for (i = 0; i + 8 <= n; i += 8) {
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
        h ^= h >> 31;
    }
    w = 0;
    memcpy(&w, p + i, n - i);
    h = (h ^ w) * 0x94d049bb133111ebull;
    return h ^ (h >> 29);
}

#endif
