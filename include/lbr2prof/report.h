/*
 * lbr2prof/report.h - human summaries of a profile: a calling-context tree
 * with self and total counts, per-function totals, source lines and the
 * sample-quality counts of the run, written as text, JSON, FlameGraph
 * folded stacks, speedscope JSON or an interactive SVG flame graph.
 *
 * The model is a tree of calling contexts. The (invisible) root's children
 * are the outermost frames; a node is one function in one context, keyed
 * by (function, call site in the parent). Its `self` is what was counted
 * in that very context, its `total` self plus every descendant's total.
 * A node may be an inlined frame (an inline context of the profile, or an
 * inline frame from DWARF).
 *
 * Building: lp_report_new, then lp_report_add_profile (an LLVM sample
 * profile, flat or context-sensitive), lp_report_add_stack (sampled
 * stacks) or lp_report_child/lp_report_add_self/lp_report_add_line, then
 * lp_report_finish (totals, sorting, function table), then lp_report_write
 * any number of times. All output is deterministic: ties are broken by
 * name, then call site.
 *
 * The one call that turns a profile made by any pipeline (the CS generator
 * included) into a report is lp_report_from_profile().
 */
#ifndef LBR2PROF_REPORT_H
#define LBR2PROF_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lbr2prof/binary.h"
#include "lbr2prof/error.h"
#include "lbr2prof/profile.h"
#include "lbr2prof/warn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- sample quality ---------------------------------------------------- */

/* Counts of the run that made the profile (what a reader of the report
 * needs to trust it). `present` = 0: unknown (e.g. a profile file given as
 * input); the writers then print no quality section (JSON: null).
 * Every count is in samples. */
typedef struct lp_report_quality {
    int present;
    uint64_t samples;      /* samples read (after --pid filtering) */
    uint64_t used;         /* samples that contributed counts */
    uint64_t dropped;      /* samples thrown away (no usable address, bad
                              LBR, prolog/epilog leaf, ...) */
    uint64_t repaired;     /* samples whose stack was repaired (a missing
                              caller frame restored) */
    uint64_t inferred;     /* samples with a caller frame inferred from the
                              program's calls (nothing in the sample showed
                              it; one call site leads there) */
    uint64_t truncated;    /* samples whose stack is known to be incomplete
                              (walk stopped at an unmapped address, depth
                              limit, corrupt marker; a caller the unwinder
                              could not know: counts kept in the context
                              truncated there) */
    uint64_t external;     /* samples whose leaf is outside the symbolized
                              binaries (kernel, libraries without symbols,
                              JIT code) */
    uint64_t contextless;  /* samples without a calling context (no
                              callchain: counted at the leaf frame only) */
    uint64_t lost;         /* events the kernel reported lost */
} lp_report_quality;

/* ---- the model ------------------------------------------------------------ */

typedef enum lp_report_unit {
    LP_REPORT_SAMPLES = 1,  /* sampled stacks: one count per sample */
    LP_REPORT_COUNTS,       /* LLVM profile counts (TotalSamples) */
} lp_report_unit;

/* A function seen in the report. file/start_line come from the first
 * frame that knew them (DWARF through the binary loader). */
typedef struct lp_report_func {
    const char *name;       /* as in the profile / DWARF linkage name */
    const char *display;    /* demangled when name is a C++ mangled name,
                               else == name */
    const char *file;       /* NULL: unknown */
    uint32_t start_line;    /* 0: unknown */
    bool external;          /* a pseudo frame ("[libc.so.6]", "[unknown]") */
    /* Filled by lp_report_finish: */
    uint64_t self;          /* sum of its nodes' self */
    uint64_t total;         /* sum of the totals of its outermost nodes
                               (recursion counted once per stack) */
    lp_loc hot_loc;         /* body line with the largest count */
    uint64_t hot_count;     /* 0: no line counts */
} lp_report_func;

typedef struct lp_report_line {
    lp_loc loc;             /* offset from the function's start line */
    uint64_t count;
} lp_report_line;

typedef struct lp_report_node lp_report_node;
struct lp_report_node {
    const lp_report_func *func;   /* NULL only for the root */
    lp_loc callsite;        /* where the parent calls/inlines this frame */
    bool inlined;           /* inlined into its parent */
    uint64_t self, total;
    lp_report_node *parent;
    /* Filled by lp_report_finish: */
    lp_report_node **children;    /* by total desc, then display name,
                                     then call site */
    size_t nchildren;
    lp_report_line *lines;        /* by loc */
    size_t nlines;
    size_t depth;                 /* root 0, outermost frames 1 */
};

typedef struct lp_report lp_report;

/* Describe the input, for the headers of every format. kind: e.g.
 * "llvm-profile", "perf-samples". Strings are copied. */
typedef struct lp_report_source {
    const char *input;      /* path as given */
    const char *kind;
    const char *const *binaries;  /* binaries used for symbols/lines */
    size_t nbinaries;
} lp_report_source;

lp_report *lp_report_new(lp_report_unit unit, lp_error *err);
void lp_report_free(lp_report *r);
int lp_report_set_source(lp_report *r, const lp_report_source *src,
                         lp_error *err);
void lp_report_set_quality(lp_report *r, const lp_report_quality *q);
const lp_report_quality *lp_report_get_quality(const lp_report *r);
lp_report_unit lp_report_get_unit(const lp_report *r);
const char *lp_report_input(const lp_report *r);
const char *lp_report_kind(const lp_report *r);
bool lp_report_is_cs(const lp_report *r);

/* One frame of a stack given to the builders. */
typedef struct lp_report_frame {
    const char *func;       /* function name (copied) */
    const char *file;       /* its source file, or NULL */
    uint32_t start_line;    /* its first line, or 0 */
    lp_loc loc;             /* non-leaf: the call site in this function;
                               leaf: the sampled line (both as offsets from
                               start_line, like LLVM profiles) */
    bool inlined;           /* this frame was inlined into the previous */
    bool external;          /* a pseudo frame for code without symbols */
} lp_report_frame;

/* The child of `parent` (NULL: the root) for frame f called at `callsite`
 * of the parent, created if absent. NULL only on allocation failure. */
lp_report_node *lp_report_child(lp_report *r, lp_report_node *parent,
                                lp_loc callsite, const lp_report_frame *f,
                                lp_error *err);
void lp_report_add_self(lp_report_node *n, uint64_t count);
int lp_report_add_line(lp_report *r, lp_report_node *n, lp_loc loc,
                       uint64_t count, lp_error *err);
/* A stack, OUTERMOST FIRST (frames[0] the root function, frames[n-1] the
 * leaf): count goes to the leaf's self and to its line frames[n-1].loc.
 * Frame i+1 hangs under frame i at call site frames[i].loc. n == 0 is a
 * no-op. */
int lp_report_add_stack(lp_report *r, const lp_report_frame *frames, size_t n,
                        uint64_t count, lp_error *err);

/* An LLVM sample profile: flat profiles give one tree per top-level
 * function with its inlinees as children; CS profiles ("[a:1 @ b]" keys)
 * give the context tree, inlinees under their context. A node's self is
 * its TotalSamples minus its inlinees' (0 if negative), its lines are the
 * body records. With a binary, functions get their file and first line
 * from DWARF (lp_binary_symbolize at their entry). */
int lp_report_add_profile(lp_report *r, const lp_profile *p, lp_binary *bin,
                          lp_error *err);

/* Totals, function table, sorted children and lines. Call once, after
 * building and before writing. */
int lp_report_finish(lp_report *r, lp_error *err);

/* THE HOOK: a finished report of profile p (CS or flat), lines from bin
 * (may be NULL), quality counts q (may be NULL), source described by src
 * (may be NULL). NULL on error. */
lp_report *lp_report_from_profile(const lp_profile *p, lp_binary *bin,
                                  const lp_report_quality *q,
                                  const lp_report_source *src, lp_error *err);

/* Views of a finished report. */
const lp_report_node *lp_report_root(const lp_report *r);
/* Functions by self desc, then total desc, then name. */
size_t lp_report_functions(const lp_report *r,
                           const lp_report_func *const **funcs);
/* Every node with self > 0, by self desc, then total desc, then context
 * key. malloc'ed array (free it); count returned, (size_t)-1 on OOM. */
size_t lp_report_contexts(const lp_report *r, const lp_report_node ***out);
/* The LLVM-style context key of a node: "main:1 @ foo:3.1 @ bar" (display
 * names when demangle). malloc'ed; NULL on OOM. */
char *lp_report_context_key(const lp_report_node *n, bool demangle);
/* Absolute source line of loc in func, 0 when its start line is unknown. */
uint32_t lp_report_abs_line(const lp_report_func *f, lp_loc loc);

/* ---- writers ---------------------------------------------------------------- */

typedef enum lp_report_format {
    LP_REPORT_TEXT = 1,
    LP_REPORT_JSON,
    LP_REPORT_FOLDED,
    LP_REPORT_SPEEDSCOPE,
    LP_REPORT_SVG,
} lp_report_format;

/* "text", "json", "folded", "speedscope", "svg"; -1 otherwise. */
int lp_report_format_parse(const char *s, lp_report_format *out);

typedef struct lp_report_write_opts {
    lp_report_format format;
    size_t top;             /* text: rows per table (0: 20) */
    bool no_demangle;       /* keep linkage names in text/folded/svg/
                               speedscope (JSON always has both) */
    unsigned width;         /* svg: image width in pixels (0: 1200) */
    const char *title;      /* svg/speedscope title (NULL: from input) */
} lp_report_write_opts;

int lp_report_write(FILE *f, const lp_report *r, const lp_report_write_opts *o,
                    lp_error *err);

/* ---- building from perf samples ------------------------------------------ */

/* Options of lp_report_from_perf. */
typedef struct lp_report_perf_opts {
    const char *const *binaries;  /* --binary: ELF files matched to mappings
                                     by build-id, else by base name */
    size_t nbinaries;
    int64_t pid;                  /* -1: every process */
    int force_text;               /* input is perf script text */
    lp_binary_opts bopts;         /* for every binary opened */
    int search_mapped;            /* open mapped files found on disk (at
                                     their recorded path or next to the
                                     trace) when no --binary matches */
    const char *const *debug_dirs;  /* separate debug files of mapped files
                                     without DWARF: DIR/.build-id/xx/y.debug */
    size_t ndebug_dirs;
    int strict;                   /* a cut-off perf.data is an error (default:
                                     its complete records, with a warning) */
    lp_warn_fn warn;              /* that warning; may be NULL */
    void *warn_ctx;
} lp_report_perf_opts;

/* Sampled-callchain report of a perf.data or perf script: each sample's
 * stack is its callchain (or its IP alone), leaf = the sampled IP, other
 * frames return addresses looked up at their call instruction; every
 * address is expanded into its inline frames. Unsymbolizable code becomes
 * one pseudo frame per file ("[libc.so.6]", "[kernel.kallsyms]",
 * "[unknown]"). Fills the quality counts. Returns a finished report. */
lp_report *lp_report_from_perf(const char *path,
                               const lp_report_perf_opts *o, lp_error *err);

/* ---- input detection ------------------------------------------------------ */

typedef enum lp_report_input_kind {
    LP_RIN_PERF_DATA = 1,   /* perf.data (file, pipe or directory) */
    LP_RIN_PERF_SCRIPT,     /* perf script text */
    LP_RIN_LLVM_TEXT,       /* LLVM sample profile, text */
    LP_RIN_LLVM_BINARY,     /* LLVM sample profile, binary/extbinary */
} lp_report_input_kind;

/* Look at the start of a file. -1 if it cannot be read. */
int lp_report_detect(const char *path, lp_report_input_kind *kind,
                     lp_error *err);

#ifdef __cplusplus
}
#endif
#endif
