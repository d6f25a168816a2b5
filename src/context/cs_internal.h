/*
 * cs_internal.h - the context trie shared by the CS generator, the
 * pre-inliner, the context-size tracker and the nested converter
 * (LLVM's ContextTrieNode / SampleContextTracker / ProfileConverter
 * frame trie). Internal to src/context.
 *
 * A node is a function called at a location of its parent; the root's
 * children (location 0.0) are the base profiles. Children are keyed, as
 * in LLVM, by FunctionSamples::getCallSiteHash(callee, location) =
 * MD5(callee) + 33 * ((disc << 32) | line), kept and iterated in
 * ascending key order in n->kids[0 .. n->nkids).n (LLVM's std::map<uint64_t,
 * ContextTrieNode>; a loop over them must not insert into the same node:
 * cs_kid_after is the walk that survives insertions), which decides every
 * order-dependent result (first merged attributes, candidate ties, the
 * size tracker's fallback).
 */
#ifndef LBR2PROF_CS_INTERNAL_H
#define LBR2PROF_CS_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <uthash.h>

#include "lbr2prof/csprofile.h"
#include "util/job.h"

/* SampleContext states (ContextStateMask; RawContext and SyntheticContext
 * are not kept: nothing reads them) */
enum { CS_RAW = 1, CS_SYNTHETIC = 2, CS_INLINED = 4, CS_MERGED = 8 };
/* SampleContext attributes (ContextAttributeMask) */
enum { CS_WAS_INLINED = 1, CS_SHOULD_INLINE = 2, CS_DUP_INTO_BASE = 4 };

typedef struct cs_name {        /* an interned function name */
    char *s;
    size_t len;
    uint64_t md5;               /* MD5Hash(name): FunctionId::getHashCode */
    void *pre_node, *pre_ctxs;  /* the pre-inliner's call-graph node and
                                   context list of the name (NULL outside
                                   it): no table lookup per trie node */
    uint32_t summary_id;        /* the summary's number for the name
                                   (cs_trie_summary's, beside the
                                   pre-inliner: fields of its own) */
    UT_hash_handle hh;
} cs_name;

typedef struct cs_node cs_node;

typedef struct cs_kid {         /* a child and its key (kept next to each
                                   other for the binary search) */
    uint64_t key;
    cs_node *n;
} cs_kid;

typedef struct cs_prof {        /* a FunctionSamples owned by the trie */
    lp_fsamples fs;
    uint32_t state;
    uint16_t csum_from;         /* probe generation: 1 + the binary fs.checksum
                                   is from (0: none yet; probegen.c) */
    bool csum_mixed;            /* ... and another binary's differed */
    cs_node *node;              /* getContextNodeForProfile: the node
                                   cs_prof_get made it for, until the
                                   pre-inliner moves it */
    struct cs_prof *next;       /* every profile of the trie */
} cs_prof;

struct cs_node {
    const cs_name *func;        /* NULL for the root */
    lp_loc callsite;            /* location in the parent */
    uint64_t key;               /* call-site hash in the parent */
    cs_node *parent;
    cs_prof *prof;              /* NULL: no profile */
    cs_kid *kids;               /* children, always in ascending key order
                                   (binary search; no per-node hash table:
                                   a trie has ~10^5 nodes) */
    uint32_t nkids, kids_cap;
    bool has_size;              /* size tracker: a size was recorded */
    bool pre_owns;              /* pre-inliner: prof->node is this node */
    uint32_t size;
    uint64_t serial;            /* pre-inliner: creation order of copies
                                   (generation: its groups' marks) */
    uint64_t weight;            /* the call graph's weight of the edge
                                   from the parent (cs_edge_weight), set
                                   by line-based generation once the
                                   profiles are final: cs_trie.weights */
};

/* The nodes of one trie carved from chunks: no malloc per node, freed
 * all at once with the trie; a node freed before goes on a free list for
 * the next. (Profiles stay malloc'ed: pooled, they raised the peak RSS
 * by 7 MB on an 84k-context profile for ~0.5% of the instructions.) */
typedef struct cs_chunk cs_chunk;

typedef struct cs_pool {
    cs_chunk *chunks;           /* newest first */
    size_t used;                /* objects handed out of the newest */
    void *free;                 /* freed objects (first word: next) */
} cs_pool;

typedef struct cs_trie {
    cs_node root;
    cs_name *names;
    cs_prof *profs;             /* newest first */
    cs_prof *profs_last;        /* the oldest (the list's tail) */
    bool weights;               /* every node's weight is set (until the
                                   pre-inliner's call graph reads them) */
    cs_pool node_pool;
    struct cs_trie *of;         /* a worker's trie (generation on two
                                   threads): the trie whose nodes its
                                   nodes hang under (paths start at its
                                   root) and whose table interns its
                                   names; NULL: a trie of its own */
    pthread_mutex_t *names_lock;/* taken by cs_intern while a worker's
                                   trie interns into this table, or NULL */
    bool want_summary;          /* generation: accumulate the summary of
                                   the profiles as they are final */
    bool has_summary;           /* ... done: `summary` is cs_trie_summary's
                                   (until cs_summary_start takes it) */
    lp_summary summary;
} cs_trie;

void cs_trie_init(cs_trie *t);
void cs_trie_free(cs_trie *t);
/* t freed on a second thread from now, waited for when p is freed (then
 * or at once when there is no second CPU or p waits for something
 * else); t is left empty. */
void cs_trie_free_later(cs_trie *t, lp_profile *p);
/* The root that t's paths start from (t's, or for a worker's trie the
 * one of the trie it grows). */
static inline cs_node *cs_root(cs_trie *t)
{
    return &(t->of ? t->of : t)->root;
}
/* Take a worker trie's nodes (its pool's chunks: whatever of them is
 * linked under t's nodes by now) and profiles into t; w is left empty. */
void cs_trie_adopt(cs_trie *t, cs_trie *w);

const cs_name *cs_intern(cs_trie *t, const char *s, size_t len);

/* The interned names of strings by address: a direct-mapped memo in front
 * of cs_intern for names that stay at one address with one text while the
 * memo is used (the binaries' names, during generation: ~750k lookups of
 * ~1,500 names on a large profile, each a hash of a long linkage name). */
#define CS_PMEMO_BITS 12
typedef struct cs_pmemo {
    const char *p;
    const cs_name *n;
} cs_pmemo;
/* memo: 1 << CS_PMEMO_BITS zeroed slots, or NULL (plain cs_intern) */
const cs_name *cs_intern_at(cs_trie *t, cs_pmemo *memo, const char *s);
uint64_t cs_callsite_hash(uint64_t name_md5, lp_loc loc);

/* getChildContext / getOrCreateChildContext (NULL: none / no memory) */
cs_node *cs_child(cs_node *n, lp_loc loc, const cs_name *f);
cs_node *cs_child_get(cs_trie *t, cs_node *n, lp_loc loc, const cs_name *f);
/* A malloc'ed copy of n's children in key order (for loops that move
 * children); *cnt set. NULL on no memory (or no children: *cnt = 0). */
cs_node **cs_kids_copy(cs_node *n, size_t *cnt);
/* Unlink n from its parent (n keeps its subtree). */
void cs_detach(cs_node *n);
/* Link a detached n under parent at loc (its key recomputed). The caller
 * makes sure no sibling has the same key. -1 on no memory. */
int cs_attach(cs_node *parent, cs_node *n, lp_loc loc);
/* Free a detached node and its subtree (profiles stay in the trie list). */
void cs_node_free(cs_trie *t, cs_node *n);
/* Free every child subtree of n, which stays. */
void cs_node_free_kids(cs_trie *t, cs_node *n);
/* A detached deep copy of n's subtree; the copies share n's profiles
 * (LLVM copies ContextTrieNode values, which hold FunctionSamples
 * pointers). NULL on no memory. */
cs_node *cs_node_copy(cs_trie *t, const cs_node *n);
/* std::map iteration that survives insertions: the child with the
 * smallest key above `key` (the first child if `first`), or NULL. *at:
 * the index of the child returned (n->nkids: none), given back on the
 * next call of the walk, which then skips the search while the last
 * child returned has not moved. */
cs_node *cs_kid_after(cs_node *n, uint64_t key, bool first, uint32_t *at);

/* getOrCreateFunctionSamples: the node's profile, created empty (named
 * after the node) if absent. NULL on no memory. */
cs_prof *cs_prof_get(cs_trie *t, cs_node *n);
/* A profile not attached to any node yet, named `name`. */
cs_prof *cs_prof_new(cs_trie *t, const char *name);

/* The last path cs_path walked, frame by frame, reused for the common
 * prefix of the next one (generation's contexts come sorted, so
 * consecutive ones mostly share their callers). Valid while no node is
 * freed or moved and the frames' names stay at their addresses (as for
 * cs_pmemo): during one generation. Zeroed to start; cs_pathmemo_free. */
typedef struct cs_pathstep {
    const char *func;           /* the frame's name, by address */
    lp_loc loc;                 /* its call site */
    cs_node *node;              /* the node the path reached there */
} cs_pathstep;
typedef struct cs_pathmemo {
    cs_pathstep *v;
    size_t n, cap;
} cs_pathmemo;
void cs_pathmemo_free(cs_pathmemo *pm);

/* getOrCreateContextPath for a frame vector (root first; the leaf's
 * location is not used); pm: NULL, or the previous path's (above). NULL
 * on no memory. */
cs_node *cs_path(cs_trie *t, const lp_ctx_frame *frames, size_t n,
                 cs_pmemo *memo, cs_pathmemo *pm);

/* Breadth-first list of every node, the root first (SampleContextTracker's
 * iterator). malloc'ed; *n set. NULL on no memory. */
cs_node **cs_bfs(cs_trie *t, size_t *n);

/* The path of a printed context ("main:1 @ foo"), split like LLVM's
 * createCtxVectorFromStr. NULL on no memory. */
cs_node *cs_path_key(cs_trie *t, const char *key);

/* SampleContext::decodeContextString on "name[:line[.disc]]" in place
 * (numbers that do not parse as StringRef::getAsInteger would stay 0). */
void cs_decode_frame(char *s, lp_ctx_frame *f);
/* StringRef::getAsInteger for an unsigned 64-bit value in [s, end). */
int cs_as_u64(const char *s, const char *end, int radix, uint64_t *v);

/* convertToProfileMap: every node with a profile into p (keys are the
 * printed contexts, names the leaf functions), profiles moved out of the
 * trie. -1 on no memory. */
int cs_trie_to_profile(cs_trie *t, lp_profile *p);

/* The first pass of SampleContextTrimmer (postproc.c) run while the trie
 * is converted: a cold context is merged into `merged` under its last
 * `depth` frames (merge) and dropped, never given a key in p (most
 * contexts are cold, and their printed keys were the run's peak). */
typedef struct cs_cold {
    uint64_t thr;           /* contexts whose total is below it are cold */
    uint32_t depth;         /* frames of the key they merge into (>= 1) */
    bool merge, base_only;  /* base_only: only contexts of one frame */
    lp_profile *merged;     /* merge: the cold profiles, by those keys */
} cs_cold;
/* 1 if the profile fs of the context ctx (is_base: one frame) was taken
 * (merged and cleared, or dropped), 0 if it goes into the profile map,
 * -1 on no memory. */
int cs_cold_take(cs_cold *c, const char *ctx, bool is_base, lp_fsamples *fs);
/* cs_trie_to_profile with the cold contexts given to cs_cold_take (NULL:
 * none is cold). */
int cs_trie_to_profile_hot(cs_trie *t, lp_profile *p, cs_cold *cold);
/* LLVM's order of contexts, frame by frame, at one level of the trie:
 * a child c (by its call site, then its function's name) against the
 * call site loc and function name. */
int cs_rank_cmp(const cs_node *c, lp_loc loc, const char *name);
/* cs_trie_to_profile_hot on two threads (the subtrees below the trie's
 * top levels taken one at a time), ranking as it goes: every node
 * numbered in that order (n->serial from 1, a node before its children,
 * which are left in that order in their arrays: the trie is not looked
 * up by key after), each profile's fs.order twice its node's serial as
 * it moves into p. The entries are those of cs_trie_to_profile_hot, not
 * in the same order (two of one printed context keep the lower order,
 * lp_fs_merge_ranked). The number of nodes, or -1 on no memory. */
int64_t cs_trie_to_profile_ranked(cs_trie *t, lp_profile *p, cs_cold *cold);
/* The SampleContextTracker built from a flat CS profile: every entry of p
 * moved into the trie (p is left empty). -1 on no memory. */
int cs_trie_from_profile(cs_trie *t, lp_profile *p);

/* The summary of the context-less profiles (every node's profile merged
 * by function name): computeSummaryAndThreshold. */
int cs_trie_summary(cs_trie *t, lp_summary *s, lp_error *err);

/* cs_trie_summary on a second thread, started before the context sizes
 * and the pre-inliner's first steps (populateFuncToCtxtMap, the call
 * graph's edges), which only read the profiles' samples, and waited for
 * once its thresholds are needed. With one CPU (or no thread) the wait
 * computes it. A summary generation accumulated (t->has_summary) is
 * taken instead: no thread. */
typedef struct cs_summary_job {
    cs_trie *t;
    lp_summary s;
    lp_error err;
    int rc;
    lp_job job;
} cs_summary_job;
void cs_summary_start(cs_summary_job *j, cs_trie *t);
/* The summary (NULL on error, err set); may be called again: the same
 * result. Must be called before the trie's profiles change or go. */
const lp_summary *cs_summary_wait(cs_summary_job *j, lp_error *err);

/* ---- context sizes (BinarySizeContextTracker) --------------------------- */

/* collectProfiledFunctions: those touched by cc's counters (range starts,
 * branch ends) or, without cc, those named by nodes of pt. */
typedef struct cs_funcs cs_funcs;
cs_funcs *cs_funcs_collect(lp_binary *const *bins, size_t nbins,
                           const lp_ctxcount *cc, cs_trie *pt, lp_error *err);
/* The same one entry at a time: an empty set, an entry's functions added
 * (check cs_funcs_merge's result for no memory), and src's functions
 * added to dst (src freed, may be NULL; -1: no memory while making
 * either). */
cs_funcs *cs_funcs_new(void);
void cs_funcs_add_entry(cs_funcs *s, lp_binary *const *bins, size_t nbins,
                        const lp_ctx_entry *e);
int cs_funcs_merge(cs_funcs *dst, cs_funcs *src);
void cs_funcs_free(cs_funcs *s);
/* Symbolize every instruction of the profiled functions into the size
 * trie `st`. */
int cs_sizes_build(cs_trie *st, lp_binary *const *bins, cs_funcs *s,
                   const lp_cs_opts *o, lp_error *err);
/* cs_sizes_build for s on a second thread, started now (the probe tables
 * decoded already: the thread only reads them); it calls into the
 * binaries under the returned lock, which whoever else calls into them
 * until cs_sizes_get must take. NULL: not started (one core, no thread),
 * cs_sizes_get builds it then. */
pthread_mutex_t *cs_sizes_start(cs_funcs *s, lp_binary *const *bins,
                                const lp_cs_opts *o);
/* The size trie of s: the thread's, once joined (its warnings given
 * then), owned by s; else built into `own` now. NULL on error. */
cs_trie *cs_sizes_get(cs_trie *own, lp_binary *const *bins, cs_funcs *s,
                      const lp_cs_opts *o, lp_error *err);
/* getFuncSizeForContext for a node of the profile trie. */
uint32_t cs_size_for(cs_trie *st, const cs_node *n);

/* ---- instruction tables (insttab.c) ----------------------------------------- */

typedef struct cs_irun {        /* instructions [lo, hi) of a table with */
    uint32_t lo, hi;            /* the same leaf location */
    lp_loc loc;                 /* line offset, raw discriminator */
    bool has;                   /* they have debug info at all */
} cs_irun;

typedef struct cs_itab {        /* one function range's instructions */
    const lp_func_range *fr;    /* key */
    uint64_t *addr;             /* instruction starts in [start, end) */
    size_t n;
    cs_irun *runs;
    size_t nruns;
    UT_hash_handle hh;
} cs_itab;

typedef struct cs_insts cs_insts;   /* the tables of one binary */

/* One thread's recent tables (of any binary), in front of the shared
 * set: no lock while a context's tables are found there. Zeroed to
 * start; owns nothing. */
#define CS_ICACHE_SLOTS 1024
typedef struct cs_icache {
    cs_itab *last;              /* the last table asked for: a context's
                                   pieces and branches mostly stay in one
                                   function range */
    cs_itab *recent[CS_ICACHE_SLOTS];   /* by range address, direct-mapped */
} cs_icache;

/* lock: held while the set is searched (a thread's cache missed) or a
 * table is built (the binary's lazy caches are shared with another
 * thread), when threads share the tables; or NULL. */
cs_insts *cs_insts_new(lp_binary *bin, pthread_mutex_t *lock);
void cs_insts_free(cs_insts *t);
/* The table of a function range, built on first use, through the calling
 * thread's cache c. NULL on error. */
cs_itab *cs_insts_table(cs_insts *t, cs_icache *c, const lp_func_range *fr,
                        lp_error *err);
/* First instruction index with address >= a. */
size_t cs_itab_lower(const cs_itab *x, uint64_t a);
/* ... in [lo, hi) (hi if none) */
size_t cs_itab_lower_in(const cs_itab *x, size_t lo, size_t hi, uint64_t a);
/* The first run holding an instruction at or after a (nruns if none). */
size_t cs_itab_run_at(const cs_itab *x, uint64_t a);
/* The run holding instruction index i. */
size_t cs_itab_run_of(const cs_itab *x, size_t i);
/* The run of the instruction starting exactly at a, or NULL. */
const cs_irun *cs_itab_leaf(const cs_itab *x, uint64_t a);

/* ---- generation and post-processing on a trie ------------------------------- */

/* generateLineNumBasedProfile into t (empty). With `consume`, every
 * entry's counters are freed once used, and then the entries (cc is left
 * empty). With funcs, the profiled functions are collected into it too
 * (cs_funcs_collect's, entry by entry before the counters go). */
int cs_generate_trie(cs_trie *t, lp_binary *const *bins, size_t nbins,
                     lp_ctxcount *cc, bool consume, const lp_cs_opts *o,
                     cs_funcs *funcs, lp_error *err);
/* decodePseudoProbe of the probe tables not decoded yet, for the
 * functions cc's address contexts and counters touch. */
int cs_probes_decode(lp_binary *const *bins, size_t nbins,
                     lp_probes *const *probes, const lp_ctxcount *cc,
                     lp_error *err);
/* cs_funcs_collect(bins, nbins, cc, NULL, err), then o->infer_prepare,
 * on a second thread (when there is a second CPU) while this one runs
 * cs_probes_decode over o->probes: the work before the context sizes'
 * thread can start, on both cores. NULL on error (err set: the
 * decoding's first). */
cs_funcs *cs_probes_prepare(lp_binary *const *bins, size_t nbins,
                            const lp_cs_opts *o, const lp_ctxcount *cc,
                            lp_error *err);
/* generateProbeBasedProfile into t (empty) from cc's address contexts,
 * with o->probes (decoded here for the profiled functions, unless they
 * are). consume as above. bin_lock: taken around calls into the binaries
 * that may change their lazily built state (NULL: this thread alone
 * calls into them). */
int cs_generate_probe_trie(cs_trie *t, lp_binary *const *bins, size_t nbins,
                           lp_ctxcount *cc, bool consume, const lp_cs_opts *o,
                           pthread_mutex_t *bin_lock, lp_error *err);
/* postProcessProfiles from the trie t (consumed) into p (empty); funcs:
 * the profiled functions for the context sizes (NULL: named in t). */
int cs_postprocess_trie(cs_trie *t, lp_binary *const *bins, size_t nbins,
                        cs_funcs *funcs, const lp_cs_opts *o, lp_profile *p,
                        lp_error *err);

/* ---- pre-inliner ----------------------------------------------------------- */

/* The profiled call graph's weight of the trie edge caller -> callee:
 * max(the caller's call-target count of it, the callee's entry count). */
uint64_t cs_edge_weight(const cs_node *caller, const cs_node *callee);

/* Where the pre-inliner gets its context sizes, once its call graph and
 * order are made (the size trie may be built on another thread until
 * then): cs_sizes_get's arguments; funcs NULL: no sizes (body sizes). */
typedef struct cs_sizes_req {
    cs_trie *own;
    lp_binary *const *bins;
    cs_funcs *funcs;
} cs_sizes_req;

/* The pre-inliner's profile merges, deferred (mergeq.c): each pushed
 * merge adds from's counts to to's (unless the same profile) and carries
 * ShouldBeInlined over, in push order, partly on a second thread if
 * `thread`; neither profile's fs may be read nor written elsewhere until
 * drained. cs_mergeq_drain returns once every pushed merge is done (-1
 * if one ran out of memory, now or before); cs_mergeq_free drains,
 * stops the thread, returns the same. NULL: no memory. */
typedef struct cs_mergeq cs_mergeq;
cs_mergeq *cs_mergeq_new(bool thread);
void cs_mergeq_push(cs_mergeq *q, cs_prof *to, cs_prof *from);
int cs_mergeq_drain(cs_mergeq *q);
int cs_mergeq_free(cs_mergeq *q);

/* The summary is waited for (sj) once the call graph's edges are in. */
int cs_preinline(cs_trie *t, const cs_sizes_req *sizes, cs_summary_job *sj,
                 const lp_cs_opts *o, lp_error *err);

/* ---- helpers -------------------------------------------------------------- */

/* getEntryForPercentile(...).MinCount */
uint64_t cs_percentile_count(const lp_summary *s, uint32_t pct);
void cs_warnf(const lp_cs_opts *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int cs_oom(lp_error *err);

#endif
