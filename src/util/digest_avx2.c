/*
 * digest_avx2.c - lp_digest_inline's XXH3 with the AVX2 code, built for
 * AVX2 (this file only: the Makefile's -mavx2) and called only where the
 * CPU has it (util/hash.h). libxxhash's dispatched code picks AVX-512 on
 * such CPUs, which measured slower one sample at a time; this is the
 * inlined code at twice the SSE2 width. Same XXH3 value. Owns nothing
 * else.
 */
#include "util/hash.h"

#if defined(__x86_64__) && defined(__AVX2__)
lp_digest lp_digest_avx2(const void *data, size_t n)
{
    XXH128_hash_t h = XXH3_128bits(data, n);

    return (lp_digest){h.low64, h.high64};
}
#endif
