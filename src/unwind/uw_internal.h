/*
 * uw_internal.h - state shared by the files of the virtual unwinder
 * (src/unwind): the unwinder object, its caches and the helpers each file
 * provides to the others. Not public: users go through lbr2prof/unwind.h.
 *
 *   intake.c    sample intake: canonical addresses, call stack and LBR
 *               extraction (HybridPerfReader), frame repair, aggregation
 *   trie.c      the per-sample frame trie and the four unwind operations
 *               (VirtualUnwinder::unwind), range splitting by inline context
 *   collect.c   frame trie -> contexts (getExpandedContext, recursion
 *               compression, trimming) -> lp_ctxcount
 *   leafstate.c where a leaf IP sits in its function's frame set-up
 *   warn.c      llvm-profgen's warning summaries, and ours
 *   unwind.c    the object's life cycle, mmap events, batches
 */
#ifndef LBR2PROF_UNWIND_INTERNAL_H
#define LBR2PROF_UNWIND_INTERNAL_H

#include <stdarg.h>
#include <stdint.h>
#include <uthash.h>

#include "lbr2prof/fpunwind.h"
#include "lbr2prof/unwind.h"

#define UW_EXT ((uint64_t)LP_EXTERNAL_ADDR)

/* ---- arena: many small allocations freed together ------------------- */

typedef struct uw_chunk {
    struct uw_chunk *next;
    size_t used, cap;
    unsigned char data[];
} uw_chunk;

typedef struct uw_arena {
    uw_chunk *head;
    size_t bytes;               /* payload handed out */
} uw_arena;

void *uw_arena_alloc(uw_arena *a, size_t n);
void uw_arena_free(uw_arena *a);

/* Grow a malloc'ed vector to hold n elements. 0 or -1. */
int uw_grow(void **v, size_t *cap, size_t n, size_t elem);

/* ---- per-address facts about the profiled binary (direct-mapped cache) -- */

enum {
    UW_AI_VALID = 1, UW_AI_CODE = 2, UW_AI_CALL = 4, UW_AI_RET = 8,
    UW_AI_CS = 16,              /* callsite computed */
    UW_AI_PE = 32,              /* prolog/epilog computed ... */
    UW_AI_IN_PE = 64,           /* ... and the address is in the set */
};

typedef struct uw_ainfo {
    uint64_t addr;
    uint64_t callsite;          /* getCallAddrFromFrameAddr(addr), 0 none */
    uint8_t flags;
    uint8_t leaf;               /* enum lp_uw_leaf + 1, 0 = not computed */
} uw_ainfo;

#define UW_AC_BITS 14

/* ---- aggregated samples -------------------------------------------------- */

typedef struct uw_agg {
    UT_hash_handle hh;
    uint64_t repeat;
    uint32_t len;
    unsigned char key[];        /* varint-encoded call stack + LBR */
} uw_agg;

typedef struct uw_lbr {
    uint64_t src, dst;
} uw_lbr;

/* ---- the frame trie of one sample ------------------------------------------ */

typedef struct uw_node {
    uint64_t addr;
    int32_t parent, child, sib, last_child;  /* children in creation order */
    int32_t rec, rec_last;      /* this frame's ranges and branches */
} uw_node;

typedef struct uw_rec {
    uint64_t a, b;
    int32_t next;
    uint8_t branch;             /* 0 range [a, b], 1 branch a -> b */
} uw_rec;

/* ---- caches across samples --------------------------------------------------- */

typedef struct uw_piece {       /* one inline-context piece of a range */
    uint64_t frame, start, end;
} uw_piece;

typedef struct uw_split {       /* range [start, end] cut by inline context */
    UT_hash_handle hh;
    uint64_t key[2];
    uint32_t npieces;
    uw_piece pieces[];          /* in the order unwindLinear records them */
} uw_split;

/* Context cache (collect.c). The context of a frame is decided by the
 * exact caller addresses and by the leaf address's inline frames with the
 * leaf location zeroed - not by the leaf address itself: so the key is
 * (caller prefix id, leaf signature id), where prefix ids come from a trie
 * of (parent prefix id, address) pairs and signatures are inline stacks
 * deduplicated by content. An exact key (nothing probabilistic) that is
 * ~10x fewer entries than whole address stacks (one per leaf address). */
typedef struct uw_slot3 {       /* open addressing; v == 0: empty slot */
    uint64_t k1, k2, v;
} uw_slot3;

typedef struct uw_map {         /* at most half full */
    uw_slot3 *s;
    size_t mask, count;
} uw_map;

typedef struct uw_sig {         /* a leaf signature: the inline stack */
    const lp_frame *f;
    uint32_t k;
} uw_sig;

typedef struct uw_ctxcache {
    uw_map pfx;                 /* (parent prefix, address) -> prefix id */
    uw_map leaf;                /* (leaf address, 0) -> signature id */
    uw_map dedup;               /* (signature hash, j) -> signature id */
    uw_map ctx;                 /* (caller prefix, signature) -> entry */
    uw_sig *sigs;               /* by id - 1 */
    size_t nsigs, sigs_cap;
    uint64_t npfx;
    lp_ctx_entry *empty;        /* the empty stack's context */
    uint64_t *ids;              /* prefix id per u->stk position, 0 unknown */
    size_t ids_cap;
} uw_ctxcache;

typedef struct uw_set64 {       /* a set of addresses */
    UT_hash_handle hh;
    uint64_t v;
} uw_set64;

typedef struct uw_note {        /* a detailed-warning item, counted */
    UT_hash_handle hh;
    uint64_t k[2];
    uint64_t count;
} uw_note;

struct lp_unwinder {
    lp_unwind_opts o;
    lp_binary **bins;
    size_t nbins;
    lp_binary *bin;             /* bins[0] */
    lp_leaf_cache *leaves;      /* frame repair: leaf analysis per function */
    bool fs_disc;
    /* llvm-profgen's single-base address rule */
    uint64_t base, preferred, text_offset;
    bool loaded_by_mmap, missing_warned;
    uint32_t pid;               /* the sample being taken in (address map) */
    const char *name;           /* basename of the binary */
    uw_ainfo *ainfo;            /* 1 << UW_AC_BITS slots */
    /* intake scratch */
    uint64_t *cs;
    size_t cs_cap;
    uw_lbr *lbr;
    size_t lbr_cap;
    unsigned char *enc;
    size_t enc_cap;
    /* pending distinct samples */
    uw_agg *agg;
    uw_arena agg_arena;
    /* unwinding scratch */
    uw_node *nodes;
    size_t nnodes, nodes_cap;
    uw_rec *recs;
    size_t nrecs, recs_cap;
    uint64_t *stk;              /* collection stacks */
    size_t stk_cap;
    lp_ctx_frame *frames;       /* expanded context scratch */
    size_t frames_cap;
    uw_piece *pieces;           /* split scratch */
    size_t pieces_cap;
    /* caches */
    uw_split *splits;
    uw_ctxcache ctxc;
    uw_arena cache_arena;
    /* results and warning material */
    lp_ctxcount *cc;
    uw_set64 *invalid_ret;      /* InvalidReturnAddresses */
    bool untracked_ext;         /* UntrackedCallsites (only ExternalAddr) */
    uw_note *pairs;             /* every consecutive LBR pair, weighted */
    uw_note *notes_repaired, *notes_dropped, *notes_contextless;
    uint64_t total_samples;     /* NumTotalSample, if set */
    bool total_set;
    bool finished;
    lp_unwind_stats st;
};

/* ---- helpers between the files ----------------------------------------------- */

void uw_warnf(const lp_unwinder *u, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* emitWarningSummary */
void uw_summary(const lp_unwinder *u, uint64_t num, uint64_t total,
                const char *msg);
int uw_note_add(uw_note **set, uint64_t a, uint64_t b, uint64_t n);
int uw_set_add(uw_set64 **set, uint64_t v);

uw_ainfo *uw_addr(lp_unwinder *u, uint64_t vaddr);
uint64_t uw_callsite(lp_unwinder *u, uint64_t vaddr);
bool uw_in_prolog_epilog(lp_unwinder *u, uint64_t vaddr);
enum lp_uw_leaf uw_leaf_state(lp_unwinder *u, uint64_t vaddr);
enum lp_uw_leaf uw_classify_leaf(lp_binary *bin, lp_leaf_cache *c,
                                 uint64_t vaddr);

/* Decode an aggregated key into u->cs / u->lbr. */
void uw_decode(lp_unwinder *u, const uw_agg *g, size_t *ncs, size_t *nlbr);
/* Unwind one distinct sample into u->cc. */
int uw_unwind_one(lp_unwinder *u, const uint64_t *cs, size_t ncs,
                  const uw_lbr *lbr, size_t nlbr, uint64_t repeat,
                  lp_error *err);
/* The iteration order of std::unordered_map<uint64_t, ...> (libstdc++)
 * after inserting keys[0..m) in order: positions in order[]. 0, -1 OOM,
 * 1 too many keys (order untouched). */
int uw_umap_order(const uint64_t *keys, size_t m, int32_t *order);
/* collectSamplesFromFrameTrie over u->nodes. */
int uw_collect(lp_unwinder *u, uint64_t repeat, lp_error *err);
/* Unwind and drop everything pending. */
int uw_flush(lp_unwinder *u, lp_error *err);
/* Record the consecutive LBR pairs of a sample (warnInvalidRange). */
int uw_note_pairs(lp_unwinder *u, const uw_lbr *lbr, size_t n,
                  uint64_t repeat);
int uw_emit_warnings(lp_unwinder *u, lp_error *err);

#endif
