/*
 * lbr2prof/csprofile.h - context-sensitive (CSSPGO) profiles from range and
 * branch counters per calling context, the way llvm-profgen 19's
 * CSProfileGenerator makes them for line-number (DWARF) binaries:
 *
 *   lp_ctxcount (virtual unwinder, or lp_cs_raw_read of an unsymbolized
 *   profile)  --lp_cs_generate-->  flat CS profile ("[main:1 @ foo]" keys)
 *             --lp_cs_postprocess--> thresholds, CS pre-inliner, cold
 *               context trimming/merging, nested conversion, filtering,
 *               the density warning  --lp_profile_write--> text/extbinary.
 *
 * lp_cs_profile() runs both steps; it is the one call that turns an
 * unwinder's counters into the final profile.
 *
 * Counters carry link-time addresses of bins[entry->bin]. The library
 * never prints: warnings go to opts->warn, --show-density output to
 * opts->info.
 */
#ifndef LBR2PROF_CSPROFILE_H
#define LBR2PROF_CSPROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lbr2prof/binary.h"
#include "lbr2prof/ctxcount.h"
#include "lbr2prof/error.h"
#include "lbr2prof/flat.h"
#include "lbr2prof/profile.h"

#ifdef __cplusplus
extern "C" {
#endif

/* llvm-profgen 19 options that matter after the unwinder, with their
 * names. lp_cs_opts_default gives llvm-profgen's defaults. */
typedef struct lp_cs_opts {
    bool update_total_samples;      /* --update-total-samples */
    bool trim_cold_profile;         /* --trim-cold-profile */
    int merge_cold_context;         /* --csprof-merge-cold-context: -1 not
                                       given (on, but off when the
                                       pre-inliner runs), 0, 1 */
    uint32_t max_cold_context_depth;/* --csprof-max-cold-context-depth (1) */
    bool gen_nested;                /* --gen-cs-nested-profile (true) */
    bool merged_base_profiles;      /* --generate-merged-base-profiles */
    bool preinliner;                /* --csspgo-preinliner (true) */
    bool use_context_cost;          /* --use-context-cost-for-preinliner */
    bool replay_preinline;          /* --csspgo-replay-preinline */
    int preinl_multiplier;          /* --csspgo-preinliner-multiplier-for-
                                       previous-inlining (100) */
    int hot_inline_threshold;       /* --sample-profile-hot-inline-threshold
                                       (llvm-profgen: 1500) */
    int cold_inline_threshold;      /* ...-cold-inline-threshold (0) */
    int inline_limit_max;           /* --sample-profile-inline-limit-max
                                       (llvm-profgen: 50000) */
    int inline_limit_min;           /* --sample-profile-inline-limit-min */
    int inline_growth_limit;        /* --sample-profile-inline-growth-limit */
    bool sort_scc_members;          /* --sort-profiled-scc-member (true) */
    bool edge_weight_sum;           /* profiled call graph: repeated
                                       caller->callee edges add their
                                       weights (true) or keep the largest */
    bool fold_recursion;            /* lbr2prof extension, off by default:
                                       a context promoted to its base is
                                       unlinked before its children are
                                       merged, so recursive contexts are
                                       not merged into themselves (which
                                       loses samples, or never ends, in
                                       llvm-profgen 19) */
    int64_t hot_count, cold_count;  /* --profile-summary-{hot,cold}-count,
                                       -1: not given */
    uint32_t cutoff_hot, cutoff_cold;   /* 990000, 999999 */
    double density_threshold;       /* 50 */
    uint32_t density_cutoff_hot;    /* 990000 */
    bool show_density;
    lp_warn_fn warn;                /* may be NULL */
    void *warn_ctx;
    FILE *info;                     /* --show-density output, may be NULL */
    /* pseudo-probe binaries (llvm-profgen 22's probe-based generation):
     * the binaries' probe tables, indexed like bins (NULL: line-based
     * profiles); counters then have address contexts (ctxcount.h) */
    lp_probes *const *probes;
    int compress_recursion;         /* --compress-recursion (-1), applied
                                       to probe contexts as they are
                                       expanded */
    int max_context_depth;          /* --csprof-max-context-depth (-1) */
    /* --infer-missing-frames (probe-based profiles): the hook that puts
     * back the frames tail calls left out of a context. Called with a
     * context's call-site addresses plus the leaf's address
     * (LP_CTX_ADDR), it sets *out (malloc'ed, the caller frees it) to the
     * completed context, leaf last, and returns its length, or -1 on no
     * memory. NULL: contexts as unwound (llvm-profgen with
     * --infer-missing-frames=0). */
    long (*infer_frames)(void *ctx, const uint64_t *in, size_t n,
                         uint64_t **out);
    void *infer_ctx;
    /* What infer_frames needs built first (its tail-call graphs), or
     * NULL: called with infer_ctx before the first context is generated,
     * from a second thread while the probes are decoded when there is one
     * (then it may read the counters and call into the binaries, which
     * nothing else changes meanwhile); 0, or -1 with err set. Called
     * again later: it must return at once. Once it has run, infer_frames
     * must only read the binaries (lp_binary_func_range): it is then
     * called without the lock the context sizes' thread takes. */
    int (*infer_prepare)(void *ctx, lp_error *err);
    struct lp_phases *phases;       /* marks pre-inlining and post-
                                       processing (phases.h), may be NULL */
    size_t parallel_min;            /* contexts from which line-based
                                       generation runs on two threads
                                       (by subtrees), when two CPUs are
                                       there (0: 4096; SIZE_MAX: never) */
    bool exiting;                   /* the process exits once the profile
                                       is written and freed by nobody (the
                                       CLI): what post-processing leaves
                                       of the context trie is dropped, not
                                       freed (~10^6 frees on a second
                                       thread, as long as the writing) */
} lp_cs_opts;

void lp_cs_opts_default(lp_cs_opts *o);

/* ---- unsymbolized profile reader (--unsymbolized-profile) -------------- */

/* Read llvm-profgen's unsymbolized profile, flat or CS ("[ctx]" headers,
 * "[]" for the empty context; a block without a header gets the empty
 * context), strictly as llvm-profgen does ("Invalid raw profile at line
 * N: <line>"), into cc under binary index `bin`, adding `base` to every
 * address. *is_cs is set if any context header was seen. Contexts are
 * taken as written: no recursion compression or depth trimming, and
 * was_leaf_inlined is false (llvm-profgen's reader cannot know it, so
 * `!Attributes: 1` is lost on this route). */
int lp_cs_raw_read(FILE *f, const char *name, int bin, uint64_t base,
                   lp_ctxcount *cc, bool *is_cs, lp_error *err);
/* The same for a pseudo-probe binary: "[0x7f4 @ 0x7bf]" headers are
 * address contexts (hex, plus base for binary `bin`'s; a value with bit 63
 * set is another binary's address as LP_CTX_XBIN, one of 2^48 or more
 * without it an LP_CTX_ADDR value as is). llvm-profgen 22 crashes on
 * such input; this reads it as lp_ctxcount_write_raw wrote it. */
int lp_cs_raw_read_addrs(FILE *f, const char *name, int bin, uint64_t base,
                         lp_ctxcount *cc, bool *is_cs, lp_error *err);

/* The body of lbr2prof's mergeable raw profile (include/lbr2prof/rawmerge.h):
 * the same blocks, and '#' lines: "#section N" (the blocks after it are
 * binary N's, 0 <= N < nbins, addresses relative to bases[N]) and
 * "#leaf-inlined V" / "#leaf-inlined V mixed" (the next context's
 * attributes; combined with an entry already in cc: inlined if either
 * says so, mixed if either does or they differ). Counts are multiplied by
 * `weight`. Blocks before any "#section" are binary 0's. With `addrs`
 * the contexts are address contexts (as lp_cs_raw_read_addrs reads them;
 * an address of binary nbins or beyond is an error). */
typedef struct lp_cs_raw_opts {
    const uint64_t *bases;      /* nbins of them */
    size_t nbins;
    uint64_t weight;            /* 0 counts as 1 */
    unsigned long lineno;       /* lines already read (the header) */
    size_t mixed_joined;        /* out: contexts already in cc that are
                                   mixed once these attributes join */
    bool addrs;                 /* address contexts (pseudo-probe binaries) */
} lp_cs_raw_opts;
int lp_cs_raw_read_body(FILE *f, const char *name, lp_cs_raw_opts *o,
                        lp_ctxcount *cc, bool *is_cs, lp_error *err);

/* ---- generation and post-processing ----------------------------------- */

/* generateLineNumBasedProfile: the context trie filled from every entry of
 * cc (body samples from that context's disjoint ranges, call targets and
 * head samples from its branches, inferred call sites for callers without
 * head samples, the call-site fix-up, --update-total-samples), written
 * into `out` (which should be empty) as a flat CS profile: out->is_cs = 1,
 * keys "main:1 @ foo", attribute 1 where the leaf was inlined. */
int lp_cs_generate(lp_binary *const *bins, size_t nbins, const lp_ctxcount *cc,
                   const lp_cs_opts *o, lp_profile *out, lp_error *err);

/* postProcessProfiles on a flat CS profile p (from lp_cs_generate, or read
 * with lp_profile_read for --llvm-sample-profile), in place:
 * summary and thresholds, the pre-inliner (context sizes from bins; the
 * functions measured are those touched by cc's counters, or, with cc
 * NULL, those named in p), cold trimming/merging, nested conversion
 * (then p->is_cs = 0), ambiguous-name filtering and the density warning. */
int lp_cs_postprocess(lp_binary *const *bins, size_t nbins,
                      const lp_ctxcount *cc, const lp_cs_opts *o,
                      lp_profile *p, lp_error *err);

/* Both: counters -> the final profile, as llvm-profgen writes it. */
int lp_cs_profile(lp_binary *const *bins, size_t nbins, const lp_ctxcount *cc,
                  const lp_cs_opts *o, lp_profile *out, lp_error *err);
/* The same, freeing each context's counters as soon as they are used and
 * every entry once the contexts are in the trie, so the counters and the
 * profile are not both in memory in full. cc is left empty. */
int lp_cs_profile_consume(lp_binary *const *bins, size_t nbins,
                          lp_ctxcount *cc, const lp_cs_opts *o,
                          lp_profile *out, lp_error *err);

#ifdef __cplusplus
}
#endif
#endif
