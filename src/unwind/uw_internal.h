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

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <uthash.h>

#include "lbr2prof/fpunwind.h"
#include "lbr2prof/unwind.h"
#include "util/arena.h"
#include "util/cpus.h"

#define UW_EXT ((uint64_t)LP_EXTERNAL_ADDR)
/* Frame addresses only the repair makes (never with --no-repair-frames):
 * a signal frame (the return address the kernel pushed for a handler: a
 * signal restorer, `mov $0xf,%rax; syscall`), a frame whose address is
 * not known yet (a hole, filled in when the LBR shows its call), and the
 * bottom of a call stack that is not known at all (a chain of holes). */
#define UW_SIG ((uint64_t)2)
#define UW_HOLE ((uint64_t)3)
#define UW_LOST ((uint64_t)4)
/* a hole that may not be there: the frame-pointer walk may or may not
 * have had the caller (code interrupted on a path where the frame is set
 * up at some instructions and not at others) */
#define UW_OPT ((uint64_t)5)
/* no address of code is <= this */
#define UW_LAST_SENTINEL UW_OPT

/* A frame or LBR address of code: the binary's index in the top 16 bits,
 * its link-time address below (binary 0: the address itself, so one
 * binary gives llvm-profgen's values), 48 bits of it: an x86-64 canonical
 * address, sign-extended from bit 47 (a kernel's, --kernel, has the top
 * bits set: uw_va gives them back). The sentinels above are binary 0's. */
#define UW_BIN_SHIFT 48
#define UW_VA_MASK ((UINT64_C(1) << UW_BIN_SHIFT) - 1)
static inline bool uw_va_fits(uint64_t vaddr)
{
    uint64_t top = vaddr >> (UW_BIN_SHIFT - 1);
    return top == 0 || top == (UINT64_C(1) << (65 - UW_BIN_SHIFT)) - 1;
}
static inline uint64_t uw_enc(size_t bin, uint64_t vaddr)
{
    return ((uint64_t)bin << UW_BIN_SHIFT) | (vaddr & UW_VA_MASK);
}
static inline size_t uw_bin_of(uint64_t a) { return (size_t)(a >> UW_BIN_SHIFT); }
static inline uint64_t uw_va(uint64_t a)
{
    uint64_t v = a & UW_VA_MASK;
    return v >> (UW_BIN_SHIFT - 1) ? v | ~UW_VA_MASK : v;
}

/* Grow a malloc'ed vector of *cap elements of elem bytes to hold n
 * elements (doubling, from 64). 0 or -1. The check is inline: callers
 * call it before every append. */
int uw_grow_slow(void **v, size_t *cap, size_t n, size_t elem);

static inline int uw_grow(void **v, size_t *cap, size_t n, size_t elem)
{
    return n <= *cap ? 0 : uw_grow_slow(v, cap, n, elem);
}

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
    uint32_t sig;               /* the address's leaf signature id in this
                                   unwinder's context cache (collect.c),
                                   0 = not known here */
} uw_ainfo;

/* uw_valid_range's answers (uw_fallthrough's too), direct-mapped by (a, b) */
typedef struct uw_ftslot {
    uint64_t a, b;
    bool known, ok;
} uw_ftslot;

#define UW_FT_SIZE 32768

/* During the parallel flush, each thread's last symbolizations,
 * direct-mapped by address (addr 0: empty): the frames stay where the
 * binary's cache put them, so a hit needs neither the binaries' lock nor
 * a probe of the binary's large table (collect.c, uw_symbolize). 16
 * bytes: the frames' pointer in the low 48 bits of fk (a user-space
 * address; one that is not is not kept), their count in the top 16. */
typedef struct uw_symslot {
    uint64_t addr;
    uint64_t fk;
} uw_symslot;

#define UW_SYMC_BITS 12

#define UW_AC_BITS 16
#define UW_AC_SIZE (((size_t)1 << UW_AC_BITS) * sizeof(uw_ainfo))

/* uw_canon's answers (direct-mapped by process and runtime address),
 * valid for one memo generation: the address map, the single base and
 * the binaries' mappings do not change within one. */
typedef struct uw_cslot {
    uint64_t rt, c;             /* c: the frame address, UW_EXT: not code */
    uint32_t pid, gen;          /* gen: memo_gen's low bits + 1, 0 empty */
    uint8_t flags;              /* c's uw_ainfo flags (the restorer check
                                   asks every LBR source's) */
} uw_cslot;

#define UW_CS_BITS 14

/* ---- aggregated samples -------------------------------------------------- */

/* 48 bytes before the key (a uthash handle alone was 56: ~71 K of them
 * are alive at the end of reading, the probe runs' peak) */
typedef struct uw_agg {
    struct uw_agg *next;        /* the next pending sample, in order of
                                   first occurrence */
    struct uw_agg *chain;       /* the next in its slot of u->agg_slots */
    uint64_t repeat;
    uint64_t djb;               /* llvm-profgen's PerfSample::getHashCode:
                                   decides the order samples are unwound in */
    int32_t replay;             /* its recorded unwinding in u->replays, or -1 */
    uint32_t len;
    uint32_t hash;              /* lp_hash_bytes of the key, truncated */
    uint32_t pos;               /* its place in the flush's unwinding order
                                   (its rank's low half: uw_flush_one) */
    unsigned char key[];        /* varint-encoded call stack + LBR */
} uw_agg;

/* ---- unwinding recorded ahead, replayed at the flush ------------------------ */

/* lp_unwind_warm_next unwinds a distinct sample before its count is
 * final: what does not depend on the count (statistics counted once per
 * unwinding, contexts, caches) is done then; what grows with the count
 * is recorded, and uw_flush replays it with the final count instead of
 * unwinding the sample again. The effects: */
enum { UW_EFF_RANGE, UW_EFF_BRANCH, UW_EFF_NOTE_LOST, UW_EFF_NOTE_CTXLESS,
       UW_EFF_LEAF };           /* LEAF: a: the leaf was inlined, given
                                   to lp_ctx_entry_leaf with the sample's
                                   rank, known at the flush only */

typedef struct uw_eff {
    lp_ctx_entry *e;            /* counters: their context; notes: NULL */
    uint64_t a, b;              /* range, branch (b as added), or note key */
    uint32_t kind;
} uw_eff;

/* One recorded unwinding: its effects u->effs[first, first + n), and the
 * statistics it adds per unit of count. */
typedef struct uw_replay {
    size_t first, n;
    uint64_t contextless, signal_frames, nonlocal, interrupted;
    uint64_t lost, lost_records;
} uw_replay;

/* Bytes of effects recorded at most (then samples are unwound at the
 * flush as before): bench (a)'s 1,233 distinct samples take ~2.3 MB. */
#define UW_REPLAY_BYTES (4u << 20)

typedef struct uw_lbr {
    uint64_t src, dst;
} uw_lbr;

/* ---- the frame trie of one sample ------------------------------------------ */

enum {
    UW_NF_PROVEN = 1,           /* the link to the parent is certain: the
                                   frame was entered by a return (or is a
                                   later position of such a frame) */
    UW_NF_HOLE = 2,             /* address not known (yet) */
    UW_NF_OPT = 4,              /* ... and the frame may not exist (UW_OPT) */
};

typedef struct uw_node {
    uint64_t addr;
    int32_t parent, child, sib, last_child;  /* children in creation order */
    int32_t rec, rec_last;      /* this frame's ranges and branches */
    uint32_t sig;               /* addr's leaf signature id, 0 not known */
    uint8_t flags;              /* UW_NF_* */
} uw_node;

typedef struct uw_rec {
    uint64_t a, b;
    int32_t next;
    uint8_t branch;             /* 0 range [a, b], 1 branch a -> b */
} uw_rec;

/* ---- caches across samples --------------------------------------------------- */

typedef struct uw_piece {       /* one inline-context piece of a range */
    uint64_t frame, start, end;
    uint32_t sig[2];            /* frame's leaf signature id in the context
                                   cache of the unwinder (0) and of the
                                   parallel flush's worker (1, uw_role),
                                   0 not known: each thread writes its own */
} uw_piece;

typedef struct uw_split {       /* a range cut by inline context (u->splits
                                   maps (start, end) to it) */
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

static inline uint64_t uw_mix(uint64_t a, uint64_t b)
{
    uint64_t h = (a ^ 0x51ed27048d1a6c5bull) * 0xbf58476d1ce4e5b9ull;
    h = (h ^ (h >> 29) ^ b) * 0x94d049bb133111ebull;
    return h ^ (h >> 32);
}

typedef struct uw_slot2 {       /* a narrow map's slot (unwind.c) */
    uint64_t k1;
    uint32_t k2, v;
} uw_slot2;

typedef struct uw_map {         /* at most 3/4 full */
    union {
        uw_slot3 *s;            /* !narrow */
        uw_slot2 *ns;           /* narrow: every k2 and value fit 32 bits */
    };
    size_t mask, count;
    bool narrow;
    bool wide_only;             /* never narrow: others read its slots */
} uw_map;

typedef struct uw_sig {         /* a leaf signature: the inline stack */
    const lp_frame *f;
    uint32_t k;
    uint32_t bin;               /* the binary it was symbolized in */
} uw_sig;

/* The last contexts found by (caller prefix, signature), direct-mapped:
 * a sample's ~60 frames with records have ~12 distinct contexts (bench
 * (c)), so most lookups end here instead of in the large map. */
#define UW_CTXMEMO_BITS 8
typedef struct uw_ctxmemo {
    uint64_t callers, sig;
    lp_ctx_entry *e;            /* NULL: empty */
    bool wli;                   /* its leaf was inlined */
} uw_ctxmemo;

typedef struct uw_cfpos {      /* a position of uw_ctxcache.cf */
    size_t end;                 /* its frames' end in cf */
    size_t first_empty;         /* the first position at or below it
                                   whose address has no frames, or
                                   SIZE_MAX */
} uw_cfpos;

typedef struct uw_ctxcache {
    uw_ctxmemo memo[1 << UW_CTXMEMO_BITS];
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
    uw_sig *stk_fr;             /* per u->stk position: its address's
                                   frames, once a context needed them
                                   (k == UINT32_MAX: not yet) */
    size_t stk_fr_cap;
    lp_ctx_frame *cf;           /* the frames of u->stk[0..cf_n) as a
                                   context has them, one position after
                                   the other (collect.c's base_callers) */
    size_t cf_cap, cf_n;
    uw_cfpos *cf_pos;           /* per position below cf_n */
    size_t cf_pos_cap;
} uw_ctxcache;

/* The intake of a sample whose text block was seen before (dup_id), done
 * once and replayed: what it added to the statistics and the aggregated
 * sample it counted in (NULL: dropped). Valid while `gen` is the
 * unwinder's memo_gen (a flush or an mmap event starts a new one).
 * 64 K slots of 72 bytes (4.7 MB), two-way: a key's set is the slot
 * pair its low bits (the lowest cleared) pick, a new intake goes first
 * in its set and the older entry second (the second dropped). SQLite's
 * 1.6 M samples: 92 K intakes (89.8 K with an unbounded memo; 103 K
 * direct-mapped, 170 K with 8 K slots); a count or a delta beyond 32
 * bits is not memoized. It starts at 4 K slots (295 KB) and grows 4x
 * whenever the entries recorded since its last growth pass half its
 * slots: a trace of few distinct samples (bench (b): ~3 K) does not keep
 * 4.7 MB resident through its reading, its peak. */
#define UW_MEMO_BITS 16
#define UW_MEMO_MIN_BITS 12
#define UW_MEMO_DELTAS 6
typedef struct uw_memo {
    uint64_t id, id2;           /* dup_id and 0, or the sample's digest */
    uint64_t gen;
    uw_agg *g;
    uint32_t pid;
    uint8_t nd, nc;             /* deltas: stats field index, amount; the
                                   first nc per input sample (lp_sample.
                                   calls), the others per unit of weight
                                   (intake.c's uw_per_call) */
    uint8_t field[UW_MEMO_DELTAS];
    uint32_t delta[UW_MEMO_DELTAS];
} uw_memo;

typedef struct uw_set64 {       /* a set of addresses */
    UT_hash_handle hh;
    uint64_t v;
} uw_set64;

typedef struct uw_note {        /* a detailed-warning item, counted */
    UT_hash_handle hh;
    uint64_t k[2];
    uint64_t count;
} uw_note;

typedef struct uw_mmap {       /* an mmap event, for reading code bytes */
    uint32_t pid;
    uint64_t start, end, pgoff;
    const char *path;           /* in the unwinder's cache arena */
} uw_mmap;

typedef struct uw_file {        /* an open file of a mapping */
    UT_hash_handle hh;
    int fd;                     /* -1: could not be opened */
    const char *path;
} uw_file;

struct lp_unwinder {
    lp_unwind_opts o;
    /* the parallel flush (unwind.c): a worker is a copy of the unwinder
     * with caches, scratch and results of its own; `owner` is the
     * unwinder it works for (whose inference state and leaf cache it
     * shares), NULL for the unwinder itself. While workers run, `lock`
     * (recursive) guards the binaries and what the workers share; NULL:
     * one thread, no locking. */
    pthread_mutex_t *lock;
    struct lp_unwinder *owner;
    lp_binary **bins;
    size_t nbins;
    lp_binary *bin;             /* bins[0], the profiled program */
    lp_leaf_cache *leaves;      /* frame repair: leaf analysis per function */
    bool fs_disc;
    /* llvm-profgen's single-base address rule */
    uint64_t base, preferred, text_offset;
    bool loaded_by_mmap, missing_warned;
    uint32_t pid;               /* the sample being taken in (address map) */
    uint64_t calls;             /* ... the input samples it stands for */
    const char *name;           /* basename of the binary */
    uw_ainfo *ainfo;            /* 1 << UW_AC_BITS slots */
    uw_cslot *canon;            /* 1 << UW_CS_BITS slots, made at first use */
    uw_ftslot *ft;              /* UW_FT_SIZE slots, made at first use */
    uw_symslot *symc;           /* 1 << UW_SYMC_BITS slots during the
                                   parallel flush, else NULL */
    /* intake scratch */
    uint64_t *cs;
    size_t cs_cap;
    uint64_t *kst;              /* --kernel: a callchain without its markers */
    size_t kst_cap;
    uw_lbr *lbr;
    size_t lbr_cap;
    unsigned char *enc;
    size_t enc_cap;
    uint64_t lbr0_to;           /* LBR[0]'s target as recorded */
    /* pending distinct samples, one malloc each: the flush frees each
     * once unwound (uw_agg_done), so that the unwinding's contexts and
     * counters take their place instead of growing the heap further */
    uw_agg *agg;                /* the first (then ->next, in order) */
    uw_agg *agg_last;           /* the last */
    uw_agg **agg_slots;         /* chains by hash & agg_mask (agg.c) */
    size_t nagg, agg_mask;
    size_t agg_bytes;           /* their bytes, rounded as an arena would */
    uw_agg **flush_ins;         /* during a flush: its samples in insertion
                                   order, all alive until the inference
                                   has learned them (uw_agg_done) */
    size_t flush_n;
    /* intakes done once per dup_id (made at the first sample, grown up
     * to 1 << UW_MEMO_BITS slots) */
    uw_memo *memo;
    unsigned memo_bits;         /* 1 << memo_bits slots */
    size_t memo_fill;           /* entries recorded since it grew */
    uint64_t memo_gen;
    uint64_t map_changes;       /* lp_addrmap_changes(o.map) at the last
                                   sample: a new value starts a new memo */
    uint64_t intake_notes;      /* detailed-warning notes the intake added */
    uint64_t *dig;              /* perf.data samples: digest input scratch */
    uint64_t memo_kind;         /* the walk flags of the last memo key
                                   (lp_unwind_ahead's guess) */
    size_t dig_cap;
    uw_agg *last_agg;           /* where the last intake counted, or NULL */
    uw_agg *warmed;             /* the last of agg lp_unwind_warm_next did */
    uw_replay *rec;             /* recording (lp_unwind_warm_next), else NULL */
    uw_replay *replays;
    size_t nreplays, replays_cap;
    uw_eff *effs;
    size_t neffs, effs_cap;
    bool replay_full;           /* UW_REPLAY_BYTES reached: no more recording */
    uint64_t flushes;           /* flushes done */
    uint64_t rank;              /* the sample being unwound's place in
                                   llvm-profgen's order: flushes << 32 | pos */
    /* unwinding scratch */
    uw_node *nodes;
    size_t nnodes, nodes_cap;
    uw_rec *recs;
    size_t nrecs, recs_cap;
    /* (parent, address) -> node: child()'s index of the trie's children
     * created by it (trie.c); an entry is this sample's when its gen is
     * kids_gen. Off for the rest of a sample once a node is moved or a
     * hole revealed (the repair): the sibling lists answer then. */
    struct uw_kid { int32_t node; uint32_t gen; } *kids;
    unsigned kids_bits;
    uint32_t kids_gen;
    bool kids_on;
    uint64_t *stk;              /* collection stacks */
    size_t stk_cap;
    lp_ctx_frame *frames;       /* expanded context scratch */
    size_t frames_cap;
    uint64_t *akey;             /* address context scratch */
    size_t akey_cap;
    uw_piece *pieces;           /* split scratch */
    size_t pieces_cap;
    /* caches */
    uw_map splits;              /* (start, end) -> uw_split * */
    uw_map *peer_splits;        /* during the parallel flush: the other
                                   thread's `splits`, read under the lock
                                   (each thread writes its own under it),
                                   so that a range is cut once */
    uw_ctxcache ctxc;
    lp_ctx_entry **root_entries;/* the empty context, per binary */
    lp_arena cache_arena;
    /* results and warning material */
    lp_ctxcount *cc;
    uw_set64 *invalid_ret;      /* InvalidReturnAddresses */
    bool untracked_ext;         /* UntrackedCallsites (only ExternalAddr) */
    uw_map pairs;               /* every consecutive LBR pair -> weight */
    uw_note *notes_repaired, *notes_dropped, *notes_contextless;
    uw_note *notes_lost;        /* (kind, address) of unknown contexts */
    /* every mmap seen, and what was read through them */
    uw_mmap *maps;
    size_t nmaps, maps_cap;
    bool other_maps;            /* the trace maps more than the binary: it
                                   shows the processes' libraries */
    uw_file *files;
    uw_note *restorers;         /* (pid, address) -> ext_facts (unwind.c) */
    /* callers inferred from the call graph the LBR shows (infer.c) */
    struct lp_tailcall **tcs;   /* per binary, created when needed */
    uw_map infer_cache;         /* (below function, callee function) ->
                                   encoded call site, or 1: none */
    bool infer_pending;         /* samples of this flush not in the graphs */
    struct lp_unwinder *infer_cu; /* during uw_infer_caller: the unwinder
                                   whose address caches it uses */
    uw_map enriched;            /* (function, 0 into / 1 out of) -> 1: its
                                   static tail calls are in the graph */
    const lp_function **closure; /* a tail closure being searched */
    size_t nclosure, closure_cap;
    uw_lbr *infer_lbr;          /* decoding scratch */
    size_t infer_lbr_cap;
    uint64_t total_samples;     /* NumTotalSample, if set */
    bool total_set;
    bool finished;
    struct uw_cfi *cfi;         /* CFI stacks (cfistack.c), made at first use */
    lp_unwind_stats st;
};

/* kinds of notes_lost (first key) */
enum { UW_LOST_NONLOCAL = 1, UW_LOST_ASYNC = 2, UW_LOST_NORET = 3,
       UW_LOST_LANDING = 4 };

/* ---- helpers between the files ----------------------------------------------- */

/* Which thread of the parallel flush u is: 0 the unwinder, 1 a worker. */
static inline unsigned uw_role(const lp_unwinder *u)
{
    return u->owner != NULL;
}

/* Tries before uw_lock sleeps on the mutex. The lock is held ~0.5 us
 * on average (a symbolization, a range cut), but a thread that sleeps on
 * it pays a futex sleep and wake-up, tens of us: sqlite-line's flush
 * made ~7 K such waits, 0.1 s of each thread's 0.4 s. Spinning first
 * (up to ~1000 pauses, well above the holds) keeps both threads running;
 * a holder descheduled under load still ends in the sleep. */
#define UW_LOCK_SPIN 1024

/* Around every call into the binaries (and the shared leaf cache and
 * inference state) that may run on a worker of the parallel flush. */
static inline void uw_lock(const lp_unwinder *u)
{
    int i;

    if (!u->lock)
        return;
    for (i = 0; i < UW_LOCK_SPIN; i++) {
        if (pthread_mutex_trylock(u->lock) == 0)
            return;
        lp_cpu_relax();
    }
    pthread_mutex_lock(u->lock);
}

static inline void uw_unlock(const lp_unwinder *u)
{
    if (u->lock)
        pthread_mutex_unlock(u->lock);
}

/* The unwinder whose inference state (infer.c) u uses. */
static inline lp_unwinder *uw_owner(lp_unwinder *u)
{
    return u->owner ? u->owner : u;
}

void uw_warnf(const lp_unwinder *u, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* emitWarningSummary */
void uw_summary(const lp_unwinder *u, uint64_t num, uint64_t total,
                const char *msg);
int uw_note_add(uw_note **set, uint64_t a, uint64_t b, uint64_t n);
/* uw_map: the value of (k1, k2), 0 if absent; insert a key known to be
 * absent (v != 0); add n to a key's value (created if n != 0); every
 * entry, sorted by (k1, k2) or in slot order (malloc'ed, m->count of
 * them). */
uint64_t uw_map_get(const uw_map *m, uint64_t k1, uint64_t k2);
int uw_map_put(uw_map *m, uint64_t k1, uint64_t k2, uint64_t v);
int uw_map_add(uw_map *m, uint64_t k1, uint64_t k2, uint64_t n);
uw_slot3 *uw_map_list(const uw_map *m, bool sort);
/* Every entry of src added to dst. 0 or -1. */
int uw_map_add_all(uw_map *dst, const uw_map *src);
int uw_set_add(uw_set64 **set, uint64_t v);

uw_ainfo *uw_addr(lp_unwinder *u, uint64_t vaddr);
/* vaddr's facts if they are cached, else NULL (nothing computed). */
uw_ainfo *uw_addr_peek(lp_unwinder *u, uint64_t vaddr);
/* The binary of an encoded address. */
lp_binary *uw_bin(const lp_unwinder *u, uint64_t a);
/* lp_binary_func_range for an encoded address (NULL for sentinels). */
const lp_func_range *uw_func_range(const lp_unwinder *u, uint64_t a);
/* Whether code can have run from a to b without a taken branch: both ends
 * external, or llvm-profgen's valid fall-through in one binary. */
bool uw_fallthrough(lp_unwinder *u, uint64_t a, uint64_t b);
/* lp_binary_valid_fallthrough(a's binary, a, b) for two addresses of one
 * binary, cached: 1, 0, or -1 with err set. */
int uw_valid_range(lp_unwinder *u, uint64_t a, uint64_t b, lp_error *err);
/* Whether the runtime address rt of the current sample's process is the
 * start of a signal restorer (`mov $0xf,%rax; syscall`, rt_sigreturn),
 * read from the mapped file. */
bool uw_is_restorer(lp_unwinder *u, uint64_t rt);
/* Whether rt is in some mapping of the trace (true when the trace maps
 * nothing but the profiled binary: then it does not show everything). */
bool uw_is_mapped(lp_unwinder *u, uint64_t rt);
uint64_t uw_callsite(lp_unwinder *u, uint64_t vaddr);
bool uw_in_prolog_epilog(lp_unwinder *u, uint64_t vaddr);
enum lp_uw_leaf uw_leaf_state(lp_unwinder *u, uint64_t vaddr);
enum lp_uw_leaf uw_classify_leaf(lp_binary *bin, lp_leaf_cache *c,
                                 uint64_t vaddr);
/* The frames of code interrupted somewhere on the straight-line path from
 * addr (up to its first unconditional transfer; the kernel delivered a
 * signal there), as the frame-pointer walk of the handler's stack misses
 * them: [addr] when the frame is set up on the whole path (the walk has
 * its caller), [addr, UW_HOLE] when it is set up nowhere on it (the caller
 * is missing too), [addr, UW_OPT] when it is set up on part of it, [addr,
 * UW_LOST] when the path is not known; [UW_EXT] for
 * external code (whose caller the unwinding fills in as llvm-profgen's
 * does for external leaves). Returns the count (1 or 2). */
size_t uw_interrupted(lp_unwinder *u, uint64_t addr, uint64_t out[2]);

/* intake.c: a recorded address as a frame address (the one place that
 * decides it: through the address map or the single base; not code ->
 * UW_EXT, *code false). */
uint64_t uw_canon(lp_unwinder *u, uint64_t rt, bool *code);
/* intake.c: the caller of the leaf at encoded address `leaf` whose
 * recorded IP is ip, from the sample's user registers and stack (the
 * return address at [sp + k], k from the leaf's state) - a call site,
 * UW_EXT or UW_SIG - or 0 when the leaf's caller is not missing or the
 * stack does not show it. */
uint64_t uw_stack_caller(lp_unwinder *u, const lp_sample *ps, uint64_t ip,
                         uint64_t leaf);
/* intake.c: going back through the LBR from the sampled function, the
 * source of the call that entered the current frame (UW_EXT for a call
 * from outside the binaries), or 0 when the LBR does not show it. */
uint64_t uw_lbr_caller(lp_unwinder *u, const uw_lbr *lbr, size_t n);
/* unwind.c: the newest mapping of the current sample's process holding
 * rt (of any process when it has none), or NULL. */
const uw_mmap *uw_find_map(const lp_unwinder *u, uint64_t rt);

/* cfistack.c: with the repair, a sample with user registers and stack
 * whose frame-pointer walk (st, the user part as recorded, may be empty)
 * is not provably right gets its call stack from a CFI walk of the stack:
 * u->cs filled (*ncs frames: call sites, UW_EXT, UW_SIG followed by the
 * interrupted instruction, UW_LOST at the bottom when the walk ended
 * early). 1 if so, 0 if the frame-pointer walk is to be used, -1 on OOM. */
int uw_cfi_stack(lp_unwinder *u, const lp_hybrid_sample *s,
                 const uint64_t *st, size_t nst, size_t *ncs);
/* cfistack.c: the leaf of a CFI stack (or of another exact one: `exact`,
 * counted apart) against LBR[0] (u->lbr, nlbr entries): a handler sampled
 * before its first branch continues in the interrupted frame; other code
 * entered after LBR[0] is on an unknown stack. n: the sample's weight. 0,
 * or -1 on OOM. */
int uw_cfi_leaf(lp_unwinder *u, size_t *ncs, long nlbr, uint64_t n, bool exact);
void uw_cfi_free(lp_unwinder *u);
/* unwind.c: frees what one unwinding thread has of its own (scratch,
 * caches, context table, notes; not the shared binaries, leaf cache,
 * inference state or pending samples). */
void uw_free_own(lp_unwinder *u);

/* The pending samples' table (intake.c): the sample with this key, or
 * NULL; g (its key, len and hash set) added last; the table emptied (the
 * samples stay, in their order from u->agg: the caller frees them). */
uw_agg *uw_agg_find(const lp_unwinder *u, const unsigned char *key,
                    uint32_t len, uint32_t hash);
int uw_agg_add(lp_unwinder *u, uw_agg *g);
void uw_agg_clear(lp_unwinder *u);

/* Decode an aggregated key into u->cs / u->lbr. */
void uw_decode(lp_unwinder *u, const uw_agg *g, size_t *ncs, size_t *nlbr);
/* Only its LBR, into *lbr (grown as needed): the count, -1 on no memory. */
size_t uw_decode_lbr(const uw_agg *g, uw_lbr **lbr, size_t *cap);

/* infer.c: the call site of the frame a hole stands for, between a frame
 * calling at `below` (0: nothing known below) and a frame at `above`
 * (`optional`: the hole may stand for no frame at all; then only when the
 * frame below cannot have called the frame above itself): the
 * encoded site, 0 when the calls the LBR shows do not single one out,
 * UINT64_MAX on error (err set). Only once the trace is read (at a flush:
 * the graphs are filled from the pending samples at its first question). */
uint64_t uw_infer_caller(lp_unwinder *u, uint64_t below, uint64_t above,
                         bool optional, lp_error *err);
void uw_infer_free(lp_unwinder *u);
/* Fill the caches uw_unwind_one will use for this sample. */
void uw_warm(lp_unwinder *u, const uint64_t *cs, size_t ncs,
             const uw_lbr *lbr, size_t nlbr);
/* Record an effect of the unwinding u->rec is recording. 0, or -1 when
 * out of memory or past UW_REPLAY_BYTES (the recording is then given up). */
int uw_eff_add(lp_unwinder *u, uint32_t kind, lp_ctx_entry *e, uint64_t a,
               uint64_t b);
/* Unwind one distinct sample into u->cc. */
int uw_unwind_one(lp_unwinder *u, const uint64_t *cs, size_t ncs,
                  const uw_lbr *lbr, size_t nlbr, uint64_t repeat,
                  lp_error *err);
/* The iteration order of std::unordered_map<uint64_t, ...> (libstdc++)
 * after inserting keys[0..m) in order: positions in order[]. 0, -1 OOM,
 * 1 too many keys (order untouched). */
int uw_umap_order(const uint64_t *keys, size_t m, int32_t *order);
/* collect.c: the leaf signature id of an encoded address (from 1), 0 on
 * error (err set). */
uint64_t uw_leaf_sig(lp_unwinder *u, uint64_t addr, lp_error *err);
/* lp_binary_symbolize of an encoded address, under the lock unless the
 * thread's own cache (u->symc) has it */
int uw_symbolize(lp_unwinder *u, uint64_t addr, const lp_frame **f,
                 size_t *k, lp_error *err);
/* collectSamplesFromFrameTrie over u->nodes. */
int uw_collect(lp_unwinder *u, uint64_t repeat, lp_error *err);
/* Unwind and drop everything pending. */
int uw_flush(lp_unwinder *u, lp_error *err);
/* One pending sample at the flush: unwound, or its recording replayed. */
int uw_flush_one(lp_unwinder *u, const uw_agg *g, lp_error *err);
void uw_agg_done(lp_unwinder *u, uw_agg **v, size_t i);
void uw_replays_free(lp_unwinder *u);
/* parallel.c: the flush of v[0..m) (llvm-profgen's order) on two threads,
 * with the result of one: 0, -1 on error, 1 when it is not worth it (or a
 * thread could not be had): then nothing was done. */
int uw_flush_parallel(lp_unwinder *u, uw_agg **v, size_t m, lp_error *err);
/* Record the consecutive LBR pairs of a sample (warnInvalidRange). */
int uw_note_pairs(lp_unwinder *u, const uw_lbr *lbr, size_t n,
                  uint64_t repeat);
int uw_emit_warnings(lp_unwinder *u, lp_error *err);

#endif
