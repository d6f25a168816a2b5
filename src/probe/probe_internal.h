/*
 * probe_internal.h - the decoded probe table shared by src/probe's files:
 *
 *   elfsec.c   the ELF file: the two probe sections' bytes and the symbol
 *              table (name GUIDs and addresses), lp_probes_open/free
 *   decode.c   .pseudo_probe_desc and .pseudo_probe -> the arrays below
 *   lookup.c   lookups by address, inline stacks, printing
 *
 * Not public: users go through lbr2prof/probe.h.
 */
#ifndef LBR2PROF_PROBE_INTERNAL_H
#define LBR2PROF_PROBE_INTERNAL_H

#include "lbr2prof/probe.h"

typedef struct pb_sym {         /* a symbol of .symtab */
    uint64_t addr;              /* first: pb_lower's key */
    const char *name;           /* in the ELF's string table copy */
    uint32_t order;             /* index in the symbol table */
} pb_sym;

struct lp_probes {
    char *path;
    /* section bytes (copies) */
    unsigned char *desc_sec, *probe_sec;
    size_t desc_len, probe_len;
    /* symbols sorted by address (ties in symbol-table order) */
    pb_sym *syms;
    size_t nsyms;
    char *strtab;
    /* descriptions sorted by GUID; names in one block */
    lp_probe_desc *descs;
    size_t ndescs;
    char *names;
    /* the decoded forest */
    bool decoded;
    lp_probe *probes;           /* decode order: each node's contiguous */
    size_t nprobes, probes_cap;
    lp_probe_node *nodes;
    size_t nnodes, nodes_cap;
    uint32_t *tops;             /* top-level nodes in section order */
    size_t ntops, tops_cap;
    /* address index: probe ids by (addr, id), and their addresses */
    uint32_t *by_addr;
    uint64_t *addr_keys;
    /* buckets over it (decode.c's index_buckets; NULL for small tables):
     * bkt[i] the first key >= bkt_lo + (i << bkt_shift), i <= nbkt */
    uint32_t *bkt;
    size_t nbkt;
    uint64_t bkt_lo;
    unsigned bkt_shift;
};

/* decode.c */
int pb_decode_descs(lp_probes *p, lp_error *err);

/* The first of n elements of `stride` bytes, sorted by the uint64_t key
 * each starts with, whose key is >= key (n if none). */
static inline size_t pb_lower(const void *base, size_t n, size_t stride,
                              uint64_t key)
{
    const unsigned char *b = base;
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (*(const uint64_t *)(const void *)(b + mid * stride) < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

#endif
