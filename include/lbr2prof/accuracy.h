/*
 * lbr2prof/accuracy.h - how close a sample profile is to the exact ground
 * truth of a `record --simulate --truth` run (docs/accuracy.md):
 *
 *   truth file --lp_truth_read--> samples, LBR entries, true stacks
 *              --lp_ideal_build--> range/branch counters per TRUE context
 *              --lp_ideal_profile (lp_cs_profile / lp_flat_generate)-->
 *                ideal profile
 *   ideal + profile --lp_accuracy_compare--> right-context counts,
 *              llvm-profdata overlap similarity, contexts right/missing/wrong
 *
 * The ideal CS profile is what llvm-profgen's CS generator makes when every
 * LBR range it unwinds is attributed to the calling context the program
 * really had; a profile made with the options of docs/accuracy.md by a
 * perfect unwinder equals it.
 */
#ifndef LBR2PROF_ACCURACY_H
#define LBR2PROF_ACCURACY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lbr2prof/binary.h"
#include "lbr2prof/ctxcount.h"
#include "lbr2prof/error.h"
#include "lbr2prof/flat.h"
#include "lbr2prof/probe.h"
#include "lbr2prof/profile.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the truth file (docs/record.md, version >= 2) ---------------------- */

typedef struct lp_truth_branch {
    uint64_t from, to;      /* runtime addresses */
    uint32_t node;          /* true stack when the branch was taken */
    bool cut;               /* the straight-line run ending at `from` was
                               entered asynchronously (signal, sigreturn,
                               exec), not at the older entry's `to` */
} lp_truth_branch;

typedef struct lp_truth_sample {
    uint64_t time;
    int32_t pid, tid;
    uint32_t node;          /* true stack at the sample (after lbr[0]) */
    size_t nlbr;
    lp_truth_branch *lbr;   /* most recent first, as BRANCH_STACK */
} lp_truth_sample;

/* One (from, to) pair of "branch_counts": every taken branch of the run. */
typedef struct lp_truth_edge {
    uint64_t from, to, count;   /* runtime addresses */
} lp_truth_edge;

typedef struct lp_truth_map {
    uint64_t time, start, end, pgoff;
    int32_t pid;
    char *path;
} lp_truth_map;

typedef struct lp_truth {
    int version;
    uint64_t instructions, taken_branches, period;
    lp_truth_sample *samples;
    size_t nsamples;
    lp_truth_map *maps;     /* in file order (by time) */
    size_t nmaps;
    /* stack nodes by id (0 = empty stack): parent id and return address;
     * only ids whose `node_known` is set were in the file */
    uint32_t *node_parent;
    uint64_t *node_ret;
    uint8_t *node_known;
    size_t nnodes;
    lp_truth_edge *edges;   /* branch_counts (may be absent: 0) */
    size_t nedges;
} lp_truth;

/* Read a truth file. A version 1 file (no LBR stacks) is refused with a
 * message saying to record again. Errors name the file and the element. */
lp_truth *lp_truth_read(const char *path, lp_error *err);
void lp_truth_free(lp_truth *t);

/* ---- the ideal counters --------------------------------------------------- */

typedef struct lp_ideal_stats {
    uint64_t samples;           /* in the truth */
    uint64_t ranges;            /* LBR ranges i >= 1 of all samples */
    uint64_t ranges_counted;    /* both ends in the binary: attributed */
    uint64_t ranges_external;   /* an end outside the binary's code */
    uint64_t ranges_cut;        /* entered asynchronously (signal...) */
    uint64_t ranges_invalid;    /* not a fall-through in the binary */
    uint64_t branches;          /* LBR entries of all samples */
    uint64_t branches_counted;  /* target in the binary */
} lp_ideal_stats;

typedef struct lp_ideal {
    lp_ctxcount *cc;            /* per true context (binary index 0),
                                   link-time addresses; address contexts
                                   with probes */
    lp_counters *flat;          /* the same ranges and branches without
                                   contexts, for flat (LBR-only) profiles */
    lp_ideal_stats st;
    lp_probes *probes;          /* the binary's, for a pseudo-probe ideal
                                   (borrowed); NULL: line-based */
    lp_counters *edges;         /* probes: every branch the run took from
                                   the binary's code (branch_counts), the
                                   tail-call graph of the true contexts */
} lp_ideal;

/* Attribute every LBR range i >= 1 (LBR[i].to .. LBR[i-1].from) of every
 * sample that lies in `bin` to its true context, split by inline context,
 * and every branch to the context of its source, the way llvm-profgen's
 * virtual unwinder records them (docs/accuracy.md). */
int lp_ideal_build(const lp_truth *t, lp_binary *bin, lp_ideal *out,
                   lp_error *err);
/* The same for a pseudo-probe binary (probes: its tables): the counters
 * get address contexts, the call sites of the true callers (cut at the
 * innermost frame outside the binary or not after a call), ranges are not
 * split (the probes say where inlined code is), as llvm-profgen's probe
 * unwinder counts them; and every branch of branch_counts is kept for
 * the tail-call frames (lp_ideal_profile). */
int lp_ideal_build_probes(const lp_truth *t, lp_binary *bin,
                          lp_probes *probes, lp_ideal *out, lp_error *err);
void lp_ideal_free(lp_ideal *id);

/* An ideal profile: the ideal counters through the project's own
 * generators, as llvm-profgen 19 (22 with probes) turns them into a
 * profile. With probes the true contexts are completed with the frames of
 * tail calls where exactly one path of tail calls, among every call and
 * tail call the run made (branch_counts), leads from a caller's call to
 * the next frame (LP_TC_STRICT on that graph: what the inferrer of a
 * profile tool would find with a complete LBR). cs: lp_cs_profile
 * on id->cc with the options of docs/accuracy.md (--csspgo-preinliner=0
 * --gen-cs-nested-profile=0 --csprof-merge-cold-context=0; recursion
 * compression and depth trimming belong to the unwinder and are not
 * applied: the contexts are the true ones). Flat: lp_flat_generate and
 * lp_flat_postprocess with the defaults on id->flat. A new profile, or
 * NULL with err set. */
lp_profile *lp_ideal_profile(lp_binary *bin, const lp_ideal *id, bool cs,
                             lp_error *err);
/* A pseudo-probe ideal's CS profile without the tail-call frames: the true
 * contexts as the machine's stacks have them. */
lp_profile *lp_ideal_profile_machine(lp_binary *bin, const lp_ideal *id,
                                     lp_error *err);

/* ---- llvm-profdata overlap --sample ---------------------------------------- */

typedef struct lp_overlap {
    double similarity;          /* "Whole program profile similarity", 0..1 */
    uint64_t base_sample, test_sample;  /* Σ body counts (with inlinees) */
    uint64_t overlap_sample, union_sample;
    size_t overlap_funcs, base_unique_funcs, test_unique_funcs;
} lp_overlap;

/* Σ of the body counts of fs and its inlinees (getFuncSampleStats). */
uint64_t lp_fs_body_sum(const lp_fsamples *fs);
/* The weighted similarity FS of one top-level profile pair (computeSample-
 * FunctionOverlap); either may be NULL (then 0). Totals: of the profiles. */
double lp_overlap_func(const lp_fsamples *base, const lp_fsamples *test,
                       uint64_t base_total, uint64_t test_total);
/* The program-level numbers of `llvm-profdata overlap --sample BASE TEST`.
 * Top-level profiles are matched by context (flat: by name). */
int lp_overlap_sample(const lp_profile *base, const lp_profile *test,
                      lp_overlap *out, lp_error *err);

/* ---- comparison ------------------------------------------------------------ */

/* A context only the profile has is TRUNCATED when it is a proper suffix
 * of a true one (the callers from some frame on were not known: the
 * unwinder kept the counts in the context truncated there), otherwise
 * WRONG. */
enum lp_ctx_status { LP_CTX_RIGHT = 0, LP_CTX_MISSING, LP_CTX_WRONG,
                     LP_CTX_TRUNCATED };

typedef struct lp_acc_ctx {
    const char *key;            /* context (CS) or function name (flat) */
    const char *func;           /* its leaf function */
    uint64_t ideal, actual;     /* Σ body counts */
    uint64_t matched;           /* Σ over locations of min(ideal, actual) */
    double similarity;          /* lp_overlap_func of the pair */
    int status;                 /* enum lp_ctx_status */
} lp_acc_ctx;

typedef struct lp_acc_func {
    const char *name;
    uint64_t ideal, actual;
    uint64_t matched;           /* in the right context */
    uint64_t matched_fn;        /* contexts ignored (per function+location) */
    double similarity;          /* of the context-less function profiles */
    size_t right, missing, wrong, truncated;
} lp_acc_func;

typedef struct lp_accuracy {
    bool cs;                    /* the profile is context-sensitive */
    uint64_t ideal, actual, matched, matched_fn;
    uint64_t wrong_counts;      /* actual counts in wrong contexts */
    uint64_t truncated_counts;  /* actual counts in truncated contexts */
    double similarity;          /* overlap of ideal vs profile */
    double similarity_fn;       /* the same on context-less profiles */
    size_t right, missing, wrong, truncated;
    lp_acc_ctx *ctx;            /* by ideal desc, actual desc, key */
    size_t nctx;
    lp_acc_func *fn;            /* by ideal desc, actual desc, name */
    size_t nfn;
    size_t recursive_missing;   /* missing contexts with a repeated frame */
    size_t recursive_in_profile;/* profile contexts with a repeated frame */
} lp_accuracy;

/* Compare `prof` with `ideal` (both CS, or both flat). Names point into
 * the profiles, which must outlive the result. */
int lp_accuracy_compare(const lp_profile *ideal, const lp_profile *prof,
                        lp_accuracy *out, lp_error *err);
/* The same, where a context only the profile has that is one of `alt`'s
 * (or a proper suffix of one) counts as truncated, not wrong: for pseudo-
 * probe profiles alt is the ideal without tail-call frames, the contexts
 * the machine's stacks show (lp_ideal_profile_machine). alt may be NULL. */
int lp_accuracy_compare_alt(const lp_profile *ideal, const lp_profile *alt,
                            const lp_profile *prof, lp_accuracy *out,
                            lp_error *err);
void lp_accuracy_free(lp_accuracy *a);

/* Sum the contexts of a CS profile per leaf function (body counts added
 * per location; call targets dropped): a new flat profile. */
lp_profile *lp_profile_collapse_contexts(const lp_profile *cs, lp_error *err);

/* What makes a profile text file not comparable with the ideal one. */
enum {
    LP_ACC_PREINLINED = 1,      /* !Attributes with bit 2 (pre-inliner) */
    LP_ACC_NESTED = 2,          /* a CS profile with inlinee blocks */
    LP_ACC_NOT_CS = 4,          /* no [context] keys: compared as flat */
};
/* Scan the text profile at `path` (already read into `p`) for the above;
 * returns the flags, -1 if the file cannot be read. */
int lp_accuracy_profile_flags(const char *path, const lp_profile *p,
                              lp_error *err);

typedef struct lp_accuracy_print_opts {
    size_t max_rows;            /* per table; 0 = all */
    bool summary_only;          /* only the closing line */
} lp_accuracy_print_opts;

/* The per-function and per-context tables and the closing line
 * "accuracy: P% of range counts in the right context (...)". */
int lp_accuracy_print(FILE *f, const lp_accuracy *a,
                      const lp_accuracy_print_opts *o, lp_error *err);

#ifdef __cplusplus
}
#endif
#endif
