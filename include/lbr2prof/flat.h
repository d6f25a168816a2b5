/*
 * lbr2prof/flat.h - flat (AutoFDO) profiles from LBR samples, the way
 * llvm-profgen 19 makes them for LBR-only input:
 *
 *   samples --lp_lbr_agg--> range and branch counters (canonical addresses)
 *           --lp_rawprof_write/read--> the unsymbolized text profile
 *           --lp_flat_generate--> an lp_profile (body/head/call targets)
 *           --lp_flat_postprocess--> thresholds, trimming, filtering.
 *
 * Addresses in counters are link-time (preferred) addresses of the binary;
 * LP_EXTERNAL_ADDR (1) stands for anything outside the binary's code.
 * Warnings llvm-profgen prints are handed to a callback (the library never
 * prints), already formatted without the "warning: " prefix.
 */
#ifndef LBR2PROF_FLAT_H
#define LBR2PROF_FLAT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "lbr2prof/addrmap.h"
#include "lbr2prof/binary.h"
#include "lbr2prof/error.h"
#include "lbr2prof/probe.h"
#include "lbr2prof/profile.h"
#include "lbr2prof/reader.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LP_EXTERNAL_ADDR 1u

/* ---- counters ---------------------------------------------------------- */

typedef struct lp_counters lp_counters;

typedef struct lp_addr_pair_count {
    uint64_t a, b;          /* range [a, b] or branch a -> b */
    uint64_t count;
} lp_addr_pair_count;

lp_counters *lp_counters_new(void);
void lp_counters_free(lp_counters *c);
/* Counters inside another allocation (a context entry: one block less for
 * each of ~10^5 contexts): lp_counters_bytes() bytes at mem, 8-byte
 * aligned, made empty; their tables freed by lp_counters_fini, which
 * leaves the memory itself to its owner. */
size_t lp_counters_bytes(void);
lp_counters *lp_counters_init(void *mem);
void lp_counters_fini(lp_counters *c);
/* lp_counters_fini with each of c's tables given to drop(block, arg)
 * instead of free() (a caller that frees them on another thread). */
void lp_counters_fini_with(lp_counters *c, void (*drop)(void *, void *), void *arg);
int lp_counters_add_range(lp_counters *c, uint64_t start, uint64_t end,
                          uint64_t n);
int lp_counters_add_branch(lp_counters *c, uint64_t src, uint64_t dst,
                           uint64_t n);
/* Add every count of src to dst (saturating). 0, or -1 on OOM. */
int lp_counters_merge(lp_counters *dst, const lp_counters *src);
/* Sorted by (a, b); malloc'ed array (free()), count returned, -1 on OOM. */
long lp_counters_ranges(const lp_counters *c, lp_addr_pair_count **out);
long lp_counters_branches(const lp_counters *c, lp_addr_pair_count **out);
/* The same sorted pairs without a copy: *out points into the counters and
 * stays valid until the next add or free. Count returned (never fails). */
long lp_counters_ranges_view(const lp_counters *c,
                             const lp_addr_pair_count **out);
long lp_counters_branches_view(const lp_counters *c,
                               const lp_addr_pair_count **out);
/* The same pairs in no particular order, never sorted here: for a
 * consumer whose result does not depend on their order (the CS
 * generator's bodies and branches, the profiled functions). */
long lp_counters_ranges_any(const lp_counters *c, const lp_addr_pair_count **out);
long lp_counters_branches_any(const lp_counters *c, const lp_addr_pair_count **out);

/* ---- LBR aggregation (PerfScriptReader, LBR-only) ---------------------- */

typedef struct lp_lbr_agg lp_lbr_agg;

typedef struct lp_lbr_agg_opts {
    lp_warn_fn warn;        /* may be NULL */
    void *warn_ctx;
    bool show_detailed_warning;
    int64_t pid_filter;     /* -1: none (own single-base map only) */
    bool leading_ip_only;   /* --leading-ip-only: count the sample IP only */
    bool has_sample_period; /* --sample-period=P given */
    uint64_t sample_period;
    /* Where runtime addresses are resolved. NULL: the aggregator keeps its
     * own single-base map of `bin` (llvm-profgen 19: one load base moved
     * by lp_lbr_agg_mmap). Else the caller's map, fed by the caller with
     * every event, in which `bin` has index `bin_index`; samples are
     * resolved in the process set by lp_lbr_agg_set_pid. */
    const lp_addrmap *map;
    int bin_index;
    bool kernel;            /* own map: `bin` is the kernel image (--kernel,
                               lp_addrmap_opts.kernel) */
} lp_lbr_agg_opts;

lp_lbr_agg *lp_lbr_agg_new(lp_binary *bin, const lp_lbr_agg_opts *o,
                           lp_error *err);
void lp_lbr_agg_free(lp_lbr_agg *a);
/* An mmap event for the aggregator's own single-base map
 * (updateBinaryAddress): -1 on the fatal segment errors. No-op when the
 * caller gave a map. */
int lp_lbr_agg_mmap(lp_lbr_agg *a, const lp_mmap_event *m, lp_error *err);
/* The process the following samples come from (LP_ADDRMAP_ANY_PID, the
 * default: no pid known, single-base rule). */
void lp_lbr_agg_set_pid(lp_lbr_agg *a, uint32_t pid);
/* One LBR sample: br[0] newest; addresses as recorded (runtime). */
int lp_lbr_agg_sample(lp_lbr_agg *a, const lp_branch_entry *br, size_t n,
                      uint64_t repeat, lp_error *err);
/* --leading-ip-only: the sample's IP (runtime address) as a one-address
 * range; the LBR entries are not used. */
int lp_lbr_agg_ip_sample(lp_lbr_agg *a, uint64_t ip, uint64_t repeat,
                         lp_error *err);
/* A hybrid sample (call stack + LBR) with its stack ignored
 * (--ignore-stack-samples): like lp_lbr_agg_sample, except that the sample
 * is dropped when its leaf frame lies in a function prolog or epilog, as
 * HybridPerfReader does before it looks at the stack, and the sample
 * period is not applied (nor by HybridPerfReader). `stack` is leaf first
 * and may hold LP_CONTEXT_* markers. */
int lp_lbr_agg_stack_sample(lp_lbr_agg *a, const uint64_t *stack, size_t ns,
                            const lp_branch_entry *br, size_t n,
                            uint64_t repeat, lp_error *err);

/* The identity of the next sample given to lp_lbr_agg_sample or
 * lp_lbr_agg_stack_sample, when the caller has one: a 128-bit digest
 * equal for equal samples (perf.data: lp_sample.stacks_id; perf script
 * text: {dup_id, 0}), so that a repeated sample is found without reading
 * its arrays. Without it the aggregator computes the same digest. */
void lp_lbr_agg_set_id(lp_lbr_agg *a, lp_stacks_id id);
/* How many samples the next sample given to lp_lbr_agg_sample,
 * lp_lbr_agg_ip_sample or lp_lbr_agg_stack_sample stands for where samples
 * are counted rather than weighed (the leaf-external warning counts
 * HybridPerfReader's samples): lp_sample.calls - samples the reader
 * folded into one (lp_reader_opts.fold_repeats) are each a sample of their
 * own there; an aggregated text sample (a count line) is one. 0 or
 * without it: 1. */
void lp_lbr_agg_set_calls(lp_lbr_agg *a, uint64_t calls);

/* A sample of process `pid` that will come soon (e.g. from
 * lp_reader_set_ahead's function): starts loading the waiting samples'
 * index slot its identity picks. *id: the identity when known (as
 * lp_lbr_agg_set_id's), else {0, 0}: computed here from the stack (NULL
 * for lp_lbr_agg_sample's samples) and branches and stored there, for
 * the caller to pass to lp_lbr_agg_set_id. Changes no result. */
void lp_lbr_agg_ahead(lp_lbr_agg *a, uint32_t pid, const uint64_t *stack, size_t ns,
                      const lp_branch_entry *br, size_t n, lp_stacks_id *id);

/* llvm-profgen's NumTotalSample, the denominator of the leaf-external
 * warning of lp_lbr_agg_stack_sample's samples (perf script text: every
 * line taken as the start of a sample). Default: the number of calls. */
void lp_lbr_agg_set_total_samples(lp_lbr_agg *a, uint64_t n);

/* Samples are not counted at once: identical ones (same process, stack
 * and addresses) wait in a bounded table and are counted once with the sum
 * of their repeats (llvm-profgen's AggregatedSamples). lp_lbr_agg_flush
 * counts the waiting samples; a caller feeding its own address map must
 * call it before every event that may change the map (MMAP, COMM with
 * exec, FORK of a process); lp_lbr_agg_mmap and lp_lbr_agg_finish do it
 * themselves. 0 or -1 (err). */
int lp_lbr_agg_flush(lp_lbr_agg *a, lp_error *err);

/* Range/branch counters (computeCounterFromLBR) and warnInvalidRange's
 * warnings. The counters stay owned by the aggregator. */
lp_counters *lp_lbr_agg_finish(lp_lbr_agg *a, lp_error *err);
bool lp_lbr_agg_loaded_by_mmap(const lp_lbr_agg *a);
/* Samples counted so far (complete after lp_lbr_agg_finish). */
uint64_t lp_lbr_agg_nr_samples(const lp_lbr_agg *a);

/* ---- warnInvalidRange's wording (the aggregator's and the unwinder's) -- */

/* What can be wrong with an LBR fall-through range. */
typedef enum lp_range_issue {
    LP_RANGE_NOT_BOUNDARY,      /* an end is not an instruction boundary */
    LP_RANGE_NO_FUNC,           /* the start is in no function */
    LP_RANGE_CROSS_FUNC,        /* the range leaves its function */
    LP_RANGE_BOGUS,             /* start after, or too far from, the end */
} lp_range_issue;

/* Sample counts of the ranges with each issue, of `total`. */
typedef struct lp_range_stats {
    uint64_t total, not_boundary, unmatched, cross_func, bogus;
    uint64_t recovered;         /* in functions recovered from .symtab */
} lp_range_stats;

/* The --show-detailed-warning line of one range. */
void lp_range_warn_detail(lp_warn_fn fn, void *ctx, uint64_t start,
                          uint64_t end, lp_range_issue issue);
/* The summary lines (emitWarningSummary), in llvm-profgen 22's order. */
void lp_range_warn_summary(lp_warn_fn fn, void *ctx, const lp_range_stats *st);

/* ---- unsymbolized profile (--skip-symbolization) ----------------------- */

/* Addresses are printed minus `base` (preferred base or first loadable
 * segment with --use-offset, 0 without). */
int lp_rawprof_write(FILE *f, const lp_counters *c, uint64_t base,
                     lp_error *err);
/* The range block then the branch block of counters c, every line
 * prefixed by `indent` (a CS profile's contexts indent them by two
 * spaces): what lp_rawprof_write and lp_ctxcount_write_raw share. 0, or
 * -1 on a write error. */
int lp_rawprof_write_blocks(FILE *f, const lp_counters *c, uint64_t base,
                            const char *indent);
/* Strict reader; adds `base` back. Flat (no [context]) profiles only. */
int lp_rawprof_read(FILE *f, const char *name, uint64_t base, lp_counters *c,
                    lp_error *err);

/* ---- profile generation (ProfileGenerator) ----------------------------- */

typedef struct lp_flat_opts {
    bool fill_zero_for_all_funcs;
    bool update_total_samples;
    bool trim_cold_profile;
    int64_t hot_count;      /* --profile-summary-hot-count, -1: not given */
    int64_t cold_count;     /* --profile-summary-cold-count, -1: not given */
    uint32_t cutoff_hot, cutoff_cold;  /* 990000, 999999 */
    double density_threshold;          /* 50 */
    uint32_t density_cutoff_hot;       /* 990000 */
    bool show_density;
    bool leading_ip_only;   /* body counts are summed, no duplication factor */
    lp_warn_fn warn;
    void *warn_ctx;
    FILE *info;             /* --show-density output (stdout), may be NULL */
} lp_flat_opts;

void lp_flat_opts_default(lp_flat_opts *o);

int lp_flat_generate(lp_binary *bin, const lp_counters *c,
                     const lp_flat_opts *o, lp_profile *out, lp_error *err);
/* The same for a binary with pseudo probes (llvm-profgen 22's
 * generateProbeBasedProfile): bodies keyed by probe id, call targets at
 * call probes, CFG checksums; out becomes probe-based. pr is bin's probe
 * table: decoded here for the profiled functions unless it already is. */
int lp_flat_generate_probes(lp_binary *bin, lp_probes *pr,
                            const lp_counters *c, const lp_flat_opts *o,
                            lp_profile *out, lp_error *err);
/* computeSummaryAndThreshold, trimColdProfiles, filterAmbiguousProfile,
 * calculateAndShowDensity. */
int lp_flat_postprocess(lp_profile *p, const lp_flat_opts *o, lp_error *err);

/* Pieces shared with the CS generator (src/context). */
/* findDisjointRanges: ranges (any order; a > b ones are skipped) cut into
 * disjoint pieces carrying the sum of the counts over them (zero-count
 * ranges survive as zero pieces), sorted by address. *out malloc'ed
 * (free it); returns the number of pieces, -1 on no memory. */
long lp_flat_disjoint_ranges(const lp_addr_pair_count *r, size_t n,
                             lp_addr_pair_count **out);
/* The same into buffers kept by a caller that cuts one range set after
 * another (the CS generators: one per context, no malloc each): *out
 * points into s, valid until its next use. Zeroed to start. */
typedef struct lp_dj_scratch {
    void *ev;                   /* the ranges' begin and end events */
    size_t evcap;
    lp_addr_pair_count *v;      /* the pieces */
    size_t cap;
} lp_dj_scratch;
long lp_flat_disjoint_ranges_in(const lp_addr_pair_count *r, size_t n,
                                lp_dj_scratch *s, const lp_addr_pair_count **out);
void lp_dj_scratch_free(lp_dj_scratch *s);
/* calculateAndShowDensity: the density warning (o->warn) and, with
 * o->show_density, the summary line (o->info). Only the density fields,
 * warn and info of o are used. */
int lp_flat_density(const lp_profile *p, const lp_flat_opts *o, lp_error *err);
/* filterAmbiguousProfile (__cxx_global_var_init* and __tls_init*
 * profiles and inlinees dropped), then lp_flat_density, in one pass over
 * p's entries (each pass was a cache miss per entry: ~3 ms on ~10^5). */
int lp_flat_filter_density(lp_profile *p, const lp_flat_opts *o, lp_error *err);

#ifdef __cplusplus
}
#endif
#endif
