/*
 * lbr2prof/ctxcount.h - range and branch counters per calling context: what
 * the virtual unwinder produces and the CS profile generator consumes
 * (llvm-profgen's ContextSampleCounterMap), and the context-sensitive
 * unsymbolized profile ("[ctx]" blocks of --skip-symbolization output).
 *
 * A context is llvm-profgen's SampleContextFrameVector after inline
 * expansion: caller frames, root first, each with the call-site location
 * in that function, then the leaf frame, whose location is zero. Its
 * printed key is "main:1 @ foo:3.1 @ bar" (leaf without location); the
 * empty context (branches from external code) has the key "".
 *
 * Entries are also keyed by a binary index, so one run can hold several
 * binaries (the main program and shared libraries with symbols): the
 * counters' addresses are link-time addresses of that binary, except the
 * target of a branch into another binary (a call or callback across the
 * library boundary), which is LP_CTX_XBIN(its binary, its address).
 * Single-binary runs use index 0 throughout and never have those. A
 * context's frames may come from several binaries; its leaf is in the
 * entry's.
 *
 * Binaries with pseudo probes have address contexts instead
 * (llvm-profgen's AddrBasedCtxKey): the call-site addresses of the
 * callers of the code counted, root first, without the leaf frame (the
 * generator finds it from the probes of the counted addresses); printed
 * "0x7f4 @ 0x7bf" (the empty context ""). Each address is encoded as
 * LP_CTX_ADDR(bin, vaddr). A table holds one kind of context.
 */
#ifndef LBR2PROF_CTXCOUNT_H
#define LBR2PROF_CTXCOUNT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lbr2prof/error.h"
#include "lbr2prof/flat.h"
#include "lbr2prof/profile.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A branch target in binary `bin` (< 0x7fff), in the counters of another
 * binary: bit 63, the binary in bits 48-62, the address's 48 bits (x86-64
 * canonical, sign-extended from bit 47 when read back). A kernel address
 * (--kernel: bits 47-63 all set) is never taken for one. */
#define LP_CTX_XBIN(bin, vaddr) \
    ((UINT64_C(1) << 63) | ((uint64_t)(bin) << 48) | ((vaddr) & ((UINT64_C(1) << 48) - 1)))
#define LP_CTX_XBIN_BIN(a) ((size_t)(((a) >> 48) & 0x7fff))
#define LP_CTX_IS_XBIN(a) (((a) >> 63) != 0 && LP_CTX_XBIN_BIN(a) != 0x7fff)
#define LP_CTX_XBIN_VADDR(a) \
    (((a) >> 47) & 1 ? (a) | ~((UINT64_C(1) << 48) - 1) : (a) & ((UINT64_C(1) << 48) - 1))

/* An address of binary `bin` in an address context. */
#define LP_CTX_ADDR(bin, vaddr) (((uint64_t)(bin) << 48) | ((vaddr) & ((UINT64_C(1) << 48) - 1)))
#define LP_CTX_ADDR_BIN(a) ((size_t)((a) >> 48))
#define LP_CTX_ADDR_VADDR(a) ((a) & ((UINT64_C(1) << 48) - 1))

typedef struct lp_ctx_frame {
    const char *func;       /* function name as symbolized (interned) */
    lp_loc loc;             /* call site in func; {0,0} for the leaf */
} lp_ctx_frame;

typedef struct lp_ctx_entry {
    const char *key;        /* "main:1 @ foo:3.1 @ bar", "" = empty context;
                               in a table that borrows names, NULL for a
                               frame context until lp_ctxcount_all or
                               lp_ctxcount_sorted prints it */
    const lp_ctx_frame *frames;  /* root first, leaf last */
    size_t nframes;         /* 0 for the empty context */
    int bin;                /* binary index */
    bool was_leaf_inlined;  /* the leaf address was in an inlined frame (the
                               first writer's value is kept, as llvm-profgen
                               keeps the first key inserted) */
    bool leaf_inlined_mixed;/* leaves both inlined and not gave this context
                               (the value above is then the first's; set by
                               the unwinder and the mergeable raw profile) */
    uint64_t leaf_rank;     /* the unwinding order of the sample whose leaf
                               gave was_leaf_inlined (lp_ctx_entry_leaf);
                               UINT64_MAX: none yet, the creator's value */
    lp_counters *counters;  /* owned by the entry */
    const uint64_t *addrs;  /* address contexts: the call sites, root first
                               (LP_CTX_ADDR); NULL for frame contexts */
    size_t naddrs;
} lp_ctx_entry;

typedef struct lp_ctxcount lp_ctxcount;

/* The leaf of a sample unwound `rank`-th gave e's context: inlined or
 * not. The first sample's value is kept, as llvm-profgen keeps the key
 * its unwinding inserted first, whatever order the samples come in here
 * (recorded ahead, replayed, or on two threads); two values mark e mixed. */
void lp_ctx_entry_leaf(lp_ctx_entry *e, bool inlined, uint64_t rank);

lp_ctxcount *lp_ctxcount_new(void);
void lp_ctxcount_free(lp_ctxcount *cc);
/* Free every entry: cc is left empty (and usable). */
void lp_ctxcount_clear(lp_ctxcount *cc);

/* The entry for (bin, frames[0..n)), created empty if absent (names are
 * copied). was_leaf_inlined is stored on creation only. NULL only on
 * allocation failure (err set). */
lp_ctx_entry *lp_ctxcount_get(lp_ctxcount *cc, int bin,
                              const lp_ctx_frame *frames, size_t n,
                              bool was_leaf_inlined, lp_error *err);
/* The entry for the address context (bin, addrs[0..n)) (pseudo-probe
 * binaries), created empty if absent. NULL only on allocation failure. */
lp_ctx_entry *lp_ctxcount_get_addrs(lp_ctxcount *cc, int bin,
                                    const uint64_t *addrs, size_t n,
                                    lp_error *err);
/* From now on keep the frame names lp_ctxcount_get is given by pointer
 * instead of copying them: the caller keeps them valid (and unchanged) as
 * long as cc's entries (the unwinder's names are its binaries'). Such a
 * table keys its frame contexts by their frames, with no printed key
 * until one is asked for (entry.key). Call it before the first entry. */
void lp_ctxcount_borrow_names(lp_ctxcount *cc);
/* Move every entry of src into dst in src's insertion order: an entry dst
 * has gets src's counts added (and its leaf given to lp_ctx_entry_leaf
 * when src's entry has a rank; else dst's was_leaf_inlined is kept, and
 * src's mixed mark added), the others
 * are appended. src is left empty. 0, or -1 on OOM (err set). Both tables
 * must hold names that stay valid as long as dst (borrowed or not). */
int lp_ctxcount_merge(lp_ctxcount *dst, lp_ctxcount *src, lp_error *err);
/* lp_ctxcount_merge but for the entries dst has: their counts are not
 * added yet, they stay in src (lp_ctxcount_size of them), for
 * lp_ctxcount_merge_deferred, which two threads may run at once on
 * disjoint parts; then lp_ctxcount_clear(src). No lookups in src after
 * it. 0, or -1 on OOM (err set; src then only takes _clear / _free). */
int lp_ctxcount_merge_defer(lp_ctxcount *dst, lp_ctxcount *src,
                            lp_error *err);
/* lp_ctxcount_merge_defer, counting the entries deferred so far in
 * *ready (atomic stores, release) as it goes: those below *ready may be
 * passed to lp_ctxcount_merge_deferred by another thread meanwhile (the
 * merge does not touch them again, nor the counters of dst's entries). */
int lp_ctxcount_merge_defer_ready(lp_ctxcount *dst, lp_ctxcount *src,
                                  size_t *ready, lp_error *err);
/* src's deferred entries [from, to): counts added to dst's entries, then
 * freed. 0, or -1 on OOM (each entry freed in any case). */
int lp_ctxcount_merge_deferred(lp_ctxcount *src, size_t from, size_t to);
/* Lookup by printed key; NULL if absent. */
lp_ctx_entry *lp_ctxcount_find(const lp_ctxcount *cc, int bin,
                               const char *key);
size_t lp_ctxcount_size(const lp_ctxcount *cc);

/* Every entry, sorted by (bin, key) with strcmp: the std::map order of
 * llvm-profgen's unsymbolized writer. malloc'ed array of pointers (free()
 * it; the entries stay owned by cc). Returns the count, -1 on OOM. */
long lp_ctxcount_sorted(const lp_ctxcount *cc, lp_ctx_entry ***out);
/* The same, in no particular order (cheaper). */
long lp_ctxcount_all(const lp_ctxcount *cc, lp_ctx_entry ***out);
/* The same entries in the same order, without printing the keys not
 * printed yet (their e->key stays NULL: lp_ctx_key of e->frames), for a
 * caller that needs no key (CS generation: 84k keys were ~4% of bench
 * (c)'s instructions). */
long lp_ctxcount_entries(const lp_ctxcount *cc, lp_ctx_entry ***out);
/* Frees the i-th entry of lp_ctxcount_all's (and _entries') order, for a
 * consumer done with it; from then on cc only takes _release, _clear
 * and _free. */
void lp_ctxcount_release(lp_ctxcount *cc, size_t i);
/* The same with each of the entry's blocks given to drop(block, arg)
 * instead of free() (see lp_counters_fini_with). */
void lp_ctxcount_release_with(lp_ctxcount *cc, size_t i,
                              void (*drop)(void *, void *), void *arg);

/* The printed key of a context: frames joined by " @ ", each
 * "func:line[.disc]" except the leaf, which is "func". malloc'ed; NULL on
 * OOM. */
char *lp_ctx_key(const lp_ctx_frame *frames, size_t n);

/* A caller frame's call site as lp_ctx_key prints it, ":line[.disc]",
 * into out (LP_CTX_SITE_ROOM bytes, not NUL-terminated); its length. */
#define LP_CTX_SITE_ROOM 22
size_t lp_ctx_site_print(char *out, lp_loc loc);

/* Parse a printed key into frames (func pointers into *buf, which the
 * caller frees; *frames malloc'ed, caller frees). -1 if malformed. */
int lp_ctx_parse_key(const char *key, lp_ctx_frame **frames, size_t *n,
                     char **buf);

/* The CS unsymbolized profile of binary `bin`, as llvm-profgen writes it:
 * per context in key order "[key]" then the ranges and branches indented
 * by two spaces, addresses minus `base`. Address contexts print their
 * binary-`bin` addresses minus `base` too (and are ordered by that text);
 * an address of another binary prints as LP_CTX_XBIN(its binary, its
 * address) (llvm-profgen's format has one binary: never there). */
int lp_ctxcount_write_raw(FILE *f, const lp_ctxcount *cc, int bin,
                          uint64_t base, lp_error *err);
/* The same, each context with attributes preceded by lbr2prof's line
 * "#leaf-inlined V" or "#leaf-inlined V mixed" (the mergeable raw profile,
 * include/lbr2prof/rawmerge.h). */
int lp_ctxcount_write_raw_attrs(FILE *f, const lp_ctxcount *cc, int bin,
                                uint64_t base, lp_error *err);

#ifdef __cplusplus
}
#endif
#endif
