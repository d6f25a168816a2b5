/*
 * hash.h - one 64-bit hash of a byte string for the project's own tables
 * (context table, aggregated samples) and one 128-bit digest (the
 * sample-block cache, which keeps no copy of the text). Owns only the
 * choice of hash; the tables, and any order a reference tool's hash
 * decides (llvm-profgen's DJB2, libstdc++ buckets), live with their users.
 *
 * XXH3 (libxxhash): the sample-block cache hashes every ~1 KB block of
 * perf script text, so the hash must run at memory speed. Short keys use
 * the inlined code (no call); long ones libxxhash's runtime dispatch, which
 * picks AVX2 (or AVX-512) when the CPU has it, where the inlined code is
 * limited to the SSE2 the build targets (lp_digest_inline: the inlined
 * code built for AVX2 too, util/digest_avx2.c). All compute the same
 * XXH3 value.
 */
#ifndef LP_UTIL_HASH_H
#define LP_UTIL_HASH_H

#include <stddef.h>
#include <stdint.h>

/* The slot of an integer key (an address, a page, a pointer) in a table
 * of 2^bits slots (0 < bits < 64): Fibonacci hashing, the top bits of the
 * key times 2^64 / phi. */
static inline size_t lp_hash_fib(uint64_t key, unsigned bits)
{
    return (size_t)((key * 0x9e3779b97f4a7c15ull) >> (64 - bits));
}

/* A 128-bit digest, for identifying byte strings without keeping them. */
typedef struct lp_digest {
    uint64_t lo, hi;
} lp_digest;

/* The library's dispatching functions, before the inlined names below
 * take over XXH3_* and XXH128_hash_t. */
#define XXH_DISPATCH_DISABLE_REPLACE
#include <xxh_x86dispatch.h>

static inline uint64_t lp_hash_long(const void *data, size_t n)
{
    return (uint64_t)XXH3_64bits_dispatch(data, n);
}

static inline lp_digest lp_digest_long(const void *data, size_t n)
{
    XXH128_hash_t h = XXH3_128bits_dispatch(data, n);
    return (lp_digest){h.low64, h.high64};
}

#define XXH_INLINE_ALL
#include <xxhash.h>

#define LP_HASH_LONG 512        /* bytes from which the dispatch pays off */

/* Not for adversarial keys: tables compare the bytes on a hash match. */
static inline uint64_t lp_hash_bytes(const void *data, size_t n)
{
    return n > LP_HASH_LONG ? lp_hash_long(data, n)
                            : (uint64_t)XXH3_64bits(data, n);
}

static inline lp_digest lp_digest_bytes(const void *data, size_t n)
{
    XXH128_hash_t h;

    if (n > LP_HASH_LONG)
        return lp_digest_long(data, n);
    h = XXH3_128bits(data, n);
    return (lp_digest){h.low64, h.high64};
}

#if defined(__x86_64__)
/* util/digest_avx2.c: XXH3_128bits built for AVX2; only where the CPU
 * has it. */
lp_digest lp_digest_avx2(const void *data, size_t n);
#define LP_DIGEST_AVX2_FROM 256 /* bytes: XXH3's long-input loop */
#endif

/* The inlined code at every length, for a digest taken between other
 * work, one sample at a time: there the dispatched AVX-512 code measured
 * 2.5x slower than in a loop (~950 against ~380 cycles for a sample's
 * 570 bytes, src/reader/sample_id.c), its wide units cold at each call;
 * from 256 bytes on, the same code built for AVX2 where the CPU has it
 * (util/digest_avx2.c). The value is the same XXH3. */
static inline lp_digest lp_digest_inline(const void *data, size_t n)
{
    XXH128_hash_t h;

#if defined(__x86_64__)
    if (n > LP_DIGEST_AVX2_FROM && __builtin_cpu_supports("avx2"))
        return lp_digest_avx2(data, n);
#endif
    h = XXH3_128bits(data, n);
    return (lp_digest){h.low64, h.high64};
}

#endif
