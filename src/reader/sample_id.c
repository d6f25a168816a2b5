/*
 * sample_id.c - the identity of a sample's stacks: a 128-bit digest of its
 * call chain and its branches' (from, to) pairs, without the branch flags
 * (cycles, prediction), which differ between samples that are otherwise
 * the same. The unwinder's intake keys the samples it has taken in before
 * on it (src/unwind/intake.c); the reader's thread (prefetch.c) computes
 * it ahead of the consumer for perf.data samples, so that the consumer
 * of a repeated sample reads neither array. Owns only the digest's input
 * layout; the hash is util/hash.h's, the memo is the unwinder's.
 */
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/reader.h"
#include "util/hash.h"

int lp_stacks_id_of(const uint64_t *chain, size_t nchain, const lp_branch_entry *br,
                    size_t nbr, uint64_t **scratch, size_t *cap, lp_stacks_id *id)
{
    size_t n = 2 + nchain + 2 * nbr, i, k = 0;
    uint64_t *w = *scratch;
    lp_digest d;

    if (n > *cap) {
        size_t c = *cap ? *cap : 64;
        while (c < n)
            c *= 2;
        if (!(w = realloc(*scratch, c * sizeof *w)))
            return -1;
        *scratch = w;
        *cap = c;
    }
    w[k++] = nchain;
    w[k++] = nbr;
    if (nchain)
        memcpy(w + k, chain, nchain * sizeof *chain);
    k += nchain;
    for (i = 0; i < nbr; i++) {
        w[k++] = br[i].from;
        w[k++] = br[i].to;
    }
    d = lp_digest_inline(w, k * sizeof *w);
    id->lo = d.lo;
    id->hi = d.hi | 1;          /* never {0, 0}: that is "not computed" */
    return 0;
}
