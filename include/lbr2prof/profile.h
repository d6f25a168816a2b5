/*
 * lbr2prof/profile.h - the sample-profile model (LLVM's FunctionSamples) and
 * its writers/readers: LLVM text, extbinary and legacy binary.
 *
 * A profile (lp_profile) maps a context key to a top-level function
 * profile (lp_fsamples). For flat (AutoFDO) profiles the key is just the
 * function name; context-sensitive profiles use "main:1 @ foo" keys.
 * A function profile has a total and a head count, body records keyed by
 * (line offset, discriminator) each with call-target counts, and nested
 * inlinee profiles keyed by (line offset, discriminator) then callee name.
 * Counts saturate at UINT64_MAX like LLVM's SaturatingAdd.
 */
#ifndef LBR2PROF_PROFILE_H
#define LBR2PROF_PROFILE_H

#include <stdint.h>
#include <stdio.h>

#include "lbr2prof/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lp_loc {
    uint32_t line;          /* line offset from the function's start line */
    uint32_t disc;          /* base discriminator (0: none) */
} lp_loc;

typedef struct lp_body_rec lp_body_rec;    /* opaque */
typedef struct lp_callsite lp_callsite;    /* opaque */
typedef struct lp_fsamples lp_fsamples;

struct lp_fsamples {
    char *name;             /* function name */
    char *context;          /* top-level key (== name for flat profiles) */
    uint64_t total, head;
    uint32_t attrs;         /* !Attributes bitmask (CS) */
    uint32_t order;         /* top-level CS profile: its context's rank in
                             * LLVM's SampleContext order, 1-based (see
                             * lp_profile.ordered; 0: none). Moved by
                             * lp_fs_move, kept by merges. */
    uint64_t checksum;      /* !CFGChecksum (probe-based profiles; 0: none) */
    lp_body_rec *body;      /* records sorted by loc (model.c's) */
    lp_callsite *callsites; /* call sites sorted by loc (model.c's) */
    uint32_t nr_body, body_cap, nr_callsites, callsite_cap;
};

/* Owner of all top-level profiles. */
typedef struct lp_profile {
    void *funcs;            /* uthash of top-level entries, by context */
    size_t nr_funcs;
    int is_cs;              /* keys are contexts: text prints [ctx] */
    int is_preinlined;      /* the CS pre-inliner ran (extbinary flag) */
    int is_probe_based;          /* probe-based: offsets are probe ids, functions
                             * carry CFG checksums (text !CFGChecksum,
                             * extbinary FuncMetadata "probe" flag) */
    int is_fs;              /* FS discriminators (extbinary summary flag) */
    int ordered;            /* CS: every entry's fs.order is set, distinct,
                             * in lp_context_cmp's order of the contexts
                             * (set by whoever made the profile from a
                             * context trie; lp_profile_get clears it when
                             * it adds an entry): lp_profile_sorted then
                             * compares no context */
    void (*pending)(void *);/* run by lp_profile_free (NULL: nothing): what
                             * made the profile frees its own data on a
                             * thread meanwhile, waited for there */
    void *pending_arg;
} lp_profile;

lp_profile *lp_profile_new(void);
void lp_profile_free(lp_profile *p);

/* Top-level profile for `context` (created with function `name` if absent;
 * `name` NULL means "same as context"). NULL only on allocation failure. */
lp_fsamples *lp_profile_get(lp_profile *p, const char *context,
                            const char *name);
lp_fsamples *lp_profile_find(const lp_profile *p, const char *context);
/* Room for n more entries made at once (a table grown step by step
 * rehashes every entry ~twice). -1 on no memory. */
int lp_profile_reserve(lp_profile *p, size_t n);
/* Every entry of src into dst, src left empty: one dst lacks is moved
 * whole (its key neither copied nor hashed again), one dst has is merged
 * into dst's (lp_fs_merge_ranked). -1 on no memory (src is emptied
 * either way). */
int lp_profile_absorb(lp_profile *dst, lp_profile *src);
/* Remove and free one top-level profile. */
void lp_profile_remove(lp_profile *p, const char *context);

/* Body record at loc, created with count 0 if absent (NULL: no memory).
 * The pointer is valid until the next record is added to fs. */
lp_body_rec *lp_fs_body(lp_fsamples *fs, lp_loc loc);
const lp_body_rec *lp_fs_body_find(const lp_fsamples *fs, lp_loc loc);
/* Records with count 0 for the locations of locs[0..n) (sorted, distinct)
 * fs has none for; the others are left as they are. -1 on no memory. */
int lp_fs_body_ensure(lp_fsamples *fs, const lp_loc *locs, size_t n);
/* Each location of v[0..n) (sorted by location, distinct) gets a record
 * whose count is at least the item's: created with it, or raised to it
 * (lp_fs_body then a max per item, in one merge). -1 on no memory. */
typedef struct lp_loc_count {
    lp_loc loc;
    uint64_t count;
} lp_loc_count;
int lp_fs_body_max(lp_fsamples *fs, const lp_loc_count *v, size_t n);
uint64_t lp_body_count(const lp_body_rec *b);
lp_loc lp_body_loc(const lp_body_rec *b);
/* The i-th body record of fs in location order (i < lp_fs_nr_body). */
const lp_body_rec *lp_fs_body_at(const lp_fsamples *fs, size_t i);
void lp_body_set_count(lp_body_rec *b, uint64_t count);
/* A hint: fs's body records (their first few cache lines) will be read
 * soon. Reads fs itself. */
void lp_fs_prefetch_body(const lp_fsamples *fs);
/* Add `n` to the record's sample count (saturating). */
void lp_body_add(lp_body_rec *b, uint64_t n);
/* Add `n` to the call target `callee` of the record. -1 on no memory. */
int lp_body_add_target(lp_body_rec *b, const char *callee, uint64_t n);
/* Sum of the call-target counts of a record. */
uint64_t lp_body_target_sum(const lp_body_rec *b);

/* Inlinee profile for `callee` at `loc`, created empty if absent. */
lp_fsamples *lp_fs_callee(lp_fsamples *fs, lp_loc loc, const char *callee);
/* The inlinee profile for `callee` at `loc`, or NULL. */
lp_fsamples *lp_fs_find_callee(const lp_fsamples *fs, lp_loc loc,
                               const char *callee);
/* Call-target count of `callee` at loc (0 if none). */
uint64_t lp_fs_target_count(const lp_fsamples *fs, lp_loc loc,
                            const char *callee);
/* Number of body records / call sites of fs itself. */
size_t lp_fs_nr_body(const lp_fsamples *fs);
size_t lp_fs_nr_callsites(const lp_fsamples *fs);
/* The body counts of fs and of its inlinees, all levels, added to
 * *samples (wrapping) and their number to *records (no view made). */
void lp_fs_body_totals(const lp_fsamples *fs, uint64_t *samples,
                       uint64_t *records);

/* ---- standalone profiles and moves (CS generation) ---------------------- */

/* A profile outside any lp_profile: lp_fs_init on caller storage (name
 * copied; context = name), lp_fs_clear frees its contents. */
int lp_fs_init(lp_fsamples *fs, const char *name);
void lp_fs_clear(lp_fsamples *fs);
/* LLVM FunctionSamples::merge: totals, heads, body records and call
 * targets are added (saturating), inlinees merged recursively; an inlinee
 * created by the merge takes the source's attributes (LLVM copies the
 * context into an empty profile). dst's own name and attributes stay.
 * Checksums: dst without one takes src's; two different ones merge
 * nothing (LLVM's hash_mismatch, which its callers ignore: one profile is
 * dropped). -1 on no memory. */
int lp_fs_merge(lp_fsamples *dst, const lp_fsamples *src);
/* lp_fs_merge of two top-level CS profiles of one printed context, made
 * from two nodes of one trie: dst's order becomes the lower nonzero one
 * of the two (the first in LLVM's order), whichever came first. */
int lp_fs_merge_ranked(lp_fsamples *dst, const lp_fsamples *src);
/* Move src's counts, body and inlinees into dst, which must be empty
 * (just created); attributes are moved too. src is left empty. */
void lp_fs_move(lp_fsamples *dst, lp_fsamples *src);
/* LLVM removeCalledTargetAndBodySample: drop `callee` from the targets at
 * loc, subtract its count from the record (not below 0), erase the record
 * if its count is then 0. Returns the count subtracted. */
uint64_t lp_fs_remove_call(lp_fsamples *fs, lp_loc loc, const char *callee);
/* LLVM getHeadSamplesEstimate with ProfileIsCS set (cs) or not: the head
 * count if cs and non-zero, else the count of the first body record or
 * the sum of the first call site's inlinee estimates, whichever comes
 * first; at least 1 if the total is non-zero. */
uint64_t lp_fs_head_estimate(const lp_fsamples *fs, int cs);

/* LLVM SampleContext ordering of two printed contexts ("main:1 @ foo"):
 * frame by frame, function names as strings, then (line, discriminator)
 * numerically (a leaf frame is at 0.0), then the shorter first. */
int lp_context_cmp(const char *a, const char *b);
/* v[0..n) in lp_context_cmp's order, each context parsed once (a
 * comparison parses both: 84 k contexts sorted with it took ~0.3 s).
 * 0, or -1 (no memory: v unchanged). */
int lp_context_sort(const char **v, size_t n);
/* The frames of a printed context: names (not NUL-terminated: len) and
 * call-site locations (0.0 for the leaf). Fills up to max frames and
 * returns the number of frames. */
typedef struct lp_context_frame {
    const char *name;
    size_t len;
    lp_loc loc;
} lp_context_frame;
size_t lp_context_split(const char *ctx, lp_context_frame *out, size_t max);

uint64_t lp_sat_add(uint64_t a, uint64_t b);

/* ---- function names (LLVM FunctionId) ------------------------------------ */

/* A profile read from an MD5 name table names functions by their 64-bit
 * MD5 (llvm::MD5Hash of the name), printed in decimal as LLVM prints
 * them. Such a name is the decimal digits of a non-zero 64-bit value
 * without a leading zero (no function name is all digits); 1 and the
 * value in *v if `name` is one. */
int lp_name_md5(const char *name, uint64_t *v);
/* The MD5 hash code of a name: its value for an MD5 name, else MD5Hash. */
uint64_t lp_name_hash(const char *name);
/* LLVM's FunctionId order: MD5 names numerically and before string
 * names, string names as strcmp. Every ordering of names uses it. */
int lp_name_cmp(const char *a, const char *b);

/* ---- weighted merging (llvm-profdata merge --sample) --------------------- */

enum {
    LP_MERGE_OVERFLOW = 1,      /* a count saturated (LLVM counter_overflow) */
    LP_MERGE_HASH_MISMATCH = 2, /* CFG checksums differ: src (or an inlinee
                                 * of it) was not merged, as in LLVM */
};
/* LLVM FunctionSamples::merge(src, weight): every count of src times
 * `weight` added to dst (saturating), inlinees recursively; a profile
 * whose checksum differs from a non-zero dst checksum is skipped. The
 * LP_MERGE_* events seen are or'ed into *status. -1 on no memory. */
int lp_fs_merge_weighted(lp_fsamples *dst, const lp_fsamples *src,
                         uint64_t weight, unsigned *status);

/* Sorted views, for writers and tests. Arrays are malloc'ed (NULL when
 * there is nothing to view); free() them (body views: lp_body_views_free).
 * Return the element count, or (size_t)-1 on allocation failure. */
typedef struct lp_target_view {
    const char *name;
    uint64_t count;
} lp_target_view;
typedef struct lp_body_view {
    lp_loc loc;
    uint64_t count;
    lp_target_view *targets;        /* by count desc, then name */
    size_t nr_targets;
} lp_body_view;
typedef struct lp_callee_view {
    lp_loc loc;
    const lp_fsamples *fs;          /* by loc, then callee name */
} lp_callee_view;

size_t lp_fs_sorted_body(const lp_fsamples *fs, lp_body_view **out);
/* One record's call targets in the views' order (count desc, then name)
 * into out, which has room for lp_body_nr_targets(b); returns their
 * number (no allocation: for writers that walk the records with
 * lp_fs_body_at). */
size_t lp_body_nr_targets(const lp_body_rec *b);
size_t lp_body_sorted_targets(const lp_body_rec *b, lp_target_view *out);
void lp_body_views_free(lp_body_view *v, size_t n);
size_t lp_fs_sorted_callees(const lp_fsamples *fs, lp_callee_view **out);
/* Top-level profiles by total desc, then context (llvm sortFuncProfiles;
 * CS contexts compare as lp_context_cmp). */
size_t lp_profile_sorted(const lp_profile *p, lp_fsamples ***out);
/* v (malloc'ed, taken): every entry of p in lp_profile_sorted's order,
 * made by the caller from what it read anyway (the CS post-processing's
 * ranks and totals), returned by lp_profile_sorted as long as no entry
 * is added or removed and p stays ordered: its sort then reads no entry
 * (a cache miss each on ~10^5 of them). The caller changes no total
 * after. */
void lp_profile_keep_sorted(lp_profile *p, lp_fsamples **v, size_t n);
/* Every top-level profile, unsorted (iteration helper). */
size_t lp_profile_all(const lp_profile *p, lp_fsamples ***out);

/* Give back the spare capacity of fs's body records (fs itself). */
void lp_fs_shrink(lp_fsamples *fs);

/* Set every body record of fs itself to max(count, sum of call targets)
 * (llvm 19 updateCallsiteSamples: inlinee bodies are observed unchanged). */
void lp_fs_update_callsite_samples(lp_fsamples *fs);
/* total := sum of body counts + sum of inlinee totals, recursively
 * (llvm updateTotalSamples). */
void lp_fs_update_total_samples(lp_fsamples *fs);

/* Remove, recursively, every inlinee profile whose name satisfies pred
 * (the call-site location itself stays, empty, as in LLVM). */
typedef int (*lp_name_pred)(const char *name);
void lp_fs_drop_callees(lp_fsamples *fs, lp_name_pred pred);

/* ---- writers ---------------------------------------------------------- */

typedef enum lp_prof_format {
    LP_PROF_TEXT = 1,
    LP_PROF_EXTBINARY,
    LP_PROF_BINARY,
} lp_prof_format;

typedef struct lp_write_opts {
    lp_prof_format format;
    int use_md5;            /* extbinary only: MD5 name table */
    int fs_discriminator;   /* extbinary: flag the summary section "fs"
                             * (also when the profile's is_fs is set) */
    const char *const *symbol_list; /* extbinary ProfileSymbolList, or NULL */
    size_t nr_symbols;
    int context_summary;    /* a CS profile's summary per context, not
                               merged by function (llvm's
                               --profile-summary-contextless=false) */
    int compress;           /* extbinary: zlib every section (as LLVM's
                             * --compress-all-sections) */
    int partial;            /* extbinary: flag the summary "partial" */
} lp_write_opts;

int lp_profile_write(FILE *f, const lp_profile *p, const lp_write_opts *o,
                     lp_error *err);

/* Profile summary (llvm ProfileSummaryBuilder with the default cutoffs). */
#define LP_NR_CUTOFFS 16
typedef struct lp_summary_entry {
    uint32_t cutoff;
    uint64_t min_count;
    uint64_t num_counts;
} lp_summary_entry;
typedef struct lp_summary {
    uint64_t total_count, max_count, max_function_count;
    uint64_t num_counts, num_functions;
    lp_summary_entry entries[LP_NR_CUTOFFS];
} lp_summary;

/* For a CS profile (is_cs), the summary of its context-less flattening
 * (contexts merged by function), as LLVM's writers compute it. */
int lp_profile_summary(const lp_profile *p, lp_summary *s, lp_error *err);
/* The summary of every profile of p as it is, contexts not merged. */
int lp_profile_summary_unmerged(const lp_profile *p, lp_summary *s,
                                lp_error *err);
/* The summary of profiles v[0..n) merged by function name (LLVM's
 * context-less summary of CS profiles); none may have inlinees. */
int lp_summary_by_function(lp_fsamples *const *v, size_t n, lp_summary *s,
                           lp_error *err);
/* The same, the caller naming each profile's function: v[i]'s is
 * group[i] < ngroups (one number per distinct name). */
int lp_summary_by_group(lp_fsamples *const *v, size_t n, const uint32_t *group,
                        size_t ngroups, lp_summary *s, lp_error *err);
/* The same summary accumulated profile by profile, while they are made:
 * `group` is any pointer naming the profile's function (one per distinct
 * name). Profiles may come in any order, on several threads (one
 * accumulator each, merged at the end): the sums saturate and the counts
 * are a multiset, so the result is lp_summary_by_group's. */
typedef struct lp_sumacc lp_sumacc;
lp_sumacc *lp_sumacc_new(void);
/* fs's head and body counts added (not kept). -1: no memory, or fs has
 * inlinees (unsupported, as above); the accumulator is spoiled then. */
int lp_sumacc_add(lp_sumacc *a, const void *group, const lp_fsamples *fs);
/* src's sums added to dst's; src freed. -1 on no memory (dst spoiled). */
int lp_sumacc_merge(lp_sumacc *dst, lp_sumacc *src);
/* The summary (-1 with err set if the accumulator is spoiled); a freed. */
int lp_sumacc_finish(lp_sumacc *a, lp_summary *s, lp_error *err);
void lp_sumacc_free(lp_sumacc *a);
/* Count at or above which the cutoff `cutoff` (e.g. 990000) is reached. */
uint64_t lp_summary_count_for_cutoff(const lp_summary *s, uint32_t cutoff);

/* LLVM's MD5Hash(): low 64 bits (little-endian) of the MD5 digest. */
uint64_t lp_md5_hash64(const void *data, size_t len);
void lp_md5(const void *data, size_t len, uint8_t digest[16]);

/* ---- merging profiles (llvm-profdata merge --sample) ---------------------- */

/* Called for a top-level context whose merge saw LP_MERGE_* events. */
typedef void (*lp_merge_warn_fn)(void *ctx, const char *context,
                                 unsigned status);
/* Merge every top-level profile of src into dst with `weight`, by
 * context. The first input sets dst's kind; later ones must match it
 * (probe-based or not, CS or not: else an LP_EUNSUPP error, as
 * llvm-profdata's); pre-inlined and FS flags accumulate. */
int lp_profile_merge(lp_profile *dst, const lp_profile *src, uint64_t weight,
                     int first, lp_merge_warn_fn warn, void *ctx,
                     lp_error *err);
/* A copy of p whose every name (top-level, context frames, inlinees, call
 * targets) is its MD5 name, to merge MD5 and string-named profiles by
 * function. */
lp_profile *lp_profile_md5_names(const lp_profile *p, lp_error *err);

/* Profile files merged as `llvm-profdata merge --sample` merges them. */
typedef struct lp_merge_input {
    const char *path;
    uint64_t weight;            /* >= 1 */
} lp_merge_input;
enum {
    LP_MERGE_FAIL_ANY,          /* an unreadable input fails the merge */
    LP_MERGE_FAIL_ALL,          /* ... only if no input can be read */
    LP_MERGE_FAIL_WARN,         /* unreadable inputs are skipped */
};
typedef struct lp_merge_opts {
    int fail_mode;              /* LP_MERGE_FAIL_* */
    int keep_symbols;           /* unite the inputs' symbol lists */
    void (*warn)(void *ctx, const char *msg); /* lp_warn_fn: skipped inputs,
                                 * checksum mismatches, saturation */
    void *ctx;
} lp_merge_opts;
typedef struct lp_merge_result {
    lp_profile *profile;
    char **symbols;             /* the inputs' symbol lists, in order */
    size_t nr_symbols;
    size_t merged, skipped;     /* inputs */
} lp_merge_result;
/* Read and merge in[0..n) (inputs mixing MD5 and string names are merged
 * by function). On failure err names the input; res is left empty. */
int lp_profile_merge_files(const lp_merge_input *in, size_t n,
                           const lp_merge_opts *o, lp_merge_result *res,
                           lp_error *err);
void lp_merge_result_free(lp_merge_result *r);

/* ---- readers (text, binary, extbinary) --------------------------------- */

/* Parse an LLVM text sample profile. `name` is used in messages. */
lp_profile *lp_profile_read_text(FILE *f, const char *name, lp_error *err);

/* One entry of an extbinary section header table. */
typedef struct lp_prof_section {
    uint64_t type, flags, offset, size;
} lp_prof_section;

/* What a profile file holds besides its profiles (what llvm-profdata
 * show prints from it). */
typedef struct lp_prof_info {
    lp_prof_format format;
    /* the profile summary: the file's (binary formats), computed as LLVM's
     * reader computes it (text) */
    uint64_t total_count, max_count, max_function_count;
    uint64_t num_counts, num_functions;
    lp_summary_entry *cutoffs;
    size_t nr_cutoffs;
    char **symbols;             /* ProfileSymbolList, in file order */
    size_t nr_symbols;
    lp_prof_section *sections;  /* extbinary header table, in file order */
    size_t nr_sections;
    int md5;                    /* names came from an MD5 name table */
    int partial;                /* summary flag "partial" */
} lp_prof_info;

/* The format of a profile from its first bytes: LP_PROF_TEXT (first
 * record "NAME:TOTAL:HEAD" or "[CONTEXT]:TOTAL:HEAD" after comments and
 * blank lines), LP_PROF_BINARY, LP_PROF_EXTBINARY (ULEB128 "SPROF42"
 * magic), or 0. */
int lp_profile_sniff(const void *head, size_t n);
/* Read a sample profile in any of the three formats (path "-": standard
 * input). info (may be NULL) is filled; free it with lp_prof_info_free.
 * Errors name the file, the line or offset and what was expected. */
lp_profile *lp_profile_read(const char *path, lp_prof_info *info,
                            lp_error *err);
lp_profile *lp_profile_read_mem(const void *data, size_t len,
                                const char *name, lp_prof_info *info,
                                lp_error *err);
/* The extbinary section header table only (info->sections). */
int lp_profile_read_sections(const char *path, lp_prof_info *info,
                             lp_error *err);
void lp_prof_info_free(lp_prof_info *info);
/* LLVM's name of an extbinary section type ("LBRProfileSection"...). */
const char *lp_prof_section_name(uint64_t type);

/* ---- llvm-profdata show --sample ------------------------------------------ */

typedef struct lp_show_opts {
    const char *function;       /* that function (or CS context) only */
    int all_functions;          /* every function even with `function` */
    int detailed_summary;       /* the summary and its cutoffs */
    int hot_func_list;          /* the hot function table */
    uint32_t topn;              /* the hot function table, first N rows */
    int prof_sym_list;          /* the profile symbol list */
    int json;                   /* the functions as JSON (all of them) */
} lp_show_opts;

/* What `llvm-profdata show --sample` (LLVM 22) prints for the profile p
 * read with info. *missing is set when `function` has no profile (an
 * empty profile is printed, as llvm-profdata prints). */
int lp_profile_show(FILE *f, const lp_profile *p, const lp_prof_info *info,
                    const lp_show_opts *o, int *missing, lp_error *err);
/* What `--show-sec-info-only` prints: the extbinary section table. */
void lp_profile_show_sections(FILE *f, const lp_prof_info *info);

#ifdef __cplusplus
}
#endif
#endif
