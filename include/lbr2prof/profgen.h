/*
 * lbr2prof/profgen.h - the profile driver: one call that does what
 * llvm-profgen 19 does for a command line, for any front end (the
 * `profile` command, `report`, tests).
 *
 *   lp_profgen_run:   binaries (given, or discovered from the trace by
 *                     build-id / recorded path / basename) -> the trace read
 *                     once (perf.data file or pipe, perf script text, "-")
 *                     through the per-process address map -> LBR-only
 *                     samples to the flat aggregator, hybrid samples (call
 *                     stack + LBR) to the virtual unwinder -> flat or CS
 *                     generation and post-processing -> an lp_profile (or
 *                     the unsymbolized counters) plus sample statistics.
 *   lp_profgen_write: the result in the asked format, written atomically.
 *
 * Options are llvm-profgen's, as data (the field comments name the flags).
 * The library never prints: warnings (llvm-profgen's wording, no
 * "warning: " prefix) go to opts->warn, notices ("using binary X") to
 * opts->note, the --show-density and --show-mmap-events lines to
 * opts->info.
 *
 * Several binaries: binaries[0] is the profiled program; further ones
 * (more --binary, or --binaries-from-trace) are opened and passed to the
 * address map, the unwinder and the CS generator: the CS profile has
 * their functions too, in contexts that may cross the boundary (the flat
 * route counts binary 0 only). One binary behaves exactly as llvm-profgen.
 */
#ifndef LBR2PROF_PROFGEN_H
#define LBR2PROF_PROFGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lbr2prof/binary.h"
#include "lbr2prof/csprofile.h"
#include "lbr2prof/ctxcount.h"
#include "lbr2prof/error.h"
#include "lbr2prof/flat.h"
#include "lbr2prof/profile.h"
#include "lbr2prof/unwind.h"

#ifdef __cplusplus
extern "C" {
#endif

struct lp_itrace;

typedef struct lp_profgen_opts {
    /* input: exactly one */
    const char *perfdata;       /* --perfdata, or the PERF.DATA argument;
                                   "-" = standard input */
    const char *perfscript;     /* --perfscript (perf script text) */
    const char *unsym;          /* --unsymbolized-profile */
    const char *llvm_prof;      /* --llvm-sample-profile (any format) */
    const char *const *more_traces; /* lbr2prof's: further traces of the
                                   kind of perfdata/perfscript (more
                                   PERF.DATA arguments, --perfdata or
                                   --perfscript repeated or comma lists),
                                   read after it in order as one recording
                                   holding all their samples; each trace's
                                   pids are its own */
    size_t nmore_traces;
    bool skip_bad_inputs;       /* --skip-bad-inputs (lbr2prof's): traces
                                   that cannot be read to their end are
                                   left out (lp_profgen_result.skipped) and
                                   the run is over the others; each trace
                                   is then read twice (checked first) */

    /* binaries */
    const char *const *binaries;/* --binary (repeatable): [0] the profiled
                                   program; none: discovered from the trace
                                   (perfdata/perfscript from a file only) */
    size_t nbinaries;
    bool binaries_from_trace;   /* --binaries-from-trace: also every sampled
                                   file found on disk with DWARF functions */
    const char *debug_binary;   /* --debug-binary (for binaries[0]) */
    const char *dwp;            /* --dwp */
    bool use_dwarf_correlation; /* --use-dwarf-correlation: a line-based
                                   profile even with pseudo probes */
    bool show_pseudo_probe;     /* --show-pseudo-probe: the probe
                                   descriptions of binaries[0] to info */
    bool load_function_from_symbol; /* --load-function-from-symbol (true):
                                   pseudo-probe binaries' functions missing
                                   from DWARF recovered from .symtab */

    /* reading the trace */
    const struct lp_itrace *itrace; /* --itrace: the samples perf synthesizes
                                   from Intel PT data (a perf.data file;
                                   lbr2prof/pt.h); NULL: recorded samples */
    int64_t pid;                /* --pid, -1 none */
    const char *const *events;  /* --perf-event(s): only these events */
    size_t nr_events;
    bool ignore_stack_samples;  /* --ignore-stack-samples */
    bool leading_ip_only;       /* --leading-ip-only */
    bool have_sample_period;    /* --sample-period=N given */
    uint64_t sample_period;
    bool show_mmap_events;      /* --show-mmap-events (to info) */
    bool show_detailed_warning; /* --show-detailed-warning */
    bool kernel;                /* --kernel: binaries[0] (--binary, needed)
                                   is the kernel image, placed by the
                                   kernel's mmap in every process, as
                                   llvm-profgen 22 does (lbr2prof/addrmap.h) */
    bool strict;                /* --strict: a cut-off perf.data is an error
                                   (default: its complete records make the
                                   profile, with a warning; reader.h) */

    /* the virtual unwinder (hybrid samples) */
    int64_t compress_recursion; /* --compress-recursion, -1 unlimited */
    int64_t max_context_depth;  /* --csprof-max-context-depth, -1 unlimited */
    int64_t max_unsym_context_depth; /* --csprof-max-unsymbolized-context-
                                   depth (llvm-profgen 22), -1 unlimited:
                                   address contexts (pseudo-probe binaries)
                                   only, as in llvm-profgen */
    bool no_repair_frames;      /* --no-repair-frames */
    bool drop_unknown_callers;  /* --drop-unknown-callers: drop (and count)
                                   code whose callers are not known instead
                                   of keeping it in truncated contexts */
    bool script_fp_callchains;  /* --script-fp-callchains: perf script
                                   text's callchains are kernel
                                   frame-pointer walks (perf record -g) */

    /* missing tail-call frames (include/lbr2prof/tailcall.h): llvm-profgen
     * 22 infers them in context-sensitive pseudo-probe profiles only; a run
     * that makes another kind of profile warns when they were asked for */
    int infer_missing_frames;   /* --infer-missing-frames: 1 or 0; -1 not
                                   given (on, llvm-profgen's default) */
    int64_t max_search_depth;   /* --max-search-depth: 0..UINT32_MAX; -1 not
                                   given (LP_TC_DEFAULT_MAX_DEPTH) */

    /* generation: flat's summary/trim/density fields also apply to CS
     * profiles (one flag each in llvm-profgen); warn/info are set by the
     * driver */
    lp_flat_opts flat;
    lp_cs_opts cs;

    /* output */
    bool skip_symbolization;    /* --skip-symbolization: counters, not a
                                   profile */
    bool use_offset;            /* --use-offset (true) */
    bool first_loadable_base;   /* --use-first-loadable-segment-as-base */
    bool raw_header;            /* --raw-header (lbr2prof's): with
                                   skip_symbolization, the mergeable raw
                                   profile (docs/rawmerge.md): binaries,
                                   build-ids, bases, options, statistics
                                   and context attributes in '#' lines;
                                   every binary's contexts */
    lp_prof_format format;      /* --format (extbinary) */
    bool use_md5;               /* --use-md5 (extbinary only) */
    bool populate_symbol_list;  /* --populate-profile-symbol-list */
    int summary_contextless;    /* --profile-summary-contextless: -1 not
                                   given; 0: the binary summary of a CS
                                   profile that is not nested is taken per
                                   context, not merged by function */
    const char *output;         /* --output/-o; "-" = standard output */

    /* messages */
    lp_warn_fn warn;            /* may be NULL */
    void *warn_ctx;
    lp_warn_fn note;            /* may be NULL */
    void *note_ctx;
    FILE *info;                 /* may be NULL */
    struct lp_phases *phases;   /* phase timings and progress (phases.h),
                                   may be NULL */
    bool file_names;            /* the binaries' frames keep their source
                                   files (reports); profiles name none, and
                                   without them libdw builds no second copy
                                   of each line table */
} lp_profgen_opts;

/* llvm-profgen 19's defaults; no input, no binary, no callbacks. */
void lp_profgen_opts_default(lp_profgen_opts *o);

typedef enum lp_profgen_kind {
    LP_PROFGEN_PROFILE = 1,     /* result.profile: flat or CS (nested or
                                   not, as the options say) */
    LP_PROFGEN_RAW_FLAT,        /* --skip-symbolization of LBR-only samples
                                   or a flat unsymbolized profile:
                                   result.raw_flat */
    LP_PROFGEN_RAW_CS,          /* --skip-symbolization of hybrid samples or
                                   a CS unsymbolized profile: result.raw_cs */
} lp_profgen_kind;

/* Where a run stopped on error (result.failed). */
typedef enum lp_profgen_stage {
    LP_PROFGEN_OK = 0,
    LP_PROFGEN_BINARY,          /* discovery, opening, no DWARF, pseudo
                                   probes, or no mmap of binaries[0] */
    LP_PROFGEN_INPUT,           /* reading the trace or the input profile */
    LP_PROFGEN_GENERATE,        /* unwinding, generation, post-processing */
} lp_profgen_stage;

/* What happened to the samples of a trace (zero for profile inputs).
 * Counts are in samples, weighted by a perf script sample's repeat count,
 * except unwind.leaf_external (llvm-profgen counts it unweighted). */
typedef struct lp_profgen_stats {
    bool from_trace;            /* the input was a trace */
    uint64_t samples;           /* given to the pipeline (after
                                   --perf-event) */
    uint64_t used;              /* contributed counts: aggregated by the
                                   unwinder, or counted by the flat
                                   aggregator */
    uint64_t dropped;           /* samples - used */
    uint64_t repaired;          /* caller frame put back from the LBR or
                                   the user stack */
    uint64_t inferred;          /* a caller frame nothing in the sample
                                   showed, inferred from the program's
                                   calls (one call site leads there) */
    uint64_t truncated;         /* kept with part of their code in contexts
                                   truncated at an unknown caller, or with
                                   the stack cut at an invalid return
                                   address */
    uint64_t external;          /* leaf outside binaries[0] */
    uint64_t contextless;       /* no calling context: unwinding reached an
                                   invalid state (CS), or every used sample
                                   (flat) */
    uint64_t lost;              /* events the kernel reported lost */
    uint64_t hybrid;            /* samples routed to the unwinder */
    uint64_t lbr_only;          /* samples routed to the flat aggregator */
    lp_unwind_stats unwind;     /* the unwinder's counts (zero if none ran) */
} lp_profgen_stats;

typedef struct lp_profgen_priv lp_profgen_priv;

/* A trace left out by --skip-bad-inputs, and why. */
typedef struct lp_profgen_skipped {
    char *path;
    char *why;                  /* the reader's message */
} lp_profgen_skipped;

typedef struct lp_profgen_result {
    lp_profgen_kind kind;
    bool context_sensitive;     /* made from contexts (hybrid samples, a CS
                                   unsymbolized or text profile) */
    lp_profile *profile;        /* LP_PROFGEN_PROFILE */
    const lp_counters *raw_flat;/* LP_PROFGEN_RAW_FLAT */
    lp_ctxcount *raw_cs;        /* LP_PROFGEN_RAW_CS */
    lp_binary **bins;           /* opened; bins[0] the profiled program */
    char **paths;               /* their paths (given or discovered) */
    size_t nbins;
    bool discovered;            /* bins[0] was found from the trace */
    lp_profgen_stats stats;
    bool missing_frames_inferred; /* the contexts went through the tail-call
                                   inferrer (lp_tailcall_infer_context) */
    lp_profgen_stage failed;    /* after an error: which step failed */
    lp_profgen_skipped *skipped;/* --skip-bad-inputs: the traces left out */
    size_t nskipped;
    lp_profgen_priv *priv;      /* what the counters belong to */
} lp_profgen_result;

/* Run the pipeline. 0, or -1 with err (and r->failed). Free r with
 * lp_profgen_result_free either way. */
int lp_profgen_run(const lp_profgen_opts *o, lp_profgen_result *r,
                   lp_error *err);

/* Write r to o->output atomically: the profile in o->format (with
 * --use-md5, --populate-profile-symbol-list), or the unsymbolized profile
 * (addresses relative to the base --use-offset and
 * --use-first-loadable-segment-as-base select). 0 or -1. */
int lp_profgen_write(const lp_profgen_opts *o, const lp_profgen_result *r,
                     lp_error *err);

void lp_profgen_result_free(lp_profgen_result *r);

/* "extbinary", "text", "binary" -> *f; -1 for anything else. */
int lp_profgen_format_parse(const char *s, lp_prof_format *f);

/* What a trace holds, from its first sample (perf script text or a
 * perf.data file; not a stream): the sample has a call stack and/or a
 * branch stack. Both false: no sample. 0, or -1 with err. */
int lp_profgen_trace_kind(const char *path, bool text, bool *has_stack,
                          bool *has_lbr, lp_error *err);

#ifdef __cplusplus
}
#endif
#endif
