/*
 * lbr2prof/unwind.h - the virtual unwinder: hybrid samples (a frame-pointer
 * call stack plus an LBR branch stack) -> range and branch counters per
 * calling context (lp_ctxcount), the way llvm-profgen 19's HybridPerfReader
 * and VirtualUnwinder make them, plus an optional repair of the caller
 * frame that frame-pointer walks miss at function entry and exit.
 *
 *   samples --lp_unwind_sample--> canonical call stack + LBR, aggregated
 *           (identical samples are stored once, with a repeat count)
 *           --lp_unwind_finish--> each distinct sample replayed backwards
 *           through its LBR on a frame trie; every fall-through range and
 *           branch lands in the context (inline-expanded, recursion-
 *           compressed, depth-trimmed) that was live when it executed.
 *
 * Addresses in the counters are link-time addresses of the context's
 * binary; LP_EXTERNAL_ADDR (1) stands for anything outside the binaries'
 * code. Warnings
 * (llvm-profgen's wording) go to the callback; the library never prints.
 */
#ifndef LBR2PROF_UNWIND_H
#define LBR2PROF_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lbr2prof/addrmap.h"
#include "lbr2prof/binary.h"
#include "lbr2prof/ctxcount.h"
#include "lbr2prof/error.h"
#include "lbr2prof/flat.h"
#include "lbr2prof/reader.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lp_unwind_opts {
    lp_warn_fn warn;            /* may be NULL */
    void *warn_ctx;
    bool show_detailed_warning; /* --show-detailed-warning */
    int64_t pid_filter;         /* --pid: mmap events of other processes are
                                   ignored; -1 none */
    int compress_recursion;     /* --compress-recursion: -1 unlimited, 0 off */
    int max_context_depth;      /* --csprof-max-context-depth: -1 unlimited */
    bool repair_frames;         /* default true; false = --no-repair-frames
                                   (llvm-profgen's behaviour exactly) */
    bool drop_unknown;          /* --drop-unknown-callers: with the repair,
                                   code whose callers are not known is
                                   dropped (and counted) instead of kept in
                                   a context truncated at the unknown frame */
    size_t max_pending_bytes;   /* distinct samples are unwound in batches of
                                   about this many bytes; 0 = 1 GiB */
    const lp_addrmap *map;      /* perf.data: the per-process address map
                                   (binary 0 = bins[0]); it must follow the
                                   trace up to each sample. NULL: llvm-
                                   profgen's single base from lp_unwind_mmap
                                   (perf script text) */
    bool no_memo;               /* take every sample in from scratch, even
                                   one equal to an earlier sample (tests) */
    bool kernel;                /* --kernel: the binary is the kernel image,
                                   placed by the kernel's mmap
                                   (lp_addrmap_kernel_image names; the base
                                   is its start, as llvm-profgen 22); a
                                   perf.data callchain is taken whole, its
                                   kernel and user parts without the
                                   markers, as perf script prints it */
    int max_unsym_depth;        /* address contexts: also keep at most this
                                   many addresses (llvm-profgen 22's
                                   --csprof-max-unsymbolized-context-depth,
                                   -1: no limit; the smaller limit wins) */
    bool addr_contexts;         /* pseudo-probe binaries (llvm-profgen's
                                   probe-based unwinding): ranges are not
                                   cut by inline context, the code of a
                                   frame is counted in its caller's
                                   address context (ctxcount.h), contexts
                                   compressed and trimmed as addresses */
    struct lp_phases *phases;   /* progress of the unwinding (phases.h),
                                   may be NULL */
    size_t parallel_min;        /* distinct samples from which the flush
                                   runs on two threads when two CPUs are
                                   there (0: 1024; SIZE_MAX: never) */
} lp_unwind_opts;

void lp_unwind_opts_default(lp_unwind_opts *o);

/* One hybrid sample as recorded (runtime addresses). */
typedef struct lp_hybrid_sample {
    const uint64_t *stack;      /* leaf first: the sampled IP, then return
                                   addresses */
    size_t nstack;
    bool markers;               /* stack carries PERF_CONTEXT_* markers
                                   (perf.data): only its user part is used */
    bool fp_walk;               /* the stack is the kernel's frame-pointer
                                   walk as recorded (perf.data): at a function
                                   entry or exit it certainly lacks the
                                   caller, even when frame 1 looks like it
                                   (recursion). Text input: false, a frame 1
                                   equal to the caller is taken as right. */
    bool exact;                 /* the stack is the true call stack, as far
                                   as it goes (Intel PT: the decoder's calls
                                   and returns, perf's `--itrace=g`): with
                                   the repair, no frame of it is repaired;
                                   its leaf is checked against LBR[0] as a
                                   CFI stack's is */
    const lp_branch_entry *br;  /* br[0] is the most recent branch */
    size_t nbr;
    uint32_t pid;
    uint64_t repeat;            /* 0 counts as 1 */
    uint64_t calls;             /* lp_sample.calls: the samples this one
                                   stands for (0 counts as 1); the
                                   unweighted counts add it */
    uint64_t dup_id;            /* lp_sample.dup_id: nonzero, samples with
                                   the same id have the same stack and LBR
                                   (the intake is then done once) */
    lp_stacks_id stacks_id;     /* lp_sample.stacks_id: when nonzero, what
                                   lp_stacks_id_of() gives for stack and br
                                   (perf.data: the intake's memo key) */
    const lp_sample *regs_stack; /* the perf.data sample when it has
                                   PERF_SAMPLE_REGS_USER (ip, sp, bp; all
                                   general registers for CFI) and
                                   STACK_USER, else NULL: with the repair,
                                   its stack gives the caller of a leaf at
                                   a function's entry or exit or in a
                                   frameless function when the LBR does not
                                   (the LBR has priority), and the whole
                                   call stack, unwound with the binaries'
                                   CFI, when the frame-pointer walk is not
                                   provably right (stack may then be empty:
                                   perf record --call-graph dwarf) */
} lp_hybrid_sample;

/* What happened to the samples; counts weighted by repeat unless noted. */
typedef struct lp_unwind_stats {
    uint64_t sample_calls;      /* lp_unwind_sample calls (unweighted) */
    uint64_t samples;           /* hybrid samples given */
    uint64_t aggregated;        /* kept and aggregated */
    uint64_t distinct;          /* distinct aggregated samples */
    uint64_t leaf_external;     /* leaf frame outside the binary (unweighted,
                                   as llvm-profgen counts it) */
    uint64_t no_frame;          /* no user frame, or no LBR entry left */
    uint64_t dropped_prolog;    /* leaf in llvm-profgen's prolog/epilog set,
                                   dropped (caller not provable) */
    uint64_t repaired;          /* missing caller frame inserted from the LBR */
    uint64_t repaired_stack;    /* ... inserted from the user stack (the LBR
                                   did not show it) */
    uint64_t stack_agree;       /* both showed it, the same caller */
    uint64_t stack_disagree;    /* both showed it, differently (the LBR's
                                   is used) */
    uint64_t caller_hole;       /* missing caller not shown by the LBR before
                                   the first asynchronous entry, nor by the
                                   user stack: kept with an unknown caller
                                   frame that later LBR entries may show */
    uint64_t already_right;     /* leaf at entry/exit, chain had the caller */
    uint64_t kept_intact;       /* leaf in llvm-profgen's set, frame intact */
    uint64_t truncated;         /* stack cut at an invalid return address */
    uint64_t contextless;       /* --no-repair-frames: unwinding reached an
                                   invalid state, the older part was counted
                                   without context (llvm-profgen) */
    /* llvm-profgen's VirtualUnwinder counters (per distinct sample) */
    uint64_t total_branches, mismatched_ext_call, mismatched_proepi;
    uint64_t paired_ext, unpaired_ext;
    /* the repair's view of interrupted and non-local control flow (samples,
       weighted; a sample can count in several) */
    uint64_t signal_frames;     /* a signal delivery was passed: the handler's
                                   frame sits on a signal restorer, the code
                                   before it ran on the interrupted stack */
    uint64_t nonlocal;          /* a non-local exit (longjmp, exception,
                                   context switch) was seen: the frames it
                                   left are not on the sampled stack */
    uint64_t interrupted;       /* an LBR range that is no fall-through, or
                                   a leaf that does not follow LBR[0], with
                                   no signal frame to explain it */
    uint64_t lost;              /* some ranges or branches ran in frames
                                   whose callers nothing shows: kept in
                                   contexts truncated at the unknown frame
                                   (dropped with drop_unknown) */
    uint64_t lost_records;      /* ranges and branches kept (or dropped) so */
    uint64_t inferred;          /* an unknown caller frame was filled in: the
                                   one call site that leads to the frame
                                   above it in the calls the LBR shows across
                                   the trace (through tail calls too) */
    uint64_t intakes_reused;    /* samples (unweighted) taken in as an
                                   earlier one with the same dup_id was */
    /* CFI stacks (the repair; samples with user registers and stack) */
    uint64_t cfi_stacks;        /* the frame-pointer walk was not provably
                                   right: the call stack came from a CFI
                                   walk of the user stack */
    uint64_t cfi_changed;       /* ... and differs from the recorded walk */
    uint64_t cfi_frames;        /* frames those walks found by CFI rules */
    uint64_t cfi_fp_frames;     /* ... by the frame-pointer rule, where no
                                   CFI covers the code */
    uint64_t cfi_partial;       /* CFI stacks that end in the binaries'
                                   code before the outermost frame: the
                                   callers below are not known */
    uint64_t cfi_failed;        /* the walk found no caller at all: the
                                   frame-pointer walk was used */
    uint64_t cfi_lbr_agree;     /* CFI stacks whose leaf's caller (one the
                                   frame-pointer walk misses: entry, exit,
                                   frameless) the LBR shows too: the same */
    uint64_t cfi_lbr_disagree;  /* ... another one (the CFI's is used) */
    uint64_t parallel;          /* distinct samples a second thread unwound
                                   (the parallel flush; the result is the
                                   same as one thread's) */
    uint64_t replayed;          /* distinct samples replayed from their
                                   recording ahead (lp_unwind_warm_next)
                                   instead of unwound at the flush: the
                                   one statistic the idle time changes */
    /* exact stacks (lp_hybrid_sample.exact: Intel PT) */
    uint64_t exact_stacks;      /* samples whose stack was taken as it is */
    uint64_t exact_lbr_agree;   /* ... whose leaf's caller (one the
                                   frame-pointer walk would miss) the LBR
                                   shows too: the same */
    uint64_t exact_lbr_disagree; /* ... another one (the stack's is used) */
} lp_unwind_stats;

typedef struct lp_unwinder lp_unwinder;

/* bins[0] is the profiled program, further ones (shared libraries with
 * DWARF) are profiled too when addresses resolve through opts->map (the
 * per-process address map, perf.data): frames and ranges of every binary
 * are unwound and symbolized with their binary, a context may hold frames
 * of several, and its counters are under its leaf's binary index (a
 * branch into another binary: LP_CTX_XBIN, ctxcount.h). Without a map
 * (perf script text, llvm-profgen's single base) only bins[0] is code.
 * One binary gives llvm-profgen's results exactly. At most 65536. */
lp_unwinder *lp_unwind_new(lp_binary *const *bins, size_t nbins,
                           const lp_unwind_opts *o, lp_error *err);
void lp_unwind_free(lp_unwinder *u);

/* An mmap event (llvm-profgen's single-base rule, updateBinaryAddress):
 * -1 on its fatal segment errors. */
int lp_unwind_mmap(lp_unwinder *u, const lp_mmap_event *m, lp_error *err);

/* One hybrid sample. -1 only on allocation or binary decoding errors. */
int lp_unwind_sample(lp_unwinder *u, const lp_hybrid_sample *s,
                     lp_error *err);
/* A sample taken in as an earlier one with the same dup_id or stacks
 * was, when the unwinder remembers that intake (it would replay it): 1,
 * counted as lp_unwind_sample counts it; else 0, nothing done (then
 * lp_unwind_sample takes it). Reads neither stack nor br: a caller
 * without them yet makes them only on 0 (lp_reader_defer_arrays). */
int lp_unwind_replay(lp_unwinder *u, const lp_hybrid_sample *s);

/* A sample lp_unwind_sample will get soon (e.g. from lp_reader_set_ahead's
 * function): starts loading the memo's slots its stacks' identity picks,
 * with the process `pid`. *id: the identity (lp_stacks_id_of) when known,
 * else {0, 0}: computed here and stored there for the sample, so that
 * lp_unwind_sample does not compute it again. Changes no result. */
void lp_unwind_ahead(lp_unwinder *u, uint32_t pid, const uint64_t *stack, size_t nstack,
                     const lp_branch_entry *br, size_t nbr, lp_stacks_id *id);

/* Work ahead of lp_unwind_finish, for the caller's idle time (e.g. as
 * lp_reader_set_idle's function): unwinds one more distinct sample now,
 * recording what its final count multiplies, so that the finish replays
 * the recording instead of unwinding it (past a memory bound of 4 MB of
 * recordings, only the caches that unwinding will use are filled).
 * Changes no result; an error is left for the finish to meet. 1 if a
 * sample was done, 0 if none is left (more may come with later samples). */
int lp_unwind_warm_next(lp_unwinder *u);

/* The samples that follow come from another trace (several in one run):
 * what was remembered by dup_id or pid is not reused across the two. */
void lp_unwind_next_input(lp_unwinder *u);

/* llvm-profgen's NumTotalSample, the denominator of the leaf-external
 * warning (for perf script text: every line taken as the start of a
 * sample). Default: the number of lp_unwind_sample calls. */
void lp_unwind_set_total_samples(lp_unwinder *u, uint64_t n);

/* Unwind what is pending, emit the warning summaries, and hand over the
 * counters (the caller frees them with lp_ctxcount_free; their frames'
 * names are the binaries', valid until lp_binary_close). NULL on error.
 * Afterwards the unwinder can only be freed. */
lp_ctxcount *lp_unwind_finish(lp_unwinder *u, lp_error *err);

const lp_unwind_stats *lp_unwind_stats_get(const lp_unwinder *u);

/* ---- pieces exposed for tests and for the CS generator ------------------ */

/* compressRecursionContext: collapse adjacent repeated runs of frames of
 * length 1..k (k = -1: up to n/2) in place, llvm-profgen's in-place
 * algorithm. Returns the new length. */
size_t lp_ctx_compress_recursion(lp_ctx_frame *f, size_t n, int k);
/* trimContext: keep the last `depth` frames (depth < 0: all). Returns the
 * new length. */
size_t lp_ctx_trim(lp_ctx_frame *f, size_t n, int depth);
/* The same on address contexts (AddressStack::getContextKey). */
size_t lp_ctx_compress_addrs(uint64_t *a, size_t n, int k);
size_t lp_ctx_trim_addrs(uint64_t *a, size_t n, int depth);

/* What the frame repair makes of a sampled leaf IP: whether the
 * frame-pointer walk that produced the callchain saw the direct caller.
 * Computed from lp_leaf_classify (include/lbr2prof/fpunwind.h), the one
 * leaf classifier of the project: E0/E1/NOFRAME -> ENTRY, X0 -> EXIT,
 * F -> FRAMELESS, BODY -> BODY, anything else -> UNKNOWN. */
enum lp_uw_leaf {
    LP_UW_LEAF_UNKNOWN = 0, /* no function, not x86-64, undecodable, PLT */
    LP_UW_LEAF_BODY = 1,    /* frame set up: the walk is right */
    LP_UW_LEAF_ENTRY = 2,   /* before the frame is set up ([endbr64], push
                               %rbp, mov %rsp,%rbp), or on a path of a
                               framed function that no frame covers (a
                               shrink-wrapped start or early exit): %rbp is
                               the caller's */
    LP_UW_LEAF_EXIT = 3,    /* at ret (or a tail-call jump) after pop %rbp /
                               leave: %rbp is the caller's again */
    LP_UW_LEAF_FRAMELESS = 4, /* in a function that never sets up %rbp (e.g.
                               gcc's leaf functions): the caller is missing
                               wherever the sample is */
};

/* Classify a link-time address of `bin` (x86-64 only). */
enum lp_uw_leaf lp_unwind_leaf_state(lp_binary *bin, uint64_t vaddr);

#ifdef __cplusplus
}
#endif
#endif
